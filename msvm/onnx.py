"""ONNX export of a fitted :class:`~msvm.MultiClassSVC` (optional dependency group ``onnx``).

:func:`to_onnx` writes the model as an ONNX graph that computes, in float64
(``tensor(double)``), exactly what :meth:`~msvm.MultiClassSVC.decision_function`
and :meth:`~msvm.MultiClassSVC.predict` compute:

* ``scores`` = K(X, SV) β + b, with the kernel block built from ONNX
  operators: ``MatMul`` for the inner products (linear through ``coef_``,
  poly, sigmoid; RBF through ‖x‖² − 2⟨x, s⟩ + ‖s‖² clipped at 0, as
  scikit-learn computes it), and a ``Scan`` over the rows of X for the
  Laplace kernel's L1 distances (so memory stays n_SV × d per row; X gets
  one zero row more, whose kernel row is dropped, since onnxruntime's
  ``Scan`` fails on zero rows).  For two classes ``scores`` is h_2 − h_1 of
  shape (n,), scikit-learn's binary convention, else (n, Q).
* ``label`` = ``classes_[argmax scores]`` (``ArgMax`` keeps the first of
  tied classes, as NumPy's): int64 for integer labels (uint64 for unsigned
  labels beyond int64's range), double, bool or string otherwise.

Input ``X`` is a dense (n, n_features) double tensor: sparse data are
converted to dense before inference (``X.toarray()``), and sparse support
vectors are stored dense in the graph.  A precomputed kernel has no feature
vectors to export, and a callable kernel is Python code: both are refused.
The graph does not check its input as ``predict`` does: where ``predict``
raises a ValueError (NaN or infinite features, scores that overflow), the
graph returns NaN or infinite ``scores`` and a ``label`` that means nothing
(the first class, with onnxruntime); check ``X`` (e.g.
``np.isfinite(X).all()``) before inference.
The operators used keep the same signatures from opset 13 on, so the graph
is valid for every target opset ≥ 13 that skl2onnx asks for.

``skl2onnx``: :func:`register_skl2onnx` (called by :func:`to_onnx`, or once by
hand) registers the converter, after which ``skl2onnx.to_onnx(pipeline, X)``
converts a :class:`~sklearn.pipeline.Pipeline` ending in a MultiClassSVC, its
outputs ``label`` and ``scores`` as above (pass float64 sample data, or
``initial_types`` with ``DoubleTensorType``, to keep every step in double).
Several inputs (skl2onnx makes one per column of a DataFrame) are the
columns of X, in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from msvm._numbers import is_integer
from msvm._optional import import_optional

if TYPE_CHECKING:
    import onnx

    from msvm.estimator import MultiClassSVC

__all__ = ["MIN_OPSET", "ONNX_OPSET", "register_skl2onnx", "to_onnx"]

#: Opset of the graphs :func:`to_onnx` writes.
ONNX_OPSET = 17
#: Oldest opset whose operator signatures the graph uses (ReduceSum's axes input).
MIN_OPSET = 13
#: IR version written by :func:`to_onnx`: the oldest that carries ONNX_OPSET, so
#: that older runtimes read the file too.
_IR_VERSION = 8
_ALIAS = "MsvmMultiClassSVC"


def _onnx():
    return import_optional("onnx", "onnx", "ONNX export")


def _check_exportable(model) -> None:
    from sklearn.utils.validation import check_is_fitted

    from msvm.estimator import MultiClassSVC

    if not isinstance(model, MultiClassSVC):
        raise TypeError(f"to_onnx exports a msvm.MultiClassSVC, got {type(model).__name__}.")
    check_is_fitted(model)
    if callable(model.kernel):
        raise ValueError("A callable kernel cannot be exported to ONNX: it is Python code. Use a "
                         "named kernel.")
    if model._precomputed:
        raise ValueError("A kernel='precomputed' model cannot be exported to ONNX: its input is "
                         "the kernel between test and training points, which only the caller "
                         "can compute. Use a named kernel.")


def _classes_tensor(classes: np.ndarray) -> np.ndarray:
    """``classes_`` in the element type of the ``label`` output."""
    kind = np.asarray(classes).dtype.kind
    if kind in "iu":
        # Unsigned labels beyond int64's range would wrap to negative ones: keep them uint64.
        wide = kind == "u" and np.max(classes) > np.iinfo(np.int64).max
        return np.asarray(classes, dtype=np.uint64 if wide else np.int64)
    if kind == "f":
        return np.asarray(classes, dtype=np.float64)
    if kind == "b":
        return np.asarray(classes, dtype=bool)
    if all(isinstance(c, str) for c in classes):
        return np.asarray(classes, dtype=object)
    raise ValueError(f"Class labels {list(classes)!r} cannot be an ONNX tensor: use numbers or "
                     "strings.")


class _Graph:
    """The decision graph as a list of nodes and constants, with unique names.

    ``unique(name)`` returns a fresh name (skl2onnx's scope, or a counter for
    a standalone model), so the same builder serves both.
    """

    def __init__(self, unique) -> None:
        self.unique = unique
        self.nodes: list[tuple[str, list[str], str, dict]] = []
        self.constants: list[tuple[str, np.ndarray]] = []

    def const(self, name: str, value) -> str:
        name = self.unique(name)
        self.constants.append((name, np.asarray(value)))
        return name

    def op(self, op_type: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        out = out or self.unique(op_type.lower())
        self.nodes.append((op_type, list(inputs), out, attrs))
        return out


def _laplace_body(sv: np.ndarray, gamma: float):
    """Scan body: one row x ↦ exp(−γ ‖SV − x‖₁), an (n_SV,) vector."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Constant", [], ["sv"], value=numpy_helper.from_array(sv, "sv")),
        helper.make_node("Constant", [], ["axis"],
                         value=numpy_helper.from_array(np.array([1], dtype=np.int64), "axis")),
        helper.make_node("Constant", [], ["neg_gamma"],
                         value=numpy_helper.from_array(np.array(-gamma), "neg_gamma")),
        helper.make_node("Sub", ["sv", "x_row"], ["diff"]),
        helper.make_node("Abs", ["diff"], ["absdiff"]),
        helper.make_node("ReduceSum", ["absdiff", "axis"], ["l1"], keepdims=0),
        helper.make_node("Mul", ["l1", "neg_gamma"], ["arg"]),
        helper.make_node("Exp", ["arg"], ["k_row"]),
    ]
    return helper.make_graph(
        nodes, "laplace_row",
        [helper.make_tensor_value_info("x_row", TensorProto.DOUBLE, [sv.shape[1]])],
        [helper.make_tensor_value_info("k_row", TensorProto.DOUBLE, [sv.shape[0]])])


def _decision_graph(model, g: _Graph, x: str, label_out: str, scores_out: str) -> None:
    """Add the nodes computing ``label_out`` and ``scores_out`` from the double input ``x``."""
    Q = len(model.classes_)
    binary = Q == 2
    raw = g.unique("raw_scores") if binary else scores_out
    intercept = g.const("intercept", np.asarray(model.intercept_, dtype=np.float64))
    if getattr(model, "coef_", None) is not None:  # a linear kernel: X coefᵀ + b
        coef = model.coef_.toarray() if sp.issparse(model.coef_) else model.coef_
        coef_t = g.const("coef_t", np.ascontiguousarray(coef.T, dtype=np.float64))
        g.op("Add", [g.op("MatMul", [x, coef_t]), intercept], raw)
    else:
        sv = model.support_vectors_
        sv = np.ascontiguousarray(sv.toarray() if sp.issparse(sv) else sv, dtype=np.float64)
        gamma = float(model.gamma_)
        if model.kernel == "laplace":
            # onnxruntime's Scan fails on a batch of 0 rows: scan one zero row more, then
            # drop its kernel row.
            padded = g.op("Concat", [x, g.const("zero_row", np.zeros((1, sv.shape[1])))],
                          axis=0)
            K = g.op("Scan", [padded], num_scan_inputs=1, body=_laplace_body(sv, gamma))
            K = g.op("Slice", [K, g.const("first", np.array([0], dtype=np.int64)),
                               g.const("last", np.array([-1], dtype=np.int64)),
                               g.const("axis0", np.array([0], dtype=np.int64))])
        else:
            dot = g.op("MatMul", [x, g.const("sv_t", np.ascontiguousarray(sv.T))])
            if model.kernel == "rbf":
                axis = g.const("axis1", np.array([1], dtype=np.int64))
                xx = g.op("ReduceSum", [g.op("Mul", [x, x]), axis], keepdims=1)
                ss = g.const("sv_sqnorm", np.einsum("ij,ij->i", sv, sv)[None, :])
                d2 = g.op("Add", [g.op("Sub", [xx, g.op("Mul", [dot, g.const("two", 2.0)])]), ss])
                d2 = g.op("Max", [d2, g.const("zero", 0.0)])  # round-off, as sklearn clips
                K = g.op("Exp", [g.op("Mul", [d2, g.const("neg_gamma", -gamma)])])
            else:   # poly, sigmoid: γ⟨x, s⟩ + coef0, then a power or tanh
                arg = g.op("Add", [g.op("Mul", [dot, g.const("gamma", gamma)]),
                                   g.const("coef0", float(model.coef0))])
                if model.kernel == "poly":
                    K = g.op("Pow", [arg, g.const("degree", float(model.degree))])
                else:
                    K = g.op("Tanh", [arg])
        beta = g.const("dual_coef", np.asarray(model.dual_coef_, dtype=np.float64))
        g.op("Add", [g.op("MatMul", [K, beta]), intercept], raw)
    index = g.op("ArgMax", [raw], axis=1, keepdims=0)
    g.op("Gather", [g.const("classes", _classes_tensor(model.classes_)), index], label_out,
         axis=0)
    if binary:  # scikit-learn's convention: h_2 − h_1
        pick = [g.op("Gather", [raw, g.const(f"col{c}", np.array(c, dtype=np.int64))], axis=1)
                for c in (1, 0)]
        g.op("Sub", pick, scores_out)


def _label_elem_type(model):
    from onnx import TensorProto, helper

    classes = _classes_tensor(model.classes_)
    if classes.dtype == object:
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(classes.dtype)


def to_onnx(model: MultiClassSVC, *, target_opset: int = ONNX_OPSET,
            name: str = "msvm") -> onnx.ModelProto:
    """Export a fitted MultiClassSVC as an ONNX model.

    Parameters
    ----------
    model : MultiClassSVC
        Fitted, with a named kernel other than ``'precomputed'``.
    target_opset : int, default=ONNX_OPSET
        Opset of the graph, from :data:`MIN_OPSET` to the newest opset of
        the installed onnx.
    name : str, default='msvm'
        Name of the graph.

    Returns
    -------
    onnx.ModelProto
        Input ``X`` (double, shape (n, ``n_features_in_``)); outputs ``label``
        (n,) and ``scores`` ((n, n_classes), or (n,) for two classes), equal
        to ``predict`` and ``decision_function``.  Save it with
        ``onnx.save(model, path)``; run it with onnxruntime::

            sess = onnxruntime.InferenceSession(onx.SerializeToString())
            label, scores = sess.run(None, {"X": X.astype(np.float64)})

    Raises
    ------
    ValueError
        For a precomputed or callable kernel, labels that are neither
        numbers nor strings, or a ``target_opset`` out of range.
    ImportError
        Without the ``onnx`` package (``pip install 'msvm[onnx]'``).

    Examples
    --------
    >>> import numpy as np
    >>> import onnxruntime
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC, to_onnx
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MultiClassSVC(model="cs").fit(X, y)
    >>> onx = to_onnx(clf)
    >>> sess = onnxruntime.InferenceSession(onx.SerializeToString(),
    ...                                     providers=["CPUExecutionProvider"])
    >>> label, scores = sess.run(None, {"X": X[:3]})
    >>> label.tolist()
    [0, 0, 0]
    >>> np.allclose(scores, clf.decision_function(X[:3]))
    True
    """
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    _check_exportable(model)
    # NumPy integers too; above the installed onnx's newest opset, onnx's own error
    # ("Unsupported opset-version.") named neither the parameter nor the limit.
    newest = onnx.defs.onnx_opset_version()
    if not (is_integer(target_opset) and MIN_OPSET <= target_opset <= newest):
        raise ValueError(f"target_opset must be an integer from {MIN_OPSET} to {newest} (the "
                         f"newest opset of the installed onnx {onnx.__version__}), got "
                         f"{target_opset!r}.")
    target_opset = int(target_opset)
    counter: dict[str, int] = {}

    def unique(base: str) -> str:
        counter[base] = counter.get(base, 0) + 1
        return base if counter[base] == 1 else f"{base}_{counter[base]}"

    g = _Graph(unique)
    for reserved in ("X", "label", "scores"):
        unique(reserved)
    _decision_graph(model, g, "X", "label", "scores")
    nodes = [helper.make_node(op, inputs, [out], name=out, **attrs)
             for op, inputs, out, attrs in g.nodes]
    Q = len(model.classes_)
    n: int | None = None   # the batch dimension: any
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [n, int(model.n_features_in_)])],
        [helper.make_tensor_value_info("label", _label_elem_type(model), [n]),
         helper.make_tensor_value_info("scores", TensorProto.DOUBLE, [n] if Q == 2 else [n, Q])],
        initializer=[numpy_helper.from_array(value, cname) for cname, value in g.constants])
    from msvm import __version__

    onx = helper.make_model(graph, opset_imports=[helper.make_opsetid("", target_opset)],
                            producer_name="msvm", producer_version=__version__)
    onx.ir_version = max(_IR_VERSION, helper.find_min_ir_version_for(onx.opset_import))
    onnx.checker.check_model(onx)
    register_skl2onnx(missing_ok=True)
    return onx


# ------------------------------------------------------------------ skl2onnx
def _skl2onnx_types(model):
    from skl2onnx.common.data_types import (
        BooleanTensorType,
        DoubleTensorType,
        Int64TensorType,
        StringTensorType,
        UInt64TensorType,
    )

    kind = _classes_tensor(model.classes_).dtype.kind
    label = {"i": Int64TensorType, "u": UInt64TensorType, "f": DoubleTensorType,
             "b": BooleanTensorType}.get(kind, StringTensorType)
    Q = len(model.classes_)
    return label([None]), DoubleTensorType([None] if Q == 2 else [None, Q])


def _skl2onnx_parser(scope, model, inputs, custom_parsers=None):
    operator = scope.declare_local_operator(_ALIAS, model)
    operator.inputs = inputs
    label_type, scores_type = _skl2onnx_types(model)
    operator.outputs.append(scope.declare_local_variable("label", label_type))
    operator.outputs.append(scope.declare_local_variable("scores", scores_type))
    return operator.outputs


def _skl2onnx_shape(operator):
    operator.outputs[0].type, operator.outputs[1].type = _skl2onnx_types(operator.raw_operator)


def _skl2onnx_convert(scope, operator, container):
    from onnx import TensorProto, numpy_helper
    from skl2onnx.common.data_types import DoubleTensorType

    model = operator.raw_operator
    _check_exportable(model)
    if container.target_opset < MIN_OPSET:
        raise ValueError(f"msvm's ONNX graph needs target_opset >= {MIN_OPSET}, got "
                         f"{container.target_opset}.")
    g = _Graph(scope.get_unique_variable_name)
    # One input per column when skl2onnx is given a DataFrame: the features are their
    # concatenation (only the first was used, and onnxruntime refused the graph).
    widths = [v.type.shape[1] if len(v.type.shape) == 2 else None for v in operator.inputs]
    known = [w for w in widths if isinstance(w, int)]
    if len(known) == len(widths) and sum(known) != model.n_features_in_:
        raise ValueError(f"The inputs of the MultiClassSVC have {sum(known)} columns in all "
                         f"({', '.join(v.onnx_name for v in operator.inputs)}), but it was "
                         f"fitted on {model.n_features_in_} features.")
    columns = [v.full_name if isinstance(v.type, DoubleTensorType)
               else g.op("Cast", [v.full_name], to=TensorProto.DOUBLE)
               for v in operator.inputs]
    x = columns[0] if len(columns) == 1 else g.op("Concat", columns, axis=1)
    _decision_graph(model, g, x, operator.outputs[0].full_name, operator.outputs[1].full_name)
    for cname, value in g.constants:
        if value.dtype == object:
            container.add_initializer(cname, TensorProto.STRING, list(value.shape),
                                      [str(v).encode("utf-8") for v in value.ravel()])
        else:
            tensor = numpy_helper.from_array(value)
            container.add_initializer(cname, tensor.data_type, list(value.shape), tensor)
    for op, inputs, out, attrs in g.nodes:
        container.add_node(op, inputs, [out], name=scope.get_unique_operator_name(op),
                           op_version=MIN_OPSET, **attrs)


def register_skl2onnx(*, missing_ok: bool = False) -> bool:
    """Register the converter of MultiClassSVC with skl2onnx.

    After it, ``skl2onnx.to_onnx`` / ``convert_sklearn`` convert a
    MultiClassSVC and pipelines ending in one (outputs ``label`` and
    ``scores``, see the module docstring).

    Parameters
    ----------
    missing_ok : bool, default=False
        Return False instead of raising ImportError when skl2onnx is not
        installed.

    Returns
    -------
    bool
        Whether the converter is registered.

    Examples
    --------
    >>> from skl2onnx import to_onnx as skl2onnx_to_onnx
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from msvm import MultiClassSVC
    >>> from msvm.onnx import register_skl2onnx
    >>> register_skl2onnx()
    True
    >>> X, y = load_iris(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), MultiClassSVC(model="cs")).fit(X, y)
    >>> onx = skl2onnx_to_onnx(pipe, X[:1])
    >>> [output.name for output in onx.graph.output]
    ['label', 'scores']
    """
    try:
        skl2onnx = import_optional("skl2onnx", "onnx", "Registering the skl2onnx converter")
    except ImportError:
        if missing_ok:
            return False
        raise
    from msvm.estimator import MultiClassSVC

    skl2onnx.update_registered_converter(MultiClassSVC, _ALIAS, _skl2onnx_shape,
                                         _skl2onnx_convert, parser=_skl2onnx_parser,
                                         overwrite=True)
    return True
