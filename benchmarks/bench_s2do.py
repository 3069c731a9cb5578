"""S2DO against scikit-learn's SVC on the standard configurations of BENCHMARKS.md.

Every run (one solver on one configuration) is a fresh subprocess, so its
peak resident memory is its own.  Per run it records the wall-clock fit
time, the dual and primal objectives and relative duality gap (s2do; SVC
solves other problems), the test error, the number of support vectors,
iterations, kernel evaluations (s2do), peak RSS, cache size and threads,
as one JSON line in ``results/<tag>.jsonl`` and a row of
``results/<tag>.csv``; the summary table gives the median fit time per
configuration and the ratio ours / SVC from the same run.

Plots (``--plots``): (a) dual objective and KKT violation against time for
s2do on usps-ww (the solver records a trace), (b) fit time against m on
usps subsets (1000, 2000, 4000, 7291), log-log, with the fitted slopes.

SVC (libsvm, one-vs-one) is single-threaded whatever ``--threads`` says;
s2do gets ``--threads`` OpenMP threads (it falls back to one thread while
more are measured to be slower, see :mod:`msvm._core._s2do`).

Examples::

    python benchmarks/bench_s2do.py --quick                   # smoke run, ~1 min
    python benchmarks/bench_s2do.py usps-ww usps-cs usps-llw --repeat 3
    python benchmarks/bench_s2do.py --threads-compare usps-ww # 1 vs 2 threads
    python benchmarks/bench_s2do.py --plots                   # trace + scaling plots
    python benchmarks/bench_s2do.py mnist-cs --no-svc         # the 60000-example run
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

#: BENCHMARKS.md's standard configurations:
#: id -> (dataset, training examples (None: all), machine, C, gamma, tol, cache_size MB).
CONFIGS = {
    "usps-ww": ("usps", None, "ww", 25.0, 0.0331574, 1e-3, 500),
    "usps-cs": ("usps", None, "cs", 2.5, 0.0331574, 1e-3, 500),
    "usps-llw": ("usps", None, "llw", 100 / 9, 0.0331574, 1e-3 / 9, 500),
    "letter-ww": ("letter", None, "ww", 2.5, 0.0512821, 1e-3, 2000),
    "letter-cs": ("letter", None, "cs", 2.5, 0.0512821, 1e-3, 2000),
    "letter-llw": ("letter", None, "llw", 40.0, 0.0512821, 1e-3 / 25, 2000),
    "mnist10k-cs": ("mnist", 10000, "cs", 25.0, 0.0378548, 1e-3, 1000),
    "mnist-cs": ("mnist", None, "cs", 25.0, 0.0378548, 1e-3, 2000),
}
DEFAULT = ["usps-ww", "usps-cs", "usps-llw", "letter-ww", "letter-cs", "mnist10k-cs"]
SVC_C = 10.0  # BENCHMARKS.md: the peer is SVC(C=10, same gamma, tol=1e-3, same cache_size)
SUBSETS = (1000, 2000, 4000, 7291)
CSV_FIELDS = ["config", "solver", "m", "threads", "cache_size", "fit_time", "dual", "primal",
              "relative_gap", "kkt_violation", "test_error", "n_sv", "n_iter",
              "kernel_evaluations", "cache_hit_rate", "peak_rss_mb", "n_parallel_iter", "status"]


# ------------------------------------------------------------------ one run
def load(dataset: str, n_train: int | None):
    """Dense (X, y, X_test, y_test) as BENCHMARKS.md says (MNIST pixels / 255)."""
    from msvm.datasets import shared_dataset

    X, y, Xt, yt = shared_dataset(dataset)
    if n_train is not None:
        X, y = X[:n_train], y[:n_train]
    X, Xt = X.toarray(), Xt.toarray()
    if dataset == "mnist":
        X /= 255.0
        Xt /= 255.0
    return X, y, Xt, yt


def run_one(spec: dict) -> dict:
    """Fit one solver on one configuration (called in a fresh process)."""
    dataset, n_train, machine, C, gamma, tol, cache = CONFIGS[spec["config"]]
    if spec.get("m"):
        n_train = spec["m"]
    X, y, Xt, yt = load(dataset, n_train)
    classes, y_codes = np.unique(y, return_inverse=True)
    out = dict(config=spec["config"], solver=spec["solver"], m=int(X.shape[0]),
               cache_size=cache, threads=1)
    if spec["solver"] == "svc":
        from sklearn.svm import SVC

        start = time.perf_counter()
        svc = SVC(C=SVC_C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=cache).fit(X, y)
        out["fit_time"] = time.perf_counter() - start
        out["test_error"] = float(np.mean(svc.predict(Xt) != yt))
        out["n_sv"] = int(svc.n_support_.sum())
        out["n_iter"] = int(np.sum(svc.n_iter_))
        out["status"] = "optimal"
    else:
        from msvm.diagnostics import diagnose
        from msvm.kernels import Kernel
        from msvm.machines import make_machine
        from msvm.problem import DualProblem
        from msvm.solvers import s2do

        threads = spec.get("threads", 1)
        start = time.perf_counter()
        problem = DualProblem(make_machine(machine, len(classes)), y_codes,
                              Kernel(X, "rbf", gamma=gamma), C, False)
        sol = s2do.solve(problem, tol=tol, cache_size=cache, n_jobs=threads,
                         trace=spec.get("trace"))
        out["fit_time"] = time.perf_counter() - start
        d = diagnose(problem, sol)
        beta = problem.beta(sol.alpha)
        sv = np.flatnonzero(np.any(beta != 0, axis=1))
        kernel = Kernel(X[sv], "rbf", gamma=gamma)
        pred = np.concatenate([np.argmax(kernel.block(Xt[k:k + 2000]) @ beta[sv], axis=1)
                               for k in range(0, len(Xt), 2000)])
        hits, misses = sol.info["cache_hits"], sol.info["cache_misses"]
        out.update(
            threads=threads, dual=d.dual_objective, primal=d.primal_objective,
            relative_gap=d.relative_gap, kkt_violation=d.kkt_violation,
            test_error=float(np.mean(classes[pred] != yt)), n_sv=int(len(sv)),
            n_iter=int(sol.n_iter), kernel_evaluations=int(sol.n_kernel_evaluations),
            cache_hit_rate=hits / max(hits + misses, 1),
            n_parallel_iter=sol.info["n_parallel_iter"], status=sol.status,
        )
        if "trace" in sol.info:
            out["trace"] = sol.info["trace"]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def spawn(spec: dict, timeout: float | None, script: str = __file__) -> dict:
    """Run ``spec`` in a subprocess of ``script --worker``; its JSON answer (or the failure)."""
    cmd = [sys.executable, script, "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(spec, status="timeout")
    if proc.returncode != 0:
        return dict(spec, status="failed", error=proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------- reporting
def write(rows: list[dict], tag: str, fields=CSV_FIELDS, csv_rows=None) -> tuple[Path, Path]:
    """``results/<tag>.jsonl`` (every key of every row) and ``results/<tag>.csv`` (``fields``
    of ``csv_rows``, default all rows)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    jsonl, csv_path = RESULTS / f"{tag}.jsonl", RESULTS / f"{tag}.csv"
    with jsonl.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows if csv_rows is None else csv_rows)
    return jsonl, csv_path


def median_time(rows, config, solver, **match):
    times = [r["fit_time"] for r in rows if r["config"] == config and r["solver"] == solver
             and r.get("status") == "optimal" and all(r.get(k) == v for k, v in match.items())]
    return statistics.median(times) if times else None


def summary(rows: list[dict], configs) -> list[str]:
    lines = [f"{'config':<12} {'s2do s':>8} {'SVC s':>8} {'ratio':>6} {'s2do err':>8} "
             f"{'SVC err':>8} {'s2do nSV':>8} {'iters':>8} {'kernel ev.':>11} {'RSS MB':>7}"]
    for c in configs:
        ours, peer = median_time(rows, c, "s2do"), median_time(rows, c, "svc")
        last = [r for r in rows if r["config"] == c and r["solver"] == "s2do"][-1:]
        svc = [r for r in rows if r["config"] == c and r["solver"] == "svc"][-1:]
        r = last[0] if last else {}
        ratio = f"{ours / peer:6.2f}" if ours and peer else "     -"
        lines.append(
            f"{c:<12} {ours or float('nan'):8.2f} {peer or float('nan'):8.2f} {ratio} "
            f"{100 * r.get('test_error', float('nan')):7.2f}% "
            f"{100 * (svc[0]['test_error'] if svc else float('nan')):7.2f}% "
            f"{r.get('n_sv', 0):8d} {r.get('n_iter', 0):8d} {r.get('kernel_evaluations', 0):11.3g} "
            f"{r.get('peak_rss_mb', float('nan')):7.0f}")
    return lines


def plot_trace(row: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, dual, viol, _ = np.array(row["trace"]).T
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(6, 5))
    ax[0].plot(t, dual, marker=".")
    ax[0].set_ylabel("dual objective")
    ax[0].set_title(f"s2do on {row['config']} (m={row['m']}, {row['threads']} thread(s))")
    ax[1].semilogy(t, np.maximum(viol, 1e-16), marker=".")
    ax[1].axhline(CONFIGS[row["config"]][5], color="grey", ls="--", label="tol")
    ax[1].set_ylabel("max KKT violation")
    ax[1].set_xlabel("seconds")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_scaling(rows: list[dict], config: str, path: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    lines = []
    for solver, label in (("s2do", "s2do"), ("svc", "SVC (libsvm OvO)")):
        pts = sorted({r["m"] for r in rows if r["solver"] == solver and r["config"] == config})
        ts = [median_time(rows, config, solver, m=m) for m in pts]
        pts = [m for m, t in zip(pts, ts, strict=True) if t]
        ts = [t for t in ts if t]
        if len(pts) < 2:
            continue
        slope, icpt = np.polyfit(np.log(pts), np.log(ts), 1)
        ax.loglog(pts, ts, marker="o", label=f"{label}: slope {slope:.2f}")
        ax.loglog(pts, np.exp(icpt) * np.array(pts, float) ** slope, ls=":", color="grey")
        lines.append(f"scaling {config} {solver}: fit time ~ m^{slope:.2f} "
                     f"({', '.join(f'{m}: {t:.2f}s' for m, t in zip(pts, ts, strict=True))})")
    ax.set_xlabel("training examples m")
    ax.set_ylabel("fit time (s)")
    ax.set_title(f"{config}: fit time against m (usps subsets)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return lines


# --------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations (default: {DEFAULT}); "
                        f"known: {list(CONFIGS)}")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: usps-ww and usps-cs on 1000 examples, once")
    parser.add_argument("--repeat", type=int, default=1, help="runs per solver (median)")
    parser.add_argument("--threads", type=int, default=2, help="s2do threads (default 2)")
    parser.add_argument("--threads-compare", action="store_true",
                        help="also run s2do with 1 thread (thread speedup)")
    parser.add_argument("--no-svc", action="store_true", help="skip the SVC peer")
    parser.add_argument("--plots", action="store_true",
                        help="trace plot (usps-ww) and scaling plot (usps subsets)")
    parser.add_argument("--scaling-config", default="usps-ww",
                        help="usps configuration of the scaling plot")
    parser.add_argument("--timeout", type=float, default=7200, help="seconds per run")
    parser.add_argument("--tag", default=None, help="results file stem (default: a timestamp)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_one(json.loads(args.worker))))
        return 0

    configs = args.configs or (["usps-ww", "usps-cs"] if args.quick else DEFAULT)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
    m = 1000 if args.quick else None
    tag = args.tag or time.strftime("s2do-%Y%m%d-%H%M%S")
    specs = []
    for _ in range(args.repeat):
        for c in configs:
            if not args.no_svc:
                specs.append(dict(config=c, solver="svc", m=m))
            specs.append(dict(config=c, solver="s2do", m=m, threads=args.threads))
            if args.threads_compare and args.threads != 1:
                specs.append(dict(config=c, solver="s2do", m=m, threads=1))
    if args.plots:
        specs.append(dict(config="usps-ww", solver="s2do", m=m, threads=args.threads,
                          trace=0.25, role="trace"))
        for n in SUBSETS[:2] if args.quick else SUBSETS:
            for _ in range(args.repeat):
                if not args.no_svc:
                    specs.append(dict(config=args.scaling_config, solver="svc", m=n,
                                      role="scaling"))
                specs.append(dict(config=args.scaling_config, solver="s2do", m=n,
                                  threads=args.threads, role="scaling"))
    rows = []
    for k, spec in enumerate(specs, 1):
        row = spawn(spec, args.timeout)
        row["role"] = spec.get("role", "table")
        rows.append(row)
        print(f"[{k}/{len(specs)}] {row['config']} {row['solver']} m={row.get('m')} "
              f"threads={row.get('threads')}: {row.get('fit_time', float('nan')):.2f} s, "
              f"test error {100 * row.get('test_error', float('nan')):.2f}%, "
              f"status {row.get('status')}", flush=True)
        if row.get("error"):
            print(row["error"], file=sys.stderr, flush=True)
    table_rows = [r for r in rows if r["role"] == "table" and r.get("threads", 1) in
                  (args.threads, 1) and not (r["solver"] == "s2do"
                                             and r.get("threads") != args.threads)]
    lines = [f"msvm s2do benchmark {tag}: {platform.platform()}, python "
             f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
             f"{os.getloadavg()[0]:.1f} at the end; s2do threads={args.threads}, SVC 1 thread"]
    lines += summary(table_rows, configs)
    if args.threads_compare:
        for c in configs:
            t2 = median_time([r for r in rows if r["role"] == "table"], c, "s2do",
                             threads=args.threads)
            t1 = median_time([r for r in rows if r["role"] == "table"], c, "s2do", threads=1)
            if t1 and t2:
                lines.append(f"threads {c}: 1 thread {t1:.2f} s, {args.threads} threads "
                             f"{t2:.2f} s, speedup {t1 / t2:.2f}")
    if args.plots:
        trace = [r for r in rows if r["role"] == "trace" and isinstance(r.get("trace"), list)]
        if trace:
            plot_trace(trace[0], RESULTS / f"{tag}-trace.png")
        lines += plot_scaling([r for r in rows if r["role"] == "scaling"],
                              args.scaling_config, RESULTS / f"{tag}-scaling.png")
    jsonl, csv_path = write(rows, tag)
    (RESULTS / f"{tag}.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {jsonl}, {csv_path}, {RESULTS / (tag + '.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
