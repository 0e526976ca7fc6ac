"""Ctrl-C in a call that runs work on threads.

Python runs a SIGINT handler in the main thread between two bytecodes, wherever that thread
is, and the default handler raises :class:`KeyboardInterrupt` there. Inside the Python code
of :mod:`threading` and :mod:`concurrent.futures` (a semaphore's condition, an event, a
future's wait, an executor's submit) an exception at the wrong bytecode leaves a lock
acquired that nothing will release (the pool's workers then wait for it forever, and so does
the shutdown that joins them) or makes a ``with`` release a lock it no longer holds
(``RuntimeError: release unlocked lock``). So the code that drives threads from the main
thread runs under :func:`sigint_deferred`: a Ctrl-C is recorded there and handed to the
handler that was installed (raising :class:`KeyboardInterrupt` by default) at a point where
no lock is held: between two slices of a wait, or when the deferred section ends. Waits
under it are sliced (:func:`result_of`), so the interrupt still arrives within a fraction of
a second.

The tasks themselves learn that their caller stopped through :func:`check_cancelled` (an
event per task map, see :func:`cancel_scope`), so that a Ctrl-C does not wait for every
restart still queued or running on the pool.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import threading
import time

__all__ = ["Cancelled", "cancel_scope", "check_cancelled", "deferred_pool", "interrupt_guard",
           "result_of", "sigint_deferred"]

# Seconds between two looks at a recorded Ctrl-C while the main thread waits for a task.
_SLICE = 0.05


class _Recorder:
    """A SIGINT handler that only records the signal: it may run inside a lock's code, so it
    neither raises nor takes a lock (``list.append`` is atomic)."""

    def __init__(self, original):
        self.original = original
        self.signals: list = []

    def __call__(self, signum, frame):
        self.signals.append(signum)

    def deliver(self) -> None:
        """Hand what was recorded to the original handler, here (where the caller holds no
        lock): the default one raises :class:`KeyboardInterrupt`."""
        while self.signals:
            self.original(self.signals.pop(0), None)
        if isinstance(self.original, _Recorder):  # nested: the outer one delivers it now
            self.original.deliver()


class _Undeferred:
    """Stands in for a :class:`_Recorder` where nothing is deferred (another thread, or a
    SIGINT handler that is not Python's: ignored, or the default action)."""

    signals: tuple = ()

    def deliver(self) -> None:
        pass


_UNDEFERRED = _Undeferred()


@contextlib.contextmanager
def sigint_deferred():
    """Record a Ctrl-C that arrives in the body; deliver it to the original handler when the
    body ends (or earlier, at the body's own ``deliver()``); the original handler is
    reinstalled on the way out whatever happens.

    For the few statements that drive threads from the main thread (submitting tasks,
    waiting for them, shutting a pool down, starting or cancelling a timer): never for work
    itself, which would then not stop. Outside the main thread, or when SIGINT has no
    Python-level handler, the body runs as is.

    Yields
    ------
    object
        Its ``deliver()`` raises the recorded interrupt now (through the original handler).
    """
    if threading.current_thread() is not threading.main_thread():
        yield _UNDEFERRED
        return
    original = signal.getsignal(signal.SIGINT)
    if not callable(original):
        yield _UNDEFERRED
        return
    recorder = _Recorder(original)
    try:
        signal.signal(signal.SIGINT, recorder)
    except ValueError:  # not the main interpreter
        yield _UNDEFERRED
        return
    try:
        yield recorder
    finally:
        signal.signal(signal.SIGINT, original)
        recorder.deliver()


def result_of(future, sigint, every=None, check=None):
    """``future.result()``, waited for in slices under :func:`sigint_deferred`: between two
    slices a recorded Ctrl-C is delivered (``sigint.deliver()``), and every ``every``
    seconds ``check()`` is called (it raises to give up the wait)."""
    last = time.monotonic()
    while True:
        try:
            return future.result(timeout=_SLICE)
        except (TimeoutError, concurrent.futures.TimeoutError):
            if future.done():  # finished between the timeout and now, or raised TimeoutError
                return future.result()
        sigint.deliver()
        if check is not None and time.monotonic() - last >= every:
            last = time.monotonic()
            check()


class _DeferredPool:
    """A one-purpose view of a :class:`~concurrent.futures.ThreadPoolExecutor` whose
    ``submit`` and ``result`` run under :func:`sigint_deferred` (see :func:`deferred_pool`)."""

    def __init__(self, pool):
        self._pool = pool

    def submit(self, fn, *args):
        with sigint_deferred():
            return self._pool.submit(fn, *args)

    @staticmethod
    def result(future):
        with sigint_deferred() as sigint:
            return result_of(future, sigint)


@contextlib.contextmanager
def deferred_pool(max_workers):
    """A thread pool for a main thread that reads ahead (the next chunk or block while it
    works on this one): creating it, submitting to it, waiting for a result (in slices, so a
    Ctrl-C arrives within a fraction of a second) and shutting it down all run under
    :func:`sigint_deferred`, so an interrupt never lands inside the pool's locks.

    Yields
    ------
    object
        With ``submit(fn, *args)`` (a future) and ``result(future)``.

    Notes
    -----
    On the way out (normally, on an error or a Ctrl-C) tasks not started are cancelled and
    the one running is waited for: the reads ahead are bounded (one chunk or block), so this
    is prompt.
    """
    with sigint_deferred():
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)
    try:
        yield _DeferredPool(pool)
    finally:
        with sigint_deferred():
            pool.shutdown(wait=True, cancel_futures=True)


# A task run on a helper thread (:func:`fastmv._core._threads.task_map`) learns through this
# thread-local event that the caller's thread was interrupted.
_cancel = threading.local()


class Cancelled(Exception):
    """Raised inside a helper-thread task whose caller has stopped (interrupted or failed)."""


@contextlib.contextmanager
def cancel_scope(event):
    """Run the body as a task that :func:`check_cancelled` stops once ``event`` is set."""
    previous = getattr(_cancel, "event", None)
    _cancel.event = event
    try:
        yield
    finally:
        _cancel.event = previous


def check_cancelled() -> None:
    """Raise :class:`Cancelled` if this thread's task was cancelled (see :func:`cancel_scope`)."""
    event = getattr(_cancel, "event", None)
    if event is not None and event.is_set():
        raise Cancelled("the caller of this task stopped")


@contextlib.contextmanager
def interrupt_guard():
    """Re-raise a Ctrl-C that surfaced inside a compiled call as :class:`KeyboardInterrupt`.

    A SIGINT handled while a Numba dispatcher is running leaves the interpreter's exception
    set when the compiled function returns, and CPython then reports a ``SystemError``
    ("returned a result with an exception set") whose cause is the ``KeyboardInterrupt``.
    """
    try:
        yield
    except SystemError as exc:
        cause, seen = exc, 0
        while isinstance(cause, SystemError) and seen < 8:
            cause, seen = cause.__cause__ or cause.__context__, seen + 1
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt(*cause.args) from None
        raise
