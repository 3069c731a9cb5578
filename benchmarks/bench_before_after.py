"""Before and after a change, on the same machine at the same time.

Ratios to a peer move with the machine's state: on a shared 2-core machine
the same fit can take twice as long one day as the next, and a
memory-bound solver suffers more than a compute-bound peer.  This
benchmark removes that: it fits each configuration with two checkouts of
msvm, alternately (before, after, before, after, ...), each fit in a fresh
process, and reports both medians and their ratio.  ``--before`` is a
checkout whose extensions are built in place, e.g.::

    git worktree add ../msvm-before <commit>
    (cd ../msvm-before && python setup.py build_ext --inplace)
    python -m benchmarks.bench_before_after --before ../msvm-before pendigits-ww letter-cs

The "after" checkout is this repository.  A fit is :meth:`MultiClassSVC.fit`
as a user runs it (default solver, ``--n-jobs`` threads, certificate
included) on the configuration's data (:mod:`benchmarks.data`); the worker
checks that it imported the checkout it was meant to.  Files:
``results/<tag>.jsonl`` (one line per fit) and ``results/<tag>.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.configs import CONFIGS
from benchmarks.results import RESULTS, check_writable, header, shown, strip_paths, write_jsonl
from benchmarks.runs import ROOT, check_configs, run_main

#: The worker, run with ``python -c`` in the checkout's directory.
WORKER = """
import json, sys, time
sys.path.insert(0, {root!r})
import msvm
from benchmarks.configs import CONFIGS
from benchmarks.data import load
from msvm import MultiClassSVC
c = CONFIGS[{config!r}]
X, y, Xt, yt = load(c.dataset, c.n_train)
est = MultiClassSVC(model=c.model, C=c.C, gamma=c.gamma, tol=c.tol,
                    cache_size={cache_size!r} or c.cache_size,
                    fit_intercept=c.bias, n_jobs={n_jobs})
start = time.perf_counter()
est.fit(X, y)
fit_time = time.perf_counter() - start
print(json.dumps(dict(fit_time=fit_time, n_iter=int(est.n_iter_), module=msvm.__file__,
                      test_error=float((est.predict(Xt) != yt).mean()),
                      status=est.solution_["status"])))
"""


def fit(root: Path, config: str, n_jobs: int, cache_size: float | None = None) -> dict:
    """One fit of ``config`` with the checkout at ``root``, in a fresh process (with
    ``cache_size`` MB of kernel cache instead of the configuration's, if given)."""
    env = dict(os.environ)
    env.setdefault("MSVM_DATASETS", str(ROOT.parent / "shared" / "datasets"))
    code = WORKER.format(root=str(root), config=config, n_jobs=n_jobs, cache_size=cache_size)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, env=env)
    if proc.returncode != 0:
        raise RuntimeError(strip_paths(proc.stderr[-2000:]))
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    if not Path(row.pop("module")).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the worker for {root} imported another msvm")
    return row


def summary(rows: list[dict]) -> list[str]:
    """One line per configuration: the median of each side and their ratio."""
    times: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        times.setdefault(row["config"], {"before": [], "after": []})[row["side"]].append(
            row["fit_time"])
    lines = []
    for config, t in times.items():
        med = {side: statistics.median(v) for side, v in t.items()}
        lines.append(f"{config:16s} before {med['before']:8.3f} s  after {med['after']:8.3f} s  "
                     f"after/before {med['after'] / med['before']:.2f}")
    return lines


def complete(rows: list[dict], repeat: int) -> set[str]:
    """The configurations of ``rows`` with ``repeat`` fits on each side (what ``--resume``
    skips; an interrupted one is run again from its first round)."""
    counts: dict[tuple, int] = {}
    for row in rows:
        key = row["config"], row["side"]
        counts[key] = counts.get(key, 0) + 1
    return {c for c, _ in counts
            if min(counts.get((c, side), 0) for side in ("before", "after")) >= repeat}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", help=f"configurations; known: {list(CONFIGS)}")
    parser.add_argument("--before", required=True, type=Path,
                        help="a checkout of msvm with its extensions built in place")
    parser.add_argument("--repeat", type=int, default=3, help="fits per checkout (default 3)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--cache-size", type=float, default=None,
                        help="kernel cache in MB instead of the configuration's "
                             "(the estimator's default is 200)")
    parser.add_argument("--tag", default="before-after")
    parser.add_argument("--resume", action="store_true",
                        help="keep results/<tag>.jsonl and skip the configurations it holds")
    args = parser.parse_args(argv)
    check_configs(parser, args.configs)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if not (args.before / "msvm").is_dir():
        parser.error(f"--before {str(args.before)!r} is not a checkout of msvm")
    check_writable(parser, args.tag)
    before = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.before,
                            capture_output=True, text=True).stdout.strip()
    after = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    jsonl = RESULTS / f"{args.tag}.jsonl"
    if not args.resume:
        jsonl.unlink(missing_ok=True)
    kept = [json.loads(line) for line in jsonl.read_text().splitlines()] \
        if jsonl.exists() else []
    # A configuration interrupted part-way is dropped and run again, not skipped.
    done = complete(kept, args.repeat)
    write_jsonl([row for row in kept if row["config"] in done], jsonl)
    try:
        for config in args.configs:
            if config in done:
                continue
            for r in range(args.repeat):
                for side, root in (("before", args.before), ("after", ROOT)):
                    row = dict(config=config, side=side,
                               commit=before if side == "before" else after,
                               round=r + 1, n_jobs=args.n_jobs, cache_size=args.cache_size,
                               **fit(root, config, args.n_jobs, args.cache_size))
                    write_jsonl([row], jsonl, append=True)
                    print(f"{config:16s} {side:6s} {row['fit_time']:8.3f} s", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted: the finished fits are in {shown(jsonl)} (--resume goes on)",
              file=sys.stderr)
        return 130
    except RuntimeError as exc:
        last = (str(exc).strip().splitlines() or ["?"])[-1]   # the exception, not its traceback
        print(f"benchmarks.bench_before_after: a fit failed: {last}", file=sys.stderr)
        return 1
    lines = summary([json.loads(line) for line in jsonl.read_text().splitlines()])
    print("\n".join(lines))
    text = header("before/after", args.tag, f"before {before}, after {after} (uncommitted "
                  f"changes included), n_jobs={args.n_jobs}, "
                  f"cache {args.cache_size or 'of each configuration'} MB, "
                  f"medians of {args.repeat} alternating fits")
    txt = RESULTS / f"{args.tag}.txt"
    txt.write_text(text + "\n" + "\n".join(lines) + "\n")
    print(f"wrote {shown(jsonl)}, {shown(txt)}")
    return 0


if __name__ == "__main__":
    run_main(main)
