"""The MVMC optimisation problem (docs/algorithms.md §1): constraint pattern, view bases,
the per-view M-steps and the outer iteration that :func:`fastmv._core._driver.iterate` drives.

Model (views ``X_v``, ``Z_v`` = top-``k`` left singular vectors, ``Ω`` = constrained pairs)::

    min_{M_v ⪰ 0, 0 ≤ S ≤ 1}  Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²

It is jointly convex. For fixed ``M`` the best ``S`` is ``clip(Ā, 0, 1)`` with
``Ā = (1/m) Σ_v Z_v M_v Z_vᵀ`` (:mod:`fastmv._mvmc._lowrank` handles it without ``n × n``
arrays); for fixed ``S`` every ``M_v`` is a smooth problem over the PSD cone whose gradient
is ``2(C1 λ_v + C2)``-Lipschitz, ``λ_v ≤ 1`` the largest eigenvalue of
``M ↦ Z_vᵀ R_Ω(Z_v M Z_vᵀ) Z_v`` (the paper's bound is loose by ``k²``, ``2(C1 + C2)`` by
``1/λ_v``, 10–100 with few pairs): ``step="adaptive"`` estimates ``λ_v`` by power iteration
and backtracks on each step's exact curvature (:meth:`ViewProblem.solve`).

- ``Z_vᵀ S Z_v = Z_vᵀ Ā Z_v + Z_vᵀ N Z_v``: the first term costs O(m² k³) from the Gram
  matrices ``Z_vᵀ Z_w``, the second one tiled pass over ``S`` per outer iteration.
- The masked residual ``R_Ω(Z M Zᵀ − S_ob)`` is evaluated only on the stored pairs, restricted
  to the ``n_Ω`` samples that occur in a constraint: O(|Ω| k + n_Ω k²) per gradient
  (:func:`fastmv.kernels.mvmc.masked_residual_product`), instead of O(n² k).

Fixing ``S = clip(Ā(Y))`` at a point ``Y`` and minimising over ``M`` is exactly a proximal-
gradient step (in the fixed metric ``m C2 ‖Ā(ΔM)‖²``) on ``F(M) = min_S J(M, S)`` taken at
``Y``. ``accelerated=True`` therefore extrapolates the outer iterates (FISTA, with adaptive
restart) and solves each inner problem with monotone FISTA, whose first step is the
proximal-gradient step at ``Y`` itself (its gradient is the affine combination of the last
two iterates' gradients, kept from their evaluations); ``accelerated=False`` is the paper's
alternation with plain projected gradient steps, whose objective never increases (up to the
float32 rounding of the passes over ``S`` when ``n`` exceeds one tile).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from fastmv.kernels.mvmc import masked_residual_product_serial

from .._core._driver import Step, relative_change, state_view
from .._core._preprocessing import normalize_rows, row_norms
from ..exceptions import DegenerateSolutionError
from ._lowrank import TILE, ClippedLowRank, ClippedLowRankOperator, factor_symmetric

__all__ = []  # internal: see fastmv.mvmc


# ---------------------------------------------------------------------------------------
# constraints and bases
# ---------------------------------------------------------------------------------------

def pair_csr(i, j, vals):
    """Symmetric CSR pattern of Ω over the samples that occur in it, and the position of each
    entry's mirror ``(j, i)``."""
    active = np.unique(np.concatenate([i, j]))
    a = np.searchsorted(active, i)
    b = np.searchsorted(active, j)
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    v = np.concatenate([vals, vals])
    order = np.lexsort((cols, rows))
    # the entry (b, a) of (a, b) sits P entries further in the unsorted list
    P = a.size
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    mirror = where[np.where(order < P, order + P, order - P)]
    rows, cols, v = rows[order], cols[order], v[order]
    indptr = np.zeros(active.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=active.size), out=indptr[1:])
    return active, indptr, cols.astype(np.int64), v.astype(np.float64), mirror.astype(np.int64)




def zscore_columns(X):
    """Every feature of ``X`` (already divided by its largest entry) to unit variance, dense
    features also centred; constant features become zero. A sparse view is scaled only:
    centring would densify it (the ``n × d`` array a text view must never become)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2
        spread = np.sqrt(np.maximum(var, 0.0))
        s = np.zeros_like(spread)
        np.divide(1.0, spread, out=s, where=spread > 0)
        Y = sp.csr_matrix(X @ sp.diags(s))
        Y.sort_indices()
        return Y
    X = np.asarray(X, dtype=np.float64)
    spread = X.std(axis=0)
    # a feature whose spread is rounding of its mean is constant: scaled up, the rounding
    # would become a feature of unit variance
    varies = spread > 64.0 * np.finfo(np.float64).eps * np.abs(X).max(axis=0, initial=0.0)
    s = np.zeros_like(spread)
    np.divide(1.0, spread, out=s, where=varies)
    return (X - X.mean(axis=0)) * s


def view_basis(X, k, rng, name, normalize):
    """Orthonormal basis ``Z`` (n × ``k_v``) of the top left singular subspace of one view.

    The view is first divided by its largest absolute entry and, with ``normalize="l2"``, its
    rows scaled to unit norm scale-safely (:func:`fastmv._core._preprocessing.normalize_rows`),
    with ``"zscore"`` its features centred and scaled to unit variance (:func:`zscore_columns`):
    the first leaves the left singular vectors unchanged, and all keep every square and Gram
    entry of the SVD far from overflow and underflow, so ``c · X`` gives the same basis for
    every ``c`` in 1e-300…1e300.
    """
    peak = float(row_norms(X, norm="max").max()) if X.shape[0] else 0.0
    if peak > 0:
        if sp.issparse(X):
            X = sp.csr_matrix((X.data / peak, X.indices, X.indptr), shape=X.shape)
        else:
            X = X / peak
    X = zscore_columns(X) if normalize == "zscore" else normalize_rows(X, normalize)
    kv = max(1, min(k, X.shape[1], X.shape[0] - 1))
    return _left_singular_vectors(X, kv, rng, name)


def _orthonormalise(U):
    """``U`` with orthonormal columns spanning the same nested subspaces (as ``qr``'s ``Q``
    up to column signs), for a ``U`` whose columns are orthonormal up to rounding.

    Cholesky QR (``U L⁻ᵀ`` with ``UᵀU = L Lᵀ``): two BLAS-3 passes over ``U`` instead of
    Householder's panels and the formation of ``Q``, several times faster for tall ``U``, and
    as accurate when ``UᵀU`` is close to the identity (its error grows with ``cond(U)²``);
    Householder QR when the Cholesky factorisation fails.
    """
    try:
        L = np.linalg.cholesky(U.T @ U)
    except np.linalg.LinAlgError:
        return np.linalg.qr(U)[0]
    return scipy.linalg.solve_triangular(L, U.T, lower=True, check_finite=False).T


def _left_singular_vectors(X, k, rng, name, n_oversamples=10, n_power_iter=7):
    """Top-``k`` left singular vectors of ``X`` (dense or CSR), orthonormal, sign-fixed.

    Randomized range finder with ``n_power_iter`` QR-stabilised power iterations (Halko,
    Martinsson & Tropp 2011, Alg. 4.4) when ``k + n_oversamples`` is well below
    ``min(n, d)`` and that costs fewer flops than the eigen-decomposition of the smaller Gram
    matrix (about ``10 min(n, d)³``), which is used otherwise: for a few hundred documents
    with thousands of terms (BBCSport) the Gram route is several times faster. Singular
    values that are rounding noise (below ``100 max(n, d) eps σ_max``, or ``σ² <
    100 max(n, d) eps σ_max²`` on the Gram route) are dropped (their vectors are arbitrary), so
    fewer than ``k`` columns may come back. Each column's largest-magnitude entry is made
    positive. Costs O(nnz(X) (k + p) (q + 1)) for the randomized path.
    """
    n, d = X.shape
    small = min(n, d)
    Xd = X
    # eigenvalues of a Gram matrix are accurate to about eps · λ_max: below this they are noise
    gram_tol = 1e2 * max(n, d) * np.finfo(float).eps
    ell = min(k + n_oversamples, small)
    nnz = X.nnz if sp.issparse(X) else n * d
    randomized_flops = 2 * (n_power_iter + 1) * (2 * nnz * ell + 4 * max(n, d) * ell * ell)
    if k + n_oversamples >= 0.5 * small or 10 * small ** 3 <= randomized_flops:
        if d <= n:
            C = np.asarray((X.T @ X).toarray() if sp.issparse(X) else X.T @ X)
            lam, V = np.linalg.eigh(0.5 * (C + C.T))
            lam, V = lam[::-1], V[:, ::-1]
            s = np.sqrt(np.maximum(lam, 0.0))
            r = min(k, int((lam > gram_tol * (lam[0] if lam.size else 0.0)).sum()))
            U = _orthonormalise(np.asarray(X @ V[:, :r]) / s[:r])
        else:
            C = np.asarray((X @ X.T).toarray() if sp.issparse(X) else X @ X.T)
            lam, U = np.linalg.eigh(0.5 * (C + C.T))
            lam, U = lam[::-1], U[:, ::-1]
            s = np.sqrt(np.maximum(lam, 0.0))
            r = min(k, int((lam > gram_tol * (lam[0] if lam.size else 0.0)).sum()))
            U = U[:, :r]
    else:
        Q = np.asarray(Xd @ rng.standard_normal((d, ell)))
        Q, _ = np.linalg.qr(Q)
        for _ in range(n_power_iter):
            Q, _ = np.linalg.qr(np.asarray(Xd.T @ Q))
            Q, _ = np.linalg.qr(np.asarray(Xd @ Q))
        B = np.asarray(Xd.T @ Q).T  # ell × d
        Ub, s, _ = np.linalg.svd(B, full_matrices=False)
        tol = max(n, d) * np.finfo(float).eps * (s[0] if s.size else 0.0) * 1e2
        r = min(k, int((s > tol).sum()))
        U = Q @ Ub[:, :r]
    if U.shape[1] == 0:
        raise ValueError(f"{name} has rank 0 (all entries zero after normalisation)")
    idx = np.argmax(np.abs(U), axis=0)
    U = U * np.sign(U[idx, np.arange(U.shape[1])])[None, :]
    return np.ascontiguousarray(U)


# ---------------------------------------------------------------------------------------
# the M-steps and the outer iteration
# ---------------------------------------------------------------------------------------

def _symmetric_crossproduct(Z, W):
    """``Zᵀ W`` when it is known to be symmetric (``W = R Z``, ``R`` symmetric): three of the
    four ``k/2``-blocks by BLAS, the fourth by symmetry (¾ of the flops; exactly symmetric)."""
    k = Z.shape[1]
    h = (k + 1) // 2
    G = np.empty((k, k))
    G[:h, :] = Z[:, :h].T @ W
    G[h:, h:] = Z[:, h:].T @ W[:, h:]
    G[h:, :h] = G[:h, h:].T
    G[:h, :h] = 0.5 * (G[:h, :h] + G[:h, :h].T)
    return G


def psd_projection(Y):
    """Projection of the symmetric part of ``Y`` onto the PSD cone (LAPACK ``eigh``).

    Returns ``(M, lam, V)`` with ``M = V diag(lam) Vᵀ``, ``lam > 0``: the factor lets the
    masked residual work in ``rank(M)`` dimensions (:meth:`ViewProblem.masked`).
    """
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    pos = lam > 0
    Vp = np.ascontiguousarray(V[:, pos])
    lam = lam[pos]
    M = (Vp * lam) @ Vp.T
    return 0.5 * (M + M.T), lam, Vp



#: ``step="adaptive"``: power iterations behind the first estimate of each view's curvature
#: (a lower bound; backtracking raises it where a step shows more).
_POWER_ITERATIONS = 2


class ViewProblem:
    """``f_v(M) = tr M + C1 ‖R_Ω(Z M Zᵀ − S_ob)‖² + C2 ‖Z M Zᵀ − S‖²`` for fixed ``S``,
    evaluated with ``Z`` restricted to the constrained samples."""

    def __init__(self, Z_act, pattern, C1, C2):
        self.Z = Z_act
        self.indptr, self.indices, self.values, self.mirror = pattern
        self.C1, self.C2 = C1, C2
        self.eye = np.eye(Z_act.shape[1])
        self.T = None
        self.s_sumsq = 0.0

    def masked(self, lam, V):
        """``Zᵀ R_Ω(Z M Zᵀ − S_ob) Z`` and ``‖R_Ω(Z M Zᵀ − S_ob)‖²`` for ``M = V diag(lam) Vᵀ``."""
        B = self.Z @ V
        return self._masked_product(B * lam, B)

    def _masked_product(self, A, B):
        """:meth:`masked` for the factors ``A Bᵀ = Z M Zᵀ`` (symmetric)."""
        # Always on the calling thread (the serial copy, the same result bit for bit): it runs
        # as a task beside the other views' (task_map), and a parallel launch would spin
        # against the BLAS pool around it (docs/records/mvmc.md).
        RZ, loss = masked_residual_product_serial(A, B, self.Z, self.indptr, self.indices,
                                                  self.values, self.mirror)
        return _symmetric_crossproduct(self.Z, RZ), loss

    def value(self, M, G, loss):
        """Objective and gradient at the PSD ``M`` from its masked part ``(G, loss)``
        (:meth:`masked`) and the current ``T``."""
        T = self.T
        f = (np.trace(M) + self.C1 * loss
             + self.C2 * (np.vdot(M, M) - 2.0 * np.vdot(M, T) + self.s_sumsq))
        g = self.eye + 2.0 * self.C1 * G + 2.0 * self.C2 * (M - T)
        if not (np.isfinite(f) and np.isfinite(g).all()):
            raise DegenerateSolutionError(
                f"the MVMC objective or its gradient is not finite (objective {f}): it cannot "
                f"be represented in float64 with C1={self.C1:g}, C2={self.C2:g}; use smaller "
                "weights")
        return float(f), g

    def evaluate(self, point):
        """``_Eval`` at ``point = (M, lam, V)`` (a PSD matrix and its factor)."""
        G, loss = self.masked(point[1], point[2])
        f, g = self.value(point[0], G, loss)
        return _Eval(point, f, g, G, loss)

    def curvature(self, start, n_iter):
        """Estimate of the largest eigenvalue of ``M ↦ Zᵀ R_Ω(Z M Zᵀ) Z`` (the constraint
        term's Hessian over ``2 C1``) by ``n_iter`` power iterations from the symmetric
        ``start``: a Rayleigh quotient, so never above it."""
        values, self.values = self.values, np.zeros_like(self.values)
        try:
            # the iterates are symmetric, so Z M Zᵀ = (Z M) Zᵀ needs no eigendecomposition
            M = 0.5 * (start + start.T)
            est = 0.0
            for _ in range(n_iter):
                scale = np.linalg.norm(M)
                if scale == 0:
                    break
                M = M / scale
                G, _ = self._masked_product(self.Z @ M, self.Z)
                est = float(np.vdot(G, M))
                M = 0.5 * (G + G.T)
        finally:
            self.values = values
        return est

    def solve(self, start, L, n_steps, accelerated, L_max=np.inf, y=None):
        """``n_steps`` projected-gradient (or monotone FISTA) steps.

        ``start`` is the PSD point as an ``_Eval`` (its masked part may be from an earlier
        ``S``: :meth:`value` refreshes the rest); FISTA's first step is taken from ``y =
        (Y, G)`` when given (an extrapolated, possibly indefinite ``Y`` and its masked
        gradient, which is affine in ``Y``), else from ``start``. Returns the last iterate
        (an ``_Eval``) and the step constant ``L`` after backtracking.

        ``f`` is quadratic and its gradient affine, so ``⟨∇f(z) − ∇f(y), z − y⟩`` is the exact
        curvature along a step: when it exceeds ``L ‖z − y‖²`` the step was too long, ``L``
        grows (never beyond ``L_max``, a global bound) and the step is taken again.
        """
        f, g = self.value(start.point[0], start.G, start.loss)
        x = start._replace(f=f, g=g)
        if not accelerated:
            for _ in range(n_steps):
                x, L = self._step(x.point[0], x.g, L, L_max)
            return x, L
        if y is None:
            yM, gy = x.point[0], x.g
        else:
            yM = y[0]
            gy = self.eye + 2.0 * self.C1 * y[1] + 2.0 * self.C2 * (yM - self.T)
        t = 1.0
        for _ in range(n_steps):
            z, L = self._step(yM, gy, L, L_max)
            xn = z if z.f <= x.f else x
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            a, b = t / tn, (t - 1.0) / tn
            # the gradient is affine in M, so it follows the same affine combination
            yM = xn.point[0] + a * (z.point[0] - xn.point[0]) + b * (xn.point[0] - x.point[0])
            gy = xn.g + a * (z.g - xn.g) + b * (xn.g - x.g)
            x, t = xn, tn
        return x, L

    def _step(self, yM, gy, L, L_max):
        """One projected-gradient step from ``yM`` with backtracking on ``L``."""
        while True:
            z = self.evaluate(psd_projection(yM - gy / L))
            L, ok = _check_curvature(L, L_max, z.point[0] - yM, z.g - gy)
            if ok:
                return z, L


class _Eval(NamedTuple):
    """A PSD iterate ``(M, lam, V)`` with its objective, gradient and masked part."""

    point: tuple
    f: float
    g: np.ndarray
    G: np.ndarray  # Zᵀ R_Ω(Z M Zᵀ − S_ob) Z: affine in M
    loss: float


def _check_curvature(L, L_max, d, dg):
    """``(L, ok)``: whether the step ``d`` (gradient change ``dg``) satisfied the descent
    lemma with ``L``; if not, the larger ``L`` to retry with."""
    dd = float(np.vdot(d, d))
    curv = float(np.vdot(dg, d))
    if curv <= L * dd * (1.0 + 1e-9) or L >= L_max:
        return L, True
    return min(L_max, max(2.0 * L, curv / dd)), False


def _scaled_start(point, G, loss, at_zero, C1):
    """The start ``α M₀`` (an ``_Eval``) with the ``α > 0`` that minimises
    ``tr(α M₀) + C1 ‖R_Ω(α Z M₀ Zᵀ − S_ob)‖²``, from the masked parts at ``M₀`` and at ``0``.

    The paper's ``M₀ = Z_vᵀ S_ob Z_v`` has the right shape but not the right scale: it is the
    constraint term's gradient, whose entries grow with the number of pairs, not a fit of
    them (on the shared data ``α`` is 10–200), and the first outer iterations were spent
    growing it. With ``P = R_Ω(Z M₀ Zᵀ)`` and ``s = S_ob`` on ``Ω`` the term is quadratic in
    ``α``, and its coefficients are free: ``⟨G(M₀), M₀⟩ = ‖P‖² − ⟨P, s⟩`` and
    ``loss(M₀) − loss(0) = ‖P‖² − 2 ⟨P, s⟩``; the masked part is affine in ``M``, so the
    scaled point's is too (no new evaluation). The start does not change the optimum.
    """
    G0, loss0 = at_zero
    M, lam, V = point
    a = float(np.vdot(G, M))
    ps = a - (loss - loss0)
    pp = a + ps
    alpha = (2.0 * C1 * ps - float(np.trace(M))) / (2.0 * C1 * pp) if pp > 0 else 1.0
    if not (np.isfinite(alpha) and alpha > 0):
        alpha = 1.0
    return _Eval((alpha * M, alpha * lam, V), np.nan, None, alpha * (G - G0) + G0,
                 alpha * alpha * pp - 2.0 * alpha * ps + loss0)


def _stopping_residual(previous, current, restarted):
    """The driver's stopping quantity: the objective's relative change, or ``inf`` (no
    stop) on the first iteration and on an iteration whose extrapolation is restarted.

    A restart means the momentum overshot: the step's objective barely moved (or rose)
    *because* the extrapolated point was poor, not because the iterates settled, so its small
    change is no evidence of convergence (docs/records/mvmc.md, "Stopping rule"). The next iteration
    is a plain proximal-gradient step, whose change is.
    """
    if previous is None or restarted:
        return np.inf
    return relative_change(previous, current)


class Problem:
    """The outer iteration of MVMC for :func:`fastmv._core._driver.iterate`.

    Parameters
    ----------
    Z_list : list of ndarray, shape (n, k_v)
        The view bases (:func:`view_basis`).
    pairs : tuple of ndarray
        ``(i, j, s)``: the constrained pairs ``i < j`` and their observed similarity.
    C1, C2 : float
        Weights of the constraint misfit and of the view disagreement.
    inner_iter : int
        Gradient steps on every ``M_v`` per outer iteration.
    accelerated : bool
        Outer FISTA with adaptive restart and monotone inner FISTA (else the paper's plain
        alternation).
    step : {"tight", "paper"}
        Lipschitz constant ``2(C1 + C2)`` or the paper's ``2(C1 k_v² + C2)``.
    map_ : callable
        ``map`` or a task map (:func:`fastmv._core._threads.task_map`): the row blocks of the pass
        over ``S`` and the views' M-steps are independent tasks, reduced in a fixed order.
    blocks : fastmv._core._executor.BlockMap, optional
        Runs the row blocks of the passes over ``S`` on an executor instead (the stacked
        bases ``U`` are sent once, the factors of ``Ā`` once per outer iteration); the views'
        M-steps stay on ``map_``.
    """

    def __init__(self, Z_list, pairs, C1, C2, inner_iter, accelerated, step, map_=map,
                 blocks=None):
        self.Z = Z_list
        self.m = len(Z_list)
        self.C1, self.C2 = C1, C2
        self.inner_iter = inner_iter
        self.accelerated = accelerated
        self.map_ = map_
        ks = [Z.shape[1] for Z in Z_list]
        self.offsets = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
        self.U = np.hstack(Z_list)
        # Once S spans several tiles the pass over it dominates an outer iteration, and it
        # runs in float32: T_v = Z_vᵀ S Z_v is needed to far fewer digits than the stopping
        # rule resolves, and float32 GEMMs take half the time (docs/records/mvmc.md, "Time to
        # solution"). One tile costs little either way and stays float64.
        self.U_pass = self.U.astype(np.float32) if self.U.shape[0] > TILE else self.U
        self.blocks = blocks
        if blocks is not None:
            blocks.keep(self.U_pass)
        self.G = self.U.T @ self.U  # Gram blocks Z_vᵀ Z_w
        active, *pattern = pair_csr(*pairs)
        self.views = [ViewProblem(np.ascontiguousarray(Z[active]), pattern, C1, C2)
                      for Z in Z_list]
        self.L_max = [2.0 * (C1 + C2) if step != "paper" else 2.0 * (C1 * kv * kv + C2)
                      for kv in ks]
        self.L = list(self.L_max)
        if not np.isfinite(self.L).all():
            raise DegenerateSolutionError(
                f"the step size of MVMC is not representable in float64 with C1={C1:g}, "
                f"C2={C2:g}; use smaller weights")
        # the paper's start M_v = Z_vᵀ S_ob Z_v, projected onto the PSD cone so that every
        # iterate is feasible, and scaled to fit the constrained pairs; R_Ω(0 − S_ob) = −S_ob
        # on Ω
        zero = [view.masked(np.zeros(0), np.zeros((kv, 0))) for view, kv in zip(self.views, ks)]
        starts = [-G0 for G0, _ in zero]
        if step == "adaptive":
            for v, (view, G) in enumerate(zip(self.views, starts)):
                lam_est = view.curvature(0.5 * (G + G.T), _POWER_ITERATIONS)
                self.L[v] = min(self.L_max[v], 2.0 * (C1 * lam_est + C2))
        self.points = []
        for view, G, at_zero in zip(self.views, starts, zero):
            point = psd_projection(G)
            self.points.append(_scaled_start(point, *view.masked(point[1], point[2]), at_zero,
                                             C1))
        self.M = [pt.point[0] for pt in self.points]
        self.M_prev = self.M
        self.points_prev = self.points
        self.t = 1.0
        self.last = None
        self.iteration = 0

    def _fit_similarity(self, Y):
        """``S = clip(Ā(Y))``: hand every view ``Z_vᵀ S Z_v`` and ``‖S‖²``; returns
        ``(rank of Ā, nnz of the clipping correction)``."""
        m, offsets, G = self.m, self.offsets, self.G

        def factor_view(v):
            lam, V = factor_symmetric(Y[v])
            return lam, V, self.Z[v] @ V

        facs = list(self.map_(factor_view, range(m)))
        F = np.hstack([ZV for _, _, ZV in facs])
        w = np.concatenate([lam / m for lam, _, _ in facs])
        core = ClippedLowRank(F, w)
        TN, s_sumsq, clip_nnz = core.projected_correction(self.U_pass, offsets,
                                                           self.blocks or self.map_)
        Yt = [(V * lam) @ V.T for lam, V, _ in facs]
        for v, view in enumerate(self.views):
            sv = slice(offsets[v], offsets[v + 1])
            T = TN[v]
            for u in range(m):
                su = slice(offsets[u], offsets[u + 1])
                T += G[sv, su] @ Yt[u] @ G[su, sv] / m
            view.T = 0.5 * (T + T.T)
            view.s_sumsq = s_sumsq
        return core.rank, clip_nnz

    def step(self):
        """One outer iteration: ``S`` at the (extrapolated) point, then the M-steps."""
        self.iteration += 1
        M = self.M
        beta = 0.0
        if self.accelerated and self.iteration > 1:
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * self.t * self.t))
            beta = (self.t - 1.0) / tn
            self.t = tn
            Y = [a + beta * (a - b) for a, b in zip(M, self.M_prev)]
        else:
            Y = M
        rank, clip_nnz = self._fit_similarity(Y)

        def solve_view(v):
            y = None
            if Y is not M:
                G = (1.0 + beta) * self.points[v].G - beta * self.points_prev[v].G
                y = (Y[v], G)
            return self.views[v].solve(self.points[v], self.L[v], self.inner_iter,
                                       self.accelerated, self.L_max[v], y)

        solved = list(self.map_(solve_view, range(self.m)))  # independent given S
        self.points_prev = self.points
        self.points = [pt for pt, _ in solved]
        self.L = [L for _, L in solved]
        J = float(sum(pt.f for pt in self.points))
        if not np.isfinite(J):
            raise DegenerateSolutionError(
                f"the MVMC objective became {J} at iteration {self.iteration}: it cannot be "
                f"represented in float64 with C1={self.C1:g}, C2={self.C2:g}; use smaller "
                "weights")
        M_new = [pt.point[0] for pt in self.points]
        restarted = False
        if self.accelerated and self.last is not None:
            # adaptive restart (O'Donoghue & Candès): momentum against the step, or a rise
            ip = sum(np.vdot(y - a, a - b) for y, a, b in zip(Y, M_new, M))
            restarted = bool(ip > 0 or J > self.last)
            if restarted:
                self.t = 1.0
        residual = _stopping_residual(self.last, J, restarted)
        self.M_prev, self.M = M, M_new
        self.last = J
        return Step(objective=J, residual=residual,
                    state=state_view(M=M_new, objective=J, clip_nnz=clip_nnz, rank=rank,
                                     restarted=restarted))

    def similarity(self):
        """``S`` at the current ``M`` as a :class:`~fastmv._mvmc._lowrank.ClippedLowRankOperator`.
        """
        op = ClippedLowRankOperator.from_views(self.Z, self.M)
        return op if self.blocks is None else op._use_block_map(self.blocks)
