"""Cost of the float64 certificate (``certify=True``) against the fit it certifies.

For each standard configuration the dual is solved by S2DO as ``fit`` does (one
thread, ``certify=True``): at the end the training scores are recomputed from β
in float64, from the Gram rows still in the solver's cache and kernel blocks for
the others; that pass is timed apart from the solve (``info['certify_time']``).
Writes ``benchmarks/results/certify.json`` and ``certify.csv`` (``--sparse``: CSR
input instead of dense arrays)::

    python -m benchmarks.bench_certify usps-ww letter-cs mnist10k-cs
"""

from __future__ import annotations

import argparse
import json

from benchmarks.configs import CONFIGS
from benchmarks.data import load
from benchmarks.results import RESULTS, write_csv, write_json
from benchmarks.runs import check_configs, common_arguments, run_main

DEFAULT = ["usps-ww", "letter-cs", "mnist10k-cs"]
FIELDS = ["config", "fit_s", "certify_s", "ratio", "score_drift", "n_support", "layout"]


def run(name: str, sparse: bool = False, m: int | None = None) -> dict:
    """Fit one configuration with S2DO (certify=True); the certification pass is timed apart."""
    from msvm import MultiClassSVC
    from msvm.solvers import s2do

    dataset, n_train, model, C, gamma, tol, cache, *_ = CONFIGS[name]
    X, y, _, _ = load(dataset, m or n_train, sparse=sparse)
    est = MultiClassSVC(model=model, C=C, gamma=gamma, tol=tol, cache_size=cache)
    problem = est.prepare_fit(X, y).problem
    solution = s2do.solve(problem, tol=tol, cache_size=cache, certify=True)
    fit, certify = solution.time, solution.info["certify_time"]
    drift = est._certified(problem, solution)[1]
    return {"config": name, "fit_s": fit, "certify_s": certify, "ratio": certify / fit,
            "score_drift": drift, "n_support": int((abs(problem.beta(solution.alpha)) > 0)
                                                   .any(axis=1).sum()),
            "layout": "csr" if sparse else "dense"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations (default: {DEFAULT}); "
                        f"known: {list(CONFIGS)}")
    common_arguments(parser)
    parser.add_argument("--m", type=int, default=None, help="first m training examples only")
    args = parser.parse_args(argv)
    check_configs(parser, args.configs)
    rows = []
    for name in args.configs or DEFAULT:
        row = run(name, args.sparse, args.m)
        print(json.dumps(row), flush=True)
        rows.append(row)
    write_json(rows, RESULTS / "certify.json")
    write_csv(rows, RESULTS / "certify.csv", FIELDS)
    return 0


if __name__ == "__main__":
    run_main(main)
