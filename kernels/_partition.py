"""The one partition helper of every kernel family.

Parallel kernels split their rows (or pairs, or chunks) into a fixed number of contiguous
parts that does not depend on the thread count, reduce per part, and add the parts' results
in part order: so a result depends on the number of threads only through which thread ran
which part, never through how the floating-point sums were grouped.
"""
from __future__ import annotations

import types

import numpy as np
from numba import njit, prange

__all__ = ["SERIAL_BELOW", "MAX_PARTS", "n_parts", "part_bounds", "part_range",
           "start_thread_pool", "sum_parts"]

#: Below this much work (multiply-adds, roughly) a kernel call runs on one thread: waking a
#: thread pool costs more than it saves (docs/performance.md "Figures behind the code's choices").
SERIAL_BELOW = 2 ** 20

#: Upper bound on the number of parts: enough to balance any realistic thread count.
MAX_PARTS = 64


@njit(cache=True)
def n_parts(n_items, min_per_part):
    """Number of parts for ``n_items`` items with at least ``min_per_part`` per part
    (at least 1, at most :data:`MAX_PARTS`); independent of the thread count.

    Notes
    -----
    Cost: O(1) arithmetic, no memory traffic.
    """
    if n_items <= 0:
        return 1
    p = n_items // max(min_per_part, 1)
    if p < 1:
        return 1
    if p > MAX_PARTS:
        return MAX_PARTS
    return p


@njit(cache=True)
def part_range(n_items, parts, part):
    """``(start, stop)`` of part ``part`` of ``parts`` contiguous, near-equal parts.

    Notes
    -----
    Cost: O(1) arithmetic, no memory traffic.
    """
    return (n_items * part) // parts, (n_items * (part + 1)) // parts


@njit(cache=True)
def part_bounds(n_items, parts):
    """All part boundaries: an int64 array of length ``parts + 1`` from 0 to ``n_items``.

    Notes
    -----
    Cost: writes ``8 (parts + 1)`` bytes, O(parts) integer operations.
    """
    bounds = np.empty(parts + 1, dtype=np.int64)
    for b in range(parts + 1):
        bounds[b] = (n_items * b) // parts
    return bounds


@njit(cache=True, nogil=True)
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
    total = np.zeros(partial.shape[1])
    for p in range(partial.shape[0]):
        for q in range(partial.shape[1]):
            total[q] += partial[p, q]
    return total


def _serial_copy(kernel, name, summary):
    """The Python function of a ``parallel=True`` kernel as a new function called ``name``, to
    be compiled without ``parallel=True``: its ``prange`` loops then run as ``range`` loops,
    the same parts in the same order, so the serial kernel computes exactly what the parallel
    one does and a call that uses only it never compiles the parallel one.

    A function of its own name because Numba's on-disk cache keys a compiled kernel by its
    function's qualified name and signature, not by ``parallel``: two dispatchers of one
    function would overwrite each other's cache entries.

    Parameters
    ----------
    kernel : numba dispatcher
        A ``parallel=True`` kernel whose parallel loops are ``prange`` loops over parts.
    name : str
        The new function's name (its module is the kernel's).
    summary : str
        First paragraph of the new docstring; the kernel's docstring follows.

    Returns
    -------
    function
        A plain Python function, for ``njit`` to compile.

    Notes
    -----
    Cost: none at run time; the serial kernel costs what the parallel one does on one thread.
    """
    fn = kernel.py_func
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__,
                              fn.__closure__)
    copy.__qualname__ = name
    copy.__module__ = fn.__module__
    copy.__doc__ = f"{summary}\n\n    {fn.__doc__}"
    return copy


@njit(cache=True)
def _zeros(shape):
    """``np.zeros(shape)`` in float64 as a serial helper for the parallel kernels of every
    family: ``np.zeros`` written inside a ``parallel=True`` kernel becomes a parfor of its
    own, which costs compilation time and nothing else."""
    return np.zeros(shape)


@njit(parallel=True, cache=True)
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
