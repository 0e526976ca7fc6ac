"""CMVNMF: constrained NMF clustering of unmapped views (ALGORITHMS.md §4).

Each view ``a`` is factorised as ``X_aᵀ ≈ U_a V_aᵀ`` (``U_a ≥ 0``: ``d_a × c`` basis,
``V_a ≥ 0``: ``n_a × c`` cluster indicators); the views' rows need not correspond and are tied only by
must-link / cannot-link pairs between (or within) views. Objective::

    Σ_a ‖X_aᵀ − U_a V_aᵀ‖²_F + β Σ_{blocks (a, b)} Δ_ab,
    Δ_ab = Σ_{(i,j) must} ‖V_a[i] − V_b[j]‖² + 2 Σ_{(i,j) cannot} V_a[i] · V_b[j].

Updates per sweep, for ``a = 0 .. m-1`` (Gauss–Seidel over views)::

    U_a ← U_a ⊙ (X_aᵀ V_a + ε) / (U_a V_aᵀ V_a + ε)
    [rescale: every column of U_a to unit ℓ2 norm, matching column of V_a times the old norm]
    V_a ← V_a ⊙ (X_a U_a + β N_a + ε) / (V_a U_aᵀ U_a + β D_a + ε)

with ``N_a = Σ_{b≠a} M^{ab} V_b`` and ``D_a = Σ_{b≠a} (D^{ab} V_a + C^{ab} V_b)`` for the
inter-view blocks (the paper's rule). An intra-view block ``(a, a)`` has the penalty
``tr(V_aᵀ (L + C_s) V_a)`` with ``M_s = M + Mᵀ``, ``C_s = C + Cᵀ``, ``D_s = diag(M_s 1)``,
``L = D_s − M_s``; its Hessian contains ``−M_s``, so the auxiliary-function proof does not
cover the paper-style rule (``M_s V_a`` over ``D_s V_a + C_s V_a``) when all rows of ``V_a``
move at once (the paper's sum is over ``b ≠ a`` only). We use the Lee–Seung auxiliary function
with diagonal ``diag(V UᵀU / V) + β(2 D_s + diag(C_s V / V))``, which dominates half the
Hessian because ``D_s + M_s ⪰ 0`` and ``diag(C_s V / V) − C_s ⪰ 0``; its minimiser adds
``β (M_s + D_s) V_a`` to the numerator and ``β (2 D_s + C_s) V_a`` to the denominator (same
fixed points: numerator minus denominator is still minus half the gradient; steps are damped).
Adding ε to numerator and denominator enlarges
that diagonal by ``ε / V`` and so keeps the guarantee: the objective is non-increasing at
every ``U`` and every ``V`` update (``rescale=False``; the rescaling is outside the theorem).
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import scipy.sparse as sp

from fastmv.kernels.nmf import (ConstraintTerms, constraint_penalty, csr_matmul,
                                multiplicative_update, pattern_csr)

from ._result import Result
from ._threads import thread_limit
from ._validation import (check_array, check_int, check_n_clusters, check_pairs,
                          check_random_state, check_scalar, check_views)

__all__ = ["cmvnmf", "CMVNMFResult"]

_EPS = 1e-10
_NORMALIZE = ("l2", "l1", None)


@dataclasses.dataclass(frozen=True, repr=False)
class CMVNMFResult(Result):
    """Result of :func:`cmvnmf`.

    Attributes
    ----------
    labels : list of ndarray of int64
        ``labels[a][i]`` = cluster of row ``i`` of view ``a`` (argmax of ``V[a][i]``).
    U : list of ndarray, shapes (d_a, c)
        Nonnegative bases (unit-norm columns when ``rescale=True``).
    V : list of ndarray, shapes (n_a, c)
        Nonnegative cluster indicators.
    objective : ndarray of float64, shape (n_iter + 1,)
        ``objective[0]`` at the initialisation, ``objective[t]`` after sweep ``t``.
    n_iter : int
        Number of sweeps run.
    converged : bool
        Whether the relative change of the objective fell below ``tol``.
    """

    labels: list
    U: list
    V: list
    objective: np.ndarray
    n_iter: int
    converged: bool


# --------------------------------------------------------------------------- validation
def _check_constraints(constraints, name, n_list):
    """Validate a constraint dict; returns ``{(a, b): (p, 2) int64}`` with ``a <= b``.

    Keys ``(a, b)`` are view ids (``a == b``: intra-view); rows hold (row of view a, row of
    view b). A key ``(b, a)`` with ``b > a`` is transposed onto ``(a, b)`` and merged.
    """
    m = len(n_list)
    if constraints is None:
        return {}
    if not isinstance(constraints, dict):
        raise TypeError(f"{name} must be a dict {{(a, b): (p, 2) int array}} or None, "
                        f"got {type(constraints).__name__}")
    out = {}
    for key, pairs in constraints.items():
        if (not isinstance(key, tuple) or len(key) != 2
                or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                           for v in key)):
            raise TypeError(f"{name} keys must be (a, b) tuples of view indices, got {key!r}")
        a, b = int(key[0]), int(key[1])
        for v in (a, b):
            if not 0 <= v < m:
                raise ValueError(f"{name}[{key!r}]: view index {v} out of range [0, {m})")
        label = f"{name}[({a}, {b})]"
        if a == b:
            arr = check_pairs(pairs, label, n_list[a])
        else:
            arr = check_pairs(pairs, label, n_list[a], n_list[b])
        if a > b:
            a, b = b, a
            arr = np.ascontiguousarray(arr[:, ::-1])
        if arr.shape[0]:
            out[(a, b)] = np.vstack([out[(a, b)], arr]) if (a, b) in out else arr
    return out


def _work_dtype(X_list):
    return np.float32 if all(X.dtype == np.float32 for X in X_list) else np.float64


def _normalize(X, how):
    if how is None:
        return X
    if sp.issparse(X):
        sq = X.multiply(X) if how == "l2" else abs(X)
        norms = np.asarray(sq.sum(axis=1), dtype=np.float64).ravel()
    else:
        norms = np.einsum("ij,ij->i", X, X, dtype=np.float64) if how == "l2" else \
            np.abs(X).sum(axis=1, dtype=np.float64)
    if how == "l2":
        norms = np.sqrt(norms)
    inv = np.zeros_like(norms)
    np.divide(1.0, norms, out=inv, where=norms > 0)
    inv = inv.astype(X.dtype)
    if sp.issparse(X):
        Xn = sp.csr_matrix(sp.diags(inv) @ X, dtype=X.dtype)
        Xn.sort_indices()
        return Xn
    return X * inv[:, None]


# --------------------------------------------------------------------------- the problem
class _Problem:
    """Data, constraint patterns and current factors of one CMVNMF run.

    The public :func:`cmvnmf` drives it sweep by sweep; the tests drive it update by update
    (:meth:`update_u`, :meth:`update_v`) to check the objective after each one. All ``V_a``
    live as row blocks of one array ``V_all`` (N × c) so that the constraint products of a
    view read the other views' factors through a single CSR pattern.
    """

    def __init__(self, X_list, blocks, U_list, V_list, *, beta, rescale, eps=_EPS):
        self.m = len(X_list)
        self.X = X_list
        self.XT = [X.T.tocsr() if sp.issparse(X) else None for X in X_list]
        for XT in self.XT:
            if XT is not None:
                XT.sort_indices()
        self.n = [X.shape[0] for X in X_list]
        self.offsets = np.concatenate([[0], np.cumsum(self.n)]).astype(np.int64)
        self.dtype = X_list[0].dtype.type
        self.c = U_list[0].shape[1]
        self.beta = float(beta)
        self.rescale = bool(rescale)
        self.eps = float(eps)
        self.V_all = np.empty((int(self.offsets[-1]), self.c), dtype=self.dtype)
        for a in range(self.m):
            self.V_all[self.offsets[a]:self.offsets[a + 1]] = V_list[a]
        self.U = [np.array(U, dtype=self.dtype, order="C") for U in U_list]
        self.xx = [float(X.multiply(X).sum()) if sp.issparse(X)
                   else float(np.vdot(X, X)) for X in X_list]
        self._build_constraints(blocks)
        self.VtV = [self.V(a).T @ self.V(a) for a in range(self.m)]
        self.UtU = [U.T @ U for U in self.U]
        self.XU = [self._x_times(a, self.U[a]) for a in range(self.m)]

    def V(self, a):
        return self.V_all[self.offsets[a]:self.offsets[a + 1]]

    def _build_constraints(self, blocks):
        m, off = self.m, self.offsets
        rows_m = [[] for _ in range(m)]
        cols_m = [[] for _ in range(m)]
        rows_c = [[] for _ in range(m)]
        cols_c = [[] for _ in range(m)]
        self.deg_num = [np.zeros(n, dtype=self.dtype) for n in self.n]
        self.deg_den = [np.zeros(n, dtype=self.dtype) for n in self.n]
        g_must, g_cannot = [], []
        for (a, b), (must, cannot) in blocks.items():
            i, j = must[:, 0], must[:, 1]
            if a == b:
                rows_m[a] += [i, j]
                cols_m[a] += [off[a] + j, off[a] + i]
                ds = (np.bincount(i, minlength=self.n[a])
                      + np.bincount(j, minlength=self.n[a])).astype(self.dtype)
                self.deg_num[a] += ds
                self.deg_den[a] += 2 * ds
            else:
                rows_m[a].append(i)
                cols_m[a].append(off[b] + j)
                rows_m[b].append(j)
                cols_m[b].append(off[a] + i)
                self.deg_den[a] += np.bincount(i, minlength=self.n[a]).astype(self.dtype)
                self.deg_den[b] += np.bincount(j, minlength=self.n[b]).astype(self.dtype)
            g_must.append(np.column_stack([off[a] + i, off[b] + j]))
            i, j = cannot[:, 0], cannot[:, 1]
            rows_c[a].append(i)
            cols_c[a].append(off[b] + j)
            rows_c[b].append(j)
            cols_c[b].append(off[a] + i)
            g_cannot.append(np.column_stack([off[a] + i, off[b] + j]))
        # int32 indices when they fit: the gathers are memory bound
        N = int(off[-1])
        idx = np.int32 if N < np.iinfo(np.int32).max else np.int64
        self.must_pattern = [self._pattern(rows_m[a], cols_m[a], self.n[a], N, idx)
                             for a in range(m)]
        self.cannot_pattern = [self._pattern(rows_c[a], cols_c[a], self.n[a], N, idx)
                               for a in range(m)]
        self.has_constraints = [self.must_pattern[a][1].size + self.cannot_pattern[a][1].size > 0
                                for a in range(m)]
        self.terms = [ConstraintTerms(self.V_all, *self.must_pattern[a], *self.cannot_pattern[a],
                                      self.deg_num[a], self.deg_den[a]) for a in range(m)]
        no_int = np.zeros(0, dtype=np.int64)
        no_float = np.zeros(0, dtype=self.dtype)
        self.no_terms = ConstraintTerms(np.zeros((0, self.c), dtype=self.dtype), no_int,
                                        np.zeros(0, dtype=idx), no_int, np.zeros(0, dtype=idx),
                                        no_float, no_float)
        empty = np.zeros((0, 2), dtype=idx)
        self.must_global = np.ascontiguousarray(np.vstack(g_must), dtype=idx) \
            if g_must else empty
        self.cannot_global = np.ascontiguousarray(np.vstack(g_cannot), dtype=idx) \
            if g_cannot else empty

    @staticmethod
    def _pattern(rows, cols, n, N, idx):
        r = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
        col = np.concatenate(cols).astype(idx) if cols else np.zeros(0, idx)
        return pattern_csr(r, col, n, N)

    # --- products with X
    def _x_times(self, a, U):
        X = self.X[a]
        if sp.issparse(X):
            return csr_matmul(X.indptr, X.indices, X.data, U)
        return X @ U

    def _xt_times(self, a, V):
        XT = self.XT[a]
        if XT is not None:
            return csr_matmul(XT.indptr, XT.indices, XT.data, V)
        return self.X[a].T @ V

    # --- the two updates
    def update_u(self, a):
        """``U_a`` multiplicative update (then the optional column rescaling)."""
        Va = self.V(a)
        U = multiplicative_update(self.U[a], self._xt_times(a, Va), self.VtV[a],
                                  self.no_terms, 0.0, self.eps)
        self.U[a] = U
        if self.rescale:
            s = np.sqrt(np.einsum("ij,ij->j", U, U, dtype=np.float64))
            s[s == 0] = 1.0
            U /= s.astype(self.dtype)
            Va *= s.astype(self.dtype)
            self.VtV[a] = self.VtV[a] * np.outer(s, s).astype(self.dtype)
        self.UtU[a] = U.T @ U

    def update_v(self, a):
        """``V_a`` multiplicative update with the constraint terms of every block touching a."""
        Va = self.V(a)
        XU = self._x_times(a, self.U[a])
        self.XU[a] = XU
        constrained = self.has_constraints[a] and self.beta != 0.0
        Va[...] = multiplicative_update(Va, XU, self.UtU[a],
                                        self.terms[a] if constrained else self.no_terms,
                                        self.beta if constrained else 0.0, self.eps)
        self.VtV[a] = Va.T @ Va

    def sweep(self):
        for a in range(self.m):
            self.update_u(a)
            self.update_v(a)

    def objective(self):
        """Objective from cached ``X_a U_a``, ``U_aᵀU_a``, ``V_aᵀV_a`` (no residual formed).

        Exact when the caches are current, i.e. after :meth:`update_v` (or at init); the
        tests use an independent dense evaluation after every single update.
        """
        fit = 0.0
        for a in range(self.m):
            fit += (self.xx[a] - 2.0 * float(np.vdot(self.V(a), self.XU[a]))
                    + float(np.sum(self.UtU[a] * self.VtV[a], dtype=np.float64)))
        pen = 0.0
        if self.beta != 0.0 and (self.must_global.shape[0] or self.cannot_global.shape[0]):
            pen = constraint_penalty(self.V_all, self.must_global, self.cannot_global)
        return max(fit, 0.0) + self.beta * pen

    def factors(self):
        return [U.copy() for U in self.U], [self.V(a).copy() for a in range(self.m)]


# --------------------------------------------------------------------------- init
def _initial_factors(X_list, n_clusters, init, rng, n_jobs):
    m = len(X_list)
    dtype = X_list[0].dtype.type
    if isinstance(init, str):
        if init == "kmeans":
            from ._kmeans import kmeans
            U_list, V_list = [], []
            for X in X_list:
                seed = int(rng.integers(0, 2**31 - 1))
                res = kmeans(X, n_clusters, random_state=seed, n_jobs=n_jobs)
                V = np.full((X.shape[0], n_clusters), 0.2, dtype=dtype)
                V[np.arange(X.shape[0]), res.labels] += 1.0
                U_list.append(np.ascontiguousarray(np.maximum(res.centers.T, 0.0), dtype=dtype))
                V_list.append(V)
            return U_list, V_list
        if init == "random":
            U_list, V_list = [], []
            for X in X_list:
                n, d = X.shape
                scale = np.sqrt(max(float(X.sum()) / (n * d), 1e-12) / n_clusters)
                U_list.append((scale * np.abs(rng.standard_normal((d, n_clusters)))).astype(dtype))
                V_list.append((scale * np.abs(rng.standard_normal((n, n_clusters)))).astype(dtype))
            return U_list, V_list
        raise ValueError("init must be 'kmeans', 'random' or a (U_list, V_list) pair, "
                         f"got {init!r}")
    if not isinstance(init, (tuple, list)) or len(init) != 2:
        raise TypeError("init must be 'kmeans', 'random' or a (U_list, V_list) pair of lists")
    U_in, V_in = init
    if len(U_in) != m or len(V_in) != m:
        raise ValueError(f"init must give one U and one V per view ({m} views), "
                         f"got {len(U_in)} and {len(V_in)}")
    U_list, V_list = [], []
    for a, X in enumerate(X_list):
        n, d = X.shape
        U = check_array(U_in[a], f"init[0][{a}]", accept_sparse=False, dtype=dtype,
                        nonnegative=True, copy=True)
        V = check_array(V_in[a], f"init[1][{a}]", accept_sparse=False, dtype=dtype,
                        nonnegative=True, copy=True)
        if U.shape != (d, n_clusters):
            raise ValueError(f"init[0][{a}] must have shape ({d}, {n_clusters}), got {U.shape}")
        if V.shape != (n, n_clusters):
            raise ValueError(f"init[1][{a}] must have shape ({n}, {n_clusters}), got {V.shape}")
        U_list.append(U)
        V_list.append(V)
    return U_list, V_list


def _prepare(X_list, n_clusters, must_link, cannot_link, beta, normalize):
    views = check_views(X_list, "X_list", same_n=False, nonnegative=True)
    dtype = _work_dtype(views)
    views = [X.astype(dtype) if X.dtype != dtype else X for X in views]
    n_list = [X.shape[0] for X in views]
    n_clusters = check_n_clusters(n_clusters, min(n_list))
    beta = check_scalar(beta, "beta", low=0.0)
    if normalize == "none":
        normalize = None
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be 'l2', 'l1' or None, got {normalize!r}")
    must = _check_constraints(must_link, "must_link", n_list)
    cannot = _check_constraints(cannot_link, "cannot_link", n_list)
    empty = np.zeros((0, 2), dtype=np.int64)
    blocks = {key: (must.get(key, empty), cannot.get(key, empty))
              for key in sorted(set(must) | set(cannot))}
    views = [_normalize(X, normalize) for X in views]
    return views, n_clusters, blocks, beta


# --------------------------------------------------------------------------- public
def cmvnmf(X_list, n_clusters, must_link, cannot_link, *, beta=1.0, max_iter=300, tol=1e-6,
           normalize="l2", init="kmeans", rescale=True, random_state=None, verbose=False,
           callback=None, n_jobs=None) -> CMVNMFResult:
    """Constrained multi-view NMF clustering of unmapped views (CMVNMF).

    Each view is factorised as ``X_aᵀ ≈ U_a V_aᵀ`` with nonnegative factors; views whose rows
    do not correspond (different sample counts, unknown order) are tied by inter-view
    must-link / cannot-link pairs, which pull the indicator rows ``V_a[i]``, ``V_b[j]``
    together (must-link, squared distance) or apart (cannot-link, inner product).

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, shapes (n_a, d_a)
        Nonnegative views, samples in rows; ``n_a`` may differ between views and rows need not
        correspond. Sparse views are used as CSR and never densified.
    n_clusters : int
        Number of clusters ``c`` (``1 <= c <= min_a n_a``).
    must_link, cannot_link : dict or None
        ``{(a, b): (p, 2) int array}``: row ``i`` of view ``a`` and row ``j`` of view ``b`` must
        (cannot) be in the same cluster. ``a == b`` gives intra-view pairs (no self-pairs);
        a key ``(b, a)`` is read with its columns swapped, and pairs of both orientations of
        one view pair are merged. A repeated pair counts repeatedly. ``None``: no pairs.
    beta : float, default 1.0
        Weight of the constraint term (``β >= 0``; ``0`` gives independent NMF per view).
    max_iter : int, default 300
        Maximum number of sweeps (one ``U`` and one ``V`` update per view). ``0`` returns
        the initialisation.
    tol : float, default 1e-6
        Stop when ``|f_{t-1} − f_t| <= tol · |f_{t-1}|`` for the objective ``f``.
    normalize : {"l2", "l1", None}, default "l2"
        Scale every sample (row) of every view to unit norm first (all-zero rows stay zero);
        the paper needs the views' ``V`` comparable.
    init : {"kmeans", "random"} or (U_list, V_list), default "kmeans"
        ``"kmeans"``: per view, :func:`fastmv.kmeans` on the normalised data;
        ``V`` = one-hot labels + 0.2, ``U`` = centroids (clipped at 0). ``"random"``: scaled
        absolute Gaussians. A pair of lists gives the initial ``U_a`` (``d_a × c``) and
        ``V_a`` (``n_a × c``) directly (nonnegative; copied).
    rescale : bool, default True
        After each ``U_a`` update, scale every column of ``U_a`` to unit ℓ2 norm and multiply
        the matching column of ``V_a`` by the old norm (``U_a V_aᵀ`` unchanged). This makes
        the views' ``V`` comparable, which the constraint terms and the argmax need
        (ALGORITHMS.md §4); the monotonicity theorem covers ``rescale=False`` only.
    random_state : None, int or numpy Generator
        Seeds the initialisation.
    verbose : bool, default False
        Print the objective after every sweep.
    callback : callable, optional
        ``callback(iteration, state)`` after every sweep, ``state`` a dict with ``"U"``,
        ``"V"`` (lists of the current factors; do not modify) and ``"objective"``. Returning
        ``True`` stops the iteration.
    n_jobs : int or None
        Threads for the Numba kernels (``None``: ``NUMBA_NUM_THREADS``).

    Returns
    -------
    CMVNMFResult
        Per-view ``labels`` (argmax of the rows of ``V_a``), ``U``, ``V``, ``objective``
        history (initial value first), ``n_iter``, ``converged``.

    Notes
    -----
    Objective (ALGORITHMS.md §4)::

        Σ_a ‖X_aᵀ − U_a V_aᵀ‖²
          + β Σ_{(a,b)} [Σ_must ‖V_a[i] − V_b[j]‖² + 2 Σ_cannot V_a[i]·V_b[j]]

    minimised by Lee–Seung-type multiplicative updates guarded by ``ε = 1e-10`` added to
    numerators and denominators; with ``rescale=False`` the objective is non-increasing at
    every update (intra-view blocks use a symmetrised variant of the paper's rule that keeps
    this guarantee; see the module docstring).

    Cost per sweep: O(Σ_a (n_a d_a or nnz(X_a)) · c) for the products with ``X_a`` (BLAS for
    dense views, parallel CSR kernels for sparse ones) plus O(Σ_a (n_a + d_a) c² + |Ω| c) in
    the fused Numba kernels, where ``|Ω|`` is the number of pairs. Memory beyond the
    (normalised) views: O(Σ_a (n_a + d_a) c + |Ω|), plus one CSR copy of ``X_aᵀ`` per sparse
    view; the ``n_a × n_b`` constraint matrices are never formed densely.

    References
    ----------
    Zhang, X., Zong, L., Liu, X., Yu, H. "Constrained NMF-Based Multi-View Clustering on
    Unmapped Data". AAAI 2015.
    """
    max_iter = check_int(max_iter, "max_iter", low=0)
    tol = check_scalar(tol, "tol", low=0.0)
    if not isinstance(rescale, (bool, np.bool_)):
        raise TypeError(f"rescale must be True or False, got {rescale!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = check_random_state(random_state)
    views, n_clusters, blocks, beta = _prepare(X_list, n_clusters, must_link, cannot_link,
                                              beta, normalize)
    with thread_limit(n_jobs):
        U0, V0 = _initial_factors(views, n_clusters, init, rng, n_jobs)
        prob = _Problem(views, blocks, U0, V0, beta=beta, rescale=rescale)
        history = [prob.objective()]
        converged = False
        n_iter = 0
        for it in range(1, max_iter + 1):
            prob.sweep()
            f = prob.objective()
            prev = history[-1]
            history.append(f)
            n_iter = it
            rel = abs(prev - f) / max(abs(prev), np.finfo(np.float64).tiny)
            if verbose:
                print(f"cmvnmf: iter {it:4d}  objective {f:.8e}  rel. change {rel:.2e}")
            if callback is not None:
                state = {"U": prob.U, "V": [prob.V(a) for a in range(prob.m)], "objective": f}
                if callback(it, state) is True:
                    break
            if rel <= tol:
                converged = True
                break
        U_list, V_list = prob.factors()
    labels = [np.argmax(V, axis=1).astype(np.int64) for V in V_list]
    return CMVNMFResult(labels=labels, U=U_list, V=V_list,
                        objective=np.asarray(history, dtype=np.float64), n_iter=n_iter,
                        converged=converged)


# --------------------------------------------------------------------------- CLI hooks
def _demo(random_state=0):
    """Demo rows on the embedded Handwritten data (fou, pix, zer), unmapped (95% of each view
    kept, rows permuted), with 0% and 5% inter-view constraints: one row per view, and with 5%
    one row of all views' labels concatenated (scored jointly, i.e. cluster ids must agree
    across views, which only the constraints can make happen). About 5 s."""
    from . import datasets, simulate
    names = ["fou", "pix", "zer"]
    views, y = datasets.load_handwritten(views=names)
    rng = check_random_state(random_state)
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
    rows = []
    for ratio in (0.0, 0.05):
        if ratio > 0:
            ml, cl = simulate.inter_view_constraints(ys, ratio=ratio, random_state=rng)
        else:
            ml, cl = {}, {}
        res = cmvnmf(Xs, 10, ml, cl, random_state=rng)
        base = f"Handwritten fou,pix,zer unmapped (95% kept), {ratio:.0%} inter-view constraints"
        for a, name in enumerate(names):
            rows.append((f"{base}, view {name}", ys[a], res.labels[a]))
        if ratio > 0:
            rows.append((f"{base}, 3 views jointly", np.concatenate(ys),
                         np.concatenate(res.labels)))
    return rows


def _cli(views, y, params, random_state):
    """Run CMVNMF on ``(views, y)`` from a ``.mat`` file.

    Side-information parameters (popped from ``params``):

    - ``keep`` (default 0.95): fraction of rows each view keeps when the data is made
      unmapped (``fastmv.simulate.unmapped``; rows permuted per view);
    - ``constraint_ratio`` (default 0.05): inter-view pairs as a fraction of all cross pairs
      of every view pair (``fastmv.simulate.inter_view_constraints``), or
      ``n_constraints``: a count per view pair instead;
    - ``n_clusters`` (default: number of classes in ``y``).

    Remaining params go to :func:`cmvnmf` as keywords (``beta``, ``max_iter``, ``tol``,
    ``normalize``, ``init``, ``rescale``, ...). Returns the concatenated true and predicted
    labels of all views.
    """
    from . import simulate
    params = dict(params)
    keep = float(params.pop("keep", 0.95))
    n_constraints = params.pop("n_constraints", None)
    ratio = params.pop("constraint_ratio", None)
    if n_constraints is None and ratio is None:
        ratio = 0.05
    n_clusters = int(params.pop("n_clusters", len(np.unique(y))))
    rng = check_random_state(random_state)
    Xs, ys, _ = simulate.unmapped(views, y, keep=keep, random_state=rng)
    if n_constraints is not None:
        ml, cl = simulate.inter_view_constraints(ys, n_constraints=int(n_constraints),
                                                 random_state=rng)
        side = f"{int(n_constraints)} inter-view pairs per view pair"
    else:
        ratio = float(ratio)
        ml, cl = simulate.inter_view_constraints(ys, ratio=ratio, random_state=rng)
        side = f"{ratio:.2%} inter-view constraints"
    res = cmvnmf(Xs, n_clusters, ml, cl, random_state=rng, **params)
    setting = (f"CMVNMF, {len(Xs)} views unmapped ({keep:.0%} kept), {side}, c={n_clusters}"
               + "".join(f", {k}={v}" for k, v in params.items()))
    return np.concatenate(ys), np.concatenate(res.labels), setting
