"""CMVNMF's starting factors: the must-link neighbourhoods completed per view by constrained
k-means (docs/algorithms.md §4.3), per-view k-means whose clusters are renumbered to agree
across the views through the inter-view pairs (docs/records/cmvnmf.md "Aligned starts"),
random factors, or the factors the caller gives."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core._validation import check_array
from ..exceptions import InvalidParameterError
from ._neighbourhoods import neighbourhoods


def initial_factors(data, init, rng, n_jobs):
    """Initial ``(U_list, V_list)`` for the scaled views of ``data``."""
    c = data.n_clusters
    dtype = data.views[0].dtype.type
    U_list, V_list = [], []
    if init == "must-link":
        return must_link_factors(data)
    if init == "k-means++":
        from .._blocks._kmeans import kmeans  # noqa: PLC0415 (import cost: only this start needs it)
        runs = [kmeans(X, c, random_state=int(rng.integers(0, 2**31 - 1)), n_jobs=n_jobs)
                for X in data.start_views]
        perms = _aligned_cluster_order([r.labels for r in runs], data.blocks.blocks, c)
        for X, res, perm in zip(data.views, runs, perms):
            # column perm[k] of the view's factors holds its k-means cluster k
            V = np.full((X.shape[0], c), 0.2, dtype=dtype)
            V[np.arange(X.shape[0]), perm[res.labels]] += 1.0
            U = np.zeros((X.shape[1], c), dtype=dtype)
            U[:, perm] = np.maximum(res.centers.T, 0.0)
            U_list.append(U)
            V_list.append(V)
        return U_list, V_list
    if init == "random":
        for X in data.views:
            n, d = X.shape
            scale = np.sqrt(max(float(X.sum()) / (n * d), 1e-12) / c)
            U_list.append((scale * np.abs(rng.standard_normal((d, c)))).astype(dtype))
            V_list.append((scale * np.abs(rng.standard_normal((n, c)))).astype(dtype))
        return U_list, V_list
    if len(init) != 2 or len(init[0]) != len(data.views) or len(init[1]) != len(data.views):
        raise InvalidParameterError(f"init must give one U and one V per view ({len(data.views)} "
                                    "views) as a pair (U_list, V_list)")
    for a, X in enumerate(data.views):
        n, d = X.shape
        U = check_array(init[0][a], f"init[0][{a}]", accept_sparse=False, dtype=dtype,
                        nonnegative=True, copy=True)
        V = check_array(init[1][a], f"init[1][{a}]", accept_sparse=False, dtype=dtype,
                        nonnegative=True, copy=True)
        if U.shape != (d, c):
            raise InvalidParameterError(f"init[0][{a}] must have shape ({d}, {c}), got {U.shape}")
        if V.shape != (n, c):
            raise InvalidParameterError(f"init[1][{a}] must have shape ({n}, {c}), got {V.shape}")
        U_list.append(U)
        V_list.append(np.ldexp(V, -data.log2_scale).astype(dtype))
    return U_list, V_list


# Lloyd iterations of the must-link start's constrained k-means: the rows outside the
# neighbourhoods move, the neighbourhoods' rows stay; it stops earlier once no row moves
_SEEDED_LLOYD_STEPS = 20


def must_link_factors(data):
    """Initial ``(U_list, V_list)`` from the must-link neighbourhoods (deterministic).

    The rows of all views are the nodes of one graph whose edges are the must-link pairs
    (between views and within them); its connected components with at least two rows, split
    where a cannot-link contradicts them (:func:`._neighbourhoods.neighbourhoods`), are the
    neighbourhoods, and the ``c`` largest (ties: the one holding the lowest row first) take
    the columns ``0 .. λ − 1`` in every view, ``λ`` at most ``c``. A neighbourhood spans
    views, so the views' columns agree from the start. Per view, its rows of those
    neighbourhoods keep their column; the view's other rows are clustered by k-means around
    them (the neighbourhoods' means in the view as centers, the rows farthest from every
    center as the centers of the columns no neighbourhood fills, Lloyd steps that move only
    the other rows). ``V`` = one-hot + 0.2 and ``U`` = the centers clipped at 0, as for the
    k-means start. This is the start of semi-supervised k-means (the seeded / constrained
    k-means and PCKMeans neighbourhoods of Basu et al.) on CMVNMF's unmapped views.

    Cost: O(N + |must|) for the components (N the rows of all views) and
    O(nnz(X_a) c) per Lloyd step and view; no n × n array.
    """
    c = data.n_clusters
    dtype = data.views[0].dtype.type
    n_list = [X.shape[0] for X in data.views]
    offsets = np.concatenate([[0], np.cumsum(n_list)]).astype(np.int64)
    N = int(offsets[-1])
    component = neighbourhoods(data.blocks, N, c)
    sizes = np.bincount(component)
    first = np.full(sizes.size, N, dtype=np.int64)
    np.minimum.at(first, component, np.arange(N))
    order = np.lexsort((first, -sizes))
    order = order[sizes[order] >= 2][:c]
    column = np.full(sizes.size, -1, dtype=np.int64)
    column[order] = np.arange(order.size)
    U_list, V_list = [], []
    for a, X in enumerate(data.views):
        labels, centers = _seeded_kmeans(X, column[component[offsets[a]:offsets[a + 1]]], c)
        V = np.full((X.shape[0], c), 0.2, dtype=dtype)
        V[np.arange(X.shape[0]), labels] += 1.0
        U_list.append(np.maximum(centers.T, 0.0).astype(dtype))
        V_list.append(V)
    return U_list, V_list


def _seeded_kmeans(X, seeded, c):
    """Constrained k-means of the rows of ``X`` (dense or CSR) into ``c`` columns: a row with
    ``seeded[i] >= 0`` stays in that column, the others go to the nearest center. Returns
    ``(labels, centers)`` (``centers``: ``c × d`` float64). Deterministic."""
    n, d = X.shape
    Xd = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    x_sq = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
            else np.einsum("ij,ij->i", Xd, Xd))
    labels = seeded.copy()
    fixed = seeded >= 0
    centers = np.zeros((c, d))
    filled = np.zeros(c, dtype=bool)
    _column_means(Xd, labels, c, centers, filled)
    # the columns no neighbourhood fills in this view: the rows farthest from every center
    # (farthest-first), among the free rows while there are any; each new center updates the
    # rows' distance to the nearest one (one distance column per center, not all again)
    pool = np.flatnonzero(~fixed) if np.any(~fixed) else np.arange(n)
    closest = (_sq_distances(Xd, x_sq, centers[filled]).min(axis=1) if filled.any()
               else x_sq)
    for k in np.flatnonzero(~filled):
        far = pool[int(np.argmax(closest[pool]))]
        centers[k] = _row(Xd, far)
        closest = (np.minimum(closest, _sq_distances(Xd, x_sq, centers[k:k + 1])[:, 0])
                   if filled.any() else _sq_distances(Xd, x_sq, centers[k:k + 1])[:, 0])
        filled[k] = True
    # the free rows move (the first step places them all: their labels start at -1)
    free = np.flatnonzero(~fixed)
    for _ in range(_SEEDED_LLOYD_STEPS if free.size else 0):
        moved = np.argmin(_sq_distances(Xd, x_sq, centers)[free], axis=1)
        if np.array_equal(moved, labels[free]):
            break
        labels[free] = moved
        _column_means(Xd, labels, c, centers, np.zeros(c, dtype=bool))
    return labels, centers


def _row(X, i):
    return X[i].toarray().ravel() if sp.issparse(X) else X[i]


def _column_means(X, labels, c, centers, filled):
    """Write the mean of every non-empty column's rows into ``centers`` (an empty column keeps
    its center) and mark those columns in ``filled``."""
    rows = np.flatnonzero(labels >= 0)
    if not rows.size:
        return
    H = sp.csr_matrix((np.ones(rows.size), (labels[rows], rows)), shape=(c, X.shape[0]))
    sums = H @ X
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
    counts = np.bincount(labels[rows], minlength=c)
    full = counts > 0
    centers[full] = sums[full] / counts[full, None]
    filled |= full


def _sq_distances(X, x_sq, centers):
    """``n × k`` squared Euclidean distances of the rows of ``X`` to ``centers``."""
    inner = X @ centers.T
    inner = np.asarray(inner.toarray() if sp.issparse(inner) else inner)
    return np.maximum(x_sq[:, None] - 2.0 * inner + np.einsum("ij,ij->i", centers,
                                                                centers)[None, :], 0.0)


def _aligned_cluster_order(labels, blocks, c):
    """Per view, the column each of its k-means clusters takes, so that clusters the
    inter-view pairs tie together share a column.

    Independent k-means runs number their clusters arbitrarily. The constraint terms compare
    ``V_a[i]`` with ``V_b[j]`` column by column, so a start whose cluster 3 in view ``a`` is
    cluster 7 in view ``b`` makes every must-link pair pull against the data term: such
    starts end in a worse local minimum (higher objective, lower accuracy; docs/records/cmvnmf.md
    "Aligned starts"). Views are aligned greedily, the one with the most pairs to the views
    already placed first, by the assignment maximising must-links minus cannot-links that
    agree (Hungarian method); a view with no pairs to the others keeps its numbering.
    """
    from scipy.optimize import linear_sum_assignment  # noqa: PLC0415

    m = len(labels)
    perms = [np.arange(c) for _ in range(m)]
    pairs = {}
    for (a, b), (must, cannot) in blocks.items():
        if a != b:
            pairs[(a, b)] = (np.asarray(must).reshape(-1, 2), np.asarray(cannot).reshape(-1, 2))
    placed = [0] if m else []
    while len(placed) < m:
        best, best_count = None, -1
        for b in range(m):
            if b in placed:
                continue
            count = sum(len(mu) + len(cn) for (x, z), (mu, cn) in pairs.items()
                        if (x == b and z in placed) or (z == b and x in placed))
            if count > best_count:
                best, best_count = b, count
        score = np.zeros((c, c))               # score[k, l]: view best's cluster k ~ column l
        for (x, z), (mu, cn) in pairs.items():
            if x == best and z in placed:
                own, other, a = 0, 1, z
            elif z == best and x in placed:
                own, other, a = 1, 0, x
            else:
                continue
            for P, sign in ((mu, 1.0), (cn, -1.0)):
                if len(P):
                    np.add.at(score, (labels[best][P[:, own]], perms[a][labels[a][P[:, other]]]),
                              sign)
        if best_count > 0:
            rows, cols = linear_sum_assignment(score, maximize=True)
            perms[best] = cols[np.argsort(rows)]
        placed.append(best)
    return perms


def cosine_silhouette(X, labels, c):
    """Mean silhouette of ``labels`` on the rows of ``X`` under the cosine distance
    ``1 − cos(x_i, x_j)``, exactly, in O(nnz(X) c) (no n × n distances).

    On unit rows the distance is linear in each argument, so every sample's mean distance to
    a cluster is ``1 − x_i · μ_k`` from the clusters' row sums. A sample alone in its cluster
    scores 0 (the usual convention); all-zero rows are at distance 1 from everything; a
    single non-empty cluster gives ``-1`` (no separation to speak of).
    """
    from .._core._preprocessing import normalize_rows  # noqa: PLC0415

    labels = np.asarray(labels, np.int64)
    n = labels.size
    sizes = np.bincount(labels, minlength=c).astype(np.float64)
    if np.count_nonzero(sizes) < 2:
        return -1.0
    Xn = normalize_rows(X, "l2")
    H = sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, c))
    sums = H.T @ Xn                                     # c × d: each cluster's row sum
    G = np.asarray((Xn @ sums.T).toarray() if sp.issparse(Xn) else Xn @ np.asarray(sums).T,
                   np.float64)                          # x_i · Σ_{j ∈ k} x_j
    self_dot = (np.asarray(Xn.multiply(Xn).sum(axis=1)).ravel() if sp.issparse(Xn)
                else np.einsum("ij,ij->i", Xn, Xn))
    mean_dist = (sizes[None, :] - G) / np.where(sizes > 0, sizes, 1.0)[None, :]
    own = sizes[labels]
    rows = np.arange(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = (own - G[rows, labels] - (1.0 - self_dot)) / (own - 1.0)
    mean_dist[:, sizes == 0] = np.inf
    mean_dist[rows, labels] = np.inf
    b = mean_dist.min(axis=1)
    scale = np.maximum(a, b)
    s = np.zeros(n)
    ok = (own > 1) & (scale > 0)
    s[ok] = (b[ok] - a[ok]) / scale[ok]
    return float(s.mean())
