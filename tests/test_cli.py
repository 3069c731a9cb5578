"""The command line (run in-process through ``main``) and the LIBSVM/shared-data loaders."""

from __future__ import annotations

import bz2
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, make_blobs

from msvm import MultiClassSVC
from msvm.cli import main
from msvm.datasets import (
    available_datasets,
    find_shared_datasets,
    load_libsvm,
    load_libsvm_files,
    shared_dataset,
)


@pytest.fixture(scope="module")
def libsvm_files(tmp_path_factory):
    """A 3-class train/test pair in LIBSVM format (1-based indices, labels 1..3)."""
    folder = tmp_path_factory.mktemp("libsvm")
    X, y = make_blobs(n_samples=90, centers=3, n_features=4, cluster_std=2.0, random_state=5)
    X[np.abs(X) < 1.0] = 0.0
    y = y + 1
    train, test = folder / "blobs.svm", folder / "blobs.svm.t"
    dump_svmlight_file(X[:60], y[:60], str(train), zero_based=False)
    dump_svmlight_file(X[60:], y[60:], str(test), zero_based=False)
    return {"train": str(train), "test": str(test), "X": X, "y": y, "folder": folder}


def _accuracy_line(out: str, on: str) -> float:
    match = re.search(rf"^{on} accuracy: ([0-9.]+)$", out, flags=re.M)
    assert match, out
    return float(match.group(1))


def test_fit_with_test_file(libsvm_files, capsys):
    code = main(["fit", libsvm_files["train"], "--test", libsvm_files["test"], "--model", "cs",
                 "--C", "2", "--gamma", "0.1"])
    out = capsys.readouterr().out
    assert code == 0
    X, y = libsvm_files["X"], libsvm_files["y"]
    expected = MultiClassSVC(model="cs", C=2.0, gamma=0.1).fit(X[:60], y[:60])
    assert _accuracy_line(out, "test") == pytest.approx(expected.score(X[60:], y[60:]), abs=5e-5)
    assert "60 samples, 4 features, 3 classes; test" in out
    assert re.search(r"^cs\s+[0-9.]+\s", out, flags=re.M)  # the table row
    assert "status optimal" in out


def test_fit_json_output(libsvm_files, tmp_path, capsys):
    out_path = tmp_path / "result.json"
    code = main(["fit", libsvm_files["train"], "--test", libsvm_files["test"], "--model", "llw",
                 "--bias", "--kernel", "linear", "--tol", "1e-9", "--json", str(out_path)])
    printed = capsys.readouterr().out
    assert code == 0
    result = json.loads(out_path.read_text())
    assert result["command"] == "fit"
    assert result["model"] == "llw"
    assert result["params"]["fit_intercept"] is True
    assert result["params"]["kernel"] == "linear"
    assert (result["n_train"], result["n_test"], result["n_features"]) == (60, 30, 4)
    assert result["classes"] == [1, 2, 3]
    assert result["accuracy_on"] == "test"
    assert _accuracy_line(printed, "test") == pytest.approx(result["accuracy"], abs=5e-5)
    assert result["status"] == "optimal"
    assert abs(result["relative_gap"]) <= 1e-6
    assert result["kkt_residual"] <= 1e-6
    assert result["primal_objective"] == pytest.approx(result["dual_objective"], rel=1e-6)
    assert result["solution"]["b_method"] in ("kkt", "primal")
    assert len(result["solution"]["b"]) == 3
    assert result["fit_time"] > 0


def test_fit_without_test_reports_training_accuracy(libsvm_files, capsys):
    bz2_path = libsvm_files["folder"] / "train.svm.bz2"
    with open(libsvm_files["train"], "rb") as fh:
        bz2_path.write_bytes(bz2.compress(fh.read()))
    code = main(["fit", str(bz2_path), "--model", "msvm2"])
    out = capsys.readouterr().out
    assert code == 0
    X, y = libsvm_files["X"][:60], libsvm_files["y"][:60]
    expected = MultiClassSVC(model="msvm2").fit(X, y).score(X, y)
    assert _accuracy_line(out, "training") == pytest.approx(expected, abs=5e-5)
    assert "test accuracy" not in out


def test_corrupt_file_exits_2_with_one_line(libsvm_files, tmp_path, capsys):
    bad = tmp_path / "corrupt.svm"
    bad.write_text("1 1:0.5 2:1.5\n2 3:x\n")
    code = main(["fit", libsvm_files["train"], "--test", str(bad)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("msvm fit: error: Cannot read LIBSVM file")
    assert "corrupt.svm" in lines[0]
    assert "Traceback" not in captured.err


def test_missing_file_exits_2(tmp_path, capsys):
    code = main(["fit", str(tmp_path / "nothing.svm")])
    err = capsys.readouterr().err
    assert code == 2
    missing = tmp_path / "nothing.svm"
    assert err.strip() == f"msvm fit: error: LIBSVM file '{missing}' does not exist."


@pytest.mark.parametrize("argv,message", [
    (["--C", "-1"], "'C' parameter of MultiClassSVC must be a float in the range"),
    (["--model", "ovr"], "argument --model: invalid choice: 'ovr'"),
    (["--gamma", "wide"], "argument --gamma: must be 'scale', 'auto' or a positive number"),
    (["--C", "many"], "argument --C: invalid float value: 'many'"),
    (["--tol", "-1"], "'tol' parameter of MultiClassSVC must be a float in the range"),
])
def test_bad_options_exit_2_with_one_line(libsvm_files, capsys, argv, message):
    code = main(["fit", libsvm_files["train"], *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert err.startswith("msvm fit: error:")


def test_demo_is_the_default_command(capsys, tmp_path):
    out_path = tmp_path / "demo.json"
    code = main(["--n-train", "30", "--models", "ww,cs", "--json", str(out_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "30 train / 1767 test" in out
    assert "solver s2do;" in out  # 'auto' without a bias
    rows = re.findall(r"^(ww|cs)\s+([0-9.]+)\s+(-?[0-9.]+)\s+(-?[0-9.]+)\s", out, flags=re.M)
    assert [r[0] for r in rows] == ["ww", "cs"]
    result = json.loads(out_path.read_text())
    assert [r["model"] for r in result["results"]] == ["ww", "cs"]
    for (_, acc, dual, primal), rec in zip(rows, result["results"], strict=True):
        assert float(acc) == pytest.approx(rec["accuracy"], abs=5e-5)
        assert float(dual) == pytest.approx(rec["dual_objective"], abs=5e-7)
        assert float(primal) == pytest.approx(rec["primal_objective"], abs=5e-7)
        assert rec["accuracy"] > 0.5  # 10 classes: chance is 0.1
        assert rec["kkt_violation"] <= result["tol"]  # s2do's stopping rule
        assert rec["relative_gap"] >= -1e-9  # weak duality


def test_demo_bad_model_exits_2(capsys):
    assert main(["demo", "--models", "ww,xx"]) == 2
    assert "unknown model(s) ['xx']" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "msvm", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout.startswith("msvm ")


# ------------------------------------------------------------ loaders
def test_load_libsvm_roundtrip(libsvm_files):
    X, y = load_libsvm(libsvm_files["train"])
    np.testing.assert_allclose(X.toarray(), libsvm_files["X"][:60], rtol=1e-15)
    np.testing.assert_array_equal(y, libsvm_files["y"][:60])
    assert y.dtype == np.int64


def test_load_libsvm_files_share_features(tmp_path):
    dump_svmlight_file(np.array([[1.0, 0, 3.0]]), [1], str(tmp_path / "a"), zero_based=False)
    dump_svmlight_file(np.array([[1.0, 0, 0]]), [2], str(tmp_path / "b"), zero_based=False)
    X_a, _, X_b, _ = load_libsvm_files([tmp_path / "a", tmp_path / "b"])
    assert X_a.shape == X_b.shape == (1, 3)
    assert load_libsvm(tmp_path / "b", n_features=3)[0].shape == (1, 3)


def test_shared_dataset_layout(tmp_path, monkeypatch):
    folder = tmp_path / "shared" / "datasets" / "toy"
    folder.mkdir(parents=True)
    X = np.array([[1.0, 0.5], [0.0, 2.0], [3.0, 0.0]])
    for name, rows in [("toy.scale", X), ("toy.scale.t", X[:2]), ("toy", 2 * X)]:
        path = folder / f"{name}.bz2"
        dump_svmlight_file(rows, np.arange(len(rows)) + 1, str(tmp_path / "plain"),
                           zero_based=False)
        path.write_bytes(bz2.compress((tmp_path / "plain").read_bytes()))
    work = tmp_path / "main" / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.delenv("MSVM_DATASETS", raising=False)
    assert find_shared_datasets() == tmp_path / "shared" / "datasets"
    X_train, y_train, X_test, y_test = shared_dataset("toy")
    np.testing.assert_array_equal(X_train.toarray(), X)
    np.testing.assert_array_equal(y_test, [1, 2])
    assert X_test.shape == (2, 2)
    raw = shared_dataset("toy", scaled=False)
    np.testing.assert_array_equal(raw[0].toarray(), 2 * X)
    assert raw[2] is None and raw[3] is None


def test_real_shared_dataset_if_present():
    try:
        present = available_datasets()
    except FileNotFoundError:
        present = []
    if "wine" not in present:
        pytest.skip("no ../shared/datasets/wine next to this checkout")
    X_train, y_train, X_test, y_test = shared_dataset("wine")
    assert X_train.shape == (178, 13)
    assert sorted(set(y_train)) == [1, 2, 3]
    assert X_test is None and y_test is None
