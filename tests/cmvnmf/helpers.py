"""Inputs the CMVNMF tests share: random problems with pairs, planted unmapped views."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmv import simulate


def without(pairs, other, symmetric=False):
    """``pairs`` minus the rows that are also in ``other`` (either orientation if symmetric)."""
    key = [tuple(p) for p in other] + ([tuple(p[::-1]) for p in other] if symmetric else [])
    keep = [tuple(p) not in set(key) for p in pairs]
    return pairs[np.asarray(keep, dtype=bool)]


def random_problem(rng, n_list=(30, 25, 18), d_list=(6, 9, 4), c=3, sparse=False, intra=True,
                    transposed=True, n_pairs=40):
    X = []
    for n, d in zip(n_list, d_list):
        A = rng.random((n, d))
        if sparse:
            A[rng.random((n, d)) < 0.6] = 0.0
            A[0] = 0.0  # an all-zero row
            A = sp.csr_matrix(A)
        X.append(A)
    ml, cl = {}, {}
    m = len(n_list)
    for a in range(m):
        for b in range(a + 1, m):
            pm, pc = (np.column_stack([rng.integers(0, n_list[a], n_pairs),
                                       rng.integers(0, n_list[b], n_pairs)]) for _ in range(2))
            pc = without(pc, pm)
            if transposed and (a + b) % 2:
                ml[(b, a)] = pm[:, ::-1]
                cl[(b, a)] = pc[:, ::-1]
            else:
                ml[(a, b)] = pm
                cl[(a, b)] = pc
    if intra:
        i = rng.integers(0, n_list[0], 20)
        j = (i + 1 + rng.integers(0, n_list[0] - 1, 20)) % n_list[0]
        ml[(0, 0)] = np.column_stack([i, j])
        k = (i[:10] + 2) % n_list[0]
        cl[(0, 0)] = without(np.column_stack([k, i[:10]]), ml[(0, 0)], symmetric=True)
    U0 = [rng.random((d, c)) for d in d_list]
    V0 = [rng.random((n, c)) for n in n_list]
    return X, ml, cl, U0, V0


def planted_unmapped(seed, n=300, c=4, noise=0.4, sparse=False):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    views = []
    for d in (20, 12, 30):
        centers = rng.gamma(2.0, 1.0, (c, d)) * (rng.random((c, d)) < 0.5)
        X = centers[y] + noise * rng.random((n, d))
        views.append(sp.csr_matrix(X) if sparse else X)
    return simulate.unmapped(views, y, keep=0.95, random_state=rng), rng
