"""CMVNMF's starts: the views' k-means starts aligned by the pairs, the start of lowest
objective kept; without pairs, each view's best-separated partition over the starts."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from fastmv._cmvnmf._solver import _prepare
from tests.conftest import shared_dataset

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def test_aligned_cluster_order_recovers_planted_permutations():
    from fastmv._cmvnmf._start import _aligned_cluster_order

    rng = np.random.default_rng(3)
    c, n = 5, 200
    y = rng.integers(0, c, n)
    truth = [np.arange(c), rng.permutation(c), rng.permutation(c)]   # k-means numbering
    labels = [truth[v][y] for v in range(3)]
    must = {}
    for a, b in ((0, 1), (1, 2)):                    # view 2 reaches view 0 through view 1
        i = rng.integers(0, n, 400)
        j = rng.integers(0, n, 400)
        same = y[i] == y[j]
        must[(a, b)] = (np.column_stack([i[same], j[same]]), np.zeros((0, 2), np.int64))
    perms = _aligned_cluster_order(labels, must, c)
    for v in range(3):
        # cluster k of view v sits in the column of the class it holds in view 0
        np.testing.assert_array_equal(perms[v][truth[v]], perms[0])
    # no pairs: every view keeps its numbering
    assert all((p == np.arange(c)).all() for p in _aligned_cluster_order(labels, {}, c))


def test_the_lowest_objective_start_is_kept(monkeypatch):
    import fastmv._cmvnmf._solver as C

    finals = []
    solve = C._solve

    def recording(*args, **kwargs):
        run = solve(*args, **kwargs)
        finals.append(C._final(*run))
        return run

    monkeypatch.setattr(C, "_solve", recording)
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 90)
    views = [np.abs(rng.normal(size=(90, 6))) + 2.0 * np.eye(3)[y] @ rng.random((3, 6))
             for _ in range(2)]
    uviews, uy, _ = simulate.unmapped(views, y, keep=0.9, random_state=0)
    must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=0)
    res = fastmv.cmvnmf(uviews, 3, must, cannot, n_init=4, init="random", max_iter=30,
                        beta=1.0, random_state=1)   # an explicit beta: no tuning solves
    assert len(finals) == 4 and len(set(finals)) > 1
    assert res.objective[-1] == pytest.approx(min(finals), rel=1e-12)


def test_handwritten_starts_that_used_to_end_poor():
    """Handwritten fou+pix+zer, 95 % kept, 5 % pairs: seeds 6 and 7 ended in the worse
    basin (ACC 0.959 and 0.903) before the views' k-means starts were aligned."""
    views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"), views=[1, 4, 5])
    for seed in (6, 7):
        uviews, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
        must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
        res = fastmv.cmvnmf(uviews, 10, must, cannot, random_state=seed)
        acc = np.mean([metrics.accuracy(a, b) for a, b in zip(uy, res.labels)])
        assert acc >= 0.98, (seed, acc)


# ----------------------------------------------------------------------------- no pairs
def _dense_and_text_views(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), 40)
    dense = np.abs(np.eye(4)[y] @ rng.normal(size=(4, 10)) + 0.7 * rng.normal(size=(160, 10))
                   + 3.0)
    topics = rng.random((4, 30)) ** 6
    text = rng.poisson(topics[y] * 8.0).astype(float)
    return simulate.unmapped([dense, text], y, keep=0.95, random_state=seed)[:2]


def test_cosine_silhouette_matches_scikit_learn():
    from sklearn.metrics import silhouette_score

    from fastmv._cmvnmf._start import cosine_silhouette

    rng = np.random.default_rng(3)
    X = np.abs(rng.normal(size=(60, 7)))
    X[5] = 0.0                                   # an all-zero row
    lab = rng.integers(0, 3, 60)
    lab[0] = 4                                   # a singleton cluster; cluster 3 is empty
    want = silhouette_score(X, lab, metric="cosine")
    assert cosine_silhouette(X, lab, 5) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert cosine_silhouette(sp.csr_matrix(X), lab, 5) == pytest.approx(want, rel=1e-12)
    assert cosine_silhouette(X, np.zeros(60, np.int64), 3) == -1.0


def test_without_pairs_a_view_keeps_its_kmeans_start_when_it_separates_better(monkeypatch):
    from fastmv._cmvnmf import _solver
    from fastmv._cmvnmf._start import cosine_silhouette

    views, ys = _dense_and_text_views()
    kw = dict(n_init=1, random_state=0)
    res = fastmv.cmvnmf(views, 4, None, None, **kw)
    start = fastmv.cmvnmf(views, 4, None, None, max_iter=0, **kw)
    assert start.start_kept is None and start.view_start is None
    monkeypatch.setattr(_solver, "ViewChoice", lambda data: None)
    sweeps = fastmv.cmvnmf(views, 4, None, None, **kw)
    monkeypatch.undo()
    normed = _prepare(views, 4, None, None, 1.0, "auto").views
    assert res.start_kept == [True, False]       # the dense view, not the counts
    assert res.view_start == [0, 0] and [S.shape for S in res.silhouette] == [(1, 2), (1, 2)]
    for a, kept in enumerate(res.start_kept):
        s0 = cosine_silhouette(normed[a], start.labels[a], 4)
        s1 = cosine_silhouette(normed[a], sweeps.labels[a], 4)
        assert (s0 > s1) == kept
        np.testing.assert_array_equal(res.labels[a], (start if kept else sweeps).labels[a])
        np.testing.assert_allclose(res.V[a], (start if kept else sweeps).V[a])
    np.testing.assert_array_equal(res.objective, sweeps.objective)
    acc = [metrics.accuracy(y, lab) for y, lab in zip(ys, res.labels)]
    acc_sweeps = [metrics.accuracy(y, lab) for y, lab in zip(ys, sweeps.labels)]
    assert acc[0] > acc_sweeps[0] and acc[1] == acc_sweeps[1]
    # with pairs, or another start, the sweeps' factors are returned as they are
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=0)
    assert fastmv.cmvnmf(views, 4, ml, cl, beta=1.0, **kw).start_kept is None
    assert fastmv.cmvnmf(views, 4, None, None, init="random", **kw).start_kept is None
    # shifted to [0, 1] per feature ("minmax"), the dense view's origin is an artefact: it
    # is judged on the signed features' unit rows
    signed = [views[0] - 3.0, views[1]]
    res = fastmv.cmvnmf(signed, 4, None, None, **kw)
    assert res.normalize[0] == "minmax"
    s0, s1 = res.silhouette[0][0]
    assert res.start_kept[0] == (s0 > s1)
    rows = signed[0] / np.linalg.norm(signed[0], axis=1, keepdims=True)
    assert cosine_silhouette(rows, res.labels[0], 4) == pytest.approx(max(s0, s1))


class _Run:
    """What ViewChoice reads of one start: its k-means factors and its sweeps' factors."""

    def __init__(self, start_V, sweep_V, d=3):
        self.dtype = np.float64
        self.start = ([np.ones((d, V.shape[1])) for V in start_V], [V.copy() for V in start_V])
        self.U = [np.full((d, V.shape[1]), float(k)) for k, V in enumerate(sweep_V)]
        self._V = [V.copy() for V in sweep_V]

    def V(self, a):
        return self._V[a]


def _one_hot(labels, c=2):
    return np.eye(c)[labels] + 0.2


def test_view_choice_takes_the_best_separated_candidate_of_any_start_or_none():
    from fastmv._cmvnmf._select import ViewChoice
    from fastmv._cmvnmf._start import cosine_silhouette

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = np.abs(np.eye(2)[y] * 2.0 + 0.3 * rng.random((60, 2)))
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    good, bad = y, rng.permutation(y)
    data = type("D", (), dict(views=[X, X], judge_views=[X, X], n_clusters=2))()
    choice = ViewChoice(data)
    # start 0 (the lowest objective): view 0's sweeps right, view 1 wrong everywhere;
    # start 1: view 1's k-means start right, its sweeps wrong
    runs = [_Run([_one_hot(bad), _one_hot(bad)], [_one_hot(good), _one_hot(bad)]),
            _Run([_one_hot(bad), _one_hot(good)], [_one_hot(bad), _one_hot(bad)])]
    for run in runs:
        choice.add(run)
    kept, view_start, sil = choice.apply(runs[0], 0)
    assert kept == [False, True] and view_start == [0, 1]
    np.testing.assert_array_equal(np.argmax(runs[0].V(0), axis=1), good)   # its own sweeps
    np.testing.assert_array_equal(np.argmax(runs[0].V(1), axis=1), good)   # start 1's k-means
    np.testing.assert_array_equal(runs[0].U[1], np.ones((3, 2)))
    assert sil[1][1, 0] == pytest.approx(cosine_silhouette(X, good, 2))
    assert sil[1][1, 0] > max(sil[1][0, 0], sil[1][0, 1], sil[1][1, 1])
    # a tie keeps the sweeps of the start kept; a view is judged on ``judge_views`` (for a
    # "minmax" view its signed features' unit rows), not on the view the sweeps factorise
    Xb = np.abs(np.eye(2)[bad] * 2.0 + 0.3 * rng.random((60, 2)))
    Xb = Xb / np.linalg.norm(Xb, axis=1, keepdims=True)
    data.judge_views = [X, Xb]
    choice = ViewChoice(data)
    runs = [_Run([_one_hot(good), _one_hot(good)], [_one_hot(good), _one_hot(good)]),
            _Run([_one_hot(good), _one_hot(bad)], [_one_hot(good), _one_hot(good)])]
    for run in runs:
        choice.add(run)
    kept, view_start, sil = choice.apply(runs[0], 0)
    assert kept == [False, True] and view_start == [0, 1]
    np.testing.assert_array_equal(runs[0].U[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(np.argmax(runs[0].V(1), axis=1), bad)
    assert sil[1][1, 0] == pytest.approx(cosine_silhouette(Xb, bad, 2))


def test_without_pairs_every_view_returns_its_best_separated_partition_over_the_starts(
        monkeypatch):
    from fastmv._cmvnmf import _select, _solver
    from fastmv._cmvnmf._start import cosine_silhouette

    seen = []

    class Recording(_select.ViewChoice):
        def add(self, problem):
            seen.append([(np.argmax(problem.start[1][a], axis=1), np.argmax(problem.V(a), axis=1))
                         for a in range(len(self.views))])
            super().add(problem)

    monkeypatch.setattr(_solver, "ViewChoice", Recording)
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), [60, 20, 10])
    dense = np.abs(np.eye(3)[y] @ rng.normal(size=(3, 8)) + 0.9 * rng.normal(size=(90, 8)) + 2)
    text = rng.poisson((rng.random((3, 40)) ** 4)[y] * 3.0).astype(float)
    views, _ = simulate.unmapped([dense, text], y, keep=0.95, random_state=1)[:2]
    res = fastmv.cmvnmf(views, 3, None, None, n_init=4, random_state=1)
    normed = _prepare(views, 3, None, None, 1.0, "auto").views
    assert len(seen) == 4 and [S.shape for S in res.silhouette] == [(4, 2), (4, 2)]
    for a, X in enumerate(normed):
        sil = np.array([[cosine_silhouette(X, lab, 3) for lab in run[a]] for run in seen])
        np.testing.assert_allclose(res.silhouette[a], sil, rtol=1e-12)
        i, j = res.view_start[a], int(res.start_kept[a] is False)
        np.testing.assert_array_equal(res.labels[a], seen[i][a][j])
        assert sil[i, j] == sil.max()
    # here the two views take their factors from different starts (so one of them not
    # from the start with the lowest objective), and the dense view a k-means start
    assert res.view_start[0] != res.view_start[1] and res.start_kept == [True, False]
