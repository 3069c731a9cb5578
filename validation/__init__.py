"""msvm's validation suite: every solver cross-checked on a matrix of small problems.

Run it from the repository root::

    python -m validation            # full matrix (see README.md), exit code 1 on any failure
    python -m validation --quick    # one small problem, every machine and solver

Modules: :mod:`validation.problems` (the seeded problem generators and the
real data sets), :mod:`validation.registry` (solvers, their references and
thresholds; one entry adds a solver), :mod:`validation.checks` (solve,
diagnose, judge).
"""

from validation.registry import SOLVERS, SolverEntry, Thresholds, register

__all__ = ["SOLVERS", "SolverEntry", "Thresholds", "register"]
