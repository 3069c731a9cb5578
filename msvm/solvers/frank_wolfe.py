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
   the vertex comes from ``scipy.optimize.linprog`` (HiGHS, dual simplex);
   its dual values λ of the equality rows are the bias: b = −Uλ.
2. takes the step of the chosen variant (``fw_variant``) with the exact line
   search of seed 000 §5.2, θ = clip(−∇Jᵀd / dᵀHd, 0, θ_max)
   (:func:`~msvm._core._frank_wolfe.line_search_step`, nogil):

   * ``'classic'``: d = s − α, θ_max = 1 (seed 000);
   * ``'away'``: the classic step or the away step d = α − v from the worst
     vertex v of the current convex decomposition of α, whichever is
     steeper (Lacoste-Julien & Jaggi, 2015), θ_max = w_v / (1 − w_v);
   * ``'pairwise'``: d = s − v, θ_max = w_v (mass moves from v to s).

   The away and pairwise variants converge linearly on polytopes; they keep α
   as a convex combination Σ w_a v_a of *atoms* (the vertices met so far,
   plus the starting point of the working set, which is feasible but not a
   vertex).  With ``lazy=True`` (default) they first take pairwise steps
   between the best and worst atoms, which need no linear problem, until
   that local gap falls below half the last Frank–Wolfe gap (the lazy /
   blended conditional gradient rule of Braun, Pokutta et al.): the linear
   problem, the one expensive Python step with a bias, is then solved only
   when the atoms found so far cannot make enough progress.
3. stops when the Frank–Wolfe gap ∇J(α)ᵀ(α − s) ≥ J(α) − J* is at most
   ``tol`` · |J(α)|.

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
problem (weak LP duality), and equals it at the LP's optimal λ.  The driver
evaluates it with the λ of the last working-set LP, stops when it is below
``tol`` · |J|, and otherwise takes as B the N_B examples with the largest
shares G_iᵀ(α_i − s_i): each share is zero exactly when the example meets
its KKT conditions for that b, so this is selection by KKT violation in the
units of the gap.  Without bias λ is empty and the bound is the exact gap.

The M-SVM² (quadratic slack penalty)
------------------------------------
Its dual is the hard-margin LLW dual on k' = k + δ_ij/(2C) (the diagonal
shift enters every curvature and gradient update through ``shift``): α ≥ 0
without upper bound, so 𝒫 is a cone and the linear problem is unbounded.
The solver works in the box 0 ≤ α ≤ U, U = 4C at first, and doubles U
whenever the box binds (a variable at U when the gap certificate is met);
since J is strongly convex for the M-SVM² (H ⪰ (M ⊗ I)/(2C) with M ≻ 0 on
the active slots), the box optimum equals the true one as soon as no
variable sits at U, and the Frank–Wolfe gap in that box then bounds J − J*.

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

import time

import numpy as np

from msvm._core._frank_wolfe import line_search_step, linear_minimizer, local_pairwise
from msvm.diagnostics import bias_from_kkt
from msvm.problem import DualProblem, DualSolution
from msvm.solvers.s2do import _blas_threads, _start

__all__ = ["solve", "VARIANTS"]

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True

#: Step variants accepted by ``fw_variant``.
VARIANTS = ("classic", "away", "pairwise")

# Variables within SNAP·cap of a bound are put on it (LP round-off, drop steps).
_SNAP = 1e-11
# HiGHS tolerances: its defaults (1e-7) would leave the equality rows at 1e-7.
_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ---------------------------------------------------------------- the polytope
class _Block:
    """The working set B: its data in the layout of :mod:`msvm._core._frank_wolfe`.

    ``alpha`` and ``g`` are copies, updated in place by the steps and written
    back by the driver.  ``vertex`` is the linear minimisation oracle of B
    (closed form, or linprog with the equality rows restricted to B).
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
        self.nuU = solver.nuU[B] if solver.bias else None
        self.shift = solver.shift
        self.bias = solver.bias
        n, Q = len(B), solver.Q
        self.dbeta = np.zeros((n, Q))
        self.u = np.zeros((n, Q))
        self.stats = np.zeros(3)
        self.s = np.zeros_like(self.alpha)
        self.gaps = np.zeros(n)
        self.lam = solver.lam
        self.n_lp = 0
        if self.bias:
            self._build_lp(self.nuU)

    def _build_lp(self, nuU: np.ndarray):
        import scipy.sparse as sp

        act = np.flatnonzero(self.active.ravel())
        self.act = act
        self.A_eq = np.ascontiguousarray(nuU.reshape(-1, nuU.shape[2])[act].T)
        self.b_eq = self.A_eq @ self.alpha.ravel()[act]
        # Slack groups shared by several slots (max-loss) become rows Σ s ≤ C.
        grp = self.group.ravel()[act]
        example = act // self.alpha.shape[1]
        key = example * self.alpha.shape[1] + grp
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        shared = counts[inverse] > 1
        if np.any(shared):
            rows = np.unique(inverse[shared], return_inverse=True)[1]
            self.A_ub = sp.csr_matrix((np.ones(int(shared.sum())), (rows, np.flatnonzero(shared))),
                                      shape=(int(rows.max()) + 1, len(act)))
            self.b_ub = np.full(self.A_ub.shape[0], self.cap)
        else:
            self.A_ub = self.b_ub = None
        self.bounds = np.column_stack([np.zeros(len(act)), np.full(len(act), self.cap)])

    def vertex(self) -> float:
        """s = argmin over B's polytope of gᵀs (into ``self.s``); returns the gap gᵀ(α − s)."""
        if not self.bias:
            total = linear_minimizer(self.g, self.alpha, self.group, self.active, self.cap,
                                     self.s, self.gaps)
            return float(np.dot(self.g.ravel(), self.alpha.ravel()) - total)
        act = self.act
        c = self.g.ravel()[act]
        self.n_lp += 1
        res = _linprog(c, self.A_ub, self.b_ub, self.A_eq, self.b_eq, self.bounds)
        x = _clean_vertex(res.x, self.A_eq, self.b_eq, self.cap)
        self.lam = np.asarray(res.eqlin.marginals, dtype=float)
        s = self.s.ravel()
        s[:] = 0.0
        s[act] = x
        return float(np.dot(c, self.alpha.ravel()[act] - x))

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


def _linprog(c, A_ub, b_ub, A_eq, b_eq, bounds):
    """HiGHS's dual simplex at tight tolerances, or at its defaults if those stall."""
    from scipy.optimize import linprog

    for options in (_LP_OPTIONS, {}):
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                      method="highs-ds", options=options)
        if res.status == 0:
            return res
    raise RuntimeError(f"linprog failed on the linear problem of a working set: {res.message}")


def _clean_vertex(x, A_eq, b_eq, cap):
    """Snap an LP vertex onto its bounds and restore A x = b on its fractional part."""
    x = np.clip(x, 0.0, cap)
    x[x < 1e-9 * cap] = 0.0
    x[x > (1 - 1e-9) * cap] = cap
    frac = np.flatnonzero((x > 0) & (x < cap))
    residual = b_eq - A_eq @ x
    if len(frac) and np.any(residual):
        x[frac] += np.linalg.lstsq(A_eq[:, frac], residual, rcond=None)[0]
    return x


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


def _inner(block: _Block, variant: str, lazy: bool, target: float, max_steps: int,
           record=None, rel_tol: float | None = None) -> tuple[int, float]:
    """Frank–Wolfe iterations on one working set; returns (steps, last gap).

    Stops when the working set's gap is at most ``target``, or, with
    ``rel_tol`` (the working set is the whole problem), at most
    ``rel_tol`` · |J(α)| for the current α.
    """
    atoms = None if variant == "classic" else _Atoms(block.alpha)
    shape = block.alpha.shape
    gap = np.inf
    steps = 0
    while steps < max_steps:
        if atoms is not None and lazy and np.isfinite(gap) and atoms.n > 1:
            # Local pairwise steps among the atoms: no linear problem to solve.
            # Capped: pairwise steps among many atoms converge slowly, and a new
            # vertex is then worth more than further local steps.
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
        if variant == "classic":
            theta = block.step(s - block.alpha, 1.0)
            steps += 1
            continue
        vals = atoms.values(block.g)
        hi = int(np.argmax(np.where(atoms.w > 0, vals, -np.inf)))
        v = atoms.V[hi].reshape(shape)
        w_v = atoms.w[hi]
        if variant == "pairwise":
            k = atoms.add(s)
            if k == hi:
                break
            theta = block.step(s - v, w_v)
            atoms.w[k] += theta
            atoms.w[hi] = 0.0 if theta >= w_v else w_v - theta
        else:
            fw_slope = gap
            away_slope = float(vals[hi] - np.dot(block.g.ravel(), block.alpha.ravel()))
            if fw_slope >= away_slope or w_v >= 1.0:
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
        steps += 1
        if theta == 0.0 and not lazy:
            break
    return steps, gap


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
        n_slots = self.group.shape[1]
        sums = np.zeros((len(a), n_slots))
        np.add.at(sums, (np.nonzero(positive)[0], self.group[positive]), a[positive])
        free = positive & (np.take_along_axis(sums, self.group, axis=1) < self.cap - tol)
        rows = self.nuU[free]
        if rows.shape[0] < rows.shape[1] or np.linalg.matrix_rank(rows, tol=1e-8) < rows.shape[1]:
            return None
        return np.linalg.lstsq(rows, self.g[free], rcond=None)[0]

    def rows(self, B: np.ndarray) -> np.ndarray:
        return self.cache.rows(B)

    def apply(self, block: _Block, rows: np.ndarray):
        """Write B's new α back and update F and g for every point."""
        delta = block.alpha - self.alpha[block.B]
        moved = np.any(delta != 0, axis=1)
        if not np.any(moved):
            return False
        if np.any(moved):
            dbeta = np.einsum("ip,ipc->ic", delta[moved], self.nu[block.B[moved]])
            self.F += rows[moved].T @ dbeta
            if self.shift:
                self.F[block.B[moved]] += self.shift * dbeta
        self.alpha[block.B] = block.alpha
        self.g = self.problem.gradient(self.alpha, self.F)
        return True

    box_binds = _Block.box_binds


def _full_lp(solver: _Solver):
    """The linear problem over every variable: the exact Frank–Wolfe gap and the LP's λ."""
    full = _Block.__new__(_Block)
    full.alpha, full.g, full.group, full.active = (solver.alpha, solver.g, solver.group,
                                                   solver.active)
    full.cap, full.bias, full.n_lp = solver.cap, True, 0
    full._build_lp(solver.nuU)
    c = solver.g.ravel()[full.act]
    res = _linprog(c, full.A_ub, full.b_ub, full.A_eq, np.zeros(full.A_eq.shape[0]), full.bounds)
    gap = float(np.dot(c, solver.alpha.ravel()[full.act]) - res.fun)
    return gap, np.asarray(res.eqlin.marginals, dtype=float)


def _repair_equality(problem: DualProblem, alpha: np.ndarray, cap: float):
    """Remove the round-off of the equality rows with a least-norm move of the free variables."""
    A = problem.equality_matrix()
    residual = A @ alpha.ravel()
    free = np.flatnonzero((alpha.ravel() > 0) & (alpha.ravel() < cap))
    if len(free) == 0 or not np.any(residual):
        return
    delta = np.linalg.lstsq(A[:, free], -residual, rcond=None)[0]
    flat = alpha.reshape(-1)
    flat[free] = np.clip(flat[free] + delta, 0.0, cap)


def _check_options(tol, max_iter, fw_variant, working_set_size, cache_size):
    tol = 1e-3 if tol is None else tol
    if not isinstance(tol, int | float) or isinstance(tol, bool) or not tol >= 0:
        raise ValueError(f"tol must be a non-negative number, got {tol!r}.")
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
    return float(tol)


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, fw_variant: str = "pairwise",
          working_set_size: int | str | None = None, lazy: bool = True,
          inner_ratio: float = 0.1, final_lp: bool = True, blas_threads: int | None = 1,
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
        Cap on the number of steps (status ``"max_iter"`` when reached).
    warm_start : DualSolution or ndarray of shape (m, P), optional
        Feasible starting point (with a bias it must satisfy the equality
        constraints).
    verbose : bool
        Print one line per working set.
    cache_size : float
        Gram-row cache budget in MB.
    fw_variant : {'pairwise', 'away', 'classic'}
        Step variant (module docstring).
    working_set_size : int, 'all' or None
        N_B, the number of examples per working set; ``'all'`` (or any value
        ≥ m) runs Frank–Wolfe on the whole problem.  None: 'all' up to 500
        examples, else 200.
    lazy : bool
        Take pairwise steps among the known atoms before solving a new linear
        problem (away and pairwise variants).
    inner_ratio : float
        A working set is left when its own gap has dropped below this
        fraction of its gap at the split (or below ``tol``/4 · |J|).
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
    tol = _check_options(tol, max_iter, fw_variant, working_set_size, cache_size)
    budget = np.iinfo(np.int64).max if max_iter is None else int(max_iter)
    m = problem.n_samples
    n_B = working_set_size
    if n_B is None:
        n_B = m if m <= 500 else 200
    n_B = m if n_B == "all" else min(int(n_B), m)
    alpha = _start(problem, warm_start)
    if problem.fit_intercept and np.max(np.abs(problem.equality_residual(alpha)),
                                        initial=0.0) > 1e-9 * problem.C:
        raise ValueError("warm_start does not satisfy the equality constraints of the bias.")
    cache = problem.kernel.cache(cache_size)
    history = []
    status = "max_iter"
    n_steps = n_splits = n_lp = 0
    with _blas_threads(blas_threads):
        solver = _Solver(problem, alpha, cache)
        full_rows = solver.rows(np.arange(m)) if n_B == m else None

        def trace(J, gap):
            if record:
                history.append((time.perf_counter() - start_time, n_steps, -J, gap))

        def record_inner(block, gap):
            # With one working set of everything the inner gap is the global gap.
            trace(block.objective(), gap)

        stalls = 0
        rng = np.random.default_rng(0)
        while True:
            J = solver.objective()
            # The bound holds for every λ: take the best of the candidates at hand.
            candidates = [solver.lam]
            if solver.bias and n_B < m:
                candidates.append(solver.kkt_lam())
                if stalls:  # the estimates led nowhere: the LP's optimal λ
                    candidates.append(_full_lp(solver)[1])
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
                status = "optimal"
                break
            if n_steps >= budget:
                break
            if n_B < m and stalls > 1:
                # Still no progress with the LP's λ: half of B at random breaks the cycle.
                top = np.argpartition(-gaps, n_B // 2 - 1)[: n_B // 2]
                rest = rng.choice(np.setdiff1d(np.arange(m), top), n_B - len(top), replace=False)
                B = np.sort(np.concatenate([top, rest]))
                rows = solver.rows(B)
                K_BB = rows[:, B]
            elif n_B < m:
                B = np.sort(np.argpartition(-gaps, n_B - 1)[:n_B])
                rows = solver.rows(B)
                K_BB = rows[:, B]
            else:
                B, rows = np.arange(m), full_rows
                K_BB = rows
            block = _Block(solver, B, K_BB)
            target = max(inner_ratio * float(gaps[B].sum()), 0.25 * tol * abs(J))
            steps, _ = _inner(block, fw_variant, lazy, target, budget - n_steps,
                              record_inner if (record and n_B == m) else None,
                              rel_tol=tol if n_B == m else None)
            n_steps += steps
            n_splits += 1
            n_lp += block.n_lp
            moved = solver.apply(block, rows)
            stalls = 0 if moved else stalls + 1
            if block.bias:
                solver.lam = block.lam
            if verbose:
                print(f"frank_wolfe: split {n_splits:>6d}  steps {n_steps:>8d}  "
                      f"dual {-J:.10g}  gap bound {bound:.3e}  (tol {tol * abs(J):.3e})",
                      flush=True)
        b_lp = fw_gap = None
        if solver.bias:
            _repair_equality(problem, solver.alpha, solver.cap)
            solver.g = problem.gradient(solver.alpha, solver.F)
            if final_lp:
                fw_gap, lam = _full_lp(solver)
                b_lp = -(problem.equality_basis @ lam)
    if not solver.bias:
        fw_gap = float(solver.shares().sum())
    grad = solver.g
    b, b_method = bias_from_kkt(problem, solver.alpha, grad, solver.F)
    if b_method != "kkt" and b_lp is not None:
        b, b_method = b_lp, "lp"
    info = {
        "fw_variant": fw_variant,
        "working_set_size": int(n_B),
        "n_splits": n_splits,
        "n_lp": n_lp,
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
