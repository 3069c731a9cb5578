"""
14. Why decomposition crawls, and how an exact face solve ends it
=================================================================

SMO (lesson 7) and S2DO, its multi-class form, change two variables at a
time.  Near the end they are coordinate descent on the *face* of the box
they have reached: the free variables (0 < α < C) move, the others stay at
their bounds.  Two kinds of face make that slow (the derivation is in
:mod:`msvm.teaching.conditioning`):

* a **singular** face: with a kernel of rank r, the free variables' Hessian
  has rank at most r·(Q − 1) for the sum-to-zero machines, however many
  variables are free; along its null space the dual is linear, and pair
  steps zig-zag towards the bound where the solution lies;
* a **badly conditioned** face: one sweep of coordinate descent shrinks the
  error by about 1 − 1/κ, κ the condition number of the scaled Hessian.

A linear kernel in two dimensions (rank 2) and a large C give both.  msvm's
coordinate solvers hand such a small problem to an exact active-set method
on the dense dual after 20 passes per variable (``finish=True``, the
default): it solves each face by one dense solve and follows a null
direction to its bound at once.

**What this lesson checks**: for LLW, S2DO after 10⁵ passes stands on a
singular face (more free variables than the rank of their Hessian, which
is at most 2·(Q − 1)); for the M-SVM² every face is regular but its
condition number is above 10⁴; without the finish S2DO needs more than ten
times the passes after which the finish takes over, with it the solve ends
within a few passes of the hand-over; both reach the reference dual to 1e-9
relative.  WW on the
same data converges long before the hand-over, and the finish never runs.
"""

import matplotlib.pyplot as plt

from msvm.teaching import faces_along_s2do, finish_runs, format_table, multiclass_set
from msvm.teaching.plots import plot_finish_runs

X, y = multiclass_set(4, 80, spread=1.0, random_state=0)
Q = 4
face_columns = ["point", "n_free", "n_at_bound", "rank", "kernel_rank", "condition",
                "kkt_violation", "dual"]
run_columns = ["method", "status", "passes", "handover", "finish_time", "time",
               "relative_error"]

# %%
# LLW: a singular face
# --------------------
# After 10⁵ passes S2DO has found all but one of the bounds: seven free
# variables, whose Hessian has rank six.  The last one must still reach its
# bound, along the null direction, and the largest KKT violation stays near
# 1.5·10⁻³ (never below 5·10⁻⁴) for another 200 000 passes.

faces = faces_along_s2do(X, y, "llw")
print(format_table(faces, face_columns, ".3g"))
late = faces[-2]
assert late["rank"] <= late["kernel_rank"] * (Q - 1) < late["n_free"]
assert (late["n_free"], late["rank"]) == (7, 6)
assert late["n_at_bound"] == faces[-1]["n_at_bound"] - 1
llw = finish_runs(X, y, "llw")
print(format_table(llw, run_columns, ".3g"))
stalled = [v for n, v in llw[0]["trace"] if 1e5 <= n <= 3e5]
assert stalled and all(5e-4 <= v <= 2e-3 for v in stalled)
assert 1.2e-3 <= sorted(stalled)[len(stalled) // 2] <= 1.8e-3   # its median

# %%
# The M-SVM²: a badly conditioned face
# ------------------------------------
# The quadratic loss has no upper bound and its kernel is k + 1/(2C) on the
# diagonal, so every face is regular; but with C = 100 that diagonal is
# small, and the scaled Hessian's condition number is about 5·10⁵.

faces = faces_along_s2do(X, y, "msvm2")
print(format_table(faces, face_columns, ".3g"))
assert all(f["rank"] == f["n_free"] and f["condition"] > 1e4 for f in faces)
assert all(2e5 <= f["condition"] <= 1e6 for f in faces)   # "about 5·10⁵"
msvm2 = finish_runs(X, y, "msvm2")
print(format_table(msvm2, run_columns, ".3g"))

for plain, finished in (llw, msvm2):
    assert plain["passes"] > 10 * plain["handover"]
    assert finished["passes"] <= finished["handover"] + 10 and finished["finish_time"] > 0
    assert max(plain["relative_error"], finished["relative_error"]) < 1e-9

# %%
# WW converges long before the hand-over
# --------------------------------------
ww = finish_runs(X, y, "ww")
print(format_table(ww, run_columns, ".3g"))
assert all(r["passes"] < r["handover"] and r["finish_time"] == 0 for r in ww)

# %%
# The largest KKT violation along the passes: without the finish it falls
# slowly on a badly conditioned face and stalls on a singular one; the finish
# ends both at the hand-over.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
plot_finish_runs(llw, ax=left)
left.set_title("LLW, linear kernel, C = 100")
plot_finish_runs(msvm2, ax=right)
right.set_title("M-SVM², linear kernel, C = 100")
fig.tight_layout()
plt.show()
