"""Compiled cores of msvm (Cython): the Gram-row cache and the decomposition solvers.

Importing this package checks that the compiled modules are there, so that an
unbuilt source checkout fails with instructions (at ``import msvm``) rather than
with a ``ModuleNotFoundError`` at the first fit.
"""

from importlib.util import find_spec

EXTENSIONS = ("_ball", "_frank_wolfe", "_kernel_cache", "_linear", "_online", "_s2do")

_missing = [name for name in EXTENSIONS if find_spec(f"{__name__}.{name}") is None]
if _missing:
    raise ImportError(
        f"msvm's compiled extensions ({', '.join(_missing)}) are missing from "
        f"{__path__[0]!r}: this msvm is a source checkout whose Cython modules were not "
        "built.  Build them there with 'pip install -e .' (or 'python setup.py build_ext "
        "--inplace'), or install msvm ('pip install .') and run Python from another "
        "directory, so that the installed package is imported rather than the checkout."
    )
del _missing
