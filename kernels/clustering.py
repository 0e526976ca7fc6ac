"""Kernels for k-means: the assignment step (fused argmin over precomputed inner products)
and the update step (per-cluster sums of dense or CSR rows).

The inner products ``X @ C.T`` stay a BLAS GEMM (or a scipy.sparse product) in the caller:
a hand-written loop never replaces a large matrix product. What these kernels fuse is the
O(n c) and O(nnz) work around it, which NumPy would do in several passes with temporaries.
"""
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def nearest_center(inner, x_sq_norms, c_sq_norms):
    """Assign every sample to its nearest center from precomputed inner products.

    Parameters
    ----------
    inner : ndarray, shape (n, c)
        ``X @ C.T``.
    x_sq_norms : ndarray, shape (n,)
        ``‖x_i‖²``.
    c_sq_norms : ndarray, shape (c,)
        ``‖c_k‖²``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        ``argmin_k ‖x_i − c_k‖²`` (the first minimiser on ties).
    sq_dist : ndarray, shape (n,)
        ``min_k ‖x_i − c_k‖²``, clipped at 0 (the expansion
        ``‖x‖² + ‖c‖² − 2 x·c`` can round below zero).

    Notes
    -----
    O(n c) time, parallel over samples; no temporaries beyond the outputs.
    """
    n, c = inner.shape
    labels = np.empty(n, dtype=np.int64)
    sq_dist = np.empty(n, dtype=inner.dtype)
    for i in prange(n):
        best = np.inf
        arg = 0
        for k in range(c):
            d = c_sq_norms[k] - 2.0 * inner[i, k]
            if d < best:
                best = d
                arg = k
        labels[i] = arg
        d = best + x_sq_norms[i]
        sq_dist[i] = d if d > 0.0 else 0.0
    return labels, sq_dist


@njit(cache=True)
def _row_blocks(n, n_blocks):
    bounds = np.empty(n_blocks + 1, dtype=np.int64)
    for b in range(n_blocks + 1):
        bounds[b] = (n * b) // n_blocks
    return bounds


@njit(cache=True)
def _reduce_blocks(partial, partial_counts):
    """Add the per-block accumulators in a fixed order (so the result does not depend on
    which thread ran which block)."""
    n_blocks, c, d = partial.shape
    sums = np.zeros((c, d), dtype=partial.dtype)
    counts = np.zeros(c, dtype=np.int64)
    for b in range(n_blocks):
        for k in range(c):
            counts[k] += partial_counts[b, k]
            for j in range(d):
                sums[k, j] += partial[b, k, j]
    return sums, counts


@njit(parallel=True, cache=True)
def cluster_sums(X, labels, n_clusters, n_blocks):
    """Per-cluster sums of the rows of a dense ``X`` and the cluster sizes.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
        Values in ``[0, n_clusters)``.
    n_clusters : int
    n_blocks : int
        Number of row blocks accumulated independently (pass ``numba.get_num_threads()``;
        taking it as an argument keeps the kernel cacheable).

    Returns
    -------
    sums : ndarray, shape (n_clusters, d), dtype of ``X``
        ``sums[k] = Σ_{i: labels[i] = k} X[i]``.
    counts : ndarray of int64, shape (n_clusters,)

    Notes
    -----
    O(n d) time. A scatter-add races when parallel, so each thread accumulates into its own
    ``(n_clusters, d)`` buffer over a fixed block of rows and the buffers are added at the end
    (memory O(threads · c · d)). The row partition depends on the thread count, so results
    depend on it only through floating-point rounding.
    """
    n, d = X.shape
    n_blocks = max(1, min(n_blocks, n))
    bounds = _row_blocks(n, n_blocks)
    partial = np.zeros((n_blocks, n_clusters, d), dtype=X.dtype)
    partial_counts = np.zeros((n_blocks, n_clusters), dtype=np.int64)
    for b in prange(n_blocks):
        for i in range(bounds[b], bounds[b + 1]):
            k = labels[i]
            partial_counts[b, k] += 1
            for j in range(d):
                partial[b, k, j] += X[i, j]
    return _reduce_blocks(partial, partial_counts)


@njit(parallel=True, cache=True)
def cluster_sums_csr(data, indices, indptr, n_features, labels, n_clusters, n_blocks):
    """Per-cluster sums of the rows of a CSR matrix and the cluster sizes.

    Parameters
    ----------
    data, indices, indptr : ndarrays
        The CSR arrays of an ``(n, n_features)`` matrix.
    n_features : int
    labels : ndarray of int, shape (n,)
    n_clusters : int
    n_blocks : int
        Number of row blocks accumulated independently (see :func:`cluster_sums`).

    Returns
    -------
    sums : ndarray, shape (n_clusters, n_features), dtype of ``data``
    counts : ndarray of int64, shape (n_clusters,)

    Notes
    -----
    O(nnz + threads · c · d) time and memory; per-thread buffers as in :func:`cluster_sums`.
    """
    n = indptr.shape[0] - 1
    n_blocks = max(1, min(n_blocks, n))
    bounds = _row_blocks(n, n_blocks)
    partial = np.zeros((n_blocks, n_clusters, n_features), dtype=data.dtype)
    partial_counts = np.zeros((n_blocks, n_clusters), dtype=np.int64)
    for b in prange(n_blocks):
        for i in range(bounds[b], bounds[b + 1]):
            k = labels[i]
            partial_counts[b, k] += 1
            for p in range(indptr[i], indptr[i + 1]):
                partial[b, k, indices[p]] += data[p]
    return _reduce_blocks(partial, partial_counts)


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract"})
def lloyd_step(X, centers, x_sq_norms, n_blocks):
    """One fused Lloyd step on dense data: assignment and per-cluster sums in one pass over X.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    centers : ndarray, shape (c, d)
    x_sq_norms : ndarray, shape (n,)
        ``‖x_i‖²``.
    n_blocks : int
        Number of row blocks with private accumulators (pass ``numba.get_num_threads()``).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Nearest center of every sample (first minimiser on ties).
    sq_dist : ndarray, shape (n,)
        Squared distance to it, clipped at 0.
    sums : ndarray, shape (c, d)
        Per-cluster sums of the rows of ``X`` under ``labels``.
    counts : ndarray of int64, shape (c,)

    Notes
    -----
    O(n d c) time, reading ``X`` once; meant for few clusters (``c`` up to a few dozen),
    where the ``X Cᵀ`` product is too skinny for BLAS to pay for its thread hand-off with
    Numba's pool. Larger ``c`` should use a BLAS GEMM and :func:`nearest_center`. The same
    answer as :func:`nearest_center` followed by :func:`cluster_sums`, up to rounding.
    """
    n, d = X.shape
    c = centers.shape[0]
    c_sq = np.empty(c, dtype=X.dtype)
    for k in range(c):
        s = 0.0
        for j in range(d):
            s += centers[k, j] * centers[k, j]
        c_sq[k] = s
    n_blocks = max(1, min(n_blocks, n))
    bounds = _row_blocks(n, n_blocks)
    labels = np.empty(n, dtype=np.int64)
    sq_dist = np.empty(n, dtype=X.dtype)
    partial = np.zeros((n_blocks, c, d), dtype=X.dtype)
    partial_counts = np.zeros((n_blocks, c), dtype=np.int64)
    for b in prange(n_blocks):
        for i in range(bounds[b], bounds[b + 1]):
            best = 0.0
            arg = 0
            for k in range(c):
                dot = 0.0
                for j in range(d):
                    dot += X[i, j] * centers[k, j]
                dist = c_sq[k] - 2.0 * dot
                if k == 0 or dist < best:
                    best = dist
                    arg = k
            labels[i] = arg
            best += x_sq_norms[i]
            sq_dist[i] = best if best > 0.0 else 0.0
            partial_counts[b, arg] += 1
            for j in range(d):
                partial[b, arg, j] += X[i, j]
    sums, counts = _reduce_blocks(partial, partial_counts)
    return labels, sq_dist, sums, counts
