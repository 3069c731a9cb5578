r"""The lecture's kernels, exactly as written on its "Some kernel functions" slide.

============  ==================================  ======================================
name          the lecture's formula               scikit-learn's ``pairwise_kernels``
============  ==================================  ======================================
``linear``    κ(x, y) = xᵀy                        ``metric="linear"``
``poly``      κ(x, y) = (xᵀy + 1)^d                ``metric="polynomial"``, ``gamma=1``,
                                                   ``coef0=1``, ``degree=d``
``rbf``       κ(x, y) = exp(−γ ‖x − y‖²)           ``metric="rbf"``, ``gamma=γ``
``laplace``   κ(x, y) = exp(−γ ‖x − y‖)            no equivalent for the Euclidean norm;
                                                   ``metric="laplacian"`` uses ‖x − y‖₁
``tanh``      κ(x, y) = tanh(γ xᵀy + r)            ``metric="sigmoid"``, ``gamma=γ``,
                                                   ``coef0=r``
============  ==================================  ======================================

Two differences from what a scikit-learn user expects:

* The lecture's polynomial kernel has the ``+ 1`` and no γ: (xᵀy + 1)^d
  contains every monomial of degree ≤ d, whereas scikit-learn's default
  ``coef0=0`` keeps only those of degree exactly d.
* The lecture writes the Laplace kernel with ‖x − y‖, the Euclidean norm it
  uses everywhere else.  scikit-learn's ``laplacian_kernel`` (and msvm's
  ``kernel='laplace'``) use the L1 norm ‖x − y‖₁; the two agree in one
  dimension only.  :func:`laplace_kernel` takes ``norm="l2"`` (the lecture,
  default) or ``norm="l1"`` (scikit-learn).  Both are positive definite:
  exp(−γ‖x − y‖₂) is the exponential (Matérn ½) kernel, and exp(−γ‖x − y‖₁)
  is a product of one-dimensional exponential kernels.

The tanh kernel is not positive semi-definite in general (the lecture does
not say so): its Gram matrix can have negative eigenvalues, so the dual may
be non-convex.  :func:`msvm.teaching.smo` handles a non-positive curvature
along the pair as libsvm does.

``tests/test_teaching.py`` checks every function here against
:func:`sklearn.metrics.pairwise.pairwise_kernels` (and the Euclidean Laplace
kernel against ``exp(−γ · euclidean_distances)``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from msvm._numbers import is_real

__all__ = [
    "LECTURE_KERNELS",
    "kernel_matrix",
    "laplace_kernel",
    "linear_kernel",
    "make_kernel",
    "polynomial_kernel",
    "rbf_kernel",
    "sklearn_equivalent",
    "tanh_kernel",
]


def _as_2d(X, Y):
    """X and Y as 2-D float arrays (a 1-D array is one point) with the same features."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = X if Y is None else np.atleast_2d(np.asarray(Y, dtype=np.float64))
    # Else the L1 Laplace kernel broadcasts a mismatch into a wrong matrix without a word.
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must be 2-D arrays with the same number of features "
                         f"(columns), got shapes {X.shape} and {Y.shape}.")
    return X, Y


def _check_number(name: str, value, least: float | None = None) -> float:
    """``value`` as a finite float (≥ ``least`` if given), else a ValueError naming it."""
    # NaN or inf made a NaN Gram matrix that SMO and the perceptron ran on without a word;
    # a negative γ of the RBF or Laplace kernel is not a kernel (it grows with distance).
    if (not is_real(value) or not np.isfinite(value)
            or (least is not None and value < least)):
        bound = "" if least is None else f" >= {least:g}"
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}.")
    return float(value)


def _check_degree(degree) -> int:
    """The polynomial degree as an int ≥ 0 (a fractional power of a negative xᵀy + 1 is NaN)."""
    if (not is_real(degree) or not np.isfinite(degree)
            or degree < 0 or degree != int(degree)):
        raise ValueError(f"degree must be an integer >= 0, got {degree!r}.")
    return int(degree)


def _squared_distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """‖x_i − y_j‖² for every pair, clipped at 0 against rounding."""
    d2 = np.sum(X**2, axis=1)[:, None] + np.sum(Y**2, axis=1)[None, :] - 2.0 * X @ Y.T
    return np.maximum(d2, 0.0)


def linear_kernel(X, Y=None) -> np.ndarray:
    """κ(x, y) = xᵀy.

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
        Defaults to ``X``.

    Returns
    -------
    ndarray of shape (n_X, n_Y)
    """
    X, Y = _as_2d(X, Y)
    return X @ Y.T


def polynomial_kernel(X, Y=None, degree: int = 2) -> np.ndarray:
    """κ(x, y) = (xᵀy + 1)^d, the lecture's polynomial kernel (note the + 1).

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
    degree : int, default=2
        The degree d, an integer ≥ 0.

    Returns
    -------
    ndarray of shape (n_X, n_Y)
    """
    degree = _check_degree(degree)
    X, Y = _as_2d(X, Y)
    return (X @ Y.T + 1.0) ** degree


def rbf_kernel(X, Y=None, gamma: float = 1.0) -> np.ndarray:
    """κ(x, y) = exp(−γ ‖x − y‖²).

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
    gamma : float, default=1.0
        γ ≥ 0 (a negative γ is not a kernel; γ = 0 is the constant 1).

    Returns
    -------
    ndarray of shape (n_X, n_Y)
    """
    gamma = _check_number("gamma", gamma, 0.0)
    X, Y = _as_2d(X, Y)
    return np.exp(-gamma * _squared_distances(X, Y))


def laplace_kernel(X, Y=None, gamma: float = 1.0, norm: str = "l2") -> np.ndarray:
    """κ(x, y) = exp(−γ ‖x − y‖), with the lecture's Euclidean norm by default.

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
    gamma : float, default=1.0
        γ ≥ 0, as for :func:`rbf_kernel`.
    norm : {'l2', 'l1'}, default='l2'
        ``'l2'`` is the lecture's ‖x − y‖; ``'l1'`` is scikit-learn's
        ``laplacian_kernel`` (and msvm's ``kernel='laplace'``).

    Returns
    -------
    ndarray of shape (n_X, n_Y)
    """
    gamma = _check_number("gamma", gamma, 0.0)
    X, Y = _as_2d(X, Y)
    if norm == "l2":
        dist = np.sqrt(_squared_distances(X, Y))
    elif norm == "l1":
        dist = np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=2)
    else:
        raise ValueError(f"norm must be 'l2' or 'l1', got {norm!r}.")
    return np.exp(-gamma * dist)


def tanh_kernel(X, Y=None, gamma: float = 1.0, r: float = 0.0) -> np.ndarray:
    """κ(x, y) = tanh(γ xᵀy + r) (not positive semi-definite in general).

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
    gamma : float, default=1.0
        Any finite number.
    r : float, default=0.0
        Any finite number.

    Returns
    -------
    ndarray of shape (n_X, n_Y)
    """
    gamma, r = _check_number("gamma", gamma), _check_number("r", r)
    X, Y = _as_2d(X, Y)
    return np.tanh(gamma * (X @ Y.T) + r)


#: The lecture's kernels by name, with the parameters each one takes.
LECTURE_KERNELS: dict[str, tuple[Callable[..., np.ndarray], tuple[str, ...]]] = {
    "linear": (linear_kernel, ()),
    "poly": (polynomial_kernel, ("degree",)),
    "rbf": (rbf_kernel, ("gamma",)),
    "laplace": (laplace_kernel, ("gamma", "norm")),
    "tanh": (tanh_kernel, ("gamma", "r")),
}


def make_kernel(kernel: str | Callable = "linear", **params) -> Callable[..., np.ndarray]:
    """The kernel ``kernel`` with its parameters bound: a function f(X, Y=None).

    Parameters
    ----------
    kernel : {'linear', 'poly', 'rbf', 'laplace', 'tanh'} or callable
        A name of :data:`LECTURE_KERNELS`, or a function f(X, Y) returned
        as is (``params`` must then be empty).
    **params
        The kernel's parameters (``degree``; ``gamma``; ``gamma``, ``norm``;
        ``gamma``, ``r``).  A parameter the kernel does not take, or a bad
        value (a degree that is not an integer ≥ 0, a γ or r that is not
        finite, a negative γ for ``rbf`` or ``laplace``), is a ValueError.

    Returns
    -------
    callable
        f(X, Y=None) -> ndarray of shape (n_X, n_Y); usable as a callable
        kernel of :class:`msvm.MultiClassSVC` and :class:`sklearn.svm.SVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.teaching import make_kernel
    >>> kernel = make_kernel("poly", degree=2)   # (xᵀy + 1)²
    >>> kernel(np.array([[1.0, 2.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    array([[4., 9.]])
    """
    if callable(kernel):
        if params:
            raise ValueError("Parameters cannot be bound to a callable kernel.")
        return kernel
    if kernel not in LECTURE_KERNELS:
        raise ValueError(f"Unknown kernel {kernel!r}; expected one of {sorted(LECTURE_KERNELS)}.")
    function, allowed = LECTURE_KERNELS[kernel]
    unknown = set(params) - set(allowed)
    if unknown:
        raise ValueError(f"Kernel {kernel!r} takes {allowed or 'no parameters'}, "
                         f"not {sorted(unknown)}.")
    # Checked here too, so that a bad value fails when the kernel is made, not when used.
    if "degree" in params:
        _check_degree(params["degree"])
    if "gamma" in params:
        _check_number("gamma", params["gamma"], None if kernel == "tanh" else 0.0)
    if "r" in params:
        _check_number("r", params["r"])
    if params.get("norm", "l2") not in ("l2", "l1"):
        raise ValueError(f"norm must be 'l2' or 'l1', got {params['norm']!r}.")
    return partial(function, **params)


def kernel_matrix(X, Y=None, kernel: str | Callable = "linear", **params) -> np.ndarray:
    """The Gram block κ(x_i, y_j) of one of the lecture's kernels.

    Parameters
    ----------
    X : array-like of shape (n_X, d)
    Y : array-like of shape (n_Y, d), optional
        Defaults to ``X``.
    kernel : str or callable, default='linear'
        See :func:`make_kernel`.
    **params
        The kernel's parameters.

    Returns
    -------
    ndarray of shape (n_X, n_Y)

    Raises
    ------
    ValueError
        For a bad kernel parameter, or if a value is NaN or infinite (NaN in
        the points, an overflowing degree, a callable's NaN): every solver
        of :mod:`msvm.teaching` builds its Gram matrix here.

    Examples
    --------
    >>> from msvm.teaching import kernel_matrix, logic_gate
    >>> X, _ = logic_gate("xor")
    >>> kernel_matrix(X, kernel="rbf", gamma=0.5).round(3)
    array([[1.   , 0.607, 0.607, 0.368],
           [0.607, 1.   , 0.368, 0.607],
           [0.607, 0.368, 1.   , 0.607],
           [0.368, 0.607, 0.607, 1.   ]])
    """
    f = make_kernel(kernel, **params)
    K = np.asarray(f(X, X if Y is None else Y), dtype=np.float64)
    if not np.all(np.isfinite(K)):
        raise ValueError("The kernel's values contain NaN or infinity (NaN in the points, "
                         "or a kernel that overflows for them).")
    return K


def sklearn_equivalent(kernel: str, **params) -> tuple[str, dict]:
    """The ``pairwise_kernels`` metric and parameters equal to a lecture kernel.

    Parameters
    ----------
    kernel : {'linear', 'poly', 'rbf', 'laplace', 'tanh'}
    **params
        The lecture kernel's parameters.

    Returns
    -------
    metric : str
    kwargs : dict
        ``pairwise_kernels(X, Y, metric=metric, **kwargs)`` equals
        ``kernel_matrix(X, Y, kernel, **params)``.

    Raises
    ------
    ValueError
        For the lecture's Euclidean Laplace kernel, which scikit-learn does
        not have (its ``laplacian`` kernel is the ``norm='l1'`` one).
    """
    if kernel == "linear":
        return "linear", {}
    if kernel == "poly":
        return "polynomial", {"degree": params.get("degree", 2), "gamma": 1.0, "coef0": 1.0}
    if kernel == "rbf":
        return "rbf", {"gamma": params.get("gamma", 1.0)}
    if kernel == "laplace":
        if params.get("norm", "l2") != "l1":
            raise ValueError("scikit-learn's laplacian kernel uses the L1 norm; the lecture's "
                             "Euclidean Laplace kernel has no pairwise_kernels metric.")
        return "laplacian", {"gamma": params.get("gamma", 1.0)}
    if kernel == "tanh":
        return "sigmoid", {"gamma": params.get("gamma", 1.0), "coef0": params.get("r", 0.0)}
    raise ValueError(f"Unknown kernel {kernel!r}; expected one of {sorted(LECTURE_KERNELS)}.")
