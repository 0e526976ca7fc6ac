"""Lloyd's k-means with k-means++ seeding, on Numba assignment/update kernels."""
from __future__ import annotations

import dataclasses

import numba
import numpy as np
import scipy.sparse as sp

from fastmv.kernels.clustering import (cluster_sums, cluster_sums_csr, lloyd_step,
                                       nearest_center)

from ._result import Result
from ._threads import serial_when_small, thread_limit
from ._validation import (check_array, check_int, check_n_clusters, check_random_state,
                          check_scalar)

__all__ = ["kmeans", "KMeansResult"]


@dataclasses.dataclass(frozen=True, repr=False)
class KMeansResult(Result):
    """Result of :func:`kmeans`; unpacks as ``labels, centers, inertia``.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Index of the nearest center of every sample.
    centers : ndarray, shape (n_clusters, d)
    inertia : float
        Sum of squared distances of the samples to their nearest center.
    n_iter : int
        Lloyd iterations of the best run.
    """

    labels: np.ndarray
    centers: np.ndarray
    inertia: float
    n_iter: int

    def __iter__(self):
        return iter((self.labels, self.centers, self.inertia))


def _row_sq_norms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel().astype(X.dtype, copy=False)
    return np.einsum("ij,ij->i", X, X)


def _inner(X, C):
    """``X @ C.T`` as a dense C-contiguous array (BLAS for dense X, sparse × dense for CSR)."""
    if sp.issparse(X):
        return np.ascontiguousarray(X @ C.T)
    return X @ C.T


def _rows_dense(X, idx):
    if sp.issparse(X):
        return X[idx].toarray()
    return X[idx]


def _sq_dist_to(X, x_sq, Y):
    """Squared distances from every row of ``X`` to every row of dense ``Y``: (len(Y), n)."""
    d = (-2.0 * _inner(X, Y)).T
    d += x_sq[None, :]
    d += np.einsum("ij,ij->i", Y, Y)[:, None]
    np.maximum(d, 0.0, out=d)
    return d


def kmeans_plusplus(X, n_clusters, rng, x_sq=None, n_local_trials=None):
    """Greedy k-means++ seeding (Arthur & Vassilvitskii, with ``2 + log k`` local trials).

    Returns the initial centers, a dense ``(n_clusters, d)`` array.
    """
    n = X.shape[0]
    if x_sq is None:
        x_sq = _row_sq_norms(X)
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    first = int(rng.integers(n))
    centers[0] = _rows_dense(X, [first])[0]
    closest = _sq_dist_to(X, x_sq, centers[:1])[0]
    potential = closest.sum()
    for c in range(1, n_clusters):
        if potential <= 0:  # every sample coincides with a center: any choice is optimal
            cand = rng.integers(n, size=1)
        else:
            r = rng.random(n_local_trials) * potential
            cand = np.searchsorted(np.cumsum(closest, dtype=np.float64), r)
            np.clip(cand, 0, n - 1, out=cand)
        dist = _sq_dist_to(X, x_sq, _rows_dense(X, cand))
        np.minimum(closest[None, :], dist, out=dist)
        pots = dist.sum(axis=1)
        best = int(np.argmin(pots))
        centers[c] = _rows_dense(X, [cand[best]])[0]
        closest = dist[best]
        potential = pots[best]
    return centers


# Up to this many clusters a dense Lloyd step is one fused Numba pass over X (lloyd_step);
# beyond it the X Cᵀ product is worth a BLAS GEMM.
_FUSED_MAX_CLUSTERS = 32


def _assign_and_sum(X, centers, x_sq):
    n_clusters = centers.shape[0]
    with serial_when_small((X.nnz if sp.issparse(X) else X.size) * n_clusters):
        n_blocks = numba.get_num_threads()
        if not sp.issparse(X) and n_clusters <= _FUSED_MAX_CLUSTERS:
            return lloyd_step(X, centers, x_sq, n_blocks)
        labels, sq_dist = nearest_center(_inner(X, centers), x_sq,
                                         np.einsum("ij,ij->i", centers, centers))
        if sp.issparse(X):
            sums, counts = cluster_sums_csr(X.data, X.indices, X.indptr, X.shape[1],
                                            labels, n_clusters, n_blocks)
        else:
            sums, counts = cluster_sums(X, labels, n_clusters, n_blocks)
    return labels, sq_dist, sums, counts


def _lloyd(X, centers, x_sq, max_iter, tol):
    labels_old = None
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        labels, sq_dist, sums, counts = _assign_and_sum(X, centers, x_sq)
        new_centers = centers.copy()
        full = counts > 0
        new_centers[full] = sums[full] / counts[full, None]
        empty = np.flatnonzero(~full)
        if empty.size:
            # Relocate empty clusters to the samples farthest from their centers, as
            # scikit-learn does, so that no cluster stays empty.
            far = np.argsort(sq_dist, kind="stable")[::-1][: empty.size]
            new_centers[empty] = _rows_dense(X, far)
        shift = float(((new_centers - centers) ** 2).sum())
        centers = new_centers
        if labels_old is not None and np.array_equal(labels, labels_old) and not empty.size:
            break
        labels_old = labels
        if shift <= tol:
            break
    # Final assignment so that labels and inertia refer to the returned centers.
    labels, sq_dist, _, _ = _assign_and_sum(X, centers, x_sq)
    return labels, centers, float(sq_dist.sum(dtype=np.float64)), n_iter


def kmeans(X, n_clusters, *, n_init=10, max_iter=300, tol=1e-4, init="k-means++",
           random_state=None, n_jobs=None) -> KMeansResult:
    """Lloyd's k-means with greedy k-means++ seeding and several restarts.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n, d)
        Samples in rows. Sparse input is used as CSR and never densified.
    n_clusters : int
        Number of clusters, ``1 <= n_clusters <= n``.
    n_init : int, default 10
        Number of seedings; the run with the lowest inertia is returned.
    max_iter : int, default 300
        Lloyd iterations per run.
    tol : float, default 1e-4
        Convergence when the total squared center shift is at most ``tol`` times the mean
        per-feature variance of ``X`` (scikit-learn's convention), or when the labels stop
        changing.
    init : {"k-means++", "random"} or ndarray of shape (n_clusters, d)
        Seeding; an array gives the initial centers (and forces ``n_init = 1``).
    random_state : None, int or numpy Generator
        Makes the seeding reproducible.
    n_jobs : int or None
        Threads for the Numba kernels (``None``: ``NUMBA_NUM_THREADS``).

    Returns
    -------
    KMeansResult
        ``labels``, ``centers``, ``inertia``, ``n_iter``; unpacks as
        ``labels, centers, inertia``.

    Notes
    -----
    One iteration costs one GEMM ``X Cᵀ`` (O(n d c), BLAS; O(nnz · c) for sparse ``X``) plus
    the fused Numba assignment (O(n c)) and update (O(n d) or O(nnz)) kernels. Memory
    O(n c + threads · c · d) beyond ``X``. Dense input is centred first (on a copy) for
    accuracy of the distance expansion, as scikit-learn does.
    """
    X = check_array(X, "X", accept_sparse=True)
    n, d = X.shape
    n_clusters = check_n_clusters(n_clusters, n)
    n_init = check_int(n_init, "n_init", low=1)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_scalar(tol, "tol", low=0.0)
    rng = check_random_state(random_state)
    if isinstance(init, str):
        if init not in ("k-means++", "random"):
            raise ValueError(f"init must be 'k-means++', 'random' or an array, got {init!r}")
        init_centers = None
    else:
        init_centers = check_array(init, "init", accept_sparse=False, dtype=X.dtype)
        if init_centers.shape != (n_clusters, d):
            raise ValueError(f"init must have shape ({n_clusters}, {d}), got {init_centers.shape}")
        n_init = 1

    if sp.issparse(X):
        mean = None
        col_mean = np.asarray(X.mean(axis=0)).ravel()
        col_var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - col_mean ** 2
        Xw = X
    else:
        mean = X.mean(axis=0)
        Xw = X - mean  # a new array: the caller's X is never modified
        col_var = Xw.var(axis=0)
    tol_abs = float(np.mean(col_var)) * tol
    x_sq = _row_sq_norms(Xw)

    best = None
    with thread_limit(n_jobs):
        for _ in range(n_init):
            if init_centers is not None:
                centers = init_centers - mean if mean is not None else init_centers.copy()
            elif init == "random":
                centers = _rows_dense(Xw, np.sort(rng.choice(n, n_clusters, replace=False)))
            else:
                centers = kmeans_plusplus(Xw, n_clusters, rng, x_sq=x_sq)
            run = _lloyd(Xw, np.array(centers, dtype=X.dtype), x_sq, max_iter, tol_abs)
            if best is None or run[2] < best[2]:
                best = run
    labels, centers, inertia, n_iter = best
    if mean is not None:
        centers = centers + mean
    return KMeansResult(labels=labels, centers=centers, inertia=inertia, n_iter=n_iter)
