"""Dual coordinate descent over examples for linear kernels, keeping the primal W.

The problem is the unified bias-free dual of :mod:`msvm.machines` with
k(x, x') = ⟨x, x'⟩ (plus shift·δ_ij for the M-SVM²).  With a linear kernel the
scores of every example are F_i = W x_i + shift·β_i, where W (stored
feature-major as ``Wt``, shape (d, Q): the Q weights of one feature are
contiguous, which is what a CSR row reads and writes) is the *uncentred*
Σ_i β_i x_iᵀ with β_ic = Σ_p ν_{y_i,p,c} α_ip.  Because ν̄ is ν centred over
classes, ν̄·F̄ = ν·F − mean_c(ν)·S with S = Σ_c F_c, so the gradient
g_ip = Σ_c ν̄_{y_i,p,c} F̄_ic − γ_{y_i,p} is read from the uncentred scores
with the sparse ν (as in :mod:`msvm._core._s2do`); the centred W̄ is
recovered at the end.  A visit of example i costs O(nnz(x_i)·Q) to compute
F_i and O(nnz(x_i)·(changed classes)) to update W.

The subproblem of one example.  Changing only α_i· by δ changes its gradient
by a·M_y δ with a = ‖x_i‖² + shift and M_y the (P × P) block of the machine
table (M(y,p ; y,q) = ν̄_p·ν̄_q), so the example's variables are optimised
together by solving

    min_δ  g·δ + ½ a δᵀ M_y δ   over the example's feasible set

(a box per slot for the sum-loss, a capped simplex for one shared max-loss
slack, α ≥ 0 for the quadratic loss).  Two solvers:

* **exact** (``kind`` 1), when M_y on the active slots is κ_y (I + ρ_y 11ᵀ)
  with ρ_y·n > −1 (n active slots) and the slack groups are all singletons,
  one group of all slots, or absent: WW and CS (κ = 1, ρ = 1), LLW, M-SVM²
  and ADM (κ = 1, ρ = −1/Q), OvA (ρ = 0) and MMR (n = 1).  The stationarity
  conditions give δ_k = clip(c_k − ρ t, l_k, u_k) with c_k = −g_k/(aκ) and
  t = Σ_k δ_k; t is the root of the non-increasing piecewise-linear
  ψ(t) = Σ_k clip(c_k − ρ t, l_k, u_k) − t, found by sorting its 2n
  breakpoints, a binary search for the piece where ψ changes sign, and one
  linear solve on that piece: O(n log n).  With one max-loss slack (CS, ADM)
  the capacity Σ α ≤ C is either inactive (the root above, with u = ∞) or
  tight, and then δ_k = max(c_k − θ, −α_k) with θ the root of
  Σ_k max(c_k − θ, −α_k) = C − Σ_k α_k (the same search) -- for CS this is
  the O(Q log Q) solution of Crammer & Singer (2001) and Keerthi et al.
  (2008).  The multiplier of the capacity is a(θ − ρ t) ≥ 0 because the
  left side falls by at most n per unit of θ and |ρ| n < 1.
* **iterative** (``kind`` 0, any machine: ATS and ATM, whose M_y is
  singular): exact one- and two-variable steps on the example's variables
  (the most violating single variable, or the most violating pair of a
  shared slack, as in S2DO's rule), with the local gradient updated by
  a·M_y, until the example's own KKT violation is ≤ tol/10 (at most
  INNER_STEPS_PER_SLOT·P + 10 steps).

Passes.  Every pass visits the working set in a fresh random order
(xorshift, seeded from ``random_state``).  A visit computes the example's
gradient and its violation by S2DO's rule (``_violation``: −g of a variable
that may increase, g of a positive one, and the move of mass between two
variables of a full max-loss slack), and steps only when it exceeds ``tol``.
So a pass over *all* examples that takes no step leaves W unchanged and
measures every violation at the final point: the stopping test (largest KKT
violation ≤ tol) is exact, as in S2DO, and
:func:`msvm.diagnostics.kkt_violation` (looser bound tolerances) never
exceeds it.

Shrinking (as liblinear's dual solvers and S2DO): an example whose every
variable is at a bound with its gradient pointing outwards by more than the
last pass's largest violation (at least ``tol``) leaves the working set.
Within the visit of a kept example, its variables that sit at a bound with the
gradient pointing outwards by at least tol leave the example's own slot list
(liblinear's per-example class shrinking, ``active_size_i`` of its
Crammer–Singer solver, for the machines whose variables of one example
compete: WW, CS, OvA; see ``_slot_rule``): the visit then reads only the score
columns its remaining slots need (their ν's non-zeros), so once most α_ik of an
example sit at 0 a visit costs O(nnz(x_i)·few) instead of O(nnz(x_i)·Q), and
an example with no slot left leaves the working set.
Everything comes back (W rebuilt from α, so no drift) whenever the shrunk
problem's largest violation falls under a threshold that starts at a tenth of
the first full pass's and halves each time (liblinear's ``eps_shrink``
schedule), and when it falls to tol: the run ends after a full pass over every
variable at that rebuilt W without a step.

Time slices: :meth:`LinearState.run` returns to Python after ``max_seconds``
(status 2), so the caller can check for signals and report progress.
Everything inside runs without the GIL and touches no Python object.
"""

cimport cython
from libc.math cimport INFINITY, fabs, sqrt
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memset

from msvm._core._steps cimport _now

import numpy as np

# Iterative subproblem: at most this many steps per slot (plus 10) per visit.
cdef int INNER_STEPS_PER_SLOT = 50
# Return-to-Python check every this many visits.
cdef int CLOCK_EVERY = 64
# Outside a verifying pass, examples whose violation exceeds this times tol get a step.
cdef double STEP_FRACTION = 0.0
# Unshrink when the shrunk working set's largest violation falls under a threshold:
# first this fraction of the first full pass's largest violation, then UNSHRINK_FACTOR
# times the previous threshold (liblinear's eps_shrink schedule, scale-free).
# A variable leaves its example's slot list when its gradient points outwards by at
# least this times tol (liblinear's class shrinking uses 0; tol keeps a variable
# whose violation could exceed tol from being dropped on a rounding-level margin).
cdef double SLOT_MARGIN = 1.0
cdef double UNSHRINK_FIRST = 0.1
cdef double UNSHRINK_FACTOR = 0.5

cdef inline void _add_scaled(double* f, const double* row, double v, bint full, Py_ssize_t Q,
                            const int* cols, Py_ssize_t ncols) noexcept nogil:
    """f += v · row on every column (``full``) or on the ncols listed in cols."""
    cdef Py_ssize_t c, t
    if full:
        for c in range(Q):
            f[c] += row[c] * v
    else:
        for t in range(ncols):
            f[cols[t]] += row[cols[t]] * v


cdef enum:
    STATUS_OPTIMAL = 0
    STATUS_MAX_ITER = 1
    STATUS_RUNNING = 2


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], z = (<const double*>b)[0]
    return (x > z) - (x < z)


cdef inline double _clip(double v, double lo, double hi) noexcept nogil:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


cdef double _psi(int n, const double* c, const double* lo, const double* hi, double rho,
                 double tau, double T, double t) noexcept nogil:
    """Σ_k clip(c_k − ρ t, lo_k, hi_k) − τ t − T (non-increasing in t)."""
    cdef int k
    cdef double s = 0.0
    for k in range(n):
        s += _clip(c[k] - rho * t, lo[k], hi[k])
    return s - tau * t - T


cdef double _root(int n, const double* c, const double* lo, const double* hi, double rho,
                  double tau, double T, double* bp) noexcept nogil:
    """The root t of ψ(t) = Σ_k clip(c_k − ρ t, lo_k, hi_k) − τ t − T.

    ψ is piecewise linear and non-increasing, with slope −ρ·n_free − τ < 0 on
    the pieces that hold a root (the callers guarantee it).  ``bp`` is scratch
    of 2n doubles.  The breakpoints are sorted, the piece where ψ changes sign
    is found by binary search, and t solves the linear equation of that piece.
    """
    cdef int k, nb = 0, lo_i, hi_i, mid, nfree = 0
    cdef double probe, v, fixed = 0.0, csum = 0.0, den
    if rho != 0.0:
        for k in range(n):
            if lo[k] > -INFINITY:
                bp[nb] = (c[k] - lo[k]) / rho
                nb += 1
            if hi[k] < INFINITY:
                bp[nb] = (c[k] - hi[k]) / rho
                nb += 1
        qsort(bp, nb, sizeof(double), _cmp_double)
    # Largest j with ψ(bp[j]) ≥ 0 (−1 if none).
    lo_i = -1
    hi_i = nb
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        if _psi(n, c, lo, hi, rho, tau, T, bp[mid]) >= 0:
            lo_i = mid
        else:
            hi_i = mid
    if nb == 0:
        probe = 0.0
    elif lo_i < 0:
        probe = bp[0] - 1.0 - fabs(bp[0])
    elif lo_i == nb - 1:
        probe = bp[nb - 1] + 1.0 + fabs(bp[nb - 1])
    else:
        probe = 0.5 * (bp[lo_i] + bp[lo_i + 1])
    for k in range(n):
        v = c[k] - rho * probe
        if v <= lo[k]:
            fixed += lo[k]
        elif v >= hi[k]:
            fixed += hi[k]
        else:
            csum += c[k]
            nfree += 1
    den = rho * nfree + tau
    if den <= 0:
        return probe
    return (fixed + csum - T) / den


@cython.final
cdef class LinearState:
    """State of the linear dual coordinate descent (see the module docstring).

    Parameters
    ----------
    X, indices, indptr : arrays
        Dense rows (``indptr`` of length 0) or CSR (``X`` the data).
    n_features : int
    y : (m,) intp
    alpha : (m, P) float64, modified in place
    Wt : (d, Q) float64, the uncentred W transposed, modified in place
    B : (m, Q) float64, the uncentred β (read and kept only when shift > 0)
    sqnorm : (m,) float64, filled with ‖x_i‖² (summed over the non-zeros in order, so
        dense and CSR rows give the same bits)
    M, gamma, active, slack, group_size, nz_count, nz_col, nz_val, nu_mean :
        the machine tables of :func:`msvm.solvers.linear._tables` (M: the (Q, P, P)
        diagonal blocks).
    kind : (Q,) int32, 1 for the exact subproblem solver, 0 for the iterative one
    kappa, rho : (Q,) float64, M_y = κ_y (I + ρ_y 11ᵀ) on the active slots (kind 1)
    C, shift : (m,) float64, each example's capacity C w_i (+inf: none) and kernel
        shift (1/(2C w_i) for the M-SVM², else 0); a visit loads its example's
        values into the scalars ``C`` and ``shift`` (``_example``)
    tol : float
    centred, shrinking : bool
    seed : int
    """

    cdef const double[::1] Xd
    cdef const double[:, ::1] Xm
    cdef const int[::1] ind
    cdef const Py_ssize_t[::1] ptr
    cdef bint sparse
    cdef Py_ssize_t m, d, P, Q, R
    cdef const Py_ssize_t[::1] y
    cdef double[:, ::1] alpha
    cdef double[:, ::1] Wt
    cdef double[:, ::1] B
    cdef double[::1] sqnorm
    cdef const double[:, :, ::1] M
    cdef const double[:, ::1] gamma
    cdef const unsigned char[:, ::1] active
    cdef const int[:, ::1] slack
    cdef const int[:, ::1] group_size
    cdef const int[:, ::1] nz_count
    cdef const int[:, :, ::1] nz_col
    cdef const double[:, :, ::1] nz_val
    cdef const double[:, ::1] nu_mean
    cdef const int[::1] kind
    cdef const double[::1] kappa
    cdef const double[::1] rho
    cdef double C, shift, tol, eps_zero, eps_cap   # C, shift, eps_*: the visited example's
    cdef const double[::1] Cs
    cdef const double[::1] shifts
    cdef bint centred, shrinking, max_loss
    cdef unsigned long long rng
    # Per-class lists of active slots.
    cdef int* nact
    cdef int* slots        # Q × P
    # Per-example slot lists (m × P): the first nsl[i] are not shrunk (see _shrink_slots).
    cdef int* sperm
    cdef int* nsl
    cdef long long slots_out      # slots shrunk since the last unshrink
    # The current visit's slot list (into sperm) and its length.
    cdef int* vsl
    cdef int vn
    # Per class: whether its slots may be shrunk one by one (see _slot_rule).
    cdef unsigned char* slot_ok
    # Score columns a visit needs (the union of ν's non-zeros over its slots).
    cdef int* cols
    cdef unsigned char* colmark
    cdef Py_ssize_t ncols
    # Working set and pass state.
    cdef Py_ssize_t* order
    cdef Py_ssize_t n_active
    cdef Py_ssize_t pos
    cdef bint in_pass
    cdef bint full_pass
    cdef bint verifying
    cdef public double step_floor
    cdef double unshrink_at
    cdef double slot_mu
    cdef double pass_max
    cdef long long pass_steps
    cdef double margin
    # Scratch (per visit).
    cdef double* f
    cdef double* g
    cdef double* delta
    cdef double* dbeta
    cdef int* dcols
    cdef double* gsum
    cdef double* c
    cdef double* lo
    cdef double* hi
    cdef double* bp
    cdef double* a_loc
    cdef double* g_loc
    cdef readonly long long n_iter
    cdef readonly long long n_steps
    cdef readonly long long n_visits
    cdef readonly long long n_unshrink
    cdef readonly long long n_inner
    cdef readonly long long n_score_ops
    cdef readonly long long n_update_ops
    cdef readonly long long n_slot_shrinks
    cdef readonly double max_violation
    cdef readonly double last_pass_max

    # Cython starts every C attribute at 0/NULL, so __dealloc__ may free whatever
    # __init__ reached (free(NULL) is a no-op).
    def __dealloc__(self):
        free(self.nact)
        free(self.slots)
        free(self.order)
        free(self.f)
        free(self.g)
        free(self.delta)
        free(self.dbeta)
        free(self.dcols)
        free(self.gsum)
        free(self.c)
        free(self.lo)
        free(self.hi)
        free(self.bp)
        free(self.a_loc)
        free(self.g_loc)
        free(self.sperm)
        free(self.nsl)
        free(self.cols)
        free(self.colmark)
        free(self.slot_ok)

    def __init__(self, X, indices, indptr, Py_ssize_t n_features, y, alpha, Wt, B, sqnorm,
                 M, gamma, active, slack, group_size, nz_count, nz_col, nz_val, nu_mean,
                 kind, kappa, rho, const double[::1] C, const double[::1] shift, double tol,
                 bint centred,
                 bint shrinking, unsigned long long seed):
        cdef Py_ssize_t q, s, k
        self.sparse = len(indptr) > 0
        if self.sparse:
            self.Xd = X
            self.ind = indices
            self.ptr = indptr
            self.m = len(indptr) - 1
        else:
            self.Xm = X
            self.m = X.shape[0]
        self.d = n_features
        self.y = y
        self.alpha = alpha
        self.Wt = Wt
        self.B = B
        self.sqnorm = sqnorm
        self.M = M
        self.gamma = gamma
        self.active = active
        self.slack = slack
        self.group_size = group_size
        self.nz_count = nz_count
        self.nz_col = nz_col
        self.nz_val = nz_val
        self.nu_mean = nu_mean
        self.kind = kind
        self.kappa = kappa
        self.rho = rho
        self.Q = gamma.shape[0]
        self.P = gamma.shape[1]
        self.R = group_size.shape[1]
        if C.shape[0] != self.m or shift.shape[0] != self.m:
            raise ValueError("C and shift need one entry per example.")
        self.Cs = C
        self.shifts = shift
        if self.m > 0:
            self._example(0)
        self.tol = tol
        self.centred = centred
        self.shrinking = shrinking
        self.max_loss = bool(np.any(np.asarray(group_size) > 1))
        self.rng = seed * 2685821657736338717ULL + 0x9E3779B97F4A7C15ULL
        if self.rng == 0:
            self.rng = 0x9E3779B97F4A7C15ULL
        cdef Py_ssize_t Q = self.Q, P = self.P
        self.nact = <int*>malloc(Q * sizeof(int))
        self.slots = <int*>malloc(Q * P * sizeof(int))
        self.order = <Py_ssize_t*>malloc(self.m * sizeof(Py_ssize_t))
        self.f = <double*>malloc(Q * sizeof(double))
        self.g = <double*>malloc(P * sizeof(double))
        self.delta = <double*>malloc(P * sizeof(double))
        self.dbeta = <double*>malloc(Q * sizeof(double))
        self.dcols = <int*>malloc(Q * sizeof(int))
        self.gsum = <double*>malloc((self.R + 1) * sizeof(double))
        self.c = <double*>malloc(P * sizeof(double))
        self.lo = <double*>malloc(P * sizeof(double))
        self.hi = <double*>malloc(P * sizeof(double))
        self.bp = <double*>malloc(2 * P * sizeof(double))
        self.a_loc = <double*>malloc(P * sizeof(double))
        self.g_loc = <double*>malloc(P * sizeof(double))
        self.sperm = <int*>malloc(self.m * P * sizeof(int))
        self.nsl = <int*>malloc(self.m * sizeof(int))
        self.cols = <int*>malloc(Q * sizeof(int))
        self.colmark = <unsigned char*>malloc(Q * sizeof(unsigned char))
        self.slot_ok = <unsigned char*>malloc(Q * sizeof(unsigned char))
        if (self.nact == NULL or self.slots == NULL or self.order == NULL or self.f == NULL
                or self.g == NULL or self.delta == NULL or self.dbeta == NULL
                or self.dcols == NULL or self.gsum == NULL or self.c == NULL
                or self.lo == NULL or self.hi == NULL or self.bp == NULL
                or self.a_loc == NULL or self.g_loc == NULL or self.sperm == NULL
                or self.nsl == NULL or self.cols == NULL or self.colmark == NULL
                or self.slot_ok == NULL):
            raise MemoryError()
        memset(self.colmark, 0, Q * sizeof(unsigned char))
        memset(self.dbeta, 0, Q * sizeof(double))
        memset(self.delta, 0, P * sizeof(double))   # inactive slots stay 0
        for q in range(Q):
            k = 0
            for s in range(P):
                if self.active[q, s]:
                    self.slots[q * P + k] = <int>s
                    k += 1
            self.nact[q] = <int>k
        self._slot_rule()
        for k in range(self.m):
            self.order[k] = k
            q = self.y[k]
            for s in range(self.nact[q]):
                self.sperm[k * P + s] = self.slots[q * P + s]
            self.nsl[k] = self.nact[q]
        self.slots_out = 0
        self.vsl = self.sperm
        self.vn = 0
        self.n_active = self.m
        self.pos = 0
        self.in_pass = False
        self.full_pass = True
        self.verifying = False
        self.step_floor = STEP_FRACTION * tol
        self.margin = INFINITY
        self.pass_max = 0.0
        self.pass_steps = 0
        self.n_iter = 0
        self.n_steps = 0
        self.n_visits = 0
        self.n_unshrink = 0
        self.n_inner = 0
        self.n_score_ops = 0
        self.n_update_ops = 0
        self.n_slot_shrinks = 0
        self.unshrink_at = INFINITY
        self.slot_mu = SLOT_MARGIN * tol
        self.max_violation = INFINITY
        self.last_pass_max = INFINITY
        with nogil:
            self._norms()
            self._rebuild()

    cdef void _slot_rule(self) noexcept nogil:
        """slot_ok[y]: may the slots of class y be shrunk one by one?

        Only when the machine is not sum-to-zero (its gradient would need every
        score column through S = Σ_c F_c, so a shorter list would save nothing)
        and the block M_y has no negative off-diagonal entry on the active
        slots: then the example's variables compete (WW, CS: κ(I + 11ᵀ)) or are
        independent (OvA), and a step on the others does not pull a variable
        sitting at 0 back into play.  With negative entries (LLW, M-SVM², ADM,
        ATS, ATM: I − 11ᵀ/Q, all sum-to-zero anyway) they cooperate, and
        shrinking them one by one doubled the passes of LLW on mnist.
        """
        cdef Py_ssize_t q, t, u, P = self.P
        cdef int s, r
        for q in range(self.Q):
            self.slot_ok[q] = not self.centred
            for t in range(self.nact[q]):
                s = self.slots[q * P + t]
                for u in range(self.nact[q]):
                    r = self.slots[q * P + u]
                    if r != s and self.M[q, s, r] < 0.0:
                        self.slot_ok[q] = False

    cdef void _norms(self) noexcept nogil:
        cdef Py_ssize_t i, j, k
        cdef double v, acc
        for i in range(self.m):
            acc = 0.0
            if self.sparse:
                for k in range(self.ptr[i], self.ptr[i + 1]):
                    v = self.Xd[k]
                    acc += v * v
            else:
                for j in range(self.d):
                    v = self.Xm[i, j]
                    if v != 0.0:
                        acc += v * v
            self.sqnorm[i] = acc

    # ------------------------------------------------------------ W and F
    cdef void _rebuild(self) noexcept nogil:
        """W (and B) from α, exactly: Wt = Σ_i x_i β_iᵀ with the uncentred β."""
        cdef Py_ssize_t i, c, j, k, ncol
        cdef double v
        for j in range(self.d):
            for c in range(self.Q):
                self.Wt[j, c] = 0.0
        for i in range(self.m):
            ncol = self._beta_of(i, &self.alpha[i, 0], &self.slots[self.y[i] * self.P],
                                 self.nact[self.y[i]])
            if self.shifts[i] != 0.0:
                for c in range(self.Q):
                    self.B[i, c] = self.dbeta[c]
            if ncol > 0:
                self._axpy(i, ncol)
            for k in range(ncol):
                self.dbeta[self.dcols[k]] = 0.0

    cdef Py_ssize_t _beta_of(self, Py_ssize_t i, const double* v, const int* sl,
                             int n) noexcept nogil:
        """dbeta[c] = Σ_p ν_{y_i,p,c} v_p (uncentred) over the n slots sl; changed columns
        in dcols (listed once each, through colmark)."""
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, k, col, ncol = 0
        for t in range(n):
            s = sl[t]
            if v[s] == 0.0:
                continue
            for k in range(self.nz_count[yi, s]):
                col = self.nz_col[yi, s, k]
                ncol = self._list_column(col, self.dcols, ncol)
                self.dbeta[col] += self.nz_val[yi, s, k] * v[s]
        self._unmark(self.dcols, ncol)
        return ncol

    cdef inline int _list_column(self, int col, int* cols, int n) noexcept nogil:
        """Append col to cols[:n] unless colmark says it is listed; the new count."""
        if not self.colmark[col]:
            self.colmark[col] = 1
            cols[n] = col
            return n + 1
        return n

    cdef inline void _unmark(self, const int* cols, int n) noexcept nogil:
        cdef int t
        for t in range(n):
            self.colmark[cols[t]] = 0

    cdef void _axpy(self, Py_ssize_t i, Py_ssize_t ncol) noexcept nogil:
        """Wt[j, c] += dbeta[c] x_ij for the listed columns c and the non-zeros j of x_i."""
        cdef Py_ssize_t k, j, t
        cdef double v
        cdef double* row
        cdef double* db = self.dbeta
        cdef int* cols = self.dcols
        if self.sparse:
            self.n_update_ops += (self.ptr[i + 1] - self.ptr[i]) * ncol
            for k in range(self.ptr[i], self.ptr[i + 1]):
                v = self.Xd[k]
                row = &self.Wt[self.ind[k], 0]
                for t in range(ncol):
                    row[cols[t]] += db[cols[t]] * v
        else:
            for j in range(self.d):
                v = self.Xm[i, j]
                if v == 0.0:
                    continue
                self.n_update_ops += ncol
                row = &self.Wt[j, 0]
                for t in range(ncol):
                    row[cols[t]] += db[cols[t]] * v

    cdef void _columns(self, Py_ssize_t i) noexcept nogil:
        """cols[:ncols] = the score columns the visit's slots read (ncols = Q: all of them).

        With every slot of the class in play, all columns (Q) without listing them.
        """
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, k, n = 0
        if self.vn == self.nact[yi]:
            self.ncols = self.Q         # no slot shrunk: read every column
            return
        for t in range(self.vn):
            s = self.vsl[t]
            for k in range(self.nz_count[yi, s]):
                n = self._list_column(self.nz_col[yi, s, k], self.cols, n)
        self._unmark(self.cols, n)
        self.ncols = n

    cdef void _scores(self, Py_ssize_t i) noexcept nogil:
        """f = W x_i (+ shift β_i), uncentred, on the columns the visit reads.

        With every slot of the example in play the Q contiguous columns of each
        non-zero's row are read; once shrinking has left a few slots (the usual
        case for many classes: most α_ik sit at 0 with their gradients far
        outside), only their columns are gathered, so a visit costs
        O(nnz(x_i)·(columns read)).  (Slots are shrunk only for machines that are
        not sum-to-zero, whose gradient would need every column through S.)
        """
        cdef Py_ssize_t k, j, c, Q = self.Q, ncols
        cdef double v
        cdef double* f = self.f
        cdef int* cols = self.cols
        cdef bint full
        self._columns(i)
        ncols = self.ncols
        full = ncols >= Q
        for c in range(Q):
            f[c] = 0.0
        if self.sparse:
            self.n_score_ops += (self.ptr[i + 1] - self.ptr[i]) * ncols
            for k in range(self.ptr[i], self.ptr[i + 1]):
                v = self.Xd[k]
                _add_scaled(f, &self.Wt[self.ind[k], 0], v, full, Q, cols, ncols)
        else:
            for j in range(self.d):
                v = self.Xm[i, j]
                if v == 0.0:
                    continue
                self.n_score_ops += ncols
                _add_scaled(f, &self.Wt[j, 0], v, full, Q, cols, ncols)
        if self.shift != 0.0:
            for c in range(Q):
                f[c] += self.shift * self.B[i, c]

    cdef void _gradient(self, Py_ssize_t i) noexcept nogil:
        """g_p = ν_p·f − mean(ν_p)·Σ_c f_c − γ_p for the visit's slots."""
        cdef Py_ssize_t yi = self.y[i], s
        cdef int k, t
        cdef double S = 0.0, v
        if self.centred:            # (all Q columns were read: no slot of it is shrunk)
            for k in range(self.Q):
                S += self.f[k]
        for t in range(self.vn):
            s = self.vsl[t]
            v = -self.gamma[yi, s]
            for k in range(self.nz_count[yi, s]):
                v += self.nz_val[yi, s, k] * self.f[self.nz_col[yi, s, k]]
            if self.centred:
                v -= self.nu_mean[yi, s] * S
            self.g[s] = v

    # ------------------------------------------------------------ violation
    cdef inline void _group_sums(self, Py_ssize_t yi, const double* a) noexcept nogil:
        """gsum[r]: the sum of slack group r's variables of one example (α = a, over its
        movable slots)."""
        cdef int t, r
        for r in range(self.R):
            self.gsum[r] = 0.0
        for t in range(self.vn):
            r = self.slack[yi, self.vsl[t]]
            if r >= 0:
                self.gsum[r] += a[self.vsl[t]]

    cdef double _violation(self, Py_ssize_t yi, const double* a, const double* g,
                           double margin) noexcept nogil:
        """Largest violation of one example's variables (α = a, gradient g), S2DO's rule.

        With margin > 0, the largest 'near violation' (violation + margin) that
        shrinking uses; then a move of mass in a max-loss slack goes from the
        highest positive slot to the lowest *other* slot.
        """
        cdef int t, n = self.vn, r
        cdef Py_ssize_t s
        cdef double best = 0.0, gv, lim = self.C - self.eps_cap
        cdef double gdn, gmin1, gmin2
        cdef int adn, amin1
        cdef int* sl = self.vsl
        self._group_sums(yi, a)
        for t in range(n):
            s = sl[t]
            gv = g[s]
            r = self.slack[yi, s]
            if (r < 0 or self.gsum[r] < lim) and margin - gv > best:
                best = margin - gv
            if a[s] > 0 and gv + margin > best:
                best = gv + margin
        if self.max_loss:
            for r in range(self.R):
                gdn = -INFINITY
                adn = -1
                gmin1 = INFINITY
                gmin2 = INFINITY
                amin1 = -1
                for t in range(n):
                    s = sl[t]
                    if self.slack[yi, s] != r or self.group_size[yi, r] < 2:
                        continue
                    gv = g[s]
                    if a[s] > 0 and gv > gdn:
                        gdn = gv
                        adn = <int>s
                    if gv < gmin1:
                        gmin2 = gmin1
                        gmin1 = gv
                        amin1 = <int>s
                    elif gv < gmin2:
                        gmin2 = gv
                if adn < 0:
                    continue
                if adn != amin1:
                    gv = gdn - gmin1 + margin
                elif margin > 0:
                    gv = gdn - gmin2 + margin
                else:
                    continue
                if gv > best:
                    best = gv
        return best

    # ------------------------------------------------------------ subproblems
    cdef void _solve_exact(self, Py_ssize_t i, double curv) noexcept nogil:
        """δ of example i from the closed form of the module docstring (kind 1)."""
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, n = self.vn
        cdef int* sl = self.vsl
        cdef double a = curv * self.kappa[yi], rho = self.rho[yi]
        cdef double total = 0.0, tt, theta
        cdef bint simplex = self.group_size[yi, 0] > 1
        cdef bint capped = self.C < INFINITY
        if a <= 0.0:
            self._solve_flat(i)
            return
        for t in range(n):
            s = sl[t]
            self.c[t] = -self.g[s] / a
            self.lo[t] = -self.alpha[i, s]
            total += self.alpha[i, s]
            if capped and not simplex:
                self.hi[t] = self.C - self.alpha[i, s]
            else:
                self.hi[t] = INFINITY
        tt = self._t_unconstrained(n, rho)
        if simplex and capped:
            # Capacity inactive at the optimum with u = ∞?  Else it is tight.
            theta = 0.0
            for t in range(n):
                theta += _clip(self.c[t] - rho * tt, self.lo[t], INFINITY)
            if total + theta > self.C:
                theta = _root(n, self.c, self.lo, self.hi, 1.0, 0.0, self.C - total, self.bp)
                for t in range(n):
                    s = sl[t]
                    self.delta[s] = _clip(self.c[t] - theta, self.lo[t], INFINITY)
                return
        for t in range(n):
            s = sl[t]
            self.delta[s] = _clip(self.c[t] - rho * tt, self.lo[t], self.hi[t])

    cdef double _t_unconstrained(self, int n, double rho) noexcept nogil:
        """Root t of Σ clip(c − ρ t, lo, hi) = t on the current c, lo, hi (0 if ρ = 0)."""
        if rho == 0.0:
            return 0.0
        return _root(n, self.c, self.lo, self.hi, rho, 1.0, 0.0, self.bp)

    cdef void _solve_flat(self, Py_ssize_t i) noexcept nogil:
        """x_i = 0 and no shift: the objective is linear in α_i; go to the best vertex."""
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, n = self.vn, r, best_t
        cdef int* sl = self.vsl
        cdef double best
        for t in range(n):
            s = sl[t]
            self.delta[s] = -self.alpha[i, s]
        if self.C == INFINITY:
            for t in range(n):      # (cannot happen: the M-SVM² has a shift > 0)
                s = sl[t]
                self.delta[s] = 0.0
            return
        for r in range(self.R):
            best = 0.0
            best_t = -1
            for t in range(n):
                s = sl[t]
                if self.slack[yi, s] == r and self.g[s] < best:
                    best = self.g[s]
                    best_t = t
            if best_t >= 0:
                s = sl[best_t]
                self.delta[s] = self.C - self.alpha[i, s]

    cdef void _solve_iterative(self, Py_ssize_t i, double curv) noexcept nogil:
        """δ of example i by exact 1-D and 2-D steps on its variables (kind 0)."""
        cdef Py_ssize_t yi = self.y[i], s, q, p
        cdef int t, u, n = self.vn, r, step, max_steps
        cdef int* sl = self.vsl
        cdef double* a = self.a_loc
        cdef double* g = self.g_loc
        cdef double lim = self.C - self.eps_cap, best, gv, h, mu, room
        cdef double gdn, gmin, stop = 0.1 * self.tol
        cdef int bp, bq, adn, amin
        for t in range(n):
            s = sl[t]
            a[s] = self.alpha[i, s]
            g[s] = self.g[s]
        max_steps = INNER_STEPS_PER_SLOT * n + 10
        for step in range(max_steps):
            self._group_sums(yi, a)
            best = stop
            bp = -1
            bq = -1
            for t in range(n):
                s = sl[t]
                gv = g[s]
                r = self.slack[yi, s]
                if (r < 0 or self.gsum[r] < lim) and -gv > best:
                    best = -gv
                    bp = <int>s
                    bq = -1
                if a[s] > 0 and gv > best:
                    best = gv
                    bp = <int>s
                    bq = -1
            if self.max_loss:
                for r in range(self.R):
                    gdn = -INFINITY
                    gmin = INFINITY
                    adn = -1
                    amin = -1
                    for t in range(n):
                        s = sl[t]
                        if self.slack[yi, s] != r or self.group_size[yi, r] < 2:
                            continue
                        if a[s] > 0 and g[s] > gdn:
                            gdn = g[s]
                            adn = <int>s
                        if g[s] < gmin:
                            gmin = g[s]
                            amin = <int>s
                    if adn >= 0 and adn != amin and gdn - gmin > best:
                        best = gdn - gmin
                        bp = adn
                        bq = amin
            if bp < 0:
                break
            self.n_inner += 1
            p = bp
            if bq < 0:
                # One variable: minimise g μ + ½ h μ² over [−a_p, room].
                h = curv * self.M[yi, p, p]
                r = self.slack[yi, p]
                room = INFINITY if r < 0 else self.C - self.gsum[r]
                if room < 0:
                    room = 0.0
                if h > 0:
                    mu = _clip(-g[p] / h, -a[p], room)
                else:
                    mu = -a[p] if g[p] > 0 else room
                if mu == INFINITY or mu == -INFINITY:
                    break
                a[p] += mu
                if a[p] < self.eps_zero:
                    mu -= a[p]
                    a[p] = 0.0
                for u in range(n):
                    s = sl[u]
                    g[s] += curv * self.M[yi, s, p] * mu
            else:
                # Mass μ from p to q (same full slack): curvature along e_q − e_p.
                q = bq
                h = curv * (self.M[yi, p, p] + self.M[yi, q, q]
                            - 2.0 * self.M[yi, p, q])
                if h > 0:
                    mu = _clip((g[p] - g[q]) / h, 0.0, a[p])
                else:
                    mu = a[p]
                a[p] -= mu
                if a[p] < self.eps_zero:
                    mu += a[p]
                    a[p] = 0.0
                a[q] += mu
                for u in range(n):
                    s = sl[u]
                    g[s] += curv * (self.M[yi, s, q] - self.M[yi, s, p]) * mu
        for t in range(n):
            s = sl[t]
            self.delta[s] = a[s] - self.alpha[i, s]

    # ------------------------------------------------------------ one visit
    cdef inline void _example(self, Py_ssize_t i) noexcept nogil:
        """Load example i's capacity, shift and round-off thresholds (per-example weights)."""
        self.C = self.Cs[i]
        self.shift = self.shifts[i]
        self.eps_zero = 1e-14 * (self.C if self.C < INFINITY else 1.0)
        self.eps_cap = 1e-12 * self.C if self.C < INFINITY else 0.0

    cdef void _shrink_slots(self, Py_ssize_t i, double mu) noexcept nogil:
        """Drop from the visit's slot list the variables that cannot move while mu holds.

        A variable leaves when it sits at a bound with its gradient pointing
        outwards by at least mu: α = 0 with g ≥ mu (no increase alone) and, in a
        max-loss slack shared with others, g ≥ g_top + mu, g_top the largest
        gradient of a positive variable of that slack (no mass worth moving to
        it); or α = C in a slack of its own with g ≤ −mu.  Positive variables of
        a shared slack stay.  This is liblinear's per-example class shrinking
        (``Solver_MCSVM_CS``'s ``active_size_i``) for every machine of the
        table; the list is the front of ``sperm[i]``, the dropped slots are
        swapped behind it, and :meth:`_unshrink` restores them.
        """
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, n = self.vn, r, tmp
        cdef int* sl = self.vsl
        cdef double gv, av, lim = self.C - self.eps_cap
        cdef double* top = self.gsum        # scratch: g_top per slack
        cdef bint out
        if self.max_loss:
            for r in range(self.R):
                top[r] = -INFINITY
            for t in range(n):
                s = sl[t]
                r = self.slack[yi, s]
                if r >= 0 and self.alpha[i, s] > 0 and self.g[s] > top[r]:
                    top[r] = self.g[s]
        t = 0
        while t < n:
            s = sl[t]
            av = self.alpha[i, s]
            gv = self.g[s]
            r = self.slack[yi, s]
            out = False
            if av == 0.0:
                out = gv >= mu and (r < 0 or self.group_size[yi, r] < 2 or gv >= top[r] + mu)
            elif r >= 0 and self.group_size[yi, r] < 2 and av >= lim:
                out = gv <= -mu
            if out:
                n -= 1
                tmp = sl[t]
                sl[t] = sl[n]
                sl[n] = tmp
                self.n_slot_shrinks += 1
                self.slots_out += 1
            else:
                t += 1
        self.vn = n
        self.nsl[i] = n

    cdef double _visit(self, Py_ssize_t i, bint* shrink) noexcept nogil:
        """Gradient, violation and (if it exceeds tol) the exact step of example i.

        Order of work (liblinear's): the scores of the example's remaining slots,
        their gradients and violation, then (while shrinking) the slots that
        cannot move leave its list, and the subproblem is solved on the rest.
        """
        cdef Py_ssize_t yi = self.y[i], s
        cdef int t, n
        cdef int* sl
        cdef double viol, curv, new
        cdef Py_ssize_t ncol, k
        cdef bint moved = False
        cdef bint shrink_now = self.shrinking and self.margin < INFINITY
        self.vsl = &self.sperm[i * self.P]
        self.vn = self.nsl[i]
        sl = self.vsl
        shrink[0] = False
        if self.vn == 0:
            shrink[0] = self.shrinking
            return 0.0
        self._example(i)
        self._scores(i)
        self._gradient(i)
        viol = self._violation(yi, &self.alpha[i, 0], self.g, 0.0)
        if self.shrinking and self.slot_ok[yi]:
            self._shrink_slots(i, self.slot_mu)
            if self.vn == 0:
                shrink[0] = True
                return viol
        n = self.vn
        if viol <= (self.tol if self.verifying else self.step_floor):
            if shrink_now:
                shrink[0] = self._violation(yi, &self.alpha[i, 0], self.g, self.margin) <= 0
            return viol
        curv = self.sqnorm[i] + self.shift
        for t in range(n):
            self.delta[sl[t]] = 0.0
        if self.kind[yi] == 1:
            self._solve_exact(i, curv)
        else:
            self._solve_iterative(i, curv)
        for t in range(n):
            s = sl[t]
            if self.delta[s] == 0.0:
                continue
            new = self.alpha[i, s] + self.delta[s]
            if new < self.eps_zero:
                new = 0.0
            self.delta[s] = new - self.alpha[i, s]
            self.alpha[i, s] = new
            if self.delta[s] != 0.0:
                moved = True
        if not moved:
            return viol
        self.n_steps += 1
        self.pass_steps += 1
        ncol = self._beta_of(i, self.delta, sl, n)
        if self.shift != 0.0:
            for k in range(ncol):
                self.B[i, self.dcols[k]] += self.dbeta[self.dcols[k]]
        self._axpy(i, ncol)
        for k in range(ncol):
            self.dbeta[self.dcols[k]] = 0.0
        # delta is all zero between visits (the solvers write the visit's slots only).
        for t in range(n):
            self.delta[sl[t]] = 0.0
        return viol

    # ------------------------------------------------------------ passes
    cdef inline unsigned long long _next(self) noexcept nogil:
        cdef unsigned long long x = self.rng
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        self.rng = x
        return x * 2685821657736338717ULL

    cdef void _shuffle(self) noexcept nogil:
        cdef Py_ssize_t k, j, tmp
        for k in range(self.n_active - 1, 0, -1):
            j = <Py_ssize_t>(self._next() % <unsigned long long>(k + 1))
            tmp = self.order[k]
            self.order[k] = self.order[j]
            self.order[j] = tmp

    cdef void _unshrink(self) noexcept nogil:
        """Every example and every slot back in play; W rebuilt from α (no drift)."""
        cdef Py_ssize_t i
        self.n_active = self.m
        for i in range(self.m):
            self.nsl[i] = self.nact[self.y[i]]
        self.slots_out = 0
        self.margin = INFINITY
        self.n_unshrink += 1
        self._rebuild()

    cdef int _run(self, long long max_passes, double max_seconds) noexcept nogil:
        cdef double start = _now(), v
        cdef long long passes = 0, since_clock = 0
        cdef Py_ssize_t i, tmp
        cdef bint shrink
        while True:
            if not self.in_pass:
                if passes >= max_passes:
                    return STATUS_MAX_ITER
                self._shuffle()
                self.in_pass = True
                self.full_pass = self.n_active == self.m and self.slots_out == 0
                self.pos = 0
                self.pass_max = 0.0
                self.pass_steps = 0
            while self.pos < self.n_active:
                i = self.order[self.pos]
                v = self._visit(i, &shrink)
                self.n_visits += 1
                if v > self.pass_max:
                    self.pass_max = v
                if shrink:
                    self.n_active -= 1
                    tmp = self.order[self.pos]
                    self.order[self.pos] = self.order[self.n_active]
                    self.order[self.n_active] = tmp
                else:
                    self.pos += 1
                since_clock += 1
                if since_clock >= CLOCK_EVERY:
                    since_clock = 0
                    if _now() - start >= max_seconds:
                        return STATUS_RUNNING
            # End of a pass.
            self.in_pass = False
            self.last_pass_max = self.pass_max
            self.n_iter += 1
            passes += 1
            if self.full_pass:
                self.max_violation = self.pass_max
            if self.pass_max <= self.tol:
                if self.verifying and self.full_pass:
                    return STATUS_OPTIMAL      # (no step: a verifying pass steps above tol only)
                # The verifying pass reads every variable at W rebuilt from α: the
                # incremental updates (and column Q's sum) carry no drift into the test.
                self._unshrink()
                self.verifying = True
                continue
            self.verifying = False
            if self.full_pass and self.unshrink_at == INFINITY:
                self.unshrink_at = UNSHRINK_FIRST * self.pass_max
            if not self.full_pass and self.pass_max <= self.unshrink_at:
                # liblinear's schedule: whenever the shrunk problem's violation falls
                # under the threshold, everything comes back and the threshold halves.
                self.unshrink_at = UNSHRINK_FACTOR * self.unshrink_at
                self._unshrink()
                continue
            self.margin = self.pass_max if self.pass_max > self.tol else self.tol
            if _now() - start >= max_seconds:
                return STATUS_RUNNING

    def run(self, long long max_passes, double max_seconds):
        """Passes until convergence, ``max_passes`` passes, or ``max_seconds``.

        Returns 0 (converged: a full pass without a step, every violation ≤ tol),
        1 (``max_passes`` reached) or 2 (time slice over; call again).
        """
        cdef int code
        with nogil:
            code = self._run(max_passes, max_seconds)
        return code

    @property
    def n_work(self):
        """Examples in the working set (not shrunk)."""
        return int(self.n_active)
