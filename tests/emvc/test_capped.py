"""EMVC's capped singular value thresholding (``max_rank``): its certificate, the warm
subspace iteration that carries it from one iteration to the next, the rank cap's default and
whole solves with it (docs/records/emvc.md "Capped SVT")."""
import numpy as np
import pytest

import fastmv
from benchmarks.references import emvc as R
from fastmv import metrics
from fastmv._emvc import _solver as _emvc
from fastmv._emvc._svt import capped_applies, svt
from fastmv._emvc._svt_capped import CAP_OVERSAMPLE, capped_cost
from fastmv._emvc._svt_exact import full_cost
from tests.emvc.test_emvc import planted

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")

DTYPES = [np.float64, np.float32]


def _gapped(dt, shape, seed=11):
    """A matrix whose r = 8 leading singular values stand apart from a slowly decaying tail."""
    rng = np.random.default_rng(seed)
    n, d = shape
    k = min(n, d)
    s = np.concatenate([[6.0, 5.0, 4.0, 3.5, 3.0, 2.8, 2.6, 2.4], 1.0 * 0.97 ** np.arange(k - 8)])
    U, _ = np.linalg.qr(rng.standard_normal((n, k)))
    V, _ = np.linalg.qr(rng.standard_normal((d, k)))
    return ((U * s) @ V.T).astype(dt), s


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(300, 300), (250, 350), (350, 250)])
def test_capped_svt_is_within_its_certificate_and_exact_once_the_iteration_has_run(dt, shape):
    """Capped tier: ``Q̃ = B − τ U_r V_rᵀ`` is within ``2τ`` of the exact SVT in the spectral
    norm whatever the accuracy of the triplets (a cold call stops as soon as ``r`` Ritz values
    exceed ``τ``), its reported nuclear norm bounds ``‖Q̃‖_*`` from above, and calls chained
    through ``V0`` (one subspace step each, as the late iterations of a solve) reach the exact
    leading triplets: then within ``min(σ_{r+1}, τ)`` of the exact SVT."""
    B, s = _gapped(dt, shape)
    B_copy = B.copy()
    tol = 1e-8 if dt == np.float64 else 2e-4
    r = 8
    for tau in (0.05, 0.3):  # ranks far above r: the capped tier
        Q_ref, _, r_ref = R.svt_full(B.astype(np.float64), tau)
        assert r_ref > r
        Q, info = svt(B, tau, max_rank=r, random_state=0)
        assert info.method == "capped" and info.rank == r and Q.dtype == dt
        assert np.array_equal(B, B_copy)
        err = np.linalg.norm(Q.astype(np.float64) - Q_ref, 2)
        assert err <= 2 * tau * (1 + 1e-6) + tol
        sq = np.linalg.svd(Q.astype(np.float64), compute_uv=False)
        assert info.nuclear_norm >= sq.sum() * (1 - 1e-6)
        # the whole block of Ritz vectors comes back: the next call's warm start
        assert info.V.shape == (B.shape[1], r + CAP_OVERSAMPLE)
        out = np.empty_like(B)
        for step in range(40):
            Q2, info = svt(B, tau, max_rank=r, out=out, V0=info.V, random_state=step)
            assert Q2 is out and info.method == "capped"
        err2 = np.linalg.norm(out.astype(np.float64) - Q_ref, 2)
        assert err2 <= min(s[r], tau) * (1 + 1e-3) + tol * 10
        sq = np.linalg.svd(out.astype(np.float64), compute_uv=False)
        np.testing.assert_allclose(sq[:r], s[:r] - tau, rtol=0, atol=max(1e-5, tol * 10))
        assert info.nuclear_norm >= sq.sum() * (1 - 1e-6)
    # the threshold falls inside the computed part: the exact SVT, to the tier's tolerance
    # on the Ritz values (1e-4 σ₁), cold or warm
    tau = 3.2
    Q_ref, nuc_ref, r_ref = R.svt_full(B.astype(np.float64), tau)
    for V0 in (None, info.V):
        Q, info3 = svt(B, tau, max_rank=r, rank_hint=r, V0=V0, random_state=0)
        assert info3.rank == r_ref == 4
        np.testing.assert_allclose(Q, Q_ref, atol=max(1e-5, tol * 10), rtol=0)
        assert info3.nuclear_norm == pytest.approx(nuc_ref, rel=max(1e-5, tol * 10))
    # above a bound of σ₁ the skip still applies; without max_rank never capped; where
    # the exact decomposition is as cheap (small n), never capped either
    assert svt(B, 100.0, max_rank=r)[1].method == "skip-bound"
    assert svt(B, 0.05, random_state=0)[1].method != "capped"
    assert svt(B[:40, :40], 0.05, max_rank=r, random_state=0)[1].method != "capped"


def test_capped_tier_is_used_where_its_cost_model_is_below_a_gram_decomposition():
    """The cost rule: capped from about n = 8 r up, never at a cap of min(n, d) or None."""
    assert capped_applies(2000, 2000, 64) and capped_applies(1600, 1600, 200)
    assert not capped_applies(400, 400, 64) and not capped_applies(1600, 1600, 400)
    assert not capped_applies(100, 100, 100) and not capped_applies(2000, 2000, None)
    for n, r in ((2000, 64), (1600, 200), (400, 64)):
        assert capped_applies(n, n, r) == (
            capped_cost(n, n, r) < full_cost(n, gram=True))


def test_auto_rank_cap_is_bounded_by_the_samples():
    """"auto": max(64, 4 n_clusters), at most n/8; None (exact) where that is below 64."""
    assert _emvc._max_rank("auto", 40, 2000) == 160
    assert _emvc._max_rank("auto", None, 2000) == 64
    assert _emvc._max_rank("auto", 100, 1600) == 200  # many classes: not 400
    assert _emvc._max_rank("auto", 3, 500) is None
    assert _emvc._max_rank(None, 3, 2000) is None and _emvc._max_rank(5, 3, 2000) == 5


def test_capped_solve_keeps_the_labels_and_stays_cheap():
    """max_rank caps the late SVTs (no full decomposition), converges and keeps the planted
    labels; max_rank=None is the exact iteration."""
    P_list, y = planted(0, n_per=80)  # n = 240: exact late SVTs are full decompositions
    exact = fastmv.emvc(P_list, 0.05, 0.05, n_clusters=3, random_state=0, max_rank=None)
    capped = fastmv.emvc(P_list, 0.05, 0.05, n_clusters=3, random_state=0, max_rank=8)
    assert {"gram", "full"} & set(exact.svt_method)
    assert "capped" in capped.svt_method
    assert not {"gram", "full"} & set(capped.svt_method)
    assert capped.converged and exact.converged
    assert metrics.ari(y, exact.labels) == 1.0 and metrics.ari(y, capped.labels) >= 0.9
    assert np.allclose(capped.P_hat.sum(axis=1), 1.0) and capped.P_hat.min() >= 0
    # the late iterations' errors sum geometrically: the capped P̂ stays near the exact one
    first = capped.svt_method.index("capped")
    tau_first = 1.0 / (1e-6 * 1.9 ** first)
    assert np.abs(capped.P_hat - exact.P_hat).max() <= 5 * tau_first
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="max_rank"):
        fastmv.emvc(P_list, 0.01, 0.01, max_rank=0)


def test_capped_solve_converges_at_a_cap_below_the_clusters_rank():
    """Planted clusters with more clusters than a tight cap leaves room for: the residual
    still reaches the tolerance (the certificate's errors shrink with τ = 1/μ)."""
    P_list, y = planted(3, n_per=40, c=6)  # n = 240
    res = fastmv.emvc(P_list, 0.05, 0.05, n_clusters=6, random_state=0, max_rank=16,
                      stop="residual", tol_settle=None, max_iter=200)
    assert res.converged and res.residual[-1] <= 1e-6
    assert "capped" in res.svt_method
    assert metrics.ari(y, res.labels) >= 0.9


def test_label_stop_is_not_used_where_the_late_svts_are_capped():
    """A label check (a spectral clustering) costs more than a capped iteration, so the
    label stop only watches solves whose late SVTs are full decompositions."""
    data = _emvc._prepare([np.full((2000, 2000), 1 / 2000)] * 2, 0.01, 0.01, n_clusters=3,
                          mu=1e-6, rho=1.9, mu_max=1e10, init="mean", dtype=None,
                          full_svd="auto", random_state=0, stop="labels", max_rank="auto")
    assert data.max_rank == 64 and not _emvc._watch_labels(data)
    assert _emvc._watch_labels(data._replace(max_rank=None))


@pytest.mark.parametrize("dt", DTYPES)
def test_abandoned_partial_svd_hands_over_to_the_capped_tier_within_the_certificate(dt):
    """A low rank hint sends the call to the partial SVD first; where the rank is far above
    the cap it is abandoned within its budget (half of a short cold capped call) and the
    capped tier, started from its Ritz vectors, returns a result within 2τ of the SVT."""
    B, s = _gapped(dt, (300, 300), seed=3)
    tau = 0.05
    Q_ref, _, _ = R.svt_full(B.astype(np.float64), tau)
    Q, info = svt(B, tau, max_rank=8, rank_hint=1, random_state=0)
    assert info.method == "capped" and info.partial_abandoned and info.n_steps > 0
    err = np.linalg.norm(Q.astype(np.float64) - Q_ref, 2)
    assert err <= 2 * tau * (1 + 1e-6) + (1e-8 if dt == np.float64 else 2e-4)
    np.testing.assert_allclose(info.V.T @ info.V, np.eye(info.V.shape[1]),
                               atol=1e-10 if dt == np.float64 else 1e-4)
