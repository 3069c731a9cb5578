"""Progress of long work: a live line for the iterative solvers, a bar for model selection.

What this module reports goes to **stderr** (stdout stays free for results, e.g. ``msvm predict``
writing labels), at most once per :data:`INTERVAL` seconds plus a final report.
On a terminal (``stderr.isatty()``) the report is one line rewritten in place
with a carriage return; elsewhere (logs, pipes, CI) each report is a plain line.
Logging was not chosen: a library's progress should not depend on how the
application configured ``logging``, and a terminal line cannot be rewritten
through it.

:class:`SolverProgress`
    Used by the Python driver loops of the solvers
    (:mod:`msvm.solvers.s2do`, :mod:`~msvm.solvers.online`,
    :mod:`~msvm.solvers.frank_wolfe`, :mod:`~msvm.solvers.linear`) when
    ``verbose``: elapsed time, iterations, the largest KKT violation against
    its target (``tol``), the progress on a log scale from the first
    violation to the target, the dual objective, the cache hit rate and an
    estimate of the time left from the violation's trend.
:class:`ProgressBar`
    A count over known work: the grid points of
    :class:`~msvm.RadiusMarginSearch`, the retrained points of
    :func:`~msvm.loo_error`, the grid of ``msvm select``.
"""

from __future__ import annotations

import math
import sys
import time
import weakref

__all__ = ["INTERVAL", "ProgressBar", "SolverProgress", "end_open_lines"]

#: The lines being rewritten on a terminal (a report shown, the line not ended yet).
_OPEN: weakref.WeakSet = weakref.WeakSet()

#: Smallest time between two reports (seconds); the final report always shows.
INTERVAL = 1.0
_BAR = 20
# The time-left estimate fits the violation's trend over the last TREND_WINDOW
# fraction of the elapsed time (at least TREND_MIN seconds): recent behaviour, since
# the rate of an iterative solver changes as it goes.
TREND_WINDOW = 0.5
TREND_MIN = 5.0


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}:{sec:02d} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d} h"


def _bar(fraction: float) -> str:
    filled = int(round(_BAR * min(max(fraction, 0.0), 1.0)))
    return f"[{'#' * filled}{'-' * (_BAR - filled)}] {100 * fraction:3.0f}%"


class _Line:
    """One status line on a stream: rewritten in place on a TTY, else one line per report."""

    def __init__(self, stream=None):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self.width = 0

    def show(self, text: str, *, final: bool = False) -> None:
        if self.tty:
            # Pad with spaces over the end of a longer previous line.
            self.stream.write("\r" + text + " " * max(self.width - len(text), 0))
            self.width = len(text)
            _OPEN.add(self)
            if final:
                self.stream.write("\n")
                self.width = 0
                _OPEN.discard(self)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a line left open on a TTY (a report that was not final)."""
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0
        _OPEN.discard(self)


def end_open_lines() -> None:
    """End every progress line left open on a terminal, e.g. by a solve that Ctrl-C
    stopped between two reports, so that what is printed next starts a line of its own."""
    for line in list(_OPEN):
        try:
            line.close()
        except (OSError, ValueError):   # the terminal went away
            pass


class SolverProgress:
    """Live progress of an iterative solver whose stopping rule is violation ≤ target.

    Parameters
    ----------
    solver : str
        Name shown at the start of the line.
    tol : float
        The target of the violation (a report may pass its own ``target``,
        e.g. Frank–Wolfe's tol · |J|).
    enabled : bool
        Whether anything is shown (the solver's ``verbose``).
    unit : str
        What ``count`` counts (``'iter'``, ``'pass'``, ``'steps'``).
    stream : file-like, optional
        Default ``sys.stderr`` (looked up when the reporter is made).

    Notes
    -----
    Progress is log(v₀ / v) / log(v₀ / target), with v₀ the first violation
    reported and v the smallest so far: solvers of this kind reduce the
    violation geometrically, so equal steps of this measure take about equal
    time.  The time left extrapolates the slope of log v over the recent
    reports (least squares); it is shown as ``?`` while v does not decrease.
    """

    def __init__(self, solver: str, tol: float, *, enabled: bool, unit: str = "iter",
                 stream=None):
        self.solver, self.tol, self.enabled, self.unit = solver, float(tol), bool(enabled), unit
        self.start = time.perf_counter()
        self.last = -math.inf
        self.first: float | None = None
        self.best = math.inf
        self.history: list[tuple[float, float]] = []   # (seconds, log of the best violation)
        self.line = _Line(stream) if self.enabled else None

    def due(self, final: bool = False) -> bool:
        """Whether a report now would be shown (so the caller computes its numbers)."""
        return self.enabled and (final or time.perf_counter() - self.last >= INTERVAL)

    def fraction(self, violation: float, target: float) -> float:
        if not target > 0:   # e.g. tol · |J| at J = 0: no scale yet
            return 0.0
        if self.first is None or self.first <= target or violation <= target:
            return 1.0 if violation <= target else 0.0
        span = math.log(self.first / target)
        return min(max(math.log(self.first / max(violation, target)) / span, 0.0), 1.0)

    def eta(self, now: float, target: float) -> float:
        """Seconds until the best violation reaches ``target`` at its recent rate."""
        if not target > 0:
            return math.inf
        if self.best <= target:
            return 0.0
        window = max(TREND_MIN, TREND_WINDOW * now)
        points = [(t, v) for t, v in self.history if t >= now - window]
        if len(points) < 2:
            return math.inf
        n = len(points)
        mt = sum(t for t, _ in points) / n
        mv = sum(v for _, v in points) / n
        stt = sum((t - mt) ** 2 for t, _ in points)
        slope = sum((t - mt) * (v - mv) for t, v in points) / stt if stt > 0 else 0.0
        if not slope < 0:
            return math.inf
        return (math.log(self.best) - math.log(target)) / -slope

    def report(self, count: int, violation: float | None, *, target: float | None = None,
               dual: float | None = None, hits: int | None = None, misses: int | None = None,
               fraction: float | None = None, extra: str = "", final: bool = False) -> None:
        """Show one report (call when :meth:`due`).

        ``violation`` against ``target`` (default ``tol``) gives the progress
        and the time left; a solver whose work is known in advance (the
        online solver's epochs) passes ``fraction`` instead, and the time
        left is then proportional.
        """
        if not self.enabled:
            return
        now = time.perf_counter()
        self.last = now
        elapsed = now - self.start
        target = self.tol if target is None else float(target)
        parts = [f"{self.solver}", _duration(elapsed), f"{self.unit} {count}"]
        if violation is not None and math.isfinite(violation):
            if self.first is None and violation > 0:
                self.first = violation
            self.best = min(self.best, violation)
            if self.best > 0:
                self.history.append((elapsed, math.log(self.best)))
            parts.append(f"KKT {violation:.2e} / tol {target:.1e}")
        if fraction is None:
            fraction = self.fraction(self.best, target) if self.first is not None else 0.0
            left = self.eta(elapsed, target)
        else:
            left = elapsed * (1 - fraction) / fraction if fraction > 0 else math.inf
        parts.append(_bar(1.0 if final else fraction))
        if dual is not None:
            parts.append(f"dual {dual:.10g}")
        if hits is not None and misses is not None and hits + misses > 0:
            parts.append(f"cache {hits / (hits + misses):.1%}")
        if extra:
            parts.append(extra)
        parts.append("done" if final else f"ETA {_duration(left)}")
        assert self.line is not None  # enabled
        self.line.show("  ".join(parts), final=final)

    def close(self) -> None:
        """End the line (a no-op after a final report or when disabled)."""
        if self.line is not None:
            self.line.close()


class ProgressBar:
    """A bar over a known number of items (grid points, retrained points).

    Parameters
    ----------
    label : str
        Shown first (e.g. ``'RadiusMarginSearch'``).
    total : int
        Number of items.
    unit : str
        Their name (``'grid points'``).
    enabled : bool
    stream : file-like, optional
        Default ``sys.stderr``.
    """

    def __init__(self, label: str, total: int, unit: str, *, enabled: bool, stream=None):
        self.label, self.total, self.unit, self.enabled = label, int(total), unit, bool(enabled)
        self.count = 0
        self.start = time.perf_counter()
        self.last = -math.inf
        self.line = _Line(stream) if self.enabled else None

    def update(self, n: int = 1, note: str = "") -> None:
        """``n`` more items done; ``note`` describes the last one."""
        if not self.enabled:
            return
        self.count += int(n)
        now = time.perf_counter()
        final = self.count >= self.total
        # A plain log gets a line per item only when items are slower than INTERVAL.
        if not final and now - self.last < INTERVAL:
            return
        self.last = now
        elapsed = now - self.start
        fraction = self.count / self.total if self.total else 1.0
        left = elapsed * (1 - fraction) / fraction if fraction > 0 else math.inf
        text = (f"{self.label}  {_bar(fraction)}  {self.count}/{self.total} {self.unit}  "
                f"{_duration(elapsed)}  " + ("done" if final else f"ETA {_duration(left)}"))
        assert self.line is not None  # enabled
        self.line.show(text + (f"  {note}" if note else ""), final=final)

    def close(self) -> None:
        if self.line is not None:
            self.line.close()
