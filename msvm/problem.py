"""The one dual problem every solver consumes, and the one solution they return.

A :class:`DualProblem` binds a :class:`~msvm.machines.Machine` (the row of the
unified table), the integer-coded labels, the kernel, C, the per-example
weights and the bias flag.  The
variables are stored as an (m, P) array ``alpha``: example i, constraint slot
p; slots inactive for the example's class are kept at zero.  Everything a
solver needs (coefficients, targets, slack groups, bounds, the equality
constraints of the bias) is exposed as arrays, so a solver never needs to know
which machine it is solving.

Conventions (see :mod:`msvm.machines`): the dual is a *minimisation* of J(α);
the value users see, ``dual_objective``, is the maximisation form D = −J, so
that weak duality reads P ≥ D and the gap P − D ≥ 0.

Example weights.  A weight wᵢ > 0 multiplies example i's loss in the primal,
½ Σ_c ‖w_c‖² + C Σᵢ wᵢ Lᵢ(ξᵢ), as ``SVC(class_weight=..., sample_weight=...)``
does for the binary SVM (its Cᵢ = C · class_weight[yᵢ] · sample_weightᵢ).
For the hinge machines only the capacities change: every slack group of
example i gets the capacity Cᵢ = C wᵢ (``capacity``), since Lagrange's
multipliers of a constraint with slack cost Cᵢ ξ are bounded by Cᵢ.  For the
M-SVM², whose loss is quadratic, the weight moves into the kernel: example i
contributes C wᵢ ξᵢᵀ M' ξᵢ with M' = I + 11ᵀ, whose convex conjugate is
αᵢᵀ M'⁻¹ αᵢ / (4 C wᵢ) with M'⁻¹ = I − 11ᵀ/Q; in J(α), where the shift
multiplies ½ Σ_{k,l} (δ_kl − 1/Q) α_ik α_il, that is the diagonal shift
sᵢ = 1/(2 C wᵢ) (``kernel_shift``): the hard-margin LLW dual on
k'(x_i, x_j) = k(x_i, x_j) + δ_ij / (2 C wᵢ).  With wᵢ = 1 both reduce to
the unweighted machine, and an integer weight wᵢ = n gives the same
problem as n copies of example i (their α sum to the weighted one's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

import numpy as np
import scipy.sparse as sp

from msvm._numbers import is_real
from msvm.kernels import Kernel
from msvm.machines import Machine

__all__ = ["DualProblem", "DualSolution", "class_coefficients"]


def _rows_by_label(y: np.ndarray, n_classes: int) -> list[tuple[int, np.ndarray]]:
    """(label, indices of its examples) for every label present."""
    groups = [(label, np.flatnonzero(y == label)) for label in range(n_classes)]
    return [(label, rows) for label, rows in groups if len(rows)]


def _coefficients(alpha: np.ndarray, by_label, nu: np.ndarray) -> np.ndarray:
    """:func:`class_coefficients` with the examples already grouped by label."""
    beta = np.zeros((alpha.shape[0], nu.shape[2]))
    for label, rows in by_label:
        beta[rows] = np.einsum("ip,pc->ic", alpha[rows], nu[label])
    return beta


def class_coefficients(alpha: np.ndarray, y: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """β_ic = Σ_p ν[y_i, p, c] α_ip, shape (m, Q), for ``nu`` of shape (Q, P, Q).

    One product per label rather than a gather of ν for every example.  einsum,
    not BLAS: each example's β is then summed in the same order whatever the
    other examples, so a model built from any subset of them (``partial_fit``'s
    support patterns) gets the same float64 numbers as ``fit``.
    """
    return _coefficients(alpha, _rows_by_label(y, nu.shape[0]), nu)


def label_codes(y, n_classes: int) -> np.ndarray:
    """``y`` as intp codes, checked to be integers in 0 .. n_classes − 1 (a cast alone
    wrapped −1 round to the last class and truncated 0.5 to 0)."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {labels.shape}.")
    if labels.dtype.kind not in "iub":
        if labels.dtype.kind != "f" or not np.all(np.isfinite(labels) & (labels % 1 == 0)):
            raise ValueError(f"y must hold integer class codes 0 .. {n_classes - 1}, got "
                             f"dtype {labels.dtype}.")
    if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"y must hold class codes 0 .. {n_classes - 1} (the machine's "
                         f"n_classes), got values from {labels.min()} to {labels.max()}.")
    return np.ascontiguousarray(labels, dtype=np.intp)


class DualProblem:
    """A multi-class SVM training problem in its unified dual form.

    Parameters
    ----------
    machine : Machine
        Row of the unified table, built for ``Q`` classes.
    y : ndarray of shape (m,)
        Labels coded 0 .. Q−1.
    kernel : Kernel
        Kernel bound to the training points.
    C : float
        Soft-margin parameter (> 0) in the machine's original formulation.
    fit_intercept : bool
        Whether the machine has a bias b (adds the equality constraints).
    sample_weight : array-like of shape (m,), optional
        Positive, finite weight of every example's loss (module docstring);
        None means 1 for every example.  Examples of weight 0 have no place
        here (their α would be fixed at 0): the estimator leaves them out,
        as libsvm does.

    Attributes
    ----------
    sample_weight : ndarray of shape (m,)
        The weights (ones when none were given).
    weighted : bool
        Whether some weight differs from 1.
    capacity : ndarray of shape (m,)
        C · wᵢ, the capacity of each slack group of example i (+inf for
        the quadratic loss, which has no upper bound).
    kernel_shift : ndarray of shape (m,)
        The diagonal sᵢ added to the kernel in the dual, K' = K + diag(s):
        1/(2 C wᵢ) for the M-SVM², else 0.
    """

    def __init__(self, machine: Machine, y, kernel: Kernel, C: float, fit_intercept: bool,
                 sample_weight=None):
        if not is_real(C) or not C > 0:
            raise ValueError(f"C must be a positive number, got {C!r}.")
        if not isinstance(machine, Machine):
            raise TypeError(f"machine must be a Machine (msvm.machines.make_machine), got "
                            f"{type(machine).__name__}.")
        self.machine = machine
        self.y = label_codes(y, machine.n_classes)
        self.kernel = kernel
        self.C = float(C)
        self.fit_intercept = bool(fit_intercept)
        m = self.y.shape[0]
        if m != kernel.n_samples:
            raise ValueError("y and the kernel's training points differ in length.")
        if sample_weight is None:
            weight = np.ones(m)
        else:
            weight = np.array(sample_weight, dtype=np.float64).reshape(-1)
            if weight.shape != (m,):
                raise ValueError(f"sample_weight has {weight.shape[0]} entries for {m} "
                                 "examples.")
            if not np.all(np.isfinite(weight)) or np.any(weight <= 0):
                raise ValueError("sample_weight must be positive and finite (leave examples "
                                 "of weight 0 out of the problem).")
        self.sample_weight = weight
        self.weighted = bool(np.any(weight != 1.0))
        nu = machine.nu_centered
        self.nu = nu  # (Q, P, Q): ν̄ per class
        self.active = machine.active[self.y]  # (m, P)
        self.targets = machine.gamma[self.y]  # (m, P)
        self.slack = machine.slack[self.y]  # (m, P)
        if machine.loss == "hinge":
            self.capacity = self.C * weight
            self.kernel_shift = np.zeros(m)
        else:
            self.capacity = np.full(m, np.inf)
            self.kernel_shift = 1.0 / (2.0 * self.C * weight)

    # ----------------------------------------------------------------- sizes
    @property
    def n_samples(self) -> int:
        return self.y.shape[0]

    @property
    def n_classes(self) -> int:
        return self.machine.n_classes

    @property
    def n_slots(self) -> int:
        return self.machine.n_slots

    @property
    def has_shift(self) -> bool:
        """Whether the dual's kernel has a diagonal shift (the M-SVM²)."""
        return self.machine.loss == "squared"

    @property
    def scale(self) -> float:
        """The largest capacity (C max wᵢ) for the hinge loss, else 1: the unit of α."""
        return float(self.capacity.max(initial=0.0)) if self.machine.loss == "hinge" else 1.0

    def zeros(self) -> np.ndarray:
        """A feasible starting point α = 0."""
        return np.zeros((self.n_samples, self.n_slots))

    # ------------------------------------------------------- linear algebra
    @cached_property
    def _by_label(self) -> list[tuple[int, np.ndarray]]:
        """The examples of each label (the products with ν̄_{y_i} go label by label)."""
        return _rows_by_label(self.y, self.n_classes)

    def beta(self, alpha: np.ndarray) -> np.ndarray:
        """Coefficients β_ic = Σ_p ν̄_{y_i,p,c} α_ip, shape (m, Q)."""
        return _coefficients(alpha, self._by_label, self.nu)

    def margin_terms(self, h: np.ndarray) -> np.ndarray:
        """Σ_c ν̄_{y_i,p,c} h_ic for every variable (i, p), shape (m, P); ``h`` of shape
        (m, Q) (scores), or (Q,) (one vector for every example, as a bias)."""
        if h.ndim == 1:
            return np.einsum("lpc,c->lp", self.nu, h)[self.y]
        out = np.empty((self.n_samples, self.n_slots))
        for label, rows in self._by_label:
            out[rows] = np.einsum("ic,pc->ip", h[rows], self.nu[label])
        return out

    def scores(self, beta: np.ndarray, cache=None) -> np.ndarray:
        """F = K' β (training scores without bias, with the M-SVM² diagonal shift).

        ``cache``: a kernel cache of this problem whose float64 rows may be
        reused (see :meth:`msvm.kernels.Kernel.matmul`).
        """
        F = self.kernel.matmul(beta, cache=cache)
        if self.has_shift:
            F += self.kernel_shift[:, None] * beta
        return F

    def gradient(self, alpha: np.ndarray, F: np.ndarray | None = None) -> np.ndarray:
        """∂J/∂α_ip = Σ_c ν̄_{y_i,p,c} F_ic − γ_{y_i,p}, zero on inactive slots."""
        if F is None:
            F = self.scores(self.beta(alpha))
        g = self.margin_terms(F) - self.targets
        return np.where(self.active, g, 0.0)

    def objective(self, alpha: np.ndarray, F: np.ndarray | None = None) -> float:
        """The minimised dual J(α) = ½ αᵀHα − γᵀα."""
        beta = self.beta(alpha)
        if F is None:
            F = self.scores(beta)
        return 0.5 * float(np.sum(beta * F)) - float(np.sum(self.targets * alpha))

    # ------------------------------------------------------ the constraints
    @cached_property
    def equality_basis(self) -> np.ndarray:
        """Orthonormal basis U (Q, r) of the span of the ν̄ vectors in use.

        With a bias the constraints Σ_{i,p} ν̄_{y_i,p,·} α_ip = 0 ∈ R^Q have
        rank r ≤ Q − 1 (for WW and CS the ν sum to zero over classes; for
        sum-to-zero machines ν̄ is centred).  The solvers get the r independent
        constraints Uᵀ A α = 0, and the bias lives in span(U): b = U λ.
        Computed on first use (a machine without a bias never needs it).
        """
        classes = np.unique(self.y)  # the vectors depend on the label only
        vecs = self.nu[classes][self.machine.active[classes]]
        if vecs.size == 0:
            return np.zeros((self.n_classes, 0))
        # vecsᵀ = Rᵀ Q̃ᵀ has the left singular vectors and values of Rᵀ (Q × Q): a QR of
        # the Q·P × Q matrix first, which costs far less than its SVD at many classes.
        r = cast(np.ndarray, np.linalg.qr(vecs, mode="r"))  # stubs: QRResult in every mode
        u, s, _ = np.linalg.svd(r.T)
        rank = int(np.sum(s > 1e-10 * s[0]))
        return u[:, :rank]

    @cached_property
    def equality_directions(self) -> np.ndarray:
        """Uᵀν̄_{y,p} for every class y and slot p, shape (Q, P, r): the direction in which
        α_ip moves the equality rows Uᵀ Aα (and the coefficient of λ, b = Uλ, in the
        gradient of α_ip)."""
        return self.nu @ self.equality_basis

    @cached_property
    def nu_rows(self):
        """The machine's uncentred ν as a sparse (Q·P, Q) matrix, row y·P + p: ν_{y,p}.

        For b in span(U) it gives the same ν·b as ν̄ (U is orthogonal to the
        ones wherever ν̄ is centred), with a few non-zeros per row.
        """
        return sp.csr_matrix(self.machine.nu.reshape(-1, self.n_classes))

    def equality_matrix(self) -> np.ndarray:
        """Independent equality constraints of the bias, shape (r, m·P): rows of Uᵀ A."""
        A = self.equality_directions[self.y] * self.active[:, :, None]
        return np.moveaxis(A, 2, 0).reshape(self.equality_basis.shape[1], -1)

    def equality_residual(self, alpha: np.ndarray) -> np.ndarray:
        """Σ_{i,p} ν̄_{y_i,p,c} α_ip for every class c (zero when feasible)."""
        out = np.zeros(self.n_classes)
        for label, rows in self._by_label:   # α summed over each label first
            out += alpha[rows].sum(axis=0) @ self.nu[label]
        return out

    def check_feasible(self, alpha: np.ndarray, atol: float = 1e-9) -> bool:
        """Whether α satisfies every constraint to ``atol`` (scaled by C)."""
        tol = atol * self.C
        if alpha.shape != (self.n_samples, self.n_slots):
            return False
        if np.any(alpha < -tol) or np.any(alpha[~self.active] != 0):
            return False
        if self.machine.loss == "hinge" and np.any(
                self.slack_sums(alpha) > (self.capacity * (1.0 + atol))[:, None] + tol):
            return False
        return not (self.fit_intercept and np.any(np.abs(self.equality_residual(alpha)) > tol))

    @cached_property
    def slack_cell(self) -> np.ndarray:
        """The slack group of every variable as one index over all examples,
        i·n_slacks + r (r its slack), shape (m, P); −1 where it has no slack."""
        cell = np.arange(self.n_samples)[:, None] * self.machine.n_slacks + self.slack
        return np.where(self.slack >= 0, cell, -1)

    def slack_sums(self, alpha: np.ndarray) -> np.ndarray:
        """Σ_{p in slack r} α_ip for every example i and slack r, shape (m, n_slacks)."""
        n_slacks = self.machine.n_slacks
        mask = self.slack_cell >= 0
        sums = np.bincount(self.slack_cell[mask], weights=alpha[mask],
                           minlength=self.n_samples * n_slacks)
        return sums.reshape(self.n_samples, n_slacks)

    def group_sums(self, alpha: np.ndarray) -> np.ndarray:
        """The sum of α over the slack group of every variable, shape (m, P) (0 where
        the variable has no slack)."""
        sums = np.append(self.slack_sums(alpha).ravel(), 0.0)   # the last: no slack
        return sums[self.slack_cell]

    # --------------------------------------------------- flat variable view
    def flat_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(i, p) of every active variable, in row-major order."""
        i, p = np.nonzero(self.active)
        return i, p

    def beta_operator(self):
        """Sparse matrix B of shape (m·Q, n_active) with vec(β) = B α_active.

        vec is row-major over (i, c).  Used by the reference QP solvers.
        """
        ii, pp = self.flat_index()
        Q = self.n_classes
        coeffs = self.nu[self.y[ii], pp]  # (n_active, Q)
        rows = (ii[:, None] * Q + np.arange(Q)[None, :]).ravel()
        cols = np.repeat(np.arange(len(ii)), Q)
        vals = coeffs.ravel()
        keep = vals != 0
        return sp.csr_matrix(
            (vals[keep], (rows[keep], cols[keep])), shape=(self.n_samples * Q, len(ii))
        )


@dataclass
class DualSolution:
    """What every solver returns.

    Attributes
    ----------
    alpha : ndarray of shape (m, P)
        Dual variables (zero on inactive slots).
    b : ndarray of shape (Q,)
        Bias (zeros without intercept), in the gauge Σ_c b_c-free part: b ∈ span(U).
    status : str
        ``"optimal"``, ``"optimal_inaccurate"`` (a reference solver whose KKT
        residual is in (1e-9, 1e-6]), ``"max_iter"``, ``"inaccurate"`` or ``"failed"``.
    n_iter : int
        Iterations of the solver (its own notion of iteration).
    time : float
        Wall-clock seconds spent in the solver.
    n_kernel_evaluations : int
        Kernel evaluations performed (0 when the solver got a precomputed Gram).
    solver : str
        Name of the solver that produced it.
    scores : ndarray of shape (m, Q) or None
        F = K'β if the solver has it (saves a Gram product in diagnostics).
    certified_scores : ndarray of shape (m, Q) or None
        F recomputed from β in float64 at the end of the solve, by a solver
        that can do it cheaply from its kernel cache (option ``certify``);
        otherwise the estimator recomputes it.
    info : dict
        Solver-specific extras (e.g. the backend's own status string).
    """

    alpha: np.ndarray
    b: np.ndarray
    status: str
    n_iter: int = 0
    time: float = 0.0
    n_kernel_evaluations: int = 0
    solver: str = ""
    scores: np.ndarray | None = None
    certified_scores: np.ndarray | None = None
    info: dict = field(default_factory=dict)
