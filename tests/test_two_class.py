"""With two classes every machine is a binary SVM (msvm/machines.py docstring)."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import make_machine
from msvm.problem import DualProblem
from msvm.solvers import get_solver

from problem_factory import blobs, make_problem

GAMMA = 0.2


def decision(problem, solution, X_test, b):
    h = rbf_kernel(X_test, problem.kernel.X, gamma=GAMMA) @ problem.beta(solution.alpha) + b
    return h[:, 1] - h[:, 0]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("model", "C", "C_binary", "ratio"),
                         [("ww", 1.0, 2.0, 1.0), ("cs", 1.0, 2.0, 1.0), ("llw", 1.0, 0.5, 2.0),
                          ("ww", 0.1, 0.2, 1.0), ("llw", 10.0, 5.0, 2.0),
                          # every variable at C: b is not determined by equalities
                          ("ww", 1e-3, 2e-3, 1.0), ("cs", 1e-3, 2e-3, 1.0),
                          ("llw", 1e-3, 5e-4, 2.0)])
def test_hinge_machines_equal_svc(model, C, C_binary, ratio, seed):
    X, y = blobs(seed, 2, 70, spread=3.0)
    X_test, _ = blobs(seed + 100, 2, 60, spread=3.0)
    problem = make_problem(model, X, y, C=C, bias=True, gamma=GAMMA)
    solution = get_solver("osqp").solve(problem)
    d = diagnose(problem, solution)
    svc = SVC(C=C_binary, gamma=GAMMA, tol=1e-10).fit(X, y)
    theirs = ratio * svc.decision_function(X_test)
    # h_2 − h_1 = ratio · f with f = w·φ + b_svc, so b_2 − b_1 = ratio · b_svc.
    b_svc = ratio * svc.intercept_[0] * np.array([-0.5, 0.5])
    # b is unique ('kkt'), or every variable is at a bound and b is the middle of its
    # interval ('centre'), libsvm's choice too: the whole decision function matches.
    assert d.b_method in ("kkt", "centre")
    np.testing.assert_allclose(d.b, b_svc, rtol=1e-4, atol=1e-5)
    ours = decision(problem, solution, X_test, d.b)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    assert np.array_equal(ours > 0, theirs > 0)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_msvm2_equals_hard_margin_svc_on_shifted_kernel(C):
    X, y = blobs(4, 2, 70, spread=3.0)
    X_test, _ = blobs(104, 2, 60, spread=3.0)
    problem = make_problem("msvm2", X, y, C=C, bias=True, gamma=GAMMA)
    solution = get_solver("osqp").solve(problem)
    ours = decision(problem, solution, X_test, diagnose(problem, solution).b)
    K = rbf_kernel(X, X, gamma=GAMMA) + np.eye(len(y)) / (2 * C)
    svc = SVC(C=1e8, kernel="precomputed", tol=1e-12).fit(K, y)
    theirs = svc.decision_function(rbf_kernel(X_test, X, gamma=GAMMA))
    np.testing.assert_allclose(ours, 2 * theirs, rtol=1e-4, atol=1e-5)


def test_bias_free_machines_agree_with_each_other():
    """Without a bias SVC has no counterpart; WW(C) = CS(C) = LLW(4C) follows from the table."""
    X, y = blobs(9, 2, 60, spread=3.0)
    X_test, _ = blobs(109, 2, 40, spread=3.0)
    values = []
    for model, C, scale in [("ww", 1.0, 1.0), ("cs", 1.0, 1.0), ("llw", 4.0, 0.5)]:
        problem = make_problem(model, X, y, C=C, gamma=GAMMA)
        solution = get_solver("osqp").solve(problem)
        values.append(scale * decision(problem, solution, X_test, np.zeros(2)))
    np.testing.assert_allclose(values[0], values[1], atol=1e-6)
    np.testing.assert_allclose(values[0], values[2], atol=1e-6)
    # M-SVM² without bias is hard-margin LLW on the shifted kernel.
    C = 2.0
    msvm2 = make_problem("msvm2", X, y, C=C, gamma=GAMMA)
    K = rbf_kernel(X, X, gamma=GAMMA) + np.eye(len(y)) / (2 * C)
    hard = DualProblem(make_machine("llw", 2), y, Kernel(K, "precomputed"), 1e9, False)
    a = get_solver("osqp").solve(msvm2).alpha
    b = get_solver("osqp").solve(hard).alpha
    np.testing.assert_allclose(a, b, atol=1e-6)
