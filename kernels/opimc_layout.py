"""Chunk layout of OPIMC's streaming kernels (docs/algorithms.md §5): the named tuples every
streaming kernel takes, the start modes of :func:`fastmv.kernels.opimc.stream_chunk_iterate`,
and the functions that build a chunk's compact layout (:func:`stream_layout`, in NumPy, and
the kernels :func:`stream_gather_view` and :func:`stream_finish_rows`). See
:mod:`fastmv.kernels.opimc` for the layout itself.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ._checks import in_range
from ._options import INNER, REASSOC, SERIAL

__all__ = [
    "DenseRows",
    "SparseRows",
    "Statistics",
    "Nearest",
    "DistanceBounds",
    "START_FROM_LABELS",
    "START_FROM_CENTERS",
    "REPLACE_PREVIOUS",
    "stream_layout",
    "stream_gather_view",
    "stream_finish_rows",
]

# How stream_chunk_iterate starts a chunk.
START_FROM_LABELS = 0   # the given labels (first chunk); the chunk is added to the statistics
START_FROM_CENTERS = 1  # labels from the current centres; the chunk is added
REPLACE_PREVIOUS = 2    # labels from the centres; the labels given (the previous pass's, still
#                         held by the statistics) are replaced by the new ones


class DenseRows(NamedTuple):
    """The dense views of a chunk, compacted (present rows only), views in internal order."""

    values: np.ndarray       #: (Σ s_v d_v,) float32/64: row-major (s_v, d_v) blocks, view by view
    value_start: np.ndarray  #: (n_dense + 1,) int64: where each view's block starts in values
    rows: np.ndarray         #: (Σ s_v,) int64: the chunk row each stored row came from
    row_start: np.ndarray    #: (n_dense + 1,) int64: where each view's rows start in rows
    position: np.ndarray     #: (s, n_dense) int64: index in rows of (chunk row, view), -1 missing


class SparseRows(NamedTuple):
    """The sparse views of a chunk: one CSR matrix of ``s`` rows, global column indices."""

    data: np.ndarray     #: (nnz,) float32/64
    indices: np.ndarray  #: (nnz,) int64: rows of U / columns of R
    indptr: np.ndarray   #: (s + 1,) int64


class Statistics(NamedTuple):
    """What persists between chunks (all float64, updated in place)."""

    sums: np.ndarray     #: R (c, D): per-cluster sums of present rows
    counts: np.ndarray   #: T (m, c): per-cluster counts of present rows
    centers: np.ndarray  #: U (D, c): stacked per-view centres


class Nearest(NamedTuple):
    """Output of an assignment (float64 distances without the ``‖x‖²`` constant)."""

    labels: np.ndarray   #: (s,) int64: nearest centre
    best: np.ndarray     #: (s,) float64: D[i, labels[i]]
    second: np.ndarray   #: (s,) float64: second smallest D[i, k] (inf when c == 1)


class DistanceBounds(NamedTuple):
    """Per-row bounds on distances to the centres, filled by the chunk loop."""

    upper: np.ndarray    #: (s,) float64: ≥ the distance to the row's own centre
    lower: np.ndarray    #: (s,) float64: ≤ the distance to every other centre


def stream_layout(P, dense_dims):
    """Index arrays of the compact chunk layout from the chunk's presence mask.

    Not compiled: a few vectorised NumPy passes over the ``s × m`` mask, once per chunk (tens
    of microseconds for 1 000 rows), where compiling them cost about 0.3 s of OPIMC's cold
    first call (docs/records/perf.md, "Cold first call").

    Parameters
    ----------
    P : ndarray of shape (s, m), bool
        Presence of each chunk row in each view (internal order: dense views first).
    dense_dims : ndarray of shape (n_dense,), int64
        ``d_v`` of the dense views.

    Returns
    -------
    rows : ndarray of shape (Σ s_v,), int64
        Rows present in each dense view, view after view (:attr:`DenseRows.rows`).
    row_start : ndarray of shape (n_dense + 1,), int64
        Offsets into ``rows``.
    value_start : ndarray of shape (n_dense + 1,), int64
        Offsets of the compact blocks in the value buffer (``s_v d_v`` each).
    position : ndarray of shape (s, n_dense), int64
        Position of (row, dense view) in ``rows``, ``-1`` when missing.
    W : ndarray of shape (s, m), float64
        ``P`` as 0.0 / 1.0 weights.
    orphan : int
        First row present in no view, or -1.

    Notes
    -----
    O(s m) time.

    Cost: reads ``s m`` bytes (the mask) and writes ``8 (Σ s_v + s n_dense + s m)``; no flops.
    """
    P = np.asarray(P)
    dense_dims = np.asarray(dense_dims)
    if P.ndim != 2 or dense_dims.ndim != 1 or dense_dims.dtype.kind not in "iu":
        raise ValueError("stream_layout: P must be (s, m) and dense_dims a 1-d integer array")
    if dense_dims.shape[0] > P.shape[1] or (
            dense_dims.size and (dense_dims.min() < 0 or dense_dims.max() >= 2 ** 62)):
        raise ValueError("stream_layout: dense_dims must have at most m nonnegative entries")
    return _stream_layout(P != 0, dense_dims.astype(np.int64, copy=False))


def _stream_layout(P, dense_dims):
    """:func:`stream_layout` without its boundary checks, for ``fastmv.opimc``, which
    builds the chunk layout itself (``P`` bool, ``dense_dims`` int64)."""
    s = P.shape[0]
    nd = dense_dims.shape[0]
    by_view = np.ascontiguousarray(P.T)                # (m, s): each pass below runs along s
    flat = np.flatnonzero(by_view[:nd])                # view-major, rows ascending in each view
    row_start = np.searchsorted(flat, np.arange(nd + 1) * s).astype(np.int64)
    value_start = np.zeros(nd + 1, np.int64)
    np.cumsum(np.diff(row_start) * dense_dims, out=value_start[1:])
    views = flat // s
    rows = flat - views * s
    position = np.full((s, nd), -1, np.int64)
    position.reshape(-1)[rows * nd + views] = np.arange(flat.shape[0])
    seen = np.logical_or.reduce(by_view, axis=0)
    orphan = -1 if seen.all() else int(np.argmin(seen))
    # C order whatever P's: the kernels are compiled for C-contiguous weights
    return rows, row_start, value_start, position, np.array(P, np.float64, order="C"), orphan


#: Squared row norms between these are summed as they are (terms under 1e-308 that
#: underflow change such a norm by less than 1e-100 relative); others, and rows with
#: non-finite values, take the scale-safe route of ``_finish_row`` (divided by their
#: largest magnitude first).
SAFE_SQ_MIN = 1e-200
SAFE_SQ_MAX = 1e200


@njit(**INNER, fastmath=REASSOC)
def _sqsum(values, start, length):
    """``Σ_j values[start + j]²`` in float64 over ``length`` entries, reassociated (SIMD;
    rounding only); not inlined, which would drop the ``fastmath`` flags. Unsigned indices:
    Numba then emits no negative-index wraparound, which kept LLVM from vectorising the sum
    (half the speed)."""
    acc = 0.0
    first = np.uint64(start)
    for j in range(np.uint64(length)):
        x = np.float64(values[first + j])
        acc += x * x
    return acc


@njit(**SERIAL, inline="always")
def _finish_row(values, o, d, normalize):
    """Scale ``values[o:o + d]`` to unit norm in place when ``normalize``; return its status
    (0 finite, 1 all NaN, 2 other non-finite; a non-finite row is left as it is)."""
    if normalize:
        # the common case in one SIMD pass: a finite norm whose square neither overflowed nor
        # lost terms to underflow that matter (NaN and infinities fail the test)
        ssq = _sqsum(values, o, d)
        if SAFE_SQ_MIN < ssq < SAFE_SQ_MAX:
            inv = 1.0 / np.sqrt(ssq)
            for j in range(d):
                values[o + j] = np.float64(values[o + j]) * inv
            return 0
    big = 0.0                             # scale first: ‖x‖ = big ‖x / big‖ never overflows
    n_nan = 0                             # nor underflows, whatever the scale of the data
    n_inf = 0
    for j in range(d):
        x = np.float64(values[o + j])
        if np.isnan(x):
            n_nan += 1
        elif np.isinf(x):
            n_inf += 1
        else:
            if abs(x) > big:              # max() would compile one more function
                big = abs(x)
    if n_nan == d:
        return 1
    if n_nan > 0 or n_inf > 0:
        return 2
    if normalize and big > 0.0:
        ssq = 0.0
        for j in range(d):
            x = np.float64(values[o + j]) / big
            ssq += x * x
        scale = 1.0 / np.sqrt(ssq)
        for j in range(d):
            values[o + j] = (np.float64(values[o + j]) / big) * scale
    return 0


@njit(**SERIAL)
def stream_finish_rows(values, d, normalize, status):
    """Classify the gathered rows of one dense view of a chunk by their non-finite values and
    scale each finite row to unit ℓ2 norm, in place: the kernel half of
    :func:`stream_gather_view`, for rows NumPy has already copied into place (``np.take``
    reads any memory layout, so this kernel is compiled once per dtype, not once per layout
    of the input).

    Parameters
    ----------
    values : ndarray of shape (≥ s_v d,), float32 or float64
        The block: row ``r`` at ``values[r d:(r + 1) d]``; overwritten by the scaled rows
        when ``normalize`` (rows with non-finite values are left as they are).
    d : int
        Values per row (the view's dimension).
    normalize : bool
        Scale each finite row to unit ℓ2 norm (zero rows stay zero), scale-safe as in
        :func:`stream_gather_view`.
    status : ndarray of shape (s_v,), int8
        Written: 0 the row is finite; 1 every value is NaN (a missing row: drop it); 2
        anything else non-finite (some NaN, or an infinity): invalid input.

    Notes
    -----
    O(s_v d) time: one pass over a row for its norm (a reassociated, SIMD, float64 sum) and
    one to scale it, three for rows of extreme magnitude or with non-finite values.

    Cost: reads ``s_v d b`` bytes (``b`` the itemsize) and writes ``s_v d b`` when normalising;
    ``3 s_v d`` flops.
    """
    if d < 0 or values.shape[0] < status.shape[0] * d:
        raise ValueError("stream_finish_rows: values must hold s_v d values (d >= 0)")
    for r in range(status.shape[0]):
        status[r] = _finish_row(values, r * d, d, normalize)


@njit(**SERIAL)
def stream_gather_view(X, rows, normalize, out, status):
    """Copy the present rows of one dense view of a chunk into its compact block, each
    optionally scaled to unit ℓ2 norm, and classify them by their non-finite values.

    Parameters
    ----------
    X : ndarray of shape (s, d), float32 or float64
        The chunk of one dense view.
    rows : ndarray of shape (s_v,), int64
        Rows of ``X`` present in the view.
    normalize : bool
        Scale each kept row to unit ℓ2 norm (zero rows stay zero). Scale-safe: the norm is
        taken of the row divided by its largest magnitude, so 1e-300 or 1e300 rows give the
        unit rows of their unscaled copies, up to the rounding of the copies themselves.
    out : ndarray of shape (s_v d,), dtype of ``X``
        Written: ``out[r d:(r + 1) d] = X[rows[r]] / ‖X[rows[r]]‖`` (rows with non-finite
        values: copied as they are).
    status : ndarray of shape (s_v,), int8
        Written: 0 the row is finite; 1 every value is NaN (a missing row: drop it); 2
        anything else non-finite (some NaN, or an infinity): invalid input.

    Notes
    -----
    The copy, then :func:`stream_finish_rows` on it; ``fastmv.opimc`` copies with NumPy
    (``np.take``) and calls that kernel, on the thread that reads the next chunk while the
    current one is clustered.

    Cost: reads ``s_v d b`` bytes (``b`` the itemsize; the second pass of a row hits the cache)
    and writes ``s_v d b``; ``3 s_v d`` flops when normalising.
    """
    if (not in_range(rows, 0, X.shape[0]) or out.shape[0] < rows.shape[0] * X.shape[1]
            or status.shape[0] < rows.shape[0]):
        raise ValueError("stream_gather_view: rows must lie in [0, s), out hold s_v d values and "
                         "status s_v entries")
    d = X.shape[1]
    for r in range(rows.shape[0]):
        for j in range(d):
            out[r * d + j] = X[rows[r], j]
    stream_finish_rows(out, d, normalize, status[:rows.shape[0]])
