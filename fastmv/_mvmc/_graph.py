"""The graph of MVMC's spectral step (docs/records/mvmc.md, "The spectral step's graph").

The completed similarity ``S = clip(Ā, 0, 1)`` is global and low-rank: every row spreads mass
over all ``n`` samples. With many small clusters the off-cluster mass of a row (``n − n/c``
small entries) outweighs its in-cluster block in the degree that Ng–Jordan–Weiss divides by,
and the embedding blurs. The spectral step therefore clusters a kNN graph: per sample, its
``q`` most similar samples, with the observed entries restored (``1`` or more on must-links,
``0`` on cannot-links: they are data, not estimates), symmetrised by the larger of ``W_ij``
and ``W_ji``.

The default graph (``graph="knn"``) ranks and weighs by the *normalised* similarity
``Ŝ_ij = Ā_ij / √((Ā_ii + m)(Ā_jj + m))``, ``m`` the median of the diagonal of ``Ā``
(clipped to ``[0, 1]``), with ``q = ⌈n/c⌉`` (the mean cluster size). ``Ā = X_v A X_vᵀ``-like
similarities are inner products: a sample with a large self-similarity ``Ā_ii`` (a large
row in the learned metric) is among every row's largest entries, a hub; dividing by the
self-similarities ranks by angle instead, and ``m`` keeps a sample with a tiny ``Ā_ii``
(little of it in the bases' span) from being inflated to full similarity with its
neighbours (docs/records/mvmc.md, "The normalised graph"). In that graph a must-link weighs
``ω = max(1, κ · d)``, ``d = 2 |must-links| / n`` the must-links per sample and ``κ`` =
:data:`MUST_LINK_WEIGHT_PER_DEGREE` (:func:`must_link_weight`): once every sample has a
must-link or two, the must-links of a class chain most of it together, and those exact edges
should outweigh the estimated ones (``Ŝ < 1``); with ``d ≤ 1/κ`` (``ω = 1``) they are
isolated pairs, which a heavy edge would cut out of their clusters (docs/records/mvmc.md,
"The must-link weight"). ``graph="knn-raw"`` ranks and weighs by ``S`` itself with
``q = 2⌈n/c⌉`` and must-links of weight 1. With ``q ≥ n/2`` nothing worth the ``n q`` memory
would be dropped, and ``S`` itself is used.

One pass over the row blocks of ``Ā`` (``tile × n`` at a time, O(n² R) flops, O(tile · n + n q)
memory); no ``n × n`` array. Beyond one tile the products run in float32, as the solver's
passes over ``S`` do (the graph's entries are then ``Ŝ`` or ``S`` to float32 rounding).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._lowrank import TILE

__all__ = []  # internal: see fastmv.mvmc

# Stored entries of the neighbour graph are bounded (about 16 bytes each before the
# symmetrisation doubles them): q is lowered for very large n rather than form O(n²) entries.
_MAX_GRAPH_ENTRIES = 2 ** 24


#: ``graph="knn"``: a must-link's weight per must-link per sample, ``ω = max(1, κ d)``
#: (docs/records/mvmc.md, "The must-link weight": chosen leave-one-dataset-out)
MUST_LINK_WEIGHT_PER_DEGREE = 5.0


def must_link_weight(pairs, n, per_degree=None):
    """``ω = max(1, κ · 2 |must-links| / n)``: the weight of a must-link in the normalised
    graph (``κ`` = :data:`MUST_LINK_WEIGHT_PER_DEGREE` unless ``per_degree`` is given)."""
    kappa = MUST_LINK_WEIGHT_PER_DEGREE if per_degree is None else float(per_degree)
    n_must = int(np.count_nonzero(np.asarray(pairs[2]) > 0))
    return max(1.0, kappa * 2.0 * n_must / max(int(n), 1))


def neighbour_count(n, n_clusters, per_cluster=1):
    """``q = per_cluster · ⌈n/c⌉`` of the kNN graph, or 0 when the full ``S`` is used
    (``q ≥ n/2``)."""
    q = int(per_cluster) * -(-n // n_clusters)
    if 2 * q >= n:
        return 0
    return max(1, min(q, _MAX_GRAPH_ENTRIES // max(n, 1)))


def _observed(n, pairs, must_link_value=1.0):
    """The observed entries in both orders, sorted by row: ``(rows, cols, values)``, a
    must-link's value ``must_link_value``, a cannot-link's 0."""
    i, j, s = pairs
    rows = np.concatenate([i, j]).astype(np.int64)
    cols = np.concatenate([j, i]).astype(np.int64)
    vals = np.concatenate([s, s]).astype(np.float64) * float(must_link_value)
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], vals[order]


def self_similarity_scale(F, w):
    """``1 / √(Ā_ii + m)`` for every sample, ``Ā = F diag(w) Fᵀ``, ``m`` the median of its
    diagonal (float64; a zero sum is floored, its row of ``Ā`` being zero anyway)."""
    F = np.asarray(F, np.float64)
    diag = np.maximum(np.einsum("ij,ij->i", F * np.asarray(w, np.float64), F), 0.0)
    shifted = diag + (np.median(diag) if diag.size else 0.0)
    floor = np.finfo(np.float64).tiny
    return 1.0 / np.sqrt(np.maximum(shifted, floor))


def knn_graph(F, w, pairs, q, tile=None, normalise=False, must_link_weight=1.0):
    """Symmetric kNN graph (CSR, ``n × n``) of ``S = clip(F diag(w) Fᵀ, 0, 1)`` (or of the
    normalised ``Ŝ``, see the module docstring) with the observed entries set to their values
    and the diagonal left out.

    Parameters
    ----------
    F : ndarray, shape (n, R)
        Factor of ``Ā``.
    w : ndarray, shape (R,)
        Signed weights of ``Ā``.
    pairs : tuple of ndarray
        ``(i, j, s)``: the constrained pairs and their observed similarity.
    q : int
        Neighbours kept per sample, ``1 ≤ q < n``.
    tile : int, optional
        Rows per block (default the solver's tile edge).
    normalise : bool, default False
        Rank and weigh by ``Ŝ_ij = clip(Ā_ij / √((Ā_ii + m)(Ā_jj + m)), 0, 1)`` instead of
        ``S`` (:func:`self_similarity_scale`).
    must_link_weight : float, default 1.0
        Value of the must-link entries (cannot-links are 0), at least 1 so that they are
        among every row's ``q`` largest.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``W = max(K, Kᵀ)`` with ``K`` the ``q`` largest entries of every row (ties broken by
        column order of ``argpartition``, deterministic).
    """
    n = F.shape[0]
    b = int(TILE if tile is None else tile)
    if normalise:
        scale = self_similarity_scale(F, w)[:, None]
        F = F * scale
    FW = F * w
    if n > b:
        # as the solver's passes over S: beyond one tile the GEMMs of the row blocks are most
        # of this pass, and float32 halves them; only which q entries of a row are largest can
        # change, between entries equal to float32 rounding
        FW, F = FW.astype(np.float32), F.astype(np.float32)
    rows, cols, vals = _observed(n, pairs, must_link_weight)
    starts = np.searchsorted(rows, np.arange(0, n + b, b))
    out_cols = np.empty((n, q), dtype=np.int64)
    out_vals = np.empty((n, q))
    for blk, i0 in enumerate(range(0, n, b)):
        i1 = min(n, i0 + b)
        A = np.clip(FW[i0:i1] @ F.T, 0.0, 1.0)
        lo, hi = starts[blk], starts[blk + 1]
        A[rows[lo:hi] - i0, cols[lo:hi]] = vals[lo:hi]
        local = np.arange(i1 - i0)
        A[local, local + i0] = -1.0  # never its own neighbour
        # sorted within each row, so that K is canonical CSR and max(K, Kᵀ) takes scipy's
        # merge path instead of sorting every entry afterwards
        idx = np.sort(np.argpartition(-A, q - 1, axis=1)[:, :q], axis=1)
        out_cols[i0:i1] = idx
        out_vals[i0:i1] = A[local[:, None], idx]
    K = sp.csr_matrix((out_vals.ravel(), out_cols.ravel(), np.arange(0, n * q + 1, q)),
                      shape=(n, n))
    W = K.maximum(K.T).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    return W
