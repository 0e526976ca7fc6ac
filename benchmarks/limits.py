"""This machine's limits: memory bandwidth and GEMM rate, the yardsticks of a roofline.

``python -m benchmarks.limits`` prints

- the streaming memory bandwidth (a STREAM-like triad ``a = b + s·c`` on arrays far larger
  than the last-level cache, in a Numba kernel on one thread and on all threads, and NumPy's
  ``copyto`` for comparison), in GB/s counting the bytes a kernel must move
  (read ``b`` and ``c``, write ``a``: 24 bytes per float64 element);
- the float64 and float32 GEMM rate of the installed BLAS (square ``n = 2048`` products,
  one thread and all threads), in GFLOP/s (``2 n³`` flops per product).

Each figure is the best of several runs. ``docs/records/perf.md`` compares every kernel's
bytes moved or flops done per second against these numbers.
"""
from __future__ import annotations

import json
import os
import platform

import numba
import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from benchmarks._common import best_of


@njit(parallel=True, cache=True)
def _triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def memory_bandwidth(n_bytes=512 * 2**20, repeat=7, threads=None):
    """Triad bandwidth in GB/s (bytes moved: 3 arrays × 8 bytes × n)."""
    n = n_bytes // 8
    a, b, c = np.empty(n), np.ones(n), np.ones(n)
    previous = numba.get_num_threads()
    numba.set_num_threads(threads or previous)
    try:
        _triad(a, b, c, 2.0)
        seconds = best_of(lambda: _triad(a, b, c, 2.0), repeat)
    finally:
        numba.set_num_threads(previous)
    return 3 * 8 * n / seconds / 1e9


def copy_bandwidth(n_bytes=512 * 2**20, repeat=7):
    """``np.copyto`` bandwidth in GB/s (read + write)."""
    n = n_bytes // 8
    a, b = np.empty(n), np.ones(n)
    seconds = best_of(lambda: np.copyto(a, b), repeat)
    return 2 * 8 * n / seconds / 1e9


def gemm_rate(n=2048, dtype=np.float64, repeat=5, threads=None):
    """GEMM GFLOP/s of the installed BLAS (``2 n³`` flops per product)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    with threadpool_limits(limits=threads, user_api="blas"):
        A @ B
        seconds = best_of(lambda: A @ B, repeat)
    return 2 * n**3 / seconds / 1e9


def measure():
    """All figures as a dict."""
    all_threads = numba.config.NUMBA_NUM_THREADS
    return {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "triad_GBps_1_thread": memory_bandwidth(threads=1),
        f"triad_GBps_{all_threads}_threads": memory_bandwidth(threads=all_threads),
        "copy_GBps_numpy": copy_bandwidth(),
        "gemm_f64_GFLOPs_1_thread": gemm_rate(threads=1),
        f"gemm_f64_GFLOPs_{all_threads}_threads": gemm_rate(threads=all_threads),
        "gemm_f32_GFLOPs_1_thread": gemm_rate(dtype=np.float32, threads=1),
    }


if __name__ == "__main__":
    print(json.dumps({k: (round(v, 1) if isinstance(v, float) else v)
                      for k, v in measure().items()}, indent=2))
