"""The online LaRank-style solver (solver='online') and MultiClassSVC.partial_fit.

Optimality.  With ``epochs=None`` the solver stops when a pass over every
pattern takes no step after the support patterns were optimised to ``tol``:
every variable then violates the KKT conditions by at most ``tol`` (in
gradient units, as :func:`msvm.diagnostics.kkt_violation` measures it), so
the dual objective must match the cvxpy (Clarabel) reference to 1e-5
relative at tol 1e-6 -- the threshold of the validation rows.

One pass.  ``epochs=1`` is an approximation: the tests hold it to a fraction
of the optimal dual on small problems and check what must hold exactly
(feasibility, monotone build-up curves, reproducibility, the first epoch of
a longer run being the one-epoch run, one chunk of partial_fit being fit).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel

from msvm import MultiClassSVC
from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import make_machine
from msvm.problem import DualProblem
from msvm.solvers import get_solver, resolve_solver

from problem_factory import FAMILY, MODELS, blobs, degenerate_llw, generated_cases, make_problem

TOL = 1e-6
CASES = generated_cases(10)
ALL_MACHINES = MODELS + FAMILY
STRATEGIES = ("s2do_all", "random_pattern_s2do_all", "random_pattern_s2do_pattern")


def _online():
    from msvm.solvers import online

    return online


_REFERENCES: dict = {}


def _reference(key, problem) -> float:
    """Dual objective of the cvxpy (Clarabel) reference, cached per problem."""
    if key not in _REFERENCES:
        _REFERENCES[key] = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    return _REFERENCES[key]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1.0)


# -------------------------------------------------------------- optimality
@pytest.mark.parametrize("model", ALL_MACHINES)
def test_infinite_epochs_match_reference(model):
    """online ×∞ (epochs=None, tol 1e-6) reaches the reference optimum of every bias-free row."""
    online = _online()
    for index in (1, 2, 5, 7):
        name, X, y, C = CASES[index]
        problem = make_problem(model, X, y, C=C)
        solution = online.solve(problem, tol=TOL, epochs=None, random_state=index)
        assert solution.status == "optimal", (name, solution.info)
        assert problem.check_feasible(solution.alpha, atol=1e-12), name
        d = diagnose(problem, solution)
        assert d.kkt_violation <= TOL, (name, d.kkt_violation)
        assert _rel(d.dual_objective, _reference((model, index, "rbf"), problem)) <= 1e-5, name
        # The running dual the solver reports is the objective of the α it returns.
        assert _rel(solution.info["dual_objective_running"], d.dual_objective) <= 1e-10


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_each_strategy(model, strategy):
    """Every strategy converges (×∞) and gets most of the dual in one pass (×1)."""
    online = _online()
    X, y = blobs(4, 4, 160, spread=2.0)
    problem = make_problem(model, X, y, C=1.0)
    reference = _reference((model, "blobs4-160"), problem)
    full = online.solve(problem, tol=TOL, epochs=None, online_strategy=strategy, random_state=0)
    assert full.info["strategy"] == strategy
    assert _rel(diagnose(problem, full).dual_objective, reference) <= 1e-5
    one = online.solve(problem, tol=1e-3, epochs=1, online_strategy=strategy, random_state=0)
    assert one.status == "epoch_limit" and one.info["epochs"] == 1
    assert problem.check_feasible(one.alpha, atol=1e-12)
    d1 = diagnose(problem, one).dual_objective
    # Regression guard, not a derived limit (one pass has no accuracy guarantee).
    # Measured over 5 seeds: ≥ 0.93 (WW) to 0.98 (LLW) of the optimum with the '_all'
    # strategies, 0.86-0.97 inside one random pattern (which cannot trade mass between
    # patterns; seed 004's Table 5.3 finds it the weakest too).
    floor = 0.8 if strategy == "random_pattern_s2do_pattern" else 0.9
    assert floor * reference <= d1 <= reference * (1 + 1e-9), (d1, reference)
    # Old steps were scheduled (the adaptive scheduler does not starve them).
    assert one.info["steps"]["two_old"] + one.info["steps"]["two_old_supports"] > 0


@pytest.mark.parametrize("model", ["ww", "cs", "llw", "msvm2"])
def test_fast_and_generic_bookkeeping_agree(model):
    """S2DO's structured bookkeeping (the default for these machines) and the generic one."""
    online = _online()
    X, y = blobs(5, 5, 150, spread=2.0)
    problem = make_problem(model, X, y, C=3.0)
    reference = _reference((model, "blobs5-150"), problem)
    for fast in (True, False):
        solution = online.solve(problem, tol=TOL, epochs=None, random_state=4, fast=fast)
        assert _rel(diagnose(problem, solution).dual_objective, reference) <= 1e-5, fast
        d = diagnose(problem, solution)
        assert d.kkt_violation <= TOL
    # One pass without block steps: the same algorithm, so nearly the same dual (paths
    # differ by round-off).
    one = [diagnose(problem, online.solve(problem, epochs=1, random_state=4, fast=f,
                                          block_steps=False))
           for f in (True, False)]
    assert one[0].dual_objective == pytest.approx(one[1].dual_objective, rel=0.02)


@pytest.mark.parametrize("kernel", ["linear", "poly", "laplace"])
def test_other_kernels_match_reference(kernel):
    online = _online()
    name, X, y, C = CASES[4]
    for model in ("ww", "llw"):
        problem = DualProblem(make_machine(model, 3), y, Kernel(X, kernel, gamma=0.3), min(C, 1.0),
                              False)
        solution = online.solve(problem, tol=TOL, epochs=None, random_state=1)
        assert solution.status == "optimal"
        assert _rel(diagnose(problem, solution).dual_objective,
                    _reference((model, kernel), problem)) <= 1e-5, (model, kernel)


def test_sparse_and_precomputed_match_reference():
    """CSR features and a precomputed Gram matrix reach the same optimum as dense rbf."""
    online = _online()
    name, X, y, C = CASES[5]
    Q = int(y.max()) + 1
    dense = make_problem("cs", X, y, C=C)
    reference = _reference(("cs", 5, "rbf"), dense)
    csr = DualProblem(make_machine("cs", Q), y, Kernel(sp.csr_matrix(X), "rbf", gamma=0.5), C,
                      False)
    gram = DualProblem(make_machine("cs", Q), y,
                       Kernel(rbf_kernel(X, gamma=0.5), "precomputed"), C, False)
    for problem in (csr, gram):
        solution = _online().solve(problem, tol=TOL, epochs=None, random_state=2)
        assert solution.status == "optimal"
        assert _rel(diagnose(problem, solution).dual_objective, reference) <= 1e-5
    # A precomputed Gram matrix costs no kernel evaluation.
    assert online.solve(gram, epochs=1, random_state=2).n_kernel_evaluations == 0


def test_tiny_cache_still_converges():
    """Rows evicted and recomputed (budget of a few rows) change nothing at the optimum."""
    online = _online()
    name, X, y, C = CASES[8]
    problem = make_problem("llw", X, y, C=C)
    small = online.solve(problem, tol=TOL, epochs=None, cache_size=0.002, random_state=0)
    large = online.solve(problem, tol=TOL, epochs=None, cache_size=100, random_state=0)
    reference = _reference(("llw", 8, "rbf"), problem)
    assert _rel(diagnose(problem, small).dual_objective, reference) <= 1e-5
    # The budget held (up to the two pinned rows), and recomputation cost evaluations.
    row = 8 * problem.n_samples * 1.2 + 256
    assert small.info["cache_peak_bytes"] <= 0.002 * 2**20 + 2 * row
    assert small.n_kernel_evaluations > large.n_kernel_evaluations


@pytest.mark.parametrize("sparse", [False, True])
def test_cached_rows_follow_the_slots(sparse):
    """Every row of the online solver's row cache is a kernel row over the current slots.

    A tiny budget (a few rows) makes rows evicted, recomputed, extended when a
    pattern stays, permuted when one leaves, and re-keyed by training index and
    back over two epochs; each cached row must still equal k(x_key, x_s) over
    the slots s < its length, and the budget hold up to the two pinned rows.
    The cache is checked every 40 steps (where a row is keyed depends on the
    path, so the check must see both kinds somewhere along it).
    """
    online = _online()
    X, y = blobs(4, 5, 300, spread=2.0)
    problem = make_problem("cs", X, y, C=1.0)
    m = problem.n_samples
    budget = 0.01
    Xin = sp.csr_matrix(X) if sparse else X
    state = online.new_state(
        problem.machine, problem.C, layout=1 if sparse else 0, n_features=X.shape[1],
        kernel_name="rbf", gamma=0.5, degree=3.0, coef0=0.0, gram=None, n_gid=m, tol=1e-3,
        strategy=0, cache_size=budget, seed=5, kcost=8.0)
    arrays = online.batch_arrays(Xin, "rbf", 0.5, 3.0, 0.0)
    rng = np.random.RandomState(0)
    K = rbf_kernel(X, gamma=0.5)
    kinds = set()
    for _ in range(2):
        state.set_batch(arrays["X"], arrays["data"], arrays["indices"], arrays["indptr"],
                        arrays["sqnorm"], arrays["l1norm"], arrays["kdiag"], problem.y,
                        np.arange(m, dtype=np.intp), rng.permutation(m).astype(np.intp))
        done = False
        while not done:
            done = state.run_pass(40, 60.0) == 0
            slots = state.support()[0]
            rows = state.rows.as_dict()
            kinds |= {kind for kind, _ in rows}
            for (kind, key), row in rows.items():
                pattern = slots[key] if kind == "slot" else key
                np.testing.assert_allclose(row, K[pattern, slots[:len(row)]], rtol=0, atol=1e-12)
    assert kinds == {"slot", "index"}
    assert state.n_removed > 0 and state.rows.n_misses > len(rows)
    assert state.rows.peak_bytes <= budget * 2**20 + 2 * (8 * m * 1.2 + 256)


# ----------------------------------------------------- bookkeeping, epochs
def test_stored_gradients_are_exact():
    """G of the support patterns after one pass equals ∇J computed from scratch."""
    online = _online()
    X, y = blobs(6, 5, 150, spread=2.5)
    for model, fast in (("ww", True), ("cs", True), ("llw", True), ("msvm2", True),
                        ("cs", False), ("llw", False), ("atm", True)):
        problem = make_problem(model, X, y, C=2.0)
        solution = online.solve(problem, epochs=1, random_state=3, keep_state=True, fast=fast)
        state = solution.info["online_state"]
        G = problem.gradient(solution.alpha)
        np.testing.assert_allclose(state["G"], G[state["gids"]], atol=1e-9)
        np.testing.assert_array_equal(state["alpha"], solution.alpha[state["gids"]])
        # Exactly the patterns with a non-zero α row are kept.
        kept = np.zeros(problem.n_samples, bool)
        kept[state["gids"]] = True
        np.testing.assert_array_equal(kept, np.any(solution.alpha != 0, axis=1))


def test_reproducible_and_epochs_extend():
    online = _online()
    X, y = blobs(2, 4, 200, spread=2.0)
    problem = make_problem("cs", X, y, C=1.0)
    a = online.solve(problem, epochs=1, random_state=7)
    b = online.solve(problem, epochs=1, random_state=7)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert (a.n_iter, a.n_kernel_evaluations) == (b.n_iter, b.n_kernel_evaluations)
    c = online.solve(problem, epochs=1, random_state=8)
    assert not np.array_equal(a.alpha, c.alpha)
    # Two epochs start with the same first epoch, and J only decreases.
    two = online.solve(problem, epochs=2, random_state=7)
    assert two.info["epochs"] == 2 and two.n_iter > a.n_iter
    assert diagnose(problem, two).dual_objective >= diagnose(problem, a).dual_objective


def test_kernel_evaluations_are_counted_once_per_pair():
    """With room for every row, one pass evaluates each pair of patterns at most once."""
    online = _online()
    X, y = blobs(9, 3, 180, spread=3.0)
    problem = make_problem("llw", X, y, C=10.0)
    m = problem.n_samples
    solution = online.solve(problem, epochs=1, cache_size=100, random_state=0)
    assert 0 < solution.n_kernel_evaluations <= m * (m - 1) // 2
    assert solution.info["row_misses"] == m  # one row per pattern fed, computed once
    # The batch solver computes whole rows of length m.
    batch = get_solver("s2do").solve(problem, tol=1e-3, cache_size=100)
    assert batch.n_kernel_evaluations % m == 0


def test_build_up_curve():
    """Monotone dual and kernel evaluations, the final point is the solution, test error."""
    online = _online()
    X, y = blobs(1, 3, 400, spread=2.5)
    Xt, yt = X[300:], y[300:]
    problem = make_problem("ww", X[:300], y[:300], C=1.0)
    solution = online.solve(problem, epochs=2, random_state=0, trace=1e-4, test_set=(Xt, yt))
    curve = solution.info["curve"]
    assert len(curve["time"]) >= 3
    for key in ("time", "kernel_evaluations", "dual", "n_iter"):
        assert np.all(np.diff(curve[key]) >= 0), key
    assert curve["dual"][0] == 0.0 and curve["kernel_evaluations"][0] == 0
    assert curve["kernel_evaluations"][-1] == solution.n_kernel_evaluations
    assert curve["n_iter"][-1] == solution.n_iter
    assert _rel(curve["dual"][-1], diagnose(problem, solution).dual_objective) <= 1e-10
    errors = np.array(curve["test_error"])
    assert np.all((errors >= 0) & (errors <= 1))
    clf = MultiClassSVC(model="ww", C=1.0, gamma=0.5, solver="online", random_state=0,
                        epochs=2).fit(X[:300], y[:300])
    assert errors[-1] == pytest.approx(1 - clf.score(Xt, yt), abs=0.02)
    # The batch solver records the same kind of curve.
    batch = get_solver("s2do").solve(problem, tol=1e-3, trace=1e-4, test_set=(Xt, yt))
    bcurve = batch.info["curve"]
    assert np.all(np.diff(bcurve["dual"]) >= -1e-9)
    assert bcurve["kernel_evaluations"][-1] == batch.n_kernel_evaluations
    assert "test_error" in bcurve


def test_the_active_set_finish_solves_a_degenerate_problem():
    """As S2DO's (tests/test_s2do_options.py): without the finish the online ×∞ solver
    needs more than twice the steps after which the finish takes over; with it, the next
    pass over the training set certifies the finish's answer within a few steps (dense,
    CSR and precomputed layouts of the same problem, whose support patterns are rebuilt
    from the finish's α), at the reference optimum within the derived limits."""
    from msvm.solvers import _qp
    from validation.registry import derived_limits

    online = _online()
    problem = degenerate_llw()
    trigger = _qp.finish_after(problem, online.FINISH_AFTER)
    reference = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    plain = online.solve(problem, tol=TOL, epochs=None, random_state=0, finish=False)
    assert plain.status == "optimal" and plain.n_iter > 2 * trigger
    X = problem.kernel.X
    layouts = [problem,
               DualProblem(problem.machine, problem.y, Kernel(sp.csr_matrix(X), "linear"),
                           problem.C, False),
               DualProblem(problem.machine, problem.y, Kernel(X @ X.T, "precomputed"),
                           problem.C, False)]
    for each in layouts:
        solution = online.solve(each, tol=TOL, epochs=None, random_state=0)
        assert solution.status == "optimal" and solution.info["finish_time"] > 0
        assert solution.n_iter <= trigger + 10
        found = diagnose(each, solution)
        limits = derived_limits(each, solution.alpha, TOL, reference, 1.0)
        assert found.kkt_violation <= TOL * (1 + 1e-6)
        assert _rel(found.dual_objective, reference) <= limits["dual_rel_diff"]


def test_max_iter_status():
    online = _online()
    name, X, y, C = CASES[6]
    problem = make_problem("ww", X, y, C=C)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        solution = online.solve(problem, epochs=None, max_iter=5, random_state=0)
    assert solution.status == "max_iter" and solution.n_iter == 5
    assert problem.check_feasible(solution.alpha)


def test_verbose_progress(capsys):
    name, X, y, C = CASES[2]
    _online().solve(make_problem("cs", X, y, C=C), epochs=None, tol=TOL, verbose=True)
    err = capsys.readouterr().err   # msvm._progress reports on stderr
    assert err.startswith("online  ") and "epoch 1" in err and "support patterns" in err
    assert err.rstrip().endswith("done")


# -------------------------------------------------------------- estimator
@pytest.fixture(scope="module")
def stream_data():
    """4 overlapping classes (test accuracy ≈ 0.77), 400 training and 300 test points."""
    X, y = make_blobs(n_samples=700, centers=4, cluster_std=1.5, random_state=0)
    return X[:400], y[:400], X[400:], y[400:]


def test_estimator_online_matches_s2do(stream_data):
    X, y, Xt, yt = stream_data
    for model in ("ww", "llw"):
        s2do = MultiClassSVC(model=model, C=1.0, solver="s2do", tol=TOL).fit(X, y)
        onl = MultiClassSVC(model=model, C=1.0, solver="online", epochs=None, tol=TOL,
                            random_state=0).fit(X, y)
        assert onl.solution_["status"] == "optimal" and onl.solution_["solver"] == "online"
        assert _rel(onl.solution_["dual_objective"], s2do.solution_["dual_objective"]) <= 1e-6
        assert onl.solution_["kkt_violation"] <= TOL
        assert np.mean(onl.predict(Xt) == s2do.predict(Xt)) >= 0.99
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # epoch_limit is not a failure
        one = MultiClassSVC(model="cs", solver="online", random_state=0).fit(X, y)
    assert one.solution_["status"] == "epoch_limit" and one.n_iter_ > 0


def test_partial_fit_one_chunk_is_fit(stream_data):
    X, y, _, _ = stream_data
    for model in ("ww", "cs", "llw", "msvm2", "mmr"):
        fit = MultiClassSVC(model=model, solver="online", random_state=0).fit(X, y)
        part = MultiClassSVC(model=model, random_state=0).partial_fit(X, y, classes=[0, 1, 2, 3])
        np.testing.assert_array_equal(part.support_, fit.support_)
        np.testing.assert_array_equal(part.dual_coef_, fit.dual_coef_)
        np.testing.assert_array_equal(part.support_vectors_, fit.support_vectors_)
        np.testing.assert_array_equal(part.n_support_, fit.n_support_)
        assert part.n_iter_ == fit.n_iter_ and part.gamma_ == fit.gamma_
        assert part.solution_["dual_objective"] == pytest.approx(fit.solution_["dual_objective"],
                                                                 rel=1e-9)


def test_partial_fit_stream_approaches_fit(stream_data):
    X, y, Xt, yt = stream_data
    fit = MultiClassSVC(model="llw", solver="online", random_state=0).fit(X, y)
    part = MultiClassSVC(model="llw", random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 8):
        part.partial_fit(X[chunk], y[chunk], classes=np.unique(y))
    assert part.solution_["n_seen"] == len(y) and part.shape_fit_ == X.shape
    assert part.support_.max() < len(y) and np.all(np.diff(part.support_) > 0)
    # Regression guard, not a derived limit.  Measured over 3 seeds: dual ratio
    # 1.005-1.006, accuracy within 0.01 of fit's.
    assert part.solution_["dual_objective"] >= 0.97 * fit.solution_["dual_objective"]
    assert abs(part.score(Xt, yt) - fit.score(Xt, yt)) <= 0.03
    # The model is h(x) = Σ β k(sv, x): the attributes are consistent with predict.
    K = rbf_kernel(Xt, part.support_vectors_, gamma=part.gamma_)
    np.testing.assert_allclose(part.decision_function(Xt), K @ part.dual_coef_, atol=1e-10)
    # Memory: only support patterns are stored.
    stats = part._stream.state.stats()
    assert stats["n_support_patterns"] == len(part._stream.support()[0]) < len(y)


def test_partial_fit_continues_fits_and_pickles(stream_data):
    X, y, Xt, yt = stream_data
    # After a fit by another solver: starts from its support vectors and α.
    s2do = MultiClassSVC(model="cs", C=1.0, solver="auto", tol=TOL).fit(X[:300], y[:300])
    before = s2do.solution_["dual_objective"]
    s2do.partial_fit(X[300:], y[300:])
    assert s2do.solution_["solver"] == "online"
    assert s2do.solution_["dual_objective"] >= before * (1 - 1e-9)
    # The stream numbers the second chunk's patterns from 300: some of them joined.
    new = s2do.support_[s2do.support_ >= 300]
    assert len(new) > 0 and new.max() < len(X)
    assert s2do.shape_fit_[0] == len(X)
    # After an online fit, and through pickling.
    onl = MultiClassSVC(model="cs", C=1.0, solver="online", random_state=0).fit(X[:200], y[:200])
    onl.partial_fit(X[200:300], y[200:300])
    copy = pickle.loads(pickle.dumps(onl))
    np.testing.assert_array_equal(copy.dual_coef_, onl.dual_coef_)
    np.testing.assert_array_equal(copy.predict(Xt), onl.predict(Xt))
    for est in (onl, copy):
        est.partial_fit(X[300:], y[300:])
        assert est.solution_["n_seen"] == 400
    # The copy's cache starts empty, so its scheduler (which counts kernel evaluations as
    # work) may take another path: close, not identical (a regression guard).
    assert abs(copy.score(Xt, yt) - onl.score(Xt, yt)) <= 0.05


@pytest.mark.parametrize("change", [dict(C=10.0), dict(model="cs"), dict(kernel="linear"),
                                    dict(gamma=5.0), dict(coef0=1.0),
                                    dict(class_weight={0: 2.0})])
@pytest.mark.parametrize("start", ["partial_fit", "fit"])
def test_partial_fit_refuses_changed_problem_parameters(stream_data, change, start):
    """The stream's support patterns and α belong to the problem they were fitted on:
    continued after set_params(C=..., kernel=...), partial_fit went on with the old
    problem (or, after a fit, started from an α infeasible for the new one) while the
    estimator reported the new parameters (kernel='linear' even predicted through a coef_
    of the RBF model)."""
    X, y, _, _ = stream_data

    def started():
        clf = MultiClassSVC(C=1.0, kernel="poly", degree=2, random_state=0)
        if start == "fit":
            return clf.set_params(solver="s2do").fit(X[:200], y[:200]).set_params(
                solver="online")
        return clf.partial_fit(X[:200], y[:200], classes=np.unique(y))

    clf, twin = started(), started()
    before = clf.dual_coef_.copy()
    name = next(iter(change))
    with pytest.raises(ValueError, match=f"partial_fit continues the model fitted with {name}="):
        clf.set_params(**change).partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(clf.dual_coef_, before)   # the model as it was
    # Set back, the stream goes on as if nothing had happened.
    clf.set_params(**{name: twin.get_params()[name]}).partial_fit(X[200:], y[200:])
    twin.partial_fit(X[200:], y[200:])
    assert clf.solution_["n_seen"] == twin.solution_["n_seen"] == len(y)
    np.testing.assert_allclose(clf.solution_["dual_objective"],
                               twin.solution_["dual_objective"], rtol=1e-12)


def test_partial_fit_applies_changed_algorithm_settings(stream_data):
    """tol, online_strategy and cache_size changed between chunks take effect on the next
    chunk (they were kept from the first call, silently)."""
    X, y, _, _ = stream_data
    kept = MultiClassSVC(model="ww", tol=1e-3, random_state=0)
    kept.partial_fit(X[:200], y[:200], classes=np.unique(y))
    changed = pickle.loads(pickle.dumps(kept))
    kept.partial_fit(X[200:], y[200:])
    changed.set_params(tol=0.5, online_strategy="random_pattern_s2do_pattern",
                       cache_size=10.0).partial_fit(X[200:], y[200:])
    stream = changed._stream
    assert (stream.tol, stream.strategy, stream.cache_size) == (0.5, 2, 10.0)
    # The support patterns of the first chunk were kept; the second chunk took another path.
    assert changed.solution_["n_seen"] == kept.solution_["n_seen"] == len(y)
    assert changed.n_iter_ != kept.n_iter_
    assert np.isin(kept.support_[kept.support_ < 200], np.arange(200)).all()


def test_partial_fit_sparse(stream_data):
    X, y, Xt, yt = stream_data
    dense = MultiClassSVC(model="ww", gamma=0.5, random_state=0)
    csr = MultiClassSVC(model="ww", gamma=0.5, random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 4):
        dense.partial_fit(X[chunk], y[chunk], classes=np.unique(y))
        csr.partial_fit(sp.csr_matrix(X[chunk]), y[chunk], classes=np.unique(y))
    assert sp.issparse(csr.support_vectors_)
    # Sparse and dense kernel rows round differently, so the two streams take different
    # paths: each is a feasible point below the optimum (weak duality) and, as a regression
    # guard (measured over seeds 0-3: 95-97 % of the optimum, 92-99 % of the test
    # predictions equal), close to it.
    best = MultiClassSVC(model="ww", gamma=0.5, solver="s2do", tol=TOL).fit(X, y)
    optimum = best.solution_["dual_objective"]
    for est in (dense, csr):
        assert 0.9 * optimum <= est.solution_["dual_objective"] <= optimum * (1 + 1e-9)
    assert np.mean(csr.predict(Xt) == dense.predict(Xt)) >= 0.9


# -------------------------------------------------------------- bad input
def test_bad_parameters(stream_data):
    X, y, _, _ = stream_data
    with pytest.raises(ValueError, match="online_strategy"):
        MultiClassSVC(solver="online", online_strategy="best").fit(X, y)
    for epochs in (0, -1, 1.5, True, "1"):
        with pytest.raises(ValueError, match=r"'epochs' parameter|epochs must be a positive"):
            MultiClassSVC(solver="online", epochs=epochs).fit(X, y)
    with pytest.raises(ValueError, match="bias"):
        MultiClassSVC(solver="online", fit_intercept=True).fit(X, y)
    problem = make_problem("ww", X, y, bias=True)
    with pytest.raises(ValueError, match="bias"):
        resolve_solver("online", problem)
    with pytest.raises(ValueError, match="bias"):
        _online().solve(problem)
    with pytest.raises(ValueError, match="online_strategy"):
        _online().solve(make_problem("ww", X, y), online_strategy=3)
    with pytest.raises(ValueError, match="test_set needs trace"):
        _online().solve(make_problem("ww", X, y), test_set=(X, y))
    # Checked before the solve (X_test of other features failed at the first curve point
    # with the kernel's error, a test_set that is not a pair with "not enough values").
    for solver in ("online", "s2do"):
        with pytest.raises(ValueError, match=r"X_test has shape \(10, 1\), expected \(n_test, 2\)"):
            get_solver(solver).solve(make_problem("ww", X, y), trace=0.1,
                                     test_set=(X[:10, :1], y[:10]))
        with pytest.raises(ValueError, match=r"test_set must be a pair \(X_test, y_test\)"):
            get_solver(solver).solve(make_problem("ww", X, y), trace=0.1, test_set="x")


def test_partial_fit_bad_input(stream_data):
    X, y, _, _ = stream_data
    fresh = MultiClassSVC()
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        fresh.partial_fit(X, y)
    assert not hasattr(fresh, "n_features_in_")  # still unfitted (not half-fitted)
    with pytest.raises(ValueError, match=r"labels not in classes: \[3\]"):
        MultiClassSVC().partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="at least 2 classes"):
        MultiClassSVC().partial_fit(X[y == 0], y[y == 0], classes=[0])
    clf = MultiClassSVC().partial_fit(X[:100], y[:100], classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"labels not in classes: \[7\]"):
        clf.partial_fit(X[:10], np.full(10, 7))
    with pytest.raises(ValueError, match="is not the same as on the first call"):
        clf.partial_fit(X[:10], y[:10], classes=[0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="X has 1 features, but MultiClassSVC is expecting 2"):
        clf.partial_fit(X[:10, :1], y[:10])
    bad = X[:10].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        clf.partial_fit(bad, y[:10])
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        clf.partial_fit(bad, y[:10])
    n_before = clf.solution_["n_seen"]
    assert n_before == 100  # the rejected chunks were not fed
    # No streaming mode with a bias, a batch-only solver, or a kernel given as a Gram
    # matrix or a function: no partial_fit at all (scikit-learn's checks call it when
    # hasattr says it exists, and got a ValueError for kernel='precomputed').
    for est, why in ((MultiClassSVC(fit_intercept=True), "needs fit_intercept=False"),
                     (MultiClassSVC(solver="s2do"), "has no streaming mode"),
                     (MultiClassSVC(kernel="precomputed"), "precomputed"),
                     (MultiClassSVC(kernel=rbf_kernel), "callable kernels")):
        assert not hasattr(est, "partial_fit")
        with pytest.raises(AttributeError, match=why):
            est.partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(AttributeError, match="precomputed"):   # also through the class
        MultiClassSVC.partial_fit(MultiClassSVC(kernel="precomputed"), rbf_kernel(X), y,
                                  classes=[0, 1, 2, 3])
    assert hasattr(clone(MultiClassSVC(solver="online")), "partial_fit")


def test_interrupted_chunk_keeps_the_pattern_indices(stream_data, monkeypatch):
    """Ctrl-C during a chunk: the patterns fed so far stay in the stream, so the chunk
    counts as seen and the next chunk's patterns get indices of their own."""
    X, y, _, _ = stream_data
    online = _online()
    clf = MultiClassSVC(model="ww", random_state=0)
    clf.partial_fit(X[:100], y[:100], classes=np.unique(y))
    before = clf.decision_function(X[:20])
    real = online._drive

    def interrupted(state, method, budget, slice_, tick):
        real(state, method, [20], slice_, tick)   # 20 steps of the chunk, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(online, "_drive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.partial_fit(X[100:300], y[100:300])
    monkeypatch.undo()
    np.testing.assert_array_equal(clf.decision_function(X[:20]), before)
    assert clf._stream.n_seen == 300
    clf.partial_fit(X[300:], y[300:])
    assert clf.solution_["n_seen"] == len(X)
    assert len(np.unique(clf.support_)) == len(clf.support_)
    assert np.any((clf.support_ >= 100) & (clf.support_ < 300))   # some fed before Ctrl-C


def test_stream_checks_its_chunks(stream_data):
    """OnlineStream.feed (the engine of partial_fit) took any chunk: codes out of range, X
    of other features or y shorter than X were read past their arrays by the compiled
    loop, NaN and negative weights were fed."""
    X, y, _, _ = stream_data
    stream = _online().OnlineStream(make_machine("ww", 4), 1.0, "rbf", 0.5, 3, 0.0, 2, False,
                                    random_state=0)
    codes = np.asarray(y[:20])
    for args, message in (((X[:20], np.r_[codes[:-1], 4]), "class codes 0 .. 3"),
                          ((X[:20], np.r_[codes[:-1], -1]), "class codes 0 .. 3"),
                          ((X[:20, :1], codes), r"the stream's chunks have 2 features"),
                          ((np.c_[X[:20], X[:20]], codes), "2 features"),
                          ((np.where(X[:20] > 1, np.nan, X[:20]), codes), "NaN"),
                          ((X[:20], codes[:-3]), "X has 20 rows but y has 17")):
        with pytest.raises(ValueError, match=message):
            stream.feed(*args)
    for weight in (-np.ones(20), np.full(20, np.nan), np.ones(3)):
        with pytest.raises(ValueError, match="sample_weight must hold 20"):
            stream.feed(X[:20], codes, sample_weight=weight)
    assert stream.n_seen == 0
    assert stream.feed(X[:20], codes) == "epoch_limit" and stream.n_seen == 20


def test_a_machine_it_cannot_solve_is_named():
    """A custom row with two shared slack groups in a class was refused with 'This solver
    handles at most 1 shared slack group(s) per class', naming neither solver nor machine."""
    import dataclasses

    machine = dataclasses.replace(make_machine("ww", 5), name="pairs", slack=np.tile(
        np.array([0, 0, 0, 1, 1], dtype=np.int32), (5, 1)))  # class 0: {1, 2} and {3, 4}
    X, y = blobs(0, 5, 30)
    problem = DualProblem(machine, y, Kernel(X, "rbf", gamma=0.5), 1.0, False)
    with pytest.raises(ValueError, match=r"Machine 'pairs': class 0 has 2 slack groups .*"
                                         r"the online solver \('online', partial_fit\)"):
        get_solver("online").solve(problem)
    assert get_solver("s2do").solve(problem, tol=1e-8).status == "optimal"
