r"""Why a decomposition solver crawls, and how an exact face solve ends it.

Near its end a decomposition solver (SMO, S2DO) is coordinate descent on the
*face* of the box it has reached: the variables strictly between 0 and C
move, the others stay at their bounds.  On that face the dual is the
quadratic ½ α_Fᵀ H_F α_F − g_Fᵀ α_F of the free variables F, with H_F the
Hessian restricted to them, H_{(i,p),(j,q)} = k'(x_i, x_j) ⟨ν̄_{y_i,p}, ν̄_{y_j,q}⟩.
Two things make coordinate steps slow there:

* **a badly conditioned face.**  One sweep of coordinate descent on a
  quadratic shrinks the error by a factor of about 1 − 1/κ, κ the condition
  number of the Jacobi-scaled H_F (D^{-1/2} H_F D^{-1/2}, D its diagonal:
  what a step on one or two variables sees), so it needs about κ sweeps per
  digit;
* **a singular face.**  With a kernel of rank r, H_F has rank at most
  r·(Q − 1) for the sum-to-zero machines (β̄ lives in a space of Q − 1
  dimensions), whatever the number of free variables.  With more free
  variables than that, the objective is *linear* along the null space of
  H_F: the solution lies where that line leaves the box, and steps that see
  only the curvature of the other directions zig-zag towards it.

A dense solve of the face (the primal active-set method of
:func:`msvm.solvers._qp.finish`) follows the null direction to the bound in
one step and solves a badly conditioned face exactly.

:func:`face_report` measures a face: free variables, rank and condition
number of the scaled H_F.  :func:`faces_along_s2do` takes S2DO's point after
a number of passes and reports its face; :func:`finish_runs` runs S2DO
without and with the active-set finish and keeps their traces.
"""

from __future__ import annotations

import warnings

import numpy as np

from msvm._numbers import is_integer

__all__ = ["face_report", "faces_along_s2do", "finish_runs"]

#: Eigenvalues of the scaled face Hessian below this fraction of the largest count as zero.
RANK_RTOL = 1e-10


def _problem(X, y, model: str, C: float, kernel: str, gamma):
    """The bias-free dual of ``model`` on (X, y), as :class:`msvm.MultiClassSVC` builds it."""
    from msvm import MultiClassSVC

    return MultiClassSVC(model=model, C=C, kernel=kernel, gamma=gamma).prepare_fit(X, y).problem


def face_report(problem, alpha: np.ndarray, zero_tol: float = 0.0) -> dict:
    """The face of the box that ``alpha`` lies on, and its Hessian.

    Parameters
    ----------
    problem : msvm.problem.DualProblem
        A machine whose every slack group is a single variable (WW, LLW, ATS,
        OvA, MMR) or with the quadratic loss (M-SVM²): its face is a box face.
    alpha : ndarray of shape (m, P)
        A feasible point.
    zero_tol : float, default=0.0
        A variable within ``zero_tol``·C of a bound counts as at the bound (an
        interior-point answer is never exactly on one).

    Returns
    -------
    dict
        ``n_variables``; ``n_free`` (strictly inside the box); ``n_at_bound``;
        ``rank`` of the face Hessian H_F; ``kernel_rank`` (of the Gram
        matrix); ``condition``, the ratio of the largest to the smallest
        non-zero eigenvalue of D^{-1/2} H_F D^{-1/2} (1 for an empty face).

    Raises
    ------
    ValueError
        If the machine shares slacks, ``alpha`` is not a finite array of the
        problem's shape, or ``zero_tol`` is not in [0, 0.5).

    Examples
    --------
    >>> from msvm import MultiClassSVC
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import face_report, multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="llw", C=100.0, kernel="linear").prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> report = face_report(problem, alpha, zero_tol=1e-6)
    >>> report["n_variables"], report["n_free"], report["rank"], report["kernel_rank"]
    (60, 4, 4, 2)
    >>> round(report["condition"])
    185
    """
    if problem.machine.max_loss:
        raise ValueError("face_report needs slack groups of single variables; "
                         f"{problem.machine.name!r} shares a slack among several.")
    # A wrong shape was an IndexError, NaN counted as "at a bound" and a negative
    # zero_tol made every variable, those at 0 included, "free": silent wrong faces.
    shape = problem.zeros().shape
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.shape != shape:
        raise ValueError(f"alpha must have the problem's shape {shape}; got {alpha.shape}.")
    if not np.all(np.isfinite(alpha)):
        raise ValueError("alpha contains NaN or infinite values.")
    if not (np.isfinite(zero_tol) and 0.0 <= zero_tol < 0.5):
        raise ValueError(f"zero_tol must be a number in [0, 0.5), got {zero_tol!r}.")
    ii, pp = problem.flat_index()
    a = alpha[ii, pp]
    upper = (problem.capacity[ii] if problem.machine.loss == "hinge"
             else np.full(len(ii), np.inf))
    margin = zero_tol * problem.C
    free = (a > margin) & (a < upper - margin)
    fi, fp = ii[free], pp[free]
    K = problem.kernel.gram()
    shifted = K + np.diag(problem.kernel_shift)
    nu = problem.nu[problem.y[fi], fp]                 # (n_F, Q): the ν̄ of each variable
    H = (nu @ nu.T) * shifted[np.ix_(fi, fi)]
    if len(fi):
        d = np.sqrt(np.diagonal(H))
        eig = np.linalg.eigvalsh(H / d[:, None] / d[None, :])
        nonzero = eig[eig > RANK_RTOL * eig.max()]
        rank, condition = len(nonzero), float(nonzero.max() / nonzero.min())
    else:
        rank, condition = 0, 1.0
    return {"n_variables": len(ii), "n_free": int(free.sum()),
            "n_at_bound": int((~free & (a > margin)).sum()), "rank": rank,
            "kernel_rank": int(np.linalg.matrix_rank(K)), "condition": condition}


def faces_along_s2do(X, y, model: str = "llw", C: float = 100.0, kernel: str = "linear", *,
                     gamma="scale", passes=(100, 1_000, 10_000, 100_000),
                     tol: float = 1e-6) -> list[dict]:
    """The face S2DO (without the finish) stands on after each number of ``passes``,
    and the exact optimum's (the cvxpy reference, variables within 1e-8·C of a bound
    counted at it).

    Returns
    -------
    list of dict
        One record per point: ``point`` ("S2DO, N passes" or "optimum"),
        ``passes``, the keys of :func:`face_report`, ``kkt_violation`` (the
        solver's largest) and ``dual``.
    """
    from msvm.diagnostics import diagnose
    from msvm.solvers import get_solver, s2do

    # An int was "'int' object is not iterable"; 0 or -1 a message about max_iter.
    if isinstance(passes, str) or not np.iterable(passes):
        raise ValueError(f"passes must be a sequence of positive integers, got {passes!r}.")
    passes = tuple(passes)
    if not all(is_integer(n) and n >= 1 for n in passes):
        raise ValueError(f"passes must be a sequence of positive integers, got {passes!r}.")
    problem = _problem(X, y, model, C, kernel, gamma)
    records = []
    for n in passes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # max_iter reached: the point is what we want
            solution = s2do.solve(problem, tol=tol, max_iter=n, finish=False)
        records.append({"point": f"S2DO, {solution.n_iter} passes", "passes": solution.n_iter,
                        **face_report(problem, solution.alpha),
                        "kkt_violation": solution.info["max_violation"],
                        "dual": diagnose(problem, solution).dual_objective})
    exact = get_solver("cvxpy").solve(problem)
    found = diagnose(problem, exact)
    records.append({"point": "optimum", "passes": None,
                    **face_report(problem, exact.alpha, zero_tol=1e-8),
                    "kkt_violation": found.kkt_violation, "dual": found.dual_objective})
    return records


def finish_runs(X, y, model: str = "llw", C: float = 100.0, kernel: str = "linear", *,
                gamma="scale", tol: float = 1e-6, trace: float = 0.002) -> list[dict]:
    """S2DO without and with the active-set finish, to ``tol``.

    Returns
    -------
    list of dict
        Two records (``method`` "S2DO" and "S2DO + finish"): ``status``,
        ``passes``, ``handover`` (the pass after which the finish takes over,
        :func:`msvm.solvers._qp.finish_after`), ``finish_time``, ``time``,
        ``dual`` and ``relative_error`` against the cvxpy reference's dual,
        and ``trace``: (passes, largest KKT violation) about every ``trace``
        seconds.
    """
    from msvm.diagnostics import diagnose
    from msvm.solvers import _qp, get_solver, s2do

    problem = _problem(X, y, model, C, kernel, gamma)
    d_star = diagnose(problem, get_solver("cvxpy").solve(problem)).dual_objective
    handover = _qp.finish_after(problem, s2do.FINISH_AFTER)
    records = []
    for method, finish in (("S2DO", False), ("S2DO + finish", True)):
        solution = s2do.solve(problem, tol=tol, finish=finish, trace=trace)
        dual = diagnose(problem, solution).dual_objective
        records.append({"method": method, "status": solution.status,
                        "passes": solution.n_iter, "handover": handover,
                        "finish_time": solution.info["finish_time"], "time": solution.time,
                        "dual": dual, "relative_error": abs(dual - d_star) / abs(d_star),
                        "trace": [(int(n), float(v)) for _, _, v, n in solution.info["trace"]]})
    return records
