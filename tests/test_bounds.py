"""Enclosing ball, radius–margin bound, exact leave-one-out and RadiusMarginSearch.

References are independent: cvxpy for the ball's QP and for hard-margin
binary SVMs, scikit-learn's SVC for the two-class reduction, and brute-force
retraining with MultiClassSVC for the leave-one-out.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from msvm import MultiClassSVC
from msvm.bounds import enclosing_ball, radius_margin_bound
from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.model_selection import RadiusMarginSearch, loo_error
from msvm.problem import DualProblem
from msvm.solvers import get_solver

from problem_factory import blobs, make_problem


def _factor(K):
    """F with F Fᵀ = K for a PSD (possibly singular) K."""
    w, V = np.linalg.eigh(K)
    return V * np.sqrt(np.maximum(w, 0.0))


def _cvxpy_ball(K):
    """max Σβκ_ii − βᵀKβ over the simplex, by Clarabel."""
    beta = cp.Variable(len(K))
    prob = cp.Problem(cp.Maximize(np.diag(K) @ beta - cp.sum_squares(_factor(K).T @ beta)),
                      [beta >= 0, cp.sum(beta) == 1])
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_ball_matches_cvxpy_and_encloses_every_point(kernel, shift):
    X, _ = blobs(3, 3, 80, 1.5)
    kern = Kernel(X, kernel, gamma=0.3, degree=2, coef0=1.0)
    ball = enclosing_ball(kern, shift=shift, tol=1e-12)
    K = kern.gram() + shift * np.eye(len(X))
    ref = _cvxpy_ball(K)
    assert ball.status == "optimal"
    assert ball.radius2 == pytest.approx(ref, rel=1e-6)
    assert 0 <= ball.gap <= 1e-10 * ball.radius2
    # The certificate: the ball centred at Σβ_iΦ(x_i) with radius² = radius2 holds every point.
    c = ball.coef
    assert np.all(c >= 0) and c.sum() == pytest.approx(1.0, abs=1e-12)
    d = np.diag(K) - 2 * K @ c + c @ K @ c
    assert d.max() == pytest.approx(ball.radius2, rel=1e-9)
    assert ball.diameter == pytest.approx(2 * np.sqrt(ref), rel=1e-6)


def test_ball_warm_start_precomputed_and_cache_agree():
    X, _ = blobs(4, 2, 120, 2.0)
    kern = Kernel(X, "rbf", gamma=0.2)
    cold = enclosing_ball(kern, shift=0.05, tol=1e-12)
    warm = enclosing_ball(kern, shift=0.05, tol=1e-12,
                          warm_start=enclosing_ball(kern, shift=0.5, tol=1e-12))
    pre = enclosing_ball(kern.gram(), "precomputed", shift=0.05, tol=1e-12, cache_size=0.01)
    assert warm.radius2 == pytest.approx(cold.radius2, rel=1e-10)
    assert pre.radius2 == pytest.approx(cold.radius2, rel=1e-10)
    # With a larger shift every point gains a private dimension: R² grows by less than it.
    assert cold.radius2 < enclosing_ball(kern, shift=0.5).radius2 < cold.radius2 + 0.5


@pytest.mark.parametrize("bias", [False, True])
def test_proposition_3_norms_from_the_dual(bias):
    X, y = blobs(5, 4, 48, 2.0)
    problem = make_problem("msvm2", X, y, C=0.7, bias=bias)
    alpha = get_solver("cvxpy").solve(problem).alpha
    beta = problem.beta(alpha)
    Q = problem.n_classes
    # Σ_k ‖w_k‖² in the feature space of k + δ/(2C) is βᵀK'β.
    norm_w2 = float(np.sum(beta * problem.scores(beta)))
    assert norm_w2 == pytest.approx(alpha.sum() / (Q - 1), rel=1e-7)
    bound = radius_margin_bound(problem, alpha)
    assert bound.norm_w2 == pytest.approx(norm_w2, rel=1e-7)


def _binary_problem(seed=6, m=30):
    X, y = blobs(seed, 2, m, 2.5)
    return X, y


def test_two_class_reduction_with_bias_is_vapnik_bound():
    """Q = 2 with a bias: the bound equals D²‖w_b‖² of the hard-margin SVC on k + δ/(2C)."""
    X, y = _binary_problem()
    C, gamma = 2.0, 0.4
    problem = make_problem("msvm2", X, y, C=C, bias=True, gamma=gamma)
    solution = get_solver("cvxpy").solve(problem)
    bound = radius_margin_bound(problem, solution)
    K2 = problem.kernel.gram() + np.eye(len(X)) / (2 * C)
    svc = SVC(kernel="precomputed", C=1e8, tol=1e-10).fit(K2, y)
    a = np.zeros(len(X))
    a[svc.support_] = svc.dual_coef_[0]
    norm_wb2 = float(a @ K2 @ a)
    D2 = bound.ball.diameter ** 2
    assert bound.bound == pytest.approx(D2 * norm_wb2, rel=1e-5)
    # ... and the exact LOO errors of that SVC (brute force) agree with loo_error and the bound.
    mistakes = 0
    for p in range(len(X)):
        keep = np.arange(len(X)) != p
        f = SVC(kernel="precomputed", C=1e8, tol=1e-10).fit(K2[np.ix_(keep, keep)], y[keep])
        mistakes += f.predict(K2[p : p + 1, keep])[0] != y[p]
    loo = loo_error(MultiClassSVC(model="msvm2", C=C, gamma=gamma, fit_intercept=True,
                                  solver="cvxpy"), X, y)
    assert loo.n_errors == mistakes
    assert bound.n_candidates >= mistakes and bound.bound >= mistakes
    assert np.all(bound.candidates[loo.errors])


def test_two_class_reduction_without_bias():
    """Q = 2 without a bias: R₀²‖w_b‖² of the bias-free hard-margin SVM on k + δ/(2C)."""
    X, y = _binary_problem(7)
    C, gamma = 1.0, 0.4
    problem = make_problem("msvm2", X, y, C=C, bias=False, gamma=gamma)
    bound = radius_margin_bound(problem, get_solver("cvxpy").solve(problem))
    K2 = problem.kernel.gram() + np.eye(len(X)) / (2 * C)
    s = 2.0 * y - 1
    a = cp.Variable(len(X))
    cp.Problem(cp.Maximize(cp.sum(a) - 0.5 * cp.sum_squares(_factor(K2).T @ cp.multiply(s, a))),
               [a >= 0]).solve(solver="CLARABEL")
    norm_wb2 = float(np.sum(a.value))  # hard margin: ‖w‖² = Σ a at the optimum
    assert bound.radius2 == pytest.approx(1.0 + 1.0 / (2 * C))
    assert bound.bound == pytest.approx(bound.radius2 * norm_wb2, rel=1e-5)


def _tight(solver: str, tol: float) -> dict:
    """``tol=tol`` for the solvers that take it (the reference solvers run to their own
    accuracy, and the estimator warns when it is given one it ignores)."""
    return {"tol": tol} if "tol" in get_solver(solver).OPTIONS else {}


@pytest.mark.parametrize(("Q", "bias", "solver", "m"),
                         [(3, False, "s2do", 60), (5, False, "s2do", 60), (3, True, "osqp", 30)])
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_bound_is_above_exact_loo(Q, bias, solver, m, C):
    X, y = blobs(10 + Q, Q, m, 3.0)
    est = MultiClassSVC(model="msvm2", C=C, gamma=0.5, fit_intercept=bias, solver=solver,
                        **_tight(solver, 1e-9))
    loo = loo_error(est, X, y)
    problem = make_problem("msvm2", X, y, C=C, bias=bias, gamma=0.5)
    bound = radius_margin_bound(problem, get_solver("cvxpy").solve(problem))
    assert loo.n_errors > 0  # the data overlap: the check is not vacuous
    assert bound.bound >= bound.n_candidates >= loo.n_errors
    assert np.all(bound.candidates[loo.errors])  # every LOO error meets the lemma's condition


def test_a_ball_of_another_problem_still_gives_a_bound():
    """radius_margin_bound used the given ball's radius2 as is: the ball of the same points
    at C=100 (enclosing_ball's documented warm start) made the bound at C=0.05 60.8 with 0
    candidates, against 22 exact LOO errors."""
    X, y = blobs(2, 3, 40, 3.0)
    problem = make_problem("msvm2", X, y, C=0.05, bias=True)
    solution = get_solver("cvxpy").solve(problem)
    own = radius_margin_bound(problem, solution)
    loo = loo_error(MultiClassSVC(model="msvm2", C=0.05, gamma=0.5, fit_intercept=True,
                                  solver="cvxpy"), X, y)
    assert loo.n_errors > 0
    for ball in (enclosing_ball(problem.kernel, shift=1 / 200.0),            # C = 100
                 enclosing_ball(np.random.default_rng(0).normal(size=(40, 2)))):  # other points
        bound = radius_margin_bound(problem, solution, ball=ball)
        assert bound.radius2 >= own.radius2 * (1 - 1e-9)
        assert bound.bound >= bound.n_candidates >= loo.n_errors
        assert np.all(bound.candidates[loo.errors])
    # The problem's own ball gives the value computed without one.
    again = radius_margin_bound(problem, solution, ball=own.ball)
    assert again.radius2 == pytest.approx(own.ball.radius2, rel=1e-9)
    with pytest.raises(ValueError, match="ball must have 40 finite weights"):
        radius_margin_bound(problem, solution, ball=enclosing_ball(X[:10]))


def test_a_solution_stopped_early_is_refused():
    """A DualSolution with status 'max_iter' was bounded as if optimal: its small 1ᵀα gave
    13.6 where the exact leave-one-out count is 14 (and the optimum's bound 169)."""
    X, y = blobs(2, 3, 40, 3.0)
    problem = make_problem("msvm2", X, y, C=1.0)
    with pytest.warns(ConvergenceWarning):
        early = get_solver("s2do").solve(problem, max_iter=3)
    assert early.status == "max_iter"
    loo = loo_error(MultiClassSVC(model="msvm2", C=1.0, gamma=0.5, tol=1e-8), X, y)
    assert radius_margin_bound(problem, early.alpha).bound < loo.n_errors   # what it gave
    with pytest.raises(ValueError, match="assumes an optimal solution; got status 'max_iter'"):
        radius_margin_bound(problem, early)


@pytest.mark.parametrize(("model", "bias", "solver"),
                         [("ww", False, "s2do"), ("cs", False, "s2do"), ("llw", False, "s2do"),
                          ("msvm2", False, "s2do"), ("llw", True, "cvxpy")])
def test_loo_matches_brute_force(model, bias, solver):
    X, y = blobs(2, 3, 24, 2.5)
    est = MultiClassSVC(model=model, C=1.0, gamma=0.5, fit_intercept=bias, solver=solver,
                        **_tight(solver, 1e-10))
    loo = loo_error(est, X, y, n_jobs=2 if model == "ww" else None)
    brute = np.array([
        MultiClassSVC(**est.get_params()).fit(np.delete(X, p, 0), np.delete(y, p))
        .predict(X[p : p + 1])[0] for p in range(len(X))])
    np.testing.assert_array_equal(loo.predictions, brute)
    assert loo.n_errors == int(np.sum(brute != y))
    assert 0 < loo.n_retrained <= len(X)


@pytest.mark.parametrize("sparse", [False, True])
def test_loo_with_the_linear_solver_matches_brute_force(sparse):
    """kernel='linear' resolves to solver 'linear' (primal W), which cannot take the Gram
    sub-blocks loo_error retrains on: it raised "Solver 'linear' needs kernel='linear'
    ... got kernel='precomputed'" after the full fit."""
    import scipy.sparse as sparse_matrix

    X, y = blobs(3, 3, 30, 2.5)
    est = MultiClassSVC(model="cs", C=1.0, kernel="linear", tol=1e-8)
    assert est.prepare_fit(X, y).solver == "linear"
    loo = loo_error(est, sparse_matrix.csr_matrix(X) if sparse else X, y)
    brute = np.array([
        MultiClassSVC(**est.get_params()).fit(np.delete(X, p, 0), np.delete(y, p))
        .predict(X[p : p + 1])[0] for p in range(len(X))])
    np.testing.assert_array_equal(loo.predictions, brute)
    assert loo.n_errors == int(np.sum(brute != y)) > 0 and loo.n_retrained > 0


def test_removing_a_non_support_vector_keeps_the_solution_optimal():
    X, y = blobs(0, 3, 45, 0.6)  # well separated: many non-support vectors
    problem = make_problem("ww", X, y, C=10.0, gamma=0.5)
    alpha = get_solver("cvxpy").solve(problem).alpha
    full = diagnose(problem, alpha)
    non_support = np.flatnonzero(~np.any(alpha > 0, axis=1))
    assert len(non_support) >= 10
    for p in non_support[:10]:
        keep = np.arange(len(X)) != p
        reduced = DualProblem(problem.machine, y[keep], Kernel(X[keep], "rbf", gamma=0.5),
                              10.0, False)
        d = diagnose(reduced, alpha[keep])
        assert d.kkt_violation <= max(full.kkt_violation, 1e-9)
        assert d.dual_objective == pytest.approx(full.dual_objective, rel=1e-12)
    # and the restricted α is the reduced problem's optimum (independent solve).
    ref = get_solver("cvxpy").solve(reduced)
    assert diagnose(reduced, ref).dual_objective == pytest.approx(d.dual_objective, rel=1e-8)
    loo = loo_error(MultiClassSVC(model="ww", C=10.0, gamma=0.5, solver="s2do", tol=1e-9), X, y)
    assert loo.n_retrained < len(X) and loo.reduced_kkt_violation <= loo.kkt_tolerance


@pytest.mark.parametrize("bias", [False, True])
def test_search_picks_the_grid_minimum(bias):
    X, y = blobs(8, 3, 45, 2.0)
    solver = "osqp" if bias else "s2do"
    base = MultiClassSVC(model="msvm2", fit_intercept=bias, solver=solver, **_tight(solver, 1e-9))
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.05, 0.5]}
    search = RadiusMarginSearch(base, grid, criterion="bound").fit(X, y)
    res = search.cv_results_
    assert search.best_index_ == int(np.argmin(res["bound"]))
    assert res["rank_bound"][search.best_index_] == 1
    assert search.best_score_ == pytest.approx(res["bound"].min())
    assert set(res) >= {"params", "param_C", "param_gamma", "bound", "radius2", "sum_alpha",
                        "time", "fit_time", "bound_time"}
    # Warm-started values equal a cold, independent computation at every grid point.
    for params, value in zip(res["params"], res["bound"], strict=True):
        problem = make_problem("msvm2", X, y, C=params["C"], bias=bias, gamma=params["gamma"])
        ref = radius_margin_bound(problem, get_solver("cvxpy").solve(problem))
        assert value == pytest.approx(ref.bound, rel=1e-6)
    fresh = MultiClassSVC(**{**base.get_params(), **search.best_params_}).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), fresh.predict(X))
    assert search.score(X, y) == fresh.score(X, y)
    by_candidates = RadiusMarginSearch(base, grid).fit(X, y)   # the default criterion
    res = by_candidates.cv_results_
    keys = list(zip(res["n_candidates"], res["bound"], strict=True))
    assert by_candidates.best_index_ == min(range(len(keys)), key=keys.__getitem__)
    assert by_candidates.best_score_ == min(res["n_candidates"])


def test_search_keeps_the_feature_names_of_a_dataframe():
    """Fitted on a DataFrame, the search had no feature_names_in_ (GridSearchCV has)."""
    pd = pytest.importorskip("pandas")
    X, y = blobs(3, 3, 30)
    frame = pd.DataFrame(X, columns=["a", "b"])
    search = RadiusMarginSearch(MultiClassSVC(model="msvm2"), {"C": [1.0, 10.0]}).fit(frame, y)
    np.testing.assert_array_equal(search.feature_names_in_, ["a", "b"])
    assert not hasattr(RadiusMarginSearch(MultiClassSVC(model="msvm2"), {"C": [1.0]}).fit(X, y),
                       "feature_names_in_")


def test_search_tags_follow_the_estimator():
    """The search takes what its estimator takes: sparse X, and with kernel='precomputed'
    a Gram matrix, which cross-validation must split by rows and columns (the search
    said neither, so cross_val_score cut K's rows only and every fold failed)."""
    import scipy.sparse as sp
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.model_selection import cross_val_score

    X, y = blobs(4, 3, 30)
    grid = {"C": [1.0, 10.0]}
    pre = RadiusMarginSearch(MultiClassSVC(model="msvm2", kernel="precomputed", tol=1e-9), grid)
    rbf = RadiusMarginSearch(MultiClassSVC(model="msvm2", gamma=0.5, tol=1e-9), grid)
    assert pre.__sklearn_tags__().input_tags.pairwise
    assert not rbf.__sklearn_tags__().input_tags.pairwise
    assert rbf.__sklearn_tags__().input_tags.sparse
    assert RadiusMarginSearch(param_grid=grid).__sklearn_tags__().input_tags.sparse
    by_gram = cross_val_score(pre, rbf_kernel(X, gamma=0.5), y, cv=3, error_score="raise")
    np.testing.assert_array_equal(by_gram, cross_val_score(rbf, X, y, cv=3))
    assert rbf.fit(sp.csr_matrix(X), y).score(X, y) == rbf.fit(X, y).score(X, y)


def test_bad_input():
    X, y = blobs(0, 3, 20)
    kern = Kernel(X, "rbf", gamma=0.5)
    with pytest.raises(ValueError, match="shift"):
        enclosing_ball(kern, shift=-1.0)
    with pytest.raises(ValueError, match="tol"):
        enclosing_ball(kern, tol=-1.0)
    with pytest.raises(ValueError, match="warm_start"):
        enclosing_ball(kern, warm_start=np.ones(3))
    with pytest.raises(ValueError, match="non-empty 2-D"):
        enclosing_ball(np.zeros((0, 2)))
    # These gave radius 0 and status 'optimal' (the NaN rbf one: "gamma='scale' needs the
    # variance of X, which overflows float64").
    for bad, kind in [(np.array([[np.nan, 1.0], [0.0, 0.0]]), "rbf"),
                      (np.array([[np.inf, 1.0], [0.0, 0.0]]), "linear"),
                      (np.full((3, 3), np.nan), "precomputed")]:
        with pytest.raises(ValueError, match="X contains NaN or infinite values"):
            enclosing_ball(bad, kernel=kind)
    with pytest.raises(TypeError, match="kernel"):
        enclosing_ball(X, kernel=3)
    ww = make_problem("ww", X, y)
    with pytest.raises(ValueError, match="M-SVM2"):
        radius_margin_bound(ww, ww.zeros())
    problem = make_problem("msvm2", X, y)
    with pytest.raises(ValueError, match="alpha has shape"):
        radius_margin_bound(problem, np.zeros((3, 3)))
    for bias in (False, True):   # a bound of NaN with 0 LOO candidates, before
        problem = make_problem("msvm2", X, y, bias=bias)
        alpha = problem.zeros()
        alpha[0, np.flatnonzero(problem.active[0])[0]] = np.nan
        with pytest.raises(ValueError, match="alpha contains NaN or infinite"):
            radius_margin_bound(problem, alpha)
    with pytest.raises(TypeError, match="DualProblem"):
        radius_margin_bound("problem", np.zeros((3, 3)))
    with pytest.raises(TypeError, match="MultiClassSVC"):
        loo_error(SVC(), X, y)
    with pytest.raises(ValueError, match="param_grid is required"):
        RadiusMarginSearch().fit(X, y)
    with pytest.raises(ValueError, match="param_grid has no points"):   # was: "No grid point
        RadiusMarginSearch(param_grid=[]).fit(X, y)                     # converged"
    # A value out of range is found before any training (it was found when its path came,
    # after the others had been trained): here X is not even looked at.
    with pytest.raises(ValueError, match="'gamma' parameter of MultiClassSVC.*Got -1.0"):
        RadiusMarginSearch(param_grid={"C": [1.0], "gamma": [0.5, -1.0]}).fit(None, None)
    with pytest.raises(ValueError, match="does not have"):
        RadiusMarginSearch(param_grid={"C": [1.0], "nu": [0.5]}).fit(X, y)
    with pytest.raises(ValueError, match="model='msvm2' only"):
        RadiusMarginSearch(MultiClassSVC(model="ww"), {"C": [1.0]}).fit(X, y)
    with pytest.raises(TypeError, match="MultiClassSVC"):
        RadiusMarginSearch(SVC(), {"C": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="criterion"):
        RadiusMarginSearch(param_grid={"C": [1.0]}, criterion="cv").fit(X, y)
    with pytest.raises(ValueError, match="ball_tol"):
        RadiusMarginSearch(param_grid={"C": [1.0]}, ball_tol=-1).fit(X, y)
