"""External clustering-quality measures: compare a clustering ``y_pred`` with the truth ``y_true``
(docs/algorithms.md §6.5).

Every measure is a function of the contingency table ``N[i, j]`` = number of samples of true
class ``i`` put in predicted cluster ``j`` (:func:`contingency_matrix`). Building the table costs
O(n) for integer labels whose range is at most a few times ``n`` (a ``bincount``), O(n log n)
otherwise (a sort); every measure then costs O(nnz(N)) ≤ O(min(n, k1 k2)) on top, except
:func:`accuracy`, whose optimal one-to-one matching (Hungarian algorithm) costs
O(k1 k2 min(k1, k2)).
No measure ever forms anything of size n² (pair counts come from the table).
:func:`evaluate` builds the table once and returns all measures.

Labels may be any integers (negative, non-consecutive), strings, booleans or finite floats;
only equality between labels matters. ``y_true`` and ``y_pred`` may have different numbers of
distinct labels.

Conventions (n = number of samples, ``a_i`` = class sizes, ``b_j`` = cluster sizes):

- ``accuracy`` = max over one-to-one maps from clusters to classes of the fraction of samples
  whose cluster is mapped to their class (clusters left unmatched when there are more clusters
  than classes count as errors).
- ``nmi`` = I(U; V) / mean(H(U), H(V)) with the mean chosen by ``average_method``
  (``"geometric"`` = Strehl & Ghosh (2002), the default). As in scikit-learn: 1.0 when both
  labelings are a single cluster (both entropies 0: nothing to disagree on), 0.0 when the mutual
  information is 0 (in particular when exactly one side is a single cluster).
- ``ari`` = Hubert & Arabie's adjusted Rand index (scikit-learn's formula, 1.0 when the two
  labelings agree on every pair, including n = 1).
- ``precision``, ``recall``, ``f_score``: pairwise. Over the n(n-1)/2 unordered sample pairs,
  TP = pairs in the same class and the same cluster = Σ C(N_ij, 2);
  precision = TP / Σ_j C(b_j, 2); recall = TP / Σ_i C(a_i, 2); F = 2PR / (P + R).
  When no pair is put together (every cluster a singleton) precision is 1 (no false joins);
  when no pair belongs together recall is 1; F is 0 when P + R = 0.
- ``purity`` = (1/n) Σ_j max_i N_ij.
- ``entropy`` = average cluster entropy Σ_j (b_j/n) H(class | cluster j), i.e. the conditional
  entropy H(U | V), in bits by default (``base=2``; lower is better; 0 for a perfect
  clustering, H(U) for a single cluster). This is the "average entropy" of the MVMC, MVFL and
  EMVC papers (their values for two balanced classes and no information are 1.0, i.e. base 2).

Validation: both arguments must be 1-D, non-empty, of equal length, without NaN
(``ValueError`` naming ``y_true`` / ``y_pred``). :func:`evaluate` also takes one labelling
per view (CMVNMF's per-view labels), scored per view and averaged.

The table and the measures' arithmetic are in :mod:`fastmv._core._contingency`; this module holds
the public functions, their validation and their documentation.
"""
from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._core._contingency import (
    contingency_table,
    table_accuracy,
    table_ari,
    table_entropy,
    table_nmi,
    table_prf,
    table_purity,
)
from ._core._validation import Interval, Options, declare_params
from .exceptions import InvalidParameterError

__all__ = [
    "contingency_matrix",
    "accuracy",
    "nmi",
    "ari",
    "precision",
    "recall",
    "f_score",
    "purity",
    "entropy",
    "evaluate",
]

_AVERAGE_METHODS = ("geometric", "arithmetic", "min", "max", "joint")

@declare_params({
    "y_true": ["array-like"],
    "y_pred": ["array-like"],
    "sparse": ["boolean"],
})
def contingency_matrix(y_true: ArrayLike, y_pred: ArrayLike, *, sparse: bool = False) -> Any:
    """Contingency table of two labelings.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Labels (any integers, strings, booleans or finite floats).
    sparse : bool, default False
        Return a ``scipy.sparse.csr_matrix`` instead of a dense array.

    Returns
    -------
    N : ndarray of shape (k1, k2), int64 (or CSR)
        ``N[i, j]`` = number of samples whose true label is the ``i``-th smallest distinct value of
        ``y_true`` and whose predicted label is the ``j``-th smallest distinct value of ``y_pred``.

    Notes
    -----
    O(n) time for integer labels of range ≤ 4n (else O(n log n)); memory O(n + k1 k2) dense,
    O(n + nnz) sparse.

    Examples
    --------
    >>> from fastmv.metrics import contingency_matrix
    >>> contingency_matrix([0, 0, 1, 1], ["a", "b", "b", "b"]).tolist()
    [[1, 1], [0, 2]]
    """
    t = contingency_table(y_true, y_pred)
    return t.sparse() if sparse else t.dense()


# the declaration of every metric that compares two labelings
_TWO_LABELINGS = {"y_true": ["array-like"], "y_pred": ["array-like"]}


@declare_params(_TWO_LABELINGS)
def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Clustering accuracy under the best one-to-one matching of clusters to classes.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        True classes and predicted clusters (any labels; the numbers of distinct values may
        differ).

    Returns
    -------
    float in (0, 1]
        ``max_σ (1/n) Σ_i [σ(y_pred[i]) == y_true[i]]`` over injective maps σ between the
        distinct predicted and true labels (unmatched clusters count as errors).

    Notes
    -----
    Hungarian algorithm (``scipy.optimize.linear_sum_assignment``) on the k1 × k2 contingency
    table: O(n + k1 k2 min(k1, k2)) time, O(n + k1 k2) memory. When k1 k2 > 2^20 the sparse
    Jonker–Volgenant solver (``scipy.sparse.csgraph.min_weight_full_bipartite_matching``) runs on
    the nonzero cells only.

    Examples
    --------
    >>> from fastmv.metrics import accuracy
    >>> accuracy([0, 0, 1, 1, 2, 2], [1, 1, 0, 0, 0, 2])
    0.8333333333333334
    """
    return table_accuracy(contingency_table(y_true, y_pred))


@declare_params({
    "y_true": ["array-like"],
    "y_pred": ["array-like"],
    "average_method": [Options(set(_AVERAGE_METHODS))],
})
def nmi(y_true: ArrayLike, y_pred: ArrayLike, average_method: str = "geometric") -> float:
    """Normalized mutual information.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    average_method : {"geometric", "arithmetic", "min", "max", "joint"}, default "geometric"
        Normaliser of I(U; V): sqrt(H(U) H(V)) (Strehl & Ghosh 2002, the papers' choice),
        (H(U) + H(V)) / 2, min, max (as in scikit-learn), or the joint entropy H(U, V).

    Returns
    -------
    float in [0, 1]
        1.0 when both labelings have a single cluster; 0.0 when I(U; V) = 0 (scikit-learn's
        conventions; values agree with ``sklearn.metrics.normalized_mutual_info_score`` to
        rounding for the four methods it offers).

    Notes
    -----
    Natural logarithms (the ratio does not depend on the base). O(n) time for integer labels
    (O(n log n) otherwise), O(n + k1 k2) memory.

    Examples
    --------
    >>> from fastmv.metrics import nmi
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> nmi([0, 0, 1, 1], [0, 1, 0, 1])
    0.0
    """
    return table_nmi(contingency_table(y_true, y_pred), average_method)


@declare_params(_TWO_LABELINGS)
def ari(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)

    Returns
    -------
    float in [-0.5, 1]
        1.0 for identical partitions (up to relabelling), about 0 for independent ones. Uses
        exact integer pair counts (no overflow) and scikit-learn's special case (1.0 when the two
        labelings agree on every pair, e.g. n = 1).

    Notes
    -----
    O(n) time for integer labels (O(n log n) otherwise), from contingency counts; no n² loop.

    Examples
    --------
    >>> from fastmv.metrics import ari
    >>> ari([0, 0, 1, 1], [5, 5, 7, 7])
    1.0
    """
    return table_ari(contingency_table(y_true, y_pred))


@declare_params(_TWO_LABELINGS)
def precision(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pairwise precision: of the sample pairs put in one cluster, the fraction that share a class.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        True classes and predicted clusters.

    Returns
    -------
    float in [0, 1]
        ``TP / Σ_j C(b_j, 2)``; 1.0 when ``y_pred`` joins no pair (all clusters singletons).

    See Also
    --------
    f_score : the conventions, and the cost (O(n + nnz) from the contingency table).

    Examples
    --------
    >>> from fastmv.metrics import precision
    >>> precision([0, 0, 1, 1], [0, 0, 0, 0])
    0.3333333333333333
    """
    return table_prf(contingency_table(y_true, y_pred))[0]


@declare_params(_TWO_LABELINGS)
def recall(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pairwise recall: of the sample pairs sharing a class, the fraction put in one cluster.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        True classes and predicted clusters.

    Returns
    -------
    float in [0, 1]
        ``TP / Σ_i C(a_i, 2)``; 1.0 when ``y_true`` has no pair of samples in one class.

    See Also
    --------
    f_score : the conventions, and the cost (O(n + nnz) from the contingency table).

    Examples
    --------
    >>> from fastmv.metrics import recall
    >>> recall([0, 0, 1, 1], [0, 0, 0, 0])
    1.0
    """
    return table_prf(contingency_table(y_true, y_pred))[1]


@declare_params(_TWO_LABELINGS)
def f_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pairwise F-score, the harmonic mean of pairwise :func:`precision` and :func:`recall`.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)

    Returns
    -------
    float in [0, 1]
        ``2 P R / (P + R)`` with TP = Σ_ij C(N_ij, 2), P = TP / Σ_j C(b_j, 2),
        R = TP / Σ_i C(a_i, 2) over unordered pairs (0 when P + R = 0).

    Notes
    -----
    O(n) (integer labels) from the contingency table's counts, in exact integer arithmetic;
    never a loop over the n(n-1)/2 pairs.

    Examples
    --------
    >>> from fastmv.metrics import f_score
    >>> f_score([0, 0, 1, 1], [0, 0, 0, 0])
    0.5
    """
    return table_prf(contingency_table(y_true, y_pred))[2]


@declare_params(_TWO_LABELINGS)
def purity(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Purity: (1/n) Σ_j max_i N_ij — each cluster counted as its majority class.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        True classes and predicted clusters.

    Returns
    -------
    float in (0, 1]
        The fraction of samples in their cluster's majority class; O(n + nnz).

    Examples
    --------
    >>> from fastmv.metrics import purity
    >>> purity([0, 0, 1, 1, 1], [0, 0, 0, 1, 1])
    0.8
    """
    return table_purity(contingency_table(y_true, y_pred))


@declare_params({
    "y_true": ["array-like"],
    "y_pred": ["array-like"],
    "base": [Interval(Real, 1, None, closed="neither")],
})
def entropy(y_true: ArrayLike, y_pred: ArrayLike, *, base: float = 2) -> float:
    """Average cluster entropy (lower is better).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    base : float, default 2
        Logarithm base (2: bits, as in the MVMC / MVFL / EMVC papers' tables; ``math.e``: nats).

    Returns
    -------
    float ≥ 0
        ``Σ_j (b_j / n) Σ_i -(N_ij / b_j) log(N_ij / b_j)``: the entropy of the true classes inside
        each predicted cluster, weighted by cluster size, which equals the conditional entropy
        H(U | V). 0 when every cluster is pure; H(U) for a single cluster.

    Notes
    -----
    O(n + nnz) from the contingency table.

    Examples
    --------
    >>> from fastmv.metrics import entropy
    >>> entropy([0, 1, 0, 1], [0, 0, 0, 0])
    1.0
    """
    return table_entropy(contingency_table(y_true, y_pred), float(base))


def _per_view(y_true, y_pred):
    """``(y_true_v, y_pred_v)`` per view when ``y_pred`` holds one labelling per view (a list
    of 1-D arrays or an ``(m, n)`` array), else None. ``y_true`` is then either one labelling
    shared by every view (views of the same samples) or one per view."""
    if isinstance(y_pred, (list, tuple)):
        preds = [np.asarray(p) for p in y_pred]
        if not preds or any(p.ndim != 1 for p in preds):
            return None
    else:
        arr = np.asarray(y_pred)
        if arr.ndim != 2:
            return None
        preds = list(arr)
    m = len(preds)
    if isinstance(y_true, (list, tuple)) and len(y_true) and all(
            np.ndim(t) == 1 for t in y_true):
        truths = [np.asarray(t) for t in y_true]
    else:
        truths = np.asarray(y_true)
        truths = list(truths) if truths.ndim == 2 else [truths] * m
    if len(truths) != m:
        raise InvalidParameterError(
            f"y_true holds {len(truths)} labellings but y_pred holds {m} (one per view): give "
            "one y_true shared by every view, or one per view")
    return list(zip(truths, preds))


def _scores(y_true, y_pred):
    t = contingency_table(y_true, y_pred)
    prec, rec, f = table_prf(t)
    return {
        "acc": table_accuracy(t),
        "nmi": table_nmi(t, "geometric"),
        "ari": table_ari(t),
        "f_score": f,
        "precision": prec,
        "recall": rec,
        "purity": table_purity(t),
        "entropy": table_entropy(t, 2.0),
    }


@declare_params(_TWO_LABELINGS)
def evaluate(y_true: ArrayLike, y_pred: ArrayLike) -> dict:
    """All measures at once (the contingency table is built once per labelling).

    Parameters
    ----------
    y_true : array-like of shape (n,), or one array-like per view
        True classes: one labelling, or (with per-view ``y_pred``) a list of per-view
        labellings or an ``(m, n)`` array.
    y_pred : array-like of shape (n,), or one array-like per view
        Predicted clusters: one labelling, or one per view (a list of 1-D arrays, e.g.
        ``CMVNMF``'s ``view_labels_`` or :func:`fastmv.cmvnmf`'s ``labels``, or an ``(m, n)``
        array). Per-view labels are scored per view against that view's truth (``y_true``
        itself when it is a single labelling) and the scores averaged: each view's cluster
        numbers are matched to the classes on their own, as the command line and the
        estimators' ``score`` do.

    Returns
    -------
    dict
        Keys ``acc``, ``nmi`` (geometric), ``ari``, ``f_score``, ``precision``, ``recall``,
        ``purity``, ``entropy`` (base 2), values Python floats (means over the views for
        per-view labels).

    Notes
    -----
    Cost of one contingency table plus one Hungarian matching (see :func:`accuracy`) per
    labelling.

    Examples
    --------
    >>> from fastmv.metrics import evaluate
    >>> scores = evaluate([0, 0, 1, 1], [1, 1, 0, 0])
    >>> scores["acc"], scores["nmi"], scores["entropy"]
    (1.0, 1.0, 0.0)
    >>> evaluate([0, 0, 1, 1], [[1, 1, 0, 0], [0, 1, 0, 0]])["acc"]  # two views: (1 + 0.75) / 2
    0.875
    """
    views = _per_view(y_true, y_pred)
    if views is None:
        return _scores(y_true, y_pred)
    per_view = []
    for v, (t, p) in enumerate(views):
        try:
            per_view.append(_scores(t, p))
        except ValueError as exc:
            raise type(exc)(f"view {v}: {exc}") from exc
    return {k: float(np.mean([s[k] for s in per_view])) for k in per_view[0]}


def __dir__():  # dir(module) lists the public names, not the imports
    return list(__all__)
