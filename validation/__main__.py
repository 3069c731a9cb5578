"""``python -m validation``: run the validation matrix, print a table, write JSON.

Examples (from the repository root)::

    python -m validation                      # the full matrix, 2 worker processes
    python -m validation --quick              # one small problem (used by the tests)
    python -m validation --filter wine/ --n-jobs 1
    python -m validation --json validation/results/v.json
    python -m validation --dask tcp://host:8786   # the rows on a Dask cluster
    python -m validation --dask local --n-jobs 4  # on a LocalCluster of 4 worker processes

Every row is a task of :class:`joblib.Parallel` (one training problem and all
its solvers), so with ``--dask`` joblib's dask backend runs them on the
cluster's workers; the table and the JSON keep the matrix order whatever order
the rows finish in.

The exit code is 1 when any row fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from validation.bounds import build_bound_matrix, run_bounds
from validation.checks import CHECKS, build_matrix, run_case
from validation.problems import QUICK_PROBLEMS
from validation.registry import SOLVERS

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"

#: The --quick subset: one small problem, C = 1, every machine, kernel and bias setting.
QUICK = dict(problems=QUICK_PROBLEMS, Cs=(1.0,))

_HEADER = (f"{'problem':<13} {'m':>4} {'Q':>3} {'C':>5} {'machine':<6} {'bias':<5} {'kernel':<6} "
           f"{'solver':<6} {'dual obj':>14} {'rel.diff':>8} {'gap':>9} {'KKT':>8} {'time':>6}  "
           "result")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m validation",
        description="Cross-check msvm's solvers on a matrix of problems, machines, "
                    "kernels and bias settings.")
    parser.add_argument("--quick", action="store_true",
                        help="run a small subset (one small problem at C = 1, every machine, "
                             "kernel, bias setting and solver; four bound rows)")
    parser.add_argument("--filter", default=None, metavar="TEXT",
                        help="keep only rows whose name contains TEXT, e.g. 'iris/' or "
                             "'/msvm2/bias/rbf' (row names: "
                             "problem/C=../machine/bias|nobias/kernel/solver)")
    parser.add_argument("--json", default=str(DEFAULT_JSON), metavar="PATH",
                        help="where to write the results (default: %(default)s)")
    parser.add_argument("--n-jobs", "--jobs", dest="jobs", type=int, default=2, metavar="N",
                        help="rows solved at once (joblib worker processes; with --dask local, "
                             "the cluster's workers; default: %(default)s)")
    parser.add_argument("--dask", default=None, metavar="ADDRESS",
                        help="run the rows through joblib's dask backend on the Dask scheduler "
                             "at ADDRESS (e.g. tcp://host:8786), or 'local' for a LocalCluster "
                             "of N single-threaded worker processes on this machine (needs the "
                             "dask extra)")
    parser.add_argument("--solvers", default=None, metavar="A,B",
                        help="comma-separated registered solvers to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the row names and exit")
    parser.add_argument("--bounds", choices=("run", "skip", "only"), default="run",
                        help="the radius-margin rows (validation/bounds.py): run them after "
                             "the solver matrix (default), skip them, or run only them")
    args = parser.parse_args(argv)
    # Errors of their own, not tracebacks ("n_jobs == 0 in Parallel has no meaning",
    # "IsADirectoryError: '.'"); a LocalCluster needs at least one worker.
    if args.jobs == 0 or (args.dask == "local" and args.jobs < 1):
        allowed = "a positive number" if args.dask == "local" else "a positive number or -1"
        parser.error(f"--jobs must be {allowed} (workers), got {args.jobs}")
    if not args.json:
        parser.error("--json is an empty path")
    if not args.list:
        # Said now, not after the whole matrix has run (its rows were then lost).
        path = Path(args.json)
        try:
            if path.is_dir():
                raise IsADirectoryError(21, "is a folder", str(path))
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path.parent):
                pass
        except OSError as exc:
            parser.error(f"cannot write --json {args.json!r}: {exc.strerror or exc}")
    return args


def _fmt(x, spec: str, width: int) -> str:
    return f"{'-':>{width}}" if x is None else format(x, spec).rjust(width)


def format_row(row: dict) -> str:
    result = "PASS" if row["passed"] else "FAIL " + ",".join(row["failed"])
    return (f"{row['problem']:<13} {row['m']:>4} {row['Q']:>3} {row['C']:>5g} "
            f"{row['machine']:<6} {('yes' if row['bias'] else 'no'):<5} {row['kernel']:<6} "
            f"{row['solver']:<6} {_fmt(row.get('dual_objective'), '.8g', 14)} "
            f"{_fmt(row.get('dual_rel_diff'), '.1e', 8)} {_fmt(row.get('relative_gap'), '.1e', 9)} "
            f"{_fmt(row.get('kkt_residual'), '.1e', 8)} {_fmt(row.get('time'), '.2f', 6)}  "
            f"{result}")


def thresholds_table(solvers) -> list[str]:
    lines = ["Thresholds:"]
    for name in solvers:
        entry = SOLVERS[name]
        t = entry.thresholds
        # Rows stopped by the KKT rule are judged by limits derived from eps, not constants.
        limits = (f"dual rel. diff <= {t.dual_rel_diff:g}; KKT residual <= {t.kkt_residual:g}; "
                  f"-{t.weak_duality:g} <= rel. gap <= {t.relative_gap:g}; "
                  if t.kkt_eps is None else
                  f"dual rel. diff, KKT residual and rel. gap (>= -{t.weak_duality:g}) within "
                  f"the limits of an eps={t.kkt_eps:g} KKT point, per row (README 'Derived "
                  f"limits'); ")
        lines.append(
            f"  {name:<6} (vs {entry.reference}; {entry.tol_arg}="
            f"{'default' if entry.tol is None else entry.tol}): "
            f"status {' or '.join(t.statuses)}; {limits}"
            f"equality <= {t.equality:g} (x C); predictions agree >= "
            f"{t.prediction_agreement:.1%}; b diff <= {t.b_diff:g} where b unique "
            f"(b_method 'kkt' for both)")
    return lines


def _worst(rows: list[dict]) -> dict:
    def worst(key, fn=max, where=None):
        vals = [r[key] for r in rows if r.get(key) is not None and (where is None or where(r))]
        return fn(vals) if vals else None

    return {
        "dual_rel_diff": worst("dual_rel_diff"),
        "kkt_residual": worst("kkt_residual"),
        "relative_gap_max": worst("relative_gap"),
        "relative_gap_min": worst("relative_gap", min),
        "equality_residual": worst("equality_residual", where=lambda r: r["bias"]),
        "prediction_agreement": worst("prediction_agreement", min),
        "b_diff_unique": worst("b_diff", where=lambda r: r.get("b_unique")),
        "max_time": worst("time"),
    }


def summarize(rows: list[dict], elapsed: float) -> dict:
    return {
        "n_rows": len(rows),
        "n_pass": sum(r["passed"] for r in rows),
        "n_fail": sum(not r["passed"] for r in rows),
        "total_time": elapsed,
        "solver_time": sum(r.get("time", 0.0) for r in rows),
        "failed_rows": [r["name"] for r in rows if not r["passed"]],
        "failures_by_check": {c: sum(c in r["failed"] for r in rows) for c in CHECKS},
        "worst": _worst(rows),
        "worst_passing": _worst([r for r in rows if r["passed"]]),
        "n_b_unique": sum(bool(r.get("b_unique")) for r in rows if r["bias"]),
        "n_bias_rows": sum(r["bias"] for r in rows),
    }


def _print_worst(label: str, w: dict, summary: dict, out) -> None:
    print(f"{label}: dual rel. diff {_fmt(w['dual_rel_diff'], '.2e', 0)}, KKT residual "
          f"{_fmt(w['kkt_residual'], '.2e', 0)}, rel. gap in "
          f"[{_fmt(w['relative_gap_min'], '.2e', 0)}, {_fmt(w['relative_gap_max'], '.2e', 0)}], "
          f"equality {_fmt(w['equality_residual'], '.2e', 0)}, prediction agreement "
          f"{_fmt(w['prediction_agreement'], '.4f', 0)}, b diff (unique b, "
          f"{summary['n_b_unique']}/{summary['n_bias_rows']} bias rows) "
          f"{_fmt(w['b_diff_unique'], '.2e', 0)}, slowest row {_fmt(w['max_time'], '.1f', 0)} s",
          file=out)


@contextmanager
def dask_backend(address: str | None, n_workers: int):
    """joblib's dask backend on the cluster at ``address`` (``'local'``: a LocalCluster).

    Yields the number of jobs to give :class:`joblib.Parallel` (-1, every
    worker thread of the cluster, with Dask; ``n_workers`` without).
    """
    if address is None:
        yield n_workers
        return
    import joblib
    from distributed import Client, LocalCluster

    # The client is given to joblib only (not made the default one of this process).
    if address == "local":
        with (LocalCluster(n_workers=n_workers, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=None) as cluster,
              Client(cluster, set_as_default=False) as client,
              joblib.parallel_backend("dask", client=client)):
            yield -1
    else:
        with (Client(address, set_as_default=False) as client,
              joblib.parallel_backend("dask", client=client)):
            yield -1


def run(argv=None, out=sys.stdout) -> int:
    """Run the matrix as the command line does; returns the exit code."""
    args = parse_args(argv)
    with dask_backend(None if args.list else args.dask, args.jobs) as jobs:
        return _run(args, jobs, argv, out)


def _run(args, jobs: int, argv, out) -> int:
    """The matrix with ``jobs`` parallel rows (1: in this process, printed as they end)."""
    solvers = None if args.solvers is None else [s.strip() for s in args.solvers.split(",")]
    if solvers:
        unknown = [s for s in solvers if s not in SOLVERS]
        if unknown:
            print(f"Unknown solver(s) {unknown}; registered: {list(SOLVERS)}", file=sys.stderr)
            return 2
    matrix = dict(QUICK) if args.quick else {}
    cases = [] if args.bounds == "only" else build_matrix(solvers=solvers,
                                                          name_filter=args.filter, **matrix)
    bound_cases = [] if args.bounds == "skip" else build_bound_matrix(args.filter, args.quick)
    used = solvers or list(SOLVERS)
    if args.list:
        for case in cases:
            for s in case.solvers:
                print(case.row_name(s), file=out)
        for case in bound_cases:
            print(case.name, file=out)
        return 0
    if not cases and not bound_cases:
        print("No rows match.", file=sys.stderr)
        return 2
    if not cases:
        return _write_bounds_only(args, jobs, argv, out)
    where = f"{args.jobs} job(s)" if args.dask is None else f"the Dask cluster at {args.dask}"

    print("\n".join(thresholds_table(used)), file=out)
    n_rows = sum(len(c.solvers) for c in cases)
    print(f"\nRunning {n_rows} rows ({len(cases)} training problems) on {where}...\n", file=out)
    print(_HEADER, file=out)
    print("-" * len(_HEADER), file=out)
    out.flush()

    start = time.perf_counter()
    by_case = {}
    if jobs == 1:
        for case in cases:
            by_case[case.name] = run_case(case)
            for row in by_case[case.name]:
                print(format_row(row), file=out)
            out.flush()
    else:
        from joblib import Parallel, delayed

        # Expensive cases first (better load balance); the table keeps the matrix order.
        order = sorted(cases, key=lambda c: -c.cost())
        progress = sys.stderr.isatty()
        # No more workers than problems (--jobs 100000 spawned them all, for minutes).
        workers = min(jobs, len(order)) if jobs > 0 else jobs
        results = Parallel(n_jobs=workers, return_as="generator_unordered", batch_size=1)(
            delayed(run_case)(case) for case in order)
        for k, case_rows in enumerate(results, 1):
            by_case[case_rows[0]["case"]] = case_rows
            if progress:
                print(f"\r  {k}/{len(cases)} problems solved", end="", file=sys.stderr)
        if progress:
            print(file=sys.stderr)
        for case in cases:
            for row in by_case[case.name]:
                print(format_row(row), file=out)
    rows = [row for case in cases for row in by_case[case.name]]
    elapsed = time.perf_counter() - start

    summary = summarize(rows, elapsed)
    print("-" * len(_HEADER), file=out)
    print(f"Summary: {summary['n_rows']} rows, {summary['n_pass']} pass, "
          f"{summary['n_fail']} fail, total time {elapsed:.1f} s "
          f"(solver time {summary['solver_time']:.1f} s, {where})", file=out)
    for label, key in (("Worst (all rows)", "worst"), ("Worst (passing rows)", "worst_passing")):
        _print_worst(label, summary[key], summary, out)
    if summary["n_fail"]:
        print("Failed rows:", file=out)
        for r in rows:
            if not r["passed"]:
                print(f"  {r['name']}: {', '.join(r['failed'])} (status {r.get('status')}, "
                      f"reference {r.get('reference_status')})", file=out)

    bound_rows, bound_summary = ([], None) if not bound_cases else run_bounds(
        args.filter, args.quick, jobs, out)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "thresholds": {name: SOLVERS[name].describe() for name in used},
        "summary": summary,
        "rows": rows,
        "bounds": {"summary": bound_summary, "rows": bound_rows},
        "meta": _meta(args, argv),
    }
    path.write_text(json.dumps(payload, indent=1, allow_nan=False))
    print(f"Wrote {path}", file=out)
    return 1 if summary["n_fail"] or (bound_summary and bound_summary["n_fail"]) else 0


def _portable(arg: str) -> str:
    """A command-line argument as results files keep it: an absolute path becomes
    relative to the repository root (or, outside it, just the file name)."""
    path = Path(arg)
    if not path.is_absolute():
        return arg
    root = Path(__file__).resolve().parents[1]
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name


def _meta(args, argv) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    return {"argv": [_portable(a) for a in argv], "jobs": args.jobs,
            "dask": args.dask, "quick": args.quick, "filter": args.filter,
            "python": platform.python_version(), "platform": platform.platform()}


def _write_bounds_only(args, jobs: int, argv, out) -> int:
    """``--bounds only`` (or a filter that keeps only bound rows): run them, write the JSON."""
    rows, summary = run_bounds(args.filter, args.quick, jobs, out)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"bounds": {"summary": summary, "rows": rows}, "meta": _meta(args, argv)}
    path.write_text(json.dumps(payload, indent=1, allow_nan=False))
    print(f"Wrote {path}", file=out)
    return 1 if summary["n_fail"] else 0


def main(argv=None) -> None:
    """``python -m validation``: exit with :func:`run`'s status; 130 after Ctrl-C and 141
    when the reader of stdout goes away (``--list | head``), without a traceback, as the
    ``msvm`` command line does."""
    try:
        code = run(argv)
    except KeyboardInterrupt:
        print("validation: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        from msvm.cli import broken_pipe_status

        code = broken_pipe_status()
    except OSError as exc:   # e.g. no Dask scheduler at --dask ADDRESS, an unwritable --json
        print(f"python -m validation: error: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
