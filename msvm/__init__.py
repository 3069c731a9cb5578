"""msvm: all-in-one multi-class support vector machines.

Weston–Watkins, Crammer–Singer, Lee–Lin–Wahba and the M-SVM² as rows of one
dual problem (:mod:`msvm.machines`), solved by interchangeable solvers
(:mod:`msvm.solvers`) and certified by one diagnostics module
(:mod:`msvm.diagnostics`).  Start with :class:`MultiClassSVC`; keep a fitted
model with :func:`save` / :func:`load` (:mod:`msvm.io`) or export it with
:func:`to_onnx` (:mod:`msvm.onnx`).
"""

from importlib.metadata import PackageNotFoundError, version

from msvm import _core  # noqa: F401  (an unbuilt checkout fails here, with instructions)
from msvm.bounds import enclosing_ball, radius_margin_bound
from msvm.estimator import MsvmVersionWarning, MultiClassSVC
from msvm.io import ModelFileError, load, save
from msvm.model_selection import RadiusMarginSearch, loo_error
from msvm.onnx import to_onnx

try:
    __version__ = version("msvm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "ModelFileError",
    "MsvmVersionWarning",
    "MultiClassSVC",
    "RadiusMarginSearch",
    "enclosing_ball",
    "load",
    "loo_error",
    "radius_margin_bound",
    "save",
    "to_onnx",
    "__version__",
]
