"""Online LaRank-style solver of the unified bias-free dual (seed 004, ch. 4-5).

The problem is S2DO's (see :mod:`msvm._core._s2do`): minimise

    J(α) = ½ Σ H[(i,p),(j,q)] α_ip α_jq − Σ γ_{y_i,p} α_ip,
    H[(i,p),(j,q)] = M(y_i,p ; y_j,q) · k'(x_i, x_j),   M = Σ_c ν̄_{y_i,p,c} ν̄_{y_j,q,c},
    α_ip ≥ 0,  Σ_{p in slack group r of i} α_ip ≤ C  (no upper bound for the M-SVM²),

but the patterns are fed one at a time, and only the *support patterns*
(patterns with some α_ip ≠ 0, seed 004 §4.2) are remembered.

State (one row per support pattern, in compact *slots* 0 .. n_sp − 1)
---------------------------------------------------------------------
* ``A`` (P), the α row; ``GS`` (R), its slack-group sums;
* ``G`` (P), the gradient ∂J/∂α_ip, stored and updated for support
  patterns only (§4.2.3): after a step of μ1 on (i,p) and μ2 on (j,q),
  ``G[e,s] += M(y_e,s ; y_i,p) μ1 k'(x_e,x_i) + M(y_e,s ; y_j,q) μ2 k'(x_e,x_j)``
  for every slot e and slot s: O(n_sp · P) per step, two kernel rows;
* ``B`` (Q), the centred coefficients β̄_ic = Σ_p ν̄_{y_i,p,c} α_ip, updated
  in O(Q) per step.  A *new* pattern's gradient is then one product with its
  kernel row over the support patterns, g_p = ν̄_{y,p} · (Σ_s k(x, x_s) B_s) −
  γ_{y,p}, O(n_sp · Q) (its own α is zero);
* per slot, the pattern's largest KKT violation and the variable(s)
  realising it, over all its variables (``viol``, best single ``bs``, best
  pair ``pp``/``pq``) and over its support vectors only (``vsv``, ``bssv``,
  ``ppsv``/``pqsv``), refreshed in the same pass as G (O(P) per slot).
  Violations are S2DO's, in gradient units: −g if α may grow, g if α > 0,
  g_p − g_q for moving mass from p (α_p > 0) to q inside a shared slack;
* the pattern's features (dense rows, or a CSR pool for sparse input), its
  label, its global index ``gid`` and k(x, x).

Steps (§4.2.1, §5.2.1; Algorithms 6, 8-10)
------------------------------------------
* TWO_NEWS: the next pattern of the stream is put *tentatively* in the last
  slot (features copied, kernel row over the support patterns computed, its
  gradient from B), and two of its own variables are optimised: the first is
  its most violating variable (or, when its best move is a pair of one slack
  group, that pair), the second the best-gain partner among its own
  variables.  If its α row is still zero it leaves again (in a ``fit`` the
  kernel row stays cached under its index; in a stream it is forgotten);
  otherwise it becomes a support pattern, and its kernel row -- already
  computed -- also extends every complete cached row by one entry, without
  kernel evaluations.  A pattern whose largest violation is ≤ tol is not
  stepped on.
* TWO_OLD: two variables of the support patterns, any of their variables.
* TWO_OLD_SUPPORTS: the same restricted to support vectors (α_ip > 0).
The working set of an old step follows the strategy (§4.2.2):
  ``S2DO_ALL``: the first variable is the most violating over all support
  patterns, the second the best gain among every pattern's best single
  violator and all the first pattern's own variables (S2DO's rule);
  ``RANDOM_PATTERN_S2DO_ALL``: the first pattern is drawn at random, its most
  violating variable is the first, the second as in S2DO_ALL;
  ``RANDOM_PATTERN_S2DO_PATTERN``: both variables inside the random pattern.
A pattern whose best move is a pair of one slack group at capacity (CS) gets
that pair (§5.2.1).  Each pair is optimised exactly over its box or triangle
by S2DO's ``_solve_2d`` (Algorithms 5 and 11), shared through
:mod:`msvm._core._steps`, and the second variable is chosen by S2DO's
``_gain`` (Algorithm 4).  After a step a pattern whose α row became zero is
removed: the last slot moves into its place.

Block steps and lazy refresh (fast path, as S2DO; ``block_steps``, ``lazy``).
A step's pass over the support patterns costs O(n_sp); the steps inside the
one or two patterns it touched cost O(P), since their rows of F are kept exact
with the few kernel values among them.  So after the first 2-D step the
solver goes on inside that *block* (first variable by violation, second by
gain among the block's variables) until the block's largest violation is
below a tenth of the first variable's (as S2DO, :mod:`msvm._core._steps`),
then one pass brings every other pattern up to date with the block's summed
β deltas.
In that pass a pattern whose violation, raised by the most the block can have
moved it, stays well below the leader's is left *cold* (its violation becomes
that upper bound; its extremes wait for a rescan), under the shared control
of :mod:`msvm._core._steps` that pauses cold visits while they do not pay.
The first variable (``_argmax`` rescans stale leaders) and the stopping test
stay exact.  With both off, one step per pass as seed 004 describes.

Scheduling (§4.2.4, Algorithm 7)
--------------------------------
For each pattern of the stream: one TWO_NEWS, then atomic steps drawn at
random until TWO_NEWS is drawn again.  An atomic step of type t runs
``mult[t]`` steps (1 for TWO_NEWS, Q for the two old types; a step with its
block steps counts as one), after which
its rate is updated, ``rate[t] ← β · Δdual / Δwork + (1 − β) · rate[t]``
(β = 0.05, rates start at 1); a type is drawn with probability proportional
to its rate, every rate first raised to at least η = 0.05 of their sum (as
LaRank).  Δdual is the exact decrease of J over the atomic step.  Δwork is
a deterministic count of the work done, not wall-clock time, so that a run
is reproducible from its seed: ``kcost`` units per kernel evaluation
(≈ the features of a dot product), one per gradient entry updated, a few
per gain evaluated; ``kcost`` is set by the Python layer.

Kernel rows
-----------
Rows are over the support-pattern slots (length n_sp, not m), kept in the
:class:`~msvm._core._kernel_cache.SlotRowCache` (variable-length rows, LRU
within ``budget`` bytes, the two rows last used never evicted, so two row
pointers are valid together).  A row is keyed by the slot of its pattern or,
in a ``fit``, by the training index of a pattern that left the slots (so a
later epoch reuses it).  What is online about the rows stays here: a row
shorter than n_sp is completed on demand (only the missing entries are
evaluated, by :mod:`msvm._core._kernel`); when slot t is removed (the last
slot L moves into it) every cached row follows, entry t ← entry L, length
clipped, and a short row of a support pattern gets the one missing entry
computed instead of losing its tail (``_follow_move``).  Dense rows of the
next PREFETCH stream patterns are computed together (one dgemm reading the
support patterns' features once, ``dense_block``) into a buffer beside the
cache that follows the slots the same way (``_prefetch``).  Kernel
evaluations are counted one per entry computed (none for a precomputed Gram
matrix).

Memory
------
Per support pattern: (3P + Q + R + 12) doubles, its features (d doubles, or
its non-zeros) and at most one cached row; plus the cache budget (which the
two pinned rows may exceed by one row each), the prefetch buffer (PREFETCH
rows) and one batch of input held by the caller.  Nothing is kept about
patterns that are not support patterns, except, in a ``fit``, their cached
rows (inside the budget) and one int per training pattern (its slot).

All loops run without the GIL on raw buffers; arrays grow by realloc.
"""

cimport cython
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, memset
from scipy.linalg.cython_blas cimport dgemv

from msvm._core._kernel cimport (
    LAPLACE,
    KernelSpec,
    RowSource,
    dense_block,
    dense_rows,
    kernel_values,
    sparse_rows,
)
from msvm._core._kernel_cache cimport BY_INDEX, BY_SLOT, SlotRowCache
from msvm._core._steps cimport (
    LazyControl,
    BLOCK_STEPS,
    LAZY_WINDOW_ONLINE,
    NuTables,
    _add_slot,
    _block_fraction,
    _cold_below,
    _coupling_row,
    _extremes,
    _gain,
    _lazy_enable,
    _lazy_tick,
    _now,
    _nu_dot,
    _nu_tables,
    _sigma_of,
    _solve_2d,
    _track_max,
    _track_min,
    mask_t,
)

import numpy as np

__all__ = ["OnlineState", "STEP_NAMES", "STRATEGIES"]

# Data layouts.
cdef enum:
    DENSE = 0
    SPARSE = 1
    GRAM = 2

# Step types and strategies.
cdef enum:
    TWO_NEWS = 0
    TWO_OLD = 1
    TWO_OLD_SUPPORTS = 2
    N_STEP_TYPES = 3

cdef enum:
    S2DO_ALL = 0
    RP_S2DO_ALL = 1
    RP_S2DO_PATTERN = 2

# Return codes of run_pass() / finish().
cdef enum:
    DONE = 0
    MAX_STEPS = 1
    TIME_UP = 2
    NO_MEMORY = 3

# Prefetch (see OnlineState._prefetch): rows of up to PREFETCH upcoming stream
# patterns in one dgemm, once there are PREFETCH_MIN support patterns.
cdef enum:
    PREFETCH = 16
    PREFETCH_MIN = 64

#: Names of the step types, in the order of the counters.
STEP_NAMES = ("two_news", "two_old", "two_old_supports")
#: Strategy name -> code.
STRATEGIES = {"s2do_all": 0, "random_pattern_s2do_all": 1, "random_pattern_s2do_pattern": 2}


cdef inline void _keep_best(double gain, Py_ssize_t e, Py_ssize_t s, double* best, Py_ssize_t* k,
                            Py_ssize_t* q) noexcept nogil:
    """Keep (e, s) as the second variable when its gain beats ``best``."""
    if gain > best[0]:
        best[0] = gain
        k[0] = e
        q[0] = s


cdef inline void* _grow(void* p, size_t n) noexcept nogil:
    return realloc(p, n if n > 0 else 1)


cdef struct Ext:
    # Fast path, per support pattern: σ_e = u_y·F_e − κ_y S_e (g_es = σ_e + h_es,
    # h_es = −F_es − γ_ys) and the cached extremes of h with their slots: min over
    # the slots that may grow (up), max over α > 0 (dn), min over all (all), min over
    # α > 0 that may grow (upsv), min over α > 0 (allsv); stale: some extreme is a bound.
    double sig
    double hup
    double hdn
    double hall
    double hupsv
    double hallsv
    int aup
    int adn
    int aall
    int aupsv
    int aallsv
    int stale
    int cold      # the extremes missed some changed slots: only a rescan makes it exact


@cython.final
cdef class OnlineState:
    """Working state of the online solver (built by :mod:`msvm.solvers.online`).

    Parameters
    ----------
    layout : int
        0 dense features, 1 CSR features, 2 precomputed Gram matrix.
    n_features : int
        d (ignored for a Gram matrix).
    kernel_code, gamma, degree, coef0 : kernel (codes of :mod:`msvm.kernels`).
    gram : float64 (m, m) or None
        The Gram matrix (layout 2).
    n_gid : int
        Number of training patterns of a ``fit`` (enables the per-pattern
        slot map and the caching of rows of non-support patterns), 0 for a
        stream.
    M, Mdiag, gamma_t, active, slack, group_size : the machine tables
        (M (QP, QP) or None: its rows computed from ν's non-zeros, Mdiag (Q, P),
        γ (Q, P), active (Q, P) uint8, slack (Q, P) int32, group sizes (Q, R)
        int32).
    nz_count, nz_col, nz_val, nu_mean, nu_col_start, nu_col_row, nu_col_val : ν's
        non-zeros by row and by column
        (:class:`msvm.solvers._common.MachineTables`).
    C, shift, tol : float
        Capacity (inf for the M-SVM²), diagonal shift of k', KKT tolerance, for
        an example of weight 1; a pattern of weight w (``set_batch``) has the
        capacity C·w and the shift shift/w (:mod:`msvm.problem`).
    strategy : int
        0 S2DO_ALL, 1 RANDOM_PATTERN_S2DO_ALL, 2 RANDOM_PATTERN_S2DO_PATTERN.
    budget_mb : float
        Kernel-row cache budget.
    seed : int
        Seed of the step-type draws and random patterns (non-zero).
    kcost : float
        Work units per kernel evaluation (scheduling only).
    beta, eta : float
        Decay of the step rates and minimum share of a step type.
    """

    # ---- problem
    cdef Py_ssize_t Q, P, R, QP, d
    cdef int layout, kcode
    cdef double kgamma, kdegree, kcoef0
    cdef double C, shift, eps_zero, eps_cap
    cdef public double tol
    cdef public int strategy
    cdef bint max_loss
    cdef const double[:, ::1] M     # the (QP)² coupling table, or None (has_M false)
    cdef const double[:, ::1] Mdiag
    # ν's uncentred non-zeros and means (nu_tables, pointing into nu_keep): β's rows,
    # a new pattern's gradient from its scores and, without the table, two computed
    # rows of M (_mrow) and the row each holds (−1: none).
    cdef bint has_M
    cdef double[:, ::1] mrows
    cdef Py_ssize_t mrow_of[2]
    cdef NuTables nu_tables
    cdef tuple nu_keep
    cdef const double[:, ::1] gam
    cdef const unsigned char[:, ::1] act
    cdef const int[:, ::1] slk
    cdef const int[:, ::1] gsize
    cdef const double[:, ::1] gram
    cdef const int* pslk     # flat views of slk (Q·P)
    cdef int* nact           # active slots of each class: nact[y], alist[y·P + k]
    cdef int* alist
    cdef bint centred

    # ---- fast path (ν_{y,s,·} = u_y − e_s, slot s <-> class s: WW, CS, LLW, M-SVM²)
    cdef readonly bint fast
    cdef int* ucnt           # Q: non-zeros of u_y
    cdef Py_ssize_t uw       # the most non-zeros of any u_y
    cdef int* ucol           # Q·uw
    cdef double* uval        # Q·uw
    cdef double* kap         # Q: mean_c u_y,c − 1/Q when sum-to-zero, else 0
    cdef Py_ssize_t n_words  # ⌈P/64⌉: words of a slot mask
    cdef mask_t* masks       # 3·n_words: _rescan's active, may-increase and α > 0 masks
    cdef double* F           # cap·Q uncentred scores K'β
    cdef double* S           # cap: Σ_c F (sum-to-zero machines)
    cdef Ext* ext            # cap: σ and the cached extremes of h, one struct per slot
    # step scratch: changed columns of β and their deltas in rows i and k
    # The block of the current step (see _step): its two patterns (blk1 = -1: one),
    # blk0's kernel row, and its β deltas per changed column (pcol, pw0/pw1, dS0/dS1).
    cdef Py_ssize_t blk0, blk1
    cdef const double* brow
    cdef int* pcol
    cdef double* pw0
    cdef double* pw1
    cdef int ncol
    cdef double dS0, dS1
    # Rows of the next stream patterns (see _prefetch): pf_n rows of stride pf_ld in
    # pf_out, over the slots 0 .. pf_len[j] − 1, for the batch positions pf_pos[j]
    # (-1 once taken); pf_q holds their features for the product.
    cdef Py_ssize_t* pf_pos
    cdef Py_ssize_t* pf_len
    cdef double* pf_q
    cdef double* pf_out
    cdef Py_ssize_t pf_cap, pf_n, pf_ld
    # Lazy refresh (see _fast_pass): the last first variable's violation, the control,
    # cold visits and rescans of cold patterns.
    cdef double vlead
    cdef LazyControl lazy
    cdef readonly long long n_cold, n_cold_rescans
    # The last 2-D move (the generic path's pass reads it).
    cdef Py_ssize_t mi, mp, mk, mq
    cdef double md1, md2
    cdef public bint block_steps

    # ---- support patterns (slots 0 .. n_sp-1, capacity cap)
    cdef readonly Py_ssize_t n_sp
    cdef Py_ssize_t cap
    cdef double* A
    cdef double* G
    cdef double* B
    cdef double* GS
    cdef Py_ssize_t* gid
    cdef int* lab
    cdef double* kd
    cdef double* wt     # weight of each support pattern (capacity C·wt, shift shift/wt)
    cdef double* sq
    cdef double* l1
    cdef double* viol
    cdef double* vsv
    cdef int* bs
    cdef int* pp
    cdef int* pq
    cdef int* bssv
    cdef int* ppsv
    cdef int* pqsv
    # features: dense rows, or CSR pool
    cdef double* Xs
    cdef Py_ssize_t* st
    cdef Py_ssize_t* nz
    cdef double* pval
    cdef int* pidx
    cdef Py_ssize_t pool_cap, pool_used, pool_live
    cdef double* work        # dense scatter of a sparse query (d)

    # ---- fit mode: slot of every training pattern
    cdef Py_ssize_t n_gid
    cdef Py_ssize_t* gid_slot

    # ---- kernel rows over the slots (keyed by slot, or by training index in a fit)
    cdef readonly SlotRowCache rows

    # ---- current batch (set by set_batch)
    cdef const double[:, ::1] bX
    cdef const double[::1] bdata
    cdef const int[::1] bindices
    cdef const Py_ssize_t[::1] bindptr
    cdef const double[::1] bsq
    cdef const double[::1] bl1
    cdef const double[::1] bkd
    cdef const double[::1] bwt
    cdef const Py_ssize_t[::1] by
    cdef const Py_ssize_t[::1] bgid
    cdef const Py_ssize_t[::1] order
    cdef readonly Py_ssize_t pos
    cdef Py_ssize_t n_order

    # ---- scheduling, randomness, counters
    cdef unsigned long long rng
    cdef double rate[3]
    cdef int mult[3]
    cdef public double beta, eta, kcost
    cdef readonly double work_units
    cdef readonly double J
    cdef readonly long long n_steps
    cdef readonly long long n_kernel_evaluations
    cdef readonly long long pass_steps
    cdef long long nstep_type[3]
    cdef long long natomic_type[3]
    cdef double time_type[3]      # wall-clock seconds spent in each step type (diagnostics)
    cdef double work_type[3]      # work units charged to each step type
    cdef readonly long long n_inserted, n_removed, n_new_skipped, n_finish_steps
    cdef readonly bint oom
    cdef double* Fq         # Q scratch

    # Cython starts every C attribute at 0/NULL, so __dealloc__ may free whatever
    # __init__ reached (free(NULL) is a no-op).
    def __dealloc__(self):
        free(self.A)
        free(self.G)
        free(self.B)
        free(self.GS)
        free(self.gid)
        free(self.lab)
        free(self.kd)
        free(self.wt)
        free(self.sq)
        free(self.l1)
        free(self.viol)
        free(self.vsv)
        free(self.bs)
        free(self.pp)
        free(self.pq)
        free(self.bssv)
        free(self.ppsv)
        free(self.pqsv)
        free(self.Xs)
        free(self.st)
        free(self.nz)
        free(self.pval)
        free(self.pidx)
        free(self.work)
        free(self.gid_slot)
        free(self.Fq)
        free(self.nact)
        free(self.alist)
        free(self.ucnt)
        free(self.ucol)
        free(self.uval)
        free(self.kap)
        free(self.masks)
        free(self.F)
        free(self.S)
        free(self.ext)
        free(self.pcol)
        free(self.pw0)
        free(self.pw1)
        free(self.pf_pos)
        free(self.pf_len)
        free(self.pf_q)
        free(self.pf_out)

    def __init__(self, int layout, Py_ssize_t n_features, int kernel_code, double gamma,
                 double degree, double coef0, gram, Py_ssize_t n_gid, M, Mdiag, gamma_t, active,
                 slack, group_size, nz_count, nz_col, nz_val, nu_mean, nu_col_start,
                 nu_col_row, nu_col_val, double C,
                 double shift, double tol, int strategy, double budget_mb,
                 unsigned long long seed, double kcost=1.0, double beta=0.05, double eta=0.05,
                 fast=None, bint centred=False):
        cdef Py_ssize_t g, k, c
        if layout not in (DENSE, SPARSE, GRAM):
            raise ValueError(f"Unknown data layout {layout}.")
        if strategy not in (S2DO_ALL, RP_S2DO_ALL, RP_S2DO_PATTERN):
            raise ValueError(f"Unknown strategy code {strategy}.")
        if not budget_mb > 0:
            raise ValueError(f"budget_mb must be positive, got {budget_mb!r}.")
        self.layout = layout
        self.d = n_features if layout != GRAM else 0
        self.kcode = kernel_code
        self.kgamma = gamma
        self.kdegree = degree
        self.kcoef0 = coef0
        if layout == GRAM:
            self.gram = gram
        self.nu_keep = _nu_tables(&self.nu_tables, gamma_t.shape[0], gamma_t.shape[1],
                                  nz_count, nz_col, nz_val, nu_mean, nu_col_start,
                                  nu_col_row, nu_col_val)
        self.has_M = M is not None
        if self.has_M:
            self.M = M
        else:
            self.mrows = np.zeros((2, gamma_t.shape[0] * gamma_t.shape[1]))
            self.mrow_of[0] = self.mrow_of[1] = -1
        self.Mdiag = Mdiag
        self.gam = gamma_t
        self.act = active
        self.slk = slack
        self.gsize = group_size
        self.Q = gamma_t.shape[0]
        self.P = gamma_t.shape[1]
        self.QP = self.Q * self.P
        self.R = max(int(group_size.shape[1]), 1)
        self.max_loss = bool(np.any(np.asarray(group_size) > 1))
        self.C = C
        self.shift = shift
        self.tol = tol
        self.strategy = strategy
        self.eps_zero = 1e-14 * (C if C < INFINITY else 1.0)
        self.eps_cap = 1e-12 * C
        self.rng = seed if seed != 0 else 0x9E3779B97F4A7C15ULL
        self.kcost = kcost
        self.beta = beta
        self.eta = eta
        for g in range(N_STEP_TYPES):
            self.rate[g] = 1.0
            self.mult[g] = 1 if g == TWO_NEWS else <int> self.Q
            self.nstep_type[g] = 0
            self.natomic_type[g] = 0
            self.time_type[g] = 0.0
            self.work_type[g] = 0.0
        self.n_gid = n_gid
        self.rows = SlotRowCache(budget_mb, n_gid)
        self.Fq = <double*> malloc(self.Q * sizeof(double))
        self.nact = <int*> malloc(self.Q * sizeof(int))
        self.alist = <int*> malloc(self.QP * sizeof(int))
        if self.Fq == NULL or self.nact == NULL or self.alist == NULL:
            raise MemoryError()
        self.pslk = &self.slk[0, 0]
        for g in range(self.Q):
            self.nact[g] = 0
            for k in range(self.P):
                if self.act[g, k]:
                    self.alist[g * self.P + self.nact[g]] = <int> k
                    self.nact[g] += 1
        if n_gid > 0:
            self.gid_slot = <Py_ssize_t*> malloc(n_gid * sizeof(Py_ssize_t))
            if self.gid_slot == NULL:
                raise MemoryError()
            for g in range(n_gid):
                self.gid_slot[g] = -1
        self.centred = centred
        self.pcol = <int*> malloc(2 * self.Q * sizeof(int))
        self.pw0 = <double*> malloc(2 * self.Q * sizeof(double))
        self.pw1 = <double*> malloc(2 * self.Q * sizeof(double))
        self.pf_pos = <Py_ssize_t*> malloc(PREFETCH * sizeof(Py_ssize_t))
        self.pf_len = <Py_ssize_t*> malloc(PREFETCH * sizeof(Py_ssize_t))
        self.pf_q = <double*> malloc(PREFETCH * max(self.d, 1) * sizeof(double))
        self.pf_cap = 0
        self.pf_n = 0
        if (self.pcol == NULL or self.pw0 == NULL or self.pw1 == NULL
                or self.pf_pos == NULL or self.pf_len == NULL or self.pf_q == NULL):
            raise MemoryError()
        self.fast = fast is not None
        self.block_steps = self.fast
        _lazy_enable(&self.lazy, self.fast, LAZY_WINDOW_ONLINE)
        if self.fast:
            if self.P != self.Q:
                raise ValueError("The fast path needs one slot per class.")
            self.ucnt = <int*> malloc(self.Q * sizeof(int))
            self.uw = fast["u_col"].shape[1]
            self.ucol = <int*> malloc(self.Q * self.uw * sizeof(int))
            self.uval = <double*> malloc(self.Q * self.uw * sizeof(double))
            self.kap = <double*> malloc(self.Q * sizeof(double))
            self.n_words = (self.P + 63) // 64
            self.masks = <mask_t*> malloc(3 * self.n_words * sizeof(mask_t))
            if self.ucnt == NULL or self.ucol == NULL or self.uval == NULL or self.kap == NULL \
                    or self.masks == NULL:
                raise MemoryError()
            ucnt_a = np.ascontiguousarray(fast["u_cnt"], dtype=np.int32).ravel()
            ucol_a = np.ascontiguousarray(fast["u_col"], dtype=np.int32).ravel()
            uval_a = np.ascontiguousarray(fast["u_val"], dtype=np.float64).ravel()
            kap_a = np.ascontiguousarray(fast["kappa"], dtype=np.float64).ravel()
            for g in range(self.Q):
                self.ucnt[g] = ucnt_a[g]
                self.kap[g] = kap_a[g]
                for c in range(self.uw):
                    self.ucol[g * self.uw + c] = ucol_a[g * self.uw + c]
                    self.uval[g * self.uw + c] = uval_a[g * self.uw + c]
        if layout == SPARSE:
            self.work = <double*> malloc(max(self.d, 1) * sizeof(double))
            if self.work == NULL:
                raise MemoryError()
            memset(self.work, 0, max(self.d, 1) * sizeof(double))
        if not self._reserve(16):
            raise MemoryError()

    # ================================================================ memory
    cdef bint _reserve(self, Py_ssize_t n) noexcept nogil:
        """Capacity for n support patterns (realloc of every per-slot array)."""
        cdef Py_ssize_t c
        cdef size_t P = self.P, Q = self.Q, R = self.R, d = self.d
        if n <= self.cap:
            return True
        c = self.cap * 2
        if c < n:
            c = n
        if c < 16:
            c = 16
        self.A = <double*> _grow(self.A, c * P * sizeof(double))
        self.B = <double*> _grow(self.B, c * Q * sizeof(double))
        if self.fast:
            self.F = <double*> _grow(self.F, c * Q * sizeof(double))
            self.S = <double*> _grow(self.S, c * sizeof(double))
            self.ext = <Ext*> _grow(self.ext, c * sizeof(Ext))
            if self.F == NULL or self.S == NULL or self.ext == NULL:
                self.oom = True
                return False
        else:
            self.G = <double*> _grow(self.G, c * P * sizeof(double))
            if self.G == NULL:
                self.oom = True
                return False
        self.GS = <double*> _grow(self.GS, c * R * sizeof(double))
        self.gid = <Py_ssize_t*> _grow(self.gid, c * sizeof(Py_ssize_t))
        self.lab = <int*> _grow(self.lab, c * sizeof(int))
        self.kd = <double*> _grow(self.kd, c * sizeof(double))
        self.wt = <double*> _grow(self.wt, c * sizeof(double))
        self.sq = <double*> _grow(self.sq, c * sizeof(double))
        self.l1 = <double*> _grow(self.l1, c * sizeof(double))
        self.viol = <double*> _grow(self.viol, c * sizeof(double))
        self.vsv = <double*> _grow(self.vsv, c * sizeof(double))
        self.bs = <int*> _grow(self.bs, c * sizeof(int))
        self.pp = <int*> _grow(self.pp, c * sizeof(int))
        self.pq = <int*> _grow(self.pq, c * sizeof(int))
        self.bssv = <int*> _grow(self.bssv, c * sizeof(int))
        self.ppsv = <int*> _grow(self.ppsv, c * sizeof(int))
        self.pqsv = <int*> _grow(self.pqsv, c * sizeof(int))
        if self.layout == DENSE:
            self.Xs = <double*> _grow(self.Xs, c * d * sizeof(double))
        elif self.layout == SPARSE:
            self.st = <Py_ssize_t*> _grow(self.st, c * sizeof(Py_ssize_t))
            self.nz = <Py_ssize_t*> _grow(self.nz, c * sizeof(Py_ssize_t))
        if (self.A == NULL or self.B == NULL or self.GS == NULL
                or self.gid == NULL or self.lab == NULL or self.kd == NULL or self.sq == NULL
                or self.wt == NULL
                or self.l1 == NULL or self.viol == NULL or self.vsv == NULL or self.bs == NULL
                or self.pp == NULL or self.pq == NULL or self.bssv == NULL or self.ppsv == NULL
                or self.pqsv == NULL or not self.rows.reserve_slots(c)
                or (self.layout == DENSE and d > 0 and self.Xs == NULL)
                or (self.layout == SPARSE and (self.st == NULL or self.nz == NULL))):
            self.oom = True
            return False
        self.cap = c
        return True

    cdef bint _reserve_pool(self, Py_ssize_t n) noexcept nogil:
        """Room for n more non-zeros in the CSR pool (compacting it first if half is holes)."""
        cdef Py_ssize_t c
        if self.pool_used + n <= self.pool_cap:
            return True
        if self.pool_live + n <= self.pool_cap and 2 * self.pool_live < self.pool_used:
            self._compact_pool()
            if self.pool_used + n <= self.pool_cap:
                return True
        c = self.pool_cap * 2
        if c < self.pool_used + n:
            c = self.pool_used + n
        if c < 1024:
            c = 1024
        self.pval = <double*> _grow(self.pval, c * sizeof(double))
        self.pidx = <int*> _grow(self.pidx, c * sizeof(int))
        if self.pval == NULL or self.pidx == NULL:
            self.oom = True
            return False
        self.pool_cap = c
        return True

    cdef void _compact_pool(self) noexcept nogil:
        """Move the live non-zeros to the front of the pool, slot order (slots start sorted)."""
        cdef Py_ssize_t s, t, k, u, n = self.n_sp, w = 0
        cdef Py_ssize_t* ordr = <Py_ssize_t*> malloc(max(n, 1) * sizeof(Py_ssize_t))
        if ordr == NULL:
            return
        # Insertion sort of the slots by their start (n is moderate and mostly sorted).
        for s in range(n):
            ordr[s] = s
        for s in range(1, n):
            u = ordr[s]
            t = s
            while t > 0 and self.st[ordr[t - 1]] > self.st[u]:
                ordr[t] = ordr[t - 1]
                t -= 1
            ordr[t] = u
        for t in range(n):
            s = ordr[t]
            if self.st[s] != w:
                memmove(self.pval + w, self.pval + self.st[s], self.nz[s] * sizeof(double))
                memmove(self.pidx + w, self.pidx + self.st[s], self.nz[s] * sizeof(int))
                self.st[s] = w
            w += self.nz[s]
        self.pool_used = w
        self.pool_live = w
        free(ordr)

    # ================================================================ RNG
    cdef inline unsigned long long _next(self) noexcept nogil:
        """xorshift64*."""
        cdef unsigned long long x = self.rng
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        self.rng = x
        return x * 2685821657736338717ULL

    cdef inline double _uniform(self) noexcept nogil:
        return <double> (self._next() >> 11) * (1.0 / 9007199254740992.0)

    cdef inline Py_ssize_t _randint(self, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t k = <Py_ssize_t> (self._uniform() * <double> n)
        return k if k < n else n - 1

    # ================================================================ kernel
    cdef void _kernel_fill(self, int qkind, Py_ssize_t q, double* out, Py_ssize_t a,
                           Py_ssize_t b) noexcept nogil:
        """out[s] = k(x_query, x_s) for the slots a <= s < b (by :mod:`msvm._core._kernel`).

        qkind 0: the query is slot q; 1: pattern q of the current batch.
        """
        cdef Py_ssize_t s, k, d = self.d, qg, p0 = 0, qnz = 0
        cdef KernelSpec spec = KernelSpec(self.kcode, self.kgamma, self.kdegree, self.kcoef0)
        cdef RowSource rows
        cdef const double* xq = self.work
        cdef const double* qval = NULL
        cdef const int* qidx = NULL
        if b <= a:
            return
        if self.layout == GRAM:
            qg = self.gid[q] if qkind == 0 else self.bgid[q]
            for s in range(a, b):
                out[s] = self.gram[qg, self.gid[s]]
            self.work_units += 2.0 * (b - a)
            return
        self.n_kernel_evaluations += b - a
        self.work_units += self.kcost * (b - a)
        if self.layout == DENSE:
            rows = dense_rows(self.Xs, d, self.sq)
            if d > 0:
                xq = self.Xs + q * d if qkind == 0 else &self.bX[q, 0]
        else:
            rows = sparse_rows(self.pval, self.pidx, self.st, self.nz, d, self.sq)
            if qkind == 0:
                qval = self.pval + self.st[q]
                qidx = self.pidx + self.st[q]
                qnz = self.nz[q]
            else:
                p0 = self.bindptr[q]
                qnz = self.bindptr[q + 1] - p0
                if qnz > 0:
                    qval = &self.bdata[p0]
                    qidx = &self.bindices[p0]
            for k in range(qnz):  # the query, scattered into the zeroed work vector
                self.work[qidx[k]] = qval[k]
        if qkind == 0:
            kernel_values(&spec, &rows, xq, self.sq[q], self.l1[q], out, a, b)
        else:
            kernel_values(&spec, &rows, xq, self.bsq[q], self.bl1[q], out, a, b)
        for k in range(qnz):
            self.work[qidx[k]] = 0.0

    cdef void _prefetch(self) noexcept nogil:
        """Rows of the next stream patterns over the support patterns, in one dgemm.

        A new pattern's row over the n_sp support patterns is one dgemv that
        reads all their features; the rows of the next PREFETCH patterns of
        the batch (dense features; in a fit, those without a slot or a cached
        row) share one read in a dgemm.  They wait in a buffer beside the
        cache, kept in slot order as patterns come and go (:meth:`_remove`);
        :meth:`_insert` takes a pattern's row from it and completes it.
        """
        cdef Py_ssize_t n = self.n_sp, d = self.d, u, b, g, nb = 0, c
        cdef KernelSpec spec = KernelSpec(self.kcode, self.kgamma, self.kdegree, self.kcoef0)
        cdef RowSource rows = dense_rows(self.Xs, d, self.sq)
        cdef double qsq[PREFETCH]
        cdef double* p
        self.pf_n = 0
        if self.layout != DENSE or self.kcode == LAPLACE or d == 0 or n < PREFETCH_MIN:
            return
        for u in range(self.pos, self.n_order):
            if nb == PREFETCH:
                break
            b = self.order[u]
            if self.n_gid > 0:
                g = self.bgid[b]
                if self.gid_slot[g] >= 0 or self.rows.record(BY_INDEX, g) >= 0:
                    continue
            self.pf_pos[nb] = b
            qsq[nb] = self.bsq[b]
            memcpy(self.pf_q + nb * d, &self.bX[b, 0], d * sizeof(double))
            nb += 1
        if nb < 2:
            return
        if self.pf_cap < n:
            c = n + n // 4 + 64
            p = <double*> _grow(self.pf_out, PREFETCH * c * sizeof(double))
            if p == NULL:
                return
            self.pf_out = p
            self.pf_cap = c
        dense_block(&spec, &rows, self.pf_q, qsq, nb, self.pf_out, n, 0, n)
        for u in range(nb):
            self.pf_len[u] = n
        self.pf_n = nb
        self.pf_ld = n
        self.n_kernel_evaluations += nb * n
        self.work_units += self.kcost * nb * n

    cdef Py_ssize_t _prefetched(self, Py_ssize_t b) noexcept nogil:
        """Index in the prefetch buffer of batch pattern b's row, or -1."""
        cdef Py_ssize_t j
        for j in range(self.pf_n):
            if self.pf_pos[j] == b:
                return j
        return -1

    cdef void _take_prefetched(self, Py_ssize_t j, Py_ssize_t t) noexcept nogil:
        """Buffered row j becomes the (short) cached row of the new slot t."""
        cdef Py_ssize_t r = self.rows.find_or_add(BY_SLOT, t)
        cdef double* row
        self.pf_pos[j] = -1
        if r < 0:
            return   # not fatal: _row computes the row
        row = self.rows.reserve(r, t + 1)
        if row == NULL:
            self.rows.drop(r)
            return
        memcpy(row, self.pf_out + j * self.pf_ld, self.pf_len[j] * sizeof(double))
        self.rows.length[r] = self.pf_len[j]

    # ================================================================ rows
    cdef double* _row(self, Py_ssize_t s) noexcept nogil:
        """Kernel row of slot s over the slots 0 .. n_sp-1 (raw k, no shift).

        The returned pointer and the one returned by the previous call stay
        valid until the next call.  NULL when out of memory.
        """
        cdef Py_ssize_t r = self.rows.find_or_add(BY_SLOT, s), n = self.n_sp, lo
        cdef double* row
        if r < 0:
            return NULL
        if self.rows.length[r] < n:
            self.rows.n_misses += 1
            row = self.rows.reserve(r, n)
            if row == NULL:
                return NULL
            lo = self.rows.length[r]
            if s >= lo:
                self._kernel_fill(0, s, row, lo, s)
                row[s] = self.kd[s]
                self._kernel_fill(0, s, row, s + 1, n)
            else:
                self._kernel_fill(0, s, row, lo, n)
            self.rows.length[r] = n
        else:
            self.rows.n_hits += 1
        self.rows.pin(r)
        self.rows.evict()
        return self.rows.rows[r]

    # ================================================================ slots
    cdef inline void _scan(self, Py_ssize_t e) noexcept nogil:
        """Largest violations of slot e (all variables / support vectors only).

        A variable's violation is max(−g if it may grow, g if α > 0); for a
        support vector (α > 0) both directions count, so its violation is the
        same number.  With a shared slack group (max-loss) the best pair too.
        """
        cdef Py_ssize_t y = self.lab[e], P = self.P
        cdef const int* al = self.alist + y * P
        cdef const int* sl = self.pslk + y * P
        cdef const double* Ge = self.G + e * P
        cdef const double* Ae = self.A + e * P
        cdef const double* GSe = self.GS + e * self.R
        cdef int na = self.nact[y], k, s, r
        cdef int isb = -1, issv = -1, adn = -1, amn = -1, amnsv = -1
        cdef double lim = (self.C - self.eps_cap) * self.wt[e], g, a, v, sb = 0.0, ssv = 0.0
        cdef double gdn = -INFINITY, gmn = INFINITY, gmnsv = INFINITY
        for k in range(na):
            s = al[k]
            g = Ge[s]
            a = Ae[s]
            r = sl[s]
            v = g if a > 0 else 0.0
            if (r < 0 or GSe[r] < lim) and -g > v:
                v = -g
            if v > sb:
                sb = v
                isb = s
            if a > 0 and v > ssv:
                ssv = v
                issv = s
            if self.max_loss and r >= 0 and self.gsize[y, r] > 1:
                # One shared slack group per class (checked by the Python layer).
                if a > 0 and g > gdn:
                    gdn = g
                    adn = s
                if g < gmn:
                    gmn = g
                    amn = s
                if a > 0 and g < gmnsv:
                    gmnsv = g
                    amnsv = s
        self.bs[e] = isb
        self.bssv[e] = issv
        self.pp[e] = -1
        self.pq[e] = -1
        self.ppsv[e] = -1
        self.pqsv[e] = -1
        self.viol[e] = sb
        self.vsv[e] = ssv
        if adn >= 0:
            if amn >= 0 and amn != adn and gdn - gmn > sb:
                self.viol[e] = gdn - gmn
                self.pp[e] = adn
                self.pq[e] = amn
            if amnsv >= 0 and amnsv != adn and gdn - gmnsv > ssv:
                self.vsv[e] = gdn - gmnsv
                self.ppsv[e] = adn
                self.pqsv[e] = amnsv

    # ---------------------------------------------------------- fast path
    cdef inline double _g(self, Py_ssize_t e, Py_ssize_t s) noexcept nogil:
        """∂J/∂α_es (exact in both paths: σ and F are never stale)."""
        if self.fast:
            return self.ext[e].sig - self.F[e * self.Q + s] - self.gam[self.lab[e], s]
        return self.G[e * self.P + s]

    cdef inline void _sigma(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t y = self.lab[e], Q = self.Q
        self.ext[e].sig = _sigma_of(self.F + e * Q, self.ucnt[y], self.ucol + y * self.uw,
                                    self.uval + y * self.uw,
                                    self.kap[y] * self.S[e] if self.centred else 0.0)

    cdef void _rescan(self, Py_ssize_t e) noexcept nogil:
        """σ and the exact extremes of h_e· = −F_e· − γ (fast path), then the violations.

        The extremes over all variables, then over the support vectors (α > 0)."""
        cdef Py_ssize_t y = self.lab[e], P = self.P
        cdef const int* al = self.alist + y * P
        cdef const int* sl = self.pslk + y * P
        cdef const double* Fe = self.F + e * self.Q
        cdef const double* Ae = self.A + e * P
        cdef const double* GSe = self.GS + e * self.R
        cdef const double* gm = &self.gam[y, 0]
        cdef Ext* x = &self.ext[e]
        cdef int k, s, r, adn
        cdef double hdn, lim = (self.C - self.eps_cap) * self.wt[e]
        cdef Py_ssize_t w, W = self.n_words
        cdef mask_t* act = self.masks
        cdef mask_t* up = act + W
        cdef mask_t* pos = up + W
        if x.cold:
            self.n_cold_rescans += 1
        self._sigma(e)
        for w in range(W):
            act[w] = 0
            up[w] = 0
            pos[w] = 0
        for k in range(self.nact[y]):
            s = al[k]
            _add_slot(act, s)
            r = sl[s]
            if r < 0 or GSe[r] < lim:
                _add_slot(up, s)
            if Ae[s] > 0:
                _add_slot(pos, s)
        _extremes(Fe, gm, P, act, up, pos, &x.hup, &x.aup, &x.hdn, &x.adn, &x.hall, &x.aall)
        for w in range(W):
            act[w] &= pos[w]
            up[w] &= pos[w]
        _extremes(Fe, gm, P, act, up, pos, &x.hupsv, &x.aupsv, &hdn, &adn, &x.hallsv,
                  &x.aallsv)
        x.stale = 0
        x.cold = 0
        self._fviol(e)

    cdef inline void _fviol(self, Py_ssize_t e) noexcept nogil:
        """Violations of e (all variables, support vectors only) from σ and the extremes.

        Upper bounds while e is stale.  The slots realising them are derived
        on demand by :meth:`_fbest`.
        """
        cdef Ext* x = &self.ext[e]
        cdef double sg = x.sig, vd = -INFINITY, v = 0.0, w
        if x.adn >= 0:
            vd = sg + x.hdn
            if vd > v:
                v = vd
        if x.aup >= 0:
            w = -sg - x.hup
            if w > v:
                v = w
        if self.max_loss and x.adn >= 0 and (x.aall != x.adn or x.stale):
            w = x.hdn - x.hall
            if w > v:
                v = w
        self.viol[e] = v
        v = vd if vd > 0 else 0.0
        if x.aupsv >= 0:
            w = -sg - x.hupsv
            if w > v:
                v = w
        if self.max_loss and x.adn >= 0 and x.aallsv >= 0 and (x.aallsv != x.adn or x.stale):
            w = x.hdn - x.hallsv
            if w > v:
                v = w
        self.vsv[e] = v

    cdef inline int _fsingle(self, Py_ssize_t e, bint sv) noexcept nogil:
        """Most violating single variable of e (fast path; from bounds if stale), or -1."""
        cdef Ext* x = &self.ext[e]
        cdef double vu = -INFINITY, vd = -INFINITY
        cdef int au = x.aupsv if sv else x.aup
        if au >= 0:
            vu = -x.sig - (x.hupsv if sv else x.hup)
        if x.adn >= 0:
            vd = x.sig + x.hdn
        if vu > 0 and vu >= vd:
            return au
        if vd > 0:
            return x.adn
        return -1

    cdef inline int _fbest(self, Py_ssize_t e, bint sv, int* q) noexcept nogil:
        """First slot of e's best move and, when it is a pair of the slack group, the second.

        S2DO's rule, on an exact (not stale) pattern: the pair (adn, aall) when
        its violation beats every single variable, else the most violating
        single variable; ``q`` is -1 for a single variable.
        """
        cdef Ext* x = &self.ext[e]
        cdef double vu = -INFINITY, vd = -INFINITY, v = 0.0
        cdef int au = x.aupsv if sv else x.aup, a2 = x.aallsv if sv else x.aall, p = -1
        if au >= 0:
            vu = -x.sig - (x.hupsv if sv else x.hup)
        if x.adn >= 0:
            vd = x.sig + x.hdn
        if vu > 0 and vu >= vd:
            p = au
            v = vu
        elif vd > 0:
            p = x.adn
            v = vd
        q[0] = -1
        if self.max_loss and x.adn >= 0 and a2 >= 0 and a2 != x.adn and \
                x.hdn - (x.hallsv if sv else x.hall) > v:
            q[0] = a2
            return x.adn
        return p

    cdef inline void _refresh(self, Py_ssize_t e) noexcept nogil:
        """Exact violations of e, whichever path."""
        if self.fast:
            self._rescan(e)
        else:
            self._scan(e)

    cdef inline void _exact(self, Py_ssize_t e) noexcept nogil:
        """Make the cached violations of e exact (fast path: rescan if stale)."""
        if self.fast and self.ext[e].stale:
            self._rescan(e)

    cdef Py_ssize_t _argmax(self, const double* v) noexcept nogil:
        """Slot of the largest violation > tol, or -1, in one pass.

        A stale value is an upper bound: it is made exact (rescanned) only
        when it would lead the running maximum, so the maximum found is exact.
        """
        cdef Py_ssize_t e, best_e = -1
        cdef double best = self.tol
        cdef bint fast = self.fast
        for e in range(self.n_sp):
            if v[e] > best:
                if fast and self.ext[e].stale:
                    self._rescan(e)
                    if not v[e] > best:
                        continue
                best = v[e]
                best_e = e
        self.work_units += self.n_sp
        return best_e

    cdef Py_ssize_t _insert(self, Py_ssize_t b) noexcept nogil:
        """Put pattern b of the batch in a new last slot: features, row, gradient.

        Returns the slot, or -1 when out of memory.
        """
        cdef Py_ssize_t t = self.n_sp, g = self.bgid[b], k, c, Q = self.Q, P = self.P, nnz
        cdef Py_ssize_t y = self.by[b], r
        cdef int one = 1, nq, nt
        cdef double alpha1 = 1.0, beta0 = 0.0, v, sq
        cdef char trans = b'N'
        cdef double* row
        if not self._reserve(t + 1):
            return -1
        if self.layout == DENSE and self.d > 0:
            memcpy(self.Xs + t * self.d, &self.bX[b, 0], self.d * sizeof(double))
        elif self.layout == SPARSE:
            nnz = self.bindptr[b + 1] - self.bindptr[b]
            if not self._reserve_pool(nnz):
                return -1
            self.st[t] = self.pool_used
            self.nz[t] = nnz
            if nnz > 0:
                memcpy(self.pval + self.pool_used, &self.bdata[self.bindptr[b]],
                       nnz * sizeof(double))
                memcpy(self.pidx + self.pool_used, &self.bindices[self.bindptr[b]],
                       nnz * sizeof(int))
            self.pool_used += nnz
            self.pool_live += nnz
        self.gid[t] = g
        self.lab[t] = <int> y
        self.kd[t] = self.bkd[b]
        self.wt[t] = self.bwt[b]
        self.sq[t] = self.bsq[b]
        self.l1[t] = self.bl1[b]
        memset(self.A + t * P, 0, P * sizeof(double))
        memset(self.B + t * Q, 0, Q * sizeof(double))
        memset(self.GS + t * self.R, 0, self.R * sizeof(double))
        if self.n_gid > 0:
            self.gid_slot[g] = t
            r = self.rows.record(BY_INDEX, g)
            if r >= 0:
                # Its row from an earlier epoch (slot order, maybe short).
                self.rows.rekey(r, BY_SLOT, t)
        if self.rows.record(BY_SLOT, t) < 0:
            k = self._prefetched(b)
            if k >= 0:
                self._take_prefetched(k, t)
        self.n_sp = t + 1
        row = self._row(t)
        if row == NULL:
            return -1
        # Uncentred scores F = Σ_s k(x, x_s) β_s over the other slots (its own α is 0),
        # then g_p = ν_{y,p}·F − mean_c(ν_{y,p})·S − γ_{y,p} with S = Σ_c F (S2DO's formula).
        for c in range(Q):
            self.Fq[c] = 0.0
        if t > 0:
            nq = <int> Q
            nt = <int> t
            dgemv(&trans, &nq, &nt, &alpha1, self.B, &nq, row, &one, &beta0, self.Fq, &one)
            self.work_units += 0.5 * t * Q
        sq = 0.0
        for c in range(Q):
            sq += self.Fq[c]
        if self.fast:
            memcpy(self.F + t * Q, self.Fq, Q * sizeof(double))
            self.S[t] = sq
            self._rescan(t)
            return t
        for k in range(P):
            if not self.act[y, k]:
                self.G[t * P + k] = 0.0
                continue
            v = _nu_dot(&self.nu_tables, y * P + k, self.Fq, -self.gam[y, k])
            if self.centred:
                v -= self.nu_tables.nu_mean[y * P + k] * sq
            self.G[t * P + k] = v
        self._scan(t)
        return t

    cdef void _confirm(self, Py_ssize_t t) noexcept nogil:
        """Slot t (the last) stays: its row extends every complete cached row by one entry."""
        cdef Py_ssize_t s, r, rt = self.rows.record(BY_SLOT, t)
        cdef double* row
        self.n_inserted += 1
        if rt < 0:
            return
        for s in range(t):
            r = self.rows.record(BY_SLOT, s)
            if r >= 0 and self.rows.length[r] == t:
                row = self.rows.reserve(r, t + 1)
                if row == NULL:
                    continue   # not fatal: the row just stays short
                row[t] = self.rows.rows[rt][s]
                self.rows.length[r] = t + 1
        self.rows.evict()

    cdef void _follow_move(self, double* row, Py_ssize_t* n, Py_ssize_t t, Py_ssize_t L,
                           int qkind, Py_ssize_t q) noexcept nogil:
        """A row of n entries after slot L moved into slot t (n_sp becomes L).

        Entry t ← entry L, length clipped to L.  A short row (without entry L)
        gets entry t computed for its query (``_kernel_fill``'s qkind and q)
        instead of losing its entries from t on; with qkind < 0 it is cut at t.
        """
        if n[0] > L:
            if t != L:
                row[t] = row[L]
            n[0] = L
        elif n[0] > t:
            if qkind < 0:
                n[0] = t
            elif qkind == 0 and q == t:
                row[t] = self.kd[t]
            else:
                self._kernel_fill(qkind, q, row, t, t + 1)

    cdef void _remove(self, Py_ssize_t t) noexcept nogil:
        """Slot t leaves (α row zero); the last slot moves into it."""
        cdef Py_ssize_t L = self.n_sp - 1, r, nxt, j, g = self.gid[t], P = self.P, Q = self.Q
        # The leaving pattern's row: keyed by its index in a fit, dropped in a stream.
        r = self.rows.record(BY_SLOT, t)
        if r >= 0:
            if self.n_gid > 0:
                self.rows.rekey(r, BY_INDEX, g)
            else:
                self.rows.drop(r)
        if self.n_gid > 0:
            self.gid_slot[g] = -1
        if self.layout == SPARSE:
            self.pool_live -= self.nz[t]
        if t != L:
            memcpy(self.A + t * P, self.A + L * P, P * sizeof(double))
            if self.fast:
                memcpy(self.F + t * Q, self.F + L * Q, Q * sizeof(double))
                self.S[t] = self.S[L]
                self.ext[t] = self.ext[L]
            else:
                memcpy(self.G + t * P, self.G + L * P, P * sizeof(double))
            memcpy(self.B + t * Q, self.B + L * Q, Q * sizeof(double))
            memcpy(self.GS + t * self.R, self.GS + L * self.R, self.R * sizeof(double))
            self.gid[t] = self.gid[L]
            self.lab[t] = self.lab[L]
            self.kd[t] = self.kd[L]
            self.wt[t] = self.wt[L]
            self.sq[t] = self.sq[L]
            self.l1[t] = self.l1[L]
            self.viol[t] = self.viol[L]
            self.vsv[t] = self.vsv[L]
            self.bs[t] = self.bs[L]
            self.pp[t] = self.pp[L]
            self.pq[t] = self.pq[L]
            self.bssv[t] = self.bssv[L]
            self.ppsv[t] = self.ppsv[L]
            self.pqsv[t] = self.pqsv[L]
            if self.layout == DENSE and self.d > 0:
                memcpy(self.Xs + t * self.d, self.Xs + L * self.d, self.d * sizeof(double))
            elif self.layout == SPARSE:
                self.st[t] = self.st[L]
                self.nz[t] = self.nz[L]
            r = self.rows.record(BY_SLOT, L)
            if r >= 0:
                self.rows.rekey(r, BY_SLOT, t)
            if self.n_gid > 0:
                self.gid_slot[self.gid[t]] = t
        # Every cached and prefetched row follows the move.  A row kept by a pattern's
        # index (not a support pattern) is cut instead: its features may be gone.
        r = self.rows.lru.head
        while r >= 0:
            nxt = self.rows.lru.next[r]
            self._follow_move(self.rows.rows[r], &self.rows.length[r], t, L,
                              0 if self.rows.kind[r] == BY_SLOT else -1, self.rows.key[r])
            r = nxt
        for j in range(self.pf_n):
            if self.pf_pos[j] >= 0:
                self._follow_move(self.pf_out + j * self.pf_ld, &self.pf_len[j], t, L, 1,
                                  self.pf_pos[j])
        self.n_sp = L
        self.n_removed += 1

    cdef bint _is_zero(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t s
        cdef const double* a = self.A + e * self.P
        for s in range(self.P):
            if a[s] != 0:
                return False
        return True

    # ================================================================ steps
    cdef inline const double* _mrow(self, int slot, Py_ssize_t yp) noexcept nogil:
        """The row yp = y·P + p of M: the table's, or computed into buffer slot (0, 1)."""
        if self.has_M:
            return &self.M[yp, 0]
        return _coupling_row(&self.nu_tables, &self.mrows[slot, 0], &self.mrow_of[slot], yp)

    cdef void _second_in_pattern(self, Py_ssize_t i, Py_ssize_t p, double g1, double h11,
                                 Py_ssize_t e, double kie, bint sv_only, double* best,
                                 Py_ssize_t* k, Py_ssize_t* q) noexcept nogil:
        """Best-gain partner of (i, p) among the variables of pattern e (k'(x_i, x_e) = kie)."""
        cdef Py_ssize_t yi = self.lab[i], ye = self.lab[e], s, P = self.P
        cdef int r1 = self.slk[yi, p], r2
        cdef double g2, kee = self._kblock(e, e)
        cdef double lim = (self.C - self.eps_cap) * self.wt[e]
        cdef const double* Mrow = self._mrow(0, yi * P + p)
        cdef bint movable
        for s in range(P):
            if (e == i and s == p) or not self.act[ye, s]:
                continue
            if sv_only and not self.A[e * P + s] > 0:
                continue
            g2 = self._g(e, s)
            if g2 == 0:
                continue
            r2 = self.slk[ye, s]
            if e == i and r1 >= 0 and r2 == r1:
                movable = g2 < 0 or self.A[e * P + s] > 0
            else:
                movable = (g2 < 0 and (r2 < 0 or self.GS[e * self.R + r2] < lim)) or \
                    (g2 > 0 and self.A[e * P + s] > 0)
            if not movable:
                continue
            _keep_best(_gain(g1, g2, h11, Mrow[ye * P + s] * kie, self.Mdiag[ye, s] * kee),
                       e, s, best, k, q)
        self.work_units += 4.0 * P

    cdef void _second_all(self, Py_ssize_t i, Py_ssize_t p, double g1, double h11,
                          const double* Ki, bint sv_only, double* best, Py_ssize_t* k,
                          Py_ssize_t* q) noexcept nogil:
        """Best-gain partner of (i, p) among every other pattern's best single violator.

        A stale pattern's candidate comes from bounds: it is kept only if its
        exact gradient shows it can really move (as S2DO does).
        """
        cdef Py_ssize_t e, ye, s, P = self.P, n = self.n_sp, yi = self.lab[i]
        cdef int r2
        cdef double g2, shift = self.shift, lim = self.C - self.eps_cap
        cdef const double* Mrow = self._mrow(0, yi * P + p)   # shift, lim: × or ÷ wt[e]
        cdef const int* cand = self.bssv if sv_only else self.bs
        cdef bint check = self.fast
        for e in range(n):
            if e == i:
                continue
            s = self._fsingle(e, sv_only) if check else cand[e]
            if s < 0:
                continue
            ye = self.lab[e]
            g2 = self._g(e, s)
            if check and self.ext[e].stale:
                r2 = self.slk[ye, s]
                if not ((g2 < 0 and (r2 < 0 or self.GS[e * self.R + r2] < lim * self.wt[e]))
                        or (g2 > 0 and self.A[e * P + s] > 0)):
                    continue
            _keep_best(_gain(g1, g2, h11, Mrow[ye * P + s] * Ki[e],
                             self.Mdiag[ye, s] * (self.kd[e] + shift / self.wt[e])),
                       e, s, best, k, q)
        self.work_units += 4.0 * n

    cdef int _step(self, Py_ssize_t i, Py_ssize_t p, Py_ssize_t k, Py_ssize_t q,
                   Py_ssize_t keep, double v1, bint sv_only) noexcept nogil:
        """Optimise (i, p) and (k, q) (k < 0: (i, p) alone) and update everything.

        Fast path with ``block_steps``: the two patterns form a *block* whose
        rows of F are kept exact, and steps go on inside it (as S2DO's block
        steps) until its largest violation is below _block_fraction() of ``v1``,
        the first variable's; then one pass brings every other pattern up to
        date with the block's summed β deltas.  ``keep`` is a slot not to remove
        even if its α row becomes zero (the tentative new pattern, handled by
        the caller), or -1.  Returns the number of 2-D steps that changed α (0
        when the optimal step is zero), -1 when out of memory.
        """
        cdef Py_ssize_t P = self.P, b1 = -1, hi, lo, e, o, steps = 0, cap
        cdef double* Ki
        cdef double* Kk = NULL
        cdef double g1, h11, best, v
        cdef int s2
        cdef Py_ssize_t k2, q2
        cdef long long cold0 = self.n_cold, rescans0 = self.n_cold_rescans
        Ki = self._row(i)
        if Ki == NULL:
            return -1
        if k >= 0 and k != i:
            Kk = self._row(k)
            if Kk == NULL:
                return -1
            Ki = self.rows.rows[self.rows.record(BY_SLOT, i)]   # still valid (pinned)
            b1 = k
        self._start_deltas(i, b1, Ki)
        self.vlead = v1
        if not self._move(i, p, k, q):
            return 0
        steps = 1
        if self.fast:
            self._rescan(i)
            if b1 >= 0:
                self._rescan(b1)
            if self.block_steps:
                cap = BLOCK_STEPS * P * (1 if b1 < 0 else 2)
                while steps < cap:
                    # Most violating pattern of the block, its best move, and a partner.
                    e = i
                    if b1 >= 0 and (self.vsv[b1] > self.vsv[i] if sv_only
                                    else self.viol[b1] > self.viol[i]):
                        e = b1
                    v = self.vsv[e] if sv_only else self.viol[e]
                    if v <= self.tol or v < _block_fraction() * v1:
                        break
                    p = self._fbest(e, sv_only, &s2)
                    if p < 0:
                        break
                    k2 = e
                    q2 = s2
                    if s2 < 0:
                        k2 = -1
                        best = -1.0
                        g1 = self._g(e, p)
                        h11 = self.Mdiag[self.lab[e], p] * self._kblock(e, e)
                        self._second_in_pattern(e, p, g1, h11, e, self._kblock(e, e),
                                                sv_only, &best, &k2, &q2)
                        if b1 >= 0:
                            o = b1 if e == i else i
                            self._second_in_pattern(e, p, g1, h11, o, self._kblock(e, o),
                                                    sv_only, &best, &k2, &q2)
                    if not self._move(e, p, k2, q2):
                        break
                    self._rescan(i)
                    if b1 >= 0:
                        self._rescan(b1)
                    self.work_units += 6.0 * P * (1 if b1 < 0 else 2)
                    steps += 1
            self._fast_pass(Ki, Kk)
            _lazy_tick(&self.lazy, self.n_cold - cold0, self.n_cold_rescans - rescans0, P)
        else:
            self._generic_pass(Ki, Kk if Kk != NULL else Ki)
        self.n_steps += steps
        self.pass_steps += steps
        # Patterns whose α row became zero leave (the larger slot first).
        hi = i if i > b1 else b1
        lo = b1 if i > b1 else i
        if hi != keep and self._is_zero(hi):
            self._remove(hi)
        if lo >= 0 and lo != hi and lo != keep and self._is_zero(lo):
            self._remove(lo)
        return <int> steps

    cdef bint _move(self, Py_ssize_t i, Py_ssize_t p, Py_ssize_t k, Py_ssize_t q) noexcept nogil:
        """The exact 2-D step on (i, p), (k, q) (k < 0: (i, p) alone) inside the block.

        Updates α, the group sums, J and the block's β deltas (and, fast path,
        the block's rows of F).  Returns False when the optimal step is zero.
        """
        cdef Py_ssize_t P = self.P, R = self.R, yi = self.lab[i], yk
        cdef double g1, g2 = 0.0, h11, h12 = 0.0, h22 = 1.0, a1, a2 = 0.0, l1, u1, l2 = 0.0
        cdef double u2 = 0.0, tcap = 0.0, mu1 = 0.0, mu2 = 0.0, n1, n2, others, d1, d2
        cdef double shift = self.shift, Kii
        cdef int r1, r2 = -1
        cdef bint tri = False, single = k < 0
        Kii = self.kd[i] + shift / self.wt[i]
        r1 = self.slk[yi, p]
        g1 = self._g(i, p)
        h11 = self.Mdiag[yi, p] * Kii
        a1 = self.A[i * P + p]
        l1 = -a1
        if single:
            u1 = INFINITY if r1 < 0 else self.C * self.wt[i] - self.GS[i * R + r1]
            if u1 < 0:
                u1 = 0.0
            _solve_2d(g1, 0.0, h11, 0.0, 1.0, l1, u1, 0.0, 0.0, 0.0, False, &mu1, &mu2)
            mu2 = 0.0
            k = i
            q = p
        else:
            yk = self.lab[k]
            r2 = self.slk[yk, q]
            a2 = self.A[k * P + q]
            g2 = self._g(k, q)
            h22 = self.Mdiag[yk, q] * (self.kd[k] + shift / self.wt[k])
            h12 = self._mrow(0, yi * P + p)[yk * P + q] * self._kblock(i, k)
            l2 = -a2
            tri = k == i and r1 >= 0 and r1 == r2
            if tri:
                tcap = self.C * self.wt[i] - self.GS[i * R + r1]
                if tcap < 0:
                    tcap = 0.0
                u1 = tcap + a2
                u2 = tcap + a1
            else:
                u1 = INFINITY if r1 < 0 else self.C * self.wt[i] - self.GS[i * R + r1]
                u2 = INFINITY if r2 < 0 else self.C * self.wt[k] - self.GS[k * R + r2]
                if u1 < 0:
                    u1 = 0.0
                if u2 < 0:
                    u2 = 0.0
            _solve_2d(g1, g2, h11, h12, h22, l1, u1, l2, u2, tcap, tri, &mu1, &mu2)

        # New values, snapped onto the bounds they are within rounding of (as S2DO).
        n1 = a1 + mu1
        if n1 < self.eps_zero * self.wt[i]:
            n1 = 0.0
        if single:
            n2 = n1
            a2 = a1
        else:
            n2 = a2 + mu2
            if n2 < self.eps_zero * self.wt[k]:
                n2 = 0.0
        if tri:
            others = self.GS[i * R + r1] - a1 - a2
            if n1 + n2 + others > (self.C - self.eps_cap) * self.wt[i]:
                n2 = self.C * self.wt[i] - others - n1
                if n2 < 0:
                    n2 = 0.0
                    n1 = self.C * self.wt[i] - others
        else:
            if r1 >= 0 and self.gsize[yi, r1] == 1 and n1 > (self.C - self.eps_cap) * self.wt[i]:
                n1 = self.C * self.wt[i]
            if not single and r2 >= 0 and self.gsize[yk, r2] == 1 and \
                    n2 > (self.C - self.eps_cap) * self.wt[k]:
                n2 = self.C * self.wt[k]
        d1 = n1 - a1
        d2 = 0.0 if single else n2 - a2
        if d1 == 0 and d2 == 0:
            return False
        self.mi = i
        self.mp = p
        self.mk = k
        self.mq = q
        self.md1 = d1
        self.md2 = d2
        # Exact change of J over the step.
        self.J += g1 * d1 + g2 * d2 + 0.5 * (h11 * d1 * d1 + 2.0 * h12 * d1 * d2 + h22 * d2 * d2)
        self.A[i * P + p] = n1
        if r1 >= 0:
            self.GS[i * R + r1] += d1
        if not single:
            self.A[k * P + q] = n2
            if r2 >= 0:
                self.GS[k * R + r2] += d2
        if r1 >= 0:
            self._fix_group(i, r1)
        if not single and r2 >= 0:
            self._fix_group(k, r2)
        self._add_delta(i, p, d1)
        if not single:
            self._add_delta(k, q, d2)
        return True

    cdef inline double _kblock(self, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
        """k'(x_a, x_b) for two patterns of the block."""
        if a == b:
            return self.kd[a] + self.shift / self.wt[a]
        return self.brow[self.blk1]

    cdef void _start_deltas(self, Py_ssize_t b0, Py_ssize_t b1, const double* row0) noexcept nogil:
        """A new block: patterns b0 and b1 (-1: none), b0's kernel row; no β deltas yet."""
        self.blk0 = b0
        self.blk1 = b1
        self.brow = row0
        self.ncol = 0
        self.dS0 = 0.0
        self.dS1 = 0.0

    cdef void _add_delta(self, Py_ssize_t e, Py_ssize_t s, double v) noexcept nogil:
        """α_es moved by v (e in the block): β_e, the block's β deltas, the block's F rows.

        The deltas are kept per changed column (uncentred ν non-zeros), in
        ``pw0`` for b0's row and ``pw1`` for b1's, with their class sums in dS0/dS1.
        """
        cdef Py_ssize_t Q = self.Q, m, yp = self.lab[e] * self.P + s
        cdef Py_ssize_t base = yp * self.nu_tables.width
        cdef int j, u, at, c
        cdef double dv, kv, tot = 0.0
        cdef double* w = self.pw0 if e == self.blk0 else self.pw1
        if v == 0:
            return
        for j in range(self.nu_tables.nz_count[yp]):
            c = self.nu_tables.nz_col[base + j]
            dv = v * self.nu_tables.nz_val[base + j]
            self.B[e * Q + c] += dv
            tot += dv
            at = -1
            for u in range(self.ncol):
                if self.pcol[u] == c:
                    at = u
                    break
            if at < 0:
                at = self.ncol
                self.pcol[at] = c
                self.pw0[at] = 0.0
                self.pw1[at] = 0.0
                self.ncol += 1
            w[at] += dv
            if self.fast:
                # The block's own rows of F stay exact.
                for m in range(2):
                    if m == 1 and self.blk1 < 0:
                        break
                    u = self.blk0 if m == 0 else self.blk1
                    kv = self._kblock(u, e)
                    self.F[u * Q + c] += dv * kv
        if e == self.blk0:
            self.dS0 += tot
        else:
            self.dS1 += tot
        if self.fast and self.centred:
            self.S[self.blk0] += tot * self._kblock(self.blk0, e)
            if self.blk1 >= 0:
                self.S[self.blk1] += tot * self._kblock(self.blk1, e)

    cdef void _generic_pass(self, const double* Ki, const double* Kk) noexcept nogil:
        """G += (M row of (i,p)) d1 k' + (M row of (k,q)) d2 k' for every slot; rescan all.

        Generic machines take one step per pass: (i, p, d1) and (k, q, d2) are
        the last move's.
        """
        cdef Py_ssize_t e, s, ye, n = self.n_sp, P = self.P, i = self.mi, k = self.mk
        cdef double kv1, kv2, c1, c2, shift = self.shift, d1 = self.md1, d2 = self.md2
        cdef const double* M1 = self._mrow(0, self.lab[i] * P + self.mp)
        cdef const double* M2 = self._mrow(1, self.lab[k] * P + self.mq)
        cdef double* Ge
        for e in range(n):
            kv1 = Ki[e]
            kv2 = Kk[e]
            if e == i:
                kv1 = kv1 + shift / self.wt[e]
            if e == k:
                kv2 = kv2 + shift / self.wt[e]
            c1 = d1 * kv1
            c2 = d2 * kv2
            ye = self.lab[e] * P
            Ge = self.G + e * P
            for s in range(P):
                Ge[s] += c1 * M1[ye + s] + c2 * M2[ye + s]
            self._scan(e)
        self.work_units += 2.0 * n * P

    cdef void _fast_pass(self, const double* K0, const double* K1) noexcept nogil:
        """F and S of every pattern outside the block on the changed columns, σ, extremes.

        The block's patterns are exact already.  For the others only the
        changed slots are compared with the cached extremes, and an extreme
        whose slot moved away is kept as a bound (the pattern is *stale*,
        rescanned when it matters) -- S2DO's fast path.  A pattern whose
        violation, raised by the most the step can have moved it (|Δσ| plus
        the largest |ΔF|, twice that for a pair), stays below LAZY_FRACTION of
        the last first variable's is *cold* (S2DO's lazy refresh): the bound
        becomes its violation and its extremes wait for a rescan.
        """
        cdef Py_ssize_t e, y, n = self.n_sp, P = self.P, Q = self.Q, R = self.R
        cdef Py_ssize_t b0 = self.blk0, b1 = self.blk1
        cdef int j, nc = self.ncol, s, r, au, ad, aa, ausv, aasv
        cdef double dS0 = self.dS0, dS1 = self.dS1, k0, k1, h, hu, hd, ha, husv, hasv
        cdef double lim = self.C - self.eps_cap, df, dmax, dsig, move
        cdef double cold_below = _cold_below(&self.lazy, self.vlead)
        cdef bint dirty, centred = self.centred, canup, sv, rescan_all
        cdef double* Fe
        cdef const double* gm
        cdef const int* sl
        rescan_all = 2 * nc > P
        for e in range(n):
            if e == b0 or e == b1:
                continue
            k0 = K0[e]
            k1 = K1[e] if b1 >= 0 else 0.0
            Fe = self.F + e * Q
            dmax = 0.0
            for j in range(nc):
                df = self.pw0[j] * k0 + self.pw1[j] * k1
                Fe[self.pcol[j]] += df
                if fabs(df) > dmax:
                    dmax = fabs(df)
            if centred:
                self.S[e] += dS0 * k0 + dS1 * k1
            dsig = self.ext[e].sig
            self._sigma(e)
            dsig = fabs(self.ext[e].sig - dsig)
            move = dsig + dmax if dsig > dmax else 2.0 * dmax
            if self.viol[e] + move < cold_below:
                self.viol[e] += move
                self.vsv[e] += move
                self.ext[e].stale = 1
                self.ext[e].cold = 1
                self.n_cold += 1
                continue
            if rescan_all or self.ext[e].cold:
                self._rescan(e)
                continue
            y = self.lab[e]
            gm = &self.gam[y, 0]
            sl = self.pslk + y * P
            dirty = self.ext[e].stale
            hu = self.ext[e].hup
            hd = self.ext[e].hdn
            ha = self.ext[e].hall
            husv = self.ext[e].hupsv
            hasv = self.ext[e].hallsv
            au = self.ext[e].aup
            ad = self.ext[e].adn
            aa = self.ext[e].aall
            ausv = self.ext[e].aupsv
            aasv = self.ext[e].aallsv
            for j in range(nc):
                s = self.pcol[j]
                if not self.act[y, s]:
                    continue
                h = -Fe[s] - gm[s]
                r = sl[s]
                canup = r < 0 or self.GS[e * R + r] < lim * self.wt[e]
                sv = self.A[e * P + s] > 0
                dirty |= _track_min(h, canup, s, &hu, &au)
                dirty |= _track_min(h, 1, s, &ha, &aa)
                dirty |= _track_max(h, sv, s, &hd, &ad)
                dirty |= _track_min(h, canup & sv, s, &husv, &ausv)
                dirty |= _track_min(h, sv, s, &hasv, &aasv)
            self.ext[e].hup = hu
            self.ext[e].hdn = hd
            self.ext[e].hall = ha
            self.ext[e].hupsv = husv
            self.ext[e].hallsv = hasv
            self.ext[e].aup = au
            self.ext[e].adn = ad
            self.ext[e].aall = aa
            self.ext[e].aupsv = ausv
            self.ext[e].aallsv = aasv
            self.ext[e].stale = dirty
            self._fviol(e)
        self.work_units += n * (6.0 + 3.0 * nc)

    cdef void _fix_group(self, Py_ssize_t e, int r) noexcept nogil:
        """Recompute a slack-group sum from its members (no drift at the bound)."""
        cdef Py_ssize_t y = self.lab[e], s
        cdef double v = 0.0
        for s in range(self.P):
            if self.slk[y, s] == r:
                v += self.A[e * self.P + s]
        self.GS[e * self.R + r] = v

    cdef int _step_in(self, Py_ssize_t i, bint sv_only, bint same_pattern,
                      Py_ssize_t keep) noexcept nogil:
        """A step whose first variable comes from pattern i.

        Returns the number of 2-D steps that changed α (see :meth:`_step`), 0
        if i has no violation above tol, -1 when out of memory.
        """
        cdef Py_ssize_t p, k = -1, q = -1
        cdef int qi = -1
        cdef double v
        cdef double g1, h11, best = -1.0
        cdef double* Ki
        self._exact(i)
        v = self.vsv[i] if sv_only else self.viol[i]
        if v <= self.tol:
            return 0
        if self.fast:
            p = self._fbest(i, sv_only, &qi)
            q = qi
        elif sv_only:
            p = self.ppsv[i]
            q = self.pqsv[i]
            if p < 0:
                p = self.bssv[i]
        else:
            p = self.pp[i]
            q = self.pq[i]
            if p < 0:
                p = self.bs[i]
        if p < 0:
            return 0
        if q >= 0:
            # §5.2.1: the pair of one slack group is the working set.
            return self._step(i, p, i, q, keep, v, sv_only)
        g1 = self._g(i, p)
        h11 = self.Mdiag[self.lab[i], p] * self._kblock(i, i)
        self._second_in_pattern(i, p, g1, h11, i, self._kblock(i, i), sv_only, &best,
                                &k, &q)
        if not same_pattern and self.n_sp > 1:
            Ki = self._row(i)
            if Ki == NULL:
                return -1
            self._second_all(i, p, g1, h11, Ki, sv_only, &best, &k, &q)
        return self._step(i, p, k, q, keep, v, sv_only)

    cdef int _old_step(self, int kind) noexcept nogil:
        """One TWO_OLD (kind 1) or TWO_OLD_SUPPORTS (kind 2) step by the strategy."""
        cdef Py_ssize_t i, n = self.n_sp
        if n == 0:
            return 0
        if self.strategy == S2DO_ALL:
            i = self._argmax(self.vsv if kind == TWO_OLD_SUPPORTS else self.viol)
            if i < 0:
                return 0
        else:
            i = self._randint(n)
        return self._step_in(i, kind == TWO_OLD_SUPPORTS, self.strategy == RP_S2DO_PATTERN, -1)

    cdef int _two_news(self, Py_ssize_t b) noexcept nogil:
        """TWO_NEWS on pattern b of the batch (Algorithms 6 and 8)."""
        cdef Py_ssize_t t = -1, g = self.bgid[b]
        cdef bint fresh = True
        cdef int res
        if (self.n_gid == 0 or (self.gid_slot[g] < 0 and self.rows.record(BY_INDEX, g) < 0)) \
                and self._prefetched(b) < 0:
            self._prefetch()
        if self.n_gid > 0 and self.gid_slot[g] >= 0:
            t = self.gid_slot[g]
            fresh = False
        else:
            t = self._insert(b)
            if t < 0:
                return -1
        res = self._step_in(t, False, True, t if fresh else -1)
        if res < 0:
            return -1
        if fresh:
            if self._is_zero(t):
                if res == 0:
                    self.n_new_skipped += 1
                self._remove(t)
            else:
                self._confirm(t)
        return res

    cdef int _draw(self) noexcept nogil:
        """A step type with probability ∝ its rate, each raised to ≥ η of the sum."""
        cdef double w[3]
        cdef double tot = 0.0, floor_, u
        cdef int t
        for t in range(N_STEP_TYPES):
            tot += self.rate[t]
        floor_ = self.eta * tot
        if tot <= 0:
            floor_ = 1.0
        tot = 0.0
        for t in range(N_STEP_TYPES):
            w[t] = self.rate[t] if self.rate[t] > floor_ else floor_
            tot += w[t]
        u = self._uniform() * tot
        for t in range(N_STEP_TYPES - 1):
            if u < w[t]:
                return t
            u -= w[t]
        return N_STEP_TYPES - 1

    cdef void _rate(self, int t, double J0, double W0, double T0) noexcept nogil:
        cdef double dw = self.work_units - W0
        self.time_type[t] += _now() - T0
        self.work_type[t] += dw
        if dw < 1.0:
            dw = 1.0
        self.rate[t] = self.beta * (J0 - self.J) / dw + (1.0 - self.beta) * self.rate[t]
        self.natomic_type[t] += 1

    # ================================================================ driver
    def set_batch(self, X, data, indices, indptr, sqnorm, l1norm, kdiag, y, gids, order,
                  weight=None):
        """The patterns of the next pass: features, norms, k(x,x), labels, indices, order.

        ``weight``: the patterns' weights (float64 (n,), positive; None: all 1).

        Dense layout: ``X`` (n, d) C-contiguous float64.  Sparse: ``data``,
        ``indices`` (int32) and ``indptr`` (intp) of a canonical CSR matrix.
        Gram layout: neither (``gids`` index the Gram matrix).  ``order`` is the
        visiting order (positions into the batch).
        """
        empty = np.zeros((1, 1))
        self.bX = X if X is not None else empty
        self.bdata = data if data is not None else np.zeros(1)
        self.bindices = indices if indices is not None else np.zeros(1, dtype=np.int32)
        self.bindptr = indptr if indptr is not None else np.zeros(2, dtype=np.intp)
        self.bsq = sqnorm
        self.bl1 = l1norm
        self.bkd = kdiag
        self.bwt = np.ones(y.shape[0]) if weight is None else weight
        if self.bwt.shape[0] != y.shape[0]:
            raise ValueError("weight needs one entry per pattern")
        self.by = y
        self.bgid = gids
        self.order = order
        self.n_order = order.shape[0]
        self.pf_n = 0   # the prefetch buffer holds positions of the previous batch
        self.pos = 0
        self.pass_steps = 0
        if self.n_gid > 0 and gids.shape[0] and (np.min(gids) < 0 or np.max(gids) >= self.n_gid):
            raise ValueError("pattern indices out of range")

    def run_pass(self, long long max_steps, double time_limit):
        """Feed the batch patterns from ``pos`` on (Algorithm 7).

        Returns 0 when the pass is complete, 1 when ``max_steps`` 2-D steps
        were taken, 2 when ``time_limit`` seconds are up, 3 when memory ran out.
        """
        cdef int status = DONE, t, res = 0
        cdef long long start_steps = self.n_steps, k
        cdef double t0, J0, W0, T0
        with nogil:
            t0 = _now()
            while self.pos < self.n_order:
                if self.n_steps - start_steps >= max_steps:
                    status = MAX_STEPS
                    break
                J0 = self.J
                W0 = self.work_units
                T0 = _now()
                res = self._two_news(self.order[self.pos])
                if res < 0:
                    break
                self.nstep_type[TWO_NEWS] += res
                self._rate(TWO_NEWS, J0, W0, T0)
                self.pos += 1
                while True:
                    t = self._draw()
                    if t == TWO_NEWS:
                        break
                    J0 = self.J
                    W0 = self.work_units
                    T0 = _now()
                    for k in range(self.mult[t]):
                        res = self._old_step(t)
                        if res < 0:
                            break
                        self.nstep_type[t] += res
                    if res < 0:
                        break
                    self._rate(t, J0, W0, T0)
                    if self.n_steps - start_steps >= max_steps:
                        break
                if res < 0:
                    break
                if _now() - t0 > time_limit and self.pos < self.n_order:
                    status = TIME_UP
                    break
        if res < 0 or self.oom:
            return NO_MEMORY
        return status

    def finish(self, long long max_steps, double time_limit):
        """S2DO_ALL steps on the support patterns until none violates by more than tol.

        Returns 0 (done), 1 (``max_steps``), 2 (time is up) or 3 (out of memory).
        """
        cdef int status = DONE, res = 1
        cdef long long start_steps = self.n_steps
        cdef int saved = self.strategy
        cdef double t0
        with nogil:
            t0 = _now()
            self.strategy = S2DO_ALL
            while True:
                if self.n_steps - start_steps >= max_steps:
                    status = MAX_STEPS
                    break
                res = self._old_step(TWO_OLD)
                if res <= 0:
                    break
                self.n_finish_steps += 1
                if ((self.n_steps - start_steps) & 15) == 0 and _now() - t0 > time_limit:
                    status = TIME_UP
                    break
            self.strategy = saved
        if res < 0 or self.oom:
            return NO_MEMORY
        return status

    # ================================================================ Python views
    def max_violation(self):
        """Largest KKT violation over the support patterns (exact; 0 when there are none)."""
        cdef Py_ssize_t e
        cdef double v = 0.0
        for e in range(self.n_sp):
            self._exact(e)
            if self.viol[e] > v:
                v = self.viol[e]
        return v

    def support(self):
        """(gid, label, α, β) of the support patterns, slot order (copies; β uncentred)."""
        cdef Py_ssize_t n = self.n_sp
        gids = np.array(<Py_ssize_t[:n]> self.gid, dtype=np.intp) if n else np.zeros(0, np.intp)
        labels = np.array(<int[:n]> self.lab, dtype=np.intp) if n else np.zeros(0, np.intp)
        alpha = np.array(<double[:n * self.P]> self.A).reshape(n, self.P) if n \
            else np.zeros((0, self.P))
        beta = np.array(<double[:n * self.Q]> self.B).reshape(n, self.Q) if n \
            else np.zeros((0, self.Q))
        return gids, labels, alpha, beta

    def gradients(self):
        """Gradients ∂J/∂α of the support patterns, (n_sp, P) (a copy; 0 on inactive slots)."""
        cdef Py_ssize_t n = self.n_sp, e, k
        out = np.zeros((n, self.P))
        cdef double[:, ::1] o = out
        for e in range(n):
            for k in range(self.P):
                if self.act[self.lab[e], k]:
                    o[e, k] = self._g(e, k)
        return out

    def scores(self):
        """(F, S): uncentred scores K'β of the support patterns and their row sums (fast path)."""
        cdef Py_ssize_t n = self.n_sp
        if not self.fast:
            return None, None
        if n == 0:
            return np.zeros((0, self.Q)), np.zeros(0)
        return (np.array(<double[:n * self.Q]> self.F).reshape(n, self.Q),
                np.array(<double[:n]> self.S))

    def features(self):
        """Features of the support patterns, slot order: dense (n_sp, d) or CSR parts."""
        cdef Py_ssize_t n = self.n_sp, s, k, w = 0
        if self.layout == DENSE:
            if n == 0 or self.d == 0:
                return np.zeros((n, self.d))
            return np.array(<double[:n * self.d]> self.Xs).reshape(n, self.d)
        if self.layout == SPARSE:
            indptr = np.zeros(n + 1, dtype=np.intp)
            for s in range(n):
                indptr[s + 1] = indptr[s] + self.nz[s]
            total = int(indptr[n])
            data = np.empty(total)
            indices = np.empty(total, dtype=np.int32)
            for s in range(n):
                for k in range(self.nz[s]):
                    data[w] = self.pval[self.st[s] + k]
                    indices[w] = self.pidx[self.st[s] + k]
                    w += 1
            return data, indices, indptr
        return None

    @property
    def lazy_enabled(self):
        """Whether cold visits are allowed (fast path; see :meth:`_fast_pass`)."""
        return self.lazy.enabled

    @lazy_enabled.setter
    def lazy_enabled(self, bint value):
        _lazy_enable(&self.lazy, value and self.fast, LAZY_WINDOW_ONLINE)

    def stats(self):
        """Counters of the run (plain Python numbers)."""
        return {
            "n_steps": int(self.n_steps),
            "steps": {**{STEP_NAMES[t]: int(self.nstep_type[t]) for t in range(N_STEP_TYPES)},
                      "finish": int(self.n_finish_steps)},
            "atomic_steps": {STEP_NAMES[t]: int(self.natomic_type[t])
                             for t in range(N_STEP_TYPES)},
            "rates": {STEP_NAMES[t]: float(self.rate[t]) for t in range(N_STEP_TYPES)},
            "time_by_type": {STEP_NAMES[t]: float(self.time_type[t]) for t in range(N_STEP_TYPES)},
            "work_by_type": {STEP_NAMES[t]: float(self.work_type[t]) for t in range(N_STEP_TYPES)},
            "n_support_patterns": int(self.n_sp),
            "n_inserted": int(self.n_inserted),
            "n_removed": int(self.n_removed),
            "n_new_skipped": int(self.n_new_skipped),
            "n_cold_visits": int(self.n_cold),
            "n_cold_rescans": int(self.n_cold_rescans),
            "n_kernel_evaluations": int(self.n_kernel_evaluations),
            "work_units": float(self.work_units),
            "cache_rows": int(self.rows.n_rows),
            "cache_bytes": int(self.rows.used_bytes),
            "cache_peak_bytes": int(self.rows.peak_bytes),
            "cache_budget_bytes": int(self.rows.budget),
            "row_hits": int(self.rows.n_hits),
            "row_misses": int(self.rows.n_misses),
        }

    def export(self):
        """Everything needed to rebuild the state (the cache is not kept)."""
        gids, labels, alpha, beta = self.support()
        F, S = self.scores()
        out = {
            "gids": gids, "labels": labels, "alpha": alpha, "beta": beta,
            "G": self.gradients(), "F": F, "S": S, "features": self.features(),
            "kd": np.array(<double[:self.n_sp]> self.kd) if self.n_sp else np.zeros(0),
            "wt": np.array(<double[:self.n_sp]> self.wt) if self.n_sp else np.zeros(0),
            "sq": np.array(<double[:self.n_sp]> self.sq) if self.n_sp else np.zeros(0),
            "l1": np.array(<double[:self.n_sp]> self.l1) if self.n_sp else np.zeros(0),
            "rng": int(self.rng), "rates": [float(self.rate[t]) for t in range(N_STEP_TYPES)],
            "J": float(self.J), "n_steps": int(self.n_steps),
            "n_kernel_evaluations": int(self.n_kernel_evaluations),
            "work_units": float(self.work_units),
            "nstep_type": [int(self.nstep_type[t]) for t in range(N_STEP_TYPES)],
            "natomic_type": [int(self.natomic_type[t]) for t in range(N_STEP_TYPES)],
            "counters": [int(self.n_inserted), int(self.n_removed), int(self.n_new_skipped),
                         int(self.n_finish_steps)],
        }
        return out

    def restore(self, state):
        """Load the output of :meth:`export` into a fresh state (same problem tables)."""
        cdef Py_ssize_t n = len(state["gids"]), s, P = self.P, Q = self.Q, R = self.R, k, c
        cdef int r
        if self.n_sp != 0:
            raise ValueError("restore() needs a fresh state")
        if not self._reserve(max(n, 1)):
            raise MemoryError()
        alpha = np.ascontiguousarray(state["alpha"], dtype=np.float64).reshape(n, P)
        beta = np.ascontiguousarray(state["beta"], dtype=np.float64).reshape(n, Q)
        G = np.ascontiguousarray(state["G"], dtype=np.float64).reshape(n, P)
        if self.fast:
            if state.get("F") is None:
                raise ValueError("restore(): the fast path needs the scores F and S")
            F = np.ascontiguousarray(state["F"], dtype=np.float64).reshape(n, Q)
            S = np.ascontiguousarray(state["S"], dtype=np.float64).reshape(n)
        feats = state["features"]
        if self.layout == SPARSE:
            data, indices, indptr = feats
            if not self._reserve_pool(len(data)):
                raise MemoryError()
        for s in range(n):
            self.gid[s] = int(state["gids"][s])
            self.lab[s] = int(state["labels"][s])
            self.kd[s] = float(state["kd"][s])
            self.wt[s] = float(state["wt"][s]) if "wt" in state else 1.0
            self.sq[s] = float(state["sq"][s])
            self.l1[s] = float(state["l1"][s])
            for k in range(P):
                self.A[s * P + k] = alpha[s, k]
                if not self.fast:
                    self.G[s * P + k] = G[s, k]
            for c in range(Q):
                self.B[s * Q + c] = beta[s, c]
                if self.fast:
                    self.F[s * Q + c] = F[s, c]
            if self.fast:
                self.S[s] = S[s]
            for r in range(R):
                self.GS[s * R + r] = 0.0
            for k in range(P):
                r = self.slk[self.lab[s], k]
                if r >= 0:
                    self.GS[s * R + r] += alpha[s, k]
            if self.layout == DENSE:
                for k in range(self.d):
                    self.Xs[s * self.d + k] = feats[s, k]
            elif self.layout == SPARSE:
                self.st[s] = self.pool_used
                self.nz[s] = indptr[s + 1] - indptr[s]
                for k in range(self.nz[s]):
                    self.pval[self.pool_used + k] = data[indptr[s] + k]
                    self.pidx[self.pool_used + k] = indices[indptr[s] + k]
                self.pool_used += self.nz[s]
                self.pool_live += self.nz[s]
            if self.n_gid > 0:
                self.gid_slot[self.gid[s]] = s
            self.n_sp = s + 1
        for s in range(n):
            self._refresh(s)
        self.rng = <unsigned long long> state["rng"]
        for k in range(N_STEP_TYPES):
            self.rate[k] = state["rates"][k]
            self.nstep_type[k] = state["nstep_type"][k]
            self.natomic_type[k] = state["natomic_type"][k]
        self.J = state["J"]
        self.n_steps = state["n_steps"]
        self.n_kernel_evaluations = state["n_kernel_evaluations"]
        self.work_units = state["work_units"]
        (self.n_inserted, self.n_removed, self.n_new_skipped,
         self.n_finish_steps) = state["counters"]

    def __reduce__(self):
        raise TypeError("OnlineState cannot be pickled directly; use export()/restore().")
