r"""Sequential minimal optimisation (SMO), as the lecture describes it, with its traces.

The dual is written as a minimisation, f(α) = ½ αᵀQα − Σ_i α_i with
Q_ij = y_i y_j κ(x_i, x_j), over 0 ≤ α_i ≤ C and Σ_i y_i α_i = 0 (the
lecture's D is −f).  The algorithm keeps the gradient G = Qα − 1, whose
entries are G_i = y_i u_i − 1 = s_i − 1 with u_i = Σ_j α_j y_j κ(x_j, x_i)
(the lecture's u without b), and repeats:

1. **A KKT violator and a second multiplier.**  The KKT conditions of the
   lecture's slide (α_i = 0 ⇒ s_i ≥ 1, 0 < α_i < C ⇒ s_i = 1, α_i = C ⇒
   s_i ≤ 1) hold for some b exactly when
   m(α) = max_{i ∈ I_up} −y_i G_i  ≤  M(α) = min_{j ∈ I_low} −y_j G_j
   (:func:`msvm.teaching.svm.kkt_violation`); a pair (i, j) with
   −y_i G_i > −y_j G_j, i ∈ I_up, j ∈ I_low is a *violating pair*.  Three
   rules pick it (``pair=``):

   ``'platt'``
       Platt's heuristics (1998): an outer loop over the points, alternating
       a pass over all of them with passes over the free ones (0 < α < C),
       takes as first multiplier a point whose KKT condition fails by more
       than ``tol`` against the current threshold b; the second maximises
       \|E_i − E_j\| (E = f(x) − y, the prediction error), and if that step
       makes no progress the free points and then all points are tried from
       a random position.  b is Platt's threshold update (below).
   ``'max_violating'``
       The maximal violating pair (Keerthi et al. 2001; libsvm's first-order
       rule): i = argmax_{I_up} −y G, j = argmin_{I_low} −y G.
   ``'second_order'``
       libsvm's rule (Fan, Chen & Lin 2005): i as above, and j the point of
       I_low with −y_j G_j < −y_i G_i that maximises the decrease of the
       objective of the two-variable step, b_ij² / a_ij with
       b_ij = −y_i G_i + y_j G_j and a_ij = K_ii + K_jj − 2K_ij.

2. **The clipped two-variable step.**  With α_i, α_j free and the others
   fixed, Σ y α = 0 keeps y_i α_i + y_j α_j constant, so the objective is a
   parabola in α_j along a segment [L, H] of the box:
   α_j ← clip(α_j + y_j (E_i − E_j)/η, L, H) with η = K_ii + K_jj − 2K_ij
   (the second derivative along the segment), and
   α_i ← α_i + y_i y_j (α_j_old − α_j).  E_i − E_j = y_i G_i − y_j G_j does
   not depend on b.  If η ≤ 0 (two equal points, or the tanh kernel, which
   is not positive semi-definite) η is replaced by a small τ > 0, as libsvm
   does: the step then goes to the end of the segment in the descent
   direction.

3. **b and u.**  Only α_i and α_j changed, so G is updated in O(n) from two
   columns of Q.  b is the lecture's b = y_k − u_k over the free support
   vectors k (averaged over all of them; the midpoint of the admissible
   interval if there is none: :func:`msvm.teaching.svm.bias_from_free_svs`).
   The ``'platt'`` rule keeps Platt's own threshold instead, updated after
   each step so that the new E of a free α_i (or α_j) is zero:
   b_i = b − E_i − y_i Δα_i K_ii − y_j Δα_j K_ij (and b_j likewise), b = b_i
   if α_i is free, else b_j if α_j is free, else (b_i + b_j)/2.

4. **Stop** when the largest KKT violation m − M is at most ``tol``.  For
   ``'platt'`` the outer loop stops when a pass over all points changes
   nothing: every point then meets its KKT condition to ``tol`` against
   Platt's single b, which implies m − M ≤ 2·``tol``; m − M is measured and
   reported like the others.

The trace has, at every step, the dual D = −f(α), the primal
P = ½‖w‖² + C Σ ξ at the best b for the current α
(:func:`msvm.teaching.svm.optimal_bias`), the duality gap P − D ≥ 0 and the
KKT violation m − M.  The gap bounds the distance of the dual to its optimum,
D* − D ≤ P − D, whatever the pair rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from msvm.teaching.data import _check_count
from msvm.teaching.kernels import kernel_matrix, make_kernel
from msvm.teaching.svm import (
    BinarySVM,
    _up_low,
    bias_from_free_svs,
    binary_data,
    check_C,
    optimal_bias,
)

__all__ = ["PAIR_RULES", "smo"]

#: The pair-selection rules of :func:`smo`.
PAIR_RULES = ("platt", "max_violating", "second_order")

TAU = 1e-12  # libsvm's replacement for a non-positive curvature η


class _SMOState:
    """α, the gradient G = Qα − 1 and the bookkeeping of one SMO run."""

    def __init__(self, K: np.ndarray, y: np.ndarray, C: float):
        self.K, self.y, self.C = K, y, C
        self.n = len(y)
        self.alpha = np.zeros(self.n)
        self.G = -np.ones(self.n)
        self.b = 0.0  # Platt's threshold (used by the 'platt' rule only)
        self.n_steps = 0

    def minus_yg(self) -> np.ndarray:
        return -self.y * self.G

    def violation(self) -> tuple[float, int, int]:
        """m − M with the maximal violating pair (i, j)."""
        up, low = _up_low(self.alpha, self.y, self.C)
        v = self.minus_yg()
        if not np.any(up) or not np.any(low):
            return 0.0, -1, -1
        i = int(np.flatnonzero(up)[np.argmax(v[up])])
        j = int(np.flatnonzero(low)[np.argmin(v[low])])
        return max(0.0, float(v[i] - v[j])), i, j

    def step(self, i: int, j: int, eps: float = 0.0) -> float:
        """The clipped two-variable step on (α_i, α_j); returns |Δα_j|.

        A step with |Δα_j| ≤ eps·(α_j + α_j_new + eps) is not taken (Platt's
        test of progress) and 0 is returned.
        """
        K, y, C, a = self.K, self.y, self.C, self.alpha
        if i == j:
            return 0.0
        if y[i] != y[j]:
            L, H = max(0.0, a[j] - a[i]), min(C, C + a[j] - a[i])
        else:
            L, H = max(0.0, a[i] + a[j] - C), min(C, a[i] + a[j])
        if H - L <= 0.0:
            return 0.0
        eta = K[i, i] + K[j, j] - 2.0 * K[i, j]
        eta = eta if eta > 0 else TAU
        E_i, E_j = y[i] * self.G[i], y[j] * self.G[j]  # errors up to the common b
        aj = float(np.clip(a[j] + y[j] * (E_i - E_j) / eta, L, H))
        if abs(aj - a[j]) <= eps * (aj + a[j] + eps):
            return 0.0
        ai = a[i] + y[i] * y[j] * (a[j] - aj)
        ai = float(np.clip(ai, 0.0, C))  # rounding only
        d_i, d_j = ai - a[i], aj - a[j]
        if d_i == 0.0 and d_j == 0.0:
            return 0.0
        # G = Qα − 1 changes by Q[:, i] Δα_i + Q[:, j] Δα_j
        self.G += y * (K[:, i] * (y[i] * d_i) + K[:, j] * (y[j] * d_j))
        if self.platt:
            self._platt_threshold(i, j, d_i, d_j, E_i, E_j, ai, aj)
        a[i], a[j] = ai, aj
        self.n_steps += 1
        return abs(d_j)

    platt = False

    def _platt_threshold(self, i, j, d_i, d_j, E_i, E_j, ai, aj) -> None:
        K, y, C = self.K, self.y, self.C
        # E with the threshold: E_k = y_k G_k + b
        b_i = self.b - (E_i + self.b) - y[i] * d_i * K[i, i] - y[j] * d_j * K[i, j]
        b_j = self.b - (E_j + self.b) - y[i] * d_i * K[i, j] - y[j] * d_j * K[j, j]
        if 0.0 < ai < C:
            self.b = b_i
        elif 0.0 < aj < C:
            self.b = b_j
        else:
            self.b = 0.5 * (b_i + b_j)


def _record(state: _SMOState, i: int, j: int, start: float) -> dict:
    """One trace record: dual, primal, gap and KKT violation after a step."""
    a, y, C = state.alpha, state.y, state.C
    u = y * (state.G + 1.0)  # Σ_j α_j y_j κ(x_j, x_i)
    half_w2 = 0.5 * float((a * y) @ u)
    dual = float(a.sum()) - half_w2
    b = optimal_bias(u, y)
    primal = half_w2 + C * float(np.maximum(0.0, 1.0 - y * (u + b)).sum())
    violation, _, _ = state.violation()
    return {"step": state.n_steps, "i": i, "j": j, "dual": dual, "primal": primal,
            "gap": primal - dual, "kkt_violation": violation,
            "b": bias_from_free_svs(a, y, state.K, C), "time": time.perf_counter() - start}


def _second_order_partner(state: _SMOState, i: int) -> int:
    """libsvm's j for a given i: the largest decrease b_ij²/a_ij over I_low."""
    K, y = state.K, state.y
    _, low = _up_low(state.alpha, y, state.C)
    v = state.minus_yg()
    candidates = low & (v < v[i])
    if not np.any(candidates):
        return -1
    idx = np.flatnonzero(candidates)
    b_ij = v[i] - v[idx]
    a_ij = K[i, i] + K[idx, idx] - 2.0 * K[i, idx]
    a_ij = np.where(a_ij > 0, a_ij, TAU)
    return int(idx[np.argmax(b_ij**2 / a_ij)])


def _run_libsvm_rule(state: _SMOState, pair: str, tol: float, max_iter: int, trace: list,
                     record_every: int, start: float) -> str:
    while state.n_steps < max_iter:
        violation, i, j = state.violation()
        if violation <= tol:
            return "optimal"
        if pair == "second_order":
            j = _second_order_partner(state, i)
        if state.step(i, j) == 0.0:
            return "stalled"
        if state.n_steps % record_every == 0:
            trace.append(_record(state, i, j, start))
    return "max_iter"


def _run_platt(state: _SMOState, tol: float, max_iter: int, trace: list, record_every: int,
               start: float, rng: np.random.Generator) -> str:
    y, C, a = state.y, state.C, state.alpha
    eps = 1e-12  # Platt's progress test (his default 1e-3 is too coarse for 1e-6 duals)

    def free() -> np.ndarray:
        return np.flatnonzero((a > 0) & (a < C))

    def try_step(i: int, j: int) -> bool:
        if state.step(i, j, eps) == 0.0:
            return False
        if state.n_steps % record_every == 0:
            trace.append(_record(state, i, j, start))
        return True

    def examine(j: int) -> bool:
        """Platt's examineExample: j is the point checked against its KKT condition."""
        E = y * state.G + state.b
        r_j = E[j] * y[j]  # y_j f(x_j) − 1
        if not ((r_j < -tol and a[j] < C) or (r_j > tol and a[j] > 0)):
            return False
        candidates = free()
        if len(candidates) > 1:
            i = int(candidates[np.argmax(np.abs(E[candidates] - E[j]))])
            if try_step(i, j):
                return True
        for pool in (free(), np.arange(state.n)):
            for i in np.roll(pool, -int(rng.integers(max(len(pool), 1)))):
                if try_step(int(i), j):
                    return True
        return False

    examine_all = True
    while state.n_steps < max_iter:
        changed = 0
        pool = np.arange(state.n) if examine_all else free()
        for j in pool:
            changed += examine(int(j))
            if state.n_steps >= max_iter:
                return "max_iter"
        if examine_all:
            if changed == 0:
                return "optimal"
            examine_all = False
        elif changed == 0:
            examine_all = True
    return "max_iter"


def smo(X, y, C: float = 1.0, kernel: str | Callable = "linear", *,
        pair: str = "second_order", tol: float = 1e-6, max_iter: int | None = None,
        record_every: int = 1, random_state: int | None = 0, **kernel_params) -> BinarySVM:
    """Train a soft-margin SVM by SMO and trace every step (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Two labels (coded ±1).
    C : float, default=1.0
    kernel : str or callable, default='linear'
        A lecture kernel (:mod:`msvm.teaching.kernels`).
    pair : {'platt', 'max_violating', 'second_order'}, default='second_order'
        How the pair of multipliers is chosen.
    tol : float, default=1e-6
        Stop when the largest KKT violation m − M is ≤ ``tol`` (``'platt'``:
        the tolerance of its per-point KKT check).
    max_iter : int, optional
        Cap on the number of steps (default 1000·n).
    record_every : int, default=1
        Keep one trace record every ``record_every`` steps.
    random_state : int or None, default=0
        Random start positions of Platt's fallback loops.
    **kernel_params
        The kernel's parameters.

    Returns
    -------
    BinarySVM
        ``method`` is ``'SMO (<pair>)'``; ``trace`` holds, per recorded
        step, ``step``, ``i``, ``j``, ``dual``, ``primal``, ``gap``,
        ``kkt_violation``, ``b`` and ``time``; ``status`` is ``'optimal'``,
        ``'max_iter'`` or ``'stalled'``; ``info`` has the final
        ``kkt_violation`` and, for ``'platt'``, Platt's threshold
        ``b_platt``.

    Examples
    --------
    >>> from msvm.teaching import overlapping_set, smo, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = smo(X, y, C=1.0, pair="second_order", tol=1e-6)
    >>> svm.status, svm.method
    ('optimal', 'SMO (second_order)')
    >>> sorted(svm.trace[-1])
    ['b', 'dual', 'gap', 'i', 'j', 'kkt_violation', 'primal', 'step', 'time']
    >>> exact = soft_margin_svm(X, y, C=1.0).certificate()["dual"]
    >>> abs(svm.certificate()["dual"] - exact) < 1e-6
    True
    """
    if pair not in PAIR_RULES:
        raise ValueError(f"pair must be one of {PAIR_RULES}, got {pair!r}.")
    C = check_C(C)
    if not tol >= 0:   # also NaN, which ran until 'stalled'
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    if max_iter is not None:
        _check_count("max_iter", max_iter, 0)
    _check_count("record_every", record_every, 1)   # 0: a ZeroDivisionError in the loop
    start = time.perf_counter()
    X, y, _ = binary_data(X, y)
    f = make_kernel(kernel, **kernel_params)
    K = kernel_matrix(X, X, f)
    state = _SMOState(K, y, float(C))
    max_iter = 1000 * len(y) if max_iter is None else int(max_iter)
    trace: list[dict] = []
    if pair == "platt":
        state.platt = True
        status = _run_platt(state, tol, max_iter, trace, record_every, start,
                            np.random.default_rng(random_state))
    else:
        status = _run_libsvm_rule(state, pair, tol, max_iter, trace, record_every, start)
    violation, _, _ = state.violation()
    alpha = state.alpha.copy()
    return BinarySVM(alpha=alpha, b=bias_from_free_svs(alpha, y, K, float(C)), X=X, y=y,
                     C=float(C), kernel=f,
                     kernel_name=kernel if isinstance(kernel, str) else "callable",
                     method=f"SMO ({pair})", n_iter=state.n_steps,
                     time=time.perf_counter() - start, status=status, trace=trace,
                     info={"kkt_violation": violation, "pair": pair,
                           **({"b_platt": state.b} if pair == "platt" else {})})
