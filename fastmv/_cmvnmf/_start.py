"""CMVNMF's starting factors: per-view k-means whose clusters are renumbered to agree across
the views through the inter-view pairs (docs/records/cmvnmf.md "Aligned starts"), random factors, or
the factors the caller gives."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core._validation import check_array
from ..exceptions import InvalidParameterError


def initial_factors(data, init, rng, n_jobs):
    """Initial ``(U_list, V_list)`` for the scaled views of ``data``."""
    c = data.n_clusters
    dtype = data.views[0].dtype.type
    U_list, V_list = [], []
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
