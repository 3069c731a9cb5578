"""The machine table: coefficients, Hessian structure, objective and gradient."""

import dataclasses

import numpy as np
import pytest

from msvm.diagnostics import diagnose
from msvm.kernels import Kernel
from msvm.machines import MACHINES, make_machine
from msvm.problem import DualProblem
from msvm.solvers import get_solver

from problem_factory import FAMILY, MODELS, blobs, make_problem


def explicit_M(machine):
    """M(y,p ; y',q) = Σ_c Σ_e ν_{y,p,c} ν_{y',q,e} (δ_ce − s/Q), straight from the definition."""
    Q = machine.n_classes
    s = 1.0 if machine.sum_to_zero else 0.0
    D = np.eye(Q) - s / Q
    return np.einsum("ypc,ce,zqe->ypzq", machine.nu, D, machine.nu)


@pytest.mark.parametrize("Q", [2, 3, 5])
def test_ww_and_cs_hessian_is_the_published_one(Q):
    y_i, k, y_j, l = np.meshgrid(*[np.arange(Q)] * 4, indexing="ij")
    published = ((y_i == y_j).astype(float) - (y_i == l) - (y_j == k) + (k == l))
    for name in ("ww", "cs"):
        machine = make_machine(name, Q)
        active = machine.active[:, :, None, None] & machine.active[None, None, :, :]
        np.testing.assert_allclose(explicit_M(machine)[active], published[active])


@pytest.mark.parametrize("Q", [2, 3, 5])
def test_llw_hessian_is_delta_minus_one_over_q(Q):
    for name in ("llw", "msvm2"):
        machine = make_machine(name, Q)
        M = explicit_M(machine)
        active = machine.active[:, :, None, None] & machine.active[None, None, :, :]
        k = np.arange(Q)[None, :, None, None]
        l = np.arange(Q)[None, None, None, :]
        expected = np.broadcast_to((k == l) - 1.0 / Q, M.shape)
        np.testing.assert_allclose(M[active], expected[active])


@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_objective_and_gradient_match_the_explicit_quadratic(model):
    X, y = blobs(3, 3, 25)
    problem = make_problem(model, X, y, C=0.7)
    machine = problem.machine
    K = problem.kernel.gram() + problem.kernel_shift * np.eye(len(y))
    M = explicit_M(machine)
    H = np.einsum("ipjq,ij->ipjq", M[y][:, :, y], K)
    H = H * (problem.active[:, :, None, None] & problem.active[None, None, :, :])
    rng = np.random.default_rng(0)
    alpha = rng.uniform(0, 0.7, problem.active.shape) * problem.active
    n = alpha.size
    expected_J = 0.5 * alpha.ravel() @ H.reshape(n, n) @ alpha.ravel() - np.sum(
        problem.targets * alpha)
    assert problem.objective(alpha) == pytest.approx(expected_J, rel=1e-12)
    expected_grad = (H.reshape(n, n) @ alpha.ravel()).reshape(alpha.shape) - problem.targets
    np.testing.assert_allclose(problem.gradient(alpha), expected_grad * problem.active,
                               atol=1e-12)


@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_equality_constraints_have_rank_q_minus_one(model):
    X, y = blobs(1, 4, 40)
    problem = make_problem(model, X, y, bias=True)
    if model == "ova":
        # Q independent binary SVMs: one free offset per class.
        assert problem.equality_basis.shape == (4, 4)
        return
    assert problem.equality_basis.shape == (4, 3)
    # b in span(U) is orthogonal to the all-ones direction for every other machine.
    np.testing.assert_allclose(problem.equality_basis.sum(axis=0), 0, atol=1e-12)


@pytest.mark.parametrize("model", MODELS + FAMILY)
def test_equality_basis_is_an_orthonormal_basis_of_the_nu_vectors(model):
    """U spans exactly the ν̄ vectors of the labels present (its rank is theirs)."""
    X, y = blobs(1, 4, 40)
    y[y == 3] = 2                                   # a class with no examples
    problem = DualProblem(make_machine(model, 4), y, Kernel(X, "rbf", gamma=0.5), 1.0, True)
    U = problem.equality_basis
    vecs = problem.nu[[0, 1, 2]][problem.machine.active[[0, 1, 2]]]
    assert U.shape[1] == np.linalg.matrix_rank(vecs)
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
    np.testing.assert_allclose(vecs @ U @ U.T, vecs, atol=1e-12)


@pytest.mark.parametrize("Q", [2, 3, 5])
def test_absolute_margin_hessians(Q):
    """ADM: δ_kl − 1/Q (as LLW); ATS/ATM: σ_k σ_l (δ_kl − 1/Q); OvA: σ_k σ_l δ_kl; MMR: δ − 1/Q.

    σ_k = +1 on the own class, −1 elsewhere (Shark's M tables for these trainers).
    """
    y_i, k, y_j, l = np.meshgrid(*[np.arange(Q)] * 4, indexing="ij")
    sk, sl = np.where(k == y_i, 1.0, -1.0), np.where(l == y_j, 1.0, -1.0)
    expected = {
        "adm": (k == l) - 1.0 / Q,
        "ats": sk * sl * ((k == l) - 1.0 / Q),
        "atm": sk * sl * ((k == l) - 1.0 / Q),
        "ova": sk * sl * (k == l),
    }
    for name, M_expected in expected.items():
        machine = make_machine(name, Q)
        active = machine.active[:, :, None, None] & machine.active[None, None, :, :]
        np.testing.assert_allclose(explicit_M(machine)[active], M_expected[active])
    # MMR: one slot per example, the own class.
    mmr = make_machine("mmr", Q)
    y = np.arange(Q)
    np.testing.assert_allclose(explicit_M(mmr)[:, 0, :, 0],
                               (y[:, None] == y[None, :]) - 1.0 / Q)


def test_slack_maps():
    Q = 4
    assert make_machine("ww", Q).n_slacks == Q and not make_machine("ww", Q).max_loss
    assert make_machine("cs", Q).n_slacks == 1 and make_machine("cs", Q).max_loss
    assert make_machine("msvm2", Q).n_slacks == 0
    assert make_machine("msvm2", Q).kernel_shift(2.0) == pytest.approx(0.25)
    assert make_machine("llw", Q).kernel_shift(2.0) == 0.0
    for name in ("adm", "atm", "mmr"):
        assert make_machine(name, Q).n_slacks == 1 and make_machine(name, Q).max_loss == (
            name != "mmr")
    for name in ("ats", "ova"):
        assert make_machine(name, Q).n_slacks == Q and not make_machine(name, Q).max_loss
    assert make_machine("mmr", Q).n_slots == 1
    for name in MACHINES:
        m = make_machine(name, Q)
        if m.n_slots == Q:  # slot p <-> class p (all rows but MMR, whose slot is the own class)
            # Discriminative losses have no constraint on the own class, total ones do.
            assert m.active.diagonal().any() == (name in ("ats", "atm", "ova"))
        assert np.all(m.gamma[m.active] > 0)


def test_bad_machine_arguments():
    with pytest.raises(ValueError, match="Unknown model"):
        make_machine("svm", 3)
    with pytest.raises(ValueError, match="at least 2 classes"):
        make_machine("ww", 1)
    with pytest.raises(ValueError, match="n_classes must be an integer, got 3.0"):
        make_machine("ww", 3.0)


def test_custom_machine_tables_are_checked(monkeypatch):
    """A row of the wrong shape, with NaN or an unknown loss is refused when it is built:
    NaN ν or γ gave an 'optimal' α = 0, an unknown loss was solved as the squared one."""
    ww = make_machine("ww", 3)
    bad = {
        "nu and gamma must be finite": dict(nu=np.where(ww.nu != 0, np.nan, 0.0)),
        "nu and gamma must be finite ": dict(gamma=np.full((3, 3), np.inf)),
        r"nu must have shape .* \(4, P, 4\), got \(3, 3, 3\)": dict(n_classes=4),
        r"gamma must have shape \(n_classes, P\) = \(3, 2\)": dict(nu=ww.nu[:, :2]),
        "loss must be 'hinge' or 'squared'": dict(loss="logistic"),
        "active must be a boolean array": dict(active=ww.active.astype(int)),
        # A hinge slot without a slack group: Frank-Wolfe aborted on corrupted memory.
        "slack group >= 0 on every active slot": dict(slack=np.where(ww.active, -1, 0)),
        "slack must be an integer array": dict(slack=ww.slack.astype(float)),
    }
    for message, change in bad.items():
        with pytest.raises(ValueError, match=message.strip()):
            dataclasses.replace(ww, **change)
    monkeypatch.setitem(MACHINES, "nan",
                        lambda Q: dict(MACHINES["ww"](Q), gamma=np.full((Q, Q), np.nan)))
    with pytest.raises(ValueError, match="Machine 'nan': nu and gamma must be finite"):
        make_machine("nan", 3)


def test_problem_checks_its_labels_and_C():
    """Labels were cast to intp: −1 wrapped round to the last class, 0.5 became 0."""
    X, y = blobs(0, 3, 12)
    machine, kernel = make_machine("ww", 3), Kernel(X, "rbf", gamma=0.5)
    for labels, message in ((np.r_[y[:-1], -1], "class codes 0 .. 2"),
                            (np.r_[y[:-1], 3], "class codes 0 .. 2"),
                            (np.r_[y[:-1], 0.5], "integer class codes"),
                            (np.r_[y[:-1], np.nan], "integer class codes"),
                            (y[:, None], "y must be 1-D")):
        with pytest.raises(ValueError, match=message):
            DualProblem(machine, labels, kernel, 1.0, False)
    np.testing.assert_array_equal(DualProblem(machine, y.astype(float), kernel, 1.0, False).y, y)
    for C in ("1", np.ones(2), 0.0, np.nan):
        with pytest.raises(ValueError, match="C must be a positive number"):
            DualProblem(machine, y, kernel, C, False)
    with pytest.raises(TypeError, match="machine must be a Machine"):
        DualProblem("ww", y, kernel, 1.0, False)


def test_a_machine_too_large_to_allocate_says_why(monkeypatch):
    def builder(n_classes):
        raise MemoryError(f"Unable to allocate an array with shape {(n_classes,) * 3}")

    monkeypatch.setitem(MACHINES, "ww", builder)
    with pytest.raises(MemoryError, match=r"'ww' machine for 5000 classes .*\(5000, 5000, 5000\)"):
        make_machine("ww", 5000)


def test_squared_loss_rows_must_have_the_msvm2_margins():
    """The squared loss's dual (shift αᵢᵀν̄ν̄ᵀαᵢ/(4C)) is the conjugate of the penalty the
    certificate reports, C ξᵀ(I + 11ᵀ)ξ, only for ν̄ν̄ᵀ = I − 11ᵀ/(n + 1): a squared WW
    row was solved 'optimal' with a relative gap of 0.77, and a row with a singular ν̄ν̄ᵀ
    had an unbounded dual (S2DO ran to max_iter, OSQP answered 'optimal')."""
    Q = 3
    ww, m2 = make_machine("ww", Q), make_machine("msvm2", Q)
    bad = {
        "squared WW": dict(nu=ww.nu, sum_to_zero=False),
        "scaled margins": dict(nu=2 * m2.nu),
        "unbounded": dict(nu=np.zeros_like(m2.nu)),
    }
    for label, change in bad.items():
        with pytest.raises(ValueError, match="squared-loss row must have the M-SVM²'s margins"):
            dataclasses.replace(m2, name=label, **change)
    # Other targets, and the same margins in another slot order, are the M-SVM²'s.
    X, y = blobs(1, Q, 30, spread=2.0)
    targets = dataclasses.replace(m2, gamma=np.where(m2.active, 1.0, 0.0))
    perm = [2, 0, 1]
    permuted = dataclasses.replace(m2, nu=m2.nu[:, perm], gamma=m2.gamma[:, perm],
                                   active=m2.active[:, perm], slack=m2.slack[:, perm])
    for machine in (targets, permuted):
        problem = DualProblem(machine, y, Kernel(X, "linear"), 1.0, False)
        d = diagnose(problem, get_solver("cvxpy").solve(problem))
        assert abs(d.relative_gap) < 1e-8
