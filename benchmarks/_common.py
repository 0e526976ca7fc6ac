"""Helpers shared by the asv suites."""
import time
from pathlib import Path

import numpy as np

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def best_of(fn, repeat=3):
    """Best wall time of ``repeat`` calls of ``fn`` (seconds)."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def shared_dataset(filename):
    """Path of a shared benchmark dataset; asv skips the benchmark when it is absent."""
    path = SHARED_DATASETS / filename
    if not path.is_file():
        raise NotImplementedError(f"{filename} not available under {SHARED_DATASETS}")
    return path
