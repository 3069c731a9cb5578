"""solver='linear' reaches the reference optimum of every bias-free machine it supports.

Accuracy.  As for S2DO (``tests/test_s2do.py``), ``tol`` is the largest KKT
violation in gradient units and the run ends with a full pass that measures
every violation at the final point, so :func:`msvm.diagnostics.kkt_violation`
(looser bound tolerances) is ≤ ``tol`` up to the rounding of recomputing the
scores from the Gram matrix; the dual objective is checked against OSQP
(polished, an independent exact solver) to 1e-6 relative.

Problems: rows of the validation suite (iris, wine, vowel and some generated
ones) with a linear kernel; every machine of the unified table, the M-SVM²
included.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from msvm import MultiClassSVC
from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import MACHINES, make_machine
from msvm.problem import DualProblem
from msvm.solvers import get_solver
from validation.problems import get_problem

from problem_factory import FAMILY, MODELS, blobs, degenerate_llw, make_problem


def _data(row):
    """(X, y) of a validation row; skip when the shared data sets are not found."""
    try:
        return get_problem(row).data
    except FileNotFoundError:
        pytest.skip("no shared datasets ($MSVM_DATASETS or ../shared/datasets)")

TOL = 1e-6
#: Validation rows per machine group, at C in {0.1, 1} (the linear-kernel C values of
#: validation/bounds.py: at C = 10 the low-rank linear duals need 10^4-10^5 passes).
ROWS = {"main": ("iris", "wine", "vowel", "blobs-q5-d20", "checker-q4"),
        "family": ("iris", "vowel", "overlap-q3")}
CS = (0.1, 1.0)


def _linear():
    from msvm.solvers import linear

    return linear


def _problem(model, X, y, C):
    return DualProblem(make_machine(model, int(y.max()) + 1), y, Kernel(X, "linear"), C, False)


def test_every_machine_is_tested():
    assert set(MODELS) | set(FAMILY) == set(MACHINES)


@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_matches_reference(model):
    """Dual objective within 1e-6 of Clarabel's (the validation suite's reference)."""
    linear = _linear()
    for row in ROWS["main" if model in MODELS else "family"]:
        X, y = _data(row)
        for C in CS:
            problem = _problem(model, X, y, C)
            reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
            solution = linear.solve(problem, tol=TOL, random_state=0)
            assert solution.status == "optimal", (row, C, solution.info)
            assert problem.check_feasible(solution.alpha, atol=1e-12), (row, C)
            d = diagnose(problem, solution)
            assert d.kkt_violation <= TOL * (1 + 1e-6), (row, C, d.kkt_violation)
            rel = abs(d.dual_objective - reference) / abs(reference)
            assert rel <= 1e-6, (row, C, rel)
            # The scores the solver returns are K'β̄ recomputed from its W.
            exact = problem.scores(problem.beta(solution.alpha))
            np.testing.assert_allclose(solution.scores, exact, atol=1e-9 * max(1.0, C))


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2", "atm"])
def test_dense_and_csr_same_answer(model):
    linear = _linear()
    rng = np.random.default_rng(0)
    X, y = blobs(4, 4, 120, spread=2.0)
    X = np.c_[X, rng.normal(size=(120, 6))]
    X[rng.random(X.shape) < 0.5] = 0.0          # a sparse-looking dense matrix
    dense, csr = _problem(model, X, y, 1.0), _problem(model, sp.csr_matrix(X), y, 1.0)
    a = linear.solve(dense, tol=TOL, random_state=3, finish=False)
    b = linear.solve(csr, tol=TOL, random_state=3, finish=False)
    # Same visiting order and the same arithmetic on the non-zeros: the same iterates.
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.alpha, b.alpha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.info["coef"], b.info["coef"], rtol=0, atol=1e-12)
    # The active-set finish's dense solves see the Gram matrix of each input, equal
    # within round-off: the same W (unique: the primal is strongly convex in W; α need
    # not be, CS's here is not) and dual objective within round-off.
    a = linear.solve(dense, tol=TOL, random_state=3)
    b = linear.solve(csr, tol=TOL, random_state=3)
    np.testing.assert_allclose(a.info["coef"], b.info["coef"], rtol=0, atol=1e-9)
    assert diagnose(dense, a).dual_objective == pytest.approx(
        diagnose(csr, b).dual_objective, rel=1e-12)


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_estimator_coef(model):
    X, y = blobs(5, 3, 150, spread=2.5)
    Xs = sp.csr_matrix(np.c_[X, np.zeros((150, 3))])
    clf = MultiClassSVC(model=model, kernel="linear", C=1.0, solver="linear", tol=1e-8,
                        random_state=0).fit(Xs, y)
    # Sparse training data: a sparse coef_ (as sklearn.svm.SVC), equal to βᵀ X_SV.
    assert sp.issparse(clf.coef_) and clf.coef_.shape == (3, Xs.shape[1])
    np.testing.assert_allclose(clf.intercept_, np.zeros(3))
    sv = clf.support_vectors_.toarray()
    np.testing.assert_allclose(clf.coef_.toarray(), clf.dual_coef_.T @ sv, rtol=1e-12,
                               atol=1e-12)
    assert clf.solution_["status"] == "optimal"
    assert clf.solution_["kkt_violation"] <= 1e-8 * (1 + 1e-6)
    # The same model as S2DO's.
    ref = MultiClassSVC(model=model, kernel="linear", C=1.0, solver="s2do", tol=1e-8).fit(X, y)
    assert isinstance(ref.coef_, np.ndarray)   # every solver: one coef_ for a linear kernel
    assert abs(clf.solution_["dual_objective"] - ref.solution_["dual_objective"]) <= \
        1e-7 * abs(ref.solution_["dual_objective"])
    scores = ref.decision_function(X)
    np.testing.assert_allclose(clf.decision_function(Xs), scores, atol=1e-5)
    top2 = np.sort(scores, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4      # (the linear CS model has near-ties here)
    np.testing.assert_array_equal(clf.predict(Xs)[clear], ref.predict(X)[clear])


def test_random_state_reproducible_and_max_iter():
    linear = _linear()
    X, y = _data("wine")
    problem = _problem("cs", X, y, 1.0)
    a = linear.solve(problem, tol=1e-5, random_state=1)
    b = linear.solve(problem, tol=1e-5, random_state=1)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="max_iter"):
        c = linear.solve(problem, tol=1e-12, max_iter=2, random_state=1)
    assert c.status == "max_iter" and c.n_iter == 2


def test_warm_start_and_trace():
    linear = _linear()
    X, y = blobs(7, 4, 160, spread=2.0)
    problem = _problem("ww", X, y, 1.0)
    cold = linear.solve(problem, tol=1e-6, random_state=0, trace=1e-3)
    warm = linear.solve(problem, tol=1e-6, random_state=0, warm_start=cold)
    assert warm.n_iter < cold.n_iter / 2, (warm.n_iter, cold.n_iter)
    assert warm.info["n_steps"] < cold.info["n_steps"] / 10
    points = cold.info["trace"]
    assert len(points) >= 2
    assert abs(points[-1][1] - diagnose(problem, cold).dual_objective) <= 1e-9 * abs(points[-1][1])


def test_unsupported_combinations():
    linear = _linear()
    X, y = blobs(0, 3, 60)
    with pytest.raises(ValueError, match="needs kernel='linear'.*'rbf'.*model='cs'"):
        linear.solve(make_problem("cs", X, y, kernel="rbf"))
    with pytest.raises(ValueError, match="'linear' cannot handle a bias"):
        MultiClassSVC(model="ww", kernel="linear", solver="linear", fit_intercept=True).fit(X, y)
    with pytest.raises(ValueError, match="Solver 'linear' needs kernel='linear'"):
        MultiClassSVC(model="llw", kernel="poly", solver="linear").fit(X, y)
    with pytest.raises(ValueError, match="Solver 'linear' needs kernel='linear'"):
        MultiClassSVC(model="ww", kernel="precomputed", solver="linear").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="time_slice"):
        linear.solve(make_problem("ww", X, y, kernel="linear"), time_slice=0)


def test_zero_rows():
    """An all-zero example has no curvature: its variables go to the best vertex."""
    linear = _linear()
    X, y = blobs(8, 3, 90)
    X[::7] = 0.0
    for model in ("ww", "cs", "ats"):
        problem = _problem(model, sp.csr_matrix(X), y, 0.5)
        reference = diagnose(problem, get_solver("osqp").solve(problem)).dual_objective
        d = diagnose(problem, linear.solve(problem, tol=TOL, random_state=0))
        assert abs(d.dual_objective - reference) <= 1e-6 * abs(reference), model


def _topics(seed: int, n_classes: int, m: int, d: int, nnz: int):
    """A sparse text-like set: half of a row's non-zeros in its class's own features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(n_classes, size=m)
    own = d // (2 * n_classes)
    rows = []
    for label in y:
        cols = np.r_[label * own + rng.integers(own, size=nnz // 2),
                     rng.integers(d, size=nnz - nnz // 2)]
        row = np.zeros(d)
        row[cols] = rng.random(len(cols))
        rows.append(row / np.linalg.norm(row))
    return sp.csr_matrix(np.array(rows)), y


@pytest.mark.parametrize("model", ["ww", "cs", "ova", "llw", "msvm2", "ats"])
def test_slot_shrinking_exact_and_cheaper(model):
    """Per-example slot shrinking: the same optimum, far fewer score reads.

    With 12 classes most α_ik of an example sit at 0 with the gradient far
    outside; dropping them from the example's list must not change the answer
    (the run still ends with a pass over every variable at W rebuilt from α)
    and must cut the score columns read (a deterministic count, not a time).
    The sum-to-zero machines (coupled slots) keep whole lists.
    """
    linear = _linear()
    X, y = _topics(0, 12, 400, 240, 12)
    problem = _problem(model, X, y, 1.0)
    tol = 1e-5
    on = linear.solve(problem, tol=tol, random_state=0)
    off = linear.solve(problem, tol=tol, random_state=0, shrinking=False)
    assert on.status == off.status == "optimal"
    assert off.info["n_slot_shrinks"] == 0
    if model in ("ww", "cs", "ova"):
        assert on.info["n_slot_shrinks"] > 0
        assert on.info["n_score_ops"] < 0.75 * off.info["n_score_ops"], (on.info, off.info)
    else:
        assert on.info["n_slot_shrinks"] == 0
    d_on, d_off = diagnose(problem, on), diagnose(problem, off)
    assert d_on.kkt_violation <= tol * (1 + 1e-6)
    # Both are within tol of the optimum: their duals agree to the gap of a tol-solution.
    assert abs(d_on.dual_objective - d_off.dual_objective) <= \
        2 * max(d_on.primal_objective - d_on.dual_objective,
                d_off.primal_objective - d_off.dual_objective) + 1e-12
    np.testing.assert_allclose(on.scores, problem.scores(problem.beta(on.alpha)), atol=1e-9)


def test_diagonal_blocks_without_full_table():
    """The linear solver's (Q, P, P) blocks from ν̄ equal the blocks of the full M."""
    from msvm.solvers._common import machine_tables

    for model in MACHINES:
        machine = make_machine(model, 5)
        full = machine_tables(machine, fast=False)
        lean = machine_tables(machine, fast=False, full_M=False)
        assert lean.M is None
        Q, P = machine.n_classes, machine.n_slots
        blocks = full.M.reshape(Q, P, Q, P)[np.arange(Q), :, np.arange(Q), :]
        np.testing.assert_allclose(lean.diagonal_blocks(), blocks, rtol=0, atol=1e-15)


def test_the_active_set_finish_solves_a_degenerate_problem():
    """As S2DO's (tests/test_s2do_options.py): without the finish the passes are more
    than twice those after which it takes over; with it, the loop certifies the finish's
    answer within a few passes, at the reference optimum within the derived limits."""
    from msvm.solvers import _qp
    from validation.registry import derived_limits

    linear = _linear()
    problem = degenerate_llw()
    trigger = _qp.finish_after(problem, linear.FINISH_AFTER)
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    plain = linear.solve(problem, tol=TOL, random_state=0, finish=False)
    assert plain.status == "optimal" and plain.n_iter > 2 * trigger
    solution = linear.solve(problem, tol=TOL, random_state=0)
    assert solution.status == "optimal" and solution.info["finish_time"] > 0
    assert solution.n_iter <= trigger + 10
    assert solution.n_kernel_evaluations == problem.n_samples ** 2   # the finish's Gram
    found = diagnose(problem, solution)
    limits = derived_limits(problem, solution.alpha, TOL, reference, 1.0)
    assert found.kkt_violation <= TOL * (1 + 1e-6)
    assert abs(found.dual_objective - reference) <= limits["dual_rel_diff"] * abs(reference)
