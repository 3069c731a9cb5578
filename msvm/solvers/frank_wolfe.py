"""Frank–Wolfe solver with decomposition, for every machine, with or without bias.

The algorithm (seed 000 §5, generalised to the unified dual of DESIGN.md §2)
-------------------------------------------------------------------------
Minimise J(α) = ½ αᵀHα − γᵀα over the polytope 𝒫 of the machine: α ≥ 0,
Σ_{p in slack group r} α_ip ≤ C (a box per variable for sum-loss machines, a
capped simplex per example for max-loss ones) and, with a bias, the equality
constraints Σ_{i,p} ν̄_{y_i,p,c} α_ip = 0 (r = rank independent rows
A = Uᵀν̄, see :meth:`msvm.problem.DualProblem.equality_matrix`).

Every iteration

1. solves the linear problem s = argmin_{s ∈ 𝒫} ∇J(α)ᵀs.  Without bias its
   solution is a vertex in closed form (:func:`~msvm._core._frank_wolfe.
   linear_minimizer`: in each slack group, C on the slot of most negative
   gradient).  With bias the equality constraints couple every variable and
   the vertex comes from HiGHS's dual simplex, the solver behind
   ``scipy.optimize.linprog``, called through ``highspy`` because only the
   cost vector changes between iterations and HiGHS then restarts from the
   previous optimal basis (a few pivots instead of a solve from scratch,
   which ``linprog`` cannot do).  Its dual values λ of the equality rows
   give the bias b = −Uλ;
2. takes the step of the chosen variant (``fw_variant``) with the exact line
   search of seed 000 §5.2, θ = clip(−∇Jᵀd / dᵀHd, 0, θ_max)
   (:func:`~msvm._core._frank_wolfe.line_search_step`, nogil):

   * ``'classic'``: d = s − α, θ_max = 1 (seed 000);
   * ``'away'``: the classic step or the away step d = α − v from the worst
     vertex v of the current convex decomposition of α, whichever is
     steeper (Lacoste-Julien & Jaggi, 2015), θ_max = w_v / (1 − w_v);
   * ``'pairwise'``: d = s − v, θ_max = w_v (mass moves from v to s).

   The away and pairwise variants keep α as a convex combination Σ w_a v_a
   of *atoms* (the vertices met so far, plus the point where the atoms were
   last reset, which is feasible but not a vertex);
3. stops when the Frank–Wolfe gap ∇J(α)ᵀ(α − s) ≥ J(α) − J* is at most
   ``tol`` · |J(α)|.

In-face steps (``face_steps=True``, the default).  Vertex steps alone
converge slowly when the optimum lies inside a face of high dimension (many
free variables: the M-SVM², whose α are all positive, or any machine at a
large C).  So before each vertex step the solver minimises J over the
affine hull of the face of 𝒫 that contains α: the variables at a bound are
fixed, the free ones keep the bias rows and the sums of their full slack
groups.  The *face phase* (:meth:`_Block.face_phase`) runs projected
conjugate gradients on that face (at most ``_CG_MAX`` products with H_FF,
the projection subtracting group means and the bias rows' component), or
one equality-constrained Newton step [H_FF Eᵀ; E 0] (a dense symmetric
solve, LAPACK, faces of at most ``_FACE_MAX`` free variables) — Newton
first for the M-SVM² (strongly convex), CG first for the hinge machines.
Every step is cut by the ratio test where the first free variable meets a
bound, which makes the face smaller; at most ``_FACE_CHAIN`` face steps
follow each other.  These are the in-face directions of Freund, Grigas &
Mazumder (2017) with exact minimisation over the face; a vertex step is
still needed to leave a face, and the Frank–Wolfe gap remains the
certificate.  The atoms of the away/pairwise variants restart from α after
each face phase.

Decomposition (seed 000 §5.3)
-----------------------------
With ``working_set_size`` = N_B < m the iterations run on the variables of
N_B examples B, the others H fixed.  For each split:

* the scores F = K'β̄ of all points are kept, so the gradient of B,
  H_BB α_B + H_BH α_H − γ_B, is read from F once (that is the single
  product H_BH α_H per split of the seed);
* K_BB and the rows K_B· come from the Gram-row LRU cache;
* the equality constraints are restricted to B, A_B s = A_B α_B, so every
  iterate stays feasible for the whole problem;
* after the inner iterations F += K_·B Δβ_B (one product of the cached
  rows with the change of B's coefficients).

Certificate and choice of B.  For any multiplier λ of the equality rows,
Σ_i max_{s_i} G_iᵀ(α_i − s_i) with G = ∇J − Aᵀλ (a box / simplex problem per
example, closed form) is an upper bound of the Frank–Wolfe gap of the whole
problem (weak LP duality), and equals it at the λ of the linear problem over
all variables.  The driver evaluates it with the best λ at hand (the last
working set's LP, the least-squares KKT estimate from the free variables,
and every ``full_lp_every`` splits, or before declaring convergence, the
full LP itself, hot-started), stops when it is below ``tol`` · |J|, and
otherwise takes as B the N_B examples with the largest shares
G_iᵀ(α_i − s_i): each share is zero exactly when the example meets its KKT
conditions for that b, so this is selection by KKT violation in the units of
the gap.  Without bias λ is empty and the bound is the exact gap.  When a
split leaves α unchanged (B's own equality rows pin it) half of B is drawn
at random on the next split.  With a bias, one λ for all examples can rank
first examples whose own sub-problem is already solved on its face (its
best λ differs): after three splits in a row that needed no vertex step,
N_B doubles (up to m; ``info['working_set_size']`` is the final size).

The M-SVM² (quadratic slack penalty)
------------------------------------
Its dual is the hard-margin LLW dual on k' = k + δ_ij/(2C) (the diagonal
shift enters every curvature and gradient update through ``shift``): α ≥ 0
without upper bound, so 𝒫 is a cone and the linear problem is unbounded.
The solver works in the box 0 ≤ α ≤ U, U = 4C at first, and doubles U
as soon as the box binds (a variable at U whose gradient, shifted by Aᵀλ,
pushes it further); since J is strongly convex for the M-SVM², the box
optimum is the true one as soon as no variable is held at U, and the
Frank–Wolfe gap in that box then bounds J − J*.

Bias and slacks
---------------
``DualSolution.b`` is b from the KKT conditions of the free variables,
least squares over all of them (:func:`msvm.diagnostics.bias_from_kkt`,
seed 000 (5)); ``info['b_lp']`` is −Uλ from the dual values of the equality
rows of the final linear problem over *all* variables (``final_lp=True``),
which also gives the exact final Frank–Wolfe gap (``info['fw_gap']``);
``info['b_lp_diff']`` is ‖b − b_lp‖∞.  The slacks ξ follow from (w, b) by
seed 000 (6) in :func:`msvm.diagnostics.diagnose`.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
import scipy.linalg

from msvm._core._frank_wolfe import line_search_step, linear_minimizer, local_pairwise
from msvm._progress import SolverProgress
from msvm.diagnostics import bias_from_kkt, repair_equality
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import STALL_SECONDS, StallWatch, check_tol, default_max_iter
from msvm.solvers.s2do import _blas_threads, _start

__all__ = ["solve", "VARIANTS"]

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "cache_size"})
STOPPING_RULE = "fw_gap"

#: Step variants accepted by ``fw_variant``.
VARIANTS = ("classic", "away", "pairwise")

# Variables within SNAP·cap of a bound are put on it (LP round-off, drop steps).
_SNAP = 1e-11
# In-face steps are skipped on faces with more free variables than this
# (one dense solve of that size costs about a second).
_FACE_MAX = 3000
# At most this many in-face steps in a row, each on a smaller face than the last.
_FACE_CHAIN = 50
_CG_MAX = 100
_NEWTON_MIN = 1e-2


# ----------------------------------------------------------- linear problems
class _LinearProblem:
    """min cᵀs over one set of examples' polytope with the bias rows, by HiGHS.

    Columns: the active slots (flattened); bounds [0, cap]; rows: Σ s ≤ cap
    for every slack group shared by several slots, then the equality rows
    A s = rhs.  The model is built once; :meth:`solve` only changes the costs
    (and :meth:`set_cap` the bounds), so HiGHS restarts from the last basis.
    """

    def __init__(self, nuU: np.ndarray, active: np.ndarray, group: np.ndarray, cap: float,
                 rhs: np.ndarray):
        import highspy
        import scipy.sparse as sp

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
        lp.col_upper_ = np.full(n, cap)
        lp.row_lower_ = np.concatenate([np.full(n_groups, -inf), rhs])
        lp.row_upper_ = np.concatenate([np.full(n_groups, cap), rhs])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr
        lp.a_matrix_.index_ = A.indices
        lp.a_matrix_.value_ = A.data
        self.highs = _quiet_highs()
        # The defaults (1e-7) would leave the equality rows at 1e-7.
        self.highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("simplex_strategy", 1)  # dual simplex
        self.highs.passModel(lp)
        self.cols = np.arange(n, dtype=np.int32)
        self.A_eq = A_eq
        self.rhs = rhs
        self.cap = cap
        self.n_solves = 0

    def set_cap(self, cap: float):
        n = len(self.act)
        self.highs.changeColsBounds(n, self.cols, np.zeros(n), np.full(n, cap))
        if self.n_groups:
            rows = np.arange(self.n_groups, dtype=np.int32)
            self.highs.changeRowsBounds(self.n_groups, rows, np.full(self.n_groups, -np.inf),
                                        np.full(self.n_groups, cap))
        self.cap = cap

    def solve(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(vertex x, multipliers λ of the equality rows, cᵀx) for the costs c."""
        import highspy

        self.highs.changeColsCost(len(c), self.cols, c)
        self.n_solves += 1
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # Rare numerical trouble of the warm basis: solve from scratch.
            self.highs.clearSolver()
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
        cap = self.cap
        x = np.clip(x, 0.0, cap)
        x[x < 1e-9 * cap] = 0.0
        x[x > (1 - 1e-9) * cap] = cap
        frac = np.flatnonzero((x > 0) & (x < cap))
        residual = self.rhs - self.A_eq @ x
        if len(frac) and np.any(residual):
            x[frac] += np.linalg.lstsq(self.A_eq[:, frac], residual, rcond=None)[0]
        return x


# ---------------------------------------------------------------- the block
class _Block:
    """The working set B: its data in the layout of :mod:`msvm._core._frank_wolfe`.

    ``alpha`` and ``g`` are copies, updated in place by the steps and written
    back by the driver.  :meth:`vertex` is the linear minimisation oracle of B
    (closed form, or HiGHS with the equality rows restricted to B).
    """

    def __init__(self, solver: _Solver, B: np.ndarray, K_BB: np.ndarray):
        self.B = B
        self.alpha = np.ascontiguousarray(solver.alpha[B])
        self.g = np.ascontiguousarray(solver.g[B])
        self.nu = np.ascontiguousarray(solver.nu[B])
        self.K = np.ascontiguousarray(K_BB)
        self.group = np.ascontiguousarray(solver.group[B])
        self.targets = solver.targets[B]
        self.active = np.ascontiguousarray(solver.active[B])
        self.cap = solver.cap
        self.squared = solver.squared
        self.shift = solver.shift
        self.bias = solver.bias
        self.nuU = solver.nuU[B] if self.bias else None
        n, Q = len(B), solver.Q
        self.dbeta = np.zeros((n, Q))
        self.u = np.zeros((n, Q))
        self.stats = np.zeros(3)
        self.s = np.zeros_like(self.alpha)
        self.gaps = np.zeros(n)
        self.lam = solver.lam
        self.lp = None
        if self.bias:
            rhs = np.einsum("ipr,ip->r", self.nuU, self.alpha)
            self.lp = _LinearProblem(self.nuU, self.active, self.group, self.cap, rhs)
        self._face = _Face(self)
        self.n_face_steps = 0

    @property
    def n_lp(self) -> int:
        return 0 if self.lp is None else self.lp.n_solves

    def vertex(self) -> float:
        """s = argmin over B's polytope of gᵀs (into ``self.s``); returns the gap gᵀ(α − s)."""
        if not self.bias:
            total = linear_minimizer(self.g, self.alpha, self.group, self.active, self.cap,
                                     self.s, self.gaps)
            return float(np.dot(self.g.ravel(), self.alpha.ravel()) - total)
        act = self.lp.act
        c = self.g.ravel()[act]
        x, self.lam, value = self.lp.solve(c)
        s = self.s.ravel()
        s[:] = 0.0
        s[act] = x
        return float(np.dot(c, self.alpha.ravel()[act])) - value

    def box_binds(self) -> bool:
        """Whether a variable sits at the M-SVM² box bound and the gradient pushes it up."""
        G = self.g if not self.bias else self.g - self.nuU @ self.lam
        return bool(np.any((self.alpha >= (1.0 - 1e-9) * self.cap) & (G < 0) & (self.active > 0)))

    def objective(self) -> float:
        """J(α) when B is every example: ½ αᵀ(g − γ)."""
        return 0.5 * float(np.sum(self.alpha * (self.g - self.targets)))

    def step(self, d: np.ndarray, theta_max: float) -> float:
        theta = line_search_step(self.alpha, self.g, d, self.K, self.nu, self.shift,
                                 float(theta_max), self.dbeta, self.u, self.stats)
        if theta > 0.0:
            a = self.alpha
            a[np.abs(a) < _SNAP * self.cap] = 0.0
        return theta

    def newton_step(self) -> tuple[str, int]:
        """One Newton step on the face of α (module docstring).

        Returns (state, steps): ``'converged'`` (the face's minimiser was
        reached), ``'bound'`` (the ratio test cut the step: a variable met a
        bound and the face is smaller) or ``'failed'`` (no step taken: a
        singular face, or a step the ratio test would cut below
        ``_NEWTON_MIN`` of its length).
        """
        d, theta_max = self._face.direction()
        if d is None or theta_max < _NEWTON_MIN:
            return "failed", 0
        self.n_face_steps += 1
        # θ = 1 is the face's minimiser; a longer step would only follow round-off
        # (a nearly flat direction the solve did not flag as singular).
        theta = self.step(d, min(theta_max, 1.0))
        return ("bound" if theta >= theta_max and theta_max < 1.0 else "converged"), 1

    def cg_phase(self, max_iter: int) -> tuple[str, int]:
        """Conjugate gradients on the face of α, each step an exact line search.

        Returns (state, steps): ``'converged'`` (projected gradient at
        round-off level), ``'bound'`` (a step was cut by the ratio test: the
        face has changed) or ``'budget'`` (``max_iter`` steps taken).
        """
        face = self._face
        x, sums, full, free = face._classify()
        F = np.flatnonzero(free)
        if len(F) == 0:
            return "converged", 0
        idx = face.act[F]
        project = face.projector(F, full)
        gF = self.g.ravel()[idx]
        r = project(gF)
        rr = float(r @ r)
        # Converged when the projected gradient is round-off: relative to itself at
        # the start, or to the gradient (a projection of a vector cancels to ~1e-16 of it).
        tiny = max(1e-24 * rr, 1e-26 * float(gF @ gF), 1e-300)
        p = -r
        d = np.zeros(self.alpha.size)
        for k in range(max_iter):
            if rr <= tiny:
                return "converged", k
            x = self.alpha.ravel()[face.act]
            sums = np.bincount(face.grp, weights=x, minlength=face.n_grp)
            theta_max = face.ratio(x, sums, full, F, p)
            d[idx] = p
            theta = self.step(d.reshape(self.alpha.shape), theta_max)
            self.n_face_steps += 1
            if theta <= 0.0:
                return "converged", k + 1
            if theta >= theta_max:
                return "bound", k + 1
            r = project(self.g.ravel()[idx])
            rr_new = float(r @ r)
            # Re-projected: round-off outside the face's directions would grow with β.
            p = project(-r + (rr_new / rr) * p)
            rr = rr_new
        return "budget", max_iter

    def face_phase(self, max_steps: int) -> int:
        """Minimise over the face of α, then over the smaller faces the ratio test leads to.

        The M-SVM²'s faces are strongly convex (the diagonal 1/(2C)) and get
        Newton steps; the hinge-loss machines' faces are often singular or
        badly conditioned (low-rank or near-duplicate kernels), where a Newton
        step is useless or cut at once, and get conjugate gradients, with a
        Newton step when they stall.  Returns the number of steps taken.
        """
        steps = 0
        for _ in range(_FACE_CHAIN):
            if self.squared:
                state, taken = self.newton_step()
                if state == "failed":
                    state, more = self.cg_phase(_CG_MAX)
                    taken += more
            else:
                state, taken = self.cg_phase(_CG_MAX)
                if state == "budget":
                    state, more = self.newton_step()
                    taken += more
            steps += taken
            if state != "bound" or steps >= max_steps:
                break
        return steps


class _Face:
    """The minimal face of B's polytope containing α, and the Newton step on it."""

    def __init__(self, block: _Block):
        self.block = block
        n, P = block.alpha.shape
        act = np.flatnonzero(block.active.ravel())
        self.act = act
        self.example = act // P
        key = self.example * P + block.group.ravel()[act]
        _, self.grp, counts = np.unique(key, return_inverse=True, return_counts=True)
        self.n_grp = len(counts)
        self.shared = counts[self.grp] > 1  # the variable's slack group has several slots
        nu = block.nu.reshape(-1, block.nu.shape[2])[act]  # (n_act, Q)
        self.nu = nu
        self.nuU = None if block.nuU is None else block.nuU.reshape(-1, block.nuU.shape[2])[act]

    def _classify(self):
        b = self.block
        x = b.alpha.ravel()[self.act]
        cap = b.cap
        snap = _SNAP * cap
        sums = np.bincount(self.grp, weights=x, minlength=self.n_grp)
        full = sums >= cap - snap * 10
        at_zero = x <= snap
        at_cap = ~self.shared & (x >= cap - snap)
        if b.squared:
            full[:] = False
        free = ~at_zero & ~at_cap
        return x, sums, full, free

    def direction(self):
        """(d, θ_max): the Newton direction on the face and its largest feasible step."""
        b = self.block
        x, sums, full, free = self._classify()
        F = np.flatnonzero(free)
        nF = len(F)
        if nF == 0 or nF > _FACE_MAX:
            return None, 0.0
        ex = self.example[F]
        K = b.K[np.ix_(ex, ex)]
        if b.shift:
            K = K + b.shift * (ex[:, None] == ex[None, :])
        H = (self.nu[F] @ self.nu[F].T) * K
        rows = []
        if self.nuU is not None:
            rows.append(self.nuU[F].T)
        full_groups = np.flatnonzero(full)
        if len(full_groups):
            member = self.grp[F][None, :] == full_groups[:, None]
            rows.append(member[member.any(axis=1)].astype(float))
        E = np.vstack(rows) if rows else np.zeros((0, nF))
        g = b.g.ravel()[self.act[F]]
        dF = _newton_on_face(H, E, g)
        if dF is None or not np.any(dF):
            return None, 0.0
        theta_max = self.ratio(x, sums, full, F, dF)
        d = np.zeros(b.alpha.size)
        d[self.act[F]] = dF
        return d.reshape(b.alpha.shape), theta_max

    def ratio(self, x, sums, full, F, dF) -> float:
        """Largest θ keeping α + θd in the polytope (d = dF on the free variables F)."""
        b = self.block
        theta_max = np.inf
        neg = dF < 0
        if np.any(neg):
            theta_max = min(theta_max, float(np.min(x[F][neg] / -dF[neg])))
        up = (dF > 0) if b.squared else (~self.shared[F] & (dF > 0))
        if np.any(up):
            theta_max = min(theta_max, float(np.min((b.cap - x[F][up]) / dF[up])))
        if not b.squared:
            dsum = np.bincount(self.grp[F], weights=dF * self.shared[F], minlength=self.n_grp)
            grow = (dsum > 0) & ~full
            if np.any(grow):
                theta_max = min(theta_max, float(np.min((b.cap - sums[grow]) / dsum[grow])))
        return max(theta_max, 0.0) if np.isfinite(theta_max) else 1.0

    def projector(self, F, full):
        """v ↦ the projection of v (on the free variables F) onto the face's directions.

        The directions keep the sums of full slack groups (rows of ones on
        disjoint variables: subtract the group mean) and the bias rows A_F
        (then P = P_G − Aᵀ(AAᵀ)⁺A with A = A_F P_G).
        """
        grp = self.grp[F]
        in_full = full[grp]
        counts = np.bincount(grp[in_full], minlength=self.n_grp)

        def project_groups(v):
            if not np.any(in_full):
                return v
            means = np.bincount(grp[in_full], weights=v[in_full], minlength=self.n_grp)
            out = v.copy()
            out[in_full] -= means[grp[in_full]] / counts[grp[in_full]]
            return out

        if self.nuU is None:
            return project_groups
        A = np.array([project_groups(row) for row in self.nuU[F].T])
        pinv = np.linalg.pinv(A @ A.T, rcond=1e-10)

        def project(v):
            v = project_groups(v)
            return v - A.T @ (pinv @ (A @ v))

        return project


def _newton_on_face(H: np.ndarray, E: np.ndarray, g: np.ndarray):
    """d minimising gᵀd + ½ dᵀHd subject to E d = 0, or None if that system is singular.

    One dense symmetric solve of the KKT system [[H, Eᵀ], [E, 0]] [d; μ] =
    [−g; 0].  A singular system (a low-rank kernel, dependent rows) has no
    Newton step worth taking: J is flat or unbounded along some directions of
    the face, and the caller takes conjugate-gradient steps instead.
    """
    nF, nE = H.shape[0], E.shape[0]
    kkt = np.zeros((nF + nE, nF + nE))
    kkt[:nF, :nF] = H
    kkt[:nF, nF:] = E.T
    kkt[nF:, :nF] = E
    rhs = np.concatenate([-g, np.zeros(nE)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            sol = scipy.linalg.solve(kkt, rhs, assume_a="sym", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning, ValueError):
        return None
    d = sol[:nF]
    return d if np.all(np.isfinite(d)) else None


# ------------------------------------------------------------------ atoms
class _Atoms:
    """α as a convex combination Σ w_a v_a of atoms (away / pairwise variants)."""

    def __init__(self, start: np.ndarray):
        self.V = start.reshape(1, -1).copy()
        self.w = np.ones(1)
        self.keys = {start.tobytes(): 0}

    @property
    def n(self) -> int:
        return len(self.w)

    def values(self, g: np.ndarray) -> np.ndarray:
        return self.V @ g.ravel()

    def add(self, s: np.ndarray) -> int:
        key = s.tobytes()
        if key in self.keys:
            return self.keys[key]
        self.V = np.vstack([self.V, s.reshape(1, -1)])
        self.w = np.append(self.w, 0.0)
        self.keys[key] = len(self.w) - 1
        return len(self.w) - 1

    def drop_zeros(self):
        keep = self.w > 1e-15
        if not np.all(keep):
            self.V = self.V[keep]
            self.w = self.w[keep] / self.w[keep].sum()
            self.keys = {v.tobytes(): k for k, v in enumerate(self.V)}


def _inner(block: _Block, variant: str, lazy: bool, face_steps: bool, target: float,
           max_steps: int, record=None, rel_tol: float | None = None) -> tuple[int, float]:
    """Frank–Wolfe iterations on one working set; returns (steps, number of vertex steps).

    Stops when the working set's gap is at most ``target``, or, with
    ``rel_tol`` (the working set is the whole problem), at most
    ``rel_tol`` · |J(α)| for the current α; also when the M-SVM² box binds
    (the driver widens it).
    """
    atoms = None if variant == "classic" else _Atoms(block.alpha)
    shape = block.alpha.shape
    gap = np.inf
    steps = n_vertex_steps = 0
    while steps < max_steps:
        if face_steps:
            steps += block.face_phase(max_steps - steps)
            if atoms is not None:
                atoms = _Atoms(block.alpha)
        elif atoms is not None and lazy and np.isfinite(gap) and atoms.n > 1:
            # Local pairwise steps among the atoms: no linear problem to solve.
            local_cap = min(max_steps - steps, 2 * atoms.n + 20)
            steps += local_pairwise(atoms.V, atoms.w, block.alpha, block.g, block.K, block.nu,
                                    block.shift, 0.5 * gap, local_cap, block.dbeta,
                                    block.u, block.stats)
            atoms.drop_zeros()
        gap = block.vertex()
        if record is not None:
            record(block, gap)
        if rel_tol is not None:
            target = rel_tol * abs(block.objective())
        if gap <= target or (block.squared and block.box_binds()):
            break  # (a binding M-SVM² box is widened by the driver)
        s = block.s
        steps += 1
        n_vertex_steps += 1
        if variant == "classic":
            block.step(s - block.alpha, 1.0)
            continue
        vals = atoms.values(block.g)
        hi = int(np.argmax(np.where(atoms.w > 0, vals, -np.inf)))
        v = atoms.V[hi].reshape(shape)
        w_v = atoms.w[hi]
        if variant == "pairwise":
            k = atoms.add(s)
            if k == hi:  # s is already the worst atom: only a classic step can help
                theta = block.step(s - block.alpha, 1.0)
                atoms.w *= 1.0 - theta
                atoms.w[k] += theta
            else:
                theta = block.step(s - v, w_v)
                atoms.w[k] += theta
                atoms.w[hi] = 0.0 if theta >= w_v else w_v - theta
        else:
            away_slope = float(vals[hi] - np.dot(block.g.ravel(), block.alpha.ravel()))
            if gap >= away_slope or w_v >= 1.0:
                k = atoms.add(s)
                theta = block.step(s - block.alpha, 1.0)
                atoms.w *= 1.0 - theta
                atoms.w[k] += theta
            else:
                theta_max = w_v / (1.0 - w_v)
                theta = block.step(block.alpha - v, theta_max)
                atoms.w *= 1.0 + theta
                atoms.w[hi] = 0.0 if theta >= theta_max else atoms.w[hi] - theta
        atoms.drop_zeros()
    return steps, n_vertex_steps


# --------------------------------------------------------------- the driver
class _Solver:
    """Global state: α, the scores F = K'β̄ of every point, the gradient g."""

    def __init__(self, problem: DualProblem, alpha: np.ndarray, cache):
        self.problem = problem
        self.cache = cache
        self.alpha = alpha
        self.Q = problem.n_classes
        self.bias = problem.fit_intercept and problem.equality_basis.shape[1] > 0
        self.shift = float(problem.kernel_shift)
        active = problem.active
        self.active = np.ascontiguousarray(active, dtype=np.uint8)
        self.nu = np.ascontiguousarray(problem.nu[problem.y] * active[:, :, None])
        squared = problem.machine.loss != "hinge"
        if squared:
            # No upper bound: one box per slot, of adaptive size (module docstring).
            group = np.broadcast_to(np.arange(problem.n_slots, dtype=np.int32), active.shape)
            self.cap = max(4.0 * problem.C, 2.0 * float(alpha.max(initial=0.0)))
        else:
            group = np.where(active, problem.slack, 0)
            self.cap = problem.C
        self.squared = squared
        self.group = np.ascontiguousarray(group, dtype=np.int32)
        self.U = problem.equality_basis
        self.nuU = np.einsum("ipc,cr->ipr", self.nu, self.U) if self.bias else None
        self.lam = np.zeros(self.U.shape[1]) if self.bias else None
        beta = problem.beta(alpha)
        self.F = problem.scores(beta) if np.any(beta) else np.zeros((len(alpha), self.Q))
        self.g = problem.gradient(alpha, self.F)
        self.targets = problem.targets
        self._full = None

    def objective(self) -> float:
        return 0.5 * float(np.sum(self.alpha * (self.g - self.targets)))

    def shares(self, lam=None) -> np.ndarray:
        """Each example's share of the gap bound with multiplier λ (module docstring)."""
        G = self.g if lam is None or not self.bias else self.g - self.nuU @ lam
        s = np.zeros_like(self.alpha)
        gaps = np.zeros(len(self.alpha))
        linear_minimizer(np.ascontiguousarray(G), self.alpha, self.group, self.active, self.cap,
                         s, gaps)
        return gaps

    def kkt_lam(self):
        """λ from the KKT conditions of the free variables (least squares), or None.

        A free variable (0 < α < cap, its slack group below capacity) has
        G_ip = g_ip − (Aᵀλ)_ip = 0 at the optimum (seed 000 (5)).
        """
        a = self.alpha
        tol = 1e-8 * self.cap
        positive = (a > tol) & (self.active > 0)
        sums = np.zeros(a.shape)
        np.add.at(sums, (np.nonzero(positive)[0], self.group[positive]), a[positive])
        free = positive & (np.take_along_axis(sums, self.group, axis=1) < self.cap - tol)
        rows = self.nuU[free]
        if rows.shape[0] < rows.shape[1] or np.linalg.matrix_rank(rows, tol=1e-8) < rows.shape[1]:
            return None
        return np.linalg.lstsq(rows, self.g[free], rcond=None)[0]

    def full_lp(self) -> tuple[float, np.ndarray]:
        """The linear problem over every variable: the exact Frank–Wolfe gap and its λ."""
        if self._full is None:
            self._full = _LinearProblem(self.nuU, self.active, self.group, self.cap,
                                        np.zeros(self.nuU.shape[2]))
        elif self._full.cap != self.cap:
            self._full.set_cap(self.cap)
        lp = self._full
        c = self.g.ravel()[lp.act]
        _, lam, value = lp.solve(c)
        return float(np.dot(c, self.alpha.ravel()[lp.act])) - value, lam

    def rows(self, B: np.ndarray) -> np.ndarray:
        return self.cache.rows(B)

    @property
    def n_full_lp(self) -> int:
        return 0 if self._full is None else self._full.n_solves

    def apply(self, block: _Block, rows: np.ndarray) -> bool:
        """Write B's new α back and update F and g for every point; False if nothing moved."""
        delta = block.alpha - self.alpha[block.B]
        moved = np.any(delta != 0, axis=1)
        if not np.any(moved):
            return False
        dbeta = np.einsum("ip,ipc->ic", delta[moved], self.nu[block.B[moved]])
        self.F += rows[moved].T @ dbeta
        if self.shift:
            self.F[block.B[moved]] += self.shift * dbeta
        self.alpha[block.B] = block.alpha
        self.g = self.problem.gradient(self.alpha, self.F)
        return True

    box_binds = _Block.box_binds


def _quiet_highs():
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


def _check_options(tol, max_iter, fw_variant, working_set_size, cache_size, full_lp_every):
    if tol is not None and (not isinstance(tol, int | float) or isinstance(tol, bool)):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}.")
    tol = check_tol(tol)
    if max_iter is not None and (not isinstance(max_iter, int | np.integer) or max_iter < 1):
        raise ValueError(f"max_iter must be a positive integer or None, got {max_iter!r}.")
    if fw_variant not in VARIANTS:
        raise ValueError(f"fw_variant must be one of {VARIANTS}, got {fw_variant!r}.")
    if working_set_size is not None and working_set_size != "all" and (
            not isinstance(working_set_size, int | np.integer) or isinstance(working_set_size, bool)
            or working_set_size < 2):
        raise ValueError("working_set_size must be an integer >= 2, 'all' or None, "
                         f"got {working_set_size!r}.")
    if not isinstance(cache_size, int | float) or not cache_size > 0:
        raise ValueError(f"cache_size must be a positive number of MB, got {cache_size!r}.")
    if not isinstance(full_lp_every, int | np.integer) or full_lp_every < 1:
        raise ValueError(f"full_lp_every must be a positive integer, got {full_lp_every!r}.")
    return tol


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, fw_variant: str = "pairwise",
          working_set_size: int | str | None = None, face_steps: bool = True,
          lazy: bool = False, inner_ratio: float = 0.1, full_lp_every: int = 10,
          final_lp: bool = True, blas_threads: int | None = 1,
          record: bool = False) -> DualSolution:
    """Solve the dual (with or without bias) by Frank–Wolfe with decomposition.

    Parameters
    ----------
    problem : DualProblem
    tol : float, optional
        Stop when the Frank–Wolfe gap is at most ``tol`` · |J(α)| (default
        1e-3).  The gap bounds J(α) − J*, so ``tol`` is a relative bound on
        the dual suboptimality.
    max_iter : int, optional
        Cap on the number of steps (status ``"max_iter"`` and a
        ``ConvergenceWarning`` when reached).
    warm_start : DualSolution or ndarray of shape (m, P), optional
        Starting point, made feasible as :func:`msvm.solvers.s2do.solve`'s
        (with a bias also projected onto the equality constraints).
    verbose : bool
        Show the live progress line of :class:`msvm._progress.SolverProgress`
        (steps, gap bound against tol · |J|, dual objective, cache hit rate,
        time left) on stderr, at most once per second.
    cache_size : float
        Gram-row cache budget in MB.
    fw_variant : {'pairwise', 'away', 'classic'}
        Step variant (module docstring).
    working_set_size : int, 'all' or None
        N_B, the number of examples per working set; ``'all'`` (or any value
        ≥ m) runs Frank–Wolfe on the whole problem.  None: 'all' up to 200
        examples, else 200.
    face_steps : bool
        Minimise over the current face (conjugate-gradient or Newton steps)
        before each vertex step (module docstring).
    lazy : bool
        Take pairwise steps among the known atoms before solving a new linear
        problem (away and pairwise variants; the lazy rule of blended
        conditional gradients).
    inner_ratio : float
        A working set is left when its own gap has dropped below this
        fraction of its gap at the split (or below ``tol``/4 · |J|).
    full_lp_every : int
        With a bias and N_B < m, solve the linear problem over all variables
        (hot-started) every this many splits, for an exact gap and λ.
    final_lp : bool
        With a bias, solve the linear problem over all variables at the end:
        exact final gap (``info['fw_gap']``) and the LP's b
        (``info['b_lp']``).
    blas_threads : int or None
        BLAS threads while the solver runs (default 1; see
        :func:`msvm.solvers.s2do.solve`).
    record : bool
        Keep the convergence trace (time, steps, dual objective, gap bound)
        in ``info['history']``.

    Returns
    -------
    DualSolution
    """
    start_time = time.perf_counter()
    tol = _check_options(tol, max_iter, fw_variant, working_set_size, cache_size, full_lp_every)
    budget = default_max_iter(problem.n_samples) if max_iter is None else int(max_iter)
    m = problem.n_samples
    n_B = working_set_size
    if n_B is None:
        n_B = m if m <= 200 else 200
    n_B = m if n_B == "all" else min(int(n_B), m)
    alpha = _start(problem, warm_start)
    cache = problem.kernel.cache(cache_size)
    history = []
    status = "max_iter"
    n_steps = n_splits = n_lp = n_face = 0
    live = SolverProgress("frank_wolfe", tol, enabled=verbose, unit="steps")
    with _blas_threads(blas_threads):
        solver = _Solver(problem, alpha, cache)
        full_rows = None

        def trace(J, gap):
            if record:
                history.append((time.perf_counter() - start_time, n_steps, -J, gap))

        def record_inner(block, gap):
            # With one working set of everything the inner gap is the global gap.
            trace(block.objective(), gap)

        def show(final=False):
            if live.due(final):
                # The stopping rule: the gap bound against tol relative to |J|.
                live.report(n_steps, bound, target=tol * abs(J), dual=-J, final=final,
                                hits=cache.n_hits, misses=cache.n_misses,
                                extra=f"split {n_splits}")

        stalls = idle = 0
        exact = False
        progress = StallWatch(solver.objective)
        rng = np.random.default_rng(0)
        while True:
            J = solver.objective()
            # The bound holds for every λ: take the best of the candidates at hand.
            candidates = [solver.lam]
            if solver.bias and n_B < m:
                candidates.append(solver.kkt_lam())
                if stalls or n_splits % full_lp_every == 0:
                    candidates.append(solver.full_lp()[1])
            candidates = [lam for lam in candidates if lam is not None] or [None]
            scored = [(float(gaps.sum()), lam, gaps) for lam in candidates
                      for gaps in [solver.shares(lam)]]
            bound, solver.lam, gaps = min(scored, key=lambda t: t[0])
            if n_B < m:
                trace(J, bound)
            if solver.squared and solver.box_binds():
                # The box optimum is not the true one: widen the box at once.
                solver.cap *= 2.0
                continue
            if bound <= tol * abs(J):
                if solver.bias and n_B < m and not exact:
                    # Confirm with the exact gap before stopping (it can only be smaller).
                    exact = True
                    gap, lam = solver.full_lp()
                    if gap <= tol * abs(J):
                        solver.lam = lam
                        status = "optimal"
                        break
                    continue
                status = "optimal"
                break
            exact = False
            if n_steps >= budget:
                break
            if n_B < m:
                if stalls > 1:
                    # Still no progress with the LP's λ: half of B at random breaks the cycle.
                    top = np.argpartition(-gaps, n_B // 2 - 1)[: n_B // 2]
                    rest = rng.choice(np.setdiff1d(np.arange(m), top), n_B - len(top),
                                      replace=False)
                    B = np.sort(np.concatenate([top, rest]))
                else:
                    B = np.sort(np.argpartition(-gaps, n_B - 1)[:n_B])
                rows = solver.rows(B)
                K_BB = rows[:, B]
            else:
                if full_rows is None:
                    full_rows = solver.rows(np.arange(m))
                B, rows = np.arange(m), full_rows
                K_BB = rows
            block = _Block(solver, B, K_BB)
            target = max(inner_ratio * float(gaps[B].sum()), 0.25 * tol * abs(J))
            steps, n_vertex_steps = _inner(
                block, fw_variant, lazy, face_steps, target, budget - n_steps,
                record_inner if (record and n_B == m) else None,
                rel_tol=tol if n_B == m else None)
            n_steps += steps
            n_splits += 1
            n_lp += block.n_lp
            n_face += block.n_face_steps
            moved = solver.apply(block, rows)
            stalls = 0 if moved else stalls + 1
            if progress.stalled():
                status = "stalled"
                break
            if solver.bias and n_B < m:
                # With a bias the gap shares (one λ for everything) can pick a working
                # set whose own problem is already solved on its face: no vertex step
                # was needed.  Several such splits in a row mean B is too small to
                # hold an improving direction of the equality rows: double it.
                idle = idle + 1 if n_vertex_steps == 0 else 0
                if idle >= 3:
                    n_B, idle = min(2 * n_B, m), 0
            if block.bias:
                solver.lam = block.lam
            show()
        show(final=True)
        b_lp = fw_gap = None
        if solver.bias:
            repair_equality(problem, solver.alpha, solver.cap)
            solver.g = problem.gradient(solver.alpha, solver.F)
            if final_lp:
                fw_gap, lam = solver.full_lp()
                b_lp = -(problem.equality_basis @ lam)
    if not solver.bias:
        fw_gap = float(solver.shares().sum())
    if status in ("max_iter", "stalled"):
        from sklearn.exceptions import ConvergenceWarning

        reason = (f"at max_iter={budget} steps" if status == "max_iter" else
                  f"after its dual objective stopped increasing for {STALL_SECONDS:g} s")
        warnings.warn(f"frank_wolfe stopped {reason} before its gap reached tol={tol:g} "
                      "relative.", ConvergenceWarning, stacklevel=2)
    grad = solver.g
    b, b_method = bias_from_kkt(problem, solver.alpha, grad, solver.F)
    if b_method != "kkt" and b_lp is not None:
        b, b_method = b_lp, "lp"
    info = {
        "fw_variant": fw_variant,
        "face_steps": bool(face_steps),
        "working_set_size": int(n_B),
        "n_splits": n_splits,
        "n_lp": n_lp,
        "n_full_lp": solver.n_full_lp,
        "n_face_steps": n_face,
        "fw_gap": fw_gap,
        "relative_fw_gap": None if fw_gap is None else fw_gap / max(abs(solver.objective()),
                                                                   1e-300),
        "b_method": b_method,
        "box_bound": solver.cap if solver.squared else None,
        "cache_hits": int(cache.n_hits),
        "cache_misses": int(cache.n_misses),
    }
    if b_lp is not None:
        info["b_lp"] = [float(v) for v in b_lp]
        info["b_lp_diff"] = float(np.max(np.abs(b - b_lp)))
    if record:
        info["history"] = history
    return DualSolution(
        alpha=solver.alpha,
        b=np.asarray(b, dtype=float),
        status=status,
        n_iter=int(n_steps),
        time=time.perf_counter() - start_time,
        n_kernel_evaluations=int(cache.n_kernel_evaluations),
        solver="frank_wolfe",
        scores=solver.F,
        info=info,
    )
