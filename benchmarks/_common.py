"""Helpers shared by the asv suites."""
import time

import numpy as np

from ._shared_data import shared_dataset as _find


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


def cache_or_skip(build):
    """``build()`` for an asv ``setup_cache``, a missing dataset turned into a skip marker.

    asv runs ``setup_cache`` once per class and hands its (pickled) value to ``setup`` and to
    every benchmark of the class: data and the results of expensive solves that several
    ``track_*`` read are built there once instead of in every benchmark's process. A
    ``NotImplementedError`` raised in ``setup_cache`` would fail the benchmarks instead of
    skipping them, so it is returned as a marker that :func:`from_cache` raises again in
    ``setup``.
    """
    try:
        return build()
    except NotImplementedError as exc:
        return {"skip": str(exc)}


def from_cache(cache):
    """The ``setup_cache`` value, or ``NotImplementedError`` (asv: skipped) for a marker."""
    if "skip" in cache:
        raise NotImplementedError(cache["skip"])
    return cache
