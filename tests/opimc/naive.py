"""NumPy twins of the streaming kernels (``kernels/opimc.py``) and a plain reference OPIMC.

Written for clarity: dense one-hot ``V``, explicit per-view loops, formulas straight from
docs/algorithms.md §5. Same argument conventions as the kernels (see the kernels' module
docstring for the compact chunk layout); kernels that work in place have twins that work in
place too.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

# the kernels' start modes and output layout (restated: the twins do not import the kernels)
START_FROM_LABELS, START_FROM_CENTERS, REPLACE_PREVIOUS = 0, 1, 2


class Nearest(NamedTuple):
    labels: np.ndarray
    best: np.ndarray
    second: np.ndarray

# ---------------------------------------------------------------------------------------
# twins of the kernels
# ---------------------------------------------------------------------------------------


def stream_layout(P, dense_dims):
    P = np.asarray(P, bool)
    s, m = P.shape
    nd = len(dense_dims)
    rows = [np.flatnonzero(P[:, v]) for v in range(nd)]
    row_start = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    value_start = np.concatenate([[0], np.cumsum([r.size * d for r, d in zip(rows, dense_dims)])])
    stored = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    position = -np.ones((s, nd), np.int64)
    for v in range(nd):
        position[rows[v], v] = row_start[v] + np.arange(rows[v].size)
    orphans = np.flatnonzero(~P.any(axis=1))
    return (stored, row_start, value_start.astype(np.int64), position, P.astype(np.float64),
            int(orphans[0]) if orphans.size else -1)


def stream_gather_view(X, rows, normalize, out, status):
    sub = np.asarray(X, dtype=np.float64)[rows]
    allnan = np.isnan(sub).all(axis=1)
    bad = (~np.isfinite(sub)).any(axis=1) & ~allnan
    status[:] = np.where(allnan, 1, np.where(bad, 2, 0))
    if normalize:                               # scale-safe ‖x‖ = b ‖x / b‖
        fin = np.where(np.isfinite(sub), sub, 0.0)
        big = np.abs(fin).max(axis=1, initial=0.0)
        big[big == 0] = 1.0
        unit = fin / big[:, None]
        norms = np.sqrt((unit ** 2).sum(axis=1))
        norms[norms == 0] = 1.0
        sub = np.where(status[:, None] == 0, unit / norms[:, None], sub)
    ok = status == 0
    out.reshape(rows.size, -1)[ok] = sub[ok]


def _dense_views(dense, view_ptr):
    """List of the compacted dense blocks ``X_v`` (s_v, d_v)."""
    out = []
    if dense is None:
        return out
    for v in range(len(dense.value_start) - 1):
        s_v = dense.row_start[v + 1] - dense.row_start[v]
        d_v = view_ptr[v + 1] - view_ptr[v]
        out.append(np.asarray(dense.values[dense.value_start[v]:dense.value_start[v + 1]])
                   .reshape(s_v, d_v))
    return out


def stream_cross(dense, view_ptr, U):
    blocks = _dense_views(dense, view_ptr)
    parts = [X.astype(np.float64) @ U[view_ptr[v]:view_ptr[v + 1]] for v, X in enumerate(blocks)]
    c = U.shape[1]
    return np.concatenate(parts) if parts else np.zeros((0, c))


def _csr_dense(sparse, s, D):
    Xs = np.zeros((s, D))
    if sparse is None:
        return Xs
    rows = np.repeat(np.arange(s), np.diff(sparse.indptr))
    np.add.at(Xs, (rows, sparse.indices), sparse.data)
    return Xs


def _two_smallest(D, out, rows=None):
    rows = np.arange(D.shape[0]) if rows is None else rows
    lab = np.argmin(D[rows], axis=1)
    out.labels[rows] = lab
    out.best[rows] = D[rows, lab]
    if D.shape[1] == 1:
        out.second[rows] = np.inf
    else:
        out.second[rows] = np.sort(D[rows], axis=1)[:, 1]


def _full_D(dense, sparse, W, view_ptr, U):
    """D[i,k] = Σ_v w_{v,i}(‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k}) over full (zero-filled) views."""
    s, m = W.shape
    c = U.shape[1]
    D = np.zeros((s, c))
    blocks = _dense_views(dense, view_ptr)
    n_dense = len(blocks)
    Xs = _csr_dense(sparse, s, U.shape[0])
    for v in range(m):
        Uv = U[view_ptr[v]:view_ptr[v + 1]]
        if v < n_dense:
            Xfull = np.zeros((s, Uv.shape[0]))
            rows = np.flatnonzero(dense.position[:, v] >= 0)
            Xfull[rows] = blocks[v][dense.position[rows, v] - dense.row_start[v]]
        else:
            Xfull = Xs[:, view_ptr[v]:view_ptr[v + 1]]
        D += W[:, [v]] * ((Uv ** 2).sum(axis=0)[None, :] - 2.0 * Xfull @ Uv)
    return D


def stream_assign(dense, sparse, W, view_ptr, U, usq, G, rows, out):
    """Direct formula over full views (``G`` and ``usq`` are recomputed, not trusted)."""
    D = _full_D(dense, sparse, W, view_ptr, U)
    _two_smallest(D, out, np.asarray(rows))


def stream_row_sqnorms(dense, sparse, view_ptr, s):
    xsq = np.zeros(s)
    for v, X in enumerate(_dense_views(dense, view_ptr)):
        rows = dense.rows[dense.row_start[v]:dense.row_start[v + 1]]
        np.add.at(xsq, rows, (X.astype(np.float64) ** 2).sum(axis=1))
    if sparse is not None:
        for i in range(s):
            xsq[i] += np.sum(np.asarray(sparse.data[sparse.indptr[i]:sparse.indptr[i + 1]],
                                        np.float64) ** 2)
    return xsq


def stream_center_shift(U_old, U):
    return np.linalg.norm(U - U_old, axis=0)


def stream_center_sqnorms(U, view_ptr):
    return np.array([(U[view_ptr[v]:view_ptr[v + 1]] ** 2).sum(axis=0)
                     for v in range(len(view_ptr) - 1)]).reshape(len(view_ptr) - 1, U.shape[1])


def stream_chunk_assign(dense, sparse, W, view_ptr, U, labels):
    """Direct formula over full views (see _full_D)."""
    D = _full_D(dense, sparse, W, view_ptr, U)
    out = Nearest(labels, np.empty(D.shape[0]), np.empty(D.shape[0]))
    _two_smallest(D, out)
    return out.best, out.second


def stream_scatter_dense(dense, view_ptr, labels, R, sign):
    c = R.shape[0]
    for v, X in enumerate(_dense_views(dense, view_ptr)):
        V = np.zeros((X.shape[0], c))
        V[np.arange(X.shape[0]), labels[dense.rows[dense.row_start[v]:dense.row_start[v + 1]]]] = 1
        R[:, view_ptr[v]:view_ptr[v + 1]] += sign * (V.T @ X.astype(np.float64))


def stream_scatter_csr(sparse, labels, R, sign):
    Xs = _csr_dense(sparse, len(labels), R.shape[1])
    V = np.zeros((Xs.shape[0], R.shape[0]))
    V[np.arange(Xs.shape[0]), labels] = 1.0
    R += sign * (V.T @ Xs)


def stream_scatter_counts(labels, W, T, sign):
    V = np.zeros((W.shape[0], T.shape[1]))
    V[np.arange(W.shape[0]), labels] = 1.0
    T += sign * (W.T @ V)


def stream_move_dense(dense, view_ptr, old, new, R):
    stream_scatter_dense(dense, view_ptr, old, R, -1.0)
    stream_scatter_dense(dense, view_ptr, new, R, 1.0)


def stream_move_csr(sparse, old, new, R):
    stream_scatter_csr(sparse, old, R, -1.0)
    stream_scatter_csr(sparse, new, R, 1.0)


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


def stream_chunk_iterate(dense, sparse, W, view_ptr, stats, labels, start, fill, alpha,
                         max_iter, tol):
    """Same loop, recomputing the chunk's contribution from scratch each iteration."""
    R, T, U = stats.sums, stats.counts, stats.centers

    def add(lab, Rc, Tc, sign):
        stream_scatter_dense(dense, view_ptr, lab, Rc, sign)
        stream_scatter_csr(sparse, lab, Rc, sign)
        stream_scatter_counts(lab, W, Tc, sign)

    if start == REPLACE_PREVIOUS:                 # remove the previous pass's contribution
        add(labels, R, T, -1.0)
    if start != START_FROM_LABELS:                # start from the current centres
        stream_chunk_assign(dense, sparse, W, view_ptr, U, labels)
    R0, T0 = R.copy(), T.copy()                   # statistics without the chunk

    def stats_of(lab):
        Rc, Tc = R0.copy(), T0.copy()
        add(lab, Rc, Tc, 1.0)
        return Rc, Tc

    Rc, Tc = stats_of(labels)
    loss_old = stream_loss(U, Rc, Tc, view_ptr, alpha)
    loss, n_iter, converged = loss_old, 0, False
    for it in range(max_iter):
        stream_update_centers(Rc, Tc, view_ptr, alpha, fill, U)
        new = np.empty_like(labels)
        stream_chunk_assign(dense, sparse, W, view_ptr, U, new)
        changed = np.any(new != labels)
        labels[:] = new
        Rc, Tc = stats_of(labels)
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
# whole-algorithm references (used by tests/opimc/test_opimc.py)
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
    """OPIMC exactly as docs/algorithms.md §5 states it, with dense one-hot V and a from-scratch
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
