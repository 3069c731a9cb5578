"""The S2DO solver reaches the reference optimum of every bias-free machine.

Accuracy bound.  ``tol`` is the solver's stopping threshold on the largest KKT
violation in gradient units; :func:`msvm.diagnostics.kkt_violation` measures
the same quantity with *looser* bound tolerances (a variable counts as zero
below 1e-8·C, a group as full above (1 − 1e-8)·C, where the solver uses 0 and
1e-12·C) on the very scores the solver returns, so at the solution it can
never exceed ``tol``: the test asserts ``kkt_violation ≤ tol`` with no
slack factor.  The dual objective is then checked against OSQP (polished, an
independent exact solver) to 1e-6 relative.

Linear kernels on these 2-D blobs make the dual very degenerate (Hessian of
rank ≤ 2Q); at C = 10 pairwise coordinate descent needs 10^5–10^6 steps
(the M-SVM², whose Hessian is that low-rank part plus I/(2C), up to 30 s), so
the linear cases use min(C, 1).
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from msvm.diagnostics import diagnose
from msvm.solvers import get_solver, resolve_solver

from problem_factory import FAMILY, MODELS, blobs, generated_cases, make_problem

CASES = generated_cases(10)
TOL = 1e-6


def _s2do():
    from msvm.solvers import s2do

    return s2do


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("model", MODELS)
def test_matches_reference(model, kernel):
    s2do = _s2do()
    for name, X, y, C in CASES:
        if kernel == "linear":
            C = min(C, 1.0)
        problem = make_problem(model, X, y, kernel=kernel, C=C)
        reference = diagnose(problem, get_solver("osqp").solve(problem))
        solution = s2do.solve(problem, tol=TOL, cache_size=1.0)
        assert solution.status == "optimal", (name, solution.info)
        assert problem.check_feasible(solution.alpha, atol=1e-12), name
        d = diagnose(problem, solution)
        assert d.kkt_violation <= TOL, (name, d.kkt_violation)
        rel = abs(d.dual_objective - reference.dual_objective) / abs(reference.dual_objective)
        assert rel <= 1e-6, (name, rel)
        # The scores the solver kept are K'β̄ (no drift).
        np.testing.assert_allclose(
            solution.scores, problem.scores(problem.beta(solution.alpha)), atol=1e-8 * max(1, C)
        )
        assert solution.n_kernel_evaluations > 0


@pytest.mark.parametrize("options", [{"shrinking": False}, {"fast": False}, {"lazy": False},
                                     {"block_steps": False}, {"fast": False, "block_steps": False},
                                     {"block_size": 2},
                                     {"fast": False, "shrinking": False}])
@pytest.mark.parametrize("model", MODELS)
def test_variants_same_optimum(model, options):
    """Without shrinking, without cold examples, one 2-D step per pass (Algorithm 3 as
    written), and the generic loop (exact Alg. 4)."""
    s2do = _s2do()
    for case in (CASES[4], CASES[8]):
        name, X, y, C = case
        problem = make_problem(model, X, y, C=C)
        a = diagnose(problem, s2do.solve(problem, tol=TOL))
        b = diagnose(problem, s2do.solve(problem, tol=TOL, **options))
        assert abs(a.dual_objective - b.dual_objective) <= 1e-6 * abs(b.dual_objective), name
        assert b.kkt_violation <= TOL, name


@pytest.mark.parametrize("solver_name, bias, options", [
    ("auto", False, {}), ("auto", True, {}),
    ("online", False, {"epochs": None, "finish": False})])   # to tol, without a QP finish
@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_coupling_rows_without_the_table(model, solver_name, bias, options, monkeypatch):
    """Past ``FULL_M_MAX_ROWS`` S2DO (and S2DO with a bias, and the online solver)
    computes each row of M from ν's non-zeros instead of reading the (QP)² table: the
    reference's optimum."""
    from msvm.solvers import _common

    name, X, y, C = CASES[4]
    problem = make_problem(model, X, y, C=C, bias=bias)
    reference = diagnose(problem, get_solver("osqp").solve(problem))
    monkeypatch.setattr(_common, "FULL_M_MAX_ROWS", 0)
    solver = get_solver(resolve_solver(solver_name, problem))
    d = diagnose(problem, solver.solve(problem, tol=TOL, **options))
    assert d.kkt_violation <= TOL, name
    rel = abs(d.dual_objective - reference.dual_objective) / abs(reference.dual_objective)
    assert rel <= 1e-6, (name, rel)


@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_coupling_rows_equal_the_table(model):
    """M's rows and entries computed from ν's non-zeros equal the table's."""
    from msvm._core._s2do import S2DOState
    from msvm.solvers import _common

    name, X, y, C = CASES[4]
    problem = make_problem(model, X, y, C=C)
    cache = problem.kernel.cache(1.0)
    alpha = np.zeros((problem.n_samples, problem.n_slots))

    def state(full_M):
        tables = _common.machine_tables(problem.machine, full_M=full_M)
        return S2DOState(cache, problem.y, alpha.copy(), C=problem.capacity,
                         shift=problem.kernel_shift, tol=TOL, centred=tables.centred,
                         fast=tables.fast, **tables.shared())

    table, rows = state(True), state(False)
    M = _common.machine_tables(problem.machine).M
    for yp, expected in enumerate(M):
        y_, p = divmod(yp, problem.n_slots)
        for got in (*table.coupling(y_, p), *rows.coupling(y_, p)):
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("model, C, bias, solver_name, options", [
    ("ww", 1.0, False, "auto", {}), ("cs", 1.0, False, "auto", {}),
    ("llw", 0.3, False, "auto", {}), ("ww", 1.0, True, "auto", {}),
    ("cs", 1.0, False, "online", {"epochs": None, "finish": False, "random_state": 0})])
def test_fast_path_past_one_mask_word(model, C, bias, solver_name, options):
    """70 classes: the fast path's slot masks take two words per example.  Its solution
    (S2DO, S2DO with a bias, the online solver) is certified and its dual objective within
    the two certified gaps of the generic loop's, with variables of slots past the first
    word in the support."""
    X, y = blobs(0, 70, 140, spread=1.0)
    problem = make_problem(model, X, y, C=C, bias=bias)
    solver = get_solver(resolve_solver(solver_name, problem))
    solution = solver.solve(problem, tol=1e-4, **options)
    fast = diagnose(problem, solution)
    generic = diagnose(problem, solver.solve(problem, tol=1e-4, fast=False, **options))
    for d in (fast, generic):
        assert d.kkt_violation <= 1e-4 and d.duality_gap >= 0
    assert abs(fast.dual_objective - generic.dual_objective) <= \
        fast.duality_gap + generic.duality_gap
    assert np.count_nonzero(solution.alpha[:, 64:]) > 0


def test_more_classes_than_the_table():
    """66 classes (past the table's rows, two mask words): certified."""
    X, y = blobs(0, 66, 198)
    problem = make_problem("ww", X, y, C=1.0)
    solution = _s2do().solve(problem, tol=1e-4)
    d = diagnose(problem, solution)
    assert solution.status == "optimal" and d.kkt_violation <= 1e-4
    assert 0 <= d.duality_gap <= 1e-2 * abs(d.dual_objective)


@pytest.mark.parametrize("model", MODELS)
def test_warm_start_needs_fewer_iterations(model):
    s2do = _s2do()
    X, y = blobs(3, 4, 120, spread=2.0)
    first = s2do.solve(make_problem(model, X, y, C=1.0), tol=TOL)
    problem = make_problem(model, X, y, C=1.5)
    cold = s2do.solve(problem, tol=TOL)
    warm = s2do.solve(problem, tol=TOL, warm_start=first)
    assert warm.status == cold.status == "optimal"
    assert warm.n_iter < cold.n_iter, (warm.n_iter, cold.n_iter)
    d_warm, d_cold = diagnose(problem, warm), diagnose(problem, cold)
    assert abs(d_warm.dual_objective - d_cold.dual_objective) <= 1e-6 * abs(d_cold.dual_objective)
    # A warm start infeasible for a smaller C is projected back.
    smaller = make_problem(model, X, y, C=0.5)
    again = s2do.solve(smaller, tol=TOL, warm_start=first)
    assert again.status == "optimal" and smaller.check_feasible(again.alpha)


def test_max_iter_status():
    s2do = _s2do()
    name, X, y, C = CASES[5]
    problem = make_problem("ww", X, y, C=C)
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        solution = s2do.solve(problem, tol=TOL, max_iter=5)
    assert solution.status == "max_iter"
    assert solution.n_iter == 5
    assert problem.check_feasible(solution.alpha)


def test_bias_is_refused():
    name, X, y, C = CASES[1]
    problem = make_problem("ww", X, y, C=C, bias=True)
    with pytest.raises(ValueError, match="bias"):
        resolve_solver("s2do", problem)
    with pytest.raises(ValueError, match="bias"):
        _s2do().solve(problem)


def test_verbose_progress(capsys):
    name, X, y, C = CASES[2]
    problem = make_problem("cs", X, y, C=C)
    _s2do().solve(problem, tol=TOL, verbose=True)
    err = capsys.readouterr().err   # msvm._progress reports on stderr
    assert err.startswith("s2do  ") and " iter " in err and " KKT " in err


@pytest.mark.parametrize("model", MODELS)
def test_cached_violations_are_upper_bounds(model):
    """The lazily refreshed per-example violations never under-estimate the true ones."""
    from msvm._core._s2do import S2DOState
    from msvm.solvers._common import machine_tables

    name, X, y, C = CASES[7]
    problem = make_problem(model, X, y, C=C)
    alpha = problem.zeros()
    tables = machine_tables(problem.machine)
    assert tables.fast is not None
    state = S2DOState(problem.kernel.cache(10), problem.y, alpha, C=problem.capacity,
                      shift=problem.kernel_shift, tol=TOL, centred=problem.machine.sum_to_zero,
                      shrinking=False, fast=tables.fast, **tables.shared())
    C_cap = problem.capacity
    for _ in range(150):
        if state.run(1, 1e9) == 0:
            break
        cached = state._debug_state()
        g = problem.gradient(alpha, cached["F"] - (cached["F"].mean(1, keepdims=True)
                                                    if problem.machine.sum_to_zero else 0))
        for e in range(problem.n_samples):
            act, a, ge = problem.active[e], alpha[e], g[e]
            pos = (a > 0) & act
            v = 0.0
            if problem.machine.loss == "squared":
                v = max(v, float((-ge[act]).max()))
            elif problem.machine.max_loss:
                if a.sum() < C_cap[e] * (1 - 1e-12):
                    v = max(v, float((-ge[act]).max()))
                if pos.any():
                    v = max(v, float(ge[pos].max()), float(ge[pos].max() - ge[act].min()))
            else:
                v = max(v, float((-ge[act & (a < C_cap[e])]).max(initial=0.0)))
            if pos.any():
                v = max(v, float(ge[pos].max()))
            assert v <= cached["viol"][e] + 1e-10, (e, v, cached["viol"][e])
    assert state.n_cold > 0   # the cold (lazily refreshed) path was exercised


@pytest.mark.parametrize("model", ["ww", "cs", "llw"])
def test_shrunk_examples_scores_wait(model):
    """With every Gram row cached the passes skip the shrunk examples: their scores
    are rebuilt from α when asked for, meanwhile the objective is the sum of the
    steps' exact changes; support vectors (of max-loss machines too) do get shrunk.
    (The M-SVM² has no upper bound, so no support vector to shrink.)"""
    from msvm._core._s2do import S2DOState
    from msvm.solvers._common import machine_tables

    name, X, y, C = CASES[7]
    problem = make_problem(model, X, y, C=C)
    alpha = problem.zeros()
    tables = machine_tables(problem.machine)
    state = S2DOState(problem.kernel.cache(10), problem.y, alpha, C=problem.capacity,
                      shift=problem.kernel_shift, tol=TOL, centred=problem.machine.sum_to_zero,
                      shrinking=True, fast=tables.fast, **tables.shared())
    state.shrink_interval = 5
    checked, shrunk_sv = 0, False
    while state.run(5, 1e9) != 0:
        inwork = state._debug_state()["inwork"].astype(bool)
        if inwork.all():
            continue
        shrunk_sv |= bool(np.any(alpha[~inwork] != 0))
        exact = problem.objective(alpha)
        assert abs(state.objective() - exact) <= 1e-9 * abs(exact), name
        F = problem.scores(problem.beta(alpha))
        assert np.abs(state.scores() - F).max() <= 1e-9 * np.abs(F).max(), name
        checked += 1
    assert checked > 0 and shrunk_sv, (checked, shrunk_sv)


@pytest.mark.parametrize("model", ["ww", "cs", "llw"])
def test_focus_parks_and_catches_up(model):
    """Focus: the most violating examples are solved alone while the rest of the
    working set waits; when the focus ends, the parked examples' scores are caught
    up from the changes of β, so between runs the kept scores and objective are
    exact, and the solution is the same optimum."""
    from msvm._core._s2do import S2DOState
    from msvm.solvers._common import machine_tables

    name, X, y, C = CASES[7]
    problem = make_problem(model, X, y, C=C)
    results = []
    for focus_size in (0, len(y) // 8):
        alpha = problem.zeros()
        tables = machine_tables(problem.machine)
        state = S2DOState(problem.kernel.cache(10), problem.y, alpha, C=problem.capacity,
                          shift=problem.kernel_shift, tol=TOL,
                          centred=problem.machine.sum_to_zero, shrinking=True,
                          fast=tables.fast, **tables.shared())
        state.lazy_enabled = False    # focus only while cold visits are off
        state.block_steps = True
        state.focus_size = state.focus_min = focus_size
        while state.run(7, 1e9) != 0:
            exact = problem.objective(alpha)
            assert abs(state.objective() - exact) <= 1e-9 * abs(exact), name
            F = problem.scores(problem.beta(alpha))
            assert np.abs(state.scores() - F).max() <= 1e-9 * np.abs(F).max(), name
        assert (state.n_focus > 0) == (focus_size > 0), (name, state.n_focus)
        results.append(problem.objective(alpha))
    assert abs(results[1] - results[0]) <= 1e-6 * abs(results[0]), results


@pytest.mark.parametrize("model", ["ww", "cs"])
def test_the_lazy_control_hands_over_to_the_focus_within_the_first_passes(model):
    """Where cold visits do not pay (digits at gamma='scale', mean kernel value
    0.37), the lazy control tries them for one short window of steps, pauses
    them and the focus starts: within the first 64 passes, not after hundreds of
    passes over every example (a focus runs only while cold visits are paused)."""
    from sklearn.datasets import load_digits

    from msvm._core._s2do import S2DOState
    from msvm.solvers._common import machine_tables

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    problem = make_problem(model, X, y, C=5.0, gamma=1.0 / (X.shape[1] * X.var()))
    tables = machine_tables(problem.machine)
    state = S2DOState(problem.kernel.cache(100), problem.y, problem.zeros(),
                      C=problem.capacity, shift=problem.kernel_shift, tol=1e-3,
                      centred=problem.machine.sum_to_zero, shrinking=True, fast=tables.fast,
                      **tables.shared())
    state.run(64, 1e9)
    cold = state.n_cold
    assert cold > 0 and state.n_focus > 0, (cold, state.n_focus)
    state.run(64, 1e9)
    assert state.n_cold == cold   # paused: every visit since was exact


@pytest.mark.parametrize("model", ["llw", "cs"])
def test_block_steps_save_passes(model):
    """Block steps: several 2-D steps per pass over the examples, fewer passes in all,
    and fewer still with more examples per block; without them every iteration is
    exactly one step."""
    s2do = _s2do()
    name, X, y, C = CASES[8]
    problem = make_problem(model, X, y, C=C)
    pair = s2do.solve(problem, tol=TOL, block_steps=False)
    two = s2do.solve(problem, tol=TOL, block_size=2)
    block = s2do.solve(problem, tol=TOL)
    assert pair.info["n_steps"] == pair.n_iter
    assert two.info["n_steps"] > two.n_iter
    assert block.n_iter < two.n_iter < pair.n_iter, (block.n_iter, two.n_iter, pair.n_iter)
