"""EMVC in the benchmark scripts: the README's route,
``P = [fastmv.transition_matrix(X) for X in views]``, ``fastmv.emvc(P, lam, lam,
n_clusters=c)`` with ``lam = 0.01`` unless ``--set`` / ``--lam`` (a ``--set`` naming a
``transition_matrix`` parameter goes to the graphs, any other to ``emvc``); one ``eigh`` of
the symmetrised mean transition matrix as the yardstick (the graphs built outside the timed
call)."""
import inspect

import numpy as np

import fastmv

from . import Setting, Timed

YARDSTICK = "eigh"
SCALING_SIZES = [250, 500, 1000, 2000]


def _defaults(views, y, seed, params):
    lam = float(params.pop("lam", 0.01))
    # each --set goes where it is a parameter: the graph's or the solver's
    graph = set(inspect.signature(fastmv.transition_matrix).parameters) - {"X"}
    P = [fastmv.transition_matrix(X, **{k: v for k, v in params.items() if k in graph})
         for X in views]
    res = fastmv.emvc(P, lam, lam, n_clusters=len(np.unique(y)), random_state=seed,
                      **{k: v for k, v in params.items() if k not in graph})
    return [y], [res.labels]


DEFAULTS = {"emvc": Setting("EMVC", "none", _defaults)}


def timed(views, y, seed, lam):
    c = len(np.unique(y))
    P = [fastmv.transition_matrix(X) for X in views]
    return Timed(lambda **kw: fastmv.emvc(P, lam, lam, n_clusters=c, random_state=seed, **kw),
                 [y], yardstick_data=P, record={"lam": lam}, retime_tuned=False)


def scaling_call(data, n, c):
    views, y = data(n)
    P = [fastmv.transition_matrix(X) for X in views]
    return lambda: fastmv.emvc(P, 0.01, 0.01, n_clusters=c, max_iter=20, random_state=0)
