"""NumPy twins of kernels/clustering.py and kernels/affinity.py."""
import numpy as np


def nearest_center(inner, x_sq_norms, c_sq_norms):
    d = x_sq_norms[:, None] + c_sq_norms[None, :] - 2.0 * inner
    labels = np.argmin(d, axis=1).astype(np.int64)
    return labels, np.maximum(d[np.arange(len(labels)), labels], 0.0)


def cluster_sums(X, labels, n_clusters, n_blocks=1):
    sums = np.zeros((n_clusters, X.shape[1]), dtype=X.dtype)
    counts = np.zeros(n_clusters, dtype=np.int64)
    for i, k in enumerate(labels):
        sums[k] += X[i]
        counts[k] += 1
    return sums, counts


def cluster_sums_csr(data, indices, indptr, n_features, labels, n_clusters, n_blocks=1):
    import scipy.sparse as sp
    X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_features)).toarray()
    return cluster_sums(X, labels, n_clusters)


def gram_to_sq_distances(G, sq_norms):
    # reads only the upper triangle, like the kernel
    U = np.triu(G)
    Gs = U + np.triu(G, 1).T
    D = sq_norms[:, None] + sq_norms[None, :] - 2.0 * Gs
    D = np.maximum(D, 0.0)
    np.fill_diagonal(D, 0.0)
    return D


def strict_upper_triangle(A):
    return A[np.triu_indices(A.shape[0], 1)]


def gaussian_transition_rows(D2, inv_two_sigma_sq):
    out = np.zeros_like(D2)
    for i in range(D2.shape[0]):
        if np.isfinite(D2[i]).any():
            # shift by the row minimum exactly as the kernel does (cancels in exact arithmetic)
            m = D2[i][np.isfinite(D2[i])].min()
            row = np.exp(-(D2[i] - m) * inv_two_sigma_sq)
            out[i] = row / row.sum()
        elif i < D2.shape[1]:
            out[i, i] = 1.0
    return out


def keep_nearest_neighbors(D2, n_neighbors):
    n = D2.shape[0]
    keep = np.zeros((n, n), dtype=bool)
    for i in range(n):
        row = D2[i].copy()
        row[i] = np.inf
        order = np.argsort(row, kind="stable")
        keep[i, i] = True
        keep[i, order[:min(n_neighbors, n - 1)]] = True
    return keep


def lloyd(X, centers, max_iter=300):
    """Plain Lloyd iterations from given centers until the labels stop changing."""
    labels = None
    for _ in range(max_iter):
        d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
        new = np.argmin(d, axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        for k in range(centers.shape[0]):
            if np.any(labels == k):
                centers[k] = X[labels == k].mean(0)
    return labels, centers


def transition_matrix(X, sigma="median"):
    """Gaussian transition matrix straight from the definition (pairwise loops)."""
    n = X.shape[0]
    D = np.array([[np.linalg.norm(X[i] - X[j]) for j in range(n)] for i in range(n)])
    if sigma == "median":
        sigma = np.median(D[np.triu_indices(n, 1)]) if n > 1 else 1.0
    K = np.exp(-D ** 2 / (2 * sigma ** 2))
    return K / K.sum(axis=1, keepdims=True)


def nearest_neighbors_rows(D2, k):
    """Each row's k smallest off-diagonal entries (stable: ties by column), and the values."""
    n = D2.shape[0]
    index = np.zeros((n, k), np.int64)
    values = np.zeros((n, k), D2.dtype)
    for i in range(n):
        row = D2[i].astype(np.float64)
        row[i] = np.inf
        order = np.argsort(row, kind="stable")[:k]
        index[i], values[i] = order, D2[i, order]
    return index, values


def local_scaling_transition(X, k, scale_neighbor=7, mutual=False):
    """Locally scaled symmetric kNN transition matrix from the definition: cosine geometry
    (L2 rows) for nonnegative, mostly-zero X, Euclidean otherwise; with ``mutual`` only the
    pairs that are neighbours both ways. The twin of
    ``kernels.affinity.nearest_neighbors_rows`` followed by
    ``kernels.affinity.local_scaling_transition_rows`` (tests/test_affinity.py)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if np.all(X >= 0) and np.count_nonzero(X) <= 0.5 * X.size:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    D2 = np.array([[np.sum((X[i] - X[j]) ** 2) for j in range(n)] for i in range(n)])
    index, values = nearest_neighbors_rows(D2, k)
    sigma = np.sqrt(values[:, min(scale_neighbor, k) - 1])
    sigma[sigma <= 0] = sigma[sigma > 0].min() if np.any(sigma > 0) else 1.0
    keep = np.eye(n, dtype=bool)
    for i in range(n):
        keep[i, index[i]] = True
    keep = (keep & keep.T) if mutual else (keep | keep.T)
    W = np.where(keep, np.exp(-D2 / np.outer(sigma, sigma)), 0.0)
    np.fill_diagonal(W, 1.0)
    return W / W.sum(axis=1, keepdims=True)


def lloyd_step(X, centers, x_sq_norms, n_parts=1):
    """Assignment then per-cluster sums, straight from the definitions."""
    d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    labels = np.argmin(d, axis=1).astype(np.int64) if len(X) else np.zeros(0, np.int64)
    sq = d[np.arange(len(labels)), labels] if len(X) else np.zeros(0, X.dtype)
    sums, counts = cluster_sums(X, labels, centers.shape[0])
    return labels, sq, sums, counts


lloyd_step_serial = lloyd_step  # the serial kernel computes exactly what the parallel one does


def _dense(data, indices, indptr, n_features):
    import scipy.sparse as sp
    return sp.csr_matrix((data, indices, indptr),
                         shape=(len(indptr) - 1, n_features)).toarray()


def lloyd_step_csr(data, indices, indptr, centers, x_sq_norms, n_parts=1):
    return lloyd_step(_dense(data, indices, indptr, centers.shape[1]), centers, x_sq_norms)


lloyd_step_csr_serial = lloyd_step_csr


def seeding_distances(X, candidates, x_sq_norms, closest, n_parts=1):
    """Squared distances to each candidate, capped by ``closest``, and their sums."""
    d = ((X[None, :, :] - candidates[:, None, :]) ** 2).sum(-1)
    dist = np.minimum(d, closest[None, :])
    return dist, dist.sum(axis=1)


def seeding_distances_csr(data, indices, indptr, candidates, x_sq_norms, closest, n_parts=1):
    return seeding_distances(_dense(data, indices, indptr, candidates.shape[1]), candidates,
                             x_sq_norms, closest)
