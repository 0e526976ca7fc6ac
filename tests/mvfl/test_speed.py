"""Tests of MVFL's cost-saving paths: reused factor memory, the direct route's quiet stop,
the spreading starts taken from the tuning's spreader, and the k-means restarts by shape."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from fastmv._mvfl import _solver as SV
from fastmv._mvfl import _start as ST
from fastmv._mvfl import _wstep as WS
from fastmv._mvfl._anchor import FirstFactors
from fastmv._mvfl._settle import QUIET_RULES, QUIET_RULES_DIRECT

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _blobs(rng, n_per, c, dims, sep=4.0, noise=1.0):
    y = np.repeat(np.arange(c), n_per)
    views = [rng.normal(size=(c, d))[y] * sep + noise * rng.normal(size=(y.size, d))
             for d in dims]
    return views, y


@pytest.mark.parametrize("route, sparse, shared_gain", [
    ("direct", False, 0.7), ("woodbury", False, 0.0), ("woodbury", False, 0.7),
    ("woodbury", True, 0.0), ("woodbury", True, 0.7)])
def test_factors_written_into_spare_memory_equal_fresh_ones(route, sparse, shared_gain,
                                                            monkeypatch):
    """``factor(D, shared, spare)`` writes into the spare factors' array when its shape fits
    (except for the per-class Grams of sparse views, which their kernel allocates) and gives
    the factors a fresh call gives, bit for bit; a spare of another shape (one shared factor,
    then one per class) is not used."""
    monkeypatch.setattr(WS, "_SHARED_GAIN", shared_gain)
    rng = np.random.default_rng(3)
    n, dims = (30, [6, 4]) if route == "direct" else (9, [14, 11])
    X = rng.normal(size=(n, sum(dims)))
    if sparse:
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.4))
    vp = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
    ws = WS.WStep(X, route, vp)
    c = 8  # enough classes for the shared Grams to pay (shared_gain 0.7)
    D0 = np.full((c, X.shape[1]), 0.3)
    first = ws.factor(D0, True)
    def diagonals():  # constant on each view: weights of numerical rank 1 per view
        return np.repeat(rng.uniform(0.05, 2.0, size=(c, len(dims))), dims, axis=1) + 0.1

    D = diagonals()
    other = ws.factor(D, False, first)  # (1, s, s) spare for (c, s, s) factors: not used
    assert not np.shares_memory(other.L, first.L)
    expect = ws.factor(D, False)
    D2 = diagonals()
    reused = ws.factor(D2, False, other)
    # the per-class Grams of sparse views are formed by their kernel in memory of its own
    per_class_sparse = sparse and (shared_gain == 0.0 or WS.shared_plan(1.0 / D2, vp, n) is None)
    if route == "woodbury" and shared_gain > 0:
        assert WS.shared_plan(1.0 / D2, vp, n) is not None  # the shared Grams are exercised
    assert np.shares_memory(reused.L, other.L) == (not per_class_sparse)
    fresh = ws.factor(D2, False)
    lower = np.tril(np.ones(fresh.L.shape[1:], bool))
    np.testing.assert_array_equal(reused.L[:, lower], fresh.L[:, lower])
    assert not np.shares_memory(expect.L, reused.L)


def test_first_factors_are_never_spare_while_held():
    """The cached first factors of the anchor tuning are not overwritten when handed back as
    spare memory while still held for a later hit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    ws = FirstFactors(WS.WStep(X, "direct", np.array([0, 2, 5])))
    D = np.full((3, 5), 0.1)
    first = ws.factor(D, False)
    kept = first.L.copy()
    later = ws.factor(D + rng.uniform(0.1, 1.0, size=D.shape), False, first)
    assert later.L is not first.L
    np.testing.assert_array_equal(first.L, kept)
    assert ws.factor(D, False) is first


def test_problem_reuses_its_last_factors():
    """A solve's step writes its factors into the memory of the previous step's."""
    rng = np.random.default_rng(1)
    views, y = _blobs(rng, 20, 3, (5, 4), sep=1.0, noise=1.5)
    labels = np.where(rng.random(y.size) < 0.3, y, -1)
    data = SV._prepare(views, 3, labels, None, None, 1e-3, 1e-3, None, 1.0, 0.01, None,
                       "k-means++", 1, 0, "zscore", "auto", "monotone")
    X, vp, _ = SV.normalized_data(data)
    wstep = WS.WStep(X, "direct", vp)
    problem = SV.Problem(data, X, wstep, vp, ST.initial_F(X, data, data.rng, None), tol=0)
    problem.step()  # uniform first weights: one shared factor
    problem.step()  # then the common majoriser's one factor (WStep.factor_common)
    second = problem.spent.L
    problem.step()
    assert problem.spent.L is second and second.shape[0] == 1


@pytest.mark.parametrize("dims, route", [((6, 5), "direct"), ((60, 50), "woodbury")])
def test_quiet_rules_by_route(dims, route):
    """With labels, the direct route stops once the objective's relative change is at most
    1e-2 (QUIET_RULES_DIRECT), the Woodbury route keeps QUIET_RULES; a direct-route solve
    with labels then ends at the first iteration whose change is at most 1e-2 (or by tol)."""
    rng = np.random.default_rng(2)
    views, y = _blobs(rng, 15, 3, dims, sep=1.5, noise=1.0)
    lab = simulate.partial_labels(y, 0.2, random_state=0)
    data = SV._prepare(views, 3, lab, None, None, 1e-3, 1e-3, None, 1.0, 0.01, None,
                       "k-means++", 1, 0, "zscore", "auto", "monotone")
    X, vp, _ = SV.normalized_data(data)
    route_taken, Xw = SV.choose_route(X, "auto")
    assert route_taken == route
    problem = SV.Problem(data, Xw, WS.WStep(Xw, route, vp), vp,
                         ST.initial_F(X, data, data.rng, None))
    assert problem.settle.quiet == (QUIET_RULES_DIRECT if route == "direct" else QUIET_RULES)
    if route == "direct":
        # the scaling pinned: with 9 labels its validation is a coin toss (l2 here, 0.8)
        res = fastmv.mvfl(views, 3, labels=lab, random_state=0, normalize="zscore")
        J = res.objective
        rel = np.abs(np.diff(J)) / np.abs(J[:-1])
        assert res.converged and res.n_iter >= 2
        assert rel[-1] <= 1e-2 and np.all(rel[:-1] > 1e-2)
        assert np.all(np.diff(J) <= 1e-12 * np.abs(J[:-1]))  # still monotone
        assert metrics.accuracy(y, res.labels) > 0.9


@pytest.mark.parametrize("n_per, c", [(12, 3), (5, 5)])
def test_spreading_start_from_the_spreader_matches_the_graph(n_per, c):
    """``initial_F`` with ``init="spread"`` gives the same start from the init tuning's
    spreader as from the kNN graph, for the full labels and for a subset of them (a fold;
    with few labels per class a fold can lose a class, which is then seeded)."""
    rng = np.random.default_rng(5)
    views, y = _blobs(rng, n_per, c, (4, 3), sep=2.0, noise=1.0)
    labels = np.where(rng.random(y.size) < 0.4, y, -1)
    labels[np.arange(c) * n_per] = np.arange(c)  # every class named at least once
    data = SV._prepare(views, c, labels, None, None, 1e-3, 1e-3, None, 1.0, 0.01, None,
                       "spread", 1, 0, "zscore", "auto", "monotone")
    X, _, _ = SV.normalized_data(data)
    km = ST.kmeans_labels(X, data, np.random.default_rng(0), None)
    graph = ST.knn_graph(X)
    prior = data.prior
    spreader = ST.FoldSpreader(graph, prior["rows"], prior["classes"], c)
    from fastmv._mvfl._anchor import _fold_prior

    keeps = [np.ones(prior["rows"].size, bool), np.arange(prior["rows"].size) % 3 != 0]
    keeps.append(prior["rows"] != prior["rows"][0])  # drop one label (maybe its class's last)
    for keep in keeps:
        fold = data._replace(prior=_fold_prior(prior, keep))
        a = ST.initial_F(X, fold, None, None, km=km.copy(), graph=graph)
        b = ST.initial_F(X, fold, None, None, km=km.copy(), graph=spreader)
        np.testing.assert_array_equal(np.argmax(a, axis=1), np.argmax(b, axis=1))
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("d, n_init", [(8, ST._KMEANS_N_INIT_DIRECT), (40, ST._KMEANS_N_INIT)])
def test_start_kmeans_restarts_by_shape(d, n_init, monkeypatch):
    """The start's k-means takes _KMEANS_N_INIT_DIRECT restarts when d <= n, else
    _KMEANS_N_INIT."""
    from fastmv._blocks import _kmeans as KM

    seen = []
    real = KM.kmeans
    monkeypatch.setattr(KM, "kmeans", lambda *a, **k: seen.append(k["n_init"]) or real(*a, **k))
    rng = np.random.default_rng(0)
    views, y = _blobs(rng, 10, 3, (d // 2, d - d // 2))
    data = SV._prepare(views, 3, None, None, None, 1e-3, 1e-3, None, 1.0, None, None,
                       "k-means++", 1, 0, "zscore", "auto", "monotone")
    X, _, _ = SV.normalized_data(data)
    labels = ST.kmeans_labels(X, data, np.random.default_rng(0), None)
    assert seen == [n_init] and labels.shape == (30,)
