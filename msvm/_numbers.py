"""The library's number checks, as plain ``bool`` functions a type checker does not narrow on.

``isinstance(x, numbers.Real)`` is the right runtime test (it accepts NumPy's scalars
too), but mypy narrows on it: for an ``x`` annotated ``float`` (or ``int`` with
``Integral``) it finds the narrowed type impossible, since typeshed's float does not
inherit from Real, and skips every statement after the check as unreachable; for an
unannotated ``x`` it narrows to Real, which declares no comparison with an int.  These
functions return a ``bool``, so the checked value keeps its declared type.
"""

from numbers import Integral, Real

__all__ = ["is_integer", "is_real"]


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number (a :class:`numbers.Real`: Python's int and float,
    NumPy's integer and float scalars), not a bool (``True`` as a tolerance is a slip)."""
    return isinstance(value, Real) and not isinstance(value, bool)


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (a :class:`numbers.Integral`: Python's int, NumPy's
    integer scalars), not a bool."""
    return isinstance(value, Integral) and not isinstance(value, bool)
