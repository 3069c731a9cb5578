"""Every number a user sees about a solution: objectives, gap, KKT residuals, b, ξ.

The solvers, the estimator's ``solution_`` record, the validation suite and the
benchmarks all call :func:`diagnose`, so they agree by construction.

Definitions (for a machine of the unified table, see :mod:`msvm.machines`):

* **Dual objective** D(α) = −J(α) = γᵀα − ½ αᵀHα (the maximisation form).
* **Primal objective** P = ½ Σ_c ‖w_c‖² + C Σ_i w_i loss(ξ_i), with
  w_i the example weights (1 unless weighted, :mod:`msvm.problem`),
  w_c = Σ_i β_ic φ(x_i),
  b from the KKT conditions and the smallest feasible ξ for that (w, b):
  hinge loss: ξ_ir = max(0, max_{p in slack r} γ_p − ν̄_p·h(x_i));
  squared loss (M-SVM²): min_ξ Σ_k ξ_k² + (Σ_k ξ_k)² s.t. ξ_k ≥ r_k, whose
  solution is ξ_k = max(r_k, t) with t the root of Σ_k max(r_k, t) = −t
  (KKT of that small QP; found exactly by sorting).  See :mod:`msvm.machines`
  for why this, and not seed 001's printed M = δ_kl − 1/Q, is the M-SVM²'s
  slack penalty.
  Any feasible (w, b, ξ) gives P ≥ P* ≥ D* ≥ D, so the gap P − D ≥ 0 bounds
  the suboptimality of α whatever the solver.
* **b from KKT** (seed 000 §4.1, generalised): every free variable
  (0 < α_ip, its slack not at capacity C_i = C w_i) has an active margin constraint,
  ν̄_p·b = −∂J/∂α_ip; within a slack group at capacity the gradients of the
  positive variables are equal, (ν̄_p − ν̄_q)·b = −(g_p − g_q).  b is the
  least-squares solution of these equations in span(U) (the directions the
  constraints see, which also fixes the gauge of WW and CS).  When they do
  not determine b (every variable at a bound, as with a tiny C), the hinge
  machines take the centre of the b the KKT inequalities allow (their
  analytic centre: with two classes the middle of b's interval, which libsvm
  takes); the M-SVM² minimises its smooth primal over b.
* **KKT residuals** per constraint family, scaled by the largest capacity
  C max_i w_i (C without weights; max(1, max α) for
  the M-SVM², which has no upper bound): ``stationarity`` is the natural
  residual ‖α − Π(α − ∇J − Aᵀb)‖∞ with Π the projection onto each example's
  box/capped simplex; ``bounds`` the violation of α ≥ 0 and the capacities;
  ``equality`` the residual of the bias constraints.
* **KKT violation** in gradient units (the stopping rule of BENCHMARKS.md):
  the largest first-order decrease available to a single variable or, in a
  slack group at capacity, to a pair of its variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import null_space

from msvm.problem import DualProblem, DualSolution

__all__ = ["Diagnostics", "diagnose", "bias_from_kkt", "primal_objective", "kkt_violation",
           "project_feasible", "repair_equality"]

# α_ip ≤ ZERO_TOL · C_i counts as "at zero", a slack sum ≥ (1 − ZERO_TOL) C_i as "at capacity"
# (C_i = C w_i, the example's capacity; 1 instead of C_i for the quadratic loss).
ZERO_TOL = 1e-8


@dataclass
class Diagnostics:
    """The numbers that certify a dual solution (see the module docstring).

    See Also
    --------
    diagnose : Computes it.

    Examples
    --------
    >>> import json
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import diagnose
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> d = diagnose(problem, get_solver("cvxpy").solve(problem))
    >>> d.b_method, sorted(d.kkt_residuals)
    ('kkt', ['bounds', 'equality', 'stationarity'])
    >>> d.kkt_residual < 1e-6   # the largest of the residuals
    True
    >>> record = json.loads(json.dumps(d.as_dict()))   # plain Python: JSON-serialisable
    >>> record["b_method"], len(record["b"])
    ('kkt', 3)
    """

    dual_objective: float
    primal_objective: float
    duality_gap: float
    relative_gap: float
    kkt_violation: float
    kkt_residuals: dict = field(default_factory=dict)
    b: np.ndarray | None = None
    b_method: str = "none"
    xi: np.ndarray | None = None
    n_support: int = 0

    @property
    def kkt_residual(self) -> float:
        """Largest of the scaled KKT residuals."""
        return max(self.kkt_residuals.values()) if self.kkt_residuals else 0.0

    def as_dict(self) -> dict:
        """Plain-Python view (JSON-serialisable)."""
        return {
            "dual_objective": self.dual_objective,
            "primal_objective": self.primal_objective,
            "duality_gap": self.duality_gap,
            "relative_gap": self.relative_gap,
            "kkt_violation": self.kkt_violation,
            "kkt_residual": self.kkt_residual,
            **{f"kkt_{k}": v for k, v in self.kkt_residuals.items()},
            "b": None if self.b is None else [float(v) for v in self.b],
            "b_method": self.b_method,
            "n_support": self.n_support,
        }


# ---------------------------------------------------------------- helpers
def _group_masks(problem: DualProblem):
    """Boolean (m, P) masks, one per slack index, of the slots sharing that slack."""
    return [problem.slack == r for r in range(problem.machine.n_slacks)]


def _residual_scale(problem: DualProblem, alpha: np.ndarray) -> float:
    if problem.machine.loss == "hinge":
        return problem.scale
    return max(1.0, float(alpha.max(initial=0.0)))


def _zero_tol(problem: DualProblem) -> np.ndarray:
    """Per-example threshold (m,) of "at zero" and "at capacity" (ZERO_TOL · C_i)."""
    if problem.machine.loss == "hinge":
        return ZERO_TOL * problem.capacity
    return np.full(problem.n_samples, ZERO_TOL)


def _project_capped_simplex(v: np.ndarray, member: np.ndarray, cap) -> np.ndarray:
    """Row-wise projection onto {x ≥ 0, Σ_members x ≤ cap_i}; non-members are left at 0.

    ``cap`` is one capacity for every row or an (n,) array of them.
    """
    x = np.where(member, np.maximum(v, 0.0), 0.0)
    cap = np.broadcast_to(np.asarray(cap, dtype=np.float64), (v.shape[0],))
    over = x.sum(axis=1) > cap
    if np.any(over):
        cap = cap[over][:, None]
        u = np.where(member[over], v[over], -np.inf)
        u = -np.sort(-u, axis=1)
        finite = np.isfinite(u)
        css = np.cumsum(np.where(finite, u, 0.0), axis=1)
        j = np.arange(1, u.shape[1] + 1)
        cond = finite & (u - (css - cap) / j > 0)
        rho = cond.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
        tau = (css[np.arange(len(rho)), rho] - cap[:, 0]) / (rho + 1)
        x[over] = np.where(member[over], np.maximum(v[over] - tau[:, None], 0.0), 0.0)
    return x


def _project(problem: DualProblem, v: np.ndarray) -> np.ndarray:
    """Projection onto the feasible set without the equality constraints."""
    if problem.machine.loss == "squared":
        return np.where(problem.active, np.maximum(v, 0.0), 0.0)
    if problem.machine.own_slacks:   # every group one variable: a box
        return np.where(problem.active, np.clip(v, 0.0, problem.capacity[:, None]), 0.0)
    out = np.zeros_like(v)
    for member in _group_masks(problem):
        out += _project_capped_simplex(v, member & problem.active, problem.capacity)
    return out


def project_feasible(problem: DualProblem, v: np.ndarray) -> np.ndarray:
    """Euclidean projection of v onto the feasible set of the dual.

    Without a bias that is the per-example projection onto the box and the
    slack groups.  With a bias the equality constraints Aα = 0 join them:
    the projection is Π(v − Aᵀλ*) with Π the projection without them and λ*
    the maximiser of the concave dual φ(λ) = min_{α∈Π-set} ½‖α − v‖² + λᵀAα,
    whose gradient is AΠ(v − Aᵀλ) (L-BFGS over r ≤ Q − 1 multipliers); the
    round-off left in Aα is then removed by :func:`repair_equality`.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import project_feasible
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> v = alpha + 0.3   # infeasible: among others, the inactive slots must stay 0
    >>> problem.check_feasible(v), problem.check_feasible(project_feasible(problem, v))
    (False, True)
    >>> np.allclose(project_feasible(problem, alpha), alpha)   # a feasible α stays
    True
    """
    from scipy.optimize import minimize

    x = _project(problem, v)
    if not problem.fit_intercept:
        return x
    A = problem.equality_matrix()
    scale = max(problem.scale if problem.machine.loss == "hinge" else 0.0,
                float(np.max(np.abs(v), initial=0.0)), 1e-300)
    if np.max(np.abs(A @ x.ravel()), initial=0.0) <= 1e-12 * scale or A.shape[0] == 0:
        return x

    def negative_dual(lam):
        a = _project(problem, v - (A.T @ lam).reshape(v.shape))
        r = A @ a.ravel()
        return -(0.5 * float(np.sum((a - v) ** 2)) + float(lam @ r)), -r

    lam = minimize(negative_dual, np.zeros(A.shape[0]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-13 * scale, "ftol": 0.0, "maxiter": 1000}).x
    x = _project(problem, v - (A.T @ lam).reshape(v.shape))
    repaired = repair_equality(problem, x)
    return x if repaired is None else repaired


def repair_equality(problem: DualProblem, alpha: np.ndarray, rtol: float = 0.0,
                    bounded: bool = False) -> np.ndarray | None:
    """α moved by the least-norm δ with A(α + δ) = 0 on its positive variables, or None.

    A variable of a full slack group moves only with the others of its group,
    their sum kept (one more row per full group).  None when no such δ keeps
    every constraint (α ≥ 0, slack groups ≤ ``problem.capacity``); a residual at
    most ``rtol`` times max α is left alone (the α present, not the largest
    capacity C max wᵢ, which wide weights or a large C can put orders of
    magnitude above every α: the residual would then be "small" while as large
    as the α themselves).
    With ``bounded`` (hinge machines whose slack groups are single variables),
    where the least-norm δ would leave the box, δ is the least-norm one within
    it (:func:`_least_norm_in_box`): variables may then reach 0 or C, and the
    caller's KKT check decides whether the result is still optimal.

    Examples
    --------
    >>> import numpy as np
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import repair_equality
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> broken = alpha.copy()
    >>> broken[4] *= 0.5   # point 4 is a support vector: Aα = 0 no longer holds
    >>> problem.check_feasible(broken)
    False
    >>> repaired = repair_equality(problem, broken)
    >>> problem.check_feasible(repaired)
    True
    >>> bool(np.abs(problem.equality_residual(repaired)).max() < 1e-12)
    True
    """
    cap = problem.capacity
    out = alpha.copy()
    # A α = Uᵀ Σ_i β̄_i (the rows of problem.equality_matrix(), not formed: only the
    # columns of the positive variables are needed).
    residual = problem.equality_basis.T @ problem.equality_residual(out)
    scale = float(out.max(initial=0.0))
    if np.max(np.abs(residual), initial=0.0) <= rtol * scale:
        return out
    positive = np.flatnonzero(((out > 0) & problem.active).ravel())
    if len(positive) == 0:
        return None
    # δ = P Aᵀλ with P the projector onto {Σ_group δ = 0} of every full group (a full
    # singleton group: its variable stays), and (A P Aᵀ) λ = −r: r × r, r ≤ Q.  A's
    # columns are Uᵀν_{y,p} (``problem.nu_rows``), so A P Aᵀ = Uᵀ (NᵀN) U with N the
    # sparse rows ν_{y,p} (centred over each full group), never the dense
    # r × (positive variables) matrix.
    i, p = np.divmod(positive, problem.n_slots)
    N = problem.nu_rows[problem.y[i] * problem.n_slots + p]
    hinge = problem.machine.loss == "hinge"
    if hinge:
        full = np.flatnonzero(problem.group_sums(out)[i, p] >= cap[i] * (1 - 1e-12))
        groups, inverse = np.unique(problem.slack_cell[i[full], p[full]], return_inverse=True)
        member = sp.csr_matrix((np.ones(len(full)), (full, inverse)),
                               shape=(len(positive), len(groups)))
        mean = sp.diags(1.0 / np.bincount(inverse, minlength=len(groups))) @ (member.T @ N)
        N = (N - member @ mean).tocsr()
    U = problem.equality_basis
    lam = np.linalg.lstsq(U.T @ (N.T @ N).toarray() @ U, -residual, rcond=None)[0]
    flat = out.reshape(-1)
    start = flat[positive]
    flat[positive] += N @ (U @ lam)
    if np.any(flat[positive] < 0) or (
            hinge and np.any(problem.slack_sums(out) > cap[:, None] * (1 + 1e-12))):
        if not (bounded and hinge and problem.machine.own_slacks):
            return None
        # A full singleton group stays; the others move within [−α, C − α].
        moving = np.setdiff1d(np.arange(len(positive)), full)
        delta = _least_norm_in_box(np.asarray((N[moving] @ U).T), residual, -start[moving],
                                   cap[i[moving]] - start[moving], max(rtol, 1e-12) * scale)
        if delta is None:
            return None
        flat[positive] = start
        flat[positive[moving]] = np.clip(start[moving] + delta, 0.0, cap[i[moving]])
    return out


def _least_norm_in_box(M: np.ndarray, r: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                       tol: float, max_iter: int = 50) -> np.ndarray | None:
    """The least-norm δ with Mδ = −r and lo ≤ δ ≤ hi, or None (none found within tol).

    δ(λ) = clip(Mᵀλ, lo, hi) minimises ½‖δ‖² − λᵀ(Mδ + r) over the box; the
    dual function of λ is concave with gradient −(Mδ(λ) + r), so semismooth
    Newton steps on λ (the Hessian −M_F M_Fᵀ over the unclipped variables F),
    with a backtracking search on the dual, find the λ whose δ solves the
    equalities.  Where they have no solution within the box, the dual grows
    without end and the residual stays above ``tol``: None.
    """
    def dual(lam):
        z = M.T @ lam
        delta = np.clip(z, lo, hi)
        res = M @ delta + r
        return 0.5 * float(delta @ delta) - float(lam @ res), z, delta, res
    lam = np.zeros(len(r))
    value, z, delta, res = dual(lam)
    for _ in range(max_iter):
        if np.max(np.abs(res), initial=0.0) <= tol:
            return delta
        unclipped = (z > lo) & (z < hi)
        step = -np.linalg.lstsq(M[:, unclipped] @ M[:, unclipped].T, res, rcond=None)[0]
        slope = -float(res @ step)          # the dual's directional derivative, > 0
        t = 1.0
        while True:
            trial = dual(lam + t * step)
            if trial[0] >= value + 0.25 * t * slope or t < 1e-12:
                break
            t *= 0.5
        if not trial[0] > value:
            return None
        lam = lam + t * step
        value, z, delta, res = trial
    return delta if np.max(np.abs(res), initial=0.0) <= tol else None


def _margins(problem: DualProblem, F_plain: np.ndarray, b: np.ndarray) -> np.ndarray:
    """r_ip = γ_p − ν̄_p·h(x_i): how much constraint (i, p) is violated (≤ 0 when met)."""
    h = F_plain + b[None, :]
    r = problem.targets - problem.margin_terms(h)
    return np.where(problem.active, r, -np.inf)


def _squared_slacks(r: np.ndarray) -> np.ndarray:
    """Minimiser of Σ ξ² + (Σ ξ)² subject to ξ ≥ r (row-wise; −inf marks absent slots).

    KKT: ξ_k = max(r_k, t) with t = −Σ_k ξ_k.  g(t) = t + Σ_k max(r_k, t) is
    strictly increasing, so with the top j margins above t its root is
    t = −(sum of the top j) / (n − j + 1); the consistent j is found by sorting.
    """
    n = np.isfinite(r).sum(axis=1)
    u = -np.sort(-r, axis=1)
    css = np.cumsum(np.where(np.isfinite(u), u, 0.0), axis=1)
    css = np.concatenate([np.zeros((len(r), 1)), css], axis=1)  # css[:, j] = sum of top j
    j = np.arange(r.shape[1] + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -css / (n[:, None] - j + 1)
    u_pad = np.concatenate([np.full((len(r), 1), np.inf), u, np.full((len(r), 1), -np.inf)], 1)
    ok = (j <= n[:, None]) & (u_pad[:, :-1] >= t) & (u_pad[:, 1:] <= t)
    best_t = t[np.arange(len(r)), np.argmax(ok, axis=1)]
    return np.where(np.isfinite(r), np.maximum(r, best_t[:, None]), 0.0)


def _squared_loss(xi: np.ndarray, weight: np.ndarray) -> float:
    """Σ_i w_i (Σ_k ξ_ik² + (Σ_k ξ_ik)²)."""
    return float(weight @ (np.sum(xi**2, axis=1) + xi.sum(axis=1) ** 2))


# ------------------------------------------------------------ the numbers
def _checked(problem: DualProblem, name: str, value, shape: tuple) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, finite (ValueError naming ``name``).

    A solution of another problem or a NaN one otherwise failed with numpy's index
    or broadcasting errors deep in the computation, or gave NaN or finite but
    meaningless numbers.
    """
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers of shape {shape}, got "
                         f"{type(value).__name__}.") from None
    if out.shape != shape:
        raise ValueError(f"{name} has shape {out.shape}, but this problem's is {shape} "
                         f"({problem.n_samples} examples, {problem.n_slots} slots, "
                         f"{problem.n_classes} classes): a solution of another problem?")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return out


def primal_objective(problem: DualProblem, alpha, b, F=None):
    """Primal objective of (w(α), b, smallest feasible ξ); returns (P, ξ).

    Parameters
    ----------
    problem : DualProblem
    alpha : ndarray of shape (n_samples, n_slots)
        Dual variables; w(α) is the primal weight vector they define.
    b : ndarray of shape (n_classes,)
        The bias (zeros without one).
    F : ndarray of shape (n_samples, n_classes), optional
        The scores of α at the training points, when already computed.

    Returns
    -------
    P : float
        ½‖w(α)‖² + C Σᵢ wᵢ loss(ξᵢ).
    xi : ndarray of shape (n_samples, n_slacks)
        The smallest slacks feasible for (w(α), b).

    Examples
    --------
    Any b gives a primal value above the dual optimum; the b of the KKT
    conditions (:func:`bias_from_kkt`) closes the gap.

    >>> import numpy as np
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import diagnose, primal_objective
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> d = diagnose(problem, alpha)
    >>> P, xi = primal_objective(problem, alpha, d.b)
    >>> bool(np.isclose(P, d.primal_objective)), xi.shape
    (True, (30, 3))
    >>> P_zero, _ = primal_objective(problem, alpha, np.zeros(3))
    >>> round(P, 3), round(P_zero, 3)
    (3.889, 4.81)
    >>> bool(np.isclose(P, d.dual_objective))   # zero duality gap at the optimum
    True
    """
    alpha = _checked(problem, "alpha", alpha, (problem.n_samples, problem.n_slots))
    b = _checked(problem, "b", b, (problem.n_classes,))
    if F is not None:
        F = _checked(problem, "F", F, (problem.n_samples, problem.n_classes))
    beta = problem.beta(alpha)
    if F is None:
        F = problem.scores(beta)
    F_plain = F - problem.kernel_shift[:, None] * beta
    reg = 0.5 * float(np.sum(beta * F_plain))
    r = _margins(problem, F_plain, b)
    w = problem.sample_weight
    if problem.machine.loss == "squared":
        xi = _squared_slacks(r)
        loss = _squared_loss(xi, w)
    elif problem.machine.own_slacks:
        xi = np.zeros((problem.n_samples, problem.machine.n_slacks))
        ii, pp = problem.flat_index()
        xi[ii, problem.slack[ii, pp]] = np.maximum(r[ii, pp], 0.0)
        loss = float(w @ xi.sum(axis=1))
    else:
        xi = np.stack([np.max(np.where(mk, r, -np.inf), axis=1) for mk in _group_masks(problem)],
                      axis=1)
        xi = np.maximum(xi, 0.0)
        loss = float(w @ xi.sum(axis=1))
    return reg + problem.C * loss, xi


def bias_from_kkt(problem: DualProblem, alpha, grad, F=None):
    """b from the KKT conditions; returns (b, method).

    method is 'kkt' (the equalities of the free variables determine b),
    'centre' (hinge loss: the analytic centre of the set of b the inequalities
    allow), 'primal' (quadratic loss: b minimises the primal)
    or 'none' (no bias).

    Parameters
    ----------
    problem : DualProblem
    alpha : ndarray of shape (n_samples, n_slots)
    grad : ndarray of shape (n_samples, n_slots)
        The dual's gradient at α (:meth:`~msvm.problem.DualProblem.gradient`).
    F : ndarray of shape (n_samples, n_classes), optional
        The scores of α, when already computed (the quadratic loss uses them).

    Returns
    -------
    b : ndarray of shape (n_classes,)
    method : str
        How b was found (above).

    Examples
    --------
    >>> import numpy as np
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import bias_from_kkt
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> b, method = bias_from_kkt(problem, alpha, problem.gradient(alpha))
    >>> method, b.round(3).tolist()
    ('kkt', [0.088, -0.098, 0.01])
    >>> bool(abs(b.sum()) < 1e-12)   # b in span(U): the Weston–Watkins gauge, Σ_c b_c = 0
    True
    """
    Q = problem.n_classes
    if not problem.fit_intercept or problem.equality_basis.shape[1] == 0:
        return np.zeros(Q), "none"
    U = problem.equality_basis
    tol = _zero_tol(problem)
    directions = problem.equality_directions     # (Q, P, r): the coefficient of λ
    positive = (alpha > tol[:, None]) & problem.active
    hinge = problem.machine.loss == "hinge"
    if hinge:
        # A variable of a group below capacity has an active constraint of its own.
        positive &= problem.slack >= 0
        full = positive & (problem.group_sums(alpha) >= (problem.capacity - tol)[:, None])
        positive &= ~full
    i, p = np.nonzero(positive)
    rows = [directions[problem.y[i], p]]
    rhs = [-grad[i, p]]
    if hinge:
        # The positive variables of a group at capacity share the group's multiplier:
        # each is paired with the first of its group.
        i, p = np.nonzero(full)
        group = problem.slack_cell[i, p]
        order = np.argsort(group, kind="stable")
        i, p, group = i[order], p[order], group[order]
        starts = np.diff(group, prepend=-1) != 0
        lead = np.flatnonzero(starts)[np.cumsum(starts) - 1]
        i0, p0, i, p = i[lead[~starts]], p[lead[~starts]], i[~starts], p[~starts]
        rows.append(directions[problem.y[i], p] - directions[problem.y[i0], p0])
        rhs.append(-(grad[i, p] - grad[i0, p0]))
    Amat = np.concatenate(rows)
    bvec = np.concatenate(rhs)
    u, s, vt = np.linalg.svd(Amat, full_matrices=False)
    rank = int(np.sum(s > 1e-8))
    if rank == U.shape[1]:
        lam = np.linalg.lstsq(Amat, bvec, rcond=None)[0]
        return U @ lam, "kkt"
    if hinge:
        # λ = λ0 + Zμ: λ0 solves the equalities, Z spans the directions they leave free.
        lam0 = vt[:rank].T @ ((u[:, :rank].T @ bvec) / s[:rank])
        free = null_space(vt[:rank]) if rank else np.eye(U.shape[1])
        return _bias_from_centre(problem, alpha, grad, lam0, free), "centre"
    return _bias_from_primal(problem, alpha, F), "primal"


def _bias_from_primal(problem: DualProblem, alpha, F=None):
    """b minimising the primal objective for the w given by α (quadratic loss).

    The loss is smooth and convex in λ (b = Uλ); L-BFGS minimises it.  Nothing of
    size m·P·Q is formed: the gradient sums the multipliers by label first.
    """
    from scipy.optimize import minimize

    U = problem.equality_basis
    Q = problem.n_classes
    beta = problem.beta(alpha)
    if F is None:
        F = problem.scores(beta)
    F_plain = F - problem.kernel_shift[:, None] * beta
    base = _margins(problem, F_plain, np.zeros(Q))  # r at b = 0
    w = problem.sample_weight
    directions = problem.equality_directions              # (Q, P, r)

    def loss_and_grad(lam):
        r = np.where(problem.active, base - (directions @ lam)[problem.y], -np.inf)
        xi = _squared_slacks(r)
        # Envelope theorem: ∂loss/∂r_k is the multiplier 2(ξ_k + Σ ξ) where ξ_k = r_k.
        mult = np.where(problem.active & (xi <= r), 2 * (xi + xi.sum(1, keepdims=True)), 0.0)
        by_label = np.zeros(directions.shape[:2])
        np.add.at(by_label, problem.y, w[:, None] * mult)
        return _squared_loss(xi, w), -np.einsum("yp,ypr->r", by_label, directions)

    lam = minimize(loss_and_grad, np.zeros(U.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15}).x
    return U @ lam


def _kkt_conditions(problem: DualProblem, alpha, grad):
    """The hinge KKT conditions as rows c + a·b ≤ 0, grouped by the a they share.

    The conditions are those :func:`kkt_violation` measures, written with
    G = grad + ν·b: G_ip ≤ 0 for a positive variable ("down"), −G_ip ≤ 0 for
    one that may grow ("up"), and G_ip − G_iq ≤ 0 for a positive p and any q
    of a slack group at capacity ("swap").  a depends only on the label and
    the slots (a = ±ν_{y,p}, or ν_{y,p} − ν_{y,q}), so of the conditions that
    share one only the largest c binds.  Returns a, sparse (rows, Q), and c.
    """
    tol = _zero_tol(problem)
    positive = (alpha > tol[:, None]) & problem.active
    Q, P = problem.n_classes, problem.n_slots
    key_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []

    def add(kind, i, p, q, c):
        key_parts.append(((kind * Q + problem.y[i]) * P + p) * P + q)
        value_parts.append(c)

    if problem.machine.own_slacks:
        full = alpha >= (problem.capacity - tol)[:, None]
        i, p = np.nonzero(positive)
        add(0, i, p, p, grad[i, p])
        i, p = np.nonzero(problem.active & ~full)
        add(1, i, p, p, -grad[i, p])
    else:
        sums = problem.slack_sums(alpha)
        for r, member in enumerate(_group_masks(problem)):
            full = sums[:, r] >= problem.capacity - tol
            i, p = np.nonzero(positive & member)
            add(0, i, p, p, grad[i, p])
            i, q = np.nonzero(member & problem.active & ~full[:, None])
            add(1, i, q, q, -grad[i, q])
            # Every positive p of a full group against every other active q of it.
            i, p = np.nonzero(positive & member & full[:, None])
            lows = member[i] & problem.active[i]
            lows[np.arange(len(p)), p] = False
            k, q = np.nonzero(lows)
            add(2, i[k], p[k], q, grad[i[k], p[k]] - grad[i[k], q])
    keys, values = np.concatenate(key_parts), np.concatenate(value_parts)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.diff(keys, prepend=-1))
    c = np.maximum.reduceat(values, starts) if len(starts) else values
    keys = keys[starts]
    kind = keys // (Q * P * P)
    row_p = keys // P % (Q * P)                 # y·P + p, the row of ν_{y,p}
    row_q = row_p - row_p % P + keys % P        # y·P + q
    nu = problem.nu_rows
    sign, swap = np.where(kind == 1, -1.0, 1.0), (kind == 2) * 1.0
    a = (sp.diags(sign) @ nu[row_p] - sp.diags(swap) @ nu[row_q]).tocsr()
    # Conditions of other labels and slots can share a too (WW's "down" on (y, p)
    # and "up" on (p, y) both read b_y − b_p): one row per distinct a.
    a.sum_duplicates()
    a.eliminate_zeros()
    counts = np.diff(a.indptr)
    row = np.repeat(np.arange(a.shape[0]), counts)
    slot = np.arange(a.nnz) - np.repeat(a.indptr[:-1], counts)
    pattern = np.zeros((a.shape[0], 2 * counts.max(initial=0)))
    pattern[row, 2 * slot], pattern[row, 2 * slot + 1] = a.indices + 1, a.data
    _, first, inverse = np.unique(pattern, axis=0, return_index=True, return_inverse=True)
    largest = np.full(len(first), -np.inf)
    np.maximum.at(largest, inverse.ravel(), c)
    moving = counts[first] > 0                   # a row without b is no condition on it
    return a[first[moving]], largest[moving]


def _bias_from_centre(problem: DualProblem, alpha, grad, lam0=None, free=None):
    """b at the centre of the hinge KKT inequalities (used when the equalities of the
    free variables leave b undetermined).

    ``lam0`` and ``free`` come from the equalities of :func:`bias_from_kkt`
    (none by default): b = U(λ0 + Zμ) with λ0 their least-squares solution and
    Z (``free``) an orthonormal basis of the directions they leave free.  In
    those directions, for an exact α, the inequalities c + a·b ≤ 0
    (:func:`_kkt_conditions`, the tightest one per direction a) hold exactly for
    the b that minimise the primal objective for the given w: they are the
    complementary slackness of that primal.  Of those b it takes the analytic
    centre, the maximiser of Σ log(−(c + a·b)): with one bound on each side, as
    with two classes, the middle of b's interval, which libsvm takes.  A linear
    program finds a point with room in every inequality first, max_b min_rows
    −(c + a·b) (variables b and the room, rows with ν's few non-zeros), and
    Newton's method goes on from it; where no b leaves room (an inexact α), the
    program's b, of the smallest KKT violation, is the answer.
    """
    from scipy.optimize import linprog

    U = problem.equality_basis
    Q = problem.n_classes
    b0 = np.zeros(Q) if lam0 is None else U @ lam0
    V = U if free is None else U @ free
    a, c = _kkt_conditions(problem, alpha, grad + problem.margin_terms(b0))
    if V.shape[1] < U.shape[1]:
        # Rows the free directions do not move (the equalities among them) leave no room.
        size = np.sqrt(np.asarray(a.multiply(a).sum(axis=1)).ravel())
        moves = np.linalg.norm(a @ V, axis=1) > 1e-9 * size
        a, c = a[moves], c[moves]
    # The rows are homogeneous in (c, d): solved for c / |c|∞, d scales back.  HiGHS
    # reads |c| ≥ 1e20 as infinite (a "Model error" for features of scale 1e150) and
    # its absolute tolerances (1e-7) swamp the c of a tiny C or of features of 1e-150.
    unit = float(np.max(np.abs(c), initial=0.0))
    unit = unit if 0.0 < unit < np.inf else 1.0
    c = c / unit
    # c + a·(b0 + d) ≤ t with d in span(V); minimise t (−t is the room).  The room is
    # capped: where no inequality bounds some direction of d, d stays where it is met.
    complement = sp.csr_matrix(null_space(V.T).T)
    room = 1.0 + float(np.max(np.abs(c), initial=0.0))
    lp = dict(c=np.r_[np.zeros(Q), 1.0],
              A_ub=sp.hstack([a, -np.ones((len(c), 1))]).tocsr(), b_ub=-c,
              A_eq=sp.hstack([complement, sp.csr_matrix((complement.shape[0], 1))]),
              b_eq=np.zeros(complement.shape[0]),
              bounds=[(None, None)] * Q + [(-room, None)])
    for method in ("highs-ds", "highs-ipm"):   # feasible and bounded: only round-off fails
        res = linprog(**lp, method=method)
        if res.status == 0:
            break
    else:
        raise RuntimeError(f"The linear program for b failed in HiGHS: {res.message}")
    mu = V.T @ res.x[:Q]
    if res.x[Q] < 0:   # room everywhere: the analytic centre, from this interior point
        mu = _analytic_centre(a, c, V, mu)
    return b0 + V @ (mu * unit)


def _analytic_centre(a, c, V, mu, max_iter: int = 50):
    """The maximiser of Σ_k log(−(c_k + a_k·Vμ)) by damped Newton steps from an interior μ.

    ``a`` is sparse (rows, Q), V (Q, k).  Returns the starting μ when there is no
    centre (some direction is bounded on one side only: along it the rooms double
    with every step, until the Hessian loses rank to working precision) or the
    steps do not converge, and the last μ when round-off stops the line search.
    A direction no row depends on keeps its starting value.
    """
    def value(mu):
        room = -(c + a @ (V @ mu))
        return (-np.sum(np.log(room)) if np.all(room > 0) else np.inf), room

    f, room = value(mu)
    start, start_rank = mu, None
    for _ in range(max_iter):
        g = V.T @ (a.T @ (1.0 / room))
        H = V.T @ (a.T @ sp.diags(1.0 / room**2) @ a).toarray() @ V
        step, _, rank, _ = np.linalg.lstsq(H, -g, rcond=None)
        start_rank = rank if start_rank is None else start_rank
        if rank < start_rank:
            return start
        decrement = -float(g @ step)
        if decrement <= 1e-12:
            return mu
        t = 1.0
        while True:   # backtracking keeps every room positive and f falling
            f_new, room_new = value(mu + t * step)
            if f_new <= f - 0.25 * t * decrement or t < 1e-12:
                break
            t *= 0.5
        if not f_new < f:
            return mu
        mu, f, room = mu + t * step, f_new, room_new
    return start


def kkt_violation(problem: DualProblem, alpha, G, per_example: bool = False):
    """Largest first-order decrease available (gradient units); G includes ν̄·b.

    With ``per_example=True`` returns the (m,) array of each example's own
    largest violation (its variables only; the overall value is its max).
    Removing an example whose α is zero leaves every other example's
    violation unchanged, which is how :func:`msvm.model_selection.loo_error`
    certifies that such a removal keeps the solution optimal.

    Parameters
    ----------
    problem : DualProblem
    alpha : ndarray of shape (n_samples, n_slots)
    G : ndarray of shape (n_samples, n_slots)
        The dual's gradient at α plus the bias's margin terms ν̄·b.
    per_example : bool, default=False
        Return each example's largest violation instead of the overall one.

    Returns
    -------
    float or ndarray of shape (n_samples,)

    Examples
    --------
    G is the gradient of the dual plus the margin terms ν̄·b of the bias:

    >>> import numpy as np
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import bias_from_kkt, kkt_violation
    >>> from msvm.solvers import get_solver
    >>> from msvm.teaching import multiclass_set
    >>> X, y = multiclass_set(3, 30, random_state=0)
    >>> problem = MultiClassSVC(model="ww", C=1.0, fit_intercept=True).prepare_fit(X, y).problem
    >>> alpha = get_solver("cvxpy").solve(problem).alpha
    >>> grad = problem.gradient(alpha)
    >>> b, _ = bias_from_kkt(problem, alpha, grad)
    >>> G = np.where(problem.active, grad + problem.margin_terms(b), 0.0)
    >>> kkt_violation(problem, alpha, G) < 1e-6
    True
    >>> kkt_violation(problem, alpha, G, per_example=True).shape
    (30,)
    >>> kkt_violation(problem, alpha, grad) > 0.1   # without b the optimum looks violated
    True
    """
    alpha = _checked(problem, "alpha", alpha, (problem.n_samples, problem.n_slots))
    G = _checked(problem, "G", G, (problem.n_samples, problem.n_slots))
    tol = _zero_tol(problem)
    positive = (alpha > tol[:, None]) & problem.active
    inf = np.inf
    if problem.machine.loss == "squared":
        down = np.where(positive, G, -inf).max(axis=1, initial=0.0)
        up = np.where(problem.active, -G, -inf).max(axis=1, initial=0.0)
        worst = np.maximum(np.maximum(down, up), 0.0)
    elif problem.machine.own_slacks:
        # A group of one variable: down if positive, up if below its capacity.
        full = alpha >= (problem.capacity - tol)[:, None]
        down = np.where(positive, G, -inf)
        up = np.where(problem.active & ~full, -G, -inf)
        worst = np.maximum(np.maximum(down, up).max(axis=1, initial=-inf), 0.0)
    else:
        sums = problem.slack_sums(alpha)
        worst = np.zeros(problem.n_samples)
        for r, member in enumerate(_group_masks(problem)):
            m_act = member & problem.active
            full = sums[:, r] >= problem.capacity - tol
            down = np.where(positive & member, G, -inf).max(axis=1, initial=-inf)
            lowest = np.where(m_act, G, inf).min(axis=1, initial=inf)
            up = np.where(full, -inf, -lowest)
            swap = np.where(full & np.isfinite(down), down - lowest, -inf)
            worst = np.maximum(worst, np.maximum(np.maximum(down, up), swap))
    return worst if per_example else float(worst.max(initial=0.0))


def diagnose(problem: DualProblem, solution: DualSolution | np.ndarray) -> Diagnostics:
    """Objectives, duality gap, KKT residuals, b and ξ of a dual solution.

    Parameters
    ----------
    problem : DualProblem
    solution : DualSolution or ndarray of shape (m, P)
        A solver's result, or α alone.  Any α of the problem's shape is
        diagnosed (an infeasible one shows in ``kkt_residuals['bounds']``).

    Returns
    -------
    Diagnostics

    Raises
    ------
    ValueError
        If α (or the solution's scores) is not of this problem's shape or not finite.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC
    >>> from msvm.diagnostics import diagnose
    >>> from msvm.solvers import get_solver
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = MultiClassSVC(model="ww", C=1.0).prepare_fit(X, y).problem
    >>> solution = get_solver("s2do").solve(problem, tol=1e-6)
    >>> d = diagnose(problem, solution)
    >>> d.relative_gap < 1e-5, d.kkt_violation <= 1e-6
    (True, True)
    >>> d.n_support
    47
    """
    alpha = solution.alpha if isinstance(solution, DualSolution) else solution
    alpha = _checked(problem, "alpha", alpha, (problem.n_samples, problem.n_slots))
    F = solution.scores if isinstance(solution, DualSolution) else None
    if F is not None:
        F = _checked(problem, "solution.scores", F, (problem.n_samples, problem.n_classes))
    beta = problem.beta(alpha)
    if F is None:
        F = problem.scores(beta)
    grad = problem.gradient(alpha, F)
    dual = -(0.5 * float(np.sum(beta * F)) - float(np.sum(problem.targets * alpha)))
    b, b_method = bias_from_kkt(problem, alpha, grad, F)
    primal, xi = primal_objective(problem, alpha, b, F)
    G = np.where(problem.active, grad + problem.margin_terms(b), 0.0)
    scale = _residual_scale(problem, alpha)
    residuals = {
        "stationarity": float(np.max(np.abs(alpha - _project(problem, alpha - G)), initial=0.0))
        / scale,
        "bounds": float(np.max(np.abs(alpha - _project(problem, alpha)), initial=0.0)) / scale,
    }
    if problem.fit_intercept:
        residuals["equality"] = float(np.max(np.abs(problem.equality_residual(alpha)))) / scale
    gap = primal - dual
    return Diagnostics(
        dual_objective=dual,
        primal_objective=primal,
        duality_gap=gap,
        relative_gap=gap / max(abs(primal), abs(dual), 1e-300),
        kkt_violation=kkt_violation(problem, alpha, G),
        kkt_residuals=residuals,
        b=b,
        b_method=b_method,
        xi=xi,
        n_support=int(np.count_nonzero(np.any(np.abs(beta) > 0, axis=1))),
    )
