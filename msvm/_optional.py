"""Optional dependencies: imported when a feature needs them, with one message when absent."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional"]


def import_optional(name: str, extra: str, feature: str) -> ModuleType:
    """Import the module ``name`` of an optional dependency.

    Parameters
    ----------
    name : str
        The module, e.g. ``"dask.array"``.
    extra : str
        The msvm extra that installs it (``pip install 'msvm[<extra>]'``).
    feature : str
        What needs it, the subject of the error message (e.g. ``"ONNX export"``).

    Returns
    -------
    module

    Raises
    ------
    ImportError
        If it cannot be imported; the message names the package and the extra.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        package = name.split(".")[0]
        raise ImportError(f"{feature} needs the optional dependency {package!r} "
                          f"(pip install 'msvm[{extra}]').") from exc
