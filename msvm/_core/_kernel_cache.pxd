# C-level interface of the Gram-row LRU cache.
#
# Other Cython modules use it as
#
#     from msvm._core._kernel_cache cimport KernelCache
#
#     cdef KernelCache kc = kernel.cache(cache_size)   # built from Python
#     cdef const double* Ki
#     cdef const double* Kj
#     with nogil:
#         Ki = kc.row_ptr(i)       # row i of the Gram matrix, length n_samples
#         Kj = kc.row_ptr(j)       # Ki is still valid here (see guarantee)
#         Qii = kc.diag(i)
#
# Pointer-validity guarantee
# --------------------------
# A pointer returned by ``row_ptr`` stays valid at least until TWO further
# calls to ``row_ptr`` have been made: the two most recently returned row
# pointers are never evicted by the next call, because a requested row becomes
# most-recently-used and eviction takes the least-recently-used slot while the
# capacity is always >= 2 (or == n_samples when n_samples < 2).  After
#
#     p = kc.row_ptr(i); q = kc.row_ptr(j)
#
# both p and q are valid; a third call ``kc.row_ptr(k)`` may invalidate p (but
# never q).  Rows are read-only: never write through the returned pointer.
# For the precomputed kernel (code 5) every pointer stays valid for the life
# of the cache (rows point into the user's Gram matrix).
#
# A request for a row that is cached (``kc.cached(i)``) evicts nothing, so
# pointers obtained since the last miss stay valid through any number of such
# hits -- with ``float32=True`` up to SCRATCH_ROWS of them: rows are then stored
# in single precision (twice as many fit the budget) and handed out as doubles
# through SCRATCH_ROWS scratch rows used in turn (so the two-pointer guarantee
# holds as well).  ``keeps_rows()``: every pointer stays valid for the life of
# the cache -- float64 rows with room for all of them, so nothing is ever evicted.
#
# ``prefetch`` computes rows ahead of their requests: into never-used slots while
# there are any, then into the least recently used eighth of the slots at most, so
# that the rows returned by the last SCRATCH_ROWS requests survive it once the
# capacity is at least 16 (below that a full cache declines to prefetch).
#
# Preconditions (not checked, for speed): 0 <= i < n_samples.  The cache is
# not thread-safe: do not call row_ptr on one cache from several threads (a
# row it computes is itself split over ``n_threads`` OpenMP threads).
#
# SlotRowCache: rows over a changing set of slots
# ------------------------------------------------
# The online solver's rows are over its support patterns, slots 0 .. n − 1,
# whose number grows and shrinks: each row has its own length (entries
# 0 .. length − 1 are valid) and is extended by its owner.  A row is keyed by
# a slot (BY_SLOT) or by a training pattern's index (BY_INDEX, a pattern
# that left the slots but may come back).  Both caches order their rows by
# recency with the same Lru list; SlotRowCache evicts down to a byte budget
# and never evicts the two rows last passed to ``pin``:
#
#     r = rc.find_or_add(BY_SLOT, s)      # most recently used (-1: no memory)
#     if rc.length[r] < n:
#         row = rc.reserve(r, n)          # room for n entries (NULL: no memory)
#         ... fill row[rc.length[r]:n] ...; rc.length[r] = n
#     rc.pin(r); rc.evict()
#     return rc.rows[r]                   # valid until the next evict after
#                                         # two further pins

from msvm._core._kernel cimport KernelSpec, RowSource

cdef enum:
    SCRATCH_ROWS = 8

# Rows one ``KernelCache.prefetch`` computes at most (one dgemm reads X once for them).
cdef enum:
    PREFETCH_MAX = 64

# Once every slot is used, a prefetch takes at most capacity / PREFETCH_EVICT_SHARE of
# them, and first PREFETCH_EVICT_START (then as many as its rows are used, see _judge_ahead).
cdef enum:
    PREFETCH_EVICT_SHARE = 8
    PREFETCH_EVICT_START = 16

cdef enum:
    BY_SLOT = 0
    BY_INDEX = 1


# Recency order of the entries 0 .. n − 1 of a cache: a doubly linked list over
# caller-owned prev/next arrays, head = most recently used, tail = least.
cdef struct Lru:
    Py_ssize_t* prev
    Py_ssize_t* next
    Py_ssize_t head
    Py_ssize_t tail


cdef inline void lru_unlink(Lru* lru, Py_ssize_t e) noexcept nogil:
    cdef Py_ssize_t p = lru.prev[e], n = lru.next[e]
    if p >= 0:
        lru.next[p] = n
    else:
        lru.head = n
    if n >= 0:
        lru.prev[n] = p
    else:
        lru.tail = p


cdef inline void lru_push_front(Lru* lru, Py_ssize_t e) noexcept nogil:
    """Link an unlinked entry at the head."""
    lru.prev[e] = -1
    lru.next[e] = lru.head
    if lru.head >= 0:
        lru.prev[lru.head] = e
    lru.head = e
    if lru.tail < 0:
        lru.tail = e


cdef inline void lru_touch(Lru* lru, Py_ssize_t e) noexcept nogil:
    """Make a linked entry the most recently used."""
    if e != lru.head:
        lru_unlink(lru, e)
        lru_push_front(lru, e)


cdef class KernelCache:
    # Public, read-only from Python.
    cdef readonly Py_ssize_t n_samples
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t capacity
    cdef readonly int kernel_code
    cdef readonly double gamma
    cdef readonly double degree
    cdef readonly double coef0
    cdef readonly double offset           # added to every entry (rows of k + offset)
    cdef readonly long long n_kernel_evaluations
    cdef readonly long long n_hits
    cdef readonly long long n_misses
    cdef readonly long long n_prefetched  # rows computed ahead of a request (prefetch)
    cdef readonly long long n_prefetch_unused  # of those, evicted before any request
    cdef readonly bint float32            # rows stored as float32 (twice the capacity)
    cdef public int n_threads             # OpenMP threads for computing a row
    cdef Py_ssize_t _block                # entries of a row per block (row_block, from m only)

    # Training data (exactly one of the three representations is used).
    cdef bint _sparse
    cdef bint _sparse_blocks              # sparse rows computed in blocks (see _blockwise)
    cdef bint _precomputed
    cdef const double[:, ::1] _X          # dense (m, d), or (m, m) Gram if precomputed
    cdef const double[::1] _data          # CSR data
    cdef const int[::1] _indices          # CSR column indices (as C int)
    cdef const Py_ssize_t[::1] _indptr    # CSR row pointers (converted to intp)
    cdef const Py_ssize_t[::1] _nnz       # non-zeros of each row
    cdef KernelSpec _spec                 # the kernel, and X as a row source (msvm._core._kernel)
    cdef RowSource _rows
    cdef object _owner                    # keeps the (converted) input alive

    # Per-sample precomputations (length m) and sparse scatter buffer (length d).
    cdef double* _sqnorm                  # ||x_i||_2^2
    cdef double* _l1norm                  # ||x_i||_1 (sparse laplace only)
    cdef double* _diag                    # k(x_i, x_i)
    cdef double* _work                    # dense copy of x_i (sparse only)

    # Row storage and LRU bookkeeping.
    cdef double* _buffer                  # capacity * m doubles, slot s at _buffer + s*m
    cdef float* _fbuffer                  # the same in float32 (float32=True; _buffer unused)
    cdef double* _scratch                 # float32 mode: SCRATCH_ROWS rows handed out in turn
    cdef int _turn                        # which scratch row the next request uses
    cdef Py_ssize_t* _slot_of_row         # m entries, -1 when row absent
    cdef Py_ssize_t* _row_of_slot         # capacity entries
    cdef Lru _lru                         # recency order of the slots
    cdef Py_ssize_t _n_used               # slots handed out so far
    cdef Py_ssize_t _filled               # rows complete by fill() (slot = row), from row 0
    cdef double* _block_rows              # PREFETCH_MAX rows: a prefetch that evicts (lazily)
    cdef char* _ahead                     # slot holds an evicting prefetch's row not yet requested
    cdef Py_ssize_t _ahead_rows           # rows of the next evicting prefetch at most
    cdef long long _ahead_used, _ahead_lost   # its rows requested / evicted unused, lately

    # C API.
    cdef const double* row_ptr(self, Py_ssize_t i) noexcept nogil
    cdef double diag(self, Py_ssize_t i) noexcept nogil
    cdef bint cached(self, Py_ssize_t i) noexcept nogil
    cdef bint keeps_rows(self) noexcept nogil
    cdef bint has_room(self) noexcept nogil
    cdef bint can_prefetch(self) noexcept nogil
    cdef Py_ssize_t prefetch(self, const Py_ssize_t* rows, Py_ssize_t n) noexcept nogil
    cdef Py_ssize_t rows_used(self) noexcept nogil
    cdef Py_ssize_t complete_all(self) noexcept nogil

    # Internals.
    cdef _free_all(self)
    cdef void _precompute_norms(self) noexcept nogil
    cdef Py_ssize_t _check_index(self, i) except -1
    cdef void _compute_row(self, Py_ssize_t i, double* out) noexcept nogil
    cdef void _store_row(self, Py_ssize_t slot, double* row) noexcept nogil
    cdef void _compute_block(self, Py_ssize_t i, double* out, Py_ssize_t j0,
                             Py_ssize_t j1) noexcept nogil
    cdef Py_ssize_t _take_slot(self, Py_ssize_t i) noexcept nogil
    cdef void _gram_block(self, const double* G, const double* gsq, Py_ssize_t n,
                          double* out, Py_ssize_t j_first, Py_ssize_t b) noexcept nogil
    cdef bint _fillable(self) noexcept nogil
    cdef bint _blockwise(self) noexcept nogil
    cdef Py_ssize_t _prefetch_room(self) noexcept nogil
    cdef void _judge_ahead(self) noexcept nogil
    cdef void _fill_rows(self, Py_ssize_t i0, Py_ssize_t i1) noexcept nogil
    cdef void _mirror(self, Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t b) noexcept nogil


cdef class SlotRowCache:
    # Records r: rows[r] holds length[r] valid entries in room[r] allocated ones,
    # keyed by (kind[r], key[r]); free records are chained through the Lru's next.
    cdef double** rows
    cdef Py_ssize_t* length
    cdef Py_ssize_t* room
    cdef int* kind
    cdef Py_ssize_t* key
    cdef Lru lru
    cdef Py_ssize_t n_records, free_head, pin1, pin2
    cdef Py_ssize_t* of_slot              # record of slot s, or -1 (n_slots entries)
    cdef Py_ssize_t n_slots
    cdef Py_ssize_t* of_index             # record of training pattern g, or -1
    cdef Py_ssize_t n_index
    cdef readonly Py_ssize_t n_rows
    cdef readonly long long used_bytes, budget, peak_bytes
    cdef public long long n_hits, n_misses

    cdef Py_ssize_t record(self, int kind, Py_ssize_t key) noexcept nogil
    cdef Py_ssize_t find_or_add(self, int kind, Py_ssize_t key) noexcept nogil
    cdef double* reserve(self, Py_ssize_t r, Py_ssize_t n) noexcept nogil
    cdef bint reserve_slots(self, Py_ssize_t n) noexcept nogil
    cdef void rekey(self, Py_ssize_t r, int kind, Py_ssize_t key) noexcept nogil
    cdef void pin(self, Py_ssize_t r) noexcept nogil
    cdef void drop(self, Py_ssize_t r) noexcept nogil
    cdef void evict(self) noexcept nogil
    cdef bint _reserve_records(self, Py_ssize_t n) noexcept nogil
    cdef Py_ssize_t* _map(self, int kind, Py_ssize_t key) noexcept nogil
