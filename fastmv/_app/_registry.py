"""The solvers as the command line sees them: the registry's specs plus ``run``.

One :class:`SolverSpec` per registered solver, in :data:`REGISTRY`, built from the solver's
own spec (``fastmv/_<name>/_spec.py``: demo settings, side information, warm-up call,
pictures; see :mod:`fastmv._core._spec`) and the command-line parts kept here: how ``run``
calls it on a user's file and the options that simulate side information. A solver without
its own ``run`` gets the generic one (the views, ``n_clusters`` and the side-information
files given). ``run`` goes through the public API (``fastmv.mvmc``, ``fastmv.simulate``,
...), so the command line exercises what users call. A spec says:

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
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any

import numpy as np

import fastmv

from .._blocks._affinity import transition_matrices
from .._core._spec import Setting, solver_specs
from ..estimators import EMVC_LAMBDA
from ._estimator_docs import DATA_ARGS, SIDE_ARGS

__all__ = [
    "REGISTRY",
    "Option",
    "RunOutcome",
    "Setting",
    "SolverSpec",
    "hyper_parameters",
    "solver_function",
]

# Arguments the command line sets itself (``--seed``) or cannot take from text.
_NOT_FROM_TEXT = {"random_state", "callback"}


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option of ``run`` that is not a solver parameter.

    Examples
    --------
    >>> REGISTRY["opimc"].simulation[0].name
    'missing_ratio'
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


@dataclasses.dataclass(frozen=True)
class SolverSpec:
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


def _fraction(low_open, high_open):
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


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError("expected a positive integer")
    return value


def _prior(text):
    if text not in ("labels", "pairs", "none"):
        raise ValueError("expected one of labels, pairs, none")
    return text


def _n_clusters(params, y):
    c = params.pop("n_clusters", None)
    if c is None:
        if y is None:
            raise ValueError("--n_clusters is required: the data file has no labels")
        c = int(np.unique(y).size)
    return c


def _pairs_arg(side, name):
    return side.get(name)


def _describe_params(params):
    return "".join(f", {k}={v}" for k, v in params.items())


# --------------------------------------------------------------------------------- MVMC
def _mvmc_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    n_constraints = params.pop("n_constraints")
    simulate = params.pop("simulate", False)
    c = _n_clusters(params, y)
    ml, cl = side.get("must"), side.get("cannot")
    if ml is None and cl is None:
        if not simulate or y is None:
            raise ValueError("mvmc needs --must and/or --cannot pair files, or --simulate to "
                             "draw pairs from the data file's labels (--n_constraints, "
                             "default 5000)")
        n = y.size
        n_constraints = min(int(n_constraints), n * (n - 1) // 2)
        ml, cl = fastmv.simulate.pairwise_constraints(y, n_constraints, random_state=seed)
        setting = f"{n_constraints} simulated pairs"
    else:
        setting = f"{_count(ml)} must, {_count(cl)} cannot"
    res = fastmv.mvmc(views, c, ml, cl, random_state=seed, **params)
    return RunOutcome(setting + _describe_params(params), _scored(y, res.labels), res.labels,
                      res)


# --------------------------------------------------------------------------------- MVFL
def _pairs_from_labelled(y, ratio, seed):
    """All pairs among a random ``ratio`` of the samples (``simulate.pairs_from_labels``)."""
    return fastmv.simulate.pairs_from_labels(
        fastmv.simulate.partial_labels(y, ratio, random_state=seed))


def _mvfl_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    prior, ratio = params.pop("prior"), params.pop("label_ratio")
    simulate = params.pop("simulate", False)
    c = _n_clusters(params, y)
    given = {k: side[k] for k in ("labels", "must", "cannot") if side.get(k) is not None}
    kwargs = {}
    if given:
        if "labels" in given:
            kwargs["labels"] = given["labels"]
            setting = f"{int(np.sum(given['labels'] >= 0))} given labels"
        else:
            kwargs["must_link"], kwargs["cannot_link"] = given.get("must"), given.get("cannot")
            setting = f"{_count(kwargs['must_link'])} must, {_count(kwargs['cannot_link'])} cannot"
    elif prior == "none" or y is None or not simulate:
        setting = "no prior"
    elif prior == "labels":
        kwargs["labels"] = fastmv.simulate.partial_labels(y, ratio, random_state=seed)
        setting = f"{ratio:.0%} simulated labels"
    else:
        kwargs["must_link"], kwargs["cannot_link"] = _pairs_from_labelled(y, ratio, seed)
        setting = f"pairs among {ratio:.0%} (simulated)"
    res = fastmv.mvfl(views, c, random_state=seed, **kwargs, **params)
    return RunOutcome(setting + _describe_params(params), _scored(y, res.labels), res.labels,
                      res)


# --------------------------------------------------------------------------------- EMVC
def _emvc_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    normalize, sigma = params.pop("unit_rows"), params.pop("sigma")
    n_neighbors = params.pop("n_neighbors")
    c = _n_clusters(params, y)
    lam1, lam2 = params.pop("lam1"), params.pop("lam2")
    P_list = transition_matrices(views, sigma=sigma, n_neighbors=n_neighbors,
                                 normalize=normalize)
    res = fastmv.emvc(P_list, lam1, lam2, n_clusters=c, random_state=seed, **params)
    setting = f"lam1={lam1:g}, lam2={lam2:g}, sigma={sigma}" + _describe_params(params)
    return RunOutcome(setting, _scored(y, res.labels), res.labels, res)


def _parse_sigma(text):
    return text if text == "median" else float(text)


# ------------------------------------------------------------------------------- CMVNMF
def _view_pairs(pairs, name, n_views):
    """``(p, 4)`` rows ``(view_a, row_i, view_b, row_j)`` -> CMVNMF's dict of pairs."""
    if pairs is None:
        return {}
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 4:
        raise ValueError(f"--{name}: cmvnmf pairs need 4 columns (view_a, row_i, view_b, "
                         f"row_j), got shape {pairs.shape}")
    out = {}
    for a, b in sorted({(int(a), int(b)) for a, b in pairs[:, [0, 2]]}):
        if not (0 <= a < n_views and 0 <= b < n_views):
            raise ValueError(f"--{name}: view index out of range ({a}, {b}); the data has "
                             f"{n_views} views")
        sel = (pairs[:, 0] == a) & (pairs[:, 2] == b)
        out[(a, b)] = pairs[sel][:, [1, 3]].astype(np.int64)
    return out


def _cmvnmf_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    keep, ratio = params.pop("keep"), params.pop("constraint_ratio")
    simulate = params.pop("simulate", False)
    c = _n_clusters(params, y)
    m = len(views)
    if side.get("must") is not None or side.get("cannot") is not None or y is None \
            or not simulate:
        ml = _view_pairs(side.get("must"), "must", m)
        cl = _view_pairs(side.get("cannot"), "cannot", m)
        res = fastmv.cmvnmf(views, c, ml, cl, random_state=seed, **params)
        labels = {f"view{a}": lab for a, lab in enumerate(res.labels)}
        # one score per view, averaged (each view's cluster numbers matched on their own),
        # as metrics.evaluate and the CMVNMF estimator's score give it
        scored = [] if y is None or len({V.shape[0] for V in views}) > 1 else [
            (y, lab) for lab in res.labels]
        n_pairs = sum(len(p) for p in ml.values()) + sum(len(p) for p in cl.values())
        return RunOutcome(f"{n_pairs} given pairs" + _describe_params(params), scored, labels,
                          res)
    kept = int(round(keep * y.size))
    if kept < c:
        raise ValueError(f"--keep {keep:g} keeps about {kept} of the {y.size} rows per view, "
                         f"fewer than the {c} clusters; raise --keep")
    Xs, ys, index = fastmv.simulate.unmapped(views, y, keep=keep, random_state=seed)
    ml, cl = fastmv.simulate.inter_view_constraints(ys, ratio=ratio, random_state=seed)
    res = fastmv.cmvnmf(Xs, c, ml, cl, random_state=seed, **params)
    labels = {}
    for a, (idx, lab) in enumerate(zip(index, res.labels)):
        full = np.full(y.size, -1, dtype=np.int64)  # rows the simulation dropped: -1
        full[idx] = lab
        labels[f"view{a}"] = full
    setting = f"unmapped ({keep:.0%} kept), {ratio:.0%} pairs" + _describe_params(params)
    return RunOutcome(setting, list(zip(ys, res.labels)), labels, res)


# -------------------------------------------------------------------------------- OPIMC
def _opimc_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    missing_ratio = params.pop("missing_ratio")
    simulate = params.pop("simulate", False)
    c = _n_clusters(params, y)
    n = views[0].shape[0]
    mask = side.get("mask")
    if mask is None and y is not None and simulate and missing_ratio > 0:
        mask = fastmv.simulate.incomplete_mask(n, len(views), missing_ratio, random_state=seed)
        setting = f"{missing_ratio:.0%} missing (simulated)"
    elif mask is None:
        setting = "complete views"
    else:
        mask = np.asarray(mask)
        setting = f"given mask ({1 - mask.mean():.0%} missing)"
    # opimc visits the rows in a seeded random order itself (shuffle=True) and returns the
    # labels in the input's order
    res = fastmv.opimc(views, c, mask=mask, random_state=seed, **params)
    setting += (", shuffled" if params.get("shuffle", True) else "") + _describe_params(
        {k: v for k, v in params.items() if k != "shuffle"})
    return RunOutcome(setting, _scored(y, res.labels), res.labels, res)


# ------------------------------------------------------------------------------ helpers
def _count(pairs):
    return 0 if pairs is None else int(np.asarray(pairs).reshape(-1, 2).shape[0])


def _scored(y, labels):
    return [] if y is None else [(y, labels)]


def _parse_bool(text):
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _optional_int(text):
    return None if str(text).lower() == "none" else int(text)


_SIDE_ARG = {"must": "must_link", "cannot": "cannot_link", "labels": "labels", "mask": "mask"}


def _generic_run(name):
    """``run`` for a solver without its own: the views, ``n_clusters`` (or the file's number
    of classes) and the side-information files given, nothing simulated."""
    def run(data, side, params, seed):
        views, y = data
        params = dict(params)
        params.pop("simulate", False)   # nothing to simulate for a solver without options
        c = _n_clusters(params, y)
        kwargs = {_SIDE_ARG[k]: v for k, v in side.items() if v is not None}
        res = solver_function(name)(views, c, random_state=seed, **kwargs, **params)
        setting = (", ".join(f"given {k}" for k in kwargs) or "no side information")
        return RunOutcome(setting + _describe_params(params), _scored(y, res.labels),
                          res.labels, res)
    return run


# What ``run`` needs beyond the solver's spec, per solver (a solver without an entry gets
# the generic ``run`` and no simulation options).
_RUN = {
    "mvmc": dict(
        simulation=(Option("n_constraints", _positive_int, 5000,
                           "number of pairs drawn from the file's labels", simulated=True),),
        cli_defaults={}, run=_mvmc_run),
    "mvfl": dict(
        simulation=(Option("prior", _prior, "labels",
                           "what to draw from the file's labels: labels, pairs or none",
                           simulated=True),
                    Option("label_ratio", _fraction(True, False), 0.1,
                           "fraction of samples whose labels (or pairs among them) are "
                           "revealed", simulated=True)),
        cli_defaults={}, run=_mvfl_run),
    "emvc": dict(
        simulation=(Option("unit_rows", _parse_bool, False,
                           "scale each view's rows to unit norm before the transition "
                           "matrices (default false: fastmv.transition_matrix of the raw view, "
                           "as fastmv.EMVC(transition=True) and the README)"),
                    Option("sigma", _parse_sigma, "median",
                           "Gaussian width of the transition matrices (a number or median)"),
                    Option("n_neighbors", _optional_int, None,
                           "keep this many nearest neighbours per row (default: all)")),
        cli_defaults={"lam1": EMVC_LAMBDA, "lam2": EMVC_LAMBDA}, run=_emvc_run),
    "cmvnmf": dict(
        simulation=(Option("keep", _fraction(True, False), 0.95,
                           "fraction of rows each view keeps (rows dropped and permuted per "
                           "view, saved as -1)", simulated=True),
                    Option("constraint_ratio", _fraction(True, False), 0.05,
                           "inter-view pairs drawn, as a fraction of all cross pairs",
                           simulated=True)),
        cli_defaults={}, run=_cmvnmf_run),
    "opimc": dict(
        simulation=(Option("missing_ratio", _fraction(False, True), 0.4,
                           "fraction of each view's samples removed (0: complete views)",
                           simulated=True),),
        cli_defaults={}, run=_opimc_run),
}


def _cli_spec(spec):
    extra = _RUN.get(spec.name, {})
    return SolverSpec(
        name=spec.name, description=spec.description, demo_note=spec.demo_note,
        side=spec.side, simulation=extra.get("simulation", ()),
        cli_defaults=extra.get("cli_defaults", {}), demo=spec.demo,
        run=extra.get("run") or _generic_run(spec.name), warmup=spec.warmup,
        sparse=spec.sparse, plots=spec.plots)


class _Registry(MutableMapping):
    """``{name: SolverSpec}`` over the registered solvers, read anew on every access (a solver
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
