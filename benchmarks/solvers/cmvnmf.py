"""CMVNMF in the benchmark scripts: ``simulate.unmapped(keep=0.95)`` then
``inter_view_constraints(ratio=0.05)`` (``cmvnmf-none``: the same unmapped views without
pairs), ACC / NMI averaged over the views; Handwritten on the paper's views fou, pix, zer;
NMF per view per start as the yardstick."""
import numpy as np

import fastmv
from fastmv import simulate

from . import Setting, Timed

#: views of Handwritten the paper used (indices into fac, fou, kar, mor, pix, zer)
PAPER_VIEWS = {"Handwritten": [1, 4, 5]}
YARDSTICK = "nmf"
SCALING_SIZES = [2000, 4000, 8000, 16000, 32000]


def _solve(pairs):
    def solve(views, y, seed, params):
        uviews, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
        if pairs:
            must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
        else:
            must, cannot = None, None
        res = fastmv.cmvnmf(uviews, len(np.unique(y)), must, cannot, random_state=seed,
                            **params)
        return uy, res.labels
    return solve


#: without pairs, compared with k-means on each unmapped view, and the complete-data k-means
#: beside it as an upper reference
DEFAULTS = {
    "cmvnmf": Setting("CMVNMF (pairs)", "unmapped", _solve(True), PAPER_VIEWS),
    "cmvnmf-none": Setting("CMVNMF (no pairs)", "unmapped-per-view", _solve(False),
                           PAPER_VIEWS, reference="unmapped"),
}


def timed(views, y, seed, lam):
    c = len(np.unique(y))
    uviews, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
    must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
    return Timed(lambda **kw: fastmv.cmvnmf(uviews, c, must, cannot, random_state=seed,
                                            **kw), list(uy))


def scaling_call(data, n, c):
    views, y = data(n, nonnegative=True)
    ys = [y, y]
    ml, cl = fastmv.simulate.inter_view_constraints(ys, n_constraints=5 * n, random_state=0)
    return lambda: fastmv.cmvnmf(views, c, ml, cl, max_iter=30, random_state=0)
