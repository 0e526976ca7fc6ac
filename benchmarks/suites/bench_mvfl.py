"""asv suite for fastmv.mvfl.

Speed ratios are measured inside one ``track_*`` call against ``benchmarks/references/mvfl.py``'s
``mvfl_reference``: the same algorithm (same start, same iterations) in plain NumPy, solving
the ``d × d`` systems ``(X̃ᵀX̃ + λ1 P_k + λ2 Q) w_k = X̃ᵀ f̃_k`` directly with
``numpy.linalg.solve`` and the pair term with a dense ``n × n`` ``I_p``. fastmv factorises the
``d × d`` systems by Cholesky (d ≤ n) or solves ``n × n`` Woodbury systems built by a sparse
Numba kernel (d > n), and updates ``F`` with fused kernels. The full-size 3Sources comparison
(all three views, d = 10259, whose NumPy ``d × d`` solves take minutes) is recorded in
``docs/records/mvfl.md``.
"""

import numpy as np
import scipy.sparse as sp

import fastmv
from benchmarks._common import best_of, shared_dataset
from benchmarks.references.mvfl import mvfl_reference
from benchmarks.references.mvmc import synthetic_views
from fastmv import metrics, simulate


def _reference():
    return mvfl_reference


def _zscore(views):
    out = []
    for X in views:
        sd = X.std(axis=0)
        s = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0) / np.sqrt(X.shape[1])
        out.append((X - X.mean(axis=0)) * s)
    return out


def _unit_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X)


def _init(X, c, seed=0):
    km = fastmv.kmeans(X, c, random_state=seed).labels
    F0 = np.full((X.shape[0], c), 0.2)
    F0[np.arange(X.shape[0]), km] += 1.0
    return F0


def _pairs(y, ratio, seed):
    part = simulate.partial_labels(y, ratio, random_state=seed)
    idx = np.flatnonzero(part >= 0)
    i, j = np.triu_indices(idx.size, 1)
    same = y[idx[i]] == y[idx[j]]
    return (np.column_stack([idx[i][same], idx[j][same]]),
            np.column_stack([idx[i][~same], idx[j][~same]]))


class MVFLHandwritten:
    """Handwritten fou+fac+zer (n = 2000, d = 339, c = 10), z-scored views scaled by
    1/sqrt(d_v), 20 iterations from a fixed k-means start; priors: none, 10% labels
    (λ3 = 100), all pairs among 10% of the samples (19900 pairs, λ3 = 0.01)."""

    timeout = 900
    params = [["none", "labels", "pairs"]]
    param_names = ["prior"]
    n_iter = 20

    def setup(self, prior):
        views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"), views=[1, 0, 5])
        self.y = y
        self.views = _zscore(views)
        self.X = np.hstack(self.views)
        self.vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in self.views])])
        self.F0 = _init(self.X, 10)
        if prior == "labels":
            self.kw = {"labels": simulate.partial_labels(y, 0.1, random_state=0), "lam3": 100.0}
        elif prior == "pairs":
            ml, cl = _pairs(y, 0.1, 0)
            self.kw = {"must_link": ml, "cannot_link": cl, "lam3": 0.01}
        else:
            self.kw = {}
        self.run(2)  # compile / load the kernels

    def run(self, n_iter=None):
        # the paper's F step: the same algorithm as the NumPy reference
        return fastmv.mvfl(self.views, 10, init=self.F0, normalize=None, tol=0,
                           f_step="paper", max_iter=n_iter or self.n_iter, **self.kw)

    def time_mvfl(self, prior):
        self.run()

    def peakmem_mvfl(self, prior):
        self.run()

    def _default_labels(self):
        return fastmv.mvfl(self.views, 10, normalize=None, random_state=0, **self.kw).labels

    def track_nmi(self, prior):
        return metrics.nmi(self.y, self._default_labels())

    def track_speedup_vs_numpy(self, prior):
        ref = _reference()
        t_ref = best_of(lambda: ref(self.X, self.vp, self.F0, max_iter=self.n_iter, **self.kw), 1)
        return t_ref / best_of(self.run, 3)

    track_nmi.unit = "NMI"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


class MVFL3Sources:
    """3Sources (n = 169, three text views, d = 10259 > n, CSR), documents scaled to unit
    norm per view, 10% labels (λ3 = 100, λ1 = 0.3, λ2 = 1e-3), 20 iterations from a fixed
    k-means start: the Woodbury route with the sparse weighted-Gram kernel."""

    timeout = 900
    n_iter = 20

    def setup(self):
        views, y = fastmv.datasets.load_mat(shared_dataset("3Sources.mat"))
        self.y = y
        self.c = int(np.unique(y).size)
        self.views = [_unit_rows(sp.csr_matrix(v)) for v in views]
        self.labels = simulate.partial_labels(y, 0.1, random_state=0)
        self.kw = {"labels": self.labels, "lam1": 0.3, "lam2": 1e-3, "lam3": 100.0}
        self.F0 = _init(sp.hstack(self.views, format="csr"), self.c)
        self.run(2)

    def run(self, n_iter=None, views=None):
        return fastmv.mvfl(views or self.views, self.c, init=self.F0, normalize=None, tol=0,
                           f_step="paper", max_iter=n_iter or self.n_iter, **self.kw)

    def time_mvfl(self):
        self.run()

    def peakmem_mvfl(self):
        self.run()

    def track_nmi(self):
        return metrics.nmi(self.y, fastmv.mvfl(self.views, self.c, normalize=None,
                                               random_state=0, **self.kw).labels)

    def track_speedup_vs_numpy_bbc_view(self):
        """One iteration on the bbc view alone (d = 3560): the NumPy reference factorises six
        3560 × 3560 systems; the full d = 10259 run is in docs/records/mvfl.md."""
        ref = _reference()
        view = [self.views[0]]
        Xd = view[0].toarray()
        vp = np.array([0, Xd.shape[1]])
        t_ref = best_of(lambda: ref(Xd, vp, self.F0, max_iter=1, **self.kw), 1)
        return t_ref / best_of(lambda: self.run(1, view), 3)

    track_nmi.unit = "NMI"
    track_speedup_vs_numpy_bbc_view.unit = "x (NumPy time / fastmv time)"


class MVFLSynthetic:
    """Synthetic n = 4000 × (2 views × 200 dims), 10 planted clusters, 10% labels
    (λ3 = 100), 20 iterations from the default start: time, peak memory and NMI."""

    timeout = 600
    n = 4000

    def setup(self):
        self.views, self.y = synthetic_views(self.n)
        self.labels = simulate.partial_labels(self.y, 0.1, random_state=0)
        v, y = synthetic_views(300)
        fastmv.mvfl(v, 10, labels=simulate.partial_labels(y, 0.1, random_state=0),
                    max_iter=2, random_state=0)  # compile / load the kernels

    def run(self):
        return fastmv.mvfl(self.views, 10, labels=self.labels, lam3=100.0, max_iter=20,
                           tol=0.0, random_state=0)

    def time_mvfl(self):
        self.run()

    def peakmem_mvfl(self):
        self.run()

    def track_nmi(self):
        return metrics.nmi(self.y, self.run().labels)

    track_nmi.unit = "NMI"
