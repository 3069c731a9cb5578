"""Small seeded classification problems shared by the tests."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_blobs

from msvm.kernels import Kernel
from msvm.machines import make_machine
from msvm.problem import DualProblem

MODELS = ("ww", "cs", "llw", "msvm2")
#: The rest of the unified family (tests/test_family.py).
FAMILY = ("adm", "ats", "atm", "ova", "mmr")


def blobs(seed: int, n_classes: int, n_samples: int, spread: float = 2.0):
    """Gaussian classes in 2-D whose overlap grows with ``spread``."""
    X, y = make_blobs(n_samples, centers=n_classes, cluster_std=spread, random_state=seed)
    return X, y


def make_problem(model, X, y, kernel="rbf", C=1.0, bias=False, gamma=0.5):
    """DualProblem for ``model`` on (X, y) with labels already coded 0..Q-1."""
    Q = int(y.max()) + 1
    return DualProblem(make_machine(model, Q), y, Kernel(X, kernel, gamma=gamma), C, bias)


def cvxpy_reference(problem):
    """The cvxpy solution of ``problem`` (asserted optimal) and its diagnostics."""
    from msvm.diagnostics import diagnose
    from msvm.solvers import get_solver

    solution = get_solver("cvxpy").solve(problem)
    assert solution.status == "optimal"
    return solution, diagnose(problem, solution)


def reference_solutions(problem, name: str) -> dict:
    """Both reference solvers' solutions of ``problem`` with their diagnostics, by solver
    name, each asserted optimal, feasible and certified (KKT residual and relative gap at
    most 1e-6), and their dual objectives asserted equal to 1e-6 relative."""
    from msvm.diagnostics import diagnose
    from msvm.solvers import get_solver

    results = {}
    for solver in ("cvxpy", "osqp"):
        solution = get_solver(solver).solve(problem)
        assert solution.status == "optimal", (name, solver, solution.info)
        assert problem.check_feasible(solution.alpha, atol=1e-9), (name, solver)
        d = diagnose(problem, solution)
        assert d.kkt_residual <= 1e-6, (name, solver, d.kkt_residuals)
        assert -1e-9 <= d.relative_gap <= 1e-6, (name, solver, d.relative_gap)
        results[solver] = (solution, d)
    d_c, d_o = results["cvxpy"][1], results["osqp"][1]
    rel = abs(d_c.dual_objective - d_o.dual_objective) / abs(d_o.dual_objective)
    assert rel <= 1e-6, (name, rel)
    return results


def generated_cases(n: int = 10):
    """``n`` seeded (X, y, C) cases with Q in {2, 3, 5} and m between 30 and 90."""
    cases = []
    for seed in range(n):
        Q = (2, 3, 5)[seed % 3]
        m = 30 + 6 * seed
        X, y = blobs(seed, Q, m, spread=1.0 + 0.4 * seed)
        C = (0.1, 1.0, 10.0)[seed % 3]
        cases.append((f"blobs{seed}-Q{Q}-m{m}-C{C}", X, y, C))
    return cases


def degenerate_llw(bias: bool = False):
    """LLW with a linear kernel on 60 points in 8 dimensions, 4 classes: the Gram matrix
    has rank 8, so the dual's Hessian (180 variables) has rank at most 24, where
    coordinate steps crawl (as on validation row blobs-q5-d20/llw/linear); ``bias``: the
    machine with a bias."""
    rng = np.random.default_rng(3)
    y = np.arange(60) % 4
    centres = rng.normal(size=(4, 8))
    X = 3.0 * centres[y] / np.linalg.norm(centres, axis=1).max() + rng.normal(size=(60, 8))
    return make_problem("llw", X, y, kernel="linear", C=10.0, bias=bias)


class JumpingClock:
    """A stand-in for :mod:`time` whose ``perf_counter`` jumps a thousand seconds at every
    reading: a very slow or busy machine, for tests that a solver's path does not depend
    on the clock."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1000.0
        return self.now
