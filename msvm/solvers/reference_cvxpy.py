"""Reference solver: the full dual QP through cvxpy (Clarabel by default).

Any QP-capable solver installed for cvxpy can be selected with
``solver_options={"backend": "OSQP"}`` etc.  Clarabel, an interior-point
method, is run with tolerances far tighter than its defaults so that its
answer can serve as ground truth.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from msvm.diagnostics import diagnose
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import _qp

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"max_iter"})
STOPPING_RULE = None
#: ``solve`` takes no ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = False

CLARABEL_TOL = 1e-11


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          backend: str = "CLARABEL", polish: bool = True, **backend_options) -> DualSolution:
    """Solve ``problem`` exactly (to the backend's precision).

    Parameters
    ----------
    problem : DualProblem
    tol : float, optional
        Ignored unless given: overrides the backend tolerances (default 1e-11).
    max_iter : int, optional
        Iteration cap passed to the backend.
    warm_start : ignored
        Interior-point methods do not warm-start.
    verbose : bool
        Print the backend's log.
    backend : str
        cvxpy solver name (``"CLARABEL"``, ``"OSQP"``, ``"ECOS"``, ...).
    polish : bool
        Refine the answer on its active set (:func:`msvm.solvers._qp.polish`),
        which puts variables exactly on their bounds.
    **backend_options
        Passed to ``cvxpy.Problem.solve``.
    """
    import cvxpy as cp

    _qp.check_options(tol, max_iter)
    start = time.perf_counter()
    qp = _qp.build(problem)
    x = cp.Variable(qp.n)
    u = cp.Variable(qp.W.shape[0])
    constraints = [x >= 0, u == qp.W @ x]
    if qp.S.shape[0]:
        constraints.append(qp.S @ x <= qp.cap)
    equality = None
    if qp.E.shape[0]:
        equality = qp.E @ x == 0
        constraints.append(equality)
    # ½ Σ_r u_rᵀ K u_r as ½‖(I ⊗ Lᵀ) u‖², plus the M-SVM² shift ½ Σ shift_i u_i².
    assert qp.L is not None  # build() factors K
    factor = sp.block_diag([sp.csr_matrix(qp.L.T)] * qp.n_blocks, format="csr")
    quadratic = 0.5 * cp.sum_squares(factor @ u)
    if np.any(qp.shift):
        quadratic = quadratic + 0.5 * cp.sum_squares(cp.multiply(np.sqrt(qp.shift_u), u))
    objective = cp.Minimize(quadratic - qp.targets @ x)
    prob = cp.Problem(objective, constraints)
    options = dict(backend_options)
    if backend.upper() == "CLARABEL":
        eps = CLARABEL_TOL if tol is None else tol
        options.setdefault("tol_gap_abs", eps)
        options.setdefault("tol_gap_rel", eps)
        options.setdefault("tol_feas", eps)
        options.setdefault("tol_ktratio", 1e-8)
        if max_iter is not None:
            options.setdefault("max_iter", int(max_iter))
    try:
        with warnings.catch_warnings():
            # "Solution may be inaccurate" is reported as status 'inaccurate' below.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            prob.solve(solver=backend.upper(), verbose=verbose, **options)
    except cp.error.SolverError as exc:
        return DualSolution(alpha=problem.zeros(), b=np.zeros(problem.n_classes),
                            status="failed", time=time.perf_counter() - start,
                            solver=f"cvxpy-{backend.lower()}", info={"error": str(exc)})
    status = {"optimal": "optimal", "optimal_inaccurate": "inaccurate"}.get(prob.status, "failed")
    values = np.zeros(qp.n) if x.value is None else _qp.clean(problem, qp, x.value)
    lam = None
    if status != "failed":
        if polish:
            values, lam, residual = _qp.polish(problem, qp, values)
        else:
            residual = diagnose(problem, qp.to_alpha(problem, values)).kkt_residual
        # Certified by KKT, whatever the backend's own verdict; its "optimal" meets its
        # absolute tolerances, which a tiny C (α ≈ 1e-8) makes coarse, not this problem's.
        if residual <= _qp.CERTIFIED_RESIDUAL:
            status = "optimal"
        elif residual > _qp.USABLE_RESIDUAL:
            status = "inaccurate"
    if lam is None and equality is not None and equality.dual_value is not None:
        lam = np.atleast_1d(equality.dual_value)  # cvxpy's Lagrangian is f + λᵀ(Eα)
    b = np.zeros(problem.n_classes) if lam is None or not problem.fit_intercept else (
        problem.equality_basis @ lam)
    stats = prob.solver_stats
    return DualSolution(
        alpha=qp.to_alpha(problem, values),
        b=b,
        status=status,
        n_iter=int(stats.num_iters or 0) if stats is not None else 0,
        time=time.perf_counter() - start,
        n_kernel_evaluations=qp.n_kernel_evaluations,
        solver=f"cvxpy-{backend.lower()}",
        info={"backend_status": prob.status, "polished": lam is not None and polish},
    )
