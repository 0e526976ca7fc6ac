"""CMVNMF without pairs: which factors every view returns, judged view by view.

Without any pair the objective is a sum of independent NMF fits, one per view, and the
lowest sum over the starts is no judge of any one view's partition: on the shared WebKB
views the fit of the worse partition of the sparse second view is the lower one, both
between the starts and between a start and its sweeps (docs/records/cmvnmf-nopairs.md). So
every view is judged on its own, over every start's k-means factors and NMF sweeps' factors,
by the mean cosine silhouette on the normalised view (optimised by neither method).
"""
from __future__ import annotations

import numpy as np

from ._start import cosine_silhouette


class ViewChoice:
    """Collects, start by start, every view's best-separated factors.

    :meth:`add` after each start (its :class:`Problem` holds the start's factors in
    ``problem.start`` and the sweeps' in ``U``, ``V``); :meth:`apply` writes every view's
    choice into the problem of the start kept (the lowest objective) and returns the record.
    Only one candidate per view is held besides the running start (no ``n_init`` copies).
    A ``"minmax"`` view is judged on its signed features' unit rows
    (``data.judge_views``): its origin is every feature's minimum, an artefact of the
    shift, and cosines about it do not measure the clusters of the signed features (on
    ProteinFold's 12 such views they preferred the worse labels).
    """

    def __init__(self, data):
        self.views = data.judge_views
        self.c = data.n_clusters
        m = len(data.views)
        self.scores = [[] for _ in range(m)]   # per view, per start: (start, sweeps)
        self.best = [None] * m                 # (silhouette, start, from_kmeans, U, V)

    def add(self, problem):
        """Score the start just run: its k-means partition and its sweeps' partition."""
        U0, V0 = problem.start
        index = len(self.scores[0]) if self.scores else 0
        for a, X in enumerate(self.views):
            s0 = cosine_silhouette(X, np.argmax(V0[a], axis=1), self.c)
            s1 = cosine_silhouette(X, np.argmax(problem.V(a), axis=1), self.c)
            self.scores[a].append((s0, s1))
            # the sweeps first: a start replaces them only when it separates strictly better
            for sil, from_kmeans, U, V in ((s1, False, problem.U[a], problem.V(a)),
                                           (s0, True, U0[a], V0[a])):
                if self.best[a] is None or sil > self.best[a][0]:
                    self.best[a] = (sil, index, from_kmeans, np.array(U, copy=True),
                                    np.array(V, copy=True))

    def apply(self, problem, kept):
        """Give the problem of start ``kept`` every view's choice (its own sweeps unless
        another candidate separates the view strictly better). Returns ``(start_kept,
        view_start, silhouettes)``: per view whether the factors are a k-means start, which
        start they come from, and the ``(n_init, 2)`` silhouettes (start, sweeps) of every
        start."""
        start_kept, view_start = [], []
        for a in range(len(self.views)):
            best = self.best[a]
            if not best[0] > self.scores[a][kept][1]:
                start_kept.append(False)
                view_start.append(int(kept))
                continue
            _, index, from_kmeans, U, V = best
            problem.U[a] = np.array(U, dtype=problem.dtype, order="C")
            problem.V(a)[...] = V
            start_kept.append(bool(from_kmeans))
            view_start.append(int(index))
        return start_kept, view_start, [np.array(s, dtype=np.float64) for s in self.scores]
