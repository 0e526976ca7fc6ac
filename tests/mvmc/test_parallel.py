"""fastmv.mvmc on threads and executors: the same result for every thread count and executor
(docs/algorithms.md §1)."""
import numpy as np
import pytest

import fastmv
from fastmv._mvmc import _lowrank
from fastmv.simulate import pairwise_constraints
from tests.mvmc.test_mvmc import _planted

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def test_threaded_tasks_give_the_same_result_as_one_thread(monkeypatch):
    # small tiles: several row blocks of the pass over S run as concurrent tasks, and the two
    # views' M-steps too; contributions are reduced in a fixed order
    monkeypatch.setattr(_lowrank, "TILE", 16)
    views, y = _planted(n=90, c=3, seed=4)
    ml, cl = pairwise_constraints(y, 400, random_state=1)
    runs = [fastmv.mvmc(views, 3, ml, cl, k=7, max_iter=8, tol=0.0, random_state=0, n_jobs=j)
            for j in (1, 2, 2)]
    np.testing.assert_allclose(runs[0].objective, runs[1].objective, rtol=1e-12)
    np.testing.assert_array_equal(runs[1].objective, runs[2].objective)  # scheduling-free
    for a, b in zip(runs[0].M, runs[1].M):
        np.testing.assert_allclose(a, b, atol=1e-12)
    assert fastmv.metrics.accuracy(runs[0].labels, runs[1].labels) == 1.0


def test_task_map_runs_in_order_on_pool_threads_with_one_numba_thread():
    import threading

    import numba

    from fastmv._core._threads import task_map

    fastmv.kmeans(np.random.default_rng(0).normal(size=(50, 2)), 2, random_state=0)  # init layer
    main = threading.get_ident()
    with task_map(2) as map_:
        out = list(map_(lambda i: (i, threading.get_ident(), numba.get_num_threads()),
                        range(6)))
    assert [o[0] for o in out] == list(range(6))
    if map_ is not map:  # threadpoolctl present and a thread-safe Numba layer
        assert all(o[1] != main and o[2] == 1 for o in out)
    with task_map(1) as map1:
        assert map1 is map


def test_executor_gives_identical_results(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    # several row blocks per pass, a correction too large to cache (every spectral product is
    # a pass on the executor), and one that is cached
    monkeypatch.setattr(_lowrank, "TILE", 32)
    views, y = _planted(n=150, c=3)
    ml, cl = pairwise_constraints(y, 600, random_state=0)
    kwargs = dict(k=8, max_iter=6, tol=0.0, random_state=0, n_init=2, graph="full")
    for max_nnz in (2 ** 24, 0):
        monkeypatch.setattr(_lowrank, "_N_CACHE_MAX_NNZ", max_nnz)
        ref = fastmv.mvmc(views, 3, ml, cl, **kwargs)
        with ThreadPoolExecutor(2) as pool:
            res = fastmv.mvmc(views, 3, ml, cl, executor=pool, **kwargs)
        np.testing.assert_array_equal(res.labels, ref.labels)
        np.testing.assert_array_equal(res.objective, ref.objective)
        for a, b in zip(res.M, ref.M):
            np.testing.assert_array_equal(a, b)
