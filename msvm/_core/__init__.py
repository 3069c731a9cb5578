"""Compiled cores of msvm (Cython): the Gram-row cache and the decomposition solvers."""
