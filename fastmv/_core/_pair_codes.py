"""Pair numbering and uniform sampling of distinct pairs, for :mod:`fastmv.simulate`.

Pairs ``(i, j)`` with ``0 ≤ i < j`` are numbered ``j (j − 1) / 2 + i``; a uniform random set
of distinct numbers is drawn without ever forming the ``n (n − 1) / 2`` candidates, and the
numbers are decoded to index pairs arithmetically.
"""
from __future__ import annotations

import math

import numpy as np

from ._validation import check_int, check_scalar

# Below this population size Generator.choice(replace=False) may permute the whole range.
_SMALL_POPULATION = 1 << 22
# Largest n whose pair codes j (j - 1) / 2 + i decode exactly in int64.
MAX_PAIR_N = 1 << 31


def round_half_up(x: float) -> int:
    """Round half up (Python's round() is half-to-even)."""
    return int(math.floor(x + 0.5))


def sample_codes(N: int, p: int, rng: np.random.Generator) -> np.ndarray:
    """``p`` distinct integers drawn uniformly from ``range(N)``, sorted, int64.

    Every p-subset is equally likely. Memory O(p) when p ≤ N/50 (Floyd's algorithm with a hash
    set, inside ``Generator.choice``) and O(N) ≤ O(50 p) otherwise.
    """
    if p <= 0:
        return np.zeros(0, dtype=np.int64)
    if N <= _SMALL_POPULATION or p <= N // 50:
        return np.sort(rng.choice(N, size=p, replace=False).astype(np.int64, copy=False))
    if 2 * p > N:
        # complement: draw the N - p codes to leave out (N ≤ 2p, so O(N) memory is O(p))
        out = sample_codes(N, N - p, rng)
        keep = np.ones(N, dtype=bool)
        keep[out] = False
        return np.flatnonzero(keep).astype(np.int64, copy=False)
    # N/50 < p ≤ N/2: draw with replacement until p distinct values are in hand, then keep a
    # uniform p-subset of them. The procedure is symmetric in the values, hence uniform.
    codes = np.zeros(0, dtype=np.int64)
    while codes.size < p:
        need = p - codes.size
        codes = np.union1d(codes, rng.integers(0, N, size=need + need // 2 + 64, dtype=np.int64))
    if codes.size > p:
        codes = np.sort(codes[rng.choice(codes.size, size=p, replace=False)])
    return codes


def decode_pairs(codes: np.ndarray):
    """Code ``c = j(j-1)/2 + i`` (0 ≤ i < j) → ``(i, j)``, exact in int64 for j < 3e9."""
    c = codes.astype(np.int64, copy=False)
    j = np.floor((1.0 + np.sqrt(1.0 + 8.0 * c.astype(np.float64))) / 2.0).astype(np.int64)
    j -= (j * (j - 1) // 2 > c)          # floating-point guard, both directions
    j += ((j + 1) * j // 2 <= c)
    i = c - j * (j - 1) // 2
    return i, j


def n_pairs_from(N: int, n_constraints, ratio, what: str) -> int:
    """Number of pairs to draw out of ``N`` from exactly one of n_constraints / ratio."""
    if (n_constraints is None) == (ratio is None):
        raise ValueError("give exactly one of n_constraints and ratio")
    if ratio is not None:
        ratio = check_scalar(ratio, "ratio", low=0.0, high=1.0)
        return round_half_up(ratio * N)
    p = check_int(n_constraints, "n_constraints", low=0)
    if p > N:
        raise ValueError(f"n_constraints={p} exceeds the number of distinct {what} ({N})")
    return p


def split_must_cannot(i, j, same):
    pairs = np.empty((i.shape[0], 2), dtype=np.int64)
    pairs[:, 0] = i
    pairs[:, 1] = j
    return np.ascontiguousarray(pairs[same]), np.ascontiguousarray(pairs[~same])


def codes_of(y, name):
    """Integer class ids 0..c-1 (rank among the sorted distinct values of y)."""
    try:
        uniq, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} holds labels that cannot be compared: {exc}") from exc
    return codes.reshape(-1).astype(np.int64, copy=False), uniq.shape[0]
