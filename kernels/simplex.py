"""Euclidean projection of the rows of a matrix onto the probability simplex.

``proj(y) = argmin_x ‖x − y‖₂`` subject to ``x ≥ 0``, ``Σ x = 1``; the answer is
``x = max(y − θ, 0)`` for the unique ``θ`` with ``Σ max(y − θ, 0) = 1``. ``θ`` is found with
Condat's algorithm (L. Condat, "Fast projection onto the simplex and the l1 ball",
Math. Program. 158, 2016): one pass with a running estimate of ``θ`` over the candidates,
then a few cleanup passes over a short candidate list; expected O(n) per row instead of the
O(n log n) of sorting. Work is done in float64 whatever the input precision.
"""
import numpy as np
from numba import njit, prange

from ._options import PARALLEL, SERIAL
from ._partition import n_parts, part_range


@njit(**SERIAL, inline="always")
def _simplex_threshold(y, v, w):
    """θ such that ``Σ max(y − θ, 0) = 1`` (Condat's algorithm).

    ``y`` (length ``n ≥ 1``) is read only; ``v`` and ``w`` are float64 work buffers of
    length ``≥ n``. Returns θ recomputed exactly from the final support set.
    """
    n = y.shape[0]
    v[0] = y[0]
    nv = 1
    nw = 0
    rho = v[0] - 1.0
    for i in range(1, n):
        yi = y[i]
        if yi > rho:
            rho += (yi - rho) / (nv + 1)
            if rho > yi - 1.0:
                v[nv] = yi
                nv += 1
            else:
                for j in range(nv):
                    w[nw + j] = v[j]
                nw += nv
                v[0] = yi
                nv = 1
                rho = yi - 1.0
    for j in range(nw):
        yj = w[j]
        if yj > rho:
            v[nv] = yj
            nv += 1
            rho += (yj - rho) / nv
    changed = True
    while changed:
        changed = False
        k = 0
        for j in range(nv):
            yj = v[j]
            if yj > rho:
                v[k] = yj
                k += 1
            else:
                # k + (nv - j - 1) elements remain after removing this one
                rest = k + (nv - j - 1)
                rho += (rho - yj) / rest
                changed = True
        nv = k
    # exact θ from the support set (the running updates accumulate rounding)
    s = 0.0
    for j in range(nv):
        s += v[j]
    return (s - 1.0) / nv


# Rows are processed in a fixed number of blocks (not one per thread), so per-block partial
# sums, and hence every result, are the same whatever the number of threads. The names stay
# for kernels/emvc.py; the partition is the shared one (kernels/_partition.py).


@njit(**SERIAL)
def _n_chunks(n):
    """Number of row blocks for ``n`` rows (at least 1, at most 64)."""
    return n_parts(n, 1)


@njit(**SERIAL)
def _chunk(n, n_chunks, t):
    """Rows ``[lo, hi)`` of chunk ``t`` of ``n_chunks`` near-equal chunks."""
    return part_range(n, n_chunks, t)


@njit(**PARALLEL)
def rowwise_simplex_projection(A, out):
    """Project every row of ``A`` onto the probability simplex.

    Parameters
    ----------
    A : ndarray, shape (n, d), float32 or float64
        Rows to project (``d ≥ 1``). Read only, unless ``out`` is ``A``.
    out : ndarray, shape (n, d)
        Receives the projections (any float dtype; may be ``A`` itself for in place).

    Returns
    -------
    out : ndarray, shape (n, d)
        ``out[i] = argmin_{x ≥ 0, Σx = 1} ‖x − A[i]‖₂``; every row is nonnegative and sums
        to 1 up to rounding (float64 arithmetic inside).

    Notes
    -----
    Expected O(n d) time (Condat's algorithm per row), parallel over 64 blocks of rows;
    extra memory three length-``d`` float64 buffers per block.

    Cost: moves ``2 n d b`` bytes (``b`` the itemsize; read and written once) and does an
    expected ``~6 n d`` flops and comparisons (Condat's algorithm); bound by its data-dependent
    branches, not by memory.
    """
    if out.shape[0] != A.shape[0] or out.shape[1] != A.shape[1]:
        raise ValueError("rowwise_simplex_projection: out must have the shape of A")
    n, d = A.shape
    n_chunks = _n_chunks(n)
    for t in prange(n_chunks):
        lo, hi = _chunk(n, n_chunks, t)
        y = np.empty(d, np.float64)
        v = np.empty(d, np.float64)
        w = np.empty(d, np.float64)
        for i in range(lo, hi):
            for j in range(d):
                y[j] = A[i, j]
            theta = _simplex_threshold(y, v, w)
            for j in range(d):
                x = y[j] - theta
                out[i, j] = x if x > 0.0 else 0.0
    return out
