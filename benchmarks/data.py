"""The one loader of the benchmarks: a shared data set as BENCHMARKS.md prepares it.

``load(name, n_train, sparse=...)`` reads ``../shared/datasets/<name>``
(:func:`msvm.datasets.shared_dataset`), divides MNIST's pixels by 255 and
pendigits' coordinates (integers 0..100) by 100 (:data:`DIVISORS`), keeps
the first ``n_train`` training examples (or a stratified subsample), splits
a set without a test part 2/3 – 1/3 (stratified, seed 0), and returns dense
float64 arrays or CSR matrices (32-bit indices, as scikit-learn's SVC and
LinearSVC require).  ``"text"`` is a generated text-like set
(:func:`text_like`) for the linear solver's benchmark, ``"blobs<Q>"`` a
generated set of Q Gaussian classes (:data:`BLOBS`) for the many-class rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Data sets whose stored values are divided by a constant (BENCHMARKS.md): MNIST's pixel
#: intensities to [0, 1], pendigits' pen coordinates (0..100) to [0, 1].
DIVISORS = {"mnist": 255.0, "pendigits": 100.0}

#: The text-like set of :mod:`benchmarks.bench_linear` (:func:`text_like`).
TEXT = dict(m=20000, m_test=5000, d=50000, density=0.002, n_classes=50, topic=200, seed=0)


#: The sets ``blobs<Q>``: Q classes, each a unit Gaussian around a centre drawn from
#: N(0, spread²) in d dimensions; ``per_class`` training and test points per class.
BLOBS = dict(per_class=10, d=8, spread=1.5, seed=0)


def load(name: str, n_train: int | None = None, *, sparse: bool = False,
         stratified: bool = False):
    """(X_train, y_train, X_test, y_test) of a data set, dense or CSR.

    Parameters
    ----------
    name : str
        A folder of ``../shared/datasets`` (e.g. ``'usps'``, ``'mnist'``) or
        ``'text'`` (generated).
    n_train : int, optional
        Training examples kept: the first ``n_train`` (BENCHMARKS.md's
        mnist10k), or a stratified subsample (seed 0) with ``stratified``.
    sparse : bool
        CSR matrices (float64) instead of dense float64 arrays.
    stratified : bool
        Subsample the training set stratified instead of taking its head.
    """
    from sklearn.model_selection import train_test_split

    if name == "text":
        X, y, Xt, yt = _text(n_train)
    elif name.startswith("blobs"):
        X, y, Xt, yt = _blobs(int(name[len("blobs"):]))
    else:
        from msvm.datasets import shared_dataset

        X, y, Xt, yt = shared_dataset(name)
        if Xt is None:
            X, Xt, y, yt = train_test_split(X, y, test_size=1 / 3, stratify=y, random_state=0)
        if n_train is not None and n_train < len(y):
            if stratified:
                keep, _ = train_test_split(np.arange(len(y)), train_size=n_train, stratify=y,
                                           random_state=0)
                keep = np.sort(keep)
            else:
                keep = np.arange(n_train)
            X, y = X[keep], y[keep]
    X, Xt = sp.csr_matrix(X, dtype=np.float64), sp.csr_matrix(Xt, dtype=np.float64)
    if name in DIVISORS:
        X, Xt = X / DIVISORS[name], Xt / DIVISORS[name]
    if not sparse:
        return X.toarray(), y, Xt.toarray(), yt
    return _index32(X), y, _index32(Xt), yt


def missing(names) -> str | None:
    """Why the shared data sets ``names`` cannot be read (checked before the runs: their
    folders), or None; the generated sets (``text``, ``blobs<Q>``) need none."""
    from msvm.datasets import DatasetNotFoundError, find_shared_datasets

    shared = sorted({n for n in names if n != "text" and not n.startswith("blobs")})
    if not shared:
        return None
    try:
        base = find_shared_datasets()
    except DatasetNotFoundError as exc:
        return str(exc)
    absent = [n for n in shared if not (base / n).is_dir()]
    return f"no data set {', '.join(absent)} in {str(base)!r}" if absent else None


def _index32(X: sp.csr_matrix) -> sp.csr_matrix:
    """CSR with 32-bit indices, the only ones libsvm's and liblinear's wrappers accept."""
    X = sp.csr_matrix(X)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


def _blobs(n_classes: int):
    """The set ``blobs<n_classes>`` (:data:`BLOBS`): training and test points drawn alike."""
    rng = np.random.default_rng(BLOBS["seed"])
    centres = BLOBS["spread"] * rng.standard_normal((n_classes, BLOBS["d"]))
    y = np.repeat(np.arange(n_classes), BLOBS["per_class"])
    X, Xt = (centres[y] + rng.standard_normal((len(y), BLOBS["d"])) for _ in range(2))
    return X, y, Xt, y.copy()


def _text(n_train: int | None):
    """The text-like set, scaled down with ``n_train`` (quick runs)."""
    spec = dict(TEXT)
    if n_train is not None:
        spec["m"], spec["d"] = n_train, max(2000, int(TEXT["d"] * n_train / TEXT["m"]))
        spec["m_test"] = max(1000, n_train // 4)
    return text_like(**spec)


def text_like(m: int, m_test: int, d: int, density: float, n_classes: int, topic: int,
              seed: int):
    """A deterministic text-like set: (X, y, X_test, y_test), CSR rows of unit length.

    Each class owns ``topic`` "topic" features; half of a row's non-zeros
    come from its class's topic, the rest are uniform noise, so the classes
    are linearly structured but overlap.
    """
    rng = np.random.default_rng(seed)
    n = m + m_test
    per_row = max(1, int(round(d * density)))
    topics = rng.integers(0, d, size=(n_classes, topic))
    y = rng.integers(0, n_classes, size=n)
    rows = np.repeat(np.arange(n), per_row)
    own = rng.random(n * per_row) < 0.5
    cols = np.where(own, topics[y[rows], rng.integers(0, topic, size=n * per_row)],
                    rng.integers(0, d, size=n * per_row))
    vals = rng.random(n * per_row) + 0.1
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    return X[:m], y[:m], X[m:], y[m:]
