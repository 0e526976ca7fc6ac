"""Inputs the MVFL tests share: random pair sets, views, planted blobs, tolerances."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmv import simulate
from fastmv._mvfl import _fstep as FS

FLOATS = [np.float64, np.float32]


def tol_for(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def random_ip(rng, n, p, dtype=np.float64):
    if n < 2 or p == 0:
        return FS.empty_csr(n)
    pairs = rng.integers(0, n, size=(p, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    must = rng.random(len(pairs)) < 0.4
    indptr, indices, data = FS.pair_csr(n, pairs[must], pairs[~must])
    return indptr, indices, data.astype(dtype)


def make_views(rng, n, dims, sparse=False):
    out = []
    for d in dims:
        X = rng.normal(size=(n, d))
        if sparse:
            X = sp.csr_matrix(X * (rng.random((n, d)) < 0.3))
        out.append(X)
    return out


def pairs_from_labelled(y, ratio, rng):
    return simulate.pairs_from_labels(simulate.partial_labels(y, ratio, random_state=rng))


def planted_blobs(rng, n_per, c, dims, sep=4.0, noise=1.0):
    y = np.repeat(np.arange(c), n_per)
    views = []
    for d in dims:
        centers = rng.normal(size=(c, d)) * sep
        views.append(centers[y] + noise * rng.normal(size=(y.size, d)))
    return views, y


def prior_kwargs(rng, n, c, prior, frac=0.3):
    if prior == "labels":
        lab = rng.integers(0, c, n)
        lab[rng.random(n) > frac] = -1
        return {"labels": lab}
    if prior == "pairs":
        pairs = rng.integers(0, n, size=(2 * n, 2))
        pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
        s = rng.random(len(pairs)) < 0.3
        return {"must_link": pairs[s], "cannot_link": pairs[~s]}
    return {}
