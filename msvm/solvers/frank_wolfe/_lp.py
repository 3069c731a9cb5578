"""The linear subproblem of Frank–Wolfe with a bias: the vertex s and the multipliers λ.

Each Frank–Wolfe iteration needs s = argmin_{s ∈ 𝒫} ∇J(α)ᵀs over the
polytope of the working set's variables.  Without a bias it is a vertex in
closed form (:func:`msvm._core._frank_wolfe.linear_minimizer`: in each
slack group, C on the slot of most negative gradient).  With a bias the
equality rows A s = A α couple every variable, and the vertex comes from
a linear program solved by HiGHS's dual simplex -- the solver behind
``scipy.optimize.linprog`` -- called through ``highspy``: only the cost
vector changes between iterations, and HiGHS then restarts from the previous
optimal basis (a few pivots instead of a solve from scratch, which
``linprog`` cannot do).  The LP's dual values λ of the equality rows give the
bias b = −Uλ and the multiplier of the driver's gap bound.

:class:`LinearProblem` is built once per working set (and once over every
variable for the exact gap); :func:`quiet_highs` silences HiGHS's banner.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import scipy.sparse as sp


class LinearProblem:
    """min cᵀs over one set of examples' polytope with the bias rows, by HiGHS.

    Columns: the active slots (flattened); bounds [0, cap_i]; rows: Σ s ≤ cap_i
    for every slack group shared by several slots, then the equality rows
    A s = rhs.  The model is built once; :meth:`solve` only changes the costs
    (and :meth:`set_cap` the bounds), so HiGHS restarts from the last basis.
    """

    def __init__(self, nuU: np.ndarray, active: np.ndarray, group: np.ndarray, cap: np.ndarray,
                 rhs: np.ndarray):
        import highspy

        n_rows_B, P = active.shape
        self.act = np.flatnonzero(active.ravel())
        n = len(self.act)
        A_eq = nuU.reshape(-1, nuU.shape[2])[self.act].T  # (r, n)
        # Slack groups shared by several slots (max-loss) become rows Σ s ≤ cap.
        key = (self.act // P) * P + group.ravel()[self.act]
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        shared = np.flatnonzero(counts[inverse] > 1)
        group_rows = np.unique(inverse[shared], return_inverse=True)[1]
        n_groups = int(group_rows.max()) + 1 if len(shared) else 0
        # Each column's and each group row's example, whose capacity cap_i bounds them.
        self.col_example = self.act // P
        self.row_example = np.zeros(n_groups, dtype=np.intp)
        self.row_example[group_rows] = self.col_example[shared]
        A_ub = sp.csc_matrix((np.ones(len(shared)), (group_rows, shared)), shape=(n_groups, n))
        A = sp.vstack([A_ub, sp.csc_matrix(A_eq)], format="csc")
        A.eliminate_zeros()
        self.n_groups = n_groups
        self.n_eq = A_eq.shape[0]
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = A.shape[0]
        lp.col_cost_ = np.zeros(n)
        lp.col_lower_ = np.zeros(n)
        cap = np.asarray(cap, dtype=np.float64)
        lp.col_upper_ = cap[self.col_example]
        lp.row_lower_ = np.concatenate([np.full(n_groups, -inf), rhs])
        lp.row_upper_ = np.concatenate([cap[self.row_example], rhs])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr
        lp.a_matrix_.index_ = A.indices
        lp.a_matrix_.value_ = A.data
        self.highs = quiet_highs()
        # The defaults (1e-7) would leave the equality rows at 1e-7.
        self.highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("simplex_strategy", 1)  # dual simplex
        self.highs.passModel(lp)
        self.cols = np.arange(n, dtype=np.int32)
        self.A_eq = A_eq
        self.rhs = rhs
        self.cap = cap.copy()
        self.n_solves = 0

    def set_cap(self, cap: np.ndarray):
        """New capacities (n_B,) of the examples (the M-SVM²'s widened box)."""
        n = len(self.act)
        cap = np.asarray(cap, dtype=np.float64)
        self.highs.changeColsBounds(n, self.cols, np.zeros(n), cap[self.col_example])
        if self.n_groups:
            rows = np.arange(self.n_groups, dtype=np.int32)
            self.highs.changeRowsBounds(self.n_groups, rows, np.full(self.n_groups, -np.inf),
                                        cap[self.row_example])
        self.cap = cap.copy()

    def solve(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(vertex x, multipliers λ of the equality rows, cᵀx) for the costs c."""
        import highspy

        self.highs.changeColsCost(len(c), self.cols, c)
        self.n_solves += 1
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # Rare numerical trouble of the warm basis, or of HiGHS's presolve, which at
            # these feasibility tolerances has called a feasible LP (s = α is feasible)
            # infeasible when the optimal vertex makes the equality row tight with every
            # column at a bound (class_weight='balanced' with one example against 400:
            # the lone example's capacity equals the other class's total): solve from
            # scratch without presolve.
            self.highs.clearSolver()
            self.highs.setOptionValue("presolve", "off")
            self.highs.run()
            status = self.highs.getModelStatus()
            if status != highspy.HighsModelStatus.kOptimal:
                raise RuntimeError("HiGHS failed on the linear problem of a working set: "
                                   f"{self.highs.modelStatusToString(status)}")
        sol = self.highs.getSolution()
        x = self._clean(np.asarray(sol.col_value, dtype=float))
        lam = np.asarray(sol.row_dual, dtype=float)[self.n_groups:]
        return x, lam, float(np.dot(c, x))

    def _clean(self, x):
        """Snap a vertex onto its bounds and restore A x = rhs on its fractional part."""
        cap = self.cap[self.col_example]
        x = np.clip(x, 0.0, cap)
        x[x < 1e-9 * cap] = 0.0
        top = x > (1 - 1e-9) * cap
        x[top] = cap[top]
        frac = np.flatnonzero((x > 0) & (x < cap))
        residual = self.rhs - self.A_eq @ x
        if len(frac) and np.any(residual):
            x[frac] += np.linalg.lstsq(self.A_eq[:, frac], residual, rcond=None)[0]
        return x


def quiet_highs():
    """A ``highspy.Highs`` with its output off.

    Its constructor prints a banner on the process's stdout (file descriptor 1,
    from C++, once per process) before any option can be set, so descriptor 1
    is pointed at the null device while it runs.
    """
    import ctypes

    import highspy

    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        if os.name == "posix":
            ctypes.CDLL(None).fflush(None)  # the banner may sit in C's stdout buffer
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    return highs
