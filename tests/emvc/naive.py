"""NumPy twins of the EMVC kernels (kernels/simplex.py, kernels/emvc.py), written from
docs/algorithms.md §3 for clarity, not speed. The simplex projection's twin is shared with the
NumPy EMVC of ``benchmarks/references/emvc.py`` (the reference of the solver tests and of
benchmarks/suites/bench_emvc.py) and imported from there.
"""
import numpy as np

from benchmarks.references.emvc import (  # noqa: F401  (twins the reference shares)
    rowwise_simplex_projection,
)


def error_norms(E):
    E64 = np.asarray(E, dtype=np.float64)
    return np.linalg.norm(E64, axis=1), np.linalg.norm(E64, axis=0)


def _reweighted_error_update(P, P_hat, Y, E, row_norms, col_norms, lam1, lam2, mu, eps):
    P64, Ph64, Y64 = (np.asarray(x, dtype=np.float64) for x in (P, P_hat, Y))
    d = 1.0 / (2.0 * np.maximum(row_norms, eps))
    g = 1.0 / (2.0 * np.maximum(col_norms, eps))
    T = P64 - Ph64 - Y64 / mu
    E_new = T / (1.0 + (lam2 / mu) * d[:, None] + (lam1 / mu) * g[None, :])
    E[...] = E_new
    Y[...] = Y64 + mu * (Ph64 + E_new - P64)
    resid = float(np.abs(P64 - Ph64 - E_new).max()) if E_new.size else 0.0
    rn, cn = error_norms(E_new)
    return rn, cn, resid


def _consensus_update(P, E, Y, Q, Zb, P_hat, mu, zc, has_q):
    m = P.shape[0]
    P64, E64, Y64 = (np.asarray(x, dtype=np.float64) for x in (P, E, Y))
    Q64 = np.asarray(Q, dtype=np.float64) if has_q else np.zeros(Zb.shape)
    Z_over_mu = zc * (np.asarray(Zb, dtype=np.float64) - Q64)
    A = ((P64 - E64 - Y64 / mu).sum(axis=0) + Q64 - Z_over_mu) / (m + 1)
    Ph = rowwise_simplex_projection(A, np.empty_like(A))
    P_hat[...] = Ph
    Zb[...] = Ph + Z_over_mu
    B = np.asarray(Zb, dtype=np.float64)
    return (float((B * B).sum()), float(np.abs(B).sum(axis=1).max()),
            float(np.abs(B).sum(axis=0).max()), float(B.min()))


def consensus_error_update(P, E, Y, Q, Zb, P_hat, mu, zc, has_q, weights):
    """The P̂ step, then each view's E, Y steps with the new P̂ (as stored)."""
    stats = _consensus_update(P, E, Y, Q, Zb, P_hat, mu, zc, has_q)
    m = P.shape[0]
    rn, cn = np.empty((m, P.shape[1])), np.empty((m, P.shape[2]))
    res = 0.0
    for v in range(m):
        rn[v], cn[v], r = _reweighted_error_update(
            P[v], P_hat, Y[v], E[v], weights.row_norms[v], weights.col_norms[v],
            weights.lam1, weights.lam2, mu, weights.eps)
        res = max(res, r)
    return (rn, cn, res) + stats


# the serial copy computes exactly what the parallel kernel does
consensus_error_update_serial = consensus_error_update


def max_abs_diff(A, B):
    if np.size(A) == 0:
        return 0.0
    return float(np.abs(np.asarray(A, np.float64) - np.asarray(B, np.float64)).max())


