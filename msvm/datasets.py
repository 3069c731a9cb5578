"""LIBSVM-format data: files on disk and the shared benchmark folder.

:func:`load_libsvm` and :func:`load_libsvm_files` wrap
:func:`sklearn.datasets.load_svmlight_file(s) <sklearn.datasets.load_svmlight_files>`
(plain or ``.bz2``/``.gz`` compressed) and turn every way a file can be
unreadable into a one-line error naming the file.

:func:`shared_dataset` reads the offline benchmark copies kept *next to* the
repository, in ``../shared/datasets/<name>/`` (see the README there).  They are
never copied into the project: the folder is found by walking up from the
current directory and from this package's directory (or given explicitly, or
by the ``MSVM_DATASETS`` environment variable).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.datasets import load_svmlight_files

from msvm._typing import PathLike

__all__ = [
    "DatasetNotFoundError",
    "available_datasets",
    "find_shared_datasets",
    "load_libsvm",
    "load_libsvm_files",
    "shared_dataset",
]

#: Environment variable naming the shared datasets folder (overrides the search).
DATASETS_ENV = "MSVM_DATASETS"


class DatasetNotFoundError(FileNotFoundError, ValueError):
    """A data file or dataset folder does not exist.

    Both a :class:`FileNotFoundError` (what Python code expects of a missing
    file) and a :class:`ValueError` (what every other bad input raises here).
    """


def _integral_labels(y: np.ndarray) -> np.ndarray:
    """LIBSVM labels are read as floats; give integers back when they are integers."""
    # |y| < 2**63: a larger integral float (1e20) does not fit int64 (the cast wraps it).
    if (y.size and np.all(np.isfinite(y)) and np.all(y == np.round(y))
            and np.all(np.abs(y) < 2.0**63)):
        return y.astype(np.int64)
    return y


def _open_text(path: str):
    """Binary handle of a plain, ``.bz2`` or ``.gz`` file (as sklearn opens them)."""
    if path.endswith(".bz2"):
        import bz2

        return bz2.open(path, "rb")
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")


#: Largest feature index scikit-learn's parser reads (a C int).
_MAX_INDEX = 2**31 - 1


def _line_problem(raw: bytes) -> str | None:
    """Why one line is not ``label [qid:n] idx:val ...`` (None when it is)."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return "not text (non-ASCII bytes)"
    tokens = text.split("#", 1)[0].split()
    if not tokens:
        return None
    try:
        labels = [float(v) for v in tokens[0].split(",")]
    except ValueError:
        return f"the label {tokens[0]!r} is not a number"
    if not all(np.isfinite(labels)):
        return f"the label {tokens[0]!r} is not finite"
    for token in tokens[1:]:
        index, sep, value = token.partition(":")
        if not sep:
            return f"{token!r} is not an index:value pair"
        if index == "qid":
            continue
        try:
            feature, x = int(index), float(value)
        except ValueError:
            return f"{token!r} is not an integer index and a number"
        if feature < 0:
            return f"the feature index {feature} is negative"
        if feature > _MAX_INDEX:
            return f"the feature index {feature} is too large (at most {_MAX_INDEX})"
        if not np.isfinite(x):
            return f"the value of feature {feature} is not finite"
    return None


def _first_bad_line(path: str) -> str | None:
    """'line N: why' for the first malformed line of a LIBSVM file, or None."""
    try:
        with _open_text(path) as fh:
            for number, raw in enumerate(fh, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):   # Notepad's UTF-8
                    return ("line 1: the file starts with a UTF-8 byte-order mark (bytes EF BB "
                            "BF); save it as plain ASCII text, without the mark")
                problem = _line_problem(raw)
                if problem is not None:
                    return f"line {number}: {problem}"
    except (OSError, EOFError, ValueError) as exc:  # corrupt compressed stream
        return f"the file cannot be decompressed or read ({exc})"
    return None


def load_libsvm_files(paths: Iterable[PathLike], n_features: int | None = None, *,
                      zero_based: bool | str = "auto") -> list[Any]:
    """Load several LIBSVM files with a common number of features.

    Parameters
    ----------
    paths : sequence of str or path-like
        Files in LIBSVM/svmlight format (``label idx:val ...``), optionally
        ``.bz2`` or ``.gz`` compressed.
    n_features : int, optional
        Number of features; by default the largest index found in any file.
    zero_based : bool or 'auto', default='auto'
        Whether feature indices start at 0.  ``'auto'`` decides once for all
        files (1-based, the LIBSVM convention, unless some file uses index 0),
        so a train/test pair is always read consistently.

    Returns
    -------
    list
        ``[X_1, y_1, X_2, y_2, ...]`` with each X a CSR matrix (float64, 32-bit
        indices unless it is too large for them, as scikit-learn's ``SVC``
        requires) and each y an ndarray (int64 when every label is an integer).

    Raises
    ------
    DatasetNotFoundError
        If a file does not exist.
    ValueError
        If a file cannot be read or parsed, or holds no sample; the message
        names the file.

    Examples
    --------
    A training file and a test file whose largest feature index is lower: read
    together, both get the training file's 4 features.

    >>> import os
    >>> import tempfile
    >>> from msvm.datasets import load_libsvm_files
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     train, test = os.path.join(folder, "train"), os.path.join(folder, "test")
    ...     with open(train, "w") as f:
    ...         _ = f.write("1 1:0.5 4:1\\n2 2:-1\\n3 3:2 4:0.5\\n")
    ...     with open(test, "w") as f:
    ...         _ = f.write("2 1:1 2:-0.5\\n")
    ...     X_train, y_train, X_test, y_test = load_libsvm_files([train, test])
    >>> X_train.shape, X_test.shape
    ((3, 4), (1, 4))
    >>> y_train, y_test
    (array([1, 2, 3]), array([2]))
    """
    files = [os.fspath(p) for p in paths]
    for path in files:
        if not os.path.exists(path):
            raise DatasetNotFoundError(f"LIBSVM file {path!r} does not exist.")
        if os.path.isdir(path):
            raise ValueError(f"Cannot read LIBSVM file {path!r}: it is a directory.")
    try:
        loaded = load_svmlight_files(files, n_features=n_features, dtype=np.float64,
                                     zero_based=zero_based)
    except (ValueError, OSError, EOFError, IndexError, TypeError, UnicodeError,
            OverflowError) as exc:   # OverflowError: an index beyond a C int
        # sklearn's parser names neither the file nor the line: find them.
        for path in files:
            problem = _first_bad_line(path)
            if problem is not None:
                raise ValueError(f"Cannot read LIBSVM file {path!r}: {problem}.") from exc
        culprit = files[0]
        if len(files) > 1:
            for path in files:
                try:
                    load_svmlight_files([path], dtype=np.float64, zero_based=zero_based)
                except Exception:  # noqa: BLE001 - any failure identifies the file
                    culprit = path
                    break
            else:
                culprit = ", ".join(repr(p) for p in files)
                raise ValueError(f"Cannot read LIBSVM files {culprit}: {exc}") from exc
        raise ValueError(f"Cannot read LIBSVM file {culprit!r}: {exc}") from exc
    out = []
    for path, (X, y) in zip(files, zip(loaded[::2], loaded[1::2], strict=True), strict=True):
        if X.shape[0] == 0:
            raise ValueError(f"LIBSVM file {path!r} contains no samples.")
        if not (np.all(np.isfinite(X.data)) and np.all(np.isfinite(y))):
            problem = _first_bad_line(path) or "NaN or infinite values"
            raise ValueError(f"Cannot read LIBSVM file {path!r}: {problem}.")
        out.extend([_int32_indices(X.tocsr()), _integral_labels(np.asarray(y))])
    return out


def _int32_indices(X):
    """``X`` with 32-bit index arrays where they fit: scikit-learn's parser returns 64-bit
    ones, which its libsvm-based estimators (``SVC`` among them) refuse."""
    if X.nnz < 2**31 and max(X.shape) < 2**31:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X


def load_libsvm(path: PathLike, n_features: int | None = None, *,
                zero_based: bool | str = "auto") -> tuple[sp.csr_matrix, NDArray[Any]]:
    """Load one LIBSVM-format file.

    Parameters
    ----------
    path : str or path-like
        File in LIBSVM/svmlight format, optionally ``.bz2``/``.gz``
        compressed.
    n_features : int, optional
        Number of features (needed for a test file whose largest feature
        index is below the training file's); default: the largest index.
    zero_based : bool or 'auto', default='auto'
        See :func:`load_libsvm_files`.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Labels, int64 when they are all integers.

    Raises
    ------
    DatasetNotFoundError
        If the file does not exist.
    ValueError
        If the file is corrupt or unreadable (the message names the file).

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from msvm.datasets import load_libsvm
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "tiny.libsvm")
    ...     with open(path, "w") as f:
    ...         _ = f.write("1 1:0.5 3:1\\n2 2:-1\\n3 1:2 3:0.5\\n")
    ...     X, y = load_libsvm(path)
    >>> X.shape, X.format
    ((3, 3), 'csr')
    >>> X.toarray()
    array([[ 0.5,  0. ,  1. ],
           [ 0. , -1. ,  0. ],
           [ 2. ,  0. ,  0.5]])
    >>> y
    array([1, 2, 3])
    """
    X, y = load_libsvm_files([path], n_features=n_features, zero_based=zero_based)
    return X, y


def _search_starts() -> list[Path]:
    return [Path.cwd().resolve(), Path(__file__).resolve().parent]


def find_shared_datasets(root: PathLike | None = None) -> Path:
    """The shared datasets folder.

    Parameters
    ----------
    root : str or path-like, optional
        Use this folder.  Otherwise ``$MSVM_DATASETS`` if set, else the first
        ``shared/datasets`` folder found walking up from the current
        directory, then from the package directory (so a checkout at
        ``<dir>/main`` finds ``<dir>/shared/datasets``).

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from pathlib import Path
    >>> from unittest import mock
    >>> from msvm.datasets import find_shared_datasets
    >>> with tempfile.TemporaryDirectory() as root:
    ...     print(find_shared_datasets(root) == Path(root))
    ...     with mock.patch.dict(os.environ, {"MSVM_DATASETS": root}):   # export MSVM_DATASETS
    ...         print(find_shared_datasets() == Path(root))
    True
    True
    """
    source = ""
    if root is None and os.environ.get(DATASETS_ENV):
        root, source = os.environ[DATASETS_ENV], f" (from ${DATASETS_ENV})"
    if root is not None:
        root = Path(root)
        if not root.is_dir():
            # A file there was reported as "does not exist".
            what = "is not a folder" if root.exists() else "does not exist"
            raise DatasetNotFoundError(f"Datasets folder {str(root)!r}{source} {what}.")
        return root
    for start in _search_starts():
        for folder in (start, *start.parents):
            candidate = folder / "shared" / "datasets"
            if candidate.is_dir():
                return candidate
    raise DatasetNotFoundError(
        "No shared/datasets folder found above "
        f"{' or '.join(str(s) for s in _search_starts())}; set ${DATASETS_ENV} or pass root=."
    )


def available_datasets(root: PathLike | None = None) -> list[str]:
    """Names of the datasets in the shared folder (its sub-folders).

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from sklearn.datasets import dump_svmlight_file, load_iris
    >>> from msvm.datasets import available_datasets
    >>> X, y = load_iris(return_X_y=True)
    >>> with tempfile.TemporaryDirectory() as root:   # a datasets folder holding iris only
    ...     os.mkdir(os.path.join(root, "iris"))
    ...     dump_svmlight_file(X, y, os.path.join(root, "iris", "iris.scale"), zero_based=False)
    ...     print(available_datasets(root))
    ['iris']
    """
    folder = find_shared_datasets(root)
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _first_existing(folder: Path, stems: list[str]) -> Path | None:
    for stem in stems:
        for suffix in (".bz2", ""):
            path = folder / f"{stem}{suffix}"
            if path.is_file():
                return path
    return None


def shared_dataset(
    name: str, *, scaled: bool | None = None, root: PathLike | None = None
) -> tuple[sp.csr_matrix, NDArray[Any], sp.csr_matrix | None, NDArray[Any] | None]:
    """Load a benchmark set of ``../shared/datasets`` as (X_train, y_train, X_test, y_test).

    Files follow the LIBSVM multiclass naming: ``<name>/<name>[.scale].bz2``
    is the training set (or the only set) and ``<name>/<name>[.scale].t.bz2``
    the test set.  Train and test are read together, so they have the same
    number of features even when the test file's largest index is lower.

    Parameters
    ----------
    name : str
        Dataset folder, e.g. ``'iris'``, ``'letter'``, ``'usps'``
        (:func:`available_datasets` lists them).
    scaled : bool, optional
        ``True`` for the ``.scale`` files, ``False`` for the raw ones;
        default: the ``.scale`` version when it exists, else the raw one.
    root : str or path-like, optional
        Datasets folder (see :func:`find_shared_datasets`).

    Returns
    -------
    X_train : scipy.sparse.csr_matrix
    y_train : ndarray
    X_test : scipy.sparse.csr_matrix or None
        None when the set has no test split (evaluate it by cross-validation).
    y_test : ndarray or None
        Labels as stored (some sets are 0-based, some 1-based), int64.

    Raises
    ------
    DatasetNotFoundError
        If the datasets folder, the dataset or its training file is missing.
    ValueError
        If ``name`` is not a folder name or ``scaled`` not True, False or
        None, or a file cannot be read (the message names the file).

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from sklearn.datasets import dump_svmlight_file, load_iris
    >>> from msvm.datasets import shared_dataset
    >>> X, y = load_iris(return_X_y=True)
    >>> with tempfile.TemporaryDirectory() as root:   # a datasets folder holding iris only
    ...     os.mkdir(os.path.join(root, "iris"))
    ...     dump_svmlight_file(X, y, os.path.join(root, "iris", "iris.scale"), zero_based=False)
    ...     X_train, y_train, X_test, y_test = shared_dataset("iris", root=root)
    >>> X_train.shape, y_train[:3], X_test   # no test file here: X_test, y_test are None
    ((150, 4), array([0, 0, 0]), None)
    """
    # None or 3 was a TypeError from pathlib; '', '.', '..' or a path looked outside the
    # dataset folders with a "No training file .scale.bz2" message; scaled='yes' a KeyError.
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or (
            os.sep in name) or (os.altsep and os.altsep in name):
        raise ValueError(f"name must be the name of a dataset folder (e.g. 'iris'), "
                         f"got {name!r}.")
    if scaled not in (True, False, None):
        raise ValueError(f"scaled must be True, False or None, got {scaled!r}.")
    base = find_shared_datasets(root)
    folder = base / name
    if not folder.is_dir():
        names = ", ".join(available_datasets(base)) or "none"
        raise DatasetNotFoundError(
            f"No dataset {name!r} in {str(base)!r}; available: {names}."
        )
    variants = {True: [f"{name}.scale"], False: [name], None: [f"{name}.scale", name]}[scaled]
    train = _first_existing(folder, variants)
    if train is None:
        raise DatasetNotFoundError(
            f"No training file {' or '.join(v + '.bz2' for v in variants)} in {str(folder)!r}."
        )
    stem = train.name[: -len(".bz2")] if train.name.endswith(".bz2") else train.name
    test = _first_existing(folder, [f"{stem}.t"])
    if test is None:
        X_train, y_train = load_libsvm_files([train])
        return X_train, y_train, None, None
    X_train, y_train, X_test, y_test = load_libsvm_files([train, test])
    return X_train, y_train, X_test, y_test
