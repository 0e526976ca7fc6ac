"""OPIMC: one-pass streaming clustering of incomplete multi-view data (ALGORITHMS.md §5).

Hu & Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019. The data streams through in
chunks of rows; only the global statistics ``R_v`` (``d_v × c`` per-cluster sums) and
``T_v`` (per-cluster counts) and the centres ``U_v`` persist between chunks, so memory is
O(Σ d_v (s + c)) whatever ``n`` is (plus the ``n`` output labels). Views may be dense arrays,
``np.memmap`` (read one chunk at a time; the pages read are handed back to the OS), CSR
matrices, any object with ``shape`` and row slicing (h5py datasets), or a stream of chunks.
"""
from __future__ import annotations

import dataclasses
import mmap
import numbers
import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ._result import Result
from ._threads import thread_limit
from ._validation import (check_int, check_n_clusters, check_n_jobs, check_random_state,
                          check_scalar)

__all__ = ["opimc", "OPIMCResult"]


@dataclasses.dataclass(frozen=True, repr=False)
class OPIMCResult(Result):
    """Result of :func:`opimc`.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        Cluster of each sample after the last pass (in ``[0, n_clusters)``).
    U : list of ndarray, each (d_v, n_clusters), float64
        Per-view centres (columns) after the last chunk, ``U_v = R_v (T_v + αI)⁻¹``.
    loss : ndarray of shape (n_passes,)
        The streamed loss ``Σ_v (−2 tr(U_vᵀ R_v) + tr(U_vᵀ U_v T_v) + α‖U_v‖²)`` at the end of
        each pass (over all samples; the paper's objective without the constant
        ``Σ_v Σ_i w_{v,i} ‖x_{v,i}‖²``).
    chunk_loss : ndarray of shape (n_passes, n_chunks)
        The same loss after each chunk (over the samples streamed so far in the first pass).
    n_iter : ndarray of shape (n_passes, n_chunks), int64
        Inner iterations spent on each chunk.
    n_passes : int
    converged : bool
        Whether every chunk of the last pass stopped before ``max_iter``.
    """

    labels: np.ndarray
    U: list
    loss: np.ndarray
    chunk_loss: np.ndarray
    n_iter: np.ndarray
    n_passes: int
    converged: bool

    @property
    def objective(self) -> np.ndarray:
        """Alias of :attr:`loss` (the per-pass objective history)."""
        return self.loss


# ---------------------------------------------------------------------------------------
# input sources: each yields (start, list of raw per-view row blocks, raw mask block or None)
# ---------------------------------------------------------------------------------------

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _is_view(obj) -> bool:
    if sp.issparse(obj):
        return True
    shape = getattr(obj, "shape", None)
    return shape is not None and len(shape) == 2 and hasattr(obj, "__getitem__")


def _looks_like_view(X) -> bool:
    """A view (array-like with 2 dimensions), as opposed to a ``(blocks, mask)`` chunk."""
    if _is_view(X):
        return True
    if not isinstance(X, list):
        return False
    try:
        A = np.asarray(X)
    except (ValueError, TypeError):
        return False
    return A.ndim == 2 and A.dtype != object


@dataclasses.dataclass
class _Spec:
    m: int
    dims: list          # d_v, user order
    sparse: list        # bool per view, user order
    dtype: type         # chunk dtype (float32 only when every view is float32)


def _view_dtype(obj):
    if sp.issparse(obj):
        return np.dtype(obj.dtype)
    dt = getattr(obj, "dtype", None)
    try:
        return np.dtype(dt) if dt is not None else None
    except TypeError:
        return None


def _check_view_dtype(dt, name):
    if dt is None:
        return
    if dt == object or not (np.issubdtype(dt, np.number) or dt == bool):
        raise TypeError(f"{name} must be numeric, got dtype {dt}")
    if np.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex values")


def _chunk_dtype(dtypes):
    return np.float32 if dtypes and all(dt == np.float32 for dt in dtypes) else np.float64


class _ArraySource:
    """Views held as arrays / memmaps / CSR / row-sliceable objects of a common ``n``."""

    def __init__(self, X_list, mask, chunk_size):
        views = list(X_list)
        if not views:
            raise ValueError("X_list must hold at least one view")
        self.views = []
        dims, sparse, dtypes = [], [], []
        for v, X in enumerate(views):
            name = f"X_list[{v}]"
            if sp.issparse(X):
                if X.ndim != 2:
                    raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
                if X.format != "csr":
                    X = sp.csr_matrix(X)       # in memory already; CSR slices rows cheaply
            elif not _is_view(X):
                try:
                    X = np.asarray(X)
                except Exception as exc:
                    raise TypeError(f"{name} must be a 2-D array, CSR matrix, memmap or "
                                    f"row-sliceable object, got {type(X).__name__}") from exc
                if X.ndim != 2:
                    raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
            dt = _view_dtype(X)
            _check_view_dtype(dt, name)
            shape = tuple(int(a) for a in X.shape)
            if shape[0] < 1 or shape[1] < 1:
                raise ValueError(f"{name} is empty (shape {shape})")
            dims.append(shape[1])
            sparse.append(sp.issparse(X))
            dtypes.append(dt if dt is not None else np.dtype(np.float64))
            self.views.append(X)
        ns = [int(X.shape[0]) for X in self.views]
        if len(set(ns)) > 1:
            raise ValueError(f"all views in X_list must have the same number of samples (rows); "
                             f"got {ns}")
        self.n = ns[0]
        self.spec = _Spec(len(views), dims, sparse, _chunk_dtype(dtypes))
        if mask is not None:
            if not (hasattr(mask, "shape") and hasattr(mask, "__getitem__")) or sp.issparse(mask):
                mask = np.asarray(mask)
            if tuple(mask.shape) != (self.n, self.spec.m):
                raise ValueError(f"mask must have shape (n, m) = ({self.n}, {self.spec.m}), "
                                 f"got {tuple(mask.shape)}")
        self.mask = mask
        self.chunk_size = chunk_size

    def chunks(self):
        s = self.chunk_size
        for a in range(0, self.n, s):
            b = min(a + s, self.n)
            blocks = [X[a:b] for X in self.views]
            mblock = None if self.mask is None else self.mask[a:b]
            yield a, blocks, mblock


class _StreamSource:
    """An iterable of ``(list of per-view row blocks, mask block or None)``, re-cut into chunks
    of exactly ``chunk_size`` rows (the last may be shorter), so the result does not depend on
    how the source cuts its blocks."""

    def __init__(self, iterable, chunk_size, n_passes):
        if n_passes > 1 and iter(iterable) is iterable:
            raise ValueError("X_list is a one-shot iterator but n_passes > 1: pass a re-iterable "
                             "object (each iter() starting the stream again) or n_passes=1")
        self.iterable = iterable
        self.chunk_size = chunk_size
        self.spec = None
        self.n = None

    def _items(self):
        for t, item in enumerate(self.iterable):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(f"item {t} of the chunk stream X_list must be a pair "
                                "(list of per-view row blocks, mask block or None)")
            blocks, mblock = item
            if _is_view(blocks) or not isinstance(blocks, (list, tuple)):
                raise TypeError(f"item {t} of the chunk stream X_list: the first element must be "
                                "a list of per-view row blocks")
            blocks = list(blocks)
            if self.spec is None:
                dims, sparse, dtypes = [], [], []
                for v, B in enumerate(blocks):
                    name = f"X_list (chunk stream) view {v}"
                    if not sp.issparse(B):
                        B = np.asarray(B)
                    if B.ndim != 2 or B.shape[1] < 1:
                        raise ValueError(f"{name}: blocks must be 2-D with >= 1 column, "
                                         f"got shape {B.shape}")
                    dt = _view_dtype(B)
                    _check_view_dtype(dt, name)
                    dims.append(int(B.shape[1]))
                    sparse.append(sp.issparse(B))
                    dtypes.append(dt)
                if not blocks:
                    raise ValueError("X_list (chunk stream): a chunk holds no views")
                self.spec = _Spec(len(blocks), dims, sparse, _chunk_dtype(dtypes))
            m = self.spec.m
            if len(blocks) != m:
                raise ValueError(f"item {t} of the chunk stream X_list has {len(blocks)} views, "
                                 f"expected {m}")
            rows = []
            for v, B in enumerate(blocks):
                shape = getattr(B, "shape", None)
                if shape is None:
                    B = blocks[v] = np.asarray(B)
                    shape = B.shape
                if len(shape) != 2 or shape[1] != self.spec.dims[v]:
                    raise ValueError(f"item {t} of the chunk stream X_list: view {v} block has "
                                     f"shape {tuple(shape)}, expected (rows, "
                                     f"{self.spec.dims[v]})")
                rows.append(int(shape[0]))
            if len(set(rows)) > 1:
                raise ValueError(f"item {t} of the chunk stream X_list: views have different "
                                 f"numbers of rows {rows}")
            if mblock is not None:
                mblock = np.asarray(mblock)
                if mblock.shape != (rows[0], m):
                    raise ValueError(f"item {t} of the chunk stream X_list: mask block must have "
                                     f"shape ({rows[0]}, {m}), got {mblock.shape}")
            if rows[0] > 0:
                yield blocks, mblock, rows[0]

    def peek_spec(self):
        """Read the first item to learn m, d_v and the dtype (a one-shot iterator is not
        consumed: the item is kept for :meth:`chunks`)."""
        it = self._items()
        try:
            first = next(it)
        except StopIteration:
            raise ValueError("X_list (chunk stream) yielded no rows") from None
        self._pending_first = (first, it)
        return self.spec

    def chunks(self):
        if getattr(self, "_pending_first", None) is not None:
            first, it = self._pending_first
            self._pending_first = None

            def items():
                yield first
                yield from it
            source = items()
        else:
            source = self._items()
        s = self.chunk_size
        m = self.spec.m
        pend_blocks = [[] for _ in range(m)]
        pend_masks = []
        pend_rows = 0
        start = 0
        for blocks, mblock, rows in source:
            for v in range(m):
                pend_blocks[v].append(blocks[v])
            pend_masks.append(np.ones((rows, m), bool) if mblock is None else mblock)
            pend_rows += rows
            while pend_rows >= s:
                out, pend_blocks, out_mask, pend_masks = _cut(pend_blocks, pend_masks, s,
                                                             self.spec)
                pend_rows -= s
                yield start, out, out_mask
                start += s
        if pend_rows > 0:
            out, _, out_mask, _ = _cut(pend_blocks, pend_masks, pend_rows, self.spec)
            yield start, out, out_mask
            start += pend_rows
        self.n = start


def _stack(parts, sparse):
    if len(parts) == 1:
        return parts[0]
    if sparse:
        return sp.vstack([sp.csr_matrix(P) for P in parts], format="csr")
    return np.concatenate([P.toarray() if sp.issparse(P) else np.asarray(P) for P in parts])


def _cut(pend_blocks, pend_masks, s, spec):
    """Take the first ``s`` rows of the pending blocks; return (chunk, rest, mask, rest)."""
    out, rest = [], []
    for v, parts in enumerate(pend_blocks):
        X = _stack(parts, spec.sparse[v] and all(sp.issparse(P) for P in parts))
        out.append(X[:s])
        rest.append([X[s:]] if X.shape[0] > s else [])
    M = np.concatenate(pend_masks) if len(pend_masks) > 1 else pend_masks[0]
    return out, rest, M[:s], ([M[s:]] if M.shape[0] > s else [])


# ---------------------------------------------------------------------------------------
# one chunk: validation, normalisation, compact layout for the kernels
# ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Chunk:
    """One chunk in the kernels' layout (``fastmv.kernels.streaming``)."""

    s: int
    dense: object        # DenseRows, or None when every view is sparse
    sparse: object       # SparseRows, or None when every view is dense
    W: np.ndarray        # (s, m) presence weights

    def args(self):
        return self.dense, self.sparse, self.W


def _release_pages(block):
    """Hand the pages of a memmap block back to the OS after it was read (best effort), so
    the resident set does not grow with the file. Shared mappings only (modes r, r+, w+):
    for copy-on-write mappings (mode 'c') dropping pages would discard the caller's edits."""
    mm = getattr(block, "_mmap", None)
    if mm is None or getattr(block, "mode", "c") not in ("r", "r+", "w+", "readonly",
                                                          "readwrite", "write"):
        return
    if not hasattr(mm, "madvise") or block.nbytes == 0:
        return
    try:
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        start = block.__array_interface__["data"][0] - base
        end = start + block.nbytes
        page = mmap.PAGESIZE
        a = (start // page) * page
        b = min(len(mm), -(-end // page) * page)
        if 0 <= a < b:
            mm.madvise(mmap.MADV_DONTNEED, a, b - a)
    except Exception:  # pragma: no cover - platform without madvise, exotic buffers
        pass


def _mask_block(mblock, s, m, start):
    if mblock is None:
        return np.ones((s, m), dtype=bool)
    M = np.asarray(mblock)
    if M.shape != (s, m):
        raise ValueError(f"mask rows {start}..{start + s - 1} have shape {M.shape}, "
                         f"expected ({s}, {m})")
    if M.dtype == bool:
        return M                      # the caller indexes it (a copy) before writing
    if not np.issubdtype(M.dtype, np.number) or not np.all((M == 0) | (M == 1)):
        raise ValueError("mask must be boolean (or 0/1): True where the sample is present "
                         "in the view")
    return M.astype(bool)


class _ChunkBuilder:
    """Turns raw per-view row blocks into the compact kernel layout (see
    ``fastmv.kernels.streaming``), validating each block on the way."""

    def __init__(self, spec: _Spec, normalize: bool, chunk_size: int):
        self.spec = spec
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
        self._buf = np.empty(0, self.dtype)

    def _xbuf(self, size):
        if self._buf.size < size:
            self._buf = np.empty(size, self.dtype)
        return self._buf[:size]

    def _dense_array(self, B, s, start, v):
        A = B.toarray() if sp.issparse(B) else np.asarray(B)
        if A.dtype != self.dtype:
            _check_view_dtype(A.dtype, f"X_list[{v}]")
            A = A.astype(self.dtype)
        if not A.flags.c_contiguous:
            A = np.ascontiguousarray(A)
        if type(A) is not np.ndarray:
            A = A.view(np.ndarray)
        if A.shape != (s, self.spec.dims[v]):
            raise ValueError(f"X_list[{v}] rows {start}..{start + s - 1}: block has shape "
                             f"{A.shape}, expected ({s}, {self.spec.dims[v]})")
        return A

    def build(self, start, blocks, mblock):
        from fastmv.kernels.streaming import (DenseRows, SparseRows, stream_gather_view,
                                              stream_layout)
        spec, order = self.spec, self.order
        m = spec.m
        s = int(blocks[0].shape[0])
        P = _mask_block(mblock, s, m, start)[:, order]    # presence, internal view order
        nd = self.n_dense
        arrays = [self._dense_array(blocks[order[iv]], s, start, order[iv]) for iv in range(nd)]
        while True:                       # repeated only when all-NaN rows turn up
            rows, row_start, value_start, position, W, orphan = stream_layout(P, self.dense_dims)
            if nd == 0:
                break
            values = self._xbuf(int(value_start[-1]))
            status = np.empty(int(row_start[-1]), np.int8)
            for iv in range(nd):
                p0, p1 = row_start[iv], row_start[iv + 1]
                stream_gather_view(arrays[iv], rows[p0:p1], self.normalize,
                                   values[value_start[iv]:value_start[iv + 1]], status[p0:p1])
            if not status.any():
                break
            bad = np.flatnonzero(status == 2)
            if bad.size:
                iv = int(np.searchsorted(row_start, bad[0], side="right") - 1)
                raise ValueError(f"X_list[{order[iv]}] row {start + rows[bad[0]]} contains "
                                 "infinite values or some (not all) NaN; a missing row must be "
                                 "all NaN or masked out by mask")
            allnan = np.flatnonzero(status == 1)          # all-NaN rows are missing
            P[rows[allnan], np.searchsorted(row_start, allnan, side="right") - 1] = False
        dense = DenseRows(values, value_start, rows, row_start, position) if nd else None
        for iv in range(nd):
            _release_pages(blocks[order[iv]])
        if mblock is not None:
            _release_pages(mblock)
        del arrays
        # sparse views: one CSR with global column indices; missing rows dropped
        sparts = [self._sparse_part(blocks[order[iv]], iv, P[:, iv], s, start)
                  for iv in range(nd, m)]
        sparse = None
        if len(sparts) == 1:
            sparse = SparseRows(*sparts[0])
        elif sparts:
            sparse = SparseRows(*_hstack_csr(sparts, s))
        if orphan >= 0:
            raise ValueError(f"sample {start + orphan} is missing from every view (mask / "
                             "NaN rows); every sample must be present in at least one view")
        return _Chunk(s, dense, sparse, W)

    def _sparse_part(self, B, iv, keep_row, s, start):
        """(data, global column indices, indptr) of one sparse view's block: checked, rows
        kept where present, scaled to unit norm (scale-safe) when normalising."""
        v = self.order[iv]
        d_v = self.spec.dims[v]
        name = f"X_list[{v}] rows {start}..{start + s - 1}"
        C = B if sp.issparse(B) else sp.csr_matrix(np.asarray(B))
        if C.format != "csr":
            C = sp.csr_matrix(C)
        if C.shape != (s, d_v):
            raise ValueError(f"{name}: block has shape {C.shape}, expected ({s}, {d_v})")
        indptr, indices = np.asarray(C.indptr), np.asarray(C.indices)
        if (indptr.shape != (s + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0)
                or indptr[-1] > indices.size or indptr[-1] > C.data.size):
            raise ValueError(f"{name}: invalid CSR structure (indptr must be monotone, "
                             "start at 0 and end at nnz)")
        nnz = int(indptr[-1])
        if nnz and (indices[:nnz].min() < 0 or indices[:nnz].max() >= d_v):
            raise ValueError(f"{name}: CSR column indices must lie in [0, {d_v}) (the view's "
                             f"width), got [{indices[:nnz].min()}, {indices[:nnz].max()}]")
        C = sp.csr_matrix((C.data[:nnz], indices[:nnz], indptr), shape=(s, d_v))
        if not C.has_canonical_format:
            C = C.copy()                  # never edit the caller's matrix
            C.sum_duplicates()
        counts = np.diff(C.indptr)
        data = np.asarray(C.data, dtype=np.float64)
        if data.size and not np.isfinite(data).all():
            rows_bad = np.repeat(np.arange(s), counts)[~np.isfinite(data)]
            rows_bad = rows_bad[keep_row[rows_bad]]
            if rows_bad.size:
                raise ValueError(f"X_list[{v}] row {start + rows_bad[0]} contains NaN or "
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


# ---------------------------------------------------------------------------------------
# the solver
# ---------------------------------------------------------------------------------------

def _kmeanspp(ch, builder, c, fill, rng):
    """k-means++ seeding on the first chunk, in the metric of the assignment step
    (``Σ_v w_{v,i} ‖x_{v,i} − u_{v,k}‖²``). A seed row's missing views take the chunk mean.
    Returns stacked centres (D, c). O(s Σd c) time with the chunk kernels."""
    from fastmv.kernels.streaming import stream_chunk_assign, stream_row_sqnorms
    s, D, vp = ch.s, builder.D, builder.view_ptr
    dn, sps = ch.dense, ch.sparse
    xsq = stream_row_sqnorms(dn, sps, vp, s)   # ‖x_i‖² over the views where i is present

    def row(i):
        u = fill.copy()
        for iv in range(builder.n_dense):
            q = dn.position[i, iv]
            if q >= 0:
                a, b = vp[iv], vp[iv + 1]
                o = dn.value_start[iv] + (q - dn.row_start[iv]) * (b - a)
                u[a:b] = dn.values[o:o + b - a]
        if sps is not None:
            lo, hi = sps.indptr[i], sps.indptr[i + 1]
            for iv in range(builder.n_dense, builder.spec.m):
                if ch.W[i, iv]:
                    u[vp[iv]:vp[iv + 1]] = 0.0
            np.add.at(u, sps.indices[lo:hi], sps.data[lo:hi])
        return u

    U = np.zeros((D, c))
    lab = np.empty(s, np.int64)
    best = np.full(s, np.inf)
    i = int(rng.integers(s))
    for k in range(c):
        U[:, k] = row(i)
        d, _ = stream_chunk_assign(dn, sps, ch.W, vp, np.ascontiguousarray(U[:, k:k + 1]), lab)
        best = np.minimum(best, np.maximum(d + xsq, 0.0))
        total = best.sum()
        if k + 1 < c:
            i = int(rng.choice(s, p=best / total)) if total > 0 else int(rng.integers(s))
    return U


def _parse_init(init, spec, n_clusters, n):
    """-> (labels or None, U0 stacked by user view or None)."""
    if isinstance(init, str):
        if init not in ("random", "k-means++"):
            raise ValueError(f"init must be 'random', 'k-means++', an array of initial labels "
                             f"or a list of per-view centres (d_v, n_clusters); got {init!r}")
        return None, None
    if isinstance(init, (list, tuple)) and len(init) == spec.m and all(
            np.ndim(u) == 2 for u in init):
        U0 = []
        for v, u in enumerate(init):
            u = np.asarray(u, dtype=np.float64)
            if u.shape != (spec.dims[v], n_clusters):
                raise ValueError(f"init[{v}] must have shape (d_v, n_clusters) = "
                                 f"({spec.dims[v]}, {n_clusters}), got {u.shape}")
            if not np.isfinite(u).all():
                raise ValueError(f"init[{v}] contains NaN or infinite values")
            U0.append(u)
        return None, U0
    lab = np.asarray(init)
    if lab.ndim != 1 or lab.dtype.kind not in "iu":
        raise ValueError("init must be 'random', a 1-D integer array of initial labels (for the "
                         "first chunk, or for all n samples) or a list of per-view centres")
    if lab.size and (lab.min() < 0 or lab.max() >= n_clusters):
        raise ValueError(f"init labels must lie in [0, n_clusters) = [0, {n_clusters})")
    return lab.astype(np.int64), None


def opimc(X_list, n_clusters, *, mask=None, alpha=0.1, chunk_size=250, n_passes=1,
          max_iter=30, tol=1e-6, normalize=True, random_state=None, verbose=False,
          callback: Callable | None = None, init="random", n_jobs=None) -> OPIMCResult:
    """One-pass incomplete multi-view clustering (OPIMC), streamed chunk by chunk.

    Each chunk ``X_t`` of ``s`` rows is read once per pass (one chunk per view in memory at a
    time). Samples are scaled to unit ℓ2 norm per view (``normalize``; missing rows count as
    zero with weight 0). With the global statistics ``R_v = Σ X_vᵀ V`` and ``T_v = Σ Vᵀ W_v V``
    (per-cluster sums and counts of the present rows streamed so far), each chunk repeats, until
    no label changes or the chunk's loss changes by less than ``tol`` (relative), at most
    ``max_iter`` times::

        U_v = (R_v + X_tᵀ V_t) (T_v + V_tᵀ W_t V_t + αI)⁻¹   (diagonal T: a column scaling;
              clusters with zero count: chunk mean on the first chunk, previous centre later)
        label_i = argmin_k Σ_v w_{v,i} (‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k})

    then adds the chunk to ``R_v``, ``T_v``. The first chunk of the first pass starts from
    random labels (a random balanced partition; the random ``U_v`` of the paper would be
    overwritten by the first centre update, so none is drawn), every later chunk from the
    labels given by the current centres. In passes after the first the chunk's previous
    contribution is removed from ``R_v``, ``T_v`` before it is re-assigned.

    Parameters
    ----------
    X_list : list of views, or an iterable of chunks
        Either one object per view, each ``(n, d_v)`` with a common ``n``: a NumPy array, an
        ``np.memmap``, a scipy.sparse matrix (CSR is sliced directly; other formats are
        converted to CSR once), or any object with ``shape`` and row slicing ``X[a:b]`` (e.g.
        an h5py dataset). Only ``chunk_size`` rows of each view are read at a time; a memmap's
        pages are released after each chunk. All-NaN rows of dense views count as missing.
        Or an iterable yielding ``(blocks, mask_block)`` pairs for a true stream: ``blocks`` a
        list of per-view row blocks (dense or sparse, any number of rows, the same for every
        view), ``mask_block`` a ``(rows, m)`` bool array or None. The stream is re-cut into
        chunks of ``chunk_size`` rows, so results equal those on the concatenated arrays.
        ``n_passes > 1`` needs a re-iterable (``iter()`` restarts it), not a one-shot iterator.
    n_clusters : int
        Number of clusters ``c`` (``1 <= c <= n``).
    mask : array-like of shape (n, m), bool, optional
        ``True`` where a sample is present in a view (may be a memmap; read by chunk). Not used
        with a chunk stream (give ``mask_block`` there). Default: every row present (NaN rows
        aside). Every sample must be present in at least one view.
    alpha : float >= 0, default 0.1
        Ridge weight α of the centres.
    chunk_size : int >= 1, default 250
        Rows per chunk ``s``.
    n_passes : int >= 1, default 1
        Passes over the data.
    max_iter : int >= 1, default 30
        Inner iterations per chunk at most.
    tol : float >= 0, default 1e-6
        Relative change of the chunk's loss that ends its inner loop.
    normalize : bool, default True
        Scale each present row of each view to unit ℓ2 norm.
    random_state : None, int or numpy.random.Generator
        Seeds the random initial labels.
    verbose : bool, default False
        Print one line per pass.
    callback : callable, optional
        ``callback(k, state)`` after the ``k``-th chunk (counted over all passes); ``state`` is
        a dict with ``pass``, ``chunk``, ``start``, ``stop``, ``loss``, ``n_iter``, ``labels``
        (the chunk's labels) and ``U`` (per-view centres).
    init : 'random', 'k-means++', int array, or list of arrays, default 'random'
        Start of the first chunk: ``'random'`` (the paper's: a random balanced partition);
        ``'k-means++'`` (seeds drawn from the first chunk by D² sampling in the assignment
        metric, a seed's missing views filled with the chunk mean); initial labels (length of
        the first chunk, or ``n``: its first rows are used); or per-view centres ``U_v``
        ``(d_v, n_clusters)``, which then give the first labels. With ``alpha=0``, no missing
        data and one chunk holding every sample, :func:`opimc` is Lloyd's k-means on the
        concatenated normalised views from that start.
    n_jobs : int, optional
        Threads for the kernels (see :func:`fastmv.thread_limit`).

    Returns
    -------
    OPIMCResult
        ``labels``, ``U`` (per view, ``d_v × c``), ``loss`` (per pass), ``chunk_loss`` (per
        chunk), ``n_iter``, ``n_passes``, ``converged``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: views with different ``n`` or bad shapes, infinite values or
        partially-NaN rows in present rows, samples missing from every view, bad ``mask``
        values, out-of-range parameters.

    Notes
    -----
    Time per pass: O(Σ_v |Ω_v| d_v c + nnz c) for the first assignment of each chunk
    (``|Ω_v|`` present rows of view ``v``: one GEMM per dense view (BLAS), a fused CSR kernel
    for sparse views, then a fused distance + argmin), and per inner iteration O(D c + s) plus
    O(Σ d_v c) for each row whose Hamerly bounds overlap (the re-assignment is pruned exactly:
    skipped rows provably keep their label) and O(d) for each row whose label changed (the
    statistics follow the labels by one-hot scatter-adds). Memory: O(s Σ d_v + Σ d_v c),
    independent of ``n``, plus the ``n`` output labels (int64). Float32 views are processed in
    float32 (the statistics are float64). Memmap pages are released after each chunk, so the
    resident set does not grow with the file either.

    References
    ----------
    M. Hu and S. Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019.

    Examples
    --------
    >>> import numpy as np, fastmv
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.random((500, 20)), rng.random((500, 30))
    >>> res = fastmv.opimc([X1, X2], 3, chunk_size=100, random_state=0)
    >>> res.labels.shape, [u.shape for u in res.U]
    ((500,), [(20, 3), (30, 3)])
    """
    from fastmv.kernels.streaming import (REPLACE_PREVIOUS, START_FROM_CENTERS,
                                          START_FROM_LABELS, Statistics, stream_chunk_iterate)

    alpha = check_scalar(alpha, "alpha", low=0.0)
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    n_passes = check_int(n_passes, "n_passes", low=1)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_scalar(tol, "tol", low=0.0)
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
    if not isinstance(verbose, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None")
    check_n_jobs(n_jobs)
    rng = check_random_state(random_state)

    if X_list is None or isinstance(X_list, (str, bytes)) or _is_view(X_list) and not (
            isinstance(X_list, (list, tuple))):
        raise TypeError("X_list must be a list of views (one 2-D array per view) or an "
                        "iterable of (blocks, mask_block) chunks; got "
                        f"{type(X_list).__name__}")
    is_views = isinstance(X_list, (list, tuple)) and len(X_list) > 0 and all(
        _looks_like_view(X) for X in X_list)
    if is_views:
        source = _ArraySource(X_list, mask, chunk_size)
        n = source.n
        n_clusters = check_n_clusters(n_clusters, n)
        spec = source.spec
    else:
        if isinstance(X_list, (list, tuple)) and len(X_list) == 0:
            raise ValueError("X_list must hold at least one view")
        try:
            iter(X_list)
        except TypeError as exc:
            raise TypeError("X_list must be a list of views or an iterable of chunks, got "
                            f"{type(X_list).__name__}") from exc
        if mask is not None:
            raise ValueError("mask is not used with a chunk stream: yield (blocks, mask_block)")
        source = _StreamSource(X_list, chunk_size, n_passes)
        n_clusters = check_int(n_clusters, "n_clusters", low=1)
        spec = source.peek_spec()
        n = None

    init_labels, U0 = _parse_init(init, spec, n_clusters, n)
    if init_labels is not None and n is not None and init_labels.size not in (
            min(chunk_size, n), n):
        raise ValueError(f"init labels must have length {min(chunk_size, n)} (first chunk) or "
                         f"{n} (all samples), got {init_labels.size}")

    builder = _ChunkBuilder(spec, bool(normalize), chunk_size)
    m, c, D = spec.m, n_clusters, builder.D
    view_ptr = builder.view_ptr
    order = builder.order
    R = np.zeros((c, D))          # per-cluster sums, R_v transposed and stacked
    T = np.zeros((m, c))
    U = np.zeros((D, c))
    if U0 is not None:
        for iv, v in enumerate(order):
            U[view_ptr[iv]:view_ptr[iv + 1]] = U0[v]
    labels_all = np.empty(n, np.int64) if n is not None else None
    label_parts = []
    empty_fill = np.zeros(0)
    pass_loss, chunk_loss, n_iter_all, conv_all = [], [], [], []
    k_total = 0

    def user_U():
        return [U[view_ptr[iv]:view_ptr[iv + 1]].copy() for iv in np.argsort(order)]

    with thread_limit(n_jobs, single_threaded_blas=False):
        for p in range(n_passes):
            t0 = time.perf_counter()
            losses, iters, convs = [], [], []
            loss = 0.0
            for t, (start, blocks, mblock) in enumerate(source.chunks()):
                ch = builder.build(start, blocks, mblock)
                del blocks, mblock
                s = ch.s
                lab = np.empty(s, np.int64)
                fill = empty_fill
                if p == 0:
                    mode = START_FROM_CENTERS
                    if t == 0:
                        fill = builder.chunk_means(ch)
                        if init_labels is not None:
                            if init_labels.size < s:
                                raise ValueError(f"init labels must have length >= {s}")
                            lab[:] = init_labels[:s]
                            mode = START_FROM_LABELS
                        elif U0 is None and isinstance(init, str) and init == "k-means++":
                            U[:] = _kmeanspp(ch, builder, c, fill, rng)
                        elif U0 is None:
                            lab[:] = rng.permutation(np.arange(s) % c)
                            mode = START_FROM_LABELS
                else:
                    if start + s > labels_all.size:
                        raise ValueError("the chunk stream X_list yielded more rows in pass "
                                         f"{p + 1} than in pass 1 ({labels_all.size})")
                    lab[:] = labels_all[start:start + s]
                    mode = REPLACE_PREVIOUS
                loss, it, conv = stream_chunk_iterate(
                    ch.dense, ch.sparse, ch.W, view_ptr, Statistics(R, T, U), lab, mode, fill,
                    alpha, max_iter, tol)
                if labels_all is not None:
                    labels_all[start:start + s] = lab
                else:
                    label_parts.append(lab)
                losses.append(loss)
                iters.append(it)
                convs.append(conv)
                if callback is not None:
                    callback(k_total, {"pass": p, "chunk": t, "start": start, "stop": start + s,
                                       "loss": loss, "n_iter": it, "labels": lab.copy(),
                                       "U": user_U()})
                k_total += 1
            if labels_all is None:
                labels_all = (np.concatenate(label_parts) if label_parts
                              else np.zeros(0, np.int64))
                label_parts = []
                n = labels_all.size
                if n < c:
                    raise ValueError(f"n_clusters={c} exceeds the number of samples ({n})")
            elif p > 0 and source.n is not None and source.n != labels_all.size:
                raise ValueError(f"the chunk stream X_list yielded {source.n} rows in pass "
                                 f"{p + 1}, {labels_all.size} in pass 1")
            if chunk_loss and len(losses) != len(chunk_loss[0]):
                raise ValueError("the chunk stream X_list changed its length between passes")
            chunk_loss.append(losses)
            n_iter_all.append(iters)
            conv_all.append(convs)
            pass_loss.append(loss)
            if verbose:
                print(f"opimc pass {p + 1}/{n_passes}: loss {loss:.6g}, "
                      f"{len(losses)} chunks, {sum(iters)} inner iterations, "
                      f"{time.perf_counter() - t0:.3f} s")

    return OPIMCResult(
        labels=labels_all,
        U=user_U(),
        loss=np.asarray(pass_loss, dtype=np.float64),
        chunk_loss=np.asarray(chunk_loss, dtype=np.float64),
        n_iter=np.asarray(n_iter_all, dtype=np.int64),
        n_passes=n_passes,
        converged=bool(all(conv_all[-1])),
    )


# ---------------------------------------------------------------------------------------
# command line hooks
# ---------------------------------------------------------------------------------------

def _demo(random_state=0):
    """Rows (setting, y_true, y_pred) for ``python -m fastmv demo``: Handwritten (fou, fac,
    kar, pix, zer), 40% of each view missing, samples shuffled, chunk 50, alpha 0.1."""
    from fastmv.datasets import load_handwritten
    from fastmv.simulate import incomplete_mask
    views, y = load_handwritten(["fou", "fac", "kar", "pix", "zer"])
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(y.size)
    views = [X[perm] for X in views]
    y = y[perm]
    mask = incomplete_mask(y.size, len(views), 0.4, random_state=rng)
    rows = []
    for passes in (1, 10):
        res = opimc(views, 10, mask=mask, alpha=0.1, chunk_size=50, n_passes=passes,
                    random_state=random_state)
        rows.append((f"5 views, 40% missing per view, shuffled, chunk 50, alpha 0.1, "
                     f"{passes} pass{'es' if passes > 1 else ''}", y, res.labels))
    return rows


def _cli(views, y, params: dict, random_state):
    """Run OPIMC on a user's ``(views, y)``.

    Side-information parameters (popped from ``params``):

    - ``missing_ratio`` (default 0.4): fraction of the samples removed from each view
      (:func:`fastmv.simulate.incomplete_mask`);
    - ``shuffle`` (default True): stream the samples in a random order;
    - ``n_clusters`` (default: the number of classes in ``y``).

    The remaining parameters go to :func:`opimc` (``alpha``, ``chunk_size``, ``n_passes``,
    ``max_iter``, ``tol``, ``normalize``, ``n_jobs``, ...); unknown ones raise ``TypeError``.
    """
    from fastmv.simulate import incomplete_mask
    params = dict(params)
    missing_ratio = params.pop("missing_ratio", 0.4)
    shuffle = params.pop("shuffle", True)
    n_clusters = params.pop("n_clusters", int(np.unique(y).size))
    y = np.asarray(y)
    rng = np.random.default_rng(random_state)
    n = y.size
    perm = rng.permutation(n) if shuffle else np.arange(n)
    views = [X[perm] for X in views]
    y_perm = y[perm]
    mask = incomplete_mask(n, len(views), missing_ratio, random_state=rng)
    res = opimc(views, n_clusters, mask=mask, random_state=random_state, **params)
    setting = (f"{len(views)} views, missing_ratio={missing_ratio}, "
               f"{'shuffled' if shuffle else 'in file order'}, "
               + ", ".join(f"{k}={v}" for k, v in sorted(params.items())))
    return y_perm, res.labels, setting.rstrip(", ")
