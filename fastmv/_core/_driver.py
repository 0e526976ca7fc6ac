"""The one outer loop every iterative solver shares.

A solver is written as ``_prepare_<solver>()`` (validated data and parameters), a problem
object with a ``step()`` method, and a short public function that runs :func:`iterate` over
the problem and builds its result. This module owns everything the solvers have in common
around that loop, so that it is decided once:

- the convergence test (:func:`iterate` is the only place that compares against ``tol``);
- the callback rule: ``callback(info)`` with one :class:`IterationInfo`; returning ``True`` or
  raising :class:`StopIteration` stops the solve with ``converged=False``;
- progress: ``verbose`` lines through :mod:`logging` (logger ``"fastmv"``, one format for
  every solver) and an optional progress bar (tqdm, when installed);
- timing, and the :class:`~fastmv.exceptions.ConvergenceWarning` at ``max_iter``.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..exceptions import ConvergenceWarning, DegenerateSolutionWarning

__all__ = ["Step", "IterationInfo", "Trace", "iterate", "callback_stops", "relative_change", "verbose_logging",
           "progress_bar", "logger", "interrupt_guard"]

logger = logging.getLogger("fastmv")

_TINY = np.finfo(np.float64).tiny
_EMPTY: Mapping = {}


class Step(NamedTuple):
    """What a problem's ``step()`` returns (a bare float means ``Step(objective=f)``)."""

    objective: float
    #: The solver's own stopping quantity; ``None``: the objective's relative change.
    residual: float | None = None
    #: Solver-specific view of the iterate, handed to callbacks (do not modify).
    state: Mapping | None = None


@runtime_checkable
class Problem(Protocol):
    """What :func:`iterate` drives: one iteration per ``step()``.

    Every solver folder has the same three names in its ``_solver`` module: ``_prepare``
    (validated data from the public function's arguments), a ``Problem`` class satisfying
    this protocol, and ``_solve`` (the problem or problems iterated by :func:`iterate`,
    then the result); the public function is ``_solve(_prepare(...), ...)``.
    """

    def step(self) -> Step | float:
        """One iteration; the objective after it (or a :class:`Step`)."""


class IterationInfo(NamedTuple):
    """The one argument every callback receives, after every iteration."""

    solver: str
    iteration: int
    objective: float
    residual: float
    elapsed: float
    state: Mapping


class Trace(NamedTuple):
    """What :func:`iterate` returns."""

    objective: np.ndarray
    residual: np.ndarray
    n_iter: int
    converged: bool
    stop_reason: str
    seconds: float


def relative_change(previous: float, current: float) -> float:
    """``|previous − current| / |previous|``, with ``|previous|`` floored at the smallest
    normal float (so a zero objective does not divide by zero)."""
    return abs(previous - current) / max(abs(previous), _TINY)


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
    attached = level == logging.INFO and _attach_handler()

    def log(message, *args):
        if logger.isEnabledFor(level):
            logger.log(level, message, *args)

    try:
        yield log
    finally:
        if attached:
            _detach_handler()


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


def progress_bar(total: int | None, enabled: bool, desc: str):
    """A tqdm progress bar when ``enabled`` and tqdm is installed, else a silent stand-in.

    Both have ``update(n=1)``, ``set_postfix_str(text)`` and ``close()`` and are context
    managers.
    """
    if not enabled:
        return _NoBar()
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr)


# ------------------------------------------------------------------------------ the loop
def _caller_stacklevel() -> int:
    """Stack level of the first frame outside fastmv, so warnings point at the user's call."""
    frame = sys._getframe(1)
    level = 1
    package = __name__.split(".", 1)[0] + "."   # the whole package, every subfolder
    while frame is not None and (frame.f_globals.get("__name__", "") + ".").startswith(package):
        frame = frame.f_back
        level += 1
    return level


# A task run on a helper thread (:func:`fastmv._threads.task_map`) learns through this
# thread-local event that the caller's thread was interrupted, so that a Ctrl-C does not wait
# for every restart still running on the pool to finish.
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


def warn_if_degenerate(labels, n_clusters: int, solver: str, hint: str) -> None:
    """The degenerate-answer promise: a :class:`~fastmv.exceptions.DegenerateSolutionWarning`
    when ``labels`` (one array, or one per view) use fewer than ``n_clusters`` distinct
    values, naming what to change (``hint``)."""
    parts = labels if isinstance(labels, (list, tuple)) else [labels]
    for v, lab in enumerate(parts):
        lab = np.asarray(lab)
        if lab.size == 0:
            continue
        # labels in [0, n_clusters): count them in O(n_clusters) memory (no sorted copy)
        found = (np.count_nonzero(np.bincount(lab, minlength=n_clusters))
                 if lab.dtype.kind in "iu" and lab.min() >= 0 else np.unique(lab).size)
        if lab.size >= n_clusters and found < n_clusters:
            where = f" in view {v}" if len(parts) > 1 else ""
            warnings.warn(f"{solver}: only {found} of n_clusters={n_clusters} clusters{where} "
                          f"hold samples; {hint}", DegenerateSolutionWarning,
                          stacklevel=_caller_stacklevel())
            return


def _as_step(value) -> Step:
    if isinstance(value, Step):
        return value
    return Step(objective=float(value))


def callback_stops(callback, info) -> bool:
    """Whether ``callback(info)`` asks to stop: it returned ``True`` (a Python or NumPy
    bool) or raised :class:`StopIteration`; the one reading of the callback rule."""
    try:
        stop = callback(info)
    except StopIteration:
        return True
    return stop is True or (isinstance(stop, np.bool_) and bool(stop))


def iterate(problem, *, solver: str, max_iter: int, tol: float,
            initial_objective: float | None = None, callback=None, verbose=False,
            progress: bool = False, warn: bool = True) -> Trace:
    """Run ``problem.step()`` until convergence, ``max_iter`` or a callback's stop.

    Parameters
    ----------
    problem : object
        Has ``step()`` returning a :class:`Step` or the objective as a float.
    solver : str
        Name used in log lines, callbacks and warnings.
    max_iter : int
        Maximum number of steps (``0``: none).
    tol : float
        Convergence when the step's residual is ``<= tol``. The residual is
        ``Step.residual`` when the problem gives one, else the objective's relative change
        from the previous step (from ``initial_objective`` for the first step; with no
        initial objective the first step cannot converge).
    initial_objective : float, optional
        Objective before the first step.
    callback : callable, optional
        ``callback(info)`` with an :class:`IterationInfo` after every step; returning
        ``True`` or raising :class:`StopIteration` ends the loop with ``converged=False``.
    verbose : bool or int
        Log one line per step at INFO (see :func:`verbose_logging`).
    progress : bool
        Show a progress bar over the steps (needs tqdm).
    warn : bool
        Emit a :class:`~fastmv.exceptions.ConvergenceWarning` when ``max_iter`` steps ran
        without convergence.

    Returns
    -------
    Trace
        Objective and residual per step, ``n_iter``, ``converged``, ``stop_reason``
        (``"converged"``, ``"max_iter"`` or ``"callback"``) and the loop's seconds.
    """
    objective, residual = [], []
    previous = np.inf if initial_objective is None else float(initial_objective)
    stop_reason = "max_iter"
    start = time.perf_counter()
    with verbose_logging(verbose) as log, \
            progress_bar(max_iter, progress, solver) as bar:
        for it in range(1, max_iter + 1):
            check_cancelled()
            with interrupt_guard():
                step = _as_step(problem.step())
            f = float(step.objective)
            if step.residual is not None:
                r = float(step.residual)
            elif np.isfinite(previous):
                r = relative_change(previous, f)
            else:
                r = np.inf
            previous = f
            objective.append(f)
            residual.append(r)
            elapsed = time.perf_counter() - start
            # the first step of a solver without an initial objective has no residual yet
            log("%s: iter %4d  objective %.8e  residual %s  elapsed %.2fs",
                solver, it, f, f"{r:.3e}" if np.isfinite(r) else "-", elapsed)
            bar.update(1)
            if callback is not None:
                info = IterationInfo(solver, it, f, r, elapsed,
                                     step.state if step.state is not None else _EMPTY)
                if callback_stops(callback, info):
                    stop_reason = "callback"
                    break
            if r <= tol:
                stop_reason = "converged"
                break
    seconds = time.perf_counter() - start
    n_iter = len(objective)
    if stop_reason == "max_iter" and warn and max_iter > 0:
        warnings.warn(
            f"{solver} stopped at max_iter={max_iter} before reaching tol={tol:g} "
            f"(last residual {residual[-1]:.3g}); raise max_iter or tol for a converged "
            "answer", ConvergenceWarning, stacklevel=_caller_stacklevel())
    return Trace(objective=np.asarray(objective, dtype=np.float64),
                 residual=np.asarray(residual, dtype=np.float64), n_iter=n_iter,
                 converged=stop_reason == "converged", stop_reason=stop_reason,
                 seconds=seconds)


def state_view(**arrays: Any) -> Mapping:
    """A read-only mapping of the given arrays for callbacks (each array made read-only
    through a view, so a callback cannot change the solver's iterate)."""
    out = {}
    for key, value in arrays.items():
        if isinstance(value, np.ndarray):
            value = value.view()
            value.flags.writeable = False
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            views = []
            for v in value:
                v = v.view()
                v.flags.writeable = False
                views.append(v)
            value = views
        out[key] = value
    return out
