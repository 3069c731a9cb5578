"""The rest of the unified family: ADM, ATS, ATM, OvA and MMR (msvm/machines.py).

Each row is checked four independent ways: its table against the published
loss (no solver involved); its dual against the published *primal*, solved
directly as a QP in (W, b) with cvxpy on small linear problems (equal optima
prove that the dual we solve is the machine we document); the two reference
solvers against each other with certificates (KKT, duality gap); and the
equivalences with scikit-learn's binary SVMs (OvA = one SVC per class; every
row with Q = 2 is one SVC).  MMR is also solved in its original form (Szedmak
et al.: label vectors on a regular simplex).  Finally S2DO and the estimator.
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC, LinearSVC

from msvm import MultiClassSVC
from msvm.diagnostics import diagnose, primal_objective
from msvm.machines import MACHINES, make_machine
from msvm.solvers import get_solver

from problem_factory import FAMILY, blobs, generated_cases, make_problem, reference_solutions

GAMMA = 0.2
SUM_TO_ZERO = {"llw", "msvm2", "adm", "ats", "atm", "mmr"}


def _sign(y, Q):
    """σ_yk = +1 for k = y, −1 otherwise (absolute margins)."""
    return 2.0 * (np.arange(Q) == y) - 1.0


def _hinge(t):
    return np.maximum(t, 0.0)


#: The published losses L(y, h) (machines.py table; Shark's McSvm*Trainer docs).
PUBLISHED = {
    "ww": lambda h, y: np.sum(np.delete(_hinge(1 - (h[y] - h)), y)),
    "cs": lambda h, y: np.max(np.delete(_hinge(1 - (h[y] - h)), y)),
    "llw": lambda h, y: np.sum(np.delete(_hinge(1 / (len(h) - 1) + h), y)),
    "adm": lambda h, y: np.max(np.delete(_hinge(1 + h), y)),
    "ats": lambda h, y: np.sum(_hinge(1 - _sign(y, len(h)) * h)),
    "atm": lambda h, y: np.max(_hinge(1 - _sign(y, len(h)) * h)),
    "ova": lambda h, y: np.sum(_hinge(1 - _sign(y, len(h)) * h)),
    "mmr": lambda h, y: _hinge(1 - h[y]),
}


def _table_loss(machine, h, y):
    """Σ_r max(0, max_{p in slack r} γ_p − ν_p·h): the loss the table encodes."""
    r = machine.gamma[y] - machine.nu[y] @ h
    slack = machine.slack[y]
    # (Slack r = y of WW and LLW has no constraint for class y: max over nothing is 0.)
    return sum(max(0.0, r[machine.active[y] & (slack == s)].max(initial=-np.inf))
               for s in range(machine.n_slacks))


@pytest.mark.parametrize("Q", [2, 3, 5])
@pytest.mark.parametrize("model", sorted(PUBLISHED))
def test_table_encodes_the_published_loss(model, Q):
    machine = make_machine(model, Q)
    assert machine.sum_to_zero == (model in SUM_TO_ZERO)
    rng = np.random.default_rng(Q)
    for _ in range(50):
        h = rng.normal(scale=1.5, size=Q)
        if machine.sum_to_zero:
            h -= h.mean()  # the loss is only defined on Σ_c h_c = 0 for these rows
        for y in range(Q):
            assert _table_loss(machine, h, y) == pytest.approx(PUBLISHED[model](h, y), abs=1e-12)


# ------------------------------------------------- dual optimum = published primal
def _published_primal(model, X, y, C, bias):
    """min ½‖W‖² + C Σ_i L(y_i, XW + b) over (W, b), L written from the published loss."""
    m, d = X.shape
    Q = int(y.max()) + 1
    W = cp.Variable((d, Q))
    b = cp.Variable(Q) if bias else np.zeros(Q)
    H = X @ W + (cp.reshape(b, (1, Q), order="C") if bias else 0)
    own = np.eye(Q)[y].astype(bool)  # (m, Q): the own class of each example
    sign = np.where(own, 1.0, -1.0)
    if model in ("adm", "ats", "atm", "ova"):
        viol = 1 - cp.multiply(sign, H)  # absolute margin violations, all classes
        if model in ("ats", "ova"):
            loss = cp.sum(cp.pos(viol))
        elif model == "atm":
            loss = cp.sum(cp.pos(cp.max(viol, axis=1)))
        else:  # adm: the max over the wrong classes only
            loss = cp.sum(cp.pos(cp.max(viol + np.where(own, -1e3, 0.0), axis=1)))
    elif model == "mmr":
        loss = cp.sum(cp.pos(1 - cp.sum(cp.multiply(own, H), axis=1)))
    constraints = []
    if model in SUM_TO_ZERO:
        constraints.append(cp.sum(W, axis=1) == 0)
        if bias:
            constraints.append(cp.sum(b) == 0)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * loss), constraints)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, W.value


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", FAMILY)
def test_dual_optimum_equals_published_primal(model, bias):
    for seed, Q, C in [(0, 3, 1.0), (1, 4, 0.3), (2, 2, 5.0)]:
        X, y = blobs(seed, Q, 36, spread=2.5)
        problem = make_problem(model, X, y, kernel="linear", C=C, bias=bias)
        solution = get_solver("cvxpy").solve(problem)
        d = diagnose(problem, solution)
        value, W = _published_primal(model, X, y, C, bias)
        assert d.dual_objective == pytest.approx(value, rel=1e-7), (seed, d.dual_objective, value)
        # w_c = Σ_i β̄_ic x_i is unique (strictly convex in W).
        np.testing.assert_allclose(X.T @ problem.beta(solution.alpha), W, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
def test_mmr_equals_szedmak_formulation(bias):
    """Szedmak et al.: min ½‖W‖² + C' Σ ξ_i, ⟨ψ(y_i), W x_i + b⟩ ≥ 1 − ξ_i, ψ on a simplex.

    ψ(c) = a·Vᵀe_c with V an orthonormal basis of 1^⊥ and a² = Q/(Q−1), so that
    ⟨ψ(c), ψ(e)⟩ = 1 if c = e else −1/(Q−1).  With h_c = ⟨ψ(c), W x + b⟩ it is
    the MMR row at C = a²C', optimum a² times theirs, same scores.
    """
    for seed, Q, C_sz in [(3, 3, 1.0), (4, 5, 0.5)]:
        X, y = blobs(seed, Q, 40, spread=2.5)
        a2 = Q / (Q - 1)
        Psi = np.sqrt(a2) * np.linalg.svd(np.eye(Q) - 1.0 / Q)[0][:, : Q - 1]  # rows ψ(c)
        W = cp.Variable((X.shape[1], Q - 1))
        b = cp.Variable(Q - 1) if bias else np.zeros(Q - 1)
        out = X @ W + (cp.reshape(b, (1, Q - 1), order="C") if bias else 0)  # W x_i + b
        margins = cp.sum(cp.multiply(out, Psi[y]), axis=1)
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C_sz * cp.sum(cp.pos(1 - margins))))
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        problem = make_problem("mmr", X, y, kernel="linear", C=a2 * C_sz, bias=bias)
        solution = get_solver("osqp").solve(problem)
        d = diagnose(problem, solution)
        assert d.dual_objective == pytest.approx(a2 * prob.value, rel=1e-7)
        ours = problem.kernel.matmul(problem.beta(solution.alpha))
        np.testing.assert_allclose(ours, X @ W.value @ Psi.T, atol=1e-5)


# ------------------------------------------------- the two reference solvers agree
def _reference_solvers_agree(model, bias, kernel, cases):
    for name, X, y, C in cases:
        reference_solutions(make_problem(model, X, y, kernel=kernel, C=C, bias=bias), name)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", FAMILY)
def test_reference_solvers_agree_and_certify(model, bias, kernel):
    """cvxpy vs OSQP: (Q, C) = (2, 0.1), (3, 1), (5, 10) from the factory.

    Linear kernels at C = 10 (degenerate duals: OSQP stalls, the active-set
    polish then needs seconds) are left to the slow test; here C ≤ 1.
    """
    cases = generated_cases(9)[::4]
    if kernel == "linear":
        cases = [(name, X, y, min(C, 1.0)) for name, X, y, C in cases]
    _reference_solvers_agree(model, bias, kernel, cases)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("model", FAMILY)
def test_reference_solvers_agree_and_certify_all_cases(model, bias, kernel):
    """The same on all ten cases of the factory (100-200 s for the five rows on 2 cores)."""
    _reference_solvers_agree(model, bias, kernel, generated_cases(10))


# ----------------------------------------------------- independent binary SVMs
def test_ova_with_bias_is_one_svc_per_class():
    """OvA(C) with a bias = scikit-learn's one-vs-rest SVC(C), class by class."""
    for seed, Q, C in [(5, 3, 1.0), (6, 4, 10.0)]:
        X, y = blobs(seed, Q, 60, spread=3.0)
        X_test, _ = blobs(seed + 100, Q, 40, spread=3.0)
        problem = make_problem("ova", X, y, C=C, bias=True, gamma=GAMMA)
        solution = get_solver("cvxpy").solve(problem)
        d = diagnose(problem, solution)
        ovr = OneVsRestClassifier(SVC(C=C, gamma=GAMMA, tol=1e-10)).fit(X, y)
        K_test = rbf_kernel(X_test, X, gamma=GAMMA)
        ours = K_test @ problem.beta(solution.alpha)
        theirs = ovr.decision_function(X_test)
        intercepts = np.array([est.intercept_[0] for est in ovr.estimators_])
        # The kernel parts (unique w_c) agree always, the offsets where b is unique.
        np.testing.assert_allclose(ours, theirs - intercepts, rtol=1e-4, atol=1e-5)
        if d.b_method == "kkt":
            np.testing.assert_allclose(d.b, intercepts, rtol=1e-4, atol=1e-5)
        else:
            assert primal_objective(problem, solution.alpha, intercepts)[0] == pytest.approx(
                d.primal_objective, rel=1e-9)


def _bias_free_svm(K, t, C):
    """Training decision values of the bias-free binary SVM (labels t = ±1).

    Its dual is a box-constrained QP, min ½ αᵀ(tKt)α − Σα over 0 ≤ α ≤ C,
    solved here by L-BFGS-B: scipy only, nothing of msvm.
    """
    from scipy.optimize import minimize

    H = K * np.outer(t, t)
    res = minimize(lambda a: (0.5 * a @ H @ a - a.sum(), H @ a - 1), np.zeros(len(t)), jac=True,
                   method="L-BFGS-B", bounds=[(0, C)] * len(t),
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 100000})
    return K @ (t * res.x)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_ova_without_bias_is_one_bias_free_svm_per_class(kernel):
    """Bias-free OvA(C) = Q bias-free binary SVMs with C, class c against the rest.

    Linear kernel: liblinear's one-vs-rest hinge SVM without intercept; RBF
    (no bias-free kernel SVM in scikit-learn): the binary dual by L-BFGS-B.
    """
    X, y = blobs(7, 4, 60, spread=2.5)
    C = 1.0
    problem = make_problem("ova", X, y, kernel=kernel, C=C, gamma=GAMMA)
    solution = get_solver("cvxpy").solve(problem)
    ours = problem.scores(problem.beta(solution.alpha))
    if kernel == "linear":
        # A fixed order for liblinear's coordinate descent: a few of its random orders
        # stall at this tolerance until max_iter, some far from the optimum.
        svm = LinearSVC(C=C, loss="hinge", fit_intercept=False, tol=1e-12, max_iter=10**6,
                        random_state=0)
        theirs = svm.fit(X, y).decision_function(X)
        assert svm.n_iter_ < svm.max_iter, "the reference stopped at max_iter"
    else:
        K = problem.kernel.gram()
        theirs = np.stack([_bias_free_svm(K, np.where(y == c, 1.0, -1.0), C)
                           for c in range(4)], axis=1)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


#: Q = 2: (model, C_binary / C, (h_2 − h_1) / SVC decision)  (machines.py table).
TWO_CLASS = [("adm", 0.5, 2.0), ("atm", 0.5, 2.0), ("mmr", 0.5, 2.0), ("ats", 1.0, 2.0),
             ("ova", 1.0, 2.0)]


@pytest.mark.parametrize(("model", "factor", "ratio"), TWO_CLASS)
def test_two_classes_equal_svc(model, factor, ratio):
    for seed, C in [(0, 1.0), (1, 10.0), (2, 0.1)]:
        X, y = blobs(seed, 2, 60, spread=3.0)
        X_test, _ = blobs(seed + 100, 2, 40, spread=3.0)
        problem = make_problem(model, X, y, C=C, bias=True, gamma=GAMMA)
        solution = get_solver("osqp").solve(problem)
        d = diagnose(problem, solution)
        svc = SVC(C=factor * C, gamma=GAMMA, tol=1e-10).fit(X, y)
        theirs = ratio * svc.decision_function(X_test)
        K_test = rbf_kernel(X_test, X, gamma=GAMMA)
        beta = problem.beta(solution.alpha)
        kernel_part = K_test @ (beta[:, 1] - beta[:, 0])
        np.testing.assert_allclose(kernel_part, theirs - ratio * svc.intercept_[0], rtol=1e-4,
                                   atol=1e-5)
        if d.b_method == "kkt":
            assert d.b[1] - d.b[0] == pytest.approx(ratio * svc.intercept_[0], rel=1e-4, abs=1e-5)


def test_two_classes_without_bias_agree_across_rows():
    """Bias-free, Q = 2: ADM = ATM = MMR = LLW at C; ATS = OvA at C/2; twice WW at C/4.

    (All are the bias-free binary SVM with C/2 and h_2 − h_1 = 2f, except WW,
    h_2 − h_1 = f at C_binary = 2C.)  The binary SVM itself by L-BFGS-B.
    """
    X, y = blobs(9, 2, 60, spread=3.0)
    C = 2.0
    rows = [("adm", C, 1.0), ("atm", C, 1.0), ("mmr", C, 1.0), ("llw", C, 1.0),
            ("ats", C / 2, 1.0), ("ova", C / 2, 1.0), ("ww", C / 4, 2.0)]
    values = []
    for model, C_row, scale in rows:
        problem = make_problem(model, X, y, C=C_row, gamma=GAMMA)
        F = problem.scores(problem.beta(get_solver("osqp").solve(problem).alpha))
        values.append(scale * (F[:, 1] - F[:, 0]))
    binary = 2 * _bias_free_svm(rbf_kernel(X, X, gamma=GAMMA), 2.0 * y - 1, C / 2)
    for (model, _, _), v in zip(rows, values, strict=True):
        np.testing.assert_allclose(v, binary, atol=1e-5, err_msg=model)


# --------------------------------------------------------------- S2DO, estimator
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("model", FAMILY)
def test_s2do_reaches_the_reference_optimum(model, kernel):
    from msvm.solvers import s2do

    for name, X, y, C in generated_cases(10)[1::2]:
        if kernel == "linear":
            C = min(C, 1.0)  # degenerate linear duals at C = 10: see test_s2do.py
        problem = make_problem(model, X, y, kernel=kernel, C=C)
        reference = diagnose(problem, get_solver("cvxpy").solve(problem))
        for fast in (True, False):
            solution = s2do.solve(problem, tol=1e-6, cache_size=1.0, fast=fast)
            assert solution.status == "optimal", (name, solution.info)
            assert problem.check_feasible(solution.alpha, atol=1e-12), name
            d = diagnose(problem, solution)
            assert d.kkt_violation <= 1e-6, (name, d.kkt_violation)
            rel = abs(d.dual_objective - reference.dual_objective) / abs(reference.dual_objective)
            assert rel <= 1e-6, (name, fast, rel)


@pytest.mark.parametrize("model", FAMILY)
def test_estimator_fits_every_row(model):
    X, y = blobs(11, 3, 90, spread=2.0)
    labels = np.array(["a", "b", "c"])[y]
    for bias in (False, True):
        exact = MultiClassSVC(model=model, C=1.0, fit_intercept=bias, solver="cvxpy").fit(X, labels)
        assert exact.solution_["relative_gap"] <= 1e-6
        if not bias:
            fast = MultiClassSVC(model=model, C=1.0, tol=1e-6).fit(X, labels)
            assert fast.solution_["solver"] == "s2do"
            np.testing.assert_allclose(fast.decision_function(X), exact.decision_function(X),
                                       atol=1e-4)
        # h = Kβ + b with β of the table's own (centred) coefficients.
        h = exact.decision_function(X)
        if make_machine(model, 3).sum_to_zero:
            np.testing.assert_allclose(h.sum(axis=1), 0, atol=1e-8)


def test_every_row_is_registered():
    assert set(FAMILY) | {"ww", "cs", "llw", "msvm2"} == set(MACHINES)
