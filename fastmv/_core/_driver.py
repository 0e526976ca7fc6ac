"""The one outer loop every iterative solver shares.

A solver is written as ``_prepare_<solver>()`` (validated data and parameters), a problem
object with a ``step()`` method, and a short public function that runs :func:`iterate` over
the problem and builds its result. This module owns everything the solvers have in common
around that loop, so that it is decided once:

- the convergence test (:func:`iterate` is the only place that compares against ``tol``);
- the callback rule: ``callback(info)`` with one :class:`IterationInfo`; returning ``True`` or
  raising :class:`StopIteration` stops the solve with ``converged=False``;
- progress and the record of a solve (``verbose`` lines, progress bars, the start record of
  :func:`public_call`, :func:`feedback`): :mod:`fastmv._core._progress`, re-exported here;
- Ctrl-C (:func:`interrupt_guard`, the cancellation of helper-thread tasks):
  :mod:`fastmv._core._interrupts`, re-exported here;
- timing, and the :class:`~fastmv.exceptions.ConvergenceWarning` at ``max_iter``.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..exceptions import ConvergenceWarning, DegenerateSolutionWarning
from ._interrupts import Cancelled, cancel_scope, check_cancelled, interrupt_guard
from ._progress import (
    caller_stacklevel,
    describe_call,
    feedback,
    logger,
    progress_bar,
    public_call,
    verbose_logging,
)

__all__ = ["Step", "IterationInfo", "Trace", "iterate", "callback_stops", "relative_change",
           "verbose_logging", "progress_bar", "logger", "interrupt_guard", "public_call",
           "feedback", "describe_call", "Cancelled", "cancel_scope", "check_cancelled"]

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


def warn_if_degenerate(labels, n_clusters: int, solver: str, hint) -> None:
    """The degenerate-answer promise: a :class:`~fastmv.exceptions.DegenerateSolutionWarning`
    when ``labels`` (one array, or one per view) use fewer than ``n_clusters`` distinct
    values, naming the cause and what to change (``hint``: the text, or a callable returning
    it when finding the cause costs work)."""
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
            text = hint() if callable(hint) else hint
            warnings.warn(f"{solver}: only {found} of n_clusters={n_clusters} clusters{where} "
                          f"hold samples; {text}", DegenerateSolutionWarning,
                          stacklevel=caller_stacklevel())
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
            progress: bool = False, warn: bool = True, progress_desc: str | None = None) -> Trace:
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
    progress_desc : str, optional
        Label of the progress bar (default ``solver``); a solver with several starts names
        the start (``"cmvnmf start 2/5"``), since each start's bar counts from 0 again.

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
            progress_bar(max_iter, progress, progress_desc or solver, "iteration") as bar:
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
            "answer", ConvergenceWarning, stacklevel=caller_stacklevel())
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
