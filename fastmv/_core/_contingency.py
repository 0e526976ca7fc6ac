"""The contingency table of two labelings and every quality measure as a function of it,
for :mod:`fastmv.metrics` (which documents the conventions and validates the arguments)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from ._validation import check_labels

# Largest k1 * k2 for which tables are built dense (bincount) and the Hungarian matching runs
# on the dense table; beyond it the table is kept sparse (only its nonzero cells).
_DENSE_TABLE_LIMIT = 1 << 22
_DENSE_MATCH_LIMIT = 1 << 20


class _Table(NamedTuple):
    """Nonzero cells of the contingency table plus its margins (all int64)."""

    n: int
    rows: np.ndarray      # class index of each nonzero cell
    cols: np.ndarray      # cluster index of each nonzero cell
    counts: np.ndarray    # N_ij > 0
    row_sums: np.ndarray  # a_i, length k1 (all > 0)
    col_sums: np.ndarray  # b_j, length k2 (all > 0)

    @property
    def shape(self):
        return self.row_sums.shape[0], self.col_sums.shape[0]

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=np.int64)
        out[self.rows, self.cols] = self.counts
        return out

    def sparse(self) -> sp.csr_matrix:
        return sp.csr_matrix((self.counts, (self.rows, self.cols)), shape=self.shape)


def _factorize(y: np.ndarray):
    """Codes 0..k-1 of the distinct values of ``y`` in sorted order, and k.

    Integer labels with a range ≤ 4n + 1024 use a bincount (O(n + range)); anything else uses
    ``np.unique`` (O(n log n)).
    """
    if y.dtype == bool:
        y = y.astype(np.int8)
    if y.dtype.kind in "iu":
        lo, hi = int(y.min()), int(y.max())
        span = hi - lo + 1
        if span <= 4 * y.shape[0] + 1024 and hi <= np.iinfo(np.int64).max:
            shifted = y.astype(np.int64) - lo if lo != 0 or y.dtype != np.int64 else y
            present = np.bincount(shifted, minlength=span) > 0
            lut = np.cumsum(present, dtype=np.int64) - 1
            return lut[shifted], int(lut[-1]) + 1
    try:
        uniq, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:  # e.g. an object array mixing str and int
        raise TypeError(f"labels could not be compared/sorted: {exc}") from exc
    return codes.reshape(-1).astype(np.int64, copy=False), uniq.shape[0]


def _check_pair(y_true, y_pred):
    yt = check_labels(y_true, "y_true")
    yp = check_labels(y_pred, "y_pred")
    if yt.shape[0] == 0:
        raise ValueError("y_true is empty; at least one sample is required")
    if yp.shape[0] == 0:
        raise ValueError("y_pred is empty; at least one sample is required")
    if yt.shape[0] != yp.shape[0]:
        raise ValueError(f"y_true and y_pred must have the same length, got {yt.shape[0]} "
                         f"and {yp.shape[0]}")
    if yt.dtype.kind == "c" or yp.dtype.kind == "c":
        raise TypeError("y_true and y_pred must not be complex")
    return yt, yp


def contingency_table(y_true, y_pred) -> _Table:
    yt, yp = _check_pair(y_true, y_pred)
    try:
        a, k1 = _factorize(yt)
    except TypeError as exc:
        raise TypeError(f"y_true: {exc}") from exc
    try:
        b, k2 = _factorize(yp)
    except TypeError as exc:
        raise TypeError(f"y_pred: {exc}") from exc
    n = yt.shape[0]
    code = a * k2 + b
    if k1 * k2 <= max(_DENSE_TABLE_LIMIT, 2 * n):
        full = np.bincount(code, minlength=k1 * k2)
        nz = np.flatnonzero(full)
        counts = full[nz]
    else:
        nz, counts = np.unique(code, return_counts=True)
    rows, cols = np.divmod(nz, k2)
    row_sums = np.bincount(a, minlength=k1)
    col_sums = np.bincount(b, minlength=k2)
    return _Table(n, rows, cols, counts.astype(np.int64, copy=False), row_sums, col_sums)


def table_accuracy(t: _Table) -> float:
    k1, k2 = t.shape
    if k1 * k2 <= _DENSE_MATCH_LIMIT:
        C = t.dense()
        r, c = linear_sum_assignment(C, maximize=True)
        return float(C[r, c].sum()) / t.n
    # Sparse LAPJV on the nonzero cells. Rows = the smaller side; one private dummy column per
    # row (weight 1) guarantees a full matching; real cells weigh N_ij + 1, so the optimum is
    # (best total of matched N_ij) + (number of rows).
    rows, cols = (t.rows, t.cols) if k1 <= k2 else (t.cols, t.rows)
    kr, kc = (k1, k2) if k1 <= k2 else (k2, k1)
    dummy = np.arange(kr, dtype=np.int64)
    G = sp.csr_matrix(
        (np.concatenate([t.counts + 1.0, np.ones(kr)]),
         (np.concatenate([rows, dummy]), np.concatenate([cols, kc + dummy]))),
        shape=(kr, kc + kr))
    r, c = min_weight_full_bipartite_matching(G, maximize=True)
    real = c < kc
    total = np.asarray(G[r[real], c[real]]).ravel().sum() - real.sum()
    return float(round(total)) / t.n


def _h(counts: np.ndarray, n: int) -> float:
    """Entropy (nats) of a distribution given by positive counts summing to n."""
    p = counts / n
    return float(-np.sum(p * (np.log(counts) - math.log(n))))


def _mi(t: _Table) -> float:
    n = t.n
    k1, k2 = t.shape
    if k1 == 1 or k2 == 1:
        return 0.0
    p = t.counts / n
    outer = t.row_sums[t.rows].astype(np.float64) * t.col_sums[t.cols]
    terms = p * (np.log(t.counts) - math.log(n)) + p * (2.0 * math.log(n) - np.log(outer))
    return max(float(terms.sum()), 0.0)


def table_nmi(t: _Table, average_method: str) -> float:
    k1, k2 = t.shape
    if k1 == k2 == 1:
        return 1.0
    mi = _mi(t)
    if mi <= 0.0:
        return 0.0
    hu, hv = _h(t.row_sums, t.n), _h(t.col_sums, t.n)
    if average_method == "geometric":
        norm = math.sqrt(hu * hv)
    elif average_method == "arithmetic":
        norm = 0.5 * (hu + hv)
    elif average_method == "min":
        norm = min(hu, hv)
    elif average_method == "max":
        norm = max(hu, hv)
    else:  # joint entropy H(U, V)
        norm = _h(t.counts, t.n)
    return float(mi / norm)


def _pair_counts(t: _Table):
    """(TP, pairs together in y_pred, pairs together in y_true, total pairs) as Python ints."""
    n = t.n
    c = t.counts
    tp = int(np.dot(c, c - 1)) // 2
    pred = int(np.dot(t.col_sums, t.col_sums - 1)) // 2
    true = int(np.dot(t.row_sums, t.row_sums - 1)) // 2
    return tp, pred, true, n * (n - 1) // 2


def table_ari(t: _Table) -> float:
    tp, pred, true, total = _pair_counts(t)
    fp = pred - tp
    fn = true - tp
    tn = total - tp - fp - fn
    if fn == 0 and fp == 0:
        return 1.0
    # scikit-learn's formula (its counts are of ordered pairs: all ×2, which cancels)
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def table_prf(t: _Table):
    tp, pred, true, _ = _pair_counts(t)
    prec = tp / pred if pred > 0 else 1.0
    rec = tp / true if true > 0 else 1.0
    f = 2.0 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
    return float(prec), float(rec), float(f)


def table_purity(t: _Table) -> float:
    k2 = t.shape[1]
    best = np.zeros(k2, dtype=np.int64)
    np.maximum.at(best, t.cols, t.counts)
    return float(best.sum()) / t.n


def table_entropy(t: _Table, base: float) -> float:
    # Σ_ij (N_ij / n) log(b_j / N_ij) = H(U | V)
    p = t.counts / t.n
    h = float(np.sum(p * (np.log(t.col_sums[t.cols]) - np.log(t.counts))))
    return max(h, 0.0) / math.log(base)
