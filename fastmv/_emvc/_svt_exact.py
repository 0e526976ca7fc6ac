"""The exact routes of :func:`fastmv._emvc._svt.svt`, tiers 2 and 3 of that module's
docstring (which states them, their stopping rules and their cost model): the growing partial
SVD by block Krylov (:func:`partial_svt`), the eigendecomposition of the smaller Gram matrix
(:func:`gram_svt`) and LAPACK's ``gesdd`` (:func:`svd_gesdd`), with the GEMM-flop costs
``svt`` chooses between them by (:func:`full_cost`).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .._core._linalg import BlockKrylov
from .._core._threads import blas_threads

__all__ = ["MIN_BLOCK", "full_cost", "gram_accurate", "gram_svt", "partial_svt", "svd_gesdd"]

# GEMM-flop model of the two SVD paths (see ``_svt``'s module docstring; the calibration
# is in docs/records/emvc.md).
_FULL_SVD_FLOPS_PER_N3 = 16.0
_SVD_SMALL_FLOPS = 30.0  # SVD of an l × n matrix (l ≤ n) ≈ 30 n l² GEMM flops
MIN_BLOCK = 8  # the narrowest Krylov block (svt tries the partial path above 4 blocks)
_RR_GROWTH = 1.25  # Rayleigh–Ritz when the Krylov basis grew by this factor
# Gram route: one syrk plus one syevd taken as 8 n³ GEMM flops (half of gesdd; records/emvc.md).
_GRAM_FLOPS_PER_N3 = 8.0
# The Gram route is used only for τ ≥ this · √eps · σ₁ (its error on Q, about eps σ₁²/τ,
# then stays far below σ₁ in float64; docs/records/emvc.md).
_GRAM_MIN_TAU_OVER_SQRT_EPS = 64.0
# Expected rank (the previous one) up to this fraction of n: the Gram route asks ``syevr``
# for the eigenpairs above τ² only (MRRR on the wanted part, back-transformation of r
# vectors) instead of all of them from ``syevd``: faster at small ranks, slower at large
# ones, where MRRR slows down in the crowd of values near τ² (docs/records/perf.md "Figures behind
# the code's choices").
_EVR_MAX_RANK_FRACTION = 1 / 8
# The projector route forms ``Q`` when it needs at most this fraction of the thin route's
# flops (it runs at GEMM speed like the thin one; the margin keeps the choice away from ties).
_PROJECTOR_MARGIN = 0.9


def svd_gesdd(B):
    """``(U, s, Vt)`` of ``B`` via ``gesdd`` on the F-ordered view ``Bᵀ`` (no transpose
    copy); falls back to ``gesvd`` when ``gesdd`` does not converge. From ``n = 1000`` up it
    runs on the call's threads (solvers otherwise keep BLAS on one thread, see
    ``fastmv._core._threads``)."""
    with blas_threads(min(B.shape) >= 1000):
        try:
            U2, s, Vt2 = sla.svd(B.T, full_matrices=False, check_finite=False,
                                 lapack_driver="gesdd")
        except np.linalg.LinAlgError:
            U2, s, Vt2 = sla.svd(B.T, full_matrices=False, check_finite=False,
                                 lapack_driver="gesvd")
    # Bᵀ = U2 S Vt2  ⇒  B = Vt2ᵀ S U2ᵀ
    return Vt2.T, s, U2.T


def gram_accurate(tau, sigma1, dtype):
    """Whether the Gram route resolves singular values near ``τ`` (see ``_svt``'s module
    docstring: its error on ``Q`` is about ``eps σ₁² / τ``, below ``2e-3 √eps σ₁`` from here
    on)."""
    return tau >= _GRAM_MIN_TAU_OVER_SQRT_EPS * np.sqrt(np.finfo(dtype).eps) * sigma1


def gram_svt(B, tau, sigma_hint, rank_hint=None):
    """Thresholded factors ``(L, s, R, V, σ₁)`` with ``SVT(B, τ) = L R``, ``s`` the singular
    values above ``τ`` and ``V()`` their right singular vectors, from the eigendecomposition
    of the smaller Gram matrix (``BBᵀ`` or ``BᵀB``: one ``syrk`` and one divide-and-conquer
    ``syevd``, about half a ``gesdd``; when ``rank_hint`` expects few values above ``τ``,
    ``syevr`` computes only the eigenpairs above ``τ²``, see :data:`_EVR_MAX_RANK_FRACTION`).
    Returns None, without the eigendecomposition when ``sigma_hint`` already rules it out,
    when ``σ₁`` turns out too large for ``τ`` (:func:`gram_accurate`): then only ``gesdd``
    is exact enough. ``σ₁`` is ``nan`` when ``syevr`` found no eigenvalue above ``τ²``
    (then ``σ₁ ≤ τ`` and the result is zero)."""
    n, d = B.shape
    dt = B.dtype
    if sigma_hint is not None and not gram_accurate(tau, sigma_hint, dt):
        return None
    syrk = sla.get_blas_funcs("syrk", (B,))
    left = n <= d  # eigenvectors of BBᵀ are B's left singular vectors
    subset = rank_hint is not None and rank_hint <= _EVR_MAX_RANK_FRACTION * min(n, d)
    with blas_threads(min(n, d) >= 1000):
        # B is C-ordered, so Bᵀ is F-ordered: syrk reads it without a copy
        G = syrk(1.0, B.T, trans=1) if left else syrk(1.0, B, trans=1)
        if subset:  # only λ > τ² (LAPACK's half-open interval (vl, vu])
            w, Z = sla.eigh(G, lower=False, driver="evr", overwrite_a=True,
                            check_finite=False, subset_by_value=(tau * tau, np.inf))
        else:
            w, Z = sla.eigh(G, lower=False, driver="evd", overwrite_a=True,
                            check_finite=False)
        del G
        if w.size:
            sigma1 = np.sqrt(max(float(w[-1]), 0.0))
        else:  # only with the subset: every eigenvalue is ≤ τ², so σ₁ ≤ τ
            sigma1 = 0.0 if not subset else np.nan
        if np.isfinite(sigma1) and not gram_accurate(tau, sigma1, dt):
            return None
        keep = np.flatnonzero(w > tau * tau)[::-1]  # descending
        s = np.sqrt(w[keep].astype(np.float64))
        Zr = np.ascontiguousarray(Z[:, keep])
        del Z
        shrink = (1.0 - tau / s).astype(dt)
        if _projector_cheaper(n, d, s.size):
            M = _shrunk_projector(Zr, shrink)
            if left:  # SVT = M B
                return (M, s, B, lambda: np.ascontiguousarray((B.T @ Zr) / s), sigma1)
            return B, s, M, lambda: Zr, sigma1
        if left:  # B = U S Vᵀ, SVT = U diag(1 − τ/s) Uᵀ B;  V = Bᵀ U / s
            W = Zr.T @ B
            return (Zr * shrink, s, W, lambda: np.ascontiguousarray((W / s[:, None]).T),
                    sigma1)
        return B @ Zr, s, (Zr * shrink).T, lambda: Zr, sigma1


def _projector_cheaper(n, d, r):
    """Whether ``Q = M B`` (or ``B M``) with the ``k × k`` matrix ``M = Z_r diag(1 − τ/σ)
    Z_rᵀ`` (``k = min(n, d)``; one ``syrk``, ``k² r`` flops, then one GEMM, ``2 n d k``)
    beats the two thin products ``Z_r diag(·) (Z_rᵀ B)`` (``4 n d r``): at ranks above
    about ``2k/3``, the late iterations of a solve (docs/records/emvc.md "Forming Q")."""
    k = min(n, d)
    return float(k) * k * r + 2.0 * n * d * k < _PROJECTOR_MARGIN * 4.0 * n * d * r


def _shrunk_projector(Zr, shrink):
    """``Z_r diag(shrink) Z_rᵀ`` (``shrink > 0``), full symmetric, by one ``syrk``."""
    X = Zr * np.sqrt(shrink)
    syrk = sla.get_blas_funcs("syrk", (X,))
    M = syrk(1.0, X, trans=0, lower=0)  # upper triangle; F-ordered
    iu = np.tril_indices(M.shape[0], -1)
    M[iu] = M.T[iu]
    return M


def full_cost(n, gram=False):
    return (_GRAM_FLOPS_PER_N3 if gram else _FULL_SVD_FLOPS_PER_N3) * float(n) ** 3


def _rr_cost(n, l):
    """GEMM-flop equivalent of the Rayleigh–Ritz SVD of an ``l × n`` matrix (LAPACK runs
    it well below GEMM speed, hence the large constants)."""
    return _SVD_SMALL_FLOPS * n * float(l) ** 2 + _FULL_SVD_FLOPS_PER_N3 * float(l) ** 3


def partial_svt(B, tau, rank_hint, V0, rng, rtol, max_steps, budget, max_basis):
    """Block Krylov (block Lanczos with full reorthogonalisation) SVT.

    The basis ``W = [X₀, X₁, …]`` spans ``B Ω, (BBᵀ) B Ω, …``; each step costs two products
    with ``B`` (``Gⱼ = Bᵀ Xⱼ`` is kept: ``Wᵀ B = Gᵀ``, so the Rayleigh–Ritz matrix comes
    free); a Rayleigh–Ritz step (SVD of the ``l × n`` matrix ``Gᵀ``) follows whenever the
    basis grew by a quarter. Stops when the Ritz values ``s₁…s_{r+1}``
    change by at most ``rtol · s₁`` and the kept triplets' residuals are small (see module
    docstring). Returns ``((U_r, s_r, Vt_r), steps)`` or ``(None, steps)`` once the spent
    plus next-step cost would pass ``budget`` or the basis would pass ``max_basis``.
    """
    n = B.shape[1]
    # the basis lives in the column space of B, of dimension at most min(rows, n): a basis
    # that size spans it (exact triplets), and a wider one could not stay orthonormal
    kspan = min(B.shape)
    dt = B.dtype
    b = min(max(MIN_BLOCK, int(rank_hint) // 2 + 8), kspan)
    if b > max_basis:
        return None, 0
    Om = rng.standard_normal((n, b)).astype(dt)
    if V0 is not None and V0.shape[1]:
        k = min(V0.shape[1], b)
        Om[:, :k] = V0[:, :k]
    krylov = BlockKrylov(lambda X: B.T @ X, rng)  # images Gⱼ = Bᵀ Xⱼ: Wᵀ B = Gᵀ
    krylov.extend(B @ Om)
    spent = 4.0 * n * n * b
    s_old = None
    steps = 0
    l_rr = 0  # basis size at the last Rayleigh–Ritz
    while True:
        steps += 1
        W = krylov.basis()
        l = W.shape[1]
        # Rayleigh–Ritz once the basis grew by a quarter since the last one (its O(n l²)
        # cost then adds up to a few times the last one instead of growing with l³)
        if l >= _RR_GROWTH * l_rr or l >= kspan:
            Ut, s, Vt = krylov.ritz_svd()
            spent += _rr_cost(n, l)
            l_rr = l
            r = int(np.count_nonzero(s > tau))
            if s[0] == 0.0:
                break
            if s_old is not None and r + 1 <= s_old.size:
                # kept values: converged to rtol; the next one (a lower bound of σ_{r+1}
                # that only grows, geometrically once converging) either converged too, or
                # is far enough below τ that ten more increments of its last size cannot
                # reach τ
                ds = float(np.max(np.abs(s[:r] - s_old[:r]))) if r else 0.0
                ok_next = True
                if r < s.size:
                    d_next = abs(float(s[r] - s_old[r]))
                    ok_next = d_next <= rtol * s[0] or 10.0 * d_next < tau - float(s[r])
                if ds <= rtol * s[0] and ok_next:
                    crit = 0.0
                    if r:
                        R = B @ Vt[:r].T
                        R -= (W @ Ut[:, :r]) * s[:r]
                        spent += 2.0 * n * n * r
                        res = np.linalg.norm(R, axis=0)
                        crit = float(np.max(res * (s[:r] - tau) / s[:r]))
                    if crit <= rtol * s[0]:
                        break
            s_old = s
            if l >= kspan:  # the basis spans the column space: the Ritz triplets are exact
                break
        b_next = min(b, kspan - l)
        step_cost = 4.0 * n * n * b_next + 8.0 * n * l * b_next
        if l + b_next >= _RR_GROWTH * l_rr or l + b_next >= kspan:
            step_cost += _rr_cost(n, l + b_next)
        if steps >= max_steps or spent + step_cost > budget or l + b_next > max_basis:
            if s_old is not None:  # the last Ritz vectors: a start for the capped tier
                return None, steps, np.ascontiguousarray(Vt.T)
            return None, steps
        krylov.extend(B @ krylov.images[-1][:, :b_next])
        spent += 4.0 * n * n * b_next + 8.0 * n * l * b_next
    return (W @ Ut[:, :r], s[:r], Vt[:r]), steps
