"""kernels/_partition.py against its twins: contiguous, complete, thread-count independent;
and the rules every kernel module follows (the shared option sets, one allocation spelling)."""
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
        assert (tuple(K.part_range(n_items, parts, p))
                == naive_partition.part_range(n_items, parts, p))


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


def _dispatchers():
    import importlib
    import pkgutil

    import fastmv.kernels

    for info in pkgutil.iter_modules(fastmv.kernels.__path__):
        module = importlib.import_module(f"fastmv.kernels.{info.name}")
        for name, obj in vars(module).items():
            if (isinstance(obj, numba.core.registry.CPUDispatcher)
                    and obj.__module__ == module.__name__):
                yield f"{info.name}.{name}", obj


def test_every_kernel_compiles_with_one_of_the_shared_option_sets():
    from fastmv.kernels._options import INNER, PARALLEL, SERIAL

    # ``cache`` is the dispatcher's, not a target option; ``fastmath`` is allowed where a
    # kernel says it may reassociate, ``inline`` where a helper is compiled into its callers
    shared = [{k: v for k, v in opts.items() if k != "cache"} for opts in (SERIAL, PARALLEL, INNER)]
    seen = 0
    for name, disp in _dispatchers():
        options = {k: v for k, v in disp.targetoptions.items()
                   if k not in ("nopython", "boundscheck", "fastmath", "inline")}
        assert options in shared, (name, options)
        assert type(disp._cache).__name__ == "FunctionCache", name     # cache=True
        seen += 1
    assert seen >= 60


def test_every_kernel_spells_an_allocation_one_way():
    """``np.empty(n, np.float64)``, never ``dtype=`` as a keyword: Numba compiles the
    allocation once per spelling (its overload cache is keyed by the keywords), so one
    keyword call in one kernel costs a cold first call one more compilation."""
    import inspect
    import re

    keyword = re.compile(r"np\.(empty|zeros|ones|full)\((?:[^()]|\([^()]*\))*dtype=")
    seen = set()
    for name, disp in _dispatchers():
        code = inspect.getsource(disp.py_func)
        code = code[code.index('"""', code.index('"""') + 3) + 3:] if '"""' in code else code
        assert not keyword.search(code), name
        seen.add(name)
    assert len(seen) >= 60
