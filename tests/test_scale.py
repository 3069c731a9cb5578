"""Scale-shaped inputs on small problems: high-dimensional sparse X, many test rows.

Memory is measured with :mod:`tracemalloc` (NumPy and SciPy report their
arrays to it), against bounds that follow from the sizes involved, not from a
measurement.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel

import msvm.kernels
from msvm import MultiClassSVC
from msvm.kernels import Kernel


def _peak(call):
    """(result, peak bytes traced while ``call()`` ran)."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _text_like(m=120, d=200_000, Q=10, per_row=8, seed=0):
    """CSR data like bag-of-words: d columns, a few non-zeros a row, one column per class."""
    rng = np.random.default_rng(seed)
    y = np.arange(m) % Q
    rows = np.repeat(np.arange(m), per_row)
    cols = rng.integers(0, d, m * per_row)
    cols[::per_row] = 11 * y
    X = sp.csr_matrix((rng.random(m * per_row) + 0.5, (rows, cols)), shape=(m, d))
    return X, y


@pytest.mark.parametrize("solver", ["s2do", "linear"])
def test_sparse_linear_model_memory_follows_the_non_zeros(solver):
    """coef_ of sparse support vectors was made from a dense d × Q product (sv.T @ β),
    and solver='linear' kept two more d × Q copies of its W: with d = 10⁶ and Q = 200,
    4.8 GB for data of a few thousand non-zeros.  Now S2DO allocates nothing of that
    size and the linear solver only its own W (one d × Q array)."""
    X, y = _text_like()
    d, Q = X.shape[1], len(np.unique(y))
    dense_wq = 8 * d * Q
    est = MultiClassSVC(kernel="linear", solver=solver, C=1.0, tol=1e-6)
    _, peak = _peak(lambda: est.fit(X, y))
    assert est.solution_["status"] == "optimal"
    assert peak < (0.25 if solver == "s2do" else 1.5) * dense_wq, (peak, dense_wq)
    assert sp.issparse(est.coef_) and est.coef_.has_canonical_format
    sv = est.support_vectors_
    expected = np.asarray(sv.T @ est.dual_coef_).T
    np.testing.assert_allclose(est.coef_.toarray(), expected, rtol=0, atol=1e-12)
    # ... and predicts as the kernel expansion does.
    by_kernel = np.asarray((X @ sv.T) @ est.dual_coef_)
    np.testing.assert_allclose(est.decision_function(X), by_kernel, rtol=1e-10, atol=1e-10)


def test_linear_solver_objective_without_a_copy_of_w():
    """The linear solver's dual objective (its stall watch and trace) from ‖W̄‖² computed
    on the uncentred W: equal to the certificate's for a sum-to-zero machine too."""
    from msvm.diagnostics import diagnose
    from msvm.machines import make_machine
    from msvm.problem import DualProblem
    from msvm.solvers import linear

    X, y = _text_like(m=90, d=5_000, Q=6)
    for model in ("ww", "llw"):
        problem = DualProblem(make_machine(model, 6), y, Kernel(X, "linear"), 1.0, False)
        sol = linear.solve(problem, tol=1e-8, random_state=0, trace=1e-3)
        last = sol.info["trace"][-1][1]
        assert abs(last - diagnose(problem, sol).dual_objective) <= 1e-9 * abs(last)
        if problem.machine.sum_to_zero:
            np.testing.assert_allclose(sol.info["coef"].sum(axis=0), 0.0, atol=1e-12)


@pytest.fixture
def many_sv_model():
    """An RBF model whose training points are all support vectors (C tiny)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 3))
    y = rng.integers(0, 3, 1500)
    est = MultiClassSVC(C=1e-3, gamma=0.5).fit(X, y)
    assert len(est.support_) > 1000
    return est


@pytest.fixture
def block_shapes(monkeypatch):
    """The shapes of the kernel blocks made while a test runs (a spy on Kernel.block)."""
    shapes = []
    block = Kernel.block

    def spy(self, A, B=None):
        out = block(self, A, B)
        shapes.append(out.shape)
        return out

    monkeypatch.setattr(Kernel, "block", spy)
    return shapes


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_prediction_blocks_hold_a_bounded_number_of_kernel_values(many_sv_model, monkeypatch,
                                                                  block_shapes, n_jobs):
    """decision_function scored 2048 test rows at a time whatever the number of support
    vectors (2048 × n_SV values a block: 1.6 GB a thread at 10⁵ support vectors); a block
    now holds at most BLOCK_ENTRIES values, and the scores equal a one-shot product."""
    est = many_sv_model.set_params(n_jobs=n_jobs)
    X_test = np.random.default_rng(1).standard_normal((6000, 3))
    expected = rbf_kernel(X_test, est.support_vectors_, gamma=0.5) @ est.dual_coef_
    entries = 2**14
    monkeypatch.setattr(msvm.kernels, "BLOCK_ENTRIES", entries)
    scores, peak = _peak(lambda: est.decision_function(X_test))
    np.testing.assert_allclose(scores, expected, rtol=1e-10, atol=1e-12)
    assert max(r * c for r, c in block_shapes) <= entries
    # The scores, then per thread a block and its product (a few times 8·entries bytes).
    assert peak < scores.nbytes + n_jobs * 4 * 8 * entries + 2**20, peak


def test_certificate_scores_by_bounded_blocks(many_sv_model, monkeypatch, block_shapes):
    """The certificate's scores (Kernel.matmul) went by blocks of 2048 rows × n_SV; they
    now hold at most BLOCK_ENTRIES values too, with the same result."""
    est = many_sv_model
    X = est.support_vectors_
    coef = np.random.default_rng(2).standard_normal((X.shape[0], 3))
    kernel = Kernel(X, "rbf", gamma=0.5)
    expected = rbf_kernel(X, X, gamma=0.5) @ coef
    monkeypatch.setattr(msvm.kernels, "BLOCK_ENTRIES", 2**14)
    np.testing.assert_allclose(kernel.matmul(coef), expected, rtol=1e-10, atol=1e-10)
    assert max(r * c for r, c in block_shapes) <= 2**14


def test_callable_kernel_predicts_by_blocks(monkeypatch):
    """A callable kernel got every test row at once (an n_test × n_SV block)."""
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((90, 4)), np.arange(90) % 3
    calls = []

    def kernel(A, B):
        calls.append(A.shape[0] * B.shape[0])
        return A @ B.T

    est = MultiClassSVC(kernel=kernel, C=1.0).fit(X, y)
    X_test = rng.standard_normal((5000, 4))
    entries = 4 * len(est.support_)
    monkeypatch.setattr(msvm.kernels, "BLOCK_ENTRIES", entries)
    calls.clear()
    scores = est.decision_function(X_test)
    np.testing.assert_allclose(scores, X_test @ est.support_vectors_.T @ est.dual_coef_,
                               rtol=1e-10, atol=1e-12)
    assert len(calls) > 1 and max(calls) <= entries


def test_a_cache_that_does_not_fit_names_cache_size(monkeypatch):
    """The Gram-row buffer is allocated at once; when it does not fit, the error named
    bytes of a 'KernelCache' only (cache_size goes up to 2**20 MB, capped at the whole
    Gram matrix).  The allocation failure is simulated: whether a real one fails depends
    on the machine's overcommit policy."""
    import msvm._core._kernel_cache as compiled

    def no_memory(*args, **kwargs):
        raise MemoryError("KernelCache could not allocate 80000000000 bytes.")

    monkeypatch.setattr(compiled, "KernelCache", no_memory)
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((40, 2)), np.arange(40) % 3
    with pytest.raises(MemoryError, match=r"cache_size=1048576 MB .*40 x 40 Gram .*lower "
                                          r"cache_size"):
        MultiClassSVC(cache_size=2**20).fit(X, y)
