"""Property-based fuzzing of the LIBSVM reader: a valid matrix or a clear error, never a crash.

Bounded (200 generated files, no deadline per example) so it stays in the default suite.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from msvm.datasets import load_libsvm

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_TOKEN = st.one_of(
    st.from_regex(r"[+-]?[0-9]{1,3}(\.[0-9]{0,3})?", fullmatch=True),  # labels / values
    st.from_regex(r"-?[0-9]{1,3}:[+-]?[0-9]{0,3}(\.[0-9]{1,3})?(e[+-]?[0-9]{1,3})?",
                  fullmatch=True),  # index:value pairs, some malformed
    st.sampled_from(["qid:1", "#", "nan", "inf", ":", "1:", ":1", "1:1:1", "1:nan", ","]),
    st.text(min_size=1, max_size=4),
)
_LINE = st.lists(_TOKEN, max_size=6).map(" ".join)
_TEXT = st.lists(_LINE, max_size=6).map("\n".join).map(lambda s: s.encode("utf-8", "replace"))
_CONTENT = st.one_of(_TEXT, st.binary(max_size=64))


@hypothesis.settings(max_examples=200, deadline=None, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(content=_CONTENT)
def test_reader_returns_a_valid_matrix_or_a_clear_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "data.svm"
    path.write_bytes(content)
    try:
        X, y = load_libsvm(path)
    except ValueError as exc:
        assert "LIBSVM file" in str(exc)  # names the file (and the line when it can)
        return
    assert sp.issparse(X) and X.shape[0] == len(y) > 0
    assert np.all(np.isfinite(X.data)) and np.all(np.isfinite(y))


@pytest.mark.parametrize("index", [2**31, 2**64])
def test_a_feature_index_beyond_the_parser_is_a_clear_error(tmp_path, index):
    # Was an OverflowError ('value too large to convert to int'), which the command line
    # does not catch: a traceback.
    path = tmp_path / "data.svm"
    path.write_text(f"1 1:0.5\n2 {index}:1\n")
    with pytest.raises(ValueError, match=f"line 2: the feature index {index} is too large"):
        load_libsvm(path)


def test_labels_too_large_for_int64_stay_floats(tmp_path):
    # 1e20 is an integral float; it was cast to int64 and came back as -9223372036854775808.
    path = tmp_path / "data.svm"
    path.write_text("1e20 1:1\n-3e19 1:2\n2 1:3\n")
    _, y = load_libsvm(path)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [1e20, -3e19, 2.0])


def test_a_byte_order_mark_is_named(tmp_path):
    """A file saved as 'UTF-8 with BOM' (Windows Notepad) was refused with 'line 1: not
    text (non-ASCII bytes)', which does not say which bytes or what to do."""
    path = tmp_path / "bom.svm"
    path.write_bytes(b"\xef\xbb\xbf1 1:0.5 2:1.0\r\n2 1:1.5 2:0.2\r\n")
    with pytest.raises(ValueError, match="line 1: the file starts with a UTF-8 byte-order mark"):
        load_libsvm(str(path))
    path.write_bytes(b"1 1:0.5 2:1.0\r\n2 1:1.5 2:0.2\r\n")   # Windows line endings alone
    X, y = load_libsvm(str(path))
    assert X.shape == (2, 2) and list(y) == [1, 2]
