"""MVFL: multi-view clustering with joint view/feature selection and partially constrained
cluster labels (Yin, Zhang, Wu, Li, Pattern Recognition 2019; ALGORITHMS.md §2).

The solver alternates

1. reweighting: ``P_k = diag(1 / (2 ‖w_k^v‖))`` on the features of view ``v`` and
   ``Q = diag(1 / (2 ‖w^i‖))``, norms guarded as ``sqrt(‖·‖² + ε²)``;
2. the ``W, b`` step: ``w_k = (X̃ᵀX̃ + λ1 P_k + λ2 Q)⁻¹ X̃ᵀ f̃_k`` with ``X̃`` the
   column-centred data and ``f̃_k`` the centred column of ``F`` (the exact closed form of the
   paper's joint ``W, b`` step), ``b = mean(F) − μᵀW``;
3. the ``F`` step: the multiplicative update of eq. 14 (pairs, or no prior), or eqs. 16–18
   (closed form on the labelled rows, multiplicative update on the others).

The ``W`` step
--------------
Each column has its own diagonal ``D_k = λ1 P_k + λ2 Q`` (``P_k`` depends on the cluster), so
the ``c`` systems share ``X̃ᵀX̃`` but not a matrix. Measured choice: one Cholesky
factorisation per column through LAPACK (``potrf``/``potrs``, ``d³/3`` flops). Warm-started
CG with a Jacobi preconditioner was measured on Handwritten (d = 339, λ1 = λ2 = 1e-3): the
small ridge leaves ``X̃ᵀX̃ + D_k`` badly conditioned and CG needs 850–3600 iterations per
column for a relative residual of 1e-10 (agreement with Cholesky only to 1e-8), 20–80 times
slower than the ten Cholesky factorisations, even warm-started from the previous ``W``. With
``λ1 = 0`` all columns share one matrix and it is factorised once.

When ``d > n`` (text views) the push-through/Woodbury identity
``(D + X̃ᵀX̃)⁻¹X̃ᵀ = D⁻¹X̃ᵀ(I + X̃D⁻¹X̃ᵀ)⁻¹`` turns each column into an ``n × n`` system
``α = (I + X̃ D_k⁻¹ X̃ᵀ)⁻¹ f̃_k``, ``w_k = D_k⁻¹ X̃ᵀ α``. No ``d × d`` matrix is ever formed.
For CSR ``X`` the centring is implicit: the kernel ``sparse_weighted_gram`` forms
``K_k = X D_k⁻¹ Xᵀ`` for all ``k`` in one pass over the sparsity pattern
(``O(c Σ_f nnz_f²)``), then ``K̃ = J K J`` (double centring, ``O(n²)``) equals
``X̃ D_k⁻¹ X̃ᵀ``, and ``X̃ᵀα = Xᵀα`` because ``1ᵀα = 0``; ``X − 1μᵀ`` is never formed (the
double centring loses a few digits when the column means are large against the spread;
tests check agreement with the direct route to 1e-8). For dense ``X`` the centred copy
``X̃`` (``n × d``, the size of the data) is formed once and ``K_k`` is a BLAS ``syrk``.

Monotonicity
------------
What each step provably does not increase (and what ``tests/test_mvfl.py`` checks, step by
step, on random problems):

- ``W, b`` step (IRLS, paper §4.2.2): the smoothed objective ``J_ε`` (norms as
  ``sqrt(‖·‖² + ε²)``) at fixed ``F`` — exactly, by concavity of the square root;
- labelled rows (eq. 18): ``‖Z_l − F_l‖² + λ3 ‖I_l ⊙ F_l‖²``, of which the closed form is the
  exact minimiser over ``F_l ≥ 0``;
- multiplicative step (eq. 14; eq. 17 on the unlabelled rows): the Lagrangian with the
  multiplier *frozen* at the value computed from the current ``F``,
  ``L(F) = ‖Z − F‖² + λ3 tr(Fᵀ I_p F) + tr(Γ (FᵀF − I))`` with
  ``Γ = sym(FᵀZ) − I − λ3 Fᵀ I_p F`` (``λ3`` times the paper's ``Γ``; rows restricted to the
  unlabelled ones with labels). This is the auxiliary-function argument of §4.2.1, which
  needs ``Γ`` symmetric (``∂ tr(Γ FᵀF)/∂F = F(Γ + Γᵀ)``): ``Γ`` is built from the symmetric
  part of ``FᵀZ``, which leaves the Lagrangian unchanged since ``FᵀF − I`` is symmetric.

The objective ``J`` itself (eq. 8 or 9 with the relaxation, recorded in ``objective`` with the
exact norms) is *not* provably monotone: the multiplier changes between iterations and ``F``
is not kept orthonormal, so ``J`` can rise while ``F`` moves towards ``FᵀF = I``. Measured:
on 60 small random problems started from a random ``F``, ``J`` rose at some iteration in 27
(by up to 29% relative); on Handwritten from the k-means start it fell at every iteration in
all six runs checked (no prior, labels, pairs; two draws).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ._result import Result
from ._threads import thread_limit
from ._validation import (check_array, check_int, check_n_clusters, check_pairs,
                          check_partial_labels, check_random_state, check_scalar, check_views)

__all__ = ["mvfl", "MVFLResult"]

_NORMALIZE = ("zscore", "l2", "minmax", None)
# On the Woodbury route a dense X with fewer nonzeros than this fraction is handled as CSR.
_SPARSE_DENSITY = 0.1
_SOLVERS = ("auto", "direct", "woodbury")


@dataclasses.dataclass(frozen=True, repr=False)
class MVFLResult(Result):
    """Result of :func:`mvfl`.

    Attributes
    ----------
    labels : ndarray, shape (n,), int64
        Cluster of each sample: row-wise argmax of ``F`` (for a row that the multiplicative
        update shrank to exactly zero, the argmax of ``XW + 1bᵀ`` instead).
    F : ndarray, shape (n, c)
        Nonnegative relaxed cluster indicator.
    W : ndarray, shape (d, c)
        Projection matrix on the normalised, concatenated features (views stacked by rows,
        boundaries ``view_ptr``).
    b : ndarray, shape (c,)
        Intercept: ``F ≈ X W + 1 bᵀ`` on the normalised data.
    view_weights : ndarray, shape (m, c)
        Group norms ``‖w_k^v‖``: the weight of view ``v`` for cluster ``k``.
    feature_weights : ndarray, shape (d,)
        Row norms ``‖w^i‖``: the weight of each (concatenated) feature.
    view_ptr : ndarray, shape (m + 1,), int64
        Feature boundaries of the views in ``W`` and ``feature_weights``.
    objective : ndarray, shape (n_iter,)
        Objective (eq. 8 for labels, eq. 9 for pairs, exact norms) after each iteration.
    n_iter : int
        Iterations run.
    converged : bool
        Whether the relative change of the objective fell below ``tol``.
    """

    labels: np.ndarray
    F: np.ndarray
    W: np.ndarray
    b: np.ndarray
    view_weights: np.ndarray
    feature_weights: np.ndarray
    view_ptr: np.ndarray
    objective: np.ndarray
    n_iter: int
    converged: bool


# ------------------------------------------------------------------------------------------
# preprocessing


def _column_std(X):
    """Population standard deviation of each column of dense or CSR ``X``."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        return np.sqrt(np.maximum(sq - mean ** 2, 0.0))
    return X.std(axis=0)


def _column_range(X):
    """``max − min`` of each column of dense or CSR ``X`` (implicit zeros included)."""
    if sp.issparse(X):
        mx = np.asarray(X.max(axis=0).toarray()).ravel()  # scipy counts implicit zeros
        mn = np.asarray(X.min(axis=0).toarray()).ravel()
        return mx - mn
    return X.max(axis=0) - X.min(axis=0)


def _scale_columns(X, s):
    if sp.issparse(X):
        return sp.csr_matrix(X @ sp.diags(s))
    return X * s


def _normalize_views(views, scheme):
    """Return new, scaled views (the caller's arrays are never written).

    Every scheme is a per-feature or per-sample *scaling*: column shifts are irrelevant to
    MVFL (the intercept ``b`` absorbs them and the ``W`` step centres implicitly) and to the
    k-means initialisation, so sparse views stay sparse.
    """
    out = []
    for X in views:
        d = X.shape[1]
        if scheme is None:
            out.append(X)
        elif scheme == "zscore":
            std = _column_std(X)
            s = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0) / np.sqrt(d)
            out.append(_scale_columns(X, s))
        elif scheme == "minmax":
            rng = _column_range(X)
            s = np.where(rng > 0, 1.0 / np.where(rng > 0, rng, 1.0), 0.0)
            out.append(_scale_columns(X, s))
        else:  # "l2": unit Euclidean norm per sample within the view
            if sp.issparse(X):
                norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
            else:
                norms = np.sqrt(np.einsum("ij,ij->i", X, X))
            s = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
            out.append(sp.csr_matrix(sp.diags(s) @ X) if sp.issparse(X) else X * s[:, None])
    return out


def _concatenate(views):
    if any(sp.issparse(X) for X in views):
        X = sp.hstack([sp.csr_matrix(V) for V in views], format="csr")
        X.sort_indices()
        return X
    return np.ascontiguousarray(np.hstack(views))


def _pair_csr(n, must_link, cannot_link):
    """Symmetric CSR ``I_p`` (-1 must, +1 cannot; duplicates add) with int64 index arrays."""
    rows = np.concatenate([must_link[:, 0], must_link[:, 1], cannot_link[:, 0], cannot_link[:, 1]])
    cols = np.concatenate([must_link[:, 1], must_link[:, 0], cannot_link[:, 1], cannot_link[:, 0]])
    vals = np.concatenate([-np.ones(2 * len(must_link)), np.ones(2 * len(cannot_link))])
    Ip = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    Ip.sum_duplicates()
    Ip.sort_indices()
    return (Ip.indptr.astype(np.int64), Ip.indices.astype(np.int64),
            Ip.data.astype(np.float64))


def _match_clusters(km, rows, classes, c):
    """Relabel k-means clusters so that they agree best with the known classes.

    The label prior ties column ``k`` of ``F`` to class ``k``, whereas k-means numbers its
    clusters arbitrarily; the permutation maximising the number of labelled samples whose
    cluster id equals their class (Hungarian algorithm on the ``c × c`` contingency table of
    the labelled samples) is applied to the k-means labels.
    """
    from scipy.optimize import linear_sum_assignment

    table = np.zeros((c, c))
    np.add.at(table, (km[rows], classes), 1.0)
    r, col = linear_sum_assignment(-table)
    perm = np.empty(c, dtype=np.int64)
    perm[r] = col
    return perm[km]


def _empty_csr(n):
    return (np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64))


# ------------------------------------------------------------------------------------------
# the W step


class _WStep:
    """Solves the reweighted ridge systems of the ``W, b`` step for a fixed ``X``.

    ``route="direct"`` forms ``G = X̃ᵀX̃`` (``d × d``) once, then factorises ``G + diag(D_k)``
    per column (once when all columns share the diagonal). ``route="woodbury"`` solves
    ``n × n`` systems ``I + X̃ D_k⁻¹ X̃ᵀ`` per column and never forms a ``d × d`` matrix.
    """

    def __init__(self, X, route):
        self.X = X
        self.n, self.d = X.shape
        self.sparse = sp.issparse(X)
        self.mu = np.asarray(X.mean(axis=0)).ravel()
        self.route = route
        self.G = None
        if route == "woodbury" and self.sparse:
            XT = X.T.tocsr()
            XT.sort_indices()
            self.csr = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
            self.csr_t = (XT.indptr.astype(np.int64), XT.indices.astype(np.int64), XT.data)
        if route == "woodbury" and not self.sparse:
            self.Xc = X - self.mu  # explicit centring of dense X: no cancellation in K
        if route == "direct":
            if self.sparse:
                G = (X.T @ X).toarray()
                G -= self.n * np.outer(self.mu, self.mu)
            else:
                Xc = X - self.mu
                G = Xc.T @ Xc
            self.G = G

    def solve(self, F, D, shared):
        """``W`` (``d × c``) and ``b`` (``c``) for indicator ``F`` and diagonals ``D`` (``c × d``).

        ``shared``: all rows of ``D`` are equal (``λ1 = 0``), so one factorisation serves
        every column.
        """
        X = self.X
        c = F.shape[1]
        fbar = F.mean(axis=0)
        Fc = F - fbar
        W = np.empty((self.d, c))
        if self.route == "direct":
            R = np.asarray(X.T @ Fc)  # X̃ᵀ f̃ = Xᵀ f̃ since f̃ is centred
            if shared:
                W[:] = self._direct(D[0], R)
            else:
                for k in range(c):
                    W[:, k] = self._direct(D[k], R[:, k])
        else:
            Dinv = 1.0 / (D[:1] if shared else D)
            if self.sparse:
                from fastmv.kernels.feature_selection import sparse_weighted_gram

                Ks = sparse_weighted_gram(*self.csr, *self.csr_t, Dinv)
            else:
                Ks = None
            if shared:
                W[:] = self._woodbury(Dinv[0], Fc, None if Ks is None else Ks[0])
            else:
                for k in range(c):
                    W[:, k] = self._woodbury(Dinv[k], Fc[:, k], None if Ks is None else Ks[k])
        b = fbar - self.mu @ W
        return W, b

    def _direct(self, dk, rhs):
        A = self.G.copy()
        A[np.diag_indices_from(A)] += dk
        cf = sla.cho_factor(A, lower=False, overwrite_a=True, check_finite=False)
        return sla.cho_solve(cf, rhs, overwrite_b=False, check_finite=False)

    def _woodbury(self, dinv, fc, K=None):
        X = self.X
        if K is None:
            Y = self.Xc * np.sqrt(dinv)
            K = Y @ Y.T  # X̃ D⁻¹ X̃ᵀ through BLAS syrk
        else:
            # sparse X: K = X D⁻¹ Xᵀ, double-centred J K J = X̃ D⁻¹ X̃ᵀ (K symmetric)
            r = K.mean(axis=1)
            K -= r[:, None]
            K -= r[None, :]
            K += r.mean()
        K[np.diag_indices_from(K)] += 1.0
        cf = sla.cho_factor(K, lower=False, overwrite_a=True, check_finite=False)
        alpha = sla.cho_solve(cf, fc, check_finite=False)
        w = np.asarray((X if self.sparse else self.Xc).T @ alpha)  # 1ᵀα = 0: X̃ᵀα = Xᵀα
        return w * (dinv if w.ndim == 1 else dinv[:, None])


# ------------------------------------------------------------------------------------------
# objective and F step


def _objective(Z, F, W, view_ptr, lam1, lam2, lam3, prior, eps=0.0):
    from fastmv.kernels.feature_selection import pair_gram, weight_norms

    groups, rows = weight_norms(W, view_ptr, eps)
    J = float(np.sum((Z - F) ** 2)) + lam1 * float(groups.sum()) + lam2 * float(rows.sum())
    if prior["kind"] == "labels":
        lab, y = prior["rows"], prior["classes"]
        if lab.size:
            Fl = F[lab] ** 2
            J += lam3 * float(Fl.sum() - Fl[np.arange(lab.size), y].sum())
    elif prior["kind"] == "pairs":
        J += lam3 * float(np.trace(pair_gram(F, *prior["Ip"])))
    return J


def _symmetric(S):
    return 0.5 * (S + S.T)


def _f_step(F, Z, lam3, prior, empty):
    from fastmv.kernels.feature_selection import (labelled_rows_update,
                                                  multiplicative_f_update, pair_gram)

    c = F.shape[1]
    eye = np.eye(c)
    if prior["kind"] == "labels":
        unl = prior["unlabelled"]
        Fn = F.copy()
        if unl.size:
            Gam = _symmetric(F[unl].T @ Z[unl]) - eye
            Fn = multiplicative_f_update(F, Z, Gam, 0.0, *empty, unl)
        if prior["rows"].size:
            labelled_rows_update(Fn, Z, prior["rows"], prior["classes"], lam3)
        return Fn
    if prior["kind"] == "pairs":
        Gam = _symmetric(F.T @ Z) - eye - lam3 * pair_gram(F, *prior["Ip"])
        return multiplicative_f_update(F, Z, Gam, lam3, *prior["Ip"], prior["all"])
    Gam = _symmetric(F.T @ Z) - eye
    return multiplicative_f_update(F, Z, Gam, 0.0, *empty, prior["all"])


# ------------------------------------------------------------------------------------------
# the monotone F step


class _FTerm:
    """The part of the objective that depends on ``F`` (``Z`` fixed), with its gradient.

    ``h(F) = ‖Z − F‖² + λ3 φ(F) + (ρ/4) ‖FᵀF − I‖²``: the orthogonality of eq. 10 enters as
    a quadratic penalty, which keeps every cluster column alive (without it ``F = 1bᵀ``,
    ``W = 0`` has objective 0).
    """

    def __init__(self, n, c, lam3, rho, prior):
        self.lam3 = lam3
        self.rho = rho
        self.kind = prior["kind"]
        self.eye = np.eye(c)
        if self.kind == "labels":
            self.rows = prior["rows"]
            mask = np.ones((self.rows.size, c))
            mask[np.arange(self.rows.size), prior["classes"]] = 0.0
            self.mask = mask
        elif self.kind == "pairs":
            self.Ip = sp.csr_matrix(prior["Ip"][::-1], shape=(n, n))

    def value(self, F, Z, grad=False):
        R = F - Z
        E = F.T @ F - self.eye
        val = float(np.vdot(R, R)) + 0.25 * self.rho * float(np.vdot(E, E))
        G = None
        if grad:
            G = 2.0 * R + self.rho * (F @ E)
        if self.kind == "labels" and self.rows.size and self.lam3:
            Fl = F[self.rows] * self.mask
            val += self.lam3 * float(np.vdot(Fl, Fl))
            if grad:
                G[self.rows] += 2.0 * self.lam3 * Fl
        elif self.kind == "pairs" and self.lam3:
            IpF = np.asarray(self.Ip @ F)
            val += self.lam3 * float(np.vdot(F, IpF))
            if grad:
                G += 2.0 * self.lam3 * IpF
        return val, G


def _f_step_monotone(F, Z, term, alpha, n_inner):
    """Projected gradient on ``F >= 0`` with backtracking: ``h`` never increases.

    Each accepted step satisfies the sufficient-decrease test
    ``h(F⁺) <= h(F) + ⟨∇h, F⁺ − F⟩ + ‖F⁺ − F‖² / (2α)`` (which implies
    ``h(F⁺) <= h(F) − ‖F⁺ − F‖² / (2α)``) and, against rounding, ``h(F⁺) <= h(F)``; a step
    that fails both at a vanishing ``α`` is not taken. Returns ``(F, α)``; ``α`` carries over.
    """
    h, G = term.value(F, Z, grad=True)
    for _ in range(n_inner):
        for _ in range(60):
            Fn = np.maximum(F - alpha * G, 0.0)
            D = Fn - F
            dd = float(np.vdot(D, D))
            if dd == 0.0:
                return F, alpha
            hn, _ = term.value(Fn, Z)
            if hn <= h + float(np.vdot(G, D)) + 0.5 * dd / alpha and hn <= h:
                break
            alpha *= 0.5
        else:
            return F, alpha
        done = h - hn <= 1e-12 * abs(h)
        F, h = Fn, hn
        if done:
            break
        _, G = term.value(F, Z, grad=True)
        alpha *= 2.0
    return F, alpha


# ------------------------------------------------------------------------------------------
# public solver


def mvfl(X_list, n_clusters, *, labels=None, must_link=None, cannot_link=None, lam1=1e-3,
         lam2=1e-3, lam3=1.0, max_iter=100, tol=1e-6, init="kmeans", random_state=None,
         verbose=False, callback=None, normalize="zscore", solver="auto", eps=1e-8,
         n_jobs=None, f_step="monotone", rho=1.0, n_inner=10) -> MVFLResult:
    """Multi-view clustering with joint view/feature selection and partial labels or pairs.

    Minimises (ALGORITHMS.md §2; Yin et al. 2019, eqs. 8–9)::

        ‖X W + 1bᵀ − F‖² + λ1 Σ_k Σ_v ‖w_k^v‖ + λ2 Σ_i ‖w^i‖ + λ3 φ(F),
        F ≥ 0, relaxed orthogonality FᵀF = I (on the unlabelled rows with labels),

    with ``φ(F) = ‖I_l ⊙ F_l‖²`` for partial labels (``I_l`` is 0 at a labelled sample's class,
    1 elsewhere) or ``φ(F) = Σ_ij I_p[i,j] (FFᵀ)[i,j]`` for pairs (``I_p`` symmetric, -1 for a
    must-link, +1 for a cannot-link, so each listed pair counts twice). Without a prior this
    is the paper's MultiFL. ``X`` is the concatenation of the normalised views.

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, each (n, d_v)
        The views, samples in rows. Sparse views stay sparse (CSR); never modified.
    n_clusters : int
        Number of clusters ``c``.
    labels : array-like of int, shape (n,), optional
        Partial labels in ``[0, c)``, ``-1`` for unknown. Excludes ``must_link``/``cannot_link``.
    must_link, cannot_link : array-like of int, shape (p, 2), optional
        Pairs of sample indices known to share / not to share a cluster. A pair may not be in
        both lists. Excludes ``labels``.
    lam1 : float, default 1e-3
        View-selection weight (group norm per view and cluster), ``>= 0``.
    lam2 : float, default 1e-3
        Feature-selection weight (ℓ2,1 norm of the rows of ``W``), ``>= 0``; ``lam1 + lam2``
        must be positive (the ``W`` systems need the regularising diagonal).
    lam3 : float, default 1.0
        Prior weight, ``>= 0``. **Its useful range depends on the prior.** With labels the
        term only shrinks the off-class entries of the labelled rows (eq. 18): larger is
        better up to a plateau, about 10–1000 (Handwritten, 10% labels, 3 draws: λ3 = 1 gives
        accuracy 0.88, λ3 = 100 and 1000 give 0.91; λ3 → ∞ pins each labelled row to its
        class). With pairs ``λ3`` multiplies ``Fᵀ I_p F`` inside the multiplicative update,
        against the orthogonality multiplier, and must stay small: Handwritten with the
        19900 pairs among 10% of the samples, 5 draws: λ3 = 1e-3 → 0.86, 1e-2 → 0.89,
        3e-2 → 0.80, 0.1 → 0.66 (clusters collapse, as the paper's Fig. 7 warns). Scale it
        down as the number of pairs grows.
    max_iter : int, default 100
        Maximum number of outer iterations.
    tol : float, default 1e-6
        Stop when ``|J_t − J_{t−1}| <= tol · |J_{t−1}|``.
    init : {"kmeans", "random"} or array-like of shape (n, c), default "kmeans"
        Initial ``F``: one-hot of k-means (10 restarts) on the concatenated normalised views
        plus 0.2 (the paper's §5.6.1), uniform ``(0, 1)`` entries, or a given nonnegative
        array (used as is). With partial labels and a string ``init``, the k-means clusters
        are first renumbered to agree best with the known classes (Hungarian matching on the
        labelled samples: the prior ties column ``k`` of ``F`` to class ``k``, k-means numbers
        its clusters arbitrarily) and the labelled rows start at their class (one-hot + 0.2).
        Without the matching the label prior fights the initial clustering: on Handwritten
        the accuracy with 10% labels drops from 0.91 to 0.75–0.83.
    random_state : None, int or numpy Generator
        Seeds the k-means / random initialisation; results are reproducible.
    verbose : bool, default False
        Print the objective at each iteration.
    callback : callable, optional
        ``callback(iter, state)`` after each iteration; ``state`` is a dict with ``W``,
        ``b``, ``F``, ``Z`` (``XW + 1bᵀ``) and ``objective`` (do not modify the arrays).
    normalize : {"zscore", "l2", "minmax", None}, default "zscore"
        Per-view preprocessing. ``"zscore"``: each feature scaled to unit variance and each
        view by ``1/sqrt(d_v)`` (every view then has the same total variance, 1; the default,
        which makes partial labels useful, see ALGORITHMS.md §2). ``"l2"``: each sample
        scaled to unit norm within each view. ``"minmax"``: each feature scaled to range 1.
        ``None``: use the data as given. Column shifts never matter (the intercept absorbs
        them), so all schemes are pure scalings and keep sparse views sparse. Zero-variance
        features are zeroed. For word counts prefer ``"l2"`` (3Sources, 10% labels, 5
        draws: accuracy 0.66 with ``"l2"``, 0.51 with ``"zscore"``).
    solver : {"auto", "direct", "woodbury"}, default "auto"
        ``W`` step: ``"direct"`` factorises ``d × d`` systems ``X̃ᵀX̃ + D_k``; ``"woodbury"``
        factorises ``n × n`` systems ``I + X̃ D_k⁻¹ X̃ᵀ``; ``"auto"`` takes the smaller.
        On the Woodbury route a dense ``X`` with under 10% nonzeros (text stored densely) is
        handled as CSR internally.
    eps : float, default 1e-8
        Guard of the reweighting: norms are used as ``sqrt(‖·‖² + eps²)`` (the paper's
        "perturbation").
    n_jobs : int or None
        Threads of the Numba kernels.

    Returns
    -------
    MVFLResult
        ``labels``, ``F``, ``W``, ``b``, ``view_weights`` (``m × c``), ``feature_weights``
        (``d``), ``view_ptr``, ``objective`` history, ``n_iter``, ``converged``.

    Raises
    ------
    ValueError
        Both labels and pairs given; wrong lengths or shapes; labels outside ``[-1, c)``; pair
        indices out of range, self-pairs, or a pair both must- and cannot-linked; negative
        weights or ``lam1 = lam2 = 0``; unknown ``init``/``normalize``/``solver``.
    TypeError
        Wrong types (e.g. a single array instead of a list of views).

    Notes
    -----
    Cost per iteration with ``n`` samples, ``d = Σ d_v`` features, ``c`` clusters, ``|Ω|``
    pairs: the ``W`` step costs ``O(c d³/3)`` with the direct route (``d ≤ n``; ``X̃ᵀX̃`` formed
    once, ``O(n d²)``, memory ``O(d²)``) or ``O(c (n² d + n³/3))`` with the Woodbury route
    (``d > n``; ``O(c (Σ_f nnz_f² + n³/3))`` for CSR views, where ``nnz_f`` counts the
    samples using feature ``f``; memory ``O(c n²)``, plus a centred dense copy of dense
    ``X``);
    ``F`` step ``O(n c² + |Ω| c)``; objective ``O(n c + d c + |Ω| c)``. Memory besides the
    data: ``O(n c + d c)`` plus the factorised matrix. Normalisation copies each view once
    (same sparsity).
    """
    from fastmv.kernels.feature_selection import irls_diagonal, weight_norms

    views = check_views(X_list, "X_list", accept_sparse=True)
    n = views[0].shape[0]
    c = check_n_clusters(n_clusters, n)
    lam1 = check_scalar(lam1, "lam1", low=0.0)
    lam2 = check_scalar(lam2, "lam2", low=0.0)
    lam3 = check_scalar(lam3, "lam3", low=0.0)
    if lam1 + lam2 <= 0:
        raise ValueError("lam1 and lam2 cannot both be 0: the W step needs the regularising "
                         "diagonal lam1 P_k + lam2 Q")
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_scalar(tol, "tol", low=0.0)
    eps = check_scalar(eps, "eps", low=0.0, low_inclusive=False)
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be one of {_NORMALIZE}, got {normalize!r}")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = check_random_state(random_state)

    has_pairs = must_link is not None or cannot_link is not None
    if labels is not None and has_pairs:
        raise ValueError("give at most one kind of prior: labels, or must_link/cannot_link "
                         "pairs, not both")
    rows_all = np.arange(n, dtype=np.int64)
    if labels is not None:
        y = check_partial_labels(labels, n, c, "labels")
        lab = np.flatnonzero(y >= 0).astype(np.int64)
        prior = {"kind": "labels", "rows": lab, "classes": y[lab].astype(np.int64),
                 "unlabelled": np.flatnonzero(y < 0).astype(np.int64), "all": rows_all}
    elif has_pairs:
        ml = check_pairs(must_link, "must_link", n)
        cl = check_pairs(cannot_link, "cannot_link", n)
        if len(ml) and len(cl):
            key_ml = np.minimum(ml[:, 0], ml[:, 1]) * n + np.maximum(ml[:, 0], ml[:, 1])
            key_cl = np.minimum(cl[:, 0], cl[:, 1]) * n + np.maximum(cl[:, 0], cl[:, 1])
            both = np.intersect1d(key_ml, key_cl)
            if both.size:
                i, j = divmod(int(both[0]), n)
                raise ValueError(f"the pair ({i}, {j}) is in both must_link and cannot_link")
        prior = {"kind": "pairs", "Ip": _pair_csr(n, ml, cl), "all": rows_all}
    else:
        prior = {"kind": "none", "all": rows_all}

    if isinstance(init, str):
        if init not in ("kmeans", "random"):
            raise ValueError(f"init must be 'kmeans', 'random' or an (n, c) array, got {init!r}")
        F0 = None
    else:
        F0 = check_array(init, "init", accept_sparse=False, dtype=np.float64, nonnegative=True,
                         copy=True)
        if F0.shape != (n, c):
            raise ValueError(f"init must have shape ({n}, {c}), got {F0.shape}")

    with thread_limit(n_jobs):
        normed = _normalize_views(views, normalize)
        view_ptr = np.concatenate([[0], np.cumsum([V.shape[1] for V in normed])]).astype(np.int64)
        X = _concatenate(normed)
        d = X.shape[1]
        if X.dtype != np.float64:
            X = X.astype(np.float64)

        if F0 is None:
            if init == "kmeans":
                from ._kmeans import kmeans

                km = kmeans(X, c, n_init=10, random_state=rng, n_jobs=n_jobs).labels
                if prior["kind"] == "labels" and prior["rows"].size:
                    km = _match_clusters(km, prior["rows"], prior["classes"], c)
                if prior["kind"] == "labels" and prior["rows"].size:
                    km = km.copy()
                    km[prior["rows"]] = prior["classes"]
                if f_step == "monotone":
                    F0 = np.zeros((n, c))
                    F0[np.arange(n), km] = 1.0
                    F0 /= np.sqrt(np.maximum(F0.sum(axis=0), 1.0))
                else:
                    F0 = np.full((n, c), 0.2)
                    F0[np.arange(n), km] += 1.0
            else:
                F0 = rng.uniform(0.0, 1.0, size=(n, c))
                if prior["kind"] == "labels" and prior["rows"].size and f_step == "paper":
                    F0[prior["rows"]] = 0.2
                    F0[prior["rows"], prior["classes"]] += 1.0
        F = F0

        route = solver if solver != "auto" else ("woodbury" if d > n else "direct")
        Xw = X
        if route == "woodbury" and not sp.issparse(X) and \
                np.count_nonzero(X) < _SPARSE_DENSITY * X.size:
            Xw = sp.csr_matrix(X)  # text stored dense: the sparse Gram kernel is far cheaper
        wstep = _WStep(Xw, route)
        empty = _empty_csr(n)
        shared = lam1 == 0.0
        m = len(view_ptr) - 1
        W = None
        term = _FTerm(n, c, lam3, rho, prior)
        alpha = 0.5
        history = []
        converged = False
        it = 0
        for it in range(1, max_iter + 1):
            if W is None:
                groups, rnorm = np.ones((m, c)), np.ones(d)
            else:
                groups, rnorm = weight_norms(W, view_ptr, eps)
            D = irls_diagonal(groups, rnorm, view_ptr, lam1, lam2)
            W, b = wstep.solve(F, D, shared)
            Z = np.asarray(X @ W) + b
            if f_step == "paper":
                F = _f_step(F, Z, lam3, prior, empty)
                J = _objective(Z, F, W, view_ptr, lam1, lam2, lam3, prior)
            else:
                F, alpha = _f_step_monotone(F, Z, term, alpha, n_inner)
                g_e, r_e = weight_norms(W, view_ptr, eps)
                J = term.value(F, Z)[0] + lam1 * float(g_e.sum()) + lam2 * float(r_e.sum())
            history.append(J)
            if verbose:
                print(f"mvfl iter {it:4d}  objective {J:.10g}")
            if callback is not None:
                callback(it, {"W": W, "b": b, "F": F, "Z": Z, "objective": J})
            if it > 1 and abs(history[-2] - J) <= tol * abs(history[-2]):
                converged = True
                break

        groups, rnorm = weight_norms(W, view_ptr, 0.0)
        labels_out = np.argmax(F, axis=1).astype(np.int64)
        dead = np.flatnonzero(F.max(axis=1) <= 0.0)
        if dead.size:  # rows shrunk to zero by the multiplicative step: use the regression
            labels_out[dead] = np.argmax(Z[dead], axis=1)
    return MVFLResult(
        labels=labels_out,
        F=F,
        W=W,
        b=np.asarray(b, dtype=np.float64),
        view_weights=np.asarray(groups),
        feature_weights=np.asarray(rnorm),
        view_ptr=view_ptr,
        objective=np.asarray(history, dtype=np.float64),
        n_iter=it,
        converged=converged,
    )


# ------------------------------------------------------------------------------------------
# command line hooks


def _pairs_from_labelled(y, ratio, rng):
    """All pairs among a random ``ratio`` of the samples: must-link where the classes agree.

    This is how the paper turns its labelled samples into pairwise constraints.
    """
    from . import simulate

    part = simulate.partial_labels(y, ratio, random_state=rng)
    idx = np.flatnonzero(part >= 0)
    i, j = np.triu_indices(idx.size, 1)
    a, b = idx[i], idx[j]
    same = part[a] == part[b]
    return (np.column_stack([a[same], b[same]]).astype(np.int64),
            np.column_stack([a[~same], b[~same]]).astype(np.int64))


def _demo(random_state=0):
    """Rows ``(setting, y_true, y_pred)`` on the embedded Handwritten data (fou, fac, zer;
    n = 2000, all samples), the paper's three settings with 10% of the samples as prior."""
    from . import simulate
    from .datasets import load_handwritten

    views, y = load_handwritten(views=["fou", "fac", "zer"])
    rng = check_random_state(random_state)
    rows = []
    r = mvfl(views, 10, random_state=rng)
    rows.append(("no prior (MultiFL), fou+fac+zer, lam1=lam2=1e-3", y, r.labels))
    lab = simulate.partial_labels(y, 0.1, random_state=rng)
    r = mvfl(views, 10, labels=lab, lam3=100.0, random_state=rng)
    rows.append(("10% partial labels, lam3=100", y, r.labels))
    ml, cl = _pairs_from_labelled(y, 0.1, rng)
    r = mvfl(views, 10, must_link=ml, cannot_link=cl, lam3=0.01, random_state=rng)
    rows.append((f"all {len(ml) + len(cl)} pairs among 10% of samples, lam3=0.01", y, r.labels))
    return rows


def _cli(views, y, params, random_state):
    """Run MVFL on ``(views, y)`` from a ``.mat`` file with simulated side information.

    Side-information parameters (popped from ``params``):

    - ``prior``: ``"labels"`` (default), ``"pairs"`` or ``"none"``;
    - ``label_ratio`` (default 0.1): fraction of samples whose label is revealed
      (``prior="labels"``), or whose labels are turned into all pairwise constraints among
      them, must-link where the classes agree (``prior="pairs"``);
    - ``n_clusters``: defaults to the number of classes in ``y``.

    ``lam3`` defaults to 100 with labels and 0.01 with pairs (see :func:`mvfl` on λ3's
    ranges). Every other entry is passed to :func:`mvfl` as a keyword argument (unknown
    names raise ``TypeError``).
    """
    params = dict(params)
    y = np.asarray(y)
    prior = params.pop("prior", "labels")
    if prior not in ("labels", "pairs", "none"):
        raise ValueError(f"prior must be 'labels', 'pairs' or 'none', got {prior!r}")
    ratio = check_scalar(params.pop("label_ratio", 0.1), "label_ratio", low=0.0, high=1.0)
    c = params.pop("n_clusters", int(np.unique(y).size))
    rng = check_random_state(random_state)
    if prior == "labels":
        from . import simulate

        params.setdefault("lam3", 100.0)
        params["labels"] = simulate.partial_labels(y, ratio, random_state=rng)
        setting = f"{ratio:.0%} partial labels, lam3={params['lam3']}"
    elif prior == "pairs":
        params.setdefault("lam3", 0.01)
        ml, cl = _pairs_from_labelled(y, ratio, rng)
        params["must_link"], params["cannot_link"] = ml, cl
        setting = (f"{len(ml) + len(cl)} pairs among {ratio:.0%} of samples, "
                   f"lam3={params['lam3']}")
    else:
        setting = "no prior (MultiFL)"
    params.setdefault("random_state", rng)
    res = mvfl(views, c, **params)
    extra = ", ".join(f"{k}={v}" for k, v in params.items()
                      if k in ("lam1", "lam2", "normalize", "max_iter"))
    return y, res.labels, setting + (", " + extra if extra else "")
