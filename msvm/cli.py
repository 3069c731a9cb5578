"""Command line: ``msvm [demo]``, ``fit``, libsvm's ``train``/``predict``, ``select``, ``validate``.

``demo`` (the default) trains WW, CS, LLW and M-SVM² on scikit-learn's bundled
digits and prints one table row per machine; ``fit`` trains one machine on a
LIBSVM-format file and reports its certificate.  Both print the numbers of
:mod:`msvm.diagnostics` (dual and primal objective, relative duality gap, KKT
residual) next to the accuracy and the fit time, and can write them as JSON.

``train [options] TRAIN [MODEL]`` and ``predict [options] TEST MODEL [OUTPUT]``
work as libsvm's ``svm-train`` and ``svm-predict``: a model file (:mod:`msvm.io`)
between them, one predicted label per line, ``Accuracy = x% (k/n)``, ``-v k``
for k-fold cross-validation accuracy, and libsvm's short options where they
mean the same thing (``-c -g -t -d -r -e -m -v -q``; ``-t 4`` reads the
precomputed-kernel format ``label 0:i 1:K(x_i, x_1) ...``; ``-wi weight``
sets the weight of class i, C·weight, as ``--class-weight i:weight``; ``train``
accepts svm-train's ``-h 0|1`` shrinking switch and ignores it, as the solvers
shrink by their own rule).  ``select`` picks
(C, γ) over a grid (grid.py's ``--log2c`` / ``--log2g``) by k-fold CV or by
the radius–margin criteria of :class:`msvm.RadiusMarginSearch` and writes the
best model; ``validate`` runs the validation suite (``python -m validation``).

Exit status: 0 on success, 2 for a bad option, an unreadable data or model
file, or a ``select`` grid of which no point converged (one ``msvm ...:
error: ...`` line on stderr, no traceback), 130 after
Ctrl-C, 141 when the reader of stdout goes away; ``validate`` returns the
suite's status.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from msvm.kernels import KERNELS
from msvm.machines import MACHINES
from msvm.solvers import SOLVERS
from msvm.solvers.online import STRATEGIES

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

    def _print_message(self, message, file=None):
        # argparse drops OSError here: '--help | head -0' then exited 0, not 141 (main).
        if message:
            (file or sys.stderr).write(message)


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


def _epochs(text: str):
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer or 'none' (until tol), got {text!r}") from None


#: libsvm's -t codes (svm-train); laplace has none.
LIBSVM_KERNELS = {0: "linear", 1: "poly", 2: "rbf", 3: "sigmoid", 4: "precomputed"}


def _libsvm_kernel(text: str) -> str:
    try:
        return LIBSVM_KERNELS[int(text)]
    except (ValueError, KeyError):
        codes = ", ".join(f"{code} {name}" for code, name in LIBSVM_KERNELS.items())
        raise argparse.ArgumentTypeError(
            f"must be a libsvm kernel code 0-4 ({codes}), got {text!r}") from None


def _label(text: str):
    """A class label as written in a LIBSVM file: an integer, else a float, else text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _class_weight_item(text: str):
    """``--class-weight``: 'balanced' or 'LABEL:WEIGHT' (libsvm's -wLABEL WEIGHT)."""
    if text == "balanced":
        return text
    label, sep, weight = text.rpartition(":")
    try:
        value = float(weight)
    except ValueError:
        value = None
    if not sep or not label or value is None or not (np.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"must be 'balanced' or LABEL:WEIGHT with a weight >= 0 (libsvm: -wLABEL WEIGHT), "
            f"got {text!r}")
    return _label(label), value


def _libsvm_weights(argv: list[str]) -> list[str]:
    """libsvm's ``-wi weight`` (``-w1 5``, ``-w-1 0.5``) as ``--class-weight i:weight``."""
    out, i = [], 0
    while i < len(argv):
        match = re.fullmatch(r"-w(.+)", argv[i])
        if match and i + 1 < len(argv):
            out += ["--class-weight", f"{match.group(1)}:{argv[i + 1]}"]
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _libsvm_shrinking(argv: list[str]) -> list[str]:
    """svm-train's ``-h 0|1`` as ``--shrinking 0|1`` (a bare ``-h`` stays help)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "-h" and i + 1 < len(argv) and argv[i + 1] in ("0", "1"):
            out.append(f"--shrinking={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _class_weight(items) -> dict | str | None:
    """The estimator's ``class_weight`` from the repeated ``--class-weight`` values."""
    if not items:
        return None
    if "balanced" in items:
        if len(items) > 1:
            raise ValueError("--class-weight balanced cannot be combined with LABEL:WEIGHT "
                             "values (or -wi options)")
        return "balanced"
    return dict(items)


#: The estimator's options: (long flag, libsvm's short flag or None, argparse keywords).
#: One row per MultiClassSVC parameter, shared by fit, train and select.  libsvm's
#: -wi weight is translated into --class-weight i:weight before parsing (main).
ESTIMATOR_OPTIONS: list[tuple[str | None, str | None, dict[str, Any]]] = [
    ("--model", None, dict(default="ww", choices=list(MODELS), help="machine (default ww)")),
    ("--kernel", None, dict(default="rbf", choices=list(KERNELS),
                            help="kernel (default rbf)")),
    (None, "-t", dict(dest="kernel", type=_libsvm_kernel, metavar="CODE",
                      help="kernel as libsvm's code: 0 linear, 1 poly, 2 rbf, 3 sigmoid, "
                      "4 precomputed (file rows 'label 0:i 1:K(x_i,x_1) ...')")),
    ("--C", "-c", dict(dest="C", type=float, default=1.0, help="C (default 1)")),
    ("--gamma", "-g", dict(type=_gamma, default="scale",
                           help="'scale', 'auto' or a number (default scale)")),
    ("--degree", "-d", dict(type=int, default=3, help="poly degree, an integer (default 3)")),
    ("--coef0", "-r", dict(type=float, default=0.0, help="poly/sigmoid coef0 (default 0)")),
    ("--bias", None, dict(action="store_true", help="fit an intercept b (default: no bias)")),
    ("--solver", None, dict(default="auto", choices=["auto", *sorted(SOLVERS)],
                            help="solver (default auto)")),
    ("--tol", "-e", dict(type=float, default=1e-3,
                         help="KKT tolerance of iterative solvers (default 1e-3)")),
    ("--cache-size", "-m", dict(type=float, default=200.0,
                                help="kernel cache in MB (default 200)")),
    ("--cache-dtype", None, dict(default="float64", choices=["float64", "float32"],
                                 help="cached kernel rows (default float64)")),
    ("--max-iter", None, dict(type=int, default=None,
                              help="solver iteration cap (default max(1e7, 100 m); -1: none)")),
    ("--n-jobs", None, dict(type=int, default=None,
                            help="solver threads (default 1; -1: all cores)")),
    ("--epochs", None, dict(type=_epochs, default=1,
                            help="online solver: passes, or 'none' to run to tol (default 1)")),
    ("--online-strategy", None, dict(default="s2do_all", choices=list(STRATEGIES),
                                     help="online solver's working sets (default s2do_all)")),
    ("--seed", None, dict(dest="random_state", type=int, default=None,
                          help="seed of randomised solvers and of the CV folds")),
    ("--class-weight", None, dict(
        type=_class_weight_item, action="append", default=None, metavar="LABEL:WEIGHT",
        help="weight of a class's loss, C*WEIGHT (repeatable; libsvm's -wLABEL WEIGHT), or "
             "'balanced' (n_samples / (n_classes * count)); default: all 1")),
]


def _add_estimator_options(parser, *, short: bool, precomputed: bool = True) -> None:
    """The rows of ESTIMATOR_OPTIONS, with libsvm's short flags when ``short`` and
    ``--kernel precomputed`` only when ``precomputed``."""
    for long, flag, kwargs in ESTIMATOR_OPTIONS:
        if long == "--kernel" and not precomputed:
            # msvm fit reads feature files only; precomputed-kernel files are train -t 4's.
            kwargs = dict(kwargs, choices=[k for k in KERNELS if k != "precomputed"],
                          help="kernel (default rbf; for precomputed-kernel files use "
                          "'msvm train -t 4')")
        flags = [f for f in (flag if short else None, long) if f]
        if flags:
            parser.add_argument(*flags, **kwargs)


def _estimator(args, **overrides):
    """The MultiClassSVC the parsed options describe."""
    from msvm.estimator import MultiClassSVC

    params = dict(model=args.model, C=args.C, kernel=args.kernel, gamma=args.gamma,
                  degree=args.degree, coef0=args.coef0, fit_intercept=args.bias,
                  solver=args.solver, tol=args.tol, cache_size=args.cache_size,
                  cache_dtype=args.cache_dtype, max_iter=args.max_iter, n_jobs=args.n_jobs,
                  epochs=args.epochs, online_strategy=args.online_strategy,
                  random_state=args.random_state, verbose=int(args.verbose),
                  class_weight=_class_weight(args.class_weight))
    params.update(overrides)
    return MultiClassSVC(**params)


COMMANDS = ("demo", "fit", "train", "predict", "select", "validate")


def _build_parser() -> _Parser:
    from msvm import __version__

    parser = _Parser(
        prog="msvm",
        description="All-in-one multi-class SVMs (Weston-Watkins, Crammer-Singer, "
        "Lee-Lin-Wahba, M-SVM2 and the rest of the unified family: ADM, ATS, ATM, "
        "one-vs-all, MMR). Without a command, runs 'demo'.",
    )
    parser.add_argument("--version", action="version", version=f"msvm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")

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
        description="Train a machine on a LIBSVM/svmlight file (optionally .bz2/.gz) and report "
        "accuracy (on --test if given, else on the training set), dual and primal "
        "objective, relative duality gap, KKT residual and fit time.",
    )
    fit.add_argument("train", metavar="TRAIN", help="training file (LIBSVM format)")
    fit.add_argument("--test", metavar="TEST", help="test file (LIBSVM format)")
    _add_estimator_options(fit, short=False, precomputed=False)
    fit.add_argument("--verbose", action="store_true",
                     help="a line per fitting stage (stdout) and the solver's live progress "
                     "(stderr)")
    fit.add_argument("--json", metavar="OUT", help="also write the results to this JSON file")

    train = sub.add_parser(
        "train", help="train a model and write it to a model file (as svm-train)",
        description="Train a machine on a LIBSVM/svmlight file (optionally .bz2/.gz) and "
        "write the model to MODEL (default: TRAIN's name + '.model', in the current folder), "
        "a msvm model file that 'msvm predict' and msvm.load read. With -v K, print the "
        "K-fold cross-validation accuracy instead (no model is written), as svm-train does.",
    )
    train.add_argument("train", metavar="TRAIN", help="training file (LIBSVM format)")
    train.add_argument("model_file", metavar="MODEL", nargs="?", help="model file to write")
    _add_estimator_options(train, short=True)
    train.add_argument("-v", dest="cv", type=int, metavar="K",
                       help="K-fold cross-validation accuracy (stratified, shuffled by --seed)")
    train.add_argument("--verbose", action="store_true",
                       help="a line per fitting stage (stdout) and the solver's live progress "
                       "(stderr)")
    train.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    train.add_argument("--shrinking", type=int, choices=[0, 1], default=1,
                       help="svm-train's -h 0|1, accepted so that its command lines run, and "
                       "ignored: the solvers shrink by their own rule")

    predict = sub.add_parser(
        "predict", help="predict with a model file (as svm-predict)",
        description="Predict the rows of TEST (LIBSVM format) with MODEL and write one label "
        "per line to OUTPUT (default: stdout). When TEST's labels are classes of the model, "
        "print 'Accuracy = x% (k/n)' (on stderr when the labels go to stdout).",
    )
    predict.add_argument("test", metavar="TEST", help="test file (LIBSVM format)")
    predict.add_argument("model_file", metavar="MODEL", help="model file (msvm train, msvm.save)")
    predict.add_argument("output", metavar="OUTPUT", nargs="?", help="output file (default "
                         "stdout; '-' too)")
    predict.add_argument("--decision-values", action="store_true",
                         help="after the label, the n_classes scores h_c(x) of each row; a "
                         "first line 'labels c_1 ... c_Q' names their classes")
    predict.add_argument("-q", "--quiet", action="store_true", help="print no accuracy")

    select = sub.add_parser(
        "select", help="choose C and gamma over a grid; write the best model",
        description="Train every (C, gamma) of a grid (grid.py's log2 ranges) on TRAIN, score "
        "it by K-fold cross-validation accuracy (--criterion cv, the default) or by the "
        "radius-margin criteria of msvm.RadiusMarginSearch (--criterion candidates|bound: "
        "--model msvm2, one fit per point, no CV), print the table and write the best model "
        "to MODEL (default: TRAIN's name + '.model').",
    )
    select.add_argument("train", metavar="TRAIN", help="training file (LIBSVM format)")
    select.add_argument("model_file", metavar="MODEL", nargs="?", help="model file to write")
    _add_estimator_options(select, short=True)
    select.add_argument("--criterion", choices=["cv", "candidates", "bound"], default="cv",
                        help="cv (default), or the radius-margin count / bound (msvm2)")
    select.add_argument("-v", dest="cv", type=int, default=5, metavar="K",
                        help="folds of --criterion cv (default 5)")
    select.add_argument("--log2c", type=_log2_range, default=(-5.0, 15.0, 2.0),
                        metavar="BEGIN,END,STEP", help="C = 2^BEGIN ... 2^END (default -5,15,2)")
    select.add_argument("--log2g", type=_log2_range, default=(3.0, -15.0, -2.0),
                        metavar="BEGIN,END,STEP",
                        help="gamma = 2^BEGIN ... 2^END (default 3,-15,-2; not for linear or "
                        "precomputed kernels)")
    select.add_argument("--verbose", action="store_true",
                        help="a progress bar over the grid points (stderr)")

    validate = sub.add_parser(
        "validate", help="run the validation suite (python -m validation)",
        description="Run the validation suite of a source checkout (validation/ next to "
        "msvm/): every solver against an independent reference on a matrix of problems. "
        "Other options (--filter, --jobs, --json, --list, --bounds, --solvers) are passed "
        "to it; see 'python -m validation --help'.",
    )
    validate.add_argument("--quick", action="store_true", help="a subset: one small problem")
    return parser


#: Largest |exponent| of a --log2c/--log2g range: 2^1023 is the largest power of two
#: float64 holds.
LOG2_LIMIT = 1023
#: Most values of one --log2c/--log2g range (a tiny STEP would build the list for ever).
MAX_GRID_VALUES = 10_000


def _log2_range(text: str) -> tuple[float, float, float]:
    try:
        begin, end, step = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be BEGIN,END,STEP (three numbers), got {text!r}") from None
    if not all(abs(v) <= LOG2_LIMIT for v in (begin, end, step)):   # also NaN
        raise argparse.ArgumentTypeError(
            f"BEGIN, END and STEP must be numbers in [-{LOG2_LIMIT}, {LOG2_LIMIT}] (2^x is then a "
            f"finite float), got {text!r}")
    if step == 0 or (end - begin) * step < 0:
        raise argparse.ArgumentTypeError(f"STEP must go from BEGIN towards END, got {text!r}")
    if (end - begin) / step + 1 > MAX_GRID_VALUES:
        raise argparse.ArgumentTypeError(
            f"gives {int((end - begin) / step) + 1} values, at most {MAX_GRID_VALUES}; got "
            f"{text!r}")
    return begin, end, step


def _log2_values(spec) -> list[float]:
    begin, end, step = spec
    n = int(np.floor((end - begin) / step + 1e-9)) + 1
    return [float(2.0 ** (begin + i * step)) for i in range(n)]


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


def _check_writable(path: str | None, what: str = "--json", inputs: dict | None = None) -> None:
    """Fail before training, not after, when an output file cannot be written, or would
    overwrite one of ``inputs`` (name: path of the files the command reads)."""
    if path is None:
        return
    if not path:
        raise ValueError(f"{what} is an empty path")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{what} {path!r} is a directory")
    for name, source in (inputs or {}).items():
        if source and os.path.exists(path) and os.path.exists(source) \
                and os.path.samefile(path, source):
            raise ValueError(f"{what} {path!r} is the {name} file: writing it would destroy "
                             "what is read")
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ValueError(f"{what} {path!r}: folder {folder!r} does not exist or is not writable")


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
    if not 0 <= args.seed < 2**32:   # (else train_test_split's random_state error)
        raise ValueError(f"--seed must be between 0 and {2**32 - 1}, got {args.seed}")
    estimators = [MultiClassSVC(model=model, C=args.C, solver=args.solver, tol=args.tol)
                  for model in models]
    for est in estimators:   # --C, --tol: an error before the table starts, not after
        est._check_params()
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
    for model, est in zip(models, estimators, strict=True):
        result = _fit_and_score(est, X_train, y_train, X_test, y_test, prog)
        print(_row(model, result), flush=True)
        results.append({"model": model, "gamma": est.gamma_, **result})
    print()
    used = sorted({r["solver"] for r in results})
    print(f"solver {', '.join(used)}; accuracy on the test split; relative gap = "
          "(primal - dual) / max(|primal|, |dual|); KKT residual scaled by C "
          "(msvm2: by max(1, max alpha)).")
    if args.json is not None:
        _write_json(args.json, {"command": "demo", "dataset": "sklearn digits",
                                "n_train": len(y_train), "n_test": len(y_test),
                                "seed": args.seed, "C": args.C, "solver": args.solver,
                                "tol": args.tol,
                                "results": results})
    return 0


def _fit(args, prog: str) -> int:
    from msvm.datasets import load_libsvm_files

    if args.test is not None:   # '' too: an error, not the training set
        X_train, y_train, X_test, y_test = load_libsvm_files([args.train, args.test])
    else:
        (X_train, y_train), X_test, y_test = load_libsvm_files([args.train]), None, None
    est = _estimator(args)
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
    if args.json is not None:
        _write_json(args.json, {
            "command": "fit", "train": args.train, "test": args.test,
            "n_train": int(X_train.shape[0]), "n_test": None if X_test is None else
            int(X_test.shape[0]), "n_features": int(X_train.shape[1]),
            "classes": est.classes_.tolist(), "accuracy_on": on,
            "params": {k: v for k, v in est.get_params().items() if k != "verbose"},
            "gamma": est.gamma_, "model": args.model, **result,
        })
    return 0


# ------------------------------------------------------- LIBSVM files
def _read_libsvm(path: str, *, precomputed: bool, zero_based: bool | None = None,
                 n_features: int | None = None):
    """(X, y, zero_based) of a LIBSVM file for train/predict/select.

    Features: ``zero_based=None`` decides as scikit-learn's 'auto' (indices
    from 1, the LIBSVM convention, unless the file has an index 0), and the
    decision goes into the model file so that ``predict`` reads its test
    file the same way.  ``n_features`` (predict) is the model's width.
    Precomputed kernels (``-t 4``): column 0 holds the row's serial number,
    the kernel values follow from index 1 (libsvm's format); X is returned
    dense, without that column.
    """
    from msvm.datasets import load_libsvm

    X, y = load_libsvm(path, zero_based=True)   # the file's own width: checked below
    if precomputed:
        K = X[:, 1:].toarray()
        if n_features is not None and K.shape[1] != n_features:
            # Fewer columns would be read as zero kernel values, more cannot be used.
            raise ValueError(
                f"{path!r} is not a precomputed test kernel for this model: its rows must be "
                f"'label 0:? 1:K(x,x_1) ... L:K(x,x_L)' with L = {n_features}, the model's "
                f"number of training samples; got {K.shape[1]} kernel columns")
        if n_features is None:   # a training file: K is the square Gram matrix
            numbered = np.array_equal(X[:, 0].toarray().ravel(), np.arange(1, len(y) + 1))
            if K.shape[0] != K.shape[1] or not numbered:
                raise ValueError(
                    f"{path!r} is not a precomputed training kernel: each of its {len(y)} rows "
                    "must be 'label 0:i 1:K(x_i,x_1) ... L:K(x_i,x_L)', with i = 1..L (the "
                    f"row number) and L = {len(y)} columns; got {K.shape[1]} kernel columns"
                    + ("" if numbered else " and 0:i not the row numbers"))
        return K, y, True
    if n_features is not None:
        width = n_features + (0 if zero_based else 1)
        if X.shape[1] > width:
            first = 0 if zero_based else 1
            raise ValueError(f"{path!r} has feature index {X.shape[1] - 1}, but the model has "
                             f"{n_features} features (indices {first} to "
                             f"{n_features - 1 + first})")
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    if zero_based is None:
        zero_based = X.nnz == 0 or bool(np.any(X.indices == 0))
    if not zero_based:
        if np.any(X.indices == 0):
            raise ValueError(f"{path!r} has feature index 0, but the model numbers features "
                             "from 1 (as its training file did)")
        # Shift the indices as scikit-learn's reader does (a column slice could reorder them,
        # and the solver would then round differently from the Python API on the same file).
        X = sp.csr_matrix((X.data, X.indices - 1, X.indptr), shape=(X.shape[0], X.shape[1] - 1))
    return X, y, zero_based


def _default_model_path(train: str) -> str:
    """libsvm's default: the training file's name (compression suffix off) + '.model'."""
    name = os.path.basename(train)
    for suffix in (".bz2", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name + ".model"


def _fit_quietly(est, X, y, prog: str):
    """Fit, showing each warning as one line on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    for w in caught:
        print(f"{prog}: warning: {w.message}", file=sys.stderr)
    return est


def _cv_accuracy(est, X, y, k: int, seed, prog: str) -> float:
    """Stratified k-fold accuracy (shuffled with ``seed``, 0 when None).

    The folds' warnings are shown once each on stderr, the convergence notes as
    one count (a line per fold would flood the output).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    if k < 2:
        raise ValueError(f"-v: cross-validation needs at least 2 folds, got {k}")
    folds = StratifiedKFold(k, shuffle=True, random_state=0 if seed is None else seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        accuracy = float(np.mean(cross_val_score(est, X, y, cv=folds, error_score="raise")))
    not_converged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    if not_converged:
        print(f"{prog}: warning: {not_converged} of {k} fold fits did not converge (see "
              "--verbose); their accuracy is counted as it is", file=sys.stderr)
    for message in dict.fromkeys(str(w.message) for w in caught
                                 if not issubclass(w.category, ConvergenceWarning)):
        print(f"{prog}: warning: {message}", file=sys.stderr)
    return accuracy


def _save(est, path: str, zero_based: bool, train: str) -> None:
    from msvm.io import save

    save(est, path, metadata={"libsvm": {"zero_based": bool(zero_based), "train_file":
                                         os.path.basename(train)}})


def _train(args, prog: str) -> int:
    precomputed = args.kernel == "precomputed"
    model_path = _default_model_path(args.train) if args.model_file is None else args.model_file
    if args.cv is None:
        _check_writable(model_path, "MODEL", {"TRAIN": args.train})
    X, y, zero_based = _read_libsvm(args.train, precomputed=precomputed)
    est = _estimator(args)

    def say(text: str) -> None:
        if not args.quiet:
            print(text)

    if args.cv is not None:
        accuracy = _cv_accuracy(est, X, y, args.cv, args.random_state, prog)
        n = len(y)
        say(f"Cross Validation Accuracy = {100 * accuracy:g}% "
            f"({int(round(accuracy * n))}/{n})")
        return 0
    _fit_quietly(est, X, y, prog)
    sol = est.solution_
    say(f"{prog}: {args.train}: {X.shape[0]} samples, {X.shape[1]} "
        f"{'kernel columns' if precomputed else 'features'}, {len(est.classes_)} classes")
    weights = ("" if est.class_weight is None else "class weights " + ", ".join(
        f"{_format_label(c)}: {w:g}" for c, w in zip(est.classes_, est.class_weight_,
                                                    strict=True)) + "; ")
    say(f"model {args.model}, kernel {args.kernel} (gamma={est.gamma_:.6g}), C={args.C:g}, "
        f"{'bias' if args.bias else 'no bias'}; {weights}solver {sol['solver']}: status "
        f"{sol['status']}, {sol['n_iter']} iterations, {sol['time']:.3f} s")
    say(f"nSV = {len(est.support_)}, dual objective = {sol['dual_objective']:.10g}"
        + ("" if sol.get("primal_objective") is None else
           f", primal objective = {sol['primal_objective']:.10g}, relative gap = "
           f"{sol['relative_gap']:.2e}, KKT residual = {sol['kkt_residual']:.2e}"))
    _save(est, model_path, zero_based, args.train)
    say(f"model written to {model_path}")
    return 0


def _format_label(value) -> str:
    """A label as svm-predict writes it: integers plainly, floats with %.17g."""
    if isinstance(value, (bool, np.bool_, str, np.str_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return format(float(value), ".17g")


def _predict(args, prog: str) -> int:
    from msvm.io import load

    model, info = load(args.model_file, return_metadata=True)
    precomputed = model.kernel == "precomputed"
    zero_based = info["metadata"].get("libsvm", {}).get("zero_based", False)
    to_stdout = args.output in (None, "-")
    if not to_stdout:
        _check_writable(args.output, "OUTPUT", {"TEST": args.test, "MODEL": args.model_file})
    X, y, _ = _read_libsvm(args.test, precomputed=precomputed, zero_based=zero_based,
                           n_features=model.shape_fit_[0] if precomputed
                           else model.n_features_in_)
    if args.decision_values:
        scores = model._scores(X)   # all Q scores (decision_function has SVC's binary form)
        pred = model.classes_[np.argmax(scores, axis=1)]
    else:
        pred = model.predict(X)
    out = sys.stdout if to_stdout else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        if args.decision_values:
            out.write("labels " + " ".join(_format_label(c) for c in model.classes_) + "\n")
            for label, row in zip(pred, scores, strict=True):
                out.write(_format_label(label) + " " + " ".join(format(v, ".17g") for v in row)
                          + "\n")
        else:
            out.writelines(_format_label(label) + "\n" for label in pred)
        out.flush()
    finally:
        if not to_stdout:
            out.close()
    if args.quiet:
        return 0
    report = sys.stderr if to_stdout else sys.stdout
    known = np.isin(y, model.classes_)
    if not known.any():
        print(f"{prog}: no label of {args.test} is a class of the model "
              f"({', '.join(_format_label(c) for c in model.classes_)}): no accuracy",
              file=report)
        return 0
    correct = int(np.sum(pred == y))
    print(f"Accuracy = {100 * correct / len(y):g}% ({correct}/{len(y)})", file=report)
    if not known.all():
        print(f"{prog}: {int(np.sum(~known))} test labels are not classes of the model (counted "
              "as errors)", file=report)
    return 0


def _select(args, prog: str) -> int:
    from sklearn.base import clone

    from msvm._progress import ProgressBar
    from msvm.model_selection import RadiusMarginSearch

    precomputed = args.kernel == "precomputed"
    model_path = _default_model_path(args.train) if args.model_file is None else args.model_file
    _check_writable(model_path, "MODEL", {"TRAIN": args.train})
    if args.criterion != "cv" and args.model != "msvm2":
        raise ValueError(f"--criterion {args.criterion}: the radius-margin criteria hold for "
                         f"--model msvm2 only, got --model {args.model} (use --criterion cv)")
    X, y, zero_based = _read_libsvm(args.train, precomputed=precomputed)
    grid = {"C": _log2_values(args.log2c)}
    if args.kernel not in ("linear", "precomputed"):
        grid["gamma"] = _log2_values(args.log2g)
    from sklearn.model_selection import ParameterGrid

    points = list(ParameterGrid(grid))
    base = _estimator(args, verbose=0)
    # Bad options fail before the table starts, not after its header (or some of its rows).
    for params in points:
        clone(base).set_params(**params)._check_params()
    if args.criterion == "cv":
        if args.cv < 2:
            raise ValueError(f"-v: cross-validation needs at least 2 folds, got {args.cv}")
        if args.cv > len(y):
            raise ValueError(f"-v: {args.cv} folds of {len(y)} samples; at most {len(y)}")
    print(f"{prog}: {args.train}: {X.shape[0]} samples, {len(np.unique(y))} classes; "
          f"{len(points)} grid points, criterion {args.criterion}"
          + (f" ({args.cv}-fold accuracy)" if args.criterion == "cv" else ""))
    print(f"{'C':>12} {'gamma':>12} {'score':>12}")
    if args.criterion == "cv":
        bar = ProgressBar(prog, len(points), "grid points", enabled=args.verbose)
        scores = []
        for params in points:
            scores.append(_cv_accuracy(clone(base).set_params(**params), X, y, args.cv,
                                       args.random_state, prog))
            print(f"{params['C']:>12.6g} {params.get('gamma', float('nan')):>12.6g} "
                  f"{scores[-1]:>12.6f}", flush=True)
            bar.update()
        best_index = int(np.argmax(scores))
        best = _fit_quietly(clone(base).set_params(**points[best_index]), X, y, prog)
        what = f"{args.cv}-fold CV accuracy {scores[best_index]:.6f}"
    else:
        try:
            search = RadiusMarginSearch(base, grid, criterion=args.criterion,
                                        verbose=int(args.verbose)).fit(X, y)
        except RuntimeError as exc:   # no grid point converged: an option to change, not a crash
            raise ValueError(str(exc)) from exc
        column = "bound" if args.criterion == "bound" else "n_candidates"
        results = search.cv_results_
        for params, value, status in zip(results["params"], results[column], results["status"],
                                         strict=True):
            # The value of a point that did not converge bounds nothing; it is never selected.
            print(f"{params['C']:>12.6g} {params.get('gamma', float('nan')):>12.6g} "
                  f"{value:>12.6g}" + ("" if status == "optimal" else
                                       f"  (not converged: {status}; not a bound)"))
        best_index, best = search.best_index_, search.best_estimator_
        what = f"{'radius-margin bound' if column == 'bound' else 'LOO error candidates'} " \
               f"{search.best_score_:g}"
    params = points[best_index] if args.criterion == "cv" else search.best_params_
    print(f"best: {', '.join(f'{k}={v:g}' for k, v in sorted(params.items()))} ({what})")
    _save(best, model_path, zero_based, args.train)
    print(f"model written to {model_path}")
    return 0


def _validate(args, extra: list[str], prog: str) -> int:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not (root / "validation" / "__main__.py").is_file():
        raise ValueError(f"the validation suite was not found in {str(root)!r}: it is the "
                         "validation/ folder of a source checkout, next to msvm/ (install msvm "
                         "from the checkout with 'pip install -e .')")
    command = [sys.executable, "-m", "validation", *(["--quick"] if args.quick else []), *extra]
    return subprocess.run(command, cwd=root, check=False).returncode


def broken_pipe_status() -> int:
    """The reader of stdout went away (``msvm ... | head``): stop quietly, as Unix tools do
    (stdout to /dev/null, so that the exit's flush does not fail again), status 141."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):   # no file descriptor (a replaced sys.stdout)
        pass
    return 141


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in (*COMMANDS, "-h", "--help", "--version")
                    and argv[0].startswith("-")):
        argv = ["demo", *argv]  # the default command
    # grid.py writes '--log2c -5,15,2': a value starting with '-', which argparse reads as
    # an option unless it is attached ('--log2c=-5,15,2').
    for flag in ("--log2c", "--log2g"):
        while flag in argv[:-1]:
            i = argv.index(flag)
            argv[i:i + 2] = [f"{flag}={argv[i + 1]}"]
    if argv and argv[0] in ("fit", "train", "select"):
        argv = [argv[0], *_libsvm_weights(argv[1:])]
    if argv and argv[0] == "train":
        argv = [argv[0], *_libsvm_shrinking(argv[1:])]
    parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and args.command != "validate":   # validate passes the rest to the suite
            parser.parse_args(argv)   # the usual one-line error for unknown arguments
    except SystemExit as exc:  # --help, --version or a usage error (already printed)
        return int(exc.code or 0)
    except BrokenPipeError:   # --help or --version to a reader that went away
        return broken_pipe_status()
    prog = f"msvm {args.command}"
    try:
        _check_writable(getattr(args, "json", None), inputs={
            "TRAIN": getattr(args, "train", None), "TEST": getattr(args, "test", None)})
        if args.command == "validate":
            return _validate(args, extra, prog)
        return {"demo": _demo, "fit": _fit, "train": _train, "predict": _predict,
                "select": _select}[args.command](args, prog)
    except BrokenPipeError:
        return broken_pipe_status()
    except KeyboardInterrupt:
        from msvm._progress import end_open_lines

        end_open_lines()   # not after the progress line that the interrupt left open
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
