"""asv suite for fastmv.kmeans (and the speed ratio against scikit-learn's KMeans, measured
inside one call so that machine noise affects both alike)."""
import numpy as np

import fastmv
from fastmv.kernels.clustering import lloyd_step, seeding_distances

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
