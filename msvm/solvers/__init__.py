"""Solvers of the unified dual, one module per algorithm, imported lazily.

Every solver module exposes ``solve(problem, *, tol, max_iter, warm_start,
verbose, **options) -> DualSolution`` and declares what it can do:

``SUPPORTS_BIAS``, ``SUPPORTS_NO_BIAS``
    Whether it solves the dual with / without the bias's equality constraints.
``OPTIONS``
    The estimator parameters of :class:`msvm.MultiClassSVC` it honours (a
    subset of :data:`ESTIMATOR_OPTIONS`); the estimator refuses or warns
    about the others instead of dropping them.  ``'certify'`` in it means the
    solver recomputes the float64 scores itself, cheaply from its kernel
    cache (``DualSolution.certified_scores``); for the others the estimator
    does it.
``STOPPING_RULE``
    What ``tol`` bounds at a solution it calls optimal: ``'kkt_violation'``
    (the largest KKT violation in gradient units, re-checked on the float64
    certificate), ``'fw_gap'`` (the Frank–Wolfe gap relative to the dual) or
    None (the reference solvers, which solve to their backend's precision).
``BLAS_THREADS``
    Whether ``solve`` takes ``blas_threads``: the BLAS threads while it runs
    its compiled loop (S2DO and S2DO with a bias: the whole solve; default 1;
    None leaves the BLAS library's setting, e.g. for a precomputed kernel,
    whose loop calls no BLAS).

:func:`get_solver` imports a module only when it is asked for, so that e.g.
cvxpy is not loaded by a user who never calls it.
"""

from __future__ import annotations

import importlib
import time
import warnings

import numpy as np
import scipy.sparse as sp

from msvm._numbers import is_real

__all__ = ["SOLVERS", "ESTIMATOR_OPTIONS", "TOL_FLOOR", "STALL_SECONDS", "TIME_SLICE",
           "StallWatch", "default_max_iter", "check_tol", "check_tol_value", "get_solver",
           "prefers_linear", "resolve_solver"]

#: Solver name -> module implementing it.
SOLVERS = {
    "cvxpy": "msvm.solvers.reference_cvxpy",
    "osqp": "msvm.solvers.reference_osqp",
    "s2do": "msvm.solvers.s2do",
    "s2do_bias": "msvm.solvers.s2do_bias",
    "online": "msvm.solvers.online",
    "frank_wolfe": "msvm.solvers.frank_wolfe",
    "linear": "msvm.solvers.linear",
}

#: Parameters of the estimator that are options of a solver (``verbose`` and
#: ``max_iter`` are honoured by every solver).
ESTIMATOR_OPTIONS = ("tol", "max_iter", "warm_start", "cache_size", "cache_dtype", "n_jobs",
                     "random_state", "online_strategy", "epochs")

#: Smallest ``tol`` an iterative solver is run at.  A gradient entry is the
#: difference of an O(1) target γ and a score, a sum of m kernel terms kept up
#: to date by rank-one updates; below this its round-off decides whether a
#: violation is positive, so a smaller ``tol`` would loop without progress.
TOL_FLOOR = 1e-12

#: An iterative solver whose dual objective has not increased for this many
#: seconds of work stops with status ``'stalled'`` (progress below round-off).
STALL_SECONDS = 2.0

#: The compiled loops return to Python at least this often (seconds), so that
#: Ctrl-C (SIGINT) interrupts a fit and progress lines can be printed.
TIME_SLICE = 0.5


def default_max_iter(n_samples: int) -> int:
    """The iteration budget when the user sets none: max(10⁷, 100·m), as libsvm's."""
    return max(10_000_000, 100 * int(n_samples))


def check_tol_value(tol) -> None:
    """A ValueError unless ``tol`` is a non-negative real number (not NaN, not a bool)."""
    if not is_real(tol) or not tol >= 0:  # also NaN
        raise ValueError(f"tol must be a non-negative number, got tol={tol!r}.")


def check_tol(tol, default: float = 1e-3) -> float:
    """``tol`` as a float ≥ :data:`TOL_FLOOR` (raised to it with a warning)."""
    tol = default if tol is None else tol
    check_tol_value(tol)
    if tol < TOL_FLOOR:
        warnings.warn(
            f"tol={tol:g} is below what float64 arithmetic can certify; raised to the floor "
            f"{TOL_FLOOR:g} (msvm.solvers.TOL_FLOOR).", UserWarning, stacklevel=3)
        return TOL_FLOOR
    return float(tol)


class StallWatch:
    """Tells an iterative solver when its minimised objective J stopped decreasing.

    Called between time slices; :meth:`stalled` is True when J has not
    decreased for :data:`STALL_SECONDS` or is not finite.
    """

    def __init__(self, objective):
        self.objective = objective
        self.best = float(objective())
        self.since = time.perf_counter()

    def stalled(self) -> bool:
        J = float(self.objective())
        now = time.perf_counter()
        if not np.isfinite(J):
            return True
        if J < self.best:
            self.best, self.since = J, now
            return False
        return now - self.since >= STALL_SECONDS


def get_solver(name: str):
    """Import and return the solver module ``name`` (see :data:`SOLVERS`)."""
    if name not in SOLVERS:
        raise ValueError(f"Unknown solver {name!r}; expected 'auto' or one of {sorted(SOLVERS)}.")
    return importlib.import_module(SOLVERS[name])


def prefers_linear(problem) -> bool:
    """Whether ``'auto'`` takes the linear solver (:mod:`msvm.solvers.linear`) for ``problem``.

    True for ``kernel='linear'`` without a bias (every bias-free machine is
    supported) when the stored non-zeros per row (CSR) or the features
    (dense) are at most the number of examples.  A pass of the linear solver
    costs O(nnz(X)·Q) and needs no Gram matrix; S2DO's kernel rows cost
    O(m·nnz(X)) for the whole Gram matrix, but its steps then cost O(m).  So
    the primal W wins while a row is shorter than the number of rows, and
    S2DO wins on wide dense data (the README's "Solvers" section gives the
    measurements behind the rule).
    """
    kernel = problem.kernel
    if problem.fit_intercept or callable(kernel.name) or kernel.name != "linear":
        return False
    X = kernel.X
    m = X.shape[0]
    row = X.nnz / max(m, 1) if sp.issparse(X) else X.shape[1]
    return row <= m


def resolve_solver(name: str, problem) -> str:
    """The solver actually used for ``name`` on ``problem``.

    ``'auto'`` picks ``'linear'`` for a linear kernel without a bias when a
    row of X is no longer than the number of rows (:func:`prefers_linear`),
    else ``'s2do'`` for the bias-free machines and ``'s2do_bias'`` (the
    method of multipliers over S2DO, every machine; ``'frank_wolfe'``, which
    keeps the equalities in every step, stays selectable) with a bias,
    whatever the size.  The reference QP solvers are never
    picked: their cost grows with the cube of the number of variables
    (``python -m benchmarks.bench_frank_wolfe``).
    """
    if name == "auto":
        if prefers_linear(problem):
            name = "linear"
        else:
            name = "s2do_bias" if problem.fit_intercept else "s2do"
    module = get_solver(name)
    if problem.fit_intercept and not module.SUPPORTS_BIAS:
        raise ValueError(f"Solver {name!r} cannot handle a bias; use fit_intercept=False.")
    if not problem.fit_intercept and not module.SUPPORTS_NO_BIAS:
        raise ValueError(f"Solver {name!r} needs a bias; use fit_intercept=True.")
    return name
