"""asv suite for fastmv.transition_matrix, against scipy's cdist route in the same call."""
import numpy as np
from scipy.spatial.distance import cdist

import fastmv
from benchmarks._common import best_of


def _cdist_transition(X):
    D = cdist(X, X)
    iu = np.triu_indices(len(X), 1)
    sigma = np.median(D[iu])
    K = np.exp(-D ** 2 / (2 * sigma ** 2))
    return K / K.sum(1, keepdims=True)


class TransitionMatrix:
    """A WebKB-sized text view: 1051 × 3000 (dense random stand-in, same arithmetic)."""

    params = [[(1051, 3000), (4000, 200)]]
    param_names = ["shape"]
    timeout = 300

    def setup(self, shape):
        rng = np.random.default_rng(0)
        self.X = np.abs(rng.standard_normal(shape))
        fastmv.transition_matrix(self.X[:20])

    def time_transition_matrix(self, shape):
        fastmv.transition_matrix(self.X)

    def time_transition_matrix_float32(self, shape):
        fastmv.transition_matrix(self.X, dtype=np.float32)

    def peakmem_transition_matrix(self, shape):
        fastmv.transition_matrix(self.X)

    def track_speedup_vs_cdist(self, shape):
        return best_of(lambda: _cdist_transition(self.X), 2) / \
            best_of(lambda: fastmv.transition_matrix(self.X), 2)

    track_speedup_vs_cdist.unit = "x (cdist route time / fastmv time)"
