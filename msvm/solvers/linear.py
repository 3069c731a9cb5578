"""Linear-kernel solver: dual coordinate descent over examples with the primal W.

For ``kernel='linear'`` the scores are h(x) = W x with W = Σ_i β_i x_iᵀ
(Q × d), so a solver that keeps W needs no Gram row: visiting example i
costs O(nnz(x_i)·Q) to read its Q scores and to update W after a step.
Each visit optimises all the example's variables together, exactly (the
closed form of :mod:`msvm._core._linear` for WW, CS, LLW, M-SVM², ADM, OvA
and MMR, whose per-example Hessian is κ(I + ρ11ᵀ)‖x_i‖²; exact coordinate
steps to a tenth of ``tol`` for ATS and ATM), the examples in a random order
each pass, with shrinking; the run stops when the largest KKT violation, in
S2DO's gradient units, is ≤ ``tol`` (a full pass without a step), the rule
of :mod:`msvm.solvers.s2do` and BENCHMARKS.md.

This is the multi-class counterpart of liblinear's dual coordinate descent
(Hsieh et al. 2008) and of its Crammer–Singer solver, the sequential dual
method of Keerthi et al. (2008); msvm's CS with C is liblinear's (and
``LinearSVC(multi_class='crammer_singer', fit_intercept=False)``'s) with the
same C.

The M-SVM².  Its dual is the hard-margin LLW dual with the kernel
k + δ_ij/(2C); in the primal the diagonal term is a per-example quadratic
slack.  With W it costs nothing: the scores are F_i = W x_i + β_i/(2C)
(β_i, Q numbers per example, are kept beside W) and the example's Hessian is
(‖x_i‖² + 1/(2C)) M_y, so the M-SVM² is supported like the others.

Input: dense rows or CSR (the estimator passes CSR as is); the loop runs
without the GIL and returns to Python every ``time_slice`` seconds so that
Ctrl-C and ``verbose`` progress work on long runs.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from msvm._progress import SolverProgress
from msvm.kernels import canonical_csr
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import TIME_SLICE, StallWatch, _qp, check_tol
from msvm.solvers._common import (
    BUDGET,
    DONE,
    STALLED,
    STATUS,
    TIME_UP,
    Counters,
    check_trace,
    drive,
    iteration_budget,
    machine_tables,
    start_point,
    warn_not_converged,
)

SUPPORTS_BIAS = False
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "warm_start", "random_state"})
STOPPING_RULE = "kkt_violation"
#: ``solve`` takes no ``blas_threads``: its loop calls no BLAS (see :mod:`msvm.solvers`).
BLAS_THREADS = False
#: The active-set finish (``finish``) starts once the loop has made this many passes per
#: variable without converging (:func:`msvm.solvers._qp.finish_after`).
FINISH_AFTER = 10
#: The loop's counters reported in a solution's info (summed over the states of one solve).
_COUNTERS = ("n_iter", "n_steps", "n_visits", "n_inner", "n_unshrink", "n_slot_shrinks",
             "n_score_ops", "n_update_ops")


def _structure(problem: DualProblem, M: np.ndarray, group_size: np.ndarray):
    """Per class: the subproblem solver (1 exact, 0 iterative), κ_y and ρ_y.

    The exact solver needs M_y restricted to the active slots of class y to be
    κ(I + ρ11ᵀ) with κ > 0 and ρ·n > −1 (positive definite), and the slack
    groups of the class to be singletons, one group of every active slot, or
    absent (quadratic loss).
    """
    machine = problem.machine
    Q = machine.n_classes
    kind = np.zeros(Q, dtype=np.int32)
    kappa = np.ones(Q)
    rho = np.zeros(Q)
    for y in range(Q):
        slots = np.flatnonzero(machine.active[y])
        n = len(slots)
        if n == 0:
            kind[y] = 1
            continue
        block = M[y][np.ix_(slots, slots)]
        k = block[0, 0] - (block[0, 1] if n > 1 else 0.0)
        if not k > 1e-12:
            continue
        r = block[0, 1] / k if n > 1 else 0.0
        if not np.allclose(block, k * (np.eye(n) + r), rtol=0, atol=1e-12 * abs(k)):
            continue
        if not r * n > -1 + 1e-9:
            continue
        groups = group_size[y][group_size[y] > 0]
        if machine.loss == "hinge" and not (np.all(groups == 1) or
                                            (len(groups) == 1 and groups[0] == n)):
            continue
        kind[y], kappa[y], rho[y] = 1, k, r
    return kind, kappa, rho


def _rows(X):
    """(data or dense rows, indices, indptr) in the layout the Cython loop reads."""
    if sp.issparse(X):
        X = canonical_csr(X)   # sorted indices: the order of a dense row
        return (np.ascontiguousarray(X.data), np.ascontiguousarray(X.indices, dtype=np.int32),
                np.ascontiguousarray(X.indptr, dtype=np.intp))
    return (np.ascontiguousarray(X, dtype=np.float64), np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.intp))


def _seed(random_state) -> int:
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def coef_from_state(problem: DualProblem, Wt: np.ndarray) -> np.ndarray:
    """The centred W̄ (Q × d) of the estimator's ``coef_`` from the solver's uncentred Wᵀ.

    Centres ``Wt`` in place and returns its transpose (a view): the solver's
    last use of it, so that W̄ costs no second d × Q array.
    """
    if problem.machine.sum_to_zero:
        Wt -= Wt.mean(axis=1, keepdims=True)
    return Wt.T


def coef_sqnorm(problem: DualProblem, Wt: np.ndarray) -> float:
    """‖W̄‖² of the centred W̄ from the uncentred Wᵀ, without a d × Q temporary."""
    total = float(np.einsum("jc,jc->", Wt, Wt))
    if problem.machine.sum_to_zero:
        mean = Wt.mean(axis=1)
        total -= Wt.shape[1] * float(mean @ mean)
    return total


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          shrinking: bool = True, random_state=None, time_slice: float = 0.5,
          trace: float | None = None, finish: bool = True) -> DualSolution:
    """Solve the bias-free dual of a linear-kernel problem by dual coordinate descent.

    Parameters
    ----------
    problem : DualProblem
        ``fit_intercept=False`` and ``kernel='linear'`` (dense or CSR points).
    tol : float, optional
        Largest KKT violation at the solution, in gradient units (default 1e-3),
        as for :mod:`msvm.solvers.s2do`.
    max_iter : int, optional
        Cap on the passes over the working set (default: none); reaching it
        gives status ``"max_iter"`` and a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    warm_start : DualSolution or ndarray of shape (m, P), optional
        Starting point, made feasible as in :mod:`msvm.solvers.s2do` (W is
        built from it).
    verbose : bool
        Show the live progress line of :class:`msvm._progress.SolverProgress`
        (passes, violation, dual objective, working-set size, time left) on
        stderr, at most once per second.
    shrinking : bool
        Remove examples whose variables sit at bounds with their gradients
        pointing outwards from the passes and, for WW, CS and OvA, such
        variables from their example's list (a visit then reads only the
        score columns of the remaining ones); everything comes back before
        the final check.
    random_state : int, RandomState instance or None
        Seed of the visiting order (a fresh permutation each pass).
    time_slice : float
        Seconds the compiled loop runs before returning to Python (to check
        for signals and report progress); at most 0.5 is used.
    trace : float, optional
        Record ``(seconds, dual objective, largest violation of the last
        pass, passes)`` about every ``trace`` seconds, at the start and at
        the end, in ``info["trace"]`` (each point costs O(d·Q)).
    finish : bool
        As S2DO's ``finish`` (:func:`msvm.solvers.s2do.solve`): on a small
        problem not converged after :data:`FINISH_AFTER` passes per variable
        (counting at least 500), the primal active-set method on the dense
        dual (:func:`~msvm.solvers._qp.finish`; its m² kernel values are the
        solution's ``n_kernel_evaluations``), then the loop from its answer
        (default).  ``info["finish_time"]`` is its time.

    Returns
    -------
    DualSolution
        With ``info["coef"]``, the centred W̄ of shape (Q, d): the scores are
        h(x) = W̄ x, and W̄ equals ``dual_coef_.T @ support_vectors_``; and
        the work counts ``n_visits``, ``n_steps``, ``n_slot_shrinks``,
        ``n_score_ops`` (non-zeros × score columns read) and ``n_update_ops``
        (non-zeros × columns of W written, rebuilds included).
    """
    from msvm._core._linear import LinearState

    if problem.fit_intercept:
        raise ValueError("Solver 'linear' cannot handle a bias; use fit_intercept=False.")
    kernel = problem.kernel
    if callable(kernel.name) or kernel.name != "linear":
        name = "a callable" if callable(kernel.name) else repr(kernel.name)
        raise ValueError(f"Solver 'linear' needs kernel='linear' (it keeps the primal W); "
                         f"got kernel={name} with model={problem.machine.name!r}. "
                         "Use solver='s2do' for other kernels.")
    start = time.perf_counter()
    tol = check_tol(tol)
    if not (isinstance(time_slice, (int, float)) and time_slice > 0):
        raise ValueError(f"time_slice must be a positive number of seconds, got {time_slice!r}.")
    check_trace(trace)
    budget = iteration_budget(max_iter, problem.n_samples)
    alpha = start_point(problem, warm_start)
    X = kernel.X
    m, d = X.shape
    Q = problem.n_classes
    data, indices, indptr = _rows(X)
    sqnorm = np.zeros(m)   # filled by the state
    # A visit couples the variables of one example only: M's diagonal blocks M[y].
    tables = machine_tables(problem.machine, fast=False, full_M=False)
    M = tables.diagonal_blocks()
    kind, kappa, rho = _structure(problem, M, tables.group_size)
    shift = problem.kernel_shift   # (m,) per-example shift, zeros but for the M-SVM²
    has_shift = problem.has_shift
    Wt = np.zeros((d, Q))
    B = np.zeros((m, Q) if has_shift else (1, Q))

    def new_state():
        """The compiled loop's state from α (W and B rebuilt from it)."""
        Wt[:] = 0.0
        B[:] = 0.0
        return LinearState(
            data, indices, indptr, d, problem.y, alpha, Wt, B, sqnorm,
            M, tables.gamma, tables.active, tables.slack, tables.group_size,
            tables.nz_count, tables.nz_col, tables.nz_val, tables.nu_mean,
            kind, kappa, rho, problem.capacity, shift, tol,
            tables.centred, bool(shrinking), _seed(random_state),
        )

    state = new_state()
    counters = Counters(_COUNTERS)
    handover = _qp.Handover(problem, FINISH_AFTER, finish)
    points = []

    def dual() -> float:
        J = 0.5 * coef_sqnorm(problem, Wt) - float(np.sum(problem.targets * alpha))
        if has_shift:
            beta = B - B.mean(axis=1, keepdims=True) if problem.machine.sum_to_zero else B
            J += 0.5 * float(np.sum(shift[:, None] * beta * beta))
        return -J

    def count(name: str) -> int:
        """A counter of the loop, over every state it ran on."""
        return counters.total(state, name)

    def record():
        points.append((time.perf_counter() - start, dual(), float(state.last_pass_max),
                       count("n_iter")))

    slice_ = min(float(time_slice), TIME_SLICE)
    if trace is not None:
        slice_ = min(slice_, float(trace))
        record()
    last = {"trace": time.perf_counter()}
    progress = SolverProgress("linear", tol, enabled=verbose, unit="pass")

    def run() -> int:
        return state.run(max(handover.cap(budget - count("n_iter"), count("n_iter")), 0),
                         slice_)

    def to_finish(code: int) -> bool:
        return handover.due(code, count("n_iter"), budget)

    def after(code: int) -> None:
        now = time.perf_counter()
        final = code != TIME_UP and not to_finish(code)
        if trace is not None and (final or now - last["trace"] >= trace):
            last["trace"] = now
            record()
        if progress.due(final=final):
            progress.report(count("n_iter"), state.last_pass_max, dual=dual(),
                            final=final, extra=f"active {state.n_work}/{m}")

    code = drive(run, after, StallWatch(lambda: -dual()))
    if to_finish(code):
        if handover.run(problem, alpha, tol, count("n_iter")):
            # A new state on the finish's α; else the loop goes on as it was.
            counters.retire(state)
            state = new_state()
        code = drive(run, after, StallWatch(lambda: -dual()))
    progress.close()
    if code in (BUDGET, STALLED):
        warn_not_converged("linear", STATUS[code], f"max_iter={budget} passes",
                           f"with a KKT violation of {state.last_pass_max:.3e} > tol={tol:g}")
    W = coef_from_state(problem, Wt)
    scores = np.asarray(X @ W.T, dtype=np.float64)
    if has_shift:
        scores += shift[:, None] * problem.beta(alpha)
    return DualSolution(
        alpha=alpha,
        b=np.zeros(Q),
        status=STATUS[code],
        n_iter=count("n_iter"),
        time=time.perf_counter() - start,
        n_kernel_evaluations=handover.kernel_evaluations,
        solver="linear",
        scores=scores,
        info={
            "coef": W,
            "max_violation": float(state.last_pass_max if code == DONE else state.max_violation),
            "n_steps": count("n_steps"),
            "n_visits": count("n_visits"),
            "n_inner_steps": count("n_inner"),
            "n_unshrink": count("n_unshrink"),
            "n_slot_shrinks": count("n_slot_shrinks"),
            "n_score_ops": count("n_score_ops"),
            "n_update_ops": count("n_update_ops"),
            "finish_time": handover.time,
            "exact_subproblem": bool(np.all(kind == 1)),
            **({"trace": points} if trace is not None else {}),
        },
    )
