"""Build-up curves: what a solver has reached after how much time and how many kernel values.

Seed 004 (Figures 4.1-4.5, 5.1-5.3) compares online and batch solvers by
their *build-up curves*: test error and dual objective against training
time and against kernel evaluations.  :class:`BuildUpCurve` records those
points at fixed intervals for any solver that runs in slices (the online
solver and batch S2DO both do), so the curves of both come from the same
code.

Each point holds the solver's elapsed time, its kernel evaluations so far,
the dual objective D = −J (maximisation form, as everywhere in msvm), the
iterations and, when a test set is given, the test error of the current
model.  Evaluating the test error costs a kernel block between the test
points and the current support vectors; that time is measured and excluded
from the time axis (``elapsed`` is the solver's own time), and those kernel
values are not counted as the solver's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from msvm.kernels import Kernel

__all__ = ["BuildUpCurve"]

# Test rows whose kernel block is computed at once.
_CHUNK = 2048


class BuildUpCurve:
    """Points of a build-up curve, recorded about every ``interval`` seconds.

    Parameters
    ----------
    interval : float
        Seconds of solver time between two points (> 0).
    kernel : Kernel
        The training kernel (its name and parameters; a precomputed kernel
        reads the test rows as kernel values against the training points).
    test_set : (X_test, y_test) or None
        Test points (or, for a precomputed kernel, their (n_test, m) kernel
        rows) and their labels coded 0 .. Q−1 like the problem's.

    Attributes
    ----------
    overhead : float
        Wall-clock seconds spent recording (subtract it from the solver's time).
    """

    def __init__(self, interval: float, kernel: Kernel, test_set=None):
        if not (isinstance(interval, (int, float)) and interval > 0):
            raise ValueError(f"trace must be a positive number of seconds, got {interval!r}.")
        self.interval = float(interval)
        self.kernel = kernel
        self.test_set: tuple[Any, np.ndarray] | None = None
        if test_set is not None:
            # Checked here, not at the first curve point in the middle of the solve.
            if not isinstance(test_set, tuple | list) or len(test_set) != 2:
                raise ValueError("test_set must be a pair (X_test, y_test).")
            X_test, y_test = test_set
            y_test = np.asarray(y_test)
            columns = (kernel.n_samples if kernel.is_precomputed or callable(kernel.name)
                       else kernel.X.shape[1])
            if np.ndim(X_test) != 2 or X_test.shape[1] != columns:
                raise ValueError(f"test_set: X_test has shape {np.shape(X_test)}, expected "
                                 f"(n_test, {columns}) (the training points' "
                                 f"{'count' if columns == kernel.n_samples else 'features'}).")
            if X_test.shape[0] != y_test.shape[0]:
                raise ValueError("test_set: X_test and y_test differ in length.")
            self.test_set = (X_test, y_test)
        self.points: list[dict] = []
        self.overhead = 0.0
        self._next = 0.0

    def due(self, elapsed: float) -> bool:
        """Whether a point is due at ``elapsed`` seconds of solver time."""
        return elapsed >= self._next

    def record(self, elapsed: float, n_kernel_evaluations: int, dual: float, n_iter: int,
               model=None, **extra) -> None:
        """Add a point; ``model()`` returns (support-vector points or indices, β rows).

        ``model`` is called only when there is a test set: it returns the
        training points of the current support vectors (or, for a
        precomputed kernel, their indices) and their coefficient rows β̄.
        """
        t0 = time.perf_counter()
        point = {"time": float(elapsed), "kernel_evaluations": int(n_kernel_evaluations),
                 "dual": float(dual), "n_iter": int(n_iter), **extra}
        if self.test_set is not None and model is not None:
            point["test_error"] = self.test_error(*model())
        self.points.append(point)
        self._next = elapsed + self.interval
        self.overhead += time.perf_counter() - t0

    def test_error(self, sv, beta: np.ndarray) -> float:
        """Test error of h(x) = Σ_j β_j k(x_j, x) (argmax over classes)."""
        assert self.test_set is not None  # record() calls this only with a test set
        X_test, y_test = self.test_set
        n = X_test.shape[0]
        if n == 0:
            return float("nan")
        scores = np.zeros((n, beta.shape[1]))
        if beta.shape[0] > 0:
            k = self.kernel
            if k.is_precomputed or callable(k.name):
                scores = np.asarray(X_test[:, np.asarray(sv)] @ beta)
            else:
                sv_kernel = Kernel(sv, k.name, gamma=k.gamma, degree=k.degree, coef0=k.coef0)
                for begin in range(0, n, _CHUNK):
                    rows = slice(begin, min(begin + _CHUNK, n))
                    scores[rows] = sv_kernel.block(X_test[rows]) @ beta
        return float(np.mean(np.argmax(scores, axis=1) != y_test))

    def as_dict(self) -> dict:
        """Columns of the curve: {'time': [...], 'kernel_evaluations': [...], ...}."""
        keys: list[str] = []
        for point in self.points:
            keys.extend(k for k in point if k not in keys)
        return {k: [p.get(k) for p in self.points] for k in keys}
