"""OPIMC in the benchmark scripts: ``simulate.incomplete_mask(n, m, 0.4)``, samples in the
file's order; Handwritten on the paper's views fou, fac, kar, pix, zer; k-means as the
yardstick."""
import numpy as np

import fastmv
from fastmv import simulate

from . import Setting, Timed

#: views of Handwritten the paper used (indices into fac, fou, kar, mor, pix, zer)
PAPER_VIEWS = {"Handwritten": [0, 1, 2, 4, 5]}
YARDSTICK = "kmeans"
SCALING_SIZES = [16000, 64000, 256000, 1024000]


def _defaults(views, y, seed, params):
    mask = simulate.incomplete_mask(len(y), len(views), 0.4, random_state=seed)
    res = fastmv.opimc(views, len(np.unique(y)), mask=mask, random_state=seed, **params)
    return [y], [res.labels]


#: compared with k-means on the mean-imputed views, the complete-data k-means beside it
DEFAULTS = {"opimc": Setting("OPIMC", "incomplete-imputed", _defaults, PAPER_VIEWS,
                             reference="incomplete")}


def timed(views, y, seed, lam):
    c = len(np.unique(y))
    mask = simulate.incomplete_mask(len(y), len(views), 0.4, random_state=seed)
    return Timed(lambda **kw: fastmv.opimc(views, c, mask=mask, random_state=seed, **kw), [y])


def scaling_call(data, n, c):
    views, y = data(n)
    mask = fastmv.simulate.incomplete_mask(n, len(views), 0.3, random_state=0)
    return lambda: fastmv.opimc(views, c, mask=mask, chunk_size=2000, random_state=0)
