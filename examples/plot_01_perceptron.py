"""
1. The perceptron and its convergence theorem
=============================================

The perceptron looks for a hyperplane wᵀx + b = 0 with
s_i = y_i(wᵀx_i + b) > 0 for every point, updating w ← w + y_i x_i,
b ← b + y_i on each mistake.  The lecture's theorem (Novikoff) bounds the
number of updates by R²(‖w*‖² + b*²)/δ² for any (w*, b*) that separates the
data with y_i(w*ᵀx_i + b*) ≥ δ, where R² = max_i ‖x_i‖² + 1.

**What this lesson checks**: the number of updates is within the bound
evaluated with the hard-margin SVM's solution; the AND and OR exercises are
learned; on XOR the perceptron does not converge, and a linear program
confirms that no hyperplane separates XOR.

One correction to the slide: it updates when s_i < 0 and skips s_i ≥ 0.
Started at w = 0, b = 0, every s_i is 0, so that rule stops at once with
w = 0.  We update on s_i ≤ 0 (Rosenblatt's rule), which the theorem's proof
allows.
"""

import matplotlib.pyplot as plt

from msvm.teaching import (
    format_table,
    linearly_separable,
    logic_gate,
    novikoff_bound,
    perceptron,
    separable_set,
)
from msvm.teaching.plots import plot_decision_function, plot_perceptron_frames

# %%
# The lecture's exercises: AND, OR and XOR
# ----------------------------------------
# The four corners of the unit square, labelled by each gate.  AND and OR
# are separable; XOR is the lecture's example of a set that is not.

rows = []
for gate in ("and", "or", "xor"):
    X, y = logic_gate(gate)
    result = perceptron(X, y, max_epochs=100)
    rows.append({"gate": gate.upper(), "separable (LP)": linearly_separable(X, y),
                 "converged": result.converged, "updates": result.n_updates,
                 "epochs": result.n_epochs,
                 "w": None if not result.converged else [float(v) for v in result.w],
                 "b": result.b if result.converged else None})
print(format_table(rows))
assert [r["converged"] for r in rows] == [True, True, False]
assert [r["separable (LP)"] for r in rows] == [True, True, False]

# %%
# The convergence theorem on generated sets
# -----------------------------------------
# With the hard-margin solution (w*, b*) the margin constraints are
# y_i(w*ᵀx_i + b*) ≥ 1, so δ = 1 and the bound is R²(‖w*‖² + b*²).  The
# smallest bound over all separating (w, b) uses the (w, b) of smallest
# ‖w‖² + b²: a hard-margin SVM without bias on z = (x, 1).

rows = []
for seed in range(8):
    X, y = separable_set(40, margin=0.3, random_state=seed)
    result = perceptron(X, y)
    bound = novikoff_bound(X, y)
    tight = novikoff_bound(X, y, tightest=True)
    rows.append({"set": seed, "updates": result.n_updates, "bound (hard margin)": bound["bound"],
                 "bound (tightest)": tight["bound"], "R2": bound["R2"]})
    assert result.converged and result.n_updates <= tight["bound"] <= bound["bound"] + 1e-6
print(format_table(rows, floatfmt=".1f"))

# %%
# Watching it learn
# -----------------
# Frames of the hyperplane after successive updates; the circled point is
# the one the update was made on.

X, y = separable_set(30, margin=0.2, random_state=3)
result = perceptron(X, y)
fig = plot_perceptron_frames(result, n_frames=6)
fig.suptitle(f"{result.n_updates} updates, bound {novikoff_bound(X, y)['bound']:.0f}")

# %%
# The final perceptron separates the points, with no margin to speak of: the
# next lesson is about that margin.

ax = plot_decision_function(result, margins=False, title="the perceptron's hyperplane")
plt.show()
