"""asv suite for fastmv.kmeans: time, peak memory, and the speed and inertia ratios against
scikit-learn's KMeans (lloyd) at one thread and at default threads, measured in one call so
that machine noise affects both alike."""
import contextlib

import numpy as np
from threadpoolctl import threadpool_limits

import fastmv
from benchmarks._common import best_of, from_cache, shared_dataset
from fastmv.kernels.clustering import lloyd_step, seeding_distances


def _handwritten():
    try:
        views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    except NotImplementedError:
        views, y = fastmv.datasets.load_handwritten()
    return np.hstack(views), y


def _blobs(n=100_000, d=20, c=20):
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((c, d)) * 1.5
    return centers[rng.integers(0, c, n)] + rng.standard_normal((n, d))


def _same_run_ratio(X, k, threads):
    """scikit-learn time / fastmv time, both with ``threads`` threads (``None``: defaults),
    alternated in one process, best of 3 each; and the ratio of their inertias (from the
    timed fits)."""
    from sklearn.cluster import KMeans

    def ours():
        return fastmv.kmeans(X, k, n_init=10, random_state=0, n_jobs=threads)

    def theirs():
        return KMeans(k, n_init=10, random_state=0, algorithm="lloyd").fit(X)

    limits = (threadpool_limits(threads) if threads is not None
              else contextlib.nullcontext())
    fits = {}
    with limits:
        t_ours = best_of(lambda: fits.__setitem__("ours", ours()))
        t_theirs = best_of(lambda: fits.__setitem__("theirs", theirs()))
    return t_theirs / t_ours, fits["ours"].inertia / fits["theirs"].inertia_


def _vs_sklearn(X, k):
    """The setup_cache value of a ``_VsSklearn`` class: ``X`` and both same-run ratios."""
    try:
        import sklearn.cluster  # noqa: F401  (optional dependency: the bench extra)
    except ImportError:
        return {"X": X, "skip": "scikit-learn not installed"}
    fastmv.kmeans(X[:100], 3, n_init=1, random_state=0)  # compile outside the timings
    return {"X": X, "default": _same_run_ratio(X, k, None), "one": _same_run_ratio(X, k, 1)}


class _VsSklearn:
    """Speed and inertia against scikit-learn's KMeans(algorithm="lloyd"), same run, both
    thread settings measured once in ``setup_cache``."""

    timeout = 600
    k = 10

    def setup(self, cache):
        self.X = cache["X"]
        fastmv.kmeans(self.X[:100], 3, n_init=1, random_state=0)  # compile outside timings

    def _ratio(self, cache, threads):
        return from_cache(cache)["one" if threads == 1 else "default"]

    def track_speedup_vs_sklearn(self, cache):
        return self._ratio(cache, None)[0]

    track_speedup_vs_sklearn.unit = "x (sklearn time / fastmv time, default threads)"

    def track_speedup_vs_sklearn_one_thread(self, cache):
        return self._ratio(cache, 1)[0]

    track_speedup_vs_sklearn_one_thread.unit = "x (sklearn time / fastmv time, one thread)"

    def track_inertia_ratio_vs_sklearn(self, cache):
        return self._ratio(cache, None)[1]

    track_inertia_ratio_vs_sklearn.unit = "ratio (fastmv / sklearn inertia)"


class KMeansHandwritten(_VsSklearn):
    """Concatenated Handwritten views (2000 × 649), 10 clusters."""

    def setup_cache(self):
        return _vs_sklearn(_handwritten()[0], self.k)

    def time_kmeans_n_init_10(self, cache):
        fastmv.kmeans(self.X, 10, n_init=10, random_state=0)

    def peakmem_kmeans(self, cache):
        fastmv.kmeans(self.X, 10, n_init=10, random_state=0)


class KMeansBlobs100k(_VsSklearn):
    """Synthetic 100 000 × 20, 20 overlapping Gaussian blobs, 20 clusters."""

    k = 20

    def setup_cache(self):
        return _vs_sklearn(_blobs(), self.k)

    def time_kmeans_n_init_10(self, cache):
        fastmv.kmeans(self.X, 20, n_init=10, random_state=0)


class KMeansKernels:
    """One Lloyd step and one k-means++ candidate evaluation, against NumPy doing the same."""

    params = [[10_000, 200_000], [20]]
    param_names = ["n", "c"]

    def setup(self, n, c):
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((n, 50))
        self.C = rng.standard_normal((c, 50))
        self.xs = (self.X ** 2).sum(1)
        self.closest = np.full(n, np.inf)
        self.parts = 64
        lloyd_step(self.X[:5], self.C, self.xs[:5], 1)
        seeding_distances(self.X[:5], self.C[:3], self.xs[:5], self.closest[:5], 1)

    def time_lloyd_step(self, n, c):
        lloyd_step(self.X, self.C, self.xs, self.parts)

    def time_seeding_distances(self, n, c):
        seeding_distances(self.X, self.C[:5], self.xs, self.closest, self.parts)

    def track_lloyd_step_speedup_vs_numpy(self, n, c):
        def ref():
            d = self.xs[:, None] + (self.C ** 2).sum(1)[None, :] - 2 * self.X @ self.C.T
            lab = d.argmin(1)
            onehot = np.zeros((n, c))
            onehot[np.arange(n), lab] = 1
            return lab, d[np.arange(n), lab], onehot.T @ self.X, onehot.sum(0)
        return best_of(ref) / best_of(lambda: lloyd_step(self.X, self.C, self.xs, self.parts))

    track_lloyd_step_speedup_vs_numpy.unit = "x"
