"""k-means: kernels against their twins, Lloyd semantics, quality against scikit-learn."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv.kernels import clustering as K
from tests import naive_clustering as naive
from tests.conftest import shared_dataset


@pytest.mark.parametrize("n,c", [(1, 1), (7, 1), (1, 3), (50, 4), (0, 2)])
def test_nearest_center_matches_twin(n, c, rng):
    X = rng.standard_normal((n, 5))
    C = rng.standard_normal((c, 5))
    inner, xs, cs = X @ C.T, (X * X).sum(1), (C * C).sum(1)
    got = K.nearest_center(inner, xs, cs)
    ref = naive.nearest_center(inner, xs, cs)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12, atol=1e-12)


def _csr(X):
    Xs = sp.csr_matrix(X)
    return Xs.data, Xs.indices, Xs.indptr


@pytest.mark.parametrize("n,d,c,parts", [(1, 3, 1, 2), (1, 2, 4, 1), (100, 7, 5, 2),
                                         (57, 1, 9, 8), (0, 3, 2, 2), (700, 4, 3, 3)])
def test_lloyd_step_matches_twin(n, d, c, parts, rng):
    X = rng.standard_normal((n, d))
    X[::3] = 0.0  # zero rows
    C = rng.standard_normal((c, d))
    xs = (X * X).sum(1)
    ref = naive.lloyd_step(X, C, xs)
    for got in (K.lloyd_step(X, C, xs, parts), K.lloyd_step_serial(X, C, xs, parts),
                K.lloyd_step_csr(*_csr(X), C, xs, parts),
                K.lloyd_step_csr_serial(*_csr(X), C, xs, parts)):
        np.testing.assert_array_equal(got[0], ref[0])
        for a, b in zip(got[1:], ref[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
        assert got[0].dtype == np.int64 and got[3].dtype == np.int64


@pytest.mark.parametrize("n,d,t,parts", [(1, 3, 1, 2), (5, 2, 4, 1), (300, 7, 5, 3),
                                         (57, 1, 2, 8), (0, 3, 2, 2)])
def test_seeding_distances_match_twin(n, d, t, parts, rng):
    X = rng.standard_normal((n, d))
    Y = rng.standard_normal((t, d))
    xs = (X * X).sum(1)
    closest = np.where(rng.random(n) < 0.5, np.inf, rng.random(n))
    ref = naive.seeding_distances(X, Y, xs, closest)
    for got in (K.seeding_distances(X, Y, xs, closest, parts),
                K.seeding_distances_csr(*_csr(X), Y, xs, closest, parts)):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_kernels_do_not_depend_on_threads(rng):
    import numba
    X = rng.standard_normal((3000, 6))
    C = rng.standard_normal((7, 6))
    xs = (X * X).sum(1)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = K.lloyd_step(X, C, xs, 9)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = K.lloyd_step(X, C, xs, 9)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
    # the serial kernels run the same parts in the same order: the same results bit for bit
    for a, b in zip(K.lloyd_step_serial(X, C, xs, 9), many):
        np.testing.assert_array_equal(a, b)
    X[rng.random(X.shape) < 0.7] = 0.0
    for a, b in zip(K.lloyd_step_csr_serial(*_csr(X), C, xs, 9),
                    K.lloyd_step_csr(*_csr(X), C, xs, 9)):
        np.testing.assert_array_equal(a, b)


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
    # large enough that the restarts of b run one per thread (_restart_threads)
    X, _ = _blobs(rng, n_per=400, d=50, spread=4.0)
    a = fastmv.kmeans(X, 4, random_state=7, n_jobs=1)
    b = fastmv.kmeans(X, 4, random_state=7, n_jobs=2)
    c = fastmv.kmeans(X, 4, random_state=7, n_init=1, n_jobs=2)  # parallel inside the kernels
    d = fastmv.kmeans(X, 4, random_state=7, n_init=1, n_jobs=1)
    # a fixed partition of the samples: identical, not merely close
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert a.inertia == b.inertia
    np.testing.assert_array_equal(c.objective, d.objective)
    np.testing.assert_array_equal(c.centers, d.centers)


@pytest.mark.skipif(__import__("numba").config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_restarts_run_on_threads_only_when_they_pay(rng, monkeypatch):
    from fastmv._blocks import _kmeans as KM  # noqa: PLC0415 (the policy under test)

    used = []
    real = KM.task_map

    def spy(n_threads):
        used.append(n_threads)
        return real(n_threads)

    monkeypatch.setattr(KM, "task_map", spy)
    small = rng.random((200, 5))       # 1 000 values: its restarts take microseconds
    large = rng.random((3000, 30))     # 90 000 values x 4 clusters per Lloyd step
    with fastmv.thread_limit(2):
        got = [fastmv.kmeans(small, 3, random_state=0), fastmv.kmeans(large, 4, random_state=0)]
    assert used == [1, 2]
    for X, k, r in ((small, 3, got[0]), (large, 4, got[1])):
        one = fastmv.kmeans(X, k, random_state=0, n_jobs=1)
        np.testing.assert_array_equal(one.labels, r.labels)
        assert one.inertia == r.inertia


def test_result_contract(rng, tmp_path):
    X, _ = _blobs(rng)
    res = fastmv.kmeans(X, 4, random_state=0)
    res.save(tmp_path / "k.npz")
    back = fastmv.Result.load(tmp_path / "k.npz")
    assert type(back) is fastmv.KMeansResult and back.inertia == res.inertia
    np.testing.assert_array_equal(back.objective, res.objective)
    assert isinstance(res, fastmv.Result) and isinstance(res, fastmv.KMeansResult)
    assert isinstance(res.converged, bool) and res.converged
    assert res.objective.shape == (res.n_iter,) and res.objective.dtype == np.float64
    assert np.all(np.diff(res.objective) <= 1e-9 * res.objective[0])  # Lloyd never goes up
    assert res.objective[-1] == pytest.approx(res.inertia, rel=1e-12)
    zero = fastmv.kmeans(X, 4, max_iter=0, random_state=0)
    assert zero.n_iter == 0 and zero.objective.shape == (0,) and not zero.converged
    assert zero.inertia >= res.inertia


def test_parity_with_sklearn_from_the_same_start(rng):
    sk = pytest.importorskip("sklearn.cluster")
    X, y = _blobs(rng, n_per=150, spread=5.0)
    init = X[[np.flatnonzero(y == k)[0] for k in range(4)]].copy()
    ours = fastmv.kmeans(X, 4, init=init)
    theirs = sk.KMeans(4, init=init, n_init=1, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(ours.labels, theirs.labels_)
    np.testing.assert_allclose(ours.centers, theirs.cluster_centers_, rtol=1e-10)
    assert ours.inertia == pytest.approx(theirs.inertia_, rel=1e-10)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 2.0 ** -600, 1e100, 1e150])
def test_scale_invariance(scale, rng):
    X, _ = _blobs(rng, spread=2.0)
    ref = fastmv.kmeans(X, 4, random_state=1, n_init=2)
    res = fastmv.kmeans(X * scale, 4, random_state=1, n_init=2)
    np.testing.assert_array_equal(res.labels, ref.labels)
    np.testing.assert_allclose(res.centers, ref.centers * scale, rtol=1e-12,
                               atol=1e-12 * scale * np.abs(ref.centers).max())
    expected = ref.inertia * scale * scale
    assert res.inertia == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert np.all(np.isfinite(res.objective))
    if scale > 1:  # sparse input takes the same route
        sparse = fastmv.kmeans(sp.csr_matrix(X * scale), 4, random_state=1, n_init=2)
        np.testing.assert_array_equal(sparse.labels, ref.labels)


@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_unrepresentable_inertia_raises(scale, rng):
    X, _ = _blobs(rng, spread=2.0)
    with pytest.raises(fastmv.exceptions.DegenerateSolutionError, match="rescale X"):
        fastmv.kmeans(X * scale, 4, random_state=1, n_init=2)


def test_float32_compiles_nothing_new(rng):
    X = rng.standard_normal((50, 3)).astype(np.float32)
    res = fastmv.kmeans(X, 3, random_state=0)
    assert res.centers.dtype == np.float32
    for kernel in (K.lloyd_step, K.lloyd_step_serial, K.seeding_distances):
        assert all("float32" not in str(sig) for sig in kernel.signatures)


@pytest.mark.parametrize("bad", ["past_width", "one_based", "indptr"])
def test_invalid_sparse_structure_raises_naming_x(bad):
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]))
    X = X.copy()
    if bad == "past_width":
        X.indices[-1] = 7
    elif bad == "one_based":
        X.indices += 1
    else:
        X.indptr[1] = 5
    with pytest.raises(ValueError, match="X"):
        fastmv.kmeans(X, 2, random_state=0)


@pytest.mark.slow
def test_inertia_within_one_percent_of_sklearn_on_handwritten():
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    views, _ = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    X = np.hstack(views)
    for seed in range(2):
        ours = fastmv.kmeans(X, 10, n_init=10, random_state=seed).inertia
        theirs = sklearn_cluster.KMeans(10, n_init=10, random_state=seed).fit(X).inertia_
        assert ours <= theirs * 1.01


@pytest.mark.parametrize("sparse", [False, True])
def test_executor_gives_identical_results(sparse, rng, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from fastmv._blocks import _kmeans

    # small groups: several tasks, each of several parts, reduced in part order
    monkeypatch.setattr(_kmeans, "_TASK_ROWS", 300)
    X, _ = _blobs(rng, n_per=750, spread=4.0)
    X = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0)) if sparse else X
    ref = fastmv.kmeans(X, 4, random_state=7, n_init=3)
    with ThreadPoolExecutor(2) as pool:
        res = fastmv.kmeans(X, 4, random_state=7, n_init=3, executor=pool)
    np.testing.assert_array_equal(res.labels, ref.labels)
    np.testing.assert_array_equal(res.objective, ref.objective)
    np.testing.assert_array_equal(res.centers, ref.centers)


def test_a_failing_executor_task_names_the_task(rng):
    from concurrent.futures import Executor, Future

    class Failing(Executor):
        def submit(self, fn, *args, **kwargs):
            future = Future()
            future.set_exception(MemoryError("worker out of memory"))
            return future

    X, _ = _blobs(rng)
    with pytest.raises(RuntimeError, match="row-block task _lloyd_task.*worker out of memory"):
        fastmv.kmeans(X, 4, random_state=0, executor=Failing())
