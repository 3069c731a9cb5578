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
intercept, and w = Σ α_i y_i x_i equals its ``coef_``.  With a tiny C no
support vector is free and the KKT conditions leave b an interval: libsvm and
msvm (with two classes or many) both take its middle.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import SVC

from msvm import MultiClassSVC
from msvm.teaching import (
    bias_bounds,
    bias_from_free_svs,
    format_table,
    overlapping_set,
    soft_margin_svm,
)
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

# %%
# When no support vector is free
# ------------------------------
# With a tiny C every α_i ends at C (or at 0): no equation y_i f(x_i) = 1 is left to
# give b.  Each point still gives an inequality, y_i f(x_i) ≤ 1 at C and ≥ 1 at 0,
# that is, a lower or an upper bound on b, and every b between the largest lower and
# the smallest upper bound is optimal.  libsvm takes the middle of that interval;
# msvm's certificate takes, for any machine and number of classes, the analytic
# centre of the KKT inequalities (``b_method`` ``'centre'``): the b that maximises
# the sum of the logarithms of their room, which with two classes, one bound on
# each side, is the same middle.  Weston–Watkins with two classes at C is the
# binary SVM at 2C, its b_1 − b_0 the binary b.
C_tiny = 1e-3
tiny = soft_margin_svm(X, y, C_tiny)
bounds, lower_set = bias_bounds(tiny.alpha, y, K, C_tiny)   # where each point is tight
lower, upper = bounds[lower_set].max(), bounds[~lower_set].min()
b_lecture = bias_from_free_svs(tiny.alpha, y, K, C_tiny)
b_libsvm = SVC(kernel="linear", C=C_tiny, tol=1e-10).fit(X, y).intercept_[0]
ww = MultiClassSVC(model="ww", kernel="linear", C=C_tiny / 2, fit_intercept=True,
                   tol=1e-8).fit(X, y)
b_msvm = ww.intercept_[1] - ww.intercept_[0]
n_free = int(np.sum(tiny.kkt_kinds() == "free_sv"))
print(f"free SVs: {n_free}   interval [{lower:.4f}, {upper:.4f}], "
      f"middle {0.5 * (lower + upper):.4f}")
print(f"lecture {b_lecture:.4f}   libsvm {b_libsvm:.4f}   msvm WW {b_msvm:.4f} "
      f"(b_method {ww.solution_['b_method']!r})")
assert n_free == 0 and ww.solution_["b_method"] == "centre"
assert abs(b_lecture - 0.5 * (lower + upper)) < 1e-9
assert abs(b_libsvm - b_lecture) < 1e-4 and abs(b_msvm - b_lecture) < 1e-4

fig, ax = plt.subplots(figsize=(7, 2.2))
ax.plot(bounds[lower_set], np.zeros(lower_set.sum()), ">", color="tab:blue", alpha=0.6,
        label="a point's lower bound on b")
ax.plot(bounds[~lower_set], np.zeros((~lower_set).sum()), "<", color="tab:red", alpha=0.6,
        label="a point's upper bound on b")
ax.axvspan(lower, upper, color="tab:green", alpha=0.2, label="every optimal b")
ax.axvline(b_msvm, color="black", label="the middle: libsvm, msvm")
ax.set_yticks([])
ax.set_xlabel("b")
ax.set_title(f"C = {C_tiny}: no free support vector, b is an interval")
ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
fig.tight_layout()
plt.show()
