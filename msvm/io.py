"""Model files: :func:`save` and :func:`load` a fitted :class:`~msvm.MultiClassSVC`.

A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays) that is
read with ``allow_pickle=False``: loading it never runs code, unlike a
pickle.  It holds

``header``
    UTF-8 JSON (a uint8 array): the format name and version, the msvm
    version that wrote it, every estimator parameter (so the machine, the
    kernel and its parameters), the fitted scalars (``gamma_`` actually
    used, ``n_features_in_``, ``shape_fit_``, ``n_iter_``, the feature
    names, the class weights ``class_weight_``), the certificate
    ``solution_`` (non-finite floats written as
    ``{"$float": "nan"}``, ``"inf"`` or ``"-inf"``, since JSON has none),
    the layout of the classes and of the support vectors, and a free
    ``metadata`` dict of the caller's (the command line records how it read
    its LIBSVM file there).
``classes``
    ``classes_``: integers, floats, booleans or text (strings are stored as
    a fixed-width text array; an object array of strings comes back as one).
``support``, ``n_support``, ``dual_coef``, ``intercept``
    ``support_``, ``n_support_``, β (``dual_coef_``) and b (``intercept_``).
``support_vectors`` or ``sv_data``, ``sv_indices``, ``sv_indptr``
    The support vectors, dense or as the three arrays of a CSR matrix (none
    for a precomputed kernel, whose model is the support indices and β).

``coef_`` of a linear kernel is not stored: :func:`load` recomputes it as
``fit`` does (βᵀ X_SV), so the loaded model predicts exactly as the saved one.

What cannot be saved: a callable kernel (it is code; use a named kernel, or
compute the Gram matrices and use ``kernel='precomputed'``), and class labels
that are neither numbers nor text.  A ``random_state`` that is a
``RandomState`` instance is stored as None.  A loaded model predicts, scores
and can be refitted; it cannot be continued by ``partial_fit`` (the file
holds the predictor, not the solver's dual variables: pickle the estimator
for that).

:func:`load` checks everything it reads -- the archive, that every array it
expects is there and nothing else, dtypes, shapes, finiteness, the
parameters (as ``fit`` validates them), the consistency of the header with
the arrays and of the arrays with each other, the format version -- and
answers any problem with a :class:`ModelFileError` (a ValueError) naming it.
Each array's dtype and shape are checked on its ``.npy`` header before its
data is decompressed, so a file cannot make :func:`load` allocate more than
the model its header describes.
Format versions: a file of a newer format than this msvm reads is refused
with both versions named; a new parameter of the estimator is a new entry of
the header's ``params``, and files of the older versions, which lack it, get
its default.  Version 2 added ``class_weight`` (a dict is stored as a list of
``[label, weight]`` pairs, since JSON keys are text only) and the fitted
``class_weight_``; a version-1 file loads with ``class_weight=None`` and
weights 1.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import zipfile
import zlib
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from msvm._typing import PathLike
    from msvm.estimator import MultiClassSVC

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelFileError", "ModelFileNotFoundError", "load",
           "save"]

#: Name of the format in every header.
FORMAT = "msvm-model"
#: Version of the format this msvm writes and the newest it reads.
FORMAT_VERSION = 2

# The arrays of a file (with the CSR or the dense support vectors, never both).
_COMMON = ("header", "classes", "support", "n_support", "dual_coef", "intercept")
_LAYOUTS = {"dense": ("support_vectors",), "csr": ("sv_data", "sv_indices", "sv_indptr"),
            "none": ()}
# Keys of the header, each with the JSON type it must have.
_HEADER_KEYS: dict[str, type | tuple[type, ...]] = {
    "format": str, "format_version": int, "msvm_version": str, "params": dict,
    "n_classes": int, "classes_dtype": str, "sv_layout": str, "n_support": int,
    "n_features_in": int, "shape_fit": list, "gamma": float, "n_iter": int,
    "feature_names_in": (list, type(None)), "solution": dict, "metadata": dict,
    "class_weight": (list, type(None))}
#: Parameters and header keys added by each format version: a file of an older
#: version lacks them and gets these values (parameters: the defaults).
_ADDED = {2: {"params": {"class_weight": None}, "header": {"class_weight": None}}}
_KIND_NAMES = {"f": "float64", "i": "integer", "biufU": "numbers or text"}
# Largest header (bytes): a header holds names and scalars, never data.
_MAX_HEADER = 1 << 24


class ModelFileError(ValueError):
    """A model file cannot be written, or is not a valid msvm model file.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from msvm import ModelFileError, load
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "notes.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write("not a model")
    ...     try:
    ...         load(path)
    ...     except ModelFileError as exc:
    ...         print(exc)  # doctest: +ELLIPSIS
    Model file '...notes.txt': is not a msvm model file (not a .npz archive: ...).
    """


class ModelFileNotFoundError(ModelFileError, FileNotFoundError):
    """The model file does not exist (also a :class:`FileNotFoundError`).

    Examples
    --------
    >>> from msvm import load
    >>> from msvm.io import ModelFileNotFoundError
    >>> try:
    ...     load("no-such-model.msvm")
    ... except FileNotFoundError as exc:
    ...     print(type(exc).__name__)
    ModelFileNotFoundError
    """


# ------------------------------------------------------------------ JSON
def _to_json(value, where: str):
    """``value`` as plain JSON types (non-finite floats as ``{"$float": ...}``)."""
    if isinstance(value, dict):
        if set(value) == {"$float"}:   # the header's spelling of a non-finite float
            raise ModelFileError(f"Cannot store {where} = {value!r} in a model file: a dict whose "
                                 "only key is '$float' is how the file writes NaN and infinity.")
        return {str(k): _to_json(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(list(value))]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    raise ModelFileError(f"Cannot store {where} = {value!r} ({type(value).__name__}) in a model "
                         "file: only numbers, text, None and lists or dicts of them.")


_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            text = value["$float"]
            if text not in _SPECIAL_FLOATS:
                raise ValueError(f"{value!r} is not a float (expected 'nan', 'inf' or '-inf')")
            return _SPECIAL_FLOATS[text]
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _reject_constant(name):
    raise ValueError(f"{name} is not standard JSON (non-finite floats are written as "
                     '{"$float": ...})')


# ------------------------------------------------------------------ save
def _classes_array(classes: np.ndarray) -> tuple[np.ndarray, str]:
    """``classes_`` as an array NumPy loads without pickle, and the dtype to restore."""
    original = classes.dtype
    if original.kind == "O":
        classes = np.array(classes.tolist())
    if classes.dtype.kind not in "biufU" or classes.ndim != 1:
        raise ModelFileError(f"Cannot store class labels {classes.tolist()!r} in a model file: "
                             "labels must all be numbers or all be text.")
    return classes, "object" if original.kind == "O" else classes.dtype.str


def save(model: MultiClassSVC, path: PathLike, *, metadata: dict[str, Any] | None = None) -> None:
    """Write a fitted :class:`~msvm.MultiClassSVC` to a model file.

    Parameters
    ----------
    model : MultiClassSVC
        A fitted estimator (any machine, solver and named or precomputed
        kernel; not a callable kernel).
    path : str or path-like
        The file to write (its name is kept as given: NumPy's ``.npz``
        suffix is not appended).  Written to a temporary file in the same
        folder, then renamed, so a failed save leaves no partial file.
    metadata : dict, optional
        JSON-serialisable notes stored with the model (see :func:`load`).

    Raises
    ------
    ModelFileError
        If the model cannot be stored (callable kernel, labels that are
        neither numbers nor text, metadata that is not a dict of JSON
        values).
    sklearn.exceptions.NotFittedError
        If the model is not fitted.
    OSError
        If the file cannot be written (its folder does not exist, it is a
        directory, ...); the message names ``path``.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, load, save
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MultiClassSVC(model="cs").fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "iris.msvm")
    ...     save(clf, path, metadata={"data": "iris"})
    ...     model = load(path)
    >>> bool((model.predict(X) == clf.predict(X)).all())
    True
    """
    from sklearn.utils.validation import check_is_fitted

    from msvm import __version__
    from msvm.estimator import MultiClassSVC

    if not isinstance(model, MultiClassSVC):
        raise ModelFileError(f"save() stores a msvm.MultiClassSVC, got {type(model).__name__}.")
    check_is_fitted(model)
    if metadata is not None and not isinstance(metadata, dict):
        # load() reads the metadata as a dict: anything else would make an unreadable file.
        raise ModelFileError(f"metadata must be a dict, got {type(metadata).__name__}.")
    if callable(model.kernel):
        raise ModelFileError(
            "A model with a callable kernel cannot be saved to a model file: the kernel is code, "
            "and model files hold data only. Use a named kernel, or compute the Gram matrices "
            "and use kernel='precomputed' (or pickle the estimator, which stores the callable "
            "by reference).")
    params = model.get_params()
    seed = params["random_state"]
    # A seed is data; a RandomState instance is not (stored as None).
    params["random_state"] = int(seed) if isinstance(seed, Integral) else None
    if isinstance(params["class_weight"], dict):
        # JSON keys are text: a dict of labels is kept as [label, weight] pairs.
        params["class_weight"] = [[label, weight]
                                  for label, weight in params["class_weight"].items()]
    classes, classes_dtype = _classes_array(np.asarray(model.classes_))
    sv = model.support_vectors_
    layout = "none" if model._precomputed else "csr" if sp.issparse(sv) else "dense"
    arrays = {
        "classes": classes,
        "support": np.asarray(model.support_, dtype=np.int64),
        "n_support": np.asarray(model.n_support_, dtype=np.int64),
        "dual_coef": np.asarray(model.dual_coef_, dtype=np.float64),
        "intercept": np.asarray(model.intercept_, dtype=np.float64),
    }
    if layout == "dense":
        arrays["support_vectors"] = np.asarray(sv, dtype=np.float64)
    elif layout == "csr":
        csr = sp.csr_matrix(sv, dtype=np.float64)
        arrays.update(sv_data=csr.data, sv_indices=csr.indices.astype(np.int64),
                      sv_indptr=csr.indptr.astype(np.int64))
    names = getattr(model, "feature_names_in_", None)
    header = _to_json({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "msvm_version": __version__,
        "params": params,
        "n_classes": len(classes),
        "classes_dtype": classes_dtype,
        "sv_layout": layout,
        "n_support": len(model.support_),
        "n_features_in": int(model.n_features_in_),
        "shape_fit": [int(v) for v in model.shape_fit_],
        "gamma": float(model.gamma_),
        "n_iter": int(model.n_iter_),
        "feature_names_in": None if names is None else [str(v) for v in names],
        "solution": model.solution_,
        "metadata": {} if metadata is None else metadata,
        "class_weight": [float(v) for v in getattr(model, "class_weight_",
                                                   np.ones(len(classes)))],
    }, "model")
    text = json.dumps(header, allow_nan=False, sort_keys=True).encode("utf-8")
    arrays["header"] = np.frombuffer(text, dtype=np.uint8)
    path = Path(os.fspath(path))
    if not path.name or path.name == "..":
        raise ModelFileError(f"Cannot write model file {os.fspath(path)!r}: not a file name.")
    buffer = io.BytesIO()
    # cast: numpy's stubs match **arrays against allow_pickle (no member has that name).
    np.savez_compressed(buffer, **cast(dict[str, Any], arrays))
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(buffer.getvalue())
        os.replace(tmp, path)
    except OSError as exc:
        # Name the file asked for, not the temporary one (same OSError subclass, via errno).
        raise OSError(exc.errno, f"Cannot write model file {str(path)!r}: {exc.strerror}") \
            from exc
    finally:
        if tmp.exists():
            tmp.unlink()


# ------------------------------------------------------------------ load
class _Reader:
    """Reads and checks one model file; every problem is a ModelFileError naming the file."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def fail(self, message: str):
        raise ModelFileError(f"Model file {self.path!r}: {message}")

    @contextlib.contextmanager
    def reading(self):
        """Turn the read errors of a damaged archive or member into a ModelFileError."""
        try:
            yield
        except ModelFileError:
            raise
        except (OSError, ValueError, EOFError, KeyError, IndexError, TypeError, OverflowError,
                MemoryError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                RuntimeError) as exc:
            # Truncation, flipped bytes (zip CRC; a member's flags marking it encrypted:
            # zipfile's RuntimeError), damaged .npy headers, pickled objects.
            self.fail(f"is corrupt or not a msvm model file ({type(exc).__name__}: {exc}).")

    @contextlib.contextmanager
    def archive(self):
        """The open archive, its names checked; :meth:`array` reads its members one by one."""
        path = self.path
        if not os.path.exists(path):
            raise ModelFileNotFoundError(f"Model file {path!r} does not exist.")
        if os.path.isdir(path):
            self.fail("is a directory.")
        with open(path, "rb") as fh:
            magic = fh.read(4)
            if magic != b"PK\x03\x04":
                self.fail("is not a msvm model file (not a .npz archive: it starts with "
                          f"{magic!r}, a zip archive with b'PK\\x03\\x04').")
            fh.seek(0)
            # The file object is ours to close: np.load leaves a path it opened open when
            # the zip directory is unreadable.
            with self.reading():
                npz = np.load(fh, allow_pickle=False)
            with npz:
                missing = sorted(set(_COMMON) - set(npz.files))
                if missing:
                    self.fail(f"arrays {missing} are missing (truncated or not a model file).")
                yield npz

    def header(self, npz) -> dict:
        raw = self.array(npz, "header", "u", (None,), max_bytes=_MAX_HEADER,
                         expected="a 1-D uint8 array of JSON text")
        if raw.dtype != np.uint8:
            self.fail("the header is not a 1-D uint8 array of JSON text.")
        try:
            header = json.loads(raw.tobytes().decode("utf-8"), parse_constant=_reject_constant)
        except ValueError as exc:   # also UnicodeDecodeError, JSONDecodeError
            self.fail(f"the header is not JSON ({exc}).")
        except RecursionError:
            self.fail("the header is not JSON (nested too deeply).")
        if not isinstance(header, dict):
            self.fail(f"the header is JSON {type(header).__name__}, not an object.")
        if header.get("format") != FORMAT:
            self.fail(f"the header's format is {header.get('format')!r}, not {FORMAT!r}: not "
                      "a msvm model file.")
        version = header.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            self.fail(f"the format version {version!r} is not a positive integer.")
        if version > FORMAT_VERSION:
            from msvm import __version__

            self.fail(f"it has format version {version} (written by msvm "
                      f"{header.get('msvm_version')!r}); this msvm {__version__} reads "
                      f"format versions up to {FORMAT_VERSION}. Upgrade msvm to load it.")
        try:
            header = _from_json(header)
        except ValueError as exc:
            self.fail(f"header: {exc}.")
        except RecursionError:
            self.fail("the header is nested too deeply.")
        for added_in, added in _ADDED.items():
            if version < added_in:   # an older file: what it lacks gets its default
                for key, default in added["header"].items():
                    if key in header:
                        self.fail(f"header entry {key!r} is not in format version {version}.")
                    header[key] = default
                if isinstance(header.get("params"), dict):
                    for key, default in added["params"].items():
                        if key in header["params"]:
                            self.fail(f"parameter {key!r} is not in format version {version}.")
                        header["params"][key] = default
        missing = sorted(set(_HEADER_KEYS) - set(header))
        extra = sorted(set(header) - set(_HEADER_KEYS))
        if missing or extra:
            self.fail(f"the header has missing keys {missing} / unknown keys {extra}.")
        for key, kind in _HEADER_KEYS.items():
            value = header[key]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = header[key] = float(value)
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
                self.fail(f"header entry {key!r} = {value!r} is not of type "
                          f"{getattr(kind, '__name__', kind)}.")
        return header

    def array(self, npz, name, kinds: str, shape: tuple, *, finite=True, max_bytes=None,
              expected=None) -> np.ndarray:
        """Member ``name`` of the archive, checked for dtype kind, shape and finiteness.

        The dtype and shape (None: any length, within ``max_bytes``) are checked
        on the member's .npy header, before its data is decompressed: a file
        whose arrays are not the header's cannot make the reader allocate
        more than the model the header describes.
        """
        stored = f"{name}.npy" if f"{name}.npy" in npz.zip.namelist() else name
        with self.reading(), npz.zip.open(stored) as member:
            version = np.lib.format.read_magic(member)
            if version not in ((1, 0), (2, 0)):   # np.savez writes 1.0, or 2.0 for huge headers
                self.fail(f"array {name!r} has .npy format version {version}, which save() "
                          "does not write.")
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            found, _, dtype = read_header(member)
        if expected is None:
            expected = _KIND_NAMES[kinds]
        if dtype.kind not in kinds or dtype.hasobject:
            self.fail(f"array {name!r} has dtype {dtype}, expected {expected}.")
        if len(found) != len(shape) or any(s is not None and s != n
                                           for s, n in zip(shape, found, strict=True)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            self.fail(f"array {name!r} has shape {found}, expected {want} from the header.")
        if max_bytes is not None and math.prod(found) * dtype.itemsize > max_bytes:
            self.fail(f"array {name!r} of shape {found} and dtype {dtype} is larger than "
                      f"{max_bytes} bytes, the most such an array takes.")
        with self.reading():
            a = npz[name]
        if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            self.fail(f"array {name!r} contains NaN or infinite values.")
        return a

    def model(self):
        with self.archive() as npz:
            return self.build(npz)

    def build(self, npz):
        """The estimator of the open archive ``npz``, every part checked."""
        from sklearn.utils._param_validation import InvalidParameterError

        from msvm.estimator import MultiClassSVC

        h = self.header(npz)
        layout = h["sv_layout"]
        if layout not in _LAYOUTS:
            self.fail(f"unknown support-vector layout {layout!r} (expected one of "
                      f"{sorted(_LAYOUTS)}).")
        expected = set(_COMMON) | set(_LAYOUTS[layout])
        missing, extra = sorted(expected - set(npz.files)), sorted(set(npz.files) - expected)
        if missing:
            self.fail(f"arrays {missing} are missing (layout {layout!r}).")
        if extra:
            self.fail(f"unexpected arrays {extra} (layout {layout!r}): the file was altered.")

        # Parameters: known names only, validated as fit validates them.
        params, known = dict(h["params"]), MultiClassSVC().get_params()
        unknown, absent = sorted(set(params) - set(known)), sorted(set(known) - set(params))
        if unknown or absent:
            self.fail(f"the parameters have unknown names {unknown} / missing names {absent}.")
        params["class_weight"] = self.class_weight_param(params["class_weight"])
        model = MultiClassSVC(**params)
        try:
            model._check_params()
        except (InvalidParameterError, ValueError, TypeError) as exc:
            self.fail(f"invalid parameter: {exc}")
        if (layout == "none") != model._precomputed:
            self.fail(f"support-vector layout {layout!r} does not fit kernel {model.kernel!r}.")

        Q, n_sv, d = h["n_classes"], h["n_support"], h["n_features_in"]
        shape_fit = h["shape_fit"]
        if Q < 2 or n_sv < 0 or d < 1:
            self.fail(f"n_classes={Q}, n_support={n_sv}, n_features_in={d} are not a model's "
                      "(at least 2 classes and 1 feature).")
        if (len(shape_fit) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                           for v in shape_fit) or shape_fit[1] != d
                or shape_fit[0] < 1):
            self.fail(f"shape_fit {shape_fit!r} is not [n_samples, n_features_in={d}].")
        if Q > shape_fit[0] or n_sv > shape_fit[0]:
            self.fail(f"n_classes={Q} and n_support={n_sv} cannot exceed the {shape_fit[0]} "
                      "training points of shape_fit.")
        if model._precomputed and d != shape_fit[0]:
            self.fail(f"a precomputed kernel has n_features_in = n_samples; got {d} and "
                      f"{shape_fit[0]}.")
        if not (math.isfinite(h["gamma"]) and h["gamma"] >= 0) or h["n_iter"] < 0:
            self.fail(f"gamma_={h['gamma']!r} / n_iter_={h['n_iter']!r} out of range.")
        names = h["feature_names_in"]
        if names is not None and (len(names) != d or not all(isinstance(v, str) for v in names)):
            self.fail(f"feature_names_in is not a list of {d} strings.")

        # Text labels: at most as many bytes as a header (numbers take 8 bytes each).
        classes = self.array(npz, "classes", "biufU", (Q,), max_bytes=max(8 * Q, _MAX_HEADER))
        if len(np.unique(classes)) != Q or not np.array_equal(np.unique(classes), classes):
            self.fail("the classes are not sorted and distinct (as fit's np.unique gives them).")
        if h["classes_dtype"] == "object":
            classes = classes.astype(object)
        elif h["classes_dtype"] != classes.dtype.str:
            self.fail(f"classes have dtype {classes.dtype.str}, the header says "
                      f"{h['classes_dtype']!r}.")
        support = self.array(npz, "support", "i", (n_sv,))
        if n_sv and (support[0] < 0 or support[-1] >= shape_fit[0]
                     or np.any(np.diff(support) <= 0)):
            self.fail(f"support indices are not increasing indices in [0, {shape_fit[0]}).")
        n_support = self.array(npz, "n_support", "i", (Q,))
        if np.any(n_support < 0) or int(n_support.sum()) != n_sv:
            self.fail(f"n_support {n_support.tolist()} does not add up to {n_sv} support vectors.")
        beta = self.array(npz, "dual_coef", "f", (n_sv, Q))
        if n_sv and not np.all(np.any(beta != 0, axis=1)):
            self.fail("dual_coef has a zero row: a support vector has a non-zero row of β.")
        intercept = self.array(npz, "intercept", "f", (Q,))
        if not model.fit_intercept and np.any(intercept != 0):
            self.fail("intercept is not zero but the model has no bias (fit_intercept=False).")

        if layout == "dense":
            sv = self.array(npz, "support_vectors", "f", (n_sv, d))
        elif layout == "csr":
            data = self.array(npz, "sv_data", "f", (None,), max_bytes=8 * n_sv * d)
            indices = self.array(npz, "sv_indices", "i", (len(data),))
            indptr = self.array(npz, "sv_indptr", "i", (n_sv + 1,))
            if (indptr[0] != 0 or indptr[-1] != len(data) or np.any(np.diff(indptr) < 0)
                    or (len(indices) and (indices.min() < 0 or indices.max() >= d))):
                self.fail("the CSR support vectors are inconsistent (indptr not increasing from "
                          f"0 to {len(data)}, or column indices outside [0, {d})).")
            sv = sp.csr_matrix((data, indices, indptr), shape=(n_sv, d))
            sv.sort_indices()
        else:
            sv = np.empty((0, d))

        class_weight = np.ones(Q) if h["class_weight"] is None else h["class_weight"]
        if (len(class_weight) != Q or not all(isinstance(v, (int, float))
                                              and not isinstance(v, bool) for v in class_weight)
                or not all(math.isfinite(v) and v >= 0 for v in class_weight)):
            self.fail(f"class_weight {h['class_weight']!r} is not {Q} finite weights >= 0.")
        solution = h["solution"]
        if not isinstance(solution.get("status"), str) or not isinstance(solution.get("solver"),
                                                                         str):
            self.fail("the certificate (solution) has no status and solver names.")

        model.classes_ = classes
        model.n_features_in_ = d
        if names is not None:
            model.feature_names_in_ = np.asarray(names, dtype=object)
        model.support_ = support.astype(np.intp)
        model.support_vectors_ = sv
        model.n_support_ = n_support.astype(np.int32)
        model.dual_coef_ = np.ascontiguousarray(beta)
        model.intercept_ = intercept
        model.gamma_ = float(h["gamma"])
        model.n_iter_ = int(h["n_iter"])
        model.shape_fit_ = tuple(shape_fit)
        model.solution_ = solution
        model.class_weight_ = np.asarray(class_weight, dtype=np.float64)
        model._set_coef()
        model._stream = model._fit_seed = model._warm_alpha = None
        model._no_continue = ("it was loaded from a model file, which holds the predictor but "
                              "not the solver's dual variables")
        return model, h


    def class_weight_param(self, value):
        """The ``class_weight`` parameter from its header form ([label, weight] pairs)."""
        if not isinstance(value, list):
            return value   # None or a string, checked with the other parameters
        pairs = {}
        for pair in value:
            if (not isinstance(pair, list) or len(pair) != 2
                    or not isinstance(pair[0], (bool, int, float, str))
                    or isinstance(pair[1], bool) or not isinstance(pair[1], (int, float))):
                self.fail(f"class_weight {value!r} is not a list of [label, weight] pairs.")
            pairs[pair[0]] = pair[1]
        return pairs


@overload
def load(path: PathLike, *, return_metadata: Literal[False] = False) -> MultiClassSVC: ...


@overload
def load(path: PathLike, *,
         return_metadata: Literal[True]) -> tuple[MultiClassSVC, dict[str, Any]]: ...


@overload
def load(path: PathLike, *,
         return_metadata: bool) -> MultiClassSVC | tuple[MultiClassSVC, dict[str, Any]]: ...


def load(path: PathLike, *,
         return_metadata: bool = False) -> MultiClassSVC | tuple[MultiClassSVC, dict[str, Any]]:
    """Read a model file written by :func:`save`.

    Nothing in the file is executed (NumPy's reader with ``allow_pickle=False``
    and a JSON header), and everything read is checked (see the module
    docstring).

    Parameters
    ----------
    path : str or path-like
        The model file.
    return_metadata : bool, default=False
        Also return the ``metadata`` dict stored by :func:`save` and the
        msvm version that wrote the file, as ``(model, info)`` with
        ``info = {"metadata": ..., "msvm_version": ..., "format_version": ...}``.

    Returns
    -------
    model : MultiClassSVC
        A fitted estimator: ``predict``, ``decision_function`` and ``score``
        give exactly what the saved model gave.
    info : dict
        Only with ``return_metadata=True`` (then ``(model, info)`` is returned).

    Raises
    ------
    ModelFileNotFoundError
        If the file does not exist.
    ModelFileError
        If it is not a valid model file (corrupt, truncated, altered, or of a
        newer format version); the message names the problem.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, load, save
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MultiClassSVC(model="cs").fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "iris.msvm")
    ...     save(clf, path, metadata={"data": "iris"})
    ...     model, info = load(path, return_metadata=True)
    >>> info["metadata"]
    {'data': 'iris'}
    >>> model.predict(X[:3])
    array([0, 0, 0])
    """
    model, header = _Reader(path).model()
    if return_metadata:
        return model, {"metadata": header["metadata"], "msvm_version": header["msvm_version"],
                       "format_version": header["format_version"]}
    return model
