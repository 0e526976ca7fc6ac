"""asv suite for fastmv.mvmc.

Speed is reported as ratios measured inside one ``track_*`` call against the dense NumPy
implementation ``benchmarks/references/mvmc.py::mvmc_dense`` (the same iteration with ``S``,
``S_ob`` and the mask as ``n × n`` arrays and the ``n × n`` masked residual formed at every
gradient step), run on the same bases ``Z_v`` for the same number of outer iterations, so
machine noise hits both alike:

- ``track_speedup_vs_numpy``: whole call (bases + iterations + spectral step) against
  ℓ2-normalised rows + a dense LAPACK SVD per view + ``mvmc_dense`` + spectral clustering of
  the dense ``S``;
- ``track_iteration_speedup_vs_numpy``: median time of one outer iteration (one pass over
  ``S`` plus ``inner_iter`` gradient steps per view), timed through the callbacks.

The synthetic setting: k = 100, |Ω| = 20 n random pairs, 2 views × 200 dims, 10 clusters.
At n = 20000 the dense reference would need ~3 GB per ``n × n`` array and is not run; the
scale run (n = 50000, k = 50, peak memory) is recorded in ``docs/records/mvmc.md``.
"""
import time

import numpy as np
import scipy.sparse as sp

import fastmv
from benchmarks._common import cache_or_skip, from_cache, shared_dataset
from benchmarks.references.mvmc import mvmc_dense, synthetic_views
from fastmv import metrics, simulate


def _numpy_bases(views, ks):
    """The reference's bases: ℓ2 rows, then the top left singular vectors by dense SVD."""
    out = []
    for X, kv in zip(views, ks):
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        norms = np.linalg.norm(X, axis=1)
        X = X / np.where(norms > 0, norms, 1.0)[:, None]
        out.append(np.linalg.svd(X, full_matrices=False)[0][:, :kv])
    return out


def _speedups(views, y, ml, cl, c, n_iter, **kw):
    """(whole-call ratio, median per-iteration ratio) of mvmc_dense over fastmv.mvmc."""
    ts = [time.perf_counter()]
    t0 = time.perf_counter()
    res = fastmv.mvmc(views, c, ml, cl, max_iter=n_iter, tol=0.0, random_state=0,
                      callback=lambda info: ts.append(time.perf_counter()), **kw)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    _numpy_bases(views, [Z.shape[1] for Z in res.Z])
    t_svd = time.perf_counter() - t0
    ts2 = [time.perf_counter()]
    t0 = time.perf_counter()
    _, _, S = mvmc_dense(res.Z, ml, cl, max_iter=n_iter, tol=0.0,
                         callback=lambda it, state: ts2.append(time.perf_counter()),
                         **{k: v for k, v in kw.items() if k in ("C1", "C2", "inner_iter")})
    fastmv.spectral_clustering(S, c, random_state=0)
    t_ref = t_svd + time.perf_counter() - t0
    del S
    per_fast = np.median(np.diff(ts)[1:])
    per_ref = np.median(np.diff(ts2)[1:])
    return t_ref / t_fast, per_ref / per_fast


def _warm():
    """Load (or compile) MVMC's kernels on tiny data, outside the timings."""
    v, y = synthetic_views(300)
    ml, cl = simulate.pairwise_constraints(y, 2000, random_state=0)
    fastmv.mvmc(v, 10, ml, cl, max_iter=2, random_state=0)


class MVMCBBCSport:
    """BBCSport (n = 544, two text views), 5000 random pairs from the labels, defaults. The
    quality tracks read one default solve and the speed-up tracks one same-run measurement,
    both made once in ``setup_cache``."""

    timeout = 900

    def setup_cache(self):
        return cache_or_skip(self.build)

    def build(self):
        views, y = fastmv.datasets.load_mat(shared_dataset("BBCSport.mat"))
        ml, cl = simulate.pairwise_constraints(y, 5000, random_state=0)
        _warm()
        labels = fastmv.mvmc(views, 5, ml, cl, random_state=0).labels
        return {"views": views, "ml": ml, "cl": cl, "nmi": metrics.nmi(y, labels),
                "accuracy": metrics.accuracy(y, labels),
                "speedups": _speedups(views, y, ml, cl, 5, 10)}

    def setup(self, cache):
        cache = from_cache(cache)
        self.views, self.ml, self.cl = cache["views"], cache["ml"], cache["cl"]
        _warm()

    def run(self, **kw):
        return fastmv.mvmc(self.views, 5, self.ml, self.cl, random_state=0, **kw)

    def time_mvmc(self, cache):
        self.run()

    def peakmem_mvmc(self, cache):
        self.run()

    def track_nmi(self, cache):
        return cache["nmi"]

    def track_accuracy(self, cache):
        return cache["accuracy"]

    def track_speedup_vs_numpy(self, cache):
        return cache["speedups"][0]

    def track_iteration_speedup_vs_numpy(self, cache):
        return cache["speedups"][1]

    track_nmi.unit = "NMI"
    track_accuracy.unit = "accuracy"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"
    track_iteration_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


class MVMCSynthetic:
    """Synthetic n × (2 views × 200 dims), 10 clusters, k = 100, |Ω| = 20 n; three outer
    iterations (time per call, peak memory), fastmv only. (n = 20000 was dropped from the
    quick suite for time; ``python -m benchmarks.scaling`` covers larger n.)"""

    timeout = 1800
    params = [[5000]]
    param_names = ["n"]

    def setup(self, n):
        self.views, self.y = synthetic_views(n)
        self.ml, self.cl = simulate.pairwise_constraints(self.y, 20 * n, random_state=0)
        v, y = synthetic_views(300)
        ml, cl = simulate.pairwise_constraints(y, 2000, random_state=0)
        fastmv.mvmc(v, 10, ml, cl, max_iter=2, random_state=0)  # compile / load the kernels

    def run(self):
        return fastmv.mvmc(self.views, 10, self.ml, self.cl, k=100, max_iter=3, tol=0.0,
                           random_state=0)

    def time_three_iterations(self, n):
        self.run()

    def peakmem_three_iterations(self, n):
        self.run()

    def track_nmi(self, n):
        return metrics.nmi(self.y, self.run().labels)

    track_nmi.unit = "NMI"


class MVMCSyntheticSpeedup:
    """The speed-up over the dense NumPy implementation at n = 5000 (k = 100, |Ω| = 20 n),
    five outer iterations of 10 inner steps (the per-iteration ratio is the ratio of the
    medians of iterations 2-5), at the default thread count. Both ratios come from one
    measurement in ``setup_cache`` (the dense reference is the expensive part)."""

    timeout = 1800

    def setup_cache(self):
        views, y = synthetic_views(5000)
        ml, cl = simulate.pairwise_constraints(y, 100000, random_state=0)
        v, y3 = synthetic_views(300)
        ml3, cl3 = simulate.pairwise_constraints(y3, 2000, random_state=0)
        fastmv.mvmc(v, 10, ml3, cl3, max_iter=2, random_state=0)  # compile / load
        return _speedups(views, y, ml, cl, 10, 5, k=100)

    def track_speedup_vs_numpy(self, ratios):
        return ratios[0]

    def track_iteration_speedup_vs_numpy(self, ratios):
        return ratios[1]

    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"
    track_iteration_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"
