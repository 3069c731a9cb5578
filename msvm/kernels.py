"""Kernel functions: parameter resolution, Gram blocks and the Gram-row cache.

Block computations (prediction, reference solvers, diagnostics) use
``sklearn.metrics.pairwise.pairwise_kernels``: it is BLAS-backed, handles
dense and CSR input, and its kernels are the ones scikit-learn users know.
Solvers that need one Gram row at a time get it from the compiled LRU cache
(:class:`msvm._core._kernel_cache.KernelCache`), which never forms the full
Gram matrix.

Kernels (scikit-learn's conventions):

============  =====================================
linear        ⟨x, x'⟩
poly          (γ⟨x, x'⟩ + coef0)^degree
rbf           exp(−γ ‖x − x'‖²)
laplace       exp(−γ ‖x − x'‖₁)
sigmoid       tanh(γ⟨x, x'⟩ + coef0)   (not PSD in general)
precomputed   X is the Gram matrix itself
callable      f(X, Y) returning the (n_X, n_Y) kernel matrix
============  =====================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils import assert_all_finite
from sklearn.utils.validation import check_array

from msvm._numbers import is_real

__all__ = ["KERNELS", "Kernel", "IndefiniteKernelWarning", "check_gram", "check_kernel_range",
           "resolve_gamma"]

#: Kernel names accepted by the estimators (plus any callable).
KERNELS = ("linear", "poly", "rbf", "laplace", "sigmoid", "precomputed")

# Codes shared with the Cython cache (msvm/_core/_kernel_cache.pyx).
KERNEL_CODES = {"linear": 0, "poly": 1, "rbf": 2, "laplace": 3, "sigmoid": 4, "precomputed": 5}

_SKLEARN_NAMES = {"laplace": "laplacian", "poly": "polynomial"}

# Rows of the cross-kernel computed at once when a Gram block is multiplied by
# coefficients, to keep memory at O(chunk · n_SV) instead of O(m · n_SV).
_CHUNK_ROWS = 2048

#: Kernel values (float64, 32 MB) of one block of a cross-kernel matrix that is
#: multiplied by coefficients (prediction, the certificate's scores): with many
#: support vectors a block has fewer than ``_CHUNK_ROWS`` rows.
BLOCK_ENTRIES = 2**22


def block_rows(width: int, most: int = _CHUNK_ROWS) -> int:
    """Rows of a block of ``width`` columns within :data:`BLOCK_ENTRIES` values.

    Parameters
    ----------
    width : int
        Columns of the block (support vectors, or kernel columns).
    most : int
        Rows of a block at most.

    Returns
    -------
    int
        Between 1 and ``most``.
    """
    return max(1, min(most, BLOCK_ENTRIES // max(int(width), 1)))

#: Largest training set whose Gram matrix is checked for positive semidefiniteness
#: (a Cholesky factorisation, m³/3 flops; the check is skipped, with a note in the
#: warning, above it).
PSD_CHECK_MAX_SAMPLES = 4000

#: A precomputed or callable Gram matrix is symmetric when max|K − Kᵀ| is at most
#: this times max|K| (round-off of a matrix computed in float64, not a property of the data).
SYMMETRY_RTOL = 1e-10


class IndefiniteKernelWarning(UserWarning):
    """The kernel is not positive semidefinite: the dual is not a concave QP.

    The iterative solvers then stop at a KKT point of the dual as given (a
    stationary point, not necessarily the global optimum), and the duality
    gap no longer bounds the suboptimality.  The reference QP solvers
    (``'cvxpy'``, ``'osqp'``) refuse such kernels, so no two solvers can
    silently answer two different problems.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC
    >>> from msvm.kernels import IndefiniteKernelWarning
    >>> X, y = load_iris(return_X_y=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = MultiClassSVC(kernel="sigmoid").fit(X, y)
    >>> any(w.category is IndefiniteKernelWarning for w in caught)
    True
    """


def psd_tolerance(K: np.ndarray) -> float:
    """Eigenvalues above −this count as round-off: 100 · eps · m · max_i |K_ii|.

    A PSD matrix computed in float64 has eigenvalue errors of order eps · m · ‖K‖.
    """
    m = K.shape[0]
    scale = float(np.max(np.abs(np.diagonal(K)), initial=0.0)) or 1.0
    return 100.0 * np.finfo(np.float64).eps * max(m, 1) * scale


def smallest_eigenvalue(K: np.ndarray) -> float:
    """λ_min of the symmetric matrix K (LAPACK, only the smallest one)."""
    import scipy.linalg

    return float(scipy.linalg.eigh(K, eigvals_only=True, subset_by_index=[0, 0])[0])


def check_gram(K: np.ndarray, what: str = "precomputed kernel") -> None:
    """Check a training Gram matrix: finite, square, symmetric, PSD.

    Raises a ValueError for non-finite entries, a non-square shape or an
    asymmetric matrix (beyond :data:`SYMMETRY_RTOL`); warns with
    :class:`IndefiniteKernelWarning` when its smallest eigenvalue is below
    −:func:`psd_tolerance` (checked up to :data:`PSD_CHECK_MAX_SAMPLES` points
    by a Cholesky factorisation of K + tolerance · I).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from msvm.kernels import check_gram
    >>> check_gram(np.array([[2.0, 1.0], [1.0, 2.0]]))   # PSD: nothing to say
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_gram(np.array([[1.0, 2.0], [2.0, 1.0]]))   # eigenvalues 3 and -1
    >>> caught[0].category.__name__
    'IndefiniteKernelWarning'
    >>> check_gram(np.array([[1.0, 0.5], [0.0, 1.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: The precomputed kernel matrix is not symmetric: ...
    """
    import warnings

    import scipy.linalg

    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"The {what} must be a square (n_samples, n_samples) Gram matrix; "
                         f"got shape {K.shape}.")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"The {what} matrix contains NaN or infinite values.")
    scale = float(np.max(np.abs(K), initial=0.0))
    asym = float(np.max(np.abs(K - K.T), initial=0.0))
    if asym > SYMMETRY_RTOL * scale:
        raise ValueError(
            f"The {what} matrix is not symmetric: max|K - K.T| = {asym:.3g} is more than "
            f"{SYMMETRY_RTOL:g} times max|K| = {scale:.3g}. A kernel matrix k(x_i, x_j) must "
            "be symmetric."
        )
    m = K.shape[0]
    if m > PSD_CHECK_MAX_SAMPLES:
        return
    tol = psd_tolerance(K)
    try:
        scipy.linalg.cholesky(K + tol * np.eye(m), lower=True, check_finite=False)
    except scipy.linalg.LinAlgError:
        warnings.warn(
            f"The {what} is not positive semidefinite (smallest eigenvalue "
            f"{smallest_eigenvalue(K):.3g} < -{tol:.2g}): the dual is not concave, so "
            "'optimal' certifies a KKT point of it, not the global optimum, and the duality gap "
            "is no bound. The reference solvers 'cvxpy' and 'osqp' refuse such a kernel.",
            IndefiniteKernelWarning, stacklevel=3,
        )


def canonical_csr(X) -> sp.csr_matrix:
    """X as a float64 CSR matrix in canonical form: no duplicate entries, sorted indices.

    scikit-learn's distances read each stored entry as a value of its own (a row
    ``[(0, a/2), (0, a/2)]`` gets the squared norm a²/2, not a²), so duplicates
    would give kernels of other points than the matrix holds; the compiled loops
    need sorted indices.  A matrix not in that form is canonicalised on a copy,
    so that the caller's (possibly read-only) matrix is never changed.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()   # (also sorts the indices)
    return X


def as_points(X, *, dense: bool = False):
    """X as a :class:`Kernel` holds it: a float64 ndarray or a canonical CSR matrix.

    Any array-like or sparse format is accepted (scikit-learn's
    :func:`~sklearn.utils.check_array`; complex values are refused, not
    truncated); ``dense`` (a precomputed Gram matrix) gives an ndarray.  A
    float64 ndarray or canonical CSR matrix is not copied.
    """
    X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False,
                    ensure_min_samples=0, ensure_min_features=0)
    if sp.issparse(X):
        return X.toarray() if dense else canonical_csr(X)
    return X


def psd_by_construction(kernel) -> bool:
    """Whether a named kernel is positive semidefinite in exact arithmetic.

    Linear, RBF and Laplace kernels are; so is the polynomial (γ⟨x, x'⟩ + c)^d
    for c ≥ 0 (a sum of powers of ⟨x, x'⟩ with non-negative coefficients) or
    d = 0 (a constant).  Their computed Gram matrices can still have small
    negative eigenvalues: the RBF's ‖x‖² + ‖x'‖² − 2⟨x, x'⟩ loses about
    eps·γ‖x‖² per entry, far more than :func:`psd_tolerance` allows for points
    far from the origin.  The sigmoid kernel and the polynomial one with c < 0
    are not PSD in general.
    """
    name = kernel.name
    if callable(name):
        return False
    return name in ("linear", "rbf", "laplace") or (
        name == "poly" and (kernel.coef0 >= 0 or kernel.degree == 0))


def check_kernel_range(kernel: Kernel) -> None:
    """Refuse named kernels whose values overflow float64 on the training points.

    By Cauchy–Schwarz |⟨x, x'⟩| ≤ max_i ‖x_i‖², so the linear and polynomial
    kernels are finite everywhere when they are finite at that bound; RBF,
    Laplace and sigmoid values are bounded by 1, but the RBF's squared
    distances, computed as ‖x‖² + ‖x'‖² − 2⟨x, x'⟩ (scikit-learn's), are NaN
    where that overflows, so 4 max_i ‖x_i‖² must be finite.  A named kernel that is
    not PSD by construction (:func:`psd_by_construction`: the sigmoid, the polynomial
    with coef0 < 0) is checked for definiteness as a precomputed one is, up to
    :data:`PSD_CHECK_MAX_SAMPLES` points.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.kernels import Kernel, check_kernel_range
    >>> X = np.array([[0.0, 1.0], [2.0, 0.0]])
    >>> check_kernel_range(Kernel(X, "rbf"))
    >>> check_kernel_range(Kernel(X * 1e160, "rbf"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: The rbf kernel overflows float64 on these training points ...
    """
    import warnings

    if kernel.is_precomputed or callable(kernel.name):
        return
    if kernel.name in ("linear", "poly", "rbf"):
        with np.errstate(over="ignore", invalid="ignore"):
            sq = kernel.squared_norms()
            bound = float(np.max(sq, initial=0.0))
            if kernel.name == "poly":
                bound = np.power(np.float64(kernel.gamma * bound + abs(kernel.coef0)),
                                 kernel.degree)
            elif kernel.name == "rbf":
                bound = 4.0 * bound   # the largest squared distance
        if not np.isfinite(bound):
            raise ValueError(
                f"The {kernel.name} kernel overflows float64 on these training points "
                f"(max ||x||^2 = {float(np.max(sq)):.3g}); scale the features first, e.g. "
                "with sklearn.preprocessing.StandardScaler."
            )
    if not psd_by_construction(kernel):
        what = "sigmoid kernel" if kernel.name == "sigmoid" else "poly kernel with coef0 < 0"
        if kernel.n_samples <= PSD_CHECK_MAX_SAMPLES:
            check_gram(kernel.gram(), f"{kernel.name} kernel's Gram matrix")
        else:
            warnings.warn(
                f"The {what} is not positive semidefinite in general and was not "
                f"checked (more than {PSD_CHECK_MAX_SAMPLES} points).",
                IndefiniteKernelWarning, stacklevel=3,
            )


def _entry_variance(X, sample_weight=None) -> float:
    """Variance of the entries of X (dense or CSR), row i counted ``sample_weight[i]`` times.

    Two passes (the mean, then the squared deviations from it), as
    ``ndarray.var``: the one-pass E[x²] − E[x]² cancels for data far from 0
    (a constant or near-constant X) and can come out negative.  The implicit
    zeros of a CSR row contribute (0 − mean)² each.
    """
    m, n_features = X.shape
    w = np.ones(m) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w = w / w.max()   # (the variance does not change; w.sum() stays finite)
    total = w.sum() * n_features
    mean = float(np.sum(w @ X)) / total
    if not sp.issparse(X):
        return float(np.sum(w @ (X - mean) ** 2)) / total
    rows = np.repeat(np.arange(m), np.diff(X.indptr))
    implicit = n_features - np.diff(X.indptr)
    return float(w[rows] @ (X.data - mean) ** 2 + mean**2 * (w @ implicit)) / total


def _constant(X) -> bool:
    """Whether every entry of X (dense or CSR, implicit zeros included) is the same."""
    values = X.data if sp.issparse(X) else X
    if values.size == 0:
        return True
    low, high = values.min(), values.max()
    if sp.issparse(X) and X.nnz < X.shape[0] * X.shape[1]:
        return low == high == 0
    return low == high


def resolve_gamma(gamma, X, *, used: bool = True, sample_weight=None) -> float:
    """Turn ``'scale'``, ``'auto'`` or a number into the RBF/poly/sigmoid γ.

    ``'scale'`` is 1 / (n_features · Var(X)) and ``'auto'`` is 1 / n_features,
    as in :class:`sklearn.svm.SVC` but for round-off: Var(X) of a sparse X is
    computed in two passes as a dense one's (SVC's E[x²] − E[x]² can come out
    negative) and a constant X has variance 0.  With ``sample_weight`` (n_samples,
    non-negative) Var(X) is the weighted variance of X's entries, each row
    counted w_i times, so that an integer weight is the same as repeating the
    row (:class:`sklearn.svm.SVC` uses the unweighted variance).  A variance
    that overflows, or is so small (but not 0) that γ overflows, is an error
    when the kernel uses γ (``used``), else γ is reported as 1.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.kernels import resolve_gamma
    >>> X = np.array([[0.0, 2.0], [2.0, 0.0]])   # entries 0, 2, 2, 0: variance 1
    >>> resolve_gamma("scale", X), resolve_gamma("auto", X), resolve_gamma(0.1, X)
    (0.5, 0.5, 0.1)
    """
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            if sample_weight is not None:
                w = np.asarray(sample_weight, dtype=np.float64)
                if not w.max(initial=0.0) > 0:
                    if not used:
                        return 1.0
                    # (The weighted variance is 0/0, which read as an overflow.)
                    raise ValueError("gamma='scale' needs the weighted variance of X, "
                                     "but every sample_weight is 0; give gamma as a "
                                     "number.")
            with np.errstate(over="ignore", invalid="ignore"):
                if _constant(X):
                    var = 0.0   # (not the round-off of the mean: γ would be ~1e30)
                elif sample_weight is None and not sp.issparse(X):
                    var = X.var()
                else:
                    var = _entry_variance(X, sample_weight)
            if not np.isfinite(var) and not used:
                return 1.0
            if not np.isfinite(var):
                raise ValueError("gamma='scale' needs the variance of X, which overflows "
                                 "float64; scale the features first.")
            if var == 0:
                return 1.0
            with np.errstate(over="ignore", divide="ignore"):
                gamma = 1.0 / (n_features * var)
            if not np.isfinite(gamma) and used:
                raise ValueError(f"gamma='scale' is 1 / (n_features * Var(X)), and Var(X) = "
                                 f"{var:.3g} is so small that gamma overflows float64; scale the "
                                 "features first.")
            return float(gamma) if np.isfinite(gamma) else 1.0   # (a Python float, as documented)
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"gamma must be 'scale', 'auto' or a positive float, got {gamma!r}.")
    if not is_real(gamma) or not gamma > 0:
        raise ValueError(f"gamma must be 'scale', 'auto' or a positive float, got {gamma!r}.")
    return float(gamma)


def callable_block(kernel, A, B) -> np.ndarray:
    """Evaluate a callable kernel ``kernel(A, B)`` and check it returns the block."""
    K = kernel(A, B)
    K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
    if K.shape != (A.shape[0], B.shape[0]):
        raise ValueError(
            f"The kernel callable must return the ({A.shape[0]}, {B.shape[0]}) kernel "
            f"matrix of its two arguments; it returned shape {K.shape}."
        )
    if not np.all(np.isfinite(K)):
        raise ValueError("The kernel callable returned NaN or infinite values.")
    return K


@dataclass
class Kernel:
    """A kernel bound to its training points.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (m, d), or (m, m) when precomputed
        Training points (or the training Gram matrix).
    name : str or callable
        One of :data:`KERNELS` or a callable ``f(X, Y)``.
    gamma, degree, coef0 : float
        Kernel parameters (γ already resolved by :func:`resolve_gamma`).

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.kernels import Kernel
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> kernel = Kernel(X, "rbf", gamma=0.5)
    >>> kernel.n_samples
    3
    >>> kernel.gram().round(3)
    array([[1.   , 0.607, 0.135],
           [0.607, 1.   , 0.082],
           [0.135, 0.082, 1.   ]])
    >>> kernel.block(np.array([[0.0, 1.0]])).round(3)   # k(x, x_i) of a new point
    array([[0.607, 0.368, 0.607]])
    """

    X: np.ndarray | sp.csr_matrix
    name: str | Callable = "rbf"
    gamma: float = 1.0
    degree: float = 3
    coef0: float = 0.0
    _gram_cache: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        # Checked once here for every solver: the online loop read a non-square Gram
        # matrix's rows past their end, and NaN points or Gram entries gave α = 0.
        if not callable(self.name) and self.name not in KERNELS:
            raise ValueError(f"Unknown kernel {self.name!r}; expected a callable or one of "
                             f"{list(KERNELS)}.")
        shape = np.shape(self.X)
        if len(shape) != 2 or (self.is_precomputed and shape[0] != shape[1]):
            raise ValueError(f"A Kernel needs a 2-D array of points, or a square (m, m) Gram "
                             f"matrix when precomputed; got shape {shape}.")
        # One representation for every solver and check: a list or a DataFrame failed
        # in the solvers that index rows, a COO matrix could not be indexed at all, a
        # sparse Gram matrix became an object array, and float32 points gave float32
        # Gram blocks beside the compiled cache's float64 rows.
        self.X = as_points(self.X, dense=self.is_precomputed)
        try:   # (scikit-learn's check sums first: no temporary of X's size)
            assert_all_finite(self.X.data if sp.issparse(self.X) else self.X)
        except ValueError:
            raise ValueError("The kernel's points (or Gram matrix) contain NaN or "
                             "infinity.") from None

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def is_precomputed(self) -> bool:
        return isinstance(self.name, str) and self.name == "precomputed"

    def _params(self) -> dict:
        if callable(self.name):
            return {}
        return {
            "linear": {},
            "poly": {"gamma": self.gamma, "degree": self.degree, "coef0": self.coef0},
            "rbf": {"gamma": self.gamma},
            "laplace": {"gamma": self.gamma},
            "sigmoid": {"gamma": self.gamma, "coef0": self.coef0},
        }[self.name]

    def block(self, A, B=None) -> np.ndarray:
        """Kernel matrix k(A_i, B_j) between two sets of points (not for precomputed)."""
        B = self.X if B is None else B
        if callable(self.name):
            # A callable is a block kernel f(A, B); handing it to pairwise_kernels
            # as a metric would call it once per pair of points.
            return callable_block(self.name, A, B)
        K = pairwise_kernels(A, B, metric=_SKLEARN_NAMES.get(self.name, self.name),
                             **self._params())
        return np.asarray(K, dtype=np.float64)

    def gram(self, rows=None, cols=None) -> np.ndarray:
        """Training Gram matrix, or its block ``rows × cols`` (index arrays)."""
        if self.is_precomputed:
            K = np.asarray(self.X, dtype=np.float64)
            if rows is not None:
                K = K[rows]
            return K if cols is None else K[:, cols]
        A = self.X if rows is None else self.X[rows]
        B = self.X if cols is None else self.X[cols]
        return self.block(A, B)

    def diagonal(self) -> np.ndarray:
        """k(x_i, x_i) for every training point, in O(m) kernel evaluations."""
        if self.is_precomputed:
            return np.asarray(self.X, dtype=np.float64).diagonal().copy()
        if not callable(self.name) and self.name in ("rbf", "laplace"):
            return np.ones(self.n_samples)
        if callable(self.name):
            return np.array([self.block(self.X[i : i + 1], self.X[i : i + 1])[0, 0]
                             for i in range(self.n_samples)])
        sq = self.squared_norms()
        if self.name == "linear":
            return sq
        if self.name == "poly":
            return (self.gamma * sq + self.coef0) ** self.degree
        return np.tanh(self.gamma * sq + self.coef0)

    def squared_norms(self) -> np.ndarray:
        """‖x_i‖² of every training point."""
        if isinstance(self.X, np.ndarray):
            return np.einsum("ij,ij->i", self.X, self.X)
        return np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()  # CSR

    def matmul(self, coef: np.ndarray, rows=None, cache=None) -> np.ndarray:
        """K[rows, :] @ coef, touching only the columns where ``coef`` is non-zero.

        ``coef`` has shape (m, Q).  Memory stays O(chunk · n_nonzero).  With a
        :meth:`cache` of this kernel (and all rows), the float64 Gram rows it
        still holds are used instead of being computed again.
        """
        m = self.n_samples
        out = None
        if cache is not None and rows is None:
            out, covered = cache.cached_matmul(coef)
            coef = np.where(covered[:, None], 0.0, coef)
        rows = np.arange(m) if rows is None else np.asarray(rows)
        support = np.flatnonzero(np.any(coef != 0, axis=1))
        if out is None:
            out = np.zeros((len(rows), coef.shape[1]))
        if len(support) == 0:
            return out
        size = block_rows(len(support))
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            out[start : start + len(chunk)] += self.gram(chunk, support) @ coef[support]
        return out

    def cache(self, cache_size: float = 200.0, *, float32: bool = False, n_threads: int = 1,
              offset: float = 0.0):
        """A compiled LRU cache of Gram rows bounded by ``cache_size`` MB.

        ``float32`` stores rows in single precision (twice the rows per MB);
        ``n_threads`` OpenMP threads share the computation of each row (see
        :class:`~msvm._core._kernel_cache.KernelCache`); ``offset`` is a
        constant added to every Gram entry (rows of k + offset).  Callable kernels are
        evaluated once into a full Gram matrix (as scikit-learn does), which
        the cache then serves as precomputed.
        """
        from msvm._core._kernel_cache import KernelCache

        if callable(self.name):
            return KernelCache(self.gram(), KERNEL_CODES["precomputed"], 0.0, 0.0, 0.0, cache_size,
                               offset=float(offset))
        X = self.X   # (KernelCache puts a CSR matrix in canonical form on a copy)
        if not sp.issparse(X):
            X = np.ascontiguousarray(X, dtype=np.float64)
        try:
            return KernelCache(
                X, KERNEL_CODES[self.name], float(self.gamma), float(self.degree),
                float(self.coef0), float(cache_size), float32=bool(float32),
                n_threads=int(n_threads), offset=float(offset),
            )
        except MemoryError as error:
            # The row buffer is allocated at once: the budget, or the whole Gram matrix.
            m = self.n_samples
            raise MemoryError(
                f"{error} The kernel cache of cache_size={cache_size:.10g} MB (at most the whole "
                f"{m} x {m} Gram matrix, {m * m * (4 if float32 else 8) / 2**20:.6g} MB) does "
                "not fit in memory: lower cache_size."
            ) from None
