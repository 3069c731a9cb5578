r"""
2. The margin of a separating hyperplane
========================================

The margin of a hyperplane that separates the data is its distance to the
closest point, δ = min_i \|wᵀx_i + b\| / ‖w‖.  Every run of the perceptron
stops at *some* separating hyperplane; which one depends on the order of the
points.  The SVM picks the one with the largest margin.

**What this lesson checks**: every perceptron hyperplane has a margin at
most that of the hard-margin SVM, whose margin is 1/‖w‖ and is attained at
its support vectors.
"""

import matplotlib.pyplot as plt
import numpy as np

from msvm.teaching import format_table, hard_margin_svm, perceptron, separable_set


def margin(w, b, X):
    """δ = min_i |wᵀx_i + b| / ‖w‖."""
    return float(np.min(np.abs(X @ w + b)) / np.linalg.norm(w))


X, y = separable_set(40, margin=0.4, random_state=5)
svm = hard_margin_svm(X, y)
rows = []
fig, ax = plt.subplots(figsize=(5, 4.5))
ax.scatter(X[:, 0], X[:, 1], c=np.where(y > 0, "#1f77b4", "#d62728"), s=20)
xs = np.linspace(X[:, 0].min(), X[:, 0].max(), 2)
rng = np.random.default_rng(0)
for run in range(6):
    order = rng.permutation(len(y))
    p = perceptron(X[order], y[order])
    rows.append({"run": run, "updates": p.n_updates, "margin": margin(p.w, p.b, X)})
    ax.plot(xs, -(p.w[0] * xs + p.b) / p.w[1], color="grey", lw=0.8)
w, b = svm.w, svm.b
rows.append({"run": "hard-margin SVM", "updates": None, "margin": svm.margin})
ax.plot(xs, -(w[0] * xs + b) / w[1], "k", lw=2, label="maximum margin")
for level in (-1, 1):
    ax.plot(xs, (level - w[0] * xs - b) / w[1], "k--", lw=1)
ax.set_ylim(X[:, 1].min() - 0.5, X[:, 1].max() + 0.5)
ax.legend()
ax.set_title("perceptron runs (grey) and the maximum-margin hyperplane")
print(format_table(rows))

# %%
# The SVM's margin equals the geometric definition, and is the largest.
assert abs(margin(w, b, X) - svm.margin) < 1e-6
assert all(r["margin"] <= svm.margin + 1e-9 for r in rows)
plt.show()
