"""The three kinds of damage :func:`fastmv.simulate.corrupt` applies (EMVC's robustness
experiments): Gaussian noise at an SNR, random entries, whole samples. Dense inputs give dense
outputs and sparse inputs stay sparse where the damage keeps them sparse."""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ._pair_codes import round_half_up, sample_codes

CORRUPTION_KINDS = ("gaussian", "entries", "samples")


def _range(X):
    if sp.issparse(X):
        lo, hi = (float(X.data.min()), float(X.data.max())) if X.nnz else (0.0, 0.0)
        if X.nnz < X.shape[0] * X.shape[1]:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        return lo, hi
    return float(X.min()), float(X.max())


def add_gaussian_noise(X, snr_db, rng):
    n, d = X.shape
    if sp.issparse(X):
        power = float(np.dot(X.data, X.data)) / (n * d)
        out = X.toarray()
    else:
        power = float(np.mean(np.square(X, dtype=np.float64)))
        out = X.copy()
    sigma = math.sqrt(power / 10.0 ** (snr_db / 10.0))
    out += (sigma * rng.standard_normal((n, d))).astype(out.dtype, copy=False)
    return out


def corrupt_entries(X, level, rng):
    n, d = X.shape
    lo, hi = _range(X)
    codes = sample_codes(n * d, round_half_up(level * n * d), rng)
    values = rng.uniform(lo, hi, size=codes.shape[0])
    if not sp.issparse(X):
        out = X.copy()
        out.reshape(-1)[codes] = values
        return out
    coo = X.tocoo()
    old = coo.row.astype(np.int64) * d + coo.col
    hit = np.zeros(old.shape[0], dtype=bool)
    if codes.size:
        pos = np.minimum(np.searchsorted(codes, old), codes.size - 1)
        hit = codes[pos] == old
    rows = np.concatenate([coo.row[~hit].astype(np.int64), codes // d])
    cols = np.concatenate([coo.col[~hit].astype(np.int64), codes % d])
    data = np.concatenate([coo.data[~hit], values.astype(X.dtype)])
    out = sp.csr_matrix((data, (rows, cols)), shape=(n, d), dtype=X.dtype)
    out.sort_indices()
    return out


def corrupt_samples(X, rows, rng):
    n, d = X.shape
    lo, hi = _range(X)
    values = rng.uniform(lo, hi, size=(rows.shape[0], d)).astype(X.dtype, copy=False)
    if not sp.issparse(X):
        out = X.copy()
        out[rows] = values
        return out
    keep = np.ones(n, dtype=X.dtype)
    keep[rows] = 0
    kept = sp.diags(keep).tocsr() @ X
    kept.eliminate_zeros()
    noise = sp.csr_matrix((values.reshape(-1),
                           (np.repeat(rows, d), np.tile(np.arange(d), rows.shape[0]))),
                          shape=(n, d), dtype=X.dtype)
    out = (kept + noise).tocsr()
    out.sort_indices()
    return out
