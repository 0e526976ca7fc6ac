"""NumPy twins of the streaming kernels (``kernels/streaming.py``) and a plain reference OPIMC.

Written for clarity: dense one-hot ``V``, explicit per-view loops, formulas straight from
ALGORITHMS.md §5. Same argument conventions as the kernels (see the kernels' module
docstring for the compact chunk layout); kernels that work in place have twins that work in
place too.
"""
from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------------------
# twins of the kernels
# ---------------------------------------------------------------------------------------


def stream_layout(P, dense_dims):
    P = np.asarray(P, bool)
    s, m = P.shape
    nd = len(dense_dims)
    rows = [np.flatnonzero(P[:, v]) for v in range(nd)]
    poff = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    xoff = np.concatenate([[0], np.cumsum([r.size * d for r, d in zip(rows, dense_dims)])])
    prow = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    gidx = -np.ones((s, nd), np.int64)
    for v in range(nd):
        gidx[rows[v], v] = poff[v] + np.arange(rows[v].size)
    orphans = np.flatnonzero(~P.any(axis=1))
    return (prow, poff, xoff.astype(np.int64), gidx, P.astype(np.float64),
            int(orphans[0]) if orphans.size else -1)


def stream_gather_views(views, prow, poff, xoff, normalize, xbuf):
    status = []
    for v, X in enumerate(views):
        rows = prow[poff[v]:poff[v + 1]]
        sub = np.asarray(X, dtype=np.float64)[rows]
        allnan = np.isnan(sub).all(axis=1)
        bad = (~np.isfinite(sub)).any(axis=1) & ~allnan
        status.append(np.where(allnan, 1, np.where(bad, 2, 0)))
        if normalize:                               # overflow-safe ‖x‖ = b ‖x / b‖
            fin = np.where(np.isfinite(sub), sub, 0.0)
            big = np.abs(fin).max(axis=1, initial=0.0)
            big[big == 0] = 1.0
            norms = big * np.sqrt(((fin / big[:, None]) ** 2).sum(axis=1))
            norms[norms == 0] = 1.0
            sub = sub / norms[:, None]
        xbuf[xoff[v]:xoff[v + 1]] = sub.ravel()
    return np.concatenate(status).astype(np.int8) if status else np.zeros(0, np.int8)


def _dense_views(xbuf, xoff, poff, view_ptr):
    """List of the compacted dense blocks ``X_v`` (s_v, d_v)."""
    out = []
    for v in range(len(xoff) - 1):
        s_v = poff[v + 1] - poff[v]
        d_v = view_ptr[v + 1] - view_ptr[v]
        out.append(np.asarray(xbuf[xoff[v]:xoff[v + 1]]).reshape(s_v, d_v))
    return out


def stream_cross(xbuf, xoff, poff, view_ptr, U):
    blocks = _dense_views(xbuf, xoff, poff, view_ptr)
    parts = [X.astype(np.float64) @ U[view_ptr[v]:view_ptr[v + 1]] for v, X in enumerate(blocks)]
    c = U.shape[1]
    return np.concatenate(parts) if parts else np.zeros((0, c))


def _csr_dense(sdata, sind, sptr, D):
    s = len(sptr) - 1
    Xs = np.zeros((s, D))
    for i in range(s):
        for p in range(sptr[i], sptr[i + 1]):
            Xs[i, sind[p]] += sdata[p]
    return Xs


def _two_smallest(D, labels, best, second, rows=None):
    rows = np.arange(D.shape[0]) if rows is None else rows
    lab = np.argmin(D[rows], axis=1)
    labels[rows] = lab
    best[rows] = D[rows, lab]
    if D.shape[1] == 1:
        second[rows] = np.inf
    else:
        second[rows] = np.sort(D[rows], axis=1)[:, 1]


def stream_assign(G, gidx, sdata, sind, sptr, U, W, usq, labels, best, second):
    s, m = W.shape
    D = W @ usq                                   # Σ_v w_{v,i} ‖u_{v,k}‖²
    for v in range(gidx.shape[1]):
        for i in range(s):
            if gidx[i, v] >= 0:
                D[i] -= 2.0 * G[gidx[i, v]]
    Xs = _csr_dense(sdata, sind, sptr, U.shape[0])
    D -= 2.0 * Xs @ U
    _two_smallest(D, labels, best, second)


def _full_D(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W):
    """D[i,k] = Σ_v w_{v,i}(‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k}) over full (zero-filled) views."""
    s, m = W.shape
    c = U.shape[1]
    D = np.zeros((s, c))
    blocks = _dense_views(xbuf, xoff, poff, view_ptr)
    n_dense = len(blocks)
    Xs = _csr_dense(sdata, sind, sptr, U.shape[0])
    for v in range(m):
        Uv = U[view_ptr[v]:view_ptr[v + 1]]
        if v < n_dense:
            Xfull = np.zeros((s, Uv.shape[0]))
            rows = np.flatnonzero(gidx[:, v] >= 0)
            Xfull[rows] = blocks[v][gidx[rows, v] - poff[v]]
        else:
            Xfull = Xs[:, view_ptr[v]:view_ptr[v + 1]]
        D += W[:, [v]] * ((Uv ** 2).sum(axis=0)[None, :] - 2.0 * Xfull @ Uv)
    return D


def stream_assign_rows(rows, xbuf, xoff, poff, gidx, view_ptr, sdata, sind, sptr, U, W, usq,
                       labels, best, second):
    D = _full_D(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W)
    _two_smallest(D, labels, best, second, np.asarray(rows))


def stream_row_sqnorms(xbuf, xoff, prow, poff, view_ptr, sdata, sptr, s):
    blocks = _dense_views(xbuf, xoff, poff, view_ptr)
    xsq = np.zeros(s)
    for v, X in enumerate(blocks):
        np.add.at(xsq, prow[poff[v]:poff[v + 1]], (X.astype(np.float64) ** 2).sum(axis=1))
    for i in range(s):
        xsq[i] += np.sum(np.asarray(sdata[sptr[i]:sptr[i + 1]], np.float64) ** 2)
    return xsq


def stream_center_shift(U_old, U):
    return np.linalg.norm(U - U_old, axis=0)


def stream_center_sqnorms(U, view_ptr):
    return np.array([(U[view_ptr[v]:view_ptr[v + 1]] ** 2).sum(axis=0)
                     for v in range(len(view_ptr) - 1)]).reshape(len(view_ptr) - 1, U.shape[1])


def stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W, labels):
    """Direct formula over full views (see _full_D)."""
    D = _full_D(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W)
    best, second = np.empty(D.shape[0]), np.empty(D.shape[0])
    _two_smallest(D, labels, best, second)
    return best, second


def stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, labels, R, sign):
    blocks = _dense_views(xbuf, xoff, poff, view_ptr)
    c = R.shape[0]
    for v, X in enumerate(blocks):
        V = np.zeros((X.shape[0], c))
        V[np.arange(X.shape[0]), labels[prow[poff[v]:poff[v + 1]]]] = 1.0
        R[:, view_ptr[v]:view_ptr[v + 1]] += sign * (V.T @ X.astype(np.float64))


def stream_scatter_csr(sdata, sind, sptr, labels, R, sign):
    Xs = _csr_dense(sdata, sind, sptr, R.shape[1])
    V = np.zeros((Xs.shape[0], R.shape[0]))
    V[np.arange(Xs.shape[0]), labels] = 1.0
    R += sign * (V.T @ Xs)


def stream_scatter_counts(labels, W, T, sign):
    V = np.zeros((W.shape[0], T.shape[1]))
    V[np.arange(W.shape[0]), labels] = 1.0
    T += sign * (W.T @ V)


def stream_move_dense(xbuf, xoff, prow, poff, view_ptr, old, new, R):
    stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, old, R, -1.0)
    stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, new, R, 1.0)


def stream_move_csr(sdata, sind, sptr, old, new, R):
    stream_scatter_csr(sdata, sind, sptr, old, R, -1.0)
    stream_scatter_csr(sdata, sind, sptr, new, R, 1.0)


def stream_move_counts(old, new, W, T):
    stream_scatter_counts(old, W, T, -1.0)
    stream_scatter_counts(new, W, T, 1.0)
    return int(np.sum(old != new))


def stream_update_centers(R, T, view_ptr, alpha, fill, U):
    c = T.shape[1]
    for v in range(len(view_ptr) - 1):
        a, b = view_ptr[v], view_ptr[v + 1]
        Rv = R[:, a:b].T                                          # R_v (d_v, c)
        Unew = Rv @ np.linalg.pinv(np.diag(T[v]) + alpha * np.eye(c))   # R_v (T_v + αI)⁻¹
        for k in range(c):
            if T[v, k] > 0:
                U[a:b, k] = Unew[:, k]
            elif len(fill):
                U[a:b, k] = fill[a:b]


def stream_loss(U, R, T, view_ptr, alpha):
    loss = 0.0
    for v in range(len(view_ptr) - 1):
        Uv, Rv = U[view_ptr[v]:view_ptr[v + 1]], R[:, view_ptr[v]:view_ptr[v + 1]].T
        loss += (-2.0 * np.trace(Uv.T @ Rv) + np.trace(Uv.T @ Uv @ np.diag(T[v]))
                 + alpha * np.sum(Uv ** 2))
    return loss


def stream_chunk_iterate(xbuf, xoff, prow, poff, gidx, sdata, sind, sptr, W, view_ptr,
                         R, T, U, labels, mode, fill, alpha, max_iter, tol):
    """Same loop, recomputing the chunk's contribution from scratch each iteration."""
    if mode == 2:                                 # remove the previous pass's contribution
        stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, labels, R, -1.0)
        stream_scatter_csr(sdata, sind, sptr, labels, R, -1.0)
        stream_scatter_counts(labels, W, T, -1.0)
    if mode in (1, 2):                            # start from the current centres
        stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W, labels)
    R0, T0 = R.copy(), T.copy()                   # statistics without the chunk

    def stats(lab):
        Rc, Tc = R0.copy(), T0.copy()
        stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, lab, Rc, 1.0)
        stream_scatter_csr(sdata, sind, sptr, lab, Rc, 1.0)
        stream_scatter_counts(lab, W, Tc, 1.0)
        return Rc, Tc

    Rc, Tc = stats(labels)
    loss_old = stream_loss(U, Rc, Tc, view_ptr, alpha)
    loss, n_iter, converged = loss_old, 0, False
    for it in range(max_iter):
        stream_update_centers(Rc, Tc, view_ptr, alpha, fill, U)
        new = np.empty_like(labels)
        stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W, new)
        changed = np.any(new != labels)
        labels[:] = new
        Rc, Tc = stats(labels)
        loss = stream_loss(U, Rc, Tc, view_ptr, alpha)
        n_iter = it + 1
        if not changed or abs(loss - loss_old) < tol * abs(loss_old):
            converged = True
            break
        loss_old = loss
    R[...] = Rc
    T[...] = Tc
    return loss, n_iter, converged


# ---------------------------------------------------------------------------------------
# whole-algorithm references (used by tests/test_opimc.py)
# ---------------------------------------------------------------------------------------


def prepare_views(views, mask=None, normalize=True):
    """Dense float64 copies with missing (masked or all-NaN) rows zeroed and present rows
    scaled to unit norm; returns (views, W)."""
    out, cols = [], []
    n = views[0].shape[0]
    for v, X in enumerate(views):
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        X = np.array(X, dtype=np.float64)
        present = np.ones(n, bool) if mask is None else np.asarray(mask[:, v], bool).copy()
        present &= ~np.isnan(X).all(axis=1)
        X[~present] = 0.0
        if normalize:
            norms = np.linalg.norm(X, axis=1)
            norms[norms == 0] = 1.0
            X = X / norms[:, None]
        out.append(X)
        cols.append(present)
    return out, np.column_stack(cols).astype(np.float64)


def opimc_reference(views, n_clusters, first_labels, *, mask=None, alpha=0.1, chunk_size=250,
                    n_passes=1, max_iter=30, tol=1e-6, normalize=True):
    """OPIMC exactly as ALGORITHMS.md §5 states it, with dense one-hot V and a from-scratch
    chunk contribution every iteration. ``first_labels``: labels of the first chunk.
    Returns (labels, U list, per-pass loss, per-chunk loss)."""
    X, W = prepare_views(views, mask, normalize)
    n, m, c = X[0].shape[0], len(X), n_clusters
    R = [np.zeros((x.shape[1], c)) for x in X]
    T = [np.zeros((c, c)) for _ in X]
    U = [np.zeros((x.shape[1], c)) for x in X]
    labels = np.zeros(n, np.int64)
    onehot = np.eye(c)
    pass_loss, chunk_loss = [], []

    def loss_of(Rs, Ts):
        return sum(-2 * np.trace(u.T @ r) + np.trace(u.T @ u @ t) + alpha * np.sum(u ** 2)
                   for u, r, t in zip(U, Rs, Ts))

    def assign(sl):
        D = np.zeros((sl.stop - sl.start, c))
        for v in range(m):
            D += W[sl, [v]] * ((U[v] ** 2).sum(0) - 2 * X[v][sl] @ U[v])
        return np.argmin(D, axis=1)

    for p in range(n_passes):
        losses = []
        for t, a in enumerate(range(0, n, chunk_size)):
            sl = slice(a, min(a + chunk_size, n))
            Xt = [x[sl] for x in X]
            Wt = W[sl]
            if p > 0:                                   # remove the previous contribution
                Vp = onehot[labels[sl]]
                for v in range(m):
                    R[v] -= Xt[v].T @ Vp
                    T[v] -= Vp.T @ (Wt[:, [v]] * Vp)
            first = p == 0 and t == 0
            lab = np.asarray(first_labels, np.int64)[:sl.stop - sl.start] if first \
                else assign(sl)
            fill = [x.sum(0) / max(w.sum(), 1) for x, w in zip(Xt, Wt.T)] if first else None

            def stats(lab):
                V = onehot[lab]
                return ([R[v] + Xt[v].T @ V for v in range(m)],
                        [T[v] + V.T @ (Wt[:, [v]] * V) for v in range(m)])

            Rc, Tc = stats(lab)
            loss_old = loss_of(Rc, Tc)
            for it in range(max_iter):
                for v in range(m):
                    cnt = np.diag(Tc[v])
                    Unew = Rc[v] @ np.linalg.pinv(Tc[v] + alpha * np.eye(c))
                    zero = cnt == 0
                    Unew[:, zero] = fill[v][:, None] if first else U[v][:, zero]
                    U[v] = Unew
                new = assign(sl)
                changed = np.any(new != lab)
                lab = new
                Rc, Tc = stats(lab)
                loss = loss_of(Rc, Tc)
                if not changed or abs(loss - loss_old) < tol * abs(loss_old):
                    break
                loss_old = loss
            R, T = Rc, Tc
            labels[sl] = lab
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
