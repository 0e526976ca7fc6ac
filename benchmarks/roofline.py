"""Kernels against this machine's limits: each kernel's bytes/s or flops/s as a fraction of
the triad bandwidth or the GEMM rate measured in the same run.

``python -m benchmarks.roofline [--threads T] [--markdown]`` measures, on one thread by
default (the machine is shared), the STREAM-like triad of :mod:`benchmarks.limits` and the
float64 GEMM rate, then each main Numba kernel of ``kernels/`` at a realistic size (best of
several calls in process CPU time, inputs built and the kernel compiled beforehand). For every
kernel it counts
the bytes the kernel must move to and from memory (its compulsory traffic: every input read
once, every output written once; data that fits in the caches is not counted) and the flops it
must do, from the formulas in its docstring's ``Notes`` ("Cost"), and prints the achieved
GB/s and GFLOP/s and the fraction of the limit that bounds it (``bw`` or ``gemm``).
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import NamedTuple

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks._common import best_of
from benchmarks.limits import _triad

F8 = 8  # bytes per float64 / int64


def best_cpu(fn, repeat):
    """Best process CPU seconds of ``repeat`` calls: on one thread this leaves out the time
    the process waits for a core on a shared machine (not the memory traffic of others)."""
    return best_of(fn, repeat, clock=time.process_time)


def limits(repeat):
    """Triad bandwidth (GB/s) and float64 GEMM rate (GFLOP/s) in CPU time, this run."""
    n = 64 * 2**20                    # 512 MiB per array
    a, b, c = np.empty(n), np.ones(n), np.ones(n)
    _triad(a, b, c, 2.0)
    bw = 3 * 8 * n / best_cpu(lambda: _triad(a, b, c, 2.0), repeat) / 1e9
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((2048, 2048)), rng.standard_normal((2048, 2048))
    A @ B
    gemm = 2 * 2048**3 / best_cpu(lambda: A @ B, repeat) / 1e9
    return bw, gemm


class Case(NamedTuple):
    name: str
    size: str
    call: object   # zero-argument callable
    bytes: float   # compulsory memory traffic
    flops: float
    bound: str     # "bw" or "gemm"


def _affinity(n=4000):
    from fastmv.kernels import affinity as K
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 64))
    # In-place kernels are timed on their own output again: same cost, finite values.
    G = X @ X.T
    sq = np.ascontiguousarray(np.diag(G))
    D2 = np.abs(G) + 1.0
    D = D2.copy()
    nn = n * n
    return [
        Case("gram_to_sq_distances", f"n = {n}", lambda: K.gram_to_sq_distances(G, sq),
             1.5 * nn * F8, 1.5 * nn * 3, "bw"),
        Case("gaussian_transition_rows", f"{n} × {n}",
             lambda: K.gaussian_transition_rows(D, 0.01), 2 * nn * F8, 5 * nn, "bw"),
        Case("strict_upper_triangle", f"n = {n}", lambda: K.strict_upper_triangle(D2),
             nn * F8, 0, "bw"),
    ]


def _robust(n=2000, m=2):
    from fastmv._emvc._solver import error_norms
    from fastmv.kernels import emvc as K
    from fastmv.kernels.simplex import rowwise_simplex_projection
    rng = np.random.default_rng(0)
    P = rng.random((m, n, n))
    P /= P.sum(2, keepdims=True)
    E = 0.01 * rng.standard_normal((m, n, n))
    Y = 0.01 * rng.standard_normal((m, n, n))
    Q = P.mean(0)
    Zb, P_hat = Q.copy(), Q.copy()
    Ev, Yv = E.copy(), Y.copy()  # the fused step overwrites E and Y
    rn, cn = np.empty((m, n)), np.empty((m, n))
    for v in range(m):
        rn[v], cn[v] = error_norms(E[v])
    weights = K.ErrorWeights(rn, cn, 0.01, 0.01, 1e-10)
    out = np.empty((n, n))
    nn = n * n
    return [
        Case("consensus_error_update", f"m = {m}, {n} × {n}",
             lambda: K.consensus_error_update(P, Ev, Yv, Q, Zb, P_hat, 1.0, 1.0, True, weights),
             (5 * m + 4) * nn * F8, (15 * m + 8) * nn, "bw"),
        Case("rowwise_simplex_projection", f"{n} × {n}",
             lambda: rowwise_simplex_projection(P[0], out), 2 * nn * F8, 6 * nn, "bw"),
    ]


def _clustering(n=200_000, d=50, c=20):
    from fastmv.kernels import clustering as K
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    C = rng.standard_normal((c, d))
    xs = (X ** 2).sum(1)
    inner = X @ C.T
    cs = (C ** 2).sum(1)
    closest = np.full(n, np.inf)
    return [
        Case("lloyd_step", f"{n} × {d}, c = {c}", lambda: K.lloyd_step(X, C, xs, 64),
             (n * d + 2 * n) * F8, 2 * n * d * c + n * d, "gemm"),
        Case("seeding_distances", f"{n} × {d}, t = 5",
             lambda: K.seeding_distances(X, C[:5], xs, closest, 64),
             (n * d + 5 * n) * F8, 2 * n * d * 5, "gemm"),
        Case("nearest_center", f"{n} × {c}", lambda: K.nearest_center(inner, xs, cs),
             (n * c + 3 * n) * F8, 3 * n * c, "bw"),
    ]


def _masked(p=2000, q=2000, n=5000, k=100, r=50, pairs=100_000):
    from fastmv._mvmc._problem import pair_csr
    from fastmv.kernels import mvmc as K
    from fastmv.kernels.cmvnmf import csr_matmul
    rng = np.random.default_rng(0)
    A0 = rng.uniform(-0.05, 1.05, (p, q))
    A = A0.copy()

    N = np.where(rng.random((p, q)) < 0.05, A0, 0.0)
    indptr = np.zeros(p + 1, np.int64)
    np.cumsum((N != 0).sum(1), out=indptr[1:])
    i, j = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    keep = i != j
    _, ip, ind, val, mir = pair_csr(i[keep], j[keep], rng.random(keep.sum()))
    nr = ip.size - 1
    B = rng.standard_normal((nr, r))
    Z = rng.standard_normal((nr, k))
    nnz = ind.size
    from scipy import sparse as sp
    S = sp.random(20000, 5000, density=0.005, format="csr", random_state=0)
    V = rng.random((5000, 20))
    return [
        Case("clip_correction", f"{p} × {q}", lambda: K.clip_correction(A), 2 * p * q * F8,
             3 * p * q, "bw"),
        Case("dense_to_csr", f"{p} × {q}, 5% nonzero", lambda: K.dense_to_csr(N, indptr),
             (p * q + 0.05 * p * q * 1.5) * F8, 0, "bw"),
        Case("masked_residual_product", f"n = {nr}, |Ω| = {nnz}, r = {r}, k = {k}",
             lambda: K.masked_residual_product(B, B, Z, ip, ind, val, mir),
             # compulsory: the pattern (index, value, mirror) and A, B, Z, RZ once each
             3 * nnz * F8 + nr * (2 * r + 2 * k) * F8,
             nnz * (r + 2 * k), "bw"),
        Case("csr_matmul", f"20000 × 5000 CSR, nnz = {S.nnz}, c = 20",
             lambda: csr_matmul(S.indptr, S.indices, S.data, V),
             S.nnz * 12 + (5000 + 20000) * 20 * F8, 2 * S.nnz * 20, "bw"),
    ]


def _streaming():
    from benchmarks.suites.bench_opimc import OPIMCKernels
    from fastmv.kernels import opimc as K
    from fastmv.kernels.opimc_layout import stream_gather_view
    b = OPIMCKernels()
    b.setup()
    ch, vp = b.ch, b.b.view_ptr
    vals = ch.dense.values.size
    s = b.lab.size
    X = np.ascontiguousarray(b.raw[1][0])   # the chunk's first view, as read
    cases = [
        Case("stream_scatter_dense", "2000 rows × 5 views × 200, 40% missing, c = 20",
             b.time_scatter_dense, (vals + 20 * b.b.D) * F8 + s * F8, vals, "bw"),
        Case("stream_cross", "same chunk", lambda: K.stream_cross(ch.dense, vp, b.U),
             (vals + b.b.D * 20) * F8, 2 * vals * 20, "gemm"),
    ]
    if X.ndim == 2:
        rows = np.arange(0, X.shape[0], 2, dtype=np.int64)
        out = np.empty(rows.size * X.shape[1], X.dtype)
        st = np.empty(rows.size, np.int8)
        cases.append(Case("stream_gather_view", f"{rows.size} of {X.shape[0]} rows × "
                          f"{X.shape[1]}", lambda: stream_gather_view(X, rows, True, out, st),
                          2 * out.size * X.itemsize, 3 * out.size, "bw"))
    return cases


def measure(threads=1, repeat=5):
    """Rows ``(kernel, size, seconds, GB/s, GFLOP/s, bound, fraction)`` and the limits."""
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        cases = _affinity() + _robust() + _clustering() + _masked() + _streaming()
        for case in cases:
            case.call()  # compile / load; also loads the BLAS that Numba's np.dot calls
        # limit the BLAS pools only now: threadpoolctl sees only libraries already loaded
        with threadpool_limits(threads):
            bw, gemm = limits(repeat)
            rows = []
            for case in cases:
                t = best_cpu(case.call, repeat)
                gbs, gfl = case.bytes / t / 1e9, case.flops / t / 1e9
                frac = gbs / bw if case.bound == "bw" else gfl / gemm
                rows.append((case.name, case.size, t, gbs, gfl, case.bound, frac))
    finally:
        numba.set_num_threads(previous)
    return rows, bw, gemm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    rows, bw, gemm = measure(args.threads, args.repeat)
    print(f"same run, {args.threads} thread(s): triad {bw:.1f} GB/s, GEMM f64 {gemm:.1f} GFLOP/s")
    head = ("kernel", "size", "ms", "GB/s", "GFLOP/s", "bound", "fraction of limit")
    table = [head] + [(k, s, f"{t * 1e3:.2f}", f"{g:.1f}", f"{f:.2f}", b, f"{x:.0%}")
                      for k, s, t, g, f, b, x in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        print("\n".join("| " + " | ".join(r) + " |" for r in table[1:]))
    else:
        w = [max(len(r[i]) for r in table) for i in range(len(head))]
        print("\n".join("  ".join(c.ljust(x) for c, x in zip(r, w)) for r in table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
