"""Packaging: what a non-editable install (from the wheel or the sdist) ships and declares.

The fast tests read the installed distribution's metadata (an editable install
has it too); the file-list test runs only against a regular install.  The slow
test builds the sdist and, from it, the wheel (``python -m build``, with build
isolation: it needs the ``build`` package and the network) and checks both
archives' contents.
"""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import msvm
from msvm._core import EXTENSIONS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(msvm.__file__).resolve().parent


def test_version_is_the_distribution_version():
    assert msvm.__version__ == importlib.metadata.version("msvm")


def test_py_typed_marker():
    assert (PACKAGE / "py.typed").is_file()


def test_metadata_declares_license_and_classifiers():
    meta = importlib.metadata.metadata("msvm")
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta.get_all("License-File") == ["LICENSE"]   # BSD-3-Clause: ship the notice
    assert meta["Description-Content-Type"] == "text/markdown"
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Cython" in classifiers
    assert "Typing :: Typed" in classifiers
    # The Python versions listed start at requires-python's minimum and are all above it.
    minimum = tuple(int(p) for p in re.fullmatch(r">=(\d+)\.(\d+)",
                                                 meta["Requires-Python"]).groups())
    listed = sorted(tuple(int(p) for p in m.groups()) for c in classifiers
                    if (m := re.fullmatch(r"Programming Language :: Python :: (\d+)\.(\d+)", c)))
    assert listed and listed[0] == minimum


def test_installed_files():
    dist = importlib.metadata.distribution("msvm")
    files = [str(f) for f in dist.files or []]
    # A wheel's install records its files; an editable one (or the checkout's msvm.egg-info,
    # found first when run from the checkout) does not list the package's files as installed.
    if dist.read_text("RECORD") is None or "msvm/__init__.py" not in files:
        pytest.skip("msvm is a source checkout (editable install), not installed from a wheel")
    assert Path(dist.locate_file("msvm/__init__.py")).resolve() == PACKAGE / "__init__.py"
    _check_wheel_names(files)


def test_unbuilt_checkout_says_how_to_build(tmp_path):
    # The package's Python files without the compiled modules: a fresh source checkout.
    shutil.copytree(PACKAGE, tmp_path / "msvm",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    result = subprocess.run([sys.executable, "-c", "import msvm"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode != 0
    assert "compiled extensions" in result.stderr
    assert "pip install -e ." in result.stderr


def _check_wheel_names(names):
    names = set(names)
    for ext in EXTENSIONS:
        assert any(re.fullmatch(rf"msvm/_core/{ext}\..*(\.so|\.pyd)", n) for n in names), ext
    assert "msvm/py.typed" in names
    packages = {p.parent.relative_to(PACKAGE.parent).as_posix()
                for p in PACKAGE.rglob("__init__.py")}
    assert {"msvm", "msvm/_core", "msvm/solvers", "msvm/solvers/frank_wolfe",
            "msvm/teaching"} <= packages
    for package in packages:
        assert f"{package}/__init__.py" in names, package
    assert not [n for n in names if n.endswith((".pyx", ".pxd", ".c"))]


@pytest.mark.slow
def test_sdist_and_wheel_built_from_it(tmp_path):
    pytest.importorskip("build")
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c"))
    # python -m build: the sdist, then the wheel from the unpacked sdist.
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True, timeout=1800)
    (sdist,) = (tmp_path / "dist").glob("msvm-*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("msvm-*.whl")

    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    cython = {p.relative_to(ROOT).as_posix() for pattern in ("*.pyx", "*.pxd")
              for p in (ROOT / "msvm").rglob(pattern)}
    assert cython and cython <= names
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
            "constraints-min.txt", "msvm/py.typed",
            "tests/problem_factory.py", "validation/__main__.py"} <= names
    assert not [n for n in names if n.endswith((".so", ".c")) or n.startswith(
        ("build/", "benchmarks/", "docs/"))]

    with zipfile.ZipFile(wheel) as whl:
        _check_wheel_names(whl.namelist())
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in whl.namelist())
