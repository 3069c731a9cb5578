"""What the solvers share (msvm.solvers._common): machine tables, driving, checks, warnings.

The machine tables are checked against the machine they encode (the dual
objective they define is the DualProblem's, their sparse ν is ν, the fast
path's u_y reproduces ν); the time-sliced driver and the warning against
their contracts; the option checks and the ``BLAS_THREADS`` declaration
against every solver that uses them.
"""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import MACHINES, make_machine
from msvm.solvers import SOLVERS, StallWatch, get_solver
from msvm.solvers._common import (
    BUDGET,
    DONE,
    STALLED,
    STATUS,
    TIME_UP,
    drive,
    machine_tables,
    optimum_radius,
    warn_not_converged,
)

from problem_factory import blobs, make_problem


@pytest.mark.parametrize("model", sorted(MACHINES))
def test_tables_define_the_problems_dual(model):
    """½ αᵀ(M ⊗ K')α − γᵀα from the tables equals DualProblem.objective for a random α."""
    X, y = blobs(3, 4, 24)
    problem = make_problem(model, X, y, C=2.0)
    tables = machine_tables(problem.machine)
    rng = np.random.default_rng(0)
    alpha = np.where(problem.active, rng.random(problem.active.shape), 0.0)
    Q, P = problem.n_classes, problem.n_slots
    M = tables.M.reshape(Q, P, Q, P)[y][:, :, y]          # (m, P, m, P)
    K = problem.kernel.gram() + problem.kernel_shift * np.eye(len(y))
    J = 0.5 * np.einsum("ip,ipjq,ij,jq->", alpha, M, K, alpha) \
        - np.sum(tables.gamma[y] * alpha)
    assert J == pytest.approx(problem.objective(alpha), rel=1e-12)
    # The diagonal blocks are M's: one example couples with itself only through M[y].
    blocks = tables.diagonal_blocks()
    for c in range(Q):
        np.testing.assert_array_equal(blocks[c], tables.M.reshape(Q, P, Q, P)[c, :, c, :])


@pytest.mark.parametrize("model", sorted(MACHINES))
def test_sparse_nu_and_fast_tables_reproduce_nu(model):
    machine = make_machine(model, 5)
    tables = machine_tables(machine)
    nu = machine.nu * machine.active[:, :, None]
    Q, P = machine.n_classes, machine.n_slots
    rebuilt = np.zeros_like(nu)
    for c in range(Q):
        for p in range(P):
            k = tables.nz_count[c, p]
            rebuilt[c, p, tables.nz_col[c, p, :k]] = tables.nz_val[c, p, :k]
    np.testing.assert_array_equal(rebuilt, nu)
    # Compact: as wide as the fullest (class, slot), not Q wide.
    assert tables.nz_col.shape[2] == max(1, tables.nz_count.max())
    if tables.fast is None:
        assert model in ("ats", "atm", "ova", "mmr")   # no ν_{y,s,·} = u_y − e_s structure
        return
    fast = tables.fast
    for c in range(Q):
        u = np.zeros(Q)
        u[fast["u_col"][c, :fast["u_cnt"][c]]] = fast["u_val"][c, :fast["u_cnt"][c]]
        for s in np.flatnonzero(machine.active[c]):
            np.testing.assert_allclose(nu[c, s], u - np.eye(Q)[s], atol=1e-15)


def test_shared_group_guard():
    """The online state keeps one shared-group sum per pattern: two shared groups are refused."""
    ww = make_machine("ww", 5)
    slack = np.tile(np.array([0, 0, 0, 1, 1], dtype=np.int32), (5, 1))
    machine = dataclasses.replace(ww, slack=slack)   # class 0: slots {1, 2} and {3, 4}
    assert machine_tables(machine).group_size[0].tolist() == [2, 2]
    with pytest.raises(ValueError, match="at most 1 shared slack group"):
        machine_tables(machine, max_shared_groups=1)


def test_drive_runs_until_a_final_code_or_a_stall():
    codes = iter([TIME_UP, TIME_UP, DONE])
    seen = []
    assert drive(lambda: next(codes), seen.append) == DONE
    assert seen == [TIME_UP, TIME_UP, DONE]
    # An objective that never decreases stalls once STALL_SECONDS have passed.
    stall = StallWatch(lambda: 1.0)
    stall.since -= 1e9
    assert drive(lambda: TIME_UP, stall=stall) == STALLED
    assert drive(lambda: BUDGET, stall=stall) == BUDGET
    assert {STATUS[DONE], STATUS[BUDGET], STATUS[STALLED]} == {"optimal", "max_iter", "stalled"}


def test_warning_names_the_budget_or_the_stall():
    with pytest.warns(ConvergenceWarning, match=r"^x stopped at max_iter=3 steps with a gap\.$"):
        warn_not_converged("x", "max_iter", "max_iter=3 steps", "with a gap")
    with pytest.warns(ConvergenceWarning, match=r"^x stopped when its dual objective stopped"):
        warn_not_converged("x", "stalled", "max_iter=3 steps", "with a gap")


@pytest.mark.parametrize("solver", ["s2do", "online", "linear", "frank_wolfe", "s2do_bias"])
def test_same_checks_and_warning_for_every_solver(solver):
    """A bad max_iter or trace gives the same error; a spent budget warns at the caller."""
    module = get_solver(solver)
    X, y = blobs(0, 3, 30)
    problem = make_problem("ww", X, y, kernel="linear", bias=solver == "s2do_bias")
    with pytest.raises(ValueError, match="max_iter must be a positive integer or None"):
        module.solve(problem, max_iter=0)
    with pytest.raises(ValueError, match="tol must be a non-negative number"):
        module.solve(problem, tol="a")   # was Python's bare "'>=' not supported" TypeError
    if "trace" in inspect.signature(module.solve).parameters:
        with pytest.raises(ValueError, match="trace must be a positive number of seconds"):
            module.solve(problem, trace=-1.0)
    if solver != "online":   # (the online solver ignores warm_start)
        for bad in (np.nan, np.inf):
            # Passed through to the loops, NaN scores stopped S2DO at once with status
            # 'optimal' and a NaN α, and Frank-Wolfe with HiGHS's error.
            with pytest.raises(ValueError, match="warm_start contains NaN or infinity"):
                module.solve(problem, warm_start=np.full((30, problem.n_slots), bad))
    extra = {"epochs": None} if solver == "online" else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solution = module.solve(problem, tol=1e-12, max_iter=1, **extra)
    assert solution.status == "max_iter"
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(found) == 1 and f"{solver} stopped at max_iter=1 " in str(found[0].message)
    assert found[0].filename == __file__   # stacklevel: the caller of solve


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_blas_threads_declaration_matches_solve(name):
    """model_selection passes blas_threads exactly to the solvers that declare it."""
    module = get_solver(name)
    assert module.BLAS_THREADS == ("blas_threads" in inspect.signature(module.solve).parameters)
    if module.BLAS_THREADS:
        X, y = blobs(0, 3, 12)
        problem = make_problem("ww", X, y, bias=name in ("s2do_bias", "frank_wolfe"))
        for bad in (0, -1, 1.5):   # were run (1.5 as one thread, 0 and -1 passed to BLAS)
            with pytest.raises(ValueError, match="blas_threads must be a positive integer"):
                module.solve(problem, blas_threads=bad)


def test_blas_limits_overlapping_in_threads_restore_the_counts_from_before():
    """BLAS thread counts are global to the process: two threads whose limits
    overlap (A enters, B enters, A leaves, B leaves) must keep the limit until the
    last one leaves, and then leave every BLAS library as it was."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    from msvm.solvers._common import limit_blas_threads

    def counts():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"}

    before = counts()
    with threadpool_limits(limits=1, user_api="blas"):
        limited = counts()
    assert counts() == before
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with limit_blas_threads(1):
            a_in.set()
            b_in.wait()
            seen["both inside"] = counts()
        a_out.set()
        b_out.wait()   # A, which set the limit, is still alive when B restores it

    def b():
        a_in.wait()
        with limit_blas_threads(1):
            b_in.set()
            a_out.wait()
            seen["after A left"] = counts()
        seen["after both left"] = counts()
        b_out.set()

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"both inside": limited, "after A left": limited, "after both left": before}
    assert counts() == before


# ------------------------------------------------- the points a Kernel holds
def _points(X, kind):
    """The points X in the representation ``kind`` a low-level user may hand to Kernel.

    pandas is not a dependency of msvm (nor of its test tools): the DataFrame case is
    skipped when it is not installed.
    """
    if kind == "DataFrame":
        return pytest.importorskip("pandas").DataFrame(X)
    return {"list": X.tolist(), "coo": sp.coo_matrix(X), "csc_array": sp.csc_array(X),
            "float32": X.astype(np.float32)}[kind]


@pytest.mark.parametrize("kind", ["list", "DataFrame", "coo", "csc_array", "float32"])
@pytest.mark.parametrize("solver", ["cvxpy", "s2do"])
def test_kernel_takes_any_array_like_as_its_float64_points(kind, solver):
    """A list failed in Kernel (no .shape), a DataFrame or COO matrix in the solvers that
    index rows (KeyError, 'not subscriptable'), and float32 points gave float32 Gram
    blocks to the reference solver and the certificate beside S2DO's float64 rows."""
    X, y = blobs(5, 3, 30)
    given = _points(X, kind)
    exact = X.astype(np.float32).astype(np.float64) if kind == "float32" else X

    def dual(points):
        problem = make_problem("ww", points, y)
        return diagnose(problem, get_solver(solver).solve(problem, tol=1e-9)).dual_objective

    assert dual(given) == pytest.approx(dual(exact), rel=1e-12, abs=1e-12)


def test_sparse_precomputed_gram_is_a_matrix():
    """A sparse precomputed Gram matrix became a 0-d object array in Kernel.gram()."""
    X, _ = blobs(6, 3, 12)
    K = X @ X.T
    kernel = Kernel(sp.csr_matrix(K), "precomputed")
    np.testing.assert_array_equal(kernel.gram(), K)
    np.testing.assert_array_equal(kernel.diagonal(), np.diag(K))


def test_optimum_radius_bounds_the_msvm2_optimum():
    from msvm.problem import DualProblem

    X, y = blobs(5, 4, 40)
    w = np.random.default_rng(0).uniform(0.01, 10.0, len(y))
    for C, bias in [(1.0, False), (100.0, True), (0.01, False)]:
        problem = DualProblem(make_machine("msvm2", 4), y, Kernel(X, "rbf", gamma=0.5), C,
                              bias, sample_weight=w)
        alpha = get_solver("s2do_bias" if bias else "s2do").solve(problem, tol=1e-9).alpha
        assert np.all(np.linalg.norm(alpha, axis=1) <= optimum_radius(problem))
    assert optimum_radius(make_problem("ww", X, y)) is None


@pytest.mark.parametrize("solver, bias", [("s2do", False), ("frank_wolfe", False),
                                          ("linear", False), ("s2do_bias", True),
                                          ("frank_wolfe", True)])
@pytest.mark.parametrize("size", [1e12, 1e300])
def test_a_huge_msvm2_warm_start_reaches_the_cold_optimum(solver, bias, size):
    # The M-SVM²'s α has no upper bound: from α = 1e12 the running scores kept round-off
    # of ~1e-4 after α came down to the optimum (S2DO said 'optimal' at a KKT violation of
    # 1e-3 with tol=1e-9; Frank–Wolfe and S2DO with a bias 'stalled'), and from 1e300 they
    # overflowed (Frank–Wolfe with a bias raised "HiGHS failed ...: Empty").
    X, y = blobs(3, 3, 30)
    problem = make_problem("msvm2", X, y, C=1.0, bias=bias,
                           kernel="linear" if solver == "linear" else "rbf")
    cold = diagnose(problem, get_solver(solver).solve(problem, tol=1e-9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm = get_solver(solver).solve(problem, tol=1e-9,
                                        warm_start=np.full((30, 3), size))
    assert warm.status == "optimal"
    exact = diagnose(problem, warm.alpha)          # scores recomputed from α
    assert exact.kkt_violation <= 1e-8
    assert exact.dual_objective == pytest.approx(cold.dual_objective, rel=1e-10)
