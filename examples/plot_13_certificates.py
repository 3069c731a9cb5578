"""
13. The certificate of every solver: the duality gap
====================================================

Weak duality says any primal value is above any dual value, so the gap
P − D of a solver's answer bounds how far it is from the optimum, whatever
the solver did to get there.  msvm computes the same certificate for every
solver (:func:`msvm.diagnostics.diagnose`): dual and primal objectives, the
relative duality gap and the KKT residuals.

**What this lesson checks**: every solver's gap is non-negative (up to
rounding), the exact solvers' relative gaps are at rounding level, the
iterative solvers' gaps are small at their tolerance, and one online pass
has the largest gap, as an approximate solver should.
"""

import matplotlib.pyplot as plt

from msvm.teaching import format_table, multiclass_set
from msvm.teaching.compare import solver_certificates
from msvm.teaching.plots import plot_certificates

X, y = multiclass_set(4, 120, spread=1.3, random_state=6)
records = solver_certificates(X, y, model="cs", C=1.0, gamma=0.5)
print(format_table(records, floatfmt=".3g"))
for r in records:
    assert r["relative_gap"] >= -1e-9
exact = [r for r in records if r["method"].startswith(("cvxpy", "osqp"))]
assert all(r["relative_gap"] < 1e-8 for r in exact)
assert max(records, key=lambda r: r["relative_gap"])["method"] == "online, 1 epoch"
plot_certificates(records)
plt.tight_layout()
plt.show()
