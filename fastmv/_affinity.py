"""Gaussian-kernel transition matrices (the input of :func:`fastmv.emvc`)."""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.linalg.blas as blas
import scipy.sparse as sp

from fastmv.kernels.affinity import (
    gaussian_transition_rows,
    gram_to_sq_distances,
    keep_nearest_neighbors,
    strict_upper_triangle,
)

from ._preprocessing import normalize_rows, row_norms
from ._threads import blas_threads, thread_limit
from ._validation import Interval, Options, check_array, check_dtype, declare_params

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


def _scaled(X, dtype):
    """``X`` times ``2**e`` (exact) with its largest magnitude in [0.5, 1), and ``e``: squared
    distances of the scaled rows can neither overflow nor underflow to zero."""
    values = X.data if sp.issparse(X) else X
    peak = float(np.abs(values).max()) if values.size else 0.0
    exponent = -math.frexp(peak)[1] if peak > 0 else 0
    if sp.issparse(X):
        return sp.csr_matrix((np.ldexp(X.data, exponent).astype(dtype, copy=False),
                              X.indices, X.indptr), shape=X.shape), exponent
    return np.ldexp(X, exponent).astype(dtype, copy=False), exponent


def _inv_two_sigma_sq(sigma, exponent):
    """``1 / (2 σ²)`` for distances scaled by ``2**(2 exponent)``, without overflow: a kernel
    so narrow that the factor exceeds the float range is capped at the largest float (every
    sample then keeps only its nearest neighbours at equal distance, the kernel's limit)."""
    mantissa, power = math.frexp(sigma)
    with np.errstate(over="ignore", under="ignore"):
        inv = float(np.ldexp(0.5 / (mantissa * mantissa), -2 * (power + exponent)))
    return min(inv, float(np.finfo(np.float64).max))


@declare_params({
    "X": ["array-like"],
    "sigma": [Options({"median"}), Interval(Real, 0, None, closed="neither")],
    "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
    "dtype": [Options({np.float32, np.float64, "float32", "float64"}), np.dtype],
    "n_jobs": ["n_jobs"],
})
def transition_matrix(X, sigma="median", n_neighbors=None, *, dtype=np.float64,
                      n_jobs=None) -> np.ndarray:
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
    n_neighbors : int or None, default None
        If given, keep only each sample's ``n_neighbors`` nearest neighbours (and itself),
        symmetrise the kept set (``i ~ j`` if either keeps the other), then normalise rows.
        ``sigma="median"`` is still taken over all pairs.
    dtype : float64 or float32, default float64
        Precision of the computation and of the result.
    n_jobs : int or None, default None
        Threads for the Numba kernels.

    Returns
    -------
    P : ndarray, shape (n, n)
        Nonnegative, every row sums to 1.

    Notes
    -----
    docs/algorithms.md §6. ``X`` is first scaled by a power of two (exact) so that its
    squared distances stay finite and nonzero: with ``sigma="median"`` (scale-invariant)
    ``X`` and ``c X`` give the same ``P`` for any ``c`` in 1e-300…1e300, and a fixed
    ``sigma`` is applied in the caller's units. Distances come from one BLAS ``syrk``
    (``X Xᵀ``, n² d flops) written straight into the output and turned into distances and
    then probabilities in place by parallel Numba kernels: the ``n × n`` output is the only
    ``n × n`` array, plus ``n²/2`` values for the median (or an ``n × n`` bool mask with
    ``n_neighbors``).

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
    >>> P = fastmv.transition_matrix(X)
    >>> P.sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0]
    >>> bool(np.allclose(P, fastmv.transition_matrix(X * 1e300)))
    True
    """
    dtype = check_dtype(dtype)
    X = check_array(X, "X", accept_sparse=True)
    n = X.shape[0]
    if isinstance(sigma, str):
        sigma = None
    with thread_limit(n_jobs):
        X, exponent = _scaled(X, dtype)
        sq = row_norms(X, squared=True).astype(dtype, copy=False)
        D2 = gram_to_sq_distances(_gram(X, dtype), sq)
        if sigma is None:
            # the median of the scaled distances: σ in scaled units, so no rescaling below
            exponent = 0
            sigma = 1.0
            if n >= 2:
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
                if med > 0:
                    sigma = med
        if n_neighbors is not None:
            keep = keep_nearest_neighbors(D2, n_neighbors)
            keep |= keep.T
            D2[~keep] = np.inf
            del keep
        P = gaussian_transition_rows(D2, _inv_two_sigma_sq(sigma, exponent))
    return P


def transition_matrices(views, *, sigma="median", n_neighbors=None, normalize=True):
    """One Gaussian transition matrix per view, the rows of each view scaled to unit norm
    first (how the demo, the command line and ``EMVC(transition=True)`` build EMVC's input).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv._affinity import transition_matrices
    >>> P = transition_matrices([np.eye(3), np.ones((3, 2))])
    >>> [bool(np.allclose(p.sum(axis=1), 1)) for p in P]
    [True, True]
    """
    return [transition_matrix(normalize_rows(X, "l2") if normalize else X, sigma=sigma,
                              n_neighbors=n_neighbors) for X in views]
