"""
11. The leave-one-out error and the radius–margin bound
=======================================================

The leave-one-out (LOO) error retrains the machine without each point in turn
and counts how many of them it then misclassifies: an almost unbiased
estimate of the test error, at the price of m trainings.  Only support
vectors can be LOO errors, so :func:`msvm.loo_error` retrains only those.
The radius–margin bound of the M-SVM² (seed 001, re-derived in
:mod:`msvm.bounds`) bounds the LOO error count from one training, through
the radius of the data in feature space and 1ᵀα; the key lemma behind it
also gives a sharper count of the points that *can* be LOO errors.

**What this lesson checks**: along a path of C, exact LOO errors ≤ key-lemma
count ≤ radius–margin bound at every C.
"""

import matplotlib.pyplot as plt

from msvm.teaching import format_table, multiclass_set
from msvm.teaching.compare import bound_path
from msvm.teaching.plots import plot_bound_vs_loo

X, y = multiclass_set(3, 75, spread=1.5, random_state=5)
records = bound_path(X, y, [0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0], gamma=0.5)
print(format_table(records, floatfmt=".4g"))
for r in records:
    assert r["loo_errors"] <= r["n_candidates"] <= r["bound"]
plot_bound_vs_loo(records)
plt.show()
