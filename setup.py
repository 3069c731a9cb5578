"""Build the Cython extensions of msvm.

Everything else (metadata, dependencies) lives in pyproject.toml.  BLAS is
reached through ``scipy.linalg.cython_blas``, so no BLAS headers or link flags
are needed here.
"""

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILE_ARGS = ["-O3"]

extensions = [
    Extension(
        "msvm._core._kernel_cache",
        ["msvm/_core/_kernel_cache.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS,
    ),
    Extension(
        "msvm._core._s2do",
        ["msvm/_core/_s2do.pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS,
    ),
    Extension(
        "msvm._core._ball",
        ["msvm/_core/_ball.pyx"],
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
