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
