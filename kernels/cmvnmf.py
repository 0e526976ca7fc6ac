"""Kernels for CMVNMF (constrained NMF of unmapped views, docs/algorithms.md §4).

The large products ``X_aᵀ V_a`` and ``X_a U_a`` stay BLAS GEMMs for dense views; for CSR
views :func:`csr_matmul` computes them in parallel over rows (``X_aᵀ V_a`` through a CSR copy
of ``X_aᵀ`` made once). What the other kernels fuse is the O(n c²) and O(|Ω| c) work around
those products, which NumPy / scipy.sparse would do in several passes with temporaries:

- :func:`multiplicative_update`: numerator, denominator and the ε guard of one
  multiplicative update of ``U_a`` or ``V_a`` in a single pass, parallel over rows, with the
  must-link / cannot-link products ``M V`` and ``C V`` of every constraint block touching a
  view and the degree terms (:class:`ConstraintTerms`: pattern-only CSR whose columns index
  the stacked factor ``V_all`` of all views) fused in; it also returns the pair penalty of
  the rows it gathered (to the views updated before, at their final values), so a sweep
  needs no second pass over the pairs for its objective;
- :func:`constraint_penalty`: the constraint part of the objective at any state (initial
  factors, intra-view pairs after a sweep), a parallel sum over pairs in a fixed number of
  chunks (so the result does not depend on the thread count);
- :func:`pattern_csr`: builds those CSR patterns from (row, column) lists in O(nnz + n)
  (two counting sorts; columns end up sorted within each row for locality of the gathers).

Every kernel accepts float32 or float64 arrays (all of one dtype) and int32 or int64 index
arrays; the solver passes one fixed layout (C-contiguous arrays it owns, int64 ``indptr``,
int32 pattern indices while they fit) so that a call compiles, or loads from Numba's cache,
one specialisation per kernel and dtype, three kernels for dense views (four for CSR).
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._checks import in_range, valid_csr, valid_ptr
from ._compile import serial_copy
from ._options import PARALLEL, SERIAL

_ROW_BLOCK = 64  # rows per parallel task in the update kernels (one c-vector scratch each)
#: From this many columns on, row ``i`` of ``F gram`` is summed for every ``k`` at once (loop
#: over ``l`` outside, over ``k`` inside: contiguous in ``gram``, independent per ``k``, so it
#: vectorises) instead of one dot product per ``k`` (a dependent chain of ``c`` adds). Each
#: sum runs over ``l = 0, 1, …`` from ``0.0`` in float64 either way: the same bits. Below
#: this the dot products are faster (docs/records/cmvnmf.md, "The denominators of many-class
#: updates").
_GRAM_BY_ROWS_MIN_C = 12
_PAIR_CHUNK = 4096  # pairs per chunk in constraint_penalty (fixed: thread-count independent)


# Allocations live in serial helpers: ``np.zeros`` (or an array expression) written inside a
# ``parallel=True`` kernel is a parfor of its own, which costs compile time on first use.
@njit(**SERIAL)
def _zeros_like_rows(n_rows, B):
    """``np.zeros((n_rows, B.shape[1]), B.dtype)``."""
    out = np.empty((n_rows, B.shape[1]), B.dtype)
    out[:] = 0.0
    return out


@njit(**SERIAL)
def pattern_csr(rows, cols, n_rows, n_cols):
    """CSR pattern (no values) of the entries ``(rows[p], cols[p])``.

    Parameters
    ----------
    rows : ndarray of int, shape (nnz,)
        Row of every entry, in ``[0, n_rows)``.
    cols : ndarray of int, shape (nnz,)
        Column of every entry, in ``[0, n_cols)``.
    n_rows, n_cols : int

    Returns
    -------
    indptr : ndarray of int64, shape (n_rows + 1,)
    indices : ndarray, shape (nnz,), dtype of ``cols``
        Column indices, sorted within each row; repeated entries are kept (a repeated pair
        counts repeatedly in :func:`multiplicative_update`).

    Notes
    -----
    Two stable counting sorts (by column, then by row): O(nnz + n_rows + n_cols) time and
    memory, serial (a scatter). ``np.lexsort`` of the same arrays is O(nnz log nnz) and was
    a quarter of a short solver run.

    Cost: moves ``~40 nnz + 8 (n_rows + n_cols)`` bytes (two counting sorts: the index arrays
    read and written twice); no flops.
    """
    if (rows.shape[0] != cols.shape[0] or not in_range(rows, 0, n_rows)
            or not in_range(cols, 0, n_cols)):
        raise ValueError("pattern_csr: rows and cols must have one entry each, in [0, n_rows) "
                         "and [0, n_cols)")
    nnz = rows.shape[0]
    # both passes count in one loop (loops in place of ``[:] = 0`` and ``.copy()``: less
    # code for Numba to compile)
    count = np.empty(n_cols + 1, np.int64)
    for j in range(n_cols + 1):
        count[j] = 0
    indptr = np.empty(n_rows + 1, np.int64)
    for i in range(n_rows + 1):
        indptr[i] = 0
    for p in range(nnz):
        count[cols[p] + 1] += 1
        indptr[rows[p] + 1] += 1
    # pass 1: entry order sorted by column
    for j in range(n_cols):
        count[j + 1] += count[j]
    by_col = np.empty(nnz, np.int64)
    for p in range(nnz):
        j = cols[p]
        by_col[count[j]] = p
        count[j] += 1
    # pass 2: stable by row; fill[i] = indptr[i], final when the prefix sum reaches it
    fill = np.empty(n_rows, np.int64)
    for i in range(n_rows):
        fill[i] = indptr[i]
        indptr[i + 1] += indptr[i]
    indices = np.empty(nnz, cols.dtype)
    for q in range(nnz):
        p = by_col[q]
        i = rows[p]
        indices[fill[i]] = cols[p]
        fill[i] += 1
    return indptr, indices


@njit(**PARALLEL)
def csr_matmul(indptr, indices, data, B):
    """Product of a CSR matrix with a dense matrix, parallel over the rows of the CSR.

    Parameters
    ----------
    indptr : ndarray of int, shape (n_rows + 1,)
    indices : ndarray of int, shape (nnz,)
        Column indices in ``[0, B.shape[0])``.
    data : ndarray, shape (nnz,)
        Values (same dtype as ``B``).
    B : ndarray, shape (n_cols, c)
        C-contiguous dense factor.

    Returns
    -------
    out : ndarray, shape (n_rows, c), dtype of ``B``
        ``A @ B`` with ``A = csr_matrix((data, indices, indptr))``; duplicate column
        entries in a row are summed.

    Notes
    -----
    O(nnz · c) time, O(n_rows · c) memory (the output). Each output row is written by one
    thread only, so the result is exactly independent of the thread count.

    Cost: reads ``12 nnz + 8 n_rows`` bytes of the CSR arrays and writes ``n_rows c b`` (``b``
    the itemsize); gathers a row of ``B`` per stored entry (``nnz c b`` bytes, from cache while
    ``B`` fits there); ``2 nnz c`` flops.
    """
    if not valid_csr(indptr, indices, data, indptr.shape[0] - 1, B.shape[0]):
        raise ValueError("csr_matmul: (indptr, indices, data) must be a valid CSR structure with "
                         "column indices in [0, B.shape[0])")
    n_rows = indptr.shape[0] - 1
    out = _zeros_like_rows(n_rows, B)
    for i in prange(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = data[p]
            for k in range(B.shape[1]):
                out[i, k] += w * B[j, k]
    return out


@njit(**SERIAL, inline="always")   # compiled into its two callers, not apart
def _add_rows_by_side(V_all, indices, start, stop, split, low, high, high_weight):
    """``low += V_all[j]`` for ``j < split``, else ``high += high_weight * V_all[j]``, over
    ``j = indices[p]``, ``start <= p < stop``, one row after another.

    Four rows at a time where they fall on one side (the patterns' columns are sorted within
    a row, so all groups but at most one do): their loads are independent and overlap,
    where one row after another waits on each gather. Each entry is still added in the order
    of ``p``, so the sums are bit for bit those of the plain loop.
    """
    c = V_all.shape[1]
    p = start
    while p < stop:
        j0 = indices[p]
        if p + 4 <= stop:
            j1 = indices[p + 1]
            j2 = indices[p + 2]
            j3 = indices[p + 3]
            n_low = (j0 < split) + (j1 < split) + (j2 < split) + (j3 < split)
            if n_low == 4:
                for k in range(c):
                    low[k] = (((low[k] + V_all[j0, k]) + V_all[j1, k]) + V_all[j2, k]) \
                        + V_all[j3, k]
                p += 4
                continue
            if n_low == 0:
                w = high_weight
                for k in range(c):
                    high[k] = (((high[k] + w * V_all[j0, k]) + w * V_all[j1, k])
                               + w * V_all[j2, k]) + w * V_all[j3, k]
                p += 4
                continue
        # the last rows, or a group across the split: one row
        if j0 < split:
            for k in range(c):
                low[k] += V_all[j0, k]
        else:
            for k in range(c):
                high[k] += high_weight * V_all[j0, k]
        p += 1


class ConstraintTerms(NamedTuple):
    """The constraint part of one factor update (all arrays; empty arrays mean "none").

    For the ``V_a`` update the must-link and cannot-link patterns of view ``a`` are CSR
    matrices (no values, unit weights) whose columns index the rows of ``V_all``, all views'
    ``V`` stacked (row ``j`` of view ``b`` is column ``offset_b + j``); the degree vectors
    multiply the view's own ``V_a``. For a ``U`` update (no constraints) every field is a
    zero-length array of the same dtype, so one compiled specialisation serves both updates.

    Attributes
    ----------
    V_all : ndarray, shape (N, c)
        All views' ``V`` stacked (read only: the update writes a new array).
    must_indptr, must_indices : ndarrays of int, shapes (n_a + 1,), (nnz_m,)
        Must-link pattern (a repeated entry counts twice), e.g. from :func:`pattern_csr`.
    cannot_indptr, cannot_indices : ndarrays of int, shapes (n_a + 1,), (nnz_c,)
        Cannot-link pattern.
    deg_num, deg_den : ndarrays, shape (n_a,)
        Degree terms of the numerator and the denominator (dtype of ``V_all``).
    deg_pen : ndarray, shape (n_a,)
        Weight of ``‖F_new[i]‖²`` in the penalty part the update returns (dtype of
        ``V_all``); the solver passes the number of inter-view must-link pairs of row ``i``.
    split : ndarray of int64, shape (1,) or (0,)
        ``split[0]``: pattern columns below it (the views updated earlier in the sweep, whose
        rows of ``V_all`` are final) enter the penalty part the update returns; empty: none.
    """

    V_all: np.ndarray
    must_indptr: np.ndarray
    must_indices: np.ndarray
    cannot_indptr: np.ndarray
    cannot_indices: np.ndarray
    deg_num: np.ndarray
    deg_den: np.ndarray
    deg_pen: np.ndarray
    split: np.ndarray


@njit(**PARALLEL)
def multiplicative_update(F, numer, gram, terms, beta, eps):
    """One multiplicative update of a factor, numerator, denominator and guard in one pass.

    ``F_new = F ⊙ (numer + β P_num + ε) / (F gram + β P_den + ε)`` with the constraint terms
    ``P_num = M V_all + diag(deg_num) F`` and ``P_den = C V_all + diag(deg_den) F`` when
    ``terms`` holds patterns (``M``, ``C`` from ``terms``), and ``P_num = P_den = 0`` when its
    arrays are empty. The ``U_a`` update is ``F = U_a``, ``numer = X_aᵀ V_a``,
    ``gram = V_aᵀ V_a``; the ``V_a`` update is ``F = V_a``, ``numer = X_a U_a``,
    ``gram = U_aᵀ U_a`` and the constraint terms of every block touching view ``a``
    (``M^{ab} V_b``, ``C^{ab} V_b``, ``D^{ab} V_a`` of docs/algorithms.md §4; intra-view
    pairs enter symmetrised, see ``fastmv._cmvnmf``).

    It also returns the part of the pair penalty that the rows gathered for the update
    already give: with ``M_<``, ``C_<`` the pattern entries whose column is below
    ``terms.split[0]``,
    ``Σ_i deg_pen[i] ‖F_new[i]‖² − 2 F_new[i]·(M_< V_all)[i] + 2 F_new[i]·(C_< V_all)[i]``.
    Summed over the views of a Gauss–Seidel sweep (``split`` = the view's offset, ``deg_pen``
    = its rows' numbers of inter-view must-links) this is the inter-view penalty after the sweep,
    ``Σ_must ‖V_i − V_j‖² + 2 Σ_cannot V_i·V_j`` expanded, without a second pass over the pairs.

    Parameters
    ----------
    F : ndarray, shape (n, c)
        Nonnegative factor (not modified).
    numer : ndarray, shape (n, c)
        Data part of the numerator (nonnegative).
    gram : ndarray, shape (c, c)
        Gram matrix of the other factor.
    terms : ConstraintTerms
        Constraint patterns and degrees (``V_all`` may contain ``F`` as a row block: all
        reads see the values before the update).
    beta : float
        Weight of the constraint terms.
    eps : float
        Guard added to numerator and denominator. Adding it to both keeps the update the
        minimiser of the Lee–Seung auxiliary function (with the diagonal enlarged by
        ``ε / F``), so the objective is still non-increasing; it also keeps ``0 / 0`` out.

    Returns
    -------
    F_new : ndarray, shape (n, c), dtype of ``F``
    penalty : float
        The penalty part above (float64 sums; ``0.0`` without patterns or with an empty
        ``split``), not multiplied by ``beta``.

    Notes
    -----
    O(n c² + (nnz_m + nnz_c) c) time, parallel over blocks of rows, O(c) scratch per block;
    every row is written by one thread only and the blocks' penalty parts are added in
    order (thread-count independent). Moves the four n × c arrays once plus the gathered
    rows of ``V_all``. One kernel for both factors and with or without constraints: each
    ``parallel=True`` specialisation costs seconds to compile on first use.

    An entry of ``F_new`` below the dtype's smallest normal number is set to zero: entries
    that the updates drive towards zero would otherwise pass through subnormal numbers,
    whose arithmetic is many times slower (docs/algorithms.md §4.5, item 8), and a zero
    stays zero under multiplicative updates, as such an entry would in effect. Added to any
    normal number such an entry changes nothing, so only a row whose every entry is that
    small (its label is then the argmax of rounding noise) can read differently.

    Cost: moves ``3 n c b + c² b`` bytes (``b`` the itemsize: ``F`` and ``numer`` read, the
    result written) plus ``(nnz_m + nnz_c)(8 + c b)`` for the gathered rows of ``V_all``;
    ``2 n c² + 2 (nnz_m + nnz_c) c + ~10 n c`` flops.
    """
    n, c = F.shape
    if numer.shape[0] != n or numer.shape[1] != c or gram.shape[0] != c or gram.shape[1] != c:
        raise ValueError("multiplicative_update: numer must have the shape (n, c) of F and "
                         "gram (c, c)")
    # each field read once, not at every use (a reference count each to Numba), and not by
    # unpacking ``terms`` (which copies the whole tuple)
    V_all = terms.V_all
    must_ptr = terms.must_indptr
    must_idx = terms.must_indices
    cannot_ptr = terms.cannot_indptr
    cannot_idx = terms.cannot_indices
    deg_num = terms.deg_num
    deg_den = terms.deg_den
    deg_pen = terms.deg_pen
    below = terms.split
    constrained = must_ptr.shape[0] > 0
    with_penalty = below.shape[0] > 0
    if constrained:
        n_all = V_all.shape[0]
        if (V_all.shape[1] != c or deg_num.shape[0] < n or deg_den.shape[0] < n
                or (with_penalty and deg_pen.shape[0] < n)
                or not valid_ptr(must_ptr, n, must_idx.shape[0])
                or not valid_ptr(cannot_ptr, n, cannot_idx.shape[0])
                or not in_range(must_idx[:must_ptr[n]], 0, n_all)
                or not in_range(cannot_idx[:cannot_ptr[n]], 0, n_all)):
            raise ValueError("multiplicative_update: the constraint patterns must be CSR "
                             "structures of n rows with columns in [0, V_all rows), the "
                             "degrees have n entries and V_all c columns")
    out = np.empty((n, c), F.dtype)
    # entries that fall below the smallest normal number are set to zero (see Notes)
    smallest_normal = np.finfo(F.dtype).tiny
    split = below[0] if with_penalty else 0
    n_blocks = (n + _ROW_BLOCK - 1) // _ROW_BLOCK
    partial = np.empty(n_blocks, np.float64)  # every block writes its entry
    for b in prange(n_blocks):
        den = np.empty(c, F.dtype)
        num = np.empty(c, F.dtype)
        acc = np.empty(c, np.float64)
        # sums over the columns below split, for the penalty part
        m_low = np.empty(c, F.dtype)
        c_low = np.empty(c, F.dtype)
        pen = 0.0
        stop = (b + 1) * _ROW_BLOCK
        stop = stop if stop < n else n  # min(), which Numba would compile apart
        for i in range(b * _ROW_BLOCK, stop):
            if c >= _GRAM_BY_ROWS_MIN_C:
                for k in range(c):
                    acc[k] = 0.0
                for l in range(c):
                    f_il = F[i, l]
                    for k in range(c):
                        acc[k] += f_il * gram[l, k]
                for k in range(c):
                    den[k] = acc[k]
            else:
                for k in range(c):
                    s = 0.0
                    for l in range(c):
                        s += F[i, l] * gram[l, k]
                    den[k] = s
            for k in range(c):
                num[k] = numer[i, k]
            if constrained:
                for k in range(c):
                    m_low[k] = 0.0
                    c_low[k] = 0.0
                dn = deg_num[i]
                dd = deg_den[i]
                for k in range(c):
                    num[k] += beta * dn * F[i, k]
                    den[k] += beta * dd * F[i, k]
                _add_rows_by_side(V_all, must_idx, must_ptr[i], must_ptr[i + 1], split,
                                  m_low, num, beta)
                _add_rows_by_side(V_all, cannot_idx, cannot_ptr[i], cannot_ptr[i + 1], split,
                                  c_low, den, beta)
                q = 0.0
                dp = np.float64(deg_pen[i]) if with_penalty else 0.0
                for k in range(c):
                    f = F[i, k] * ((num[k] + beta * m_low[k] + eps)
                                   / (den[k] + beta * c_low[k] + eps))
                    out[i, k] = f if f >= smallest_normal else 0.0
                    v = np.float64(out[i, k])
                    q += v * (dp * v + 2.0 * (np.float64(c_low[k]) - np.float64(m_low[k])))
                pen += q
            else:
                for k in range(c):
                    f = F[i, k] * ((num[k] + eps) / (den[k] + eps))
                    out[i, k] = f if f >= smallest_normal else 0.0
        partial[b] = pen
    total = 0.0
    for b in range(n_blocks):
        total += partial[b]
    return out, total


#: :func:`multiplicative_update` on the calling thread, bit for bit: what a small problem
#: (or one Numba thread) runs, so that it never compiles the parallel kernel.
multiplicative_update_serial = njit(**SERIAL)(serial_copy(
    multiplicative_update, "multiplicative_update_serial",
    "One multiplicative update on the calling thread (``multiplicative_update`` compiled "
    "serially: the same row blocks in the same order, the same result bit for bit)."))


@njit(**SERIAL)
def constraint_penalty(V_all, must, cannot):
    """Constraint part of the CMVNMF objective over all blocks.

    ``Σ_{(i,j) ∈ must} ‖V_all[i] − V_all[j]‖²``
    ``+ 2 Σ_{(i,j) ∈ cannot} V_all[i] · V_all[j]``,
    with pairs given as global row indices into the stacked ``V_all`` (``Σ_{a>b} Δ_ab`` of
    docs/algorithms.md §4, intra-view blocks included).

    Parameters
    ----------
    V_all : ndarray, shape (N, c)
    must : ndarray of int, shape (p_m, 2)
    cannot : ndarray of int, shape (p_c, 2)

    Returns
    -------
    penalty : float

    Notes
    -----
    O((p_m + p_c) c) time over fixed chunks of 4096 pairs whose partial sums are added in
    order. Serial: it runs once per solve, and per sweep only for intra-view pairs (the
    updates return the inter-view part), so a parallel version would cost more to compile
    (about a second) than it saves. Accumulates in float64.

    Cost: reads ``(p_m + p_c)(16 + 2 c b)`` bytes (``b`` the itemsize: each pair and its two
    gathered rows); ``~3 (p_m + p_c) c`` flops.
    """
    if ((must.shape[0] > 0 and must.shape[1] != 2) or (cannot.shape[0] > 0 and cannot.shape[1] != 2)
            or not in_range(must, 0, V_all.shape[0]) or not in_range(cannot, 0, V_all.shape[0])):
        raise ValueError("constraint_penalty: must and cannot must be (p, 2) pairs of rows of "
                         "V_all")
    c = V_all.shape[1]
    p_m = must.shape[0]
    p_c = cannot.shape[0]
    n_m = (p_m + _PAIR_CHUNK - 1) // _PAIR_CHUNK
    n_c = (p_c + _PAIR_CHUNK - 1) // _PAIR_CHUNK
    # the chunks' sums added in chunk order as they come (serial: no per-chunk array)
    total = 0.0
    for b in range(n_m + n_c):
        s = 0.0
        # one sum per pair, then the pairs in order: the pairs' short sums are independent
        # (the CPU overlaps them) instead of one long chain of dependent additions
        if b < n_m:
            stop = (b + 1) * _PAIR_CHUNK
            # conditionals, not min(): Numba compiles min once per argument types
            stop = stop if stop < p_m else p_m
            for p in range(b * _PAIR_CHUNK, stop):
                i = must[p, 0]
                j = must[p, 1]
                q = 0.0
                for k in range(c):
                    t = np.float64(V_all[i, k]) - np.float64(V_all[j, k])
                    q += t * t
                s += q
        else:
            bb = b - n_m
            stop = (bb + 1) * _PAIR_CHUNK
            stop = stop if stop < p_c else p_c
            for p in range(bb * _PAIR_CHUNK, stop):
                i = cannot[p, 0]
                j = cannot[p, 1]
                q = 0.0
                for k in range(c):
                    q += np.float64(V_all[i, k]) * np.float64(V_all[j, k])
                s += 2.0 * q
        total += s
    return total
