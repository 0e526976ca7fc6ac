"""EMVC's label stop: end the late iterations once the labels of ``P̂`` and the objective
have settled (docs/records/emvc.md "Stopping when the labels have settled").

The late iterations of EMVC are full decompositions of an ``n × n`` matrix, and the labels
of ``P̂`` (what a user of ``n_clusters`` gets) are usually final several of them before the
primal residual reaches ``tol``. :class:`LabelWatch` computes, at the iterations where the
objective has almost stopped moving, exactly the labels the solve would return if it
stopped there (:func:`fastmv.markov_spectral_clustering` with a copy of the solve's random
generator, so the generator itself is not advanced), and reports the solve settled when
they have been the same partition at several consecutive iterations.
"""
from __future__ import annotations

import copy
import warnings

import numpy as np

from .._blocks._spectral import markov_spectral_clustering

__all__ = ["LabelWatch", "same_partition"]


def same_partition(a, b):
    """Whether two label vectors describe the same partition (cluster ids may differ)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.size == 0:
        return True
    # a bijection between the ids: every pair (a_i, b_i) is one of as many pairs as ids
    pairs = np.unique(np.stack([a, b]), axis=1)
    return pairs.shape[1] == np.unique(a).size == np.unique(b).size


class LabelWatch:
    """Labels of ``P̂`` at the iterations where the objective has settled.

    Parameters
    ----------
    n_clusters : int
        Clusters of the labels.
    checks : int
        Settled when the labels were the same partition at ``checks + 1`` consecutive
        iterations (``checks`` unchanged comparisons).
    rtol : float
        An iteration is checked only when the SVT is active (``Q ≠ 0``) and the objective's
        relative change ``|f_k − f_{k−1}| / |f_k|`` is at most ``rtol``; any other iteration
        restarts the count.
    n_jobs : int or None
        Threads of the k-means of the labels.
    """

    def __init__(self, n_clusters, checks, rtol, n_jobs=None):
        self.n_clusters, self.checks, self.rtol, self.n_jobs = n_clusters, checks, rtol, n_jobs
        self.prev_objective = None
        self.run = 0  # consecutive unchanged checks
        self.labels = None  # labels of the last check, or None
        self.current = False  # whether they are the labels of the current P̂, warning-free
        self.n_checks = 0

    def update(self, P_hat, objective, rank, rng):
        """Record one iteration; True once the labels and the objective have settled."""
        prev, self.prev_objective = self.prev_objective, objective
        self.current = False
        change = (abs(objective - prev) / abs(objective)
                  if prev is not None and objective != 0.0 else np.inf)
        if rank == 0 or not change <= self.rtol:
            self.run, self.labels = 0, None
            return False
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            labels = markov_spectral_clustering(np.asarray(P_hat, dtype=np.float64),
                                                self.n_clusters,
                                                random_state=copy.deepcopy(rng),
                                                n_jobs=self.n_jobs)
        self.n_checks += 1
        unchanged = self.labels is not None and same_partition(labels, self.labels)
        self.run = self.run + 1 if unchanged else 0
        self.labels, self.current = labels, not caught
        return self.run >= self.checks
