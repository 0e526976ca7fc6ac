"""Tests of EMVC's view weights (``view_weights`` of fastmv.emvc; fastmv/_emvc/_weights.py)."""
import numpy as np
import pytest

import fastmv
from fastmv import metrics
from fastmv._emvc import _weights
from fastmv._emvc._weights import error_weights
from fastmv.estimators import EMVC
from fastmv.exceptions import InvalidParameterError
from tests.emvc import naive

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")

LAM = 0.01


def _blocks(seed, n_per=30, c=3, m=3):
    """Block transition matrices of one partition (within U(0, 1), between U(0, 0.7))."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n_per)
    same = y[:, None] == y[None, :]
    P = []
    for _ in range(m):
        n = y.size
        K = np.where(same, rng.uniform(0.0, 1.0, (n, n)), rng.uniform(0.0, 0.7, (n, n)))
        P.append(K / K.sum(axis=1, keepdims=True))
    return P, y


def with_noise_view(seed, n_per=30, c=3, between=0.8, spike=16):
    """Two weak views of the planted partition (within U(0, 1), between U(0, between)) and
    one view of noise without structure, spiky rows (``U(0, 1) ** spike``): far from what
    the other two share, so its error is the largest."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n_per)
    n = y.size
    same = y[:, None] == y[None, :]
    P = []
    for _ in range(2):
        K = np.where(same, rng.uniform(0.0, 1.0, (n, n)), rng.uniform(0.0, between, (n, n)))
        P.append(K / K.sum(axis=1, keepdims=True))
    K = rng.random((n, n)) ** spike
    P.append(K / K.sum(axis=1, keepdims=True))
    return P, y


def _costs(E_list, lam1=LAM, lam2=LAM):
    """``h_v = (lam1/2) Σ_i ‖E_v[:, i]‖ + (lam2/2) Σ_r ‖E_v[r, :]‖`` in NumPy."""
    return np.array([0.5 * (lam1 * np.linalg.norm(E, axis=0).sum()
                            + lam2 * np.linalg.norm(E, axis=1).sum()) for E in E_list])


# ------------------------------------------------------------------ the weights themselves


@pytest.mark.parametrize("m", [1, 2, 6, 12])
@pytest.mark.parametrize("power", [0.25, 0.5, 1.0, 3.0])
def test_error_weights_are_positive_mean_one_and_decrease_with_the_cost(m, power):
    rng = np.random.default_rng(m)
    costs = np.exp(rng.uniform(-30, 30, m))  # sixty orders of magnitude
    w = error_weights(costs, power)
    assert w.shape == (m,) and np.all(np.isfinite(w)) and np.all(w > 0)
    np.testing.assert_allclose(w.sum(), m, rtol=1e-13)
    order = np.argsort(costs)
    assert np.all(np.diff(w[order]) <= 0)
    # the exact form: α_v ∝ h_v^(-p)
    ratio = w[:, None] / w[None, :]
    np.testing.assert_allclose(np.log(ratio), -power * np.log(costs[:, None] / costs[None, :]),
                               atol=1e-9)
    # a common scale of the costs (the same lam1 = lam2 = λ for any λ) changes nothing
    np.testing.assert_allclose(error_weights(costs * 1e-7, power), w, rtol=1e-12)


def test_error_weights_edge_cases():
    np.testing.assert_array_equal(error_weights([3.0, 3.0, 3.0]), np.ones(3))
    np.testing.assert_array_equal(error_weights([1.0, 5.0, 9.0], 0.0), np.ones(3))
    np.testing.assert_array_equal(error_weights([0.0, 0.0]), np.ones(2))  # lam1 = lam2 = 0
    w = error_weights([0.0, 1.0, 1.0])  # a view without error gets the most weight, finitely
    assert np.all(np.isfinite(w)) and w[0] > w[1] == w[2]
    np.testing.assert_allclose(w.sum(), 3.0)


def test_view_weights_validation_names_the_argument():
    P, _ = _blocks(0, n_per=4)
    for bad in ([1.0, 1.0], [1.0, 1.0, 0.0], [1.0, -1.0, 1.0], [1.0, np.nan, 1.0],
                [[1.0, 1.0, 1.0]], "auto", 3.0):
        with pytest.raises(InvalidParameterError, match="view_weights"):
            fastmv.emvc(P, LAM, LAM, view_weights=bad, max_iter=2)


# ---------------------------------------------------------------------- in the iteration


def test_equal_weights_are_the_published_iteration_and_ones_the_same():
    P, _ = _blocks(1)
    kw = dict(n_clusters=3, random_state=0)
    ref = fastmv.emvc(P, LAM, LAM, **kw)
    eq = fastmv.emvc(P, LAM, LAM, view_weights="equal", **kw)
    np.testing.assert_array_equal(eq.P_hat, ref.P_hat)
    np.testing.assert_array_equal(eq.objective, ref.objective)
    np.testing.assert_array_equal(eq.view_weights, np.ones(3))
    # given weights all alike: the weighted code path, the same iterates (norms / 1 exact)
    ones = fastmv.emvc(P, LAM, LAM, view_weights=[2.0, 2.0, 2.0], **kw)
    np.testing.assert_array_equal(ones.P_hat, ref.P_hat)
    np.testing.assert_allclose(ones.objective, ref.objective, rtol=1e-12)
    np.testing.assert_array_equal(ones.labels, ref.labels)


def test_given_weights_are_scaled_to_mean_one():
    P, _ = _blocks(2, n_per=10)
    a = fastmv.emvc(P, LAM, LAM, view_weights=[1.0, 2.0, 3.0], max_iter=30)
    b = fastmv.emvc(P, LAM, LAM, view_weights=np.array([2.0, 4.0, 6.0]), max_iter=30)
    np.testing.assert_array_equal(a.view_weights, [0.5, 1.0, 1.5])
    np.testing.assert_array_equal(a.P_hat, b.P_hat)


@pytest.mark.parametrize("view_weights", [[0.2, 1.0, 4.0], "error"])
def test_first_weighted_step_matches_numpy(view_weights):
    """One iteration from the mean start (``Y = Z = Q = 0``): the ``P̂`` step is unchanged,
    the ``E`` step of view ``v`` is the published one with ``α_v lam1``, ``α_v lam2``, and the
    objective is ``Σ_v α_v h_v(E_v)`` (``Q = 0`` after one step at ``μ = 1e-6``)."""
    P, _ = _blocks(3, n_per=7)
    m, mu, eps = len(P), 1e-6, 1e-10
    res = fastmv.emvc(P, 0.3, 0.05, max_iter=1, mu=mu, tol=0.0)
    M = sum(P) / m
    E0 = [Pv - M for Pv in P]
    if view_weights == "error":
        alpha = error_weights(_costs(E0, 0.3, 0.05))
    else:
        alpha = np.asarray(view_weights) * (m / sum(view_weights))
    res = fastmv.emvc(P, 0.3, 0.05, max_iter=1, mu=mu, tol=0.0, view_weights=view_weights)
    np.testing.assert_allclose(res.view_weights, alpha, rtol=1e-12)
    A = (sum(Pv - E for Pv, E in zip(P, E0))) / (m + 1)
    P_hat = naive.rowwise_simplex_projection(A, np.empty_like(A))
    np.testing.assert_allclose(res.P_hat, P_hat, atol=1e-12)
    for v in range(m):
        d = 1.0 / (2.0 * np.maximum(np.linalg.norm(E0[v], axis=1), eps))
        g = 1.0 / (2.0 * np.maximum(np.linalg.norm(E0[v], axis=0), eps))
        E = (P[v] - P_hat) / (1.0 + (alpha[v] * 0.05 / mu) * d[:, None]
                              + (alpha[v] * 0.3 / mu) * g[None, :])
        np.testing.assert_allclose(res.E[v], E, atol=1e-12)
    assert res.rank[0] == 0
    np.testing.assert_allclose(res.objective[0], alpha @ _costs(res.E, 0.3, 0.05), rtol=1e-10)


@pytest.mark.parametrize("view_weights", [[0.5, 1.0, 2.0], "error"])
def test_weighted_solve_satisfies_the_constraints(view_weights):
    """The weighted model keeps the constraints: ``P̂`` rows on the simplex, ``P_v = P̂ + E_v``
    to the tolerance; the weights stay positive with mean 1 in every iteration."""
    P, _ = _blocks(4, n_per=12)
    seen = []
    res = fastmv.emvc(P, LAM, LAM, n_clusters=3, random_state=0, stop="residual",
                      tol_settle=None, view_weights=view_weights, max_iter=200,
                      callback=lambda info: seen.append(info.objective))
    assert res.converged and res.residual[-1] <= 1e-6
    assert res.P_hat.min() >= 0
    np.testing.assert_allclose(res.P_hat.sum(axis=1), 1.0, atol=1e-12)
    for Pv, E in zip(P, res.E):
        assert np.abs(Pv - res.P_hat - E).max() <= 1e-6
    w = res.view_weights
    assert np.all(w > 0) and np.isclose(w.sum(), 3.0)
    assert len(seen) == res.n_iter and np.all(np.isfinite(res.objective))
    # the last objective is the weighted one, with the nuclear norm of Q ≈ P̂
    nuc = np.linalg.svd(res.P_hat, compute_uv=False).sum()
    np.testing.assert_allclose(res.objective[-1], nuc + w @ _costs(res.E), rtol=1e-4)


def test_error_weights_are_those_of_the_previous_errors():
    """``"error"``: the weights of iteration k are ``error_weights`` of the errors of
    iteration k − 1 (checked through the callback's view of the errors' objective)."""
    P, _ = _blocks(5, n_per=8)
    res_k = [fastmv.emvc(P, LAM, LAM, max_iter=k, tol=0.0, view_weights="error")
             for k in (5, 6)]
    np.testing.assert_allclose(res_k[1].view_weights, error_weights(_costs(res_k[0].E)),
                               rtol=1e-9)


def test_views_permuted_weights_permuted():
    P, y = with_noise_view(0)
    perm = [2, 0, 1]
    a = fastmv.emvc(P, LAM, LAM, n_clusters=3, random_state=0, view_weights="error")
    b = fastmv.emvc([P[i] for i in perm], LAM, LAM, n_clusters=3, random_state=0,
                    view_weights="error")
    np.testing.assert_allclose(b.view_weights, a.view_weights[perm], rtol=1e-6)
    np.testing.assert_allclose(b.P_hat, a.P_hat, atol=1e-8)


def test_noise_view_gets_the_least_weight_and_the_weights_help():
    """Planted: two weak views of the partition and one noise view. Equal weights let the
    noise through; the reweighting from the errors gives it the smallest weight and is at
    least as accurate on every seed, better on average."""
    acc_eq, acc_w = [], []
    for seed in range(4):
        P, y = with_noise_view(seed)
        eq = fastmv.emvc(P, LAM, LAM, n_clusters=3, random_state=0)
        w = fastmv.emvc(P, LAM, LAM, n_clusters=3, random_state=0, view_weights="error")
        assert np.argmin(w.view_weights) == 2 and w.view_weights[2] < 0.9
        acc_eq.append(metrics.accuracy(y, eq.labels))
        acc_w.append(metrics.accuracy(y, w.labels))
    assert all(b >= a for a, b in zip(acc_eq, acc_w)), (acc_eq, acc_w)
    assert np.mean(acc_w) >= np.mean(acc_eq) + 0.01, (acc_eq, acc_w)


def test_power_zero_reweighting_is_the_equal_iteration(monkeypatch):
    P, _ = _blocks(6, n_per=10)
    monkeypatch.setattr(_weights, "_WEIGHT_POWER", 0.0)
    a = fastmv.emvc(P, LAM, LAM, max_iter=40, view_weights="error")
    b = fastmv.emvc(P, LAM, LAM, max_iter=40)
    np.testing.assert_array_equal(a.P_hat, b.P_hat)


def test_estimator_passes_view_weights():
    P, y = with_noise_view(1, n_per=10)
    model = EMVC(n_clusters=3, view_weights="error", random_state=0,
                 affinity="precomputed").fit(P)
    res = fastmv.emvc(P, LAM, LAM, n_clusters=3, random_state=0, view_weights="error")
    np.testing.assert_array_equal(model.labels_, res.labels)
    np.testing.assert_array_equal(model.view_weights_, res.view_weights)
