"""Cost of the float64 certificate (``certify=True``) against the fit it certifies.

For each standard configuration the dual is solved by S2DO as ``fit`` does (one
thread, ``certify=True``): at the end the training scores are recomputed from β
in float64, from the Gram rows still in the solver's cache and kernel blocks for
the others; that pass is timed apart from the solve (``info['certify_time']``).
Writes
``benchmarks/results/certify.json`` and ``certify.csv``::

    python benchmarks/bench_certify.py usps-ww letter-cs mnist10k-cs
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_s2do import CONFIGS, load  # noqa: E402

from msvm import MultiClassSVC  # noqa: E402
from msvm.solvers import s2do  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def run(name: str) -> dict:
    dataset, n_train, model, C, gamma, tol, cache = CONFIGS[name]
    X, y, _, _ = load(dataset, n_train)
    est = MultiClassSVC(model=model, C=C, gamma=gamma, tol=tol, cache_size=cache)
    problem = est.prepare_fit(X, y).problem
    solution = s2do.solve(problem, tol=tol, cache_size=cache, certify=True)
    fit, certify = solution.time, solution.info["certify_time"]
    drift = est._certified(problem, solution)[1]
    return {"config": name, "fit_s": fit, "certify_s": certify, "ratio": certify / fit,
            "score_drift": drift, "n_support": int((abs(problem.beta(solution.alpha)) > 0)
                                                   .any(axis=1).sum())}


def main(names: list[str]) -> None:
    rows = []
    for name in names or ["usps-ww", "letter-cs", "mnist10k-cs"]:
        row = run(name)
        print(json.dumps(row), flush=True)
        rows.append(row)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify.json").write_text(json.dumps(rows, indent=2) + "\n")
    with open(RESULTS / "certify.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1:])
