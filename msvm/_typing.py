"""Type aliases of msvm's public signatures (read by type checkers; nothing here is checked
at run time)."""

from __future__ import annotations

import os
from typing import TypeAlias

import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = ["MatrixLike", "PathLike"]

#: Points or a kernel matrix: an array-like (NumPy array, nested sequence, pandas
#: DataFrame) or a SciPy sparse matrix or array (CSR is used as is, others are converted).
MatrixLike: TypeAlias = ArrayLike | sp.spmatrix | sp.sparray
#: A file name: a str or a path-like object (:class:`pathlib.Path`).
PathLike: TypeAlias = str | os.PathLike[str]
