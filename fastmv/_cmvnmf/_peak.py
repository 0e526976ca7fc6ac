"""CMVNMF's peak memory (docs/algorithms.md §4.7), checked before the views are normalised."""
from __future__ import annotations

import scipy.sparse as sp

from .._core._memory import check_memory

__all__ = ["peak_bytes", "check_cmvnmf"]

#: Copies of every view at the peak: normalised, scaled by a power of two when far from 1,
#: and (CSR views) the transpose kept for the products with ``X_aᵀ``.
_COPIES = 3
#: ``(n_a + d_a) × c`` float64 arrays per view: the factors, their updates, the best start's
#: and the products with the data.
_FACTOR_ARRAYS = 12


def peak_bytes(shapes, nnzs, itemsize, n_clusters):
    """Peak bytes of :func:`fastmv.cmvnmf` on views of ``shapes`` (``nnzs``: stored entries of
    the sparse ones, None for dense) beyond the views and the constraints."""
    data = sum(z * (itemsize + 4) + 8 * (n + 1) if z is not None else n * d * itemsize
               for (n, d), z in zip(shapes, nnzs))
    factors = sum(n + d for n, d in shapes) * n_clusters * 8 * _FACTOR_ARRAYS
    return _COPIES * data + factors


def check_cmvnmf(views, n_clusters):
    """Refuse :func:`fastmv.cmvnmf` when its peak exceeds the memory available."""
    shapes = [X.shape for X in views]
    nnzs = [X.nnz if sp.issparse(X) else None for X in views]
    needed = peak_bytes(shapes, nnzs, views[0].dtype.itemsize, n_clusters)
    check_memory(needed, f"cmvnmf() on {len(views)} views of "
                 + ", ".join(f"{n} × {d}" for n, d in shapes),
                 "the views are copied (normalised) about three times: pass float32 views "
                 "(halves them), keep text views sparse (CSR), or drop views")
