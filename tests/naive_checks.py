"""NumPy twins of the boundary checks in ``kernels/_checks.py``: the same predicates written
from their definitions, without loops that could read out of bounds."""
from __future__ import annotations

import numpy as np


def in_range(idx, low, high):
    idx = np.asarray(idx)
    return bool(np.all((idx >= low) & (idx < high)))


def valid_ptr(ptr, n, total):
    ptr = np.asarray(ptr)
    return bool(ptr.shape[0] == n + 1 and ptr[0] == 0 and ptr[n] <= total
                and np.all(np.diff(ptr) >= 0))


def valid_csr(indptr, indices, data, n_rows, n_cols):
    if not valid_ptr(indptr, n_rows, min(len(indices), len(data))):
        return False
    return in_range(np.asarray(indices)[:indptr[n_rows]], 0, n_cols)


def valid_view_ptr(view_ptr, n_rows):
    m = len(view_ptr) - 1
    return bool(m >= 1 and valid_ptr(view_ptr, m, n_rows) and view_ptr[m] == n_rows)


def valid_dense_rows(dense, view_ptr, s):
    if dense is None:
        return True
    n_dense = len(dense.row_start) - 1
    if (n_dense < 0 or len(dense.value_start) != n_dense + 1 or len(view_ptr) < n_dense + 1
            or not valid_ptr(dense.row_start, n_dense, len(dense.rows))
            or not valid_ptr(dense.value_start, n_dense, len(dense.values))
            or dense.position.shape != (s, n_dense)
            or not in_range(dense.rows[:dense.row_start[n_dense]], 0, s)):
        return False
    d = np.diff(np.asarray(view_ptr)[:n_dense + 1])
    rows_per_view = np.diff(dense.row_start)
    if np.any(d < 0) or np.any(np.diff(dense.value_start) != rows_per_view * d):
        return False
    q = dense.position
    lo, hi = np.asarray(dense.row_start[:-1]), np.asarray(dense.row_start[1:])
    return bool(np.all((q == -1) | ((q >= lo) & (q < hi))))


def valid_sparse_rows(sparse, s, n_cols):
    if sparse is None:
        return True
    return valid_csr(sparse.indptr, sparse.indices, sparse.data, s, n_cols)
