"""Speed-up of a 3×3 RadiusMarginSearch on a Dask LocalCluster: 2 workers against 1.

The search of the README's model-selection benchmark (M-SVM², C ∈ {0.1, 1, 10},
γ ∈ {¼, 1, 4}·γ₀ with γ₀ = 1/(d·Var X)) on satimage runs under
``joblib.parallel_backend("dask")`` on a ``distributed.LocalCluster`` of 1
and then of 2 single-threaded worker processes, and once in this process
(``n_jobs=1``, no Dask) for reference.  A task of the search is one path
along C (one γ), so the 3×3 grid is three tasks: on two workers the ideal
speed-up is 3/2 when the three paths cost the same (two rounds instead of
three), less when one path dominates.  The cluster is started, and msvm
imported on its workers, before the clock starts; each timing is the median
of ``--repeats`` runs, and every run must give the same ``cv_results_``
bounds as the in-process one (checked, recorded as ``same_results``).

Written to ``benchmarks/results/scaling.json`` (every run) and
``scaling.csv`` (one row per mode: median seconds, speed-up against one
worker and against the in-process run).

Examples::

    python benchmarks/bench_scaling.py                    # satimage, 2000 training points
    python benchmarks/bench_scaling.py --n-train 4435     # the whole training set
    python benchmarks/bench_scaling.py --n-train 150 --repeats 1 --out /tmp  # smoke test
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
C_GRID = (0.1, 1.0, 10.0)
GAMMA_FACTORS = (0.25, 1.0, 4.0)


def load(n_train: int | None):
    """satimage's training set (dense), a stratified subsample of ``n_train`` (seed 0)."""
    from sklearn.model_selection import train_test_split

    from msvm.datasets import shared_dataset

    X, y, _, _ = shared_dataset("satimage")
    X = X.toarray()
    if n_train is not None and n_train < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=n_train, stratify=y, random_state=0)
    return X, y


def search(X, y, n_jobs):
    """One timed 3×3 search; (seconds, cv_results_ bounds)."""
    from msvm import MultiClassSVC, RadiusMarginSearch

    gamma0 = 1.0 / (X.shape[1] * X.var())
    grid = {"C": list(C_GRID), "gamma": [f * gamma0 for f in GAMMA_FACTORS]}
    tic = time.perf_counter()
    fitted = RadiusMarginSearch(MultiClassSVC(model="msvm2"), grid, n_jobs=n_jobs).fit(X, y)
    return time.perf_counter() - tic, fitted.cv_results_["bound"].tolist()


def _import_msvm() -> None:
    import msvm.model_selection  # noqa: F401


def run_mode(X, y, workers: int | None, repeats: int) -> list[tuple[float, list]]:
    """``repeats`` searches in this process (``workers`` None) or on a LocalCluster."""
    if workers is None:
        return [search(X, y, n_jobs=1) for _ in range(repeats)]
    import joblib
    from distributed import Client, LocalCluster

    with (LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                       host="127.0.0.1", dashboard_address=None) as cluster,
          Client(cluster) as client):
        client.run(_import_msvm)  # off the clock
        with joblib.parallel_backend("dask"):
            return [search(X, y, n_jobs=None) for _ in range(repeats)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=2000,
                        help="stratified training subsample (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode (median)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)

    X, y = load(args.n_train)
    modes = {"in-process": None, "dask-1-worker": 1, "dask-2-workers": 2}
    runs = {name: run_mode(X, y, workers, args.repeats) for name, workers in modes.items()}
    reference = runs["in-process"][0][1]
    median = {name: statistics.median(t for t, _ in r) for name, r in runs.items()}
    rows = [{"mode": name, "workers": workers or 0, "median_s": median[name],
             "speedup_vs_1_worker": median["dask-1-worker"] / median[name],
             "speedup_vs_in_process": median["in-process"] / median[name],
             "same_results": all(np.array_equal(b, reference) for _, b in runs[name])}
            for name, workers in modes.items()]

    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"dataset": "satimage", "n_train": len(y), "n_features": X.shape[1],
               "grid": {"C": C_GRID, "gamma_factors": GAMMA_FACTORS},
               "repeats": args.repeats, "rows": rows,
               "times": {name: [t for t, _ in r] for name, r in runs.items()},
               "bounds": reference, "python": platform.python_version(),
               "platform": platform.platform()}
    (args.out / "scaling.json").write_text(json.dumps(payload, indent=1))
    with open(args.out / "scaling.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(f"{row['mode']:<15} {row['median_s']:8.2f} s  x{row['speedup_vs_1_worker']:.2f} "
              f"vs 1 worker, x{row['speedup_vs_in_process']:.2f} vs in-process, same results: "
              f"{row['same_results']}")
    print(f"Wrote {args.out / 'scaling.json'} and scaling.csv")


if __name__ == "__main__":
    main()
