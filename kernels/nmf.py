"""Kernels for CMVNMF (constrained NMF of unmapped views, ALGORITHMS.md §4).

The large products ``X_aᵀ V_a`` and ``X_a U_a`` stay BLAS GEMMs for dense views; for CSR
views :func:`csr_matmul` computes them in parallel over rows (``X_aᵀ V_a`` through a CSR copy
of ``X_aᵀ`` made once). What the other kernels fuse is the O(n c²) and O(|Ω| c) work around
those products, which NumPy / scipy.sparse would do in several passes with temporaries:

- :func:`multiplicative_update_u` / :func:`multiplicative_update_v`: numerator, denominator
  and the ε guard of one multiplicative update in a single pass, parallel over rows;
- :func:`constraint_products`: the must-link / cannot-link products ``M V`` and ``C V`` of
  every constraint block touching a view plus the degree terms, as one pattern-only CSR
  (columns index the stacked factor ``V_all`` of all views) times dense, parallel over rows;
- :func:`constraint_penalty`: the constraint part of the objective, a parallel sum over pairs
  in a fixed number of chunks (so the result does not depend on the thread count);
- :func:`pattern_csr`: builds those CSR patterns from (row, column) lists in O(nnz + n)
  (two counting sorts; columns end up sorted within each row for locality of the gathers).

Every kernel accepts float32 or float64 arrays (all of one dtype) and int32 or int64 index
arrays.
"""
import numpy as np
from numba import njit, prange

_ROW_BLOCK = 64  # rows per parallel task in the update kernels (one c-vector scratch each)
_PAIR_CHUNK = 4096  # pairs per chunk in constraint_penalty (fixed: thread-count independent)


@njit(cache=True)
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
        counts repeatedly in :func:`constraint_products`).

    Notes
    -----
    Two stable counting sorts (by column, then by row): O(nnz + n_rows + n_cols) time and
    memory, serial (a scatter). ``np.lexsort`` of the same arrays is O(nnz log nnz) and was
    a quarter of a short solver run.
    """
    nnz = rows.shape[0]
    # pass 1: entry order sorted by column
    count = np.zeros(n_cols + 1, dtype=np.int64)
    for p in range(nnz):
        count[cols[p] + 1] += 1
    for j in range(n_cols):
        count[j + 1] += count[j]
    by_col = np.empty(nnz, dtype=np.int64)
    for p in range(nnz):
        j = cols[p]
        by_col[count[j]] = p
        count[j] += 1
    # pass 2: stable by row
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for p in range(nnz):
        indptr[rows[p] + 1] += 1
    for i in range(n_rows):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    indices = np.empty(nnz, dtype=cols.dtype)
    for q in range(nnz):
        p = by_col[q]
        i = rows[p]
        indices[fill[i]] = cols[p]
        fill[i] += 1
    return indptr, indices


@njit(parallel=True, cache=True)
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
    """
    n_rows = indptr.shape[0] - 1
    c = B.shape[1]
    out = np.zeros((n_rows, c), dtype=B.dtype)
    for i in prange(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = data[p]
            for k in range(c):
                out[i, k] += w * B[j, k]
    return out


@njit(parallel=True, cache=True)
def multiplicative_update_u(U, XtV, VtV, eps):
    """One multiplicative update of a view's basis ``U``, in place.

    ``U ← U ⊙ (XᵀV + ε) / (U VᵀV + ε)``: numerator, denominator and guard in one pass.

    Parameters
    ----------
    U : ndarray, shape (d, c)
        Nonnegative basis; overwritten with the update.
    XtV : ndarray, shape (d, c)
        ``Xᵀ V`` (nonnegative).
    VtV : ndarray, shape (c, c)
        ``Vᵀ V``.
    eps : float
        Guard added to numerator and denominator. Adding it to both keeps the update the
        minimiser of the Lee–Seung auxiliary function (with the diagonal enlarged by
        ``ε / U``), so the objective is still non-increasing; it also keeps ``0 / 0`` out.

    Notes
    -----
    O(d c²) time, parallel over blocks of rows, O(c) scratch per block; every row is
    updated by one thread only (thread-count independent).
    """
    d, c = U.shape
    n_blocks = (d + _ROW_BLOCK - 1) // _ROW_BLOCK
    for b in prange(n_blocks):
        den = np.empty(c, dtype=U.dtype)
        for i in range(b * _ROW_BLOCK, min(d, (b + 1) * _ROW_BLOCK)):
            for k in range(c):
                s = 0.0
                for l in range(c):
                    s += U[i, l] * VtV[l, k]
                den[k] = s
            for k in range(c):
                U[i, k] = U[i, k] * ((XtV[i, k] + eps) / (den[k] + eps))


@njit(parallel=True, cache=True)
def multiplicative_update_v(V, XU, UtU, P_num, P_den, beta, eps):
    """One multiplicative update of a view's indicator matrix ``V``, in place.

    ``V ← V ⊙ (X U + β P_num + ε) / (V UᵀU + β P_den + ε)`` in one pass, where ``P_num`` /
    ``P_den`` are the constraint terms from :func:`constraint_products` (computed from the
    current ``V`` of every view before the call).

    Parameters
    ----------
    V : ndarray, shape (n, c)
        Nonnegative indicator matrix; overwritten with the update.
    XU : ndarray, shape (n, c)
        ``X U`` (nonnegative).
    UtU : ndarray, shape (c, c)
        ``Uᵀ U``.
    P_num, P_den : ndarray, shape (n, c)
        Constraint parts of the numerator and the denominator (nonnegative).
    beta : float
        Weight of the constraint terms.
    eps : float
        Guard added to numerator and denominator (see :func:`multiplicative_update_u`).

    Notes
    -----
    O(n c²) time, parallel over blocks of rows, O(c) scratch per block, no temporaries of
    size n (NumPy needs four); thread-count independent.
    """
    n, c = V.shape
    n_blocks = (n + _ROW_BLOCK - 1) // _ROW_BLOCK
    for b in prange(n_blocks):
        den = np.empty(c, dtype=V.dtype)
        for i in range(b * _ROW_BLOCK, min(n, (b + 1) * _ROW_BLOCK)):
            for k in range(c):
                s = 0.0
                for l in range(c):
                    s += V[i, l] * UtU[l, k]
                den[k] = s + beta * P_den[i, k]
            for k in range(c):
                V[i, k] = V[i, k] * ((XU[i, k] + beta * P_num[i, k] + eps) / (den[k] + eps))


@njit(parallel=True, cache=True)
def constraint_products(V_all, V_a, m_indptr, m_indices, c_indptr, c_indices, deg_num, deg_den):
    """Constraint parts of the ``V_a`` update: sparse products plus degree terms.

    With the must-link and cannot-link patterns of view ``a`` stored as CSR matrices whose
    columns index the rows of ``V_all`` (all views' ``V`` stacked; a constraint with row ``j``
    of view ``b`` is column ``offset_b + j``),

    ``P_num = M V_all + diag(deg_num) V_a`` and ``P_den = C V_all + diag(deg_den) V_a``.

    For an inter-view block ``(a, b)`` the caller puts ``(i, offset_b + j)`` into ``M`` (``C``)
    and adds the must-link degree to ``deg_den``: this is ``M^{ab} V_b``, ``C^{ab} V_b`` and
    ``D^{ab} V_a`` of ALGORITHMS.md §4. Intra-view pairs enter symmetrised (see
    ``fastmv._cmvnmf``).

    Parameters
    ----------
    V_all : ndarray, shape (N, c)
        The stacked ``V`` of all views.
    V_a : ndarray, shape (n_a, c)
        The ``V`` of the view being updated (a row block of ``V_all``).
    m_indptr, m_indices : ndarrays of int, shapes (n_a + 1,), (nnz_m,)
        Must-link pattern (unit weights; a repeated entry counts twice), e.g. from
        :func:`pattern_csr`.
    c_indptr, c_indices : ndarrays of int, shapes (n_a + 1,), (nnz_c,)
        Cannot-link pattern.
    deg_num, deg_den : ndarrays, shape (n_a,)
        Degree terms of the numerator and the denominator (dtype of ``V_all``).

    Returns
    -------
    P_num, P_den : ndarrays, shape (n_a, c)

    Notes
    -----
    O((nnz_m + nnz_c + n_a) · c) time, parallel over the rows of view ``a``, memory the two
    outputs; thread-count independent. The reads of ``V_all`` are gathers: columns are
    sorted within each row for locality.
    """
    n_a, c = V_a.shape
    P_num = np.empty((n_a, c), dtype=V_a.dtype)
    P_den = np.empty((n_a, c), dtype=V_a.dtype)
    for i in prange(n_a):
        dn = deg_num[i]
        dd = deg_den[i]
        for k in range(c):
            P_num[i, k] = dn * V_a[i, k]
            P_den[i, k] = dd * V_a[i, k]
        for p in range(m_indptr[i], m_indptr[i + 1]):
            j = m_indices[p]
            for k in range(c):
                P_num[i, k] += V_all[j, k]
        for p in range(c_indptr[i], c_indptr[i + 1]):
            j = c_indices[p]
            for k in range(c):
                P_den[i, k] += V_all[j, k]
    return P_num, P_den


@njit(parallel=True, cache=True)
def constraint_penalty(V_all, must, cannot):
    """Constraint part of the CMVNMF objective over all blocks.

    ``Σ_{(i,j) ∈ must} ‖V_all[i] − V_all[j]‖²``
    ``+ 2 Σ_{(i,j) ∈ cannot} V_all[i] · V_all[j]``,
    with pairs given as global row indices into the stacked ``V_all`` (``Σ_{a>b} Δ_ab`` of
    ALGORITHMS.md §4, intra-view blocks included).

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
    O((p_m + p_c) c) time, parallel over fixed chunks of 4096 pairs whose partial sums are
    added in order, so the value does not depend on the thread count. Accumulates in float64.
    """
    c = V_all.shape[1]
    p_m = must.shape[0]
    p_c = cannot.shape[0]
    n_m = (p_m + _PAIR_CHUNK - 1) // _PAIR_CHUNK
    n_c = (p_c + _PAIR_CHUNK - 1) // _PAIR_CHUNK
    partial = np.zeros(n_m + n_c, dtype=np.float64)
    for b in prange(n_m + n_c):
        s = 0.0
        if b < n_m:
            for p in range(b * _PAIR_CHUNK, min(p_m, (b + 1) * _PAIR_CHUNK)):
                i = must[p, 0]
                j = must[p, 1]
                for k in range(c):
                    t = np.float64(V_all[i, k]) - np.float64(V_all[j, k])
                    s += t * t
        else:
            bb = b - n_m
            for p in range(bb * _PAIR_CHUNK, min(p_c, (bb + 1) * _PAIR_CHUNK)):
                i = cannot[p, 0]
                j = cannot[p, 1]
                for k in range(c):
                    s += 2.0 * np.float64(V_all[i, k]) * np.float64(V_all[j, k])
        partial[b] = s
    total = 0.0
    for b in range(n_m + n_c):
        total += partial[b]
    return total
