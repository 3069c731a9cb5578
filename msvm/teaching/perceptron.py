r"""The perceptron and its convergence theorem (the lecture's first section).

The algorithm (Rosenblatt), with v = (w, b) and z = (x, 1)::

    w ← 0, b ← 0, t ← 0
    repeat over the data:  s_i = y_i (wᵀx_i + b)
                           if s_i ≤ 0:  w ← w + y_i x_i,  b ← b + y_i,  t ← t + 1
    until a whole pass makes no update

One correction to the slide: it skips a point when s_i ≥ 0 and updates when
s_i < 0, but the start w = 0, b = 0 gives s_i = 0 for every point, so that
rule stops at once with w = 0 (which also "separates" the data under the
slide's definition s_i ≥ 0).  The update is made when s_i ≤ 0, as in
Rosenblatt's algorithm; the convergence proof only needs y_i vᵀz_i ≤ 0 at an
update (step (2) of the slide's proof), so the theorem is unchanged, and the
algorithm stops with every s_i > 0.

The theorem (Novikoff): if some (w*, b*) has y_i(w*ᵀx_i + b*) ≥ δ > 0 for
every i, the number of updates is at most

    t ≤ R² (‖w*‖² + b*²) / δ²,      R² = max_i ‖x_i‖² + 1 = max_i ‖z_i‖².

Any separating (w*, b*) gives a valid bound.  :func:`novikoff_bound`
evaluates it, as the issue asks, with the hard-margin SVM's solution
(δ = 1 by its normalisation, so t ≤ R²(‖w*‖² + b*²)), and also with the
tightest choice: the (w, b) minimising ‖w‖² + b² subject to
y_i(wᵀx_i + b) ≥ 1, which is a hard-margin SVM *without* bias on z = (x, 1),
i.e. on the kernel xᵀx' + 1 (solved by the same reference QP).

Kernel perceptron.  w is always Σ_i c_i y_i φ(x_i) with c_i the number of
updates made on point i, so the algorithm only needs κ(x_i, x_j): with a
kernel other than the linear one, :func:`perceptron` keeps the counts c and
f(x) = Σ_i c_i y_i κ(x_i, x) + Σ_i c_i y_i.  The theorem holds in the
feature space with R² = max_i κ(x_i, x_i) + 1.

On data that no hyperplane separates (XOR) the perceptron never stops; here
it stops after ``max_epochs`` passes and reports ``converged=False``.
:func:`linearly_separable` settles the question independently by a linear
program (HiGHS through :func:`scipy.optimize.linprog`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from msvm.teaching.data import _check_count
from msvm.teaching.kernels import kernel_matrix, make_kernel
from msvm.teaching.svm import binary_data

__all__ = ["PerceptronResult", "linearly_separable", "novikoff_bound", "perceptron"]


@dataclass
class PerceptronResult:
    """What :func:`perceptron` found, with one record per update.

    Attributes
    ----------
    converged : bool
        Whether a whole pass made no update (every s_i > 0).
    n_updates : int
        The number t of updates.
    n_epochs : int
        Passes over the data.
    counts : ndarray of shape (n,)
        Updates made on each point (w = Σ c_i y_i φ(x_i), b = Σ c_i y_i).
    w : ndarray of shape (d,) or None
        The weight vector (linear kernel only).
    b : float
    X, y : ndarray
        The training set (labels ±1).
    kernel : callable
    kernel_name : str
    trace : list of dict
        One record per update: ``t``, ``epoch``, ``index`` (the point
        updated on), ``score`` (its s_i before the update), ``w`` (copy,
        linear kernel only), ``b``, ``n_mistakes`` (points with s ≤ 0 after
        the update).
    time : float
        Seconds.
    """

    converged: bool
    n_updates: int
    n_epochs: int
    counts: np.ndarray
    w: np.ndarray | None
    b: float
    X: np.ndarray
    y: np.ndarray
    kernel: Callable[..., np.ndarray]
    kernel_name: str
    trace: list = field(default_factory=list)
    time: float = 0.0

    def decision_function(self, X) -> np.ndarray:
        """f(x) = wᵀx + b, i.e. Σ_i c_i y_i κ(x_i, x) + b."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.w is not None:
            return X @ self.w + self.b
        used = self.counts > 0
        if not np.any(used):
            return np.full(X.shape[0], self.b)
        return self.kernel(X, self.X[used]) @ (self.counts[used] * self.y[used]) + self.b

    def predict(self, X) -> np.ndarray:
        """±1 by the sign of f (the lecture's f ≥ 0 → +1)."""
        return np.where(self.decision_function(X) >= 0, 1.0, -1.0)


def perceptron(X, y, kernel: str | Callable = "linear", *, max_epochs: int = 1000,
               record_every: int = 1, **kernel_params) -> PerceptronResult:
    """Rosenblatt's perceptron, visiting the points in order (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Two labels (coded ±1).
    kernel : str or callable, default='linear'
        ``'linear'`` keeps w explicitly; any other lecture kernel runs the
        kernel perceptron on update counts.
    max_epochs : int, default=1000
        Passes after which an unfinished run stops with ``converged=False``.
    record_every : int, default=1
        Keep one trace record every ``record_every`` updates (all by default).
    **kernel_params
        The kernel's parameters.

    Returns
    -------
    PerceptronResult

    Examples
    --------
    The AND gate: the perceptron converges (the set is separable) after 18
    updates, within Novikoff's bound.

    >>> from msvm.teaching import logic_gate, perceptron
    >>> X, y = logic_gate("and")
    >>> result = perceptron(X, y)
    >>> result.converged, result.n_updates
    (True, 18)
    >>> result.w, result.b
    (array([3., 2.]), -4.0)
    >>> result.predict(X)
    array([-1., -1., -1.,  1.])
    """
    _check_count("max_epochs", max_epochs, 0)
    _check_count("record_every", record_every, 1)   # 0: a ZeroDivisionError in the loop
    start = time.perf_counter()
    X, y, _ = binary_data(X, y)
    f = make_kernel(kernel, **kernel_params)
    linear = kernel == "linear"
    K = None if linear else kernel_matrix(X, X, f)
    n = len(y)
    counts = np.zeros(n, dtype=np.int64)
    w = np.zeros(X.shape[1])
    b = 0.0
    t = 0
    trace: list[dict] = []

    def scores() -> np.ndarray:  # s_i = y_i f(x_i) for every point
        u = X @ w if K is None else K @ (counts * y)
        return y * (u + b)

    epoch = 0
    converged = False
    while epoch < max_epochs:
        epoch += 1
        updated = False
        for i in range(n):
            s_i = y[i] * ((X[i] @ w if K is None else K[i] @ (counts * y)) + b)
            if s_i > 0:
                continue  # correctly classified, strictly
            if linear:
                w = w + y[i] * X[i]
            b += y[i]
            counts[i] += 1
            t += 1
            updated = True
            if t % record_every == 0:
                trace.append({"t": t, "epoch": epoch, "index": i, "score": float(s_i),
                              "w": w.copy() if linear else None, "b": float(b),
                              "n_mistakes": int(np.count_nonzero(scores() <= 0))})
        if not updated:
            converged = True
            break
    return PerceptronResult(converged=converged, n_updates=t, n_epochs=epoch, counts=counts,
                            w=w if linear else None, b=float(b), X=X, y=y, kernel=f,
                            kernel_name=kernel if isinstance(kernel, str) else "callable",
                            trace=trace, time=time.perf_counter() - start)


def novikoff_bound(X, y, kernel: str | Callable = "linear", *, tightest: bool = False,
                   **kernel_params) -> dict:
    """The theorem's bound R²(‖w*‖² + b*²)/δ² on the perceptron's updates.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    kernel : str or callable, default='linear'
    tightest : bool, default=False
        ``False``: (w*, b*) is the hard-margin SVM's solution (δ = 1).
        ``True``: the (w, b) of smallest ‖w‖² + b² with all margins ≥ 1
        (the hard-margin SVM without bias on the kernel κ + 1), which
        minimises the bound.
    **kernel_params
        The kernel's parameters.

    Returns
    -------
    dict
        ``bound``, ``R2`` (max κ(x_i, x_i) + 1), ``norm_w2`` (‖w*‖²), ``b``
        (b*), ``delta`` (min_i y_i(w*ᵀx_i + b*), 1 up to rounding).

    Raises
    ------
    ValueError
        If the points are not separable (the theorem's hypothesis fails).

    Examples
    --------
    >>> from msvm.teaching import logic_gate, novikoff_bound, perceptron
    >>> X, y = logic_gate("and")
    >>> theorem = novikoff_bound(X, y)
    >>> round(theorem["R2"]), round(theorem["norm_w2"]), round(theorem["b"])
    (3, 8, -3)
    >>> round(theorem["bound"])   # R² (‖w*‖² + b*²) / δ², δ = 1
    51
    >>> perceptron(X, y).n_updates <= theorem["bound"]
    True
    """
    from msvm.teaching.svm import hard_margin_svm

    X, y, _ = binary_data(X, y)
    f = make_kernel(kernel, **kernel_params)
    K = kernel_matrix(X, X, f)
    R2 = float(np.max(np.diag(K))) + 1.0
    if tightest:
        alpha = _bias_free_hard_margin(K + 1.0, y)
        ay = alpha * y
        norm_w2 = float(ay @ K @ ay)
        b = float(ay.sum())  # the bias is the weight of the constant feature 1
        delta = float(np.min(y * (K @ ay + b)))
    else:
        svm = hard_margin_svm(X, y, f)
        norm_w2 = svm.norm_w**2
        b = svm.b
        delta = float(np.min(y * svm.decision_function(X)))
    return {"bound": R2 * (norm_w2 + b**2) / delta**2, "R2": R2, "norm_w2": norm_w2, "b": b,
            "delta": delta}


def _bias_free_hard_margin(K: np.ndarray, y: np.ndarray, C_start: float = 1e3,
                           C_max: float = 1e7) -> np.ndarray:
    """α of the hard-margin SVM without bias on the Gram matrix K (reference QP).

    With Q = 2 and no bias, the ``ww`` row of the unified table is the binary
    SVM without bias: f = h₂ − h₁, w = w₂ − w₁, and at the optimum
    w₂ = −w₁ = w/2, so its objective ¼‖w‖² + C Σ ξ is half the binary one at
    C_binary = 2C; each example has one active variable α_i and the binary
    multiplier is 2α_i.  As in :func:`msvm.teaching.svm.hard_margin_svm`, C
    is raised until no multiplier reaches it.
    """
    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem
    from msvm.solvers import get_solver

    classes = (y > 0).astype(np.intp)
    C = C_start
    while C <= C_max:
        problem = DualProblem(make_machine("ww", 2), classes, Kernel(K, "precomputed"), C, False)
        solution = get_solver("cvxpy").solve(problem)
        alpha = 2.0 * solution.alpha.sum(axis=1)
        if solution.status != "failed" and alpha.max() < 2.0 * C * (1.0 - 1e-6):
            return alpha
        C *= 100.0
    raise ValueError("The points are not separable: the perceptron's theorem does not apply.")


def linearly_separable(X, y) -> bool:
    """Whether some (w, b) has y_i(wᵀx_i + b) ≥ 1 for every i (a linear program).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)

    Returns
    -------
    bool
        ``True`` exactly when the perceptron converges on (X, y).

    Examples
    --------
    >>> from msvm.teaching import linearly_separable, logic_gate
    >>> linearly_separable(*logic_gate("or")), linearly_separable(*logic_gate("xor"))
    (True, False)
    """
    from scipy.optimize import linprog

    X, y, _ = binary_data(X, y)
    Z = np.hstack([X, np.ones((len(y), 1))])
    # feasibility of −y_i z_iᵀv ≤ −1 with v free
    result = linprog(np.zeros(Z.shape[1]), A_ub=-(y[:, None] * Z), b_ub=-np.ones(len(y)),
                     bounds=[(None, None)] * Z.shape[1], method="highs")
    return bool(result.status == 0)
