"""Where the time of a fit goes: a sampling profile of msvm's compiled loops.

Each configuration is fitted as :mod:`benchmarks.bench_regimes` fits it
(:func:`benchmarks.bench_regimes.fit_msvm`: the estimator's solver, the
certificate included), in a worker process run under Linux ``perf record``
(sampling, no instrumentation, so the compiled loops run at full speed);
the worker switches the sampling on for the fit alone (``perf record
--control``), so imports and data loading are not in the profile.
``perf report`` then gives the share of the samples per function (self
time), which is written beside the fit's counters (time, passes, 2-D steps,
kernel evaluations) so that a change can be read as "this function's share
fell".  The profile is of CPU time: with ``--n-jobs 2`` the OpenMP threads'
waits at the barriers show up as ``libgomp`` samples.

Files (``results/``): ``<tag>.json`` (per configuration: the fit's row and
the functions above ``--min-percent``) and ``<tag>.txt`` (the same as
tables).  Needs ``perf`` (linux-tools); other systems are refused with a
message.

Usage::

    python -m benchmarks.profile pendigits-llw letter-cs usps-ww-bias --tag profile-before
    python -m benchmarks.profile mnist-cs --m 15000 --cache-size 125 --tag profile-mnist
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_regimes import fit_msvm
from benchmarks.configs import CONFIGS
from benchmarks.data import load
from benchmarks.results import RESULTS, check_writable, header, shown, strip_paths
from benchmarks.runs import MARKER, ROOT, answer, check_configs, run_main

#: perf's sampling frequency (Hz): a prime, so that it does not beat with periodic work.
FREQUENCY = 997
#: A line of ``perf report --stdio --sort dso,sym``: "  12.34%  libfoo.so  [.] symbol".
REPORT_LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.+?)\s*$")


@contextlib.contextmanager
def sampled(control: str, ack: str):
    """Let ``perf record -D -1 --control fifo:control,ack`` sample the block alone."""
    def command(word: str) -> None:
        with open(control, "w") as f:
            f.write(f"{word}\n")
        with open(ack) as f:
            f.readline()

    command("enable")
    try:
        yield
    finally:
        command("disable")


def fit(spec: dict) -> dict:
    """The worker: fit one configuration with msvm, sampled alone; the row of bench_regimes.

    ``spec["m"]`` (the first m training examples) and ``spec["cache_size"]`` (MB),
    when given, replace the configuration's.
    """
    config = CONFIGS[spec["config"]]
    config = config._replace(n_train=spec.get("m") or config.n_train,
                             cache_size=spec.get("cache_size") or config.cache_size)
    X, y, Xt, yt = load(config.dataset, config.n_train)
    window = functools.partial(sampled, *spec.pop("fifos"))
    return dict(spec, **fit_msvm(config, X, y, Xt, yt, spec["n_jobs"], window=window))


def demangle(symbol: str) -> str:
    """``__pyx_f_4msvm_5_core_5_s2do_9S2DOState__pass_chunk`` → ``_s2do.S2DOState._pass_chunk``
    (Cython's C names: length-prefixed module and class names, then ``_`` and the
    function); other symbols unchanged."""
    if not symbol.startswith("__pyx_f_4msvm_5_core_"):
        return symbol
    rest, parts = symbol[len("__pyx_f_4msvm_5_core"):], []
    while (number := re.match(r"_(\d+)", rest)) and number.end() + int(number[1]) < len(rest):
        parts.append(rest[number.end():number.end() + int(number[1])])
        rest = rest[number.end() + int(number[1]):]
    return ".".join([*parts, rest[1:]])


def functions(report: str, min_percent: float) -> list[dict]:
    """The functions of a ``perf report`` with at least ``min_percent`` of the samples."""
    rows = []
    for line in report.splitlines():
        match = REPORT_LINE.match(line)
        if match and float(match[1]) >= min_percent:
            rows.append({"percent": float(match[1]), "object": Path(match[2]).name,
                         "function": demangle(match[3])})
    return rows


def profile(config: str, n_jobs: int, min_percent: float, m: int | None = None,
            cache_size: float | None = None) -> dict:
    """Fit ``config`` under ``perf record`` (``m``, ``cache_size``: see :func:`fit`); its row
    with the profile."""
    spec = {"config": config, "n_jobs": n_jobs, "m": m, "cache_size": cache_size}
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "perf.data")
        fifos = [str(Path(tmp) / name) for name in ("control", "ack")]
        for fifo in fifos:
            os.mkfifo(fifo)
        run = subprocess.run(
            ["perf", "record", "-q", "-F", str(FREQUENCY), "-o", data, "-D", "-1",
             "--control", f"fifo:{fifos[0]},{fifos[1]}", "--", sys.executable, "-m",
             "benchmarks.profile", "--worker", json.dumps(dict(spec, fifos=fifos))],
            capture_output=True, text=True, cwd=ROOT)
        if run.returncode != 0:
            return dict(spec, status="failed", error=strip_paths(run.stderr[-2000:]))
        line = [x for x in run.stdout.splitlines() if x.startswith(MARKER)][-1]
        row = json.loads(line[len(MARKER):])
        report = subprocess.run(
            ["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "dso,sym"],
            capture_output=True, text=True, check=True).stdout
    row["profile"] = functions(report, min_percent)
    return row


def table(row: dict) -> list[str]:
    """One configuration's profile as text."""
    if "profile" not in row:
        return [f"{row['config']}: {row.get('status')} {row.get('error', '')}"]
    changed = "".join(f", {key}={row[key]}" for key in ("m", "cache_size") if row.get(key))
    lines = [f"{row['config']} (n_jobs={row['n_jobs']}{changed}, solver {row['msvm_solver']}): "
             f"{row['fit_time']:.2f} s, {row['n_iter']} iterations, {row['steps']} steps, "
             f"{row['kernel_evaluations']:.3g} kernel evaluations, test error "
             f"{100 * row['test_error']:.2f}%, status {row['status']}"]
    lines += [f"  {p['percent']:6.2f}%  {p['object']:<40.40} {p['function']}"
              for p in row["profile"]]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations; known: {list(CONFIGS)}")
    parser.add_argument("--n-jobs", type=int, default=2, help="msvm's threads (default 2)")
    parser.add_argument("--min-percent", type=float, default=1.0,
                        help="functions with at least this share of the samples (default 1)")
    parser.add_argument("--m", type=int, default=None,
                        help="the first m training examples (default: the configuration's)")
    parser.add_argument("--cache-size", type=float, default=None,
                        help="Gram-row cache in MB (default: the configuration's)")
    parser.add_argument("--tag", default=None, help="results file stem (default: a timestamp)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        answer(fit(json.loads(args.worker)))
        return 0
    if not args.configs:
        parser.error(f"name a configuration; known: {list(CONFIGS)}")
    check_configs(parser, args.configs)
    if shutil.which("perf") is None:
        parser.error("needs Linux perf (linux-tools) on the PATH")
    tag = args.tag or time.strftime("profile-%Y%m%d-%H%M%S")
    check_writable(parser, tag)
    rows = []
    for config in args.configs:
        rows.append(profile(config, args.n_jobs, args.min_percent, args.m, args.cache_size))
        print("\n".join(table(rows[-1])), flush=True)
    lines = [header("profile", tag, f"perf record -F {FREQUENCY}, self time per function")]
    for row in rows:
        lines += table(row)
    paths = RESULTS / f"{tag}.json", RESULTS / f"{tag}.txt"
    paths[0].write_text(json.dumps(rows, indent=1) + "\n")
    paths[1].write_text("\n".join(lines) + "\n")
    print(f"wrote {shown(paths[0])}, {shown(paths[1])}")
    return 0


if __name__ == "__main__":
    run_main(main)
