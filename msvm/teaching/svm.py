r"""Hard- and soft-margin binary SVMs, solved exactly, with the lecture's quantities.

The lecture's soft-margin problem and its dual::

    primal   min_{w,b,ξ} ½‖w‖² + C Σ_i ξ_i   s.t.  y_i(wᵀφ(x_i) + b) ≥ 1 − ξ_i,  ξ_i ≥ 0
    dual     max_α  D(α) = Σ_i α_i − ½ Σ_ij α_i y_i κ(x_i, x_j) y_j α_j
             s.t.   0 ≤ α_i ≤ C,  Σ_i y_i α_i = 0

with w = Σ_i α_i y_i φ(x_i) and ξ_i = max(0, 1 − y_i f(x_i)) (the hinge
loss).  The hard-margin SVM is C = ∞.  Weak duality P(w, b, ξ) ≥ D(α) holds
for any feasible pair, so the *duality gap* P − D bounds how far either is
from the optimum: it is the certificate every solver in this package
reports.

Exact solutions come from msvm's reference QP solver
(:mod:`msvm.solvers.reference_cvxpy`: Clarabel, an interior-point method, then
an active-set polish).  The binary problem is the two-class row ``mmr`` of the
unified table (:mod:`msvm.machines`) with a bias: with Q = 2 its scores are
h₂ = −h₁ = f, its objective is ½(‖w₁‖² + ‖w₂‖²) + C' Σ ξ = ‖w‖² + C' Σ ξ, i.e.
twice the lecture's at C = C'/2, and its dual variable is 2α.  So the
lecture's SVM at C is that row at C' = 2C, α = α'/2 (``tests/test_teaching.py``
checks the result against :class:`sklearn.svm.SVC`).

The hard-margin solution is the soft-margin one for any C ≥ max_i α*_i: the
two problems have the same KKT conditions when no α_i reaches C.
:func:`hard_margin_svm` therefore solves with a large C and checks that no
multiplier is at the bound; if one is, C is raised, and after the last try
the set is declared not separable (in the kernel's feature space).

The three kinds of points (the lecture's KKT slide), at an optimum:

=================  ==================  ===================================
α_i                y_i f(x_i)          the point
=================  ==================  ===================================
α_i = 0            ≥ 1                 outside the margin, not used in w
0 < α_i < C        = 1                 on the margin: a *free* support vector
α_i = C            ≤ 1                 inside the margin or misclassified:
                                       a *bound* support vector, ξ_i = 1 − y_i f(x_i)
=================  ==================  ===================================

b comes from the free support vectors, b = y_i − Σ_j α_j y_j κ(x_j, x_i)
(:func:`bias_from_free_svs` averages it over all of them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from msvm._numbers import is_real
from msvm.teaching.kernels import kernel_matrix, make_kernel

__all__ = [
    "BinarySVM",
    "KKT_KINDS",
    "as_signed_labels",
    "binary_data",
    "bias_from_free_svs",
    "check_C",
    "dual_objective",
    "hard_margin_svm",
    "hinge_loss",
    "kkt_classification",
    "kkt_violation",
    "optimal_bias",
    "primal_objective",
    "soft_margin_svm",
]

#: The kinds of :func:`kkt_classification`, in the lecture's order.
KKT_KINDS = ("non_sv", "free_sv", "bound_sv")


def as_signed_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """Labels as ±1 (the larger label is +1, as in scikit-learn) and the two labels.

    Parameters
    ----------
    y : array-like of shape (n,)
        Exactly two distinct labels.

    Returns
    -------
    y_signed : ndarray of shape (n,)
    classes : ndarray of shape (2,)
        The labels coded −1 and +1, in that order.
    """
    y = np.asarray(y)
    if y.dtype.kind in "fc" and np.any(np.isnan(y)):   # NaN != NaN: each would be a label
        raise ValueError("y contains NaN.")
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(f"A binary SVM needs exactly two labels, got {len(classes)}.")
    return np.where(y == classes[1], 1.0, -1.0), classes


def binary_data(X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary training set, checked: X finite (n, d) floats and n labels of two classes.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Exactly two distinct labels.

    Returns
    -------
    X : ndarray of shape (n, d), float64
    y_signed : ndarray of shape (n,)
        The labels coded ±1 (:func:`as_signed_labels`).
    classes : ndarray of shape (2,)

    Raises
    ------
    ValueError
        Naming what is wrong: X not 2-D or empty, NaN or infinite values,
        a y of another length, NaN labels, not two labels.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array (n_samples, n_features), got shape "
                         f"{X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values.")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have one label per row of X, shape ({X.shape[0]},); got shape "
                         f"{y.shape}.")
    y_signed, classes = as_signed_labels(y)
    return X, y_signed, classes


def check_C(C, name: str = "C") -> float:
    """``C`` as a float, or a ValueError unless it is a finite number > 0.

    C = ∞ is the hard margin, which :func:`hard_margin_svm` solves; the
    soft-margin solvers refuse it rather than fail inside the QP solver.
    """
    if not is_real(C) or not 0 < C < np.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {C!r}"
                         + (" (for C = inf use hard_margin_svm)." if C == np.inf else "."))
    return float(C)


def hinge_loss(s, y) -> np.ndarray:
    """HingeLoss(s, y) = max(0, 1 − y·s) (the lecture's ξ).

    Parameters
    ----------
    s : array-like
        Scores f(x) = wᵀx + b.
    y : array-like
        Labels ±1.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.teaching import hinge_loss
    >>> hinge_loss(np.array([2.0, 0.5, -1.0]), np.array([1, 1, 1]))
    array([0. , 0.5, 2. ])
    """
    return np.maximum(0.0, 1.0 - np.asarray(y) * np.asarray(s))


def dual_objective(alpha: np.ndarray, y: np.ndarray, K: np.ndarray) -> float:
    """D(α) = Σ_i α_i − ½ Σ_ij α_i y_i K_ij y_j α_j.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
    y : ndarray of shape (n,)
        Labels ±1.
    K : ndarray of shape (n, n)
        Gram matrix.

    Returns
    -------
    float

    Examples
    --------
    >>> from msvm.teaching import dual_objective, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> round(dual_objective(svm.alpha, svm.y, svm.gram()), 2)
    17.06
    """
    ay = alpha * y
    return float(alpha.sum() - 0.5 * ay @ K @ ay)


def primal_objective(alpha: np.ndarray, b: float, y: np.ndarray, K: np.ndarray,
                     C: float) -> float:
    """P = ½‖w‖² + C Σ_i max(0, 1 − y_i f(x_i)) for w = Σ α_i y_i φ(x_i) and b.

    For C = ∞ (hard margin) the value is ½‖w‖² when every y_i f(x_i) ≥ 1
    (to rounding) and +∞ otherwise.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
    b : float
    y : ndarray of shape (n,)
    K : ndarray of shape (n, n)
    C : float

    Returns
    -------
    float

    Examples
    --------
    >>> from msvm.teaching import primal_objective, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> round(primal_objective(svm.alpha, svm.b, svm.y, svm.gram(), C=1.0), 2)
    17.06
    """
    ay = alpha * y
    u = K @ ay
    half_w2 = 0.5 * float(ay @ u)
    xi = hinge_loss(u + b, y)
    if np.isinf(C):
        return half_w2 if xi.max(initial=0.0) <= 1e-9 else np.inf
    return half_w2 + C * float(xi.sum())


def optimal_bias(u: np.ndarray, y: np.ndarray) -> float:
    """The b that minimises Σ_i max(0, 1 − y_i(u_i + b)) for fixed scores u.

    The sum is convex and piecewise linear in b; its slope at b is the number
    of negative points with −1 − u_i < b minus the number of positive points
    with 1 − u_i > b.  The minimum is at the first breakpoint where the slope
    becomes ≥ 0 (found by sorting, O(n log n)).

    Parameters
    ----------
    u : ndarray of shape (n,)
        Σ_j α_j y_j κ(x_j, x_i), the scores without b.
    y : ndarray of shape (n,)
        Labels ±1.

    Returns
    -------
    float
    """
    pos = np.sort(1.0 - u[y > 0])  # positive point i is penalised while b < 1 − u_i
    neg = np.sort(-1.0 - u[y < 0])  # negative point i is penalised while b > −1 − u_i
    candidates = np.sort(np.concatenate([pos, neg]))
    # slope just right of each candidate
    slope = np.searchsorted(neg, candidates, side="right") - (
        len(pos) - np.searchsorted(pos, candidates, side="right"))
    k = int(np.argmax(slope >= 0)) if np.any(slope >= 0) else len(candidates) - 1
    return float(candidates[k])


def bias_bounds(alpha: np.ndarray, y: np.ndarray, K: np.ndarray, C: float,
                tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """The b at which each point's KKT condition is tight, and which of them bound b below.

    y_i(u_i + b) ≥ 1 at α_i = 0 and ≤ 1 at α_i = C, with u_i = Σ_j α_j y_j κ(x_j, x_i):
    each is b ≥ or b ≤ y_i − u_i (= for a free support vector).

    Parameters
    ----------
    alpha, y, K, C, tol
        As in :func:`bias_from_free_svs`.

    Returns
    -------
    bounds : ndarray of shape (n,)
        y_i − u_i.
    lower : ndarray of bool, shape (n,)
        Whether point i's bound is a lower bound (else an upper one).

    Examples
    --------
    At the optimum, b lies between the largest lower bound and the smallest
    upper one, and equals the bound of every free support vector (whose KKT
    condition is an equality):

    >>> from msvm.teaching import bias_bounds, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> bounds, lower = bias_bounds(svm.alpha, svm.y, svm.gram(), C=1.0)
    >>> bool(bounds[lower].max() - 1e-9 <= svm.b <= bounds[~lower].min() + 1e-9)
    True
    >>> free = svm.kkt_kinds() == "free_sv"
    >>> bounds[free].round(4).tolist(), round(svm.b, 4)
    ([-0.3135, -0.3135, -0.3135], -0.3135)
    """
    u = K @ (alpha * y)
    scale = C if np.isfinite(C) else max(1.0, float(alpha.max(initial=0.0)))
    at_zero = alpha <= tol * scale
    return y - u, (at_zero & (y > 0)) | (~at_zero & (y < 0))


def bias_from_free_svs(alpha: np.ndarray, y: np.ndarray, K: np.ndarray, C: float,
                       tol: float = 1e-8) -> float:
    """b = y_i − Σ_j α_j y_j κ(x_j, x_i), averaged over the free support vectors.

    The lecture's formula holds for any point with 0 < α_i < C; averaging
    over all of them (as libsvm does) spreads the rounding.  Without a free
    support vector the KKT conditions only bound b to an interval
    [max lower, min upper] (from the points at 0 and at C); its midpoint is
    returned, again as libsvm does.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
    y : ndarray of shape (n,)
    K : ndarray of shape (n, n)
    C : float
        ``np.inf`` for the hard margin.
    tol : float, default=1e-8
        α_i ≤ tol·scale counts as 0 and α_i ≥ C − tol·scale as C, with
        scale = C (or max α for the hard margin).

    Returns
    -------
    float

    Examples
    --------
    >>> from msvm.teaching import bias_from_free_svs, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> round(bias_from_free_svs(svm.alpha, svm.y, svm.gram(), C=1.0), 6) == round(svm.b, 6)
    True
    """
    r, lower_set = bias_bounds(alpha, y, K, C, tol)
    scale = C if np.isfinite(C) else max(1.0, float(alpha.max(initial=0.0)))
    free = (alpha > tol * scale) & (alpha < C - tol * scale)
    if np.any(free):
        return float(np.mean(r[free]))
    lower = r[lower_set].max(initial=-np.inf)
    upper = r[~lower_set].min(initial=np.inf)
    if np.isfinite(lower) and np.isfinite(upper):
        return float(0.5 * (lower + upper))
    return float(lower if np.isfinite(lower) else upper if np.isfinite(upper) else 0.0)


def kkt_classification(alpha: np.ndarray, C: float, tol: float = 1e-8) -> np.ndarray:
    """The kind of every point by its multiplier: ``non_sv``, ``free_sv`` or ``bound_sv``.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
    C : float
        ``np.inf`` for the hard margin (no point is then a bound SV).
    tol : float, default=1e-8
        Relative tolerance of "α = 0" and "α = C" (see :func:`bias_from_free_svs`).

    Returns
    -------
    ndarray of str, shape (n,)
        One of :data:`KKT_KINDS` per point.  At an optimum, :func:`kkt_violation`
        checks that each kind has the margin the lecture's table gives it.

    Examples
    --------
    >>> from msvm.teaching import kkt_classification, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> kkt_classification(svm.alpha, C=1.0)[:4].tolist()
    ['non_sv', 'free_sv', 'bound_sv', 'bound_sv']
    """
    scale = C if np.isfinite(C) else max(1.0, float(alpha.max(initial=0.0)))
    kinds = np.full(alpha.shape, "free_sv", dtype=object)
    kinds[alpha <= tol * scale] = "non_sv"
    if np.isfinite(C):
        kinds[alpha >= C - tol * scale] = "bound_sv"
    return kinds.astype(str)


def kkt_violation(alpha: np.ndarray, y: np.ndarray, K: np.ndarray, C: float,
                  per_point: bool = False):
    """The largest violation of the lecture's KKT conditions, free of b.

    With G_i = y_i u_i − 1 the gradient of the minimised dual and
    I_up = {i: α_i < C, y_i = 1 or α_i > 0, y_i = −1},
    I_low = {i: α_i < C, y_i = −1 or α_i > 0, y_i = 1}, the KKT conditions
    hold for some b exactly when m(α) = max_{I_up} −y_i G_i ≤
    M(α) = min_{I_low} −y_i G_i (Keerthi et al. 2001; libsvm's stopping
    rule), and any b in [m, M] satisfies them.  The violation is m − M (≤ 0
    at an optimum, reported as max(0, m − M)).

    Parameters
    ----------
    alpha : ndarray of shape (n,)
    y : ndarray of shape (n,)
    K : ndarray of shape (n, n)
    C : float
    per_point : bool, default=False
        Also return each point's own violation against the best b (the
        midpoint of m and M): how far y_i f(x_i) is on the wrong side of 1
        for its kind.

    Returns
    -------
    float, or (float, ndarray of shape (n,))

    Examples
    --------
    >>> from msvm.teaching import kkt_violation, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> kkt_violation(svm.alpha, svm.y, svm.gram(), C=1.0) < 1e-8
    True
    """
    u = K @ (alpha * y)
    minus_yg = -y * (y * u - 1.0)  # −y_i G_i = y_i − u_i
    up, low = _up_low(alpha, y, C)
    m_up = minus_yg[up].max(initial=-np.inf)
    m_low = minus_yg[low].min(initial=np.inf)
    violation = float(max(0.0, m_up - m_low)) if np.isfinite(m_up - m_low) else 0.0
    if not per_point:
        return violation
    b = 0.5 * (m_up + m_low) if np.isfinite(m_up + m_low) else bias_from_free_svs(alpha, y, K, C)
    s = y * (u + b)
    kinds = kkt_classification(alpha, C)
    per = np.where(kinds == "non_sv", np.maximum(0.0, 1.0 - s),
                   np.where(kinds == "bound_sv", np.maximum(0.0, s - 1.0), np.abs(s - 1.0)))
    return violation, per


def _up_low(alpha: np.ndarray, y: np.ndarray, C: float,
            tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """The index sets I_up and I_low of :func:`kkt_violation` as boolean masks.

    α_i within ``tol``·C of a bound counts as at that bound (a QP solver's
    answer is exact only to its precision).
    """
    scale = C if np.isfinite(C) else max(1.0, float(alpha.max(initial=0.0)))
    below_c = alpha < C - tol * scale
    above_0 = alpha > tol * scale
    up = (below_c & (y > 0)) | (above_0 & (y < 0))
    low = (below_c & (y < 0)) | (above_0 & (y > 0))
    return up, low


@dataclass
class BinarySVM:
    """A binary SVM f(x) = Σ_i α_i y_i κ(x_i, x) + b, and how it was found.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        Dual variables.
    b : float
        Bias.
    X : ndarray of shape (n, d)
        Training points.
    y : ndarray of shape (n,)
        Training labels ±1.
    C : float
        ``np.inf`` for a hard margin.
    kernel : callable
        κ as a function f(X, Y) (:func:`msvm.teaching.kernels.make_kernel`).
    kernel_name : str
        ``'linear'`` when w is finite-dimensional and available as :attr:`w`.
    method : str
        Which algorithm produced it.
    n_iter : int
        Its iterations (its own notion: QP iterations, SMO steps, ...).
    time : float
        Seconds.
    status : str
        ``'optimal'``, ``'max_iter'``, ...
    trace : list of dict
        Per-iteration records (empty for the reference QP).
    info : dict
        Extras (e.g. the reference solver's own status).

    Examples
    --------
    What :func:`soft_margin_svm`, :func:`hard_margin_svm` and :func:`smo`
    return:

    >>> from msvm.teaching import BinarySVM, overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> isinstance(svm, BinarySVM), svm.method
    (True, 'reference QP')
    >>> svm.predict(X[:4])
    array([ 1., -1.,  1.,  1.])
    >>> sorted(svm.certificate())
    ['dual', 'gap', 'kkt_violation', 'primal', 'relative_gap']
    """

    alpha: np.ndarray
    b: float
    X: np.ndarray
    y: np.ndarray
    C: float
    kernel: Callable[..., np.ndarray]
    kernel_name: str
    method: str
    n_iter: int = 0
    time: float = 0.0
    status: str = "optimal"
    trace: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def gram(self) -> np.ndarray:
        """The training Gram matrix K_ij = κ(x_i, x_j)."""
        return np.asarray(self.kernel(self.X, self.X), dtype=np.float64)

    @property
    def w(self) -> np.ndarray:
        """w = Σ_i α_i y_i x_i (linear kernel only)."""
        if self.kernel_name != "linear":
            raise AttributeError("w is only available for the linear kernel; use "
                                 "decision_function.")
        return (self.alpha * self.y) @ self.X

    @property
    def norm_w(self) -> float:
        """‖w‖ = sqrt(Σ_ij α_i y_i K_ij y_j α_j), in the kernel's feature space."""
        ay = self.alpha * self.y
        return float(np.sqrt(max(ay @ self.gram() @ ay, 0.0)))

    @property
    def margin(self) -> float:
        """The geometric margin 1/‖w‖ (distance from f = 0 to f = ±1)."""
        return 1.0 / self.norm_w if self.norm_w > 0 else np.inf

    def decision_function(self, X) -> np.ndarray:
        """f(x) = Σ_i α_i y_i κ(x_i, x) + b for each row of ``X``."""
        support = self.alpha > 0
        if not np.any(support):
            return np.full(np.atleast_2d(X).shape[0], self.b)
        K = np.asarray(self.kernel(np.atleast_2d(X), self.X[support]), dtype=np.float64)
        return K @ (self.alpha[support] * self.y[support]) + self.b

    def predict(self, X) -> np.ndarray:
        """±1: the sign of f (f = 0 counts as +1, as in the lecture)."""
        return np.where(self.decision_function(X) >= 0, 1.0, -1.0)

    def slacks(self) -> np.ndarray:
        """ξ_i = max(0, 1 − y_i f(x_i)) on the training points."""
        return hinge_loss(self.decision_function(self.X), self.y)

    def kkt_kinds(self, tol: float = 1e-8) -> np.ndarray:
        """:func:`kkt_classification` of the training points."""
        return kkt_classification(self.alpha, self.C, tol)

    def certificate(self) -> dict:
        """Dual, primal (at the optimal b for this α), gap and KKT violation.

        Returns
        -------
        dict
            ``dual``, ``primal``, ``gap`` (primal − dual ≥ 0),
            ``relative_gap`` and ``kkt_violation`` (:func:`kkt_violation`).
        """
        K = self.gram()
        dual = dual_objective(self.alpha, self.y, K)
        if np.isfinite(self.C):
            b = optimal_bias(K @ (self.alpha * self.y), self.y)
            primal = min(primal_objective(self.alpha, b, self.y, K, self.C),
                         primal_objective(self.alpha, self.b, self.y, K, self.C))
        else:
            primal = primal_objective(self.alpha, self.b, self.y, K, self.C)
        gap = primal - dual
        return {"dual": dual, "primal": primal, "gap": gap,
                "relative_gap": gap / max(abs(primal), abs(dual), 1e-300),
                "kkt_violation": kkt_violation(self.alpha, self.y, K, self.C)}


def _reference_qp(K: np.ndarray, y: np.ndarray, C: float):
    """α and b of the lecture's SVM at C through msvm's reference QP (module docstring)."""
    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem
    from msvm.solvers import get_solver

    classes = (y > 0).astype(np.intp)  # −1 → class 0, +1 → class 1 (h₂ = f)
    problem = DualProblem(make_machine("mmr", 2), classes, Kernel(K, "precomputed"), 2.0 * C,
                          True)
    try:
        solution = get_solver("cvxpy").solve(problem)
    except ValueError as exc:
        if "positive semidefinite" not in str(exc):
            raise
        # The solver's own advice names MultiClassSVC's solvers; here SMO is the one.
        raise ValueError(f"{str(exc).split('. Use ')[0]}: the dual is then not concave. "
                         "msvm.teaching.smo finds a KKT point of it (not necessarily its "
                         "maximum).") from exc
    if solution.status == "failed":
        raise RuntimeError(f"The reference QP solver failed at C = {C:g}: "
                           f"{solution.info.get('error', '')}")
    return 0.5 * solution.alpha[:, 0], solution


def soft_margin_svm(X, y, C: float = 1.0, kernel: str | Callable = "linear",
                    **kernel_params) -> BinarySVM:
    """The soft-margin SVM solved exactly by msvm's reference QP solver.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Two labels (coded ±1, see :func:`as_signed_labels`).
    C : float, default=1.0
    kernel : str or callable, default='linear'
        A lecture kernel (:mod:`msvm.teaching.kernels`).
    **kernel_params
        Its parameters.

    Returns
    -------
    BinarySVM
        b from the free support vectors (:func:`bias_from_free_svs`).

    Raises
    ------
    ValueError
        If C is not a finite number > 0 (C = ∞ is :func:`hard_margin_svm`),
        the data are bad (:func:`binary_data`), or the
        Gram matrix is not positive semi-definite (the tanh kernel, in
        general): the reference solver solves convex QPs only and refuses
        an indefinite kernel rather than answer another problem.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.teaching import overlapping_set, soft_margin_svm
    >>> X, y = overlapping_set(40, random_state=0)
    >>> svm = soft_margin_svm(X, y, C=1.0)
    >>> svm.status
    'optimal'
    >>> kinds, counts = np.unique(svm.kkt_kinds(), return_counts=True)
    >>> dict(zip(kinds.tolist(), counts.tolist()))
    {'bound_sv': 16, 'free_sv': 3, 'non_sv': 21}
    >>> certificate = svm.certificate()
    >>> round(certificate["dual"], 2), round(certificate["primal"], 2)
    (17.06, 17.06)
    """
    C = check_C(C)
    X, y, _ = binary_data(X, y)
    f = make_kernel(kernel, **kernel_params)
    K = kernel_matrix(X, X, f)
    start = time.perf_counter()
    alpha, solution = _reference_qp(K, y, float(C))
    b = bias_from_free_svs(alpha, y, K, C)
    return BinarySVM(alpha=alpha, b=b, X=X, y=y, C=float(C), kernel=f,
                     kernel_name=kernel if isinstance(kernel, str) else "callable",
                     method="reference QP", n_iter=solution.n_iter,
                     time=time.perf_counter() - start, status=solution.status,
                     info={"solver": solution.solver})


def hard_margin_svm(X, y, kernel: str | Callable = "linear", *, C_start: float = 1e3,
                    C_max: float = 1e7, **kernel_params) -> BinarySVM:
    """The hard-margin SVM (C = ∞), solved exactly; raises if the set is not separable.

    Solves the soft-margin problem at C = ``C_start``, ``100·C_start``, ...
    up to ``C_max`` and returns the first solution with every α_i < C, which
    is the hard-margin solution (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    kernel : str or callable, default='linear'
    C_start, C_max : float
        The range of C tried, 0 < ``C_start`` ≤ ``C_max`` < ∞.
    **kernel_params
        The kernel's parameters.

    Returns
    -------
    BinarySVM
        With ``C = np.inf``.

    Raises
    ------
    ValueError
        If some α_i still reaches C at ``C_max``: the points are not
        separable in the kernel's feature space (or only with a margin
        below about 1/sqrt(C_max)); or if ``C_start``, ``C_max`` are not
        as above.

    Examples
    --------
    The AND gate: the maximum-margin line is 2x₁ + 2x₂ − 3 = 0, at distance
    1/‖w‖ = 1/√8 from the closest corners.

    >>> from msvm.teaching import hard_margin_svm, logic_gate
    >>> X, y = logic_gate("and")
    >>> svm = hard_margin_svm(X, y)
    >>> svm.w.round(6), round(svm.b, 6), round(svm.margin, 4)
    (array([2., 2.]), -3.0, 0.3536)
    >>> svm.alpha.round(6)
    array([0., 2., 2., 4.])
    """
    # C_start > C_max tried nothing and declared AND not separable; C_max = inf ran
    # until C overflowed.
    C_start, C_max = check_C(C_start, "C_start"), check_C(C_max, "C_max")
    if C_start > C_max:
        raise ValueError(f"C_start must be <= C_max, got {C_start!r} > {C_max!r}.")
    X, y, _ = binary_data(X, y)
    f = make_kernel(kernel, **kernel_params)
    K = kernel_matrix(X, X, f)
    start = time.perf_counter()
    C = float(C_start)
    while C <= C_max:
        alpha, solution = _reference_qp(K, y, C)
        if alpha.max() < C * (1.0 - 1e-6):
            alpha = np.where(alpha > 1e-10 * alpha.max(), alpha, 0.0)
            b = bias_from_free_svs(alpha, y, K, np.inf)
            return BinarySVM(alpha=alpha, b=b, X=X, y=y, C=np.inf, kernel=f,
                             kernel_name=kernel if isinstance(kernel, str) else "callable",
                             method="reference QP (hard margin)", n_iter=solution.n_iter,
                             time=time.perf_counter() - start, status=solution.status,
                             info={"solver": solution.solver, "C_used": C})
        C *= 100.0
    raise ValueError("The points are not separable by the kernel's hyperplanes: a multiplier "
                     f"reaches C = {C / 100.0:g}; use soft_margin_svm.")
