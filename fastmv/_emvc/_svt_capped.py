"""The capped tier of :func:`fastmv._emvc._svt.svt` (tier 4 of that module's docstring,
which states it and its certificate): the top ``max_rank`` singular triplets of ``B`` by a
subspace iteration that runs across calls, shrunk, the rest of ``B`` kept
(:func:`capped`), and where it is cheaper than the exact SVT (:func:`capped_applies`).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .._core._threads import blas_threads
from ._svt_exact import full_cost

__all__ = ["CAP_MIN_COLD_STEPS", "CAP_OVERSAMPLE", "capped", "capped_applies", "capped_cost"]

# Capped tier: oversampling of the subspace iteration, its steps and its tolerance on the
# Ritz values (relative to s₁; the 2τ certificate holds whatever the accuracy, so this only
# decides how exact the leading subspace is).
CAP_OVERSAMPLE = 8
_CAP_MAX_STEPS = 8
CAP_MIN_COLD_STEPS = 3
_CAP_RTOL = 1e-4


def capped_cost(n, d, r, steps=_CAP_MAX_STEPS):
    """GEMM-flop model of a cold call of the capped tier at its step limit: per step two
    products with ``B`` (block ``b = r + oversampling``, ``4 n d b``), the Cholesky QR and the
    Ritz step on ``b`` columns (about ``10 max(n, d) b² + 10 b³``: four ``n × b × b``
    products, two triangular solves and one ``b × b`` ``eigh``), then ``Q̃`` (``2 n d r``). The
    tier is used only where this is below a Gram decomposition (:func:`capped_applies`), so
    small problems keep the exact SVT."""
    b = min(r + CAP_OVERSAMPLE, min(n, d))
    step = 4.0 * n * d * b + 10.0 * max(n, d) * float(b) ** 2 + 10.0 * float(b) ** 3
    return steps * step + 2.0 * n * d * r


def capped_applies(n, d, max_rank):
    """Whether :func:`svt` of an ``n × d`` matrix with this ``max_rank`` may take the capped
    tier: a rank cap below ``min(n, d)`` whose cost model (:func:`capped_cost`) is below one
    Gram decomposition."""
    if max_rank is None or max_rank >= min(n, d):
        return False
    return capped_cost(n, d, max(int(max_rank), 1)) < full_cost(min(n, d), gram=True)


def _orthonormal(Y):
    """An orthonormal basis of the columns of a tall ``Y``: Cholesky QR twice (GEMM speed;
    LAPACK's Householder QR of an ``n × b`` block runs far below it), Householder QR where
    the Gram matrix is not numerically positive definite."""
    dt = Y.dtype
    for _ in range(2):
        try:
            R = np.linalg.cholesky((Y.T @ Y).astype(np.float64)).T
        except np.linalg.LinAlgError:
            return np.linalg.qr(Y)[0]
        Y = sla.solve_triangular(R.astype(dt), Y.T, trans="T", lower=False,
                                 check_finite=False).T
    return np.ascontiguousarray(Y, dtype=dt)


def _ritz(B, Y):
    """Ritz triplets of ``B`` on the orthonormal basis ``Y``: the SVD of ``Yᵀ B = Gᵀ``
    through the eigendecomposition of the small ``GᵀG``. Returns ``(U_b, s, Vt)``,
    descending."""
    G = B.T @ Y
    w, W = np.linalg.eigh((G.T @ G).astype(np.float64))
    w, W = w[::-1], W[:, ::-1]
    s = np.sqrt(np.maximum(w, 0.0))
    safe = np.where(s > 0, s, 1.0)
    Vt = ((G @ W.astype(G.dtype)) / safe.astype(G.dtype)).T
    return W, s, Vt


def _top_triplets(B, r, tau, V0, rng):
    """Top ``r`` singular triplets of ``B`` by subspace iteration on ``BᵀB`` on a block of
    ``b = r + CAP_OVERSAMPLE`` columns, started from ``V0`` (padded with Gaussian columns).

    Accuracy is spent only where the result claims it. The Ritz values are lower bounds of
    the singular values, so once ``r`` of them exceed ``τ`` the exact rank is at least ``r``
    and the capped result is within its ``2τ`` certificate whatever the accuracy: the
    iteration stops there, after one step when warm (``V0`` holds a whole block, the
    previous call's: each call continues the previous calls' subspace iteration on the
    slowly changing ``B``), after ``CAP_MIN_COLD_STEPS`` when cold. Otherwise (the threshold
    falls inside the computed part, whose SVT is returned as exact) it runs until the Ritz
    values above ``τ`` and the next one change by at most ``_CAP_RTOL · s₁`` between steps
    (at most ``_CAP_MAX_STEPS``). Returns ``(U_r, s_r, Vt_b)``: ``Vt_b`` has all ``b`` Ritz vectors
    (the next call's warm start)."""
    n, d = B.shape
    b = min(r + CAP_OVERSAMPLE, min(n, d))
    warm = V0 is not None and V0.shape[1] >= b
    if warm:
        X = np.ascontiguousarray(V0[:, :b], dtype=B.dtype)
    else:
        X = rng.standard_normal((d, b)).astype(B.dtype)
        if V0 is not None and V0.shape[1]:
            k = min(V0.shape[1], b)
            X[:, :k] = V0[:, :k]
    min_steps = 1 if warm else CAP_MIN_COLD_STEPS
    s_old = None
    for step in range(1, _CAP_MAX_STEPS + 1):
        Y = _orthonormal(B @ X)
        W, s, Vt = _ritz(B, Y)
        if step >= min_steps and r <= s.size and s[r - 1] > tau:
            break  # rank ≥ r: the certificate case
        # converged: the values above τ and the next one (fewer than r exceed τ here)
        top = min(int(np.count_nonzero(s[:r] > tau)) + 1, r)
        if s_old is not None and np.max(np.abs(s[:top] - s_old[:top])) <= _CAP_RTOL * s[0]:
            break
        s_old = s
        X = np.ascontiguousarray(Vt.T)
    U = Y @ W[:, :r].astype(Y.dtype)
    return U, s[:r].astype(B.dtype), np.ascontiguousarray(Vt)


def capped(B, tau, r, V0, rng, fro, out):
    """The capped tier: ``Q̃ = B − τ U_r V_rᵀ`` (see ``_svt``'s module docstring), or the
    SVT of the computed part when fewer than ``r`` of its values exceed ``τ``. Returns
    ``(Q, s, V, nuclear_norm, exact)``."""
    with blas_threads(min(B.shape) >= 1000):  # GEMMs of n² r flops: worth every thread
        U, s, Vt_all = _top_triplets(B, r, tau, V0, rng)
    Vt = Vt_all[:r]
    keep = int(np.count_nonzero(s > tau))
    if keep < r:  # the threshold falls inside the computed part: its SVT
        U, s, Vt = U[:, :keep], s[:keep], Vt[:keep]
        left = (U * (s - tau).astype(B.dtype)).astype(B.dtype, copy=False)
        Q = left @ Vt if out is None else np.matmul(left, Vt, out=out)
        # the whole block: a warm start of the next call, whichever tier it takes
        return Q, s, np.ascontiguousarray(Vt_all.T), float(np.sum(s - tau)), True
    Q = np.array(B, copy=True) if out is None else out
    if out is not None:
        np.copyto(out, B)
    # Qᵀ (F-ordered view of the C-ordered Q) -= τ V Uᵀ, in place
    gemm = sla.get_blas_funcs("gemm", (Q,))
    with blas_threads(min(B.shape) >= 1000):
        gemm(-tau, np.asfortranarray(Vt.T), np.asfortranarray(U.T), beta=1.0, c=Q.T,
             overwrite_c=True)
    s64 = s.astype(np.float64)
    tail2 = max(fro * fro - float(np.dot(s64, s64)), 0.0)
    nuc = float(np.sum(s64 - tau)) + np.sqrt((min(B.shape) - r) * tail2)
    return Q, s, np.ascontiguousarray(Vt_all.T), nuc, False
