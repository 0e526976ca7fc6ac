"""The compile options of every kernel, in one place.

Numba compiles each library function a kernel uses (``np.empty``, ``np.zeros``, ``min``,
``np.dot``, ...) once per signature *and per set of compile options of the calling kernel*:
its cache of compiled overloads is keyed by the caller's options. Kernels decorated with
different options (``nogil`` on some, not on others) therefore each compile their own copies
of the same small functions on a cold first call. Every kernel here uses :data:`SERIAL` or
:data:`PARALLEL` (plus ``fastmath`` where a kernel's docstring says it may reassociate), so
those copies are compiled once per process and shared.

``no_cfunc_wrapper``: Numba otherwise builds, for every compiled kernel, a C-callable
wrapper that only first-class function arguments use; no kernel is passed that way, and
skipping it saves compile time on every function of a cold first call
(docs/records/perf.md, "Cold first call").

For the same reason the kernels spell an allocation one way, ``np.empty(shape,
np.float64)`` (or ``np.int64``, or an input's dtype; always positional), and the serial ones
zero an array with ``out[:] = 0`` after ``np.empty``: ``np.empty(n)``, ``np.empty(n,
dtype=np.float64)`` and ``np.empty(n, np.float64)`` are three compilations to Numba (its
cache of compiled overloads is keyed by the keywords too), and ``np.zeros`` compiles three
library functions (``np.zeros``, the ``np.empty`` inside it and a fill) where the slice
assignment compiles none. (Inside a ``parallel=True`` kernel both would be parfors of their
own, so those kernels allocate in serial helpers.)
"""
from __future__ import annotations

__all__ = ["SERIAL", "PARALLEL", "INNER", "REASSOC"]

#: Options of every serial kernel and helper.
SERIAL = {"cache": True, "nogil": True, "no_cfunc_wrapper": True}

#: Options of every ``parallel=True`` kernel (its serial copy, if any, uses :data:`SERIAL`).
PARALLEL = {**SERIAL, "parallel": True}

#: Options of a helper that only other kernels call and that calls no library function (so
#: it shares nothing with them): no Python wrapper is built for it.
INNER = {**SERIAL, "no_cpython_wrapper": True}

#: ``fastmath`` flags of the kernels whose sums may be reassociated (SIMD) and contracted
#: (FMA); each such kernel says so in its docstring.
REASSOC = {"reassoc", "contract"}
