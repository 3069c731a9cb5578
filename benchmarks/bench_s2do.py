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

Dense and CSR input.  The table's runs get dense arrays (``--sparse``: CSR
for every run, SVC included).  In a dense run, s2do is also run on CSR input
for the usps and mnist configurations (``--no-csr-compare`` skips them), and
the summary gives both times and their ratio: the Gram rows of a CSR
matrix take another code path than a dense one's.

SVC (libsvm, one-vs-one) is single-threaded whatever ``--threads`` says;
s2do gets ``--threads`` OpenMP threads (it falls back to one thread while
more are measured to be slower, see :mod:`msvm._core._s2do`).

Examples::

    python -m benchmarks.bench_s2do --quick                   # smoke run, ~1 min
    python -m benchmarks.bench_s2do usps-ww usps-cs usps-llw --repeat 3
    python -m benchmarks.bench_s2do --threads-compare usps-ww # 1 vs 2 threads
    python -m benchmarks.bench_s2do --plots                   # trace + scaling plots
    python -m benchmarks.bench_s2do mnist-cs --no-svc         # the 60000-example run
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.configs import CONFIGS, gamma_of
from benchmarks.data import load
from benchmarks.results import RESULTS, header, pyplot, write, write_summary
from benchmarks.runs import (
    announce,
    answer,
    check_configs,
    common_arguments,
    fit_svc,
    peak_rss_mb,
    predict_scores,
    run_main,
    spawn,
)

DEFAULT = ["usps-ww", "usps-cs", "usps-llw", "letter-ww", "letter-cs", "mnist10k-cs"]
SUBSETS = (1000, 2000, 4000, 7291)
#: Data sets whose configurations also get a CSR run of s2do in a dense run.
CSR_COMPARE = ("usps", "mnist")
CSV_FIELDS = ["config", "solver", "m", "threads", "cache_size", "fit_time", "dual", "primal",
              "relative_gap", "kkt_violation", "test_error", "n_sv", "n_iter",
              "kernel_evaluations", "cache_hit_rate", "peak_rss_mb", "n_parallel_iter", "status",
              "layout"]


# ------------------------------------------------------------------ one run
def run_one(spec: dict) -> dict:
    """Fit one solver on one configuration (called in a fresh process)."""
    dataset, n_train, machine, C, gamma, tol, cache, *_ = CONFIGS[spec["config"]]
    if spec.get("m"):
        n_train = spec["m"]
    layout = spec.get("layout", "dense")
    X, y, Xt, yt = load(dataset, n_train, sparse=layout == "csr")
    gamma = gamma_of(CONFIGS[spec["config"]], X)   # 'scale' from the training data
    classes, y_codes = np.unique(y, return_inverse=True)
    out = dict(config=spec["config"], solver=spec["solver"], m=int(X.shape[0]),
               cache_size=cache, threads=1, layout=layout)
    if spec["solver"] == "svc":
        out.update(fit_svc(X, y, Xt, yt, gamma, cache, C=CONFIGS[spec["config"]].peer_C))
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
        scores, sv = predict_scores(X, Xt, problem.beta(sol.alpha), gamma)
        hits, misses = sol.info["cache_hits"], sol.info["cache_misses"]
        out.update(
            threads=threads, dual=d.dual_objective, primal=d.primal_objective,
            relative_gap=d.relative_gap, kkt_violation=d.kkt_violation,
            test_error=float(np.mean(classes[np.argmax(scores, axis=1)] != yt)),
            n_sv=int(len(sv)), n_iter=int(sol.n_iter),
            kernel_evaluations=int(sol.n_kernel_evaluations),
            cache_hit_rate=hits / max(hits + misses, 1),
            n_parallel_iter=sol.info["n_parallel_iter"], status=sol.status,
        )
        if "trace" in sol.info:
            out["trace"] = sol.info["trace"]
    out["peak_rss_mb"] = peak_rss_mb()
    return out


# --------------------------------------------------------------- reporting
def median_time(rows, config, solver, **match) -> float | None:
    """Median fit time of the optimal runs of ``solver`` on ``config`` matching ``match``."""
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


def layouts(rows: list[dict], configs) -> list[str]:
    """s2do's median times on dense and on CSR input, per configuration run both ways."""
    lines = []
    for c in configs:
        dense = median_time(rows, c, "s2do", layout="dense")
        csr = median_time(rows, c, "s2do", layout="csr")
        if dense and csr:
            lines.append(f"layout {c}: dense {dense:.2f} s, CSR {csr:.2f} s "
                         f"(CSR / dense {csr / dense:.2f})")
    return lines


def plot_trace(row: dict, path: Path) -> None:
    plt = pyplot()

    t, dual, viol, _ = np.array(row["trace"]).T
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(6, 5))
    ax[0].plot(t, dual, marker=".")
    ax[0].set_ylabel("dual objective")
    ax[0].set_title(f"s2do on {row['config']} (m={row['m']}, {row['threads']} thread(s))")
    ax[1].semilogy(t, np.maximum(viol, 1e-16), marker=".")
    ax[1].axhline(CONFIGS[row["config"]].tol, color="grey", ls="--", label="tol")
    ax[1].set_ylabel("max KKT violation")
    ax[1].set_xlabel("seconds")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_scaling(rows: list[dict], config: str, path: Path) -> list[str]:
    plt = pyplot()

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
    parser.add_argument("--m", type=int, default=None,
                        help="first m training examples only (default: the configuration's)")
    parser.add_argument("--no-csr-compare", action="store_true",
                        help="skip the extra CSR runs of s2do on the usps and mnist "
                             "configurations")
    parser.add_argument("--repeat", type=int, default=1, help="runs per solver (median)")
    parser.add_argument("--threads", type=int, default=2, help="s2do threads (default 2)")
    parser.add_argument("--threads-compare", action="store_true",
                        help="also run s2do with 1 thread (thread speedup)")
    parser.add_argument("--no-svc", action="store_true", help="skip the SVC peer")
    parser.add_argument("--plots", action="store_true",
                        help="trace plot (usps-ww) and scaling plot (usps subsets)")
    parser.add_argument("--scaling-config", default="usps-ww",
                        help="usps configuration of the scaling plot")
    common_arguments(parser, timeout=7200)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0

    configs = args.configs or (["usps-ww", "usps-cs"] if args.quick else DEFAULT)
    check_configs(parser, configs)
    m = args.m or (1000 if args.quick else None)
    layout = "csr" if args.sparse else "dense"
    tag = args.tag or time.strftime("s2do-%Y%m%d-%H%M%S")
    specs = []
    for _ in range(args.repeat):
        for c in configs:
            if not args.no_svc:
                specs.append(dict(config=c, solver="svc", m=m, layout=layout))
            specs.append(dict(config=c, solver="s2do", m=m, threads=args.threads, layout=layout))
            if args.threads_compare and args.threads != 1:
                specs.append(dict(config=c, solver="s2do", m=m, threads=1, layout=layout))
            if (layout == "dense" and not args.no_csr_compare
                    and CONFIGS[c].dataset in CSR_COMPARE):
                specs.append(dict(config=c, solver="s2do", m=m, threads=args.threads,
                                  layout="csr", role="layout"))
    if args.plots:
        specs.append(dict(config="usps-ww", solver="s2do", m=m, threads=args.threads,
                          trace=0.25, role="trace", layout=layout))
        for n in SUBSETS[:2] if args.quick else SUBSETS:
            for _ in range(args.repeat):
                if not args.no_svc:
                    specs.append(dict(config=args.scaling_config, solver="svc", m=n,
                                      role="scaling", layout=layout))
                specs.append(dict(config=args.scaling_config, solver="s2do", m=n,
                                  threads=args.threads, role="scaling", layout=layout))
    rows = []
    for k, spec in enumerate(specs, 1):
        row = spawn("benchmarks.bench_s2do", spec, args.timeout)
        row["role"] = spec.get("role", "table")
        rows.append(row)
        announce(row,
                 f"[{k}/{len(specs)}] {row['config']} {row['solver']} m={row.get('m')} "
                 f"threads={row.get('threads')} {row.get('layout')}: "
                 f"{row.get('fit_time', float('nan')):.2f} s, "
                 f"test error {100 * row.get('test_error', float('nan')):.2f}%, "
                 f"status {row.get('status')}")
    table_rows = [r for r in rows if r["role"] == "table" and r.get("threads", 1) in
                  (args.threads, 1) and not (r["solver"] == "s2do"
                                             and r.get("threads") != args.threads)]
    lines = [header("s2do", tag, f"s2do threads={args.threads}, SVC 1 thread, {layout} input")]
    lines += summary(table_rows, configs)
    lines += layouts([r for r in rows if r["role"] in ("table", "layout")
                      and r.get("threads") == args.threads], configs)
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
    jsonl, csv_path = write(rows, tag, CSV_FIELDS)
    write_summary(lines, tag)
    print(f"wrote {jsonl}, {csv_path}, {RESULTS / (tag + '.txt')}")
    return 0


if __name__ == "__main__":
    run_main(main)
