"""A vectorised NumPy OPIMC for the asv speed ratios: the same algorithm, start and stopping
rules as ``fastmv.opimc`` (docs/algorithms.md §5), written the way a careful NumPy user would:
per chunk, BLAS products ``X_v U_v`` for the distances and one-hot products ``X_vᵀ V`` for the
statistics, recomputed every inner iteration. Dense in-memory views only. Also the
synthetic views the OPIMC benchmarks and ``tools/compare_opimc_imml.py`` share."""
import numpy as np


def synthetic_views(n, m, d, c, seed=0, dtype=np.float64):
    """``m`` dense views ``(n, d)`` of ``c`` planted clusters in noise, and the classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = []
    for _ in range(m):
        C = rng.normal(size=(c, d))
        views.append((C[y] + 2.0 * rng.normal(size=(n, d))).astype(dtype))
    return views, y


def _unit_rows(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return X / norms


def opimc_numpy(views, n_clusters, first_labels, *, mask=None, alpha=0.1, chunk_size=250,
                n_passes=1, max_iter=30, tol=1e-6):
    m, n, c = len(views), views[0].shape[0], n_clusters
    if mask is None:
        mask = np.ones((n, m), bool)
    R = [np.zeros((X.shape[1], c)) for X in views]
    T = np.zeros((m, c))
    U = [np.zeros((X.shape[1], c)) for X in views]
    labels = np.zeros(n, np.int64)
    eye = np.eye(c)
    loss = 0.0
    for p in range(n_passes):
        for t, a in enumerate(range(0, n, chunk_size)):
            b = min(a + chunk_size, n)
            W = mask[a:b].astype(np.float64)
            Xt = [_unit_rows(np.asarray(X[a:b], dtype=np.float64)) * W[:, [v]]
                  for v, X in enumerate(views)]
            first = p == 0 and t == 0

            def assign():
                D = W @ np.array([(u ** 2).sum(0) for u in U])
                for x, u in zip(Xt, U):
                    D -= 2.0 * (x @ u)
                return D.argmin(axis=1)

            if p > 0:                                    # remove the previous contribution
                V = eye[labels[a:b]]
                for v in range(m):
                    R[v] -= Xt[v].T @ V
                T -= W.T @ V
            lab = np.asarray(first_labels[:b - a]) if first else assign()
            fill = [x.sum(0) / max(w, 1.0) for x, w in zip(Xt, W.sum(0))] if first else None

            def stats(lab):
                V = eye[lab]
                return [R[v] + Xt[v].T @ V for v in range(m)], T + W.T @ V

            Rc, Tc = stats(lab)

            def loss_of():
                return sum(-2 * np.sum(u * r) + np.sum((u ** 2).sum(0) * (tc + alpha))
                           for u, r, tc in zip(U, Rc, Tc))

            loss_old = loss_of()
            for _ in range(max_iter):
                for v in range(m):
                    Unew = Rc[v] / (Tc[v] + alpha)
                    zero = Tc[v] == 0
                    Unew[:, zero] = fill[v][:, None] if first else U[v][:, zero]
                    U[v] = Unew
                new = assign()
                changed = np.any(new != lab)
                lab = new
                Rc, Tc = stats(lab)
                loss = loss_of()
                if not changed or abs(loss - loss_old) < tol * abs(loss_old):
                    break
                loss_old = loss
            R, T = Rc, Tc
            labels[a:b] = lab
    return labels, U, loss
