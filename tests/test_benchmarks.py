"""The benchmarks' own arithmetic and command-line behaviour, on synthetic records.

No benchmark is timed here: the medians, ratios and summaries of
``benchmarks/`` are fed made-up rows, and the command lines are run only to
the point where they refuse bad options, missing data or unwritable results.
"""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks live next to the package, not inside it
    sys.path.insert(0, str(ROOT))

pytest.importorskip("matplotlib")

from benchmarks import bench_before_after, bench_regimes, data, results, runs  # noqa: E402


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


# ------------------------------------------------------- errors: one line each
def _bench(*args, env=None):
    import os

    env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def test_a_missing_datasets_folder_is_refused_before_any_run(tmp_path):
    done = _bench("benchmarks.bench_regimes", "dna-ww", "--tag", str(tmp_path / "r"),
                  env={"MSVM_DATASETS": str(tmp_path / "nowhere")})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].endswith("(from $MSVM_DATASETS) does not exist.")
    assert not list(tmp_path.glob("r*"))


def test_missing_names_absent_sets_and_needs_none_for_generated(tmp_path, monkeypatch):
    (tmp_path / "dna").mkdir()
    monkeypatch.setenv("MSVM_DATASETS", str(tmp_path))
    assert data.missing(["dna", "blobs32", "text"]) is None
    assert data.missing(["dna", "usps", "mnist"]) == f"no data set mnist, usps in {str(tmp_path)!r}"
    monkeypatch.setenv("MSVM_DATASETS", str(tmp_path / "nowhere"))
    assert data.missing(["blobs64"]) is None
    assert "does not exist" in data.missing(["dna"])


def test_unwritable_results_are_refused_before_any_run(tmp_path):
    (tmp_path / "file").write_text("")
    done = _bench("benchmarks.bench_regimes", "blobs32-ww", "--tag", str(tmp_path / "file" / "r"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        f"cannot write the results in {str(tmp_path / 'file')!r}: not a folder")


def test_run_main_turns_ctrl_c_and_os_errors_into_one_line(capsys):
    def interrupted():
        raise KeyboardInterrupt

    def unwritable():
        raise PermissionError(13, "Permission denied", "/x/r.csv")

    for main, code, message in ((interrupted, 130, "interrupted"),
                                (unwritable, 2, "error: [Errno 13] Permission denied: '/x/r.csv'")):
        with pytest.raises(SystemExit) as exit_:
            runs.run_main(main)
        assert exit_.value.code == code
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.rstrip().endswith(message)
    with pytest.raises(SystemExit) as exit_:
        runs.run_main(lambda: 0)
    assert exit_.value.code == 0


def test_a_worker_error_is_one_line_on_the_terminal_and_whole_in_the_row(capsys):
    error = "Traceback (most recent call last):\n  File x\nValueError: bad file\n"
    runs.announce({"error": error}, "[1] dna-ww failed")
    captured = capsys.readouterr()
    assert captured.out == "[1] dna-ww failed\n"
    assert captured.err == "  ValueError: bad file\n"


def test_a_worker_without_a_result_line_is_a_failed_row():
    row = runs.spawn("benchmarks.no_such_module", {"config": "dna-ww"}, timeout=60)
    assert row["status"] == "failed" and "No module named" in row["error"]
    # Exit status 0 but no answer (``this`` prints a poem): failed too, not an IndexError.
    row = runs.spawn("this", {"config": "dna-ww"}, timeout=60)
    assert row["status"] == "failed"


def test_check_writable_and_shown_paths(tmp_path, monkeypatch):
    import argparse

    parser = argparse.ArgumentParser()
    results.check_writable(parser, str(tmp_path / "new" / "r"))
    assert (tmp_path / "new").is_dir() and not list((tmp_path / "new").iterdir())
    (tmp_path / "f").write_text("")
    with pytest.raises(SystemExit):
        results.check_writable(parser, str(tmp_path / "f" / "r"))
    assert results.shown(results.RESULTS / "r.csv") == "benchmarks/results/r.csv"
    assert results.shown(tmp_path / "r.csv") == str(tmp_path / "r.csv")


# ------------------------------------------------------------ before / after
def test_resume_skips_only_the_configurations_with_every_fit():
    rows = [dict(config=c, side=s, fit_time=1.0) for c, n in (("dna-ww", 3), ("usps-ww", 2))
            for _ in range(n) for s in ("before", "after")]
    rows.append(dict(config="usps-ww", side="before", fit_time=1.0))   # interrupted there
    assert bench_before_after.complete(rows, 3) == {"dna-ww"}
    assert bench_before_after.complete(rows, 2) == {"dna-ww", "usps-ww"}


def test_before_after_summary_is_the_ratio_of_medians():
    rows = [dict(config="dna-ww", side="before", fit_time=t) for t in (1.0, 2.0, 9.0)]
    rows += [dict(config="dna-ww", side="after", fit_time=t) for t in (3.0, 4.0, 0.5)]
    (line,) = bench_before_after.summary(rows)
    assert line.split()[2] == "2.000" and line.split()[5] == "3.000"
    assert line.endswith("after/before 1.50")


def test_before_after_refuses_bad_options(tmp_path):
    done = _bench("benchmarks.bench_before_after", "nope", "--before", str(ROOT))
    assert done.returncode == 2 and "unknown configuration(s) ['nope']" in done.stderr
    done = _bench("benchmarks.bench_before_after", "dna-ww", "--before", str(tmp_path),
                  "--tag", str(tmp_path / "ba"))
    assert done.returncode == 2 and "is not a checkout of msvm" in done.stderr
    assert "Traceback" not in done.stderr
    # A fit that fails: its exception in one line, exit 1.
    done = _bench("benchmarks.bench_before_after", "blobs32-ww", "--before", str(ROOT),
                  "--repeat", "1", "--cache-size", "-5", "--tag", str(tmp_path / "ba"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "a fit failed: sklearn.utils._param_validation.InvalidParameterError" in done.stderr


def test_runs_that_crash_make_the_exit_status_1(tmp_path):
    import bz2

    (tmp_path / "dna").mkdir()
    (tmp_path / "dna" / "dna.scale.bz2").write_bytes(bz2.compress(b"garbage\n"))
    done = _bench("benchmarks.bench_regimes", "dna-ww", "--peers", "sklearn", "--repeat", "1",
                  "--tag", str(tmp_path / "r"), env={"MSVM_DATASETS": str(tmp_path)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("Cannot read LIBSVM file") == 2   # one line per run
    assert done.stderr.splitlines()[-1] == (
        f"2 of 2 runs failed (their errors are in {tmp_path}/r.jsonl)")
    assert (tmp_path / "r.txt").exists()
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2
