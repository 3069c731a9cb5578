"""The Frank–Wolfe solver reaches the reference optimum of every machine, with and without bias.

What is checked against what.  The reference is cvxpy/Clarabel followed by an
active-set polish (KKT residual ≤ 1e-9), an independent interior-point
answer.  Frank–Wolfe stops on its own certificate, the Frank–Wolfe gap
∇J(α)ᵀ(α − s) ≥ J(α) − J*, so at ``tol`` the dual objective can be at most
``tol``·|J| below the optimum: the tests check that inequality against the
reference's J*, the equality constraints of the bias to 1e-9·C, and b
(from the KKT conditions and from the LP's dual values) against the
reference's b where it is unique.
"""

import time

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from msvm.diagnostics import diagnose
from msvm.solvers import frank_wolfe

from problem_factory import (
    FAMILY,
    MODELS,
    JumpingClock,
    blobs,
    cvxpy_reference,
    make_problem,
)


def _check_against(problem, solution, reference, tol):
    ref_solution, ref = reference
    d = diagnose(problem, solution)
    J, J_ref = -d.dual_objective, -ref.dual_objective
    assert solution.status == "optimal", solution.info
    assert problem.check_feasible(solution.alpha, atol=1e-9)
    # The gap certificate: J(α) − J* ≤ gap ≤ tol·|J| (up to round-off of J*).
    assert J - J_ref <= solution.info["fw_gap"] + 1e-9 * abs(J_ref)
    assert solution.info["fw_gap"] <= tol * abs(J) + 1e-12
    if problem.fit_intercept:
        assert np.max(np.abs(problem.equality_residual(solution.alpha))) <= 1e-9 * problem.C
        # b rests on the free variables: only a tight tol pins it down.
        if tol <= 1e-8 and d.b_method == "kkt" and ref.b_method == "kkt":
            np.testing.assert_allclose(solution.b, ref_solution.b, atol=1e-5 * max(1, problem.C))
    return d


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_matches_reference(model, kernel, bias):
    X, y = blobs(4, 3, 45, spread=1.5)
    for C in (0.5, 5.0):
        problem = make_problem(model, X, y, kernel=kernel, C=C, bias=bias)
        solution = frank_wolfe.solve(problem, tol=1e-10)
        d = _check_against(problem, solution, cvxpy_reference(problem), 1e-10)
        assert d.kkt_residual <= 1e-6, (C, d.kkt_residual)


@pytest.mark.parametrize("face_steps", [True, False])
@pytest.mark.parametrize("variant", frank_wolfe.VARIANTS)
def test_every_variant_meets_its_certificate(variant, face_steps):
    """Without in-face steps vertex steps converge sublinearly: a looser tol."""
    X, y = blobs(5, 4, 40, spread=2.0)
    tol = 1e-8 if face_steps else 1e-3
    for model, bias in (("ww", True), ("cs", True), ("msvm2", False)):
        problem = make_problem(model, X, y, C=1.0, bias=bias)
        solution = frank_wolfe.solve(problem, tol=tol, fw_variant=variant, face_steps=face_steps)
        _check_against(problem, solution, cvxpy_reference(problem), tol)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_decomposition_matches_reference(model, bias):
    X, y = blobs(7, 4, 80, spread=2.0)
    problem = make_problem(model, X, y, C=2.0, bias=bias)
    solution = frank_wolfe.solve(problem, tol=1e-9, working_set_size=12, cache_size=0.05)
    _check_against(problem, solution, cvxpy_reference(problem), 1e-9)
    assert solution.info["n_splits"] > 3
    # The scores kept across splits are K'β̄ (no drift from the row updates).
    np.testing.assert_allclose(solution.scores, problem.scores(problem.beta(solution.alpha)),
                               atol=1e-9 * problem.C * len(y))


@pytest.mark.parametrize("model", ["ww", "cs"])
def test_decomposition_does_not_depend_on_the_clock(monkeypatch, model):
    """Whether the decomposition stops "stalled" is counted in splits, not seconds: with
    a clock that jumps a thousand seconds at every reading (splits that each take
    seconds, as the linear problem over every variable of usps does) the solver takes
    the same path to the same optimum, bit for bit.  Near tol = 1e-9, J stays flat over
    several splits in a row while the gap still falls."""
    X, y = blobs(7, 4, 80, spread=2.0)
    problem = make_problem(model, X, y, C=2.0, bias=True)
    options = dict(tol=1e-9, working_set_size=12, cache_size=0.05)
    expected = frank_wolfe.solve(problem, **options)
    monkeypatch.setattr(time, "perf_counter", JumpingClock().perf_counter)
    slowed = frank_wolfe.solve(problem, **options)
    assert slowed.status == expected.status == "optimal"
    assert np.array_equal(slowed.alpha, expected.alpha)


@pytest.mark.parametrize("model", ["ww", "cs", "llw"])
def test_lp_duals_give_the_kkt_bias(model):
    X, y = blobs(2, 3, 60, spread=1.5)
    problem = make_problem(model, X, y, C=1.0, bias=True)
    solution = frank_wolfe.solve(problem, tol=1e-10)
    assert solution.info["b_method"] == "kkt"
    assert solution.info["b_lp_diff"] <= 1e-6


def test_msvm2_box_grows_until_it_does_not_bind():
    X, y = blobs(1, 3, 60, spread=1.0)
    y[:4] = (y[:4] + 1) % 3  # mislabelled points: large slacks, large α
    problem = make_problem("msvm2", X, y, kernel="linear", C=1.0, bias=True)
    ref_solution, ref = cvxpy_reference(problem)
    assert ref_solution.alpha.max() > 4 * problem.C  # the first box [0, 4C] binds
    solution = frank_wolfe.solve(problem, tol=1e-9)
    assert solution.info["box_bound"] > ref_solution.alpha.max()
    _check_against(problem, solution, (ref_solution, ref), 1e-9)


def test_warm_start_along_C():
    X, y = blobs(3, 3, 60, spread=2.0)
    first = frank_wolfe.solve(make_problem("ww", X, y, C=1.0, bias=True), tol=1e-9)
    problem = make_problem("ww", X, y, C=1.1, bias=True)
    cold = frank_wolfe.solve(problem, tol=1e-9, record=True)
    warm = frank_wolfe.solve(problem, tol=1e-9, warm_start=first, record=True)
    _check_against(problem, warm, cvxpy_reference(problem), 1e-9)
    # The previous optimum starts with a smaller gap bound and needs fewer steps.
    assert warm.info["history"][0][3] < 0.01 * cold.info["history"][0][3]
    assert warm.n_iter < cold.n_iter


def test_warm_start_off_the_equality_constraints_is_projected():
    from msvm.diagnostics import project_feasible

    X, y = blobs(3, 3, 30)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    alpha = problem.zeros()
    alpha[0, problem.active[0]] = 0.5
    start = project_feasible(problem, alpha)
    assert problem.check_feasible(start, atol=1e-10)
    # The projection is the nearest feasible point: no closer than 0 (feasible) is to α.
    assert np.sum((start - alpha) ** 2) <= np.sum(alpha**2) + 1e-12
    solution = frank_wolfe.solve(problem, warm_start=alpha, tol=1e-8)
    assert solution.status == "optimal"
    assert problem.check_feasible(solution.alpha, atol=1e-9)


def test_history_is_monotone():
    """Every step is an exact line search along a descent direction: D never decreases."""
    X, y = blobs(6, 3, 50)
    problem = make_problem("cs", X, y, C=1.0, bias=True)
    solution = frank_wolfe.solve(problem, tol=1e-8, record=True)
    duals = np.array([h[2] for h in solution.info["history"]])
    assert len(duals) > 3
    assert np.all(np.diff(duals) >= -1e-10 * np.abs(duals[1:]))


def test_max_iter_warns_and_reports():
    X, y = blobs(6, 3, 50)
    problem = make_problem("ww", X, y, C=1.0, bias=True)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        solution = frank_wolfe.solve(problem, tol=1e-12, max_iter=3)
    assert solution.status == "max_iter"
    assert problem.check_feasible(solution.alpha, atol=1e-9)


@pytest.mark.parametrize("C", [1e12, 1e308])
@pytest.mark.filterwarnings("error::RuntimeWarning")   # (4C = inf gave inf − inf warnings)
def test_steps_that_cannot_move_stop_as_stalled(C):
    # The M-SVM²'s first box is [0, 4C]: with a huge C every step was snapped back to
    # α = 0 (SNAP·cap) and the inner loop repeated it until the budget (10⁷ steps by
    # default: hours on 30 points); with 4C = inf the box was doubled for ever.
    X, y = blobs(0, 3, 30, spread=1.0)
    problem = make_problem("msvm2", X, y, C=C)
    with pytest.warns(ConvergenceWarning, match="stopped increasing"):
        solution = frank_wolfe.solve(problem, max_iter=20_000)
    assert solution.status == "stalled"
    assert solution.n_iter < 1000


@pytest.mark.parametrize("bias", [False, True])
def test_a_snapped_variable_does_not_end_the_face_phase(bias):
    # LLW, linear kernel, C = 1e8: the first steps leave α a few SNAP·C above zero, so a
    # conjugate-gradient step snapped free variables onto 0 and the next one had a ratio
    # θ_max = 0; cg_phase called that "converged" and every vertex step was followed by
    # two face steps that did nothing: J crept up ~0.06 a step towards −2.6e9, a fit
    # of 10⁷ steps (hours on 40 points).  The face is re-read instead.
    X, y = blobs(1, 3, 40, spread=3.0)
    problem = make_problem("llw", X, y, kernel="linear", C=1e8, bias=bias)
    solution = frank_wolfe.solve(problem, tol=1e-3, max_iter=20_000)
    assert solution.status == "optimal"
    assert solution.n_iter < 5000
    assert solution.info["fw_gap"] <= 1e-3 * diagnose(problem, solution).dual_objective


def test_a_linear_problem_tight_at_every_bound_is_solved():
    # class_weight='balanced' with one example against 160: the lone example's capacity
    # equals the other class's total, and the first vertex (every gradient −1) makes the
    # bias row tight with every column at a bound.  HiGHS's presolve, at the LP's
    # feasibility tolerance 1e-10, called this LP (s = 0 is feasible) infeasible, and a
    # Frank–Wolfe fit with a bias raised "HiGHS failed on the linear problem of a
    # working set: Infeasible".
    from msvm.solvers.frank_wolfe._lp import LinearProblem

    for n0, C in [(160, 1000.0), (400, 100.0)]:
        cap = np.r_[np.full(n0, C * (n0 + 1) / (2 * n0)), C * (n0 + 1) / 2]
        n = n0 + 1
        nuU = np.r_[np.full(n0, -np.sqrt(2)), np.sqrt(2)].reshape(n, 1, 1)
        lp = LinearProblem(nuU, np.ones((n, 1), bool), np.zeros((n, 1), np.int32), cap,
                           np.zeros(1))
        x, _, value = lp.solve(-np.ones(n))
        np.testing.assert_allclose(x, cap, rtol=1e-12)
        assert value == pytest.approx(-cap.sum(), rel=1e-12)


@pytest.mark.parametrize("options, message", [
    ({"fw_variant": "sideways"}, "fw_variant must be one of"),
    ({"working_set_size": 1}, "working_set_size must be an integer >= 2"),
    ({"tol": -1.0}, "tol must be a non-negative number"),
    ({"max_iter": 0}, "max_iter must be a positive integer"),
    ({"full_lp_every": 0}, "full_lp_every must be a positive integer"),
    ({"cache_size": 0}, "cache_size must be a positive number"),
    ({"inner_ratio": np.nan}, "inner_ratio must be a non-negative number"),
    ({"inner_ratio": -1.0}, "inner_ratio must be a non-negative number"),
    ({"blas_threads": 0}, "blas_threads must be a positive integer or None"),
])
def test_bad_options(options, message):
    X, y = blobs(0, 3, 20)
    with pytest.raises(ValueError, match=message):
        frank_wolfe.solve(make_problem("ww", X, y, bias=True), **options)
