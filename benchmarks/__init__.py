"""msvm's benchmarks: a package run from the repository root, one module per benchmark.

    python -m benchmarks.bench_s2do --help

Every benchmark follows ``../shared/BENCHMARKS.md`` (peers in the same run,
one JSON line per run, a CSV, a text summary and plots in ``results/``) and
takes ``--sparse`` to feed the solvers CSR input instead of dense arrays.
What they share:

* :mod:`benchmarks.configs`: the configurations of BENCHMARKS.md, standard
  and regime ones, in one table (and issue 21's target ratios);
* :mod:`benchmarks.data`: the one loader (dense or CSR, MNIST / 255,
  pendigits / 100);
* :mod:`benchmarks.runs`: a run in a fresh worker process (its own peak
  memory), the SVC peers (scikit-learn's and, with the optional group
  ``bench``, scikit-learn-intelex's), a process holding one core busy,
  test-set scores of a dual solution;
* :mod:`benchmarks.results`: the results writer (JSON lines, JSON, CSV), the
  header line of a summary and matplotlib for the plots.

The benchmarks: :mod:`~benchmarks.bench_regimes` (every regime -- kernel-bound,
step-bound, with a bias -- against both SVC peers, and the contention mode),
:mod:`~benchmarks.bench_s2do` (S2DO against SVC, dense and
CSR), :mod:`~benchmarks.bench_online` (online against batch),
:mod:`~benchmarks.bench_frank_wolfe` (step variants, working sets, with a
bias against SVC), :mod:`~benchmarks.bench_linear` (the linear solver
against liblinear), :mod:`~benchmarks.bench_bounds` (radius–margin model
selection against 5-fold CV) and :mod:`~benchmarks.bench_certify` (the cost
of the float64 certificate).
"""
