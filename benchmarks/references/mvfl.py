"""The NumPy reference mvfl_reference of the asv suites (bench_mvfl.py), with the helpers it
uses; tests/mvfl/naive.py re-exports them, so the test-suite checks the reference the
benchmarks time. It lives here because asv makes only ``benchmarks`` importable."""
import numpy as np
import scipy.sparse as sp


def weight_norms(W, view_ptr, eps):
    W = np.asarray(W, dtype=np.float64)
    m = len(view_ptr) - 1
    rows = np.sqrt((W ** 2).sum(axis=1) + eps ** 2)
    groups = np.array([[np.sqrt((W[view_ptr[v]:view_ptr[v + 1], k] ** 2).sum() + eps ** 2)
                        for k in range(W.shape[1])] for v in range(m)]).reshape(m, W.shape[1])
    return groups, rows


def irls_diagonal(groups, rows, view_ptr, lam1, lam2):
    groups = np.asarray(groups, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    d = rows.shape[0]
    c = groups.shape[1]
    D = np.zeros((c, d))
    for v in range(len(view_ptr) - 1):
        for i in range(view_ptr[v], view_ptr[v + 1]):
            for k in range(c):
                p = lam1 / (2 * groups[v, k]) if lam1 != 0 else 0.0
                q = lam2 / (2 * rows[i]) if lam2 != 0 else 0.0
                D[k, i] = p + q
    return D


def _dense(indptr, indices, data, n):
    return sp.csr_matrix((np.asarray(data, dtype=np.float64), indices, indptr),
                         shape=(n, n)).toarray()


def multiplicative_f_update(F, Z, Gamma, lam, indptr, indices, data, rows):
    F64 = np.asarray(F, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    Gamma = np.asarray(Gamma, dtype=np.float64)
    Ip = _dense(indptr, indices, data, F.shape[0])

    def pos(B):
        return (np.abs(B) + B) / 2

    def neg(B):
        return (np.abs(B) - B) / 2

    num = lam * (neg(Ip) @ F64) + pos(Z) + F64 @ neg(Gamma)
    den = lam * (pos(Ip) @ F64) + neg(Z) + F64 + F64 @ pos(Gamma)
    with np.errstate(divide="ignore", invalid="ignore"):
        new = np.where((F64 > 0) & (num > 0), F64 / np.sqrt(den) * np.sqrt(num), 0.0)
    out = np.array(F, copy=True)
    rows = np.asarray(rows, dtype=np.int64)
    out[rows] = new[rows]
    return out


def pair_matrix(n, must_link, cannot_link):
    """Dense symmetric ``I_p``: -1 on must-links, +1 on cannot-links (duplicates add)."""
    Ip = np.zeros((n, n))
    for pairs, s in ((must_link, -1.0), (cannot_link, 1.0)):
        if pairs is None:
            continue
        for i, j in np.asarray(pairs, dtype=np.int64).reshape(-1, 2):
            Ip[i, j] += s
            Ip[j, i] += s
    return Ip


def mvfl_objective(X, view_ptr, W, b, F, lam1, lam2, lam3, labels=None, Ip=None, eps=0.0):
    """Objective eq. 8 / 9 (norms smoothed by ``eps``; ``eps = 0`` the paper's)."""
    Z = X @ W + b
    groups, rows = weight_norms(W, view_ptr, eps)
    J = ((Z - F) ** 2).sum() + lam1 * groups.sum() + lam2 * rows.sum()
    if labels is not None:
        lab = np.flatnonzero(labels >= 0)
        Il = np.ones((lab.size, F.shape[1]))
        Il[np.arange(lab.size), labels[lab]] = 0.0
        J += lam3 * ((Il * F[lab]) ** 2).sum()
    if Ip is not None:
        J += lam3 * np.sum(Ip * (F @ F.T))
    return J


def mvfl_reference(X, view_ptr, F0, *, labels=None, must_link=None, cannot_link=None,
                   lam1=1e-3, lam2=1e-3, lam3=1.0, max_iter=10, eps=1e-8):
    """Plain NumPy MVFL on an already normalised dense ``X`` (``n × d``), from ``F0``.

    Follows docs/algorithms.md §2 step by step with dense ``d × d`` solves. The first ``W`` step
    uses unit norms (``P_k = Q = I / 2``); then each iteration reweights from the previous
    ``W``, solves ``W`` column by column, sets ``b``, updates ``F``. Γ uses the symmetric
    part of ``FᵀZ`` (see fastmv._mvfl). Returns ``(W, b, F, objective_history)``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    F = np.array(F0, dtype=np.float64)
    c = F.shape[1]
    mu = X.mean(axis=0)
    Xc = X - mu
    G = Xc.T @ Xc
    Ip = None
    if must_link is not None or cannot_link is not None:
        Ip = pair_matrix(n, must_link, cannot_link)
    if labels is not None:
        labels = np.asarray(labels)
        lab = np.flatnonzero(labels >= 0)
        unl = np.flatnonzero(labels < 0)
    W = None
    history = []
    for _ in range(max_iter):
        if W is None:
            groups = np.ones((len(view_ptr) - 1, c))
            rows = np.ones(d)
        else:
            groups, rows = weight_norms(W, view_ptr, eps)
        D = irls_diagonal(groups, rows, view_ptr, lam1, lam2)
        Fc = F - F.mean(axis=0)
        W = np.empty((d, c))
        for k in range(c):
            W[:, k] = np.linalg.solve(G + np.diag(D[k]), Xc.T @ Fc[:, k])
        b = F.mean(axis=0) - mu @ W
        Z = X @ W + b
        if labels is not None:
            Fn = F.copy()
            if unl.size:
                Fu, Zu = F[unl], Z[unl]
                S = Fu.T @ Zu
                Gam = (S + S.T) / 2 - np.eye(c)
                e = np.zeros(unl.size + 1, dtype=np.int64)
                Fn[unl] = multiplicative_f_update(Fu, Zu, Gam, 0.0, e, e[:0], np.zeros(0),
                                                  np.arange(unl.size))
            for i in lab:
                for k in range(c):
                    il = 0.0 if k == labels[i] else 1.0
                    Fn[i, k] = max(Z[i, k] / (lam3 * il + 1.0), 0.0)
            F = Fn
        else:
            S = F.T @ Z
            IpF = Ip @ F if Ip is not None else np.zeros_like(F)
            Gam = (S + S.T) / 2 - np.eye(c) - lam3 * (F.T @ IpF)
            Ipp = (np.abs(Ip) + Ip) / 2 if Ip is not None else np.zeros((n, n))
            Ipn = (np.abs(Ip) - Ip) / 2 if Ip is not None else np.zeros((n, n))
            Gp = (np.abs(Gam) + Gam) / 2
            Gn = (np.abs(Gam) - Gam) / 2
            Zp = (np.abs(Z) + Z) / 2
            Zn = (np.abs(Z) - Z) / 2
            num = lam3 * Ipn @ F + Zp + F @ Gn
            den = lam3 * Ipp @ F + Zn + F + F @ Gp
            with np.errstate(divide="ignore", invalid="ignore"):
                F = np.where((F > 0) & (num > 0), F / np.sqrt(den) * np.sqrt(num), 0.0)
        history.append(mvfl_objective(X, view_ptr, W, b, F, lam1, lam2, lam3, labels=labels,
                                      Ip=Ip))
    return W, b, F, np.array(history)
