"""The toy solver: Lloyd's k-means on the L2-normalised views side by side, with partial
labels pinning the labelled samples (pure NumPy; the package's machinery around it)."""
from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from fastmv._core._driver import Step, iterate, warn_if_degenerate
from fastmv._core._preprocessing import normalize_rows
from fastmv._core._result import Result
from fastmv._core._threads import thread_limit
from fastmv._core._validation import (
    Interval,
    check_n_clusters,
    check_random_state,
    check_views,
    declare_params,
)


@dataclasses.dataclass(frozen=True, repr=False)
class ToyResult(Result):
    """Result of :func:`toy`.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Cluster of every sample.
    objective : ndarray of float64, shape (n_iter,)
        Sum of squared distances to the assigned centres, per iteration.
    n_iter : int
        Iterations run.
    converged : bool
        Whether the objective settled before ``max_iter``.
    centers : ndarray of float64, shape (n_clusters, d)
        Final centres in the concatenated normalised space.
    """

    labels: np.ndarray
    objective: np.ndarray
    n_iter: int
    converged: bool
    centers: np.ndarray


class _Data(NamedTuple):
    X: np.ndarray
    n_clusters: int
    known: np.ndarray    # the labelled samples
    given: np.ndarray    # their labels
    rng: np.random.Generator


def _prepare(X_list, n_clusters, labels, random_state):
    views = check_views(X_list, "X_list", accept_sparse=False)
    X = np.hstack([normalize_rows(np.asarray(V, dtype=np.float64)) for V in views])
    c = check_n_clusters(n_clusters, X.shape[0])
    y = np.full(X.shape[0], -1) if labels is None else np.asarray(labels)
    if y.shape != (X.shape[0],) or y.dtype.kind not in "iu" or y.min(initial=-1) < -1 \
            or y.max(initial=-1) >= c:
        raise ValueError(f"labels must be {X.shape[0]} integers in [-1, {c}), -1 unknown")
    known = np.flatnonzero(y >= 0)
    return _Data(X, c, known, y[known].astype(np.int64), check_random_state(random_state))


class Problem:
    """One Lloyd step per ``step()``; labelled samples keep their labels."""

    def __init__(self, data):
        self.data = data
        self.centers = data.X[data.rng.choice(data.X.shape[0], data.n_clusters, replace=False)]
        self.labels = None

    def step(self):
        d = self.data
        dist = ((d.X[:, None, :] - self.centers[None]) ** 2).sum(axis=2)
        labels = dist.argmin(axis=1)
        labels[d.known] = d.given
        for k in range(d.n_clusters):
            members = labels == k
            if members.any():
                self.centers[k] = d.X[members].mean(axis=0)
        self.labels = labels.astype(np.int64)
        return Step(objective=float(dist[np.arange(labels.size), labels].sum()))


def _solve(data, *, max_iter, tol, callback, verbose, n_jobs):
    with thread_limit(n_jobs):
        problem = Problem(data)
        trace = iterate(problem, solver="toy", max_iter=max_iter, tol=tol, callback=callback,
                        verbose=verbose)
    warn_if_degenerate(problem.labels, data.n_clusters, "toy",
                       "the views have fewer distinct rows than that; lower n_clusters")
    return ToyResult(labels=problem.labels, objective=trace.objective, n_iter=trace.n_iter,
                     converged=trace.converged, centers=problem.centers)


@declare_params({
    "X_list": ["views"], "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "labels": ["array-like", None], "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")], "random_state": ["random_state"],
    "verbose": ["verbose"], "callback": [callable, None], "n_jobs": ["n_jobs"],
})
def toy(X_list, n_clusters, *, labels=None, max_iter=20, tol=1e-6, random_state=None,
        verbose=False, callback=None, n_jobs=None):
    """Lloyd's k-means on the L2-normalised views side by side (the tests' toy solver).

    Parameters
    ----------
    X_list : list of array-like
        The views, each (n, d_v).
    n_clusters : int
        Number of clusters.
    labels : array-like of int, shape (n,), optional
        Partial labels, ``-1`` for unknown; labelled samples keep them.
    max_iter : int, default 20
        Maximum number of Lloyd steps.
    tol : float, default 1e-6
        Stop when the objective's relative change is at most ``tol``.
    random_state : int, Generator or None
        Seed of the initial centres.
    verbose : bool or int, default False
        Log one line per step.
    callback : callable, optional
        ``callback(info)`` after every step; ``True`` stops.
    n_jobs : int, optional
        Threads (the toy is NumPy: BLAS threads).

    Returns
    -------
    ToyResult
        Labels, objective history and centres.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2))] + np.arange(10)[:, None] * 1e-3
    >>> toy([X, X], 2, random_state=0).labels.shape
    (10,)
    """
    return _solve(_prepare(X_list, n_clusters, labels, random_state), max_iter=max_iter,
                  tol=tol, callback=callback, verbose=verbose, n_jobs=n_jobs)
