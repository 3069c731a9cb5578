"""The command line (run in-process through ``main``) and the LIBSVM/shared-data loaders."""

from __future__ import annotations

import bz2
import json
import os
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
    assert result["solution"]["b_method"] in ("kkt", "centre")
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
    # fit reads feature files only; its --help listed 'precomputed' among the kernels.
    (["--kernel", "precomputed"], "argument --kernel: invalid choice: 'precomputed'"),
])
def test_bad_options_exit_2_with_one_line(libsvm_files, capsys, argv, message):
    code = main(["fit", libsvm_files["train"], *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert err.startswith("msvm fit: error:")


def test_fit_help_lists_only_the_kernels_fit_reads(capsys):
    assert main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    assert "{linear,poly,rbf,laplace,sigmoid}" in out
    assert "msvm train -t 4" in out


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
        # The footer's definition of the column (diagnostics.diagnose's).
        gap = rec["primal_objective"] - rec["dual_objective"]
        scale = max(abs(rec["primal_objective"]), abs(rec["dual_objective"]))
        assert rec["relative_gap"] == pytest.approx(gap / scale, rel=1e-9, abs=1e-15)
    assert "relative gap = (primal - dual) / max(|primal|, |dual|)" in out


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


def test_loaded_matrices_fit_scikit_learn_svc(libsvm_files):
    """The loader hands back CSR matrices with 32-bit indices: scikit-learn's ``SVC``, the
    peer a user compares msvm with on the same data, refuses the 64-bit ones its own parser
    returns.  Both fit the same loaded matrix and agree on most test predictions (a loose
    bound, not a measurement: one-vs-one votes and one all-in-one machine differ)."""
    from sklearn.svm import SVC

    X, y, X_test, y_test = load_libsvm_files([libsvm_files["train"], libsvm_files["test"]])
    assert X.indices.dtype == X.indptr.dtype == np.int32
    svc = SVC(C=10.0).fit(X, y)
    ours = MultiClassSVC(model="ww", C=10.0).fit(X, y)
    agreement = np.mean(svc.predict(X_test) == ours.predict(X_test))
    assert agreement >= 0.8, agreement


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


# ------------------------------------------------------------ train / predict / select
def _labels(path) -> list[str]:
    return path.read_text().split()


def _as_read(files):
    """(X_train, y_train, X_test, y_test) as the CLI reads them (CSR): the Python API on the
    same data must give the same model."""
    X, y = load_libsvm(files["train"])
    Xt, yt = load_libsvm(files["test"], n_features=X.shape[1])
    return X, y, Xt, yt


@pytest.mark.parametrize("argv,params", [
    (["-c", "2", "-g", "0.1"], dict(C=2.0, gamma=0.1)),
    # svm-train's shrinking switch: accepted and ignored, not read as -h (help).
    (["-h", "0", "-c", "2"], dict(C=2.0)),
    (["--model", "cs", "-t", "1", "-d", "2", "-r", "1", "-g", "0.05"],
     dict(model="cs", kernel="poly", degree=2, coef0=1.0, gamma=0.05)),
    (["--model", "llw", "-t", "0", "--bias", "-e", "1e-6"],
     dict(model="llw", kernel="linear", fit_intercept=True, tol=1e-6)),
    (["--solver", "online", "--epochs", "none", "--seed", "3", "-m", "50"],
     dict(solver="online", epochs=None, random_state=3, cache_size=50.0)),
])
def test_train_then_predict_matches_the_python_api(libsvm_files, tmp_path, capsys, argv,
                                                   params):
    model_path, out = tmp_path / "m.model", tmp_path / "pred.txt"
    assert main(["train", *argv, libsvm_files["train"], str(model_path)]) == 0
    assert f"model written to {model_path}" in capsys.readouterr().out
    assert main(["predict", libsvm_files["test"], str(model_path), str(out)]) == 0
    printed = capsys.readouterr().out
    X, y, Xt, yt = _as_read(libsvm_files)
    est = MultiClassSVC(**params).fit(X, y)
    expected = est.predict(Xt)
    assert _labels(out) == [str(v) for v in expected]
    correct = int(np.sum(expected == yt))
    assert f"Accuracy = {100 * correct / 30:g}% ({correct}/30)" in printed
    # The file holds the model the options describe, the same as the Python API's.
    import msvm

    loaded = msvm.load(model_path)
    assert {k: loaded.get_params()[k] for k in params} == params
    np.testing.assert_array_equal(loaded.decision_function(Xt), est.decision_function(Xt))


def test_cross_validation_shows_the_folds_warnings(libsvm_files, tmp_path, capsys):
    # 3 folds over a class of 2 examples (scikit-learn warns), and a fold budget of one
    # step (every fold ends at max_iter): both reach stderr, the latter as one count.
    X, y = libsvm_files["X"][:60], libsvm_files["y"][:60]
    keep = np.r_[np.flatnonzero(y != y[0]), np.flatnonzero(y == y[0])[:2]]
    path = tmp_path / "small.svm"
    dump_svmlight_file(X[keep], y[keep], str(path))
    assert main(["train", "-v", "3", "--max-iter", "1", str(path)]) == 0
    err = capsys.readouterr().err
    assert "msvm train: warning: 3 of 3 fold fits did not converge" in err
    assert "The least populated class in y has only 2 members" in err
    assert err.count("did not converge") == 1


def test_bare_h_is_still_help(libsvm_files, tmp_path, capsys):
    model_path = tmp_path / "m.model"
    assert main(["train", "-h", libsvm_files["train"], str(model_path)]) == 0
    assert "usage: msvm train" in capsys.readouterr().out
    assert not model_path.exists()


def test_predict_to_stdout_and_decision_values(libsvm_files, tmp_path, capsys):
    model_path = tmp_path / "m.model"
    assert main(["train", "-q", libsvm_files["train"], str(model_path)]) == 0
    assert capsys.readouterr().out == ""   # -q
    assert main(["predict", libsvm_files["test"], str(model_path)]) == 0
    captured = capsys.readouterr()
    X, y, Xt, yt = _as_read(libsvm_files)
    est = MultiClassSVC().fit(X, y)
    assert captured.out.split() == [str(v) for v in est.predict(Xt)]
    assert captured.err.startswith("Accuracy = ")   # labels on stdout: accuracy on stderr
    assert main(["predict", "--decision-values", "-q", libsvm_files["test"], str(model_path),
                 "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "labels 1 2 3"
    rows = [line.split() for line in lines[1:]]
    np.testing.assert_array_equal([int(r[0]) for r in rows], est.predict(Xt))
    # %.17g round-trips float64 exactly.
    np.testing.assert_array_equal(np.array([r[1:] for r in rows], dtype=float),
                                  est.decision_function(Xt))


def test_default_model_name_and_cross_validation(libsvm_files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", libsvm_files["train"]]) == 0
    assert (tmp_path / "blobs.svm.model").is_file()   # libsvm's default: TRAIN's name + .model
    capsys.readouterr()
    assert main(["train", "-v", "3", "--seed", "1", "-c", "2", libsvm_files["train"],
                 "cv.model"]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "cv.model").exists()   # -v reports, it writes no model
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    X, y = libsvm_files["X"][:60], libsvm_files["y"][:60]
    expected = cross_val_score(MultiClassSVC(C=2.0, random_state=1), X, y,
                               cv=StratifiedKFold(3, shuffle=True, random_state=1)).mean()
    assert f"Cross Validation Accuracy = {100 * expected:g}% ({round(expected * 60)}/60)" in out


def test_zero_based_training_file_is_read_the_same_way_at_predict(tmp_path, capsys):
    # scikit-learn's dump_svmlight_file writes indices from 0; the model file records it.
    X, y = make_blobs(n_samples=80, centers=3, n_features=3, random_state=2)
    X[:, 1] = 0.0   # a test file without index 0 would look 1-based on its own
    dump_svmlight_file(X[:50], y[:50], str(tmp_path / "tr"), zero_based=True)
    dump_svmlight_file(X[50:], y[50:], str(tmp_path / "te"), zero_based=True)
    assert main(["train", "-q", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    assert main(["predict", "-q", str(tmp_path / "te"), str(tmp_path / "m"),
                 str(tmp_path / "p")]) == 0
    expected = MultiClassSVC().fit(X[:50], y[:50]).predict(X[50:])
    assert _labels(tmp_path / "p") == [str(v) for v in expected]


def test_precomputed_kernel_files(libsvm_files, tmp_path, capsys):
    X, y = libsvm_files["X"], libsvm_files["y"]
    K, Kt = X[:60] @ X[:60].T, X[60:] @ X[:60].T

    def write(path, rows, labels, ids):
        with open(path, "w") as fh:
            for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
                fh.write(f"{label} 0:{ids(i)} " + " ".join(f"{j + 1}:{float(v)!r}"
                                                            for j, v in enumerate(row)) + "\n")

    write(tmp_path / "tr", K, y[:60], lambda i: i + 1)
    write(tmp_path / "te", Kt, y[60:], lambda i: 1)   # libsvm: any id in a test file
    assert main(["train", "-q", "-t", "4", str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    assert main(["predict", "-q", str(tmp_path / "te"), str(tmp_path / "m"),
                 str(tmp_path / "p")]) == 0
    expected = MultiClassSVC(kernel="linear").fit(X[:60], y[:60]).predict(X[60:])
    assert _labels(tmp_path / "p") == [str(v) for v in expected]
    write(tmp_path / "bad", K, y[:60], lambda i: 7)
    assert main(["train", "-t", "4", str(tmp_path / "bad"), str(tmp_path / "m2")]) == 2
    assert "0:i not the row numbers" in capsys.readouterr().err


def test_predict_refuses_a_test_file_that_does_not_fit_the_model(libsvm_files, tmp_path, capsys):
    X, y = libsvm_files["X"], libsvm_files["y"]

    def write(path, rows, labels):
        with open(path, "w") as fh:
            for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
                fh.write(f"{label} 0:{i + 1} " + " ".join(f"{j + 1}:{float(v)!r}"
                                                          for j, v in enumerate(row)) + "\n")

    def predict(test, model):
        code = main(["predict", "-q", str(test), str(model), str(tmp_path / "p")])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        return err

    write(tmp_path / "tr", X[:60] @ X[:60].T, y[:60])
    assert main(["train", "-q", "-t", "4", str(tmp_path / "tr"), str(tmp_path / "k.model")]) == 0
    # A kernel against 40 of the 60 training points, or a feature file, was padded with
    # zero kernel values and predicted without a word.
    write(tmp_path / "short", X[60:] @ X[:40].T, y[60:])
    assert "L = 60, the model's number of training samples; got 40 kernel columns" in predict(
        tmp_path / "short", tmp_path / "k.model")
    assert "got 4 kernel columns" in predict(libsvm_files["test"], tmp_path / "k.model")
    # A test file wider than the model: the message gave scikit-learn's numbers, off by one
    # ("n_features was set to 5, but input file contains 7 features").
    assert main(["train", "-q", libsvm_files["train"], str(tmp_path / "m")]) == 0
    wide = tmp_path / "wide.svm"
    dump_svmlight_file(np.hstack([X[60:], np.ones((30, 2))]), y[60:], str(wide),
                       zero_based=False)
    assert "wide.svm' has feature index 6, but the model has 4 features (indices 1 to 4)" in \
        predict(wide, tmp_path / "m")


@pytest.mark.parametrize("argv,message", [
    (["train", "-t", "5", "TRAIN"], "argument -t: must be a libsvm kernel code 0-4"),
    (["train", "-v", "1", "TRAIN"], "cross-validation needs at least 2 folds"),
    (["train", "TRAIN", "/nonexistent/dir/m.model"], "MODEL '/nonexistent/dir/m.model': folder"),
    (["predict", "TRAIN", "TRAIN"], "is not a msvm model file (not a .npz archive"),
    (["predict", "TRAIN", "/nonexistent.model"], "Model file '/nonexistent.model' does not exist"),
    (["select", "--criterion", "bound", "TRAIN"], "hold for --model msvm2 only"),
    (["select", "--log2c", "1,5,-1", "TRAIN"], "STEP must go from BEGIN towards END"),
    # 2^2000 and 2^inf overflowed in the grid (OverflowError: a traceback, exit 1); NaN gave
    # "cannot convert float NaN to integer"; a tiny STEP built a list of 10^10 values.
    (["select", "--log2c", "2000,2000,1", "TRAIN"], "must be numbers in [-1023, 1023]"),
    (["select", "--log2g", "0,inf,1", "TRAIN"], "must be numbers in [-1023, 1023]"),
    (["select", "--log2c", "0,1,nan", "TRAIN"], "must be numbers in [-1023, 1023]"),
    (["select", "--log2c", "0,10,1e-9", "TRAIN"], "gives 10000000001 values, at most 10000"),
    # No grid point converged: a RuntimeError traceback and exit status 1.
    (["select", "--model", "msvm2", "--criterion", "candidates", "--max-iter", "2", "--log2c",
      "0,0,1", "--log2g", "0,0,1", "TRAIN"], "No grid point converged"),
    (["train", "--nonsense", "TRAIN"], "unrecognized arguments: --nonsense"),
])
def test_bad_train_predict_select_exit_2(libsvm_files, capsys, argv, message):
    argv = [libsvm_files["train"] if a == "TRAIN" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("argv,message", [
    # --test '' was ignored: the accuracy printed was the training set's, with exit 0.
    (["fit", "TRAIN", "--test", ""], "msvm fit: error: LIBSVM file '' does not exist."),
    # --json '' wrote nothing, silently.
    (["fit", "TRAIN", "--json", ""], "msvm fit: error: --json is an empty path"),
    (["demo", "--json", ""], "msvm demo: error: --json is an empty path"),
    # MODEL '' wrote TRAIN's default model file instead.
    (["train", "TRAIN", ""], "msvm train: error: MODEL is an empty path"),
    (["select", "TRAIN", ""], "msvm select: error: MODEL is an empty path"),
    # OUTPUT '' failed after predicting with "[Errno 2] No such file or directory: ''".
    (["predict", "TRAIN", "MODEL", ""], "msvm predict: error: OUTPUT is an empty path"),
])
def test_empty_paths_exit_2(libsvm_files, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "-q", libsvm_files["train"], "m"]) == 0
    argv = [{"TRAIN": libsvm_files["train"], "MODEL": "m"}.get(a, a) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message and captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


@pytest.mark.parametrize("argv,message", [
    # Each failed after the table's header (select -v, demo --C/--tol), some after a demo fit.
    (["select", "-v", "0", "TRAIN"], "-v: cross-validation needs at least 2 folds, got 0"),
    (["select", "-v", "1000", "TRAIN"], "-v: 1000 folds of 60 samples; at most 60"),
    (["select", "-e", "nan", "TRAIN"], "The 'tol' parameter of MultiClassSVC must be"),
    (["demo", "--C", "nan"], "The 'C' parameter of MultiClassSVC must be"),
    (["demo", "--tol", "-1"], "The 'tol' parameter of MultiClassSVC must be"),
    # train_test_split's "The 'random_state' parameter of train_test_split must be ...".
    (["demo", "--seed", "-1"], "--seed must be between 0 and 4294967295, got -1"),
])
def test_bad_options_fail_before_any_output(libsvm_files, tmp_path, capsys, argv, message):
    argv = [libsvm_files["train"] if a == "TRAIN" else a for a in argv]
    if argv[0] == "select":
        argv.append(str(tmp_path / "m"))
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert message in captured.err, captured.err


@pytest.mark.parametrize("argv,message", [
    # The model replaced the training data, the predictions the model or the test data.
    (["train", "-q", "DATA", "./DATA"], "MODEL './data.svm' is the TRAIN file"),
    (["select", "--log2c", "0,0,1", "--log2g", "0,0,1", "DATA", "DATA"],
     "MODEL 'data.svm' is the TRAIN file"),
    (["predict", "DATA", "MODEL", "MODEL"], "OUTPUT 'm.model' is the MODEL file"),
    (["predict", "DATA", "MODEL", "DATA"], "OUTPUT 'data.svm' is the TEST file"),
    (["fit", "DATA", "--json", "DATA"], "--json 'data.svm' is the TRAIN file"),
])
def test_an_output_that_is_an_input_exits_2(libsvm_files, tmp_path, monkeypatch, capsys,
                                             argv, message):
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copy(libsvm_files["train"], "data.svm")
    assert main(["train", "-q", "data.svm", "m.model"]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    argv = [a.replace("DATA", "data.svm").replace("MODEL", "m.model") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_select_by_cv_and_by_the_radius_margin_count(libsvm_files, tmp_path, capsys):
    import msvm
    from msvm import RadiusMarginSearch

    X, y = libsvm_files["X"][:60], libsvm_files["y"][:60]
    assert main(["select", "--log2c", "-1,1,2", "--log2g", "-3,-1,2", "-v", "3", "--seed", "0",
                 libsvm_files["train"], str(tmp_path / "cv.model")]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^ +([0-9.]+) +([0-9.]+) +([0-9.]+)$", out, flags=re.M)
    assert [(float(c), float(g)) for c, g, _ in rows] == [(0.5, 0.125), (0.5, 0.5), (2, 0.125),
                                                          (2, 0.5)]
    best = max(range(4), key=lambda i: float(rows[i][2]))   # first of the best, as argmax
    model = msvm.load(tmp_path / "cv.model")
    assert (model.C, model.gamma) == (float(rows[best][0]), float(rows[best][1]))
    assert main(["select", "--model", "msvm2", "--criterion", "candidates", "--log2c=-1,1,2",
                 "--log2g=-3,-1,2", libsvm_files["train"], str(tmp_path / "rm.model")]) == 0
    capsys.readouterr()
    search = RadiusMarginSearch(MultiClassSVC(model="msvm2"),
                                {"C": [0.5, 2.0], "gamma": [0.125, 0.5]}).fit(X, y)
    model = msvm.load(tmp_path / "rm.model")
    assert {"C": model.C, "gamma": model.gamma} == search.best_params_
    np.testing.assert_array_equal(model.predict(X), search.predict(X))


def test_select_marks_a_point_that_did_not_converge(libsvm_files, tmp_path, capsys,
                                                    monkeypatch):
    """A grid point that did not converge printed its count like any other: a smaller
    number than the selected point's, with no word on why it was not selected."""
    from msvm import model_selection

    solve = model_selection._solve

    def cap_large_C(estimator, setup, warm_start=None, tol=None):
        solution = solve(estimator, setup, warm_start, tol)
        if setup.problem.C > 1:
            solution.status = "max_iter"
        return solution

    monkeypatch.setattr(model_selection, "_solve", cap_large_C)
    assert main(["select", "--model", "msvm2", "--criterion", "candidates", "--log2c=-1,1,2",
                 "--log2g=-1,-1,1", libsvm_files["train"], str(tmp_path / "m.model")]) == 0
    rows = re.findall(r"^ +([0-9.]+) +[0-9.]+ +[0-9.]+(.*)$", capsys.readouterr().out,
                      flags=re.M)
    assert rows == [("0.5", ""), ("2", "  (not converged: max_iter; not a bound)")]


def test_validate_passes_options_to_the_suite(capfd):
    import msvm.cli

    if not os.path.isdir(os.path.join(os.path.dirname(msvm.cli.__file__), "..", "validation")):
        pytest.skip("msvm is installed, not a source checkout: 'msvm validate' runs the "
                    "checkout's validation/")
    assert main(["validate", "--quick", "--list"]) == 0
    rows = capfd.readouterr().out.split()
    from validation.__main__ import QUICK  # noqa: F401 - the suite is importable here
    assert rows and all("/" in row for row in rows)


def test_validate_without_the_suite(monkeypatch, tmp_path, capsys):
    import msvm.cli

    monkeypatch.setattr(msvm.cli, "__file__", str(tmp_path / "msvm" / "cli.py"))
    assert main(["validate", "--quick"]) == 2
    assert "validation suite was not found" in capsys.readouterr().err


# ------------------------------------------------------------ other processes
def _run(args, **kwargs):
    return subprocess.run([sys.executable, "-m", "msvm", *map(str, args)], capture_output=True,
                          text=True, timeout=600, **kwargs)


def test_model_file_loads_in_a_fresh_process(libsvm_files, tmp_path):
    model_path = tmp_path / "m.model"
    assert main(["train", "-q", "--model", "cs", libsvm_files["train"], str(model_path)]) == 0
    code = ("import sys, numpy as np, msvm; m = msvm.load(sys.argv[1]); "
            "np.savetxt(sys.stdout, m.decision_function(np.loadtxt(sys.argv[2])), '%.17g')")
    np.savetxt(tmp_path / "X.txt", libsvm_files["X"][60:], "%.17g")
    done = subprocess.run([sys.executable, "-c", code, str(model_path), str(tmp_path / "X.txt")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    X, y, Xt, _ = _as_read(libsvm_files)
    expected = MultiClassSVC(model="cs").fit(X, y).decision_function(libsvm_files["X"][60:])
    np.testing.assert_array_equal(np.loadtxt(done.stdout.splitlines()), expected)


@pytest.fixture(scope="module")
def long_fit_file(tmp_path_factory):
    """A fit of a few seconds: overlapping classes, small tol, the online solver to tol."""
    X, y = make_blobs(n_samples=1500, centers=6, n_features=8, cluster_std=4.0, random_state=0)
    path = tmp_path_factory.mktemp("long") / "long.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return path, ["--model", "cs", "-c", "100", "-e", "1e-6", "--solver", "online",
                  "--epochs", "none"]


def test_verbose_train_shows_progress_lines(long_fit_file, tmp_path):
    path, options = long_fit_file
    done = _run(["train", "--verbose", *options, path, tmp_path / "m"])
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("online  ")]
    # Not a terminal: plain lines, at most one a second, the last one final.
    assert len(lines) >= 2, done.stderr
    assert "\r" not in done.stderr
    assert all(re.search(r"steps \d+  KKT \S+ / tol 1\.0e-06  \[[#-]{20}\] +\d+%", line)
               for line in lines)
    assert lines[-1].endswith("done") and "100%" in lines[-1]
    assert "ETA" in lines[0]
    assert "[MultiClassSVC] solve: online status=optimal" in done.stdout
    # As --help says (it said both went to stderr).
    assert "fitting stage (stdout) and the solver's live progress (stderr)" in " ".join(
        _run(["train", "--help"]).stdout.split())


def test_verbose_on_a_terminal_is_one_updating_line(long_fit_file, tmp_path):
    import os
    import pty

    path, options = long_fit_file
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "msvm", "train", "--verbose", "-q",
                             *options, str(path), str(tmp_path / "m")],
                            stdout=subprocess.DEVNULL, stderr=secondary)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:   # the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=600) == 0
    os.close(primary)
    text = b"".join(chunks).decode()
    updates = [part for part in text.replace("\r\n", "\n").split("\r") if part.strip()]
    # Several reports, each rewriting the same line (carriage returns, no newline between).
    assert len(updates) >= 2, text
    assert text.replace("\r\n", "\n").count("\n") == 1 and text.rstrip().endswith("done")
    assert all(u.lstrip("\n").startswith("online  ") for u in updates)


@pytest.mark.slow
@pytest.mark.parametrize("name,model,C,gamma", [("usps", "ww", 10.0, 0.0331574),
                                                 ("letter", "cs", 2.5, 0.0512821)])
def test_train_predict_round_trip_on_shared_sets(tmp_path, capsys, name, model, C, gamma):
    """msvm train / predict on 2000 + 1000 points of usps and letter = the Python API.

    A fit longer than one time slice of S2DO is reproducible only to ``tol`` (its lazy
    pauses are timed), so the CLI's model is compared with the API's by what both
    certify, and the predictions written with the model file's, exactly.
    """
    import msvm

    try:
        X, y, Xt, yt = shared_dataset(name)
    except FileNotFoundError:
        pytest.skip(f"no ../shared/datasets/{name} next to this checkout")
    X, y, Xt, yt = X[:2000], y[:2000], Xt[:1000], yt[:1000]
    dump_svmlight_file(X, y, str(tmp_path / "tr"), zero_based=False)
    dump_svmlight_file(Xt, yt, str(tmp_path / "te"), zero_based=False)
    options = ["--model", model, "-c", str(C), "-g", str(gamma)]
    assert main(["train", "-q", *options, str(tmp_path / "tr"), str(tmp_path / "m")]) == 0
    assert main(["predict", str(tmp_path / "te"), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    printed = capsys.readouterr().out
    X_read, y_read, Xt_read, yt_read = _as_read({"train": tmp_path / "tr", "test": tmp_path / "te"})
    cli = msvm.load(tmp_path / "m")
    written = _labels(tmp_path / "p")
    assert written == [str(v) for v in cli.predict(Xt_read)]
    correct = int(np.sum(cli.predict(Xt_read) == yt_read))
    assert f"Accuracy = {100 * correct / 1000:g}% ({correct}/1000)" in printed
    api = MultiClassSVC(model=model, C=C, gamma=gamma).fit(X_read, y_read)
    for est in (cli, api):
        assert est.solution_["status"] == "optimal"
    # Weak duality: both duals are below the optimum, which is below both primals.
    gap = max(e.solution_["primal_objective"] - e.solution_["dual_objective"] for e in (cli, api))
    assert abs(cli.solution_["dual_objective"] - api.solution_["dual_objective"]) <= gap
    # Predictions differ only where the two models' scores are within their difference.
    h_cli, h_api = cli.decision_function(Xt_read), api.decision_function(Xt_read)
    top2 = np.sort(h_api, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * np.max(np.abs(h_cli - h_api))
    np.testing.assert_array_equal(cli.predict(Xt_read)[clear], api.predict(Xt_read)[clear])
    assert clear.mean() > 0.9   # the comparison is not vacuous


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["--version"]])
def test_help_to_a_closed_pipe_exits_141(args):
    """argparse dropped the BrokenPipeError of its help text: '--help | head -0' exited 0."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "msvm", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
    shown = _run(args)
    assert shown.returncode == 0 and "msvm" in shown.stdout


def test_interrupt_message_starts_its_own_line_on_a_terminal(monkeypatch):
    """Ctrl-C during a --verbose fit on a terminal left the solver's progress line open
    (rewritten in place, no newline): 'msvm train: interrupted' was appended to it."""
    import io

    import msvm.cli
    from msvm._progress import SolverProgress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)

    def interrupted(args, prog):
        progress = SolverProgress("s2do", 1e-3, enabled=True)
        progress.report(10, 0.5)
        raise KeyboardInterrupt

    monkeypatch.setattr(msvm.cli, "_train", interrupted)
    assert main(["train", "x.svm"]) == 130
    text = err.getvalue()
    assert text.startswith("\rs2do  ") and text.endswith("\nmsvm train: interrupted\n"), text
