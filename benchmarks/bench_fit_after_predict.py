"""A fit after a prediction: the loop of a parameter search, fit then score, repeated.

Each worker process (:func:`benchmarks.runs.spawn`) loads one configuration
and runs ``--rounds`` rounds of ``fit(X, y)`` then ``score(X_test, y_test)``,
either back to back (``after predict``, as ``GridSearchCV`` does on each
worker) or with a pause of ``--pause`` seconds between the score and the next
fit (``after pause``, the control).  OpenBLAS's idle threads busy-wait for a
while after a multi-threaded call; a prediction that leaves them spinning
takes a core from the next fit's threads, so the ratio of the two fit times
shows what a prediction costs the fit after it.  A third worker times the
whole loop as a user runs it: ``GridSearchCV`` (3 folds, one process) over
C / 5, C and 5 C.  msvm runs with ``--n-jobs`` threads (fit and predict),
scikit-learn's libsvm ``SVC`` (one thread, the protocol's C, the numeric γ
of the whole training set where msvm's ``'scale'`` is computed on each fold)
is the peer in the same loops.  Medians over the rounds after the first (the first fit of a
process pays one-time costs).

Files (``results/``): ``<tag>.jsonl``, ``<tag>.csv``, ``<tag>.txt`` and
``<tag>.png`` (fit time after a prediction over fit time after a pause, the
prediction's time and the search's).  Measure on an idle machine::

    python -m benchmarks.bench_fit_after_predict
    python -m benchmarks.bench_fit_after_predict usps-ww --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from benchmarks.configs import CONFIGS, gamma_of
from benchmarks.data import load
from benchmarks.results import RESULTS, check_writable, header, pyplot, save_figure, write_run
from benchmarks.runs import announce, answer, check_configs, common_arguments, run_main, spawn

DEFAULT_CONFIGS = ["pendigits-ww", "satimage-cs", "dna-ww", "usps-ww"]
MODES = ("after predict", "after pause")
SEARCH = "grid search"
SOLVERS = ("msvm", "SVC (libsvm)")
CSV_FIELDS = ["config", "solver", "mode", "n_jobs", "fit_median", "predict_median",
              "search_time", "fits", "predicts", "test_error", "status"]


def run_one(spec: dict) -> dict:
    """The rounds of ``spec`` in this process: fit times and prediction (score) times."""
    from sklearn.svm import SVC

    from msvm import MultiClassSVC

    config = CONFIGS[spec["config"]]
    X, y, X_test, y_test = load(config.dataset, config.n_train)
    if spec["solver"] == "msvm":
        est = MultiClassSVC(model=config.model, C=config.C, gamma=config.gamma, tol=config.tol,
                            cache_size=config.cache_size, fit_intercept=config.bias,
                            n_jobs=spec["n_jobs"])
    else:
        est = SVC(C=config.peer_C, gamma=gamma_of(config, X), tol=1e-3,
                  cache_size=config.cache_size)
    if spec["mode"] == SEARCH:
        from sklearn.model_selection import GridSearchCV

        C = est.get_params()["C"]
        search = GridSearchCV(est, {"C": [C / 5, C, 5 * C]}, cv=3)
        tic = time.perf_counter()
        search.fit(X, y)
        return dict(spec, search_time=time.perf_counter() - tic,
                    fit_median=float(statistics.median(search.cv_results_["mean_fit_time"])),
                    predict_median=float(statistics.median(
                        search.cv_results_["mean_score_time"])),
                    test_error=1.0 - search.score(X_test, y_test), status="ok")
    fits, predicts = [], []
    for _ in range(spec["rounds"]):
        tic = time.perf_counter()
        est.fit(X, y)
        fits.append(time.perf_counter() - tic)
        tic = time.perf_counter()
        accuracy = est.score(X_test, y_test)
        predicts.append(time.perf_counter() - tic)
        if spec["mode"] == "after pause":
            time.sleep(spec["pause"])
    return dict(spec, fits=fits, predicts=predicts, test_error=1.0 - accuracy,
                fit_median=statistics.median(fits[1:]),
                predict_median=statistics.median(predicts[1:]), status="ok")


def find(rows: list[dict], config: str, solver: str, mode: str) -> dict | None:
    return next((r for r in rows if r["config"] == config and r["solver"] == solver
                 and r["mode"] == mode and r.get("status") == "ok"), None)


def penalty(rows: list[dict], config: str, solver: str) -> float | None:
    """Median fit time after a prediction over that after a pause."""
    a, b = (find(rows, config, solver, m) for m in MODES)
    return a["fit_median"] / b["fit_median"] if a and b else None


def summary(rows: list[dict], configs: list[str]) -> list[str]:
    lines = [f"{'config':14s} {'solver':13s} {'mode':14s} {'fit s':>7s} {'predict s':>9s} "
             f"{'err %':>6s} {'fit after predict / after pause':>32s}"]
    for c in configs:
        for s in SOLVERS:
            for m in MODES:
                r = find(rows, c, s, m)
                if r is None:
                    lines.append(f"{c:14s} {s:13s} {m:14s} no result")
                    continue
                p = penalty(rows, c, s) if m == MODES[0] else None
                lines.append(f"{c:14s} {s:13s} {m:14s} {r['fit_median']:7.3f} "
                             f"{r['predict_median']:9.4f} {100 * r['test_error']:6.2f} "
                             f"{'' if p is None else f'{p:32.2f}'}")
    lines.append(f"{'config':14s} {'solver':13s} GridSearchCV(cv=3, 3 values of C): s, "
                 "the median over C of the folds' mean fit and score times")
    for c in configs:
        for s in SOLVERS:
            r = find(rows, c, s, SEARCH)
            lines.append(f"{c:14s} {s:13s} " + ("no result" if r is None else
                         f"{r['search_time']:7.3f} s  fit {r['fit_median']:.3f} s  score "
                         f"{r['predict_median']:.4f} s"))
    return lines


def plot(rows: list[dict], configs: list[str], path, title: str) -> None:
    plt = pyplot()
    fig, (left, right, search) = plt.subplots(1, 3, figsize=(14, 3.6))
    x = range(len(configs))
    for k, s in enumerate(SOLVERS):
        ratios = [penalty(rows, c, s) or float("nan") for c in configs]
        left.bar([i + 0.4 * k for i in x], ratios, width=0.4, label=s)
        predicts = [(find(rows, c, s, MODES[1]) or {}).get("predict_median", float("nan"))
                    for c in configs]
        right.bar([i + 0.4 * k for i in x], predicts, width=0.4, label=s)
        searches = [(find(rows, c, s, SEARCH) or {}).get("search_time", float("nan"))
                    for c in configs]
        search.bar([i + 0.4 * k for i in x], searches, width=0.4, label=s)
    left.axhline(1.0, color="grey", lw=1)
    left.set_ylabel("fit after a prediction / after a pause")
    right.set_ylabel("prediction (score) time, s")
    right.set_yscale("log")
    search.set_ylabel("GridSearchCV, 3 folds x 3 C, s")
    search.set_yscale("log")
    for ax in (left, right, search):
        ax.set_xticks([i + 0.2 for i in x], configs, fontsize=8)
        ax.legend(fontsize=8)
    save_figure(fig, path, title)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations (default: "
                        f"{DEFAULT_CONFIGS}); known: {list(CONFIGS)}")
    parser.add_argument("--rounds", type=int, default=7, help="fit-score rounds (default 7)")
    parser.add_argument("--pause", type=float, default=0.5,
                        help="seconds between a score and the next fit in the control "
                             "(default 0.5)")
    parser.add_argument("--n-jobs", type=int, default=2, help="msvm's threads (default 2)")
    common_arguments(parser, timeout=1800)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    configs = args.configs or DEFAULT_CONFIGS
    check_configs(parser, configs)
    if args.rounds < 2:
        parser.error("--rounds must be at least 2 (the first round is not counted)")
    tag = args.tag or time.strftime("fit-after-predict-%Y%m%d-%H%M%S")
    check_writable(parser, tag)
    rows: list[dict] = []
    try:
        for c in configs:
            for s in SOLVERS:
                for m in (*MODES, SEARCH):
                    spec = dict(config=c, solver=s, mode=m, n_jobs=args.n_jobs,
                                rounds=args.rounds, pause=args.pause)
                    row = spawn("benchmarks.bench_fit_after_predict", spec, args.timeout)
                    rows.append(row)
                    announce(row,
                             f"{c} {s} {m}: fit {row.get('fit_median', float('nan')):.3f} s, "
                             f"search {row.get('search_time', float('nan')):.3f} s, "
                             f"predict {row.get('predict_median', float('nan')):.4f} s, "
                             f"{row.get('status')}")
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    lines = [header("fit-after-predict", tag,
                    f"msvm n_jobs={args.n_jobs}, SVC (libsvm) 1 thread; medians of "
                    f"{args.rounds - 1} rounds after the first; pause {args.pause} s"),
             *summary(rows, configs)]
    png = RESULTS / f"{tag}.png"
    plot(rows, configs, png, f"a fit after a prediction, {tag}")
    write_run(rows, tag, CSV_FIELDS, lines, png)
    return 0


if __name__ == "__main__":
    run_main(main)
