"""k-means: kernels against their twins, Lloyd semantics, quality against scikit-learn."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv.kernels import clustering as K
from tests import naive
from tests.conftest import shared_dataset


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,c", [(1, 1), (7, 1), (1, 3), (50, 4), (333, 17)])
def test_nearest_center_matches_twin(n, c, dtype, rng):
    X = rng.standard_normal((n, 5)).astype(dtype)
    C = rng.standard_normal((c, 5)).astype(dtype)
    inner = X @ C.T
    xs, cs = (X * X).sum(1), (C * C).sum(1)
    labels, d = K.nearest_center(inner, xs, cs)
    labels_ref, d_ref = naive.nearest_center(inner, xs, cs)
    np.testing.assert_array_equal(labels, labels_ref)
    np.testing.assert_allclose(d, d_ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    assert d.dtype == dtype and (d >= 0).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,d,c,blocks", [(1, 3, 1, 2), (10, 1, 3, 1), (100, 7, 5, 2),
                                          (57, 4, 9, 8), (0, 3, 2, 2)])
def test_cluster_sums_matches_twin(n, d, c, blocks, dtype, rng):
    X = rng.standard_normal((n, d)).astype(dtype)
    labels = rng.integers(0, c, size=n)
    sums, counts = K.cluster_sums(X, labels, c, blocks)
    sums_ref, counts_ref = naive.cluster_sums(X, labels, c)
    np.testing.assert_allclose(sums, sums_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(counts, counts_ref)
    Xs = sp.random(n, d, density=0.3, random_state=1, format="csr", dtype=dtype)
    sums, counts = K.cluster_sums_csr(Xs.data, Xs.indices, Xs.indptr, d, labels, c, blocks)
    sums_ref, counts_ref = naive.cluster_sums_csr(Xs.data, Xs.indices, Xs.indptr, d, labels, c)
    np.testing.assert_allclose(sums, sums_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(counts, counts_ref)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,d,c,blocks", [(1, 3, 1, 2), (1, 2, 4, 1), (100, 7, 5, 2),
                                          (57, 1, 9, 8), (0, 3, 2, 2)])
def test_lloyd_step_matches_twin(n, d, c, blocks, dtype, rng):
    X = rng.standard_normal((n, d)).astype(dtype)
    C = rng.standard_normal((c, d)).astype(dtype)
    xs = (X * X).sum(1)
    got = K.lloyd_step(X, C, xs, blocks)
    ref = naive.lloyd_step(X, C, xs)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(got[0], ref[0])
    for a, b in zip(got[1:], ref[1:]):
        np.testing.assert_allclose(a, b, **tol)
    assert got[2].dtype == dtype


def _blobs(rng, n_per=60, c=4, d=5, spread=0.3):
    centers = rng.standard_normal((c, d)) * 10
    X = np.vstack([centers[k] + spread * rng.standard_normal((n_per, d)) for k in range(c)])
    y = np.repeat(np.arange(c), n_per)
    perm = rng.permutation(len(y))
    return X[perm], y[perm]


def test_planted_blobs_recovered_exactly(rng):
    X, y = _blobs(rng)
    res = fastmv.kmeans(X, 4, random_state=0)
    assert fastmv.metrics.accuracy(y, res.labels) == 1.0
    labels, centers, inertia = res  # unpacks
    assert centers.shape == (4, 5) and inertia == pytest.approx(res.inertia)
    # inertia is the sum of squared distances to the returned centers
    assert inertia == pytest.approx(((X - centers[labels]) ** 2).sum(), rel=1e-10)


def test_lloyd_matches_naive_from_same_start(rng):
    X, y = _blobs(rng, spread=6.0)
    init = X[[np.flatnonzero(y == k)[0] for k in range(4)]].copy()
    res = fastmv.kmeans(X, 4, init=init, tol=0.0, max_iter=500)
    labels_ref, centers_ref = naive.lloyd(X, init.copy())
    assert np.bincount(labels_ref, minlength=4).min() > 0  # no empty-cluster relocation involved
    assert res.n_iter > 1
    np.testing.assert_array_equal(res.labels, labels_ref)
    np.testing.assert_allclose(res.centers, centers_ref, rtol=1e-10, atol=1e-10)


def test_sparse_equals_dense(rng):
    X = sp.random(200, 30, density=0.2, random_state=3, format="csr")
    a = fastmv.kmeans(X, 5, random_state=4, n_init=3)
    b = fastmv.kmeans(X.toarray(), 5, random_state=4, n_init=3)
    assert a.inertia == pytest.approx(b.inertia, rel=1e-6)
    assert fastmv.metrics.ari(a.labels, b.labels) == pytest.approx(1.0)


def test_deterministic_and_thread_independent(rng):
    X, _ = _blobs(rng, spread=4.0)
    a = fastmv.kmeans(X, 4, random_state=7, n_jobs=1)
    b = fastmv.kmeans(X, 4, random_state=7, n_jobs=2)
    c = fastmv.kmeans(X, 4, random_state=7)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.labels, c.labels)
    assert a.inertia == pytest.approx(b.inertia, rel=1e-12)


def test_edge_cases(rng):
    X = rng.standard_normal((5, 3))
    assert fastmv.kmeans(X, 1).labels.tolist() == [0] * 5
    res = fastmv.kmeans(X, 5, random_state=0)
    assert sorted(res.labels.tolist()) == list(range(5)) and res.inertia == pytest.approx(0)
    same = np.ones((6, 2))
    assert fastmv.kmeans(same, 3, random_state=0).inertia == pytest.approx(0)
    r32 = fastmv.kmeans(X.astype(np.float32), 2, random_state=0)
    assert r32.centers.dtype == np.float32


def test_validation_and_no_mutation(rng):
    X = rng.standard_normal((20, 3))
    X0 = X.copy()
    fastmv.kmeans(X, 3, random_state=0)
    np.testing.assert_array_equal(X, X0)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.kmeans(X, 21)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.kmeans(X, 0)
    with pytest.raises(ValueError, match="X"):
        fastmv.kmeans(np.full((3, 2), np.nan), 2)
    with pytest.raises(ValueError, match="init"):
        fastmv.kmeans(X, 3, init=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="init"):
        fastmv.kmeans(X, 3, init="spectral")
    with pytest.raises(ValueError, match="X"):
        fastmv.kmeans(np.zeros((3,)), 2)
    with pytest.raises(TypeError, match="n_init"):
        fastmv.kmeans(X, 2, n_init=1.5)


@pytest.mark.slow
def test_inertia_within_one_percent_of_sklearn_on_handwritten():
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    X = np.hstack(views)
    for seed in range(2):
        ours = fastmv.kmeans(X, 10, n_init=10, random_state=seed).inertia
        theirs = sklearn_cluster.KMeans(10, n_init=10, random_state=seed).fit(X).inertia_
        assert ours <= theirs * 1.01
