"""msvm's benchmarks: a package run from the repository root, one module per benchmark.

    python -m benchmarks.bench_s2do --help

Every benchmark follows ``../shared/BENCHMARKS.md`` (peers in the same run,
one JSON line per run, a CSV, a text summary and plots in ``results/``) and
takes ``--sparse`` to feed the solvers CSR input instead of dense arrays.
What they share:

* :mod:`benchmarks.configs`: the standard configurations of BENCHMARKS.md;
* :mod:`benchmarks.data`: the one loader (dense or CSR, MNIST / 255);
* :mod:`benchmarks.runs`: a run in a fresh worker process (its own peak
  memory), the SVC peer, test-set scores of a dual solution;
* :mod:`benchmarks.results`: the results writer (JSON lines, JSON, CSV), the
  header line of a summary and matplotlib for the plots.

The benchmarks: :mod:`~benchmarks.bench_s2do` (S2DO against SVC, dense and
CSR), :mod:`~benchmarks.bench_online` (online against batch),
:mod:`~benchmarks.bench_frank_wolfe` (step variants, working sets, with a
bias against SVC), :mod:`~benchmarks.bench_linear` (the linear solver
against liblinear), :mod:`~benchmarks.bench_bounds` (radius–margin model
selection against 5-fold CV) and :mod:`~benchmarks.bench_certify` (the cost
of the float64 certificate).
"""
