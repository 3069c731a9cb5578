"""Why step-bound problems need many 2-D steps: the kernel's constant part and LLW's size.

Issue 21, items 2 and 3: the measurements behind the analysis in
``benchmarks/README.md`` ("Where the steps go").  Counts, not times, so the
figures do not depend on the machine's load; each part writes its rows to
``results/<tag>.jsonl`` and a summary to ``results/<tag>.txt``.

* ``kernel`` -- per configuration, on 2 000 training points drawn at random
  (seed 0): the mean off-diagonal kernel value k̄ and the share of the
  largest eigenvalue in the trace of K.  With K ≈ k̄·11ᵀ + K̃ the dual is
  J(α; K̃) + (k̄/2)‖Aα‖², A the class totals of the bias constraints: a
  large k̄ acts as a stiff, soft version of the bias equalities, which every
  2-D step disturbs for every example.
* ``offset`` -- S2DO on kernel k + c for c in ``--offsets`` (a constant added
  to every Gram entry, as msvm's ``s2do_bias`` does): passes and 2-D steps
  grow with c on the same data, which isolates the effect of k̄.
* ``structure`` -- WW against LLW on the same data (their regime
  configurations): support examples, free variables (0 < α < C), passes and
  2-D steps per free variable at the optimum.

Usage::

    python -m benchmarks.bench_coupling                      # every part
    python -m benchmarks.bench_coupling --parts offset --configs usps-ww pendigits-ww
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from benchmarks.configs import CONFIGS
from benchmarks.data import load
from benchmarks.results import RESULTS, header, write_jsonl
from benchmarks.runs import run_main
from msvm.kernels import Kernel, resolve_gamma

#: Points drawn for the kernel statistics (its eigenvalues cost O(n³)).
SAMPLE = 2000
KERNEL_CONFIGS = ["letter-ww", "letter-ww-scale", "satimage-ww", "pendigits-ww", "dna-ww",
                  "usps-ww", "mnist10k-cs"]
OFFSET_CONFIGS = ["usps-ww", "pendigits-ww"]
STRUCTURE_SETS = ["pendigits", "satimage", "dna"]


@dataclasses.dataclass
class OffsetKernel(Kernel):
    """The kernel k + ``extra`` (its cache adds ``extra`` to every Gram entry)."""

    extra: float = 0.0

    def cache(self, *args, offset: float = 0.0, **kwargs):
        return super().cache(*args, offset=offset + self.extra, **kwargs)


def _problem(config, X, y, extra: float = 0.0):
    """The configuration's DualProblem (as the estimator builds it), kernel k + extra."""
    from msvm import MultiClassSVC

    est = MultiClassSVC(model=config.model, C=config.C, gamma=config.gamma, tol=config.tol,
                        cache_size=config.cache_size)
    setup = est.prepare_fit(X, y)
    problem = setup.problem
    if extra:
        k = problem.kernel
        problem.kernel = OffsetKernel(k.X, k.name, k.gamma, k.degree, k.coef0, extra=extra)
    return problem, est.solver_options(setup)


def kernel_row(name: str) -> dict:
    config = CONFIGS[name]
    X, _, _, _ = load(config.dataset, config.n_train)
    rng = np.random.RandomState(0)
    idx = rng.choice(X.shape[0], min(SAMPLE, X.shape[0]), replace=False)
    gamma = resolve_gamma(config.gamma, X)
    K = Kernel(X[idx], "rbf", gamma).gram()
    n = K.shape[0]
    eig = np.linalg.eigvalsh(K)
    return dict(part="kernel", config=name, gamma=gamma, n=n,
                mean_offdiag=float((K.sum() - np.trace(K)) / (n * (n - 1))),
                top_eig_share=float(eig[-1] / eig.sum()))


def solve_row(name: str, extra: float = 0.0, part: str = "offset") -> dict:
    from msvm.solvers import s2do

    config = CONFIGS[name]
    X, y, _, _ = load(config.dataset, config.n_train)
    problem, options = _problem(config, X, y, extra)
    options = {k: v for k, v in options.items() if k in ("tol", "cache_size", "max_iter")}
    solution = s2do.solve(problem, n_jobs=1, **options)
    alpha, cap = solution.alpha, problem.capacity[:, None]
    active = problem.active
    free = (alpha > 1e-9 * cap) & (alpha < cap * (1 - 1e-9)) & active
    support = np.any((alpha > 0) & active, axis=1)
    steps = int(solution.info["n_steps"])
    return dict(part=part, config=name, offset=extra, status=solution.status,
                passes=int(solution.n_iter), steps=steps,
                support_examples=int(support.sum()), free_variables=int(free.sum()),
                steps_per_free=steps / max(int(free.sum()), 1),
                dual=float(-problem.objective(alpha)))


def summary(rows: list[dict]) -> str:
    out = []
    kernel = [r for r in rows if r["part"] == "kernel"]
    if kernel:
        out.append("kernel: mean off-diagonal value and top eigenvalue share "
                   f"({SAMPLE} points)")
        out += [f"  {r['config']:16s} gamma {r['gamma']:.4g}  mean k {r['mean_offdiag']:.3f}  "
                f"top eigenvalue {100 * r['top_eig_share']:.1f}% of the trace" for r in kernel]
    for part, title in (("offset", "S2DO on k + c (one thread)"),
                        ("structure", "WW against LLW at the optimum (one thread)")):
        sel = [r for r in rows if r["part"] == part]
        if sel:
            out.append(f"{part}: {title}")
            out += [f"  {r['config']:16s} c {r['offset']:<4g} passes {r['passes']:>7d}  "
                    f"2-D steps {r['steps']:>8d}  support examples {r['support_examples']:>5d}  "
                    f"free variables {r['free_variables']:>5d}  steps/free "
                    f"{r['steps_per_free']:.1f}  {r['status']}" for r in sel]
    return "\n".join(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", default=["kernel", "offset", "structure"],
                        choices=["kernel", "offset", "structure"])
    parser.add_argument("--configs", nargs="+", help="configurations of the kernel and offset "
                        f"parts (default {KERNEL_CONFIGS} and {OFFSET_CONFIGS})")
    parser.add_argument("--offsets", nargs="+", type=float, default=[0.0, 0.5, 2.0])
    parser.add_argument("--tag", default="coupling")
    args = parser.parse_args(argv)
    rows: list[dict] = []

    def add(row: dict) -> None:
        rows.append(row)
        print(summary([row]).splitlines()[-1], flush=True)

    if "kernel" in args.parts:
        for name in args.configs or KERNEL_CONFIGS:
            add(kernel_row(name))
    if "offset" in args.parts:
        for name in args.configs or OFFSET_CONFIGS:
            for c in args.offsets:
                add(solve_row(name, c))
    if "structure" in args.parts:
        for dataset in STRUCTURE_SETS:
            for model in ("ww", "llw"):
                add(solve_row(f"{dataset}-{model}", part="structure"))
    write_jsonl(rows, RESULTS / f"{args.tag}.jsonl")
    text = header("coupling", args.tag, "counts of S2DO on one thread") + "\n" + summary(rows)
    (RESULTS / f"{args.tag}.txt").write_text(text + "\n")
    print(f"wrote results/{args.tag}.jsonl, results/{args.tag}.txt")


if __name__ == "__main__":
    run_main(main)
