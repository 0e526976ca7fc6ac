"""Dask input for the streaming solver: views that live in chunked stores or on a cluster.

:func:`is_dask_collection` recognises a ``dask.array`` (without importing Dask when the
caller never made one), and :class:`DaskChunkStream` turns a list of dask arrays (plus an
optional NumPy or dask mask) into the chunk stream that :func:`fastmv.opimc` reads: the
views' row blocks are computed by whatever scheduler is active (the threaded default, the
process pool, or a ``distributed.Client``), one block of every view per task group, and the
next ``prefetch`` blocks are requested while the current one is processed, so reading
overlaps compute while at most ``prefetch + 1`` blocks are in memory. The solver re-cuts the
stream into its own chunks, so results are identical to NumPy input with the same
``chunk_size`` and seed and ``shuffle=False``. This stream reads dask views in order
(``shuffle=False``); shuffled, the solver gathers each chunk's rows from the dask arrays
directly (``fastmv._opimc._sources.ArraySource``), in the visiting order of every other
random-access source.
"""
from __future__ import annotations

import collections

import numpy as np

from .._core._interrupts import deferred_pool
from ..exceptions import InvalidParameterError

__all__ = ["is_dask_collection", "DaskChunkStream"]


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a dask array (checked without importing dask)."""
    return type(obj).__module__.split(".")[0] == "dask" and hasattr(obj, "dask") \
        and hasattr(obj, "chunks")


def _compute(parts):
    import dask  # noqa: PLC0415 (optional dependency, present whenever a dask array is)
    return dask.compute(*parts)


class DaskChunkStream:
    """A re-iterable stream of ``(list of per-view blocks, mask block)`` from dask arrays.

    Parameters
    ----------
    views : list of dask.array.Array, shapes (n, d_v)
        The views, chunked along samples (rows). Views whose row chunks differ are rechunked
        to the first view's row chunks; column chunks are merged (one block spans all of a
        view's columns).
    mask : ndarray or dask.array.Array of shape (n, m), optional
        ``True`` where a sample is present in a view.
    prefetch : int, default 2
        Blocks requested ahead of the one being processed.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from fastmv._opimc._dask import DaskChunkStream
    >>> X = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(4, 2))
    >>> [blocks[0].shape for blocks, _ in DaskChunkStream([X, X])]
    [(4, 2), (2, 2)]
    """

    def __init__(self, views, mask=None, prefetch: int = 2):
        import dask.array as da  # noqa: PLC0415 (optional dependency)

        views = [v if is_dask_collection(v) else da.from_array(np.asarray(v)) for v in views]
        for v, X in enumerate(views):
            if X.ndim != 2:
                raise ValueError(f"X_list[{v}] must be 2-D, got {X.ndim}-D")
        n = views[0].shape[0]
        for v, X in enumerate(views):
            if X.shape[0] != n:
                raise ValueError("all views in X_list must have the same number of samples "
                                 f"(rows); got {[Y.shape[0] for Y in views]}")
        rows = views[0].chunks[0]
        self.views = [X.rechunk({0: rows, 1: -1}) for X in views]
        if mask is not None:
            if not is_dask_collection(mask):
                mask = np.asarray(mask)
            if tuple(mask.shape) != (n, len(views)):
                raise InvalidParameterError(f"mask must have shape (n, m) = ({n}, "
                                            f"{len(views)}), got {tuple(mask.shape)}")
            if is_dask_collection(mask):
                mask = mask.rechunk({0: rows, 1: -1})
        self.mask = mask
        self.bounds = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        self.prefetch = max(int(prefetch), 0)
        self.n = n

    def __len__(self):
        return len(self.bounds) - 1

    def _parts(self, b):
        parts = [X.blocks[b, 0] for X in self.views]
        if self.mask is not None and is_dask_collection(self.mask):
            parts.append(self.mask.blocks[b, 0])
        return parts

    def _mask_block(self, b, computed):
        if self.mask is None:
            return None
        if is_dask_collection(self.mask):
            return np.asarray(computed[-1])  # checked by the chunk builder, as a NumPy mask
        return self.mask[self.bounds[b]:self.bounds[b + 1]]

    def __iter__(self):
        m = len(self.views)
        with deferred_pool(1) as pool:
            pending = collections.deque()
            next_block = 0
            for b in range(len(self)):
                while next_block < len(self) and len(pending) <= self.prefetch:
                    pending.append(pool.submit(_compute, self._parts(next_block)))
                    next_block += 1
                try:
                    computed = pool.result(pending.popleft())
                except Exception as exc:
                    for f in pending:
                        f.cancel()
                    raise RuntimeError(f"computing rows {self.bounds[b]}:"
                                       f"{self.bounds[b + 1]} (dask block {b}) of X_list "
                                       f"failed: {type(exc).__name__}: {exc}") from exc
                yield [np.asarray(x) for x in computed[:m]], self._mask_block(b, computed)
