"""Class and sample weights: example i's loss times wᵢ, i.e. capacity C·wᵢ (msvm/problem.py).

Two classes: every machine against ``SVC(class_weight=..., sample_weight=...)`` through the
table of msvm/machines.py.  More classes: every iterative solver against the cvxpy reference.
Then the identities a weight must satisfy ('balanced', repetition, zero weights), the
certificate, the bounds, model files, the command line and the errors.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    check_sample_weight_equivalence_on_sparse_data,
)

import msvm
from msvm import MultiClassSVC, loo_error
from msvm.bounds import radius_margin_bound
from msvm.cli import main
from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import MACHINES, make_machine
from msvm.problem import DualProblem
from msvm.solvers import get_solver

GAMMA = 0.5
HINGE = [name for name in MACHINES if name != "msvm2"]


def _data(seed, n_classes, n, spread=2.5):
    X, y = make_blobs(n, centers=n_classes, cluster_std=spread, random_state=seed)
    return X / 4.0, y


def _weights(seed, n, low=0.2, high=3.0):
    return np.random.default_rng(seed).uniform(low, high, n)


# ----------------------------------------------------------- Q = 2 against SVC
#: (model, C_binary / C, h_2 − h_1 / SVC's decision function): the table of msvm/machines.py.
SVC_MAP = [("ww", 2.0, 1.0), ("cs", 2.0, 1.0), ("llw", 0.5, 2.0), ("adm", 0.5, 2.0),
           ("atm", 0.5, 2.0), ("mmr", 0.5, 2.0), ("ats", 1.0, 2.0), ("ova", 1.0, 2.0)]


@pytest.mark.parametrize(("model", "factor", "ratio"), SVC_MAP)
def test_two_classes_match_weighted_svc(model, factor, ratio):
    """Capacity C·class_weight[y]·sample_weight is SVC's, through the two-class table."""
    X, y = _data(3, 2, 60)
    X_test, _ = _data(103, 2, 40)
    w = _weights(3, len(y))
    class_weight = {0: 2.5, 1: 0.6}
    C = 1.5
    est = MultiClassSVC(model=model, C=C, gamma=GAMMA, fit_intercept=True, solver="cvxpy",
                        class_weight=class_weight).fit(X, y, sample_weight=w)
    assert est.solution_["status"] == "optimal" and est.solution_["b_method"] == "kkt"
    svc = SVC(C=factor * C, gamma=GAMMA, class_weight=class_weight, tol=1e-10).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(est.decision_function(X_test),
                               ratio * svc.decision_function(X_test), rtol=1e-5, atol=1e-5)
    # The weights matter here: the unweighted machine is another one.
    plain = MultiClassSVC(model=model, C=C, gamma=GAMMA, fit_intercept=True,
                          solver="cvxpy").fit(X, y)
    assert np.max(np.abs(plain.decision_function(X_test) - est.decision_function(X_test))) > 1e-2


def test_two_class_msvm2_is_hard_margin_svc_on_weighted_shift():
    """M-SVM² with weights: hard-margin SVC on k + δ_ij / (2 C wᵢ) (msvm/problem.py)."""
    X, y = _data(4, 2, 60)
    X_test, _ = _data(104, 2, 40)
    w = _weights(4, len(y))
    class_weight = {0: 0.5, 1: 2.0}
    C = 0.7
    est = MultiClassSVC(model="msvm2", C=C, gamma=GAMMA, fit_intercept=True, solver="cvxpy",
                        class_weight=class_weight).fit(X, y, sample_weight=w)
    weight = w * np.where(y == 0, 0.5, 2.0)
    K = rbf_kernel(X, X, gamma=GAMMA) + np.diag(1.0 / (2.0 * C * weight))
    svc = SVC(C=1e8, kernel="precomputed", tol=1e-12).fit(K, y)
    theirs = svc.decision_function(rbf_kernel(X_test, X, gamma=GAMMA))
    np.testing.assert_allclose(est.decision_function(X_test), 2 * theirs, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------- Q > 2 against cvxpy
def _q3_fit(model, solver, bias, kernel="rbf", **options):
    X, y = _data(5, 3, 36)
    w = _weights(5, len(y))
    params = dict(model=model, C=1.3, kernel=kernel, gamma=GAMMA, fit_intercept=bias,
                  class_weight={0: 0.4, 1: 1.0, 2: 2.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # options a solver does not use
        ref = MultiClassSVC(solver="cvxpy", **params).fit(X, y, sample_weight=w)
        est = MultiClassSVC(solver=solver, tol=1e-9, **params, **options).fit(
            X, y, sample_weight=w)
    plain = MultiClassSVC(solver="cvxpy", **params | {"class_weight": None}).fit(X, y)
    return ref, est, plain


def _assert_matches_reference(ref, est, plain):
    d_ref, d = ref.solution_["dual_objective"], est.solution_["dual_objective"]
    assert ref.solution_["status"] == "optimal"
    # The certificate uses the capacities C·wᵢ: the weighted primal meets the dual.
    assert abs(ref.solution_["relative_gap"]) < 1e-8
    assert est.solution_["status"] == "optimal"
    assert abs(d - d_ref) <= 1e-6 * abs(d_ref)
    # ... and weighting changed the problem (the comparison would be empty otherwise).
    assert abs(plain.solution_["dual_objective"] - d_ref) > 1e-3 * abs(d_ref)


@pytest.mark.parametrize("model", list(MACHINES))
@pytest.mark.parametrize("solver", ["s2do", "online", "frank_wolfe"])
def test_three_classes_bias_free_solvers_match_cvxpy(model, solver):
    options = {"epochs": None} if solver == "online" else {}
    _assert_matches_reference(*_q3_fit(model, solver, False, **options))


@pytest.mark.parametrize("model", list(MACHINES))
def test_three_classes_with_bias_frank_wolfe_matches_cvxpy(model):
    _assert_matches_reference(*_q3_fit(model, "frank_wolfe", True))


@pytest.mark.parametrize("model", list(MACHINES))
def test_three_classes_linear_solver_matches_cvxpy(model):
    _assert_matches_reference(*_q3_fit(model, "linear", False, kernel="linear"))


def test_osqp_reference_agrees_with_cvxpy():
    X, y = _data(6, 3, 30)
    w = _weights(6, len(y))
    for model in ("cs", "msvm2"):
        a, b = (MultiClassSVC(model=model, gamma=GAMMA, fit_intercept=True, solver=s).fit(
            X, y, sample_weight=w) for s in ("cvxpy", "osqp"))
        d = a.solution_["dual_objective"]
        assert abs(b.solution_["dual_objective"] - d) <= 1e-6 * abs(d)


# --------------------------------------------------------------- the M-SVM²
def test_msvm2_weight_enters_as_the_kernel_shift():
    """The dual with shift 1/(2C wᵢ) meets the primal C Σ wᵢ (Σ ξ² + (Σ ξ)²); 1/(2C) does not."""
    X, y = _data(7, 3, 30)
    w = _weights(7, len(y))
    machine, kernel = make_machine("msvm2", 3), Kernel(X, "rbf", gamma=GAMMA)
    problem = DualProblem(machine, y, kernel, 0.8, False, sample_weight=w)
    np.testing.assert_allclose(problem.kernel_shift, 1.0 / (2 * 0.8 * w))
    assert np.all(np.isinf(problem.capacity))
    solution = get_solver("cvxpy").solve(problem)
    assert abs(diagnose(problem, solution).relative_gap) < 1e-9
    # The unweighted shift solves another problem: its α is not optimal for this primal.
    other = get_solver("cvxpy").solve(DualProblem(machine, y, kernel, 0.8, False))
    assert diagnose(problem, other.alpha).relative_gap > 1e-4


def test_hinge_capacities_are_c_times_weight():
    X, y = _data(8, 3, 20)
    w = _weights(8, len(y))
    C = 0.1
    problem = DualProblem(make_machine("cs", 3), y, Kernel(X, "rbf", gamma=GAMMA), C, False,
                          sample_weight=w)
    np.testing.assert_allclose(problem.capacity, C * w)
    assert not np.any(problem.kernel_shift)
    alpha = get_solver("cvxpy").solve(problem).alpha
    assert np.all(alpha.sum(axis=1) <= C * w * (1 + 1e-9))
    at_cap = alpha.sum(axis=1) >= C * w * (1 - 1e-9)
    assert np.any(at_cap)   # some capacities bind, at different values
    assert np.ptp(alpha.sum(axis=1)[at_cap]) > 0.1 * C


# -------------------------------------------------------------- identities
def test_balanced_equals_the_explicit_dict():
    X, y = _data(9, 3, 45)
    keep = np.r_[np.flatnonzero(y == 0)[:5], np.flatnonzero(y != 0)]  # unequal class sizes
    X, y = X[keep], np.array(["a", "b", "c"])[y[keep]]
    weights = compute_class_weight("balanced", classes=np.unique(y), y=y)
    assert not np.allclose(weights, 1.0)
    explicit = dict(zip(np.unique(y), weights, strict=True))
    a = MultiClassSVC(model="llw", gamma=GAMMA, class_weight="balanced").fit(X, y)
    b = MultiClassSVC(model="llw", gamma=GAMMA, class_weight=explicit).fit(X, y)
    np.testing.assert_array_equal(a.class_weight_, weights)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    c = MultiClassSVC(model="llw", gamma=GAMMA).fit(X, y)
    np.testing.assert_array_equal(c.class_weight_, np.ones(3))
    assert np.max(np.abs(a.decision_function(X) - c.decision_function(X))) > 1e-3


def test_class_weight_equals_sample_weight_per_class():
    X, y = _data(10, 3, 30)
    a = MultiClassSVC(model="ww", gamma=GAMMA, class_weight={0: 3.0, 2: 0.5}, tol=1e-9).fit(X, y)
    b = MultiClassSVC(model="ww", gamma=GAMMA, tol=1e-9).fit(
        X, y, sample_weight=np.array([3.0, 1.0, 0.5])[y])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-12)


@pytest.mark.parametrize("model", list(MACHINES))
@pytest.mark.parametrize("config", [dict(), dict(fit_intercept=True)], ids=["s2do", "fw-bias"])
def test_integer_weights_equal_repetition(model, config):
    """scikit-learn's own check (weights 0-4 against removed/repeated rows), dense and CSR,
    at a tolerance where the solvers' answers are the exact optimum to 1e-7."""
    est = MultiClassSVC(model=model, tol=1e-10, **config)
    check_sample_weight_equivalence_on_dense_data("MultiClassSVC", est)
    check_sample_weight_equivalence_on_sparse_data("MultiClassSVC", est)


@pytest.mark.parametrize("config", [dict(solver="online", epochs=None),
                                    dict(solver="linear", kernel="linear")],
                         ids=["online", "linear"])
def test_integer_weights_equal_repetition_other_solvers(config):
    check_sample_weight_equivalence_on_dense_data(
        "MultiClassSVC", MultiClassSVC(model="cs", tol=1e-10, **config))


def test_a_0d_weight_is_the_scalar_it_holds():
    """np.array(2.0) failed in scikit-learn's check ("Input should have at least 1
    dimension", naming no argument) where 2.0 and np.float64(2.0) are every weight 2."""
    X, y = _data(13, 3, 20)
    every = MultiClassSVC(tol=1e-9).fit(X, y, sample_weight=np.full(len(y), 2.0))
    zero_d = MultiClassSVC(tol=1e-9).fit(X, y, sample_weight=np.array(2.0))
    np.testing.assert_array_equal(zero_d.decision_function(X), every.decision_function(X))
    stream = MultiClassSVC(solver="online", random_state=0)
    stream.partial_fit(X, y, classes=[0, 1, 2], sample_weight=np.array(2))
    reference = MultiClassSVC(solver="online", random_state=0)
    reference.partial_fit(X, y, classes=[0, 1, 2], sample_weight=np.full(len(y), 2.0))
    np.testing.assert_array_equal(stream.decision_function(X), reference.decision_function(X))
    with pytest.raises(ValueError, match="(?i)negative"):
        MultiClassSVC().fit(X, y, sample_weight=np.array(-1.0))


def test_weighted_gamma_scale_is_the_repeated_variance():
    X, y = _data(11, 3, 20)
    w = np.arange(len(y)) % 3
    a = MultiClassSVC().fit(X, y, sample_weight=w)
    b = MultiClassSVC().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)
    assert a.gamma_ != pytest.approx(MultiClassSVC().fit(X, y).gamma_, rel=1e-3)


def test_weighted_gamma_scale_ignores_the_weights_scale():
    # The weighted variance overflowed (sum of weights = inf) for large weights, and
    # the fit failed, blaming the variance of X.
    X, y = _data(11, 3, 20)
    w = (np.arange(len(y)) % 3 + 1.0)
    a = MultiClassSVC().fit(X, y, sample_weight=w)
    b = MultiClassSVC().fit(X, y, sample_weight=w * 1e307)
    assert b.gamma_ == pytest.approx(a.gamma_, rel=1e-12)


@pytest.mark.parametrize("model", ["cs", "msvm2"])
@pytest.mark.parametrize("precomputed", [False, True])
def test_zero_weights_are_left_out(model, precomputed):
    """A zero weight equals removing the example (as libsvm); support_ indexes rows of X."""
    X, y = _data(12, 3, 40)
    w = _weights(12, len(y))
    w[::4] = 0.0
    keep = w > 0
    kw = dict(model=model, kernel="precomputed" if precomputed else "rbf", gamma=GAMMA, tol=1e-9)
    K = rbf_kernel(X, X, gamma=GAMMA)
    data = K if precomputed else X
    sub = K[np.ix_(keep, keep)] if precomputed else X[keep]
    a = MultiClassSVC(**kw).fit(data, y, sample_weight=w)
    b = MultiClassSVC(**kw).fit(sub, y[keep], sample_weight=w[keep])
    test = K if precomputed else X
    test_b = K[:, keep] if precomputed else X
    np.testing.assert_allclose(a.decision_function(test), b.decision_function(test_b),
                               atol=1e-12)
    np.testing.assert_array_equal(a.support_, np.flatnonzero(keep)[b.support_])
    assert np.all(w[a.support_] > 0)
    assert a.shape_fit_ == data.shape
    assert a.solution_["status"] == "optimal"


def test_zero_class_weight_keeps_the_class():
    X, y = _data(13, 3, 30)
    est = MultiClassSVC(model="ww", gamma=GAMMA, class_weight={1: 0.0}).fit(X, y)
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    assert not np.any(y[est.support_] == 1)
    assert est.n_support_[1] == 0 and est.decision_function(X).shape == (len(y), 3)


# ------------------------------------------------------------- partial_fit
def test_partial_fit_with_weights_equals_one_online_pass():
    X, y = _data(14, 3, 40)
    w = _weights(14, len(y))
    params = dict(model="llw", gamma=0.3, random_state=0, class_weight={0: 2.0})
    fit = MultiClassSVC(solver="online", **params).fit(X, y, sample_weight=w)
    stream = MultiClassSVC(solver="online", **params).partial_fit(X, y, classes=[0, 1, 2],
                                                                  sample_weight=w)
    np.testing.assert_allclose(stream.decision_function(X), fit.decision_function(X),
                               atol=1e-12)
    plain = MultiClassSVC(solver="online", **params | {"class_weight": None}).fit(X, y)
    assert np.max(np.abs(plain.decision_function(X) - fit.decision_function(X))) > 1e-3
    np.testing.assert_array_equal(stream.class_weight_, [2.0, 1.0, 1.0])


def test_partial_fit_continues_a_weighted_fit():
    """The support vectors keep their weights (here: the M-SVM² shifts 1/(2C wᵢ), which the
    dual objective reads) when partial_fit continues a fit by another solver."""
    X, y = _data(15, 3, 40)
    w = _weights(15, len(y))
    est = MultiClassSVC(model="msvm2", gamma=GAMMA, tol=1e-9).fit(X, y, sample_weight=w)
    before, dual = est.decision_function(X), est.solution_["dual_objective"]
    est.partial_fit(X[:2], y[:2], sample_weight=[0.0, 0.0])   # skipped: the model stays
    np.testing.assert_allclose(est.decision_function(X), before, atol=1e-9)
    assert est.solution_["dual_objective"] == pytest.approx(dual, rel=1e-9)
    assert est.solution_["n_seen"] == len(y) + 2


# --------------------------------------------------------------- bounds
def test_weighted_loo_error_is_exact_and_bounded():
    X, y = _data(16, 3, 24, spread=4.0)
    w = _weights(16, len(y))
    est = MultiClassSVC(model="msvm2", C=2.0, gamma=GAMMA, solver="cvxpy")
    loo = loo_error(est, X, y, sample_weight=w)
    brute = 0
    for p in range(len(y)):
        keep = np.arange(len(y)) != p
        fit = MultiClassSVC(model="msvm2", C=2.0, gamma=GAMMA, solver="cvxpy").fit(
            X[keep], y[keep], sample_weight=w[keep])
        brute += int(fit.predict(X[p:p + 1])[0] != y[p])
    assert loo.n_errors == brute > 0
    setup = est.prepare_fit(X, y, w)
    bound = radius_margin_bound(setup.problem, get_solver("cvxpy").solve(setup.problem))
    assert bound.n_candidates >= brute and bound.bound >= brute
    with pytest.raises(ValueError, match="weight 0"):
        loo_error(est, X, y, sample_weight=np.r_[0.0, w[1:]])


def test_weighted_radius_margin_search_with_bias():
    X, y = _data(17, 3, 30, spread=3.0)
    w = _weights(17, len(y))
    search = msvm.RadiusMarginSearch(MultiClassSVC(model="msvm2", fit_intercept=True,
                                                   solver="cvxpy"),
                                     {"C": [0.5, 2.0], "gamma": [GAMMA]}).fit(X, y,
                                                                             sample_weight=w)
    best = search.best_estimator_
    ref = MultiClassSVC(model="msvm2", fit_intercept=True, solver="cvxpy",
                        **search.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(best.decision_function(X), ref.decision_function(X), atol=1e-6)
    assert np.all(search.cv_results_["bound"] >= search.cv_results_["n_candidates"])


# ------------------------------------------------------------- metadata routing
def _search(estimator=None):
    return msvm.RadiusMarginSearch(estimator, {"C": [0.5, 4.0], "gamma": [GAMMA]})


def _requesting(value=True):
    return MultiClassSVC(model="msvm2", tol=1e-9).set_fit_request(sample_weight=value)


@pytest.mark.parametrize("routing", [False, True])
def test_search_weights_reach_the_fits(routing):
    """Without routing the weights go to the estimator (as GridSearchCV's fit params); with
    routing, by the estimator's request."""
    X, y = _data(23, 3, 36)
    w = _weights(23, len(y), 0.1, 5.0)
    with config_context(enable_metadata_routing=routing):
        search = _search(_requesting() if routing else MultiClassSVC(model="msvm2", tol=1e-9))
        search.fit(X, y, sample_weight=w)
        ref = MultiClassSVC(model="msvm2", tol=1e-9, **search.best_params_)
        weighted = ref.fit(X, y, sample_weight=w).decision_function(X)
        plain = clone(ref).fit(X, y).decision_function(X)
    scores = search.decision_function(X)
    np.testing.assert_allclose(scores, weighted, atol=1e-6)
    assert np.abs(scores - plain).max() > 1e-2


def test_search_refuses_weights_its_estimator_does_not_request():
    X, y = _data(23, 3, 36)
    w = _weights(23, len(y))
    with config_context(enable_metadata_routing=True):
        with pytest.raises(UnsetMetadataPassedError, match="MultiClassSVC.set_fit_request"):
            _search().fit(X, y, sample_weight=w)
        with pytest.raises(TypeError, match="not routed to any object"):
            _search(_requesting(False)).fit(X, y, sample_weight=w)
        unweighted = _search(_requesting(False)).fit(X, y)   # nothing passed: no error
    assert unweighted.best_index_ in (0, 1)
    # The search routes its fit's weights: a request of its own would be ignored.
    assert not hasattr(_search(), "set_fit_request")


def test_search_is_routed_inside_pipeline_and_cross_validate():
    """A Pipeline routes the weights through the search to its estimator; the search's
    own score request weights cross_validate's default scoring."""
    X, y = _data(24, 3, 36, spread=6.0)
    w = _weights(24, len(y), 0.1, 5.0)
    with config_context(enable_metadata_routing=True):
        scaler = StandardScaler().set_fit_request(sample_weight=False)
        pipe = make_pipeline(scaler, _search(_requesting())).fit(X, y, sample_weight=w)
        alone = _search(_requesting()).fit(StandardScaler().fit_transform(X), y,
                                           sample_weight=w)
        search = _search(_requesting()).set_score_request(sample_weight=True)
        result = cross_validate(search, X, y, cv=3, params={"sample_weight": w},
                                return_estimator=True, return_indices=True)
    np.testing.assert_allclose(pipe[-1].decision_function(scaler.transform(X)),
                               alone.decision_function(scaler.transform(X)), atol=1e-12)
    unweighted = []
    for fitted, train, test, score in zip(result["estimator"], result["indices"]["train"],
                                          result["indices"]["test"], result["test_score"],
                                          strict=True):
        ref = MultiClassSVC(model="msvm2", tol=1e-9, **fitted.best_params_).fit(
            X[train], y[train], sample_weight=w[train])
        np.testing.assert_allclose(fitted.decision_function(X), ref.decision_function(X),
                                   atol=1e-6)
        assert score == fitted.score(X[test], y[test], sample_weight=w[test])
        unweighted.append(fitted.score(X[test], y[test]))
    assert not np.array_equal(result["test_score"], unweighted)   # the weights mattered


# -------------------------------------------------------- files and CLI
@pytest.mark.parametrize("labels", [np.array([3, 5, 7]), np.array(["x", "y", "z"])])
def test_model_file_keeps_class_weight(tmp_path, labels):
    X, y = _data(18, 3, 30)
    y = labels[y]
    cw = {labels[0]: 2.0, labels[2]: 0.5}
    est = MultiClassSVC(model="ww", gamma=GAMMA, class_weight=cw).fit(X, y)
    msvm.save(est, tmp_path / "m.npz")
    back = msvm.load(tmp_path / "m.npz")
    assert back.get_params()["class_weight"] == cw
    np.testing.assert_array_equal(back.class_weight_, est.class_weight_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    refit = back.fit(X, y)   # the loaded parameters train the same machine
    np.testing.assert_allclose(refit.decision_function(X), est.decision_function(X), atol=1e-12)


def test_cli_libsvm_class_weights(tmp_path, capsys):
    X, y = _data(19, 3, 30)
    X, y = np.round(X, 6), y + 1   # as written to the file
    path = tmp_path / "train.txt"
    path.write_text("".join(f"{label} 1:{a:.6f} 2:{b:.6f}\n" for label, (a, b) in zip(y, X,
                                                                                       strict=True)))
    model = tmp_path / "m.model"
    assert main(["train", "-q", "-g", str(GAMMA), "-e", "1e-10", "-w1", "4", "-w3", "0.25",
                 str(path), str(model)]) == 0
    loaded = msvm.load(model)
    assert loaded.class_weight == {1: 4.0, 3: 0.25}
    np.testing.assert_array_equal(loaded.class_weight_, [4.0, 1.0, 0.25])
    est = MultiClassSVC(gamma=GAMMA, tol=1e-10, class_weight={1: 4.0, 3: 0.25}).fit(X, y)
    np.testing.assert_allclose(loaded.decision_function(X), est.decision_function(X),
                               atol=1e-8)
    assert main(["train", "-q", "-w9", "1", str(path), str(model)]) == 2
    assert "not classes: [9]" in capsys.readouterr().err
    assert main(["train", "-q", "-w1", "-2", str(path), str(model)]) == 2
    assert main(["train", "-q", "--class-weight", "balanced", "-w1", "2", str(path),
                 str(model)]) == 2


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(("weight", "message"), [
    (lambda n: -np.ones(n), "(?i)negative"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "NaN"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], "infinity"),
    (lambda n: np.ones(n + 1), "shape"),
    (lambda n: np.ones((n, 2)), "1D"),
    (lambda n: np.zeros(n), "zero"),
])
def test_bad_sample_weight(weight, message):
    X, y = _data(20, 3, 12)
    with pytest.raises(ValueError, match=message):
        MultiClassSVC().fit(X, y, sample_weight=weight(len(y)))


@pytest.mark.parametrize(("class_weight", "message"), [
    ({0: -1.0}, "must be a finite number >= 0"),
    ({0: np.nan}, "must be a finite number >= 0"),
    ({5: 1.0}, "not classes"),
    ({0: 0.0, 1: 0.0, 2: 0.0}, "weight zero"),
    ("lots", "class_weight"),
])
def test_bad_class_weight(class_weight, message):
    X, y = _data(21, 3, 12)
    with pytest.raises(ValueError, match=message):
        MultiClassSVC(class_weight=class_weight).fit(X, y)


def test_partial_fit_refuses_balanced_and_keeps_the_model():
    X, y = _data(22, 3, 12)
    est = MultiClassSVC(solver="online").partial_fit(X, y, classes=[0, 1, 2])
    before = est.decision_function(X)
    est.set_params(class_weight="balanced")
    # No partial_fit at all (hasattr False, as scikit-learn's tools expect), saying why.
    assert not hasattr(est, "partial_fit")
    with pytest.raises(AttributeError, match="partial_fit takes class_weight=None or a dict"):
        est.partial_fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), before)


def test_partial_fit_first_chunk_of_zero_weights():
    """gamma='scale' on a first chunk whose weights are all 0 said the variance of X
    'overflows float64'; with a linear kernel, which has no γ, it failed the same way."""
    X, y = _data(25, 3, 12)
    zero = np.zeros(len(y))
    with pytest.raises(ValueError, match="every sample_weight is 0; give gamma as a number"):
        MultiClassSVC().partial_fit(X, y, classes=[0, 1, 2], sample_weight=zero)
    linear = MultiClassSVC(kernel="linear").partial_fit(X, y, classes=[0, 1, 2],
                                                        sample_weight=zero)
    assert linear.solution_["n_seen"] == len(y) and len(linear.support_) == 0
    linear.partial_fit(X, y)
    assert len(linear.support_) > 0


def test_problem_refuses_non_positive_weights():
    X, y = _data(23, 3, 6)
    kernel = Kernel(X, "rbf", gamma=GAMMA)
    for bad in (np.r_[0.0, np.ones(5)], -np.ones(6), np.ones(5)):
        with pytest.raises(ValueError, match="sample_weight"):
            DualProblem(make_machine("ww", 3), y, kernel, 1.0, False, sample_weight=bad)


def test_sparse_and_dense_weighted_fits_agree():
    X, y = _data(24, 3, 30)
    w = _weights(24, len(y))
    a = MultiClassSVC(model="cs", tol=1e-9).fit(X, y, sample_weight=w)
    b = MultiClassSVC(model="cs", tol=1e-9).fit(sp.csr_matrix(X), y, sample_weight=w)
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-8)
