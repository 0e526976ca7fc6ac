"""MVFL against its plain NumPy transcription, and what is monotone."""
from __future__ import annotations

import numpy as np
import pytest

import fastmv
from benchmarks.references import mvfl as R
from tests.mvfl import naive as N
from tests.mvfl.helpers import (
    make_views,
    prior_kwargs,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


# ------------------------------------------------------------------------------------------
# the solver against the plain NumPy transcription




@pytest.mark.parametrize("prior,lam1,lam3", [("none", 1e-3, 1.0), ("labels", 1e-2, 10.0),
                                             ("labels", 0.0, 1.0), ("pairs", 1e-3, 0.01),
                                             ("pairs", 0.1, 0.3)])
def test_solver_equals_reference(prior, lam1, lam3):
    rng = np.random.default_rng(8)
    n, c = 40, 3
    views = make_views(rng, n, [6, 9, 4])
    F0 = rng.random((n, c)) + 0.05
    kw = prior_kwargs(rng, n, c, prior)
    r = fastmv.mvfl(views, c, init=F0, normalize=None, lam1=lam1, lam2=1e-2, lam3=lam3,
                    max_iter=12, tol=0, f_step="paper", **kw)
    vp = np.array([0, 6, 15, 19])
    W, b, F, hist = R.mvfl_reference(np.hstack(views), vp, F0, lam1=lam1, lam2=1e-2, lam3=lam3,
                                     max_iter=12, **kw)
    np.testing.assert_allclose(r.W, W, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(r.b, b, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(r.F, F, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(r.objective, hist, rtol=1e-8)
    assert r.n_iter == 12 and not r.converged
    np.testing.assert_array_equal(r.view_ptr, vp)
    g, rows = N.weight_norms(W, vp, 0.0)
    np.testing.assert_allclose(r.view_weights, g, rtol=1e-7)
    np.testing.assert_allclose(r.feature_weights, rows, rtol=1e-7)


# ------------------------------------------------------------------------------------------
# what is monotone


def _run_states(views, c, prior_kw, lam1, lam2, lam3, seed, max_iter=25):
    states = []
    r = fastmv.mvfl(views, c, init="random", normalize=None, lam1=lam1, lam2=lam2, lam3=lam3,
                    random_state=seed, max_iter=max_iter, tol=0, f_step="paper",
                    callback=lambda info: states.append(
                        {k: np.array(v, copy=True) for k, v in info.state.items()}),
                    **prior_kw)
    return r, states


@pytest.mark.parametrize("prior", ["none", "labels", "pairs"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_monotone_f_step_objective_never_rises(prior, seed):
    """Default ``f_step="monotone"`` (the joint step): the recorded objective (ε-smoothed
    norms, orthogonality penalty, anchor) never increases, from a random, a k-means or a given
    start, with or without the anchor, and it is the objective of the returned iterate."""
    rng = np.random.default_rng(200 + seed)
    n, c = int(rng.integers(12, 60)), int(rng.integers(2, 6))
    views = make_views(rng, n, [int(rng.integers(1, 25)) for _ in range(int(rng.integers(1, 4)))])
    kw = prior_kwargs(rng, n, c, prior)
    lam1, lam2 = 10 ** rng.uniform(-3, 0), 10 ** rng.uniform(-3, 0)
    lam3 = 10 ** rng.uniform(-2, 0) if prior == "pairs" else 10 ** rng.uniform(-1, 3)
    rho = 10 ** rng.uniform(-1, 1)
    mu = 10 ** rng.uniform(-3, 0)
    F0 = rng.random((n, c))
    X = np.hstack(views)
    Ip = None if prior != "pairs" else R.pair_matrix(n, kw["must_link"], kw["cannot_link"])
    for init, anchor in (("random", 0.0), ("k-means++", mu), (F0, mu), (F0, None)):
        r = fastmv.mvfl(views, c, init=init, lam1=lam1, lam2=lam2, lam3=lam3, rho=rho,
                        anchor=anchor, normalize=None, random_state=seed, max_iter=40, tol=0,
                        **kw)
        J = r.objective
        assert np.all(np.diff(J) <= 1e-12 * np.abs(J[:-1])), np.diff(J).max()
        assert np.isfinite(J).all() and (r.F >= 0).all()
        if isinstance(init, str) and anchor:
            continue  # the start is not observable: only the monotonicity is checked
        E = r.F.T @ r.F - np.eye(c)
        J_last = R.mvfl_objective(X, r.view_ptr, r.W, r.b, r.F, lam1, lam2, lam3,
                                  labels=kw.get("labels"), Ip=Ip, eps=1e-3)
        J_last += rho / 4 * (E ** 2).sum()
        if not isinstance(init, str):
            mu_used = 10 * max(lam1, lam2) if anchor is None else anchor
            J_last += mu_used * ((r.F - F0) ** 2).sum()
        assert np.isclose(J[-1], J_last, rtol=1e-9)


def test_joint_step_converges_where_alternating_crawls():
    """``d > n`` (the fit is exact for any ``F``): the joint step reaches ``tol`` quickly."""
    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(3), 15)
    views = [np.eye(3)[y] @ rng.normal(size=(3, 80)) + rng.normal(size=(45, 80))
             for _ in range(2)]
    lab = fastmv.simulate.partial_labels(y, 0.2, random_state=0)
    r = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert r.converged and r.n_iter < 100
    assert fastmv.metrics.accuracy(y, r.labels) == 1.0


@pytest.mark.parametrize("prior", ["none", "labels", "pairs"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monotone_steps(prior, seed):
    """``f_step="paper"``: the provable descent properties, step by step, on random problems.

    The objective J itself is not monotone (the multiplicative F step descends the
    Lagrangian with a frozen multiplier, not J), so each step's own guarantee is checked:

    * W step (IRLS): the ε-smoothed objective with F fixed does not increase;
    * F step: L(F) = ‖Z − F‖² + λ3 φ_pairs(F) + tr(Γ (FᵀF − I)) with Γ frozen at the
      value computed from the previous F does not increase (on the unlabelled rows, with
      labels);
    * labelled rows: the closed form does not increase ‖Z_l − F_l‖² + λ3 ‖I_l ⊙ F_l‖².
    """
    rng = np.random.default_rng(100 + seed)
    n, c = int(rng.integers(15, 50)), int(rng.integers(2, 5))
    views = make_views(rng, n, [int(rng.integers(2, 20)) for _ in range(int(rng.integers(1, 4)))])
    X = np.hstack(views)
    vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in views])])
    kw = prior_kwargs(rng, n, c, prior)
    lam1, lam2, lam3 = 10 ** rng.uniform(-3, 0), 10 ** rng.uniform(-3, 0), (
        0.05 if prior == "pairs" else 5.0)
    eps = 1e-8
    r, states = _run_states(views, c, kw, lam1, lam2, lam3, seed)
    Ip = None
    if prior == "pairs":
        Ip = R.pair_matrix(n, kw["must_link"], kw["cannot_link"])
    if prior == "labels":
        y = kw["labels"]
        lab, unl = np.flatnonzero(y >= 0), np.flatnonzero(y < 0)
    else:
        unl = np.arange(n)

    def J_eps(W, b, F):  # smoothed objective without the prior (W-step part)
        g, rows = N.weight_norms(W, vp, eps)
        return ((X @ W + b - F) ** 2).sum() + lam1 * g.sum() + lam2 * rows.sum()

    for t in range(1, len(states)):
        prev, cur = states[t - 1], states[t]
        # W step at iteration t+1 starts from W_t, F_t
        a = J_eps(prev["W"], prev["b"], prev["F"])
        b = J_eps(cur["W"], cur["b"], prev["F"])
        assert b <= a + 1e-10 * abs(a), (t, a, b)
        # F step: frozen multiplier from F_prev and the new Z
        Z, Fo, Fn = cur["Z"], prev["F"], cur["F"]
        S = Fo[unl].T @ Z[unl]
        Gam = (S + S.T) / 2 - np.eye(c)
        if Ip is not None:
            Gam -= lam3 * Fo.T @ Ip @ Fo

        def L(F):
            val = ((Z[unl] - F[unl]) ** 2).sum()
            val += np.trace(Gam @ (F[unl].T @ F[unl] - np.eye(c)))
            if Ip is not None:
                val += lam3 * np.sum(Ip * (F @ F.T))
            return val

        lo, ln = L(Fo), L(Fn)
        assert ln <= lo + 1e-10 * max(1.0, abs(lo)), (t, lo, ln)
        if prior == "labels" and lab.size:
            Il = np.ones((lab.size, c))
            Il[np.arange(lab.size), y[lab]] = 0.0

            def Jl(F):
                return ((Z[lab] - F[lab]) ** 2).sum() + lam3 * ((Il * F[lab]) ** 2).sum()

            assert Jl(Fn) <= Jl(Fo) + 1e-12
    # the reported objective is J at every iteration (exact norms)
    for t, st in enumerate(states):
        J = R.mvfl_objective(X, vp, st["W"], st["b"], st["F"], lam1, lam2, lam3,
                             labels=kw.get("labels"), Ip=Ip)
        assert np.isclose(r.objective[t], J, rtol=1e-10)


@pytest.mark.parametrize("prior", ["none", "labels", "pairs"])
def test_F_nonnegative_throughout(prior):
    rng = np.random.default_rng(9)
    views = make_views(rng, 50, [5, 12])
    kw = prior_kwargs(rng, 50, 4, prior)
    seen = []

    def cb(info):
        assert np.isfinite(info.state["F"]).all() and (info.state["F"] >= 0).all()
        seen.append(info.iteration)

    r = fastmv.mvfl(views, 4, lam3=0.05 if prior == "pairs" else 1.0, random_state=0,
                    max_iter=30, tol=0, callback=cb, **kw)
    assert seen == list(range(1, 31)) and (r.F >= 0).all()
