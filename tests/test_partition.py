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


def _dispatchers():
    import importlib
    import pkgutil

    import fastmv.kernels

    for info in pkgutil.iter_modules(fastmv.kernels.__path__):
        module = importlib.import_module(f"fastmv.kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__:
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


def _helper_twice(x):
    return 2.0 * x


def _helper_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += _helper_twice(a[i])
    return s


def _caller(a):
    return _helper_sum(a) + 1.0


def test_inlining_compiles_the_helpers_into_the_caller_only():
    # fresh dispatchers in a namespace of their own, so no other test compiled them
    namespace = {"__name__": "tests.inlining_toy"}
    for fn in (_helper_twice, _helper_sum, _caller):
        copy = type(fn)(fn.__code__, namespace, fn.__name__)
        namespace[fn.__name__] = numba.njit(copy)
    twice, helper_sum, caller = (namespace[n] for n in ("_helper_twice", "_helper_sum", "_caller"))
    inlined = numba.njit(K._inlining(caller.py_func, (helper_sum, twice), name="caller_inlined"))
    a = np.random.default_rng(0).standard_normal(7)
    expected = 0.0
    for x in a:
        expected += 2.0 * x
    assert inlined(a) == expected + 1.0
    assert inlined.py_func.__qualname__ == "caller_inlined"
    assert not helper_sum.signatures and not twice.signatures    # never compiled apart
    assert namespace["_helper_sum"] is helper_sum                 # the module unchanged
    assert caller(a) == inlined(a)                                # the same bits
    assert helper_sum.signatures                                  # the caller compiled it
    with pytest.raises(ValueError, match="nor the other helpers call _helper_sum"):
        K._inlining(twice.py_func, (helper_sum,))
