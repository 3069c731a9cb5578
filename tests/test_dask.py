"""Scaling out on a Dask cluster (docs/scaling.rst).

One ``distributed.LocalCluster`` (two single-threaded worker processes on
loopback) serves the module.  Under ``joblib.parallel_backend("dask")``,
RadiusMarginSearch, loo_error, scikit-learn's GridSearchCV and the
validation suite must return exactly what they return in this process;
:func:`msvm.dask.partial_fit_dask` over the blocks of a dask array must give
the model of sequential ``partial_fit`` calls; dask-ml's ``Incremental`` and
``HyperbandSearchCV`` drive ``partial_fit`` with their own conventions.

Skipped when the ``dask`` extra is not installed.  Time bound: the cluster
must start within ``CONNECT_TIMEOUT``, and the whole module must end within
``MODULE_TIMEOUT`` or faulthandler ends the process with every thread's
traceback (a hung cluster must not hang CI).
"""

from __future__ import annotations

import faulthandler
import io
import json

import numpy as np
import pytest

dask = pytest.importorskip(
    "dask", reason="the dask extra is not installed (pip install -e '.[dask]')")
distributed = pytest.importorskip(
    "distributed", reason="the dask extra is not installed (pip install -e '.[dask]')")
dask_ml = pytest.importorskip(
    "dask_ml", reason="the dask extra is not installed (pip install -e '.[dask]')")

import dask.array as da  # noqa: E402
import joblib  # noqa: E402
from dask_ml.model_selection import HyperbandSearchCV, train_test_split  # noqa: E402
from dask_ml.wrappers import Incremental  # noqa: E402
from sklearn.datasets import load_digits, load_iris, load_wine  # noqa: E402
from sklearn.model_selection import GridSearchCV, ParameterGrid  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from msvm import MultiClassSVC, RadiusMarginSearch, loo_error  # noqa: E402
from msvm.dask import partial_fit_dask  # noqa: E402

from test_parallel import GRID, assert_same_search  # noqa: E402

CONNECT_TIMEOUT = 60   # seconds for the cluster to start and the client to connect
MODULE_TIMEOUT = 600   # seconds for the whole module (it takes well under a minute)


@pytest.fixture(scope="module")
def client():
    faulthandler.dump_traceback_later(MODULE_TIMEOUT, exit=True)
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT_TIMEOUT}s"}), \
                distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                         host="127.0.0.1", dashboard_address=None) as cluster, \
                distributed.Client(cluster, timeout=CONNECT_TIMEOUT) as client:
            yield client
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def digits():
    """600 digits in 12 blocks of 50 rows: a stream of more than ten chunks."""
    X, y = load_digits(return_X_y=True)
    return X[:600] / 16.0, y[:600]


# ----------------------------------------------- joblib's dask backend: same results
def test_search_and_loo_on_the_cluster_equal_local(client, wine):
    X, y = wine
    base = MultiClassSVC(model="msvm2", tol=1e-6)
    local = RadiusMarginSearch(base, GRID).fit(X, y)
    est = MultiClassSVC(model="cs", C=1.0, tol=1e-6)
    loo_local = loo_error(est, X, y)
    with joblib.parallel_backend("dask"):
        assert joblib.effective_n_jobs(None) == 2  # the backend sees both workers
        remote = RadiusMarginSearch(base, GRID).fit(X, y)
        loo_remote = loo_error(est, X, y)
    assert_same_search(local, remote)
    np.testing.assert_array_equal(loo_local.predictions, loo_remote.predictions)
    assert loo_local.n_errors == loo_remote.n_errors and loo_remote.n_retrained > 0


def test_grid_search_cv_on_the_cluster_equals_local(client):
    X, y = load_iris(return_X_y=True)
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.1, 1.0]}
    search = GridSearchCV(MultiClassSVC(model="ww", tol=1e-6), grid, cv=3, n_jobs=2)
    local = GridSearchCV(**search.get_params(deep=False)).set_params(n_jobs=1).fit(X, y)
    with joblib.parallel_backend("dask"):
        remote = search.fit(X, y)
    for key in ("mean_test_score", "split0_test_score", "split1_test_score",
                "split2_test_score", "rank_test_score"):
        np.testing.assert_array_equal(local.cv_results_[key], remote.cv_results_[key])
    assert local.best_params_ == remote.best_params_
    np.testing.assert_array_equal(local.best_estimator_.dual_coef_,
                                  remote.best_estimator_.dual_coef_)


def test_fits_in_workers_use_one_solver_thread(client, wine):
    X, y = wine
    setup = MultiClassSVC(model="ww").prepare_fit(X, y)
    with joblib.parallel_backend("dask"):
        # joblib reads n_jobs=None as every thread of the cluster; the estimator reads it as 1.
        assert joblib.effective_n_jobs(None) == 2
        assert MultiClassSVC(model="ww").solver_options(setup)["n_jobs"] == 1


def test_validation_rows_on_the_cluster_equal_sequential(client, tmp_path):
    from validation.__main__ import run

    rows = {}
    for name, extra in (("local", ["--n-jobs", "1"]),
                        ("dask", ["--dask", client.scheduler_info()["address"]])):
        path = tmp_path / f"{name}.json"
        code = run(["--quick", "--filter", "/ww/nobias/linear/", "--bounds", "skip",
                    "--json", str(path), *extra], out=io.StringIO())
        assert code == 0
        rows[name] = json.loads(path.read_text())["rows"]
    assert len(rows["local"]) == len(rows["dask"]) >= 5
    for a, b in zip(rows["local"], rows["dask"], strict=True):
        assert a["name"] == b["name"] and a["checks"] == b["checks"]
        # To round-off: the workers' BLAS runs one thread, this process's may not (another
        # order of the sums in the reference solvers' and the diagnostics' products).
        assert a["dual_objective"] == pytest.approx(b["dual_objective"], rel=1e-12, abs=1e-12)
        for key in ("relative_gap", "kkt_residual"):
            assert a[key] == pytest.approx(b[key], rel=0, abs=1e-12), (a["name"], key)


# ----------------------------------------------------------- streaming a dask.array
def _sequential(X, y, bounds, **params):
    est = MultiClassSVC(**params)
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        est.partial_fit(X[start:stop], y[start:stop], classes=np.arange(10))
    return est


def _same_model(a: MultiClassSVC, b: MultiClassSVC) -> None:
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.n_iter_ == b.n_iter_
    assert a.solution_["dual_objective"] == b.solution_["dual_objective"]


# The Incremental case runs dask's in-process scheduler on purpose, beside the client.
@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler:UserWarning")
def test_partial_fit_over_dask_blocks_equals_sequential(client, digits):
    X, y = digits
    params = dict(model="ww", C=10.0, gamma=0.05, random_state=0)
    bounds = np.arange(0, 601, 50)
    reference = _sequential(X, y, bounds, **params)
    Xd = da.from_array(X, chunks=(50, 64))
    assert Xd.numblocks[0] == 12
    # The blocks are computed on the cluster (the client is active); the model stays here.
    streamed = partial_fit_dask(MultiClassSVC(**params), Xd, da.from_array(y, chunks=120))
    _same_model(reference, streamed)
    assert streamed.solution_["n_seen"] == 600
    # Columns split into blocks are joined first; y as a NumPy array is split like X's rows.
    by_columns = partial_fit_dask(MultiClassSVC(**params), Xd.rechunk((50, 16)), y,
                                  classes=np.arange(10))
    _same_model(reference, by_columns)
    # dask-ml's Incremental with the blocks in order, run by dask's in-process scheduler,
    # calls partial_fit as the loop does (classes= on every call).
    with dask.config.set(scheduler="sync"):
        incremental = Incremental(MultiClassSVC(**params), shuffle_blocks=False).fit(
            Xd, da.from_array(y, chunks=50), classes=np.arange(10))
    _same_model(reference, incremental.estimator_)
    np.testing.assert_array_equal(incremental.dual_coef_, reference.dual_coef_)
    # Its blockwise predict runs on the workers, with the model pickled there.
    np.testing.assert_array_equal(incremental.predict(Xd).compute(), reference.predict(X))


def test_hyperband_search_over_partial_fit(client, digits):
    X, y = digits
    Xd, yd = da.from_array(X[:400], chunks=(40, 64)), da.from_array(y[:400], chunks=40)
    grid = {"C": [1.0, 10.0], "gamma": [0.02, 0.1]}
    search = HyperbandSearchCV(MultiClassSVC(model="cs", random_state=0), grid, max_iter=3,
                               random_state=0, test_size=0.25)
    search.fit(Xd, yd, classes=np.arange(10))
    assert search.best_params_ in list(ParameterGrid(grid))
    scores = search.cv_results_["test_score"]
    assert search.best_score_ == scores[search.best_index_] == scores.max()
    assert search.metadata_["partial_fit_calls"] == sum(search.cv_results_["partial_fit_calls"])
    # best_score_ is the accuracy of best_estimator_ on its bracket's held-out split, which
    # each bracket draws with its own random_state (metadata_).
    bracket = search.cv_results_["bracket"][search.best_index_]
    params = next(b["SuccessiveHalvingSearchCV params"] for b in search.metadata_["brackets"]
                  if b["bracket"] == bracket)
    _, X_test, _, y_test = train_test_split(Xd, yd, test_size=params["test_size"],
                                            random_state=params["random_state"], shuffle=True)
    X_test, y_test = dask.compute(X_test, y_test)
    assert search.best_estimator_.score(X_test, y_test) == search.best_score_
    assert search.best_estimator_.get_params()["C"] == search.best_params_["C"]


# ------------------------------------------------------------------------- bad input
def test_partial_fit_dask_bad_input(digits):
    X, y = digits
    Xd = da.from_array(X, chunks=(50, 64))
    with pytest.raises(TypeError, match="dask.array"):
        partial_fit_dask(MultiClassSVC(), X, y)
    with pytest.raises(ValueError, match="600 rows but y has 599"):
        partial_fit_dask(MultiClassSVC(), Xd, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        partial_fit_dask(MultiClassSVC(), da.from_array(y, chunks=50), y)
    with pytest.raises(ValueError, match="unknown length"):
        partial_fit_dask(MultiClassSVC(), Xd[Xd[:, 0] >= 0], y)
    with pytest.raises(AttributeError, match="fit_intercept=False"):
        partial_fit_dask(MultiClassSVC(fit_intercept=True), Xd, y)
    with pytest.raises(ValueError, match="X has no rows"):
        partial_fit_dask(MultiClassSVC(), Xd[:0], y[:0], classes=np.arange(10))
    # y of unknown length failed with dask's "Cannot call len() on object with unknown chunk
    # size"; a scalar or None with "object of type 'int' has no len()" (a TypeError).
    yd = da.from_array(y, chunks=50)
    with pytest.raises(ValueError, match="y has blocks of unknown length"):
        partial_fit_dask(MultiClassSVC(), Xd, yd[yd >= 0])
    for bad in (3, None):
        with pytest.raises(ValueError, match=r"y must be 1-D, got a 0-D array \(\)"):
            partial_fit_dask(MultiClassSVC(), Xd, bad)
    with pytest.raises(ValueError, match="y must be 1-D, got a 2-D dask array"):
        partial_fit_dask(MultiClassSVC(), Xd, yd[:, None])


def test_partial_fit_dask_skips_empty_blocks(digits):
    """A block of no rows (a filtered partition) failed in partial_fit ('Found array with
    0 sample(s)'); it holds nothing to feed, so the stream is the one without it."""
    X, y = digits
    params = dict(model="ww", C=10.0, gamma=0.05, random_state=0)
    reference = _sequential(X, y, [0, 50, 200, 600], **params)
    chunks = ((0, 50, 0, 150, 400, 0), (64,))
    with dask.config.set(scheduler="sync"):
        streamed = partial_fit_dask(MultiClassSVC(**params), da.from_array(X, chunks=chunks),
                                    da.from_array(y, chunks=chunks[:1]))
    _same_model(reference, streamed)
    assert streamed.solution_["n_seen"] == 600


def test_a_closed_client_is_a_clear_error(wine):
    """joblib's dask backend with a closed client failed with "AttributeError: 'NoneType'
    object has no attribute 'ncores'" from deep inside joblib."""
    X, y = wine
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as closed:
        pass
    assert closed.status == "closed"
    with joblib.parallel_backend("dask", client=closed):
        with pytest.raises(RuntimeError, match="Dask client that is closed"):
            loo_error(MultiClassSVC(model="cs"), X, y, n_jobs=2)
        with pytest.raises(RuntimeError, match="Dask client that is closed"):
            RadiusMarginSearch(MultiClassSVC(model="msvm2"), {"C": [1.0]}).fit(X, y)
