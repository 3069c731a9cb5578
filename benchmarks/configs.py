"""The standard configurations of ``../shared/BENCHMARKS.md``, in one table.

C is given in each machine's original formulation, γ is the RBF parameter
of k(x, x') = exp(−γ‖x − x'‖²), ``tol`` the largest KKT violation at the
stopping point; no bias unless a benchmark says so.  The γ values are the
published model-selection results for these sets (seed 004, Tables 4.2 and
5.1).
"""

from __future__ import annotations

from typing import NamedTuple


class Config(NamedTuple):
    """One row of BENCHMARKS.md's table of standard configurations."""

    dataset: str
    n_train: int | None   # the first n_train training examples (None: all)
    model: str
    C: float
    gamma: float
    tol: float
    cache_size: float     # MB


CONFIGS = {
    "usps-ww": Config("usps", None, "ww", 25.0, 0.0331574, 1e-3, 500),
    "usps-cs": Config("usps", None, "cs", 2.5, 0.0331574, 1e-3, 500),
    "usps-llw": Config("usps", None, "llw", 100 / 9, 0.0331574, 1e-3 / 9, 500),
    "letter-ww": Config("letter", None, "ww", 2.5, 0.0512821, 1e-3, 2000),
    "letter-cs": Config("letter", None, "cs", 2.5, 0.0512821, 1e-3, 2000),
    "letter-llw": Config("letter", None, "llw", 40.0, 0.0512821, 1e-3 / 25, 2000),
    "mnist10k-cs": Config("mnist", 10000, "cs", 25.0, 0.0378548, 1e-3, 1000),
    "mnist-cs": Config("mnist", None, "cs", 25.0, 0.0378548, 1e-3, 2000),
}

#: The peer ``SVC`` of BENCHMARKS.md: C = 10, the same γ, tol 1e-3 and cache size.
SVC_C = 10.0

#: The linear-kernel configurations of :mod:`benchmarks.bench_linear`: data set ->
#: (C, tol), C in msvm's (= liblinear's) convention for Crammer–Singer and one-vs-rest.
LINEAR_CONFIGS = {
    "mnist": (0.1, 1e-2),
    "dna": (0.1, 1e-2),
    "text": (1.0, 1e-2),
}
