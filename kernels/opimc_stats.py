"""Global statistics of OPIMC (docs/algorithms.md §5): scatter-adds of a chunk into the
per-cluster sums and counts, the centre update, the centres' norms and shifts, and the
streamed loss.

``R`` ``(c, D)`` float64 holds the per-cluster sums of the present rows (the ``R_v = Σ X_vᵀ V``
of every view, transposed and stacked side by side, so adding a row to a cluster is a
contiguous write), ``T`` ``(m, c)`` float64 the per-cluster counts of present rows (the diagonal
of ``T_v``), ``U`` ``(D, c)`` float64 the stacked centres. ``dense`` is a
:class:`fastmv.kernels.opimc.DenseRows` and ``sparse`` a
:class:`fastmv.kernels.opimc.SparseRows` (see that module for the chunk layout).

Because ``V`` is one-hot, ``X_tᵀ V_t`` is a scatter-add of rows into cluster rows of ``R``
(O(s d), not O(s d c)) and ``Vᵀ W V`` a count. The kernels are serial: O(s d) memory-bound
work that a parallel launch per call (several per chunk) would not speed up on the few cores
OPIMC's chunk thread gets (the next chunk is read on another), and serial compiles in a
fraction of the time; each entry of ``R`` is updated in row order. The private loops that
only other kernels call are compiled without Python or C-callable wrappers
(``no_cpython_wrapper``, ``no_cfunc_wrapper``): less code to compile on a first call.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import in_range, valid_dense_rows, valid_sparse_rows, valid_view_ptr
from ._options import INNER, SERIAL

__all__ = [
    "stream_scatter_dense",
    "stream_move_dense",
    "stream_scatter_csr",
    "stream_move_csr",
    "stream_scatter_counts",
    "stream_move_counts",
    "stream_update_centers",
    "stream_loss",
    "stream_center_shift",
    "stream_center_sqnorms",
]

@njit(**INNER)
def _scatter_dense_rows(dense, view_ptr, old, new, R, sign):
    """Rows with ``old != new`` (all rows when ``old`` is empty) move from ``old`` to ``new``
    (``sign`` scales the added rows); each entry of ``R`` is updated in row order.
    ``stream_scatter_dense`` and ``stream_move_dense`` share this one loop."""
    has_old = old.shape[0] > 0
    for v in range(dense.row_start.shape[0] - 1):
        a = view_ptr[v]
        d_v = view_ptr[v + 1] - a
        r0 = dense.row_start[v]
        for r in range(dense.row_start[v + 1] - r0):
            i = dense.rows[r0 + r]
            kn = new[i]
            row = dense.value_start[v] + r * d_v
            if has_old:
                ko = old[i]
                if ko == kn:
                    continue
                for j in range(d_v):
                    x = dense.values[row + j]
                    R[ko, a + j] -= x
                    R[kn, a + j] += x
            else:
                for j in range(d_v):
                    R[kn, a + j] += sign * dense.values[row + j]


@njit(**SERIAL)
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
    O(Σ s_v d_v) time (not O(s d c): ``V`` is one-hot): reads the chunk once and writes
    ``c × D`` entries, memory-bound; serial (each entry is updated in row order).

    Cost: reads ``8 (Σ s_v d_v + s)`` bytes and read-modify-writes rows of ``R`` (``8 c D``
    bytes, cache-resident while they fit); ``Σ s_v d_v`` flops.
    """
    if (not valid_view_ptr(view_ptr, R.shape[1])
            or not valid_dense_rows(dense, view_ptr, labels.shape[0])
            or not in_range(labels, 0, R.shape[0])):
        raise ValueError("stream_scatter_dense: view_ptr must rise from 0 to D, the dense layout "
                         "match the labels' rows, labels lie in [0, c)")
    return _stream_scatter_dense(dense, view_ptr, labels, R, sign)


@njit(**SERIAL)
def _stream_scatter_dense(dense, view_ptr, labels, R, sign):
    """:func:`stream_scatter_dense` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    if dense.values.shape[0] == 0:
        return
    _scatter_dense_rows(dense, view_ptr, np.empty(0, np.int64), labels, R, sign)
@njit(**SERIAL)
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
    O(Σ s_v + n_changed d) time; serial (each entry is updated in row order).

    Cost: reads ``16 s + 8 n_changed d`` bytes; ``2 n_changed d`` flops.
    """
    if (old.shape[0] != new.shape[0] or not valid_view_ptr(view_ptr, R.shape[1])
            or not valid_dense_rows(dense, view_ptr, old.shape[0])
            or not in_range(old, 0, R.shape[0]) or not in_range(new, 0, R.shape[0])):
        raise ValueError("stream_move_dense: old and new must have one label in [0, c) per row "
                         "of the dense layout; view_ptr must rise from 0 to D")
    return _stream_move_dense(dense, view_ptr, old, new, R)


@njit(**SERIAL)
def _stream_move_dense(dense, view_ptr, old, new, R):
    """:func:`stream_move_dense` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    if dense.values.shape[0] == 0:
        return
    _scatter_dense_rows(dense, view_ptr, old, new, R, 1.0)
@njit(**INNER)
def _csr_rows(sparse, labels, skip_equal_to, R, sign):
    """Add ``sign`` × each CSR row to its cluster's row of ``R`` in row order; rows with
    ``labels == skip_equal_to`` (elementwise, when given) are left out."""
    skip = skip_equal_to.shape[0] > 0
    for i in range(labels.shape[0]):
        k = labels[i]
        if skip and k == skip_equal_to[i]:
            continue
        for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
            R[k, sparse.indices[p]] += sign * sparse.data[p]


@njit(**SERIAL)
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
    O(nnz + s) time; serial (each entry is updated in row order).

    Cost: reads ``12 nnz + 8 s`` bytes and read-modify-writes ``nnz`` entries of ``R``;
    ``nnz`` flops.
    """
    if (not valid_sparse_rows(sparse, labels.shape[0], R.shape[1])
            or not in_range(labels, 0, R.shape[0])):
        raise ValueError("stream_scatter_csr: sparse must be a CSR structure of one row per label "
                         "with columns in [0, D), labels in [0, c)")
    return _stream_scatter_csr(sparse, labels, R, sign)


@njit(**SERIAL)
def _stream_scatter_csr(sparse, labels, R, sign):
    """:func:`stream_scatter_csr` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    if sparse.data.shape[0] == 0:
        return
    _csr_rows(sparse, labels, np.empty(0, np.int64), R, sign)
@njit(**SERIAL)
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
    O(s + nnz of the changed rows); serial: first every removal, then every addition, each
    in row order.

    Cost: reads ``16 s + 12 nnz_changed`` bytes; ``2 nnz_changed`` flops.
    """
    if (old.shape[0] != new.shape[0] or not valid_sparse_rows(sparse, old.shape[0], R.shape[1])
            or not in_range(old, 0, R.shape[0]) or not in_range(new, 0, R.shape[0])):
        raise ValueError("stream_move_csr: old and new must have one label in [0, c) per CSR row, "
                         "columns in [0, D)")
    return _stream_move_csr(sparse, old, new, R)


@njit(**SERIAL)
def _stream_move_csr(sparse, old, new, R):
    """:func:`stream_move_csr` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    if sparse.data.shape[0] == 0:
        return
    _csr_rows(sparse, old, new, R, -1.0)
    _csr_rows(sparse, new, old, R, 1.0)
@njit(**SERIAL)
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

    Cost: reads ``8 s (m + 1)`` bytes; ``s m`` flops.
    """
    if (W.shape[0] != labels.shape[0] or W.shape[1] != T.shape[0]
            or not in_range(labels, 0, T.shape[1])):
        raise ValueError("stream_scatter_counts: W must be (s, m) for s labels in [0, c), T (m, c)")
    return _stream_scatter_counts(labels, W, T, sign)


@njit(**SERIAL, inline="always")
def _stream_scatter_counts(labels, W, T, sign):
    """:func:`stream_scatter_counts` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    s, m = W.shape
    for i in range(s):
        k = labels[i]
        for v in range(m):
            T[v, k] += sign * W[i, v]
@njit(**SERIAL)
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

    Cost: reads ``16 s + 8 n_changed m`` bytes; ``2 n_changed m`` flops.
    """
    if (W.shape[0] != old.shape[0] or new.shape[0] != old.shape[0] or W.shape[1] != T.shape[0]
            or not in_range(old, 0, T.shape[1]) or not in_range(new, 0, T.shape[1])):
        raise ValueError("stream_move_counts: W must be (s, m) for s labels in [0, c), T (m, c)")
    return _stream_move_counts(old, new, W, T)


@njit(**INNER)
def _stream_move_counts(old, new, W, T):
    """:func:`stream_move_counts` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    s, m = W.shape
    n_changed = 0
    for i in range(s):
        if old[i] != new[i]:
            n_changed += 1
            for v in range(m):
                T[v, old[i]] -= W[i, v]
                T[v, new[i]] += W[i, v]
    return n_changed
@njit(**SERIAL)
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

    Cost: reads ``8 (c D + m c + D)`` bytes and writes ``8 D c``; ``~2 D c`` flops.
    """
    if (not valid_view_ptr(view_ptr, U.shape[0]) or R.shape[0] != U.shape[1]
            or R.shape[1] != U.shape[0] or T.shape[0] != view_ptr.shape[0] - 1
            or T.shape[1] != U.shape[1]):
        raise ValueError("stream_update_centers: U must be (D, c), R (c, D), T (m, c) and "
                         "view_ptr rise from 0 to D in m + 1 entries")
    if fill.shape[0] != 0 and fill.shape[0] != U.shape[0]:
        raise ValueError("stream_update_centers: fill must be empty or have D entries")
    return _stream_update_centers(R, T, view_ptr, alpha, fill, U)


@njit(**INNER)
def _stream_update_centers(R, T, view_ptr, alpha, fill, U):
    """:func:`stream_update_centers` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
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
@njit(**SERIAL)
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

    Cost: reads ``8 (2 D c + m c)`` bytes; ``~5 D c`` flops.
    """
    if (not valid_view_ptr(view_ptr, U.shape[0]) or R.shape[0] != U.shape[1]
            or R.shape[1] != U.shape[0] or T.shape[0] != view_ptr.shape[0] - 1
            or T.shape[1] != U.shape[1]):
        raise ValueError("stream_loss: U must be (D, c), R (c, D), T (m, c) and view_ptr rise "
                         "from 0 to D in m + 1 entries")
    return _stream_loss(U, R, T, view_ptr, alpha)


@njit(**INNER)
def _stream_loss(U, R, T, view_ptr, alpha):
    """:func:`stream_loss` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    m = view_ptr.shape[0] - 1
    c = U.shape[1]
    loss = 0.0
    for v in range(m):
        for j in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                u = U[j, k]
                loss += u * ((T[v, k] + alpha) * u - 2.0 * R[k, j])
    return loss


@njit(**SERIAL)
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

    Cost: reads ``16 D c`` bytes; ``3 D c`` flops.
    """
    if U_old.shape[0] != U.shape[0] or U_old.shape[1] != U.shape[1]:
        raise ValueError("stream_center_shift: U_old must have the shape of U")
    delta = np.empty(U.shape[1], np.float64)
    _stream_center_shift(U_old, U, delta)
    return delta


@njit(**SERIAL, inline="always")
def _stream_center_shift(U_old, U, delta):
    """:func:`stream_center_shift` into ``delta`` (shape ``(c,)``) without its boundary checks,
    for the chunk loop, whose arguments the public kernel that runs the loop has checked. It
    writes into an array the caller owns because an inlined helper's returned array is copied
    (reference counted) through several temporaries, code compiled in every caller."""
    c = U.shape[1]
    for k in range(c):
        delta[k] = 0.0
    for j in range(U.shape[0]):
        for k in range(c):
            t = U[j, k] - U_old[j, k]
            delta[k] += t * t
    for k in range(c):
        delta[k] = np.sqrt(delta[k])


@njit(**SERIAL)
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

    Cost: reads ``8 D c`` bytes; ``2 D c`` flops.
    """
    if not valid_view_ptr(view_ptr, U.shape[0]):
        raise ValueError("stream_center_sqnorms: view_ptr must rise from 0 to the rows of U")
    return _stream_center_sqnorms(U, view_ptr)


@njit(**SERIAL)
def _stream_center_sqnorms(U, view_ptr):
    """:func:`stream_center_sqnorms` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    m = view_ptr.shape[0] - 1
    c = U.shape[1]
    usq = np.empty((m, c), np.float64)  # np.zeros would compile three more functions
    for v in range(m):
        for k in range(c):
            usq[v, k] = 0.0
        for j in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                usq[v, k] += U[j, k] * U[j, k]
    return usq
