"""S2DO with a bias (the method of multipliers over S2DO) reaches the reference optimum.

What is checked against what.  The reference is cvxpy/Clarabel (KKT residual
≤ 1e-9), an independent interior-point answer.  ``s2do_bias`` stops on the
estimator's own certificate: the largest KKT violation of the user's problem,
with b from the KKT conditions, at most ``tol`` after the equality round-off
is repaired.  At tol = 1e-9 the dual must agree with the reference's to 1e-6
relative (the derived limit of an ε-KKT point is far below it), α must meet
the equality constraints to 1e-9·C, b must agree with the reference's where
both are unique, and the estimator's certificate must say optimal.
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from msvm import MultiClassSVC
from msvm.diagnostics import diagnose
from msvm.problem import DualSolution
from msvm.solvers import resolve_solver, s2do_bias

from problem_factory import FAMILY, MODELS, blobs, cvxpy_reference, degenerate_llw, make_problem


def _check(problem, solution, reference, tol):
    ref_solution, ref = reference
    d = diagnose(problem, solution)
    assert solution.status == "optimal", solution.info
    assert problem.check_feasible(solution.alpha, atol=1e-9)
    assert np.max(np.abs(problem.equality_residual(solution.alpha))) <= 1e-9 * problem.C
    assert d.kkt_violation <= tol * (1 + 1e-6)
    D, D_ref = d.dual_objective, ref.dual_objective
    assert abs(D - D_ref) <= 1e-6 * max(abs(D_ref), 1.0), (D, D_ref)
    if d.b_method == "kkt" and ref.b_method == "kkt":
        np.testing.assert_allclose(d.b, ref.b, atol=1e-6 * max(1.0, np.abs(ref.b).max()))
        # The solver's multipliers are the bias too.
        np.testing.assert_allclose(solution.b, ref.b, atol=1e-5 * max(1.0, np.abs(ref.b).max()))
    return d


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_matches_reference(model, kernel):
    # The linear kernel of 2-D points has rank 2: its duals are degenerate, and a
    # pair method needs ~10⁶ steps for 1e-7 on some of them (as S2DO without bias).
    tol = 1e-9 if kernel == "rbf" else 1e-7
    X, y = blobs(4, 3, 45, spread=1.5)
    for C in (0.5, 5.0):
        problem = make_problem(model, X, y, kernel=kernel, C=C, bias=True)
        solution = s2do_bias.solve(problem, tol=tol)
        _check(problem, solution, cvxpy_reference(problem), tol)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_problems(model, seed):
    Q = (2, 3, 5)[seed]
    X, y = blobs(10 + seed, Q, 40 + 10 * seed, spread=1.0 + seed)
    problem = make_problem(model, X, y, C=(0.1, 1.0, 10.0)[seed], bias=True)
    solution = s2do_bias.solve(problem, tol=1e-9)
    _check(problem, solution, cvxpy_reference(problem), 1e-9)


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_default_tol_is_certified(model):
    """At the default tol the estimator's certificate (its own KKT check) says optimal."""
    X, y = blobs(3, 4, 120, spread=2.0)
    est = MultiClassSVC(model=model, C=2.0, gamma=0.5, fit_intercept=True).fit(X, y)
    assert est.solution_["solver"] == "s2do_bias"
    assert est.solution_["status"] == "optimal"
    assert est.solution_["kkt_violation"] <= 1e-3 * (1 + 1e-6)
    assert est.solution_["kkt_equality"] <= 1e-9


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_agrees_with_frank_wolfe(model):
    X, y = blobs(5, 3, 60, spread=1.5)
    kw = dict(model=model, C=1.0, gamma=0.5, fit_intercept=True, tol=1e-9)
    a = MultiClassSVC(solver="s2do_bias", **kw).fit(X, y)
    b = MultiClassSVC(solver="frank_wolfe", **kw).fit(X, y)
    D_a, D_b = a.solution_["dual_objective"], b.solution_["dual_objective"]
    assert abs(D_a - D_b) <= 1e-6 * max(abs(D_b), 1.0)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-4)


def test_default_solver_with_bias():
    X, y = blobs(0, 3, 40)
    for model in MODELS + FAMILY:
        problem = make_problem(model, X, y, bias=True)
        assert resolve_solver("auto", problem) == "s2do_bias"
    with pytest.raises(ValueError, match="bias"):
        resolve_solver("s2do_bias", make_problem("ww", X, y, bias=False))
    with pytest.raises(ValueError, match="s2do_bias.*bias"):
        s2do_bias.solve(make_problem("ww", X, y, bias=False))


def test_precomputed_kernel():
    X, y = blobs(1, 3, 50)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    K = problem.kernel.gram()
    est = MultiClassSVC(model="ww", C=1.0, kernel="precomputed", fit_intercept=True,
                        tol=1e-9).fit(K, y)
    ref = MultiClassSVC(model="ww", C=1.0, gamma=0.5, fit_intercept=True,
                        solver="cvxpy").fit(X, y)
    assert est.solution_["status"] == "optimal"
    assert abs(est.solution_["dual_objective"] - ref.solution_["dual_objective"]) <= 1e-6 * abs(
        ref.solution_["dual_objective"])
    # The user's Gram matrix is left alone (the penalty's offset works on a copy).
    np.testing.assert_array_equal(K, problem.kernel.gram())


def test_warm_start_with_its_bias():
    X, y = blobs(2, 3, 60, spread=1.5)
    problem = make_problem("cs", X, y, C=1.0, bias=True)
    cold = s2do_bias.solve(problem, tol=1e-8)
    warm = s2do_bias.solve(make_problem("cs", X, y, C=1.2, bias=True), tol=1e-8,
                           warm_start=cold)
    again = s2do_bias.solve(make_problem("cs", X, y, C=1.2, bias=True), tol=1e-8)
    assert warm.status == again.status == "optimal"
    assert warm.n_iter < again.n_iter
    assert isinstance(warm, DualSolution)


def test_rho_does_not_change_the_optimum():
    X, y = blobs(6, 4, 80, spread=2.0)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    ref = cvxpy_reference(problem)
    for rho in (0.01, 0.1, 1.0, 10.0):
        _check(problem, s2do_bias.solve(problem, tol=1e-9, rho=rho), ref, 1e-9)


def test_the_active_set_finish_solves_the_degenerate_inner_problems():
    """Each inner solve hands its point to the active-set finish of its augmented
    Lagrangian after S2DO's hand-over passes: without the finish the solve takes more than
    twice those passes, with it every inner solve ends within a few passes after them, and
    the answer is the reference optimum (dual, equalities, b)."""
    from msvm.solvers import _qp, s2do

    problem = degenerate_llw(bias=True)
    trigger = _qp.finish_after(problem, s2do.FINISH_AFTER)
    tol = 1e-9   # _check's limits on b hold at this tolerance
    plain = s2do_bias.solve(problem, tol=tol, finish=False)
    assert plain.status == "optimal" and plain.n_iter > 2 * trigger
    solution = s2do_bias.solve(problem, tol=tol)
    assert solution.info["finish_time"] > 0
    assert solution.n_iter <= solution.info["outer"] * (trigger + 10)
    _check(problem, solution, cvxpy_reference(problem), tol)


def test_the_finish_leaves_a_precomputed_gram_matrix_alone():
    """The active-set finish added the penalty ρ to every entry of the problem's Gram
    matrix in place, which for kernel='precomputed' is the user's X: fit changed the
    user's matrix, and a second fit on it (scikit-learn's check_fit_idempotent) solved
    another problem and gave other scores."""
    from msvm.kernels import Kernel
    from msvm.problem import DualProblem

    problem = degenerate_llw(bias=True)
    K = problem.kernel.gram()
    y = problem.y
    original = K.copy()
    mine = DualProblem(problem.machine, y, Kernel(K, "precomputed"), 10.0, True)
    assert mine.kernel.X is K   # (as the estimator's: no copy of a float64 array)
    assert s2do_bias.solve(mine, tol=1e-3).info["finish_time"] > 0   # the finish ran
    np.testing.assert_array_equal(K, original)
    est = MultiClassSVC(model="llw", C=10.0, kernel="precomputed", fit_intercept=True,
                        solver="s2do_bias")
    first = est.fit(K, y).decision_function(K)
    np.testing.assert_array_equal(K, original)
    np.testing.assert_array_equal(est.fit(K, y).decision_function(K), first)


def test_max_iter_warns():
    X, y = blobs(6, 4, 80, spread=2.0)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    with pytest.warns(ConvergenceWarning):
        solution = s2do_bias.solve(problem, tol=1e-9, max_iter=5)
    assert solution.status == "max_iter"
    # Still feasible: the equality round-off is repaired whatever the status.
    assert np.max(np.abs(problem.equality_residual(solution.alpha))) <= 1e-9 * problem.C


@pytest.mark.parametrize("options, message", [
    ({"rho": -1.0}, "rho"),
    ({"inner_fraction": 0.0}, "inner_fraction"),
    ({"block_size": 1}, "block_size"),
])
def test_bad_options(options, message):
    X, y = blobs(0, 3, 30)
    with pytest.raises(ValueError, match=message):
        s2do_bias.solve(make_problem("ww", X, y, bias=True), **options)


def test_verbose_progress(capsys):
    X, y = blobs(0, 3, 60)
    s2do_bias.solve(make_problem("ww", X, y, bias=True), tol=1e-8, verbose=True)
    assert "s2do_bias" in capsys.readouterr().err


@pytest.mark.parametrize("kernel", ["rbf", "linear", "precomputed"])
@pytest.mark.parametrize("float32", [False, True])
def test_cache_offset(kernel, float32):
    """The cache serves rows of k + offset, and add_offset moves cached and later rows."""
    from msvm.kernels import Kernel

    X, _ = blobs(0, 3, 40)
    base = Kernel(X, "rbf" if kernel == "precomputed" else kernel, gamma=0.5)
    K = base.gram()
    kern = Kernel(K, "precomputed") if kernel == "precomputed" else base
    cache = kern.cache(1.0, float32=float32, offset=0.25)
    rtol = 1e-6 if float32 else 1e-14
    np.testing.assert_allclose(cache.rows([3, 7]), K[[3, 7]] + 0.25, rtol=rtol, atol=rtol)
    cache.add_offset(0.5)
    assert cache.offset == pytest.approx(0.75)
    np.testing.assert_allclose(cache.rows([3, 7, 11]), K[[3, 7, 11]] + 0.75, rtol=rtol,
                               atol=rtol * 10)
    if kernel == "precomputed":
        np.testing.assert_array_equal(K, base.gram())    # the caller's matrix is untouched
        with pytest.raises(ValueError, match="offset"):
            kern.cache(1.0).add_offset(1.0)


def test_penalty_grows_where_the_dual_is_flat():
    """Few free variables (mmr on the checkerboard at C = 0.1: 9 of 100): the dual
    function of b is flat, steps ρr are short, and ρ grows until the residual falls."""
    from validation.checks import build_problem
    from validation.problems import get_problem

    problem = build_problem(get_problem("checker-q4"), "mmr", True, "rbf", 0.1)
    solution = s2do_bias.solve(problem, tol=1e-6)
    assert solution.info["rho_growths"] >= 1
    _check(problem, solution, cvxpy_reference(problem), 1e-6)


@pytest.mark.parametrize("cache_dtype", ["float64", "float32"])
@pytest.mark.parametrize("model", ["ww", "llw", "msvm2"])
def test_scores_are_those_of_the_users_kernel(model, cache_dtype):
    """The cache serves k + ρ; the returned and certified scores are K'β̄ without it."""
    X, y = blobs(8, 3, 70, spread=1.5)
    problem = make_problem(model, X, y, C=1.0, bias=True)
    solution = s2do_bias.solve(problem, tol=1e-8, certify=True, cache_dtype=cache_dtype)
    exact = problem.scores(problem.beta(solution.alpha))
    np.testing.assert_allclose(solution.certified_scores, exact, atol=1e-10)
    atol = 1e-10 if cache_dtype == "float64" else 1e-5
    np.testing.assert_allclose(solution.scores, exact, atol=atol)


def test_bfgs_update_keeps_the_secant_pair_and_symmetry():
    """The multiplier step's matrix after an update (with the first update's scaling
    or without) maps y to s, stays symmetric and positive definite (sᵀy > 0), and is
    left alone when sᵀy ≤ 0."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    H = A @ A.T + 6 * np.eye(6)
    s, y = rng.normal(size=6), rng.normal(size=6)
    if s @ y < 0:
        y = -y
    for H2 in (s2do_bias._bfgs_update(H, s, y), s2do_bias._bfgs_update(H, s, y, np.eye(6))):
        np.testing.assert_allclose(H2 @ y, s, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(H2, H2.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(H2).min() > 0
    assert s2do_bias._bfgs_update(H, s, -y) is H


@pytest.mark.parametrize("model", ["ww", "cs", "llw"])
def test_quasi_newton_steps_need_fewer_outer_iterations(model):
    """Where the kernel's mean value is large (γ = 0.05 on these blobs), the residual
    answers a change of b by far less than 1/ρ: the plain method of multipliers
    (b ← b + ρr) takes many outer iterations (18 to 21 measured), the quasi-Newton
    steps few (6 to 7); the test asks for at most half.  Both reach the optimum."""
    X, y = blobs(6, 4, 120, spread=2.0)
    problem = make_problem(model, X, y, C=1.0, bias=True, gamma=0.05)
    reference = cvxpy_reference(problem)
    quasi = s2do_bias.solve(problem, tol=1e-6)
    plain = s2do_bias.solve(problem, tol=1e-6, quasi_newton=False)
    for solution in (quasi, plain):
        _check(problem, solution, reference, 1e-6)
    assert 2 * quasi.info["outer"] <= plain.info["outer"]


def test_a_spoilt_quasi_newton_matrix_is_not_followed(monkeypatch):
    """An update that makes H huge (a secant pair spoilt by the inner solves'
    tolerance) would send b far off; that step is not taken, H starts again from ρI,
    and the solve still reaches the optimum."""
    monkeypatch.setattr(s2do_bias, "_bfgs_update", lambda H, s, y, initial=None: 1e12 * H)
    X, y = blobs(6, 4, 120, spread=2.0)
    problem = make_problem("ww", X, y, C=1.0, bias=True, gamma=0.05)
    _check(problem, s2do_bias.solve(problem, tol=1e-6), cvxpy_reference(problem), 1e-6)


@pytest.mark.parametrize("blas_threads", [1, None])
def test_the_checks_between_inner_solves_run_under_the_blas_limit(monkeypatch, blas_threads):
    """The Python-level work between the inner loops (here the certificate's check,
    ``_verify``) runs under ``blas_threads`` like the loops: OpenBLAS threads left
    busy-waiting after a multi-threaded call would hold the cores the next inner
    loop needs.  With None the library's own setting holds.  (Each BLAS library is
    compared with itself under the same limit: a single-threaded build stays at 1.)"""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads_now():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"}

    seen = []
    verify = s2do_bias._verify

    def spy(*args, **kwargs):
        seen.append(blas_threads_now())
        return verify(*args, **kwargs)

    monkeypatch.setattr(s2do_bias, "_verify", spy)
    X, y = blobs(6, 4, 80, spread=2.0)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    with threadpool_limits(limits=blas_threads or 2, user_api="blas"):
        expected = blas_threads_now()
    with threadpool_limits(limits=2, user_api="blas"):
        outside = blas_threads_now()
        solution = s2do_bias.solve(problem, tol=1e-6, blas_threads=blas_threads, n_jobs=2)
        assert blas_threads_now() == outside
    assert solution.status == "optimal" and seen
    assert all(threads == expected for threads in seen)
