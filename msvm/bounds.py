r"""Smallest enclosing ball and the multi-class radius–margin bound of the M-SVM².

This module computes, from one trained M-SVM², an upper bound on the number
of errors of its leave-one-out (LOO) procedure (seed 001, §4), without
retraining.  The seed's text is OCR-damaged in its constants, so the bound
is re-derived here from the proof; the derivation also tightens the seed's
constant by a factor 4, which is what makes the two-class case reduce
exactly to Vapnik's bound.

Setting
-------
The M-SVM² is the hard-margin Lee–Lin–Wahba machine on the kernel
κ'(x_i, x_j) = k(x_i, x_j) + δ_ij/(2C) (seed 001, Problem 5; see
:mod:`msvm.machines`).  In this module κ is that kernel, Φ its feature map,
and, in the minimisation form of :mod:`msvm.problem`,

    J(α) = ½ αᵀHα − γᵀα,   H_{ik,jl} = (δ_kl − 1/Q) κ(x_i, x_j),   γ = 1/(Q−1),

α_ik ≥ 0 for k ≠ y_i (α_{i y_i} = 0), and with a bias the equality
constraints Σ_i α_ik = Σ_i ᾱ_i (one per class: every class column of α has
the same sum), where ᾱ_i = (1/Q) Σ_l α_il.  The scores are
h_k(x) = ⟨w_k, Φ(x)⟩ + b_k, w_k = Σ_i (ᾱ_i − α_ik) Φ(x_i), and
αᵀHα = Σ_k ‖w_k‖² (H = (I − 11ᵀ/Q) ⊗ K and I − 11ᵀ/Q is a projector).
The LOO prediction at a training point x_p uses κ(x_i, x_p) = k(x_i, x_p)
for i ≠ p, so the LOO error of the hard-margin machine on κ is the LOO error
of the M-SVM².

Proposition 3 (no primal norms needed)
    The KKT conditions α_ik (h_k(x_i) + 1/(Q−1)) = 0 summed over (i, k) give
    Σ_ik α_ik ⟨w_k, Φ(x_i)⟩ + Σ_k b_k Σ_i α_ik + 1ᵀα/(Q−1) = 0.  The first
    sum is −αᵀHα; the second vanishes (Σ_k b_k = 0 and equal column sums with
    a bias, b = 0 without).  Hence, at the optimum,

        Σ_k ‖w_k‖² = αᵀHα = 1ᵀα / (Q−1),   and the dual value is 1ᵀα / (2(Q−1)).

Key lemma, with a bias (seed 001, Lemma 2, re-derived)
    Let α⁰ be optimal on the m points and α^p optimal without point p, and
    suppose the machine trained without p misclassifies x_p: some n ≠ y_p has
    h^p_n(x_p) = max_k h^p_k(x_p) ≥ 0 (the scores sum to zero; ties count as
    errors).  For any λ with λ_p = α⁰_p, 0 ≤ λ_i ≤ α⁰_i (i ≠ p) and equal
    column sums, α⁰ − λ is feasible without p, and for any μ ≥ 0 with μ_{i y_i}
    = 0 and equal column sums, α^p + Kμ is feasible with p.  Optimality of
    both gives J(α⁰ − λ) − J(α⁰) ≥ J(α^p) − J(α⁰) ≥ J(α^p) − J(α^p + Kμ), i.e.

        ½ λᵀHλ + (Hα⁰ − γ)ᵀ(−λ) ≥ K (−Hα^p + γ)ᵀμ − ½ K² μᵀHμ.

    (−Hα + γ)_ik = h_k(x_i) − b_k + 1/(Q−1): on the left it is ≤ 0 on the
    support of λ (primal feasibility; the b_k sum to zero against equal column
    sums), so the left side is ≤ ½ λᵀHλ.  On the right take μ_pn = 1 and, for
    every k ≠ n, μ_{Z(k) k} = 1 with α^p_{Z(k) k} > 0 (such a point exists,
    else the equal column sums would make α^p = 0): the KKT conditions of α^p
    make those terms zero, so the right side is ≥ K/(Q−1) − ½ K² μᵀHμ, whose
    maximum over K is 1 / (2 (Q−1)² μᵀHμ).  Therefore

        (Q−1)² (λᵀHλ)(μᵀHμ) ≥ 1.

    For a vector η ≥ 0 with equal column sums σ(η), c_k = Σ_i η_ik Φ(x_i)/σ
    is a convex combination of the points, hence inside any ball B(c, R)
    that encloses them, and ηᵀHη = σ² Σ_k ‖c_k − c̄‖² ≤ σ² Σ_k ‖c_k − c‖²
    ≤ Q R² σ² (the mean c̄ minimises the sum of squared distances).  The seed
    bounds each ‖c̄ − c_k‖ by the diameter D = 2R instead, a factor 4 looser.
    σ(μ) = 1, and the smallest σ(λ) is max_k α⁰_pk (the column sums of α⁰
    leave room for it), so (Q−1)² Q² R⁴ (max_k α⁰_pk)² ≥ 1:

        LOO error at p   ⇒   max_k α⁰_pk ≥ 1 / (Q (Q−1) R²).

Theorem 2 (with a bias)
    Summing the lemma over the LOO errors, L_m ≤ Q(Q−1)R² Σ_p max_k α⁰_pk, so

        L_m ≤ Q (Q−1) R² 1ᵀα⁰ = Q (Q−1)² R² Σ_k ‖w_k‖²,

    R the radius of the smallest ball enclosing {Φ(x_i)} for κ.  The seed's
    constant is Q(Q−1) D² = 4 Q(Q−1) R²; its authors conjectured a better
    factor.  For Q = 2 (h_2 = −h_1 = f, the 2-norm SVM with w_2 = w_b and
    Σ_k ‖w_k‖² = 2‖w_b‖²) the bound is 4 R² ‖w_b‖² = D² / γ², Vapnik's bound
    (Chapelle et al.'s 4R²‖w‖²); the seed's printed constant gives 4 D²/γ².

Without a bias (the machine msvm's decomposition solvers train)
    There are no equality constraints, so λ = α⁰_p on row p alone and μ = e_pn
    are admissible, λᵀHλ = κ_pp Σ_k (α⁰_pk − ᾱ⁰_p)² and μᵀHμ = (1 − 1/Q) κ_pp.
    The same argument gives

        LOO error at p   ⇒   Σ_k (α⁰_pk − ᾱ⁰_p)² ≥ Q / ((Q−1)³ κ_pp²),

    and since Σ_k (a_k − ā)² ≤ (1 − 1/Q)(Σ_k a_k)² for a ≥ 0,
    Σ_k α⁰_pk ≥ Q / ((Q−1)² κ_pp), hence

        L_m ≤ ((Q−1)² / Q) R₀² 1ᵀα⁰,    R₀² = max_i κ(x_i, x_i),

    the radius of the smallest ball *centred at the origin*: a machine
    without a bias is not translation invariant in feature space, so the
    smallest enclosing ball does not apply.  For Q = 2 this is R₀²‖w_b‖², the
    bias-free binary bound (α_p κ_pp ≥ 1 at every LOO error, Jaakkola and
    Haussler).  With an RBF kernel R₀² = 1 + 1/(2C).

Both lemmas also give a sharper count: L_m is at most the number of points
that satisfy the lemma's necessary condition (``n_candidates``).

Weights
    With example weights wᵢ > 0 (``sample_weight`` times ``class_weight``,
    :mod:`msvm.problem`) the M-SVM² is the hard-margin machine on
    κ(x_i, x_j) = k(x_i, x_j) + δ_ij/(2C wᵢ): each point still has a private
    dimension, of squared length 1/(2C wᵢ), and nothing above uses that the
    shifts are equal.  The LOO prediction at x_p still reads k(x_i, x_p)
    (the private coordinate of p is orthogonal to every other point), the
    KKT conditions of the hard-margin machine give Proposition 3, and both
    lemmas hold with κ_pp = k_pp + 1/(2C w_p) and the ball of these points;
    so the bounds apply unchanged to the weighted machine (the LOO errors
    are counted, not weighted).  An example of weight 0 is not a training
    point (its shift would be infinite); the search refuses it.

Smallest enclosing ball
-----------------------
:func:`enclosing_ball` solves max_β Σ_i β_i κ_ii − βᵀKβ over the simplex by
Frank–Wolfe with away steps and exact line search (the loop is
:mod:`msvm._core._ball`; its docstring has the algorithm and bookkeeping).
It returns R² as the *primal* value max_i ‖Φ(x_i) − c‖² of the ball centred
at c = Σ β_i Φ(x_i), an upper bound on the smallest radius within the
duality gap it reports; the bound above only needs *some* enclosing ball, so
using this value keeps the bound valid at any tolerance.  For the M-SVM²
kernel the shift 1/(2C) adds a private dimension per point:
R'² = max_β Σβ_i k_ii − βᵀKβ + (1 − ‖β‖²)/(2C), so R² ≤ R'² ≤ R² + 1/(2C)
(with weights, per-point shifts sᵢ: R'² = max_β Σβ_i (k_ii + sᵢ) − βᵀKβ − Σβ_i² sᵢ).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from msvm._numbers import is_integer, is_real
from msvm._typing import MatrixLike
from msvm.kernels import Kernel, as_points, resolve_gamma
from msvm.problem import DualProblem, DualSolution

__all__ = ["EnclosingBall", "RadiusMarginBound", "enclosing_ball", "radius_margin_bound"]


@dataclass
class EnclosingBall:
    """A ball enclosing the training points in feature space.

    Attributes
    ----------
    radius2 : float
        max_i ‖Φ(x_i) − c‖²: the squared radius of the ball centred at
        c = Σ_i coef_i Φ(x_i), which encloses every point (certified).
    radius2_lower : float
        The dual value f(coef) ≤ the smallest squared radius ≤ ``radius2``.
    coef : ndarray of shape (m,)
        Weights of the centre on the simplex (positive on the core set).
    n_iter : int
        Frank–Wolfe iterations (``n_fw`` forward, ``n_away`` away steps, of
        which ``n_drop`` removed a point from the core set).
    status : str
        ``"optimal"`` when the relative gap reached ``tol``, else ``"max_iter"``.
    time : float
        Seconds spent.
    n_kernel_evaluations : int
        Kernel evaluations of the Gram-row cache.

    See Also
    --------
    enclosing_ball : Computes it.

    Examples
    --------
    Three points in the plane (the linear kernel): the smallest ball has the
    segment between the outer two as a diameter, and they are its core set;
    the third point lies inside and has no weight in the centre.

    >>> import numpy as np
    >>> from msvm import enclosing_ball
    >>> points = np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, 0.5]])
    >>> ball = enclosing_ball(points, kernel="linear")
    >>> ball.radius2, ball.diameter
    (1.0, 2.0)
    >>> ball.core_set, ball.coef
    (array([0, 1]), array([0.5, 0.5, 0. ]))
    >>> (ball.coef @ points).tolist()   # the centre, c = Σ_i coef_i x_i
    [0.0, 0.0]
    >>> ball.gap <= 1e-10 * ball.radius2
    True
    """

    radius2: float
    radius2_lower: float
    coef: np.ndarray
    n_iter: int
    status: str
    time: float = 0.0
    n_kernel_evaluations: int = 0
    n_fw: int = 0
    n_away: int = 0
    n_drop: int = 0

    @property
    def radius(self) -> float:
        return float(np.sqrt(max(self.radius2, 0.0)))

    @property
    def diameter(self) -> float:
        """D = 2R, the diameter of the ball (seed 001's D_m)."""
        return 2.0 * self.radius

    @property
    def gap(self) -> float:
        """Duality gap radius2 − radius2_lower (≥ 0 up to round-off)."""
        return self.radius2 - self.radius2_lower

    @property
    def core_set(self) -> np.ndarray:
        """Indices of the points with positive weight in the centre."""
        return np.flatnonzero(self.coef > 0)


def _as_kernel(X, kernel, gamma, degree, coef0) -> Kernel:
    if isinstance(X, Kernel):
        return X
    if not (isinstance(kernel, str) or callable(kernel)):
        raise TypeError(f"kernel must be a kernel name or a callable, got {kernel!r}.")
    shape = np.shape(X)
    if len(shape) != 2 or shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {shape}.")
    X = as_points(X, dense=kernel == "precomputed")
    # NaN kernel values would give radius 0 and status 'optimal' without a word.
    if not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
        raise ValueError("X contains NaN or infinite values.")
    g = 0.0 if kernel in ("linear", "precomputed") or callable(kernel) else resolve_gamma(gamma, X)
    return Kernel(X, kernel, gamma=g, degree=degree, coef0=coef0)


def enclosing_ball(X: MatrixLike | Kernel, kernel: str | Callable[..., Any] = "rbf", *,
                   gamma: str | float = "scale", degree: int = 3, coef0: float = 0.0,
                   shift: ArrayLike = 0.0, tol: float = 1e-10, max_iter: int | None = None,
                   warm_start: EnclosingBall | ArrayLike | None = None,
                   cache_size: float = 200.0) -> EnclosingBall:
    """Smallest ball enclosing the points in the feature space of a kernel.

    Parameters
    ----------
    X : array-like of shape (m, d), CSR matrix, or :class:`msvm.kernels.Kernel`
        The points (or a kernel already bound to them; then the kernel
        arguments are ignored).
    kernel, gamma, degree, coef0
        As in :class:`msvm.MultiClassSVC`.
    shift : float or array-like of shape (m,), default=0
        Added to the kernel's diagonal (one value for every point, or one per
        point): ``1/(2C)`` gives the ball of the M-SVM²'s kernel
        k + δ_ij/(2C), ``1/(2C w_i)`` that of a weighted M-SVM²
        (``DualProblem.kernel_shift``).
    tol : float, default=1e-10
        Stop when the relative duality gap (R²_primal − R²_dual)/R²_primal
        is at most ``tol``.
    max_iter : int, optional
        Iteration cap (default 100 000 + 100 m).
    warm_start : EnclosingBall or array of shape (m,), optional
        Weights to start from (e.g. the ball of the same points at another C).
    cache_size : float, default=200
        Gram-row cache budget in MB.

    Returns
    -------
    EnclosingBall

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from msvm import enclosing_ball
    >>> X, _ = load_iris(return_X_y=True)
    >>> ball = enclosing_ball(X, kernel="rbf", gamma=0.5)
    >>> ball.status
    'optimal'
    >>> round(ball.radius2, 3), round(ball.radius2_lower, 3)
    (0.833, 0.833)
    >>> int((ball.coef > 0).sum())   # points on the sphere that fix the centre
    18
    """
    from msvm._core._ball import ball_frank_wolfe

    start = time.perf_counter()
    kern = _as_kernel(X, kernel, gamma, degree, coef0)
    m = kern.n_samples
    try:
        shifts = np.ascontiguousarray(np.broadcast_to(np.asarray(shift, dtype=np.float64), (m,)))
    except (TypeError, ValueError):
        shifts = None
    if (shifts is None or isinstance(shift, bool)
            or not np.all(np.isfinite(shifts) & (shifts >= 0))):
        raise ValueError(f"shift must be finite numbers >= 0 (one, or one per point), got "
                         f"{shift!r}.")
    if not is_real(tol) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    if max_iter is None:
        max_iter = 100_000 + 100 * m
    if not is_integer(max_iter) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}.")
    if warm_start is None:
        beta = np.zeros(m)
        beta[0] = 1.0
    else:
        initial = warm_start.coef if isinstance(warm_start, EnclosingBall) else warm_start
        beta = np.maximum(np.array(initial, dtype=np.float64).ravel(), 0.0)
        if beta.shape != (m,) or not beta.sum() > 0:
            raise ValueError(
                f"warm_start must be {m} non-negative weights with a positive sum, got "
                f"shape {beta.shape}.")
        beta /= beta.sum()
    u = np.empty(m)
    cache = kern.cache(cache_size)
    primal, dual, n_iter, n_fw, n_away, n_drop, status = ball_frank_wolfe(
        cache, shifts, beta, u, float(tol), int(max_iter))
    return EnclosingBall(
        radius2=float(primal), radius2_lower=float(dual), coef=beta, n_iter=int(n_iter),
        status="optimal" if status == 0 else "max_iter", time=time.perf_counter() - start,
        n_kernel_evaluations=int(cache.n_kernel_evaluations), n_fw=int(n_fw),
        n_away=int(n_away), n_drop=int(n_drop))


@dataclass
class RadiusMarginBound:
    """The radius–margin bound of one trained M-SVM² (see the module docstring).

    Attributes
    ----------
    bound : float
        Upper bound on the number of LOO errors: Q(Q−1) R² 1ᵀα with a bias,
        ((Q−1)²/Q) R₀² 1ᵀα without.
    candidates : ndarray of bool, shape (m,)
        The points that satisfy the key lemma's necessary condition for a LOO
        error: every LOO error is among them, so ``n_candidates`` is a sharper
        upper bound on the LOO error count.
    radius2 : float
        With a bias, R² = max_i ‖Φ(x_i) − c‖² for the centre c of ``ball``,
        measured on the problem (≥ the smallest ball's, within ``ball.gap``
        of it for the problem's own ball); without, R₀² = max_i κ_ii.
    sum_alpha : float
        1ᵀα = (Q−1) Σ_k ‖w_k‖² at the optimum (Proposition 3).
    n_classes, n_samples : int
    fit_intercept : bool
    ball : EnclosingBall or None
        The ball used (with a bias).

    See Also
    --------
    radius_margin_bound : Computes it.

    Examples
    --------
    On a small three-class set, the exact leave-one-out error count is at most
    the key lemma's count of candidates, itself at most the bound:

    >>> from msvm import MultiClassSVC, loo_error, radius_margin_bound
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> estimator = MultiClassSVC(model="msvm2", C=1.0)   # without a bias: no ball
    >>> problem = estimator.prepare_fit(X, y).problem
    >>> rm = radius_margin_bound(problem, get_solver("s2do").solve(problem, tol=1e-6))
    >>> loo_error(estimator, X, y).n_errors, rm.n_candidates, round(rm.bound)
    (1, 5, 38)
    >>> rm.candidates.shape, rm.ball is None
    ((30,), True)
    >>> round(rm.error_rate, 2)   # the bound over m = 30: a rate above 1 says nothing
    1.28
    """

    bound: float
    candidates: np.ndarray
    radius2: float
    sum_alpha: float
    n_classes: int
    n_samples: int
    fit_intercept: bool
    ball: EnclosingBall | None = None

    @property
    def n_candidates(self) -> int:
        return int(np.count_nonzero(self.candidates))

    @property
    def norm_w2(self) -> float:
        """Σ_k ‖w_k‖² in the feature space of k + δ/(2C), from Proposition 3."""
        return self.sum_alpha / (self.n_classes - 1)

    @property
    def error_rate(self) -> float:
        """The bound divided by m (a bound on the LOO error rate, may exceed 1)."""
        return self.bound / self.n_samples


def _ball_radius2(kernel: Kernel, shift: np.ndarray, coef: np.ndarray) -> float:
    """max_i ‖Φ(x_i) − c‖², c = Σ_i coef_i Φ(x_i), in the feature space of k + diag(shift).

    For any weights this is the squared radius of a ball (centred at c) that holds
    every point: what the bound needs, whatever problem the weights came from.
    """
    Kc = kernel.matmul(coef[:, None])[:, 0] + shift * coef      # (κ coef)_i
    d = kernel.diagonal() + shift - 2.0 * Kc + float(coef @ Kc)
    return float(max(d.max(), 0.0))


def radius_margin_bound(problem: DualProblem, solution: DualSolution | ArrayLike, *,
                        ball: EnclosingBall | None = None, ball_tol: float = 1e-10,
                        cache_size: float = 200.0) -> RadiusMarginBound:
    """Radius–margin bound on the LOO error count of a trained M-SVM².

    Parameters
    ----------
    problem : DualProblem
        An M-SVM² problem (machine ``'msvm2'``), with or without a bias.
    solution : DualSolution or ndarray of shape (m, P)
        Its dual solution α (the bound assumes α optimal: Proposition 3).  A
        DualSolution whose status is not ``'optimal'`` is refused; an array
        is taken as optimal.
    ball : EnclosingBall, optional
        The enclosing ball of the points for the kernel k + δ/(2C) (with a
        bias); computed when not given.  Without a bias it is not used.  Only
        its centre (``coef``) is used: the radius is measured again on
        ``problem``, so a ball of the same points at another C (or any
        weights on them) gives a valid, if looser, bound.
    ball_tol : float, default=1e-10
        Relative duality gap of the ball when it is computed here.
    cache_size : float, default=200
        Gram-row cache budget (MB) of the ball computation.

    Returns
    -------
    RadiusMarginBound

    Examples
    --------
    The bound of an M-SVM² solved without a bias (the estimator's default), on
    iris: at most 64 of the 150 points can be leave-one-out errors
    (``n_candidates``); the radius–margin product is looser.

    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, radius_margin_bound
    >>> from msvm.solvers import get_solver
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = MultiClassSVC(model="msvm2", C=1.0).prepare_fit(X, y).problem
    >>> solution = get_solver("s2do").solve(problem, tol=1e-6)
    >>> solution.status
    'optimal'
    >>> rm = radius_margin_bound(problem, solution)
    >>> rm.n_candidates, round(rm.bound)
    (64, 302)
    """
    if not isinstance(problem, DualProblem):
        raise TypeError("problem must be a msvm.problem.DualProblem, got "
                        f"{type(problem).__name__}.")
    if problem.machine.name != "msvm2":
        raise ValueError(
            "The radius-margin bound holds for the M-SVM2 (hard-margin LLW on k + "
            f"delta/(2C)); got machine {problem.machine.name!r}.")
    if isinstance(solution, DualSolution) and solution.status != "optimal":
        # 1ᵀα of a solve stopped early is too small: the bound would be too small too.
        raise ValueError(f"The bound assumes an optimal solution; got status "
                         f"{solution.status!r} (solver {solution.solver!r}).")
    alpha = solution.alpha if isinstance(solution, DualSolution) else np.asarray(solution)
    if alpha.shape != (problem.n_samples, problem.n_slots):
        raise ValueError(f"alpha has shape {alpha.shape}, expected "
                         f"{(problem.n_samples, problem.n_slots)}.")
    if not np.all(np.isfinite(alpha)):   # the bound would be NaN or inf, with 0 candidates
        raise ValueError("alpha contains NaN or infinite values.")
    alpha = np.where(problem.active, np.maximum(alpha, 0.0), 0.0)
    Q, m = problem.n_classes, problem.n_samples
    sum_alpha = float(alpha.sum())
    if problem.fit_intercept:
        if ball is None:
            ball = enclosing_ball(problem.kernel, shift=problem.kernel_shift, tol=ball_tol,
                                  cache_size=cache_size)
        elif ball.coef.shape != (m,) or not np.all(np.isfinite(ball.coef)):
            raise ValueError(f"ball must have {m} finite weights (the problem's points), got "
                             f"shape {ball.coef.shape}.")
        # The ball's own radius2 holds for the kernel and shift it was computed with; a ball
        # of another C gave a bound far below the LOO error count.
        radius2 = _ball_radius2(problem.kernel, problem.kernel_shift, ball.coef)
        bound = Q * (Q - 1) * radius2 * sum_alpha
        candidates = Q * (Q - 1) * radius2 * alpha.max(axis=1) >= 1.0
    else:
        kdiag = problem.kernel.diagonal() + problem.kernel_shift
        radius2 = float(kdiag.max())
        bound = (Q - 1) ** 2 / Q * radius2 * sum_alpha
        spread = np.sum((alpha - alpha.mean(axis=1, keepdims=True)) ** 2, axis=1)
        candidates = (Q - 1) ** 3 * kdiag**2 * spread >= Q
        ball = None
    return RadiusMarginBound(bound=float(bound), candidates=candidates,
                             radius2=float(radius2), sum_alpha=sum_alpha, n_classes=Q,
                             n_samples=m, fit_intercept=problem.fit_intercept, ball=ball)
