"""MVFL's behaviour on planted data and its validation of bad input."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from fastmv._mvfl import _wstep as WS
from tests.mvfl.helpers import (
    make_views,
    pairs_from_labelled,
    planted_blobs,
    prior_kwargs,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


# ------------------------------------------------------------------------------------------
# behaviour


def test_planted_clusters_recovered():
    rng = np.random.default_rng(10)
    views, y = planted_blobs(rng, 30, 4, [8, 5, 12], sep=5.0)
    for kw in ({}, {"labels": simulate.partial_labels(y, 0.2, random_state=1)}):
        r = fastmv.mvfl(views, 4, random_state=0, **kw)
        assert metrics.accuracy(y, r.labels) == 1.0
    ml, cl = pairs_from_labelled(y, 0.2, np.random.default_rng(2))
    r = fastmv.mvfl(views, 4, must_link=ml, cannot_link=cl, lam3=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) == 1.0


def test_view_selection_finds_the_informative_view():
    rng = np.random.default_rng(11)
    views, y = planted_blobs(rng, 40, 3, [6], sep=5.0)
    noise = rng.normal(size=(120, 30))
    r = fastmv.mvfl([noise, views[0]], 3, lam1=0.1, lam2=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) == 1.0
    # the informative view carries far more weight, per cluster and per feature
    assert (r.view_weights[1] > 5 * r.view_weights[0]).all()
    fw = r.feature_weights
    assert fw[30:].min() > fw[:30].max()


def test_labelled_samples_keep_their_class_with_large_lam3():
    rng = np.random.default_rng(12)
    views, y = planted_blobs(rng, 40, 4, [6, 6], sep=0.7, noise=1.0)  # overlapping clusters
    lab = simulate.partial_labels(y, 0.3, random_state=3)
    known = lab >= 0
    r0 = fastmv.mvfl(views, 4, random_state=0)
    # the anchor pinned: a stronger validated pull (0.3) also keeps the start's labelled rows
    r_small = fastmv.mvfl(views, 4, labels=lab, lam3=0.01, anchor=0.1, random_state=0)
    r = fastmv.mvfl(views, 4, labels=lab, lam3=1e6, random_state=0)
    np.testing.assert_array_equal(r.labels[known], lab[known])
    # without the prior, or with a weak one, some labelled samples are misclustered
    assert metrics.accuracy(y[known], r0.labels[known]) < 0.9
    assert np.mean(r_small.labels[known] == lab[known]) < 0.9


@pytest.mark.parametrize("seed", [13, 15, 16])
def test_large_lam3_confines_labelled_rows_to_their_class(seed):
    """With λ3 → ∞ the closed form (eq. 18) leaves a labelled row only its own class's entry
    ``max(Z[i, y_i], 0)``: off-class entries vanish, and the row's argmax is its class
    wherever that entry is positive (a sample the regression cannot score positively for its
    class gets a numerically zero row)."""
    rng = np.random.default_rng(seed)
    views, y = planted_blobs(rng, 40, 4, [6, 6], sep=0.7, noise=1.0)
    lab = simulate.partial_labels(y, 0.3, random_state=3)
    known = np.flatnonzero(lab >= 0)
    r = fastmv.mvfl(views, 4, labels=lab, lam3=1e6, normalize="zscore", random_state=0)
    Fl = r.F[known]
    on = Fl[np.arange(known.size), lab[known]]
    off = Fl.copy()
    off[np.arange(known.size), lab[known]] = 0.0
    assert off.max() <= 1e-5 * r.F.max()
    alive = on > 1e-3 * r.F.max()
    assert alive.mean() >= 0.95
    np.testing.assert_array_equal(r.labels[known][alive], lab[known][alive])


def test_sparse_and_dense_views_agree():
    rng = np.random.default_rng(13)
    dense = make_views(rng, 30, [12, 40], sparse=True)
    dense = [v.toarray() for v in dense]
    sparse = [sp.csr_matrix(v) for v in dense]
    for norm in ("zscore", "l2", "minmax", None):
        a = fastmv.mvfl(dense, 3, normalize=norm, random_state=0, max_iter=20)
        b = fastmv.mvfl(sparse, 3, normalize=norm, random_state=0, max_iter=20)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_allclose(a.W, b.W, rtol=1e-6, atol=1e-9)


def test_dense_text_takes_the_sparse_woodbury_path(monkeypatch):
    rng = np.random.default_rng(21)
    views = [v.toarray() for v in make_views(rng, 20, [60, 70], sparse=True)]
    for v in views:
        v[rng.random(v.shape) < 0.8] = 0.0  # ~6% nonzeros: handled as CSR internally
    # the paper's F step is a smooth map of Z: the routes' rounding differences stay small
    kw = dict(random_state=0, max_iter=15, tol=0, normalize="l2", f_step="paper")
    a = fastmv.mvfl(views, 3, **kw)
    monkeypatch.setattr(WS, "SPARSE_DENSITY", 0.0)  # force the dense Woodbury route
    b = fastmv.mvfl(views, 3, **kw)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-7, atol=1e-10)


def test_normalize_zscore_is_a_scaling():
    rng = np.random.default_rng(14)
    views = [rng.normal(size=(30, 4)) * [1, 5, 0.1, 2] + 7, rng.normal(size=(30, 9)) * 3]
    views[0][:, 2] = 1.5  # a constant feature is zeroed
    F0 = rng.random((30, 3))
    a = fastmv.mvfl(views, 3, init=F0, normalize="zscore", max_iter=10, tol=0)
    manual = []
    for V in views:
        sd = V.std(axis=0)
        s = np.where(sd > 0, 1 / np.where(sd > 0, sd, 1), 0.0) / np.sqrt(V.shape[1])
        manual.append((V - V.mean(axis=0)) * s)
    b = fastmv.mvfl(manual, 3, init=F0, normalize=None, max_iter=10, tol=0)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-8, atol=1e-12)
    assert np.all(a.W[2] == 0) or np.abs(a.W[2]).max() < 1e-12


def test_deterministic_thread_independent_and_inputs_unchanged():
    rng = np.random.default_rng(15)
    views = make_views(rng, 60, [10, 80], sparse=False)
    views[1] = sp.csr_matrix(views[1] * (rng.random(views[1].shape) < 0.2))
    kw = prior_kwargs(rng, 60, 3, "pairs")
    copies = [v.copy() for v in views]
    kw_copy = {k: v.copy() for k, v in kw.items()}
    a = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=1, **kw)
    b = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=2, **kw)
    c = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=1, **kw)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.F, c.F)  # same seed, same threads: identical
    np.testing.assert_array_equal(views[0], copies[0])
    np.testing.assert_array_equal(views[1].toarray(), copies[1].toarray())
    for k in kw:
        np.testing.assert_array_equal(kw[k], kw_copy[k])
    lab = prior_kwargs(rng, 60, 3, "labels")["labels"]
    lab_copy = lab.copy()
    F0 = rng.random((60, 3))
    F0_copy = F0.copy()
    fastmv.mvfl(views, 3, labels=lab, init=F0, max_iter=3)
    np.testing.assert_array_equal(lab, lab_copy)
    np.testing.assert_array_equal(F0, F0_copy)


def test_result_fields_and_convergence():
    rng = np.random.default_rng(16)
    views, y = planted_blobs(rng, 20, 3, [4, 7], sep=4.0)
    r = fastmv.mvfl(views, 3, tol=1e-4, random_state=0, verbose=False)
    assert r.converged and r.n_iter < 100 and r.objective.shape == (r.n_iter,)
    assert r.labels.dtype == np.int64 and r.labels.shape == (60,)
    assert r.F.shape == (60, 3) and r.W.shape == (11, 3) and r.b.shape == (3,)
    assert r.view_weights.shape == (2, 3) and r.feature_weights.shape == (11,)
    np.testing.assert_array_equal(r.labels, np.argmax(r.F, axis=1))
    assert "MVFLResult" in repr(r)
    r1 = fastmv.mvfl(views, 1, random_state=0, max_iter=5)  # c = 1
    assert (r1.labels == 0).all()


# ------------------------------------------------------------------------------------------
# validation


def test_validation_errors():
    rng = np.random.default_rng(18)
    views = make_views(rng, 12, [3, 4])
    lab = np.full(12, -1)
    lab[:3] = [0, 1, 0]
    with pytest.raises(ValueError, match="at most one kind of prior"):
        fastmv.mvfl(views, 2, labels=lab, must_link=[[0, 1]])
    with pytest.raises(ValueError, match="at most one kind of prior"):
        fastmv.mvfl(views, 2, labels=lab, cannot_link=[[0, 1]])
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=lab[:-1])
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=np.r_[lab[:-1], 2])  # class >= n_clusters
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=np.r_[lab[:-1], -2])
    with pytest.raises(ValueError, match="must_link"):
        fastmv.mvfl(views, 2, must_link=[[0, 12]])
    with pytest.raises(ValueError, match="must_link"):
        fastmv.mvfl(views, 2, must_link=[[3, 3]])
    with pytest.raises(ValueError, match="cannot_link"):
        fastmv.mvfl(views, 2, cannot_link=[[0, 1, 2]])
    with pytest.raises(ValueError, match="both must_link and cannot_link"):
        fastmv.mvfl(views, 2, must_link=[[0, 1]], cannot_link=[[1, 0]])
    with pytest.raises(ValueError, match="same number of samples"):
        fastmv.mvfl([views[0], views[1][:-1]], 2)
    with pytest.raises(TypeError, match="X_list"):
        fastmv.mvfl(views[0], 2)
    with pytest.raises(ValueError, match="X_list"):
        fastmv.mvfl([np.full((12, 3), np.nan)], 2)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.mvfl(views, 13)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.mvfl(views, 0)
    for name in ("lam1", "lam2", "lam3"):
        with pytest.raises(ValueError, match=name):
            fastmv.mvfl(views, 2, **{name: -1.0})
    with pytest.raises(ValueError, match="lam1 and lam2"):
        fastmv.mvfl(views, 2, lam1=0.0, lam2=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        fastmv.mvfl(views, 2, max_iter=-1)
    with pytest.raises(ValueError, match="init is all zero"):
        fastmv.mvfl(views, 2, init=np.zeros((12, 2)))
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init="kmeans")  # the vocabulary is "k-means++"
    with pytest.raises(ValueError, match="tol"):
        fastmv.mvfl(views, 2, tol=-1.0)
    with pytest.raises(ValueError, match="eps"):
        fastmv.mvfl(views, 2, eps=0.0)
    with pytest.raises(ValueError, match="normalize"):
        fastmv.mvfl(views, 2, normalize="unit")
    with pytest.raises(ValueError, match="solver"):
        fastmv.mvfl(views, 2, solver="cg")
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init="spectral")
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init=np.ones((12, 3)))
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init=-np.ones((12, 2)))
    with pytest.raises(TypeError, match="callback"):
        fastmv.mvfl(views, 2, callback=3)
    with pytest.raises(TypeError, match="lam3"):
        fastmv.mvfl(views, 2, lam3="big")
    with pytest.raises(ValueError, match="n_jobs"):
        fastmv.mvfl(views, 2, n_jobs=0)


def test_prior_edge_cases():
    rng = np.random.default_rng(19)
    views, y = planted_blobs(rng, 10, 2, [4], sep=5.0)
    # all samples labelled, no sample labelled, empty pair lists, only cannot-links
    r = fastmv.mvfl(views, 2, labels=y, lam3=100.0, random_state=0, max_iter=10)
    np.testing.assert_array_equal(r.labels, y)
    # no sample labelled, or empty pair lists: exactly the prior-free problem
    free = fastmv.mvfl(views, 2, random_state=0, max_iter=10)
    r = fastmv.mvfl(views, 2, labels=np.full(20, -1), random_state=0, max_iter=10)
    np.testing.assert_array_equal(r.F, free.F)
    r = fastmv.mvfl(views, 2, must_link=np.zeros((0, 2), int), cannot_link=None, lam3=5.0,
                    random_state=0, max_iter=10)
    np.testing.assert_allclose(r.F, free.F, rtol=1e-12, atol=1e-15)
    r = fastmv.mvfl(views, 2, cannot_link=[[0, 15], [1, 12]], lam3=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) >= 0.9
    # duplicated pairs are allowed (they add weight)
    fastmv.mvfl(views, 2, must_link=[[0, 1], [1, 0]], lam3=0.01, random_state=0, max_iter=3)
