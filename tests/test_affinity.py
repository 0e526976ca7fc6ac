"""transition_matrix and its kernels."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv.kernels import affinity as A
from tests import naive_clustering as naive


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 5, 64])
def test_kernels_match_twins(n, dtype, rng):
    X = rng.standard_normal((n, 4)).astype(dtype)
    G = (X @ X.T).astype(dtype)
    sq = (X * X).sum(1).astype(dtype)
    # the kernel reads only the upper triangle: poison the lower one
    Gp = np.triu(G) + np.tril(np.full_like(G, np.nan), -1)
    D2 = A.gram_to_sq_distances(Gp.copy(), sq)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(D2, naive.gram_to_sq_distances(G, sq), **tol)
    np.testing.assert_array_equal(A.strict_upper_triangle(D2), naive.strict_upper_triangle(D2))
    P = A.gaussian_transition_rows(D2.copy(), 0.3)
    np.testing.assert_allclose(P, naive.gaussian_transition_rows(D2, 0.3), **tol)
    for k in (1, 3, 10):
        np.testing.assert_array_equal(A.keep_nearest_neighbors(D2.copy(), k),
                                      naive.keep_nearest_neighbors(D2, k))


def test_gaussian_rows_handles_infinite_rows():
    D2 = np.array([[0.0, np.inf], [np.inf, np.inf]])
    P = A.gaussian_transition_rows(D2.copy(), 1.0)
    np.testing.assert_allclose(P, [[1.0, 0.0], [0.0, 1.0]])


def test_transition_matrix_matches_definition(rng):
    X = rng.standard_normal((40, 6))
    np.testing.assert_allclose(fastmv.transition_matrix(X, kernel="gaussian"),
                               naive.transition_matrix(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fastmv.transition_matrix(X, sigma=2.0),
                               naive.transition_matrix(X, sigma=2.0), rtol=1e-10, atol=1e-12)
    # sparse input and float32 agree
    np.testing.assert_allclose(fastmv.transition_matrix(sp.csr_matrix(X), kernel="gaussian"),
                               naive.transition_matrix(X), rtol=1e-10, atol=1e-12)
    P32 = fastmv.transition_matrix(X.astype(np.float32), kernel="gaussian", dtype=np.float32)
    assert P32.dtype == np.float32
    np.testing.assert_allclose(P32, naive.transition_matrix(X), rtol=1e-3, atol=1e-6)


def test_transition_matrix_invariants_and_knn(rng):
    X = rng.standard_normal((30, 3))
    X0 = X.copy()
    P = fastmv.transition_matrix(X, n_neighbors=4)
    np.testing.assert_array_equal(X, X0)
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    support = P > 0
    assert (support == support.T).all()  # symmetrised neighbourhoods
    assert support.sum(1).min() >= 5  # self + 4 neighbours at least
    # tiny sigma must not underflow rows to zero
    Ps = fastmv.transition_matrix(X * 1e3, sigma=1e-3)
    np.testing.assert_allclose(Ps.sum(1), 1.0)


def test_transition_matrix_validation(rng):
    X = rng.standard_normal((5, 2))
    with pytest.raises(ValueError, match="sigma"):
        fastmv.transition_matrix(X, sigma=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        fastmv.transition_matrix(X, sigma="mean")
    with pytest.raises(ValueError, match="n_neighbors"):
        fastmv.transition_matrix(X, n_neighbors=0)
    with pytest.raises(ValueError, match="X"):
        fastmv.transition_matrix(np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="dtype"):
        fastmv.transition_matrix(X, dtype=np.int32)
    bad = sp.csr_matrix(X)
    bad.indices[-1] = 5
    with pytest.raises(ValueError, match="X"):
        fastmv.transition_matrix(bad)
    assert fastmv.transition_matrix(X[:1]).tolist() == [[1.0]]


@pytest.mark.parametrize("n_neighbors", [None, 3])
def test_median_width_is_scale_invariant(n_neighbors, rng):
    X = rng.standard_normal((25, 4))
    ref = fastmv.transition_matrix(X, n_neighbors=n_neighbors)
    for scale in (1e-300, 1e-200, 1e-160, 3.7, 1e160, 1e200, 1e300):
        for Xs in (X * scale, sp.csr_matrix(X * scale)):
            P = fastmv.transition_matrix(Xs, n_neighbors=n_neighbors)
            assert np.all(np.isfinite(P))
            np.testing.assert_allclose(P, ref, rtol=1e-9, atol=1e-15)
    # a power of two changes nothing at all
    np.testing.assert_array_equal(
        fastmv.transition_matrix(X * 2.0 ** 900, n_neighbors=n_neighbors), ref)


def test_fixed_sigma_is_applied_in_the_callers_units(rng):
    X = rng.standard_normal((20, 3))
    ref = fastmv.transition_matrix(X, sigma=0.8)
    for scale in (1e-300, 1e300):
        P = fastmv.transition_matrix(X * scale, sigma=0.8 * scale)
        np.testing.assert_allclose(P, ref, rtol=1e-9, atol=1e-15)


def test_tiny_and_huge_sigma_give_the_limits(rng):
    X = rng.standard_normal((10, 3))
    P = fastmv.transition_matrix(X, sigma=1e-300)  # each sample keeps only itself
    np.testing.assert_array_equal(P, np.eye(10))
    X2 = np.vstack([X, X[:1]])  # duplicates: any split between them, never NaN
    P2 = fastmv.transition_matrix(X2, sigma=1e-300)
    assert np.all(np.isfinite(P2)) and P2[0, 0] + P2[0, 10] == pytest.approx(1.0)
    U = fastmv.transition_matrix(X, sigma=1e300)
    np.testing.assert_allclose(U, np.full((10, 10), 0.1), rtol=1e-12)


# ------------------------------------------------------------------ the local kNN kernel
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nearest_neighbors_rows_ties_and_orders_as_a_stable_sort(dtype, rng):
    """The bounded heap per row keeps the neighbours and the order of a stable sort: ties
    by column, rows already sorted either way, all-equal rows, every k from 1 to n − 1."""
    rows = {"ties": rng.integers(0, 3, (12, 12)), "ascending": np.tile(np.arange(12), (12, 1)),
            "descending": np.tile(np.arange(12, 0, -1), (12, 1)), "equal": np.ones((12, 12)),
            "random": rng.random((12, 12))}
    for D2 in rows.values():
        D2 = D2.astype(dtype)
        for k in range(1, 12):
            index, values = A.nearest_neighbors_rows(D2, k)
            ref_index, ref_values = naive.nearest_neighbors_rows(D2, k)
            np.testing.assert_array_equal(index, ref_index)
            np.testing.assert_array_equal(values, ref_values)
    D2 = np.ones((1, 1), dtype)  # n = 1 has no neighbour to keep
    with pytest.raises(ValueError, match="n_neighbors"):
        A.nearest_neighbors_rows(D2, 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 3, 9, 50])
def test_local_kernels_match_twins(n, dtype, rng):
    X = rng.standard_normal((n, 3))
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for k in sorted({1, min(4, n - 1), n - 1}):
        index, values = A.nearest_neighbors_rows(D2, k)
        ref_index, ref_values = naive.nearest_neighbors_rows(D2, k)
        np.testing.assert_array_equal(index, ref_index)
        np.testing.assert_allclose(values, ref_values, **tol)
        sigma = np.sqrt(values[:, -1]).astype(dtype)
        keep = np.eye(n, dtype=bool)
        for i in range(n):
            keep[i, index[i]] = True
        for mutual, kept in ((False, keep | keep.T), (True, keep & keep.T)):
            P = A.local_scaling_transition_rows(np.full((n, n), np.nan, dtype), index, values,
                                                sigma, mutual)
            W = np.where(kept, np.exp(-D2.astype(np.float64) / np.outer(sigma, sigma)), 0.0)
            np.fill_diagonal(W, 1.0)
            np.testing.assert_allclose(P, W / W.sum(1, keepdims=True), **tol)


def test_local_kernel_matches_its_definition(rng):
    X = rng.standard_normal((60, 5))                       # dense: Euclidean
    for k in (3, 10, 59):
        np.testing.assert_allclose(fastmv.transition_matrix(X, n_neighbors=k),
                                   naive.local_scaling_transition(X, k), rtol=1e-10, atol=1e-13)
    # tf-idf-like rows (counts times per-term weights: no tied distances): cosine geometry
    C = rng.poisson(0.3, (60, 40)) * (0.5 + rng.random(40))
    assert np.count_nonzero(C) < 0.5 * C.size
    P = fastmv.transition_matrix(sp.csr_matrix(C), n_neighbors=8)
    np.testing.assert_allclose(P, naive.local_scaling_transition(C, 8), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-12)


def test_mutual_neighbors_keep_only_the_pairs_chosen_both_ways(rng):
    X = rng.standard_normal((60, 5))
    C = rng.poisson(0.3, (60, 40)) * (0.5 + rng.random(40))
    for Z, k in ((X, 3), (X, 10), (X, 59), (C, 8)):
        P = fastmv.transition_matrix(Z, n_neighbors=k, neighbors="mutual")
        np.testing.assert_allclose(P, naive.local_scaling_transition(Z, k, mutual=True),
                                   rtol=1e-10, atol=1e-13)
        U = fastmv.transition_matrix(Z, n_neighbors=k)
        assert np.all((P > 0) <= (U > 0)) and np.all((P > 0) == (P.T > 0))
        assert np.all(np.diag(P) > 0)
    # k = n - 1: every pair is chosen both ways, so both graphs are the same
    np.testing.assert_allclose(fastmv.transition_matrix(X, n_neighbors=59, neighbors="mutual"),
                               fastmv.transition_matrix(X, n_neighbors=59), rtol=1e-12)
    # a hub: the centre of a ring is every ring point's nearest neighbour, but the centre's
    # own 2 nearest are only two of them; the mutual graph drops the other edges
    ring = np.c_[np.cos(np.arange(5) * 0.4 * np.pi), np.sin(np.arange(5) * 0.4 * np.pi)]
    H = np.vstack([[0.0, 0.0], ring])  # ring neighbours are 1.18 apart, the centre 1 away
    hub = fastmv.transition_matrix(H, n_neighbors=2, neighbors="mutual")[0]
    assert np.count_nonzero(hub) == 3
    assert np.count_nonzero(fastmv.transition_matrix(H, n_neighbors=2)[0]) == 6
    G = fastmv.transition_matrix(X, sigma=1.0, n_neighbors=4, neighbors="mutual")
    kept = np.zeros((60, 60), bool)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D2, np.inf)
    kept[np.repeat(np.arange(60), 4), np.argsort(D2, 1)[:, :4].ravel()] = True
    np.testing.assert_array_equal(G > 0, (kept & kept.T) | np.eye(60, dtype=bool))
    # default neighbours: max(10, round(sqrt(n))) for counts, 10 otherwise
    np.testing.assert_allclose(fastmv.transition_matrix(C),
                               naive.local_scaling_transition(C, 10), rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="sigma"):
        fastmv.transition_matrix(X, sigma=1.0, kernel="local")
    # a number for sigma selects the Gaussian kernel
    np.testing.assert_allclose(fastmv.transition_matrix(X, sigma=2.0),
                               naive.transition_matrix(X, sigma=2.0), rtol=1e-10, atol=1e-12)
    assert fastmv.transition_matrix(X[:1]).tolist() == [[1.0]]
    np.testing.assert_allclose(fastmv.transition_matrix(np.ones((4, 3))), 0.25)


def test_text_mode_survives_planted_word_counts():
    """Documents drawn from three topics over a shared vocabulary, with the long-tailed
    lengths of real text: the global Gaussian kernel's P is nearly uniform and its spectral
    clustering collapses; the local cosine kNN graph recovers the topics."""
    rng = np.random.default_rng(0)
    n_docs, vocab, c = 300, 600, 3
    y = np.repeat(np.arange(c), n_docs // c)
    topics = rng.dirichlet(np.full(vocab, 0.05), size=c)
    background = rng.dirichlet(np.ones(vocab))
    lengths = rng.lognormal(4.0, 1.0, n_docs).astype(int) + 5
    X = np.array([rng.multinomial(m, 0.5 * topics[t] + 0.5 * background)
                  for m, t in zip(lengths, y)], dtype=float)
    acc = {}
    for kernel in ("gaussian", "auto"):
        P = fastmv.transition_matrix(X, kernel=kernel)
        labels = fastmv.markov_spectral_clustering(P, c, random_state=0)
        acc[kernel] = fastmv.metrics.accuracy(y, labels)
    assert acc["auto"] >= 0.95 and acc["gaussian"] < 0.8, acc
