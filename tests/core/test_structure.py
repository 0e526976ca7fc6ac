"""The checks that an input can reach the kernels and memory at all
(fastmv/_core/_structure.py): malformed sparse structure and oversized dense copies are
refused naming the argument, and the caller's buffers are never modified."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv._core import _structure
from fastmv._core._structure import check_fits_in_memory, check_sparse_structure
from fastmv.exceptions import InvalidParameterError


def _csr(data, indices, indptr, shape):
    # built without scipy's own checks, as a MATLAB or LIBSVM reader would hand it over
    X = sp.csr_matrix(shape)
    X.data, X.indices, X.indptr = (np.asarray(data, float), np.asarray(indices, np.int32),
                                   np.asarray(indptr, np.int32))
    return X


@pytest.mark.parametrize("indices, indptr, match", [
    ([1, 3], [0, 1, 2], r"column index 3 outside \[0, 3\) \(1-based"),
    ([-1, 0], [0, 1, 2], r"column index -1 outside"),
    ([0, 1], [0, 2, 1], "indptr"),
    ([0, 1], [0, 1], "indptr has length 2, expected 3"),
    ([0, 1], [1, 1, 2], "start at 0"),
])
def test_malformed_csr_is_refused_naming_the_argument(indices, indptr, match):
    with pytest.raises(InvalidParameterError, match=r"^X_list\[1\].*" + match):
        check_sparse_structure(_csr([1.0, 2.0], indices, indptr, (2, 3)), "X_list[1]")


def test_malformed_csc_names_the_row_index():
    X = sp.csc_matrix((3, 2))
    X.data, X.indices, X.indptr = np.ones(1), np.array([3], np.int32), np.array([0, 1, 1],
                                                                                  np.int32)
    with pytest.raises(InvalidParameterError, match=r"P has a row index 3 outside \[0, 3\)"):
        check_sparse_structure(X, "P")


def test_unsorted_duplicate_indices_are_canonicalised_on_a_copy():
    X = _csr([1.0, 2.0, 3.0], [2, 0, 2], [0, 3, 3], (2, 3))
    buffers = X.data.copy(), X.indices.copy(), X.indptr.copy()
    out = check_sparse_structure(X, "X")
    assert out.has_canonical_format
    np.testing.assert_array_equal(out.toarray(), [[2.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
    for before, after in zip(buffers, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(before, after)


def test_other_formats_become_csr_and_copy_is_honoured():
    X = sp.coo_matrix(np.eye(3))
    out = check_sparse_structure(X, "X", dtype=np.float32)
    assert out.format == "csr" and out.dtype == np.float32
    Y = sp.csr_matrix(np.eye(3))
    assert not np.shares_memory(check_sparse_structure(Y, "Y", copy=True).data, Y.data)


def test_a_copy_larger_than_memory_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(_structure, "_physical_memory", lambda: 2 ** 30)
    check_fits_in_memory((1000, 1000), 8, "X")  # 8 MB
    with pytest.raises(InvalidParameterError,
                       match=r"X_list\[0\]: a dense array of its shape \(2147483648, 2\) "
                             r"would need 32\.0 GiB, more than this machine's 1\.0 GiB"):
        check_fits_in_memory((2 ** 31, 2), 8, "X_list[0]")
    with pytest.raises(InvalidParameterError, match="the per-row arrays"):
        check_fits_in_memory((2 ** 31, 8), 8, "X", what="the per-row arrays")
    monkeypatch.setattr(_structure, "_physical_memory", lambda: None)  # not POSIX: no limit
    check_fits_in_memory((2 ** 31, 2), 8, "X")
