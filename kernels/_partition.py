"""The one partition helper of every kernel family.

Parallel kernels split their rows (or pairs, or chunks) into a fixed number of contiguous
parts that does not depend on the thread count, reduce per part, and add the parts' results
in part order: so a result depends on the number of threads only through which thread ran
which part, never through how the floating-point sums were grouped.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._options import PARALLEL, SERIAL

__all__ = ["SERIAL_BELOW", "MAX_PARTS", "n_parts", "part_bounds", "part_range",
           "start_thread_pool", "sum_parts"]

#: Below this much work (multiply-adds, roughly) a kernel call runs on one thread: waking a
#: thread pool costs more than it saves (docs/records/perf.md "Figures behind the code's choices").
SERIAL_BELOW = 2 ** 20

#: Upper bound on the number of parts: enough to balance any realistic thread count.
MAX_PARTS = 64


@njit(**SERIAL)
def n_parts(n_items, min_per_part):
    """Number of parts for ``n_items`` items with at least ``min_per_part`` per part
    (at least 1, at most :data:`MAX_PARTS`); independent of the thread count.

    Notes
    -----
    Cost: O(1) arithmetic, no memory traffic.
    """
    if n_items <= 0:
        return 1
    p = n_items // (min_per_part if min_per_part > 1 else 1)  # no Numba max: a compilation less
    if p < 1:
        return 1
    if p > MAX_PARTS:
        return MAX_PARTS
    return p


@njit(**SERIAL)
def part_range(n_items, parts, part):
    """``(start, stop)`` of part ``part`` of ``parts`` contiguous, near-equal parts.

    Notes
    -----
    Cost: O(1) arithmetic, no memory traffic.
    """
    return (n_items * part) // parts, (n_items * (part + 1)) // parts


@njit(**SERIAL)
def part_bounds(n_items, parts):
    """All part boundaries: an int64 array of length ``parts + 1`` from 0 to ``n_items``.

    Notes
    -----
    Cost: writes ``8 (parts + 1)`` bytes, O(parts) integer operations.
    """
    bounds = np.empty(parts + 1, np.int64)
    for b in range(parts + 1):
        bounds[b] = (n_items * b) // parts
    return bounds


@njit(**SERIAL)
def sum_parts(partial):
    """Column sums of per-part partial sums, the parts added in part order: the closing
    reduction of the kernels that accumulate per part (one float64 row per part).

    A serial kernel called by the parallel ones: the same reduction written as an array
    expression inside a ``parallel=True`` kernel becomes a parfor of its own, which costs
    compilation time and nothing else.

    Notes
    -----
    Cost: reads ``8 parts c`` bytes and writes ``8 c`` (``c`` columns); ``parts c`` additions.
    """
    total = np.empty(partial.shape[1], np.float64)
    total[:] = 0.0
    for p in range(partial.shape[0]):
        for q in range(partial.shape[1]):
            total[q] += partial[p, q]
    return total


@njit(**PARALLEL)
def start_thread_pool(n):
    """A trivial parallel loop (returns ``n``): running it makes Numba choose its threading
    layer, which :func:`numba.threading_layer` reports only after a parallel launch.

    Notes
    -----
    Cost: one parallel launch of ``n`` empty iterations; no memory traffic.
    """
    total = 0
    for i in prange(n):
        total += 1
    return total
