"""NumPy twins of ``kernels/cmvnmf.py``: direct transcriptions of the formulas in the
kernels' docstrings (docs/algorithms.md §4). :func:`cmvnmf_objective` evaluates the objective
from scratch with dense residuals (obviously correct, slow). The NumPy / scipy.sparse CMVNMF
the solver tests and the benchmarks compare with is ``benchmarks/references/cmvnmf.py``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from benchmarks.references.cmvnmf import _canonical_blocks


# --------------------------------------------------------------------------- kernel twins
def pattern_csr(rows, cols, n_rows, n_cols):
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr, cols[order].astype(cols.dtype)


def csr_matmul(indptr, indices, data, B):
    n_rows = len(indptr) - 1
    A = sp.csr_matrix((data, indices, indptr), shape=(n_rows, B.shape[0]))
    return np.asarray(A @ B, dtype=B.dtype)


def constraint_products(V_all, V_a, m_indptr, m_indices, c_indptr, c_indices, deg_num, deg_den):
    """``M V_all + diag(deg_num) V_a`` and ``C V_all + diag(deg_den) V_a`` by explicit loops."""
    n_a, c = V_a.shape
    P_num = deg_num[:, None] * V_a
    P_den = deg_den[:, None] * V_a
    for i in range(n_a):
        for p in range(m_indptr[i], m_indptr[i + 1]):
            P_num[i] += V_all[m_indices[p]]
        for p in range(c_indptr[i], c_indptr[i + 1]):
            P_den[i] += V_all[c_indices[p]]
    return P_num, P_den


def multiplicative_update(F, numer, gram, terms, beta, eps):
    """``(F_new, penalty part)``: the update, then the pairs with a column below ``split``
    evaluated at ``F_new`` by explicit loops (``deg_pen`` weighting ``‖F_new[i]‖²``)."""
    if terms.must_indptr.shape[0]:
        P_num, P_den = constraint_products(terms.V_all, F, terms.must_indptr, terms.must_indices,
                                           terms.cannot_indptr, terms.cannot_indices,
                                           terms.deg_num, terms.deg_den)
    else:
        P_num = P_den = np.zeros_like(F)
    F_new = (F * (numer + beta * P_num + eps) / (F @ gram + beta * P_den + eps)).astype(F.dtype)
    F_new[F_new < np.finfo(F.dtype).tiny] = 0   # no subnormal entries
    penalty = 0.0
    if terms.must_indptr.shape[0] and terms.split.shape[0]:
        split = int(terms.split[0])
        V_all = terms.V_all.astype(np.float64)
        G = F_new.astype(np.float64)
        for i in range(F.shape[0]):
            penalty += float(terms.deg_pen[i]) * float(G[i] @ G[i])
            for p in range(terms.must_indptr[i], terms.must_indptr[i + 1]):
                if terms.must_indices[p] < split:
                    penalty -= 2.0 * float(G[i] @ V_all[terms.must_indices[p]])
            for p in range(terms.cannot_indptr[i], terms.cannot_indptr[i + 1]):
                if terms.cannot_indices[p] < split:
                    penalty += 2.0 * float(G[i] @ V_all[terms.cannot_indices[p]])
    return F_new, penalty


# the serial copy computes exactly what the parallel kernel does
multiplicative_update_serial = multiplicative_update


def constraint_penalty(V_all, must, cannot):
    V = V_all.astype(np.float64)
    total = 0.0
    for i, j in must:
        total += float(np.sum((V[i] - V[j]) ** 2))
    for i, j in cannot:
        total += 2.0 * float(V[i] @ V[j])
    return total


# --------------------------------------------------------------------------- solver pieces


def cmvnmf_objective(X_list, U_list, V_list, must_link, cannot_link, beta):
    """Σ_a ‖X_aᵀ − U_a V_aᵀ‖² + β Σ_blocks Δ_ab, from dense residuals and explicit pair loops."""
    fit = 0.0
    for X, U, V in zip(X_list, U_list, V_list):
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
        R = Xd.astype(np.float64) - V.astype(np.float64) @ U.T.astype(np.float64)
        fit += float(np.sum(R ** 2))
    pen = 0.0
    for (a, b), (must, cannot) in _canonical_blocks(must_link, cannot_link).items():
        Va = V_list[a].astype(np.float64)
        Vb = V_list[b].astype(np.float64)
        for i, j in must:
            pen += float(np.sum((Va[i] - Vb[j]) ** 2))
        for i, j in cannot:
            pen += 2.0 * float(Va[i] @ Vb[j])
    return fit + beta * pen


def nmf_reference(X, U0, V0, n_iter, *, rescale=False, eps=1e-10):
    """Plain Lee–Seung NMF ``Xᵀ ≈ U Vᵀ`` (U first, then V), optional column rescaling."""
    U = U0.astype(np.float64).copy()
    V = V0.astype(np.float64).copy()
    for _ in range(n_iter):
        U *= (X.T @ V + eps) / (U @ (V.T @ V) + eps)
        if rescale:
            s = np.linalg.norm(U, axis=0)
            s[s == 0] = 1.0
            U /= s
            V *= s
        V *= (X @ U + eps) / (V @ (U.T @ U) + eps)
    return U, V


