"""Single-row moves that lower OPIMC's loss on one chunk (Hartigan's method; docs/records/opimc.md
"Refinement").

With the centres at their optimum for given labels (``U_v = R_v (T_v + αI)⁻¹``), the loss is
``Σ_v Σ_k −‖R_{v,k}‖² / (T_{v,k} + α)``. Lloyd's step (the assignment of
``fastmv.kernels.opimc``) compares a row with centres that do not move with it; moving row
``i`` from cluster ``a`` to ``b`` changes the loss *exactly* by::

    Σ_v w_{v,i} [ f(‖R_{v,a}‖² − 2 x·R_{v,a} + ‖x‖², T_{v,a} − w) − f(‖R_{v,a}‖², T_{v,a})
                + f(‖R_{v,b}‖² + 2 x·R_{v,b} + ‖x‖², T_{v,b} + w) − f(‖R_{v,b}‖², T_{v,b}) ]

with ``f(r, t) = −r / (t + α)`` (0 when ``t + α = 0``), ``x = x_{v,i}``, ``w = w_{v,i}``. A
sweep moves each row in turn to the cluster that lowers the loss most, when it does: every
move lowers the loss, so sweeps end, and their fixed points are Lloyd fixed points too (for
α = 0) but not the reverse. On ℓ2 rows with most samples in one view the Lloyd fixed points
the starts reach are often poor; these moves leave them (docs/records/opimc.md). The statistics are
the global ones (every chunk streamed so far), so the moves lower the streamed loss: one chunk
in memory, as for the rest of OPIMC.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import in_range, valid_dense_rows, valid_sparse_rows, valid_view_ptr
from ._options import INNER, SERIAL
from .opimc import _dense_products
from .opimc_layout import _sqsum

__all__ = ["stream_chunk_refine"]


@njit(**SERIAL)
def stream_chunk_refine(dense, sparse, W, view_ptr, stats, labels, fill, alpha, max_sweeps):
    """Sweeps of single-row moves (Hartigan's method) over one chunk whose contribution the
    statistics hold under ``labels``.

    Each sweep visits the rows in order; row ``i`` moves to the cluster ``b`` that lowers the
    loss most (the exact change, module docstring) when that lowers it by more than rounding
    (``1e-10`` of the terms involved), and never out of a cluster it would leave empty in every
    view. Sweeps stop after one without a move or after ``max_sweeps``; the centres are then
    recomputed from the statistics (``stream_update_centers`` with ``fill``).

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
        Sums ``R`` (c, D), counts ``T`` (m, c), centres ``U`` (D, c), holding the chunk under
        ``labels``; updated in place.
    labels : ndarray of shape (s,), int64
        The chunk's labels; updated in place.
    fill : ndarray of shape (D,) or (0,), float64
        Centre of a cluster empty in a view (see ``stream_update_centers``).
    alpha : float
        Ridge weight α >= 0.
    max_sweeps : int
        Sweeps at most.

    Returns
    -------
    n_moves : int
        Rows moved in all (0: ``labels`` and the statistics are unchanged).
    n_sweeps : int

    Notes
    -----
    Per sweep O(Σ_v s_v d_v c + nnz c + s m c) time (the products ``x·R_{v,k}`` of every row:
    one GEMM per block of ``BLOCK`` rows, corrected row by row for the moves made inside the
    block, since ``R`` changes with every move) plus O(d) per move; O(D c) memory. The row
    norms and ``‖R_{v,k}‖²`` are sums reassociated by ``fastmath`` (``REASSOC``: SIMD,
    rounding only).

    Cost: per sweep ``8 (Σ s_v d_v + D c)`` bytes read at least (``R`` from cache) and
    ``2 Σ s_v d_v c + 2 nnz c + ~10 s m c`` flops; ``32 d`` bytes per move.
    """
    s_w = W.shape[0]
    R, T, U = stats.sums, stats.counts, stats.centers
    if (not valid_view_ptr(view_ptr, U.shape[0]) or W.shape[1] != view_ptr.shape[0] - 1
            or not valid_dense_rows(dense, view_ptr, s_w)
            or not valid_sparse_rows(sparse, s_w, U.shape[0])):
        raise ValueError("stream_chunk_refine: view_ptr must rise from 0 to the rows of U, one "
                         "view per column of W, and the chunk layout (dense, sparse) must match "
                         "the s rows of W")
    c = U.shape[1]
    if (labels.shape[0] != s_w or R.shape[0] != c or R.shape[1] != U.shape[0]
            or T.shape[0] != W.shape[1] or T.shape[1] != c or not in_range(labels, 0, c)
            or (fill.shape[0] != 0 and fill.shape[0] != U.shape[0])):
        raise ValueError("stream_chunk_refine: labels must have s entries in [0, c), the "
                         "statistics be R (c, D), T (m, c), U (D, c), and fill empty or (D,)")
    chunk_ends = np.empty(1, np.int64)
    chunk_ends[0] = s_w
    chunk_loss = np.empty(1, np.float64)
    chunk_sweeps = np.empty(1, np.int64)
    n_moves = _stream_chunk_refine(dense, sparse, W, view_ptr, stats, labels, fill, alpha,
                                   max_sweeps, chunk_ends, chunk_loss, chunk_sweeps)
    return n_moves, chunk_sweeps[0]


@njit(**INNER)
def _f(rsq, t, alpha):
    den = t + alpha
    return -rsq / den if den > 0.0 else 0.0


# The row norms and ‖R_{v,k}‖² are sums over a view's features; as single chains of
# dependent additions they cost more than the block's GEMM. Reassociated (SIMD) by
# ``_sqsum``, shared with the chunk layout and not inlined (inlining would drop its fastmath
# flags): rounding only.
#: Rows whose dense products with ``R`` come from one GEMM (BLAS reads ``R`` once per block,
#: not once per row; the moves made inside the block are corrected for row by row).
BLOCK = 64


# The dense and sparse halves are separate helpers, called under ``if dense is not None`` /
# ``if sparse is not None`` in the kernel: Numba prunes a branch on a ``None`` argument
# before it inlines, so a chunk without sparse views never copies the sparse half's code.
@njit(**SERIAL, inline="always")
def _sparse_row_products(sparse, view_ptr, R, i, nd, xr, xsq):
    """``xr[v, k] += x_{v,i}·R_{v,k}`` and ``xsq[v] += ‖x_{v,i}‖²`` over the sparse views
    (``v >= nd``), from row ``i``'s CSR entries."""
    m, c = xr.shape
    for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
        j = sparse.indices[p]
        v = nd
        while v < m - 1 and j >= view_ptr[v + 1]:
            v += 1
        x = sparse.data[p]
        xsq[v] += x * x
        for k in range(c):
            xr[v, k] += x * R[k, j]


@njit(**SERIAL, inline="always")
def _move_sparse_row(sparse, R, i, a, b):
    """Move row ``i``'s sparse values from ``R[a]`` to ``R[b]``."""
    for p in range(sparse.indptr[i], sparse.indptr[i + 1]):
        j = sparse.indices[p]
        R[a, j] -= sparse.data[p]
        R[b, j] += sparse.data[p]


@njit(**SERIAL)
def _stream_chunk_refine(dense, sparse, W, view_ptr, stats, labels, fill, alpha, max_sweeps,
                         chunk_ends, chunk_loss, chunk_sweeps):
    """:func:`stream_chunk_refine` without its boundary checks, for ``fastmv.opimc``, which
    builds the chunk layout itself, over one chunk or over several chunks laid out one after
    the other (a later pass over the rows it keeps in memory: one call, not one per chunk).

    The chunks are rows ``[chunk_ends[t - 1], chunk_ends[t])`` (from 0), each swept in turn
    exactly as one call per chunk would: at most ``max_sweeps`` sweeps over its rows, the
    centres of the clusters rows moved between updated after them, then its loss
    (``stream_loss``, summed view by view and cluster by cluster from terms kept for the
    clusters no row moved between) in ``chunk_loss[t]`` and its sweeps in
    ``chunk_sweeps[t]``. Returns the rows moved in all."""
    # The dense helpers' code is written out here on the layout's fields, unpacked once: an
    # inlined helper binds each argument (every array of a named tuple) to a new variable,
    # and Numba reference-counts each binding, which costs compile time, not run time.
    R, T, U = stats.sums, stats.counts, stats.centers
    c = R.shape[0]
    m = W.shape[1]
    rsq = np.empty((m, c), np.float64)
    xr = np.empty((m, c), np.float64)
    xsq = np.empty(m, np.float64)
    nd = 0 if dense is None else dense.position.shape[1]
    G = np.empty((nd * BLOCK, c), np.float64)       # view v's block at rows at[v] = v BLOCK
    lo = np.empty(nd, np.int64)          # set per block and per sweep before they are read
    hi = np.empty(nd, np.int64)
    at = np.empty(nd, np.int64)
    for v in range(nd):
        at[v] = v * BLOCK
    # float64 whatever the values
    Rt = np.empty((0 if dense is None else view_ptr[nd], c), np.float64)
    moved_rows = np.empty(3 * BLOCK, np.int64)   # (row, from, to) per move; 1-d: one np.empty less
    first = np.empty(nd, np.int64)     # each view's first stored row of the chunk
    touched = np.empty(c, np.int64)    # clusters a row of the chunk moved into or out of
    terms = np.empty((m, c), np.float64)
    has_fill = fill.shape[0] > 0
    if dense is not None:
        values = dense.values
        value_start = dense.value_start
        rows = dense.rows
        row_start = dense.row_start
        position = dense.position
        for v in range(nd):
            hi[v] = row_start[v]
    n_total = 0
    r0 = 0
    for t in range(chunk_ends.shape[0]):
        r1 = chunk_ends[t]
        for v in range(nd):
            first[v] = hi[v]
        n_moves = 0
        n_sweeps = 0
        for k in range(c):
            touched[k] = 0
        for _ in range(max_sweeps):
            n_sweeps += 1
            for v in range(m):                 # afresh each sweep: no drift from the updates
                for k in range(c):
                    rsq[v, k] = _sqsum(R[k], view_ptr[v], view_ptr[v + 1] - view_ptr[v])
            moved = 0
            n_block = 0
            if dense is not None:
                for v in range(nd):
                    hi[v] = first[v]
            for i in range(r0, r1):
                if (i - r0) % BLOCK == 0:
                    if dense is not None:
                        # G[at[v] + q - lo[v]] = x_q·R_{v,k} for the stored rows q of view v
                        # whose chunk rows lie in the block (lo[v]:hi[v], advanced here): one
                        # float64 GEMM per view with Rt = Rᵀ (the chunk loop's kernel)
                        i1 = r1 if r1 < i + BLOCK else i + BLOCK
                        for v in range(nd):
                            lo[v] = hi[v]
                            while hi[v] < row_start[v + 1] and rows[hi[v]] < i1:
                                hi[v] += 1
                        for j in range(view_ptr[nd]):
                            for k in range(c):
                                Rt[j, k] = R[k, j]
                        _dense_products(dense, view_ptr, Rt, lo, hi, at, G)
                    n_block = 0
                a = labels[i]
                for v in range(m):             # zero where row i is missing
                    xsq[v] = 0.0
                    for k in range(c):
                        xr[v, k] = 0.0
                if dense is not None:
                    # xr[v, k] = x_{v,i}·R_{v,k} and xsq[v] = ‖x_{v,i}‖² of the dense views
                    # where row i is present, from the block's GEMM corrected for the n_block
                    # moves made in the block since (moved_rows[3 mv:3 mv + 3]: row, from, to)
                    for v in range(nd):
                        q = position[i, v]
                        if q < 0:
                            continue
                        d_v = view_ptr[v + 1] - view_ptr[v]
                        o = value_start[v] + (q - row_start[v]) * d_v
                        xsq[v] = _sqsum(values, o, d_v)
                        r = at[v] + q - lo[v]
                        for k in range(c):
                            xr[v, k] = G[r, k]
                        for mv in range(n_block):
                            q2 = position[moved_rows[3 * mv], v]
                            if q2 < 0:
                                continue
                            o2 = value_start[v] + (q2 - row_start[v]) * d_v
                            dot = 0.0             # a few moves per block: a plain sum
                            for j in range(d_v):
                                dot += values[o + j] * values[o2 + j]
                            xr[v, moved_rows[3 * mv + 1]] -= dot
                            xr[v, moved_rows[3 * mv + 2]] += dot
                if sparse is not None:
                    _sparse_row_products(sparse, view_ptr, R, i, nd, xr, xsq)
                out = 0.0                      # loss change of taking row i out of a
                scale = 0.0
                left = 0.0                     # a's count over the views, without row i
                for v in range(m):
                    w = W[i, v]
                    left += T[v, a] - w
                    if w == 0.0:
                        continue
                    old = _f(rsq[v, a], T[v, a], alpha)
                    out += _f(rsq[v, a] - 2.0 * xr[v, a] + xsq[v], T[v, a] - w, alpha) - old
                    scale += abs(old) + xsq[v]
                if left <= 0.0:
                    continue
                best = 0.0
                b = a
                for k in range(c):
                    if k == a:
                        continue
                    d = out
                    for v in range(m):
                        w = W[i, v]
                        if w != 0.0:
                            d += (_f(rsq[v, k] + 2.0 * xr[v, k] + xsq[v], T[v, k] + w, alpha)
                                  - _f(rsq[v, k], T[v, k], alpha))
                    if d < best:
                        best = d
                        b = k
                if b == a or best >= -1e-10 * scale:
                    continue
                for v in range(m):
                    w = W[i, v]
                    if w == 0.0:
                        continue
                    rsq[v, a] += xsq[v] - 2.0 * xr[v, a]
                    rsq[v, b] += xsq[v] + 2.0 * xr[v, b]
                    T[v, a] -= w
                    T[v, b] += w
                if dense is not None:
                    for v in range(nd):        # row i's dense values from R[a] to R[b]
                        q = position[i, v]
                        if q < 0:
                            continue
                        a0 = view_ptr[v]
                        d_v = view_ptr[v + 1] - a0
                        o = value_start[v] + (q - row_start[v]) * d_v
                        for j in range(d_v):
                            x = values[o + j]
                            R[a, a0 + j] -= x
                            R[b, a0 + j] += x
                if sparse is not None:
                    _move_sparse_row(sparse, R, i, a, b)
                labels[i] = b
                touched[a] = 1
                touched[b] = 1
                moved += 1
                moved_rows[3 * n_block] = i
                moved_rows[3 * n_block + 1] = a
                moved_rows[3 * n_block + 2] = b
                n_block += 1
            n_moves += moved
            if moved == 0:
                break
        if dense is not None:
            for v in range(nd):           # past the chunk, swept or not (max_sweeps = 0)
                while hi[v] < row_start[v + 1] and rows[hi[v]] < r1:
                    hi[v] += 1
        # The centres (stream_update_centers) of the clusters a row moved into or out of
        # (the others' R, T did not change, nor would their centres), then terms[v, k],
        # view v's share of cluster k in the loss (stream_loss is their sum), for those
        # clusters, or for all on the first chunk: O(D × touched clusters), not O(D c).
        for k in range(c):
            if touched[k] == 0 and t != 0:
                continue
            for v in range(m):
                tk = T[v, k]
                if touched[k] != 0:
                    for j in range(view_ptr[v], view_ptr[v + 1]):
                        if tk > 0.0:
                            U[j, k] = R[k, j] / (tk + alpha)
                        elif has_fill:
                            U[j, k] = fill[j]
                acc = 0.0
                for j in range(view_ptr[v], view_ptr[v + 1]):
                    u = U[j, k]
                    acc += u * ((tk + alpha) * u - 2.0 * R[k, j])
                terms[v, k] = acc
        loss = 0.0
        for v in range(m):
            for k in range(c):
                loss += terms[v, k]
        chunk_loss[t] = loss
        chunk_sweeps[t] = n_sweeps
        n_total += n_moves
        r0 = r1
    return n_total
