"""What a solver's command-line ``run`` is built from (``fastmv/_<name>/_cli.py``).

A solver folder's ``_cli.py`` holds the solver's own part of ``python -m fastmv run``:
``SIMULATION`` (its extra options, each an :class:`Option`), ``CLI_DEFAULTS`` (defaults the
command line sets where the function has none) and ``run(data, side, params, seed)``, which
returns a :class:`RunOutcome`. Optional: ``WITHOUT_SIDE`` (one sentence: what ``run`` does
without side-information files), ``LABELS_SUFFIX`` (the saved labels' file type, ``.npy``
unless said), ``SIDE_HELP`` (the help of a side-information option whose file layout is the
solver's own) and ``check_pairs(pairs, option, views)`` (checks such a pairs file, raising
``ValueError``; two columns of sample indices unless said). The text parsers of those
options and the helpers every ``run`` shares live here, below the solver folders;
:mod:`fastmv._app._registry` composes them with the solvers' specs.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Option", "RunOutcome"]


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option of ``run`` that is not a solver parameter.

    Examples
    --------
    >>> Option("n_constraints", positive_int, 5000, "pairs drawn").type("300")
    300
    """

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    simulated: bool = False  # side information drawn from the labels: only with --simulate


@dataclasses.dataclass
class RunOutcome:
    """What ``run`` reports: a short setting text, the (y_true, y_pred) pairs scored (empty
    without labels), the labels to save (an array in sample order, or a dict of per-view
    arrays), and the solver's result.

    Examples
    --------
    >>> RunOutcome("toy", [], np.zeros(3, dtype=np.int64), None).setting
    'toy'
    """

    setting: str
    scored: list
    labels: Any
    result: Any


def fraction_parser(low_open, high_open):
    """A text -> float converter for a fraction in [0, 1], ends open as asked."""
    def parse(text):
        value = float(text)
        lo = value > 0 if low_open else value >= 0
        hi = value < 1 if high_open else value <= 1
        if not (lo and hi):
            raise ValueError(f"expected a number in {'(' if low_open else '['}0, 1"
                             f"{')' if high_open else ']'}")
        return value
    parse.__name__ = "fraction"
    return parse


def positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError("expected a positive integer")
    return value


def n_clusters_from(params, y):
    c = params.pop("n_clusters", None)
    if c is None:
        if y is None:
            raise ValueError("--n_clusters is required: the data file has no labels")
        c = int(np.unique(y).size)
    return c


def describe_params(params):
    return "".join(f", {k}={v}" for k, v in params.items())


def pair_count(pairs):
    return 0 if pairs is None else int(np.asarray(pairs).reshape(-1, 2).shape[0])


def scored_pairs(y, labels):
    return [] if y is None else [(y, labels)]


def parse_bool(text):
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def optional_int(text):
    return None if str(text).lower() == "none" else int(text)
