"""NumPy twins of the streaming kernels (``kernels/opimc.py``); the whole-algorithm reference
is ``benchmarks/references/opimc.py``.

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
    d = sub.shape[1]
    out[:rows.size * d].reshape(rows.size, d)[ok] = sub[ok]


def stream_finish_rows(values, d, normalize, status):
    """The rows already in place: the gather of every row, onto itself."""
    n = status.shape[0]
    block = values[:n * d].reshape(n, d).copy()
    stream_gather_view(block, np.arange(n), normalize, values[:n * d], status)


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


def _full_views(dense, sparse, W, view_ptr):
    """Each view as a full (s, d_v) float64 matrix, zero where the row is missing."""
    s, m = W.shape
    blocks = _dense_views(dense, view_ptr)
    Xs = _csr_dense(sparse, s, view_ptr[-1])
    out = []
    for v in range(m):
        if v < len(blocks):
            X = np.zeros((s, view_ptr[v + 1] - view_ptr[v]))
            rows = np.flatnonzero(dense.position[:, v] >= 0)
            X[rows] = blocks[v][dense.position[rows, v] - dense.row_start[v]]
        else:
            X = Xs[:, view_ptr[v]:view_ptr[v + 1]]
        out.append(X)
    return out


def _optimal_loss_terms(R, T, view_ptr, alpha):
    """(m, c) terms ``−‖R_{v,k}‖² / (T_{v,k} + α)`` of the loss at the optimal centres."""
    m, c = T.shape
    out = np.zeros((m, c))
    for v in range(m):
        rsq = (R[:, view_ptr[v]:view_ptr[v + 1]] ** 2).sum(axis=1)
        den = T[v] + alpha
        out[v] = np.where(den > 0, -rsq / np.where(den > 0, den, 1.0), 0.0)
    return out


def _move_row(R, T, Xs, W, view_ptr, i, src, dst):
    """Row ``i``'s sums and presence weights moved from cluster ``src`` to ``dst``, in place,
    in every view that holds it."""
    for v in range(len(Xs)):
        if W[i, v] != 0:
            sl = slice(view_ptr[v], view_ptr[v + 1])
            R[src, sl] -= Xs[v][i]
            R[dst, sl] += Xs[v][i]
            T[v, src] -= W[i, v]
            T[v, dst] += W[i, v]


def stream_chunk_refine(dense, sparse, W, view_ptr, stats, labels, fill, alpha, max_sweeps):
    """Every candidate move evaluated by moving the row and recomputing the loss."""
    R, T, U = stats.sums, stats.counts, stats.centers
    Xs = _full_views(dense, sparse, W, view_ptr)
    s, m = W.shape
    c = T.shape[1]
    n_moves = n_sweeps = 0
    for _ in range(max_sweeps):
        n_sweeps += 1
        moved = 0
        for i in range(s):
            a = labels[i]
            if T[:, a].sum() - W[i].sum() <= 0.0:
                continue                          # a would be empty in every view
            before = _optimal_loss_terms(R, T, view_ptr, alpha)
            present = W[i] != 0
            scale = np.abs(before[present, a]).sum() + sum(
                Xs[v][i] @ Xs[v][i] for v in range(m) if present[v])
            gains = np.full(c, np.inf)
            for k in range(c):
                if k == a:
                    continue
                R2, T2 = R.copy(), T.copy()
                _move_row(R2, T2, Xs, W, view_ptr, i, a, k)
                gains[k] = (_optimal_loss_terms(R2, T2, view_ptr, alpha) - before).sum()
            b = int(np.argmin(gains)) if c > 1 else a
            if b == a or not gains[b] < -1e-10 * scale:
                continue
            _move_row(R, T, Xs, W, view_ptr, i, a, b)
            labels[i] = b
            moved += 1
        n_moves += moved
        if moved == 0:
            break
    if n_moves:
        stream_update_centers(R, T, view_ptr, alpha, fill, U)
    return n_moves, n_sweeps
