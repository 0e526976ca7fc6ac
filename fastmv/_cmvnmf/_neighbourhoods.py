"""CMVNMF's must-link neighbourhoods: the connected components of the must-link graph over the
rows of all views, split where cannot-links contradict them (docs/algorithms.md §4.3)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["conflicts", "must_link_graph", "neighbourhoods"]

# at most this many bisections per cluster asked for: each is one eigenvector of a component
# of the must-link graph; a component still contradicted after them seeds nothing
_SPLITS_PER_CLUSTER = 4
# components up to this many rows are bisected with a dense eigendecomposition, larger ones
# with ARPACK (both give the same eigenvector to its accuracy; dense is faster when small)
_DENSE_ROWS = 400


def must_link_graph(blocks, n_rows):
    """Symmetric ``n_rows × n_rows`` CSR adjacency of the must-links (a repeated pair weighs
    its count), over the rows of all views stacked as in ``V_all``."""
    must = np.asarray(blocks.must_global, dtype=np.int64).reshape(-1, 2)
    graph = sp.csr_matrix((np.ones(must.shape[0]), (must[:, 0], must[:, 1])),
                          shape=(n_rows, n_rows))
    return (graph + graph.T).tocsr()


def _components(graph):
    from scipy.sparse.csgraph import connected_components  # noqa: PLC0415

    return connected_components(graph, directed=False)[1].astype(np.int64)


def conflicts(blocks, n_rows):
    """Number of cannot-links whose two rows a chain of must-links ties together: 0 when the
    pairs are consistent. O(n_rows + pairs)."""
    cannot = np.asarray(blocks.cannot_global, dtype=np.int64).reshape(-1, 2)
    if not cannot.shape[0] or not blocks.must_global.shape[0]:
        return 0
    component = _components(must_link_graph(blocks, n_rows))
    return conflicts_of(component, cannot)


def neighbourhoods(blocks, n_rows, n_clusters):
    """Component of every row, the components containing no cannot-link.

    The connected components of the must-link graph. Where one holds a cannot-link (two of
    its rows that a chain of must-links ties together must not share a cluster, so some
    must-link on that chain is wrong), the must-links that a cannot-link contradicts at one
    step are dropped (:func:`_without_contradicted_edges`), and a component still holding a
    cannot-link is bisected where the must-link graph is thinnest (:func:`_bisect`), at most
    ``4 n_clusters`` times in all. The rows of a component still holding a cannot-link after
    that become singletons (they seed nothing). With consistent pairs the components are
    returned as they are. Deterministic.
    """
    graph = must_link_graph(blocks, n_rows)
    component = _components(graph)
    cannot = np.asarray(blocks.cannot_global, dtype=np.int64).reshape(-1, 2)
    if not cannot.shape[0] or not conflicts_of(component, cannot):
        return component
    graph = _without_contradicted_edges(graph, cannot)
    component = _components(graph)
    budget = _SPLITS_PER_CLUSTER * n_clusters
    fresh = int(component.max()) + 1 if n_rows else 0
    while True:
        inside = component[cannot[:, 0]] == component[cannot[:, 1]]
        contradicted = np.unique(component[cannot[inside, 0]])
        if not contradicted.size or not budget:
            break
        for k in contradicted[:budget]:
            rows = np.flatnonzero(component == k)
            pieces = _bisect(graph[rows][:, rows])
            component[rows] = fresh + pieces
            fresh += int(pieces.max()) + 1
            budget -= 1
    for k in contradicted if budget == 0 else ():
        rows = np.flatnonzero(component == k)
        component[rows] = fresh + np.arange(rows.size)
        fresh += rows.size
    return component


def conflicts_of(component, cannot):
    """Number of the ``(p, 2)`` cannot-links whose two rows share a component."""
    return int(np.count_nonzero(component[cannot[:, 0]] == component[cannot[:, 1]]))


def _without_contradicted_edges(graph, cannot):
    """``graph`` without the must-links ``(u, v)`` that a cannot-link contradicts at one
    step: ``u`` cannot-linked to a must-link neighbour of ``v``, or ``v`` to one of ``u``.
    A wrong must-link between two classes usually is (its ends' neighbours are in the
    other class); a right one only next to a wrong one. O(Σ_x deg(x)² log |cannot|)."""
    n = graph.shape[0]
    ends = sp.triu(graph, k=1).tocoo()
    u, v = ends.row.astype(np.int64), ends.col.astype(np.int64)
    ptr, idx = graph.indptr.astype(np.int64), graph.indices.astype(np.int64)
    keys = np.sort(np.concatenate([cannot[:, 0] * n + cannot[:, 1],
                                   cannot[:, 1] * n + cannot[:, 0]]))
    hit = np.zeros(u.size, dtype=bool)
    for a, b in ((u, v), (v, u)):
        # every (a, w) with w a must-link neighbour of b, tagged with its edge
        counts = ptr[b + 1] - ptr[b]
        edge = np.repeat(np.arange(u.size), counts)
        w = idx[np.repeat(ptr[b], counts) + (np.arange(counts.sum())
                                              - np.repeat(np.cumsum(counts) - counts, counts))]
        pos = np.searchsorted(keys, a[edge] * n + w)
        found = (pos < keys.size) & (keys[np.minimum(pos, keys.size - 1)] == a[edge] * n + w)
        hit[edge[found]] = True
    keep = ~hit
    kept = sp.csr_matrix((ends.data[keep], (u[keep], v[keep])), shape=graph.shape)
    return (kept + kept.T).tocsr()


def _bisect(graph):
    """Pieces of a connected graph (labels ``0 .. p − 1``) after removing the edges across
    its spectral bisection: the sign of the Fiedler vector of the normalised Laplacian
    (Shi & Malik's normalised cut), the cut that separates two well-knit groups joined by a
    few edges. Fewer than three rows: every row alone."""
    n = graph.shape[0]
    if n < 3:
        return np.arange(n, dtype=np.int64)
    degree = np.asarray(graph.sum(axis=1)).ravel()
    scale = 1.0 / np.sqrt(degree)
    normalised = sp.diags(scale) @ graph @ sp.diags(scale)
    fiedler = _second_eigenvector(normalised, np.sqrt(degree)) * scale
    side = fiedler > 0
    if side.all() or not side.any():   # a flat vector: split at the median instead
        side = fiedler > np.median(fiedler)
    kept = graph.tocoo()
    same = side[kept.row] == side[kept.col]
    return _components(sp.csr_matrix((kept.data[same], (kept.row[same], kept.col[same])),
                                     shape=graph.shape))


def _second_eigenvector(normalised, top):
    """Eigenvector of the second largest eigenvalue of the symmetric ``normalised`` (whose
    largest, 1, has the eigenvector ``top``), with a fixed sign (largest entry positive)."""
    n = normalised.shape[0]
    if n <= _DENSE_ROWS:
        values, vectors = np.linalg.eigh(normalised.toarray())
        vector = vectors[:, -2]
    else:
        from scipy.sparse.linalg import eigsh  # noqa: PLC0415

        # a fixed start, not along ``top`` (a Krylov space started on an eigenvector is
        # that eigenvector alone): the same vector on every run
        start = top * (1.0 + 0.5 * np.cos(np.arange(n)))
        values, vectors = eigsh(normalised, k=2, which="LA", v0=start, tol=1e-8)
        vector = vectors[:, int(np.argmin(values))]
    peak = int(np.argmax(np.abs(vector)))
    return vector if vector[peak] > 0 else -vector
