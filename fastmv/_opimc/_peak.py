"""OPIMC's peak memory (docs/algorithms.md §5.7): bounded by the chunk, plus the ``n``
labels; checked before the first chunk is read."""
from __future__ import annotations

from .._core._memory import check_memory
from ._problem import KEEP_MAX_VALUES

__all__ = ["peak_bytes", "check_opimc"]

#: Chunks of ``s × D`` float64 values at a time: the one clustered, the one read ahead and
#: the rows read before they are laid out.
_CHUNK_COPIES = 3
#: Bytes per sample whatever the chunk: the int64 labels, the float32 bounds of the certified
#: sweeps (8), the visiting order (int64) and the mask.
_PER_SAMPLE = 32


def peak_bytes(n, D, chunk_size, n_clusters):
    """Peak bytes of :func:`fastmv.opimc` on ``n`` samples (None for a stream of unknown
    length) with ``D`` features over all views and chunks of ``chunk_size`` rows."""
    s = chunk_size if n is None else min(chunk_size, n)
    chunks = _CHUNK_COPIES * 8 * float(s) * (D + n_clusters)
    per_sample = 0 if n is None else _PER_SAMPLE * float(n)
    kept = 8 * float(n) * D if n is not None and n * D <= KEEP_MAX_VALUES else 0
    statistics = 8 * 4 * D * n_clusters
    return chunks + per_sample + kept + statistics


def check_opimc(dims, n, chunk_size, n_clusters):
    """Refuse :func:`fastmv.opimc` when its chunks (or the ``n`` labels) do not fit."""
    D = sum(dims)
    check_memory(peak_bytes(n, D, chunk_size, n_clusters),
                 f"opimc() with chunks of {chunk_size} rows of {D} features"
                 + ("" if n is None else f" over {n} samples"),
                 "lower chunk_size (memory grows with chunk_size × the views' features)")
