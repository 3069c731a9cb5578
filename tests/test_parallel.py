"""Parallel model selection through joblib, and the estimator's advanced fit API.

``RadiusMarginSearch(n_jobs=)`` and ``loo_error(n_jobs=)`` run independent
solves as joblib tasks; a parallel run must return exactly what the
sequential one does (docs/scaling.rst).  The Dask backend is tested in
tests/test_dask.py; these tests need only joblib.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import cpu_count, parallel_backend, parallel_config
from sklearn.datasets import load_wine
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from msvm import MultiClassSVC, RadiusMarginSearch, loo_error
from msvm.estimator import FitSetup
from msvm.solvers import get_solver

GRID = {"C": [0.1, 1.0, 10.0], "gamma": [0.02, 0.1, 0.5]}
#: What RadiusMarginSearch computes per grid point (the times excepted).
RESULT_KEYS = ("bound", "bound_rate", "radius2", "sum_alpha", "n_candidates", "n_support",
               "status", "converged", "rank_bound")


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def assert_same_search(a: RadiusMarginSearch, b: RadiusMarginSearch) -> None:
    """Two searches computed the same bounds and kept the same model, bit for bit."""
    for key in RESULT_KEYS:
        np.testing.assert_array_equal(a.cv_results_[key], b.cv_results_[key], err_msg=key)
    assert a.best_index_ == b.best_index_ and a.best_score_ == b.best_score_
    np.testing.assert_array_equal(a.best_estimator_.dual_coef_, b.best_estimator_.dual_coef_)
    np.testing.assert_array_equal(a.best_estimator_.support_, b.best_estimator_.support_)


def test_search_with_two_processes_equals_sequential(wine):
    X, y = wine
    base = MultiClassSVC(model="msvm2", tol=1e-6)
    one = RadiusMarginSearch(base, GRID, n_jobs=1).fit(X, y)
    with parallel_backend("loky"):
        two = RadiusMarginSearch(base, GRID, n_jobs=2).fit(X, y)
    assert_same_search(one, two)
    # The kept model is the search's solution of the best point: a fit from scratch at
    # the same parameters and tol agrees with it to the solver's accuracy.
    params = {**base.get_params(), **one.best_params_, "tol": 1e-8}
    fresh = MultiClassSVC(**params).fit(X, y)
    np.testing.assert_array_equal(one.predict(X), fresh.predict(X))
    assert one.best_estimator_.solution_["status"] == "optimal"


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_loo_with_two_jobs_equals_sequential(wine, backend):
    X, y = wine
    est = MultiClassSVC(model="cs", C=1.0, tol=1e-6)
    one = loo_error(est, X, y, n_jobs=1)
    with parallel_backend(backend):
        two = loo_error(est, X, y, n_jobs=2)
    np.testing.assert_array_equal(one.predictions, two.predictions)
    np.testing.assert_array_equal(one.support, two.support)
    assert one.n_errors == two.n_errors and one.n_retrained == two.n_retrained > 0


def test_loo_without_the_gram_matrix_equals_with_it(wine, monkeypatch):
    """Above GRAM_MAX_SAMPLES the tasks get the points instead of the Gram matrix."""
    from msvm import model_selection

    X, y = wine
    est = MultiClassSVC(model="ww", C=1.0, tol=1e-6)
    with_gram = loo_error(est, X, y, n_jobs=2)
    monkeypatch.setattr(model_selection, "GRAM_MAX_SAMPLES", 10)
    without = loo_error(est, X, y, n_jobs=2)
    np.testing.assert_array_equal(with_gram.predictions, without.predictions)
    assert with_gram.n_retrained == without.n_retrained > 0


class _Recording(MultiClassSVC):
    """Records the solver threads each solve of a search is given (a subclass using the
    advanced API, as the class's Notes allow)."""

    threads: list = []
    lock = threading.Lock()

    def solver_options(self, setup):
        options = super().solver_options(setup)
        with self.lock:
            self.threads.append(options.get("n_jobs"))
        return options


def test_tasks_share_the_cores(wine):
    """Nested parallelism: inside p parallel tasks an estimator gets at most cores / p
    solver threads (n_jobs=-1 or more than that share), as joblib's workers do."""
    X, y = wine
    grid = {"C": [1.0], "gamma": [0.1, 0.5]}
    base = _Recording(model="msvm2", tol=1e-4, n_jobs=-1)
    _Recording.threads = []
    RadiusMarginSearch(base, grid, n_jobs=1).fit(X, y)
    assert _Recording.threads == [-1, -1]  # sequential (one task at a time): as set
    _Recording.threads = []
    with parallel_backend("threading"):
        RadiusMarginSearch(base, grid, n_jobs=2).fit(X, y)
    share = max(cpu_count() // 2, 1)
    assert _Recording.threads == [share, share]  # two tasks at once (one per γ)
    _Recording.threads = []
    with parallel_backend("threading"):
        RadiusMarginSearch(base.set_params(n_jobs=2 * share + 1), grid, n_jobs=2).fit(X, y)
    assert _Recording.threads == [share, share]
    _Recording.threads = []
    with parallel_backend("threading"):
        RadiusMarginSearch(base.set_params(n_jobs=1), grid, n_jobs=2).fit(X, y)
    assert _Recording.threads == [1, 1]   # within the share: as set


def test_n_jobs_none_is_one_thread_inside_a_joblib_context(wine):
    X, y = wine
    est = MultiClassSVC(model="ww")
    setup = est.prepare_fit(X, y)
    with parallel_config(backend="threading", n_jobs=4):
        # joblib would read None as the context's 4; the estimator documents None as 1.
        assert est.solver_options(setup)["n_jobs"] == 1
    assert MultiClassSVC(model="ww", n_jobs=3).solver_options(setup)["n_jobs"] == 3


def test_fit_in_steps_equals_fit(wine):
    """The advanced API: prepare_fit, solve with solver_options, set_solution == fit."""
    X, y = wine
    est = MultiClassSVC(model="llw", C=2.0, tol=1e-5)
    setup = est.prepare_fit(X, y)
    assert isinstance(setup, FitSetup) and setup.solver == "s2do"
    np.testing.assert_array_equal(setup.classes, np.unique(y))
    assert setup.gamma == pytest.approx(1.0 / (X.shape[1] * X.var()))
    solution = get_solver(setup.solver).solve(setup.problem, **est.solver_options(setup))
    stepped = est.set_solution(setup, solution)
    assert stepped is est
    fitted = MultiClassSVC(**est.get_params()).fit(X, y)
    np.testing.assert_array_equal(stepped.dual_coef_, fitted.dual_coef_)
    np.testing.assert_array_equal(stepped.predict(X), fitted.predict(X))
    assert stepped.solution_["dual_objective"] == fitted.solution_["dual_objective"]


def test_set_solution_is_what_partial_fit_and_warm_start_continue(wine):
    """A model stored by set_solution is the one partial_fit and a warm-started fit go on
    from (partial_fit went on with the stream of an earlier partial_fit, dropping the
    stored model, and a warm start started from the fit before it)."""
    X, y = wine
    params = dict(model="ww", C=2.0, tol=1e-5, random_state=0, warm_start=True)
    est = MultiClassSVC(**params).partial_fit(X[:60], y[:60], classes=np.unique(y))
    setup = est.prepare_fit(X, y)
    solution = get_solver(setup.solver).solve(setup.problem, **est.solver_options(setup))
    est.set_solution(setup, solution)
    np.testing.assert_array_equal(est.solver_options(setup)["warm_start"], solution.alpha)
    est.partial_fit(X[:30], y[:30])
    fitted = MultiClassSVC(**params).fit(X, y).partial_fit(X[:30], y[:30])
    assert est.solution_["n_seen"] == fitted.solution_["n_seen"] == len(y) + 30
    np.testing.assert_array_equal(est.support_, fitted.support_)
    np.testing.assert_array_equal(est.dual_coef_, fitted.dual_coef_)


def test_bad_n_jobs(wine):
    X, y = wine
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
            RadiusMarginSearch(param_grid={"C": [1.0]}, n_jobs=bad).fit(X, y)
        with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
            loo_error(MultiClassSVC(), X, y, n_jobs=bad)


def test_solver_threads_honour_the_openmp_limit():
    """OMP_NUM_THREADS / threadpoolctl's OpenMP limit caps msvm's solver threads."""
    from threadpoolctl import threadpool_limits

    from msvm.solvers._common import n_threads

    assert n_threads(None) == 1 and n_threads(1) == 1
    with threadpool_limits(limits=1, user_api="openmp"):
        assert n_threads(2) == 1 and n_threads(-1) == 1


@pytest.mark.parametrize("case", ["rbf", "rbf-csr", "linear", "precomputed"])
def test_prediction_on_threads_equals_the_scores_by_hand(wine, case, monkeypatch):
    """With n_jobs=2 the test rows are scored in blocks on two threads (BLAS on one
    thread each); every block must land on its own rows, and BLAS's thread counts
    come back afterwards.  Blocks of 16 rows make 12 of them for the 178 points."""
    from threadpoolctl import threadpool_info

    import msvm.estimator

    X, y = wine
    kernel = "linear" if case == "linear" else "rbf"
    est = MultiClassSVC(kernel=kernel, C=1.0, gamma=0.1, fit_intercept=True)
    if case == "precomputed":
        est.set_params(kernel="precomputed").fit(X @ X.T, y)
        by_hand = (X @ X[est.support_].T) @ est.dual_coef_ + est.intercept_
        X_test = X @ X.T
    else:
        est.fit(X, y)
        K = X @ est.support_vectors_.T if kernel == "linear" else rbf_kernel(
            X, est.support_vectors_, gamma=0.1)
        by_hand = K @ est.dual_coef_ + est.intercept_
        X_test = sp.csr_matrix(X) if case == "rbf-csr" else X
    assert (getattr(est, "coef_", None) is not None) == (case == "linear")
    monkeypatch.setattr(msvm.estimator, "_PREDICT_CHUNK", 16)
    monkeypatch.setattr(msvm.estimator, "_PREDICT_MIN_BLOCK", 1)
    before = [lib["num_threads"] for lib in threadpool_info()]
    scores = est.set_params(n_jobs=2).decision_function(X_test)
    assert [lib["num_threads"] for lib in threadpool_info()] == before
    np.testing.assert_allclose(scores, by_hand, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(est.predict(X_test), est.classes_[by_hand.argmax(axis=1)])


@pytest.mark.parametrize("n_jobs", [10**6, 2**63])
def test_n_jobs_above_the_tasks_is_lowered_to_them(wine, n_jobs):
    """A huge n_jobs failed inside joblib ("Numeric literal 2000000 is too large", or an
    OverflowError for 2**63); now at most one worker per task runs, with the same results."""
    X, y = wine
    X, y = X[::4], y[::4]
    est = MultiClassSVC(model="cs", C=1.0, tol=1e-6)
    one = loo_error(est, X, y, n_jobs=1)
    many = loo_error(est, X, y, n_jobs=n_jobs)
    np.testing.assert_array_equal(one.predictions, many.predictions)
    assert one.n_errors == many.n_errors
    grid = {"C": [1.0], "gamma": [0.1, 0.5]}
    with parallel_backend("threading"):
        assert_same_search(RadiusMarginSearch(MultiClassSVC(model="msvm2", tol=1e-6), grid,
                                              n_jobs=1).fit(X, y),
                           RadiusMarginSearch(MultiClassSVC(model="msvm2", tol=1e-6), grid,
                                              n_jobs=n_jobs).fit(X, y))


def test_one_task_keeps_the_estimator_threads(wine):
    """One path along C is one task: its fit may use every core (the share is over the
    tasks that run, not over n_jobs)."""
    X, y = wine
    base = _Recording(model="msvm2", tol=1e-4, n_jobs=-1)
    _Recording.threads = []
    with parallel_backend("threading"):
        RadiusMarginSearch(base, {"C": [1.0, 2.0]}, n_jobs=2).fit(X, y)
    assert _Recording.threads == [-1, -1]


@pytest.mark.parametrize("what", ["loo", "search"])
def test_worker_threads_stop_when_the_caller_is_interrupted(wine, monkeypatch, what):
    """Ctrl-C during a threaded loo_error / RadiusMarginSearch raised KeyboardInterrupt at
    once, but the worker threads went on solving the rest of their chunks (paths) in the
    background; now each stops after the solve it is in."""
    import _thread
    import time

    from msvm import model_selection

    solve, calls, lock = model_selection._solve, [], threading.Lock()

    def counted(*args, **kwargs):
        with lock:
            calls.append(threading.current_thread() is threading.main_thread())
            if len(calls) == 3:
                _thread.interrupt_main()   # Ctrl-C, while both workers are busy
        time.sleep(0.05)
        return solve(*args, **kwargs)

    X, y = wine
    monkeypatch.setattr(model_selection, "_solve", counted)
    with pytest.raises(KeyboardInterrupt), parallel_backend("threading"):
        if what == "loo":   # the full solve here, then 8 chunks of retrained points
            loo_error(MultiClassSVC(model="cs", C=10.0, tol=1e-6), X, y, n_jobs=2)
        else:   # two paths of 12 points along C
            RadiusMarginSearch(MultiClassSVC(model="msvm2", tol=1e-4),
                               {"C": list(np.logspace(-1, 2, 12)), "gamma": [0.1, 0.5]},
                               n_jobs=2).fit(X, y)
    time.sleep(1.0)   # a worker still going would go on solving meanwhile
    with lock:
        after = len(calls) - 3
    assert after <= 2, f"{after} solves after the interrupt"   # at most one per worker


@pytest.mark.parametrize("solver", ["online", "frank_wolfe", "linear"])
def test_n_jobs_1_is_not_an_ignored_option(wine, solver):
    """n_jobs=1 means what the default None means (one thread), yet the single-threaded
    solvers warned "does not use n_jobs=1", also in every task of a parallel loo_error,
    whose nested-parallelism guard sets n_jobs=1."""
    import warnings

    X, y = wine
    kernel = "linear" if solver == "linear" else "rbf"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MultiClassSVC(solver=solver, kernel=kernel, n_jobs=1).fit(X, y)
    with pytest.warns(UserWarning, match=f"Solver '{solver}' does not use n_jobs=2"):
        MultiClassSVC(solver=solver, kernel=kernel, n_jobs=2).fit(X, y)


@pytest.mark.parametrize("solver", ["s2do", "online"])
def test_n_jobs_true_is_refused_before_the_fit(wine, solver):
    """n_jobs=True passed the parameter check (a bool is an Integral): solver 's2do' failed
    after the data and kernel setup, solver 'online' fitted (True read as 1 thread)."""
    X, y = wine
    est = MultiClassSVC(solver=solver, n_jobs=True)
    with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
        est.fit(X, y)
    assert not hasattr(est, "classes_")
