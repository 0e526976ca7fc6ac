"""Python's cyclic garbage collector paused while Numba compiles a kernel.

A cold first call compiles the kernels it needs, and Numba's typing and lowering create
millions of short-lived Python objects while doing so: the collector then runs hundreds of
times, each full collection walking every object of the process (docs/performance.md,
"First call"). Nothing the collector could free during a compilation matters to it, so
:func:`collector_paused_while_compiling` switches the collector off from the start of the
outermost compilation to its end, through Numba's ``numba:compile`` events, and on again
right after: a warm call (nothing to compile) never touches it.

Only what this module switched off is switched on again, so a collector the application
disabled stays disabled; the collector is on again when the scope ends whatever happened
inside it (an error, a Ctrl-C).
"""
from __future__ import annotations

import contextlib
import gc

__all__ = ["collector_paused_while_compiling"]


def _listener_type():
    from numba.core import event  # noqa: PLC0415 (numba is imported by the kernels anyway)

    class _PauseCollector(event.Listener):
        """Collector off between the start and the end of the outermost compilation."""

        def __init__(self):
            self.depth = 0          # compilations nest (a kernel's callees compile inside it)
            self.paused = False     # whether this listener switched the collector off

        def on_start(self, ev):
            if self.depth == 0 and gc.isenabled():
                gc.disable()
                self.paused = True
            self.depth += 1

        def on_end(self, ev):
            self.depth -= 1
            if self.depth <= 0:
                self.depth = 0
                self.release()

        def release(self):
            if self.paused:
                self.paused = False
                gc.enable()

    return event, _PauseCollector


@contextlib.contextmanager
def collector_paused_while_compiling():
    """The scope inside which every Numba compilation runs with the cyclic collector off.

    Notes
    -----
    Numba compiles under one process-wide lock, so the start and end events of two
    compilations never interleave; a compilation that another thread runs while this scope
    is open is paused too, which only delays its collections. Peak memory grows by the
    garbage one compilation leaves (tens of MB on a solver's first call), freed by the next
    collections.
    """
    event, listener_type = _listener_type()
    listener = listener_type()
    try:
        with event.install_listener("numba:compile", listener):
            yield
    finally:
        listener.release()
