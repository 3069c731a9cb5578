"""
8. Kernels, and the XOR exercise solved
=======================================

The dual and SMO only use inner products x_iᵀx_j; replacing them by a
kernel κ(x_i, x_j) = φ(x_i)ᵀφ(x_j) gives a linear machine in the feature
space of φ.  The lecture's kernels: linear xᵀy, polynomial (xᵀy + 1)^d (with
the + 1), RBF exp(−γ‖x − y‖²), Laplace exp(−γ‖x − y‖) and tanh(γxᵀy + r).

**What this lesson checks**: each kernel, as written, equals scikit-learn's
``pairwise_kernels`` with the corresponding parameters (the lecture's
Laplace kernel uses the Euclidean norm, scikit-learn's the L1 norm: they
agree in one dimension only); XOR, which no line separates, is separated by
the degree-2 polynomial kernel and by the RBF kernel.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import euclidean_distances, pairwise_kernels

from msvm.teaching import hard_margin_svm, kernel_matrix, logic_gate, soft_margin_svm
from msvm.teaching.kernels import sklearn_equivalent
from msvm.teaching.plots import plot_kernel_regions, plot_parameter_grid

rng = np.random.default_rng(0)
A, B = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
for name, params in (("linear", {}), ("poly", {"degree": 3}), ("rbf", {"gamma": 0.7}),
                     ("laplace", {"gamma": 0.7, "norm": "l1"}),
                     ("tanh", {"gamma": 0.3, "r": -0.5})):
    metric, kwargs = sklearn_equivalent(name, **params)
    diff = np.abs(kernel_matrix(A, B, name, **params)
                  - pairwise_kernels(A, B, metric=metric, **kwargs)).max()
    print(f"{name:8s} {params} = pairwise_kernels(metric={metric!r}, {kwargs}): "
          f"max diff {diff:.1e}")
    assert diff < 1e-12
lecture_laplace = kernel_matrix(A, B, "laplace", gamma=0.7)
assert np.allclose(lecture_laplace, np.exp(-0.7 * euclidean_distances(A, B)))

# %%
# The XOR exercise
# ----------------
# A hard margin exists for XOR with the degree-2 polynomial kernel: its
# feature space contains the product x₁x₂.

X, y = logic_gate("xor")
for name, params in (("poly", {"degree": 2}), ("rbf", {"gamma": 1.0})):
    svm = hard_margin_svm(X, y, name, **params)
    print(f"XOR, {name}: predictions {svm.predict(X)}, labels {y}, margin {svm.margin:.3f}")
    assert np.array_equal(svm.predict(X), y)
plot_kernel_regions(X, y, {"linear": ("linear", {}), "poly, d = 2": ("poly", {"degree": 2}),
                           "RBF, γ = 1": ("rbf", {"gamma": 1.0})}, C=100.0)

# %%
# Kernels on the two moons, and the effect of C and γ
# ----------------------------------------------------
# The tanh kernel is not positive semi-definite: its Gram matrix has negative
# eigenvalues, so the dual is not a convex QP.  msvm's exact (reference)
# solvers refuse it rather than answer a different problem; the check below
# shows the eigenvalue and the refusal.  The other kernels are positive definite.
X, y = make_moons(80, noise=0.2, random_state=0)
K_tanh = kernel_matrix(X, X, "tanh", gamma=0.5, r=-1.0)
print(f"smallest eigenvalue of the tanh Gram matrix: {np.linalg.eigvalsh(K_tanh)[0]:.3g}")
try:
    soft_margin_svm(X, y, 10.0, "tanh", gamma=0.5, r=-1.0)
    raise AssertionError("an indefinite kernel must be refused by the exact solver")
except ValueError as exc:
    print("exact solver:", exc)
plot_kernel_regions(X, y, {"linear": ("linear", {}), "poly, d = 3": ("poly", {"degree": 3}),
                           "RBF, γ = 2": ("rbf", {"gamma": 2.0}),
                           "Laplace, γ = 1": ("laplace", {"gamma": 1.0})},
                    C=10.0)
plot_parameter_grid(X, y, Cs=[0.1, 10.0], gammas=[0.2, 2.0, 20.0])
plt.show()
