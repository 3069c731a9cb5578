"""Running a benchmark: one run per fresh worker process, the SVC peer, test-set scores.

Every run (one solver on one configuration) happens in a subprocess
``python -m benchmarks.<module> --worker '<json spec>'``, so that its peak
resident memory is its own and a crash or a timeout costs one row only.
The worker prints its result as one line ``RESULT <json>`` (:func:`answer`),
which :func:`spawn` reads back.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.configs import SVC_C

#: The repository root, the working directory of the workers.
ROOT = Path(__file__).resolve().parents[1]
#: The prefix of the worker's answer line (other output, e.g. liblinear's, may surround it).
MARKER = "RESULT "


def spawn(module: str, spec: dict, timeout: float | None,
          parse: Callable[[dict, str], None] | None = None) -> dict:
    """Run ``spec`` in ``python -m <module> --worker``; its answer, or the failure.

    ``parse(row, stdout)`` may read more from the worker's output into the row.
    """
    cmd = [sys.executable, "-m", module, "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return dict(spec, status="timeout")
    if proc.returncode != 0:
        return dict(spec, status="failed", error=proc.stderr[-2000:])
    # Output written through C stdio may be flushed after Python's: find the answer line.
    line = [x for x in proc.stdout.splitlines() if x.startswith(MARKER)][-1]
    row = json.loads(line[len(MARKER):])
    if parse is not None:
        parse(row, proc.stdout)
    return row


def answer(row: dict) -> None:
    """Print a worker's result for :func:`spawn`."""
    print(MARKER + json.dumps(row), flush=True)


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Smallest wall-clock time of ``repeat`` calls of ``fn`` (the least disturbed run)."""
    times = []
    for _ in range(repeat):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return min(times)


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def fit_svc(X, y, X_test, y_test, gamma: float, cache_size: float) -> dict:
    """The peer: scikit-learn's SVC (one-vs-one libsvm) as BENCHMARKS.md sets it up."""
    from sklearn.svm import SVC

    start = time.perf_counter()
    svc = SVC(C=SVC_C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=cache_size).fit(X, y)
    return dict(fit_time=time.perf_counter() - start,
                test_error=float(np.mean(svc.predict(X_test) != y_test)),
                n_sv=int(svc.n_support_.sum()), n_iter=int(np.sum(svc.n_iter_)),
                status="optimal")


def predict_scores(X, X_test, beta: np.ndarray, gamma: float, chunk: int = 2000):
    """(scores of X_test, support vectors) of the RBF machine with coefficients β on X.

    The scores h(x) = Σ_j β_j k(x_j, x) over the support vectors (rows of β
    with a non-zero), without bias, computed ``chunk`` test points at a time.
    """
    from msvm.kernels import Kernel

    sv = np.flatnonzero(np.any(beta != 0, axis=1))
    kernel = Kernel(X[sv], "rbf", gamma=gamma)
    scores = np.concatenate([kernel.block(X_test[k:k + chunk]) @ beta[sv]
                             for k in range(0, X_test.shape[0], chunk)])
    return scores, sv


def common_arguments(parser, *, timeout: float | None = None, sparse: bool = False) -> None:
    """The options every benchmark shares.

    ``--sparse`` (CSR input instead of dense arrays; with ``sparse=True`` CSR is
    the default and ``--no-sparse`` gives dense arrays) and, for a benchmark
    whose runs are workers (``timeout`` given, its default in seconds),
    ``--timeout``, ``--tag`` and the hidden ``--worker``.
    """
    if sparse:
        parser.add_argument("--sparse", action=argparse.BooleanOptionalAction, default=True,
                            help="CSR input (the default; --no-sparse: dense arrays)")
    else:
        parser.add_argument("--sparse", action="store_true",
                            help="CSR input for every run (default: dense arrays)")
    if timeout is not None:
        parser.add_argument("--timeout", type=float, default=timeout, help="seconds per run")
        parser.add_argument("--tag", default=None,
                            help="results file stem (default: a timestamp)")
        parser.add_argument("--worker", help=argparse.SUPPRESS)
