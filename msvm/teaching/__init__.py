"""Teaching: the SVM lecture (seed 003) as readable NumPy, checked against exact solvers.

Each function follows one section of the lecture and returns its result
*and* a trace of its iterations, so that a lesson can plot how it got there
and compare it with the exact optimum of msvm's reference QP solver:

* :func:`perceptron`, :func:`novikoff_bound`, :func:`linearly_separable` —
  the perceptron and its convergence theorem (:mod:`msvm.teaching.perceptron`);
* :func:`hard_margin_svm`, :func:`soft_margin_svm` — exact solutions, with
  w, b, the margin 1/‖w‖, ξ, the KKT kinds of the points and b from the free
  support vectors (:mod:`msvm.teaching.svm`);
* :func:`svm_primal` — the lecture's SVMPrimal update and where it converges
  (:mod:`msvm.teaching.svm_primal`);
* :func:`smo` — SMO with Platt's, the maximal-violating-pair and libsvm's
  second-order pair rules, tracing dual, primal, gap and KKT violation
  (:mod:`msvm.teaching.smo`);
* :mod:`msvm.teaching.kernels` — the lecture's kernels exactly as written;
* :func:`compare_binary`, :func:`compare_multiclass` — tables of records;
* :func:`face_report`, :func:`faces_along_s2do`, :func:`finish_runs` — why a
  decomposition solver crawls on a singular or badly conditioned face, and
  the exact face solves that end it (:mod:`msvm.teaching.conditioning`);
* :mod:`msvm.teaching.plots` — the figures (matplotlib is imported there
  only, so importing :mod:`msvm.teaching` does not need it).

Labels of the binary functions are any two values, coded ±1 (the larger one
+1, as in scikit-learn).
"""

from msvm.teaching.compare import compare_binary, compare_multiclass, format_table
from msvm.teaching.conditioning import face_report, faces_along_s2do, finish_runs
from msvm.teaching.data import logic_gate, multiclass_set, overlapping_set, separable_set
from msvm.teaching.kernels import kernel_matrix, make_kernel
from msvm.teaching.perceptron import (
    PerceptronResult,
    linearly_separable,
    novikoff_bound,
    perceptron,
)
from msvm.teaching.smo import PAIR_RULES, smo
from msvm.teaching.svm import (
    KKT_KINDS,
    BinarySVM,
    bias_bounds,
    bias_from_free_svs,
    dual_objective,
    hard_margin_svm,
    hinge_loss,
    kkt_classification,
    kkt_violation,
    primal_objective,
    soft_margin_svm,
)
from msvm.teaching.svm_primal import SVMPrimalResult, svm_primal, svm_primal_limit_C

__all__ = [
    "BinarySVM",
    "KKT_KINDS",
    "PAIR_RULES",
    "PerceptronResult",
    "SVMPrimalResult",
    "bias_bounds",
    "bias_from_free_svs",
    "compare_binary",
    "compare_multiclass",
    "dual_objective",
    "face_report",
    "faces_along_s2do",
    "finish_runs",
    "format_table",
    "hard_margin_svm",
    "hinge_loss",
    "kernel_matrix",
    "kkt_classification",
    "kkt_violation",
    "linearly_separable",
    "logic_gate",
    "make_kernel",
    "multiclass_set",
    "novikoff_bound",
    "overlapping_set",
    "perceptron",
    "primal_objective",
    "separable_set",
    "smo",
    "soft_margin_svm",
    "svm_primal",
    "svm_primal_limit_C",
]
