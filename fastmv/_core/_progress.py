"""What a solver call shows and records: the log lines, the start record, long work's
feedback and the progress bars (the parts of the shared driver that talk to the user).

- progress: ``verbose`` lines through :mod:`logging` (logger ``"fastmv"``, one format for
  every solver) and an optional progress bar (tqdm, when installed);
- the record of a solve: :func:`public_call` (entered by every validated public function)
  logs one INFO record at the start of a solver's call, saying what it is about to do, and
  under :func:`feedback` (the command line) long work shows itself on stderr: a tqdm bar, or
  plain lines where tqdm is absent, once the work has run for a few seconds.
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import sys
import threading
import time
import warnings
from collections.abc import Mapping

import numpy as np

from ._compiling import collector_paused_while_compiling
from ._interrupts import interrupt_guard, sigint_deferred

__all__ = ["verbose_logging", "progress_bar", "logger", "public_call", "feedback",
           "describe_call"]

logger = logging.getLogger("fastmv")


def caller_stacklevel() -> int:
    """Stack level of the first frame outside fastmv, so warnings point at the user's call."""
    frame = sys._getframe(1)
    level = 1
    package = __name__.split(".", 1)[0] + "."   # the whole package, every subfolder
    while frame is not None and (frame.f_globals.get("__name__", "") + ".").startswith(package):
        frame = frame.f_back
        level += 1
    return level



# ------------------------------------------------------------------------------ logging
_handler_lock = threading.Lock()
_handler_users = 0
_handler: logging.Handler | None = None
_saved_level = logging.NOTSET


def _verbose_level(verbose) -> int:
    if verbose is True or (not isinstance(verbose, bool) and verbose >= 1):
        return logging.INFO
    return logging.DEBUG


def _attach_handler() -> bool:
    """Attach the shared stderr handler if logging is not configured (or it is ours)."""
    global _handler_users, _handler, _saved_level
    with _handler_lock:
        if _handler is None and logger.hasHandlers():
            return False
        if _handler is None:
            _handler = logging.StreamHandler(sys.stderr)
            _handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(_handler)
            _saved_level = logger.level
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
        _handler_users += 1
        return True


def _detach_handler() -> None:
    global _handler_users, _handler
    with _handler_lock:
        _handler_users -= 1
        if _handler_users == 0 and _handler is not None:
            logger.removeHandler(_handler)
            logger.setLevel(_saved_level)
            _handler = None


@contextlib.contextmanager
def verbose_logging(verbose):
    """Context for a solver call: yields ``log(message, *args)``.

    Messages go to the ``"fastmv"`` logger, at INFO when ``verbose`` is true and DEBUG
    otherwise, so an application that configures logging sees them either way at the level it
    chose. With ``verbose`` true and no handler configured anywhere (``logging`` not set up),
    a stderr handler is attached to the ``"fastmv"`` logger for the duration of the call (one
    shared handler across overlapping calls, removed by the last one to finish), so a script
    sees its progress lines without setting up logging; nothing of it survives the call.
    """
    level = _verbose_level(verbose)
    attached = False

    def log(message, *args):
        if logger.isEnabledFor(level):
            logger.log(level, message, *args)

    try:
        if level == logging.INFO:
            # a Ctrl-C between attaching and counting would leave the handler behind
            with sigint_deferred():
                attached = _attach_handler()
        yield log
    finally:
        if attached:
            with sigint_deferred():
                _detach_handler()


# ------------------------------------------------------------------------------ a call
class _Call:
    """What one public solver call shares with the loops inside it (one per call)."""

    def __init__(self, solver: str, summary: str):
        self.solver = solver
        self.summary = summary
        self.start = time.perf_counter()
        self.told_no_tqdm = False
        self.bars = 0


class _Feedback:
    """Where long work shows itself (:func:`feedback`): the stream, and the seconds a piece
    of work runs before it is shown and between two plain lines."""

    def __init__(self, stream, delay: float, interval: float):
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        with self.lock:
            print(text, file=self.stream or sys.stderr, flush=True)


class _StageLine:
    """The one line of a call that is still running after the delay: written by a timer
    thread, or by the call itself when it ends past the delay before that thread ran (on a
    busy machine a thread can wait longer than the call lasts); never twice."""

    def __init__(self, show: _Feedback, text: str):
        self.show, self.text = show, text
        self.start = time.perf_counter()
        self.lock = threading.Lock()
        self.written = False

    def __call__(self) -> None:
        with self.lock:
            if not self.written:
                self.written = True
                self.show.line(self.text)

    def overdue(self) -> bool:
        return time.perf_counter() - self.start >= self.show.delay


_call: contextvars.ContextVar = contextvars.ContextVar("fastmv_call", default=None)
_feedback: contextvars.ContextVar = contextvars.ContextVar("fastmv_feedback", default=None)


@contextlib.contextmanager
def feedback(stream=None, delay: float = 3.0, interval: float = 5.0):
    """Show long work on ``stream`` (default stderr) inside the ``with`` block.

    What the command line runs its solves under: a public function that is still running
    after ``delay`` seconds says what it is doing (one line), and the iterations and chunks
    show a tqdm bar when tqdm is installed, else one plain line at most every ``interval``
    seconds. Work shorter than ``delay`` prints nothing. The Python API stays silent unless
    asked (``progress=True``, ``verbose=True``).

    Parameters
    ----------
    stream : file-like, optional
        Where the lines go (default ``sys.stderr`` at the time of writing).
    delay : float, default 3.0
        Seconds of work before anything is shown.
    interval : float, default 5.0
        Seconds between two plain progress lines.

    Yields
    ------
    None

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with feedback(out):
    ...     pass
    >>> out.getvalue()
    ''
    """
    token = _feedback.set(_Feedback(stream, float(delay), float(interval)))
    try:
        yield
    finally:
        _feedback.reset(token)


def _solver_names() -> set:
    from ._spec import solver_specs  # noqa: PLC0415 (the registry imports the solvers)

    return set(solver_specs())


def _sizes(views) -> str:
    """``"2000 samples, 3 views (76+216+64 features)"`` from a solver's views argument."""
    if not isinstance(views, (list, tuple)) or not views:
        return "a stream of chunks" if views is not None else "no views"
    shapes = [getattr(V, "shape", None) for V in views]
    if not all(s is not None and len(s) == 2 for s in shapes):
        return f"{len(views)} views"
    rows = sorted({int(s[0]) for s in shapes})
    samples = (f"{rows[0]} samples" if len(rows) == 1 else
               f"{'/'.join(str(int(s[0])) for s in shapes)} rows")
    m = f"{len(views)} view{'s' if len(views) > 1 else ''}"
    if all(s[0] == s[1] == shapes[0][0] for s in shapes):  # transition matrices
        return f"{samples}, {m}, each {int(shapes[0][0])}\u00d7{int(shapes[0][0])}"
    return f"{samples}, {m} ({'+'.join(str(int(s[1])) for s in shapes)} columns)"


def describe_call(func, arguments: Mapping) -> str:
    """One line on what a solver call is about to do: the solver, the data's size, the
    number of clusters, the method (the docstring's first line) and the iteration budget.

    Parameters
    ----------
    func : callable
        The public solver function.
    arguments : mapping
        Its arguments as passed (defaults filled from the signature).

    Returns
    -------
    str
        The line.

    Examples
    --------
    >>> import numpy as np
    >>> def toy(X_list, n_clusters, max_iter=50):
    ...     "Toy clustering."
    >>> describe_call(toy, {"X_list": [np.zeros((8, 2)), np.zeros((8, 3))], "n_clusters": 2})
    'toy: 8 samples, 2 views (2+3 columns), 2 clusters: toy clustering, at most 50 iterations'
    """
    params = inspect.signature(func).parameters
    values = {k: p.default for k, p in params.items() if p.default is not p.empty}
    values.update(arguments)
    views = values.get("X_list", values.get("P_list"))
    parts = [_sizes(views)]
    if values.get("n_clusters") is not None:
        parts.append(f"{values['n_clusters']} clusters")
    doc = (func.__doc__ or "").strip().splitlines()
    what = doc[0].rstrip(".") if doc else func.__name__
    what = what[:1].lower() + what[1:] if what[1:2].islower() else what
    budget = values.get("max_iter")
    tail = f", at most {budget} iterations" if isinstance(budget, int) and budget > 0 else ""
    return f"{func.__name__}: {', '.join(parts)}: {what}{tail}"


@contextlib.contextmanager
def public_call(func, arguments: Mapping):
    """The scope of one call of a validated public function (see ``declare_params``).

    A solver's outermost call logs one INFO record through the ``"fastmv"`` logger at its
    start (:func:`describe_call`), silent unless the application shows INFO records; under
    :func:`feedback` an outermost call still running after the delay prints what it is
    doing. Calls nested inside another (a solver's own k-means) are neither. A Ctrl-C that
    surfaced inside a compiled call is re-raised as :class:`KeyboardInterrupt`. Inside an
    outermost call, Numba compiles with Python's cyclic collector paused
    (:func:`~fastmv._core._compiling.collector_paused_while_compiling`).
    """
    if _call.get() is not None:
        with interrupt_guard():
            yield
        return
    solver = func.__name__ in _solver_names()
    try:
        summary = describe_call(func, arguments) if solver else ""
    except Exception:  # an unreadable input: the validator names it, not the log line
        summary = func.__name__
    if solver:
        logger.info("%s", summary)
    show = _feedback.get()
    text = (summary if solver else _stage_line(func, arguments)) if show is not None else ""
    token = timer = stage = None
    try:
        # set up and torn down whole: a Ctrl-C inside would leave the call marked as running
        # (every later call nested in it) or a lock of the timer's events held
        with sigint_deferred():
            token = _call.set(_Call(func.__name__ if solver else "", summary))
            if show is not None:
                stage = _StageLine(show, f"{text}\u2026")
                timer = threading.Timer(show.delay, stage)
                timer.daemon = True
                timer.start()
        with interrupt_guard(), collector_paused_while_compiling():
            yield
    finally:
        with sigint_deferred():
            if token is not None:
                _call.reset(token)
            if timer is not None:
                timer.cancel()
                if stage.overdue():
                    stage()


def _stage_line(func, arguments: Mapping) -> str:
    """``"transition_matrix: row-stochastic transition matrix of one view's similarity
    graph"`` for a public function that is not a solver."""
    doc = (func.__doc__ or "").strip().splitlines()
    what = doc[0].rstrip(".") if doc else "working"
    what = what[:1].lower() + what[1:] if what[1:2].islower() else what
    return f"{func.__name__}: {what}"


# ------------------------------------------------------------------------------ progress
class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _LineBar(_NoBar):
    """Progress as plain lines (tqdm absent, under :func:`feedback`): ``"emvc: iteration
    10/100, 12.3 s, about 110 s left at this pace"`` at most every ``interval`` seconds,
    once the call has run for ``delay`` seconds."""

    def __init__(self, total, desc, show: _Feedback, since: float, unit: str):
        self.total, self.desc, self.show, self.unit = total, desc, show, unit
        self.since = since
        self.count = 0
        self.start = time.perf_counter()
        self.last = -np.inf
        self.postfix = ""

    def update(self, n: int = 1) -> None:
        self.count += n
        now = time.perf_counter()
        if now - self.since < self.show.delay or now - self.last < self.show.interval:
            return
        self.last = now
        elapsed = now - self.start
        text = f"{self.desc}: {self.unit} {self.count}"
        if self.total:
            text += f"/{self.total}"
        text += f", {elapsed:.1f} s"
        if self.total and self.count < self.total:
            left = elapsed / self.count * (self.total - self.count)
            text += f", at most about {left:.0f} s left at this pace"
        if self.postfix:
            text += f" ({self.postfix})"
        self.show.line(text)

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text


def _tqdm():
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    return tqdm


class _Counted:
    """A bar that counts itself open in the call (so that nested loops do not open two)."""

    def __init__(self, bar, call):
        self.bar, self.call = bar, call
        if call is not None:
            call.bars += 1

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_postfix_str(self, text: str) -> None:
        self.bar.set_postfix_str(text)

    def close(self) -> None:
        if self.call is not None:
            self.call.bars -= 1
            self.call = None
        self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def progress_bar(total: int | None, enabled: bool, desc: str, unit: str = "step"):
    """A tqdm progress bar when ``enabled`` and tqdm is installed, else a silent stand-in.

    Both have ``update(n=1)``, ``set_postfix_str(text)`` and ``close()`` and are context
    managers. ``enabled`` without tqdm warns once per call (a ``UserWarning`` naming the
    fix). Under :func:`feedback` (the command line) every loop shows itself once it has run
    a few seconds, ``enabled`` or not: a tqdm bar, or plain lines when tqdm is absent; a
    loop nested in one that already shows a bar shows nothing more.
    """
    call, show = _call.get(), _feedback.get()
    if show is not None:
        if call is not None and call.bars:
            return _NoBar()
        tqdm = _tqdm()
        since = call.start if call is not None else time.perf_counter()
        if tqdm is None:
            return _Counted(_LineBar(total, desc, show, since, unit), call)
        return _Counted(tqdm(total=total, desc=desc, leave=False, file=show.stream or sys.stderr,
                             delay=0 if enabled else show.delay), call)
    if not enabled:
        return _NoBar()
    tqdm = _tqdm()
    if tqdm is None:
        if call is None or not call.told_no_tqdm:
            if call is not None:
                call.told_no_tqdm = True
            warnings.warn(f"{call.solver if call is not None and call.solver else desc}: "
                          "progress=True shows a bar only with tqdm installed (pip install "
                          "tqdm); running without one (verbose=True logs a line per "
                          "iteration instead)", UserWarning, stacklevel=caller_stacklevel())
        return _NoBar()
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr)
