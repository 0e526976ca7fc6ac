"""MVMC: multi-view matrix completion with must-link / cannot-link constraints
(docs/algorithms.md §1; Zhao et al., "Multi-View Matrix Completion for Clustering with Side
Information").

The public function is a composition: :func:`_prepare` (validated data and parameters),
the view bases and the problem (:mod:`fastmv._mvmc._problem`), the shared driver
(:func:`fastmv._core._driver.iterate`), and the spectral step on the completed similarity
(:mod:`fastmv._mvmc._lowrank`), with checks that the answer has content.
"""
from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from numbers import Integral, Real
from typing import ClassVar, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._blocks._spectral import spectral_clustering
from .._core._driver import IterationInfo, caller_stacklevel, iterate, verbose_logging
from .._core._executor import open_block_map
from .._core._preprocessing import canonical_pairs, check_pair_conflicts
from .._core._result import Result
from .._core._threads import effective_n_jobs, task_map, thread_limit
from .._core._tuning import from_pairs, grid_search, pair_auc, pair_folds, tuning_rng
from .._core._validation import (
    Interval,
    Options,
    check_n_clusters,
    check_random_state,
    check_views,
    declare_params,
)
from ..exceptions import DegenerateSolutionWarning
from ._graph import knn_graph, must_link_weight, neighbour_count
from ._lowrank import ClippedLowRankOperator
from ._peak import check_mvmc
from ._problem import Problem, view_basis

__all__ = ["mvmc", "MVMCResult", "ClippedLowRankOperator"]


@dataclasses.dataclass(frozen=True, repr=False)
class MVMCResult(Result):
    """Result of :func:`mvmc`.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Spectral clustering (Ng–Jordan–Weiss) of the completed similarity ``S`` (of its kNN
        graph with ``graph="knn"``).
    objective : ndarray, shape (n_iter,)
        ``Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²`` after each
        outer iteration, at the new ``M`` and the ``S`` it was fitted to.
    n_iter : int
        Outer iterations (passes over ``S``) done.
    converged : bool
        Whether the relative change of the objective fell to ``tol``.
    M : list of ndarray, shape (k_v, k_v)
        The learned PSD matrices, one per view.
    Z : list of ndarray, shape (n, k_v)
        The view bases (top-``k_v`` left singular vectors, orthonormal columns).

    Methods
    -------
    similarity(dense=False)
        ``S = clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)`` as a :class:`ClippedLowRankOperator`
        (products only, O(n R) memory plus the sparse clipping correction) or, with
        ``dense=True``, as an ``n × n`` ndarray.
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.
    """

    M: list
    Z: list

    _shapes: ClassVar[dict] = {"M": [("k_v", "k_v")], "Z": [("n", "k_v")]}

    def similarity(self, dense: bool = False):
        """The completed similarity ``S`` (see the class docstring).

        Parameters
        ----------
        dense : bool, default False
            Return the ``n × n`` ndarray (O(n²) memory) instead of the linear operator.

        Returns
        -------
        ClippedLowRankOperator or ndarray of shape (n, n)
            ``S``.
        """
        op = ClippedLowRankOperator.from_views(self.Z, self.M)
        return op.toarray() if dense else op


class _Data(NamedTuple):
    views: list
    n_clusters: int
    pairs: tuple  # (i, j, s): pairs i < j and their observed similarity
    rng: np.random.Generator


def _prepare(X_list, n_clusters, must_link, cannot_link, random_state):
    """Validated views, cluster count, canonical constrained pairs and the random generator.

    Errors name the argument: views (shape, values, sparse structure), pairs out of range or
    self-pairs, a pair in both sets, no constraint at all.
    """
    views = check_views(X_list, "X_list", accept_sparse=True)
    n = views[0].shape[0]
    n_clusters = check_n_clusters(n_clusters, n)
    ml = canonical_pairs(must_link, "must_link", n)
    cl = canonical_pairs(cannot_link, "cannot_link", n)
    if ml.shape[0] == 0 and cl.shape[0] == 0:
        raise ValueError("must_link and cannot_link are both empty; MVMC needs at least one "
                         "pairwise constraint")
    check_pair_conflicts(ml, cl)
    both = np.vstack([ml, cl])
    s = np.concatenate([np.ones(ml.shape[0]), np.zeros(cl.shape[0])])
    order = np.lexsort((both[:, 1], both[:, 0]))
    pairs = (both[order, 0], both[order, 1], s[order])
    return _Data(views, n_clusters, pairs, check_random_state(random_state))


#: ``k="auto"``: constrained pairs per free entry of each ``M_v`` (records/mvmc.md "Basis rank").
PAIRS_PER_PARAMETER = 1.0
#: ``k="auto"`` never exceeds this (the fixed default before the pair rule).
_K_MAX = 100


def auto_rank(n_pairs, pairs_per_parameter=None):
    """Largest ``k ≤ 100`` with ``k (k + 1) / 2 ≤ n_pairs / pairs_per_parameter`` (at least 1;
    default :data:`PAIRS_PER_PARAMETER`)."""
    rho = PAIRS_PER_PARAMETER if pairs_per_parameter is None else pairs_per_parameter
    budget = n_pairs / rho
    k = int((np.sqrt(8.0 * budget + 1.0) - 1.0) // 2.0)
    while (k + 1) * (k + 2) / 2 <= budget:  # guard the float square root
        k += 1
    while k > 1 and k * (k + 1) / 2 > budget:
        k -= 1
    return max(1, min(_K_MAX, k))


# C1="auto": the constraint weights compared (old default first: it wins ties), the folds
# over the pairs and the looser tolerance of the fits behind the scores (docs/defaults.md,
# "Self-tuning"). The fits share the views' bases with the solve and skip its spectral step;
# their score (held-out pairs ranked by the completed similarity) settles long before the
# objective meets the solve's tol.
_TUNE_C1 = (100.0, 1000.0, 10.0)
_TUNE_FOLDS = 2
_TUNE_TOL = 1e-3


def _tune_C1(Z, pairs, C2, inner_iter, accelerated, step, map_, rng, max_iter, log):
    """``C1="auto"``: k-fold over the pairs; each candidate is fitted on the other folds and
    scored by the ROC AUC of the completed similarity ``Ā = (1/m) Σ_v Z_v M_v Z_vᵀ`` on the
    held-out must-links against the held-out cannot-links."""
    i, j, sim = pairs
    sup = from_pairs(np.column_stack([i, j])[sim == 1], np.column_stack([i, j])[sim == 0])
    fm, fc = pair_folds(sup, _TUNE_FOLDS, tuning_rng(rng))
    fold = np.empty(i.size, np.int64)
    fold[sim == 1], fold[sim == 0] = fm, fc

    def entries(M, rows, cols):
        out = np.zeros(rows.size)
        for Zv, Mv in zip(Z, M):
            out += np.einsum("ij,ij->i", Zv[rows] @ Mv, Zv[cols])
        return out / len(Z)

    def evaluate(C1, f):
        tr = fold != f
        if tr.all() or not tr.any():
            return np.nan, 0
        problem = Problem(Z, (i[tr], j[tr], sim[tr]), float(C1), float(C2), inner_iter,
                              accelerated, step, map_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            iterate(problem, solver="mvmc", max_iter=max_iter, tol=_TUNE_TOL, warn=False)
        te = ~tr
        a = entries(problem.M, i[te], j[te])
        return pair_auc(a[sim[te] == 1], a[sim[te] == 0]), 1

    return grid_search("C1", list(_TUNE_C1), evaluate, _TUNE_FOLDS,
                       method="AUC of the completed similarity on held-out pairs", log=log)


# normalize="auto": the schemes compared (old default first: it wins ties), the folds over
# the pairs and the outer iterations of each fit behind a score (docs/defaults.md,
# "Self-tuning"). The scheme changes the view bases, so each candidate gets its own bases
# (one SVD per view); a view that is sparse or has fewer nonzeros than _TEXT_DENSITY of its
# entries is text or counts, and when every view is, "l2" is kept without validation
# (scaling a rare term's column to unit variance multiplies it by about 1/its frequency).
_NORM_SCHEMES = ("l2", "zscore")
_NORM_FOLDS = 2
_NORM_FIT_ITER = 0
_TEXT_DENSITY = 0.1


def _is_text(X):
    if sp.issparse(X):
        return True
    return np.count_nonzero(X) < _TEXT_DENSITY * max(X.size, 1)


def _masked_similarity(Z, M, rows, cols):
    """Entries ``(rows, cols)`` of ``Ā = (1/m) Σ_v Z_v M_v Z_vᵀ``."""
    out = np.zeros(rows.size)
    for Zv, Mv in zip(Z, M):
        out += np.einsum("ij,ij->i", Zv[rows] @ Mv, Zv[cols])
    return out / len(Z)


def _pair_fold(pairs, n_folds, rng):
    """Fold of every constrained pair, stratified by kind."""
    i, j, sim = pairs
    sup = from_pairs(np.column_stack([i, j])[sim == 1], np.column_stack([i, j])[sim == 0])
    fm, fc = pair_folds(sup, n_folds, tuning_rng(rng))
    fold = np.empty(i.size, np.int64)
    fold[sim == 1], fold[sim == 0] = fm, fc
    return fold


def _tune_normalize(data, k, C1, C2, inner_iter, accelerated, step, map_, log):
    """``normalize="auto"``: every scheme's view bases (each from the generator's state at
    this point, so the solve with the chosen one is that of a call given it), scored by
    2-fold validation over the pairs: the start of the solve fitted to the other fold's
    pairs (``M_v`` the PSD part of ``Z_vᵀ S_ob Z_v``, scaled to fit them), ranked by the ROC
    AUC of ``Ā`` on the held-out must-links against the held-out cannot-links. Returns the
    chosen scheme, its bases and the record."""
    i, j, sim = data.pairs
    fold = _pair_fold(data.pairs, _NORM_FOLDS, data.rng)
    bases = {}
    for scheme in _NORM_SCHEMES:
        r = copy.deepcopy(data.rng)
        try:
            bases[scheme] = ([view_basis(X, k, r, f"X_list[{v}]", scheme)
                              for v, X in enumerate(data.views)], r)
        except ValueError:
            if scheme == _NORM_SCHEMES[0]:
                raise
            # a view with no varying feature has nothing left after z-scoring: not a
            # candidate (the old default still sees the rows' directions)
    if len(bases) == 1:
        Z, r = bases[_NORM_SCHEMES[0]]
        data.rng.bit_generator.state = r.bit_generator.state
        return _NORM_SCHEMES[0], Z, None

    def evaluate(scheme, f):
        tr = fold != f
        if tr.all() or not tr.any():
            return np.nan, 0
        Z = bases[scheme][0]
        problem = Problem(Z, (i[tr], j[tr], sim[tr]), float(C1), float(C2), inner_iter,
                          accelerated, step, map_)
        if _NORM_FIT_ITER:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                iterate(problem, solver="mvmc", max_iter=_NORM_FIT_ITER, tol=_TUNE_TOL,
                        warn=False)
        te = ~tr
        a = _masked_similarity(Z, problem.M, i[te], j[te])
        return pair_auc(a[sim[te] == 1], a[sim[te] == 0]), int(_NORM_FIT_ITER > 0)

    chosen, record = grid_search(
        "normalize", list(bases), evaluate, _NORM_FOLDS,
        method="AUC of the start's completed similarity on held-out pairs", log=log)
    Z, r = bases[chosen]
    data.rng.bit_generator.state = r.bit_generator.state
    return chosen, Z, record


#: the kNN graphs' neighbours per sample, in mean cluster sizes ``⌈n/c⌉`` (docs/records/mvmc.md,
#: "The spectral step's graph" and "The normalised graph")
_NEIGHBOURS_PER_CLUSTER = {"knn": 1, "knn-raw": 2}


def _cluster(S, data, n_init, n_jobs, C1, graph, executor):
    """Labels from the completed similarity (through a kNN graph unless ``graph="full"``);
    warns when ``S`` carries no cluster structure."""
    n, n_clusters = S.shape[0], data.n_clusters
    if S.rank == 0:
        warnings.warn(
            "the completed similarity S is identically zero (every M_v = 0), so every sample "
            "gets label 0: the trace penalty outweighs the fit to the must-links (with only "
            f"cannot-links, or too few must-links for C1={C1:g}). Raise C1 (or C2), or add "
            "must-link pairs", DegenerateSolutionWarning, stacklevel=caller_stacklevel())
        return np.zeros(n, dtype=np.int64)
    q = neighbour_count(n, n_clusters, _NEIGHBOURS_PER_CLUSTER[graph]) if graph != "full" else 0
    weight = must_link_weight(data.pairs, n) if graph == "knn" else 1.0
    W = (knn_graph(S._core.F, S._core.w, data.pairs, q, normalise=graph == "knn",
                   must_link_weight=weight) if q else S)
    labels = np.asarray(spectral_clustering(W, n_clusters, n_init=n_init, random_state=data.rng,
                                            n_jobs=n_jobs, executor=executor), dtype=np.int64)
    found = np.unique(labels).size
    if found < n_clusters:
        warnings.warn(
            f"the spectral step found only {found} of n_clusters={n_clusters} clusters: the "
            f"completed similarity S (rank {S.rank}) has too little cluster structure, usually "
            f"because C1={C1:g} is too small for the number of must-links. Raise C1 (or C2)",
            DegenerateSolutionWarning, stacklevel=caller_stacklevel())
    return labels


@declare_params({
    "X_list": ["views"], "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "must_link": ["pairs", None], "cannot_link": ["pairs", None],
    "C1": [Interval(Real, 0, None, closed="neither"), Options({"auto"})],
    "C2": [Interval(Real, 0, None, closed="neither")],
    "k": [Interval(Integral, 1, None, closed="left"), Options({"auto"})],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "inner_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")], "accelerated": ["boolean"],
    "normalize": [Options({"auto", "l2", "zscore"}), None],
    "step": [Options({"adaptive", "tight", "paper"})],
    "graph": [Options({"knn", "knn-raw", "full"})],
    "n_init": [Interval(Integral, 1, None, closed="left")], "random_state": ["random_state"],
    "verbose": ["verbose"], "progress": ["boolean"], "callback": [callable, None],
    "n_jobs": ["n_jobs"], "executor": [Executor, None],
})
def mvmc(X_list: Sequence[ArrayLike | sp.spmatrix], n_clusters: int,
         must_link: ArrayLike | None, cannot_link: ArrayLike | None, *,
         C1: float | Literal["auto"] = 100.0, C2: float = 1.0,
         k: int | Literal["auto"] = "auto",
         max_iter: int = 100, inner_iter: int = 3, tol: float = 1e-4, accelerated: bool = True,
         normalize: Literal["auto", "l2", "zscore"] | None = "auto",
         step: Literal["adaptive", "tight", "paper"] = "adaptive",
         graph: Literal["knn", "knn-raw", "full"] = "knn", n_init: int = 10,
         random_state: int | np.random.Generator | None = None,
         verbose: bool | int = False, progress: bool = False,
         callback: Callable[[IterationInfo], bool | None] | None = None, n_jobs: int | None = None,
         executor: Executor | None = None) -> MVMCResult:
    """Multi-view matrix completion with must-link / cannot-link constraints (MVMC).

    Completes the pairwise similarity ``S`` from a few observed entries (``1`` on
    must-links, ``0`` on cannot-links) under the assumption that each view's similarity lies
    in the span of its top left singular vectors, ``S_v = Z_v M_v Z_vᵀ`` with ``M_v ⪰ 0``,
    penalising ``Σ tr(M_v)`` (the nuclear norm), the misfit on the constraints and the
    disagreement between views; then clusters ``S`` spectrally (docs/algorithms.md §1).

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, each (n, d_v)
        The views, samples in rows (text views may stay sparse; they are never densified).
    n_clusters : int
        Number of clusters ``c`` for the final spectral step.
    must_link : array-like of int, shape (p, 2), or None
        Sample-index pairs in the same cluster. Order within a pair and repeated pairs do
        not matter. Out-of-range indices and self-pairs raise ``ValueError`` naming it.
    cannot_link : array-like of int, shape (q, 2), or None
        Sample-index pairs in different clusters (as ``must_link``). Either set may be empty
        or None, not both; a pair in both sets raises ``ValueError``.
    C1 : float or "auto", default 100.0
        Weight of the squared misfit on the constrained pairs. Larger values fit the
        constraints more tightly (and clip more entries of ``Ā``, which makes the passes
        over ``S`` denser). Too small a value lets the trace penalty win and ``S`` collapse
        to zero (a :class:`~fastmv.exceptions.DegenerateSolutionWarning` says so).
        ``"auto"``: chosen from ``(100, 1000, 10)`` by 2-fold validation over the pairs
        (stratified by kind): each candidate is fitted on one half (same bases, no spectral
        step, ``tol=1e-3``) and scored by the ROC AUC of the completed similarity on the
        held-out must-links against the held-out cannot-links; ties keep 100 (the value a
        sweep over the shared datasets supports, docs/records/mvmc.md). Cost: ``3 candidates × 2
        folds = 6`` fits of the outer loop at the looser tolerance beside the solve, each
        costing about as much as the solve's own outer loop (fits cut to a few iterations
        rank the candidates differently), so it is not the default: the outer loop is most
        of a solve's time, and six more exceed the budget of three solves that a default
        may spend on tuning (docs/defaults.md, "Self-tuning"). The choice and the scores
        are in ``result.tuning``. A number skips the tuning.
    C2 : float, default 1.0
        Weight of the disagreement ``‖Z_v M_v Z_vᵀ − S‖²`` between each view and ``S``.
    k : int or "auto", default "auto"
        Rank of each view basis; per view ``k_v = min(k, d_v, n − 1)``, lowered further to
        the numerical rank of ``X_v``. ``"auto"``: ``k = min(100, k_Ω)`` with ``k_Ω`` the
        largest rank whose PSD matrix ``M_v`` has no more free entries than there are
        constrained pairs per :data:`PAIRS_PER_PARAMETER`, ``k_Ω(k_Ω + 1)/2 ≤ |Ω| / ρ``
        (``|Ω|`` distinct pairs): with few pairs a wide basis lets ``S`` fit the constraints
        without generalising from them (records/mvmc.md "Basis rank"). Free: it reads only
        the number of pairs.
    max_iter : int, default 100
        Maximum number of outer iterations (each recomputes ``S`` once).
    inner_iter : int, default 3
        Projected-gradient / FISTA steps on every ``M_v`` per outer iteration. With the
        adaptive step each inner problem is well conditioned, so a few steps per pass over
        ``S`` cost less in total than solving it further (docs/records/mvmc.md, "Time to solution").
    tol : float, default 1e-4
        Stop when the objective's relative change between outer iterations is ``<= tol``,
        never on an iteration after which the extrapolation is restarted (its change
        measures the overshoot, not convergence; ``tol=0`` runs ``max_iter`` iterations
        unless the objective stops changing exactly). Past ``1e-4`` the labels move no more
        than the spectral step's own k-means restarts move them (records/mvmc.md, "Stopping
        rule"); a smaller value buys a more accurate ``M``.
    accelerated : bool, default True
        FISTA on the outer iterations (adaptive restart) and monotone FISTA on the inner
        steps. ``False`` is the paper's alternation with plain projected gradient steps; its
        objective never increases (up to the float32 rounding of the passes over ``S``, see
        Notes).
    normalize : {"auto", "l2", "zscore"} or None, default "auto"
        Preprocessing of every view before its SVD. ``"l2"``: every sample (row) to unit
        Euclidean norm (zero rows stay zero). ``"zscore"``: every feature centred and scaled
        to unit variance (a sparse view is scaled only, never densified; constant features
        become zero). ``None``: the views as given. ``"auto"``: ``"l2"`` when every view is
        sparse or has under 10 % nonzeros (text, counts); otherwise ``"l2"`` or
        ``"zscore"`` (one for every view), chosen by 2-fold validation over the pairs
        (stratified by kind): with each scheme's bases, the solve's start is fitted to one
        half of the pairs (``M_v`` the PSD part of ``Z_vᵀ S_ob Z_v``, scaled to fit them, a
        closed form) and scored by the ROC AUC of the completed similarity on the held-out
        must-links against the held-out cannot-links; ``"zscore"`` replaces ``"l2"`` only
        if its gain exceeds its standard error (docs/defaults.md, "Self-tuning"). Cost: one
        more SVD per view and ``2 schemes × 2 folds = 4`` closed-form starts, no extra
        solve (no outer iteration); the solve then runs with the chosen scheme's bases, so
        its result is that of a call given that scheme (``"l2"`` without validation when a
        view has no varying feature, so nothing is left of it after z-scoring). The choice
        and the scores are in ``result.tuning``. A value skips the tuning.
    step : {"adaptive", "tight", "paper"}, default "adaptive"
        Step ``1/L`` of the M-steps. ``"adaptive"``: ``L = 2(C1 λ_v + C2)`` with ``λ_v`` the
        largest curvature of the constraint term ``M ↦ ‖R_Ω(Z_v M Z_vᵀ)‖²`` per unit
        ``‖M‖²``, estimated by 2 power iterations (2 gradient evaluations per view, once)
        and raised whenever a step meets more curvature (the objective is quadratic, so
        each step measures its own curvature exactly: backtracking costs no extra
        evaluation unless it fires). With few pairs ``λ_v`` is far below 1 (0.01–0.08 on
        the shared data), so the steps are 10–50× longer than ``"tight"``'s and the
        solve needs about half the outer iterations (docs/records/mvmc.md, "Time to solution").
        ``"tight"``: ``L = 2(C1 + C2)``, the global bound (``λ_v ≤ 1``). ``"paper"``: the
        paper's ``L = 2(C1 ‖Z_v‖_F⁴ + C2) = 2(C1 k_v² + C2)``, ``k_v²`` times smaller steps
        than ``"tight"``. All reach the same optimum.
    graph : {"knn", "knn-raw", "full"}, default "knn"
        Graph of the final spectral step. ``"knn"``: every sample's ``q = ⌈n/c⌉`` (the mean
        cluster size) most similar samples by the normalised similarity
        ``Ŝ_ij = Ā_ij / √((Ā_ii + m)(Ā_jj + m))`` (``m`` the median of ``Ā``'s diagonal),
        weighted by ``Ŝ`` clipped to ``[0, 1]``, with the observed entries set to
        ``ω = max(1, 5 d)`` (must-link; ``d = 2 |must_link| / n``, the must-links per
        sample) and ``0`` (cannot-link), symmetrised. Once a sample has a must-link or more
        on average, the must-links of a class chain most of it together, and these exact
        edges then outweigh the estimated ones (3Sources, 169 documents with 2.4 must-links
        each: ACC 0.98 against 0.94 with ``ω = 1``); with ``d ≤ 0.2`` (``ω = 1``) they
        are isolated pairs, which a heavy edge would cut out of their clusters
        (docs/records/mvmc.md, "The must-link weight"). ``Ā`` is an inner product in a
        learned metric, so a sample with a large self-similarity ``Ā_ii`` is among every
        row's largest entries; dividing by the self-similarities ranks by angle, and ``m``
        keeps a sample the bases barely represent from being inflated (100 classes of 16
        leaves: ACC 0.85 against 0.79 with ``"knn-raw"``; docs/records/mvmc.md, "The
        normalised graph"). ``"knn-raw"``: the
        ``q = 2⌈n/c⌉`` most similar samples by ``S`` itself, weighted by ``S``, must-links
        ``1``. Both use
        ``S`` itself when ``q ≥ n/2``. With many small clusters the global mass of the
        completed ``S`` blurs the embedding (docs/records/mvmc.md, "The spectral step's
        graph"). One pass over ``S`` (O(n² R)) and O(n q) memory, ``q`` lowered so that
        ``n q ≤ 2**24``. ``"full"``: ``S`` (the paper). ``result.similarity()`` is ``S``
        either way.
    n_init : int, default 10
        k-means restarts of the final spectral step (the lowest inertia is kept).
    random_state : None, int or numpy.random.Generator
        Seeds the randomized SVD and the spectral step.
    verbose : bool or int, default False
        Log the objective after every outer iteration (logger ``"fastmv"``).
    progress : bool, default False
        Show a progress bar over the outer iterations (needs tqdm).
    callback : callable, optional
        ``callback(info)`` after every outer iteration with a
        :class:`fastmv._core._driver.IterationInfo`; ``info.state`` holds ``"M"`` (the current PSD
        matrices, read-only), ``"objective"``, ``"clip_nnz"`` (nonzeros of the clipping
        correction ``N``), ``"rank"`` (rank of ``Ā``) and ``"restarted"`` (whether the
        outer extrapolation was restarted after this iteration). Returning ``True`` or raising
        ``StopIteration`` stops the solve (``converged=False``).
    n_jobs : int or None
        Threads (default: Numba's setting). The row blocks of each pass over ``S`` and the
        views' M-steps run as tasks on ``n_jobs`` Python threads, each with one BLAS and one
        Numba thread; the result is the same for every thread count.
    executor : concurrent.futures.Executor, optional
        Runs the row blocks of every pass over ``S`` (the solver's, and the spectral step's
        products with ``S``) and the final k-means' Lloyd steps as tasks on this executor,
        e.g. ``client.get_executor()`` of a ``distributed.Client``, or a
        ``ProcessPoolExecutor``. Sent once per call: the stacked bases ``U`` (n × K floats);
        once per outer iteration: the factors of ``Ā`` (n × R floats and R weights); once per
        spectral product: the block of vectors; per task: a row offset. Each task returns
        ``m`` matrices ``k_v × k_v`` (solver passes) or its rows of ``N X`` (products). The
        views' M-steps, the factorisations and the eigensolver stay in the calling process.
        Results are reduced in a fixed order, so the labels are identical to
        ``executor=None`` (the in-process thread path). A Dask executor gets the broadcast
        data scattered to every worker; other executors get plain references (a process pool
        pickles them with each task). See docs/dask.md.

    Returns
    -------
    MVMCResult
        ``labels``, ``objective``, ``n_iter``, ``converged``, ``M``, ``Z``,
        ``similarity(dense=False)`` (``S`` as a LinearOperator, or dense) and ``tuning``
        (the records of ``normalize="auto"`` and ``C1="auto"``; ``None`` when neither was
        tuned).

    Warns
    -----
    DegenerateSolutionWarning
        When ``S`` is identically zero or the spectral step finds fewer than ``n_clusters``
        clusters; the message names the cause and the parameter to change.
    ConvergenceWarning
        When ``max_iter`` outer iterations ran without reaching ``tol``.

    Notes
    -----
    The paper initialises ``M_v = Z_vᵀ S_ob Z_v``, which is not PSD (``S_ob`` has a zero
    diagonal); it is projected onto the PSD cone here so that every iterate is feasible, and
    scaled by the factor that best fits the constrained pairs (a closed form; the problem is
    convex, so the start changes the path, not the optimum; docs/records/mvmc.md).
    All arithmetic is float64 (float32 views are converted), except the passes over ``S``
    inside the outer loop when ``n`` exceeds one tile (384): their GEMMs run in float32,
    which changes ``T_v = Z_vᵀ S Z_v`` by float32 rounding only and halves the time of the
    dominant cost; the final ``S``, the spectral step and ``similarity()`` are float64. The
    bases do not depend on the scale of a view (``c · X_v`` gives the same result for any
    ``c > 0``).

    Cost, with ``n`` samples, ``m`` views, ``K = Σ k_v``, ``R = Σ rank(M_v) ≤ K``, ``n_Ω``
    samples that occur in a constraint:

    - SVDs: O(nnz(X_v) k q) per view (randomized, ``q = 8`` passes).
    - Per outer iteration: one pass over ``S``, O(n² R / 2) flops plus O(nnz(N) K), at most
      O(n² K / 2), for the clipping correction; ``inner_iter`` gradient steps per view, each
      O(|Ω| k + n_Ω k² + k³).
    - Memory: O(n (K + R) + n_jobs · 384 (384 + K)); no ``n × n`` array is ever formed.
    - Spectral step: products with :class:`ClippedLowRankOperator` only (O(n R + nnz(N))
      each while ``N`` is small enough to cache).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import mvmc
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 10)
    >>> views = [np.eye(2)[y] @ rng.normal(size=(2, 5)) * 3 + rng.normal(size=(20, 5))
    ...          for _ in range(2)]
    >>> res = mvmc(views, 2, [[0, 1], [10, 11], [2, 5]], [[0, 10], [3, 15]], k=4,
    ...            random_state=0)
    >>> bool((res.labels[:10] == res.labels[0]).all() and res.labels[10] != res.labels[0])
    True
    """
    data = _prepare(X_list, n_clusters, must_link, cannot_link, random_state)
    return _solve(data, C1=C1, C2=C2, k=k, max_iter=max_iter, inner_iter=inner_iter, tol=tol,
                  accelerated=accelerated, normalize=normalize, step=step, graph=graph,
                  n_init=n_init,
                  verbose=verbose, progress=progress, callback=callback, n_jobs=n_jobs,
                  executor=executor)


def _solve(data, *, C1, C2, k, max_iter, inner_iter, tol, accelerated, normalize, step,
           graph, n_init, verbose, progress, callback, n_jobs, executor):
    """The view bases, the outer iterations driven by the shared driver, then the spectral
    step; the result."""
    if isinstance(k, str):
        k = auto_rank(data.pairs[0].size)
    tuning = None
    if normalize == "auto" and all(_is_text(X) for X in data.views):
        normalize = "l2"
    check_mvmc(data.views, k, data.n_clusters, effective_n_jobs(n_jobs), normalize == "auto")
    with thread_limit(n_jobs) as n_threads:
        if normalize != "auto":
            Z = [view_basis(X, k, data.rng, f"X_list[{v}]", normalize)
                 for v, X in enumerate(data.views)]
        with open_block_map(executor) as blocks:
            with task_map(n_threads) as map_:
                if normalize == "auto":
                    with verbose_logging(verbose) as log:
                        normalize, Z, record = _tune_normalize(
                            data, k, 100.0 if isinstance(C1, str) else C1, C2, inner_iter,
                            bool(accelerated), step, map_, log)
                    tuning = {"normalize": record} if record is not None else None
                if isinstance(C1, str):
                    with verbose_logging(verbose) as log:
                        C1, record = _tune_C1(Z, data.pairs, C2, inner_iter, bool(accelerated),
                                              step, map_, data.rng, max_iter, log)
                    tuning = dict(tuning or {}, C1=record)
                problem = Problem(Z, data.pairs, float(C1), float(C2), inner_iter,
                                  bool(accelerated), step, map_, blocks)
                trace = iterate(problem, solver="mvmc", max_iter=max_iter, tol=tol,
                                callback=callback, verbose=verbose, progress=progress)
            labels = _cluster(problem.similarity(), data, n_init, n_jobs, C1, graph, executor)
    return MVMCResult(labels=labels, objective=trace.objective, n_iter=trace.n_iter,
                      converged=trace.converged, M=problem.M, Z=Z, tuning=tuning)
