"""Dask input and executors against a real ``distributed.LocalCluster`` (two worker
processes), a Zarr store on disk, a worker killed mid-run, and a process without Dask."""
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import fastmv

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
    ref = fastmv.opimc(views, 4, mask=mask, chunk_size=100, random_state=0)
    dviews = _zarr_views(views, tmp_path, rows=170)
    assert client.scheduler_info()["workers"] and len(client.scheduler_info()["workers"]) == 2
    for m in (mask, da.from_array(mask, chunks=(300, 3))):
        res = fastmv.opimc(dviews, 4, mask=m, chunk_size=100, random_state=0)
        np.testing.assert_array_equal(res.labels, ref.labels)
        for a, b in zip(res.U, ref.U):
            np.testing.assert_array_equal(a, b)
    two = fastmv.opimc(dviews, 4, mask=mask, chunk_size=100, max_iter=2, tol=0.0, random_state=0)
    ref2 = fastmv.opimc(views, 4, mask=mask, chunk_size=100, max_iter=2, tol=0.0,
                        random_state=0)
    np.testing.assert_array_equal(two.labels, ref2.labels)


def test_prefetch_keeps_a_bounded_number_of_blocks_in_flight():
    from fastmv._dask import DaskChunkStream

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


def _slow_block(block):
    time.sleep(0.15)
    return block


def test_a_worker_killed_mid_run_is_retried_or_reported(client):
    views, mask, _ = _views(n=2400)
    ref = fastmv.opimc(views, 4, mask=mask, chunk_size=100, random_state=0)
    dviews = [da.from_array(X, chunks=(100, X.shape[1])).map_blocks(_slow_block)
              for X in views]
    victim = sorted(client.scheduler_info()["workers"])[0]

    def kill():
        time.sleep(1.0)
        try:
            client.run(os._exit, 1, workers=[victim])
        except Exception:  # the worker dies while answering: expected
            pass

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        res = fastmv.opimc(dviews, 4, mask=mask, chunk_size=100, random_state=0)
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
        "assert 'dask' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr
