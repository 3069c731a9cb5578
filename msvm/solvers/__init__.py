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
    "online": "msvm.solvers.online",
    "frank_wolfe": "msvm.solvers.frank_wolfe",
    "linear": "msvm.solvers.linear",
}


def get_solver(name: str):
    """Import and return the solver module ``name`` (see :data:`SOLVERS`)."""
    if name not in SOLVERS:
        raise ValueError(f"Unknown solver {name!r}; expected 'auto' or one of {sorted(SOLVERS)}.")
    return importlib.import_module(SOLVERS[name])


def resolve_solver(name: str, problem) -> str:
    """The solver actually used for ``name`` on ``problem``.

    ``'auto'`` picks ``'s2do'`` for the bias-free machines and
    ``'frank_wolfe'`` (the only decomposition solver that keeps the bias's
    equality constraints) with a bias, whatever the size.  The reference QP
    solvers are never picked: measured on the 150–200-point problems of the
    validation suite, Frank–Wolfe at its default tolerance is as fast or
    faster than cvxpy/Clarabel, and the reference solvers' cost grows with
    the cube of the number of variables (``benchmarks/bench_frank_wolfe.py``).
    """
    if name == "auto":
        name = "frank_wolfe" if problem.fit_intercept else "s2do"
    module = get_solver(name)
    if problem.fit_intercept and not module.SUPPORTS_BIAS:
        raise ValueError(f"Solver {name!r} cannot handle a bias; use fit_intercept=False.")
    if not problem.fit_intercept and not module.SUPPORTS_NO_BIAS:
        raise ValueError(f"Solver {name!r} needs a bias; use fit_intercept=True.")
    return name
