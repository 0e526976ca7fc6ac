"""Gaussian-kernel transition matrices (the input of :func:`fastmv.emvc`)."""
from __future__ import annotations

import numbers

import numpy as np
import scipy.linalg.blas as blas
import scipy.sparse as sp

from fastmv.kernels.affinity import (gaussian_transition_rows, gram_to_sq_distances,
                                     keep_nearest_neighbors, strict_upper_triangle)

from ._threads import blas_threads, thread_limit
from ._validation import check_array, check_dtype, check_int, check_scalar

__all__ = ["transition_matrix"]


def _gram(X, dtype):
    """``X Xᵀ`` (upper triangle at least) as a C-contiguous ``dtype`` array."""
    if sp.issparse(X):
        return np.ascontiguousarray((X @ X.T).toarray(), dtype=dtype)
    Xd = np.asarray(X, dtype=dtype)
    syrk = blas.ssyrk if dtype == np.float32 else blas.dsyrk
    # syrk on the Fortran view of the C-ordered X computes X Xᵀ with half the flops of a GEMM;
    # trans=1 because the Fortran view of X is Xᵀ; the upper triangle of the result is filled.
    # one large BLAS call: worth the call's threads from about 10⁹ multiply-adds up
    with blas_threads(Xd.shape[0] ** 2 * Xd.shape[1] >= 2e9):
        G = syrk(1.0, Xd.T, trans=1, lower=0)
    return np.ascontiguousarray(G)


def transition_matrix(X, sigma="median", n_neighbors=None, *, dtype=np.float64, n_jobs=None):
    """Row-stochastic Gaussian-kernel transition matrix of one view.

    ``P[i, j] = exp(−‖x_i − x_j‖² / (2σ²)) / Σ_l exp(−‖x_i − x_l‖² / (2σ²))``, self-loops
    included (as in the EMVC/RMSC authors' construction).

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n, d)
        One view, samples in rows.
    sigma : "median" or float > 0, default "median"
        Kernel width; ``"median"`` takes the median of the ``n (n − 1) / 2`` pairwise
        (non-squared) distances ``‖x_i − x_j‖``, ``i < j``.
    n_neighbors : int or None
        If given, keep only each sample's ``n_neighbors`` nearest neighbours (and itself),
        symmetrise the kept set (``i ~ j`` if either keeps the other), then normalise rows.
        ``sigma="median"`` is still taken over all pairs.
    dtype : float64 or float32
        Precision of the computation and of the result.
    n_jobs : int or None
        Threads for the Numba kernels.

    Returns
    -------
    P : ndarray, shape (n, n)
        Nonnegative, every row sums to 1.

    Notes
    -----
    Distances come from one BLAS ``syrk`` (``X Xᵀ``, O(n² d / 2)) written straight into the
    output and turned into distances and then probabilities in place by parallel Numba
    kernels: the ``n × n`` output is the only ``n × n`` array, plus ``n²/2`` values for the
    median (or an ``n × n`` bool mask with ``n_neighbors``). scipy's ``cdist`` is an order
    of magnitude or more slower on text-sized views.
    """
    dtype = check_dtype(dtype)
    X = check_array(X, "X", accept_sparse=True, dtype=dtype)
    n = X.shape[0]
    if not (isinstance(sigma, str) and sigma == "median"):
        if isinstance(sigma, str) or not isinstance(sigma, numbers.Real):
            raise ValueError(f"sigma must be 'median' or a positive number, got {sigma!r}")
        sigma = check_scalar(sigma, "sigma", low=0.0, low_inclusive=False)
    if n_neighbors is not None:
        n_neighbors = check_int(n_neighbors, "n_neighbors", low=1)
    with thread_limit(n_jobs):
        if sp.issparse(X):
            sq = np.asarray(X.multiply(X).sum(axis=1), dtype=dtype).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X).astype(dtype, copy=False)
        D2 = gram_to_sq_distances(_gram(X, dtype), sq)
        if isinstance(sigma, str):
            if n < 2:
                sigma = 1.0
            else:
                tri = strict_upper_triangle(D2)
                m = tri.size
                half = m // 2
                if m % 2:
                    med = float(np.sqrt(np.partition(tri, half)[half]))
                else:
                    part = np.partition(tri, [half - 1, half])
                    med = 0.5 * float(np.sqrt(part[half - 1]) + np.sqrt(part[half]))
                del tri
                # All points identical: any width gives the uniform matrix.
                sigma = med if med > 0 else 1.0
        if n_neighbors is not None:
            keep = keep_nearest_neighbors(D2, n_neighbors)
            keep |= keep.T
            D2[~keep] = np.inf
            del keep
        P = gaussian_transition_rows(D2, 1.0 / (2.0 * sigma * sigma))
    return P
