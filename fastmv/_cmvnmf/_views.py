"""How CMVNMF stores its views: the per-view normalisation (``normalize``, including the
``"minmax"`` way forward for negative data) and the common power-of-two scale."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core._preprocessing import normalize_rows


def max_abs(X):
    data = X.data if sp.issparse(X) else X
    return float(np.max(np.abs(data))) if data.size else 0.0


def _has_negative(X):
    data = X.data if sp.issparse(X) else X
    return bool(data.size) and float(data.min()) < 0


def view_scheme(X, normalize):
    """The scheme applied to one view (``"auto"`` resolved: ``"minmax"`` for a view with a
    negative entry, ``"l2"`` otherwise)."""
    if normalize == "auto":
        return "minmax" if _has_negative(X) else "l2"
    return normalize


def _minmax(X):
    """Each feature shifted and scaled to ``[0, 1]`` (constant features become 0), then each
    row to unit ℓ2 norm. A sparse view whose smallest entry of some feature is negative is
    densified by the shift; one with no negative entry keeps its zeros (its minimum is 0)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        lo = np.minimum(X.min(axis=0).toarray().ravel(), 0.0) if X.shape[0] else 0.0
        hi = X.max(axis=0).toarray().ravel()
        if np.any(lo < 0):
            X = X.toarray()
    else:
        lo, hi = X.min(axis=0), X.max(axis=0)
    span = hi - lo
    inv = np.zeros_like(span, dtype=np.float64)
    np.divide(1.0, span, out=inv, where=span > 0)
    if sp.issparse(X):
        Y = sp.csr_matrix(X @ sp.diags(inv.astype(X.dtype)))
        Y.sort_indices()
    else:
        Y = ((X - lo) * inv).astype(X.dtype, copy=False)
        Y[:, span <= 0] = 0.0
    return normalize_rows(Y, "l2")


def normalized_view(X, scheme):
    return _minmax(X) if scheme == "minmax" else normalize_rows(X, scheme)


def scaled_view(X, log2_scale):
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        X.sort_indices()
        X.data = np.ldexp(X.data, -log2_scale).astype(X.dtype)
        return X
    return np.ascontiguousarray(np.ldexp(X, -log2_scale).astype(X.dtype, copy=False))


def mostly_zero_as_csr(views, density=0.1):
    """The views with at most ``density`` nonzeros as sorted CSR, the others as they are.

    Products with a CSR view cost ``nnz · c`` instead of ``n d c``; they hold the same values
    and differ from the dense BLAS products only in rounding, which on the shared datasets
    left every sweep's labels and the final objective unchanged. k-means on the CSR copy takes
    another path (no centring, other rounding in its seeding and Lloyd steps) and ends in
    other partitions of the same inertia to three or four digits: the starts without pairs
    read these copies, those with pairs the views as given (``_Data.start_views``;
    docs/cmvnmf.md, "Speed")."""
    out = []
    for X in views:
        if not sp.issparse(X) and np.count_nonzero(X) <= density * X.size:
            X = sp.csr_matrix(X)
            X.sort_indices()
        out.append(X)
    return out
