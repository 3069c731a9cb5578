"""S2DO: sequential two-dimensional optimisation of the unified bias-free dual.

The problem (see :mod:`msvm.machines`) is the minimisation

    J(α) = ½ Σ H[(i,p),(j,q)] α_ip α_jq − Σ γ_{y_i,p} α_ip,
    H[(i,p),(j,q)] = M(y_i,p ; y_j,q) · k'(x_i, x_j),   M = Σ_c ν̄_{y_i,p,c} ν̄_{y_j,q,c},
    α_ip ≥ 0,  Σ_{p in slack group r of i} α_ip ≤ C_i  (no upper bound for the M-SVM²),

with k' = k + shift_i·δ_ij (shift_i = 1/(2C w_i) for the M-SVM², else 0) and
C_i = C w_i the capacity of example i (w_i its weight, 1 unless weighted; see
:mod:`msvm.problem`): both are per-example arrays.  Every
iteration changes two variables (seed 004, Algorithm 3): the first is the
largest KKT violator, the second maximises the second-order gain of
Algorithm 4 computed with the candidate's own gradient and the 2×2 block of
H; the pair is then optimised exactly over its feasible polygon (a box,
Algorithm 5, or, for two variables of one max-loss slack group, the triangle
of Algorithm 11).

Block steps.  A pass over the examples costs O(m); a 2-D step within a
small block of examples costs O(P) once their rows of F are kept up to date
(by K' among them times the step's β deltas).  So after the pair step,
``_solve_block`` goes on with steps on the block's variables (first by
violation, second by Algorithm 4 restricted to them) until their largest
violation is below a tenth (``_block_fraction``) of the first variable's, and only then
does the pass bring the other examples up to date with the summed β deltas of
the block's rows.  The block is the pair's two examples plus the leaders of
the last pass's chunks whose Gram rows are cached (``block_size``, at most
BLOCK_MAX = 8, examples in all): the slots of one example are coupled through
K'_ii, which the pair rule exploits one step per pass, and the other
violators are far apart, each reached one pass at a time.  When a pass has
fewer chunks than the block has room (a small focus) and the machine has
max-loss slack groups, the leaders are the working set's most violating
examples instead (on WW it cost more steps than it saved passes).  Blocks cut
the number of passes most where one example's slots are strongly coupled
(LLW); where the block's steps are less useful the pass, which costs
O(changed columns) per example, keeps the time level.  ``block_steps =
False`` gives Algorithm 3 as written, one step per pass.

Bookkeeping (why an iteration costs O(m · changed classes), not O(m·P·Q))
-------------------------------------------------------------------------
The state is α (m, P) and the *uncentred* scores

    F = K' β,   β_ic = Σ_p ν_{y_i,p,c} α_ip      (m, Q)
    S_i = Σ_c F_ic                                 (m,), only for sum-to-zero machines.

The gradient is g_ip = Σ_c ν̄_{y_i,p,c} (K'β̄)_ic − γ_{y_i,p}.  Because ν̄ is
ν centred over classes, ν̄·v = ν̄·(v + t·1) for any t, so
ν̄·K'β̄ = ν̄·F = ν·F − mean_c(ν)·S: the gradient is read from F with the
*uncentred*, sparse ν (WW/CS: two non-zeros, LLW/M-SVM²: one) plus one row
sum.  A step on (i,p),(j,q) changes β only in rows i and j and only in the
columns where ν_{y_i,p,·} or ν_{y_j,q,·} are non-zero, so F changes by
(at most two) Gram rows times those few β deltas, and S by the same rows
times Σ_c Δβ: a handful of axpy's of length m instead of a product with the
full (m, Q) coefficient matrix (LLW with the centred ν̄ would touch all Q
columns; the row sum avoids it).  The centred scores the rest of msvm uses
are recovered at the end as F̄ = F − S/Q.

For every example e the solver caches its largest violation ``viol[e]``
and the slot(s) realising it (``wp[e]``, ``wq[e]``).  Violations are in
gradient units, as in :func:`msvm.diagnostics.kkt_violation`: −g if α may
increase (its group is below C, or no upper bound), g if α > 0, and, in a
slack group shared by several slots (CS), the pair violation g_p − g_q of
moving mass from p (α_p > 0) to q.  The first-variable rule of §5.2.1: if
an example's best move is a pair of one slack group and it beats every
single variable, that pair is the working set; otherwise the single
variable is the first one and the second is the best gain partner.

Two loops share this state (they differ in the pass and the second-variable
search; the steps within a block are common):

* **generic** (any machine): after a step every example of the working set
  gets its P gradients recomputed from F and its violation rescanned, and
  the second variable is searched over all movable variables with the
  exact gain of Algorithm 4: O(m·P) per iteration.
* **fast** (machines whose constraint s of class y reads
  ν_{y,s,·} = u_y − e_s, slot s ↔ class s, with all-singleton or one
  all-slot slack groups: WW, CS, LLW, M-SVM²).  Then
  g_es = σ_e + h_es with a per-example shift σ_e = u_y·F_e − κ_y S_e
  (κ_y = mean_c ν_{y,s,c} when sum-to-zero) and a per-slot part
  h_es = −F_es − γ_ys.  Each example keeps σ_e and three extremes of h with
  their slots: min over the slots that may increase (``hup``), max over
  those with α > 0 (``hdn``), min over all (``hall``, max-loss only); its
  violation is max(−σ−hup, σ+hdn, hdn−hall).  A step changes a few
  columns of F, i.e. σ_e and a few h_es of each example: σ is recomputed
  in O(nnz u_y), and each changed h_es updates the extremes in O(1) unless
  it was the extreme and moved away.  In that case the example is marked
  *stale* and keeps the old extreme, which remains a bound (min from
  below, max from above), so ``viol[e]`` is an upper bound of the true
  violation; a stale example is rescanned (O(P)) when its bound would
  lead the running maximum, so the maximum found is exact and so is the
  stopping test.  The second variable is searched among each example's
  best single violator (plus every slot of the first variable's own
  example): O(m) per iteration; on usps this does not change the number of
  iterations measured against the exhaustive search.  The offer (its slot,
  gradient and H diagonal) is written by ``_fast_violation`` while the
  example is in cache, so the search reads three numbers per example; which
  slots may move up or down is kept as two bitmasks per example (one 64-bit
  word each in the example's record up to 64 slots, ⌈P/64⌉ words in a side
  array past that), updated only when the example's α changes.

One pass per iteration (fast path).  After the block's steps the fused pass
of ``_fast_update`` visits every example once: it adds the summed β deltas
times the block's Gram rows to the changed columns of F_e (and S_e) and, for an
example of the working set, refreshes σ_e, the extremes and viol[e] right
away, while the row of F is in cache; the second-variable search of the next
step is a second pass, over the working set only.

Cold examples (lazy refresh, fast path).  Most examples of the working set
violate far less than the leader, and refreshing their extremes is most of a
pass.  A step moves each gradient of e by at most |Δσ_e| + max_c |ΔF_ec|
(a pair difference by twice the latter), so viol[e] plus that is a new upper
bound; while it stays below LAZY_FRACTION (0.97) times the last maximum the
example is *cold*: its F row and σ_e are updated, viol[e] becomes the bound,
the example is marked stale, its extremes wait, and it withdraws its
second-variable offer (which holds an old gradient: a gain computed with the
wrong gradient is the error Algorithm 4 warns about) until its next rescan.
When the bound comes near the maximum the example is rescanned.  If no exact
violation reaches the threshold, ``_find_max`` makes the leading bounds exact,
so the first variable and the stopping test stay exact.  The payoff depends
on the kernel: on usps most visits are cold (same iterations, about half the
time), while on letter (16 features, large kernel values) the bounds grow
too fast and the rescans cost more than the cold visits save;
``_lazy_control`` weighs the two every LAZY_WINDOW_S2DO (32) steps and
pauses the cold path while it loses (a short window: the focus waits for it).

Threads.  Both passes run over fixed chunks of CHUNK examples (or positions
of the working set), shared among ``n_threads`` OpenMP threads (each chunk
writes only its own examples' state); a chunk reports its best candidate and
the chunks are combined in order with the same strict comparisons as the
serial loop, so the iterates are bit-identical whatever the number of threads
(the Gram rows are computed in fixed blocks too, see
:mod:`msvm._core._kernel_cache`).  What
stays serial per step: the block's 2-D steps, the β bookkeeping, the cache's
LRU lists and the reductions over chunks.  Because a step costs only tens of
microseconds, two barriers per step are cheap on idle cores but ruinous when
other processes hold them.  Two controls: ``_tune`` times one thread against
all of them every few thousand steps and keeps the faster for the passes (a
block of Gram rows is milliseconds of work and keeps all threads; tuning it
too computed most of the rows on one thread, in the first serial window);
and between time slices the driver's
:class:`~msvm.solvers._common.ContentionWatch` reads from the scheduler how
long the threads waited for a core and, while other processes hold the
cores, runs everything on one thread (``set_threads``).  Where the OpenMP
threads sleep between regions instead of spinning (``OMP_WAIT_POLICY=passive``;
the driver's :func:`regions_slow` probe), every region must wake them, and
``_tune`` starts with its timing instead of trusting all threads.

Kernel rows.  When the first or second variable's row is missing and the
cache still has never-used slots, it is computed in one block with the rows
of the most violating examples not cached yet (``_fetch``; one dgemm reads
X once for the block, a dgemv once per row; the block grows with the number
of features, from 8 to 64 rows).  A few more rows are computed than would be
requested, at a fraction of the cost.  When the solver left a cache that holds
every row unfilled (few features, :func:`msvm.solvers._common.fill_gram`), the
first miss after ``complete_at`` rows computes all the rows still missing.

Memory.  The passes read the Gram rows at the working set's positions,
scattered over rows of m entries that mostly live in main memory: the loops
prefetch the kernel values, records and score rows of the example AHEAD
positions on, so that the loads overlap instead of stalling one at a time.

Shrinking: every ``shrink_interval`` iterations (SHRINK_INTERVAL) examples whose every
variable is at a bound with its gradient pointing outwards (``viol[e] == 0``
and a margin from the bound switching of the current largest violation, as in
libsvm, but at least ``shrink_margin``·tol; for a max-loss slack group, the
move of mass to the lowest *other* slot) are removed from selection and from
the gradient refresh.  While the cache has evicted no row (it holds every
Gram row, or has never been full: a solve often needs the rows of a fraction
of the examples only), the passes visit the working set only (by its
positions) and the shrunk examples' rows of F and S are rebuilt from α when
needed (``_rebuild_shrunk``, libsvm's gradient reconstruction, from cached
rows); meanwhile ``objective()`` is the last exact value plus each step's
exact change.  When the cache fills up, they are rebuilt once and from then
on kept exact (``_stop_deferring``: rebuilding them later would cost a Gram
row per evicted support vector).  Every example is unshrunk
once when the largest violation first falls to 10·tol, as in libsvm (so that
examples shrunk too early come back before the end), and again when the
working set looks converged, where the full KKT check decides.

Focus (a two-level working set, fast path, while the cache has room): while
cold visits are paused (they do not pay, as on letter) and the working set
holds at least 4·FOCUS_MIN (128) examples, its most violating quarter (at most
FOCUS_SIZE, 1024) is solved alone -- the passes visit only them -- until their
largest violation has fallen to FOCUS_FRACTION (0.7) of its value at the start;
then the rest of the working set, *parked* meanwhile, gets the focus's β changes
(one Gram row per changed example, a block of rows at a time (``_add_scores``), as
``_rebuild_shrunk`` but from the changes only) and is refreshed, and one iteration runs over the whole working set before the next
focus.  A pass costs O(focus) instead of O(working set), in the tail too
(quarters down to 128).  usps, where cold visits pay, does not focus (same
iterates); mnist10k-cs does.
Solving the focus to a tolerance with the parked examples' scores held fixed
(ThunderSVM's two-level decomposition, one BLAS-3 update of the rest per
outer iteration) was tried and not kept: where the mean kernel value is
large (letter), each block's solve pulls its class totals against the fixed
rest and the next block undoes it (``benchmarks/README.md``, "Where the steps go").

Memory layout.  What a pass reads of an example is one 128-byte record
(``Example``): as separate arrays it would cost a cache line per field and
visit.

Stopping: max violation ≤ tol over all examples.  Variables within
1e-14·C of zero are snapped to zero and group sums within 1e-12·C of C count
as full (both far inside the 1e-8·C tolerances of the diagnostics, so the
diagnostics' KKT violation never exceeds the solver's).
"""

cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from msvm._core._kernel_cache cimport PREFETCH_MAX, KernelCache, SCRATCH_ROWS
from msvm._core._steps cimport (
    LazyControl,
    BLOCK_STEPS,
    LAZY_WINDOW_S2DO,
    NuTables,
    _add_slot,
    _block_fraction,
    _cold_below,
    _coupling_row,
    _extremes,
    _gain,
    _has_slot,
    _keep_max,
    _lazy_enable,
    _lazy_tick,
    _member,
    _now,
    _nu_dot,
    _nu_tables,
    _sigma_of,
    _solve_2d,
    _track_max,
    _track_min,
    mask_t,
)

cdef extern from *:
    """
    #define MSVM_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 0)
    #define MSVM_PREFETCHW(p) __builtin_prefetch((const void*)(p), 1, 0)
    """
    void MSVM_PREFETCH(const void* p) noexcept nogil
    void MSVM_PREFETCHW(const void* p) noexcept nogil

# Examples ahead of the one a loop visits whose kernel values, record and score row
# are prefetched (the rows are read at scattered positions: latency-bound).
cdef Py_ssize_t AHEAD = 8

import numpy as np

__all__ = ["MAX_BLOCK_SIZE", "S2DOState"]

# Examples per task of the parallel loops.  The chunks (and the order in which
# their results are combined) do not depend on the number of threads, so a
# run gives the same iterates with any n_threads.  The per-iteration loops run a
# plain ``range`` on one thread rather than ``prange(use_threads_if=...)``: an OpenMP
# region sets up its team even when it runs on one thread, twice per iteration.
cdef Py_ssize_t CHUNK = 256

# Thread tuning (see S2DOState._tune): iterations per timed window, and
# iterations run with the faster setting before timing both again.
cdef long long TUNE_WINDOW = 256
cdef long long TUNE_COMMIT = 8192

# The parallel-region probe (regions_slow): regions timed, and the serial pause
# before each, about the serial work between two regions of the loop.
cdef int REGION_PROBES = 4
cdef double REGION_PAUSE = 5e-6

# Lazy refresh: its fraction and control, shared with the online solver, are in
# msvm._core._steps.

# Focus (see S2DOState._enter_focus): a quarter of the working set, at most
# FOCUS_SIZE and at least FOCUS_MIN examples, solved alone while cold visits are
# paused, until their largest violation is FOCUS_FRACTION of its value at the start.
cdef int FOCUS_SIZE = 1024
cdef int FOCUS_MIN = 128
cdef double FOCUS_FRACTION = 0.7

# The first unshrinking, before convergence (see S2DOState.run): examples shrunk
# too early would otherwise come back only after the working set had converged.
cdef double UNSHRINK_EARLY = 10.0

# Iterations between shrinking checks.  libsvm checks every 1000 of its 2-variable
# steps; an iteration here is a pass holding several steps, and where few examples
# end as support vectors (low-dimensional sets) the passes over examples that could
# have been shrunk long before were most of the time.  A check costs about a pass.
cdef long long SHRINK_INTERVAL = 50

# Rows requested from the cache's prefetch at a miss (the missing one and the
# most violating examples whose rows are not cached yet): n_features / 8, from
# PREFETCH_MIN to the cache's PREFETCH_MAX.  A block of rows reads X once, which pays on
# long rows; on short ones the extra rows are mostly never used.
cdef Py_ssize_t PREFETCH_MIN = 8

# Examples of a block at most: the working set's two plus leaders of the last
# pass (see S2DOState._solve_block); their Gram rows must stay valid together.
cdef enum:
    BLOCK_MAX = SCRATCH_ROWS
MAX_BLOCK_SIZE = BLOCK_MAX

# Gram rows of one block of _add_scores at most, from a cache whose rows stay valid
# together beyond BLOCK_MAX (KernelCache.keeps_rows); more rows per block mean fewer
# visits of each target example.
cdef enum:
    SCORE_ROWS_MAX = 32

# stale[e]: 0 exact; BOUND: some extreme kept at the value of a slot that moved
# away (still a one-sided bound, updated incrementally); COLD: the extremes
# missed whole steps (rescanned before use).
cdef enum:
    BOUND = 1
    COLD = 2

# Example.inwork: 1 in the working set, 0 shrunk, PARKED outside the focus.
cdef enum:
    PARKED = 2

# Return codes of run().
cdef enum:
    CONVERGED = 0
    MAX_ITER = 1
    TIME_UP = 2




# The per-example state, one 128-byte record per example (two cache lines): a
# visit of the pass reads and writes nearly all of it, and as separate arrays
# it cost one cache line per field (~20 per visit), more than the cores' L2
# caches hold on a large problem.
cdef struct Example:
    # Fast path (module docstring): σ_e and the extremes of h_e· (over the slots
    # that may increase, those with α > 0, all) with their slots.
    double sigma
    double hup
    double hdn
    double hall
    # The largest violation (an upper bound while stale) and its slot(s).
    double viol
    # The offer as second variable (see _fast_violation): its best single slot as
    # an index y·P + s into a row of M (−1: none), its gradient and H diagonal.
    double cand_g
    double cand_h
    double pad0              # (pad0, pad1: 128 bytes in all, see _allocate_examples)
    # Slot bitmasks (bit s = slot s; P <= 64, else see S2DOState.xmask): the slots
    # that may increase and those with α > 0.  They change only with α, so the hot
    # loops read 16 bytes instead of α and the group sums.
    mask_t upmask
    mask_t posmask
    int aup
    int adn
    int aall
    int wp
    int wq
    int cand_idx
    int bslot                # position in the block, -1 outside
    int y
    unsigned char stale      # 0, BOUND or COLD
    unsigned char inwork     # in the working set (not shrunk)
    unsigned char pad1[14]


cdef inline int _position(const int* a, int n, int v) noexcept nogil:
    """Index of v among a[0..n), or n if absent (the slot it would be appended at)."""
    cdef int j
    for j in range(n):
        if a[j] == v:
            return j
    return n


cdef inline void _prefetch_scatter(Py_ssize_t x, double* Fx, int nb,
                                   const double** rows) noexcept nogil:
    """Prefetch what _scatter reads and writes for example x: its kernel values in
    the block's nb rows and its score row Fx."""
    cdef int t
    for t in range(nb):
        MSVM_PREFETCH(&rows[t][x])
    MSVM_PREFETCHW(Fx)


cdef inline double _scatter(Py_ssize_t e, double* Fe, double* Se, int nb,
                           const double** rows, const double* dS, int nc, const int* col,
                           const int* start, const int* row, const double* w) noexcept nogil:
    """F_e += Σ_t Δβ_t K(x_t, x_e) over the nb rows t of a block, on the changed
    columns col[j] (the deltas packed by column, see S2DOState._pack_deltas), and
    S_e += Σ_t ΔS_t K(x_t, x_e) unless Se is NULL; returns max_c |ΔF_ec|."""
    cdef double kt[SCORE_ROWS_MAX]
    cdef double d, dmax = 0.0
    cdef int t, j, k
    for t in range(nb):
        kt[t] = rows[t][e]
    for j in range(nc):
        # Each column's terms summed in a register: scattering them row by row
        # into F stalls on store-to-load forwarding.
        d = 0.0
        for k in range(start[j], start[j + 1]):
            d = d + w[k] * kt[row[k]]
        Fe[col[j]] += d
        if fabs(d) > dmax:
            dmax = fabs(d)
    if Se != NULL:
        d = 0.0
        for t in range(nb):
            d = d + dS[t] * kt[t]
        Se[0] += d
    return dmax


cdef double _kth_largest(double* v, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The k-th largest of v[0..n) (1 <= k <= n; v is reordered): quickselect."""
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, want = k - 1
    cdef double pivot, x
    while lo < hi:
        pivot = v[(lo + hi) // 2]
        i = lo
        j = hi
        while i <= j:
            while v[i] > pivot:
                i += 1
            while v[j] < pivot:
                j -= 1
            if i <= j:
                x = v[i]
                v[i] = v[j]
                v[j] = x
                i += 1
                j -= 1
        if want <= j:
            hi = j
        elif want >= i:
            lo = i
        else:
            break
    return v[want]


@cython.final
cdef class S2DOState:
    """Working state of one S2DO run (built by :mod:`msvm.solvers.s2do`).

    Parameters
    ----------
    kc : KernelCache
        Gram rows of the training points.
    y : int64 array (m,)
        Labels 0..Q−1.
    alpha : float64 array (m, P)
        Feasible starting point (modified in place: it is the solution).
    M : float64 array (Q·P, Q·P) or None
        M(y,p ; y',q) = Σ_c ν̄_{y,p,c} ν̄_{y',q,c} at [y·P+p, y'·P+q]; None: its rows
        are computed from ν's non-zeros.
    Mdiag : float64 (Q, P)
        M's diagonal.
    gamma : float64 (Q, P)
    active : uint8 (Q, P)
    slack : int32 (Q, P)
        Slack group of each slot, −1 for no upper bound (or inactive).
    group_size : int32 (Q, R)
        Number of active slots of each slack group.
    nz_count : int32 (Q, P); nz_col : int32 (Q, P, K); nz_val : float64 (Q, P, K)
        Non-zeros of the uncentred ν_{y,p,·}.
    nu_mean : float64 (Q, P)
        mean_c ν_{y,p,c} for sum-to-zero machines, else zeros.
    nu_col_start, nu_col_row, nu_col_val : int32, int32, float64
        The non-zeros of ν by column (:class:`msvm.solvers._common.MachineTables`).
    C : float64 (m,)
        Capacity C_i of every slack group of example i (+inf: no upper bound).
    shift : float64 (m,)
        Kernel diagonal shift of every example (1/(2C w_i) for the M-SVM², else 0).
    tol : float
    shrinking : bool
    """

    cdef KernelCache kc
    cdef Py_ssize_t m, P, Q, R
    cdef const double[::1] C       # per-example capacity C_i
    cdef const double[::1] shift   # per-example kernel shift
    cdef double[::1] lim           # C_i − eps_cap_i: a group at or above it is full
    cdef double[::1] eps_zero      # new values below it snap to 0
    cdef bint has_shift
    cdef public double tol      # stopping threshold (settable between runs)
    cdef bint centred, max_loss, shrinking
    cdef const Py_ssize_t[::1] y
    cdef double[:, ::1] alpha
    cdef double[:, ::1] F
    cdef double[:, ::1] G
    cdef double[:, ::1] gsum
    cdef double[::1] S
    cdef double[::1] kdiag
    cdef Py_ssize_t[::1] work_idx
    cdef const double[:, ::1] M     # the (QP)² coupling table, or None (has_M false)
    cdef const double[:, ::1] Mdiag
    # ν's non-zeros by row and by column (nu_tables, pointing into nu_keep): the generic
    # gradients and, without the table, the last row of M computed (_mrow) and its row
    # index y·P + p (−1: none yet).
    cdef bint has_M
    cdef double[::1] mrow
    cdef Py_ssize_t mrow_of
    cdef NuTables nu_tables
    cdef tuple nu_keep
    cdef const double[:, ::1] gamma
    cdef const unsigned char[:, ::1] active
    cdef const int[:, ::1] slack
    cdef const int[:, ::1] group_size
    cdef const int[:, ::1] nz_count
    cdef const int[:, :, ::1] nz_col
    cdef const double[:, :, ::1] nz_val
    cdef const double[:, ::1] nu_mean

    # Fast path (machines with ν_{y,s,·} = u_y − e_s, slot s <-> column s: WW, CS,
    # LLW, M-SVM²): g_es = σ_e + h_es with σ_e = u_y·F_e − κ_y S_e and
    # h_es = −F_es − γ_ys; per example the extremes of h are cached.
    cdef bint fast
    cdef const int[::1] u_cnt
    cdef const int[:, ::1] u_col
    cdef const double[:, ::1] u_val
    cdef const double[::1] kappa
    # Cold examples (module docstring, _lazy_control): the threshold of the current
    # pass, the user's switch, the on/off state and its counters (per chunk, per
    # window, total).
    cdef double cold_below
    cdef LazyControl lazy
    cdef readonly long long n_cold, n_rescan
    cdef long long* ccold
    cdef long long* crescan
    # Slot bitmasks of mask_words = ⌈P/64⌉ words: per class its active slots, and
    # with P > 64 per example the masks of Example.upmask / posmask (up words, then
    # pos words; _up_words / _pos_words).
    cdef Py_ssize_t mask_words
    cdef const mask_t[:, ::1] actmask
    cdef mask_t[:, ::1] xmask
    # Per example, everything a pass reads (see Example).
    cdef Example* ex
    cdef void* ex_block     # the allocation ex lies in (aligned on a cache line)

    # The block (see _solve_block): its examples, their Gram rows, K' among them
    # (BLOCK_MAX × BLOCK_MAX) and per block example its row of β deltas with the
    # list of changed columns and their sum (positions in the block: Example.bslot).
    # The arrays of rows hold SCORE_ROWS_MAX: _add_scores's blocks may be wider.
    cdef int nblk
    cdef Py_ssize_t blk[SCORE_ROWS_MAX]
    cdef const double* brow[SCORE_ROWS_MAX]
    cdef double bK[BLOCK_MAX * BLOCK_MAX]
    cdef double* dbeta      # SCORE_ROWS_MAX × Q
    cdef int* dcols         # SCORE_ROWS_MAX × Q
    cdef int ncols[SCORE_ROWS_MAX]
    cdef double dS[SCORE_ROWS_MAX]
    # The leaders of the last pass's chunks, most violating first (block candidates).
    cdef Py_ssize_t lead[BLOCK_MAX]
    cdef int n_lead
    # Scratch (per-group extremes).
    cdef double* gdown
    cdef double* gmin
    cdef Py_ssize_t* adown
    cdef Py_ssize_t* amin
    cdef Py_ssize_t n_fetch         # rows per prefetch (PREFETCH_MIN..PREFETCH_MAX)
    cdef Py_ssize_t* fetch_rows     # n_fetch
    cdef double* fetch_viol         # n_fetch

    # Parallel fast path: threads, working-set flags, per-chunk results and the
    # read-only inputs of one pass / one selection (set before the parallel loop).
    cdef readonly int n_threads          # set by set_threads
    cdef public bint tune_threads
    cdef public bint slow_regions        # the tuning times one thread first (set_threads)
    cdef int cur_threads
    cdef int tune_phase
    cdef long long tune_count
    cdef double tune_t0
    cdef double tune_cost           # seconds of the last serial window
    cdef double tune_rate           # ... per visited example
    cdef long long tune_v0          # n_visits at the start of a timed window
    cdef long long n_visits         # examples refreshed by the passes so far
    cdef int tune_losses
    cdef readonly long long n_parallel_iter
    cdef double* cbest
    cdef Py_ssize_t* cidx
    cdef Py_ssize_t* cslot
    cdef int* pcol          # changed columns of F (Q)
    cdef int pnc
    # Per changed column u, the block's non-zero β deltas on it: the pairs
    # (prow[k], pw[k]) for k in [pstart[u], pstart[u + 1]).
    cdef int* pstart        # Q + 1
    cdef int* prow          # SCORE_ROWS_MAX × Q
    cdef double* pw         # SCORE_ROWS_MAX × Q
    cdef const double* pKi
    cdef bint prescan_all
    # The first variable of the second-variable search (_first_variable).
    cdef Py_ssize_t si, sp
    cdef double sg1, sh11, sKii
    cdef const double* sMrow

    cdef readonly Py_ssize_t n_work
    cdef readonly long long n_iter
    cdef readonly long long n_steps
    cdef public bint block_steps
    cdef public int block_size
    cdef public bint prefetch  # compute missing Gram rows in blocks (_fetch)
    cdef public Py_ssize_t complete_at  # rows cached at which _fetch computes all the rest (0: never)
    cdef public bint slot_partner  # sum-to-zero: offer the first variable's slot too
    cdef Py_ssize_t sel_chunks     # chunks of this step's second-variable search (0: none)
    cdef readonly long long n_unshrink
    cdef readonly double max_violation
    cdef Py_ssize_t next_i, next_p, next_q
    cdef public long long shrink_interval
    cdef public double shrink_margin
    cdef long long since_shrink
    # Fast path while the cache has room: the passes skip the shrunk examples,
    # whose rows of F and S are rebuilt from α when needed.
    cdef bint defer_shrunk
    cdef bint shrunk_stale
    cdef bint pass_work       # this pass visits the working set only
    # Focus (see _enter_focus): the working set's most violating examples (a quarter
    # of it, from focus_min to focus_size examples) are solved alone; the rest of it
    # is parked (inwork = PARKED).  focus_size = 0 turns it off.
    cdef public int focus_size
    cdef public int focus_min
    cdef public double focus_fraction
    cdef bint focus_on
    cdef Py_ssize_t* saved_work
    cdef Py_ssize_t* targets    # examples receiving _add_scores's changes (m)
    cdef Py_ssize_t n_saved
    cdef double* alpha0
    cdef double focus_target
    cdef long long focus_left_at
    cdef readonly long long n_focus
    cdef double* vsort
    # J(α), exact when computed from F, then changed by each step's exact ΔJ (what
    # objective() returns while shrunk examples' scores wait).
    cdef double tracked_J

    # Cython starts every C attribute at 0/NULL, so __dealloc__ may free whatever
    # __init__ reached (free(NULL) is a no-op).
    def __dealloc__(self):
        free(self.ex_block)
        free(self.saved_work)
        free(self.targets)
        free(self.alpha0)
        free(self.vsort)
        free(self.dbeta)
        free(self.dcols)
        free(self.gdown)
        free(self.gmin)
        free(self.adown)
        free(self.amin)
        free(self.cbest)
        free(self.cidx)
        free(self.cslot)
        free(self.ccold)
        free(self.crescan)
        free(self.pcol)
        free(self.pstart)
        free(self.prow)
        free(self.pw)
        free(self.fetch_rows)
        free(self.fetch_viol)

    def __init__(self, KernelCache kc, y, alpha, M, Mdiag, gamma, active, slack, group_size,
                 nz_count, nz_col, nz_val, nu_mean, nu_col_start, nu_col_row, nu_col_val,
                 const double[::1] C,
                 const double[::1] shift, double tol,
                 bint centred, bint shrinking=True, fast=None, int n_threads=1):
        cdef Py_ssize_t i, n_chunks
        self.tune_threads = True
        self.n_parallel_iter = 0
        self.kc = kc
        self.set_threads(n_threads)
        self.y = y
        self.alpha = alpha
        self.m = alpha.shape[0]
        self.P = alpha.shape[1]
        self.Q = gamma.shape[0]
        self.R = max(int(group_size.shape[1]), 1)
        self.nu_keep = _nu_tables(&self.nu_tables, self.Q, self.P, nz_count, nz_col, nz_val,
                                  nu_mean, nu_col_start, nu_col_row, nu_col_val)
        self.has_M = M is not None
        self.Mdiag = Mdiag
        if self.has_M:
            self.M = M
        else:
            # Rows of M from ν's non-zeros (_coupling_row): O(Q²) memory instead of O(Q⁴).
            self.mrow = np.zeros(self.Q * self.P)
            self.mrow_of = -1
        self.gamma = gamma
        self.active = active
        self.slack = slack
        self.group_size = group_size
        self.max_loss = bool(np.any(np.asarray(group_size) > 1))
        self.nz_count = nz_count
        self.nz_col = nz_col
        self.nz_val = nz_val
        self.nu_mean = nu_mean
        if C.shape[0] != self.m or shift.shape[0] != self.m:
            raise ValueError("C and shift need one entry per example.")
        self.C = C
        self.shift = shift
        self.has_shift = bool(np.any(np.asarray(shift) != 0))
        self.tol = tol
        self.centred = centred
        self.shrinking = shrinking
        # Round-off thresholds relative to each example's own capacity.
        cap = np.asarray(C)
        self.eps_zero = 1e-14 * np.where(np.isfinite(cap), cap, 1.0)
        with np.errstate(invalid="ignore"):   # inf − inf where there is no upper bound
            self.lim = np.where(np.isfinite(cap), cap - 1e-12 * cap, np.inf)
        self.F = np.zeros((self.m, self.Q))
        self.G = np.zeros((self.m, self.P))
        self.gsum = np.zeros((self.m, self.R))
        self.S = np.zeros(self.m)
        self.kdiag = np.zeros(self.m)
        for i in range(self.m):
            self.kdiag[i] = kc.diag(i)
        self.work_idx = np.arange(self.m, dtype=np.intp)
        self._allocate_examples()
        self.fast = fast is not None
        if self.fast:
            self.u_cnt = fast["u_cnt"]
            self.u_col = fast["u_col"]
            self.u_val = fast["u_val"]
            self.kappa = fast["kappa"]
        self.cold_below = -1.0
        _lazy_enable(&self.lazy, True, LAZY_WINDOW_S2DO)
        if self.fast:
            self.mask_words = (self.P + 63) // 64
            bits = np.zeros((self.Q, self.mask_words * 64), dtype=np.uint64)
            bits[:, :self.P] = active
            self.actmask = (bits.reshape(self.Q, self.mask_words, 64)
                            << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
            self.xmask = np.zeros((self.m, 2 * self.mask_words if self.mask_words > 1 else 0),
                                  dtype=np.uint64)
        self.n_work = self.m
        n_chunks = (self.m + CHUNK - 1) // CHUNK
        self.cbest = <double*>malloc(n_chunks * sizeof(double))
        self.cidx = <Py_ssize_t*>malloc(n_chunks * sizeof(Py_ssize_t))
        self.cslot = <Py_ssize_t*>malloc(n_chunks * sizeof(Py_ssize_t))
        self.ccold = <long long*>malloc(n_chunks * sizeof(long long))
        self.crescan = <long long*>malloc(n_chunks * sizeof(long long))
        self.pcol = <int*>malloc(self.Q * sizeof(int))
        self.pstart = <int*>malloc((self.Q + 1) * sizeof(int))
        self.prow = <int*>malloc(SCORE_ROWS_MAX * self.Q * sizeof(int))
        self.pw = <double*>malloc(SCORE_ROWS_MAX * self.Q * sizeof(double))
        if (self.cbest == NULL or self.cidx == NULL or self.cslot == NULL or self.pcol == NULL
                or self.ccold == NULL or self.crescan == NULL
                or self.pstart == NULL or self.prow == NULL or self.pw == NULL):
            raise MemoryError()
        self.shrink_interval = SHRINK_INTERVAL
        self.shrink_margin = 1.0
        self.dbeta = <double*>malloc(SCORE_ROWS_MAX * self.Q * sizeof(double))
        self.dcols = <int*>malloc(SCORE_ROWS_MAX * self.Q * sizeof(int))
        self.gdown = <double*>malloc(self.R * sizeof(double))
        self.gmin = <double*>malloc(self.R * sizeof(double))
        self.adown = <Py_ssize_t*>malloc(self.R * sizeof(Py_ssize_t))
        self.amin = <Py_ssize_t*>malloc(self.R * sizeof(Py_ssize_t))
        self.n_fetch = min(max(kc.n_features // 8, PREFETCH_MIN), PREFETCH_MAX)
        self.fetch_rows = <Py_ssize_t*>malloc(self.n_fetch * sizeof(Py_ssize_t))
        self.fetch_viol = <double*>malloc(self.n_fetch * sizeof(double))
        if (self.dbeta == NULL or self.dcols == NULL or self.gdown == NULL
                or self.gmin == NULL or self.adown == NULL or self.amin == NULL
                or self.fetch_rows == NULL or self.fetch_viol == NULL):
            raise MemoryError()
        memset(self.dbeta, 0, SCORE_ROWS_MAX * self.Q * sizeof(double))
        self.nblk = 0
        self.n_lead = 0
        self.block_steps = False
        self.block_size = BLOCK_MAX
        self.prefetch = True
        self.complete_at = 0
        self.slot_partner = False
        self.sel_chunks = 0
        self.defer_shrunk = self.fast   # until the cache fills up (_stop_deferring)
        self.shrunk_stale = False
        self.pass_work = False
        self.focus_on = False
        self.focus_size = FOCUS_SIZE
        self.focus_min = FOCUS_MIN
        self.focus_fraction = FOCUS_FRACTION
        self.focus_left_at = -1
        self.n_focus = 0
        self.saved_work = <Py_ssize_t*>malloc(self.m * sizeof(Py_ssize_t))
        self.targets = <Py_ssize_t*>malloc(self.m * sizeof(Py_ssize_t))
        self.vsort = <double*>malloc(self.m * sizeof(double))
        self.alpha0 = <double*>malloc(self.m * self.P * sizeof(double))
        if (self.saved_work == NULL or self.targets == NULL or self.vsort == NULL
                or self.alpha0 == NULL):
            raise MemoryError()
        with nogil:
            self._initialise()
        self.tracked_J = self.objective()

    cdef void _allocate_examples(self) except *:
        cdef Py_ssize_t e
        # Two whole cache lines per record (malloc + rounding up: aligned_alloc and
        # posix_memalign are not everywhere).
        assert sizeof(Example) == 128
        self.ex_block = malloc(self.m * sizeof(Example) + 64)
        if self.ex_block == NULL:
            raise MemoryError()
        self.ex = <Example*>((<size_t>self.ex_block + 63) & ~(<size_t>63))
        memset(self.ex, 0, self.m * sizeof(Example))
        for e in range(self.m):
            self.ex[e].aup = self.ex[e].adn = self.ex[e].aall = -1
            self.ex[e].wp = self.ex[e].wq = -1
            self.ex[e].cand_idx = -1
            self.ex[e].bslot = -1
            self.ex[e].y = <int>self.y[e]
            self.ex[e].inwork = 1

    # ------------------------------------------------------------ per example
    cdef void _group_sums(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t y = self.y[e], q
        cdef int r
        for r in range(self.R):
            self.gsum[e, r] = 0.0
        for q in range(self.P):
            r = self.slack[y, q]
            if r >= 0:
                self.gsum[e, r] += self.alpha[e, q]
        if self.fast:
            self._masks(e)

    cdef void _masks(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t y = self.y[e], s, w
        cdef int r
        cdef mask_t* up = self._up_words(e)
        cdef mask_t* pos = self._pos_words(e)
        cdef double lim = self.lim[e]
        for w in range(self.mask_words):
            up[w] = 0
            pos[w] = 0
        for s in range(self.P):
            if not self.active[y, s]:
                continue
            r = self.slack[y, s]
            if r < 0 or self.gsum[e, r] < lim:
                _add_slot(up, s)
            if self.alpha[e, s] > 0:
                _add_slot(pos, s)

    cdef inline mask_t* _up_words(self, Py_ssize_t e) noexcept nogil:
        """The mask of e's slots that may increase (mask_words words)."""
        return &self.ex[e].upmask if self.mask_words == 1 else &self.xmask[e, 0]

    cdef inline mask_t* _pos_words(self, Py_ssize_t e) noexcept nogil:
        """The mask of e's slots with α > 0 (mask_words words)."""
        return &self.ex[e].posmask if self.mask_words == 1 \
            else &self.xmask[e, self.mask_words]

    cdef inline bint _may_move(self, Py_ssize_t e, Py_ssize_t s, double g) noexcept nogil:
        """Whether e's variable of slot s may move against its gradient g."""
        return (g < 0 and _has_slot(self._up_words(e), s)) or \
            (g > 0 and _has_slot(self._pos_words(e), s))

    cdef void _gradient(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t y = self.y[e], q
        cdef double g
        for q in range(self.P):
            if not self.active[y, q]:
                continue
            g = _nu_dot(&self.nu_tables, y * self.P + q, &self.F[e, 0], -self.gamma[y, q])
            if self.centred:
                g -= self.nu_mean[y, q] * self.S[e]
            self.G[e, q] = g

    cdef double _violation(self, Py_ssize_t e, double margin) noexcept nogil:
        """Largest violation of example e; sets wp[e], wq[e].

        With margin > 0, returns instead the largest 'near violation'
        (violations + margin): used by shrinking to keep examples whose
        variables are close to switching.
        """
        cdef Py_ssize_t y = self.y[e], q
        cdef Py_ssize_t bp = -1, bq = -1
        cdef int r
        cdef double best = 0.0, g, a
        cdef double lim = self.lim[e]
        cdef bint canup
        if self.max_loss:
            for r in range(self.R):
                self.gdown[r] = -INFINITY
                self.gmin[r] = INFINITY
                self.adown[r] = -1
                self.amin[r] = -1
        for q in range(self.P):
            if not self.active[y, q]:
                continue
            g = self.G[e, q]
            a = self.alpha[e, q]
            r = self.slack[y, q]
            canup = r < 0 or self.gsum[e, r] < lim
            _keep_max(margin - g if canup else -INFINITY, q, &best, &bp)
            _keep_max(g + margin if a > 0 else -INFINITY, q, &best, &bp)
            if r >= 0 and self.group_size[y, r] > 1:
                if a > 0 and g > self.gdown[r]:
                    self.gdown[r] = g
                    self.adown[r] = q
                if g < self.gmin[r]:
                    self.gmin[r] = g
                    self.amin[r] = q
        if self.max_loss:
            for r in range(self.R):
                if self.adown[r] >= 0 and self.adown[r] != self.amin[r] and \
                        self.gdown[r] - self.gmin[r] + margin > best:
                    best = self.gdown[r] - self.gmin[r] + margin
                    bp = self.adown[r]
                    bq = self.amin[r]
        if margin == 0:
            self.ex[e].wp = bp
            self.ex[e].wq = bq
        return best

    cdef void _refresh(self, Py_ssize_t e) noexcept nogil:
        if self.fast:
            self._sigma(e)
            self._rescan(e)
            self._fast_violation(e)
        else:
            self._gradient(e)
            self.ex[e].viol = self._violation(e, 0.0)

    # ------------------------------------------------------------ fast path
    cdef inline double _grad(self, Py_ssize_t e, Py_ssize_t s) noexcept nogil:
        if self.fast:
            return self.ex[e].sigma - self.F[e, s] - self.gamma[self.y[e], s]
        return self.G[e, s]

    cdef inline void _sigma(self, Py_ssize_t e) noexcept nogil:
        cdef Py_ssize_t y = self.y[e]
        self.ex[e].sigma = _sigma_of(&self.F[e, 0], self.u_cnt[y], &self.u_col[y, 0],
                                     &self.u_val[y, 0],
                                     self.kappa[y] * self.S[e] if self.centred else 0.0)

    cdef void _rescan(self, Py_ssize_t e) noexcept nogil:
        """Extremes of h_e· over the slots that may increase / decrease / all."""
        cdef Py_ssize_t y = self.y[e]
        cdef Example* x = &self.ex[e]
        _extremes(&self.F[e, 0], &self.gamma[y, 0], self.P, &self.actmask[y, 0],
                  self._up_words(e), self._pos_words(e), &x.hup, &x.aup, &x.hdn, &x.adn,
                  &x.hall, &x.aall)
        x.stale = 0

    cdef inline double _fast_best(self, Py_ssize_t e, double margin, Py_ssize_t* bp,
                                  Py_ssize_t* bq) noexcept nogil:
        """Largest violation of e from σ_e and the cached extremes, and its slot(s)
        (bq ≥ 0: a pair of the max-loss slack group), as in :meth:`_violation`:
        −g of a slot that may increase (−σ − hup), g of a slot with α > 0 (σ + hdn),
        and the move of mass from the highest positive slot to the lowest other one.
        With margin > 0, violations + margin (shrinking's 'near' test)."""
        cdef double v = 0.0, w, low
        cdef double sg = self.ex[e].sigma, hd = self.ex[e].hdn
        cdef Py_ssize_t ad = self.ex[e].adn, au = self.ex[e].aup, low_slot
        bp[0] = -1
        bq[0] = -1
        _keep_max(margin - sg - self.ex[e].hup if au >= 0 else -INFINITY, au, &v, bp)
        if ad < 0:
            return v
        _keep_max(sg + hd + margin, ad, &v, bp)
        if not self.max_loss:
            return v
        # (Stale extremes may name the same slot with different values: still a bound.)
        if self.ex[e].aall != ad or self.ex[e].stale:
            low = self.ex[e].hall
            low_slot = self.ex[e].aall
        elif margin > 0:
            low = self._lowest_h_but(e, ad)
            low_slot = -1
        else:
            return v        # the positive slot is the lowest: no move of mass violates
        w = hd - low + margin
        if w > v:
            v = w
            bp[0] = ad
            bq[0] = low_slot
        return v

    cdef inline void _fast_violation(self, Py_ssize_t e) noexcept nogil:
        """viol[e] and its slot(s) from σ_e and the cached extremes; then e's offer."""
        cdef double sg = self.ex[e].sigma, g2
        cdef Py_ssize_t bp, bq, s = -1, ye = self.y[e]
        cdef bint stale = self.ex[e].stale
        cdef double vu, vd
        self.ex[e].viol = self._fast_best(e, 0.0, &bp, &bq)
        self.ex[e].wp = bp
        self.ex[e].wq = bq
        # e's offer as second variable: its most violating single slot.
        vu = -sg - self.ex[e].hup if self.ex[e].aup >= 0 else -INFINITY
        vd = sg + self.ex[e].hdn if self.ex[e].adn >= 0 else -INFINITY
        s = self.ex[e].adn if vd > 0 else -1
        s = self.ex[e].aup if (vu > 0) & (vu >= vd) else s
        if s >= 0:
            g2 = sg - self.F[e, s] - self.gamma[ye, s]
            # Stale extremes: check that the slot really can move.
            if not stale or self._may_move(e, s, g2):
                self.ex[e].cand_g = g2
                self.ex[e].cand_h = self.Mdiag[ye, s] * (self.kdiag[e] + self.shift[e])
                self.ex[e].cand_idx = <int>(ye * self.P + s)
                return
        self.ex[e].cand_idx = -1

    cdef void _find_max(self) noexcept nogil:
        """The largest violation over the working set (exact: a stale example, whose
        viol is an upper bound, is rescanned when its bound beats the exact ones)."""
        cdef Py_ssize_t t, e, best_e = -1
        cdef double best = -1.0
        for t in range(self.n_work):   # exact values first ...
            e = self.work_idx[t]
            if self.ex[e].viol > best and not (self.fast and self.ex[e].stale):
                best = self.ex[e].viol
                best_e = e
        if self.fast:
            for t in range(self.n_work):   # ... then the bounds that beat them
                e = self.work_idx[t]
                if self.ex[e].stale and self.ex[e].viol > best:
                    self._rescan(e)
                    self._fast_violation(e)
                    if self.ex[e].viol > best or (self.ex[e].viol == best and e < best_e):
                        best = self.ex[e].viol
                        best_e = e
        self.max_violation = best if best > 0 else 0.0
        self.next_i = best_e if best > 0 else -1
        if self.next_i >= 0:
            self.next_p = self.ex[best_e].wp
            self.next_q = self.ex[best_e].wq

    # ----------------------------------------------------------- initialise
    cdef void _initialise(self) noexcept nogil:
        """F = K'β and S from α, then every example's violation."""
        cdef Py_ssize_t e
        self._add_scores(-1, NULL, self.m, NULL)
        for e in range(self.m):
            self._group_sums(e)
            self._refresh(e)
        self._find_max()

    cdef void _rebuild_shrunk(self) noexcept nogil:
        """F and S of the shrunk examples from α, after passes that skipped them.

        As libsvm's gradient reconstruction: nSV·(shrunk examples) multiply-adds
        per column of β, against (passes since the shrink)·(shrunk examples)·(changed
        columns) for keeping them up to date.
        """
        cdef Py_ssize_t e, c
        if not self.shrunk_stale:
            return
        for e in range(self.m):
            if not self.ex[e].inwork:
                for c in range(self.Q):
                    self.F[e, c] = 0.0
                self.S[e] = 0.0
        self._add_scores(0, NULL, self.m, NULL)
        self.shrunk_stale = False

    cdef void _add_scores(self, int to, const Py_ssize_t* rows, Py_ssize_t n_rows,
                          const double* base) noexcept nogil:
        """F += K'β and S += K'(β row sums) on the examples whose ``inwork`` is ``to``
        (all if to < 0), from the rows i = rows[t] (t < n_rows; rows NULL: i = t) of β,
        or of β − β(base) with base[t·P + q] the earlier α_iq.

        One Gram row per such i with a non-zero row, taken BLOCK_MAX (SCORE_ROWS_MAX
        from a cache that keeps its rows) at a time as a block (no block is open
        here): each target example then gets the block's summed deltas in one visit,
        as in the pass (one visit per row would read the example's F row BLOCK_MAX
        times as often; commit 4f5e257 has the measurement).
        """
        cdef Py_ssize_t i, e, q, y, t, n_tgt = 0
        cdef int width = SCORE_ROWS_MAX if self.kc.keeps_rows() else BLOCK_MAX
        cdef double a
        for e in range(self.m):
            if self._receives(e, to):
                self.targets[n_tgt] = e
                n_tgt += 1
        if n_tgt == 0:
            return
        for t in range(n_rows):
            i = rows[t] if rows != NULL else t
            if not self._changed(i, base + t * self.P if base != NULL else NULL):
                continue   # its Gram row is not needed
            # A block's row pointers stay valid through cache hits only (through
            # anything in a cache that keeps every row).
            if self.nblk == width or (self.nblk > 0 and not self.kc.keeps_rows()
                                      and not self.kc.cached(i)):
                self._add_block_scores(to, n_tgt)
            y = self.y[i]
            for q in range(self.P):
                a = self.alpha[i, q]
                if base != NULL:
                    a = a - base[t * self.P + q]
                if a != 0 and self.active[y, q]:
                    self._add_delta(self.nblk, y, q, a)
            if self.ncols[self.nblk] > 0:
                self.blk[self.nblk] = i
                self.brow[self.nblk] = self.kc.row_ptr(i)
                self.nblk += 1
        self._add_block_scores(to, n_tgt)

    cdef inline bint _changed(self, Py_ssize_t i, const double* old) noexcept nogil:
        """Whether an active α_iq differs from old[q] (from 0 when old is NULL)."""
        cdef Py_ssize_t q, y = self.y[i]
        for q in range(self.P):
            if self.active[y, q] and self.alpha[i, q] != (old[q] if old != NULL else 0.0):
                return True
        return False

    cdef inline bint _receives(self, Py_ssize_t e, int to) noexcept nogil:
        """Whether example e is a target of _add_scores(to, ...)."""
        return to < 0 or self.ex[e].inwork == to

    cdef void _add_delta(self, int slot, Py_ssize_t y, Py_ssize_t p, double d) noexcept nogil:
        """Δβ of the block row slot += d·ν_{y,p,·} (with its list of changed columns)."""
        cdef Py_ssize_t Q = self.Q
        cdef int k, c
        cdef double v
        cdef int* cols = self.dcols + slot * Q
        for k in range(self.nz_count[y, p]):
            c = self.nz_col[y, p, k]
            v = d * self.nz_val[y, p, k]
            if _position(cols, self.ncols[slot], c) == self.ncols[slot]:
                cols[self.ncols[slot]] = c
                self.ncols[slot] += 1
            self.dbeta[slot * Q + c] += v
            self.dS[slot] += v

    cdef void _add_block_scores(self, int to, Py_ssize_t n_tgt) noexcept nogil:
        """The block's deltas times its Gram rows into the targets' F (and S), then
        close the block (see _add_scores)."""
        cdef Py_ssize_t b, e, n_chunks = (n_tgt + CHUNK - 1) // CHUNK
        cdef int t, j, c
        if self.nblk == 0:
            return
        self._pack_deltas()
        if self.n_threads > 1 and n_chunks > 1:
            for b in prange(n_chunks, num_threads=self.n_threads, schedule="static"):
                self._add_chunk(b, n_tgt)
        else:
            for b in range(n_chunks):
                self._add_chunk(b, n_tgt)
        if self.has_shift:   # K' = K + diag(shift): the block's own examples
            for t in range(self.nblk):
                e = self.blk[t]
                if self._receives(e, to):
                    for j in range(self.ncols[t]):
                        c = self.dcols[t * self.Q + j]
                        self.F[e, c] += self.shift[e] * self.dbeta[t * self.Q + c]
                    if self.centred:
                        self.S[e] += self.shift[e] * self.dS[t]
        self._close_block()

    cdef void _add_chunk(self, Py_ssize_t b, Py_ssize_t n_tgt) noexcept nogil:
        """Targets [b·CHUNK, (b+1)·CHUNK) of _add_block_scores."""
        cdef Py_ssize_t u, e, x, u1 = (b + 1) * CHUNK
        cdef double* F = &self.F[0, 0]
        cdef double* S = &self.S[0]
        cdef bint centred = self.centred
        if u1 > n_tgt:
            u1 = n_tgt
        for u in range(b * CHUNK, u1):
            e = self.targets[u]
            if u + AHEAD < u1:
                x = self.targets[u + AHEAD]
                _prefetch_scatter(x, F + x * self.Q, self.nblk, &self.brow[0])
            _scatter(e, F + e * self.Q, S + e if centred else NULL, self.nblk, &self.brow[0],
                     &self.dS[0], self.pnc, self.pcol, self.pstart, self.prow, self.pw)

    # ------------------------------------------------------------ one step
    cdef void _fetch(self, Py_ssize_t e) noexcept nogil:
        """Before row e is requested: if it is missing, compute it in one block with
        the rows of the most violating examples not cached yet (the likely next
        working sets; the cache decides how many, see KernelCache.prefetch), or, once
        complete_at rows are cached, every row still missing (KernelCache.complete).
        No row pointer is held here: a full cache evicts for the block."""
        cdef Py_ssize_t t, u, x, n = 1
        cdef double v
        if not self.prefetch or self.kc.cached(e) or not self.kc.can_prefetch():
            return
        if 0 < self.complete_at <= self.kc.rows_used():
            self.complete_at = 0
            self.kc.complete_all()
            if self.kc.cached(e):
                return
        self.fetch_rows[0] = e
        self.fetch_viol[0] = INFINITY
        for t in range(self.n_work):   # insertion into the top n_fetch by violation
            x = self.work_idx[t]
            v = self.ex[x].viol
            if v <= 0 or x == e or (n == self.n_fetch and v <= self.fetch_viol[n - 1]) \
                    or self.kc.cached(x):
                continue
            if n < self.n_fetch:
                n += 1
            u = n - 1
            while u > 1 and self.fetch_viol[u - 1] < v:
                self.fetch_rows[u] = self.fetch_rows[u - 1]
                self.fetch_viol[u] = self.fetch_viol[u - 1]
                u -= 1
            self.fetch_rows[u] = x
            self.fetch_viol[u] = v
        self.kc.prefetch(self.fetch_rows, n)

    cdef void _step(self) noexcept nogil:
        """One iteration: a working set, its 2-D step(s), then one pass over the examples."""
        cdef Py_ssize_t i = self.next_i, p = self.next_p, k = -1, q = -1
        cdef Py_ssize_t e, t
        cdef const double* Ki = NULL
        cdef double best_gain = -1.0

        self.sel_chunks = 0
        self._fetch(i)
        if self.next_q >= 0:
            # §5.2.1: the pair of one slack group is the working set.
            k = i
            q = self.next_q
        else:
            Ki = self.kc.row_ptr(i)
            if self.fast:
                self._select_fast(i, p, Ki, &k, &q)
            else:
                self._first_variable(i, p)
                for t in range(self.n_work):
                    e = self.work_idx[t]
                    self._partner_in(e, self.sKii if e == i else Ki[e], &best_gain, &k, &q)
        if k >= 0 and k != i:
            self._fetch(k)
        Ki = self.kc.row_ptr(i)
        self._open_block(i, Ki)
        if k >= 0 and k != i:
            self._open_block(k, self.kc.row_ptr(k))
        self._solve_block(i, p, k, q)
        if self.fast:
            self._fast_update()
        else:
            self.n_visits += self.n_work
            for t in range(self.nblk):
                self._update_scores(t)
            for t in range(self.n_work):
                self._refresh(self.work_idx[t])
            self._find_max()
        self._close_block()
        self.n_iter += 1

    cdef void _first_variable(self, Py_ssize_t i, Py_ssize_t p) noexcept nogil:
        """Keep the numbers of the first variable (i, p) that the second-variable
        search reads: its gradient, K'_ii, its H diagonal and its row of M."""
        self.si = i
        self.sp = p
        self.sg1 = self._grad(i, p)
        self.sKii = self.kdiag[i] + self.shift[i]
        self.sh11 = self.Mdiag[self.y[i], p] * self.sKii
        self.sMrow = self._mrow(self.y[i] * self.P + p)

    cdef inline const double* _mrow(self, Py_ssize_t yp) noexcept nogil:
        """The row yp = y·P + p of M: the table's, or computed into mrow (a 2-D step's
        row is mostly the one its second-variable search has just computed)."""
        if self.has_M:
            return &self.M[yp, 0]
        return _coupling_row(&self.nu_tables, &self.mrow[0], &self.mrow_of, yp)

    cdef void _partner_in(self, Py_ssize_t e, double kie, double* best_gain, Py_ssize_t* k,
                          Py_ssize_t* q) noexcept nogil:
        """Algorithm 4 over the variables of example e (exact gradients, any machine):
        the best second variable for the first one (:meth:`_first_variable`; kie =
        K'(x_i, x_e)) among them, if its gain beats best_gain."""
        cdef Py_ssize_t i = self.si, p = self.sp, ye = self.y[e], s, P = self.P
        cdef int r1 = self.slack[self.y[i], p], r2
        cdef double g1 = self.sg1, g2, gn, h22, a
        cdef double h11 = self.sh11
        cdef double lim = self.lim[e]
        cdef const double* Mrow = self.sMrow
        cdef bint movable
        for s in range(P):
            if not self.active[ye, s] or (e == i and s == p):
                continue
            g2 = self._grad(e, s)
            if g2 == 0:
                continue
            r2 = self.slack[ye, s]
            a = self.alpha[e, s]
            if e == i and r1 >= 0 and r2 == r1:
                movable = g2 < 0 or a > 0   # mass moves within the group
            else:
                movable = (g2 < 0 and (r2 < 0 or self.gsum[e, r2] < lim)) or (g2 > 0 and a > 0)
            if not movable:
                continue
            h22 = self.Mdiag[ye, s] * (self.kdiag[e] + self.shift[e])
            gn = _gain(g1, g2, h11, Mrow[ye * P + s] * kie, h22)
            if gn > best_gain[0]:
                best_gain[0] = gn
                k[0] = e
                q[0] = s

    cdef void _open_block(self, Py_ssize_t e, const double* row) noexcept nogil:
        """Add example e (with its Gram row) to the block."""
        cdef int t = self.nblk, u
        self.blk[t] = e
        self.brow[t] = row
        self.ex[e].bslot = t
        for u in range(t):
            self.bK[t * BLOCK_MAX + u] = row[self.blk[u]]
            self.bK[u * BLOCK_MAX + t] = row[self.blk[u]]
        self.bK[t * BLOCK_MAX + t] = self.kdiag[e] + self.shift[e]
        self.nblk += 1

    cdef void _close_block(self) noexcept nogil:
        """Forget the block and its β deltas (after the pass has used them)."""
        cdef int t, j
        cdef double* b
        for t in range(self.nblk):
            b = self.dbeta + t * self.Q
            for j in range(self.ncols[t]):
                b[self.dcols[t * self.Q + j]] = 0.0
            self.ncols[t] = 0
            self.dS[t] = 0.0
            self.ex[self.blk[t]].bslot = -1
        self.nblk = 0

    cdef inline double _kblock(self, Py_ssize_t e, Py_ssize_t f) noexcept nogil:
        """K'(x_e, x_f) for two examples of the block."""
        return self.bK[self.ex[e].bslot * BLOCK_MAX + self.ex[f].bslot]

    cdef void _solve_block(self, Py_ssize_t i, Py_ssize_t p, Py_ssize_t k,
                           Py_ssize_t q) noexcept nogil:
        """The step on (i, p), (k, q), then (with ``block_steps``) more 2-D steps on the
        variables of the block until its largest violation is below _block_fraction() of
        the first variable's (or tol): first variable by violation, second by
        Algorithm 4, both within the block.

        The block is the working set's examples i and k and (fast path, up to
        ``block_size`` examples) the leaders of the last pass's chunks whose Gram rows
        are cached: most violators are far apart, in examples the pair rule would only
        reach one pass at a time.  The block's rows of F and S are updated here (by K'
        among them times each step's β deltas, which add up per example); the pass
        brings the other examples up to date with the summed deltas.
        """
        cdef Py_ssize_t e1 = i, e2 = k, x, n
        cdef int t
        cdef double v, v1, stop, best_gain
        stop = _block_fraction() * self.max_violation
        if stop < self.tol:
            stop = self.tol
        if self.block_steps and self.sel_chunks > 0:
            self._open_partners()
        if self.block_steps:
            for t in range(self.n_lead):
                x = self.lead[t]
                if self.nblk >= self.block_size:
                    break
                if self.ex[x].bslot < 0 and self.ex[x].inwork == 1 and self.kc.cached(x):
                    self._open_block(x, self.kc.row_ptr(x))
        for n in range(BLOCK_STEPS * self.P * self.nblk if self.block_steps else 1):
            if n > 0:
                # The block's own first variable, then its partner within the block.
                v = -1.0
                for t in range(self.nblk):
                    v1 = self._block_violation(self.blk[t])
                    if v1 > v:
                        v = v1
                        e1 = self.blk[t]
                if v <= stop:
                    break
                p = self.ex[e1].wp
                q = self.ex[e1].wq
                e2 = e1
                if q < 0:
                    e2 = -1
                    best_gain = -1.0
                    self._first_variable(e1, p)
                    for t in range(self.nblk):
                        x = self.blk[t]
                        self._partner_in(x, self._kblock(e1, x), &best_gain, &e2, &q)
            self._move(e1, p, e2, q)
            self.n_steps += 1

    cdef void _open_partners(self) noexcept nogil:
        """Sum-to-zero machines with ``slot_partner``: open the block to the best
        second-variable candidates of the chunks of this step's search (best gain
        first) whose Gram rows are cached, before the pass's leaders."""
        cdef Py_ssize_t b, bb, x
        cdef double g
        while self.nblk < self.block_size:
            bb = -1
            g = 0.0
            for b in range(self.sel_chunks):
                x = self.cidx[b]
                if x >= 0 and self.cbest[b] > g and self.ex[x].bslot < 0:
                    g = self.cbest[b]
                    bb = b
            if bb < 0:
                return
            x = self.cidx[bb]
            self.cbest[bb] = -1.0
            if self.ex[x].inwork == 1 and self.kc.cached(x):
                self._open_block(x, self.kc.row_ptr(x))

    cdef double _block_violation(self, Py_ssize_t e) noexcept nogil:
        self._gradient(e)
        if self.fast:
            self._sigma(e)
        return self._violation(e, 0.0)

    cdef void _move(self, Py_ssize_t i, Py_ssize_t p, Py_ssize_t k,
                    Py_ssize_t q) noexcept nogil:
        """The exact 2-D step on (i, p), (k, q) of the block (k < 0: one variable).

        Its β deltas are added to the block's rows of β deltas, and the block's rows
        of F and S get the step's effect at once.
        """
        cdef Py_ssize_t yi = self.y[i], yk
        cdef int r1 = self.slack[yi, p], r2
        cdef double Kii = self.kdiag[i] + self.shift[i]
        cdef double g1 = self._grad(i, p), g2, h11 = self.Mdiag[yi, p] * Kii, h12, h22
        cdef double a1, a2, l1, u1, l2, u2, tcap = 0.0, mu1 = 0.0, mu2 = 0.0, n1, n2, others
        cdef double d1, d2
        cdef bint tri = False

        a1 = self.alpha[i, p]
        l1 = -a1
        if k < 0:
            # No partner can move: a one-variable Newton step.
            u1 = INFINITY if r1 < 0 else self.C[i] - self.gsum[i, r1]
            if u1 < 0:
                u1 = 0.0
            _solve_2d(g1, 0.0, h11, 0.0, 1.0, l1, u1, 0.0, 0.0, 0.0, False, &mu1, &mu2)
            k = i
            q = p
            mu2 = 0.0
            g2 = h12 = h22 = 0.0
        else:
            yk = self.y[k]
            r2 = self.slack[yk, q]
            a2 = self.alpha[k, q]
            g2 = self._grad(k, q)
            h22 = self.Mdiag[yk, q] * (self.kdiag[k] + self.shift[k])
            h12 = self._mrow(yi * self.P + p)[yk * self.P + q] * self._kblock(i, k)
            l2 = -a2
            tri = k == i and r1 >= 0 and r1 == r2
            if tri:
                tcap = self.C[i] - self.gsum[i, r1]
                if tcap < 0:
                    tcap = 0.0
                u1 = tcap + a2
                u2 = tcap + a1
            else:
                u1 = INFINITY if r1 < 0 else self.C[i] - self.gsum[i, r1]
                u2 = INFINITY if r2 < 0 else self.C[k] - self.gsum[k, r2]
                if u1 < 0:
                    u1 = 0.0
                if u2 < 0:
                    u2 = 0.0
            _solve_2d(g1, g2, h11, h12, h22, l1, u1, l2, u2, tcap, tri, &mu1, &mu2)

        # New values, snapped onto the bounds they are within rounding of.
        n1 = a1 + mu1
        if n1 < self.eps_zero[i]:
            n1 = 0.0
        if k == i and q == p:
            n2 = n1
            a2 = a1
        else:
            a2 = self.alpha[k, q]
            n2 = a2 + mu2
            if n2 < self.eps_zero[k]:
                n2 = 0.0
        if tri:
            others = self.gsum[i, r1] - a1 - a2
            if n1 + n2 + others > self.lim[i]:
                n2 = self.C[i] - others - n1
                if n2 < 0:
                    n2 = 0.0
                    n1 = self.C[i] - others
        else:
            if r1 >= 0 and self.group_size[yi, r1] == 1 and n1 > self.lim[i]:
                n1 = self.C[i]
            if not (k == i and q == p):
                r2 = self.slack[self.y[k], q]
                if r2 >= 0 and self.group_size[self.y[k], r2] == 1 and n2 > self.lim[k]:
                    n2 = self.C[k]
        d1 = n1 - a1
        d2 = 0.0 if (k == i and q == p) else n2 - a2
        self.tracked_J += g1 * d1 + g2 * d2 + 0.5 * h11 * d1 * d1 + h12 * d1 * d2 \
            + 0.5 * h22 * d2 * d2
        self.alpha[i, p] = n1
        if not (k == i and q == p):
            self.alpha[k, q] = n2
        self._group_sums(i)
        if k != i:
            self._group_sums(k)
        self._apply(i, p, d1)
        self._apply(k, q, d2)

    cdef void _apply(self, Py_ssize_t e, Py_ssize_t p, double d) noexcept nogil:
        """A change d of α_ep (e in the block): d·ν_{y,p,·} into e's row of β deltas
        (with the list of its changed columns), and its effect on the block's rows of
        F and S."""
        cdef Py_ssize_t y = self.y[e]
        cdef int k, c, t, slot = self.ex[e].bslot
        cdef double v, kv
        cdef const double* Krow = &self.bK[slot * BLOCK_MAX]
        if d == 0:
            return
        self._add_delta(slot, y, p, d)
        for k in range(self.nz_count[y, p]):
            c = self.nz_col[y, p, k]
            v = d * self.nz_val[y, p, k]
            for t in range(self.nblk):
                kv = v * Krow[t]
                self.F[self.blk[t], c] += kv
                if self.centred:
                    self.S[self.blk[t]] += kv

    # ------------------------------------------------- fast path, parallel
    cdef void _select_fast(self, Py_ssize_t i, Py_ssize_t p, const double* Ki,
                           Py_ssize_t* k, Py_ssize_t* q) noexcept nogil:
        """Second variable of the fast path: best gain over the chunks of the working set."""
        cdef Py_ssize_t b, n_chunks = (self.n_work + CHUNK - 1) // CHUNK
        cdef double best = -1.0
        self._first_variable(i, p)
        self.pKi = Ki
        if self.cur_threads > 1 and n_chunks > 1:
            for b in prange(n_chunks, num_threads=self.cur_threads, schedule="static"):
                self._select_chunk(b)
        else:
            for b in range(n_chunks):
                self._select_chunk(b)
        k[0] = -1
        q[0] = -1
        for b in range(n_chunks):   # in chunk order, strict '>': the serial answer
            if self.cidx[b] >= 0 and self.cbest[b] > best:
                best = self.cbest[b]
                k[0] = self.cidx[b]
                q[0] = self.cslot[b]
        if self.slot_partner and self.centred:
            self.sel_chunks = n_chunks

    cdef void _select_chunk(self, Py_ssize_t b) noexcept nogil:
        """Best partner in positions [b·CHUNK, (b+1)·CHUNK) of the working set.

        Each other example offers its most violating single variable (a cold
        example has withdrawn its out-of-date offer); the first variable's own
        example offers every slot that can move with it.

        With ``slot_partner`` (sum-to-zero machines: LLW, M-SVM²) each other
        example also offers its variable of the first variable's slot sp.  There
        M(y,sp ; y',s) = δ_{sp,s} − 1/Q, so that variable is the one coupled to
        the first by (1 − 1/Q)·K'_ie and the others only by −K'_ie/Q, while the
        example's most violating slot is usually another one.  Its gradient is
        read exactly, σ_e − F_{e,sp} − γ (the pass has brought σ_e and F_e up to
        date for every example of the working set, cold ones included), and its
        movability from the masks, so the gain is Algorithm 4's exact gain: only
        the set of candidates grows, never the error Algorithm 4 warns about.
        """
        cdef Py_ssize_t t, e, P = self.P, sp = self.sp, ye
        cdef Py_ssize_t t1 = (b + 1) * CHUNK, i = self.si, bk = -1, bq = -1
        cdef double g1 = self.sg1, h11 = self.sh11, gn, best = -1.0, g2
        cdef const double* Ki = self.pKi
        cdef const double* Mrow = self.sMrow
        cdef const Py_ssize_t* work = &self.work_idx[0]
        cdef const Example* ex = self.ex
        cdef int c
        cdef bint slot_partner = self.slot_partner and self.centred
        if t1 > self.n_work:
            t1 = self.n_work
        for t in range(b * CHUNK, t1):
            e = work[t]
            if t + AHEAD < t1:
                MSVM_PREFETCH(&Ki[work[t + AHEAD]])
                MSVM_PREFETCH(&ex[work[t + AHEAD]])
            if e != i:
                c = ex[e].cand_idx
                if c >= 0:
                    gn = _gain(g1, ex[e].cand_g, h11, Mrow[c] * Ki[e], ex[e].cand_h)
                    if gn > best:
                        best = gn
                        bk = e
                        bq = c % P
                if slot_partner:
                    ye = ex[e].y
                    if c != ye * P + sp and _has_slot(&self.actmask[ye, 0], sp):
                        g2 = ex[e].sigma - self.F[e, sp] - self.gamma[ye, sp]
                        if self._may_move(e, sp, g2):
                            gn = _gain(g1, g2, h11, Mrow[ye * P + sp] * Ki[e],
                                       self.Mdiag[ye, sp] * (self.kdiag[e] + self.shift[e]))
                            if gn > best:
                                best = gn
                                bk = e
                                bq = sp
                continue
            self._partner_in(i, self.sKii, &best, &bk, &bq)
        self.cbest[b] = best
        self.cidx[b] = bk
        self.cslot[b] = bq

    cdef inline void _offer_leader(self, Py_ssize_t e) noexcept nogil:
        """Insertion into the leaders, most violating first (block candidates)."""
        cdef int u
        cdef double v = self.ex[e].viol
        if self.n_lead < self.block_size:
            self.n_lead += 1
        elif v <= self.ex[self.lead[self.n_lead - 1]].viol:
            return
        u = self.n_lead - 1
        while u > 0 and self.ex[self.lead[u - 1]].viol < v:
            self.lead[u] = self.lead[u - 1]
            u -= 1
        self.lead[u] = e

    cdef int _pack_deltas(self) noexcept nogil:
        """The block's changed columns of F (pcol, without duplicates) and its β deltas
        by column (pstart, prow, pw) for :func:`_scatter`; returns their number."""
        cdef Py_ssize_t Q = self.Q
        cdef int j, t, u, c, n = 0, nc = 0
        cdef double d
        for t in range(self.nblk):
            for j in range(self.ncols[t]):
                c = self.dcols[t * Q + j]
                if _position(self.pcol, nc, c) == nc:
                    self.pcol[nc] = c
                    nc += 1
        for u in range(nc):
            self.pstart[u] = n
            for t in range(self.nblk):
                d = self.dbeta[t * Q + self.pcol[u]]
                if d != 0:
                    self.prow[n] = t
                    self.pw[n] = d
                    n += 1
        self.pstart[nc] = n
        self.pnc = nc
        return nc

    cdef void _fast_update(self) noexcept nogil:
        """After a block: new scores and cached extremes, and the next first variable.

        One pass over all examples (or, with deferred scores, the working set) in
        chunks (threads share the chunks): each example gets its changed F columns
        (and S) from the block's Gram rows, and, if it is in the working set, its σ,
        extremes and violation; each chunk reports its largest violation.
        """
        cdef Py_ssize_t b, u, n_chunks
        cdef int nc = self._pack_deltas()
        cdef bint scan
        cdef Py_ssize_t best_e = -1
        cdef double best = 0.0
        # With deferred scores the pass visits the working set only (its positions
        # are chunked), else every example.
        self.pass_work = self.defer_shrunk and self.n_work < self.m
        if self.pass_work and nc > 0:
            self.shrunk_stale = True
        n_chunks = ((self.n_work if self.pass_work else self.m) + CHUNK - 1) // CHUNK
        self.n_visits += self.n_work if self.pass_work else self.m
        # Updating the extremes costs O(changed slots) per example, a rescan O(P).
        self.prescan_all = 2 * nc > self.P
        self.cold_below = _cold_below(&self.lazy, self.max_violation)
        if self.cur_threads > 1 and n_chunks > 1:
            for b in prange(n_chunks, num_threads=self.cur_threads, schedule="static"):
                self._pass_chunk(b)
        else:
            for b in range(n_chunks):
                self._pass_chunk(b)
        # Block candidates: the chunks' leaders or, in a small focus of a max-loss
        # machine, the working set's most violating examples (module docstring).
        scan = n_chunks < self.block_size and self.pass_work and self.max_loss
        self.n_lead = 0
        for b in range(n_chunks):   # in chunk order, strict '>': the serial answer
            if self.cbest[b] > best:
                best = self.cbest[b]
                best_e = self.cidx[b]
            if self.cidx[b] >= 0 and not scan:
                self._offer_leader(self.cidx[b])
        if scan:
            for u in range(self.n_work):
                if self.ex[self.work_idx[u]].viol > 0:
                    self._offer_leader(self.work_idx[u])
        self._lazy_control(n_chunks)
        if best < self.cold_below:
            # A cold example's bound might exceed the exact maximum: search them too.
            self._find_max()
            return
        self.max_violation = best
        self.next_i = best_e
        if best_e >= 0:
            self.next_p = self.ex[best_e].wp
            self.next_q = self.ex[best_e].wq

    cdef void _pass_chunk(self, Py_ssize_t b) noexcept nogil:
        """Examples [b·CHUNK, (b+1)·CHUNK) (or those positions of the working set) of
        the pass of :meth:`_fast_update`.

        Written with raw pointers and the slot logic inlined: this loop is the
        solver's hot spot.  Touches only rows of its own examples (thread-safe).
        """
        cdef Py_ssize_t e, y, s, best_e = -1, x
        cdef Py_ssize_t P = self.P, Q = self.Q
        cdef Py_ssize_t e1 = (b + 1) * CHUNK, t_work
        cdef int j, nc = self.pnc, nb = self.nblk, au, ad, aa
        cdef double best = 0.0, v, h, hu, hd, ha, dmax, ub
        cdef const int* pstart = self.pstart
        cdef const int* prow = self.prow
        cdef double cold_below = self.cold_below
        cdef long long n_cold = 0, n_rescan = 0
        cdef mask_t up, pos, act
        cdef const mask_t* upw
        cdef const mask_t* posw
        cdef Py_ssize_t n_words = self.mask_words
        cdef bint one_word = n_words == 1
        cdef bint dirty, max_loss = self.max_loss, centred = self.centred
        cdef bint rescan_all = self.prescan_all, by_work = self.pass_work
        cdef const Py_ssize_t* work = &self.work_idx[0]
        cdef const int* cc = self.pcol
        cdef const double* w = self.pw
        cdef const double* dSb = &self.dS[0]
        cdef const double** rows = &self.brow[0]
        cdef double* F = &self.F[0, 0]
        cdef double* Fe
        cdef Example* ex = self.ex
        cdef double* S = &self.S[0]
        cdef const mask_t* actmask = &self.actmask[0, 0]
        cdef const double* gam = &self.gamma[0, 0]
        cdef const int* ucnt = &self.u_cnt[0]
        cdef const int* ucol = &self.u_col[0, 0]
        cdef const double* uval = &self.u_val[0, 0]
        cdef Py_ssize_t uw = self.u_col.shape[1]
        cdef const double* kap = &self.kappa[0]
        if by_work and e1 > self.n_work:
            e1 = self.n_work
        elif e1 > self.m:
            e1 = self.m
        for t_work in range(b * CHUNK, e1):
            e = work[t_work] if by_work else t_work
            if by_work and t_work + AHEAD < e1:
                x = work[t_work + AHEAD]
                _prefetch_scatter(x, F + x * Q, nb, rows)
                MSVM_PREFETCHW(&ex[x])
            # The block's own rows are up to date already (_solve_block).
            Fe = F + e * Q
            dmax = 0.0
            if ex[e].bslot < 0:
                dmax = _scatter(e, Fe, S + e if centred else NULL, nb, rows, dSb, nc, cc,
                                pstart, prow, w)
            if not ex[e].inwork:
                continue
            y = ex[e].y
            v = 0.0
            for j in range(ucnt[y]):
                v += uval[y * uw + j] * Fe[ucol[y * uw + j]]
            if centred:
                v -= kap[y] * S[e]
            if ex[e].bslot < 0:
                # Each gradient moved by at most |Δσ| + dmax, each pair difference by
                # 2 dmax: viol[e] plus that bounds the new violation.
                ub = fabs(v - ex[e].sigma) + dmax
                if max_loss and 2 * dmax > ub:
                    ub = 2 * dmax
                ub += ex[e].viol
                if ub <= cold_below:
                    # Cold: far below the largest violation, made exact when it comes
                    # near it; its offer holds an old gradient, so it is withdrawn.
                    n_cold += 1
                    ex[e].sigma = v
                    ex[e].viol = ub
                    ex[e].stale = COLD
                    ex[e].cand_idx = -1
                    continue
            ex[e].sigma = v
            if ex[e].bslot >= 0 or rescan_all or ex[e].stale == COLD:
                n_rescan += ex[e].stale == COLD
                self._rescan(e)
            else:
                dirty = ex[e].stale
                hu = ex[e].hup
                hd = ex[e].hdn
                ha = ex[e].hall
                au = ex[e].aup
                ad = ex[e].adn
                aa = ex[e].aall
                if one_word:
                    act = actmask[y]
                    up = ex[e].upmask & act
                    pos = ex[e].posmask & act
                    for j in range(nc):
                        s = cc[j]
                        h = -Fe[s] - gam[y * P + s]
                        dirty |= _track_min(h, _member(up, s), <int> s, &hu, &au)
                        dirty |= _track_max(h, _member(pos, s), <int> s, &hd, &ad)
                        if max_loss:
                            dirty |= _track_min(h, _member(act, s), <int> s, &ha, &aa)
                else:   # the same, each slot's bits from its own words
                    upw = self._up_words(e)
                    posw = self._pos_words(e)
                    for j in range(nc):
                        s = cc[j]
                        h = -Fe[s] - gam[y * P + s]
                        act = actmask[y * n_words + (s >> 6)]
                        up = upw[s >> 6] & act
                        pos = posw[s >> 6] & act
                        dirty |= _track_min(h, _member(up, s & 63), <int> s, &hu, &au)
                        dirty |= _track_max(h, _member(pos, s & 63), <int> s, &hd, &ad)
                        if max_loss:
                            dirty |= _track_min(h, _member(act, s & 63), <int> s, &ha, &aa)
                # An extreme whose slot moved away is kept at its old value: a
                # bound, so ex[e].viol is an upper bound while the example is stale.
                ex[e].hup = hu
                ex[e].hdn = hd
                ex[e].hall = ha
                ex[e].aup = au
                ex[e].adn = ad
                ex[e].aall = aa
                ex[e].stale = BOUND if dirty else 0
            self._fast_violation(e)
            v = ex[e].viol
            if v > best and ex[e].stale:
                # Only an example that would lead its chunk is made exact (lazy rescans).
                self._rescan(e)
                self._fast_violation(e)
                v = ex[e].viol
            if v > best:
                best = v
                best_e = e
        self.cbest[b] = best
        self.cidx[b] = best_e
        self.ccold[b] = n_cold
        self.crescan[b] = n_rescan

    cdef void _lazy_control(self, Py_ssize_t n_chunks) noexcept nogil:
        """Keep cold examples only while they pay (``_steps._lazy_tick``)."""
        cdef Py_ssize_t b
        cdef long long cold = 0, rescans = 0
        if not self.lazy.on:
            _lazy_tick(&self.lazy, 0, 0, self.P)
            return
        for b in range(n_chunks):
            cold += self.ccold[b]
            rescans += self.crescan[b]
        self.n_cold += cold
        self.n_rescan += rescans
        _lazy_tick(&self.lazy, cold, rescans, self.P)

    cdef void _update_scores(self, int slot) noexcept nogil:
        """F[e, c] += Δβ_{slot,c} K(x_row, x_e) for the changed columns c (and S), except
        on the block's own rows (already up to date, see _solve_block)."""
        cdef Py_ssize_t e, m = self.m
        cdef int j, n = self.ncols[slot], c
        cdef double d, dS = self.dS[slot]
        cdef double* b = self.dbeta + slot * self.Q
        cdef int* cols = self.dcols + slot * self.Q
        cdef const double* Kr = self.brow[slot]
        for j in range(n):
            c = cols[j]
            d = b[c]
            for e in range(m):
                if self.ex[e].bslot < 0:
                    self.F[e, c] += d * Kr[e]
        if self.centred and dS != 0:
            for e in range(m):
                if self.ex[e].bslot < 0:
                    self.S[e] += dS * Kr[e]

    # ------------------------------------------------------------ shrinking
    cdef void _shrink(self) noexcept nogil:
        """Drop examples with no variable near switching (see module docstring)."""
        cdef Py_ssize_t t, e, n = 0
        # As libsvm: an example must be out of the current violating range, not only
        # out of tol; shrinking by tol alone early on drops examples that come back.
        cdef double margin = self.shrink_margin * self.tol
        if self.max_violation > margin:
            margin = self.max_violation
        for t in range(self.n_work):
            e = self.work_idx[t]
            if self.fast and self.ex[e].stale:
                self._rescan(e)
                self._fast_violation(e)
            if self.ex[e].viol > 0 or self._near(e, margin):
                self.work_idx[n] = e
                n += 1
            else:
                self.ex[e].inwork = 0
        self.n_work = n

    cdef bint _near(self, Py_ssize_t e, double margin) noexcept nogil:
        """Whether a variable of e (exact extremes) is within margin of violating."""
        cdef Py_ssize_t bp, bq
        if not self.fast:
            return self._violation(e, margin) > 0
        return self._fast_best(e, margin, &bp, &bq) > 0

    cdef double _lowest_h_but(self, Py_ssize_t e, Py_ssize_t skip) noexcept nogil:
        """min of h_es over e's slots s other than skip (skip being the lowest): the
        other end of a move of mass from slot skip.  (hdn − hall = 0 instead would
        count every support vector of a max-loss machine as near, and keep most
        of them in the working set to the end.)"""
        cdef Py_ssize_t y = self.y[e], s
        cdef double h, low = INFINITY
        for s in range(self.P):
            if s != skip and self.active[y, s]:
                h = -self.F[e, s] - self.gamma[y, s]
                if h < low:
                    low = h
        return low

    cdef void _unshrink(self) noexcept nogil:
        cdef Py_ssize_t e
        self._rebuild_shrunk()
        for e in range(self.m):
            self.work_idx[e] = e
            self.ex[e].inwork = 1
            self._refresh(e)
        self.n_work = self.m
        self.n_unshrink += 1
        self._find_max()

    cdef Py_ssize_t _focus_size(self) noexcept nogil:
        """The size of the focus to enter now, or 0: a quarter of the working set,
        at most focus_size and at least focus_min examples, while cold visits are
        paused and the cache has room, after a full iteration since the last."""
        cdef Py_ssize_t size = min(self.n_work // 4, self.focus_size)
        if self.focus_on or not self.defer_shrunk or self.lazy.on \
                or self.n_iter <= self.focus_left_at or size < self.focus_min:
            return 0
        return size

    cdef void _enter_focus(self, Py_ssize_t size) noexcept nogil:
        """Keep only the size most violating examples of the working set in it;
        park the others (their scores wait, as the shrunk examples' do)."""
        cdef Py_ssize_t t, e, n = 0, n_big = 0
        cdef double cut
        for t in range(self.n_work):
            self.saved_work[t] = self.work_idx[t]
            self.vsort[t] = self.ex[self.work_idx[t]].viol
        cut = _kth_largest(self.vsort, self.n_work, size)
        for t in range(self.n_work):
            if self.ex[self.work_idx[t]].viol > cut:
                n_big += 1
        n_big = size - n_big    # ties at the cut that still fit
        for t in range(self.n_work):
            e = self.work_idx[t]
            if self.ex[e].viol > cut or (self.ex[e].viol == cut and n_big > 0):
                if self.ex[e].viol == cut:
                    n_big -= 1
                memcpy(&self.alpha0[n * self.P], &self.alpha[e, 0], self.P * sizeof(double))
                self.work_idx[n] = e
                n += 1
            else:
                self.ex[e].inwork = PARKED
        self.n_saved = self.n_work
        self.n_work = n
        self.focus_on = True
        self.n_focus += 1

    cdef void _leave_focus(self) noexcept nogil:
        """Bring the parked examples' scores up to date with the focus's β changes
        (one Gram row per changed example) and put them back."""
        cdef Py_ssize_t t, e
        self._add_scores(PARKED, &self.work_idx[0], self.n_work, self.alpha0)
        for t in range(self.n_saved):
            e = self.saved_work[t]
            self.work_idx[t] = e
            if self.ex[e].inwork == PARKED:
                self.ex[e].inwork = 1
                self._refresh(e)
        self.n_work = self.n_saved
        self.focus_on = False
        self._shrink_if_due()
        self._find_max()

    cdef void _stop_deferring(self) noexcept nogil:
        """The cache is full: end a focus, rebuild the shrunk examples' scores while
        their rows are still cached, and keep every example's scores exact from now on."""
        if self.focus_on:
            self._leave_focus()
            self.focus_left_at = self.n_iter
        self._rebuild_shrunk()
        self.defer_shrunk = False

    cdef bint _shrink_if_due(self) noexcept nogil:
        """Shrink every shrink_interval iterations (not within a focus); whether it did."""
        if not self.shrinking or self.since_shrink < self.shrink_interval or self.focus_on:
            return False
        self._shrink()
        self.since_shrink = 0
        return True

    # ------------------------------------------------------------------ run
    def run(self, long long max_steps, double time_limit):
        """Iterate until convergence, ``max_steps`` steps or ``time_limit`` seconds.

        Returns 0 (converged), 1 (step budget used) or 2 (time is up).
        """
        cdef int status
        cdef Py_ssize_t size
        cdef long long steps = 0
        cdef double t0
        with nogil:
            t0 = _now()
            while True:
                if self.defer_shrunk and not self.kc.has_room():
                    self._stop_deferring()
                if self.focus_on and (self.max_violation <= self.focus_target
                                      or self.max_violation <= self.tol
                                      or self.next_i < 0 or steps >= max_steps):
                    self._leave_focus()
                    self.focus_left_at = self.n_iter    # a pass over the whole set first
                    continue
                size = self._focus_size() if steps < max_steps else 0
                if size > 0:
                    self._enter_focus(size)
                    self._find_max()
                    self.focus_target = self.focus_fraction * self.max_violation
                # Unshrink at convergence, and once at UNSHRINK_EARLY·tol (as libsvm).
                if self.max_violation <= self.tol or self.next_i < 0 or (
                        self.max_violation <= UNSHRINK_EARLY * self.tol and not self.focus_on
                        and self.n_unshrink == 0 and self.n_work < self.m):
                    if self.n_work < self.m:
                        self._unshrink()
                        self.since_shrink = 0
                        continue
                    status = CONVERGED
                    break
                if steps >= max_steps:
                    status = MAX_ITER
                    break
                self._step()
                steps += 1
                if self.n_threads > 1:
                    if self.tune_threads:
                        self._tune()
                    else:
                        self.n_parallel_iter += 1
                self.since_shrink += 1
                if self._shrink_if_due():
                    self._find_max()
                # A time slice ends where it is: the path must not depend on the clock
                # (a focus continues in the next call; settle() ends it for good).
                if (steps & 15) == 0 and _now() - t0 > time_limit:
                    status = TIME_UP
                    break
        return status

    def settle(self):
        """End a focus left open by a time slice, so that the scores, the largest
        violation and the objective are those of every example (after the loop)."""
        if self.focus_on:
            with nogil:
                self._leave_focus()

    def set_threads(self, int n_threads):
        """Run on ``n_threads`` threads from the next step on, the Gram rows of the
        cache included, and start the thread tuning (``_tune``) afresh: with all
        threads for TUNE_COMMIT iterations, or, when ``slow_regions`` is set (the
        driver's :func:`regions_slow` probe), with the timing of one thread
        against all.  The iterates do not depend on it (see the module docstring)."""
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads!r}.")
        self.n_threads = n_threads
        self.cur_threads = n_threads
        self.kc.n_threads = n_threads
        self.tune_count = 0
        self.tune_losses = 0
        if self.slow_regions:
            self._time_one_thread()
        else:
            self.tune_phase = 2

    def retarget(self, gamma):
        """Replace the target table γ (Q, P), keeping α and the scores F.

        The scores do not depend on the targets, so only the gradients and the
        per-example records change: a focus left open is closed, the shrunk
        examples' scores are rebuilt and every example is put back in the
        working set and refreshed (``_unshrink``), as at the start of a warm
        solve but without recomputing F.  The working set is shrunk again
        after the first step, not shrink_interval steps later: until then
        every pass visits every example, and an outer iteration of
        :mod:`msvm.solvers.s2do_bias` is often only a few hundred steps.  The
        caller keeps ``gamma`` alive (it is read in place).  Used between the
        outer iterations of :mod:`msvm.solvers.s2do_bias`, whose targets move
        with the bias.
        """
        cdef const double[:, ::1] g = gamma
        if g.shape[0] != self.Q or g.shape[1] != self.P:
            raise ValueError(f"gamma has shape {(g.shape[0], g.shape[1])}, expected "
                             f"{(self.Q, self.P)}.")
        self.gamma = g
        with nogil:
            if self.focus_on:
                self._leave_focus()
            self._unshrink()
        self.n_unshrink -= 1    # not an unshrink of the solve's own
        self.since_shrink = self.shrink_interval
        self.tracked_J = self.objective()

    def reoffset(self, double delta, colsum, gamma):
        """Add ``delta`` to every Gram entry (the cache's and the scores'), then retarget.

        ``colsum`` (Q,) is Σ_i β_i with the *uncentred* ν (the β of F = K'β), so
        that F_ec grows by delta·colsum_c (and S_e by delta·Σ_c colsum_c).  The
        scores of shrunk or parked examples are first rebuilt with the old rows.
        Then as :meth:`retarget` with ``gamma``.
        """
        cdef const double[::1] cs = colsum
        cdef Py_ssize_t e, c
        cdef double total = 0.0
        if cs.shape[0] != self.Q:
            raise ValueError(f"colsum has {cs.shape[0]} entries, expected {self.Q}.")
        with nogil:
            if self.focus_on:
                self._leave_focus()
            self._rebuild_shrunk()
        self.kc.add_offset(delta)
        for c in range(self.Q):
            total += cs[c]
        with nogil:
            for e in range(self.m):
                for c in range(self.Q):
                    self.F[e, c] = self.F[e, c] + delta * cs[c]
                if self.centred:
                    self.S[e] = self.S[e] + delta * total
                self.kdiag[e] = self.kdiag[e] + delta
        self.retarget(gamma)

    @property
    def lazy_enabled(self):
        """Whether cold examples are allowed (the module docstring); set by ``solve(lazy=)``."""
        return self.lazy.enabled

    @lazy_enabled.setter
    def lazy_enabled(self, bint value):
        _lazy_enable(&self.lazy, value, LAZY_WINDOW_S2DO)

    cdef void _time_one_thread(self) noexcept nogil:
        """Start the tuning's timed window on one thread (``_tune``'s phase 0)."""
        self.tune_phase = 0
        self.tune_count = 0
        self.tune_t0 = _now()
        self.tune_v0 = self.n_visits
        self.cur_threads = 1

    cdef void _tune(self) noexcept nogil:
        """Use threads only while they pay.

        The parallel loops synchronise twice per iteration, every few tens of
        microseconds; on a machine whose cores are busy with other processes
        a thread that is not scheduled stalls its partner at every barrier,
        and 2 threads can be many times slower than 1.  So the loop times
        TUNE_WINDOW iterations on one thread, then the same number on all
        threads -- given up as soon as they took longer than the serial window
        -- runs the faster setting for TUNE_COMMIT iterations (doubled each
        time the threads lose, up to 64×), and times both again.  The windows
        are compared per example the passes visited (``n_visits``), because
        the working set shrinks from one window to the next.  A solve (or
        ``set_threads``) starts with TUNE_COMMIT iterations on all threads:
        the contention watch has just found the cores free, and the first
        passes, which visit every example, are the longest of the solve -- unless
        the OpenMP runtime's regions are slow (``slow_regions``), when it starts
        with the timing.  Only
        the passes are tuned; the Gram rows keep all threads.  The iterates do
        not depend on the thread count (fixed chunks, ordered reductions), only
        the speed does.
        """
        cdef double now, elapsed
        cdef long long visits
        if self.cur_threads > 1:
            self.n_parallel_iter += 1
        self.tune_count += 1
        if self.tune_phase == 2:
            if self.tune_count >= TUNE_COMMIT << self.tune_losses:
                self._time_one_thread()
            return
        now = _now()
        elapsed = now - self.tune_t0
        visits = self.n_visits - self.tune_v0
        if self.tune_phase == 1:
            if elapsed > self.tune_rate * visits and (
                    elapsed > self.tune_cost or self.tune_count >= TUNE_WINDOW):
                # The threads are slower per visit than one thread was.
                self.tune_phase = 2
                self.tune_count = 0
                if self.tune_losses < 6:
                    self.tune_losses += 1
                self.cur_threads = 1
            elif self.tune_count >= TUNE_WINDOW:
                self.tune_phase = 2
                self.tune_count = 0
                self.tune_losses = 0
            return
        if self.tune_count >= TUNE_WINDOW:
            self.tune_cost = elapsed
            self.tune_rate = elapsed / (visits if visits > 0 else 1)
            self.tune_phase = 1
            self.tune_count = 0
            self.tune_t0 = now
            self.tune_v0 = self.n_visits
            self.cur_threads = self.n_threads

    def scores(self):
        """Centred scores F̄ = K'β̄ (m, Q)."""
        with nogil:
            self._rebuild_shrunk()
        F = np.array(self.F)
        if self.centred:
            F -= np.asarray(self.S)[:, None] / self.Q
        return F

    def coupling(self, Py_ssize_t y, Py_ssize_t p):
        """Row (y, p) of M and its entries M[(y,p),(z,q)] one by one, as the second-variable
        search and the 2-D steps read them: ((QP,) array, (QP,) array)."""
        cdef Py_ssize_t j, yp = y * self.P + p, n = self.Q * self.P
        if not (0 <= y < self.Q and 0 <= p < self.P):
            raise IndexError(f"no slot ({y}, {p}) among {self.Q} classes and {self.P} slots.")
        row = np.array(<double[:n]> <double*> self._mrow(yp))
        entries = np.array([self._mrow(yp)[j] for j in range(n)])
        return row, entries

    def objective(self):
        """Dual objective J(α) (minimised form) from the kept scores; while the scores
        of shrunk or parked examples wait, the sum of the steps' exact changes
        (rebuilding them costs a Gram product, too much for every progress line)."""
        cdef Py_ssize_t e
        if self.shrunk_stale or self.focus_on:  # parked examples' scores wait too
            return self.tracked_J
        alpha = np.asarray(self.alpha)
        G = np.asarray(self.G)
        gamma = np.asarray(self.gamma)[np.asarray(self.y)]
        # J = ½ αᵀHα − γᵀα = ½ αᵀ(g + γ) − γᵀα (g exact only on the working set: refresh all).
        with nogil:
            for e in range(self.m):
                self._gradient(e)
        active = np.asarray(self.active)[np.asarray(self.y)]
        self.tracked_J = 0.5 * float(np.sum(alpha * (G + gamma * active))) \
            - float(np.sum(gamma * alpha))
        return self.tracked_J

    def _debug_state(self):
        """Cached per-example quantities (for tests and debugging)."""
        cdef Py_ssize_t e
        state = {name: np.empty(self.m, dtype=dtype) for name, dtype in (
            ("viol", float), ("wp", np.intp), ("wq", np.intp), ("sigma", float),
            ("hup", float), ("hdn", float), ("hall", float), ("aup", np.intp),
            ("adn", np.intp), ("aall", np.intp), ("stale", np.uint8), ("inwork", np.uint8))}
        for e in range(self.m):
            for name, value in (
                    ("viol", self.ex[e].viol), ("wp", self.ex[e].wp), ("wq", self.ex[e].wq),
                    ("sigma", self.ex[e].sigma), ("hup", self.ex[e].hup),
                    ("hdn", self.ex[e].hdn), ("hall", self.ex[e].hall),
                    ("aup", self.ex[e].aup), ("adn", self.ex[e].adn),
                    ("aall", self.ex[e].aall), ("stale", self.ex[e].stale),
                    ("inwork", self.ex[e].inwork)):
                state[name][e] = value
        state["F"] = np.array(self.F)
        state["gsum"] = np.array(self.gsum)
        return state


def regions_slow(int n_threads, double threshold):
    """Whether a parallel region of ``n_threads`` threads takes longer than ``threshold``
    seconds after a short serial pause, as between two regions of the loop (every one of
    REGION_PROBES empty regions; the first faster one answers no).

    Threads that spin while they wait (libgomp's default) join the next region at
    once.  Threads that sleep (``OMP_WAIT_POLICY=passive``, or libgomp's short spin
    when it counts more threads than cores) must be woken at every region, which
    can cost more than a pass over a small working set: the solvers then let the
    thread tuning time one thread first (``S2DOState.slow_regions``).
    """
    cdef int r, b
    cdef long total = 0
    cdef double start, pause_end
    cdef bint slow = True
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads!r}.")
    with nogil:
        for b in prange(n_threads, num_threads=n_threads, schedule="static"):
            total += b    # the first region starts the threads
        for r in range(REGION_PROBES):
            pause_end = _now() + REGION_PAUSE
            while _now() < pause_end:
                pass
            start = _now()
            for b in prange(n_threads, num_threads=n_threads, schedule="static"):
                total += b
            if _now() - start <= threshold:
                slow = False
                break
    return slow
