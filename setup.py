"""Build the Cython extensions of msvm.

Everything else (metadata, dependencies) lives in pyproject.toml.  BLAS is
reached through ``scipy.linalg.cython_blas``, so no BLAS headers or link flags
are needed here.  The kernel cache and S2DO are built with OpenMP when the
compiler supports it (see ``_openmp_flags``); the online solver gets S2DO's flags.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILE_ARGS = ["-O3"]


def _openmp_flags() -> list[str]:
    """``["-fopenmp"]`` when the C compiler builds and links an OpenMP program, else ``[]``.

    The loops written with ``cython.parallel.prange`` then run on several
    threads; without OpenMP they compile to plain serial loops (same results).
    Set ``MSVM_NO_OPENMP=1`` to build without it.
    """
    if os.environ.get("MSVM_NO_OPENMP") or sys.platform == "win32":
        return []
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    if not shutil.which(cc[0]):
        return []
    source = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "omp.c")
        with open(path, "w") as f:
            f.write(source)
        try:
            result = subprocess.run([*cc, "-fopenmp", path, "-o", os.path.join(tmp, "omp")],
                                    capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return []
    return ["-fopenmp"] if result.returncode == 0 else []


OPENMP = _openmp_flags()

extensions = [
    Extension(
        "msvm._core._kernel_cache",
        ["msvm/_core/_kernel_cache.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS + OPENMP,
        extra_link_args=OPENMP,
    ),
    Extension(
        "msvm._core._s2do",
        ["msvm/_core/_s2do.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS + OPENMP,
        extra_link_args=OPENMP,
    ),
    Extension(
        "msvm._core._online",
        ["msvm/_core/_online.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS + OPENMP,
        extra_link_args=OPENMP,
    ),
    Extension(
        "msvm._core._linear",
        ["msvm/_core/_linear.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS,
    ),
    Extension(
        "msvm._core._ball",
        ["msvm/_core/_ball.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS,
    ),
    Extension(
        "msvm._core._frank_wolfe",
        ["msvm/_core/_frank_wolfe.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS,
    ),
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
