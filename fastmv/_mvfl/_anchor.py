"""``anchor=None`` with labels on the direct route: the pull toward the start chosen from the
labels (docs/records/mvfl.md, "`anchor=None` with labels and `d ≤ n`").

When ``d ≤ n`` the fit ``‖XW + 1bᵀ − F‖²`` binds: it pulls ``F`` toward what a linear map of
the features can represent, with a curvature of order 1 that the default anchor (of the order
of ``λ``) hardly resists. Whether that pull helps (the linear fit repairs a poor start) or
hurts (the start's clusters are not linear in the features and the solve drifts away from
them) depends on the data, so the labels decide: ``k`` folds stratified by class, from each
fold's start (rebuilt from the other folds' labels, the k-means clustering and kNN graph
shared with the solve) one iteration with each candidate anchor, judged by how close in angle
the held-out labelled rows of ``F`` end to their class indicator. When ``d > n`` the fit is exact
for any ``F`` and the
landscape scales with ``λ``, which is what the rule ``10 · max(λ1, λ2)`` was derived for; it
is kept there without validation.
"""
from __future__ import annotations

import numpy as np

from .._core._driver import verbose_logging
from .._core._tuning import from_labels, grid_search, label_folds, tuning_rng
from ._data import Data
from ._start import initial_F, kmeans_labels, knn_graph

# The grid, in units of max(λ1, λ2); the first is kept unless the other wins by more than its
# standard error. 100 comes first: on the direct route a fixed 100 is the value chosen
# leave-one-dataset-out (docs/mvfl.md). 300 is the threefold stronger pull that keeps a
# spreading start where the reweighted fit degrades it from the second iteration on; a
# weaker anchor than 100 is hardly ever the better one.
ANCHOR_GRID = (100.0, 300.0)
# Folds over the labels and outer iterations of each fold's solve. The first iteration runs
# at uniform IRLS weights (a ridge fit, shared by every fold and candidate); the drift of the
# reweighted fit shows from the second, so each fold's solve runs two: 2 folds × 2
# candidates × 2 iterations, of which the 4 first ones share their factors with the solve.
# More folds cost more and change the choice only where the candidates are close.
ANCHOR_FOLDS = 2
# Projected-gradient steps of each fold solve's F steps (the solve takes N_INNER): the
# direction of the drift shows in the first steps, and the fold solves are most of the cost
# of a tuned solve on the direct route.
ANCHOR_INNER = 3
ANCHOR_ITERATIONS = 2


def anchor_tuned(data: Data, route):
    """Whether ``anchor=None`` is validated from the labels: labels given, the monotone step
    (the only one with an anchor), a k-means or spreading start, and the direct route (``d ≤
    n``, where the fit binds)."""
    return (data.anchor_auto and data.prior["kind"] == "labels" and data.prior["rows"].size > 1
            and data.f_step == "monotone" and route == "direct"
            and isinstance(data.init, str) and data.init in ("k-means++", "spread"))


class FirstFactors:
    """A :class:`~fastmv._mvfl._wstep.WStep` whose factors at the first iteration's uniform
    weights are computed once: every fold solve (and the final one) starts from ``W = None``,
    i.e. the same diagonals, so their first factorisation is shared bit for bit."""

    def __init__(self, wstep):
        self.wstep, self._first = wstep, None
        self.keep = True  # False: the next hit is the last (the solve's first step)

    def __getattr__(self, name):
        return getattr(self.wstep, name)

    def factor(self, D, shared, spare=None):
        if self._first is not None and self._first[1] == shared and \
                np.array_equal(self._first[0], D):
            factors = self._first[2]
            if not self.keep:  # a (c, s, s) array no later step needs: not held for the solve
                self._first = None
            return factors
        factors = self.wstep.factor(D, shared, self._free(spare))
        if self._first is None:
            self._first = (D.copy(), shared, factors)
        return factors

    def factor_common(self, D, W, spare=None):
        return self.wstep.factor_common(D, W, self._free(spare))

    def _free(self, spare):
        """``spare`` unless it is the cached first factors, still held for a later hit (not
        to be overwritten)."""
        return None if self._first is not None and spare is self._first[2] else spare


def _fold_prior(prior, keep):
    """The labels prior restricted to the labelled rows ``keep`` (a boolean mask)."""
    rows, classes = prior["rows"][keep], prior["classes"][keep]
    unl = np.setdiff1d(prior["all"], rows).astype(np.int64)
    return {"kind": "labels", "rows": rows, "classes": classes, "unlabelled": unl,
            "all": prior["all"]}


def held_out_cosine(F, rows, classes):
    """Mean cosine between each held-out labelled sample's row of ``F`` and its class
    indicator, ``F[i, y_i] / ‖F[i]‖`` (0 for a zero row): how far the relaxed indicator has
    moved toward (1) or away from the sample's class, not only whether its argmax flipped."""
    Fh = F[rows]
    norm = np.linalg.norm(Fh, axis=1)
    true = Fh[np.arange(rows.size), classes]
    return float(np.mean(np.divide(true, norm, out=np.zeros_like(true), where=norm > 0)))


def with_tuned_anchor(data: Data, X, wstep, view_ptr, km, graph, verbose, n_jobs,
                      problem_type):
    """``(data, wstep, km, graph, record)``: ``data`` with the anchor of :func:`tune_anchor`,
    the ``W`` step sharing its first factors with the solve (:class:`FirstFactors`), and the
    first start's k-means labels and kNN graph (built here when the tuning of ``init`` did
    not; after it, ``graph`` is its label spreader, :func:`~fastmv._mvfl._start.initial_F`),
    for the solve's start. ``problem_type``: the solver's ``Problem`` class (passed in
    so that this module does not import the solver that calls it)."""
    if km is None:  # the first start's k-means, drawn as the start would draw it
        km = kmeans_labels(X, data, data.rng, n_jobs)
    if data.init == "spread" and graph is None:
        graph = knn_graph(X)
    wstep = FirstFactors(wstep)
    with verbose_logging(verbose) as log:
        anchor, record = tune_anchor(data, X, wstep, view_ptr, km, graph, log, problem_type)
    return data._replace(anchor=anchor), wstep, km, graph, record


def tune_anchor(data: Data, X, wstep, view_ptr, km, graph, log, problem_type):
    """``(anchor, record)``: the candidate of ``ANCHOR_GRID`` (times ``max(λ1, λ2)``) whose
    truncated fold solves leave the held-out labelled rows of ``F`` closest in angle to their
    class (:func:`held_out_cosine`; one-standard-error rule against the grid's first,
    :func:`fastmv._core._tuning.grid_search`).

    A fold solve's last iteration stops after its ``F`` step: the ``W``, ``b`` and objective
    that would follow are not formed, as the score reads only ``F``. With one iteration the
    candidates of a fold start from the same ``F`` with the same factors, and the anchor term
    vanishes there, so their first evaluations (the start's fit and gradient, the first
    trial point's fit) are computed once (a memo per fold,
    :class:`~fastmv._mvfl._fstep.ReducedTerm`). ``problem_type``: the solver's ``Problem``.
    """
    prior = data.prior
    rows, classes = prior["rows"], prior["classes"]
    folds = label_folds(from_labels(rows, classes), ANCHOR_FOLDS, tuning_rng(data.rng))
    scale = max(data.lam1, data.lam2)
    candidates = [g * scale for g in ANCHOR_GRID]
    starts = {}

    def evaluate(anchor, f):
        te = folds == f
        if not te.any() or te.all():
            return np.nan, 0
        if f not in starts:
            fold = data._replace(prior=_fold_prior(prior, ~te))
            starts[f] = (fold, initial_F(X, fold, data.rng, None, km=km, graph=graph), [])
        fold, F0, memo = starts[f]
        problem = problem_type(fold._replace(anchor=anchor), X, wstep, view_ptr, F0.copy())
        problem.n_inner = ANCHOR_INNER
        for _ in range(ANCHOR_ITERATIONS - 1):
            problem.step()
        problem.joint_f_step(problem.factor(), memo)
        return held_out_cosine(problem.F, rows[te], classes[te]), 1

    method = (f"cosine of held-out labelled rows of F to their class after "
              f"{ANCHOR_ITERATIONS} iteration(s) from each fold's start")
    chosen = grid_search("anchor", candidates, evaluate, ANCHOR_FOLDS, method=method, log=log)
    if isinstance(wstep, FirstFactors):
        wstep.keep = False  # the solve's first step is the cached factors' last use
    return chosen
