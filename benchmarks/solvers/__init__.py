"""Each solver's protocol in the benchmark scripts, declared beside the others in
``benchmarks/solvers/<name>.py`` (:func:`protocol`); the scripts take the solvers from the
registry (:data:`SOLVERS`).

A solver's module declares:

- ``DEFAULTS``: ``{setting: Setting}``, its rows of docs/defaults.md
  (``python -m benchmarks.defaults_table``; CMVNMF has two, with and without pairs);
- ``YARDSTICK`` and ``timed(views, y, seed, lam)`` -> :class:`Timed`, its time to solution
  (``python -m benchmarks.time_to_solution``);
- ``SCALING_SIZES`` and ``scaling_call(data, n, c)``, its time and memory against ``n``
  (``python -m benchmarks.scaling``);
- ``PAPER_VIEWS``: ``{dataset: view indices}``, the views its paper used, when not all.
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

from fastmv._core._spec import solver_specs

#: the registered solvers, in registry order
SOLVERS = tuple(solver_specs())


@dataclasses.dataclass(frozen=True)
class Setting:
    """One kind of row of docs/defaults.md: ``solve(views, y, seed, params)`` returns
    ``(truths, labellings)`` (one pair per scored view set) under the protocol, raising on
    refusal; ``side`` names the baseline it is compared with, ``reference`` the complete-data
    upper reference shown beside it."""

    label: str
    side: str
    solve: Callable
    paper_views: dict = dataclasses.field(default_factory=dict)
    reference: str | None = None


@dataclasses.dataclass
class Timed:
    """A timed solve: ``run(**overrides)`` solves under the protocol, ``truth`` the labels each
    returned labelling is scored against, ``yardstick_data`` what the yardstick reuses (the
    graphs built outside the timed call), ``record`` fields added to the record, and whether
    a self-tuned solve is timed again with the options its tuning chose."""

    run: Callable
    truth: list
    yardstick_data: object = None
    record: dict = dataclasses.field(default_factory=dict)
    retime_tuned: bool = True


def protocol(name):
    """The module ``benchmarks/solvers/<name>.py`` of the solver ``name``."""
    return importlib.import_module(f"{__name__}.{name}")


def settings():
    """Every solver's rows of docs/defaults.md, ``{setting: Setting}``, in registry order."""
    return {key: setting for name in solver_specs()
            for key, setting in protocol(name).DEFAULTS.items()}


def setting_solver(key):
    """The solver whose ``DEFAULTS`` hold the setting ``key``."""
    return next(name for name in solver_specs() if key in protocol(name).DEFAULTS)
