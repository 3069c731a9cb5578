"""Radius–margin rows of the validation suite: the bound against exact leave-one-out.

For every row (one M-SVM² training problem) the row

* computes the exact leave-one-out (LOO) error count with
  :func:`msvm.model_selection.loo_error` (solver ``'s2do'`` at tol 1e-6
  without a bias, ``'osqp'`` with one);
* computes the radius–margin bound (:func:`msvm.bounds.radius_margin_bound`)
  from the reference solution (``'cvxpy'``) and from every other solver
  that handles the row (``'osqp'``, and ``'s2do'`` without a bias);
* and checks

  ==============  ==========================================================
  ``bound``       bound ≥ LOO error count (the theorem)
  ``lemma``       every LOO error satisfies the key lemma's necessary
                  condition (``RadiusMarginBound.candidates``)
  ``agreement``   |bound_solver − bound_ref| / bound_ref ≤ 1e-6 for every
                  solver
  ==============  ==========================================================

The matrix: generated Gaussian problems (:func:`validation.problems._blobs`)
with Q ∈ {2, 3, 4, 5}, separable (spread 4, std 0.5) and overlapping (spread
1.5, std 1), m ∈ {20, 30, 40, 50}, linear and RBF kernels (γ = 1/(d·Var X)),
C ∈ {0.01, 0.1, 1} (linear) or {0.1, 1, 10} (RBF), without a bias (192
rows); the same with a bias at m = 20 and C = 1 (16 rows; each LOO
retraining is a reference QP solve); and stratified subsets of iris, wine
and glass (45 points) and vowel (33, three per class), both kernels, C ∈
{0.1, 1} (linear) or {0.1, 10} (RBF) (16 rows).  Row names read
``bounds/<problem>/m=<m>/C=<C>/<bias|nobias>/<kernel>``.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass

import numpy as np

from msvm import MultiClassSVC
from msvm.bounds import radius_margin_bound
from msvm.kernels import Kernel
from msvm.machines import make_machine
from msvm.model_selection import loo_error
from msvm.problem import DualProblem
from msvm.solvers import get_solver
from validation.problems import _blobs, _libsvm

__all__ = ["BoundCase", "build_bound_matrix", "run_bound_case", "summarize_bounds",
           "BOUND_CHECKS", "AGREEMENT_TOL"]

#: Relative agreement required between the bound from a solver's and the reference's solution.
AGREEMENT_TOL = 1e-6
BOUND_CHECKS = ("bound", "lemma", "agreement")
REFERENCE = "cvxpy"
#: C values per kernel.  With a linear kernel of rank d ≤ 4 and C = 10 the
#: M-SVM² is close to a hard-margin machine on a singular Gram matrix, where
#: s2do's coordinate steps crawl (a row took minutes), so its C range is lower.
GENERATED_CS = {"linear": (0.01, 0.1, 1.0), "rbf": (0.1, 1.0, 10.0)}
REAL_CS = {"linear": (0.1, 1.0), "rbf": (0.1, 10.0)}
#: KKT tolerance of the s2do retrainings of the leave-one-out (gradient units; γ = 1/(Q−1)).
LOO_TOL = 1e-6


@dataclass(frozen=True)
class BoundCase:
    """One M-SVM² training problem of the bound rows."""

    problem: str
    m: int
    C: float
    bias: bool
    kernel: str
    generator: object
    seed: int

    @property
    def name(self) -> str:
        return (f"bounds/{self.problem}/m={self.m}/C={self.C:g}/"
                f"{'bias' if self.bias else 'nobias'}/{self.kernel}")

    def data(self):
        X, y = self.generator(self.seed)
        _, y = np.unique(np.asarray(y), return_inverse=True)
        return np.ascontiguousarray(X, dtype=np.float64), y.astype(np.intp)

    def cost(self) -> float:
        Q = int(self.problem.split("q")[-1]) if "-q" in self.problem else 11
        return float(self.m) ** 2 * Q * (20.0 if self.bias else 1.0)


def build_bound_matrix(name_filter: str | None = None, quick: bool = False) -> list[BoundCase]:
    """The bound rows (see the module docstring); ``quick`` keeps four small ones."""
    cases = []
    for Q in (2, 3, 4, 5):
        for kind, spread, std in (("sep", 4.0, 0.5), ("overlap", 1.5, 1.0)):
            for kernel in ("linear", "rbf"):
                for k, m in enumerate((20, 30, 40, 50)):
                    seed = 100 * Q + 10 * k + (kind == "sep")
                    gen = _blobs(m, Q, 2 + Q % 3, spread=spread, std=std)
                    for C in GENERATED_CS[kernel]:
                        cases.append(BoundCase(f"{kind}-q{Q}", m, C, False, kernel, gen, seed))
                    if m == 20:
                        cases.append(BoundCase(f"{kind}-q{Q}", m, 1.0, True, kernel, gen, seed))
    real = (("iris", "iris/iris.scale.bz2", 45), ("wine", "wine/wine.scale.bz2", 45),
            ("glass", "glass/glass.scale.bz2", 45), ("vowel", "vowel/vowel.scale.bz2", 33))
    for name, path, m in real:
        for kernel in ("linear", "rbf"):
            for C in REAL_CS[kernel]:
                cases.append(BoundCase(name, m, C, False, kernel, _libsvm(path, n=m), 7))
    if quick:
        cases = [c for c in cases if c.m == 20 and c.C == 1.0 and c.problem == "overlap-q3"]
    if name_filter is not None:
        cases = [c for c in cases if name_filter in c.name]
    return cases


def _problem(case: BoundCase, X, y) -> DualProblem:
    var = float(X.var())
    gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    kernel = Kernel(X, case.kernel, gamma=gamma)
    return DualProblem(make_machine("msvm2", int(y.max()) + 1), y, kernel, case.C, case.bias)


def run_bound_case(case: BoundCase) -> dict:
    """Solve, bound and leave-one-out one case; returns its row."""
    row = {"name": case.name, "problem": case.problem, "m": case.m, "C": case.C,
           "bias": case.bias, "kernel": case.kernel}
    start = time.perf_counter()
    try:
        X, y = case.data()
        problem = _problem(case, X, y)
        row["Q"] = problem.n_classes
        ref = radius_margin_bound(problem, get_solver(REFERENCE).solve(problem))
        solvers = {"osqp": {}} if case.bias else {"osqp": {}, "s2do": {"tol": 1e-10}}
        rel = {}
        for name, options in solvers.items():
            other = radius_margin_bound(problem, get_solver(name).solve(problem, **options),
                                        ball=ref.ball)
            rel[name] = abs(other.bound - ref.bound) / ref.bound
        est = MultiClassSVC(model="msvm2", C=case.C, kernel=case.kernel,
                            gamma=problem.kernel.gamma, fit_intercept=case.bias,
                            solver="osqp" if case.bias else "s2do",
                            tol=1e-3 if case.bias else LOO_TOL)  # osqp has no tol
        loo = loo_error(est, X, y)
        row.update(
            bound=ref.bound, radius2=ref.radius2, sum_alpha=ref.sum_alpha,
            n_candidates=ref.n_candidates, loo_errors=loo.n_errors,
            n_retrained=loo.n_retrained, reduced_kkt_violation=loo.reduced_kkt_violation,
            ratio=ref.bound / loo.n_errors if loo.n_errors else None,
            agreement=rel, missed_by_lemma=int(np.sum(loo.errors & ~ref.candidates)))
        checks = {"bound": ref.bound >= loo.n_errors,
                  "lemma": row["missed_by_lemma"] == 0,
                  "agreement": all(v <= AGREEMENT_TOL for v in rel.values())}
    except Exception:  # a crashing row is a failed row, not a crashed suite
        row["error"] = traceback.format_exc()
        checks = dict.fromkeys(BOUND_CHECKS, False)
    row["checks"] = checks
    row["failed"] = [c for c in BOUND_CHECKS if not checks[c]]
    row["passed"] = not row["failed"]
    row["time"] = time.perf_counter() - start
    return row


def format_bound_row(row: dict) -> str:
    ratio = row.get("ratio")
    agree = max(row.get("agreement", {"-": math.nan}).values(), default=math.nan)
    result = "PASS" if row["passed"] else "FAIL " + ",".join(row["failed"])
    return (f"{row['name']:<42} {row.get('Q', '-'):>3} {row.get('loo_errors', '-'):>4} "
            f"{row.get('n_candidates', '-'):>4} {row.get('bound', math.nan):>10.2f} "
            f"{'-' if ratio is None else f'{ratio:.2f}':>8} {agree:>8.1e} "
            f"{row['time']:>6.2f}  {result}")


BOUND_HEADER = (f"{'bound row':<42} {'Q':>3} {'LOO':>4} {'cand':>4} {'bound':>10} "
                f"{'bnd/LOO':>8} {'agree':>8} {'time':>6}  result")


def summarize_bounds(rows: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
    agree = [v for r in rows for v in r.get("agreement", {}).values()]
    return {
        "n_rows": len(rows),
        "n_pass": sum(r["passed"] for r in rows),
        "n_fail": sum(not r["passed"] for r in rows),
        "n_generated": sum(r["problem"].split("-")[0] in ("sep", "overlap") for r in rows),
        "n_with_loo_errors": len(ratios),
        "ratio_min": min(ratios) if ratios else None,
        "ratio_median": float(np.median(ratios)) if ratios else None,
        "candidates_over_loo_median": float(np.median(
            [r["n_candidates"] / r["loo_errors"] for r in rows if r.get("loo_errors")]))
        if ratios else None,
        "agreement_max": max(agree) if agree else None,
        "failed_rows": [r["name"] for r in rows if not r["passed"]],
        "time": sum(r["time"] for r in rows),
    }


def run_bounds(name_filter: str | None = None, quick: bool = False, jobs: int = 2,
               out=None) -> tuple[list[dict], dict]:
    """Run the bound rows (most expensive first), print the table and summary.

    Returns the rows (in matrix order) and :func:`summarize_bounds` of them.
    """
    import sys

    out = sys.stdout if out is None else out
    cases = build_bound_matrix(name_filter, quick)
    if not cases:
        return [], summarize_bounds([])
    print(f"\nRadius-margin rows: {len(cases)} M-SVM2 problems, bound >= exact LOO errors, "
          f"every LOO error meets the key lemma, bound of each solver within "
          f"{AGREEMENT_TOL:g} of {REFERENCE}'s ({jobs} job(s))...\n", file=out)
    print(BOUND_HEADER, file=out)
    print("-" * len(BOUND_HEADER), file=out)
    start = time.perf_counter()
    if jobs == 1:
        rows = [run_bound_case(c) for c in cases]
    else:
        from joblib import Parallel, delayed

        order = sorted(cases, key=lambda c: -c.cost())
        # No more workers than rows (--jobs 100000 spawned them all, for minutes).
        workers = min(jobs, len(order)) if jobs > 0 else jobs
        done = Parallel(n_jobs=workers, return_as="generator_unordered", batch_size=1)(
            delayed(run_bound_case)(c) for c in order)
        by_name = {row["name"]: row for row in done}
        rows = [by_name[c.name] for c in cases]
    for row in rows:
        print(format_bound_row(row), file=out)
    summary = summarize_bounds(rows)
    summary["wall_time"] = time.perf_counter() - start
    print("-" * len(BOUND_HEADER), file=out)

    def fmt(x):
        return "-" if x is None else f"{x:.3g}"

    print(f"Bound summary: {summary['n_rows']} rows ({summary['n_generated']} generated), "
          f"{summary['n_pass']} pass, {summary['n_fail']} fail; bound/LOO over the "
          f"{summary['n_with_loo_errors']} rows with LOO errors: min "
          f"{fmt(summary['ratio_min'])}, median {fmt(summary['ratio_median'])}; lemma "
          f"candidates/LOO median {fmt(summary['candidates_over_loo_median'])}; worst solver "
          f"agreement {fmt(summary['agreement_max'])}; {summary['wall_time']:.1f} s "
          f"(row time {summary['time']:.1f} s)", file=out)
    for row in rows:
        if not row["passed"]:
            print(f"  FAILED {row['name']}: {', '.join(row['failed'])}"
                  f"{' ' + row['error'].splitlines()[-1] if 'error' in row else ''}", file=out)
    return rows, summary


if __name__ == "__main__":  # python -m validation.bounds [filter]
    import sys

    _rows, _summary = run_bounds(sys.argv[1] if len(sys.argv) > 1 else None)
    sys.exit(1 if _summary["n_fail"] else 0)
