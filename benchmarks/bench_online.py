"""Online solver against batch S2DO: seed 004's Tables 4.3-4.4 / 5.2-5.3 and Figures 4.1-4.5.

For each configuration of BENCHMARKS.md (default: usps-llw, usps-cs,
letter-cs), in the same run and each in a fresh subprocess:

* online ×2 with each of the three working-set strategies, recording its
  build-up curve (time, kernel evaluations, dual objective, test error)
  and a point at the end of every epoch.  With the same seed the first
  epoch of a ×2 run *is* the ×1 run (the iterates do not depend on the
  number of epochs asked for), so the ×1 row of the table is read at the
  end of epoch 1 of the same run;
* batch S2DO (:func:`msvm.solvers.s2do.solve`, same kernel, C, γ, ε and
  cache), recording the same curve;
* with ``--cache20``: online (best strategy of the table) and batch again
  with ``cache_size`` at 20 % of the full Gram matrix (seed 004 §4.3.4);
* with ``--partial-fit``: ``MultiClassSVC.partial_fit`` over the training
  set in 10 chunks against ``fit`` with ``solver='online', epochs=1``.

Time is the solver's own (the curve's test-error evaluations are excluded);
kernel evaluations are the training kernel values computed (batch: m per
Gram row; online: one per entry of a row over the support patterns).

Writes ``results/<tag>.jsonl`` (one line per run, curves included),
``results/<tag>.csv``, ``results/<tag>.txt`` (the tables and the checks of
issue 5's "done when") and the figures ``results/<tag>-<config>-*.png``.

``--sparse`` feeds both solvers CSR input instead of dense arrays.

Examples::

    python -m benchmarks.bench_online --quick                    # 1000 usps patterns, ~2 min
    python -m benchmarks.bench_online usps-llw usps-cs letter-cs --cache20 --partial-fit
    python -m benchmarks.bench_online letter-llw --batch-timeout 1800
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.configs import CONFIGS, gamma_of
from benchmarks.data import load
from benchmarks.results import RESULTS, header, pyplot, write_csv, write_jsonl, write_summary
from benchmarks.runs import (
    announce,
    answer,
    check_configs,
    common_arguments,
    peak_rss_mb,
    run_main,
    spawn,
)
from msvm.solvers.online import STRATEGIES

#: The configurations of BENCHMARKS.md this benchmark runs, and the interval of
#: their build-up curves (seconds between points).
INTERVALS = {"usps-ww": 1.0, "usps-cs": 1.0, "usps-llw": 1.5, "letter-ww": 3.0,
             "letter-cs": 3.0, "letter-llw": 10.0}
DEFAULT = ["usps-llw", "usps-cs", "letter-cs"]
LABELS = {"s2do_all": "S2DO_ALL", "random_pattern_s2do_all": "RANDOM_PATTERN_S2DO_ALL",
          "random_pattern_s2do_pattern": "RANDOM_PATTERN_S2DO_PATTERN", "s2do": "batch s2do"}
CSV_FIELDS = ["config", "solver", "strategy", "epochs_run", "m", "cache_size", "fit_time",
              "dual", "test_error", "kernel_evaluations", "n_sv", "n_iter", "status",
              "x1_time", "x1_dual", "x1_test_error", "x1_kernel_evaluations", "x1_n_sv",
              "peak_rss_mb", "layout"]


# ------------------------------------------------------------------ one run
def gram_mb(m: int) -> float:
    """Size of the full m × m Gram matrix in MB (float64)."""
    return m * m * 8 / 2**20


def run_one(spec: dict) -> dict:
    """One solver run on one configuration (called in a fresh process)."""
    from msvm.diagnostics import diagnose
    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem

    dataset, n_train, machine, C, gamma, tol, cache, *_ = CONFIGS[spec["config"]]
    layout = spec.get("layout", "dense")
    X, y, Xt, yt = load(dataset, spec.get("m") or n_train, sparse=layout == "csr")
    gamma = gamma_of(CONFIGS[spec["config"]], X)   # 'scale' from the training data
    classes, y_codes = np.unique(y, return_inverse=True)
    test_codes = np.searchsorted(classes, yt)
    if spec.get("cache_fraction"):
        cache = spec["cache_fraction"] * gram_mb(len(y))
    interval = spec.get("interval") or INTERVALS[spec["config"]]
    out = dict(config=spec["config"], solver=spec["solver"], strategy=spec.get("strategy"),
               m=int(X.shape[0]), cache_size=float(cache), role=spec.get("role", "table"),
               layout=layout)
    if spec["solver"] == "partial_fit":
        return dict(out, **run_partial_fit(X, y, Xt, yt, machine, C, gamma, tol, cache,
                                           spec.get("chunks", 10)))
    problem = DualProblem(make_machine(machine, len(classes)), y_codes,
                          Kernel(X, "rbf", gamma=gamma), C, False)
    start = time.perf_counter()
    if spec["solver"] == "s2do":
        from msvm.solvers import s2do

        sol = s2do.solve(problem, tol=tol, cache_size=cache, trace=interval,
                         test_set=(Xt, test_codes))
    else:
        from msvm.solvers import online

        sol = online.solve(problem, tol=tol, cache_size=cache, online_strategy=spec["strategy"],
                           epochs=spec.get("epochs", 2), random_state=spec.get("seed", 0),
                           trace=interval, test_set=(Xt, test_codes))
    wall = time.perf_counter() - start
    d = diagnose(problem, sol)
    curve = sol.info["curve"]
    beta = problem.beta(sol.alpha)
    out.update(
        fit_time=float(sol.time), wall_time=wall, dual=d.dual_objective,
        test_error=curve["test_error"][-1], kernel_evaluations=int(sol.n_kernel_evaluations),
        n_sv=int(np.count_nonzero(np.any(beta != 0, axis=1))), n_iter=int(sol.n_iter),
        status=sol.status, kkt_violation=d.kkt_violation, curve=curve,
        curve_overhead=sol.info.get("curve_overhead"),
    )
    if spec["solver"] == "online":
        out["epochs_run"] = sol.info["epochs"]
        out["steps"] = sol.info["steps"]
        out["rates"] = sol.info["rates"]
        out["cache_peak_bytes"] = sol.info["cache_peak_bytes"]
        # The end of epoch 1: the x1 run (same seed, same first epoch).
        ends = [k for k, (e, ph) in enumerate(zip(curve["epoch"], curve["phase"], strict=True))
                if e == 1.0 and ph == "pass"]
        if ends:
            k = ends[0]
            out.update(x1_time=curve["time"][k], x1_dual=curve["dual"][k],
                       x1_test_error=curve["test_error"][k],
                       x1_kernel_evaluations=curve["kernel_evaluations"][k],
                       x1_n_sv=curve["n_support_patterns"][k])
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def run_partial_fit(X, y, Xt, yt, machine, C, gamma, tol, cache, chunks) -> dict:
    """partial_fit in ``chunks`` chunks against fit(solver='online', epochs=1)."""
    from msvm import MultiClassSVC

    kw = dict(model=machine, C=C, gamma=gamma, tol=tol, cache_size=cache, random_state=0)
    start = time.perf_counter()
    fit = MultiClassSVC(solver="online", epochs=1, **kw).fit(X, y)
    fit_time = time.perf_counter() - start
    stream = MultiClassSVC(**kw)
    classes = np.unique(y)
    start = time.perf_counter()
    for chunk in np.array_split(np.arange(len(y)), chunks):
        stream.partial_fit(X[chunk], y[chunk], classes=classes)
    stream_time = time.perf_counter() - start
    return dict(
        chunks=chunks, fit_test_error=float(1 - fit.score(Xt, yt)),
        fit_dual=fit.solution_["dual_objective"], fit_time=fit_time,
        fit_n_sv=int(len(fit.support_)), test_error=float(1 - stream.score(Xt, yt)),
        dual=stream.solution_["dual_objective"], stream_time=stream_time,
        n_sv=int(len(stream.support_)),
        kernel_evaluations=int(stream.solution_["n_kernel_evaluations"]),
        peak_rss_mb=peak_rss_mb(),
        status="ok",
    )


# --------------------------------------------------------------- reporting
def write(rows: list[dict], tag: str) -> tuple[Path, Path]:
    """The JSON lines of every run; the CSV of the table runs (partial_fit has other fields)."""
    return (write_jsonl(rows, RESULTS / f"{tag}.jsonl"),
            write_csv([r for r in rows if r.get("solver") != "partial_fit"],
                      RESULTS / f"{tag}.csv", CSV_FIELDS))


def find(rows, config, solver, strategy=None, role="table"):
    for r in rows:
        if (r.get("config") == config and r.get("solver") == solver and r.get("role") == role
                and (strategy is None or r.get("strategy") == strategy)
                and r.get("status") not in ("failed", "timeout")):
            return r
    return None


def x1(row: dict) -> dict:
    """The ×1 figures of an online row (end of epoch 1)."""
    return dict(test_error=row.get("x1_test_error"), dual=row.get("x1_dual"),
                fit_time=row.get("x1_time"), kernel_evaluations=row.get("x1_kernel_evaluations"))


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def tables(rows, configs) -> list[str]:
    """Seed 004's Tables 4.3/5.2 (online ×1 vs batch) and 4.4/5.3 (strategies)."""
    lines = []
    head = f"{'':44s}" + "".join(f"{c:>16s}" for c in configs)
    entries = []
    for s in STRATEGIES:
        entries.append((f"online x1 {LABELS[s]}", lambda c, s=s: x1(find(rows, c, "online", s)
                                                                     or {})))
    for s in STRATEGIES:
        entries.append((f"online x2 {LABELS[s]}", lambda c, s=s: find(rows, c, "online", s)
                        or {}))
    entries.append(("batch s2do", lambda c: find(rows, c, "s2do") or {}))
    lines.append(head)
    for name, get in entries:
        for key, label, spec, scale in (("test_error", "test error (%)", ".3f", 100),
                                        ("dual", "dual", ".6g", 1),
                                        ("fit_time", "training time (s)", ".2f", 1),
                                        ("kernel_evaluations", "kernel evaluations (1e6)", ".2f",
                                         1e-6)):
            cells = []
            for c in configs:
                v = get(c).get(key)
                cells.append(f"{fmt(None if v is None else v * scale, spec):>16s}")
            lines.append(f"{name if key == 'test_error' else '':30s}{label:>14s}" + "".join(cells))
    return lines


def done_when(rows, configs) -> list[str]:
    """The issue's acceptance figures, measured."""
    lines = ["", "Issue 5 'done when' (online x1 with the best strategy vs batch s2do, same run):"]
    for c in configs:
        batch = find(rows, c, "s2do")
        cands = [(s, x1(r)) for s in STRATEGIES if (r := find(rows, c, "online", s))]
        cands = [(s, v) for s, v in cands if v["dual"] is not None]
        if not batch or not cands:
            lines.append(f"  {c}: missing runs")
            continue
        # Best strategy: the highest x1 dual among those within 0.3 points of batch's error.
        ok = [(s, v) for s, v in cands
              if abs(v["test_error"] - batch["test_error"]) * 100 <= 0.3] or cands
        s, v = max(ok, key=lambda sv: sv[1]["dual"])
        err = (v["test_error"] - batch["test_error"]) * 100
        ratio = v["dual"] / batch["dual"]
        kev = v["kernel_evaluations"] / batch["kernel_evaluations"]
        speed = batch["fit_time"] / v["fit_time"]
        lines.append(
            f"  {c}: best {LABELS[s]}: test error {100 * v['test_error']:.3f}% vs "
            f"{100 * batch['test_error']:.3f}% (diff {err:+.3f} points, "
            f"{'PASS' if abs(err) <= 0.3 else 'FAIL'} <= 0.3); dual {ratio:.4f} of batch "
            f"({'PASS' if ratio >= 0.98 else 'FAIL'} >= 0.98); kernel evaluations {kev:.3f} of "
            f"batch ({'PASS' if kev < 1 else 'FAIL'} < 1); time {v['fit_time']:.1f} s vs "
            f"{batch['fit_time']:.1f} s (batch/online {speed:.2f}x)")
    for c in configs:
        on = find(rows, c, "online", role="cache20")
        ba = find(rows, c, "s2do", role="cache20")
        if not (on and ba):
            continue
        t1 = on.get("x1_time") or on["fit_time"]
        t_on, d_on = np.array(on["curve"]["time"]), np.array(on["curve"]["dual"])
        t_ba, d_ba = np.array(ba["curve"]["time"]), np.array(ba["curve"]["dual"])
        keep = (t_on > 0) & (t_on <= t1 + 1e-9)
        above = d_on[keep] >= np.interp(t_on[keep], t_ba, d_ba)
        lines.append(
            f"  {c} cache {on['cache_size']:.0f} MB (20% of the Gram matrix): online x1 dual above "
            f"batch's at equal time at {int(above.sum())}/{int(keep.sum())} curve points of its "
            f"run ({'PASS' if above.all() else 'FAIL'}); x1 ends at {t1:.1f} s with dual "
            f"{on.get('x1_dual', on['dual']):.6g}, batch has "
            f"{np.interp(t1, t_ba, d_ba):.6g} then, ends at {ba['fit_time']:.1f} s with "
            f"{ba['dual']:.6g}")
    for c in configs:
        pf = find(rows, c, "partial_fit", role="partial_fit")
        if pf:
            diff = 100 * (pf["test_error"] - pf["fit_test_error"])
            lines.append(
                f"  {c} partial_fit in {pf['chunks']} chunks: test error "
                f"{100 * pf['test_error']:.3f}% vs fit(epochs=1) {100 * pf['fit_test_error']:.3f}% "
                f"(diff {diff:+.3f} points, {'PASS' if abs(diff) <= 0.5 else 'FAIL'} <= 0.5); "
                f"dual {pf['dual']:.6g} vs {pf['fit_dual']:.6g}; {pf['stream_time']:.1f} s vs "
                f"{pf['fit_time']:.1f} s")
    return lines


def plot(rows, config, tag) -> list[Path]:
    """Figures 4.1-4.3 (and 4.4-4.5 with --cache20) for one configuration."""
    plt = pyplot()
    paths = []
    colours = {"s2do_all": "C0", "random_pattern_s2do_all": "C1",
               "random_pattern_s2do_pattern": "C2", "s2do": "k"}
    figures = (("error-time", "time", "test_error", "training time (s)", "test error (%)"),
               ("error-kernel", "kernel_evaluations", "test_error", "kernel evaluations",
                "test error (%)"),
               ("dual-time", "time", "dual", "training time (s)", "dual objective"),
               ("dual-kernel", "kernel_evaluations", "dual", "kernel evaluations",
                "dual objective"))
    for role, suffix in (("table", ""), ("cache20", "-cache20")):
        runs = [r for r in rows if r.get("config") == config and r.get("role") == role
                and isinstance(r.get("curve"), dict)]
        if not runs:
            continue
        for name, xkey, ykey, xlabel, ylabel in figures:
            if role == "table" and name == "dual-kernel":
                continue
            fig, ax = plt.subplots(figsize=(6.4, 4.4))
            for r in runs:
                key = r.get("strategy") or r["solver"]
                label = LABELS.get(key, key) + ("" if r["solver"] == "s2do" else " (online)")
                xs = np.array(r["curve"][xkey], dtype=float)
                ys = np.array(r["curve"][ykey], dtype=float) * (100 if ykey == "test_error"
                                                                 else 1)
                ok = xs > 0
                ax.plot(xs[ok], ys[ok], color=colours.get(key, "C3"), label=label,
                        lw=1.2, marker="." if len(xs) < 60 else None)
                if r["solver"] == "online" and "epoch" in r["curve"]:
                    marks = zip(r["curve"]["epoch"], r["curve"]["phase"], strict=True)
                    for k, (e, ph) in enumerate(marks):
                        if e in (1.0, 2.0) and ph == "pass":
                            ax.plot(xs[k], ys[k], marker="o", color=colours.get(key, "C3"),
                                    mfc="white", ms=7)
                            ax.annotate(f"x{int(e)}", (xs[k], ys[k]), textcoords="offset points",
                                        xytext=(4, 4), fontsize=8)
            ax.set_xscale("log")
            if ykey == "test_error":
                lo = min(np.nanmin(np.array(r["curve"]["test_error"], float)) for r in runs)
                ax.set_ylim(100 * lo * 0.9, min(100, 100 * lo * 3))
            if ykey == "dual":
                hi = max(np.nanmax(np.array(r["curve"]["dual"], float)) for r in runs)
                ax.set_ylim(0.5 * hi, 1.02 * hi)
            ax.set_xlabel(xlabel + " (log)")
            ax.set_ylabel(ylabel)
            cache = runs[0]["cache_size"]
            ax.set_title(f"{config}: {ylabel} vs {xlabel.split(' (')[0]} (cache {cache:.0f} MB)",
                         fontsize=10)
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            path = RESULTS / f"{tag}-{config}-{name}{suffix}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    return paths


# --------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations (default: {DEFAULT}); "
                        f"known: {list(INTERVALS)}")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: usps-llw on 1000 patterns, curves every 0.2 s")
    parser.add_argument("--m", type=int, default=None, help="first m training patterns only")
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help="comma-separated online strategies (default: all three)")
    parser.add_argument("--epochs", type=int, default=2, help="online epochs per run (default 2)")
    parser.add_argument("--cache20", action="store_true",
                        help="also online and batch with the cache at 20%% of the Gram matrix")
    parser.add_argument("--cache20-strategy", default=None,
                        help="strategy of the 20%% cache run (default: best x1 of the table)")
    parser.add_argument("--partial-fit", action="store_true",
                        help="also partial_fit in 10 chunks vs fit(solver='online', epochs=1)")
    parser.add_argument("--batch-timeout", type=float, default=7200,
                        help="seconds allowed to a batch run (letter-llw: 1800)")
    parser.add_argument("--interval", type=float, default=None, help="curve interval (s)")
    parser.add_argument("--report", nargs="+", metavar="JSONL", default=None,
                        help="run nothing: tables, checks and figures of earlier results files")
    common_arguments(parser, timeout=7200)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    if args.report:
        rows = [json.loads(line) for path in args.report
                for line in Path(path).read_text().splitlines() if line.strip()]
        configs = list(dict.fromkeys(r["config"] for r in rows))
        tag = args.tag or "online-report"
        return report(rows, configs, tag, [f"msvm online benchmark report of {args.report}", ""])

    configs = args.configs or (["usps-llw"] if args.quick else DEFAULT)
    check_configs(parser, configs, INTERVALS)
    strategies = [s for s in args.strategies.split(",") if s]
    m = 1000 if args.quick else args.m
    interval = 0.2 if args.quick and args.interval is None else args.interval
    tag = args.tag or time.strftime("online-%Y%m%d-%H%M%S")
    rows = []

    def go(spec, timeout):
        row = spawn("benchmarks.bench_online", spec, timeout)
        row.setdefault("role", spec.get("role", "table"))
        rows.append(row)
        what = f"{row.get('solver')} {row.get('strategy') or ''}".strip()
        announce(row,
                 f"[{len(rows)}] {row.get('config')} {row.get('role')} {what}: "
                 f"{fmt(row.get('fit_time'), '.2f')} s, dual {fmt(row.get('dual'), '.6g')}, "
                 f"test error "
                 f"{fmt(100 * row['test_error'] if 'test_error' in row else None, '.3f')}"
                 f"%, kernel ev. {fmt(row.get('kernel_evaluations'), '.4g')}, "
                 f"status {row.get('status')}")
        write(rows, tag)
        return row

    for c in configs:
        base = dict(config=c, m=m, interval=interval, layout="csr" if args.sparse else "dense")
        for s in strategies:
            go(dict(base, solver="online", strategy=s, epochs=args.epochs), args.timeout)
        go(dict(base, solver="s2do"), args.batch_timeout)
        if args.cache20:
            best = args.cache20_strategy
            if best is None:
                cands = [(s, x1(r)["dual"]) for s in strategies
                         if (r := find(rows, c, "online", s)) and x1(r)["dual"] is not None]
                best = max(cands, key=lambda sv: sv[1])[0] if cands else "s2do_all"
            c20 = dict(base, cache_fraction=0.2, role="cache20")
            go(dict(c20, solver="online", strategy=best, epochs=args.epochs), args.timeout)
            go(dict(c20, solver="s2do"), args.batch_timeout)
        if args.partial_fit:
            go(dict(base, solver="partial_fit", role="partial_fit"), args.timeout)

    first = header("online", tag, f"one thread per run; m={m or 'all'}; "
                   f"{'CSR' if args.sparse else 'dense'} input; online runs {args.epochs} "
                   "epochs, x1 = end of epoch 1")
    return report(rows, configs, tag, [first, ""])


def report(rows, configs, tag, lines) -> int:
    """Write the tables, the issue's checks and the figures of ``rows``."""
    lines = list(lines)
    lines += tables(rows, configs)
    lines += done_when(rows, configs)
    for c in configs:
        for path in plot(rows, c, tag):
            lines.append(f"figure: {path.relative_to(RESULTS.parent)}")
    jsonl, csv_path = write(rows, tag)
    write_summary(lines, tag)
    print(f"wrote {jsonl}, {csv_path}, {RESULTS / (tag + '.txt')}")
    return 0


if __name__ == "__main__":
    run_main(main)
