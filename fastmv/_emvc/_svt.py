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

from .._core._validation import check_random_state
from ._svt_capped import CAP_MIN_COLD_STEPS, CAP_OVERSAMPLE, capped, capped_applies, capped_cost
from ._svt_exact import MIN_BLOCK, full_cost, gram_accurate, gram_svt, partial_svt, svd_gesdd

__all__ = ["svt", "SVTInfo", "capped_applies"]

# When ``svt`` tries the partial path (tier 2) and how far it lets it go before tier 3 (the
# GEMM-flop costs are in ``_svt_exact``; the calibration is in docs/records/emvc.md).
_PARTIAL_BUDGET = 0.5  # fraction of a full SVD the partial path may spend
_MAX_HINT_FRACTION = 1 / 16  # previous rank above n/16: go straight to the full SVD
_MAX_BASIS_FRACTION = 1 / 4  # the partial path never builds a basis wider than n/4


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
    warm_block = V0 is not None and cap is not None and V0.shape[1] >= cap + CAP_OVERSAMPLE
    if cap is not None and rank_hint is not None and (rank_hint >= cap or warm_block):
        return _capped_result(B, tau, cap, V0, rng, bounds["fro"], out, (lower, upper))
    if method == "partial" or (method == "auto" and min(n, d) > 4 * MIN_BLOCK):
        hint = 1 if rank_hint is None else max(int(rank_hint), 1)
        if method == "partial":
            budget, max_basis = np.inf, d
        else:
            # the cheaper Gram route is expected when a σ₁ estimate allows it
            est = sigma_hint if sigma_hint is not None else upper
            gram_next = full_svd == "auto" and gram_accurate(tau, est, dt)
            budget = _PARTIAL_BUDGET * full_cost(min(n, d), gram_next)
            max_basis = int(_MAX_BASIS_FRACTION * d)
            if cap is not None:  # past this basis the capped tier is the cheaper one
                max_basis = min(max_basis, 2 * cap + 2 * MIN_BLOCK)
                # and past half of its cold call, which starts from this basis' Ritz vectors
                budget = min(budget, _PARTIAL_BUDGET
                             * capped_cost(n, d, cap, steps=CAP_MIN_COLD_STEPS))
        if method == "partial" or hint <= _MAX_HINT_FRACTION * min(n, d):
            result, steps, *ritz = partial_svt(B, tau, hint, V0, rng, rtol, max_steps, budget,
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
            gram = gram_svt(B, tau, sigma_hint, rank_hint)
        if gram is not None:
            left, s, right, V_of, sig1 = gram
            tag = "gram"
        else:
            U, s, Vt = svd_gesdd(B)
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
    Q, s, V, nuc, _ = capped(B, tau, cap, V0, rng, fro, out)
    lower, upper = sigma_bounds
    if s.size:
        lower = max(float(s[0]), lower) if np.isfinite(lower) else float(s[0])
    info = SVTInfo(int(s.size), nuc, "capped", V, (lower, upper), steps, abandoned)
    if s.size == 0 and out is not None:
        return None, info
    if s.size == 0:
        return np.zeros(B.shape, dtype=B.dtype), info
    return Q, info
