"""Self-tuning from the supervision a caller gave: one implementation for every solver.

When a solver gets partial labels or pairwise constraints, its data-dependent options may be
``"auto"``; each is then resolved per call by internal validation on that supervision
(docs/defaults.md, "Self-tuning"):

1. the supervision is split into ``k`` folds (labels stratified by class, pairs stratified
   by kind: must-link / cannot-link), seeded from the call's ``random_state``;
2. for every candidate of a small documented grid and every fold, the solver (or a cheap
   proxy of it, stated where used) is fitted on the other folds and scored on the held-out
   one: held-out labels predicted (accuracy), held-out pairs honoured (balanced over the two
   kinds), or a score of the held-out pairs (ROC AUC) when a solver yields a similarity;
3. the first candidate of every grid is the old default; another candidate replaces it only
   if its mean gain over the folds (paired, fold by fold) exceeds the standard error of that
   gain (the one-standard-error rule, :func:`beats_default`), and among those the best mean
   wins (ties: the earlier candidate); the solver then runs once on all the supervision.
   The rule is exact up to rounding: a gain *equal* to its standard error in exact
   arithmetic never wins. The common case is a candidate that gains ``b`` on one fold and
   ties on the others: its mean gain and its standard error are both ``|b| / k``, and the
   floating-point comparison of the two would go either way with the bits of ``b`` and
   ``k``; here the gain must exceed the standard error by more than a relative
   :data:`GAIN_RTOL` (a zero standard error: any positive gain wins; gains that are all zero
   never do).

The record of every decision is kept in the result's ``tuning`` field: a dict from option
name to ``{"candidates", "scores" (candidates × folds), "mean", "gain_se" (standard error of
each candidate's paired gain over the first), "chosen", "folds", "method",
"solves"}``. ``None`` when nothing was tuned (every option explicit, or no supervision).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import NamedTuple

import numpy as np

__all__ = ["Supervision", "label_folds", "pair_folds", "label_score", "pair_score",
           "pair_auc", "grid_search", "pairs_among_labels", "paired_gain", "beats_default",
           "may_beat_default", "fold_means", "eligible"]

AUTO = "auto"
#: how much a mean paired gain must exceed its standard error, relative to the standard
#: error, to count as exceeding it. Both are computed to a relative precision of a few units
#: of rounding near a tie (a tie has ``(Σd)² = Σd²``, so ``|Σd| >= max|d|`` and the sum has
#: no cancellation), far below this; gains of shares with small denominators that do exceed
#: their standard error do so by far more than this.
GAIN_RTOL = 1e-9


class Supervision(NamedTuple):
    """The supervision of one call: labelled rows and their classes, or pairs."""

    kind: str                 # "labels" or "pairs"
    rows: np.ndarray          # labels: labelled rows (int64); pairs: empty
    classes: np.ndarray       # labels: their classes; pairs: empty
    must: np.ndarray          # pairs: (p, 2) must-links; labels: empty (0, 2)
    cannot: np.ndarray        # pairs: (q, 2) cannot-links; labels: empty (0, 2)


def from_labels(rows, classes) -> Supervision:
    """Supervision from labelled rows and their classes."""
    e = np.zeros((0, 2), np.int64)
    return Supervision("labels", np.asarray(rows, np.int64), np.asarray(classes, np.int64),
                       e, e)


def from_pairs(must, cannot) -> Supervision:
    """Supervision from must-link and cannot-link pairs (``(p, 2)`` each)."""
    e = np.zeros(0, np.int64)
    return Supervision("pairs", e, e, np.asarray(must, np.int64).reshape(-1, 2),
                       np.asarray(cannot, np.int64).reshape(-1, 2))


def _stratified(groups, n_folds, rng):
    """Fold index of every item: a random permutation within each group, dealt round-robin,
    with the dealing offset carried over between groups so folds stay balanced in size."""
    fold = np.empty(groups.size, np.int64)
    start = 0
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        idx = idx[rng.permutation(idx.size)]
        fold[idx] = (start + np.arange(idx.size)) % n_folds
        start = (start + idx.size) % n_folds
    return fold


def label_folds(sup: Supervision, n_folds: int, rng) -> np.ndarray:
    """Fold index (``0 .. n_folds-1``) of every labelled row, stratified by class."""
    return _stratified(sup.classes, n_folds, rng)


def pair_folds(sup: Supervision, n_folds: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Fold indices of the must-links and of the cannot-links (each kind dealt on its own)."""
    kinds = np.concatenate([np.zeros(len(sup.must), np.int64),
                            np.ones(len(sup.cannot), np.int64)])
    fold = _stratified(kinds, n_folds, rng)
    return fold[:len(sup.must)], fold[len(sup.must):]


def label_score(labels, rows, classes) -> float:
    """Share of held-out labelled rows whose predicted label is their class."""
    if rows.size == 0:
        return np.nan
    return float(np.mean(np.asarray(labels)[rows] == classes))


def pair_score(same: Callable, must, cannot) -> float:
    """Balanced share of held-out pairs honoured: the mean of the must-link share kept
    together and the cannot-link share kept apart (a kind with no pair is left out), so the
    many cannot-links of a many-class problem do not drown the few must-links.

    ``same(pairs)`` says, for an ``(p, 2)`` array, whether each pair shares a cluster.
    """
    parts = []
    if len(must):
        parts.append(float(np.mean(same(must))))
    if len(cannot):
        parts.append(float(np.mean(~same(cannot))))
    return float(np.mean(parts)) if parts else np.nan


def pair_auc(must_scores, cannot_scores) -> float:
    """ROC AUC of a similarity score separating must-links (high) from cannot-links (low);
    ties count one half. ``nan`` when either kind is empty."""
    a = np.asarray(must_scores, np.float64)
    b = np.asarray(cannot_scores, np.float64)
    if a.size == 0 or b.size == 0:
        return np.nan
    allv = np.concatenate([a, b])
    order = np.argsort(allv, kind="mergesort")
    ranks = np.empty(allv.size)
    sv = allv[order]
    # average ranks over ties
    edges = np.flatnonzero(np.diff(sv)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [sv.size]])
    avg = (starts + ends - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[:a.size].sum() - a.size * (a.size + 1) / 2.0) / (a.size * b.size))


def pairs_among_labels(rows, classes, max_pairs: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Must-links and cannot-links among labelled rows (at most ``max_pairs`` of each kind,
    drawn uniformly when there are more)."""
    i, j = np.triu_indices(rows.size, k=1)
    same = classes[i] == classes[j]
    out = []
    for mask in (same, ~same):
        ii, jj = i[mask], j[mask]
        if ii.size > max_pairs:
            keep = np.sort(rng.choice(ii.size, max_pairs, replace=False))
            ii, jj = ii[keep], jj[keep]
        out.append(np.column_stack([rows[ii], rows[jj]]).astype(np.int64))
    return out[0], out[1]


def paired_gain(scores, default) -> tuple[float, float]:
    """Mean paired gain of a candidate's fold ``scores`` over the ``default``'s and the
    standard error of that mean, over the folds where both are finite.

    ``(-inf, inf)`` with no such fold and ``(gain, inf)`` with one (a single fold gives no
    spread, so it never passes :func:`beats_default`).
    """
    d = np.asarray(scores, np.float64) - np.asarray(default, np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return -np.inf, np.inf
    se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.inf
    return float(d.mean()), float(se)


def beats_default(gain, se) -> bool:
    """The one-standard-error rule: whether a mean paired ``gain`` over the default exceeds
    its standard error ``se`` by more than rounding (a relative :data:`GAIN_RTOL`).

    In exact arithmetic a positive mean gain exceeds its standard error exactly when
    ``(Σ d)² > Σ d²`` over the fold gains ``d``, i.e. when the products ``d_i d_j`` of
    distinct folds sum to more than zero; a gain on one fold only (the others tie) makes
    that sum zero: an exact tie, which keeps the default. ``se == 0``: any positive gain
    wins; all-zero gains never do.
    """
    return bool(gain > se * (1.0 + GAIN_RTOL))


def may_beat_default(gains) -> bool:
    """Whether fold ``gains`` over the default pass the one-standard-error rule in exact
    arithmetic on their floating-point values: ``Σ d > 0`` and ``(Σ d)² > Σ d²``.

    A necessary condition of :func:`beats_default` on the same gains (its tolerance exceeds
    the rounding of ``gain`` and ``se``), so ``False`` here rules a candidate out. Used to
    bound a candidate whose folds are not all scored: the set of gains that pass is closed
    upwards (where ``Σ d > 0`` and ``(Σ d)² > Σ d²``, every ``Σ_{j≠i} d_j`` is positive, so
    raising any ``d_i`` raises both), so if the gains with every unscored fold at its
    largest possible value cannot pass, no scores of those folds can. NaN gains are left
    out, as in :func:`paired_gain`.
    """
    d = [Fraction(float(x)) for x in np.ravel(gains) if np.isfinite(x)]
    total = sum(d, Fraction(0))
    return len(d) > 1 and total > 0 and total * total > sum(x * x for x in d)


def fold_means(scores) -> np.ndarray:
    """Mean of every row of ``scores`` (candidates × folds) over its finite entries, as
    :func:`grid_search` ranks them; ``-inf`` for a row with none."""
    scores = np.asarray(scores, np.float64)
    with np.errstate(invalid="ignore"):
        counts = np.sum(np.isfinite(scores), axis=1)
        return np.where(counts > 0, np.nansum(scores, axis=1) / np.maximum(counts, 1), -np.inf)


def eligible(scores) -> list[int]:
    """The rows of ``scores`` (candidates × folds, the old default first) that may be
    chosen: the default and every later candidate whose paired gain over it passes the
    one-standard-error rule (:func:`beats_default`). :func:`grid_search` chooses the one with
    the best :func:`fold_means` among them (ties: the earlier one)."""
    scores = np.asarray(scores, np.float64)
    return [0] + [g for g in range(1, len(scores))
                  if beats_default(*paired_gain(scores[g], scores[0]))]


def grid_search(option: str, candidates: Sequence, evaluate: Callable, n_folds: int, *,
                method: str, log=None) -> tuple[object, dict]:
    """Score every candidate on every fold; return the winner and its record.

    Parameters
    ----------
    option : str
        Name of the option tuned (the key of the record in ``result.tuning``).
    candidates : sequence
        The grid, the old default first: it is kept unless another candidate's mean paired
        gain exceeds its standard error by more than rounding (one-standard-error rule,
        :func:`beats_default`; an exact tie keeps the default).
    evaluate : callable
        ``evaluate(candidate, fold) -> (score, n_solves)``; ``score`` may be ``nan`` (a fold
        with nothing held out), which is left out of the mean.
    n_folds : int
        Number of folds.
    method : str
        One line saying how the scores were obtained (recorded).
    log : callable, optional
        ``log(message, *args)`` of the solver's ``verbose`` logging.

    Returns
    -------
    chosen : object
        The candidate with the best mean score.
    record : dict
        ``{"candidates", "scores", "mean", "gain_se", "chosen", "folds", "method",
        "solves"}``.
    """
    scores = np.full((len(candidates), n_folds), np.nan)
    solves = 0
    for g, cand in enumerate(candidates):
        for f in range(n_folds):
            s, k = evaluate(cand, f)
            scores[g, f] = s
            solves += int(k)
    mean = fold_means(scores)
    # one-standard-error rule against the first candidate (the old default): another one
    # wins only if its mean paired gain over the folds exceeds that gain's standard error,
    # so fold-to-fold noise does not move the default
    se = np.array([0.0] + [paired_gain(scores[g], scores[0])[1]
                           for g in range(1, len(candidates))])
    best = max(eligible(scores), key=lambda g: (mean[g], -g))  # earlier candidates win ties
    chosen = candidates[best]
    record = {"candidates": list(candidates), "scores": scores, "mean": mean,
              "gain_se": se, "chosen": chosen, "folds": int(n_folds), "method": method,
              "solves": solves}
    if log is not None:
        shown = ", ".join(f"{c!r}: {m:.4f}" for c, m in zip(candidates, mean))
        log("tuning %s (%s, %d folds): %s -> %r", option, method, n_folds, shown, chosen)
    return chosen, record


def _rows_dense(X, rows):
    sub = X[rows]
    return np.asarray(sub.toarray() if hasattr(sub, "toarray") else sub, np.float64)


def _sq_dist_pairs(X, pairs):
    if len(pairs) == 0:
        return np.zeros(0)
    diff = _rows_dense(X, pairs[:, 0]) - _rows_dense(X, pairs[:, 1])
    return np.einsum("ij,ij->i", diff, diff)


def neighbour_score(X, sup: Supervision, folds, f: int) -> float:
    """Proxy score of a representation ``X`` (n × d, dense or sparse) on held-out fold ``f``.

    Labels: every held-out labelled row gets the class of its nearest labelled row of the
    other folds (squared Euclidean distance); the score is the share predicted right.
    Pairs: ROC AUC of the negated squared distance, held-out must-links against held-out
    cannot-links (nothing is fitted, so the folds only give the score's spread).
    """
    if sup.kind == "labels":
        test = folds == f
        train = ~test
        if not test.any() or not train.any():
            return np.nan
        A = _rows_dense(X, sup.rows[test])
        B = _rows_dense(X, sup.rows[train])
        d2 = (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
              - 2.0 * (A @ B.T))
        pred = sup.classes[train][np.argmin(d2, axis=1)]
        return float(np.mean(pred == sup.classes[test]))
    fm, fc = folds
    must, cannot = sup.must[fm == f], sup.cannot[fc == f]
    return pair_auc(-_sq_dist_pairs(X, must), -_sq_dist_pairs(X, cannot))


def tuning_rng(rng: np.random.Generator) -> np.random.Generator:
    """A generator for the folds, spawned from the call's: the solver's own stream is left
    untouched, so a tuned call that picks ``x`` runs the same solve as a call given ``x``."""
    return rng.spawn(1)[0]
