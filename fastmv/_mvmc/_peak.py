"""MVMC's peak memory (docs/algorithms.md §1.7), checked once the bases' rank is known."""
from __future__ import annotations

import scipy.sparse as sp

from .._core._memory import check_memory

__all__ = ["peak_bytes", "check_mvmc"]

#: The clipping correction ``N`` and the kNN graph are each capped at this many entries
#: (``_lowrank._N_CACHE_MAX_NNZ``, ``_graph._MAX_GRAPH_ENTRIES``), 12 bytes an entry.
_CAPPED_ENTRIES = 2 ** 24
#: Rows and columns of a tile of ``Ā`` (one per thread).
_TILE = 384


def peak_bytes(n, dims, nnzs, k, n_clusters, n_threads=1, tuned=True):
    """Peak bytes of :func:`fastmv.mvmc` on views of ``dims`` columns (``nnzs``: stored
    entries of the sparse ones, None for dense) and bases of rank ``k``, beyond the views.

    One view at a time is scaled and normalised (two copies) and goes through the range
    finder (three ``n × (k + 10)`` blocks); the bases ``Z_v`` (``n × k_v``, twice while
    ``normalize="auto"`` compares two schemes) and the factors of ``S`` (``n × R``,
    ``R ≤ Σ k_v``) stay; the cached clipping correction and the kNN graph are capped; each
    thread has a tile; the spectral step keeps ``O(n c)`` blocks.
    """
    kv = [max(1, min(k, d, n - 1)) for d in dims]
    K = sum(kv)
    copies = max(2 * (12 * z + 8 * n if z is not None else 8 * n * d)
                 for d, z in zip(dims, nnzs))
    finder = 3 * 8 * n * (max(kv) + 10)
    bases = 8 * n * K * (2 if tuned else 1)
    factors = 8 * n * K
    capped = 12 * min(_CAPPED_ENTRIES, float(n) * n)      # measured: not both at their cap
    tiles = max(n_threads, 1) * 8 * _TILE * (_TILE + K)
    spectral = 8 * 8 * n * (n_clusters + 2)
    return max(copies + finder, factors + capped + spectral) + bases + tiles


def check_mvmc(views, k, n_clusters, n_threads, tuned):
    """Refuse :func:`fastmv.mvmc` when its peak exceeds the memory available."""
    n = views[0].shape[0]
    dims = [X.shape[1] for X in views]
    nnzs = [X.nnz if sp.issparse(X) else None for X in views]
    needed = peak_bytes(n, dims, nnzs, k, n_clusters, n_threads, tuned)
    check_memory(needed, f"mvmc() on {len(views)} views of {n} samples with bases of rank "
                 f"k={k}", "the n × k bases of every view dominate: lower k, drop views, "
                 "keep text views sparse (CSR), or set normalize='l2' (no second set of bases)")
