"""MVFL in the benchmark scripts: 10 % labels, ``simulate.partial_labels(y, 0.1)``; k-means
as the yardstick."""
import numpy as np

import fastmv
from fastmv import simulate

from . import Setting, Timed

YARDSTICK = "kmeans"
SCALING_SIZES = [2000, 4000, 8000, 16000, 32000]


def _defaults(views, y, seed, params):
    labels = simulate.partial_labels(y, 0.1, random_state=seed)
    res = fastmv.mvfl(views, len(np.unique(y)), labels=labels, random_state=seed,
                      **params)
    return [y], [res.labels]


DEFAULTS = {"mvfl": Setting("MVFL (10 % labels)", "labels", _defaults)}


def timed(views, y, seed, lam):
    c = len(np.unique(y))
    labels = simulate.partial_labels(y, 0.1, random_state=seed)
    return Timed(lambda **kw: fastmv.mvfl(views, c, labels=labels, random_state=seed, **kw),
                 [y])


def scaling_call(data, n, c):
    views, y = data(n)
    lab = fastmv.simulate.partial_labels(y, 0.1, random_state=0)
    return lambda: fastmv.mvfl(views, c, labels=lab, max_iter=20, random_state=0)
