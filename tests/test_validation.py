"""The validation suite (``python -m validation``) runs, passes, and can fail."""

import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the suite lives next to the package, not inside it
    sys.path.insert(0, str(ROOT))

from msvm.datasets import find_shared_datasets  # noqa: E402
from msvm.problem import DualSolution  # noqa: E402
from msvm.solvers import get_solver  # noqa: E402
from validation import registry  # noqa: E402
from validation.__main__ import run  # noqa: E402
from validation.checks import (  # noqa: E402
    ALL_MACHINES,
    CHECKS,
    FAMILY_MACHINES,
    FAMILY_PROBLEMS,
    build_matrix,
    build_problem,
    evaluate,
    prediction_agreement,
    run_case,
)
from validation.problems import (  # noqa: E402
    PROBLEMS,
    _stratified_subsample,
)


def test_quick_matrix_passes_and_writes_json(tmp_path):
    path = tmp_path / "out" / "quick.json"
    out = io.StringIO()
    code = run(["--quick", "--jobs", "1", "--json", str(path)], out=out)
    text = out.getvalue()
    assert code == 0, text
    assert text.startswith("Thresholds:")
    payload = json.loads(path.read_text())
    # Results files keep no absolute machine paths (a path outside the repository: its name).
    assert payload["meta"]["argv"] == ["--quick", "--jobs", "1", "--json", "quick.json"]
    assert set(payload["thresholds"]) == set(registry.SOLVERS)
    for name in ("cvxpy", "osqp"):  # the reference solvers' own limits
        assert payload["thresholds"][name]["thresholds"]["dual_rel_diff"] == 1e-6
        assert payload["thresholds"][name]["thresholds"]["kkt_residual"] == 1e-6
    rows = payload["rows"]
    assert 8 <= len(rows) == payload["summary"]["n_rows"]
    assert all(r["passed"] for r in rows), [r["name"] for r in rows if not r["passed"]]
    assert {r["machine"] for r in rows} == set(ALL_MACHINES)
    assert {r["bias"] for r in rows} == {False, True}
    for r in rows:
        assert set(r["checks"]) == set(CHECKS)
        for key in ("dual_objective", "dual_rel_diff", "relative_gap", "kkt_residual", "time"):
            assert r[key] is not None, (r["name"], key)


@pytest.fixture(scope="module")
def solved_case():
    spec = PROBLEMS["overlap-q3"]
    problem = build_problem(spec, "ww", True, "rbf", 1.0)
    ref = get_solver("osqp").solve(problem)
    sol = get_solver("cvxpy").solve(problem)
    return problem, sol, ref


def test_exact_solution_passes(solved_case):
    problem, sol, ref = solved_case
    result = evaluate(problem, sol, ref, registry.get_entry("cvxpy").thresholds)
    assert result["passed"], result["failed"]
    assert result["b_unique"]


def test_scaled_alpha_fails(solved_case):
    problem, sol, ref = solved_case
    bad = DualSolution(alpha=0.9 * sol.alpha, b=sol.b, status="optimal", solver="corrupt")
    result = evaluate(problem, bad, ref, registry.get_entry("cvxpy").thresholds)
    assert not result["passed"]
    assert {"dual_objective", "kkt_residual", "duality_gap"} <= set(result["failed"])


def test_each_check_can_fail(solved_case):
    problem, sol, ref = solved_case
    thresholds = registry.get_entry("cvxpy").thresholds
    # A status that is not 'optimal'.
    r = evaluate(problem, replace(sol, status="inaccurate"), ref, thresholds)
    assert r["failed"] == ["status"]
    # A wrong b (the dual is untouched, so only b and what depends on it fail).
    r = evaluate(problem, replace(sol, b=sol.b + 1e-2), ref, thresholds)
    assert "b" in r["failed"] and "dual_objective" not in r["failed"]
    # An infeasible α: the bias constraints are violated.
    alpha = sol.alpha.copy()
    i, p = np.argwhere(problem.active)[0]
    alpha[i, p] += 1e-3
    r = evaluate(problem, replace(sol, alpha=alpha), ref, thresholds)
    assert "equality" in r["failed"]
    # Predictions: a solution that is zero everywhere predicts one class.
    r = evaluate(problem, replace(sol, alpha=0 * sol.alpha, b=0 * sol.b), ref, thresholds)
    assert "predictions" in r["failed"]


def test_prediction_ties_count_as_agreement():
    h_ref = np.array([[1.0, 1.0, 0.0], [2.0, 0.0, 1.0]])
    h = np.array([[1.0, 1.0 + 1e-12, 0.0], [0.0, 2.0, 1.0]])
    agreement, strict = prediction_agreement(h, h_ref, 1e-6)
    assert strict == 0.0 and agreement == 0.5


def test_registry_adds_rows_with_one_entry(monkeypatch):
    monkeypatch.setitem(registry.SOLVERS, "nobias_only", registry.SolverEntry(
        name="osqp", reference="cvxpy", bias=False, machines=("ww", "cs")))
    cases = build_matrix(problems=["blobs-q2"], Cs=[1.0], solvers=["nobias_only"])
    assert len(cases) == 2 * 2  # two machines x two kernels, no bias rows
    assert all(not c.bias and c.machine in ("ww", "cs") for c in cases)
    assert all(c.solvers == ("nobias_only",) for c in cases)


def test_failed_solver_is_a_failed_row(monkeypatch):
    monkeypatch.setitem(registry.SOLVERS, "broken", registry.SolverEntry(
        name="no-such-solver", reference="cvxpy"))
    (case,) = build_matrix(problems=["blobs-q2"], Cs=[1.0], machines=["ww"], biases=[False],
                           kernels=["linear"], solvers=["broken"])
    (row,) = run_case(case)
    assert not row["passed"] and "status" in row["failed"]
    assert "no-such-solver" in row["info"]["error"]


def test_filter_and_matrix_size():
    cases = build_matrix()
    generated = {c.problem for c in cases if PROBLEMS[c.problem].kind == "generated"}
    assert len(generated) >= 10
    assert {"iris", "wine", "glass", "vowel"} <= {c.problem for c in cases}
    for problem in generated:
        combos = {(c.machine, c.bias, c.kernel) for c in cases if c.problem == problem}
        # The rest of the family runs on a subset of the problems (time budget).
        n_machines = len(ALL_MACHINES) if problem in FAMILY_PROBLEMS else 4
        assert len(combos) == n_machines * 2 * 2
    assert {c.machine for c in cases if c.problem in FAMILY_PROBLEMS} == set(ALL_MACHINES)
    # An explicit problem list runs every machine.
    explicit = build_matrix(problems=["wine"], machines=FAMILY_MACHINES)
    assert {c.machine for c in explicit} == set(FAMILY_MACHINES)
    only = build_matrix(name_filter="iris/C=0.1/llw/bias/rbf/osqp")
    assert len(only) == 1 and only[0].solvers == ("osqp",)


def test_problems_are_seeded_and_small():
    try:
        find_shared_datasets()
    except FileNotFoundError:
        pytest.skip("no shared datasets ($MSVM_DATASETS or ../shared/datasets)")
    for spec in PROBLEMS.values():
        X, y = spec.load()
        X2, y2 = spec.load()
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(y, y2)
        assert X.shape[0] == len(y) <= 200
        assert np.array_equal(np.unique(y), np.arange(y.max() + 1))


def test_stratified_subsample_keeps_every_class():
    y = np.repeat([0, 1, 2, 3], [50, 30, 15, 5])
    idx = _stratified_subsample(y, 20, seed=0)
    assert len(idx) == 20
    assert set(y[idx]) == {0, 1, 2, 3}
    np.testing.assert_array_equal(idx, _stratified_subsample(y, 20, seed=0))


def test_s2do_plain_turns_every_acceleration_off():
    """The entry that runs seed 004's Algorithm 3 as written must switch off every
    acceleration S2DO has, including ones added after it was written."""
    from msvm.solvers import s2do

    options = registry.get_entry("s2do_plain").options
    assert {name: options.get(name) for name in s2do.ACCELERATIONS} == \
        dict.fromkeys(s2do.ACCELERATIONS, False)


def test_interrupt_and_closed_stdout_exit_130_and_141(monkeypatch, capsys):
    """A Ctrl-C ended the suite with a KeyboardInterrupt traceback (also under 'msvm
    validate', which itself printed one line and exited 130); '--list | head -0' with a
    BrokenPipeError traceback and status 1."""
    import os
    import subprocess

    import validation.__main__ as suite

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(suite, "run", interrupted)
    with pytest.raises(SystemExit) as exc:
        suite.main([])
    assert exc.value.code == 130
    assert capsys.readouterr().err == "validation: interrupted\n"
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "validation", "--quick", "--list"],
                              cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_bad_jobs_json_and_dask_address_are_one_line_errors(monkeypatch, capsys, tmp_path):
    """--jobs 0 and --json '' ended in tracebacks ("n_jobs == 0 in Parallel has no meaning",
    "IsADirectoryError: '.'"), as did an unreachable --dask scheduler (OSError); --jobs 100000
    spawned that many worker processes (minutes) for a handful of rows."""
    import validation.__main__ as suite

    for argv in (["--jobs", "0"], ["--dask", "local", "--jobs", "-1"], ["--json", ""]):
        with pytest.raises(SystemExit) as exc:
            run(["--quick", *argv])
        assert exc.value.code == 2
        assert "--jobs must be" in capsys.readouterr().err or argv[0] == "--json"
    path = tmp_path / "rows.json"
    assert run(["--quick", "--filter", "/ww/nobias/linear/", "--bounds", "skip", "--jobs",
                "100000", "--json", str(path)], out=io.StringIO()) == 0
    assert json.loads(path.read_text())["summary"]["n_fail"] == 0

    def unreachable(argv):
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 30 s")

    monkeypatch.setattr(suite, "run", unreachable)
    with pytest.raises(SystemExit) as exc:
        suite.main([])
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("python -m validation: error: Timed out trying to "
                                       "connect to tcp://127.0.0.1:1 after 30 s\n")


def test_an_unwritable_json_is_refused_before_the_rows_run(tmp_path, capsys):
    """--json in a folder that could not be made (or a folder) was found only when the
    results were written, after the whole matrix had run: its rows were lost."""
    (tmp_path / "file").write_text("")
    for path, why in ((tmp_path / "file" / "v.json", "File exists"), (tmp_path, "is a folder")):
        with pytest.raises(SystemExit) as exc:
            run(["--quick", "--json", str(path)], out=io.StringIO())
        assert exc.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            f"cannot write --json {str(path)!r}: {why}")
    assert run(["--quick", "--list", "--json", str(tmp_path)], out=io.StringIO()) == 0


def test_the_printed_thresholds_are_the_ones_applied():
    """The table printed first gave every solver stopped by the KKT rule (s2do, online,
    linear, s2do_bias...) the constant limits 1e-6 on the dual, KKT residual and gap,
    which evaluate() replaces by the limits derived from its ε."""
    from validation.__main__ import thresholds_table

    lines = dict(zip(registry.SOLVERS, thresholds_table(list(registry.SOLVERS))[1:],
                     strict=True))
    for name, entry in registry.SOLVERS.items():
        t = entry.thresholds
        if t.kkt_eps is None:
            assert f"KKT residual <= {t.kkt_residual:g};" in lines[name]
        else:
            assert "KKT residual <=" not in lines[name]
            assert f"an eps={t.kkt_eps:g} KKT point" in lines[name]
    assert "eps=0.001 KKT point" in lines["s2do_default"]
    assert "KKT residual <= 0.0001;" in lines["frank_wolfe"]
