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

Global statistics are float64 ``R`` ``(D, c)`` (per-cluster sums of present rows, ``R_v = Σ
X_vᵀ V`` stacked) and ``T`` ``(m, c)`` (per-cluster counts of present rows, the diagonal of
``T_v``); centres ``U`` ``(D, c)`` float64 (``U_v`` stacked). Chunk values are float32 or float64.

Because ``V`` is one-hot, ``X_tᵀ V_t`` is a scatter-add of rows into cluster columns (O(s d))
and ``Vᵀ W V`` a count; the only O(s d c) work is the cross product ``X_t U`` (BLAS for the
dense views, a fused row kernel for CSR), followed by a fused distance + argmin kernel.
"""
from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

__all__ = [
    "stream_gather_rows",
    "stream_cross",
    "stream_assign",
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

_FEATURE_BLOCK = 32  # features per parallel task in the dense scatter / move kernels
# Below this many elementary operations a kernel runs serially: a parallel launch costs more.
_PAR_MIN = 1 << 17


@njit(cache=True)
def _gather_range(lo, hi, X, rows, normalize, out, status):
    d = X.shape[1]
    for r in range(lo, hi):
        i = rows[r]
        ssq = 0.0
        n_nan = 0
        n_inf = 0
        for j in range(d):
            x = np.float64(X[i, j])
            if np.isnan(x):
                n_nan += 1
            elif np.isinf(x):
                n_inf += 1
            else:
                ssq += x * x
        if n_nan == d:
            status[r] = 1
        elif n_nan > 0 or n_inf > 0:
            status[r] = 2
        else:
            status[r] = 0
        scale = 1.0
        if normalize and ssq > 0.0:
            scale = 1.0 / np.sqrt(ssq)
        for j in range(d):
            out[r, j] = X[i, j] * scale


@njit(parallel=True, cache=True)
def stream_gather_rows(X, rows, normalize, out):
    """Copy selected rows of a dense block into a compact block, optionally scaled to unit ℓ2
    norm, and classify them by their non-finite values.

    Parameters
    ----------
    X : ndarray of shape (s, d), float32 or float64, C-contiguous
        A chunk of one view.
    rows : ndarray of shape (s_v,), int64
        Rows of ``X`` to keep (the rows present in the view), in order.
    normalize : bool
        Scale each kept row to unit ℓ2 norm (zero rows stay zero).
    out : ndarray of shape (s_v, d), float32 or float64
        Written in place: ``out[r] = X[rows[r]] / ‖X[rows[r]]‖``.

    Returns
    -------
    status : ndarray of shape (s_v,), int8
        0: the row is finite; 1: every value is NaN (a missing row: drop it); 2: anything
        else non-finite (some NaN, or an infinity): invalid input.

    Notes
    -----
    O(s_v d) time, one read of each kept row; norms accumulated in float64. Parallel over
    blocks of rows when the block is large enough to pay for the thread launch.
    """
    n_rows = rows.shape[0]
    status = np.empty(n_rows, np.int8)
    nt = get_num_threads()
    if nt == 1 or n_rows * X.shape[1] < _PAR_MIN:
        _gather_range(0, n_rows, X, rows, normalize, out, status)
        return status
    nb = min(n_rows, 4 * nt)
    for b in prange(nb):
        _gather_range(b * n_rows // nb, (b + 1) * n_rows // nb, X, rows, normalize, out, status)
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
def _assign_range(lo, hi, G, gidx, sdata, sind, sptr, U, W, usq, labels, mindist):
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
        best = 0
        bval = acc[0]
        for k in range(1, c):
            if acc[k] < bval:
                bval = acc[k]
                best = k
        labels[i] = best
        mindist[i] = bval


@njit(parallel=True, cache=True)
def stream_assign(G, gidx, sdata, sind, sptr, U, W, usq, labels, mindist):
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
    mindist : ndarray of shape (s,), float64
        Output: ``D[i, labels[i]]``.

    Notes
    -----
    O(s (m + n_dense) c + nnz c) time beyond the GEMM; O(c) scratch per thread; never forms
    ``D``. Rows are independent, so the result does not depend on the thread count; small
    chunks run serially (a parallel launch would cost more).
    """
    s = W.shape[0]
    c = usq.shape[1]
    work = s * (W.shape[1] + gidx.shape[1]) * c + sdata.shape[0] * c
    nt = get_num_threads()
    if nt == 1 or work < _PAR_MIN:
        _assign_range(0, s, G, gidx, sdata, sind, sptr, U, W, usq, labels, mindist)
        return
    nb = min(s, 8 * nt)
    for b in prange(nb):
        _assign_range(b * s // nb, (b + 1) * s // nb, G, gidx, sdata, sind, sptr, U, W, usq,
                      labels, mindist)

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
    mindist : ndarray of shape (s,), float64
        ``Σ_v W[i, v] (‖u_{v,l_i}‖² − 2 x_{v,i}·u_{v,l_i})``.

    Notes
    -----
    O(Σ s_v d_v c + nnz c + s m c) time, O(s c) memory.
    """
    usq = stream_center_sqnorms(U, view_ptr)
    G = stream_cross(xbuf, xoff, poff, view_ptr, U)
    mindist = np.empty(W.shape[0])
    stream_assign(G, gidx, sdata, sind, sptr, U, W, usq, labels, mindist)
    return mindist


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
    ``old`` is empty) move from ``old`` to ``new`` (``sign`` scales the added row)."""
    v = tv[t]
    a = view_ptr[v]
    d_v = view_ptr[v + 1] - a
    j0 = tj[t]
    j1 = min(j0 + _FEATURE_BLOCK, d_v)
    base = xoff[v]
    has_old = old.shape[0] > 0
    for r in range(poff[v + 1] - poff[v]):
        i = prow[poff[v] + r]
        kn = new[i]
        row = base + r * d_v
        if has_old:
            ko = old[i]
            if ko == kn:
                continue
            for j in range(j0, j1):
                x = xbuf[row + j]
                R[a + j, ko] -= x
                R[a + j, kn] += x
        else:
            for j in range(j0, j1):
                R[a + j, kn] += sign * xbuf[row + j]


@njit(parallel=True, cache=True)
def _scatter_dense_tasks(xbuf, xoff, prow, poff, view_ptr, old, new, R, sign, work):
    n_dense = xoff.shape[0] - 1
    tv, tj = _dense_tasks(view_ptr, n_dense)
    if get_num_threads() == 1 or work < _PAR_MIN:
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
    R : ndarray of shape (D, c), float64
        Updated in place: ``R[view_ptr[v] + j, labels[prow[poff[v] + r]]] += sign * X_v[r, j]``.
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
            R[sind[p], k] += sign * sdata[p]


@njit(parallel=True, cache=True)
def _csr_by_cluster(order, starts, sdata, sind, sptr, R, sign):
    c = R.shape[1]
    if get_num_threads() == 1 or sdata.shape[0] < _PAR_MIN:
        for k in range(c):
            _csr_cluster(k, order, starts, sdata, sind, sptr, R, sign)
        return
    for k in prange(c):
        _csr_cluster(k, order, starts, sdata, sind, sptr, R, sign)


@njit(cache=True)
def stream_scatter_csr(sdata, sind, sptr, labels, R, sign):
    """One-hot scatter-add of CSR rows into ``R``: ``R[sind[p], labels[i]] += sign * sdata[p]``.

    Parameters
    ----------
    sdata, sind, sptr : CSR arrays (``s`` rows, column indices = rows of ``R``)
    labels : ndarray of shape (s,), int64
    R : ndarray of shape (D, c), float64
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
    order, starts = _group_by_label(labels, R.shape[1], np.empty(0, np.int64))
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

    For every row whose label changed, ``R[:, old] -= x`` and ``R[:, new] += x``; rows whose
    label did not change cost O(1). This is the removal of the chunk's previous contribution
    (later passes) and the incremental ``X_tᵀ V_t`` of the inner loop.

    Parameters
    ----------
    xbuf, xoff, prow, poff : compacted dense views
    view_ptr : ndarray of shape (m + 1,), int64
    old, new : ndarray of shape (s,), int64
        Previous and new labels of the chunk rows.
    R : ndarray of shape (D, c), float64
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
    row with ``old[i] != new[i]``, ``R[:, old[i]] -= x_i`` and ``R[:, new[i]] += x_i``.

    Parameters
    ----------
    sdata, sind, sptr : CSR arrays
    old, new : ndarray of shape (s,), int64
    R : ndarray of shape (D, c), float64
        Updated in place.

    Notes
    -----
    O(s + c + nnz of the changed rows); parallel over clusters (each cluster's column is
    written by one thread, in row order: deterministic).
    """
    if sdata.shape[0] == 0:
        return
    c = R.shape[1]
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
    c = R.shape[1]
    has_fill = fill.shape[0] > 0
    for v in range(m):
        for j in range(max(lo, view_ptr[v]), min(hi, view_ptr[v + 1])):
            for k in range(c):
                t = T[v, k]
                if t > 0.0:
                    U[j, k] = R[j, k] / (t + alpha)
                elif has_fill:
                    U[j, k] = fill[j]


@njit(parallel=True, cache=True)
def stream_update_centers(R, T, view_ptr, alpha, fill, U):
    """Centre update ``U_v = R_v (T_v + αI)⁻¹`` (``T_v`` diagonal: a column scaling).

    Clusters with zero count in view ``v`` get ``fill`` (the chunk mean, on the first chunk)
    when ``fill`` is non-empty, else keep their previous centre.

    Parameters
    ----------
    R : ndarray of shape (D, c), float64
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
    D = R.shape[0]
    nt = get_num_threads()
    if nt == 1 or D * R.shape[1] < _PAR_MIN:
        _update_range(0, D, R, T, view_ptr, alpha, fill, U)
        return
    nb = min(D, 4 * nt)
    for b in prange(nb):
        _update_range(b * D // nb, (b + 1) * D // nb, R, T, view_ptr, alpha, fill, U)

@njit(cache=True)
def stream_loss(U, R, T, view_ptr, alpha):
    """The streamed OPIMC loss ``Σ_v (−2 tr(U_vᵀ R_v) + tr(U_vᵀ U_v T_v) + α ‖U_v‖²)``.

    Equals ``Σ_v Σ_i w_{v,i} (‖x_{v,i} − u_{v,l_i}‖² − ‖x_{v,i}‖²) + α Σ_v ‖U_v‖²`` over the
    samples whose contributions ``R``, ``T`` hold (the paper's loss without the constant).

    Parameters
    ----------
    U, R : ndarray of shape (D, c), float64
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
                loss += u * ((T[v, k] + alpha) * u - 2.0 * R[j, k])
    return loss


@njit(cache=True)
def stream_chunk_iterate(xbuf, xoff, prow, poff, gidx, sdata, sind, sptr, W, view_ptr,
                         R, T, U, labels, fill, alpha, max_iter, tol):
    """The inner loop of OPIMC on one chunk (ALGORITHMS.md §5).

    On entry ``R``, ``T`` hold the chunk's contribution under ``labels``. Repeats: centres
    from ``R``, ``T`` (:func:`stream_update_centers`), labels from the centres
    (:func:`stream_chunk_assign`), statistics moved to the new labels
    (:func:`stream_move_dense`, :func:`stream_move_csr`, :func:`stream_move_counts`), loss
    (:func:`stream_loss`); until no label changes (a fixed point), the loss changes by less
    than ``tol`` relative, or ``max_iter`` iterations. On exit ``R``, ``T`` hold the chunk
    under the final ``labels``.

    Parameters
    ----------
    xbuf, xoff, prow, poff, gidx : compacted dense views
    sdata, sind, sptr : CSR sparse views
    W : ndarray of shape (s, m), float64
    view_ptr : ndarray of shape (m + 1,), int64
    R : ndarray of shape (D, c), float64   (in place)
    T : ndarray of shape (m, c), float64   (in place)
    U : ndarray of shape (D, c), float64   (in place)
    labels : ndarray of shape (s,), int64  (in place)
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
    Per iteration O(Σ s_v d_v c + nnz c) (one GEMM per dense view) plus O(n_changed d) for
    the statistics; memory O(s c + D c) beyond the chunk.
    """
    new = np.empty_like(labels)
    loss_old = stream_loss(U, R, T, view_ptr, alpha)
    loss = loss_old
    n_iter = 0
    converged = False
    for it in range(max_iter):
        stream_update_centers(R, T, view_ptr, alpha, fill, U)
        stream_chunk_assign(xbuf, xoff, poff, gidx, sdata, sind, sptr, view_ptr, U, W, new)
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
