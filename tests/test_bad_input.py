"""Every bad input gets an error of the right type whose message names the problem."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.fixes import parse_version

import msvm.solvers
from msvm import MultiClassSVC, RadiusMarginSearch, enclosing_ball
from msvm.datasets import DatasetNotFoundError, load_libsvm, shared_dataset
from msvm.kernels import IndefiniteKernelWarning


@pytest.fixture(scope="module")
def data():
    X, y = make_blobs(n_samples=30, centers=3, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return MultiClassSVC().fit(X, y)


# ------------------------------------------------------------ the table
# Each case: a call that must fail, the exception type, and a regex of the message
# naming the problem.  ``d`` is the (X, y) fixture, ``t`` a temporary folder.

def _with(X, i, j, value):
    X = X.copy()
    X[i, j] = value
    return X


def _file(t, name, content: bytes):
    path = t / name
    path.write_bytes(content)
    return path


class CLIError(Exception):
    """A command line that exited with a non-zero status; the message is its stderr."""


def _cli(argv):
    import contextlib
    import io

    from msvm.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv])
    if code != 0:
        raise CLIError(f"exit {code}: {err.getvalue()}")


def _asym(d):
    K = rbf_kernel(d[0])
    K[0, 1] += 0.5
    return K


def _indefinite(d):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((len(d[1]), len(d[1])))
    return A + A.T


def _fresh_stream(d, **kw):
    est = MultiClassSVC(**kw)
    est.partial_fit(d[0][:10], d[1][:10], classes=[0, 1, 2])
    return est


def _wine(t):
    """A small LIBSVM file (scikit-learn's wine), written for the command line."""
    from sklearn.datasets import dump_svmlight_file, load_wine

    path = t / "wine.svm"
    dump_svmlight_file(*load_wine(return_X_y=True), str(path), zero_based=False)
    return path


E = MultiClassSVC
CASES = [
    # -- data given to fit / predict
    ("nan_X", lambda d, t: E().fit(_with(d[0], 3, 1, np.nan), d[1]), ValueError,
     "Input X contains NaN"),
    ("inf_X", lambda d, t: E().fit(_with(d[0], 0, 0, np.inf), d[1]), ValueError,
     "Input X contains infinity"),
    ("nan_X_predict", lambda d, t: E().fit(*d).predict(_with(d[0][:5], 1, 0, np.nan)),
     ValueError, "Input X contains NaN"),
    ("nan_y", lambda d, t: E().fit(d[0], np.where(np.arange(30) == 2, np.nan, d[1])),
     ValueError, "Input y contains NaN"),
    ("one_class", lambda d, t: E().fit(d[0], np.zeros(30)), ValueError,
     r"greater than one; got 1 class"),
    ("mixed_label_types", lambda d, t: E().fit(d[0], np.array(["a"] * 10 + [1] * 20, dtype=object)),
     TypeError, r"y mixes labels of types that cannot be sorted together \(int, str\)"),
    # (bytes labels, of one type, were said to "mix labels of types that cannot be sorted";
    # scikit-learn refuses them from 1.7 on: see test_bytes_labels_before_scikit_learn_1_7)
    ("bytes_labels", lambda d, t: E().fit(d[0], np.array([b"a", b"b", b"c"])[d[1]]), TypeError,
     "labels represented as bytes is not supported"),
    ("bytes_classes", lambda d, t: E().partial_fit(d[0], d[1], classes=[b"a", b"b"]), TypeError,
     "labels represented as bytes is not supported"),
    ("one_class_of_positive_weight", lambda d, t: E().fit(
        d[0], d[1], sample_weight=(d[1] == 0).astype(float)), ValueError,
     "Every example of positive weight .* is of class 0"),
    ("one_class_of_positive_class_weight", lambda d, t: E(class_weight={0: 0, 2: 0.0}).fit(*d),
     ValueError, "Every example of positive weight .* is of class 1"),
    ("continuous_y", lambda d, t: E().fit(d[0], np.linspace(0, 1, 30)), ValueError,
     "Unknown label type: continuous"),
    ("empty_X", lambda d, t: E().fit(np.empty((0, 2)), np.empty(0)), ValueError,
     r"0 sample\(s\)"),
    ("1d_X", lambda d, t: E().fit(d[0][:, 0], d[1]), ValueError, "Expected 2D array"),
    ("mismatched_lengths", lambda d, t: E().fit(d[0], d[1][:-1]), ValueError,
     r"inconsistent numbers of samples: \[30, 29\]"),
    ("features_at_predict", lambda d, t: E().fit(*d).predict(np.hstack([d[0], d[0][:, :1]])),
     ValueError, "X has 3 features, but MultiClassSVC is expecting 2"),
    ("predict_before_fit", lambda d, t: E().predict(d[0]), NotFittedError, "not fitted yet"),
    ("overflow_linear", lambda d, t: E(kernel="linear").fit(d[0] * 1e200, d[1]), ValueError,
     "linear kernel overflows float64"),
    ("overflow_poly", lambda d, t: E(kernel="poly", degree=80, gamma=1e3).fit(*d), ValueError,
     "poly kernel overflows float64"),
    ("overflow_variance", lambda d, t: E().fit(d[0] * 1e200, d[1]), ValueError,
     "variance of X, which overflows"),
    ("overflow_rbf", lambda d, t: E(gamma=1.0).fit(d[0] * 1e300, d[1]), ValueError,
     "rbf kernel overflows float64"),
    ("overflow_rbf_predict", lambda d, t: E().fit(*d).predict(d[0] * 1e307), ValueError,
     "scores of some rows of X are not finite"),
    ("underflow_variance", lambda d, t: E().fit(d[0] * 1e-160, d[1]), ValueError,
     r"Var\(X\) = .* so small that gamma overflows"),
    # -- precomputed and callable kernels
    ("precomputed_not_square", lambda d, t: E(kernel="precomputed").fit(
        rbf_kernel(d[0], d[0][:20]), d[1]), ValueError, "square .*Gram matrix.*30x20"),
    ("precomputed_asymmetric", lambda d, t: E(kernel="precomputed").fit(_asym(d), d[1]),
     ValueError, "matrix is not symmetric: max\\|K - K.T\\| = 0.5"),
    ("precomputed_nan", lambda d, t: E(kernel="precomputed").fit(
        _with(rbf_kernel(d[0]), 1, 1, np.nan), d[1]), ValueError, "Input X contains NaN"),
    ("precomputed_indefinite_reference", lambda d, t: E(
        kernel="precomputed", solver="cvxpy").fit(_indefinite(d), d[1]), ValueError,
     "need a positive semidefinite kernel"),
    ("precomputed_predict_shape", lambda d, t: E(kernel="precomputed").fit(
        rbf_kernel(d[0]), d[1]).predict(rbf_kernel(d[0][:5], d[0][:10])), ValueError,
     r"\(n_samples, n_train=30\)"),
    ("callable_wrong_shape", lambda d, t: E(kernel=lambda A, B: A @ A.T[:, :5]).fit(*d),
     ValueError, r"kernel callable must return the \(30, 30\)"),
    ("callable_linear_solver", lambda d, t: E(kernel=lambda A, B: A @ B.T, solver="linear").fit(
        *d), ValueError, "Solver 'linear' needs kernel='linear' .*; got a callable kernel"),
    ("callable_nan", lambda d, t: E(kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(
        *d), ValueError, "kernel callable returned NaN"),
    # (enclosing_ball cast complex points to float64, dropping the imaginary part with a
    # ComplexWarning only)
    ("ball_complex_points", lambda d, t: enclosing_ball(d[0] + 1j), ValueError,
     "Complex data not supported"),
    # (a bool passed as a number: the checks of C, gamma and tol refused it, these took
    # True as 1)
    ("ball_tol_bool", lambda d, t: enclosing_ball(d[0], tol=True), ValueError,
     "tol must be a number >= 0, got True"),
    ("search_ball_tol_bool", lambda d, t: RadiusMarginSearch(
        param_grid={"C": [1.0]}, ball_tol=True).fit(*d),
     ValueError, "ball_tol must be a number >= 0, got True"),
    ("class_weight_bool", lambda d, t: E(class_weight={0: True}).fit(*d), ValueError,
     r"class_weight\[0\] must be a finite number >= 0, got True"),
    # -- hyper-parameters (scikit-learn's InvalidParameterError is a ValueError)
    ("C_zero", lambda d, t: E(C=0).fit(*d), ValueError, "'C' parameter .* range \\(0.0, inf\\)"),
    ("C_negative", lambda d, t: E(C=-1.0).fit(*d), ValueError, "'C' parameter .* Got -1.0"),
    ("C_string", lambda d, t: E(C="1").fit(*d), ValueError, "'C' parameter .* Got '1'"),
    ("C_inf", lambda d, t: E(C=np.inf).fit(*d), ValueError, "'C' parameter .* Got inf"),
    ("C_none", lambda d, t: E(C=None).fit(*d), ValueError, "'C' parameter .* Got None"),
    ("tol_negative", lambda d, t: E(tol=-1e-3).fit(*d), ValueError,
     "'tol' parameter .* Got -0.001"),
    ("unknown_kernel", lambda d, t: E(kernel="gauss").fit(*d), ValueError,
     "'kernel' parameter .* Got 'gauss'"),
    ("unknown_model", lambda d, t: E(model="ovr").fit(*d), ValueError,
     "'model' parameter .*'cs'.* Got 'ovr'"),
    ("unknown_solver", lambda d, t: E(solver="smo").fit(*d), ValueError,
     "'solver' parameter .* Got 'smo'"),
    ("s2do_with_bias", lambda d, t: E(solver="s2do", fit_intercept=True).fit(*d), ValueError,
     "Solver 's2do' cannot handle a bias"),
    ("online_with_bias", lambda d, t: E(solver="online", fit_intercept=True).fit(*d),
     ValueError, "Solver 'online' cannot handle a bias"),
    ("degree_fraction", lambda d, t: E(kernel="poly", degree=2.5).fit(*d), ValueError,
     "'degree' parameter .* int in the range \\[0, inf\\). Got 2.5"),
    ("degree_negative", lambda d, t: E(kernel="poly", degree=-1).fit(*d), ValueError,
     "'degree' parameter .* Got -1"),
    ("gamma_negative", lambda d, t: E(gamma=-1.0).fit(*d), ValueError,
     "'gamma' parameter .* Got -1.0"),
    ("gamma_string", lambda d, t: E(gamma="big").fit(*d), ValueError,
     "'gamma' parameter .* Got 'big'"),
    ("cache_size_zero", lambda d, t: E(cache_size=0).fit(*d), ValueError,
     "'cache_size' parameter .* Got 0"),
    ("cache_size_absurd", lambda d, t: E(cache_size=1e12).fit(*d), ValueError,
     "'cache_size' parameter .* range \\(0.0, 1048576.0\\]"),
    ("max_iter_zero", lambda d, t: E(max_iter=0).fit(*d), ValueError,
     "'max_iter' parameter .* Got 0"),
    ("max_iter_fraction", lambda d, t: E(max_iter=1.5).fit(*d), ValueError,
     "'max_iter' parameter .* Got 1.5"),
    ("verbose_string", lambda d, t: E(verbose="yes").fit(*d), ValueError,
     "'verbose' parameter .* Got 'yes'"),
    ("fit_intercept_string", lambda d, t: E(fit_intercept="yes").fit(*d), ValueError,
     "'fit_intercept' parameter .* Got 'yes'"),
    ("n_jobs_zero", lambda d, t: E(n_jobs=0).fit(*d), ValueError, "n_jobs == 0 has no meaning"),
    ("epochs_with_s2do", lambda d, t: E(solver="s2do", epochs=3).fit(*d), ValueError,
     "Solver 's2do' does not use epochs=3"),
    # -- partial_fit
    ("partial_fit_no_classes", lambda d, t: E().partial_fit(*d), ValueError,
     "classes must be passed on the first call"),
    ("partial_fit_unseen_label", lambda d, t: _fresh_stream(d).partial_fit(d[0], d[1] + 5),
     ValueError, r"y contains labels not in classes: \[5, 6, 7\]"),
    ("partial_fit_bias", lambda d, t: E(fit_intercept=True).partial_fit(*d, classes=[0, 1, 2]),
     AttributeError, "partial_fit needs fit_intercept=False"),
    ("partial_fit_s2do", lambda d, t: E(solver="s2do").partial_fit(*d, classes=[0, 1, 2]),
     AttributeError, "solver='s2do' has no streaming mode"),
    ("partial_fit_mixed_label_types", lambda d, t: E().partial_fit(
        d[0], d[1], classes=np.array([0, 1, 2, "x"], dtype=object)), TypeError,
     r"classes mixes labels of types that cannot be sorted together \(int, str\)"),
    ("partial_fit_features", lambda d, t: _fresh_stream(d).partial_fit(d[0][:, :1], d[1]),
     ValueError, "X has 1 features, but MultiClassSVC is expecting 2"),
    # -- LIBSVM files
    ("libsvm_empty", lambda d, t: load_libsvm(_file(t, "e.svm", b"")), ValueError,
     "contains no samples"),
    ("libsvm_bad_value", lambda d, t: load_libsvm(_file(t, "b.svm", b"1 1:0.5\n2 1:oops\n")),
     ValueError, "line 2: '1:oops' is not an integer index and a number"),
    ("libsvm_zero_index", lambda d, t: load_libsvm(_file(t, "z.svm", b"1 0:0.5\n2 1:1\n"),
                                                    zero_based=False), ValueError,
     "Invalid index 0"),
    ("libsvm_negative_index", lambda d, t: load_libsvm(_file(t, "n.svm", b"1 -3:0.5\n")),
     ValueError, "line 1: the feature index -3 is negative"),
    ("libsvm_label", lambda d, t: load_libsvm(_file(t, "l.svm", b"1 1:1\ncat 1:2\n")),
     ValueError, "line 2: the label 'cat' is not a number"),
    ("libsvm_nan_value", lambda d, t: load_libsvm(_file(t, "v.svm", b"1 1:1\n2 1:nan\n")),
     ValueError, "line 2: the value of feature 1 is not finite"),
    ("libsvm_binary", lambda d, t: load_libsvm(_file(t, "g.svm", bytes(range(256)) * 4)),
     ValueError, "Cannot read LIBSVM file '.*g.svm'"),
    ("libsvm_bad_bz2", lambda d, t: load_libsvm(_file(t, "c.svm.bz2", b"BZh9 not bzip2")),
     ValueError, r"Cannot read LIBSVM file '.*c\.svm\.bz2'"),
    ("libsvm_missing", lambda d, t: load_libsvm(t / "absent.svm"), FileNotFoundError,
     r"LIBSVM file '.*absent\.svm' does not exist"),
    ("libsvm_directory", lambda d, t: load_libsvm(t), ValueError, "it is a directory"),
    # -- the command line (exit status 2 and a one-line message)
    ("cli_missing_file", lambda d, t: _cli(["fit", t / "nope.svm"]), CLIError,
     "exit 2: .*does not exist"),
    ("cli_bad_C", lambda d, t: _cli(["fit", _wine(t), "--C", "-1"]), CLIError,
     "exit 2: .*'C' parameter"),
    ("cli_degree_fraction", lambda d, t: _cli(["fit", _wine(t), "--degree", "2.5"]), CLIError,
     "exit 2: .*--degree: invalid int value: '2.5'"),
    ("cli_json_folder", lambda d, t: _cli(["fit", _wine(t), "--json", t / "no" / "x.json"]),
     CLIError, "exit 2: .*folder .* does not exist"),
    ("cli_unknown_solver", lambda d, t: _cli(["fit", _wine(t), "--solver", "smo"]), CLIError,
     "exit 2: .*invalid choice: 'smo'"),
]


#: scikit-learn 1.5 and 1.6 accept bytes labels with a FutureWarning; 1.7 refuses them.
BYTES_LABELS_REFUSED = parse_version(sklearn.__version__).release[:2] >= (1, 7)
_NEEDS_BYTES_REFUSED = pytest.mark.skipif(
    not BYTES_LABELS_REFUSED, reason="scikit-learn < 1.7 accepts bytes labels (FutureWarning)")


@pytest.mark.parametrize("call, error, message", [
    pytest.param(*c[1:], id=c[0], marks=[_NEEDS_BYTES_REFUSED] if c[0].startswith("bytes") else [])
    for c in CASES])
def test_bad_input(data, tmp_path, call, error, message):
    with pytest.raises(error, match=message):
        call(data, tmp_path)


@pytest.mark.skipif(BYTES_LABELS_REFUSED, reason="scikit-learn >= 1.7 refuses bytes labels")
def test_bytes_labels_before_scikit_learn_1_7(data):
    """Where scikit-learn still accepts bytes labels, msvm passes on its deprecation
    warning and fits them like any other labels of one type (no "mix" error)."""
    X, y = data
    labels = np.array([b"a", b"b", b"c"])
    with pytest.warns(FutureWarning, match="labels represented as bytes is deprecated"):
        fitted = E().fit(X, labels[y])
    np.testing.assert_array_equal(fitted.classes_, labels)
    np.testing.assert_array_equal(fitted.predict(X), labels[E().fit(X, y).predict(X)])


def test_table_size():
    assert len(CASES) >= 40


def test_indefinite_kernel_warns(data):
    X, y = data
    with pytest.warns(IndefiniteKernelWarning, match=r"not positive semidefinite \(smallest "
                                                     r"eigenvalue -"):
        MultiClassSVC(kernel="precomputed").fit(_indefinite(data), y)
    with pytest.warns(IndefiniteKernelWarning, match="sigmoid kernel's Gram"):
        MultiClassSVC(kernel="sigmoid", gamma=1.0, coef0=-1.0).fit(X, y)


@pytest.mark.parametrize("degree", [2, 3])
def test_polynomial_kernel_with_negative_coef0_is_checked_for_definiteness(degree):
    """(γ⟨x, x'⟩ + coef0)^d with coef0 < 0 is not PSD in general: on 45 Gaussian points
    its Gram matrix has eigenvalues near −100, yet the fit said 'optimal' (gap 0, a KKT
    point of a non-concave dual) without the IndefiniteKernelWarning that a sigmoid or
    precomputed kernel gets, while the reference solvers refused the same problem."""
    X = np.random.RandomState(3).normal(size=(45, 3))
    y = np.arange(45) % 3
    params = dict(kernel="poly", degree=degree, gamma=1.0)
    with pytest.warns(IndefiniteKernelWarning, match="poly kernel's Gram matrix is not"):
        K = MultiClassSVC(**params, coef0=-1.0).prepare_fit(X, y).problem.kernel.gram()
    assert np.linalg.eigvalsh(K)[0] < -1.0   # the case at hand
    with pytest.warns(IndefiniteKernelWarning, match="poly kernel's Gram matrix is not"):
        MultiClassSVC(**params, coef0=-1.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndefiniteKernelWarning)
        MultiClassSVC(**params, coef0=1.0).fit(X, y)   # a PSD kernel: no warning


# ------------------------------------------------------ solver resolution
@pytest.fixture
def fake_solvers(monkeypatch):
    """Register two solvers that each support only one of bias / no bias."""
    for name, bias, no_bias in [("biasonly", True, False), ("nobias", False, True)]:
        module = types.ModuleType(f"_msvm_fake_{name}")
        module.SUPPORTS_BIAS = bias
        module.SUPPORTS_NO_BIAS = no_bias
        module.OPTIONS = frozenset({"tol", "max_iter"})
        module.STOPPING_RULE = "kkt_violation"

        def solve(problem, **kwargs):  # pragma: no cover - must never be reached
            raise AssertionError("resolve_solver should have refused this problem")

        module.solve = solve
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(msvm.solvers.SOLVERS, name, module.__name__)


def _problem(data, fit_intercept):
    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem

    X, y = data
    return DualProblem(make_machine("ww", 3), y, Kernel(X, "rbf"), 1.0, fit_intercept)


def test_solver_without_bias_support(data, fake_solvers):
    with pytest.raises(ValueError, match="Solver 'nobias' cannot handle a bias"):
        msvm.solvers.resolve_solver("nobias", _problem(data, True))


def test_solver_that_needs_a_bias(data, fake_solvers):
    with pytest.raises(ValueError, match="Solver 'biasonly' needs a bias"):
        msvm.solvers.resolve_solver("biasonly", _problem(data, False))


def test_s2do_refuses_a_bias(data):
    with pytest.raises(ValueError, match="Solver 's2do' cannot handle a bias"):
        MultiClassSVC(solver="s2do", fit_intercept=True).fit(*data)


def test_unknown_shared_dataset(tmp_path):
    (tmp_path / "iris").mkdir()
    with pytest.raises(DatasetNotFoundError, match="No dataset 'nope' .* available: iris"):
        shared_dataset("nope", root=tmp_path)
    with pytest.raises(DatasetNotFoundError, match="No training file iris.scale.bz2 or iris.bz2"):
        shared_dataset("iris", root=tmp_path)


def test_shared_dataset_names_a_bad_name_or_folder(tmp_path, monkeypatch):
    # None was a TypeError from pathlib, '' "No training file .scale.bz2 or .bz2", '..' or
    # 'iris/../iris' looked outside the dataset folders, scaled='yes' was KeyError: 'yes';
    # $MSVM_DATASETS naming a file said the folder "does not exist".
    (tmp_path / "iris").mkdir()
    for name in (None, 3, "", ".", "..", "iris/../iris", str(tmp_path / "iris")):
        with pytest.raises(ValueError, match="name must be the name of a dataset folder"):
            shared_dataset(name, root=tmp_path)
    with pytest.raises(ValueError, match="scaled must be True, False or None, got 'yes'"):
        shared_dataset("iris", scaled="yes", root=tmp_path)
    afile = tmp_path / "datasets.txt"
    afile.write_text("")
    monkeypatch.setenv("MSVM_DATASETS", str(afile))
    with pytest.raises(DatasetNotFoundError,
                       match=r"datasets.txt' \(from \$MSVM_DATASETS\) is not a folder"):
        shared_dataset("iris")
    monkeypatch.setenv("MSVM_DATASETS", str(tmp_path / "missing"))
    with pytest.raises(DatasetNotFoundError,
                       match=r"missing' \(from \$MSVM_DATASETS\) does not exist"):
        shared_dataset("iris")


@pytest.mark.parametrize("blocked, call, extra", [
    ("onnx", lambda clf, X, y: __import__("msvm").to_onnx(clf), "onnx"),
    ("skl2onnx", lambda clf, X, y: __import__("msvm.onnx").onnx.register_skl2onnx(), "onnx"),
    ("dask.array", lambda clf, X, y: __import__("msvm.dask").dask.partial_fit_dask(clf, X, y),
     "dask"),
    ("matplotlib.pyplot", lambda clf, X, y: __import__("msvm.teaching.plots").teaching.plots
     .plot_hinge_loss(), "plot"),
])
def test_missing_optional_dependency_names_the_extra(fitted, data, monkeypatch, blocked, call,
                                                    extra):
    # (msvm.dask raised dask's bare ModuleNotFoundError; each feature had its own wording)
    X, y = data
    clf = fitted
    monkeypatch.setitem(sys.modules, blocked, None)   # import raises ImportError
    with pytest.raises(ImportError, match=rf"needs the optional dependency "
                                          rf"'{blocked.split('.')[0]}' \(pip install "
                                          rf"'msvm\[{extra}\]'\)"):
        call(clf, X, y)
