"""Frank–Wolfe iterations on one working set: the vertex oracle, the steps, the atoms.

A working set B (:class:`Block`) holds copies of its examples' α, gradient,
machine arrays and kernel block K_BB.  :func:`inner` runs Frank–Wolfe on it:

1. the linear problem s = argmin_{s ∈ 𝒫_B} ∇J(α)ᵀs (:meth:`Block.vertex`:
   closed form without a bias, HiGHS with the equality rows restricted to
   B with one, :mod:`~msvm.solvers.frank_wolfe._lp`);
2. the step of the chosen variant (``fw_variant``) with the exact line
   search of seed 000 §5.2, θ = clip(−∇Jᵀd / dᵀHd, 0, θ_max)
   (:func:`~msvm._core._frank_wolfe.line_search_step`, nogil):

   * ``'classic'``: d = s − α, θ_max = 1 (seed 000);
   * ``'away'``: the classic step or the away step d = α − v from the worst
     vertex v of the current convex decomposition of α, whichever is
     steeper (Lacoste-Julien & Jaggi, 2015), θ_max = w_v / (1 − w_v);
   * ``'pairwise'``: d = s − v, θ_max = w_v (mass moves from v to s).

   The away and pairwise variants keep α as a convex combination Σ w_a v_a
   of *atoms* (:class:`Atoms`: the vertices met so far, plus the point where
   the atoms were last reset, which is feasible but not a vertex);
3. before each vertex step, optionally, the face phase
   (:mod:`~msvm.solvers.frank_wolfe._face`); the atoms restart from α after
   it.  Without face steps, ``lazy`` takes pairwise steps among the known
   atoms before solving a new linear problem (the lazy rule of blended
   conditional gradients).

It stops when B's gap ∇J(α)ᵀ(α − s) is below the driver's target.
"""

from __future__ import annotations

import numpy as np

from msvm._core._frank_wolfe import line_search_step, linear_minimizer, local_pairwise
from msvm.solvers.frank_wolfe._face import SNAP, Face
from msvm.solvers.frank_wolfe._lp import LinearProblem


def box_binds(state) -> bool:
    """Whether a variable sits at the M-SVM² box bound and the gradient pushes it up.

    A method of :class:`Block` and of the driver's global state (``state``
    has ``g``, ``alpha``, ``cap``, ``active``, ``bias``, ``nuU`` and ``lam``).
    """
    G = state.g if not state.bias else state.g - state.nuU @ state.lam
    at_box = state.alpha >= (1.0 - 1e-9) * state.cap[:, None]
    return bool(np.any(at_box & (G < 0) & (state.active > 0)))


class Block:
    """The working set B: its data in the layout of :mod:`msvm._core._frank_wolfe`.

    ``solver`` is the driver's global state (α, gradient, machine arrays of
    every example).  ``alpha`` and ``g`` are copies, updated in place by the
    steps and written back by the driver.  :meth:`vertex` is the linear
    minimisation oracle of B (closed form, or HiGHS with the equality rows
    restricted to B); ``face`` (:class:`~msvm.solvers.frank_wolfe._face.Face`)
    takes the in-face steps.
    """

    def __init__(self, solver, B: np.ndarray, K_BB: np.ndarray):
        self.B = B
        self.alpha = np.ascontiguousarray(solver.alpha[B])
        self.g = np.ascontiguousarray(solver.g[B])
        self.nu = np.ascontiguousarray(solver.nu[B])
        self.K = np.ascontiguousarray(K_BB)
        self.group = np.ascontiguousarray(solver.group[B])
        self.targets = solver.targets[B]
        self.active = np.ascontiguousarray(solver.active[B])
        self.cap = np.ascontiguousarray(solver.cap[B])   # (n_B,) per-example capacity
        self.squared = solver.squared
        self.shift = np.ascontiguousarray(solver.shift[B])   # (n_B,) per-example shift
        self.bias = solver.bias
        self.nuU = solver.nuU[B] if self.bias else None
        n, Q = len(B), solver.Q
        self.dbeta = np.zeros((n, Q))
        self.u = np.zeros((n, Q))
        self.stats = np.zeros(3)
        self.s = np.zeros_like(self.alpha)
        self.gaps = np.zeros(n)
        self.lam = solver.lam
        self.lp: LinearProblem | None = None
        if self.nuU is not None:  # with a bias
            rhs = np.einsum("ipr,ip->r", self.nuU, self.alpha)
            self.lp = LinearProblem(self.nuU, self.active, self.group, self.cap, rhs)
        self.face = Face(self)

    @property
    def n_lp(self) -> int:
        return 0 if self.lp is None else self.lp.n_solves

    def vertex(self) -> float:
        """s = argmin over B's polytope of gᵀs (into ``self.s``); returns the gap gᵀ(α − s)."""
        if not self.bias:
            total = linear_minimizer(self.g, self.alpha, self.group, self.active, self.cap,
                                     self.s, self.gaps)
            return float(np.dot(self.g.ravel(), self.alpha.ravel()) - total)
        lp = self.lp
        assert lp is not None  # set with a bias
        act = lp.act
        c = self.g.ravel()[act]
        x, self.lam, value = lp.solve(c)
        s = self.s.ravel()
        s[:] = 0.0
        s[act] = x
        return float(np.dot(c, self.alpha.ravel()[act])) - value

    box_binds = box_binds

    def objective(self) -> float:
        """J(α) when B is every example: ½ αᵀ(g − γ)."""
        return 0.5 * float(np.sum(self.alpha * (self.g - self.targets)))

    def step(self, d: np.ndarray, theta_max: float) -> float:
        """α += θd with the exact line search, θ ≤ ``theta_max``; returns θ."""
        theta = line_search_step(self.alpha, self.g, d, self.K, self.nu, self.shift,
                                 float(theta_max), self.dbeta, self.u, self.stats)
        if theta > 0.0:
            a = self.alpha
            a[np.abs(a) < SNAP * self.cap[:, None]] = 0.0
        return theta


class Atoms:
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


def inner(block: Block, variant: str, lazy: bool, face_steps: bool, target: float,
          max_steps: int, record=None, rel_tol: float | None = None) -> tuple[int, float]:
    """Frank–Wolfe iterations on one working set; returns (steps, number of vertex steps).

    Stops when the working set's gap is at most ``target``, or, with
    ``rel_tol`` (the working set is the whole problem), at most
    ``rel_tol`` · |J(α)| for the current α; also when the M-SVM² box binds
    (the driver widens it), and when a round of steps left α as it was (a
    step of length 0, or one snapped back onto its bound), which would
    otherwise repeat until the budget is spent: the driver's stall test then
    counts the split.
    """
    atoms = None if variant == "classic" else Atoms(block.alpha)
    shape = block.alpha.shape
    gap = np.inf
    steps = n_vertex_steps = 0
    previous = None
    while steps < max_steps:
        if previous is not None and np.array_equal(previous, block.alpha, equal_nan=True):
            break
        previous = block.alpha.copy()
        if face_steps:
            steps += block.face.run(max_steps - steps)
            if atoms is not None:
                atoms = Atoms(block.alpha)
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
        assert atoms is not None  # away and pairwise variants
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
