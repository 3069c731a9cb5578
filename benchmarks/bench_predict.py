"""Prediction of a linear model: ``X @ coef_.T + b`` against the kernel path.

For ``kernel='linear'`` a fitted MultiClassSVC predicts through ``coef_`` (Q × d);
the kernel path (what it did before, and still does for other kernels) forms the
(n_test × n_SV) kernel block and multiplies it by β.  This script fits one linear
model on the first ``--n-train`` MNIST images (pixels / 255, as BENCHMARKS.md) and
times ``decision_function`` on the MNIST test set both ways, with dense and with
CSR input (CSR training data gives a CSR ``coef_``, as in SVC), after checking
that both paths give the same scores.  Writes ``benchmarks/results/predict.json``
and ``predict.csv``::

    python -m benchmarks.bench_predict              # mnist10k, 10 000 test images
    python -m benchmarks.bench_predict --quick      # smoke run (seconds, not a timing)
"""

from __future__ import annotations

import argparse
import copy
import json

import numpy as np
import scipy.sparse as sp

from benchmarks.data import load
from benchmarks.results import RESULTS, write_csv, write_json
from benchmarks.runs import best_time, run_main
from msvm import MultiClassSVC


def run(n_train: int, n_test: int, repeat: int, C: float) -> list[dict]:
    X, y, Xt, _ = load("mnist", n_train)
    Xt = Xt[:n_test]
    rows = []
    for fmt in ("dense", "csr"):
        train, test = (X, Xt) if fmt == "dense" else (sp.csr_matrix(X), sp.csr_matrix(Xt))
        est = MultiClassSVC(model="cs", kernel="linear", C=C, solver="linear",
                            random_state=0).fit(train, y)
        kernel_path = copy.copy(est)
        del kernel_path.coef_            # decision_function then uses the kernel block
        linear_scores = est.decision_function(test)
        kernel_scores = kernel_path.decision_function(test)
        scale = float(np.max(np.abs(kernel_scores)))
        row = {
            "dataset": "mnist", "n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]),
            "input": fmt, "n_support": int(len(est.support_)),
            "coef_sparse": bool(sp.issparse(est.coef_)),
            "max_rel_diff": float(np.max(np.abs(linear_scores - kernel_scores)) / scale),
            "same_predictions": bool(np.array_equal(est.predict(test),
                                                    kernel_path.predict(test))),
            "linear_s": best_time(lambda e=est, t=test: e.decision_function(t), repeat),
            "kernel_s": best_time(lambda e=kernel_path, t=test: e.decision_function(t),
                                   repeat),
            "repeat": repeat,
        }
        row["speedup"] = row["kernel_s"] / row["linear_s"]
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=int, default=10000)
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls (the best counts)")
    parser.add_argument("-C", type=float, default=0.1, help="C of the linear CS model")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 500 training and 200 test images, once")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test, args.repeat = 500, 200, 1
    rows = run(args.n_train, args.n_test, args.repeat, args.C)
    if args.quick:
        return   # a smoke run is not a result
    write_json(rows, RESULTS / "predict.json")
    write_csv(rows, RESULTS / "predict.csv", list(rows[0]))


if __name__ == "__main__":
    run_main(main)
