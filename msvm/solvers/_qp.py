"""The unified dual as an explicit QP over the active variables (reference solvers).

The Hessian is never formed from the m·P × m·P expansion directly: with
K = L Lᵀ (an eigen-factor, negative eigenvalues from round-off clipped to
zero, i.e. the smallest jitter that makes K PSD) and vec(β) = B α,

    αᵀ H α = Σ_c ‖Lᵀ B_c α‖² + shift · ‖B α‖²

so the QP is available both as a factor G (αᵀHα = ‖Gα‖²) and as a dense H.
Backends use the factor when the kernel has low rank (k·Q < n), the dense H
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from msvm.problem import DualProblem


@dataclass
class ExplicitQP:
    """minimise ½‖G α‖² − tᵀα  s.t.  0 ≤ α,  S α ≤ C,  E α = 0."""

    G: np.ndarray  # (k·Q [+ m·Q], n) factor of the Hessian
    targets: np.ndarray  # (n,)
    S: sp.csr_matrix  # (n_groups, n) slack-group membership (empty for squared loss)
    group: np.ndarray  # (n,) row of S holding each variable (-1 for squared loss)
    E: np.ndarray  # (r, n) independent equality constraints (r = 0 without bias)
    ii: np.ndarray
    pp: np.ndarray
    n_kernel_evaluations: int

    @property
    def n(self) -> int:
        return self.G.shape[1]

    def hessian(self) -> np.ndarray:
        return self.G.T @ self.G

    def to_alpha(self, problem: DualProblem, x: np.ndarray) -> np.ndarray:
        alpha = problem.zeros()
        alpha[self.ii, self.pp] = x
        return alpha


def kernel_factor(problem: DualProblem) -> tuple[np.ndarray, int]:
    """L with K ≈ L Lᵀ (eigenvalues below round-off dropped, negative ones clipped)."""
    K = problem.kernel.gram()
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > max(w.max(initial=0.0), 0.0) * 1e-13
    return V[:, keep] * np.sqrt(w[keep]), K.size


def build(problem: DualProblem) -> ExplicitQP:
    """Assemble the explicit QP of ``problem``."""
    L, n_evals = kernel_factor(problem)
    Q = problem.n_classes
    B = problem.beta_operator()  # (m·Q, n) row-major over (i, c)
    blocks = [(B[c::Q].T @ L).T for c in range(Q)]  # Lᵀ B_c, (k, n) each
    if problem.kernel_shift:
        blocks.append(np.sqrt(problem.kernel_shift) * B.toarray())
    G = np.vstack([np.asarray(blk) for blk in blocks])
    ii, pp = problem.flat_index()
    n = len(ii)
    if problem.machine.loss == "hinge":
        group = ii * problem.machine.n_slacks + problem.slack[ii, pp]
        _, group = np.unique(group, return_inverse=True)
        S = sp.csr_matrix((np.ones(n), (group, np.arange(n))), shape=(group.max() + 1, n))
    else:
        S = sp.csr_matrix((0, n))
        group = np.full(n, -1)
    if problem.fit_intercept:
        E = problem.equality_matrix().reshape(-1, problem.n_samples, problem.n_slots)[:, ii, pp]
    else:
        E = np.zeros((0, n))
    return ExplicitQP(G=G, targets=problem.targets[ii, pp], S=S, group=group, E=E, ii=ii, pp=pp,
                      n_kernel_evaluations=n_evals)


def clean(problem: DualProblem, qp: ExplicitQP, x: np.ndarray) -> np.ndarray:
    """Clip an interior-point/ADMM answer onto the bounds it may overshoot by round-off."""
    x = np.maximum(x, 0.0)
    if problem.machine.loss == "hinge":
        over = np.maximum((qp.S @ x) / problem.C, 1.0)
        x = x / over[qp.group]
    return x


def polish(problem: DualProblem, qp: ExplicitQP, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refine an approximate solution by solving its active set's KKT system exactly.

    Interior-point answers are accurate in objective but leave every variable
    slightly off its bound.  Guess the active set (variables near zero, slack
    groups near capacity) at a few thresholds, solve the equality-constrained
    QP on that set by one dense KKT solve, and keep the result if it is
    feasible and does not increase the objective.  Returns (x, λ_E), where λ_E
    are the multipliers of the bias constraints (b = U λ_E), or λ_E = None
    when no refinement was accepted.
    """
    H = qp.hessian()

    def objective(v):
        return 0.5 * v @ H @ v - qp.targets @ v

    best, best_obj, best_lam = x, objective(x), None
    scale = problem.C if problem.machine.loss == "hinge" else max(1.0, float(x.max(initial=0)))
    sums = qp.S @ x if qp.S.shape[0] else np.zeros(0)
    for threshold in (1e-6, 1e-8, 1e-10):
        free = x > threshold * scale
        full = sums >= problem.C * (1 - threshold) if sums.size else np.zeros(0, bool)
        # Primal active-set repair: variables the solve pushes below zero are fixed
        # at zero, groups it pushes over capacity are fixed at capacity; re-solve.
        for _ in range(50):
            cand, lam = _solve_on_active_set(qp, H, free, full, problem.C)
            negative = free & (cand < -1e-13 * scale)
            over = (qp.S @ cand > problem.C * (1 + 1e-13)) & ~full if sums.size else full
            if not negative.any() and not over.any():
                break
            free &= ~negative
            full |= over
        feasible = cand.min() >= -1e-13 * scale
        if sums.size:
            feasible &= (qp.S @ cand).max() <= problem.C * (1 + 1e-13)
        if qp.E.shape[0]:
            feasible &= np.abs(qp.E @ cand).max() <= 1e-12 * scale
        obj = objective(cand)
        if feasible and obj <= best_obj + 1e-14 * max(1.0, abs(best_obj)):
            best, best_obj, best_lam = np.maximum(cand, 0.0), obj, lam
    return best, best_lam


def _solve_on_active_set(qp: ExplicitQP, H, free, full, C):
    """Minimiser of the QP with x_¬free = 0, S_full x = C and E x = 0 (one KKT solve).

    Returns (x, λ_E) where the multipliers solve [Hx − t]_free + A_freeᵀ μ = 0
    and λ_E are the last r of them.
    """
    A = np.vstack([qp.S[full].toarray(), qp.E])[:, free]
    rhs = np.concatenate([np.full(int(full.sum()), C), np.zeros(qp.E.shape[0])])
    nf = int(free.sum())
    kkt = np.block([[H[np.ix_(free, free)], A.T], [A, np.zeros((A.shape[0], A.shape[0]))]])
    sol = np.linalg.lstsq(kkt, np.concatenate([qp.targets[free], rhs]), rcond=None)[0]
    x = np.zeros(qp.n)
    x[free] = sol[:nf]
    return x, sol[nf + int(full.sum()):]
