"""Boundary checks of the public kernels: O(input) tests of index ranges and lengths.

Numba does not check bounds, so a kernel called directly with an index out of range or a
short array reads or writes outside its arrays. Every public kernel calls these first and
raises ``ValueError`` on a failed check (constant messages: Numba raises those without
calling back into the interpreter). They cost one pass over the index arrays, small beside
the kernels' own work over the same arrays.

Each check is compiled into the kernel that calls it (``inline="always"``), not as a function
of its own: a few comparisons per call site, where a separately compiled check costs a
compilation pipeline and an LLVM module per signature on a cold first call.
"""
from __future__ import annotations

from numba import njit

from ._options import SERIAL

__all__ = ["in_range", "valid_ptr", "valid_csr", "valid_view_ptr", "valid_dense_rows",
           "valid_sparse_rows"]


@njit(**SERIAL, inline="always")
def in_range(idx, low, high):
    """Whether every entry of the (any-dimensional) integer array ``idx`` is in ``[low, high)``.
    (``idx.flat``, not ``idx.ravel()``: Numba compiles ``ravel`` and its ``reshape`` as
    functions of their own on a first call, the flat iterator as a loop in place.)"""
    for x in idx.flat:
        if x < low or x >= high:
            return False
    return True


@njit(**SERIAL, inline="always")
def valid_ptr(ptr, n, total):
    """Whether ``ptr`` has ``n + 1`` non-decreasing entries from 0 to at most ``total``."""
    if ptr.shape[0] != n + 1 or ptr[0] != 0 or ptr[n] > total:
        return False
    for i in range(n):
        if ptr[i + 1] < ptr[i]:
            return False
    return True


@njit(**SERIAL, inline="always")
def valid_csr(indptr, indices, data, n_rows, n_cols):
    """Whether ``(data, indices, indptr)`` is a CSR structure of ``n_rows`` rows whose stored
    column indices lie in ``[0, n_cols)`` (only the entries ``indptr`` reaches are checked)."""
    # a conditional, not min(): Numba compiles min once per argument types and caller
    stored = indices.shape[0] if indices.shape[0] < data.shape[0] else data.shape[0]
    if not valid_ptr(indptr, n_rows, stored):
        return False
    return in_range(indices[:indptr[n_rows]], 0, n_cols)


@njit(**SERIAL, inline="always")
def valid_view_ptr(view_ptr, n_rows):
    """Whether ``view_ptr`` (``m + 1`` entries, ``m >= 1``) rises from 0 to exactly ``n_rows``."""
    m = view_ptr.shape[0] - 1
    return m >= 1 and valid_ptr(view_ptr, m, n_rows) and view_ptr[m] == n_rows


@njit(**SERIAL, inline="always")
def valid_dense_rows(dense, view_ptr, s):
    """Whether a chunk's compacted dense views (``DenseRows`` or None) are consistent with
    ``s`` chunk rows and the view widths in ``view_ptr``: offsets rising within their arrays,
    every block ``s_v d_v`` values long, rows in ``[0, s)``, positions in their view's range."""
    if dense is None:
        return True
    n_dense = dense.row_start.shape[0] - 1
    if (n_dense < 0 or dense.value_start.shape[0] != n_dense + 1
            or view_ptr.shape[0] < n_dense + 1
            or not valid_ptr(dense.row_start, n_dense, dense.rows.shape[0])
            or not valid_ptr(dense.value_start, n_dense, dense.values.shape[0])
            or dense.position.shape[0] != s or dense.position.shape[1] != n_dense
            or not in_range(dense.rows[:dense.row_start[n_dense]], 0, s)):
        return False
    for v in range(n_dense):
        d_v = view_ptr[v + 1] - view_ptr[v]
        if d_v < 0 or (dense.value_start[v + 1] - dense.value_start[v]
                       != (dense.row_start[v + 1] - dense.row_start[v]) * d_v):
            return False
        for i in range(s):
            q = dense.position[i, v]
            if q != -1 and (q < dense.row_start[v] or q >= dense.row_start[v + 1]):
                return False
    return True


@njit(**SERIAL, inline="always")
def valid_sparse_rows(sparse, s, n_cols):
    """Whether a chunk's sparse views (``SparseRows`` or None) are a CSR structure of ``s``
    rows with column indices in ``[0, n_cols)``."""
    if sparse is None:
        return True
    return valid_csr(sparse.indptr, sparse.indices, sparse.data, s, n_cols)
