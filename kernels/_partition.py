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
    p = n_items // max(min_per_part, 1)
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


def _inlining(fn, helpers, name=None):
    """The Python function ``fn`` with the serial helpers it calls compiled into it: for
    ``njit`` to compile as one function instead of one per helper.

    On a cold first call every separately compiled helper costs a whole compilation pipeline,
    a Python wrapper and an LLVM module of its own, and its code is optimised again inside
    each caller; a helper called from one place needs none of that. Numba inlines the
    helpers' code where ``fn`` calls them (``inline="always"``), which moves no arithmetic,
    so the result is bit for bit that of the separately compiled helpers.

    Parameters
    ----------
    fn : function
        A plain Python function (a kernel before ``njit``, or a kernel's ``py_func``).
    helpers : sequence of numba dispatchers
        Serial helpers that ``fn``, or another helper in ``helpers``, calls by a
        module-level name (in its own module or another). Every such call, in ``fn`` and
        in the inlined helpers, is inlined; other calls are left as they are.
    name : str, optional
        The new function's name and qualified name (default: ``fn``'s).

    Returns
    -------
    function
        A new Python function with ``fn``'s code, whose names of the helpers resolve to
        inlined copies (the module's own functions and its namespace are unchanged).

    Notes
    -----
    Cost: none at run time. Use it on serial code only: inside a ``parallel=True`` kernel an
    inlined allocation would become a parfor of its own. The new function sees a copy of
    its module's names as they are when ``_inlining`` is called, so call it below everything
    the function and its helpers use.
    """
    spaces = {}                    # a copy of each module's names, the helpers' replaced

    def space(names):
        return spaces.setdefault(id(names), dict(names))

    home = space(fn.__globals__)
    inlined = {}
    for helper in helpers:
        h = helper.py_func
        body = types.FunctionType(h.__code__, space(h.__globals__), h.__name__,
                                  h.__defaults__, h.__closure__)
        inlined[id(helper)] = njit(**SERIAL, inline="always")(body)
    for names in spaces.values():
        for key, value in names.items():
            if id(value) in inlined:
                names[key] = inlined[id(value)]
    called = set(fn.__code__.co_names).union(*(h.py_func.__code__.co_names for h in helpers))
    for helper in helpers:
        if helper.py_func.__name__ not in called:
            raise ValueError(f"neither {fn.__name__} nor the other helpers call "
                             f"{helper.py_func.__name__}")
    name = name or fn.__name__
    copy = types.FunctionType(fn.__code__, home, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = name
    copy.__module__ = fn.__module__
    copy.__doc__ = fn.__doc__
    return copy


def _serial_copy(kernel, name, summary, inline=()):
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
    inline : sequence of numba dispatchers, optional
        Serial helpers compiled into the copy (:func:`_inlining`); the parallel kernel keeps
        calling them as functions.

    Returns
    -------
    function
        A plain Python function, for ``njit`` to compile.

    Notes
    -----
    Cost: none at run time; the serial kernel costs what the parallel one does on one thread.
    """
    copy = _inlining(kernel.py_func, inline, name)
    copy.__doc__ = f"{summary}\n\n    {kernel.py_func.__doc__}"
    return copy


@njit(**SERIAL)
def _zeros(shape):
    """``np.zeros(shape)`` in float64 as a serial helper for the parallel kernels of every
    family: ``np.zeros`` written inside a ``parallel=True`` kernel becomes a parfor of its
    own, which costs compilation time and nothing else."""
    out = np.empty(shape, np.float64)
    out[:] = 0.0
    return out


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
