"""The two reference QP solvers agree with each other and certify their own answers."""

import numpy as np
import pytest

from msvm.diagnostics import diagnose
from msvm.solvers import get_solver

from problem_factory import MODELS, generated_cases, make_problem, reference_solutions

CASES = generated_cases(10)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_cvxpy_and_osqp_agree_and_certify(model, bias, kernel):
    for name, X, y, C in CASES:
        problem = make_problem(model, X, y, kernel=kernel, C=C, bias=bias)
        results = reference_solutions(problem, name)
        if bias and all(d.b_method == "kkt" for _, d in results.values()):
            # b from the solvers' own equality multipliers matches b from KKT.
            for solution, d in results.values():
                np.testing.assert_allclose(solution.b, d.b, atol=1e-5 * max(1.0, C))


def test_cvxpy_backend_selectable():
    X, y, C = CASES[1][1:]
    problem = make_problem("cs", X, y, C=C)
    clarabel = diagnose(problem, get_solver("cvxpy").solve(problem))
    via_osqp = get_solver("cvxpy").solve(problem, backend="OSQP", eps_abs=1e-10, eps_rel=1e-10,
                                          max_iter=200000)
    assert via_osqp.solver == "cvxpy-osqp"
    rel = abs(diagnose(problem, via_osqp).dual_objective - clarabel.dual_objective)
    assert rel <= 1e-6 * abs(clarabel.dual_objective)


@pytest.mark.parametrize("solver", ["cvxpy", "osqp"])
def test_bad_tol_and_max_iter_are_named(solver):
    """OSQP refused tol=-1 or max_iter=0 with a bare 'OSQPException: 2' (and ran tol=nan);
    Clarabel ignored a negative or NaN tol and refused tol='a' in its own words."""
    problem = make_problem("ww", np.eye(6), np.arange(6) % 3)
    for tol in (-1.0, np.nan, "a"):
        with pytest.raises(ValueError, match="tol must be a non-negative number"):
            get_solver(solver).solve(problem, tol=tol)
    for max_iter in (0, 1.5, True):
        with pytest.raises(ValueError, match="max_iter must be a positive integer"):
            get_solver(solver).solve(problem, max_iter=max_iter)


@pytest.mark.parametrize("polish", [True, False])
def test_cvxpy_optimal_only_when_the_kkt_residual_shows_it(polish):
    """At C = 1e-8 with a bias Clarabel's absolute tolerances are coarse against α ≈ 1e-8:
    it said "optimal" for a CS answer whose scaled KKT residual was 0.82 (relative gap
    0.29), and the solver passed that verdict on.  Its status now follows the residual,
    as the OSQP reference's does."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import scale

    X, y = load_wine(return_X_y=True)
    problem = make_problem("cs", scale(X)[::3], y[::3], C=1e-8, bias=True)
    solution = get_solver("cvxpy").solve(problem, polish=polish)
    residual = diagnose(problem, solution).kkt_residual
    assert solution.info["backend_status"] == "optimal"      # what the backend said
    assert residual > 1e-6 and solution.status == "inaccurate"


@pytest.mark.parametrize("solver", ["cvxpy", "osqp"])
@pytest.mark.parametrize("bias", [False, True])
def test_round_off_in_a_psd_kernel_is_not_indefiniteness(solver, bias):
    """An RBF Gram matrix of points far from the origin has negative eigenvalues from the
    round-off of ‖x‖² + ‖x'‖² − 2⟨x, x'⟩, beyond psd_tolerance: the reference solvers
    refused it as indefinite (scikit-learn's check_fit_idempotent data, centred at 100,
    failed so).  A kernel that is PSD by construction is now factored with them dropped."""
    from msvm import MultiClassSVC
    from msvm.kernels import Kernel, psd_tolerance, resolve_gamma

    rng = np.random.RandomState(0)
    X = rng.normal(loc=1e3, size=(60, 2))
    y = np.arange(60) % 3
    K = Kernel(X, "rbf", gamma=resolve_gamma("scale", X, used=True)).gram()
    assert np.linalg.eigvalsh(K).min() < -psd_tolerance(K)   # the case at hand
    ref = MultiClassSVC(fit_intercept=bias, solver="frank_wolfe" if bias else "s2do",
                        tol=1e-9).fit(X, y)
    clf = MultiClassSVC(fit_intercept=bias, solver=solver).fit(X, y)
    assert clf.solution_["status"] == "optimal"
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=1e-6)


def test_ctrl_c_stops_the_osqp_reference(monkeypatch):
    """OSQP takes SIGINT itself while it iterates and returns status 'interrupted': the
    OSQP reference went on with its next attempt (and could return a polished answer)
    instead of stopping on Ctrl-C."""
    import signal
    import threading

    import osqp

    from problem_factory import blobs

    X, y = blobs(0, 3, 60)
    problem = make_problem("ww", X, y, C=10.0)
    statuses = []
    original = osqp.OSQP.solve

    def solve(self, *args, **kwargs):
        if statuses:
            raise AssertionError("OSQP ran another attempt after Ctrl-C")
        # Ctrl-C while OSQP iterates (eps 1e-300 below: it never stops by itself).
        threading.Timer(0.3, signal.pthread_kill,
                        (threading.main_thread().ident, signal.SIGINT)).start()
        result = original(self, *args, **kwargs)
        statuses.append(result.info.status)
        return result

    monkeypatch.setattr(osqp.OSQP, "solve", solve)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            get_solver("osqp").solve(problem, max_iter=10**9, eps_abs=1e-300, eps_rel=0.0)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert statuses == ["interrupted"]   # the signal reached OSQP, not Python code


@pytest.mark.parametrize("solver", ["cvxpy", "osqp"])
def test_a_qp_too_large_to_polish_keeps_the_backend_answer(solver, monkeypatch):
    """The polish forms the dense n × n Hessian: at 75 000 variables (45 GB) a long
    reference solve ended in numpy's allocation error.  Above POLISH_MAX_VARIABLES the
    backend's answer is kept, and its status follows its own KKT residual."""
    from msvm.solvers import _qp

    rng = np.random.RandomState(0)
    problem = make_problem("ww", rng.normal(size=(30, 2)), np.arange(30) % 3, C=1.0)
    polished = get_solver(solver).solve(problem)
    monkeypatch.setattr(_qp, "POLISH_MAX_VARIABLES", int(problem.active.sum()) - 1)

    def no_hessian(self):
        raise AssertionError("the dense Hessian was formed")

    monkeypatch.setattr(_qp.ExplicitQP, "hessian", no_hessian)
    kept = get_solver(solver).solve(problem)
    residual = diagnose(problem, kept).kkt_residual
    expected = ("optimal" if residual <= _qp.CERTIFIED_RESIDUAL
                else "inaccurate" if residual > _qp.USABLE_RESIDUAL else kept.status)
    assert kept.status == expected != "failed"
    dual = diagnose(problem, polished).dual_objective
    assert abs(diagnose(problem, kept).dual_objective - dual) <= 1e-5 * abs(dual)
