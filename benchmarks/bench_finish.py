"""The active-set finish of the coordinate solvers on small problems: with it and without.

S2DO, the ``linear`` solver, the online solver run to optimality (``epochs=None``)
and S2DO with a bias (every inner solve) hand a small problem they have not solved
after a number of passes (online: steps) per variable to
:func:`msvm.solvers._qp.finish` (``finish=True``, the default).  This benchmark fits
every small problem of the validation suite (``validation/problems.py``: 60 to 178
points) with WW, CS and LLW, a linear and an RBF kernel, C = 1 and C = 100, at the
default ``tol`` (1e-3), with the finish and without, and one-vs-one ``SVC`` with the
same kernel and C as the peer (it always fits a bias).  Times are medians of 3 fits
(1 for a fit over 2 s) as ``fit`` runs them, one thread, in this process.  Writes
``benchmarks/results/<tag>.jsonl``, ``.csv``, ``.txt`` and ``-times.png`` (time
without the finish against time with it)::

    python -m benchmarks.bench_finish --tag finish [--solvers s2do,linear,online,s2do_bias]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

from benchmarks.results import RESULTS, check_writable, header, pyplot, write, write_summary
from benchmarks.runs import fit_with_solution, run_main

FIELDS = ["problem", "model", "kernel", "C", "solver", "m", "n_variables", "finish_after",
          "time_finish_s",
          "time_plain_s", "ratio", "passes_finish", "passes_plain", "finish_time_s",
          "svc_s", "ratio_to_svc", "kkt_violation", "status"]
MODELS = ("ww", "cs", "llw")
KERNELS = ("linear", "rbf")
CS = (1.0, 100.0)
SOLVERS = ("s2do", "linear", "online", "s2do_bias")
#: Estimator parameters of each solver beyond the solver's name (the online solver runs to
#: tol; S2DO with a bias is the default solver of a machine with one).
PARAMS = {"s2do": {}, "linear": {}, "online": {"epochs": None},
          "s2do_bias": {"solver": "auto", "fit_intercept": True}}
#: Hand-over point per variable: passes (online: 2-D steps).
PER_VARIABLE = {"s2do_bias": "s2do"}


def timed_fit(make, X, y, repeat: int = 3) -> tuple[float, object]:
    """Median time of ``make().fit(X, y)`` over ``repeat`` fits (one if slow), and the last."""
    times = []
    for _ in range(repeat):
        est = make()
        start = time.perf_counter()
        result = est.fit(X, y)
        times.append(time.perf_counter() - start)
        if times[-1] > 2.0:
            break
    return statistics.median(times), result


class _Fit:
    """An estimator-like ``fit`` (:func:`benchmarks.runs.fit_with_solution`, the finish
    switched), keeping the fitted estimator, its problem and the solver's ``info``."""

    def __init__(self, finish: bool, **params):
        self.finish, self.params = finish, params

    def fit(self, X, y):
        from msvm import MultiClassSVC

        est = MultiClassSVC(**self.params)
        setup, solution = fit_with_solution(est, X, y, finish=self.finish)
        self.estimator, self.problem, self.info = est, setup.problem, solution.info
        return self


def run_case(name: str, X, y, model: str, kernel: str, C: float, solver: str) -> dict:
    """One problem and setting: msvm with and without the finish, and SVC."""
    from sklearn.svm import SVC

    from msvm.solvers import _qp, get_solver

    params = dict(dict(model=model, kernel=kernel, C=C, solver=solver, random_state=0),
                  **PARAMS[solver])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_on, on = timed_fit(lambda: _Fit(True, **params), X, y)
        t_off, off = timed_fit(lambda: _Fit(False, **params), X, y)
        t_svc, _ = timed_fit(lambda: SVC(kernel=kernel, C=C, gamma="scale"), X, y)
    problem = on.problem
    finish_after = _qp.finish_after(
        problem, get_solver(PER_VARIABLE.get(solver, solver)).FINISH_AFTER)
    return {"problem": name, "model": model, "kernel": kernel, "C": C, "solver": solver,
            "m": len(y), "n_variables": int(problem.active.sum()),
            "finish_after": finish_after,
            "time_finish_s": t_on, "time_plain_s": t_off, "ratio": t_on / t_off,
            "passes_finish": int(on.estimator.n_iter_), "passes_plain": int(off.estimator.n_iter_),
            "finish_time_s": float(on.info["finish_time"]),
            "svc_s": t_svc, "ratio_to_svc": t_on / t_svc,
            "kkt_violation": float(on.estimator.solution_["kkt_violation"]),
            "status": on.estimator.solution_["status"]}


def plot(rows: list[dict], path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    for solver, marker in zip(SOLVERS, "osD^", strict=True):
        sub = [r for r in rows if r["solver"] == solver]
        ax.scatter([r["time_plain_s"] for r in sub], [r["time_finish_s"] for r in sub],
                   marker=marker, label=solver, alpha=0.7)
    lo = min(min(r["time_plain_s"], r["time_finish_s"]) for r in rows)
    hi = max(max(r["time_plain_s"], r["time_finish_s"]) for r in rows)
    ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="equal")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("fit time without the finish (s)")
    ax.set_ylabel("fit time with the finish (s)")
    ax.set_title("Active-set finish, small problems (tol 1e-3)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    from validation.problems import PROBLEMS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="finish", help="results file stem")
    parser.add_argument("--problems", default=None,
                        help="comma-separated validation problems (default: all)")
    parser.add_argument("--solvers", default=",".join(SOLVERS),
                        help=f"comma-separated solvers (default: {','.join(SOLVERS)})")
    args = parser.parse_args(argv)
    names = args.problems.split(",") if args.problems else list(PROBLEMS)
    solvers = args.solvers.split(",")
    for what, given, known in (("problem", names, PROBLEMS), ("solver", solvers, SOLVERS)):
        if unknown := [x for x in given if x not in known]:
            parser.error(f"unknown {what}(s) {unknown}; known: {list(known)}")
    check_writable(parser, args.tag)
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1):
        for name in names:
            X, y = PROBLEMS[name].data
            y = np.unique(y, return_inverse=True)[1]
            for model in MODELS:
                for kernel in KERNELS:
                    for C in CS:
                        for solver in solvers:
                            if solver == "linear" and kernel != "linear":
                                continue
                            row = run_case(name, X, y, model, kernel, C, solver)
                            print(f"{name:13s} {model:3s} {kernel:6s} C={C:<5g} {solver:9s} "
                                  f"{row['time_plain_s']:8.3f} -> {row['time_finish_s']:7.3f} s"
                                  f" ({row['passes_plain']} -> {row['passes_finish']} passes)",
                                  flush=True)
                            rows.append(row)
    write(rows, args.tag, FIELDS)
    plot(rows, RESULTS / f"{args.tag}-times.png")
    slow = [r for r in rows if r["time_plain_s"] > 0.1]
    lines = [header("finish", args.tag, "medians of 3 fits (1 over 2 s), one thread, tol 1e-3")]
    lines.append(f"{len(rows)} fits; {len(slow)} take over 0.1 s without the finish:")
    for r in sorted(slow, key=lambda r: -r["time_plain_s"]):
        lines.append(f"  {r['problem']}/{r['model']}/{r['kernel']}/C={r['C']:g}/{r['solver']}: "
                     f"{r['time_plain_s']:.3f} -> {r['time_finish_s']:.3f} s "
                     f"(ratio {r['ratio']:.2f}; SVC {r['svc_s']:.4f} s)")
    ratios = [r["ratio"] for r in rows]
    lines.append(f"ratio with/without over all fits: median {statistics.median(ratios):.2f}, "
                 f"max {max(ratios):.2f}; over the slow ones: median "
                 f"{statistics.median([r['ratio'] for r in slow]) if slow else float('nan'):.2f}")
    for solver in solvers:
        sub = [r for r in slow if r["solver"] == solver]
        if sub:
            lines.append(f"{solver}: {len(sub)} slow fits, ratio median "
                         f"{statistics.median(r['ratio'] for r in sub):.2f}, max "
                         f"{max(r['ratio'] for r in sub):.2f}; summed time "
                         f"{sum(r['time_plain_s'] for r in sub):.2f} -> "
                         f"{sum(r['time_finish_s'] for r in sub):.2f} s")
    lines.append(f"every fit optimal: {all(r['status'] == 'optimal' for r in rows)}")
    write_summary(lines, args.tag)
    return 0


if __name__ == "__main__":
    run_main(main)
