"""Running a benchmark: one run per fresh worker process, the SVC peer, test-set scores.

Every run (one solver on one configuration) happens in a subprocess
``python -m benchmarks.<module> --worker '<json spec>'``, so that its peak
resident memory is its own and a crash or a timeout costs one row only.
The worker prints its result as one line ``RESULT <json>`` (:func:`answer`),
which :func:`spawn` reads back.  A worker that fails leaves its stderr in the row,
with the machine's paths removed (:func:`benchmarks.results.strip_paths`).

The SVC peers (:func:`fit_svc`) are scikit-learn's libsvm ``SVC`` and, when
scikit-learn-intelex is installed (``pip install msvm[bench]``), its oneDAL
``SVC`` with an explicit thread count.  :func:`busy_core` holds one core with a
separate spinning process (the contention mode of BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from benchmarks.configs import SVC_C
from benchmarks.results import strip_paths

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
        return dict(spec, status="failed", error=strip_paths(proc.stderr[-2000:]))
    # Output written through C stdio may be flushed after Python's: find the answer line.
    lines = [x for x in proc.stdout.splitlines() if x.startswith(MARKER)]
    if not lines:   # e.g. a worker that exited early with status 0
        return dict(spec, status="failed",
                    error=strip_paths(proc.stderr[-2000:]) or "the worker gave no result")
    row = json.loads(lines[-1][len(MARKER):])
    if parse is not None:
        parse(row, proc.stdout)
    return row


def check_configs(parser: argparse.ArgumentParser, names, known=None) -> None:
    """``parser.error`` naming the ``names`` that are not configurations of ``known``
    (default :data:`benchmarks.configs.CONFIGS`)."""
    from benchmarks.configs import CONFIGS
    from benchmarks.data import missing

    check_data = known is None
    known = CONFIGS if known is None else known
    unknown = [c for c in names if c not in known]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {list(known)}")
    # A missing data set: one line now, not a traceback per run.
    if check_data and (why := missing(CONFIGS[c].dataset for c in names)):
        parser.error(why)


def run_main(main: Callable[[], int | None]) -> None:
    """Exit with ``main()``'s status, a benchmark's command line: Ctrl-C (130) and an
    OSError -- a data file missing, the results not writable -- (2) end it with one line
    on stderr, no traceback."""
    prog = f"benchmarks.{Path(sys.argv[0]).stem}"
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        code = 130
    except OSError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


def announce(row: dict, line: str) -> None:
    """Print a spawned run's summary ``line``, and the last line of its worker's error, if
    any, on stderr (the whole traceback is in the row)."""
    print(line, flush=True)
    if error := row.get("error", "").strip():
        print(f"  {error.splitlines()[-1]}", file=sys.stderr, flush=True)


def answer(row: dict) -> None:
    """Print a worker's result for :func:`spawn`."""
    print(MARKER + json.dumps(row), flush=True)


def fit_with_solution(est, X, y, **solver_options):
    """``est.fit(X, y)`` as the estimator runs it -- ``prepare_fit``, the solver,
    ``set_solution``: the certificate included -- keeping what ``fit`` hides; returns
    (setup, solution).  ``solver_options`` go to the solver over the estimator's own;
    ``n_jobs`` is dropped for a solver that runs on one thread (no "ignored" warning)."""
    from msvm.solvers import get_solver

    setup = est.prepare_fit(X, y)
    module = get_solver(setup.solver)
    if "n_jobs" not in module.OPTIONS:
        est.set_params(n_jobs=None)
    solution = module.solve(setup.problem, **dict(est.solver_options(setup), **solver_options))
    est.set_solution(setup, solution)
    return setup, solution


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


#: The SVC peers: scikit-learn's libsvm ``SVC`` and scikit-learn-intelex's oneDAL ``SVC``.
SVC_PEERS = ("sklearn", "sklearnex")


def sklearnex_version() -> str | None:
    """The installed scikit-learn-intelex's version, None when it is not installed.

    Reads the package metadata only (importing sklearnex loads oneDAL).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scikit-learn-intelex")
    except PackageNotFoundError:
        return None


def fit_svc(X, y, X_test, y_test, gamma: float, cache_size: float, *,
            implementation: str = "sklearn", threads: int = 1, C: float = SVC_C) -> dict:
    """A peer ``SVC`` (one-vs-one) as BENCHMARKS.md sets it up: C = 10, tol 1e-3, RBF.

    Parameters
    ----------
    X, y, X_test, y_test : array-like
        Training and test sets.
    gamma : float
        The RBF γ, a number (``'scale'`` resolved by the caller, so that the
        peer gets exactly msvm's γ).
    cache_size : float
        Kernel cache, MB (the same as msvm's).
    implementation : {'sklearn', 'sklearnex'}
        scikit-learn's libsvm ``SVC`` (single-threaded, ``threads`` ignored) or
        scikit-learn-intelex's oneDAL ``SVC`` on ``threads`` threads
        (``daal4py.daalinit``); the latter raises ImportError when
        scikit-learn-intelex is not installed.
    threads : int
        Threads of the oneDAL ``SVC``.
    C : float
        Its C (BENCHMARKS.md's 10 unless a configuration says otherwise).

    Returns
    -------
    dict
        ``fit_time``, ``test_error``, ``n_sv``, ``n_iter`` (the sum over the
        binary problems), ``steps`` (libsvm: its iterations are 2-variable SMO
        steps; oneDAL: not reported), ``threads`` (as the library reports
        them), ``status`` and, for oneDAL, ``peer_version`` and
        ``accelerated`` (whether sklearnex ran oneDAL rather than falling back
        to scikit-learn, from its log).
    """
    extra: dict = {}
    if implementation == "sklearn":
        from sklearn.svm import SVC
        threads = 1
    elif implementation == "sklearnex":
        import daal4py
        from sklearnex.svm import SVC

        daal4py.daalinit(threads)
        threads = int(daal4py.num_threads())
        log = _LogRecords()
        logger = logging.getLogger("sklearnex")
        logger.addHandler(log)
        logger.setLevel(logging.INFO)
        extra["peer_version"] = sklearnex_version()
    else:
        raise ValueError(f"unknown SVC implementation {implementation!r}; "
                         f"choose from {SVC_PEERS}")
    start = time.perf_counter()
    svc = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=cache_size).fit(X, y)
    fit_time = time.perf_counter() - start
    n_iter = int(np.sum(getattr(svc, "n_iter_", 0)))
    if implementation == "sklearnex":
        fits = [m for m in log.messages if ".fit:" in m]
        extra["accelerated"] = bool(fits) and all("accelerated" in m for m in fits)
    return dict(fit_time=fit_time, test_error=float(np.mean(svc.predict(X_test) != y_test)),
                n_sv=int(svc.n_support_.sum()), n_iter=n_iter,
                steps=n_iter if implementation == "sklearn" else None, threads=threads,
                status="optimal", **extra)


class _LogRecords(logging.Handler):
    """Keeps the messages of a logger (which path sklearnex took)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _spin(parent: int) -> None:
    """Busy loop of :func:`busy_core`: pure Python arithmetic, no sleeping, no I/O.

    Checks every few million additions that its parent is still the one that
    started it, and ends when it is not (the parent died without killing it).
    """
    x = 0
    while True:
        for _ in range(2_000_000):
            x += 1
        if os.getppid() != parent:
            return


@contextlib.contextmanager
def busy_core() -> Iterator[int]:
    """Hold one core with a separate spinning process while the block runs; yields its pid.

    The process is started with the ``spawn`` method (a fresh interpreter, not
    pinned to any core) and is terminated, then killed if it lingers, when the
    block ends for whatever reason: normally, by an exception, by Ctrl-C, or
    by SIGTERM (turned into :class:`SystemExit` inside the block so that the
    cleanup runs).  As a last resort it is a daemon process and watches its
    parent's pid.
    """
    process = multiprocessing.get_context("spawn").Process(
        target=_spin, args=(os.getpid(),), daemon=True, name="msvm-busy-core")
    previous = signal.getsignal(signal.SIGTERM)

    def _terminate(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminate)
    process.start()
    try:
        yield process.pid
    finally:
        process.terminate()
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
        signal.signal(signal.SIGTERM, previous)


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
