"""Why LLW needs more S2DO passes than WW: the face S2DO ends on, and its conditioning.

Issue 21, item 3.  On a random subset of each regime set
(``--m`` points, the regime configuration's C, γ and tol), S2DO solves WW
and LLW; :func:`msvm.teaching.face_report` then measures the face of the
optimum: free variables, the rank of their Hessian and the condition number
κ of its Jacobi-scaled form, which sets how fast coordinate steps contract
there (:mod:`msvm.teaching.conditioning`).  Times are single fits, one
thread, in this process (the passes, not the times, are the point).  Writes
``benchmarks/results/<tag>.jsonl``, ``.csv`` and ``.txt``::

    python -m benchmarks.bench_faces --tag faces [--m 1500]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks.configs import CONFIGS
from benchmarks.data import load, missing
from benchmarks.results import check_writable, header, write, write_summary
from benchmarks.runs import run_main

FIELDS = ["config", "m", "passes", "steps", "fit_s", "n_variables", "n_free", "n_at_bound",
          "rank", "condition"]
CONFIGURATIONS = ("pendigits-ww", "pendigits-llw", "satimage-ww", "satimage-llw", "dna-ww",
                  "dna-llw")


def measure(name: str, m: int, seed: int = 0) -> dict:
    """S2DO on ``m`` random points of configuration ``name``, and the face of its answer."""
    from msvm import MultiClassSVC
    from msvm.solvers import s2do
    from msvm.teaching import face_report

    config = CONFIGS[name]
    X, y, _, _ = load(config.dataset, None)
    keep = np.random.default_rng(seed).choice(len(y), min(m, len(y)), replace=False)
    X, y = X[keep], y[keep]
    problem = MultiClassSVC(model=config.model, C=config.C, gamma=config.gamma).prepare_fit(
        X, y).problem
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solution = s2do.solve(problem, tol=config.tol, cache_size=config.cache_size, n_jobs=1)
    fit = time.perf_counter() - start
    return {"config": name, "m": len(y), "status": solution.status,
            "passes": int(solution.n_iter), "steps": int(solution.info["n_steps"]),
            "fit_s": fit, **face_report(problem, solution.alpha)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="faces", help="results file stem")
    parser.add_argument("--m", type=int, default=1500, help="points per set (default 1500)")
    args = parser.parse_args(argv)
    if args.m < 2:
        parser.error(f"--m must be at least 2, got {args.m}")
    check_writable(parser, args.tag)
    if why := missing(CONFIGS[name].dataset for name in CONFIGURATIONS):
        parser.error(why)
    rows = []
    for name in CONFIGURATIONS:
        row = measure(name, args.m)
        print(f"{name:14s} passes {row['passes']:7d}  free {row['n_free']:5d}  "
              f"rank {row['rank']:5d}  condition {row['condition']:10.3g}", flush=True)
        rows.append(row)
    write(rows, args.tag, FIELDS)
    lines = [header("faces", args.tag, f"{args.m} random points per set, S2DO, one thread")]
    lines.append(f"{'config':14s} {'passes':>7s} {'free':>6s} {'rank':>6s} {'kappa':>10s}")
    for r in rows:
        lines.append(f"{r['config']:14s} {r['passes']:7d} {r['n_free']:6d} {r['rank']:6d} "
                     f"{r['condition']:10.3g}")
    by = {r["config"]: r for r in rows}
    for data in ("pendigits", "satimage", "dna"):
        ww, llw = by[f"{data}-ww"], by[f"{data}-llw"]
        lines.append(f"{data}: LLW/WW passes {llw['passes'] / ww['passes']:.1f}, "
                     f"condition {llw['condition'] / ww['condition']:.1f}")
    write_summary(lines, args.tag)
    return 0


if __name__ == "__main__":
    run_main(main)
