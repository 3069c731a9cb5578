"""The unified dual as an explicit QP over the active variables (reference solvers).

The Hessian αᵀHα = Σ_c β̄_cᵀ K' β̄_c (K' = K + diag(shift)) is dense in α for
machines whose constraints touch every class (LLW: each α_ik moves all Q
centred coefficients).  So the backends do not get H: they get auxiliary
variables u = vec(β̄ V), linked to α by a sparse equality u = W α, and the
block-diagonal objective ½ Σ_r u_rᵀ K' u_r.  V is an orthonormal basis of the
classes' space, reduced to the Q − 1 directions orthogonal to 1 when every
coefficient row ν̄ sums to zero (all machines of the table: β̄ rows then sum to
zero and nothing is lost).  For a low-rank kernel, K = L Lᵀ with L (m × k)
from an eigen-decomposition (negative eigenvalues from round-off clipped to
zero: the smallest jitter that makes K PSD), the factor form z_r = Lᵀ u_r
with ½‖z‖² is used instead.  The dense H itself is formed only for the
active-set polish (:func:`polish`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from msvm.kernels import psd_by_construction, psd_tolerance
from msvm.problem import DualProblem
from msvm.solvers._common import BUDGET, iteration_budget

# The factor form is used when the kernel's numerical rank k is below this
# fraction of m (it then has fewer non-zeros than the block-diagonal K').
LOW_RANK_FRACTION = 0.5

#: The active-set finish of the coordinate solvers (:func:`finish`) takes problems of at
#: most this many variables (its dense Hessian: 32 MB), ...
FINISH_MAX_VARIABLES = 2000
#: ... counts at least this many when it sets the passes before it (:func:`finish_after`:
#: on a smaller problem its fixed cost, a few ms, is the cost of the whole fit), ...
FINISH_MIN_VARIABLES = 500
#: ... may do (all its runs in one solve) this much work (:class:`Work`) per variable for
#: each pass of the loop before it (about the loop's own cost, README "Solvers"), and at
#: least FINISH_MIN_WORK (about a second), ...
FINISH_WORK_PER_PASS = 4000.0
FINISH_MIN_WORK = 1e10
#: ... and has its own tolerance, this fraction of the loop's (whose test then certifies).
FINISH_TOL = 0.1


@dataclass
class ExplicitQP:
    """minimise ½ Σ_r u_rᵀ K' u_r − tᵀα  s.t.  u = W α, 0 ≤ α, S α ≤ cap, E α = 0."""

    W: sp.csr_matrix  # (m·R, n) vec(β̄ V) = W α, block r holds rows r·m .. (r+1)·m
    K: np.ndarray  # (m, m) Gram matrix (without the shift)
    L: np.ndarray | None  # (m, k) factor, K ≈ L Lᵀ (None: not computed)
    shift: np.ndarray  # (m,) k' = k + shift_i δ_ij (M-SVM²: 1/(2C w_i); else zeros)
    targets: np.ndarray  # (n,)
    S: sp.csr_matrix  # (n_groups, n) slack-group membership (empty for squared loss)
    cap: np.ndarray  # (n_groups,) capacity C w_i of each group (its example's)
    group: np.ndarray  # (n,) row of S holding each variable (-1 for squared loss)
    E: np.ndarray  # (r, n) independent equality constraints (r = 0 without bias)
    ii: np.ndarray
    pp: np.ndarray
    n_kernel_evaluations: int

    @property
    def n(self) -> int:
        return self.W.shape[1]

    @property
    def m(self) -> int:
        return self.K.shape[0]

    @property
    def n_blocks(self) -> int:
        return self.W.shape[0] // self.m

    @property
    def low_rank(self) -> bool:
        assert self.L is not None, "built with factor=False"
        return self.L.shape[1] < LOW_RANK_FRACTION * self.m

    @property
    def shift_u(self) -> np.ndarray:
        """The shift of every entry of u (the examples' shifts, once per block)."""
        return np.tile(self.shift, self.n_blocks)

    def hessian(self) -> np.ndarray:
        """Dense H = Σ_r W_rᵀ K' W_r (n × n)."""
        Kp = self.K + np.diag(self.shift)
        H = np.zeros((self.n, self.n))
        for r in range(self.n_blocks):
            Wr = self.W[r * self.m : (r + 1) * self.m]
            H += np.asarray(Wr.T @ (Kp @ Wr.toarray()))
        return H

    def to_alpha(self, problem: DualProblem, x: np.ndarray) -> np.ndarray:
        alpha = problem.zeros()
        alpha[self.ii, self.pp] = x
        return alpha


#: Scaled KKT residual (:attr:`msvm.diagnostics.Diagnostics.kkt_residual`) at which a
#: reference solver's answer is certified optimal, whatever its backend said ...
CERTIFIED_RESIDUAL = 1e-9
#: ... and beyond which it is 'inaccurate', even when its backend said optimal.
USABLE_RESIDUAL = 1e-6


def check_options(tol, max_iter) -> None:
    """The reference solvers' ``tol`` (None or a non-negative number) and ``max_iter``
    (None or a positive integer), checked before they reach the backend, whose own
    errors do not name them (OSQP: ``OSQPException: 2``) or which ignores a NaN."""
    from msvm.solvers import check_tol_value

    if tol is not None:
        check_tol_value(tol)
    if max_iter is not None:
        iteration_budget(max_iter, 0)


def kernel_factor(K: np.ndarray, psd: bool = False) -> np.ndarray:
    """L with K ≈ L Lᵀ (eigenvalues below round-off dropped).

    An indefinite K (an eigenvalue below −:func:`msvm.kernels.psd_tolerance`)
    makes the dual non-convex, which these solvers cannot solve: ValueError;
    unless ``psd`` (the kernel is PSD by construction, :func:`~msvm.kernels.psd_by_construction`),
    when every negative eigenvalue is round-off and is dropped as well.
    """
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    if not psd and w.min(initial=0.0) < -psd_tolerance(K):
        raise ValueError(
            f"The reference QP solvers need a positive semidefinite kernel; this Gram matrix "
            f"has the eigenvalue {w.min():.3g}. Use an iterative solver ('s2do', "
            "'frank_wolfe'), which finds a KKT point of the non-concave dual."
        )
    keep = w > max(w.max(initial=0.0), 0.0) * 1e-13
    return V[:, keep] * np.sqrt(w[keep])


def class_basis(problem: DualProblem) -> np.ndarray:
    """V (Q × R): orthonormal basis of the space the centred coefficients live in."""
    Q = problem.n_classes
    if np.allclose(problem.nu.sum(axis=2), 0.0):
        # Columns of the centring matrix I − 11ᵀ/Q, orthonormalised.
        return np.linalg.svd(np.eye(Q) - 1.0 / Q)[0][:, : Q - 1]
    return np.eye(Q)


def build(problem: DualProblem, factor: bool = True) -> ExplicitQP:
    """Assemble the explicit QP of ``problem`` (without the factor L unless ``factor``)."""
    K = problem.kernel.gram()
    m = problem.n_samples
    V = class_basis(problem)
    ii, pp = problem.flat_index()
    n = len(ii)
    coeffs = problem.nu[problem.y[ii], pp] @ V  # (n, R): row of β̄V each variable moves
    R = V.shape[1]
    rows = (np.arange(R)[None, :] * m + ii[:, None]).ravel()
    cols = np.repeat(np.arange(n), R)
    vals = coeffs.ravel()
    keep = np.abs(vals) > 1e-15
    W = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(m * R, n))
    if problem.machine.loss == "hinge":
        _, group = np.unique(problem.slack_cell[ii, pp], return_inverse=True)
        S = sp.csr_matrix((np.ones(n), (group, np.arange(n))), shape=(group.max() + 1, n))
        cap = np.zeros(S.shape[0])
        cap[group] = problem.capacity[ii]
    else:
        S = sp.csr_matrix((0, n))
        group = np.full(n, -1)
        cap = np.zeros(0)
    if problem.fit_intercept:
        E = problem.equality_matrix().reshape(-1, problem.n_samples, problem.n_slots)[:, ii, pp]
    else:
        E = np.zeros((0, n))
    L = kernel_factor(K, psd_by_construction(problem.kernel)) if factor else None
    return ExplicitQP(W=W, K=K, L=L, shift=problem.kernel_shift,
                      targets=problem.targets[ii, pp], S=S, cap=cap, group=group, E=E, ii=ii,
                      pp=pp,
                      n_kernel_evaluations=K.size)


def clean(problem: DualProblem, qp: ExplicitQP, x: np.ndarray) -> np.ndarray:
    """Clip an interior-point/ADMM answer onto the bounds it may overshoot by round-off."""
    x = np.maximum(x, 0.0)
    if problem.machine.loss == "hinge":
        over = np.maximum((qp.S @ x) / qp.cap, 1.0)
        x = x / over[qp.group]
    return x


#: Largest QP (variables) that :func:`polish` refines: its dense Hessian takes 8n²
#: bytes and each of its dense KKT solves about n³/3 flops.  Above it the backend's
#: answer is kept, and its status follows its own KKT residual.
POLISH_MAX_VARIABLES = 10_000


def polish(problem: DualProblem, qp: ExplicitQP, x: np.ndarray):
    """Refine an approximate solution by an active-set method started from its guess.

    Interior-point answers are accurate in objective but leave every variable
    slightly off its bound.  Guess the active set (variables near zero, slack
    groups near capacity) at a few thresholds and run a primal-dual active-set
    iteration from each guess: solve the equality-constrained QP on the set by
    one dense KKT solve, fix variables pushed below zero (groups pushed over
    capacity), free the fixed ones whose multiplier has the wrong sign, repeat.
    The candidate with the smallest KKT residual (:func:`msvm.diagnostics.diagnose`)
    wins, the unpolished answer included.  Returns (x, λ_E, residual): λ_E are
    the multipliers of the bias constraints (b = U λ_E), None when the
    unpolished x won; residual is its scaled KKT residual.  A QP of more than
    :data:`POLISH_MAX_VARIABLES` variables is not polished.
    """
    from threadpoolctl import threadpool_limits

    from msvm.diagnostics import diagnose

    if qp.n > POLISH_MAX_VARIABLES:
        return x, None, diagnose(problem, qp.to_alpha(problem, x)).kkt_residual
    # Small dense systems gain nothing from LAPACK threads, only contention.
    with threadpool_limits(limits=1 if qp.n < 1000 else None):
        return _polish(problem, qp, x, diagnose)


def _polish(problem, qp, x, diagnose):
    H = qp.hessian()
    scale = problem.scale if problem.machine.loss == "hinge" else max(1.0, float(x.max(initial=0)))
    sums = qp.S @ x if qp.S.shape[0] else np.zeros(0)

    def residual(v):
        return diagnose(problem, qp.to_alpha(problem, v)).kkt_residual

    best, best_res, best_lam = x, residual(x), None
    if best_res <= 1e-12:
        return best, best_lam, best_res
    # Fine thresholds suit interior-point answers, coarse ones stalled ADMM iterates.
    # Every guess first gets the cheap pass (all violators change side at once);
    # the one-change-per-iteration pass, hundreds of KKT solves, only runs from
    # the best-looking guess and only when no cheap pass reached 1e-9.
    guesses = []
    for threshold in (1e-6, 1e-8, 1e-10, 1e-4, 1e-3, 1e-2):
        free = x > threshold * scale
        full = sums >= qp.cap * (1 - threshold) if sums.size else np.zeros(0, bool)
        guesses.append((free, full))
        cand, lam = _active_set_pass(qp, H, free.copy(), full.copy(), qp.cap, scale,
                                     one_at_a_time=False, max_iter=30)
        if cand is None:
            continue
        res = residual(cand)
        if res < best_res:
            best, best_res, best_lam = cand, res, lam
        if best_res <= 1e-12:
            return best, best_lam, best_res
    if best_res > 1e-9:
        free, full = guesses[0]
        cand, lam = _active_set_pass(qp, H, free.copy(), full.copy(), qp.cap, scale,
                                     one_at_a_time=True, max_iter=300)
        if cand is not None:
            res = residual(cand)
            if res < best_res:
                best, best_res, best_lam = cand, res, lam
    return best, best_lam, best_res


def _active_set_pass(qp, H, free, full, C, scale, one_at_a_time, max_iter):
    """Primal-dual active-set iterations from (free, full): (x, λ_E), or (None, None).

    ``C`` holds the capacity of every slack group (row of ``qp.S``).
    """
    tol_x, tol_g = 1e-13 * scale, 1e-11
    for _ in range(max_iter):
        x, mult = _solve_on_active_set(qp, H, free, full, C)
        negative = free & (x < -tol_x)
        over = ((qp.S @ x > C + tol_x) & ~full) if full.size else full
        if negative.any() or over.any():
            if one_at_a_time and negative.any():
                negative = np.zeros_like(free)
                negative[np.argmin(np.where(free, x, np.inf))] = True
            free = free & ~negative
            full = full | over
            continue
        mu, lam = mult[: int(full.sum())], mult[int(full.sum()):]
        g = H @ x - qp.targets + qp.E.T @ lam
        if full.any():
            g += qp.S[full].T @ mu
        release = ~free & (g < -tol_g)
        loose = np.zeros_like(full)
        loose[np.flatnonzero(full)[mu < -tol_g]] = True
        if not release.any() and not loose.any():
            return np.maximum(x, 0.0), lam
        if one_at_a_time and release.any():
            release = np.zeros_like(free)
            release[np.argmin(np.where(~free, g, np.inf))] = True
            loose[:] = False
        free = free | release
        full = full & ~loose
    return None, None


def _solve_symmetric(kkt, rhs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
        return scipy.linalg.solve(kkt, rhs, assume_a="sym", check_finite=False)


def _solve_on_active_set(qp: ExplicitQP, H, free, full, C):
    """Minimiser of the QP with x_¬free = 0, S_full x = C_full and E x = 0 (one KKT solve).

    Returns (x, μ): the multipliers solve [Hx − t]_free + A_freeᵀ μ = 0, with
    A the rows S_full then E.
    """
    A = np.vstack([qp.S[full].toarray(), qp.E])[:, free]
    rhs = np.concatenate([C[full], np.zeros(qp.E.shape[0])])
    nf = int(free.sum())
    kkt = np.block([[H[np.ix_(free, free)], A.T], [A, np.zeros((A.shape[0], A.shape[0]))]])
    rhs = np.concatenate([qp.targets[free], rhs])
    try:
        sol = _solve_symmetric(kkt, rhs)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        # Singular: H restricted to the free set has low rank (linear kernels),
        # or constraint rows restricted to it are dependent.  Any solution will
        # do; the quasi-definite regularisation [[H + δI, Aᵀ], [A, −δI]] of
        # round-off size δ is always invertible, and iterative refinement
        # against the exact system removes its O(δ) error (least squares on
        # the singular system would cost ~10x more).
        delta = 1e-12 * max(1.0, float(np.abs(np.diagonal(kkt)[:nf]).max(initial=0)))
        regularised = kkt.copy()
        diag = np.arange(kkt.shape[0])
        regularised[diag, diag] += np.where(diag < nf, delta, -delta)
        factor = scipy.linalg.lu_factor(regularised, check_finite=False)
        sol = _refined(scipy.linalg.lu_solve, factor, kkt, rhs)
    x = np.zeros(qp.n)
    x[free] = sol[:nf]
    return x, sol[nf:]


def finish_after(problem: DualProblem, per_variable: int) -> int | None:
    """The passes after which a coordinate solver hands ``problem`` to :func:`finish`:
    ``per_variable`` per variable (at least FINISH_MIN_VARIABLES), or None when the
    problem has more than FINISH_MAX_VARIABLES variables."""
    n = int(problem.active.sum())
    return per_variable * max(n, FINISH_MIN_VARIABLES) if n <= FINISH_MAX_VARIABLES else None


class Work:
    """The allowance of :func:`finish`'s dense linear algebra, in estimated floating-point
    operations, shared by its runs in one solve.

    Counted rather than timed, so that whether a finish ends within it, and so the
    answer, is the same on every machine and under any load.  The estimates are
    the leading terms of each operation plus a fixed cost per iteration and per
    breakpoint of the projected search (the interpreter's, as operations).
    """

    #: The fixed cost of one iteration of the active-set methods, and of one breakpoint of
    #: the projected search, in operations.
    ITERATION = 5e5
    BREAKPOINT = 5e4

    def __init__(self, allowance: float = 0.0):
        self.allowance, self.spent = float(allowance), 0.0

    def spend(self, operations: float) -> bool:
        """Count ``operations``; whether the total is within the allowance."""
        self.spent += operations
        return self.spent <= self.allowance

    @classmethod
    def iteration(cls, n: int, face: int) -> float:
        """An iteration on ``n`` variables: the gradient (2n²) and the factorisation of a
        face (or KKT system) of ``face`` rows with its refined solves."""
        return 2.0 * n * n + face ** 3 / 3.0 + 20.0 * face * face + cls.ITERATION

    @classmethod
    def search(cls, face: int, breakpoints: int) -> float:
        """A projected search on ``face`` variables over ``breakpoints`` breakpoints."""
        return (breakpoints + 1) * (8.0 * face + cls.BREAKPOINT)

    @staticmethod
    def hessian(qp: ExplicitQP) -> float:
        """Forming the dense Hessian: K' times every block of W."""
        return 2.0 * qp.n_blocks * qp.m * qp.m * qp.n


class Handover:
    """Where a coordinate solver's loop hands its point to :func:`finish` (once, or once
    more after each :meth:`rearm`).

    ``at`` is the pass count of :func:`finish_after` (None: no finish); the
    loop runs at most up to it (:meth:`cap`), and when it stopped there with
    budget left (:meth:`due`), :meth:`run` runs the finish, which adds to
    ``time`` and ``kernel_evaluations``.
    """

    def __init__(self, problem: DualProblem, per_variable: int, enabled: bool):
        self.passes = finish_after(problem, per_variable) if enabled else None
        self.n, self.per_variable = int(problem.active.sum()), per_variable
        self.at = self.passes
        self.work = Work()
        self.time, self.kernel_evaluations = 0.0, 0

    def cap(self, passes: int, used: int) -> int:
        """The passes the loop may run now, of ``passes`` left, after ``used``."""
        return passes if self.at is None else min(passes, self.at - used)

    def due(self, code: int, used: int, budget: int) -> bool:
        """Whether the loop, stopped with ``code`` after ``used`` passes, stopped for
        the finish (its pass count reached, not the budget)."""
        return code == BUDGET and self.at is not None and used < budget

    def rearm(self, used: int) -> None:
        """Allow one more finish, :func:`finish_after`'s passes after ``used`` (the inner
        solves of :mod:`msvm.solvers.s2do_bias`, one per outer iteration)."""
        if self.passes is not None:
            self.at = used + self.passes

    def run(self, problem: DualProblem, alpha: np.ndarray, tol: float, used: int,
            **augmented) -> bool:
        """:func:`finish` on α (in place if it reached its optimum; ``augmented``: its
        ``offset`` and ``targets``); whether it did.

        All the runs of one solve share one allowance (:class:`Work`):
        FINISH_WORK_PER_PASS operations per variable for each of the ``used`` passes
        the loop has made so far (in its own units, ``per_variable`` of which make one
        pass's worth), and at least FINISH_MIN_WORK.  ``time`` and
        ``kernel_evaluations`` sum over the runs.
        """
        self.work.allowance = max(FINISH_WORK_PER_PASS * self.n * used / self.per_variable,
                                  FINISH_MIN_WORK)
        self.at = None
        if self.work.spent >= self.work.allowance:
            return False
        start = time.perf_counter()
        finished, evaluations = finish(problem, alpha, tol, self.work, **augmented)
        self.kernel_evaluations += evaluations
        self.time += time.perf_counter() - start
        return finished


def finish(problem: DualProblem, alpha: np.ndarray, tol: float, work: Work, *,
           offset: float = 0.0, targets: np.ndarray | None = None) -> tuple[bool, int]:
    """The active-set finish of a coordinate solver stuck on a badly conditioned problem.

    :func:`box_active_set` (or :func:`group_active_set` where a slack group holds
    several variables) on the dense bias-free dual from the solver's point ``alpha``
    (tolerance FINISH_TOL·``tol``, within the allowance ``work``):
    ``alpha`` is replaced in place by its answer if it reached its optimum, else
    left as it was, for the solver to go on.  The solver's own stopping test
    certifies the answer.  ``offset`` (added to every Gram entry) and ``targets``
    (the (Q, P) table γ) give the augmented Lagrangian of a machine with a bias
    (:mod:`msvm.solvers.s2do_bias`), whose equalities are then the caller's.
    Returns (reached, kernel evaluations).
    """
    from threadpoolctl import threadpool_limits

    qp = build(problem, factor=False)
    qp.K = qp.K + offset   # a copy: a precomputed K is the caller's (the user's) matrix
    if targets is not None:
        qp.targets = targets[problem.y[qp.ii], qp.pp]
    qp.E = np.zeros((0, qp.n))   # bias-free (a machine with a bias: its augmented Lagrangian)
    work.spend(Work.hessian(qp))
    H, x0 = qp.hessian(), alpha[qp.ii, qp.pp]
    finish_tol, max_iter = FINISH_TOL * tol, 10 * qp.n + 100
    # Faces of a few hundred variables: LAPACK's threads only contend (8x slower).
    with threadpool_limits(limits=1):
        if qp.S.shape[0] and np.any(np.diff(qp.S.indptr) > 1):
            x, optimal = group_active_set(qp, H, x0, tol=finish_tol, work=work,
                                          max_iter=max_iter)
        else:
            upper = qp.cap[qp.group] if qp.S.shape[0] else np.full(qp.n, np.inf)
            x, optimal = box_active_set(H, qp.targets, upper, x0, tol=finish_tol, work=work,
                                        max_iter=max_iter)
    if optimal:
        alpha[qp.ii, qp.pp] = clean(problem, qp, x)   # round-off over a capacity
    return optimal, qp.n_kernel_evaluations


def box_active_set(H: np.ndarray, t: np.ndarray, upper: np.ndarray, x: np.ndarray, *,
                   tol: float, work: Work, max_iter: int) -> tuple[np.ndarray, bool]:
    """Minimise ½xᵀHx − tᵀx over 0 ≤ x ≤ upper by the primal active-set method, from x.

    ``x`` must be feasible; every iterate is, and none raises the objective.  Each
    iteration takes the face of the box the iterate lies on (the variables
    strictly inside move, the others stay at their bounds), solves it by one
    dense solve, and searches exactly along the step towards that face's
    minimiser projected on the box (:func:`_projected_search`): variables that
    reach a bound on the way join it, many in one iteration where the start is
    far from the optimum's face.  At a face minimiser every bound variable whose
    gradient points into the box is released.  The objective falls strictly
    from one face minimiser to the next, so none is visited twice.  Where
    coordinate steps crawl (a singular or badly conditioned face: a low-rank
    kernel, LLW's many free variables) this ends in a few dense solves.

    A face counts as solved, and a bound variable as violating, beyond ``tol``
    in gradient units (below it, round-off would make the method release and
    block the same variables in turn).  Returns ``(x, optimal)``, ``optimal``
    by the method's own test (no variable to release at a face minimiser); the
    caller's stopping rule decides.  Stops early after ``max_iter`` iterations
    or when an iteration would exceed the allowance ``work``.
    """
    x = np.minimum(np.maximum(np.array(x, dtype=float), 0.0), upper)
    lower, at_upper = x <= 0.0, x >= upper
    for _ in range(max_iter):
        idx = np.flatnonzero(~(lower | at_upper))
        if not work.spend(Work.iteration(len(x), idx.size)):
            return x, False
        g = H @ x - t
        gf = g[idx]
        if idx.size and np.abs(gf).max() > tol:
            H_ff = H[np.ix_(idx, idx)]
            d = _face_step(H_ff, -gf)
            slope = float(gf @ d)
            if not slope < 0:   # an inaccurate solve: the steepest descent on the face
                d, slope = -gf, -float(gf @ gf)
            found = _projected_search(H_ff, gf, d, x[idx], upper[idx])
            if found is None:
                return x, False     # unbounded along d: cannot happen on a convex dual
            x[idx], down, up = found   # those variables joined their bound
            work.spend(Work.search(idx.size, int(down.sum() + up.sum())))
            lower[idx[down]] = True
            at_upper[idx[up]] = True
            continue
        release_low, release_up = lower & (g < -tol), at_upper & (g > tol)
        if not (release_low.any() or release_up.any()):
            return x, True
        lower &= ~release_low
        at_upper &= ~release_up
    return x, False


def _projected_search(H_ff: np.ndarray, g: np.ndarray, d: np.ndarray, x: np.ndarray,
                      upper: np.ndarray):
    """The exact minimiser of the quadratic objective (Hessian ``H_ff``, gradient ``g``
    at x, 0 < x < upper) along the projected path P[x + s d], s ≥ 0, of a descent
    direction d.

    The path is piecewise linear: at its breakpoints (in order of s) one variable
    reaches its bound and leaves the direction, so the objective is a quadratic
    in s on each piece, whose slope and curvature are kept in O(n) per
    breakpoint.  The search stops in the first piece where the slope turns
    non-negative.  Returns (y, down, up), down/up marking the variables put at 0
    and at ``upper`` (exactly), or None when the objective is unbounded along it.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        room = np.where(d < 0, x / -d, np.where(d > 0, (upper - x) / d, np.inf))
    direction = d.copy()
    moved = np.zeros_like(x)          # y − x
    H_moved = np.zeros_like(x)        # H_ff (y − x)
    H_direction = H_ff @ direction
    s = 0.0
    for j in np.argsort(room, kind="stable"):
        slope = float((g + H_moved) @ direction)
        curvature = float(direction @ H_direction)
        if slope >= 0.0:
            break
        if curvature > 0.0 and s - slope / curvature <= room[j]:
            step = -slope / curvature
            moved += step * direction
            break
        if not np.isfinite(room[j]):
            return None
        step = room[j] - s
        moved += step * direction
        H_moved += step * H_direction
        s = room[j]
        bound = -x[j] if d[j] < 0 else upper[j] - x[j]   # the variable at its bound, exactly
        H_moved += (bound - moved[j]) * H_ff[j]
        moved[j] = bound
        H_direction -= direction[j] * H_ff[j]
        direction[j] = 0.0
    y = np.minimum(np.maximum(x + moved, 0.0), upper)
    reached = np.isfinite(room) & (room <= s)
    down, up = reached & (d < 0), reached & (d > 0)
    y[down], y[up] = 0.0, upper[up]
    return y, down, up


def group_active_set(qp: ExplicitQP, H: np.ndarray, x: np.ndarray, *, tol: float,
                     work: Work, max_iter: int) -> tuple[np.ndarray, bool]:
    """:func:`box_active_set` for slack groups of several variables (Crammer–Singer):
    minimise ½xᵀHx − tᵀx over x ≥ 0, S x ≤ cap (``qp.S``, ``qp.cap``), from a feasible x.

    A face fixes some variables at 0 and some groups at capacity; its minimiser
    is one KKT solve (:func:`_solve_on_active_set`), its multipliers say which
    variables and groups to release.  Same returns, tolerance and limits.
    """
    S, cap, t = qp.S, qp.cap, qp.targets
    x = np.maximum(np.array(x, dtype=float), 0.0)
    lower = x <= 0.0
    full = S @ x >= cap
    for _ in range(max_iter):
        if not work.spend(Work.iteration(len(x), int((~lower).sum() + full.sum()))):
            return x, False
        g = H @ x - t
        target, mult = _solve_on_active_set(qp, H, ~lower, full, cap)
        d = target - x
        slope, curvature = float(g @ d), float(d @ H @ d)
        if np.abs(d).max(initial=0.0) > 1e-13 * max(1.0, float(x.max(initial=0.0))) \
                and slope < 0:
            # Walk towards the face's minimiser as far as the other constraints allow.
            with np.errstate(divide="ignore", invalid="ignore"):
                room_x = np.where(~lower & (d < 0), x / -d, np.inf)
                Sd = S @ d
                room_g = np.where(~full & (Sd > 0), (cap - S @ x) / Sd, np.inf)
            limit = min(float(room_x.min(initial=np.inf)), float(room_g.min(initial=np.inf)))
            step = min(limit, -slope / curvature if curvature > 0 else np.inf, 1.0)
            x = np.maximum(x + step * d, 0.0)
            if step >= limit:       # blocked: those variables and groups join their bound
                lower |= room_x <= limit
                full |= room_g <= limit
                x[lower] = 0.0
            continue
        # At the face's minimiser: λ = g + Sᵀμ on the variables at 0, μ on full groups.
        mu = np.zeros(len(cap))
        mu[full] = mult[: int(full.sum())]
        lam = g + S.T @ mu
        release_x, release_g = lower & (lam < -tol), full & (mu < -tol)
        if not (release_x.any() or release_g.any()):
            return x, True
        lower &= ~release_x
        full &= ~release_g
    return x, False


def _face_step(H_ff: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """d with H_ff d = rhs for a positive semidefinite H_ff, singular ones included: the
    Cholesky factor of H_ff + δI, δ of round-off size, with iterative refinement against
    H_ff (on a singular face a step into its null space that the ratio test stops)."""
    delta = 1e-12 * max(1.0, float(np.abs(np.diagonal(H_ff)).max(initial=0.0)))
    regularised = H_ff + delta * np.eye(len(rhs))
    try:
        factor = scipy.linalg.cho_factor(regularised, check_finite=False)
        solve = scipy.linalg.cho_solve
    except np.linalg.LinAlgError:   # negative round-off eigenvalues below −δ
        factor = scipy.linalg.lu_factor(regularised, check_finite=False)
        solve = scipy.linalg.lu_solve
    return _refined(solve, factor, H_ff, rhs)


def _refined(solve, factor, matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The solution of matrix·x = rhs from the factor of a regularised matrix (``solve``:
    scipy's ``lu_solve`` or ``cho_solve``), by three steps of iterative refinement
    against the exact matrix: they remove the regularisation's O(δ) error."""
    x = np.zeros_like(rhs)
    for _ in range(3):
        x += solve(factor, rhs - matrix @ x, check_finite=False)
    return x
