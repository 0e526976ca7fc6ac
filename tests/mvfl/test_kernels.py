"""MVFL's kernels against their NumPy twins (docs/algorithms.md §2)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv._mvfl import _fstep as FS
from fastmv.kernels import mvfl as K
from tests.mvfl import naive as N
from tests.mvfl.helpers import (
    FLOATS,
    random_ip,
    tol_for,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


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
        np.testing.assert_allclose(g, g0, **tol_for(dtype))
        np.testing.assert_allclose(r, r0, **tol_for(dtype))
    g, r = K.weight_norms(W, vp, 1e-3)
    for lam1, lam2 in ((1e-3, 1e-2), (0.0, 0.5), (0.3, 0.0)):
        D = K.irls_diagonal(g, r, vp, lam1, lam2)
        assert D.shape == (c, d_total)
        np.testing.assert_allclose(D, N.irls_diagonal(g, r, vp, lam1, lam2), **tol_for(dtype))


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
                                  else tol_for(dtype)))
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
    np.testing.assert_allclose(Kk, N.sparse_weighted_gram(*args), **tol_for(dtype))


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
    Ip = random_ip(rng, n, p, dtype)
    G = K.pair_gram(F, *Ip)
    assert G.shape == (c, c) and G.dtype == dtype
    np.testing.assert_allclose(G, N.pair_gram(F, *Ip), **tol_for(dtype))


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
    Ip = random_ip(rng, n, p, dtype)
    for rows in (np.arange(n, dtype=np.int64), np.arange(0, n, 2, dtype=np.int64),
                 np.zeros(0, dtype=np.int64)):
        Fn = K.multiplicative_f_update(F, Z, Gam, lam, *Ip, rows)
        assert Fn.dtype == dtype and Fn.shape == F.shape
        np.testing.assert_allclose(Fn, N.multiplicative_f_update(F, Z, Gam, lam, *Ip, rows),
                                   **tol_for(dtype))
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
        np.testing.assert_allclose(F1, F2, **tol_for(dtype))
        untouched = np.setdiff1d(np.arange(n), rows)
        np.testing.assert_array_equal(F1[untouched], F[untouched])
