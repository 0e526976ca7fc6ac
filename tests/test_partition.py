"""kernels/_partition.py against its twins: contiguous, complete, thread-count independent."""
import numba
import numpy as np
import pytest

from fastmv.kernels import _partition as K
from tests import naive_partition


@pytest.mark.parametrize("n_items", [0, 1, 2, 7, 64, 1000, 10**6])
@pytest.mark.parametrize("min_per_part", [0, 1, 3, 256, 10**7])
def test_partition_matches_twins(n_items, min_per_part):
    parts = K.n_parts(n_items, min_per_part)
    assert parts == naive_partition.n_parts(n_items, min_per_part)
    assert 1 <= parts <= K.MAX_PARTS
    bounds = K.part_bounds(n_items, parts)
    assert bounds.tolist() == naive_partition.part_bounds(n_items, parts).tolist()
    assert bounds[0] == 0 and bounds[-1] == n_items and (bounds[1:] >= bounds[:-1]).all()
    for p in range(parts):
        assert tuple(K.part_range(n_items, parts, p)) == naive_partition.part_range(n_items, parts, p)


@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_start_thread_pool_matches_twin_for_any_thread_count(n):
    before = numba.get_num_threads()
    try:
        for threads in {1, numba.config.NUMBA_NUM_THREADS}:
            numba.set_num_threads(threads)
            assert K.start_thread_pool(n) == naive_partition.start_thread_pool(n)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("shape", [(1, 0), (1, 1), (3, 5), (64, 7)])
def test_sum_parts_matches_twin(shape):
    partial = np.random.default_rng(0).standard_normal(shape)
    got = K.sum_parts(partial)
    assert got.tolist() == naive_partition.sum_parts(partial).tolist()  # same order: exact


def test_serial_copy_is_the_kernel_compiled_serially_under_its_own_name():
    from fastmv.kernels import clustering

    serial, parallel = clustering.lloyd_step_serial, clustering.lloyd_step
    fn = serial.py_func
    # its own name and qualified name: Numba's cache files are named after them
    assert fn.__name__ == fn.__qualname__ == "lloyd_step_serial"
    assert fn.__module__ == parallel.py_func.__module__
    assert fn.__code__ is parallel.py_func.__code__  # the same body, not a second copy
    assert parallel.targetoptions.get("parallel") and not serial.targetoptions.get("parallel")
    assert fn.__doc__.startswith("One Lloyd step on the calling thread")
    assert parallel.py_func.__doc__ in fn.__doc__
    copy = K._serial_copy(parallel, "another_name", "Summary.")
    assert copy.__qualname__ == "another_name" and parallel.py_func.__name__ == "lloyd_step"


@pytest.mark.parametrize("module,kernel", [("clustering", "lloyd_step"),
                                           ("clustering", "lloyd_step_csr"),
                                           ("mvmc", "masked_residual_product"),
                                           ("cmvnmf", "multiplicative_update"),
                                           ("emvc", "consensus_error_update")])
def test_every_serial_copy_keeps_its_kernels_body_and_options(module, kernel):
    import importlib

    mod = importlib.import_module(f"fastmv.kernels.{module}")
    parallel, serial = getattr(mod, kernel), getattr(mod, kernel + "_serial")
    assert serial.py_func.__code__ is parallel.py_func.__code__
    assert serial.py_func.__qualname__ == kernel + "_serial"
    # everything but ``parallel`` (fastmath above all: the same rounding, bit for bit)
    options = dict(parallel.targetoptions)
    assert options.pop("parallel")
    assert dict(serial.targetoptions) == options
