"""The NumPy reference emvc_reference of the asv suites (bench_emvc.py), with the helpers it
uses; tests/emvc/naive.py re-exports them, so the test-suite checks the reference the
benchmarks time. It lives here because asv makes only ``benchmarks`` importable."""
import numpy as np


def rowwise_simplex_projection(A, out):
    """Sort-based projection of each row onto the probability simplex (Held et al.)."""
    A64 = np.asarray(A, dtype=np.float64)
    n, d = A64.shape
    if n == 0:
        return out
    U = -np.sort(-A64, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    k = np.arange(1, d + 1)
    cond = U - css / k > 0
    rho = d - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = css[np.arange(n), rho] / (rho + 1)
    out[...] = np.maximum(A64 - theta[:, None], 0.0)
    return out


def svt_full(B, tau):
    """Singular value soft-thresholding by a full SVD: ``(Q, nuclear_norm, rank)``."""
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    sh = np.maximum(s - tau, 0.0)
    r = int(np.count_nonzero(sh))
    return (U[:, :r] * sh[:r]) @ Vt[:r], float(sh.sum()), r


def emvc_reference(P_list, lam1, lam2, *, max_iter=100, tol=1e-6, mu=1e-6, rho=1.9,
                   mu_max=1e10, init="mean", E0=None, eps=1e-10, dtype=np.float64,
                   callback=None):
    """Straightforward NumPy EMVC exactly as docs/algorithms.md §3 writes it (full SVD every
    iteration, vectorised elementwise E step, explicit Z). Returns a dict with ``P_hat``,
    ``E``, ``objective`` (halved weights, ‖Q‖_*), ``residual``, ``n_iter``, ``converged``."""
    P = [np.asarray(p, dtype=dtype) for p in P_list]
    m = len(P)
    n = P[0].shape[0]
    if E0 is not None:
        E = [np.array(e, dtype=dtype) for e in E0]
    elif init == "mean":
        Pm = sum(P) / m
        E = [p - Pm for p in P]
    else:
        raise ValueError("pass E0 for a random start")
    Y = [np.zeros((n, n), dtype) for _ in range(m)]
    Q = np.zeros((n, n), dtype)
    Z = np.zeros((n, n), dtype)
    objective, residual = [], []
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        A = (sum(P[v] - E[v] - Y[v] / mu for v in range(m)) + Q - Z / mu) / (m + 1)
        P_hat = rowwise_simplex_projection(A, np.empty_like(A))
        for v in range(m):
            T = P[v] - P_hat - Y[v] / mu
            d = 1.0 / (2.0 * np.maximum(np.linalg.norm(E[v], axis=1), eps))
            g = 1.0 / (2.0 * np.maximum(np.linalg.norm(E[v], axis=0), eps))
            E[v] = (T / (1.0 + (lam2 / mu) * d[:, None] + (lam1 / mu) * g[None, :])).astype(dtype)
        Q, nuc, _ = svt_full(P_hat + Z / mu, 1.0 / mu)
        Q = Q.astype(dtype)
        Z = Z + mu * (P_hat - Q)
        for v in range(m):
            Y[v] = Y[v] + mu * (P_hat + E[v] - P[v])
        res_c = float(np.abs(P_hat - Q).max())
        res_v = max(float(np.abs(P[v] - P_hat - E[v]).max()) for v in range(m))
        obj = nuc + 0.5 * lam1 * sum(np.linalg.norm(e, axis=0).sum() for e in E) \
            + 0.5 * lam2 * sum(np.linalg.norm(e, axis=1).sum() for e in E)
        objective.append(obj)
        residual.append(max(res_c, res_v))
        if callback is not None:
            callback(it, dict(P_hat=P_hat, objective=obj))
        if res_c < tol and res_v < tol:
            converged = True
            break
        mu = min(rho * mu, mu_max)
    return dict(P_hat=P_hat, E=E, objective=np.array(objective), residual=np.array(residual),
                n_iter=it, converged=converged)
