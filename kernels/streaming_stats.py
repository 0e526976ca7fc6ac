"""Global statistics of OPIMC (docs/algorithms.md §5): scatter-adds of a chunk into the
per-cluster sums and counts, the centre update and the streamed loss.

``R`` ``(c, D)`` float64 holds the per-cluster sums of the present rows (the ``R_v = Σ X_vᵀ V``
of every view, transposed and stacked side by side, so adding a row to a cluster is a
contiguous write), ``T`` ``(m, c)`` float64 the per-cluster counts of present rows (the diagonal
of ``T_v``), ``U`` ``(D, c)`` float64 the stacked centres. ``dense`` is a
:class:`fastmv.kernels.streaming.DenseRows` and ``sparse`` a
:class:`fastmv.kernels.streaming.SparseRows` (see that module for the chunk layout).

Because ``V`` is one-hot, ``X_tᵀ V_t`` is a scatter-add of rows into cluster rows of ``R``
(O(s d), not O(s d c)) and ``Vᵀ W V`` a count. Parallel kernels split their work into a fixed
set of blocks (never by thread count) in which each entry of ``R`` is written by one task in
row order, so results do not depend on the number of threads; below ``SERIAL_BELOW`` they run
serially (``kernels._partition``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._partition import SERIAL_BELOW

__all__ = [
    "stream_scatter_dense",
    "stream_move_dense",
    "stream_scatter_csr",
    "stream_move_csr",
    "stream_scatter_counts",
    "stream_move_counts",
    "stream_update_centers",
    "stream_loss",
]

_FEATURE_BLOCK = 512  # features per parallel task in the dense scatter / move kernels


@njit(cache=True)
def _dense_tasks(view_ptr, n_dense):
    """(view, first feature) of every block of ``_FEATURE_BLOCK`` features of the dense views."""
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
def _scatter_task(v, j0, dense, view_ptr, old, new, R, sign):
    """One block of features of one dense view: rows with ``old != new`` (all rows when
    ``old`` is empty) move from ``old`` to ``new`` (``sign`` scales the added rows)."""
    a = view_ptr[v]
    d_v = view_ptr[v + 1] - a
    j1 = min(j0 + _FEATURE_BLOCK, d_v)
    has_old = old.shape[0] > 0
    r0 = dense.row_start[v]
    for r in range(dense.row_start[v + 1] - r0):
        i = dense.rows[r0 + r]
        kn = new[i]
        row = dense.value_start[v] + r * d_v
        if has_old:
            ko = old[i]
            if ko == kn:
                continue
            for j in range(j0, j1):
                x = dense.values[row + j]
                R[ko, a + j] -= x
                R[kn, a + j] += x
        else:
            for j in range(j0, j1):
                R[kn, a + j] += sign * dense.values[row + j]


@njit(parallel=True, cache=True)
def _scatter_dense_tasks(dense, view_ptr, old, new, R, sign, work):
    """Run :func:`_scatter_task` over every feature block; serially when ``work`` is small.
    ``stream_scatter_dense`` and ``stream_move_dense`` share this one parallel loop."""
    n_dense = dense.row_start.shape[0] - 1
    tv, tj = _dense_tasks(view_ptr, n_dense)
    if work < SERIAL_BELOW:
        for t in range(tv.shape[0]):
            _scatter_task(tv[t], tj[t], dense, view_ptr, old, new, R, sign)
        return
    for t in prange(tv.shape[0]):
        _scatter_task(tv[t], tj[t], dense, view_ptr, old, new, R, sign)


@njit(cache=True)
def stream_scatter_dense(dense, view_ptr, labels, R, sign):
    """One-hot scatter-add of the compacted dense views into ``R``: ``R_v += sign · X_vᵀ V``.

    Parameters
    ----------
    dense : DenseRows
        Compacted dense views of the chunk.
    view_ptr : ndarray of shape (m + 1,), int64
        Rows of each view in the stacked feature space (dense views first).
    labels : ndarray of shape (s,), int64
        Cluster of each chunk row.
    R : ndarray of shape (c, D), float64
        Updated in place: ``R[labels[i], view_ptr[v] + j] += sign * x_{v,i,j}`` for every row
        ``i`` present in dense view ``v``.
    sign : float
        ``+1.0`` adds the chunk, ``-1.0`` removes it.

    Notes
    -----
    O(Σ s_v d_v) time (not O(s d c): ``V`` is one-hot); parallel over blocks of features, so
    no two threads write the same entry and the result does not depend on the thread count.
    """
    if dense.values.shape[0] == 0:
        return
    _scatter_dense_tasks(dense, view_ptr, np.empty(0, np.int64), labels, R, sign,
                         dense.values.shape[0])


@njit(cache=True)
def stream_move_dense(dense, view_ptr, old, new, R):
    """Move the dense rows whose label changed: ``R[old] -= x`` and ``R[new] += x``.

    This removes a chunk's previous contribution (later passes) and is the incremental
    ``X_tᵀ V_t`` of the inner loop; rows whose label did not change cost O(1).

    Parameters
    ----------
    dense : DenseRows
        Compacted dense views of the chunk.
    view_ptr : ndarray of shape (m + 1,), int64
    old, new : ndarray of shape (s,), int64
        Previous and new labels of the chunk rows.
    R : ndarray of shape (c, D), float64
        Updated in place.

    Notes
    -----
    O(Σ s_v + n_changed d) time; parallel over blocks of features (deterministic).
    """
    if dense.values.shape[0] == 0:
        return
    n_changed = 0
    for i in range(old.shape[0]):
        if old[i] != new[i]:
            n_changed += 1
    if n_changed == 0:
        return
    n_dense = dense.row_start.shape[0] - 1
    work = n_changed * (view_ptr[n_dense] - view_ptr[0]) + dense.row_start[n_dense]
    _scatter_dense_tasks(dense, view_ptr, old, new, R, 1.0, work)


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
def _csr_cluster(k, order, starts, sparse, R, sign):
    for q in range(starts[k], starts[k + 1]):
        i = order[q]
        for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
            R[k, sparse.indices[p]] += sign * sparse.data[p]


@njit(parallel=True, cache=True)
def _csr_by_cluster(order, starts, sparse, R, sign):
    """Add ``sign`` × the rows grouped by cluster; one task per cluster (deterministic)."""
    c = R.shape[0]
    if sparse.data.shape[0] < SERIAL_BELOW:
        for k in range(c):
            _csr_cluster(k, order, starts, sparse, R, sign)
        return
    for k in prange(c):
        _csr_cluster(k, order, starts, sparse, R, sign)


@njit(cache=True)
def stream_scatter_csr(sparse, labels, R, sign):
    """One-hot scatter-add of the CSR rows into ``R``:
    ``R[labels[i], sparse.indices[p]] += sign * sparse.data[p]``.

    Parameters
    ----------
    sparse : SparseRows
        CSR rows of the sparse views of the chunk (column indices are rows of ``U``).
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
    if sparse.data.shape[0] == 0:
        return
    order, starts = _group_by_label(labels, R.shape[0], np.empty(0, np.int64))
    _csr_by_cluster(order, starts, sparse, R, sign)


@njit(cache=True)
def stream_move_csr(sparse, old, new, R):
    """Move the CSR rows whose label changed: ``R[old[i]] -= x_i``, ``R[new[i]] += x_i``.

    Parameters
    ----------
    sparse : SparseRows
    old, new : ndarray of shape (s,), int64
    R : ndarray of shape (c, D), float64
        Updated in place.

    Notes
    -----
    O(s + c + nnz of the changed rows); parallel over clusters (each cluster's row of ``R``
    is written by one thread, in row order: deterministic).
    """
    if sparse.data.shape[0] == 0:
        return
    c = R.shape[0]
    order_out, starts_out = _group_by_label(old, c, new)
    if order_out.shape[0] == 0:
        return
    order_in, starts_in = _group_by_label(new, c, old)
    _csr_by_cluster(order_out, starts_out, sparse, R, -1.0)
    _csr_by_cluster(order_in, starts_in, sparse, R, 1.0)


@njit(cache=True)
def stream_scatter_counts(labels, W, T, sign):
    """Per-cluster counts of present rows: ``T[v, labels[i]] += sign * W[i, v]``.

    Parameters
    ----------
    labels : ndarray of shape (s,), int64
    W : ndarray of shape (s, m), float64
        Presence weights (1.0 present, 0.0 missing).
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
    O(D c) time, serial: it is dwarfed by the chunk's O(s D c) assignment, and a parallel
    variant would cost another parallel compile for nothing.
    """
    m = view_ptr.shape[0] - 1
    c = R.shape[0]
    has_fill = fill.shape[0] > 0
    for v in range(m):
        for j in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                t = T[v, k]
                if t > 0.0:
                    U[j, k] = R[k, j] / (t + alpha)
                elif has_fill:
                    U[j, k] = fill[j]


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
