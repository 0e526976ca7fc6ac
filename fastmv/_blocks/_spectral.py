"""Spectral clustering: Ng–Jordan–Weiss on a similarity, and the Markov-chain variant
(Zhou, Huang & Schölkopf) on a transition matrix.

Both use only products with the similarity when it is large, so a similarity given as a
:class:`scipy.sparse.linalg.LinearOperator` is never formed: block products
(:func:`block_krylov_eigenpairs`) for a LinearOperator, ARPACK ``eigsh`` for a large sparse or
dense array.
"""
from __future__ import annotations

import warnings
from concurrent.futures import Executor
from numbers import Integral

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._core._driver import caller_stacklevel
from .._core._linalg import BlockKrylov, fix_signs
from .._core._preprocessing import normalize_rows
from .._core._validation import (
    Interval,
    check_array,
    check_int,
    check_n_clusters,
    check_operator_product,
    check_random_state,
    declare_params,
)
from ..exceptions import ConvergenceWarning, DegenerateSolutionWarning, InvalidParameterError
from ._kmeans import kmeans
from ._peak import check_spectral

__all__ = ["spectral_embedding", "spectral_clustering", "markov_spectral_clustering",
           "stationary_distribution"]

# Below this size a dense eigh of the n × n matrix is faster and more robust than ARPACK.
_DENSE_EIGH_MAX_N = 1000
# ARPACK's restart cap (scipy's default, 10 n, let a stalled solve run for many minutes on a
# nearly rank-one matrix); past it, a dense eigh below this size, block Krylov above.
_ARPACK_MAX_RESTARTS = 300
_DENSE_FALLBACK_MAX_N = 6000
_BLOCK_FALLBACK_PRODUCTS = 200
# An eigenvalue of the symmetrised chain below this fraction of the largest carries no cluster:
# fewer than n_clusters above it is a degenerate (nearly low-rank) transition matrix.
_DEGENERATE_EIGENVALUE = 1e-3


def _as_similarity(S, name):
    if isinstance(S, spla.LinearOperator):
        if S.shape[0] != S.shape[1]:
            raise InvalidParameterError(f"{name} must be square, got shape {S.shape}")
        return S
    S = check_array(S, name, accept_sparse=True)
    if S.shape[0] != S.shape[1]:
        raise InvalidParameterError(f"{name} must be square, got shape {S.shape}")
    return S


def _check_symmetric_nonnegative(S, name):
    """What the docstring requires of an explicit similarity (an operator is only multiplied):
    no negative entry, and ``S = Sᵀ`` up to rounding (relative to the largest entry)."""
    if isinstance(S, spla.LinearOperator):
        return
    values = S.data if sp.issparse(S) else S
    if values.size == 0:
        return
    if values.min() < 0:
        raise InvalidParameterError(f"{name} has negative entries; a nonnegative similarity is "
                                    "required")
    scale = float(values.max())
    diff = abs(S - S.T)
    worst = float(diff.max()) if (not sp.issparse(diff) or diff.nnz) else 0.0
    if worst > 1e-8 * scale:
        raise InvalidParameterError(f"{name} is not symmetric (largest |S - S.T| = {worst:.3g}, "
                                    f"largest entry {scale:.3g}); pass (S + S.T) / 2")


def top_eigenvectors(A, k, rng, dense=None):
    """Eigenvectors of the ``k`` largest (algebraic) eigenvalues of symmetric ``A``, with
    eigenvalues in descending order and a deterministic sign (largest-|entry| positive)."""
    n = A.shape[0]
    if dense is not None:
        w, V = sla.eigh(dense, subset_by_index=[n - k, n - 1])
    elif k >= n - 1:
        dense_A = A @ np.eye(n) if isinstance(A, spla.LinearOperator) else (
            A.toarray() if sp.issparse(A) else A)
        w, V = sla.eigh((dense_A + dense_A.T) / 2, subset_by_index=[n - k, n - 1])
    else:
        v0 = rng.uniform(-1, 1, size=n)
        try:
            w, V = spla.eigsh(A, k=k, which="LA", v0=v0, maxiter=_ARPACK_MAX_RESTARTS)
        except (spla.ArpackNoConvergence, spla.ArpackError):
            w, V = _eigen_fallback(A, k, rng)
    order = np.argsort(w)[::-1]
    return w[order], fix_signs(V[:, order])


def _eigen_fallback(A, k, rng):
    """Top-``k`` eigenpairs of symmetric ``A`` when ARPACK stalled (a clustered or near-zero
    spectrum around the ``k``-th eigenvalue): a dense ``eigh`` up to a size, else the block
    Krylov solver (a block of ``k + 2`` vectors separates clustered eigenvalues that
    single-vector Lanczos resolves slowly), warning when that too stops unconverged."""
    n = A.shape[0]
    if n <= _DENSE_FALLBACK_MAX_N:
        dense_A = A @ np.eye(n) if isinstance(A, spla.LinearOperator) else (
            A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64))
        return sla.eigh((dense_A + dense_A.T) / 2, subset_by_index=[n - k, n - 1])
    w, V, info = block_krylov_eigenpairs(lambda X: A @ X, n, k, random_state=rng,
                                         tol=1e-8, max_products=_BLOCK_FALLBACK_PRODUCTS)
    if not info["converged"]:
        warnings.warn(f"the top-{k} eigensolve did not converge (ARPACK stalled, block Krylov "
                      f"stopped at relative residual {info['residual']:.2g}); the spectral "
                      "embedding is approximate", ConvergenceWarning, stacklevel=4)
    return w, V


def block_krylov_eigenpairs(matmat, n, k, *, random_state=None, block_size=None, tol=1e-10,
                            max_products=60, max_basis=None):
    """Eigenpairs of the ``k`` largest (algebraic) eigenvalues of a symmetric operator from
    block products only (thick-restarted block Krylov with Rayleigh–Ritz).

    Made for operators whose product with a block of ``p`` vectors costs little more than
    with one vector: a tile pass over a low-rank-plus-correction similarity (MVMC's ``S``)
    is compute-bound in the tile construction, so ARPACK's single-vector Lanczos, which needs
    about 30 products for 10 eigenpairs, pays 30 passes, where this needs fewer (the counts
    and times on MVMC similarities: docs/records/perf.md "Figures behind the code's choices").

    Parameters
    ----------
    matmat : callable
        ``matmat(X)`` returns ``A @ X`` for an ``(n, p)`` array ``X``; ``A`` symmetric.
    n, k : int
        Size of ``A``; number of eigenpairs (``1 <= k < n``).
    random_state : None, int or Generator
        Seeds the starting block.
    block_size : int, optional
        Columns per product, default ``k + 2``.
    tol : float, default 1e-10
        Stop when every wanted Ritz pair has ``‖A x − θ x‖ <= tol · |θ_1|``.
    max_products : int, default 60
        Block products before giving up (returns ``converged=False``).
    max_basis : int, optional
        Basis width that triggers a thick restart (keep the ``k + p`` best Ritz vectors and
        their images), default ``max(6 p, 3 k)`` and at least ``k + 4 p``; bounds memory at
        ``2 n max_basis`` floats.

    Returns
    -------
    w : ndarray, shape (k,)
        Eigenvalues, descending.
    V : ndarray, shape (n, k)
        Orthonormal eigenvectors.
    info : dict
        ``products`` (block products used), ``residual`` (largest relative residual),
        ``converged``.

    Notes
    -----
    Every step applies ``A`` once to the newest orthonormal block, appends the image, and
    does Rayleigh–Ritz on the whole basis with the stored images (``T = Vᵀ (A V)``), so the
    residuals ``A x − θ x = (A V) y − θ V y`` cost no extra product. The next block is the
    image orthogonalised twice against the basis (columns that vanish are dropped: an
    invariant subspace has been found). On restart the expansion continues from the wanted
    Ritz pairs' residuals, as in Krylov–Schur. Memory O(n · max_basis); the small dense work
    is O(n · max_basis²) per step.
    """
    rng = check_random_state(random_state)
    p = int(block_size) if block_size is not None else k + 2
    p = max(1, min(p, n))
    m_max = int(max_basis) if max_basis is not None else max(6 * p, 3 * k)
    m_max = max(m_max, k + 4 * p)  # at least three Krylov steps between restarts
    krylov = BlockKrylov(lambda X: np.asarray(matmat(X), dtype=np.float64).reshape(n, -1))
    krylov.extend(rng.standard_normal((n, p)))
    products = 1
    while True:
        theta, Y = krylov.ritz_eigh()
        kk = min(k, theta.size)
        X = krylov.basis() @ Y[:, :kk]
        R = krylov.image() @ Y[:, :kk] - X * theta[:kk]
        scale = max(abs(theta[0]), np.finfo(float).tiny)
        residual = float(np.linalg.norm(R, axis=0).max()) / scale
        converged = kk == k and residual <= tol
        if converged or products >= max_products:
            break
        if krylov.size + p > m_max:  # thick restart on the best Ritz vectors
            krylov.restart(Y[:, :min(krylov.size, k + p)])
            cand = R
        else:
            cand = krylov.images[-1].copy()
        if krylov.size >= n or not krylov.extend(cand):
            break  # an invariant subspace: nothing left to add
        products += 1
    return theta[:kk], X, {"products": products, "residual": residual, "converged": converged}


def spectral_embedding(S: np.ndarray | sp.spmatrix | spla.LinearOperator, n_components: int, *,
                       random_state: int | np.random.Generator | None = None) -> np.ndarray:
    """Row-normalised top eigenvectors of ``D^{-1/2} S D^{-1/2}`` (Ng, Jordan & Weiss).

    Parameters
    ----------
    S : ndarray, scipy.sparse matrix or scipy.sparse.linalg.LinearOperator, shape (n, n)
        Symmetric nonnegative similarity. A LinearOperator is only multiplied, never formed.
    n_components : int
        Number of eigenvectors.
    random_state : None, int or Generator
        Seeds the eigensolver's start vectors.

    Returns
    -------
    ndarray, shape (n, n_components)
        Rows scaled to unit length (zero rows stay zero).

    Notes
    -----
    Degrees ``d = S 1`` cost one product. A LinearOperator with a true attribute
    ``prefers_block_products`` (a block of vectors costs little more than one, as for MVMC's
    similarity at large ``n``) is then multiplied by blocks of ``n_components + 2`` vectors
    (:func:`block_krylov_eigenpairs`, typically 7–9 block products; ARPACK ``eigsh`` takes
    over if that has not converged after 60). Other LinearOperators and large arrays use
    ARPACK ``eigsh`` (about 30 single products for 10 eigenvectors), arrays with
    ``n <= 1000`` a dense ``eigh``. Memory O(n k). Samples of zero degree get zero rows.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> S = np.kron(np.eye(2), np.ones((3, 3))) + 0.01
    >>> E = fastmv.spectral_embedding(S, 2, random_state=0)
    >>> E.shape, np.allclose(np.linalg.norm(E, axis=1), 1.0)
    ((6, 2), True)
    """
    check_spectral(S, "S")
    S = _as_similarity(S, "S")
    n = S.shape[0]
    k = check_int(n_components, "n_components", low=1, high=n)
    rng = check_random_state(random_state)
    deg = np.asarray(S @ np.ones(n)).ravel()
    if isinstance(S, spla.LinearOperator):
        check_operator_product(deg, "S")
    if np.any(deg < -1e-12 * max(1.0, np.abs(deg).max())):
        raise InvalidParameterError("S has negative degrees (row sums); "
                                    "a nonnegative similarity is required")
    inv_sqrt = np.zeros(n)
    pos = deg > 0
    inv_sqrt[pos] = 1.0 / np.sqrt(deg[pos])
    if isinstance(S, spla.LinearOperator) or (n > _DENSE_EIGH_MAX_N and k < n - 1):
        if isinstance(S, spla.LinearOperator):
            def matmat(V):
                V = V.reshape(n, -1)
                product = np.asarray(S @ (inv_sqrt[:, None] * V)).reshape(n, -1)
                return inv_sqrt[:, None] * check_operator_product(product, "S")
            if getattr(S, "prefers_block_products", False) and 3 * (k + 2) < n:
                w, V, info = block_krylov_eigenpairs(matmat, n, k, random_state=rng)
                if info["converged"]:
                    return normalize_rows(fix_signs(V))
            A = spla.LinearOperator((n, n), matvec=lambda v: matmat(v).ravel(), matmat=matmat,
                                    rmatvec=lambda v: matmat(v).ravel(), dtype=np.float64)
        elif sp.issparse(S):
            Dm = sp.diags(inv_sqrt)
            A = (Dm @ S @ Dm).tocsr()
        else:
            A = inv_sqrt[:, None] * S * inv_sqrt[None, :]
        _, V = top_eigenvectors(A, k, rng)
    else:
        dense = S.toarray() if sp.issparse(S) else np.asarray(S, dtype=np.float64)
        A = inv_sqrt[:, None] * dense * inv_sqrt[None, :]
        A = (A + A.T) / 2
        _, V = top_eigenvectors(A, k, rng, dense=A)
    return normalize_rows(V)


@declare_params({
    "S": [np.ndarray, "sparse matrix", spla.LinearOperator],
    "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "n_jobs": ["n_jobs"],
    "executor": [Executor, None],
})
def spectral_clustering(S: np.ndarray | sp.spmatrix | spla.LinearOperator, n_clusters: int, *,
                        n_init: int = 10, random_state: int | np.random.Generator | None = None,
                        n_jobs: int | None = None, executor: Executor | None = None) -> np.ndarray:
    """Ng–Jordan–Weiss spectral clustering of a symmetric nonnegative similarity.

    Parameters
    ----------
    S : ndarray, scipy.sparse matrix or LinearOperator, shape (n, n)
        Symmetric nonnegative similarity (a LinearOperator is only multiplied).
    n_clusters : int
        Number of clusters, ``1 <= n_clusters <= n``.
    n_init : int, default 10
        k-means restarts on the embedding (as :func:`fastmv.kmeans`).
    random_state : None, int or Generator
        Seeds the eigensolver and k-means.
    n_jobs : int or None
        Threads for the k-means kernels.
    executor : concurrent.futures.Executor, optional
        Runs the k-means' Lloyd steps as row-block tasks on this executor (as
        :func:`fastmv.kmeans`; same labels). The products with ``S`` are the operator's:
        MVMC's similarity runs its passes on the executor :func:`fastmv.mvmc` was given.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Cluster of every sample.

    Notes
    -----
    Cost: see :func:`spectral_embedding`, plus k-means on an ``n × n_clusters`` embedding.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> S = np.kron(np.eye(2), np.ones((3, 3))) + 0.01
    >>> labels = fastmv.spectral_clustering(S, 2, random_state=0)
    >>> bool(labels[0] == labels[2] != labels[3] == labels[5])
    True
    """
    check_spectral(S, "S")
    S = _as_similarity(S, "S")
    _check_symmetric_nonnegative(S, "S")
    n = S.shape[0]
    n_clusters = check_n_clusters(n_clusters, n)
    rng = check_random_state(random_state)
    V = spectral_embedding(S, n_clusters, random_state=rng)
    return kmeans(V, n_clusters, n_init=n_init, random_state=rng, n_jobs=n_jobs,
                  executor=executor).labels


def stationary_distribution(P: np.ndarray | sp.spmatrix, *, tol: float = 1e-12,
                            max_iter: int = 10000) -> np.ndarray:
    """Stationary distribution ``π`` of a row-stochastic matrix (``Pᵀπ = π``, ``Σπ = 1``).

    Parameters
    ----------
    P : ndarray or scipy.sparse matrix, shape (n, n)
        Row-stochastic.
    tol : float
        ℓ1 tolerance of the refinement iteration.
    max_iter : int
        Cap on refinement steps.

    Returns
    -------
    ndarray, shape (n,)
        Nonnegative, sums to 1.

    Notes
    -----
    ARPACK (``eigs`` of ``Pᵀ``, eigenvalue of largest magnitude) for large ``n``, dense
    ``eig`` for small ``n``, then power iteration on the lazy chain ``(I + P)/2`` (same
    stationary distribution, aperiodic) to clean up sign and rounding. For a reducible chain
    the result is one of its stationary distributions. O(n²) per product for dense ``P``.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> P = np.array([[0.5, 0.5], [0.25, 0.75]])
    >>> fastmv.stationary_distribution(P).round(6).tolist()
    [0.333333, 0.666667]
    """
    check_spectral(P, "P", markov=True)
    P = check_array(P, "P", accept_sparse=True)
    n = P.shape[0]
    if P.shape != (n, n):
        raise InvalidParameterError(f"P must be square, got shape {P.shape}")
    if n == 1:
        return np.ones(1)
    try:
        if n <= 2:
            raise spla.ArpackNoConvergence("tiny", np.empty(0), np.empty((n, 0)))
        w, v = spla.eigs(P.T, k=1, which="LM", v0=np.full(n, 1.0 / n), tol=1e-12,
                         maxiter=_ARPACK_MAX_RESTARTS)
        pi = np.abs(np.real(v[:, 0]))
    except (spla.ArpackNoConvergence, spla.ArpackError, ValueError, TypeError):
        pi = np.full(n, 1.0 / n)
    pi /= pi.sum()
    PT = P.T.tocsr() if sp.issparse(P) else P.T
    for _ in range(max_iter):
        new = 0.5 * (pi + np.asarray(PT @ pi).ravel())
        new /= new.sum()
        done = np.abs(new - pi).sum() < tol
        pi = new
        if done:
            break
    return pi


@declare_params({
    "P": [np.ndarray, "sparse matrix"],
    "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "n_jobs": ["n_jobs"],
})
def markov_spectral_clustering(P: np.ndarray | sp.spmatrix, n_clusters: int, *,
                               n_init: int = 10,
                               random_state: int | np.random.Generator | None = None,
                               n_jobs: int | None = None) -> np.ndarray:
    """Spectral clustering of a Markov chain (Zhou, Huang & Schölkopf, 2005).

    With ``π`` the stationary distribution of ``P`` and ``Π = diag(π)``, the symmetric
    ``Θ = (Π^{1/2} P Π^{-1/2} + Π^{-1/2} Pᵀ Π^{1/2}) / 2`` replaces the normalised
    similarity of NJW: its top ``n_clusters`` eigenvectors, rows normalised to unit length,
    are clustered by k-means (``docs/algorithms.md §3``).

    Parameters
    ----------
    P : ndarray or scipy.sparse matrix, shape (n, n)
        Row-stochastic transition matrix (nonnegative; need not be symmetric).
    n_clusters : int
        Number of clusters, ``1 <= n_clusters <= n``.
    n_init : int, default 10
        k-means restarts on the embedding (as :func:`fastmv.kmeans`).
    random_state : None, int or Generator
        Seeds the eigensolver and k-means.
    n_jobs : int or None
        Threads for the k-means kernels.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Cluster of every state.

    Notes
    -----
    States with ``π_i = 0`` (transient states) would divide by zero: ``π`` is floored at
    ``1e-12 · max(π)`` before forming ``Θ``. Dense ``P``: O(n²) memory for ``Θ``, then a
    top-``c`` eigensolve (dense ``eigh`` for n ≤ 1000, ARPACK above).

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> K = np.kron(np.eye(2), np.ones((3, 3))) + 0.01
    >>> labels = fastmv.markov_spectral_clustering(K / K.sum(1, keepdims=True), 2,
    ...                                            random_state=0)
    >>> bool(labels[0] == labels[2] != labels[3] == labels[5])
    True
    """
    check_spectral(P, "P", markov=True)
    P = check_array(P, "P", accept_sparse=True)
    n = P.shape[0]
    if P.shape != (n, n):
        raise InvalidParameterError(f"P must be square, got shape {P.shape}")
    if (P.data if sp.issparse(P) else P).min(initial=0.0) < 0:
        raise InvalidParameterError("P has negative entries; a transition matrix is nonnegative")
    n_clusters = check_n_clusters(n_clusters, n)
    rng = check_random_state(random_state)
    pi = stationary_distribution(P)
    pi = np.maximum(pi, 1e-12 * pi.max())
    s, si = np.sqrt(pi), 1.0 / np.sqrt(pi)
    if sp.issparse(P):
        B = sp.diags(s) @ P @ sp.diags(si)
        Theta = ((B + B.T) * 0.5).tocsr()
    else:
        B = s[:, None] * P * si[None, :]
        Theta = (B + B.T) * 0.5
    if not sp.issparse(Theta) and n <= _DENSE_EIGH_MAX_N:
        w, V = top_eigenvectors(Theta, n_clusters, rng, dense=Theta)
    else:
        w, V = top_eigenvectors(Theta, n_clusters, rng)
    rank = int(np.count_nonzero(w > _DEGENERATE_EIGENVALUE * max(w[0], 0.0)))
    if n_clusters > 1 and rank < n_clusters:
        warnings.warn(
            f"P is nearly rank {rank}: only {rank} of its top {n_clusters} eigenvalues exceed "
            f"{_DEGENERATE_EIGENVALUE:g} of the largest "
            f"(eigenvalues {np.array2string(w, precision=2)}"
            f"), so the remaining clusters are split by noise; with EMVC, P_hat collapsed: "
            "raise lam1 and lam2 (larger error penalties keep more of the views in P_hat)",
            DegenerateSolutionWarning, stacklevel=caller_stacklevel())
    V = normalize_rows(V)
    return kmeans(V, n_clusters, n_init=n_init, random_state=rng, n_jobs=n_jobs).labels
