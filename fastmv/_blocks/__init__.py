"""Building blocks used by several solvers and exported by ``fastmv``: k-means, spectral
clustering and transition matrices."""
