"""Dask input and executors against a real ``distributed.LocalCluster`` (two worker
processes), a Zarr store on disk, a worker killed mid-run, and a process without Dask."""
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv._blocks import _kmeans
from fastmv._core._executor import BlockMap
from fastmv._core._threads import task_map
from fastmv._mvmc import _lowrank

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _views(n=1200, dims=(20, 30, 10), c=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = [(rng.normal(0, 3, (c, d))[y] + rng.normal(0, 1, (n, d))).astype(np.float32)
             for d in dims]
    mask = fastmv.simulate.incomplete_mask(n, len(dims), 0.3, random_state=seed)
    return views, mask, y


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=40)
        client = distributed.Client(cluster)
    # Under load the worker processes can register after the client is up; the tests that
    # pick a worker to kill need both.
    client.wait_for_workers(2, timeout=120)
    yield client
    client.close()
    cluster.close()


def _zarr_views(views, path, rows):
    out = []
    for v, X in enumerate(views):
        store = zarr.open_array(str(path / f"view{v}.zarr"), mode="w", shape=X.shape,
                                chunks=(rows, X.shape[1]), dtype=X.dtype)
        store[:] = X
        out.append(da.from_zarr(str(path / f"view{v}.zarr")))
    return out


def test_opimc_on_a_zarr_store_through_a_cluster_matches_numpy(client, tmp_path):
    views, mask, y = _views()
    # read in order (block by block, prefetched); shuffled: tests/opimc (the arrays' order)
    ref = fastmv.opimc(views, 4, mask=mask, chunk_size=100, random_state=0, shuffle=False)
    dviews = _zarr_views(views, tmp_path, rows=170)
    assert client.scheduler_info()["workers"] and len(client.scheduler_info()["workers"]) == 2
    for m in (mask, da.from_array(mask, chunks=(300, 3))):
        res = fastmv.opimc(dviews, 4, mask=m, chunk_size=100, random_state=0, shuffle=False)
        np.testing.assert_array_equal(res.labels, ref.labels)
        for a, b in zip(res.U, ref.U):
            np.testing.assert_array_equal(a, b)
    two = fastmv.opimc(dviews, 4, mask=mask, chunk_size=100, max_iter=2, tol=0.0, random_state=0,
                       shuffle=False)
    ref2 = fastmv.opimc(views, 4, mask=mask, chunk_size=100, max_iter=2, tol=0.0,
                        random_state=0, shuffle=False)
    np.testing.assert_array_equal(two.labels, ref2.labels)


def test_prefetch_keeps_a_bounded_number_of_blocks_in_flight():
    from fastmv._opimc._dask import DaskChunkStream

    views, mask, _ = _views(n=1000)
    computing, peak = [0], [0]
    lock = threading.Lock()

    def slow(block):
        with lock:
            computing[0] += 1
            peak[0] = max(peak[0], computing[0])
        time.sleep(0.01)
        with lock:
            computing[0] -= 1
        return block

    dviews = [da.from_array(X, chunks=(100, X.shape[1])).map_blocks(slow) for X in views]
    stream = DaskChunkStream(dviews, mask, prefetch=2)
    seen = 0
    with dask.config.set(scheduler="threads"):
        for blocks, mblock in stream:
            seen += blocks[0].shape[0]
            np.testing.assert_array_equal(mblock, mask[seen - blocks[0].shape[0]:seen])
    assert seen == 1000 and len(stream) == 10
    # one block group (one block of each view) is computed at a time, ahead of the reader
    assert peak[0] <= len(views)


def _start_killer(client, go, delay=0.0):
    """A started thread that kills the first worker ``delay`` seconds after ``go`` is set."""
    victim = sorted(client.scheduler_info()["workers"])[0]

    def kill():
        go.wait(60)
        time.sleep(delay)
        try:
            client.run(os._exit, 1, workers=[victim])
        except Exception:  # the worker dies while answering: expected
            pass

    killer = threading.Thread(target=kill)
    killer.start()
    return killer


def _slow_block(block):
    time.sleep(0.15)
    return block


def test_a_worker_killed_mid_run_is_retried_or_reported(client):
    views, mask, _ = _views(n=2400)
    ref = fastmv.opimc(views, 4, mask=mask, chunk_size=100, random_state=0, shuffle=False)
    dviews = [da.from_array(X, chunks=(100, X.shape[1])).map_blocks(_slow_block)
              for X in views]
    go = threading.Event()
    killer = _start_killer(client, go, delay=1.0)
    go.set()
    try:
        res = fastmv.opimc(dviews, 4, mask=mask, chunk_size=100, random_state=0, shuffle=False)
    except Exception as exc:  # a clear error naming what failed
        assert "X_list" in str(exc) and "dask block" in str(exc), str(exc)
    else:  # dask retried the lost tasks elsewhere: the answer is the right one
        np.testing.assert_array_equal(res.labels, ref.labels)
    finally:
        killer.join()
    client.wait_for_workers(2, timeout=60)


def test_the_package_works_without_dask():
    code = (
        "import sys\n"
        "for name in ('dask', 'distributed', 'zarr'):\n"
        "    sys.modules[name] = None\n"
        "import warnings; warnings.simplefilter('ignore')\n"
        "import numpy as np, fastmv\n"
        "X = np.random.default_rng(0).random((200, 5))\n"
        "r = fastmv.opimc([X, X[:, :3]], 3, chunk_size=50, random_state=0)\n"
        "k = fastmv.kmeans(X, 3, random_state=0)\n"
        "assert r.labels.shape == (200,) and k.labels.shape == (200,)\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(2) as pool:\n"
        "    k2 = fastmv.kmeans(X, 3, random_state=0, executor=pool)\n"
        "    y = np.repeat([0, 1], 100)\n"
        "    V = [np.eye(2)[y] * 3 + X[:, :2], np.eye(2)[y] * 3 + X[:, 3:]]\n"
        "    ml, cl = [[0, 1], [100, 101]], [[0, 100]]\n"
        "    m1 = fastmv.mvmc(V, 2, ml, cl, k=2, max_iter=3, random_state=0)\n"
        "    m2 = fastmv.mvmc(V, 2, ml, cl, k=2, max_iter=3, random_state=0, executor=pool)\n"
        "assert (k2.labels == k.labels).all() and (m1.labels == m2.labels).all()\n"
        "assert 'dask' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr


# ------------------------------------------------------------- row-block tasks on executors
def _mvmc_data(n=600, c=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = [rng.normal(0, 1.5, (c, d))[y] + rng.normal(0, 1, (n, d)) for d in (12, 8)]
    ml, cl = fastmv.simulate.pairwise_constraints(y, 4 * n, random_state=seed)
    return views, ml, cl


_MVMC = dict(k=8, max_iter=5, tol=0.0, n_init=2, random_state=0)


@pytest.fixture()
def small_blocks(monkeypatch):
    """Several tasks per pass and per Lloyd step (the tile travels with the factors; the
    group size and the cache limit are read by the caller)."""
    monkeypatch.setattr(_lowrank, "TILE", 64)
    monkeypatch.setattr(_kmeans, "_TASK_ROWS", 300)


def _assert_same_mvmc(res, ref):
    np.testing.assert_array_equal(res.labels, ref.labels)
    np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-12)


@pytest.mark.usefixtures("small_blocks")
def test_mvmc_and_kmeans_on_a_cluster_executor_match_the_thread_path(client, monkeypatch):
    views, ml, cl = _mvmc_data()
    executor = client.get_executor()
    for max_nnz in (2 ** 24, 0):  # N cached after the first product / a pass per product
        monkeypatch.setattr(_lowrank, "_N_CACHE_MAX_NNZ", max_nnz)
        ref = fastmv.mvmc(views, 3, ml, cl, **_MVMC)
        _assert_same_mvmc(fastmv.mvmc(views, 3, ml, cl, executor=executor, **_MVMC), ref)
    X = np.hstack(views)
    for data in (X, sp.csr_matrix(np.where(X > 1.0, X, 0.0))):
        ref = fastmv.kmeans(data, 3, n_init=2, random_state=0)
        res = fastmv.kmeans(data, 3, n_init=2, random_state=0, executor=executor)
        np.testing.assert_array_equal(res.labels, ref.labels)
        np.testing.assert_array_equal(res.centers, ref.centers)
        assert res.inertia == pytest.approx(ref.inertia, rel=1e-12)


@pytest.mark.usefixtures("small_blocks")
def test_thread_and_process_pools_match_the_thread_path():
    views, ml, cl = _mvmc_data(n=300)
    ref = fastmv.mvmc(views, 3, ml, cl, **_MVMC)
    kref = fastmv.kmeans(views[0], 3, n_init=2, random_state=0)
    # spawn: the parent runs OpenMP threads, which a forked child would inherit broken
    processes = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    with ThreadPoolExecutor(2) as threads, processes:
        for pool in (threads, processes):
            _assert_same_mvmc(fastmv.mvmc(views, 3, ml, cl, executor=pool, **_MVMC), ref)
            res = fastmv.kmeans(views[0], 3, n_init=2, random_state=0, executor=pool)
            np.testing.assert_array_equal(res.labels, kref.labels)


def test_products_with_s_on_a_cluster_ship_only_their_rows(client):
    """A product with S while N is not cached: every row-block task returns its own rows of
    N X (8 n p bytes per product, not 8 n² p / tile), bit for bit the thread path's sum; the
    first product ships N's CSR tiles only while they fit the cache limit, and decides to
    cache exactly as the thread path does."""
    rng = np.random.default_rng(1)
    n, p = 1500, 5
    core = _lowrank.ClippedLowRank(np.abs(rng.normal(size=(n, 4))) * 0.45, np.ones(4),
                                    tile=128)
    X = rng.normal(size=(n, p))
    with task_map(2) as map_:
        ref = core.correction_pass(X, map_=map_)
    blocks = BlockMap(client.get_executor())
    out = core.correction_pass(X, map_=blocks)
    np.testing.assert_array_equal(out[0], ref[0])
    assert out[1:3] == ref[1:3] and 0 < ref[2] < n * n / 4  # some tiles sparse, some dense
    assert blocks.stats["result_bytes"] < 8 * n * p + 1000 * blocks.stats["tasks"]
    for max_nnz in (ref[2], ref[2] - 1, 0):
        with task_map(2) as map_:
            cached = core.correction_pass(X, collect=True, max_nnz=max_nnz, map_=map_)
        blocks = BlockMap(client.get_executor(), window=2)
        got = core.correction_pass(X, collect=True, max_nnz=max_nnz, map_=blocks)
        np.testing.assert_array_equal(got[0], cached[0])
        assert (got[3] is None) == (cached[3] is None) == (max_nnz < ref[2])
        if got[3] is not None:
            assert (core.assemble(got[3]) != core.assemble(cached[3])).nnz == 0
        if max_nnz == 0:  # nothing to keep: only rows come back
            assert blocks.stats["result_bytes"] < 8 * n * p + 1000 * blocks.stats["tasks"]


def test_mvmc_with_a_worker_killed_mid_run_is_retried_or_reported(client, monkeypatch):
    monkeypatch.setattr(_lowrank, "TILE", 48)  # many short tasks: the kill lands in a pass
    views, ml, cl = _mvmc_data(n=1500)
    kwargs = {**_MVMC, "max_iter": 25}
    ref = fastmv.mvmc(views, 3, ml, cl, **kwargs)
    started = threading.Event()

    def callback(info):
        started.set()

    killer = _start_killer(client, started)
    try:
        res = fastmv.mvmc(views, 3, ml, cl, executor=client.get_executor(), callback=callback,
                          **kwargs)
    except RuntimeError as exc:  # a clear error naming what failed
        assert "executor" in str(exc), str(exc)
    else:  # Dask re-ran the lost tasks on the other worker: the answer is the right one
        _assert_same_mvmc(res, ref)
    finally:
        started.set()
        killer.join()
    client.wait_for_workers(2, timeout=60)
