"""Chunk sources of OPIMC: where the rows come from.

Each source yields ``(start, list of raw per-view row blocks, raw mask block or None)`` for
consecutive chunks of ``chunk_size`` rows: :class:`ArraySource` slices views held as arrays,
memmaps, CSR matrices or any row-sliceable object (h5py datasets) with a common ``n``;
:class:`StreamSource` re-cuts an iterable of ``(blocks, mask_block)`` pairs into chunks of
exactly ``chunk_size`` rows, so results do not depend on how a stream cuts its blocks.
:func:`release_pages` hands a memmap block's pages back to the OS once it has been read.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import mmap
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._core._validation import check_fits_in_memory, check_sparse_structure
from ..exceptions import InvalidParameterError

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def is_view(obj) -> bool:
    if sp.issparse(obj):
        return True
    try:
        shape = getattr(obj, "shape", None)
    except Exception:     # a view that cannot be read (a closed h5py file): named later
        return True
    return shape is not None and len(shape) == 2 and hasattr(obj, "__getitem__")


def looks_like_view(X) -> bool:
    """A view (array-like with 2 dimensions), as opposed to a ``(blocks, mask)`` chunk."""
    if is_view(X):
        return True
    if not isinstance(X, list):
        return False
    try:
        A = np.asarray(X)
    except (ValueError, TypeError):
        return False
    return A.ndim == 2 and A.dtype != object


@dataclasses.dataclass
class ViewSpec:
    m: int
    dims: list          # d_v, user order
    sparse: list        # bool per view, user order
    dtype: type         # chunk dtype (float32 only when every view is float32)


def is_one_shot(obj) -> bool:
    """Whether ``obj`` is an iterator (read once), told without calling ``iter()`` on it: a
    re-iterable source starts its stream again at every ``iter()``, which may cost a read."""
    return isinstance(obj, collections.abc.Iterator)


def _view_dtype(obj):
    if sp.issparse(obj):
        return np.dtype(obj.dtype)
    dt = getattr(obj, "dtype", None)
    try:
        return np.dtype(dt) if dt is not None else None
    except TypeError:
        return None


def check_view_dtype(dt, name):
    if dt is None:
        return
    if dt == object or np.dtype(dt).kind in "mM" or not (np.issubdtype(dt, np.number)
                                                         or dt == bool):
        raise InvalidParameterError(f"{name} must be numeric, got dtype {dt}")
    if np.issubdtype(dt, np.complexfloating):
        raise InvalidParameterError(f"{name} must be real, got complex values")


def _chunk_dtype(dtypes):
    return np.float32 if dtypes and all(dt == np.float32 for dt in dtypes) else np.float64


class ArraySource:
    """Views held as arrays / memmaps / CSR / row-sliceable objects of a common ``n``."""

    def __init__(self, X_list, mask, chunk_size, order=None):
        views = list(X_list)
        if not views:
            raise ValueError("X_list must hold at least one view")
        self.views = []
        dims, sparse, dtypes = [], [], []
        for v, X in enumerate(views):
            name = f"X_list[{v}]"
            _check_readable(X, name)
            if sp.issparse(X):
                if X.ndim != 2:
                    raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
                check_fits_in_memory((X.shape[0],), 24, "X_list", what=(
                    f"the row pointers, labels and visiting order of its {X.shape[0]} rows"))
                # checked whole (it is in memory): slicing a malformed matrix may silently
                # drop entries before the per-chunk check could see them
                X = check_sparse_structure(X, name)
            elif not is_view(X):
                try:
                    X = np.asarray(X)
                except Exception as exc:
                    raise TypeError(f"{name} must be a 2-D array, CSR matrix, memmap or "
                                    f"row-sliceable object, got {type(X).__name__}") from exc
                if X.ndim != 2:
                    raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
            dt = _view_dtype(X)
            check_view_dtype(dt, name)
            if any(not np.isfinite(a) for a in X.shape):   # a dask array of unknown chunks
                raise InvalidParameterError(f"{name} has an unknown number of rows (shape "
                                            f"{X.shape}): call compute_chunk_sizes() on it")
            shape = tuple(int(a) for a in X.shape)
            if shape[0] < 1 or shape[1] < 1:
                raise ValueError(f"{name} is empty (shape {shape})")
            if not sp.issparse(X):
                # a chunk of it is read dense (plus the next one, read ahead)
                check_fits_in_memory((2 * min(chunk_size, shape[0]), shape[1]), 8, name,
                                     what=f"chunks of {min(chunk_size, shape[0])} of its rows "
                                          f"of {shape[1]} values")
            dims.append(shape[1])
            sparse.append(sp.issparse(X))
            dtypes.append(dt if dt is not None else np.dtype(np.float64))
            self.views.append(X)
        ns = [int(X.shape[0]) for X in self.views]
        if len(set(ns)) > 1:
            raise ValueError(f"all views in X_list must have the same number of samples (rows); "
                             f"got {ns}")
        self.n = ns[0]
        # the n labels (int64) and the visiting order are the memory that grows with n
        check_fits_in_memory((self.n,), 16, "X_list",
                             what=f"the labels and visiting order of its {self.n} rows")
        self.spec = ViewSpec(len(views), dims, sparse, _chunk_dtype(dtypes))
        if mask is not None:
            if not (hasattr(mask, "shape") and hasattr(mask, "__getitem__")) or sp.issparse(mask):
                mask = np.asarray(mask)
            if tuple(mask.shape) != (self.n, self.spec.m):
                raise InvalidParameterError(f"mask must have shape (n, m) = ({self.n}, "
                                            f"{self.spec.m}), got {tuple(mask.shape)}")
        self.mask = mask
        self.dask = any(_is_dask(X) for X in self.views) or _is_dask(mask)
        self.chunk_size = chunk_size
        self.order = None
        if order is not None:
            # rows of the chunk at visit positions [a, b) are order[a:b], read in increasing
            # order (h5py needs increasing indices; memmaps read forwards)
            order = np.asarray(order, dtype=np.int32 if self.n < 2 ** 31 else np.int64)
            for a in range(0, self.n, chunk_size):
                order[a:a + chunk_size].sort()
            self.order = order

    def chunks(self):
        s = self.chunk_size
        for a in range(0, self.n, s):
            b = min(a + s, self.n)
            if self.order is None:
                blocks = [X[a:b] for X in self.views]
                mblock = None if self.mask is None else self.mask[a:b]
            else:
                rows = self.order[a:b]
                if self.dask:
                    blocks, mblock = self._dask_rows(rows, a, b)
                else:
                    blocks = [RowsOf(X, rows) if _gathers_in_place(X) else take_rows(X, rows)
                              for X in self.views]
                    mblock = None if self.mask is None else take_rows(self.mask, rows)
            yield a, blocks, mblock, None if self.order is None else self.order[a:b]

    def whole(self):
        """The item of :meth:`chunks` spanning every visit position, for views held in memory
        (NumPy arrays, scipy.sparse; the mask an array): the rows of every chunk, in the
        order the chunks visit them."""
        rows = self.order
        if rows is None:
            return 0, list(self.views), self.mask, None
        blocks = [RowsOf(X, rows) if _gathers_in_place(X) else X[rows] for X in self.views]
        return 0, blocks, None if self.mask is None else np.asarray(self.mask)[rows], rows

    def _dask_rows(self, rows, a, b):
        """The chunk's rows of every view and of the mask, the dask ones gathered by one
        ``dask.compute`` on the active scheduler (the others as for arrays)."""
        import dask  # noqa: PLC0415 (optional dependency, present whenever a dask array is)

        items = self.views + ([] if self.mask is None else [self.mask])
        lazy = [i for i, X in enumerate(items) if _is_dask(X)]
        try:
            computed = dask.compute(*[items[i][rows] for i in lazy])
        except Exception as exc:
            raise RuntimeError(f"computing the rows of visit positions {a}:{b} of X_list "
                               f"(dask) failed: {type(exc).__name__}: {exc}") from exc
        out = [None] * len(items)
        for i, value in zip(lazy, computed):
            out[i] = np.asarray(value)
        for i, X in enumerate(items):
            if out[i] is None:
                out[i] = take_rows(X, rows)
        m = len(self.views)
        return out[:m], (None if self.mask is None else out[m])


def _is_dask(obj) -> bool:
    return obj is not None and type(obj).__module__.split(".")[0] == "dask" and \
        hasattr(obj, "dask") and hasattr(obj, "chunks")


def _check_readable(X, name):
    """``X``'s shape and dtype can be read: an h5py dataset whose file was closed cannot."""
    try:
        X.shape, getattr(X, "dtype", None)  # noqa: B018 (the read is the check)
    except AttributeError:
        return
    except Exception as exc:
        raise InvalidParameterError(f"{name} cannot be read ({type(exc).__name__}: {exc}); "
                                    "an h5py dataset whose file was closed?") from exc


def _runs(rows):
    """``(start, stop)`` of the maximal runs of consecutive values in increasing ``rows``."""
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [rows.size]])
    return [(int(rows[i]), int(rows[j - 1]) + 1) for i, j in zip(starts, stops)]


class RowsOf(NamedTuple):
    """Rows ``rows`` of an in-memory dense view, not copied: the chunk builder gathers them
    from the view itself (one copy, into the chunk's layout, instead of two)."""

    view: np.ndarray
    rows: np.ndarray

    @property
    def shape(self):
        return (self.rows.shape[0], self.view.shape[1])


def _gathers_in_place(X) -> bool:
    """Dense NumPy views the builder can read rows from directly (C-contiguous floats)."""
    return type(X) is np.ndarray and X.flags.c_contiguous and X.dtype in (np.float32,
                                                                            np.float64)


def take_rows(X, rows):
    """Rows ``rows`` (increasing) of a view or mask: fancy indexing for in-memory arrays and
    CSR, else one slice per run of consecutive rows (any row-sliceable object; a memmap's
    pages are released after each run, as for a contiguous chunk)."""
    if sp.issparse(X):
        return X[rows]
    if type(X) is np.ndarray:
        return X[rows]
    parts = []
    for a, b in _runs(rows):
        block = X[a:b]
        parts.append(np.array(block, copy=True) if not sp.issparse(block) else block)
        release_pages(block)
    if any(sp.issparse(P) for P in parts):
        return sp.vstack([sp.csr_matrix(P) for P in parts], format="csr")
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


class StreamSource:
    """An iterable of ``(list of per-view row blocks, mask block or None)``, re-cut into chunks
    of exactly ``chunk_size`` rows (the last may be shorter), so the result does not depend on
    how the source cuts its blocks."""

    def __init__(self, iterable, chunk_size, max_passes):
        if max_passes > 1 and is_one_shot(iterable):
            raise ValueError("X_list is a one-shot iterator but max_iter > 1 passes: pass a "
                             "re-iterable object (each iter() starting the stream again) or "
                             "max_iter=1")
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
            if is_view(blocks) or not isinstance(blocks, (list, tuple)):
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
                    check_view_dtype(dt, name)
                    dims.append(int(B.shape[1]))
                    sparse.append(sp.issparse(B))
                    dtypes.append(dt)
                if not blocks:
                    raise ValueError("X_list (chunk stream): a chunk holds no views")
                self.spec = ViewSpec(len(blocks), dims, sparse, _chunk_dtype(dtypes))
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
                blocks[v] = self._checked_block(B, t, v)
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

    def _checked_block(self, B, t, v):
        """Every block, as it arrives, before anything stacks, slices or densifies it: its
        dtype numeric, a sparse block's index structure in range (scipy's slicing and
        stacking index without bounds checks: a 1-based block would be read out of bounds
        however the stream cuts its blocks) and canonical CSR, and the stream's precision."""
        name = f"X_list (chunk stream) item {t}, view {v}"
        check_view_dtype(_view_dtype(B), name)
        if sp.issparse(B):
            B = check_sparse_structure(B, name)
        self._check_precision(B, t, v)
        return B

    def _check_precision(self, B, t, v):
        """The stream's precision is fixed by its first block: a float32 first block makes
        every chunk float32, so a later block that float32 cannot hold exactly (float64,
        wide integers) is refused instead of being rounded."""
        if self.spec.dtype != np.float32:
            return
        dt = _view_dtype(B)
        if dt is not None and dt != np.float32 and not np.can_cast(dt, np.float32, "safe"):
            raise InvalidParameterError(
                f"item {t} of the chunk stream X_list: view {v} block is {dt}, but the "
                "stream's first block made it float32 (its precision is fixed by the first "
                "block: a float32 first block computes in float32); yield every block in one "
                "dtype, e.g. block.astype(np.float32) or float64 from the start")

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


def release_pages(block):
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
