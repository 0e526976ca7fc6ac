"""CMVNMF's mathematics (docs/algorithms.md §4): the objective never increases, the fixed
points are stationary, the solver equals its NumPy reference, reduces to NMF without pairs,
recovers planted clusters."""
from __future__ import annotations

import numpy as np
import pytest

import fastmv
from benchmarks.references import cmvnmf as R
from fastmv import metrics, simulate
from fastmv._cmvnmf import _solver as S
from fastmv._cmvnmf._problem import Problem
from fastmv._cmvnmf._solver import _prepare
from tests.cmvnmf import naive as N
from tests.cmvnmf.helpers import planted_unmapped, random_problem

# short runs (small max_iter) are the point of most tests here
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _dense_objective(views, prob, ml, cl, beta):
    return N.cmvnmf_objective(views, prob.U, [prob.V(a) for a in range(prob.m)], ml, cl, beta)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_non_increasing_at_every_update(sparse, seed):
    rng = np.random.default_rng(seed)
    beta = [1.0, 0.3, 5.0][seed]
    X, ml, cl, U0, V0 = random_problem(rng, sparse=sparse)
    data = _prepare(X, 3, ml, cl, beta, "l2")
    views = data.views
    prob = Problem(views, data.blocks, U0, V0, beta=beta, rescale=False)
    f = _dense_objective(views, prob, ml, cl, beta)
    assert np.isclose(prob.objective(), f, rtol=1e-10)
    start = f
    for _ in range(40):
        for a in range(prob.m):
            for update in (prob.update_u, prob.update_v):
                update(a)
                g = _dense_objective(views, prob, ml, cl, beta)
                assert g <= f * (1 + 1e-12) + 1e-12, (update.__name__, a, f, g)
                f = g
        # the cached objective the solver uses equals the dense one after a sweep
        assert np.isclose(prob.objective(), f, rtol=1e-9)
    assert f < 0.9 * start  # it did decrease, not just stay


def test_intra_view_symmetrised_rule_reaches_stationary_point():
    # with only intra-view must-links, the fixed point satisfies the KKT conditions of the
    # objective: V ⊙ gradient ≈ 0 (complementary slackness) for the symmetrised Laplacian term
    rng = np.random.default_rng(3)
    X = [rng.random((12, 5))]
    ml = {(0, 0): np.array([[0, 1], [1, 2], [3, 7], [4, 9]])}
    data = _prepare(X, 2, ml, {}, 2.0, None)
    prob = Problem(data.views, data.blocks, [rng.random((5, 2))], [rng.random((12, 2))], beta=2.0,
                    rescale=False)
    for _ in range(5000):
        prob.sweep()
    U, V = prob.U[0], prob.V(0)
    M = np.zeros((12, 12))
    for i, j in ml[(0, 0)]:
        M[i, j] += 1
    Ms = M + M.T
    L = np.diag(Ms.sum(1)) - Ms
    grad = 2 * (V @ U.T @ U - X[0] @ U) + 2 * 2.0 * L @ V
    scale = np.abs(V * 2 * (X[0] @ U)).max()  # size of the terms that cancel at a KKT point
    assert np.abs(V * grad).max() < 1e-4 * scale


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("rescale", [False, True])
def test_solver_equals_numpy_reference(sparse, rescale, monkeypatch):
    # the plain sweeps (the extrapolated ones: tests/cmvnmf/test_extrapolation.py)
    monkeypatch.setattr(S, "_EXTRAPOLATE", False)
    rng = np.random.default_rng(7)
    X, ml, cl, U0, V0 = random_problem(rng, sparse=sparse)
    res = fastmv.cmvnmf(X, 3, ml, cl, beta=1.0, init=(U0, V0), rescale=rescale, max_iter=25,
                        tol=0.0)
    views = _prepare(X, 3, ml, cl, 1.0, "l2").views
    U, V, hist = R.cmvnmf_reference(views, ml, cl, U0, V0, 25, rescale=rescale)
    assert res.n_iter == 25 and not res.converged
    for a in range(3):
        np.testing.assert_allclose(res.U[a], U[a], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(res.V[a], V[a], rtol=1e-8, atol=1e-12)
        np.testing.assert_array_equal(res.labels[a], np.argmax(V[a], axis=1))
    np.testing.assert_allclose(res.objective, hist, rtol=1e-9)
    f0 = N.cmvnmf_objective(views, U0, V0, ml, cl, 1.0)
    assert np.isclose(res.initial_objective, f0, rtol=1e-9)
    f_final = N.cmvnmf_objective(views, res.U, res.V, ml, cl, 1.0)
    assert np.isclose(res.objective[-1], f_final, rtol=1e-9)
    if rescale:
        for U in res.U:
            np.testing.assert_allclose(np.linalg.norm(U, axis=0), 1.0, rtol=1e-12)


def test_transposed_keys_equal_canonical():
    rng = np.random.default_rng(11)
    X, ml, cl, U0, V0 = random_problem(rng, transposed=False, intra=False)
    flipped_ml = {(b, a): p[:, ::-1] for (a, b), p in ml.items()}
    # split one block's pairs over both orientations: merged into one block
    half = {(0, 1): ml[(0, 1)][:20], (1, 0): ml[(0, 1)][20:, ::-1]}
    ml_split = {**{k: v for k, v in ml.items() if k != (0, 1)}, **half}
    kw = dict(init=(U0, V0), max_iter=15, tol=0.0, beta=1.0)
    r0 = fastmv.cmvnmf(X, 3, ml, cl, **kw)
    r1 = fastmv.cmvnmf(X, 3, flipped_ml, cl, **kw)
    r2 = fastmv.cmvnmf(X, 3, ml_split, cl, **kw)
    for r in (r1, r2):
        for a in range(3):
            np.testing.assert_allclose(r.V[a], r0.V[a], rtol=1e-12)
        np.testing.assert_allclose(r.objective, r0.objective, rtol=1e-12)


# --------------------------------------------------------------------------- reduces to NMF
def _mapped_views(rng, n=60, d_list=(8, 5), c=3):
    y = rng.integers(0, c, n)
    return [rng.random((c, d))[y] + 0.3 * rng.random((n, d)) for d in d_list], y


@pytest.mark.parametrize("rescale", [False, True])
def test_no_constraints_is_independent_nmf_per_view(rescale):
    rng = np.random.default_rng(5)
    X, _ = _mapped_views(rng)
    U0 = [rng.random((x.shape[1], 3)) for x in X]
    V0 = [rng.random((x.shape[0], 3)) for x in X]
    res = fastmv.cmvnmf(X, 3, {}, None, init=(U0, V0), normalize=None, rescale=rescale,
                        max_iter=60, tol=0.0)
    for a, x in enumerate(X):
        U, V = N.nmf_reference(x, U0[a], V0[a], 60, rescale=rescale)
        np.testing.assert_allclose(res.U[a], U, rtol=1e-9)
        np.testing.assert_allclose(res.V[a], V, rtol=1e-9)
    # beta = 0 switches the constraints off: same result as no constraints at all
    ml, cl = simulate.inter_view_constraints([np.arange(60) % 3] * 2, n_constraints=100,
                                             random_state=0)
    res0 = fastmv.cmvnmf(X, 3, ml, cl, beta=0.0, init=(U0, V0), normalize=None,
                         rescale=rescale, max_iter=60, tol=0.0)
    for a in range(2):
        np.testing.assert_allclose(res0.V[a], res.V[a], rtol=1e-12)


def test_no_constraints_matches_scikit_learn_nmf():
    sklearn_nmf = pytest.importorskip("sklearn.decomposition").NMF
    rng = np.random.default_rng(6)
    X, _ = _mapped_views(rng)
    U0 = [rng.random((x.shape[1], 3)) + 0.1 for x in X]
    V0 = [rng.random((x.shape[0], 3)) + 0.1 for x in X]
    res = fastmv.cmvnmf(X, 3, None, None, init=(U0, V0), normalize=None, rescale=False,
                        max_iter=50, tol=0.0)
    for a, x in enumerate(X):
        # scikit-learn factorises Xᵀ ≈ W H with W = U (updated first), H = Vᵀ
        model = sklearn_nmf(n_components=3, init="custom", solver="mu", beta_loss="frobenius",
                            max_iter=50, tol=0.0)
        W = model.fit_transform(x.T.copy(), W=U0[a].copy(), H=V0[a].T.copy())
        np.testing.assert_allclose(res.U[a], W, rtol=1e-6)
        np.testing.assert_allclose(res.V[a], model.components_.T, rtol=1e-6)



# --------------------------------------------------------------------------- clustering
@pytest.mark.parametrize("sparse", [False, True])
def test_planted_clusters_recovered_exactly(sparse):
    (Xs, ys, _), rng = planted_unmapped(0, sparse=sparse)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.01, random_state=rng)
    res = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=0)
    for a in range(3):
        assert metrics.accuracy(ys[a], res.labels[a]) == 1.0
        assert res.labels[a].dtype == np.int64 and res.V[a].shape == (Xs[a].shape[0], 4)
    # the views' clusters are matched by the constraints: same label = same class across views
    lab_of_class = [{int(k): int(np.bincount(res.labels[a][ys[a] == k]).argmax()) for k in range(4)}
                    for a in range(3)]
    assert lab_of_class[0] == lab_of_class[1] == lab_of_class[2]


def test_constraints_improve_noisy_views():
    (Xs, ys, _), rng = planted_unmapped(1, n=400, noise=10.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
    acc = {}
    for name, (m_, c_) in {"none": ({}, {}), "5%": (ml, cl)}.items():
        r = fastmv.cmvnmf(Xs, 4, m_, c_, random_state=3)
        acc[name] = np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)])
    assert acc["5%"] > acc["none"] + 0.1, acc
    assert acc["5%"] > 0.9, acc


def test_kmeans_init_and_max_iter_zero():
    (Xs, ys, _), _ = planted_unmapped(2)
    res = fastmv.cmvnmf(Xs, 4, None, None, max_iter=0, random_state=4)
    assert res.n_iter == 0 and res.objective.shape == (0,) and res.initial_objective > 0
    for a in range(3):
        V = res.V[a]
        assert set(np.unique(V)) == {0.2, 1.2}
        np.testing.assert_array_equal((V == 1.2).sum(axis=1), 1)
        assert res.U[a].min() >= 0 and res.U[a].shape == (Xs[a].shape[1], 4)
        np.testing.assert_array_equal(res.labels[a], np.argmax(V, axis=1))

