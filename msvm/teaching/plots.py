"""The lessons' figures (matplotlib, an optional dependency imported here only).

Every function returns the matplotlib Figure or Axes it drew, and labels its
artists (``label=`` on lines and point sets) so that a test can check what
the figure shows: e.g. :func:`plot_decision_function` draws one point set per
KKT kind, labelled ``'non-SV (α = 0)'``, ``'free SV (0 < α < C)'`` and
``'bound SV (α = C)'``, with as many points as the solution has of that kind.

Bad input (points that are not finite and two-dimensional, labels of another
length, an empty set of things to draw, a resolution below 2) is a ValueError
raised before any figure is opened.  A returned figure stays open in pyplot
until the caller closes it (``plt.close(fig)``).
"""

from __future__ import annotations

import numpy as np

from msvm._numbers import is_integer
from msvm._optional import import_optional
from msvm.teaching.svm import BinarySVM, as_signed_labels

__all__ = [
    "KIND_LABELS",
    "plot_bound_vs_loo",
    "plot_certificates",
    "plot_convergence",
    "plot_decision_function",
    "plot_finish_runs",
    "plot_hinge_loss",
    "plot_kernel_regions",
    "plot_multiclass_regions",
    "plot_parameter_grid",
    "plot_perceptron_frames",
    "plot_svm_primal",
]

#: Legend label of each KKT kind's point set in :func:`plot_decision_function`.
KIND_LABELS = {"non_sv": "non-SV (α = 0)", "free_sv": "free SV (0 < α < C)",
               "bound_sv": "bound SV (α = C)"}


def _pyplot():
    return import_optional("matplotlib.pyplot", "plot", "msvm.teaching.plots")


def _points(X, y, what: str = "X"):
    """(X, y) as float and label arrays, checked before any figure is made: a 2-D plot
    needs finite points of exactly two features and one label per point.

    Three features were drawn silently as their first two against a 2-D grid; NaN, an
    empty set or a 1-D X failed inside numpy or matplotlib.
    """
    if X is None:
        raise ValueError(f"{what} is needed: the model has no training set to draw.")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] != 2:
        raise ValueError(f"{what} must be a non-empty array of shape (n, 2) (the plots are "
                         f"2-D); got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{what} contains NaN or infinite values.")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one label per row of {what}, shape ({X.shape[0]},); "
                         f"got shape {y.shape}.")
    return X, y


def _positive(value, name: str, least: int = 1) -> int:
    """``value`` as an int >= ``least``, or a ValueError naming ``name``."""
    if not is_integer(value) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}.")
    return int(value)


def _nonempty(items, name: str):
    if len(items) == 0:
        raise ValueError(f"{name} is empty: nothing to draw.")
    return items


def _axes(ax):
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(5, 4.5))
    return ax


def _grid(X: np.ndarray, resolution: int = 120, pad: float = 0.5):
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    xx, yy = np.meshgrid(np.linspace(lo[0], hi[0], resolution),
                         np.linspace(lo[1], hi[1], resolution))
    return xx, yy, np.column_stack([xx.ravel(), yy.ravel()])


def plot_decision_function(model, X=None, y=None, *, ax=None, title: str | None = None,
                           margins: bool = True, resolution: int = 120):
    """f(x) = 0 and the margins f = ±1 in 2-D, with the points marked by KKT kind.

    Parameters
    ----------
    model : BinarySVM, PerceptronResult or SVMPrimalResult
        Anything with ``decision_function``; a :class:`BinarySVM` also has its
        points split by :meth:`BinarySVM.kkt_kinds`.
    X, y : array-like, optional
        Points to draw (default: the model's training set, when it has one);
        labels ±1 or any two labels (the larger one is +1).  Only the
        training set is split by KKT kind.
    ax : matplotlib Axes, optional
    title : str, optional
    margins : bool, default=True
        Draw the dashed lines f = −1 and f = +1.
    resolution : int, default=120
        Grid points per axis.

    Returns
    -------
    matplotlib.axes.Axes
        Point sets: one per label (``'y = +1'``, ``'y = −1'``) for models
        without α; for a :class:`BinarySVM`, one per KKT kind present, labelled
        by :data:`KIND_LABELS` with the count, e.g. ``'free SV (0 < α < C): 3'``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import overlapping_set, soft_margin_svm
    >>> from msvm.teaching.plots import plot_decision_function
    >>> X, y = overlapping_set(40, random_state=0)
    >>> ax = plot_decision_function(soft_margin_svm(X, y, C=1.0), title="C = 1")
    >>> ax.get_title()
    'C = 1'
    >>> [text.get_text() for text in ax.get_legend().get_texts()]
    ['non-SV (α = 0): 21', 'free SV (0 < α < C): 3', 'bound SV (α = C): 16']
    >>> plt.close(ax.figure)
    """
    training = X is None
    X, y = _points(getattr(model, "X", None) if X is None else X,
                   getattr(model, "y", None) if y is None else y)
    # Labels such as 0/1 drew the 0 class nowhere (only ±1 were scattered).
    if np.all(np.isin(y, (-1, 1))):
        y = y.astype(np.float64)
    elif len(np.unique(y)) == 2:
        y = as_signed_labels(y)[0]
    else:
        raise ValueError("y must be labels ±1 or two labels (the larger one drawn as +1); "
                         f"got {np.unique(y).tolist()}.")
    resolution = _positive(resolution, "resolution", 2)
    ax = _axes(ax)
    xx, yy, grid = _grid(X, resolution)
    F = model.decision_function(grid).reshape(xx.shape)
    ax.contourf(xx, yy, F, levels=[-np.inf, 0, np.inf], colors=["#f4cccc", "#cfe2f3"],
                alpha=0.6)
    ax.contour(xx, yy, F, levels=[0.0], colors="k", linewidths=1.5)
    if margins:
        ax.contour(xx, yy, F, levels=[-1.0, 1.0], colors="k", linestyles="--", linewidths=1.0)
    colors = np.where(y > 0, "#1f77b4", "#d62728")
    # The KKT kinds belong to the training points (not to another set of their size).
    if isinstance(model, BinarySVM) and (training or (
            X.shape == model.X.shape and np.array_equal(X, model.X))):
        kinds = model.kkt_kinds()
        style = {"non_sv": dict(marker="o", s=25, edgecolors="none"),
                 "free_sv": dict(marker="o", s=90, edgecolors="k", linewidths=1.8),
                 "bound_sv": dict(marker="X", s=90, edgecolors="k", linewidths=0.8)}
        for kind, label in KIND_LABELS.items():
            mask = kinds == kind
            if np.any(mask):
                ax.scatter(X[mask, 0], X[mask, 1], c=colors[mask],
                           label=f"{label}: {int(mask.sum())}", **style[kind])
    else:
        for sign, name in ((1.0, "y = +1"), (-1.0, "y = −1")):
            mask = y == sign
            ax.scatter(X[mask, 0], X[mask, 1], c=colors[mask], s=25, label=name)
    ax.legend(loc="best", fontsize=7)
    ax.set_xlim(xx.min(), xx.max())
    ax.set_ylim(yy.min(), yy.max())
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_hinge_loss(*, ax=None, s_range=(-2.0, 3.0)):
    """The hinge loss max(0, 1 − ys) beside the 0–1 loss and the perceptron's loss.

    Parameters
    ----------
    ax : matplotlib Axes, optional
    s_range : tuple of float, default=(−2, 3)
        Range of the margin y·f(x).

    Returns
    -------
    matplotlib.axes.Axes
        Lines labelled ``'hinge max(0, 1 − y f)'``, ``'0–1 loss'`` and
        ``'perceptron max(0, −y f)'``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching.plots import plot_hinge_loss
    >>> ax = plot_hinge_loss()
    >>> [line.get_label() for line in ax.get_lines()][:3]
    ['hinge max(0, 1 − y f)', '0–1 loss', 'perceptron max(0, −y f)']
    >>> plt.close(ax.figure)
    """
    ax = _axes(ax)
    lo, hi = s_range
    s = np.linspace(lo, hi, 501)
    ax.plot(s, np.maximum(0.0, 1.0 - s), lw=2, label="hinge max(0, 1 − y f)")
    ax.plot(s, (s <= 0).astype(float), lw=1.5, label="0–1 loss")
    ax.plot(s, np.maximum(0.0, -s), lw=1.5, ls="--", label="perceptron max(0, −y f)")
    ax.axvline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("margin y·f(x)")
    ax.set_ylabel("loss")
    ax.legend(fontsize=8)
    return ax


def plot_perceptron_frames(result, n_frames: int = 6, *, ncols: int = 3):
    """The perceptron's hyperplane after successive updates (linear, 2-D).

    Parameters
    ----------
    result : PerceptronResult
        From :func:`msvm.teaching.perceptron` with the linear kernel.
    n_frames : int, default=6
        Frames, spread evenly over the recorded updates (the last one
        included).
    ncols : int, default=3

    Returns
    -------
    matplotlib.figure.Figure
        One axes per frame, titled ``'update t (k mistakes)'``, each with the line
        wᵀx + b = 0 (label ``'w·x + b = 0'``) and the point just updated on
        (label ``'updated point'``).

    Examples
    --------
    The perceptron learns AND in 18 updates; three frames show the first, a
    middle and the last one:

    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import logic_gate, perceptron
    >>> from msvm.teaching.plots import plot_perceptron_frames
    >>> result = perceptron(*logic_gate("and"))
    >>> result.n_updates
    18
    >>> fig = plot_perceptron_frames(result, n_frames=3)
    >>> [ax.get_title() for ax in fig.axes]
    ['update 1 (1 mistake)', 'update 9 (1 mistake)', 'update 18 (0 mistakes)']
    >>> plt.close(fig)
    """
    plt = _pyplot()
    trace = result.trace
    if not trace:
        raise ValueError("The result has no recorded update (nothing to draw).")
    if result.w is None:
        raise ValueError("Frames need the linear kernel (an explicit w).")
    # 3-D points were drawn silently as the line of their first two w components.
    _points(result.X, result.y, "The result's X")
    n_frames, ncols = _positive(n_frames, "n_frames"), _positive(ncols, "ncols")
    picks = np.unique(np.linspace(0, len(trace) - 1, min(n_frames, len(trace))).astype(int))
    nrows = int(np.ceil(len(picks) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    X, y = result.X, result.y
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    xs = np.linspace(lo[0], hi[0], 2)
    for ax, k in zip(axes.ravel(), picks, strict=False):
        record = trace[k]
        w, b = record["w"], record["b"]
        ax.scatter(X[:, 0], X[:, 1], c=np.where(y > 0, "#1f77b4", "#d62728"), s=15)
        if abs(w[1]) > 1e-12:
            ax.plot(xs, -(w[0] * xs + b) / w[1], "k-", label="w·x + b = 0")
        elif abs(w[0]) > 1e-12:
            ax.axvline(-b / w[0], color="k", label="w·x + b = 0")
        i = record["index"]
        ax.scatter([X[i, 0]], [X[i, 1]], s=120, facecolors="none", edgecolors="orange",
                   linewidths=2, label="updated point")
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        k = record["n_mistakes"]
        ax.set_title(f"update {record['t']} ({k} mistake{'' if k == 1 else 's'})", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.ravel()[len(picks):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_convergence(results, reference=None):
    """SMO's per-step dual, primal, duality gap and KKT violation against the optimum.

    Parameters
    ----------
    results : sequence of BinarySVM
        Runs of :func:`msvm.teaching.smo` (their ``trace``).
    reference : BinarySVM or float, optional
        The exact solution (or its dual value D*): drawn as a horizontal
        line, and D* − D is plotted on the log scale.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes: left, ``dual`` and ``primal`` per step for each run (lines
        labelled ``'<method> dual'`` and ``'<method> primal'``) and the line
        ``'exact optimum'``; right, on a log scale, ``'<method> gap'``,
        ``'<method> KKT violation'`` and, with a reference,
        ``'<method> D* − D'``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import overlapping_set, smo, soft_margin_svm
    >>> from msvm.teaching.plots import plot_convergence
    >>> X, y = overlapping_set(40, random_state=0)
    >>> runs = [smo(X, y, C=1.0, pair=pair, tol=1e-6) for pair in ("platt", "second_order")]
    >>> fig = plot_convergence(runs, reference=soft_margin_svm(X, y, C=1.0))
    >>> left, right = fig.axes
    >>> [line.get_label() for line in left.get_lines()]
    ['exact optimum', 'SMO (platt) dual', 'SMO (platt) primal',
     'SMO (second_order) dual', 'SMO (second_order) primal']
    >>> right.get_yscale(), len(right.get_lines())
    ('log', 6)
    >>> plt.close(fig)
    """
    plt = _pyplot()
    results = _nonempty(list(results), "results")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    d_star = None
    if reference is not None:
        d_star = (reference.certificate()["dual"] if isinstance(reference, BinarySVM)
                  else float(reference))
        left.axhline(d_star, color="k", lw=1, ls=":", label="exact optimum")
    for k, r in enumerate(results):
        color = f"C{k}"
        steps = np.array([t["step"] for t in r.trace])
        dual = np.array([t["dual"] for t in r.trace])
        left.plot(steps, dual, color=color, label=f"{r.method} dual")
        left.plot(steps, [t["primal"] for t in r.trace], color=color, ls="--",
                  label=f"{r.method} primal")
        tiny = 1e-16
        right.semilogy(steps, np.maximum([t["gap"] for t in r.trace], tiny), color=color,
                       label=f"{r.method} gap")
        right.semilogy(steps, np.maximum([t["kkt_violation"] for t in r.trace], tiny),
                       color=color, ls=":", label=f"{r.method} KKT violation")
        if d_star is not None:
            right.semilogy(steps, np.maximum(d_star - dual, tiny), color=color, ls="-.",
                           label=f"{r.method} D* − D")
    if d_star is not None:
        top = max(max(t["primal"] for t in r.trace[: max(3, len(r.trace) // 20)])
                  for r in results)
        left.set_ylim(min(0.0, d_star) - 0.05 * abs(d_star), max(top, d_star * 1.5))
    left.set_xlabel("SMO step")
    left.set_ylabel("objective")
    left.legend(fontsize=7)
    right.set_xlabel("SMO step")
    right.set_ylabel("gap, violation, distance (log)")
    right.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def plot_svm_primal(results, *, ax=None):
    """SVMPrimal's primal suboptimality P(w_t, b_t) − P* per epoch, one line per run.

    Parameters
    ----------
    results : sequence of SVMPrimalResult
        Runs of :func:`msvm.teaching.svm_primal` with ``reference=True``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per run, labelled ``'<mode>, λ = <lam>'``; for the batch
        mode also its certified bound (``'… bound'``, dotted).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import overlapping_set, svm_primal
    >>> from msvm.teaching.plots import plot_svm_primal
    >>> X, y = overlapping_set(40, random_state=0)
    >>> runs = [svm_primal(X, y, lam=lam, mode="batch", C=1.0, epochs=20) for lam in (0.01, 0.001)]
    >>> ax = plot_svm_primal(runs)
    >>> [line.get_label() for line in ax.get_lines()]
    ['batch, λ = 0.01', 'batch, λ = 0.01 bound', 'batch, λ = 0.001', 'batch, λ = 0.001 bound']
    >>> plt.close(ax.figure)
    """
    ax = _axes(ax)
    for k, r in enumerate(results):
        p_star = r.info["primal_optimum"]
        epochs = [t["epoch"] for t in r.trace]
        gaps = np.maximum(np.array([t["primal"] for t in r.trace]) - p_star, 1e-16)
        ax.semilogy(epochs, gaps, color=f"C{k}", label=f"{r.mode}, λ = {r.lam:.2g}")
        if "bound" in r.info:
            ax.axhline(r.info["bound"], color=f"C{k}", ls=":",
                       label=f"{r.mode}, λ = {r.lam:.2g} bound")
    ax.set_xlabel("epoch (online) or step (batch)")
    ax.set_ylabel("P(w, b) − P*")
    ax.legend(fontsize=7)
    return ax


def plot_kernel_regions(X, y, kernels: dict, C: float = 10.0, *, ncols: int = 3):
    """Decision regions of the exact soft-margin SVM for several lecture kernels.

    Parameters
    ----------
    X : array-like of shape (n, 2)
    y : array-like of shape (n,)
    kernels : dict
        Panel title -> (kernel name, parameter dict), e.g.
        ``{"RBF γ=1": ("rbf", {"gamma": 1.0})}``.
    C : float, default=10.0
    ncols : int, default=3

    Returns
    -------
    matplotlib.figure.Figure
        One axes per kernel (:func:`plot_decision_function` of
        :func:`msvm.teaching.soft_margin_svm`), titled with the kernel and the
        training accuracy.

    Examples
    --------
    XOR: no line separates it, the RBF kernel does.

    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import logic_gate
    >>> from msvm.teaching.plots import plot_kernel_regions
    >>> X, y = logic_gate("xor")
    >>> kernels = {"linear": ("linear", {}), "RBF γ=1": ("rbf", {"gamma": 1.0})}
    >>> fig = plot_kernel_regions(X, y, kernels, ncols=2)
    >>> [ax.get_title() for ax in fig.axes]
    ['linear: accuracy 0.50', 'RBF γ=1: accuracy 1.00']
    >>> plt.close(fig)
    """
    from msvm.teaching.svm import soft_margin_svm

    plt = _pyplot()
    X, y = _points(X, y)
    _nonempty(kernels, "kernels")
    ncols = _positive(ncols, "ncols")
    nrows = int(np.ceil(len(kernels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.4 * nrows), squeeze=False)
    for ax, (title, (name, params)) in zip(axes.ravel(), kernels.items(), strict=False):
        svm = soft_margin_svm(X, y, C, name, **params)
        acc = float(np.mean(svm.predict(svm.X) == svm.y))
        plot_decision_function(svm, ax=ax, title=f"{title}: accuracy {acc:.2f}")
    for ax in axes.ravel()[len(kernels):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_parameter_grid(X, y, Cs, gammas, *, kernel: str = "rbf"):
    """Effect of C (rows) and γ (columns) on the exact soft-margin SVM.

    Parameters
    ----------
    X : array-like of shape (n, 2)
    y : array-like of shape (n,)
    Cs : sequence of float
    gammas : sequence of float
    kernel : {'rbf', 'laplace'}, default='rbf'

    Returns
    -------
    matplotlib.figure.Figure
        len(Cs) × len(gammas) axes, each titled ``'C=…, γ=…: k SV'`` with k
        the number of support vectors of that solution.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import overlapping_set
    >>> from msvm.teaching.plots import plot_parameter_grid
    >>> X, y = overlapping_set(30, random_state=0)
    >>> fig = plot_parameter_grid(X, y, Cs=[0.1, 10.0], gammas=[0.5, 5.0])
    >>> [ax.get_title() for ax in fig.axes]
    ['C=0.1, γ=0.5: 30 SV', 'C=0.1, γ=5: 30 SV', 'C=10, γ=0.5: 19 SV', 'C=10, γ=5: 27 SV']
    >>> plt.close(fig)
    """
    from msvm.teaching.svm import soft_margin_svm

    plt = _pyplot()
    X, y = _points(X, y)
    _nonempty(Cs, "Cs"), _nonempty(gammas, "gammas")
    fig, axes = plt.subplots(len(Cs), len(gammas),
                             figsize=(3.2 * len(gammas), 3.0 * len(Cs)), squeeze=False)
    for r, C in enumerate(Cs):
        for c, gamma in enumerate(gammas):
            svm = soft_margin_svm(X, y, C, kernel, gamma=gamma)
            n_sv = int(np.count_nonzero(svm.kkt_kinds() != "non_sv"))
            ax = plot_decision_function(svm, ax=axes[r, c], title=f"C={C:g}, γ={gamma:g}: "
                                        f"{n_sv} SV")
            ax.get_legend().remove()
            ax.set_xticks([])
            ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_multiclass_regions(estimators: dict, X, y, *, ncols: int = 4, resolution: int = 150):
    """Multi-class decision regions of fitted classifiers on 2-D data.

    Parameters
    ----------
    estimators : dict
        Title -> fitted classifier with ``predict`` (e.g. the estimators of
        :func:`msvm.teaching.compare_multiclass`).
    X : array-like of shape (m, 2)
    y : array-like of shape (m,)
    ncols : int, default=4
    resolution : int, default=150

    Returns
    -------
    matplotlib.figure.Figure
        One axes per estimator, titled with its name and training accuracy.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm import MultiClassSVC
    >>> from msvm.teaching import multiclass_set
    >>> from msvm.teaching.plots import plot_multiclass_regions
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> estimators = {model: MultiClassSVC(model=model, C=1.0).fit(X, y) for model in ("ww", "cs")}
    >>> fig = plot_multiclass_regions(estimators, X, y, ncols=2)
    >>> [ax.get_title() for ax in fig.axes]
    ['ww: 1.00', 'cs: 1.00']
    >>> plt.close(fig)
    """
    plt = _pyplot()
    X, y = _points(X, y)
    _nonempty(estimators, "estimators")
    ncols, resolution = _positive(ncols, "ncols"), _positive(resolution, "resolution", 2)
    classes = np.unique(y)
    nrows = int(np.ceil(len(estimators) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.9 * nrows), squeeze=False)
    xx, yy, grid = _grid(X, resolution)
    cmap = plt.get_cmap("tab10")
    for ax, (title, est) in zip(axes.ravel(), estimators.items(), strict=False):
        Z = np.searchsorted(classes, est.predict(grid)).reshape(xx.shape)
        ax.contourf(xx, yy, Z, levels=np.arange(len(classes) + 1) - 0.5, cmap=cmap,
                    vmin=0, vmax=9, alpha=0.3)
        ax.scatter(X[:, 0], X[:, 1], c=np.searchsorted(classes, y), cmap=cmap, vmin=0, vmax=9,
                   s=12, edgecolors="k", linewidths=0.3)
        ax.set_title(f"{title}: {np.mean(est.predict(X) == y):.2f}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.ravel()[len(estimators):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_bound_vs_loo(records: list[dict], *, ax=None):
    """Radius–margin bound and the key lemma's count against the exact LOO errors, over C.

    Parameters
    ----------
    records : list of dict
        From :func:`msvm.teaching.compare.bound_path` (``C``, ``bound``,
        ``n_candidates``, ``loo_errors``).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Lines labelled ``'radius–margin bound'``, ``'key-lemma count'`` and
        ``'exact LOO errors'`` (log–log axes).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import multiclass_set
    >>> from msvm.teaching.compare import bound_path
    >>> from msvm.teaching.plots import plot_bound_vs_loo
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> records = bound_path(X, y, [0.1, 1.0, 10.0])
    >>> all(r["loo_errors"] <= r["n_candidates"] <= r["bound"] for r in records)
    True
    >>> ax = plot_bound_vs_loo(records)
    >>> [line.get_label() for line in ax.get_lines()][:3]
    ['radius–margin bound', 'key-lemma count', 'exact LOO errors']
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    >>> plt.close(ax.figure)
    """
    _nonempty(records, "records")
    ax = _axes(ax)
    Cs = [r["C"] for r in records]
    ax.loglog(Cs, [r["bound"] for r in records], "o-", label="radius–margin bound")
    ax.loglog(Cs, [max(r["n_candidates"], 0.5) for r in records], "s--",
              label="key-lemma count")
    ax.loglog(Cs, [max(r["loo_errors"], 0.5) for r in records], "^-k", label="exact LOO errors")
    ax.axhline(records[0]["n_samples"], color="grey", ls=":", lw=0.8)
    ax.set_xlabel("C")
    ax.set_ylabel("leave-one-out errors (count)")
    ax.legend(fontsize=8)
    return ax


def plot_certificates(records: list[dict], *, ax=None, key: str = "relative_gap"):
    """Bar chart of a certificate (relative duality gap by default) per solver, log scale.

    Parameters
    ----------
    records : list of dict
        Each with ``method`` and ``key``.
    ax : matplotlib Axes, optional
    key : str, default='relative_gap'

    Returns
    -------
    matplotlib.axes.Axes
        One bar per record, in order, with the method names as tick labels.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching import multiclass_set
    >>> from msvm.teaching.compare import solver_certificates
    >>> from msvm.teaching.plots import plot_certificates
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> records = solver_certificates(X, y, solvers=[("cvxpy", {"solver": "cvxpy"}),
    ...                                              ("s2do", {"solver": "s2do"})])
    >>> ax = plot_certificates(records)
    >>> len(ax.patches), [label.get_text() for label in ax.get_xticklabels()]
    (2, ['cvxpy', 's2do'])
    >>> ax.get_ylabel(), ax.get_yscale()
    ('relative gap', 'log')
    >>> plt.close(ax.figure)
    """
    ax = _axes(ax)
    values = [max(abs(r[key]), 1e-17) for r in records]
    ax.bar(range(len(records)), values, color=[f"C{k}" for k in range(len(records))])
    ax.set_yscale("log")
    ax.set_xticks(range(len(records)), [r["method"] for r in records], rotation=30,
                  ha="right", fontsize=7)
    ax.set_ylabel(key.replace("_", " "))
    return ax


def plot_finish_runs(records: list[dict], *, ax=None):
    """The largest KKT violation against passes of the runs of
    :func:`msvm.teaching.finish_runs`, log-log, with the finish's hand-over marked.

    Parameters
    ----------
    records : list of dict
        Each with ``method``, ``trace`` ((passes, violation) pairs) and
        ``handover``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per record, labelled with its method, and a vertical line
        labelled ``'hand-over to the finish'``.

    Examples
    --------
    Records of the shape :func:`msvm.teaching.finish_runs` returns (its
    traces are sampled in time, so these are written out):

    >>> import matplotlib.pyplot as plt
    >>> from msvm.teaching.plots import plot_finish_runs
    >>> records = [
    ...     {"method": "S2DO", "trace": [(1, 0.5), (10, 0.05), (100, 1e-4)], "handover": 20},
    ...     {"method": "S2DO + finish", "trace": [(1, 0.5), (10, 0.05), (21, 1e-12)],
    ...      "handover": 20}]
    >>> ax = plot_finish_runs(records)
    >>> [line.get_label() for line in ax.get_lines()]
    ['S2DO', 'S2DO + finish', 'hand-over to the finish']
    >>> plt.close(ax.figure)
    """
    ax = _axes(ax)
    for k, r in enumerate(records):
        passes = np.array([max(n, 1) for n, _ in r["trace"]])
        ax.loglog(passes, np.maximum([v for _, v in r["trace"]], 1e-16), color=f"C{k}",
                  marker=".", label=r["method"])
    handovers = {r["handover"] for r in records if r.get("handover")}
    for n in handovers:
        ax.axvline(n, color="k", ls=":", lw=1, label="hand-over to the finish")
    ax.set_xlabel("S2DO passes")
    ax.set_ylabel("largest KKT violation")
    ax.legend(fontsize=8)
    return ax
