"""Tests of the compiled Gram-row LRU cache (msvm._core._kernel_cache)."""

import math
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

# Imported through the package: ruff resolves module files to classify imports
# and a compiled module has no .py file, so ``from msvm._core._kernel_cache
# import ...`` would be sorted as third-party.
from msvm._core import _kernel_cache

KernelCache = _kernel_cache.KernelCache

LINEAR, POLY, RBF, LAPLACE, SIGMOID, PRECOMPUTED = range(6)

# code -> (sklearn metric, sklearn kwargs, KernelCache (gamma, degree, coef0))
KERNELS = {
    LINEAR: ("linear", {}, (0.0, 0.0, 0.0)),
    POLY: ("polynomial", {"gamma": 0.3, "degree": 3, "coef0": 0.7}, (0.3, 3.0, 0.7)),
    RBF: ("rbf", {"gamma": 0.4}, (0.4, 0.0, 0.0)),
    LAPLACE: ("laplacian", {"gamma": 0.25}, (0.25, 0.0, 0.0)),
    SIGMOID: ("sigmoid", {"gamma": 0.05, "coef0": -0.2}, (0.05, 0.0, -0.2)),
}
RTOL = ATOL = 1e-12


def _mb_for_rows(m, rows):
    """A cache size in MB that holds exactly ``rows`` rows of length m."""
    return (rows + 0.5) * m * 8 / 2**20


def _dense(m=40, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(m, d))


def _csr_with_empty_rows(m=40, d=12, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=0.3, format="csr", random_state=rng, dtype=np.float64)
    X = X.tolil()
    X[3, :] = 0.0
    X[17, :] = 0.0
    X[m - 1, :] = 0.0
    X = X.tocsr()
    X.eliminate_zeros()
    X.sort_indices()
    assert X.indptr[4] == X.indptr[3] and X.indptr[m] == X.indptr[m - 1]
    return X


def _make(X, code, cache_mb=64.0):
    g, deg, c0 = KERNELS[code][2]
    return KernelCache(X, code, g, deg, c0, cache_mb)


def _reference(X, code):
    metric, kw, _ = KERNELS[code]
    return np.asarray(pairwise_kernels(X, metric=metric, **kw))


# --------------------------------------------------------------- correctness


@pytest.mark.parametrize("code", list(KERNELS))
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_rows_match_sklearn(code, kind):
    X = _dense() if kind == "dense" else _csr_with_empty_rows()
    K = _reference(X, code)
    kc = _make(X, code)
    m = X.shape[0]
    assert kc.n_samples == m and kc.capacity == m
    for i in range(m):
        np.testing.assert_allclose(kc.row(i), K[i], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(kc.rows(np.arange(m)[::-1]), K[::-1], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(kc.diagonal(), np.diag(K), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("code", list(KERNELS))
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_rows_match_sklearn_under_eviction(code, kind):
    """With a 3-row cache every row is recomputed many times; values stay exact."""
    X = _dense(m=30) if kind == "dense" else _csr_with_empty_rows(m=30)
    K = _reference(X, code)
    kc = _make(X, code, _mb_for_rows(30, 3))
    assert kc.capacity == 3
    order = np.random.default_rng(2).integers(0, 30, size=200)
    got = kc.rows(order)
    np.testing.assert_allclose(got, K[order], rtol=RTOL, atol=ATOL)
    assert kc.n_misses > 30  # rows really were evicted and recomputed
    assert kc.n_hits + kc.n_misses == 200


@pytest.mark.parametrize("code", [RBF, LAPLACE])
def test_exp_over_its_whole_range(code):
    """The vectorised exp of rbf/laplace rows against numpy's on exponents 0 to -800.

    One-dimensional points placed so that row 0 (the origin) reads exp(-t) for
    t from 0 past the underflow at -708.4 (and its 512 entries cover both halves
    of every vector block).  Distances from the origin are exact squares (rbf)
    or absolute values (laplace), so the reference is numpy's exp of the same
    argument; RTOL allows for the last bit of γ·d.  Below -708.39 the kernel
    returns 0 where numpy's value is subnormal (under 1e-307).
    """
    gamma = KERNELS[code][2][0]
    t = np.concatenate([[0.0], np.linspace(1e-8, 800.0, 511)])
    x = np.sqrt(t / gamma) if code == RBF else t / gamma
    X = x[:, None]
    row = _make(X, code).row(0)
    d = X[:, 0] ** 2 if code == RBF else np.abs(X[:, 0])
    reference = np.exp(-gamma * d)
    np.testing.assert_allclose(row, reference, rtol=RTOL, atol=1e-307)
    assert row[0] == 1.0 and np.all(row >= 0.0) and np.all(np.diff(row) <= 0.0)


def test_csr_canonicalised_and_int64_indices():
    """Unsorted indices, duplicates and int64 index arrays give the same rows."""
    X = _csr_with_empty_rows()
    ref = _reference(X, RBF)
    coo = X.tocoo()
    # split every value into two duplicate entries, in reversed order
    rows = np.concatenate([coo.row, coo.row])[::-1]
    cols = np.concatenate([coo.col, coo.col])[::-1]
    vals = np.concatenate([0.25 * coo.data, 0.75 * coo.data])[::-1]
    messy = sp.csr_matrix((vals, (rows, cols)), shape=X.shape)
    messy.has_canonical_format = False
    for Y in (
        messy,
        sp.csr_matrix(
            (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)), shape=X.shape
        ),
    ):
        kc = _make(Y, RBF)
        np.testing.assert_allclose(kc.rows(np.arange(X.shape[0])), ref, rtol=RTOL, atol=ATOL)


def test_dense_conversion_of_dtype_and_layout():
    X = _dense()
    ref = _reference(X, POLY)
    kc = _make(np.asfortranarray(X), POLY)
    np.testing.assert_allclose(kc.rows(np.arange(40)), ref, rtol=RTOL, atol=ATOL)
    X32 = X.astype(np.float32)
    kc32 = _make(X32, LINEAR)
    np.testing.assert_allclose(
        kc32.row(5), _reference(X32.astype(np.float64), LINEAR)[5], rtol=RTOL, atol=ATOL
    )


def test_diagonal_entry_equals_diag():
    """K[i, i] in a computed row is exactly diag(i) (1 for rbf and laplace)."""
    X = _dense()
    for code in KERNELS:
        kc = _make(X, code)
        d = kc.diagonal()
        for i in (0, 7, 39):
            assert kc.row(i)[i] == d[i]
        if code in (RBF, LAPLACE):
            assert np.all(d == 1.0)


def test_precomputed_rows_served_from_matrix():
    X = _dense()
    K = _reference(X, RBF) + np.diag(np.arange(40.0))  # distinct diagonal
    kc = KernelCache(K, PRECOMPUTED, 0.0, 0.0, 0.0, 0.001)
    assert kc.capacity == 40 and kc.nbytes == 0
    np.testing.assert_array_equal(kc.rows([3, 1, 3, 39]), K[[3, 1, 3, 39]])
    np.testing.assert_array_equal(kc.row(0), K[0])
    np.testing.assert_array_equal(kc.diagonal(), np.diag(K))
    assert kc.n_hits == 5 and kc.n_misses == 0 and kc.n_kernel_evaluations == 0
    assert kc.hit_rate == 1.0
    # rows are read from the user's matrix (no copy at construction)
    K[2, 5] = -123.0
    assert kc.row(2)[5] == -123.0


def test_zero_features():
    X = np.zeros((5, 0))
    np.testing.assert_array_equal(_make(X, LINEAR).rows(range(5)), np.zeros((5, 5)))
    np.testing.assert_array_equal(_make(X, RBF).rows(range(5)), np.ones((5, 5)))
    Xs = sp.csr_matrix((5, 0))
    np.testing.assert_array_equal(_make(Xs, LAPLACE).rows(range(5)), np.ones((5, 5)))


# ------------------------------------------------------------- LRU semantics


def test_lru_sequence_capacity_three():
    m = 20
    X = _dense(m=m)
    kc = _make(X, RBF, _mb_for_rows(m, 3))
    assert kc.capacity == 3
    assert kc.nbytes == 3 * m * 8

    def request(i, expect_hit):
        hits, misses = kc.n_hits, kc.n_misses
        kc.row(i)
        assert (kc.n_hits - hits, kc.n_misses - misses) == ((1, 0) if expect_hit else (0, 1))

    request(0, False)
    request(1, False)
    request(2, False)
    assert kc.cached_rows() == [2, 1, 0]
    request(0, True)  # 0 becomes most recently used
    assert kc.cached_rows() == [0, 2, 1]
    request(3, False)  # evicts 1, the least recently used
    assert kc.cached_rows() == [3, 0, 2]
    request(1, False)  # 1 was evicted: recomputed, evicts 2
    assert kc.cached_rows() == [1, 3, 0]
    request(0, True)
    request(2, False)  # evicts 3
    assert kc.cached_rows() == [2, 0, 1]
    request(1, True)
    request(0, True)
    assert (kc.n_hits, kc.n_misses) == (4, 6)
    assert kc.n_kernel_evaluations == 6 * m
    assert kc.hit_rate == pytest.approx(0.4)

    kc.reset_stats()
    assert (kc.n_hits, kc.n_misses, kc.n_kernel_evaluations) == (0, 0, 0)
    assert kc.hit_rate == 0.0
    assert kc.cached_rows() == [0, 1, 2]  # reset_stats keeps the cached rows
    request(2, True)


@pytest.mark.parametrize("capacity", [2, 3, 5])
def test_lru_matches_reference_model(capacity):
    """Random request stream against a pure-Python LRU model (OrderedDict)."""
    m = 12
    kc = _make(_dense(m=m), LAPLACE, _mb_for_rows(m, capacity))
    assert kc.capacity == capacity
    model = OrderedDict()
    hits = misses = 0
    for i in np.random.default_rng(capacity).integers(0, m, size=300):
        i = int(i)
        if i in model:
            hits += 1
            model.move_to_end(i)
        else:
            misses += 1
            if len(model) == capacity:
                model.popitem(last=False)
            model[i] = None
        kc.row(i)
        assert kc.cached_rows() == list(reversed(model))
    assert (kc.n_hits, kc.n_misses, kc.n_kernel_evaluations) == (hits, misses, misses * m)
    assert 0 < hits < 300


def test_two_most_recent_rows_never_evicted_by_next_call():
    """Capacity 2: alternating two rows never misses after they are loaded."""
    m = 10
    kc = _make(_dense(m=m), LINEAR, 1e-9)
    assert kc.capacity == 2
    kc.rows([4, 7] * 10)
    assert (kc.n_misses, kc.n_hits) == (2, 18)
    kc.row(1)  # evicts 4, keeps 7 (previous request)
    assert kc.cached_rows() == [1, 7]


def test_capacity_clamps():
    X = _dense(m=50)
    assert _make(X, RBF, 1e-12).capacity == 2
    assert _make(X, RBF, 1e6).capacity == 50
    assert _make(X, RBF, math.inf).capacity == 50
    assert _make(X[:1], RBF, 1e-12).capacity == 1  # m = 1: only one row exists
    kc = _make(X, RBF, _mb_for_rows(50, 7))
    assert kc.capacity == 7 == KernelCache.rows_for_budget(50, _mb_for_rows(50, 7))
    assert kc.nbytes == 7 * 50 * 8


def test_rows_for_budget_arithmetic():
    f = KernelCache.rows_for_budget
    assert f(60000, 2000) == 4369  # 2000 * 2**20 // 480000 = 4369.06
    assert f(60000, 2000.0) == 2000 * 2**20 // (60000 * 8)
    # budgets beyond 2**31 and 2**32 bytes (would overflow 32-bit ints)
    assert f(60000, 4096) == 4096 * 2**20 // 480000 == 8947
    assert f(60000, 3000) == 3000 * 2**20 // 480000 == 6553
    assert f(200000, 100_000) == 100_000 * 2**20 // 1_600_000 == 65536
    assert f(60000, 1e12) == 60000  # clamp to m (rows beyond m are useless)
    assert f(60000, 1e300) == 60000  # no overflow of the byte count
    assert f(60000, 0.5) == 2  # 1 row fits in 0.5 MB, clamped to 2
    assert f(60000, 1e-9) == 2
    assert f(1, 1000) == 1
    with pytest.raises(ValueError):
        f(0, 10)
    with pytest.raises(ValueError):
        f(100, 0)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("code", [-1, 6, 42])
def test_unknown_kernel_code(code):
    with pytest.raises(ValueError, match="kernel code"):
        KernelCache(_dense(), code, 1.0, 3.0, 0.0, 10.0)


@pytest.mark.parametrize("size", [0.0, -1.0, math.nan])
def test_non_positive_cache_size(size):
    with pytest.raises(ValueError, match="cache_size_mb"):
        KernelCache(_dense(), RBF, 1.0, 3.0, 0.0, size)


def test_non_square_precomputed():
    with pytest.raises(ValueError, match="square"):
        KernelCache(np.ones((4, 5)), PRECOMPUTED, 0.0, 0.0, 0.0, 10.0)
    with pytest.raises(ValueError, match="square"):
        KernelCache(np.ones(4), PRECOMPUTED, 0.0, 0.0, 0.0, 10.0)


def test_bad_shapes_and_indices():
    with pytest.raises(ValueError, match="2-dimensional"):
        KernelCache(np.ones(4), RBF, 1.0, 3.0, 0.0, 10.0)
    with pytest.raises(ValueError, match="at least one sample"):
        KernelCache(np.ones((0, 3)), RBF, 1.0, 3.0, 0.0, 10.0)
    kc = _make(_dense(), RBF)
    with pytest.raises(IndexError):
        kc.row(40)
    with pytest.raises(IndexError):
        kc.row(-1)
    with pytest.raises(IndexError):
        kc.rows([0, 40])
    with pytest.raises(TypeError):
        kc.row(1.5)
    assert kc.n_hits + kc.n_misses == 0  # rejected requests touch nothing


# ---------------------------------------------------------------- prefetch


@pytest.mark.parametrize("code", [LINEAR, POLY, RBF, SIGMOID])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_prefetched_rows_match_sklearn_and_evict_nothing(code, n_threads):
    """A block of rows by dgemm (3 column blocks here) equals the kernel; no slot is reused."""
    X = _dense(m=1100, d=7)
    K = _reference(X, code)
    kc = _make(X, code, _mb_for_rows(1100, 12))
    kc.n_threads = n_threads
    assert kc.capacity == 12
    kc.row(5)
    wanted = [5, 9, 9, 1099, 0, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309]
    assert kc.prefetch_rows(wanted) == 11   # 5 cached, 9 twice, 12 - 1 free slots
    assert kc.n_prefetched == 11 and kc.n_misses == 1
    assert kc.n_kernel_evaluations == 12 * 1100
    assert set(kc.cached_rows()) == {5, 9, 1099, 0, 300, 301, 302, 303, 304, 305, 306, 307}
    assert kc.prefetch_rows([400]) == 0     # full, and under 16 rows: nothing evicted
    got = kc.rows([9, 1099, 0, 307])
    np.testing.assert_allclose(got, K[[9, 1099, 0, 307]], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[:, [9, 1099, 0, 307]].diagonal(),
                                  kc.diagonal()[[9, 1099, 0, 307]])
    assert kc.n_misses == 1 and kc.n_hits == 4


def test_a_full_cache_prefetches_into_its_least_recently_used_eighth():
    """Once every slot is used a prefetch evicts the least recently used rows, an eighth
    of the cache at most; its rows equal the kernel, and those evicted before any request
    are counted."""
    X = _dense(m=500, d=6)
    K = _reference(X, RBF)
    kc = _make(X, RBF, _mb_for_rows(500, 32))
    assert kc.capacity == 32
    kc.rows(range(32))                      # full; row 0 least recently used
    assert kc.prefetch_rows(range(100, 110)) == 4
    assert set(kc.cached_rows()) == set(range(4, 32)) | set(range(100, 104))
    got = kc.rows([100, 103])
    np.testing.assert_allclose(got, K[[100, 103]], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[:, [100, 103]].diagonal(), kc.diagonal()[[100, 103]])
    assert kc.n_misses == 32 and kc.n_hits == 2 and kc.n_prefetched == 4
    kc.rows(range(200, 232))                # evicts every row: 101 and 102 never requested
    assert kc.n_prefetch_unused == 2


def test_an_evicting_prefetch_shrinks_when_its_rows_go_unused_and_grows_when_used():
    """It starts at 16 rows; rows requested after the prefetch double that (up to an eighth
    of the cache, 32 here), rows evicted unused halve it (down to 2)."""
    X = _dense(m=3000, d=4)
    kc = _make(X, RBF, _mb_for_rows(3000, 256))
    kc.rows(range(256))
    start = 256
    sizes = []
    for _ in range(40):                     # never requested: each goes out unused
        n = kc.prefetch_rows(range(start, start + 64))
        sizes.append(n)
        start += n
    assert sizes[0] == 16 and sizes[-1] == 2
    assert sizes == sorted(sizes, reverse=True)
    kc.rows(range(start, start + 256))      # requested rows evict every unused one
    start += 256
    sizes = []
    for _ in range(40):                     # each row requested at once
        n = kc.prefetch_rows(range(start, start + 64))
        kc.rows(range(start, start + n))
        sizes.append(n)
        start += n
    assert sizes[0] == 2 and sizes[-1] == 32
    assert sizes == sorted(sizes)


@pytest.mark.parametrize("full", [False, True])
def test_float32_rows_prefetched_are_those_computed_on_request_rounded(full):
    """A float32 cache computes a block in float64 and rounds each row as it stores it:
    the same float32 values as a row computed on request (up to one rounding step of
    the other summation order), into free slots or, once full, the LRU eighth."""
    X = _dense(m=500, d=6)
    g, deg, c0 = KERNELS[RBF][2]
    kc = KernelCache(X, RBF, g, deg, c0, 32 * 500 * 4 / 2**20, float32=True)
    ref = KernelCache(X, RBF, g, deg, c0, 64.0, float32=True)
    assert kc.capacity == 32
    if full:
        kc.rows(range(200, 232))
    assert kc.prefetch_rows(range(100, 110)) == (4 if full else 10)
    got = kc.rows([100, 103])
    np.testing.assert_allclose(got, ref.rows([100, 103]), rtol=2**-23, atol=2**-24)
    np.testing.assert_array_equal(got[:, [100, 103]].diagonal(), kc.diagonal()[[100, 103]])
    assert np.array_equal(got, got.astype(np.float32))


@pytest.mark.parametrize("code", [LINEAR, POLY, RBF, SIGMOID])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_rows_prefetched_as_a_block_match_sklearn(code, n_threads):
    """CSR rows in blocks (one pass over the non-zeros for the block; 35 rows: three
    groups of 16 queries, the last padded), empty rows included, into free slots and
    then the least recently used eighth; the diagonal is exact."""
    m = 1100
    X = _csr_with_empty_rows(m=m, d=150)
    K = _reference(X, code)
    kc = _make(X, code, _mb_for_rows(m, 300))
    kc.n_threads = n_threads
    wanted = [3, 17, m - 1, *range(500, 532)]
    assert kc.prefetch_rows(wanted) == 35 and kc.n_misses == 0
    got = kc.rows(wanted)
    np.testing.assert_allclose(got, K[wanted], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[np.arange(35), wanted], kc.diagonal()[wanted])
    kc.rows(range(600, 865))                # full: the next prefetch evicts
    assert kc.prefetch_rows(range(900, 920)) == 16
    np.testing.assert_allclose(kc.rows(range(900, 916)), K[900:916], rtol=RTOL, atol=ATOL)


def test_prefetch_declined_where_rows_are_computed_one_at_a_time():
    X = _dense()
    assert _make(X, LAPLACE).prefetch_rows([0, 1]) == 0
    wide = sp.random(40, 5000, density=0.01, format="csr", random_state=0)
    assert _make(wide, RBF).prefetch_rows([0, 1]) == 0   # over 4096 features
    assert _make(_csr_with_empty_rows(), RBF).prefetch_rows([0, 1]) == 0   # 3.6 non-zeros
    with pytest.raises(IndexError):
        _make(X, RBF).prefetch_rows([40])


def test_an_evicting_cache_keeps_dense_data_with_few_non_zeros_as_csr():
    """Dense X with at most 30 % non-zeros is kept as CSR by a cache that evicts (its
    row blocks then read the non-zeros only), not by one that holds every row, for
    denser data or for rows too short to block; the rows are the kernel's either way."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 200)) * (rng.random((800, 200)) < 0.25)
    K = _reference(X, RBF)
    small = _mb_for_rows(800, 100)
    kept = _make(X, RBF, small)
    assert "csr" in repr(kept)
    assert "dense" in repr(_make(X, RBF))
    assert "dense" in repr(_make(X + (X == 0) * 0.5 * (rng.random(X.shape) < 0.3), RBF, small))
    assert "dense" in repr(_make(X, LAPLACE, small))
    assert "dense" in repr(_make(X[:, :100], RBF, small))   # 25 non-zeros per row
    assert kept.prefetch_rows(range(200, 240)) == 40
    np.testing.assert_allclose(kept.rows([*range(200, 240), 7]), K[[*range(200, 240), 7]],
                               rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------- the whole matrix
@pytest.mark.parametrize("code", [LINEAR, POLY, RBF, SIGMOID])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("offset", [0.0, 0.5])
def test_fill_gives_the_symmetric_kernel_matrix_from_half_of_it(code, n_threads, offset):
    """Row blocks of 256 (m = 700: three, the last partial), each resumed after a
    zero-second slice: every row equals the kernel, K is exactly symmetric, the
    values computed are the blocks' upper trapezoids, and every request is a hit."""
    m = 700
    X = _dense(m=m, d=5)
    g, deg, c0 = KERNELS[code][2]
    kc = KernelCache(X, code, g, deg, c0, 64.0, n_threads=n_threads, offset=offset)
    assert kc.fillable
    slices = 1
    while not kc.fill(0.0):
        slices += 1
    assert slices == 3 and not kc.fillable
    assert kc.n_kernel_evaluations == 256 * 700 + 256 * 444 + 188 * 188
    got = kc.rows(range(m))
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_array_equal(got.diagonal(), kc.diagonal())
    np.testing.assert_allclose(got, _reference(X, code) + offset, rtol=RTOL, atol=ATOL)
    assert kc.n_misses == 0 and kc.n_hits == m and kc.n_cached == m


def test_fill_declined_or_abandoned_where_it_cannot_hold():
    """Not fillable: a cache smaller than the matrix, laplace, sparse, float32, precomputed.
    A row requested while a fill is under way ends the fill; what was filled stays exact."""
    X = _dense(m=600, d=4)
    g, deg, c0 = KERNELS[RBF][2]
    assert not _make(X, RBF, _mb_for_rows(600, 599)).fillable
    assert not _make(X, LAPLACE).fillable
    assert not _make(_csr_with_empty_rows(), RBF).fillable
    assert not KernelCache(X, RBF, g, deg, c0, 64.0, float32=True).fillable
    assert not KernelCache(X @ X.T, PRECOMPUTED, 0.0, 0.0, 0.0, 64.0).fillable
    assert not _make(X, LAPLACE).fill()
    kc = _make(X, RBF)
    kc.fill(0.0)                            # rows 0 .. 255
    assert kc.n_cached == 256 and kc.fillable
    kc.add_offset(0.25)                     # reaches the columns already under rows 256 ..
    kc.row(599)                             # computed on request, in slot 256
    assert not kc.fillable and not kc.fill()
    np.testing.assert_allclose(kc.rows(range(600)), _reference(X, RBF) + 0.25,
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_complete_computes_every_missing_row_once(n_threads):
    """complete() computes the rows not cached yet (m = 300: blocks of 64), each once,
    equal to the kernel; a second call computes nothing."""
    m = 300
    X = _dense(m=m, d=5)
    g, deg, c0 = KERNELS[RBF][2]
    kc = KernelCache(X, RBF, g, deg, c0, 64.0, n_threads=n_threads)
    for i in (3, 17, 250):
        kc.row(i)
    assert kc.complete() == m - 3 and kc.complete() == 0
    assert kc.n_cached == m and kc.n_kernel_evaluations == m * m
    np.testing.assert_allclose(kc.rows(range(m)), _reference(X, RBF), rtol=RTOL, atol=ATOL)
    assert kc.n_misses == 3


def test_complete_declined_where_rows_cannot_all_be_held_or_blocked():
    """No rows from complete(): a cache smaller than the matrix, laplace, sparse rows of
    more than 4096 features or few non-zeros."""
    X = _dense(m=600, d=4)
    wide = sp.random(40, 5000, density=0.01, format="csr", random_state=0)
    for kc in (_make(X, RBF, _mb_for_rows(600, 599)), _make(X, LAPLACE), _make(wide, RBF),
               _make(_csr_with_empty_rows(), RBF)):
        assert kc.complete() == 0 and kc.n_cached == 0 and kc.n_kernel_evaluations == 0


def test_complete_computes_sparse_rows_in_blocks():
    X = _csr_with_empty_rows(m=150, d=150)
    kc = _make(X, RBF)
    assert kc.complete() == 150 and kc.n_misses == 0
    np.testing.assert_allclose(kc.rows(range(150)), _reference(X, RBF), rtol=RTOL, atol=ATOL)


# ------------------------------------------------- products from the cached rows
@pytest.mark.parametrize("code", list(KERNELS))
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_cached_matmul_covers_exactly_the_cached_rows(code, kind):
    """K @ coef over the rows in the cache (after evictions) equals the reference."""
    X = _dense(m=30) if kind == "dense" else _csr_with_empty_rows(m=30)
    K = _reference(X, code)
    kc = _make(X, code, _mb_for_rows(30, 7))
    order = np.random.default_rng(3).integers(0, 30, size=60)
    kc.rows(order)
    coef = np.random.default_rng(4).normal(size=(30, 4))
    product, covered = kc.cached_matmul(coef)
    recent = list(dict.fromkeys(order[::-1]))[:7]  # the LRU keeps the 7 latest distinct rows
    assert kc.capacity == 7 and set(np.flatnonzero(covered)) == set(recent)
    np.testing.assert_allclose(product, K[:, covered] @ coef[covered], rtol=1e-12, atol=1e-12)


def test_cached_matmul_uses_no_rounded_rows():
    X = _dense(m=20)
    kc = KernelCache(X, RBF, 0.4, 0.0, 0.0, 64.0, float32=True)
    kc.rows(np.arange(20))
    product, covered = kc.cached_matmul(np.ones((20, 3)))
    assert not covered.any() and not product.any()


def test_kernel_checks_its_points_for_every_solver():
    """Kernel took a non-square Gram matrix (the online solver read its rows past their
    end), NaN points or Gram entries (S2DO 'stalled' and online 'epoch_limit' at α = 0)
    and unknown names (a KeyError at the first kernel row)."""
    from msvm.kernels import Kernel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    K = X @ X.T
    for args, message in (((K[:, :8], "precomputed"), r"square \(m, m\) Gram matrix.*\(12, 8\)"),
                          ((K[0], "precomputed"), r"got shape \(12,\)"),
                          ((np.where(K > 1, np.nan, K), "precomputed"), "NaN or infinity"),
                          ((np.where(X > 1, np.inf, X), "rbf"), "NaN or infinity"),
                          ((sp.csr_matrix(np.where(X > 1, np.nan, 0.0)), "rbf"), "NaN"),
                          ((X, "gaussian"), "Unknown kernel 'gaussian'")):
        with pytest.raises(ValueError, match=message):
            Kernel(*args)
    assert Kernel(K, "precomputed").n_samples == Kernel(sp.csr_matrix(X), "rbf").n_samples == 12
