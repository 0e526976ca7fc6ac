"""Peak memory of the building blocks (docs/algorithms.md §6), checked before they allocate
(:func:`fastmv._core._memory.check_memory`).

Each function returns the bytes a call allocates at its peak beyond its input, from the
shapes alone, so a call too large for the machine is refused before it starts. The counts
follow the code: a dense ``n × n`` array is ``n² · itemsize`` bytes, a sparse entry 12
(value and int32 index), an int64 16 per pair.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._core._memory import check_memory

__all__ = ["transition_peak_bytes", "check_transition", "dense_spectral_peak_bytes",
           "check_spectral", "kmeans_peak_bytes", "check_kmeans", "shape_of"]

#: Bytes of a sparse entry (float64 value and int32 index) and of an int64.
_SPARSE_ENTRY = 12
_INT = 8


def shape_of(X):
    """``X.shape`` as ints without converting ``X``, or None (a list of lists, ...: converted
    and checked later)."""
    try:
        shape = getattr(X, "shape", None)
        return tuple(int(a) for a in shape) if shape is not None else None
    except Exception:  # a closed file's dataset, ...: the validator names it
        return None


def transition_peak_bytes(n, d, itemsize, *, gaussian=False, n_neighbors=None,
                          median=True, nnz=None):
    """Peak bytes of :func:`fastmv.transition_matrix` on ``n`` samples of ``d`` features.

    The Gram matrix is written by BLAS in Fortran order and made C-contiguous (two ``n × n``
    arrays for a moment; a sparse ``X Xᵀ`` is a sparse product of up to ``n²`` entries and its
    float64 dense copy), then the output is that array. The Gaussian kernel's median takes
    ``n²/2`` values and their partitioned copy; with ``n_neighbors`` three ``n × n`` boolean
    masks. The local kernel needs ``O(n k)`` beyond the output.
    """
    nn = float(n) * float(n)
    copy = n * d * itemsize                                   # the scaled (and normalised) X
    if nnz is not None:                                       # X Xᵀ sparse, then dense
        gram = nn * (_SPARSE_ENTRY + 8) + nn * itemsize
    else:
        gram = 2 * nn * itemsize
    peak = copy + gram
    if gaussian:
        extra = nn * itemsize if median else 0.0              # n²/2 values, then partitioned
        if n_neighbors is not None:
            extra = max(extra, 3 * nn)                        # keep, keep.T, ~keep (bool)
        peak = max(peak, nn * itemsize + extra)
    return peak


def check_transition(X, *, dtype, gaussian, n_neighbors, median):
    """Refuse :func:`fastmv.transition_matrix` of ``X`` when its peak exceeds what is
    available."""
    shape = shape_of(X)
    if shape is None or len(shape) != 2:
        return
    n, d = shape
    nnz = X.nnz if sp.issparse(X) else None
    itemsize = np.dtype(dtype).itemsize
    needed = transition_peak_bytes(n, d, itemsize, gaussian=gaussian, n_neighbors=n_neighbors,
                                   median=median, nnz=nnz)
    remedy = ("the output is a dense n × n matrix: dtype=float32 halves it" if itemsize == 8
              else "the output is a dense n × n matrix, O(n²) whatever the settings")
    check_memory(needed, f"transition_matrix() of X of shape ({n}, {d}) "
                 f"({np.dtype(dtype).name})",
                 remedy + "; cluster a subsample, or the views directly (OPIMC streams them)")


def dense_spectral_peak_bytes(n, *, convert=False, markov=False):
    """Peak bytes of :func:`fastmv.spectral_clustering` (``markov=False``) or
    :func:`fastmv.markov_spectral_clustering` on a dense ``n × n`` array: the symmetry check
    ``|S − Sᵀ|`` and the scaled ``D^{-1/2} S D^{-1/2}`` take two float64 ``n × n`` arrays at a
    time, as the Markov variant's ``B`` and ``Θ = (B + Bᵀ)/2`` (NumPy reuses the
    temporaries); plus a float64 copy of ``S`` when it is another dtype (``convert``)."""
    nn = float(n) * float(n) * 8
    return 2 * nn + (nn if convert else 0.0)


def check_spectral(S, name, *, markov=False):
    """Refuse the dense path of the spectral blocks when its ``n × n`` work arrays do not
    fit (sparse matrices and operators take ``O(n k)`` and are not checked here)."""
    if (sp.issparse(S) or not isinstance(S, np.ndarray) or S.ndim != 2
            or S.shape[0] != S.shape[1]):
        return
    n = S.shape[0]
    convert = S.dtype != np.float64 or not S.flags.c_contiguous
    needed = dense_spectral_peak_bytes(n, convert=convert, markov=markov)
    caller = "markov_spectral_clustering" if markov else "spectral_clustering"
    check_memory(needed, f"{caller}() of a dense {name} of shape ({n}, {n})",
                 f"pass {name} as a scipy.sparse matrix (a kNN graph: "
                 "fastmv.transition_matrix(X, n_neighbors=...) then scipy.sparse.csr_matrix "
                 "drops the zeros) or a LinearOperator, whose products take O(n k)")


def kmeans_peak_bytes(n, d, *, nnz=None, n_init=10, n_threads=1, n_clusters=2):
    """Peak bytes of :func:`fastmv.kmeans`: the scaled (and, dense, centred) float64 copy of
    ``X`` (two for a moment when dense), the squared row norms, and per restart running at
    once the labels, distances and seeding potentials (``2 + log c`` trials) of every
    sample."""
    data = nnz * _SPARSE_ENTRY + (n + 1) * _INT if nnz is not None else 2 * n * d * 8
    per_run = n * (3 + 2 + math.log(max(n_clusters, 1))) * 8 + n_clusters * d * 8 * 2
    return data + n * 8 + min(n_init, max(n_threads, 1)) * per_run


def check_kmeans(X, n_clusters, n_init, n_threads):
    """Refuse :func:`fastmv.kmeans` when its copy of ``X`` and per-row arrays do not fit."""
    shape = shape_of(X)
    if shape is None or len(shape) != 2:
        return
    n, d = shape
    needed = kmeans_peak_bytes(n, d, nnz=X.nnz if sp.issparse(X) else None, n_init=n_init,
                               n_threads=n_threads, n_clusters=n_clusters)
    check_memory(needed, f"X: kmeans() on shape ({n}, {d})",
                 "k-means copies X in float64 (scaled and centred); OPIMC clusters the rows "
                 "in chunks of bounded memory")
