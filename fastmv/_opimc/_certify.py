"""A proof that no single-row move lowers OPIMC's loss, from distance bounds alone
(docs/opimc.md "Passes").

With binary presence weights and ``t_{v,k} = T_{v,k} + α``, the centres at their optimum are
``ū_{v,k} = R_{v,k} / t_{v,k}``, and moving row ``i`` from cluster ``a`` to ``b`` changes the loss
by exactly (the refinement kernel's formula, ``fastmv.kernels.opimc_refine``, rearranged)::

    Δ = Σ_v W_{i,v} [ t_{v,b} / (t_{v,b} + 1) ‖x_{v,i} − ū_{v,b}‖²
                    − t_{v,a} / (t_{v,a} − 1) ‖x_{v,i} − ū_{v,a}‖² ]     (t_{v,a} > 1).

With ``ρ_lo = t_min / (t_min + 1)`` (``t_min`` the smallest ``t_{v,k}``) and ``ρ_a =
t / (t − 1)`` for the smallest ``t_{v,a}`` over the views row ``i`` is in, ``Δ ≥ ρ_lo L² −
ρ_a U²`` for any ``U`` at least the row's distance ``sqrt(Σ_v W_{i,v} ‖x_{v,i} − ū_{v,a}‖²)``
to its own centre and ``L ≥ 0`` at most its distance to any other. So when ``ρ_lo L² ≥ ρ_a
U²`` for every row of a chunk, a sweep of single-row moves over it moves nothing, and is
skipped. The bounds are the chunk loop's Hamerly bounds (for the centres it last assigned
with), moved to ``ū`` by the triangle inequality, and carried to later passes the same way:
each cluster's centre path is summed (``drift``), and a row's bounds widen by how far its
centres went since they were set. Skipping a sweep that provably moves nothing gives the
labels and statistics of running it. In the passes after the first the test is made row by
row (:func:`proven`): only the rows it cannot prove are read and swept.
"""
from __future__ import annotations

import numpy as np


def optimal_centers(stats, alpha, view_ptr):
    """``ū`` (D, c): ``R_{v,k} / (T_{v,k} + α)``, 0 where ``T_{v,k} + α = 0``."""
    t = stats.counts + alpha
    inv = np.divide(1.0, t, out=np.zeros_like(t), where=t > 0.0)
    return stats.sums.T * np.repeat(inv, np.diff(view_ptr), axis=0)


def proven(upper, lower, labels, counts, alpha):
    """Which rows of a chunk (labels ``labels``, counts ``T`` (m, c) holding the chunk) the
    bounds ``upper``, ``lower`` (s,) prove do not lower the loss by moving alone (s,) bool;
    None when nothing can be proven (a cluster with ``t ≤ 1``). Module docstring; ``ρ_a``
    from the smallest ``t_{v,a}`` over every view, which only makes the test stricter."""
    t = counts + alpha
    t_min = t.min(initial=np.inf)
    own = t.min(axis=0, initial=np.inf)            # (c,)
    if not (t_min > 0.0 and own.min(initial=np.inf) > 1.0):
        return None
    rho = (own / (own - 1.0))[labels]
    low = np.maximum(lower, 0.0)
    return t_min / (t_min + 1.0) * (low * low) >= rho * (upper * upper)


def settled(upper, lower, labels, counts, alpha):
    """Whether the bounds prove that no row of the chunk lowers the loss by moving alone
    (:func:`proven` for every row)."""
    rows = proven(upper, lower, labels, counts, alpha)
    return rows is not None and bool(np.all(rows))


def center_shift(U, U_bar):
    """Per-cluster distance ``‖U_k − ū_k‖`` (c,) over every feature."""
    return np.sqrt(np.einsum("jk,jk->k", U - U_bar, U - U_bar))


def to_optimal(upper, lower, labels, shift):
    """The bounds moved from centres ``U`` to ``ū``, ``shift = center_shift(U, ū)``."""
    return upper + shift[labels], lower - shift.max(initial=0.0)


class RowBounds:
    """Each row's bounds from the pass that last set them, carried to the current centres by
    how far the clusters went since (module docstring), for visit positions ``[0, n)``.

    The bounds are float32, rounded outwards (8 bytes a sample, as the labels). How far a
    centre went is the length of its path (the drift summed chunk after chunk), or, with
    ``snapshots``, no more than its distance from where it was when the chunk's bounds were
    set (a copy of the ``D × c`` centres per chunk: for views held in memory, whose chunks
    are ``c / s`` of that memory; streamed views keep memory flat in ``n``)."""

    def __init__(self, n, c, snapshots):
        self.upper = np.full(n, np.inf, np.float32)
        self.lower = np.zeros(n, np.float32)
        self.drift = np.zeros(c)
        self.snapshots = snapshots
        self._since = {}                     # chunk start -> (summed drift, centres) when set
        self._last = None

    def advance(self, U_bar):
        """Add the move of every centre to ``U_bar`` since the last call to the drift."""
        if self._last is not None:
            self.drift += center_shift(U_bar, self._last)
        self._last = U_bar

    def set(self, start, upper, lower):
        """Bounds for the chunk at ``start`` (for the centres of the last :meth:`advance`)."""
        s = upper.shape[0]
        self.upper[start:start + s] = np.nextafter(upper.astype(np.float32), np.inf)
        self.lower[start:start + s] = np.nextafter(lower.astype(np.float32), -np.inf)
        self._since[start] = (self.drift.copy(), self._last if self.snapshots else None)

    def forget(self, positions):
        """Drop the bounds of the rows at visit positions ``positions`` (a slice or indices):
        they moved, and their bounds are for their old cluster."""
        self.upper[positions] = np.inf

    def current(self, start, s, labels):
        """The chunk's bounds (float64) for the centres of the last :meth:`advance`, or None
        when they were never set."""
        since = self._since.get(start)
        if since is None:
            return None
        moved = self.drift - since[0]
        if since[1] is not None:
            moved = np.minimum(moved, center_shift(self._last, since[1]))
        return (self.upper[start:start + s] + moved[labels],
                self.lower[start:start + s] - moved.max(initial=0.0))
