"""The docstrings' Examples sections, run as doctests (as scikit-learn runs its own).

Every docstring of the msvm package that holds ``>>>`` lines is one test.  It
runs against the msvm that ``import msvm`` finds (the checkout from its root,
an installed msvm from elsewhere), with its own namespace: an example imports
what it uses, as a reader copying it would.  Examples that need an optional
package (``REQUIRES``) skip when it is not installed.  A second test checks
that the names a user meets first (``DOCUMENTED``) each have an example.
"""

import doctest
import importlib
import inspect
import pkgutil

import pytest

import msvm

#: Optional packages an example needs, by the qualified name of its docstring
#: (a module name covers every docstring in it).
REQUIRES = {
    "msvm.dask": ("dask", "dask.array"),
    "msvm.onnx.to_onnx": ("onnx", "onnxruntime"),
    "msvm.onnx.register_skl2onnx": ("skl2onnx",),
    "msvm.teaching.plots": ("matplotlib",),
}

#: The public names that must each have an Examples section: ``msvm.__all__`` and the
#: public functions and classes of the modules a user meets first.
DOCUMENTED = [
    *(f"msvm.{name}" for name in msvm.__all__ if name != "__version__"),
    "msvm.dask.partial_fit_dask",
    *(f"msvm.datasets.{name}" for name in ("available_datasets", "find_shared_datasets",
                                             "load_libsvm", "load_libsvm_files",
                                             "shared_dataset")),
    "msvm.io.ModelFileNotFoundError",
    *(f"msvm.kernels.{name}" for name in ("Kernel", "IndefiniteKernelWarning", "check_gram",
                                            "check_kernel_range", "resolve_gamma")),
    *(f"msvm.diagnostics.{name}" for name in ("Diagnostics", "diagnose", "bias_from_kkt",
                                                "primal_objective", "kkt_violation",
                                                "project_feasible", "repair_equality")),
    "msvm.bounds.EnclosingBall",
    "msvm.bounds.RadiusMarginBound",
    "msvm.onnx.register_skl2onnx",
    *(f"msvm.teaching.{name}" for name in (
        "perceptron", "novikoff_bound", "linearly_separable", "hard_margin_svm",
        "soft_margin_svm", "svm_primal", "svm_primal_limit_C", "smo", "kernel_matrix",
        "make_kernel", "hinge_loss", "compare_binary", "compare_multiclass", "format_table",
        "face_report", "logic_gate", "separable_set", "overlapping_set", "multiclass_set",
        "BinarySVM", "dual_objective", "primal_objective", "bias_from_free_svs",
        "kkt_classification", "kkt_violation", "bias_bounds")),
    *(f"msvm.teaching.plots.{name}" for name in (
        "plot_decision_function", "plot_hinge_loss", "plot_perceptron_frames",
        "plot_convergence", "plot_svm_primal", "plot_kernel_regions", "plot_parameter_grid",
        "plot_multiclass_regions", "plot_bound_vs_loo", "plot_certificates",
        "plot_finish_runs")),
]

_SKIP_MODULES = {"msvm.__main__"}   # runs the command line when imported


def _modules():
    names = ["msvm"] + [info.name for info in pkgutil.walk_packages(msvm.__path__, "msvm.")]
    return [importlib.import_module(name) for name in sorted(names)
            if name not in _SKIP_MODULES]


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = {}
    for module in _modules():
        for test in finder.find(module):
            if test.examples:
                tests.setdefault(test.name, test)   # (a name re-exported by a package once)
    return [tests[name] for name in sorted(tests)]


def _missing(name: str) -> list[str]:
    """The optional packages the docstring ``name`` needs that cannot be imported."""
    needed = [pkg for key, pkgs in REQUIRES.items()
              if name == key or name.startswith(key + ".") for pkg in pkgs]
    missing = []
    for pkg in needed:
        try:
            importlib.import_module(pkg)
        except ImportError:
            missing.append(pkg)
    return missing


DOCTESTS = _doctests()


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples(test):
    missing = _missing(test.name)
    if missing:
        pytest.skip(f"the example needs {', '.join(missing)}")
    test.globs = {"__name__": test.name}   # (not the module's namespace: see the docstring)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = []
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_name_has_example(name):
    module_name, _, attr = name.rpartition(".")
    obj = getattr(importlib.import_module(module_name), attr)
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc and ">>>" in doc, f"{name} has no Examples section"
