"""Diagnostics: weak duality, KKT residuals that detect suboptimality, b, ξ."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import null_space

from msvm.diagnostics import (
    _analytic_centre,
    _bias_from_centre,
    _project,
    _project_capped_simplex,
    _squared_slacks,
    bias_from_kkt,
    diagnose,
    kkt_violation,
    primal_objective,
    repair_equality,
)
from msvm.solvers import get_solver

from problem_factory import MODELS, blobs, make_problem


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_weak_duality_and_gap_detects_suboptimal_points(model, bias):
    X, y = blobs(5, 3, 45, spread=2.5)
    problem = make_problem(model, X, y, C=2.0, bias=bias)
    optimum = get_solver("osqp").solve(problem).alpha
    at_optimum = diagnose(problem, optimum)
    assert abs(at_optimum.relative_gap) <= 1e-8
    # Scaling α keeps every constraint (homogeneous equalities, box, simplex).
    for t in (0.0, 0.3, 0.8):
        d = diagnose(problem, t * optimum)
        assert d.duality_gap >= -1e-10  # weak duality
        assert d.dual_objective < at_optimum.dual_objective
        assert d.duality_gap >= at_optimum.dual_objective - d.dual_objective - 1e-9
        if t > 0:
            assert d.kkt_residual > 1e-3
            assert d.kkt_violation > 1e-3


def test_random_feasible_points_never_beat_the_primal():
    X, y = blobs(2, 4, 40, spread=3.0)
    rng = np.random.default_rng(1)
    for model in MODELS:
        problem = make_problem(model, X, y, C=1.5)
        for _ in range(5):
            alpha = rng.uniform(0, 1.5, problem.active.shape) * problem.active
            if problem.machine.max_loss:
                alpha *= 1.5 / np.maximum(alpha.sum(axis=1, keepdims=True), 1.5)
            assert problem.check_feasible(alpha)
            d = diagnose(problem, alpha)
            assert d.duality_gap >= -1e-10


@pytest.mark.parametrize("model", ["ww", "llw", "ats", "ova", "mmr"])
def test_own_slack_shortcuts_equal_the_per_group_computation(model, monkeypatch):
    # Machines whose constraints each have their own slack take elementwise shortcuts
    # (projection, KKT violation, ξ); they must give the per-group results bit for bit,
    # also at infeasible points (negative, over capacity) and with per-example capacities.
    X, y = blobs(3, 4, 40, spread=2.5)
    problem = make_problem(model, X, y, C=1.5)
    problem = type(problem)(problem.machine, problem.y, problem.kernel, 1.5, False,
                            sample_weight=np.random.default_rng(0).uniform(0.5, 2.0, len(y)))
    rng = np.random.default_rng(4)
    cases = []
    for _ in range(5):
        alpha = rng.uniform(-0.5, 1.5, problem.active.shape) * problem.capacity[:, None]
        alpha *= (rng.uniform(size=alpha.shape) < 0.6) * problem.active
        full = rng.uniform(size=alpha.shape) < 0.2
        alpha = np.where(full, problem.capacity[:, None], alpha)   # some at capacity
        cases.append((alpha * problem.active, rng.normal(size=alpha.shape)))

    def numbers():
        out = []
        for alpha, G in cases:
            primal, xi = primal_objective(problem, np.abs(alpha), np.zeros(problem.n_classes))
            out.append((_project(problem, alpha), kkt_violation(problem, alpha, G, True),
                        primal, xi))
        return out

    assert problem.machine.own_slacks
    shortcut = numbers()
    monkeypatch.setattr(type(problem.machine), "own_slacks", property(lambda machine: False))
    for got, want in zip(shortcut, numbers(), strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_capped_simplex_projection_matches_a_generic_solver():
    """Each row against cvxpy (Clarabel).  (scipy 1.17's SLSQP returned an infeasible
    point, a coordinate of 1 948 with the sum capped at 1, on one of these rows.)"""
    import cvxpy as cp

    rng = np.random.default_rng(2)
    v = rng.normal(size=(20, 5)) * 2
    member = rng.uniform(size=(20, 5)) < 0.8
    x = _project_capped_simplex(v, member, 1.0)
    for row in range(20):
        idx = np.flatnonzero(member[row])
        z = cp.Variable(len(idx))
        cp.Problem(cp.Minimize(cp.sum_squares(z - v[row, idx])),
                   [z >= 0, cp.sum(z) <= 1.0]).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(x[row, idx], z.value, atol=1e-6)
        assert np.all(x[row, ~member[row]] == 0)


def test_squared_slacks_closed_form_matches_a_generic_solver():
    """Each row against cvxpy (Clarabel)."""
    import cvxpy as cp

    rng = np.random.default_rng(3)
    r = rng.normal(size=(15, 4))
    r[::3, 1] = -np.inf  # an absent slot
    xi = _squared_slacks(r)
    for row in range(15):
        idx = np.flatnonzero(np.isfinite(r[row]))
        z = cp.Variable(len(idx))
        cp.Problem(cp.Minimize(cp.sum_squares(z) + cp.square(cp.sum(z))),
                   [z >= r[row, idx]]).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(xi[row, idx], z.value, atol=1e-6)


def test_msvm2_gap_closes_with_the_conjugate_penalty_not_the_printed_one():
    """Seed 001's printed M = δ − 1/Q is not the conjugate of its dual's M/(2C) term."""
    X, y = blobs(4, 3, 40, spread=2.0)
    C = 1.0
    problem = make_problem("msvm2", X, y, C=C)
    solution = get_solver("osqp").solve(problem)
    d = diagnose(problem, solution)
    assert abs(d.relative_gap) < 1e-9
    # The printed penalty on the same (w, ξ) gives a primal *below* the dual:
    # impossible for a primal/dual pair, so the printed M cannot be right.
    Q = problem.n_classes
    reg = d.primal_objective - C * (np.sum(d.xi**2) + np.sum(d.xi.sum(1) ** 2))
    printed = reg + C * (np.sum(d.xi**2) - np.sum(d.xi.sum(1) ** 2) / Q)
    assert printed < d.dual_objective - 1e-3 * abs(d.dual_objective)


@pytest.mark.parametrize("model", MODELS)
def test_bias_from_kkt_matches_the_solver_multipliers(model):
    X, y = blobs(6, 3, 50, spread=2.5)
    problem = make_problem(model, X, y, C=1.0, bias=True)
    solution = get_solver("osqp").solve(problem)
    d = diagnose(problem, solution)
    assert d.b_method == "kkt"
    np.testing.assert_allclose(d.b, solution.b, atol=1e-7)


@pytest.mark.parametrize(("model", "data", "C"),
                         [("ww", (7, 3, 30, 4.0), 1e-3), ("cs", (7, 3, 30, 4.0), 1e-3),
                          ("llw", (7, 3, 30, 4.0), 1e-3), ("ova", (7, 3, 30, 4.0), 1e-3),
                          ("adm", (7, 3, 30, 4.0), 1e-3),
                          # four free variables whose equalities fix b in 2 of 3 directions
                          ("ww", (3, 4, 48, 3.0), 0.1)])
def test_bias_from_centre_minimises_the_primal_and_the_kkt_violation(model, data, C):
    # A tiny C puts every variable at its bound: for WW and LLW no free variable
    # determines b; in the last case the free variables fix only part of it.  For
    # the others (shared slacks, OvA's empty complement of span(U)) the centre's
    # linear program is called directly.
    X, y = blobs(*data)
    problem = make_problem(model, X, y, C=C, bias=True)
    solution = get_solver("osqp").solve(problem)
    alpha = solution.alpha
    grad = problem.gradient(alpha)
    if model in ("ww", "llw"):
        b, method = bias_from_kkt(problem, alpha, grad)
        assert method == "centre"
    else:
        b = _bias_from_centre(problem, alpha, grad)
    U = problem.equality_basis
    np.testing.assert_allclose(b, U @ (U.T @ b), atol=1e-12)   # b lies in span(U)

    def violation(b):
        return kkt_violation(problem, alpha, np.where(problem.active,
                                                      grad + problem.margin_terms(b), 0.0))

    best, _ = primal_objective(problem, alpha, b)
    assert violation(b) <= violation(solution.b) + 1e-12   # the reference solver's own b
    rng = np.random.default_rng(0)
    for _ in range(20):
        step = U @ rng.normal(size=U.shape[1])
        assert primal_objective(problem, alpha, b + 1e-2 * step)[0] >= best - 1e-12
        assert violation(b + 1e-2 * step) >= violation(b)


def test_bias_from_centre_is_the_analytic_centre_of_the_inequalities():
    # WW's conditions one by one: G_ip(b) = 0 where α is free, ≥ 0 at zero, ≤ 0 at C.
    # The equalities fix b in two of its three directions.  In the third, b must
    # maximise Σ log(room) over the tightest inequality of each direction of b
    # (with one bound on each side, the middle of the interval, as libsvm takes it).
    X, y = blobs(3, 4, 48, spread=3.0)
    C = 0.1
    problem = make_problem("ww", X, y, C=C, bias=True)
    alpha = get_solver("osqp").solve(problem).alpha
    grad = problem.gradient(alpha)
    b, method = bias_from_kkt(problem, alpha, grad)
    assert method == "centre"
    near = 1e-6 * C   # OSQP's accuracy
    free = problem.active & (alpha > near) & (alpha < C - near)
    i, p = np.nonzero(free)
    U = problem.equality_basis
    loose = U @ null_space(problem.nu[problem.y[i], p] @ U)   # what the equalities leave
    assert loose.shape[1] == 1
    G = grad + problem.margin_terms(b)
    assert np.abs(G[free]).max() <= 1e-6
    # Every bound variable's room and the direction in b that widens it.
    rooms, directions = [], []
    for sign, bound in ((1.0, problem.active & (alpha <= near)),
                        (-1.0, problem.active & (alpha >= C - near))):
        i, p = np.nonzero(bound)
        rooms.append(sign * G[i, p])
        directions.append(sign * problem.nu[problem.y[i], p])
    rooms, directions = np.concatenate(rooms), np.concatenate(directions)
    assert rooms.min() > 0
    groups, inverse = np.unique(directions.round(12), axis=0, return_inverse=True)
    tightest = np.full(len(groups), np.inf)
    np.minimum.at(tightest, inverse.ravel(), rooms)
    slope = groups @ loose[:, 0]                          # d room / dt along the loose direction
    assert abs(np.sum(slope / tightest)) <= 1e-6 * np.sum(np.abs(slope) / tightest)


def test_analytic_centre_and_its_fallback_where_a_direction_is_unbounded():
    # Rows c + a·b ≤ 0 in b = Vμ (two directions).  Bounded: −3 ≤ b1 ≤ 1 and
    # −1 ≤ b2 ≤ 5, so Σ log(room) is maximal at the middles (−1, 2).
    a = sp.csr_matrix([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    c = np.array([-1.0, -3.0, -5.0, -1.0])
    V = np.eye(2)
    start = np.array([0.5, 4.0])
    assert np.allclose(_analytic_centre(a, c, V, start), [-1.0, 2.0], atol=1e-8)
    # A second, looser bound on b1 from above still pulls the centre: the maximiser
    # of log(1 − b1) + log(2 − b1) + log(3 + b1) solves 3b1² = 7.
    pulled = _analytic_centre(sp.vstack([a, sp.csr_matrix([[1.0, 0.0]])]),
                              np.r_[c, -2.0], V, start)
    assert np.allclose(pulled, [-np.sqrt(7 / 3), 2.0], atol=1e-8)
    # A direction no row depends on (b2 here) keeps its value; the other is centred.
    assert np.allclose(_analytic_centre(a[:2], c[:2], V, start), [-1.0, 4.0], atol=1e-8)
    # Without the lower bound on b1 there is no centre (the rooms grow without end
    # as b1 → −∞): the starting point comes back.  Before this fallback, Newton's
    # steps ran off to b1 ≈ −1.3e8.
    open_rows = [0, 2, 3]
    assert np.array_equal(_analytic_centre(a[open_rows], c[open_rows], V, start), start)


@pytest.mark.parametrize("model", ["ww", "llw"])
def test_bounded_repair_is_the_least_norm_move_within_the_box(model):
    # An optimum whose free variables were pushed to just inside their bounds: the
    # least-norm move that solves the equalities would take some of them out of
    # [0, C], so the plain repair gives up (moving them back is one move that stays
    # inside); the bounded one must solve the equalities within the box,
    # leave the variables at 0 and at C where they are, and be the least-norm such
    # move (checked against cvxpy on the explicit constraints).
    import cvxpy as cp

    X, y = blobs(4, 3, 45, spread=2.5)
    C = 0.5
    problem = make_problem(model, X, y, C=C, bias=True)
    optimum = get_solver("osqp").solve(problem, tol=1e-10).alpha
    alpha = np.where(optimum > 1e-6 * C, optimum, 0.0)
    alpha[alpha >= C * (1 - 1e-6)] = C
    inner = np.flatnonzero(((alpha > 0) & (alpha < C)).ravel())
    assert len(inner) >= 6
    alpha.ravel()[inner[::2]] = C * (1 - 1e-9)
    alpha.ravel()[inner[1::2]] = C * 1e-9
    assert np.max(np.abs(problem.equality_residual(alpha))) > 1e-3 * C
    assert repair_equality(problem, alpha) is None

    repaired = repair_equality(problem, alpha, bounded=True)
    assert np.max(np.abs(problem.equality_residual(repaired))) <= 1e-12
    assert np.all((repaired >= 0) & (repaired <= C))
    fixed = np.ones(alpha.size, bool)
    fixed[inner] = False
    assert np.array_equal(repaired.ravel()[fixed], alpha.ravel()[fixed])
    delta = cp.Variable(len(inner))
    A = problem.equality_matrix()
    start = alpha.ravel()[inner]
    cp.Problem(cp.Minimize(cp.sum_squares(delta)),
               [A[:, inner] @ delta == -(A @ alpha.ravel()), start + delta >= 0,
                start + delta <= C]).solve()
    np.testing.assert_allclose(repaired.ravel()[inner] - start, delta.value, atol=1e-6 * C)


def test_kkt_violation_is_in_gradient_units():
    X, y = blobs(8, 3, 30)
    problem = make_problem("ww", X, y, C=1.0)
    d = diagnose(problem, problem.zeros())
    # At α = 0 every gradient is −γ = −1: increasing any variable gains 1 per unit.
    assert d.kkt_violation == pytest.approx(1.0)


@pytest.mark.parametrize("model", ["ww", "cs"])
def test_repair_equality_is_the_least_norm_move_that_keeps_full_groups(model):
    # An optimum with variables at C, perturbed off the bias equalities; the repair
    # must solve them, keep every group at capacity at its sum and zeros at zero, and
    # be the least-norm such move (checked against lstsq on the explicit constraints).
    X, y = blobs(4, 3, 45, spread=2.5)
    problem = make_problem(model, X, y, C=0.5, bias=True)
    optimum = get_solver("osqp").solve(problem, tol=1e-10).alpha
    alpha = np.where(optimum > 1e-6 * problem.C, optimum, 0.0)
    sums = problem.group_sums(alpha)
    full = (alpha > 0) & (sums >= problem.C * (1 - 1e-6))
    alpha[full] *= problem.C / sums[full]          # exactly at capacity
    movable = (alpha > 0) & problem.active
    assert full.any() and (movable & ~full).sum() >= 3
    rng = np.random.default_rng(0)
    inner = movable & ~full
    alpha[inner] *= 1 + 1e-3 * rng.uniform(-1, 1, inner.sum())
    assert np.max(np.abs(problem.equality_residual(alpha))) > 1e-6

    repaired = repair_equality(problem, alpha)
    assert np.max(np.abs(problem.equality_residual(repaired))) <= 1e-12
    assert problem.check_feasible(repaired, atol=1e-12)
    assert np.all(repaired[~movable] == 0)
    np.testing.assert_allclose(problem.group_sums(repaired)[full], problem.C, rtol=1e-14)
    # The least-norm δ over the movable variables: A δ = −Aα, Σ_group δ = 0 per full group.
    cols = np.flatnonzero(movable.ravel())
    A = problem.equality_matrix()[:, cols]
    cells = problem.slack_cell.ravel()[cols]
    full_cells = np.unique(cells[full.ravel()[cols]])
    G = (cells[None, :] == full_cells[:, None]).astype(float)
    rhs = np.concatenate([-problem.equality_matrix() @ alpha.ravel(), np.zeros(len(G))])
    delta = np.linalg.lstsq(np.vstack([A, G]), rhs, rcond=None)[0]
    np.testing.assert_allclose(repaired.ravel()[cols] - alpha.ravel()[cols], delta,
                               atol=1e-12 * problem.C)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", ["cs", "msvm2"])
def test_solutions_of_another_shape_or_not_finite_are_refused(model, bias):
    """An α of another problem, a NaN α, a NaN b: a ValueError naming it, not numpy's
    index/broadcast errors, a NaN gap, HiGHS's error or (M-SVM², NaN b) a finite P."""
    from msvm.problem import DualSolution

    X, y = blobs(1, 3, 30)
    problem = make_problem(model, X, y, bias=bias)
    other = make_problem(model, *blobs(2, 3, 20), bias=bias)
    alpha = get_solver("osqp").solve(problem).alpha
    nan = np.where(alpha > 0, np.nan, 0.0)
    for bad, message in ((alpha[:20], r"alpha has shape \(20, 3\), but this problem's is "
                          r"\(30, 3\)"), (alpha.ravel(), "alpha has shape"),
                         (nan, "alpha contains NaN"), ("x", "alpha must be an array")):
        with pytest.raises(ValueError, match=message):
            diagnose(problem, bad)
    with pytest.raises(ValueError, match="another problem"):
        diagnose(other, alpha)
    with pytest.raises(ValueError, match="solution.scores has shape"):
        diagnose(problem, DualSolution(alpha=alpha, b=np.zeros(3), status="optimal",
                                       scores=np.zeros((5, 3))))
    with pytest.raises(ValueError, match="b contains NaN"):
        primal_objective(problem, alpha, np.full(3, np.nan))
    with pytest.raises(ValueError, match=r"b has shape \(2,\)"):
        primal_objective(problem, alpha, np.zeros(2))
    with pytest.raises(ValueError, match="G contains NaN"):
        kkt_violation(problem, alpha, np.full(alpha.shape, np.nan))
    # Integer α (CS cast it in place: a UFuncTypeError); infeasible α shows in the residuals.
    d = diagnose(problem, (alpha > 0).astype(int))
    assert np.isfinite(d.duality_gap)
    assert diagnose(problem, -alpha - 0.1).kkt_residuals["bounds"] > 0.1


def test_bias_from_centre_does_not_depend_on_the_scale_of_the_scores():
    # Features of scale 1e150 give scores of ~1e302: HiGHS reads coefficients over 1e20
    # as infinite, and the certificate (of an OSQP answer, say) raised "The linear
    # program for b failed in HiGHS: Model error" instead of reporting the fit.  The
    # program is solved for c / |c|∞ now: b scales with the scores.
    X, y = blobs(0, 3, 30)
    bs = []
    for scale in (1e5, 1e150):
        problem = make_problem("ww", X * scale, y, kernel="linear", bias=True)
        alpha = np.where(problem.active, problem.capacity[:, None], 0.0)  # every α at C
        d = diagnose(problem, alpha)
        assert d.b_method == "centre" and np.all(np.isfinite(d.b))
        bs.append(d.b / scale**2)
    np.testing.assert_allclose(bs[1], bs[0], rtol=1e-6, atol=1e-6 * np.max(np.abs(bs[0])))
