"""MVFL's W step: its routes against each other and the plain solve."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics
from fastmv._mvfl import _fstep as FS
from fastmv._mvfl import _wstep as WS
from tests.mvfl import naive as N
from tests.mvfl.helpers import (
    FLOATS,
    make_views,
    planted_blobs,
    prior_kwargs,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


# ------------------------------------------------------------------------------------------
# the W step


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n,d", [(30, 90), (60, 25), (8, 200)])
def test_woodbury_equals_direct(sparse, n, d):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(n, d)) + 3.0  # off-centre: the centring must be right
    if sparse:
        X = sp.csr_matrix(X * (rng.random((n, d)) < 0.3))
    F = rng.random((n, 5))
    for D, shared in ((rng.uniform(1e-3, 10, size=(5, d)), False),
                      (np.tile(rng.uniform(1e-3, 10, size=d), (5, 1)), True)):
        Wd, bd = WS.WStep(X, "direct").solve(F, D, shared)
        Ww, bw = WS.WStep(X, "woodbury").solve(F, D, shared)
        scale = np.abs(Wd).max()
        assert np.abs(Wd - Ww).max() <= 1e-8 * scale
        assert np.abs(bd - bw).max() <= 1e-8 * max(1.0, np.abs(bd).max())
        # and both solve the normal equations of the centred problem
        Xd = X.toarray() if sparse else X
        Xc = Xd - Xd.mean(axis=0)
        Fc = F - F.mean(axis=0)
        for k in range(5):
            res = Xc.T @ (Xc @ Wd[:, k]) + D[k] * Wd[:, k] - Xc.T @ Fc[:, k]
            assert np.abs(res).max() <= 1e-8 * max(1.0, np.abs(Xc.T @ Fc[:, k]).max())
        np.testing.assert_allclose(bd, F.mean(axis=0) - Xd.mean(axis=0) @ Wd, atol=1e-10)


def _irls_weights(rng, c, view_ptr, lam1=1e-3, lam2=1e-3):
    """``D_k⁻¹`` with the structure of the W step: ``1/(λ2 q_i + λ1 p_kv)``."""
    d = int(view_ptr[-1])
    q = rng.uniform(0.5, 500.0, d)
    p = rng.uniform(0.5, 500.0, (c, len(view_ptr) - 1))
    return 1.0 / (lam2 * q + lam1 * np.repeat(p, np.diff(view_ptr), axis=1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,c,dims", [(12, 7, (5, 30, 0, 9)), (1, 3, (4, 6)), (9, 1, (20,)),
                                      (15, 40, (60, 3, 90))])
def test_shared_grams_equal_per_class(dtype, n, c, dims):
    rng = np.random.default_rng(n + c)
    vp = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
    Y = rng.normal(size=(n, int(vp[-1]))).astype(dtype)
    dinv = _irls_weights(rng, c, vp)
    plan = WS.compress_weights(dinv, vp)
    assert all(b.shape[0] <= min(c, hi - lo) for lo, hi, b, _ in plan)

    def grams(v, basis):
        lo, hi = plan[v][0], plan[v][1]
        return np.stack([N.per_class_grams(Y[:, lo:hi], u[None])[0] for u in basis])

    got = WS.shared_grams(plan, c, n, grams, dtype=dtype)
    want = N.per_class_grams(Y, dinv)
    assert got.dtype == dtype and got.shape == (c, n, n)
    scale = max(np.abs(want).max(), 1.0)
    np.testing.assert_allclose(got, want, atol=(1e-4 if dtype == np.float32 else 1e-10) * scale)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,c,dims,rows", [(12, 7, (5, 30, 0, 9), 5), (1, 3, (4, 6), 64),
                                           (9, 1, (20,), 2), (15, 40, (60, 3, 90), 64),
                                           (13, 6, (7, 11), 1)])
def test_shared_grams_lower_equal_per_class(dtype, n, c, dims, rows, monkeypatch):
    """The row-blocked lower triangles equal the per-class Grams' (blocks of one row up to
    the whole matrix; an empty view; n = 1; c = 1); the strict upper triangle is not read."""
    monkeypatch.setattr(WS, "_GRAM_ROWS", rows)
    rng = np.random.default_rng(n + c + rows)
    vp = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
    Y = rng.normal(size=(n, int(vp[-1]))).astype(dtype)
    dinv = _irls_weights(rng, c, vp)
    plan = WS.compress_weights(dinv, vp)
    got = WS.shared_grams_lower(plan, c, [np.ascontiguousarray(Y[:, lo:hi])
                                          for lo, hi, _, _ in plan], n)
    want = N.per_class_grams(Y, dinv)
    assert got.dtype == dtype and got.shape == (c, n, n)
    low = np.tril(np.ones((n, n), bool))
    scale = max(np.abs(want).max(), 1.0)
    np.testing.assert_allclose(got[:, low], want[:, low],
                               atol=(1e-4 if dtype == np.float32 else 1e-10) * scale)


def test_shared_grams_lower_empty_plan_is_zero():
    got = WS.shared_grams_lower([], 3, [], 4)
    assert got.shape == (3, 4, 4) and not got.any()


@pytest.mark.parametrize("sparse", [False, True])
def test_shared_woodbury_step_equals_per_class(sparse, monkeypatch):
    rng = np.random.default_rng(3)
    n, c, vp = 20, 30, np.array([0, 150, 160, 400])
    X = rng.normal(size=(n, 400)) + 2.0
    if sparse:
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.2))
    D = 1.0 / _irls_weights(rng, c, vp)
    F = rng.random((n, c))
    assert WS.shared_plan(1.0 / D, vp, n) is not None  # many classes: the shared form
    W1, b1 = WS.WStep(X, "woodbury", vp).solve(F, D, False)
    monkeypatch.setattr(WS, "_SHARED_GAIN", 0.0)  # force the per-class Grams
    W0, b0 = WS.WStep(X, "woodbury", vp).solve(F, D, False)
    np.testing.assert_allclose(W1, W0, atol=1e-9 * np.abs(W0).max())
    np.testing.assert_allclose(b1, b0, atol=1e-9 * max(np.abs(b0).max(), 1.0))
    # a batch smaller than one view's Grams (sparse), row blocks of 3 rows (dense): the same
    monkeypatch.setattr(WS, "_SHARED_GAIN", 0.7)
    monkeypatch.setattr(WS, "_SHARED_BATCH_BYTES", 3 * n * n * 8)
    monkeypatch.setattr(WS, "_GRAM_ROWS", 3)
    W2, _ = WS.WStep(X, "woodbury", vp).solve(F, D, False)
    np.testing.assert_allclose(W2, W0, atol=1e-9 * np.abs(W0).max())


def test_spread_start_seeds_classes_without_labels():
    """Planted: 4 separated blobs, labels only in classes 0 and 1. Spreading alone cannot
    grow classes 2 and 3; seeded from their k-means clusters it recovers all four."""
    from fastmv._mvfl import _start as ST

    rng = np.random.default_rng(0)
    views, y = planted_blobs(rng, 25, 4, (6, 5), sep=6.0)
    X = np.hstack(views)
    rows = np.array([0, 1, 2, 25, 26, 27])
    classes = y[rows]
    graph = ST.knn_graph(X)
    km = ST._match_clusters(fastmv.kmeans(X, 4, random_state=0).labels, rows, classes, 4)
    plain = np.argmax(ST._spread(graph, rows, classes, 4), axis=1)
    assert np.unique(plain).size <= 2
    seeded = ST._spread_labels(graph, rows, classes, 4, km)
    assert metrics.accuracy(y, seeded) == 1.0
    new_rows, new_classes = ST._seed_missing(ST._spread(graph, rows, classes, 4), rows,
                                             classes, 4, km)
    assert set(new_classes[rows.size:]) == {2, 3}
    assert set(y[new_rows[rows.size:]]) == {2, 3}  # each seed lies in an unlabelled class
    r = fastmv.mvfl(views, 4, labels=np.where(np.isin(np.arange(y.size), rows), y, -1),
                    init="spread", random_state=0)
    assert metrics.accuracy(y, r.labels) == 1.0


def test_first_factors_shared_then_released():
    """The anchor's fold solves and the solve share the first iteration's factors (the same
    arrays); once the solve has taken them, they are no longer held."""
    from fastmv._mvfl._anchor import FirstFactors

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    ws = FirstFactors(WS.WStep(X, "direct", np.array([0, 2, 5])))
    D = np.full((3, 5), 0.1)
    first = ws.factor(D, False)
    assert ws.factor(D.copy(), False) is first  # a fold solve's first step
    other = ws.factor(D + 1.0, False)  # a later step: computed, not cached
    assert other is not first and ws.factor(D, False) is first
    ws.keep = False
    assert ws.factor(D, False) is first  # the solve's first step: the last use
    again = ws.factor(D, False)
    assert again is not first
    np.testing.assert_array_equal(again.L, first.L)
    assert ws.n == 12 and ws.route == "direct"  # everything else is the wrapped W step


def _fold_problem(anchor):
    """A labelled direct-route problem at its k-means start (``Problem`` and its parts)."""
    from fastmv._mvfl import _solver as SV

    rng = np.random.default_rng(4)
    views, y = planted_blobs(rng, 15, 3, (4, 3), sep=2.0, noise=1.5)
    labels = np.where(rng.random(y.size) < 0.3, y, -1)
    data = SV._prepare(views, 3, labels, None, None, 1e-3, 1e-3, None, 1.0, anchor, None,
                       "k-means++", 1, 0, "zscore", "auto", "monotone")
    X, vp, _ = SV.normalized_data(data)
    wstep = WS.WStep(*SV.choose_route(X, "auto")[::-1], vp)
    assert wstep.route == "direct"
    F0 = SV.initial_F(X, data, data.rng, None)
    return SV, data, X, wstep, vp, F0


def test_fold_solve_stops_after_the_step_f():
    """The anchor tuning's fold solve (the first iteration's F step, no W, b or objective)
    leaves the F of a full first iteration, bit for bit."""
    SV, data, X, wstep, vp, F0 = _fold_problem(0.1)
    full = SV.Problem(data, X, wstep, vp, F0.copy())
    full.step()
    short = SV.Problem(data, X, wstep, vp, F0.copy())
    short.joint_f_step(short.factor())
    np.testing.assert_array_equal(short.F, full.F)
    assert short.W is None  # nothing after the F step was formed


def test_anchor_candidates_share_first_evaluations(monkeypatch):
    """Two anchors from one start with the same factors: the second reuses the first's
    evaluations at the start and the first trial point (a memo of at most MEMO_POINTS)
    and ends at the F it reaches without the memo, bit for bit."""
    SV, data, X, wstep, vp, F0 = _fold_problem(0.1)
    fits = []
    fit = wstep.fit
    monkeypatch.setattr(wstep, "fit", lambda *a: fits.append(1) or fit(*a))
    factors = SV.Problem(data, X, wstep, vp, F0.copy()).factor()

    def f_after(anchor, memo):
        problem = SV.Problem(data._replace(anchor=anchor), X, wstep, vp, F0.copy())
        problem.joint_f_step(factors, memo)
        return problem.F

    alone = f_after(0.01, None)
    n_alone = len(fits)
    memo = []
    f_after(0.1, memo)
    assert 0 < len(memo) <= FS.MEMO_POINTS
    fits.clear()
    np.testing.assert_array_equal(f_after(0.01, memo), alone)
    assert len(fits) == n_alone - len(memo)
    other = SV.Problem(data, X, wstep, vp, F0.copy()).factor()  # other factors: no reuse
    fits.clear()
    problem = SV.Problem(data._replace(anchor=0.01), X, wstep, vp, F0.copy())
    problem.joint_f_step(other, memo)
    assert len(fits) == n_alone


def test_matcher_solves_each_table_once():
    """init='auto' renumbers k-means for each fold's labels: one matching per distinct
    contingency table, the same permutation as matching every time."""
    from fastmv._mvfl import _start as ST

    rng = np.random.default_rng(2)
    km = rng.integers(0, 4, 60)
    rows = np.arange(0, 60, 3)
    classes = (km[rows] + (rng.random(rows.size) < 0.3)) % 4
    match = ST._Matcher(km, 4)
    for f in range(rows.size):
        keep = np.arange(rows.size) != f
        got = match(rows[keep], classes[keep])
        np.testing.assert_array_equal(got, ST._match_clusters(km, rows[keep], classes[keep], 4))
    cells = {(km[r], k) for r, k in zip(rows, classes)}
    assert len(match._done) <= len(cells)


def test_fold_spreading_equals_spreading_each_fold():
    """init='auto' spreads from each fold's labels through one linear basis; it must give
    the labels of a spreading run per fold (missing classes seeded, unreached fallback)."""
    from fastmv._mvfl import _start as ST

    rng = np.random.default_rng(1)
    n, c = 120, 9
    y = rng.integers(0, c, n)
    X = rng.normal(size=(n, 4)) + np.eye(c)[y] @ rng.normal(size=(c, 4)) * 3.0
    rows = rng.choice(n - 10, 16, replace=False)
    classes = y[rows]
    # the last 10 rows form their own component: rows no label reaches
    graph = sp.block_diag([ST.knn_graph(X[:-10]), ST.knn_graph(X[-10:])], format="csr")
    spreader = ST.FoldSpreader(graph, rows, classes, c)
    fallback = rng.integers(0, c, n)
    for _ in range(10):
        tr = np.ones(rows.size, bool)
        tr[rng.choice(rows.size, 4, replace=False)] = False
        want = ST._spread_labels(graph, rows[tr], classes[tr], c, fallback)
        np.testing.assert_array_equal(spreader.labels(tr, fallback), want)
    np.testing.assert_array_equal(spreader.labels(np.ones(rows.size, bool), fallback)[-10:],
                                  fallback[-10:])


@pytest.mark.parametrize("prior", ["none", "labels", "pairs"])
def test_solver_routes_agree(prior, monkeypatch):
    """The two W-step routes solve the same systems: with the same F-step schedule (the
    Woodbury route's default takes more inner steps) the iterates agree."""
    from fastmv._mvfl import _solver as S

    monkeypatch.setattr(S, "N_INNER_WOODBURY", S.N_INNER)
    rng = np.random.default_rng(7)
    views = make_views(rng, 25, [30, 20], sparse=True)  # d = 50 > n = 25
    kw = prior_kwargs(rng, 25, 3, prior)
    res = [fastmv.mvfl(views, 3, solver=s, init="random", random_state=0, max_iter=15, tol=0,
                       **kw) for s in ("direct", "woodbury", "auto")]
    for r in res[1:]:
        np.testing.assert_allclose(r.W, res[0].W, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(r.F, res[0].F, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(r.objective, res[0].objective, rtol=1e-7)
