# Shared step machinery of the decomposition solvers (S2DO and the online solver).
#
# ``cdef inline`` definitions, cimported by ``_s2do.pyx`` and ``_online.pyx``:
#
#     from msvm._core._steps cimport _gain, _solve_2d, _now
#
# * ``_gain``: seed 004's Algorithm 4, the decrease of the unconstrained 2-D
#   model g·mu + 1/2 mu^T H mu (the second-variable rule of S2DO);
# * ``_solve_2d``: the exact 2-D step over a box (Algorithm 5) or, for two
#   variables sharing one max-loss slack, over a triangle (Algorithm 11);
# * ``_model``, ``_argmin_1d``, ``_fixed_edges``: their helpers; ``_now``: a
#   monotonic clock;
# * the block-step constants, the control of cold visits (lazy refresh) and the
#   incremental tracking of cached extremes;
# * the fast path's per-example record rule: σ_e and the exact extremes of h_e·
#   over slot masks (``_sigma_of``, ``_extremes``);
# * a row of the coupling matrix M computed from ν's non-zeros, for machines
#   whose (QP)² table is not built (``NuTables``, ``_coupling_row``).
#
# Both solvers therefore take exactly the same steps.  All functions are nogil
# and touch no Python object.

from libc.math cimport INFINITY
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <double>ts.tv_sec + 1e-9 * <double>ts.tv_nsec


cdef inline double _gain(double g1, double g2, double h11, double h12, double h22) noexcept nogil:
    """Decrease of the unconstrained 2-D model g·μ + ½ μᵀHμ (seed 004, Alg. 4).

    1e300 stands for an unbounded decrease (a singular block with g outside its range).
    """
    cdef double det = h11 * h22 - h12 * h12
    cdef double den, num, r1, r2
    if h11 > 0 and h22 > 0 and det > 1e-12 * h11 * h22:
        return (g1 * g1 * h22 - 2.0 * g1 * g2 * h12 + g2 * g2 * h11) / (2.0 * det)
    if h11 <= 0 and h22 <= 0:
        return 1e300 if (g1 != 0 or g2 != 0) else 0.0
    # Singular block: infinite gain unless g lies in the range of H.
    r1 = g1 * h12 - g2 * h11
    r2 = g2 * h12 - g1 * h22
    if h11 > 0 and r1 * r1 > 1e-20 * ((g1 * h12) ** 2 + (g2 * h11) ** 2):
        return 1e300
    if h22 > 0 and r2 * r2 > 1e-20 * ((g2 * h12) ** 2 + (g1 * h22) ** 2):
        return 1e300
    den = g1 * g1 * h11 + 2.0 * g1 * g2 * h12 + g2 * g2 * h22
    num = g1 * g1 + g2 * g2
    if den <= 0:
        return 1e300 if num > 0 else 0.0
    return num * num / (2.0 * den)


cdef inline double _model(double m1, double m2, double g1, double g2,
                          double h11, double h12, double h22) noexcept nogil:
    return g1 * m1 + g2 * m2 + 0.5 * (h11 * m1 * m1 + 2.0 * h12 * m1 * m2 + h22 * m2 * m2)


cdef inline double _argmin_1d(double lin, double curv, double lo, double hi) noexcept nogil:
    """argmin of lin·x + ½ curv·x² over [lo, hi] (hi may be +inf; 0 is inside)."""
    cdef double x
    if curv > 0:
        x = -lin / curv
    elif lin > 0:
        x = lo
    elif lin < 0:
        x = hi
    else:
        x = 0.0
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    if x == INFINITY or x == -INFINITY:
        x = 0.0 if lo <= 0 else lo
    return x


cdef inline void _fixed_edges(bint swap, double la, double ua, double lb, double ub, double gb,
                              double hab, double hbb, double t, bint has_t,
                              double g1, double g2, double h11, double h12, double h22,
                              double* best, double* b1, double* b2) noexcept nogil:
    """Best point of the edges of ``_solve_2d`` where one variable, a, is fixed at la,
    ua or 0 (its single-variable step) and the other, b, is optimal on its segment.

    (a, b) = (μ1, μ2), or (μ2, μ1) with ``swap``; gb, hab, hbb are b's gradient, the
    coupling and b's curvature; the model is evaluated in (μ1, μ2).
    """
    cdef double fixed[3]
    cdef double xa, xb, lo, hi, val
    cdef int k
    fixed[0] = la
    fixed[1] = ua
    fixed[2] = 0.0
    for k in range(3):
        xa = fixed[k]
        if xa == INFINITY or xa == -INFINITY:
            continue
        lo = lb
        hi = ub
        if has_t and t - xa < hi:
            hi = t - xa
        if lo > hi:
            continue
        xb = _argmin_1d(gb + hab * xa, hbb, lo, hi)
        if swap:
            val = _model(xb, xa, g1, g2, h11, h12, h22)
        else:
            val = _model(xa, xb, g1, g2, h11, h12, h22)
        if val < best[0]:
            best[0] = val
            b1[0] = xb if swap else xa
            b2[0] = xa if swap else xb


cdef inline void _solve_2d(double g1, double g2, double h11, double h12, double h22,
                    double l1, double u1, double l2, double u2, double t, bint has_t,
                    double* mu1, double* mu2) noexcept nogil:
    """Minimise g·μ + ½ μᵀHμ over l ≤ μ ≤ u (and μ1 + μ2 ≤ t if has_t).

    The box case is seed 004's Algorithm 5, the triangle case its Algorithm
    11: the unconstrained optimum if feasible, else the best optimum of the
    one-dimensional problems on the edges (where a convex problem's
    constrained optimum lies).  μ = 0 is feasible and the answer never
    increases the model.  The single-variable steps (μ2 = 0, μ1 = 0) are
    candidates too, which keeps degenerate blocks safe.
    """
    cdef double det = h11 * h22 - h12 * h12
    cdef double x1, x2, lo, hi, val
    cdef double b1 = 0.0, b2 = 0.0, best = 0.0
    if h11 > 0 and h22 > 0 and det > 1e-12 * h11 * h22:
        x1 = (h12 * g2 - h22 * g1) / det
        x2 = (h12 * g1 - h11 * g2) / det
        if l1 <= x1 <= u1 and l2 <= x2 <= u2 and (not has_t or x1 + x2 <= t):
            mu1[0] = x1
            mu2[0] = x2
            return
    # Edges with μ1 fixed (and the single-variable step of variable 2), then with μ2 fixed.
    _fixed_edges(False, l1, u1, l2, u2, g2, h12, h22, t, has_t, g1, g2, h11, h12, h22,
                 &best, &b1, &b2)
    _fixed_edges(True, l2, u2, l1, u1, g1, h12, h11, t, has_t, g1, g2, h11, h12, h22,
                 &best, &b1, &b2)
    # The capacity edge μ1 + μ2 = t of the triangle.
    if has_t:
        lo = l1 if l1 > t - u2 else t - u2
        hi = u1 if u1 < t - l2 else t - l2
        if lo <= hi:
            x1 = _argmin_1d(g1 - g2 + (h12 - h22) * t, h11 - 2.0 * h12 + h22, lo, hi)
            x2 = t - x1
            val = _model(x1, x2, g1, g2, h11, h12, h22)
            if val < best:
                best = val
                b1 = x1
                b2 = x2
    mu1[0] = b1
    mu2[0] = b2


# Block steps, shared by S2DO (S2DOState._solve_block) and the online solver
# (OnlineState._step): after a 2-D step, steps go on among the variables of the one
# or few examples it touched (at most BLOCK_STEPS·P per example) until their largest
# violation is below _block_fraction() of the first variable's.
cdef enum:
    BLOCK_STEPS = 5


cdef inline double _block_fraction() noexcept nogil:
    return 0.1


# Lazy refresh (cold visits), shared by S2DO and the online solver.  A pass may
# leave an example *cold*: its violation becomes an upper bound (old value plus
# the most the step can have moved it) while that bound stays below
# LAZY_FRACTION of the leader's violation, and its extremes wait for a rescan.
# A cold visit saves roughly half an incremental refresh; an example that turns
# hot again costs a rescan of its P slots.  ``_lazy_tick`` weighs the two over
# every window of steps; when the rescans cost more, cold visits are switched
# off for LAZY_OFF steps (doubled after each further loss, up to 64×).  S2DO's
# window is short (LAZY_WINDOW_S2DO) because its first one decides the start:
# at α = 0 every example is in the passes, and while cold visits are on the
# focus stays out.  The online solver, which has no focus, keeps the 256 steps
# the control had before (LAZY_WINDOW_ONLINE).
cdef enum:
    LAZY_WINDOW_ONLINE = 256
    LAZY_WINDOW_S2DO = 32
    LAZY_OFF = 2048

cdef struct LazyControl:
    double fraction   # LAZY_FRACTION, 0.97
    bint enabled      # allowed at all (the solver's ``lazy`` option)
    bint on           # allowed now
    int backoff
    int window        # steps per decision
    long long count, win_cold, win_rescan


cdef inline void _lazy_enable(LazyControl* c, bint value, int window) noexcept nogil:
    c.fraction = 0.97   # LAZY_FRACTION (a .pxd cannot initialise a module constant)
    c.window = window
    c.enabled = value
    c.on = value
    c.backoff = 0
    c.count = 0
    c.win_cold = 0
    c.win_rescan = 0


cdef inline double _cold_below(const LazyControl* c, double leader) noexcept nogil:
    """Bound under which a visit may leave an example cold now (-1: none)."""
    return c.fraction * leader if c.on else -1.0


cdef inline void _lazy_tick(LazyControl* c, long long cold, long long rescans,
                            Py_ssize_t P) noexcept nogil:
    """One step with ``cold`` cold visits and ``rescans`` rescans of cold examples."""
    if not c.enabled:
        return
    if not c.on:
        c.count += 1
        if c.count >= (<long long> LAZY_OFF) << c.backoff:
            c.on = True
            c.count = 0
        return
    c.win_cold += cold
    c.win_rescan += rescans
    c.count += 1
    if c.count < c.window:
        return
    if 2 * c.win_cold < c.win_rescan * P:
        c.on = False
        if c.backoff < 6:
            c.backoff += 1
    else:
        c.backoff = 0
    c.count = 0
    c.win_cold = 0
    c.win_rescan = 0


# Cached extremes of the per-slot part h of the gradients (the fast path of
# S2DO and the online solver).  When slot s's value changes to h, the running
# minimum (or maximum) x realised at slot a is updated in O(1); if a == s and h
# moved away from the extreme, x is kept at its old value, which stays a bound
# (min from below, max from above), and the caller marks the example stale.
# Written without branches (the comparisons depend on the data and mispredict): a
# slot outside the set has its value moved to +inf (a minimum) or -inf (a maximum)
# by these tables, indexed by its membership bit; x + (-0.0) and x - 0.0 are x
# exactly, so a member's value is unchanged, and the selects become conditional moves.
cdef extern from *:
    """
    static const double MSVM_IN_MIN[2] = {INFINITY, -0.0};
    static const double MSVM_IN_MAX[2] = {INFINITY, 0.0};
    """
    const double MSVM_IN_MIN[2]
    const double MSVM_IN_MAX[2]


cdef inline void _keep_max(double w, Py_ssize_t s, double* best, Py_ssize_t* at) noexcept nogil:
    """best, at = w, s if w > best (a conditional move: the comparison depends on the data)."""
    cdef bint take = w > best[0]
    at[0] = s if take else at[0]
    best[0] = w if take else best[0]


cdef inline bint _track_min(double h, int member, int s, double* x, int* a) noexcept nogil:
    """Update the minimum x (at slot a) with slot s's new value h if member (1; 0: s is
    not in the set, nothing changes); True: x is now a bound."""
    cdef double hc = h + MSVM_IN_MIN[member]
    cdef bint take = hc < x[0]
    cdef bint bound = (not take) & (a[0] == s) & member
    a[0] = s if take else a[0]
    x[0] = hc if take else x[0]
    return bound


cdef inline bint _track_max(double h, int member, int s, double* x, int* a) noexcept nogil:
    """Update the maximum x (at slot a) with slot s's new value h if member (1; 0: s is
    not in the set, nothing changes); True: x is now a bound."""
    cdef double hc = h - MSVM_IN_MAX[member]
    cdef bint take = hc > x[0]
    cdef bint bound = (not take) & (a[0] == s) & member
    a[0] = s if take else a[0]
    x[0] = hc if take else x[0]
    return bound


# ---------------------------------------------------------------------------
# The per-example record of the fast path (S2DO's Example, the online solver's
# Ext): when ν_{y,s,·} = u_y − e_s (slot s <-> class s), every gradient of an
# example is g_es = σ_e + h_es with σ_e = u_y·F_e − κ_y S_e and
# h_es = −F_es − γ_ys, so its violations follow from σ_e and the extremes of
# h_e· over the slots that may increase, those with α > 0, and all.

ctypedef unsigned long long mask_t   # a word of a slot bitmask: bit s & 63 of word s >> 6


cdef inline int _member(mask_t m, Py_ssize_t b) noexcept nogil:
    """Bit b (0 ≤ b < 64) of the mask word m (1: the slot is in the set)."""
    return <int>((m >> b) & 1)


cdef inline int _has_slot(const mask_t* words, Py_ssize_t s) noexcept nogil:
    """Whether slot s is in the mask of several words."""
    return _member(words[s >> 6], s & 63)


cdef inline void _add_slot(mask_t* words, Py_ssize_t s) noexcept nogil:
    """Put slot s in the mask of several words."""
    words[s >> 6] |= (<mask_t>1) << (s & 63)


cdef inline double _sigma_of(const double* Fe, int n, const int* col, const double* val,
                             double kappa_S) noexcept nogil:
    """σ_e = u_y·F_e − κ_y S_e (u_y's n non-zeros col/val; kappa_S = κ_y S_e, 0 if not centred)."""
    cdef int k
    cdef double v = 0.0
    for k in range(n):
        v += val[k] * Fe[col[k]]
    return v - kappa_S


cdef inline void _extremes(const double* Fe, const double* gam, Py_ssize_t P,
                           const mask_t* act, const mask_t* up, const mask_t* pos,
                           double* h_up, int* a_up, double* h_dn, int* a_dn, double* h_all,
                           int* a_all) noexcept nogil:
    """Exact extremes of h_s = −F_es − γ_s over the active slots ``act``: the minimum over
    ``up`` (may increase), the maximum over ``pos`` (α > 0), the minimum over all; each with
    its slot (the first one on ties), −1 and ±inf when the set is empty.  The sets are
    masks of ⌈P/64⌉ words."""
    cdef Py_ssize_t w, b, s0, n
    cdef double h, hu = INFINITY, hd = -INFINITY, ha = INFINITY
    cdef int au = -1, ad = -1, aa = -1
    cdef mask_t ua, pa, aw
    for w in range((P + 63) >> 6):
        aw = act[w]
        ua = up[w] & aw
        pa = pos[w] & aw
        s0 = w << 6
        n = P - s0 if P - s0 < 64 else 64
        for b in range(n):
            h = -Fe[s0 + b] - gam[s0 + b]
            _track_min(h, _member(ua, b), <int> (s0 + b), &hu, &au)
            _track_max(h, _member(pa, b), <int> (s0 + b), &hd, &ad)
            _track_min(h, _member(aw, b), <int> (s0 + b), &ha, &aa)
    h_up[0] = hu
    a_up[0] = au
    h_dn[0] = hd
    a_dn[0] = ad
    h_all[0] = ha
    a_all[0] = aa


# ---------------------------------------------------------------------------
# Rows of M without its (QP)² table: M[(y,p),(z,q)] = ν_yp·ν_zq − Q μ_yp μ_zq, ν the
# uncentred ν of the active slots and μ its means (sum-to-zero machines, else 0).
# The arrays are :func:`msvm.solvers._common.machine_tables`'; rows are indexed
# y·P + p.

cdef struct NuTables:
    Py_ssize_t Q
    Py_ssize_t P
    Py_ssize_t width          # the most non-zeros any row of ν has
    const int* nz_count       # (Q·P): the non-zeros of each row of ν ...
    const int* nz_col         # (Q·P, width)
    const double* nz_val      # (Q·P, width)
    const double* nu_mean     # (Q·P)
    const int* col_start      # (Q + 1): ... and of each column c of ν
    const int* col_row
    const double* col_val


cdef inline tuple _nu_tables(NuTables* t, Py_ssize_t Q, Py_ssize_t P,
                             const int[:, ::1] nz_count, const int[:, :, ::1] nz_col,
                             const double[:, :, ::1] nz_val, const double[:, ::1] nu_mean,
                             const int[::1] col_start, const int[::1] col_row,
                             const double[::1] col_val):
    """Point t at the tables; returns the arrays to keep alive as long as t is used."""
    t.Q = Q
    t.P = P
    t.width = nz_col.shape[2]
    t.nz_count = &nz_count[0, 0]
    t.nz_col = &nz_col[0, 0, 0]
    t.nz_val = &nz_val[0, 0, 0]
    t.nu_mean = &nu_mean[0, 0]
    t.col_start = &col_start[0]
    t.col_row = &col_row[0] if col_row.shape[0] else NULL
    t.col_val = &col_val[0] if col_val.shape[0] else NULL
    return (nz_count, nz_col, nz_val, nu_mean, col_start, col_row, col_val)


cdef inline double _nu_dot(const NuTables* t, Py_ssize_t yp, const double* f,
                           double v) noexcept nogil:
    """v + Σ_c ν_{yp,c} f_c over the row's non-zeros, added to v one by one."""
    cdef int k
    for k in range(t.nz_count[yp]):
        v += t.nz_val[yp * t.width + k] * f[t.nz_col[yp * t.width + k]]
    return v


cdef inline void _scatter_nu(const NuTables* t, double* row, Py_ssize_t yp,
                             bint add) noexcept nogil:
    """row += Σ_c ν_{yp,c} ν_{·,c}, scattered from ν's columns (add), or those entries
    set to zero."""
    cdef int k, u, c
    cdef double v
    for k in range(t.nz_count[yp]):
        c = t.nz_col[yp * t.width + k]
        v = t.nz_val[yp * t.width + k]
        for u in range(t.col_start[c], t.col_start[c + 1]):
            if add:
                row[t.col_row[u]] += v * t.col_val[u]
            else:
                row[t.col_row[u]] = 0.0


cdef inline double* _coupling_row(const NuTables* t, double* row, Py_ssize_t* holds,
                                  Py_ssize_t yp) noexcept nogil:
    """row (Q·P) = the row yp of M, where it holds the row ``holds[0]`` (−1: zeros or
    anything), which becomes yp; returns row.  After a row without a mean term only
    its scattered entries are cleared."""
    cdef Py_ssize_t j, n = t.Q * t.P, last = holds[0]
    cdef double mu = t.Q * t.nu_mean[yp]
    if last == yp:
        return row
    holds[0] = yp
    if last >= 0 and t.nu_mean[last] == 0:
        _scatter_nu(t, row, last, False)
    else:
        for j in range(n):
            row[j] = 0.0
    _scatter_nu(t, row, yp, True)
    if mu != 0:
        for j in range(n):
            row[j] -= mu * t.nu_mean[j]
    return row
