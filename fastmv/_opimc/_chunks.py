"""One OPIMC chunk: raw per-view row blocks → the kernels' compact layout.

:class:`ChunkBuilder` validates each block (shape, finite values, CSR structure and index
range, presence mask), drops missing rows, scales rows to unit norm (scale-safe), and lays
the chunk out as ``fastmv.kernels.opimc.DenseRows`` / ``SparseRows``; :func:`kmeanspp`
seeds centres on the first chunk in the assignment metric (docs/algorithms.md §5);
:func:`read_chunks` reads and builds the chunks, the next one in a second thread while the
current one is clustered when the call has two threads or more.
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import scipy.sparse as sp

from fastmv.kernels.opimc import _stream_row_sqnorms
from fastmv.kernels.opimc_layout import (
    DenseRows,
    SparseRows,
    _stream_layout,
    stream_finish_rows,
)

from .._core._interrupts import deferred_pool
from .._core._validation import check_sparse_structure
from ..exceptions import InvalidParameterError
from ._sources import RowsOf, ViewSpec, check_view_dtype, release_pages, take_rows


@dataclasses.dataclass
class _Chunk:
    """One chunk in the kernels' layout (``fastmv.kernels.opimc``)."""

    s: int
    dense: object        # DenseRows, or None when every view is sparse
    sparse: object       # SparseRows, or None when every view is dense
    W: np.ndarray        # (s, m) presence weights
    rows: np.ndarray | None = None   # the positions in its chunk of the rows it holds (None: all)

    def args(self):
        return self.dense, self.sparse, self.W


def _mask_block(mblock, s, m, start):
    if mblock is None:
        return np.ones((s, m), dtype=bool)
    M = np.asarray(mblock)
    if M.shape != (s, m):
        raise InvalidParameterError(f"mask rows {start}..{start + s - 1} have shape {M.shape}, "
                         f"expected ({s}, {m})")
    if M.dtype == bool:
        return M                      # the caller indexes it (a copy) before writing
    if not np.issubdtype(M.dtype, np.number) or not np.all((M == 0) | (M == 1)):
        raise InvalidParameterError("mask must be boolean (or 0/1): True where the sample is "
                                    "present in the view")
    return M.astype(bool)


class ChunkBuilder:
    """Turns raw per-view row blocks into the compact kernel layout (see
    ``fastmv.kernels.opimc``), validating each block on the way."""

    def __init__(self, spec: ViewSpec, normalize: bool, chunk_size: int):
        self.spec = spec
        self.n_buffers = 1                # 2 while the next chunk is built during this one
        self.normalize = normalize
        self.dtype = spec.dtype
        m = spec.m
        # internal order: dense views first, then sparse ones
        self.order = [v for v in range(m) if not spec.sparse[v]] + \
                     [v for v in range(m) if spec.sparse[v]]
        self.n_dense = sum(not spec.sparse[v] for v in range(m))
        dims = [spec.dims[v] for v in self.order]
        self.view_ptr = np.zeros(m + 1, np.int64)
        self.view_ptr[1:] = np.cumsum(dims)
        self.D = int(self.view_ptr[-1])
        self.Dd = int(self.view_ptr[self.n_dense])
        self.dense_dims = np.asarray(dims[:self.n_dense], np.int64)
        self._bufs = [np.empty(0, self.dtype), np.empty(0, self.dtype)]
        self._builds = 0
        self.keep = False                 # True: every chunk gets buffers of its own (kept)

    def _xbuf(self, size):
        if self.keep:
            return np.empty(size, self.dtype)
        # value buffers reused chunk after chunk; with read-ahead the chunk being clustered
        # keeps its buffer while the next one is built into the other
        slot = self._builds % self.n_buffers
        self._builds += 1
        if self._bufs[slot].size < size:
            self._bufs[slot] = np.empty(size, self.dtype)
        return self._bufs[slot][:size]

    def _dense_array(self, B, s, start, v):
        """-> (array, rows of it) of one dense view's block: ``(block, None)``, or for rows
        of an in-memory view of the chunk's dtype ``(view, its rows)`` (no copy)."""
        if isinstance(B, RowsOf):
            if B.view.dtype == self.dtype:
                return B.view, B.rows
            B = B.view[B.rows]
        A = B.toarray() if sp.issparse(B) else np.asarray(B)
        if A.dtype != self.dtype:
            check_view_dtype(A.dtype, f"X_list[{v}]")
            A = A.astype(self.dtype)
        if not A.flags.c_contiguous:
            A = np.ascontiguousarray(A)
        if type(A) is not np.ndarray:
            A = A.view(np.ndarray)
        if A.shape != (s, self.spec.dims[v]):
            raise ValueError(f"X_list[{v}] rows {start}..{start + s - 1}: block has shape "
                             f"{A.shape}, expected ({s}, {self.spec.dims[v]})")
        return A, None

    def build(self, start, blocks, mblock, input_rows=None):
        """The chunk at visit positions ``start, start + 1, ...`` in the kernels' layout;
        ``input_rows`` (the rows of the input those positions read, when shuffled) names the
        rows in error messages."""
        def row(i):
            return int(start + i if input_rows is None else input_rows[i])

        spec, order = self.spec, self.order
        m = spec.m
        s = int(blocks[0].shape[0])
        P = _mask_block(mblock, s, m, start)[:, order]    # presence, internal view order
        nd = self.n_dense
        arrays = [self._dense_array(blocks[order[iv]], s, start, order[iv]) for iv in range(nd)]
        while True:                       # repeated only when all-NaN rows turn up
            rows, row_start, value_start, position, W, orphan = _stream_layout(P, self.dense_dims)
            if nd == 0:
                break
            values = self._xbuf(int(value_start[-1]))
            status = np.empty(int(row_start[-1]), np.int8)
            for iv in range(nd):
                p0, p1 = row_start[iv], row_start[iv + 1]
                A, of = arrays[iv]
                at = rows[p0:p1] if of is None else of[rows[p0:p1]]
                block = values[value_start[iv]:value_start[iv + 1]]
                # the copy in NumPy, from any layout, and the kernel (compiled once per dtype)
                # checks and scales the rows in place. "clip": the layout's rows are in range
                # by construction, and the default mode would copy through a temporary.
                np.take(A, at, axis=0, out=block.reshape(p1 - p0, A.shape[1]), mode="clip")
                stream_finish_rows(block, A.shape[1], self.normalize, status[p0:p1])
            if not status.any():
                break
            bad = np.flatnonzero(status == 2)
            if bad.size:
                iv = int(np.searchsorted(row_start, bad[0], side="right") - 1)
                raise ValueError(f"X_list[{order[iv]}] row {row(rows[bad[0]])} contains "
                                 "infinite values or some (not all) NaN; a missing row must be "
                                 "all NaN or masked out by mask")
            allnan = np.flatnonzero(status == 1)          # all-NaN rows are missing
            P[rows[allnan], np.searchsorted(row_start, allnan, side="right") - 1] = False
        dense = DenseRows(values, value_start, rows, row_start, position) if nd else None
        for iv in range(nd):
            release_pages(blocks[order[iv]])
        if mblock is not None:
            release_pages(mblock)
        del arrays
        # sparse views: one CSR with global column indices; missing rows dropped
        sparts = [self._sparse_part(blocks[order[iv]], iv, P[:, iv], s, start, row)
                  for iv in range(nd, m)]
        sparse = None
        if len(sparts) == 1:
            sparse = SparseRows(*sparts[0])
        elif sparts:
            sparse = SparseRows(*_hstack_csr(sparts, s))
        if orphan >= 0:
            raise ValueError(f"sample {row(orphan)} is missing from every view (mask / "
                             "NaN rows); every sample must be present in at least one view")
        return _Chunk(s, dense, sparse, W)

    def _sparse_part(self, B, iv, keep_row, s, start, row):
        """(data, global column indices, indptr) of one sparse view's block: checked, rows
        kept where present, scaled to unit norm (scale-safe) when normalising."""
        v = self.order[iv]
        d_v = self.spec.dims[v]
        name = f"X_list[{v}] rows {start}..{start + s - 1}"
        if sp.issparse(B):
            # the shared check: structure, index range, canonical form (on a copy if needed)
            C = check_sparse_structure(B, name)
        else:
            C = sp.csr_matrix(np.asarray(B))
        if C.shape != (s, d_v):
            raise ValueError(f"{name}: block has shape {C.shape}, expected ({s}, {d_v})")
        counts = np.diff(C.indptr)
        data = np.asarray(C.data, dtype=np.float64)
        if data.size and not np.isfinite(data).all():
            rows_bad = np.repeat(np.arange(s), counts)[~np.isfinite(data)]
            rows_bad = rows_bad[keep_row[rows_bad]]
            if rows_bad.size:
                raise ValueError(f"X_list[{v}] row {row(rows_bad[0])} contains NaN or "
                                 "infinite values (mark missing rows of sparse views in mask)")
            data = np.where(np.isfinite(data), data, 0.0)
        keep = np.repeat(keep_row, counts)
        if self.normalize and data.size:
            # ‖x‖ = big ‖x / big‖: neither overflows nor underflows, whatever the data's scale
            row_of = np.repeat(np.arange(s), counts)
            big = np.zeros(s)
            np.maximum.at(big, row_of, np.abs(data))
            big[big == 0] = 1.0
            scaled = data / big[row_of]
            norm = np.sqrt(np.bincount(row_of, weights=scaled * scaled, minlength=s))
            norm[norm == 0] = 1.0
            data = scaled / norm[row_of]
        new_data = data[keep].astype(self.dtype)
        new_ind = C.indices[keep].astype(np.int64) + self.view_ptr[iv]
        new_ptr = np.zeros(s + 1, np.int64)
        np.cumsum(counts * keep_row, out=new_ptr[1:])
        return new_data, new_ind, new_ptr

    def chunk_means(self, ch: _Chunk):
        """Per view, the mean of the chunk's present (normalised) rows, stacked (D,)."""
        fill = np.zeros(self.D)
        dn, sps = ch.dense, ch.sparse
        for iv in range(self.n_dense):
            a, b = self.view_ptr[iv], self.view_ptr[iv + 1]
            s_v = dn.row_start[iv + 1] - dn.row_start[iv]
            if s_v:
                X = dn.values[dn.value_start[iv]:dn.value_start[iv + 1]].reshape(s_v, b - a)
                fill[a:b] = X.sum(axis=0, dtype=np.float64) / s_v
        if sps is not None and sps.data.size:
            colsum = np.bincount(sps.indices, weights=sps.data.astype(np.float64),
                                 minlength=self.D)
            cnt = ch.W.sum(axis=0)
            for iv in range(self.n_dense, self.spec.m):
                a, b = self.view_ptr[iv], self.view_ptr[iv + 1]
                if cnt[iv] > 0:
                    fill[a:b] = colsum[a:b] / cnt[iv]
        return fill


def cut_chunks(whole, ends, dense_dims):
    """Chunks ``[ends[t - 1], ends[t])`` (from 0) of ``whole``, a chunk of all the rows built
    at once, each in the layout a build of its rows alone gives (the same arrays, bit for bit):
    in-memory views whose chunks are kept are validated, normalised and laid out in one build,
    then clustered chunk by chunk from these cuts, and swept whole in the later passes
    (``_stream_chunk_refine`` with ``chunk_ends``). Yields ``(start, chunk, None)``, as
    :func:`read_chunks` does."""
    dn, sps = whole.dense, whole.sparse
    cuts = np.concatenate([[0], ends])
    if dn is not None:
        nd = dn.row_start.shape[0] - 1
        dims = dense_dims
        # bounds[v, t]: the first stored row of view v in chunk t (rows ascend in each view)
        bounds = np.stack([dn.row_start[v] + np.searchsorted(
            dn.rows[dn.row_start[v]:dn.row_start[v + 1]], cuts) for v in range(nd)])
    for t in range(ends.size):
        r0, r1 = int(cuts[t]), int(cuts[t + 1])
        dense = sparse = None
        if dn is not None:
            lo, hi = bounds[:, t], bounds[:, t + 1]
            row_start = np.zeros(nd + 1, np.int64)
            np.cumsum(hi - lo, out=row_start[1:])
            value_start = np.zeros(nd + 1, np.int64)
            np.cumsum((hi - lo) * dims, out=value_start[1:])
            first = dn.value_start[:-1] + (lo - dn.row_start[:-1]) * dims
            values = np.concatenate([dn.values[first[v]:first[v] + value_start[v + 1]
                                               - value_start[v]] for v in range(nd)])
            rows = np.concatenate([dn.rows[lo[v]:hi[v]] for v in range(nd)]) - r0
            position = dn.position[r0:r1]
            position = np.where(position >= 0, position - (lo - row_start[:-1]), -1)
            dense = DenseRows(values, value_start, rows, row_start, position)
        if sps is not None:
            p0, p1 = sps.indptr[r0], sps.indptr[r1]
            sparse = SparseRows(sps.data[p0:p1], sps.indices[p0:p1],
                                sps.indptr[r0:r1 + 1] - p0)
        yield r0, _Chunk(r1 - r0, dense, sparse, whole.W[r0:r1]), None


def _hstack_csr(parts, s):
    counts = sum(np.diff(p[2]) for p in parts)
    ptr = np.zeros(s + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    data = np.empty(ptr[-1], parts[0][0].dtype)
    ind = np.empty(ptr[-1], np.int64)
    # position of each part's entries: row start + entries of the earlier parts in that row
    offset = ptr[:-1].copy()
    for d_, i_, p_ in parts:
        c = np.diff(p_)
        dest = np.repeat(offset - p_[:-1], c) + np.arange(p_[-1])
        data[dest] = d_
        ind[dest] = i_
        offset += c
    return data, ind, ptr


def _seed_candidates(W, c):
    """Rows a k-means++ seed may be drawn from: those present in the most views, widened to
    fewer views until there are at least ``2 c`` of them (every row if need be).

    A seed's missing views are filled with the chunk mean, which is closer to every row
    than any real row is: seeds missing a view attract the rows present only in that view,
    and the clusters of the different views start out mixed (docs/records/opimc.md "Starts")."""
    present = W.sum(axis=1)
    for k in range(int(present.max(initial=0)), 0, -1):
        rows = np.flatnonzero(present >= k)
        if rows.size >= 2 * c:
            return rows
    return np.arange(W.shape[0])


class Seeding:
    """A first chunk laid out once for k-means++ seeding (:func:`kmeanspp`), shared by the
    starts tried on it: the dense views side by side with zeros where a row is missing
    (float64) and the sparse views as one CSR matrix, so the distances of every row to all of
    a step's trial centres take one product for the dense views and one for the sparse."""

    def __init__(self, ch, builder, fill):
        s, vp = ch.s, builder.view_ptr
        self.ch, self.builder, self.fill = ch, builder, fill
        dn, sps = ch.dense, ch.sparse
        nd, Dd = builder.n_dense, builder.Dd
        self.xsq = _stream_row_sqnorms(dn, sps, vp, s)   # ‖x_i‖² over the present views
        self.dense = np.zeros((s, Dd))
        for iv in range(nd):
            a, b = vp[iv], vp[iv + 1]
            r0, r1 = dn.row_start[iv], dn.row_start[iv + 1]
            X = dn.values[dn.value_start[iv]:dn.value_start[iv + 1]].reshape(r1 - r0, b - a)
            self.dense[dn.rows[r0:r1], a:b] = X
        self.sparse = None if sps is None else sp.csr_matrix(
            (sps.data.astype(np.float64), sps.indices - Dd, sps.indptr),
            shape=(s, builder.D - Dd))
        # (m, D): row v sums a centre's squared entries over view v's features
        self.view_sum = np.zeros((builder.spec.m, builder.D))
        for iv in range(builder.spec.m):
            self.view_sum[iv, vp[iv]:vp[iv + 1]] = 1.0

    def rows(self, picks):
        """Rows ``picks`` as centres (D, len(picks)): their missing views take the chunk
        mean."""
        Dd = self.builder.Dd
        U = ((1.0 - self.ch.W[picks]) @ self.view_sum) * self.fill
        U[:, :Dd] += self.dense[picks]
        if self.sparse is not None:
            U[:, Dd:] += self.sparse[picks].toarray()
        return U.T

    def sqdist(self, U):
        """(s, t): ``Σ_v w_{v,i} ‖x_{v,i} − u_{v}‖²`` of every row to each column of ``U``."""
        Dd = self.builder.Dd
        out = self.ch.W @ (self.view_sum @ (U * U))       # Σ_v w_{v,i} ‖u_v‖²
        out += self.xsq[:, None]
        if Dd:
            out -= 2.0 * (self.dense @ U[:Dd])
        if self.sparse is not None:
            out -= 2.0 * (self.sparse @ U[Dd:])
        return np.maximum(out, 0.0, out=out)


def kmeanspp(seeding, c, rng, n_starts=1):
    """Greedy k-means++ seeding on the first chunk (a :class:`Seeding`), in the metric of
    the assignment step (``Σ_v w_{v,i} ‖x_{v,i} − u_{v,k}‖²``): each seed is the best of
    ``2 + ln c`` rows drawn by D² sampling (the one that lowers the total distance most, as
    scikit-learn's k-means++), drawn among :func:`_seed_candidates`. A seed row's missing
    views take the chunk mean. Returns stacked centres (n_starts, D, c).

    The ``n_starts`` seedings run side by side, one product per step for all of them (the
    chunk is read once per step, not once per start). Each start's random numbers are drawn
    up front, start after start (its first row, then the uniforms of every step, which pick
    rows by inverting the cumulative D² weights), so a start seeds as it would alone after
    the ones before it. O(n_starts s D c log c) time."""
    cand = _seed_candidates(seeding.ch.W, c)
    n_trials = 2 + int(np.log(c))
    draws = [(int(rng.integers(cand.size)), rng.random((c - 1, n_trials)))
             for _ in range(n_starts)]
    U = np.zeros((n_starts, seeding.builder.D, c))
    first = seeding.rows([int(cand[f]) for f, _ in draws])
    U[:, :, 0] = first.T
    best = seeding.sqdist(first)                       # (s, n_starts)
    for k in range(1, c):
        picks = []
        for j, (_, uniforms) in enumerate(draws):
            cdf = np.cumsum(best[cand, j])
            if not cdf[-1] > 0:           # every candidate is a seed already: uniformly
                picks.append(cand[[min(int(uniforms[k - 1, 0] * cand.size), cand.size - 1)]])
            else:
                cdf /= cdf[-1]
                picks.append(cand[np.searchsorted(cdf, uniforms[k - 1], side="right")])
        trials = seeding.rows(np.concatenate(picks))
        dist = seeding.sqdist(trials)
        o = 0
        for j, p in enumerate(picks):
            d = np.minimum(best[:, j:j + 1], dist[:, o:o + p.size])
            t = int(np.argmin(d.sum(axis=0)))  # the first of equal totals, as a strict < scan
            U[j, :, k], best[:, j] = trials[:, o + t], d[:, t]
            o += p.size
    return U


_END = object()


def _some_rows(item, keep):
    """The item of a source's ``chunks()`` for the rows at positions ``keep`` (increasing)
    of its chunk only, the rows of in-memory views not read."""
    start, blocks, mblock, input_rows = item
    blocks = [RowsOf(B.view, B.rows[keep]) if isinstance(B, RowsOf) else take_rows(B, keep)
              for B in blocks]
    mblock = None if mblock is None else take_rows(mblock, keep)
    rows = start + keep if input_rows is None else np.asarray(input_rows)[keep]
    return start, blocks, mblock, rows


def _next_chunk(items, builder, skip=None):
    """Read and build the next chunk: ``(start, chunk, None)``, ``(start, None, error)`` when
    reading or building it failed (``start`` None if not known), ``(start, None, None)``
    when ``skip(start)`` says none of its rows is needed, or ``_END``. ``skip(start)`` gives
    None (every row needed) or the positions in the chunk of the rows needed: a chunk of
    those rows alone is built (its ``rows``)."""
    start = None
    try:
        item = next(items, None)
        if item is None:
            return _END
        start = item[0]
        keep = None if skip is None else skip(start)
        if keep is None:
            return start, builder.build(*item), None
        if keep.size == 0:
            return start, None, None
        chunk = builder.build(*_some_rows(item, keep))
        chunk.rows = keep
        return start, chunk, None
    except Exception as exc:  # handed to the caller, which names the chunk
        return start, None, exc


@contextlib.contextmanager
def read_chunks(source, builder, read_ahead, skip=None):
    """Yield an iterator of :func:`_next_chunk` results over one pass of ``source``.

    With ``read_ahead``, chunk ``t + 1`` is read and built in a second thread (serial kernels
    that release the GIL) while the caller clusters chunk ``t``: the only work of a pass
    that does not depend on the previous chunk's statistics, and on two cores the one way to
    use the second core without parallel regions that wake a thread pool several times per
    chunk (which, on a loaded machine, wait for a descheduled thread at every join). The
    chunks and their order are the same either way. ``skip`` (without ``read_ahead``): see
    :func:`_next_chunk`.
    """
    items = iter(source.chunks())
    if not read_ahead:
        builder.n_buffers = 1
        yield iter(lambda: _next_chunk(items, builder, skip), _END)
        return
    builder.n_buffers = 2
    with deferred_pool(1) as pool:
        def chunks():
            pending = pool.submit(_next_chunk, items, builder)
            while True:
                got = pool.result(pending)
                if got is _END:
                    return
                if got[2] is None:
                    pending = pool.submit(_next_chunk, items, builder)
                yield got
        yield chunks()
