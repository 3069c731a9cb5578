"""ONNX export: onnxruntime's outputs equal decision_function and predict.

Skipped when onnx or onnxruntime is missing (``pip install 'msvm[onnx]'``; the test
extra installs them).  The graph computes in float64, so the outputs agree with
decision_function to round-off; the tolerance asserted is the issue's 1e-5 relative
(to the largest score), and predictions must be identical.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

import msvm
from msvm import MultiClassSVC
from msvm.kernels import IndefiniteKernelWarning

onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install 'msvm[onnx]')")
ort = pytest.importorskip("onnxruntime",
                          reason="onnxruntime is not installed (pip install 'msvm[onnx]')")

RTOL = 1e-5
KERNELS = {
    "linear": {},
    "poly": dict(degree=3, coef0=1.0, gamma=0.5),
    "rbf": dict(gamma=0.5),
    "laplace": dict(gamma=0.3),
    "sigmoid": dict(gamma=0.05, coef0=-0.5),
}


def _run(onx, X):
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: np.asarray(X, dtype=np.float64)})


def _check(model, onx, X, X_dense=None):
    label, scores = _run(onx, X if X_dense is None else X_dense)
    ref = model.decision_function(X)
    assert scores.shape == ref.shape and scores.dtype == np.float64
    np.testing.assert_allclose(scores, ref, rtol=0, atol=RTOL * np.max(np.abs(ref)))
    np.testing.assert_array_equal(label, model.predict(X))


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndefiniteKernelWarning)   # the sigmoid kernel
        return MultiClassSVC(**kw).fit(X, y)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=120, centers=4, n_features=6, cluster_std=3.0, random_state=0)
    return X / 5, y


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("labels", ["int", "str", "binary_bool", "float"])
def test_every_kernel_and_label_type(blobs, kernel, labels):
    X, y = blobs
    y = {"int": y, "str": np.array(["ant", "bee", "cat", "dog"])[y], "binary_bool": y == 1,
         "float": 2.0 * y}[labels]
    model = _fit(X, y, kernel=kernel, fit_intercept=kernel in ("rbf", "poly"), **KERNELS[kernel])
    _check(model, msvm.to_onnx(model), X)


@pytest.fixture(scope="module")
def usps():
    """700 points of usps's test file (quicker to read than the training file): 400 + 300."""
    from msvm.datasets import DatasetNotFoundError, find_shared_datasets, load_libsvm

    try:
        path = find_shared_datasets() / "usps" / "usps.t.bz2"
    except DatasetNotFoundError:
        path = None
    if path is None or not path.exists():
        pytest.skip("no ../shared/datasets/usps next to this checkout")
    X, y = load_libsvm(path, n_features=256)
    X = X[:700].toarray()
    return X[:400], y[:400], X[400:], y[400:700]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_usps_subset(usps, kernel):
    X, y, Xt, yt = usps
    params = {**KERNELS[kernel], "gamma": {"linear": "scale", "poly": 0.01, "rbf": 0.03,
                                           "laplace": 0.01, "sigmoid": 0.002}[kernel]}
    model = _fit(X, y, kernel=kernel, model="cs", C=10.0, **params)
    _check(model, msvm.to_onnx(model), Xt)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "laplace"])
def test_sparse_training_set(kernel):
    # CSR training data: the support vectors (and a linear coef_) are sparse; the graph
    # stores them dense and takes dense input (X.toarray() at inference).
    rng = np.random.default_rng(0)
    X = sp.random(200, 40, density=0.15, random_state=1, format="csr")
    y = np.asarray(X[:, :3].toarray().argmax(axis=1))
    model = _fit(X, y, kernel=kernel, C=5.0, gamma=0.5, model="llw")
    assert sp.issparse(model.support_vectors_)
    X_test = sp.random(50, 40, density=0.15, random_state=rng.integers(1 << 30), format="csr")
    _check(model, msvm.to_onnx(model), X_test, X_test.toarray())


def test_pipeline_through_skl2onnx(blobs):
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx is not installed")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from msvm.onnx import register_skl2onnx

    assert register_skl2onnx()
    X, y = blobs
    for labels in (y, np.array(["ant", "bee", "cat", "dog"])[y], y == 2):
        pipe = make_pipeline(StandardScaler(), MultiClassSVC(model="ww", C=3.0)).fit(X, labels)
        onx = skl2onnx.to_onnx(pipe, X[:1].astype(np.float64))
        assert [o.name for o in onx.graph.output] == ["label", "scores"]
        _check(pipe, onx, X)


def test_refusals(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="precomputed.*cannot be exported"):
        msvm.to_onnx(MultiClassSVC(kernel="precomputed").fit(X @ X.T, y))
    with pytest.raises(ValueError, match="callable kernel cannot be exported"):
        msvm.to_onnx(MultiClassSVC(kernel=lambda A, B: A @ B.T).fit(X, y))
    with pytest.raises(ValueError, match="target_opset must be an integer from 13 to"):
        msvm.to_onnx(MultiClassSVC().fit(X, y), target_opset=11)
    with pytest.raises(TypeError, match="exports a msvm.MultiClassSVC"):
        msvm.to_onnx(object())


def test_model_metadata(blobs):
    X, y = blobs
    onx = msvm.to_onnx(MultiClassSVC().fit(X, y))
    assert onx.producer_name == "msvm" and onx.producer_version == msvm.__version__
    assert [(i.name, i.type.tensor_type.elem_type) for i in onx.graph.input] == \
        [("X", onnx.TensorProto.DOUBLE)]
    assert onx.graph.input[0].type.tensor_type.shape.dim[1].dim_value == X.shape[1]


def test_unsigned_labels_beyond_int64(blobs):
    # uint64 labels ≥ 2⁶³ were cast to int64 in the graph: onnxruntime returned
    # negative labels that are no class of the model.
    X, y = blobs
    labels = y.astype(np.uint64) + np.uint64(2**63)
    model = _fit(X, labels)
    onx = msvm.to_onnx(model)
    assert onx.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.UINT64
    _check(model, onx, X)
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx is not installed")
    _check(model, skl2onnx.to_onnx(model, X[:1].astype(np.float64)), X)


def test_target_opset_range(blobs):
    # A NumPy integer was refused as "not an integer >= 13"; an opset newer than the
    # installed onnx got onnx's bare "Unsupported opset-version.".
    X, y = blobs
    model = MultiClassSVC().fit(X, y)
    onx = msvm.to_onnx(model, target_opset=np.int64(15))
    assert [(o.domain, o.version) for o in onx.opset_import] == [("", 15)]
    _check(model, onx, X)
    newest = onnx.defs.onnx_opset_version()
    assert msvm.to_onnx(model, target_opset=newest).opset_import[0].version == newest
    for bad in (newest + 1, True, 17.0):
        with pytest.raises(ValueError, match=f"target_opset must be an integer from 13 to "
                                             f"{newest} .*, got {bad!r}"):
            msvm.to_onnx(model, target_opset=bad)


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("n_classes", [2, 4])
def test_empty_batch(blobs, kernel, n_classes):
    # A batch of 0 rows gives empty outputs of the right shapes (the Laplace kernel's
    # Scan made onnxruntime fail: "Invalid dim0_offset of 0. Dimension 0 is 0").
    X, y = blobs
    model = _fit(X, y % n_classes, kernel=kernel, **KERNELS[kernel])
    onx = msvm.to_onnx(model)
    label, scores = _run(onx, np.empty((0, X.shape[1])))
    assert label.shape == (0,)
    assert scores.shape == ((0,) if n_classes == 2 else (0, n_classes))
    _check(model, onx, X[:1])


def test_unchecked_input_is_documented(blobs):
    # The docs say what the graph does with input predict refuses: NaN scores and the
    # first class as label, no error.  If that changes, the docs must change with it.
    X, y = blobs
    model = MultiClassSVC().fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((1, X.shape[1]), np.nan))
    label, scores = _run(msvm.to_onnx(model), np.full((1, X.shape[1]), np.nan))
    assert np.all(np.isnan(scores)) and label[0] == model.classes_[0]
    assert "does not check its input" in msvm.onnx.__doc__


def test_skl2onnx_dataframe_inputs(blobs):
    # skl2onnx makes one input per column of a DataFrame: the converter used only the
    # first, and onnxruntime refused the graph (MatMul: incompatible dimensions).
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx is not installed")
    pd = pytest.importorskip("pandas")
    assert msvm.onnx.register_skl2onnx()
    X, y = blobs
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for kernel in ("linear", "rbf"):
        model = _fit(df, y, kernel=kernel)
        onx = skl2onnx.to_onnx(model, df[:1])
        assert [i.name for i in onx.graph.input] == list(df.columns)
        sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
        label, scores = sess.run(None, {c: df[[c]].to_numpy() for c in df.columns})
        np.testing.assert_array_equal(label, model.predict(df))
        np.testing.assert_allclose(scores, model.decision_function(df), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="have 5 columns in all .*fitted on 6 features"):
        skl2onnx.to_onnx(model, X[:1, :5])
