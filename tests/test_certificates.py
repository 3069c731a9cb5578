"""Issue 19: certificates that cannot lie, fits that end, fits that can be stopped."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from msvm import MultiClassSVC, RadiusMarginSearch, loo_error
from msvm.diagnostics import diagnose
from msvm.machines import MACHINES
from msvm.model_selection import BOUND_RTOL
from msvm.solvers import TOL_FLOOR, get_solver


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(n_samples=30, centers=3, random_state=0)


# ------------------------------------------------- the user's problem is certified
def test_float32_cache_status_follows_the_float64_certificate(wine):
    X, y = wine
    est = MultiClassSVC(model="cs", C=10.0, tol=1e-6, cache_dtype="float32").fit(X, y)
    # The solver's float32 scores differ from the exact ones: the drift is reported, and
    # "optimal" stands only if the exact KKT violation is within tol.
    assert est.solution_["score_drift"] > 0
    within = est.solution_["kkt_violation"] <= 1e-6 * (1 + 1e-6)
    assert est.solution_["status"] == ("optimal" if within else "inaccurate")


def test_certify_matches_diagnose_of_alpha_alone(wine):
    from msvm.solvers import s2do

    X, y = wine
    est = MultiClassSVC(model="ww", C=1.0, tol=1e-4, cache_dtype="float32")
    problem = est.prepare_fit(X, y).problem
    solution = s2do.solve(problem, tol=1e-4, cache_dtype="float32")
    certified, drift = est._certified(problem, solution)
    exact = diagnose(problem, solution.alpha)  # scores recomputed from α in float64
    assert drift > 0
    assert diagnose(problem, certified).kkt_violation == exact.kkt_violation
    assert diagnose(problem, certified).dual_objective == exact.dual_objective
    unchecked = MultiClassSVC(certify=False)._certified(problem, solution)
    assert unchecked[1] is None and unchecked[0] is solution


@pytest.mark.parametrize("cache_size", [200.0, 0.02])  # every row cached / most evicted
def test_s2do_certifies_from_its_cache(wine, cache_size):
    from msvm.solvers import s2do

    X, y = wine
    problem = MultiClassSVC(model="llw", C=3.0).prepare_fit(X, y).problem
    solution = s2do.solve(problem, tol=1e-5, cache_size=cache_size, certify=True)
    exact = problem.scores(problem.beta(solution.alpha))  # every block computed afresh
    np.testing.assert_allclose(solution.certified_scores, exact, rtol=0, atol=1e-12)
    assert s2do.solve(problem, tol=1e-5, cache_size=cache_size).certified_scores is None


# ------------------------------------------------- bounds and LOO on optimal solutions
def test_radius_margin_search_solves_to_the_bound_accuracy(wine):
    X, y = wine
    search = RadiusMarginSearch(MultiClassSVC(model="msvm2", tol=0.1),
                                {"C": [0.1, 1.0], "gamma": [0.05]}).fit(X, y)
    assert np.all(search.cv_results_["converged"])
    # Each point was solved at tol <= BOUND_RTOL / (Q - 1), not at the estimator's 0.1.
    assert search.best_estimator_.solution_["kkt_violation"] <= BOUND_RTOL / 2 * (1 + 1e-6)


def test_radius_margin_search_never_selects_an_unconverged_point(wine):
    X, y = wine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = RadiusMarginSearch(MultiClassSVC(model="msvm2", max_iter=3),
                                    {"C": [0.1, 1.0]})
        with pytest.raises(RuntimeError, match="No grid point converged"):
            search.fit(X, y)


def test_loo_refuses_an_unconverged_solution(wine):
    X, y = wine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.raises(RuntimeError, match="not optimal"):
            loo_error(MultiClassSVC(model="ww", max_iter=2), X, y)


def test_unconverged_solves_name_their_status_and_remedy(wine, monkeypatch):
    """The errors said "tighten tol or raise max_iter" (loo_error) and "Raise max_iter"
    (retrained machines, RadiusMarginSearch) whatever the status: after one online epoch
    or a stalled dual neither helps."""
    from msvm import model_selection

    X, y = wine
    with pytest.raises(RuntimeError, match=r"not optimal .*'epoch_limit' \(1\); set epochs=None"):
        loo_error(MultiClassSVC(model="ww", solver="online", random_state=0), X, y)
    with pytest.raises(RuntimeError,
                       match=r"No grid point converged.*'epoch_limit' \(2\); set epochs=None"):
        RadiusMarginSearch(MultiClassSVC(model="msvm2", solver="online", random_state=0),
                           {"C": [0.1, 1.0]}).fit(X, y)
    solve = model_selection._solve

    def stall_retrained(estimator, setup, warm_start=None, tol=None):
        solution = solve(estimator, setup, warm_start, tol)
        if setup.problem.n_samples < len(y):   # a machine trained without one point
            solution.status = "stalled"
        return solution

    monkeypatch.setattr(model_selection, "_solve", stall_retrained)
    with pytest.raises(RuntimeError, match=r"retrained machines did not converge .*"
                                           r"'stalled' \(\d+\); loosen tol"):
        loo_error(MultiClassSVC(model="ww", tol=1e-4), X, y)


# ------------------------------------------------- warm starts with a bias
@pytest.mark.parametrize("model", sorted(MACHINES))
def test_decreasing_C_path_with_bias(wine, model):
    X, y = wine
    tol = 1e-4
    warm = MultiClassSVC(model=model, fit_intercept=True, warm_start=True, tol=tol)
    for C in [10.0, 3.0, 1.0, 0.3, 0.1]:
        warm.set_params(C=C).fit(X, y)
        cold = MultiClassSVC(model=model, fit_intercept=True, C=C, tol=tol).fit(X, y)
        assert warm.solution_["status"] == "optimal"
        # Frank-Wolfe's tol bounds the relative dual suboptimality of each: they agree to 2 tol.
        d_warm, d_cold = warm.solution_["dual_objective"], cold.solution_["dual_objective"]
        assert abs(d_warm - d_cold) <= 2 * tol * abs(d_cold) + 1e-12


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "ova", "adm", "ats"])
def test_bias_optimal_is_feasible_with_one_heavy_weight(model):
    # One weight of 1e6 makes the largest capacity C max wᵢ a million times every α.
    # The equality residual s2do_bias keeps must be round-off of the α present, not
    # of that capacity: an 'optimal' α is feasible, so its dual is not above the optimum.
    X = np.random.default_rng(0).normal(size=(40, 1))
    y = np.r_[0, 1, 1, 1, np.full(36, 2)]
    weight = np.ones(40)
    weight[10] = 1e6
    params = dict(model=model, C=45.0, kernel="linear", fit_intercept=True)
    est = MultiClassSVC(**params, tol=1e-3)
    setup = est.prepare_fit(X, y, sample_weight=weight)
    solution = get_solver(setup.solver).solve(setup.problem, **est.solver_options(setup))
    est.set_solution(setup, solution)
    ref = MultiClassSVC(**params, solver="cvxpy").fit(X, y, sample_weight=weight)
    assert setup.solver == "s2do_bias" and est.solution_["status"] == "optimal"
    residual = np.max(np.abs(setup.problem.equality_residual(solution.alpha)))
    assert residual <= 1e-10 * solution.alpha.max()        # was ~3e-5 · max α
    d, d_ref = est.solution_["dual_objective"], ref.solution_["dual_objective"]
    assert d <= d_ref + 1e-9 * abs(d_ref)                  # was up to 3e-3 above
    assert d_ref - d <= 1e-6 * abs(d_ref)


# ------------------------------------------------- declared solver options
def test_ignored_options_are_named(blobs):
    with pytest.warns(UserWarning, match="Solver 'frank_wolfe' does not use n_jobs=2"):
        MultiClassSVC(solver="frank_wolfe", n_jobs=2).fit(*blobs)
    with pytest.warns(UserWarning, match="Solver 'online' does not use warm_start=True"):
        MultiClassSVC(solver="online", warm_start=True).fit(*blobs)
    with pytest.warns(UserWarning, match="Solver 'cvxpy' does not use cache_dtype='float32'"):
        MultiClassSVC(solver="cvxpy", cache_dtype="float32").fit(*blobs)
    with pytest.raises(ValueError, match="Solver 'frank_wolfe' does not use online_strategy"):
        MultiClassSVC(solver="frank_wolfe", online_strategy="random_pattern_s2do_all").fit(
            *blobs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults and random_state never warn
        MultiClassSVC(solver="s2do", random_state=0).fit(*blobs)


# ------------------------------------------------- fits that end
SOLVER_SETTINGS = [
    ("s2do", {}, False), ("online", {"epochs": None}, False), ("frank_wolfe", {}, False),
    ("frank_wolfe", {}, True), ("cvxpy", {}, True), ("osqp", {}, False),
]


@pytest.mark.parametrize("tol", [0.0, 1e-300])
@pytest.mark.parametrize("solver, options, bias", SOLVER_SETTINGS)
def test_unreachable_tolerances_end(blobs, solver, options, bias, tol):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MultiClassSVC(solver=solver, tol=tol, fit_intercept=bias, max_iter=-1,
                            **options).fit(*blobs)
    # "Within seconds": a loop at the floor or a stall both stop well before this.
    assert time.perf_counter() - start < 30
    assert est.solution_["status"] in ("optimal", "inaccurate", "stalled")
    assert np.isfinite(est.solution_["relative_gap"])
    if est.solution_["status"] == "optimal" and solver in ("s2do", "online"):
        assert est.solution_["kkt_violation"] <= TOL_FLOOR * (1 + 1e-6)


def test_tol_below_floor_warns(blobs):
    with pytest.warns(UserWarning, match="raised to the floor 1e-12"):
        MultiClassSVC(tol=0.0).fit(*blobs)


def test_cli_tol_zero_ends(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    wine = tmp_path / "wine.svm"
    dump_svmlight_file(*load_wine(return_X_y=True), str(wine), zero_based=False)
    result = subprocess.run([sys.executable, "-m", "msvm", "fit", str(wine), "--tol", "0"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "status optimal" in result.stdout or "status inaccurate" in result.stdout


def test_default_budget_is_finite(blobs):
    from msvm.solvers import default_max_iter

    assert default_max_iter(30) == 10_000_000 and default_max_iter(10**6) == 10**8
    with pytest.warns(ConvergenceWarning, match="status 'max_iter'"):
        est = MultiClassSVC(max_iter=5, tol=1e-12, C=100.0).fit(*blobs)
    assert est.solution_["status"] == "max_iter" and est.n_iter_ <= 5


# ------------------------------------------------- quiet backends
def test_no_backend_banner():
    code = textwrap.dedent("""
        from sklearn.datasets import load_iris
        from msvm import MultiClassSVC
        X, y = load_iris(return_X_y=True)
        MultiClassSVC(fit_intercept=True).fit(X, y)
        print("done")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert "HiGHS" not in result.stderr


# ------------------------------------------------- Ctrl-C
LONG_FIT = textwrap.dedent("""
    import signal, sys, threading
    # Ctrl-C's default handler even when the test runs where SIGINT is ignored
    # (a background job inherits SIG_IGN, and Python then installs no handler).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np
    from msvm import MultiClassSVC
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 10))
    y = rng.integers(0, 10, 5000)  # noise labels at C = 1e6: a fit of minutes
    est = MultiClassSVC(model="ww", C=1e6, gamma=0.05, tol=1e-9, solver=sys.argv[1],
                        max_iter=-1, n_jobs=2, **({"epochs": None} if sys.argv[1] == "online"
                                                  else {}))
    print("started", flush=True)
    try:
        est.fit(X, y)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted fitted=%s threads=%d" % (hasattr(est, "classes_"),
                                                    threading.active_count()), flush=True)
""")


@pytest.mark.parametrize("solver", ["s2do", "online"])
def test_ctrl_c_stops_a_long_fit(solver):
    proc = subprocess.Popen([sys.executable, "-c", LONG_FIT, solver], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(2.0)  # well inside the fit
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        # The line printed by the handler of KeyboardInterrupt (waited for 30 s at most).
        ready = select.select([proc.stdout], [], [], 30.0)[0]
        line = proc.stdout.readline() if ready else ""
        elapsed = time.perf_counter() - sent
        if not ready:
            proc.kill()
        out, err = proc.communicate(timeout=30)
        out = line + out
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert "interrupted fitted=False threads=1" in out, (out, err)
    assert elapsed < 1.0, elapsed
