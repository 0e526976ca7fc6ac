"""Warm-up calls: one tiny synthetic solve per solver that compiles (or loads from Numba's
cache) the kernels the solver uses, for a dtype and dense or sparse input. The demo times
them apart from its settings, and ``python -m fastmv compile`` runs every variant.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import scipy.sparse as sp

import fastmv

from .._blocks._affinity import transition_matrices


def _accepts(func, name):
    return name in inspect.signature(func).parameters


def _call(func, *args, **kwargs):
    """A warm-up call: keyword arguments ``func`` does not take are dropped (``warn``
    exists on some solvers only) and warnings are silenced (a few iterations on tiny data
    are expected to stop at ``max_iter``)."""
    params = inspect.signature(func).parameters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **{k: v for k, v in kwargs.items() if k in params})


def opimc_passes(passes):
    """OPIMC's number of passes: ``n_passes`` in older signatures, ``max_iter`` in newer."""
    return {"n_passes" if _accepts(fastmv.opimc, "n_passes") else "max_iter": passes}


def _blobs(n, dims, c, *, dtype=np.float64, sparse=False, seed=0, nonnegative=False):
    """Small well-separated multi-view blobs (views of the same ``n`` samples)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    views = []
    for d in dims:
        centres = rng.random((c, d)) * 4
        X = centres[y] + 0.3 * rng.standard_normal((n, d))
        if nonnegative or sparse:
            X = np.abs(X)
        if sparse:
            X[rng.random(X.shape) < 0.5] = 0.0
            X = sp.csr_matrix(X.astype(dtype))
        else:
            X = X.astype(dtype)
        views.append(X)
    return views, y


def mvmc_warmup(dtype=np.float64, sparse=False):
    views, y = _blobs(60, (5, 4), 3, dtype=dtype, sparse=sparse)
    ml, cl = fastmv.simulate.pairwise_constraints(y, 200, random_state=0)
    _call(fastmv.mvmc, views, 3, ml, cl, k=4, max_iter=2, random_state=0, warn=False)


def mvfl_warmup(dtype=np.float64, sparse=False):
    views, y = _blobs(60, (5, 4), 3, dtype=dtype, sparse=sparse)
    lab = fastmv.simulate.partial_labels(y, 0.3, random_state=0)
    _call(fastmv.mvfl, views, 3, labels=lab, max_iter=2, random_state=0, warn=False)
    ml, cl = fastmv.simulate.pairwise_constraints(y, 50, random_state=0)
    _call(fastmv.mvfl, views, 3, must_link=ml, cannot_link=cl, max_iter=2, random_state=0,
          warn=False)


def emvc_warmup(dtype=np.float64, sparse=False):
    views, _ = _blobs(40, (5, 4), 3, sparse=sparse)
    P_list = [P.astype(dtype) for P in transition_matrices(views)]
    _call(fastmv.emvc, P_list, 0.01, 0.01, n_clusters=3, max_iter=3, random_state=0,
          warn=False, dtype=dtype)


def cmvnmf_warmup(dtype=np.float64, sparse=False):
    views, y = _blobs(40, (5, 4), 3, dtype=dtype, sparse=sparse, nonnegative=True)
    ml, cl = fastmv.simulate.inter_view_constraints([y, y], ratio=0.05, random_state=0)
    _call(fastmv.cmvnmf, views, 3, ml, cl, max_iter=2, random_state=0, warn=False)


def opimc_warmup(dtype=np.float64, sparse=False):
    # five views, as in the demo: the per-view gather kernel is specialised on their number
    views, _ = _blobs(60, (5, 4, 3, 3, 3), 3, dtype=dtype, sparse=sparse)
    mask = fastmv.simulate.incomplete_mask(60, 5, 0.3, random_state=0)
    _call(fastmv.opimc, views, 3, mask=mask, chunk_size=20, random_state=0, **opimc_passes(2))
