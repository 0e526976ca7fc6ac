"""Tests of fastmv.mvmc and kernels/mvmc.py (docs/algorithms.md §1)."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from benchmarks.references import mvmc as R
from fastmv._mvmc import _lowrank
from fastmv._mvmc import _problem as _mvmc_problem
from fastmv._mvmc import _solver as _mvmc_solver
from fastmv.exceptions import DegenerateSolutionWarning
from fastmv.kernels.mvmc import (
    clip_correction,
    dense_to_csr,
    masked_residual_product,
    masked_residual_product_serial,
)
from fastmv.simulate import pairwise_constraints
from tests.conftest import shared_dataset
from tests.mvmc import naive

# most tests run a fixed number of iterations (tol=0) on purpose
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

def _planted(n=90, c=3, d=12, m=2, noise=0.6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    rng.shuffle(y)
    views = [np.eye(c)[y] @ rng.normal(size=(c, d)) * 2.0 + noise * rng.normal(size=(y.size, d))
             for _ in range(m)]
    return views, y


def _sym_pattern(n, nnz_pairs, rng):
    """Symmetric CSR pattern (both orders) of ``nnz_pairs`` random distinct pairs i != j, and
    each entry's mirror position."""
    pairs = set()
    while len(pairs) < nnz_pairs and n > 1:
        i, j = rng.integers(0, n, 2)
        if i != j:
            pairs.add((min(i, j), max(i, j)))
    P = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    vals = rng.integers(0, 2, P.shape[0]).astype(np.float64)
    if P.shape[0] == 0:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    _, indptr, indices, values, mirror = _mvmc_problem.pair_csr(P[:, 0], P[:, 1], vals)
    if indptr.size < n + 1:  # pair_csr keeps only the samples that occur: use all n rows
        active = np.unique(P)
        full = np.zeros(n + 1, np.int64)
        counts = np.zeros(n, np.int64)
        counts[active] = np.diff(indptr)
        np.cumsum(counts, out=full[1:])
        indptr, indices = full, active[indices]
    return indptr, indices, values, mirror


def test_pair_pattern_is_symmetric_sorted_and_mirrored():
    rng = np.random.default_rng(0)
    indptr, indices, values, mirror = _sym_pattern(40, 150, rng)
    rows = np.repeat(np.arange(40), np.diff(indptr))
    assert all(np.all(np.diff(indices[a:b]) > 0) for a, b in zip(indptr[:-1], indptr[1:]))
    np.testing.assert_array_equal(rows[mirror], indices)
    np.testing.assert_array_equal(indices[mirror], rows)
    np.testing.assert_array_equal(values[mirror], values)
    np.testing.assert_array_equal(mirror[mirror], np.arange(mirror.size))


def _true_objective(res, ml, cl, C1, C2):
    n = res.Z[0].shape[0]
    S_ob, mask = R.observed_matrices(n, ml, cl)
    return R.mvmc_objective(res.Z, res.M, R.similarity_dense(res.Z, res.M), S_ob, mask,
                                C1, C2)


# ---------------------------------------------------------------------------------------
# kernels against their NumPy twins
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k,r,pairs", [(1, 1, 1, 0), (2, 1, 0, 1), (7, 3, 2, 0), (30, 5, 3, 40),
                                         (30, 5, 0, 40), (50, 1, 1, 300), (40, 9, 9, 300)])
def test_masked_residual_product_matches_twin(dtype, n, k, r, pairs):
    # rows with 0..many entries exercise both the four-at-a-time loops and their remainders
    rng = np.random.default_rng(n * 100 + k * 10 + r + pairs)
    indptr, indices, values, mirror = _sym_pattern(n, pairs, rng)
    Z = rng.normal(size=(n, k)).astype(dtype)
    B = rng.normal(size=(n, r)).astype(dtype)
    A = (B * rng.normal(size=r)).astype(dtype)  # A Bᵀ symmetric, as the kernel requires
    RZ, loss = masked_residual_product(A, B, Z, indptr, indices, values, mirror)
    RZ0, loss0 = naive.masked_residual_product(A, B, Z, indptr, indices, values, mirror)
    # the serial copy (what MVMC runs) computes exactly what the parallel kernel does
    RZ1, loss1 = masked_residual_product_serial(A, B, Z, indptr, indices, values, mirror)
    np.testing.assert_array_equal(RZ1, RZ)
    assert loss1 == loss and RZ1.dtype == dtype
    assert RZ.dtype == dtype and RZ.shape == (n, k)
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(RZ, RZ0, rtol=rtol, atol=rtol * (1 + np.abs(RZ0).max()))
    assert loss == pytest.approx(loss0, rel=rtol, abs=rtol)
    if pairs == 0:
        assert loss == 0.0 and not RZ.any()


def test_masked_residual_product_of_a_factorisation_is_the_masked_gradient():
    # A Bᵀ = Z M Zᵀ with A = Z V diag(λ), B = Z V: the solver's use of the kernel
    rng = np.random.default_rng(3)
    n, k = 25, 6
    indptr, indices, values, mirror = _sym_pattern(n, 60, rng)
    Z = np.linalg.qr(rng.normal(size=(n, k)))[0]
    Q = rng.normal(size=(k, k))
    M = Q @ Q.T
    lam, V = np.linalg.eigh(M)
    RZ, loss = masked_residual_product(Z @ V * lam, Z @ V, Z, indptr, indices, values, mirror)
    mask = np.zeros((n, n))
    S_ob = np.zeros((n, n))
    for i in range(n):
        mask[i, indices[indptr[i]:indptr[i + 1]]] = 1
        S_ob[i, indices[indptr[i]:indptr[i + 1]]] = values[indptr[i]:indptr[i + 1]]
    R = mask * (Z @ M @ Z.T - S_ob)
    np.testing.assert_allclose(Z.T @ RZ, Z.T @ R @ Z, atol=1e-12)
    assert loss == pytest.approx((R ** 2).sum(), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1, 1), (0, 4), (4, 0), (9, 13), (64, 3)])
def test_clip_correction_matches_twin(dtype, shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.uniform(-1.0, 2.0, size=shape).astype(dtype)
    if A.size:
        A.flat[0] = 0.0
        A.flat[-1] = 1.0  # the bounds themselves are not clipped
    A1, A2 = A.copy(), A.copy()
    ss, nnz = clip_correction(A1)
    ss0, nnz0 = naive.clip_correction(A2)
    np.testing.assert_array_equal(nnz, nnz0)
    np.testing.assert_allclose(A1, A2, rtol=0, atol=1e-6 if dtype == np.float32 else 0)
    assert ss == pytest.approx(ss0, rel=1e-6 if dtype == np.float32 else 1e-13)
    np.testing.assert_allclose(A + A1, np.clip(A, 0, 1), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,density", [((1, 1), 1.0), ((3, 5), 0.0), ((20, 17), 0.2),
                                           ((6, 6), 1.0)])
def test_dense_to_csr_matches_twin(dtype, shape, density):
    rng = np.random.default_rng(shape[0])
    A = (rng.normal(size=shape) * (rng.random(shape) < density)).astype(dtype)
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum((A != 0).sum(axis=1), out=indptr[1:])
    ind, dat = dense_to_csr(A, indptr)
    ind0, dat0 = naive.dense_to_csr(A, indptr)
    np.testing.assert_array_equal(ind, ind0)
    np.testing.assert_array_equal(dat, dat0)
    assert dat.dtype == dtype
    np.testing.assert_array_equal(sp.csr_matrix((dat, ind, indptr), shape=shape).toarray(), A)


# ---------------------------------------------------------------------------------------
# the blockwise similarity
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("tile", [5, 7, 64])
def test_clipped_lowrank_pass_and_operator_match_dense(tile, monkeypatch):
    rng = np.random.default_rng(tile)
    n, m = 37, 2
    Z_list = [np.linalg.qr(rng.normal(size=(n, kv)))[0] for kv in (4, 6)]
    M_list = []
    for kv in (4, 6):
        B = rng.normal(size=(kv, kv)) * 3
        M_list.append(B @ B.T - 4 * np.eye(kv))  # indefinite, like an extrapolated point
    S = R.similarity_dense(Z_list, M_list)
    Abar = sum(Z @ M @ Z.T for Z, M in zip(Z_list, M_list)) / m
    F, w = _lowrank._lowrank_factors(Z_list, M_list)
    core = _lowrank.ClippedLowRank(F, w, tile=tile)
    X = rng.normal(size=(n, 3))
    NX, ss, nnz, tiles = core.correction_pass(X, collect=True)
    N = core.assemble(tiles)
    assert 0 < nnz < n * n
    np.testing.assert_allclose(NX, (S - Abar) @ X, atol=1e-10)
    assert ss == pytest.approx((S ** 2).sum(), rel=1e-12)
    assert nnz == np.count_nonzero(np.abs(S - Abar) > 1e-14)
    np.testing.assert_allclose(N.toarray(), S - Abar, atol=1e-12)
    np.testing.assert_allclose(core.tiles_product(tiles, X), NX, atol=1e-12)
    T, ss2, nnz2 = core.projected_correction(np.hstack(Z_list), [0, 4, 10])
    assert ss2 == pytest.approx(ss, rel=1e-13) and nnz2 == nnz
    for Z, Tv in zip(Z_list, T):
        np.testing.assert_allclose(Tv, Z.T @ (S - Abar) @ Z, atol=1e-12)
    # the solver's float32 pass: the same quantities to float32 rounding, float64 out
    T32, ss3, _ = core.projected_correction(np.hstack(Z_list).astype(np.float32), [0, 4, 10])
    assert ss3 == pytest.approx(ss, rel=1e-5)
    for Z, Tv in zip(Z_list, T32):
        assert Tv.dtype == np.float64
        np.testing.assert_allclose(Tv, Z.T @ (S - Abar) @ Z, atol=1e-4)
    op = _lowrank.ClippedLowRankOperator(F, w, tile=tile)
    np.testing.assert_allclose(op @ X, S @ X, atol=1e-10)
    np.testing.assert_allclose(op @ X[:, 0], S @ X[:, 0], atol=1e-10)
    np.testing.assert_allclose(op.T @ X, S @ X, atol=1e-10)
    np.testing.assert_allclose(op.toarray(), S, atol=1e-12)
    np.testing.assert_array_equal(op.toarray(), op.toarray().T)
    # without the CSR cache every product recomputes the correction tile by tile
    monkeypatch.setattr(_lowrank, "_N_CACHE_MAX_NNZ", 0)
    op2 = _lowrank.ClippedLowRankOperator(F, w, tile=tile)
    assert not op2.prefers_block_products  # not known before the first product
    for _ in range(2):
        np.testing.assert_allclose(op2 @ X, S @ X, atol=1e-10)
    assert op2.correction is None
    assert op2.prefers_block_products and not op.prefers_block_products


def test_spectral_step_by_blocks_when_the_correction_is_not_cached(monkeypatch):
    # at large n the clipping correction is recomputed at every product, and the spectral
    # step (on S itself) switches to block products: the labels must not change
    views, y = _planted(n=150, c=3)
    ml, cl = pairwise_constraints(y, 600, random_state=0)
    res = fastmv.mvmc(views, 3, ml, cl, k=8, max_iter=20, graph="full", random_state=0)
    monkeypatch.setattr(_lowrank, "_N_CACHE_MAX_NNZ", 0)
    columns = []
    original = _lowrank.ClippedLowRankOperator._matmat

    def counted(self, X):
        columns.append(np.asarray(X).reshape(X.shape[0], -1).shape[1])
        return original(self, X)

    monkeypatch.setattr(_lowrank.ClippedLowRankOperator, "_matmat", counted)
    res2 = fastmv.mvmc(views, 3, ml, cl, k=8, max_iter=20, graph="full", random_state=0)
    assert columns[0] == 1 and set(columns[1:]) == {5} and len(columns) <= 15
    # the same partition (the random draws of the two eigensolvers differ, so k-means may
    # number the clusters differently)
    assert fastmv.metrics.accuracy(res.labels, res2.labels) == 1.0
    assert fastmv.metrics.accuracy(y, res2.labels) == 1.0


def test_zero_rank_similarity_is_zero():
    op = _lowrank.ClippedLowRankOperator(np.zeros((5, 0)), np.zeros(0))
    np.testing.assert_array_equal(op @ np.ones(5), np.zeros(5))
    np.testing.assert_array_equal(op.toarray(), np.zeros((5, 5)))


@pytest.mark.parametrize("shape,k,sparse", [((60, 400), 5, False), ((60, 400), 5, True),
                                            ((300, 30), 8, False), ((40, 50), 30, True),
                                            ((80, 6), 6, False)])
def test_left_singular_vectors_span_the_top_subspace(shape, k, sparse):
    rng = np.random.default_rng(0)
    n, d = shape
    s = np.geomspace(10, 0.1, min(n, d))
    U0 = np.linalg.qr(rng.normal(size=(n, s.size)))[0]
    V0 = np.linalg.qr(rng.normal(size=(d, s.size)))[0]
    X = (U0 * s) @ V0.T
    Xin = sp.csr_matrix(X) if sparse else X
    U = _mvmc_problem._left_singular_vectors(Xin, k, np.random.default_rng(1), "X")
    assert U.shape == (n, k)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-10)
    np.testing.assert_allclose(U @ U.T, U0[:, :k] @ U0[:, :k].T, atol=1e-6)
    assert np.all(U[np.argmax(np.abs(U), axis=0), np.arange(k)] > 0)  # sign convention


@pytest.mark.parametrize("sparse", [False, True])
def test_left_singular_vectors_randomized_route(sparse, monkeypatch):
    # min(n, d) large against k: the randomized range finder, not the Gram matrix, is used
    rng = np.random.default_rng(2)
    n, d, k = 800, 600, 6
    s = np.concatenate([np.geomspace(50, 20, k), np.geomspace(1, 0.01, 60)])
    U0 = np.linalg.qr(rng.normal(size=(n, s.size)))[0]
    V0 = np.zeros((d, s.size))
    support = rng.permutation(d)[:150] if sparse else np.arange(d)  # text-like: few columns
    V0[support] = np.linalg.qr(rng.normal(size=(support.size, s.size)))[0]
    X = (U0 * s) @ V0.T
    if sparse:
        X = sp.csr_matrix(X)
        assert X.nnz == n * 150

    def no_gram(*args, **kwargs):
        raise AssertionError("the Gram route was taken")

    monkeypatch.setattr(np.linalg, "eigh", no_gram)
    U = _mvmc_problem._left_singular_vectors(X, k, np.random.default_rng(1), "X")
    assert U.shape == (n, k)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-10)
    np.testing.assert_allclose(U @ U.T, U0[:, :k] @ U0[:, :k].T, atol=1e-6)


def test_left_singular_vectors_drop_null_directions():
    X = np.zeros((20, 10))
    X[:, 0] = 1.0
    X[:, 1] = np.arange(20)
    U = _mvmc_problem._left_singular_vectors(X, 8, np.random.default_rng(0), "X")
    assert U.shape[1] == 2
    with pytest.raises(ValueError, match="X_list\\[1\\].*rank 0"):
        fastmv.mvmc([np.ones((6, 3)), np.zeros((6, 3))], 2, [[0, 1]], [[2, 3]])


# ---------------------------------------------------------------------------------------
# the solver against the dense NumPy transcription, and its mathematics
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("accelerated, n, rtol", [(True, 60, 1e-10), (False, 60, 1e-10),
                                                   (True, 400, 1e-6)])
def test_solver_matches_dense_reference(accelerated, n, rtol):
    # n = 400 > one tile: the passes over S run in float32, the reference in float64
    views, y = _planted(n=n, c=3)
    ml, cl = pairwise_constraints(y, 200 * n // 60, random_state=1)
    res = fastmv.mvmc(views, 3, ml, cl, C1=10.0, C2=1.0, k=6, max_iter=15, tol=0.0,
                      accelerated=accelerated, random_state=0)
    M0, obj0, S0 = R.mvmc_dense(res.Z, ml, cl, C1=10.0, C2=1.0, max_iter=15, tol=0.0,
                                    accelerated=accelerated)
    np.testing.assert_allclose(res.objective, obj0, rtol=rtol)
    for a, b in zip(res.M, M0):
        np.testing.assert_allclose(a, b, atol=1e4 * rtol * np.abs(b).max())
    np.testing.assert_allclose(res.similarity(dense=True), S0, atol=1e4 * rtol)


def test_plain_objective_is_monotone_and_iterates_psd():
    views, y = _planted(n=90, c=3, noise=1.0)
    ml, cl = pairwise_constraints(y, 400, random_state=2)
    mins = []

    def cb(info):
        for M in info.state["M"]:
            lam = np.linalg.eigvalsh(M)
            mins.append(lam.min() / max(1.0, lam.max()))
        assert np.isfinite(info.state["objective"]) and info.objective == info.state["objective"]

    res = fastmv.mvmc(views, 3, ml, cl, C1=5.0, C2=1.0, k=10, max_iter=40, tol=0.0,
                      accelerated=False, callback=cb, random_state=0)
    obj = res.objective
    assert obj.size == 40 and res.n_iter == 40
    assert np.all(np.diff(obj) <= 1e-12 * abs(obj[0])), np.diff(obj).max()
    assert obj[-1] < 0.9 * obj[0]
    assert min(mins) > -1e-12
    # the recorded value is the objective at (M, S(previous M)): an upper bound of F(M)
    assert _true_objective(res, ml, cl, 5.0, 1.0) <= obj[-1] * (1 + 1e-12)


def test_accelerated_plain_and_paper_step_reach_the_same_optimum():
    views, y = _planted(n=40, c=2, d=10, noise=1.0, seed=3)
    ml, cl = pairwise_constraints(y, 150, random_state=1)
    values = {}
    for name, kw in {"accelerated": dict(accelerated=True),
                     "plain": dict(accelerated=False),
                     "paper": dict(accelerated=False, step="paper"),
                     "paper-accelerated": dict(accelerated=True, step="paper")}.items():
        psd_min = []
        res = fastmv.mvmc(views, 2, ml, cl, C1=10.0, C2=1.0, k=4, max_iter=5000, tol=1e-13,
                          random_state=0, callback=lambda info: psd_min.append(
                              min(np.linalg.eigvalsh(M).min() for M in info.state["M"])), **kw)
        assert res.converged, name
        assert min(psd_min) > -1e-9
        values[name] = _true_objective(res, ml, cl, 10.0, 1.0)
    ref = values["plain"]
    for name, val in values.items():
        assert val == pytest.approx(ref, rel=1e-6), (name, values)
    # the paper's step is k² = 16 times shorter: it needs more iterations, not a new answer


def test_curvature_estimate_is_a_close_lower_bound():
    views, y = _planted(n=50, c=3, d=8)
    ml, cl = pairwise_constraints(y, 120, random_state=4)
    res = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=1, random_state=0)
    S_ob, mask = R.observed_matrices(y.size, ml, cl)
    for Z in res.Z:
        k = Z.shape[1]
        # the operator M ↦ Zᵀ (mask ∘ Z M Zᵀ) Z on symmetric M, densely over the k² entries
        H = np.stack([(Z.T @ (mask * (Z @ E.reshape(k, k) @ Z.T)) @ Z).ravel()
                      for E in np.eye(k * k)], axis=1)
        swap = np.eye(k * k)[np.arange(k * k).reshape(k, k).T.ravel()]
        P = 0.5 * (np.eye(k * k) + swap)  # projector onto the symmetric matrices
        lam_max = np.linalg.eigvalsh(P @ H @ P).max()
        view = _mvmc_problem.Problem([Z], _mvmc_solver._prepare(
            views, 3, ml, cl, 0).pairs, 100.0, 1.0, 3, True, "tight").views[0]
        start = Z.T @ S_ob @ Z
        est = view.curvature(start, 4)
        assert 0 < est <= lam_max * (1 + 1e-10)
        assert est >= 0.5 * lam_max
        assert view.curvature(start, 200) == pytest.approx(lam_max, rel=1e-3)
        assert view.curvature(np.zeros((k, k)), 4) == 0.0


@pytest.mark.parametrize("accelerated", [True, False])
def test_backtracking_recovers_from_too_long_steps(accelerated, monkeypatch):
    # no power iteration: L starts at 2 C2, far below the curvature; backtracking must raise
    # it, keep the plain path monotone and reach the optimum of the global step
    monkeypatch.setattr(_mvmc_problem, "_POWER_ITERATIONS", 0)
    views, y = _planted(n=40, c=2, d=10, noise=1.0, seed=3)
    ml, cl = pairwise_constraints(y, 150, random_state=1)
    kw = dict(C1=10.0, C2=1.0, k=4, max_iter=3000, tol=1e-13, random_state=0,
              accelerated=accelerated)
    res = fastmv.mvmc(views, 2, ml, cl, **kw)
    ref = fastmv.mvmc(views, 2, ml, cl, step="tight", **kw)
    assert res.converged and ref.converged
    if not accelerated:
        assert np.all(np.diff(res.objective) <= 1e-12 * abs(res.objective[0]))
    assert _true_objective(res, ml, cl, 10.0, 1.0) == pytest.approx(
        _true_objective(ref, ml, cl, 10.0, 1.0), rel=1e-7)


def test_planted_clusters_recovered_and_constraints_fitted():
    views, y = _planted(n=120, c=4, noise=1.5, seed=5)
    ml, cl = pairwise_constraints(y, 1500, random_state=0)
    res = fastmv.mvmc(views, 4, ml, cl, k=10, normalize="l2", random_state=0)
    assert fastmv.metrics.accuracy(y, res.labels) == 1.0
    assert res.converged
    S = res.similarity(dense=True)
    assert S[ml[:, 0], ml[:, 1]].mean() > 0.5  # shrunk towards 0 by the trace penalty
    assert S[cl[:, 0], cl[:, 1]].mean() < 0.15
    same = y[:, None] == y[None, :]
    assert S[same].mean() > 5 * S[~same].mean()
    assert np.all((S >= 0) & (S <= 1))


def test_one_sided_constraints_sparse_views_and_result_api():
    views, y = _planted(n=60, c=3, noise=0.8, seed=7)
    ml, cl = pairwise_constraints(y, 300, random_state=3)
    dense_res = fastmv.mvmc(views, 3, ml, np.zeros((0, 2), int), k=5, max_iter=20,
                            random_state=4)
    sparse_res = fastmv.mvmc([sp.csr_matrix(X) for X in views], 3, ml, None, k=5,
                             max_iter=20, random_state=4)
    np.testing.assert_allclose(dense_res.objective, sparse_res.objective, rtol=1e-8)
    with pytest.warns(DegenerateSolutionWarning, match="identically zero.*C1"):
        res = fastmv.mvmc(views, 3, None, cl, k=5, max_iter=20, random_state=4)
    # cannot-links alone are fitted best by S = 0: all M_v vanish
    assert all(np.abs(M).max() < 1e-12 for M in res.M)
    assert not res.labels.any()
    res = dense_res
    assert res.labels.dtype == np.int64 and res.labels.shape == (60,)
    assert [Z.shape for Z in res.Z] == [(60, 5), (60, 5)]
    assert [M.shape for M in res.M] == [(5, 5), (5, 5)]
    op = res.similarity()
    assert op.shape == (60, 60)
    np.testing.assert_allclose(op @ np.eye(60), res.similarity(dense=True), atol=1e-12)
    assert "MVMCResult" in repr(res)


def test_deterministic_thread_independent_and_inputs_unchanged():
    views, y = _planted(n=60, c=3, seed=11)
    ml, cl = pairwise_constraints(y, 250, random_state=5)
    copies = [X.copy() for X in views], ml.copy(), cl.copy()
    a = fastmv.mvmc(views, 3, ml, cl, k=6, max_iter=10, random_state=2, n_jobs=1)
    b = fastmv.mvmc(views, 3, ml, cl, k=6, max_iter=10, random_state=2, n_jobs=2)
    c = fastmv.mvmc(views, 3, ml, cl, k=6, max_iter=10, random_state=2)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-12)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(b.objective, c.objective)
    for X, X0 in zip(views, copies[0]):
        np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(ml, copies[1])
    np.testing.assert_array_equal(cl, copies[2])


def test_repeated_and_reversed_pairs_are_the_same_constraint():
    views, y = _planted(n=45, c=3, seed=2)
    ml, cl = pairwise_constraints(y, 150, random_state=5)
    a = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=8, random_state=1)
    b = fastmv.mvmc(views, 3, np.vstack([ml[:, ::-1], ml]), cl[::-1], k=5, max_iter=8,
                    random_state=1)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-10)


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(must_link=[[0, 60]]), ValueError, "must_link\\[0\\].*out of range"),
    (dict(cannot_link=[[-1, 2]]), ValueError, "cannot_link\\[0\\].*out of range"),
    (dict(must_link=[[0, 1], [3, 3]]), ValueError, "must_link\\[1\\].*itself"),
    (dict(must_link=[[4, 9]], cannot_link=[[1, 2], [9, 4]]), ValueError,
     "pair \\(4, 9\\).*must_link.*cannot_link"),
    (dict(must_link=None, cannot_link=np.zeros((0, 2), int)), ValueError, "both empty"),
    (dict(must_link=[[0, 1, 2]]), ValueError, "must_link.*shape"),
    (dict(must_link=[[0.5, 1]]), TypeError, "must_link"),
    (dict(C1=0.0), ValueError, "C1"),
    (dict(C2=-1.0), ValueError, "C2"),
    (dict(k=0), ValueError, "k"),
    (dict(max_iter=-1), ValueError, "max_iter"),
    (dict(n_init=0), ValueError, "n_init"),
    (dict(progress="yes"), TypeError, "progress"),
    (dict(inner_iter=0), ValueError, "inner_iter"),
    (dict(tol=-1.0), ValueError, "tol"),
    (dict(n_clusters=61), ValueError, "n_clusters"),
    (dict(normalize="tfidf"), ValueError, "normalize"),
    (dict(normalize="minmax"), ValueError, "normalize"),
    (dict(step="fast"), ValueError, "step"),
    (dict(accelerated="yes"), TypeError, "accelerated"),
    (dict(callback=3), TypeError, "callback"),
    (dict(n_jobs=0), ValueError, "n_jobs"),
    (dict(random_state=-3), ValueError, "random_state"),
])
def test_validation_errors(kwargs, exc, match):
    views, y = _planted(n=60, c=3)
    args = dict(X_list=views, n_clusters=3, must_link=[[0, 1]], cannot_link=[[0, 2]])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        fastmv.mvmc(**args)


def test_view_validation_errors():
    X = np.ones((10, 3))
    with pytest.raises(ValueError, match="same number of samples"):
        fastmv.mvmc([X, np.ones((9, 3))], 2, [[0, 1]], [])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="X_list\\[1\\].*NaN"):
        fastmv.mvmc([X, bad], 2, [[0, 1]], [])
    with pytest.raises(TypeError, match="X_list"):
        fastmv.mvmc(X, 2, [[0, 1]], [])


def test_sparse_view_with_out_of_range_index_is_rejected():
    X = sp.csr_matrix(np.eye(6))
    X.indices[2] = 9  # past the width: would read out of bounds in a kernel
    with pytest.raises(ValueError, match="X_list\\[1\\]"):
        fastmv.mvmc([np.ones((6, 3)), X], 2, [[0, 1]], [[2, 3]])


# ---------------------------------------------------------------------------------------
# the driver contract, scale invariance, degenerate answers
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["return", "raise"])
def test_callback_stop(how):
    views, y = _planted(n=45, c=3, seed=1)
    ml, cl = pairwise_constraints(y, 150, random_state=0)
    seen = []

    def cb(info):
        seen.append((info.iteration, info.objective, info.solver))
        if info.iteration == 3:
            if how == "raise":
                raise StopIteration
            return True

    res = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=50, tol=0.0, callback=cb,
                      random_state=0)
    assert res.n_iter == 3 and not res.converged
    assert [s[0] for s in seen] == [1, 2, 3] and seen[0][2] == "mvmc"
    np.testing.assert_array_equal(res.objective, [s[1] for s in seen])


def test_result_contract():
    views, y = _planted(n=45, c=3, seed=1)
    ml, cl = pairwise_constraints(y, 150, random_state=0)
    res = fastmv.mvmc(views, 3, ml, cl, k=5, random_state=0)
    assert isinstance(res, fastmv._core._result.Result)
    assert res.objective.dtype == np.float64 and res.objective.ndim == 1
    assert len(res.objective) == res.n_iter and isinstance(res.n_iter, int)
    assert isinstance(res.converged, bool) and res.converged
    assert not hasattr(res, "S_operator")
    with pytest.warns(fastmv.exceptions.ConvergenceWarning, match="max_iter=2"):
        short = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=2, random_state=0)
    assert short.n_iter == 2 and len(short.objective) == 2 and not short.converged
    zero = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=0, random_state=0)
    assert zero.n_iter == 0 and zero.objective.shape == (0,)
    assert np.unique(zero.labels).size == 3  # the (projected) start already clusters


@pytest.mark.parametrize("normalize", ["l2", "zscore", None])
@pytest.mark.parametrize("sparse", [False, True])
def test_scale_invariance(normalize, sparse):
    views, y = _planted(n=60, c=3, seed=6)
    ml, cl = pairwise_constraints(y, 250, random_state=2)
    runs = {}
    for c in (1.0, 1e300, 1e-300, 1e-310):
        scaled = [sp.csr_matrix(X) * c if sparse else X * c for X in views]
        runs[c] = fastmv.mvmc(scaled, 3, ml, cl, k=6, max_iter=10, tol=0.0,
                              normalize=normalize, random_state=0)
    ref = runs[1.0]
    for c, res in runs.items():
        np.testing.assert_array_equal(res.labels, ref.labels, err_msg=str(c))
        np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-7, err_msg=str(c))
        assert all(np.isfinite(M).all() for M in res.M)


def test_collapsed_similarity_warns():
    # many classes, few must-links and a small C1: the trace penalty wins and S = 0
    views, y = _planted(n=200, c=20, d=30, noise=0.5, seed=3)
    ml, cl = pairwise_constraints(y, 2 * y.size, random_state=0)
    with pytest.warns(DegenerateSolutionWarning, match="identically zero.*C1=1"):
        res = fastmv.mvmc(views, 20, ml, cl, C1=1.0, k=10, max_iter=20, random_state=0)
    assert not res.labels.any()


def test_too_few_clusters_warns(monkeypatch):
    views, y = _planted(n=60, c=3, seed=2)
    ml, cl = pairwise_constraints(y, 200, random_state=0)
    monkeypatch.setattr(fastmv._mvmc._solver, "spectral_clustering",
                        lambda S, c, **kw: np.zeros(S.shape[0], dtype=np.int64))
    with pytest.warns(DegenerateSolutionWarning, match="only 1 of n_clusters=3.*C1"):
        fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=3, random_state=0)


def test_non_finite_objective_raises():
    views, y = _planted(n=45, c=3, seed=1)
    ml, cl = pairwise_constraints(y, 150, random_state=0)
    with pytest.raises(fastmv.exceptions.DegenerateSolutionError, match="C1"):
        fastmv.mvmc(views, 3, ml, cl, C1=1e308, C2=1e308, k=5, max_iter=3, random_state=0)


# ---------------------------------------------------------------------------------------
# normalize
# ---------------------------------------------------------------------------------------

def _hidden_by_scale(n=90, c=3, seed=0):
    """Views whose class signal lies in small-scale features beside a large-scale noise
    block: the rows' norms and the top singular vectors follow the noise until every feature
    is scaled to unit variance."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    rng.shuffle(y)
    views = []
    for _ in range(2):
        signal = np.eye(c)[y] @ rng.normal(size=(c, 6)) * 2.0 + 0.5 * rng.normal(size=(n, 6))
        noise = 100.0 * rng.normal(size=(n, 6)) + 300.0
        views.append(np.hstack([signal, noise]))
    return views, y


def test_zscore_columns_centres_and_scales_dense_and_only_scales_sparse():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5)) * [1.0, 10.0, 1e-3, 0.0, 5.0] + [0.0, 3.0, 1.0, 7.0, -2.0]
    X0 = X.copy()
    Y = _mvmc_problem.zscore_columns(X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_allclose(Y.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Y.std(axis=0), [1.0, 1.0, 1.0, 0.0, 1.0], atol=1e-12)
    A = sp.random(50, 6, density=0.2, random_state=1, format="csr")
    B = _mvmc_problem.zscore_columns(A)
    assert sp.issparse(B) and B.nnz == A.nnz  # never densified
    D = A.toarray()
    sd = D.std(axis=0)
    np.testing.assert_allclose(B.toarray(), np.where(sd > 0, D / np.where(sd > 0, sd, 1), 0.0),
                               rtol=1e-12)


def test_normalize_auto_chooses_zscore_when_feature_scales_hide_the_clusters():
    views, y = _hidden_by_scale()
    ml, cl = pairwise_constraints(y, 300, random_state=0)
    kw = dict(k=3, random_state=0)
    auto = fastmv.mvmc(views, 3, ml, cl, **kw)
    rec = auto.tuning["normalize"]
    assert rec["candidates"] == ["l2", "zscore"] and rec["scores"].shape == (2, 2)
    assert rec["solves"] == 0  # closed-form starts only
    assert rec["chosen"] == "zscore" and np.all(rec["scores"][1] > rec["scores"][0])
    zscore = fastmv.mvmc(views, 3, ml, cl, normalize="zscore", **kw)
    # the L2 rows' completed similarity itself (graph="full": 96 must-links among 90
    # samples weigh more than it in the default graph, which reaches 0.87 with it)
    l2 = fastmv.mvmc(views, 3, ml, cl, normalize="l2", graph="full", **kw)
    assert zscore.tuning is None and l2.tuning is None  # an explicit value skips the tuning
    # the tuned call runs exactly the solve of the call given its choice
    np.testing.assert_array_equal(auto.labels, zscore.labels)
    np.testing.assert_array_equal(auto.objective, zscore.objective)
    assert fastmv.metrics.accuracy(y, zscore.labels) >= 0.95
    assert fastmv.metrics.accuracy(y, l2.labels) < 0.8


def test_normalize_auto_keeps_l2_when_it_ranks_the_pairs_as_well():
    views, y = _planted(n=90, c=3, seed=4)
    ml, cl = pairwise_constraints(y, 300, random_state=1)
    auto = fastmv.mvmc(views, 3, ml, cl, k=6, random_state=3)
    rec = auto.tuning["normalize"]
    assert rec["chosen"] == "l2", rec["scores"]
    fixed = fastmv.mvmc(views, 3, ml, cl, k=6, normalize="l2", random_state=3)
    np.testing.assert_array_equal(auto.labels, fixed.labels)
    np.testing.assert_array_equal(auto.objective, fixed.objective)


def test_normalize_auto_without_a_varying_feature_keeps_l2_and_zscore_says_why():
    views, y = _planted(n=60, c=3, seed=8)
    views[0] = np.tile(views[0][:1], (60, 1))  # every sample alike in the first view
    ml, cl = pairwise_constraints(y, 250, random_state=0)
    auto = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=5, random_state=0)
    assert auto.tuning is None
    fixed = fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=5, normalize="l2", random_state=0)
    np.testing.assert_array_equal(auto.objective, fixed.objective)
    with pytest.raises(ValueError, match="X_list\\[0\\] has rank 0"):
        fastmv.mvmc(views, 3, ml, cl, k=5, max_iter=5, normalize="zscore", random_state=0)


def test_normalize_auto_on_text_views_is_l2_without_validation():
    views, y = _planted(n=60, c=3, seed=7)
    text = [sp.csr_matrix(X) for X in views]  # sparse input: text or counts by the rule
    ml, cl = pairwise_constraints(y, 250, random_state=0)
    auto = fastmv.mvmc(text, 3, ml, cl, k=5, random_state=0)
    assert auto.tuning is None
    fixed = fastmv.mvmc(text, 3, ml, cl, k=5, normalize="l2", random_state=0)
    np.testing.assert_array_equal(auto.objective, fixed.objective)


# ---------------------------------------------------------------------------------------
# k="auto" and the stopping rule
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("rho", [1.0, 2.0, 0.5])
def test_auto_rank_is_the_largest_rank_within_the_pair_budget(rho):
    for n_pairs in [0, 1, 2, 3, 5, 6, 7, 844, 845, 1999, 2000, 5049, 5050, 5051, 10 ** 6]:
        fits = [k for k in range(1, 101) if k * (k + 1) / 2 <= n_pairs / rho]
        assert _mvmc_solver.auto_rank(n_pairs, rho) == (max(fits) if fits else 1), n_pairs
    # triangular numbers are the boundaries: k(k+1)/2 pairs allow exactly k
    assert [_mvmc_solver.auto_rank(k * (k + 1) // 2, 1.0) for k in (1, 2, 44, 99)] == \
        [1, 2, 44, 99]


def test_auto_rank_follows_the_pairs_and_an_explicit_k_bypasses_it():
    views, y = _planted(n=120, c=3, d=40, seed=3)
    ml, cl = pairwise_constraints(y, 60, random_state=0)
    n_pairs = np.unique(np.sort(np.vstack([ml, cl]), axis=1), axis=0).shape[0]
    k_auto = _mvmc_solver.auto_rank(n_pairs)
    assert k_auto < 40
    res = fastmv.mvmc(views, 3, ml, cl, random_state=0)
    assert [Z.shape[1] for Z in res.Z] == [k_auto] * 2
    wide = fastmv.mvmc(views, 3, ml, cl, k=30, random_state=0)
    assert [Z.shape[1] for Z in wide.Z] == [30, 30]
    # many pairs: the cap of the old fixed default, then the view's own width
    ml, cl = pairwise_constraints(y, 3000, random_state=0)
    assert [Z.shape[1] for Z in fastmv.mvmc(views, 3, ml, cl, random_state=0).Z] == [40, 40]


def _restart_record():
    rec = []

    def cb(info):
        rec.append((info.residual, info.state["restarted"]))
    return rec, cb


def test_default_tolerance_stops_when_the_objective_settles():
    views, y = _planted(n=90, c=3, seed=1)
    ml, cl = pairwise_constraints(y, 300, random_state=1)
    rec, cb = _restart_record()
    res = fastmv.mvmc(views, 3, ml, cl, k=8, random_state=0, callback=cb)
    rel = np.abs(np.diff(res.objective)) / np.abs(res.objective[:-1])
    restarted = np.array([r for _, r in rec])[1:]  # aligned with rel (iterations 2, 3, ...)
    assert res.converged and rel[-1] <= 1e-4 and not restarted[-1]
    # an earlier change below tol was a restarted iteration's (it cannot stop the solve)
    assert restarted[:-1][rel[:-1] <= 1e-4].all()
    assert (rel[:-1] <= 1e-4).any()  # this case occurs here: the old rule stopped early
    residual = np.array([r for r, _ in rec])[1:]
    assert np.isinf(residual[:-1][rel[:-1] <= 1e-4]).all()
    tight = fastmv.mvmc(views, 3, ml, cl, k=8, tol=1e-8, random_state=0)
    assert tight.n_iter > res.n_iter
    assert abs(res.objective[-1] - tight.objective[-1]) <= 1e-3 * abs(tight.objective[-1])
    assert fastmv.metrics.accuracy(y, res.labels) == fastmv.metrics.accuracy(y, tight.labels)


def test_tol_zero_runs_max_iter_through_restarts():
    views, y = _planted(n=90, c=3, seed=0)
    ml, cl = pairwise_constraints(y, 300, random_state=1)
    rec, cb = _restart_record()
    res = fastmv.mvmc(views, 3, ml, cl, k=8, tol=0.0, max_iter=10, random_state=0, callback=cb)
    assert res.n_iter == 10 and not res.converged
    assert any(r for _, r in rec)  # the extrapolation was restarted on the way
    # tol=0 stops early only at an exact fixed point: the objective no longer changes at all
    long = fastmv.mvmc(views, 3, ml, cl, k=8, tol=0.0, max_iter=40, random_state=0)
    assert long.n_iter == 40 or (long.converged and long.objective[-1] == long.objective[-2])
    plain_rec, cb = _restart_record()
    fastmv.mvmc(views, 3, ml, cl, k=8, tol=0.0, max_iter=5, accelerated=False,
                random_state=0, callback=cb)
    assert not any(r for _, r in plain_rec)  # no extrapolation, no restart


def test_orthonormalise_matches_qr():
    rng = np.random.default_rng(0)
    for n, k in [(1, 1), (7, 3), (200, 40)]:
        Q0, _ = np.linalg.qr(rng.normal(size=(n, k)))
        U = Q0 * (1 + 1e-8 * rng.normal(size=(1, k))) + 1e-9 * rng.normal(size=(n, k))
        Q = _mvmc_problem._orthonormalise(U)
        np.testing.assert_allclose(Q.T @ Q, np.eye(k), atol=1e-13)
        Qh = np.linalg.qr(U)[0]
        np.testing.assert_allclose(np.abs(Q), np.abs(Qh), atol=1e-12)  # same columns up to sign
    # rank-deficient: the Cholesky factorisation fails, Householder takes over
    U = np.ones((5, 2))
    assert _mvmc_problem._orthonormalise(U).shape == (5, 2)


# ---------------------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_bbcsport_quality_with_5000_constraints():
    from fastmv.datasets import load_mat
    views, y = load_mat(shared_dataset("BBCSport.mat"))
    scores = []
    for draw in range(2):  # the report averages 5 draws
        ml, cl = pairwise_constraints(y, 5000, random_state=draw)
        res = fastmv.mvmc(views, 5, ml, cl, random_state=0)
        assert res.converged
        scores.append((fastmv.metrics.nmi(y, res.labels), fastmv.metrics.accuracy(y, res.labels)))
    nmi, acc = np.mean(scores, axis=0)
    assert nmi >= 0.93 and acc >= 0.97, scores
