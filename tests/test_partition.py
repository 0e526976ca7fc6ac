"""kernels/_partition.py against its twins: contiguous, complete, thread-count independent."""
import numba
import numpy as np
import pytest

from fastmv.kernels import _partition as K
from tests import naive, naive_partition


@pytest.mark.parametrize("n_items", [0, 1, 2, 7, 64, 1000, 10**6])
@pytest.mark.parametrize("min_per_part", [0, 1, 3, 256, 10**7])
def test_partition_matches_twins(n_items, min_per_part):
    parts = K.n_parts(n_items, min_per_part)
    assert parts == naive.n_parts(n_items, min_per_part)
    assert 1 <= parts <= K.MAX_PARTS
    bounds = K.part_bounds(n_items, parts)
    assert bounds.tolist() == naive.part_bounds(n_items, parts).tolist()
    assert bounds[0] == 0 and bounds[-1] == n_items and (bounds[1:] >= bounds[:-1]).all()
    for p in range(parts):
        assert tuple(K.part_range(n_items, parts, p)) == naive.part_range(n_items, parts, p)


@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_start_thread_pool_matches_twin_for_any_thread_count(n):
    before = numba.get_num_threads()
    try:
        for threads in {1, numba.config.NUMBA_NUM_THREADS}:
            numba.set_num_threads(threads)
            assert K.start_thread_pool(n) == naive.start_thread_pool(n)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("shape", [(1, 0), (1, 1), (3, 5), (64, 7)])
def test_sum_parts_matches_twin(shape):
    partial = np.random.default_rng(0).standard_normal(shape)
    got = K.sum_parts(partial)
    assert got.tolist() == naive_partition.sum_parts(partial).tolist()  # same order: exact
