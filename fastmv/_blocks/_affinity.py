"""Transition matrices of kNN / Gaussian graphs (the input of :func:`fastmv.emvc`)."""
from __future__ import annotations

import math
import warnings
from numbers import Integral, Real
from typing import Literal

import numpy as np
import scipy.linalg.blas as blas
import scipy.sparse as sp
from numpy.typing import ArrayLike, DTypeLike

from fastmv.kernels.affinity import (
    gaussian_transition_rows,
    gram_to_sq_distances,
    keep_nearest_neighbors,
    local_scaling_transition_rows,
    nearest_neighbors_rows,
    strict_upper_triangle,
)

from .._core._driver import caller_stacklevel
from .._core._preprocessing import normalize_rows, row_norms
from .._core._threads import blas_threads, thread_limit
from .._core._validation import Interval, Options, check_array, check_dtype, declare_params
from ..exceptions import DegenerateSolutionWarning
from ._peak import check_transition

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


#: Scale of the local kernel: σ_i is the distance to the i-th sample's 7th nearest neighbour
#: (Zelnik-Manor & Perona, "Self-tuning spectral clustering", NIPS 2004).
LOCAL_SCALE_NEIGHBOR = 7
#: Views whose entries are nonnegative and at least this fraction zero are read as counts or
#: tf-idf rows: the local kernel then measures distances between L2-normalised rows (cosine).
SPARSE_ZERO_FRACTION = 0.5


def _is_count_like(X):
    """Nonnegative with mostly zero entries (word counts, tf-idf, bags of features)."""
    n, d = X.shape
    if n * d == 0:
        return False
    if sp.issparse(X):
        values, nonzero = X.data, X.count_nonzero()
    else:
        values, nonzero = X, np.count_nonzero(X)
    return bool(values.size == 0 or values.min() >= 0) and nonzero <= (
        1 - SPARSE_ZERO_FRACTION) * n * d


def _default_neighbors(n, count_like):
    """``n_neighbors`` of the local kernel: ``max(10, round(√n))`` for count-like rows (a
    bag of words shares few terms with any one neighbour: more neighbours are needed to
    connect a class), 10 otherwise; at most ``n − 1`` (docs/records/emvc.md "The graph")."""
    k = max(10, int(round(math.sqrt(n)))) if count_like else 10
    return max(min(k, n - 1), 0)


@declare_params({
    "X": ["array-like"],
    "sigma": [Options({"median"}), Interval(Real, 0, None, closed="neither")],
    "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
    "kernel": [Options({"auto", "local", "gaussian"})],
    "neighbors": [Options({"union", "mutual"})],
    "dtype": [Options({np.float32, np.float64, "float32", "float64"}), np.dtype],
    "n_jobs": ["n_jobs"],
})
def transition_matrix(X: ArrayLike | sp.spmatrix, sigma: float | Literal["median"] = "median",
                      n_neighbors: int | None = None, *,
                      kernel: Literal["auto", "local", "gaussian"] = "auto",
                      neighbors: Literal["union", "mutual"] = "union",
                      dtype: DTypeLike = np.float64, n_jobs: int | None = None) -> np.ndarray:
    """Row-stochastic transition matrix of one view's similarity graph.

    Two constructions:

    - ``kernel="local"`` (what ``"auto"`` gives unless ``sigma`` is a number): the symmetric
      kNN graph with local scaling, ``W[i, j] = exp(−‖x_i − x_j‖² / (σ_i σ_j))`` for ``j``
      among the ``n_neighbors`` nearest neighbours of ``i`` or ``i`` among those of ``j``,
      ``W[i, i] = 1``, zero elsewhere, ``σ_i`` the distance from ``x_i`` to its 7th nearest
      neighbour (Zelnik-Manor & Perona 2004); ``P = W`` with rows scaled to sum 1. When the
      view is count-like (nonnegative, at least half its entries zero: word counts, tf-idf)
      the distances are those of the L2-normalised rows, i.e. cosine distances.
    - ``kernel="gaussian"``: the dense Gaussian kernel of the EMVC/RMSC authors,
      ``P[i, j] = exp(−‖x_i − x_j‖² / (2σ²)) / Σ_l exp(−‖x_i − x_l‖² / (2σ²))``, self-loops
      included, one global width ``σ``.

    The global Gaussian kernel fails on text: with the median width every pair of documents
    is at nearly the same distance, every ``P_v`` is nearly uniform and EMVC or spectral
    clustering of it returns one big cluster (BBCSport, 3Sources: docs/records/emvc.md "The
    graph"). The local kernel adapts the width to each sample's neighbourhood and keeps
    only neighbours, so it survives both text and dense features.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n, d)
        One view, samples in rows.
    sigma : "median" or float > 0, default "median"
        Width of the Gaussian kernel; ``"median"`` takes the median of the ``n (n − 1) / 2``
        pairwise (non-squared) distances ``‖x_i − x_j‖``, ``i < j``. A number with
        ``kernel="auto"`` selects the Gaussian kernel; the local kernel takes no ``sigma``.
    n_neighbors : int or None, default None
        Local kernel: neighbours per sample (default ``max(10, round(√n))`` for count-like
        views, 10 otherwise, at most ``n − 1``). Gaussian kernel: if given, keep only each
        sample's ``n_neighbors`` nearest neighbours (and itself), symmetrise the kept set
        (``i ~ j`` if either keeps the other), then normalise rows; ``sigma="median"`` is
        still taken over all pairs.
    kernel : {"auto", "local", "gaussian"}, default "auto"
        The construction (above).
    neighbors : {"union", "mutual"}, default "union"
        Which kNN pairs are kept: ``"union"``, ``i ~ j`` when either is among the other's
        ``n_neighbors`` nearest (the symmetrised kNN graph above); ``"mutual"``, only when
        both are (the mutual kNN graph: fewer edges, none to a hub that is close to many
        samples but has its own neighbours elsewhere; a sample can be left with its
        self-loop alone). The Gaussian kernel uses it only with ``n_neighbors``. The union
        is the default: on the seven shared datasets the mutual graph lifts EMVC on two
        (many samples per class) and lowers it on four, most where classes are small or
        the mutual graph leaves samples isolated (docs/records/emvc.md "Handwritten: the graph or
        the method?").
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
    docs/algorithms.md §6. Both kernels are invariant to scaling ``X`` by a constant (the
    Gaussian one with ``sigma="median"``). ``X`` is first scaled by a power of two (exact) so that
    its squared distances stay finite and nonzero: with ``sigma="median"`` (scale-invariant)
    ``X`` and ``c X`` give the same ``P`` for any ``c`` in 1e-300…1e300, and a fixed
    ``sigma`` is applied in the caller's units. Distances come from one BLAS ``syrk``
    (``X Xᵀ``, n² d flops) written straight into the output and turned into distances and
    then probabilities in place by Numba kernels: the ``n × n`` output is the only ``n × n``
    array, plus ``n²/2`` values for the median (or an ``n × n`` bool mask with
    ``n_neighbors``); the local kernel needs ``O(n · n_neighbors)`` beyond the output.

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
    >>> Z = np.array([[0.0, 1.0], [1.0, 1.0], [5.0, 1.0], [6.0, 1.0]])
    >>> P = fastmv.transition_matrix(Z, n_neighbors=1)          # local kernel, 1 neighbour
    >>> (P[0] > 0).tolist(), (P[2] > 0).tolist()
    ([True, True, False, False], [False, False, True, True])
    >>> G = fastmv.transition_matrix(Z, kernel="gaussian")      # dense global kernel
    >>> bool(np.all(G > 0))
    True
    """
    dtype = check_dtype(dtype)
    X = check_array(X, "X", accept_sparse=True)
    n = X.shape[0]
    if kernel == "local" and not isinstance(sigma, str):
        raise ValueError("sigma is the width of kernel='gaussian'; the local kernel takes "
                         "its widths from the neighbours (leave sigma='median')")
    if kernel == "auto":
        kernel = "gaussian" if not isinstance(sigma, str) else "local"
    check_transition(X, dtype=dtype, gaussian=kernel == "gaussian", n_neighbors=n_neighbors,
                     median=isinstance(sigma, str))
    if kernel == "local":
        with thread_limit(n_jobs):
            return _local_transition(X, n_neighbors, dtype, neighbors == "mutual")
    if isinstance(sigma, str):
        sigma = None  # type: ignore[assignment]  # "median": chosen below
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
            keep = (keep & keep.T) if neighbors == "mutual" else (keep | keep.T)
            D2[~keep] = np.inf
            del keep
        P = gaussian_transition_rows(D2, _inv_two_sigma_sq(sigma, exponent))
    return P


def _local_transition(X, n_neighbors, dtype, mutual=False):
    """The locally scaled kNN transition matrix (``transition_matrix(kernel="local")``)."""
    n = X.shape[0]
    count_like = _is_count_like(X)
    if count_like:
        X = normalize_rows(X, "l2")
    k = _default_neighbors(n, count_like) if n_neighbors is None else min(n_neighbors, n - 1)
    if k < 1:
        return np.ones((n, n), dtype=dtype)
    X, _ = _scaled(X, dtype)
    sq = row_norms(X, squared=True).astype(dtype, copy=False)
    D2 = gram_to_sq_distances(_gram(X, dtype), sq)
    index, sq_dist = nearest_neighbors_rows(D2, k)
    scale = min(LOCAL_SCALE_NEIGHBOR, k) - 1
    sigma = np.sqrt(sq_dist[:, scale]).astype(np.float64)
    positive = sigma[sigma > 0]
    # duplicates: a sample with 7 identical neighbours takes the smallest positive width
    # (all samples identical: any width, P uniform over the kept neighbours)
    sigma[sigma <= 0] = positive.min() if positive.size else 1.0
    return local_scaling_transition_rows(D2, index, sq_dist, sigma.astype(dtype), mutual)


def transition_matrices(views, *, sigma="median", n_neighbors=None, normalize=True):
    """One transition matrix per view (:func:`transition_matrix`, ``kernel="auto"``), the
    rows of each view scaled to unit norm first unless ``normalize=False`` (the demo scales
    them; ``fastmv.EMVC()`` and the command line build EMVC's input with
    ``normalize=False``, the README's route).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv._blocks._affinity import transition_matrices
    >>> P = transition_matrices([np.eye(3), np.ones((3, 2))])
    >>> [bool(np.allclose(p.sum(axis=1), 1)) for p in P]
    [True, True]
    """
    out = []
    for v, X in enumerate(views):
        X = normalize_rows(X, "l2") if normalize else X
        if _all_rows_equal(X):
            scaled = " after l2 scaling" if normalize else ""
            warnings.warn(
                f"view {v} is constant (every sample has the same row{scaled}): "
                "its transition matrix is uniform and carries no cluster structure; drop the "
                "view or check how it was read", DegenerateSolutionWarning,
                stacklevel=caller_stacklevel())
        out.append(transition_matrix(X, sigma=sigma, n_neighbors=n_neighbors))
    return out


def _all_rows_equal(X) -> bool:
    if X.shape[0] < 2:
        return False
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return (X - sp.csr_matrix(np.ones((X.shape[0], 1))) @ X[:1]).count_nonzero() == 0
    X = np.asarray(X)
    return bool(np.all(X == X[:1]))
