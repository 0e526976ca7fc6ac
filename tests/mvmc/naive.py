"""NumPy twins of kernels/mvmc.py (docs/algorithms.md §1), and the dense NumPy MVMC.

The dense MVMC (``mvmc_dense`` and its helpers) lives in ``benchmarks/references/mvmc.py``, where
the asv suite times it against the solver; it is re-exported here so that the test-suite
checks the very reference the benchmarks use.
"""
import numpy as np

from benchmarks.references import mvmc as _ref_mvmc

mvmc_dense = _ref_mvmc.mvmc_dense
mvmc_objective = _ref_mvmc.mvmc_objective
observed_matrices = _ref_mvmc.observed_matrices
similarity_dense = _ref_mvmc.similarity_dense


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
