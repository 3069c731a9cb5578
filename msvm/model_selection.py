"""Exact leave-one-out and model selection by the radius–margin bound.

:func:`loo_error`
    Exact leave-one-out (LOO) error of any machine of :class:`msvm.MultiClassSVC`.
    The machine is trained once on all m points.  Removing a point whose dual
    variables are all zero (a non-support vector) leaves the solution
    optimal: the remaining α is feasible for the reduced problem, and every
    other example's gradient, hence its KKT violation, is unchanged because
    the removed point contributes β_p = 0 to every score (the bias too stays
    a valid multiplier, since the equality sums do not change).  So only the
    support vectors are retrained, each from the full solution with its row
    removed (a warm start, for the solvers that take one), in parallel
    (``n_jobs``).  The non-support-vector claim is checked on every call: the
    largest KKT violation of the reduced problems, max_{i ≠ p} v_i with v the
    per-example violations of the full solution
    (:func:`msvm.diagnostics.kkt_violation`), must be within the solver's
    tolerance, or a RuntimeError is raised.

:class:`RadiusMarginSearch`
    Picks (C, γ) of an M-SVM² by minimising a leave-one-out bound of
    :mod:`msvm.bounds` over a grid (the key lemma's count of possible errors
    by default, or the radius–margin bound itself), training each grid point once on all the
    data (no cross-validation).  Along C, for fixed other parameters, every
    fit starts from the previous C's solution (and, with a bias, every
    enclosing ball from the previous ball).

Parallel runs.  Both run their independent solves as tasks of
:class:`joblib.Parallel` (``n_jobs``; None means 1, unless a joblib
``parallel_backend`` context says otherwise, as in scikit-learn), so
``with joblib.parallel_backend("dask"):`` spreads them over a Dask cluster
(docs: "Scaling out").  A task of :class:`RadiusMarginSearch` is one path
along C (one value of the other parameters), so its warm starts stay inside
the task; a task of :func:`loo_error` is a chunk of the support vectors.
The results are collected in the order of the tasks, never of their
completion, and each task computes what the sequential loop computes, so a
parallel run returns exactly the sequential run's results.  A positive
``n_jobs`` above the number of tasks is lowered to it (no idle workers).
Nested parallelism: the estimator's ``n_jobs=None`` means one solver thread;
when p tasks run in parallel, an ``n_jobs`` of more than cores / p threads (or
``n_jobs < 0``, "every core") is reduced to cores / p (at least 1) inside
the tasks, and a smaller positive ``n_jobs`` is kept.

Kernel rows.  Retraining without point p only needs the Gram matrix with row
and column p removed, so :func:`loo_error` computes the Gram matrix once (up
to :data:`GRAM_MAX_SAMPLES` points) and hands each reduced problem its
sub-block as a precomputed kernel; with solver ``'linear'``, which works on
the points' features (primal W), each reduced problem gets the points.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from joblib import Parallel, cpu_count, delayed, effective_n_jobs
from numpy.typing import ArrayLike, NDArray
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags, metadata_routing
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.validation import check_is_fitted

from msvm._numbers import is_integer, is_real
from msvm._progress import ProgressBar
from msvm._typing import MatrixLike
from msvm.bounds import enclosing_ball, radius_margin_bound
from msvm.diagnostics import diagnose, kkt_violation
from msvm.estimator import FitSetup, MultiClassSVC
from msvm.kernels import Kernel
from msvm.problem import DualProblem
from msvm.solvers import TOL_FLOOR, get_solver

__all__ = ["LeaveOneOut", "loo_error", "RadiusMarginSearch", "GRAM_MAX_SAMPLES", "BOUND_RTOL"]

#: Largest m for which :func:`loo_error` forms the full Gram matrix (8 m² bytes).
GRAM_MAX_SAMPLES = 8000

# KKT tolerance (gradient units) assumed for the reference solvers, which have no ``tol``.
_REFERENCE_KKT_TOL = 1e-6

#: Relative accuracy of 1ᵀα that :class:`RadiusMarginSearch` solves for.  Proposition 3
#: (Σ_k ‖w_k‖² = 1ᵀα/(Q−1)) is the sum of the complementary-slackness products
#: α_ik·(∂J/∂α_ik); at a KKT violation ε each is at most ε·α_ik, so the identity holds to
#: ε·(Q−1) relative.  Each grid point is therefore solved at tol ≤ BOUND_RTOL/(Q−1).
BOUND_RTOL = 1e-4


@dataclass
class LeaveOneOut:
    """Result of :func:`loo_error`.

    Attributes
    ----------
    n_errors : int
        Number of training points misclassified by the machine trained
        without them (exact ties of the argmax are decided as ``predict``
        does, by the first class).
    errors : ndarray of bool, shape (m,)
    predictions : ndarray of shape (m,)
        The LOO prediction of every point (original labels).
    support : ndarray of int
        The points retrained (support vectors of the full machine).
    reduced_kkt_violation : float
        Largest KKT violation of the reduced problems of the non-support
        vectors, with the full solution restricted (≤ ``kkt_tolerance``).
    kkt_tolerance : float
    time : float
        Wall-clock seconds, full fit included.

    See Also
    --------
    loo_error : Computes it (with an example).
    """

    n_errors: int
    errors: np.ndarray
    predictions: np.ndarray
    support: np.ndarray
    reduced_kkt_violation: float
    kkt_tolerance: float
    time: float

    @property
    def n_samples(self) -> int:
        return len(self.errors)

    @property
    def error_rate(self) -> float:
        return self.n_errors / self.n_samples

    @property
    def n_retrained(self) -> int:
        return len(self.support)


def _solve(estimator: MultiClassSVC, setup: FitSetup, warm_start=None,
           tol: float | None = None):
    """Solve with the estimator's solver settings (``tol`` at most ``tol`` when given)."""
    problem = setup.problem
    module = get_solver(setup.solver)
    options = estimator.solver_options(setup)
    if warm_start is not None and "warm_start" in module.OPTIONS:
        options["warm_start"] = warm_start
    if tol is not None and "tol" in options:
        options["tol"] = min(options["tol"], tol)
    if problem.kernel.is_precomputed and module.BLAS_THREADS:
        # Limiting BLAS threads costs a few ms a call; precomputed rows need no BLAS.
        options["blas_threads"] = None
    return module.solve(problem, **options)


#: What to change when solves end with these statuses instead of ``'optimal'``.
_REMEDIES = {"max_iter": "raise max_iter",
             "stalled": "loosen tol (the dual stopped improving before reaching it)",
             "epoch_limit": "set epochs=None (one online pass does not solve to tol)"}


def _remedy(statuses) -> str:
    """The statuses of solves that did not reach ``'optimal'``, with what to change for each.

    A RuntimeError that only said "raise max_iter" sent users whose solves had
    stalled at a tol below the solver's reach, or run one online epoch, to a
    change that cannot help.
    """
    names, counts = np.unique(np.asarray(statuses, dtype=str), return_counts=True)
    seen = ", ".join(f"'{name}' ({count})" for name, count in zip(names, counts, strict=True))
    fixes = [_REMEDIES[name] for name in names if name in _REMEDIES]
    return f"status {seen}; {', '.join([*fixes, 'or use another solver'])}"


def _kkt_tolerance(estimator: MultiClassSVC, solver_name: str) -> float:
    if get_solver(solver_name).STOPPING_RULE is None:
        return _REFERENCE_KKT_TOL
    return max(float(estimator.tol), TOL_FLOOR) * (1 + 1e-6)


def _check_n_jobs(n_jobs) -> None:
    """``n_jobs`` is None or a non-zero integer, and the active joblib backend can run tasks."""
    if n_jobs is not None and (not is_integer(n_jobs) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1: all cores), got "
                         f"{n_jobs!r}.")
    from joblib.parallel import get_active_backend

    client = getattr(get_active_backend()[0], "client", None)   # joblib's Dask backend
    status = getattr(client, "status", "running")
    if status in ("closing", "closed"):
        # Else: "AttributeError: 'NoneType' object has no attribute 'ncores'" from joblib.
        raise RuntimeError(f"joblib's 'dask' backend is active with a Dask client that is "
                           f"{status} ({client!r}); open a client (distributed.Client) for "
                           "parallel_backend('dask', client=...), or leave that context.")


def _workers(n_jobs, n_tasks: int):
    """``n_jobs`` for a :class:`joblib.Parallel` over ``n_tasks`` tasks: a positive
    ``n_jobs`` above ``n_tasks`` is lowered to it (more workers would idle; joblib fails on
    a huge number, "Numeric literal ... is too large", or overflows a C int)."""
    if n_jobs is not None and n_jobs > 0:
        return min(n_jobs, max(int(n_tasks), 1))
    return n_jobs


def _task_estimator(estimator: MultiClassSVC, n_jobs) -> MultiClassSVC:
    """The estimator as the tasks of a map over ``n_jobs`` use it (nested-parallelism guard).

    When p tasks run in parallel, an estimator asking for more solver threads
    than cores / p (``n_jobs < 0``: every core) gets cores / p (at least
    one), as joblib's worker processes get by default, so that the tasks
    together do not ask for more threads than there are cores.  Pass the
    ``n_jobs`` of :func:`_workers` (p is at most the number of tasks).
    """
    tasks = effective_n_jobs(n_jobs)
    if tasks > 1 and estimator.n_jobs is not None:
        share = max(cpu_count() // tasks, 1)
        if estimator.n_jobs < 0 or estimator.n_jobs > share:
            return clone(estimator).set_params(n_jobs=share)
    return estimator


class _Stop:
    """Tells the tasks of a map still running in threads to stop after their current solve.

    Set when the caller stops waiting for them (Ctrl-C, or another task's error):
    joblib's threading backend cannot stop a running task, and a task is a chunk of
    solves, so without it the worker threads went on with their chunks in the
    background.  Tasks in other processes (loky, Dask) get a fresh, unset copy; joblib
    ends those workers itself.
    """

    def __init__(self):
        self.stopped = False

    def __reduce__(self):
        return (_Stop, ())


def _retrain(estimator, spec, y, alpha, X, K, points, weight=None, stop=None):
    """LOO scores h(x_p) of the machine retrained without p, and each solve's status.

    ``spec`` holds the small parts of the full problem (see :func:`loo_error`); the
    arrays come apart, the Gram matrix ``K`` or, when it is None, the points ``X``,
    and the examples' weights (None: unweighted).
    """
    solver, classes, gamma, machine, C, fit_intercept, kernel_name, kernel_params = spec
    full = None if K is not None else Kernel(X, kernel_name, **kernel_params)
    m = len(y)
    out = np.empty((len(points), machine.n_classes))
    statuses = np.empty(len(points), dtype=object)
    for k, p in enumerate(points):
        if stop is not None and stop.stopped:   # the caller has gone: nobody reads the rest
            return out[:k], statuses[:k]
        keep = np.flatnonzero(np.arange(m) != p)
        if K is not None:
            data = np.ascontiguousarray(K[np.ix_(keep, keep)])
            sub, row = Kernel(data, "precomputed"), K[p, keep]
        else:
            assert full is not None  # made above when there is no Gram matrix
            data = X[keep]
            sub, row = Kernel(data, kernel_name, **kernel_params), full.gram(np.array([p]), keep)[0]
        problem = DualProblem(machine, y[keep], sub, C, fit_intercept,
                              sample_weight=None if weight is None else weight[keep])
        reduced = FitSetup(data, classes, problem, solver, gamma)
        solution = _solve(estimator, reduced, warm_start=alpha[keep])
        out[k] = row @ problem.beta(solution.alpha) + solution.b
        statuses[k] = solution.status
    return out, statuses


def _positive_weights(setup: FitSetup, what: str) -> None:
    """ValueError when examples of weight zero were left out of ``setup``'s problem."""
    if setup.index is not None:
        dropped = (setup.fit_shape or setup.X.shape)[0] - len(setup.index)
        raise ValueError(
            f"{what} needs every example's weight positive (sample_weight times class_weight): "
            f"{dropped} examples have weight 0, and an example "
            "left out of training has no leave-one-out prediction of its own. Drop them from "
            "X and y first.")


def loo_error(estimator: MultiClassSVC, X: MatrixLike, y: ArrayLike, n_jobs: int | None = None,
              verbose: int = 0, sample_weight: ArrayLike | None = None) -> LeaveOneOut:
    """Exact leave-one-out error of a :class:`~msvm.MultiClassSVC` configuration.

    Parameters
    ----------
    estimator : MultiClassSVC
        The configuration to evaluate (cloned; any machine, kernel, solver,
        with or without a bias; its ``class_weight`` applies).
    X : {array-like, sparse matrix} of shape (m, n_features)
    y : array-like of shape (m,)
    n_jobs : int, optional
        Retraining tasks run at once by :class:`joblib.Parallel` (None
        means 1 unless a joblib ``parallel_backend`` context says otherwise;
        -1 all cores).  The default backend runs them in threads (the
        solvers release the GIL and share the Gram matrix);
        ``with joblib.parallel_backend("dask"):`` runs them on a Dask
        cluster.  The result does not depend on it (module docstring,
        "Parallel runs").
    verbose : int, default=0
        Show a progress bar over the retrained points on stderr
        (:class:`msvm._progress.ProgressBar`).
    sample_weight : array-like of shape (m,), default=None
        Positive weights of the examples' losses, as in
        :meth:`MultiClassSVC.fit`: every machine (the full one and each
        retrained one) is the weighted machine.  The LOO errors are counted,
        not weighted.  A weight of zero (from ``sample_weight`` or
        ``class_weight``) is a ValueError: such an example is not a training
        example.

    Returns
    -------
    LeaveOneOut
        Its ``n_errors`` is the LOO error count, ``error_rate`` the rate.

    Raises
    ------
    RuntimeError
        If the full solve did not converge, so that removing a non-support
        vector would not keep the full solution optimal to the solver's
        tolerance, or if a retrained machine did not converge.  "Exact" means
        that every machine whose prediction is counted satisfies the KKT
        conditions to ``tol`` (the solver's stopping rule).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, loo_error
    >>> X, y = load_iris(return_X_y=True)
    >>> loo = loo_error(MultiClassSVC(model="ww", C=10), X, y)
    >>> loo.n_errors, loo.error_rate
    (6, 0.04)
    >>> loo.n_retrained   # only the support vectors are trained again
    22
    """
    if not isinstance(estimator, MultiClassSVC):
        raise TypeError(f"estimator must be a msvm.MultiClassSVC, got {type(estimator).__name__}.")
    _check_n_jobs(n_jobs)
    start = time.perf_counter()
    est = clone(estimator)
    setup = est.prepare_fit(X, y, sample_weight)
    _positive_weights(setup, "loo_error")
    problem, solver_name = setup.problem, setup.solver
    m = problem.n_samples
    solution = _solve(est, setup)
    alpha = np.where(problem.active, solution.alpha, 0.0)
    diag = diagnose(problem, solution)
    b = diag.b if problem.fit_intercept else np.zeros(problem.n_classes)
    beta = problem.beta(alpha)
    support = np.flatnonzero(np.any(alpha > 0, axis=1))
    non_support = np.setdiff1d(np.arange(m), support)

    # Non-support vectors: the reduced problem's violation is the largest of the others'.
    G = problem.gradient(alpha) + problem.margin_terms(b)
    v = kkt_violation(problem, alpha, np.where(problem.active, G, 0.0), per_example=True)
    order = np.argsort(-v)
    reduced = 0.0
    if len(non_support) and m > 1:
        top, second = v[order[0]], (v[order[1]] if m > 1 else 0.0)
        reduced = float(np.max(np.where(non_support == order[0], second, top)))
    tolerance = _kkt_tolerance(est, solver_name)
    if solution.status != "optimal" or reduced > tolerance:
        raise RuntimeError(
            f"Removing a non-support vector leaves a KKT violation of {reduced:.3e} > "
            f"{tolerance:.3e}: the full solution is not optimal (solver {solver_name!r}, "
            f"{_remedy([solution.status])}).")

    F = problem.kernel.matmul(beta) + b  # h(x_i); β_p = 0 so no M-SVM² shift term
    scores = F.copy()
    if len(support):
        kernel = problem.kernel
        # Solver 'linear' keeps the primal W, so its reduced problems need the points.
        use_gram = kernel.is_precomputed or (m <= GRAM_MAX_SAMPLES and solver_name != "linear")
        K = kernel.gram() if use_gram else None
        # A few chunks per task slot balance the load (more when a bar shows progress);
        # each point's retraining is the same whatever chunk it falls in.
        n_tasks = effective_n_jobs(_workers(n_jobs, len(support)))
        n_chunks = 1 if n_tasks == 1 else min(len(support), 4 * n_tasks)
        if verbose:
            n_chunks = max(n_chunks, min(len(support), 100))
        chunks = np.array_split(support, n_chunks)
        workers = _workers(n_jobs, n_chunks)
        worker = _task_estimator(est, workers)
        # Each task gets the small parts of the problem in ``spec`` and the arrays apart,
        # which joblib's dask backend sends to the cluster once per call, not once per task.
        spec = (solver_name, setup.classes, setup.gamma, problem.machine, problem.C,
                problem.fit_intercept, kernel.name,
                dict(gamma=kernel.gamma, degree=kernel.degree, coef0=kernel.coef0))
        X_points = kernel.X if K is None else None
        weight = problem.sample_weight if problem.weighted else None
        bar = ProgressBar("loo_error", len(support), "left-out points", enabled=bool(verbose))
        parts, stop = [], _Stop()
        # Threads by default: the solvers' loops release the GIL, and the Gram matrix is shared.
        try:
            for part in Parallel(n_jobs=workers, prefer="threads", return_as="generator")(
                    delayed(_retrain)(worker, spec, problem.y, alpha, X_points, K, chunk, weight,
                                      stop)
                    for chunk in chunks):
                parts.append(part)
                bar.update(len(part[0]))
        finally:
            stop.stopped = True
            bar.close()
        scores[support] = np.concatenate([part[0] for part in parts])
        statuses = np.concatenate([part[1] for part in parts])
        failed = statuses != "optimal"
        if failed.any():
            raise RuntimeError(
                f"{int(failed.sum())} of the {len(support)} retrained machines did not converge "
                f"(solver {solver_name!r}): their LOO predictions would not be those of optimal "
                f"machines ({_remedy(statuses[failed])}).")
    pred = np.argmax(scores, axis=1)
    errors = pred != problem.y
    return LeaveOneOut(n_errors=int(errors.sum()), errors=errors, predictions=setup.classes[pred],
                       support=support, reduced_kkt_violation=reduced, kkt_tolerance=tolerance,
                       time=time.perf_counter() - start)


def _rank_key(record: dict, criterion: str) -> tuple:
    """Sort key of a grid point: smaller is better; one that did not converge ranks last."""
    if criterion == "candidates":
        return (not record["converged"], record["n_candidates"], record["bound"])
    return (not record["converged"], record["bound"])


def _search_path(estimator, X, y, path, criterion, ball_tol, sample_weight=None, stop=None):
    """One task of :class:`RadiusMarginSearch`: the grid points of one path along C.

    ``path`` lists the parameters of each point, by increasing C; each fit
    starts from the previous point's solution (and, with a bias, each ball
    from the previous ball).  Returns the records of the points, in path
    order, and (position, solution) of the path's best converged point (the
    first of the smallest rank key), or None.
    """
    records, best, previous, ball = [], None, None, None
    for params in path:
        if stop is not None and stop.stopped:   # the caller has gone (see _Stop)
            break
        est = clone(estimator).set_params(**params)
        tic = time.perf_counter()
        setup = est.prepare_fit(X, y, sample_weight)
        _positive_weights(setup, "RadiusMarginSearch")
        problem = setup.problem
        warm = previous if previous is not None and previous.shape == problem.zeros(
        ).shape else None
        solution = _solve(est, setup, warm_start=warm,
                          tol=BOUND_RTOL / (problem.n_classes - 1))
        fit_time = time.perf_counter() - tic
        tic = time.perf_counter()
        if problem.fit_intercept:
            ball = enclosing_ball(problem.kernel, shift=problem.kernel_shift, tol=ball_tol,
                                  warm_start=ball, cache_size=est.cache_size)
        # α itself: a point that did not converge is recorded too (flagged, never selected).
        bound = radius_margin_bound(problem, solution.alpha, ball=ball)
        bound_time = time.perf_counter() - tic
        previous = solution.alpha
        record = dict(
            bound=bound.bound, bound_rate=bound.error_rate, radius2=bound.radius2,
            sum_alpha=bound.sum_alpha, n_candidates=bound.n_candidates,
            n_support=int(np.count_nonzero(np.any(solution.alpha > 0, axis=1))),
            fit_time=fit_time, bound_time=bound_time, time=fit_time + bound_time,
            status=solution.status, converged=solution.status == "optimal")
        records.append(record)
        if record["converged"] and (best is None or _rank_key(record, criterion) < _rank_key(
                records[best[0]], criterion)):
            best = (len(records) - 1, solution)
    return records, best


#: ``self``'s type in :meth:`RadiusMarginSearch.fit` (``typing.Self`` is Python 3.11+).
_Search = TypeVar("_Search", bound="RadiusMarginSearch")


class RadiusMarginSearch(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Select the hyper-parameters of an M-SVM² by a leave-one-out bound (seed 001).

    Every point of ``param_grid`` is trained once on all the data and scored
    by an upper bound on its leave-one-out error count
    (:func:`msvm.bounds.radius_margin_bound`); the point with the smallest
    bound is kept.  No cross-validation: the cost is one fit per grid point
    (warm-started along C) plus, with a bias, one enclosing ball.

    Two bounds of seed 001 are available.  Theorem 2, the radius–margin
    bound (criterion ``'bound'``), sums the key lemma's per-point condition
    into one product R²·1ᵀα; the lemma itself (``'candidates'``, the
    default) counts the points that satisfy its necessary condition for a
    LOO error, a bound at least as tight (every Theorem-2 value in
    ``cv_results_`` is ≥ the count).  The default is the count because it
    selects better: on dna, satimage (2000), vowel and segment its choice
    matched 5-fold CV's test error within 1 point on 4/4 data sets, the
    product on 1/4 (``benchmarks/bench_bounds.py``, README).  Without a bias
    the radius is the origin-centred R₀² = max κ_ii = 1 + 1/(2C) for RBF,
    independent of γ, so the product mostly tracks 1ᵀα and favours small C.

    Parameters
    ----------
    estimator : MultiClassSVC, optional
        The M-SVM² to tune (``model='msvm2'``); default
        ``MultiClassSVC(model='msvm2')``.
    param_grid : dict or list of dicts
        Parameter names of ``estimator`` (typically ``C`` and ``gamma``) to
        lists of values, as in :class:`sklearn.model_selection.GridSearchCV`.
    criterion : {'candidates', 'bound'}, default='candidates'
        What is minimised: the number of points that satisfy the key lemma's
        necessary condition for a LOO error (``RadiusMarginBound.n_candidates``,
        ties broken by the radius–margin bound), or the radius–margin bound
        of Theorem 2 itself.
    ball_tol : float, default=1e-8
        Relative duality gap of the enclosing balls (with a bias).
    n_jobs : int, optional
        Paths along C (one per value of the other parameters) solved at
        once by :class:`joblib.Parallel`, each a task with its own warm
        starts; None means 1 unless a joblib ``parallel_backend`` context
        says otherwise, -1 all cores.  ``with
        joblib.parallel_backend("dask"):`` runs the paths on a Dask
        cluster.  The results do not depend on it (module docstring,
        "Parallel runs").
    verbose : int, default=0
        Show a progress bar over the grid points on stderr, with the last
        point's bound (:class:`msvm._progress.ProgressBar`).

    Attributes
    ----------
    cv_results_ : dict of arrays
        One entry per grid point (in ``ParameterGrid`` order): ``params``,
        ``param_<name>``, ``bound`` (bound on the LOO error count),
        ``bound_rate`` (bound / m), ``radius2``, ``sum_alpha`` (1ᵀα),
        ``n_candidates``, ``n_support``, ``fit_time``, ``bound_time``,
        ``time`` (their sum), ``status``, ``converged`` (status
        ``'optimal'``; a point that did not converge is ranked after every
        converged one and never selected) and ``rank_bound`` (rank by the
        criterion, 1 = selected).  Each point is solved at
        ``tol = min(estimator.tol, BOUND_RTOL / (Q − 1))``, the accuracy
        Proposition 3 needs (:data:`BOUND_RTOL`).
    best_index_ : int
    best_params_ : dict
    best_score_ : float
        The smallest value of the criterion (an upper bound on the LOO error
        count).
    best_estimator_ : MultiClassSVC
        Fitted with ``best_params_`` (the search's own solution, not a refit).
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when ``X`` has string column names.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, RadiusMarginSearch
    >>> X, y = load_iris(return_X_y=True)
    >>> search = RadiusMarginSearch(MultiClassSVC(model="msvm2"),
    ...                             {"C": [0.1, 1, 10], "gamma": [0.1, 1]}).fit(X, y)
    >>> search.best_params_
    {'C': 1, 'gamma': 1}
    >>> search.best_score_   # at most 22 leave-one-out errors
    22.0
    >>> search.predict(X[:3])
    array([0, 0, 0])
    """

    # A router, as GridSearchCV: fit's sample_weight goes to the estimator by the
    # estimator's request (get_metadata_routing), so the search has no set_fit_request.
    __metadata_request__fit = {"sample_weight": metadata_routing.UNUSED}

    def __init__(self, estimator: MultiClassSVC | None = None,
                 param_grid: dict[str, Any] | list[dict[str, Any]] | None = None, *,
                 criterion: str = "candidates", ball_tol: float = 1e-8,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.criterion = criterion
        self.ball_tol = ball_tol
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self):
        # The input the estimator takes, as GridSearchCV's: sparse X, and a Gram matrix
        # for kernel='precomputed' (cross-validation splits it by rows and columns).
        tags = super().__sklearn_tags__()
        estimator = self._estimator()
        if isinstance(estimator, MultiClassSVC):   # (anything else is refused by fit)
            inner = get_tags(estimator).input_tags
            tags.input_tags.sparse = inner.sparse
            tags.input_tags.pairwise = inner.pairwise
        return tags

    def _estimator(self):
        return MultiClassSVC(model="msvm2") if self.estimator is None else self.estimator

    def get_metadata_routing(self):
        """Get metadata routing of this object.

        ``fit``'s ``sample_weight`` is routed to the estimator's ``fit`` when the
        estimator requests it (``MultiClassSVC().set_fit_request(sample_weight=True)``);
        ``score`` consumes the search's own request (``set_score_request``).  See
        scikit-learn's User Guide on metadata routing.

        Returns
        -------
        routing : MetadataRouter
            A :class:`~sklearn.utils.metadata_routing.MetadataRouter` encapsulating
            routing information.
        """
        return MetadataRouter(owner=self).add_self_request(self).add(
            estimator=self._estimator(),
            method_mapping=MethodMapping().add(caller="fit", callee="fit"))

    def _check(self):
        estimator = self._estimator()
        if not isinstance(estimator, MultiClassSVC):
            raise TypeError("estimator must be a msvm.MultiClassSVC, got "
                            f"{type(estimator).__name__}.")
        if self.param_grid is None:
            raise ValueError("param_grid is required, e.g. {'C': [0.1, 1, 10], "
                             "'gamma': [0.01, 0.1, 1]}.")
        try:
            grid = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Invalid param_grid: {exc}") from exc
        if not grid:   # [] (no grids): fit would end in "No grid point converged"
            raise ValueError("param_grid has no points: give a dict of lists, e.g. "
                             "{'C': [0.1, 1, 10]}, or a non-empty list of such dicts.")
        valid = estimator.get_params()
        for params in grid:
            unknown = sorted(set(params) - set(valid))
            if unknown:
                raise ValueError(f"param_grid has parameters {unknown} that MultiClassSVC does "
                                 "not have.")
            if {**valid, **params}["model"] != "msvm2":
                raise ValueError("The radius-margin bound holds for model='msvm2' only; got "
                                 f"model={({**valid, **params})['model']!r}.")
            # Every point's values, before any training (not when its path is reached).
            clone(estimator).set_params(**params)._check_params()
        if self.criterion not in ("bound", "candidates"):
            raise ValueError(f"criterion must be 'candidates' or 'bound', got {self.criterion!r}.")
        if not is_real(self.ball_tol) or not self.ball_tol >= 0:
            raise ValueError(f"ball_tol must be a number >= 0, got {self.ball_tol!r}.")
        _check_n_jobs(self.n_jobs)
        return estimator, grid

    def fit(self: _Search, X: MatrixLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> _Search:
        """Train every grid point, compute its bound, keep the smallest.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (m, n_features)
        y : array-like of shape (m,)
        sample_weight : array-like of shape (m,), default=None
            Positive weights of the examples' losses (times the estimator's
            ``class_weight``): each grid point is the weighted M-SVM², whose
            example i has the kernel shift 1/(2C wᵢ).  The bounds hold for
            it unchanged (:mod:`msvm.bounds`, "Weights"); they bound the
            count of LOO errors.  A zero weight is a ValueError.  With
            ``sklearn.set_config(enable_metadata_routing=True)`` it is routed
            to the estimator (:meth:`get_metadata_routing`): the estimator must
            request it, ``MultiClassSVC(...).set_fit_request(sample_weight=True)``,
            or passing it is scikit-learn's error; without routing it always
            goes to the estimator, as GridSearchCV's fit parameters do.

        Returns
        -------
        self : RadiusMarginSearch
        """
        estimator, grid = self._check()
        if get_config().get("enable_metadata_routing", False):   # scikit-learn's public switch
            params = {} if sample_weight is None else {"sample_weight": sample_weight}
            sample_weight = process_routing(self, "fit", **params).estimator.fit.get(
                "sample_weight")
        # One task per path along C (the other parameters fixed), in the order of first
        # appearance in the grid; warm starts run along C within each path.
        by_rest: defaultdict[tuple[tuple[str, str], ...], list[int]] = defaultdict(list)
        for index, params in enumerate(grid):
            rest = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "C"))
            by_rest[rest].append(index)
        paths = [sorted(path, key=lambda i: grid[i].get("C", estimator.C))
                 for path in by_rest.values()]
        workers = _workers(self.n_jobs, len(paths))
        worker = _task_estimator(estimator, workers)
        bar = ProgressBar("RadiusMarginSearch", len(grid), "grid points",
                          enabled=bool(self.verbose))
        done, stop = [], _Stop()
        try:
            for path, result in zip(paths, Parallel(n_jobs=workers, return_as="generator")(
                    delayed(_search_path)(worker, X, y, [grid[i] for i in path], self.criterion,
                                          self.ball_tol, sample_weight, stop)
                    for path in paths), strict=True):
                done.append(result)
                last = result[0][-1]
                bar.update(len(path), note=f"{grid[path[-1]]}: bound {last['bound']:.4g} "
                                           f"({last['bound_rate']:.2%}), R2 "
                                           f"{last['radius2']:.4g}")
        finally:
            stop.stopped = True
            bar.close()
        records: list[Any] = [None] * len(grid)
        # (grid index, solution): the first best in path order, as a loop finds it
        best: tuple[int, Any] | None = None
        for path, (path_records, path_best) in zip(paths, done, strict=True):
            for index, record in zip(path, path_records, strict=True):
                records[index] = record
            if path_best is None:
                continue
            index = path[path_best[0]]
            if best is None or (_rank_key(records[index], self.criterion)
                                < _rank_key(records[best[0]], self.criterion)):
                best = (index, path_best[1])
        if best is None:
            raise RuntimeError("No grid point converged; the bounds assume optimal solutions ("
                               f"{_remedy([r['status'] for r in records])}).")
        self._store(X, y, estimator, grid, records, best, sample_weight)
        return self

    def _store(self, X, y, estimator, grid, records, best, sample_weight=None):
        results = {"params": grid}
        for name in sorted({k for params in grid for k in params}):
            column = np.ma.masked_all(len(grid), dtype=object)
            for i, params in enumerate(grid):
                if name in params:
                    column[i] = params[name]
            results[f"param_{name}"] = column
        for key in records[0]:
            results[key] = np.array([r[key] for r in records])
        order = sorted(range(len(grid)), key=lambda i: _rank_key(records[i], self.criterion))
        rank = np.empty(len(grid), dtype=np.int32)
        rank[order] = np.arange(1, len(grid) + 1)
        results["rank_bound"] = rank
        self.cv_results_ = results
        # The search's own solution of the best point becomes the model (no refit).
        index, solution = best
        est = clone(estimator).set_params(**grid[index])
        est.set_solution(est.prepare_fit(X, y, sample_weight), solution)
        self.best_index_ = int(index)
        self.best_params_ = dict(grid[index])
        self.best_score_ = float(records[index]["bound" if self.criterion == "bound"
                                                 else "n_candidates"])
        self.best_estimator_ = est
        self.classes_ = est.classes_
        self.n_features_in_ = est.n_features_in_
        if hasattr(est, "feature_names_in_"):   # X had string column names (as GridSearchCV)
            self.feature_names_in_ = est.feature_names_in_

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Predict with ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X: MatrixLike) -> NDArray[np.float64]:
        """Scores of ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)
