"""Lloyd's k-means with greedy k-means++ seeding (docs/algorithms.md §6)."""
from __future__ import annotations

import dataclasses
import math
from concurrent.futures import Executor
from numbers import Integral, Real
from typing import ClassVar, Literal

import numba
import numpy as np

# The kernels' np.dot calls SciPy's BLAS: loading it at import makes the BLAS thread limits
# that a call takes later cover it (threadpoolctl only sees libraries already loaded).
import scipy.linalg.cython_blas  # noqa: F401
import scipy.sparse as sp
from numpy.typing import ArrayLike

from fastmv.kernels._partition import n_parts, part_bounds
from fastmv.kernels.clustering import (
    lloyd_step,
    lloyd_step_csr,
    lloyd_step_csr_serial,
    lloyd_step_serial,
    seeding_distances,
    seeding_distances_csr,
)

from .._core._driver import Step, check_cancelled, iterate, warn_if_degenerate
from .._core._executor import open_block_map
from .._core._preprocessing import row_norms
from .._core._result import Result
from .._core._threads import PARALLEL_MIN_WORK, task_map, thread_limit
from .._core._validation import (
    Interval,
    Options,
    check_array,
    check_n_clusters,
    check_random_state,
    declare_params,
)
from ..exceptions import DegenerateSolutionError, InvalidParameterError
from ._peak import check_kmeans

__all__ = ["KMeansResult", "kmeans"]


@dataclasses.dataclass(frozen=True, repr=False)
class KMeansResult(Result):
    """Result of :func:`kmeans`; unpacks as ``labels, centers, inertia``.

    Parameters
    ----------
    labels : ndarray of int64, shape (n,)
        Index of the nearest center of every sample.
    objective : ndarray of float64, shape (n_iter,)
        Inertia of the best run's assignment at every Lloyd iteration (to the centers the
        iteration started from).
    n_iter : int
        Lloyd iterations of the best run.
    converged : bool
        Whether the best run met its convergence test before ``max_iter``.
    centers : ndarray, shape (n_clusters, d)
        Final centers, in the dtype of ``X``.
    inertia : float
        Sum of squared distances of the samples to their nearest center in ``centers``.
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> res = fastmv.kmeans(np.array([[0.0], [1.0], [9.0], [10.0]]), 2, random_state=0)
    >>> labels, centers, inertia = res
    >>> sorted(centers.ravel().tolist()), inertia, len(res.objective) == res.n_iter
    ([0.5, 9.5], 1.0, True)
    """

    labels: np.ndarray
    objective: np.ndarray
    n_iter: int
    converged: bool
    centers: np.ndarray
    inertia: float

    _shapes: ClassVar[dict] = {"centers": ("c", "d")}

    def __iter__(self):
        return iter((self.labels, self.centers, self.inertia))


# Rows per part at least (the parts are the unit of parallel work and of the fixed-order
# reduction); more parts than threads balances load, too many only costs accumulators.
_PART_ROWS = 256


# Rows per executor task at least (a task runs several consecutive parts): a task costs a
# scheduler round trip, which a Lloyd step on fewer rows would not pay for.
_TASK_ROWS = 16384


# Restarts run one per thread only when each is long enough to pay for it: a restart is a
# Python loop around small kernel calls, and two such loops contend for the GIL. Below this
# many samples and this work per Lloyd step (``size × k`` multiply-adds), two threads make
# ``kmeans`` slower than one; above both, or where the Lloyd step itself goes parallel
# (PARALLEL_MIN_WORK), faster (docs/records/perf.md, "k-means restarts on threads"). The
# results do not depend on it.
_THREADED_RESTARTS_MIN_SAMPLES = 1500
_THREADED_RESTARTS_MIN_WORK = 2 ** 18


def _restart_threads(data, n_clusters, n_init):
    """Threads for ``n_init`` restarts on ``data`` (1: one after another on this thread)."""
    work = data.size * n_clusters
    if work < PARALLEL_MIN_WORK and (data.n < _THREADED_RESTARTS_MIN_SAMPLES
                                     or work < _THREADED_RESTARTS_MIN_WORK):
        return 1
    return min(numba.get_num_threads(), n_init)


def _n_parts(n, n_clusters, d, size):
    """Parts for a Lloyd step: from the shapes only (never the thread count), with the
    per-part ``c × d`` accumulators together no larger than ``X`` itself (``size`` values).
    ``n_parts``' Python function, the same integer arithmetic: called from Python, the
    compiled one would cost a compilation of its own on a first call."""
    return int(n_parts.py_func(n, max(_PART_ROWS, -(-n * n_clusters * d // max(size, 1)))))


def _lloyd_task(item, centers):
    """One executor task of a Lloyd step: the kernel on every part of a group of consecutive
    parts (each alone, so each part's sums are accumulated exactly as the kernel accumulates
    them in-process), returning ``(labels, sq_dist, per-part sums, per-part counts)``."""
    (X, x_sq), bounds = item
    out = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        if sp.issparse(X):
            Xp = X[s:e]
            out.append(lloyd_step_csr_serial(Xp.data, Xp.indices, Xp.indptr, centers, x_sq[s:e],
                                             1))
        else:
            out.append(lloyd_step_serial(X[s:e], centers, x_sq[s:e], 1))
    return (np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out]),
            np.stack([o[2] for o in out]), np.stack([o[3] for o in out]))


class _Data:
    """The samples as the kernels see them: float64, centred (dense), scaled by a power of
    two so that the largest entry is below 1 in magnitude, with their squared row norms.

    Squaring data of magnitude ~1e160 overflows and ~1e-170 underflows; scaling by a power of
    two is exact, so the labels do not depend on the scale of ``X`` and the centers and
    inertia are scaled back exactly."""

    def __init__(self, X):
        self.sparse = sp.issparse(X)
        n, d = X.shape
        values = X.data if self.sparse else X
        peak = float(np.abs(values).max()) if values.size else 0.0
        # 2**exponent * peak lies in [0.5, 1): squares and their sums over d stay finite
        self.exponent = -math.frexp(peak)[1] if peak > 0 else 0
        if self.sparse:
            self.X = sp.csr_matrix((np.ldexp(X.data.astype(np.float64), self.exponent),
                                    X.indices, X.indptr), shape=X.shape)
            self.mean = np.zeros(d)
            col_mean = np.asarray(self.X.mean(axis=0)).ravel()
            col_var = np.asarray(self.X.multiply(self.X).mean(axis=0)).ravel() - col_mean ** 2
            size = self.X.nnz
        else:
            Xs = np.ldexp(X.astype(np.float64), self.exponent)
            # centring (on this copy) keeps the expansion ‖x‖² + ‖c‖² − 2 x·c accurate
            self.mean = Xs.mean(axis=0)
            Xs -= self.mean
            self.X = Xs
            col_var = np.einsum("ij,ij->j", Xs, Xs) / n
            size = Xs.size
        self.x_sq = row_norms(self.X, squared=True)
        self.mean_variance = float(np.mean(col_var))
        self.n, self.d = n, d
        self.size = size
        self.blocks = None

    def distribute(self, blocks, n_clusters):
        """Send the rows to ``blocks`` (a :class:`fastmv._core._executor.BlockMap`) once, in groups
        of consecutive Lloyd parts of at least ``_TASK_ROWS`` rows, for :meth:`lloyd_step`."""
        parts = max(1, min(_n_parts(self.n, n_clusters, self.d, self.size), self.n))
        bounds = part_bounds(self.n, parts)
        per_task = max(1, -(-_TASK_ROWS * parts // max(self.n, 1)))
        groups = [bounds[g:g + per_task + 1] for g in range(0, parts, per_task)]
        values = [(self.X[b[0]:b[-1]], self.x_sq[b[0]:b[-1]]) for b in groups]
        handles = blocks.keep_each(values)
        self.tasks = [(h, b - b[0]) for h, b in zip(handles, groups)]
        self.blocks = blocks

    def _lloyd_step_tasks(self, centers):
        labels, sq_dist = [], []
        sums = np.zeros(centers.shape)
        counts = np.zeros(centers.shape[0], dtype=np.int64)
        for lab, dist, part_sums, part_counts in self.blocks.map(_lloyd_task, self.tasks,
                                                                 centers):
            labels.append(lab)
            sq_dist.append(dist)
            for p in range(part_sums.shape[0]):  # in part order, as the kernel adds them
                sums += part_sums[p]
                counts += part_counts[p]
        return np.concatenate(labels), np.concatenate(sq_dist), sums, counts

    def rows(self, idx):
        """Dense float64 copies of the rows ``idx``."""
        if self.sparse:
            return self.X[np.asarray(idx)].toarray()
        return self.X[np.asarray(idx)]

    def lloyd_step(self, centers):
        if self.blocks is not None:
            return self._lloyd_step_tasks(centers)
        n_parts = _n_parts(self.n, centers.shape[0], self.d, self.size)
        # the serial kernels give the same results; a call that runs one never compiles the
        # parallel one (a k-means restart on its own thread, or a small embedding)
        serial = (self.size * centers.shape[0] < PARALLEL_MIN_WORK
                  or numba.get_num_threads() == 1)
        if self.sparse:
            X = self.X
            step = lloyd_step_csr_serial if serial else lloyd_step_csr
            return step(X.data, X.indices, X.indptr, centers, self.x_sq, n_parts)
        step = lloyd_step_serial if serial else lloyd_step
        return step(self.X, centers, self.x_sq, n_parts)

    def seeding_distances(self, candidates, closest):
        n_parts = _n_parts(self.n, 1, 1, self.size)  # serial kernels, summed by parts
        if self.sparse:
            X = self.X
            return seeding_distances_csr(X.data, X.indices, X.indptr, candidates, self.x_sq,
                                         closest, n_parts)
        return seeding_distances(self.X, candidates, self.x_sq, closest, n_parts)


def kmeans_plusplus(data, n_clusters, rng, n_local_trials=None):
    """Greedy k-means++ seeding (Arthur & Vassilvitskii, with ``2 + log k`` local trials).

    Returns the initial centers, a dense ``(n_clusters, d)`` float64 array in the units of
    ``data``.
    """
    n = data.n
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    centers = np.empty((n_clusters, data.d))
    first = int(rng.integers(n))
    centers[0] = data.rows([first])[0]
    dist, pots = data.seeding_distances(centers[:1], np.full(n, np.inf))
    closest, potential = dist[0], pots[0]
    for c in range(1, n_clusters):
        check_cancelled()
        if potential <= 0:  # every sample coincides with a center: any choice is optimal
            cand = rng.integers(n, size=1)
        else:
            r = rng.random(n_local_trials) * potential
            cand = np.searchsorted(np.cumsum(closest), r)
            np.clip(cand, 0, n - 1, out=cand)
        rows = data.rows(cand)
        dist, pots = data.seeding_distances(rows, closest)
        best = int(np.argmin(pots))
        centers[c] = rows[best]
        closest, potential = dist[best], pots[best]
    return centers


class _Lloyd:
    """Lloyd iterations as a problem for the driver: each step assigns the samples to the
    current centers and moves the centers to the means; the residual is the total squared
    center shift, 0 when the labels repeat (the centers just computed are then the previous
    ones, and the step's labels and distances already refer to them)."""

    def __init__(self, data, centers):
        self.data = data
        self.centers = centers
        self.labels = None
        self.sq_dist = None
        self.settled = False

    def step(self):
        data = self.data
        labels, sq_dist, sums, counts = data.lloyd_step(self.centers)
        new_centers = self.centers.copy()
        full = counts > 0
        new_centers[full] = sums[full] / counts[full, None]
        empty = np.flatnonzero(~full)
        if empty.size:
            # Relocate empty clusters to the samples farthest from their centers, as
            # scikit-learn does, so that no cluster stays empty.
            far = np.argsort(sq_dist, kind="stable")[::-1][: empty.size]
            new_centers[empty] = data.rows(far)
        self.settled = (self.labels is not None and not empty.size
                        and np.array_equal(labels, self.labels))
        shift = 0.0 if self.settled else float(((new_centers - self.centers) ** 2).sum())
        self.centers, self.labels, self.sq_dist = new_centers, labels, sq_dist
        return Step(objective=float(sq_dist.sum()), residual=shift)

    def finish(self):
        """Labels and inertia for the final centers."""
        if not self.settled:
            self.labels, self.sq_dist, _, _ = self.data.lloyd_step(self.centers)
        return self.labels, float(self.sq_dist.sum())


def _lloyd(data, centers, max_iter, tol):
    """One Lloyd run from ``centers``: (labels, centers, inertia, trace)."""
    problem = _Lloyd(data, centers)
    trace = iterate(problem, solver="kmeans", max_iter=max_iter, tol=tol, warn=False)
    labels, inertia = problem.finish()
    return labels, problem.centers, inertia, trace


def _caller_units(value, exponent, what):
    """A squared-distance quantity computed on data scaled by ``2**exponent``, in the
    caller's units; raises when it does not fit in float64."""
    with np.errstate(over="ignore"):
        out = np.ldexp(np.asarray(value, dtype=np.float64), -2 * exponent)
    if not np.all(np.isfinite(out)):
        raise DegenerateSolutionError(
            f"kmeans: the {what} exceeds the float64 range (X is too large in magnitude for "
            "its squared distances to be represented); rescale X, e.g. divide it by "
            "np.abs(X).max()")
    return out


@declare_params({
    "X": ["array-like"],
    "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "init": [Options({"k-means++", "random"}), "array-like"],
    "random_state": ["random_state"],
    "n_jobs": ["n_jobs"],
    "executor": [Executor, None],
})
def kmeans(X: ArrayLike | sp.spmatrix, n_clusters: int, *, n_init: int = 10,
           max_iter: int = 300, tol: float = 1e-4,
           init: Literal["k-means++", "random"] | ArrayLike = "k-means++",
           random_state: int | np.random.Generator | None = None, n_jobs: int | None = None,
           executor: Executor | None = None) -> KMeansResult:
    """Lloyd's k-means with greedy k-means++ seeding and several restarts.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n, d)
        Samples in rows. Sparse input is used as CSR and never densified.
    n_clusters : int
        Number of clusters, ``1 <= n_clusters <= n``.
    n_init : int, default 10
        Number of seedings; the run with the lowest inertia is returned.
    max_iter : int, default 300
        Lloyd iterations per run (``0``: assign the samples to the initial centers).
    tol : float, default 1e-4
        Convergence when the total squared center shift is at most ``tol`` times the mean
        per-feature variance of ``X`` (scikit-learn's convention), or when the labels stop
        changing.
    init : {"k-means++", "random"} or array-like of shape (n_clusters, d), default "k-means++"
        Seeding; an array gives the initial centers (and forces ``n_init = 1``).
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Makes the seeding reproducible.
    n_jobs : int or None
        Threads (``None``: ``NUMBA_NUM_THREADS``). Several restarts run concurrently, one
        per thread; a single restart runs its kernels in parallel. The result does not
        depend on the number of threads.
    executor : concurrent.futures.Executor, optional
        Runs the Lloyd steps as row-block tasks on this executor (e.g. ``client.get_executor()``
        of a ``distributed.Client``, or a ``ProcessPoolExecutor``). Sent once per call: the
        scaled, centred rows, one group of consecutive parts (at least 16384 rows) per task
        (on Dask each group is scattered to one worker); once per Lloyd step: the centers
        (``c × d`` floats); each task returns its rows' labels and distances and its parts'
        ``c × d`` sums. The seeding, the center update and the choice among restarts stay in
        the calling process. The per-part sums are added in the in-process order, so the
        labels are identical to ``executor=None``.

    Returns
    -------
    KMeansResult
        ``labels``, ``objective`` (inertia per iteration of the best run), ``n_iter``,
        ``converged``, ``centers``, ``inertia``; unpacks as ``labels, centers, inertia``.

    Raises
    ------
    DegenerateSolutionError
        When the inertia exceeds the float64 range (``X`` of magnitude beyond ~1e154); the
        labels themselves are computed on a scaled copy and never overflow.

    Notes
    -----
    docs/algorithms.md §6. The samples are scaled by a power of two (exact) so that squared
    distances can neither overflow nor underflow: the labels do not depend on the scale of
    ``X``, and centers and inertia are scaled back exactly. All arithmetic is float64,
    whatever the input dtype (centers are returned in the input's dtype): one pass over
    ``X`` per iteration, and a single specialisation of each kernel, so float32 input
    compiles nothing new. One iteration costs 2 n d c flops in BLAS GEMMs on row blocks
    (2 nnz c for sparse ``X``) with the assignment and the per-cluster sums fused around
    them; memory O(n + parts · c · d) beyond a centred float64 copy of ``X`` (sparse input:
    a float64 copy of its values).

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> res = fastmv.kmeans(X, 2, random_state=0)
    >>> bool(res.labels[0] == res.labels[1] != res.labels[2] == res.labels[3])
    True
    >>> res.inertia, res.converged
    (1.0, True)
    """
    check_kmeans(X, n_clusters, n_init, numba.get_num_threads())
    X = check_array(X, "X", accept_sparse=True)
    n, d = X.shape
    n_clusters = check_n_clusters(n_clusters, n)
    rng = check_random_state(random_state)
    if isinstance(init, str):
        init_centers = None
    else:
        init_centers = check_array(init, "init", accept_sparse=False, dtype=np.float64)
        if init_centers.shape != (n_clusters, d):
            raise InvalidParameterError(f"init must have shape ({n_clusters}, {d}), "
                                        f"got {init_centers.shape}")
        n_init = 1

    data = _Data(X)
    tol_abs = data.mean_variance * tol
    # one generator per restart, drawn up front: the restarts are independent, so they can
    # run concurrently and still give the same result for any number of threads
    seeds = rng.integers(0, 2 ** 63 - 1, size=n_init)

    def run(r):
        if init_centers is not None:
            centers = np.ldexp(init_centers, data.exponent) - data.mean
        elif init == "random":
            run_rng = np.random.default_rng(seeds[r])
            centers = data.rows(np.sort(run_rng.choice(n, n_clusters, replace=False)))
        else:
            centers = kmeans_plusplus(data, n_clusters, np.random.default_rng(seeds[r]))
        if not np.all(np.isfinite(centers)):
            raise ValueError("init is too large in magnitude compared with X")
        return _lloyd(data, np.array(centers, dtype=np.float64), max_iter, tol_abs)

    with thread_limit(n_jobs), open_block_map(executor) as blocks:
        if blocks is not None:
            data.distribute(blocks, n_clusters)
        # several restarts on several threads, when they pay: each restart on one thread (no
        # per-step synchronisation); a single restart parallelises inside the kernels instead
        with task_map(_restart_threads(data, n_clusters, n_init)) as map_runs:
            runs = list(map_runs(run, range(n_init)))
    best = min(runs, key=lambda result: result[2])  # the first of equal inertias
    labels, centers, inertia, trace = best
    warn_if_degenerate(labels, n_clusters, "kmeans",
                       "X has fewer distinct points than that (identical rows); lower "
                       "n_clusters")
    centers = np.ldexp(centers + data.mean, -data.exponent).astype(X.dtype, copy=False)
    return KMeansResult(labels=labels,
                        objective=_caller_units(trace.objective, data.exponent, "inertia"),
                        n_iter=trace.n_iter, converged=trace.converged, centers=centers,
                        inertia=float(_caller_units(inertia, data.exponent, "inertia")))
