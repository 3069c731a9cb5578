"""msvm: all-in-one multi-class support vector machines.

Weston–Watkins, Crammer–Singer, Lee–Lin–Wahba and the M-SVM² as rows of one
dual problem (:mod:`msvm.machines`), solved by interchangeable solvers
(:mod:`msvm.solvers`) and certified by one diagnostics module
(:mod:`msvm.diagnostics`).  Start with :class:`MultiClassSVC`.
"""

from importlib.metadata import PackageNotFoundError, version

from msvm.bounds import enclosing_ball, radius_margin_bound
from msvm.estimator import MultiClassSVC
from msvm.model_selection import RadiusMarginSearch, loo_error

try:
    __version__ = version("msvm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "MultiClassSVC",
    "RadiusMarginSearch",
    "enclosing_ball",
    "loo_error",
    "radius_margin_bound",
    "__version__",
]
