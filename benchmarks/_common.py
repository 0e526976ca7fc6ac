"""Helpers shared by the asv suites."""
import time

import numpy as np

from fastmv._shared_data import shared_dataset as _find


def best_of(fn, repeat=3, clock=time.perf_counter):
    """Best time of ``repeat`` calls of ``fn`` (seconds) on ``clock``: wall time by default,
    ``time.process_time`` for CPU time."""
    best = np.inf
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def shared_dataset(filename):
    """Path of a shared benchmark dataset (``$FASTMV_SHARED_DATASETS`` or ``../shared/datasets``
    beside the checkout); asv skips the benchmark when it is absent."""
    path = _find(filename)
    if path is None:
        raise NotImplementedError(f"{filename} not available (set FASTMV_SHARED_DATASETS)")
    return path
