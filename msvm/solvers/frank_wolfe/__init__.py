"""Frank–Wolfe solver with decomposition, for every machine, with or without bias.

The algorithm (seed 000 §5, generalised to the unified dual of DESIGN.md §2)
-------------------------------------------------------------------------
Minimise J(α) = ½ αᵀHα − γᵀα over the polytope 𝒫 of the machine: α ≥ 0,
Σ_{p in slack group r} α_ip ≤ C (a box per variable for sum-loss machines, a
capped simplex per example for max-loss ones) and, with a bias, the equality
constraints Σ_{i,p} ν̄_{y_i,p,c} α_ip = 0 (r = rank independent rows
A = Uᵀν̄, see :meth:`msvm.problem.DualProblem.equality_matrix`).

Every iteration solves the linear problem s = argmin_{s ∈ 𝒫} ∇J(α)ᵀs (a
vertex: closed form without a bias, HiGHS with one), takes the step of the
chosen variant (classic, away or pairwise) with an exact line search, and
stops when the Frank–Wolfe gap ∇J(α)ᵀ(α − s) ≥ J(α) − J* is at most
``tol`` · |J(α)|.  Before each vertex step the solver can minimise J over the
face of 𝒫 that contains α (``face_steps=True``, the default).

The package, one responsibility a module, each readable alone:

* :mod:`~msvm.solvers.frank_wolfe._lp`: the linear problem with the bias
  rows (HiGHS, hot-started) and its multipliers λ;
* :mod:`~msvm.solvers.frank_wolfe._face`: the in-face phase (projected
  conjugate gradients, equality-constrained Newton steps, the ratio test);
* :mod:`~msvm.solvers.frank_wolfe._working_set`: Frank–Wolfe iterations on
  one working set (vertex oracle, step variants, atoms);
* this module: the decomposition driver below (choice of the working set,
  the global scores and gradient, the certificate, the M-SVM²'s box, b).

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
best λ differs): after three splits in a row that needed no vertex step, or
STALL_SPLITS without progress, N_B doubles (up to m;
``info['working_set_size']`` is the final size).

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

import time

import numpy as np

from msvm._core._frank_wolfe import linear_minimizer
from msvm._numbers import is_integer, is_real
from msvm._progress import SolverProgress
from msvm.diagnostics import bias_from_kkt, repair_equality
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import check_tol
from msvm.solvers._common import (
    check_cache_size,
    iteration_budget,
    limit_blas_threads,
    machine_tables,
    start_point,
    warn_not_converged,
)
from msvm.solvers.frank_wolfe._lp import LinearProblem
from msvm.solvers.frank_wolfe._working_set import Block, box_binds, inner

__all__ = ["solve", "VARIANTS"]

SUPPORTS_BIAS = True
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "cache_size"})
STOPPING_RULE = "fw_gap"
#: ``solve`` takes ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = True

#: Step variants accepted by ``fw_variant``.
VARIANTS = ("classic", "away", "pairwise")
#: The solver stops "stalled" when neither J nor the gap bound has decreased over this
#: many splits in a row at its largest working set (with a bias N_B doubles instead while
#: it is below m, see the module docstring), or at once when J is not finite.  Splits,
#: not seconds: on a large problem one split with the linear problem over every variable
#: takes seconds.
STALL_SPLITS = 50


class _Solver:
    """Global state: α, the scores F = K'β̄ of every point, the gradient g."""

    def __init__(self, problem: DualProblem, alpha: np.ndarray, cache):
        self.problem = problem
        self.cache = cache
        self.alpha = alpha
        self.Q = problem.n_classes
        self.bias = problem.fit_intercept and problem.equality_basis.shape[1] > 0
        self.shift = np.ascontiguousarray(problem.kernel_shift)   # (m,) per example
        self.has_shift = problem.has_shift
        active = problem.active
        self.active = np.ascontiguousarray(active, dtype=np.uint8)
        # ν̄ of each example's active slots (zero on the others).
        nubar = machine_tables(problem.machine, fast=False, full_M=False).nubar
        self.nu = np.ascontiguousarray(nubar[problem.y])
        squared = problem.machine.loss != "hinge"
        if squared:
            # No upper bound: one box per slot, of adaptive size (module docstring).
            group = np.broadcast_to(np.arange(problem.n_slots, dtype=np.int32), active.shape)
            box = max(4.0 * problem.C * float(problem.sample_weight.max()),
                      2.0 * float(alpha.max(initial=0.0)))
            self.cap = np.full(problem.n_samples, box)
        else:
            group = np.where(active, problem.slack, 0)
            self.cap = problem.capacity.copy()   # (m,): C w_i of every example
        self.squared = squared
        self.group = np.ascontiguousarray(group, dtype=np.int32)
        self.U = problem.equality_basis
        self.nuU = np.einsum("ipc,cr->ipr", self.nu, self.U) if self.bias else None
        self.lam = np.zeros(self.U.shape[1]) if self.bias else None
        beta = problem.beta(alpha)
        self.F = problem.scores(beta) if np.any(beta) else np.zeros((len(alpha), self.Q))
        self.g = problem.gradient(alpha, self.F)
        self.targets = problem.targets
        self._full: LinearProblem | None = None

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
        nuU = self.nuU
        assert nuU is not None  # called with a bias only
        a = self.alpha
        tol = 1e-8 * self.cap[:, None]
        positive = (a > tol) & (self.active > 0)
        sums = np.zeros(a.shape)
        np.add.at(sums, (np.nonzero(positive)[0], self.group[positive]), a[positive])
        free = positive & (np.take_along_axis(sums, self.group, axis=1)
                           < self.cap[:, None] - tol)
        rows = nuU[free]
        if rows.shape[0] < rows.shape[1] or np.linalg.matrix_rank(rows, tol=1e-8) < rows.shape[1]:
            return None
        return np.linalg.lstsq(rows, self.g[free], rcond=None)[0]

    def full_lp(self) -> tuple[float, np.ndarray]:
        """The linear problem over every variable: the exact Frank–Wolfe gap and its λ."""
        nuU = self.nuU
        assert nuU is not None  # called with a bias only
        if self._full is None:
            self._full = LinearProblem(nuU, self.active, self.group, self.cap,
                                        np.zeros(nuU.shape[2]))
        elif not np.array_equal(self._full.cap, self.cap):
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

    def apply(self, block: Block, rows: np.ndarray) -> bool:
        """Write B's new α back and update F and g for every point; False if nothing moved."""
        delta = block.alpha - self.alpha[block.B]
        moved = np.any(delta != 0, axis=1)
        if not np.any(moved):
            return False
        dbeta = np.einsum("ip,ipc->ic", delta[moved], self.nu[block.B[moved]])
        self.F += rows[moved].T @ dbeta
        if self.has_shift:
            self.F[block.B[moved]] += self.shift[block.B[moved], None] * dbeta
        self.alpha[block.B] = block.alpha
        self.g = self.problem.gradient(self.alpha, self.F)
        return True

    box_binds = box_binds


def _check_options(problem, tol, max_iter, fw_variant, working_set_size, cache_size,
                   full_lp_every, inner_ratio) -> tuple[float, int, float]:
    """(tol, step budget, cache_size) checked; ValueError for a bad option."""
    tol = check_tol(tol)
    budget = iteration_budget(max_iter, problem.n_samples)
    if fw_variant not in VARIANTS:
        raise ValueError(f"fw_variant must be one of {VARIANTS}, got {fw_variant!r}.")
    if working_set_size is not None and working_set_size != "all" and (
            not is_integer(working_set_size) or working_set_size < 2):
        raise ValueError("working_set_size must be an integer >= 2, 'all' or None, "
                         f"got {working_set_size!r}.")
    cache_size = check_cache_size(cache_size)
    if not is_integer(full_lp_every) or full_lp_every < 1:
        raise ValueError(f"full_lp_every must be a positive integer, got {full_lp_every!r}.")
    if not is_real(inner_ratio) or not 0 <= inner_ratio < np.inf:   # (NaN: never-ending sets)
        raise ValueError(f"inner_ratio must be a non-negative number, got {inner_ratio!r}.")
    return tol, budget, cache_size


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
        Step variant (:mod:`~msvm.solvers.frank_wolfe._working_set`).
    working_set_size : int, 'all' or None
        N_B, the number of examples per working set; ``'all'`` (or any value
        ≥ m) runs Frank–Wolfe on the whole problem.  None: 'all' up to 200
        examples, else 200.
    face_steps : bool
        Minimise over the current face (conjugate-gradient or Newton steps)
        before each vertex step (:mod:`~msvm.solvers.frank_wolfe._face`).
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
    tol, budget, cache_size = _check_options(problem, tol, max_iter, fw_variant, working_set_size,
                                             cache_size, full_lp_every, inner_ratio)
    m = problem.n_samples
    n_B = working_set_size
    if n_B is None:
        n_B = m if m <= 200 else 200
    n_B = m if n_B == "all" else min(int(n_B), m)
    alpha = start_point(problem, warm_start)
    cache = problem.kernel.cache(cache_size)
    history = []
    status = "max_iter"
    n_steps = n_splits = n_lp = n_face = 0
    live = SolverProgress("frank_wolfe", tol, enabled=verbose, unit="steps")
    with limit_blas_threads(blas_threads):
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
        best_J = best_bound = np.inf
        flat_splits = 0
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
                # The box optimum is not the true one: widen the box at once (while
                # float64 holds it: an infinite box would loop here for ever).
                if not np.all(np.isfinite(2.0 * solver.cap)):
                    status = "stalled"
                    break
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
            block = Block(solver, B, K_BB)
            target = max(inner_ratio * float(gaps[B].sum()), 0.25 * tol * abs(J))
            steps, n_vertex_steps = inner(
                block, fw_variant, lazy, face_steps, target, budget - n_steps,
                record_inner if (record and n_B == m) else None,
                rel_tol=tol if n_B == m else None)
            n_steps += steps
            n_splits += 1
            n_lp += block.n_lp
            n_face += block.face.n_steps
            moved = solver.apply(block, rows)
            stalls = 0 if moved else stalls + 1
            J_split = solver.objective()
            flat_splits = 0 if J_split < best_J or bound < best_bound else flat_splits + 1
            best_J, best_bound = min(best_J, J_split), min(best_bound, bound)
            grows = solver.bias and n_B < m
            if not np.isfinite(J_split) or (flat_splits >= STALL_SPLITS and not grows):
                status = "stalled"
                break
            if grows:
                # With a bias the gap shares (one λ for everything) can pick a working
                # set whose own problem is already solved on its face: no vertex step
                # was needed.  Several such splits in a row, or no progress for
                # STALL_SPLITS, mean B is too small to hold an improving direction of
                # the equality rows: double it.
                idle = idle + 1 if n_vertex_steps == 0 else 0
                if idle >= 3 or flat_splits >= STALL_SPLITS:
                    n_B, idle, flat_splits = min(2 * n_B, m), 0, 0
            if block.bias:
                solver.lam = block.lam
            show()
        show(final=True)
        b_lp = fw_gap = None
        if solver.bias:
            repaired = repair_equality(problem, solver.alpha)
            if repaired is not None:
                solver.alpha[...] = repaired
            solver.g = problem.gradient(solver.alpha, solver.F)
            if final_lp:
                fw_gap, lam = solver.full_lp()
                b_lp = -(problem.equality_basis @ lam)
    if not solver.bias:
        fw_gap = float(solver.shares().sum())
    if status in ("max_iter", "stalled"):
        warn_not_converged("frank_wolfe", status, f"max_iter={budget} steps",
                           f"before its gap reached tol={tol:g} relative")
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
        "box_bound": float(solver.cap.max()) if solver.squared else None,
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
