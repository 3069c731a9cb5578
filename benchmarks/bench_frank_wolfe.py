"""Frank–Wolfe with a bias: step variants, working-set sizes, and usps-ww / usps-cs against SVC.

Three experiments, every run a fresh subprocess (its own peak memory):

* ``variants``: classic, away and pairwise steps, with and without the
  in-face steps, on the whole problem (``working_set_size='all'``) of the
  first ``--variants-m`` usps examples, usps-ww with bias;
* ``working_sets``: pairwise steps with N_B ∈ {50, 200, 1000, all} on the
  first ``--sets-m`` usps examples, usps-ww with bias;
* ``peers``: usps-ww and usps-cs *with bias* on the full usps (7291 / 2007):
  frank_wolfe (pairwise, default working set) stopped at a relative
  Frank–Wolfe gap of ``--tol``, scikit-learn's SVC (C=10, same γ, tol 1e-3,
  same cache) and s2do *without* bias (BENCHMARKS.md's configuration) in the
  same run.

The first two record the convergence trace (time, steps, dual objective,
Frank–Wolfe gap bound) and plot the relative gap and the dual objective
against time.  Everything goes to ``results/<tag>.jsonl`` (one line per
run, traces included), ``results/<tag>.csv``, ``results/<tag>.txt`` (the
tables) and ``results/<tag>-*.png``.

``--sparse`` feeds every solver CSR input instead of dense arrays.

Examples::

    python -m benchmarks.bench_frank_wolfe --quick                 # ~2 min
    python -m benchmarks.bench_frank_wolfe                         # all three
    python -m benchmarks.bench_frank_wolfe peers --timeout 3600
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.configs import CONFIGS, gamma_of
from benchmarks.data import load
from benchmarks.results import RESULTS, check_writable, pyplot, write, write_summary
from benchmarks.runs import (
    answer,
    common_arguments,
    fit_svc,
    peak_rss_mb,
    predict_scores,
    run_main,
    spawn,
)

EXPERIMENTS = ("variants", "working_sets", "peers")
CSV_FIELDS = ["experiment", "config", "solver", "bias", "fw_variant", "face_steps",
              "working_set_size", "m", "fit_time", "dual", "relative_fw_gap", "relative_gap",
              "test_error", "n_sv", "n_iter", "n_splits", "n_lp", "kernel_evaluations",
              "peak_rss_mb", "status", "layout"]


# ------------------------------------------------------------------ one run
def run_one(spec: dict) -> dict:
    """Fit one solver on one configuration (called in a fresh process)."""
    warnings.simplefilter("ignore")  # a capped run reports its status instead
    dataset, _, machine, C, gamma, tol, cache, *_ = CONFIGS[spec["config"]]
    layout = spec.get("layout", "dense")
    X, y, Xt, yt = load(dataset, spec.get("m"), sparse=layout == "csr")
    gamma = gamma_of(CONFIGS[spec["config"]], X)   # 'scale' from the training data
    classes, y_codes = np.unique(y, return_inverse=True)
    out = dict(spec, m=int(X.shape[0]), cache_size=cache, layout=layout)
    if spec["solver"] == "svc":
        out.update(fit_svc(X, y, Xt, yt, gamma, cache, C=CONFIGS[spec["config"]].peer_C))
    else:
        from msvm.diagnostics import diagnose
        from msvm.kernels import Kernel
        from msvm.machines import make_machine
        from msvm.problem import DualProblem
        from msvm.solvers import frank_wolfe, s2do

        start = time.perf_counter()
        problem = DualProblem(make_machine(machine, len(classes)), y_codes,
                              Kernel(X, "rbf", gamma=gamma), C, spec["bias"])
        if spec["solver"] == "s2do":
            sol = s2do.solve(problem, tol=tol, cache_size=cache)
        else:
            sol = frank_wolfe.solve(problem, tol=spec["tol"], cache_size=cache,
                                    fw_variant=spec["fw_variant"],
                                    face_steps=spec["face_steps"],
                                    working_set_size=spec["working_set_size"],
                                    max_iter=spec.get("max_iter"), record=spec["record"])
        out["fit_time"] = time.perf_counter() - start
        d = diagnose(problem, sol)
        scores, sv = predict_scores(X, Xt, problem.beta(sol.alpha), gamma)
        scores += sol.b
        out.update(dual=d.dual_objective, relative_gap=d.relative_gap,
                   test_error=float(np.mean(classes[np.argmax(scores, axis=1)] != yt)),
                   n_sv=int(len(sv)), n_iter=int(sol.n_iter),
                   kernel_evaluations=int(sol.n_kernel_evaluations), status=sol.status)
        for key in ("relative_fw_gap", "n_splits", "n_lp", "history"):
            if key in sol.info:
                out[key] = sol.info[key]
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def fw_spec(experiment, config, m, variant="pairwise", face_steps=True, working_set_size=None,
            tol=1e-4, record=True, max_iter=None):
    return dict(experiment=experiment, config=config, m=m, solver="frank_wolfe", bias=True,
                fw_variant=variant, face_steps=face_steps, working_set_size=working_set_size,
                tol=tol, record=record, max_iter=max_iter)


def plan(experiments, args) -> list[dict]:
    specs = []
    if "variants" in experiments:
        for variant in ("classic", "away", "pairwise"):
            for face in (True, False):
                # Without face steps the classic step crawls: cap it, the curve tells.
                specs.append(fw_spec("variants", "usps-ww", args.variants_m, variant, face,
                                     "all", max_iter=None if face else args.max_steps))
    if "working_sets" in experiments:
        for n_B in (50, 200, 1000, "all"):
            if n_B == "all" or n_B < args.sets_m:
                specs.append(fw_spec("working_sets", "usps-ww", args.sets_m,
                                     working_set_size=n_B))
    if "peers" in experiments:
        for config in ("usps-ww", "usps-cs"):
            m = args.peers_m
            specs.append(fw_spec("peers", config, m, tol=args.tol, record=False))
            specs.append(dict(experiment="peers", config=config, m=m, solver="svc", bias=True))
            specs.append(dict(experiment="peers", config=config, m=m, solver="s2do",
                              bias=False))
    return specs


# --------------------------------------------------------------- reporting
def label(row) -> str:
    if row["experiment"] == "variants":
        return f"{row['fw_variant']}{'' if row['face_steps'] else ', no face steps'}"
    return f"N_B = {row['working_set_size']}"


def plot_traces(rows, experiment, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    for row in rows:
        if row["experiment"] != experiment or not row.get("history"):
            continue
        t, _, dual, gap = np.array(row["history"], dtype=float).T
        ax[0].semilogy(t, np.maximum(gap / np.abs(dual), 1e-16), label=label(row))
        ax[1].plot(t, dual, label=label(row))
    ax[0].set_ylabel("Frank–Wolfe gap / |dual|")
    ax[1].set_ylabel("dual objective")
    ax[1].set_xlabel("seconds")
    first = next(r for r in rows if r["experiment"] == experiment)
    ax[0].set_title(f"usps-ww with bias, m = {first['m']}: {experiment.replace('_', ' ')}")
    ax[0].legend(fontsize=8)
    finals = [r["dual"] for r in rows if r["experiment"] == experiment and "dual" in r]
    if finals:  # zoom on the last part of the climb
        top = max(finals)
        ax[1].set_ylim(top - 0.05 * abs(top), top + 0.005 * abs(top))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def tables(rows) -> list[str]:
    lines = []
    for experiment in ("variants", "working_sets"):
        sel = [r for r in rows if r["experiment"] == experiment]
        if not sel:
            continue
        lines.append(f"{experiment} (usps-ww with bias, m={sel[0]['m']}, tol 1e-4):")
        lines.append(f"  {'run':<28} {'time s':>8} {'steps':>8} {'splits':>7} {'LPs':>7} "
                     f"{'rel FW gap':>10} {'test err':>8} {'status':>8}")
        for r in sel:
            lines.append(f"  {label(r):<28} {r.get('fit_time', float('nan')):8.2f} "
                         f"{r.get('n_iter', 0):8d} {r.get('n_splits', 0):7d} "
                         f"{r.get('n_lp', 0):7d} {r.get('relative_fw_gap') or float('nan'):10.2e} "
                         f"{100 * r.get('test_error', float('nan')):7.2f}% "
                         f"{r.get('status', '?'):>8}")
    peers = [r for r in rows if r["experiment"] == "peers"]
    for config in dict.fromkeys(r["config"] for r in peers):
        by = {r["solver"]: r for r in peers if r["config"] == config}
        fw, svc, s2 = by.get("frank_wolfe", {}), by.get("svc", {}), by.get("s2do", {})
        t = fw.get("fit_time")
        lines.append(f"{config} with bias (m={fw.get('m')}): frank_wolfe {t or float('nan'):.1f} s "
                     f"(rel. FW gap {fw.get('relative_fw_gap') or float('nan'):.1e}, "
                     f"test error {100 * fw.get('test_error', float('nan')):.2f}%, "
                     f"{fw.get('status')}); SVC {svc.get('fit_time', float('nan')):.1f} s "
                     f"({100 * svc.get('test_error', float('nan')):.2f}%); s2do without bias "
                     f"{s2.get('fit_time', float('nan')):.1f} s "
                     f"({100 * s2.get('test_error', float('nan')):.2f}%)")
        if t and svc.get("fit_time") and s2.get("fit_time"):
            lines.append(f"  ratio frank_wolfe / SVC = {t / svc['fit_time']:.2f}, "
                         f"frank_wolfe / s2do (no bias) = {t / s2['fit_time']:.2f}")
    return lines


# --------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS),
                        help=f"any of {EXPERIMENTS} (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="small subsets (variants 300, working sets 600, peers 1000)")
    parser.add_argument("--variants-m", type=int, default=1000)
    parser.add_argument("--sets-m", type=int, default=2000)
    parser.add_argument("--peers-m", type=int, default=None, help="usps examples (default all)")
    parser.add_argument("--max-steps", type=int, default=5000,
                        help="step cap of the variant runs without face steps")
    parser.add_argument("--tol", type=float, default=1e-3,
                        help="relative Frank–Wolfe gap of the peers experiment")
    common_arguments(parser, timeout=3600)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    unknown = set(args.experiments) - set(EXPERIMENTS)
    if unknown:
        parser.error(f"unknown experiments {sorted(unknown)}; choose from {EXPERIMENTS}")
    if args.quick:
        args.variants_m, args.sets_m, args.peers_m = 300, 600, 1000
    tag = args.tag or "frank_wolfe-" + time.strftime("%Y%m%d-%H%M%S")
    check_writable(parser, tag)
    rows = []
    for spec in plan(args.experiments, args):
        spec["layout"] = "csr" if args.sparse else "dense"
        row = spawn("benchmarks.bench_frank_wolfe", spec, args.timeout)
        row.setdefault("host", platform.node())
        rows.append(row)
        print(f"{spec['experiment']:<13} {spec['config']:<8} {spec['solver']:<12} "
              f"{label(row) if spec['solver'] == 'frank_wolfe' else '':<28} "
              f"{row.get('fit_time', float('nan')):8.2f} s  {row.get('status')}", flush=True)
    write(rows, tag, CSV_FIELDS)
    for experiment in ("variants", "working_sets"):
        if any(r["experiment"] == experiment and r.get("history") for r in rows):
            plot_traces(rows, experiment, RESULTS / f"{tag}-{experiment}.png")
    text = tables(rows)
    write_summary(text, tag)
    return 0


if __name__ == "__main__":
    run_main(main)
