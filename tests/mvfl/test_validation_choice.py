"""MVFL's choices from held-out labels: the ``"log"`` scaling, the spreading score of
``normalize="auto"``, and the reuse of its graph by the start (docs/mvfl.md)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from fastmv._core._tuning import from_labels, label_folds
from fastmv._mvfl import _normalize as NZ
from fastmv._mvfl import _start as ST
from tests.conftest import shared_dataset

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _wild_counts(seed, n_per=40, c=3, d=12):
    """Counts whose class lives in their logarithm: each class multiplies a few features'
    typical level by e², and every entry carries log-normal noise of spread 1.5, so a handful
    of huge entries dominate every feature's variance; a second view is plain noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n_per)
    level = np.zeros((c, d))
    for k in range(c):
        level[k, 4 * k:4 * k + 4] = 2.0
    counts = np.round(np.exp(3.0 + level[y] + 1.5 * rng.normal(size=(y.size, d))))
    return [counts, rng.normal(size=(y.size, 5))], y


# ------------------------------------------------------------------------------------------
# the "log" scaling


def test_log_scheme_takes_the_log_of_nonnegative_columns_only():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.exp(rng.normal(size=30) * 3), rng.normal(size=30),
                         np.zeros(30), np.full(30, 7.0)])
    Y = NZ._normalize_view(X, "log")
    expect = np.log1p(X[:, 0] / X[:, 0].mean())
    # a monotone map of the nonnegative column, then unit variance; signed column: scaled
    np.testing.assert_allclose(Y[:, 0], expect / expect.std(), rtol=1e-12)
    np.testing.assert_allclose(Y[:, 1], X[:, 1] / X[:, 1].std(), rtol=1e-12)
    np.testing.assert_array_equal(Y[:, 2:], 0.0)  # constant features are zeroed
    # no per-view factor (unlike "zscore"): every feature keeps unit variance
    np.testing.assert_allclose(Y[:, :2].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(NZ._normalize_view(X, "zscore")[:, 1].std(), 0.5, rtol=1e-12)
    X0 = X.copy()  # the input is never written
    NZ._normalize_view(X, "log")
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("scale", [1e-200, 1e-3, 1e5, 1e200])
def test_log_scheme_ignores_the_units(scale):
    rng = np.random.default_rng(1)
    X = np.exp(rng.normal(size=(25, 4)) * 2)
    np.testing.assert_allclose(NZ._normalize_view(scale * X, "log"),
                               NZ._normalize_view(X, "log"), rtol=1e-9, atol=1e-12)


def test_log_scheme_sparse_equals_dense():
    rng = np.random.default_rng(2)
    X = np.exp(rng.normal(size=(20, 6))) * (rng.random((20, 6)) < 0.4)
    X[:, 5] = rng.normal(size=20)  # a signed column
    dense = NZ._normalize_view(X, "log")
    sparse = NZ._normalize_view(sp.csr_matrix(X), "log")
    assert sp.issparse(sparse)
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-12, atol=1e-14)


def test_log_scheme_on_empty_and_single_sample_views():
    assert NZ._normalize_view(np.zeros((0, 3)), "log").shape == (0, 3)
    one = NZ._normalize_view(np.array([[5.0, -1.0, 0.0]]), "log")
    np.testing.assert_array_equal(one, 0.0)  # one sample: every feature is constant


# ------------------------------------------------------------------------------------------
# the spreading score of normalize="auto"


def _naive_fold_cosines(graph, rows, classes, c, folds, n_folds):
    """Spread each fold's remaining labels on ``graph`` (one spreading per fold, no basis)
    and average the cosine of each held-out row's scores to its class."""
    out = np.full(n_folds, np.nan)
    for f in range(n_folds):
        te, tr = folds == f, folds != f
        if not te.any() or not tr.any():
            continue
        F = ST._spread(graph, rows[tr], classes[tr], c)[rows[te]]
        norm = np.linalg.norm(F, axis=1)
        true = F[np.arange(te.sum()), classes[te]]
        out[f] = np.mean(np.where(norm > 0, true / np.where(norm > 0, norm, 1.0), 0.0))
    return out


@pytest.mark.parametrize("n, c, n_labels, n_folds", [(40, 3, 12, 12), (60, 4, 20, 5),
                                                     (2, 1, 2, 2), (30, 5, 6, 6)])
def test_spreading_fold_scores_equal_one_spreading_per_fold(n, c, n_labels, n_folds):
    rng = np.random.default_rng(n + c)
    X = rng.normal(size=(n, 3))
    rows = np.sort(rng.choice(n, n_labels, replace=False)).astype(np.int64)
    classes = rng.integers(0, c, n_labels).astype(np.int64)
    folds = label_folds(from_labels(rows, classes), n_folds, np.random.default_rng(0))
    graph = ST.knn_graph(X)
    spreader = ST.FoldSpreader(graph, rows, classes, c)
    got = NZ.spreading_fold_scores(spreader, folds, n_folds)
    want = _naive_fold_cosines(graph, rows, classes, c, folds, n_folds)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.all((got[np.isfinite(got)] >= 0) & (got[np.isfinite(got)] <= 1 + 1e-12))


def test_spreading_fold_scores_rise_with_the_separation():
    """Two clusters far apart: held-out labels are predicted perfectly (cosine 1); the same
    labels shuffled over the samples score lower."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 30)
    X = np.column_stack([10.0 * y, np.zeros(60)]) + rng.normal(size=(60, 2))
    rows = np.arange(0, 60, 3, dtype=np.int64)
    folds = label_folds(from_labels(rows, y[rows]), rows.size, np.random.default_rng(0))
    graph = ST.knn_graph(X)
    good = NZ.spreading_fold_scores(ST.FoldSpreader(graph, rows, y[rows], 2), folds,
                                    rows.size)
    np.testing.assert_allclose(good, 1.0, atol=1e-12)
    shuffled = rng.permutation(y[rows])
    bad = NZ.spreading_fold_scores(ST.FoldSpreader(graph, rows, shuffled, 2), folds,
                                   rows.size)
    assert np.nanmean(bad) < np.nanmean(good) - 0.2


def test_auto_chooses_log_where_the_class_lives_in_the_logarithm():
    views, y = _wild_counts(0)
    lab = simulate.partial_labels(y, 0.2, random_state=0)
    r = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    rec = r.tuning["normalize"]
    assert rec["candidates"] == ["zscore", "l2", "log"] and rec["chosen"] == "log"
    assert r.normalize == ["log", "log"] and rec["rule"] == "best mean"
    z = fastmv.mvfl(views, 3, labels=lab, random_state=0, normalize="zscore")
    assert metrics.accuracy(y, r.labels) >= metrics.accuracy(y, z.labels) + 0.05
    # the explicit value gives the tuned solve
    fixed = fastmv.mvfl(views, 3, labels=lab, random_state=0, normalize="log",
                        init=r.tuning["init"]["chosen"])
    np.testing.assert_array_equal(fixed.labels, r.labels)


def test_start_tuning_reuses_the_graph_of_the_normalize_tuning(monkeypatch):
    """One kNN graph per candidate scaling and none more: the start's tuning and the spreading
    start read the chosen scaling's graph (and its spreading basis)."""
    calls = []
    real = ST.knn_graph

    def counting(X):
        calls.append(X.shape)
        return real(X)

    monkeypatch.setattr(ST, "knn_graph", counting)
    monkeypatch.setattr(NZ, "knn_graph", counting)
    views, y = _wild_counts(1)
    lab = simulate.partial_labels(y, 0.2, random_state=1)
    r = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert "init" in r.tuning and len(calls) == len(r.tuning["normalize"]["candidates"])
    calls.clear()
    text = [sp.random(50, 80, density=0.05, random_state=s, format="csr") for s in range(2)]
    lab = np.where(np.arange(50) % 4 == 0, np.arange(50) % 2, -1)
    r = fastmv.mvfl(text, 2, labels=lab, random_state=0)
    assert r.tuning["normalize"]["candidates"] == ["l2"] and len(calls) == 1


# ------------------------------------------------------------------------------------------
# real data (docs/mvfl.md, "Evidence"): the honest baseline is label spreading, as in
# benchmarks/baseline.py


def _label_spreading_best(views, y, seeds):
    from sklearn.semi_supervised import LabelSpreading

    from benchmarks import baseline as B

    best = -1.0
    for name in ("l2", "zscore"):
        X = B.concatenations(views)[name]
        accs = []
        for s in seeds:
            part = simulate.partial_labels(y, 0.1, random_state=s)
            pred = LabelSpreading(kernel="knn", n_neighbors=7, max_iter=100).fit(
                X, part).transduction_
            accs.append(metrics.accuracy(y, pred))
        best = max(best, float(np.mean(accs)))
    return best


@pytest.mark.slow
@pytest.mark.parametrize("name", ["CESC", "LandUse-21"])
def test_mvfl_within_label_spreading_on_wild_scales_and_many_classes(name):
    views, y = fastmv.datasets.load_mat(shared_dataset(f"{name}.mat"))
    views = [np.asarray(V.toarray() if sp.issparse(V) else V, np.float64) for V in views]
    c = np.unique(y).size
    seeds = range(5)
    accs = [metrics.accuracy(y, fastmv.mvfl(views, c, random_state=s, labels=
                                            simulate.partial_labels(y, 0.1, random_state=s)
                                            ).labels) for s in seeds]
    assert np.mean(accs) >= _label_spreading_best(views, y, seeds) - 0.02
