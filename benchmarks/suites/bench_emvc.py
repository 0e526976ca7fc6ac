"""asv suite for fastmv.emvc.

Settings: WebKB (rows of each view unit norm, median-σ transition matrices, n = 1051,
lam1 = lam2 = 0.01) and synthetic planted block transition matrices (``synthetic`` below,
n = 1000 and 4000, two views). Speed is reported as ratios measured inside one ``track_*``
call against ``benchmarks/references/emvc.py's emvc_reference`` (a straightforward NumPy EMVC: full
SVD every iteration, vectorised E step), both for 50 iterations with ``tol = 0``, so machine noise
affects both alike. ``SVTCrossover`` measures the rank at which the growing partial SVD stops
paying against one LAPACK ``gesdd``.
"""
import time

import numpy as np

import fastmv
from benchmarks._common import best_of, cache_or_skip, from_cache, shared_dataset
from benchmarks.references.emvc import emvc_reference
from fastmv._core._preprocessing import normalize_rows
from fastmv._emvc._svt import svt

LAM = 0.01
ITERS = 50


def _reference():
    return emvc_reference


def webkb_transition_matrices(dtype=np.float64):
    """WebKB as in the paper: rows unit norm, median-σ Gaussian transition matrices."""
    views, y = fastmv.datasets.load_mat(shared_dataset("WebKB.mat"))
    return [fastmv.transition_matrix(normalize_rows(X)).astype(dtype, copy=False)
            for X in views], y


def synthetic(n, n_views=2, n_clusters=5, seed=0, dtype=np.float64):
    """Planted block transition matrices with corruptions, built with O(n²) memory per view.

    Per view: within-cluster weights U(0.5, 1), between U(0, 0.1); 5 % of the samples (a
    different set per view) are hubs whose column gets ``20 · U(0.5, 1.5)`` from every row;
    1 % of the entries are replaced by U(0, 3); rows normalised. Returns ``(P_list, y)``.
    """
    rng = np.random.default_rng(seed)
    y = np.sort(np.arange(n) % n_clusters)
    P_list = []
    for _ in range(n_views):
        K = rng.random((n, n), dtype=np.float32)
        for k in range(n_clusters):  # in place: rows of cluster k
            rows = slice(*np.flatnonzero(y == k)[[0, -1]] + [0, 1])
            same = (y == k)
            blk = K[rows]
            blk[:, same] = 0.5 + 0.5 * blk[:, same]
            blk[:, ~same] *= 0.1
        hubs = rng.choice(n, max(1, n // 20), replace=False)
        K[:, hubs] += (20.0 * rng.uniform(0.5, 1.5, (n, hubs.size))).astype(np.float32)
        n_rand = int(0.01 * n * n)
        flat = K.reshape(-1)
        flat[rng.choice(n * n, n_rand, replace=False)] = rng.uniform(0, 3, n_rand)
        K = K.astype(dtype, copy=False)
        K /= K.sum(axis=1, keepdims=True, dtype=np.float64).astype(dtype)
        P_list.append(K)
    return P_list, y


def _warm(dtype):
    """Load (or compile) the kernels a solve of ``dtype`` uses, on tiny planted data with
    enough iterations to reach every SVT route, so that the timed solves exclude them."""
    P, _ = synthetic(60, dtype=dtype)
    fastmv.emvc(P, LAM, LAM, max_iter=40, tol=0.0, dtype=dtype, n_clusters=2, random_state=0)


def _solve(P, iters=ITERS, callback=None, n_clusters=None):
    return fastmv.emvc(P, LAM, LAM, max_iter=iters, tol=0.0, dtype=P[0].dtype,
                       random_state=0, callback=callback, n_clusters=n_clusters)


class _EMVCSetting:
    """Data and every ``track_*`` value come from ``setup_cache`` (one process, one solve
    per quantity); ``setup`` only loads the kernels, so that ``time_*`` and ``peakmem_`` run
    one solve each in their own process."""

    timeout = 1800
    number = 1
    repeat = 1
    warmup_time = 0
    iters = ITERS

    def build(self):  # -> {"P": [...], "y": ..., track values}
        raise NotImplementedError

    def setup(self, cache):
        self.P = from_cache(cache)["P"]
        _warm(self.P[0].dtype)

    def solve(self, iters=None, callback=None, n_clusters=None):
        return _solve(self.P, iters or self.iters, callback, n_clusters)


class EMVCWebKB(_EMVCSetting):
    """Full 50-iteration solve on WebKB (float64; float32 is timed at n = 4000), its peak
    memory, and from one more solve (two clusters) in ``setup_cache`` its NMI and speed-up
    over NumPy in the same run."""

    def setup_cache(self):
        return cache_or_skip(self.build)

    def build(self):
        P, y = webkb_transition_matrices()
        _warm(np.float64)
        t0 = time.perf_counter()
        # 50 iterations as timed, not to convergence: keeps the quick suite short
        res = _solve(P, n_clusters=2)
        t_fast = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = _reference()(P, LAM, LAM, max_iter=ITERS, tol=0.0)
        t_ref = time.perf_counter() - t0
        return {"P": P, "speedup": t_ref / t_fast, "nmi": fastmv.metrics.nmi(y, res.labels),
                "max_diff": float(np.abs(res.P_hat - ref["P_hat"]).max())}

    def time_solve_50(self, cache):
        self.solve()

    def peakmem_solve_50(self, cache):
        self.solve()

    def track_speedup_vs_numpy(self, cache):
        return cache["speedup"]

    track_speedup_vs_numpy.unit = "x"

    def track_nmi(self, cache):
        return cache["nmi"]

    track_nmi.unit = "NMI"


class EMVCSynthetic1000(_EMVCSetting):
    """n = 1000, two views, 5 planted clusters: a 32-iteration solve (float64; float32 is
    timed at n = 4000), its peak memory; from one more solve in ``setup_cache``, its NMI and
    the seconds per iteration in the no-SVD and the full-SVD regimes. The 32 iterations
    cover all SVT regimes (20 skipped by the bound, then partial, then full Gram
    decompositions); the remaining full-decomposition iterations of a 50-iteration solve
    cost ~4 s each here, so they are left to ``EMVCWebKB`` (n = 2000 took minutes per solve
    on the loaded machine)."""

    n = 1000
    iters = 32

    def setup_cache(self):
        return cache_or_skip(self.build)

    def build(self):
        P, y = synthetic(self.n)
        _warm(np.float64)
        stamps, methods = [time.perf_counter()], []

        def cb(info):
            stamps.append(time.perf_counter())
            methods.append(info.state["svt_method"])

        res = _solve(P, self.iters, callback=cb, n_clusters=5)
        dt = np.diff(stamps)
        per = {m: float(np.median(dt[[k for k, x in enumerate(methods) if x == m]]))
               for m in set(methods)}
        skip = min(v for k, v in per.items() if k.startswith("skip"))
        return {"P": P, "nmi": fastmv.metrics.nmi(y, res.labels),
                "skip_over_svd": skip / per.get("gram", per.get("full", np.nan))}

    def time_solve_32(self, cache):
        self.solve()

    def peakmem_solve_32(self, cache):
        self.solve()

    def track_nmi(self, cache):
        return cache["nmi"]

    track_nmi.unit = "NMI"

    def track_skip_iteration_over_svd_iteration(self, cache):
        """Cost of an iteration without SVD as a fraction of one with a full decomposition."""
        return cache["skip_over_svd"]

    track_skip_iteration_over_svd_iteration.unit = "fraction"


class EMVCSynthetic4000(_EMVCSetting):
    """n = 4000, two views, float32: 25 iterations (the no-SVD and partial-SVD regimes) for
    time and peak memory, and the NMI of one more solve in ``setup_cache``."""

    n = 4000
    iters = 25

    def setup_cache(self):
        return cache_or_skip(self.build)

    def build(self):
        P, y = synthetic(self.n, dtype=np.float32)
        _warm(np.float32)
        res = _solve(P, self.iters, n_clusters=5)
        return {"P": P, "nmi": fastmv.metrics.nmi(y, res.labels)}

    def time_solve_25_float32(self, cache):
        self.solve()

    def peakmem_solve_25_float32(self, cache):
        self.solve()

    def track_nmi(self, cache):
        return cache["nmi"]

    track_nmi.unit = "NMI"


class SVTFullRoutes:
    """One full decomposition of an EMVC-like ``B`` (n = 1000, singular values from 1 down to
    1e-9, τ = 1e-5): the Gram eigendecomposition route over ``gesdd`` (time ratio, one run)
    and their largest difference in ``Q``."""

    timeout = 600

    def setup(self):
        rng = np.random.default_rng(0)
        n = 1000
        U, _ = np.linalg.qr(rng.standard_normal((n, n)))
        V, _ = np.linalg.qr(rng.standard_normal((n, n)))
        self.B = (U * np.logspace(0, -9, n)) @ V.T
        self.tau = 1e-5

    def track_gram_over_gesdd(self):
        t_gesdd = best_of(lambda: svt(self.B, self.tau, method="full", full_svd="gesdd"), 2)
        t_gram = best_of(lambda: svt(self.B, self.tau, method="full"), 2)
        return t_gram / t_gesdd

    track_gram_over_gesdd.unit = "fraction"

    def track_gram_max_abs_error(self):
        Q1, _ = svt(self.B, self.tau, method="full", full_svd="gesdd")
        Q2, _ = svt(self.B, self.tau, method="full")
        return float(np.abs(Q1 - Q2).max())

    track_gram_max_abs_error.unit = "abs"


class SVTCrossover:
    """Partial-SVD SVT time over one full ``gesdd`` for a matrix with ``r`` singular values
    above the threshold (a decaying tail below it), n = 1000: the crossover rank."""

    params = [[1, 8, 32, 64, 128]]
    param_names = ["rank"]
    timeout = 600

    def setup(self, r):
        rng = np.random.default_rng(0)
        n = 1000
        U, _ = np.linalg.qr(rng.standard_normal((n, n)))
        V, _ = np.linalg.qr(rng.standard_normal((n, n)))
        s = np.concatenate([np.linspace(2.0, 1.0, r), 0.5 * 0.995 ** np.arange(n - r)])
        self.B = (U * s) @ V.T
        self.tau = 0.75

    def track_partial_over_full(self, r):
        t_full = best_of(lambda: svt(self.B, self.tau, method="full"), repeat=2)
        t_part = best_of(lambda: svt(self.B, self.tau, method="partial", random_state=0),
                         repeat=2)
        return t_part / t_full

    track_partial_over_full.unit = "fraction"
