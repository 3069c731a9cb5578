"""S2DO options: warm start, max_iter, verbose, trace, float32 cache, threads.

Each test checks an outcome against the reference solver or an exact
invariant: the warm-started optimum against cvxpy, bit-identical iterates
with 1 and 2 threads, float32 rows equal to the rounded float64 rows, the
dual objective never decreasing along the trace.
"""

import re
import time
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from msvm import MultiClassSVC
from msvm._core._kernel_cache import KernelCache
from msvm.diagnostics import diagnose
from msvm.solvers import _common, get_solver, s2do
from msvm.solvers._common import ContentionWatch

from problem_factory import JumpingClock, blobs, degenerate_llw, make_problem

TOL = 1e-6


def _rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("model", ["ww", "cs", "llw"])
def test_warm_start_path_over_C_matches_reference(model):
    """C = 1 → 2: the warm start reaches cvxpy's optimum, in fewer iterations for WW/CS.

    The iteration counts are compared with the cold visits and focus rounds
    off: those heuristics move a path by ±10% whatever its start (CS here:
    warm 1 227 against cold 1 168 with them, 1 135 against 1 389 without).
    (LLW at tol 1e-6 spends ~90 000 iterations in its slow final phase from
    either start, so its count is left unchecked: warm 93 616 vs cold 93 427.)
    """
    X, y = blobs(5, 4, 150, spread=2.0)
    first = s2do.solve(make_problem(model, X, y, C=1.0), tol=TOL)
    problem = make_problem(model, X, y, C=2.0)
    warm = s2do.solve(problem, tol=TOL, warm_start=first.alpha)
    assert warm.status == "optimal"
    if model != "llw":
        plain = dict(tol=TOL, lazy=False, focus=False)
        cold = s2do.solve(problem, **plain)
        warm_plain = s2do.solve(problem, warm_start=first.alpha, **plain)
        assert warm_plain.n_iter < cold.n_iter, (warm_plain.n_iter, cold.n_iter)
    reference = diagnose(problem, get_solver("cvxpy").solve(problem))
    assert _rel(diagnose(problem, warm).dual_objective, reference.dual_objective) <= 1e-6
    # Down the path (C = 2 → 0.5) the start is scaled into the smaller box first.
    smaller = make_problem(model, X, y, C=0.5)
    down = s2do.solve(smaller, tol=TOL, warm_start=warm)
    assert smaller.check_feasible(down.alpha, atol=1e-12)
    reference = diagnose(smaller, get_solver("cvxpy").solve(smaller))
    assert _rel(diagnose(smaller, down).dual_objective, reference.dual_objective) <= 1e-6


def test_estimator_warm_start_reuses_previous_fit():
    X, y = blobs(6, 3, 150, spread=2.0)
    clf = MultiClassSVC(model="cs", C=1.0, gamma=0.5, tol=TOL, warm_start=True).fit(X, y)
    cold_iter = MultiClassSVC(model="cs", C=2.0, gamma=0.5, tol=TOL).fit(X, y).n_iter_
    clf.set_params(C=2.0).fit(X, y)
    assert clf.n_iter_ < cold_iter
    reference = MultiClassSVC(model="cs", C=2.0, gamma=0.5, solver="cvxpy").fit(X, y)
    assert _rel(clf.solution_["dual_objective"], reference.solution_["dual_objective"]) <= 1e-6


def test_max_iter_warns_once_and_returns_a_feasible_point():
    X, y = blobs(1, 3, 120, spread=2.0)
    problem = make_problem("ww", X, y, C=1.0)
    with pytest.warns(ConvergenceWarning, match="max_iter=7"):
        solution = s2do.solve(problem, tol=TOL, max_iter=7)
    assert solution.status == "max_iter" and solution.n_iter == 7
    assert problem.check_feasible(solution.alpha)
    assert solution.info["max_violation"] > TOL
    # The estimator reports it once (its own warning, with the diagnostics).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MultiClassSVC(model="ww", C=1.0, gamma=0.5, max_iter=7).fit(X, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1 and "KKT residual" in messages[0]


def test_verbose_lines_and_trace(capsys):
    X, y = blobs(2, 4, 300, spread=2.5)
    problem = make_problem("llw", X, y, C=10.0)
    solution = s2do.solve(problem, tol=1e-5, verbose=True, trace=0.01)
    lines = capsys.readouterr().err.strip().splitlines()   # msvm._progress: stderr
    pattern = re.compile(r"s2do  \S+ s  iter (\d+)  KKT \S+ / tol 1\.0e-05  \[[#-]{20}\] +\d+%  "
                         r"dual \S+  cache \S+%  active \d+/300  (ETA .+|done)$")
    assert lines and all(pattern.match(line) for line in lines), lines
    # At most one line per second, plus the final one.
    assert len(lines) <= solution.time + 2
    assert int(pattern.match(lines[-1]).group(1)) == solution.n_iter
    assert lines[-1].endswith("done") and "[####################] 100%" in lines[-1]
    t, dual, viol, iters = np.array(solution.info["trace"]).T
    assert len(t) >= 2 and np.all(np.diff(t) >= 0) and np.all(np.diff(iters) >= 0)
    # A descent method: the dual objective (maximisation form) never decreases.
    assert np.all(np.diff(dual) >= -1e-12 * np.abs(dual[1:]))
    assert viol[-1] <= 1e-5
    assert dual[-1] == pytest.approx(diagnose(problem, solution).dual_objective, rel=1e-10)


def test_float32_cache_rows_and_optimum():
    X, y = blobs(3, 4, 200, spread=2.0)
    problem = make_problem("cs", X, y, C=5.0)
    mb = 64 * 200 * 8 / 2**20   # 64 float64 rows of 200
    k64 = problem.kernel.cache(mb)
    k32 = problem.kernel.cache(mb, float32=True)
    assert (k64.capacity, k32.capacity) == (64, 128) and k32.float32 and not k64.float32
    for i in (0, 57, 199, 57):
        row = k32.row(i)
        np.testing.assert_array_equal(row, k64.row(i).astype(np.float32).astype(np.float64))
    solution = s2do.solve(problem, tol=TOL, cache_dtype="float32", cache_size=mb)
    assert solution.status == "optimal"
    reference = diagnose(problem, get_solver("cvxpy").solve(problem))
    # The optimum of the rounded Gram matrix is within rounding of the exact one.
    assert _rel(diagnose(problem, solution).dual_objective, reference.dual_objective) <= 1e-6


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_two_threads_give_identical_iterates(model):
    X, y = blobs(4, 5, 700, spread=2.0)   # 3 chunks of the parallel loops
    problem = make_problem(model, X, y, C=2.0)
    one = s2do.solve(problem, tol=1e-4, n_jobs=1, cache_size=1.0)
    two = s2do.solve(problem, tol=1e-4, n_jobs=2, cache_size=1.0, tune_threads=False)
    assert two.info["n_threads"] == 2 and two.info["n_parallel_iter"] == two.n_iter
    assert one.n_iter == two.n_iter
    np.testing.assert_array_equal(one.alpha, two.alpha)
    np.testing.assert_array_equal(one.scores, two.scores)
    # The tuned run takes whichever thread count is faster: same iterates again.
    tuned = s2do.solve(problem, tol=1e-4, n_jobs=2, cache_size=1.0)
    np.testing.assert_array_equal(one.alpha, tuned.alpha)


def test_tuned_solve_starts_on_all_threads(monkeypatch):
    """With the cores free, the thread tuning first runs TUNE_COMMIT (8 192) iterations
    on all threads -- the passes over every example come first -- before it times one
    thread against them."""
    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: 1))
    monkeypatch.setattr(ContentionWatch, "_waited", staticmethod(lambda: 0.0))
    monkeypatch.setattr(s2do, "SLOW_REGION", np.inf)
    X, y = blobs(4, 5, 700, spread=2.0)
    solution = s2do.solve(make_problem("ww", X, y, C=2.0), tol=1e-4, n_jobs=2,
                          cache_size=1.0)
    assert 0 < solution.n_iter < 8192
    assert solution.info["n_parallel_iter"] == solution.n_iter


def test_slow_parallel_regions_start_the_tuning_on_one_thread(monkeypatch):
    """Where the OpenMP threads are slow to join a parallel region (every region is slower
    than a threshold of 0 s), the tuning first times TUNE_WINDOW (256) iterations on one
    thread instead of trusting all threads; the iterates stay those of one thread."""
    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: 1))
    monkeypatch.setattr(ContentionWatch, "_waited", staticmethod(lambda: 0.0))
    monkeypatch.setattr(s2do, "SLOW_REGION", 0.0)
    X, y = blobs(4, 5, 700, spread=2.0)
    problem = make_problem("ww", X, y, C=2.0)
    one = s2do.solve(problem, tol=1e-4, n_jobs=1, cache_size=1.0)
    slow = s2do.solve(problem, tol=1e-4, n_jobs=2, cache_size=1.0)
    assert slow.n_iter > 256
    assert slow.info["n_parallel_iter"] <= slow.n_iter - 256
    np.testing.assert_array_equal(one.alpha, slow.alpha)
    np.testing.assert_array_equal(one.scores, slow.scores)


@pytest.mark.parametrize("free", [0, 1])
def test_regions_are_probed_only_with_a_core_free(monkeypatch, free):
    """The probe runs once the contention watch starts the loop on all threads; with no
    core free the loop starts on one thread unprobed (every probe region would wait for
    the busy core)."""
    from msvm._core import _s2do as compiled

    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: free))
    monkeypatch.setattr(ContentionWatch, "_waited", staticmethod(lambda: 0.0))
    monkeypatch.setattr(ContentionWatch, "READING_PAUSE", 0.0)
    probes = []
    monkeypatch.setattr(compiled, "regions_slow",
                        lambda threads, threshold: probes.append(threads) or False)
    X, y = blobs(4, 5, 700, spread=2.0)
    solution = s2do.solve(make_problem("ww", X, y, C=2.0), tol=1e-4, n_jobs=2,
                          cache_size=1.0)
    assert probes == ([2] if free else [])
    assert solution.info["n_parallel_iter"] == (solution.n_iter if free else 0)


def test_region_probe_compares_with_its_threshold():
    """An empty region takes some time (slow against 0 s) and less than a second (not
    slow against 1 s); the probe refuses a thread count OpenMP cannot mean."""
    from msvm._core._s2do import regions_slow

    assert regions_slow(2, 0.0)
    assert not regions_slow(2, 1.0)
    with pytest.raises(ValueError, match="n_threads"):
        regions_slow(0, 1.0)


def _assert_same_certified_optimum(problem, first, second):
    """Both solutions optimal by their certificates, and of the same optimum: each dual
    is within its duality gap of it (cvxpy takes 30 s on these problems; the row-by-row
    path is checked against it elsewhere)."""
    reports = [diagnose(problem, solution) for solution in (first, second)]
    for solution, report in zip((first, second), reports, strict=True):
        assert solution.status == "optimal" and report.kkt_violation <= TOL
        assert report.duality_gap >= 0
    assert abs(reports[0].dual_objective - reports[1].dual_objective) \
        <= reports[0].duality_gap + reports[1].duality_gap


def test_a_cache_that_holds_every_row_is_filled_first(monkeypatch):
    """With room for the whole Gram matrix (m = 700: 3.9 MB) and as many features as
    FILL_FEATURES, S2DO computes it before the loop from its upper block trapezoids (rows
    in blocks of 256), no request misses, the iterates are the same on 1 and 2 threads;
    with prefetch off the same problem computes whole rows on request and reaches the
    same optimum."""
    monkeypatch.setattr(_common, "FILL_FEATURES", 2)
    X, y = blobs(4, 5, 700, spread=2.0)
    problem = make_problem("cs", X, y, C=2.0)
    one = s2do.solve(problem, tol=TOL, n_jobs=1, cache_size=8.0)
    two = s2do.solve(problem, tol=TOL, n_jobs=2, cache_size=8.0, tune_threads=False)
    assert one.n_kernel_evaluations == 256 * 700 + 256 * 444 + 188 * 188
    assert one.info["cache_misses"] == 0 and one.info["cache_hits"] > 0
    np.testing.assert_array_equal(one.alpha, two.alpha)
    by_rows = s2do.solve(problem, tol=TOL, cache_size=8.0, prefetch=False)
    assert by_rows.info["cache_misses"] > 0
    assert by_rows.n_kernel_evaluations == 700 * by_rows.info["cache_misses"]
    _assert_same_certified_optimum(problem, one, by_rows)


@pytest.mark.parametrize("spread, completed", [(1.0, True), (0.3, False)])
def test_a_low_dimensional_problem_completes_its_cache_once_half_is_requested(spread,
                                                                             completed):
    """With fewer features than FILL_FEATURES nothing is computed before the loop: rows
    come on request (in blocks), and once half of them are cached every missing row at
    once.  Overlapping classes (spread 1) ask for half the rows: all 700 are computed,
    each once; well separated ones (spread 0.3) for fewer than half: only those.  The
    iterates are the same on 1 and 2 threads, the optimum that of the row-by-row path."""
    X, y = blobs(4, 5, 700, spread=spread)
    assert X.shape[1] < _common.FILL_FEATURES
    problem = make_problem("ww", X, y, C=2.0)
    one = s2do.solve(problem, tol=TOL, n_jobs=1, cache_size=8.0)
    two = s2do.solve(problem, tol=TOL, n_jobs=2, cache_size=8.0, tune_threads=False)
    rows = one.info["cache_misses"] + one.info["cache_prefetched"]
    assert one.n_kernel_evaluations == 700 * rows
    assert (rows == 700) if completed else (rows < 350)
    np.testing.assert_array_equal(one.alpha, two.alpha)
    by_rows = s2do.solve(problem, tol=TOL, cache_size=8.0, prefetch=False)
    _assert_same_certified_optimum(problem, one, by_rows)


def test_a_cache_smaller_than_the_matrix_keeps_prefetching_into_used_slots():
    """With room for 100 of 700 rows, S2DO goes on computing rows in blocks once the
    cache is full (more rows prefetched than the cache holds), every row computed is
    counted, and it reaches the optimum of the row-by-row path."""
    X, y = blobs(4, 5, 700, spread=2.0)
    problem = make_problem("cs", X, y, C=2.0)
    mb = 100 * 700 * 8 / 2**20
    blocks = s2do.solve(problem, tol=TOL, cache_size=mb)
    by_rows = s2do.solve(problem, tol=TOL, cache_size=mb, prefetch=False)
    assert blocks.info["cache_rows"] == 100
    assert blocks.info["cache_prefetched"] > 100
    assert blocks.n_kernel_evaluations == 700 * (blocks.info["cache_misses"]
                                                 + blocks.info["cache_prefetched"])
    assert by_rows.info["cache_prefetched"] == 0
    _assert_same_certified_optimum(problem, blocks, by_rows)


@pytest.mark.parametrize("model", ["ww", "llw"])
def test_a_cache_that_never_fills_takes_the_path_of_one_that_holds_every_row(model):
    """With room for 350 of 700 rows the shrunk examples' scores wait while the cache
    has room, as with room for every row: well separated classes ask for under 200 rows,
    so the solve takes the same steps as with room for all 700 (it took 215 instead of
    328 on WW when a partial cache kept them exact from the start).  Overlapping
    classes fill the cache: their scores are rebuilt then and kept exact from there on,
    and the optimum is that of the full cache."""
    half = 350 * 700 * 8 / 2**20
    X, y = blobs(4, 5, 700, spread=0.3)
    problem = make_problem(model, X, y, C=2.0)
    full = s2do.solve(problem, tol=TOL, cache_size=8.0)
    partial = s2do.solve(problem, tol=TOL, cache_size=half)
    assert partial.info["cache_misses"] + partial.info["cache_prefetched"] < 350
    assert partial.n_iter == full.n_iter
    np.testing.assert_allclose(partial.alpha, full.alpha, rtol=0, atol=1e-12)
    X, y = blobs(4, 5, 700, spread=1.0)
    problem = make_problem(model, X, y, C=2.0)
    filled = s2do.solve(problem, tol=TOL, cache_size=half)
    assert filled.info["cache_misses"] + filled.info["cache_prefetched"] > 350
    _assert_same_certified_optimum(problem, filled, s2do.solve(problem, tol=TOL,
                                                               cache_size=8.0))


def test_busy_cores_switch_to_one_thread_with_identical_iterates(monkeypatch):
    """The contention watch (every slice measured as contended on all threads, and as free
    on one) takes the loop to one thread and back at every time slice; the iterates stay
    those of one thread."""
    X, y = blobs(4, 5, 700, spread=2.0)
    problem = make_problem("ww", X, y, C=2.0)
    one = s2do.solve(problem, tol=1e-6, n_jobs=1, cache_size=1.0)
    monkeypatch.setattr(ContentionWatch, "CONTENDED", -1.0)
    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: 1))
    monkeypatch.setattr(s2do, "TIME_SLICE", 1e-4)
    switched = s2do.solve(problem, tol=1e-6, n_jobs=2, cache_size=1.0)
    assert switched.info["n_serial_switches"] >= 2
    assert switched.info["n_parallel_iter"] < switched.n_iter
    np.testing.assert_array_equal(one.alpha, switched.alpha)
    np.testing.assert_array_equal(one.scores, switched.scores)


def test_contention_watch_follows_the_kernels_counters(monkeypatch):
    """All threads while a core is free, one thread from the slice in which the threads
    waited for a CPU, all threads again once a core is free; one thread from the start
    when no core is free at any of the start's readings, all threads when a later one
    finds a core free."""
    # What the watch reads, in its order (see ContentionWatch): free cores at the start
    # (again while none is free, up to READINGS times) and after a slice on one thread,
    # cumulative run-queue seconds around a slice on all.
    free = iter([1, 0, 1, 0, 0, 0, 0, 1])
    waited = iter([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: next(free)))
    monkeypatch.setattr(ContentionWatch, "_waited", staticmethod(lambda: next(waited)))
    calls = []
    watch = ContentionWatch(2, calls.append, 0.5)
    assert watch.enabled and not watch.serial and calls == []
    watch.after_slice()                 # no wait on all threads: they stay
    assert calls == []
    watch.after_slice()                 # the threads waited 1 s in microseconds: busy
    assert calls == [1] and watch.n_serial == 1
    watch.after_slice()                 # no core free: one thread still
    assert calls == [1]
    watch.after_slice()                 # free again
    assert calls == [1, 2] and watch.n_serial == 1
    monkeypatch.setattr(ContentionWatch, "READING_PAUSE", 0.0)
    busy = ContentionWatch(2, calls.append, 0.5)     # no core free at the start
    assert busy.serial and calls == [1, 2, 1]
    assert not ContentionWatch(1, calls.append, 0.5).enabled and calls == [1, 2, 1]
    moment = ContentionWatch(2, calls.append, 0.5)   # a core free at the second reading
    assert not moment.serial and calls == [1, 2, 1]
    assert next(free, None) is None                  # every reading taken, no more


def test_contention_watch_survives_a_failed_reading(monkeypatch):
    """A reading of the run-queue counters can fail (a thread exits between listing
    /proc/self/task and opening its schedstat): a slice without a reading at its start
    keeps the threads (it raised TypeError, float minus None), the next one is measured."""
    monkeypatch.setattr(ContentionWatch, "_free_cores", staticmethod(lambda: 1))
    waited = iter([0.0, None, 1.0, 1.0, 2.0])
    monkeypatch.setattr(ContentionWatch, "_waited", staticmethod(lambda: next(waited)))
    calls = []
    watch = ContentionWatch(2, calls.append, 0.5)
    assert watch.enabled and not watch.serial and watch.mark is None
    watch.after_slice()                 # no reading at the start: no change
    assert calls == [] and not watch.serial
    watch.after_slice()                 # waited 1 s since the last reading: busy
    assert calls == [1] and watch.n_serial == 1
    assert next(waited, None) is None


def test_contention_watch_sees_another_process_holding_a_core():
    """The real counters: while a spinning process runs, the watch never sees more free
    cores than the machine's less this thread's and the spinner's (other processes, such
    as another test worker, can only lower the count)."""
    import os
    import subprocess
    import sys

    if ContentionWatch._free_cores() is None or (os.cpu_count() or 1) < 2:
        pytest.skip("needs /proc and two cores")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)             # past its start-up
        assert spinner.poll() is None
        seen = [ContentionWatch._free_cores() for _ in range(50)]
    finally:
        spinner.kill()
        spinner.wait()
    assert max(seen) <= os.cpu_count() - 2


def test_kernel_rows_do_not_depend_on_threads():
    X = np.random.default_rng(0).normal(size=(1300, 7))
    one = KernelCache(X, 2, 0.3, 3.0, 0.0, 1.0)
    two = KernelCache(X, 2, 0.3, 3.0, 0.0, 1.0, n_threads=2)
    for i in (0, 640, 1299):
        np.testing.assert_array_equal(one.row(i), two.row(i))
    with pytest.raises(ValueError, match="n_threads"):
        KernelCache(X, 2, 0.3, 3.0, 0.0, 1.0, n_threads=0)


@pytest.mark.parametrize("options, match", [
    ({"n_jobs": 0}, "n_jobs"), ({"n_jobs": 1.5}, "n_jobs"),
    ({"cache_dtype": "float16"}, "cache_dtype"), ({"trace": 0.0}, "trace"),
    ({"block_size": 1}, "block_size"), ({"block_size": 9}, "block_size"),
    ({"block_size": 2.5}, "block_size"),
])
def test_bad_options(options, match):
    X, y = blobs(0, 3, 30)
    with pytest.raises(ValueError, match=match):
        s2do.solve(make_problem("ww", X, y), **options)


@pytest.mark.parametrize("params, match", [
    ({"n_jobs": 0}, "n_jobs"), ({"cache_dtype": "half"}, "cache_dtype"),
    ({"warm_start": "yes"}, "warm_start"),
])
def test_estimator_bad_options(params, match):
    X, y = blobs(0, 3, 30)
    with pytest.raises(ValueError, match=match):
        MultiClassSVC(**params).fit(X, y)


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_every_combination_of_accelerations_reaches_the_optimum(model):
    """The accelerations change the path, never the stopping test: each of the 2⁸
    combinations of switches (all off: Algorithm 3 as written) ends at an ε-KKT
    point whose dual is within the gap an ε-point can have (validation README,
    "Derived limits") of the reference optimum."""
    from itertools import product

    from validation.registry import derived_limits

    X, y = blobs(3, 4, 60, spread=2.0)
    problem = make_problem(model, X, y, C=2.0)
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    for switches in product([False, True], repeat=len(s2do.ACCELERATIONS)):
        options = dict(zip(s2do.ACCELERATIONS, switches, strict=True))
        solution = s2do.solve(problem, tol=TOL, cache_size=0.02, **options)
        found = diagnose(problem, solution)
        limits = derived_limits(problem, solution.alpha, TOL, reference, 1.0)
        assert solution.status == "optimal", options
        assert found.kkt_violation <= TOL * (1 + 1e-6), options
        assert _rel(found.dual_objective, reference) <= limits["dual_rel_diff"], options


def test_iterates_do_not_depend_on_the_time_slices(monkeypatch):
    """The compiled loop returns to Python every TIME_SLICE seconds; where a slice
    ends must not change the path (a focus round simply continues), so a fit cut
    into slices of 0.1 ms gives the same α, bit for bit, as one in 0.5 s slices."""
    X, y = blobs(7, 26, 2000, spread=3.0)  # letter-like: 26 classes, 16 features
    X = np.hstack([X, np.random.default_rng(0).normal(size=(len(X), 14))])
    problem = make_problem("cs", X, y, C=2.5, gamma=0.05)
    whole = s2do.solve(problem, tol=1e-3, cache_size=200.0)
    assert whole.info["n_focus"] > 0  # the focus rounds, which a slice may interrupt, ran
    monkeypatch.setattr(s2do, "TIME_SLICE", 1e-4)
    sliced = s2do.solve(problem, tol=1e-3, cache_size=200.0)
    assert sliced.n_iter == whole.n_iter
    assert np.array_equal(sliced.alpha, whole.alpha)


@pytest.mark.parametrize("model", ["ww", "cs"])
@pytest.mark.parametrize("csr_input", [False, True])
def test_rows_from_sparse_blocks_reach_the_optimum(model, csr_input):
    """A fifth of the entries non-zero, 40 per row: a cache that evicts keeps dense X as
    CSR, and both it and CSR input compute their rows in sparse blocks; S2DO's ε-KKT
    point is within the derived limits of the reference dual, as above."""
    import scipy.sparse as sp

    from validation.registry import derived_limits

    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(4), 30)
    X = rng.normal(size=(120, 200)) * (rng.random((120, 200)) < 0.2)
    X[:, :4] += 1.5 * np.eye(4)[y]
    problem = make_problem(model, sp.csr_matrix(X) if csr_input else X, y, C=2.0, gamma=0.02)
    cache_size = 0.03   # 32 rows of 120
    assert "csr" in repr(problem.kernel.cache(cache_size))
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    solution = s2do.solve(problem, tol=TOL, cache_size=cache_size)
    found = diagnose(problem, solution)
    limits = derived_limits(problem, solution.alpha, TOL, reference, 1.0)
    assert solution.status == "optimal"
    assert solution.n_kernel_evaluations > 120 * 120   # rows evicted and computed again
    assert found.kkt_violation <= TOL * (1 + 1e-6)
    assert _rel(found.dual_objective, reference) <= limits["dual_rel_diff"]


def test_the_active_set_finish_solves_a_degenerate_problem():
    """Without the finish S2DO needs more than twice the passes after which the finish
    takes over; with it, the loop's own test certifies the finish's answer at once, and
    the answer is the reference optimum within the derived limits."""
    from msvm.solvers import _qp
    from validation.registry import derived_limits

    problem = degenerate_llw()
    trigger = _qp.finish_after(problem, s2do.FINISH_AFTER)
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    plain = s2do.solve(problem, tol=TOL, finish=False)
    assert plain.status == "optimal" and plain.n_iter > 2 * trigger
    solution = s2do.solve(problem, tol=TOL)
    assert solution.status == "optimal"
    assert solution.info["finish_time"] > 0
    assert solution.n_iter <= trigger + 10   # the loop took at most a few passes after it
    found = diagnose(problem, solution)
    limits = derived_limits(problem, solution.alpha, TOL, reference, 1.0)
    assert found.kkt_violation <= TOL * (1 + 1e-6)
    assert _rel(found.dual_objective, reference) <= limits["dual_rel_diff"]


def test_the_finish_answer_does_not_depend_on_the_clock(monkeypatch):
    """The finish's allowance is counted work, not seconds: with a clock that jumps a
    thousand seconds at every reading (a very slow or busy machine) the fit takes the
    same path and returns bit for bit the same α."""
    from msvm.solvers import _qp

    problem = degenerate_llw()
    expected = s2do.solve(problem, tol=TOL)
    monkeypatch.setattr(_qp, "time", JumpingClock())
    slowed = s2do.solve(problem, tol=TOL)
    assert slowed.info["finish_time"] >= 1000.0   # it ran, under the jumping clock
    assert slowed.status == expected.status == "optimal"
    assert np.array_equal(slowed.alpha, expected.alpha)


def test_a_finish_out_of_allowance_leaves_the_loop_as_it_was(monkeypatch):
    """A finish that runs out of its allowance half-way changes nothing: the loop goes on
    from its own point and ends bit for bit where it ends without the finish."""
    from msvm.solvers import _qp

    problem = degenerate_llw()
    plain = s2do.solve(problem, tol=TOL, finish=False)
    spent = []
    run = _qp.Handover.run

    def recorded(self, *args, **kwargs):
        finished = run(self, *args, **kwargs)
        spent.append((self.work.spent, finished))
        return finished

    monkeypatch.setattr(_qp.Handover, "run", recorded)
    s2do.solve(problem, tol=TOL)
    (needed, finished), = spent
    assert finished
    monkeypatch.setattr(_qp, "FINISH_WORK_PER_PASS", 0.0)
    monkeypatch.setattr(_qp, "FINISH_MIN_WORK", needed / 2)
    starved = s2do.solve(problem, tol=TOL)
    assert spent[-1][1] is False and starved.info["finish_time"] > 0
    assert starved.status == "optimal"
    assert np.array_equal(starved.alpha, plain.alpha)


def test_box_active_set_descends_to_the_optimum_from_any_feasible_point():
    """From α = 0 and from a random feasible point the method reaches its optimum: the
    objective never rises above the start's, and the end point is an ε-KKT point of the
    box QP (gradient ≥ −ε at 0, ≤ ε at the upper bound, |·| ≤ ε in between)."""
    from msvm.solvers import _qp

    problem = degenerate_llw()
    qp = _qp.build(problem, factor=False)
    H, t, upper = qp.hessian(), qp.targets, qp.cap[qp.group]

    def J(v):
        return 0.5 * v @ H @ v - t @ v

    rng = np.random.default_rng(0)
    for start in (np.zeros(qp.n), rng.uniform(0, upper)):
        x, optimal = _qp.box_active_set(H, t, upper, start, tol=1e-9,
                                        work=_qp.Work(np.inf), max_iter=10_000)
        assert optimal
        assert np.all((x >= 0) & (x <= upper))
        assert J(x) <= J(start)
        g = H @ x - t
        inside = (x > 0) & (x < upper)
        assert np.all(g[x == 0] >= -1e-9) and np.all(g[x == upper] <= 1e-9)
        assert np.abs(g[inside]).max(initial=0.0) <= 1e-9


def test_projected_search_finds_the_minimum_along_the_projected_path():
    """The search's point is the best of the projected path P[x + s d] (piecewise
    quadratic): no point of a fine grid of s beats it, its variables are in the box,
    and those it reports at a bound are exactly there."""
    from msvm.solvers import _qp

    rng = np.random.default_rng(4)
    for trial in range(20):
        n = 30
        A = rng.normal(size=(n, n // 3 if trial % 2 else n))   # singular for odd trials
        H = A @ A.T
        upper = rng.uniform(0.5, 2.0, n)
        x = rng.uniform(0.05, 0.95) * upper
        g = rng.normal(size=n)
        d = -g + 0.5 * rng.normal(size=n)
        if g @ d >= 0:
            d = -g
        y, down, up = _qp._projected_search(H, g, d, x, upper)

        path = np.clip(x + np.linspace(0.0, 50.0, 20001)[:, None] * d, 0.0, upper)
        step = np.vstack([y, path]) - x
        J = step @ g + 0.5 * np.einsum("ij,jk,ik->i", step, H, step)   # J(·) − J(x)
        assert J[0] <= J[1:].min() + 1e-9 * max(1.0, abs(J[0]))
        assert np.all((y >= 0) & (y <= upper))
        assert np.all(y[down] == 0.0) and np.all(y[up] == upper[up])


def test_group_active_set_reaches_the_crammer_singer_optimum():
    """Crammer–Singer's slack group is the whole example (Σ_k α_ik ≤ C): from α = 0
    and from a random feasible point the grouped method ends feasible, at an ε-KKT
    point of the dual, at the reference optimum's objective."""
    from msvm.solvers import _qp

    X, y = blobs(6, 4, 60, spread=2.0)
    problem = make_problem("cs", X, y, C=5.0)
    qp = _qp.build(problem, factor=False)
    H = qp.hessian()
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    rng = np.random.default_rng(1)
    start = rng.uniform(0, 1, qp.n)
    start /= np.maximum((qp.S @ start) / qp.cap, 1.0)[qp.group]
    for x0 in (np.zeros(qp.n), start):
        x, optimal = _qp.group_active_set(qp, H, x0, tol=1e-9,
                                          work=_qp.Work(np.inf), max_iter=10_000)
        assert optimal
        assert np.all(x >= 0) and np.all(qp.S @ x <= qp.cap * (1 + 1e-12))
        found = diagnose(problem, qp.to_alpha(problem, x))
        assert found.kkt_violation <= 1e-8
        assert _rel(found.dual_objective, reference) <= 1e-9
