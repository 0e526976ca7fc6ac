"""Preprocessing shared by the solvers: row norms and normalisation, canonical pairs.

One implementation of each, so that every solver treats rows and constraints alike. Row
norms are computed scale-safely: each row is divided by its largest absolute entry before
squaring, so a finite input never overflows to ``inf`` or underflows to ``0`` (views
multiplied by 1e300 or 1e-300 normalise to the same rows as the original).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import check_pairs

__all__ = ["row_norms", "normalize_rows", "canonical_pairs", "check_pair_conflicts"]

_NORMS = ("l2", "l1", "max")


def _row_max_abs(X) -> np.ndarray:
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        out = np.zeros(X.shape[0], dtype=np.float64)
        nz = np.diff(X.indptr) > 0
        if nz.any():
            out[nz] = np.maximum.reduceat(np.abs(X.data).astype(np.float64),
                                          X.indptr[:-1][nz])
        return out
    if X.shape[1] == 0:
        return np.zeros(X.shape[0], dtype=np.float64)
    return np.abs(X).max(axis=1).astype(np.float64)


def row_norms(X, *, norm: str = "l2", squared: bool = False) -> np.ndarray:
    """Norm of every row of a dense array or scipy.sparse matrix, in float64.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (n, d)
        The rows.
    norm : {"l2", "l1", "max"}, default "l2"
        Which norm.
    squared : bool, default False
        Return squared norms (``"l2"`` only; may overflow for rows beyond ~1e154, which
        the unsquared norm does not).

    Returns
    -------
    ndarray of float64, shape (n,)
        The norms (0 for zero rows).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv._core._preprocessing import row_norms
    >>> row_norms(np.array([[3.0, 4.0], [0.0, 0.0]]) * 1e300).tolist()
    [5e+300, 0.0]
    """
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
    scale = _row_max_abs(X)
    if norm == "max":
        return scale
    safe = np.where(scale > 0, scale, 1.0)
    inv = 1.0 / safe
    if sp.issparse(X):
        Y = sp.csr_matrix(X, dtype=np.float64)
        Y = sp.diags(inv) @ Y
        vals = (np.asarray(abs(Y).sum(axis=1)).ravel() if norm == "l1"
                else np.asarray(Y.multiply(Y).sum(axis=1)).ravel())
    else:
        Y = np.asarray(X, dtype=np.float64) * inv[:, None]
        vals = np.abs(Y).sum(axis=1) if norm == "l1" else np.einsum("ij,ij->i", Y, Y)
    if norm == "l1":
        return vals * scale
    if squared:
        return vals * scale * scale
    return np.sqrt(vals) * scale


def normalize_rows(X, norm: str | None = "l2"):
    """Rows scaled to unit norm (zero rows stay zero); a new object of the same kind.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (n, d)
        The rows; float32 stays float32, anything else becomes float64. Sparse input
        becomes CSR with sorted indices.
    norm : {"l2", "l1", "max"} or None, default "l2"
        Which norm; ``None`` returns ``X`` unchanged (not a copy).

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
        The normalised rows.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv._core._preprocessing import normalize_rows
    >>> normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]) * 1e-300).round(12).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    if norm is None:
        return X
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    scale = _row_max_abs(X)
    # two steps (by the largest entry, then by the norm of the scaled row) so that neither
    # step overflows or loses the row to underflow
    inv_scale = np.zeros_like(scale)
    np.divide(1.0, scale, out=inv_scale, where=scale > 0)
    if sp.issparse(X):
        Y = sp.csr_matrix(sp.diags(inv_scale) @ sp.csr_matrix(X, dtype=np.float64))
    else:
        Y = np.asarray(X, dtype=np.float64) * inv_scale[:, None]
    n2 = row_norms(Y, norm=norm)
    inv = np.zeros_like(n2)
    np.divide(1.0, n2, out=inv, where=n2 > 0)
    if sp.issparse(X):
        out = sp.csr_matrix(sp.diags(inv) @ Y, dtype=dtype)
        out.sort_indices()
        return out
    return np.ascontiguousarray(Y * inv[:, None], dtype=dtype)


def canonical_pairs(pairs, name: str, n: int) -> np.ndarray:
    """Index pairs of one sample set as a canonical ``(p, 2)`` int64 array.

    Each pair is ordered ``i < j``, rows are sorted and duplicates (in either orientation)
    removed. Self-pairs and out-of-range indices raise ``ValueError`` naming ``name``.

    Parameters
    ----------
    pairs : array-like of shape (p, 2) or None
        The pairs (``None``: none).
    name : str
        Argument name for error messages.
    n : int
        Number of samples (indices in ``[0, n)``).

    Returns
    -------
    ndarray of int64, shape (q, 2)
        Canonical pairs, ``q <= p``.

    Examples
    --------
    >>> from fastmv._core._preprocessing import canonical_pairs
    >>> canonical_pairs([[3, 1], [1, 3], [0, 2]], "must_link", 4).tolist()
    [[0, 2], [1, 3]]
    """
    arr = check_pairs(pairs, name, n)
    if arr.shape[0] == 0:
        return arr
    arr = np.sort(arr, axis=1)
    return np.unique(arr, axis=0)


def check_pair_conflicts(must, cannot, must_name: str = "must_link",
                         cannot_name: str = "cannot_link") -> None:
    """Raise ``ValueError`` if a pair is both must-linked and cannot-linked.

    Parameters
    ----------
    must, cannot : ndarray of int64, shape (p, 2)
        Canonical pairs (see :func:`canonical_pairs`; for pairs between two different sample
        sets, rows in a consistent orientation).
    must_name, cannot_name : str
        Argument names for the message.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv._core._preprocessing import check_pair_conflicts
    >>> check_pair_conflicts(np.array([[0, 1]]), np.array([[1, 2]]))
    """
    if must.shape[0] == 0 or cannot.shape[0] == 0:
        return
    n = int(max(must.max(), cannot.max())) + 1
    key_m = must[:, 0].astype(np.int64) * n + must[:, 1]
    key_c = cannot[:, 0].astype(np.int64) * n + cannot[:, 1]
    # a lookup table over the keys when their span is small: O(p + q), a few ms for 500 000
    # pairs, where np.intersect1d (hashing both sides) took a quarter of a CMVNMF solve
    span = int(key_c.max()) - int(key_c.min()) + 1
    kind = "table" if span <= max(1 << 22, 16 * (key_m.size + key_c.size)) else "sort"
    hit = np.flatnonzero(np.isin(key_m, key_c, kind=kind))
    if hit.size:
        p = int(hit[0])
        raise ValueError(f"pair {tuple(int(v) for v in must[p])} is in both {must_name} and "
                         f"{cannot_name}; a pair cannot be must-linked and cannot-linked")
