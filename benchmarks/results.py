"""The results writer of the benchmarks: ``results/`` files, summary headers, plots.

A benchmark writes its runs as JSON lines (every key of every run, curves
included) and a CSV of chosen columns (:func:`write`), a text summary that
starts with :func:`header`, and matplotlib figures drawn with :func:`pyplot`.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import sys
import tempfile
from pathlib import Path

#: Where every benchmark writes (``benchmarks/results/``).
RESULTS = Path(__file__).resolve().parent / "results"


def write(rows: list[dict], tag: str, fields: list[str],
          csv_rows: list[dict] | None = None) -> tuple[Path, Path]:
    """``results/<tag>.jsonl`` (every row) and ``results/<tag>.csv`` (``fields`` of
    ``csv_rows``, default every row); returns the two paths."""
    jsonl, csv_path = RESULTS / f"{tag}.jsonl", RESULTS / f"{tag}.csv"
    write_jsonl(rows, jsonl)
    write_csv(rows if csv_rows is None else csv_rows, csv_path, fields)
    return jsonl, csv_path


def write_jsonl(rows: list[dict], path: Path, append: bool = False) -> Path:
    """One JSON line per row (appended to ``path`` with ``append``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


def write_json(rows: list[dict], path: Path) -> Path:
    """The rows as one indented JSON list."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=2) + "\n")
    return path


def write_csv(rows: list[dict], path: Path, fields: list[str]) -> Path:
    """A CSV of ``fields`` (other keys ignored, missing ones empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_run(rows: list[dict], tag: str, fields: list[str], lines: list[str],
              figure: Path | None = None) -> None:
    """A run's files: ``<tag>.jsonl`` and ``<tag>.csv`` (:func:`write`), the summary
    ``lines`` as ``<tag>.txt`` (:func:`write_summary`, naming ``figure`` when the run
    drew one), and a line listing them."""
    if figure is not None:
        lines = [*lines, f"plot: {figure.name}"]
    jsonl, csv_path = write(rows, tag, fields)
    write_summary(lines, tag)
    paths = [jsonl, csv_path, RESULTS / f"{tag}.txt"] + ([figure] if figure else [])
    print("wrote " + ", ".join(shown(path) for path in paths))


def shown(path: Path) -> str:
    """``path`` as a run prints it: relative to the repository root when inside it
    (``benchmarks/results/x.csv``), else as given (an absolute ``--tag``)."""
    root = RESULTS.parents[1]
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def check_writable(parser, tag: str) -> None:
    """``parser.error`` unless ``results/<tag>.*`` can be written: said before the runs,
    not after them (a benchmark that writes at the end would lose them all)."""
    folder = (RESULTS / tag).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except FileExistsError:   # a file where the folder should be
        parser.error(f"cannot write the results in {str(folder)!r}: not a folder")
    except OSError as exc:
        parser.error(f"cannot write the results in {str(folder)!r}: {exc.strerror or exc}")


def write_summary(lines: list[str], tag: str) -> Path:
    """``results/<tag>.txt``: the summary ``lines`` (the first one a :func:`header`),
    also printed."""
    text = "\n".join(lines)
    path = RESULTS / f"{tag}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    print(text)
    return path


def strip_paths(text: str) -> str:
    """``text`` without this machine's absolute paths (results files keep none).

    The repository root becomes ``.``, the Python installation and the home
    directory ``<python>`` and ``~`` (tracebacks of a failed worker name them);
    what is left of any other absolute path is its file name after ``.../``.
    """
    places = [(str(RESULTS.parents[1]), "."), (sys.prefix, "<python>"),
              (sys.base_prefix, "<python>"), (os.path.expanduser("~"), "~")]
    for place, name in sorted(places, key=lambda p: -len(p[0])):
        if len(place) > 1:
            text = text.replace(place, name)
    # Any other absolute path (e.g. the shared data sets'): keep its file name only.
    return re.sub(r"(?<![\w.~>])/(?:[^\s/'\"<>]+/)+", ".../", text)


def header(benchmark: str, tag: str, details: str) -> str:
    """The first line of a summary: the machine, Python, the load at the end, ``details``."""
    return (f"msvm {benchmark} benchmark {tag}: {platform.platform()}, python "
            f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f} at the end; {details}")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, title: str) -> None:
    """``fig`` with the small suptitle ``title``, laid out, written to ``path`` and closed."""
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
