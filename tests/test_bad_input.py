"""Every bad input gets an error of the right type whose message names the problem."""

from __future__ import annotations

import re
import sys
import types

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel

import msvm.solvers
from msvm import MultiClassSVC
from msvm.datasets import DatasetNotFoundError, load_libsvm, shared_dataset
from msvm.machines import MACHINES


@pytest.fixture(scope="module")
def data():
    X, y = make_blobs(n_samples=30, centers=3, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return MultiClassSVC().fit(X, y)


# ------------------------------------------------------------------ data
def test_nan_in_X(data):
    X, y = data
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        MultiClassSVC().fit(X, y)


def test_inf_in_X(data):
    X, y = data
    X = X.copy()
    X[0, 0] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        MultiClassSVC().fit(X, y)


def test_nan_in_X_at_predict(data, fitted):
    X = data[0][:5].copy()
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        fitted.predict(X)


def test_nan_in_y(data):
    X, y = data
    with pytest.raises(ValueError, match="Input y contains NaN"):
        MultiClassSVC().fit(X, np.where(np.arange(len(y)) == 2, np.nan, y))


def test_single_class(data):
    X, _ = data
    with pytest.raises(ValueError, match=r"greater than one; got 1 class"):
        MultiClassSVC().fit(X, np.zeros(len(X)))


def test_continuous_target(data):
    X, _ = data
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        MultiClassSVC().fit(X, np.linspace(0, 1, len(X)))


def test_mismatched_lengths(data):
    X, y = data
    with pytest.raises(ValueError, match="inconsistent numbers of samples: \\[30, 29\\]"):
        MultiClassSVC().fit(X, y[:-1])


def test_wrong_number_of_features_at_predict(data, fitted):
    X = data[0]
    with pytest.raises(ValueError, match="X has 3 features, but MultiClassSVC is expecting 2"):
        fitted.predict(np.hstack([X, X[:, :1]]))


def test_predict_before_fit(data):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        MultiClassSVC().predict(data[0])


def test_precomputed_kernel_not_square(data):
    X, y = data
    K = rbf_kernel(X, X[:20])
    with pytest.raises(ValueError, match="square .*Gram matrix.*got a 30x20 matrix"):
        MultiClassSVC(kernel="precomputed").fit(K, y)


def test_precomputed_kernel_wrong_shape_at_predict(data):
    X, y = data
    clf = MultiClassSVC(kernel="precomputed").fit(rbf_kernel(X), y)
    with pytest.raises(ValueError, match=r"kernel='precomputed'.*\(n_samples, n_train=30\)"):
        clf.predict(rbf_kernel(X[:5], X[:10]))


def test_kernel_callable_with_wrong_shape(data):
    X, y = data
    with pytest.raises(ValueError, match="kernel callable must return the \\(30, 30\\)"):
        MultiClassSVC(kernel=lambda A, B: A @ A.T[:, :5]).fit(X, y)


# --------------------------------------------------------- hyper-parameters
@pytest.mark.parametrize("C", [0, -1.0])
def test_C_not_positive(data, C):
    with pytest.raises(ValueError, match="C must be positive"):
        MultiClassSVC(C=C).fit(*data)


@pytest.mark.parametrize("C", ["1", None, [1.0], True])
def test_C_not_numeric(data, C):
    with pytest.raises(ValueError, match="C must be a positive number"):
        MultiClassSVC(C=C).fit(*data)


def test_C_not_finite(data):
    with pytest.raises(ValueError, match="C must be positive and finite"):
        MultiClassSVC(C=np.inf).fit(*data)


def test_unknown_kernel(data):
    with pytest.raises(ValueError, match=r"Unknown kernel 'gauss'; expected one of \['linear', "
                                         r"'poly', 'rbf', 'laplace', 'sigmoid', 'precomputed'\]"):
        MultiClassSVC(kernel="gauss").fit(*data)


def test_unknown_model(data):
    # The message lists every row of the machine table, whatever rows it has.
    expected = re.escape(f"Unknown model 'ovr'; expected one of {sorted(MACHINES)}")
    with pytest.raises(ValueError, match=expected):
        MultiClassSVC(model="ovr").fit(*data)


def test_unknown_solver(data):
    with pytest.raises(ValueError,
                       match=r"Unknown solver 'smo'; expected one of \['auto', .*'cvxpy'.*'osqp'"):
        MultiClassSVC(solver="smo").fit(*data)


def test_negative_tol(data):
    with pytest.raises(ValueError, match="tol must be a non-negative number, got tol=-0.001"):
        MultiClassSVC(tol=-1e-3).fit(*data)


@pytest.mark.parametrize("cache_size", [0, -5])
def test_cache_size_not_positive(data, cache_size):
    with pytest.raises(ValueError, match="cache_size must be a positive number of MB"):
        MultiClassSVC(cache_size=cache_size).fit(*data)


@pytest.mark.parametrize("gamma", ["big", -1.0, 0])
def test_bad_gamma(data, gamma):
    with pytest.raises(ValueError, match="gamma must be 'scale', 'auto' or a positive float"):
        MultiClassSVC(gamma=gamma).fit(*data)


@pytest.mark.parametrize("max_iter", [0, -2, 1.5])
def test_bad_max_iter(data, max_iter):
    with pytest.raises(ValueError, match="max_iter must be a positive integer or -1"):
        MultiClassSVC(max_iter=max_iter).fit(*data)


def test_bad_degree(data):
    with pytest.raises(ValueError, match="degree must be a non-negative number"):
        MultiClassSVC(kernel="poly", degree=-1).fit(*data)


def test_fit_intercept_not_bool(data):
    with pytest.raises(ValueError, match="fit_intercept must be True or False"):
        MultiClassSVC(fit_intercept="yes").fit(*data)


# ------------------------------------------------------ solver resolution
@pytest.fixture
def fake_solvers(monkeypatch):
    """Register two solvers that each support only one of bias / no bias."""
    for name, bias, no_bias in [("biasonly", True, False), ("nobias", False, True)]:
        module = types.ModuleType(f"_msvm_fake_{name}")
        module.SUPPORTS_BIAS = bias
        module.SUPPORTS_NO_BIAS = no_bias

        def solve(problem, **kwargs):  # pragma: no cover - must never be reached
            raise AssertionError("resolve_solver should have refused this problem")

        module.solve = solve
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(msvm.solvers.SOLVERS, name, module.__name__)


def test_solver_without_bias_support(data, fake_solvers):
    with pytest.raises(ValueError, match="Solver 'nobias' cannot handle a bias"):
        MultiClassSVC(solver="nobias", fit_intercept=True).fit(*data)


def test_solver_that_needs_a_bias(data, fake_solvers):
    with pytest.raises(ValueError, match="Solver 'biasonly' needs a bias"):
        MultiClassSVC(solver="biasonly", fit_intercept=False).fit(*data)


def test_s2do_refuses_a_bias(data):
    with pytest.raises(ValueError, match="Solver 's2do' cannot handle a bias"):
        MultiClassSVC(solver="s2do", fit_intercept=True).fit(*data)


# ----------------------------------------------------------- data files
def test_corrupt_libsvm_file(tmp_path):
    path = tmp_path / "broken.svm"
    path.write_text("1 1:0.5 2:0.25\n2 1:oops\n")
    with pytest.raises(ValueError, match=r"Cannot read LIBSVM file '.*broken\.svm'"):
        load_libsvm(path)


def test_corrupt_bz2_file(tmp_path):
    path = tmp_path / "broken.svm.bz2"
    path.write_bytes(b"BZh9 this is not bzip2")
    with pytest.raises(ValueError, match=r"Cannot read LIBSVM file '.*broken\.svm\.bz2'"):
        load_libsvm(path)


def test_missing_libsvm_file(tmp_path):
    path = tmp_path / "absent.svm"
    with pytest.raises(FileNotFoundError, match=r"LIBSVM file '.*absent\.svm' does not exist"):
        load_libsvm(path)
    with pytest.raises(ValueError, match="does not exist"):  # also a ValueError
        load_libsvm(path)


def test_empty_libsvm_file(tmp_path):
    path = tmp_path / "empty.svm"
    path.write_text("")
    with pytest.raises(ValueError, match=r"'.*empty\.svm' contains no samples"):
        load_libsvm(path)


def test_unknown_shared_dataset(tmp_path):
    (tmp_path / "iris").mkdir()
    with pytest.raises(DatasetNotFoundError, match="No dataset 'nope' .* available: iris"):
        shared_dataset("nope", root=tmp_path)
    with pytest.raises(DatasetNotFoundError, match="No training file iris.scale.bz2 or iris.bz2"):
        shared_dataset("iris", root=tmp_path)
