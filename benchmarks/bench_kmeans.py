"""asv suite for fastmv.kmeans (and the speed ratio against scikit-learn's KMeans, measured
inside one call so that machine noise affects both alike)."""
import numpy as np

import fastmv
from fastmv.kernels.clustering import cluster_sums, nearest_center

from ._common import best_of, shared_dataset


def _handwritten():
    try:
        views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    except NotImplementedError:
        views, y = fastmv.datasets.load_handwritten()
    return np.hstack(views), y


class KMeansHandwritten:
    """Concatenated Handwritten views (2000 × 649), 10 clusters."""

    timeout = 300

    def setup(self):
        self.X, self.y = _handwritten()
        fastmv.kmeans(self.X[:100], 3, n_init=1, random_state=0)  # compile outside timings

    def time_kmeans_n_init_10(self):
        fastmv.kmeans(self.X, 10, n_init=10, random_state=0)

    def peakmem_kmeans(self):
        fastmv.kmeans(self.X, 10, n_init=10, random_state=0)

    def track_speedup_vs_sklearn(self):
        try:
            from sklearn.cluster import KMeans
        except ImportError:
            raise NotImplementedError("scikit-learn not installed")
        ours = best_of(lambda: fastmv.kmeans(self.X, 10, n_init=10, random_state=0))
        theirs = best_of(lambda: KMeans(10, n_init=10, random_state=0).fit(self.X))
        return theirs / ours

    track_speedup_vs_sklearn.unit = "x (sklearn time / fastmv time)"

    def track_inertia_ratio_vs_sklearn(self):
        try:
            from sklearn.cluster import KMeans
        except ImportError:
            raise NotImplementedError("scikit-learn not installed")
        ours = fastmv.kmeans(self.X, 10, n_init=10, random_state=0).inertia
        return ours / KMeans(10, n_init=10, random_state=0).fit(self.X).inertia_

    track_inertia_ratio_vs_sklearn.unit = "ratio"


class KMeansKernels:
    params = [[10_000, 200_000], [20]]
    param_names = ["n", "c"]

    def setup(self, n, c):
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((n, 50))
        C = rng.standard_normal((c, 50))
        self.inner = self.X @ C.T
        self.xs = (self.X ** 2).sum(1)
        self.cs = (C ** 2).sum(1)
        self.labels = rng.integers(0, c, n)
        self.c = c
        nearest_center(self.inner[:5], self.xs[:5], self.cs)
        cluster_sums(self.X[:5], self.labels[:5], c, 2)

    def time_nearest_center(self, n, c):
        nearest_center(self.inner, self.xs, self.cs)

    def time_cluster_sums(self, n, c):
        cluster_sums(self.X, self.labels, self.c, 2)

    def track_nearest_center_speedup_vs_numpy(self, n, c):
        def ref():
            d = self.xs[:, None] + self.cs[None, :] - 2 * self.inner
            lab = d.argmin(1)
            return lab, d[np.arange(len(lab)), lab]
        return best_of(ref) / best_of(lambda: nearest_center(self.inner, self.xs, self.cs))

    track_nearest_center_speedup_vs_numpy.unit = "x"

    def track_cluster_sums_speedup_vs_numpy(self, n, c):
        def ref():
            onehot = np.zeros((len(self.labels), self.c))
            onehot[np.arange(len(self.labels)), self.labels] = 1
            return onehot.T @ self.X, onehot.sum(0)
        return best_of(ref) / best_of(lambda: cluster_sums(self.X, self.labels, self.c, 2))

    track_cluster_sums_speedup_vs_numpy.unit = "x"
