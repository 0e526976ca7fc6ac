"""Synthetic multi-view data with planted clusters for the MVMC benchmarks and scale runs."""
import numpy as np


def synthetic_views(n, n_clusters=10, n_views=2, d=200, noise=2.0, random_state=0):
    """``n_views`` dense views ``(n, d)``: cluster means (N(0, I) each) plus N(0, noise²) noise,
    and the labels (balanced, shuffled)."""
    rng = np.random.default_rng(random_state)
    y = np.arange(n) % n_clusters
    rng.shuffle(y)
    views = []
    for _ in range(n_views):
        means = rng.normal(size=(n_clusters, d))
        views.append(means[y] + noise * rng.normal(size=(n, d)))
    return views, y
