"""Command line: ``msvm [demo]`` and ``msvm fit TRAIN [--test TEST] ...``.

``demo`` (the default) trains WW, CS, LLW and M-SVM² on scikit-learn's bundled
digits and prints one table row per machine; ``fit`` trains one machine on a
LIBSVM-format file.  Both print the numbers of :mod:`msvm.diagnostics`
(dual and primal objective, relative duality gap, KKT residual) next to the
accuracy and the fit time, and can write them as JSON.

Exit status: 0 on success, 2 for a bad option or an unreadable data file
(one ``msvm ...: error: ...`` line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

from msvm.kernels import KERNELS
from msvm.machines import MACHINES
from msvm.solvers import SOLVERS

__all__ = ["main"]

#: Training images of the demo (stratified; the other 797 are the test set).
#: Solved by S2DO (solver='auto' without a bias) in well under a second per
#: machine on a 2-core machine.
DEMO_N_TRAIN = 1000
DEMO_C = 10.0
DEMO_TOL = 1e-3
MODELS = tuple(MACHINES)
#: Machines the demo trains by default.  The absolute-margin rows with
#: sum-to-zero (adm, ats, atm) make almost every digit a support vector at
#: C = 10 and take 15-60 s each there; ``--models`` runs any of MODELS.
DEMO_MODELS = ("ww", "cs", "llw", "msvm2")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (and exit with status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _gamma(text: str):
    if text in ("scale", "auto"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'scale', 'auto' or a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _build_parser() -> _Parser:
    from msvm import __version__

    parser = _Parser(
        prog="msvm",
        description="All-in-one multi-class SVMs (Weston-Watkins, Crammer-Singer, "
        "Lee-Lin-Wahba, M-SVM2 and the rest of the unified family: ADM, ATS, ATM, "
        "one-vs-all, MMR). Without a command, runs 'demo'.",
    )
    parser.add_argument("--version", action="version", version=f"msvm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{demo,fit}")

    demo = sub.add_parser(
        "demo", help="train the machines on scikit-learn's digits (the default)",
        description="Train ww, cs, llw and msvm2 on scikit-learn's bundled digits "
        f"(1797 8x8 images, 10 classes, pixels scaled to [0, 1]): a stratified split of "
        f"{DEMO_N_TRAIN} training images, the other {1797 - DEMO_N_TRAIN} for testing, RBF "
        f"kernel with gamma='scale', C={DEMO_C:g}, no bias.",
    )
    demo.add_argument("--n-train", type=int, default=DEMO_N_TRAIN,
                      help=f"training images, stratified (default {DEMO_N_TRAIN}; the rest test)")
    demo.add_argument("--models", default=",".join(DEMO_MODELS),
                      help=f"comma-separated machines among {','.join(MODELS)} "
                      f"(default {','.join(DEMO_MODELS)})")
    demo.add_argument("--C", type=float, default=DEMO_C, help=f"C (default {DEMO_C:g})")
    demo.add_argument("--solver", default="auto", choices=["auto", *sorted(SOLVERS)],
                      help="solver (default auto: s2do)")
    demo.add_argument("--tol", type=float, default=DEMO_TOL,
                      help=f"KKT tolerance of iterative solvers (default {DEMO_TOL:g})")
    demo.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    demo.add_argument("--json", metavar="OUT", help="also write the results to this JSON file")

    fit = sub.add_parser(
        "fit", help="train one machine on a LIBSVM file",
        description="Train a machine on a LIBSVM/svmlight file (optionally .bz2) and report "
        "accuracy (on --test if given, else on the training set), dual and primal "
        "objective, relative duality gap, KKT residual and fit time.",
    )
    fit.add_argument("train", metavar="TRAIN", help="training file (LIBSVM format)")
    fit.add_argument("--test", metavar="TEST", help="test file (LIBSVM format)")
    fit.add_argument("--model", default="ww", choices=list(MODELS), help="machine (default ww)")
    fit.add_argument("--kernel", default="rbf", choices=[k for k in KERNELS if k != "precomputed"],
                     help="kernel (default rbf)")
    fit.add_argument("--C", type=float, default=1.0, help="C (default 1)")
    fit.add_argument("--gamma", type=_gamma, default="scale",
                     help="'scale', 'auto' or a number (default scale)")
    fit.add_argument("--degree", type=int, default=3, help="poly degree, an integer (default 3)")
    fit.add_argument("--coef0", type=float, default=0.0, help="poly/sigmoid coef0 (default 0)")
    fit.add_argument("--bias", action="store_true", help="fit an intercept b (default: no bias)")
    fit.add_argument("--solver", default="auto", choices=["auto", *sorted(SOLVERS)],
                     help="solver (default auto)")
    fit.add_argument("--tol", type=float, default=1e-3,
                     help="KKT tolerance of iterative solvers (default 1e-3)")
    fit.add_argument("--max-iter", type=int, default=None,
                     help="solver iteration cap (default max(1e7, 100 m); -1: none)")
    fit.add_argument("--verbose", action="store_true", help="print a line per fitting stage")
    fit.add_argument("--json", metavar="OUT", help="also write the results to this JSON file")
    return parser


# ----------------------------------------------------------------- output
_COLUMNS = ("model", "accuracy", "dual objective", "primal objective", "relative gap",
            "KKT residual", "SVs", "fit time (s)")


def _row(model: str, result: dict) -> str:
    cells = (
        f"{model:<7}",
        f"{result['accuracy']:>8.4f}",
        f"{result['dual_objective']:>14.6f}",
        f"{result['primal_objective']:>16.6f}",
        f"{result['relative_gap']:>12.2e}",
        f"{result['kkt_residual']:>12.2e}",
        f"{result['n_support']:>5d}",
        f"{result['fit_time']:>12.2f}",
    )
    return "  ".join(cells)


def _header() -> str:
    widths = (7, 8, 14, 16, 12, 12, 5, 12)
    return "  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
                     for i, (c, w) in enumerate(zip(_COLUMNS, widths, strict=True)))


def _fit_and_score(estimator, X_train, y_train, X_eval, y_eval, prog: str) -> dict:
    """Fit, then gather the numbers of one table row (warnings shown on one line each)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        fit_time = time.perf_counter() - start
    for w in caught:
        print(f"{prog}: warning: {w.message}", file=sys.stderr)
    accuracy = float(np.mean(estimator.predict(X_eval) == y_eval))
    sol = estimator.solution_
    return {
        "accuracy": accuracy,
        "fit_time": fit_time,
        "n_support": int(len(estimator.support_)),
        **{k: sol[k] for k in ("dual_objective", "primal_objective", "duality_gap",
                               "relative_gap", "kkt_residual", "kkt_violation", "status",
                               "solver", "n_iter")},
        "solution": sol,
    }


def _check_writable(path: str | None) -> None:
    """Fail before training, not after, when the --json file cannot be written."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--json {path!r} is a directory")
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ValueError(f"--json {path!r}: folder {folder!r} does not exist or is not writable")


def _write_json(path: str, payload: dict) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, default=_json_default)
        fh.write("\n")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# --------------------------------------------------------------- commands
def _demo(args, prog: str) -> int:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from msvm.estimator import MultiClassSVC

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MACHINES]
    if unknown or not models:
        raise ValueError(f"unknown model(s) {unknown or args.models!r}; choose from "
                         f"{','.join(MODELS)}")
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    n_classes = len(np.unique(y))
    if not n_classes <= args.n_train <= len(y) - n_classes:
        raise ValueError(f"--n-train must be between {n_classes} and {len(y) - n_classes}, "
                         f"got {args.n_train}")
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, train_size=args.n_train, stratify=y, random_state=args.seed)
    print(f"{prog}: scikit-learn digits ({len(y)} images 8x8, {n_classes} classes, "
          "pixels scaled to [0, 1])")
    print(f"stratified split (seed {args.seed}): {len(y_train)} train / {len(y_test)} test; "
          f"RBF kernel, gamma='scale', C={args.C:g}, no bias, solver {args.solver}, "
          f"tol {args.tol:g}")
    print()
    print(_header())
    results = []
    for model in models:
        est = MultiClassSVC(model=model, C=args.C, solver=args.solver, tol=args.tol)
        result = _fit_and_score(est, X_train, y_train, X_test, y_test, prog)
        print(_row(model, result), flush=True)
        results.append({"model": model, "gamma": est.gamma_, **result})
    print()
    used = sorted({r["solver"] for r in results})
    print(f"solver {', '.join(used)}; accuracy on the test split; relative gap = "
          "(primal - dual) / |primal|; KKT residual scaled by C.")
    if args.json:
        _write_json(args.json, {"command": "demo", "dataset": "sklearn digits",
                                "n_train": len(y_train), "n_test": len(y_test),
                                "seed": args.seed, "C": args.C, "solver": args.solver,
                                "tol": args.tol,
                                "results": results})
    return 0


def _fit(args, prog: str) -> int:
    from msvm.datasets import load_libsvm_files
    from msvm.estimator import MultiClassSVC

    if args.test:
        X_train, y_train, X_test, y_test = load_libsvm_files([args.train, args.test])
    else:
        (X_train, y_train), X_test, y_test = load_libsvm_files([args.train]), None, None
    est = MultiClassSVC(model=args.model, C=args.C, kernel=args.kernel, gamma=args.gamma,
                        degree=args.degree, coef0=args.coef0, fit_intercept=args.bias,
                        solver=args.solver, tol=args.tol, max_iter=args.max_iter,
                        verbose=args.verbose)
    on = "test" if X_test is not None else "training"
    X_eval, y_eval = (X_test, y_test) if X_test is not None else (X_train, y_train)
    n_classes = len(np.unique(y_train))
    print(f"{prog}: {args.train}: {X_train.shape[0]} samples, {X_train.shape[1]} features, "
          f"{n_classes} classes" + (f"; test {args.test}: {X_test.shape[0]} samples"
                                    if X_test is not None else ""))
    result = _fit_and_score(est, X_train, y_train, X_eval, y_eval, prog)
    print(f"model {args.model}, kernel {args.kernel} (gamma={est.gamma_:.6g}), C={args.C:g}, "
          f"{'bias' if args.bias else 'no bias'}; solver {result['solver']}: status "
          f"{result['status']}, {result['n_iter']} iterations")
    print()
    print(_header())
    print(_row(args.model, result))
    print()
    print(f"{on} accuracy: {result['accuracy']:.4f}")
    if args.json:
        _write_json(args.json, {
            "command": "fit", "train": args.train, "test": args.test,
            "n_train": int(X_train.shape[0]), "n_test": None if X_test is None else
            int(X_test.shape[0]), "n_features": int(X_train.shape[1]),
            "classes": est.classes_.tolist(), "accuracy_on": on,
            "params": {k: v for k, v in est.get_params().items() if k != "verbose"},
            "gamma": est.gamma_, "model": args.model, **result,
        })
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in ("demo", "fit", "-h", "--help", "--version")
                    and argv[0].startswith("-")):
        argv = ["demo", *argv]  # the default command
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version or a usage error (already printed)
        return int(exc.code or 0)
    prog = f"msvm {args.command}"
    try:
        _check_writable(args.json)
        return _demo(args, prog) if args.command == "demo" else _fit(args, prog)
    except BrokenPipeError:
        # The reader went away (e.g. `msvm fit ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
