"""Solve, diagnose and judge every row of the validation matrix.

A *case* is one training problem: (problem, C, machine, bias, kernel).  Every
registered solver that handles the case is run on it once, together with the
reference each of them is compared with, and each solver gives one *row*.  A
row records every measured number and the outcome of each check:

========================  ===================================================
check                     passes when
========================  ===================================================
``status``                the solver reports ``"optimal"``
``dual_objective``        |D − D_ref| / max(|D_ref|, 1) ≤ ``dual_rel_diff``
``kkt_residual``          ``Diagnostics.kkt_residual`` ≤ ``kkt_residual``
``duality_gap``           −``weak_duality`` ≤ relative gap ≤ ``relative_gap``
``equality``              (bias rows) max_c |Σ ν̄ α| / scale ≤ ``equality``
``predictions``           training predictions agree with the reference's
                          on ≥ ``prediction_agreement`` of the points
``b``                     where b is unique: ‖b − b_ref‖∞ / max(1, ‖b_ref‖∞)
                          ≤ ``b_diff``; rows where it is not are recorded
                          as ``b_unique = False`` and pass this check
========================  ===================================================

b is unique when the KKT equations of the free variables determine it, which
:func:`msvm.diagnostics.bias_from_kkt` reports as ``b_method == 'kkt'``.  By
complementary slackness every optimal b satisfies the equations of *any*
optimal α, so one solution with ``'kkt'`` would suffice in exact arithmetic;
the rule asks for both, because a variable within ``ZERO_TOL`` of a bound can
be classed as free in one solution and not in the other.  The b compared is
the one each solver returns (``DualSolution.b``), i.e. the solver's own answer;
the KKT b of :func:`~msvm.diagnostics.diagnose` is recorded next to it.

Predictions are argmax_c h_c(x_i), h_c(x_i) = Σ_j β_jc k(x_j, x_i) + b_c (the
M-SVM²'s diagonal shift 1/(2C) belongs to the dual, not to h), with the
solver's own b where b is unique (or there is no bias) and with the
reference's b for both where it is not: then only the unique part Kβ is
compared, since different optimal b may legitimately move points inside the
margin across a decision boundary.  Exact ties of the argmax are common at
optimal solutions (Crammer–Singer equalises the largest wrong-class scores;
a zero w ties every class), so a point whose two predictions are tied within
``prediction_tie_tol`` in both solutions counts as agreeing; the strict
agreement is recorded too.
"""

from __future__ import annotations

import math
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from msvm.diagnostics import _residual_scale, diagnose
from msvm.kernels import Kernel
from msvm.machines import make_machine
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import get_solver
from validation.problems import PROBLEMS, ProblemSpec
from validation.registry import SOLVERS, SolverEntry, Thresholds, derived_limits

__all__ = [
    "MACHINES",
    "FAMILY_MACHINES",
    "FAMILY_PROBLEMS",
    "ALL_MACHINES",
    "KERNELS",
    "BIASES",
    "CHECKS",
    "Case",
    "build_matrix",
    "build_problem",
    "predict_train",
    "prediction_agreement",
    "train_scores",
    "equality_residual",
    "evaluate",
    "run_case",
]

MACHINES = ("ww", "cs", "llw", "msvm2")
#: The rest of the unified family (msvm/machines.py).  In the default matrix
#: they run on FAMILY_PROBLEMS only, which keeps the whole suite within its
#: time budget (README.md); an explicit problem list runs them everywhere.
FAMILY_MACHINES = ("adm", "ats", "atm", "ova", "mmr")
FAMILY_PROBLEMS = ("blobs-q2", "overlap-q3", "checker-q4", "blobs-q5")
ALL_MACHINES = MACHINES + FAMILY_MACHINES
KERNELS = ("linear", "rbf")
BIASES = (False, True)
#: Names of the checks, in the order they are reported.
CHECKS = ("status", "dual_objective", "kkt_residual", "duality_gap", "equality", "predictions",
          "b")


@dataclass(frozen=True)
class Case:
    """One training problem of the matrix; its solvers are given by the registry."""

    problem: str
    C: float
    machine: str
    bias: bool
    kernel: str
    solvers: tuple[str, ...]

    @property
    def name(self) -> str:
        return (f"{self.problem}/C={self.C:g}/{self.machine}/"
                f"{'bias' if self.bias else 'nobias'}/{self.kernel}")

    def row_name(self, solver: str) -> str:
        return f"{self.name}/{solver}"

    def cost(self) -> float:
        """Rough cost estimate, used to schedule the expensive cases first."""
        spec = PROBLEMS[self.problem]
        X, y = spec.data
        machine = make_machine(self.machine, int(y.max()) + 1)
        n = int(machine.active.sum(axis=1)[y].sum())  # dual variables
        # Measured: the sum-to-zero rows (dense β, e.g. LLW) are the slowest by far.
        factor = (3.0 if machine.sum_to_zero else 1.0) * (2.0 if self.kernel == "rbf" else 1.0)
        return float(n) ** 3 * factor


def build_matrix(problems=None, solvers=None, Cs=None, machines=ALL_MACHINES, kernels=KERNELS,
                 biases=BIASES, name_filter: str | None = None) -> list[Case]:
    """All cases of the matrix (those with at least one row left after ``name_filter``).

    With the default ``problems`` the machines of :data:`FAMILY_MACHINES` run
    on :data:`FAMILY_PROBLEMS` only.
    """
    restrict = problems is None
    problems = list(PROBLEMS) if problems is None else list(problems)
    solvers = list(SOLVERS) if solvers is None else list(solvers)
    cases = []
    for pname in problems:
        spec = PROBLEMS[pname]
        for C in spec.Cs if Cs is None else Cs:
            for machine in machines:
                if restrict and machine in FAMILY_MACHINES and pname not in FAMILY_PROBLEMS:
                    continue
                for bias in biases:
                    for kernel in kernels:
                        probe = Case(pname, float(C), machine, bias, kernel, ())
                        names = tuple(
                            s for s in solvers
                            if SOLVERS[s].handles(machine, bias, kernel)
                            and (name_filter is None or name_filter in probe.row_name(s))
                        )
                        if names:
                            cases.append(Case(pname, float(C), machine, bias, kernel, names))
    return cases


def build_problem(spec: ProblemSpec, machine: str, bias: bool, kernel: str, C: float,
                  data=None) -> DualProblem:
    """The DualProblem of one case (RBF γ fixed per problem, see :mod:`validation.problems`)."""
    X, y = spec.data if data is None else data
    Q = int(y.max()) + 1
    gamma = spec.gamma(X) if kernel == "rbf" else 1.0
    return DualProblem(make_machine(machine, Q), y, Kernel(X, kernel, gamma=gamma), C, bias)


# ---------------------------------------------------------------- measures
def train_scores(problem: DualProblem, solution: DualSolution, b=None) -> np.ndarray:
    """h_c(x_i) = Σ_j β_jc k(x_j, x_i) + b_c on the training points (b: the solution's own)."""
    beta = problem.beta(solution.alpha)
    b = solution.b if b is None else b
    return problem.kernel.matmul(beta) + np.asarray(b, dtype=float)[None, :]


def predict_train(problem: DualProblem, solution: DualSolution, b=None) -> np.ndarray:
    """Predicted class of every training point with the solution's α and b."""
    return np.argmax(train_scores(problem, solution, b), axis=1)


def prediction_agreement(h: np.ndarray, h_ref: np.ndarray, tie_tol: float) -> tuple[float, float]:
    """(tie-aware agreement, strict agreement) of argmax h and argmax h_ref.

    A point agrees when both argmaxes are equal, or when each solution's
    predicted class is within tie_tol · max(1, ‖h_ref‖∞) of the other's maximum.
    """
    pred, ref_pred = np.argmax(h, axis=1), np.argmax(h_ref, axis=1)
    strict = pred == ref_pred
    tol = tie_tol * max(1.0, float(np.max(np.abs(h_ref), initial=0.0)))
    rows = np.arange(len(pred))
    tied = ((h[rows, ref_pred] >= h.max(axis=1) - tol)
            & (h_ref[rows, pred] >= h_ref.max(axis=1) - tol))
    return float(np.mean(strict | tied)), float(np.mean(strict))


def equality_residual(problem: DualProblem, alpha: np.ndarray) -> float:
    """Largest residual of the bias constraints, scaled by C (max(C, max α) for squared loss)."""
    if not problem.fit_intercept:
        return 0.0
    scale = problem.C
    if problem.machine.loss != "hinge":
        scale = max(scale, float(np.max(alpha, initial=0.0)))
    return float(np.max(np.abs(problem.equality_residual(alpha)))) / scale


def _finite(x) -> float | None:
    """JSON-friendly float (None for NaN/inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def evaluate(problem: DualProblem, solution: DualSolution, reference: DualSolution,
             thresholds: Thresholds, diag=None, ref_diag=None) -> dict:
    """Measure one solution against its reference and apply ``thresholds``.

    Returns a dict with every measured number, ``checks`` (check name ->
    bool), ``failed`` (names of the failed checks) and ``passed``.
    """
    diag = diagnose(problem, solution) if diag is None else diag
    ref_diag = diagnose(problem, reference) if ref_diag is None else ref_diag
    t = thresholds

    dual, ref_dual = diag.dual_objective, ref_diag.dual_objective
    dual_rel = abs(dual - ref_dual) / max(abs(ref_dual), 1.0)
    eq = equality_residual(problem, solution.alpha)
    b_unique = bool(problem.fit_intercept and diag.b_method == "kkt"
                    and ref_diag.b_method == "kkt")
    # Where b is not unique the classifiers may legitimately differ by their b;
    # the scores Kβ are unique (w is), so both are then compared with the reference's b.
    common_b = problem.fit_intercept and not b_unique
    h_ref = train_scores(problem, reference)
    h = train_scores(problem, solution, b=reference.b if common_b else None)
    agreement, strict_agreement = prediction_agreement(h, h_ref, t.prediction_tie_tol)
    b, ref_b = np.asarray(solution.b, float), np.asarray(reference.b, float)
    b_diff = float(np.max(np.abs(b - ref_b), initial=0.0)) / max(
        1.0, float(np.max(np.abs(ref_b), initial=0.0)))
    b_kkt_diff = (float(np.max(np.abs(diag.b - ref_diag.b), initial=0.0))
                  / max(1.0, float(np.max(np.abs(ref_diag.b), initial=0.0))))
    # The solver's b against the b the KKT conditions give for its own α.
    b_self_diff = (float(np.max(np.abs(b - diag.b), initial=0.0))
                   / max(1.0, float(np.max(np.abs(diag.b), initial=0.0))))

    limits = {"dual_rel_diff": t.dual_rel_diff, "kkt_residual": t.kkt_residual,
              "relative_gap": t.relative_gap}
    if t.kkt_eps is not None:
        derived = derived_limits(problem, solution.alpha, t.kkt_eps, ref_dual,
                                 _residual_scale(problem, solution.alpha))
        limits.update(dual_rel_diff=derived["dual_rel_diff"],
                      kkt_residual=derived["kkt_residual"],
                      relative_gap=derived["gap"] / max(abs(diag.primal_objective),
                                                        abs(dual), 1e-300))
    checks = {
        "status": solution.status in t.statuses,
        "dual_objective": bool(dual_rel <= limits["dual_rel_diff"]),
        "kkt_residual": bool(diag.kkt_residual <= limits["kkt_residual"]),
        "duality_gap": bool(-t.weak_duality <= diag.relative_gap <= limits["relative_gap"]),
        "equality": bool(eq <= t.equality),
        "predictions": bool(agreement >= t.prediction_agreement),
        "b": bool(b_diff <= t.b_diff) if b_unique else True,
    }
    failed = [name for name in CHECKS if not checks[name]]
    return {
        "status": solution.status,
        "reference_status": reference.status,
        "dual_objective": _finite(dual),
        "reference_dual_objective": _finite(ref_dual),
        "primal_objective": _finite(diag.primal_objective),
        "dual_rel_diff": _finite(dual_rel),
        "duality_gap": _finite(diag.duality_gap),
        "relative_gap": _finite(diag.relative_gap),
        "kkt_residual": _finite(diag.kkt_residual),
        "kkt_residuals": {k: _finite(v) for k, v in diag.kkt_residuals.items()},
        "kkt_violation": _finite(diag.kkt_violation),
        "limits": {k: _finite(v) for k, v in limits.items()},
        "equality_residual": _finite(eq),
        "prediction_agreement": agreement,
        "prediction_agreement_strict": strict_agreement,
        "prediction_b": "reference" if common_b else "own",
        "b_method": diag.b_method,
        "reference_b_method": ref_diag.b_method,
        "b_unique": b_unique,
        "b_diff": _finite(b_diff),
        "b_kkt_diff": _finite(b_kkt_diff),
        "b_self_diff": _finite(b_self_diff),
        "b": [float(v) for v in b],
        "n_support": diag.n_support,
        "n_iter": int(solution.n_iter),
        "time": float(solution.time),
        "checks": checks,
        "failed": failed,
        "passed": not failed,
    }


# ---------------------------------------------------------------- running
def _solve(entry: SolverEntry, problem: DualProblem) -> DualSolution:
    """Run one solver, turning an exception into a 'failed' solution."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            solution = get_solver(entry.solver_name).solve(problem, **entry.solve_kwargs())
        if caught:
            solution.info = dict(solution.info)
            solution.info["warnings"] = "; ".join(sorted({str(w.message) for w in caught}))
        return solution
    except Exception as exc:  # noqa: BLE001 - a crash is a failed row, not a crashed suite
        return DualSolution(alpha=problem.zeros(), b=np.zeros(problem.n_classes),
                            status="failed", time=time.perf_counter() - start,
                            solver=entry.name,
                            info={"error": f"{type(exc).__name__}: {exc}",
                                  "traceback": traceback.format_exc(limit=5)})


def run_case(case: Case) -> list[dict]:
    """Solve one case with every solver it needs and return one row per solver of the case."""
    spec = PROBLEMS[case.problem]
    X, y = spec.data
    problem = build_problem(spec, case.machine, case.bias, case.kernel, case.C, data=(X, y))
    needed = list(case.solvers)
    for name in case.solvers:
        ref = SOLVERS[name].reference
        if ref not in needed:
            needed.append(ref)
    solutions, diags = {}, {}
    for name in needed:
        solutions[name] = _solve(SOLVERS[name], problem)
        try:
            diags[name] = diagnose(problem, solutions[name])
        except Exception as exc:  # noqa: BLE001
            solutions[name].status = "failed"
            solutions[name].info["error"] = f"diagnose: {type(exc).__name__}: {exc}"
            diags[name] = None
    rows = []
    for name in case.solvers:
        entry = SOLVERS[name]
        ref = entry.reference
        row = {
            "name": case.row_name(name),
            "case": case.name,
            "problem": case.problem,
            "kind": spec.kind,
            "m": int(len(y)),
            "Q": int(y.max()) + 1,
            "d": int(X.shape[1]),
            "C": case.C,
            "machine": case.machine,
            "bias": case.bias,
            "kernel": case.kernel,
            "gamma": spec.gamma(X) if case.kernel == "rbf" else None,
            "n_variables": int(problem.active.sum()),
            "solver": name,
            "reference": ref,
        }
        if diags[name] is None or diags[ref] is None:
            row.update(status=solutions[name].status, reference_status=solutions[ref].status,
                       checks={c: False for c in CHECKS}, failed=list(CHECKS), passed=False,
                       time=float(solutions[name].time))
        else:
            row.update(evaluate(problem, solutions[name], solutions[ref], entry.thresholds,
                                diag=diags[name], ref_diag=diags[ref]))
        info = {k: v for k, v in solutions[name].info.items()
                if isinstance(v, str | int | float | bool) or v is None}
        row["info"] = info
        rows.append(row)
    return rows
