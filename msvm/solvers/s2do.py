"""Batch S2DO solver for the bias-free machines (seed 004, ch. 3 and §5.2).

Sequential two-dimensional optimisation: working sets of two variables, the
first by largest KKT violation, the second by the largest second-order gain
(Algorithm 4) computed with the candidate's own gradient, the pair optimised
exactly over its box (Algorithm 5) or, for two variables sharing a max-loss
slack (Crammer–Singer), over its triangle (Algorithm 11).  The loop runs in
Cython without the GIL (:mod:`msvm._core._s2do`, whose docstring explains
the score bookkeeping); this module validates, builds the machine tables the
loop reads, and reports progress.

``tol`` is the largest KKT violation allowed, in gradient units of the
original formulation (BENCHMARKS.md); :func:`msvm.diagnostics.diagnose`
measures the same quantity (``kkt_violation``) and never exceeds the
solver's own value at the stopping point.

The core (selection, 2-D step, stopping rule) is seed 004's Algorithm 3;
every acceleration around it is a switch of :func:`solve` named in
:data:`ACCELERATIONS`, and with all of them off the loop is Algorithm 3 as
written (one 2-D step per pass over all examples, exact Algorithm 4 over
every variable).  None changes the stopping test, so all reach the same
optimum (``tests/test_s2do_options.py`` checks every combination).
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import numpy as np

from msvm._progress import SolverProgress
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import STALL_SECONDS, TIME_SLICE, StallWatch, check_tol, default_max_iter
from msvm.solvers._curve import BuildUpCurve

SUPPORTS_BIAS = False
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "cache_size", "cache_dtype", "n_jobs",
                     "certify"})
STOPPING_RULE = "kkt_violation"
#: The switches of :func:`solve` that only make the loop faster (all False: Algorithm 3).
ACCELERATIONS = ("shrinking", "fast", "lazy", "focus", "block_steps", "prefetch")

_STATUS = {0: "optimal", 1: "max_iter", 2: "running", 3: "stalled"}


def _tables(problem: DualProblem):
    """The machine's arrays in the layout the Cython loop reads."""
    machine = problem.machine
    Q, P = machine.n_classes, machine.n_slots
    nu_bar = problem.nu  # centred when sum-to-zero
    M = np.einsum("ypc,zqc->ypzq", nu_bar, nu_bar).reshape(Q * P, Q * P)
    nu = machine.nu * machine.active[:, :, None]
    nz_count = np.count_nonzero(nu, axis=2).astype(np.int32)
    nz_col = np.zeros((Q, P, Q), dtype=np.int32)
    nz_val = np.zeros((Q, P, Q))
    for y in range(Q):
        for p in range(P):
            cols = np.flatnonzero(nu[y, p])
            nz_col[y, p, : len(cols)] = cols
            nz_val[y, p, : len(cols)] = nu[y, p, cols]
    nu_mean = nu.mean(axis=2) if machine.sum_to_zero else np.zeros((Q, P))
    slack = np.where(machine.active, machine.slack, -1).astype(np.int32)
    if machine.loss != "hinge":
        slack[:] = -1
    R = max(machine.n_slacks, 1)
    group_size = np.zeros((Q, R), dtype=np.int32)
    for y in range(Q):
        for p in range(P):
            if slack[y, p] >= 0:
                group_size[y, slack[y, p]] += 1
    return dict(
        M=np.ascontiguousarray(M),
        gamma=np.ascontiguousarray(np.where(machine.active, machine.gamma, 0.0)),
        active=np.ascontiguousarray(machine.active, dtype=np.uint8),
        slack=np.ascontiguousarray(slack),
        group_size=group_size,
        nz_count=nz_count,
        nz_col=nz_col,
        nz_val=nz_val,
        nu_mean=np.ascontiguousarray(nu_mean),
    )


def _fast_tables(problem: DualProblem, tables: dict):
    """Tables of the fast path, or None when the machine does not have its structure.

    The fast path needs every active constraint of class y to read
    ν_{y,s,·} = u_y − e_s (slot s compares class s with a per-class
    combination u_y: WW, CS, LLW, M-SVM²), and the slack groups to be either
    all singletons (sum-loss) or one group of all slots (max-loss), and Q ≤ 64.
    """
    machine = problem.machine
    Q, P = machine.n_classes, machine.n_slots
    if P != Q or P > 64:   # the solver keeps 64-bit slot masks per example
        return None
    nu = machine.nu * machine.active[:, :, None]
    eye = np.eye(Q)
    u = np.zeros((Q, Q))
    for y in range(Q):
        slots = np.flatnonzero(machine.active[y])
        if len(slots) == 0:
            continue
        rows = nu[y, slots] + eye[slots]
        if not np.allclose(rows, rows[0], rtol=0, atol=1e-15):
            return None
        u[y] = rows[0]
    sizes = tables["group_size"]
    if np.any(sizes > 1):
        n_active = machine.active.sum(axis=1)
        if sizes.shape[1] != 1 or np.any(sizes[:, 0] != n_active):
            return None
    u_cnt = np.count_nonzero(u, axis=1).astype(np.int32)
    u_col = np.zeros((Q, Q), dtype=np.int32)
    u_val = np.zeros((Q, Q))
    for y in range(Q):
        cols = np.flatnonzero(u[y])
        u_col[y, : len(cols)] = cols
        u_val[y, : len(cols)] = u[y, cols]
    kappa = u.mean(axis=1) - 1.0 / Q if machine.sum_to_zero else np.zeros(Q)
    return dict(u_cnt=u_cnt, u_col=u_col, u_val=u_val, kappa=np.ascontiguousarray(kappa))


def _start(problem: DualProblem, warm_start) -> np.ndarray:
    """A feasible α to start from: zeros, or the warm start made feasible.

    Negative entries are clipped, slack groups over C scaled back to C (the
    shape of a solution for a larger C is kept), and with a bias the result is
    projected onto the equality constraints too
    (:func:`msvm.diagnostics.project_feasible`).
    """
    if warm_start is None:
        return problem.zeros()
    alpha = warm_start.alpha if isinstance(warm_start, DualSolution) else warm_start
    alpha = np.array(alpha, dtype=np.float64, order="C")
    if alpha.shape != (problem.n_samples, problem.n_slots):
        raise ValueError(
            f"warm_start has shape {alpha.shape}, expected {(problem.n_samples, problem.n_slots)}."
        )
    alpha = np.where(problem.active, np.maximum(alpha, 0.0), 0.0)
    if problem.machine.loss == "hinge":
        # Scale every over-full slack group back to C (e.g. after decreasing C).
        sums = problem.slack_sums(alpha)
        for r in range(problem.machine.n_slacks):
            member = problem.slack == r
            factor = np.where(sums[:, r] > problem.C, problem.C / np.maximum(sums[:, r], 1e-300),
                              1.0)
            alpha = np.where(member, alpha * factor[:, None], alpha)
    if problem.fit_intercept:
        from msvm.diagnostics import project_feasible

        alpha = project_feasible(problem, alpha)
    return np.ascontiguousarray(alpha)


def _n_threads(n_jobs) -> int:
    """Threads for ``n_jobs`` (joblib's convention: None → 1, −1 → all cores)."""
    from joblib import effective_n_jobs

    if n_jobs is not None and (not isinstance(n_jobs, (int, np.integer)) or isinstance(n_jobs, bool)
                               or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}.")
    return max(1, int(effective_n_jobs(n_jobs)))


def _float32(cache_dtype) -> bool:
    """Whether ``cache_dtype`` asks for single-precision Gram rows."""
    if cache_dtype in ("float64", np.float64):
        return False
    if cache_dtype in ("float32", np.float32):
        return True
    raise ValueError(f"cache_dtype must be 'float64' or 'float32', got {cache_dtype!r}.")


@contextmanager
def _blas_threads(n):
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(n), user_api="blas"):
        yield


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, shrinking: bool = True, fast: bool = True,
          blas_threads: int | None = 1, n_jobs: int | None = None,
          cache_dtype: str = "float64", trace: float | None = None,
          tune_threads: bool = True, lazy: bool = True, block_steps: bool = True,
          block_size: int = 8, focus: bool = True, prefetch: bool = True, test_set=None,
          certify: bool = False) -> DualSolution:
    """Solve the bias-free dual with S2DO.

    Parameters
    ----------
    problem : DualProblem
        Must have ``fit_intercept=False``.
    tol : float, optional
        Largest KKT violation at the solution, in gradient units (default 1e-3;
        at least :data:`msvm.solvers.TOL_FLOOR`).
    max_iter : int, optional
        Iteration cap (default :func:`msvm.solvers.default_max_iter`); reaching
        it gives status ``"max_iter"`` and a
        :class:`~sklearn.exceptions.ConvergenceWarning`.  The loop also stops,
        with status ``"stalled"``, when the dual objective has not increased
        for :data:`msvm.solvers.STALL_SECONDS`.  An iteration is
        one working set and one pass over the examples (with ``block_steps``
        it may hold several 2-D steps; ``info["n_steps"]`` counts those).
    warm_start : DualSolution or ndarray of shape (m, P), optional
        Starting point, e.g. the solution for a neighbouring C on a path over
        C: negative entries are clipped to 0, slack groups over the new C are
        scaled back to C, and the scores F are rebuilt from it (one Gram row
        per example with a non-zero coefficient).
    verbose : bool
        Show the live progress line of :class:`msvm._progress.SolverProgress`
        (iterations, violation, dual objective, working-set size, cache hit
        rate, time left) on stderr, at most once per second.
    cache_size : float
        Gram-row cache budget in MB.
    shrinking : bool
        Remove examples whose variables cannot move from the working set.
    fast : bool
        Use the structured bookkeeping of :mod:`msvm._core._s2do` (cached
        per-example extremes, second variable among each example's most
        violating one) when the machine allows it; ``False`` forces the
        generic loop (exact Algorithm 4 over all variables, O(m·P) per step).
    blas_threads : int or None
        BLAS threads for the Gram-row products while the loop runs (default
        1; None leaves the BLAS library's setting).  A row is one ``dgemv``
        of m × d, too small to share: OpenBLAS's worker threads then
        busy-wait between calls and take the core the loop runs on (measured
        on usps, m = 2000: 12.7 s with the default threads, 1.8 s with one).
    n_jobs : int or None
        OpenMP threads for the Gram rows and the per-step passes over the
        examples (joblib's convention: None means 1, −1 all cores).  The
        result does not depend on it; the loop falls back to one thread for
        as long as more threads are measured to be slower (busy cores).
    tune_threads : bool
        With ``n_jobs`` > 1, time one thread against all every few thousand
        iterations and use the faster (default); False always uses all.
    lazy : bool
        Fast path: leave examples whose violation bound stays well below the
        largest violation un-refreshed until it comes near (default; paused
        automatically while it does not pay, see :mod:`msvm._core._s2do`).
        While cold visits are off or paused and every Gram row is cached, the
        most violating quarter of the working set (128 to 1 024 examples) is
        solved alone at a time ("focus", ``info["n_focus"]`` rounds).  The
        stopping test is exact either way.
    block_steps : bool
        After each pair step, go on with 2-D steps on the variables of a block
        of examples -- the pair's two and the most violating examples of the
        last pass whose Gram rows are cached, ``block_size`` in all -- (first
        variable by violation, second by Algorithm 4 within the block) until
        their largest violation falls below a tenth of where it started,
        before the pass over all examples (default).  Those steps cost O(P)
        each against O(m) for a pass: usps-llw needs 5 400 passes instead of
        430 000.  False: exactly one 2-D step per iteration (seed 004,
        Algorithm 3).
    block_size : int
        Examples per block with ``block_steps``, 2 to
        :data:`msvm._core._s2do.MAX_BLOCK_SIZE` (8, the default).
    focus : bool
        Allow the focus rounds described under ``lazy`` (default).
    prefetch : bool
        A missing Gram row is computed in one block with those of the most
        violating examples whose rows are not cached yet (one ``dgemm``
        instead of several ``dgemv``), while the cache has never-used slots
        (default).
    cache_dtype : {'float64', 'float32'}
        Storage of the cached Gram rows; 'float32' holds twice as many rows
        per MB, and the solver then optimises the dual of the float32-rounded
        Gram matrix (entries within 6e-8 relative of the exact ones).
    trace : float, optional
        Record ``(seconds, dual objective, max violation, iterations)`` about
        every ``trace`` seconds (and at the start and the end) in
        ``info["trace"]``, for convergence plots.  Each point costs one
        O(m·P) objective evaluation.  The same points also go to a build-up
        curve (:class:`~msvm.solvers._curve.BuildUpCurve`, ``info["curve"]``:
        time, kernel evaluations, dual objective, iterations), the curve the
        online solver records, so both can be drawn together.
    test_set : (X_test, y_test), optional
        With ``trace``, also record the test error of the current model at
        every point (labels coded 0 .. Q−1).  The time spent on it is left out
        of the curve's time axis and of ``time``.
    certify : bool, default=False
        Recompute the scores from β in float64 at the end
        (``certified_scores``), reusing the float64 Gram rows still in the
        cache; its time is ``info['certify_time']``, not part of ``time``.

    Returns
    -------
    DualSolution
    """
    from msvm._core._s2do import MAX_BLOCK_SIZE, S2DOState

    if problem.fit_intercept:
        raise ValueError("Solver 's2do' cannot handle a bias; use fit_intercept=False.")
    start = time.perf_counter()
    tol = check_tol(tol)
    budget = default_max_iter(problem.n_samples) if max_iter is None else int(max_iter)
    # Options first: the state's constructor computes Gram rows for a warm start.
    if not (isinstance(block_size, (int, np.integer)) and 2 <= block_size <= MAX_BLOCK_SIZE):
        raise ValueError(f"block_size must be an integer from 2 to {MAX_BLOCK_SIZE}, "
                         f"got {block_size!r}.")
    if trace is not None and not trace > 0:
        raise ValueError(f"trace must be a positive number of seconds, got {trace!r}.")
    if test_set is not None and trace is None:
        raise ValueError("test_set needs trace (the interval of the curve points).")
    alpha = _start(problem, warm_start)
    n_threads = _n_threads(n_jobs)
    cache = problem.kernel.cache(cache_size, float32=_float32(cache_dtype), n_threads=n_threads)
    C = problem.upper_bound
    tables = _tables(problem)
    with _blas_threads(blas_threads):  # the constructor computes the rows of a warm start
        state = S2DOState(
            cache, problem.y, alpha, C=float(C), shift=float(problem.kernel_shift), tol=tol,
            centred=bool(problem.machine.sum_to_zero), shrinking=bool(shrinking),
            fast=_fast_tables(problem, tables) if fast else None, n_threads=n_threads, **tables,
        )
    points = []
    curve = None if trace is None else BuildUpCurve(trace, problem.kernel, test_set)

    def model():
        beta = problem.beta(alpha)
        sv = np.flatnonzero(np.any(beta != 0, axis=1))
        kernel = problem.kernel
        return (sv if kernel.is_precomputed or callable(kernel.name) else kernel.X[sv]), beta[sv]

    def record():
        elapsed = time.perf_counter() - start - curve.overhead
        dual = -state.objective()
        points.append((elapsed, dual, state.max_violation, int(state.n_iter)))
        curve.record(elapsed, cache.n_kernel_evaluations, dual, state.n_iter, model=model,
                     max_violation=float(state.max_violation))

    slice_ = min(TIME_SLICE, np.inf if trace is None else float(trace))
    progress = SolverProgress("s2do", tol, enabled=verbose)
    stall = StallWatch(state.objective)
    state.tune_threads = bool(tune_threads)
    state.lazy = bool(lazy)
    state.block_steps = bool(block_steps)
    state.block_size = int(block_size)
    state.prefetch = bool(prefetch)
    if not focus:
        state.focus_size = 0
    n_start = state.n_iter
    if trace is not None:
        record()
    while True:
        remaining = budget - (state.n_iter - n_start)
        with _blas_threads(blas_threads):
            code = state.run(max(remaining, 0), slice_)
        if trace is not None:
            record()
        if progress.due(final=code != 2):
            progress.report(state.n_iter, state.max_violation, dual=-state.objective(),
                            hits=cache.n_hits, misses=cache.n_misses, final=code != 2,
                            extra=f"active {state.n_work}/{problem.n_samples}")
        if code != 2:
            break
        if stall.stalled():
            code = 3
            break
    progress.close()
    if code in (1, 3):
        from sklearn.exceptions import ConvergenceWarning

        reason = (f"at max_iter={budget} iterations" if code == 1 else
                  f"after its dual objective stopped increasing for {STALL_SECONDS:g} s "
                  "(round-off)")
        warnings.warn(
            f"s2do stopped {reason} with a KKT violation of {state.max_violation:.3e} > "
            f"tol={tol:g}.", ConvergenceWarning, stacklevel=2,
        )
    elapsed = time.perf_counter() - start - (curve.overhead if curve is not None else 0.0)
    certified, certify_time = None, 0.0
    if certify:
        tic = time.perf_counter()
        with _blas_threads(blas_threads):
            certified = problem.scores(problem.beta(alpha), cache=cache)
        certify_time = time.perf_counter() - tic
    return DualSolution(
        alpha=alpha,
        b=np.zeros(problem.n_classes),
        status=_STATUS[code],
        n_iter=int(state.n_iter),
        time=elapsed,
        n_kernel_evaluations=int(cache.n_kernel_evaluations),
        solver="s2do",
        scores=state.scores(),
        certified_scores=certified,
        info={
            "max_violation": float(state.max_violation),
            "n_steps": int(state.n_steps),
            "n_unshrink": int(state.n_unshrink),
            "n_focus": int(state.n_focus),
            "n_threads": n_threads,
            "n_parallel_iter": int(state.n_parallel_iter),
            "cache_hits": int(cache.n_hits),
            "cache_misses": int(cache.n_misses),
            "cache_prefetched": int(cache.n_prefetched),
            "cold_visits": int(state.n_cold),
            "cold_rescans": int(state.n_rescan),
            "cache_rows": int(cache.capacity),
            "certify_time": certify_time,
            **({"trace": points, "curve": curve.as_dict(), "curve_overhead": curve.overhead}
               if trace is not None else {}),
        },
    )
