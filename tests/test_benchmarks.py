"""The benchmarks' own arithmetic and command-line behaviour, on synthetic records.

No benchmark is timed here: the medians, ratios and summaries of
``benchmarks/`` are fed made-up rows, and the command lines are run only to
the point where they refuse bad options, missing data or unwritable results.
"""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks live next to the package, not inside it
    sys.path.insert(0, str(ROOT))

pytest.importorskip("matplotlib")

from benchmarks import bench_regimes  # noqa: E402


def _row(config, solver, fit_time=None, status="optimal", **extra):
    row = dict(config=config, solver=solver, contention=False, status=status, **extra)
    if solver == "msvm":
        row.setdefault("n_jobs", 2)
        row.setdefault("msvm_solver", "s2do")
    if fit_time is not None:
        row["fit_time"] = fit_time
    return row


def _cells(lines, label):
    """The columns of the summary line whose solver column starts with ``label``."""
    line = next(x for x in lines[1:] if x[18:].startswith(label))
    return line, line.split()


# ------------------------------------------------------------ medians, ratios
def test_median_of_five_and_of_missing_values():
    rows = [{"t": t} for t in (5.0, 1.0, 4.0, 2.0, 3.0)] + [{"t": None}, {}]
    assert bench_regimes.median_of(rows, "t") == 3.0
    assert bench_regimes.median_of([{}], "t") is None


def test_ratio_is_to_the_faster_peer_by_median():
    # sklearn's median is 2.0 (one fast outlier), sklearnex's 3.0; msvm's median 5.0.
    rows = ([_row("dna-ww", "sklearn", t) for t in (0.1, 2.0, 2.0, 9.0, 9.5)]
            + [_row("dna-ww", "sklearnex", t) for t in (3.0, 3.0, 3.0)]
            + [_row("dna-ww", "msvm", t) for t in (5.0, 1.0, 8.0)])
    assert bench_regimes.faster_peer(rows, "dna-ww", ["sklearn", "sklearnex"]) == ("sklearn", 2.0)
    lines = bench_regimes.summary(rows, ["dna-ww"], ["sklearn", "sklearnex"])
    line, cells = _cells(lines, "msvm")
    assert cells[4:7] == ["3", "5.000", "2.50"]   # n, median, ratio
    assert line.endswith("optimal (misses)")      # the target of dna-ww is 2.0
    _, cells = _cells(lines, "SVC (oneDAL)")
    assert cells[5:7] == ["3.000", "1.50"]


def test_a_failed_or_timed_out_peer_is_not_the_faster_one():
    rows = [_row("dna-ww", "sklearnex", status="failed", error="ImportError: x"),
            _row("dna-ww", "sklearn", 2.0), _row("dna-ww", "msvm", 3.0)]
    assert bench_regimes.faster_peer(rows, "dna-ww", ["sklearn", "sklearnex"]) == ("sklearn", 2.0)
    rows[1:2] = [_row("dna-ww", "sklearn", status="timeout", fit_time_above=60.0)]
    assert bench_regimes.faster_peer(rows, "dna-ww", ["sklearn", "sklearnex"]) is None
    _, cells = _cells(bench_regimes.summary(rows, ["dna-ww"], ["sklearn", "sklearnex"]), "msvm")
    assert cells[5:7] == ["3.000", "-"]   # no peer fitted: no ratio


def test_msvm_timed_out_gives_a_lower_bound():
    rows = [_row("dna-ww", "sklearn", 2.0),
            _row("dna-ww", "msvm", status="timeout", fit_time_above=60.0)]
    assert bench_regimes.time_or_bound(rows, "dna-ww", "msvm") == (60.0, True)
    line, _ = _cells(bench_regimes.summary(rows, ["dna-ww"], ["sklearn"]), "msvm")
    assert ">  60.000 >30.00" in line and line.endswith("timeout (misses)")


def test_a_fast_fit_that_is_not_optimal_meets_no_target():
    rows = [_row("dna-ww", "sklearn", 2.0), _row("dna-ww", "msvm", 1.0, status="max_iter")]
    line, _ = _cells(bench_regimes.summary(rows, ["dna-ww"], ["sklearn"]), "msvm")
    assert line.endswith("max_iter (not optimal)")
    rows[1]["status"] = "optimal"
    line, _ = _cells(bench_regimes.summary(rows, ["dna-ww"], ["sklearn"]), "msvm")
    assert line.endswith("optimal (meets)")


def test_rounds_five_for_a_sub_second_fit_three_otherwise_one_for_no_fit():
    first = [_row("dna-ww", "sklearn", 0.5), _row("dna-ww", "msvm", 1.5),
             _row("dna-ww", "sklearnex", status="timeout")]
    rounds = bench_regimes.rounds_for(first, SimpleNamespace(repeat=None))
    assert rounds == {("sklearn", None): 5, ("msvm", 2): 3, ("sklearnex", None): 1}
    assert set(bench_regimes.rounds_for(first, SimpleNamespace(repeat=2)).values()) == {2}


def test_the_plot_is_written_without_a_display(tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    rows = [_row("dna-ww", "sklearn", 2.0), _row("dna-ww", "msvm", 3.0)]
    png = tmp_path / "r.png"
    assert bench_regimes.plot_ratios(rows, ["dna-ww"], ["sklearn"], png, "t")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert not bench_regimes.plot_ratios(rows[:1], ["dna-ww"], ["sklearn"], png, "t")

