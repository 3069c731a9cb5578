"""
5. SVMPrimal: descending the primal, and where it ends
======================================================

The lecture turns the hinge loss's subgradient into two updates of (w, b).
The *batch* one, w ← (1 − λ)w + λ C Σ_{violators} y_i x_i, is a subgradient
step of length λ on the soft-margin primal at C (the slide has C = 1).  The
*online* one, SVMPrimal(D, λ), updates on each margin violation in turn:
w ← (1 − λ)w + λ y_i x_i, b ← b + λ y_i.

How does λ relate to C?  For the batch form λ is only a step size.  For the
online form, :mod:`msvm.teaching.svm_primal` derives that its rest points are
the soft-margin optimum at the C* for which Σ_i α_i(C*) = 1, *whatever λ*:
λ sets how closely the iterates approach it, not which problem they solve.
To train at a chosen C online, shrink at every visit and weight a violation
by nC (``mode='sgd'``, stochastic gradient descent on the primal).

**What this lesson checks**: the batch form's best iterate is within its
certified subgradient bound of the exact primal optimum; the online form
ends closer to the exact optimum at C* as λ decreases; the C-consistent
online form ends within 1 % of the optimal primal value at the chosen C.
"""

import matplotlib.pyplot as plt

from msvm.teaching import format_table, overlapping_set, svm_primal, svm_primal_limit_C
from msvm.teaching.plots import plot_svm_primal

X, y = overlapping_set(60, spread=1.2, random_state=1)
C_star = svm_primal_limit_C(X, y)
print(f"C* (sum of alpha = 1) = {C_star:.4f}")

runs = [svm_primal(X, y, lam, mode="online", epochs=300, C_limit=C_star)
        for lam in (0.01, 0.003, 0.001)]
runs += [svm_primal(X, y, 1e-3, mode="batch", C=1.0, epochs=400),
         svm_primal(X, y, 5e-4, mode="sgd", C=1.0, epochs=100)]
rows = [{"mode": r.mode, "lambda": r.lam, "C": r.C, "updates": r.n_updates,
         "P - P*": r.info["primal_gap"], "relative": r.info["relative_gap"],
         "||(w,b) - (w*,b*)||": r.info["distance"], "certified bound": r.info.get("bound")}
        for r in runs]
print(format_table(rows, floatfmt=".3g"))

online = [r for r in runs if r.mode == "online"]
assert online[0].info["distance"] > online[1].info["distance"] > online[2].info["distance"]
batch = runs[3]
assert batch.info["best_gap"] <= batch.info["bound"]
sgd = runs[4]
assert sgd.C == 1.0 and sgd.info["relative_gap"] < 1e-2   # within 1 % of P* at C = 1

plot_svm_primal(runs)
plt.show()
