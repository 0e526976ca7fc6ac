"""MVFL: multi-view clustering with joint view/feature selection and partially constrained
cluster labels (Yin, Zhang, Wu, Li, Pattern Recognition 2019; docs/algorithms.md §2).

The solver alternates the IRLS reweighting (``P_k``, ``Q`` from the group and row norms of
``W``, guarded as ``sqrt(‖·‖² + ε²)``), the ``W, b`` step (:mod:`fastmv._mvfl._wstep`) and the
``F`` step (:mod:`fastmv._mvfl._fstep`). This module holds the input preparation
(:func:`_prepare`; the per-view scaling is in :mod:`fastmv._mvfl._normalize`), the problem
object the shared driver iterates (:class:`Problem`), the restarts and the public function.
Notes on defaults and measurements: ``docs/records/mvfl.md``.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from fastmv.kernels.mvfl import irls_diagonal, weight_norms

from .._core._driver import (
    IterationInfo,
    Step,
    caller_stacklevel,
    iterate,
    state_view,
    verbose_logging,
)
from .._core._preprocessing import canonical_pairs, check_pair_conflicts
from .._core._result import Result, untuned_record
from .._core._threads import thread_limit
from .._core._validation import (
    Interval,
    Options,
    check_array,
    check_n_clusters,
    check_partial_labels,
    check_random_state,
    check_views,
    declare_params,
)
from ..exceptions import ConvergenceWarning, DegenerateSolutionWarning, InvalidParameterError
from ._anchor import anchor_tuned, with_tuned_anchor
from ._data import Data
from ._fstep import (
    N_INNER,
    N_INNER_WOODBURY,
    FTerm,
    ReducedTerm,
    empty_csr,
    monotone_f_step,
    pair_csr,
    paper_f_step,
    paper_objective,
)
from ._normalize import (
    normalized_data,
    tune_normalize,
)
from ._peak import check_mvfl
from ._settle import QUIET_RULES, QUIET_RULES_DIRECT, SETTLE_RTOL, Settle
from ._start import SPREAD_MAX_N, initial_F, kmeans_labels, tune_init
from ._wstep import WStep, choose_route

__all__ = ["mvfl", "MVFLResult"]

# lam3=None: the prior weight by kind of prior (docs/records/mvfl.md). With labels the term only
# shrinks off-class entries of labelled rows and a large weight is safe; with pairs it
# couples rows and must stay small (larger values merge clusters).
_LAM3_LABELS = 100.0
_LAM3_PAIRS = 0.01
# anchor=None: μ = _ANCHOR_PER_LAMBDA · max(λ1, λ2). When d > n the fit is exact for any F
# and the F landscape scales with λ, so the anchor does too (evidence: docs/records/mvfl.md).
_ANCHOR_PER_LAMBDA = 10.0
# eps=None: the norm guard. With the monotone step, 1e-3 (on the normalised data) lets the
# vanishing rows of W settle in a few reweightings instead of decaying geometrically
# (docs/records/mvfl.md); the paper's step keeps its tiny perturbation.
_EPS_MONOTONE = 1e-3
_EPS_PAPER = 1e-8


@dataclasses.dataclass(frozen=True, repr=False)
class MVFLResult(Result):
    """Result of :func:`mvfl`.

    Attributes
    ----------
    labels : ndarray, shape (n,), int64
        Cluster of each sample: row-wise argmax of ``F`` (for a row that is exactly zero,
        the argmax of ``XW + 1bᵀ`` instead).
    objective : ndarray, shape (n_iter,)
        Objective after each iteration of the returned run (``f_step="monotone"``:
        ε-smoothed norms plus the orthogonality penalty and the anchor, never increasing;
        ``f_step="paper"``: eq. 8 or 9 with exact norms).
    n_iter : int
        Iterations of the returned run.
    converged : bool
        Whether the returned run met ``tol``.
    F : ndarray, shape (n, c)
        Nonnegative relaxed cluster indicator.
    W : ndarray, shape (d, c)
        Projection matrix on the normalised, concatenated features (views stacked by rows,
        boundaries ``view_ptr``).
    b : ndarray, shape (c,)
        Intercept: ``F ≈ X W + 1 bᵀ`` on the normalised data.
    view_weights : ndarray, shape (m, c)
        Group norms ``‖w_k^v‖``: the weight of view ``v`` for cluster ``k``.
    feature_weights : ndarray, shape (d,)
        Row norms ``‖w^i‖``: the weight of each (concatenated) feature.
    view_ptr : ndarray, shape (m + 1,), int64
        Feature boundaries of the views in ``W`` and ``feature_weights``.
    normalize : list of str or None
        The normalisation applied to each view (``normalize="auto"`` resolved).
    lam3 : float
        The prior weight used (``lam3=None`` resolved).
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.
    """

    F: np.ndarray
    W: np.ndarray
    b: np.ndarray
    view_weights: np.ndarray
    feature_weights: np.ndarray
    view_ptr: np.ndarray
    normalize: list
    lam3: float

    _shapes: ClassVar[dict] = {"F": ("n", "c"), "W": ("d", "c"), "b": ("c",),
                               "view_weights": ("m", "c"), "feature_weights": ("d",)}


# ------------------------------------------------------------------------------------------
# preparation


def _prepare_prior(n, c, labels, must_link, cannot_link):
    rows_all = np.arange(n, dtype=np.int64)
    if labels is not None and (must_link is not None or cannot_link is not None):
        raise InvalidParameterError("give at most one kind of prior: labels, or "
                                    "must_link/cannot_link pairs, not both")
    if labels is not None:
        y = check_partial_labels(labels, n, c, "labels")
        lab = np.flatnonzero(y >= 0).astype(np.int64)
        return {"kind": "labels", "rows": lab, "classes": y[lab].astype(np.int64),
                "unlabelled": np.flatnonzero(y < 0).astype(np.int64), "all": rows_all}
    if must_link is not None or cannot_link is not None:
        ml = canonical_pairs(must_link, "must_link", n)
        cl = canonical_pairs(cannot_link, "cannot_link", n)
        check_pair_conflicts(ml, cl)
        return {"kind": "pairs", "Ip": pair_csr(n, ml, cl), "all": rows_all, "must": ml,
                "cannot": cl}
    return {"kind": "none", "all": rows_all}


def _warn_unsupervised(prior):
    """Unsupervised MVFL is a slower k-means: say so, and what to give instead."""
    if prior["kind"] == "labels" and prior["rows"].size == 0:
        why = "labels has no known label (every entry is -1), so mvfl runs unsupervised"
    elif prior["kind"] == "none":
        why = "no labels and no pairs were given, so mvfl runs unsupervised"
    else:
        return
    warnings.warn(f"mvfl: {why}; without supervision it rarely beats k-means on the views' "
                  "z-scored, L2-normalised concatenation, which is several times faster. Give "
                  "labels= (partial, -1 for unknown) or must_link=/cannot_link= pairs, or "
                  "use fastmv.kmeans", UserWarning, stacklevel=caller_stacklevel())


def _prepare(X_list, n_clusters, labels, must_link, cannot_link, lam1, lam2, lam3, rho,
             anchor, eps, init, n_init, random_state, normalize, solver,
             f_step) -> Data:
    """Validate the data and the parameters the declarations cannot check alone."""
    views = check_views(X_list, "X_list", accept_sparse=True)
    n = views[0].shape[0]
    c = check_n_clusters(n_clusters, n)
    if lam1 + lam2 <= 0:
        raise InvalidParameterError("lam1 and lam2 cannot both be 0: the W step needs the "
                                    "regularising diagonal lam1 P_k + lam2 Q")
    prior = _prepare_prior(n, c, labels, must_link, cannot_link)
    check_mvfl(views, c, solver, prior, init, f_step)
    if lam3 is None:
        lam3 = {"labels": _LAM3_LABELS, "pairs": _LAM3_PAIRS}.get(prior["kind"], 0.0)
    anchor_auto = anchor is None
    if anchor is None:
        anchor = _ANCHOR_PER_LAMBDA * max(lam1, lam2)
    if eps is None:
        eps = _EPS_PAPER if f_step == "paper" else _EPS_MONOTONE
    if isinstance(init, str) and init == "spread" and not (prior["kind"] == "labels"
                                                            and prior["rows"].size):
        raise ValueError("init='spread' spreads the given labels: it needs labels with at "
                         "least one known class; use init='k-means++' or 'auto'")
    if not isinstance(init, str):
        init = check_array(init, "init", accept_sparse=False, dtype=np.float64,
                           nonnegative=True, copy=True)
        if init.shape != (n, c):
            raise InvalidParameterError(f"init must have shape ({n}, {c}), got {init.shape}")
        if not init.any():
            raise InvalidParameterError("init is all zero: every sample would start in one "
                                        "cluster and F would stay 0; give a nonnegative init "
                                        "with a positive entry in every row, or "
                                        "init='k-means++'")
    return Data(views, n, c, prior, float(lam1), float(lam2), float(lam3), float(rho),
                 float(anchor), float(eps), init, int(n_init), check_random_state(random_state),
                 normalize, solver, f_step, anchor_auto)


# ------------------------------------------------------------------------------------------
# the problem the driver iterates


def _informative(prior):
    """Whether the prior holds a label or a pair (an empty one poses the prior-free
    problem)."""
    if prior["kind"] == "labels":
        return prior["rows"].size > 0
    return prior["kind"] == "pairs" and prior["Ip"][1].size > 0  # CSR triple of I_p


class Problem:
    """One run of MVFL from one start; ``step()`` is one outer iteration."""

    def __init__(self, data: Data, X, wstep, view_ptr, F0, tol=1.0):  # tol=0: no settle stop
        self.d, self.X, self.wstep, self.view_ptr, self.F = data, X, wstep, view_ptr, F0
        self.W = self.b = self.Z = None
        self.spent = None  # the last step's factors: their memory serves the next step
        self.term = FTerm(data.n, data.c, data.lam3, data.rho, data.prior, data.anchor,
                          F0.copy())
        self.alpha = 0.5  # projected-gradient step length, carried across F steps
        self.n_inner = None  # projected-gradient steps per F step (None: by route)
        self.empty = empty_csr(data.n)
        # the quiet stops only with labels: without a prior the run is also the feature
        # selection, whose weights keep separating after the labels have come to rest, and
        # with pairs the labels still move after a quiet iteration (the demo's pairs: 0.96
        # to the end, 0.86 stopped quiet)
        quiet = data.prior["kind"] == "labels" and _informative(data.prior)
        rules = QUIET_RULES_DIRECT if wstep.route == "direct" else QUIET_RULES
        self.settle = Settle(SETTLE_RTOL if data.f_step == "monotone" and tol > 0 else None,
                             quiet=rules if quiet else ())

    def factor(self):
        """The factorised ``W`` step at the IRLS weights of the current ``W``."""
        d, vp = self.d, self.view_ptr
        groups, rnorm = ((np.ones((len(vp) - 1, d.c)), np.ones(self.X.shape[1]))
                         if self.W is None else weight_norms(self.W, vp, d.eps))  # no W yet: 1
        D = irls_diagonal(groups, rnorm, vp, d.lam1, d.lam2)
        # one factor for all classes when the diagonals agree (λ1 = 0; uniform first weights)
        shared = d.lam1 == 0.0 or bool((D == D[:1]).all())
        if not shared and d.f_step == "monotone":
            # the joint step descends any majoriser that touches at W: the common one needs
            # one factorisation instead of c, with the same fixed points (WStep.factor_common)
            return self.wstep.factor_common(D, self.W, self.spent)
        return self.wstep.factor(D, shared, self.spent)

    def joint_f_step(self, factors, memo=None):
        """The monotone step's ``F`` update (``memo``: see :class:`ReducedTerm`)."""
        reduced = ReducedTerm(self.term, self.wstep, factors, memo)
        n_inner = self.n_inner or (N_INNER_WOODBURY if self.wstep.route == "woodbury"
                                   else N_INNER)
        self.F, self.alpha = monotone_f_step(self.F, None, reduced, self.alpha, n_inner)
        return reduced

    def step(self) -> Step:
        (d, vp), factors, F_old = (self.d, self.view_ptr), self.factor(), self.F
        if d.f_step == "paper":
            self.W, self.b = self.wstep.weights(factors, self.F)
            self.Z = np.asarray(self.X @ self.W) + self.b
            self.F = paper_f_step(self.F, self.Z, d.lam3, d.prior, self.empty)
            J = paper_objective(self.Z, self.F, self.W, vp, d.lam1, d.lam2, d.lam3, d.prior)
        else:
            reduced = self.joint_f_step(factors)
            self.W, self.b = self.wstep.weights(factors, self.F, reduced.solved_at(self.F))
            self.Z = np.asarray(self.X @ self.W) + self.b
            g, r = weight_norms(self.W, vp, d.eps)
            J = (self.term.value(self.F, self.Z)[0] + d.lam1 * float(g.sum())
                 + d.lam2 * float(r.sum()))
        if not np.isfinite(J):
            raise FloatingPointError(
                "mvfl: the objective is not finite: the data's magnitude overflows the W "
                f"step (normalize={d.normalize!r}); use normalize='auto', 'zscore' or 'l2'")
        self.spent = factors
        return Step(J, residual=self.settle.residual(J, F_old, self.F),
                    state=state_view(W=self.W, b=self.b, F=self.F, Z=self.Z))

    def result_fields(self):
        c = self.d.c
        if self.W is None:  # max_iter=0: the start itself
            self.W, self.b = np.zeros((self.X.shape[1], c)), np.zeros(c)
            self.Z = np.zeros((self.d.n, c))
        groups, rnorm = weight_norms(self.W, self.view_ptr, 0.0)
        labels = np.argmax(self.F, axis=1).astype(np.int64)
        dead = np.flatnonzero(self.F.max(axis=1) <= 0.0)
        if dead.size:  # rows shrunk to zero: the regression decides
            labels[dead] = np.argmax(self.Z[dead], axis=1)
        return dict(labels=labels, F=self.F, W=self.W, b=np.asarray(self.b, np.float64),
                    view_weights=np.asarray(groups), feature_weights=np.asarray(rnorm),
                    view_ptr=self.view_ptr, lam3=self.d.lam3)


def _solve(data: Data, *, max_iter, tol, callback, verbose, progress, n_jobs):
    """Normalise, set up the W step, run ``n_init`` starts; the lowest final objective wins."""
    tuning = normed = spreader = None
    if data.normalize == "auto" and data.prior["kind"] != "none":
        with verbose_logging(verbose) as log:
            data, tuning, normed, spreader = tune_normalize(data, log)
    X, view_ptr, schemes = normed or normalized_data(data)
    route, Xw = choose_route(X, data.solver)
    wstep = WStep(Xw, route, view_ptr)
    km = graph = None
    has_labels = data.prior["kind"] == "labels" and data.prior["rows"].size > 0
    if isinstance(data.init, str) and data.init == "auto":
        init = "k-means++"
        if has_labels and data.prior["rows"].size < 2:
            tuning = {**(tuning or {}), "init": untuned_record(
                {"candidates": ["k-means++", "spread"], "method": None},
                "1 labelled sample: at least 2 are needed to score a start on held-out "
                "labels")}
        elif has_labels and data.n <= SPREAD_MAX_N:
            km = kmeans_labels(X, data, data.rng, n_jobs)  # the first start's k-means
            with verbose_logging(verbose) as log:
                init, record, graph = tune_init(X, data, km, log, spreader)
            if not np.isfinite(record["scores"]).any():
                record = untuned_record(record, "no validation fold could be scored")
                init = record["chosen"]
            tuning = {**(tuning or {}), "init": record}
        data = data._replace(init=init)
    if anchor_tuned(data, route):
        data, wstep, km, graph, record = with_tuned_anchor(data, X, wstep, view_ptr, km, graph,
                                                           verbose, n_jobs, Problem)
        tuning = {**(tuning or {}), "anchor": record}
    spread = isinstance(data.init, str) and data.init == "spread"  # deterministic: one start
    n_starts, best = 1 if spread else data.n_init, None
    for start in range(n_starts):
        F0 = initial_F(X, data, data.rng, n_jobs, km=km if start == 0 else None, graph=graph)
        problem = Problem(data, Xw, wstep, view_ptr, F0, tol)  # Xw: CSR for text (Z = XW)
        trace = iterate(problem, solver="mvfl", max_iter=max_iter, tol=tol, callback=callback,
                        verbose=verbose, progress=progress, warn=False,
                        progress_desc=f"mvfl start {start + 1}/{n_starts}" if n_starts > 1
                        else None)
        final = trace.objective[-1] if trace.n_iter else np.inf
        if best is None or final < best[2]:
            best = (problem, trace, final)
        if trace.stop_reason == "callback":
            break
    problem, trace, _ = best
    if trace.stop_reason == "max_iter" and max_iter > 0:
        warnings.warn(f"mvfl stopped at max_iter={max_iter} before reaching tol={tol:g} "
                      f"(last residual {trace.residual[-1]:.3g}); raise max_iter or tol for a "
                      "converged answer", ConvergenceWarning, stacklevel=caller_stacklevel())
    fields = problem.result_fields()
    found = np.unique(fields["labels"]).size
    if found < min(data.c, fields["labels"].size):
        warnings.warn(
            (f"mvfl: every sample is in one cluster although n_clusters={data.c}: the "
             "indicator F collapsed onto one column." if found == 1 else
             f"mvfl: only {found} of n_clusters={data.c} clusters hold samples: the "
             "indicator F collapsed onto fewer columns.")
            + " Try normalize='l2' for sparse or count "
            "data, smaller lam1/lam2, or a larger rho (orthogonality weight)",
            DegenerateSolutionWarning, stacklevel=caller_stacklevel())
    return MVFLResult(objective=trace.objective, n_iter=trace.n_iter,
                      converged=trace.converged, normalize=schemes, tuning=tuning, **fields)


# ------------------------------------------------------------------------------------------
# public solver


_POSITIVE = Interval(Real, 0, None, closed="neither")
_NONNEGATIVE = Interval(Real, 0, None, closed="left")


@declare_params({
    "X_list": ["views"], "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "labels": ["array-like", None], "must_link": ["pairs", None],
    "cannot_link": ["pairs", None], "lam1": [_NONNEGATIVE], "lam2": [_NONNEGATIVE],
    "lam3": [_NONNEGATIVE, None], "rho": [_POSITIVE], "anchor": [_NONNEGATIVE, None],
    "max_iter": [Interval(Integral, 0, None, closed="left")], "tol": [_NONNEGATIVE],
    "init": [Options({"auto", "k-means++", "spread", "random"}), "array-like"],
    "n_init": [Interval(Integral, 1, None, closed="left")], "random_state": ["random_state"],
    "verbose": ["verbose"], "progress": ["boolean"], "callback": [callable, None],
    "normalize": [Options({"auto", "zscore", "l2", "log", "minmax"}), None],
    "solver": [Options({"auto", "direct", "woodbury"})],
    "f_step": [Options({"monotone", "paper"})], "eps": [_POSITIVE, None], "n_jobs": ["n_jobs"],
})
def mvfl(X_list: Sequence[ArrayLike | sp.spmatrix], n_clusters: int, *,
         labels: ArrayLike | None = None, must_link: ArrayLike | None = None,
         cannot_link: ArrayLike | None = None, lam1: float = 1e-3, lam2: float = 1e-3,
         lam3: float | None = None, rho: float = 1.0, anchor: float | None = None,
         max_iter: int = 100, tol: float = 1e-6,
         init: Literal["auto", "k-means++", "spread", "random"] | ArrayLike = "auto",
         n_init: int = 1, random_state: int | np.random.Generator | None = None,
         verbose: bool | int = False, progress: bool = False,
         callback: Callable[[IterationInfo], bool | None] | None = None,
         normalize: Literal["auto", "zscore", "l2", "log", "minmax"] | None = "auto",
         solver: Literal["auto", "direct", "woodbury"] = "auto",
         f_step: Literal["monotone", "paper"] = "monotone", eps: float | None = None,
         n_jobs: int | None = None) -> MVFLResult:
    """Multi-view clustering with joint view/feature selection and partial labels or pairs.

    Minimises (docs/algorithms.md §2; Yin et al. 2019, eqs. 8–11)::

        ‖X W + 1bᵀ − F‖² + λ1 Σ_k Σ_v ‖w_k^v‖ + λ2 Σ_i ‖w^i‖ + λ3 φ(F) + (ρ/4) ‖FᵀF − I‖²
            + μ ‖F − F₀‖²

    over ``W``, ``b`` and ``F ≥ 0``, with ``φ(F) = ‖I_l ⊙ F_l‖²`` for partial labels (``I_l``
    is 0 at a labelled sample's class, 1 elsewhere) or ``φ(F) = Σ_ij I_p[i,j] (FFᵀ)[i,j]``
    for pairs (``I_p`` symmetric, -1 for a must-link, +1 for a cannot-link). The last term is
    the paper's orthogonality relaxation ``FᵀF = I`` as a penalty and the last one anchors
    ``F`` to its start ``F₀`` (``f_step="monotone"``; without the anchor the minimiser
    concentrates each column of ``F`` on a few samples, docs/records/mvfl.md).
    Without a prior this is the paper's MultiFL. ``X`` concatenates the normalised views.

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, each (n, d_v)
        The views, samples in rows. Sparse views stay sparse (CSR); never modified.
    n_clusters : int
        Number of clusters ``c``.
    labels : array-like of int, shape (n,), optional
        Partial labels in ``[0, c)``, ``-1`` for unknown. Excludes ``must_link``/``cannot_link``.
    must_link : array-like of int, shape (p, 2), optional
        Pairs of sample indices known to share a cluster (duplicates are dropped).
    cannot_link : array-like of int, shape (p, 2), optional
        Pairs known not to share a cluster. A pair may not be in both lists.
    lam1 : float, default 1e-3
        View-selection weight (group norm per view and cluster), ``>= 0``.
    lam2 : float, default 1e-3
        Feature-selection weight (ℓ2,1 norm of the rows of ``W``), ``>= 0``; ``lam1 + lam2``
        must be positive.
    lam3 : float or None, default None
        Prior weight ``>= 0``. ``None``: 100 with labels (the term only shrinks the off-class
        entries of labelled rows; larger is better up to a plateau), 0.01 with pairs (the
        term couples rows; values from 0.1 merge clusters). See ``docs/records/mvfl.md``.
    rho : float, default 1.0
        Weight of the orthogonality penalty ``(ρ/4) ‖FᵀF − I‖²`` (``f_step="monotone"``).
    anchor : float or None, default None
        Weight ``μ >= 0`` of ``‖F − F₀‖²``, the pull toward the starting indicator
        (``f_step="monotone"``). ``None``: ``10 · max(lam1, lam2)`` (0.01 with the default
        weights); with labels, a k-means or spreading start and ``d ≤ n`` (the direct ``W``
        step: the fit binds and can pull ``F`` away from a good start), ``100`` or ``300 ·
        max(lam1, lam2)`` by 2-fold validation on the labels (stratified by class): two
        iterations per candidate from each fold's start (rebuilt from the other folds' labels),
        scored by the cosine of each held-out labelled row of ``F`` to its class; ``100 ·``
        stays unless ``300 ·`` wins by more than the standard error of its gain.
        Cost: 8 iterations, the 4 first sharing their first ``W`` factorisation with the
        solve; in ``result.tuning["anchor"]``. ``0``: unanchored, degenerate on text
        (records/mvfl.md).
    max_iter : int, default 100
        Maximum number of outer iterations per start.
    tol : float, default 1e-6
        Stop when the objective's relative change is at most ``tol``, or (``f_step=
        "monotone"``, ``tol > 0``) once it is at most 1e-4 and no label can change while the
        iterates keep contracting (docs/records/mvfl.md, "Time to solution": the settled
        stop), or, with labels, once the labels rest while the objective creeps: no label
        changed in the last iteration and the relative change is at most 1e-2, or the
        change is at most 3e-4; on the direct ``W`` route (``d ≤ n``) once the change is at
        most 1e-2 (``fastmv._mvfl._settle.QUIET_RULES``, ``QUIET_RULES_DIRECT``; these bound
        nothing, and ``W`` is then less converged than the labels; see
        docs/records/mvfl-speed.md).
    init : {"auto", "k-means++", "spread", "random"} or array-like of shape (n, c), \
default "auto"
        Initial ``F``: one-hot of k-means (k-means++ seeding, 10 restarts; 5 when the
        concatenated views have no more features than samples) on the
        concatenated normalised views, one-hot of label spreading (labels only: Zhou et
        al.'s spreading, ``α = 0.2``, 12 sweeps, on the symmetric 7-nearest-neighbour graph
        of the normalised views; a class no label names is seeded with the sample of its
        matched k-means cluster that the spreading from the named classes covers worst;
        unreached samples keep their k-means cluster; one start, as it is deterministic),
        uniform ``(0, 1)`` entries, or a given nonnegative, not
        all-zero array. With labels, k-means clusters are renumbered to agree best with
        the known classes and the labelled rows start at their class. ``"auto"``: with
        labels, ``"k-means++"`` or ``"spread"``, whichever start's
        partition honours more held-out labelled pairs (leave-one-out over up to 100 labels,
        else 100 folds stratified by class; pairs of a held-out sample with every other
        labelled one, balanced over same- and different-class pairs; each start rebuilt
        from the other folds' labels; the k-means clustering is shared with the solve's
        first start, so the cost is one kNN graph, ``O(n² d)`` in row blocks, and one
        spreading per fold: no extra solve); with more than 20 000 samples (the graph's
        cost) or without labels, ``"k-means++"``. Recorded in ``result.tuning["init"]``.
    n_init : int, default 1
        Starts (each from its own k-means draw); the run with the lowest final objective
        is returned.
    random_state : None, int or numpy Generator
        Seeds the initialisation; results are reproducible.
    verbose : bool or int, default False
        Log one line per iteration (logger ``"fastmv"``).
    progress : bool, default False
        Show a progress bar over the iterations (needs tqdm): one bar per start,
        labelled with the start ("mvfl start 2/3") when there are several.
    callback : callable, optional
        ``callback(info)`` after each iteration with a ``fastmv._core._driver.IterationInfo``
        (``info.state``: read-only ``W``, ``b``, ``F``, ``Z = XW + 1bᵀ``); returning
        ``True`` or raising ``StopIteration`` stops the solve (``converged=False``).
    normalize : {"auto", "zscore", "l2", "log", "minmax"} or None, default "auto"
        Per-view scaling. ``"zscore"``: each feature to unit variance, each view by
        ``1/sqrt(d_v)``. ``"l2"``: each sample to unit norm within the view. ``"log"``: each
        nonnegative feature to ``log(1 + x / mean)`` (counts and intensities spanning
        decades), then every feature to unit variance (views not rebalanced).
        ``"minmax"``: each feature to range 1. ``None``: as given. ``"auto"`` without a prior:
        ``"l2"`` for a sparse view or one with under 10% nonzeros (text, counts),
        ``"zscore"`` otherwise. ``"auto"`` with labels: ``"l2"`` when every view is text by
        that rule, else the one of ``"l2"``, ``"zscore"``, ``"log"`` (for every view) whose
        normalised views predict the held-out labels best (leave-one-out over up to 100
        labels, else 100 folds stratified by class; per fold, the mean of the 1-nearest
        labelled neighbour's accuracy and of label spreading's cosine to the held-out classes
        on the views' 7-nearest-neighbour graph; the best mean wins, the rule above breaking
        ties). With pairs: ``"l2"`` or ``"zscore"``, the ROC AUC of the pair distances over 5
        folds, the rule kept unless the other wins by more than the standard error of its
        gain. Cost: one normalisation and one kNN graph (``O(n² d)``, the one the start's
        tuning then reuses) per candidate, ``O(l² d)`` for ``l`` labels, no extra solve
        (measurements: docs/mvfl.md, docs/defaults.md, "Self-tuning"). The choice and the
        scores are in ``result.tuning``; ``verbose`` logs them; an explicit value skips the
        tuning.
    solver : {"auto", "direct", "woodbury"}, default "auto"
        ``W`` step: ``d × d`` Cholesky systems, ``n × n`` Woodbury systems, or the smaller.
        With ``f_step="monotone"`` one system per iteration serves all ``c`` classes: the
        reweighted penalty is majorised with the largest of the classes' diagonals and a
        linear correction that makes the bound touch at the current ``W``, so the objective
        still never rises and the fixed points are those of the per-class systems (the
        bound only changes the path). ``f_step="paper"`` solves ``c`` systems; on the
        Woodbury route their matrices are combined from per-view Grams shared by all classes
        when that is cheaper (``docs/records/mvfl.md``, "The W step with many classes").
    f_step : {"monotone", "paper"}, default "monotone"
        ``"monotone"``: joint step (``W`` eliminated at the IRLS weights, projected gradient
        on ``F`` with backtracking, then ``W`` follows); the objective never increases.
        ``"paper"``: the paper's multiplicative update (eqs. 14, 16–18), not monotone.
    eps : float or None, default None
        Guard of the reweighting: norms are used as ``sqrt(‖·‖² + eps²)`` (on the normalised
        data). ``None``: 1e-3 with ``f_step="monotone"`` (norms below it act as a ridge, so the
        rows of ``W`` that vanish stop slowing the iteration; ``docs/records/mvfl.md``), 1e-8 with
        ``f_step="paper"`` (the paper's small perturbation).
    n_jobs : int or None
        Threads of the Numba kernels.

    Returns
    -------
    MVFLResult
        ``labels``, ``objective`` (one entry per iteration), ``n_iter``, ``converged``,
        ``F``, ``W``, ``b``, ``view_weights``, ``feature_weights``, ``view_ptr``,
        ``normalize``, ``lam3`` and ``tuning`` (the records of the options resolved from the
        labels or pairs, else ``None``).

    Raises
    ------
    ValueError
        Both labels and pairs; wrong shapes; labels outside ``[-1, c)``; bad pairs or a pair
        in both lists; ``lam1 = lam2 = 0``; an all-zero ``init``.
    fastmv.exceptions.InvalidParameterError
        A parameter outside its declared range or vocabulary.
    FloatingPointError
        ``normalize=None`` on data whose magnitude overflows the ``W`` step.

    Warns
    -----
    UserWarning
        Without supervision (no ``labels``, no pairs, or ``labels`` all ``-1``): MVFL then
        solves an unsupervised problem that rarely does better than k-means on the views'
        z-scored, L2-normalised concatenation and takes several times longer; give labels
        or pairs, or use :func:`fastmv.kmeans`.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> views = [y[:, None] * 6.0 + rng.normal(size=(40, 3)) for _ in range(2)]
    >>> known = np.where(np.arange(40) % 10 == 0, y, -1)   # 4 known labels, -1 unknown
    >>> r = fastmv.mvfl(views, 2, labels=known, random_state=0)
    >>> bool(fastmv.metrics.accuracy(y, r.labels) == 1.0), r.converged
    (True, True)
    """
    data = _prepare(X_list, n_clusters, labels, must_link, cannot_link, lam1, lam2, lam3,
                    rho, anchor, eps, init, n_init, random_state, normalize, solver, f_step)
    _warn_unsupervised(data.prior)
    with thread_limit(n_jobs):
        return _solve(data, max_iter=max_iter, tol=tol, callback=callback, verbose=verbose,
                      progress=progress, n_jobs=n_jobs)
