"""Every regime: msvm against both SVC peers, kernel-bound, step-bound and with a bias.

Issue 21, item 1.  The configurations are those of ``../shared/BENCHMARKS.md``
(:mod:`benchmarks.configs`): the standard ones (kernel-bound: usps, mnist10k;
letter at its published γ) and the regime ones (step-bound: pendigits,
satimage, dna and letter at ``gamma='scale'`` with WW, CS and LLW; usps-ww and
usps-cs with a bias).  msvm runs as a user runs it: :class:`msvm.MultiClassSVC`
with its default solver (``'s2do'``, or ``'s2do_bias'`` with a bias) on
``--n-jobs`` threads (default 2), γ = ``'scale'`` resolved by the estimator.
Its peers, in the same run, on the same data, get C = 10, the same numeric γ,
tol 1e-3 and the same ``cache_size``: scikit-learn's ``SVC`` (libsvm,
one-vs-one, single-threaded) and, when scikit-learn-intelex is installed
(``pip install msvm[bench]``), its oneDAL ``SVC`` on ``--peer-threads``
threads (default 2).  Without scikit-learn-intelex the benchmark says so and
compares with scikit-learn's ``SVC`` alone.

Every run (one solver on one configuration) is a fresh subprocess
(:func:`benchmarks.runs.spawn`), so its peak resident memory is its own.  Per
run it records the fit time, test error, support vectors, the solver's
iterations, passes over the data and 2-D steps where the solver reports them,
kernel evaluations, the relative duality gap and KKT violation (msvm), peak
RSS, threads, the load average before the run and the status.  Runs are
interleaved (one round of every solver, then the next round); a solver
whose first fit on a configuration took under a second is run 5 times
(medians of 5 for the sub-second fits, the peers' on the step-bound sets
above all), any other 3 times (``--repeat`` sets one number for all), so
that a fit of minutes is not repeated five times.  The summary gives the
median time per (configuration, solver) and its ratio to the faster peer's
median, next to issue 21's target (:data:`benchmarks.configs.TARGETS`).

``--contention`` is the contention mode of BENCHMARKS.md: a separate process
keeps one core busy (:func:`benchmarks.runs.busy_core`, killed when the mode
ends, however it ends) while usps-ww and letter-cs are fitted by msvm with
``n_jobs=1`` and ``n_jobs=2`` and by the peers; the same runs on the idle
machine come first (``--no-idle`` skips them).  Its rows carry
``contention: true`` (or false for the idle ones).  ``--wait-policy passive``
sets ``OMP_WAIT_POLICY`` in every run's environment (OpenMP threads then sleep
between parallel regions instead of spinning) and fits msvm with ``n_jobs=1``
and ``n_jobs=2`` too; its rows carry ``wait_policy``.

Files (``results/``): ``<tag>.jsonl`` (one line per run, appended as the runs
end), ``<tag>.csv``, ``<tag>.txt`` (the summary) and, outside the contention
mode, ``<tag>-ratios.png`` (msvm / faster peer per configuration, log scale,
with the targets).  Measure on an idle machine: the figures of a loaded one
are not comparable.

Examples::

    python -m benchmarks.bench_regimes --quick                # smoke run, ~1 min
    python -m benchmarks.bench_regimes                        # every regime
    python -m benchmarks.bench_regimes pendigits-ww dna-llw --repeat 5
    python -m benchmarks.bench_regimes --contention           # one core held busy
    python -m benchmarks.bench_regimes pendigits-ww --wait-policy passive
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np

from benchmarks.configs import CONFIGS, REGIMES, STANDARD, TARGETS, gamma_of
from benchmarks.data import load
from benchmarks.results import (
    RESULTS,
    check_writable,
    header,
    pyplot,
    shown,
    write_jsonl,
    write_run,
)
from benchmarks.runs import (
    SVC_PEERS,
    announce,
    answer,
    busy_core,
    check_configs,
    common_arguments,
    fit_svc,
    fit_with_solution,
    peak_rss_mb,
    run_main,
    sklearnex_version,
    spawn,
)

#: Every configuration of the default run: the standard ones (but the 60 000-example
#: mnist-cs, which is run by naming it) and every regime configuration.
DEFAULT = [c for c in STANDARD if c != "mnist-cs"] + list(REGIMES)
#: The contention mode's configurations: one kernel-bound, one step-bound.
CONTENTION = ["usps-ww", "letter-cs"]
#: The smoke run: one configuration of each regime, on QUICK_M training examples, once.
QUICK = ["usps-ww", "pendigits-llw", "dna-cs", "usps-cs-bias"]
QUICK_M = 500
#: A solver whose first fit on a configuration takes under SUB_SECOND seconds is run
#: SHORT_ROUNDS times in all (medians of 5), any other LONG_ROUNDS times.
SUB_SECOND, SHORT_ROUNDS, LONG_ROUNDS = 1.0, 5, 3
#: Statuses of runs that produced no fit (left out of the medians).
NO_FIT = ("failed", "timeout", "unavailable")
#: The solver names of the rows (msvm's actual solver is in ``msvm_solver``).
LABELS = {"msvm": "msvm", "sklearn": "SVC (libsvm)", "sklearnex": "SVC (oneDAL)"}
CSV_FIELDS = ["config", "solver", "msvm_solver", "contention", "n_jobs", "threads", "round",
              "m", "n_features", "n_classes", "C", "gamma", "tol", "cache_size", "bias",
              "fit_time", "test_error", "n_sv", "n_iter", "passes", "steps", "parallel_iter",
              "serial_switches", "kernel_evaluations", "cache_hit_rate", "relative_gap",
              "kkt_violation", "peak_rss_mb", "load_before", "accelerated", "peer_version",
              "wait_policy", "status"]


# ------------------------------------------------------------------ one run
def run_one(spec: dict) -> dict:
    """Fit one solver on one configuration (called in a fresh process).

    Parameters
    ----------
    spec : dict
        ``config`` (an id of :data:`benchmarks.configs.CONFIGS`), ``solver``
        (``'msvm'`` or one of :data:`benchmarks.runs.SVC_PEERS`), ``m`` (a
        stratified subsample of that many training examples, or None: the
        configuration's), ``n_jobs`` (msvm's threads), ``peer_threads`` (the
        oneDAL SVC's threads) and bookkeeping keys copied to the row.

    Returns
    -------
    dict
        The row: ``spec``, the problem (m, features, classes, C, the numeric
        γ, tol, cache size, bias) and the measurements.
    """
    config = CONFIGS[spec["config"]]
    m = spec.get("m")
    X, y, Xt, yt = load(config.dataset, m or config.n_train, stratified=m is not None)
    gamma = gamma_of(config, X)   # 'scale': the number msvm's estimator computes, for the peers
    out = dict(spec, m=int(X.shape[0]), n_features=int(X.shape[1]),
               n_classes=int(len(np.unique(y))), gamma=gamma, cache_size=config.cache_size,
               bias=config.bias, wait_policy=os.environ.get("OMP_WAIT_POLICY"))
    if spec["solver"] in SVC_PEERS:
        out.update(C=config.peer_C, tol=1e-3)
        out.update(fit_svc(X, y, Xt, yt, gamma, config.cache_size,
                           implementation=spec["solver"],
                           threads=spec.get("peer_threads", 1), C=config.peer_C))
    else:
        out.update(fit_msvm(config, X, y, Xt, yt, spec.get("n_jobs", 1)))
        if not np.isclose(out["gamma_msvm"], gamma, rtol=1e-12, atol=0):
            out["status"] = f"gamma mismatch ({out['gamma_msvm']!r} != {gamma!r})"
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def fit_msvm(config, X, y, X_test, y_test, n_jobs: int,
             window=contextlib.nullcontext, params: dict | None = None) -> dict:
    """msvm's fit of ``config`` as :meth:`msvm.MultiClassSVC.fit` does it, with the solver's info.

    The fit is the estimator's advanced API (``prepare_fit``, the solver,
    ``set_solution``: what ``fit`` runs, certificate included), so that the
    solver's own counters (2-D steps, threads) are at hand; the time covers
    all three.  ``n_jobs`` goes to a solver that takes it (S2DO, S2DO with a
    bias); Frank–Wolfe runs on one thread.  ``window()`` is a context manager
    around the timed part (:mod:`benchmarks.profile` samples it alone).
    ``params`` are further estimator parameters (e.g. ``cache_dtype``).
    """
    from sklearn.exceptions import ConvergenceWarning

    from msvm import MultiClassSVC
    from msvm.solvers import get_solver

    est = MultiClassSVC(model=config.model, C=config.C, gamma=config.gamma, tol=config.tol,
                        cache_size=config.cache_size, fit_intercept=config.bias, n_jobs=n_jobs,
                        **(params or {}))
    with window(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # the status tells
        start = time.perf_counter()
        _, solution = fit_with_solution(est, X, y)
        fit_time = time.perf_counter() - start
    module = get_solver(solution.solver)
    info = solution.info
    hits, misses = info.get("cache_hits", 0), info.get("cache_misses", 0)
    s2do = solution.solver in ("s2do", "s2do_bias")
    return dict(
        fit_time=fit_time, msvm_solver=solution.solver, C=config.C, tol=config.tol,
        gamma_msvm=float(est.gamma_),
        threads=int(info.get("n_threads", n_jobs if "n_jobs" in module.OPTIONS else 1)),
        test_error=float(np.mean(est.predict(X_test) != y_test)),
        n_sv=int(est.n_support_.sum()), n_iter=int(solution.n_iter),
        # S2DO (with a bias: summed over the outer iterations): an iteration is one pass
        # over the working set, holding info["n_steps"] 2-D steps; Frank–Wolfe: one step.
        passes=int(solution.n_iter) if s2do else None,
        steps=int(info["n_steps"]) if s2do else int(solution.n_iter),
        n_splits=info.get("n_splits"),
        # S2DO's threads: iterations whose passes ran on all threads, and the contention
        # watch's switches down to one thread (it may also start on one).
        parallel_iter=info.get("n_parallel_iter"), serial_switches=info.get("n_serial_switches"),
        kernel_evaluations=int(solution.n_kernel_evaluations),
        cache_hit_rate=hits / max(hits + misses, 1),
        relative_gap=est.solution_["relative_gap"],
        kkt_violation=est.solution_["kkt_violation"],
        status=est.solution_["status"])


# ----------------------------------------------------------------- planning
def round_specs(config: str, args, peers: list[str], contention: bool,
                n_jobs_list: list[int]) -> list[dict]:
    """The runs of one round on ``config``: every peer, then msvm with each ``n_jobs``."""
    common = dict(config=config, m=args.m, contention=contention)
    specs = [dict(common, solver=p, **({"peer_threads": args.peer_threads}
                                       if p == "sklearnex" else {})) for p in peers]
    specs += [dict(common, solver="msvm", n_jobs=n) for n in n_jobs_list]
    return specs


def run_key(row: dict) -> tuple:
    """What a round repeats: the solver (and msvm's ``n_jobs``)."""
    return row["solver"], row.get("n_jobs")


def rounds_for(first: list[dict], args) -> dict[tuple, int]:
    """Runs of each solver of a configuration (:func:`run_key` -> number), from its first.

    ``--repeat`` for all; else 5 for a sub-second first fit, 3 for a longer
    one, and 1 for a run that produced no fit (a timeout is not retried).
    """
    rounds = {}
    for row in first:
        if args.repeat:
            rounds[run_key(row)] = args.repeat
        elif row.get("status") in NO_FIT:
            rounds[run_key(row)] = 1
        else:
            rounds[run_key(row)] = SHORT_ROUNDS if row["fit_time"] < SUB_SECOND else LONG_ROUNDS
    return rounds


class Runner:
    """Runs specs in fresh workers, prints a line per run, appends it to the JSON lines."""

    def __init__(self, tag: str, timeout: float) -> None:
        self.tag, self.timeout = tag, timeout
        self.rows: list[dict] = []
        self.jsonl = RESULTS / f"{tag}.jsonl"

    def run(self, spec: dict) -> dict:
        load_before = os.getloadavg()[0]
        row = spawn("benchmarks.bench_regimes", spec, self.timeout)
        row["load_before"] = load_before
        if row.get("status") == "timeout":
            row["fit_time_above"] = self.timeout   # a lower bound for the summary and plot
        self.rows.append(row)
        write_jsonl([row], self.jsonl, append=True)
        jobs = f" n_jobs={row['n_jobs']}" if row["solver"] == "msvm" else ""
        busy = " [one core busy]" if row.get("contention") else ""
        announce(row,
                 f"[{len(self.rows)}] {row['config']} {LABELS[row['solver']]}{jobs}{busy} "
                 f"round {row.get('round')}: {row.get('fit_time', float('nan')):.3f} s, "
                 f"test error {100 * row.get('test_error', float('nan')):.2f}%, "
                 f"status {row.get('status')}")
        return row

    def config_rounds(self, config: str, args, peers, contention, n_jobs_list,
                      rounds: dict[tuple, int] | None = None) -> dict[tuple, int]:
        """Every round of ``config``; returns the runs per solver (:func:`rounds_for`).

        ``rounds`` (e.g. from the idle runs of the contention mode) fixes them;
        by default the first round decides.  Even rounds run the specs in the
        reverse order, so that a drift of the machine's speed over a round
        (warming up, the spinning process settling) favours no solver.
        """
        specs = round_specs(config, args, peers, contention, n_jobs_list)
        first = [self.run(dict(s, round=1)) for s in specs]
        rounds = rounds or rounds_for(first, args)
        for k in range(2, max(rounds.values(), default=1) + 1):
            for s in specs if k % 2 else specs[::-1]:
                if rounds.get(run_key(s), 1) >= k:
                    self.run(dict(s, round=k))
        return rounds


# --------------------------------------------------------------- reporting
def fitted(rows: list[dict], config: str, solver: str, **match) -> list[dict]:
    """The runs of ``solver`` on ``config`` that produced a fit, matching ``match``."""
    return [r for r in rows if r["config"] == config and r["solver"] == solver
            and r.get("status") not in NO_FIT and "fit_time" in r
            and all(r.get(k) == v for k, v in match.items())]


def median_of(rows: list[dict], key: str) -> float | None:
    """Median of ``key`` over ``rows`` (None when no row has it)."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def faster_peer(rows: list[dict], config: str, peers, **match) -> tuple[str, float] | None:
    """(name, median time) of the faster SVC peer on ``config``, or None."""
    times = [(p, median_of(fitted(rows, config, p, **match), "fit_time")) for p in peers]
    times = [(p, t) for p, t in times if t is not None]
    return min(times, key=lambda pt: pt[1]) if times else None


def time_or_bound(rows: list[dict], config: str, solver: str,
                  **match) -> tuple[float | None, bool]:
    """(median fit time, False), or (the timeout, True) when every run timed out."""
    t = median_of(fitted(rows, config, solver, **match), "fit_time")
    if t is not None:
        return t, False
    bounds = [r["fit_time_above"] for r in rows if r["config"] == config
              and r["solver"] == solver and "fit_time_above" in r
              and all(r.get(k) == v for k, v in match.items())]
    return (min(bounds), True) if bounds else (None, False)


def _number(value, fmt: str, width: int) -> str:
    return f"{value:{width}{fmt}}" if value is not None else f"{'-':>{width}}"


def summary(rows: list[dict], configs: list[str], peers, *,
            contention: bool = False) -> list[str]:
    """The table: per (configuration, solver) the median time and its ratio to the faster
    peer, with the medians of the counters beside it."""
    lines = [f"{'config':<17} {'solver':<16} {'jobs':>4} {'n':>2} {'median s':>9} "
             f"{'ratio':>6} {'target':>6} {'err %':>6} {'nSV':>6} {'passes':>8} "
             f"{'steps':>9} {'kernel ev.':>10} {'RSS MB':>7} {'thr':>3}  status"]
    for c in configs:
        best = faster_peer(rows, c, peers, contention=contention)
        for solver in [*peers, "msvm"]:
            jobs_list = sorted({r.get("n_jobs") for r in rows
                                if r["config"] == c and r["solver"] == "msvm"}
                               if solver == "msvm" else {None})
            for jobs in jobs_list:
                match = dict(contention=contention)
                if solver == "msvm":
                    match["n_jobs"] = jobs
                runs = fitted(rows, c, solver, **match)
                every = [r for r in rows if r["config"] == c and r["solver"] == solver
                         and all(r.get(k) == v for k, v in match.items())]
                if not every:
                    continue
                t, above = time_or_bound(rows, c, solver, **match)
                ratio = t / best[1] if t is not None and best else None
                target = TARGETS.get(c) if solver == "msvm" else None
                # A fast fit that did not reach the optimum meets no target.
                optimal = all(r.get("status") == "optimal" for r in runs)
                mark = ("" if ratio is None or target is None
                        else " (not optimal)" if not optimal
                        else " (meets)" if ratio <= target and not above else " (misses)")
                sign = ">" if above else " "   # timed out: the time is a lower bound
                statuses = sorted({str(r.get("status")) for r in every} - {"optimal"})
                err = median_of(runs, "test_error")
                label = LABELS[solver]
                if solver == "msvm" and runs:
                    label = f"msvm {runs[0]['msvm_solver']}"   # s2do, s2do_bias or frank_wolfe
                lines.append(
                    f"{c:<17} {label:<16} {_number(jobs, 'd', 4)} {len(runs):2d} "
                    f"{sign}{_number(t, '.3f', 8)} {sign if ratio else ' '}"
                    f"{_number(ratio, '.2f', 5)} "
                    f"{_number(target, '.1f', 6)} "
                    f"{_number(None if err is None else 100 * err, '.2f', 6)} "
                    f"{_number(median_of(runs, 'n_sv'), '.0f', 6)} "
                    f"{_number(median_of(runs, 'passes'), '.0f', 8)} "
                    f"{_number(median_of(runs, 'steps'), '.3g', 9)} "
                    f"{_number(median_of(runs, 'kernel_evaluations'), '.3g', 10)} "
                    f"{_number(median_of(runs, 'peak_rss_mb'), '.0f', 7)} "
                    f"{_number(median_of(runs, 'threads'), '.0f', 3)}  "
                    f"{', '.join(statuses) or 'optimal'}{mark}")
    return lines


def contention_summary(rows: list[dict], configs: list[str],
                       title: str = "contention") -> list[str]:
    """msvm's median times with ``n_jobs`` = 1 and 2, idle and with one core busy (lines
    that start with ``title``)."""
    lines = []
    for c in configs:
        for busy in (False, True):
            t = {n: median_of(fitted(rows, c, "msvm", n_jobs=n, contention=busy), "fit_time")
                 for n in (1, 2)}
            if t[1] is None and t[2] is None:
                continue
            speedup = f", n_jobs=2 / n_jobs=1 {t[2] / t[1]:.2f}" if t[1] and t[2] else ""
            lines.append(f"{title} {c} ({'one core busy' if busy else 'idle'}): "
                         f"n_jobs=1 {_number(t[1], '.3f', 0)} s, "
                         f"n_jobs=2 {_number(t[2], '.3f', 0)} s{speedup}")
        for n in (1, 2):
            idle = median_of(fitted(rows, c, "msvm", n_jobs=n, contention=False), "fit_time")
            busy = median_of(fitted(rows, c, "msvm", n_jobs=n, contention=True), "fit_time")
            if idle and busy:
                lines.append(f"{title} {c} n_jobs={n}: busy / idle {busy / idle:.2f}")
    return lines


def plot_ratios(rows: list[dict], configs: list[str], peers, path, title: str) -> bool:
    """msvm's median time / the faster peer's per configuration, log scale, with the targets.

    One point per configuration, coloured by machine (WW, CS, LLW; hollow with
    a bias; an upward triangle where msvm timed out: the ratio is a lower
    bound), a line at 1 and issue 21's target of each configuration as a
    red bar.  Returns False (no file) when no configuration has a ratio.
    """
    points = []
    for c in configs:
        best = faster_peer(rows, c, peers, contention=False)
        t, above = time_or_bound(rows, c, "msvm", contention=False)
        if best and t is not None:
            points.append((c, t / best[1], above))
    if not points:
        return False
    plt = pyplot()
    colours = {"ww": "tab:blue", "cs": "tab:orange", "llw": "tab:green"}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(points) + 2), 4.8))
    for k, (c, ratio, above) in enumerate(points):
        config = CONFIGS[c]
        colour = colours.get(config.model, "tab:grey")
        ax.scatter([k], [ratio], s=45, zorder=3, edgecolors=colour, marker="^" if above else "o",
                   facecolors="none" if config.bias else colour)
        if c in TARGETS:
            ax.scatter([k], [TARGETS[c]], marker="_", s=300, color="tab:red", zorder=2)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=1, ls="--")
    ax.set_xticks(range(len(points)), [p[0] for p in points], rotation=60, ha="right",
                  fontsize=8)
    ax.set_ylabel("msvm time / faster SVC peer (log)")
    handles = [plt.Line2D([], [], ls="", marker="o", color=v, label=k.upper())
               for k, v in colours.items()]
    handles += [plt.Line2D([], [], ls="", marker="o", mfc="none", color="k", label="with bias"),
                plt.Line2D([], [], ls="", marker="^", color="k", label="timed out (at least)"),
                plt.Line2D([], [], ls="", marker="_", ms=14, color="tab:red",
                           label="issue 21 target")]
    ax.legend(handles=handles, fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# --------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*",
                        help=f"configurations (default: {DEFAULT}; --contention: "
                             f"{CONTENTION}); known: {list(CONFIGS)}")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK} (--contention: {CONTENTION}) on "
                             f"{QUICK_M} training examples, one round")
    parser.add_argument("--m", type=int, default=None,
                        help="a stratified subsample of m training examples (default: all)")
    parser.add_argument("--repeat", type=int, default=None,
                        help=f"runs per solver and configuration (default: {SHORT_ROUNDS} "
                             f"for a fit under {SUB_SECOND:g} s, else {LONG_ROUNDS})")
    parser.add_argument("--n-jobs", type=int, default=2, help="msvm's threads (default 2)")
    parser.add_argument("--peer-threads", type=int, default=2,
                        help="threads of scikit-learn-intelex's SVC (default 2)")
    parser.add_argument("--peers", nargs="+", default=list(SVC_PEERS), choices=SVC_PEERS,
                        help="SVC peers (default both; sklearnex is skipped when "
                             "scikit-learn-intelex is not installed)")
    parser.add_argument("--contention", action="store_true",
                        help="hold one core with a busy process; msvm with n_jobs=1 and 2")
    parser.add_argument("--no-idle", action="store_true",
                        help="contention mode: skip the same runs on the idle machine")
    parser.add_argument("--wait-policy", choices=["active", "passive"], default=None,
                        help="OMP_WAIT_POLICY of every run; msvm with n_jobs=1 and 2")
    common_arguments(parser, timeout=3600)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    if args.sparse:
        parser.error("bench_regimes feeds dense arrays only (see bench_s2do for CSR input)")

    configs = args.configs or ((CONTENTION if args.contention else QUICK) if args.quick
                               else CONTENTION if args.contention else DEFAULT)
    check_configs(parser, configs)
    if args.quick:
        args.m = args.m or QUICK_M
        args.repeat = args.repeat or 1
    tag = args.tag or time.strftime(
        f"regimes{'-contention' if args.contention else ''}-%Y%m%d-%H%M%S")
    check_writable(parser, tag)

    notes = []
    peers = list(args.peers)
    version = sklearnex_version()
    if "sklearnex" in peers and version is None:
        peers.remove("sklearnex")
        notes.append("scikit-learn-intelex is not installed (pip install msvm[bench]): the "
                     "oneDAL SVC peer is skipped, ratios are to scikit-learn's SVC alone")
    elif "sklearnex" in peers:
        notes.append(f"scikit-learn-intelex {version}: oneDAL SVC on {args.peer_threads} "
                     "thread(s)")
    for note in notes:
        print(note, flush=True)

    if args.wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.wait_policy   # inherited by every run
        notes.append(f"OMP_WAIT_POLICY={args.wait_policy} in every run")
    jobs = sorted({1, 2, args.n_jobs}) if args.contention or args.wait_policy else [args.n_jobs]
    runner = Runner(tag, args.timeout)
    runner.jsonl.unlink(missing_ok=True)   # a re-used tag starts afresh
    try:
        if args.contention:
            for c in configs:
                rounds = None
                if not args.no_idle:
                    rounds = runner.config_rounds(c, args, peers, False, jobs)
                with busy_core() as pid:
                    print(f"busy process {pid} holds one core", flush=True)
                    runner.config_rounds(c, args, peers, True, jobs, rounds)
                print(f"busy process {pid} stopped", flush=True)
        else:
            for c in configs:
                runner.config_rounds(c, args, peers, False, jobs)
    except KeyboardInterrupt:
        print(f"interrupted: the finished runs are in {runner.jsonl.name}", file=sys.stderr)
        return 130

    rows = runner.rows
    details = (f"msvm n_jobs={' and '.join(map(str, jobs))}, SVC (libsvm) 1 thread"
               + (f", SVC (oneDAL) {args.peer_threads} threads" if "sklearnex" in peers else "")
               + (f", {QUICK_M}-example subsets (smoke run, not a measurement)"
                  if args.quick else ""))
    lines = [header("regimes", tag, details), *notes]
    png = None   # the ratio plot, drawn outside the contention and wait-policy modes
    if args.contention:
        for busy in (False, True):
            lines.append(f"-- {'one core busy' if busy else 'idle'}")
            lines += summary(rows, configs, peers, contention=busy)
        lines += contention_summary(rows, configs)
    elif args.wait_policy:
        lines += summary(rows, configs, peers)
        lines += contention_summary(rows, configs, f"OMP_WAIT_POLICY={args.wait_policy}")
    else:
        lines += summary(rows, configs, peers)
        title = (f"msvm / faster SVC peer, {tag}: {platform.machine()}, {os.cpu_count()} CPUs, "
                 f"msvm n_jobs={args.n_jobs}")
        png = RESULTS / f"{tag}-ratios.png"
        if not plot_ratios(rows, configs, peers, png, title):
            png = None
    write_run(rows, tag, CSV_FIELDS, lines, png)
    # A crashed worker (a corrupt data file, a bug) is an error, a timeout a measurement.
    crashed = sum(r.get("status") == "failed" for r in rows)
    if crashed:
        print(f"{crashed} of {len(rows)} runs failed (their errors are in "
              f"{shown(runner.jsonl)})",
              file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    run_main(main)
