"""The problem matrix of the validation suite: named, seeded generators of (X, y).

Every problem is a :class:`ProblemSpec`: a name, a generator returning
``(X, y)`` (dense float64, labels coded 0 .. Q−1), the RBF γ (fixed per
problem: scikit-learn's ``'scale'`` rule 1 / (d · Var(X)), computed once on
the generated data) and the C values to try.  Everything is deterministic: the
generated sets draw from ``numpy.random.default_rng(seed)`` and the real sets
are subsampled (stratified) with a fixed seed.

Generated problems (m ≤ 200, Q ∈ {2, 3, 4, 5}):

* ``blobs-*``: well-separated Gaussian blobs (separable or nearly so: many
  bound-free variables, a unique bias);
* ``overlap-*``: overlapping Gaussian classes (many variables at capacity C);
* ``xor-q2`` and ``checker-q4``: XOR and a 4-class checkerboard (linearly
  inseparable: the linear rows are dominated by bound variables, where b is
  often not unique);
* ``rings-q3``: concentric rings; ``blobs-q5-d20``: blobs in 20 dimensions
  (rank of the linear kernel 20 < m); ``dup-q3``: overlapping classes with
  every point duplicated (a rank-deficient Gram matrix and ties everywhere).

Real problems, read from the shared datasets folder (LIBSVM format;
:func:`msvm.datasets.find_shared_datasets`: ``$MSVM_DATASETS`` or ``../shared/datasets``):
iris (``iris.scale``, all 150), wine (all 178), glass (subsampled) and vowel
(training part, subsampled).  The subsample sizes keep the full matrix within
its time budget (see README.md); they are stratified, so every class stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from msvm.datasets import find_shared_datasets

__all__ = ["ProblemSpec", "PROBLEMS", "QUICK_PROBLEMS", "get_problem"]

#: Default C values of the matrix (original formulations, DESIGN.md §2).
DEFAULT_CS = (0.1, 10.0)


@dataclass(frozen=True)
class ProblemSpec:
    """One problem of the matrix.

    Parameters
    ----------
    name : str
        Row-name prefix (unique).
    generator : callable
        ``generator(seed) -> (X, y)``.
    seed : int
        Seed passed to the generator.
    Cs : tuple of float
        C values to run this problem with.
    kind : str
        ``"generated"`` or ``"real"``.
    """

    name: str
    generator: Callable[[int], tuple[np.ndarray, np.ndarray]] = field(repr=False)
    seed: int = 0
    Cs: tuple[float, ...] = DEFAULT_CS
    kind: str = "generated"

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) with X dense float64 and y coded 0 .. Q−1."""
        X, y = self.generator(self.seed)
        X = np.ascontiguousarray(X, dtype=np.float64)
        _, y = np.unique(np.asarray(y), return_inverse=True)
        return X, y.astype(np.intp)

    @cached_property
    def data(self) -> tuple[np.ndarray, np.ndarray]:
        return self.load()

    def gamma(self, X: np.ndarray | None = None) -> float:
        """RBF γ of this problem: 1 / (d · Var(X)) (scikit-learn's 'scale')."""
        X = self.data[0] if X is None else X
        var = float(X.var())
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


# ------------------------------------------------------------ generators
def _blobs(m: int, Q: int, d: int, spread: float, std: float):
    """Q Gaussian classes of (about) m / Q points each, centres on a scaled simplex."""

    def gen(seed: int):
        rng = np.random.default_rng(seed)
        centres = rng.normal(size=(Q, d))
        centres *= spread / np.linalg.norm(centres, axis=1, keepdims=True)
        y = np.arange(m) % Q
        X = centres[y] + std * rng.normal(size=(m, d))
        return X, y

    return gen


def _xor(m: int):
    """XOR: four clusters at (±1, ±1), label = sign(x₁ x₂)."""

    def gen(seed: int):
        rng = np.random.default_rng(seed)
        corner = rng.integers(0, 4, size=m)
        centres = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=float)
        X = centres[corner] + 0.35 * rng.normal(size=(m, 2))
        y = (corner >= 2).astype(int)
        return X, y

    return gen


def _checkerboard(m: int, Q: int = 4, cells: int = 4):
    """Uniform points on [0, cells)², class = (⌊x₁⌋ + 2⌊x₂⌋ mod …) so that Q colours tile."""

    def gen(seed: int):
        rng = np.random.default_rng(seed)
        X = rng.uniform(0.0, cells, size=(m, 2))
        i, j = np.floor(X[:, 0]).astype(int), np.floor(X[:, 1]).astype(int)
        y = (i % 2) + 2 * (j % 2) if Q == 4 else (i + j) % Q
        return X - cells / 2.0, y

    return gen


def _rings(m: int, Q: int):
    """Q concentric noisy rings of radii 1 .. Q."""

    def gen(seed: int):
        rng = np.random.default_rng(seed)
        y = np.arange(m) % Q
        angle = rng.uniform(0, 2 * np.pi, size=m)
        radius = (y + 1) + 0.25 * rng.normal(size=m)
        return np.c_[radius * np.cos(angle), radius * np.sin(angle)], y

    return gen


def _duplicated(m: int, Q: int, d: int):
    """Overlapping classes with every point present twice (same label)."""
    base = _blobs(m // 2, Q, d, spread=1.5, std=1.0)

    def gen(seed: int):
        X, y = base(seed)
        return np.vstack([X, X]), np.concatenate([y, y])

    return gen


# ------------------------------------------------------------ real data
def _stratified_subsample(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Indices of a stratified subsample of size ≈ n (every class kept), sorted."""
    if n >= len(y):
        return np.arange(len(y))
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    # Largest-remainder allocation, at least one point per class.
    quota = counts * n / len(y)
    take = np.maximum(np.floor(quota).astype(int), 1)
    rest = n - take.sum()
    if rest > 0:
        order = np.argsort(-(quota - np.floor(quota)), kind="stable")
        take[order[:rest]] += 1
    take = np.minimum(take, counts)
    idx = [rng.choice(np.flatnonzero(y == c), size=k, replace=False)
           for c, k in zip(classes, take, strict=True)]
    return np.sort(np.concatenate(idx))


def _libsvm(relpath: str, n: int | None = None):
    """Reader of a LIBSVM file under shared/datasets, optionally subsampled to n points."""

    def gen(seed: int):
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(find_shared_datasets() / relpath))
        X = X.toarray()
        if n is not None:
            idx = _stratified_subsample(y, n, seed)
            X, y = X[idx], y[idx]
        return X, y

    return gen


# ------------------------------------------------------------ the matrix
PROBLEMS: dict[str, ProblemSpec] = {
    spec.name: spec
    for spec in [
        ProblemSpec("blobs-q2", _blobs(60, 2, 2, spread=3.0, std=0.5), seed=1),
        ProblemSpec("blobs-q3", _blobs(90, 3, 2, spread=3.0, std=0.5), seed=2),
        ProblemSpec("blobs-q5", _blobs(100, 5, 3, spread=4.0, std=0.6), seed=3),
        ProblemSpec("overlap-q2", _blobs(80, 2, 2, spread=1.0, std=1.0), seed=4),
        ProblemSpec("overlap-q3", _blobs(90, 3, 3, spread=1.5, std=1.0), seed=5),
        ProblemSpec("overlap-q5", _blobs(100, 5, 4, spread=2.0, std=1.0), seed=6),
        ProblemSpec("xor-q2", _xor(80), seed=7),
        ProblemSpec("checker-q4", _checkerboard(100), seed=8),
        ProblemSpec("rings-q3", _rings(90, 3), seed=9),
        ProblemSpec("blobs-q5-d20", _blobs(100, 5, 20, spread=3.0, std=1.0), seed=10),
        ProblemSpec("dup-q3", _duplicated(60, 3, 2), seed=11),
        ProblemSpec("iris", _libsvm("iris/iris.scale.bz2"), kind="real"),
        ProblemSpec("wine", _libsvm("wine/wine.scale.bz2"), kind="real"),
        ProblemSpec("glass", _libsvm("glass/glass.scale.bz2", n=120), seed=12, kind="real"),
        ProblemSpec("vowel", _libsvm("vowel/vowel.scale.bz2", n=88), seed=13, kind="real"),
    ]
}

#: A small subset for the test-suite (``python -m validation --quick``).
QUICK_PROBLEMS = ("overlap-q3",)


def get_problem(name: str) -> ProblemSpec:
    if name not in PROBLEMS:
        raise KeyError(f"Unknown validation problem {name!r}; known: {sorted(PROBLEMS)}.")
    return PROBLEMS[name]
