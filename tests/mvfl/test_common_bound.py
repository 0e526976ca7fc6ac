"""MVFL's W step through the common majoriser (``WStep.factor_common``): one system for
every class, a bound that touches the reweighted objective at the weights' ``W``, the same
fixed points as the per-class systems."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv._mvfl import _wstep as WS
from tests.mvfl import naive as N
from tests.mvfl.helpers import planted_blobs

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")

# (n, d, c, view sizes, route): d > n and d <= n, one class, one sample
SHAPES = [(20, 60, 4, (25, 35), "woodbury"), (40, 12, 5, (5, 7), "direct"),
          (9, 30, 1, (30,), "woodbury"), (25, 25, 3, (10, 15), "direct"),
          (1, 8, 3, (3, 5), "woodbury"), (30, 50, 6, (50,), "direct")]


def _problem(rng, n, d, c, dims, sparse=False):
    X = rng.normal(size=(n, d)) + 2.0  # off-centre: the centring must be right
    if sparse:
        X = sp.csr_matrix(X * (rng.random((n, d)) < 0.4))
    vp = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
    q = rng.uniform(0.5, 500.0, d)
    p = rng.uniform(0.5, 500.0, (c, len(dims)))
    D = 1e-3 * q + 1e-2 * np.repeat(p, np.diff(vp), axis=1)  # λ2 q_i + λ1 p_kv
    return X, vp, D, rng.random((n, c)), rng.normal(size=(d, c))


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


def _reweighted(X, F, D, W):
    """``min_b ‖XW + 1bᵀ − F‖² + Σ_k w_kᵀ diag(D_k) w_k`` (the objective the W step
    majorises), by the plain formulas."""
    Xc = _dense(X) - _dense(X).mean(axis=0)
    R = Xc @ W - (F - F.mean(axis=0))
    return float((R ** 2).sum() + sum(W[:, k] @ (D[k] * W[:, k]) for k in range(F.shape[1])))


def _surrogate_minimiser(X, F, D, W0):
    """The minimiser of the common bound by a dense solve: ``(X̃ᵀX̃ + D̂) w_k = X̃ᵀf̃_k +
    (D̂ − D_k) w⁰_k`` with ``D̂ = max_k D_k``."""
    Xc = _dense(X) - _dense(X).mean(axis=0)
    Fc = F - F.mean(axis=0)
    Dhat = D.max(axis=0)
    A = Xc.T @ Xc + np.diag(Dhat)
    return np.column_stack([np.linalg.solve(A, Xc.T @ Fc[:, k] + (Dhat - D[k]) * W0[:, k])
                            for k in range(F.shape[1])])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n,d,c,dims,route", SHAPES)
def test_common_bound_weights_and_value(sparse, n, d, c, dims, route):
    """``weights`` gives the bound's minimiser, ``fit`` its value at the centred ``F``;
    the value lies between the per-class minimum and the reweighted objective at ``W⁰``
    (the bound majorises it and touches it there)."""
    rng = np.random.default_rng(n * 100 + d + c)
    X, vp, D, F, W0 = _problem(rng, n, d, c, dims, sparse)
    ws = WS.WStep(X, route, vp)
    fac = ws.factor_common(D, W0)
    assert fac.L.shape[0] == 1  # one factorisation for every class
    W, b = ws.weights(fac, F)
    want = _surrogate_minimiser(X, F, D, W0)
    scale = max(np.abs(want).max(), 1.0)
    np.testing.assert_allclose(W, want, atol=1e-8 * scale)
    np.testing.assert_allclose(b, F.mean(axis=0) - _dense(X).mean(axis=0) @ W, atol=1e-8 * scale)
    value, _ = ws.fit(fac, F - F.mean(axis=0))
    Dhat = D.max(axis=0)
    gap = sum((W[:, k] - W0[:, k]) @ ((Dhat - D[k]) * (W[:, k] - W0[:, k])) for k in range(c))
    np.testing.assert_allclose(value, _reweighted(X, F, D, W) + gap, rtol=1e-8, atol=1e-10)
    exact, _ = ws.fit(ws.factor(D, False), F - F.mean(axis=0))
    top = _reweighted(X, F, D, W0)
    assert exact - 1e-9 * abs(exact) <= value <= top + 1e-9 * abs(top)


@pytest.mark.parametrize("n,d,c,dims,route", SHAPES)
def test_common_bound_gradient(n, d, c, dims, route):
    """``apply_m`` is half the gradient of ``fit`` in the centred ``F`` (the joint ``F`` step
    descends it): checked against central differences."""
    rng = np.random.default_rng(7 + n + d)
    X, vp, D, F, W0 = _problem(rng, n, d, c, dims)
    ws = WS.WStep(X, route, vp)
    fac = ws.factor_common(D, W0)
    Fc = F - F.mean(axis=0)
    G = 2.0 * ws.apply_m(fac, Fc)
    E = rng.normal(size=Fc.shape)
    E -= E.mean(axis=0)
    h = 1e-5
    numeric = (ws.fit(fac, Fc + h * E)[0] - ws.fit(fac, Fc - h * E)[0]) / (2 * h)
    assert np.isclose(np.vdot(G, E), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n,d,c,dims,route", SHAPES)
def test_common_bound_keeps_the_fixed_points(n, d, c, dims, route):
    """At ``W⁰`` = the per-class solution for ``F``, the bound's minimiser is ``W⁰`` and its
    value the per-class one: the iteration has the fixed points of the per-class systems."""
    rng = np.random.default_rng(3 * n + d)
    X, vp, D, F, _ = _problem(rng, n, d, c, dims)
    ws = WS.WStep(X, route, vp)
    exact = ws.factor(D, False)
    W0, _ = ws.weights(exact, F)
    fac = ws.factor_common(D, W0)
    W, _ = ws.weights(fac, F)
    np.testing.assert_allclose(W, W0, atol=1e-8 * max(np.abs(W0).max(), 1.0))
    Fc = F - F.mean(axis=0)
    assert np.isclose(ws.fit(fac, Fc)[0], ws.fit(exact, Fc)[0], rtol=1e-9, atol=1e-12)


def test_common_bound_equals_per_class_when_diagonals_agree():
    """With one diagonal for every class the bound is the per-class system itself."""
    rng = np.random.default_rng(11)
    X, vp, D, F, W0 = _problem(rng, 15, 40, 3, (40,))
    D[:] = D[:1]
    ws = WS.WStep(X, "woodbury", vp)
    W1, b1 = ws.weights(ws.factor_common(D, W0), F)
    W2, b2 = ws.solve(F, D, True)
    np.testing.assert_allclose(W1, W2, atol=1e-10 * np.abs(W2).max())
    np.testing.assert_allclose(b1, b2, atol=1e-10)


@pytest.mark.parametrize("dims", [(30, 25), (6, 5)])  # Woodbury (d > n) and direct
def test_solver_factors_once_per_iteration(monkeypatch, dims):
    """The default monotone solve factorises one system per reweighting, whatever ``c``, and
    its objective never rises; ``f_step="paper"`` keeps the per-class systems."""
    rng = np.random.default_rng(2)
    views, y = planted_blobs(rng, 5, 8, dims)
    labels = fastmv.simulate.partial_labels(y, 0.3, random_state=0)
    sizes = []
    factor = WS.WStep.factor

    def counting(self, D, shared, spare=None):
        out = factor(self, D, shared, spare)
        sizes.append(out.L.shape[0])
        return out

    monkeypatch.setattr(WS.WStep, "factor", counting)
    r = fastmv.mvfl(views, 8, labels=labels, random_state=0, anchor=0.01, tol=0, max_iter=6)
    assert r.n_iter == 6 and sizes == [1] * len(sizes) and len(sizes) >= 6
    assert np.all(np.diff(r.objective) <= 1e-12 * np.abs(r.objective[:-1]))
    assert fastmv.metrics.accuracy(y, r.labels) == 1.0
    sizes.clear()
    fastmv.mvfl(views, 8, labels=labels, random_state=0, f_step="paper", max_iter=3, tol=0)
    assert 8 in sizes


def test_anchor_tuning_leaves_the_shared_first_factors_intact():
    """The anchor's fold solves (direct route) share the first factors with the solve and
    take common-bound steps after them: the tuned solve equals the solve given the chosen
    anchor, so no fold step wrote into the shared factors."""
    rng = np.random.default_rng(4)
    views, y = planted_blobs(rng, 12, 5, (6, 8), sep=1.5, noise=1.5)
    labels = fastmv.simulate.partial_labels(y, 0.3, random_state=1)
    tuned = fastmv.mvfl(views, 5, labels=labels, random_state=0, normalize="zscore",
                        init="k-means++")
    anchor = tuned.tuning["anchor"]["chosen"]
    fixed = fastmv.mvfl(views, 5, labels=labels, random_state=0, normalize="zscore",
                        init="k-means++", anchor=anchor)
    assert tuned.n_iter >= 2
    np.testing.assert_array_equal(tuned.F, fixed.F)
    np.testing.assert_array_equal(tuned.objective, fixed.objective)


@pytest.mark.parametrize("p,s,c", [(1, 30, 5), (1, 1, 3), (1, 12, 1), (4, 10, 4), (1, 7, 0)])
def test_solve_factored_equals_the_plain_solve(p, s, c):
    """The solves behind ``fit``: LAPACK ``potrs`` for one factor shared by every column, the
    kernel for one factor per column, both as the plain triangular solves (the kernel's
    NumPy twin)."""
    rng = np.random.default_rng(p * 100 + s + c)
    L = np.empty((p, s, s))
    for j in range(p):
        A = rng.normal(size=(s, s))
        L[j] = np.linalg.cholesky(A @ A.T + s * np.eye(s))
        L[j][np.triu_indices(s, 1)] = rng.normal(size=s * (s - 1) // 2)  # never read
    R = np.asfortranarray(rng.normal(size=(s, c)))
    got = WS._solve_factored(L, R)
    want = N.cholesky_solve(L, R)
    assert got.shape == (s, c)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
