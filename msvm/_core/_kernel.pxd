# Kernel values over a row source: the one place where msvm's compiled code
# evaluates a kernel (the batch Gram-row cache, _kernel_cache, and the online
# solver's rows over its support patterns, _online, both call it).
#
#     cdef KernelSpec k = KernelSpec(code, gamma, degree, coef0)
#     cdef RowSource rows = dense_rows(X, d, sqnorm)          # or sparse_rows(...)
#     kernel_values(&k, &rows, xq, sq_q, l1_q, out, j0, j1)   # out[j] = k(x_j, x_q)
#     dense_block(&k, &rows, G, gsq, n, out, ld, j0, j1)    # n queries at once (dgemm)
#     sparse_block(&k, &rows, GT, gsq, n, out, ld, j0, j1)  # the same over sparse rows
#
# A row source is dense (row j at X + j·d) or sparse (the entries
# start[j] <= p < start[j] + nnz[j] of data/index; the sparse rows of a CSR
# matrix, or the feature pool of the online solver whose rows are not in
# order).  The query x_q is always a dense vector of length d: a sparse query
# is scattered by the caller into a zeroed work vector (and cleared after), so
# that each sparse row costs one pass over its own non-zeros.
#
# The kernels are scikit-learn's (same codes as msvm.kernels.KERNEL_CODES):
# linear <x, y>; poly (γ<x, y> + c0)^degree; rbf exp(−γ‖x − y‖²) with
# ‖x − y‖² = ‖x‖² + ‖y‖² − 2<x, y> clipped at 0; laplace exp(−γ‖x − y‖₁); sigmoid
# tanh(γ<x, y> + c0).  For sparse rows ‖x − y‖₁ = ‖y‖₁ + Σ_{k in nz(x)}
# (|x_k − y_k| − |y_k|), from the query's ‖y‖₁.  The values do not depend on how
# a row is cut into blocks [j0, j1), so callers may share blocks among threads.

from libc.math cimport fabs, pow, tanh
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemm, dgemv

# exp of a vector of non-positive arguments (rbf and laplace), written so that the
# compiler vectorises it: glibc's exp, called once per value, was most of the cost
# of a Gram row on low-dimensional data.  Cody–Waite reduction x = n·ln 2 + r,
# |r| <= ln2/2, Taylor polynomial of degree 13 for e^r (truncation < 1e-17
# relative), then 2^n from the exponent bits: within 2 ulp of exp.  Arguments
# below -708.39 give 0 (where exp is subnormal).  With GCC or Clang on x86 a copy
# compiled for AVX2 and FMA runs where the processor has them (checked once).
cdef extern from *:
    """
    #include <stdint.h>
    #define MSVM_EXP_BODY \
        const double log2e = 1.4426950408889634074, shift = 6755399441055744.0; \
        const double ln2_hi = 6.93147180369123816490e-01; \
        const double ln2_lo = 1.90821492927058770002e-10; \
        Py_ssize_t j; \
        for (j = 0; j < n; j++) { \
            double x0 = v[j], x, t, r, p; \
            union { double d; int64_t i; } u, sc; \
            x = x0 < -708.0 ? -708.0 : x0; \
            u.d = x * log2e + shift;   /* round to nearest: n in the low bits */ \
            t = u.d - shift; \
            r = (x - t * ln2_hi) - t * ln2_lo; \
            p = 1.0 / 6227020800.0; \
            p = p * r + 1.0 / 479001600.0; p = p * r + 1.0 / 39916800.0; \
            p = p * r + 1.0 / 3628800.0; p = p * r + 1.0 / 362880.0; \
            p = p * r + 1.0 / 40320.0; p = p * r + 1.0 / 5040.0; \
            p = p * r + 1.0 / 720.0; p = p * r + 1.0 / 120.0; p = p * r + 1.0 / 24.0; \
            p = p * r + 1.0 / 6.0; p = p * r + 0.5; p = p * r + 1.0; p = p * r + 1.0; \
            sc.i = (u.i + 1023) << 52;   /* 2^n */ \
            v[j] = x0 < -708.39 ? 0.0 : p * sc.d; \
        }
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __attribute__((optimize("no-trapping-math"), target("avx2,fma")))
    static void msvm_exp_avx2(double* v, Py_ssize_t n) { MSVM_EXP_BODY }
    __attribute__((optimize("no-trapping-math")))
    static void msvm_exp_base(double* v, Py_ssize_t n) { MSVM_EXP_BODY }
    /* Whether the processor runs the AVX2+FMA copies (checked once). */
    static int msvm_avx2_fma(void) {
        static int avx2 = -1;
        if (avx2 < 0) {
            __builtin_cpu_init();
            avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        }
        return avx2;
    }
    static void msvm_exp_nonpositive(double* v, Py_ssize_t n) {
        if (msvm_avx2_fma()) msvm_exp_avx2(v, n); else msvm_exp_base(v, n);
    }
    #else
    static void msvm_exp_nonpositive(double* v, Py_ssize_t n) { MSVM_EXP_BODY }
    #endif
    """
    void msvm_exp_nonpositive(double* v, Py_ssize_t n) noexcept nogil

# Inner products of n dense queries with sparse rows, the queries given transposed
# (GT: d × w, w = n rounded up to the group width W, zero beyond n): row j's non-zeros
# are read once per group of W queries, each adding its value times W contiguous
# entries of GT to W accumulators (AVX2 registers where the processor has them).
# W = 4, 8 or 16 as n needs: every lane sums the same products in the same order, so
# a value does not depend on the block it was computed in.
cdef extern from *:
    """
    #define MSVM_CSR_WIDTH(n) ((n) <= 4 ? 4 : ((n) <= 8 ? 8 : 16))
    static Py_ssize_t msvm_csr_block_width(Py_ssize_t n) {
        return (n + MSVM_CSR_WIDTH(n) - 1) / MSVM_CSR_WIDTH(n) * MSVM_CSR_WIDTH(n);
    }
    #define MSVM_CSR_ARGS Py_ssize_t n, const double* data, const int* index, \
        const Py_ssize_t* start, const Py_ssize_t* nnz, Py_ssize_t j0, Py_ssize_t j1, \
        const double* GT, double* out, Py_ssize_t ld
    /* The loops over j and the groups; GROUP(W) leaves row j's sums of group t0 in acc. */
    #define MSVM_CSR_BODY(GROUP) \
        const Py_ssize_t W = MSVM_CSR_WIDTH(n), w = msvm_csr_block_width(n); \
        Py_ssize_t j, p, t0, t; \
        double acc[16]; \
        for (t0 = 0; t0 < w; t0 += W) { \
            for (j = j0; j < j1; j++) { \
                const Py_ssize_t p0 = start[j], p1 = start[j] + nnz[j]; \
                GROUP \
                for (t = t0; t < n && t < t0 + W; t++) out[t * ld + j] = acc[t - t0]; \
            } \
        }
    #define MSVM_CSR_PLAIN \
        for (t = 0; t < W; t++) acc[t] = 0.0; \
        for (p = p0; p < p1; p++) { \
            const double v = data[p]; \
            const double* g = GT + (Py_ssize_t) index[p] * w + t0; \
            for (t = 0; t < W; t++) acc[t] += v * g[t]; \
        }
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    #include <immintrin.h>
    #define MSVM_CSR_FMA(k) a##k = _mm256_fmadd_pd(v, _mm256_loadu_pd(g + 4 * k), a##k)
    #define MSVM_CSR_AVX2 \
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0; \
        for (p = p0; p < p1; p++) { \
            const __m256d v = _mm256_broadcast_sd(data + p); \
            const double* g = GT + (Py_ssize_t) index[p] * w + t0; \
            MSVM_CSR_FMA(0); \
            if (W > 4) MSVM_CSR_FMA(1); \
            if (W > 8) { MSVM_CSR_FMA(2); MSVM_CSR_FMA(3); } \
        } \
        _mm256_storeu_pd(acc, a0); _mm256_storeu_pd(acc + 4, a1); \
        _mm256_storeu_pd(acc + 8, a2); _mm256_storeu_pd(acc + 12, a3);
    __attribute__((target("avx2,fma")))
    static void msvm_csr_avx2(MSVM_CSR_ARGS) { MSVM_CSR_BODY(MSVM_CSR_AVX2) }
    static void msvm_csr_base(MSVM_CSR_ARGS) { MSVM_CSR_BODY(MSVM_CSR_PLAIN) }
    static void msvm_csr_products(MSVM_CSR_ARGS) {
        if (msvm_avx2_fma()) msvm_csr_avx2(n, data, index, start, nnz, j0, j1, GT, out, ld);
        else msvm_csr_base(n, data, index, start, nnz, j0, j1, GT, out, ld);
    }
    #else
    static void msvm_csr_products(MSVM_CSR_ARGS) { MSVM_CSR_BODY(MSVM_CSR_PLAIN) }
    #endif
    """
    void msvm_csr_products(Py_ssize_t n, const double* data, const int* index,
                           const Py_ssize_t* start, const Py_ssize_t* nnz, Py_ssize_t j0,
                           Py_ssize_t j1, const double* GT, double* out,
                           Py_ssize_t ld) noexcept nogil
    Py_ssize_t msvm_csr_block_width(Py_ssize_t n) noexcept nogil

cdef enum:
    LINEAR = 0
    POLY = 1
    RBF = 2
    LAPLACE = 3
    SIGMOID = 4
    PRECOMPUTED = 5


cdef struct KernelSpec:
    int code
    double gamma
    double degree
    double coef0


cdef struct RowSource:
    Py_ssize_t n_features
    bint sparse
    const double* X              # dense rows
    const double* data           # sparse rows: values ...
    const int* index             # ... their feature indices ...
    const Py_ssize_t* start      # ... row j's first entry ...
    const Py_ssize_t* nnz        # ... and its number of entries
    const double* sqnorm         # ‖x_j‖² (rbf)


cdef inline RowSource dense_rows(const double* X, Py_ssize_t d,
                                 const double* sqnorm) noexcept nogil:
    return RowSource(d, False, X, NULL, NULL, NULL, NULL, sqnorm)


cdef inline RowSource sparse_rows(const double* data, const int* index, const Py_ssize_t* start,
                                  const Py_ssize_t* nnz, Py_ssize_t d,
                                  const double* sqnorm) noexcept nogil:
    return RowSource(d, True, NULL, data, index, start, nnz, sqnorm)


cdef inline void inner_products(const KernelSpec* k, const RowSource* rows, const double* xq,
                                double l1q, double* out, Py_ssize_t j0,
                                Py_ssize_t j1) noexcept nogil:
    """out[j] = <x_j, x_q> (‖x_j − x_q‖₁ for laplace), j0 <= j < j1."""
    cdef Py_ssize_t d = rows.n_features, j, p, p0
    cdef int n_rows, n_cols, lda, one = 1
    cdef double alpha = 1.0, beta = 0.0, s, v
    cdef char trans = b'T'
    cdef const double* xj
    if j1 <= j0:
        return
    if rows.sparse:
        for j in range(j0, j1):
            p0 = rows.start[j]
            if k.code == LAPLACE:
                s = l1q
                for p in range(p0, p0 + rows.nnz[j]):
                    v = xq[rows.index[p]]
                    s = s + (fabs(rows.data[p] - v) - fabs(v))
            else:
                s = 0.0
                for p in range(p0, p0 + rows.nnz[j]):
                    s = s + rows.data[p] * xq[rows.index[p]]
            out[j] = s
        return
    if d == 0:
        memset(out + j0, 0, (j1 - j0) * sizeof(double))
        return
    if k.code == LAPLACE:
        for j in range(j0, j1):
            xj = rows.X + j * d
            s = 0.0
            for p in range(d):
                s = s + fabs(xj[p] - xq[p])
            out[j] = s
        return
    # Row-major rows j0..j1 are a column-major (d, j1 − j0) matrix, lda = d.
    n_rows = <int> d
    n_cols = <int> (j1 - j0)
    lda = <int> d
    dgemv(&trans, &n_rows, &n_cols, &alpha, <double*> (rows.X + j0 * d), &lda, <double*> xq,
          &one, &beta, out + j0, &one)


cdef inline void to_kernel(const KernelSpec* k, const RowSource* rows, double sqq, double* out,
                           Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    """Turn the inner products (L1 distances for laplace) of out[j0:j1] into kernel values."""
    cdef Py_ssize_t j
    cdef double g = k.gamma, c0 = k.coef0, deg = k.degree, dist
    if k.code == POLY:
        for j in range(j0, j1):
            out[j] = pow(g * out[j] + c0, deg)
    elif k.code == RBF:
        for j in range(j0, j1):
            dist = sqq + rows.sqnorm[j] - 2.0 * out[j]
            out[j] = -g * (dist if dist > 0.0 else 0.0)
        msvm_exp_nonpositive(out + j0, j1 - j0)
    elif k.code == LAPLACE:
        for j in range(j0, j1):
            dist = out[j]
            out[j] = -g * (dist if dist > 0.0 else 0.0)
        msvm_exp_nonpositive(out + j0, j1 - j0)
    elif k.code == SIGMOID:
        for j in range(j0, j1):
            out[j] = tanh(g * out[j] + c0)


cdef inline void kernel_values(const KernelSpec* k, const RowSource* rows, const double* xq,
                               double sqq, double l1q, double* out, Py_ssize_t j0,
                               Py_ssize_t j1) noexcept nogil:
    """out[j] = k(x_j, x_q) for j0 <= j < j1 (sqq = ‖x_q‖², l1q = ‖x_q‖₁ where needed)."""
    inner_products(k, rows, xq, l1q, out, j0, j1)
    to_kernel(k, rows, sqq, out, j0, j1)


cdef inline void dense_block(const KernelSpec* k, const RowSource* rows, const double* G,
                             const double* gsq, Py_ssize_t n, double* out, Py_ssize_t ld,
                             Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    """out[t·ld + j] = k(x_j, g_t) for j0 <= j < j1 and n queries, in one dgemm.

    The queries are the rows of G (n × d, row-major), ‖g_t‖² = gsq[t].  Dense
    rows and an inner-product kernel only (not laplace).  A dgemv reads the
    rows once per query, the dgemm once for all of them: on dense data a
    kernel row is bandwidth-bound, so n rows together cost much less than n
    apart.  The values equal :func:`kernel_values`'s up to rounding.
    """
    cdef int n_cols = <int> (j1 - j0), n_q = <int> n, d = <int> rows.n_features
    cdef int ldo = <int> ld
    cdef double one = 1.0, zero = 0.0
    cdef char ta = b'T', tb = b'N'
    cdef Py_ssize_t t
    if j1 <= j0 or n <= 0:
        return
    # Column-major: the ((j1 − j0) × n) block at out + j0 (leading dimension ld)
    # = X[j0:j1] · Gᵀ.
    dgemm(&ta, &tb, &n_cols, &n_q, &d, &one, <double*> (rows.X + j0 * d), &d, <double*> G, &d,
          &zero, out + j0, &ldo)
    for t in range(n):
        to_kernel(k, rows, gsq[t], out + t * ld, j0, j1)


cdef inline Py_ssize_t sparse_block_width(Py_ssize_t n) noexcept nogil:
    """Columns of the transposed queries of :func:`sparse_block`: n rounded up to its
    group width (4, 8 or 16)."""
    return msvm_csr_block_width(n)


cdef inline void sparse_block(const KernelSpec* k, const RowSource* rows, const double* GT,
                              const double* gsq, Py_ssize_t n, double* out, Py_ssize_t ld,
                              Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    """:func:`dense_block` for sparse rows: out[t·ld + j] = k(x_j, g_t), j0 <= j < j1.

    The queries come transposed, GT[c·w + t] = g_t[c] (d × w, w =
    :func:`sparse_block_width` (n), zero in the columns t >= n).  Each sparse row
    is read once for the n queries, so a block costs one pass over the non-zeros
    of rows j0 .. j1 − 1 instead of n.  Inner-product kernels only (not laplace);
    the values equal :func:`kernel_values`'s up to rounding.
    """
    cdef Py_ssize_t t
    if j1 <= j0 or n <= 0:
        return
    msvm_csr_products(n, rows.data, rows.index, rows.start, rows.nnz, j0, j1, GT, out, ld)
    for t in range(n):
        to_kernel(k, rows, gsq[t], out + t * ld, j0, j1)
