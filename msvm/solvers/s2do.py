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

import numpy as np

from msvm._progress import SolverProgress
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import TIME_SLICE, StallWatch, _qp, check_tol
from msvm.solvers._common import (
    BUDGET,
    STALLED,
    STATUS,
    TIME_UP,
    Clock,
    ContentionWatch,
    Counters,
    blas_limited,
    check_trace,
    drive,
    fill_gram,
    float32,
    iteration_budget,
    machine_tables,
    n_threads,
    start_point,
    warn_not_converged,
)
from msvm.solvers._curve import BuildUpCurve

SUPPORTS_BIAS = False
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "cache_size", "cache_dtype", "n_jobs",
                     "certify"})
STOPPING_RULE = "kkt_violation"
#: The switches of :func:`solve` that only make the loop faster (all False: Algorithm 3).
ACCELERATIONS = ("shrinking", "fast", "lazy", "focus", "block_steps", "prefetch",
                 "slot_partner", "finish")
#: The active-set finish (``finish``) starts once the loop has made this many passes per
#: variable without converging (:func:`msvm.solvers._qp.finish_after`).
FINISH_AFTER = 20
#: ``solve`` takes ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = True
#: Seconds of an empty parallel region above which the OpenMP threads are taken to sleep
#: between regions (:func:`msvm._core._s2do.regions_slow`): spinning threads join one in
#: about a microsecond, sleeping ones in tens.
SLOW_REGION = 5e-6


#: The compiled loop's counters reported in a solution's info (summed over the states of
#: one solve).
_COUNTERS = ("n_iter", "n_steps", "n_unshrink", "n_focus", "n_parallel_iter", "n_cold",
             "n_rescan")


def check_block_size(block_size) -> None:
    """The ``ValueError`` of a ``block_size`` the compiled loop cannot take."""
    from msvm._core._s2do import MAX_BLOCK_SIZE

    if not (isinstance(block_size, (int, np.integer)) and 2 <= block_size <= MAX_BLOCK_SIZE):
        raise ValueError(f"block_size must be an integer from 2 to {MAX_BLOCK_SIZE}, "
                         f"got {block_size!r}.")


def start_threads(state, watch) -> None:
    """The threads of a new state: one while ``watch`` (a
    :class:`~msvm.solvers._common.ContentionWatch`) holds the loop on one thread, else all
    of them.  With the thread tuning on, the parallel regions are then probed
    (:func:`msvm._core._s2do.regions_slow`; only with the cores free, where a region is
    quick unless the threads sleep): where one takes over SLOW_REGION, the tuning starts
    by timing one thread against all instead of running all threads for its first
    iterations.
    """
    from msvm._core._s2do import regions_slow

    if watch.serial:
        state.set_threads(1)
    elif (state.tune_threads and state.n_threads > 1
          and regions_slow(state.n_threads, SLOW_REGION)):
        state.slow_regions = True
        state.set_threads(state.n_threads)


def configure(state, *, complete_at: int = 0, tune_threads: bool = True, lazy: bool = True,
              block_steps: bool = True, block_size: int = 8, focus: bool = True,
              prefetch: bool = True, slot_partner: bool = True) -> None:
    """Set the loop switches of :func:`solve` (documented there) on a compiled ``S2DOState``,
    and the ``complete_at`` that :func:`~msvm.solvers._common.fill_gram` returned."""
    state.complete_at = int(complete_at)
    state.tune_threads = bool(tune_threads)
    state.lazy_enabled = bool(lazy)
    state.block_steps = bool(block_steps)
    state.block_size = int(block_size)
    state.prefetch = bool(prefetch)
    state.slot_partner = bool(slot_partner)
    if not focus:
        state.focus_size = 0


@blas_limited
def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, shrinking: bool = True, fast: bool = True,
          blas_threads: int | None = 1, n_jobs: int | None = None,
          cache_dtype: str = "float64", trace: float | None = None,
          tune_threads: bool = True, lazy: bool = True, block_steps: bool = True,
          block_size: int = 8, focus: bool = True, prefetch: bool = True,
          slot_partner: bool = True, finish: bool = True, test_set=None,
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
        scaled back to C (for the M-SVM², an example's α longer than any optimum's is
        scaled back to that length: :func:`~msvm.solvers._common.optimum_radius`),
        and the scores F are rebuilt from it (one Gram row
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
        BLAS threads for the whole solve, Gram-row products included
        (default 1; None leaves the BLAS library's setting).  A row is one ``dgemv``
        of m × d, too small to share: OpenBLAS's worker threads then
        busy-wait between calls and take the core the loop runs on (the
        benchmark notes, ``benchmarks/README.md``, give the cost).
    n_jobs : int or None
        OpenMP threads for the Gram rows and the per-step passes over the
        examples (joblib's convention: None means 1, −1 all cores; at most
        the OpenMP runtime's limit, see :func:`~msvm.solvers._common.n_threads`).
        The result does not depend on it, only the speed does.
    tune_threads : bool
        With ``n_jobs`` > 1 (default True): time one thread against all
        every few thousand iterations and use the faster for the passes, and
        run everything on one thread while other processes keep the cores
        busy (:class:`~msvm.solvers._common.ContentionWatch`;
        ``info["n_serial_switches"]`` counts its switches).  False always uses
        all threads.
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
        each against O(m) for a pass, so far fewer passes are needed
        (``benchmarks/README.md``).  False: exactly one 2-D step per iteration (seed
        004, Algorithm 3).
    block_size : int
        Examples per block with ``block_steps``, 2 to
        :data:`msvm._core._s2do.MAX_BLOCK_SIZE` (8, the default).
    focus : bool
        Allow the focus rounds described under ``lazy`` (default).
    prefetch : bool
        Compute Gram rows ahead of their requests (default): the whole matrix
        before the loop when the cache holds it (half the kernel values, by
        symmetry; :func:`~msvm.solvers._common.fill_gram`; with few features, all
        rows still missing once half are cached instead), else a missing row
        in one block with those of the most violating examples whose rows are
        not cached yet (one ``dgemm`` instead of several ``dgemv``), while the
        cache has never-used slots.
    slot_partner : bool
        Fast path, sum-to-zero machines (LLW, M-SVM²): the second-variable search
        also reads, in every example, the variable of the first variable's slot,
        the one the first is coupled to most strongly (M = δ − 1/Q), besides the
        example's most violating variable (default).  Other machines ignore it.
    finish : bool
        Small problems (at most :data:`~msvm.solvers._qp.FINISH_MAX_VARIABLES`
        variables): when the loop has not converged after :data:`FINISH_AFTER`
        passes per variable (counting at least 500 variables), hand its point
        to :func:`~msvm.solvers._qp.finish` (the primal active-set method on
        the dense dual: one solve per face, the objective never rises), then
        go on with the loop from its answer, whose exact stopping test
        certifies it (usually without a further step), or from the loop's own
        point if the finish ran out of its allowance (counted work, not time:
        :class:`~msvm.solvers._qp.Work`).  Coordinate steps crawl where the
        free variables' Hessian is singular or badly conditioned (a linear
        kernel of low rank, LLW); the finish does not (default).
        ``info["finish_time"]`` is its time.
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
    from msvm._core._s2do import S2DOState

    if problem.fit_intercept:
        raise ValueError("Solver 's2do' cannot handle a bias; use fit_intercept=False.")
    check_trace(trace, test_set)
    curve = None if trace is None else BuildUpCurve(trace, problem.kernel, test_set)
    clock = Clock(curve)
    tol = check_tol(tol)
    budget = iteration_budget(max_iter, problem.n_samples)
    # Options first: the state's constructor computes Gram rows for a warm start.
    check_block_size(block_size)
    alpha = start_point(problem, warm_start)
    threads = n_threads(n_jobs)
    cache = problem.kernel.cache(cache_size, float32=float32(cache_dtype), n_threads=threads)
    tables = machine_tables(problem.machine, fast=fast)

    def new_state():
        """The compiled loop's state from α (the rows of its non-zero examples computed)."""
        state = S2DOState(
            cache, problem.y, alpha, C=problem.capacity, shift=problem.kernel_shift,
            tol=tol, centred=tables.centred, shrinking=bool(shrinking), fast=tables.fast,
            n_threads=threads, **tables.shared(),
        )
        configure(state, complete_at=complete_at, tune_threads=tune_threads, lazy=lazy,
                  block_steps=block_steps, block_size=block_size, focus=focus,
                  prefetch=prefetch, slot_partner=slot_partner)
        return state

    complete_at = fill_gram(cache, threads, prefetch, watch=tune_threads)
    state = new_state()
    counters = Counters(_COUNTERS)
    handover = _qp.Handover(problem, FINISH_AFTER, finish)
    points = []

    def model():
        beta = problem.beta(alpha)
        sv = np.flatnonzero(np.any(beta != 0, axis=1))
        kernel = problem.kernel
        return (sv if kernel.is_precomputed or callable(kernel.name) else kernel.X[sv]), beta[sv]

    def record():
        assert curve is not None  # called with a trace only
        elapsed = clock()
        dual = -state.objective()
        points.append((elapsed, dual, state.max_violation, used()))
        curve.record(elapsed, cache.n_kernel_evaluations + handover.kernel_evaluations, dual,
                     used(), model=model, max_violation=float(state.max_violation))

    slice_ = min(TIME_SLICE, np.inf if trace is None else float(trace))
    progress = SolverProgress("s2do", tol, enabled=verbose)
    watch = ContentionWatch(threads if tune_threads else 1, lambda n: state.set_threads(n),
                            slice_)
    start_threads(state, watch)

    def count(name: str) -> int:
        """A counter of the loop, over every state it ran on."""
        return counters.total(state, name)

    def used() -> int:
        return count("n_iter")

    def run() -> int:
        return state.run(max(handover.cap(budget - used(), used()), 0), watch.slice_length)

    def to_finish(code: int) -> bool:
        return handover.due(code, used(), budget)

    def after(code: int) -> None:
        watch.after_slice()
        if trace is not None:
            record()
        final = code != TIME_UP and not to_finish(code)
        if progress.due(final=final):
            progress.report(used(), state.max_violation, dual=-state.objective(),
                            hits=cache.n_hits, misses=cache.n_misses, final=final,
                            extra=f"active {state.n_work}/{problem.n_samples}")

    if trace is not None:
        record()
    code = drive(run, after, StallWatch(state.objective))
    if to_finish(code):
        state.settle()
        if handover.run(problem, alpha, tol, used()):
            # A new state on the finish's α; else the loop goes on as it was.
            counters.retire(state)
            state = new_state()
            start_threads(state, watch)
        code = drive(run, after, StallWatch(state.objective))
    state.settle()
    progress.close()
    if code in (BUDGET, STALLED):
        warn_not_converged("s2do", STATUS[code], f"max_iter={budget} iterations",
                           f"with a KKT violation of {state.max_violation:.3e} > tol={tol:g}")
    elapsed = clock()
    certified, certify_time = None, 0.0
    if certify:
        tic = time.perf_counter()
        certified = problem.scores(problem.beta(alpha), cache=cache)
        certify_time = time.perf_counter() - tic
    return DualSolution(
        alpha=alpha,
        b=np.zeros(problem.n_classes),
        status=STATUS[code],
        n_iter=used(),
        time=elapsed,
        n_kernel_evaluations=int(cache.n_kernel_evaluations) + handover.kernel_evaluations,
        solver="s2do",
        scores=state.scores(),
        certified_scores=certified,
        info={
            "max_violation": float(state.max_violation),
            "n_steps": count("n_steps"),
            "n_unshrink": count("n_unshrink"),
            "n_focus": count("n_focus"),
            "n_threads": threads,
            "n_parallel_iter": count("n_parallel_iter"),
            "n_serial_switches": watch.n_serial,
            "cache_hits": int(cache.n_hits),
            "cache_misses": int(cache.n_misses),
            "cache_prefetched": int(cache.n_prefetched),
            "cache_prefetch_unused": int(cache.n_prefetch_unused),
            "cold_visits": count("n_cold"),
            "cold_rescans": count("n_rescan"),
            "cache_rows": int(cache.capacity),
            "certify_time": certify_time,
            "finish_time": handover.time,
            **({"trace": points, "curve": curve.as_dict(), "curve_overhead": curve.overhead}
               if curve is not None else {}),
        },
    )
