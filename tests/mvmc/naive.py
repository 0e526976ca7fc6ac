"""NumPy twins of kernels/mvmc.py (docs/algorithms.md §1).

The dense MVMC (``mvmc_dense`` and its helpers) is ``benchmarks/references/mvmc.py``, which
the asv suite times against the solver and the solver tests check against.
"""
import numpy as np

# ---------------------------------------------------------------------------------------
# kernel twins
# ---------------------------------------------------------------------------------------

def masked_residual_product(A, B, Z, indptr, indices, values, mirror=None):
    n = Z.shape[0]
    R = np.zeros((n, n))
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            R[i, j] = A[i].astype(np.float64) @ B[j].astype(np.float64) - values[p]
            mask[i, j] = True
    RZ = (R @ Z.astype(np.float64)).astype(Z.dtype)
    return RZ, float((R[mask] ** 2).sum())


# the serial copy computes exactly what the parallel kernel does
masked_residual_product_serial = masked_residual_product


def clip_correction(A):
    S = np.clip(A, 0.0, 1.0)
    N = S - A
    sumsq = float((S.astype(np.float64) ** 2).sum())
    row_nnz = (N != 0).sum(axis=1).astype(np.int64)
    A[...] = N
    return sumsq, row_nnz


def dense_to_csr(A, indptr):
    rows, cols = np.nonzero(A)
    assert np.array_equal(np.bincount(rows, minlength=A.shape[0]), np.diff(indptr))
    return cols.astype(np.int32), A[rows, cols]


def knn_graph(F, w, pairs, q, normalise=False, must_link_weight=1.0):
    """Twin of ``fastmv._mvmc._graph.knn_graph``: the dense ``S`` (or, normalised,
    ``Ā_ij / √((Ā_ii + m)(Ā_jj + m))`` clipped to [0, 1], ``m`` the median diagonal), its
    observed entries (must-links ``must_link_weight``, cannot-links 0), the ``q`` largest
    off-diagonal entries of every row (by a full sort),
    ``max(K, Kᵀ)``."""
    n = F.shape[0]
    A = (F * w) @ F.T
    if normalise:
        d = np.maximum(np.diag(A), 0.0) + np.median(np.maximum(np.diag(A), 0.0))
        A = A / np.sqrt(np.outer(d, d))
    S = np.clip(A, 0.0, 1.0)
    i, j, s = pairs
    S[i, j] = s * must_link_weight
    S[j, i] = s * must_link_weight
    K = np.zeros((n, n))
    for r in range(n):
        others = np.array([c for c in range(n) if c != r])
        top = others[np.argsort(-S[r, others], kind="stable")[:q]]
        K[r, top] = S[r, top]
    return np.maximum(K, K.T)
