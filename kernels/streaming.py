"""Streaming kernels of OPIMC (ALGORITHMS.md §5): one chunk of rows at a time.

Layout of a chunk of ``s`` rows (built by ``fastmv._opimc``), views in *internal order*
(the dense views first, then the sparse ones), ``view_ptr`` (``m + 1``) giving each view's
rows in the stacked feature space of size ``D = Σ d_v``:

- dense views are stored *compacted*: only the rows present in view ``v`` are kept, row-major
  ``(s_v, d_v)`` blocks one after the other in the flat buffer ``xbuf`` (``xoff``: offsets);
  ``prow[poff[v]:poff[v+1]]`` are the chunk rows they came from, and ``gidx[i, v]`` is the
  position of chunk row ``i`` in that stacking (``-1`` when missing). Missing rows cost nothing.
- the sparse views are one CSR matrix ``(sdata, sind, sptr)`` of ``s`` rows whose column indices
  are already global rows of ``U`` / ``R`` (missing rows have no entries).
- ``W`` ``(s, m)``: 1.0 where the row is present in the view, else 0.0.

Global statistics are float64 ``R`` ``(c, D)`` (per-cluster sums of present rows: the
``R_v = Σ X_vᵀ V`` of every view, transposed and stacked side by side, so that adding a row to
a cluster is a contiguous write) and ``T`` ``(m, c)`` (per-cluster counts of present rows, the
diagonal of ``T_v``); centres ``U`` ``(D, c)`` float64 (``U_v`` stacked). Chunk values are
float32 or float64.

Because ``V`` is one-hot, ``X_tᵀ V_t`` is a scatter-add of rows into cluster columns (O(s d))
and ``Vᵀ W V`` a count; the only O(s d c) work is the cross product ``X_t U`` (BLAS for the
dense views, a fused row kernel for CSR), followed by a fused distance + argmin kernel. Inside
a chunk the statistics follow the labels incrementally (only rows whose label changed move),
and re-assignments after the first are pruned exactly with Hamerly's bounds
(:func:`stream_chunk_iterate`).

Parallel kernels split their work into a fixed set of blocks (never by thread count), so results
do not depend on the number of threads; below ``_PAR_MIN`` elementary operations they run
serially because a parallel launch would cost more than the work.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "stream_layout",
    "stream_gather_views",
    "stream_cross",
    "stream_assign",
    "stream_assign_rows",
    "stream_row_sqnorms",
    "stream_center_shift",
    "stream_chunk_assign",
    "stream_scatter_dense",
    "stream_scatter_csr",
    "stream_scatter_counts",
    "stream_move_dense",
    "stream_move_csr",
    "stream_move_counts",
    "stream_center_sqnorms",
    "stream_update_centers",
    "stream_loss",
    "stream_chunk_iterate",
]

_FEATURE_BLOCK = 512  # features per parallel task in the dense scatter / move kernels
# Below this many elementary operations a kernel runs serially: a parallel launch costs more.
_PAR_MIN = 1 << 17
# Row blocks per parallel loop (a fixed partition: results never depend on the thread count).
_N_BLOCKS = 64


@njit(cache=True)
def stream_layout(P, dense_dims):
    """Index arrays of the compact chunk layout from the chunk's presence mask.

    Parameters
    ----------
    P : ndarray of shape (s, m), bool
        Presence of each chunk row in each view (internal order: dense views first).
    dense_dims : ndarray of shape (n_dense,), int64
        ``d_v`` of the dense views.

    Returns
    -------
    prow : ndarray of shape (Σ s_v,), int64
        Rows present in each dense view, view after view.
    poff : ndarray of shape (n_dense + 1,), int64
        Offsets into ``prow`` (``s_v = poff[v+1] - poff[v]``).
    xoff : ndarray of shape (n_dense + 1,), int64
        Offsets of the compact blocks in the value buffer (``s_v d_v`` each).
    gidx : ndarray of shape (s, n_dense), int64
        Position of (row, dense view) in ``prow``, ``-1`` when missing.
    W : ndarray of shape (s, m), float64
        ``P`` as 0.0 / 1.0 weights.
    orphan : int
        First row present in no view, or -1.

    Notes
    -----
    O(s m) time.
    """
    s, m = P.shape
    nd = dense_dims.shape[0]
    poff = np.zeros(nd + 1, np.int64)
    xoff = np.zeros(nd + 1, np.int64)
    for v in range(nd):
        cnt = 0
        for i in range(s):
            if P[i, v]:
                cnt += 1
        poff[v + 1] = poff[v] + cnt
        xoff[v + 1] = xoff[v] + cnt * dense_dims[v]
    prow = np.empty(poff[nd], np.int64)
    gidx = np.full((s, nd), -1, np.int64)
    for v in range(nd):
        q = poff[v]
        for i in range(s):
            if P[i, v]:
                prow[q] = i
                gidx[i, v] = q
                q += 1
    W = np.zeros((s, m))
    orphan = -1
    for i in range(s):
        seen = False
        for v in range(m):
            if P[i, v]:
                W[i, v] = 1.0
                seen = True
        if not seen and orphan < 0:
            orphan = i
    return prow, poff, xoff, gidx, W, orphan


@njit(cache=True)
def _row_scale(X, i, normalize, status, q):
    """Classify row ``i`` of ``X`` into ``status[q]``; return 1/‖row‖ (or 1)."""
    d = X.shape[1]
    ssq = 0.0
    for j in range(d):
        x = np.float64(X[i, j])
        ssq += x * x
    status[q] = 0
    if not np.isfinite(ssq):              # NaN / inf somewhere, or squares overflowing
        n_nan = 0
        n_inf = 0
        big = 0.0
        for j in range(d):
            x = np.float64(X[i, j])
            if np.isnan(x):
                n_nan += 1
            elif np.isinf(x):
                n_inf += 1
            else:
                big = max(big, abs(x))
        if n_nan == d:
            status[q] = 1
            return 1.0
        if n_nan > 0 or n_inf > 0:
            status[q] = 2
            return 1.0
        ssq = 0.0                         # finite but huge: scale before squaring
        for j in range(d):
            x = np.float64(X[i, j]) / big
            ssq += x * x
        return 1.0 / (big * np.sqrt(ssq)) if normalize else 1.0
    if normalize and ssq > 0.0:
        return 1.0 / np.sqrt(ssq)
    return 1.0


@njit(cache=True)
def _gather_range(lo, hi, X, prow, p0, normalize, xbuf, x0, status):
    """Rows ``q`` in [lo, hi) of one view's stretch of ``prow`` (which starts at ``p0``): copy
    ``X[prow[q]]`` (scaled) to ``xbuf[x0 + (q - p0) d:]``, classify it in ``status[q]``."""
    d = X.shape[1]
    for q in range(lo, hi):
        i = prow[q]
        scale = _row_scale(X, i, normalize, status, q)
        o = x0 + (q - p0) * d
        for j in range(d):
            xbuf[o + j] = X[i, j] * scale


@njit(parallel=True, cache=True)
def stream_gather_views(views, prow, poff, xoff, normalize, xbuf):
    """Copy the present rows of every dense view of a chunk into the compact buffer, each
    optionally scaled to unit ℓ2 norm, and classify them by their non-finite values.

    Parameters
    ----------
    views : tuple of ndarray, each (s, d_v), all float32 or all float64, C-contiguous
        The chunk of each dense view (internal order).
    prow : ndarray of shape (Σ s_v,), int64
        Chunk rows present in each view, view after view (``poff`` delimits them).
    poff : ndarray of shape (n_dense + 1,), int64
    xoff : ndarray of shape (n_dense + 1,), int64
        Offsets of the views' compact blocks in ``xbuf`` (``xoff[v+1] - xoff[v] = s_v d_v``).
    normalize : bool
        Scale each kept row to unit ℓ2 norm (zero rows stay zero).
    xbuf : ndarray of shape (>= xoff[-1],), dtype of the views
        Written in place: ``X_v[r] = views[v][prow[poff[v] + r]] / ‖·‖`` row-major from
        ``xoff[v]``.

    Returns
    -------
    status : ndarray of shape (Σ s_v,), int8
        0: the row is finite; 1: every value is NaN (a missing row: drop it); 2: anything
        else non-finite (some NaN, or an infinity): invalid input.

    Notes
    -----
    O(Σ s_v d_v) time: one read of each kept row; norms accumulated in float64. Parallel over
    blocks of rows of all views when the chunk is large enough to pay for the thread launch.
    """
    n_dense = len(views)
    status = np.empty(poff[n_dense], np.int8)
    if xoff[n_dense] < _PAR_MIN:
        for v in range(n_dense):
            _gather_range(poff[v], poff[v + 1], views[v], prow, poff[v], normalize, xbuf,
                          xoff[v], status)
        return status
    n_task = 0
    for v in range(n_dense):
        n_task += min(poff[v + 1] - poff[v], _N_BLOCKS)
    tv = np.empty(n_task, np.int64)
    tlo = np.empty(n_task, np.int64)
    thi = np.empty(n_task, np.int64)
    t = 0
    for v in range(n_dense):
        s_v = poff[v + 1] - poff[v]
        nb = min(s_v, _N_BLOCKS)
        for b in range(nb):
            tv[t] = v
            tlo[t] = poff[v] + b * s_v // nb
            thi[t] = poff[v] + (b + 1) * s_v // nb
            t += 1
    for t in prange(n_task):
        v = tv[t]
        _gather_range(tlo[t], thi[t], views[v], prow, poff[v], normalize, xbuf, xoff[v],
                      status)
    return status


@njit(cache=True)
def stream_cross(xbuf, xoff, poff, view_ptr, U):
    """Cross products ``X_v U_v`` of the compacted dense views of a chunk (BLAS GEMMs).

    Parameters
    ----------
    xbuf : ndarray of shape (Σ s_v d_v,), float32 or float64
        Compacted dense views, row-major blocks one after the other.
    xoff : ndarray of shape (n_dense + 1,), int64
        Offsets of the blocks in ``xbuf``.
    poff : ndarray of shape (n_dense + 1,), int64
        Offsets of the blocks' rows (``s_v = poff[v+1] - poff[v]``).
    view_ptr : ndarray of shape (m + 1,), int64
        Rows of each view in ``U`` (dense views first).
    U : ndarray of shape (D, c), float64
        Stacked centres.

    Returns
    -------
    G : ndarray of shape (poff[-1], c), dtype of ``xbuf``
        ``G[poff[v] + r] = X_v[r] @ U_v``.

    Notes
    -----
    One GEMM per dense view: O(Σ s_v d_v c) time, O(Σ s_v c + d_v c) memory.
    """
    n_dense = xoff.shape[0] - 1
    c = U.shape[1]
    G = np.empty((poff[n_dense], c), dtype=xbuf.dtype)
    for v in range(n_dense):
        s_v = poff[v + 1] - poff[v]
        a = view_ptr[v]
        d_v = view_ptr[v + 1] - a
        if s_v == 0:
            continue
        Xv = xbuf[xoff[v]:xoff[v + 1]].reshape((s_v, d_v))
        Uv = np.empty((d_v, c), dtype=xbuf.dtype)
        for j in range(d_v):
            for k in range(c):
                Uv[j, k] = U[a + j, k]
        G[poff[v]:poff[v + 1]] = np.dot(Xv, Uv)
    return G


@njit(cache=True)
def _argmin2(acc, i, labels, best, second):
    """labels[i], best[i], second[i] = argmin, min and second smallest of acc (ties: lowest
    index wins; second = inf when c == 1)."""
    c = acc.shape[0]
    k1 = 0
    v1 = acc[0]
    v2 = np.inf
    for k in range(1, c):
        a = acc[k]
        if a < v1:
            v2 = v1
            v1 = a
            k1 = k
        elif a < v2:
            v2 = a
    labels[i] = k1
    best[i] = v1
    second[i] = v2


@njit(cache=True)
def _assign_range(lo, hi, G, gidx, sdata, sind, sptr, U, W, usq, labels, best, second):
    m = W.shape[1]
    c = usq.shape[1]
    n_dense = gidx.shape[1]
    acc = np.empty(c)
    for i in range(lo, hi):
        for k in range(c):
            acc[k] = 0.0
        for v in range(m):
            w = W[i, v]
            if w != 0.0:
                for k in range(c):
                    acc[k] += w * usq[v, k]
        for v in range(n_dense):
            q = gidx[i, v]
            if q >= 0:
                for k in range(c):
                    acc[k] -= 2.0 * G[q, k]
        for p in range(sptr[i], sptr[i + 1]):
            j = sind[p]
            x = 2.0 * sdata[p]
            for k in range(c):
                acc[k] -= x * U[j, k]
        _argmin2(acc, i, labels, best, second)


@njit(parallel=True, cache=True)
def stream_assign(G, gidx, sdata, sind, sptr, U, W, usq, labels, best, second):
    """Fused distance + argmin over a chunk (parallel over samples).

    ``D[i, k] = Σ_v W[i, v] (‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k})``; ``labels[i] = argmin_k D[i, k]``
    (lowest index on ties). The dense cross products come from ``G`` (see
    :func:`stream_cross`); the CSR rows' products with ``U`` are computed here, fused.

    Parameters
    ----------
    G : ndarray of shape (Σ s_v, c)
        Dense cross products, stacked by view.
    gidx : ndarray of shape (s, n_dense), int64
        Row of ``G`` for (sample, dense view), ``-1`` when missing.
    sdata, sind, sptr : CSR arrays of the sparse views (``s`` rows; global column indices)
    U : ndarray of shape (D, c), float64
    W : ndarray of shape (s, m), float64
        Presence weights.
    usq : ndarray of shape (m, c), float64
        ``‖u_{v,k}‖²`` (see :func:`stream_center_sqnorms`).
    labels : ndarray of shape (s,), int64
        Output: nearest centre.
    best : ndarray of shape (s,), float64
        Output: ``D[i, labels[i]]``.
    second : ndarray of shape (s,), float64
        Output: the second smallest ``D[i, k]`` (``inf`` when ``c == 1``).

    Notes
    -----
    O(s (m + n_dense) c + nnz c) time beyond the GEMM; O(c) scratch per thread; never forms
    ``D``. Rows are independent, so the result does not depend on the thread count; small
    chunks run serially (a parallel launch would cost more).
    """
    s = W.shape[0]
    c = usq.shape[1]
    work = s * (W.shape[1] + gidx.shape[1]) * c + sdata.shape[0] * c
    if work < _PAR_MIN:
        _assign_range(0, s, G, gidx, sdata, sind, sptr, U, W, usq, labels, best, second)
        return
    nb = min(s, _N_BLOCKS)
    for b in prange(nb):
        _assign_range(b * s // nb, (b + 1) * s // nb, G, gidx, sdata, sind, sptr, U, W, usq,
                      labels, best, second)


@njit(cache=True)
def _assign_row_range(lo, hi, rows, xbuf, xoff, poff, gidx, view_ptr, sdata, sind, sptr, U, W,
                      usq, labels, best, second):
    m = W.shape[1]
    c = usq.shape[1]
    n_dense = gidx.shape[1]
    acc = np.empty(c)
    for r in range(lo, hi):
        i = rows[r]
        for k in range(c):
            acc[k] = 0.0
        for v in range(m):
            w = W[i, v]
            if w != 0.0:
                for k in range(c):
                    acc[k] += w * usq[v, k]
        for v in range(n_dense):
            q = gidx[i, v]
            if q >= 0:
                a = view_ptr[v]
                d_v = view_ptr[v + 1] - a
                o = xoff[v] + (q - poff[v]) * d_v
                for j in range(d_v):
                    x = 2.0 * xbuf[o + j]
                    for k in range(c):
                        acc[k] -= x * U[a + j, k]
        for p in range(sptr[i], sptr[i + 1]):
            j = sind[p]
            x = 2.0 * sdata[p]
            for k in range(c):
                acc[k] -= x * U[j, k]
        _argmin2(acc, i, labels, best, second)


@njit(parallel=True, cache=True)
def stream_assign_rows(rows, xbuf, xoff, poff, gidx, view_ptr, sdata, sind, sptr, U, W, usq,
                       labels, best, second):
    """Fused distance + argmin for selected rows of a chunk, cross products included (no GEMM).

    Same output as :func:`stream_chunk_assign` restricted to ``rows`` (written at those
    positions only); used when only a few rows can change cluster.

    Parameters
    ----------
    rows : ndarray of shape (r,), int64
        Chunk rows to assign.
    xbuf, xoff, poff, gidx : compacted dense views
    view_ptr : ndarray of shape (m + 1,), int64
    sdata, sind, sptr : CSR sparse views
    U : ndarray of shape (D, c), float64
    W : ndarray of shape (s, m), float64
    usq : ndarray of shape (m, c), float64
    labels : ndarray of shape (s,), int64
        Output at ``rows``.
    best, second : ndarray of shape (s,), float64
        Output at ``rows``: smallest and second smallest ``D[i, k]``.

    Notes
    -----
    O(r (Σ d_v c + m c) + nnz(rows) c) time; parallel over rows when there is enough work.
    """
    n = rows.shape[0]
    work = n * (view_ptr[view_ptr.shape[0] - 1] + W.shape[1]) * usq.shape[1]
    if work < _PAR_MIN:
        _assign_row_range(0, n, rows, xbuf, xoff, poff, gidx, view_ptr, sdata, sind, sptr, U,
                          W, usq, labels, best, second)
        return
    nb = min(n, _N_BLOCKS)
    for b in prange(nb):
        _assign_row_range(b * n // nb, (b + 1) * n // nb, rows, xbuf, xoff, poff, gidx,
                          view_ptr, sdata, sind, sptr, U, W, usq, labels, best, second)


@njit(cache=True)
def stream_row_sqnorms(xbuf, xoff, prow, poff, view_ptr, sdata, sptr, s):
    """``xsq[i] = Σ_v ‖x_{v,i}‖²`` over the views where chunk row ``i`` is present.

    Parameters
    ----------
    xbuf, xoff, prow, poff : compacted dense views
    view_ptr : ndarray of shape (m + 1,), int64
    sdata, sptr : CSR sparse views (data and row pointers)
    s : int
        Rows in the chunk.

    Returns
    -------
    xsq : ndarray of shape (s,), float64

    Notes
    -----
    O(Σ s_v d_v + nnz) time.
    """
    xsq = np.zeros(s)
    for v in range(xoff.shape[0] - 1):
        d_v = view_ptr[v + 1] - view_ptr[v]
        for q in range(poff[v], poff[v + 1]):
            o = xoff[v] + (q - poff[v]) * d_v
            acc = 0.0
            for j in range(d_v):
                x = np.float64(xbuf[o + j])
                acc += x * x
            xsq[prow[q]] += acc
    for i in range(s):
        for p in range(sptr[i], sptr[i + 1]):
            x = np.float64(sdata[p])
            xsq[i] += x * x
    return xsq


@njit(cache=True)
def stream_center_shift(U_old, U):
    """How far each centre moved: ``delta[k] = ‖U[:, k] − U_old[:, k]‖`` over all views.

    Parameters
    ----------
    U_old, U : ndarray of shape (D, c), float64

    Returns
    -------
    delta : ndarray of shape (c,), float64

    Notes
    -----
    O(D c) time. In every view-masked metric the move is at most ``delta[k]``, so it bounds
    the change of any sample's distance to centre ``k`` (triangle inequality).
    """
    c = U.shape[1]
    acc = np.zeros(c)
    for j in range(U.shape[0]):
        for k in range(c):
            t = U[j, k] - U_old[j, k]
            acc[k] += t * t
    return np.sqrt(acc)


@njit(cache=True)
def stream_center_sqnorms(U, view_ptr):
    """Squared norms of the centres per view: ``usq[v, k] = ‖U[view_ptr[v]:view_ptr[v+1], k]‖²``.

    Parameters
    ----------
    U : ndarray of shape (D, c), float64
    view_ptr : ndarray of shape (m + 1,), int64

    Returns
    -------
    usq : ndarray of shape (m, c), float64

    Notes
    -----
    O(D c) time.
    """
    m = view_ptr.shape[0] - 1
    c = U.shape[1]
    usq = np.zeros((m, c))
    for v in range(m):
        for j in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                usq[v, k] += U[j, k] * U[j, k]
    return usq


@njit(cache=True)
def stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W, labels):
    """Assign every row of a chunk to its nearest centre: :func:`stream_cross` (BLAS) then
    :func:`stream_assign` (fused distances + argmin).

    Parameters
    ----------
    xbuf, xoff, poff, gidx : compacted dense views (see the module docstring)
    sdata, sind, sptr : CSR sparse views
    view_ptr : ndarray of shape (m + 1,), int64
    U : ndarray of shape (D, c), float64
    W : ndarray of shape (s, m), float64
    labels : ndarray of shape (s,), int64
        Output.

    Returns
    -------
    best : ndarray of shape (s,), float64
        ``D[i, labels[i]] = Σ_v W[i, v] (‖u_{v,l_i}‖² − 2 x_{v,i}·u_{v,l_i})``.
    second : ndarray of shape (s,), float64
        The second smallest ``D[i, k]`` (``inf`` when ``c == 1``).

    Notes
    -----
    O(Σ s_v d_v c + nnz c + s m c) time, O(s c) memory.
    """
    usq = stream_center_sqnorms(U, view_ptr)
    G = stream_cross(xbuf, xoff, poff, view_ptr, U)
    s = W.shape[0]
    best = np.empty(s)
    second = np.empty(s)
    stream_assign(G, gidx, sdata, sind, sptr, U, W, usq, labels, best, second)
    return best, second


@njit(cache=True)
def _dense_tasks(view_ptr, n_dense):
    n_task = 0
    for v in range(n_dense):
        d_v = view_ptr[v + 1] - view_ptr[v]
        n_task += (d_v + _FEATURE_BLOCK - 1) // _FEATURE_BLOCK
    tv = np.empty(n_task, np.int64)
    tj = np.empty(n_task, np.int64)
    t = 0
    for v in range(n_dense):
        d_v = view_ptr[v + 1] - view_ptr[v]
        for j0 in range(0, d_v, _FEATURE_BLOCK):
            tv[t] = v
            tj[t] = j0
            t += 1
    return tv, tj


@njit(cache=True)
def _scatter_task(t, tv, tj, xbuf, xoff, prow, poff, view_ptr, old, new, R, sign):
    """One block of features of one dense view: rows with ``old != new`` (all rows when
    ``old`` is empty) move from ``old`` to ``new`` (``sign`` scales the added rows)."""
    v = tv[t]
    a = view_ptr[v]
    d_v = view_ptr[v + 1] - a
    j0 = tj[t]
    j1 = min(j0 + _FEATURE_BLOCK, d_v)
    has_old = old.shape[0] > 0
    for r in range(poff[v + 1] - poff[v]):
        i = prow[poff[v] + r]
        kn = new[i]
        row = xoff[v] + r * d_v
        if has_old:
            ko = old[i]
            if ko == kn:
                continue
            for j in range(j0, j1):
                x = xbuf[row + j]
                R[ko, a + j] -= x
                R[kn, a + j] += x
        else:
            for j in range(j0, j1):
                R[kn, a + j] += sign * xbuf[row + j]


@njit(parallel=True, cache=True)
def _scatter_dense_tasks(xbuf, xoff, prow, poff, view_ptr, old, new, R, sign, work):
    n_dense = xoff.shape[0] - 1
    tv, tj = _dense_tasks(view_ptr, n_dense)
    if work < _PAR_MIN:
        for t in range(tv.shape[0]):
            _scatter_task(t, tv, tj, xbuf, xoff, prow, poff, view_ptr, old, new, R, sign)
        return
    for t in prange(tv.shape[0]):
        _scatter_task(t, tv, tj, xbuf, xoff, prow, poff, view_ptr, old, new, R, sign)


@njit(cache=True)
def stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, labels, R, sign):
    """One-hot scatter-add of the compacted dense views into ``R``: ``R_v += sign · X_vᵀ V``.

    Parameters
    ----------
    xbuf, xoff, prow, poff : compacted dense views (see the module docstring)
    view_ptr : ndarray of shape (m + 1,), int64
    labels : ndarray of shape (s,), int64
        Cluster of each chunk row.
    R : ndarray of shape (c, D), float64
        Updated in place: ``R[labels[prow[poff[v] + r]], view_ptr[v] + j] += sign * X_v[r, j]``.
    sign : float
        ``+1.0`` adds the chunk, ``-1.0`` removes it.

    Notes
    -----
    O(Σ s_v d_v) time (not O(s d c): ``V`` is one-hot); parallel over blocks of features, so
    no two threads write the same entry and the result does not depend on the thread count.
    """
    if xbuf.shape[0] == 0:
        return
    _scatter_dense_tasks(xbuf, xoff, prow, poff, view_ptr, np.empty(0, np.int64), labels, R,
                         sign, xbuf.shape[0])

@njit(cache=True)
def _group_by_label(labels, c, skip_equal_to):
    """Counting sort of the rows by label; rows with ``labels == skip_equal_to`` (elementwise,
    when given) are left out. Returns (order, starts)."""
    s = labels.shape[0]
    starts = np.zeros(c + 1, np.int64)
    for i in range(s):
        if skip_equal_to.shape[0] == 0 or labels[i] != skip_equal_to[i]:
            starts[labels[i] + 1] += 1
    for k in range(c):
        starts[k + 1] += starts[k]
    fill = starts[:c].copy()
    order = np.empty(starts[c], np.int64)
    for i in range(s):
        if skip_equal_to.shape[0] == 0 or labels[i] != skip_equal_to[i]:
            order[fill[labels[i]]] = i
            fill[labels[i]] += 1
    return order, starts


@njit(cache=True)
def _csr_cluster(k, order, starts, sdata, sind, sptr, R, sign):
    for q in range(starts[k], starts[k + 1]):
        i = order[q]
        for p in range(sptr[i], sptr[i + 1]):
            R[k, sind[p]] += sign * sdata[p]


@njit(parallel=True, cache=True)
def _csr_by_cluster(order, starts, sdata, sind, sptr, R, sign):
    c = R.shape[0]
    if sdata.shape[0] < _PAR_MIN:
        for k in range(c):
            _csr_cluster(k, order, starts, sdata, sind, sptr, R, sign)
        return
    for k in prange(c):
        _csr_cluster(k, order, starts, sdata, sind, sptr, R, sign)


@njit(cache=True)
def stream_scatter_csr(sdata, sind, sptr, labels, R, sign):
    """One-hot scatter-add of CSR rows into ``R``: ``R[labels[i], sind[p]] += sign * sdata[p]``.

    Parameters
    ----------
    sdata, sind, sptr : CSR arrays (``s`` rows, column indices = rows of ``R``)
    labels : ndarray of shape (s,), int64
    R : ndarray of shape (c, D), float64
        Updated in place.
    sign : float
        ``+1.0`` adds, ``-1.0`` removes.

    Notes
    -----
    O(nnz + s + c) time; rows are grouped by cluster (counting sort) and the clusters are
    processed in parallel, each by one thread in row order (deterministic whatever the
    thread count).
    """
    if sdata.shape[0] == 0:
        return
    order, starts = _group_by_label(labels, R.shape[0], np.empty(0, np.int64))
    _csr_by_cluster(order, starts, sdata, sind, sptr, R, sign)

@njit(cache=True)
def stream_scatter_counts(labels, W, T, sign):
    """Per-cluster counts of present rows: ``T[v, labels[i]] += sign * W[i, v]``.

    Parameters
    ----------
    labels : ndarray of shape (s,), int64
    W : ndarray of shape (s, m), float64
    T : ndarray of shape (m, c), float64
        Updated in place (the diagonal of ``T_v = Σ Vᵀ W_v V``).
    sign : float

    Notes
    -----
    O(s m) time.
    """
    s, m = W.shape
    for i in range(s):
        k = labels[i]
        for v in range(m):
            T[v, k] += sign * W[i, v]


@njit(cache=True)
def stream_move_dense(xbuf, xoff, prow, poff, view_ptr, old, new, R):
    """Replace a chunk's previous contribution to ``R`` by its new one (dense views).

    For every row whose label changed, ``R[old] -= x`` and ``R[new] += x``; rows whose
    label did not change cost O(1). This is the removal of the chunk's previous contribution
    (later passes) and the incremental ``X_tᵀ V_t`` of the inner loop.

    Parameters
    ----------
    xbuf, xoff, prow, poff : compacted dense views
    view_ptr : ndarray of shape (m + 1,), int64
    old, new : ndarray of shape (s,), int64
        Previous and new labels of the chunk rows.
    R : ndarray of shape (c, D), float64
        Updated in place.

    Notes
    -----
    O(Σ s_v + n_changed d) time; parallel over blocks of features (deterministic).
    """
    if xbuf.shape[0] == 0:
        return
    n_changed = 0
    for i in range(old.shape[0]):
        if old[i] != new[i]:
            n_changed += 1
    if n_changed == 0:
        return
    n_dense = xoff.shape[0] - 1
    work = n_changed * (view_ptr[n_dense] - view_ptr[0]) + poff[n_dense]
    _scatter_dense_tasks(xbuf, xoff, prow, poff, view_ptr, old, new, R, 1.0, work)

@njit(cache=True)
def stream_move_csr(sdata, sind, sptr, old, new, R):
    """Replace a chunk's previous contribution to ``R`` by its new one (CSR rows): for each
    row with ``old[i] != new[i]``, ``R[old[i]] -= x_i`` and ``R[new[i]] += x_i``.

    Parameters
    ----------
    sdata, sind, sptr : CSR arrays
    old, new : ndarray of shape (s,), int64
    R : ndarray of shape (c, D), float64
        Updated in place.

    Notes
    -----
    O(s + c + nnz of the changed rows); parallel over clusters (each cluster's column is
    written by one thread, in row order: deterministic).
    """
    if sdata.shape[0] == 0:
        return
    c = R.shape[0]
    order_out, starts_out = _group_by_label(old, c, new)
    if order_out.shape[0] == 0:
        return
    order_in, starts_in = _group_by_label(new, c, old)
    _csr_by_cluster(order_out, starts_out, sdata, sind, sptr, R, -1.0)
    _csr_by_cluster(order_in, starts_in, sdata, sind, sptr, R, 1.0)

@njit(cache=True)
def stream_move_counts(old, new, W, T):
    """Move the counts of the rows whose label changed: ``T[:, old] -= W[i]``,
    ``T[:, new] += W[i]``.

    Parameters
    ----------
    old, new : ndarray of shape (s,), int64
    W : ndarray of shape (s, m), float64
    T : ndarray of shape (m, c), float64
        Updated in place.

    Returns
    -------
    n_changed : int
        Number of rows with ``old[i] != new[i]``.

    Notes
    -----
    O(s + n_changed m) time.
    """
    s, m = W.shape
    n_changed = 0
    for i in range(s):
        if old[i] != new[i]:
            n_changed += 1
            for v in range(m):
                T[v, old[i]] -= W[i, v]
                T[v, new[i]] += W[i, v]
    return n_changed


@njit(cache=True)
def _update_range(lo, hi, R, T, view_ptr, alpha, fill, U):
    m = view_ptr.shape[0] - 1
    c = R.shape[0]
    has_fill = fill.shape[0] > 0
    for v in range(m):
        for j in range(max(lo, view_ptr[v]), min(hi, view_ptr[v + 1])):
            for k in range(c):
                t = T[v, k]
                if t > 0.0:
                    U[j, k] = R[k, j] / (t + alpha)
                elif has_fill:
                    U[j, k] = fill[j]


@njit(parallel=True, cache=True)
def stream_update_centers(R, T, view_ptr, alpha, fill, U):
    """Centre update ``U_v = R_v (T_v + αI)⁻¹`` (``T_v`` diagonal: a column scaling).

    Clusters with zero count in view ``v`` get ``fill`` (the chunk mean, on the first chunk)
    when ``fill`` is non-empty, else keep their previous centre.

    Parameters
    ----------
    R : ndarray of shape (c, D), float64
    T : ndarray of shape (m, c), float64
    view_ptr : ndarray of shape (m + 1,), int64
    alpha : float
        Ridge parameter α >= 0.
    fill : ndarray of shape (D,) or (0,), float64
    U : ndarray of shape (D, c), float64
        Updated in place.

    Notes
    -----
    O(D c) time; parallel over blocks of features when ``D c`` is large.
    """
    D = R.shape[1]
    if D * R.shape[0] < _PAR_MIN:
        _update_range(0, D, R, T, view_ptr, alpha, fill, U)
        return
    nb = min(D, _N_BLOCKS)
    for b in prange(nb):
        _update_range(b * D // nb, (b + 1) * D // nb, R, T, view_ptr, alpha, fill, U)

@njit(cache=True)
def stream_loss(U, R, T, view_ptr, alpha):
    """The streamed OPIMC loss ``Σ_v (−2 tr(U_vᵀ R_v) + tr(U_vᵀ U_v T_v) + α ‖U_v‖²)``.

    Equals ``Σ_v Σ_i w_{v,i} (‖x_{v,i} − u_{v,l_i}‖² − ‖x_{v,i}‖²) + α Σ_v ‖U_v‖²`` over the
    samples whose contributions ``R``, ``T`` hold (the paper's loss without the constant).

    Parameters
    ----------
    U : ndarray of shape (D, c), float64
    R : ndarray of shape (c, D), float64
    T : ndarray of shape (m, c), float64
    view_ptr : ndarray of shape (m + 1,), int64
    alpha : float

    Returns
    -------
    loss : float

    Notes
    -----
    O(D c) time.
    """
    m = view_ptr.shape[0] - 1
    c = U.shape[1]
    loss = 0.0
    for v in range(m):
        for j in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                u = U[j, k]
                loss += u * ((T[v, k] + alpha) * u - 2.0 * R[k, j])
    return loss


@njit(cache=True)
def _set_bounds(i, best, second, xsq, W, usq_max, gamma, ub, lb):
    """Hamerly bounds of row ``i`` from its two smallest D values: ``ub`` ≥ distance to its
    own centre, ``lb`` ≤ distance to any other, widened by the rounding error of D."""
    e = xsq[i]
    for v in range(W.shape[1]):
        e += W[i, v] * usq_max[v]
    margin = np.sqrt(gamma * e)
    ub[i] = np.sqrt(max(best[i] + xsq[i], 0.0)) + margin
    if np.isinf(second[i]):
        lb[i] = np.inf
    else:
        lb[i] = np.sqrt(max(second[i] + xsq[i], 0.0)) - margin


@njit(cache=True)
def _usq_max(U, view_ptr):
    usq = stream_center_sqnorms(U, view_ptr)
    out = np.zeros(usq.shape[0])
    for v in range(usq.shape[0]):
        for k in range(usq.shape[1]):
            out[v] = max(out[v], usq[v, k])
    return usq, out


@njit(cache=True)
def stream_chunk_iterate(xbuf, xoff, prow, poff, gidx, sdata, sind, sptr, W, view_ptr,
                         R, T, U, labels, mode, fill, alpha, max_iter, tol):
    """One chunk of OPIMC (ALGORITHMS.md §5): its starting labels, the inner loop, and its
    contribution to the global statistics.

    Start (``mode``):

    - 0: ``labels`` are the starting labels (first chunk); the chunk is added to ``R``, ``T``
      (:func:`stream_scatter_dense`, :func:`stream_scatter_csr`, :func:`stream_scatter_counts`);
    - 1: the starting labels come from the current centres (:func:`stream_chunk_assign`); the
      chunk is added to ``R``, ``T``;
    - 2 (later passes): ``labels`` hold the chunk's labels of the previous pass, whose
      contribution ``R``, ``T`` still hold; the starting labels come from the current centres
      and the previous contribution is replaced by the new one (:func:`stream_move_dense`,
      :func:`stream_move_csr`, :func:`stream_move_counts`).

    Then repeats: centres from ``R``, ``T`` (:func:`stream_update_centers`), labels from the
    centres, statistics moved to the new labels, loss (:func:`stream_loss`); until no label
    changes (a fixed point), the loss changes by less than ``tol`` relative, or ``max_iter``
    iterations. On exit ``R``, ``T`` hold the chunk under the final ``labels``.

    The re-assignment is pruned exactly (Hamerly's bounds): each row keeps an upper bound on
    its distance to its own centre and a lower bound on the distance to any other, both
    widened by the rounding error of the distance formula; after the centres move by
    ``delta`` (:func:`stream_center_shift`) the bounds move by at most ``delta``, and only
    rows whose bounds overlap are re-assigned (:func:`stream_assign_rows`, or the BLAS path
    :func:`stream_chunk_assign` when more than a quarter of the rows are). Rows that are
    skipped provably keep their label, so the result is that of re-assigning every row.

    Parameters
    ----------
    xbuf, xoff, prow, poff, gidx : compacted dense views
    sdata, sind, sptr : CSR sparse views
    W : ndarray of shape (s, m), float64
    view_ptr : ndarray of shape (m + 1,), int64
    R : ndarray of shape (c, D), float64   (in place)
    T : ndarray of shape (m, c), float64   (in place)
    U : ndarray of shape (D, c), float64   (in place)
    labels : ndarray of shape (s,), int64  (in place)
    mode : int
        0, 1 or 2 (above).
    fill : ndarray of shape (D,) or (0,), float64
        Centre for empty clusters (chunk mean; first chunk only) or empty (keep previous).
    alpha : float
    max_iter : int
    tol : float

    Returns
    -------
    loss : float
        :func:`stream_loss` after the last iteration.
    n_iter : int
    converged : bool

    Notes
    -----
    Per iteration O(Σ s_v d_v c + nnz c) at worst (one GEMM per dense view), O(s + D c +
    n_active (Σ d_v) c) when few rows are near a boundary, plus O(n_changed d) for the
    statistics; memory O(s c + D c) beyond the chunk.
    """
    s = labels.shape[0]
    c = U.shape[1]
    m = W.shape[1]
    new = labels.copy()
    ub = np.full(s, np.inf)                 # no bounds yet: every row is active
    lb = np.full(s, -np.inf)
    xsq = stream_row_sqnorms(xbuf, xoff, prow, poff, view_ptr, sdata, sptr, s)
    dmax = 1
    for v in range(m):
        dmax = max(dmax, view_ptr[v + 1] - view_ptr[v])
    gamma = 4.0 * (dmax + 8) * np.finfo(xbuf.dtype).eps
    if mode == 1 or mode == 2:
        best, second = stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr,
                                           view_ptr, U, W, new)
        usq, usq_max = _usq_max(U, view_ptr)
        for i in range(s):
            _set_bounds(i, best, second, xsq, W, usq_max, gamma, ub, lb)
    else:
        best = np.empty(s)
        second = np.empty(s)
    if mode == 2:
        if stream_move_counts(labels, new, W, T) > 0:
            stream_move_dense(xbuf, xoff, prow, poff, view_ptr, labels, new, R)
            stream_move_csr(sdata, sind, sptr, labels, new, R)
            labels[:] = new
    else:
        labels[:] = new
        stream_scatter_dense(xbuf, xoff, prow, poff, view_ptr, labels, R, 1.0)
        stream_scatter_csr(sdata, sind, sptr, labels, R, 1.0)
        stream_scatter_counts(labels, W, T, 1.0)
    loss_old = stream_loss(U, R, T, view_ptr, alpha)
    loss = loss_old
    n_iter = 0
    converged = False
    U_old = np.empty_like(U)
    active = np.empty(s, np.int64)
    for it in range(max_iter):
        U_old[:] = U
        stream_update_centers(R, T, view_ptr, alpha, fill, U)
        delta = stream_center_shift(U_old, U)
        k1 = 0
        d1 = 0.0
        d2 = 0.0
        for k in range(c):
            if delta[k] > d1:
                d2 = d1
                d1 = delta[k]
                k1 = k
            elif delta[k] > d2:
                d2 = delta[k]
        n_act = 0
        for i in range(s):
            ub[i] += delta[labels[i]]
            lb[i] -= d2 if labels[i] == k1 else d1
            if ub[i] > lb[i]:
                active[n_act] = i
                n_act += 1
        new[:] = labels
        if n_act > 0:
            usq, usq_max = _usq_max(U, view_ptr)
            if 4 * n_act > s:
                best, second = stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr,
                                                   view_ptr, U, W, new)
                for i in range(s):
                    _set_bounds(i, best, second, xsq, W, usq_max, gamma, ub, lb)
            else:
                rows = active[:n_act]
                stream_assign_rows(rows, xbuf, xoff, poff, gidx, view_ptr, sdata, sind, sptr,
                                   U, W, usq, new, best, second)
                for r in range(n_act):
                    _set_bounds(rows[r], best, second, xsq, W, usq_max, gamma, ub, lb)
        n_changed = stream_move_counts(labels, new, W, T)
        if n_changed > 0:
            stream_move_dense(xbuf, xoff, prow, poff, view_ptr, labels, new, R)
            stream_move_csr(sdata, sind, sptr, labels, new, R)
            labels[:] = new
        loss = stream_loss(U, R, T, view_ptr, alpha)
        n_iter = it + 1
        if n_changed == 0 or abs(loss - loss_old) < tol * abs(loss_old):
            converged = True
            break
        loss_old = loss
    return loss, n_iter, converged
