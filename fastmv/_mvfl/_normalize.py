"""MVFL's per-view scaling (``normalize``) and its choice from the labels or pairs
(``normalize="auto"``; docs/defaults.md, "Self-tuning")."""
from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # annotations only: _solver imports this module
    from ._solver import _Data

__all__ = ["_normalize_view", "_auto_scheme", "_concatenate", "_normalized_data",
           "_normalized_with", "_tune_normalize"]

# normalize="auto": a view that is sparse, or dense with fewer nonzeros than this fraction
# (text or counts stored densely), is scaled per sample ("l2"); other views per feature
# ("zscore"). Evidence: docs/records/mvfl.md.
_TEXT_DENSITY = 0.1
# normalize="auto" with labels or pairs: the schemes compared by internal validation, and
# its folds (docs/defaults.md, "Self-tuning"). The proxy fits nothing heavier than a
# nearest-neighbour rule, so five folds cost next to nothing beside one solve.
_TUNE_SCHEMES = ("l2", "zscore")
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

    Every scheme is a per-feature or per-sample *scaling*: column shifts are irrelevant to
    MVFL (the intercept ``b`` absorbs them and the ``W`` step centres implicitly). Each
    column is first divided by its largest absolute entry, so that no square overflows or
    underflows: ``c·X`` normalises like ``X`` for ``c`` from 1e-300 to 1e300.
    """
    if scheme is None:
        return X
    if scheme == "l2":
        return normalize_rows(X, "l2")
    Y = _scale_columns(X.astype(np.float64), 1.0 / _column_scale(X))
    if scheme == "zscore":
        if sp.issparse(Y):
            mean = np.asarray(Y.mean(axis=0)).ravel()
            spread = np.sqrt(np.maximum(np.asarray(Y.multiply(Y).mean(axis=0)).ravel()
                                        - mean ** 2, 0.0))
        else:
            spread = Y.std(axis=0)
        extra = 1.0 / np.sqrt(X.shape[1])  # every view then has total variance 1
    else:  # "minmax"
        if sp.issparse(Y):
            spread = (Y.max(axis=0).toarray() - Y.min(axis=0).toarray()).ravel()
        else:
            spread = Y.max(axis=0) - Y.min(axis=0)
        extra = 1.0
    s = np.zeros_like(spread)
    np.divide(extra, spread, out=s, where=spread > 0)  # constant features are zeroed
    return _scale_columns(Y, s)


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


def _normalized_data(data: _Data):
    """Normalised, concatenated ``X``, the view boundaries and the scheme of each view."""
    schemes = [(_auto_scheme(V) if data.normalize == "auto" else data.normalize)
               for V in data.views]
    return _normalized_with(data, schemes)


def _normalized_with(data: _Data, schemes):
    normed = [_normalize_view(V, s) for V, s in zip(data.views, schemes)]
    view_ptr = np.concatenate([[0], np.cumsum([V.shape[1] for V in normed])]).astype(np.int64)
    return _concatenate(normed), view_ptr, schemes



def _tune_normalize(data: _Data, log):
    """``normalize="auto"`` with a prior: the scheme (one for every view) whose normalised
    concatenation predicts the held-out supervision best (:func:`fastmv._core._tuning.
    neighbour_score`: 1-nearest labelled neighbour, or the pair-distance AUC); the per-view
    rule of ``"auto"`` without a prior ranks the candidates, so a tie keeps it. When the
    rule calls every view text, ``"l2"`` is the only candidate. Also returns the chosen
    scheme's :func:`_normalized_with`, which the solve then uses as it is."""
    prior = data.prior
    sup = (from_labels(prior["rows"], prior["classes"]) if prior["kind"] == "labels"
           else from_pairs(prior["must"], prior["cannot"]))
    rule = [_auto_scheme(V) for V in data.views]
    first = max(set(rule), key=rule.count)
    # every view text or counts: "l2" is kept. Scaling such a view per feature multiplies a
    # rare term by ~1/its frequency, and the 1-NN proxy, noisy with few labels, picked that
    # on WebKB on one seed in five at a cost of 0.14 ACC (docs/records/mvfl.md, "Self-tuning")
    candidates = ([first] if all(r == "l2" for r in rule)
                  else [first] + [s for s in _TUNE_SCHEMES if s != first])
    rng = tuning_rng(data.rng)
    folds = (label_folds(sup, _TUNE_FOLDS, rng) if sup.kind == "labels"
             else pair_folds(sup, _TUNE_FOLDS, rng))
    spaces = {}

    def evaluate(scheme, f):
        if scheme not in spaces:
            spaces[scheme] = _normalized_with(data, [scheme] * len(data.views))
        return neighbour_score(spaces[scheme][0], sup, folds, f), 0

    method = ("1-nearest labelled neighbour on the normalised views" if sup.kind == "labels"
              else "AUC of pair distances on the normalised views")
    if sup.kind == "labels" and sup.rows.size < 2:
        # no fold can hold a labelled sample out and still predict it from another one
        record = untuned_record({"candidates": candidates, "method": method},
                                f"{sup.rows.size} labelled sample(s): at least 2 are needed "
                                "to score a normalisation on held-out labels")
        return data._replace(normalize=candidates[0]), {"normalize": record}, None
    chosen, record = grid_search("normalize", candidates, evaluate, _TUNE_FOLDS,
                                 method=method, log=log)
    if not np.isfinite(record["scores"]).any():
        record = untuned_record(record, "no validation fold could be scored (too little "
                                "supervision: every fold needs held-out and remaining labels, "
                                "or held-out must-links and cannot-links)")
    return data._replace(normalize=chosen), {"normalize": record}, spaces.get(chosen)
