"""Multi-class SVMs as rows of one table.

Every all-in-one multi-class SVM of the unified family (Doğan, Glasmachers &
Igel; seed 004 §2.2.7 and §5.1) is the same dual quadratic program, written
here as a *minimisation* over the variables α_ip (example i, constraint p)::

    J(α) = ½ Σ_{i,p} Σ_{j,q} M(y_i,p ; y_j,q) k'(x_i, x_j) α_ip α_jq − Σ_{i,p} γ_{y_i,p} α_ip

    M(y,p ; y',q) = Σ_c Σ_e ν_{y,p,c} ν_{y',q,e} (δ_ce − s/Q)

    α_ip ≥ 0,    Σ_{p in slack r of example i} α_ip ≤ C     (hinge loss)
    with a bias: Σ_{i,p} ν̄_{y_i,p,c} α_ip = 0 for every class c

where s = 1 when the machine imposes Σ_c w_c = 0 (and Σ_c b_c = 0), ν̄ is ν
centred over classes when s = 1 (ν itself otherwise), and k' = k except for
the quadratic-loss M-SVM², whose dual is the hard-margin dual with
k'(x_i, x_j) = k(x_i, x_j) + δ_ij / (2C) (seed 001, Problem 5).

A machine is therefore *data*:

``nu[y, p, c]``
    margin coefficients: constraint p of an example of class y reads
    Σ_c ν_{y,p,c} h_c(x) ≥ γ_{y,p} − ξ.
``gamma[y, p]``
    targets γ.
``active[y, p]``
    whether constraint p exists for class y (for WW, CS, LLW and ADM the
    constraint p = y does not; its α is a dummy fixed at zero).
``slack[y, p]``
    which slack variable of the example constraint p uses.  Constraints that
    share a slack share the capacity C (max-loss); one slack per constraint is
    sum-loss.  ``-1`` for the quadratic loss, which has no upper bound.
``sum_to_zero``
    the flag s above.
``loss``
    ``"hinge"`` (linear slack penalty C Σ ξ) or ``"squared"`` (the M-SVM²'s
    quadratic form C Σ_i ξ_iᵀ M ξ_i, see below; a squared-loss row must have
    the M-SVM²'s margins, ν̄ν̄ᵀ = I − 11ᵀ/(n + 1) on the n active slots of each
    class, the only ones whose dual is that penalty's, and is refused otherwise).

The scores are h_c(x) = Σ_i β_ic k(x_i, x) + b_c with
β_ic = Σ_p ν̄_{y_i,p,c} α_ip, whatever the machine; solvers never look at the
machine's name, only at these arrays.

Scale conventions.  The rows implement the *original* formulations (DESIGN.md
§2).  Seed 004 writes WW with target 2 on half margins and seed 002 scales
its Hessian differently; the configurations of BENCHMARKS.md are already
converted to the units used here.

The M-SVM²'s slack penalty.  Seed 001 (arXiv v1) prints the penalty matrix
as M = δ_kl − 1/Q on the slacks of the Q − 1 wrong classes, but its own dual
(Problem 5: the hard-margin LLW dual with k + δ_ij/(2C)) is the conjugate of
C ξᵀ M' ξ with M'⁻¹ = I − 11ᵀ/Q, i.e. M' = I + 11ᵀ (Sherman–Morrison): the
penalty is C Σ_i [Σ_k ξ_ik² + (Σ_k ξ_ik)²].  The derivation in the seed sums
over the dummy slot k = y_i, where stationarity does not hold.  The dual is
what the radius–margin bound is about, so it defines the machine here, and the
primal we report uses M' (``tests/test_diagnostics.py`` checks that the
duality gap closes with M' and not with the printed M).

The rest of the unified family.  Doğan, Glasmachers & Igel (DGI) cross the
two margins of seed 004 Table 2.1 (relative: ν_{y,p,c} = δ_{y,c} − δ_{p,c};
absolute: ν_{y,p,c} = ±δ_{p,c}, + for p = y) with the four losses of its
Table 2.2 (discriminative/total × sum/max).  The rows, with their losses
on h = (h_1, …, h_Q) and [t]_+ = max(0, t):

=====  ========  =============  =====  ===  ========================================
row    margin    P_y, slacks    γ      s    loss L(y, h)
=====  ========  =============  =====  ===  ========================================
ww     relative  Y∖{y}, sum     1      0    Σ_{k≠y} [1 − (h_y − h_k)]_+
cs     relative  Y∖{y}, max     1      0    max_{k≠y} [1 − (h_y − h_k)]_+
llw    absolute  Y∖{y}, sum     1/(Q−1) 1   Σ_{k≠y} [1/(Q−1) + h_k]_+
adm    absolute  Y∖{y}, max     1      1    max_{k≠y} [1 + h_k]_+
ats    absolute  Y, sum         1      1    Σ_k [1 − σ_yk h_k]_+
atm    absolute  Y, max         1      1    max_k [1 − σ_yk h_k]_+
ova    absolute  Y, sum         1      0    Σ_k [1 − σ_yk h_k]_+  (no Σ_c h_c = 0)
mmr    absolute  {y}, one       1      1    [1 − h_y]_+
=====  ========  =============  =====  ===  ========================================

(σ_yk = +1 for k = y, −1 otherwise; s = 1 adds Σ_c w_c = 0 and Σ_c b_c = 0.)
The targets of the rows new in DGI are 1, as in their reference
implementation (Shark's ``McSvm{ADM,ATS,ATM,MMR,OVA}Trainer``).  With
sum-to-zero a target t instead of 1 is the same machine at C/t with scores
times t (substitute w = t w', ξ = t ξ'), so the convention only moves C.
The slot layout: slot p ↔ class p for every row except ``mmr``, whose single
slot is the own class (P = 1).  Every row admits a bias; for the
sum-to-zero rows it lives in {Σ_c b_c = 0} (rank Q − 1), for ``ova``, whose
ν do not sum to zero, it is a free offset per class (rank Q).

Two classes.  With Q = 2 every machine is a binary soft-margin SVM:

=================  ======================================================
WW, CS             SVC with C_binary = 2C; h_2 − h_1 = SVC decision function
LLW, ADM, ATM, MMR SVC with C_binary = C/2; h_2 − h_1 = 2 × SVC decision
ATS, OvA           SVC with C_binary = C; h_2 − h_1 = 2 × SVC decision
M-SVM²             2-norm SVM ½‖w‖² + C Σ ξ², i.e. a hard-margin SVC on the
                   kernel k + δ_ij/(2C); h_2 − h_1 = 2 × its decision function
=================  ======================================================

(With s = 1 and Q = 2, h_2 = −h_1 = f and ½Σ‖w_c‖² = ‖w‖²; the losses are
[1 − y f]_+ for LLW/ADM/ATM/MMR and 2[1 − y f]_+ for ATS.  OvA trains
h_2 = f and h_1 = −f as two mirror-image SVCs with C.
``tests/test_two_class.py`` and ``tests/test_family.py`` check each line
against ``sklearn.svm.SVC``; with example weights wᵢ, capacity C·wᵢ (the
M-SVM²: shift 1/(2C wᵢ), see :mod:`msvm.problem`), each line holds with the
same weights on SVC's side, ``tests/test_weights.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msvm._numbers import is_integer

__all__ = ["Machine", "MACHINES", "make_machine"]


@dataclass(frozen=True, eq=False)
class Machine:
    """One row of the unified table, instantiated for ``n_classes`` classes.

    See the module docstring for the meaning of each array.  ``P`` is the
    number of constraint slots per example (the same for every class; slots
    that do not exist for a class are marked inactive).
    """

    name: str
    description: str
    n_classes: int
    nu: np.ndarray  # (Q, P, Q) float64
    gamma: np.ndarray  # (Q, P) float64
    active: np.ndarray  # (Q, P) bool
    slack: np.ndarray  # (Q, P) int32, -1 = no upper bound
    sum_to_zero: bool
    loss: str  # "hinge" or "squared"
    source: str

    def __post_init__(self):
        # A custom row (built here or registered in MACHINES) is checked once, so that a
        # table of the wrong shape or with NaN does not reach the solvers: NaN ν or γ gave
        # an 'optimal' α = 0, a wrong n_classes a reshape error deep in a solver.
        Q = self.n_classes
        if not is_integer(Q) or Q < 2:
            raise ValueError(f"A multi-class SVM needs an integer n_classes >= 2, got {Q!r}.")
        nu = np.asarray(self.nu)
        if nu.ndim != 3 or nu.shape[0] != Q or nu.shape[2] != Q:
            raise ValueError(f"Machine {self.name!r}: nu must have shape (n_classes, P, "
                             f"n_classes) = ({Q}, P, {Q}), got {nu.shape}.")
        for field_name in ("gamma", "active", "slack"):
            shape = np.shape(getattr(self, field_name))
            if shape != nu.shape[:2]:
                raise ValueError(f"Machine {self.name!r}: {field_name} must have shape "
                                 f"(n_classes, P) = {nu.shape[:2]}, got {shape}.")
        if np.asarray(self.active).dtype != bool:
            raise ValueError(f"Machine {self.name!r}: active must be a boolean array.")
        if self.loss not in ("hinge", "squared"):
            raise ValueError(f"Machine {self.name!r}: loss must be 'hinge' or 'squared', got "
                             f"{self.loss!r}.")
        slack = np.asarray(self.slack)
        if slack.dtype.kind not in "iu" or (self.loss == "hinge" and np.any(
                slack[np.asarray(self.active)] < 0)):
            # (A hinge slot without a slack group, −1, corrupted Frank-Wolfe's memory.)
            raise ValueError(f"Machine {self.name!r}: slack must be an integer array, with a "
                             "slack group >= 0 on every active slot of a hinge machine.")
        # ν class by class: no temporary of ν's Q³ size.
        if not (np.all(np.isfinite(self.gamma)) and all(np.all(np.isfinite(nu[y]))
                                                        for y in range(Q))):
            raise ValueError(f"Machine {self.name!r}: nu and gamma must be finite.")
        if self.loss == "squared":
            self._check_squared_penalty()

    def _check_squared_penalty(self):
        """Refuse a squared-loss row whose dual is not the conjugate of the M-SVM²'s penalty.

        The dual's kernel shift adds αᵢᵀ G_y αᵢ / (4C) with G_y = ν̄ν̄ᵀ on the n active
        slots of class y; it is the conjugate of the documented penalty C ξᵀ(I + 11ᵀ)ξ
        (the one the certificate reports) only when G_y = I − 11ᵀ/(n + 1).  Any other G_y
        gave an 'optimal' solution with a large duality gap, and a singular one an
        unbounded dual (solvers ran to max_iter, OSQP answered 'optimal').
        """
        Q = self.n_classes
        nu, active = np.asarray(self.nu, dtype=np.float64), np.asarray(self.active)
        for y in range(self.n_classes):  # class by class: no Q³ temporary
            slots = np.flatnonzero(active[y])
            rows = nu[y, slots]
            if (self.sum_to_zero and len(slots) == Q - 1 and nu.shape[1] == Q
                    and np.array_equal(rows, -np.eye(Q)[slots])):
                continue  # the M-SVM²'s own margins (spares make_machine a Q⁴ check)
            if self.sum_to_zero:
                rows = rows - rows.mean(axis=1, keepdims=True)
            n = len(rows)
            error = np.max(np.abs(rows @ rows.T - (np.eye(n) - 1.0 / (n + 1))), initial=0.0)
            if error > 1e-10:
                raise ValueError(
                    f"Machine {self.name!r}: a squared-loss row must have the M-SVM²'s "
                    f"margins: on the {n} active slots of class {y}, ν̄ν̄ᵀ must be "
                    f"I − 11ᵀ/{n + 1} (the conjugate of the penalty C ξᵀ(I + 11ᵀ)ξ the "
                    f"certificate reports); it is off by {error:.3g}.  Other targets γ are "
                    "allowed.")

    @property
    def n_slots(self) -> int:
        """Number of constraint slots P per example."""
        return self.nu.shape[1]

    @property
    def n_slacks(self) -> int:
        """Number of slack variables per example (0 for the quadratic loss)."""
        return int(self.slack.max()) + 1 if self.loss == "hinge" else 0

    @property
    def nu_centered(self) -> np.ndarray:
        """ν̄: ν centred over classes when the machine is sum-to-zero."""
        if self.sum_to_zero:
            return self.nu - self.nu.mean(axis=2, keepdims=True)
        return self.nu

    @property
    def max_loss(self) -> bool:
        """Whether several constraints of an example share one slack."""
        return self.loss == "hinge" and int(self.slack_group_sizes.max()) > 1

    @property
    def slack_group_sizes(self) -> np.ndarray:
        """(Q, max(R, 1)) int32: how many active constraints of class y share slack r
        (zeros for the quadratic loss, which has no slack groups)."""
        sizes = np.zeros((self.n_classes, max(self.n_slacks, 1)), dtype=np.int32)
        if self.loss == "hinge":
            y, p = np.nonzero(self.active & (self.slack >= 0))
            np.add.at(sizes, (y, self.slack[y, p]), 1)
        return sizes

    @property
    def own_slacks(self) -> bool:
        """Whether every active constraint has a slack of its own (hinge loss: WW, LLW,
        ATS, OvA, MMR), so that every slack group is a single variable."""
        return self.loss == "hinge" and not self.max_loss

    def kernel_shift(self, C: float) -> float:
        """Diagonal added to the kernel in the dual: 1/(2C) for the M-SVM², else 0.

        For an example of weight w the shift is ``kernel_shift(C * w)``, 1/(2Cw)
        (:mod:`msvm.problem` derives it); a hinge machine's weight scales its
        capacity to C·w instead.
        """
        return 1.0 / (2.0 * C) if self.loss == "squared" else 0.0


def _pairwise_slots(Q: int):
    """Slot p = class p, the slot of the example's own class inactive."""
    eye = np.eye(Q)
    active = ~np.eye(Q, dtype=bool)
    return eye, active


def _weston_watkins(Q: int) -> dict:
    eye, active = _pairwise_slots(Q)
    # ν[y, p, c] = δ_{y,c} − δ_{p,c}: margin h_y − h_p between the true class and p.
    nu = eye[:, None, :] - eye[None, :, :]
    return dict(
        description="Weston-Watkins: sum over k != y of hinge(1 - (h_y - h_k))",
        nu=nu,
        gamma=np.ones((Q, Q)),
        active=active,
        slack=np.tile(np.arange(Q, dtype=np.int32), (Q, 1)),
        sum_to_zero=False,
        loss="hinge",
        source="Weston & Watkins 1999; seed 000 §3, seed 002",
    )


def _crammer_singer(Q: int) -> dict:
    row = _weston_watkins(Q)
    row.update(
        description="Crammer-Singer: hinge(1 - (h_y - max_{k != y} h_k)), one slack per example",
        slack=np.zeros((Q, Q), dtype=np.int32),
        source="Crammer & Singer 2001; seed 004 ch. 5",
    )
    return row


def _lee_lin_wahba(Q: int) -> dict:
    eye, active = _pairwise_slots(Q)
    # ν[y, p, c] = −δ_{p,c}: constraint h_p(x) ≤ −1/(Q−1) + ξ for p != y.
    nu = np.broadcast_to(-eye[None, :, :], (Q, Q, Q)).copy()
    return dict(
        description="Lee-Lin-Wahba: sum over k != y of hinge(h_k + 1/(Q-1)), sum-to-zero",
        nu=nu,
        gamma=np.full((Q, Q), 1.0 / (Q - 1)),
        active=active,
        slack=np.tile(np.arange(Q, dtype=np.int32), (Q, 1)),
        sum_to_zero=True,
        loss="hinge",
        source="Lee, Lin & Wahba 2004; seed 001 §2.3, seed 004 ch. 4",
    )


def _msvm2(Q: int) -> dict:
    row = _lee_lin_wahba(Q)
    row.update(
        description="M-SVM2: LLW with the quadratic slack penalty C (|xi|^2 + (sum xi)^2)",
        slack=np.full((Q, Q), -1, dtype=np.int32),
        loss="squared",
        source="Monfrini & Guermeur 2008; seed 001 §3",
    )
    return row


def _absolute_margins(Q: int) -> np.ndarray:
    """ν[y, p, c] = σ_yp δ_{p,c}, σ_yp = +1 if p = y else −1 (seed 004 Table 2.1, absolute)."""
    eye = np.eye(Q)
    return (2.0 * eye - 1.0)[:, :, None] * eye[None, :, :]


def _absolute_discriminative_max(Q: int) -> dict:
    """ADM: absolute margin, discriminative max-loss, sum-to-zero.

    min ½ Σ_c ‖w_c‖² + C Σ_i ξ_i  s.t.  −h_k(x_i) ≥ 1 − ξ_i (k ≠ y_i),  ξ_i ≥ 0,
    Σ_c h_c = 0.  Slots k ≠ y with ν = −e_k (as LLW), γ = 1, one slack per
    example: the dual variables of an example share the capacity C.
    """
    _, active = _pairwise_slots(Q)
    return dict(
        description="ADM: max over k != y of hinge(1 + h_k), sum-to-zero",
        nu=_absolute_margins(Q),
        gamma=np.ones((Q, Q)),
        active=active,
        slack=np.zeros((Q, Q), dtype=np.int32),
        sum_to_zero=True,
        loss="hinge",
        source="Dogan, Glasmachers & Igel 2011/2016 (Shark McSvmADMTrainer); "
               "seed 004 §2.2.7 Tables 2.1-2.2, §5.1",
    )


def _absolute_total_sum(Q: int) -> dict:
    """ATS: absolute margin, total sum-loss, sum-to-zero.

    min ½ Σ_c ‖w_c‖² + C Σ_i Σ_k ξ_ik  s.t.  h_{y_i}(x_i) ≥ 1 − ξ_{i,y_i},
    −h_k(x_i) ≥ 1 − ξ_ik (k ≠ y_i),  ξ ≥ 0,  Σ_c h_c = 0.  All Q slots active
    (ν = ±e_k), γ = 1, one slack per slot: 0 ≤ α_ik ≤ C.
    """
    return dict(
        description="ATS: sum over all k of hinge(1 -+ h_k), sum-to-zero",
        nu=_absolute_margins(Q),
        gamma=np.ones((Q, Q)),
        active=np.ones((Q, Q), dtype=bool),
        slack=np.tile(np.arange(Q, dtype=np.int32), (Q, 1)),
        sum_to_zero=True,
        loss="hinge",
        source="Dogan, Glasmachers & Igel 2011/2016 (Shark McSvmATSTrainer); "
               "seed 004 §2.2.7 Tables 2.1-2.2, §5.1",
    )


def _absolute_total_max(Q: int) -> dict:
    """ATM: absolute margin, total max-loss, sum-to-zero.

    As ATS with one slack per example: ξ_i ≥ 1 − σ_{y_i k} h_k(x_i) for every
    k, so the Q dual variables of an example share the capacity C.
    """
    row = _absolute_total_sum(Q)
    row.update(
        description="ATM: max over all k of hinge(1 -+ h_k), sum-to-zero",
        slack=np.zeros((Q, Q), dtype=np.int32),
        source="Dogan, Glasmachers & Igel 2011/2016 (Shark McSvmATMTrainer); "
               "seed 004 §2.2.7 Tables 2.1-2.2, §5.1",
    )
    return row


def _one_vs_all(Q: int) -> dict:
    """OvA: ATS without the sum-to-zero constraint.

    The problem separates into Q binary SVMs, class c against the rest:
    min ½‖w_c‖² + C Σ_i [1 − σ_{y_i c} h_c(x_i)]_+ (with a bias, b_c is that
    SVM's own offset).  DGI's view of the classical one-versus-all machine.
    """
    row = _absolute_total_sum(Q)
    row.update(
        description="OvA: sum over all k of hinge(1 -+ h_k), Q independent binary SVMs",
        sum_to_zero=False,
        source="Rifkin & Klautau 2004; Dogan, Glasmachers & Igel 2016 (Shark "
               "McSvmOVATrainer); seed 004 §2.2.6-2.2.7",
    )
    return row


def _maximum_margin_regression(Q: int) -> dict:
    """MMR: absolute margin on the own class only, sum-to-zero.

    min ½ Σ_c ‖w_c‖² + C Σ_i ξ_i  s.t.  h_{y_i}(x_i) ≥ 1 − ξ_i,  ξ_i ≥ 0,
    Σ_c h_c = 0: one slot per example (P = 1, ν = e_y, γ = 1), 0 ≤ α_i ≤ C.
    Szedmak et al. write it with label vectors ψ(y) at the vertices of a
    regular simplex, ⟨ψ(y), ψ(y')⟩ = 1 if y = y' else −1/(Q−1), and
    min ½‖W‖² + C Σ ξ_i s.t. ⟨ψ(y_i), W φ(x_i)⟩ ≥ 1 − ξ_i; with
    h_c = ⟨ψ(c), W φ⟩ that is this row at C·Q/(Q−1), same scores
    (``tests/test_family.py`` solves their primal directly).
    """
    return dict(
        description="MMR: hinge(1 - h_y), sum-to-zero",
        nu=np.eye(Q)[:, None, :],
        gamma=np.ones((Q, 1)),
        active=np.ones((Q, 1), dtype=bool),
        slack=np.zeros((Q, 1), dtype=np.int32),
        sum_to_zero=True,
        loss="hinge",
        source="Szedmak, Shawe-Taylor & Parado-Hernandez 2006; Dogan, Glasmachers & Igel "
               "2016 (Shark McSvmMMRTrainer); seed 004 §2.2.7",
    )


#: Registry of machine rows: name -> builder(Q) returning the row's fields.
MACHINES = {
    "ww": _weston_watkins,
    "cs": _crammer_singer,
    "llw": _lee_lin_wahba,
    "msvm2": _msvm2,
    "adm": _absolute_discriminative_max,
    "ats": _absolute_total_sum,
    "atm": _absolute_total_max,
    "ova": _one_vs_all,
    "mmr": _maximum_margin_regression,
}


def make_machine(name: str, n_classes: int) -> Machine:
    """Instantiate the machine ``name`` for ``n_classes`` classes.

    Parameters
    ----------
    name : str
        Key of :data:`MACHINES` (``"ww"``, ``"cs"``, ``"llw"``, ``"msvm2"``,
        ``"adm"``, ``"ats"``, ``"atm"``, ``"ova"``, ``"mmr"``).
    n_classes : int
        Number of classes Q ≥ 2.

    Returns
    -------
    Machine
    """
    if name not in MACHINES:
        raise ValueError(f"Unknown model {name!r}; expected one of {sorted(MACHINES)}.")
    if not is_integer(n_classes):
        raise ValueError(f"n_classes must be an integer, got {n_classes!r}.")
    if n_classes < 2:
        raise ValueError(f"A multi-class SVM needs at least 2 classes, got {n_classes}.")
    try:
        fields = MACHINES[name](n_classes)
    except MemoryError as err:
        raise MemoryError(
            f"The {name!r} machine for {n_classes} classes could not be built ({err}): its "
            "coupling table ν is a dense (classes, slots, classes) array, whose size grows "
            "as the cube of the number of classes (for every machine but 'mmr').") from err
    # The builders return fresh arrays: ν (the machine's one Q³ array) is zeroed on the
    # inactive slots in place, copied only when it is not a writable array of its own.
    nu = np.require(fields.pop("nu"), dtype=np.float64, requirements=["C", "W", "O"])
    active = np.ascontiguousarray(fields.pop("active"), dtype=bool)
    gamma = np.where(active, fields.pop("gamma"), 0.0)
    slack = np.where(active, fields.pop("slack"), -1).astype(np.int32)
    nu *= active[:, :, None]
    return Machine(
        name=name,
        n_classes=n_classes,
        nu=nu,
        gamma=np.ascontiguousarray(gamma, dtype=np.float64),
        active=active,
        slack=np.ascontiguousarray(slack),
        **fields,
    )
