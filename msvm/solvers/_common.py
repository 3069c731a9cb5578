"""What the iterative solvers share: machine tables, starting point, option checks, driving.

The solver modules (:mod:`~msvm.solvers.s2do`, :mod:`~msvm.solvers.online`,
:mod:`~msvm.solvers.linear`, :mod:`~msvm.solvers.frank_wolfe`) differ in
their algorithms, not in the chores around them; each chore has one
implementation here, so that every solver does it the same way:

* :func:`machine_tables`: the machine's arrays in the layout the compiled
  loops read, built once, with every structural guard in one place;
* :func:`start_point`: the feasible α a run starts from (zeros or a warm
  start made feasible);
* option checks (:func:`iteration_budget`, :func:`check_cache_size`,
  :func:`check_trace`, :func:`n_threads`, :func:`float32`) raising the same
  ``ValueError`` for the same mistake;
* :func:`limit_blas_threads`: the BLAS thread limit while a compiled loop runs, and
  :func:`blas_limited`: a whole ``solve`` under it;
* :func:`drive`: the time-sliced call of a compiled loop, with the stall
  watch, and :data:`STATUS`: its return codes as the status names of
  :class:`~msvm.problem.DualSolution`; :class:`ContentionWatch`: a
  multi-threaded loop on one thread while other processes hold the cores;
* :func:`warn_not_converged`: the one ``ConvergenceWarning`` of a run that
  ended before its stopping rule held.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

import numpy as np

from msvm._numbers import is_integer, is_real
from msvm.machines import Machine
from msvm.problem import DualProblem, DualSolution
from msvm.solvers import TIME_SLICE, StallWatch, default_max_iter

_T = TypeVar("_T")

#: Return codes of the compiled loops' ``run`` methods (S2DO, online, linear):
#: stopping rule met, budget spent, time slice over (call again).
DONE, BUDGET, TIME_UP = 0, 1, 2
#: Set by :func:`drive` when the objective stopped improving; never returned by a
#: compiled loop (the online loop's 3 means out of memory).
STALLED = -1
#: Status of a :class:`~msvm.problem.DualSolution` for each final code.
STATUS = {DONE: "optimal", BUDGET: "max_iter", STALLED: "stalled"}

#: S2DO and the online solver read the (QP × QP) coupling table M whole up to this many
#: rows (8 MB) and otherwise compute the row they need from ν's non-zeros: the table
#: grows as Q⁴.
FULL_M_MAX_ROWS = 1024


def full_M_table(machine: Machine) -> bool:
    """Whether the solvers build the whole table M for ``machine`` (:data:`FULL_M_MAX_ROWS`)."""
    return machine.n_classes * machine.n_slots <= FULL_M_MAX_ROWS


# ----------------------------------------------------------- machine tables
@dataclass(frozen=True)
class MachineTables:
    """A machine's arrays in the layout the compiled solvers read (:func:`machine_tables`).

    Attributes
    ----------
    M : float64 (Q·P, Q·P) or None
        ν̄_{y,p}·ν̄_{z,q} of the active slots (ν̄ centred for sum-to-zero
        machines): H = M ⊗ K.  None when built with ``full_M=False``.
    Mdiag : float64 (Q, P)
        M's diagonal (also without the table).
    gamma : float64 (Q, P)
        γ_{y,p}, zero on inactive slots.
    active : uint8 (Q, P)
    slack : int32 (Q, P)
        Slack group of each active slot, −1 for inactive slots and for the
        quadratic loss (no upper bound).
    group_size : int32 (Q, max(R, 1))
        Active slots per slack group.
    nz_count, nz_col, nz_val : int32 (Q, P), int32 (Q, P, K), float64 (Q, P, K)
        The non-zeros of the uncentred ν of the active slots, per (class, slot),
        left-aligned; K is the most any (class, slot) has (2 for WW and CS).
    nu_mean : float64 (Q, P)
        mean_c ν_{y,p,c} for sum-to-zero machines (the gradient from
        uncentred scores), else zeros.
    nu_col_start, nu_col_row, nu_col_val : int32 (Q + 1), int32 (nnz), float64 (nnz)
        The same non-zeros by their last index c: the rows y·P + p with
        ν_{y,p,c} ≠ 0 and the values, ``[nu_col_start[c]:nu_col_start[c + 1]]``;
        the solvers compute a row of M from them when ``M`` is None.
    nubar : float64 (Q, P, Q)
        ν̄ on the active slots.
    centred : bool
        Whether the machine is sum-to-zero.
    fast : dict or None
        The fast path's tables (``u_cnt``, ``u_col``, ``u_val``, ``kappa``;
        :func:`machine_tables`), or None when the machine lacks its structure.
    """

    M: np.ndarray | None
    Mdiag: np.ndarray
    gamma: np.ndarray
    active: np.ndarray
    slack: np.ndarray
    group_size: np.ndarray
    nz_count: np.ndarray
    nz_col: np.ndarray
    nz_val: np.ndarray
    nu_mean: np.ndarray
    nu_col_start: np.ndarray
    nu_col_row: np.ndarray
    nu_col_val: np.ndarray
    nubar: np.ndarray
    centred: bool
    fast: dict | None

    def shared(self) -> dict:
        """The arrays every compiled solver takes, by the keyword names of its constructor."""
        return dict(M=self.M, Mdiag=self.Mdiag, gamma=self.gamma, active=self.active,
                    slack=self.slack, group_size=self.group_size, nz_count=self.nz_count,
                    nz_col=self.nz_col, nz_val=self.nz_val, nu_mean=self.nu_mean,
                    nu_col_start=self.nu_col_start, nu_col_row=self.nu_col_row,
                    nu_col_val=self.nu_col_val)

    def diagonal_blocks(self) -> np.ndarray:
        """M's per-class diagonal blocks M[y] = ν̄_y ν̄_yᵀ, shape (Q, P, P).

        Computed from ν̄ (O(Q P² Q)), so they need no full M (``full_M=False``).
        """
        return np.ascontiguousarray(np.einsum("ypc,yqc->ypq", self.nubar, self.nubar))


def machine_tables(machine: Machine, *, fast: bool = True,
                   max_shared_groups: int | None = None, solver: str = "this solver",
                   full_M: bool | None = None) -> MachineTables:
    """The machine's arrays for the compiled solvers, built once for all of them.

    Every table depends on the machine only (not on the data), so the
    online solver's stream, which has no :class:`~msvm.problem.DualProblem`,
    builds them the same way as a batch solve (``problem.machine``).

    Parameters
    ----------
    machine : Machine
    fast : bool
        Build the fast path's tables when the machine has its structure;
        False gives ``fast=None`` (the generic bookkeeping).
    max_shared_groups : int, optional
        Raise ``ValueError`` when a class has more slack groups shared by
        several slots than this (the online solver keeps one shared-group
        sum per pattern: ``max_shared_groups=1``).
    solver : str
        The solver named in that error.
    full_M : bool, optional
        Build the (QP × QP) table M.  False leaves ``M`` None, for a solver
        that needs only the diagonal blocks (:meth:`MachineTables.diagonal_blocks`)
        or computes M's rows itself (S2DO, the online solver): M has (QP)²
        entries, 6.25 million for Q = 50.  By default the table is built up to
        :data:`FULL_M_MAX_ROWS` rows (:func:`full_M_table`).

    Returns
    -------
    MachineTables

    Notes
    -----
    The guards, all here:

    * the fast path (cached per-example extremes of S2DO and of the online
      solver) needs every active slot s of class y to read ν_{y,s,·} =
      u_y − e_s (slot s compares class s with a per-class combination u_y:
      WW, CS, LLW, M-SVM²), the slack groups to be all singletons
      (sum-loss) or one group of every active slot (max-loss);
    * ``max_shared_groups`` (above).
    """
    Q, P = machine.n_classes, machine.n_slots
    active = machine.active
    nubar = _on_active_slots(machine.nu_centered, active)
    if full_M is None:
        full_M = full_M_table(machine)
    M = np.einsum("ypc,zqc->ypzq", nubar, nubar).reshape(Q * P, Q * P) if full_M else None
    slack = np.where(active, machine.slack, -1).astype(np.int32)
    if machine.loss != "hinge":
        slack[:] = -1
    group_size = machine.slack_group_sizes
    shared = (group_size > 1).sum(axis=1)
    if max_shared_groups is not None and np.any(shared > max_shared_groups):
        y = int(np.argmax(shared > max_shared_groups))
        raise ValueError(f"Machine {machine.name!r}: class {y} has {shared[y]} slack groups "
                         f"shared by several slots; {solver} handles at most "
                         f"{max_shared_groups} shared slack group(s) per class (solver "
                         "'s2do', 's2do_bias' or 'frank_wolfe' handle any).")
    nu = _on_active_slots(machine.nu, active)
    flat = nu.reshape(Q * P, Q)
    rows, cols = np.nonzero(flat)                       # by row, then by column
    nz_count, nz_col, nz_val = _nonzeros(flat, rows, cols)
    order = np.argsort(cols, kind="stable")             # the same non-zeros by column
    nu_mean = nu.mean(axis=2) if machine.sum_to_zero else np.zeros((Q, P))
    return MachineTables(
        M=None if M is None else np.ascontiguousarray(M),
        Mdiag=np.ascontiguousarray(np.einsum("ypc,ypc->yp", nubar, nubar) if M is None
                                   else np.diagonal(M).reshape(Q, P)),
        gamma=np.ascontiguousarray(np.where(active, machine.gamma, 0.0)),
        active=np.ascontiguousarray(active, dtype=np.uint8),
        slack=np.ascontiguousarray(slack),
        group_size=group_size,
        nz_count=nz_count.reshape(Q, P),
        nz_col=nz_col.reshape(Q, P, -1),
        nz_val=nz_val.reshape(Q, P, -1),
        nu_mean=np.ascontiguousarray(nu_mean),
        nu_col_start=np.searchsorted(cols[order], np.arange(Q + 1)).astype(np.int32),
        nu_col_row=rows[order].astype(np.int32),
        nu_col_val=flat[rows, cols][order],
        nubar=nubar,
        centred=bool(machine.sum_to_zero),
        fast=_fast_tables(machine, nu, group_size) if fast else None,
    )


def _on_active_slots(nu: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``nu`` (Q, P, Q) zeroed on the inactive slots, read-only: ``nu`` itself when it
    is zero there already (every built-in machine), which saves a Q³ copy."""
    if np.any(nu[~active]):
        nu = nu * active[:, :, None]
    out = np.ascontiguousarray(nu).view()
    out.flags.writeable = False
    return out


def _nonzeros(matrix: np.ndarray, row: np.ndarray,
              col: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``matrix``, the count of its non-zeros (``np.nonzero``'s ``row``, ``col``)
    and their columns and values in order, left-aligned and zero-padded to the most any
    row has (at least one)."""
    count = np.bincount(row, minlength=len(matrix))
    rank = np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count)
    cols = np.zeros((len(matrix), max(1, int(count.max(initial=0)))), dtype=np.int32)
    vals = np.zeros(cols.shape)
    cols[row, rank] = col
    vals[row, rank] = matrix[row, col]
    return count.astype(np.int32), cols, vals


def _fast_tables(machine: Machine, nu: np.ndarray, group_size: np.ndarray) -> dict | None:
    """(u_y, κ_y) of the fast path, or None when the machine lacks its structure."""
    Q, P = machine.n_classes, machine.n_slots
    if P != Q:
        return None
    eye = np.eye(Q)
    u = np.zeros((Q, Q))
    for y in range(Q):
        slots = np.flatnonzero(machine.active[y])
        if len(slots) == 0:
            continue
        rows = nu[y, slots] + eye[slots]
        if not np.allclose(rows, rows[0], rtol=0, atol=1e-15):
            return None
        u[y] = rows[0]
    if np.any(group_size > 1):
        n_active = machine.active.sum(axis=1)
        if group_size.shape[1] != 1 or np.any(group_size[:, 0] != n_active):
            return None
    u_cnt, u_col, u_val = _nonzeros(u, *np.nonzero(u))
    kappa = u.mean(axis=1) - 1.0 / Q if machine.sum_to_zero else np.zeros(Q)
    return dict(u_cnt=u_cnt, u_col=u_col, u_val=u_val,
                kappa=np.ascontiguousarray(kappa))


# ----------------------------------------------------------- starting point
def start_point(problem: DualProblem, warm_start) -> np.ndarray:
    """A feasible α to start from: zeros, or the warm start made feasible.

    A warm start of the wrong shape or not finite is a ``ValueError``.
    Negative entries are clipped, slack groups over their capacity C_i scaled back to it (the
    shape of a solution for a larger C is kept), for the M-SVM² (no upper bound) an
    example's α longer than any optimum's (:func:`optimum_radius`) scaled back to that
    length, and with a bias the result is projected onto the equality constraints too
    (:func:`msvm.diagnostics.project_feasible`).
    """
    if warm_start is None:
        return problem.zeros()
    alpha = warm_start.alpha if isinstance(warm_start, DualSolution) else warm_start
    alpha = np.array(alpha, dtype=np.float64, order="C")
    if alpha.shape != (problem.n_samples, problem.n_slots):
        raise ValueError(
            f"warm_start has shape {alpha.shape}, expected {(problem.n_samples, problem.n_slots)}."
        )
    if not np.all(np.isfinite(alpha)):
        # NaN would pass the clipping below and stop the solvers at once on NaN scores.
        raise ValueError("warm_start contains NaN or infinity; give a finite α (or None).")
    alpha = np.where(problem.active, np.maximum(alpha, 0.0), 0.0)
    if problem.machine.loss == "hinge":
        # Scale every over-full slack group back to its capacity (e.g. after decreasing C).
        sums = problem.group_sums(alpha)
        cap = problem.capacity[:, None]
        alpha = np.where(sums > cap, alpha * (cap / np.maximum(sums, 1e-300)), alpha)
    elif problem.has_shift:
        # Without the scaling, a start of α ~ 1e12 (a solution for a huge C) left the
        # running scores with round-off of ~1e-4 once α came down to the optimum: S2DO
        # stopped 'optimal' at a KKT violation of 1e-3 with tol=1e-9, Frank–Wolfe and
        # S2DO with a bias 'stalled'; from 1e300 the scores overflowed.
        radius = optimum_radius(problem)
        if radius is not None:
            top = alpha.max(axis=1, initial=0.0)
            norms = top * np.linalg.norm(alpha / np.maximum(top, 1e-300)[:, None], axis=1)
            over = norms > radius
            alpha[over] *= (radius[over] / norms[over])[:, None]
    if problem.fit_intercept:
        from msvm.diagnostics import project_feasible

        alpha = project_feasible(problem, alpha)
    return np.ascontiguousarray(alpha)


def optimum_radius(problem: DualProblem) -> np.ndarray | None:
    """(m,) bounds r_i ≥ ‖α*_i‖₂ on every optimum of a dual with a kernel shift (the
    M-SVM²), or None when the machine gives none.

    J(α) = ½ βᵀ(K + S)β − γᵀα with S = diag(s_i) and β_i = ν̄_{y_i}ᵀα_i, so with K
    positive semidefinite and μ the smallest eigenvalue of the blocks ν̄_y ν̄_yᵀ on the
    active slots (1/Q for the M-SVM²), J(α) ≥ Σ_i (½ s_i μ t_i² − g_i t_i) with
    t_i = ‖α_i‖ and g_i = ‖γ_i‖.  The optimum has J* ≤ J(0) = 0 (α = 0 is feasible,
    with or without a bias), and every term is at least −g_i² / (2 s_i μ); so with
    A = Σ_i g_i² / (2 s_i μ), ½ s_j μ t_j² − g_j t_j ≤ A, whose root bounds t_j.
    A start beyond it is scaled back (:func:`start_point`): that changes where a solver
    starts, never the problem.
    """
    s = problem.kernel_shift
    if not np.all(s > 0):
        return None
    active = problem.machine.active
    nu = np.where(active[:, :, None], problem.machine.nu_centered, 0.0)
    mu = np.inf
    for y in range(problem.n_classes):
        rows = nu[y, active[y]]
        if len(rows):
            mu = min(mu, float(np.linalg.eigvalsh(rows @ rows.T)[0]))
    if not (np.isfinite(mu) and mu > 1e-12):
        return None
    g = np.linalg.norm(np.where(problem.active, problem.targets, 0.0), axis=1)
    A = float(np.sum(g**2 / (2.0 * s * mu)))
    radius = (g + np.sqrt(g**2 + 2.0 * s * mu * A)) / (s * mu)
    return radius if np.all(np.isfinite(radius)) else None


# ------------------------------------------------------------ option checks
def iteration_budget(max_iter, n_samples: int) -> int:
    """``max_iter`` checked (a positive integer or None), None replaced by the default budget."""
    if max_iter is None:
        return default_max_iter(n_samples)
    if not is_integer(max_iter) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer or None, got {max_iter!r}.")
    return int(max_iter)


def check_cache_size(cache_size) -> float:
    """``cache_size`` as a positive number of MB (ValueError otherwise)."""
    if not is_real(cache_size) or not cache_size > 0:
        raise ValueError(f"cache_size must be a positive number of MB, got {cache_size!r}.")
    return float(cache_size)


def check_trace(trace, test_set=None) -> None:
    """``trace`` is None or a positive number of seconds; ``test_set`` needs ``trace``."""
    if trace is not None and not (is_real(trace) and trace > 0):
        raise ValueError(f"trace must be a positive number of seconds, got {trace!r}.")
    if test_set is not None and trace is None:
        raise ValueError("test_set needs trace (the interval of the curve points).")


def n_threads(n_jobs) -> int:
    """Threads for ``n_jobs`` (joblib's convention: None → 1, −1 → all cores).

    More than one thread is capped by the OpenMP runtime's limit, as read by
    ``threadpoolctl``: ``OMP_NUM_THREADS``, ``threadpool_limits(…,
    user_api="openmp")`` and joblib's limit on the threads of its worker
    processes (``inner_max_num_threads``, by default cores / workers) then
    hold for msvm's solver threads too, so that ``GridSearchCV(n_jobs=2)``
    over ``MultiClassSVC(n_jobs=2)`` does not run four threads on two cores.
    """
    from joblib import effective_n_jobs

    if n_jobs is not None and (not is_integer(n_jobs) or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}.")
    threads = max(1, int(effective_n_jobs(n_jobs)))
    if threads > 1:
        limits = [lib["num_threads"] for lib in
                  thread_pools().select(user_api="openmp").info()]
        threads = min([threads, *limits])
    return max(threads, 1)


@functools.cache
def thread_pools():
    """The process's ``threadpoolctl.ThreadpoolController``, made once.

    Making one scans every loaded library (milliseconds, several times per fit
    otherwise).  It is made after msvm's compiled modules are loaded, so it
    holds the OpenMP runtime and the BLAS libraries the solvers call (scipy's
    for the Gram rows, numpy's for the Python-level products); its limits and
    thread counts are read and set live.
    """
    from threadpoolctl import ThreadpoolController

    import msvm._core._s2do  # noqa: F401  (loads the OpenMP runtime and scipy's BLAS)

    return ThreadpoolController()


def float32(cache_dtype) -> bool:
    """Whether ``cache_dtype`` asks for single-precision Gram rows."""
    if cache_dtype in ("float64", np.float64):
        return False
    if cache_dtype in ("float32", np.float32):
        return True
    raise ValueError(f"cache_dtype must be 'float64' or 'float32', got {cache_dtype!r}.")


# ------------------------------------------------------------------ driving
class _BlasLimit:
    """The process's BLAS limit while any thread is inside :func:`limit_blas_threads`.

    BLAS thread counts are global to the process.  Nested naively, limits
    entered and left by several threads at once (fits or predictions in a
    thread pool) restore each other's saved counts and can leave BLAS at one
    thread for good; counted, the first to enter sets the limit and the last
    to leave restores the counts from before.
    """

    lock = threading.Lock()
    users = 0
    limiter: Any | None = None  # a threadpoolctl limiter while users > 0

    @classmethod
    def enter(cls, n: int) -> None:
        with cls.lock:
            if cls.users == 0:
                cls.limiter = _as_controller(lambda: thread_pools().limit(limits=n,
                                                                          user_api="blas"))
            cls.users += 1

    @classmethod
    def leave(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users == 0:
                limiter = cls.limiter
                assert limiter is not None  # set by the first enter()
                _as_controller(limiter.restore_original_limits)
                cls.limiter = None


def _as_controller(change: Callable[[], _T]) -> _T:
    """``change()`` made by this thread whichever thread changed the limits last.

    threadpoolctl (3.8 and later) lets one thread at a time change OpenBLAS's
    process-wide thread count, silently ignoring the others; :class:`_BlasLimit`
    may set the limit in one thread and restore it in another.
    """
    import threadpoolctl

    release = getattr(getattr(threadpoolctl, "OpenBLASController", None),
                      "clear_controlling_thread", None)
    if release is None:
        return change()
    release(force=True)
    try:
        return change()
    finally:
        release(force=True)


@contextmanager
def limit_blas_threads(n: int | None):
    """Limit the BLAS library to ``n`` threads inside the block (None: leave it).

    A compiled loop's BLAS calls are small (one Gram row, one dgemv of m × d):
    BLAS worker threads would busy-wait between them on the core the loop
    needs, so the solvers run with one BLAS thread by default.  Blocks that
    overlap in several threads share the limit of the first (:class:`_BlasLimit`).
    """
    if n is None:
        yield
        return
    if not is_integer(n) or n < 1:
        # (int() made 1.5 one thread; 0 or −5 went to the BLAS library as they were.)
        raise ValueError(f"blas_threads must be a positive integer or None, got {n!r}.")
    _BlasLimit.enter(int(n))
    try:
        yield
    finally:
        _BlasLimit.leave()


def blas_limited(solve: Callable[..., _T]) -> Callable[..., _T]:
    """``solve`` run as a whole under its ``blas_threads`` limit (:func:`limit_blas_threads`).

    For a solver whose Python-level work between compiled loops calls BLAS
    (``s2do_bias``'s checks and repairs between its inner solves): after a
    multi-threaded call OpenBLAS's idle threads busy-wait for a while, on the
    cores that the next loop's threads need.
    """
    default = inspect.signature(solve).parameters["blas_threads"].default

    @functools.wraps(solve)
    def limited(*args, **kwargs):
        with limit_blas_threads(kwargs.get("blas_threads", default)):
            return solve(*args, **kwargs)

    return limited


#: The code of :func:`blas_limited`'s wrappers, one for all: frames that
#: :func:`warn_not_converged` skips.
_LIMITED = blas_limited(lambda *, blas_threads=None: None).__code__


def drive(run: Callable[[], int], after: Callable[[int], None] | None = None,
          stall: StallWatch | None = None) -> int:
    """Run a compiled loop in time slices until it stops; its final code.

    ``run()`` runs one slice and returns the loop's code; ``after(code)`` is
    called after every slice (curve points, progress lines).  While the code
    is :data:`TIME_UP`, the loop goes on unless ``stall`` says the objective
    stopped improving: then the result is :data:`STALLED`.
    """
    while True:
        code = run()
        if after is not None:
            after(code)
        if code != TIME_UP:
            return code
        if stall is not None and stall.stalled():
            return STALLED


class ContentionWatch:
    """Run a multi-threaded compiled loop on one thread while other processes hold the cores.

    The threads of a compiled loop meet at a barrier every few tens of
    microseconds; when another process holds a core, the thread that is not
    scheduled stalls its partners at every barrier for a whole time slice of
    the scheduler, and two threads run slower than one.  The loop's own
    timing of one thread against all (S2DO's ``_tune``) cannot see this
    reliably: its two windows fall in different phases of the run.  The
    kernel can (Linux ``/proc``), and the watch asks it at the start and
    between time slices (:func:`drive`):

    * the loop starts on all its threads if enough cores are free, else on
      one: the machine's cores less this thread's and one per task of
      another process running now (``/proc/stat``'s ``procs_running`` less
      this process's running threads).  A reading that finds too few is
      taken again, up to READINGS times READING_PAUSE seconds apart, and the
      most free cores count: a task that runs for a moment (a kernel worker)
      does not hold a core;
    * after a slice on one thread, it takes all threads once enough cores are
      free;
    * after a slice on all threads, it goes back to one thread when its
      threads waited for a CPU (``/proc/self/task/*/schedstat``: run-queue
      delay) more than ``CONTENDED`` of the slice's wall-clock time.

    (The cores' idle time in ``/proc/stat``, read over a first short slice,
    was the earlier test: on virtual machines it can stay unchanged for tens of
    milliseconds while a core is idle, and the loop then stayed on one thread.)
    The iterates do not depend on the number of threads, only the speed does.
    Without ``/proc`` (other systems) the watch does nothing.

    Parameters
    ----------
    threads : int
        The loop's threads when the cores are free.
    set_threads : callable
        ``set_threads(n)`` makes the loop run on ``n`` threads from its next step.
    slice_length : float
        Seconds of a time slice.
    """

    CONTENDED = 0.2
    READINGS = 3
    READING_PAUSE = 0.002

    def __init__(self, threads: int, set_threads: Callable[[int], None], slice_length: float):
        self.threads = threads
        self.set_threads = set_threads
        self.slice_length = slice_length
        free = self._free_at_start() if threads > 1 else None
        self.enabled = free is not None and self._waited() is not None
        self.serial = self.enabled and free is not None and free < threads - 1
        self.n_serial = 0                         # times the loop went down to one thread
        if self.serial:
            set_threads(1)
        self._start()

    def _free_at_start(self) -> int | None:
        """Free cores at the start: the most of up to READINGS readings (None: not
        available)."""
        free = self._free_cores()
        for _ in range(self.READINGS - 1):
            if free is None or free >= self.threads - 1:
                break
            time.sleep(self.READING_PAUSE)
            again = self._free_cores()
            free = None if again is None else max(free, again)
        return free

    @staticmethod
    def _waited() -> float | None:
        """Seconds the process's threads have waited for a CPU (None: not available)."""
        total = 0
        try:
            for task in os.scandir("/proc/self/task"):
                with open(os.path.join(task.path, "schedstat")) as f:
                    total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None
        return total * 1e-9

    @staticmethod
    def _free_cores() -> int | None:
        """Cores that no other process's task is running on now, besides this thread's
        (None: not available).  This process's other threads do not count: idle
        OpenMP or BLAS workers may still be spinning after their last task."""
        try:
            own = 0
            for task in os.scandir("/proc/self/task"):
                with open(os.path.join(task.path, "stat")) as f:
                    own += f.read().rpartition(")")[2].split()[0] == "R"
            with open("/proc/stat") as f:
                running = next(int(line.split()[1]) for line in f
                               if line.startswith("procs_running"))
        except (OSError, ValueError, IndexError, StopIteration):
            return None
        return (os.cpu_count() or 1) - 1 - max(running - own, 0)

    def _start(self) -> None:
        self.t0 = time.perf_counter()
        if self.enabled and not self.serial:
            self.mark = self._waited()

    def after_slice(self) -> None:
        """Measure the slice that ended and choose the threads of the next one."""
        if not self.enabled:
            return
        wall = time.perf_counter() - self.t0
        if self.serial:
            free = self._free_cores()
            if free is not None and free >= self.threads - 1:
                self.serial = False
                self.set_threads(self.threads)
        else:
            waited = self._waited()
            # (No reading at the slice's start or end, a thread gone in between: no change.)
            if (waited is not None and self.mark is not None
                    and waited - self.mark > self.CONTENDED * wall):
                self.serial = True
                self.n_serial += 1
                self.set_threads(1)
        self._start()


#: Dense data with fewer features get their Gram matrix from the solver's requests
#: and one completion, not up front (:func:`fill_gram`).
FILL_FEATURES = 64


def fill_gram(cache, threads: int, prefetch: bool = True, watch: bool = True) -> int:
    """Every Gram row up front when the cache can hold them all, nothing else was
    computed yet and the data have at least FILL_FEATURES features
    (:meth:`~msvm._core._kernel_cache.KernelCache.fill`: half the kernel values, by
    symmetry), in time slices so that Ctrl-C lands in between; with ``watch``, on
    one thread while other processes hold the cores, as the solvers' loops
    (:class:`ContentionWatch`).  The cache is left on ``threads`` threads.
    Nothing without ``prefetch`` (the S2DO solvers' switch of that name).

    With fewer features a row costs about its ``exp`` and its memory however it is
    computed, and where few examples end as support vectors the solver asks for a
    minority of the rows: they are then computed on request, and the rest at once
    when half of them are cached (:meth:`~msvm._core._kernel_cache.KernelCache.complete`).

    Returns
    -------
    int
        The number of cached rows at which the solver should complete the matrix
        (its ``complete_at``), or 0: filled now, or the cache cannot be filled.
    """
    if not prefetch:
        return 0
    if cache.fillable and cache.n_features < FILL_FEATURES:
        return cache.n_samples // 2
    if cache.fillable:
        contention = ContentionWatch(threads if watch else 1,
                                     lambda n: setattr(cache, "n_threads", n), TIME_SLICE)
        while not cache.fill(contention.slice_length) and cache.fillable:
            contention.after_slice()
    cache.n_threads = threads
    return 0


class Counters:
    """A compiled loop's counters summed over the states of one solve: the active-set
    finish (:func:`msvm.solvers._qp.finish`) replaces the state, whose counts then
    start again from zero."""

    def __init__(self, names):
        self.retired = dict.fromkeys(names, 0)

    def retire(self, state) -> None:
        """Add the counts of ``state``, about to be replaced."""
        for name in self.retired:
            self.retired[name] += getattr(state, name)

    def total(self, state, name: str) -> int:
        """Counter ``name`` over the retired states and ``state``, the current one."""
        return int(self.retired[name] + getattr(state, name))


class Clock:
    """Solver time: wall-clock seconds since creation minus the time spent on curve points.

    ``curve`` is a :class:`~msvm.solvers._curve.BuildUpCurve` (its
    ``overhead``: the seconds spent evaluating test errors) or None.
    """

    def __init__(self, curve=None):
        self.start = time.perf_counter()
        self.curve = curve

    def __call__(self) -> float:
        spent = self.curve.overhead if self.curve is not None else 0.0
        return time.perf_counter() - self.start - spent


def warn_not_converged(solver: str, status: str, budget: str, shortfall: str) -> None:
    """The ``ConvergenceWarning`` of a run that ended with status 'max_iter' or 'stalled'.

    ``budget`` is the cap as the solver counts it (``"max_iter=7
    iterations"``), ``shortfall`` what was left (``"with a KKT violation of
    1.2e-03 > tol=0.001"``).  Raised at the caller of the solver's ``solve``.
    """
    from sklearn.exceptions import ConvergenceWarning

    reason = (f"at {budget}" if status == "max_iter" else
              "when its dual objective stopped increasing (progress below round-off)")
    level = 3
    frame: FrameType | None = sys._getframe(2)  # the caller of solve, past blas_limited's wrapper
    while frame is not None and frame.f_code is _LIMITED:
        level, frame = level + 1, frame.f_back
    warnings.warn(f"{solver} stopped {reason} {shortfall}.", ConvergenceWarning,
                  stacklevel=level)
