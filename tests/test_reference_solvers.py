"""The two reference QP solvers agree with each other and certify their own answers."""

import numpy as np
import pytest

from msvm.diagnostics import diagnose
from msvm.solvers import get_solver

from problem_factory import MODELS, generated_cases, make_problem

CASES = generated_cases(10)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_cvxpy_and_osqp_agree_and_certify(model, bias, kernel):
    for name, X, y, C in CASES:
        problem = make_problem(model, X, y, kernel=kernel, C=C, bias=bias)
        results = {}
        for solver in ("cvxpy", "osqp"):
            solution = get_solver(solver).solve(problem)
            assert solution.status == "optimal", (name, solver, solution.info)
            assert problem.check_feasible(solution.alpha, atol=1e-9), (name, solver)
            d = diagnose(problem, solution)
            assert d.kkt_residual <= 1e-6, (name, solver, d.kkt_residuals)
            assert -1e-9 <= d.relative_gap <= 1e-6, (name, solver, d.relative_gap)
            results[solver] = (d, solution)
        d_c, d_o = results["cvxpy"][0], results["osqp"][0]
        rel = abs(d_c.dual_objective - d_o.dual_objective) / abs(d_o.dual_objective)
        assert rel <= 1e-6, (name, rel)
        if bias and d_c.b_method == "kkt" and d_o.b_method == "kkt":
            # b from the solvers' own equality multipliers matches b from KKT.
            for d, solution in results.values():
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
