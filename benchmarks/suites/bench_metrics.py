"""asv suite for fastmv.metrics: evaluate / nmi / accuracy, and the speed ratio against
scikit-learn's ``normalized_mutual_info_score`` (measured inside one call, so machine noise
affects both sides alike)."""
import numpy as np

from benchmarks._common import best_of
from fastmv import metrics


def _labels(n, k_true=10, k_pred=12, agree=0.7, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k_true, n)
    pred = np.where(rng.random(n) < agree, (y * 7 + 3) % k_pred, rng.integers(0, k_pred, n))
    return y, pred


class Metrics:
    params = [10_000, 1_000_000]
    param_names = ["n"]

    def setup(self, n):
        self.y, self.pred = _labels(n)
        metrics.evaluate(self.y, self.pred)  # warm caches / imports

    def time_evaluate(self, n):
        metrics.evaluate(self.y, self.pred)

    def time_nmi(self, n):
        metrics.nmi(self.y, self.pred)

    def time_accuracy(self, n):
        metrics.accuracy(self.y, self.pred)

    def time_ari(self, n):
        metrics.ari(self.y, self.pred)

    def peakmem_evaluate(self, n):
        metrics.evaluate(self.y, self.pred)


class SpeedupVsSklearn:
    """track_*: (scikit-learn time) / (fastmv time), best of several runs of each, same call."""

    params = [10_000, 1_000_000]
    param_names = ["n"]
    unit = "ratio"

    def setup(self, n):
        try:
            from sklearn import metrics as skm
        except ImportError:  # pragma: no cover - optional dependency
            raise NotImplementedError("scikit-learn not installed")
        self.skm = skm
        self.y, self.pred = _labels(n)
        self.repeat = 20 if n <= 10_000 else 5
        metrics.nmi(self.y, self.pred)
        skm.normalized_mutual_info_score(self.y, self.pred)

    def track_speedup_nmi_vs_sklearn(self, n):
        ours = best_of(lambda: metrics.nmi(self.y, self.pred), self.repeat)
        theirs = best_of(lambda: self.skm.normalized_mutual_info_score(
            self.y, self.pred, average_method="geometric"), self.repeat)
        return theirs / ours

    track_speedup_nmi_vs_sklearn.unit = "ratio"

    def track_speedup_evaluate_vs_sklearn_nmi_ari(self, n):
        """All eight measures vs scikit-learn's NMI + ARI alone."""
        ours = best_of(lambda: metrics.evaluate(self.y, self.pred), self.repeat)
        theirs = best_of(lambda: (
            self.skm.normalized_mutual_info_score(self.y, self.pred, average_method="geometric"),
            self.skm.adjusted_rand_score(self.y, self.pred)), self.repeat)
        return theirs / ours

    track_speedup_evaluate_vs_sklearn_nmi_ari.unit = "ratio"
