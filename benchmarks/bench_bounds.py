"""Model selection of the M-SVM² by the radius–margin bound against 5-fold CV.

For each data set, on one grid of (C, γ) (γ relative to scikit-learn's
'scale' value γ₀ = 1/(d·Var X)), both selections run in the same process,
one after the other, with the same estimator settings and one job each, so
that their time ratio is fair on a shared machine:

* ``search``: :class:`msvm.RadiusMarginSearch` (one fit per grid point on
  all the training data, warm-started along C).  Its two criteria are read
  off the same fits, so they share the time: the key lemma's count of
  possible LOO errors (its default, ``count``) and the radius–margin bound
  of Theorem 2 (``bound``);
* ``cv5``: :class:`sklearn.model_selection.GridSearchCV` with 5 stratified
  folds and refit of the best point.

Then, outside the timed part, every grid point is trained on the training
set and its test error measured (the test-error map), and, where the data
set has at most ``--loo-max`` points, its exact LOO error
(:func:`msvm.loo_error`).  Written to ``benchmarks/results/``:
``bounds.jsonl`` (one JSON line per data set with every grid value),
``bounds_selection.csv`` (selected parameters, test errors, selection
times, ratio) and ``bounds_<dataset>.png`` (heat maps of the bound rate,
exact LOO error, 5-fold CV error and test error over the grid, the
selected points marked).

Data: dna (2000/1186), satimage (stratified subset of the 4435 training
points / 2000 test), vowel (528/462), segment (no test split: stratified
2/3 train, 1/3 test, seed 0).  ``--n-train`` subsamples every training set
(stratified, seed 0) to keep the run within a shared machine's budget;
``--sparse`` fits on CSR input instead of dense arrays.

Examples::

    python -m benchmarks.bench_bounds                       # all four, default sizes
    python -m benchmarks.bench_bounds vowel --loo-max 600   # with the exact LOO map
    python -m benchmarks.bench_bounds --n-train 2000        # the issue's full sizes
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.data import load
from benchmarks.results import RESULTS, pyplot, write_csv, write_jsonl
from benchmarks.runs import common_arguments, run_main

DATASETS = ("dna", "satimage", "vowel", "segment")
C_GRID = (0.1, 1.0, 10.0)
GAMMA_FACTORS = (0.25, 1.0, 4.0)
CSV_FIELDS = ["dataset", "n_train", "count_best", "count_test_error", "bound_best",
              "bound_test_error", "search_time", "cv5_best", "cv5_test_error", "cv5_time",
              "time_ratio", "count_within_1_point", "bound_within_1_point"]


def run_dataset(name: str, args) -> dict:
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from msvm import MultiClassSVC, RadiusMarginSearch, loo_error

    X, y, Xt, yt = load(name, args.n_train, sparse=args.sparse, stratified=True)
    # 'scale' as scikit-learn computes it, for dense and CSR alike.
    gamma0 = 1.0 / (X.shape[1] * (X.multiply(X).mean() - X.mean() ** 2 if args.sparse
                                  else X.var()))
    grid = {"C": list(C_GRID), "gamma": [float(f * gamma0) for f in GAMMA_FACTORS]}
    base = MultiClassSVC(model="msvm2", solver="s2do", tol=args.tol, cache_size=500)
    print(f"{name}: train {X.shape}, test {Xt.shape}, Q={len(np.unique(y))}, "
          f"gamma0={gamma0:.4g}", flush=True)

    tic = time.perf_counter()
    search = RadiusMarginSearch(base, grid).fit(X, y)
    search_time = time.perf_counter() - tic
    print(f"  search: {search.best_params_} in {search_time:.1f} s", flush=True)

    tic = time.perf_counter()
    cv = GridSearchCV(base, grid, cv=StratifiedKFold(5, shuffle=True, random_state=0),
                      n_jobs=1, refit=True).fit(X, y)
    cv_time = time.perf_counter() - tic
    cv_test = 1.0 - cv.score(Xt, yt)
    print(f"  cv5:    {cv.best_params_} test error {cv_test:.4f} in {cv_time:.1f} s "
          f"(ratio {search_time / cv_time:.3f})", flush=True)

    # Maps outside the timed part: test error (and exact LOO where affordable) per point.
    params = search.cv_results_["params"]
    test_err, loo_err = [], []
    for p in params:
        est = MultiClassSVC(**{**base.get_params(), **p}).fit(X, y)
        test_err.append(1.0 - est.score(Xt, yt))
        if len(y) <= args.loo_max:
            loo_err.append(loo_error(est, X, y, n_jobs=args.loo_jobs).error_rate)
    cv_err = {json.dumps(p, sort_keys=True): 1.0 - s
              for p, s in zip(cv.cv_results_["params"], cv.cv_results_["mean_test_score"],
                              strict=True)}
    res = search.cv_results_
    count = search.best_index_
    bound = int(np.argmin(res["bound"]))   # criterion='bound' on the same fits
    return {
        "dataset": name, "n_train": len(y), "n_test": len(yt), "n_classes": len(np.unique(y)),
        "gamma0": gamma0, "tol": args.tol, "grid": grid,
        "params": params,
        "bound": res["bound"].tolist(), "bound_rate": res["bound_rate"].tolist(),
        "radius2": res["radius2"].tolist(), "sum_alpha": res["sum_alpha"].tolist(),
        "n_candidates": res["n_candidates"].tolist(), "point_time": res["time"].tolist(),
        "cv5_error": [cv_err[json.dumps(p, sort_keys=True)] for p in params],
        "test_error": test_err, "loo_error": loo_err or None,
        "count_best": params[count], "count_test_error": test_err[count],
        "bound_best": params[bound], "bound_test_error": test_err[bound],
        "search_time": search_time,
        "cv5_best": cv.best_params_, "cv5_test_error": cv_test, "cv5_time": cv_time,
        "time_ratio": search_time / cv_time,
        "count_within_1_point": bool(test_err[count] <= cv_test + 0.01),
        "bound_within_1_point": bool(test_err[bound] <= cv_test + 0.01),
        "python": platform.python_version(), "note": args.note,
        "layout": "csr" if args.sparse else "dense",
    }


def plot(row: dict, path: Path) -> None:
    plt = pyplot()
    Cs, gammas = row["grid"]["C"], row["grid"]["gamma"]

    def grid_of(values):
        G = np.full((len(gammas), len(Cs)), np.nan)
        for p, v in zip(row["params"], values, strict=True):
            G[gammas.index(p["gamma"]), Cs.index(p["C"])] = v
        return G

    maps = [("bound / m (log10)", np.log10(grid_of(row["bound_rate"])))]
    if row["loo_error"]:
        maps.append(("exact LOO error", grid_of(row["loo_error"])))
    maps += [("5-fold CV error", grid_of(row["cv5_error"])),
             ("test error", grid_of(row["test_error"]))]
    fig, axes = plt.subplots(1, len(maps), figsize=(3.6 * len(maps), 3.4))
    for ax, (title, G) in zip(axes, maps, strict=True):
        im = ax.imshow(G, origin="lower", cmap="viridis", aspect="auto")
        fig.colorbar(im, ax=ax, shrink=0.8)
        for i in range(G.shape[0]):
            for j in range(G.shape[1]):
                ax.text(j, i, f"{G[i, j]:.3g}", ha="center", va="center", color="w", fontsize=7)
        for best, marker in ((row["count_best"], "+"), (row["bound_best"], "o"),
                             (row["cv5_best"], "x")):
            ax.plot(Cs.index(best["C"]), gammas.index(best["gamma"]), marker, color="red",
                    markersize=12, markerfacecolor="none", markeredgewidth=2)
        ax.set_xticks(range(len(Cs)), [f"{c:g}" for c in Cs])
        ax.set_yticks(range(len(gammas)), [f"{g / row['gamma0']:g}γ₀" for g in gammas])
        ax.set_xlabel("C")
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"{row['dataset']} (m={row['n_train']}): + = lemma-count choice, "
                 "o = radius-margin bound choice, x = 5-fold CV choice", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--n-train", type=int, default=500,
                        help="stratified training subsample per data set (default: %(default)s)")
    parser.add_argument("--tol", type=float, default=1e-3, help="s2do tolerance (both methods)")
    parser.add_argument("--loo-max", type=int, default=0,
                        help="compute the exact LOO map for training sets up to this size")
    parser.add_argument("--loo-jobs", type=int, default=1)
    common_arguments(parser)
    parser.add_argument("--note", default="", help="free text stored with the results")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown:
        parser.error(f"unknown data sets {unknown}; choose from {list(DATASETS)}")
    rows = []
    for name in args.datasets:
        row = run_dataset(name, args)
        rows.append(row)
        write_jsonl([row], RESULTS / "bounds.jsonl", append=True)
        plot(row, RESULTS / f"bounds_{name}.png")
    write_csv(rows, RESULTS / "bounds_selection.csv", CSV_FIELDS)
    print(f"\n{'dataset':<10} {'m':>5} {'test error: count':>18} {'bound':>7} {'cv5':>7} "
          f"{'time: search':>13} {'cv5':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['dataset']:<10} {r['n_train']:>5} {r['count_test_error']:>18.4f} "
              f"{r['bound_test_error']:>7.4f} {r['cv5_test_error']:>7.4f} "
              f"{r['search_time']:>13.1f} {r['cv5_time']:>7.1f} {r['time_ratio']:>6.3f}")
    for criterion in ("count", "bound"):
        ok = sum(r[f"{criterion}_within_1_point"] and r["time_ratio"] <= 1 / 3 for r in rows)
        print(f"criterion {criterion!r}: {ok}/{len(rows)} data sets within 1 point of 5-fold CV "
              "in <= 1/3 of its time")
    return 0


if __name__ == "__main__":
    run_main(main)
