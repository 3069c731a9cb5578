"""S2DO with a bias: the method of multipliers over the bias-free S2DO loop.

With a bias the dual (DESIGN.md §2) gains the equality constraints

    Aα = Σ_i β̄_i = 0 ∈ span(U),    β̄_i = Σ_p ν̄_{y_i,p} α_ip

(:meth:`msvm.problem.DualProblem.equality_matrix`), whose multipliers are the
bias b.  Frank–Wolfe (``solver='frank_wolfe'``) keeps them in every step; it
stays selectable and is the cross-check of this module.

The route, and why
------------------
Three exact routes were weighed (issue 21, item 4):

* **Working sets that keep the equalities** (as SMO does for one bias).  A
  2-D step keeps Q − 1 equalities only if its two ν̄ are parallel (WW/CS:
  ν = e_y − e_p, so only pairs with the same {y, p}).  The feasible
  direction (e_0 − e_1) + (e_1 − e_2) + (e_2 − e_0) of three examples of
  classes 0, 1, 2 is no sum of such pairs, so for Q ≥ 3 pair steps that
  stay feasible stall short of the optimum; working sets of ≥ Q variables
  lose S2DO's closed-form step and its whole bookkeeping.
* **Fixed b, outer Newton/bundle on b.**  φ(b) = min_α J(α) + bᵀAα is a
  bias-free dual with shifted targets; it is concave, piecewise quadratic,
  with gradient Aα*(b) and Hessian −A_F H_FF⁻¹ A_Fᵀ on the current free set
  F (thousands of variables on usps), which changes with the active set; a
  bundle method needs many exact inner solves.
* **The method of multipliers (chosen).**  The augmented Lagrangian

      L_ρ(α, b) = J(α) + bᵀAα + (ρ/2)‖Aα‖²

  is again a bias-free dual of the same machine: ‖Aα‖² = Σ_ij β̄_iᵀβ̄_j, so
  the penalty is the constant ρ added to every Gram entry (the cache's
  ``offset``: rows of k + ρ, no change to the loop), and bᵀAα =
  Σ α_ip ν̄_{y_i,p}·b only shifts the per-(class, slot) target table,
  γ_{y,p} ← γ_{y,p} − ν̄_{y,p}·b (``S2DOState.retarget`` keeps α and the
  scores F, which do not depend on it, and refreshes the gradients).  Its
  gradient is ν̄·(F̄ + b + ρAα) − γ: an inner optimum α is a KKT point of
  the user's problem with the multipliers b + ρAα, off the equalities by the
  residual r = Aα, hence the update b ← b + ρr (a proximal-point step on
  φ).  Every inner solve is the fast compiled S2DO, warm-started.

Measured on usps (``benchmarks/README.md`` gives the figures): a large ρ
converges the multipliers in fewer outer iterations, but the constant
kernel couples every example (a step moves every gradient) and S2DO needs
more steps; with the stopping rule and schedule below, ρ = 0.1·max k(x, x)
takes the fewest inner iterations (3 outer ones on usps-ww), about 2.4
times those of the bias-free solve.

Stopping rule (the certificate decides)
---------------------------------------
The inner solves stop at S2DO's KKT rule; the first at ``FIRST_TOL``·tol,
each later one at the larger of ``OUTER_SLACK``·‖Δb‖∞ (the next multiplier
step moves every gradient by up to ‖Δb‖∞) and ``inner_fraction``·tol.  After
an inner solve at the final tolerance, the residual r is removed by the
least-norm move of the positive variables (a full slack group moves at
constant sum; where that move would leave the box, the least-norm one within
it, for machines whose slack groups are single variables:
:func:`msvm.diagnostics.repair_equality`), the scores are
updated from the cached rows, and the certificate the estimator will
compute -- b from the KKT conditions (:func:`msvm.diagnostics.bias_from_kkt`)
and the largest KKT violation with it (:func:`msvm.diagnostics.kkt_violation`)
-- must be within ``tol``, with the equalities at :data:`EQUALITY_RTOL`.
Otherwise the outer loop goes on.  So ``status='optimal'`` means what it
means for S2DO: the estimator's own check (``STOPPING_RULE =
'kkt_violation'``) passes on the float64 scores.

The multiplier step.  The step ρr is the exact maximiser of the dual
function φ_ρ(b) = min_α L_ρ(α, b) only where ρ dominates its curvature.
The kernel has its own share: its mean value k̄ is a stiff penalty on the
class totals Aα of its own (``benchmarks/README.md``, "Where the steps go"),
so where k̄ is large (letter: 0.86 at the protocol's γ) the residual
answers a change of b by far less than 1/ρ, and ρr is far too short.
Raising ρ instead makes every inner solve stiffer (on letter-ww ρ grew a
thousandfold, and each of the last inner solves took hundreds of thousands
of passes: ``benchmarks/README.md``, the bias-steps round).  So the steps
are quasi-Newton ones, b ← b + Hr: H starts at ρI (the method of
multipliers), takes the BFGS update from each outer iteration's secant pair
(Δb, −Δr) (:func:`_bfgs_update`; −∇²φ_ρ is symmetric and positive
semidefinite), the first of which also sets its scale, and starts again
from ρI when the residual rises or ρ changes.  The multipliers the
certificate starts from are still b + ρr, those of the inner solve's KKT
conditions.

The penalty.  ρ starts at :data:`RHO` times the largest k'(x, x).  When an
outer iteration leaves more than :data:`RHO_GROW_IF` of the residual, ρ
grows by :data:`RHO_GROWTH` (at most :data:`RHO_MAX_FACTOR` times the
start): the multipliers' steps are too short where the dual function of b
is flat (few free variables, e.g. mmr at C = 0.1 on the checkerboard), or
the residual is the inner noise.  The cached rows and the scores are shifted in
place (``KernelCache.add_offset``, ``S2DOState.reoffset``: F += Δρ Σ_i β_i),
no row is computed again.  At the final tolerance a stalled residual also
halves the inner tolerance.

Machines: every row of the table (the loop reads the machine's arrays; WW,
CS, LLW, M-SVM² take S2DO's fast path).  On degenerate duals (a linear kernel
of rank ≪ m) a pair method needs many steps at tight tol, as S2DO without a
bias does (10⁶ steps for tol = 1e-7 on a 2-D ATS problem); on a small
problem S2DO's active-set finish (``finish``) ends each inner solve instead,
applied to the augmented Lagrangian, which is a bias-free dual.  Larger
problems keep the limit.
"""

from __future__ import annotations

import inspect
import time

import numpy as np

from msvm._progress import SolverProgress
from msvm.diagnostics import bias_from_kkt, kkt_violation, repair_equality
from msvm.problem import DualProblem, DualSolution, class_coefficients
from msvm.solvers import TIME_SLICE, TOL_FLOOR, StallWatch, _qp, check_tol
from msvm.solvers._common import (
    BUDGET,
    DONE,
    STALLED,
    STATUS,
    Clock,
    ContentionWatch,
    Counters,
    blas_limited,
    drive,
    fill_gram,
    float32,
    iteration_budget,
    machine_tables,
    n_threads,
    start_point,
    warn_not_converged,
)
from msvm.solvers.s2do import FINISH_AFTER, check_block_size, configure, start_threads

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = False
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "cache_size", "cache_dtype", "n_jobs",
                     "certify"})
STOPPING_RULE = "kkt_violation"
#: ``solve`` takes ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = True

#: The certificate must hold at this fraction of ``tol``: the estimator recomputes the
#: scores in float64 (``certify``), which moves the violation by round-off.
VERIFY_FRACTION = 0.99
#: The equality residual a solution may keep after the repair, relative to its largest α.
EQUALITY_RTOL = 1e-10
#: Rows of the Gram matrix fetched at a time when the repaired examples' scores are updated.
_ROW_CHUNK = 256
#: Default penalty ρ of the augmented Lagrangian, in units of the largest kernel diagonal.
RHO = 0.1
#: The inner solves stop at this fraction of ``tol``, so that the certificate, whose bias
#: is re-estimated from the KKT conditions and whose α has its equality round-off
#: repaired, stays within ``tol``.
INNER_FRACTION = 0.5
#: Outer iterations at most (each a warm-started S2DO solve).
MAX_OUTER = 500
#: ρ grows by RHO_GROWTH when an outer iteration leaves more than RHO_GROW_IF of the
#: residual, up to RHO_MAX_FACTOR times its first value.
RHO_GROWTH = 4.0
RHO_GROW_IF = 0.9
RHO_MAX_FACTOR = 1e4
#: A quasi-Newton multiplier step longer than this many times the plain step ρr is not
#: taken (H starts again from ρI).
QN_STEP_MAX = 100.0
#: The first inner solve stops at this multiple of ``tol`` (the multipliers are still far).
FIRST_TOL = 10.0
#: Later inner solves stop at this fraction of the last multiplier step (gradient units).
OUTER_SLACK = 0.1


def supported(problem: DualProblem) -> str | None:
    """Why :func:`solve` cannot handle ``problem`` (None when it can)."""
    if not problem.fit_intercept:
        return "it solves the machines with a bias only; use solver='s2do'"
    return None


@blas_limited
def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, blas_threads: int | None = 1, n_jobs: int | None = None,
          cache_dtype: str = "float64", rho: float | None = None,
          inner_fraction: float = INNER_FRACTION, certify: bool = False, finish: bool = True,
          quasi_newton: bool = True,
          **s2do_options) -> DualSolution:
    """Solve the dual with a bias by the method of multipliers over S2DO.

    Parameters
    ----------
    problem : DualProblem
        Must have ``fit_intercept=True``.
    tol : float, optional
        Largest KKT violation of the user's problem (with its bias) at the
        solution, in gradient units (default 1e-3), as :mod:`msvm.solvers.s2do`.
    max_iter : int, optional
        Cap on the S2DO iterations summed over all outer iterations.
    warm_start : DualSolution or ndarray of shape (m, P), optional
        Starting α (made feasible as in S2DO; a :class:`DualSolution` also
        gives its ``b`` as the first multipliers).
    verbose : bool
        Progress line (outer iteration, violation, equality residual).
    cache_size, blas_threads, n_jobs, cache_dtype
        As :func:`msvm.solvers.s2do.solve`.
    rho : float, optional
        Penalty ρ (default :data:`RHO` times the largest k(x, x)).
    inner_fraction : float
        The inner solves' tolerance as a fraction of ``tol`` (0 < · ≤ 1).
    certify : bool
        Recompute the float64 scores at the end from the cached rows.
    quasi_newton : bool
        Take the multiplier steps b ← b + H r with H updated by BFGS from the
        outer iterations' (Δb, −Δr) (default), instead of the plain method of
        multipliers' b ← b + ρ r (module docstring, "The multiplier step").
    finish : bool
        S2DO's ``finish`` (:func:`msvm.solvers.s2do.solve`) for every inner
        solve: on a small problem, an inner solve not converged after
        :data:`~msvm.solvers.s2do.FINISH_AFTER` passes per variable hands its
        point to :func:`~msvm.solvers._qp.finish` on the augmented Lagrangian
        (the Gram matrix plus ρ, the shifted targets), whose answer the loop's
        test certifies (default).  ``info["finish_time"]`` sums its times.
    **s2do_options
        The accelerations of :func:`msvm.solvers.s2do.solve` (``shrinking``,
        ``fast``, ``lazy``, ``block_steps``, ``block_size``, ``focus``,
        ``prefetch``, ``slot_partner``, ``tune_threads``).

    Returns
    -------
    DualSolution
        ``b`` is the final multiplier vector; ``info['outer']`` the number of
        outer iterations, ``info['equality_residual']`` max_c |Σ β̄_ic| before
        the round-off repair.
    """
    from msvm._core._s2do import S2DOState

    reason = supported(problem)
    if reason is not None:
        raise ValueError(f"Solver 's2do_bias' cannot solve this problem: {reason}.")
    unknown = set(s2do_options) - {"shrinking", "fast", *inspect.signature(configure).parameters}
    if unknown:
        raise TypeError(f"solve() got unexpected keyword arguments {sorted(unknown)}.")
    check_block_size(s2do_options.get("block_size", 8))
    if not 0 < inner_fraction <= 1:
        raise ValueError(f"inner_fraction must be in (0, 1], got {inner_fraction!r}.")
    clock = Clock()
    tol = check_tol(tol)
    budget = iteration_budget(max_iter, problem.n_samples)
    threads = n_threads(n_jobs)
    kdiag = problem.kernel.diagonal() if hasattr(problem.kernel, "diagonal") else None
    kmax = float(np.max(kdiag)) if kdiag is not None and len(kdiag) else 1.0
    kmax = kmax if np.isfinite(kmax) and kmax > 0 else 1.0
    rho = RHO * kmax if rho is None else float(rho)
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a positive number, got {rho!r}.")
    alpha = start_point(problem, warm_start)
    b = np.zeros(problem.n_classes)
    if isinstance(warm_start, DualSolution) and warm_start.b is not None:
        b = np.array(warm_start.b, dtype=np.float64).reshape(-1)
        if b.shape != (problem.n_classes,) or not np.all(np.isfinite(b)):
            b = np.zeros(problem.n_classes)
    tables = machine_tables(problem.machine, fast=s2do_options.get("fast", True))
    nubar = tables.nubar                       # (Q, P, Q), zero on inactive slots
    U = problem.equality_basis
    projector = U @ U.T                        # onto the multipliers' space, span(U)
    b = projector @ b                          # the part of b the constraints see

    def targets(b):
        return np.ascontiguousarray(tables.gamma - np.einsum("ypc,c->yp", nubar, b))

    cache = problem.kernel.cache(cache_size, float32=float32(cache_dtype), n_threads=threads,
                                 offset=rho)
    gamma = targets(b)
    shared = tables.shared()
    inner_tol = max(inner_fraction * tol, 1e-12)
    complete_at = fill_gram(cache, threads, s2do_options.get("prefetch", True),
                            watch=s2do_options.get("tune_threads", True))

    def new_state(tol: float):
        """The compiled loop's state on α and the current targets ``gamma``."""
        fresh = S2DOState(
            cache, problem.y, alpha, C=problem.capacity, shift=problem.kernel_shift,
            tol=tol, centred=tables.centred,
            shrinking=bool(s2do_options.get("shrinking", True)), fast=tables.fast,
            n_threads=threads, **dict(shared, gamma=gamma),
        )
        configure(fresh, complete_at=complete_at,
                  **{k: v for k, v in s2do_options.items() if k not in ("shrinking", "fast")})
        return fresh

    state = new_state(inner_tol)
    counters = Counters(("n_iter", "n_steps"))

    progress = SolverProgress("s2do_bias", tol, enabled=verbose)
    final_tol = max(inner_fraction * tol, TOL_FLOOR)
    # Outer iteration k solves to max(final_tol, OUTER_SLACK·|Δb_{k-1}|∞): the next
    # multiplier step moves every gradient by up to |Δb|, so a tighter solve is wasted.
    state.tol = max(final_tol, FIRST_TOL * tol)
    n_outer, n_checks, n_growths = 0, 0, 0
    rho_max = RHO_MAX_FACTOR * rho
    grow = 1.0
    # ν without centring, on the active slots: the β of the compiled scores F = K'β.
    nu_plain = problem.machine.nu * problem.machine.active[:, :, None]
    history = []
    code = DONE
    residual = problem.equality_residual(alpha)
    r_last = np.inf
    verified = None
    where = {"outer": 0, "residual": float(np.max(np.abs(residual), initial=0.0))}

    watch = ContentionWatch(threads if state.tune_threads else 1,
                            lambda n: state.set_threads(n), TIME_SLICE)
    start_threads(state, watch)
    handover = _qp.Handover(problem, FINISH_AFTER, finish)

    def used() -> int:
        return counters.total(state, "n_iter")

    def run() -> int:
        return state.run(max(handover.cap(budget - used(), used()), 0), watch.slice_length)

    def inner_solve() -> int:
        """The loop to its tolerance, through an active-set finish of its augmented
        Lagrangian if it runs long on a small problem."""
        nonlocal state
        handover.rearm(used())
        code = drive(run, after, StallWatch(state.objective))
        if handover.due(code, used(), budget):
            state.settle()
            if handover.run(problem, alpha, state.tol, used(), offset=rho, targets=gamma):
                counters.retire(state)
                state = new_state(state.tol)
                start_threads(state, watch)
            code = drive(run, after, StallWatch(state.objective))
        state.settle()
        return code

    def after(code: int) -> None:
        watch.after_slice()
        if progress.due(final=False):
            progress.report(used(), state.max_violation, dual=-state.objective(),
                            hits=cache.n_hits, misses=cache.n_misses, final=False,
                            extra=f"outer {where['outer']} |Σβ̄| {where['residual']:.1e}")

    steps = _MultiplierSteps(projector, rho)
    while True:
        n_start = used()
        code = inner_solve()
        n_outer += 1
        residual = problem.equality_residual(alpha)
        r_max = float(np.max(np.abs(residual), initial=0.0))
        where.update(outer=n_outer, residual=r_max)
        step = rho * residual
        if quasi_newton:
            steps.observe(b, residual, rose=r_max >= r_last, rho=rho)
        history.append((int(used() - n_start), float(state.tol), r_max))
        if code != DONE:
            break
        # The residual no longer falls: the multipliers' steps are too short (a flat
        # dual function: few free variables) or the residual is the inner solve's
        # noise (about its tolerance / ρ).  Both call for a larger ρ.
        grow = min(RHO_GROWTH, rho_max / rho) if r_max > RHO_GROW_IF * r_last else 1.0
        r_last = r_max
        if state.tol <= final_tol:
            # α solves the user's problem with the multipliers b + ρr up to the inner
            # tolerance and violates the equalities by r: repair them and measure the
            # certificate the estimator will compute.
            n_checks += 1
            verified = _verify(problem, cache, rho, alpha, state.scores() - step[None, :],
                               tol)
            if verified is not None:
                b = b + step
                break
            if grow > 1.0:
                final_tol = max(0.5 * final_tol, TOL_FLOOR)   # the noise case
        if n_outer >= MAX_OUTER:
            break
        if quasi_newton:
            step = steps.step(residual, step, rho)
        b = b + step
        state.tol = max(final_tol, min(state.tol, OUTER_SLACK * float(np.max(np.abs(step)))))
        gamma = targets(b)
        if grow > 1.0:
            colsum = class_coefficients(alpha, problem.y, nu_plain).sum(axis=0)
            state.reoffset(rho * (grow - 1.0), np.ascontiguousarray(colsum), gamma)
            rho = float(cache.offset)
            n_growths += 1
            steps.reset(rho)     # another dual function
        else:
            state.retarget(gamma)
    if progress.due(final=True):
        progress.report(used(), state.max_violation, dual=-state.objective(),
                        hits=cache.n_hits, misses=cache.n_misses, final=True,
                        extra=f"outer {n_outer} |Σβ̄| {r_max:.1e}")
    progress.close()
    if code in (BUDGET, STALLED):
        warn_not_converged("s2do_bias", STATUS[code], f"max_iter={budget} iterations",
                           f"with a KKT violation of {state.max_violation:.3e} > tol={tol:g}")
    status = STATUS[code]
    if verified is None:
        if code == DONE:
            status = "max_iter"
            warn_not_converged("s2do_bias", status, f"{MAX_OUTER} outer iterations",
                               f"with an equality residual of {r_max:.3e}")
        # Best effort: feasible α, scores of the user's kernel.
        F = state.scores() - rho * residual[None, :]
        repaired = _repaired(problem, cache, rho, alpha, F)
        alpha_out, F = (alpha, F) if repaired is None else repaired
    else:
        alpha_out, F = verified
    alpha[...] = alpha_out
    elapsed = clock()
    certified, certify_time = None, 0.0
    if certify:
        tic = time.perf_counter()
        beta = problem.beta(alpha)
        certified, covered = cache.cached_matmul(beta)
        certified -= rho * beta[covered].sum(axis=0)[None, :]
        certified += problem.kernel.matmul(np.where(covered[:, None], 0.0, beta))
        if problem.has_shift:
            certified += problem.kernel_shift[:, None] * beta
        certify_time = time.perf_counter() - tic
    return DualSolution(
        alpha=alpha,
        b=projector @ b,
        status=status,
        n_iter=used(),
        time=elapsed,
        n_kernel_evaluations=int(cache.n_kernel_evaluations) + handover.kernel_evaluations,
        solver="s2do_bias",
        scores=F,
        certified_scores=certified,
        info={
            "max_violation": float(state.max_violation),
            "outer": n_outer,
            "rho": rho,
            "equality_residual": r_max,
            "n_checks": n_checks,
            "rho_growths": n_growths,
            "outer_history": history,
            "n_steps": counters.total(state, "n_steps"),
            "n_threads": threads,
            "n_serial_switches": watch.n_serial,
            "cache_hits": int(cache.n_hits),
            "cache_misses": int(cache.n_misses),
            "cache_rows": int(cache.capacity),
            "certify_time": certify_time,
            "finish_time": handover.time,
        },
    )


class _MultiplierSteps:
    """The quasi-Newton multiplier steps b ← b + H r (module docstring, "The multiplier
    step"): H starts at ρ times the projector onto the multipliers' space."""

    def __init__(self, projector: np.ndarray, rho: float):
        self.projector = projector
        self.reset(rho)

    def reset(self, rho: float) -> None:
        """Start again from ρI, with no secant pair."""
        self.H = rho * self.projector
        # (b, r) of the last outer iteration, for the secant pair
        self.last: tuple[np.ndarray, np.ndarray] | None = None
        self.scaled = False     # whether H has had its first update (which sets its scale)

    def observe(self, b: np.ndarray, residual: np.ndarray, rose: bool, rho: float) -> None:
        """Take the secant pair of the last two outer iterations into H; start again from
        ρI when the residual rose (the secant model misled)."""
        if self.last is not None:
            if rose:
                self.reset(rho)
            else:
                updated = _bfgs_update(self.H, b - self.last[0], self.last[1] - residual,
                                       None if self.scaled else self.projector)
                if updated is not self.H:
                    self.H, self.scaled = updated, True
        self.last = (b.copy(), residual.copy())

    def step(self, residual: np.ndarray, plain: np.ndarray, rho: float) -> np.ndarray:
        """H r, or the plain step ρr (and H starts again) when H r is not finite or more
        than QN_STEP_MAX times longer: a secant pair spoilt by the inner solves'
        tolerance can make H huge, and the useful steps are a few times ρr."""
        quasi = self.H @ residual
        if np.all(np.isfinite(quasi)) and (np.linalg.norm(quasi)
                                           <= QN_STEP_MAX * np.linalg.norm(plain)):
            return quasi
        self.reset(rho)
        return plain


def _bfgs_update(H: np.ndarray, s: np.ndarray, y: np.ndarray,
                 initial: np.ndarray | None = None) -> np.ndarray:
    """H after the BFGS update of an inverse Hessian with the secant pair (s, y).

    Here H approximates the inverse of −∇²φ, φ the concave dual function of the
    multipliers, s = Δb and y = −Δr (r = ∇φ, the equality residual): the
    updated H is symmetric, maps y to s, and stays positive definite on the
    span of the steps.  With ``initial`` (the projector onto the multipliers'
    space) H is first replaced by (sᵀy / yᵀy)·initial, the usual scaling of a
    quasi-Newton method's first matrix by the curvature seen along s.  H
    itself is returned when sᵀy is not positive (φ is concave, so only
    round-off and the inner solves' tolerance make it so).
    """
    sy = float(s @ y)
    if not (np.isfinite(sy) and sy > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y))):
        return H
    if initial is not None:
        H = sy / float(y @ y) * initial
    Hy = H @ y
    return (H - (np.outer(s, Hy) + np.outer(Hy, s)) / sy
            + (1.0 + float(y @ Hy) / sy) * np.outer(s, s) / sy)


def _repaired(problem: DualProblem, cache, rho: float, alpha: np.ndarray,
              F: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """α with the equality residual repaired and its scores F̄ = K'β̄.

    ``F`` are the scores of ``alpha`` (user's kernel); the examples the repair
    (:func:`msvm.diagnostics.repair_equality`) moves get their rows from
    ``cache`` (rows of k + ρ, hence the correction by ρ Σ Δβ).  None when the
    repair fails.
    """
    out = repair_equality(problem, alpha, rtol=EQUALITY_RTOL, bounded=True)
    if out is None:
        return None
    moved = np.flatnonzero(np.any(out != alpha, axis=1))
    if len(moved) == 0:
        return out, F
    dbeta = np.zeros_like(F)
    dbeta[moved] = class_coefficients(out[moved] - alpha[moved], problem.y[moved], problem.nu)
    # Rows of k + ρ: from the cache where they are, else computed.
    change, covered = cache.cached_matmul(dbeta)
    missing = moved[~covered[moved]]
    for start in range(0, len(missing), _ROW_CHUNK):
        rows = missing[start:start + _ROW_CHUNK]
        change += cache.rows(rows).T @ dbeta[rows]
    F = F + change - rho * dbeta.sum(axis=0)[None, :]
    if problem.has_shift:
        F[moved] += problem.kernel_shift[moved, None] * dbeta[moved]
    return out, F


def _verify(problem: DualProblem, cache, rho: float, alpha: np.ndarray, F: np.ndarray,
            tol: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(α, F̄) repaired if the estimator's certificate will find it within ``tol``, else None.

    The certificate (:func:`msvm.diagnostics.diagnose`) takes b from the KKT
    conditions of the free variables (:func:`msvm.diagnostics.bias_from_kkt`) and
    measures the largest KKT violation with it; the same functions decide here.
    """
    repaired = _repaired(problem, cache, rho, alpha, F)
    if repaired is None:
        return None
    out, F = repaired
    # Relative to the α present, as in the repair (not to C max wᵢ).
    scale = float(out.max(initial=0.0))
    if np.max(np.abs(problem.equality_residual(out)), initial=0.0) > EQUALITY_RTOL * scale:
        return None
    grad = problem.gradient(out, F)
    b, _ = bias_from_kkt(problem, out, grad, F)
    G = np.where(problem.active, grad + problem.margin_terms(b), 0.0)
    return (out, F) if kkt_violation(problem, out, G) <= VERIFY_FRACTION * tol else None
