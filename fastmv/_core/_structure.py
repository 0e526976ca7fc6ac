"""Checks that an input can be handed to the compiled kernels and allocated at all: the
index structure of a sparse matrix (the kernels index without bounds checks) and the size of
a dense copy against the machine's memory. Part of the one validator: used through
:mod:`fastmv._core._validation`, which re-exports them.
"""
from __future__ import annotations

import math
import os

import numpy as np
import scipy.sparse as sp

from ..exceptions import InvalidParameterError

__all__ = ["check_sparse_structure", "check_fits_in_memory"]


def _check_compressed(indptr, indices, n_data, n_major, n_minor, name, fmt):
    """indptr/indices of a CSR (major = rows) or CSC (major = columns) matrix."""
    what = "column" if fmt == "csr" else "row"
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        raise InvalidParameterError(f"{name} is a malformed {fmt.upper()} matrix: indptr has "
                                    f"length {indptr.shape[0]}, expected {n_major + 1}")
    if indptr[0] != 0 or indptr[-1] != indices.shape[0] or indptr[-1] != n_data:
        raise InvalidParameterError(f"{name} is a malformed {fmt.upper()} matrix: indptr must "
                                    f"start at 0 and end at len(indices) = len(data) = "
                                    f"{indices.shape[0]}")
    if n_major and np.any(np.diff(indptr) < 0):
        raise InvalidParameterError(f"{name} is a malformed {fmt.upper()} matrix: indptr decreases")
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= n_minor:
            bad = lo if lo < 0 else hi
            raise InvalidParameterError(f"{name} has a {what} index {bad} outside [0, {n_minor}) "
                             "(1-based indices? scipy.sparse indices start at 0)")


def check_sparse_structure(X, name: str, *, dtype=None, copy: bool = False):
    """Validate the internal structure of any scipy.sparse matrix or array and return it as
    a canonical ``scipy.sparse.csr_matrix`` (sorted indices, no duplicates).

    Kernels index with ``indptr``/``indices`` without bounds checks, so a malformed matrix
    (for instance 1-based indices, as MATLAB or LIBSVM users build them) would read or write
    outside its buffers and kill the interpreter; it is refused here instead, naming
    ``name``. CSR and CSC structure is checked directly (``indptr`` of the right length,
    starting at 0, non-decreasing, ending at ``len(indices)``; every index in range) before
    any conversion; other formats are checked by scipy's constructors. Anything else is
    converted to CSR once. A non-canonical result (unsorted or duplicate indices) is
    canonicalised on a copy: the caller's buffers are never modified.
    """
    if X.ndim != 2:
        raise InvalidParameterError(f"{name} must be 2-D, got {X.ndim}-D")
    n_rows, n_cols = X.shape
    fmt = X.format
    if fmt in ("csr", "csc"):
        n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
        _check_compressed(np.asarray(X.indptr), np.asarray(X.indices),
                          np.asarray(X.data).shape[0], n_major, n_minor, name, fmt)
    elif fmt == "bsr":
        try:
            X.check_format(full_check=True)
        except ValueError as exc:
            raise InvalidParameterError(f"{name} is a malformed BSR matrix: {exc}") from exc
    try:
        Xc = sp.csr_matrix(X, dtype=dtype)  # may share buffers with X
    except (ValueError, IndexError) as exc:
        raise InvalidParameterError(f"{name} is a malformed sparse matrix: {exc}") from exc
    shares = fmt == "csr" and (np.shares_memory(Xc.indices, X.indices)
                               or np.shares_memory(Xc.data, X.data))
    if shares and (copy or not Xc.has_canonical_format):
        Xc = Xc.copy()  # never sort or sum the caller's buffers in place
    elif copy and Xc is X:
        Xc = Xc.copy()
    if not Xc.has_canonical_format:
        Xc.sum_duplicates()  # also sorts the indices
    return Xc


#: Dense float64 values per row that any solver keeps for a sparse input, at least.
PER_ROW_VALUES = 8


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None


def shape_of(X):
    try:
        return tuple(X.shape)
    except Exception:
        return "unknown"


def check_fits_in_memory(shape, itemsize, name, what=None):
    """Refuse, naming ``name``, an array whose dense copy would exceed the machine's memory
    (a memmap or a broadcast view of 2**31 rows), before anything that size is allocated:
    a bare ``MemoryError`` (or the OS killing the process) names nothing."""
    size = math.prod(int(a) for a in shape)
    limit = _physical_memory()
    if limit is not None and size * itemsize > limit:
        what = what or f"a dense array of its shape {tuple(int(a) for a in shape)}"
        raise InvalidParameterError(
            f"{name}: {what} would need {size * itemsize / 2**30:.1f} GiB, more than this "
            f"machine's {limit / 2**30:.1f} GiB of memory")
