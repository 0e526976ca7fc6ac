"""Spectral clustering (NJW) and the Markov-chain variant."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fastmv
from fastmv import metrics


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
