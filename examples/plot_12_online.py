"""
12. Online learning: one pass over the data
===========================================

The perceptron and SVMPrimal visit the points one at a time.  msvm's online
solver (``MultiClassSVC(solver='online')``, the LaRank-style algorithm of
seed 004) does the same for the all-in-one machines: each new point gets a
step on its own dual variables, and an adaptive scheduler spends the rest
of the time on steps among the support patterns seen so far.  One pass
(``epochs=1``) gets close to the batch optimum for a fraction of the kernel
evaluations; ``epochs=None`` passes until the KKT conditions hold to ``tol``
and gives the batch solution.  ``partial_fit`` streams chunks.

**What this lesson checks**: the online dual after one pass is below the
batch dual (it is a feasible point of the same problem) and within a few
percent of it, for less than half the batch solver's kernel evaluations;
running to convergence reaches the batch dual to the solvers' tolerance.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from msvm import MultiClassSVC
from msvm.teaching import format_table

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X / 16, y, train_size=600, stratify=y,
                                                    random_state=0)
rows, settings = [], [("s2do (batch)", {"solver": "s2do"}),
                      ("online, 1 epoch", {"solver": "online", "epochs": 1}),
                      ("online, 2 epochs", {"solver": "online", "epochs": 2}),
                      ("online, to tol", {"solver": "online", "epochs": None})]
for label, options in settings:
    clf = MultiClassSVC(model="ww", C=10.0, random_state=0, **options).fit(X_train, y_train)
    s = clf.solution_
    rows.append({"method": label, "status": s["status"], "dual": s["dual_objective"],
                 "relative_gap": s["relative_gap"], "kernel evaluations":
                 s["n_kernel_evaluations"], "time": s["time"],
                 "test accuracy": clf.score(X_test, y_test)})
print(format_table(rows, floatfmt=".4g"))
batch, one, _, full = (r["dual"] for r in rows)
assert one <= batch * (1 + 1e-9) and one >= 0.95 * batch
assert rows[1]["kernel evaluations"] < 0.5 * rows[0]["kernel evaluations"]
assert abs(full - batch) <= 1e-3 * batch

# %%
# Streaming with ``partial_fit``: ten chunks, the dual of all the points fed
# so far after each one.
clf = MultiClassSVC(model="ww", C=10.0, random_state=0)
duals, accuracies = [], []
for X_chunk, y_chunk in zip(np.array_split(X_train, 10), np.array_split(y_train, 10),
                            strict=True):
    clf.partial_fit(X_chunk, y_chunk, classes=np.arange(10))
    duals.append(clf.solution_["dual_objective"])
    accuracies.append(clf.score(X_test, y_test))
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(range(1, 11), accuracies, "o-", label="test accuracy after each chunk")
ax.axhline(rows[0]["test accuracy"], color="k", ls=":", label="batch (s2do)")
ax.set_xlabel("chunks of 60 digits seen")
ax.set_ylabel("test accuracy")
ax.legend()
plt.show()
