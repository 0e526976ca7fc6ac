"""Data and the dense NumPy reference for the MVMC benchmarks (bench_mvmc.py) and
tools/scale_mvmc.py.

The reference is ``tests/naive_mvmc.py::mvmc_dense`` (one source of truth, also checked by
the test-suite against the solver): the same iteration with ``S``, ``S_ob`` and the mask held
as ``n × n`` arrays and the ``n × n`` masked residual formed at every gradient step.
"""
import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.naive_mvmc import mvmc_dense  # noqa: E402,F401


def synthetic_views(n, n_clusters=10, n_views=2, d=200, noise=2.0, random_state=0):
    """``n_views`` dense views ``(n, d)``: per-view cluster means (N(0, I) each) plus
    N(0, noise²) noise, and the labels (balanced, shuffled)."""
    rng = np.random.default_rng(random_state)
    y = np.arange(n) % n_clusters
    rng.shuffle(y)
    views = []
    for _ in range(n_views):
        means = rng.normal(size=(n_clusters, d))
        views.append(means[y] + noise * rng.normal(size=(n, d)))
    return views, y
