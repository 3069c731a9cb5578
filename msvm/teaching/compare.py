r"""Side-by-side comparisons that return tables as lists of records (no pandas).

:func:`compare_binary`
    The lecture's binary algorithms on one problem: the perceptron,
    SVMPrimal (its batch form at C, linear kernel only), SMO with each pair
    rule, the exact reference QP and scikit-learn's :class:`~sklearn.svm.SVC`
    (libsvm) on the same Gram matrix.  Every row has the same certificate
    (primal at the best b, dual, gap, KKT violation), iterations, time,
    accuracy and support vectors.

:func:`compare_multiclass`
    Every all-in-one machine of :mod:`msvm.machines` (WW, CS, LLW, M-SVM², ADM,
    ATS, ATM, OvA, MMR) beside scikit-learn's one-vs-one ``SVC`` and
    one-vs-rest ``OneVsRestClassifier(SVC)``: accuracy, support vectors,
    time, the dual and the relative duality gap, the radius–margin bound of
    the M-SVM² (:func:`msvm.radius_margin_bound`) and the exact leave-one-out
    error (:func:`msvm.loo_error`; scikit-learn's ``LeaveOneOut`` for the
    ``SVC`` rows) when the set is small enough.

    With two classes and a bias it also checks the README's equivalences:
    each machine at C against ``SVC`` at the equivalent binary C, scaled as
    in the table of :mod:`msvm.machines` (WW, CS: SVC(2C); LLW, ADM, ATM,
    MMR: 2 × SVC(C/2); ATS, OvA: 2 × SVC(C); M-SVM²: 2 × hard-margin SVC on
    k + δ/(2C)), and reports the largest difference of the decision values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from msvm.teaching.kernels import kernel_matrix, make_kernel
from msvm.teaching.perceptron import perceptron
from msvm.teaching.smo import PAIR_RULES, smo
from msvm.teaching.svm import (
    BinarySVM,
    binary_data,
    check_C,
    soft_margin_svm,
)
from msvm.teaching.svm_primal import primal_value, svm_primal

__all__ = ["BINARY_EQUIVALENTS", "bound_path", "compare_binary", "compare_multiclass",
           "format_table", "solver_certificates"]

#: With Q = 2: machine -> (C_binary / C, (h₂ − h₁) / SVC's decision function).
#: The M-SVM²'s counterpart is a hard-margin SVC on k + δ/(2C) (C_binary = ∞).
BINARY_EQUIVALENTS = {
    "ww": (2.0, 1.0), "cs": (2.0, 1.0),
    "llw": (0.5, 2.0), "adm": (0.5, 2.0), "atm": (0.5, 2.0), "mmr": (0.5, 2.0),
    "ats": (1.0, 2.0), "ova": (1.0, 2.0),
    "msvm2": (np.inf, 2.0),
}


def _binary_record(method: str, model, K: np.ndarray, y: np.ndarray, C: float, *,
                   alpha: np.ndarray | None, b: float, n_iter: int, seconds: float,
                   status: str, n_support: int, train_pred: np.ndarray,
                   test_pred: np.ndarray | None, y_test: np.ndarray | None,
                   primal: float | None = None) -> dict:
    record = {"method": method, "primal": primal, "dual": None, "gap": None,
              "relative_gap": None, "kkt_violation": None, "iterations": int(n_iter),
              "time": float(seconds), "accuracy": float(np.mean(train_pred == y)),
              "test_accuracy": None if y_test is None else float(np.mean(test_pred == y_test)),
              "n_support": int(n_support), "status": status}
    if alpha is not None:
        svm = BinarySVM(alpha=alpha, b=b, X=np.zeros((len(y), 0)), y=y, C=C,
                        kernel=lambda A, B: K, kernel_name="precomputed", method=method)
        cert = svm.certificate()
        record.update(primal=cert["primal"], dual=cert["dual"], gap=cert["gap"],
                      relative_gap=cert["relative_gap"], kkt_violation=cert["kkt_violation"])
    return record


def compare_binary(X, y, C: float = 1.0, kernel: str = "linear", *, X_test=None, y_test=None,
                   smo_tol: float = 1e-6, primal_steps: int = 2000,
                   perceptron_epochs: int = 200, **kernel_params) -> list[dict]:
    """The lecture's binary algorithms side by side on one problem.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Two labels (coded ±1, the larger one +1).
    C : float, default=1.0
        A finite C > 0.
    kernel : str, default='linear'
        A lecture kernel (:mod:`msvm.teaching.kernels`).
    X_test, y_test : array-like, optional
        A test set for ``test_accuracy``.
    smo_tol : float, default=1e-6
        KKT tolerance of SMO (and of SVC, whose ``tol`` is the same m − M).
    primal_steps : int, default=2000
        Steps of SVMPrimal's batch form, with λ = 1 / (1 + C n R²),
        R² = max ‖x_i‖² (a step that keeps the hinge part of each step below
        the size of w).
    perceptron_epochs : int, default=200
        Passes after which the perceptron is reported as not converged.
    **kernel_params
        The kernel's parameters.

    Returns
    -------
    list of dict
        One record per method with ``method``, ``primal`` (P at C; for the
        perceptron and SVMPrimal, of their (w, b)), ``dual``, ``gap``,
        ``relative_gap``, ``kkt_violation`` (None where there is no α),
        ``iterations``, ``time``, ``accuracy``, ``test_accuracy``,
        ``n_support`` and ``status``.

    Examples
    --------
    >>> from msvm.teaching import compare_binary, format_table, overlapping_set
    >>> X, y = overlapping_set(40, random_state=0)
    >>> records = compare_binary(X, y, C=1.0)
    >>> print(format_table(records, columns=["method", "status", "primal"]))
    method                            status                      primal
    --------------------------------  --------------------------  ------
    perceptron                        not converged (200 epochs)  30.15
    SVMPrimal (batch, lambda=0.0015)  step limit                  17.06
    SMO (platt)                       optimal                     17.06
    SMO (max_violating)               optimal                     17.06
    SMO (second_order)                optimal                     17.06
    reference QP (Clarabel)           optimal                     17.06
    scikit-learn SVC (libsvm)         optimal                     17.06
    """
    from sklearn.svm import SVC

    C = check_C(C)   # C = inf or 0 failed in SVMPrimal's step, as "lam must be in (0, 1)"
    X, y, classes = binary_data(X, y)
    if y_test is not None:
        y_test = np.asarray(y_test)
        unknown = np.setdiff1d(y_test, classes)
        if unknown.size:   # they would count as the −1 class
            raise ValueError(f"y_test has labels {unknown.tolist()} that are not the training "
                             f"labels {classes.tolist()}.")
        y_test = np.where(y_test == classes[1], 1.0, -1.0)
        X_test = np.asarray(X_test, dtype=np.float64)
    f = make_kernel(kernel, **kernel_params)
    K = kernel_matrix(X, X, f)
    K_test = None if X_test is None else kernel_matrix(X_test, X, f)
    n = len(y)

    def pred(scores):
        return np.where(scores >= 0, 1.0, -1.0)

    records = []
    p = perceptron(X, y, kernel, max_epochs=perceptron_epochs, **kernel_params)
    u = K @ (p.counts * y) + p.b
    records.append(_binary_record(
        "perceptron", p, K, y, C, alpha=None, b=p.b, n_iter=p.n_updates, seconds=p.time,
        status="converged" if p.converged else f"not converged ({p.n_epochs} epochs)",
        n_support=int(np.count_nonzero(p.counts)), train_pred=pred(u),
        test_pred=None if K_test is None else pred(K_test @ (p.counts * y) + p.b),
        y_test=y_test, primal=float(0.5 * (p.counts * y) @ K @ (p.counts * y)
                                     + C * np.maximum(0.0, 1.0 - y * u).sum())))
    if kernel == "linear":
        lam = 1.0 / (1.0 + C * n * float(np.max(np.sum(X**2, axis=1))))
        sp = svm_primal(X, y, lam, mode="batch", C=C, epochs=primal_steps, reference=False)
        records.append(_binary_record(
            f"SVMPrimal (batch, lambda={lam:.2g})", sp, K, y, C, alpha=None, b=sp.b,
            n_iter=primal_steps, seconds=sp.time, status="step limit",
            n_support=int(np.count_nonzero(y * sp.decision_function(X) <= 1.0)),
            train_pred=sp.predict(X), test_pred=None if X_test is None else sp.predict(X_test),
            y_test=y_test, primal=primal_value(sp.w, sp.b, X, y, C)))
    for rule in PAIR_RULES:
        r = smo(X, y, C, kernel, pair=rule, tol=smo_tol, record_every=10**9, **kernel_params)
        records.append(_binary_record(
            r.method, r, K, y, C, alpha=r.alpha, b=r.b, n_iter=r.n_iter, seconds=r.time,
            status=r.status, n_support=int(np.count_nonzero(r.alpha)),
            train_pred=pred(K @ (r.alpha * y) + r.b),
            test_pred=None if K_test is None else pred(K_test @ (r.alpha * y) + r.b),
            y_test=y_test))
    ref = soft_margin_svm(X, y, C, kernel, **kernel_params)
    records.append(_binary_record(
        "reference QP (Clarabel)", ref, K, y, C, alpha=ref.alpha, b=ref.b, n_iter=ref.n_iter,
        seconds=ref.time, status=ref.status,
        n_support=int(np.count_nonzero(ref.kkt_kinds() != "non_sv")),
        train_pred=pred(K @ (ref.alpha * y) + ref.b),
        test_pred=None if K_test is None else pred(K_test @ (ref.alpha * y) + ref.b),
        y_test=y_test))
    start = time.perf_counter()
    svc = SVC(C=C, kernel="precomputed", tol=smo_tol).fit(K, y)
    seconds = time.perf_counter() - start
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    b_svc = float(svc.intercept_[0])
    records.append(_binary_record(
        "scikit-learn SVC (libsvm)", svc, K, y, C, alpha=alpha, b=b_svc,
        n_iter=int(np.sum(svc.n_iter_)), seconds=seconds, status="optimal",
        n_support=len(svc.support_), train_pred=pred(svc.decision_function(K)),
        test_pred=None if K_test is None else pred(svc.decision_function(K_test)),
        y_test=y_test))
    return records


def _svc_kernel_params(kernel: str | Callable[..., Any], gamma, degree, coef0) -> dict:
    return {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}


def compare_multiclass(X, y, C: float = 1.0, kernel: str = "rbf", *, gamma="scale",
                       degree: int = 3, coef0: float = 0.0, models=None,
                       fit_intercept: bool = True, solver: str = "cvxpy", X_test=None,
                       y_test=None, loo: bool | None = None, loo_max_samples: int = 60,
                       loo_models=("msvm2",), return_estimators: bool = False):
    """Every all-in-one machine beside one-vs-one and one-vs-rest SVC (module docstring).

    Parameters
    ----------
    X : array-like of shape (m, d)
    y : array-like of shape (m,)
    C : float, default=1.0
        The same C for every method, in each machine's original formulation
        (so the machines are *not* at equivalent regularisation; with two
        classes, ``q2_*`` fields give the equivalent SVC).
    kernel : {'linear', 'poly', 'rbf', 'laplace', 'sigmoid'}, default='rbf'
        scikit-learn's kernel conventions (shared by :class:`msvm.MultiClassSVC`
        and :class:`sklearn.svm.SVC`; ``'laplace'`` is used for the SVC rows
        through the same callable).
    gamma, degree, coef0
        Kernel parameters, as in :class:`sklearn.svm.SVC`.
    models : sequence of str, optional
        Machines of :data:`msvm.machines.MACHINES` (default: all of them).
    fit_intercept : bool, default=True
        Bias in the machines (SVC always has one; the Q = 2 equivalences
        need it).
    solver : str, default='cvxpy'
        :class:`msvm.MultiClassSVC` solver (the exact reference by default:
        the comparison is of machines, not of solvers).
    X_test, y_test : array-like, optional
        A test set for ``test_accuracy``.
    loo : bool, optional
        Compute exact leave-one-out errors; default: when m ≤
        ``loo_max_samples``.
    loo_max_samples : int, default=60
    loo_models : sequence of str, default=('msvm2',)
        Machines whose exact LOO is computed (``loo_error`` retrains each
        support vector), in addition to the SVC rows.
    return_estimators : bool, default=False
        Also return the fitted estimators by method name.

    Returns
    -------
    records : list of dict
        One per method: ``method``, ``model`` (machine name, or ``'ovo'`` /
        ``'ovr'``), ``accuracy``, ``test_accuracy``, ``n_support``, ``time``,
        ``dual``, ``relative_gap`` (None for SVC), ``loo_error`` (exact LOO
        error rate, or None), ``bound`` and ``n_candidates`` (radius–margin
        bound on the LOO error count and the key lemma's count, M-SVM² only),
        ``bound_rate`` (bound / m), and with two classes and a bias
        ``q2_equivalent`` (the SVC it equals) and ``q2_max_abs_diff``
        (largest absolute value of h₂ − h₁ − scale × SVC's decision function over
        the training and test points).
    estimators : dict, only with ``return_estimators=True``

    Examples
    --------
    >>> from msvm.teaching import compare_multiclass, format_table, multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> records = compare_multiclass(X, y, C=1.0, models=["ww", "cs"])
    >>> print(format_table(records, columns=["method", "accuracy", "n_support"]))
    method                   accuracy  n_support
    -----------------------  --------  ---------
    WW (all-in-one)          1         9
    CS (all-in-one)          1         9
    one-vs-one SVC (libsvm)  1         11
    one-vs-rest SVC          1         12
    """
    from sklearn.model_selection import LeaveOneOut, cross_val_score
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from msvm import MultiClassSVC, RadiusMarginSearch, loo_error
    from msvm.machines import MACHINES

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    m = len(y)
    classes = np.unique(y)
    Q = len(classes)
    # models="ww" was read letter by letter ("Got 'w'"); X_test without y_test failed in
    # accuracy_score, a test set of another width in np.vstack.
    if isinstance(models, str):
        raise ValueError(f"models must be a sequence of machine names, e.g. [{models!r}]; "
                         f"got the string {models!r}.")
    models = list(MACHINES) if models is None else list(models)
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test must be given together.")
    if X_test is not None:
        X_test, y_test = np.asarray(X_test, dtype=np.float64), np.asarray(y_test)
        if X.ndim == 2 and (X_test.ndim != 2 or X_test.shape[1] != X.shape[1]):
            raise ValueError(f"X_test must have X's {X.shape[1]} features per row; got "
                             f"shape {X_test.shape}.")
        if y_test.shape != (len(X_test),):
            raise ValueError(f"y_test must have one label per row of X_test, shape "
                             f"({len(X_test)},); got shape {y_test.shape}.")
    loo = (m <= loo_max_samples) if loo is None else bool(loo)
    svc_kernel: str | Callable[..., Any] = kernel
    if kernel == "laplace":  # SVC has no Laplace kernel string; the same function
        from sklearn.metrics.pairwise import laplacian_kernel

        from msvm.kernels import resolve_gamma

        g = resolve_gamma(gamma, X)
        svc_kernel = lambda A, B: laplacian_kernel(A, B, gamma=g)  # noqa: E731
    params = dict(kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    points = X if X_test is None else np.vstack([X, np.asarray(X_test, dtype=np.float64)])
    records, estimators = [], {}

    def accuracy(est):
        acc = float(est.score(X, y))
        test = None if X_test is None else float(est.score(X_test, y_test))
        return acc, test

    for model in models:
        est = MultiClassSVC(model=model, C=C, fit_intercept=fit_intercept, solver=solver,
                            **params)
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
        acc, test = accuracy(est)
        record = {"method": f"{model.upper()} (all-in-one)", "model": model,
                  "accuracy": acc, "test_accuracy": test, "n_support": len(est.support_),
                  "time": seconds, "dual": est.solution_["dual_objective"],
                  "relative_gap": est.solution_["relative_gap"], "loo_error": None,
                  "bound": None, "bound_rate": None, "n_candidates": None}
        if model == "msvm2":
            search = RadiusMarginSearch(MultiClassSVC(model="msvm2", fit_intercept=fit_intercept,
                                                      solver=solver, **params),
                                        {"C": [C]}).fit(X, y)
            record.update(bound=float(search.cv_results_["bound"][0]),
                          bound_rate=float(search.cv_results_["bound_rate"][0]),
                          n_candidates=int(search.cv_results_["n_candidates"][0]))
        if loo and model in loo_models:
            record["loo_error"] = loo_error(est, X, y).error_rate
        if Q == 2 and fit_intercept:
            record.update(_q2_check(est, model, C, X, y, points, svc_kernel, gamma, degree,
                                    coef0))
        records.append(record)
        estimators[record["method"]] = est
    for name, model, est in (
            ("one-vs-one SVC (libsvm)", "ovo",
             SVC(C=C, **_svc_kernel_params(svc_kernel, gamma, degree, coef0))),
            ("one-vs-rest SVC", "ovr",
             OneVsRestClassifier(SVC(C=C, **_svc_kernel_params(svc_kernel, gamma, degree,
                                                                coef0))))):
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
        acc, test = accuracy(est)
        n_sv = (len(est.support_) if model == "ovo" else
                len(set().union(*(set(e.support_) for e in est.estimators_))))
        record = {"method": name, "model": model, "accuracy": acc, "test_accuracy": test,
                  "n_support": n_sv, "time": seconds, "dual": None, "relative_gap": None,
                  "loo_error": None, "bound": None, "bound_rate": None, "n_candidates": None}
        if loo:
            scores = cross_val_score(est, X, y, cv=LeaveOneOut())
            record["loo_error"] = float(1.0 - scores.mean())
        records.append(record)
        estimators[name] = est
    return (records, estimators) if return_estimators else records


def _q2_check(est, model, C, X, y, points, svc_kernel, gamma, degree, coef0) -> dict:
    """The README's two-class equivalence of ``model``, measured."""
    from sklearn.svm import SVC

    from msvm.kernels import Kernel, resolve_gamma

    ratio_C, scale = BINARY_EQUIVALENTS[model]
    ours = est.decision_function(points)  # h₂ − h₁ (scikit-learn's binary convention)
    if model == "msvm2":
        kern = Kernel(X, est.kernel, gamma=resolve_gamma(gamma, X), degree=degree, coef0=coef0)
        K = kern.gram() + np.eye(len(X)) / (2.0 * C)
        svc = SVC(C=1e8, kernel="precomputed", tol=1e-12).fit(K, y)
        theirs = svc.decision_function(kern.block(points))
        label = "2 x hard-margin SVC on k + delta/(2C)"
    else:
        svc = SVC(C=ratio_C * C, kernel=svc_kernel, gamma=gamma, degree=degree, coef0=coef0,
                  tol=1e-10).fit(X, y)
        theirs = svc.decision_function(points)
        label = f"{scale:g} x SVC(C={ratio_C * C:g})"
    return {"q2_equivalent": label,
            "q2_max_abs_diff": float(np.max(np.abs(ours - scale * theirs)))}


def format_table(records: list[dict], columns=None, floatfmt: str = ".4g") -> str:
    """Plain-text table of records (what the lessons print).

    Parameters
    ----------
    records : list of dict
    columns : sequence of str, optional
        Keys to show (default: every key of the first record).
    floatfmt : str, default='.4g'

    Returns
    -------
    str
        With ``columns`` and no records, the header alone.

    Raises
    ------
    ValueError
        If there are neither records nor ``columns`` (no column to show).

    Examples
    --------
    >>> from msvm.teaching import format_table
    >>> print(format_table([{"method": "SMO", "gap": 1.23456e-9, "n_iter": 74},
    ...                     {"method": "QP", "gap": 0.0, "n_iter": 12}]))
    method  gap        n_iter
    ------  ---------  ------
    SMO     1.235e-09  74
    QP      0          12
    """
    if columns is None and not records:   # was an IndexError
        raise ValueError("format_table needs records or columns: nothing to show.")
    columns = list(records[0]) if columns is None else list(columns)

    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, float | np.floating):
            return format(float(v), floatfmt)
        return str(v)

    rows = [[cell(r.get(c)) for c in columns] for r in records]
    widths = [max([len(c)] + [len(row[k]) for row in rows]) for k, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def bound_path(X, y, Cs, *, kernel: str = "rbf", gamma="scale", fit_intercept: bool = False,
               solver: str = "auto", loo: bool = True) -> list[dict]:
    """The M-SVM²'s radius–margin bound and exact LOO error along a path of C.

    Parameters
    ----------
    X : array-like of shape (m, d)
    y : array-like of shape (m,)
    Cs : sequence of float
    kernel : str, default='rbf'
    gamma : {'scale', 'auto'} or float, default='scale'
    fit_intercept : bool, default=False
        Bias-free (the machine msvm's decomposition solvers train) or with a
        bias (the smallest enclosing ball is then computed).
    solver : str, default='auto'
        :class:`msvm.MultiClassSVC` solver.
    loo : bool, default=True
        Compute the exact LOO error (:func:`msvm.loo_error`) at each C.

    Returns
    -------
    list of dict
        One per C: ``C``, ``bound`` (bound on the LOO error count),
        ``n_candidates`` (the key lemma's count, ≤ ``bound``), ``loo_errors``
        (exact count, or None), ``n_samples``, ``n_support``.  The bound
        theorem says ``loo_errors ≤ n_candidates ≤ bound`` at every C.
    """
    from msvm import MultiClassSVC, RadiusMarginSearch, loo_error

    estimator = MultiClassSVC(model="msvm2", kernel=kernel, gamma=gamma,
                              fit_intercept=fit_intercept, solver=solver, tol=1e-6)
    search = RadiusMarginSearch(estimator, {"C": list(Cs)}).fit(X, y)
    res = search.cv_results_
    records = []
    for k, C in enumerate(res["param_C"]):
        errors = (loo_error(estimator.set_params(C=float(C)), X, y).n_errors if loo else None)
        records.append({"C": float(C), "bound": float(res["bound"][k]),
                        "n_candidates": int(res["n_candidates"][k]), "loo_errors": errors,
                        "n_samples": len(y), "n_support": int(res["n_support"][k])})
    return records


def solver_certificates(X, y, model: str = "ww", C: float = 1.0, *, kernel: str = "rbf",
                        gamma="scale", solvers=None, tol: float = 1e-3) -> list[dict]:
    """One machine solved by every msvm solver, each with its certificate of optimality.

    Bias-free, so that every solver applies.  The numbers are those of
    :func:`msvm.diagnostics.diagnose` (``MultiClassSVC.solution_``).

    Parameters
    ----------
    X : array-like of shape (m, d)
    y : array-like of shape (m,)
    model : str, default='ww'
        A bias-free machine that ``s2do`` and ``online`` support.
    C : float, default=1.0
    kernel : str, default='rbf'
    gamma : {'scale', 'auto'} or float, default='scale'
    solvers : sequence of (name, dict), optional
        (label, MultiClassSVC keyword arguments) pairs; default: ``cvxpy``,
        ``osqp``, ``s2do``, ``frank_wolfe``, ``online`` with one epoch and
        ``online`` until convergence.
    tol : float, default=1e-3
        ``tol`` of the iterative solvers.

    Returns
    -------
    list of dict
        ``method``, ``status``, ``dual``, ``primal``, ``relative_gap``,
        ``kkt_violation``, ``kkt_residual``, ``n_iter``, ``time``,
        ``n_support`` and ``accuracy`` (training).
    """
    from msvm import MultiClassSVC

    if solvers is None:
        solvers = [("cvxpy (Clarabel)", {"solver": "cvxpy"}), ("osqp", {"solver": "osqp"}),
                   ("s2do", {"solver": "s2do"}), ("frank_wolfe", {"solver": "frank_wolfe"}),
                   ("online, 1 epoch", {"solver": "online", "epochs": 1, "random_state": 0}),
                   ("online, to tol", {"solver": "online", "epochs": None, "random_state": 0})]
    records = []
    for label, options in solvers:
        est = MultiClassSVC(model=model, C=C, kernel=kernel, gamma=gamma, tol=tol,
                            **options).fit(X, y)
        s = est.solution_
        records.append({"method": label, "status": s["status"], "dual": s["dual_objective"],
                        "primal": s["primal_objective"], "relative_gap": s["relative_gap"],
                        "kkt_violation": s["kkt_violation"], "kkt_residual": s["kkt_residual"],
                        "n_iter": s["n_iter"], "time": s["time"], "n_support": s["n_support"],
                        "accuracy": float(est.score(X, y))})
    return records
