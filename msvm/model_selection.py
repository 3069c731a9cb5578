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
    removed (a warm start, for the solvers that take one), in parallel with
    joblib.  The non-support-vector claim is checked on every call: the
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

Kernel rows.  Retraining without point p only needs the Gram matrix with row
and column p removed, so :func:`loo_error` computes the Gram matrix once (up
to :data:`GRAM_MAX_SAMPLES` points) and hands each reduced problem its
sub-block as a precomputed kernel.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from numbers import Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from msvm.bounds import enclosing_ball, radius_margin_bound
from msvm.diagnostics import diagnose, kkt_violation
from msvm.estimator import MultiClassSVC
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


def _solve(estimator: MultiClassSVC, solver_name: str, problem: DualProblem, warm_start=None,
           tol: float | None = None):
    """Solve with the estimator's solver settings (``tol`` at most ``tol`` when given)."""
    module = get_solver(solver_name)
    options = estimator._solver_options(solver_name, module, problem)
    if warm_start is not None and "warm_start" in module.OPTIONS:
        options["warm_start"] = warm_start
    if tol is not None and "tol" in options:
        options["tol"] = min(options["tol"], tol)
    if problem.kernel.is_precomputed and module.BLAS_THREADS:
        # Limiting BLAS threads costs a few ms a call; precomputed rows need no BLAS.
        options["blas_threads"] = None
    return module.solve(problem, **options)


def _kkt_tolerance(estimator: MultiClassSVC, solver_name: str) -> float:
    if get_solver(solver_name).STOPPING_RULE is None:
        return _REFERENCE_KKT_TOL
    return max(float(estimator.tol), TOL_FLOOR) * (1 + 1e-6)


def _retrain(estimator, solver_name, machine, y, kernel, C, fit_intercept, alpha, points, K):
    """LOO scores h(x_p) of the machine retrained without p, and whether each converged."""
    m = len(y)
    out = np.empty((len(points), machine.n_classes))
    converged = np.empty(len(points), dtype=bool)
    for k, p in enumerate(points):
        keep = np.flatnonzero(np.arange(m) != p)
        if K is not None:
            sub = Kernel(np.ascontiguousarray(K[np.ix_(keep, keep)]), "precomputed")
            row = K[p, keep]
        else:
            sub = Kernel(kernel.X[keep], kernel.name, gamma=kernel.gamma, degree=kernel.degree,
                         coef0=kernel.coef0)
            row = kernel.gram(np.array([p]), keep)[0]
        problem = DualProblem(machine, y[keep], sub, C, fit_intercept)
        solution = _solve(estimator, solver_name, problem, warm_start=alpha[keep])
        out[k] = row @ problem.beta(solution.alpha) + solution.b
        converged[k] = solution.status == "optimal"
    return out, converged


def loo_error(estimator, X, y, n_jobs=None) -> LeaveOneOut:
    """Exact leave-one-out error of a :class:`~msvm.MultiClassSVC` configuration.

    Parameters
    ----------
    estimator : MultiClassSVC
        The configuration to evaluate (cloned; any machine, kernel, solver,
        with or without a bias).
    X : {array-like, sparse matrix} of shape (m, n_features)
    y : array-like of shape (m,)
    n_jobs : int, optional
        Parallel jobs for the retraining (joblib; None means 1).

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
    """
    if not isinstance(estimator, MultiClassSVC):
        raise TypeError(f"estimator must be a msvm.MultiClassSVC, got {type(estimator).__name__}.")
    start = time.perf_counter()
    est = clone(estimator)
    X, classes, problem, solver_name, _ = est._build_problem(X, y)
    m = problem.n_samples
    solution = _solve(est, solver_name, problem)
    alpha = np.where(problem.active, solution.alpha, 0.0)
    diag = diagnose(problem, solution)
    b = diag.b if problem.fit_intercept else np.zeros(problem.n_classes)
    beta = problem.beta(alpha)
    support = np.flatnonzero(np.any(alpha > 0, axis=1))
    non_support = np.setdiff1d(np.arange(m), support)

    # Non-support vectors: the reduced problem's violation is the largest of the others'.
    G = problem.gradient(alpha) + np.einsum("ipc,c->ip", problem.nu[problem.y], b)
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
            f"{tolerance:.3e}: the full solution is not optimal (solver {solver_name!r}, status "
            f"{solution.status!r}); tighten tol or raise max_iter.")

    F = problem.kernel.matmul(beta) + b  # h(x_i); β_p = 0 so no M-SVM² shift term
    scores = F.copy()
    if len(support):
        kernel = problem.kernel
        K = kernel.gram() if (kernel.is_precomputed or m <= GRAM_MAX_SAMPLES) else None
        n_chunks = 1 if n_jobs in (None, 1) else max(1, min(len(support), 4 * abs(int(n_jobs))))
        chunks = np.array_split(support, n_chunks)
        args = (est, solver_name, problem.machine, problem.y, kernel, problem.C,
                problem.fit_intercept, alpha)
        # Threads: the solvers' loops release the GIL, and the Gram matrix is shared.
        parts = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_retrain)(*args, chunk, K) for chunk in chunks if len(chunk))
        scores[support] = np.concatenate([part[0] for part in parts])
        failed = int(np.count_nonzero(~np.concatenate([part[1] for part in parts])))
        if failed:
            raise RuntimeError(
                f"{failed} of the {len(support)} retrained machines did not converge (solver "
                f"{solver_name!r}); their LOO predictions would not be those of optimal "
                "machines. Raise max_iter or use another solver.")
    pred = np.argmax(scores, axis=1)
    errors = pred != problem.y
    return LeaveOneOut(n_errors=int(errors.sum()), errors=errors, predictions=classes[pred],
                       support=support, reduced_kkt_violation=reduced, kkt_tolerance=tolerance,
                       time=time.perf_counter() - start)


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
    verbose : int, default=0
        Print one line per grid point.

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
    """

    def __init__(self, estimator=None, param_grid=None, *, criterion: str = "candidates",
                 ball_tol: float = 1e-8, verbose: int = 0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.criterion = criterion
        self.ball_tol = ball_tol
        self.verbose = verbose

    def _check(self):
        estimator = MultiClassSVC(model="msvm2") if self.estimator is None else self.estimator
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
        valid = estimator.get_params()
        for params in grid:
            unknown = sorted(set(params) - set(valid))
            if unknown:
                raise ValueError(f"param_grid has parameters {unknown} that MultiClassSVC does "
                                 "not have.")
            if {**valid, **params}["model"] != "msvm2":
                raise ValueError("The radius-margin bound holds for model='msvm2' only; got "
                                 f"model={({**valid, **params})['model']!r}.")
        if self.criterion not in ("bound", "candidates"):
            raise ValueError(f"criterion must be 'candidates' or 'bound', got {self.criterion!r}.")
        if not isinstance(self.ball_tol, Real) or not self.ball_tol >= 0:
            raise ValueError(f"ball_tol must be a number >= 0, got {self.ball_tol!r}.")
        return estimator, grid

    def fit(self, X, y):
        """Train every grid point, compute its bound, keep the smallest.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (m, n_features)
        y : array-like of shape (m,)

        Returns
        -------
        self : RadiusMarginSearch
        """
        estimator, grid = self._check()
        # Warm starts run along C within each group of the other parameters.
        groups = defaultdict(list)
        for index, params in enumerate(grid):
            rest = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "C"))
            groups[rest].append(index)
        records = [None] * len(grid)
        best = None
        for indices in groups.values():
            indices.sort(key=lambda i: grid[i].get("C", estimator.C))
            previous, ball = None, None
            for index in indices:
                est = clone(estimator).set_params(**grid[index])
                tic = time.perf_counter()
                X_, classes, problem, solver_name, gamma_ = est._build_problem(X, y)
                warm = previous if previous is not None and previous.shape == problem.zeros(
                ).shape else None
                solution = _solve(est, solver_name, problem, warm_start=warm,
                                  tol=BOUND_RTOL / (problem.n_classes - 1))
                fit_time = time.perf_counter() - tic
                tic = time.perf_counter()
                if problem.fit_intercept:
                    ball = enclosing_ball(problem.kernel, shift=problem.kernel_shift,
                                          tol=self.ball_tol, warm_start=ball,
                                          cache_size=est.cache_size)
                bound = radius_margin_bound(problem, solution, ball=ball)
                bound_time = time.perf_counter() - tic
                previous = solution.alpha
                records[index] = dict(
                    bound=bound.bound, bound_rate=bound.error_rate, radius2=bound.radius2,
                    sum_alpha=bound.sum_alpha, n_candidates=bound.n_candidates,
                    n_support=int(np.count_nonzero(np.any(solution.alpha > 0, axis=1))),
                    fit_time=fit_time, bound_time=bound_time, time=fit_time + bound_time,
                    status=solution.status, converged=solution.status == "optimal")
                if self.verbose:
                    print(f"[RadiusMarginSearch] {grid[index]}: bound {bound.bound:.4g} "
                          f"({bound.error_rate:.2%}), R2 {bound.radius2:.4g}, 1'a "
                          f"{bound.sum_alpha:.4g}, {fit_time + bound_time:.2f} s", flush=True)
                if records[index]["converged"] and (
                        best is None or self._key(records[index]) < self._key(records[best[0]])):
                    best = (index, est, X_, classes, problem, solution, gamma_)
        if best is None:
            raise RuntimeError("No grid point converged; the bounds assume optimal solutions. "
                               "Raise max_iter or use another solver.")
        self._store(grid, records, best)
        return self

    def _key(self, record):
        # A grid point whose solve did not converge ranks after every converged one.
        if self.criterion == "candidates":
            return (not record["converged"], record["n_candidates"], record["bound"])
        return (not record["converged"], record["bound"])

    def _store(self, grid, records, best):
        results = {"params": grid}
        for name in sorted({k for params in grid for k in params}):
            column = np.ma.masked_all(len(grid), dtype=object)
            for i, params in enumerate(grid):
                if name in params:
                    column[i] = params[name]
            results[f"param_{name}"] = column
        for key in records[0]:
            results[key] = np.array([r[key] for r in records])
        order = sorted(range(len(grid)), key=lambda i: self._key(records[i]))
        rank = np.empty(len(grid), dtype=np.int32)
        rank[order] = np.arange(1, len(grid) + 1)
        results["rank_bound"] = rank
        self.cv_results_ = results
        index, est, X, classes, problem, solution, gamma_ = best
        est._set_fitted(X, classes, problem, solution, gamma_)
        self.best_index_ = int(index)
        self.best_params_ = dict(grid[index])
        self.best_score_ = float(records[index]["bound" if self.criterion == "bound"
                                                 else "n_candidates"])
        self.best_estimator_ = est
        self.classes_ = est.classes_
        self.n_features_in_ = est.n_features_in_

    def predict(self, X):
        """Predict with ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X):
        """Scores of ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)
