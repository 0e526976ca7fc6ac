"""The MVMC similarity ``S = clip(Ā, 0, 1)``, ``Ā = F diag(w) Fᵀ``, without any ``n × n``
array (docs/algorithms.md §1).

``Ā = (1/m) Σ_v Z_v M_v Z_vᵀ`` has rank ``R ≤ Σ_v rank(M_v)``; ``S = Ā + N`` with the
*clipping correction* ``N = clip(Ā, 0, 1) − Ā``, zero wherever ``Ā`` lies in ``[0, 1]`` and
usually sparse. ``N`` is found tile by tile (a tile of ``Ā`` is one GEMM ``F_I W F_Jᵀ``,
upper-triangle tiles only) and multiplied sparsely where clipping is rare, by a dense GEMM
where it is common. One pass costs at most O(n² (R + K) / 2) flops and O(n K + tile · K)
memory.

- :class:`ClippedLowRank` is the tiled engine: the pass the solver makes once per outer
  iteration (:meth:`~ClippedLowRank.projected_correction`, ``Z_vᵀ N Z_v``) and the pass that
  multiplies by ``N`` (:meth:`~ClippedLowRank.correction_pass`).
- :class:`ClippedLowRankOperator` is ``S`` as a LinearOperator for the spectral step and for
  users (``MVMCResult.similarity()``).
"""
from __future__ import annotations

import contextlib

import numba
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fastmv.kernels.mvmc import clip_correction, dense_to_csr

from .._core._executor import BlockMap, map_blocks
from .._core._threads import serial_when_small, task_map

__all__ = ["ClippedLowRankOperator"]

# Tile edge of the blockwise passes over Ā: a tile is TILE² doubles = 1.1 MiB, about one
# core's L2 (the fastest edge measured, see docs/records/mvmc.md).
TILE = 384
# A tile of the clipping correction is multiplied as CSR when at most this fraction is nonzero.
_SPARSE_TILE_FRACTION = 0.03
# The operator caches the clipping correction N as CSR when it has at most this many nonzeros
# (about 12 bytes each, i.e. ≤ 200 MB); above, every product recomputes it tile by tile.
_N_CACHE_MAX_NNZ = 2 ** 24
# Eigenvalues below this fraction of the largest |eigenvalue| are treated as zero when a
# k × k matrix is factored for Ā (they are rounding noise of the PSD projection).
_RANK_RTOL = 1e-12


def factor_symmetric(Y):
    """``Y = V diag(lam) Vᵀ`` keeping the eigenvalues that are not rounding noise."""
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    scale = np.abs(lam).max() if lam.size else 0.0
    keep = np.abs(lam) > _RANK_RTOL * scale if scale > 0 else np.zeros(lam.size, bool)
    return lam[keep], V[:, keep]


class _TileBuffer:
    """One ``tile × tile`` array that the GEMMs of a row block's full tiles write into.

    A fresh array per tile is an ``mmap`` and a page fault per 4 KiB whenever glibc's mmap
    threshold is fixed, as on a Dask worker (the nanny sets ``MALLOC_TRIM_THRESHOLD_``, which
    turns the dynamic threshold off): measured, that doubled a pass's wall time there.
    Writing into the buffer is the same GEMM, so the tile has the same bits.
    """

    def __init__(self, tile, dtype=np.float64):
        self.tile = tile
        self.dtype = dtype
        self.array = None

    def product(self, a, b):
        shape = (a.shape[0], b.shape[1])
        if shape != (self.tile, self.tile):  # an edge tile: contiguous, as the kernels expect
            return a @ b
        if self.array is None:
            self.array = np.empty(shape, dtype=self.dtype)
        return np.matmul(a, b, out=self.array)


class ClippedLowRank:
    """``S = clip(Ā, 0, 1)`` with ``Ā = F diag(w) Fᵀ`` (``F``: n × R, ``w`` signed)."""

    def __init__(self, F, w, tile=None):
        self.F = np.ascontiguousarray(F, dtype=np.float64)
        self.w = np.asarray(w, dtype=np.float64)
        self.FW = np.ascontiguousarray(self.F * self.w)
        self.n = self.F.shape[0]
        self.tile = int(TILE if tile is None else tile)

    def __getstate__(self):
        # FW is recomputed where it is unpickled (same bits): half the bytes on the wire
        return {"F": self.F, "w": self.w, "tile": self.tile}

    def __setstate__(self, state):
        self.__init__(state["F"], state["w"], state["tile"])

    @property
    def rank(self):
        return self.F.shape[1]

    def lowrank_product(self, X):
        """``Ā X`` in O(n R p)."""
        return self.FW @ (self.F.T @ X)

    def _factors(self, dtype):
        """``(F diag(w), F)`` in ``dtype`` (float32 copies made once, on first use)."""
        if dtype == np.float64:
            return self.FW, self.F
        single = self.__dict__.get("_single")
        if single is None:  # a race between threads computes the same arrays twice
            single = (self.FW.astype(np.float32), self.F.astype(np.float32))
            self._single = single
        return single

    def _row_block_tiles(self, i0, dtype=np.float64):
        """The upper-triangle tiles of row block ``i0``: ``(i1, j0, j1, N_IJ, row nnz of N_IJ,
        its share of ‖S‖², its share of nnz(N))`` (off-diagonal tiles count twice), computed
        in ``dtype``."""
        n, b = self.n, self.tile
        i1 = min(n, i0 + b)
        FW, F = self._factors(dtype)
        buffer = _TileBuffer(b, dtype)
        for j0 in range(i0, n, b):
            j1 = min(n, j0 + b)
            A = buffer.product(FW[i0:i1], F[j0:j1].T)
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
        On an executor (:class:`fastmv._core._executor.BlockMap`) every task builds its own CSR
        tiles (at most ``max_nnz`` nonzeros per block; the total decides as in-process).
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
        # On an executor a task returns only its own rows of N X (O(n p) bytes per pass, not
        # O(n² p / tile)); it rebuilds the tiles above the diagonal in its column, which the
        # in-process path shares between row blocks (see _correction_row_block).
        own_rows = X is not None and isinstance(map_, BlockMap)
        items = range(0, n, self.tile)
        if isinstance(map_, BlockMap) and collect:
            # A task ships its CSR tiles only when they fit in what is left of max_nnz after
            # the blocks already reduced (the item is taken when the task is submitted): one
            # that does not fit proves N too large, exactly as the in-process decision, and
            # once N is known too large no task builds or ships tiles.
            items = ((i0, max_nnz - total_nnz if keep[0] else -1) for i0 in items)
        for i0, part, ss_I, nnz_I, pieces_I in map_blocks(
                map_, _correction_task, items, self, X, keep, max_nnz, own_rows):
            if own_rows:
                out[i0:i0 + part.shape[0]] = part
            elif out is not None:
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

    def _correction_row_block(self, i0, X, keep, own_rows=False, budget=None):
        """Row block ``I`` of :meth:`correction_pass`: ``(i0, rows i0.. of N_I X, its share of
        ‖S‖², its share of nnz(N), its CSR tiles or None)``.

        ``own_rows=True`` returns the rows ``I`` of ``N X`` only, bit for bit the sum the
        in-process pass forms for them: first the contributions ``N_HIᵀ X_H`` of the tiles
        above the diagonal (row blocks ``H < I``, in order; each tile rebuilt by the same
        GEMM as row block ``H`` builds it), then this row block's ``Σ_{J≥I} N_IJ X_J``. The
        shares of ‖S‖² and nnz(N) and the CSR tiles stay those of the tiles right of the
        diagonal, as without ``own_rows``. The tiles are dropped (None) once they hold more
        than ``budget`` nonzeros.
        """
        n, b = self.n, self.tile
        i1 = min(n, i0 + b)
        head = None
        if own_rows:
            head = np.zeros((i1 - i0, X.shape[1]))
            buffer = _TileBuffer(b)
            for h0 in range(0, i0, b):
                A = buffer.product(self.FW[h0:h0 + b], self.F[i0:i1].T)
                with serial_when_small(A.size):
                    _, row_nnz = clip_correction(A)
                if row_nnz.sum() == 0:
                    continue
                T = (self._tile_csr(A, row_nnz)
                     if row_nnz.sum() <= _SPARSE_TILE_FRACTION * A.size else A)
                head += T.T @ X[h0:h0 + b]
        part = None if X is None else np.zeros((i1 - i0 if own_rows else n - i0, X.shape[1]))
        sumsq = 0.0
        total_nnz = 0
        pieces = []
        for i1, j0, j1, A, row_nnz, ss, nnz in self._row_block_tiles(i0):
            sumsq += ss
            if nnz == 0:
                continue
            total_nnz += nnz
            diag = i0 == j0
            if pieces is not None and (not keep[0] or (budget is not None
                                                       and total_nnz > budget)):
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
                if not diag and not own_rows:
                    part[j0 - i0:j1 - i0] += T.T @ X[i0:i1]
        if own_rows:
            head += part
            part = head
        return i0, part, sumsq, total_nnz, pieces

    def projected_correction(self, U, offsets, map_=map):
        """``Z_vᵀ N Z_v`` for the column blocks ``Z_v = U[:, offsets[v]:offsets[v+1]]``, and
        ``‖S‖_F²`` and ``nnz(N)``, in one pass over the upper-triangle tiles.

        Row block ``I`` accumulates ``Q_I = ½ N_II U_I + Σ_{J>I} N_IJ U_J`` (each tile is
        multiplied once); then ``H_v = Σ_I U_{I,v}ᵀ Q_{I,v}`` and ``Z_vᵀ N Z_v = H_v + H_vᵀ``.
        O(n² K / 2) flops for dense tiles, O(nnz K) for sparse ones, plus O(n m k²). The
        tiles, the clipping and the products run in the dtype of ``U`` (float32 halves the
        GEMMs' time); ``‖S‖_F²`` and the sums over row blocks are accumulated in float64.

        Row blocks are independent: ``map_`` may run them concurrently (an executor's ``map``;
        the kernels release the GIL), or a :class:`fastmv._core._executor.BlockMap` may send them to
        an executor's workers (this object's factors and ``U`` are broadcast, each task carries
        its row offset and returns ``m`` small matrices). Their contributions are added in
        row-block order, so the result does not depend on how they were scheduled.
        """
        blocks = [slice(offsets[v], offsets[v + 1]) for v in range(len(offsets) - 1)]
        H = [np.zeros((b.stop - b.start, b.stop - b.start)) for b in blocks]
        sumsq = 0.0
        total_nnz = 0
        if self.rank == 0:
            return H, 0.0, 0
        for H_I, ss_I, nnz_I in map_blocks(map_, _projected_task, range(0, self.n, self.tile),
                                           self, U, blocks):
            for h, h_I in zip(H, H_I):
                h += h_I
            sumsq += ss_I
            total_nnz += nnz_I
        return [h + h.T for h in H], sumsq, total_nnz

    def _projected_row_block(self, i0, U, blocks):
        """Row block ``I`` of :meth:`projected_correction`: ``([U_{I,v}ᵀ Q_{I,v}], its share
        of ‖S‖², its share of nnz(N))``."""
        Q = np.zeros((min(self.n, i0 + self.tile) - i0, U.shape[1]), dtype=U.dtype)
        AU = np.empty_like(Q)
        sumsq = 0.0
        total_nnz = 0
        for _, j0, j1, A, row_nnz, ss, nnz in self._row_block_tiles(i0, U.dtype):
            sumsq += ss
            if nnz == 0:
                continue
            total_nnz += nnz
            if i0 == j0:
                A *= 0.5
            if row_nnz.sum() <= _SPARSE_TILE_FRACTION * A.size:
                Q += self._tile_csr(A, row_nnz) @ U[j0:j1]
            else:
                Q += np.matmul(A, U[j0:j1], out=AU)
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

    Parameters
    ----------
    F : ndarray, shape (n, R)
        Factor of ``Ā = F diag(w) Fᵀ``.
    w : ndarray, shape (R,)
        Signed weights.
    tile : int, optional
        Tile edge of the passes over ``Ā`` (default 384).
    """

    def __init__(self, F, w, tile=None):
        self._core = ClippedLowRank(F, w, tile)
        n = self._core.n
        self._N = None
        self._N_tried = False
        self._blocks = None
        super().__init__(dtype=np.float64, shape=(n, n))

    def _use_block_map(self, blocks):
        """Run the passes over the tiles as tasks of ``blocks`` (a
        :class:`fastmv._core._executor.BlockMap`): the factors are sent to the workers once, each
        product's block of vectors once per product."""
        self._blocks = blocks
        blocks.keep(self._core)
        return self

    def _task_map(self):
        if self._blocks is not None:
            return contextlib.nullcontext(self._blocks)
        return task_map(numba.get_num_threads())

    @classmethod
    def from_views(cls, Z_list, M_list, tile=None):
        """Operator for ``clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)``.

        Parameters
        ----------
        Z_list : list of ndarray, shape (n, k_v)
            The view bases.
        M_list : list of ndarray, shape (k_v, k_v)
            Symmetric matrices, one per view.
        tile : int, optional
            Tile edge of the passes over ``Ā`` (default 384).

        Returns
        -------
        ClippedLowRankOperator
            ``S``.
        """
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
        with self._task_map() as map_:
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
        else:  # a full pass over the tiles: its row blocks run as tasks (fastmv._core._threads)
            with self._task_map() as map_:
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


def _projected_task(i0, core, U, blocks):
    """Task of :meth:`ClippedLowRank.projected_correction` (top-level: picklable)."""
    return core._projected_row_block(i0, U, blocks)


def _correction_task(item, core, X, keep, max_nnz, own_rows=False):
    """Task of :meth:`ClippedLowRank.correction_pass` (top-level: picklable). ``item`` is a
    row offset, or ``(row offset, nonzeros this block may still ship)`` on an executor; on
    another process ``keep`` is a copy that the caller never clears, so a block with too many
    nonzeros drops its tiles itself."""
    i0, budget = item if isinstance(item, tuple) else (item, max_nnz)
    return core._correction_row_block(i0, X, keep, own_rows, min(budget, max_nnz))


def _lowrank_factors(Z_list, M_list):
    """``F = [Z_v V_v]`` and ``w = [lam_v / m]`` with ``M_v = V_v diag(lam_v) V_vᵀ``."""
    m = len(Z_list)
    Fs, ws = [], []
    for Z, M in zip(Z_list, M_list):
        lam, V = factor_symmetric(M)
        Fs.append(Z @ V)
        ws.append(lam / m)
    return np.hstack(Fs), np.concatenate(ws)

