"""What each setting of :class:`msvm.MultiClassSVC` costs, one change at a time.

For each configuration (:mod:`benchmarks.configs`) msvm is fitted with the
configuration's own settings and then with each ``--set key=value`` changed
alone (or, as ``key=value,key=value``, together): ``cache_size`` (MB; the
estimator's default is 200), ``n_jobs``,
``cache_dtype``, ``fit_intercept``, ``C``, ``gamma`` (a number, or
``x<factor>``: that multiple of the configuration's numeric γ), ``model``,
``solver``, ``tol`` or any other estimator parameter.  No peers: the ratio
is to the configuration's own settings, fitted in the same run.  Every fit is
a fresh subprocess (as in :mod:`benchmarks.bench_regimes`, whose
:func:`~benchmarks.bench_regimes.fit_msvm` it runs), the settings are
interleaved round by round, and each time is the median of ``--repeat``
fits (default 3).  Beside it: passes, 2-D steps, kernel evaluations, test
error, support vectors, peak memory and status.

Files (``results/``): ``<tag>.jsonl``, ``<tag>.csv``, ``<tag>.txt`` and
``<tag>.png`` (time relative to the configuration's own settings, one panel
per configuration).  Measure on an idle machine.

Examples::

    python -m benchmarks.bench_settings                      # pendigits-ww and satimage-cs
    python -m benchmarks.bench_settings usps-ww --set cache_size=200 n_jobs=1
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import sys
import time

from benchmarks.bench_regimes import fit_msvm, median_of
from benchmarks.configs import CONFIGS, gamma_of
from benchmarks.data import load
from benchmarks.results import RESULTS, header, pyplot, save_figure, write_run
from benchmarks.runs import (
    announce,
    answer,
    check_configs,
    common_arguments,
    peak_rss_mb,
    run_main,
    spawn,
)

DEFAULT_CONFIGS = ["pendigits-ww", "satimage-cs"]
#: The default changes: the cache (the estimator's default 200 MB and less), one
#: thread, float32 rows, a bias, C and γ a factor 10 and 2 away, the online solver.
DEFAULT_SETTINGS = ["cache_size=100", "cache_size=200", "n_jobs=1", "cache_dtype=float32",
                    "fit_intercept=True", "C=0.5", "C=50", "gamma=x0.5", "gamma=x2",
                    "solver=online"]
#: Settings that are fields of :class:`benchmarks.configs.Config` (the rest are passed
#: to the estimator as they are).
CONFIG_FIELDS = {"model": "model", "C": "C", "gamma": "gamma", "tol": "tol",
                 "cache_size": "cache_size", "fit_intercept": "bias"}
CSV_FIELDS = ["config", "setting", "round", "fit_time", "passes", "steps",
              "kernel_evaluations", "test_error", "n_sv", "peak_rss_mb", "threads", "status"]


def parse_setting(text: str) -> list[tuple[str, object]]:
    """``key=value[,key=value...]`` -> [(key, value), ...] (changed together): each value
    a Python literal if it reads as one, else the text."""
    changes = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"a setting is key=value[,key=value...], got {text!r}")
        try:
            changes.append((key, ast.literal_eval(value)))
        except (ValueError, SyntaxError):
            changes.append((key, value))
    return changes


def run_one(spec: dict) -> dict:
    """Fit ``spec['config']`` with ``spec['setting']`` (None: its own) in this process."""
    config = CONFIGS[spec["config"]]
    X, y, X_test, y_test = load(config.dataset, config.n_train)
    n_jobs, params = spec["n_jobs"], {}
    for key, value in parse_setting(spec["setting"]) if spec["setting"] is not None else []:
        if key == "gamma" and isinstance(value, str) and value.startswith("x"):
            value = float(value[1:]) * gamma_of(config, X)
        if key == "n_jobs":
            n_jobs = value
        elif key in CONFIG_FIELDS:
            config = config._replace(**{CONFIG_FIELDS[key]: value})
        else:
            params[key] = value
    row = dict(spec, **fit_msvm(config, X, y, X_test, y_test, n_jobs, params=params))
    row["peak_rss_mb"] = peak_rss_mb()
    return row


def fits_of(rows: list[dict], config: str, setting: str | None) -> list[dict]:
    """The runs of ``setting`` on ``config`` that produced a fit."""
    return [r for r in rows if r["config"] == config and r["setting"] == setting
            and "fit_time" in r]


def median_time(rows: list[dict], config: str, setting: str | None) -> float:
    """Median fit time of ``setting`` on ``config`` (NaN without a fit)."""
    t = median_of(fits_of(rows, config, setting), "fit_time")
    return math.nan if t is None else t


def summary(rows: list[dict], configs: list[str], settings: list[str | None]) -> list[str]:
    """One line per (configuration, setting): medians, and the time over the own setting's."""
    lines = [f"{'config':14s} {'setting':22s} {'median s':>9s} {'ratio':>6s} {'passes':>8s} "
             f"{'steps':>9s} {'kernel ev.':>10s} {'err %':>6s} {'nSV':>6s} {'RSS MB':>7s}  status"]
    for c in configs:
        own = median_time(rows, c, None)
        for s in settings:
            fits = fits_of(rows, c, s)
            if not fits:
                lines.append(f"{c:14s} {s or '(own)':22s} {'-':>9s}  {rows_status(rows, c, s)}")
                continue
            t = median_of(fits, "fit_time")
            last = fits[-1]
            ratio = f"{t / own:6.2f}" if not math.isnan(own) else f"{'-':>6s}"
            passes = last.get("passes")
            lines.append(
                f"{c:14s} {s or '(own)':22s} {t:9.3f} {ratio} "
                f"{passes if passes is not None else '-':>8} {last['steps']:>9d} "
                f"{last['kernel_evaluations']:>10.3g} {100 * last['test_error']:6.2f} "
                f"{last['n_sv']:>6d} {last['peak_rss_mb']:7.0f}  {last['status']}")
    return lines


def rows_status(rows: list[dict], config: str, setting: str | None) -> str:
    """The status of a setting that produced no fit (timeout, failure)."""
    return next((r.get("status", "?") for r in rows
                 if r["config"] == config and r["setting"] == setting), "not run")


def plot(rows: list[dict], configs: list[str], settings: list[str | None], path, title: str):
    """Time over the configuration's own settings, one horizontal bar per setting (from 1:
    green to the left is faster, red to the right slower)."""
    from matplotlib.ticker import FuncFormatter

    plt = pyplot()
    fig, axes = plt.subplots(1, len(configs), squeeze=False, sharey=True,
                             figsize=(4.2 * len(configs), 0.35 * len(settings) + 1.6))
    labels = [s or "(own)" for s in settings]
    for ax, c in zip(axes[0], configs, strict=True):
        med = {s: median_time(rows, c, s) for s in settings}
        ax.set_title(c, fontsize=9)
        ax.set_yticks(range(len(settings)), labels, fontsize=8)
        ax.set_ylim(len(settings) - 0.5, -0.5)   # the first setting on top
        if math.isnan(med[None]):
            ax.text(0.5, 0.5, "no fit with its own settings", ha="center",
                    transform=ax.transAxes)
            continue
        ratios = [med[s] / med[None] for s in settings]
        ax.barh(range(len(settings)), [r - 1 for r in ratios], left=1.0,
                color=["tab:green" if r < 1 else "tab:red" for r in ratios])
        ax.axvline(1.0, color="grey", lw=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        shown = [r for r in ratios if not math.isnan(r)] + [1.0]
        ax.set_xticks([t for t in (0.25, 0.5, 1, 2, 4, 8)
                       if min(shown) / 1.5 <= t <= max(shown) * 1.5])
        ax.set_xlabel("fit time / own settings (log)")
    save_figure(fig, path, title)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help=f"configurations (default: "
                        f"{DEFAULT_CONFIGS}); known: {list(CONFIGS)}")
    parser.add_argument("--set", nargs="+", default=DEFAULT_SETTINGS, metavar="KEY=VALUE",
                        help=f"the changes, one at a time (default: {DEFAULT_SETTINGS})")
    parser.add_argument("--repeat", type=int, default=3, help="fits per setting (default 3)")
    parser.add_argument("--n-jobs", type=int, default=2, help="msvm's threads (default 2)")
    common_arguments(parser, timeout=1800)
    args = parser.parse_args(argv)
    if args.worker:
        answer(run_one(json.loads(args.worker)))
        return 0
    configs = args.configs or DEFAULT_CONFIGS
    check_configs(parser, configs)
    for s in args.set:
        try:
            parse_setting(s)
        except ValueError as exc:
            parser.error(str(exc))
    settings: list[str | None] = [None, *args.set]
    tag = args.tag or time.strftime("settings-%Y%m%d-%H%M%S")
    rows: list[dict] = []
    try:
        for c in configs:
            for r in range(args.repeat):
                for s in settings:
                    spec = dict(config=c, setting=s, round=r + 1, n_jobs=args.n_jobs)
                    row = spawn("benchmarks.bench_settings", spec, args.timeout)
                    rows.append(row)
                    announce(row, f"{c} {s or '(own)'} round {r + 1}: "
                                  f"{row.get('fit_time', float('nan')):.3f} s, {row.get('status')}")
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    lines = [header("settings", tag, f"msvm n_jobs={args.n_jobs} unless set, medians of "
                    f"{args.repeat}; ratio: time over the configuration's own settings"),
             *summary(rows, configs, settings)]
    png = RESULTS / f"{tag}.png"
    plot(rows, configs, settings, png, f"msvm settings, {tag}")
    write_run(rows, tag, CSV_FIELDS, lines, png)
    return 0


if __name__ == "__main__":
    run_main(main)
