"""Tests of fastmv.mvfl and its kernels (docs/algorithms.md §2)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from benchmarks.references import mvfl as R
from fastmv import metrics, simulate
from fastmv._mvfl import _fstep as FS
from fastmv._mvfl import _wstep as WS
from fastmv.kernels import mvfl as K
from tests.conftest import shared_dataset
from tests.mvfl import naive as N

FLOATS = [np.float64, np.float32]

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """Run this module with one BLAS thread (threadpoolctl comes with scikit-learn, a test
    dependency). On a CPU-contended machine a multi-threaded OpenBLAS ``potrf`` of the
    339 × 339 Handwritten systems takes 50–1000 ms instead of 1.3 ms, which turned the
    Handwritten test from ~25 s into ~12 min; the tests check mathematics, not BLAS
    threading."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def _random_ip(rng, n, p, dtype=np.float64):
    if n < 2 or p == 0:
        return FS.empty_csr(n)
    pairs = rng.integers(0, n, size=(p, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    must = rng.random(len(pairs)) < 0.4
    indptr, indices, data = FS.pair_csr(n, pairs[must], pairs[~must])
    return indptr, indices, data.astype(dtype)


def _views(rng, n, dims, sparse=False):
    out = []
    for d in dims:
        X = rng.normal(size=(n, d))
        if sparse:
            X = sp.csr_matrix(X * (rng.random((n, d)) < 0.3))
        out.append(X)
    return out


def _pairs_from_labelled(y, ratio, rng):
    return simulate.pairs_from_labels(simulate.partial_labels(y, ratio, random_state=rng))


def _blobs(rng, n_per, c, dims, sep=4.0, noise=1.0):
    y = np.repeat(np.arange(c), n_per)
    views = []
    for d in dims:
        centers = rng.normal(size=(c, d)) * sep
        views.append(centers[y] + noise * rng.normal(size=(y.size, d)))
    return views, y


# ------------------------------------------------------------------------------------------
# kernels against their twins


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1, [1]), (7, 1, [3, 4]), (40, 5, [10, 0, 25, 5]),
                                   (13, 3, [13])])
def test_weight_norms_and_irls_diagonal(dtype, shape):
    rng = np.random.default_rng(0)
    d_total, c, dims = sum(shape[2]), shape[1], shape[2]
    W = rng.normal(size=(d_total, c)).astype(dtype)
    if d_total > 2:
        W[1] = 0.0  # a zero row
    vp = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
    for eps in (0.0, 1e-3):
        g, r = K.weight_norms(W, vp, eps)
        g0, r0 = N.weight_norms(W, vp, eps)
        assert g.dtype == dtype and r.dtype == dtype
        np.testing.assert_allclose(g, g0, **_tol(dtype))
        np.testing.assert_allclose(r, r0, **_tol(dtype))
    g, r = K.weight_norms(W, vp, 1e-3)
    for lam1, lam2 in ((1e-3, 1e-2), (0.0, 0.5), (0.3, 0.0)):
        D = K.irls_diagonal(g, r, vp, lam1, lam2)
        assert D.shape == (c, d_total)
        np.testing.assert_allclose(D, N.irls_diagonal(g, r, vp, lam1, lam2), **_tol(dtype))


def test_irls_diagonal_skips_unused_norms():
    vp = np.array([0, 2], dtype=np.int64)
    g = np.zeros((1, 2))
    r = np.array([1.0, 2.0])
    D = K.irls_diagonal(g, r, vp, 0.0, 1.0)  # λ1 = 0: the zero group norms are not read
    np.testing.assert_allclose(D, [[0.5, 0.25], [0.5, 0.25]])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p,d,c", [(1, 1, 1), (3, 7, 3), (1, 9, 4), (2, 0, 2), (1, 4, 0),
                                   (5, 40, 5)])
def test_cholesky_solve(dtype, p, d, c):
    """The ``c`` solves against ``numpy.linalg.solve``; one shared factor (``p = 1``), empty
    systems and no columns; the strict upper triangle is never read."""
    rng = np.random.default_rng(3)
    L = np.empty((p, d, d), dtype=dtype)
    for j in range(p):
        B = rng.normal(size=(d, d))
        A = B @ B.T + d * np.eye(d)
        L[j] = np.linalg.cholesky(A).astype(dtype)
        L[j][np.triu_indices(d, 1)] = np.nan  # garbage that must not be read
    R = rng.normal(size=(d, c)).astype(dtype)
    L_in, R_in = L.copy(), R.copy()
    S = K.cholesky_solve(L, R)
    assert S.shape == (d, c) and S.dtype == dtype
    np.testing.assert_allclose(S, N.cholesky_solve(L, R),
                               **(dict(rtol=1e-3, atol=1e-4) if dtype == np.float32
                                  else _tol(dtype)))
    np.testing.assert_array_equal(R, R_in)
    np.testing.assert_array_equal(L, L_in)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,d,c,density", [(1, 3, 1, 1.0), (9, 30, 2, 0.2), (25, 60, 4, 0.1),
                                           (6, 5, 3, 0.0)])
def test_sparse_weighted_gram(dtype, n, d, c, density):
    rng = np.random.default_rng(1)
    X = sp.random(n, d, density=density, format="csr", random_state=2, dtype=dtype)
    if n > 2:
        X = sp.csr_matrix(X.toarray() * (np.arange(n) != 1)[:, None])  # a zero row
    XT = X.T.tocsr()
    dinv = rng.uniform(0.1, 3.0, size=(c, d)).astype(dtype)
    args = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
            XT.indptr.astype(np.int64), XT.indices.astype(np.int64), XT.data, dinv)
    Kk = K.sparse_weighted_gram(*args)
    assert Kk.shape == (c, n, n) and Kk.dtype == dtype
    np.testing.assert_allclose(Kk, N.sparse_weighted_gram(*args), **_tol(dtype))


def _row_pass_grams(indptr, indices, data, t_indptr, t_indices, t_data, dinv):
    """Every entry of ``X diag(dinv[k]) Xᵀ`` by a full pass over row ``i`` (features in
    order, then the rows of each feature), products in the data's precision and sums in
    float64, as the kernel computes them."""
    c, n = dinv.shape[0], len(indptr) - 1
    K = np.zeros((c, n, n))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            for q in range(t_indptr[f], t_indptr[f + 1]):
                v = data[p] * t_data[q]  # in the data's precision, as the kernel
                for k in range(c):
                    K[k, i, t_indices[q]] += float(v * dinv[k, f])
    return K.astype(dinv.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shuffle", [False, True])
def test_sparse_weighted_gram_lower_pass_is_exact(dtype, shuffle):
    # the kernel accumulates only j <= i and copies the upper triangle: the same bits as a
    # full row pass, also when the columns of X.T are not sorted (no early stop then)
    rng = np.random.default_rng(5)
    X = sp.random(14, 25, density=0.3, format="csr", random_state=6, dtype=dtype)
    XT = X.T.tocsr()
    t_indices, t_data = XT.indices.copy(), XT.data.copy()
    if shuffle:
        for r in range(XT.shape[0]):
            lo, hi = XT.indptr[r], XT.indptr[r + 1]
            perm = lo + rng.permutation(hi - lo)
            t_indices[lo:hi], t_data[lo:hi] = XT.indices[perm], XT.data[perm]
    dinv = rng.uniform(0.1, 3.0, size=(3, 25)).astype(dtype)
    args = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
            XT.indptr.astype(np.int64), t_indices.astype(np.int64), t_data, dinv)
    Kk = K.sparse_weighted_gram(*args)
    np.testing.assert_array_equal(Kk, Kk.transpose(0, 2, 1))
    ref = _row_pass_grams(X.indptr, X.indices, X.data, XT.indptr, XT.indices, XT.data, dinv)
    np.testing.assert_array_equal(Kk, ref)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 17])
def test_centre_woodbury_lower(dtype, n):
    rng = np.random.default_rng(7)
    A = rng.normal(size=(n, max(n, 1)))[:, :3].astype(dtype)
    Kin = (A @ A.T).astype(dtype)
    r = Kin.mean(axis=1)
    m = r.mean() if n else dtype(0.0)
    Kk, Kn = Kin.copy(), Kin.copy()
    assert K.centre_woodbury_lower(Kk, r, m) and N.centre_woodbury_lower(Kn, r, m)
    low = np.tril_indices(n)
    np.testing.assert_array_equal(Kk[low], Kn[low])  # the same passes fused: the same bits
    up = np.triu_indices(n, 1)
    np.testing.assert_array_equal(Kk[up], Kin[up])  # the strict upper triangle is not written
    if n:
        Kk[n - 1, 0] = np.inf
        assert not K.centre_woodbury_lower(Kk, r, m)
    with pytest.raises(ValueError, match="centre_woodbury_lower"):
        K.centre_woodbury_lower(Kk, np.zeros(n + 1, dtype), m)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,c,p", [(1, 1, 0), (2, 1, 1), (30, 4, 0), (30, 4, 60), (200, 3, 500),
                                   (5, 6, 10)])
def test_pair_gram(dtype, n, c, p):
    rng = np.random.default_rng(3)
    F = rng.random((n, c)).astype(dtype)
    Ip = _random_ip(rng, n, p, dtype)
    G = K.pair_gram(F, *Ip)
    assert G.shape == (c, c) and G.dtype == dtype
    np.testing.assert_allclose(G, N.pair_gram(F, *Ip), **_tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,c,p,lam", [(1, 1, 0, 0.0), (2, 1, 1, 0.5), (40, 4, 0, 0.0),
                                       (40, 4, 120, 0.01), (40, 4, 120, 1.0), (7, 8, 12, 0.1)])
def test_multiplicative_f_update(dtype, n, c, p, lam):
    rng = np.random.default_rng(4)
    F = rng.random((n, c)).astype(dtype)
    if n > 3:
        F[2] = 0.0          # a zero row stays zero
        F[3, 0] = 0.0
    Z = rng.normal(size=(n, c)).astype(dtype)
    Gam = rng.normal(size=(c, c)).astype(dtype)
    Gam = (Gam + Gam.T) / 2
    Ip = _random_ip(rng, n, p, dtype)
    for rows in (np.arange(n, dtype=np.int64), np.arange(0, n, 2, dtype=np.int64),
                 np.zeros(0, dtype=np.int64)):
        Fn = K.multiplicative_f_update(F, Z, Gam, lam, *Ip, rows)
        assert Fn.dtype == dtype and Fn.shape == F.shape
        np.testing.assert_allclose(Fn, N.multiplicative_f_update(F, Z, Gam, lam, *Ip, rows),
                                   **_tol(dtype))
        assert (Fn >= 0).all()
        if n > 3 and rows.size == n:
            assert (Fn[2] == 0).all() and Fn[3, 0] == 0


def test_multiplicative_f_update_subnormal_no_nan():
    # a row whose entries underflow: den may be subnormal but the result must stay finite
    F = np.array([[0.0, 8.3e-320, 0.0]])
    Z = np.array([[1e-3, -1e-3, 3e-2]])
    Gam = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])
    e = FS.empty_csr(1)
    Fn = K.multiplicative_f_update(F, Z, Gam, 0.0, *e, np.arange(1, dtype=np.int64))
    assert np.isfinite(Fn).all() and (Fn >= 0).all()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("lam", [0.0, 1.0, 1e6])
def test_labelled_rows_update(dtype, lam):
    rng = np.random.default_rng(5)
    n, c = 20, 4
    Z = rng.normal(size=(n, c)).astype(dtype)
    F = rng.random((n, c)).astype(dtype)
    for rows in (np.array([0, 5, 19], dtype=np.int64), np.zeros(0, dtype=np.int64)):
        classes = rng.integers(0, c, rows.size).astype(np.int64)
        F1, F2 = F.copy(), F.copy()
        assert K.labelled_rows_update(F1, Z, rows, classes, lam) is None
        N.labelled_rows_update(F2, Z, rows, classes, lam)
        np.testing.assert_allclose(F1, F2, **_tol(dtype))
        untouched = np.setdiff1d(np.arange(n), rows)
        np.testing.assert_array_equal(F1[untouched], F[untouched])


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
    views, y = _blobs(rng, 25, 4, (6, 5), sep=6.0)
    X = np.hstack(views)
    rows = np.array([0, 1, 2, 25, 26, 27])
    classes = y[rows]
    graph = ST._knn_graph(X)
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
    views, y = _blobs(rng, 15, 3, (4, 3), sep=2.0, noise=1.5)
    labels = np.where(rng.random(y.size) < 0.3, y, -1)
    data = SV._prepare(views, 3, labels, None, None, 1e-3, 1e-3, None, 1.0, anchor, None,
                       "k-means++", 1, 0, "zscore", "auto", "monotone")
    X, vp, _ = SV._normalized_data(data)
    wstep = WS.WStep(*SV.choose_route(X, "auto")[::-1], vp)
    assert wstep.route == "direct"
    F0 = SV._initial_F(X, data, data.rng, None)
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
    graph = sp.block_diag([ST._knn_graph(X[:-10]), ST._knn_graph(X[-10:])], format="csr")
    spreader = ST._FoldSpreader(graph, rows, classes, c)
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
    views = _views(rng, 25, [30, 20], sparse=True)  # d = 50 > n = 25
    kw = _prior_kwargs(rng, 25, 3, prior)
    res = [fastmv.mvfl(views, 3, solver=s, init="random", random_state=0, max_iter=15, tol=0,
                       **kw) for s in ("direct", "woodbury", "auto")]
    for r in res[1:]:
        np.testing.assert_allclose(r.W, res[0].W, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(r.F, res[0].F, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(r.objective, res[0].objective, rtol=1e-7)


# ------------------------------------------------------------------------------------------
# the solver against the plain NumPy transcription


def _prior_kwargs(rng, n, c, prior, frac=0.3):
    if prior == "labels":
        lab = rng.integers(0, c, n)
        lab[rng.random(n) > frac] = -1
        return {"labels": lab}
    if prior == "pairs":
        pairs = rng.integers(0, n, size=(2 * n, 2))
        pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
        s = rng.random(len(pairs)) < 0.3
        return {"must_link": pairs[s], "cannot_link": pairs[~s]}
    return {}


@pytest.mark.parametrize("prior,lam1,lam3", [("none", 1e-3, 1.0), ("labels", 1e-2, 10.0),
                                             ("labels", 0.0, 1.0), ("pairs", 1e-3, 0.01),
                                             ("pairs", 0.1, 0.3)])
def test_solver_equals_reference(prior, lam1, lam3):
    rng = np.random.default_rng(8)
    n, c = 40, 3
    views = _views(rng, n, [6, 9, 4])
    F0 = rng.random((n, c)) + 0.05
    kw = _prior_kwargs(rng, n, c, prior)
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
    views = _views(rng, n, [int(rng.integers(1, 25)) for _ in range(int(rng.integers(1, 4)))])
    kw = _prior_kwargs(rng, n, c, prior)
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
    views = _views(rng, n, [int(rng.integers(2, 20)) for _ in range(int(rng.integers(1, 4)))])
    X = np.hstack(views)
    vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in views])])
    kw = _prior_kwargs(rng, n, c, prior)
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
    views = _views(rng, 50, [5, 12])
    kw = _prior_kwargs(rng, 50, 4, prior)
    seen = []

    def cb(info):
        assert np.isfinite(info.state["F"]).all() and (info.state["F"] >= 0).all()
        seen.append(info.iteration)

    r = fastmv.mvfl(views, 4, lam3=0.05 if prior == "pairs" else 1.0, random_state=0,
                    max_iter=30, tol=0, callback=cb, **kw)
    assert seen == list(range(1, 31)) and (r.F >= 0).all()


# ------------------------------------------------------------------------------------------
# behaviour


def test_planted_clusters_recovered():
    rng = np.random.default_rng(10)
    views, y = _blobs(rng, 30, 4, [8, 5, 12], sep=5.0)
    for kw in ({}, {"labels": simulate.partial_labels(y, 0.2, random_state=1)}):
        r = fastmv.mvfl(views, 4, random_state=0, **kw)
        assert metrics.accuracy(y, r.labels) == 1.0
    ml, cl = _pairs_from_labelled(y, 0.2, np.random.default_rng(2))
    r = fastmv.mvfl(views, 4, must_link=ml, cannot_link=cl, lam3=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) == 1.0


def test_view_selection_finds_the_informative_view():
    rng = np.random.default_rng(11)
    views, y = _blobs(rng, 40, 3, [6], sep=5.0)
    noise = rng.normal(size=(120, 30))
    r = fastmv.mvfl([noise, views[0]], 3, lam1=0.1, lam2=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) == 1.0
    # the informative view carries far more weight, per cluster and per feature
    assert (r.view_weights[1] > 5 * r.view_weights[0]).all()
    fw = r.feature_weights
    assert fw[30:].min() > fw[:30].max()


def test_labelled_samples_keep_their_class_with_large_lam3():
    rng = np.random.default_rng(12)
    views, y = _blobs(rng, 40, 4, [6, 6], sep=0.7, noise=1.0)  # overlapping clusters
    lab = simulate.partial_labels(y, 0.3, random_state=3)
    known = lab >= 0
    r0 = fastmv.mvfl(views, 4, random_state=0)
    # the anchor pinned: a stronger validated pull (0.3) also keeps the start's labelled rows
    r_small = fastmv.mvfl(views, 4, labels=lab, lam3=0.01, anchor=0.1, random_state=0)
    r = fastmv.mvfl(views, 4, labels=lab, lam3=1e6, random_state=0)
    np.testing.assert_array_equal(r.labels[known], lab[known])
    # without the prior, or with a weak one, some labelled samples are misclustered
    assert metrics.accuracy(y[known], r0.labels[known]) < 0.9
    assert np.mean(r_small.labels[known] == lab[known]) < 0.9


@pytest.mark.parametrize("seed", [13, 15, 16])
def test_large_lam3_confines_labelled_rows_to_their_class(seed):
    """With λ3 → ∞ the closed form (eq. 18) leaves a labelled row only its own class's entry
    ``max(Z[i, y_i], 0)``: off-class entries vanish, and the row's argmax is its class
    wherever that entry is positive (a sample the regression cannot score positively for its
    class gets a numerically zero row)."""
    rng = np.random.default_rng(seed)
    views, y = _blobs(rng, 40, 4, [6, 6], sep=0.7, noise=1.0)
    lab = simulate.partial_labels(y, 0.3, random_state=3)
    known = np.flatnonzero(lab >= 0)
    r = fastmv.mvfl(views, 4, labels=lab, lam3=1e6, normalize="zscore", random_state=0)
    Fl = r.F[known]
    on = Fl[np.arange(known.size), lab[known]]
    off = Fl.copy()
    off[np.arange(known.size), lab[known]] = 0.0
    assert off.max() <= 1e-5 * r.F.max()
    alive = on > 1e-3 * r.F.max()
    assert alive.mean() >= 0.95
    np.testing.assert_array_equal(r.labels[known][alive], lab[known][alive])


def test_sparse_and_dense_views_agree():
    rng = np.random.default_rng(13)
    dense = _views(rng, 30, [12, 40], sparse=True)
    dense = [v.toarray() for v in dense]
    sparse = [sp.csr_matrix(v) for v in dense]
    for norm in ("zscore", "l2", "minmax", None):
        a = fastmv.mvfl(dense, 3, normalize=norm, random_state=0, max_iter=20)
        b = fastmv.mvfl(sparse, 3, normalize=norm, random_state=0, max_iter=20)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_allclose(a.W, b.W, rtol=1e-6, atol=1e-9)


def test_dense_text_takes_the_sparse_woodbury_path(monkeypatch):
    rng = np.random.default_rng(21)
    views = [v.toarray() for v in _views(rng, 20, [60, 70], sparse=True)]
    for v in views:
        v[rng.random(v.shape) < 0.8] = 0.0  # ~6% nonzeros: handled as CSR internally
    # the paper's F step is a smooth map of Z: the routes' rounding differences stay small
    kw = dict(random_state=0, max_iter=15, tol=0, normalize="l2", f_step="paper")
    a = fastmv.mvfl(views, 3, **kw)
    monkeypatch.setattr(WS, "SPARSE_DENSITY", 0.0)  # force the dense Woodbury route
    b = fastmv.mvfl(views, 3, **kw)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-7, atol=1e-10)


def test_normalize_zscore_is_a_scaling():
    rng = np.random.default_rng(14)
    views = [rng.normal(size=(30, 4)) * [1, 5, 0.1, 2] + 7, rng.normal(size=(30, 9)) * 3]
    views[0][:, 2] = 1.5  # a constant feature is zeroed
    F0 = rng.random((30, 3))
    a = fastmv.mvfl(views, 3, init=F0, normalize="zscore", max_iter=10, tol=0)
    manual = []
    for V in views:
        sd = V.std(axis=0)
        s = np.where(sd > 0, 1 / np.where(sd > 0, sd, 1), 0.0) / np.sqrt(V.shape[1])
        manual.append((V - V.mean(axis=0)) * s)
    b = fastmv.mvfl(manual, 3, init=F0, normalize=None, max_iter=10, tol=0)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-8, atol=1e-12)
    assert np.all(a.W[2] == 0) or np.abs(a.W[2]).max() < 1e-12


def test_deterministic_thread_independent_and_inputs_unchanged():
    rng = np.random.default_rng(15)
    views = _views(rng, 60, [10, 80], sparse=False)
    views[1] = sp.csr_matrix(views[1] * (rng.random(views[1].shape) < 0.2))
    kw = _prior_kwargs(rng, 60, 3, "pairs")
    copies = [v.copy() for v in views]
    kw_copy = {k: v.copy() for k, v in kw.items()}
    a = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=1, **kw)
    b = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=2, **kw)
    c = fastmv.mvfl(views, 3, lam3=0.01, random_state=5, n_jobs=1, **kw)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.F, b.F, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.F, c.F)  # same seed, same threads: identical
    np.testing.assert_array_equal(views[0], copies[0])
    np.testing.assert_array_equal(views[1].toarray(), copies[1].toarray())
    for k in kw:
        np.testing.assert_array_equal(kw[k], kw_copy[k])
    lab = _prior_kwargs(rng, 60, 3, "labels")["labels"]
    lab_copy = lab.copy()
    F0 = rng.random((60, 3))
    F0_copy = F0.copy()
    fastmv.mvfl(views, 3, labels=lab, init=F0, max_iter=3)
    np.testing.assert_array_equal(lab, lab_copy)
    np.testing.assert_array_equal(F0, F0_copy)


def test_result_fields_and_convergence():
    rng = np.random.default_rng(16)
    views, y = _blobs(rng, 20, 3, [4, 7], sep=4.0)
    r = fastmv.mvfl(views, 3, tol=1e-4, random_state=0, verbose=False)
    assert r.converged and r.n_iter < 100 and r.objective.shape == (r.n_iter,)
    assert r.labels.dtype == np.int64 and r.labels.shape == (60,)
    assert r.F.shape == (60, 3) and r.W.shape == (11, 3) and r.b.shape == (3,)
    assert r.view_weights.shape == (2, 3) and r.feature_weights.shape == (11,)
    np.testing.assert_array_equal(r.labels, np.argmax(r.F, axis=1))
    assert "MVFLResult" in repr(r)
    r1 = fastmv.mvfl(views, 1, random_state=0, max_iter=5)  # c = 1
    assert (r1.labels == 0).all()


# ------------------------------------------------------------------------------------------
# validation


def test_validation_errors():
    rng = np.random.default_rng(18)
    views = _views(rng, 12, [3, 4])
    lab = np.full(12, -1)
    lab[:3] = [0, 1, 0]
    with pytest.raises(ValueError, match="at most one kind of prior"):
        fastmv.mvfl(views, 2, labels=lab, must_link=[[0, 1]])
    with pytest.raises(ValueError, match="at most one kind of prior"):
        fastmv.mvfl(views, 2, labels=lab, cannot_link=[[0, 1]])
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=lab[:-1])
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=np.r_[lab[:-1], 2])  # class >= n_clusters
    with pytest.raises(ValueError, match="labels"):
        fastmv.mvfl(views, 2, labels=np.r_[lab[:-1], -2])
    with pytest.raises(ValueError, match="must_link"):
        fastmv.mvfl(views, 2, must_link=[[0, 12]])
    with pytest.raises(ValueError, match="must_link"):
        fastmv.mvfl(views, 2, must_link=[[3, 3]])
    with pytest.raises(ValueError, match="cannot_link"):
        fastmv.mvfl(views, 2, cannot_link=[[0, 1, 2]])
    with pytest.raises(ValueError, match="both must_link and cannot_link"):
        fastmv.mvfl(views, 2, must_link=[[0, 1]], cannot_link=[[1, 0]])
    with pytest.raises(ValueError, match="same number of samples"):
        fastmv.mvfl([views[0], views[1][:-1]], 2)
    with pytest.raises(TypeError, match="X_list"):
        fastmv.mvfl(views[0], 2)
    with pytest.raises(ValueError, match="X_list"):
        fastmv.mvfl([np.full((12, 3), np.nan)], 2)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.mvfl(views, 13)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.mvfl(views, 0)
    for name in ("lam1", "lam2", "lam3"):
        with pytest.raises(ValueError, match=name):
            fastmv.mvfl(views, 2, **{name: -1.0})
    with pytest.raises(ValueError, match="lam1 and lam2"):
        fastmv.mvfl(views, 2, lam1=0.0, lam2=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        fastmv.mvfl(views, 2, max_iter=-1)
    with pytest.raises(ValueError, match="init is all zero"):
        fastmv.mvfl(views, 2, init=np.zeros((12, 2)))
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init="kmeans")  # the vocabulary is "k-means++"
    with pytest.raises(ValueError, match="tol"):
        fastmv.mvfl(views, 2, tol=-1.0)
    with pytest.raises(ValueError, match="eps"):
        fastmv.mvfl(views, 2, eps=0.0)
    with pytest.raises(ValueError, match="normalize"):
        fastmv.mvfl(views, 2, normalize="unit")
    with pytest.raises(ValueError, match="solver"):
        fastmv.mvfl(views, 2, solver="cg")
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init="spectral")
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init=np.ones((12, 3)))
    with pytest.raises(ValueError, match="init"):
        fastmv.mvfl(views, 2, init=-np.ones((12, 2)))
    with pytest.raises(TypeError, match="callback"):
        fastmv.mvfl(views, 2, callback=3)
    with pytest.raises(TypeError, match="lam3"):
        fastmv.mvfl(views, 2, lam3="big")
    with pytest.raises(ValueError, match="n_jobs"):
        fastmv.mvfl(views, 2, n_jobs=0)


def test_prior_edge_cases():
    rng = np.random.default_rng(19)
    views, y = _blobs(rng, 10, 2, [4], sep=5.0)
    # all samples labelled, no sample labelled, empty pair lists, only cannot-links
    r = fastmv.mvfl(views, 2, labels=y, lam3=100.0, random_state=0, max_iter=10)
    np.testing.assert_array_equal(r.labels, y)
    # no sample labelled, or empty pair lists: exactly the prior-free problem
    free = fastmv.mvfl(views, 2, random_state=0, max_iter=10)
    r = fastmv.mvfl(views, 2, labels=np.full(20, -1), random_state=0, max_iter=10)
    np.testing.assert_array_equal(r.F, free.F)
    r = fastmv.mvfl(views, 2, must_link=np.zeros((0, 2), int), cannot_link=None, lam3=5.0,
                    random_state=0, max_iter=10)
    np.testing.assert_allclose(r.F, free.F, rtol=1e-12, atol=1e-15)
    r = fastmv.mvfl(views, 2, cannot_link=[[0, 15], [1, 12]], lam3=0.01, random_state=0)
    assert metrics.accuracy(y, r.labels) >= 0.9
    # duplicated pairs are allowed (they add weight)
    fastmv.mvfl(views, 2, must_link=[[0, 1], [1, 0]], lam3=0.01, random_state=0, max_iter=3)


# ------------------------------------------------------------------------------------------
# real data (../shared/datasets)


def _handwritten():
    from fastmv.datasets import load_mat

    views, y = load_mat(shared_dataset("Handwritten.mat"))
    return [views[1], views[0], views[5]], y  # fou, fac, zer (file order fac fou kar mor pix zer)


@pytest.mark.slow
def test_handwritten_three_settings():
    """Paper settings on Handwritten fou+fac+zer (report: 5 draws; here 2 draws)."""
    views, y = _handwritten()
    acc = {"none": [], "labels": [], "pairs": []}
    for s in range(2):
        acc["none"].append(metrics.accuracy(y, fastmv.mvfl(views, 10, random_state=s).labels))
        lab = simulate.partial_labels(y, 0.1, random_state=s)
        r = fastmv.mvfl(views, 10, labels=lab, lam3=100.0, random_state=s)
        acc["labels"].append(metrics.accuracy(y, r.labels))
        ml, cl = _pairs_from_labelled(y, 0.1, np.random.default_rng(s))
        r = fastmv.mvfl(views, 10, must_link=ml, cannot_link=cl, lam3=0.01, random_state=s)
        acc["pairs"].append(metrics.accuracy(y, r.labels))
    assert np.mean(acc["labels"]) >= 0.90, acc
    assert np.mean(acc["pairs"]) >= 0.85, acc
    assert np.mean(acc["none"]) >= 0.80, acc


@pytest.mark.slow
def test_3sources_labels_beat_concatenated_kmeans():
    from fastmv.datasets import load_mat

    views, y = load_mat(shared_dataset("3Sources.mat"))
    views = [sp.csr_matrix(v) for v in views]
    c = int(np.unique(y).size)
    lab = simulate.partial_labels(y, 0.1, random_state=0)
    r = fastmv.mvfl(views, c, labels=lab, lam1=0.3, lam2=1e-3, lam3=100.0, normalize="l2",
                    random_state=0)
    km = fastmv.kmeans(sp.hstack(views, format="csr"), c, random_state=0).labels
    assert metrics.accuracy(y, r.labels) > metrics.accuracy(y, km) + 0.05
    assert metrics.nmi(y, r.labels) > metrics.nmi(y, km) + 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning with the defaults
        r = fastmv.mvfl(views, c, labels=lab, random_state=0)
    assert r.converged and r.n_iter < 100
    assert np.all(np.diff(r.objective) <= 0)
    assert metrics.accuracy(y, r.labels) > metrics.accuracy(y, km)
    assert metrics.nmi(y, r.labels) > metrics.nmi(y, km)


# ------------------------------------------------------------------------------------------
# contract, restarts, loud failures, scale safety


def test_result_contract_and_save_load(tmp_path):
    rng = np.random.default_rng(30)
    views, y = _blobs(rng, 10, 3, [4, 5], sep=5.0)
    r = fastmv.mvfl(views, 3, labels=simulate.partial_labels(y, 0.3, random_state=0),
                    random_state=0, max_iter=5)
    assert isinstance(r, fastmv._core._result.Result)
    assert r.objective.dtype == np.float64 and r.objective.shape == (r.n_iter,)
    assert isinstance(r.n_iter, int) and isinstance(r.converged, bool)
    assert r.lam3 == 100.0 and r.normalize == ["zscore", "zscore"]
    r.save(tmp_path / "r.npz")
    back = fastmv._core._result.Result.load(tmp_path / "r.npz")
    assert type(back) is type(r)
    np.testing.assert_array_equal(back.F, r.F)
    r0 = fastmv.mvfl(views, 3, random_state=0, max_iter=0)  # the start itself
    assert r0.n_iter == 0 and r0.objective.shape == (0,) and r0.labels.shape == (30,)


@pytest.mark.parametrize("how", ["true", "stopiteration"])
def test_callback_stops(how):
    rng = np.random.default_rng(31)
    views, _ = _blobs(rng, 10, 2, [3], sep=5.0)
    seen = []

    def cb(info):
        seen.append(info.iteration)
        assert info.solver == "mvfl" and set(info.state) == {"W", "b", "F", "Z"}
        if info.iteration == 2:
            if how == "true":
                return True
            raise StopIteration

    r = fastmv.mvfl(views, 2, random_state=0, tol=0, callback=cb, n_init=3)
    assert seen == [1, 2] and r.n_iter == 2 and not r.converged


def test_n_init_keeps_the_lowest_objective():
    rng = np.random.default_rng(32)
    views, _ = _blobs(rng, 15, 4, [5, 6], sep=1.5, noise=1.5)
    seen = []
    r = fastmv.mvfl(views, 4, init="random", n_init=3, random_state=1, max_iter=8, tol=0,
                    callback=lambda info: seen.append(info.objective))
    finals = [seen[7], seen[15], seen[23]]
    assert len(seen) == 24 and len(set(finals)) == 3  # three different starts
    assert r.objective[-1] == min(finals)


def test_one_cluster_warns():
    X = np.ones((12, 3))  # nothing to separate: every sample lands in one cluster
    X[:, 0] = np.arange(12) * 1e-12
    with pytest.warns(fastmv.exceptions.DegenerateSolutionWarning, match="one cluster"):
        fastmv.mvfl([X], 3, random_state=0, max_iter=3, normalize=None, init=np.tile(
            [1.0, 0.0, 0.0], (12, 1)))


@pytest.mark.parametrize("scale", [1e300, 1e160, 1e-300])
def test_scaled_views_give_the_same_labels(scale):
    rng = np.random.default_rng(33)
    views, y = _blobs(rng, 12, 3, [4, 6], sep=4.0)
    views.append(sp.csr_matrix(np.abs(rng.normal(size=(36, 30))) * (rng.random((36, 30)) < 0.2)))
    base = fastmv.mvfl(views, 3, random_state=0, max_iter=10)
    with np.errstate(all="raise"):
        scaled = [v * scale for v in views]
    r = fastmv.mvfl(scaled, 3, random_state=0, max_iter=10)
    assert np.isfinite(r.objective).all() and np.isfinite(r.F).all()
    np.testing.assert_array_equal(r.labels, base.labels)
    np.testing.assert_allclose(r.objective, base.objective, rtol=1e-6)
    if scale > 1:  # without normalisation the W step overflows: a clear error, no inf/NaN
        with pytest.raises(FloatingPointError, match="normalize"), np.errstate(all="ignore"):
            fastmv.mvfl(scaled[:2], 3, init=np.ones((36, 3)), max_iter=3, normalize=None)
        with pytest.raises((FloatingPointError, fastmv.exceptions.DegenerateSolutionError)), \
                np.errstate(all="ignore"):  # the k-means start refuses first
            fastmv.mvfl(scaled[:2], 3, random_state=0, max_iter=3, normalize=None)


_CACHE_SCRIPT = """
import numpy as np, scipy.sparse as sp
from fastmv.kernels import mvfl as K
F = np.ones((4, 2)); Z = np.ones((4, 2)); W = np.ones((3, 2)); vp = np.array([0, 1, 3])
g, r = K.weight_norms(W, vp, 1e-8)
K.irls_diagonal(g, r, vp, 1e-3, 1e-3)
X = sp.csr_matrix(np.eye(4, 3)); T = X.T.tocsr()
i64 = lambda a: a.astype(np.int64)
K.sparse_weighted_gram(i64(X.indptr), i64(X.indices), X.data, i64(T.indptr), i64(T.indices),
                       T.data, np.ones((2, 3)))
e = (np.zeros(5, np.int64), np.zeros(0, np.int64), np.zeros(0))
K.pair_gram(F, *e)
K.multiplicative_f_update(F, Z, np.eye(2), 0.0, *e, np.arange(4))
K.labelled_rows_update(F, Z, np.arange(2), np.zeros(2, np.int64), 1.0)
"""


@pytest.mark.slow
def test_kernels_are_served_from_numba_cache(tmp_path):
    """A second process loads every MVFL kernel from the cache and compiles nothing."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_DEBUG_CACHE="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    run = [sys.executable, "-c", _CACHE_SCRIPT]
    subprocess.run(run, env=env, check=True, capture_output=True, text=True, cwd=root)
    second = subprocess.run(run, env=env, check=True, capture_output=True, text=True,
                            cwd=root)
    log = second.stdout + second.stderr
    assert "data saved" not in log, log
    assert log.count("data loaded") >= 6, log


# ------------------------------------------------------------------------------------------
# stopping once the labels have settled


def test_labels_settled_bound():
    """Settled iff every row's projected remaining move (both entries, contraction ρ) stays
    below its margin; a zero row or ρ ≥ 1 never settles; c = 1 and n = 0 always do."""
    from fastmv._mvfl._settle import labels_settled

    F = np.array([[1.0, 0.2], [0.1, 0.6]])
    move = np.array([[0.01, 0.0], [0.0, -0.02]])  # margins 0.8 and 0.5
    # row 2 bounds 2 · 0.02 · ρ/(1 − ρ): ρ = 0.9 gives 0.36 < 0.5, ρ = 0.95 gives 0.76
    assert labels_settled(F - move, F, 0.9, 1.0)
    assert not labels_settled(F - move, F, 0.95, 1.0)
    assert not labels_settled(F - move, F, 0.9, 2.0)  # the safety factor scales the bound
    assert not labels_settled(F - move, F, 1.0, 1.0)
    dead = F.copy()
    dead[1] = 0.0
    assert not labels_settled(dead, dead, 0.0, 1.0)
    assert labels_settled(F[:, :1] - 0.1, F[:, :1], 0.99, 1.0)
    assert labels_settled(np.zeros((0, 3)), np.zeros((0, 3)), 0.5, 1.0)


def test_settle_residual_follows_the_objective_until_settled():
    from fastmv._core._driver import relative_change
    from fastmv._mvfl._settle import Settle

    s = Settle(rtol=1e-4, safety=1.0, history=2)
    F = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert s.residual(10.0, F, F + 0.1) == np.inf  # no previous objective
    assert s.residual(9.0, F, F + 0.05) == relative_change(10.0, 9.0)  # objective moving
    J = 9.0 - 1e-6
    r = s.residual(J, F, F + 0.025)  # ratios 0.5: remaining ≤ 0.025, margins ~1
    assert r == 0.0
    off = Settle(rtol=None)
    off.residual(10.0, F, F)
    assert off.residual(10.0 - 1e-9, F, F) == relative_change(10.0, 10.0 - 1e-9)


def test_settled_stop_keeps_the_labels_of_the_full_solve(monkeypatch):
    """Planted blobs, 10 % labels: the settled stop ends earlier with the labels of the solve
    run to tol, and converged is reported; tol = 0 runs to max_iter."""
    from fastmv._mvfl import _solver as S

    rng = np.random.default_rng(0)
    views, y = _blobs(rng, 30, 3, (40, 50), sep=0.6)
    lab = simulate.partial_labels(y, 0.1, random_state=0)
    fast = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    monkeypatch.setattr(S, "SETTLE_RTOL", None)
    full = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert fast.converged and full.converged and fast.n_iter < full.n_iter
    np.testing.assert_array_equal(fast.labels, full.labels)
    assert metrics.accuracy(y, fast.labels) == 1.0
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fastmv.mvfl(views, 3, labels=lab, random_state=0, tol=0.0, max_iter=25).n_iter == 25


def test_woodbury_route_runs_more_inner_steps(monkeypatch):
    """The Woodbury route's F step takes N_INNER_WOODBURY projected-gradient steps per
    factorisation, the direct route N_INNER (the count each F step is given)."""
    from fastmv._mvfl import _fstep
    from fastmv._mvfl import _solver as S

    rng = np.random.default_rng(0)
    calls = {}

    def counting(F, Z, term, alpha, n_inner):
        calls.setdefault("n_inner", []).append(n_inner)
        return monotone(F, Z, term, alpha, n_inner)

    monotone = _fstep.monotone_f_step
    monkeypatch.setattr(S, "monotone_f_step", counting)
    views = [rng.random((15, 4)), rng.random((15, 30))]
    for solver, want in (("direct", S.N_INNER), ("woodbury", S.N_INNER_WOODBURY)):
        calls.clear()
        fastmv.mvfl(views, 2, solver=solver, init="random", random_state=0, max_iter=2,
                    tol=0.0)
        assert calls["n_inner"] == [want, want]
    assert S.N_INNER_WOODBURY > S.N_INNER


def test_quiet_stop_needs_unchanged_labels_and_a_small_change():
    """A quiet rule ``(q, r)`` returns 0 once the argmax of every row stayed the same for
    ``q`` iterations and the objective's relative change is at most ``r``; a label change
    restarts the count; ``quiet=()`` (or ``rtol=None``) turns them off."""
    from fastmv._core._driver import relative_change
    from fastmv._mvfl._settle import Settle

    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    B = np.array([[0.0, 1.0], [0.0, 1.0]])  # row 0 flips
    s = Settle(rtol=1e-12, history=50, quiet=((2, 1e-3),))
    assert s.residual(10.0, A, A) == np.inf
    assert s.residual(9.9999, A, A + 0.1) == 0.0  # two unchanged iterations, change 1e-5
    s = Settle(rtol=1e-12, history=50, quiet=((2, 1e-3),))
    s.residual(10.0, A, A)
    assert s.residual(9.9999, A, B) == relative_change(10.0, 9.9999)  # a label moved
    assert s.residual(9.9998, B, B) == relative_change(9.9999, 9.9998)  # one quiet only
    assert s.residual(9.9997, B, B) == 0.0
    assert s.residual(9.0, B, B) == relative_change(9.9997, 9.0)  # change above r
    # (0, r): the change alone; (1, r') with r' > r: a larger change once the labels rest
    s = Settle(rtol=1e-12, history=50, quiet=((1, 1e-2), (0, 1e-4)))
    s.residual(10.0, A, A)
    assert s.residual(9.99, A, B) > 0.0  # 1e-3: above 1e-4, and a label moved
    assert s.residual(9.98999, B, A) == 0.0  # 1e-6 with a label moving: (0, 1e-4) holds
    s = Settle(rtol=1e-12, history=50, quiet=((1, 1e-2), (0, 1e-4)))
    s.residual(10.0, A, A)
    assert s.residual(9.95, A, A) == 0.0  # 5e-3, labels unchanged: (1, 1e-2) holds
    for off in (Settle(rtol=1e-12, history=50, quiet=()), Settle(rtol=None)):
        off.residual(10.0, A, A)
        off.residual(10.0 - 1e-6, A, A)
        assert off.residual(10.0 - 2e-6, A, A) > 0.0
    empty = Settle(rtol=1e-12, history=50, quiet=((1, 1e-3),))
    F0 = np.zeros((3, 0))
    empty.residual(1.0, F0, F0)
    assert empty.residual(1.0, F0, F0) == 0.0


# ------------------------------------------------------------------------------------------
# the start's k-means in the rows' span


@pytest.mark.parametrize("sparse", [False, True])
def test_row_space_coordinates_keep_every_inner_product(sparse):
    """``Y Yᵀ = X Xᵀ`` with at most ``n`` columns: full-rank rows (Cholesky), duplicated and
    zero rows (the eigendecomposition), one row; dense and CSR."""
    from fastmv._mvfl._start import row_space_coordinates

    rng = np.random.default_rng(0)
    full = rng.normal(size=(7, 20))
    dup = np.vstack([full[:4], full[:2], np.zeros((1, 20))])
    for X in (full, dup, full[:1], np.zeros((3, 5))):
        A = sp.csr_matrix(X) if sparse else X
        Y = row_space_coordinates(A)
        assert Y.shape[0] == X.shape[0] and 1 <= Y.shape[1] <= X.shape[0]  # zero rows too
        G = X @ X.T
        np.testing.assert_allclose(Y @ Y.T, G, atol=1e-12 * max(1.0, np.abs(G).max()))
        d = ((X[:, None] - X[None]) ** 2).sum(-1)
        dy = ((Y[:, None] - Y[None]) ** 2).sum(-1)
        np.testing.assert_allclose(dy, d, atol=1e-10 * max(1.0, d.max()))


def test_start_kmeans_in_the_span_matches_kmeans_on_the_features(monkeypatch):
    """More features than samples: the start's k-means runs on the span coordinates and
    finds the partition k-means finds on the features themselves (planted clusters); the
    input is not modified."""
    from fastmv._blocks._kmeans import kmeans
    from fastmv._mvfl import _start

    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), 10)
    X = rng.normal(size=(40, 120)) + 3.0 * rng.normal(size=(4, 120))[y]
    X0 = X.copy()
    data = SimpleNamespace(c=4)
    seen = {}

    def spy(Z, *a, **k):
        seen["shape"] = Z.shape
        return kmeans(Z, *a, **k)

    monkeypatch.setattr("fastmv._blocks._kmeans.kmeans", spy)
    got = _start._kmeans_labels(X, data, np.random.default_rng(0), None)
    assert seen["shape"] == (40, 40)
    want = kmeans(X, 4, n_init=_start._KMEANS_N_INIT, random_state=np.random.default_rng(0))
    assert metrics.accuracy(want.labels, got) == 1.0 and metrics.accuracy(y, got) == 1.0
    np.testing.assert_array_equal(X, X0)
    _start._kmeans_labels(X[:, :45], data, np.random.default_rng(0), None)
    assert seen["shape"] == (40, 45)  # d <= 1.25 n: the features themselves
