"""Hot paths of the Frank–Wolfe solver (:mod:`msvm.solvers.frank_wolfe`).

Everything here works on one *working set* B of examples, in the layout the
Python driver prepares once per split:

* ``alpha``, ``g`` (n_B, P): the variables of B and the gradient of the dual
  J with respect to them, ∂J/∂α_ip = Σ_c ν̄_{y_i,p,c} (K'β̄)_ic − γ_{y_i,p};
* ``nu`` (n_B, P, Q): ν̄_{y_i,p,·} of every slot (zero rows for inactive slots);
* ``K`` (n_B, n_B): the Gram block K_BB (without the M-SVM² diagonal shift,
  which is passed as ``shift``, one value per example: 1/(2C w_i));
* ``group`` (n_B, P) int32 and ``active`` (n_B, P) uint8: the slack group of
  every slot and whether the slot exists; a group of size one is a box
  0 ≤ α ≤ cap_i, a larger group a capped simplex Σ α ≤ cap_i, α ≥ 0, with
  ``cap`` (n_B,) the capacity of each example (C w_i, or the M-SVM²'s box).

Two kernels, both without the GIL:

:func:`linear_minimizer`
    the closed-form vertex s = argmin_{s in the polytope} Gᵀs of the product
    of boxes and capped simplices (no equality constraint): in every group,
    ``cap_i`` on the slot of smallest G if that G is negative, else nothing.
    It also returns each example's share G_iᵀ(α_i − s_i) ≥ 0 of the
    Frank–Wolfe gap, which the driver uses as the certificate and as the
    per-example KKT violation that picks the next working set.

:func:`line_search_step`
    the exact line search of seed 000 §5.2 along a direction d and the
    update of α and g.  With Δβ_i = Σ_p ν̄_ip d_ip, the directional
    derivative is gᵀd and the curvature dᵀHd = Σ_i Δβ_iᵀ (K'Δβ)_i, so
    θ = clip(−gᵀd / dᵀHd, 0, θ_max); then α += θd and g += θ ν̄·(K'Δβ).
    K'Δβ is one ``dgemm`` (n_B × n_B × Q), or, when only a few examples
    move (a pairwise step between two nearby vertices), one axpy per moving
    example over its Gram row.
"""

cimport cython
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, free
from scipy.linalg.cython_blas cimport dgemm

__all__ = ["linear_minimizer", "line_search_step", "local_pairwise"]


def linear_minimizer(const double[:, ::1] G, const double[:, ::1] alpha,
                     const int[:, ::1] group, const unsigned char[:, ::1] active,
                     const double[::1] cap, double[:, ::1] s, double[::1] gaps):
    """Closed-form linear minimiser over boxes / capped simplices (no bias).

    Parameters
    ----------
    G : (n, P) float64
        Linear cost (the gradient, shifted by ν̄·b for a Lagrangian bound).
    alpha : (n, P) float64
        Current point (for the gap shares).
    group : (n, P) int32
        Slack group of each slot, 0 ≤ group < P (ignored where inactive).
    active : (n, P) uint8
    cap : (n,) float64
        Capacity of every group of each example (C w_i, or the M-SVM²'s box bound).
    s : (n, P) float64, output
        The minimising vertex.
    gaps : (n,) float64, output
        G_iᵀ(α_i − s_i) for every example (≥ 0).

    Returns
    -------
    float
        Gᵀs.
    """
    cdef Py_ssize_t n = G.shape[0], P = G.shape[1], i, p, r
    cdef double total = 0.0, share
    cdef double* best = <double*> malloc(P * sizeof(double))
    cdef Py_ssize_t* arg = <Py_ssize_t*> malloc(P * sizeof(Py_ssize_t))
    if best == NULL or arg == NULL:
        free(best)
        free(arg)
        raise MemoryError()
    with nogil:
        for i in range(n):
            for r in range(P):
                best[r] = 0.0
                arg[r] = -1
            share = 0.0
            for p in range(P):
                s[i, p] = 0.0
                if not active[i, p]:
                    continue
                share += G[i, p] * alpha[i, p]
                r = group[i, p]
                if G[i, p] < best[r]:
                    best[r] = G[i, p]
                    arg[r] = p
            for r in range(P):
                if arg[r] >= 0:
                    s[i, arg[r]] = cap[i]
                    share -= cap[i] * best[r]
                    total += cap[i] * best[r]
            gaps[i] = share if share > 0.0 else 0.0
    free(best)
    free(arg)
    return total


cdef double _line_search(double* alpha, double* g, const double* d, const double* K,
                         const double* nu, Py_ssize_t n, Py_ssize_t P, Py_ssize_t Q,
                         const double* shift, double theta_max, double* dbeta, double* u,
                         Py_ssize_t* moving, double* stats) noexcept nogil:
    """Exact line search along d, then α += θd and g += θ ν̄·(K'Δβ); returns θ.

    Arrays are row-major: alpha, g, d (n, P); K (n, n); nu (n, P, Q); shift (n,);
    dbeta, u (n, Q); moving (n,) work; stats (3,) gets gᵀd, dᵀHd and the
    decrease of J.
    """
    cdef Py_ssize_t i, j, p, c, n_moving = 0
    cdef double slope = 0.0, curv = 0.0, theta, acc, kij, dip
    cdef int iQ = <int> Q, iN = <int> n
    cdef double one = 1.0, zero = 0.0
    cdef char nn = b'N'
    cdef bint row_moves
    # Δβ = ν̄·d and the slope gᵀd; remember which examples move.
    for i in range(n):
        row_moves = False
        for c in range(Q):
            dbeta[i * Q + c] = 0.0
        for p in range(P):
            dip = d[i * P + p]
            if dip != 0.0:
                row_moves = True
                slope += g[i * P + p] * dip
                for c in range(Q):
                    dbeta[i * Q + c] += nu[(i * P + p) * Q + c] * dip
        if row_moves:
            moving[n_moving] = i
            n_moving += 1
    # u = K Δβ (+ shift_i Δβ_i).  Row-major (n, Q) arrays are column-major (Q, n)
    # ones, so uᵀ = Δβᵀ K is a plain dgemm; a few moving rows are cheaper as axpy's.
    if n_moving * 4 < n:
        for i in range(n * Q):
            u[i] = 0.0
        for j in range(n_moving):
            i = moving[j]
            for p in range(n):  # K symmetric: column i = row i
                kij = K[i * n + p]
                for c in range(Q):
                    u[p * Q + c] += kij * dbeta[i * Q + c]
    elif n > 0:
        dgemm(&nn, &nn, &iQ, &iN, &iN, &one, dbeta, &iQ, <double*> K, &iN, &zero, u, &iQ)
    for i in range(n):
        for c in range(Q):
            u[i * Q + c] += shift[i] * dbeta[i * Q + c]
            curv += dbeta[i * Q + c] * u[i * Q + c]
    # Exact minimiser of the quadratic along d, clipped to the feasible segment.
    if slope >= 0.0:
        theta = 0.0
    elif curv > 0.0:
        theta = -slope / curv
    else:
        theta = theta_max
    if theta > theta_max:
        theta = theta_max
    if theta > 0.0:
        for i in range(n):
            for p in range(P):
                dip = d[i * P + p]
                if dip != 0.0:
                    alpha[i * P + p] += theta * dip
                acc = 0.0
                for c in range(Q):
                    acc += nu[(i * P + p) * Q + c] * u[i * Q + c]
                g[i * P + p] += theta * acc
    stats[0] = slope
    stats[1] = curv
    stats[2] = -(theta * slope + 0.5 * theta * theta * curv)
    return theta


def line_search_step(double[:, ::1] alpha, double[:, ::1] g, const double[:, ::1] d,
                     const double[:, ::1] K, const double[:, :, ::1] nu,
                     const double[::1] shift, double theta_max, double[:, ::1] dbeta,
                     double[:, ::1] u, double[::1] stats):
    """Exact line search along d and the update of α and g (in place).

    Parameters
    ----------
    alpha, g : (n, P) float64, updated in place
    d : (n, P) float64
        Feasible direction (zero on inactive slots).
    K : (n, n) float64
        Gram block of the working set (symmetric).
    nu : (n, P, Q) float64
        ν̄ of every slot of the working set.
    shift : (n,) float64
        Diagonal added to K, per example (1/(2C w_i) for the M-SVM², else 0).
    theta_max : float
        Largest feasible step along d.
    dbeta, u : (n, Q) float64
        Work arrays (Δβ and K'Δβ on return).
    stats : (3,) float64, output
        gᵀd, dᵀHd and the decrease of J.

    Returns
    -------
    float
        The step θ taken.
    """
    cdef Py_ssize_t n = alpha.shape[0], P = alpha.shape[1], Q = nu.shape[2]
    cdef Py_ssize_t* moving = <Py_ssize_t*> malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    cdef double theta
    if moving == NULL:
        raise MemoryError()
    with nogil:
        theta = _line_search(&alpha[0, 0], &g[0, 0], &d[0, 0], &K[0, 0], &nu[0, 0, 0], n, P, Q,
                             &shift[0], theta_max, &dbeta[0, 0], &u[0, 0], moving, &stats[0])
    free(moving)
    return theta


def local_pairwise(const double[:, ::1] V, double[::1] w, double[:, ::1] alpha,
                   double[:, ::1] g, const double[:, ::1] K, const double[:, :, ::1] nu,
                   const double[::1] shift, double threshold, Py_ssize_t max_steps,
                   double[:, ::1] dbeta, double[:, ::1] u, double[::1] stats):
    """Pairwise steps between the atoms of α = Σ_a w_a V_a, without a linear problem.

    Each step moves weight from the atom of largest gᵀV_a (among those with
    w_a > 0) to the atom of smallest gᵀV_a, with the exact line search
    (θ_max = the weight of the first: a drop step empties it).  Stops when
    that spread of gᵀV_a is ≤ ``threshold``, after ``max_steps`` steps, or
    when a step makes no progress.

    Parameters
    ----------
    V : (A, n·P) float64
        Atoms (flattened vertices; the first may be any feasible point).
    w : (A,) float64
        Their weights, updated in place (zero weights mark dropped atoms).
    alpha, g, K, nu, shift, dbeta, u, stats
        As in :func:`line_search_step`.

    Returns
    -------
    int
        Number of steps taken.
    """
    cdef Py_ssize_t A = V.shape[0], N = V.shape[1]
    cdef Py_ssize_t n = alpha.shape[0], P = alpha.shape[1], Q = nu.shape[2]
    cdef Py_ssize_t a, k, lo, hi, steps = 0
    cdef double vmin, vmax, val, theta
    cdef const double* gp = &g[0, 0]
    cdef const double* row
    cdef double* d = <double*> malloc((N if N > 0 else 1) * sizeof(double))
    cdef Py_ssize_t* moving = <Py_ssize_t*> malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    if d == NULL or moving == NULL:
        free(d)
        free(moving)
        raise MemoryError()
    with nogil:
        while steps < max_steps:
            lo = -1
            hi = -1
            vmin = INFINITY
            vmax = -INFINITY
            for a in range(A):
                val = 0.0
                row = &V[a, 0]
                for k in range(N):
                    val += row[k] * gp[k]
                if val < vmin:
                    vmin = val
                    lo = a
                if w[a] > 0.0 and val > vmax:
                    vmax = val
                    hi = a
            if lo < 0 or hi < 0 or lo == hi or vmax - vmin <= threshold:
                break
            for k in range(N):
                d[k] = V[lo, k] - V[hi, k]
            theta = _line_search(&alpha[0, 0], &g[0, 0], d, &K[0, 0], &nu[0, 0, 0], n, P, Q,
                                 &shift[0], w[hi], &dbeta[0, 0], &u[0, 0], moving, &stats[0])
            steps += 1
            if theta <= 0.0:
                break
            w[lo] += theta
            w[hi] = 0.0 if theta >= w[hi] else w[hi] - theta
    free(d)
    free(moving)
    return steps
