"""Online LaRank-style solver for the bias-free machines (seed 004, ch. 4 and 5).

One pass over the training set, pattern by pattern, keeping only the
support patterns: each new pattern gets a TWO_NEWS step (two of its own
variables), and an adaptive scheduler spends the rest of the budget on
TWO_OLD and TWO_OLD_SUPPORTS steps among the support patterns (Algorithm 7,
β = 0.05, η = 0.05, multipliers 1 for TWO_NEWS and Q for the old steps).
The working set of the old steps follows one of the three strategies of
§4.2.2 (``online_strategy``).  The loop runs in Cython without the GIL
(:mod:`msvm._core._online`, whose docstring describes the bookkeeping:
gradients stored for support patterns only, a kernel-row cache over the
support patterns bounded in MB, how patterns enter and leave); it shares
S2DO's gain and 2-D steps (:mod:`msvm._core._steps`).

``epochs``: 1 is seed 004's online ×1, 2 its ×2, and ``None`` its ×∞: passes
alternate with a *finishing* phase (S2DO_ALL steps on the support patterns
until none violates the KKT conditions by more than ``tol``) until a pass
over the whole training set takes no step at all.  Every pattern was then
checked against the final α, so the largest KKT violation over all
variables is ≤ ``tol``: the batch stopping criterion of BENCHMARKS.md, and
the status is ``"optimal"``.  After a finite number of epochs the status is
``"epoch_limit"``: an approximation by design, not a failure.

Streaming (:class:`OnlineStream`, used by
:meth:`msvm.MultiClassSVC.partial_fit`): every call feeds a chunk of new
patterns through TWO_NEWS (with the scheduler's old steps in between);
patterns that do not become support patterns are forgotten, so memory is
bounded by the support patterns plus the cache.

Randomness (visiting order, random patterns, step-type draws) comes from
``random_state`` only: the scheduler measures the cost of a step in
deterministic work units (kernel evaluations weighted by the cost of one,
gradient entries updated, gains evaluated) instead of wall-clock time, so a
run is reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from msvm._numbers import is_integer
from msvm._progress import SolverProgress
from msvm.kernels import KERNEL_CODES, Kernel, canonical_csr
from msvm.machines import Machine
from msvm.problem import DualProblem, DualSolution, label_codes
from msvm.solvers import TIME_SLICE, StallWatch, _qp, check_tol
from msvm.solvers._common import (
    BUDGET,
    STALLED,
    Clock,
    check_cache_size,
    check_trace,
    drive,
    iteration_budget,
    limit_blas_threads,
    machine_tables,
    warn_not_converged,
)
from msvm.solvers._curve import BuildUpCurve

SUPPORTS_BIAS = False
SUPPORTS_NO_BIAS = True
#: Estimator parameters honoured (see :mod:`msvm.solvers`).
OPTIONS = frozenset({"tol", "max_iter", "cache_size", "random_state", "online_strategy",
                     "epochs"})
STOPPING_RULE = "kkt_violation"
#: ``solve`` takes ``blas_threads`` (see :mod:`msvm.solvers`).
BLAS_THREADS = True

#: Working-set strategies of §4.2.2, by their ``online_strategy`` names.
STRATEGIES = ("s2do_all", "random_pattern_s2do_all", "random_pattern_s2do_pattern")
DEFAULT_STRATEGY = "s2do_all"

# Return codes of OnlineState.run_pass / finish beyond those of msvm.solvers._common.
_NO_MEMORY = 3
#: With ``epochs=None``, the active-set finish (``finish``) starts once the solver has taken
#: this many 2-D steps per variable without converging (:func:`msvm.solvers._qp.finish_after`).
FINISH_AFTER = 200
_DENSE, _SPARSE, _GRAM = 0, 1, 2


# ----------------------------------------------------------------- checks
def check_strategy(online_strategy) -> int:
    """Code of a strategy name (ValueError naming the valid ones)."""
    if not isinstance(online_strategy, str) or online_strategy.lower() not in STRATEGIES:
        raise ValueError(
            f"Unknown online_strategy {online_strategy!r}; expected one of {list(STRATEGIES)}."
        )
    return STRATEGIES.index(online_strategy.lower())


def check_epochs(epochs):
    """``epochs`` as a positive int, or None (ValueError otherwise)."""
    if epochs is None:
        return None
    if not is_integer(epochs) or epochs < 1:
        raise ValueError(
            f"epochs must be a positive integer or None (until the KKT conditions hold to "
            f"tol), got epochs={epochs!r}."
        )
    return int(epochs)


def _seed(rng: np.random.RandomState) -> int:
    return int(rng.randint(1, 2**62, dtype=np.int64))


# ------------------------------------------------------------- data layout
def _layout(kernel: Kernel):
    """(layout code, n_features, Gram matrix or None) of a kernel's training data."""
    if kernel.is_precomputed or callable(kernel.name):
        return _GRAM, 0, np.ascontiguousarray(kernel.gram(), dtype=np.float64)
    if sp.issparse(kernel.X):
        return _SPARSE, kernel.X.shape[1], None
    return _DENSE, kernel.X.shape[1], None


def _kcost(layout: int, X) -> float:
    """Work units of one kernel evaluation (≈ the cost of its dot product)."""
    if layout == _GRAM:
        return 2.0
    # Calibrated so that a work unit costs about the same time in every step type
    # (info["time_by_type"]; benchmarks/README.md gives the figures).
    if layout == _SPARSE:
        return 8.0 + 0.5 * X.nnz / max(X.shape[0], 1)
    return 8.0 + 0.125 * X.shape[1]


def batch_arrays(X, kernel_name: str | Callable[..., Any], gamma: float, degree: float,
                 coef0: float, gram: np.ndarray | None = None, rows=None) -> dict:
    """Features, norms and k(x, x) of a batch of patterns, as ``set_batch`` reads them."""
    out: dict[str, np.ndarray | None] = dict(X=None, data=None, indices=None, indptr=None)
    if gram is not None:
        rows = np.arange(gram.shape[0]) if rows is None else rows
        kd = np.ascontiguousarray(gram[rows, rows], dtype=np.float64)
        zeros = np.zeros(len(rows))
        out.update(sqnorm=zeros, l1norm=zeros, kdiag=kd)
        return out
    if sp.issparse(X):
        X = canonical_csr(X)
        out.update(data=X.data, indices=X.indices.astype(np.int32, copy=False),
                   indptr=X.indptr.astype(np.intp, copy=False))
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        l1 = np.asarray(abs(X).sum(axis=1)).ravel()
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        out["X"] = X
        sq = np.einsum("ij,ij->i", X, X)
        l1 = np.abs(X).sum(axis=1)
    if kernel_name == "linear":
        kd = sq.copy()
    elif kernel_name == "poly":
        kd = (gamma * sq + coef0) ** degree
    elif kernel_name == "sigmoid":
        kd = np.tanh(gamma * sq + coef0)
    else:
        kd = np.ones(X.shape[0])
    out.update(sqnorm=np.ascontiguousarray(sq, dtype=np.float64),
               l1norm=np.ascontiguousarray(l1, dtype=np.float64),
               kdiag=np.ascontiguousarray(kd, dtype=np.float64))
    return out


def new_state(machine: Machine, C: float, *, layout: int, n_features: int, kernel_name: str,
              gamma: float, degree: float, coef0: float, gram, n_gid: int, tol: float,
              strategy: int, cache_size: float, seed: int, kcost: float, fast: bool = True):
    """An empty :class:`~msvm._core._online.OnlineState` for ``machine`` at ``C``.

    ``C`` and the shift are those of an example of weight 1; each pattern's
    weight comes with its batch (``set_batch(..., weight=)``).
    """
    from msvm._core._online import OnlineState

    upper = C if machine.loss == "hinge" else np.inf
    return OnlineState(
        layout, int(n_features), KERNEL_CODES["precomputed" if layout == _GRAM else kernel_name],
        float(gamma), float(degree), float(coef0), gram, int(n_gid),
        C=float(upper), shift=float(machine.kernel_shift(C)), tol=float(tol),
        strategy=int(strategy), budget_mb=float(cache_size), seed=int(seed), kcost=float(kcost),
        **_tables(machine, fast),
    )


def _tables(machine: Machine, fast: bool) -> dict:
    """The machine tables (:func:`~msvm.solvers._common.machine_tables`) as ``OnlineState``
    takes them: the slot targets named ``gamma_t``."""
    tables = machine_tables(machine, fast=fast, max_shared_groups=1,
                            solver="the online solver ('online', partial_fit)")
    arrays = tables.shared()
    arrays["gamma_t"] = arrays.pop("gamma")
    return dict(arrays, fast=tables.fast, centred=tables.centred)


def _state_features(X):
    """Features of some patterns as ``OnlineState.restore`` takes them: a dense C array,
    or the CSR parts (data, int32 indices, indptr)."""
    if sp.issparse(X):
        csr = canonical_csr(X)
        return csr.data, csr.indices.astype(np.int32), csr.indptr.astype(np.intp)
    return np.ascontiguousarray(X, dtype=np.float64)


def _support_export(machine: Machine, C: float, exported: dict, *, gids, labels, alpha, weight,
                    K, arrays: dict, features, n_kernel_evaluations: int) -> dict:
    """``exported`` (an ``OnlineState.export()`` for ``machine`` at ``C``) with its support
    patterns replaced by the rows of ``alpha``: patterns ``gids`` with their ``labels``,
    ``weight``, kernel block ``K`` among them, :func:`batch_arrays` and features
    (:func:`_state_features`); their scores and gradients computed exactly."""
    labels = np.asarray(labels, dtype=np.intp)
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    nu = machine.nu * machine.active[:, :, None]
    beta = np.einsum("ip,ipc->ic", alpha, nu[labels])  # uncentred, as the state keeps it
    # Uncentred scores K'β, K' = K + diag(shift / w) (per-example shift, msvm.problem).
    F = K @ beta + (machine.kernel_shift(C) / weight)[:, None] * beta
    S = F.sum(axis=1)
    nubar = machine.nu_centered * machine.active[:, :, None]
    Fbar = F - S[:, None] / machine.n_classes if machine.sum_to_zero else F
    gam = np.where(machine.active, machine.gamma, 0.0)[labels]
    G = np.where(machine.active[labels], np.einsum("ipc,ic->ip", nubar[labels], Fbar) - gam,
                 0.0)
    return dict(
        exported, gids=np.asarray(gids, dtype=np.intp), labels=labels, alpha=alpha, beta=beta,
        G=G, F=F, S=S, features=features, kd=arrays["kdiag"], wt=weight, sq=arrays["sqnorm"],
        l1=arrays["l1norm"],
        J=float(0.5 * np.sum(np.einsum("ip,ip->", alpha, G + gam)) - np.sum(gam * alpha)),
        n_kernel_evaluations=int(n_kernel_evaluations),
    )


# ------------------------------------------------------------------ driving
def _drive(state, method: str, budget: list, slice_: float, tick) -> int:
    """Call ``state.run_pass`` or ``state.finish`` in time slices until it returns.

    ``budget[0]`` is the number of 2-D steps left (decremented); ``tick()`` is
    called after every slice (progress lines, curve points).  ``finish``, whose
    every step decreases J, stops with ``STALLED`` when J stops decreasing
    (:class:`~msvm.solvers.StallWatch`); a pass may visit many patterns that
    need no step, so it is not watched.
    """
    step = getattr(state, method)
    stall = StallWatch(lambda: state.J) if method == "finish" else None

    def run() -> int:
        before = state.n_steps
        code = step(max(budget[0], 0), slice_)
        budget[0] -= state.n_steps - before
        return code

    code = drive(run, lambda code: tick(), stall)
    if code == _NO_MEMORY:
        raise MemoryError("The online solver ran out of memory (support patterns or cache).")
    return code


def solve(problem: DualProblem, *, tol=None, max_iter=None, warm_start=None, verbose=False,
          cache_size: float = 200.0, online_strategy: str = DEFAULT_STRATEGY, epochs=1,
          random_state=None, trace: float | None = None, test_set=None,
          blas_threads: int | None = 1, keep_state: bool = False,
          fast: bool = True, block_steps: bool = True, lazy: bool = True,
          finish: bool = True) -> DualSolution:
    """Solve the bias-free dual with the online solver.

    Parameters
    ----------
    problem : DualProblem
        Must have ``fit_intercept=False``.
    tol : float, optional
        KKT tolerance in gradient units (default 1e-3): a pattern whose
        largest violation is ≤ tol gets no step, and with ``epochs=None`` the
        run stops when every violation is ≤ tol.
    max_iter : int, optional
        Cap on 2-D steps (status ``"max_iter"`` and a ConvergenceWarning).
    warm_start : ignored
        The online solver always starts from α = 0 (accepted for the common
        solver signature).
    verbose : bool
        Show the live progress line of :class:`msvm._progress.SolverProgress`
        (steps, epoch and patterns fed, support patterns, dual, time left) on
        stderr, at most once per second.
    cache_size : float
        Kernel-row cache budget in MB.  Rows are over the support patterns
        only, so the same budget holds more rows than a batch solver's.
    online_strategy : {'s2do_all', 'random_pattern_s2do_all', 'random_pattern_s2do_pattern'}
        Working-set strategy of the old steps (seed 004 §4.2.2).
    epochs : int or None
        Passes over the training set (1 = online ×1); None runs until the
        KKT conditions hold to ``tol`` (online ×∞).
    random_state : int, RandomState instance or None
        Seed of the visiting order, of the random patterns and of the
        step-type draws.  The same seed gives the same iterates.
    trace : float, optional
        Record a build-up curve point about every ``trace`` seconds of solver
        time (:class:`~msvm.solvers._curve.BuildUpCurve`) in ``info["curve"]``.
    test_set : (X_test, y_test), optional
        With ``trace``, also record the test error (labels coded 0 .. Q−1).
    blas_threads : int or None
        BLAS threads while the loop runs (default 1, as S2DO: kernel rows are
        small products).
    fast : bool
        Use S2DO's structured bookkeeping (uncentred scores, cached extremes
        with lazy rescans; O(n_sp · changed classes) per step) when the
        machine allows it (WW, CS, LLW, M-SVM²); ``False`` forces the generic
        bookkeeping (stored gradients, O(n_sp · P) per step) used for the
        other machines.  With ``block_steps=False`` the iterates are the same
        up to round-off.
    block_steps : bool
        With the fast bookkeeping, S2DO's block steps: after a 2-D step on
        two patterns, further steps inside those two (whose scores are kept
        exact) until their largest violation has fallen to a tenth of the
        first variable's, then one pass over the support patterns with the
        summed changes (:meth:`msvm._core._online.OnlineState._step`).
        ``False`` takes one step per pass, as seed 004's algorithm.
    lazy : bool
        With the fast bookkeeping, S2DO's lazy refresh: a support pattern
        whose violation, raised by the most a step can have moved it, stays
        well below the leader's keeps that upper bound and is rescanned only
        when the bound matters (``info["n_cold_visits"]``).  The first
        variable and the stopping test stay exact.
    finish : bool
        With ``epochs=None``, as S2DO's ``finish`` (:func:`msvm.solvers.s2do.solve`):
        on a small problem not solved after :data:`FINISH_AFTER` steps per
        variable (counting at least 500), the primal active-set method on the
        dense dual (:func:`~msvm.solvers._qp.finish`; its m² kernel values are
        counted); if it reaches its optimum, the solver's support patterns are
        rebuilt from its α and the passes go on from there, the next one
        certifying it (default).  ``info["finish_time"]`` is its time.
    keep_state : bool
        Put the solver's final state (support patterns, their gradients, the
        scheduler) in ``info["online_state"]`` so that a stream can continue
        it (:meth:`OnlineStream.from_export`, used by ``partial_fit`` after
        ``fit``).  Not for a precomputed kernel.

    Returns
    -------
    DualSolution
        ``scores`` is None (the solver knows the scores of its support
        patterns only); ``info`` holds the epochs run, the step counts per
        type, the final step rates, cache statistics and the curve.
    """
    if problem.fit_intercept:
        raise ValueError("Solver 'online' cannot handle a bias; use fit_intercept=False.")
    tol = check_tol(tol)
    strategy = check_strategy(online_strategy)
    epochs = check_epochs(epochs)
    cache_size = check_cache_size(cache_size)
    max_steps = iteration_budget(max_iter, problem.n_samples)
    check_trace(trace, test_set)
    rng = check_random_state(random_state)
    kernel = problem.kernel
    m = problem.n_samples
    layout, n_features, gram = _layout(kernel)
    curve = None if trace is None else BuildUpCurve(trace, kernel, test_set)
    clock = Clock(curve)
    kernel_name = "precomputed" if layout == _GRAM else kernel.name
    assert isinstance(kernel_name, str)  # a callable kernel has the Gram layout (_layout)

    def empty_state():
        """A state without support patterns, with the solve's switches."""
        fresh = new_state(
            problem.machine, problem.C, layout=layout, n_features=n_features,
            kernel_name=kernel_name, gamma=kernel.gamma,
            degree=kernel.degree, coef0=kernel.coef0, gram=gram, n_gid=m, tol=tol,
            strategy=strategy, cache_size=cache_size, seed=_seed(rng),
            kcost=_kcost(layout, kernel.X if layout != _GRAM else None), fast=bool(fast),
        )
        fresh.block_steps = fresh.fast and bool(block_steps)
        fresh.lazy_enabled = bool(lazy)
        return fresh

    state = empty_state()
    arrays = batch_arrays(None if layout == _GRAM else kernel.X, kernel.name, kernel.gamma,
                          kernel.degree, kernel.coef0, gram)
    y = np.ascontiguousarray(problem.y, dtype=np.intp)
    weight = np.ascontiguousarray(problem.sample_weight, dtype=np.float64)
    gids = np.arange(m, dtype=np.intp)
    budget = [max_steps]
    handover = _qp.Handover(problem, FINISH_AFTER, finish and epochs is None)
    epoch = 0
    phase = "pass"
    progress = SolverProgress("online", tol, enabled=verbose, unit="steps")

    def model():
        g, _, _, beta = state.support()
        keep = np.any(beta != 0, axis=1)
        points = g[keep] if layout == _GRAM else kernel.X[g[keep]]
        return points, beta[keep]

    def tick(force=False, final=False):
        now = clock()
        if curve is not None and (force or curve.due(now)) and not (
                force and curve.points and curve.points[-1]["n_iter"] == state.n_steps
                and curve.points[-1]["kernel_evaluations"] == state.n_kernel_evaluations):
            curve.record(now, state.n_kernel_evaluations, -state.J, state.n_steps,
                         model=model, epoch=epoch + (state.pos / max(m, 1) if phase == "pass"
                                                     else 0.0),
                         n_support_patterns=state.n_sp, phase=phase)
        if progress.due(final):
            # epochs=None runs to tol (progress by the violation); else the epochs are the work.
            done = epoch + (state.pos / max(m, 1) if phase == "pass" else 0.0)
            progress.report(state.n_steps, state.max_violation() if epochs is None else None,
                            dual=-state.J, final=final,
                            fraction=None if epochs is None else min(done / epochs, 1.0),
                            extra=f"epoch {epoch + 1} {phase} {state.pos}/{m}  support "
                                  f"patterns {state.n_sp}")

    def full_alpha() -> np.ndarray:
        gids_sp, _, alpha_sp, _ = state.support()
        alpha = problem.zeros()
        alpha[gids_sp] = alpha_sp
        return alpha

    def restart_from(alpha: np.ndarray):
        """A state whose support patterns are the examples with a non-zero row of α (the
        counters and the scheduler carried over from the current state)."""
        gids = np.flatnonzero(np.any(alpha != 0, axis=1))
        rows = None if layout == _GRAM else kernel.X[gids]
        exported = _support_export(
            problem.machine, problem.C, state.export(), gids=gids, labels=y[gids],
            alpha=alpha[gids], weight=weight[gids], K=kernel.gram(gids, gids),
            arrays=batch_arrays(rows, kernel.name, kernel.gamma, kernel.degree, kernel.coef0,
                                gram, rows=gids if layout == _GRAM else None),
            features=None if layout == _GRAM else _state_features(rows),
            n_kernel_evaluations=state.n_kernel_evaluations + len(gids) ** 2)
        fresh = empty_state()
        fresh.restore(exported)
        return fresh

    def run_phase(method: str) -> int | None:
        """``_drive(method)`` up to the active-set finish's step count; None when the
        finish replaced the state (the caller starts a new pass)."""
        nonlocal state
        left = [handover.cap(budget[0], state.n_steps)]
        before = left[0]
        code = _drive(state, method, left, slice_, tick)
        budget[0] -= before - left[0]
        if not handover.due(code, state.n_steps, max_steps):
            return code
        alpha = full_alpha()
        if handover.run(problem, alpha, tol, state.n_steps):
            state = restart_from(alpha)
            return None
        return run_phase(method)   # the loop goes on as it was

    slice_ = min(TIME_SLICE, np.inf if trace is None else float(trace))
    status = None
    best_J = np.inf
    if curve is not None:
        tick(force=True)
    with limit_blas_threads(blas_threads):
        while status is None:
            if epochs is not None and epoch >= epochs:
                status = "epoch_limit"
                break
            phase = "pass"
            state.set_batch(arrays["X"], arrays["data"], arrays["indices"], arrays["indptr"],
                            arrays["sqnorm"], arrays["l1norm"], arrays["kdiag"], y, gids,
                            rng.permutation(m).astype(np.intp), weight)
            code = run_phase("run_pass")
            if code is None:
                continue
            if code == BUDGET:
                status = "max_iter"
                break
            if curve is not None:
                tick(force=True)  # a point at the end of every epoch (epoch = 1.0, 2.0, ...)
            epoch += 1
            if epochs is None:
                if state.pass_steps == 0 and state.max_violation() <= tol:
                    status = "optimal"
                    break
                phase = "finish"
                code = run_phase("finish")
                if code is None:
                    continue
                if code in (BUDGET, STALLED) or not state.J < best_J:
                    # An epoch and a finish that did not decrease J: round-off decides.
                    status = "max_iter" if code == BUDGET else "stalled"
                    break
                best_J = state.J
    if curve is not None or verbose:
        tick(force=True, final=True)
    if status in ("max_iter", "stalled"):
        warn_not_converged("online", status, f"max_iter={max_steps} steps",
                           f"in epoch {epoch + 1} with a KKT violation of "
                           f"{state.max_violation():.3e} > tol={tol:g}")
    alpha = full_alpha()
    stats = state.stats()
    return DualSolution(
        alpha=alpha,
        b=np.zeros(problem.n_classes),
        status=status,
        n_iter=int(state.n_steps),
        time=clock(),
        n_kernel_evaluations=int(state.n_kernel_evaluations) + handover.kernel_evaluations,
        solver="online",
        scores=None,
        info={
            "epochs": epoch,
            "strategy": STRATEGIES[strategy],
            "dual_objective_running": float(-state.J),
            "finish_time": handover.time,
            "max_violation_support": float(state.max_violation()),
            **stats,
            **({"curve": curve.as_dict(), "curve_overhead": curve.overhead}
               if curve is not None else {}),
            **({"online_state": state.export()} if keep_state and layout != _GRAM else {}),
        },
    )


# ------------------------------------------------------------------ stream
class OnlineStream:
    """An online solver fed chunk by chunk (the engine of ``partial_fit``).

    Parameters
    ----------
    machine : Machine
        The machine for the final number of classes.
    C : float
        Soft-margin parameter.
    kernel : {'linear', 'poly', 'rbf', 'laplace', 'sigmoid'}
        Kernel name (a Gram matrix cannot be streamed).
    gamma, degree, coef0 : float
        Kernel parameters (γ resolved).
    n_features : int
        Features of every chunk.
    sparse : bool
        Whether chunks are CSR (the support patterns are then stored sparse).
    tol, online_strategy, cache_size, random_state :
        As in :func:`solve`.

    Notes
    -----
    Pattern indices count every pattern fed so far, from 0 at the first
    chunk.  The state can be pickled (the cache is rebuilt empty).
    """

    def __init__(self, machine: Machine, C: float, kernel: str, gamma: float, degree: float,
                 coef0: float, n_features: int, sparse: bool, *, tol: float = 1e-3,
                 online_strategy: str = DEFAULT_STRATEGY, cache_size: float = 200.0,
                 random_state=None):
        if kernel not in ("linear", "poly", "rbf", "laplace", "sigmoid"):
            raise ValueError(
                f"partial_fit streams feature vectors; kernel={kernel!r} is not supported "
                "(use 'linear', 'poly', 'rbf', 'laplace' or 'sigmoid')."
            )
        self.machine = machine
        self.C = float(C)
        self.kernel = kernel
        self.gamma = float(gamma)
        self.degree = float(degree)
        self.coef0 = float(coef0)
        self.n_features = int(n_features)
        self.sparse = bool(sparse)
        self.tol = float(tol)
        self.strategy = check_strategy(online_strategy)
        self.cache_size = float(cache_size)
        self.rng = check_random_state(random_state)
        self.n_seen = 0
        self.n_calls = 0
        self.time = 0.0
        self._kcost = 8.0 + 0.125 * n_features  # as _kcost for dense data
        self.state = self._new(_seed(self.rng))

    @classmethod
    def from_export(cls, exported: dict, machine: Machine, C: float, kernel: str, gamma: float,
                    degree: float, coef0: float, n_features: int, sparse: bool, *, tol: float,
                    online_strategy: str, cache_size: float, random_state, n_seen: int,
                    time: float = 0.0) -> OnlineStream:
        """A stream continuing the state of an online ``fit`` (``solve(keep_state=True)``)."""
        stream = cls(machine, C, kernel, gamma, degree, coef0, n_features, sparse, tol=tol,
                     online_strategy=online_strategy, cache_size=cache_size,
                     random_state=random_state)
        stream.state.restore(exported)
        stream.n_seen = int(n_seen)
        stream.n_calls = 1
        stream.time = float(time)
        return stream

    @classmethod
    def from_solution(cls, machine: Machine, C: float, kernel: str, gamma: float,
                      degree: float, coef0: float, features, labels: np.ndarray,
                      alpha: np.ndarray, gids: np.ndarray, *, tol: float,
                      online_strategy: str, cache_size: float, random_state, n_seen: int,
                      time: float = 0.0, weight: np.ndarray | None = None) -> OnlineStream:
        """A stream starting from a solution of any solver (its support patterns and α).

        The gradients of the support patterns are computed exactly, from the
        kernel block between them (n_SV² kernel evaluations, counted).
        ``weight``: the support patterns' example weights (None: all 1).
        """
        n_features = features.shape[1]
        sparse = sp.issparse(features)
        stream = cls(machine, C, kernel, gamma, degree, coef0, n_features, sparse, tol=tol,
                     online_strategy=online_strategy, cache_size=cache_size,
                     random_state=random_state)
        n = len(labels)
        exported = _support_export(
            machine, C, stream.state.export(), gids=gids, labels=labels, alpha=alpha,
            weight=np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64),
            K=Kernel(features, kernel, gamma=gamma, degree=degree, coef0=coef0).block(features),
            arrays=batch_arrays(features, kernel, gamma, degree, coef0),
            features=_state_features(features), n_kernel_evaluations=n * n)
        stream.state = stream._new(_seed(stream.rng))
        stream.state.restore(exported)
        stream.n_seen = int(n_seen)
        stream.n_calls = 1
        stream.time = float(time)
        return stream

    def reconfigure(self, *, tol: float, online_strategy: str, cache_size: float) -> None:
        """Continue with other algorithm settings (the support patterns and their state
        kept, the kernel cache rebuilt empty); nothing changes when they are the same."""
        strategy = check_strategy(online_strategy)
        if (float(tol), strategy, float(cache_size)) == (self.tol, self.strategy,
                                                         self.cache_size):
            return
        self.tol, self.strategy, self.cache_size = float(tol), strategy, float(cache_size)
        exported = self.state.export()
        self.state = self._new(exported["rng"])
        self.state.restore(exported)

    def _new(self, seed):
        return new_state(
            self.machine, self.C, layout=_SPARSE if self.sparse else _DENSE,
            n_features=self.n_features, kernel_name=self.kernel, gamma=self.gamma,
            degree=self.degree, coef0=self.coef0, gram=None, n_gid=0, tol=self.tol,
            strategy=self.strategy, cache_size=self.cache_size, seed=seed, kcost=self._kcost,
        )

    def feed(self, X, y, *, max_iter=None, verbose=False, sample_weight=None) -> str:
        """One pass over a chunk (patterns visited in a random order); the status.

        ``y`` is coded 0 .. Q−1; ``sample_weight`` (non-negative, one per row;
        None: all 1) weights the patterns' losses (:mod:`msvm.problem`); a
        pattern of weight 0 is skipped (it still counts in the pattern
        indices).  Returns ``"epoch_limit"`` (the chunk was
        fed) or ``"max_iter"`` (``max_iter`` steps were taken first; the rest
        of the chunk is dropped).  Interrupted (Ctrl-C), the patterns fed so far stay
        and the chunk's indices count as seen, as for ``"max_iter"``.
        """
        start = time.perf_counter()
        X, y, sample_weight = self._checked(X, y, sample_weight)
        n = X.shape[0]
        if sp.issparse(X) != self.sparse:
            X = sp.csr_matrix(X) if self.sparse else X.toarray()
        if self.sparse and self.n_calls == 0:
            self._kcost = 8.0 + 0.5 * X.nnz / max(n, 1)
            self.state.kcost = self._kcost
        gids = np.arange(self.n_seen, self.n_seen + n, dtype=np.intp)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            keep = np.flatnonzero(sample_weight > 0)
            if len(keep) < n:   # weight 0: no place in the problem (as in fit)
                X, y, gids, sample_weight = X[keep], np.asarray(y)[keep], gids[keep], \
                    sample_weight[keep]
        arrays = batch_arrays(X, self.kernel, self.gamma, self.degree, self.coef0)
        order = self.rng.permutation(len(gids)).astype(np.intp)
        self.state.set_batch(arrays["X"], arrays["data"], arrays["indices"], arrays["indptr"],
                             arrays["sqnorm"], arrays["l1norm"], arrays["kdiag"],
                             np.ascontiguousarray(y, dtype=np.intp), gids, order,
                             None if sample_weight is None
                             else np.ascontiguousarray(sample_weight, dtype=np.float64))
        budget = [np.iinfo(np.int64).max if max_iter is None else int(max_iter)]
        progress = SolverProgress("online", self.tol, enabled=verbose, unit="steps")

        def tick():
            if progress.due():
                progress.report(self.state.n_steps, None, dual=-self.state.J,
                                fraction=self.state.pos / max(n, 1),
                                extra=f"chunk {self.n_calls + 1} {self.state.pos}/{n}  "
                                      f"support patterns {self.state.n_sp}")

        try:
            with limit_blas_threads(1):
                code = _drive(self.state, "run_pass", budget, TIME_SLICE, tick)
        finally:
            # Counted even when interrupted (Ctrl-C): the patterns fed so far stay in the
            # state, and the next chunk's indices must not be theirs.
            progress.close()
            self.n_seen += n
            self.n_calls += 1
            self.time += time.perf_counter() - start
        return "max_iter" if code == BUDGET else "epoch_limit"

    def _checked(self, X, y, sample_weight):
        """A chunk checked against the stream: the compiled loop reads X's rows with the
        stream's feature count, and the tables by y's codes, without bounds checks (a
        chunk of other features or codes out of range read past their arrays)."""
        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X has shape {X.shape}; the stream's chunks have "
                             f"{self.n_features} features.")
        if not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
            raise ValueError("X contains NaN or infinity.")
        n = X.shape[0]
        y = label_codes(y, self.machine.n_classes)
        if len(y) != n:
            raise ValueError(f"X has {n} rows but y has {len(y)} labels.")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (n,) or not np.all(np.isfinite(sample_weight)) or \
                    np.any(sample_weight < 0):
                raise ValueError(f"sample_weight must hold {n} non-negative finite weights.")
        return X, y, sample_weight

    def support(self):
        """(indices, labels, α, β̄, features) of the support patterns.

        ``features`` is a dense (n_sp, d) array or a CSR matrix.
        """
        gids, labels, alpha, beta = self.state.support()
        feats = self.state.features()
        if self.sparse:
            data, indices, indptr = feats
            feats = sp.csr_matrix((data, indices, indptr), shape=(len(gids), self.n_features))
        return gids, labels, alpha, beta, feats

    def __getstate__(self):
        state = self.__dict__.copy()
        state["state"] = self.state.export()
        return state

    def __setstate__(self, state):
        exported = state.pop("state")
        self.__dict__.update(state)
        self.state = self._new(1)
        self.state.restore(exported)
