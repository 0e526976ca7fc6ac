"""The ``W, b`` step of MVFL: the reweighted ridge systems (docs/algorithms.md §2).

Each column ``k`` of ``W`` solves ``(X̃ᵀX̃ + D_k) w_k = X̃ᵀ f̃_k`` with ``X̃`` the column-centred
data, ``f̃_k`` the centred column of ``F`` and ``D_k = λ1 P_k + λ2 Q`` the IRLS diagonal; then
``b = mean(F) − μᵀW``. Two exact routes:

- ``"direct"`` (``d <= n``): ``G = X̃ᵀX̃`` is formed once and ``G + diag(D_k)`` is factorised by
  Cholesky per column (once when ``λ1 = 0``: every column then shares the diagonal); the
  ``c`` solves of a right-hand side run in one call of the kernel ``cholesky_solve``, or of
  LAPACK ``potrs`` when one factor serves every column.
  Conjugate gradients were slower here: the small ridge leaves the systems badly conditioned.
- ``"woodbury"`` (``d > n``, text views): ``(D + X̃ᵀX̃)⁻¹X̃ᵀ = D⁻¹X̃ᵀ(I + X̃D⁻¹X̃ᵀ)⁻¹`` turns each
  column into an ``n × n`` system and no ``d × d`` matrix is formed. For CSR ``X`` the kernel
  ``sparse_weighted_gram`` forms every ``X D_k⁻¹ Xᵀ`` in one pass over the sparsity pattern;
  double centring ``J K J`` then equals ``X̃ D_k⁻¹ X̃ᵀ`` and ``X̃ᵀα = Xᵀα`` because ``1ᵀα = 0``,
  so ``X − 1μᵀ`` is never formed.

The joint ``F`` step (``f_step="monotone"``) factorises one system per reweighting, whatever
``c``: :meth:`WStep.factor_common` majorises ``Σ_k w_kᵀ D_k w_k`` by the common diagonal
``D̂ = max_k D_k`` plus a linear correction, a bound that touches at the current ``W`` (so every
step still lowers the objective) and whose minimiser at a fixed point solves the per-class
systems (so the fixed points are the same). The per-class systems below serve
``f_step="paper"`` and :meth:`WStep.solve`.

Forming the ``c`` Woodbury matrices costs ``c n² d`` and dominates a solve with many classes.
They share structure: on the features of view ``v`` the weights are ``D_k⁻¹[i] = 1/(λ2 q_i +
λ1 p_kv)``, a Cauchy-like ``d_v × c`` matrix whose numerical rank ``r_v`` is small (a handful,
whatever ``c``). :func:`shared_grams` compresses each view's block by a truncated SVD
(singular values below ``_SHARED_RTOL`` of the largest are dropped: rounding level), forms one
``n × n`` Gram per kept singular vector (``Σ_v r_v n² d_v``) and each class's matrix as a
combination of those (one GEMM, ``c n² Σ_v r_v``): the cost follows the ranks, not ``c``.
It is used when the cost model says it is cheaper (:func:`shared_plan`); for dense views
:func:`shared_grams_lower` builds only the lower triangles, row block by row block.

The reweighted objective majorises the ε-smoothed one (``sqrt`` is concave). With its
factors fixed, :meth:`WStep.apply_m` gives the fit with ``W`` eliminated,
``min_{W,b} ‖XW + 1bᵀ − F‖² + Σ_k w_kᵀ D_k w_k = Σ_k f̃_kᵀ M_k f̃_k``, which the joint ``F``
step descends before :meth:`WStep.weights` recovers ``W, b``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastmv.kernels.mvfl import centre_woodbury_lower, cholesky_solve, sparse_weighted_gram

__all__ = ["WStep", "choose_route", "compress_weights", "shared_plan", "shared_grams",
           "shared_grams_lower"]

# On the Woodbury route a dense X with fewer nonzeros than this fraction is handled as CSR.
SPARSE_DENSITY = 0.1
# Shared Woodbury Grams: singular values of a view's weight block below this fraction of its
# largest are dropped (the perturbation of each system is then at the rounding level of its
# Cholesky solve); the compressed form is taken when its modelled cost is below this fraction
# of the per-class one, and its Grams are combined in batches of at most this many bytes.
_SHARED_RTOL = 1e-12
_SHARED_GAIN = 0.7
_SHARED_BATCH_BYTES = 1 << 27
# Dense views: the row blocks of shared_grams_lower have at most this many rows (thin blocks
# waste little beyond the lower triangle) and their trapezoids of all kept Grams fit in this
# many bytes (a buffer reused by every block).
_GRAM_ROWS = 64
_GRAM_BLOCK_BYTES = 1 << 24


def compress_weights(Dinv, view_ptr):
    """Per view ``(lo, hi, basis, coef)`` with ``Dinv[:, lo:hi] ≈ coef @ basis``: the
    truncated SVD of the view's block (``basis``: ``r_v × d_v``, ``coef``: ``p × r_v``),
    singular values below ``_SHARED_RTOL`` of the largest dropped."""
    plan = []
    for lo, hi in zip(view_ptr[:-1], view_ptr[1:]):
        if hi == lo or Dinv.shape[0] == 0:
            continue
        U, s, Vt = np.linalg.svd(Dinv[:, lo:hi], full_matrices=False)
        r = int(np.count_nonzero(s > _SHARED_RTOL * s[0])) if s[0] > 0 else 0
        plan.append((int(lo), int(hi), s[:r, None] * Vt[:r], U[:, :r]))
    return plan


def shared_plan(Dinv, view_ptr, n):
    """:func:`compress_weights` of ``Dinv`` (``p × d``), or ``None`` when per-class Grams
    are cheaper. Cost model in units of ``n²`` flops: per class ``p d``; shared
    ``Σ_v r_v d_v`` for the Grams plus ``2 p Σ_v r_v`` for their combination."""
    p, d = Dinv.shape
    if p < 2 or view_ptr is None:
        return None
    plan = compress_weights(Dinv, view_ptr)
    grams = sum(b.shape[0] * (hi - lo) for lo, hi, b, _ in plan)
    terms = sum(b.shape[0] for _, _, b, _ in plan)
    if grams + 2 * p * terms >= _SHARED_GAIN * p * d:
        return None
    return plan


def shared_grams_lower(plan, p, Y, n, out=None):
    """``(p, n, n)`` whose lower triangles (diagonal included) hold ``Σ_v Y_v diag(D_k⁻¹ on
    view v) Y_vᵀ`` for every class ``k``, from the compressed ``plan`` (:func:`shared_plan`)
    and the dense views ``Y`` (a list, ``Y[j]`` of shape ``(n, hi − lo)``, C order, the
    columns of ``plan[j]``). The strict upper triangles are not written (the Cholesky
    factorisation and solves read only the lower ones).

    Row block by row block ``[i0, i1)``, each kept singular vector ``u`` of a view gives the
    trapezoid ``(Y_v[i0:i1] ⊙ u) Y_v[:i1]ᵀ`` of its Gram, written into one buffer reused by
    every block (at most ``_GRAM_BLOCK_BYTES``), and the block of every class's matrix is one
    product of the ``p × Σ_v r_v`` coefficients with it. Against full Grams stacked and then
    combined this halves the combination's memory traffic, copies nothing and holds
    ``O(Σ_v r_v · block)`` instead of ``O(Σ_v r_v n²)``; the flops, ``~Σ_v r_v n² d_v``, are
    those of symmetric products. ``out``: a ``(p, n, n)`` array of the dtype to write into.
    """
    dtype = Y[0].dtype if len(Y) else np.float64
    out = _buffer(out, (p, n, n), dtype)
    R = sum(b.shape[0] for _, _, b, _ in plan)
    if R == 0 or n == 0:
        out[...] = 0.0
        return out
    C = np.concatenate([coef for _, _, _, coef in plan], axis=1).astype(dtype)
    views = [v for v, (_, _, b, _) in enumerate(plan) for _ in range(b.shape[0])]
    U = [u for _, _, b, _ in plan for u in b.astype(dtype)]
    rows = int(min(n, _GRAM_ROWS, max(1, _GRAM_BLOCK_BYTES // (R * n * np.dtype(dtype).itemsize))))
    buf = np.empty(R * rows * n, dtype)
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        H = buf[:R * (i1 - i0) * i1].reshape(R, i1 - i0, i1)
        for j, (v, u) in enumerate(zip(views, U)):
            Yv = Y[v]
            np.matmul(Yv[i0:i1] * u, Yv[:i1].T, out=H[j])
        block = (C @ H.reshape(R, -1)).reshape(p, i1 - i0, i1)
        _check_finite(block)
        out[:, i0:i1, :i1] = block
    return out


def shared_grams(plan, p, n, gram_of_view, dtype=np.float64, out=None):
    """``(p, n, n)``: ``Σ_v Y_v diag(D_k⁻¹ on view v) Y_vᵀ`` for every class ``k`` from the
    compressed ``plan`` (:func:`shared_plan`). ``gram_of_view(v, basis)`` returns the
    ``(r_v, n, n)`` Grams ``Y_v diag(basis[j]) Y_vᵀ`` of view ``v``. The Grams of all views
    are combined by one product (several when they exceed ``_SHARED_BATCH_BYTES``).
    ``out``: a ``(p, n, n)`` array of ``dtype`` to write into."""
    out = _buffer(out, (p, n, n), dtype).reshape(p, n * n)
    if not any(basis.shape[0] for _, _, basis, _ in plan):
        out[...] = 0.0  # no Gram to combine (else the first product overwrites out)
    batch = max(1, _SHARED_BATCH_BYTES // max(n * n * np.dtype(dtype).itemsize, 1))
    grams, coefs, held, first = [], [], 0, True

    def flush():
        H = np.concatenate(grams).reshape(-1, n * n)
        C = np.concatenate(coefs, axis=1).astype(dtype)
        if first:
            np.matmul(C, H, out=out)
        else:
            out[...] += C @ H
        grams.clear()
        coefs.clear()

    for v, (_, _, basis, coef) in enumerate(plan):
        for start in range(0, basis.shape[0], batch):
            if held + min(batch, basis.shape[0] - start) > batch and grams:
                flush()
                first, held = False, 0
            grams.append(np.asarray(gram_of_view(v, basis[start:start + batch]), dtype))
            coefs.append(coef[:, start:start + batch])
            held += grams[-1].shape[0]
    if grams:
        flush()
    return out.reshape(p, n, n)


def choose_route(X, solver):
    """``(route, X_for_the_route)``: ``"auto"`` takes Woodbury when ``d > n``; a dense ``X``
    with under ``SPARSE_DENSITY`` nonzeros goes to the Woodbury route as CSR (text stored
    densely: the sparse Gram kernel is far cheaper)."""
    n, d = X.shape
    route = solver if solver != "auto" else ("woodbury" if d > n else "direct")
    if route == "woodbury" and not sp.issparse(X) and \
            np.count_nonzero(X) < SPARSE_DENSITY * X.size:
        return route, sp.csr_matrix(X)
    return route, X


def _buffer(spare, shape, dtype=np.float64):
    """``spare`` when it has this shape and dtype, else a new array. The factors of one
    reweighting are tens of megabytes with many classes; beyond the allocator's mapping
    threshold a fresh array is mapped and faulted in anew on every call, a cost of the order
    of the factorisations themselves (docs/records/mvfl-speed.md)."""
    if spare is not None and spare.shape == shape and spare.dtype == dtype:
        return spare
    return np.empty(shape, dtype)


def _check_finite(A):
    if not np.isfinite(A).all():
        _overflow()


def _overflow():
    raise FloatingPointError(
        "mvfl: the W step's Gram matrix overflowed (data of magnitude beyond ~1e150 "
        "without normalisation); use normalize='auto', 'zscore' or 'l2', or rescale the views")


def _cholesky_lower(A):
    """Cholesky factor of the symmetric, C-ordered ``A`` in place: its lower triangle becomes
    ``L`` with ``A = L Lᵀ`` (LAPACK ``potrf`` on the Fortran view ``Aᵀ``, upper; the strict
    upper triangle keeps ``A``'s entries)."""
    potrf = sla.get_lapack_funcs("potrf", (A,))
    U, info = potrf(A.T, lower=False, overwrite_a=True, clean=False)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:
        raise ValueError(f"mvfl: LAPACK potrf failed (info={info})")
    if not np.shares_memory(U, A):  # a LAPACK wrapper that copied: take its result
        A[...] = U.T


def _solve_factored(L, R):
    """``S[:, k] = (L_k L_kᵀ)⁻¹ R[:, k]`` for factors ``L`` of :meth:`WStep.factor` (``(p, s,
    s)``, lower triangles). One factor for every column (the common bound, shared diagonals):
    LAPACK ``potrs``, all right-hand sides in one BLAS-3 pass over the factor (on one thread
    1.6–3.4× the per-column kernel for ``s`` from 324 to 2000 and 10–27 columns); one factor
    per column: the kernel :func:`~fastmv.kernels.mvfl.cholesky_solve`."""
    if L.shape[0] != 1 or L.dtype != np.float64:
        return cholesky_solve(L, R)
    potrs = sla.get_lapack_funcs("potrs", (L,))
    S, info = potrs(L[0].T, np.asarray(R, np.float64), lower=False)  # Fortran Lᵀ: upper U
    if info != 0:
        raise ValueError(f"mvfl: LAPACK potrs failed (info={info})")
    return S


class Factors(NamedTuple):
    """Factorised systems of one IRLS reweighting (:meth:`WStep.factor`,
    :meth:`WStep.factor_common`)."""

    L: np.ndarray  # (p, s, s): lower triangles hold the Cholesky factors
    dinv: np.ndarray | None  # Woodbury route: (p, d) inverse diagonals
    # the common majoriser (:meth:`WStep.factor_common`), else None / 0:
    lift: np.ndarray | None = None  # (d, c): g_k = (D̂ − D_k) w_k at the weights' W
    shift: np.ndarray | None = None  # Woodbury route, (n, c): h_k = X̃ D̂⁻¹ g_k
    offset: float = 0.0  # Σ_k w_kᵀ(D̂ − D_k)w_k (− g_kᵀ D̂⁻¹ g_k on the Woodbury route)


class WStep:
    """Solves the reweighted ridge systems of the ``W, b`` step for a fixed ``X``.

    ``route="direct"`` forms ``G = X̃ᵀX̃`` (``d × d``) once, then factorises ``G + diag(D_k)``
    per column (once when all columns share the diagonal). ``route="woodbury"`` solves
    ``n × n`` systems ``I + X̃ D_k⁻¹ X̃ᵀ`` per column and never forms a ``d × d`` matrix.
    """

    def __init__(self, X, route, view_ptr=None):
        self.X = X
        self.view_ptr = view_ptr
        self.n, self.d = X.shape
        self.sparse = sp.issparse(X)
        self.mu = np.asarray(X.mean(axis=0)).ravel()
        self.route = route
        self.G = None
        if route == "woodbury" and self.sparse:
            XT = X.T.tocsr()
            XT.sort_indices()
            self.csr = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
            self.csr_t = (XT.indptr.astype(np.int64), XT.indices.astype(np.int64), XT.data)
            self._view_csr = {}  # per-view CSR triples, built when the shared form is used
        if route == "woodbury" and not self.sparse:
            self.Xc = X - self.mu  # explicit centring of dense X: no cancellation in K
        if route == "direct":
            if self.sparse:
                G = (X.T @ X).toarray()
                G -= self.n * np.outer(self.mu, self.mu)
            else:
                Xc = X - self.mu
                G = Xc.T @ Xc
            self.G = G

    def solve(self, F, D, shared):
        """``W`` (``d × c``) and ``b`` (``c``) for indicator ``F`` and diagonals ``D`` (``c × d``).

        ``shared``: all rows of ``D`` are equal (``λ1 = 0``), so one factorisation serves
        every column.
        """
        return self.weights(self.factor(D, shared), F)

    def factor(self, D, shared, spare=None):
        """Cholesky factors of the ``c`` systems for diagonals ``D`` (one when ``shared``).

        Returns :class:`Factors`: ``L`` of shape ``(p, s, s)`` (``p = 1`` when shared, else
        ``c``; ``s = d`` on the direct route, ``n`` on the Woodbury one) whose lower triangles
        are the factors, for :func:`~fastmv.kernels.mvfl.cholesky_solve`, and
        on the Woodbury route the ``D_k⁻¹`` (``p × d``). ``spare``: earlier :class:`Factors`
        that nothing reads any more; their ``L`` is overwritten when its shape fits (not by
        the per-class Grams of sparse views, which their kernel forms in new memory).
        """
        rows = D[:1] if shared else D
        spare = None if spare is None else spare.L
        if self.route == "direct":
            _check_finite(self.G)
            L = _buffer(spare, (len(rows), self.d, self.d))
            for j, dk in enumerate(rows):
                A = L[j]
                A[...] = self.G
                A[np.diag_indices_from(A)] += dk
                _cholesky_lower(A)
            return Factors(L, None)
        Dinv = 1.0 / rows
        plan = shared_plan(Dinv, self.view_ptr, self.n)
        if plan is not None and not self.sparse:  # X̃ D_k⁻¹ X̃ᵀ from shared per-view Grams
            L = shared_grams_lower(plan, len(rows), self._dense_views(plan), self.n, spare)
            for K in L:  # lower triangles only: checked finite block by block
                K[np.diag_indices_from(K)] += 1.0
                _cholesky_lower(K)
            return Factors(L, Dinv)
        if plan is not None:  # sparse: the uncentred X D_k⁻¹ Xᵀ, centred below
            L = shared_grams(plan, len(rows), self.n, self._view_grams, out=spare)
        elif self.sparse:
            L = sparse_weighted_gram(*self.csr, *self.csr_t, Dinv)  # uncentred X D⁻¹ Xᵀ
        else:
            L = _buffer(spare, (len(rows), self.n, self.n))
        for j, dinv in enumerate(Dinv):
            self._kernel(None if plan is not None else dinv, L[j], centre=self.sparse)
            _cholesky_lower(L[j])
        return Factors(L, Dinv)

    def factor_common(self, D, W, spare=None):
        """Factors of the common majoriser at ``W``: one system for every class.

        With ``D̂ = max_k D_k`` (entrywise) and ``B_k = D̂ − D_k ≥ 0``,
        ``w_kᵀ D_k w_k <= w_kᵀ D̂ w_k − 2 w_kᵀ B_k w⁰_k + w⁰_kᵀ B_k w⁰_k`` for every ``w_k``, with
        equality at ``w_k = w⁰_k`` (the columns of ``W``): the difference is ``(w_k −
        w⁰_k)ᵀ B_k (w_k − w⁰_k)``. The ``W`` step then solves ``(X̃ᵀX̃ + D̂) w_k = X̃ᵀ f̃_k +
        g_k``, ``g_k = B_k w⁰_k``: one matrix for all ``c`` columns. The bound majorises the
        reweighted objective and touches it at ``W``, so every step still lowers the
        objective, and at a fixed point (``w_k = w⁰_k``) the equation is ``(X̃ᵀX̃ + D_k) w_k =
        X̃ᵀ f̃_k``: the fixed points are those of the per-class systems.
        """
        Dhat = D.max(axis=0)
        base = self.factor(Dhat[None], True, spare)
        B = Dhat - D  # (c, d), >= 0
        lift = (B * W.T).T  # (d, c): g_k = B_k w⁰_k
        offset = float(np.vdot(W.T, B * W.T))
        if self.route == "direct":
            return base._replace(lift=lift, offset=offset)
        dinv = base.dinv[0]
        scaled = lift * dinv[:, None]  # D̂⁻¹ g_k
        shift = np.asarray(self.X @ scaled) - self.mu @ scaled  # X̃ D̂⁻¹ g_k
        offset -= float(np.vdot(lift, scaled))
        return base._replace(lift=lift, shift=shift, offset=offset)

    def _dense_views(self, plan):
        """The centred views ``X̃[:, lo:hi]`` of the ``plan``'s entries as C-ordered arrays
        (each built once), for :func:`shared_grams_lower`."""
        cache = self.__dict__.setdefault("_views_c", {})
        for lo, hi, _, _ in plan:
            if (lo, hi) not in cache:
                cache[lo, hi] = np.ascontiguousarray(self.Xc[:, lo:hi])
        return [cache[lo, hi] for lo, hi, _, _ in plan]

    def _view_grams(self, v, basis):
        """``(r, n, n)`` Grams ``X_v diag(basis[j]) X_vᵀ`` of the sparse, uncentred view
        ``v`` for :func:`shared_grams`."""
        lo, hi = self.view_ptr[v], self.view_ptr[v + 1]
        if v not in self._view_csr:
            Xv = self.X[:, lo:hi].tocsr()
            Xv.sort_indices()
            XvT = Xv.T.tocsr()
            XvT.sort_indices()
            self._view_csr[v] = tuple(a for M in (Xv, XvT) for a in
                                      (M.indptr.astype(np.int64), M.indices.astype(np.int64),
                                       M.data))
        return sparse_weighted_gram(*self._view_csr[v], np.ascontiguousarray(basis))

    def weights(self, factors, F, solved=None):
        """``W, b`` minimising the reweighted ridge objective at ``F`` (factors of
        :meth:`factor`). ``solved``: :meth:`solved` of the centred ``F`` at these factors,
        when the joint ``F`` step has it already (the same arrays, so the same bits)."""
        c = F.shape[1]
        fbar = F.mean(axis=0)
        if solved is None:
            solved = self.solved(factors, F - fbar)
        if self.route == "direct":
            W = solved  # (X̃ᵀX̃ + D_k)⁻¹ X̃ᵀ f̃_k
        elif factors.lift is not None:  # D̂⁻¹ (X̃ᵀ α_k + g_k)
            Xt = self.X if self.sparse else self.Xc
            W = (np.asarray(Xt.T @ solved) + factors.lift) * factors.dinv[0][:, None]
        else:
            W = np.empty((self.d, c))
            Xt = self.X if self.sparse else self.Xc
            for k in range(c):
                dinv = factors.dinv[k if len(factors.dinv) > 1 else 0]
                W[:, k] = np.asarray(Xt.T @ solved[:, k]) * dinv  # 1ᵀα = 0: X̃ᵀα = Xᵀα
        return W, fbar - self.mu @ W

    def solved(self, factors, Fc):
        """The solves behind :meth:`apply_m` for centred ``Fc``: ``(X̃ᵀX̃ + D_k)⁻¹ X̃ᵀ f̃_k``
        per column on the direct route (the columns of ``W``), ``(I + X̃ D_k⁻¹ X̃ᵀ)⁻¹ f̃_k``
        (``= M_k f̃_k``) on the Woodbury route."""
        return self.fit(factors, Fc)[1]

    def fit(self, factors, Fc):
        """``(Σ_k f̃_kᵀ M_k f̃_k, solved)`` for centred ``Fc``: the W-eliminated fit and
        :meth:`solved`. On the direct route the fit is ``‖f̃‖² − (X̃ᵀf̃)ᵀ(X̃ᵀX̃ + D)⁻¹X̃ᵀf̃``,
        so a trial point of the ``F`` step costs one ``n × d × c`` product, not two
        (:meth:`apply_m`'s second one is only needed for a gradient)."""
        if self.route == "direct":
            R = np.asarray(self.X.T @ Fc)  # X̃ᵀ f̃ = Xᵀ f̃ since f̃ is centred
            if factors.lift is not None:
                R += factors.lift
            S = _solve_factored(factors.L, R)
            return float(np.vdot(Fc, Fc)) - float(np.vdot(R, S)) + factors.offset, S
        U = Fc if factors.shift is None else Fc - factors.shift
        out = _solve_factored(factors.L, U)
        return float(np.vdot(U, out)) + factors.offset, out

    def apply_m(self, factors, Fc, solved=None):
        """``M_k f̃_k`` per column for centred ``Fc``, ``M_k = I − X̃(X̃ᵀX̃ + D_k)⁻¹X̃ᵀ
        = (I + X̃ D_k⁻¹ X̃ᵀ)⁻¹``: ``min_W`` of the reweighted ridge objective at ``F`` is
        ``Σ_k f̃_kᵀ M_k f̃_k`` (the W-eliminated fit of the joint ``F`` step). ``solved``:
        :meth:`solved` of ``Fc``, if already at hand."""
        if solved is None:
            solved = self.solved(factors, Fc)
        if self.route == "direct":
            R = solved
            return Fc - (np.asarray(self.X @ R) - self.mu @ R)  # f̃ − X̃ (X̃ᵀX̃ + D)⁻¹ X̃ᵀ f̃
        return solved

    def _kernel(self, dinv, K, centre):
        """``I + X̃ D⁻¹ X̃ᵀ`` into ``K`` (``centre``: ``K`` holds the uncentred sparse
        ``X D⁻¹ Xᵀ``, centred in place on its lower triangle only; ``dinv=None``: ``K`` holds
        ``X̃ D⁻¹ X̃ᵀ`` already)."""
        if dinv is None and not centre:
            pass
        elif not centre:
            Y = self.Xc * np.sqrt(dinv)
            np.matmul(Y, Y.T, out=K)  # X̃ D⁻¹ X̃ᵀ
        else:
            # sparse X: K = X D⁻¹ Xᵀ, double-centred J K J = X̃ D⁻¹ X̃ᵀ (K symmetric); only
            # the lower triangle, which the Cholesky factorisation reads
            r = K.mean(axis=1)
            if not centre_woodbury_lower(K, r, r.mean()):
                _overflow()
            return
        K[np.diag_indices_from(K)] += 1.0
        _check_finite(K)
