"""The solvers the command line knows: demo settings, side information and warm-up calls.

One :class:`SolverSpec` per solver, in :data:`REGISTRY`. Everything here goes through the
public API (``fastmv.mvmc``, ``fastmv.simulate``, ...), so the command line exercises what
users call. A spec says:

- ``side``: which side-information files ``run`` accepts (``must``, ``cannot``, ``labels``,
  ``mask``);
- ``demo(seed)``: the demo's settings on the embedded Handwritten data, each a
  :class:`Setting` whose ``solve`` is timed on its own;
- ``run(data, side, params, seed)``: one solve on a user's data, with the user's side
  information or, when none is given and the file has labels, side information simulated
  from the labels (the simulation options are declared in ``simulation``);
- ``warmup(dtype, sparse)``: a tiny synthetic call that compiles (or loads from Numba's
  cache) the kernels the solver uses; the demo times it apart and ``python -m fastmv
  compile`` runs it for every variant the solver supports.

Saved labels are always in the input's sample order: OPIMC's shuffled stream is mapped
back, and CMVNMF saves one array per view in that view's row order.

It is the one explicit registry of the five solvers for the command line, one small section
per solver; the warm-up calls live in :mod:`fastmv._warmup`.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

import fastmv

from . import _warmup
from ._affinity import transition_matrices
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
class Setting:
    """One row of the demo: ``solve()`` returns ``(pairs, result)`` where ``pairs`` is a list
    of ``(y_true, y_pred)`` whose metrics are averaged into the row.

    Examples
    --------
    >>> s = Setting("toy", lambda: ([(np.array([0, 1]), np.array([1, 0]))], None))
    >>> s.label, len(s.solve()[0])
    ('toy', 1)
    """

    label: str
    solve: Callable[[], tuple]


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


def _lam3(value):
    """MVFL's prior weight for the demo, unless the solver picks it itself (default None)."""
    default = inspect.signature(fastmv.mvfl).parameters["lam3"].default
    return {} if default is None else {"lam3": value}


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
def _mvmc_demo(seed):
    views, y = fastmv.datasets.load_handwritten(["fou", "fac", "zer"])
    settings = []
    for p in (1000, 5000):
        ml, cl = fastmv.simulate.pairwise_constraints(y, p, random_state=seed)

        def solve(ml=ml, cl=cl):
            res = fastmv.mvmc(views, 10, ml, cl, random_state=seed)
            return [(y, res.labels)], res
        settings.append(Setting(f"{p} pairs", solve))
    return settings


def _mvmc_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    n_constraints = params.pop("n_constraints")
    c = _n_clusters(params, y)
    ml, cl = side.get("must"), side.get("cannot")
    if ml is None and cl is None:
        if y is None:
            raise ValueError("mvmc needs --must and/or --cannot pair files (the data file has "
                             "no labels to simulate pairs from)")
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


def _mvfl_demo(seed):
    views, y = fastmv.datasets.load_handwritten(["fou", "fac", "zer"])

    def none():
        res = fastmv.mvfl(views, 10, random_state=seed)
        return [(y, res.labels)], res

    lab = fastmv.simulate.partial_labels(y, 0.1, random_state=seed)

    def labels():
        res = fastmv.mvfl(views, 10, labels=lab, random_state=seed, **_lam3(100.0))
        return [(y, res.labels)], res

    ml, cl = _pairs_from_labelled(y, 0.1, seed)

    def pairs():
        res = fastmv.mvfl(views, 10, must_link=ml, cannot_link=cl, random_state=seed,
                          **_lam3(0.01))
        return [(y, res.labels)], res

    tag = {"labels": "10% labels", "pairs": "pairs in 10%"}
    if _lam3(1.0):
        tag = {"labels": "10% labels, lam3=100", "pairs": "pairs in 10%, lam3=0.01"}
    return [Setting("no prior", none), Setting(tag["labels"], labels),
            Setting(tag["pairs"], pairs)]


def _mvfl_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    prior, ratio = params.pop("prior"), params.pop("label_ratio")
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
    elif prior == "none" or y is None:
        setting = "no prior"
    elif prior == "labels":
        kwargs["labels"] = fastmv.simulate.partial_labels(y, ratio, random_state=seed)
        setting = f"{ratio:.0%} simulated labels"
    else:
        kwargs["must_link"], kwargs["cannot_link"] = _pairs_from_labelled(y, ratio, seed)
        setting = f"pairs among {ratio:.0%} (simulated)"
    if "lam3" not in params and (kwargs.get("must_link") is not None
                                 or kwargs.get("cannot_link") is not None):
        params.update(_lam3(0.01))  # pairs need a small prior weight (see fastmv.mvfl)
    elif "lam3" not in params and "labels" in kwargs:
        params.update(_lam3(100.0))
    res = fastmv.mvfl(views, c, random_state=seed, **kwargs, **params)
    return RunOutcome(setting + _describe_params(params), _scored(y, res.labels), res.labels,
                      res)


# --------------------------------------------------------------------------------- EMVC
def _emvc_demo(seed):
    rng = np.random.default_rng(seed)
    views, y = fastmv.datasets.load_handwritten(["fou", "pix"])
    idx = np.sort(np.concatenate([rng.choice(np.flatnonzero(y == k), 50, replace=False)
                                  for k in np.unique(y)]))
    views, y = [X[idx] for X in views], y[idx]
    settings = []
    for corrupted in (False, True):
        Xs = (fastmv.simulate.corrupt(views, "samples", 0.2, random_state=seed) if corrupted
              else views)
        P_list = transition_matrices(Xs)
        tag = "20% corrupt" if corrupted else "clean"

        def mean(P_list=P_list):
            P = sum(P_list) / len(P_list)
            return [(y, fastmv.markov_spectral_clustering(P, 10, random_state=seed))], None

        def solve(P_list=P_list):
            res = fastmv.emvc(P_list, 0.01, 0.01, n_clusters=10, random_state=seed)
            return [(y, res.labels)], res
        settings += [Setting(f"{tag}: mean of P_v", mean), Setting(f"{tag}: EMVC", solve)]
    return settings


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
def _cmvnmf_demo(seed):
    names = ["fou", "pix", "zer"]
    views, y = fastmv.datasets.load_handwritten(names)
    Xs, ys, _ = fastmv.simulate.unmapped(views, y, keep=0.95, random_state=seed)
    # 2% of the cross pairs (216 600 pairs) already tie the views (ACC 1.0, as 5% did) at
    # half the constrained setting's time
    ml, cl = fastmv.simulate.inter_view_constraints(ys, ratio=0.02, random_state=seed)
    # Fewer starts than the default n_init=5 (with it these two rows took 7.7 s of the demo
    # on an idle machine; docs/cmvnmf.md "The demo's settings", seeds 0-4): without pairs
    # one start with tol=1e-4 converges (1e-6 is not reached in 300 sweeps) and scores above
    # five starts on every seed (per-view NMF moves away from its k-means start; more sweeps
    # and starts only lower the objective); with pairs three starts give ACC 1.0 on every
    # seed, two do not.

    def unconstrained():
        res = fastmv.cmvnmf(Xs, 10, {}, {}, n_init=1, tol=1e-4, random_state=seed)
        return list(zip(ys, res.labels)), res

    def constrained():
        res = fastmv.cmvnmf(Xs, 10, ml, cl, n_init=3, random_state=seed)
        return [(np.concatenate(ys), np.concatenate(res.labels))], res

    return [Setting("no pairs, per view (1 start, tol 1e-4)", unconstrained),
            Setting("2% pairs, views jointly (3 starts)", constrained)]


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
    c = _n_clusters(params, y)
    m = len(views)
    if side.get("must") is not None or side.get("cannot") is not None or y is None:
        ml = _view_pairs(side.get("must"), "must", m)
        cl = _view_pairs(side.get("cannot"), "cannot", m)
        res = fastmv.cmvnmf(views, c, ml, cl, random_state=seed, **params)
        labels = {f"view{a}": lab for a, lab in enumerate(res.labels)}
        scored = ([] if y is None else
                  [(np.concatenate([y] * m), np.concatenate(res.labels))])
        n_pairs = sum(len(p) for p in ml.values()) + sum(len(p) for p in cl.values())
        return RunOutcome(f"{n_pairs} given pairs" + _describe_params(params), scored, labels,
                          res)
    Xs, ys, index = fastmv.simulate.unmapped(views, y, keep=keep, random_state=seed)
    ml, cl = fastmv.simulate.inter_view_constraints(ys, ratio=ratio, random_state=seed)
    res = fastmv.cmvnmf(Xs, c, ml, cl, random_state=seed, **params)
    labels = {}
    for a, (idx, lab) in enumerate(zip(index, res.labels)):
        full = np.full(y.size, -1, dtype=np.int64)  # rows the simulation dropped: -1
        full[idx] = lab
        labels[f"view{a}"] = full
    setting = f"unmapped ({keep:.0%} kept), {ratio:.0%} pairs" + _describe_params(params)
    return RunOutcome(setting, [(np.concatenate(ys), np.concatenate(res.labels))], labels, res)


# -------------------------------------------------------------------------------- OPIMC
def _opimc_demo(seed):
    views, y = fastmv.datasets.load_handwritten(["fou", "fac", "kar", "pix", "zer"])
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size)
    views, y = [X[perm] for X in views], y[perm]
    mask = fastmv.simulate.incomplete_mask(y.size, len(views), 0.4, random_state=seed)
    settings = []
    for passes in (1, 10):
        def solve(passes=passes):
            res = fastmv.opimc(views, 10, mask=mask, alpha=0.1, chunk_size=50,
                               random_state=seed, **_warmup.opimc_passes(passes))
            return [(y, res.labels)], res
        settings.append(Setting(f"{passes} pass{'es' if passes > 1 else ''}", solve))
    return settings


def _opimc_run(data, side, params, seed):
    views, y = data
    params = dict(params)
    missing_ratio = params.pop("missing_ratio")
    c = _n_clusters(params, y)
    n = views[0].shape[0]
    mask = side.get("mask")
    if mask is None and y is not None and missing_ratio > 0:
        mask = fastmv.simulate.incomplete_mask(n, len(views), missing_ratio, random_state=seed)
        setting = f"{missing_ratio:.0%} missing (simulated)"
    elif mask is None:
        setting = "complete views"
    else:
        mask = np.asarray(mask)
        setting = f"given mask ({1 - mask.mean():.0%} missing)"
    # opimc visits the rows in a random order itself (shuffle=True) and returns the labels
    # in the input's sample order
    res = fastmv.opimc(views, c, mask=mask, random_state=seed, **params)
    labels = res.labels
    setting += (", shuffled" if params.get("shuffle", True) else "") + _describe_params(
        {k: v for k, v in params.items() if k != "shuffle"})
    return RunOutcome(setting, _scored(y, labels), labels, res)


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


REGISTRY = {
    "mvmc": SolverSpec(
        name="mvmc",
        description="multi-view matrix completion with must-link / cannot-link pairs",
        demo_note="Handwritten fou+fac+zer (n=2000), random pairs, C1=100, C2=1, k=100",
        side=("must", "cannot"),
        simulation=(Option("n_constraints", int, 5000,
                           "pairs simulated from the file's labels when no --must/--cannot "
                           "file is given"),),
        cli_defaults={}, demo=_mvmc_demo, run=_mvmc_run, warmup=_warmup.mvmc_warmup),
    "mvfl": SolverSpec(
        name="mvfl",
        description="joint view/feature selection with partial labels or pairs",
        demo_note="Handwritten fou+fac+zer (n=2000), lam1=lam2=1e-3",
        side=("labels", "must", "cannot"),
        simulation=(Option("prior", str, "labels",
                           "side information simulated from the file's labels when no file "
                           "is given: labels, pairs or none"),
                    Option("label_ratio", float, 0.1,
                           "fraction of samples whose labels (or pairs among them) are "
                           "simulated")),
        cli_defaults={}, demo=_mvfl_demo, run=_mvfl_run, warmup=_warmup.mvfl_warmup),
    "emvc": SolverSpec(
        name="emvc",
        description="error-robust Markov-chain clustering of per-view transition matrices",
        demo_note="Handwritten fou+pix, 500-sample subsample, lam1=lam2=0.01",
        side=(),
        simulation=(Option("unit_rows", _parse_bool, True,
                           "scale each view's rows to unit norm before the transition "
                           "matrices"),
                    Option("sigma", _parse_sigma, "median",
                           "Gaussian width of the transition matrices (a number or median)"),
                    Option("n_neighbors", _optional_int, None,
                           "keep this many nearest neighbours per row (default: all)")),
        cli_defaults={"lam1": 0.01, "lam2": 0.01},
        demo=_emvc_demo, run=_emvc_run, warmup=_warmup.emvc_warmup),
    "cmvnmf": SolverSpec(
        name="cmvnmf",
        description="constrained NMF on unmapped views with inter-view pairs",
        demo_note="Handwritten fou+pix+zer unmapped (95% kept, rows permuted per view), 2% of "
                  "cross pairs as constraints",
        side=("must", "cannot"),
        simulation=(Option("keep", float, 0.95,
                           "fraction of rows each view keeps when unmapped views are simulated "
                           "from a labelled file (no --must/--cannot given)"),
                    Option("constraint_ratio", float, 0.05,
                           "simulated inter-view pairs, as a fraction of all cross pairs")),
        cli_defaults={}, demo=_cmvnmf_demo, run=_cmvnmf_run, warmup=_warmup.cmvnmf_warmup),
    "opimc": SolverSpec(
        name="opimc",
        description="one-pass streaming clustering of incomplete views",
        demo_note="Handwritten 5 views, 40% missing per view, shuffled, chunk 50, alpha 0.1",
        side=("mask",),
        simulation=(Option("missing_ratio", float, 0.4,
                           "fraction of each view removed when no --mask is given and the file "
                           "has labels (0: complete views)"),),
        cli_defaults={}, demo=_opimc_demo, run=_opimc_run, warmup=_warmup.opimc_warmup),
}
