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
import scipy.linalg
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


def polish(problem: DualProblem, qp: ExplicitQP, x: np.ndarray):
    """Refine an approximate solution by an active-set method started from its guess.

    Interior-point answers are accurate in objective but leave every variable
    slightly off its bound.  Guess the active set (variables near zero, slack
    groups near capacity) at a few thresholds and run a primal-dual active-set
    iteration from each guess: solve the equality-constrained QP on the set by
    one dense KKT solve, fix variables pushed below zero (groups pushed over
    capacity), free the fixed ones whose multiplier has the wrong sign, repeat.
    The candidate with the smallest KKT residual (:func:`msvm.diagnostics.diagnose`)
    wins, the unpolished answer included.  Returns (x, λ_E, residual): λ_E are
    the multipliers of the bias constraints (b = U λ_E), None when the
    unpolished x won; residual is its scaled KKT residual.
    """
    from threadpoolctl import threadpool_limits

    from msvm.diagnostics import diagnose

    # These dense systems are small; multi-threaded LAPACK only adds contention.
    with threadpool_limits(limits=1):
        return _polish(problem, qp, x, diagnose)


def _polish(problem, qp, x, diagnose):
    H = qp.hessian()
    scale = problem.C if problem.machine.loss == "hinge" else max(1.0, float(x.max(initial=0)))
    sums = qp.S @ x if qp.S.shape[0] else np.zeros(0)

    def residual(v):
        return diagnose(problem, qp.to_alpha(problem, v)).kkt_residual

    best, best_res, best_lam = x, residual(x), None
    # Fine thresholds suit interior-point answers, coarse ones stalled ADMM iterates.
    for threshold in (1e-6, 1e-8, 1e-10, 1e-4, 1e-3, 1e-2):
        free = x > threshold * scale
        full = sums >= problem.C * (1 - threshold) if sums.size else np.zeros(0, bool)
        cand, lam = _active_set(qp, H, free, full, problem.C, scale)
        if cand is None:
            continue
        res = residual(cand)
        if res < best_res:
            best, best_res, best_lam = cand, res, lam
        if best_res <= 1e-13:
            break
    return best, best_lam, best_res


def _active_set(qp: ExplicitQP, H, free, full, C, scale, max_iter=30):
    """Primal-dual active-set iterations from (free, full); (x, λ_E) or (None, None)."""
    tol_x, tol_g = 1e-13 * scale, 1e-11
    for _ in range(max_iter):
        x, mult = _solve_on_active_set(qp, H, free, full, C)
        negative = free & (x < -tol_x)
        over = ((qp.S @ x > C + tol_x) & ~full) if full.size else full
        if negative.any() or over.any():
            free = free & ~negative
            full = full | over
            continue
        mu, lam = mult[: int(full.sum())], mult[int(full.sum()):]
        g = H @ x - qp.targets + qp.E.T @ lam
        if full.any():
            g += qp.S[full].T @ mu
        release = ~free & (g < -tol_g)
        loose = np.zeros_like(full)
        loose[np.flatnonzero(full)[mu < -tol_g]] = True
        if not release.any() and not loose.any():
            return np.maximum(x, 0.0), lam
        free = free | release
        full = full & ~loose
    return None, None


def _solve_on_active_set(qp: ExplicitQP, H, free, full, C):
    """Minimiser of the QP with x_¬free = 0, S_full x = C and E x = 0 (one KKT solve).

    Returns (x, μ): the multipliers solve [Hx − t]_free + A_freeᵀ μ = 0, with
    A the rows S_full then E.
    """
    A = np.vstack([qp.S[full].toarray(), qp.E])[:, free]
    rhs = np.concatenate([np.full(int(full.sum()), C), np.zeros(qp.E.shape[0])])
    nf = int(free.sum())
    kkt = np.block([[H[np.ix_(free, free)], A.T], [A, np.zeros((A.shape[0], A.shape[0]))]])
    # Least squares: H restricted to the free set is singular for low-rank kernels.
    sol = scipy.linalg.lstsq(kkt, np.concatenate([qp.targets[free], rhs]),
                             lapack_driver="gelsy", check_finite=False)[0]
    x = np.zeros(qp.n)
    x[free] = sol[:nf]
    return x, sol[nf:]
