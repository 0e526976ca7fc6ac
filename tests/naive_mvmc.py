"""NumPy twins of kernels/masked.py and a dense NumPy MVMC (ALGORITHMS.md §1).

``mvmc_dense`` is the straightforward transcription that holds ``S``, ``S_ob`` and the mask
as ``n × n`` arrays and forms the ``n × n`` masked residual ``R_Ω(Z M Zᵀ − S_ob)`` at every
gradient step (O(n² k) per step). It runs the same iteration as :func:`fastmv.mvmc` (same
initialisation, same inner / outer acceleration and restart rule), so on the same bases
``Z_v`` both must give the same ``M_v`` and objective up to rounding. The benchmarks time
it against the solver.
"""
import numpy as np


# ---------------------------------------------------------------------------------------
# kernel twins
# ---------------------------------------------------------------------------------------

def masked_residual_product(A, B, Z, indptr, indices, values, mirror=None):
    n = Z.shape[0]
    R = np.zeros((n, n))
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            R[i, j] = A[i].astype(np.float64) @ B[j].astype(np.float64) - values[p]
            mask[i, j] = True
    RZ = (R @ Z.astype(np.float64)).astype(Z.dtype)
    return RZ, float((R[mask] ** 2).sum())


def clip_correction(A):
    S = np.clip(A, 0.0, 1.0)
    N = S - A
    sumsq = float((S.astype(np.float64) ** 2).sum())
    row_nnz = (N != 0).sum(axis=1).astype(np.int64)
    A[...] = N
    return sumsq, row_nnz


def dense_to_csr(A, indptr):
    rows, cols = np.nonzero(A)
    assert np.array_equal(np.bincount(rows, minlength=A.shape[0]), np.diff(indptr))
    return cols.astype(np.int32), A[rows, cols]


# ---------------------------------------------------------------------------------------
# dense MVMC
# ---------------------------------------------------------------------------------------

def _psd(Y):
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    pos = lam > 0
    M = (V[:, pos] * lam[pos]) @ V[:, pos].T
    return 0.5 * (M + M.T)


def observed_matrices(n, must_link, cannot_link):
    """Dense ``S_ob`` (1 on must-links, 0 elsewhere) and the 0/1 mask of Ω, both symmetric."""
    S_ob = np.zeros((n, n))
    mask = np.zeros((n, n))
    for P, val in ((np.asarray(must_link).reshape(-1, 2), 1.0),
                   (np.asarray(cannot_link).reshape(-1, 2), 0.0)):
        if P.size:
            S_ob[P[:, 0], P[:, 1]] = val
            S_ob[P[:, 1], P[:, 0]] = val
            mask[P[:, 0], P[:, 1]] = 1.0
            mask[P[:, 1], P[:, 0]] = 1.0
    return S_ob, mask


def mvmc_objective(Z_list, M_list, S, S_ob, mask, C1, C2):
    """``Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²`` (dense)."""
    total = 0.0
    for Z, M in zip(Z_list, M_list):
        A = Z @ M @ Z.T
        total += np.trace(M) + C1 * ((mask * (A - S_ob)) ** 2).sum() + C2 * ((A - S) ** 2).sum()
    return float(total)


def similarity_dense(Z_list, M_list):
    """``S = clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)``."""
    return np.clip(sum(Z @ M @ Z.T for Z, M in zip(Z_list, M_list)) / len(Z_list), 0.0, 1.0)


def mvmc_dense(Z_list, must_link, cannot_link, *, C1=100.0, C2=1.0, max_iter=100,
               inner_iter=10, tol=1e-6, accelerated=True, step="tight", callback=None):
    """Dense MVMC on given bases; returns ``(M_list, objective history, S)``."""
    n = Z_list[0].shape[0]
    S_ob, mask = observed_matrices(n, must_link, cannot_link)
    ks = [Z.shape[1] for Z in Z_list]
    Ls = [2.0 * (C1 + C2) if step == "tight" else 2.0 * (C1 * k * k + C2) for k in ks]
    M = [_psd(Z.T @ S_ob @ Z) for Z in Z_list]
    M_prev = M
    t = 1.0
    objective = []
    for it in range(1, max_iter + 1):
        if accelerated and it > 1:
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / tn
            t = tn
            Y = [a + beta * (a - b) for a, b in zip(M, M_prev)]
        else:
            Y = M
        S = similarity_dense(Z_list, Y)
        s_sumsq = (S ** 2).sum()
        M_new, J = [], 0.0
        for v, Z in enumerate(Z_list):
            T = Z.T @ S @ Z
            k = ks[v]

            def evaluate(Mx):
                R = mask * (Z @ Mx @ Z.T - S_ob)  # the n × n masked residual
                f = (np.trace(Mx) + C1 * (R ** 2).sum()
                     + C2 * (np.vdot(Mx, Mx) - 2 * np.vdot(Mx, T) + s_sumsq))
                g = np.eye(k) + 2 * C1 * (Z.T @ R @ Z) + 2 * C2 * (Mx - T)
                return f, 0.5 * (g + g.T)

            x = _psd(Y[v]) if Y is not M else M[v]
            fx, gx = evaluate(x)
            if not accelerated:
                for _ in range(inner_iter):
                    x = _psd(x - gx / Ls[v])
                    fx, gx = evaluate(x)
            else:
                y, gy, tt = x, gx, 1.0
                for _ in range(inner_iter):
                    z = _psd(y - gy / Ls[v])
                    fz, gz = evaluate(z)
                    xn, fxn, gxn = (z, fz, gz) if fz <= fx else (x, fx, gx)
                    tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tt * tt))
                    a, b = tt / tn, (tt - 1.0) / tn
                    y = xn + a * (z - xn) + b * (xn - x)
                    gy = gxn + a * (gz - gxn) + b * (gxn - gx)
                    x, fx, gx, tt = xn, fxn, gxn, tn
            M_new.append(x)
            J += fx
        if accelerated and objective:
            ip = sum(np.vdot(y - a, a - b) for y, a, b in zip(Y, M_new, M))
            if ip > 0 or J > objective[-1]:
                t = 1.0
        M_prev, M = M, M_new
        objective.append(float(J))
        if callback is not None:
            callback(it, {"M": M, "objective": J, "S": S})
        if len(objective) > 1 and abs(objective[-2] - J) <= tol * max(abs(J), 1e-300):
            break
    return M, np.asarray(objective), similarity_dense(Z_list, M)
