"""MVMC in the benchmark scripts: ``5 n`` pairs, ``simulate.pairwise_constraints(y, 5 n)``;
k-means as the yardstick."""
import numpy as np

import fastmv
from fastmv import simulate

from . import Setting, Timed

YARDSTICK = "kmeans"
SCALING_SIZES = [1000, 2000, 4000, 8000]


def _defaults(views, y, seed, params):
    must, cannot = simulate.pairwise_constraints(y, 5 * len(y), random_state=seed)
    res = fastmv.mvmc(views, len(np.unique(y)), must, cannot, random_state=seed, **params)
    return [y], [res.labels]


DEFAULTS = {"mvmc": Setting("MVMC (5 n pairs)", "pairs", _defaults)}


def timed(views, y, seed, lam):
    c = len(np.unique(y))
    must, cannot = simulate.pairwise_constraints(y, 5 * len(y), random_state=seed)
    return Timed(lambda **kw: fastmv.mvmc(views, c, must, cannot, random_state=seed, **kw),
                 [y])


def scaling_call(data, n, c):
    views, y = data(n)
    ml, cl = fastmv.simulate.pairwise_constraints(y, 5 * n, random_state=0)
    return lambda: fastmv.mvmc(views, c, ml, cl, max_iter=10, random_state=0)
