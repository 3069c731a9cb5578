"""
10. Multi-class: all-in-one machines against one-vs-one and one-vs-all
======================================================================

The lecture stops at two classes.  With Q classes, scikit-learn's ``SVC``
trains Q(Q − 1)/2 binary SVMs and lets them vote (one-vs-one); one-vs-all
trains Q of them.  msvm's machines solve *one* quadratic program over all
classes: Weston–Watkins (WW), Crammer–Singer (CS), Lee–Lin–Wahba (LLW), the
M-SVM² and the rest of the unified family (ADM, ATS, ATM, OvA as a row of
the table, MMR); see :doc:`/machines`.

**What this lesson checks**: with two classes every machine is a binary SVM
(the README's table: WW and CS are SVC at 2C, LLW, ADM, ATM and MMR twice SVC
at C/2, ATS and OvA twice SVC at C, the M-SVM² twice a hard-margin SVC on
k + δ/(2C)); ``compare_multiclass`` measures each equivalence, and they hold
to 1e-5.  On three and four classes the table and the decision regions show
the machines side by side with one-vs-one and one-vs-rest.
"""

import matplotlib.pyplot as plt

from msvm.teaching import compare_multiclass, format_table, multiclass_set
from msvm.teaching.plots import plot_multiclass_regions

X, y = multiclass_set(2, 40, spread=1.6, random_state=1)
records = compare_multiclass(X, y, C=1.0, gamma=0.5, loo=False)
print(format_table([r for r in records if "q2_equivalent" in r],
                   ["method", "q2_equivalent", "q2_max_abs_diff", "accuracy"], ".3g"))
assert all(r["q2_max_abs_diff"] < 1e-5 for r in records if "q2_equivalent" in r)

# %%
# Three classes
# -------------
columns = ["method", "accuracy", "test_accuracy", "n_support", "time", "dual", "relative_gap",
           "loo_error", "bound_rate"]
X, y = multiclass_set(3, 60, spread=1.4, random_state=2)
X_test, y_test = multiclass_set(3, 300, spread=1.4, random_state=3)
records, estimators = compare_multiclass(X, y, C=1.0, gamma=0.5, X_test=X_test, y_test=y_test,
                                         loo=True, return_estimators=True)
print(format_table(records, columns, ".3g"))
assert all(r["relative_gap"] < 1e-6 for r in records if r["relative_gap"] is not None)
plot_multiclass_regions(estimators, X, y)

# %%
# Four classes
# ------------
X, y = multiclass_set(4, 60, spread=1.2, random_state=4)
records, estimators = compare_multiclass(X, y, C=1.0, gamma=0.5, loo=False,
                                         return_estimators=True)
print(format_table(records, columns[:7], ".3g"))
plot_multiclass_regions(estimators, X, y)
plt.show()
