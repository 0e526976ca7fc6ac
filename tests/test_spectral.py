"""Spectral clustering (NJW) and the Markov-chain variant."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fastmv
from fastmv import metrics
from fastmv.exceptions import DegenerateSolutionWarning


def _block_similarity(rng, sizes, within=1.0, between=0.02, noise=0.01):
    n = sum(sizes)
    y = np.repeat(np.arange(len(sizes)), sizes)
    S = np.where(y[:, None] == y[None, :], within, between) + noise * rng.random((n, n))
    S = (S + S.T) / 2
    perm = rng.permutation(n)
    return S[np.ix_(perm, perm)], y[perm]


@pytest.mark.parametrize("n_per", [20, 400])  # dense eigh below 1000, ARPACK above
def test_spectral_recovers_blocks(n_per, rng):
    S, y = _block_similarity(rng, [n_per, n_per + 3, n_per - 2])
    labels = fastmv.spectral_clustering(S, 3, random_state=0)
    assert metrics.accuracy(y, labels) == 1.0


def test_spectral_sparse_and_operator_agree(rng):
    S, y = _block_similarity(rng, [30, 40, 50])
    S[S < 0.5] = 0.0
    S = sp.csr_matrix(S)
    op = spla.aslinearoperator(S)
    for inp in (S, op, S.toarray()):
        assert metrics.accuracy(y, fastmv.spectral_clustering(inp, 3, random_state=1)) == 1.0
    E1 = fastmv.spectral_embedding(S, 3, random_state=0)
    E2 = fastmv.spectral_embedding(op, 3, random_state=0)
    np.testing.assert_allclose(np.abs(E1 @ E1.T), np.abs(E2 @ E2.T), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(E1, axis=1), 1.0)


def test_stationary_distribution(rng):
    P = rng.random((50, 50))
    P /= P.sum(1, keepdims=True)
    pi = fastmv.stationary_distribution(P)
    np.testing.assert_allclose(P.T @ pi, pi, atol=1e-12)
    assert pi.min() >= 0 and pi.sum() == pytest.approx(1.0)
    # periodic chain: power iteration alone would oscillate
    C = np.roll(np.eye(6), 1, axis=1)
    np.testing.assert_allclose(fastmv.stationary_distribution(C), np.full(6, 1 / 6), atol=1e-10)
    assert fastmv.stationary_distribution(np.ones((1, 1))).tolist() == [1.0]


def test_markov_spectral_recovers_blocks(rng):
    S, y = _block_similarity(rng, [30, 25, 45])
    P = S / S.sum(1, keepdims=True)
    labels = fastmv.markov_spectral_clustering(P, 3, random_state=0)
    assert metrics.accuracy(y, labels) == 1.0
    # nonsymmetric chain, transient state with zero stationary mass: still runs
    P2 = P.copy()
    P2[:, 0] = 0
    P2 /= P2.sum(1, keepdims=True)
    labels2 = fastmv.markov_spectral_clustering(P2, 3, random_state=0)
    assert metrics.accuracy(y[1:], labels2[1:]) == 1.0


def test_spectral_validation(rng):
    with pytest.raises(ValueError, match="S"):
        fastmv.spectral_clustering(np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.spectral_clustering(np.ones((3, 3)), 4)
    with pytest.raises(ValueError, match="P"):
        fastmv.markov_spectral_clustering(np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="negative"):
        fastmv.spectral_clustering(-np.ones((3, 3)), 2)
    # not a matrix: a TypeError naming the argument (was an AttributeError)
    for bad in (None, [[1.0, 0.5], [0.5, 1.0]]):
        with pytest.raises(TypeError, match=r"\bS\b"):
            fastmv.spectral_clustering(bad, 2)
        with pytest.raises(TypeError, match=r"\bP\b"):
            fastmv.markov_spectral_clustering(bad, 2)
    # negative entries are named as such (were reported as "infs or NaNs")
    P = np.full((4, 4), 0.25)
    P[0, :2] = [-0.25, 0.75]
    with pytest.raises(ValueError, match="negative entries"):
        fastmv.markov_spectral_clustering(P, 2)
    with pytest.raises(ValueError, match="negative entries"):
        fastmv.markov_spectral_clustering(sp.csr_matrix(P), 2)
    with pytest.raises(TypeError, match="n_init"):
        fastmv.spectral_clustering(np.ones((3, 3)), 2, n_init=0.5)


def test_n_init_is_passed_to_kmeans(rng):
    S, y = _block_similarity(rng, [20, 25, 30])
    P = S / S.sum(1, keepdims=True)
    for f, M in ((fastmv.spectral_clustering, S), (fastmv.markov_spectral_clustering, P)):
        a = f(M, 3, n_init=1, random_state=0)
        b = f(M, 3, n_init=5, random_state=0)
        assert metrics.accuracy(y, a) == metrics.accuracy(y, b) == 1.0


# ---------------------------------------------------------------------------------------
# block Krylov eigensolver (products with blocks only) against dense eigh
# ---------------------------------------------------------------------------------------

def _sym_with_spectrum(rng, eigenvalues):
    n = len(eigenvalues)
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    return (Q * np.asarray(eigenvalues)) @ Q.T


def _check_top_pairs(A, k, w, V, tol=1e-8):
    ref_w, ref_V = np.linalg.eigh(A)
    ref_w, ref_V = ref_w[::-1][:k], ref_V[:, ::-1][:, :k]
    np.testing.assert_allclose(w, ref_w, atol=tol * np.abs(ref_w).max())
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-10)
    # same invariant subspace (robust to signs and to rotations within repeated eigenvalues)
    np.testing.assert_allclose(V @ V.T, ref_V @ ref_V.T, atol=1e-6)


@pytest.mark.parametrize("n,k", [(60, 1), (80, 4), (200, 10), (30, 9)])
def test_block_krylov_matches_dense_eigh(n, k, rng):
    from fastmv._blocks._spectral import block_krylov_eigenpairs
    # clustered top, a tail, and negative eigenvalues larger in magnitude than the wanted
    # ones: the method must find the largest *algebraic* eigenvalues
    top = np.linspace(1.0, 0.8, k)
    rest = rng.uniform(-0.5, 0.6, n - k)
    rest[:3] = [-3.0, -2.5, -2.0]
    A = _sym_with_spectrum(rng, np.concatenate([top, rest]))
    calls = []

    def matmat(X):
        calls.append(X.shape[1])
        return A @ X

    w, V, info = block_krylov_eigenpairs(matmat, n, k, random_state=0)
    assert info["converged"] and info["residual"] <= 1e-10
    assert info["products"] == len(calls) and max(calls) <= k + 2
    _check_top_pairs(A, k, w, V)


def test_block_krylov_repeated_eigenvalues_and_restarts(rng):
    from fastmv._blocks._spectral import block_krylov_eigenpairs
    n, k = 300, 5
    spec = np.concatenate([[2.0, 2.0, 2.0, 1.5, 1.5], rng.uniform(-1, 1.4, n - k)])
    A = _sym_with_spectrum(rng, spec)
    # a small basis forces thick restarts
    w, V, info = block_krylov_eigenpairs(lambda X: A @ X, n, k, random_state=1, max_basis=16,
                                         max_products=200)
    assert info["converged"]
    _check_top_pairs(A, k, w, V)


def test_block_krylov_invariant_subspace_and_budget(rng):
    from fastmv._blocks._spectral import block_krylov_eigenpairs
    # rank-3 operator: the Krylov space is exhausted after one step, the pairs are exact
    B = rng.normal(size=(50, 3))
    A = B @ B.T
    w, V, info = block_krylov_eigenpairs(lambda X: A @ X, 50, 2, random_state=0)
    assert info["converged"] and info["products"] <= 3
    _check_top_pairs(A, 2, w, V)
    # a budget of one product cannot converge on a generic spectrum: reported, not hidden
    C = _sym_with_spectrum(rng, rng.uniform(-1, 1, 200))
    w, V, info = block_krylov_eigenpairs(lambda X: C @ X, 200, 4, random_state=0,
                                         max_products=1)
    assert not info["converged"] and info["products"] == 1 and V.shape == (200, 4)


class _BlockOperator(spla.LinearOperator):
    """A dense similarity that asks for block products (as MVMC's does at large n)."""

    def __init__(self, S, prefers=True):
        super().__init__(dtype=np.float64, shape=S.shape)
        self.S, self.prefers_block_products, self.columns = S, prefers, []

    def _matmat(self, X):
        self.columns.append(X.shape[1])
        return self.S @ X

    def _matvec(self, x):
        return self._matmat(x.reshape(-1, 1)).ravel()

    def _adjoint(self):
        return self


@pytest.mark.parametrize("prefers", [True, False])
def test_spectral_embedding_block_path_equals_dense(prefers, rng):
    S, y = _block_similarity(rng, [150, 170, 180])
    op = _BlockOperator(S, prefers)
    E_op = fastmv.spectral_embedding(op, 3, random_state=0)
    E = fastmv.spectral_embedding(S, 3, random_state=0)
    np.testing.assert_allclose(E_op @ E_op.T, E @ E.T, atol=1e-6)
    # degrees (one vector), then blocks of k + 2 = 5 only on the block path
    assert op.columns[0] == 1
    assert all(c == 5 for c in op.columns[1:]) if prefers else max(op.columns) == 1
    assert len(op.columns) <= (15 if prefers else 60)
    assert metrics.accuracy(y, fastmv.spectral_clustering(op, 3, random_state=0)) == 1.0


# ---------------------------------------------------------------------------------------
# shared linear algebra (fastmv._core._linalg)
# ---------------------------------------------------------------------------------------

def test_orthonormalize_projects_fills_or_drops(rng):
    from fastmv._core._linalg import orthonormalize
    W = np.linalg.qr(rng.normal(size=(40, 5)))[0]
    X = rng.normal(size=(40, 4))
    X[:, 1] = W @ rng.normal(size=5)  # already in the basis
    Q = orthonormalize(X.copy(), W)
    assert Q.shape == (40, 3)  # dropped without rng
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(W.T @ Q, 0.0, atol=1e-12)
    Q = orthonormalize(X.copy(), W, rng=np.random.default_rng(0))
    assert Q.shape == (40, 4)  # replaced by a random direction with rng
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(W.T @ Q, 0.0, atol=1e-12)


def test_fix_signs():
    from fastmv._core._linalg import fix_signs
    V = np.array([[0.1, -3.0, 0.0], [-2.0, 1.0, 0.0]])
    out = fix_signs(V)
    np.testing.assert_array_equal(out, [[-0.1, 3.0, 0.0], [2.0, -1.0, 0.0]])
    assert V[0, 1] == -3.0  # input untouched
    np.testing.assert_array_equal(fix_signs(-V), out)


def test_spectral_clustering_executor_gives_identical_labels():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    S = (y[:, None] == y[None, :]) * 0.9 + 0.05 * rng.random((120, 120))
    S = (S + S.T) / 2
    ref = fastmv.spectral_clustering(S, 3, random_state=0)
    with ThreadPoolExecutor(2) as pool:
        res = fastmv.spectral_clustering(S, 3, random_state=0, executor=pool)
    np.testing.assert_array_equal(res, ref)


# ------------------------------------------------------------- bounded eigensolves
def _nearly_rank_one_chain(n=2708, seed=0):
    """A symmetric row-stochastic ``P`` whose spectrum is that of a collapsed EMVC consensus:
    1, 9e-4, 5e-4, 3e-4, 3e-5, 4e-6 and then exact zeros."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, 6))
    U -= U.mean(axis=0)  # orthogonal to the constant vector: rows keep summing to 1
    U, _ = np.linalg.qr(U)
    lam = np.array([9e-4, 5e-4, 3e-4, 3e-5, 4e-6, 0.0])
    P = np.full((n, n), 1.0 / n) + (U * lam) @ U.T
    return (P + P.T) / 2


def test_nearly_rank_one_chain_returns_in_seconds_and_warns():
    import time

    P = _nearly_rank_one_chain()
    assert P.min() >= 0 and np.allclose(P.sum(axis=1), 1.0)
    start = time.process_time()
    with pytest.warns(DegenerateSolutionWarning, match="nearly rank 1"):
        labels = fastmv.markov_spectral_clustering(P, 7, n_init=2, random_state=0, n_jobs=1)
    assert time.process_time() - start < 60  # CPU seconds; several minutes before the cap
    assert labels.shape == (P.shape[0],)


def test_stalled_arpack_falls_back_to_the_same_eigenvectors(monkeypatch):
    from fastmv._blocks import _spectral

    rng = np.random.default_rng(1)
    A = rng.standard_normal((300, 300))
    A = A + A.T
    w_ref, V_ref = _spectral.top_eigenvectors(A, 4, np.random.default_rng(0), dense=A)
    monkeypatch.setattr(_spectral, "_ARPACK_MAX_RESTARTS", 1)
    w, V = _spectral.top_eigenvectors(A, 4, np.random.default_rng(0))
    np.testing.assert_allclose(w, w_ref, rtol=1e-8)
    np.testing.assert_allclose(np.abs(V.T @ V_ref), np.eye(4), atol=1e-6)
    # past the dense size the block Krylov solver takes over
    monkeypatch.setattr(_spectral, "_DENSE_FALLBACK_MAX_N", 10)
    w, V = _spectral.top_eigenvectors(A, 4, np.random.default_rng(0))
    np.testing.assert_allclose(w, w_ref, rtol=1e-6)
