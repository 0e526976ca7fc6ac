"""Shared helpers of the OPIMC tests: planted views, chunks built by the production builder."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmv._opimc._chunks import ChunkBuilder
from fastmv._opimc._sources import ArraySource
from tests.opimc import naive as N


def planted(n, dims, c, seed, noise=0.5, sparse_views=(), density=0.3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = []
    for v, d in enumerate(dims):
        C = rng.normal(size=(c, d)) * 3
        X = C[y] + noise * rng.normal(size=(n, d))
        if v in sparse_views:
            X = np.abs(X) * (rng.random((n, d)) < density)
            X[np.arange(n), rng.integers(0, d, n)] += 1.0      # no empty rows
            X = sp.csr_matrix(X)
        views.append(X)
    return views, y


def make_chunk(rng, s, dense_dims, sparse_dims, dtype, p_missing=0.3, normalize=True):
    """A chunk in the kernels' layout, built by the production builder from random views."""
    views = [rng.normal(size=(s, d)).astype(dtype) for d in dense_dims]
    for d in sparse_dims:
        X = sp.random(s, d, density=0.4, random_state=rng, format="csr", dtype=dtype)
        views.append(X)
    m = len(views)
    mask = rng.random((s, m)) > p_missing
    mask[np.arange(s), rng.integers(0, m, s)] = True
    src = ArraySource(views, mask, s)
    b = ChunkBuilder(src.spec, normalize, s)
    start, blocks, mb, _ = next(src.chunks())
    ch = b.build(start, blocks, mb)
    return b, ch


SHAPES = [  # (s, dense dims, sparse dims, c)
    (1, [3], [], 1),
    (7, [5, 1], [], 3),
    (40, [12, 30, 4], [], 5),
    (33, [], [25], 4),
    (50, [10], [40, 6], 6),
    (300, [64, 200], [90], 7),
]


def close(a, b, dtype=np.float64):
    tol = 1e-10 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------
# kernels against their twins
# ---------------------------------------------------------------------------------------


def dense_views_of(ch, b):
    """The compact dense blocks of a chunk, list of (s_v, d_v)."""
    return N._dense_views(ch.dense, b.view_ptr)
