"""Kernels of EMVC, error-robust multi-view clustering (``docs/algorithms.md §3``).

Each kernel is one pass over its ``n × n`` operands over the fixed row partition of
``kernels/_partition.py`` (``n_parts(n, 1)`` parts, at most 64): column reductions go to
per-part partial sums that are added at the end in part order, so results do not depend on
the number of threads (callers run small passes on one Numba thread, where a parallel
launch would cost more than the pass; the result is the same). The passes that run once
per solve or are a small share of a step (the initial error norms, the consensus
residual) are NumPy in ``fastmv/_emvc/_solver.py``: every kernel, and above all every
``parallel=True`` one, adds to a solver's first call. Views are stacked as ``(m, n, n)``
arrays. All arithmetic is float64 whatever the storage precision (float32 or
float64).
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._compile import serial_copy
from ._options import PARALLEL, SERIAL
from ._partition import n_parts
from .simplex import _simplex_threshold


class ErrorWeights(NamedTuple):
    """The reweighting of the ``E`` step of every view (the arguments of the ``E`` step that
    :func:`consensus_error_update` does not share with the ``P̂`` step).

    Attributes
    ----------
    row_norms : ndarray, shape (m, n), float64
        Row norms of the previous ``E`` of each view.
    col_norms : ndarray, shape (m, d), float64
        Column norms of the previous ``E`` of each view.
    lam1, lam2 : float
        Weights of the group-ℓ1 (columns) and ℓ2,1 (rows) terms in the authors' convention
        (the step is the exact one for weights ``lam1/2``, ``lam2/2``).
    eps : float
        Guard of the norms against zero.
    """

    row_norms: np.ndarray
    col_norms: np.ndarray
    lam1: float
    lam2: float
    eps: float


@njit(**PARALLEL)
def consensus_error_update(P, E, Y, Q, Zb, P_hat, mu, zc, has_q, weights):
    """One fused pass of an EMVC iteration over the rows: the ``P̂`` step (forming the SVT
    input ``B = P̂ + Z/μ`` in place), then the reweighted ``E`` step, the multiplier ``Y``
    step and the primal residuals of every view.

    With ``Z/μ = zc · (Zb − Q)`` (``Zb`` holds the previous SVT input and ``zc`` the ratio
    of the previous to the current penalty, so the multiplier ``Z`` is never stored
    separately),

    ``P̂ ← rowwise_simplex_projection((Σ_v (P_v − E_v − Y_v/μ) + Q − Z/μ) / (m + 1))``

    and ``Zb ← P̂ + Z/μ``. Then, per view, with ``T = P_v − P̂ − Y_v/μ`` (the new ``P̂``),
    ``d_r = 1/(2 max(‖E_v[r,:]‖, ε))`` and ``g_i = 1/(2 max(‖E_v[:,i]‖, ε))`` taken from the
    *previous* ``E_v`` (passed as its norms),

    ``E_v[r, i] ← T[r, i] / (1 + (lam2/μ) d_r + (lam1/μ) g_i)``  and
    ``Y_v ← Y_v + μ (P̂ + E_v − P_v)``.

    Row ``r`` of the ``E``, ``Y`` steps needs only row ``r`` of the new ``P̂``, so each row
    is done whole (``P̂``, then every view's ``E``, ``Y``) while it is in cache.

    Parameters
    ----------
    P : ndarray, shape (m, n, n)
        Views. Read only.
    E, Y : ndarray, shape (m, n, n)
        Errors and multipliers, overwritten in place with the new ones.
    Q : ndarray, shape (n, n)
        The auxiliary low-rank matrix; not read when ``has_q`` is False (``Q = 0``).
    Zb : ndarray, shape (n, n)
        In: previous SVT input (with ``Q``, it encodes ``Z``). Out: the new SVT input ``B``.
    P_hat : ndarray, shape (n, n)
        Overwritten with the new shared transition matrix (rows on the simplex).
    mu : float
        Current penalty ``μ > 0``.
    zc : float
        ``μ_prev / μ`` (any value when ``Z = 0``, i.e. ``Zb = Q = 0``).
    has_q : bool
        Whether ``Q`` is nonzero.
    weights : ErrorWeights
        Norms of the previous errors, ``lam1``, ``lam2`` and ``eps``. Read only.

    Returns
    -------
    row_norms : ndarray, shape (m, n), float64
        Row norms of the new errors (the weights of the next iteration).
    col_norms : ndarray, shape (m, n), float64
        Column norms of the new errors.
    residual_views : float
        ``max_v max |P_v − P̂ − E_v|`` with the new ``E`` (0.0 when empty).
    fro2 : float
        ``‖B‖_F²``.
    max_row_abs : float
        ``‖B‖_∞ = max_r Σ_i |B[r, i]|``.
    max_col_abs : float
        ``‖B‖_1 = max_i Σ_r |B[r, i]|``.
    min_entry : float
        ``min B`` (``B ≥ 0`` lets the SVT bound the top singular value from above).

    Notes
    -----
    O(m n²) time (Condat's projection per row), parallel over blocks of rows; O(64 (m + 1) n)
    extra memory (per-block column sums). The old ``E`` is read once, by the ``P̂`` step:
    the ``E`` step needs only its norms.

    Cost: moves ``(5 m + 4) n² b`` bytes (``b`` the itemsize: ``P``, ``E``, ``Y``, ``Q``,
    ``Zb`` read, ``P̂``, ``Zb``, ``E``, ``Y`` written; each row's ``P_v``, ``P̂``, ``Y_v``
    are read again by the ``E`` step from cache) and does ``~(15 m + 8) n²`` flops plus one
    simplex projection per row (expected ``~6 n²`` compare-and-branch operations, which
    bound it).
    """
    m, n, d = P.shape
    if (E.shape != P.shape or Y.shape != P.shape or Zb.shape != (n, d)
            or P_hat.shape != (n, d) or (has_q and Q.shape != (n, d))
            or weights.col_norms.shape[0] < m or weights.col_norms.shape[1] < d
            or weights.row_norms.shape[0] < m or weights.row_norms.shape[1] < n):
        raise ValueError("consensus_error_update: E and Y must have the shape (m, n, n) of P, "
                         "Q, Zb and P_hat (n, n), the norms in weights (m, n)")
    # The E step's column terms b (its denominators are a[v, r] + b[v, i]; the part that
    # owns row r computes a[:, r]). Conditionals in place of max and min (the same
    # comparison and choice, NaN included): Numba compiles each once per argument types.
    inv_mu = 1.0 / mu
    eps = weights.eps
    b = np.empty((m, d), np.float64)
    for k in range(m):
        for i in range(d):
            g = weights.col_norms[k, i]
            b[k, i] = (weights.lam1 * inv_mu) / (2.0 * (eps if eps > g else g))
    # an int64 argument (not a literal): the specialisation the other callers compile
    nb = n_parts(n, np.int64(1))
    # Every part's sums in one row of one array, zeroed by the part itself, and the part's
    # helper given plain arrays, not NamedTuples of them or slices: to Numba every array a
    # helper takes, returns or unpacks is a reference count per copy, the whole array
    # descriptor unpacked, which made those copies a large share of the serial kernel. The
    # scalars travel as one tuple (no reference counts), for the limit of twelve arguments.
    sums = np.empty((nb, 4 + d + m * d), np.float64)
    row = np.empty((m, n), np.float64)
    step = (mu, zc, has_q, weights.lam2 * inv_mu, eps)
    for t in prange(nb):
        _consensus_error_part(P, E, Y, Q, Zb, P_hat, step, b, weights.row_norms, row, sums, t)
    fro, rowabs, lo, res = sums[0, 0], sums[0, 1], sums[0, 2], sums[0, 3]
    for t in range(1, nb):
        fro += sums[t, 0]
        x = sums[t, 1]
        rowabs = x if x > rowabs else rowabs
        x = sums[t, 2]
        lo = x if x < lo else lo
        x = sums[t, 3]
        res = x if x > res else res
    # plain loops, the parts added in order from 0.0: array expressions or ``.max()`` here
    # would be parfors of their own (compilation time only)
    col = np.empty((m, d), np.float64)
    for k in range(m):
        for i in range(d):
            s = 0.0
            for t in range(nb):
                s += sums[t, 4 + d + k * d + i]
            col[k, i] = np.sqrt(s)
    colabs = 0.0
    for i in range(d):
        s = 0.0
        for t in range(nb):
            s += sums[t, 4 + i]
        colabs = s if i == 0 or s > colabs else colabs
    return row, col, res, fro, rowabs, colabs, lo


@njit(**SERIAL)
def _consensus_error_part(P, E, Y, Q, Zb, P_hat, step, b_err, old_rows, row_norms, sums, t):
    """:func:`consensus_error_update` on the rows of part ``t`` of the ``sums.shape[0]``
    parts of the fixed partition (``kernels/_partition.py``), with
    ``step = (mu, zc, has_q, lam2 * (1 / mu), eps)``. ``b_err`` (m, d) holds the column
    terms of the ``E`` step, ``old_rows`` (m, n) the row norms of the previous errors (read
    only); the part's columns of ``row_norms`` (m, n) receive the new ones.

    ``sums[t]`` (``4 + d + m d`` entries, written whole) receives the part's ``‖B‖_F²``,
    largest row abs sum, smallest entry (``inf`` for an empty part) and
    ``max |P_v − P̂ − E_v|`` (0.0 for an empty part), then the absolute column sums of
    ``B`` (``d`` entries), then each view's squared column sums of the new ``E`` (view
    ``v`` at ``[4 + d + v d, 4 + d + (v + 1) d)``)."""
    mu, zc, has_q, row_coef, eps = step
    n = P.shape[1]
    nb = sums.shape[0]
    lo = (n * t) // nb  # part_bounds(n, nb)[t], as the other kernels' parts
    hi = (n * (t + 1)) // nb
    for j in range(sums.shape[1]):
        sums[t, j] = 0.0
    m, d = P.shape[0], P.shape[2]
    inv_mu = 1.0 / mu
    scale = 1.0 / (m + 1)
    a = np.empty(d, np.float64)
    v = np.empty(d, np.float64)
    w = np.empty(d, np.float64)
    fro = 0.0
    rmax = 0.0
    mn = np.inf
    res = 0.0
    for r in range(lo, hi):
        # the P̂ step of row r (reads the old E, Y of row r). Each a[i] sums the views in
        # order from 0.0, as a sum per entry would, but the loop over the entries is inside:
        # contiguous in every array and independent per entry, so it vectorises
        for i in range(d):
            a[i] = 0.0
        for k in range(m):
            for i in range(d):
                a[i] += np.float64(P[k, r, i]) - np.float64(E[k, r, i]) \
                    - np.float64(Y[k, r, i]) * inv_mu
        for i in range(d):
            s = a[i]
            if has_q:
                q = np.float64(Q[r, i])
                s += q - zc * (np.float64(Zb[r, i]) - q)
            else:
                s -= zc * np.float64(Zb[r, i])
            a[i] = s * scale
        theta = _simplex_threshold(a, v, w)
        rs = 0.0
        for i in range(d):
            x = a[i] - theta
            if x < 0.0:
                x = 0.0
            P_hat[r, i] = x
            zb = np.float64(Zb[r, i])
            if has_q:
                zb -= np.float64(Q[r, i])
            bb = x + zc * zb
            Zb[r, i] = bb
            bb = np.float64(Zb[r, i])  # as stored (float32 rounding)
            fro += bb * bb
            ab = abs(bb)
            rs += ab
            sums[t, 4 + i] += ab
            if bb < mn:
                mn = bb
        if rs > rmax:
            rmax = rs
        # the E, Y steps of row r of every view, with P̂ as stored
        for k in range(m):
            g = old_rows[k, r]
            ak = 1.0 + row_coef / (2.0 * (eps if eps > g else g))
            s = 0.0
            for i in range(d):
                diff = np.float64(P[k, r, i]) - np.float64(P_hat[r, i])
                y = np.float64(Y[k, r, i])
                e = (diff - y * inv_mu) / (ak + b_err[k, i])
                E[k, r, i] = e
                rr = diff - e
                Y[k, r, i] = y - mu * rr
                s += e * e
                sums[t, 4 + d + k * d + i] += e * e
                if abs(rr) > res:
                    res = abs(rr)
            row_norms[k, r] = np.sqrt(s)
    sums[t, 0] = fro
    sums[t, 1] = rmax
    sums[t, 2] = mn
    sums[t, 3] = res


#: :func:`consensus_error_update` on the calling thread, bit for bit: what a small problem
#: (or one Numba thread) runs, so that it never compiles the parallel kernel; its helpers
#: compiled into it, not apart (``inlining``).
consensus_error_update_serial = njit(**SERIAL)(serial_copy(
    consensus_error_update, "consensus_error_update_serial",
    "One fused pass of an EMVC iteration on the calling thread (``consensus_error_update`` "
    "compiled serially: the same parts in the same order, the same result bit for bit).",
    inline=(_consensus_error_part, n_parts)))
