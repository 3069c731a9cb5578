"""LRU caches of Gram-matrix rows: fixed rows over all examples, or rows over slots.

:class:`KernelCache` holds rows of the training Gram matrix, each over all m
examples (the batch solvers).  :class:`SlotRowCache` holds rows over a
changing set of slots (the online solver's support patterns), each of its own
length, within a byte budget; its owner fills and extends them (see the end
of this docstring).  Both order their rows with the same ``Lru`` list of
``_kernel_cache.pxd``.

Every decomposition solver of msvm (S2DO, online, Frank-Wolfe) touches the
Gram matrix ``K[i, j] = k(x_i, x_j)`` one row at a time, and the same few
rows again and again (the working set).  Forming ``K`` costs O(m^2) memory,
which is out of reach for m = 60 000; recomputing a row costs O(m d).  This
module keeps as many rows as a memory budget allows and recomputes the rest.

Layout
------
* ``_buffer``: one contiguous block of ``capacity * m`` doubles, allocated
  once with ``malloc``.  Slot ``s`` is the row stored at ``_buffer + s*m``.
  One block (instead of one allocation per row) means no allocator traffic in
  the solvers' inner loops and a memory footprint fixed at construction:
  ``capacity = cache_size_mb * 2**20 // (8 m)`` (``4 m`` with float32 storage),
  clamped to ``[2, m]``.
* ``_slot_of_row`` (m entries): the slot holding row ``i``, or -1.  This makes
  the hit test a single O(1) array read, with no hashing.
* ``_row_of_slot`` (capacity entries) and ``_lru``: the occupied slots in a
  doubly linked list ordered by recency (``Lru`` of ``_kernel_cache.pxd``,
  head = most recently used, tail = least).  A hit moves its slot to the
  head in O(1); a miss takes a never-used slot while there is one,
  otherwise evicts the tail, in O(1).

Because a requested row is moved to the head and eviction takes the tail, the
row returned by the previous call is never evicted by the current one as long
as ``capacity >= 2``: the two most recently returned row pointers are always
valid together (see ``_kernel_cache.pxd``).

Precomputed kernels (code 5) serve rows directly from the user's (m, m) Gram
matrix: no buffer, no eviction; every request counts as a hit.

Row computation
---------------
Kernel values come from :mod:`msvm._core._kernel` (shared with the online
solver), over X as a row source: one ``dgemv`` of a block of dense rows with
x_i, or one pass over the non-zeros of each CSR row with x_i scattered once
into a dense work vector; then the kernel's elementwise transform.

The diagonal entry ``K[i, i]`` of every computed row is overwritten by the
precomputed ``diag(i)`` so that both sources agree bit for bit (1 exactly for
rbf and laplace).

A solver that knows which rows it will want soon can ask for them together
(``prefetch``): the gathered rows are multiplied by X in one ``dgemm`` per
block, which reads X once for all of them instead of once per row (dgemv is
bandwidth-bound): into never-used slots while there are any, then into the
least recently used eighth of the cache at most, through a block buffer of
PREFETCH_MAX rows outside the budget (allocated at the first such prefetch;
float32 caches always use it, rounding a row as it is copied).  Sparse rows
are blocked the same way (``_kernel.sparse_block``: each row's non-zeros are
read once for the whole block) when they hold SPARSE_BLOCK_NNZ non-zeros on
average and at most SPARSE_BLOCK_FEATURES features; shorter rows cost about
their ``exp`` however they are computed, and are computed one at a time.

A cache that evicts recomputes rows all along, each block a pass over X: it
keeps dense X with at most SPARSE_DENSITY non-zeros as CSR (``_keep_as_csr``),
so that a pass reads the non-zeros only (mnist has a fifth of its entries
non-zero).  The values change by rounding only.

A cache that holds every row can instead compute the whole matrix at once
(``fill``), by symmetry: half the kernel values, in blocks of 256 rows (one
dgemm per block of columns, which packs X a few times instead of once per
handful of rows), the other half copied.  The S2DO solvers do so before
their loop: an all-in-one machine started from α = 0 has every example
violating its margins, so nearly every row is requested anyway.

A row is computed in fixed blocks of :func:`row_block` entries (one ``dgemv``
or ``dgemm`` and one transform each), shared among ``n_threads`` OpenMP
threads.  The blocks depend on m only, not on the number of threads, so
neither do the values:
a solver gives bit-identical results with 1 or 2 threads.  (BLAS's own
threads are no help here: one row is too small a product to share, and
OpenBLAS's workers busy-wait between calls.)

Single precision
----------------
With ``float32=True`` the rows are stored as float32, so twice as many fit
the budget.  A computed row is rounded to float32 before anyone sees it and
every request converts the stored row back into one of SCRATCH_ROWS (8)
double scratch rows, used in turn: callers always see the same rounded Gram
matrix (a perturbation of relative size 2**-24 ≈ 6e-8 per entry, diagonal
included), and the pointers of up to 8 consecutive hits stay valid together
(S2DO's blocks hold that many rows).

Rows over slots
---------------
The online solver keeps only its support patterns, in slots 0 .. n − 1 that
grow and shrink, so a row there is over the slots, not over the m examples.
:class:`SlotRowCache` keeps one record per row: a separately allocated row
(grown by realloc, so rows of many lengths share the budget), its valid
length, and its key, a slot or (once the pattern has left the slots) its
training index.  Lookups are O(1) through one map per key kind.  Rows are
evicted least recently used first until the budget holds, except the two
rows last pinned.  Computing entries, and following the slots when one is
removed, is the owner's (:mod:`msvm._core._online`).
"""

from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport ddot, dgemm

from msvm._core._steps cimport _now
from msvm._core._kernel cimport (
    LAPLACE, PRECOMPUTED, KernelSpec, dense_block, dense_rows, kernel_values, sparse_block,
    sparse_block_width, sparse_rows, to_kernel,
)

import numpy as np
import scipy.sparse as sp

__all__ = ["KernelCache", "SlotRowCache", "KERNEL_NAMES"]

#: Kernel code -> name (same codes as ``msvm.kernels.KERNEL_CODES``).
KERNEL_NAMES = {0: "linear", 1: "poly", 2: "rbf", 3: "laplace", 4: "sigmoid", 5: "precomputed"}

cdef double _BYTES_PER_MB = 1048576.0   # 2**20
cdef long long _LLONG_SAFE = 1LL << 62

#: Entries of a row per block (per BLAS call and thread task): at least ROW_BLOCK_MIN,
#: at most ROW_BLOCK_MAX, a quarter of the row in between (see :func:`row_block`).
cdef Py_ssize_t ROW_BLOCK_MIN = 512
cdef Py_ssize_t ROW_BLOCK_MAX = 2048

#: Rows of one step of :meth:`KernelCache.fill` (one dgemm per block of columns).
cdef Py_ssize_t FILL_ROWS = 256
#: Rows below a step of :meth:`KernelCache.fill` mirrored per thread task.
cdef Py_ssize_t MIRROR_ROWS = 64

#: Scratch of :meth:`KernelCache.cached_matmul`, in bytes (rows copied per dgemm).
cdef Py_ssize_t MATMUL_BYTES = 8 << 20

#: A cache that evicts keeps dense data of at most this share of non-zeros as CSR: its
#: row blocks then read the non-zeros once instead of all of X (see the module docstring).
SPARSE_DENSITY = 0.3
#: Sparse rows are computed in blocks (:meth:`KernelCache.prefetch`) up to this many
#: features (the block's transposed points, features × 64 doubles, stay in cache) and
#: from this many non-zeros per row on average (below it the extra rows of a block
#: cost more than reading X once for them saves).
cdef Py_ssize_t SPARSE_BLOCK_FEATURES = 4096
cdef Py_ssize_t SPARSE_BLOCK_NNZ = 32


cpdef Py_ssize_t row_block(Py_ssize_t m) noexcept nogil:
    """Entries of a Gram row of length m computed per block.

    Small blocks make a dgemm of a few rows mostly packing of X; a quarter of
    the row keeps four tasks for the threads; the bounds keep a block's slice
    of X in cache.  A function of m alone, so the values do not depend on the
    number of threads.
    """
    cdef Py_ssize_t b = (m + 3) // 4
    return ROW_BLOCK_MIN if b < ROW_BLOCK_MIN else (ROW_BLOCK_MAX if b > ROW_BLOCK_MAX else b)


cdef Py_ssize_t _rows_for_budget(Py_ssize_t m, double cache_size_mb,
                                 long long value_bytes=8) noexcept nogil:
    """Number of rows of length m that fit in cache_size_mb MB, clamped to [2, m].

    64-bit integer arithmetic: bytes = floor(cache_size_mb * 2**20) as a long
    long, rows = bytes // (value_bytes m).  A budget beyond 2**62 bytes is
    "everything".
    """
    cdef double budget = cache_size_mb * _BYTES_PER_MB
    cdef long long nbytes, row_bytes, rows
    if m <= 0:
        return 0
    if budget >= <double> _LLONG_SAFE:
        return m
    nbytes = <long long> budget
    row_bytes = (<long long> m) * value_bytes
    rows = nbytes // row_bytes
    if rows < 2:
        rows = 2
    if rows > m:
        rows = m
    return <Py_ssize_t> rows


cdef bint _sparse_rows_blocked(Py_ssize_t m, Py_ssize_t d, Py_ssize_t nnz) noexcept nogil:
    """Whether m sparse rows of d features and nnz non-zeros are computed in blocks."""
    return d <= SPARSE_BLOCK_FEATURES and nnz >= SPARSE_BLOCK_NNZ * m


def _keep_as_csr(X, int kernel_code, double cache_size_mb, bint float32):
    """Whether a cache of dense X keeps it as CSR: the cache evicts (so rows are computed
    again and again), the kernel is computed in blocks, at most SPARSE_DENSITY of X's
    entries are non-zero and the CSR rows would be blocked too."""
    m, d = X.shape
    if (m < 1 or d < 1 or kernel_code in (LAPLACE, PRECOMPUTED)
            or _rows_for_budget(m, cache_size_mb, 4 if float32 else 8) >= m):
        return False
    nnz = np.count_nonzero(X)
    return nnz <= SPARSE_DENSITY * X.size and _sparse_rows_blocked(m, d, nnz)


cdef void* _xmalloc(size_t n) except NULL:
    cdef void* p = malloc(n if n > 0 else 1)
    if p == NULL:
        raise MemoryError(f"KernelCache could not allocate {n} bytes.")
    return p


cdef class KernelCache:
    """LRU cache of Gram-matrix rows for one kernel and one training set.

    Parameters
    ----------
    X : ndarray of shape (m, d), CSR matrix of shape (m, d), or ndarray (m, m)
        Training points; for ``kernel_code == 5`` (precomputed) the training
        Gram matrix itself.  Dense input is converted to C-contiguous float64
        (no copy when it already is); sparse input to canonical CSR float64
        (sorted, no duplicates).  A precomputed Gram matrix is served
        directly, without copy, when it is already C-contiguous float64.
    kernel_code : int
        0 linear ⟨x, x'⟩, 1 poly (γ⟨x, x'⟩ + coef0)^degree, 2 rbf
        exp(−γ‖x − x'‖²), 3 laplace exp(−γ‖x − x'‖₁), 4 sigmoid
        tanh(γ⟨x, x'⟩ + coef0), 5 precomputed (scikit-learn's conventions; see
        :mod:`msvm.kernels`).
    gamma, degree, coef0 : float
        Kernel parameters (ignored where the kernel does not use them).
    cache_size_mb : float
        Memory budget for cached rows in MB (2**20 bytes), > 0.  The capacity
        is ``rows_for_budget(m, cache_size_mb, float32)`` rows.
    float32 : bool, default=False
        Store rows in single precision: twice the capacity, and every row
        handed out is the float32-rounded row (see the module docstring).
        Ignored for precomputed kernels.
    n_threads : int, default=1
        OpenMP threads sharing the computation of a row (also settable
        later through the attribute of the same name).
    offset : float, default=0.0
        A constant added to every Gram entry: the cache serves the rows of
        k + offset (the augmented-Lagrangian penalty of
        :mod:`msvm.solvers.s2do_bias` is this constant kernel).  A
        precomputed Gram matrix is then copied once with the offset added.

    Attributes
    ----------
    n_samples : int
        m, the number of training points (length of every row).
    n_features : int
        d (m for precomputed).
    capacity : int
        Number of rows the cache holds (m for precomputed).
    n_kernel_evaluations : int
        Kernel values computed so far (m per computed row; 0 for precomputed).
    n_hits, n_misses : int
        Row requests served from the cache / computed.
    float32 : bool
        Whether rows are stored in single precision.
    offset : float
        The constant added to every entry (0 unless given).
    n_threads : int
        OpenMP threads computing a row (writable).

    Notes
    -----
    The C API (``row_ptr``, ``diag``) is declared in ``_kernel_cache.pxd``,
    together with the pointer-validity guarantee: the two most recently
    returned row pointers are always valid.  The object is not thread-safe.
    """

    # Cython starts every C attribute at 0/NULL, so __dealloc__ may free whatever
    # __init__ reached (free(NULL) is a no-op).
    def __dealloc__(self):
        self._free_all()

    cdef _free_all(self):
        free(self._buffer)
        free(self._fbuffer)
        free(self._scratch)
        free(self._slot_of_row)
        free(self._row_of_slot)
        free(self._lru.prev)
        free(self._lru.next)
        free(self._sqnorm)
        free(self._l1norm)
        free(self._diag)
        free(self._work)
        free(self._block_rows)
        free(self._ahead)
        self._buffer = NULL
        self._fbuffer = NULL
        self._scratch = NULL
        self._slot_of_row = NULL
        self._row_of_slot = NULL
        self._lru.prev = NULL
        self._lru.next = NULL
        self._sqnorm = NULL
        self._l1norm = NULL
        self._diag = NULL
        self._work = NULL
        self._block_rows = NULL
        self._ahead = NULL

    def __init__(self, X, int kernel_code, double gamma, double degree, double coef0,
                 double cache_size_mb, bint float32=False, int n_threads=1,
                 double offset=0.0):
        if kernel_code not in KERNEL_NAMES:
            raise ValueError(
                f"Unknown kernel code {kernel_code}; expected one of "
                + ", ".join(f"{c} ({n})" for c, n in KERNEL_NAMES.items()) + "."
            )
        if not cache_size_mb > 0:
            raise ValueError(f"cache_size_mb must be a positive number, got {cache_size_mb!r}.")
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads!r}.")
        self._free_all()   # in case __init__ is called twice
        self.n_threads = n_threads
        self._turn = 0
        self.kernel_code = kernel_code
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        if not np.isfinite(offset):
            raise ValueError(f"offset must be finite, got {offset!r}.")
        self.offset = offset
        self._precomputed = kernel_code == PRECOMPUTED
        self._sparse = False
        self.n_kernel_evaluations = 0
        self.n_hits = 0
        self.n_misses = 0
        self.n_prefetched = 0
        self.n_prefetch_unused = 0

        if self._precomputed:
            if sp.issparse(X):
                X = X.toarray()
            X = np.ascontiguousarray(X, dtype=np.float64)
            if X.ndim != 2 or X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"A precomputed kernel needs a square (m, m) Gram matrix, got shape "
                    f"{X.shape}."
                )
            if offset != 0.0:
                X = X + offset   # a copy: the user's matrix is left alone
        elif sp.issparse(X):
            if X.ndim != 2:
                raise ValueError(f"X must be 2-dimensional, got shape {X.shape}.")
            X = sp.csr_matrix(X, dtype=np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()   # also sorts indices
            self._sparse = True
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-dimensional, got shape {X.shape}.")
            if _keep_as_csr(X, kernel_code, cache_size_mb, float32):
                X = sp.csr_matrix(X)   # canonical: sorted, no duplicates or explicit zeros
                self._sparse = True
        if X.shape[0] < 1:
            raise ValueError("X must contain at least one sample.")

        self._owner = X
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self._block = row_block(self.n_samples)
        if self._sparse:
            if X.shape[1] > np.iinfo(np.intc).max:
                raise ValueError(f"At most {np.iinfo(np.intc).max} features, got {X.shape[1]}.")
            self._data = X.data
            self._indices = np.asarray(X.indices, dtype=np.intc)
            self._indptr = np.asarray(X.indptr, dtype=np.intp)
            self._nnz = np.diff(self._indptr)
            self._sparse_blocks = _sparse_rows_blocked(X.shape[0], X.shape[1], X.nnz)
        else:
            self._X = X

        cdef Py_ssize_t m = self.n_samples
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t i
        self._diag = <double*> _xmalloc(m * sizeof(double))

        if self._precomputed:
            # Rows live in the user's matrix: no buffer, no LRU bookkeeping.
            self.float32 = False
            self.capacity = m
            for i in range(m):
                self._diag[i] = self._X[i, i]
            return

        self.float32 = float32
        self.capacity = _rows_for_budget(m, cache_size_mb, 4 if float32 else 8)
        self._sqnorm = <double*> _xmalloc(m * sizeof(double))
        if self._sparse:
            self._work = <double*> _xmalloc(d * sizeof(double))
            memset(self._work, 0, d * sizeof(double))
            if kernel_code == LAPLACE:
                self._l1norm = <double*> _xmalloc(m * sizeof(double))
        if float32:
            self._fbuffer = <float*> _xmalloc(<size_t> self.capacity * <size_t> m * sizeof(float))
            self._scratch = <double*> _xmalloc(SCRATCH_ROWS * <size_t> m * sizeof(double))
        else:
            self._buffer = <double*> _xmalloc(<size_t> self.capacity * <size_t> m * sizeof(double))
        self._slot_of_row = <Py_ssize_t*> _xmalloc(m * sizeof(Py_ssize_t))
        self._row_of_slot = <Py_ssize_t*> _xmalloc(self.capacity * sizeof(Py_ssize_t))
        self._ahead = <char*> _xmalloc(self.capacity * sizeof(char))
        memset(self._ahead, 0, self.capacity * sizeof(char))
        self._ahead_rows = PREFETCH_EVICT_START
        self._ahead_used = 0
        self._ahead_lost = 0
        self._lru.prev = <Py_ssize_t*> _xmalloc(self.capacity * sizeof(Py_ssize_t))
        self._lru.next = <Py_ssize_t*> _xmalloc(self.capacity * sizeof(Py_ssize_t))
        for i in range(m):
            self._slot_of_row[i] = -1
        self._lru.head = -1
        self._lru.tail = -1
        self._n_used = 0
        self._filled = 0

        self._spec = KernelSpec(kernel_code, gamma, degree, coef0)
        if self._sparse:
            self._rows = sparse_rows(&self._data[0] if self._data.shape[0] else NULL,
                                     &self._indices[0] if self._indices.shape[0] else NULL,
                                     &self._indptr[0], &self._nnz[0], d, self._sqnorm)
        else:
            self._rows = dense_rows(&self._X[0, 0] if d else NULL, d, self._sqnorm)
        with nogil:
            self._precompute_norms()

    cdef void _precompute_norms(self) noexcept nogil:
        cdef Py_ssize_t m = self.n_samples, d = self.n_features
        cdef Py_ssize_t i, p
        cdef int n, one = 1
        cdef double s, t, v
        cdef double* xi
        for i in range(m):
            if self._sparse:
                s = 0.0
                t = 0.0
                for p in range(self._indptr[i], self._indptr[i + 1]):
                    v = self._data[p]
                    s = s + v * v
                    t = t + fabs(v)
                self._sqnorm[i] = s
                if self._l1norm != NULL:
                    self._l1norm[i] = t
            elif d > 0:
                n = <int> d
                xi = <double*> &self._X[i, 0]
                self._sqnorm[i] = ddot(&n, xi, &one, xi, &one)
            else:
                self._sqnorm[i] = 0.0
            # k(x_i, x_i) from its inner product (its L1 distance, 0, for laplace).
            self._diag[i] = 0.0 if self.kernel_code == LAPLACE else self._sqnorm[i]
            to_kernel(&self._spec, &self._rows, self._sqnorm[i], self._diag, i, i + 1)
            self._diag[i] = self._diag[i] + self.offset
            if self.float32:
                self._diag[i] = <double> <float> self._diag[i]

    # ------------------------------------------------------------------ C API

    cdef double diag(self, Py_ssize_t i) noexcept nogil:
        return self._diag[i]

    cdef const double* row_ptr(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t slot, j
        cdef Py_ssize_t m = self.n_samples
        cdef double* out
        cdef float* stored
        if self._precomputed:
            self.n_hits += 1
            return &self._X[i, 0]
        slot = self._slot_of_row[i]
        if slot >= 0:
            self.n_hits += 1
            lru_touch(&self._lru, slot)
            if self._ahead[slot]:
                self._ahead[slot] = 0
                self._ahead_used += 1
            if not self.float32:
                return self._buffer + slot * m
            out = self._scratch + self._turn * m
            self._turn = (self._turn + 1) % SCRATCH_ROWS
            stored = self._fbuffer + slot * m
            for j in range(m):
                out[j] = stored[j]
            return out
        self.n_misses += 1
        slot = self._take_slot(i)
        if not self.float32:
            self._compute_row(i, self._buffer + slot * m)
            return self._buffer + slot * m
        out = self._scratch + self._turn * m
        self._turn = (self._turn + 1) % SCRATCH_ROWS
        self._compute_row(i, out)
        self._store_row(slot, out)
        return out

    cdef void _store_row(self, Py_ssize_t slot, double* row) noexcept nogil:
        """Copy a row computed elsewhere into ``slot``; a float32 cache rounds it, and
        ``row`` with it, so that the caller holds exactly the values stored."""
        cdef Py_ssize_t j, m = self.n_samples
        cdef float* stored
        if not self.float32:
            memcpy(self._buffer + slot * m, row, m * sizeof(double))
            return
        stored = self._fbuffer + slot * m
        for j in range(m):
            stored[j] = <float> row[j]
            row[j] = stored[j]

    cdef bint cached(self, Py_ssize_t i) noexcept nogil:
        return self._precomputed or self._slot_of_row[i] >= 0

    cdef bint keeps_rows(self) noexcept nogil:
        """Whether every row pointer handed out stays valid for the life of the cache:
        float64 rows (not scratch copies) and room for every row (no eviction)."""
        return not self.float32 and self.capacity >= self.n_samples

    cdef bint has_room(self) noexcept nogil:
        """Whether no row has been evicted yet and none will be for the next request:
        room for every row (a precomputed matrix has), or a never-used slot left."""
        return self.capacity >= self.n_samples or self._n_used < self.capacity

    cdef bint can_prefetch(self) noexcept nogil:
        return self._prefetch_room() > 1 and self._blockwise()

    cdef bint _blockwise(self) noexcept nogil:
        """Whether rows can be computed as a block (dgemm, or one pass over the non-zeros
        for sparse rows): an inner-product kernel and, if sparse, rows of at most
        SPARSE_BLOCK_FEATURES features and SPARSE_BLOCK_NNZ non-zeros on average or
        more (laplace, precomputed and other sparse caches compute rows one at a time
        or not at all)."""
        return (not self._precomputed and self.kernel_code != LAPLACE and self.n_features > 0
                and (not self._sparse or self._sparse_blocks))

    cdef Py_ssize_t _prefetch_room(self) noexcept nogil:
        """Rows one prefetch may compute: the never-used slots while there are any,
        then an eighth of the cache (the least recently used slots)."""
        if self._n_used < self.capacity:
            return self.capacity - self._n_used
        return min(self.capacity // PREFETCH_EVICT_SHARE, self._ahead_rows)

    cdef void _judge_ahead(self) noexcept nogil:
        """Halve the rows of an evicting prefetch when more of them are evicted unused
        than are requested, double them (up to PREFETCH_MAX) when four in five are."""
        if self._ahead_used + self._ahead_lost < 4 * self._ahead_rows:
            return
        if self._ahead_lost > self._ahead_used:
            self._ahead_rows = max(self._ahead_rows // 2, 2)
        elif 4 * self._ahead_lost < self._ahead_used:
            self._ahead_rows = min(2 * self._ahead_rows, PREFETCH_MAX)
        self._ahead_used = 0
        self._ahead_lost = 0

    cdef Py_ssize_t prefetch(self, const Py_ssize_t* rows, Py_ssize_t n) noexcept nogil:
        """Compute up to PREFETCH_MAX of ``rows`` (absent, distinct) with one dgemm per block
        (sparse rows: one pass over the block's non-zeros).

        A dgemv reads all of X for one row, a dgemm for a block of rows: on
        dense data kernel rows are bandwidth-bound, so a solver that knows
        which rows it will want soon gets them several times cheaper this
        way.  The rows go into never-used slots while there are any (nothing
        evicted), then into the least recently used ones: at most an eighth
        of the cache, so none of the other seven eighths' rows -- in
        particular the SCRATCH_ROWS most recently returned, once the
        capacity is at least 16 -- is evicted.  Returns the number of rows
        computed (0 unless :meth:`can_prefetch`).  The values equal
        :meth:`row_ptr`'s up to rounding (another summation order); a float32
        cache rounds each row of the float64 block as it stores it.
        """
        cdef Py_ssize_t m = self.n_samples, d = self.n_features, t, b, slot, w, p
        cdef Py_ssize_t n_blocks = (m + self._block - 1) // self._block
        cdef bint evicting = self._n_used == self.capacity
        cdef bint buffered = evicting or self.float32   # not straight into the slots
        cdef double* G
        cdef double* gsq
        cdef double* out
        if evicting:
            self._judge_ahead()
        if not self.can_prefetch():
            return 0
        n = min(n, PREFETCH_MAX, self._prefetch_room())
        if n <= 0:
            return 0
        if buffered and self._block_rows == NULL:
            self._block_rows = <double*> malloc(PREFETCH_MAX * m * sizeof(double))
            if self._block_rows == NULL:
                return 0
        # The points: n dense rows, or for sparse rows d × w transposed (zero-padded).
        w = sparse_block_width(n) if self._sparse else n
        G = <double*> malloc((w * d + n) * sizeof(double))   # the points, then their ‖x‖²
        if G == NULL:
            return 0
        gsq = G + w * d
        if self._sparse:
            memset(G, 0, w * d * sizeof(double))
        for t in range(n):
            if self._sparse:
                for p in range(self._indptr[rows[t]], self._indptr[rows[t] + 1]):
                    G[self._indices[p] * w + t] = self._data[p]
            else:
                memcpy(G + t * d, &self._X[rows[t], 0], d * sizeof(double))
            gsq[t] = self._sqnorm[rows[t]]
        # Into consecutive never-used float64 slots directly; else into the block buffer,
        # then copied (rounded to float32) into the slots taken.
        out = self._block_rows if buffered else self._buffer + self._n_used * m
        if not buffered:
            for t in range(n):
                self._take_slot(rows[t])      # never-used slots: consecutive
        for b in prange(n_blocks, num_threads=self.n_threads, schedule="static",
                       use_threads_if=self.n_threads > 1 and n_blocks > 1):
            self._gram_block(G, gsq, n, out, 0, b)
        free(G)
        for t in range(n):
            out[t * m + rows[t]] = self._diag[rows[t]]
            if buffered:
                slot = self._take_slot(rows[t])
                self._ahead[slot] = evicting
                self._store_row(slot, out + t * m)
        self.n_prefetched += n
        return n

    cdef void _gram_block(self, const double* G, const double* gsq, Py_ssize_t n,
                          double* out, Py_ssize_t j_first, Py_ssize_t b) noexcept nogil:
        """Columns [j_first + b·block, j_first + (b+1)·block) of the n rows whose points
        are the rows of G (squared norms gsq; sparse rows: G transposed, see
        ``sparse_block``), into ``out`` (rows m apart): one dgemm, or one pass over the
        columns' non-zeros (the blocks of :meth:`prefetch` and :meth:`fill`)."""
        cdef Py_ssize_t m = self.n_samples
        cdef Py_ssize_t j0 = j_first + b * self._block, j1 = j_first + (b + 1) * self._block
        cdef Py_ssize_t t, j
        cdef double* row
        if j1 > m:
            j1 = m
        if self._sparse:
            sparse_block(&self._spec, &self._rows, G, gsq, n, out, m, j0, j1)
        else:
            dense_block(&self._spec, &self._rows, G, gsq, n, out, m, j0, j1)
        if self.offset != 0.0:
            for t in range(n):
                row = out + t * m
                for j in range(j0, j1):
                    row[j] = row[j] + self.offset

    # ------------------------------------------------------- the whole matrix

    @property
    def fillable(self):
        """Whether :meth:`fill` can compute the whole Gram matrix: the cache holds every
        row, the data are dense, the rows float64, the kernel an inner-product one (not
        laplace or precomputed), and no row was computed otherwise."""
        return bool(self._fillable())

    cdef bint _fillable(self) noexcept nogil:
        return (self.capacity >= self.n_samples and self._n_used == self._filled
                and self._filled < self.n_samples and self._blockwise() and not self._sparse
                and not self.float32)

    def fill(self, double seconds=INFINITY):
        """Compute the whole Gram matrix, using its symmetry: half the kernel values.

        Row blocks of FILL_ROWS examples are taken in order; a block computes its
        rows from its own first column on (one dgemm per block of columns, shared
        among ``n_threads`` threads) and copies those values into the columns of
        the rows below it, whose earlier columns are then complete too.  Each
        row is exactly symmetric to its column and stays in slot = row for
        the life of the cache.  Where nearly every row is requested anyway -- an
        all-in-one machine starting from α = 0, where every example violates
        its margins, with a cache that holds them all -- this halves the kernel
        work and makes every row a hit.  With ``n_threads > 1`` each thread calls
        dgemm: limit BLAS to one thread meanwhile (``threadpoolctl``, as the
        solvers do), or its own threads compete with them for the cores.

        Parameters
        ----------
        seconds : float
            Return after the first row block that ends beyond this many seconds
            (call again to go on: an interrupt can land between calls).

        Returns
        -------
        bool
            True once every row is cached; False if more is to do or the cache is
            not :attr:`fillable`.
        """
        cdef double start = _now()
        cdef Py_ssize_t i0
        if not self._fillable():
            return False
        with nogil:
            while self._filled < self.n_samples:
                i0 = self._filled
                self._fill_rows(i0, min(i0 + FILL_ROWS, self.n_samples))
                if _now() - start > seconds:
                    break
        return self._filled == self.n_samples

    def complete(self):
        """Compute every row not cached yet, when the cache can hold them all.

        The solvers' alternative to :meth:`fill` on data with few features
        (:func:`msvm.solvers._common.fill_gram`): rows are computed on request
        until half of them have been asked for, and then the rest at once, in
        blocks of PREFETCH_MAX rows (one dgemm each, as :meth:`prefetch`), into
        the never-used slots.  Nothing is evicted.

        Returns
        -------
        int
            Rows computed: 0 if the cache cannot hold every row or computes its
            rows one at a time (precomputed, laplace, sparse rows beyond
            SPARSE_BLOCK_FEATURES features or under SPARSE_BLOCK_NNZ non-zeros).
        """
        cdef Py_ssize_t n
        with nogil:
            n = self.complete_all()
        return int(n)

    cdef Py_ssize_t rows_used(self) noexcept nogil:
        """Slots in use: the rows stored so far, at most the capacity (then it evicts)."""
        return self._n_used

    cdef Py_ssize_t complete_all(self) noexcept nogil:
        """The C side of :meth:`complete`."""
        cdef Py_ssize_t rows[PREFETCH_MAX]
        cdef Py_ssize_t i = 0, n, done = 0
        if self.capacity < self.n_samples or not self._blockwise():
            return 0
        while i < self.n_samples:
            n = 0
            while i < self.n_samples and n < PREFETCH_MAX:
                if self._slot_of_row[i] < 0:
                    rows[n] = i
                    n += 1
                i += 1
            if n > 0:
                done += self.prefetch(rows, n)
        return done

    cdef void _fill_rows(self, Py_ssize_t i0, Py_ssize_t i1) noexcept nogil:
        """Rows i0 .. i1 − 1 from column i0 on, their mirror below, then their slots."""
        cdef Py_ssize_t m = self.n_samples, n = i1 - i0, t, u, b
        cdef Py_ssize_t n_blocks = (m - i0 + self._block - 1) // self._block
        cdef Py_ssize_t n_tasks = (m - i1 + MIRROR_ROWS - 1) // MIRROR_ROWS
        cdef double* K = self._buffer
        cdef const double* G = self._rows.X + i0 * self.n_features   # the block's points
        for b in prange(n_blocks, num_threads=self.n_threads, schedule="static",
                       use_threads_if=self.n_threads > 1 and n_blocks > 1):
            self._gram_block(G, self._sqnorm + i0, n, K + i0 * m, i0, b)
        # The diagonal, and the square block on it made exactly symmetric.
        for t in range(n):
            K[(i0 + t) * m + i0 + t] = self._diag[i0 + t]
            for u in range(t + 1, n):
                K[(i0 + u) * m + i0 + t] = K[(i0 + t) * m + i0 + u]
        for b in prange(n_tasks, num_threads=self.n_threads, schedule="static",
                       use_threads_if=self.n_threads > 1 and n_tasks > 1):
            self._mirror(i0, i1, b)
        for t in range(i0, i1):
            self._row_of_slot[t] = t
            self._slot_of_row[t] = t
            lru_push_front(&self._lru, t)
        self._n_used = i1
        self._filled = i1
        self.n_kernel_evaluations += n * (m - i0)

    cdef void _mirror(self, Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t b) noexcept nogil:
        """Rows [i1 + b·MIRROR_ROWS, ...) get columns i0 .. i1 − 1 from rows i0 .. i1 − 1."""
        cdef Py_ssize_t m = self.n_samples, j, t
        cdef Py_ssize_t j0 = i1 + b * MIRROR_ROWS, j1 = i1 + (b + 1) * MIRROR_ROWS
        cdef double* K = self._buffer
        if j1 > m:
            j1 = m
        for j in range(j0, j1):
            for t in range(i0, i1):
                K[j * m + t] = K[t * m + j]

    # ----------------------------------------------------------- LRU list ops

    cdef Py_ssize_t _take_slot(self, Py_ssize_t i) noexcept nogil:
        """A slot for row i, most recently used: the next never-used one, else the LRU's."""
        cdef Py_ssize_t slot
        if self._n_used < self.capacity:
            slot = self._n_used
            self._n_used += 1
        else:
            slot = self._lru.tail
            self._slot_of_row[self._row_of_slot[slot]] = -1
            lru_unlink(&self._lru, slot)
            if self._ahead[slot]:
                self._ahead[slot] = 0
                self._ahead_lost += 1
                self.n_prefetch_unused += 1
        self.n_kernel_evaluations += self.n_samples
        self._row_of_slot[slot] = i
        self._slot_of_row[i] = slot
        lru_push_front(&self._lru, slot)
        return slot

    # -------------------------------------------------------- row computation

    cdef void _compute_row(self, Py_ssize_t i, double* out) noexcept nogil:
        """Row i into ``out``, in fixed blocks shared among ``n_threads`` threads."""
        cdef Py_ssize_t m = self.n_samples, b, p
        cdef Py_ssize_t B = self._block
        cdef Py_ssize_t n_blocks = (m + B - 1) // B
        cdef int n_threads = self.n_threads
        cdef Py_ssize_t start = 0, stop = 0
        if self._sparse:
            # Scatter x_i into the dense work vector the blocks read (and clear it after).
            start = self._indptr[i]
            stop = self._indptr[i + 1]
            for p in range(start, stop):
                self._work[self._indices[p]] = self._data[p]
        for b in prange(n_blocks, num_threads=n_threads, schedule="static",
                       use_threads_if=n_threads > 1 and n_blocks > 1):
            self._compute_block(i, out, b * B, m if (b + 1) * B > m else (b + 1) * B)
        if self._sparse:
            for p in range(start, stop):
                self._work[self._indices[p]] = 0.0
        out[i] = self._diag[i]

    cdef void _compute_block(self, Py_ssize_t i, double* out, Py_ssize_t j0,
                             Py_ssize_t j1) noexcept nogil:
        """out[j] = k(x_j, x_i) for j0 <= j < j1 (a sparse x_i is already in ``_work``)."""
        cdef const double* xi = self._work
        if not self._sparse:
            xi = self._rows.X + i * self.n_features if self.n_features else NULL
        cdef Py_ssize_t j
        kernel_values(&self._spec, &self._rows, xi, self._sqnorm[i],
                      self._l1norm[i] if self._l1norm != NULL else 0.0, out, j0, j1)
        if self.offset != 0.0:
            for j in range(j0, j1):
                out[j] = out[j] + self.offset

    # ------------------------------------------------------------- Python API

    cdef Py_ssize_t _check_index(self, i) except -1:
        cdef Py_ssize_t k
        try:
            k = i.__index__()
        except (AttributeError, TypeError):
            raise TypeError(f"Row index must be an integer, got {type(i).__name__}.") from None
        if k < 0 or k >= self.n_samples:
            raise IndexError(f"Row index {k} out of range for {self.n_samples} samples.")
        return k

    def row(self, i):
        """Row ``i`` of the Gram matrix, as a new array.

        Parameters
        ----------
        i : int
            Row index, ``0 <= i < n_samples``.

        Returns
        -------
        ndarray of shape (n_samples,)
            A copy of ``K[i, :]`` (the request updates the LRU order and the
            hit/miss counters like ``row_ptr``).
        """
        cdef Py_ssize_t k = self._check_index(i)
        cdef Py_ssize_t m = self.n_samples
        out = np.empty(m, dtype=np.float64)
        cdef double[::1] o = out
        cdef const double* src
        with nogil:
            src = self.row_ptr(k)
            memcpy(&o[0], src, m * sizeof(double))
        return out

    def rows(self, indices):
        """Several rows of the Gram matrix, requested in the given order.

        Parameters
        ----------
        indices : array-like of int, shape (k,)
            Row indices, each ``0 <= i < n_samples``.

        Returns
        -------
        ndarray of shape (k, n_samples)
            ``K[indices, :]`` (a copy).
        """
        idx = np.asarray(indices)
        if idx.ndim != 1:
            raise ValueError(f"indices must be 1-dimensional, got shape {idx.shape}.")
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"indices must be integers, got dtype {idx.dtype}.")
        idx = idx.astype(np.intp, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_samples):
            raise IndexError(f"Row indices out of range for {self.n_samples} samples.")
        cdef Py_ssize_t m = self.n_samples, r, n_req = idx.shape[0]
        cdef const Py_ssize_t[::1] ix = np.ascontiguousarray(idx)
        out = np.empty((n_req, m), dtype=np.float64)
        if n_req == 0:
            return out
        cdef double[:, ::1] o = out
        cdef const double* src
        with nogil:
            for r in range(n_req):
                src = self.row_ptr(ix[r])
                memcpy(&o[r, 0], src, m * sizeof(double))
        return out

    def add_offset(self, double delta):
        """Add ``delta`` to every Gram entry: the cached rows, the diagonal, later rows.

        O(cached rows · m).  The augmented Lagrangian of
        :mod:`msvm.solvers.s2do_bias` raises its penalty this way without
        computing a row again.  A precomputed Gram matrix must have been given
        with a non-zero ``offset`` (the cache then owns a copy of it).
        """
        cdef Py_ssize_t m = self.n_samples, s, j
        cdef double* row
        cdef float* frow
        if not np.isfinite(delta):
            raise ValueError(f"delta must be finite, got {delta!r}.")
        if self._precomputed:
            if self.offset == 0.0:
                raise ValueError("This cache serves the caller's Gram matrix; build it with "
                                 "a non-zero offset to change the offset later.")
            self._owner += delta          # the copy _X reads
            for j in range(m):
                self._diag[j] = self._X[j, j]
            self.offset += delta
            return
        with nogil:
            for s in range(self._n_used):
                if self.float32:
                    frow = self._fbuffer + s * m
                    for j in range(m):
                        frow[j] = <float> (frow[j] + delta)
                else:
                    row = self._buffer + s * m
                    for j in range(m):
                        row[j] = row[j] + delta
            if 0 < self._filled < m and self._n_used == self._filled:
                # A fill under way: the rows below it hold their first columns already.
                for s in range(self._filled, m):
                    row = self._buffer + s * m
                    for j in range(self._filled):
                        row[j] = row[j] + delta
            for j in range(m):
                self._diag[j] = self._diag[j] + delta
                if self.float32:
                    self._diag[j] = <double> <float> self._diag[j]
        self.offset += delta

    def cached_matmul(self, coef):
        """``K @ coef`` from the float64 rows already in the cache, and which rows those are.

        The rows with a non-zero coefficient are copied into a scratch block
        (up to MATMUL_BYTES, at most 64 rows) and multiplied in one ``dgemm``
        per block: the solver's certificate needs the scores F = Kβ recomputed
        exactly, and the rows of the support vectors are usually still cached,
        so they need not be computed again (rows without a coefficient, often
        most of the cache, are not read).  Rows stored in float32 are rounded,
        so none is used then (nor for a precomputed kernel, which keeps no
        buffer).

        Parameters
        ----------
        coef : ndarray of shape (n_samples, Q)

        Returns
        -------
        product : ndarray of shape (n_samples, Q)
            Σ over the cached rows i of ``K[:, i] * coef[i]``.
        covered : ndarray of bool, shape (n_samples,)
            The rows i included in ``product``.
        """
        cdef const double[:, ::1] c = np.ascontiguousarray(coef, dtype=np.float64)
        cdef Py_ssize_t m = self.n_samples, s
        cdef int n_out = <int> m, n_q = <int> c.shape[1], n_used = <int> self._n_used
        if c.shape[0] != m:
            raise ValueError(f"coef has {c.shape[0]} rows, expected {m}.")
        product = np.zeros((m, n_q), dtype=np.float64)
        covered = np.zeros(m, dtype=bool)
        if self.float32 or self._precomputed or n_used == 0 or n_q == 0:
            return product, covered
        rows = np.array([self._row_of_slot[s] for s in range(n_used)], dtype=np.intp)
        covered[rows] = True
        weights = np.asarray(c)[rows]
        used = np.flatnonzero(np.any(weights != 0, axis=1))   # slots with a coefficient
        if len(used) == 0:
            return product, covered
        cdef const Py_ssize_t[::1] slots = used.astype(np.intp)
        cdef double[:, ::1] w = np.ascontiguousarray(weights[used])
        cdef double[:, ::1] p = product
        cdef Py_ssize_t n_block = max(1, min(64, MATMUL_BYTES // (8 * m), len(used)))
        cdef double[:, ::1] block = np.empty((n_block, m))
        cdef Py_ssize_t start = 0, t, n, n_slots = slots.shape[0]
        cdef int k
        cdef double one = 1.0
        cdef char ta = b'N', tb = b'T'
        cdef int ldb = <int> m
        with nogil:
            while start < n_slots:
                n = min(n_block, n_slots - start)
                for t in range(n):
                    memcpy(&block[t, 0], self._buffer + slots[start + t] * m, m * sizeof(double))
                k = <int> n
                # Column-major: product (Q × m, ldc = Q) += weights (Q × n) · blockᵀ, the
                # block being a column-major (m × n) matrix with ld = m.
                dgemm(&ta, &tb, &n_q, &n_out, &k, &one, &w[start, 0], &n_q, &block[0, 0], &ldb,
                      &one, &p[0, 0], &n_q)
                start += n
        return product, covered

    def prefetch_rows(self, indices):
        """Compute absent rows ahead of their requests, as a block (see ``prefetch``).

        Parameters
        ----------
        indices : sequence of int
            Rows wanted soon; cached and repeated ones are skipped.  At most 64
            rows are computed, into the never-used slots while there are any,
            else into the least recently used eighth of the cache at most.
            With ``n_threads > 1``, limit BLAS to one thread meanwhile (see
            :meth:`fill`).

        Returns
        -------
        int
            Rows computed: 0 for precomputed or laplace caches and sparse ones
            of more than 4096 features or fewer than 32 non-zeros per row on
            average, whose rows are computed one at a time on request, and for
            a full cache of fewer than 16 rows.
        """
        cdef Py_ssize_t k
        wanted = []
        for i in indices:
            k = self._check_index(i)
            if not self.cached(k) and k not in wanted:
                wanted.append(k)
        if not wanted:
            return 0
        cdef const Py_ssize_t[::1] rows = np.asarray(wanted, dtype=np.intp)
        cdef Py_ssize_t n
        with nogil:
            n = self.prefetch(&rows[0], rows.shape[0])
        return int(n)

    def diagonal(self):
        """k(x_i, x_i) for every training point.

        Returns
        -------
        ndarray of shape (n_samples,)
            A copy of the diagonal computed at construction.
        """
        cdef Py_ssize_t m = self.n_samples
        out = np.empty(m, dtype=np.float64)
        cdef double[::1] o = out
        memcpy(&o[0], self._diag, m * sizeof(double))
        return out

    def reset_stats(self):
        """Set ``n_kernel_evaluations``, ``n_hits``, ``n_misses`` and ``n_prefetched`` to 0 (rows stay cached)."""
        self.n_kernel_evaluations = 0
        self.n_hits = 0
        self.n_misses = 0
        self.n_prefetched = 0
        self.n_prefetch_unused = 0

    @property
    def hit_rate(self):
        """Fraction of row requests served without computation (0.0 before any request)."""
        cdef long long total = self.n_hits + self.n_misses
        return (<double> self.n_hits) / total if total > 0 else 0.0

    @property
    def nbytes(self):
        """Bytes of the row buffer (``capacity * n_samples * 8``, or 4 per value with float32;
        0 for precomputed)."""
        if self._precomputed:
            return 0
        return int(self.capacity) * int(self.n_samples) * (4 if self.float32 else 8)

    @property
    def n_cached(self):
        """Number of rows currently held (``n_samples`` for precomputed)."""
        return self.n_samples if self._precomputed else self._n_used

    def cached_rows(self):
        """Indices of the rows currently held, most recently used first.

        Returns
        -------
        list of int
            Empty for a precomputed kernel (its rows are not cached but served
            from the Gram matrix).
        """
        out = []
        if self._precomputed:
            return out
        cdef Py_ssize_t s = self._lru.head
        while s >= 0:
            out.append(self._row_of_slot[s])
            s = self._lru.next[s]
        return out

    @staticmethod
    def rows_for_budget(m, cache_size_mb, float32=False):
        """Capacity in rows of a cache of ``cache_size_mb`` MB for m samples.

        ``floor(cache_size_mb * 2**20) // (8 m)`` (4 m with float32) in 64-bit integer
        arithmetic, clamped to ``[2, m]`` (``m`` when ``m < 2``).

        Parameters
        ----------
        m : int
            Number of samples (row length), >= 1.
        cache_size_mb : float
            Budget in MB (2**20 bytes), > 0.
        float32 : bool, default=False
            Rows stored in single precision (4 bytes per value instead of 8).

        Returns
        -------
        int
        """
        if m < 1:
            raise ValueError(f"m must be >= 1, got {m!r}.")
        if not cache_size_mb > 0:
            raise ValueError(f"cache_size_mb must be a positive number, got {cache_size_mb!r}.")
        return _rows_for_budget(<Py_ssize_t> m, <double> cache_size_mb, 4 if float32 else 8)

    def __repr__(self):
        kind = "precomputed" if self._precomputed else ("csr" if self._sparse else "dense")
        return (
            f"KernelCache({KERNEL_NAMES[self.kernel_code]}, {kind}, n_samples={self.n_samples}, "
            f"capacity={self.capacity}{', float32' if self.float32 else ''}, "
            f"hits={self.n_hits}, misses={self.n_misses})"
        )

    def __reduce__(self):
        raise TypeError("KernelCache cannot be pickled; rebuild it from the kernel instead.")


cdef inline void* _grow(void* p, size_t n) noexcept nogil:
    """realloc that leaves ``p`` intact (and returns NULL) when it fails."""
    return realloc(p, n if n > 0 else 1)


cdef class SlotRowCache:
    """Kernel rows over a changing set of slots, LRU within a byte budget.

    The online solver's rows are over its support patterns, held in slots
    0 .. n − 1 whose number grows and shrinks; each row has its own length
    and is filled and extended by its owner (see ``_kernel_cache.pxd`` for the
    C API).  A row belongs to a slot (``BY_SLOT``) or, once its pattern has
    left the slots, to the pattern's training index (``BY_INDEX``), so that a
    later epoch finds it again.  Rows beyond ``budget`` bytes are evicted,
    least recently used first, except the two rows last passed to ``pin``.

    Parameters
    ----------
    budget_mb : float
        Byte budget of the rows, in MB (2**20 bytes).
    n_index : int
        Number of training patterns whose rows may be kept by index (0: none).
    """

    # Cython starts every C attribute at 0/NULL, so __dealloc__ may free whatever
    # __init__ reached (free(NULL) is a no-op).
    def __dealloc__(self):
        cdef Py_ssize_t r
        if self.rows != NULL:
            for r in range(self.n_records):
                free(self.rows[r])
        free(self.rows)
        free(self.length)
        free(self.room)
        free(self.kind)
        free(self.key)
        free(self.lru.prev)
        free(self.lru.next)
        free(self.of_slot)
        free(self.of_index)

    def __init__(self, double budget_mb, Py_ssize_t n_index=0):
        cdef Py_ssize_t g
        if not budget_mb > 0:
            raise ValueError(f"budget_mb must be positive, got {budget_mb!r}.")
        self.budget = <long long> (budget_mb * _BYTES_PER_MB)
        self.lru.head = -1
        self.lru.tail = -1
        self.free_head = -1
        self.pin1 = -1
        self.pin2 = -1
        self.n_index = n_index
        if n_index > 0:
            self.of_index = <Py_ssize_t*> _xmalloc(n_index * sizeof(Py_ssize_t))
            for g in range(n_index):
                self.of_index[g] = -1
        if not self._reserve_records(16) or not self.reserve_slots(16):
            raise MemoryError("SlotRowCache could not allocate its records.")

    cdef bint _reserve_records(self, Py_ssize_t n) noexcept nogil:
        """Room for n records; the new ones go on the free list."""
        cdef Py_ssize_t c, r
        if n <= self.n_records:
            return True
        c = self.n_records * 2
        if c < n:
            c = n
        self.rows = <double**> _grow(self.rows, c * sizeof(double*))
        self.length = <Py_ssize_t*> _grow(self.length, c * sizeof(Py_ssize_t))
        self.room = <Py_ssize_t*> _grow(self.room, c * sizeof(Py_ssize_t))
        self.kind = <int*> _grow(self.kind, c * sizeof(int))
        self.key = <Py_ssize_t*> _grow(self.key, c * sizeof(Py_ssize_t))
        self.lru.prev = <Py_ssize_t*> _grow(self.lru.prev, c * sizeof(Py_ssize_t))
        self.lru.next = <Py_ssize_t*> _grow(self.lru.next, c * sizeof(Py_ssize_t))
        if (self.rows == NULL or self.length == NULL or self.room == NULL or self.kind == NULL
                or self.key == NULL or self.lru.prev == NULL or self.lru.next == NULL):
            return False
        for r in range(self.n_records, c):
            self.rows[r] = NULL
            self.length[r] = 0
            self.room[r] = 0
            self.kind[r] = -1
            self.lru.next[r] = self.free_head   # free list through lru.next
            self.free_head = r
        self.n_records = c
        return True

    cdef bint reserve_slots(self, Py_ssize_t n) noexcept nogil:
        """Keys for slots 0 .. n − 1 (call before a slot ≥ the current count is used)."""
        cdef Py_ssize_t c, s
        cdef Py_ssize_t* p
        if n <= self.n_slots:
            return True
        c = self.n_slots * 2
        if c < n:
            c = n
        p = <Py_ssize_t*> _grow(self.of_slot, c * sizeof(Py_ssize_t))
        if p == NULL:
            return False
        for s in range(self.n_slots, c):
            p[s] = -1
        self.of_slot = p
        self.n_slots = c
        return True

    cdef Py_ssize_t* _map(self, int kind, Py_ssize_t key) noexcept nogil:
        return self.of_slot + key if kind == BY_SLOT else self.of_index + key

    cdef Py_ssize_t record(self, int kind, Py_ssize_t key) noexcept nogil:
        """The record of a key, or -1."""
        return self._map(kind, key)[0]

    cdef Py_ssize_t find_or_add(self, int kind, Py_ssize_t key) noexcept nogil:
        """The record of a key, made the most recently used; a new empty one if absent.

        -1 when a new record cannot be allocated.
        """
        cdef Py_ssize_t r = self._map(kind, key)[0]
        if r >= 0:
            lru_touch(&self.lru, r)
            return r
        if self.free_head < 0 and not self._reserve_records(self.n_records * 2):
            return -1
        r = self.free_head
        self.free_head = self.lru.next[r]
        self.rows[r] = NULL
        self.length[r] = 0
        self.room[r] = 0
        self.kind[r] = kind
        self.key[r] = key
        self._map(kind, key)[0] = r
        lru_push_front(&self.lru, r)
        self.n_rows += 1
        return r

    cdef double* reserve(self, Py_ssize_t r, Py_ssize_t n) noexcept nogil:
        """Record r's row with room for n entries (its valid entries kept), or NULL."""
        cdef Py_ssize_t c
        cdef double* p
        if n <= self.room[r]:
            return self.rows[r]
        c = n + n // 8 + 16
        p = <double*> _grow(self.rows[r], c * sizeof(double))
        if p == NULL:
            return NULL
        self.rows[r] = p
        self.used_bytes += (c - self.room[r]) * <long long> sizeof(double)
        self.room[r] = c
        if self.used_bytes > self.peak_bytes:
            self.peak_bytes = self.used_bytes
        return p

    cdef void rekey(self, Py_ssize_t r, int kind, Py_ssize_t key) noexcept nogil:
        """Record r now belongs to another key (whose record, if any, is forgotten)."""
        cdef Py_ssize_t* old = self._map(self.kind[r], self.key[r])
        if old[0] == r:
            old[0] = -1
        self.kind[r] = kind
        self.key[r] = key
        self._map(kind, key)[0] = r

    cdef void pin(self, Py_ssize_t r) noexcept nogil:
        """Keep r, and the row pinned before it, out of eviction."""
        if self.pin1 != r:
            self.pin2 = self.pin1
            self.pin1 = r

    cdef void drop(self, Py_ssize_t r) noexcept nogil:
        """Free record r and forget its key."""
        cdef Py_ssize_t* m = self._map(self.kind[r], self.key[r])
        if m[0] == r:
            m[0] = -1
        lru_unlink(&self.lru, r)
        free(self.rows[r])
        self.used_bytes -= self.room[r] * <long long> sizeof(double)
        self.rows[r] = NULL
        self.length[r] = 0
        self.room[r] = 0
        self.kind[r] = -1
        self.lru.next[r] = self.free_head
        self.free_head = r
        self.n_rows -= 1
        if self.pin1 == r:
            self.pin1 = -1
        if self.pin2 == r:
            self.pin2 = -1

    cdef void evict(self) noexcept nogil:
        """Drop least recently used rows until the budget holds (pinned rows are kept)."""
        cdef Py_ssize_t r = self.lru.tail, prev
        while self.used_bytes > self.budget and r >= 0:
            prev = self.lru.prev[r]
            if r != self.pin1 and r != self.pin2:
                self.drop(r)
            r = prev

    def as_dict(self):
        """Every cached row, keyed ``("slot", s)`` or ``("index", g)`` (tests and debugging)."""
        cdef Py_ssize_t r = self.lru.head, n
        out = {}
        while r >= 0:
            n = self.length[r]
            out[("slot" if self.kind[r] == BY_SLOT else "index", int(self.key[r]))] = (
                np.array(<double[:n]> self.rows[r]) if n else np.zeros(0))
            r = self.lru.next[r]
        return out
