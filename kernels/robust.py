"""Kernels of EMVC, error-robust multi-view clustering (``docs/algorithms.md §3``).

Each kernel is one pass over its ``n × n`` operands, parallel over 64 blocks of rows; column
reductions go to per-block partial sums that are added at the end in a fixed order, so
results do not depend on the number of threads. Views are stacked as ``(m, n, n)`` arrays. All
arithmetic is float64 whatever the storage precision (float32 or float64).
"""
import numpy as np
from numba import njit, prange

from .simplex import _chunk, _n_chunks, _simplex_threshold


@njit(parallel=True, cache=True)
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
    One pass, O(n d) time, O(64 d) extra memory (per-block column sums).
    """
    n, d = E.shape
    n_chunks = _n_chunks(n)
    row = np.zeros(n, dtype=np.float64)
    col_part = np.zeros((n_chunks, d), dtype=np.float64)
    for t in prange(n_chunks):
        lo, hi = _chunk(n, n_chunks, t)
        for r in range(lo, hi):
            s = 0.0
            for i in range(d):
                e = np.float64(E[r, i])
                s += e * e
                col_part[t, i] += e * e
            row[r] = np.sqrt(s)
    col = np.sqrt(col_part.sum(axis=0))
    return row, col


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
    """
    n, d = E.shape
    inv_mu = 1.0 / mu
    b = np.empty(d, dtype=np.float64)
    for i in range(d):
        b[i] = (lam1 * inv_mu) / (2.0 * max(col_norms[i], eps))
    n_chunks = _n_chunks(n)
    row = np.zeros(n, dtype=np.float64)
    col_part = np.zeros((n_chunks, d), dtype=np.float64)
    res_part = np.zeros(n_chunks, dtype=np.float64)
    for t in prange(n_chunks):
        lo, hi = _chunk(n, n_chunks, t)
        res = 0.0
        for r in range(lo, hi):
            a = 1.0 + (lam2 * inv_mu) / (2.0 * max(row_norms[r], eps))
            s = 0.0
            for i in range(d):
                diff = np.float64(P[r, i]) - np.float64(P_hat[r, i])
                y = np.float64(Y[r, i])
                e = (diff - y * inv_mu) / (a + b[i])
                E[r, i] = e
                rr = diff - e
                Y[r, i] = y - mu * rr
                s += e * e
                col_part[t, i] += e * e
                if abs(rr) > res:
                    res = abs(rr)
            row[r] = np.sqrt(s)
        res_part[t] = res
    col = np.sqrt(col_part.sum(axis=0))
    return row, col, res_part.max()


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
    """
    m, n, d = P.shape
    inv_mu = 1.0 / mu
    scale = 1.0 / (m + 1)
    n_chunks = _n_chunks(n)
    col_part = np.zeros((n_chunks, d), dtype=np.float64)
    fro_part = np.zeros(n_chunks, dtype=np.float64)
    rowabs_part = np.zeros(n_chunks, dtype=np.float64)
    min_part = np.full(n_chunks, np.inf)
    for t in prange(n_chunks):
        lo, hi = _chunk(n, n_chunks, t)
        a = np.empty(d, dtype=np.float64)
        v = np.empty(d, dtype=np.float64)
        w = np.empty(d, dtype=np.float64)
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
                col_part[t, i] += ab
                if bb < mn:
                    mn = bb
            if rs > rmax:
                rmax = rs
        fro_part[t] = fro
        rowabs_part[t] = rmax
        min_part[t] = mn
    return fro_part.sum(), rowabs_part.max(), col_part.sum(axis=0).max(), min_part.min()


@njit(parallel=True, cache=True)
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
    One read of both arrays, parallel over blocks of rows.
    """
    n, d = A.shape
    n_chunks = _n_chunks(n)
    part = np.zeros(n_chunks, dtype=np.float64)
    for t in prange(n_chunks):
        lo, hi = _chunk(n, n_chunks, t)
        mx = 0.0
        for r in range(lo, hi):
            for i in range(d):
                x = abs(np.float64(A[r, i]) - np.float64(B[r, i]))
                if x > mx:
                    mx = x
        part[t] = mx
    return part.max()
