"""MVFL on the shared real datasets (skipped when they are absent)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from tests.conftest import shared_dataset
from tests.mvfl.helpers import (
    pairs_from_labelled,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


# ------------------------------------------------------------------------------------------
# real data (../shared/datasets)


def _handwritten():
    from fastmv.datasets import load_mat

    views, y = load_mat(shared_dataset("Handwritten.mat"))
    return [views[1], views[0], views[5]], y  # fou, fac, zer (file order fac fou kar mor pix zer)


@pytest.mark.slow
def test_handwritten_three_settings():
    """Paper settings on Handwritten fou+fac+zer (report: 5 draws; here 2 draws)."""
    views, y = _handwritten()
    acc = {"none": [], "labels": [], "pairs": []}
    for s in range(2):
        acc["none"].append(metrics.accuracy(y, fastmv.mvfl(views, 10, random_state=s).labels))
        lab = simulate.partial_labels(y, 0.1, random_state=s)
        r = fastmv.mvfl(views, 10, labels=lab, lam3=100.0, random_state=s)
        acc["labels"].append(metrics.accuracy(y, r.labels))
        ml, cl = pairs_from_labelled(y, 0.1, np.random.default_rng(s))
        r = fastmv.mvfl(views, 10, must_link=ml, cannot_link=cl, lam3=0.01, random_state=s)
        acc["pairs"].append(metrics.accuracy(y, r.labels))
    assert np.mean(acc["labels"]) >= 0.90, acc
    assert np.mean(acc["pairs"]) >= 0.85, acc
    assert np.mean(acc["none"]) >= 0.80, acc


@pytest.mark.slow
def test_3sources_labels_beat_concatenated_kmeans():
    from fastmv.datasets import load_mat

    views, y = load_mat(shared_dataset("3Sources.mat"))
    views = [sp.csr_matrix(v) for v in views]
    c = int(np.unique(y).size)
    lab = simulate.partial_labels(y, 0.1, random_state=0)
    r = fastmv.mvfl(views, c, labels=lab, lam1=0.3, lam2=1e-3, lam3=100.0, normalize="l2",
                    random_state=0)
    km = fastmv.kmeans(sp.hstack(views, format="csr"), c, random_state=0).labels
    assert metrics.accuracy(y, r.labels) > metrics.accuracy(y, km) + 0.05
    assert metrics.nmi(y, r.labels) > metrics.nmi(y, km) + 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning with the defaults
        r = fastmv.mvfl(views, c, labels=lab, random_state=0)
    assert r.converged and r.n_iter < 100
    assert np.all(np.diff(r.objective) <= 0)
    assert metrics.accuracy(y, r.labels) > metrics.accuracy(y, km)
    assert metrics.nmi(y, r.labels) > metrics.nmi(y, km)
