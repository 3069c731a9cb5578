"""Reference solver: the full dual QP through OSQP's own API.

OSQP (ADMM) reaches high accuracy here through *solution polishing*: once the
active set is guessed it solves the reduced KKT system exactly.  The QP is
passed in the coefficient form of :mod:`msvm.solvers._qp`: variables (α, u)
with the sparse link u = Wα and P = blockdiag(0, K', ..., K') as a sparse upper
triangle; for a low-rank kernel, variables (α, u, z) with z = (I ⊗ Lᵀ)u and
P = diag(0, shift·I, I), which keeps P sparse and well conditioned.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from msvm.problem import DualProblem, DualSolution
from msvm.solvers import _qp

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"max_iter"})
STOPPING_RULE = None
#: ``solve`` takes no ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = False

OSQP_EPS = 1e-10
# (eps, settings) tried in turn until one is solved (and, at a looser eps than
# asked, polished: a polished answer is exact).  Adaptive ρ suits strongly convex
# duals (M-SVM²) but can stall at eps = 1e-10 on degenerate ones (a bias with a
# low-rank kernel), where a fixed ρ, or a looser eps followed by polishing, works.
_ATTEMPTS: tuple[tuple[float | None, dict[str, Any]], ...] = (
    (None, {"max_iter": 10000}),
    (None, {"rho": 1.0, "adaptive_rho": False}),
    (1e-8, {"rho": 1.0, "adaptive_rho": False}),
    (1e-6, {}),
)


def _sigint_status(osqp, algebra: str) -> int:
    """OSQP's status value for "interrupted by SIGINT".

    Parameters
    ----------
    osqp : module
        The imported ``osqp`` package.
    algebra : str
        The solver's linear-algebra backend (``OSQP.algebra``).

    Returns
    -------
    int
        ``osqp.SolverStatus.OSQP_SIGINT``, or where osqp does not export that enum
        (osqp 1.0.0) ``osqp.constant("OSQP_SIGINT", algebra)``, which later versions
        mark as pending deprecation.
    """
    if hasattr(osqp, "SolverStatus"):
        return int(osqp.SolverStatus.OSQP_SIGINT)
    return int(osqp.constant("OSQP_SIGINT", algebra))


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          factor_form: bool | None = None, **settings) -> DualSolution:
    """Solve ``problem`` with OSQP (polished).

    Parameters
    ----------
    problem : DualProblem
    tol : float, optional
        eps_abs = eps_rel (default 1e-10).
    max_iter : int, optional
        ADMM iteration cap per attempt (default 20000).
    warm_start : ignored
        A primal-only warm start does not shorten ADMM here (measured), and a
        reference solver should not depend on where it starts.
    verbose : bool
        Print OSQP's log.
    factor_form : bool, optional
        Force (True) or forbid (False) the low-rank factor form; default: use
        it when the kernel's numerical rank is below half the number of points.
    **settings
        Passed to ``osqp.OSQP.setup``.

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C while OSQP iterates (OSQP catches the signal itself and
        returns early).
    """
    import osqp

    _qp.check_options(tol, max_iter)
    start = time.perf_counter()
    qp = _qp.build(problem)
    n, n_u = qp.n, qp.W.shape[0]
    if factor_form is None:
        factor_form = qp.low_rank
    # Variables (α, u[, z]).  Rows: α ≥ 0 (and the slack groups), the bias
    # equalities, the link u = Wα, and in factor form z = (I ⊗ Lᵀ) u.
    rows = [sp.identity(n, format="csc")]
    lower = [np.zeros(n)]
    upper = [np.full(n, np.inf)]
    if qp.S.shape[0]:
        rows.append(sp.csc_matrix(qp.S))
        lower.append(np.full(qp.S.shape[0], -np.inf))
        upper.append(qp.cap)
    n_eq = qp.E.shape[0]
    if n_eq:
        rows.append(sp.csc_matrix(qp.E))
        lower.append(np.zeros(n_eq))
        upper.append(np.zeros(n_eq))
    n_x_rows = sum(r.shape[0] for r in rows)
    if factor_form:
        assert qp.L is not None  # build() factors K
        factor = sp.block_diag([sp.csr_matrix(qp.L.T)] * qp.n_blocks, format="csc")
        n_z = factor.shape[0]
        P = sp.block_diag([sp.csc_matrix((n, n)), sp.diags(qp.shift_u),
                           sp.identity(n_z)], format="csc")
        A = sp.vstack([
            sp.hstack([sp.vstack(rows), sp.csc_matrix((n_x_rows, n_u + n_z))]),
            sp.hstack([qp.W, -sp.identity(n_u), sp.csc_matrix((n_u, n_z))]),
            sp.hstack([sp.csc_matrix((n_z, n)), factor, -sp.identity(n_z)]),
        ], format="csc")
        link = n_u + n_z
    else:
        Kp = qp.K + np.diag(qp.shift)
        P = sp.block_diag([sp.csc_matrix((n, n))] + [sp.csc_matrix(Kp)] * qp.n_blocks,
                          format="csc")
        A = sp.vstack([
            sp.hstack([sp.vstack(rows), sp.csc_matrix((n_x_rows, n_u))]),
            sp.hstack([qp.W, -sp.identity(n_u)]),
        ], format="csc")
        link = n_u
    lower.append(np.zeros(link))
    upper.append(np.zeros(link))
    q = np.concatenate([-qp.targets, np.zeros(P.shape[0] - n)])
    P = sp.triu(P, format="csc")
    eps = OSQP_EPS if tol is None else tol
    base = dict(eps_abs=eps, eps_rel=eps, max_iter=20000, polishing=True,
                polish_refine_iter=10, verbose=verbose, eps_prim_inf=1e-12, eps_dual_inf=1e-12)
    l_all, u_all = np.concatenate(lower), np.concatenate(upper)
    best = None  # (residual, x, λ_E, polished, OSQP result) of the most accurate attempt
    for attempt_eps, attempt in _ATTEMPTS:
        opts = {**base, **attempt, **settings}
        if max_iter is not None:
            opts["max_iter"] = int(max_iter)
        if attempt_eps is not None:
            opts.update(eps_abs=max(attempt_eps, eps), eps_rel=max(attempt_eps, eps))
        solver = osqp.OSQP()
        solver.setup(P=P, q=q, A=A, l=l_all, u=u_all, **opts)
        res = solver.solve(raise_error=False)
        if int(res.info.status_val) == _sigint_status(osqp, solver.algebra):
            # OSQP takes SIGINT from Python while it iterates and returns its iterate: Ctrl-C
            # would start the next attempt instead of stopping the fit.
            raise KeyboardInterrupt
        if res.x is None:
            continue
        polished = "osqp" if int(res.info.status_polish) == 1 else False
        x = _qp.clean(problem, qp, np.nan_to_num(res.x[:n]))
        lam = res.y[n + qp.S.shape[0] : n + qp.S.shape[0] + n_eq]
        # Certify every attempt by KKT.  Where ADMM stalled, or its polishing
        # left residuals (rank-deficient kernels), finish with the active-set
        # refinement; an attempt that stalls (degenerate linear duals) may still
        # hand the refinement a usable active-set guess, so the ladder stops
        # at the first certified answer rather than at OSQP's own status.
        x, polished_lam, residual = _qp.polish(problem, qp, x)
        if polished_lam is not None:
            lam, polished = polished_lam, "active-set"
        if best is None or residual < best[0]:
            best = (residual, x, lam, polished, res)
        if residual <= _qp.CERTIFIED_RESIDUAL:
            break
    if best is None:
        residual, x, lam, polished, status_text = np.inf, np.zeros(n), None, False, "failed"
    else:
        residual, x, lam, polished, res = best
        status_text = str(res.info.status)
    if residual <= _qp.CERTIFIED_RESIDUAL:
        status = "optimal"
    elif residual <= _qp.USABLE_RESIDUAL:
        status = "optimal_inaccurate"  # cvxpy's word for a stalled but usable answer
    else:
        status = "inaccurate" if np.isfinite(residual) else "failed"
    # OSQP's KKT: Px + q + Aᵀy = 0, so the free variables give b = U y_eq.
    b = problem.equality_basis @ lam if n_eq and lam is not None else np.zeros(problem.n_classes)
    return DualSolution(
        alpha=qp.to_alpha(problem, x),
        b=b,
        status=status,
        n_iter=int(res.info.iter),
        time=time.perf_counter() - start,
        n_kernel_evaluations=qp.n_kernel_evaluations,
        solver="osqp",
        info={"backend_status": status_text, "polished": polished, "factor_form": factor_form},
    )
