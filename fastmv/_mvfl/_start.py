"""MVFL's starting indicator ``F``: k-means (its clusters matched to the labelled samples), label
spreading on a kNN graph, and the ``init="auto"`` choice between them judged on held-out
labels (docs/defaults.md, "Self-tuning")."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core._tuning import (
    from_labels,
    grid_search,
    label_folds,
    pair_score,
    tuning_rng,
)
from ._data import Data

# init="auto" with labels: the label-spreading start (docs/defaults.md, "Self-tuning") uses
# a symmetric kNN graph of this many neighbours and this propagation weight (the values of
# scikit-learn's LabelSpreading(kernel="knn")), built in row blocks, and this many sweeps:
# each sweep contracts the distance to the fixed point by α (‖S‖ <= 1), so after 12 it is
# below 2 α^12 < 1e-8 of the scores, far below what could change a label (scikit-learn's
# cap of 30 sweeps only costs time).
_SPREAD_NEIGHBOURS = 7
_SPREAD_ALPHA = 0.2
_SPREAD_SWEEPS = 12
_SPREAD_BLOCK = 512
# init="auto": folds over the labels (leave-one-out up to this many labels), so that each
# start is rebuilt from nearly all the labels, as the solve's start will be
TUNE_INIT_FOLDS = 100
# init="auto" considers spreading only up to this many samples: its kNN graph costs
# O(n² d), while the solve on the direct route grows linearly in n
SPREAD_MAX_N = 20000
# k-means restarts behind each initial F (init="k-means++"), and when d <= n (the direct W
# step of solver="auto"). There the fit binds: the solve and the anchor validated on the
# labels move F from the start toward what the features represent, and the best of five
# restarts gave the quality of the best of ten on the shared data with d <= n, at half the
# cost (docs/records/mvfl-speed.md); with d > n the fit is exact and the start is kept closer.
_KMEANS_N_INIT = 10
_KMEANS_N_INIT_DIRECT = 5
# k-means runs on the rows' coordinates in their span when d exceeds this many times n: the
# n × n Gram and its factor (n² d + n³/3) then cost less than the d − n columns they save
# in every distance of ten k-means runs.
_KMEANS_REDUCE = 1.25


def _match_clusters(km, rows, classes, c):
    """Renumber k-means clusters to agree best with the known classes.

    The label prior ties column ``k`` of ``F`` to class ``k`` whereas k-means numbers its
    clusters arbitrarily: the permutation maximising the labelled samples whose cluster id
    equals their class (an assignment problem on the ``c × c`` contingency table) is applied.
    """
    return _Matcher(km, c)(rows, classes)


class _Matcher:
    """:func:`_match_clusters` for one k-means clustering and many subsets of the labels.

    The permutation depends only on the contingency table, and the folds of the start's
    tuning (leave-one-out over the labels) produce few distinct tables: a held-out sample
    removes one count from its (cluster, class) cell, so all held-out samples of one cell
    give one table. Each distinct table is solved once (the same matching, so the same
    permutation, as solving it every time).
    """

    def __init__(self, km, c):
        self.km, self.c, self._done = km, c, {}

    def __call__(self, rows, classes):
        table = np.zeros((self.c, self.c))
        np.add.at(table, (self.km[rows], classes), 1.0)
        key = table.tobytes()
        col = self._done.get(key)
        if col is None:
            # import cost: scipy.sparse.csgraph, much cheaper than scipy.optimize, and only
            # when labels are given (docs/records/perf.md "Figures behind the code's choices")
            from scipy.sparse.csgraph import min_weight_full_bipartite_matching  # noqa: PLC0415

            cost = sp.csr_matrix(table.max() + 1.0 - table)  # all entries > 0: complete graph
            col = self._done[key] = min_weight_full_bipartite_matching(cost)[1]
        return col[self.km].astype(np.int64)


def knn_graph(X):
    """Symmetric 0/1 kNN graph (``_SPREAD_NEIGHBOURS`` per row, self excluded) as CSR,
    from squared distances computed one block of rows at a time (no ``n × n`` array)."""
    n = X.shape[0]
    k = min(_SPREAD_NEIGHBOURS, n - 1)
    if sp.issparse(X):
        Xp = X
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        # dense rows: the inner products in single precision (half the time of the O(n² d)
        # products; a neighbour changes only where two distances agree to ~1e-7 of the
        # rows' norms, a tie for a kNN graph), on the rows divided by the largest entry
        # (the neighbours are those of X; nothing overflows or underflows in float32)
        top = float(np.abs(X).max(initial=0.0)) if X.size else 0.0
        Xs = X / top if np.isfinite(top) and top > 0 else np.asarray(X, np.float64)
        sq = np.einsum("ij,ij->i", Xs, Xs)
        Xp = Xs.astype(np.float32)
    cols = np.empty((n, max(k, 0)), np.int64)
    for start in range(0, n, _SPREAD_BLOCK):
        stop = min(start + _SPREAD_BLOCK, n)
        G = Xp[start:stop] @ Xp.T
        D = sq[start:stop, None] + sq[None, :] - 2.0 * (G.toarray() if sp.issparse(G)
                                                        else np.asarray(G, np.float64))
        D[np.arange(stop - start), np.arange(start, stop)] = np.inf
        if k:
            cols[start:stop] = np.argpartition(D, k - 1, axis=1)[:, :k]
    A = sp.csr_matrix((np.ones(n * k), cols.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n)) if k else sp.csr_matrix((n, n))
    return ((A + A.T) > 0).astype(np.float64).tocsr()


def _spread_operator(graph):
    """``S = D^{-1/2} A D^{-1/2}`` of the kNN graph (isolated rows stay zero)."""
    deg = np.asarray(graph.sum(axis=1)).ravel()
    inv = np.zeros(graph.shape[0])
    np.divide(1.0, np.sqrt(deg), out=inv, where=deg > 0)
    return (sp.diags(inv) @ graph @ sp.diags(inv)).tocsr()


def _sweeps(S, Y):
    """``_SPREAD_SWEEPS`` of ``F ← α S F + (1 − α) Y`` from ``F = Y``: a linear map of
    ``Y`` (the same one for every column)."""
    F = Y.copy()
    for _ in range(_SPREAD_SWEEPS):
        F = _SPREAD_ALPHA * (S @ F) + (1.0 - _SPREAD_ALPHA) * Y
    return F


def _unit_columns(n, idx):
    E = np.zeros((n, len(idx)))
    E[np.asarray(idx, dtype=np.int64), np.arange(len(idx))] = 1.0
    return E


def _spread(graph, rows, classes, c):
    """Label spreading (Zhou et al. 2004) on ``graph``: ``F ← α S F + (1 − α) Y`` with
    ``S = D^{-1/2} A D^{-1/2}``; returns the class scores ``(n, c)``."""
    n = graph.shape[0]
    Y = np.zeros((n, c))
    Y[rows, classes] = 1.0
    return _sweeps(_spread_operator(graph), Y)


class FoldSpreader:
    """Label spreading from subsets of the labels without one spreading per subset.

    Spreading is linear in the seeds, so the scores from the labelled samples ``tr`` are
    ``G[:, tr] @ onehot(classes[tr])`` with ``G`` the spreading of each labelled sample's
    unit column, computed once and kept transposed (``l`` columns instead of ``c`` per fold:
    leave-one-out over 100 labels no longer costs 100 spreadings of ``c`` columns, which
    dominated a 100-class solve). The sums are of nonnegative terms, so a row no seed reaches
    is exactly zero.
    """

    def __init__(self, graph, rows, classes, c):
        self.S = _spread_operator(graph)
        self.rows, self.classes, self.c = rows, classes, c
        self.GT = np.ascontiguousarray(_sweeps(self.S, _unit_columns(graph.shape[0], rows)).T)
        self._seeded = {}  # sample -> the spreading of its unit column (_seed_columns)

    def labels(self, tr, fallback):
        rows, classes, c = self.rows[tr], self.classes[tr], self.c
        # the class indicator of the kept labels, transposed (c × kept), as CSC: the product
        # adds each kept sample's spreading to its class's row in the samples' order
        onehot_t = sp.csc_matrix((np.ones(rows.size), classes, np.arange(rows.size + 1)),
                                 shape=(c, rows.size))
        F = np.asarray(onehot_t @ self.GT[tr]).T
        if np.unique(classes).size < c:
            all_rows, all_classes = _seed_missing(F, rows, classes, c, fallback)
            seeds = all_rows[rows.size:]
            if seeds.size:
                np.add.at(F.T, all_classes[rows.size:], self._seed_columns(seeds).T)
        return _labels_or_fallback(F, fallback)

    def _seed_columns(self, seeds):
        """The spreading of each seed's unit column, ``(n, len(seeds))``. The sweeps treat
        every column alike and apart (a sparse product and elementwise updates), so a column
        spread once is reused bit for bit by the folds that pick the same seed."""
        new = [i for i in dict.fromkeys(seeds.tolist()) if i not in self._seeded]
        if new:
            Gs = _sweeps(self.S, _unit_columns(self.S.shape[0], new))
            self._seeded.update((i, Gs[:, t]) for t, i in enumerate(new))
        return np.column_stack([self._seeded[i] for i in seeds.tolist()])


def _labels_or_fallback(F, fallback):
    out = np.argmax(F, axis=1).astype(np.int64)
    unreached = F.max(axis=1) <= 0
    out[unreached] = fallback[unreached]
    return out


def _seed_missing(F, rows, classes, c, fallback):
    """Seeds for the classes no labelled sample names, so that spreading can grow them.

    Class ``k`` without a label takes one seed: the sample of its matched k-means cluster
    (``fallback == k``) that the spreading from the known classes covers worst (lowest
    ``max_j F[i, j]`` on unlabelled rows), i.e. the part of the data the labels explain
    least; an empty cluster takes the worst-covered sample overall. Returns the extended
    ``(rows, classes)``.
    """
    missing = np.setdiff1d(np.arange(c), classes)
    if missing.size == 0:
        return rows, classes
    cover = F.max(axis=1).astype(np.float64)
    cover[rows] = np.inf  # labelled rows keep their class
    new_rows = []
    for k in missing:
        members = np.flatnonzero(fallback == k)
        pool = members[np.isfinite(cover[members])] if members.size else members
        if pool.size == 0:
            pool = np.flatnonzero(np.isfinite(cover))
        if pool.size == 0:
            break
        i = pool[np.argmin(cover[pool])]
        new_rows.append(i)
        cover[i] = np.inf  # one sample seeds one class
    new_rows = np.asarray(new_rows, dtype=np.int64)
    return (np.concatenate([rows, new_rows]),
            np.concatenate([classes, missing[:new_rows.size].astype(np.int64)]))


def _spread_labels(graph, rows, classes, c, fallback):
    """Labels from spreading; classes without a label are seeded first
    (:func:`_seed_missing`); rows the labels never reach keep ``fallback``."""
    F = _spread(graph, rows, classes, c)
    if np.unique(classes).size < c:
        rows, classes = _seed_missing(F, rows, classes, c, fallback)
        F = _spread(graph, rows, classes, c)
    return _labels_or_fallback(F, fallback)


def tune_init(X, data: Data, km, log, spreader=None):
    """``init="auto"`` with labels: the start — k-means matched to the labels, or label
    spreading on a kNN graph of the normalised views — whose labels predict the held-out
    labelled samples best (5 folds, stratified by class; each start is rebuilt from the
    other folds' labels, the k-means clustering itself is shared). Returns ``(chosen,
    record, spreader)``: the :class:`FoldSpreader` serves every later spreading start.
    ``spreader``: the one of ``X`` and these labels when already built (by the tuning of
    ``normalize``)."""
    prior = data.prior
    rows, classes = prior["rows"], prior["classes"]
    sup = from_labels(rows, classes)
    n_folds = min(rows.size, TUNE_INIT_FOLDS)
    folds = label_folds(sup, n_folds, tuning_rng(data.rng))
    if spreader is None:
        spreader = FoldSpreader(knn_graph(X), rows, classes, data.c)
    match = _Matcher(km, data.c)
    fold_pairs = {}  # the held-out pairs of a fold, the same for both candidates

    def held_out_pairs(te):
        # pairs (held-out sample, every other labelled sample): the start's partition is
        # judged, not its class names (the clustering's accuracy is permutation-free)
        i = np.repeat(rows[te], rows.size)
        j = np.tile(rows, int(te.sum()))
        ci = np.repeat(classes[te], rows.size)
        cj = np.tile(classes, int(te.sum()))
        keep = i != j
        pairs = np.column_stack([i, j])[keep]
        same_class = (ci == cj)[keep]
        return pairs[same_class], pairs[~same_class]

    def evaluate(init, f):
        tr, te = folds != f, folds == f
        if not te.any() or not tr.any():
            return np.nan, 0
        pred = (km if init == "k-means++" else
                spreader.labels(tr, match(rows[tr], classes[tr])))
        if f not in fold_pairs:
            fold_pairs[f] = held_out_pairs(te)
        must, cannot = fold_pairs[f]
        return pair_score(lambda p: pred[p[:, 0]] == pred[p[:, 1]], must, cannot), 0

    # spreading grows every class from its seeds; a class without a label is seeded from
    # its matched k-means cluster (_seed_missing), so spreading is a candidate either way
    candidates = ["k-means++", "spread"]
    chosen, record = grid_search("init", candidates, evaluate, n_folds,
                                 method="held-out labelled pairs honoured by the start's "
                                        "partition", log=log)
    return chosen, record, spreader


def _onehot_start(labels, data: Data):
    n, c = data.n, data.c
    if data.f_step == "paper":
        F0 = np.full((n, c), 0.2)
        F0[np.arange(n), labels] += 1.0
        return F0
    F0 = np.zeros((n, c))
    F0[np.arange(n), labels] = 1.0
    return F0 / np.sqrt(np.maximum(F0.sum(axis=0), 1.0))


def row_space_coordinates(X):
    """``Y`` (``n × r``, ``r ≤ n``) with ``Y Yᵀ = X Xᵀ`` up to rounding: the rows of ``X`` in
    an orthonormal basis of their span, so every distance and inner product between rows,
    and with them every k-means step, is that of ``X``. From the Cholesky factor of the Gram
    ``X Xᵀ`` (backward stable: ``L Lᵀ = X Xᵀ + E`` with ``‖E‖`` at the rounding level of
    ``‖X Xᵀ‖``, the same error as the distances k-means forms from inner products anyway),
    or, when the rows are linearly dependent, from its eigendecomposition (nonnegative
    eigenvalues above the rounding level kept)."""
    import scipy.linalg as sla  # noqa: PLC0415 (loaded with the W step anyway)

    G = X @ X.T
    G = np.ascontiguousarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    try:
        return np.ascontiguousarray(sla.cholesky(G, lower=True, check_finite=False))
    except np.linalg.LinAlgError:
        pass
    w, V = np.linalg.eigh(G)
    keep = w > max(w[-1], 0.0) * G.shape[0] * np.finfo(np.float64).eps
    if not keep.any():  # every row zero (one sample, centred): one zero coordinate
        return np.zeros((G.shape[0], 1))
    return np.ascontiguousarray(V[:, keep] * np.sqrt(w[keep]))


def kmeans_labels(X, data: Data, rng, n_jobs):
    """The start's k-means labels (``_KMEANS_N_INIT`` restarts, ``_KMEANS_N_INIT_DIRECT``
    when ``d <= n``). With more features than samples, k-means runs on the rows' coordinates
    in their span (:func:`row_space_coordinates`, ``n`` columns instead of ``d``): the same
    distances, so the same algorithm at a fraction of the cost."""
    from .._blocks._kmeans import kmeans  # noqa: PLC0415 (circular import at module load)

    n, d = X.shape
    dense_size = X.nnz if sp.issparse(X) else n * d  # Y (n × n) may not outgrow sparse X
    n_init = _KMEANS_N_INIT_DIRECT if d <= n else _KMEANS_N_INIT
    if d > _KMEANS_REDUCE * n and n * n <= dense_size:
        X = row_space_coordinates(X)
    return kmeans(X, data.c, n_init=n_init, random_state=rng, n_jobs=n_jobs).labels


def initial_F(X, data: Data, rng, n_jobs, km=None, graph=None):
    """The starting indicator: k-means one-hot (+ 0.2 for the paper's step, orthonormal
    columns for the monotone one), label spreading one-hot, uniform random entries, or the
    given array. ``km``: the k-means labels when already computed; ``graph``: the kNN graph
    of label spreading when already built, or the :class:`FoldSpreader` of the tuning of
    ``init`` (whose labelled rows include those of ``data``), which spreads from any subset
    of its labels without sweeps of its own."""
    n, c, prior = data.n, data.c, data.prior
    if not isinstance(data.init, str):
        return data.init.copy()
    has_labels = prior["kind"] == "labels" and prior["rows"].size > 0
    if data.init == "random":
        F0 = rng.uniform(0.0, 1.0, size=(n, c))
        if has_labels and data.f_step == "paper":
            F0[prior["rows"]] = 0.2
            F0[prior["rows"], prior["classes"]] += 1.0
        return F0
    if km is None:
        km = kmeans_labels(X, data, rng, n_jobs)
    if has_labels:
        km = _match_clusters(km, prior["rows"], prior["classes"], c)
        if data.init == "spread" and isinstance(graph, FoldSpreader):
            km = graph.labels(np.isin(graph.rows, prior["rows"]), km)
        elif data.init == "spread":
            graph = knn_graph(X) if graph is None else graph
            km = _spread_labels(graph, prior["rows"], prior["classes"], c, km)
        km[prior["rows"]] = prior["classes"]
    return _onehot_start(km, data)
