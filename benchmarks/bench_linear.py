"""solver='linear' against liblinear's LinearSVC (Crammer–Singer and one-vs-rest).

Data: mnist (CSR, 60 000 × 780, pixels / 255), dna (2 000 × 180) and a
generated text-like set (``text``: 20 000 training + 5 000 test rows ×
50 000 features at 0.2% density, 50 classes, drawn here with a fixed seed:
each class owns 200 "topic" features, half of a row's non-zeros come from its
class's topic, the rest are uniform noise, rows normalised to unit length, so
the classes are linearly structured but overlap).

Peers in the same run, at equal C (the mapping, from the primal problems):

* msvm ``cs`` with C is liblinear's Crammer–Singer problem with the same C:
  both minimise ½ Σ_c ‖w_c‖² + C Σ_i max(0, max_{k≠y_i} 1 − (h_{y_i} − h_k))
  (Keerthi et al. 2008, eq. 1; :mod:`msvm.machines`, row ``cs``), so
  ``LinearSVC(multi_class='crammer_singer', C=C, fit_intercept=False)``.
* one-vs-rest ``LinearSVC(loss='hinge', C=C, fit_intercept=False)`` solves
  Q binary hinge SVMs with C, which is msvm's ``ova`` row with the same C
  (its dual is the sum of the Q binary duals); it is timed as the baseline
  users compare against.  WW and LLW (no liblinear counterpart) are timed
  beside them at the same C and tol.

Equal accuracy of the dual.  liblinear prints its dual objective at the end
of a fit (``verbose=1``, "Objective value = v", the minimised dual; D = −v);
each run happens in a fresh subprocess whose standard output is parsed.
msvm runs at ``tol``; liblinear at ``tol`` and at ``tol``/10, ``tol``/100.
Every run reports its dual D, the primal P of its W (msvm's formula, the same
for both), the gap P − D and the dual's relative error (D* − D)/|D*| against
the best dual D* of the run.  The summary compares msvm's CS time with the
fastest liblinear CS run whose dual error is no larger (median of
``--repeat`` runs per setting, default 3).  The plot per data set shows the
dual objective against time: msvm's trace and liblinear's (time, D) points.

Input is CSR (``--no-sparse``: dense arrays, for every solver).  Timings
need an idle machine (BENCHMARKS.md); on shared cores they are rough.

Examples::

    python -m benchmarks.bench_linear --quick           # small sizes, one repeat
    python -m benchmarks.bench_linear                   # mnist, dna, text; 3 repeats
    python -m benchmarks.bench_linear text --repeat 5
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.configs import LINEAR_CONFIGS
from benchmarks.data import load
from benchmarks.results import RESULTS, header, pyplot, write, write_summary
from benchmarks.runs import announce, answer, common_arguments, run_main, spawn

QUICK_SIZES = {"mnist": 5000, "dna": None, "text": 4000}
MODELS = ("cs", "ww", "llw")
CSV_FIELDS = ["config", "solver", "model", "m", "d", "C", "tol", "fit_time", "dual", "primal",
              "gap", "relative_gap", "dual_rel_error", "test_error", "n_iter", "status", "layout"]


# ----------------------------------------------------------------- one run
def primal_of(problem, W: np.ndarray) -> float:
    """msvm's primal objective of the weights W (Q × d), bias-free, hinge loss."""
    from msvm.diagnostics import _group_masks, _margins

    F = np.asarray(problem.kernel.X @ W.T)
    r = _margins(problem, F, np.zeros(problem.n_classes))
    xi = np.stack([np.max(np.where(mk, r, -np.inf), axis=1) for mk in _group_masks(problem)],
                  axis=1)
    return 0.5 * float(np.sum(W * W)) + problem.C * float(np.maximum(xi, 0.0).sum())


def run_one(spec: dict) -> dict:
    """One fit (called in a fresh process)."""
    from sklearn.svm import LinearSVC

    from msvm.kernels import Kernel
    from msvm.machines import make_machine
    from msvm.problem import DualProblem

    C, tol = LINEAR_CONFIGS[spec["config"]]
    tol = spec.get("tol", tol)
    layout = spec.get("layout", "csr")
    X, y, Xt, yt = load(spec["config"], spec.get("m"), sparse=layout == "csr")
    classes, codes = np.unique(y, return_inverse=True)
    codes_t = np.searchsorted(classes, yt)
    model = spec["model"]
    problem = DualProblem(make_machine(model, len(classes)), codes, Kernel(X, "linear"), C, False)
    out = dict(spec, m=int(X.shape[0]), d=int(X.shape[1]), C=C, tol=tol, layout=layout)
    if spec["solver"] == "msvm":
        from msvm.solvers import linear

        start = time.perf_counter()
        problem = DualProblem(make_machine(model, len(classes)), codes, Kernel(X, "linear"), C,
                              False)
        sol = linear.solve(problem, tol=tol, random_state=0, trace=spec.get("trace"))
        out["fit_time"] = time.perf_counter() - start
        W = sol.info["coef"]
        out["dual"] = float(np.sum(problem.targets * sol.alpha) - 0.5 * np.sum(W * W))
        out["n_iter"] = int(sol.n_iter)
        out["status"] = sol.status
        out["max_violation"] = sol.info["max_violation"]
        # Deterministic work counts (comparable across machines, unlike the times).
        for key in ("n_visits", "n_steps", "n_slot_shrinks", "n_score_ops", "n_update_ops"):
            out[key] = int(sol.info[key])
        if spec.get("trace"):
            out["trace"] = sol.info["trace"]
    else:
        multi = "crammer_singer" if model == "cs" else "ovr"
        clf = LinearSVC(C=C, loss="hinge", multi_class=multi, fit_intercept=False, tol=tol,
                        max_iter=100000, dual=True, verbose=1)
        start = time.perf_counter()
        clf.fit(X, codes)
        out["fit_time"] = time.perf_counter() - start
        W = np.asarray(clf.coef_, dtype=np.float64)
        out["n_iter"] = int(np.max(clf.n_iter_))
        out["status"] = "optimal" if np.max(clf.n_iter_) < 100000 else "max_iter"
    out["primal"] = primal_of(problem, W)
    out["test_error"] = float(np.mean(np.argmax(np.asarray(Xt @ W.T), axis=1) != codes_t))
    return out


def liblinear_dual(row: dict, stdout: str) -> None:
    """The dual of a liblinear run, from the objective values it printed (``verbose=1``)."""
    if row["solver"] == "liblinear":
        values = [float(v) for v in re.findall(r"Objective value = (\S+)", stdout)]
        row["dual"] = -float(np.sum(values)) if values else None   # liblinear minimises −D


# --------------------------------------------------------------- reporting
def finish(rows: list[dict]) -> None:
    """Gap and dual error (against the best dual of the same configuration and model)."""
    best = {}
    for r in rows:
        if r.get("dual") is not None:
            key = (r["config"], r["model"])
            best[key] = max(best.get(key, -np.inf), r["dual"])
    for r in rows:
        if r.get("dual") is None or r.get("primal") is None:
            continue
        r["gap"] = r["primal"] - r["dual"]
        r["relative_gap"] = r["gap"] / max(abs(r["primal"]), 1e-300)
        star = best[(r["config"], r["model"])]
        r["dual_rel_error"] = (star - r["dual"]) / max(abs(star), 1e-300)


def median(rows, **match):
    times = [r["fit_time"] for r in rows if r.get("status") == "optimal"
             and all(r.get(k) == v for k, v in match.items())]
    return statistics.median(times) if times else None


def summary(rows: list[dict], configs, tols) -> list[str]:
    lines = [f"{'config':<7} {'solver':<10} {'model':<5} {'tol':>7} {'time s':>8} {'dual':>14} "
             f"{'rel gap':>9} {'dual err':>9} {'test err':>8}"]
    for c in configs:
        for solver, model in (("msvm", "cs"), ("liblinear", "cs"), ("msvm", "ww"),
                              ("msvm", "llw"), ("liblinear", "ova")):
            for tol in sorted({r["tol"] for r in rows if r["config"] == c
                               and r["solver"] == solver and r["model"] == model}, reverse=True):
                same = [r for r in rows if r["config"] == c and r["solver"] == solver
                        and r["model"] == model and r["tol"] == tol and "fit_time" in r]
                if not same:
                    continue
                t = median(same)
                r = same[-1]
                lines.append(
                    f"{c:<7} {solver:<10} {model:<5} {tol:7.0e} {t or float('nan'):8.2f} "
                    f"{r.get('dual') or float('nan'):14.8g} "
                    f"{r.get('relative_gap', float('nan')):9.2e} "
                    f"{r.get('dual_rel_error', float('nan')):9.2e} "
                    f"{100 * r.get('test_error', float('nan')):7.2f}%")
        ours = [r for r in rows if r["config"] == c and r["solver"] == "msvm"
                and r["model"] == "cs" and "dual_rel_error" in r]
        if not ours:
            continue
        t_ours = median(ours)
        err = max(r["dual_rel_error"] for r in ours)
        peers = []
        for tol in tols(c):
            same = [r for r in rows if r["config"] == c and r["solver"] == "liblinear"
                    and r["model"] == "cs" and r["tol"] == tol and "dual_rel_error" in r]
            if same and max(r["dual_rel_error"] for r in same) <= err and median(same):
                peers.append((median(same), tol))
        if peers and t_ours:
            t_peer, tol = min(peers)
            lines.append(f"{c}: CS at equal dual accuracy (error <= {err:.1e}): msvm "
                         f"{t_ours:.2f} s, liblinear (tol {tol:g}) {t_peer:.2f} s, "
                         f"ratio {t_ours / t_peer:.2f}")
        else:
            lines.append(f"{c}: no liblinear CS run reached msvm's dual error {err:.1e}")
    return lines


def plot(rows: list[dict], config: str, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for r in rows:
        if r["config"] == config and r["solver"] == "msvm" and r.get("trace"):
            t, dual = np.array(r["trace"])[:, :2].T
            ax.plot(t, dual, marker=".", label=f"msvm linear {r['model']}")
    for model in ("cs",):
        pts = sorted((r["fit_time"], r["dual"]) for r in rows if r["config"] == config
                     and r["solver"] == "liblinear" and r["model"] == model
                     and r.get("dual") is not None)
        if pts:
            t, dual = np.array(pts).T
            ax.plot(t, dual, marker="s", ls=":", label="LinearSVC crammer_singer (tol sweep)")
    duals = [r["dual"] for r in rows if r["config"] == config and r["model"] == "cs"
             and r.get("dual") is not None]
    if duals:
        top = max(duals)
        ax.set_ylim(top - 0.05 * abs(top), top + 0.005 * abs(top))
    ax.set_xlabel("seconds")
    ax.set_ylabel("dual objective")
    ax.set_title(f"{config}: dual objective against time (C = {LINEAR_CONFIGS[config][0]:g})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------- main
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("configs", nargs="*",
                    help=f"data sets (default: all of {list(LINEAR_CONFIGS)})")
parser.add_argument("--quick", action="store_true",
                    help=f"smaller training sets {QUICK_SIZES}, one repeat")
parser.add_argument("--repeat", type=int, default=None, help="runs per setting (default 3)")
parser.add_argument("--tol", type=float, default=None, help="msvm's tol (default per config)")
common_arguments(parser, timeout=3600, sparse=True)


def main(argv=None) -> int:
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    configs = args.configs or list(LINEAR_CONFIGS)
    unknown = [c for c in configs if c not in LINEAR_CONFIGS]
    if unknown:
        parser.error(f"unknown data set(s) {unknown}; known: {list(LINEAR_CONFIGS)}")
    repeat = args.repeat or (1 if args.quick else 3)
    tag = args.tag or time.strftime("linear-%Y%m%d-%H%M%S")

    def tol_of(c):
        return args.tol or LINEAR_CONFIGS[c][1]

    def lib_tols(c):
        return [tol_of(c), tol_of(c) / 10, tol_of(c) / 100]

    specs = []
    for c in configs:
        m = QUICK_SIZES[c] if args.quick else None
        specs.append(dict(config=c, solver="msvm", model="cs", m=m, tol=tol_of(c), trace=0.1,
                          role="trace"))
        for _ in range(repeat):
            for model in MODELS:
                specs.append(dict(config=c, solver="msvm", model=model, m=m, tol=tol_of(c)))
            for tol in lib_tols(c):
                specs.append(dict(config=c, solver="liblinear", model="cs", m=m, tol=tol))
            specs.append(dict(config=c, solver="liblinear", model="ova", m=m, tol=tol_of(c)))
    rows = []
    for k, spec in enumerate(specs, 1):
        spec["layout"] = "csr" if args.sparse else "dense"
        row = spawn("benchmarks.bench_linear", spec, args.timeout, parse=liblinear_dual)
        rows.append(row)
        announce(row,
                 f"[{k}/{len(specs)}] {row['config']} {row['solver']} {row['model']} "
                 f"tol={row.get('tol')}: {row.get('fit_time', float('nan')):.2f} s, dual "
                 f"{row.get('dual')}, test error {100 * row.get('test_error', float('nan')):.2f}%, "
                 f"status {row.get('status')}")
    finish(rows)
    table = [r for r in rows if r.get("role") != "trace"]
    lines = [header("linear", tag, f"median of {repeat}; one thread each; "
                    f"{'CSR' if args.sparse else 'dense'} input")]
    lines += summary(table, configs, lib_tols)
    for c in configs:
        plot(rows, c, RESULTS / f"{tag}-{c}-dual-time.png")
    jsonl, csv_path = write(rows, tag, CSV_FIELDS)
    write_summary(lines, tag)
    print(f"wrote {jsonl}, {csv_path}, {RESULTS / (tag + '.txt')} and the plots")
    return 0


if __name__ == "__main__":
    run_main(main)
