"""Solvers of the unified dual, one module per algorithm, imported lazily.

Every solver module exposes ``solve(problem, *, tol, max_iter, warm_start,
verbose, **options) -> DualSolution`` and two flags: ``SUPPORTS_BIAS`` and
``SUPPORTS_NO_BIAS``.  :func:`get_solver` imports a module only when it is
asked for, so that e.g. cvxpy is not loaded by a user who never calls it.
"""

from __future__ import annotations

import importlib

__all__ = ["SOLVERS", "get_solver", "resolve_solver"]

#: Solver name -> module implementing it.
SOLVERS = {
    "cvxpy": "msvm.solvers.reference_cvxpy",
    "osqp": "msvm.solvers.reference_osqp",
    "s2do": "msvm.solvers.s2do",
    "frank_wolfe": "msvm.solvers.frank_wolfe",
}

#: Largest number of dual variables for which 'auto' picks a reference QP solver.
AUTO_REFERENCE_MAX_VARS = 4000


def get_solver(name: str):
    """Import and return the solver module ``name`` (see :data:`SOLVERS`)."""
    if name not in SOLVERS:
        raise ValueError(f"Unknown solver {name!r}; expected 'auto' or one of {sorted(SOLVERS)}.")
    return importlib.import_module(SOLVERS[name])


def resolve_solver(name: str, problem) -> str:
    """The solver actually used for ``name`` on ``problem``.

    ``'auto'`` picks ``'s2do'`` for the bias-free machines (any size).  With a
    bias it picks the interior-point reference solver (cvxpy with Clarabel)
    while the problem has at most :data:`AUTO_REFERENCE_MAX_VARS` variables,
    and raises beyond that, since no decomposition solver handles the bias's
    equality constraints yet.
    """
    if name == "auto":
        n_vars = int(problem.active.sum())
        if not problem.fit_intercept:
            name = "s2do"
        elif n_vars <= AUTO_REFERENCE_MAX_VARS:
            name = "cvxpy"
        else:
            raise ValueError(
                f"No decomposition solver handles a bias yet, and the {n_vars} dual "
                f"variables exceed the {AUTO_REFERENCE_MAX_VARS} up to which solver='auto' "
                "uses the reference QP solvers. Use fit_intercept=False (solver 's2do'), "
                "or pass solver='cvxpy' or 'osqp' explicitly to force a reference solver."
            )
    module = get_solver(name)
    if problem.fit_intercept and not module.SUPPORTS_BIAS:
        raise ValueError(f"Solver {name!r} cannot handle a bias; use fit_intercept=False.")
    if not problem.fit_intercept and not module.SUPPORTS_NO_BIAS:
        raise ValueError(f"Solver {name!r} needs a bias; use fit_intercept=True.")
    return name
