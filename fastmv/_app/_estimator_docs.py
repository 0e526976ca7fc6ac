"""The estimators' documentation and ``__init__`` source, generated from the solver functions.

Each estimator's class docstring takes its parameter descriptions from the solver's numpydoc
docstring, and its ``__init__`` must list the solver's hyper-parameters with the solver's
defaults: both are derived here, so the estimators and the functions cannot drift apart (the
tests compare every ``__init__`` with :func:`init_source`).
"""
from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import textwrap

from .._core._spec import solver_specs

# Arguments of the solver functions that are data or side information, not hyper-parameters.
DATA_ARGS = frozenset({"X_list", "P_list"})
SIDE_ARGS = frozenset({"must_link", "cannot_link", "labels", "mask"})
# Fields every result has; the others are the solver's own matrices.
RESULT_BASE = {"labels", "objective", "n_iter", "converged"}


def parameter_entries(func):
    """The numpydoc Parameters section of ``func`` as ``[(names, header, body lines)]``."""
    doc = inspect.getdoc(func) or ""
    m = re.search(r"^Parameters\n-+\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, re.DOTALL | re.MULTILINE)
    entries = []
    if not m:
        return entries
    for line in m.group(1).rstrip().splitlines():
        if line and not line[0].isspace():
            names = [s.strip() for s in line.split(":", 1)[0].split(",")]
            entries.append((names, line, []))
        elif entries:
            entries[-1][2].append(line)
    return entries


def _parameters_doc(cls, func):
    """A Parameters section for ``cls.__init__`` from ``func``'s docstring."""
    init = inspect.signature(cls.__init__).parameters
    names = [n for n in init if n != "self"]
    lines = ["Parameters", "----------"]
    blocks = []  # (position in __init__, lines): documented in the signature's order
    done = set()
    solver_defaults = {p.name: p.default for p in inspect.signature(func).parameters.values()}
    for entry_names, header, body in parameter_entries(func):
        own = [n for n in entry_names if n in names]
        if not own:
            continue
        if len(own) < len(entry_names):
            header = ", ".join(own) + " :" + header.split(":", 1)[1]
        for n in own:
            if solver_defaults.get(n) is inspect.Parameter.empty or \
                    estimator_default(func, n, solver_defaults.get(n)) != solver_defaults.get(n):
                header += f" (estimator default {init[n].default!r})"
        blocks.append((names.index(own[0]),
                       [header] + (body if body else ["    See the solver function."])))
        done.update(own)
    for n, (_, entry) in estimator_parameters(func).items():
        if n in names and n not in done:
            blocks.append((names.index(n), entry.splitlines()))
            done.add(n)
    for n in names:
        if n not in done:
            blocks.append((names.index(n), [f"{n} : object, default {init[n].default!r}",
                                            f"    Passed to :func:`fastmv.{func.__name__}`."]))
    for _, block in sorted(blocks, key=lambda b: b[0]):
        lines += block
    return "\n".join(lines)


def _attributes_doc(result_fields, matrices_doc):
    lines = ["Attributes", "----------",
             "labels_ : ndarray of int64" + (" or list of ndarray" if "list" in matrices_doc
                                             else ""),
             "    Cluster labels of the samples seen by ``fit``.",
             "result_ : result object",
             "    Everything the solver returned.",
             "objective_ : ndarray", "    Objective history.",
             "n_iter_ : int or ndarray", "    Iterations run.",
             "converged_ : bool", "    Whether the stopping test was met.",
             "embedding_ : ndarray of shape (n_samples, n_clusters)" + (
                 " or list of ndarray" if "list" in matrices_doc else ""),
             "    One-hot assignment of the samples (``labels_`` as columns; no NaN).",
             "centers_ : list of ndarray or None",
             "    Per view, the (n_clusters, d_v) mean of each cluster's present rows scaled to",
             "    unit norm (NaN for a cluster absent from the view): what ``predict``,",
             "    ``transform`` and ``score`` use; None when ``fit`` had no per-sample",
             "    features.",
             "view_sizes_ : list of int or None",
             "    The views' widths when ``fit`` got one 2-D array (used by ``predict``).",
             "n_views_ : int", "    Number of views seen by ``fit``."]
    for f in result_fields:
        lines += [f"{f}_ : see ``result_.{f}``", f"    {matrices_doc}"]
    return "\n".join(lines)


def _result_fields(func):
    """Fields of the solver's result class (``<NAME>Result`` beside the function), except
    the base ones."""
    result_cls = getattr(sys.modules[func.__module__], func.__name__.upper() + "Result", None)
    if result_cls is None or not dataclasses.is_dataclass(result_cls):
        return []
    return [f.name for f in dataclasses.fields(result_cls) if f.name not in RESULT_BASE]


def document(cls, func, intro, examples, matrices_doc="Learned by the solver."):
    cls._solver = staticmethod(func)
    result_fields = _result_fields(func)
    cls.__doc__ = "\n\n".join([
        intro.strip(), _parameters_doc(cls, func), _attributes_doc(result_fields, matrices_doc),
        "See Also\n--------\n" + f"fastmv.{func.__name__} : The solver function.",
        "Examples\n--------\n" + inspect.cleandoc(examples)])
    return cls


#: Parameter entries the estimators' methods share: ``name : type`` and its description.
SHARED_PARAMETERS = {
    "Xs": ("Xs : list of array-like, or 2-D array-like", "The views (see ``fit``)."),
    "new Xs": ("Xs : list of array-like, or 2-D array-like",
               "New samples (see :meth:`transform`)."),
    "y": ("y : None", "Ignored."),
    "view_sizes": ("view_sizes : sequence of int, optional",
                   "The views' widths (default: those given to ``fit``)."),
    "fit_params": ("**fit_params : dict", "Side information and options of ``fit``."),
}
#: The ``Returns`` entry of a method that returns its estimator.
RETURNS_SELF = ("self", "The estimator.")
#: The start of the estimators' examples: two views of 20 samples in two clusters.
TOY_VIEWS = (">>> import numpy as np", ">>> from fastmv.estimators import {cls}",
             ">>> y = np.repeat([0, 1], 10)",
             ">>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]")


def _section(title, entries):
    body = "\n".join(f"{head}\n{textwrap.indent(text, '    ')}" for head, text in entries)
    return f"{title}\n{'-' * len(title)}\n{body}"


def sections(parameters=(), returns=None, example="", toy=None):
    """Decorator: a method's docstring (its summary and notes) followed by its numpydoc
    ``Parameters``, ``Returns`` and ``Examples`` sections, built from the parts the
    estimators' methods share.

    ``parameters``: names of :data:`SHARED_PARAMETERS` or ``(header, description)`` pairs;
    ``returns``: ``(type, description)``; ``example``: the example's lines, after
    :data:`TOY_VIEWS` with estimator ``toy`` when given.
    """
    def decorate(method):
        parts = [inspect.cleandoc(method.__doc__)] if method.__doc__ else []  # python -OO
        if parameters:
            parts.append(_section("Parameters", [SHARED_PARAMETERS.get(p, p)
                                                 for p in parameters]))
        if returns is not None:
            parts.append(_section("Returns", [returns]))
        lines = [line.format(cls=toy) for line in TOY_VIEWS] if toy else []
        lines += inspect.cleandoc(example).splitlines()
        if lines:
            parts.append("Examples\n--------\n" + "\n".join(lines))
        method.__doc__ = "\n\n".join(parts) + "\n"
        return method
    return decorate


_FIT_DOC = """Fit the model{extra}.

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like
            {xs}
            Arrays, scipy.sparse matrices or pandas DataFrames; one 2-D array without
            ``view_sizes`` is one view, as scikit-learn's ``X``. A row that is all NaN is a
            sample missing from that view ({missing}).
        y : None
            Ignored (scikit-learn convention for clustering).
{side}        view_sizes : sequence of int, optional
            Give ``Xs`` as one 2-D array with the views side by side and their widths here
            (for tools such as ``GridSearchCV`` that index samples).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        {toy}
        >>> {cls}({args}).fit(Xs{fit}).{attr}
        {out}
"""

_SIDE_DOC = {
    "must_link": "        must_link : array-like of int, shape (p, 2), optional\n"
                 "            Sample pairs known to share a cluster.\n",
    "cannot_link": "        cannot_link : array-like of int, shape (p, 2), optional\n"
                   "            Sample pairs known to be in different clusters.\n",
    "labels": "        labels : array-like of int, shape (n,), optional\n"
              "            Partial labels, ``-1`` for unknown.\n",
    "mask": "        mask : array-like of bool, shape (n, m), optional\n"
            "            ``True`` where a sample is present in a view.\n",
    "pair_labels": "        labels : array-like of int, shape (n,), optional\n"
                   "            Partial labels, ``-1`` for unknown: every pair among the labelled "
                   "samples\n            becomes a must-link or cannot-link pair (one entry "
                   "per sample, so\n            ``GridSearchCV`` splits it with the samples).\n",
    "cmvnmf_pairs": "        must_link, cannot_link : dict or None\n"
                    "            ``{(a, b): (p, 2) int array}`` inter-view pairs (see "
                    ":func:`fastmv.cmvnmf`).\n",
}


def fit_doc(cls, xs, side, example):
    args, fit, attr, out = example
    # a solver that takes a mask of present samples handles missing ones itself
    missing = ("handled by the solver" if "mask" in side else
               "replaced by the mean of the view's present rows")
    return _FIT_DOC.format(xs=xs, missing=missing, side="".join(_SIDE_DOC[s] for s in side),
                           extra="", toy="\n        ".join(TOY_VIEWS).format(cls=cls),
                           cls=cls, args=args, fit=fit, attr=attr, out=out)


_REQUIRED_DEFAULTS = {"n_clusters": 2, "lam1": 0.01, "lam2": 0.01}


def _spec_of(func):
    return solver_specs().get(func.__name__)


def estimator_parameters(func) -> dict:
    """Parameters of the estimator of solver ``func`` that the function does not take,
    ``{name: (default, numpydoc entry)}`` (the solver's spec says them)."""
    spec = _spec_of(func)
    return spec.estimator_parameters if spec is not None else {}


def estimator_default(func, name, default):
    """The estimator's default of parameter ``name`` of solver ``func``."""
    spec = _spec_of(func)
    return (spec.estimator_defaults if spec is not None else {}).get(name, default)


def init_source(func) -> str:
    """Source of the explicit ``__init__`` an estimator of ``func`` needs: ``n_clusters``
    first (positional, as in scikit-learn), then the solver's other hyper-parameters as
    keywords in signature order, the solver's defaults (estimator defaults for the required
    ones and the spec's ``estimator_defaults``), then the estimator's own parameters
    (the spec's ``estimator_parameters``). Used by the test that keeps the
    estimators in step."""
    params = [p for p in inspect.signature(func).parameters.values()
              if p.name not in DATA_ARGS | SIDE_ARGS]
    params.sort(key=lambda p: p.name != "n_clusters")
    parts = ["self"]
    for i, p in enumerate(params):
        if i == 1:
            parts.append("*")
        default = p.default if p.default is not p.empty else _REQUIRED_DEFAULTS[p.name]
        parts.append(f"{p.name}={estimator_default(func, p.name, default)!r}")
    extra = estimator_parameters(func)
    parts += [f"{name}={default!r}" for name, (default, _) in extra.items()]
    lines = [f"    def __init__({', '.join(parts)}):"]
    lines += [f"        self.{name} = {name}" for name in [p.name for p in params] + list(extra)]
    return "\n".join(lines)
