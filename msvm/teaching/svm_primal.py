r"""SVMPrimal: the lecture's margin-violation update on (w, b), and what it converges to.

The lecture derives two updates from the subgradient of the hinge loss.

**Batch** (its first formula, over all margin violators V = {i: s_i < 1},
s_i = y_i(wᵀx_i + b))::

    w ← (1 − λ) w + λ C Σ_{i∈V} y_i x_i,     b ← b + λ C Σ_{i∈V} y_i

is exactly a subgradient step of length λ on the soft-margin primal
P(w, b) = ½‖w‖² + C Σ_i max(0, 1 − s_i): its subgradient is
g = (w − C Σ_V y_i x_i, −C Σ_V y_i).  The slide writes the objective without
C, i.e. C = 1; here C is explicit.  λ is a *step size*, not a regularisation
parameter.  The classical subgradient argument gives a certified distance:
with v = (w, b) and v* an optimum,
‖v_{t+1} − v*‖² ≤ ‖v_t − v*‖² − 2λ(P(v_t) − P*) + λ²‖g_t‖², so after T
steps from v₀ = 0

    min_{t<T} P(v_t) − P*  ≤  (‖w*‖² + b*² + λ² Σ_{t<T} ‖g_t‖²) / (2 λ T).

:func:`svm_primal` records ‖g_t‖ and returns this bound (``info['bound']``,
with v* from the exact solver) beside the measured distance.  With a constant
λ it does not go to zero: the best iterate gets within about λ·max‖g‖²/2
of P*; the constant step only oscillates around the optimum.

**Online** (the lecture's SVMPrimal(D, λ), the default)::

    for each point in turn, if s_i < 1:
        w ← (1 − λ) w + λ y_i x_i,     b ← b + λ y_i

Each update is a convex combination of w and y_i x_i (so ‖w‖ ≤ max_i ‖x_i‖
throughout), and the shrinkage is applied *only on violations*.  That makes
it a different algorithm from stochastic gradient descent on P, and its
relation to C is not through λ at all.  Over a pass with a small λ the
change is λ Σ_{i∈V} (y_i x_i − w, y_i), so its rest points (λ → 0; θ_i ∈ [0, 1]
is the fraction of the time point i violates, 1 inside the margin, 0
outside, anything on it) satisfy

    w = Σ_i θ_i y_i x_i / Σ_i θ_i,      Σ_i θ_i y_i = 0.

Put C = 1/Σ_i θ_i and α_i = C θ_i ∈ [0, C]: these are the KKT conditions of
the soft-margin SVM at C (w = Σ α_i y_i x_i, Σ α_i y_i = 0, α_i = C inside
the margin, 0 outside), with the extra condition Σ_i α_i = C Σ_i θ_i = 1.
Hence

    the online SVMPrimal converges (λ → 0) to the soft-margin SVM whose C*
    satisfies Σ_i α_i(C*) = 1,

whatever λ is; λ only sets the step and the size of the final oscillation.
Σ_i α_i(C) is non-decreasing in C (it equals D(C) + ½‖w(C)‖², both
non-decreasing), so C* is found by bisection (:func:`svm_primal_limit_C`).
If the data are separable with ‖w_hard‖² = Σ α_hard < 1, there is no such
C*: the updates stop as soon as every s_i ≥ 1, at a separating (w, b) that
is not the maximum-margin one.

**C-consistent online** (``mode='sgd'``): to reach a chosen C online, shrink
at *every* visit and weight the violation by n C::

    w ← (1 − λ) w + λ n C 𝟙(s_i < 1) y_i x_i,   b ← b + λ n C 𝟙(s_i < 1) y_i

which is stochastic gradient descent with step nλ on
P/n = Σ_i [‖w‖²/(2n) + C max(0, 1 − s_i)] (its rest points: w = C Σ_V y_i x_i).

For the online modes there is no deterministic distance with a constant step
(stochastic gradient descent only converges in expectation, and only with a
decreasing step), so :func:`svm_primal` reports the measured distance to
the exact optimum, ``tests/test_teaching.py`` holds it to a regression
tolerance, and the lesson plots it against λ.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from msvm._numbers import is_real
from msvm.teaching.data import _check_count
from msvm.teaching.svm import binary_data, check_C, hinge_loss, soft_margin_svm

__all__ = ["SVMPrimalResult", "primal_value", "svm_primal", "svm_primal_limit_C"]

MODES = ("online", "batch", "sgd")


def primal_value(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray, C: float) -> float:
    """P(w, b) = ½‖w‖² + C Σ_i max(0, 1 − y_i(wᵀx_i + b)).

    Parameters
    ----------
    w : ndarray of shape (d,)
    b : float
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Labels ±1.
    C : float

    Returns
    -------
    float
    """
    return 0.5 * float(w @ w) + C * float(hinge_loss(X @ w + b, y).sum())


@dataclass
class SVMPrimalResult:
    """What :func:`svm_primal` found.

    Attributes
    ----------
    w : ndarray of shape (d,)
        The last iterate (``average=False``) or the average of the second
        half of the epochs' end points.
    b : float
    mode : str
    lam : float
    C : float
        The C of the objective the iterates are measured against: the given
        C (``'batch'``, ``'sgd'``) or C* of :func:`svm_primal_limit_C`
        (``'online'``, computed when ``reference=True``).
    n_updates : int
        Updates made (violations met).
    n_epochs : int
    trace : list of dict
        Per epoch (``'online'``, ``'sgd'``) or per step (``'batch'``):
        ``epoch``, ``w``, ``b``, ``n_violations``, ``primal`` (P at C) and,
        for ``'batch'``, ``subgradient_norm``.
    info : dict
        With ``reference=True``: ``primal_optimum`` (P* from the exact
        solver), ``w_opt``, ``b_opt``, ``primal_gap`` (P(w, b) − P*),
        ``relative_gap``, ``distance`` (‖(w, b) − (w*, b*)‖) and, for
        ``'batch'``, ``best_gap`` (min over iterates) and ``bound`` (the
        module docstring's certified bound on it).
    time : float
    """

    w: np.ndarray
    b: float
    mode: str
    lam: float
    C: float
    n_updates: int
    n_epochs: int
    trace: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    time: float = 0.0

    def decision_function(self, X) -> np.ndarray:
        """f(x) = wᵀx + b."""
        return np.atleast_2d(np.asarray(X, dtype=np.float64)) @ self.w + self.b

    def predict(self, X) -> np.ndarray:
        """±1 by the sign of f."""
        return np.where(self.decision_function(X) >= 0, 1.0, -1.0)


def svm_primal_limit_C(X, y, *, rtol: float = 1e-6) -> float:
    """C* with Σ_i α_i(C*) = 1: where the lecture's online SVMPrimal converges.

    Σ_i α_i(C) is non-decreasing in C (module docstring): the bracket is
    grown by factors of 10 from C = 1, then bisected geometrically, each
    point solved exactly by :func:`msvm.teaching.svm.soft_margin_svm`.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    rtol : float, default=1e-6
        Relative width of the final bracket.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the data are linearly separable with Σ α_hard = ‖w_hard‖² < 1:
        Σ α(C) never reaches 1 and there is no C*.

    Examples
    --------
    >>> from msvm.teaching import overlapping_set, svm_primal_limit_C
    >>> X, y = overlapping_set(40, random_state=0)
    >>> round(svm_primal_limit_C(X, y), 4)
    0.0361
    """
    from msvm.teaching.perceptron import linearly_separable
    from msvm.teaching.svm import hard_margin_svm

    X, y, _ = binary_data(X, y)
    if linearly_separable(X, y) and hard_margin_svm(X, y).alpha.sum() < 1.0:
        raise ValueError("Sum of alpha stays below 1 for every C (separable data with "
                         "||w_hard||^2 < 1): the online SVMPrimal stops at the first (w, b) "
                         "with every margin >= 1 (see the module docstring).")

    def sum_alpha(C: float) -> float:
        return float(soft_margin_svm(X, y, C).alpha.sum())

    lo = hi = 1.0
    while sum_alpha(hi) < 1.0:
        lo, hi = hi, 10.0 * hi
    while sum_alpha(lo) >= 1.0:
        lo, hi = 0.1 * lo, lo
    while hi / lo > 1.0 + rtol:
        mid = np.sqrt(lo * hi)
        if sum_alpha(mid) < 1.0:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


def svm_primal(X, y, lam: float = 0.01, *, mode: str = "online", C: float | None = None,
               epochs: int = 100, average: bool = True, shuffle: bool = True,
               random_state: int | None = 0, reference: bool = True,
               C_limit: float | None = None) -> SVMPrimalResult:
    """Run SVMPrimal (module docstring) and measure it against the exact optimum.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Two labels (coded ±1).
    lam : float, default=0.01
        The step λ ∈ (0, 1) (``'batch'``, ``'sgd'``: λ C n ≤ 1 is not
        required, but large steps oscillate).
    mode : {'online', 'batch', 'sgd'}, default='online'
        The lecture's SVMPrimal, its batch formula (subgradient descent at
        C), or the C-consistent online update.
    C : float, optional
        A finite C > 0, required for ``'batch'`` and ``'sgd'``; must be None for
        ``'online'``, whose C is C* (:func:`svm_primal_limit_C`).
    epochs : int, default=100
        Passes over the data (``'batch'``: steps), at least 1.
    average : bool, default=True
        Return the average of the iterates at the end of the second half of
        the epochs (online modes; reduces the oscillation of a constant
        step).  ``'batch'`` returns its best iterate.
    shuffle : bool, default=True
        Visit the points in a random order in each epoch (online modes).
    random_state : int or None, default=0
    reference : bool, default=True
        Solve the exact problem (and, for ``'online'``, find C*) to fill
        ``info`` with the distance to the optimum.
    C_limit : float, optional
        C* when already known (``'online'``; skips
        :func:`svm_primal_limit_C`).

    Returns
    -------
    SVMPrimalResult

    Raises
    ------
    ValueError
        For an unknown ``mode``, ``lam`` outside (0, 1), a C that does not
        fit the mode, ``epochs`` < 1, or bad ``X``, ``y``
        (:func:`~msvm.teaching.svm.binary_data`).

    Examples
    --------
    >>> from msvm.teaching import overlapping_set, svm_primal
    >>> X, y = overlapping_set(40, random_state=0)
    >>> result = svm_primal(X, y, lam=0.01, mode="batch", C=1.0, epochs=20)
    >>> result.mode, result.n_epochs
    ('batch', 20)
    >>> round(result.info["primal_optimum"], 2)   # P* of the exact solver
    17.06
    >>> result.info["relative_gap"] < 1e-3   # (P(w, b) - P*) / P* of the best step
    True
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
    # also NaN; λ ≤ 0 gave w = 0 or a diverging w without a word
    if not is_real(lam) or not 0 < lam < 1:
        raise ValueError(f"lam must be in (0, 1), got {lam!r}.")
    if mode == "online" and C is not None:
        raise ValueError("The lecture's online SVMPrimal has no C (it converges to C*, see "
                         "svm_primal_limit_C); use mode='sgd' or 'batch' for a given C.")
    if mode != "online" and C is None:
        raise ValueError(f"mode={mode!r} needs a positive C.")
    if C is not None:   # C = inf failed inside the reference QP with an empty message
        C = check_C(C)
    if C_limit is not None:
        C_limit = check_C(C_limit, "C_limit")
    # epochs=0 was a TypeError (online) or a NaN bound (batch)
    _check_count("epochs", epochs, 1)
    start = time.perf_counter()
    X, y, _ = binary_data(X, y)
    n = len(y)
    rng = np.random.default_rng(random_state)
    if mode == "online":
        C_eval = C_limit if C_limit is not None else (
            svm_primal_limit_C(X, y) if reference else None)
    else:
        C_eval = C
    w, b = np.zeros(X.shape[1]), 0.0
    trace: list[dict] = []
    n_updates = 0
    best = (np.inf, w.copy(), b)
    for epoch in range(1, epochs + 1):
        if mode == "batch":
            assert C is not None  # checked above: only 'online' has no C
            s = y * (X @ w + b)
            V = s < 1.0
            g_w = w - C * (y[V] @ X[V])
            g_b = -C * float(y[V].sum())
            value = primal_value(w, b, X, y, C)
            if value < best[0]:
                best = (value, w.copy(), b)
            trace.append({"epoch": epoch - 1, "w": w.copy(), "b": b,
                          "n_violations": int(V.sum()), "primal": value,
                          "subgradient_norm": float(np.sqrt(g_w @ g_w + g_b**2))})
            w, b = w - lam * g_w, b - lam * g_b
            n_updates += int(V.sum())
            continue
        order = rng.permutation(n) if shuffle else np.arange(n)
        violations = 0
        for i in order:
            violated = y[i] * (X[i] @ w + b) < 1.0
            if mode == "online":
                if violated:  # the lecture's rule: shrink and add only on a violation
                    w = (1.0 - lam) * w + lam * y[i] * X[i]
                    b += lam * y[i]
            else:  # 'sgd': shrink at every visit, add n C y_i x_i on a violation
                assert C is not None
                w = (1.0 - lam) * w + (lam * n * C * y[i] * X[i] if violated else 0.0)
                b += lam * n * C * y[i] if violated else 0.0
            violations += int(violated)
        n_updates += violations
        trace.append({"epoch": epoch, "w": w.copy(), "b": float(b), "n_violations": violations,
                      "primal": primal_value(w, b, X, y, C_eval) if C_eval else np.nan})
    if mode == "batch":
        w_out, b_out = best[1], best[2]
    elif average:
        tail = trace[len(trace) // 2:]
        w_out = np.mean([r["w"] for r in tail], axis=0)
        b_out = float(np.mean([r["b"] for r in tail]))
    else:
        w_out, b_out = w, float(b)
    info: dict = {}
    if reference:
        assert C_eval is not None  # C, C_limit or svm_primal_limit_C
        exact = soft_margin_svm(X, y, C_eval)
        w_opt, b_opt = exact.w, exact.b
        p_opt = primal_value(w_opt, b_opt, X, y, C_eval)
        p = primal_value(w_out, b_out, X, y, C_eval)
        info = {"primal_optimum": p_opt, "w_opt": w_opt, "b_opt": b_opt,
                "primal_gap": p - p_opt, "relative_gap": (p - p_opt) / abs(p_opt),
                "distance": float(np.sqrt(np.sum((w_out - w_opt) ** 2) + (b_out - b_opt) ** 2))}
        if mode == "batch":
            g2 = np.array([r["subgradient_norm"] ** 2 for r in trace])
            info["best_gap"] = best[0] - p_opt
            info["bound"] = float((w_opt @ w_opt + b_opt**2 + lam**2 * g2.sum())
                                  / (2.0 * lam * len(trace)))
    return SVMPrimalResult(w=w_out, b=float(b_out), mode=mode, lam=float(lam),
                           C=float(C_eval) if C_eval else np.nan, n_updates=n_updates,
                           n_epochs=epochs, trace=trace, info=info,
                           time=time.perf_counter() - start)
