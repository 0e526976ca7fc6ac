"""MVMC: multi-view matrix completion with must-link / cannot-link constraints
(ALGORITHMS.md §1; Zhao et al., "Multi-View Matrix Completion for Clustering with Side
Information").

Model (views ``X_v``, ``Z_v`` = top-``k`` left singular vectors, ``Ω`` = constrained pairs)::

    min_{M_v ⪰ 0, 0 ≤ S ≤ 1}  Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²

It is jointly convex. For fixed ``M`` the best ``S`` is ``clip(Ā, 0, 1)`` with
``Ā = (1/m) Σ_v Z_v M_v Z_vᵀ``; for fixed ``S`` every ``M_v`` is a smooth problem over the
PSD cone whose gradient is ``2(C1 + C2)``-Lipschitz (ALGORITHMS.md: the paper's bound is
loose by ``k²``).

How this implementation avoids every ``n × n`` array
-----------------------------------------------------
- ``Ā`` has rank ``R ≤ Σ_v rank(M_v) ≤ K = Σ_v k_v`` (``M_v`` is factored by ``eigh``), and
  ``S = Ā + N`` with the *clipping correction* ``N = clip(Ā, 0, 1) − Ā``, which is zero
  wherever ``Ā`` lies in ``[0, 1]`` (on BBCSport about 2 % of the entries with ``C1 = 1``,
  30 % at the default ``C1 = 100``). ``Z_vᵀ S Z_v = Z_vᵀ Ā Z_v + Z_vᵀ N Z_v``: the first term
  costs O(m² k³) from the Gram matrices ``Z_vᵀ Z_w``; the second needs ``N``, found tile by
  tile (a tile of ``Ā`` is one GEMM ``F_I W F_Jᵀ``, upper-triangle tiles only) and multiplied
  sparsely where clipping is rare, by a dense GEMM where it is common. One such pass costs
  at most O(n² (R + K) / 2) flops and O(n K + tile · K) memory; it is done once per outer
  iteration.
- The masked residual ``R_Ω(Z M Zᵀ − S_ob)`` is evaluated only on the stored pairs, restricted
  to the ``n_Ω`` samples that occur in a constraint: O(|Ω| k + n_Ω k²) per gradient
  (:func:`fastmv.kernels.masked.masked_residual_product`), instead of O(n² k).
- The similarity handed to spectral clustering is a :class:`ClippedLowRankOperator`
  (products ``Ā X + N X`` only; ``N`` cached as CSR when small).

Acceleration
------------
Fixing ``S = clip(Ā(Y))`` at a point ``Y`` and minimising over ``M`` is exactly a proximal-
gradient step (in the fixed metric ``m C2 ‖Ā(ΔM)‖²``) on ``F(M) = min_S J(M, S)`` taken at
``Y``. ``accelerated=True`` therefore extrapolates the outer iterates (FISTA, with adaptive
restart) and solves each inner problem with monotone FISTA; ``accelerated=False`` is the
paper's alternation with plain projected gradient steps, whose objective never increases.
"""
from __future__ import annotations

import contextlib
import dataclasses
import numbers
import warnings

import numba
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fastmv.kernels.masked import clip_correction, dense_to_csr, masked_residual_product

from ._result import Result
from ._threads import serial_when_small, task_map, thread_limit
from ._validation import (check_int, check_n_clusters, check_pairs, check_random_state,
                          check_scalar, check_views)

__all__ = ["mvmc", "MVMCResult", "ClippedLowRankOperator"]

# Tile edge of the blockwise passes over Ā (a tile is _TILE² doubles = 1.1 MiB, about one
# core's L2). Measured at n = 5000, K = R = 200 among 256, 384, 512, 768: 384 fastest both
# single-threaded and as two concurrent tasks (2-6 % ahead of 512); smaller tiles waste less
# on the diagonal, larger ones run BLAS more efficiently (splitting diagonal tiles into
# quarters to skip the lower one measured no faster).
_TILE = 384
# A tile of the clipping correction is multiplied as CSR when at most this fraction is nonzero.
_SPARSE_TILE_FRACTION = 0.03
# The operator caches the clipping correction N as CSR when it has at most this many nonzeros
# (about 12 bytes each, i.e. ≤ 200 MB); above, every product recomputes it tile by tile.
_N_CACHE_MAX_NNZ = 2 ** 24
# Eigenvalues below this fraction of the largest |eigenvalue| are treated as zero when a
# k × k matrix is factored for Ā (they are rounding noise of the PSD projection).
_RANK_RTOL = 1e-12


# ---------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, repr=False)
class MVMCResult(Result):
    """Result of :func:`mvmc`.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Spectral clustering (Ng–Jordan–Weiss) of the completed similarity ``S``.
    M : list of ndarray, shape (k_v, k_v)
        The learned PSD matrices, one per view.
    Z : list of ndarray, shape (n, k_v)
        The view bases (top-``k_v`` left singular vectors, orthonormal columns).
    objective : ndarray, shape (n_iter,)
        ``Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²`` after each
        outer iteration, at the new ``M`` and the ``S`` it was fitted to.
    n_iter : int
        Outer iterations (passes over ``S``) done.
    converged : bool
        Whether the relative change of the objective fell below ``tol``.

    Methods
    -------
    similarity(dense=False)
        ``S = clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)`` as a :class:`ClippedLowRankOperator`
        (products only, O(n R) memory plus the sparse clipping correction) or, with
        ``dense=True``, as an ``n × n`` ndarray.
    """

    labels: np.ndarray
    M: list
    Z: list
    objective: np.ndarray
    n_iter: int
    converged: bool

    def similarity(self, dense: bool = False):
        """The completed similarity ``S`` (see the class docstring).

        Parameters
        ----------
        dense : bool, default False
            Return the ``n × n`` ndarray (O(n²) memory) instead of the linear operator.
        """
        op = ClippedLowRankOperator.from_views(self.Z, self.M)
        return op.toarray() if dense else op

    @property
    def S_operator(self):
        """``S`` as a :class:`ClippedLowRankOperator` (same as ``similarity()``)."""
        return self.similarity()


# ---------------------------------------------------------------------------------------
# S = clip(F diag(w) Fᵀ, 0, 1) without an n × n array
# ---------------------------------------------------------------------------------------

def _factor_symmetric(Y):
    """``Y = V diag(lam) Vᵀ`` keeping the eigenvalues that are not rounding noise."""
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    scale = np.abs(lam).max() if lam.size else 0.0
    keep = np.abs(lam) > _RANK_RTOL * scale if scale > 0 else np.zeros(lam.size, bool)
    return lam[keep], V[:, keep]


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


def _psd_projection(Y):
    """Projection of the symmetric part of ``Y`` onto the PSD cone (LAPACK ``eigh``).

    Returns ``(M, lam, V)`` with ``M = V diag(lam) Vᵀ``, ``lam > 0``: the factor lets the
    masked residual work in ``rank(M)`` dimensions (:meth:`_ViewProblem.masked`).
    """
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    pos = lam > 0
    Vp = np.ascontiguousarray(V[:, pos])
    lam = lam[pos]
    M = (Vp * lam) @ Vp.T
    return 0.5 * (M + M.T), lam, Vp


class _ClippedLowRank:
    """``S = clip(Ā, 0, 1)`` with ``Ā = F diag(w) Fᵀ`` (``F``: n × R, ``w`` signed)."""

    def __init__(self, F, w, tile=_TILE):
        self.F = np.ascontiguousarray(F, dtype=np.float64)
        self.w = np.asarray(w, dtype=np.float64)
        self.FW = np.ascontiguousarray(self.F * self.w)
        self.n = self.F.shape[0]
        self.tile = int(tile)

    @property
    def rank(self):
        return self.F.shape[1]

    def lowrank_product(self, X):
        """``Ā X`` in O(n R p)."""
        return self.FW @ (self.F.T @ X)

    def _row_block_tiles(self, i0):
        """The upper-triangle tiles of row block ``i0``: ``(i1, j0, j1, N_IJ, row nnz of N_IJ,
        its share of ‖S‖², its share of nnz(N))`` (off-diagonal tiles count twice)."""
        n, b = self.n, self.tile
        i1 = min(n, i0 + b)
        for j0 in range(i0, n, b):
            j1 = min(n, j0 + b)
            A = self.FW[i0:i1] @ self.F[j0:j1].T
            if i0 == j0:
                A = 0.5 * (A + A.T)  # exactly symmetric diagonal tiles
            with serial_when_small(A.size):
                ss, row_nnz = clip_correction(A)
            weight = 1 if i0 == j0 else 2
            yield i1, j0, j1, A, row_nnz, weight * ss, weight * int(row_nnz.sum())

    @staticmethod
    def _tile_csr(A, row_nnz):
        """The nonzero entries of the tile ``A`` as CSR (``row_nnz`` from clip_correction)."""
        indptr = np.zeros(A.shape[0] + 1, dtype=np.int64)
        np.cumsum(row_nnz, out=indptr[1:])
        with serial_when_small(A.size):
            ind, dat = dense_to_csr(A, indptr)
        return sp.csr_matrix((dat, ind, indptr), shape=A.shape)

    def correction_pass(self, X=None, collect=False, max_nnz=None, map_=map):
        """One pass over the upper-triangle tiles of ``Ā``.

        Returns ``(N @ X or None, ‖S‖_F², nnz(N), tiles)``. With ``collect=True``, ``tiles``
        is the list of the nonzero upper-triangle tiles of ``N`` as ``(i0, j0, CSR)`` when
        ``nnz(N) <= max_nnz`` (default ``_N_CACHE_MAX_NNZ``), else None.

        Row blocks are independent tasks for ``map_`` (see :meth:`projected_correction`);
        block ``I`` contributes to the rows ``I`` and below of ``N X``, added in block order.
        """
        if max_nnz is None:
            max_nnz = _N_CACHE_MAX_NNZ
        n = self.n
        out = None if X is None else np.zeros((n, X.shape[1]), dtype=np.float64)
        sumsq = 0.0
        total_nnz = 0
        pieces = [] if collect else None
        if self.rank == 0:  # Ā = 0: S = 0, N = 0
            return out, 0.0, 0, pieces
        keep = [collect]  # cleared once N is known to be too large to keep (read by tasks)
        for i0, part, ss_I, nnz_I, pieces_I in map_(
                lambda i0: self._correction_row_block(i0, X, keep), range(0, n, self.tile)):
            if out is not None:
                out[i0:] += part
            sumsq += ss_I
            total_nnz += nnz_I
            if pieces is not None:
                if pieces_I is None or total_nnz > max_nnz:
                    pieces = None  # too large to keep: products recompute it
                    keep[0] = False
                else:
                    pieces.extend(pieces_I)
        return out, sumsq, total_nnz, pieces

    def _correction_row_block(self, i0, X, keep):
        """Row block ``I`` of :meth:`correction_pass`: ``(i0, rows i0.. of N_I X, its share of
        ‖S‖², its share of nnz(N), its CSR tiles or None)``."""
        n = self.n
        part = None if X is None else np.zeros((n - i0, X.shape[1]))
        sumsq = 0.0
        total_nnz = 0
        pieces = []
        for i1, j0, j1, A, row_nnz, ss, nnz in self._row_block_tiles(i0):
            sumsq += ss
            if nnz == 0:
                continue
            total_nnz += nnz
            diag = i0 == j0
            if pieces is not None and not keep[0]:
                pieces = None
            sparse_tile = row_nnz.sum() <= _SPARSE_TILE_FRACTION * A.size
            C = None
            if sparse_tile or pieces is not None:
                C = self._tile_csr(A, row_nnz)
                if pieces is not None:
                    pieces.append((i0, j0, C))
            if part is not None:
                T = C if sparse_tile else A
                part[:i1 - i0] += T @ X[j0:j1]
                if not diag:
                    part[j0 - i0:j1 - i0] += T.T @ X[i0:i1]
        return i0, part, sumsq, total_nnz, pieces

    def projected_correction(self, U, offsets, map_=map):
        """``Z_vᵀ N Z_v`` for the column blocks ``Z_v = U[:, offsets[v]:offsets[v+1]]``, and
        ``‖S‖_F²`` and ``nnz(N)``, in one pass over the upper-triangle tiles.

        Row block ``I`` accumulates ``Q_I = ½ N_II U_I + Σ_{J>I} N_IJ U_J`` (each tile is
        multiplied once); then ``H_v = Σ_I U_{I,v}ᵀ Q_{I,v}`` and ``Z_vᵀ N Z_v = H_v + H_vᵀ``.
        O(n² K / 2) flops for dense tiles, O(nnz K) for sparse ones, plus O(n m k²).

        Row blocks are independent: ``map_`` may run them concurrently (an executor's ``map``;
        the kernels release the GIL). Their contributions are added in row-block order, so the
        result does not depend on how they were scheduled.
        """
        blocks = [slice(offsets[v], offsets[v + 1]) for v in range(len(offsets) - 1)]
        H = [np.zeros((b.stop - b.start, b.stop - b.start)) for b in blocks]
        sumsq = 0.0
        total_nnz = 0
        if self.rank == 0:
            return H, 0.0, 0
        for H_I, ss_I, nnz_I in map_(lambda i0: self._projected_row_block(i0, U, blocks),
                                     range(0, self.n, self.tile)):
            for h, h_I in zip(H, H_I):
                h += h_I
            sumsq += ss_I
            total_nnz += nnz_I
        return [h + h.T for h in H], sumsq, total_nnz

    def _projected_row_block(self, i0, U, blocks):
        """Row block ``I`` of :meth:`projected_correction`: ``([U_{I,v}ᵀ Q_{I,v}], its share
        of ‖S‖², its share of nnz(N))``."""
        Q = np.zeros((min(self.n, i0 + self.tile) - i0, U.shape[1]))
        sumsq = 0.0
        total_nnz = 0
        for _, j0, j1, A, row_nnz, ss, nnz in self._row_block_tiles(i0):
            sumsq += ss
            if nnz == 0:
                continue
            total_nnz += nnz
            if i0 == j0:
                A *= 0.5
            if row_nnz.sum() <= _SPARSE_TILE_FRACTION * A.size:
                Q += self._tile_csr(A, row_nnz) @ U[j0:j1]
            else:
                Q += A @ U[j0:j1]
        U_I = U[i0:i0 + Q.shape[0]]
        return [U_I[:, b].T @ Q[:, b] for b in blocks], sumsq, total_nnz

    @staticmethod
    def tiles_product(pieces, X):
        """``N X`` from the upper-triangle CSR tiles of the symmetric ``N``."""
        out = np.zeros(X.shape, dtype=np.float64)
        for i0, j0, C in pieces:
            i1, j1 = i0 + C.shape[0], j0 + C.shape[1]
            out[i0:i1] += C @ X[j0:j1]
            if i0 != j0:
                out[j0:j1] += C.T @ X[i0:i1]
        return out

    def assemble(self, pieces):
        """The symmetric ``N`` as one CSR matrix from its upper-triangle tiles."""
        rows, cols, vals = [], [], []
        for i0, j0, C in pieces:
            coo = C.tocoo()
            rows.append(coo.row.astype(np.int64) + i0)
            cols.append(coo.col.astype(np.int64) + j0)
            vals.append(coo.data)
            if i0 != j0:
                rows.append(coo.col.astype(np.int64) + j0)
                cols.append(coo.row.astype(np.int64) + i0)
                vals.append(coo.data)
        if not rows:
            return sp.csr_matrix((self.n, self.n))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(self.n, self.n))

    def dense(self):
        """``S`` as an ``n × n`` ndarray (blockwise)."""
        n, b = self.n, self.tile
        S = np.empty((n, n))
        for i0 in range(0, n, b):
            i1 = min(n, i0 + b)
            for j0 in range(i0, n, b):
                j1 = min(n, j0 + b)
                A = self.FW[i0:i1] @ self.F[j0:j1].T
                if i0 == j0:
                    A = 0.5 * (A + A.T)
                np.clip(A, 0.0, 1.0, out=A)
                S[i0:i1, j0:j1] = A
                if i0 != j0:
                    S[j0:j1, i0:i1] = A.T
        return S


class ClippedLowRankOperator(spla.LinearOperator):
    """The MVMC similarity ``S = clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)`` as a symmetric
    :class:`scipy.sparse.linalg.LinearOperator` that never forms an ``n × n`` array.

    ``S X = Ā X + N X``: the low-rank part costs O(n R p) for ``p`` columns (``R`` = total
    rank of the ``M_v``); the clipping correction ``N`` is found on the first product by one
    pass over the tiles of ``Ā`` (O(n² R / 2) flops, O(tile²) memory) and kept as CSR tiles
    when it has at most ``2**24`` nonzeros, so later products cost O(n R p + nnz(N) p). A larger
    ``N`` is recomputed tile by tile at every product, which makes a block of vectors nearly as
    cheap as one (``prefers_block_products``).

    Use :meth:`from_views` to build it; :meth:`toarray` forms ``S`` densely (O(n²) memory).
    """

    def __init__(self, F, w, tile=_TILE):
        self._core = _ClippedLowRank(F, w, tile)
        n = self._core.n
        self._N = None
        self._N_tried = False
        super().__init__(dtype=np.float64, shape=(n, n))

    @classmethod
    def from_views(cls, Z_list, M_list, tile=_TILE):
        """Operator for ``clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)`` (each ``M_v`` symmetric)."""
        F, w = _lowrank_factors(Z_list, M_list)
        return cls(F, w, tile)

    @property
    def rank(self):
        """Rank ``R`` of the low-rank part ``Ā``."""
        return self._core.rank

    @property
    def prefers_block_products(self):
        """Whether a product recomputes the clipping correction tile by tile (``N`` too large
        to cache, known after the first product): a block of ``p`` vectors then costs about
        ``(R/2 + p) / (R/2 + 1)`` single products, so the spectral step multiplies by blocks
        (:func:`fastmv.spectral_embedding`)."""
        return self._N_tried and self._N is None and self.rank > 0

    @property
    def correction(self):
        """The clipping correction ``N = S − Ā`` as CSR, or None when it is too large to keep."""
        self._ensure_cache()
        return None if self._N is None else self._core.assemble(self._N)

    def _ensure_cache(self, X=None):
        if self._N_tried:
            return None
        with task_map(numba.get_num_threads()) as map_:
            out, _, _, pieces = self._core.correction_pass(X, collect=True, map_=map_)
        self._N_tried = True
        self._N = pieces
        return out

    def _matmat(self, X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        first = self._ensure_cache(X) if not self._N_tried else None
        if first is not None:
            NX = first
        elif self._N is not None:
            NX = self._core.tiles_product(self._N, X)
        else:  # a full pass over the tiles: its row blocks run as tasks (fastmv._threads)
            with task_map(numba.get_num_threads()) as map_:
                NX = self._core.correction_pass(X, map_=map_)[0]
        return self._core.lowrank_product(X) + NX

    def _matvec(self, x):
        return self._matmat(np.asarray(x).reshape(-1, 1)).ravel()

    def _rmatvec(self, x):
        return self._matvec(x)

    def _rmatmat(self, X):
        return self._matmat(X)

    def _adjoint(self):
        return self

    def toarray(self):
        """``S`` as a dense ``n × n`` ndarray."""
        return self._core.dense()


def _lowrank_factors(Z_list, M_list):
    """``F = [Z_v V_v]`` and ``w = [lam_v / m]`` with ``M_v = V_v diag(lam_v) V_vᵀ``."""
    m = len(Z_list)
    Fs, ws = [], []
    for Z, M in zip(Z_list, M_list):
        lam, V = _factor_symmetric(M)
        Fs.append(Z @ V)
        ws.append(lam / m)
    return np.hstack(Fs), np.concatenate(ws)


# ---------------------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------------------

def _check_constraints(must_link, cannot_link, n):
    """Canonical unordered pairs ``(i < j)`` and values; errors name the argument."""
    ml = check_pairs(must_link, "must_link", n)
    cl = check_pairs(cannot_link, "cannot_link", n)
    if ml.shape[0] == 0 and cl.shape[0] == 0:
        raise ValueError("must_link and cannot_link are both empty; MVMC needs at least one "
                         "pairwise constraint")
    codes = []
    for P in (ml, cl):
        a = np.minimum(P[:, 0], P[:, 1])
        b = np.maximum(P[:, 0], P[:, 1])
        codes.append(a * np.int64(n) + b)
    both = np.intersect1d(codes[0], codes[1])
    if both.size:
        c = both[0]
        pm = int(np.flatnonzero(codes[0] == c)[0])
        pc = int(np.flatnonzero(codes[1] == c)[0])
        raise ValueError(f"pair ({c // n}, {c % n}) is both a must-link (must_link[{pm}] = "
                         f"{tuple(int(x) for x in ml[pm])}) and a cannot-link (cannot_link[{pc}] = "
                         f"{tuple(int(x) for x in cl[pc])})")
    cm = np.unique(codes[0])
    cc = np.unique(codes[1])
    allc = np.concatenate([cm, cc])
    vals = np.concatenate([np.ones(cm.size), np.zeros(cc.size)])
    return allc // n, allc % n, vals


def _pair_csr(i, j, vals):
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


def _normalize_view(X, normalize):
    if normalize is None:
        return X
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        scale = np.zeros_like(norms)
        scale[norms > 0] = 1.0 / norms[norms > 0]
        return sp.diags(scale) @ X
    norms = np.linalg.norm(X, axis=1)
    scale = np.zeros_like(norms)
    scale[norms > 0] = 1.0 / norms[norms > 0]
    return X * scale[:, None]


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
            U = np.asarray(X @ V[:, :r]) / s[:r]
            U, _ = np.linalg.qr(U)  # re-orthonormalise against the Gram route's rounding
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
# the solver
# ---------------------------------------------------------------------------------------

class _ViewProblem:
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
        # Always one Numba thread. In the solver this runs as a task beside the other views'
        # (fastmv._threads.task_map); without threadpoolctl it alternates every few
        # milliseconds with the BLAS products around it, whose busy-waiting pool competes with
        # Numba's for the cores: on 2 cores the serial kernel measured faster per outer
        # iteration (0.31 s against 0.38-0.57 s at n = 5000, 2.5 s against 3.2 s at n = 20000).
        with serial_when_small(0):
            RZ, loss = masked_residual_product(B * lam, B, self.Z, self.indptr, self.indices,
                                               self.values, self.mirror)
        return _symmetric_crossproduct(self.Z, RZ), loss

    def evaluate(self, point):
        """Objective and gradient at ``point = (M, lam, V)`` (a PSD matrix and its factor)."""
        M, lam, V = point
        G, loss = self.masked(lam, V)
        T = self.T
        f = (np.trace(M) + self.C1 * loss
             + self.C2 * (np.vdot(M, M) - 2.0 * np.vdot(M, T) + self.s_sumsq))
        g = self.eye + 2.0 * self.C1 * G + 2.0 * self.C2 * (M - T)
        return float(f), g

    def solve(self, start, L, n_steps, accelerated):
        """``n_steps`` projected-gradient (or monotone FISTA) steps from the PSD point
        ``start = (M0, lam, V)``; returns the last iterate ``(M, lam, V)`` and its objective."""
        x = start
        fx, gx = self.evaluate(x)
        if not accelerated:
            for _ in range(n_steps):
                x = _psd_projection(x[0] - gx / L)
                fx, gx = self.evaluate(x)
            return x, fx
        y, gy, t = x[0], gx, 1.0
        for _ in range(n_steps):
            z = _psd_projection(y - gy / L)
            fz, gz = self.evaluate(z)
            if fz <= fx:
                xn, fxn, gxn = z, fz, gz
            else:
                xn, fxn, gxn = x, fx, gx
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            a, b = t / tn, (t - 1.0) / tn
            # the gradient is affine in M, so it follows the same affine combination
            y = xn[0] + a * (z[0] - xn[0]) + b * (xn[0] - x[0])
            gy = gxn + a * (gz - gxn) + b * (gxn - gx)
            x, fx, gx, t = xn, fxn, gxn, tn
        return x, fx


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def mvmc(X_list, n_clusters, must_link, cannot_link, *, C1=100.0, C2=1.0, k=100,
         max_iter=100, inner_iter=10, tol=1e-6, accelerated=True, normalize="l2",
         step="tight", random_state=None, verbose=False, callback=None, n_jobs=None):
    """Multi-view matrix completion with must-link / cannot-link constraints (MVMC).

    Completes the pairwise similarity ``S`` from a few observed entries (``1`` on
    must-links, ``0`` on cannot-links) under the assumption that each view's similarity lies
    in the span of its top left singular vectors, ``S_v = Z_v M_v Z_vᵀ`` with ``M_v ⪰ 0``,
    penalising ``Σ tr(M_v)`` (the nuclear norm), the misfit on the constraints and the
    disagreement between views; then clusters ``S`` spectrally (ALGORITHMS.md §1).

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, each (n, d_v)
        The views, samples in rows (text views may stay sparse; they are never densified).
    n_clusters : int
        Number of clusters ``c`` for the final spectral step.
    must_link, cannot_link : array-like of int, shape (p, 2)
        Sample-index pairs (either may be empty or None, not both). Order within a pair and
        repeated pairs do not matter. Out-of-range indices, self-pairs and a pair that is in
        both sets raise ``ValueError`` naming it.
    C1 : float, default 100.0
        Weight of the squared misfit on the constrained pairs.
    C2 : float, default 1.0
        Weight of the disagreement ``‖Z_v M_v Z_vᵀ − S‖²`` between each view and ``S``. The
        defaults were chosen on BBCSport (ℓ2-normalised rows, 5000 pairs): ``C1 = 100,
        C2 = 1`` gives NMI 0.99 there, ``C1 = 10`` 0.98, ``C1 = C2 = 1`` 0.96; larger ``C1``
        fits the constraints more tightly (and clips more entries of ``Ā``, which makes the
        passes over ``S`` denser).
    k : int, default 100
        Rank of each view basis; per view ``k_v = min(k, d_v, n − 1)``, lowered further to
        the numerical rank of ``X_v``.
    max_iter : int, default 100
        Maximum number of outer iterations (each recomputes ``S`` once).
    inner_iter : int, default 10
        Projected-gradient / FISTA steps on every ``M_v`` per outer iteration.
    tol : float, default 1e-6
        Stop when the objective's relative change between outer iterations is below ``tol``.
    accelerated : bool, default True
        FISTA on the outer iterations (adaptive restart) and monotone FISTA on the inner
        steps. ``False`` is the paper's alternation with plain projected gradient steps; its
        objective never increases.
    normalize : {"l2", None}, default "l2"
        Scale every sample (row) of every view to unit Euclidean norm before the SVD (zero
        rows stay zero). ``None`` uses the views as given.
    step : {"tight", "paper"}, default "tight"
        Step ``1/L`` with ``L = 2(C1 + C2)`` (a valid Lipschitz constant, ALGORITHMS.md), or
        the paper's ``L = 2(C1 ‖Z_v‖_F⁴ + C2) = 2(C1 k_v² + C2)``, ``k_v²`` times smaller
        steps towards the same optimum.
    random_state : None, int or numpy.random.Generator
        Seeds the randomized SVD and the spectral step.
    verbose : bool, default False
        Print the objective after every outer iteration.
    callback : callable, optional
        ``callback(iteration, state)`` after every outer iteration; ``state`` is a dict with
        ``"M"`` (list of the current PSD matrices; do not modify), ``"objective"``,
        ``"clip_nnz"`` (nonzeros of the clipping correction ``N``) and ``"rank"``
        (rank of ``Ā``).
    n_jobs : int or None
        Threads (default: Numba's setting). With threadpoolctl installed, the iterations run
        the row blocks of each pass over ``S`` and the views' M-steps as tasks on ``n_jobs``
        Python threads, each with one BLAS and one Numba thread (on 2 cores 1.4× faster than
        letting the BLAS and Numba pools take turns on both cores, which spin against each
        other); the result is the same for every thread count. Without threadpoolctl the
        tasks run in turn with BLAS threads as configured.

    Returns
    -------
    MVMCResult
        ``labels``, ``M``, ``Z``, ``objective``, ``n_iter``, ``converged`` and
        ``similarity(dense=False)`` (``S`` as a LinearOperator, or dense).

    Notes
    -----
    The paper initialises ``M_v = Z_vᵀ S_ob Z_v``, which is not PSD (``S_ob`` has a zero
    diagonal); it is projected onto the PSD cone here so that every iterate is feasible.

    All arithmetic is float64 (float32 views are converted).

    Cost, with ``n`` samples, ``m`` views, ``K = Σ k_v``, ``R = Σ rank(M_v) ≤ K`` (the
    extrapolated points of the accelerated variant are usually of full rank), ``n_Ω``
    samples that occur in a constraint:

    - SVDs: O(nnz(X_v) k q) per view (randomized, ``q = 8`` passes).
    - Per outer iteration: one pass over ``S``, O(n² R / 2) flops (BLAS tiles of ``Ā``) plus
      O(nnz(N) K), at most O(n² K / 2), for the clipping correction (dense tiles where
      clipping is common);
      ``inner_iter`` gradient steps per view, each O(|Ω| k + n_Ω k² + k³).
    - Memory: O(n (K + R) + n_jobs · 384 (384 + K)); no ``n × n`` array is ever formed.
    - Spectral step: products with :class:`ClippedLowRankOperator` only, each O(n R +
      nnz(N)) when ``N`` has at most ``2**24`` nonzeros (kept after the first product),
      otherwise one tile pass O(n² (R / 2 + p)) for a block of ``p`` vectors. ARPACK needs
      about 30 single products in the first case; in the second the spectral step multiplies
      by blocks of ``n_clusters + 2`` vectors and needs 8–10 passes.

    Defaults: ``normalize="l2"``, ``C1 = 100``, ``C2 = 1``, ``k = 100``. On BBCSport with
    5000 random constraints from the ground truth they give NMI ≈ 0.99, accuracy ≈ 0.997.
    """
    views = check_views(X_list, "X_list", accept_sparse=True)
    n = views[0].shape[0]
    m = len(views)
    n_clusters = check_n_clusters(n_clusters, n)
    pi, pj, pv = _check_constraints(must_link, cannot_link, n)
    C1 = check_scalar(C1, "C1", low=0.0, low_inclusive=False)
    C2 = check_scalar(C2, "C2", low=0.0, low_inclusive=False)
    k = check_int(k, "k", low=1)
    max_iter = check_int(max_iter, "max_iter", low=1)
    inner_iter = check_int(inner_iter, "inner_iter", low=1)
    tol = check_scalar(tol, "tol", low=0.0)
    accelerated = _check_bool(accelerated, "accelerated")
    verbose = _check_bool(verbose, "verbose")
    if normalize not in ("l2", None):
        raise ValueError(f"normalize must be 'l2' or None, got {normalize!r}")
    if step not in ("tight", "paper"):
        raise ValueError(f"step must be 'tight' or 'paper', got {step!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    rng = check_random_state(random_state)

    with thread_limit(n_jobs) as n_threads, contextlib.ExitStack() as iteration_threads:
        Z_list = []
        for v, X in enumerate(views):
            kv = max(1, min(k, X.shape[1], n - 1))
            Z_list.append(_left_singular_vectors(_normalize_view(X, normalize), kv, rng,
                                                 f"X_list[{v}]"))
        ks = [Z.shape[1] for Z in Z_list]
        offsets = np.concatenate([[0], np.cumsum(ks)])
        U = np.hstack(Z_list)
        G = U.T @ U  # Gram blocks Z_vᵀ Z_w

        active, *pattern = _pair_csr(pi, pj, pv)
        problems = [_ViewProblem(np.ascontiguousarray(Z[active]), pattern, C1, C2)
                    for Z in Z_list]
        Ls = [2.0 * (C1 + C2) if step == "tight" else 2.0 * (C1 * kv * kv + C2) for kv in ks]

        # init: M_v = Proj_PSD(Z_vᵀ S_ob Z_v); R_Ω(0 − S_ob) = −S_ob on Ω
        points = [_psd_projection(-prob.masked(np.zeros(0), np.zeros((kv, 0)))[0])
                  for prob, kv in zip(problems, ks)]
        M = [pt[0] for pt in points]
        M_prev = M
        t = 1.0
        objective = []
        converged = False
        it = 0
        # row blocks of the pass over S, and the views in the M-step, run as tasks on Python
        # threads when that is possible (see fastmv._threads.task_map)
        map_ = iteration_threads.enter_context(task_map(n_threads))
        for it in range(1, max_iter + 1):
            if accelerated and it > 1:
                tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / tn
                t = tn
                Y = [a + beta * (a - b) for a, b in zip(M, M_prev)]
            else:
                Y = M
            # ---- S = clip(Ā(Y)) and Z_vᵀ S Z_v, blockwise -------------------------------
            def factor_view(v):
                lam, V = _factor_symmetric(Y[v])
                return lam, V, Z_list[v] @ V

            facs = list(map_(factor_view, range(m)))
            F = np.hstack([ZV for _, _, ZV in facs])
            w = np.concatenate([lam / m for lam, _, _ in facs])
            core = _ClippedLowRank(F, w, _TILE)
            TN, s_sumsq, clip_nnz = core.projected_correction(U, offsets, map_)
            Yt = [(V * lam) @ V.T for lam, V, _ in facs]
            for v, prob in enumerate(problems):
                sv = slice(offsets[v], offsets[v + 1])
                T = TN[v]
                for u in range(m):
                    su = slice(offsets[u], offsets[u + 1])
                    T += G[sv, su] @ Yt[u] @ G[su, sv] / m
                prob.T = 0.5 * (T + T.T)
                prob.s_sumsq = s_sumsq
            # ---- M-step ---------------------------------------------------------------
            def solve_view(v):
                start = _psd_projection(Y[v]) if Y is not M else points[v]
                return problems[v].solve(start, Ls[v], inner_iter, accelerated)

            solved = list(map_(solve_view, range(m)))  # the views are independent given S
            points = [pt for pt, _ in solved]
            J = sum(fv for _, fv in solved)
            M_new = [pt[0] for pt in points]
            if accelerated and objective:
                # adaptive restart (O'Donoghue & Candès): momentum against the step, or a rise
                ip = sum(np.vdot(y - a, a - b) for y, a, b in zip(Y, M_new, M))
                if ip > 0 or J > objective[-1]:
                    t = 1.0
            M_prev, M = M, M_new
            objective.append(J)
            if verbose:
                print(f"mvmc: iteration {it:4d}  objective {J:.10g}  rank(Ā) {core.rank}  "
                      f"clipped entries {clip_nnz}")
            if callback is not None:
                callback(it, {"M": M, "objective": J, "clip_nnz": clip_nnz,
                              "rank": core.rank})
            if len(objective) > 1 and abs(objective[-2] - J) <= tol * max(abs(J), 1e-300):
                converged = True
                break

        iteration_threads.close()
        S_op = ClippedLowRankOperator.from_views(Z_list, M)
        if S_op.rank == 0:
            # every M_v = 0 (e.g. only cannot-links): S = 0 carries no cluster structure
            warnings.warn("the completed similarity S is identically zero (all M_v = 0, e.g. "
                          "only cannot-link constraints); every sample gets label 0",
                          RuntimeWarning, stacklevel=2)
            labels = np.zeros(n, dtype=np.int64)
        else:
            from ._spectral import spectral_clustering
            labels = np.asarray(spectral_clustering(S_op, n_clusters, random_state=rng,
                                                    n_jobs=n_jobs), dtype=np.int64)

    return MVMCResult(labels=labels, M=M, Z=Z_list, objective=np.asarray(objective),
                      n_iter=it, converged=converged)


# ---------------------------------------------------------------------------------------
# command line hooks
# ---------------------------------------------------------------------------------------

def _demo(random_state=0):
    """Rows (setting, y_true, y_pred) for ``python -m fastmv demo``: Handwritten (fou, fac,
    zer; n = 2000), 1000 and 5000 random pairwise constraints from the labels, defaults."""
    from fastmv.datasets import load_handwritten
    from fastmv.simulate import pairwise_constraints
    views, y = load_handwritten(["fou", "fac", "zer"])
    rows = []
    for p in (1000, 5000):
        ml, cl = pairwise_constraints(y, p, random_state=random_state)
        res = mvmc(views, 10, ml, cl, random_state=random_state)
        rows.append((f"fou+fac+zer, {p} pairs, C1=100, C2=1, k=100, l2 rows", y, res.labels))
    return rows


def _cli(views, y, params: dict, random_state):
    """Run MVMC on a user's ``(views, y)``.

    Side-information parameters (popped from ``params``):

    - ``n_constraints`` (default 5000): number of random sample pairs whose must-link /
      cannot-link status is taken from ``y`` (:func:`fastmv.simulate.pairwise_constraints`);
    - ``n_clusters`` (default: the number of classes in ``y``).

    The remaining parameters go to :func:`mvmc` (``C1``, ``C2``, ``k``, ``max_iter``,
    ``inner_iter``, ``tol``, ``accelerated``, ``normalize``, ``step``, ``n_jobs``);
    unknown ones raise ``TypeError``.
    """
    from fastmv.simulate import pairwise_constraints
    params = dict(params)
    n_constraints = params.pop("n_constraints", 5000)
    n_clusters = params.pop("n_clusters", int(np.unique(y).size))
    y = np.asarray(y)
    n = y.size
    if isinstance(n_constraints, numbers.Integral):
        n_constraints = min(int(n_constraints), n * (n - 1) // 2)
    ml, cl = pairwise_constraints(y, n_constraints, random_state=random_state)
    res = mvmc(views, n_clusters, ml, cl, random_state=random_state, **params)
    setting = (f"{len(views)} views, {n_constraints} pairs"
               + "".join(f", {k}={v}" for k, v in sorted(params.items())))
    return y, res.labels, setting
