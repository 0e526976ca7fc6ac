"""NumPy twins of ``fastmv.kernels.mvfl``, following docs/algorithms.md §2 literally (dense
matrices, direct formulas). Three twins are shared with the NumPy MVFL solver of
``benchmarks/references/mvfl.py`` (the oracle of the solver tests) and imported from there.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from benchmarks.references.mvfl import (  # noqa: F401  (twins the reference shares)
    _dense,
    irls_diagonal,
    multiplicative_f_update,
    weight_norms,
)

__all__ = [
    "weight_norms",
    "irls_diagonal",
    "cholesky_solve",
    "sparse_weighted_gram",
    "centre_woodbury_lower",
    "pair_gram",
    "multiplicative_f_update",
    "labelled_rows_update",
]


def cholesky_solve(L, R):
    d, c = R.shape
    S = np.zeros((d, c), dtype=R.dtype)
    for k in range(c):
        Lk = np.tril(np.asarray(L[k if L.shape[0] > 1 else 0], dtype=np.float64))
        if d:
            S[:, k] = np.linalg.solve(Lk @ Lk.T, np.asarray(R[:, k], dtype=np.float64))
    return S


def sparse_weighted_gram(indptr, indices, data, t_indptr, t_indices, t_data, dinv):
    n = len(indptr) - 1
    d = dinv.shape[1]
    X = sp.csr_matrix((np.asarray(data, dtype=np.float64), indices, indptr), shape=(n, d)).toarray()
    return np.stack([X @ np.diag(dk) @ X.T for dk in np.asarray(dinv, dtype=np.float64)])


def centre_woodbury_lower(K, r, m):
    """The separate array passes the kernel fuses; returns the lower triangle's finiteness."""
    K -= r[:, None]
    K -= r[None, :]
    K += m
    K[np.diag_indices_from(K)] += 1.0
    return bool(np.isfinite(np.tril(K)).all())


def per_class_grams(Y, dinv):
    """The W step's Woodbury Grams one class at a time: ``Y diag(dinv[k]) Yᵀ`` (the twin of
    ``fastmv._mvfl._wstep.shared_grams`` and ``shared_grams_lower``)."""
    Y = np.asarray(Y, dtype=np.float64)
    return np.stack([Y @ np.diag(dk) @ Y.T for dk in np.asarray(dinv, dtype=np.float64)])


def pair_gram(F, indptr, indices, data):
    F = np.asarray(F, dtype=np.float64)
    Ip = _dense(indptr, indices, data, F.shape[0])
    return F.T @ Ip @ F


def labelled_rows_update(F, Z, rows, classes, lam):
    c = F.shape[1]
    for i, y in zip(rows, classes):
        for k in range(c):
            il = 0.0 if k == y else 1.0
            F[i, k] = max(Z[i, k] / (lam * il + 1.0), 0.0)


# ------------------------------------------------------------------------------------------
# reference solver


