"""scikit-learn estimator for all-in-one multi-class SVMs.

:class:`MultiClassSVC` is the user-facing layer of DESIGN.md §3: it validates
the input, encodes the labels, resolves the kernel parameters, builds one
:class:`~msvm.problem.DualProblem`, hands it to a solver of
:mod:`msvm.solvers`, and certifies the answer with
:func:`msvm.diagnostics.diagnose`.  Whatever machine or solver produced it,
the fitted model is the coefficient matrix β (``dual_coef_``) of
h_c(x) = Σ_i β_ic k(x_i, x) + b_c, and the prediction is argmax_c h_c(x).
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, InconsistentVersionWarning
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_is_fitted,
    validate_data,
)

from msvm._numbers import is_real
from msvm._typing import MatrixLike
from msvm.diagnostics import diagnose
from msvm.kernels import (
    KERNELS,
    Kernel,
    block_rows,
    callable_block,
    canonical_csr,
    check_gram,
    check_kernel_range,
    resolve_gamma,
)
from msvm.machines import MACHINES, make_machine
from msvm.problem import DualProblem, DualSolution, class_coefficients
from msvm.solvers import ESTIMATOR_OPTIONS, SOLVERS, TOL_FLOOR, get_solver, resolve_solver
from msvm.solvers._common import limit_blas_threads, n_threads
from msvm.solvers.online import STRATEGIES, OnlineStream

__all__ = ["MultiClassSVC", "FitSetup", "MsvmVersionWarning"]

#: ``self``'s type in the methods that return it (``typing.Self`` is Python 3.11+), so that
#: ``fit`` of a subclass is typed as returning the subclass.
_Estimator = TypeVar("_Estimator", bound="MultiClassSVC")

#: Options that define the algorithm (not only its speed): a solver that would
#: ignore them is an error, not a warning.
_DEFINING_OPTIONS = frozenset({"online_strategy", "epochs"})

#: Parameters that define the problem a fitted model solves: partial_fit continues a
#: model only while they are the ones it was fitted with.
_PROBLEM_PARAMS = ("model", "C", "kernel", "gamma", "degree", "coef0", "class_weight")

#: A solver's "optimal" stands when the float64 KKT violation is within this
#: factor of ``tol`` (the solver's own test passed on its running scores).
_KKT_SLACK = 1.0 + 1e-6

# Test rows scored at once in decision_function (a block of _add_by_blocks), and the
# fewest rows worth a block of their own on another thread (each block pays the
# kernel's input checks; a thread pool costs more than scoring a few rows).
_PREDICT_CHUNK = 2048
_PREDICT_MIN_BLOCK = 256

#: Statuses that are not a failure to converge: the online solver stopped after
#: the epochs it was asked for (an approximation by design).
_EXPECTED_STATUSES = frozenset({"optimal", "epoch_limit"})

#: What the ConvergenceWarning suggests, by status ('max_iter' and any other: the default).
_ADVICE = {"stalled": "Its progress fell below round-off: raise tol, scale the features "
                      "(e.g. sklearn.preprocessing.StandardScaler) or try another solver."}
_DEFAULT_ADVICE = "Increase max_iter or try another solver."


@dataclass(frozen=True)
class FitSetup:
    """A validated training problem, ready to solve: what :meth:`MultiClassSVC.prepare_fit` returns.

    Attributes
    ----------
    X : ndarray or CSR matrix of shape (n_examples, n_features)
        The validated training points of the problem (float64; the Gram
        matrix for ``kernel='precomputed'``): the rows of the user's X whose
        weight is positive (all of them when no weight is zero).
    classes : ndarray of shape (n_classes,)
        The sorted labels; ``problem.y`` holds their codes 0 … Q − 1.
    problem : DualProblem
        The dual of the estimator's machine on (X, y).
    solver : str
        The solver ``solver='auto'`` resolved to (a key of
        :data:`msvm.solvers.SOLVERS`).
    gamma : float
        The kernel γ used (``gamma='scale'`` and ``'auto'`` resolved).
    started : float
        :func:`time.perf_counter` when the setup was made (the verbose log
        reports the total time of the fit from it).
    index : ndarray of shape (n_examples,) or None
        The row of the user's X of each example of the problem, when
        examples of weight zero were left out (None: every row, in order).
    fit_shape : tuple of int or None
        Shape of the user's X (None: ``X.shape``).
    class_weight : ndarray of shape (n_classes,) or None
        The class weights used (``class_weight`` resolved; None: all 1).
    """

    X: np.ndarray | sp.csr_matrix
    classes: np.ndarray
    problem: DualProblem
    solver: str
    gamma: float
    started: float = field(default_factory=time.perf_counter)
    index: np.ndarray | None = None
    fit_shape: tuple | None = None
    class_weight: np.ndarray | None = None


class MsvmVersionWarning(InconsistentVersionWarning):
    """A pickled :class:`MultiClassSVC` is loaded by another msvm version than saved it.

    A subclass of scikit-learn's :class:`~sklearn.exceptions.InconsistentVersionWarning`,
    so that a filter for that warning also covers this one; the message names
    the msvm versions.

    Examples
    --------
    A pickle is read by the same msvm that wrote it without a warning; here the
    state of a model is marked as written by msvm 0.0.1 to show the warning.

    >>> import warnings
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.exceptions import InconsistentVersionWarning
    >>> from msvm import MsvmVersionWarning, MultiClassSVC
    >>> issubclass(MsvmVersionWarning, InconsistentVersionWarning)
    True
    >>> X, y = load_iris(return_X_y=True)
    >>> state = MultiClassSVC().fit(X, y).__getstate__()
    >>> state["_msvm_version"] = "0.0.1"
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     MultiClassSVC().__setstate__(state)
    >>> caught[0].category.__name__, caught[0].message.original_sklearn_version
    ('MsvmVersionWarning', '0.0.1')
    """

    def __init__(self, *, estimator_name, current_version, original_version):
        super().__init__(estimator_name=estimator_name, current_sklearn_version=current_version,
                         original_sklearn_version=original_version)

    def __str__(self):
        return (f"Unpickling a {self.estimator_name} pickled by msvm "
                f"{self.original_sklearn_version} with msvm {self.current_sklearn_version}: "
                "its attributes may not mean the same here, and predictions may differ. Refit "
                "it, or keep models in msvm model files (msvm.save / msvm.load), which this "
                "version checks as it reads them.")


def _msvm_version() -> str:
    from msvm import __version__

    return __version__


class _streaming_only:
    """Descriptor: ``partial_fit`` exists only for configurations that can stream.

    (A bias-free machine, the online solver, a named kernel and no
    ``class_weight='balanced'``: :func:`_no_streaming`.)

    Like :func:`sklearn.utils.metaestimators.available_if` (so ``hasattr`` is
    False, which scikit-learn's checks rely on), but the AttributeError says
    why instead of only that the attribute is missing.
    """

    def __init__(self, method):
        self.method = method
        self.__doc__ = method.__doc__

    def __get__(self, obj, owner=None):
        if obj is not None:
            reason = _no_streaming(obj)
            if reason is not None:
                raise AttributeError(reason)
            return self.method.__get__(obj, owner)
        return self.method


def _no_streaming(estimator) -> str | None:
    """Why ``estimator``'s configuration has no ``partial_fit`` (None: it has one)."""
    if estimator.fit_intercept is not False:
        return ("partial_fit needs fit_intercept=False: the online solver it uses cannot "
                "keep the equality constraints of the bias.")
    if estimator.solver not in ("auto", "online"):
        return (f"partial_fit uses the online solver; solver={estimator.solver!r} has no "
                "streaming mode (use solver='online' or 'auto').")
    if callable(estimator.kernel) or (isinstance(estimator.kernel, str)
                                      and estimator.kernel == "precomputed"):
        return ("partial_fit streams feature vectors; kernel='precomputed' and callable "
                "kernels need the whole training set (use fit).")
    if isinstance(estimator.class_weight, str) and estimator.class_weight == "balanced":
        return ("class_weight='balanced' needs the class counts of the whole training set; "
                "partial_fit takes class_weight=None or a dict (e.g. the balanced weights "
                "computed beforehand with sklearn.utils.class_weight.compute_class_weight).")
    return None


class MultiClassSVC(ClassifierMixin, BaseEstimator):
    """All-in-one multi-class support vector classifier.

    One quadratic program over all classes (not a vote of binary SVMs), for
    the machines of the unified family: Weston–Watkins (``'ww'``),
    Crammer–Singer (``'cs'``), Lee–Lin–Wahba (``'llw'``), the quadratic-loss
    M-SVM² (``'msvm2'``), and the absolute-margin rows of Doğan, Glasmachers
    & Igel: ADM (``'adm'``), ATS (``'ats'``), ATM (``'atm'``), one-vs-all as
    a total sum-loss without sum-to-zero (``'ova'``) and maximum margin
    regression (``'mmr'``).  See :mod:`msvm.machines` for their formulations
    and for how each reduces to :class:`sklearn.svm.SVC` when there are two
    classes.

    Parameters
    ----------
    model : {'ww', 'cs', 'llw', 'msvm2', 'adm', 'ats', 'atm', 'ova', 'mmr'}, default='ww'
        The machine (row of the unified table, :data:`msvm.machines.MACHINES`).
    C : float, default=1.0
        Soft-margin parameter (> 0), in the machine's original formulation.
        For two classes, WW and CS with C equal SVC with ``C = 2C``; LLW,
        ADM, ATM and MMR equal SVC with ``C = C/2``; ATS and OvA equal SVC
        with ``C = C``.  Example i's loss is weighted by
        wᵢ = ``class_weight[yᵢ]`` · ``sample_weight[i]`` (capacity C·wᵢ,
        see ``class_weight``).
    kernel : {'linear', 'poly', 'rbf', 'laplace', 'sigmoid', 'precomputed'} or callable, \
default='rbf'
        Kernel, with scikit-learn's conventions (:mod:`msvm.kernels`).  With
        ``'precomputed'``, ``X`` is the (n_samples, n_samples) training Gram
        matrix in :meth:`fit` and the (n_test, n_train) kernel between test
        and training points at prediction time.  A callable ``f(X, Y)`` must
        return the (n_X, n_Y) kernel matrix.
    degree : int, default=3
        Degree of the ``'poly'`` kernel (an integer ≥ 0, as in
        :class:`sklearn.svm.SVC`).
    gamma : {'scale', 'auto'} or float, default='scale'
        γ of the ``'rbf'``, ``'laplace'``, ``'poly'`` and ``'sigmoid'``
        kernels.  ``'scale'`` is 1 / (n_features · X.var()) and ``'auto'`` is
        1 / n_features, as in :class:`sklearn.svm.SVC`, except that with a
        ``sample_weight`` the variance is weighted by it (see :meth:`fit`),
        that of a sparse X is computed in two passes as a dense one's (SVC's
        one-pass formula can come out negative) and that of a constant X is 0
        (γ = 1); the value used is stored in ``gamma_``.
    coef0 : float, default=0.0
        Independent term of the ``'poly'`` and ``'sigmoid'`` kernels.
    fit_intercept : bool, default=False
        Whether the machine has a bias b.  The default is bias-free, as the
        all-in-one solvers of the literature (and Shark's trainers) are: the
        bias adds one equality constraint per class to the dual (solved by
        ``'s2do_bias'``, the method of multipliers over S2DO, at about the
        cost of the bias-free fit), and with a universal kernel it is rarely
        needed.  With ``True`` the bias is recovered from the KKT conditions
        (:func:`msvm.diagnostics.bias_from_kkt`).
    solver : str, default='auto'
        ``'auto'`` or a key of :data:`msvm.solvers.SOLVERS`: the reference
        QP solvers ``'cvxpy'`` (Clarabel, interior point) and ``'osqp'``, the
        decomposition solver ``'s2do'`` and the online LaRank-style solver
        ``'online'`` (both bias-free machines only; see ``epochs`` and
        ``online_strategy``), ``'s2do_bias'`` (machines with a bias only:
        the method of multipliers over S2DO, :mod:`msvm.solvers.s2do_bias`),
        ``'frank_wolfe'`` (both), and ``'linear'`` (``kernel='linear'`` and
        bias-free machines only: dual coordinate descent keeping the primal
        W, for large sparse data; :mod:`msvm.solvers.linear`).
        ``'auto'`` is resolved by :func:`msvm.solvers.resolve_solver`:
        ``'linear'`` for ``kernel='linear'`` without a bias when a row of X
        (its stored non-zeros if sparse, its features if dense) is no longer
        than the number of examples, else ``'s2do'`` without a bias and
        ``'s2do_bias'`` with one.  A solver
        that cannot handle the bias setting raises a ValueError.  Each
        solver declares the parameters it honours (``OPTIONS`` of its
        module): setting another away from its default warns, naming the
        solver and the parameter (``epochs`` and ``online_strategy``, which
        define the online algorithm, raise a ValueError instead);
        ``random_state`` is ignored silently by deterministic solvers, as in
        scikit-learn.
    tol : float, default=1e-3
        Stopping tolerance (≥ 0) of iterative solvers: the largest KKT
        violation of the dual gradient, in the units of the original
        formulation (``'frank_wolfe'``: the Frank–Wolfe gap relative to the
        dual objective).  Values below :data:`msvm.solvers.TOL_FLOOR` are
        raised to it with a warning.  The reference solvers always solve to
        their backend's precision (about 1e-10); setting ``tol`` with them
        warns.
    cache_size : float, default=200
        Kernel cache budget in MB, in (0, 2²⁰] (1 TiB), for solvers that cache
        Gram rows.  The reference solvers form the full Gram matrix.
    cache_dtype : {'float64', 'float32'}, default='float64'
        Storage of the cached Gram rows (``'s2do'`` and ``'s2do_bias'``):
        ``'float32'`` holds twice as many rows per MB and solves the dual of
        the float32-rounded Gram matrix.
    max_iter : int or None, default=None
        Iteration cap of the solver (its own notion of iteration).  None: the
        finite budget :func:`msvm.solvers.default_max_iter` of
        max(10⁷, 100 · n_samples) iterations, as libsvm's; -1: no cap (the
        fit still stops when its dual stalls, see
        :data:`msvm.solvers.STALL_SECONDS`).  Reaching the cap gives status
        ``'max_iter'`` and a :class:`~sklearn.exceptions.ConvergenceWarning`.
    n_jobs : int or None, default=None
        Threads of solvers that use them (``'s2do'`` and ``'s2do_bias'``:
        Gram rows and the per-iteration passes) and of :meth:`predict` and
        :meth:`decision_function` (blocks of test rows, BLAS on one thread
        each; with None or 1, BLAS keeps its own threads); None means 1
        (also inside a joblib ``parallel_backend`` context, so that each fit
        of a parallel search takes one core), -1 all cores.  Inside the worker
        processes of joblib's default ``loky`` backend (e.g. of
        ``GridSearchCV(n_jobs=k)``) the threads are capped by joblib's limit
        there (cores / k); inside the worker threads of its ``threading``
        backend they are not (nor is joblib's own nested ``Parallel``), so
        leave ``n_jobs=None`` for a search run on threads.  The solution and
        the scores do not depend on it (beyond round-off).
        S2DO times its passes on one thread against all from time to time
        and keeps the faster; it runs on one thread while other processes
        hold the cores, and starts with the timing where the OpenMP threads
        sleep between its parallel regions (``OMP_WAIT_POLICY=passive``).
    warm_start : bool, default=False
        Start the next :meth:`fit` from the previous fit's dual solution when
        the training set size and machine match (e.g. along a path over C;
        the solver projects it onto the new constraints: the box, the slack
        groups and, with a bias, the equality constraints).  Taken by
        ``'s2do'``, ``'s2do_bias'``, ``'linear'`` and ``'frank_wolfe'``; the
        other solvers warn that they ignore it.
    verbose : bool or int, default=False
        Print one line per stage of :meth:`fit` (on stdout) and the
        iterative solvers' live progress (on stderr, at most once a second:
        elapsed time, iterations, largest KKT violation against ``tol``,
        dual objective, cache hit rate and an estimate of the time left; see
        :mod:`msvm._progress`); ``verbose >= 2`` also shows the reference
        solvers' backend logs.
    random_state : int, RandomState instance or None, default=None
        Seed of randomised solvers (``'online'``: the visiting order, the
        random patterns and the scheduler's draws; ``'linear'``: the
        visiting order of each pass; the same seed gives the same model,
        None a different order, hence a slightly different α, at each fit).
        The other solvers are deterministic and ignore it.
    online_strategy : {'s2do_all', 'random_pattern_s2do_all', \
'random_pattern_s2do_pattern'}, default='s2do_all'
        Working-set strategy of the online solver's steps on old support
        patterns (seed 004 §4.2.2): the first variable is the most violating
        one over all support patterns (``'s2do_all'``) or the most violating
        one of a random support pattern (``'random_pattern_...'``), the
        second the best-gain partner over all support patterns (``..._all``)
        or inside that pattern (``..._pattern``).  Used by ``solver='online'``
        and :meth:`partial_fit`.
    epochs : int or None, default=1
        Passes of the online solver over the training set in :meth:`fit`:
        1 is one online pass (a close approximation, status
        ``'epoch_limit'``), ``None`` passes until every KKT violation is
        ≤ ``tol`` (status ``'optimal'``, the same stopping rule as
        ``'s2do'``).  :meth:`partial_fit` always makes one pass over its
        chunk.
    certify : bool, default=True
        Recompute the training scores from β in float64 (one pass of kernel
        blocks over the support vectors) before the certificate of
        ``solution_`` is computed, so that it certifies the user's problem,
        not the solver's running (possibly float32-cached or long-updated)
        scores; the largest difference is ``solution_['score_drift']``.  An
        iterative solver that called its answer optimal but whose float64
        KKT violation exceeds ``tol`` gets status ``'inaccurate'``.  False
        skips that pass (it costs n_samples × n_SV kernel evaluations).
    class_weight : dict, 'balanced' or None, default=None
        Weights of the classes' losses, as in :class:`sklearn.svm.SVC`:
        example i's loss is multiplied by wᵢ = ``class_weight[yᵢ]`` ·
        ``sample_weight[i]`` (:meth:`fit`).  None gives every class weight 1;
        a dict maps labels to non-negative weights (missing labels get 1);
        ``'balanced'`` is n_samples / (n_classes · count(y = c)), from the
        labels alone (not from ``sample_weight``, as in SVC).  For the hinge
        machines the weight scales the example's capacity to C·wᵢ; for the
        M-SVM², whose loss is quadratic, its kernel shift becomes
        1/(2 C wᵢ) (:mod:`msvm.problem` derives both).  Examples of weight 0
        are left out of the dual problem, as libsvm does (they cannot be
        support vectors, and fitting equals fitting without them).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted (all labels of y, including a class whose
        examples all have weight zero).
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (``class_weight`` resolved; ones for None).
    n_features_in_ : int
        Number of features seen during :meth:`fit` (n_samples for a
        precomputed kernel).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when ``X`` has string column names.
    support_ : ndarray of shape (n_SV,)
        Indices of the training points with a non-zero row of β.
    support_vectors_ : ndarray or CSR matrix of shape (n_SV, n_features)
        Those training points (an empty (0, n_features) array for a
        precomputed kernel, as in :class:`sklearn.svm.SVC`).
    n_support_ : ndarray of shape (n_classes,)
        Number of support vectors of each class.
    dual_coef_ : ndarray of shape (n_SV, n_classes)
        β of the support vectors: h_c(x) = Σ_j dual_coef_[j, c]
        k(support_vectors_[j], x) + intercept_[c].  Note the shape differs
        from SVC's (n_classes − 1, n_SV) one-vs-one layout.
    intercept_ : ndarray of shape (n_classes,)
        The bias b from the KKT conditions when ``fit_intercept``, else zeros.
    coef_ : ndarray or CSR matrix of shape (n_classes, n_features)
        Only with ``kernel='linear'`` (any solver, and after
        :meth:`partial_fit` or :func:`msvm.load`): the primal weights
        ``dual_coef_.T @ support_vectors_``, so that h(x) = ``coef_ @ x +
        intercept_``; :meth:`decision_function` then uses it directly
        instead of the kernel.  A CSR matrix when the support vectors are
        sparse, as :class:`sklearn.svm.SVC` does (and, unlike SVC's, one row
        per class also for two classes).
    gamma_ : float
        The kernel γ actually used (0.0 for a precomputed kernel).
    n_iter_ : int
        Iterations of the solver.
    shape_fit_ : tuple of int
        Shape of the training ``X``.
    solution_ : dict
        How the dual was solved and how good the answer is: ``status``,
        ``solver``, ``time``, ``n_iter``, ``n_kernel_evaluations`` and every
        entry of :meth:`msvm.diagnostics.Diagnostics.as_dict` —
        ``dual_objective``, ``primal_objective``, ``duality_gap``,
        ``relative_gap``, ``kkt_violation``, ``kkt_residual`` (and its
        parts ``kkt_stationarity``, ``kkt_bounds`` and, with a bias,
        ``kkt_equality``), ``b`` (zeros without a bias), ``b_method``,
        ``n_support``, and ``score_drift`` (see ``certify``; None with
        ``certify=False`` or a solver that returns no running scores).
        After :meth:`partial_fit` the training data is not kept, so only
        ``dual_objective`` (over every pattern fed so far) and
        ``n_support`` are measured: ``primal_objective``,
        ``duality_gap``, ``relative_gap``, ``kkt_violation``,
        ``kkt_residual`` and ``b`` are None, the parts of ``kkt_residual``
        and ``score_drift`` are absent, and ``n_seen`` counts the patterns
        fed so far.

    See Also
    --------
    sklearn.svm.SVC : one-vs-one binary SVMs (libsvm).

    Notes
    -----
    For exactly two classes, :meth:`decision_function` follows scikit-learn's
    binary convention and returns h_2 − h_1, positive for ``classes_[1]``.

    *Fitting in steps (advanced API).*  :meth:`fit` is three public steps
    that tools solving many related problems use one by one
    (:mod:`msvm.model_selection` warm-starts each fit from the previous
    one, or solves problems other than the one it keeps):
    :meth:`prepare_fit` validates the data and builds the dual problem
    (:class:`FitSetup`), :meth:`solver_options` gives the keyword arguments
    of the solver's ``solve`` (to be adjusted, e.g. ``warm_start`` or a
    smaller ``tol``), and :meth:`set_solution` certifies a solution of that
    problem and stores it as the fitted model.  Subclasses may override
    them; their signatures and results are kept stable.

    Pickling (and :mod:`joblib`) keeps the parameters, the fitted attributes
    and the msvm version that pickled them; unpickling under another version
    warns with :class:`MsvmVersionWarning`.  Of the private solver state, a
    pickle keeps what :meth:`partial_fit` needs to continue the model: the
    online solver's stream (support patterns, their gradients and the
    scheduler's rates; its kernel cache starts empty) after an online fit or
    a ``partial_fit``, and the support vectors' labels and dual variables
    after a fit by another solver.  It drops the previous dual solution kept
    for ``warm_start``: that only speeds up the next fit, which after
    unpickling starts from zero.  For a file that can be read without
    running code (no pickle) and checked as it is read, use :func:`msvm.save`
    and :func:`msvm.load`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MultiClassSVC(model="cs", C=10).fit(X, y)
    >>> clf.predict(X[[0, 50, 100]])
    array([0, 1, 2])
    >>> clf.decision_function(X[:2]).shape
    (2, 3)
    >>> round(clf.score(X, y), 2)
    0.99
    >>> clf.solution_["status"], clf.solution_["relative_gap"] < 1e-3
    ('optimal', True)
    """

    _parameter_constraints: dict = {
        "model": [StrOptions(set(MACHINES))],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions(set(KERNELS)), callable],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", *SOLVERS})],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "cache_size": [Interval(Real, 0.0, 2.0**20, closed="right")],
        "cache_dtype": [StrOptions({"float64", "float32"})],
        "max_iter": [Options(Integral, {-1}),
                     Interval(Integral, 1, None, closed="left"), None],
        "n_jobs": [Integral, None],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "online_strategy": [StrOptions(set(STRATEGIES))],
        "epochs": [Interval(Integral, 1, None, closed="left"), None],
        "certify": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    # What partial_fit continues from (set by fit, partial_fit and msvm.io; absent before).
    _stream: OnlineStream | None
    _fit_seed: tuple[np.ndarray, np.ndarray, int, np.ndarray | None] | None
    _no_continue: str | None

    def __init__(
        self,
        model: str = "ww",
        C: float = 1.0,
        kernel: str | Callable[..., Any] = "rbf",
        degree: int = 3,
        gamma: str | float = "scale",
        coef0: float = 0.0,
        fit_intercept: bool = False,
        solver: str = "auto",
        tol: float = 1e-3,
        cache_size: float = 200,
        cache_dtype: str = "float64",
        max_iter: int | None = None,
        n_jobs: int | None = None,
        warm_start: bool = False,
        verbose: bool | int = False,
        random_state: int | np.random.RandomState | None = None,
        online_strategy: str = "s2do_all",
        epochs: int | None = 1,
        certify: bool = True,
        class_weight: dict | str | None = None,
    ) -> None:
        self.model = model
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.cache_size = cache_size
        self.cache_dtype = cache_dtype
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.online_strategy = online_strategy
        self.epochs = epochs
        self.certify = certify
        self.class_weight = class_weight

    # ------------------------------------------------------------ helpers
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed
        return tags

    @property
    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"[MultiClassSVC] {message}", flush=True)

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_warm_alpha", None)   # only speeds up a next warm-started fit
        state["_msvm_version"] = _msvm_version()
        return state

    def __setstate__(self, state):
        state = dict(state)
        saved, current = state.pop("_msvm_version", "unknown"), _msvm_version()
        if saved != current:
            warnings.warn(MsvmVersionWarning(estimator_name=type(self).__name__,
                                             current_version=current, original_version=saved),
                          stacklevel=2)
        super().__setstate__(state)

    def _check_params(self) -> None:
        """Validate the hyper-parameters the scikit-learn way (``_parameter_constraints``)."""
        self._validate_params()
        if self.n_jobs == 0:
            raise ValueError("n_jobs == 0 has no meaning; use None (1 thread), a positive "
                             "number of threads or -1 (all cores).")
        if isinstance(self.n_jobs, (bool, np.bool_)):   # an Integral to the constraint above
            raise ValueError(f"n_jobs must be None or a non-zero integer (-1: all cores), got "
                             f"{self.n_jobs!r}.")

    def _n_jobs(self) -> int:
        """``n_jobs`` with None read as 1 thread, also inside a joblib context (where
        joblib would read None as the backend's default)."""
        return 1 if self.n_jobs is None else self.n_jobs

    def solver_options(self, setup: FitSetup) -> dict:
        """Keyword arguments of the solver's ``solve`` for ``setup`` (second step of fit).

        Part of the advanced API (see Notes of the class).  The parameters
        of :data:`msvm.solvers.ESTIMATOR_OPTIONS` that the solver honours
        (its ``OPTIONS``), plus ``verbose``.  A parameter set away from its
        default that the solver does not honour is an error when it defines
        the algorithm (``epochs``, ``online_strategy``), a warning otherwise;
        ``random_state`` is ignored silently by deterministic solvers.
        ``n_jobs=None`` is passed as 1 thread, also inside a joblib
        ``parallel_backend`` context (e.g. a fit in a worker of a parallel
        search, where joblib would read None as "the backend's default").

        Parameters
        ----------
        setup : FitSetup
            From :meth:`prepare_fit`.

        Returns
        -------
        dict
            For ``get_solver(setup.solver).solve(setup.problem, **options)``;
            a caller may change ``warm_start`` or lower ``tol`` (when the
            solver takes them).
        """
        name, problem = setup.solver, setup.problem
        module = get_solver(name)
        for option in ESTIMATOR_OPTIONS:
            value = getattr(self, option)
            if (option in module.OPTIONS or option == "random_state"
                    or _same(value, _DEFAULTS[option])):
                continue
            if option == "n_jobs" and self._n_jobs() == 1:
                continue   # 1 is what None means: what a single-threaded solver does
            message = (f"Solver {name!r} does not use {option}={value!r} (it honours "
                       f"{sorted(module.OPTIONS)}).")
            if option in _DEFINING_OPTIONS:
                raise ValueError(message + " Use solver='online' or leave it at its default.")
            warnings.warn(message + " It is ignored.", UserWarning, stacklevel=4)
        options = {
            "tol": float(self.tol),
            # -1 asks for no cap; None lets the solver apply its finite default budget.
            "max_iter": (None if self.max_iter is None
                         else np.iinfo(np.int64).max if self.max_iter == -1
                         else int(self.max_iter)),
            "warm_start": None,
            "cache_size": float(self.cache_size),
            "cache_dtype": self.cache_dtype,
            "n_jobs": self._n_jobs(),
            "random_state": self.random_state,
            "online_strategy": self.online_strategy,
            "epochs": self.epochs,
            "certify": self.certify,
        }
        previous = getattr(self, "_warm_alpha", None)
        if (self.warm_start and previous is not None
                and previous.shape == (problem.n_samples, problem.n_slots)):
            options["warm_start"] = previous
        options = {k: v for k, v in options.items() if k in module.OPTIONS}
        if self.max_iter == -1 and module.STOPPING_RULE is None:
            options.pop("max_iter")  # the reference backends keep their own finite caps
        # The iterative solvers' progress line from verbose=1; the reference backends'
        # own (long) logs from verbose=2.
        options["verbose"] = int(self.verbose) >= (1 if module.STOPPING_RULE else 2)
        if name == "online" and not self._precomputed and not callable(self.kernel):
            options["keep_state"] = True  # so that partial_fit can continue the fit
        return options

    # ---------------------------------------------------------------- fit
    def fit(self: _Estimator, X: MatrixLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> _Estimator:
        """Fit the multi-class SVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points (CSR is used as is), or the (n_samples,
            n_samples) Gram matrix when ``kernel='precomputed'``.
        y : array-like of shape (n_samples,)
            Class labels: integers, strings, booleans or integral floats (any
            discrete target scikit-learn accepts), encoded with ``np.unique``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each example's loss, times its class's
            weight (``class_weight``): example i gets the capacity
            C · wᵢ, as in :class:`sklearn.svm.SVC` (the M-SVM²: the kernel
            shift 1/(2C wᵢ)).  An integer weight k gives the model of the
            example repeated k times; examples of weight 0 are left out.
            With ``gamma='scale'`` the variance of X is weighted by it too.
            None: every weight 1.

        Returns
        -------
        self : MultiClassSVC
            The fitted estimator.
        """
        before = dict(vars(self))
        try:
            return self._fit(X, y, sample_weight)
        except BaseException:
            # A fit that fails or is interrupted (Ctrl-C) leaves the estimator as it was:
            # not half-fitted (the input checks' n_features_in_ alone made an unfitted
            # estimator pass check_is_fitted, and a fitted one refuse its own data).
            _restore(self, before)
            raise

    def _fit(self, X, y, sample_weight):
        """:meth:`fit` proper (``fit`` undoes its changes when it raises)."""
        setup = self.prepare_fit(X, y, sample_weight)
        options = self.solver_options(setup)
        with warnings.catch_warnings():
            # Non-convergence is reported by set_solution, with the diagnostics.
            warnings.simplefilter("ignore", ConvergenceWarning)
            solution = get_solver(setup.solver).solve(setup.problem, **options)
        self._log(
            f"solve: {solution.solver} status={solution.status}, {solution.n_iter} iterations, "
            f"{solution.time:.3f} s"
        )
        return self.set_solution(setup, solution)

    def _keep_for_continuing(self, setup: FitSetup, solution) -> None:
        """What a next warm-started :meth:`fit` and :meth:`partial_fit` continue from:
        the solution just stored, never the state of an earlier model."""
        X, problem = setup.X, setup.problem
        n_rows = (setup.fit_shape or X.shape)[0]   # rows of the user's X
        self._warm_alpha = solution.alpha if self.warm_start else None
        self._fit_params = self._problem_params()
        self._stream = self._fit_seed = self._no_continue = None
        exported = solution.info.pop("online_state", None)
        if exported is not None and setup.index is not None:
            exported["gids"] = setup.index[exported["gids"]]   # the user's row numbers
        if exported is not None:
            # An online fit can be continued by partial_fit.
            assert isinstance(self.kernel, str)  # exported only for a named kernel
            self._stream = OnlineStream.from_export(
                exported, problem.machine, self.C, self.kernel, setup.gamma, self.degree,
                self.coef0, X.shape[1], sp.issparse(X), tol=self.tol,
                online_strategy=self.online_strategy, cache_size=self.cache_size,
                random_state=self.random_state, n_seen=n_rows, time=solution.time)
        elif not self.fit_intercept and not self._precomputed and not callable(self.kernel):
            # What partial_fit needs to continue this model (support vectors' labels, α
            # and weights).
            local = (self.support_ if setup.index is None
                     else np.searchsorted(setup.index, self.support_))
            self._fit_seed = (problem.y[local], solution.alpha[local], n_rows,
                              problem.sample_weight[local] if problem.weighted else None)

    def prepare_fit(self, X: MatrixLike, y: ArrayLike,
                    sample_weight: ArrayLike | None = None) -> FitSetup:
        """Validate the parameters and (X, y); build the dual problem (first step of fit).

        Part of the advanced API (see Notes of the class): :meth:`fit` is
        ``prepare_fit``, then the solver of ``setup.solver`` run on
        ``setup.problem`` with :meth:`solver_options`, then
        :meth:`set_solution`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As in :meth:`fit`.
        y : array-like of shape (n_samples,)
            As in :meth:`fit`.
        sample_weight : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.

        Returns
        -------
        FitSetup
            The validated X, the sorted labels, the
            :class:`~msvm.problem.DualProblem` (with the examples' weights;
            examples of weight zero left out), the resolved solver and the
            kernel γ used.  Nothing is stored on the estimator but the
            input checks' ``n_features_in_`` (and ``feature_names_in_``).
        """
        started = time.perf_counter()
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             ensure_all_finite=True)
        if sp.issparse(X):
            X = canonical_csr(X)
        classes, y_codes = _encode_targets(y)
        n_classes = len(classes)
        if n_classes < 2:
            raise ValueError(
                "The number of classes has to be greater than one; got "
                f"{n_classes} class ({classes[0]!r}). A classifier needs examples of at "
                "least 2 classes."
            )
        fit_shape = X.shape
        sw = (None if sample_weight is None
              else _checked_weights(sample_weight, X))
        class_weight, weight = self._weights(classes, y, y_codes, sw)
        index = None
        if weight is not None and np.any(weight == 0):
            # As libsvm: an example of weight 0 has no place in the problem (its α
            # would be 0, and the M-SVM²'s shift 1/(2C·0) infinite).
            index = np.flatnonzero(weight > 0)
            weight, y_codes = weight[index], y_codes[index]
            if len(np.unique(y_codes)) < 2:
                raise ValueError(
                    "Every example of positive weight (sample_weight times its class_weight) "
                    f"is of class {classes.tolist()[y_codes[0]]!r}: a classifier needs "
                    "examples of at least 2 classes."
                )
        if self._precomputed:
            if X.shape[0] != X.shape[1]:
                raise ValueError(
                    "With kernel='precomputed', X must be the square (n_samples, n_samples) "
                    f"Gram matrix of the training points; got a {X.shape[0]}x{X.shape[1]} "
                    "matrix."
                )
            if sp.issparse(X):
                X = X.toarray()
            check_gram(X)
            gamma_ = 0.0
        else:
            gamma_ = resolve_gamma(self.gamma, X, used=self.kernel != "linear",
                                   sample_weight=sw)
        if index is not None:
            X = X[np.ix_(index, index)] if self._precomputed else X[index]
        self._log(
            f"data: {X.shape[0]} samples, {X.shape[1]} "
            f"{'kernel columns' if self._precomputed else 'features'}"
            f"{' (sparse)' if sp.issparse(X) else ''}, {n_classes} classes"
        )

        if callable(self.kernel) and self.solver == "linear":
            # (The solver would see the precomputed Gram matrix below and name that.)
            raise ValueError("Solver 'linear' needs kernel='linear' (it keeps the primal W); "
                             "got a callable kernel. Use solver='s2do' for other kernels.")
        if callable(self.kernel):
            # As in SVC, a callable kernel is evaluated once into the training Gram
            # matrix: f(X, Y) returns the whole (n_X, n_Y) block.
            gram = callable_block(self.kernel, X, X)
            check_gram(gram, "callable kernel's Gram matrix")
            kernel = Kernel(gram, "precomputed")
        else:
            kernel = Kernel(X, self.kernel, gamma=gamma_, degree=self.degree, coef0=self.coef0)
            check_kernel_range(kernel)
        problem = DualProblem(make_machine(self.model, n_classes), y_codes, kernel, self.C,
                              self.fit_intercept, sample_weight=weight)
        solver_name = resolve_solver(self.solver, problem)
        kernel_name = self.kernel if isinstance(self.kernel, str) else "callable"
        dropped = fit_shape[0] - X.shape[0]
        self._log(
            f"problem: model={self.model}, kernel={kernel_name}, gamma={gamma_:.6g}, "
            f"C={self.C:g}, bias={self.fit_intercept}, {int(problem.active.sum())} dual "
            f"variables{', weighted' if problem.weighted else ''}"
            f"{f', {dropped} examples of weight 0 left out' if dropped else ''}"
            f"; solver={solver_name}"
        )
        return FitSetup(X, classes, problem, solver_name, float(gamma_), started, index=index,
                        fit_shape=fit_shape, class_weight=class_weight)

    def _weights(self, classes, y, y_codes, sample_weight, allow_all_zero: bool = False):
        """(class weights, example weights) from ``class_weight`` and ``sample_weight``.

        Either is None when every weight is 1 (the unweighted problem).
        Raises ValueError for a negative or non-finite class weight and
        (unless ``allow_all_zero``: a chunk of a stream) when every example
        weighs 0.
        """
        class_weight = None
        if self.class_weight is not None:
            if isinstance(self.class_weight, dict):
                for label, value in self.class_weight.items():
                    if not (is_real(value) and np.isfinite(value) and value >= 0):
                        raise ValueError(f"class_weight[{label!r}] must be a finite number "
                                         f">= 0, got {value!r}.")
                unknown = [label for label in self.class_weight
                           if not np.any(np.asarray(classes == label))]
                if unknown:
                    raise ValueError(f"class_weight has labels that are not classes: "
                                     f"{unknown!r} (the classes are {classes.tolist()!r}).")
            class_weight = compute_class_weight(self.class_weight, classes=classes, y=y)
            class_weight = np.asarray(class_weight, dtype=np.float64)
        if sample_weight is None and class_weight is None:
            return None, None
        weight = np.ones(len(y_codes)) if sample_weight is None else sample_weight.copy()
        if class_weight is not None:
            weight *= class_weight[y_codes]
        if not allow_all_zero and not np.any(weight > 0):
            raise ValueError("Every example has weight zero (sample_weight times its "
                             "class_weight): there is nothing to train on.")
        return class_weight, weight

    def _certified(self, problem, solution):
        """The solution with its scores recomputed from β in float64 (``certify``).

        Returns the solution to diagnose and the largest |F_solver − F_exact|
        (None when nothing was recomputed).
        """
        if not self.certify or solution.scores is None:
            return solution, None
        exact = solution.certified_scores
        if exact is None:
            exact = problem.scores(problem.beta(solution.alpha))
        with np.errstate(invalid="ignore"):
            drift = float(np.max(np.abs(exact - solution.scores), initial=0.0))
        return replace(solution, scores=exact), drift

    def set_solution(self: _Estimator, setup: FitSetup, solution: DualSolution) -> _Estimator:
        """Certify a solution of ``setup.problem`` and store it as the model (last step of fit).

        Part of the advanced API (see Notes of the class).  The solution is
        certified as in :meth:`fit` (``certify``, then
        :func:`~msvm.diagnostics.diagnose`) and every fitted attribute is
        set from it, as is what a next warm-started :meth:`fit` and
        :meth:`partial_fit` continue from; a solver that did not converge gives a
        :class:`~sklearn.exceptions.ConvergenceWarning`.

        Parameters
        ----------
        setup : FitSetup
            From :meth:`prepare_fit` on this estimator (same parameters).
        solution : DualSolution
            A solution of ``setup.problem`` (any solver, e.g. warm-started or
            solved in another process).

        Returns
        -------
        self : MultiClassSVC
        """
        X, classes, problem, gamma_ = setup.X, setup.classes, setup.problem, setup.gamma
        start = setup.started
        y_codes = problem.y
        n_classes = len(classes)
        solution, drift = self._certified(problem, solution)
        diagnostics = diagnose(problem, solution)
        certificate = (diagnostics.dual_objective, diagnostics.primal_objective,
                       diagnostics.kkt_violation)
        if not np.all(np.isfinite(certificate)):
            raise ValueError(
                f"The certificate of the {solution.solver!r} solution is not finite (dual "
                f"{certificate[0]}, primal {certificate[1]}, KKT violation {certificate[2]}): "
                "the kernel values or the scores overflow or are undefined for these data and "
                "parameters. Scale the features or choose other kernel parameters."
            )
        status = solution.status
        if (status == "optimal" and solution.solver in SOLVERS
                and get_solver(solution.solver).STOPPING_RULE == "kkt_violation"
                and diagnostics.kkt_violation > _KKT_SLACK * max(self.tol, TOL_FLOOR)):
            status = "inaccurate"
        self._log(
            f"diagnostics: dual={diagnostics.dual_objective:.8g}, "
            f"primal={diagnostics.primal_objective:.8g}, "
            f"relative gap={diagnostics.relative_gap:.2e}, "
            f"KKT residual={diagnostics.kkt_residual:.2e}, "
            f"{diagnostics.n_support} support vectors, total {time.perf_counter() - start:.3f} s"
        )

        beta = problem.beta(solution.alpha)
        support = np.flatnonzero(np.any(beta != 0, axis=1))
        fit_shape = setup.fit_shape or X.shape
        self.classes_ = classes
        self.class_weight_ = (np.ones(n_classes) if setup.class_weight is None
                              else np.asarray(setup.class_weight, dtype=np.float64))
        # Rows of the user's X (examples of weight zero were left out of the problem).
        self.support_ = support if setup.index is None else setup.index[support]
        if self._precomputed:
            self.support_vectors_ = np.empty((0, fit_shape[1]))
        else:
            self.support_vectors_ = X[support]
        self.n_support_ = np.bincount(y_codes[support], minlength=n_classes).astype(np.int32)
        self.dual_coef_ = np.ascontiguousarray(beta[support])
        if self.fit_intercept and diagnostics.b is not None:
            self.intercept_ = np.asarray(diagnostics.b, dtype=np.float64).copy()
        else:
            self.intercept_ = np.zeros(n_classes)
        self.gamma_ = float(gamma_)
        self.n_iter_ = int(solution.n_iter)
        self.shape_fit_ = tuple(fit_shape)
        self._set_coef()
        self.solution_ = {
            "status": status,
            "solver": solution.solver,
            "time": float(solution.time),
            "n_iter": int(solution.n_iter),
            "n_kernel_evaluations": int(solution.n_kernel_evaluations),
            "score_drift": drift,
            **diagnostics.as_dict(),
        }
        self._keep_for_continuing(setup, solution)
        if status not in _EXPECTED_STATUSES:
            detail = solution.info.get("error") or solution.info.get("backend_status", "")
            warnings.warn(
                f"Solver {solution.solver!r} did not converge (status {status!r}"
                f"{', ' + str(detail) if detail else ''}): relative duality gap "
                f"{diagnostics.relative_gap:.2e}, KKT residual {diagnostics.kkt_residual:.2e}. "
                + _ADVICE.get(status, _DEFAULT_ADVICE),
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    # Set by _set_coef for a linear kernel only (absent otherwise).
    coef_: np.ndarray | sp.csr_matrix

    def _set_coef(self) -> None:
        """``coef_`` = βᵀ X_SV (Q × d) for a linear kernel, else no ``coef_``.

        The one place ``coef_`` is made, from the fitted ``dual_coef_`` and
        ``support_vectors_``, whichever solver ran (``solver='linear'``'s own
        W equals it up to round-off), after :meth:`partial_fit` and in
        :func:`msvm.load`: a loaded model predicts exactly as the saved one.
        """
        if not (isinstance(self.kernel, str) and self.kernel == "linear"):
            if hasattr(self, "coef_"):
                del self.coef_
            return
        sv = self.support_vectors_
        if sp.issparse(sv):
            # Sparse support vectors give a sparse coef_, as in sklearn.svm.SVC: a
            # sparse product, whose size follows the support vectors' non-zeros
            # (sv.T @ dual_coef_ would be a dense d × Q array).
            self.coef_ = canonical_csr(sp.csr_matrix(self.dual_coef_.T) @ sv)
        else:
            self.coef_ = self.dual_coef_.T @ sv

    # -------------------------------------------------------- partial_fit
    @_streaming_only
    def partial_fit(self: _Estimator, X: MatrixLike, y: ArrayLike,
                    classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> _Estimator:
        """Feed one chunk of a stream to the online solver (one pass, then forget it).

        Every pattern of the chunk gets a TWO_NEWS step of the online solver
        (``solver='online'``, seed 004 ch. 4-5) and its adaptive scheduler
        spends the rest of its budget on the support patterns kept from the
        earlier chunks; patterns that do not become support patterns are
        forgotten, so memory stays bounded by the support patterns plus
        ``cache_size``.  The patterns of a chunk are visited in a random
        order (``random_state``), as :meth:`fit` visits the training set, so
        one chunk holding the whole training set gives the model of
        ``fit`` with ``solver='online', epochs=1`` and the same seed.

        For bias-free machines (``fit_intercept=False``) with
        ``solver='online'`` or ``'auto'``, one of the named kernels (not
        ``'precomputed'`` or a callable) and ``class_weight`` None or a dict;
        for any other configuration the attribute does not exist (an
        AttributeError that says why, so that ``hasattr`` is False as
        scikit-learn's tools expect).  ``gamma='scale'``
        is resolved on the first chunk.  ``partial_fit`` continues a bias-free
        fit by any solver, online from its support vectors and dual variables
        (set ``solver='online'`` or ``'auto'`` first if the fit used another).
        The parameters that define the problem (``model``, ``C``, ``kernel``,
        ``gamma``, ``degree``, ``coef0``, ``class_weight``) must stay those
        the model was fitted with (a ValueError names the changed ones: call
        :meth:`fit` to start again); ``tol``, ``online_strategy`` and
        ``cache_size`` changed between calls apply from the next chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The chunk.
        y : array-like of shape (n_samples,)
            Its labels, all in ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every label of the stream.  Required on the first call, optional
            (and then checked against ``classes_``) later.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the chunk's examples, times the class
            weights of a dict ``class_weight`` (as in :meth:`fit`; examples of
            weight 0 are skipped).  ``class_weight='balanced'`` needs the whole
            training set: with it there is no ``partial_fit``.

        Returns
        -------
        self : MultiClassSVC
            The estimator, its fitted attributes describing the model so far:
            ``support_`` indexes the patterns of the whole stream (counted
            from 0 at the first call), ``n_iter_`` counts the steps of all
            calls.
        """
        before = dict(vars(self))
        try:
            return self._partial_fit(X, y, classes, sample_weight)
        except BaseException:
            # As in fit (a chunk fed in part stays in the stream: OnlineStream.feed).
            _restore(self, before)
            raise

    def _partial_fit(self, X, y, classes, sample_weight):
        """:meth:`partial_fit` proper (``partial_fit`` undoes its changes to the
        estimator's attributes when it raises)."""
        self._check_params()
        reason = _no_streaming(self)   # (the descriptor's check, for a call through the class)
        if reason is not None:
            raise AttributeError(reason)
        stream = getattr(self, "_stream", None)
        reason = getattr(self, "_no_continue", None)
        if stream is None and reason is not None:
            raise ValueError(f"partial_fit cannot continue this model: {reason}. Fit it "
                             "again (fit or partial_fit on a fresh estimator).")
        if stream is not None or getattr(self, "_fit_seed", None) is not None:
            self._check_unchanged_problem()
        if stream is not None:
            stream.reconfigure(tol=self.tol, online_strategy=self.online_strategy,
                               cache_size=self.cache_size)
        seed = getattr(self, "_fit_seed", None)
        if stream is None and seed is not None:
            # Continue a fit by another solver from its support vectors and their α.
            labels, alpha_sv, n_train, weight_sv = (tuple(seed) + (None,))[:4]
            assert isinstance(self.kernel, str)  # a callable kernel has no partial_fit
            stream = OnlineStream.from_solution(
                make_machine(self.model, len(self.classes_)), self.C, self.kernel, self.gamma_,
                self.degree, self.coef0, self.support_vectors_, labels, alpha_sv, self.support_,
                tol=self.tol, online_strategy=self.online_strategy, cache_size=self.cache_size,
                random_state=self.random_state, n_seen=n_train, weight=weight_sv)
            self._stream = stream
            self._fit_seed = None
        first = stream is None
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             ensure_all_finite=True, reset=first)
        if sp.issparse(X):
            X = canonical_csr(X)
        _encode_targets(y)
        sw = (None if sample_weight is None
              else _checked_weights(sample_weight, X, allow_all_zero_weights=True))
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            try:
                known = unique_labels(classes)
            except TypeError as error:
                raise _unsortable(classes, "classes", error) from None
            if len(known) < 2:
                raise ValueError(
                    f"partial_fit needs at least 2 classes in classes=, got {len(known)}."
                )
        else:
            known = self.classes_
            if classes is not None and not np.array_equal(unique_labels(classes), known):
                raise ValueError(
                    f"classes={classes!r} is not the same as on the first call to "
                    f"partial_fit, was: {known!r}."
                )
        unseen = np.setdiff1d(np.unique(y), known)
        if len(unseen):
            raise ValueError(
                f"y contains labels not in classes: {unseen.tolist()!r}; partial_fit was "
                f"started with classes={known.tolist()!r} (declare every label of the stream "
                "on the first call)."
            )
        y_codes = np.searchsorted(known, y)
        class_weight, weight = (None, sw) if self.class_weight is None else (
            self._weights(known, y, y_codes, sw, allow_all_zero=True))
        if first:
            gamma_ = resolve_gamma(self.gamma, X, used=self.kernel != "linear",
                                   sample_weight=sw)
            assert isinstance(self.kernel, str)  # a callable kernel has no partial_fit
            stream = OnlineStream(
                make_machine(self.model, len(known)), self.C, self.kernel, gamma_, self.degree,
                self.coef0, X.shape[1], sp.issparse(X), tol=self.tol,
                online_strategy=self.online_strategy, cache_size=self.cache_size,
                random_state=self.random_state)
            self.classes_ = known
            self.gamma_ = float(gamma_)
            self._stream = stream
            self._fit_params = self._problem_params()
        self.class_weight_ = np.ones(len(known)) if class_weight is None else class_weight
        assert stream is not None  # the first call has just made it
        status = stream.feed(X, y_codes, max_iter=None if self.max_iter in (None, -1)
                             else int(self.max_iter), verbose=bool(self.verbose),
                             sample_weight=weight)
        self._log(f"partial_fit: chunk of {X.shape[0]}, {stream.state.n_sp} support patterns, "
                  f"{stream.state.n_steps} steps so far, status={status}")
        self._set_fitted_stream(status)
        return self

    def _problem_params(self) -> dict:
        """The parameters of :data:`_PROBLEM_PARAMS` as they are now."""
        return {name: getattr(self, name) for name in _PROBLEM_PARAMS}

    def _check_unchanged_problem(self) -> None:
        """Refuse to continue a model whose problem parameters changed since it was fitted.

        The online solver's state (support patterns, their dual variables and
        gradients) belongs to the problem it was fitted on; continued under
        other parameters, the model would mix two problems while the
        estimator reports the new ones.
        """
        fitted = getattr(self, "_fit_params", None)
        if fitted is None:   # pickled by an msvm that did not record them
            return
        changed = [name for name in _PROBLEM_PARAMS if not _same(getattr(self, name),
                                                                  fitted[name])]
        if changed:
            was = ", ".join(f"{name}={fitted[name]!r}" for name in changed)
            now = ", ".join(f"{name}={getattr(self, name)!r}" for name in changed)
            raise ValueError(
                f"partial_fit continues the model fitted with {was}, but the estimator now "
                f"has {now}: its support patterns and dual variables belong to the problem "
                "it was fitted on. Set the parameters back, or call fit (or partial_fit on a "
                "fresh estimator, e.g. sklearn.base.clone(estimator)) to start a model with "
                "the new ones."
            )

    def _set_fitted_stream(self, status: str) -> None:
        """Fitted attributes from the online stream's support patterns."""
        stream = self._stream
        assert stream is not None
        gids, labels, alpha, _, feats = stream.support()
        # β from α exactly as DualProblem.beta does in fit (not the solver's running β̄).
        beta = class_coefficients(alpha, labels, stream.machine.nu_centered)
        keep = np.flatnonzero(np.any(beta != 0, axis=1))
        keep = keep[np.argsort(gids[keep], kind="stable")]
        n_classes = len(self.classes_)
        self.support_ = gids[keep].astype(np.intp)
        self.support_vectors_ = feats[keep]
        self.n_support_ = np.bincount(labels[keep], minlength=n_classes).astype(np.int32)
        self.dual_coef_ = np.ascontiguousarray(beta[keep])
        self._set_coef()
        self.intercept_ = np.zeros(n_classes)
        self.n_iter_ = int(stream.state.n_steps)
        self.shape_fit_ = (int(stream.n_seen), int(self.n_features_in_))
        self.solution_ = {
            "status": status,
            "solver": "online",
            "time": float(stream.time),
            "n_iter": int(stream.state.n_steps),
            "n_kernel_evaluations": int(stream.state.n_kernel_evaluations),
            "dual_objective": float(-stream.state.J),
            "primal_objective": None,
            "duality_gap": None,
            "relative_gap": None,
            "kkt_violation": None,
            "kkt_residual": None,
            "b": None,
            "b_method": "none",
            "n_support": int(len(keep)),
            "n_seen": int(stream.n_seen),
        }
        if status not in _EXPECTED_STATUSES:
            warnings.warn(
                f"partial_fit stopped at max_iter={self.max_iter} steps before the end of the "
                "chunk; the rest of the chunk was not fed. Increase max_iter.",
                ConvergenceWarning, stacklevel=3,
            )

    # ------------------------------------------------------------ predict
    def _validate_for_predict(self, X):
        check_is_fitted(self)
        if self._precomputed:
            K = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True)
            n_train = self.shape_fit_[0]
            if K.shape[1] != n_train:
                raise ValueError(
                    f"X has {K.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{n_train} features as input: with kernel='precomputed', X must be the "
                    f"(n_samples, n_train={n_train}) kernel matrix between the points to "
                    "predict and the training points."
                )
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                          ensure_all_finite=True, reset=False)
        return canonical_csr(X) if sp.issparse(X) else X

    def _scores(self, X) -> np.ndarray:
        """h(x) for every row of X, shape (n_samples, n_classes)."""
        X = self._validate_for_predict(X)
        n = X.shape[0]
        scores = np.tile(self.intercept_, (n, 1))
        if len(self.support_) == 0:
            return scores
        # part(rows) makes a (rows × width) block: kernel values, or X·coefᵀ.
        width, threads = len(self.support_), n_threads(self._n_jobs())
        if callable(self.kernel):   # the user's function: on this thread
            threads = 1

            def part(rows):
                return callable_block(self.kernel, X[rows], self.support_vectors_) @ self.dual_coef_
        elif self._precomputed:
            def part(rows):
                return np.asarray(X[rows][:, self.support_] @ self.dual_coef_)
        elif getattr(self, "coef_", None) is not None:
            width = len(self.classes_)

            def part(rows):
                return safe_sparse_dot(X[rows], self.coef_.T, dense_output=True)
        else:
            kernel = Kernel(self.support_vectors_, self.kernel, gamma=self.gamma_,
                            degree=self.degree, coef0=self.coef0)

            def part(rows):
                return kernel.block(X[rows]) @ self.dual_coef_
        _add_by_blocks(scores, part, threads, width)
        if not np.all(np.isfinite(scores)):
            # E.g. the RBF's ‖x‖² + ‖x'‖² − 2⟨x, x'⟩ overflowing: argmax would pick class 0.
            raise ValueError(
                "The scores of some rows of X are not finite: the kernel between them and "
                "the support vectors overflows float64. Scale the features as the training "
                "points were scaled."
            )
        return scores

    def decision_function(self, X: MatrixLike) -> NDArray[np.float64]:
        """Scores h_c(x) = Σ_j β_jc k(x_j, x) + b_c of every class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Points to score; with ``kernel='precomputed'``, the
            (n_samples, n_train) kernel matrix between them and the training
            points.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes), or (n_samples,) for two classes
            For two classes, scikit-learn's binary convention: h_2 − h_1,
            positive when the prediction is ``classes_[1]``.

        Notes
        -----
        The rows are scored in blocks (at most 2048 rows and
        :data:`msvm.kernels.BLOCK_ENTRIES` kernel values, 32 MB, each; one
        block per thread at a time), so that memory beyond the scores does not
        grow with the number of rows; :meth:`predict` likewise.
        """
        scores = self._scores(X)
        if len(self.classes_) == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Predict ``classes_[argmax_c h_c(x)]`` for every row of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Points to classify (kernel matrix when ``kernel='precomputed'``).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]


def _add_by_blocks(scores: np.ndarray, part, threads: int, width: int) -> None:
    """``scores[rows] += part(rows)`` over blocks of at most _PREDICT_CHUNK rows.

    A block of ``width`` columns (support vectors) holds at most
    :data:`msvm.kernels.BLOCK_ENTRIES` values (:func:`~msvm.kernels.block_rows`),
    so that memory does not grow with the test rows times the support vectors.

    On one thread (``n_jobs=None`` or 1) the blocks run here and BLAS keeps its
    own threads.  On several, they are shared among ``threads`` threads (numpy
    and BLAS release the GIL), each with BLAS on one thread: OpenBLAS's idle
    threads busy-wait for a while after every call, on the cores that the
    next multi-threaded fit needs (``benchmarks/bench_fit_after_predict.py``).
    ``concurrent.futures`` rather than joblib's threading backend, which takes
    longer to start than a small prediction takes.
    """
    n = scores.shape[0]
    size = min(block_rows(width, _PREDICT_CHUNK), max(-(-n // threads), _PREDICT_MIN_BLOCK))
    starts = range(0, n, size)

    def add(begin: int) -> None:
        rows = slice(begin, min(begin + size, n))
        scores[rows] += part(rows)

    if threads == 1:
        for begin in starts:
            add(begin)
        return
    with limit_blas_threads(1):
        if len(starts) == 1:
            add(0)
            return
        with ThreadPoolExecutor(min(threads, len(starts))) as pool:
            for _ in pool.map(add, starts):   # re-raises a block's exception
                pass


#: Whether scikit-learn's ``_check_sample_weight`` takes ``allow_all_zero_weights`` (1.9 on).
_SKLEARN_WEIGHTS_MAY_BE_ZERO = (
    "allow_all_zero_weights" in inspect.signature(_check_sample_weight).parameters)


def _checked_weights(sample_weight, X, allow_all_zero_weights: bool = False) -> np.ndarray:
    """``sample_weight`` as non-negative float64 weights of X's rows (scikit-learn's check).

    A numeric 0-d array is the scalar it holds, as a NumPy scalar is (scikit-learn's
    check refused it with "Input should have at least 1 dimension", naming no argument).

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or float
        The weights given to ``fit`` or ``partial_fit``.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The rows they weigh.
    allow_all_zero_weights : bool, default=False
        Accept weights that are all 0 (a chunk of ``partial_fit``); otherwise they are
        refused with scikit-learn's message.  The check is made here: before 1.9
        scikit-learn's ``_check_sample_weight`` has no such argument (and never refuses
        them); from 1.9 on it refuses them unless it is given.

    Returns
    -------
    ndarray of shape (n_samples,)
        The weights, float64 and C-contiguous.
    """
    if (isinstance(sample_weight, np.ndarray) and sample_weight.ndim == 0
            and sample_weight.dtype.kind in "biuf"):
        sample_weight = sample_weight.item()
    kwargs = {"allow_all_zero_weights": True} if _SKLEARN_WEIGHTS_MAY_BE_ZERO else {}
    weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True,
                                   **kwargs)
    if not allow_all_zero_weights and not np.any(weights):
        raise ValueError("Sample weights must contain at least one non-zero number.")
    return weights


def _encode_targets(y) -> tuple[np.ndarray, np.ndarray]:
    """(sorted classes, codes of y): scikit-learn's target checks, then ``np.unique``.

    Both sort the labels: labels of types that cannot be compared (e.g. ``'a'``
    and ``1`` in an object array) get a TypeError that names them instead of
    numpy's bare "'<' not supported between instances of ...".
    """
    try:
        check_classification_targets(y)
        return np.unique(y, return_inverse=True)
    except TypeError as error:
        raise _unsortable(y, "y", error) from None


def _restore(estimator, attributes: dict) -> None:
    """Set the estimator's attributes back to ``attributes`` (a copy of ``vars``)."""
    vars(estimator).clear()
    vars(estimator).update(attributes)


def _unsortable(labels, name: str, error: TypeError) -> TypeError:
    """The error for labels of types that cannot be sorted together (see _encode_targets).

    ``error`` is the TypeError raised, returned as it is when the labels are all of one
    type (scikit-learn's own refusals, e.g. of bytes labels, say what is wrong).
    """
    kinds = sorted({type(v).__name__ for v in np.asarray(labels, dtype=object).ravel()})
    if len(kinds) < 2:
        return error
    return TypeError(f"{name} mixes labels of types that cannot be sorted together "
                     f"({', '.join(kinds)}); use labels of one type (e.g. all strings).")


def _same(value, default) -> bool:
    """Whether two values of a parameter are equal (200 and 200.0 alike)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


#: The constructor's defaults, to tell which solver options a user has set.
_DEFAULTS = MultiClassSVC().get_params()
