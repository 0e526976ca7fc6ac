"""CMVNMF on the shared datasets: unmapped Handwritten and Reuters-1200 views with 5 %
pairs."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from tests.conftest import shared_dataset

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _handwritten_fou_pix_zer():
    views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    return [views[i] for i in (1, 4, 5)], y  # file order: fac, fou, kar, mor, pix, zer


@pytest.mark.slow
def test_handwritten_unmapped_5_percent_constraints():
    views, y = _handwritten_fou_pix_zer()
    accs, base = [], []
    for draw in range(2):  # the record averages 5 draws (docs/records/cmvnmf.md)
        rng = np.random.default_rng(1000 + draw)
        Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
        ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
        r = fastmv.cmvnmf(Xs, 10, ml, cl, random_state=rng, n_init=1)
        accs.append(np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)]))
        if draw == 0:
            r0 = fastmv.cmvnmf(Xs, 10, {}, {}, random_state=rng, max_iter=100, n_init=1)
            base.append(np.mean([metrics.accuracy(ys[a], r0.labels[a]) for a in range(3)]))
    assert np.mean(accs) >= 0.80, accs
    assert np.mean(accs) > base[0] + 0.1, (accs, base)


@pytest.mark.slow
def test_reuters_unmapped_5_percent_constraints():
    views, y = fastmv.datasets.load_mat(shared_dataset("Reuters-1200.mat"))
    rng = np.random.default_rng(2000)
    views = [sp.csr_matrix(v) for v in views[:3]]  # English, French, German; text as CSR
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
    # beta="auto" picks 10 here, and this single start merges two classes into one column of
    # every view's V (the k-means start has all six clusters and no row is empty): a genuine
    # local minimum of the model at that weight, which the solver must report, view by view
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fastmv.cmvnmf(Xs, 6, ml, cl, random_state=rng, n_init=1)
    acc = np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)])
    assert acc >= 0.6, acc
    degenerate = {a for a in range(3) if np.unique(r.labels[a]).size < 6}
    warned = {int(v) for w in caught if issubclass(w.category, fastmv.DegenerateSolutionWarning)
              for v in re.findall(r"of view (\d+)", str(w.message))}
    assert warned == degenerate

