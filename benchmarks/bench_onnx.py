"""onnxruntime's prediction throughput against ``MultiClassSVC.predict`` on usps.

Fits the usps-ww configuration of ``bench_s2do.py`` (RBF, C = 25, γ = 0.0331574),
exports it with :func:`msvm.to_onnx` (float64 graph) and measures rows per second
of ``predict`` and of an onnxruntime session (one thread each, so that the two
are compared on the same resources; ``--threads`` changes both) on the usps test
set, as one batch and in batches of ``--batch`` rows (a serving pattern), after
checking that onnxruntime's labels equal ``predict``'s.  Writes
``benchmarks/results/onnx.json`` and ``onnx.csv``::

    python -m benchmarks.bench_onnx             # needs pip install 'msvm[onnx]'
    python -m benchmarks.bench_onnx --quick     # smoke run (seconds, not a timing)
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import msvm
from benchmarks.configs import CONFIGS
from benchmarks.data import load
from benchmarks.results import RESULTS, write_csv, write_json
from benchmarks.runs import best_time, run_main
from msvm import MultiClassSVC


def _batched(fn, X, batch: int):
    def call():
        for start in range(0, len(X), batch):
            fn(X[start:start + batch])
    return call


def run(n_train, n_test, batch: int, repeat: int, threads: int) -> list[dict]:
    import onnxruntime as ort
    from threadpoolctl import threadpool_limits

    dataset, _, model, C, gamma, tol, cache, *_ = CONFIGS["usps-ww"]
    X, y, Xt, _ = load(dataset, n_train)
    Xt = np.ascontiguousarray(Xt[:n_test])
    est = MultiClassSVC(model=model, C=C, gamma=gamma, tol=tol, cache_size=cache).fit(X, y)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    sess = ort.InferenceSession(msvm.to_onnx(est).SerializeToString(), options,
                                providers=["CPUExecutionProvider"])

    def onnx_predict(rows):
        return sess.run(["label"], {"X": rows})[0]

    with threadpool_limits(limits=threads):
        assert np.array_equal(onnx_predict(Xt), est.predict(Xt)), "onnxruntime != predict"
        rows = []
        for size in (len(Xt), batch):
            out = {"dataset": "usps", "config": "usps-ww", "n_train": int(X.shape[0]),
                   "n_test": int(len(Xt)), "n_support": int(len(est.support_)),
                   "batch": int(size), "threads": threads, "repeat": repeat}
            out["predict_s"] = best_time(_batched(est.predict, Xt, size), repeat)
            out["onnxruntime_s"] = best_time(_batched(onnx_predict, Xt, size), repeat)
            out["predict_rows_per_s"] = len(Xt) / out["predict_s"]
            out["onnxruntime_rows_per_s"] = len(Xt) / out["onnxruntime_s"]
            out["speedup"] = out["predict_s"] / out["onnxruntime_s"]
            print(json.dumps(out), flush=True)
            rows.append(out)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=int, default=None, help="default: all 7291")
    parser.add_argument("--n-test", type=int, default=None, help="default: all 2007")
    parser.add_argument("--batch", type=int, default=32, help="rows per call, second row")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (the best counts)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 500 training and 100 test images, once")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test, args.repeat = 500, 100, 1
    rows = run(args.n_train, args.n_test, args.batch, args.repeat, args.threads)
    if args.quick:
        return   # a smoke run is not a result
    write_json(rows, RESULTS / "onnx.json")
    write_csv(rows, RESULTS / "onnx.csv", list(rows[0]))


if __name__ == "__main__":
    run_main(main)
