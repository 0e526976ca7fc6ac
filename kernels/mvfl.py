"""Kernels of MVFL: joint view/feature selection with partially constrained cluster labels.

docs/algorithms.md §2. Notation: ``W`` is ``d × c`` (features in rows, views stacked by rows with
boundaries ``view_ptr``: view ``v`` owns rows ``view_ptr[v]:view_ptr[v+1]``), ``F`` and ``Z``
(the regression output ``XW + 1bᵀ``) are ``n × c``, and the pairwise-constraint matrix
``I_p`` (``-1`` must-link, ``+1`` cannot-link, symmetric) is given in CSR form
``(indptr, indices, data)``.

- :func:`weight_norms` — group norms ``‖w_k^v‖`` per (view, cluster) and row norms ``‖w^i‖``
  with the ε guard ``sqrt(‖·‖² + ε²)``.
- :func:`irls_diagonal` — the reweighting diagonals ``λ1 P_k + λ2 Q`` of the ``W`` step.
- :func:`cholesky_solve` — the ``c`` Cholesky solves of the ``W`` step in one call.
- :func:`sparse_weighted_gram` — ``X D_k⁻¹ Xᵀ`` for all clusters at once from CSR ``X``
  (the ``n × n`` matrices of the Woodbury ``W`` step for text views).
- :func:`centre_woodbury_lower` — their double centring plus the identity, lower triangle,
  in place.
- :func:`pair_gram` — ``Fᵀ I_p F`` (``c × c``) without forming ``I_p F``.
- :func:`multiplicative_f_update` — the fused multiplicative ``F`` update (paper eq. 14, in the
  form multiplied through by ``λ3``) with the sparse ``I_p F`` product inside, parallel over rows.
- :func:`labelled_rows_update` — the closed form of the labelled rows (paper eq. 18).

Every reduction runs over a fixed partition of its loop, so results do not depend on the
number of threads beyond floating-point rounding.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._checks import in_range, valid_csr, valid_ptr
from ._options import PARALLEL, REASSOC, SERIAL
from ._partition import n_parts, part_range

__all__ = [
    "weight_norms",
    "irls_diagonal",
    "cholesky_solve",
    "sparse_weighted_gram",
    "centre_woodbury_lower",
    "pair_gram",
    "multiplicative_f_update",
    "labelled_rows_update",
]

@njit(**SERIAL)
def weight_norms(W, view_ptr, eps):
    """Group norms per (view, cluster) and row norms of ``W``, with the ε guard.

    Parameters
    ----------
    W : ndarray, shape (d, c), float32 or float64
        Projection matrix; rows are features, views stacked by rows.
    view_ptr : ndarray, shape (m + 1,), int64
        View boundaries: view ``v`` owns rows ``view_ptr[v]:view_ptr[v + 1]``
        (``view_ptr[0] == 0``, ``view_ptr[m] == d``, non-decreasing).
    eps : float
        Guard: every norm is returned as ``sqrt(‖·‖² + eps²)`` (``eps = 0`` gives the exact
        norms), so reweighting by ``1 / (2 norm)`` never divides by zero. This is the smoothed
        norm for which the IRLS ``W`` step is exactly monotone.

    Returns
    -------
    groups : ndarray, shape (m, c), dtype of ``W``
        ``groups[v, k] = sqrt(Σ_{i in view v} W[i, k]² + eps²)``.
    rows : ndarray, shape (d,), dtype of ``W``
        ``rows[i] = sqrt(Σ_k W[i, k]² + eps²)``.

    Notes
    -----
    Time O(d c), memory O(d + m c). Serial: ``d c`` is far below the work that pays for
    waking the thread pool (a parallel launch after the BLAS calls of the ``W`` step: see
    docs/records/mvfl.md).

    Cost: reads ``d c b`` bytes (``b`` the itemsize) and writes ``(d + m c) b``; ``2 d c``
    flops.
    """
    if not valid_ptr(view_ptr, view_ptr.shape[0] - 1, W.shape[0]) or view_ptr[-1] != W.shape[0]:
        raise ValueError("weight_norms: view_ptr must rise from 0 to W.shape[0]")
    d, c = W.shape
    m = view_ptr.shape[0] - 1
    e2 = eps * eps
    rows = np.empty(d, W.dtype)
    for i in range(d):
        s = 0.0
        for k in range(c):
            s += W[i, k] * W[i, k]
        rows[i] = np.sqrt(s + e2)
    groups = np.empty((m, c), W.dtype)
    for t in range(m * c):
        v = t // c
        k = t - v * c
        s = 0.0
        for i in range(view_ptr[v], view_ptr[v + 1]):
            s += W[i, k] * W[i, k]
        groups[v, k] = np.sqrt(s + e2)
    return groups, rows


@njit(**SERIAL)
def irls_diagonal(groups, rows, view_ptr, lam1, lam2):
    """Diagonals ``λ1 P_k + λ2 Q`` of the reweighted ``W`` step, one row per cluster.

    Parameters
    ----------
    groups : ndarray, shape (m, c)
        (Guarded) group norms ``‖w_k^v‖`` from :func:`weight_norms`; must be positive where
        ``lam1 > 0``.
    rows : ndarray, shape (d,)
        (Guarded) row norms ``‖w^i‖``; must be positive where ``lam2 > 0``.
    view_ptr : ndarray, shape (m + 1,), int64
        View boundaries (see :func:`weight_norms`).
    lam1, lam2 : float
        Weights of the group (view-selection) and row (feature-selection) penalties, ``>= 0``.

    Returns
    -------
    D : ndarray, shape (c, d), dtype of ``rows``
        ``D[k, i] = lam1 / (2 groups[v(i), k]) + lam2 / (2 rows[i])`` where ``v(i)`` is the view
        of feature ``i``; row ``k`` (contiguous) is the diagonal of cluster ``k``'s system.
        A zero weight contributes nothing (its norm is not read).

    Notes
    -----
    Time O(d c), memory O(d c). Serial, like :func:`weight_norms`.

    Cost: reads ``(m c + d) b`` bytes (``b`` the itemsize) and writes ``c d b``; ``~3 c d``
    flops.
    """
    if (view_ptr.shape[0] != groups.shape[0] + 1
            or not valid_ptr(view_ptr, groups.shape[0], rows.shape[0])
            or view_ptr[-1] != rows.shape[0]):
        raise ValueError("irls_diagonal: view_ptr must have m + 1 entries rising from 0 to "
                         "len(rows)")
    m, c = groups.shape
    d = rows.shape[0]
    D = np.empty((c, d), rows.dtype)
    v = 0
    for i in range(d):
        # the last view starting at or before i (np.searchsorted(view_ptr, i, "right") - 1,
        # which compiles four library functions on a first call)
        while view_ptr[v + 1] <= i:
            v += 1
        q = 0.5 * lam2 / rows[i] if lam2 != 0.0 else 0.0
        for k in range(c):
            p = 0.5 * lam1 / groups[v, k] if lam1 != 0.0 else 0.0
            D[k, i] = p + q
    return D


@njit(**SERIAL, fastmath=REASSOC)
def cholesky_solve(L, R):
    """``S[:, k] = (L_k L_kᵀ)⁻¹ R[:, k]`` for every column: the ``c`` systems of the ``W`` step.

    Parameters
    ----------
    L : ndarray, shape (p, d, d), C order
        Cholesky factors: the lower triangle of ``L[j]`` (diagonal included) is ``L_j``; the
        strict upper triangle is not read. ``p == c``: column ``k`` uses ``L[k]``; ``p == 1``:
        one factor serves every column (systems that share their diagonal).
    R : ndarray, shape (d, c)
        Right-hand sides, one per column.

    Returns
    -------
    S : ndarray, shape (d, c), dtype of ``R``
        The solutions (forward substitution with ``L_k``, then backward with ``L_kᵀ``).

    Notes
    -----
    Time O(c d²), memory O(d) besides the output. Serial: MVFL's joint ``F`` step calls this
    once per trial point with ``d`` in the hundreds, where one call on one thread beats ``c``
    LAPACK ``potrs`` calls (docs/records/mvfl.md). The forward sums run as reassociable dot
    products (vectorised; the rounding
    differs from ``potrs`` at the 1e-16 level, is deterministic and does not depend on the
    thread count).

    Cost: reads each used triangle twice, ``c d² b`` bytes (``b`` the itemsize; from cache
    when a factor fits in L2), writes ``d c b``; ``2 c d²`` flops.
    """
    if (L.shape[1] != R.shape[0] or L.shape[2] != R.shape[0]
            or (L.shape[0] != 1 and L.shape[0] != R.shape[1])):
        raise ValueError("cholesky_solve: L must have shape (1 or c, d, d) for R of shape (d, c)")
    d, c = R.shape
    p = L.shape[0]
    S = np.empty((d, c), R.dtype)
    y = np.empty(d, np.float64)
    for k in range(c):
        Lk = L[k if p > 1 else 0]
        for i in range(d):  # L y = r: row i of L by a dot product
            s = 0.0
            for j in range(i):
                s += Lk[i, j] * y[j]
            y[i] = (R[i, k] - s) / Lk[i, i]
        for j in range(d - 1, -1, -1):  # Lᵀ s = y: row j of L scattered (no strided column)
            sj = y[j] / Lk[j, j]
            y[j] = sj
            for i in range(j):
                y[i] -= Lk[j, i] * sj
        for i in range(d):
            S[i, k] = y[i]
    return S


@njit(**PARALLEL)
def sparse_weighted_gram(indptr, indices, data, t_indptr, t_indices, t_data, dinv):
    """``K[k] = X diag(dinv[k]) Xᵀ`` for every ``k``, for a CSR matrix ``X``.

    Parameters
    ----------
    indptr, indices, data : ndarrays
        CSR arrays of ``X`` (``n × d``).
    t_indptr, t_indices, t_data : ndarrays
        CSR arrays of ``Xᵀ`` (``d × n``), i.e. the CSC form of ``X``.
    dinv : ndarray, shape (c, d)
        One diagonal weight vector per cluster.

    Returns
    -------
    K : ndarray, shape (c, n, n), dtype of ``dinv``
        Symmetric matrices ``X diag(dinv[k]) Xᵀ`` (dense: ``n × n`` is what the Woodbury
        system needs).

    Notes
    -----
    Time O(c Σ_f nnz(X[:, f])² / 2): one pass over the sparsity pattern serves all ``c``
    clusters, where ``c`` separate sparse products would traverse it ``c`` times and
    allocate sparse intermediates. Row ``i`` accumulates only the entries ``j <= i`` (with
    the columns of ``Xᵀ`` sorted, each scan stops at ``i``), and the upper triangle is
    copied from the lower one: entry ``(i, j)`` is the sum over the shared features in
    increasing order of the same products as entry ``(j, i)``, so the copy is the value a
    full row pass would compute, bit for bit. Memory O(c n²) for the output plus O(n c) per
    thread. Parallel over rows ``i`` of ``K`` (each row, then each column, is written by one
    thread only).

    Cost: reads ``24 nnz`` bytes (``X`` and ``Xᵀ`` in CSR) and ``c d b`` (``b`` the itemsize),
    writes ``c n² b`` (half of it copied within the output); ``c Σ_f nnz(X[:, f])²`` flops.
    """
    n_x = indptr.shape[0] - 1
    if (n_x < 0 or not valid_csr(indptr, indices, data, n_x, dinv.shape[1])
            or not valid_csr(t_indptr, t_indices, t_data, dinv.shape[1], n_x)):
        raise ValueError("sparse_weighted_gram: X and X.T must be valid CSR structures of "
                         "shapes (n, d) and (d, n), d = dinv.shape[1]")
    c, d = dinv.shape
    n = indptr.shape[0] - 1
    ordered = _rows_sorted(t_indptr, t_indices)
    dT = np.ascontiguousarray(dinv.T)
    K = np.empty((c, n, n), dinv.dtype)
    for i in prange(n):
        acc = np.zeros((i + 1, c), np.float64)
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            xi = data[p]
            for q in range(t_indptr[f], t_indptr[f + 1]):
                j = t_indices[q]
                if j > i:
                    if ordered:
                        break
                    continue
                v = xi * t_data[q]
                for k in range(c):
                    acc[j, k] += v * dT[f, k]
        for k in range(c):
            for j in range(i + 1):
                K[k, i, j] = acc[j, k]
    for i in prange(n):
        for k in range(c):
            for j in range(i):
                K[k, j, i] = K[k, i, j]
    return K


@njit(**SERIAL)
def centre_woodbury_lower(K, r, m):
    """``K ← J K J + I`` on the lower triangle of ``K`` (diagonal included), in place.

    Parameters
    ----------
    K : ndarray, shape (n, n), C order
        ``X D⁻¹ Xᵀ`` of uncentred ``X`` (symmetric); only its lower triangle is rewritten.
    r : ndarray, shape (n,)
        Its row means.
    m : float
        The mean of ``r``.

    Returns
    -------
    finite : bool
        Whether every rewritten entry is finite.

    Notes
    -----
    Entry ``(i, j)`` becomes ``((K[i, j] − r[i]) − r[j]) + m``, plus 1 on the diagonal:
    the same operations in the same order as subtracting the row means, then the column
    means, adding the grand mean and then the identity as separate array passes, so the
    same bits, in one pass over half the matrix (the Cholesky factorisation reads only the
    lower triangle; the strict upper one keeps ``K``'s entries). Serial: ``n²/2`` updates.

    Cost: reads and writes ``n² b / 2`` bytes (``b`` the itemsize); ``3 n²/2`` flops.
    """
    n = K.shape[0]
    if K.shape[1] != n or r.shape[0] != n:
        raise ValueError("centre_woodbury_lower: K must be (n, n) and r (n,)")
    finite = True
    for i in range(n):
        ri = r[i]
        for j in range(i + 1):
            v = ((K[i, j] - ri) - r[j]) + m
            if j == i:
                v = v + 1.0
            K[i, j] = v
            if not np.isfinite(v):
                finite = False
    return finite


@njit(**SERIAL)
def _rows_sorted(indptr, indices):
    """Whether the column indices of every CSR row are in nondecreasing order."""
    for r in range(indptr.shape[0] - 1):
        for q in range(indptr[r] + 1, indptr[r + 1]):
            if indices[q] < indices[q - 1]:
                return False
    return True


@njit(**PARALLEL)
def pair_gram(F, indptr, indices, data):
    """``Fᵀ I_p F`` for a sparse ``I_p`` given in CSR form, without forming ``I_p F``.

    Parameters
    ----------
    F : ndarray, shape (n, c), float32 or float64
    indptr : ndarray, shape (n + 1,), int64
    indices : ndarray, shape (nnz,), int64
    data : ndarray, shape (nnz,)
        CSR arrays of ``I_p`` (``n × n``; any real weights, symmetric in MVFL).

    Returns
    -------
    G : ndarray, shape (c, c), dtype of ``F``
        ``G = Fᵀ I_p F = Σ_i F[i]ᵀ (I_p F)[i]``; its trace is the pairwise prior
        ``Σ_ij I_p[i, j] (F Fᵀ)[i, j]``.

    Notes
    -----
    Time O(nnz c + n c²), memory O(c²) per block. Parallel over a fixed partition of the rows
    into at most 64 blocks with per-block partial sums (summed in block order, so the result
    does not depend on the thread count).

    Cost: reads ``12 nnz + n c b`` bytes (``b`` the itemsize; the rows of ``F`` gathered per
    stored entry come from cache while ``F`` fits there); ``2 nnz c + 2 n c²`` flops.
    """
    if not valid_csr(indptr, indices, data, F.shape[0], F.shape[0]):
        raise ValueError("pair_gram: I_p must be a valid n x n CSR structure, n = F.shape[0]")
    n, c = F.shape
    # a fixed partition (not one part per thread): the summation order, and so the rounding,
    # does not depend on the thread count
    nb = n_parts(n, 1)
    part = np.zeros((nb, c, c), np.float64)
    for b in prange(nb):
        lo, hi = part_range(n, nb, b)
        tmp = np.empty(c, np.float64)
        for i in range(lo, hi):
            start = indptr[i]
            stop = indptr[i + 1]
            if start == stop:
                continue
            for k in range(c):
                tmp[k] = 0.0
            for p in range(start, stop):
                j = indices[p]
                s = data[p]
                for k in range(c):
                    tmp[k] += s * F[j, k]
            for a in range(c):
                fa = F[i, a]
                for k in range(c):
                    part[b, a, k] += fa * tmp[k]
    out = np.zeros((c, c), F.dtype)
    for b in range(nb):
        for a in range(c):
            for k in range(c):
                out[a, k] += part[b, a, k]
    return out


@njit(**PARALLEL)
def multiplicative_f_update(F, Z, Gamma, lam, indptr, indices, data, rows):
    """One multiplicative update of the rows ``rows`` of ``F`` (paper eq. 14), fused.

    With ``B⁺ = max(B, 0)``, ``B⁻ = max(-B, 0)`` elementwise, the update is eq. 14 multiplied
    through (numerator and denominator) by ``λ3``, so that ``λ3 = 0`` (no prior) is allowed::

        F ← F ⊙ sqrt( (λ3 I_p⁻F + Z⁺ + F Γ⁻) / (λ3 I_p⁺F + Z⁻ + F + F Γ⁺) )

    where ``Γ`` is the (scaled) multiplier ``λ3 Γ_paper = FᵀZ − I − λ3 Fᵀ I_p F`` computed by
    the caller. For the unlabelled rows of the partial-label problem (eq. 17) pass an empty
    ``I_p`` and ``Γ = F_uᵀ Z_u − I``. All rows are updated from the same old ``F``.

    Parameters
    ----------
    F : ndarray, shape (n, c), nonnegative
        Current indicator; read only.
    Z : ndarray, shape (n, c)
        Regression output ``XW + 1bᵀ``.
    Gamma : ndarray, shape (c, c)
        Multiplier as above (only its sign split is used).
    lam : float
        ``λ3 >= 0``, weight of the pairwise prior.
    indptr, indices, data : ndarrays
        CSR arrays of ``I_p`` (``indptr`` has ``n + 1`` entries; empty for no pairs).
        ``(I_p⁺F)[i]`` and ``(I_p⁻F)[i]`` are formed on the fly from row ``i``.
    rows : ndarray, shape (r,), int64
        Rows to update (distinct indices in ``[0, n)``); the other rows are copied.

    Returns
    -------
    F_new : ndarray, shape (n, c), dtype of ``F``
        Nonnegative. Zero entries stay zero. Evaluated as ``(F / sqrt(den)) sqrt(num)``,
        which cannot overflow because ``den >= F`` entrywise.

    Notes
    -----
    Time O(nnz(I_p rows) c + r c²), memory O(n c) for the output. Parallel over rows; each
    row is independent, so the result does not depend on the thread count.

    Cost: reads ``(2 n c + c²) b`` bytes (``b`` the itemsize) plus ``12 nnz`` of the pattern
    and writes ``n c b``; ``2 nnz c + 4 r c² + ~10 r c`` flops for ``r`` rows (``nnz`` of those
    rows).
    """
    n_f = F.shape[0]
    if (Z.shape[0] != n_f or Z.shape[1] != F.shape[1] or Gamma.shape[0] != F.shape[1]
            or Gamma.shape[1] != F.shape[1] or not in_range(rows, 0, n_f)
            or (indptr.shape[0] > 0 and not valid_csr(indptr, indices, data, n_f, n_f))):
        raise ValueError("multiplicative_f_update: Z must match F, Gamma be c x c, rows lie in "
                         "[0, n) and I_p be a valid n x n CSR structure (or empty)")
    n, c = F.shape
    out = F.copy()
    gp = np.empty((c, c), np.float64)
    gn = np.empty((c, c), np.float64)
    for a in range(c):
        for k in range(c):
            g = Gamma[a, k]
            gp[a, k] = g if g > 0.0 else 0.0
            gn[a, k] = -g if g < 0.0 else 0.0
    for r in prange(rows.shape[0]):
        i = rows[r]
        pos = np.zeros(c, np.float64)
        neg = np.zeros(c, np.float64)
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = data[p]
            if s > 0.0:
                for k in range(c):
                    pos[k] += s * F[j, k]
            elif s < 0.0:
                for k in range(c):
                    neg[k] -= s * F[j, k]
        for k in range(c):
            fgp = 0.0
            fgn = 0.0
            for a in range(c):
                fgp += F[i, a] * gp[a, k]
                fgn += F[i, a] * gn[a, k]
            z = Z[i, k]
            f = F[i, k]
            num = lam * neg[k] + fgn
            den = lam * pos[k] + fgp + f
            if z > 0.0:
                num += z
            else:
                den -= z
            # den >= f, so f / sqrt(den) <= sqrt(f): no overflow even for subnormal den
            if f > 0.0 and num > 0.0:
                out[i, k] = (f / np.sqrt(den)) * np.sqrt(num)
            else:
                out[i, k] = 0.0
    return out


@njit(**PARALLEL)
def labelled_rows_update(F, Z, rows, classes, lam):
    """Closed-form update of the labelled rows (paper eq. 18), in place.

    ``F[i, k] = max(Z[i, k] / (1 + λ3 [k != y_i]), 0)``: the exact minimiser of
    ``‖Z_l − F_l‖² + λ3 ‖I_l ⊙ F_l‖²`` over ``F_l >= 0``, separately per entry.

    Parameters
    ----------
    F : ndarray, shape (n, c)
        Modified in place on the rows ``rows``.
    Z : ndarray, shape (n, c)
        Regression output ``XW + 1bᵀ``.
    rows : ndarray, shape (l,), int64
        Indices of the labelled samples.
    classes : ndarray, shape (l,), int64
        Their classes, in ``[0, c)``.
    lam : float
        ``λ3 >= 0``.

    Returns
    -------
    None

    Notes
    -----
    Time O(l c), no allocation. Parallel over labelled rows.

    Cost: moves ``3 l c b + 16 l`` bytes (``b`` the itemsize); ``~3 l c`` flops.
    """
    if (Z.shape[0] != F.shape[0] or Z.shape[1] != F.shape[1]
            or classes.shape[0] != rows.shape[0] or not in_range(rows, 0, F.shape[0])
            or not in_range(classes, 0, F.shape[1])):
        raise ValueError("labelled_rows_update: Z must match F, rows lie in [0, n) and classes "
                         "in [0, c), one class per row")
    c = F.shape[1]
    scale = 1.0 / (1.0 + lam)
    for r in prange(rows.shape[0]):
        i = rows[r]
        y = classes[r]
        for k in range(c):
            v = Z[i, k] if k == y else Z[i, k] * scale
            F[i, k] = v if v > 0.0 else 0.0
