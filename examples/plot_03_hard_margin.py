"""
3. The hard-margin SVM
======================

Scaling (w, b) so that the closest points have y_i(wᵀx_i + b) = 1 turns
"maximise the margin" into the quadratic program

    min ½‖w‖²  subject to  y_i(wᵀx_i + b) ≥ 1 for every i,

whose margin is δ = 1/‖w‖.  :func:`msvm.teaching.hard_margin_svm` solves it
exactly with msvm's reference QP solver (Clarabel), as a soft-margin problem
whose C is raised until no multiplier reaches it.

**What this lesson checks**: every constraint holds, the support vectors are
exactly on the margins f = ±1, the primal and dual objectives agree (zero
duality gap), and scikit-learn's SVC with a huge C gives the same w and b.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import SVC

from msvm.teaching import hard_margin_svm, separable_set
from msvm.teaching.plots import plot_decision_function

X, y = separable_set(40, margin=0.4, random_state=2)
svm = hard_margin_svm(X, y)
f = svm.decision_function(X)
support = svm.alpha > 0
print(f"w = {svm.w.round(4)}, b = {svm.b:.4f}, margin 1/||w|| = {svm.margin:.4f}")
print(f"support vectors: {np.flatnonzero(support)}, y f(x) there: {(y * f)[support].round(6)}")
print("certificate:", {k: float(f"{v:.3g}") for k, v in svm.certificate().items()})

assert np.all(y * f >= 1 - 1e-7)
assert np.allclose((y * f)[support], 1.0, atol=1e-7)
assert abs(svm.certificate()["gap"]) < 1e-8

svc = SVC(kernel="linear", C=1e6, tol=1e-10).fit(X, y)
print("scikit-learn SVC: w =", svc.coef_[0].round(4), "b =", round(float(svc.intercept_[0]), 4))
assert np.allclose(svc.coef_[0], svm.w, atol=1e-4)

plot_decision_function(svm, title="hard margin: the support vectors are on f = ±1")
plt.show()
