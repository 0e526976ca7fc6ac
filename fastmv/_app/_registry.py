"""The solvers as the command line sees them: the registry's specs plus ``run``.

One :class:`CLISolver` per registered solver, in :data:`REGISTRY`, composed from the solver's
own spec (``fastmv/_<name>/_spec.py``: demo settings, side information, warm-up call,
pictures; see :mod:`fastmv._core._spec`) and its command-line part
(``fastmv/_<name>/_cli.py``: how ``run`` calls it on a user's file and the options that
simulate side information; see :mod:`fastmv._core._cli_parts`). A solver without a
``_cli.py`` gets the generic ``run`` (the views, ``n_clusters`` and the side-information
files given) and no extra options. ``run`` calls the public function (``fastmv.mvmc``, ...)
and ``fastmv.simulate``, so the command line exercises what users call. A spec says:

- ``side``: which side-information files ``run`` accepts (``must``, ``cannot``, ``labels``,
  ``mask``);
- ``demo(seed)``: the demo's settings on the embedded Handwritten data, each a
  :class:`Setting` whose ``solve`` is timed on its own;
- ``run(data, side, params, seed)``: one solve on a user's data, with the user's side
  information, without any (where the method allows), or, only when ``params["simulate"]``
  is true (``--simulate``), with side information simulated from the file's labels (the
  simulation options are the ``simulation`` entries with ``simulated=True``; the others
  build the input, e.g. EMVC's transition matrices);
- ``warmup(dtype, sparse)``: a tiny synthetic call that compiles (or loads from Numba's
  cache) the kernels the solver uses; the demo times it apart and ``python -m fastmv
  compile`` runs it for every variant the solver supports.

Saved labels are always in the input's sample order: OPIMC's shuffled stream is mapped
back, and CMVNMF saves one array per view in that view's row order.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
from collections.abc import Callable, MutableMapping

import fastmv

from .._core._cli_parts import (
    Option,
    RunOutcome,
    describe_params,
    n_clusters_from,
    scored_pairs,
)
from .._core._spec import Setting, solver_specs
from ._estimator_docs import DATA_ARGS, SIDE_ARGS

__all__ = [
    "REGISTRY",
    "CLISolver",
    "Option",
    "RunOutcome",
    "Setting",
    "hyper_parameters",
    "solver_function",
]

@dataclasses.dataclass(frozen=True)
class CLISolver:
    """A solver as the command line sees it (see the module docstring).

    Examples
    --------
    >>> REGISTRY["mvfl"].side
    ('labels', 'must', 'cannot')
    """

    name: str
    description: str
    demo_note: str
    side: tuple
    simulation: tuple
    cli_defaults: dict
    demo: Callable[[int], list]
    run: Callable[..., RunOutcome]
    warmup: Callable[..., None]
    sparse: bool = True
    plots: tuple = ()
    without_side: str = ""
    labels_suffix: str = ".npy"
    side_help: dict = dataclasses.field(default_factory=dict)
    check_pairs: Callable | None = None

    @property
    def function(self) -> Callable:
        """The public solver function (imported on first use)."""
        return solver_function(self.name)


def solver_function(name: str) -> Callable:
    """The public solver ``fastmv.<name>``.

    Examples
    --------
    >>> solver_function("emvc").__name__
    'emvc'
    """
    return getattr(fastmv, name)


def hyper_parameters(func: Callable) -> list:
    """Parameters of a solver function that are neither data nor side information.

    Examples
    --------
    >>> [p.name for p in hyper_parameters(fastmv.mvmc)][:3]
    ['n_clusters', 'C1', 'C2']
    """
    return [p for p in inspect.signature(func).parameters.values()
            if p.name not in DATA_ARGS | SIDE_ARGS]


_SIDE_ARG = {"must": "must_link", "cannot": "cannot_link", "labels": "labels", "mask": "mask"}


def _generic_run(name):
    """``run`` for a solver without its own: the views, ``n_clusters`` (or the file's number
    of classes) and the side-information files given, nothing simulated."""
    def run(data, side, params, seed):
        views, y = data
        params = dict(params)
        params.pop("simulate", False)   # nothing to simulate for a solver without options
        c = n_clusters_from(params, y)
        kwargs = {_SIDE_ARG[k]: v for k, v in side.items() if v is not None}
        res = solver_function(name)(views, c, random_state=seed, **kwargs, **params)
        setting = (", ".join(f"given {k}" for k in kwargs) or "no side information")
        return RunOutcome(setting + describe_params(params), scored_pairs(y, res.labels),
                          res.labels, res)
    return run


def _solver_cli(spec):
    """The solver's command-line module, ``_cli`` beside the module of its function
    (``SIMULATION``, ``CLI_DEFAULTS``, ``run``; see :mod:`fastmv._core._cli_parts`), or
    ``None`` when its folder has none."""
    name = spec.module.rpartition(".")[0] + "._cli"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


def _cli_spec(spec):
    cli = _solver_cli(spec)
    return CLISolver(
        name=spec.name, description=spec.description, demo_note=spec.demo_note,
        side=spec.side, simulation=cli.SIMULATION if cli else (),
        cli_defaults=cli.CLI_DEFAULTS if cli else {}, demo=spec.demo,
        run=cli.run if cli else _generic_run(spec.name), warmup=spec.warmup,
        sparse=spec.sparse, plots=spec.plots,
        without_side=getattr(cli, "WITHOUT_SIDE", f"{spec.name} runs without side information."),
        labels_suffix=getattr(cli, "LABELS_SUFFIX", ".npy"),
        side_help=getattr(cli, "SIDE_HELP", {}), check_pairs=getattr(cli, "check_pairs", None))


class _Registry(MutableMapping):
    """``{name: CLISolver}`` over the registered solvers, read anew on every access (a solver
    registered later appears); items set here (tests' stand-ins) hide the registry's."""

    def __init__(self):
        self._set = {}

    def __getitem__(self, name):
        if name in self._set:
            return self._set[name]
        spec = solver_specs()[name]
        return _cli_spec(spec)

    def __setitem__(self, name, value):
        self._set[name] = value

    def __delitem__(self, name):
        del self._set[name]

    def __iter__(self):
        return iter({**dict.fromkeys(solver_specs()), **dict.fromkeys(self._set)})

    def __len__(self):
        return len(set(solver_specs()) | set(self._set))


REGISTRY = _Registry()
