"""The NumPy reference cmvnmf_reference of the asv suites (bench_cmvnmf.py), with the helpers it
uses; tests/cmvnmf/naive.py re-exports them, so the test-suite checks the reference the
benchmarks time. It lives here because asv makes only ``benchmarks`` importable."""
import numpy as np
import scipy.sparse as sp


def _canonical_blocks(must_link, cannot_link):
    """``{(a, b): (must (p,2), cannot (q,2))}`` with a <= b, pairs oriented (i in a, j in b)."""
    blocks = {}
    for kind, d in ((0, must_link or {}), (1, cannot_link or {})):
        for (a, b), pairs in d.items():
            pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            if a > b:
                a, b = b, a
                pairs = pairs[:, ::-1]
            empty = np.zeros((0, 2), np.int64)
            entry = blocks.setdefault((a, b), [empty, empty])
            entry[kind] = np.vstack([entry[kind], pairs])
    return blocks


def constraint_matrices(n_list, must_link, cannot_link):
    """Per view ``a``: (Mnum_a, Cden_a, degnum_a, degden_a) as scipy.sparse blocks by view.

    ``Mnum_a[b]`` is the ``n_a × n_b`` matrix multiplying ``V_b`` in the numerator (``M^{ab}``
    for b ≠ a, ``M + Mᵀ`` for the intra-view block), ``Cden_a[b]`` likewise for cannot-links;
    ``degnum_a`` / ``degden_a`` the degree vectors multiplying ``V_a`` (``D_s`` and
    ``Σ_b D^{ab} + 2 D_s`` where ``D_s`` = row sums of the symmetrised intra-view ``M``).
    """
    m = len(n_list)
    Mnum = [dict() for _ in range(m)]
    Cden = [dict() for _ in range(m)]
    degnum = [np.zeros(n) for n in n_list]
    degden = [np.zeros(n) for n in n_list]

    def add(store, a, b, mat):
        store[a][b] = store[a][b] + mat if b in store[a] else mat

    for (a, b), (must, cannot) in _canonical_blocks(must_link, cannot_link).items():
        shape = (n_list[a], n_list[b])
        M = sp.csr_matrix((np.ones(len(must)), (must[:, 0], must[:, 1])), shape=shape)
        C = sp.csr_matrix((np.ones(len(cannot)), (cannot[:, 0], cannot[:, 1])), shape=shape)
        if a == b:
            Ms = (M + M.T).tocsr()
            add(Mnum, a, a, Ms)
            add(Cden, a, a, (C + C.T).tocsr())
            ds = np.asarray(Ms.sum(axis=1)).ravel()
            degnum[a] += ds
            degden[a] += 2 * ds
        else:
            add(Mnum, a, b, M)
            add(Mnum, b, a, M.T.tocsr())
            add(Cden, a, b, C)
            add(Cden, b, a, C.T.tocsr())
            degden[a] += np.asarray(M.sum(axis=1)).ravel()
            degden[b] += np.asarray(M.sum(axis=0)).ravel()
    return Mnum, Cden, degnum, degden


def cmvnmf_reference(X_list, must_link, cannot_link, U0, V0, n_iter, *, beta=1.0, rescale=True,
                     eps=1e-10, objective=True):
    """The CMVNMF updates with NumPy and scipy.sparse only (no Numba), ``n_iter`` sweeps.

    ``X_list`` already normalised (dense or CSR); ``U0``/``V0`` the initial factors (copied).
    Returns ``(U_list, V_list, objective_history)``; the objective uses the same trace
    expansion as the solver (``‖X‖² − 2⟨V, XU⟩ + ⟨UᵀU, VᵀV⟩`` plus the pair penalty).
    """
    m = len(X_list)
    n_list = [X.shape[0] for X in X_list]
    U = [u.copy() for u in U0]
    V = [v.copy() for v in V0]
    Mnum, Cden, degnum, degden = constraint_matrices(n_list, must_link, cannot_link)
    blocks = _canonical_blocks(must_link, cannot_link)
    xx = [float(X.multiply(X).sum()) if sp.issparse(X) else float(np.vdot(X, X)) for X in X_list]
    hist = []
    for _ in range(n_iter):
        fit = 0.0
        for a in range(m):
            X = X_list[a]
            VtV = V[a].T @ V[a]
            U[a] *= (np.asarray(X.T @ V[a]) + eps) / (U[a] @ VtV + eps)
            if rescale:
                s = np.linalg.norm(U[a], axis=0)
                s[s == 0] = 1.0
                U[a] /= s
                V[a] *= s
            UtU = U[a].T @ U[a]
            XU = np.asarray(X @ U[a])
            num = XU + eps
            den = V[a] @ UtU + eps
            if beta != 0:
                extra_num = degnum[a][:, None] * V[a]
                extra_den = degden[a][:, None] * V[a]
                for b, Mab in Mnum[a].items():
                    extra_num = extra_num + Mab @ V[b]
                for b, Cab in Cden[a].items():
                    extra_den = extra_den + Cab @ V[b]
                num += beta * extra_num
                den += beta * extra_den
            V[a] = V[a] * num / den
            if objective:
                VtV = V[a].T @ V[a]
                fit += xx[a] - 2.0 * float(np.vdot(V[a], XU)) + float(np.sum(UtU * VtV))
        if objective:
            pen = 0.0
            for (a, b), (must, cannot) in blocks.items():
                if len(must):
                    pen += float(np.sum((V[a][must[:, 0]] - V[b][must[:, 1]]) ** 2))
                if len(cannot):
                    pen += 2.0 * float(np.sum(V[a][cannot[:, 0]] * V[b][cannot[:, 1]]))
            hist.append(fit + beta * pen)
    return U, V, np.asarray(hist)
