"""msvm.teaching: the lecture's algorithms against the exact reference solvers."""

import functools
import subprocess
import sys

import numpy as np
import pytest
from sklearn.metrics.pairwise import euclidean_distances, pairwise_kernels
from sklearn.svm import SVC

from msvm.teaching import (
    PAIR_RULES,
    bias_from_free_svs,
    compare_binary,
    compare_multiclass,
    face_report,
    faces_along_s2do,
    finish_runs,
    format_table,
    hard_margin_svm,
    kernel_matrix,
    kkt_classification,
    linearly_separable,
    logic_gate,
    multiclass_set,
    novikoff_bound,
    overlapping_set,
    perceptron,
    separable_set,
    smo,
    soft_margin_svm,
    svm_primal,
    svm_primal_limit_C,
)
from msvm.teaching.compare import BINARY_EQUIVALENTS, bound_path
from msvm.teaching.kernels import sklearn_equivalent
from msvm.teaching.svm import optimal_bias

# ------------------------------------------------------------------ bad input
_BINARY = [perceptron, novikoff_bound, linearly_separable, hard_margin_svm, soft_margin_svm,
           smo, svm_primal, svm_primal_limit_C, compare_binary]


def _bad_sets():
    X, y = separable_set(20)
    nan_X, inf_X, nan_y = X.copy(), X.copy(), y.astype(float)
    nan_X[3, 1], inf_X[0, 0], nan_y[2] = np.nan, np.inf, np.nan
    return [(nan_X, y, "X contains NaN or infinite values"),
            (inf_X, y, "X contains NaN or infinite values"),
            (X, nan_y, "y contains NaN"),
            (X, y[:-1], r"one label per row of X, shape \(20,\); got shape \(19,\)"),
            (X[:, 0], y, r"non-empty 2-D array .* got shape \(20,\)"),
            (X[:0], y[:0], r"non-empty 2-D array .* got shape \(0, 2\)"),
            (X, np.ones(20), "exactly two labels, got 1")]


@pytest.mark.parametrize("function", _BINARY, ids=lambda f: f.__name__)
def test_binary_functions_name_bad_input(function):
    # NaN or inf points gave a non-converged perceptron, an SMO "solution" or numpy's
    # "Eigenvalues did not converge"; wrong shapes gave broadcasting or IndexErrors; NaN
    # labels were "got 3 labels".
    for X, y, message in _bad_sets():
        with pytest.raises(ValueError, match=message):
            function(X, y)


def test_iteration_options_are_checked():
    # record_every=0 was a ZeroDivisionError in the loop; max_epochs=-1 and max_iter=-5 ran
    # nothing and returned a result, tol=nan ran until 'stalled'.
    X, y = separable_set(20)
    for function in (perceptron, smo):
        with pytest.raises(ValueError, match="record_every must be an integer >= 1, got 0"):
            function(X, y, record_every=0)
    with pytest.raises(ValueError, match="max_epochs must be an integer >= 0, got -1"):
        perceptron(X, y, max_epochs=-1)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 0, got -5"):
        smo(X, y, max_iter=-5)
    with pytest.raises(ValueError, match="tol must be a number >= 0, got nan"):
        smo(X, y, tol=float("nan"))


@pytest.mark.parametrize("name", ["linear", "poly", "rbf", "laplace", "tanh"])
def test_lecture_kernels_refuse_points_of_different_widths(name):
    # The L1 Laplace kernel broadcast a (3, 2) X against a (3, 1) Y into a 3x3 "kernel
    # matrix", and a 3-D X gave a 3-D one; the others raised numpy's matmul message.
    X = np.arange(6.0).reshape(3, 2)
    params = {"norm": "l1"} if name == "laplace" else {}
    with pytest.raises(ValueError, match=r"same number of features .* \(3, 2\) and \(3, 1\)"):
        kernel_matrix(X, X[:, :1], name, **params)
    with pytest.raises(ValueError, match=r"got shapes \(2, 2, 2\)"):
        kernel_matrix(np.zeros((2, 2, 2)), None, name, **params)


def test_C_and_epochs_are_checked():
    # soft_margin_svm(C=inf) failed in the QP solver with an empty message, svm_primal's
    # 'sgd' at C=inf likewise, compare_binary(C=0) said "lam must be in (0, 1)",
    # hard_margin_svm(C_start > C_max) declared AND not separable, svm_primal(epochs=0)
    # was a TypeError.
    X, y = logic_gate("and")
    for C in (np.inf, 0.0, -1.0, np.nan, "1"):
        for call in (functools.partial(soft_margin_svm, X, y, C),
                     functools.partial(smo, X, y, C),
                     functools.partial(compare_binary, X, y, C),
                     functools.partial(svm_primal, X, y, mode="sgd", C=C)):
            with pytest.raises(ValueError, match="C must be a finite number > 0"):
                call()
    with pytest.raises(ValueError, match="for C = inf use hard_margin_svm"):
        soft_margin_svm(X, y, np.inf)
    with pytest.raises(ValueError, match="C_start must be <= C_max, got 1000"):
        hard_margin_svm(X, y, C_start=1e8, C_max=1e7)
    with pytest.raises(ValueError, match="C_max must be a finite number > 0, got inf"):
        hard_margin_svm(X, y, C_max=np.inf)
    with pytest.raises(ValueError, match="C_start must be a finite number > 0, got -1"):
        hard_margin_svm(X, y, C_start=-1)
    for mode, C in (("online", None), ("batch", 1.0)):
        with pytest.raises(ValueError, match="epochs must be an integer >= 1, got 0"):
            svm_primal(X, y, mode=mode, C=C, epochs=0, reference=False)
    with pytest.raises(ValueError, match="lam must be in"):
        svm_primal(X, y, "0.1")
    with pytest.raises(ValueError, match="C_limit must be a finite number > 0"):
        svm_primal(X, y, C_limit=-1.0)


def test_lecture_kernels_refuse_bad_parameters_and_non_finite_values():
    # A fractional degree made NaN entries wherever x'y + 1 < 0, gamma=inf NaN on the
    # diagonal, a NaN gamma a NaN matrix: SMO ran on them and reported 'optimal'.  A
    # negative RBF gamma is not a kernel (it grows with distance).
    X = np.array([[-3.0, 0.0], [1.0, 1.0], [2.0, 0.0], [0.0, -2.0]])
    y = np.array([1, -1, 1, -1])
    cases = [("poly", {"degree": 1.5}, r"degree must be an integer >= 0, got 1\.5"),
             ("poly", {"degree": -1}, "degree must be an integer >= 0, got -1"),
             ("rbf", {"gamma": np.inf}, "gamma must be a finite number >= 0, got inf"),
             ("rbf", {"gamma": -1.0}, "gamma must be a finite number >= 0, got -1"),
             ("laplace", {"gamma": -1.0}, "gamma must be a finite number >= 0, got -1"),
             ("laplace", {"norm": "l3"}, "norm must be 'l2' or 'l1', got 'l3'"),
             ("tanh", {"gamma": np.nan}, "gamma must be a finite number, got nan"),
             ("tanh", {"r": np.inf}, "r must be a finite number, got inf")]
    for name, params, message in cases:
        for function, args in ((kernel_matrix, (X, X, name)), (smo, (X, y, 1.0, name)),
                               (perceptron, (X, y, name))):
            with pytest.raises(ValueError, match=message):
                function(*args, **params)
    with pytest.raises(ValueError, match="kernel's values contain NaN or infinity"):
        smo(X, y, 1.0, lambda A, B: np.full((len(A), len(B)), np.nan))
    # The degenerate but valid ends still work: gamma = 0 and degree = 0 are the constant 1.
    np.testing.assert_allclose(kernel_matrix(X, X, "rbf", gamma=0), 1.0)
    np.testing.assert_allclose(kernel_matrix(X, X, "poly", degree=0), 1.0)
    np.testing.assert_allclose(kernel_matrix(X, X, "poly", degree=2.0), (X @ X.T + 1) ** 2)


def test_data_generators_refuse_what_they_cannot_make():
    # separable_set(margin=10) drew points for ever (no point of [-3, 3]^2 is that far from
    # the hyperplane); one sample or one class gave a set of one class, 0 classes an
    # IndexError.
    with pytest.raises(ValueError, match="margin=10 is beyond every point of the cube"):
        separable_set(10, margin=10)
    with pytest.raises(ValueError, match="margin must be a finite number >= 0"):
        separable_set(10, margin=-1.0)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 2, got 1"):
        separable_set(1)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 2, got 1"):
        overlapping_set(1)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2, got 1"):
        multiclass_set(1, 10)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 5, got 3"):
        multiclass_set(5, 3)
    X, y = separable_set(30, margin=1.0)
    assert X.shape == (30, 2) and set(y) == {-1.0, 1.0}
    for generator in (overlapping_set, multiclass_set):
        for spread in (np.nan, -1.0, np.inf):
            with pytest.raises(ValueError, match="spread must be a finite number >= 0"):
                generator(spread=spread)
    assert np.sum(overlapping_set(7)[1] > 0) == 4


def test_format_table_without_records():
    # format_table([]) was an IndexError.
    with pytest.raises(ValueError, match="needs records or columns"):
        format_table([])
    assert format_table([], ["method", "gap"]).splitlines() == ["method  gap", "------  ---"]


def test_compare_binary_refuses_test_labels_it_was_not_trained_on():
    # Labels 0/1 against training labels 1/2: every 0 was coded -1 (as label 1) and
    # test_accuracy counted it.
    X, y = separable_set(20)
    labels = np.where(y > 0, 2, 1)
    with pytest.raises(ValueError, match=r"y_test has labels \[0\] that are not the training "
                                         r"labels \[1, 2\]"):
        compare_binary(X, labels, X_test=X, y_test=labels - 1)


def test_compare_multiclass_names_bad_models_and_test_sets():
    # models="ww" was read letter by letter ("Got 'w' instead"); X_test without y_test failed
    # in accuracy_score ("y_true ... Got None"), a 3-feature X_test in np.vstack.
    X, y = multiclass_set(3, 15, random_state=0)
    cases = [(dict(models="ww"), r"models must be a sequence of machine names, e\.g\. \['ww'\]"),
             (dict(X_test=X), "X_test and y_test must be given together"),
             (dict(X_test=np.ones((3, 3)), y_test=y[:3]),
              r"X_test must have X's 2 features per row; got shape \(3, 3\)"),
             (dict(X_test=X, y_test=y[:3]), "y_test must have one label per row of X_test")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            compare_multiclass(X, y, **{"models": ["ww"], "loo": False, **kwargs})


# ------------------------------------------------------------------ perceptron
@pytest.mark.parametrize("seed", range(20))
def test_perceptron_updates_within_novikoff_bound(seed):
    X, y = separable_set(30 + seed, margin=0.15 + 0.02 * seed, n_features=2 + seed % 3,
                         random_state=seed)
    result = perceptron(X, y)
    bound = novikoff_bound(X, y)
    assert result.converged
    assert np.all(y * result.decision_function(X) > 0)
    assert result.n_updates <= bound["bound"]
    assert bound["delta"] == pytest.approx(1.0, abs=1e-6)
    # the tightest (w, b) gives a bound no larger, still above the count
    tight = novikoff_bound(X, y, tightest=True)
    assert result.n_updates <= tight["bound"] <= bound["bound"] * (1 + 1e-6)


def test_perceptron_reports_non_convergence_on_xor():
    X, y = logic_gate("xor")
    result = perceptron(X, y, max_epochs=50)
    assert not result.converged
    assert result.n_epochs == 50 and result.n_updates >= 50
    assert not linearly_separable(X, y)
    with pytest.raises(ValueError, match="not separable"):
        novikoff_bound(X, y)
    # the degree-2 polynomial kernel separates XOR: the kernel perceptron converges
    kernelised = perceptron(X, y, "poly", degree=2)
    assert kernelised.converged and np.array_equal(kernelised.predict(X), y)


@pytest.mark.parametrize("gate", ["and", "or"])
def test_perceptron_learns_and_or(gate):
    X, y = logic_gate(gate)
    result = perceptron(X, y)
    assert result.converged and linearly_separable(X, y)
    assert np.array_equal(result.predict(X), y)
    assert result.n_updates <= novikoff_bound(X, y)["bound"]


# ----------------------------------------------------- exact SVMs, KKT and b
def test_soft_margin_svm_equals_sklearn_svc():
    X, y = overlapping_set(50, random_state=8)
    for kernel, params in (("linear", {}), ("rbf", {"gamma": 0.5})):
        svm = soft_margin_svm(X, y, 2.0, kernel, **params)
        svc = SVC(C=2.0, kernel=kernel, gamma=params.get("gamma", "scale"), tol=1e-10).fit(X, y)
        np.testing.assert_allclose(svm.decision_function(X), svc.decision_function(X),
                                   atol=1e-5)
        K = kernel_matrix(X, X, kernel, **params)
        assert bias_from_free_svs(svm.alpha, y, K, 2.0) == pytest.approx(svc.intercept_[0],
                                                                           abs=1e-5)
        cert = svm.certificate()
        assert abs(cert["relative_gap"]) < 1e-9 and cert["kkt_violation"] < 1e-8


def test_soft_margin_svm_refuses_an_indefinite_kernel():
    # Its docstring said the negative eigenvalues of a tanh Gram matrix were clipped to
    # zero; the reference solver refuses an indefinite kernel instead (Lesson 8 shows it).
    X, y = overlapping_set(40, random_state=3)
    K = kernel_matrix(X, X, "tanh", gamma=0.5, r=-1.0)
    assert np.linalg.eigvalsh(K)[0] < -1.0
    with pytest.raises(ValueError, match="positive semidefinite kernel") as info:
        soft_margin_svm(X, y, 10.0, "tanh", gamma=0.5, r=-1.0)
    # The advice is the teaching API's (SMO), not MultiClassSVC's solvers.
    assert "msvm.teaching.smo" in str(info.value) and "s2do" not in str(info.value)
    with pytest.raises(ValueError, match="msvm.teaching.smo"):
        hard_margin_svm(X, y, "tanh", gamma=0.5, r=-1.0)
    assert smo(X, y, 10.0, "tanh", gamma=0.5, r=-1.0).status == "optimal"


def test_kkt_kinds_have_the_lectures_margins():
    X, y = overlapping_set(60, spread=1.3, random_state=9)
    svm = soft_margin_svm(X, y, 0.7)
    s = y * svm.decision_function(X)
    kinds = svm.kkt_kinds()
    assert set(kinds) == {"non_sv", "free_sv", "bound_sv"}
    assert np.all(s[kinds == "non_sv"] >= 1 - 1e-7)
    np.testing.assert_allclose(s[kinds == "free_sv"], 1.0, atol=1e-7)
    assert np.all(s[kinds == "bound_sv"] <= 1 + 1e-7)
    np.testing.assert_allclose(svm.slacks()[kinds != "bound_sv"], 0.0, atol=1e-7)


def test_hard_margin_svm():
    X, y = separable_set(40, margin=0.4, random_state=2)
    svm = hard_margin_svm(X, y)
    f = svm.decision_function(X)
    assert np.min(y * f) == pytest.approx(1.0, abs=1e-7)
    assert svm.margin == pytest.approx(np.min(np.abs(f)) / np.linalg.norm(svm.w), rel=1e-6)
    assert set(svm.kkt_kinds()) <= {"non_sv", "free_sv"}
    svc = SVC(kernel="linear", C=1e6, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(svm.w, svc.coef_[0], atol=1e-4)
    with pytest.raises(ValueError, match="not separable"):
        hard_margin_svm(*logic_gate("xor"))


def test_optimal_bias_minimises_the_hinge_sum():
    rng = np.random.default_rng(0)
    u, y = rng.normal(size=40), np.where(rng.random(40) < 0.5, 1.0, -1.0)
    b = optimal_bias(u, y)
    grid = np.linspace(-4, 4, 4001)
    values = [np.maximum(0, 1 - y * (u + t)).sum() for t in grid]
    assert np.maximum(0, 1 - y * (u + b)).sum() <= min(values) + 1e-9


# ------------------------------------------------------------------------- SMO
@functools.cache
def _smo_cases():
    """22 problems (linear and RBF, three C) with their exact solutions."""
    cases = []
    for seed in range(22):
        X, y = overlapping_set(24 + 2 * seed, spread=0.8 + 0.05 * seed, random_state=100 + seed)
        C = (0.1, 1.0, 10.0)[seed % 3]
        kernel = ("linear", {}) if seed % 2 == 0 else ("rbf", {"gamma": 0.3 + 0.1 * (seed % 5)})
        cases.append((X, y, C, kernel, soft_margin_svm(X, y, C, kernel[0], **kernel[1])))
    return tuple(cases)


@pytest.mark.parametrize("pair", PAIR_RULES)
def test_smo_reaches_the_reference_dual_with_the_same_kkt_kinds(pair):
    cases = _smo_cases()
    kernels = {kernel for _, _, _, (kernel, _), _ in cases}
    assert len(cases) >= 20 and kernels == {"linear", "rbf"}
    for X, y, C, (kernel, params), exact in cases:
        d_star = exact.certificate()["dual"]
        result = smo(X, y, C, kernel, pair=pair, tol=1e-6, record_every=10**9, **params)
        assert result.status == "optimal"
        assert abs(result.certificate()["dual"] - d_star) <= 1e-6 * abs(d_star)
        assert np.array_equal(result.kkt_kinds(), exact.kkt_kinds())


@pytest.mark.parametrize("pair", PAIR_RULES)
def test_smo_trace_is_a_certificate(pair):
    X, y = overlapping_set(40, spread=1.1, random_state=5)
    exact = soft_margin_svm(X, y, 1.0, "rbf", gamma=0.5)
    d_star = exact.certificate()["dual"]
    result = smo(X, y, 1.0, "rbf", pair=pair, tol=1e-6, gamma=0.5)
    duals = np.array([t["dual"] for t in result.trace])
    gaps = np.array([t["gap"] for t in result.trace])
    assert len(result.trace) == result.n_iter
    assert np.all(np.diff(duals) >= -1e-10)  # each step solves its 2-variable problem exactly
    assert np.all(gaps >= d_star - duals - 1e-9)  # the gap bounds the distance to D*
    assert np.all(duals <= d_star + 1e-9)
    assert result.trace[-1]["kkt_violation"] <= (2e-6 if pair == "platt" else 1e-6)


# ------------------------------------------------------------------ SVMPrimal
def test_svm_primal_batch_within_its_certified_bound():
    X, y = overlapping_set(60, spread=1.2, random_state=1)
    for lam, steps in ((1e-3, 300), (3e-4, 600)):
        result = svm_primal(X, y, lam, mode="batch", C=1.0, epochs=steps)
        assert 0.0 <= result.info["best_gap"] <= result.info["bound"]


def test_svm_primal_online_limit_is_the_svm_at_C_star():
    """Regression guard: the online rule (λ → 0) ends at the soft-margin SVM at C*.

    The limit is derived in msvm/teaching/svm_primal.py; the rate is not (a
    constant-step stochastic method), so the tolerances below are regression
    guards: relative primal gap at C* below λ/5, distance shrinking with λ.
    """
    X, y = overlapping_set(60, spread=1.2, random_state=0)
    C_star = svm_primal_limit_C(X, y)
    assert soft_margin_svm(X, y, C_star).alpha.sum() == pytest.approx(1.0, rel=1e-4)
    distances = []
    for lam in (0.01, 0.001):
        result = svm_primal(X, y, lam, epochs=300, C_limit=C_star)
        assert 0.0 <= result.info["relative_gap"] <= lam / 5
        distances.append(result.info["distance"])
    assert distances[1] < distances[0] / 2
    with pytest.raises(ValueError, match="no C"):
        svm_primal(X, y, 0.01, C=1.0)
    for lam in (0.0, -1.0, 1.0, float("nan")):   # w = 0, a diverging w, or NaN before
        with pytest.raises(ValueError, match=r"lam must be in \(0, 1\)"):
            svm_primal(X, y, lam, mode="sgd", C=1.0)


def test_svm_primal_limit_needs_sum_alpha_to_reach_one():
    # every point at distance >= 1.2 from a hyperplane: ||w_hard|| <= 1/1.2, sum alpha < 1
    X, y = separable_set(30, margin=1.2, random_state=4)
    assert hard_margin_svm(X, y).alpha.sum() < 1.0
    with pytest.raises(ValueError, match="below 1 for every C"):
        svm_primal_limit_C(X, y)


# --------------------------------------------------------------------- kernels
@pytest.mark.parametrize(("name", "params"), [
    ("linear", {}), ("poly", {"degree": 2}), ("poly", {"degree": 3}), ("rbf", {"gamma": 0.7}),
    ("laplace", {"gamma": 0.4, "norm": "l1"}), ("tanh", {"gamma": 0.3, "r": -0.5})])
def test_lecture_kernels_equal_sklearn(name, params):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(9, 4)), rng.normal(size=(6, 4))
    metric, kwargs = sklearn_equivalent(name, **params)
    np.testing.assert_allclose(kernel_matrix(A, B, name, **params),
                               pairwise_kernels(A, B, metric=metric, **kwargs), atol=1e-12)


def test_lecture_polynomial_has_the_plus_one_and_laplace_the_euclidean_norm():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(kernel_matrix(A, B, "poly", degree=2), (A @ B.T + 1) ** 2)
    np.testing.assert_allclose(kernel_matrix(A, B, "laplace", gamma=0.5),
                               np.exp(-0.5 * euclidean_distances(A, B)))
    assert not np.allclose(kernel_matrix(A, B, "laplace", gamma=0.5),
                           pairwise_kernels(A, B, metric="laplacian", gamma=0.5))
    a, b = A[:, :1], B[:, :1]  # in one dimension the two Laplace kernels agree
    np.testing.assert_allclose(kernel_matrix(a, b, "laplace", gamma=0.5),
                               pairwise_kernels(a, b, metric="laplacian", gamma=0.5))
    with pytest.raises(ValueError):
        sklearn_equivalent("laplace", gamma=0.5)
    with pytest.raises(ValueError, match="takes"):
        kernel_matrix(A, B, "rbf", degree=2)


# ----------------------------------------------------------------- comparisons
def test_compare_binary_agrees_on_the_optimum():
    X, y = overlapping_set(40, spread=1.2, random_state=3)
    for kernel, params in (("linear", {}), ("rbf", {"gamma": 0.5})):
        records = compare_binary(X, y, 1.0, kernel, **params)
        d_star = next(r["dual"] for r in records if r["method"].startswith("reference"))
        methods = [r["method"] for r in records]
        assert sum(m.startswith("SMO") for m in methods) == 3
        assert any(m.startswith("scikit-learn") for m in methods)
        assert any(m.startswith("SVMPrimal") for m in methods) == (kernel == "linear")
        for r in records:
            assert r["primal"] >= d_star * (1 - 1e-9)  # weak duality
            if r["dual"] is not None:
                assert abs(r["dual"] - d_star) <= 1e-6 * d_star
                assert r["relative_gap"] <= 1e-6


def test_compare_multiclass_two_class_equivalences():
    X, y = multiclass_set(2, 36, spread=1.8, random_state=3)
    X_test, y_test = multiclass_set(2, 40, spread=1.8, random_state=4)
    for kernel in ("rbf", "linear"):
        records = compare_multiclass(X, y, C=0.7, kernel=kernel, gamma=0.5, X_test=X_test,
                                     y_test=y_test, loo=False)
        checked = {r["model"] for r in records if "q2_max_abs_diff" in r}
        assert checked == set(BINARY_EQUIVALENTS)
        for r in records:
            if "q2_max_abs_diff" in r:
                assert r["q2_max_abs_diff"] < 1e-5, r
        assert {r["model"] for r in records} >= {"ovo", "ovr"}


def test_compare_multiclass_bound_and_loo():
    X, y = multiclass_set(3, 24, spread=1.5, random_state=5)
    records = compare_multiclass(X, y, C=1.0, gamma=0.5, models=["msvm2"], loo=True)
    msvm2 = next(r for r in records if r["model"] == "msvm2")
    assert msvm2["loo_error"] * len(y) <= msvm2["n_candidates"] <= msvm2["bound"]
    assert all(r["loo_error"] is not None for r in records if r["model"] in ("ovo", "ovr"))
    assert all(abs(r["relative_gap"]) < 1e-8 for r in records if r["relative_gap"] is not None)


def test_bound_path_orders_loo_count_and_bound():
    X, y = multiclass_set(3, 45, spread=1.5, random_state=6)
    for r in bound_path(X, y, [0.1, 1.0, 10.0], gamma=0.5):
        assert r["loo_errors"] <= r["n_candidates"] <= r["bound"]


# ---------------------------------------------------------------- conditioning
def _dual(model, X, y, kernel, C=100.0):
    from msvm import MultiClassSVC

    return MultiClassSVC(model=model, C=C, kernel=kernel, gamma=0.5).prepare_fit(X, y).problem


def test_face_hessian_rank_follows_the_kernel_rank():
    """With every variable free (α = C/2): a linear kernel on 2-D points has rank 2, so
    LLW's face Hessian has rank 2·(Q − 1) whatever the number of variables; an RBF Gram
    matrix is positive definite, so WW's is regular (Schur's product theorem)."""
    X, y = multiclass_set(4, 40, spread=1.0, random_state=3)
    Q = 4
    llw = _dual("llw", X, y, "linear")
    half = np.where(llw.active, 0.5 * llw.C, 0.0)
    report = face_report(llw, half)
    assert report["n_free"] == report["n_variables"] == 40 * (Q - 1)
    assert report["kernel_rank"] == 2 and report["rank"] == 2 * (Q - 1)
    ww = _dual("ww", X, y, "rbf")
    report = face_report(ww, np.where(ww.active, 0.5 * ww.C, 0.0))
    assert report["rank"] == report["n_free"] == report["n_variables"]
    assert report["condition"] >= 1.0
    # A variable at a bound leaves the face.
    at_bound = half.copy()
    at_bound[0, np.flatnonzero(llw.active[0])[0]] = llw.C
    assert face_report(llw, at_bound)["n_free"] == 40 * (Q - 1) - 1


def test_face_report_and_faces_along_s2do_name_bad_input():
    # A wrong shape was an IndexError, NaN in alpha counted as at a bound, a negative
    # zero_tol called every variable (those at 0 too) free; passes=10 was "'int' object is
    # not iterable" and passes=(0,) a message about max_iter.
    X, y = multiclass_set(3, 10, spread=1.0, random_state=0)
    llw = _dual("llw", X, y, "linear")
    half = np.where(llw.active, 0.5 * llw.C, 0.0)
    with pytest.raises(ValueError, match=r"alpha must have the problem's shape \(10, 3\); "
                                         r"got \(30,\)"):
        face_report(llw, half.ravel())
    half[0, 1] = np.nan
    with pytest.raises(ValueError, match="alpha contains NaN or infinite values"):
        face_report(llw, half)
    for zero_tol in (-1.0, float("nan"), 0.5):
        with pytest.raises(ValueError, match=r"zero_tol must be a number in \[0, 0.5\)"):
            face_report(llw, llw.zeros(), zero_tol=zero_tol)
    for passes in (10, (0,), (100, -1), (1.5,)):
        with pytest.raises(ValueError, match="passes must be a sequence of positive integers"):
            faces_along_s2do(X, y, passes=passes)


def test_faces_along_s2do_climb_to_the_optimum():
    """S2DO's dual never falls along its passes and stays below the exact optimum's."""
    X, y = multiclass_set(3, 30, spread=1.0, random_state=4)
    records = faces_along_s2do(X, y, "msvm2", passes=(10, 100, 1000))
    duals = [r["dual"] for r in records]
    assert records[-1]["point"] == "optimum" and records[-1]["kkt_violation"] < 1e-8
    assert all(a <= b * (1 + 1e-12) for a, b in zip(duals, duals[1:], strict=False))
    assert all(r["rank"] == r["n_free"] for r in records)   # M-SVM²: k + 1/(2C) is regular


def test_finish_runs_end_at_the_hand_over():
    """The lesson's LLW problem: without the finish more than ten times the hand-over
    passes, with it a few passes after it; both at the reference dual."""
    X, y = multiclass_set(4, 80, spread=1.0, random_state=0)
    plain, finished = finish_runs(X, y, "llw")
    assert plain["finish_time"] == 0 and plain["passes"] > 10 * plain["handover"]
    assert finished["finish_time"] > 0 and finished["passes"] <= finished["handover"] + 10
    assert max(plain["relative_error"], finished["relative_error"]) < 1e-9
    assert [n for n, _ in plain["trace"]] == sorted(n for n, _ in plain["trace"])


def test_teaching_does_not_import_matplotlib():
    code = "import sys, msvm.teaching; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------- plots
@pytest.fixture(scope="module")
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _point_sets(ax):
    return {c.get_label(): len(c.get_offsets()) for c in ax.collections
            if not c.get_label().startswith("_")}


def test_plot_decision_function_marks_each_kkt_kind(plt):
    from msvm.teaching.plots import KIND_LABELS, plot_decision_function

    X, y = overlapping_set(50, spread=1.2, random_state=2)
    svm = soft_margin_svm(X, y, 0.5, "rbf", gamma=0.5)
    kinds = kkt_classification(svm.alpha, 0.5)
    ax = plot_decision_function(svm)
    expected = {f"{KIND_LABELS[k]}: {int(np.sum(kinds == k))}": int(np.sum(kinds == k))
                for k in KIND_LABELS if np.any(kinds == k)}
    assert _point_sets(ax) == expected
    assert sum(expected.values()) == len(y)
    # the margin contours are f = −1 and f = +1, the boundary f = 0
    levels = sorted(float(v) for c in ax.collections if hasattr(c, "levels")
                    for v in c.levels)
    assert {-1.0, 0.0, 1.0} <= set(levels)
    p = perceptron(*separable_set(20, random_state=1))
    assert _point_sets(plot_decision_function(p)) == {"y = +1": int(np.sum(p.y > 0)),
                                                      "y = −1": int(np.sum(p.y < 0))}
    # Labels 0/1 drew no 0 point; another set of the training set's size got its kinds.
    labels = (p.y > 0).astype(int)
    assert _point_sets(plot_decision_function(p, p.X, labels)) == _point_sets(
        plot_decision_function(p))
    other = X + 0.1
    assert _point_sets(plot_decision_function(svm, other, y)) == {
        "y = +1": int(np.sum(y > 0)), "y = −1": int(np.sum(y < 0))}
    with pytest.raises(ValueError, match=r"two labels .* got \[0, 1, 2\]"):
        plot_decision_function(p, p.X[:3], [0, 1, 2])


def test_plot_hinge_loss_draws_the_losses(plt):
    from msvm.teaching.plots import plot_hinge_loss

    ax = plot_hinge_loss()
    lines = {line.get_label(): line for line in ax.get_lines()}
    s, v = lines["hinge max(0, 1 − y f)"].get_data()
    np.testing.assert_allclose(v, np.maximum(0, 1 - s))
    s, v = lines["perceptron max(0, −y f)"].get_data()
    np.testing.assert_allclose(v, np.maximum(0, -s))


def test_plot_perceptron_frames_show_the_recorded_hyperplanes(plt):
    from msvm.teaching.plots import plot_perceptron_frames

    result = perceptron(*separable_set(30, margin=0.2, random_state=3))
    fig = plot_perceptron_frames(result, n_frames=4)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == min(4, len(result.trace))
    last = result.trace[-1]
    assert visible[-1].get_title().startswith(f"update {last['t']} ")
    (line,) = [ln for ln in visible[-1].get_lines() if ln.get_label() == "w·x + b = 0"]
    xs, ys = line.get_data()
    np.testing.assert_allclose(last["w"][0] * xs + last["w"][1] * ys + last["b"], 0, atol=1e-9)


def test_plot_convergence_draws_each_trace(plt):
    from msvm.teaching.plots import plot_convergence

    X, y = overlapping_set(30, random_state=4)
    exact = soft_margin_svm(X, y, 1.0)
    runs = [smo(X, y, 1.0, pair=rule) for rule in PAIR_RULES]
    fig = plot_convergence(runs, exact)
    left, right = fig.axes
    labels = {line.get_label() for line in left.get_lines()}
    assert "exact optimum" in labels
    for r in runs:
        (dual,) = [ln for ln in left.get_lines() if ln.get_label() == f"{r.method} dual"]
        np.testing.assert_allclose(dual.get_ydata(), [t["dual"] for t in r.trace])
        assert f"{r.method} D* − D" in {line.get_label() for line in right.get_lines()}
    assert right.get_yscale() == "log"


def test_plot_finish_runs_draws_each_trace_and_the_hand_over(plt):
    from msvm.teaching.plots import plot_finish_runs

    records = [{"method": "a", "handover": 100, "trace": [(0, 1.0), (50, 0.1), (200, 1e-3)]},
               {"method": "b", "handover": 100, "trace": [(0, 1.0), (100, 1e-7)]}]
    ax = plot_finish_runs(records)
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["a"].get_ydata(), [1.0, 0.1, 1e-3])
    np.testing.assert_allclose(lines["b"].get_xdata(), [1, 100])   # pass 0 drawn at 1 (log)
    assert list(lines["hand-over to the finish"].get_xdata()) == [100, 100]
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_plot_regions_and_grids(plt):
    from msvm.teaching.plots import (
        plot_kernel_regions,
        plot_multiclass_regions,
        plot_parameter_grid,
    )

    X, y = logic_gate("xor")
    fig = plot_kernel_regions(X, y, {"linear": ("linear", {}), "poly": ("poly", {"degree": 2})},
                              C=100.0)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert len(titles) == 2 and titles[0].startswith("linear: accuracy ")
    assert titles[1] == "poly: accuracy 1.00"  # the degree-2 polynomial separates XOR
    X, y = overlapping_set(30, random_state=6)
    fig = plot_parameter_grid(X, y, [0.1, 10.0], [0.5])
    for ax, C in zip(fig.axes, [0.1, 10.0], strict=True):
        svm = soft_margin_svm(X, y, C, "rbf", gamma=0.5)
        n_sv = int(np.count_nonzero(svm.kkt_kinds() != "non_sv"))
        assert ax.get_title() == f"C={C:g}, γ=0.5: {n_sv} SV"
    X, y = multiclass_set(3, 30, random_state=7)
    records, estimators = compare_multiclass(X, y, models=["ww", "cs"], gamma=0.5, loo=False,
                                             return_estimators=True)
    fig = plot_multiclass_regions(estimators, X, y)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == [f"{r['method']}: {r['accuracy']:.2f}" for r in records]


def test_plot_bound_vs_loo_and_certificates(plt):
    from msvm.teaching.plots import plot_bound_vs_loo, plot_certificates, plot_svm_primal

    records = [{"C": 0.1, "bound": 40.0, "n_candidates": 12, "loo_errors": 3, "n_samples": 50},
               {"C": 1.0, "bound": 30.0, "n_candidates": 9, "loo_errors": 0, "n_samples": 50}]
    ax = plot_bound_vs_loo(records)
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    np.testing.assert_allclose(lines["radius–margin bound"], [40.0, 30.0])
    np.testing.assert_allclose(lines["exact LOO errors"], [3, 0.5])  # 0 drawn at 0.5 on log axes
    certs = [{"method": "a", "relative_gap": 1e-3}, {"method": "b", "relative_gap": 1e-12}]
    ax = plot_certificates(certs)
    np.testing.assert_allclose([p.get_height() for p in ax.patches], [1e-3, 1e-12])
    X, y = overlapping_set(30, random_state=8)
    run = svm_primal(X, y, 1e-3, mode="batch", C=1.0, epochs=50)
    ax = plot_svm_primal([run])
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["batch, λ = 0.001", "batch, λ = 0.001 bound"]


def test_plots_name_bad_input_before_making_a_figure(plt):
    # 3-feature points were drawn silently as their first two against a 2-D grid (also the
    # perceptron's frames, from the first two components of w); NaN, an empty or 1-D X, a
    # short y, resolution=1 or ncols=0 failed inside numpy or matplotlib (IndexError,
    # ZeroDivisionError, "zero-size array"), after a figure had been opened and left open.
    from msvm.teaching import plots

    X, y = overlapping_set(20, random_state=1)
    svm = soft_margin_svm(X, y, 1.0, "linear")
    X3 = np.column_stack([X, X[:, 0]])
    nan_X = X.copy()
    nan_X[2, 0] = np.nan
    shape = r"X must be a non-empty array of shape \(n, 2\) \(the plots are 2-D\)"
    cases = [
        (lambda: plots.plot_decision_function(svm, X3, y), shape + r"; got shape \(20, 3\)"),
        (lambda: plots.plot_decision_function(svm, X[:, 0], y), shape),
        (lambda: plots.plot_decision_function(svm, X[:0], y[:0]), shape),
        (lambda: plots.plot_decision_function(svm, nan_X, y), "X contains NaN or infinite"),
        (lambda: plots.plot_decision_function(svm, X, y[:5]), "y must have one label per row"),
        (lambda: plots.plot_decision_function(svm, resolution=1), "resolution must be an "
                                                                  "integer >= 2, got 1"),
        (lambda: plots.plot_perceptron_frames(perceptron(X3, y)), shape),
        (lambda: plots.plot_perceptron_frames(perceptron(*separable_set(20)), ncols=0),
         "ncols must be an integer >= 1, got 0"),
        (lambda: plots.plot_kernel_regions(X3, y, {"linear": ("linear", {})}), shape),
        (lambda: plots.plot_kernel_regions(X, y, {}), "kernels is empty"),
        (lambda: plots.plot_parameter_grid(X, y, [], [1.0]), "Cs is empty"),
        (lambda: plots.plot_multiclass_regions({"svm": svm}, X3, y), shape),
        (lambda: plots.plot_convergence([], reference=1.0), "results is empty"),
        (lambda: plots.plot_bound_vs_loo([]), "records is empty"),
    ]
    plt.close("all")
    for draw, message in cases:
        with pytest.raises(ValueError, match=message):
            draw()
        assert plt.get_fignums() == []   # checked before a figure was opened
