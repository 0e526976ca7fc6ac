"""Kernels of EMVC, error-robust multi-view clustering (``docs/algorithms.md §3``).

Each kernel is one pass over its ``n × n`` operands over the fixed row partition of
``kernels/_partition.py`` (``n_parts(n, 1)`` parts, at most 64): column reductions go to
per-part partial sums that are added at the end in part order, so results do not depend on
the number of threads; below ``SERIAL_BELOW`` entries the same parts run on one thread (a
parallel launch would cost more than the pass), with the same result. The two passes that
run once per solve or are a small share of a step (:func:`error_norms`,
:func:`max_abs_diff`) are serial kernels: each ``parallel=True`` kernel costs more than a
second of compilation on a solver's first call. Views are stacked as
``(m, n, n)`` arrays. All arithmetic is float64 whatever the storage precision (float32 or
float64).
"""
import numpy as np
from numba import njit, prange

from ._partition import SERIAL_BELOW, n_parts, part_bounds, sum_parts
from .simplex import _simplex_threshold


@njit(cache=True)
def _sqrt_sum_parts(parts):
    """``sqrt`` of :func:`sum_parts` (a serial helper for the same reason)."""
    out = sum_parts(parts)
    for j in range(out.shape[0]):
        out[j] = np.sqrt(out[j])
    return out


@njit(cache=True)
def _zeros(rows, cols):
    """``np.zeros((rows, cols))`` in float64, as a serial helper: ``np.zeros`` written
    inside a ``parallel=True`` kernel becomes a parfor of its own (see :func:`sum_parts`)."""
    return np.zeros((rows, cols))


@njit(cache=True)
def _largest(values):
    """``values.max()`` as a serial helper (see :func:`sum_parts`)."""
    best = values[0]
    for v in values[1:]:
        best = max(best, v)
    return best


@njit(cache=True)
def error_norms(E):
    """Row and column Euclidean norms of one error matrix.

    Parameters
    ----------
    E : ndarray, shape (n, d)

    Returns
    -------
    row_norms : ndarray, shape (n,), float64
        ``‖E[r, :]‖₂``.
    col_norms : ndarray, shape (d,), float64
        ``‖E[:, i]‖₂``.

    Notes
    -----
    One pass, O(n d) time, O(64 d) extra memory (per-block column sums, added in part
    order as in the parallel kernels). Serial: EMVC needs these norms once per view, at the
    start (each step's :func:`reweighted_error_update` returns the next ones), and a
    ``parallel=True`` kernel would add more than a second to the first call's compilation.

    Cost: reads ``n d b`` bytes (``b`` the itemsize) once; ``2 n d`` flops; memory-bound.
    """
    n, d = E.shape
    nb = n_parts(n, 1)
    bounds = part_bounds(n, nb)
    row = np.zeros(n)
    col_part = np.zeros((nb, d))
    for t in range(nb):
        _error_norms_part(E, bounds[t], bounds[t + 1], row, col_part[t])
    col = _sqrt_sum_parts(col_part)
    return row, col


@njit(cache=True)
def _error_norms_part(E, lo, hi, row, col_acc):
    """:func:`error_norms` on rows ``[lo, hi)``: row norms into ``row``, squared column sums
    added to ``col_acc``."""
    d = E.shape[1]
    for r in range(lo, hi):
        s = 0.0
        for i in range(d):
            e = np.float64(E[r, i])
            s += e * e
            col_acc[i] += e * e
        row[r] = np.sqrt(s)


@njit(parallel=True, cache=True)
def reweighted_error_update(P, P_hat, Y, E, row_norms, col_norms, lam1, lam2, mu, eps):
    """Fused reweighted ``E`` step, multiplier ``Y`` step and primal residual of one view.

    With ``T = P − P̂ − Y/μ``, ``d_r = 1/(2 max(‖E[r,:]‖, ε))`` and
    ``g_i = 1/(2 max(‖E[:,i]‖, ε))`` taken from the *previous* ``E`` (passed as its norms),

    ``E[r, i] ← T[r, i] / (1 + (lam2/μ) d_r + (lam1/μ) g_i)``  and
    ``Y ← Y + μ (P̂ + E − P)``,

    in one pass that also returns the norms of the new ``E`` (the weights of the next
    iteration) and ``max |P − P̂ − E|``.

    Parameters
    ----------
    P, P_hat : ndarray, shape (n, d)
        The view's transition matrix and the shared one. Read only.
    Y, E : ndarray, shape (n, d)
        Multiplier and error of the view, overwritten in place.
    row_norms : ndarray, shape (n,)
        Row norms of the previous ``E``.
    col_norms : ndarray, shape (d,)
        Column norms of the previous ``E``.
    lam1, lam2 : float
        Weights of the group-ℓ1 (columns) and ℓ2,1 (rows) terms in the authors' convention
        (the step is the exact one for weights ``lam1/2``, ``lam2/2``).
    mu : float
        Penalty ``μ > 0``.
    eps : float
        Guard of the norms against zero.

    Returns
    -------
    new_row_norms : ndarray, shape (n,), float64
    new_col_norms : ndarray, shape (d,), float64
    residual : float
        ``max |P − P̂ − E|`` with the new ``E`` (the primal residual of this view).

    Notes
    -----
    O(n d) time, one read of ``P, P̂, Y`` and one write of ``E, Y`` (the old ``E`` is not
    read: its norms carry all the step needs). O(64 d) extra memory (per-block column sums).

    Cost: moves ``5 n d b`` bytes (``b`` the itemsize: ``P``, ``P̂``, ``Y`` read, ``E``, ``Y``
    written) and does ``~12 n d`` flops; memory-bound.
    """
    n, d = E.shape
    inv_mu = 1.0 / mu
    b = np.empty(d)
    for i in range(d):
        b[i] = (lam1 * inv_mu) / (2.0 * max(col_norms[i], eps))
    a = np.empty(n)
    for r in range(n):
        a[r] = 1.0 + (lam2 * inv_mu) / (2.0 * max(row_norms[r], eps))
    nb = n_parts(n, 1)
    bounds = part_bounds(n, nb)
    row = np.empty(n)  # every row is written by its part
    col_part = _zeros(nb, d)
    res_part = np.empty(nb)
    if n * d < SERIAL_BELOW:
        for t in range(nb):
            res_part[t] = _error_update_part(P, P_hat, Y, E, a, b, mu, bounds[t],
                                             bounds[t + 1], row, col_part[t])
    else:
        for t in prange(nb):
            res_part[t] = _error_update_part(P, P_hat, Y, E, a, b, mu, bounds[t],
                                             bounds[t + 1], row, col_part[t])
    col = _sqrt_sum_parts(col_part)
    return row, col, _largest(res_part)


@njit(cache=True)
def _error_update_part(P, P_hat, Y, E, a, b, mu, lo, hi, row, col_acc):
    """:func:`reweighted_error_update` on rows ``[lo, hi)`` with the row and column
    denominators ``a``, ``b`` (``E[r, i] = T[r, i] / (a[r] + b[i])``); returns the part's
    ``max |P − P̂ − E|``."""
    d = E.shape[1]
    inv_mu = 1.0 / mu
    res = 0.0
    for r in range(lo, hi):
        s = 0.0
        for i in range(d):
            diff = np.float64(P[r, i]) - np.float64(P_hat[r, i])
            y = np.float64(Y[r, i])
            e = (diff - y * inv_mu) / (a[r] + b[i])
            E[r, i] = e
            rr = diff - e
            Y[r, i] = y - mu * rr
            s += e * e
            col_acc[i] += e * e
            if abs(rr) > res:
                res = abs(rr)
        row[r] = np.sqrt(s)
    return res


@njit(parallel=True, cache=True)
def consensus_update(P, E, Y, Q, Zb, P_hat, mu, zc, has_q):
    """Fused ``P̂`` step of EMVC, forming the SVT input ``B = P̂ + Z/μ`` in place.

    With ``Z/μ = zc · (Zb − Q)`` (``Zb`` holds the previous SVT input and ``zc`` the ratio
    of the previous to the current penalty, so the multiplier ``Z`` is never stored
    separately),

    ``P̂ ← rowwise_simplex_projection((Σ_v (P_v − E_v − Y_v/μ) + Q − Z/μ) / (m + 1))``

    and then ``Zb ← P̂ + Z/μ``.

    Parameters
    ----------
    P, E, Y : ndarray, shape (m, n, n)
        Views, errors and multipliers. Read only.
    Q : ndarray, shape (n, n)
        The auxiliary low-rank matrix; not read when ``has_q`` is False (``Q = 0``).
    Zb : ndarray, shape (n, n)
        In: previous SVT input (with ``Q``, it encodes ``Z``). Out: the new SVT input ``B``.
    P_hat : ndarray, shape (n, n)
        Overwritten with the new shared transition matrix (rows on the simplex).
    mu : float
        Current penalty ``μ``.
    zc : float
        ``μ_prev / μ`` (any value when ``Z = 0``, i.e. ``Zb = Q = 0``).
    has_q : bool
        Whether ``Q`` is nonzero.

    Returns
    -------
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
    One read of ``3m + 2`` arrays and one write of two, O(m n²) time (Condat's projection
    per row), parallel over blocks of rows; O(64 n) extra memory.

    Cost: moves ``(3 m + 4) n² b`` bytes (``b`` the itemsize: ``3 m + 2`` arrays read, two
    written) and does ``~(3 m + 8) n²`` flops plus one simplex projection per row (expected
    ``~6 n²`` compare-and-branch operations, which bound it).
    """
    n, d = P.shape[1], P.shape[2]
    nb = n_parts(n, 1)
    bounds = part_bounds(n, nb)
    col_part = _zeros(nb, d)
    stats = _zeros(nb, 3)  # per part: ‖·‖_F², max row abs sum, min
    if n * d * (P.shape[0] + 1) < SERIAL_BELOW:
        for t in range(nb):
            _consensus_part(P, E, Y, Q, Zb, P_hat, mu, zc, has_q, bounds[t], bounds[t + 1],
                            col_part[t], stats[t])
    else:
        for t in prange(nb):
            _consensus_part(P, E, Y, Q, Zb, P_hat, mu, zc, has_q, bounds[t], bounds[t + 1],
                            col_part[t], stats[t])
    fro, rowabs, lo = stats[0, 0], stats[0, 1], stats[0, 2]
    for t in range(1, nb):
        fro += stats[t, 0]
        rowabs = max(rowabs, stats[t, 1])
        lo = min(lo, stats[t, 2])
    return fro, rowabs, _largest(sum_parts(col_part)), lo


@njit(cache=True)
def _consensus_part(P, E, Y, Q, Zb, P_hat, mu, zc, has_q, lo, hi, col_acc, stats):
    """:func:`consensus_update` on rows ``[lo, hi)``: absolute column sums of ``B`` added
    to ``col_acc``; ``stats`` receives the part's ``‖B‖_F²``, largest row abs sum and
    smallest entry (``inf`` for an empty part)."""
    m, d = P.shape[0], P.shape[2]
    inv_mu = 1.0 / mu
    scale = 1.0 / (m + 1)
    a = np.empty(d)
    v = np.empty(d)
    w = np.empty(d)
    fro = 0.0
    rmax = 0.0
    mn = np.inf
    for r in range(lo, hi):
        for i in range(d):
            s = 0.0
            for k in range(m):
                s += np.float64(P[k, r, i]) - np.float64(E[k, r, i]) \
                    - np.float64(Y[k, r, i]) * inv_mu
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
            col_acc[i] += ab
            if bb < mn:
                mn = bb
        if rs > rmax:
            rmax = rs
    stats[0] = fro
    stats[1] = rmax
    stats[2] = mn


@njit(cache=True)
def max_abs_diff(A, B):
    """``max |A − B|`` (the consensus primal residual ``‖P̂ − Q‖_∞``).

    Parameters
    ----------
    A, B : ndarray, shape (n, d)

    Returns
    -------
    float
        0.0 for empty input.

    Notes
    -----
    One read of both arrays. Serial: a maximum needs no fixed partition, and this pass is a
    small share of an EMVC step (which reads and writes about ``8 m + 4`` such arrays and
    runs an SVT); a ``parallel=True`` kernel would add more than a second to the first
    call's compilation.

    Cost: reads ``2 n d b`` bytes (``b`` the itemsize); ``2 n d`` flops; memory-bound.
    """
    return _max_abs_diff_part(A, B, 0, A.shape[0])


@njit(cache=True)
def _max_abs_diff_part(A, B, lo, hi):
    """:func:`max_abs_diff` on rows ``[lo, hi)`` (0.0 when empty)."""
    mx = 0.0
    for r in range(lo, hi):
        for i in range(A.shape[1]):
            x = abs(np.float64(A[r, i]) - np.float64(B[r, i]))
            if x > mx:
                mx = x
    return mx
