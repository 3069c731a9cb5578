"""Model files (msvm.save / msvm.load) and pickling: exact round trips, clear refusals.

Three parts: round trips (every layout of the support vectors and of the labels
predicts exactly as the saved model), a table of explicitly corrupted files each
rejected with a message naming the problem, and a bounded hypothesis fuzz of
byte-level damage and of header values (a valid model or a ModelFileError, never
another exception).
"""

from __future__ import annotations

import io
import json
import pickle
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.exceptions import InconsistentVersionWarning
from sklearn.utils.validation import check_is_fitted

import msvm
from msvm import ModelFileError, MsvmVersionWarning, MultiClassSVC
from msvm.io import FORMAT_VERSION, ModelFileNotFoundError


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=60, centers=3, n_features=4, cluster_std=2.0, random_state=1)
    return X, y


@pytest.fixture(scope="module")
def saved(blobs, tmp_path_factory):
    """A valid model file (RBF, bias) and its model, for the corruption table."""
    X, y = blobs
    model = MultiClassSVC(model="cs", C=2.0, gamma=0.3, fit_intercept=True).fit(X, y)
    path = tmp_path_factory.mktemp("saved") / "model.msvm"
    msvm.save(model, path)
    return model, path


def _same_model(a, b, X):
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.predict(X).dtype == b.predict(X).dtype
    assert a.get_params() == b.get_params()
    for name in ("support_", "n_support_", "dual_coef_", "intercept_", "classes_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.gamma_, a.n_iter_, a.shape_fit_, a.n_features_in_) == \
        (b.gamma_, b.n_iter_, b.shape_fit_, b.n_features_in_)


# ------------------------------------------------------------ round trips
@pytest.mark.parametrize("case", ["rbf", "linear_dense", "linear_sparse", "poly_bias",
                                  "precomputed", "str_labels", "object_labels", "float_labels",
                                  "bool_labels", "laplace_sparse", "online"])
def test_round_trip_is_exact(blobs, tmp_path, case):
    X, y = blobs
    Xs = sp.csr_matrix(np.where(np.abs(X) < 2.0, 0.0, X))
    labels = y
    kw, train, test = {}, X, X[:25]
    if case == "linear_dense":
        kw = dict(kernel="linear", model="ww")
    elif case in ("linear_sparse", "laplace_sparse"):
        kw = dict(kernel=case.split("_")[0], model="llw", gamma=0.2)
        train, test = Xs, Xs[:25]
    elif case == "poly_bias":
        kw = dict(kernel="poly", degree=2, coef0=1.0, gamma=0.1, fit_intercept=True, model="ww",
                  solver="cvxpy")
    elif case == "precomputed":
        kw = dict(kernel="precomputed")
        train, test = X @ X.T, X[:25] @ X.T
    elif case == "str_labels":
        labels = np.array(["cat", "dog", "emu"])[y]
    elif case == "object_labels":
        labels = np.array(["cat", "dog", "emu"], dtype=object)[y]
    elif case == "float_labels":
        labels = y * 2.0 - 1.0   # integral floats: a float dtype of classes_
    elif case == "bool_labels":
        labels = y == 1
    elif case == "online":
        kw = dict(solver="online", model="cs", random_state=0)
    model = MultiClassSVC(**kw).fit(train, labels)
    path = tmp_path / "m.model"
    msvm.save(model, path)
    assert path.exists() and not list(tmp_path.glob(".*tmp*"))  # no .npz suffix, no leftovers
    loaded = msvm.load(path)
    assert isinstance(loaded, MultiClassSVC)
    check_is_fitted(loaded)
    _same_model(model, loaded, test)
    assert loaded.classes_.dtype == model.classes_.dtype
    assert loaded.solution_ == model.solution_
    if kw.get("kernel") == "linear":
        # coef_ is recomputed on load by the one code path fit uses: identical.
        assert type(loaded.coef_) is type(model.coef_)
        a, b = (c.toarray() if sp.issparse(c) else c for c in (model.coef_, loaded.coef_))
        np.testing.assert_array_equal(a, b)
    else:
        assert not hasattr(loaded, "coef_")
    assert sp.issparse(loaded.support_vectors_) == sp.issparse(model.support_vectors_)


def test_certificate_with_non_finite_values_and_metadata(saved, tmp_path):
    model, _ = saved
    model = pickle.loads(pickle.dumps(model))
    model.solution_ = {**model.solution_, "relative_gap": float("nan"),
                       "duality_gap": float("inf"), "primal_objective": None}
    path = tmp_path / "m.model"
    msvm.save(model, path, metadata={"source": "test", "zero_based": False})
    loaded, info = msvm.load(path, return_metadata=True)
    assert np.isnan(loaded.solution_["relative_gap"])
    assert loaded.solution_["duality_gap"] == np.inf
    assert loaded.solution_["primal_objective"] is None
    assert info == {"metadata": {"source": "test", "zero_based": False},
                    "msvm_version": msvm.__version__, "format_version": FORMAT_VERSION}
    # The header is standard JSON (no NaN literal) and carries what the docs promise.
    with np.load(path, allow_pickle=False) as npz:
        header = json.loads(npz["header"].tobytes().decode("utf-8"))
    assert header["solution"]["relative_gap"] == {"$float": "nan"}
    assert header["params"]["model"] == "cs" and header["gamma"] == model.gamma_


def test_feature_names_round_trip(blobs, tmp_path):
    X, y = blobs
    model = MultiClassSVC().fit(X, y)
    # What fit sets from a DataFrame's string column names (pandas is not a dependency).
    model.feature_names_in_ = np.array(["a", "b", "c", "d"], dtype=object)
    msvm.save(model, tmp_path / "m.model")
    loaded = msvm.load(tmp_path / "m.model")
    assert loaded.feature_names_in_.dtype == object
    assert list(loaded.feature_names_in_) == ["a", "b", "c", "d"]


def test_loaded_model_refuses_partial_fit_but_refits(blobs, tmp_path):
    X, y = blobs
    model = MultiClassSVC(solver="online", random_state=0).fit(X, y)
    msvm.save(model, tmp_path / "m.model")
    loaded = msvm.load(tmp_path / "m.model")
    with pytest.raises(ValueError, match="loaded from a model file"):
        loaded.partial_fit(X[:10], y[:10])
    loaded.fit(X, y)   # a refit is a fresh model, which partial_fit can continue
    loaded.partial_fit(X[:10], y[:10])
    assert loaded.solution_["n_seen"] == len(y) + 10


def test_what_cannot_be_saved(blobs, tmp_path):
    X, y = blobs
    with pytest.raises(ModelFileError, match="callable kernel cannot be saved"):
        msvm.save(MultiClassSVC(kernel=lambda A, B: A @ B.T).fit(X, y), tmp_path / "m")
    with pytest.raises(ModelFileError, match="stores a msvm.MultiClassSVC"):
        msvm.save(object(), tmp_path / "m")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        msvm.save(MultiClassSVC(), tmp_path / "m")
    model = MultiClassSVC().fit(X, y)
    with pytest.raises(ModelFileError, match=r"metadata\.f"):
        msvm.save(model, tmp_path / "m", metadata={"f": object()})
    assert not (tmp_path / "m").exists()


def test_save_refuses_metadata_that_load_would_refuse(blobs, tmp_path):
    # These were written, and then every load of the file failed.
    model = MultiClassSVC().fit(*blobs)
    with pytest.raises(ModelFileError, match="metadata must be a dict, got list"):
        msvm.save(model, tmp_path / "m", metadata=[1, 2])
    with pytest.raises(ModelFileError, match=r"metadata\.x = \{'\$float': 'big'\}.*NaN and inf"):
        msvm.save(model, tmp_path / "m", metadata={"x": {"$float": "big"}})
    assert not (tmp_path / "m").exists()


def test_unwritable_path_is_named_in_the_error(blobs, tmp_path):
    # The OSError named the temporary file ('.m.model.tmp<pid>'), not the one asked for.
    model = MultiClassSVC().fit(*blobs)
    target = tmp_path / "no_such_folder" / "m.model"
    with pytest.raises(FileNotFoundError, match="Cannot write model file .*no_such_folder/m"):
        msvm.save(model, target)
    (tmp_path / "adir").mkdir()
    with pytest.raises(IsADirectoryError, match="Cannot write model file .*adir'"):
        msvm.save(model, tmp_path / "adir")
    with pytest.raises(ModelFileError, match="not a file name"):
        msvm.save(model, "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]   # no temporary file left


def test_random_state_is_stored_as_data(blobs, tmp_path):
    X, y = blobs
    for seed, stored in [(np.int64(7), 7), (3, 3), (np.random.RandomState(0), None)]:
        model = MultiClassSVC(solver="online", random_state=seed).fit(X, y)
        msvm.save(model, tmp_path / "m.model")
        assert msvm.load(tmp_path / "m.model").random_state == stored


# ------------------------------------------------------------ pickle
def test_pickle_keeps_version_and_drops_warm_start_state(blobs):
    X, y = blobs
    model = MultiClassSVC(warm_start=True).fit(X, y)
    assert model._warm_alpha is not None
    state = model.__getstate__()
    assert state["_msvm_version"] == msvm.__version__
    assert "_warm_alpha" not in state and "_fit_seed" in state
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # same version: no warning
        copy = pickle.loads(pickle.dumps(model))
    assert not hasattr(copy, "_warm_alpha")
    np.testing.assert_array_equal(copy.decision_function(X), model.decision_function(X))
    copy.fit(X, y)   # warm_start after unpickling: starts from zero, same optimum
    np.testing.assert_allclose(copy.decision_function(X), model.decision_function(X),
                               atol=1e-2)


def test_pickle_version_mismatch_warns(blobs):
    X, y = blobs
    state = MultiClassSVC().fit(X, y).__getstate__()
    state["_msvm_version"] = "0.0.1"
    copy = MultiClassSVC.__new__(MultiClassSVC)
    with pytest.warns(InconsistentVersionWarning, match=r"msvm 0\.0\.1 with msvm") as caught:
        copy.__setstate__(state)
    assert caught[0].category is MsvmVersionWarning
    assert copy.predict(X[:3]).shape == (3,)


def test_joblib_round_trip(blobs, tmp_path):
    joblib = pytest.importorskip("joblib")
    X, y = blobs
    model = MultiClassSVC(kernel="linear").fit(X, y)
    joblib.dump(model, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict(X), model.predict(X))


# ------------------------------------------------------------ corrupt files
def _arrays(path) -> dict:
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _header(arrays) -> dict:
    return json.loads(arrays["header"].tobytes().decode("utf-8"))


def _write(path, arrays, header=None, raw_header: bytes | None = None, pickled=False):
    arrays = dict(arrays)
    if header is not None:
        raw_header = json.dumps(header).encode("utf-8")
    if raw_header is not None:
        arrays["header"] = np.frombuffer(raw_header, dtype=np.uint8)
    # The .npz archive np.savez writes, member by member: NumPy 1.26's savez has no
    # allow_pickle argument (it would be saved as an array named 'allow_pickle').
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=pickled)
    path.write_bytes(buffer.getvalue())


def _edit_header(**changes):
    def edit(a, h):
        for key, value in changes.items():
            target = h
            *parents, last = key.split(".")
            for p in parents:
                target = target[p]
            if value is _DELETE:
                del target[last]
            else:
                target[last] = value
        return a, h
    return edit


def _edit_array(name, fn):
    def edit(a, h):
        a = dict(a)
        if fn is _DELETE:
            del a[name]
        else:
            a[name] = fn(a[name].copy())
        return a, _KEEP
    return edit


def _set(index, value):
    def fn(arr):
        arr[index] = value
        return arr
    return fn


_DELETE = object()
_KEEP = object()   # write the arrays as edited, header array included


def _bytes_case(fn):
    """A case that rewrites the file's bytes: fn(bytes) -> bytes."""
    return ("bytes", fn)


def _flip(position):
    def fn(data):
        data = bytearray(data)
        index = position if position >= 0 else len(data) + position
        data[index] ^= 0xFF
        return bytes(data)
    return fn


CORRUPT = [
    # -- the archive itself
    ("empty", _bytes_case(lambda b: b""), "not a .npz archive"),
    ("text", _bytes_case(lambda b: b"1 1:0.5 2:0.25\n"), "not a .npz archive"),
    ("pickle", _bytes_case(lambda b: pickle.dumps({"a": 1})), "not a .npz archive"),
    ("npy_not_npz", _bytes_case(lambda b: _npy_bytes()), "not a .npz archive"),
    ("truncated_half", _bytes_case(lambda b: b[: len(b) // 2]), "corrupt"),
    ("truncated_tail", _bytes_case(lambda b: b[:-30]), "corrupt"),
    ("truncated_to_magic", _bytes_case(lambda b: b[:10]), "corrupt"),
    ("flipped_data_byte", _bytes_case(_flip(200)), "corrupt"),
    ("flipped_end_of_directory", _bytes_case(_flip(-22)), "corrupt"),
    ("zip_of_other_files", _bytes_case(lambda b: _zip_bytes({"readme.txt": b"hi"})),
     r"arrays \[.*'dual_coef'.*\] are missing"),
    # -- the arrays
    ("no_dual_coef", _edit_array("dual_coef", _DELETE), r"arrays \['dual_coef'\] are missing"),
    ("no_header", _edit_array("header", _DELETE), r"arrays \['header'\] are missing"),
    ("extra_array", lambda a, h: ({**a, "payload": np.zeros(3)}, h),
     r"unexpected arrays \['payload'\]"),
    ("object_array", "object", "'classes' has dtype object, expected numbers or text"),
    ("nan_in_beta", _edit_array("dual_coef", _set((0, 1), np.nan)),
     "'dual_coef' contains NaN or infinite"),
    ("inf_in_intercept", _edit_array("intercept", _set(0, np.inf)),
     "'intercept' contains NaN or infinite"),
    ("beta_wrong_shape", _edit_array("dual_coef", lambda b: b[:, :2]),
     r"'dual_coef' has shape \(\d+, 2\), expected \(\d+, 3\)"),
    ("beta_int_dtype", _edit_array("dual_coef", lambda b: b.astype(np.int64)),
     "'dual_coef' has dtype int64, expected float64"),
    ("beta_zero_row", _edit_array("dual_coef", _set(0, 0.0)), "zero row"),
    ("sv_wrong_width", _edit_array("support_vectors", lambda s: s[:, :3]),
     r"'support_vectors' has shape"),
    ("sv_nan", _edit_array("support_vectors", _set((1, 1), np.nan)),
     "'support_vectors' contains NaN"),
    ("support_out_of_range", _edit_array("support", _set(-1, 10**6)),
     "support indices are not increasing"),
    ("support_not_increasing", _edit_array("support", lambda s: s[::-1].copy()),
     "support indices are not increasing"),
    ("n_support_sum", _edit_array("n_support", _set(0, 10**4)), "does not add up"),
    ("classes_unsorted", _edit_array("classes", lambda c: c[::-1].copy()),
     "not sorted and distinct"),
    ("classes_duplicated", _edit_array("classes", _set(1, 0)), "not sorted and distinct"),
    ("classes_object_text", _edit_array("classes", lambda c: c.astype("<U3")),
     "header says '<i8'"),
    ("intercept_without_bias", _edit_header(**{"params.fit_intercept": False}),
     "intercept is not zero"),
    # -- the header
    ("header_not_json", lambda a, h: (a, None), "header is not JSON"),
    ("header_not_utf8", lambda a, h: (a, b"\xff\xfe{}"), "header is not JSON"),
    ("header_json_list", lambda a, h: (a, [1, 2]), "not an object"),
    ("header_nan_literal", lambda a, h: (a, json.dumps({**h, "gamma": float("nan")})
                                         .encode()), "not standard JSON"),
    ("header_float_array", _edit_array("header", lambda r: r.astype(np.float64)),
     "'header' has dtype float64, expected a 1-D uint8 array"),
    ("wrong_format", _edit_header(format="other-model"), "not a msvm model file"),
    ("future_version", _edit_header(format_version=FORMAT_VERSION + 1, msvm_version="9.0"),
     rf"format version {FORMAT_VERSION + 1} \(written by msvm '9.0'\); this msvm .* reads "
     rf"format versions up to {FORMAT_VERSION}"),
    ("version_zero", _edit_header(format_version=0), "not a positive integer"),
    ("version_text", _edit_header(format_version="1"), "not a positive integer"),
    ("missing_key", _edit_header(gamma=_DELETE), r"missing keys \['gamma'\]"),
    ("unknown_key", _edit_header(secret=1), r"unknown keys \['secret'\]"),
    ("wrong_type", _edit_header(n_classes="3"), "'n_classes' = '3' is not of type int"),
    ("wrong_class_count", _edit_header(n_classes=4), r"'classes' has shape \(3,\), expected \(4\)"),
    ("unknown_kernel", _edit_header(**{"params.kernel": "magic"}),
     "invalid parameter: The 'kernel' parameter"),
    ("unknown_model", _edit_header(**{"params.model": "svm"}),
     "invalid parameter: The 'model' parameter"),
    ("negative_C", _edit_header(**{"params.C": -1.0}), "invalid parameter: The 'C' parameter"),
    ("unknown_param", _edit_header(**{"params.nu": 0.5}), r"unknown names \['nu'\]"),
    ("missing_param", _edit_header(**{"params.degree": _DELETE}), r"missing names \['degree'\]"),
    ("bad_special_float", _edit_header(**{"solution.dual_objective": {"$float": "big"}}),
     "is not a float"),
    ("unknown_layout", _edit_header(sv_layout="coo"), "unknown support-vector layout 'coo'"),
    ("layout_csr_without_arrays", _edit_header(sv_layout="csr"),
     r"arrays \['sv_data', 'sv_indices', 'sv_indptr'\] are missing"),
    ("layout_none_for_rbf", lambda a, h: ({k: v for k, v in a.items() if k != "support_vectors"},
                                          {**h, "sv_layout": "none"}),
     "layout 'none' does not fit kernel 'rbf'"),
    ("shape_fit_inconsistent", _edit_header(shape_fit=[60, 5]), "is not \\[n_samples"),
    ("negative_gamma", _edit_header(gamma=-1.0), "gamma_=-1.0"),
    ("feature_names_length", _edit_header(feature_names_in=["a"]),
     "feature_names_in is not a list of 4 strings"),
    ("no_status", _edit_header(**{"solution.status": None}), "no status and solver"),
    ("more_support_than_points", _edit_header(n_support=10**6),
     r"n_support=1000000 cannot exceed the \d+ training points"),
]


def _npy_bytes():
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    return buffer.getvalue()


def _zip_bytes(files: dict):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _npy_header(shape) -> bytes:
    """The .npy header of a float64 array of ``shape``, without its data."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.mark.parametrize("member,contents,message", [
    # 2.4e13 bytes declared: reading it would be a MemoryError or fill the memory.
    ("dual_coef", _npy_header((10**12, 3)) + bytes(24),
     r"'dual_coef' has shape \(1000000000000, 3\), expected \(\d+, 3\)"),
    ("intercept", b"raw bytes, not a .npy array", "corrupt or not a msvm model file"),
    ("header", _npy_header((1 << 25,)).replace(b"<f8", b"|u1") + bytes(8),
     "larger than 16777216 bytes"),
])
def test_member_is_checked_before_its_data_is_read(saved, tmp_path, member, contents, message):
    """A member's .npy header is checked against the model's header before its data is read."""
    _, good = saved
    with zipfile.ZipFile(good) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    files[f"{member}.npy"] = contents
    path = tmp_path / "bad.model"
    path.write_bytes(_zip_bytes(files))
    with pytest.raises(ModelFileError, match=message):
        msvm.load(path)


def test_corruption_table_is_large():
    assert len(CORRUPT) >= 30
    assert len({name for name, _, _ in CORRUPT}) == len(CORRUPT)


@pytest.mark.parametrize("name,mutation,message", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_file_is_rejected_clearly(saved, tmp_path, name, mutation, message):
    _, good = saved
    path = tmp_path / "bad.model"
    if isinstance(mutation, tuple):
        path.write_bytes(mutation[1](good.read_bytes()))
    elif mutation == "object":
        arrays = _arrays(good)
        arrays["classes"] = np.array([0, "1", None], dtype=object)
        _write(path, arrays, pickled=True)
    else:
        arrays = _arrays(good)
        arrays, header = mutation(arrays, _header(arrays))
        if header is _KEEP:
            _write(path, arrays)
        elif header is None:
            _write(path, arrays, raw_header=b"{not json")
        elif isinstance(header, bytes):
            _write(path, arrays, raw_header=header)
        else:
            _write(path, arrays, header=header)
    with pytest.raises(ModelFileError, match=message) as info:
        msvm.load(path)
    assert str(path) in str(info.value)   # names the file
    del info
    with warnings.catch_warnings(record=True) as caught:   # and leaves it closed
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(ModelFileError):
            msvm.load(path)
    assert not [w.message for w in caught if issubclass(w.category, ResourceWarning)]


def test_missing_and_directory(tmp_path):
    with pytest.raises(ModelFileNotFoundError, match="does not exist") as info:
        msvm.load(tmp_path / "none.model")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    with pytest.raises(ModelFileError, match="is a directory"):
        msvm.load(tmp_path)


def test_loading_never_unpickles(saved, tmp_path, monkeypatch):
    _, good = saved

    def refuse(*args, **kwargs):
        raise AssertionError("pickle was called")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    msvm.load(good)
    arrays = _arrays(good)
    arrays["classes"] = np.array([0, 1, 2], dtype=object)
    _write(tmp_path / "obj.model", arrays, pickled=True)
    with pytest.raises(ModelFileError, match="'classes' has dtype object"):
        msvm.load(tmp_path / "obj.model")


# ------------------------------------------------------------ fuzz
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_EDIT = st.tuples(st.sampled_from(["flip", "truncate", "insert", "zero"]),
                  st.floats(0.0, 1.0, allow_nan=False), st.integers(1, 255))


def _containers(children):
    return st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children,
                                                            max_size=3)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                     | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
                     _containers, max_leaves=6)
_FIELDS = ["format_version", "n_classes", "n_support", "n_features_in", "shape_fit", "gamma",
           "n_iter", "sv_layout", "classes_dtype", "feature_names_in", "solution", "params",
           "params.C", "params.kernel", "params.degree", "params.fit_intercept",
           "params.max_iter", "solution.status"]


def _outcome(path, X):
    """A valid model or a ModelFileError; a loaded model must predict finite scores."""
    try:
        model = msvm.load(path)
    except ModelFileError as exc:
        assert "Model file" in str(exc)
        return None
    assert np.all(np.isfinite(model.decision_function(X)))
    return model


def test_a_member_marked_encrypted_is_a_corrupt_file(saved, tmp_path):
    """A flipped bit can mark an archive member as encrypted (bit 0 of its flags in
    the zip's central directory); zipfile then raises RuntimeError, which the
    loader must report as a corrupt file (hypothesis found this one)."""
    _, good = saved
    data = bytearray(good.read_bytes())
    entry = data.index(b"PK\x01\x02")   # the first member's central directory entry
    data[entry + 8] |= 0x01
    path = tmp_path / "encrypted.msvm"
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="corrupt.*encrypted"):
        msvm.load(path)


@hypothesis.settings(max_examples=150, deadline=None, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(edits=st.lists(_EDIT, min_size=1, max_size=3))
def test_fuzz_bytes(saved, blobs, tmp_path_factory, edits):
    _, good = saved
    data = bytearray(good.read_bytes())
    for kind, where, value in edits:
        i = int(where * (len(data) - 1))
        if kind == "flip":
            data[i] ^= value
        elif kind == "truncate":
            del data[i:]
        elif kind == "insert":
            data[i:i] = bytes([value]) * value
        else:
            data[i:i + value] = bytes(len(data[i:i + value]))
        if not data:
            break
    path = tmp_path_factory.mktemp("fuzz") / "m.model"
    path.write_bytes(bytes(data))
    _outcome(path, blobs[0][:5])


@hypothesis.settings(max_examples=150, deadline=None, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(field=st.sampled_from(_FIELDS), value=_JSON)
def test_fuzz_header_values(saved, blobs, tmp_path_factory, field, value):
    _, good = saved
    arrays = _arrays(good)
    header = _header(arrays)
    target = header
    *parents, last = field.split(".")
    for p in parents:
        target = target[p]
    target[last] = value
    path = tmp_path_factory.mktemp("fuzz") / "m.model"
    _write(path, arrays, header=header)
    # Any accepted value gives a model that predicts (a well-formed but different value,
    # say another gamma, is a different model: only the zip CRCs catch accidental damage).
    _outcome(path, blobs[0][:5])
