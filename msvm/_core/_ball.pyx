"""Hot loop of the smallest enclosing ball in feature space (:mod:`msvm.bounds`).

The dual of the smallest ball enclosing Φ(x_1), …, Φ(x_m) (kernel κ) is

    max_β  f(β) = Σ_i β_i κ_ii − βᵀKβ     over the simplex  β ≥ 0, Σ_i β_i = 1,

whose maximiser gives the centre c = Σ_i β_i Φ(x_i) and the squared radius
R² = f(β*).  For any β on the simplex, with u = Kβ and q = βᵀKβ,

    d_i = ‖Φ(x_i) − c‖² = κ_ii − 2 u_i + q,      f(β) = Σ_i β_i d_i,

so max_i d_i is the squared radius of a ball *centred at c* that encloses
every point (a primal value) and f(β) ≤ R² ≤ max_i d_i: the difference is the
Frank–Wolfe duality gap, and it certifies the radius.

Algorithm (Frank–Wolfe with away steps, Yildirim 2008; the Bădoiu–Clarkson
core-vector view): the gradient of f is ∂f/∂β_i = κ_ii − 2u_i = d_i − q, so

* the Frank–Wolfe vertex is the farthest point i = argmax_i d_i; along
  e_i − β the slope is d_i − f and the curvature ‖Φ(x_i) − c‖² = d_i, so the
  exact line search gives t = (d_i − f) / (2 d_i) ∈ [0, ½];
* the away vertex is the nearest core point j = argmin_{β_j > 0} d_j; along
  β − e_j the slope is f − d_j and the curvature d_j, so
  t = min((f − d_j) / (2 d_j), β_j / (1 − β_j)), and a step that reaches the
  upper end drops j from the core set (β_j = 0 exactly).

The step with the larger slope is taken; the method converges linearly and
its iterates keep only the core set (the points that define the ball) with
positive weight.  Bookkeeping: u, q and s = Σ_i β_i κ_ii are updated in
O(m) per step from one Gram row (the new or dropped point), served by the
LRU cache of :mod:`msvm._core._kernel_cache`.  At the end u, q and s are
recomputed from the core rows, so the returned certificate does not carry
the round-off of the updates.

The M-SVM²'s kernel κ' = k + shift_i·δ_ij (shift_i = 1/(2C w_i), w_i the
example's weight) is handled without forming it: row i of K' is row i of K
plus ``shift[i]`` on entry i.
"""

from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc
from msvm._core._kernel_cache cimport KernelCache

__all__ = ["ball_frank_wolfe"]


cdef void _refresh(KernelCache kc, const double* shift, double* beta, double* u, double* kdiag,
                   Py_ssize_t m, double* q, double* s) noexcept nogil:
    """u = K'β, q = βᵀK'β and s = Σ β_i κ'_ii from scratch (core rows only)."""
    cdef Py_ssize_t i, j
    cdef const double* row
    cdef double b
    for i in range(m):
        u[i] = 0.0
    for j in range(m):
        b = beta[j]
        if b > 0.0:
            row = kc.row_ptr(j)
            for i in range(m):
                u[i] += b * row[i]
            u[j] += b * shift[j]
    q[0] = 0.0
    s[0] = 0.0
    for i in range(m):
        q[0] += beta[i] * u[i]
        s[0] += beta[i] * kdiag[i]


def ball_frank_wolfe(KernelCache kc, const double[::1] shift, double[::1] beta, double[::1] u,
                     double tol, long long max_iter):
    """Run Frank–Wolfe with away steps on the ball's dual, in place.

    Parameters
    ----------
    kc : KernelCache
        Gram rows of the points (without the shift).
    shift : (m,) float64
        Diagonal added to the kernel, per point (1/(2C w_i) for the M-SVM², else 0).
    beta : (m,) float64, in/out
        A point of the simplex to start from; the final weights on return.
    u : (m,) float64, out
        K'β at the returned β.
    tol : float
        Stop when (max_i d_i − f(β)) ≤ tol · max_i d_i.
    max_iter : int
        Iteration cap.

    Returns
    -------
    tuple
        (primal, dual, n_iter, n_fw, n_away, n_drop, status) with primal =
        max_i d_i and dual = f(β) recomputed from scratch at the returned β,
        status 0 when the gap criterion was met, 1 at ``max_iter``.
    """
    cdef Py_ssize_t m = beta.shape[0]
    cdef Py_ssize_t i, k, far, near
    cdef double q = 0.0, s = 0.0, f, d, dmax, dmin, t, a, b, uk
    cdef long long it = 0, n_fw = 0, n_away = 0, n_drop = 0
    cdef int status = 1
    cdef const double* row
    cdef double* bp = &beta[0]
    cdef double* up = &u[0]
    cdef double* kdiag = <double*> malloc(max(m, 1) * sizeof(double))
    cdef const double* sh
    if shift.shape[0] != m:
        free(kdiag)
        raise ValueError("shift needs one entry per point.")
    if kdiag == NULL:
        raise MemoryError()
    sh = &shift[0] if m > 0 else NULL
    with nogil:
        for i in range(m):
            kdiag[i] = kc.diag(i) + sh[i]
        _refresh(kc, sh, bp, up, kdiag, m, &q, &s)
        while True:
            # Farthest point overall and nearest core point.
            f = s - q
            far = 0
            near = -1
            dmax = -INFINITY
            dmin = INFINITY
            for i in range(m):
                d = kdiag[i] - 2.0 * up[i] + q
                if d > dmax:
                    dmax = d
                    far = i
                if bp[i] > 0.0 and d < dmin:
                    dmin = d
                    near = i
            if dmax - f <= tol * dmax or dmax <= 0.0:
                status = 0
                break
            if it >= max_iter:
                break
            it += 1
            if dmax - f >= f - dmin or near < 0:
                # Frank–Wolfe step towards the farthest point.
                t = (dmax - f) / (2.0 * dmax)
                a = 1.0 - t
                uk = up[far]
                row = kc.row_ptr(far)
                for i in range(m):
                    bp[i] *= a
                    up[i] = a * up[i] + t * row[i]
                bp[far] += t
                up[far] += t * sh[far]
                q = a * a * q + 2.0 * t * a * uk + t * t * kdiag[far]
                s = a * s + t * kdiag[far]
                n_fw += 1
            else:
                # Away step from the nearest core point.
                b = bp[near]
                if dmin <= 0.0:
                    t = INFINITY
                else:
                    t = (f - dmin) / (2.0 * dmin)
                if b < 1.0 and t >= b / (1.0 - b):
                    t = b / (1.0 - b)
                    n_drop += 1
                elif b >= 1.0:
                    break   # a single core point: f = d_near, no away direction
                a = 1.0 + t
                uk = up[near]
                row = kc.row_ptr(near)
                for i in range(m):
                    bp[i] *= a
                    up[i] = a * up[i] - t * row[i]
                bp[near] -= t
                if t == b / (1.0 - b):
                    bp[near] = 0.0
                up[near] -= t * sh[near]
                q = a * a * q - 2.0 * t * a * uk + t * t * kdiag[near]
                s = a * s - t * kdiag[near]
                n_away += 1
        # The certificate from fresh sums, not from the updated ones (and β
        # renormalised onto the simplex after the multiplicative updates).
        t = 0.0
        for i in range(m):
            t += bp[i]
        for i in range(m):
            bp[i] /= t
        _refresh(kc, sh, bp, up, kdiag, m, &q, &s)
        dmax = -INFINITY
        for i in range(m):
            d = kdiag[i] - 2.0 * up[i] + q
            if d > dmax:
                dmax = d
        f = s - q
    free(kdiag)
    return dmax, f, it, n_fw, n_away, n_drop, status
