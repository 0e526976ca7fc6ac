"""Kernels for MVMC (docs/algorithms.md §1): the masked residual over the observed pairs Ω and
the clipping correction of the low-rank similarity ``S = clip(Ā, 0, 1)``.

The large dense products around them (``Z @ M``, ``Zᵀ @ (R Z)``, the tiles ``F_I W F_Jᵀ``
of ``Ā`` and the products of a tile with a block of vectors) stay BLAS GEMMs in the caller.
What these kernels fuse is the irregular or memory-bound work in between, which NumPy would
only do through ``n × n`` temporaries (the naive masked residual) or several passes.
"""
import numpy as np
from numba import njit, prange

from ._checks import in_range, valid_csr, valid_ptr
from ._compile import serial_copy
from ._options import PARALLEL, REASSOC, SERIAL


@njit(**SERIAL)
def _zeros_like(Z):
    """``np.zeros_like(Z)`` as a serial helper: written inside a ``parallel=True`` kernel,
    ``np.zeros`` becomes a parfor of its own, which costs compilation time and nothing else."""
    out = np.empty(Z.shape, Z.dtype)
    out[:] = 0.0
    return out


@njit(**PARALLEL, fastmath=REASSOC)
def masked_residual_product(A, B, Z, indptr, indices, values, mirror):
    """Masked residual over Ω times ``Z``, and its squared norm, without any ``n × n`` array.

    With ``Ω`` stored as a symmetric CSR pattern (row ``i`` lists every ``j`` with
    ``(i, j) ∈ Ω``, both orders present) and ``R = R_Ω(A Bᵀ − S_ob)``:
    ``r_ij = A_i · B_j − s_ij`` for every stored entry, ``(R Z)_i = Σ_j r_ij z_j``.
    ``A Bᵀ`` must be symmetric: each residual is computed once per unordered pair and stored
    at both positions.

    MVMC calls it with a factorisation ``M = V diag(λ) Vᵀ`` of the current iterate,
    ``A = Z V diag(λ)`` and ``B = Z V`` (``A Bᵀ = Z M Zᵀ``): the iterates are PSD projections
    of about half rank, so the dot products run over ``rank(M)`` instead of ``k`` terms.

    Parameters
    ----------
    A, B : ndarray, shape (n, r)
        Factors of the low-rank part, ``A Bᵀ`` symmetric (``r`` may be 0: ``r_ij = −s_ij``).
    Z : ndarray, shape (n, k)
        The basis the residual is multiplied with. ``A``, ``B`` and ``Z`` share one dtype
        (float32 or float64).
    indptr : ndarray of int64, shape (n + 1,)
    indices : ndarray of int64, shape (nnz,)
        Column index ``j`` of each stored entry, ``0 <= j < n``; sorted within a row, no
        diagonal entries.
    values : ndarray, shape (nnz,)
        Observed similarity ``s_ij`` of each stored entry (1 must-link, 0 cannot-link);
        ``s_ij = s_ji``.
    mirror : ndarray of int64, shape (nnz,)
        Position of the entry ``(j, i)`` for the entry ``(i, j)``.

    Returns
    -------
    RZ : ndarray, shape (n, k), dtype of ``Z``
        ``R Z``. The gradient term is ``Zᵀ (R Z)`` (one GEMM in the caller).
    loss : float
        ``‖R‖_F² = Σ_stored r_ij²`` (each unordered pair counted once per stored order),
        accumulated in float64.

    Notes
    -----
    O(nnz · (r / 2 + k)) time, O(nnz + n k) memory. Two parallel passes over the rows: the
    first computes the residuals of the entries with ``j > i`` (and writes each one to its
    mirror too, a slot no other row writes), the second accumulates ``(R Z)_i`` and the loss.
    The loops are level-1 and bound by gathering rows of ``B`` and ``Z``, so a row's entries
    are taken four at a time (one load of ``A_i`` or ``(R Z)_i`` serves four neighbours), and
    each pair's residual is computed once (docs/records/mvmc.md has the measurement). Every
    row owns its output row and its partial loss, and the partial losses are summed in row
    order, so the result does not depend on the number of threads at all. Residuals are
    accumulated in float64 also for float32 input; the dot products may be reassociated
    (SIMD), which changes them only by rounding.

    Cost: compulsory traffic ``32 nnz + n (2 r + 2 k) b`` bytes (``b`` the itemsize: the
    pattern, values, mirrors and residuals; ``A``, ``B``, ``Z``, ``RZ`` once), but it gathers a
    row of ``B`` and of ``Z`` per stored entry, ``nnz (r/2 + k) b`` bytes from cache or memory;
    ``nnz (r + 2 k)`` flops. Bound by the gathers' latency.
    """
    n_m = A.shape[0]
    if (B.shape[0] != n_m or B.shape[1] != A.shape[1] or Z.shape[0] != n_m
            or not valid_csr(indptr, indices, values, n_m, n_m)
            or mirror.shape[0] < indptr[n_m] or not in_range(mirror[:indptr[n_m]], 0, indptr[n_m])):
        raise ValueError("masked_residual_product: A, B and Z must have n rows, (indptr, indices, "
                         "values) be a valid n x n CSR structure and mirror index its entries")
    n, k = Z.shape
    r = A.shape[1]
    res = np.empty(indices.size, np.float64)
    for i in prange(n):
        p = indptr[i]
        end = indptr[i + 1]
        while p < end and indices[p] < i:  # sorted: the lower part comes first
            p += 1
        while p + 4 <= end:
            j0 = indices[p]
            j1 = indices[p + 1]
            j2 = indices[p + 2]
            j3 = indices[p + 3]
            r0 = -np.float64(values[p])
            r1 = -np.float64(values[p + 1])
            r2 = -np.float64(values[p + 2])
            r3 = -np.float64(values[p + 3])
            for t in range(r):
                a = np.float64(A[i, t])
                r0 += a * np.float64(B[j0, t])
                r1 += a * np.float64(B[j1, t])
                r2 += a * np.float64(B[j2, t])
                r3 += a * np.float64(B[j3, t])
            res[p] = r0
            res[p + 1] = r1
            res[p + 2] = r2
            res[p + 3] = r3
            res[mirror[p]] = r0
            res[mirror[p + 1]] = r1
            res[mirror[p + 2]] = r2
            res[mirror[p + 3]] = r3
            p += 4
        while p < end:
            j = indices[p]
            r0 = -np.float64(values[p])
            for t in range(r):
                r0 += np.float64(A[i, t]) * np.float64(B[j, t])
            res[p] = r0
            res[mirror[p]] = r0
            p += 1
    RZ = _zeros_like(Z)
    row_loss = np.empty(n, np.float64)  # every row writes its own
    for i in prange(n):
        acc = 0.0
        p = indptr[i]
        end = indptr[i + 1]
        while p + 4 <= end:
            j0 = indices[p]
            j1 = indices[p + 1]
            j2 = indices[p + 2]
            j3 = indices[p + 3]
            r0 = res[p]
            r1 = res[p + 1]
            r2 = res[p + 2]
            r3 = res[p + 3]
            acc += r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3
            for t in range(k):
                RZ[i, t] += r0 * Z[j0, t] + r1 * Z[j1, t] + r2 * Z[j2, t] + r3 * Z[j3, t]
            p += 4
        while p < end:
            j = indices[p]
            r0 = res[p]
            acc += r0 * r0
            for t in range(k):
                RZ[i, t] += r0 * Z[j, t]
            p += 1
        row_loss[i] = acc
    loss = 0.0
    for i in range(n):
        loss += row_loss[i]
    return RZ, loss


#: :func:`masked_residual_product` on the calling thread, bit for bit: MVMC runs it as one
#: task per view beside BLAS, always on one thread, so it never compiles the parallel kernel.
masked_residual_product_serial = njit(**SERIAL, fastmath=REASSOC)(serial_copy(
    masked_residual_product, "masked_residual_product_serial",
    "Masked residual over Ω times ``Z`` on the calling thread (``masked_residual_product`` "
    "compiled serially: the same loops, the same result bit for bit).",
    inline=(_zeros_like,)))


@njit(**SERIAL, fastmath=REASSOC)
def clip_correction(A):
    """Turn a tile of ``Ā`` into the correction ``N = clip(Ā, 0, 1) − Ā``, in place.

    ``S = Ā + N``: ``N`` is zero wherever ``0 <= Ā_ij <= 1`` and usually sparse, so products
    with ``S`` split into a cheap low-rank part and a sparse part.

    Parameters
    ----------
    A : ndarray, shape (p, q)
        A tile of ``Ā``, float32 or float64; overwritten with ``N``.

    Returns
    -------
    sumsq : float
        ``Σ clip(Ā_ij, 0, 1)²`` over the tile (float64): the tile's share of ``‖S‖_F²``.
    row_nnz : ndarray of int64, shape (p,)
        Number of nonzero entries of ``N`` in each row (the CSR row counts for
        :func:`dense_to_csr`).

    Notes
    -----
    One pass over the tile, O(p q) time, per-row partial sums added in row order. The tile
    must be finite. Serial: the tiles (384 × 384 by default) run as independent tasks, one
    per thread (``fastmv._core._threads.task_map``), and each is below the size where a parallel
    launch pays; a ``parallel=True`` kernel would only add about a second to the first
    call's compilation.

    Cost: moves ``2 p q b`` bytes (``b`` the itemsize; read and written in place) and does
    ``~3 p q`` flops; tiles are sized to stay in cache.
    """
    p, q = A.shape
    row_ss = np.empty(p, np.float64)
    row_ss[:] = 0.0
    row_nnz = np.empty(p, np.int64)
    row_nnz[:] = 0
    for i in range(p):
        ss = 0.0
        cnt = 0
        for j in range(q):  # branch-free, so that it vectorises
            a = A[i, j]
            s = min(max(a, 0.0), 1.0)
            d = s - a
            A[i, j] = d
            ss += np.float64(s) * np.float64(s)
            cnt += d != 0.0
        row_ss[i] = ss
        row_nnz[i] = cnt
    sumsq = 0.0
    for i in range(p):
        sumsq += row_ss[i]
    return sumsq, row_nnz


@njit(**SERIAL)
def dense_to_csr(A, indptr):
    """Column indices and values of the nonzero entries of a dense array, in CSR order.

    Parameters
    ----------
    A : ndarray, shape (p, q)
    indptr : ndarray of int64, shape (p + 1,)
        ``indptr[i + 1] − indptr[i]`` = number of nonzeros of row ``i`` (e.g. the cumulative
        sum of the ``row_nnz`` that :func:`clip_correction` returns).

    Returns
    -------
    indices : ndarray of int32, shape (indptr[-1],)
        Sorted column indices within each row.
    data : ndarray, shape (indptr[-1],), dtype of ``A``

    Notes
    -----
    O(p q) time, one pass (each row writes its own slice), so building the sparse clipping
    correction costs no more than the scan that counted it. Serial, for the reasons given
    in :func:`clip_correction`.

    Cost: reads ``p q b`` bytes (``b`` the itemsize) and writes ``nnz (4 + b)``; no flops.
    """
    if not valid_ptr(indptr, A.shape[0], A.shape[0] * A.shape[1]):
        raise ValueError("dense_to_csr: indptr must have p + 1 non-decreasing entries from 0")
    p, q = A.shape
    nnz = indptr[p]
    indices = np.empty(nnz, np.int32)
    data = np.empty(nnz, A.dtype)
    for i in range(p):
        pos = indptr[i]
        end = indptr[i + 1]
        for j in range(q):
            if pos >= end:
                break
            a = A[i, j]
            if a != 0.0:
                indices[pos] = j
                data[pos] = a
                pos += 1
    return indices, data
