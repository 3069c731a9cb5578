"""Streaming a :mod:`dask.array` through :meth:`MultiClassSVC.partial_fit`.

:func:`partial_fit_dask` feeds the row blocks of a dask array to
``partial_fit`` one after the other, in order, computing each block only
when it is needed: the data may be larger than memory (read from disk or
produced by a Dask cluster), while the model lives in the calling process.
Its memory is bounded by one block, the support patterns kept so far and
the kernel cache (``cache_size``); patterns that do not become support
patterns are forgotten after their block.  The model is the one a loop of
``partial_fit`` over the same blocks (as NumPy arrays) gives, whatever
scheduler computes the blocks.

:class:`dask_ml.wrappers.Incremental` and
:class:`dask_ml.model_selection.HyperbandSearchCV` /
``IncrementalSearchCV`` call ``partial_fit`` with dask-ml's own conventions
(``classes`` passed to every call, blocks shuffled unless
``shuffle_blocks=False``, the model moved between workers): see the
"Scaling out" page of the documentation.  This module needs the ``dask``
extra (``pip install "msvm[dask]"``); it imports dask only when called.
"""

from __future__ import annotations

import numpy as np

from msvm._optional import import_optional

__all__ = ["partial_fit_dask"]


def _dask_array():
    return import_optional("dask.array", "dask", "msvm.dask")


def _row_blocks(X):
    """X as a dask array chunked along rows only (one block spans every column)."""
    da = _dask_array()

    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask.array.Array, got {type(X).__name__}; for in-memory "
                        "data call partial_fit (or fit) directly.")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D dask array (n_samples, n_features), got {X.ndim}-D.")
    if np.isnan(X.shape[0]):
        raise ValueError("X has blocks of unknown length; call X.compute_chunk_sizes() first.")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def _aligned_labels(y, row_chunks: tuple):
    """y as one array per row block of X (a dask array is rechunked to match)."""
    da = _dask_array()

    n = sum(row_chunks)
    if not isinstance(y, da.Array):
        y = np.asarray(y)   # (a scalar or None: "has no len()" before)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got a {y.ndim}-D "
                         + ("dask array." if isinstance(y, da.Array) else f"array {y.shape}."))
    if np.isnan(y.shape[0]):   # (dask's "Cannot call len() on object with unknown chunk size")
        raise ValueError("y has blocks of unknown length; call y.compute_chunk_sizes() first.")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels.")
    if isinstance(y, da.Array):
        y = y.rechunk((row_chunks,))
        return [y.blocks[i] for i in range(len(row_chunks))]
    return np.split(y, np.cumsum(row_chunks)[:-1])


def partial_fit_dask(estimator, X, y, classes=None):
    """Feed every row block of a dask array to ``estimator.partial_fit``, in order.

    Block i of ``X`` (and the labels of its rows) is computed by the active
    Dask scheduler (a ``distributed.Client`` if one is set, else dask's
    default) only when block i − 1 has been fed, then passed to
    ``estimator.partial_fit``.  The estimator stays in this process, so the
    result equals ``for Xb, yb in blocks: estimator.partial_fit(Xb, yb,
    classes=classes)`` on the same blocks as NumPy arrays.

    Parameters
    ----------
    estimator : MultiClassSVC
        An estimator with ``partial_fit`` (bias-free machine, ``solver='auto'``
        or ``'online'``), fresh or already fed (the blocks continue its
        stream).
    X : dask.array.Array of shape (n_samples, n_features)
        The stream, in row blocks (blocks split along columns are joined
        first; blocks of no rows are skipped).  Blocks may be dense or
        ``scipy.sparse`` (CSR).
    y : dask.array.Array or array-like of shape (n_samples,)
        The labels (a dask array is rechunked to X's row blocks).
    classes : array-like, optional
        Every label of the stream.  When None and the estimator has not been
        fed yet, it is computed first (``da.unique(y)``, one pass over the
        labels only).

    Returns
    -------
    estimator
        The same estimator, fed.

    Raises
    ------
    AttributeError
        If the estimator has no ``partial_fit`` (the message says why).
    TypeError, ValueError
        If X is not a 2-D dask array with rows or y does not match its rows.

    Examples
    --------
    >>> import dask.array as da
    >>> from sklearn.datasets import load_iris
    >>> from msvm import MultiClassSVC
    >>> from msvm.dask import partial_fit_dask
    >>> X, y = load_iris(return_X_y=True)
    >>> Xd, yd = da.from_array(X, chunks=(15, 4)), da.from_array(y, chunks=15)
    >>> clf = partial_fit_dask(MultiClassSVC(model="cs", random_state=0), Xd, yd)
    >>> clf.solution_["n_seen"]
    150
    """
    da = _dask_array()
    import dask

    feed = estimator.partial_fit  # AttributeError (with the reason) before any block is read
    X = _row_blocks(X)
    labels = _aligned_labels(y, X.chunks[0])
    if classes is None and not hasattr(estimator, "classes_"):
        classes = da.unique(y).compute() if isinstance(y, da.Array) else np.unique(y)
    if sum(X.chunks[0]) == 0:
        raise ValueError("X has no rows: there is nothing to feed.")
    for i, block_labels in enumerate(labels):
        if X.chunks[0][i] == 0:
            continue   # an empty block (e.g. a filtered partition) holds nothing to feed
        X_block, y_block = dask.compute(X.blocks[i], block_labels)
        feed(X_block, np.asarray(y_block), classes=classes)
    return estimator
