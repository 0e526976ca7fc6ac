"""Streaming kernels of OPIMC (docs/algorithms.md §5): one chunk of rows at a time.

The layout types and the kernels that build a chunk live in
:mod:`fastmv.kernels.opimc_layout` (re-exported here). Layout of a chunk of ``s`` rows
(built by ``fastmv._opimc._chunks``), views in *internal order*
(the dense views first, then the sparse ones), ``view_ptr`` (``m + 1``) giving each view's
rows in the stacked feature space of size ``D = Σ d_v``:

- :class:`DenseRows`: the dense views *compacted*: only the rows present in view ``v`` are
  kept, row-major ``(s_v, d_v)`` blocks one after the other. Missing rows cost nothing.
- :class:`SparseRows`: the sparse views as one CSR matrix of ``s`` rows whose column indices
  are already global rows of ``U`` / ``R`` (missing rows have no entries).
- ``W`` ``(s, m)`` float64: 1.0 where the row is present in the view, else 0.0.

Either part is ``None`` when the chunk has no view of that kind: Numba then compiles the
kernels without that half (a call only compiles what its data needs: dtype × dense/sparse).

Global statistics (:class:`Statistics`): float64 ``sums`` ``R`` ``(c, D)`` (per-cluster sums
of present rows, the ``R_v = Σ X_vᵀ V`` of every view transposed and stacked side by side),
``counts`` ``T`` ``(m, c)`` (per-cluster counts of present rows, the diagonal of ``T_v``) and
``centers`` ``U`` ``(D, c)`` (``U_v`` stacked); see :mod:`fastmv.kernels.opimc_stats`.
Chunk values are float32 or float64.

The only O(s d c) work is the cross product ``X_t U`` (BLAS for the dense views, a fused row
kernel for CSR), followed by a fused distance + argmin. Inside a chunk the statistics follow
the labels incrementally (only rows whose label changed move), and re-assignments after the
first are pruned exactly with Hamerly's bounds (:func:`stream_chunk_iterate`).

The kernels are serial (one thread, results independent of the thread count): the O(s d c)
work is BLAS, which gets the call's threads; the rest is O(s d) or O(s c) per chunk, which a
parallel launch per kernel call (many per chunk) would not speed up. With two threads or more,
``fastmv.opimc`` reads and builds the next chunk on a second thread instead.

Its kernels form one per-chunk loop that shares the chunk layout; the layout and the
statistics kernels are in ``opimc_layout`` and ``opimc_stats`` (their public names re-exported
here), the single-row moves of the refinement in ``opimc_refine``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import opimc_layout, opimc_stats
from ._checks import in_range, valid_dense_rows, valid_sparse_rows, valid_view_ptr
from ._options import SERIAL
from .opimc_layout import (  # noqa: F401  (re-exported: see __all__)
    REPLACE_PREVIOUS,
    START_FROM_CENTERS,
    START_FROM_LABELS,
    DenseRows,
    DistanceBounds,
    Nearest,
    SparseRows,
    Statistics,
    stream_finish_rows,
    stream_gather_view,
    stream_layout,
)
from .opimc_stats import (  # noqa: F401  (the public ones re-exported: see __all__)
    _csr_rows,
    _scatter_dense_rows,
    _stream_center_shift,
    _stream_center_sqnorms,
    _stream_loss,
    _stream_move_counts,
    _stream_scatter_counts,
    _stream_update_centers,
    stream_center_shift,
    stream_center_sqnorms,
    stream_loss,
    stream_move_counts,
    stream_move_csr,
    stream_move_dense,
    stream_scatter_counts,
    stream_scatter_csr,
    stream_scatter_dense,
    stream_update_centers,
)

# the layout names and the statistics kernels are re-exported, so callers import one module
__all__ = opimc_layout.__all__ + opimc_stats.__all__ + [
    "stream_cross",
    "stream_assign",
    "stream_row_sqnorms",
    "stream_chunk_assign",
    "stream_chunk_iterate",
]


@njit(**SERIAL)
def stream_cross(dense, view_ptr, U):
    """Cross products ``X_v U_v`` of the compacted dense views of a chunk (BLAS GEMMs).

    Parameters
    ----------
    dense : DenseRows
        Compacted dense views.
    view_ptr : ndarray of shape (m + 1,), int64
        Rows of each view in ``U`` (dense views first).
    U : ndarray of shape (D, c), float64
        Stacked centres.

    Returns
    -------
    G : ndarray of shape (Σ s_v, c), float64
        ``G[row_start[v] + r] = X_v[r] @ U_v`` (computed in the dtype of the values; float64
        storage keeps one type for :func:`stream_assign` whatever the input dtype).

    Notes
    -----
    One GEMM per dense view: O(Σ s_v d_v c) time, O(Σ s_v c + d_v c) memory.

    Cost: reads ``8 (Σ s_v d_v + D c)`` bytes and writes ``8 Σ s_v c``; ``2 Σ s_v d_v c`` flops
    in GEMMs.
    """
    if (not valid_view_ptr(view_ptr, U.shape[0])
            or not valid_dense_rows(dense, view_ptr, dense.position.shape[0])):
        raise ValueError("stream_cross: view_ptr must rise from 0 to the rows of U and the dense "
                         "layout be consistent")
    return _stream_cross(dense, view_ptr, U)


@njit(**SERIAL, inline="always")
def _stream_cross(dense, view_ptr, U):
    """:func:`stream_cross` without its boundary checks (inlined: the GEMMs are
    :func:`_dense_products`, shared with the refinement)."""
    n_dense = dense.row_start.shape[0] - 1
    G = np.empty((dense.row_start[n_dense], U.shape[1]), np.float64)
    # in the values' dtype (U is float64: a float32 chunk's products are float32 GEMMs)
    B = np.asarray(U, dtype=dense.values.dtype)
    # every stored row, at its own index: row_start is both the first rows and the offsets
    # into G (only its first n_dense entries are read), a slice less to reference-count
    _dense_products(dense, view_ptr, B, dense.row_start, dense.row_start[1:], dense.row_start,
                    G)
    return G


@njit(**SERIAL)
def _dense_products(dense, view_ptr, B, lo, hi, at, G):
    """``G[at[v] + r] = x_q · B[view v's rows]`` for the stored rows ``q = lo[v] + r < hi[v]``
    of every dense view ``v``: one GEMM per view, in the dtype of ``B`` (D, c). The chunk
    loop's products with the centres and the refinement's with the sums: one kernel."""
    c = G.shape[1]
    for v in range(dense.row_start.shape[0] - 1):
        nb = hi[v] - lo[v]
        if nb == 0:
            continue
        a = view_ptr[v]
        d_v = view_ptr[v + 1] - a
        o = dense.value_start[v] + (lo[v] - dense.row_start[v]) * d_v
        Xb = np.asarray(dense.values[o:o + nb * d_v].reshape((nb, d_v)), dtype=B.dtype)
        Gv = np.empty((nb, c), B.dtype)
        np.dot(Xb, B[a:a + d_v], Gv)
        for r in range(nb):               # explicit loops compile faster than slice assigns
            for k in range(c):
                G[at[v] + r, k] = Gv[r, k]


@njit(**SERIAL)
def stream_assign(dense, sparse, W, view_ptr, U, usq, G, rows, out):
    """Fused distance + argmin for the given rows of a chunk.

    ``D[i, k] = Σ_v W[i, v] (‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k})``; ``labels[i] = argmin_k D[i, k]``
    (lowest index on ties). The dense cross products come from ``G`` (see
    :func:`stream_cross`) or, when ``G`` has no rows, are computed here row by row (cheaper
    when only a few rows are re-assigned); the CSR rows' products with ``U`` are fused.

    Parameters
    ----------
    dense : DenseRows or None
    sparse : SparseRows or None
    W : ndarray of shape (s, m), float64
        Presence weights.
    view_ptr : ndarray of shape (m + 1,), int64
    U : ndarray of shape (D, c), float64
    usq : ndarray of shape (m, c), float64
        ``‖u_{v,k}‖²`` (see :func:`stream_center_sqnorms`).
    G : ndarray of shape (Σ s_v, c) or (0, c), float64
        Dense cross products stacked by view, or empty (computed inline).
    rows : ndarray of shape (r,), int64
        Chunk rows to assign.
    out : Nearest
        Written at ``rows`` only.

    Notes
    -----
    O(r (m + n_dense) c + nnz(rows) c) time with ``G``, plus O(r Σ d_v c) without it; O(c)
    scratch; never forms ``D``. Serial: with ``G`` it is O(c) per row after an O(d c) GEMM
    row, and without ``G`` it serves the few rows whose bounds overlap; a parallel launch per
    inner iteration would cost more than it saves on the chunk thread (the next chunk is read
    on another), and a parallel variant several seconds of compilation.

    Cost: with ``G``: reads ``8 r (n_dense c + m)`` bytes, ``~3 r (m + n_dense) c`` flops;
    without it ``2 r Σ d_v c`` more flops over ``8 r Σ d_v`` bytes of rows; CSR rows
    ``12 nnz(rows)`` bytes and ``2 nnz(rows) c`` flops.
    """
    s_w = W.shape[0]
    if (not valid_view_ptr(view_ptr, U.shape[0]) or W.shape[1] != view_ptr.shape[0] - 1
            or not valid_dense_rows(dense, view_ptr, s_w)
            or not valid_sparse_rows(sparse, s_w, U.shape[0])):
        raise ValueError("stream_assign: view_ptr must rise from 0 to the rows of U, one view "
                         "per column of W, and the chunk layout (dense, sparse) must match the "
                         "s rows of W")
    if (usq.shape[0] != W.shape[1] or usq.shape[1] != U.shape[1] or not in_range(rows, 0, s_w)
            or out.labels.shape[0] < s_w or out.best.shape[0] < s_w or out.second.shape[0] < s_w):
        raise ValueError("stream_assign: usq must be (m, c), rows lie in [0, s) and out hold s "
                         "rows")
    if G.shape[0] > 0:
        if dense is None:
            raise ValueError("stream_assign: G must be empty without dense views")
        if G.shape[0] < dense.row_start[dense.row_start.shape[0] - 1] or G.shape[1] != U.shape[1]:
            raise ValueError("stream_assign: G must hold one row of c products per stored "
                             "dense row")
    return _stream_assign(dense, sparse, W, view_ptr, U, usq, G, rows, rows.shape[0],
                          out)


@njit(**SERIAL)
def _stream_assign(dense, sparse, W, view_ptr, U, usq, G, rows, n_rows, out):
    """:func:`stream_assign` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked, on ``rows[:n_rows]``
    (the count, not a slice: a slice is one more array for Numba to reference-count)."""
    m = W.shape[1]
    c = usq.shape[1]
    labels, best, second = out
    acc = np.empty(c, np.float64)
    for r in range(n_rows):
        i = rows[r]
        for k in range(c):
            acc[k] = 0.0
        for v in range(m):
            w = W[i, v]
            if w != 0.0:
                for k in range(c):
                    acc[k] += w * usq[v, k]
        if dense is not None:
            inline = G.shape[0] == 0
            for v in range(dense.position.shape[1]):
                q = dense.position[i, v]
                if q < 0:
                    continue
                if not inline:
                    for k in range(c):
                        acc[k] -= 2.0 * G[q, k]
                    continue
                a = view_ptr[v]
                d_v = view_ptr[v + 1] - a
                o = dense.value_start[v] + (q - dense.row_start[v]) * d_v
                for j in range(d_v):
                    x = 2.0 * dense.values[o + j]
                    for k in range(c):
                        acc[k] -= x * U[a + j, k]
        if sparse is not None:
            for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
                j = sparse.indices[p]
                x = 2.0 * sparse.data[p]
                for k in range(c):
                    acc[k] -= x * U[j, k]
        k1 = 0                            # the nearest centre (ties: lowest index wins)
        v1 = acc[0]
        v2 = np.inf
        for k in range(1, c):
            dk = acc[k]
            if dk < v1:
                v2 = v1
                v1 = dk
                k1 = k
            elif dk < v2:
                v2 = dk
        labels[i] = k1
        best[i] = v1
        second[i] = v2
@njit(**SERIAL)
def stream_row_sqnorms(dense, sparse, view_ptr, s):
    """``xsq[i] = Σ_v ‖x_{v,i}‖²`` over the views where chunk row ``i`` is present.

    Parameters
    ----------
    dense : DenseRows or None
    sparse : SparseRows or None
    view_ptr : ndarray of shape (m + 1,), int64
    s : int
        Rows in the chunk.

    Returns
    -------
    xsq : ndarray of shape (s,), float64

    Notes
    -----
    O(Σ s_v d_v + nnz) time.

    Cost: reads ``8 Σ s_v d_v + 12 nnz`` bytes; ``2 (Σ s_v d_v + nnz)`` flops.
    """
    if (view_ptr.shape[0] < 2 or not valid_view_ptr(view_ptr, view_ptr[view_ptr.shape[0] - 1])
            or not valid_dense_rows(dense, view_ptr, s)
            or not valid_sparse_rows(sparse, s, view_ptr[view_ptr.shape[0] - 1])):
        raise ValueError("stream_row_sqnorms: view_ptr must rise from 0 and the chunk layout "
                         "(dense, sparse) match s rows")
    return _stream_row_sqnorms(dense, sparse, view_ptr, s)


@njit(**SERIAL)
def _stream_row_sqnorms(dense, sparse, view_ptr, s):
    """:func:`stream_row_sqnorms` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    xsq = np.empty(s, np.float64)  # np.zeros would compile three more functions
    for i in range(s):
        xsq[i] = 0.0
    if dense is not None:
        for v in range(dense.row_start.shape[0] - 1):
            d_v = view_ptr[v + 1] - view_ptr[v]
            for q in range(dense.row_start[v], dense.row_start[v + 1]):
                o = dense.value_start[v] + (q - dense.row_start[v]) * d_v
                acc = 0.0
                for j in range(d_v):
                    x = np.float64(dense.values[o + j])
                    acc += x * x
                xsq[dense.rows[q]] += acc
    if sparse is not None:
        for i in range(s):
            for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
                x = np.float64(sparse.data[p])
                xsq[i] += x * x
    return xsq
@njit(**SERIAL)
def stream_chunk_assign(dense, sparse, W, view_ptr, U, labels):
    """Assign every row of a chunk to its nearest centre: :func:`stream_cross` (BLAS) then
    :func:`stream_assign` (fused distances + argmin).

    Parameters
    ----------
    dense : DenseRows or None
    sparse : SparseRows or None
    W : ndarray of shape (s, m), float64
    view_ptr : ndarray of shape (m + 1,), int64
    U : ndarray of shape (D, c), float64
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

    Cost: reads ``8 (Σ s_v d_v + D c + s m) + 12 nnz`` bytes;
    ``2 Σ s_v d_v c + 2 nnz c + ~3 s m c`` flops (GEMM-bound for dense views).
    """
    s_w = W.shape[0]
    if (not valid_view_ptr(view_ptr, U.shape[0]) or W.shape[1] != view_ptr.shape[0] - 1
            or not valid_dense_rows(dense, view_ptr, s_w)
            or not valid_sparse_rows(sparse, s_w, U.shape[0])):
        raise ValueError("stream_chunk_assign: view_ptr must rise from 0 to the rows of U, one "
                         "view per column of W, and the chunk layout (dense, sparse) must match "
                         "the s rows of W")
    if labels.shape[0] != s_w:
        raise ValueError("stream_chunk_assign: labels must have one entry per row of W")
    return _stream_chunk_assign(dense, sparse, W, view_ptr, U, labels)


@njit(**SERIAL)
def _stream_chunk_assign(dense, sparse, W, view_ptr, U, labels):
    """:func:`stream_chunk_assign` without its boundary checks, for the calls of the chunk loop,
    whose arguments the public kernel that runs the loop has checked."""
    s = W.shape[0]
    c = U.shape[1]
    usq = _stream_center_sqnorms(U, view_ptr)
    out = Nearest(labels, np.empty(s, np.float64), np.empty(s, np.float64))
    G = np.empty((0, c), np.float64)
    if dense is not None:
        G = _stream_cross(dense, view_ptr, U)
    every = np.empty(s, np.int64)         # np.arange would compile three more functions
    for i in range(s):
        every[i] = i
    _stream_assign(dense, sparse, W, view_ptr, U, usq, G, every, s, out)
    return out.best, out.second
@njit(**SERIAL, inline="always")
def _eps(values):
    """``np.finfo(values.dtype).eps`` of float32 or float64 values (np.finfo would compile
    two more functions)."""
    return 2.220446049250313e-16 if values.itemsize == 8 else 1.1920928955078125e-07


@njit(**SERIAL)
def stream_chunk_iterate(dense, sparse, W, view_ptr, stats, labels, start, fill, alpha,
                         max_iter, tol):
    """One chunk of OPIMC (docs/algorithms.md §5): its starting labels, the inner loop, and
    its contribution to the global statistics.

    Start (``start``):

    - ``START_FROM_LABELS``: ``labels`` are the starting labels (first chunk); the chunk is
      added to the statistics (scatter-adds of :mod:`fastmv.kernels.opimc_stats`);
    - ``START_FROM_CENTERS``: the starting labels come from the current centres
      (:func:`stream_chunk_assign`); the chunk is added to the statistics;
    - ``REPLACE_PREVIOUS`` (later passes): ``labels`` hold the chunk's labels of the previous
      pass, whose contribution the statistics still hold; the starting labels come from the
      current centres and the previous contribution is moved to them.

    Then repeats: centres from the statistics (``stream_update_centers``), labels from the
    centres, statistics moved to the new labels, loss (``stream_loss``); until no label
    changes (a fixed point), the loss changes by less than ``tol`` relative, or ``max_iter``
    iterations. On exit the statistics hold the chunk under the final ``labels``.

    The re-assignment is pruned exactly (Hamerly's bounds): each row keeps an upper bound on
    its distance to its own centre and a lower bound on the distance to any other, both
    widened by the rounding error of the distance formula; after the centres move by
    ``delta`` (:func:`stream_center_shift`) the bounds move by at most ``delta``, and only
    rows whose bounds overlap are re-assigned (:func:`stream_assign` with inline cross
    products, or every row with the BLAS products of :func:`stream_cross`, as
    :func:`stream_chunk_assign`, when more than a quarter of the rows are). Rows that are
    skipped provably keep their label, so the result is that of re-assigning every row.

    Parameters
    ----------
    dense : DenseRows or None
        Compacted dense views of the chunk.
    sparse : SparseRows or None
        CSR rows of the sparse views.
    W : ndarray of shape (s, m), float64
        Presence weights.
    view_ptr : ndarray of shape (m + 1,), int64
        Rows of each view in the stacked feature space (dense views first).
    stats : Statistics
        Sums ``R`` (c, D), counts ``T`` (m, c), centres ``U`` (D, c); updated in place.
    labels : ndarray of shape (s,), int64
        Starting or previous labels (see ``start``); the final labels on exit.
    start : int
        ``START_FROM_LABELS``, ``START_FROM_CENTERS`` or ``REPLACE_PREVIOUS`` (above).
    fill : ndarray of shape (D,) or (0,), float64
        Centre for empty clusters (chunk mean; first chunk only) or empty (keep previous).
    alpha : float
        Ridge weight α >= 0.
    max_iter : int
        Inner iterations at most.
    tol : float
        Relative change of the chunk's loss that ends the loop.

    Returns
    -------
    loss : float
        ``stream_loss`` after the last iteration.
    n_iter : int
    converged : bool

    Notes
    -----
    Per iteration O(Σ s_v d_v c + nnz c) at worst (one GEMM per dense view), O(s + D c +
    n_active (Σ d_v) c) when few rows are near a boundary, plus O(n_changed d) for the
    statistics; memory O(s c + D c) beyond the chunk.

    Cost: per inner iteration at most that of :func:`stream_chunk_assign`
    (``8 (Σ s_v d_v + D c)`` bytes, ``2 Σ s_v d_v c + 2 nnz c`` flops) plus ``16 n_changed d``
    bytes and ``2 n_changed d`` flops for the statistics; much less when the bounds leave most
    rows out.
    """
    s_w = W.shape[0]
    if (not valid_view_ptr(view_ptr, stats.centers.shape[0]) or W.shape[1] != view_ptr.shape[0] - 1
            or not valid_dense_rows(dense, view_ptr, s_w)
            or not valid_sparse_rows(sparse, s_w, stats.centers.shape[0])):
        raise ValueError("stream_chunk_iterate: view_ptr must rise from 0 to the rows of U, one "
                         "view per column of W, and the chunk layout (dense, sparse) must match "
                         "the s rows of W")
    c_s = stats.centers.shape[1]
    if (labels.shape[0] != s_w or stats.sums.shape[0] != c_s
            or stats.sums.shape[1] != stats.centers.shape[0]
            or stats.counts.shape[0] != W.shape[1] or stats.counts.shape[1] != c_s
            or start < START_FROM_LABELS or start > REPLACE_PREVIOUS
            or (start != START_FROM_CENTERS and not in_range(labels, 0, c_s))):
        raise ValueError("stream_chunk_iterate: labels must have s entries in [0, c), the "
                         "statistics be R (c, D), T (m, c), U (D, c), and start a start mode")
    return _stream_chunk_iterate(dense, sparse, W, view_ptr, stats, labels, start, fill, alpha,
                                 max_iter, tol, DistanceBounds(np.empty(s_w, np.float64),
                                                               np.empty(s_w, np.float64)))


@njit(**SERIAL)
def _stream_chunk_iterate(dense, sparse, W, view_ptr, stats, labels, start, fill, alpha,
                         max_iter, tol, bounds):
    """:func:`stream_chunk_iterate` without its boundary checks, for ``fastmv.opimc``, which
    builds the chunk layout itself. On exit ``bounds.upper[i]`` (``bounds.lower[i]``), in
    the :class:`DistanceBounds` of ``s`` entries the caller gives, bound the distance
    ``sqrt(Σ_v W[i, v] ‖x_{v,i} − u_{v,k}‖²)`` of row ``i`` to its own centre from above
    (to every other centre from below), for the centres ``U`` on exit, rounding included
    (``inf`` and ``-inf`` for rows never assigned); they let the caller prove that no
    single-row move lowers the loss (``fastmv._opimc._certify``)."""
    # Every array (or named tuple of arrays) bound to a new variable costs Numba an incref and
    # a decref of each array, and an inlined helper binds each of its arguments: the moves,
    # bounds and shifts of the loop are therefore written out here, on unpacked fields.
    R, T, U = stats.sums, stats.counts, stats.centers
    ub, lb = bounds.upper, bounds.lower
    s = labels.shape[0]
    c = U.shape[1]
    m = W.shape[1]
    new = np.empty(s, np.int64)
    for i in range(s):                                  # no bounds yet: every row is active
        new[i] = labels[i]
        ub[i] = np.inf
        lb[i] = -np.inf
    xsq = _stream_row_sqnorms(dense, sparse, view_ptr, s)
    dmax = 1
    for v in range(m):
        if view_ptr[v + 1] - view_ptr[v] > dmax:
            dmax = view_ptr[v + 1] - view_ptr[v]
    eps = 0.0               # the coarser of the two dtypes (only the parts present count)
    if dense is not None:
        eps = _eps(dense.values)
    if sparse is not None:
        e = _eps(sparse.data)
        if e > eps:
            eps = e
    gamma = 4.0 * (dmax + 8) * eps
    best = np.empty(s, np.float64)
    second = np.empty(s, np.float64)
    out = Nearest(new, best, second)
    U_old = np.empty((U.shape[0], c), np.float64)
    delta = np.empty(c, np.float64)
    usq_max = np.empty(m, np.float64)
    active = np.empty(s, np.int64)
    no_cross = np.empty((0, c), np.float64)
    no_labels = np.empty(0, np.int64)     # "no previous labels": add every row
    loss = loss_old = 0.0
    n_iter = 0
    converged = False
    # step 0 is the start (no centre update; every row active unless the labels are given),
    # so the assignment and the statistics' update are one block of code, compiled once
    for it in range(max_iter + 1):
        n_act = 0 if start == START_FROM_LABELS else s
        if it > 0:
            for j in range(U.shape[0]):
                for k in range(c):
                    U_old[j, k] = U[j, k]
            _stream_update_centers(R, T, view_ptr, alpha, fill, U)
            _stream_center_shift(U_old, U, delta)   # delta[k]: how far centre k moved
            k1 = 0                        # the largest shift (k1, d1) and the second (d2)
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
            # no copy of labels into new: every iteration ends with the two equal
        if n_act > 0:
            usq = _stream_center_sqnorms(U, view_ptr)
            for v in range(m):
                usq_max[v] = 0.0
                for k in range(c):
                    if usq[v, k] > usq_max[v]:
                        usq_max[v] = usq[v, k]
            G = no_cross                  # few rows: their products computed row by row
            if 4 * n_act > s:             # many: every row, the products from BLAS
                n_act = s
                for i in range(s):
                    active[i] = i
                if dense is not None:
                    G = _stream_cross(dense, view_ptr, U)
            _stream_assign(dense, sparse, W, view_ptr, U, usq, G, active, n_act, out)
            # Hamerly bounds of each assigned row from its two smallest D values: ub >= the
            # distance to its own centre, lb <= the distance to any other, widened by the
            # rounding error of D
            for r in range(n_act):
                i = active[r]
                e = xsq[i]
                for v in range(m):
                    e += W[i, v] * usq_max[v]
                margin = np.sqrt(gamma * e)
                b = best[i] + xsq[i]      # max(b, 0.0) without Numba's max (one compile less)
                ub[i] = np.sqrt(0.0 if 0.0 > b else b) + margin
                if np.isinf(second[i]):
                    lb[i] = np.inf
                else:
                    b = second[i] + xsq[i]
                    lb[i] = np.sqrt(0.0 if 0.0 > b else b) - margin
        if it == 0 and start != REPLACE_PREVIOUS:
            # add every row under the new labels (copied into labels below: n_changed = s)
            if dense is not None:
                _scatter_dense_rows(dense, view_ptr, no_labels, new, R, 1.0)
            if sparse is not None:
                _csr_rows(sparse, new, no_labels, R, 1.0)
            _stream_scatter_counts(new, W, T, 1.0)
            n_changed = s
        else:
            # stream_move_counts, stream_move_dense and stream_move_csr, written out
            n_changed = _stream_move_counts(labels, new, W, T)
            if n_changed > 0:
                if dense is not None:
                    _scatter_dense_rows(dense, view_ptr, labels, new, R, 1.0)
                if sparse is not None:
                    _csr_rows(sparse, labels, new, R, -1.0)
                    _csr_rows(sparse, new, labels, R, 1.0)
        if n_changed > 0:
            for i in range(s):
                labels[i] = new[i]
        loss = _stream_loss(U, R, T, view_ptr, alpha)
        if it == 0:
            loss_old = loss
            continue
        n_iter = it
        if n_changed == 0 or abs(loss - loss_old) < tol * abs(loss_old):
            converged = True
            break
        loss_old = loss
    return loss, n_iter, converged
