"""MVFL's per-view scaling (``normalize``) and its choice from the labels or pairs
(``normalize="auto"``; docs/defaults.md, "Self-tuning"; docs/mvfl.md)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core._preprocessing import normalize_rows
from .._core._result import untuned_record
from .._core._tuning import (
    from_labels,
    from_pairs,
    grid_search,
    label_folds,
    neighbour_score,
    pair_folds,
    tuning_rng,
)
from ._data import Data
from ._start import SPREAD_MAX_N, TUNE_INIT_FOLDS, FoldSpreader, knn_graph

__all__ = ["_normalize_view", "_auto_scheme", "_concatenate", "normalized_data",
           "_normalized_with", "tune_normalize"]

# normalize="auto": a view that is sparse, or dense with fewer nonzeros than this fraction
# (text or counts stored densely), is scaled per sample ("l2"); other views per feature
# ("zscore"). Evidence: docs/records/mvfl.md.
_TEXT_DENSITY = 0.1
# normalize="auto" with labels or pairs: the schemes compared by internal validation
# (docs/defaults.md, "Self-tuning"). With pairs the proxy is the pair-distance AUC over five
# folds. With labels it is the mean of the 1-nearest labelled neighbour's accuracy and of
# label spreading's cosine on each scheme's kNN graph, on held-out labels (leave-one-out up
# to TUNE_INIT_FOLDS labels, else as many folds stratified by class): spreading is linear
# in its seeds, so one basis per graph serves every fold, and the chosen scheme's graph and
# basis serve the start (init="auto") as they are.
_TUNE_SCHEMES = ("l2", "zscore", "log")
_TUNE_SCHEMES_PAIRS = ("l2", "zscore")
_TUNE_FOLDS = 5


def _column_scale(X):
    """Largest absolute entry of each column (1 for an all-zero column)."""
    mx = np.asarray(abs(X).max(axis=0).toarray() if sp.issparse(X)
                    else np.abs(X).max(axis=0, initial=0.0)).ravel().astype(np.float64)
    return np.where(mx > 0, mx, 1.0)


def _scale_columns(X, s):
    if sp.issparse(X):
        out = sp.csr_matrix(X @ sp.diags(s))
        out.sort_indices()
        return out
    return X * s


def _normalize_view(X, scheme):
    """A new, scaled view (the caller's array is never written).

    Every scheme but ``"log"`` is a per-feature or per-sample *scaling*: column shifts are
    irrelevant to MVFL (the intercept ``b`` absorbs them and the ``W`` step centres
    implicitly). Each column is first divided by its largest absolute entry, so that no
    square overflows or underflows: ``c·X`` normalises like ``X`` for ``c`` from 1e-300 to
    1e300. ``"log"`` maps every nonnegative column to ``log(1 + x / mean)`` first (the same
    for ``c·X``; signed columns are kept), then scales every feature to unit variance
    without the per-view factor of ``"zscore"``.
    """
    if scheme is None:
        return X
    if scheme == "l2":
        return normalize_rows(X, "l2")
    Y = _scale_columns(X.astype(np.float64), 1.0 / _column_scale(X))
    if scheme == "log":
        Y = _log_columns(Y)
    if scheme in ("zscore", "log"):
        if sp.issparse(Y):
            mean = np.asarray(Y.mean(axis=0)).ravel()
            spread = np.sqrt(np.maximum(np.asarray(Y.multiply(Y).mean(axis=0)).ravel()
                                        - mean ** 2, 0.0))
        else:
            spread = Y.std(axis=0)
        # "zscore": every view then has total variance 1; "log": every feature variance 1
        extra = 1.0 / np.sqrt(X.shape[1]) if scheme == "zscore" else 1.0
    else:  # "minmax"
        if sp.issparse(Y):
            spread = (Y.max(axis=0).toarray() - Y.min(axis=0).toarray()).ravel()
        else:
            spread = Y.max(axis=0) - Y.min(axis=0)
        extra = 1.0
    s = np.zeros_like(spread)
    np.divide(extra, spread, out=s, where=spread > 0)  # constant features are zeroed
    return _scale_columns(Y, s)


def _log_columns(Y):
    """``log(1 + y / mean(y))`` on every nonnegative, non-constant column of ``Y`` (counts
    and intensities spanning decades: their variance is then no longer that of a few huge
    entries); other columns as they are (a constant one stays exactly constant, so the
    scaling that follows zeroes it). A new array (CSR stays CSR: ``log1p(0) = 0``)."""
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y, copy=True)
        low = np.asarray(Y.min(axis=0).toarray()).ravel()
        high = np.asarray(Y.max(axis=0).toarray()).ravel()
        mean = np.asarray(Y.mean(axis=0)).ravel()
        ok = (low >= 0) & (mean > 0) & (high > low)
        scale = np.where(ok, 1.0 / np.where(ok, mean, 1.0), 0.0)[Y.indices]
        take = ok[Y.indices]
        Y.data[take] = np.log1p(Y.data[take] * scale[take])
        return Y
    if Y.shape[0] == 0:
        return np.array(Y, dtype=np.float64, copy=True)
    low, high, mean = Y.min(axis=0), Y.max(axis=0), Y.mean(axis=0)
    ok = (low >= 0) & (mean > 0) & (high > low)
    out = np.array(Y, dtype=np.float64, copy=True)
    out[:, ok] = np.log1p(Y[:, ok] / mean[ok])
    return out


def _auto_scheme(X):
    nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
    text = sp.issparse(X) or nnz < _TEXT_DENSITY * max(X.size if not sp.issparse(X)
                                                       else X.shape[0] * X.shape[1], 1)
    return "l2" if text else "zscore"


def _concatenate(views):
    if any(sp.issparse(X) for X in views):
        X = sp.hstack([sp.csr_matrix(V, dtype=np.float64) for V in views], format="csr")
        X.sort_indices()
        return X
    return np.ascontiguousarray(np.hstack(views), dtype=np.float64)


def normalized_data(data: Data):
    """Normalised, concatenated ``X``, the view boundaries and the scheme of each view."""
    schemes = [(_auto_scheme(V) if data.normalize == "auto" else data.normalize)
               for V in data.views]
    return _normalized_with(data, schemes)


def _normalized_with(data: Data, schemes):
    normed = [_normalize_view(V, s) for V, s in zip(data.views, schemes)]
    view_ptr = np.concatenate([[0], np.cumsum([V.shape[1] for V in normed])]).astype(np.int64)
    return _concatenate(normed), view_ptr, schemes



def spreading_fold_scores(spreader, folds, n_folds):
    """Per fold, how well label spreading from the other folds' labels alone predicts the
    held-out labelled rows: the mean cosine between each held-out row's spread class scores
    and its class indicator (``F[i, y_i] / ‖F[i]‖``, 0 for a row no remaining label reaches;
    a graded score, steadier over few labels than the share of argmaxes right), from the
    :class:`~fastmv._mvfl._start.FoldSpreader` basis (no spreading per fold). ``nan`` for
    a fold with no held-out or no remaining label."""
    rows, classes, c = spreader.rows, spreader.classes, spreader.c
    GL = spreader.GT[:, rows]  # (l, l): each label's spreading read on the labelled rows
    onehot = np.zeros((c, rows.size))
    onehot[classes, np.arange(rows.size)] = 1.0
    out = np.full(n_folds, np.nan)
    for f in range(n_folds):
        te = folds == f
        n_te = int(te.sum())
        if not n_te or n_te == rows.size:
            continue
        S = onehot @ (GL[:, te] * (~te)[:, None])  # (c, held-out): the other folds' seeds
        norm = np.linalg.norm(S, axis=0)
        true = S[classes[te], np.arange(n_te)]
        out[f] = float(np.mean(np.divide(true, norm, out=np.zeros(n_te), where=norm > 0)))
    return out


def tune_normalize(data: Data, log):
    """``normalize="auto"`` with a prior: the scheme (one for every view) whose normalised
    concatenation predicts the held-out supervision best; the per-view rule of ``"auto"``
    without a prior ranks the candidates (its scheme first), so a tie keeps it.

    Labels (up to ``SPREAD_MAX_N`` samples): candidates ``_TUNE_SCHEMES``; per fold, the
    mean of the 1-nearest labelled neighbour's accuracy (:func:`fastmv._core._tuning.
    neighbour_score`) and of label spreading's cosine on the candidate's kNN graph
    (:func:`spreading_fold_scores`); the best mean wins. Pairs (and labels on more samples):
    candidates ``_TUNE_SCHEMES_PAIRS``, the pair-distance AUC (or the 1-nearest labelled
    neighbour), the rule's scheme kept unless another wins by more than the standard error
    of its gain (:func:`fastmv._core._tuning.grid_search`). When the rule calls every view
    text, ``"l2"`` is the only candidate.

    Returns ``(data, tuning, normed, spreader)``: the chosen scheme's
    :func:`_normalized_with`, which the solve then uses as it is, and with labels its
    :class:`~fastmv._mvfl._start.FoldSpreader` (``None`` when none was built), which the
    start's tuning reuses.
    """
    prior = data.prior
    sup = (from_labels(prior["rows"], prior["classes"]) if prior["kind"] == "labels"
           else from_pairs(prior["must"], prior["cannot"]))
    rule = [_auto_scheme(V) for V in data.views]
    first = max(set(rule), key=rule.count)
    # every view text or counts: "l2" is kept. Scaling such a view per feature multiplies a
    # rare term by ~1/its frequency, and the 1-NN proxy, noisy with few labels, picked that
    # on WebKB on one seed in five at a cost of 0.14 ACC (docs/records/mvfl.md, "Self-tuning")
    # above SPREAD_MAX_N samples (the kNN graph's cost) the 1-nearest labelled neighbour
    # judges the labels instead of spreading
    spread = sup.kind == "labels" and data.n <= SPREAD_MAX_N
    grid = _TUNE_SCHEMES if spread else _TUNE_SCHEMES_PAIRS
    candidates = ([first] if all(r == "l2" for r in rule)
                  else [first] + [s for s in grid if s != first])
    rng = tuning_rng(data.rng)
    n_folds = min(sup.rows.size, TUNE_INIT_FOLDS) if spread else _TUNE_FOLDS
    spaces, spreaders, scores = {}, {}, {}

    def space(scheme):
        if scheme not in spaces:
            spaces[scheme] = _normalized_with(data, [scheme] * len(data.views))
        return spaces[scheme]

    method = ("mean of the held-out labels' nearest-labelled-neighbour accuracy and the cosine "
              "of their spread class scores to their class (label spreading on the normalised "
              "views' kNN graph)" if spread
              else "1-nearest labelled neighbour on the normalised views"
              if sup.kind == "labels" else "AUC of pair distances on the normalised views")
    if sup.kind == "labels" and sup.rows.size < 2:
        # no fold can hold a labelled sample out and still predict it from another one
        record = untuned_record({"candidates": candidates, "method": method},
                                f"{sup.rows.size} labelled sample(s): at least 2 are needed "
                                "to score a normalisation on held-out labels")
        return data._replace(normalize=candidates[0]), {"normalize": record}, None, None
    folds = (label_folds(sup, n_folds, rng) if sup.kind == "labels"
             else pair_folds(sup, n_folds, rng))

    def evaluate(scheme, f):
        if not spread:
            return neighbour_score(space(scheme)[0], sup, folds, f), 0
        if scheme not in scores:
            X = space(scheme)[0]
            spreaders[scheme] = FoldSpreader(knn_graph(X), sup.rows, sup.classes, data.c)
            scores[scheme] = spreading_fold_scores(spreaders[scheme], folds, n_folds)
        # the mean of two predictions of the same held-out labels: spreading over the graph
        # (graded) and the nearest labelled neighbour: either alone can be fooled by one
        # scheme's graph, the two fail on different data (docs/mvfl.md)
        nearest = neighbour_score(space(scheme)[0], sup, folds, f)
        return 0.5 * (scores[scheme][f] + nearest), 0

    chosen, record = grid_search("normalize", candidates, evaluate, n_folds,
                                 method=method, log=log)
    if spread:
        # the best mean wins (ties: the earlier candidate), not only a gain beyond its
        # standard error: the order of the candidates is a guess, not a measured default,
        # so a one-standard-error rule would favour the guess over what the labels show
        best = max(range(len(candidates)), key=lambda g: (record["mean"][g], -g))
        chosen = record["chosen"] = candidates[best]
        record["rule"] = "best mean"
    if not np.isfinite(record["scores"]).any():
        record = untuned_record(record, "no validation fold could be scored (too little "
                                "supervision: every fold needs held-out and remaining labels, "
                                "or held-out must-links and cannot-links)")
    return (data._replace(normalize=chosen), {"normalize": record}, spaces.get(chosen),
            spreaders.get(chosen))
