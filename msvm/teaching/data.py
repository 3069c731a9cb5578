"""The lecture's data: the AND, OR and XOR exercises and generated 2-D sets.

Labels are ±1 throughout :mod:`msvm.teaching` (the lecture's y ∈ {−1, +1});
the multi-class sets are coded 0 .. Q−1.
"""

from __future__ import annotations

import numpy as np

from msvm._numbers import is_integer, is_real
from msvm.teaching.kernels import _check_number

__all__ = ["logic_gate", "separable_set", "overlapping_set", "multiclass_set"]

#: Draws per point after which :func:`separable_set` gives up on a ``margin`` the
#: cube [−3, 3]^d barely leaves room for.
MAX_DRAWS_PER_POINT = 1000


def _check_count(name: str, value, least: int) -> None:
    if not is_integer(value) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}.")


def logic_gate(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The lecture's mini exercises: the four corners of {0, 1}² labelled by a gate.

    Parameters
    ----------
    name : {'and', 'or', 'xor'}

    Returns
    -------
    X : ndarray of shape (4, 2)
        (0, 0), (0, 1), (1, 0), (1, 1).
    y : ndarray of shape (4,)
        +1 where the gate outputs 1, −1 elsewhere.  AND and OR are linearly
        separable (e.g. x₁ + x₂ − 1.5 and x₁ + x₂ − 0.5); XOR is not.

    Examples
    --------
    >>> from msvm.teaching import linearly_separable, logic_gate
    >>> X, y = logic_gate("and")
    >>> X
    array([[0., 0.],
           [0., 1.],
           [1., 0.],
           [1., 1.]])
    >>> y
    array([-1., -1., -1.,  1.])
    >>> linearly_separable(*logic_gate("xor"))
    False
    """
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    a, b = X[:, 0].astype(bool), X[:, 1].astype(bool)
    gates = {"and": a & b, "or": a | b, "xor": a ^ b}
    if name not in gates:
        raise ValueError(f"Unknown gate {name!r}; expected 'and', 'or' or 'xor'.")
    return X, np.where(gates[name], 1.0, -1.0)


def separable_set(n_samples: int = 40, margin: float = 0.5, n_features: int = 2,
                  random_state: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points drawn around a random hyperplane, kept only outside a band around it.

    Parameters
    ----------
    n_samples : int, default=40
    margin : float, default=0.5
        Every point is at distance ≥ ``margin`` from the hyperplane that
        labels it, so the set is linearly separable with margin ≥ ``margin``.
    n_features : int, default=2
    random_state : int or None, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        ±1, both classes present.

    Raises
    ------
    ValueError
        If ``n_samples`` < 2 or ``n_features`` < 1, or ``margin`` is not a
        number ≥ 0 or leaves (almost) no room for points in the cube
        [−3, 3]^d (rather than draw for ever).

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.teaching import linearly_separable, separable_set
    >>> X, y = separable_set(20, margin=0.5, random_state=0)
    >>> X.shape, np.unique(y)
    ((20, 2), array([-1.,  1.]))
    >>> linearly_separable(X, y)
    True
    """
    _check_count("n_samples", n_samples, 2)   # both classes
    _check_count("n_features", n_features, 1)
    if not is_real(margin) or not 0 <= margin < np.inf:
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}.")
    rng = np.random.default_rng(random_state)
    normal = rng.normal(size=n_features)
    normal /= np.linalg.norm(normal)
    offset = rng.uniform(-0.5, 0.5)
    # The farthest corner of the cube from the hyperplane: no point lies beyond it.
    if margin >= 3.0 * np.abs(normal).sum() + abs(offset):
        raise ValueError(f"margin={margin!r} is beyond every point of the cube [-3, 3]^"
                         f"{n_features} the points are drawn from; use a smaller margin.")
    points: list[np.ndarray] = []
    for _ in range(MAX_DRAWS_PER_POINT * n_samples):
        if len(points) == n_samples:
            break
        x = rng.uniform(-3.0, 3.0, size=n_features)
        if abs(x @ normal + offset) >= margin:
            points.append(x)
    if len(points) < n_samples:
        raise ValueError(f"margin={margin!r} leaves almost no room in the cube [-3, 3]^"
                         f"{n_features}: {len(points)} of {n_samples} points in "
                         f"{MAX_DRAWS_PER_POINT * n_samples} draws; use a smaller margin.")
    X = np.array(points)
    y = np.where(X @ normal + offset > 0, 1.0, -1.0)
    if np.all(y == y[0]):  # both classes are needed: flip the farthest point across
        k = int(np.argmax(np.abs(X @ normal + offset)))
        X[k] -= 2.0 * (X[k] @ normal + offset) * normal
        y[k] = -y[k]
    return X, y


def overlapping_set(n_samples: int = 60, spread: float = 1.2,
                    random_state: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes in 2-D whose overlap grows with ``spread`` (soft margin).

    Parameters
    ----------
    n_samples : int, default=60
    spread : float, default=1.2
        Standard deviation (≥ 0) of each class around its centre (±(1, 1)).
    random_state : int or None, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        ±1 alternately, starting with +1 (half of each; one more +1 when
        ``n_samples`` is odd).

    Examples
    --------
    >>> from msvm.teaching import linearly_separable, overlapping_set
    >>> X, y = overlapping_set(40, spread=1.2, random_state=0)
    >>> X.shape, y[:4]
    ((40, 2), array([ 1., -1.,  1., -1.]))
    >>> linearly_separable(X, y)
    False
    """
    _check_count("n_samples", n_samples, 2)   # both classes
    spread = _check_number("spread", spread, 0.0)   # NaN gave NaN points
    rng = np.random.default_rng(random_state)
    y = np.where(np.arange(n_samples) % 2 == 0, 1.0, -1.0)
    X = y[:, None] * np.array([1.0, 1.0]) + spread * rng.normal(size=(n_samples, 2))
    return X, y


def multiclass_set(n_classes: int = 3, n_samples: int = 90, spread: float = 1.0,
                   random_state: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian classes in 2-D with centres on a circle of radius 3, labels 0 .. Q−1.

    Parameters
    ----------
    n_classes : int, default=3
    n_samples : int, default=90
    spread : float, default=1.0
        Standard deviation (≥ 0) of each class around its centre.
    random_state : int or None, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        Every class present (``n_samples`` ≥ ``n_classes`` ≥ 2).

    Examples
    --------
    >>> import numpy as np
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(n_classes=3, n_samples=30, random_state=0)
    >>> X.shape, np.bincount(y)
    ((30, 2), array([10, 10, 10]))
    """
    _check_count("n_classes", n_classes, 2)
    _check_count("n_samples", n_samples, n_classes)   # every class present
    spread = _check_number("spread", spread, 0.0)   # NaN gave NaN points
    rng = np.random.default_rng(random_state)
    y = np.arange(n_samples) % n_classes
    angles = 2.0 * np.pi * np.arange(n_classes) / n_classes
    centres = 3.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    X = centres[y] + spread * rng.normal(size=(n_samples, 2))
    return X, y
