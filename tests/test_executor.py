"""What tasks on an executor receive: aligned arrays, as the thread path's (docs/dask.md)."""
import pickle
from typing import NamedTuple

import numpy as np

from fastmv._core._executor import _aligned, _Broadcast, _run_task


class _Pair(NamedTuple):
    first: np.ndarray
    second: object


def _misaligned(values):
    """A float64 array starting one byte into its buffer (as a slice of a message frame can)."""
    values = np.asarray(values, dtype=np.float64)
    buf = bytearray(values.nbytes + 1)
    out = np.frombuffer(buf, dtype=np.float64, offset=1, count=values.size)
    out[...] = values.ravel()
    assert not out.flags.aligned
    return out.reshape(values.shape)


def test_aligned_copies_only_misaligned_arrays_at_any_depth():
    good = np.arange(6.0).reshape(2, 3)
    bad = _misaligned(np.arange(4.0) / 3)
    nested = (good, [bad, {"k": _Pair(bad, 3)}], "x")
    out = _aligned(nested)
    assert out[0] is good and out[2] == "x"
    for arr in (out[1][0], out[1][1]["k"].first):
        assert arr.flags.aligned and arr.dtype == np.float64
        np.testing.assert_array_equal(arr, bad)
    assert isinstance(out[1][1]["k"], _Pair) and out[1][1]["k"].second == 3
    assert bad.base is not None and not bad.flags.aligned   # the input is left as it was
    untouched = (good, [good, {"k": _Pair(good, None)}])
    assert _aligned(untouched) is untouched                 # nothing to change: same object


def test_broadcast_data_is_aligned_where_it_is_unpickled_even_from_misaligned_frames():
    value = _Pair(np.linspace(0, 1, 7), [np.arange(5, dtype=np.int64)])
    # what Dask does with a bare array: buffers out of band, each a slice of a frame that can
    # start at any byte
    buffers = []
    head = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    assert buffers
    frames = []
    for b in buffers:
        raw = b.raw()
        frame = bytearray(raw.nbytes + 1)
        frame[1:] = raw
        frames.append(memoryview(frame)[1:])
    bare = pickle.loads(head, buffers=frames)
    assert not bare.first.flags.aligned                     # the failure this guards against
    # the wrapper pickles in band: nothing out of band, arrays allocated anew
    buffers = []
    head = pickle.dumps(_Broadcast(value), protocol=5, buffer_callback=buffers.append)
    assert not buffers
    got = pickle.loads(head)
    assert isinstance(got, _Broadcast)
    assert got.value.first.flags.aligned and got.value.second[0].flags.aligned
    np.testing.assert_array_equal(got.value.first, value.first)
    np.testing.assert_array_equal(got.value.second[0], value.second[0])


def test_a_task_receives_unwrapped_aligned_arguments():
    bad = _misaligned([1.0, 2.0, 3.0])
    seen = []

    def task(item, data, extra):
        seen.extend([item[0], data, extra[0]])
        return float(data.sum() + extra[0].sum())

    out = _run_task(task, (_Broadcast(bad), 1), _Broadcast(np.ones(2)), [bad])
    assert out == 8.0
    assert all(isinstance(a, np.ndarray) and a.flags.aligned for a in seen)
