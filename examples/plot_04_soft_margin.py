"""
4. The soft-margin SVM and the hinge loss
=========================================

When no hyperplane separates the classes, each point gets a slack ξ_i ≥ 0:

    min ½‖w‖² + C Σ_i ξ_i  subject to  y_i(wᵀx_i + b) ≥ 1 − ξ_i,  ξ_i ≥ 0.

At the optimum ξ_i = max(0, 1 − y_i f(x_i)), the hinge loss, so the problem
is min ½‖w‖² + C Σ_i HingeLoss(f(x_i), y_i).  C trades the margin against
the total hinge loss.

**What this lesson checks**: at the exact optimum the slacks are the hinge
losses, the primal value ½‖w‖² + C Σ ξ equals the dual value, and as C grows
the margin shrinks while the total hinge loss falls.
"""

import matplotlib.pyplot as plt
import numpy as np

from msvm.teaching import format_table, hinge_loss, overlapping_set, soft_margin_svm
from msvm.teaching.plots import plot_decision_function, plot_hinge_loss

plot_hinge_loss()

# %%
# The effect of C
# ---------------

X, y = overlapping_set(60, spread=1.3, random_state=4)
rows = []
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, C in zip(axes, (0.01, 0.1, 10.0), strict=True):
    svm = soft_margin_svm(X, y, C)
    xi = svm.slacks()
    cert = svm.certificate()
    primal = 0.5 * svm.norm_w**2 + C * xi.sum()
    rows.append({"C": C, "margin": svm.margin, "sum xi": xi.sum(), "primal": primal,
                 "dual": cert["dual"], "support vectors": int(np.count_nonzero(svm.alpha))})
    assert np.allclose(xi, hinge_loss(svm.decision_function(X), y))
    assert abs(primal - cert["dual"]) <= 1e-7 * max(1.0, abs(primal))
    plot_decision_function(svm, ax=ax, title=f"C = {C:g}")
print(format_table(rows))
assert rows[0]["margin"] > rows[1]["margin"] > rows[2]["margin"]
assert rows[0]["sum xi"] > rows[1]["sum xi"] > rows[2]["sum xi"]
fig.tight_layout()
plt.show()
