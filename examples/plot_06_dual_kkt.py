"""
6. The dual problem and the KKT conditions
==========================================

The Lagrangian of the soft-margin problem gives w = Σ_i α_i y_i x_i,
Σ_i y_i α_i = 0 and 0 ≤ α_i ≤ C, and the dual

    max_α Σ_i α_i − ½ Σ_ij α_i y_i (x_iᵀx_j) y_j α_j.

The KKT conditions split the points in three kinds: α_i = 0 (outside the
margin, y_i f(x_i) ≥ 1), 0 < α_i < C (on the margin, y_i f(x_i) = 1, the
*free* support vectors that give b = y_i − wᵀx_i) and α_i = C (inside the
margin or misclassified, y_i f(x_i) ≤ 1).

**What this lesson checks**: at the exact optimum every point satisfies the
condition of its kind, b from the free support vectors equals scikit-learn's
intercept, and w = Σ α_i y_i x_i equals its ``coef_``.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import SVC

from msvm.teaching import bias_from_free_svs, format_table, overlapping_set, soft_margin_svm
from msvm.teaching.plots import plot_decision_function

C = 0.5
X, y = overlapping_set(50, spread=1.2, random_state=7)
svm = soft_margin_svm(X, y, C)
kinds = svm.kkt_kinds()
s = y * svm.decision_function(X)
rows = []
for kind, rule in (("non_sv", "y f >= 1"), ("free_sv", "y f = 1"), ("bound_sv", "y f <= 1")):
    mask = kinds == kind
    rows.append({"kind": kind, "count": int(mask.sum()), "KKT says": rule,
                 "min y f": s[mask].min() if mask.any() else None,
                 "max y f": s[mask].max() if mask.any() else None})
print(format_table(rows))
tol = 1e-7
assert np.all(s[kinds == "non_sv"] >= 1 - tol)
assert np.allclose(s[kinds == "free_sv"], 1, atol=tol)
assert np.all(s[kinds == "bound_sv"] <= 1 + tol)

# %%
# b from the free support vectors, and the same model from libsvm
K = X @ X.T
b = bias_from_free_svs(svm.alpha, y, K, C)
svc = SVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
print(f"b from free SVs: {b:.6f}   scikit-learn intercept_: {svc.intercept_[0]:.6f}")
print(f"w = sum alpha_i y_i x_i: {svm.w.round(6)}   coef_: {svc.coef_[0].round(6)}")
assert abs(b - svc.intercept_[0]) < 1e-4 and np.allclose(svm.w, svc.coef_[0], atol=1e-4)

plot_decision_function(svm, title=f"C = {C}: the three kinds of points")
plt.show()
