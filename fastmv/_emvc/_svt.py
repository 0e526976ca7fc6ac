"""Singular value thresholding ``SVT(B, τ) = U max(S − τ, 0) Vᵀ`` for iterative solvers.

The prox of ``τ‖·‖_*`` dominates EMVC (``docs/algorithms.md §3``): a full SVD is O(n³) per
iteration. :func:`svt` avoids it where it can, in three tiers, each exact to a stated tolerance:

1. **Skip** (no SVD at all). ``Q = 0`` exactly when ``τ ≥ σ₁(B)``. Certified upper bounds
   on ``σ₁`` are tried in order of cost: ``min(‖B‖_F, √(‖B‖₁‖B‖_∞))`` (free when the caller
   passes the norms from a fused pass), then, for ``B ≥ 0`` elementwise, a few power
   iterations on ``BᵀB`` started from the all-ones vector, whose Collatz–Wielandt quotient
   ``max_i (BᵀB x)_i / x_i`` (any ``x > 0``) bounds ``σ₁²`` from above while the Rayleigh
   quotient bounds it from below. A skip is only taken on a certified upper bound (with a
   margin for rounding in the products); a lower bound above ``τ`` sends the call to tier 2/3
   at once, and an undecided bracket is settled by tier 2, which finds ``σ₁`` itself.
2. **Growing partial SVD** (few singular values above the threshold). Block Krylov
   (block Lanczos with full reorthogonalisation) on ``B Ω, (BBᵀ) B Ω, …``, block size
   ``r_hint/2 + 8`` (``r_hint``: the previous rank; narrower blocks and deeper bases are
   cheaper than wide ones, see docs/records/emvc.md), the start block warm-started with the previous
   right singular vectors; Rayleigh–Ritz on the whole basis after every block, so the
   subspace, and the rank it can hold, grows until the Ritz values ``s₁ … s_{r+1}`` (one past
   the threshold) change by at most ``rtol · s₁`` between steps (for ``s_{r+1}``, a lower
   bound of ``σ_{r+1}`` that only grows, it is enough that ten more increments of its last
   size stay below ``τ``) and every kept triplet has residual
   ``‖B vᵢ − sᵢ uᵢ‖ (sᵢ − τ)/sᵢ ≤ rtol · s₁``. A cost model in GEMM flops (one LAPACK ``gesdd`` of
   an ``n × n`` matrix taken as ``16 n³`` flops of GEMM, calibrated as docs/records/emvc.md says; a
   step with block ``b`` on a basis of ``l`` columns ``≈ 4 n² b + 8 n l b``, a
   Rayleigh–Ritz step, done whenever the basis grew by a quarter, ``≈ 30 n l² + 16 l³``)
   hands over to tier 3 once the spent plus next-step cost would exceed half a full
   decomposition (so a wrong guess costs at most 50 % extra) or the basis would exceed
   ``n/4``, and is not tried when the previous rank exceeds ``n/16`` (then tier 3 at once:
   the singular values crowd around ``τ``, and such ranks need Krylov bases of half of ``n``).
3. **Full decomposition.** Where ``τ ≥ 64 √eps σ₁``, the eigendecomposition of the smaller
   Gram matrix ``G = BBᵀ`` (one ``syrk``, one divide-and-conquer ``syevd``: about half the
   time of ``gesdd``, see ``docs/records/emvc.md``; ``syevr`` for the eigenpairs above ``τ²`` only
   when the previous rank is at most ``n/8``, about half again at small ranks):
   ``σᵢ = √λᵢ`` and ``SVT(B, τ) = U_r diag(1 − τ/σ) U_rᵀ B``. Squaring costs
   accuracy only at the small end: ``λ`` has absolute error ``≈ eps σ₁²``, so ``σ`` near
   ``τ`` has relative error ``eps σ₁²/τ²`` and ``Q`` an error of about ``eps σ₁²/τ``
   (docs/records/emvc.md compares it with ``gesdd`` on EMVC's inputs); with the ``64 √eps`` margin
   that stays small against ``σ₁`` in float64. ``σ₁`` is known exactly once ``G`` is
   decomposed, so the margin is checked after the fact (``gesdd`` takes over when it
   fails); ``sigma_hint`` saves that attempt when a previous call already showed it. Else
   LAPACK ``gesdd`` (``gesvd`` if it fails to converge).

4. **Capped** (only with ``max_rank``). Where the exact result would have more than
   ``max_rank = r`` singular values above ``τ`` (the late iterations of EMVC, whose exact
   SVT is a full decomposition), the top ``r`` singular triplets of ``B`` are found by a
   subspace iteration on a block of ``r + 8`` columns, shrunk, and the rest of ``B`` is kept
   unshrunk: ``Q̃ = B − τ U_r V_rᵀ``. The iteration runs across calls: a call warm-started
   with the previous call's whole block takes one step, a cold call stops as soon as ``r``
   Ritz values exceed ``τ`` (they are lower bounds of the singular values, so the exact rank
   is then at least ``r``: the certificate case), and only where fewer than ``r`` exceed ``τ``
   (the SVT of the computed part is returned as exact) does it run to convergence. On
   EMVC's slowly changing ``B`` the triplets converge over the late iterations at the cost
   of one subspace step each. Certificate: the exact
   ``SVT(B, τ) = B − U min(S, τ) Vᵀ`` is within ``τ`` of ``B`` in the spectral norm, and so
   is ``Q̃`` (``U_r``, ``V_r`` orthonormal), hence ``‖Q̃ − SVT(B, τ)‖₂ ≤ 2τ`` whatever the
   accuracy of the triplets, and ``≤ min(σ_{r+1}, τ)`` when they are exact (the error lives
   in the tail: ``Q̃`` is exact on the leading ``r``-dimensional singular subspace, the one
   the clustering reads). Its nuclear norm is reported as the upper bound
   ``Σ_{i≤r}(sᵢ − τ) + √(min(n, d) − r) ‖B − U_r S_r V_rᵀ‖_F``, valid for any Ritz
   triplets (``U_rᵀ B = S_r V_rᵀ``). The tier is taken only where its cost model (a cold
   call of eight subspace steps) is below a Gram decomposition's (:func:`capped_applies`),
   so small problems (``n`` up to about ``6 r``) keep the exact SVT; where a partial SVD
   that the tier would replace is abandoned, its Ritz vectors start the tier.
   docs/records/emvc.md ("Capped SVT") gives the measurements.

Cost: tier 1 O(n²) (a few matrix-vector products), tier 2 O(n² b + n l²) per step, tier 3
O(n³), tier 4 O(n² r) per subspace step (one step when warm-started).
Memory: tier 2 O(n l); tier 3 ``G`` and its eigenvectors (``2 n²``) or LAPACK's ``gesdd``
workspace (a copy of ``B``, ``U``, ``Vᵀ`` and about ``4 n²`` of work space), all freed on
return.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg as sla

from .._core._linalg import BlockKrylov
from .._core._threads import blas_threads
from .._core._validation import check_random_state

__all__ = ["svt", "SVTInfo", "capped_applies"]

# GEMM-flop model of the two SVD paths (see the module docstring; the calibration is in
# docs/records/emvc.md).
_FULL_SVD_FLOPS_PER_N3 = 16.0
_SVD_SMALL_FLOPS = 30.0  # SVD of an l × n matrix (l ≤ n) ≈ 30 n l² GEMM flops
_PARTIAL_BUDGET = 0.5  # fraction of a full SVD the partial path may spend
_MAX_HINT_FRACTION = 1 / 16  # previous rank above n/16: go straight to the full SVD
_MIN_BLOCK = 8
_RR_GROWTH = 1.25  # Rayleigh–Ritz when the Krylov basis grew by this factor
_MAX_BASIS_FRACTION = 1 / 4  # the partial path never builds a basis wider than n/4
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


@dataclasses.dataclass
class SVTInfo:
    """What one :func:`svt` call did.

    Attributes
    ----------
    rank : int
        Number of singular values above ``τ`` (rank of the result).
    nuclear_norm : float
        ``Σ max(σᵢ − τ, 0)``, the nuclear norm of the result.
    method : str
        ``"skip-bound"`` (norm bound), ``"skip-power"`` (Collatz–Wielandt bound),
        ``"partial"``, ``"gram"`` (Gram eigendecomposition), ``"full"`` (``gesdd``) or
        ``"capped"`` (top ``max_rank`` triplets shrunk, the rest of ``B`` kept; then
        ``rank`` is ``max_rank``, a lower bound of the exact rank).
    V : ndarray, shape (d, k)
        Right singular vectors of the result (warm start of the next call), ``k = rank``;
        empty when the rank exceeds ``n/16`` (the next call would use the full SVD anyway);
        after ``"capped"`` the whole block of ``max_rank + 8`` Ritz vectors.
    sigma_bounds : tuple of float
        ``(lower, upper)`` bounds on ``σ₁(B)`` found on the way (``nan`` when not computed;
        both ``σ₁`` after a full decomposition).
    n_steps : int
        Block-Krylov steps of the partial path (0 otherwise).
    partial_abandoned : bool
        The partial path ran and then handed over to the full SVD.
    """

    rank: int
    nuclear_norm: float
    method: str
    V: np.ndarray
    sigma_bounds: tuple = (np.nan, np.nan)
    n_steps: int = 0
    partial_abandoned: bool = False


def _default_rtol(dtype) -> float:
    return 1e-10 if np.dtype(dtype) == np.float64 else 1e-5


def _power_bounds(B, tau, n_iter, safety):
    """Bracket ``σ₁(B)`` for elementwise nonnegative ``B`` (Collatz–Wielandt / Rayleigh).

    Returns ``(lower, upper)`` after at most ``n_iter`` steps, stopping early once the
    bracket decides ``τ`` (``upper ≤ τ`` or ``lower > τ``).
    """
    n = B.shape[1]
    x = np.full(n, 1.0 / np.sqrt(n), dtype=B.dtype)
    lower, upper = 0.0, np.inf
    for _ in range(n_iter):
        y = B @ x
        z = B.T @ y
        x64 = x.astype(np.float64)
        z64 = z.astype(np.float64)
        y64 = y.astype(np.float64)
        lower = max(lower, float(np.sqrt(np.dot(y64, y64) / np.dot(x64, x64))))
        upper = min(upper, float(np.sqrt(max(np.max(z64 / x64), 0.0))) * safety)
        if upper <= tau or lower > tau:
            break
        zmax = z64.max()
        if not zmax > 0.0:  # B = 0 on the support of x: σ₁ = 0 is bounded exactly
            break
        x64 = np.maximum(z64 / zmax, 1e-12)  # stays > 0, so the quotient stays a bound
        x = x64.astype(B.dtype)
    return lower, upper


def _full_svd(B):
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


def _gram_accurate(tau, sigma1, dtype):
    """Whether the Gram route resolves singular values near ``τ`` (see the module docstring:
    its error on ``Q`` is about ``eps σ₁² / τ``, below ``2e-3 √eps σ₁`` from here on)."""
    return tau >= _GRAM_MIN_TAU_OVER_SQRT_EPS * np.sqrt(np.finfo(dtype).eps) * sigma1


def _gram_svt(B, tau, sigma_hint, rank_hint=None):
    """Thresholded factors ``(L, s, R, V, σ₁)`` with ``SVT(B, τ) = L R``, ``s`` the singular
    values above ``τ`` and ``V()`` their right singular vectors, from the eigendecomposition
    of the smaller Gram matrix (``BBᵀ`` or ``BᵀB``: one ``syrk`` and one divide-and-conquer
    ``syevd``, about half a ``gesdd``; when ``rank_hint`` expects few values above ``τ``,
    ``syevr`` computes only the eigenpairs above ``τ²``, see :data:`_EVR_MAX_RANK_FRACTION`).
    Returns None, without the eigendecomposition when ``sigma_hint`` already rules it out,
    when ``σ₁`` turns out too large for ``τ`` (:func:`_gram_accurate`): then only ``gesdd``
    is exact enough. ``σ₁`` is ``nan`` when ``syevr`` found no eigenvalue above ``τ²``
    (then ``σ₁ ≤ τ`` and the result is zero)."""
    n, d = B.shape
    dt = B.dtype
    if sigma_hint is not None and not _gram_accurate(tau, sigma_hint, dt):
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
        if np.isfinite(sigma1) and not _gram_accurate(tau, sigma1, dt):
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


def _full_cost(n, gram=False):
    return (_GRAM_FLOPS_PER_N3 if gram else _FULL_SVD_FLOPS_PER_N3) * float(n) ** 3


def _rr_cost(n, l):
    """GEMM-flop equivalent of the Rayleigh–Ritz SVD of an ``l × n`` matrix (LAPACK runs
    it well below GEMM speed, hence the large constants)."""
    return _SVD_SMALL_FLOPS * n * float(l) ** 2 + _FULL_SVD_FLOPS_PER_N3 * float(l) ** 3


def _partial(B, tau, rank_hint, V0, rng, rtol, max_steps, budget, max_basis):
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
    b = min(max(_MIN_BLOCK, int(rank_hint) // 2 + 8), kspan)
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


# Capped tier: oversampling of the subspace iteration, its steps and its tolerance on the
# Ritz values (relative to s₁; the 2τ certificate holds whatever the accuracy, so this only
# decides how exact the leading subspace is).
_CAP_OVERSAMPLE = 8
_CAP_MAX_STEPS = 8
_CAP_MIN_COLD_STEPS = 3
_CAP_RTOL = 1e-4


def _capped_cost(n, d, r, steps=_CAP_MAX_STEPS):
    """GEMM-flop model of a cold call of the capped tier at its step limit: per step two
    products with ``B`` (block ``b = r + oversampling``, ``4 n d b``), the Cholesky QR and the
    Ritz step on ``b`` columns (about ``10 max(n, d) b² + 10 b³``: four ``n × b × b``
    products, two triangular solves and one ``b × b`` ``eigh``), then ``Q̃`` (``2 n d r``). The
    tier is used only where this is below a Gram decomposition (:func:`capped_applies`), so
    small problems keep the exact SVT."""
    b = min(r + _CAP_OVERSAMPLE, min(n, d))
    step = 4.0 * n * d * b + 10.0 * max(n, d) * float(b) ** 2 + 10.0 * float(b) ** 3
    return steps * step + 2.0 * n * d * r


def capped_applies(n, d, max_rank):
    """Whether :func:`svt` of an ``n × d`` matrix with this ``max_rank`` may take the capped
    tier: a rank cap below ``min(n, d)`` whose cost model (:func:`_capped_cost`) is below one
    Gram decomposition."""
    if max_rank is None or max_rank >= min(n, d):
        return False
    return _capped_cost(n, d, max(int(max_rank), 1)) < _full_cost(min(n, d), gram=True)


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
    ``b = r + _CAP_OVERSAMPLE`` columns, started from ``V0`` (padded with Gaussian columns).

    Accuracy is spent only where the result claims it. The Ritz values are lower bounds of
    the singular values, so once ``r`` of them exceed ``τ`` the exact rank is at least ``r``
    and the capped result is within its ``2τ`` certificate whatever the accuracy: the
    iteration stops there, after one step when warm (``V0`` holds a whole block, the
    previous call's: each call continues the previous calls' subspace iteration on the
    slowly changing ``B``), after ``_CAP_MIN_COLD_STEPS`` when cold. Otherwise (the threshold
    falls inside the computed part, whose SVT is returned as exact) it runs until the Ritz
    values above ``τ`` and the next one change by at most ``_CAP_RTOL · s₁`` between steps
    (at most ``_CAP_MAX_STEPS``). Returns ``(U_r, s_r, Vt_b)``: ``Vt_b`` has all ``b`` Ritz vectors
    (the next call's warm start)."""
    n, d = B.shape
    b = min(r + _CAP_OVERSAMPLE, min(n, d))
    warm = V0 is not None and V0.shape[1] >= b
    if warm:
        X = np.ascontiguousarray(V0[:, :b], dtype=B.dtype)
    else:
        X = rng.standard_normal((d, b)).astype(B.dtype)
        if V0 is not None and V0.shape[1]:
            k = min(V0.shape[1], b)
            X[:, :k] = V0[:, :k]
    min_steps = 1 if warm else _CAP_MIN_COLD_STEPS
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


def _capped(B, tau, r, V0, rng, fro, out):
    """The capped tier: ``Q̃ = B − τ U_r V_rᵀ`` (see the module docstring), or the SVT of
    the computed part when fewer than ``r`` of its values exceed ``τ``. Returns
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


def svt(B, tau, *, out=None, bounds=None, rank_hint=None, V0=None, method="auto",
        full_svd="auto", sigma_hint=None, rtol=None, power_iter=8, max_steps=100,
        max_rank=None, random_state=None):
    """Singular value soft-thresholding ``Q = U max(S − τ, 0) Vᵀ`` of a square or
    rectangular matrix, skipping or shrinking the SVD where that is provably exact.

    Parameters
    ----------
    B : ndarray, shape (n, d), float32 or float64
        Input; never modified.
    tau : float
        Threshold ``τ ≥ 0``.
    out : ndarray, shape (n, d), optional
        Receives ``Q``. When the result is zero and ``out`` is given, ``out`` is *not*
        written (check ``info.rank == 0``); without ``out`` a new array is returned.
    bounds : dict, optional
        Norms of ``B`` already known from a fused pass: ``fro`` (‖B‖_F), ``norm1``
        (max column abs sum), ``norminf`` (max row abs sum), ``nonneg`` (``B ≥ 0``).
        Computed here when absent.
    rank_hint : int, optional
        Expected rank of the result (e.g. the previous call's); decides between the
        partial and the full SVD. ``None`` means unknown (partial path tried first).
    V0 : ndarray, shape (d, k), optional
        Warm start of the partial path (previous right singular vectors).
    method : {"auto", "partial", "full"}
        ``"full"`` always runs tier 3 (no skip); ``"partial"`` forces tier 2 after the
        skip tests (never falls back); ``"auto"`` decides by the cost model.
    full_svd : {"auto", "gesdd"}
        Tier 3: ``"auto"`` takes the Gram eigendecomposition where it is accurate
        (``τ ≥ 64 √eps σ₁``) and ``gesdd`` otherwise; ``"gesdd"`` always ``gesdd``.
    sigma_hint : float, optional
        Estimate of ``σ₁(B)`` (e.g. the previous call's ``info.sigma_bounds[1]``): skips the
        Gram attempt when it already shows the Gram route would be inaccurate.
    rtol : float, optional
        Relative accuracy of the partial path (default 1e-10 in float64, 1e-5 in
        float32).
    power_iter : int
        Maximum power steps of the skip test for nonnegative ``B``.
    max_steps : int
        Maximum block-Krylov steps of the partial path.
    max_rank : int, optional
        With ``method="auto"``: where the exact result would need a full decomposition
        (the partial path does not fit its budget) or is expected to have more than
        ``max_rank`` singular values above ``τ`` (``rank_hint``), the capped tier
        ``Q̃ = B − τ U_r V_rᵀ`` with the top ``r = max_rank`` triplets, within ``2τ`` of the
        exact result in the spectral norm (module docstring). None: always exact.
    random_state : None, int or Generator
        Start block of the partial path.

    Returns
    -------
    Q : ndarray or None
        The thresholded matrix (``out`` when given); ``None`` if ``out`` was given and the
        result is zero.
    info : SVTInfo
        Rank, nuclear norm of ``Q``, path taken, warm-start vectors.

    Notes
    -----
    Time O(n d) when skipped, O(n d b + d l²) per partial step, O(n d min(n, d)) for a full SVD;
    see the module docstring for the exactness argument of each tier.
    """
    if method not in ("auto", "partial", "full"):
        raise ValueError(f"method must be 'auto', 'partial' or 'full', got {method!r}")
    if full_svd not in ("auto", "gesdd"):
        raise ValueError(f"full_svd must be 'auto' or 'gesdd', got {full_svd!r}")
    n, d = B.shape
    dt = B.dtype
    rtol = _default_rtol(dt) if rtol is None else rtol
    eps = float(np.finfo(dt).eps)
    safety = 1.0 + max(n, d) * eps + 1e-12
    lower, upper = np.nan, np.nan

    def zero(tag, lo=np.nan, up=np.nan):
        info = SVTInfo(0, 0.0, tag, np.zeros((d, 0), dtype=dt), (lo, up))
        if out is not None:
            return None, info
        return np.zeros((n, d), dtype=dt), info

    if method != "full":
        if bounds is None:
            absB = np.abs(B)
            bounds = dict(fro=float(np.sqrt(np.sum(np.square(B, dtype=np.float64)))),
                          norm1=float(absB.sum(axis=0, dtype=np.float64).max()),
                          norminf=float(absB.sum(axis=1, dtype=np.float64).max()),
                          nonneg=bool(B.min() >= 0))
            del absB
        ub = min(bounds["fro"], np.sqrt(bounds["norm1"] * bounds["norminf"])) * safety
        upper = ub
        if tau >= ub:
            return zero("skip-bound", np.nan, ub)
        if bounds.get("nonneg", False) and power_iter > 0:
            lower, up2 = _power_bounds(B, tau, power_iter, safety)
            upper = min(upper, up2)
            if tau >= upper:
                return zero("skip-power", lower, upper)
    rng = check_random_state(random_state)
    result = None
    steps = 0
    abandoned = False
    cap = None
    if method == "auto" and capped_applies(n, d, max_rank):
        cap = max(int(max_rank), 1)
    # straight to the capped tier when the exact rank was at least the cap, or when the
    # previous call was capped (its whole block of Ritz vectors is the warm start)
    warm_block = V0 is not None and cap is not None and V0.shape[1] >= cap + _CAP_OVERSAMPLE
    if cap is not None and rank_hint is not None and (rank_hint >= cap or warm_block):
        return _capped_result(B, tau, cap, V0, rng, bounds["fro"], out, (lower, upper))
    if method == "partial" or (method == "auto" and min(n, d) > 4 * _MIN_BLOCK):
        hint = 1 if rank_hint is None else max(int(rank_hint), 1)
        if method == "partial":
            budget, max_basis = np.inf, d
        else:
            # the cheaper Gram route is expected when a σ₁ estimate allows it
            est = sigma_hint if sigma_hint is not None else upper
            gram_next = full_svd == "auto" and _gram_accurate(tau, est, dt)
            budget = _PARTIAL_BUDGET * _full_cost(min(n, d), gram_next)
            max_basis = int(_MAX_BASIS_FRACTION * d)
            if cap is not None:  # past this basis the capped tier is the cheaper one
                max_basis = min(max_basis, 2 * cap + 2 * _MIN_BLOCK)
                # and past half of its cold call, which starts from this basis' Ritz vectors
                budget = min(budget, _PARTIAL_BUDGET
                             * _capped_cost(n, d, cap, steps=_CAP_MIN_COLD_STEPS))
        if method == "partial" or hint <= _MAX_HINT_FRACTION * min(n, d):
            result, steps, *ritz = _partial(B, tau, hint, V0, rng, rtol, max_steps, budget,
                                             max_basis)
            if ritz and cap is not None:  # what the abandoned Krylov basis found
                V0 = ritz[0]
        abandoned = result is None and steps > 0
    if result is None and cap is not None:
        return _capped_result(B, tau, cap, V0, rng, bounds["fro"], out, (lower, upper),
                              steps, abandoned)
    V_of = None
    if result is not None:
        U, s, Vt = result
        tag = "partial"
        if s.size:
            lower = max(float(s[0]), lower) if np.isfinite(lower) else float(s[0])
    else:
        gram = None
        if full_svd == "auto":
            gram = _gram_svt(B, tau, sigma_hint, rank_hint)
        if gram is not None:
            left, s, right, V_of, sig1 = gram
            tag = "gram"
        else:
            U, s, Vt = _full_svd(B)
            tag = "full"
            sig1 = float(s[0]) if s.size else 0.0
        if np.isfinite(sig1):
            lower = upper = sig1
        else:  # syevr found nothing above τ²: σ₁ ≤ τ
            upper = min(upper, tau) if np.isfinite(upper) else tau
        if gram is None:
            r = int(np.count_nonzero(s > tau))
            U, s, Vt = U[:, :r], s[:r], Vt[:r]
    r = s.size
    nuc = float(np.sum(s.astype(np.float64) - tau))
    # warm-start vectors are only useful while the partial path may run: keep them small
    keep_v = r <= max(_MAX_HINT_FRACTION * min(n, d), 1)
    if not keep_v:
        V = np.zeros((d, 0), dtype=dt)
    elif V_of is not None:
        V = V_of()
    else:
        V = np.ascontiguousarray(Vt.T)
    info = SVTInfo(r, nuc, tag, V, (lower, upper), steps, abandoned)
    if r == 0:
        if out is not None:
            return None, info
        return np.zeros((n, d), dtype=dt), info
    if V_of is None:
        left = (U * (s - tau).astype(dt)).astype(dt, copy=False)
        right = Vt.astype(dt, copy=False)
    if out is None:
        return left @ right, info
    np.matmul(left, right, out=out)
    return out, info


def _capped_result(B, tau, cap, V0, rng, fro, out, sigma_bounds, steps=0, abandoned=False):
    """``(Q, SVTInfo)`` of the capped tier (``out`` convention of :func:`svt`)."""
    Q, s, V, nuc, _ = _capped(B, tau, cap, V0, rng, fro, out)
    lower, upper = sigma_bounds
    if s.size:
        lower = max(float(s[0]), lower) if np.isfinite(lower) else float(s[0])
    info = SVTInfo(int(s.size), nuc, "capped", V, (lower, upper), steps, abandoned)
    if s.size == 0 and out is not None:
        return None, info
    if s.size == 0:
        return np.zeros(B.shape, dtype=B.dtype), info
    return Q, info
