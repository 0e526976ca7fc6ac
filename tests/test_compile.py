"""kernels/_compile.py: serial copies of the parallel kernels, helpers compiled into their
callers."""
import numba
import numpy as np
import pytest

from fastmv.kernels import _compile as K


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
    copy = K.serial_copy(parallel, "another_name", "Summary.")
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
    inlined = numba.njit(K.inlining(caller.py_func, (helper_sum, twice), name="caller_inlined"))
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
        K.inlining(twice.py_func, (helper_sum,))
