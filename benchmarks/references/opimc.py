"""The NumPy OPIMC reference, for the tests and the asv speed ratios alike: the same
algorithm, start and stopping rules as ``fastmv.opimc`` (docs/algorithms.md §5), written the
way a careful NumPy user would: per chunk, BLAS products ``X_v U_v`` for the distances and
one-hot products ``X_vᵀ V`` for the statistics, recomputed every inner iteration (the per-view
counts ``Vᵀ W_v V`` are diagonal, so ``U_v = R_v (T_v + αI)⁻¹`` is a column scaling). Also the
loss from scratch, a plain Lloyd's k-means the tests compare with, and the synthetic views the
OPIMC benchmarks share."""
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


def _chunk(X, a, b, present, normalize):
    """Rows ``a:b`` of a view as dense float64: missing (masked or all-NaN) rows zeroed,
    present rows scaled to unit norm; returns (rows, presence as float64)."""
    X = X[a:b]
    X = np.array(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    present = present & ~np.isnan(X).all(axis=1)
    X[~present] = 0.0
    if normalize:
        norms = np.linalg.norm(X, axis=1)
        norms[norms == 0] = 1.0
        X /= norms[:, None]
    return X, present.astype(np.float64)


def prepare_views(views, mask=None, normalize=True):
    """Dense float64 copies with missing (masked or all-NaN) rows zeroed and present rows
    scaled to unit norm; returns (views, W)."""
    n = views[0].shape[0]
    mask = np.ones((n, len(views)), bool) if mask is None else np.asarray(mask, bool)
    out = [_chunk(X, 0, n, mask[:, v], normalize) for v, X in enumerate(views)]
    return [x for x, _ in out], np.column_stack([w for _, w in out])


def _hartigan_sweeps(Xt, W, lab, R, T, alpha, max_sweeps):
    """Single-row moves (``fastmv.kernels.opimc_refine``) on one chunk whose contribution
    ``R`` (per view ``(d_v, c)``) and ``T`` ``(m, c)`` hold under ``lab``; in place. Returns
    the number of moves."""
    def f(r, t):
        den = t + alpha
        return np.where(den > 0, -r / np.where(den > 0, den, 1.0), 0.0)

    m, c = T.shape
    moves = 0
    for _ in range(max_sweeps):
        moved = 0
        rsq = np.array([(r ** 2).sum(0) for r in R])          # (m, c)
        for i in range(lab.size):
            a, w = lab[i], W[i]
            if T[:, a].sum() - w.sum() <= 0.0:
                continue
            xr = np.array([x[i] @ r for x, r in zip(Xt, R)])   # (m, c)
            xsq = np.array([x[i] @ x[i] for x in Xt])
            p = w != 0
            old_a = f(rsq[:, a], T[:, a])
            out = np.sum((f(rsq[:, a] - 2 * xr[:, a] + xsq, T[:, a] - w) - old_a)[p])
            into = (f(rsq + 2 * xr + xsq[:, None], T + w[:, None]) - f(rsq, T))[p].sum(0)
            gain = out + into
            gain[a] = 0.0
            b = int(np.argmin(gain))
            if b == a or not gain[b] < -1e-10 * (np.abs(old_a[p]).sum() + xsq[p].sum()):
                continue
            for v in np.flatnonzero(p):
                rsq[v, a] += xsq[v] - 2 * xr[v, a]
                rsq[v, b] += xsq[v] + 2 * xr[v, b]
                R[v][:, a] -= Xt[v][i]
                R[v][:, b] += Xt[v][i]
            T[:, a] -= w
            T[:, b] += w
            lab[i] = b
            moved += 1
        moves += moved
        if moved == 0:
            break
    return moves


def opimc_reference(views, n_clusters, first_labels, *, mask=None, alpha=0.1, chunk_size=250,
                    n_passes=1, max_iter=30, tol=1e-6, normalize=True, refine=False,
                    refine_rounds=5, refine_sweeps=10, later_sweeps=1):
    """OPIMC on views (dense or CSR) with an optional presence ``mask``; ``first_labels``:
    labels of the first chunk; ``refine``: single-row moves after each chunk's Lloyd loop,
    then Lloyd again, for at most ``refine_rounds`` rounds, in the first pass, and
    ``later_sweeps`` sweeps of single-row moves on each chunk (still held by the statistics)
    in the passes after it. Returns (labels, U list, per-pass loss, per-chunk loss)."""
    m, n, c = len(views), views[0].shape[0], n_clusters
    mask = np.ones((n, m), bool) if mask is None else np.asarray(mask, bool)
    R = [np.zeros((X.shape[1], c)) for X in views]
    T = np.zeros((m, c))
    U = [np.zeros((X.shape[1], c)) for X in views]
    labels = np.zeros(n, np.int64)
    eye = np.eye(c)
    pass_loss, chunk_loss = [], []
    for p in range(n_passes):
        losses = []
        for t, a in enumerate(range(0, n, chunk_size)):
            b = min(a + chunk_size, n)
            chunk = [_chunk(X, a, b, mask[a:b, v], normalize) for v, X in enumerate(views)]
            Xt = [x for x, _ in chunk]
            W = np.column_stack([w for _, w in chunk])
            first = p == 0 and t == 0

            def assign():
                D = W @ np.array([(u ** 2).sum(0) for u in U])
                for x, u in zip(Xt, U):
                    D -= 2.0 * (x @ u)       # missing rows are zero
                return D.argmin(axis=1)

            if p > 0 and refine:                         # moves with the chunk in place
                lab = labels[a:b].copy()
                if _hartigan_sweeps(Xt, W, lab, R, T, alpha, later_sweeps) > 0:
                    for v in range(m):
                        Unew = R[v] / (T[v] + alpha)
                        zero = T[v] == 0
                        Unew[:, zero] = U[v][:, zero]
                        U[v] = Unew
                labels[a:b] = lab
                losses.append(sum(-2 * np.sum(u * r) + np.sum((u ** 2).sum(0) * (tv + alpha))
                                  for u, r, tv in zip(U, R, T)))
                continue
            if p > 0:                                    # remove the previous contribution
                V = eye[labels[a:b]]
                for v in range(m):
                    R[v] -= Xt[v].T @ V
                T -= W.T @ V
            lab = np.asarray(first_labels, np.int64)[:b - a] if first else assign()
            fill = [x.sum(0) / max(w, 1.0) for x, w in zip(Xt, W.sum(0))] if first else None

            def stats(lab):
                V = eye[lab]
                return [R[v] + Xt[v].T @ V for v in range(m)], T + W.T @ V

            Rc, Tc = stats(lab)

            def loss_of():
                return sum(-2 * np.sum(u * r) + np.sum((u ** 2).sum(0) * (tc + alpha))
                           for u, r, tc in zip(U, Rc, Tc))

            def centres():
                for v in range(m):
                    Unew = Rc[v] / (Tc[v] + alpha)
                    zero = Tc[v] == 0
                    Unew[:, zero] = fill[v][:, None] if first else U[v][:, zero]
                    U[v] = Unew

            def lloyd_loop(lab):
                nonlocal Rc, Tc
                loss = loss_old = loss_of()
                for _ in range(max_iter):
                    centres()
                    new = assign()
                    changed = np.any(new != lab)
                    lab = new
                    Rc, Tc = stats(lab)
                    loss = loss_of()
                    if not changed or abs(loss - loss_old) < tol * abs(loss_old):
                        break
                    loss_old = loss
                return lab, loss

            lab, loss = lloyd_loop(lab)
            for _ in range(refine_rounds if refine else 0):
                lab = lab.copy()
                if _hartigan_sweeps(Xt, W, lab, Rc, Tc, alpha, refine_sweeps) == 0:
                    break
                centres()
                lab = assign()
                Rc, Tc = stats(lab)
                lab, loss = lloyd_loop(lab)
            R, T = Rc, Tc
            labels[a:b] = lab
            losses.append(loss)
        pass_loss.append(losses[-1])
        chunk_loss.append(losses)
    return labels, U, np.array(pass_loss), np.array(chunk_loss)


def loss_from_scratch(views, labels, U, *, mask=None, alpha=0.1, normalize=True):
    """Σ_v Σ_i w_{v,i}(‖u_{v,l_i}‖² − 2 x_{v,i}·u_{v,l_i}) + α Σ_v ‖U_v‖², from the data."""
    X, W = prepare_views(views, mask, normalize)
    total = 0.0
    for v, (x, u) in enumerate(zip(X, U)):
        ul = u[:, labels].T                           # (n, d_v) centre of each sample
        total += np.sum(W[:, v] * ((ul ** 2).sum(1) - 2 * (x * ul).sum(1)))
        total += alpha * np.sum(u ** 2)
    return total


def lloyd(X, labels, max_iter=1000):
    """Plain Lloyd's k-means from initial labels (no empty clusters expected)."""
    labels = np.asarray(labels, np.int64).copy()
    c = labels.max() + 1
    for _ in range(max_iter):
        C = np.array([X[labels == k].mean(0) for k in range(c)])
        D = (C ** 2).sum(1)[None, :] - 2 * X @ C.T
        new = np.argmin(D, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels
