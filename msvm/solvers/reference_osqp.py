"""Reference solver: the full dual QP through OSQP's own API.

OSQP (ADMM) reaches high accuracy here through *solution polishing*: once the
active set is guessed it solves the reduced KKT system exactly.  P is passed
as a sparse upper triangle; when the kernel has low rank (k·Q < n) the factor
form is used instead (variables (α, z) with z = Gα and P = diag(0, I)), which
keeps P sparse and the problem well conditioned.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from msvm.problem import DualProblem, DualSolution
from msvm.solvers import _qp

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True

OSQP_EPS = 1e-10
_ATTEMPTS = ({"rho": 1.0, "adaptive_rho": False}, {}, {"scaling": 0})


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          factor_form: bool | None = None, **settings) -> DualSolution:
    """Solve ``problem`` with OSQP (polished).

    Parameters
    ----------
    problem : DualProblem
    tol : float, optional
        eps_abs = eps_rel (default 1e-10).
    max_iter : int, optional
        ADMM iteration cap per attempt (default 50000).
    warm_start : DualSolution or ndarray, optional
        Starting α for ADMM.
    verbose : bool
        Print OSQP's log.
    factor_form : bool, optional
        Force (True) or forbid (False) the low-rank factor form; default: use
        it when the factor has fewer rows than there are variables.
    **settings
        Passed to ``osqp.OSQP.setup``.
    """
    import osqp

    start = time.perf_counter()
    qp = _qp.build(problem)
    n = qp.n
    k = qp.G.shape[0]
    if factor_form is None:
        factor_form = k < n
    # Constraint rows: bounds (α ≥ 0, and α ≤ C for singleton groups), group sums, equalities.
    rows = [sp.identity(n, format="csc")]
    lower = [np.zeros(n)]
    upper = [np.full(n, np.inf)]
    if qp.S.shape[0]:
        rows.append(sp.csc_matrix(qp.S))
        lower.append(np.full(qp.S.shape[0], -np.inf))
        upper.append(np.full(qp.S.shape[0], problem.C))
    n_eq = qp.E.shape[0]
    if n_eq:
        rows.append(sp.csc_matrix(qp.E))
        lower.append(np.zeros(n_eq))
        upper.append(np.zeros(n_eq))
    A = sp.vstack(rows, format="csc")
    q = -qp.targets
    if factor_form:
        P = sp.block_diag([sp.csc_matrix((n, n)), sp.identity(k)], format="csc")
        link = sp.hstack([sp.csc_matrix(qp.G), -sp.identity(k)], format="csc")
        A = sp.vstack([sp.hstack([A, sp.csc_matrix((A.shape[0], k))]), link], format="csc")
        lower.append(np.zeros(k))
        upper.append(np.zeros(k))
        q = np.concatenate([q, np.zeros(k)])
    else:
        P = sp.csc_matrix(qp.hessian())
    P = sp.triu(P, format="csc")
    eps = OSQP_EPS if tol is None else tol
    base = dict(eps_abs=eps, eps_rel=eps, max_iter=int(max_iter or 50000), polishing=True,
                polish_refine_iter=10, verbose=verbose, eps_prim_inf=1e-12, eps_dual_inf=1e-12)
    l_all, u_all = np.concatenate(lower), np.concatenate(upper)
    x0 = None
    if warm_start is not None:
        alpha0 = getattr(warm_start, "alpha", warm_start)
        x0 = alpha0[qp.ii, qp.pp]
        x0 = np.concatenate([x0, qp.G @ x0]) if factor_form else x0
    # At eps = 1e-10 OSQP's adaptive ρ can stall on degenerate SVM duals (seen with
    # a bias and low-rank kernels); a fixed ρ, then no scaling, converge there.
    res = None
    for attempt in _ATTEMPTS:
        opts = {**base, **attempt, **settings}
        solver = osqp.OSQP()
        solver.setup(P=P, q=q, A=A, l=l_all, u=u_all, **opts)
        if x0 is not None:
            solver.warm_start(x=x0)
        res = solver.solve()
        if str(res.info.status) == "solved":
            break
    status_text = str(res.info.status)
    polished = int(getattr(res.info, "status_polish", 0)) == 1
    if status_text == "solved":
        status = "optimal"
    elif "inaccurate" in status_text or "maximum iterations" in status_text:
        status = "inaccurate"
    else:
        status = "failed"
    x = res.x[:n] if res.x is not None else np.zeros(n)
    x = _qp.clean(problem, qp, np.nan_to_num(x))
    b = np.zeros(problem.n_classes)
    if n_eq and res.y is not None:
        offset = n + qp.S.shape[0]
        # OSQP's KKT: Px + q + Aᵀy = 0, so the free variables give b = U y_eq.
        b = problem.equality_basis @ res.y[offset : offset + n_eq]
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
