"""MultiClassSVC: labels, input formats, the fitted model's formula, certificates, accuracy."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC
from sklearn.utils.fixes import parse_version

from msvm import MultiClassSVC
from msvm.solvers import get_solver, resolve_solver

MODELS = ("ww", "cs", "llw", "msvm2")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


@pytest.fixture(scope="module")
def small3():
    """A small, overlapping 3-class problem (60 points) that keeps every fit fast."""
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=2.5, random_state=3)
    return X, y


def test_string_labels_roundtrip(small3):
    X, y = small3
    names = np.array(["setosa", "versicolor", "virginica"])
    coded = MultiClassSVC().fit(X, y)
    named = MultiClassSVC().fit(X, names[y])
    assert list(named.classes_) == sorted(names)
    pred = named.predict(X)
    assert pred.dtype.kind == "U"
    np.testing.assert_array_equal(pred, names[coded.predict(X)])
    np.testing.assert_allclose(named.decision_function(X), coded.decision_function(X),
                               atol=1e-10)


def test_any_hashable_labels_roundtrip(small3):
    X, y = small3
    objects = np.array(["b", "a", "c"], dtype=object)[y]  # what pandas columns hold
    clf = MultiClassSVC().fit(X, objects)
    assert list(clf.classes_) == ["a", "b", "c"]
    pred = clf.predict(X)
    assert set(pred) <= {"a", "b", "c"}
    assert np.mean(pred == objects) > 0.7
    booleans = y == 1
    clf = MultiClassSVC().fit(X, booleans)
    np.testing.assert_array_equal(clf.classes_, [False, True])
    assert clf.predict(X).dtype == bool
    floats = np.array([-1.0, 2.0, 7.0])[y]  # LIBSVM-style float labels
    clf = MultiClassSVC().fit(X, floats)
    np.testing.assert_array_equal(clf.classes_, [-1.0, 2.0, 7.0])
    assert set(clf.predict(X)) <= set(floats)


def test_sparse_input_matches_dense(small3):
    X, y = small3
    X = X.copy()
    X[np.abs(X) < 2.0] = 0.0  # make it genuinely sparse
    dense = MultiClassSVC(model="cs", tol=1e-9).fit(X, y)
    csr = MultiClassSVC(model="cs", tol=1e-9).fit(sp.csr_matrix(X), y)
    assert sp.issparse(csr.support_vectors_)
    assert csr.gamma_ == pytest.approx(dense.gamma_, rel=1e-12)
    np.testing.assert_allclose(csr.decision_function(sp.csr_matrix(X)),
                               dense.decision_function(X), atol=1e-6)
    np.testing.assert_allclose(csr.decision_function(X), dense.decision_function(X), atol=1e-6)


def _split_entries(X):
    """X as a non-canonical CSR matrix: each entry stored twice, halves in reverse order."""
    rows, cols = np.nonzero(X)
    order = np.lexsort((-cols, rows))
    rows, cols = np.repeat(rows[order], 2), np.repeat(cols[order], 2)
    data = X[rows, cols] / 2
    indptr = np.searchsorted(rows, np.arange(X.shape[0] + 1))
    M = sp.csr_matrix((data, cols, indptr), shape=X.shape)
    M.data.flags.writeable = M.indices.flags.writeable = False   # e.g. a joblib memmap
    return M


@pytest.mark.parametrize("solver", ["s2do", "frank_wolfe"])
def test_csr_with_duplicate_entries_is_the_matrix_it_holds(small3, solver):
    # A CSR matrix with duplicate (summed) entries and unsorted indices: scikit-learn's
    # RBF read each stored entry as a value of its own, so fit and predict used other
    # points; the solver sorted the user's (here read-only) matrix in place and crashed.
    X, y = small3
    M = _split_entries(X)
    assert not M.has_canonical_format
    np.testing.assert_allclose(M.toarray(), X)
    dense = MultiClassSVC(solver=solver, tol=1e-9).fit(X, y)
    csr = MultiClassSVC(solver=solver, tol=1e-9).fit(M, y)
    np.testing.assert_allclose(csr.decision_function(X), dense.decision_function(X), atol=1e-6)
    np.testing.assert_allclose(dense.decision_function(M), dense.decision_function(X),
                               atol=1e-10)
    assert not M.has_canonical_format   # the user's matrix is left as it was


@pytest.mark.parametrize("model", ["ww", "llw"])
def test_precomputed_kernel_matches_rbf(small3, model):
    X, y = small3
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.3, random_state=0)
    gamma = 0.3
    # A tight tol: the two Gram matrices differ by round-off, which at tol=1e-3 may
    # lead S2DO's path to another 1e-3-solution.
    rbf = MultiClassSVC(model=model, gamma=gamma, fit_intercept=True, tol=1e-9).fit(
        X_train, y_train)
    pre = MultiClassSVC(model=model, kernel="precomputed", fit_intercept=True, tol=1e-9).fit(
        rbf_kernel(X_train, gamma=gamma), y_train)
    assert pre.support_vectors_.shape == (0, len(X_train))
    np.testing.assert_array_equal(pre.support_, rbf.support_)
    K_test = rbf_kernel(X_test, X_train, gamma=gamma)
    np.testing.assert_allclose(pre.decision_function(K_test), rbf.decision_function(X_test),
                               atol=1e-6)
    np.testing.assert_array_equal(pre.predict(K_test), rbf.predict(X_test))


def test_callable_kernel_matches_rbf(small3):
    X, y = small3
    rbf = MultiClassSVC(gamma=0.2, tol=1e-9).fit(X, y)
    fn = MultiClassSVC(kernel=lambda A, B: rbf_kernel(A, B, gamma=0.2), tol=1e-9).fit(X, y)
    np.testing.assert_allclose(fn.decision_function(X), rbf.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_decision_function_is_beta_k_plus_b(iris, model):
    X, y = iris
    clf = MultiClassSVC(model=model, C=3.0, gamma=0.4, fit_intercept=True).fit(X, y)
    assert clf.dual_coef_.shape == (len(clf.support_), 3)
    assert clf.intercept_.shape == (3,)
    np.testing.assert_array_equal(clf.support_vectors_, X[clf.support_])
    assert np.all(np.any(clf.dual_coef_ != 0, axis=1))
    assert clf.n_support_.sum() == len(clf.support_)
    np.testing.assert_allclose(clf.intercept_, clf.solution_["b"], rtol=0, atol=0)
    rng = np.random.default_rng(0)
    X_new = X[rng.choice(len(X), 20, replace=False)] + rng.normal(0, 0.3, size=(20, 4))
    by_hand = rbf_kernel(X_new, clf.support_vectors_, gamma=0.4) @ clf.dual_coef_
    by_hand += clf.intercept_
    np.testing.assert_allclose(clf.decision_function(X_new), by_hand, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(clf.predict(X_new), clf.classes_[by_hand.argmax(axis=1)])


def test_no_intercept_means_zero_intercept(iris):
    X, y = iris
    clf = MultiClassSVC(model="ww").fit(X, y)
    np.testing.assert_array_equal(clf.intercept_, np.zeros(3))
    by_hand = rbf_kernel(X, clf.support_vectors_, gamma=clf.gamma_) @ clf.dual_coef_
    np.testing.assert_allclose(clf.decision_function(X), by_hand, rtol=1e-10, atol=1e-10)


def test_llw_scores_sum_to_zero(iris):
    X, y = iris
    clf = MultiClassSVC(model="llw").fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X).sum(axis=1), 0.0, atol=1e-10)


def test_binary_decision_function_is_h2_minus_h1(iris):
    X, y = iris
    mask = y > 0
    X2, y2 = X[mask], np.where(y[mask] == 1, "versicolor", "virginica")
    clf = MultiClassSVC(model="cs", fit_intercept=True).fit(X2, y2)
    dec = clf.decision_function(X2)
    assert dec.shape == (len(X2),)
    h = rbf_kernel(X2, clf.support_vectors_, gamma=clf.gamma_) @ clf.dual_coef_ + clf.intercept_
    np.testing.assert_allclose(dec, h[:, 1] - h[:, 0], rtol=1e-10, atol=1e-10)
    pred = clf.predict(X2)
    np.testing.assert_array_equal(pred == "virginica", dec > 0)
    assert np.mean(pred == y2) > 0.9


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("bias", [False, True])
def test_solution_is_certified_on_iris(iris, model, bias):
    X, y = iris
    clf = MultiClassSVC(model=model, fit_intercept=bias, solver="cvxpy").fit(X, y)
    sol = clf.solution_
    assert sol["status"] == "optimal"
    assert sol["solver"].startswith("cvxpy")
    assert abs(sol["relative_gap"]) <= 1e-6
    assert sol["kkt_residual"] <= 1e-6
    assert sol["primal_objective"] >= sol["dual_objective"] - 1e-8 * abs(sol["dual_objective"])
    assert sol["n_support"] == len(clf.support_)
    assert clf.n_iter_ == sol["n_iter"] >= 1
    assert sol["time"] > 0
    assert clf.shape_fit_ == X.shape
    assert clf.n_features_in_ == 4
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize("model", MODELS)
def test_accuracy_on_separated_blobs(model):
    centers = [[-5, -5], [5, -5], [-5, 5], [5, 5]]
    X, y = make_blobs(n_samples=200, centers=centers, cluster_std=1.0, random_state=1)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                        random_state=0)
    clf = MultiClassSVC(model=model).fit(X_train, y_train)
    assert clf.score(X_test, y_test) >= 0.95


@pytest.mark.parametrize("gamma", ["scale", "auto"])
@pytest.mark.parametrize("sparse", [False, True])
def test_gamma_resolved_like_svc(iris, gamma, sparse):
    X, y = iris
    X = X * np.array([1.0, 10.0, 0.1, 3.0])
    if sparse:
        X = sp.csr_matrix(np.where(X > 2.0, X, 0.0))
    ours = MultiClassSVC(gamma=gamma).fit(X, y)
    svc = SVC(gamma=gamma).fit(X, y)
    assert ours.gamma_ == pytest.approx(svc._gamma, rel=1e-12)
    number = MultiClassSVC(gamma=0.125).fit(X, y)
    assert number.gamma_ == 0.125


@pytest.mark.parametrize("gamma", ["scale", "auto", 0.5])
@pytest.mark.parametrize("sparse", [False, True])
def test_resolve_gamma_returns_a_python_float(gamma, sparse):
    """resolve_gamma is annotated -> float, but 'scale' on dense X returned NumPy's
    float64 (X.var()): shown as np.float64(0.5) by NumPy 2 (its docstring example)."""
    from msvm.kernels import resolve_gamma

    X = np.array([[0.0, 2.0], [2.0, 0.0]])
    value = resolve_gamma(gamma, sp.csr_matrix(X) if sparse else X)
    assert type(value) is float and value == 0.5


@pytest.mark.parametrize("weighted", [False, True])
def test_gamma_scale_of_near_constant_data_is_the_same_dense_and_sparse(weighted):
    """gamma='scale' on CSR data took Var(X) as E[x²] − E[x]², which cancels for entries far
    from 0: a CSR X of 3.3 + 1e-6·noise got γ = −9.4e13 (dense: +7.7e11), a negative γ
    that makes exp(−γ‖x − x'‖²) blow up on new points.  And a constant X got γ = 1 or
    ~1e29 depending on the round-off of its mean (and on whether weights were given)."""
    rng = np.random.RandomState(0)
    X = 3.3 + np.zeros((30, 3))
    X[:, 0] += 1e-6 * rng.normal(size=30)
    y = np.arange(30) % 3
    sw = rng.uniform(0.5, 2.0, size=30) if weighted else None
    dense = MultiClassSVC(tol=1e-8).fit(X, y, sample_weight=sw)
    sparse = MultiClassSVC(tol=1e-8).fit(sp.csr_matrix(X), y, sample_weight=sw)
    assert dense.gamma_ > 0
    assert sparse.gamma_ == pytest.approx(dense.gamma_, rel=1e-6)
    sw12 = None if sw is None else sw[:12]
    for constant in (0.1, 3.3):
        C = np.full((12, 2), constant)
        for A in (C, sp.csr_matrix(C)):
            fitted = MultiClassSVC().fit(A, np.arange(12) % 3, sample_weight=sw12)
            assert fitted.gamma_ == 1.0   # Var(X) = 0, as for all-zero X


@pytest.mark.parametrize("model,bias", [("ww", False), ("cs", True), ("llw", True),
                                        ("msvm2", False)])
def test_cvxpy_and_osqp_agree(small3, model, bias):
    X, y = small3
    a = MultiClassSVC(model=model, fit_intercept=bias, solver="cvxpy").fit(X, y)
    b = MultiClassSVC(model=model, fit_intercept=bias, solver="osqp").fit(X, y)
    assert a.solution_["solver"].startswith("cvxpy")
    assert b.solution_["solver"] == "osqp"
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-5)


@pytest.mark.parametrize("model", MODELS)
def test_s2do_gets_tol_and_matches_the_reference(iris, model):
    X, y = iris
    reference = MultiClassSVC(model=model, solver="cvxpy").fit(X, y)
    loose = MultiClassSVC(model=model, solver="s2do", tol=1e-2).fit(X, y)
    tight = MultiClassSVC(model=model, solver="s2do", tol=1e-8).fit(X, y)
    assert tight.solution_["solver"] == "s2do"
    assert loose.solution_["kkt_violation"] <= 1e-2
    assert tight.solution_["kkt_violation"] <= 1e-8
    assert tight.n_iter_ > loose.n_iter_
    np.testing.assert_allclose(tight.decision_function(X), reference.decision_function(X),
                               atol=1e-6)


def test_convergence_warning_when_solver_stops_early(iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # cvxpy's own "may be inaccurate"
        with pytest.warns(ConvergenceWarning, match="did not converge"):
            clf = MultiClassSVC(max_iter=1).fit(X, y)
    assert clf.solution_["status"] != "optimal"


@pytest.mark.parametrize("status,advice", [("max_iter", "Increase max_iter"),
                                           ("stalled", "round-off: raise tol, scale the")])
def test_convergence_warning_advice_follows_the_status(iris, status, advice):
    X, y = iris
    est = MultiClassSVC(max_iter=1)
    setup = est.prepare_fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # the solver's own
        solution = get_solver(setup.solver).solve(setup.problem, **est.solver_options(setup))
    with pytest.warns(ConvergenceWarning, match=advice):
        est.set_solution(setup, replace(solution, status=status))
    assert est.solution_["status"] == status


def test_verbose_prints_one_line_per_stage(small3, capsys):
    X, y = small3
    MultiClassSVC(verbose=True).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "[MultiClassSVC] data", "[MultiClassSVC] problem", "[MultiClassSVC] solve",
        "[MultiClassSVC] diagnostics"]
    MultiClassSVC(verbose=False).fit(X, y)
    assert capsys.readouterr().out == ""


def test_refit_and_tags(small3):
    X, y = small3
    clf = MultiClassSVC(kernel="precomputed")
    tags = clf.__sklearn_tags__()
    assert tags.input_tags.pairwise and tags.input_tags.sparse
    assert not MultiClassSVC().__sklearn_tags__().input_tags.pairwise
    clf = MultiClassSVC(model="ww").fit(X, y)
    first = clf.decision_function(X)
    clf.set_params(model="cs", C=0.05).fit(X, y)
    assert not np.allclose(first, clf.decision_function(X))


def test_a_failed_fit_leaves_the_estimator_as_it_was(small3, monkeypatch):
    """A fit that raises after the input checks (an error, or Ctrl-C in the solver) left
    their n_features_in_: an unfitted estimator passed check_is_fitted, a fitted one
    refused the data it was fitted on."""
    from sklearn.exceptions import NotFittedError

    X, y = small3
    wide = np.hstack([X, X])
    fresh = MultiClassSVC()
    with pytest.raises(ValueError, match="greater than one"):
        fresh.fit(wide, np.zeros(len(y)))
    assert vars(fresh) == vars(MultiClassSVC())
    with pytest.raises(NotFittedError):
        fresh.predict(X)
    clf = MultiClassSVC().fit(X, y)
    before, attributes = clf.decision_function(X), dict(vars(clf))

    def interrupted(problem, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(get_solver("s2do"), "solve", interrupted)
    for call in (lambda: clf.fit(wide, np.zeros(len(y))), lambda: clf.fit(wide, y)):
        with pytest.raises((ValueError, KeyboardInterrupt)):
            call()
        assert vars(clf).keys() == attributes.keys()
        assert all(vars(clf)[k] is v for k, v in attributes.items())
        np.testing.assert_array_equal(clf.decision_function(X), before)


@pytest.mark.parametrize("fit_intercept, expected", [(False, "s2do"), (True, "s2do_bias")])
def test_auto_solver_rule(small3, fit_intercept, expected):
    clf = MultiClassSVC(fit_intercept=fit_intercept).fit(*small3)
    assert clf.solution_["solver"].startswith(expected)


@pytest.mark.parametrize("kernel, bias, shape, sparse, expected", [
    ("linear", False, (200, 20), False, "linear"),        # a row shorter than m
    ("linear", False, (200, 200), False, "linear"),       # the boundary: d = m
    ("linear", False, (50, 400), False, "s2do"),          # wide dense: the Gram matrix
    ("linear", False, (50, 400), True, "linear"),         # the same shape, 5 non-zeros a row
    ("linear", True, (200, 20), False, "s2do_bias"),      # a bias: never the linear solver
    ("rbf", False, (200, 20), True, "s2do"),
    ("poly", False, (200, 20), False, "s2do"),
])
def test_auto_picks_linear_solver(kernel, bias, shape, sparse, expected):
    """'auto' takes solver='linear' for a linear kernel without a bias when nnz(X)/m ≤ m."""
    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem

    rng = np.random.default_rng(0)
    m, d = shape
    X = rng.normal(size=shape)
    if sparse:
        X = sp.random(m, d, density=5 / d, format="csr", random_state=0)
    y = np.arange(m) % 3
    for model in ("ww", "cs", "llw", "msvm2", "ats"):
        problem = DualProblem(make_machine(model, 3), y, Kernel(X, kernel, gamma=0.1), 1.0, bias)
        assert resolve_solver("auto", problem) == expected, model
    if expected == "linear" and not sparse:
        clf = MultiClassSVC(model="cs", kernel="linear", random_state=0).fit(X, y)
        assert clf.solution_["solver"] == "linear"
        assert clf.solution_["status"] == "optimal"


@pytest.mark.skipif(parse_version(sklearn.__version__).release[:2] < (1, 8),
                    reason="CalibratedClassifierCV(method='temperature') is new in "
                           "scikit-learn 1.8")
def test_temperature_calibration_gives_probabilities_that_agree_with_predict():
    """The README's route to probabilities: scikit-learn's temperature scaling of the
    scores, softmax(h(x)/T) with T fitted on cross-validated scores.  The probabilities
    sum to one, their argmax is the prediction of the machine fitted on all the data
    (softmax is monotone), and their held-out log-loss is well below the uniform
    guess's log Q (half of it: a loose bound, not a measurement)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.metrics import log_loss

    X, y = make_blobs(n_samples=400, centers=4, cluster_std=2.0, random_state=3)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                        random_state=0)
    calibrated = CalibratedClassifierCV(MultiClassSVC(model="cs", C=1.0), method="temperature",
                                        ensemble=False).fit(X_train, y_train)
    P = calibrated.predict_proba(X_test)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    machine = MultiClassSVC(model="cs", C=1.0).fit(X_train, y_train)
    np.testing.assert_array_equal(calibrated.classes_[P.argmax(axis=1)], machine.predict(X_test))
    assert log_loss(y_test, P) < 0.5 * np.log(4)
