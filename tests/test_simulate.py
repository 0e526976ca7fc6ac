"""fastmv.simulate: determinism, shapes, exact counts, consistency with labels, no mutation."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from fastmv import simulate
from fastmv._core import _pair_codes
from fastmv._core._pair_codes import decode_pairs, sample_codes


def labels(n, k=4, seed=0):
    return np.random.default_rng(seed).integers(0, k, n)


def assert_pairs_valid(pairs, n_a, n_b=None):
    assert pairs.dtype == np.int64 and pairs.ndim == 2 and pairs.shape[1] == 2
    assert pairs.flags.c_contiguous
    if pairs.size:
        assert pairs.min() >= 0 and pairs[:, 0].max() < n_a
        assert pairs[:, 1].max() < (n_a if n_b is None else n_b)


def no_duplicates(*pair_arrays):
    allp = np.concatenate(pair_arrays)
    return np.unique(allp, axis=0).shape[0] == allp.shape[0]


# ---------------------------------------------------------------------------------------
# private samplers
# ---------------------------------------------------------------------------------------

def test_decode_pairs_enumerates_all_pairs_exactly_once():
    for n in (2, 3, 7, 300):
        N = n * (n - 1) // 2
        i, j = decode_pairs(np.arange(N))
        assert (i < j).all() and (i >= 0).all() and (j < n).all()
        assert np.unique(np.stack([i, j], 1), axis=0).shape[0] == N
    big = np.array([2**31 * (2**31 - 1) // 2 - 1, 10**17, 4 * 10**17 + 12345], dtype=np.int64)
    i, j = decode_pairs(big)
    assert (i < j).all() and (i >= 0).all()
    np.testing.assert_array_equal(j * (j - 1) // 2 + i, big)


@pytest.fixture
def small_population(monkeypatch):
    """Let modest ranges take the rejection / complement paths of sample_codes."""
    monkeypatch.setattr(_pair_codes, "_SMALL_POPULATION", 0)


@pytest.mark.parametrize("N, p", [(10, 0), (10, 10), (10, 3), (200_000, 2_000),
                                  (200_000, 20_000), (200_000, 160_000), (200_000, 200_000),
                                  (10**15, 1000)])
def test_sample_codes_distinct_in_range_all_paths(N, p, small_population):
    c = sample_codes(N, p, np.random.default_rng(0))
    assert c.dtype == np.int64 and c.shape == (p,)
    assert (np.diff(c) > 0).all()
    if p:
        assert c.min() >= 0 and c.max() < N


@pytest.mark.parametrize("N, p", [(20, 5), (20, 15), (200_000, 20_000), (200_000, 160_000)])
def test_sample_codes_uniform(N, p, small_population):
    # every value equally likely to be chosen: chi-square over 20 equal bins of the range
    # (N = 20, p = 5 takes the rejection path and p = 15 the complement path here)
    rng = np.random.default_rng(1)
    reps = 2000 if N == 20 else 1
    counts = np.zeros(20)
    for _ in range(reps):
        c = sample_codes(N, p, rng)
        counts += np.bincount(c * 20 // N, minlength=20)
    if N == 20:
        assert stats.chisquare(counts).pvalue > 1e-4
    else:  # without replacement: compare with the hypergeometric spread, generous bound
        expected = p / 20
        assert np.abs(counts - expected).max() < 6 * math.sqrt(expected)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_sample_codes_every_subset_equally_likely(p, small_population):
    # N = 6: p = 2 rejection path, p = 3, 4 complement path; chi-square over all C(6, p) subsets
    from itertools import combinations
    index = {s: k for k, s in enumerate(combinations(range(6), p))}
    counts = np.zeros(len(index))
    rng = np.random.default_rng(2)
    for _ in range(3000):
        counts[index[tuple(sample_codes(6, p, rng).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


# ---------------------------------------------------------------------------------------
# pairwise constraints
# ---------------------------------------------------------------------------------------

def test_pairwise_constraints_basic_properties():
    y = labels(200)
    y0 = y.copy()
    ml, cl = simulate.pairwise_constraints(y, 500, random_state=0)
    np.testing.assert_array_equal(y, y0)
    assert ml.shape[0] + cl.shape[0] == 500
    for P in (ml, cl):
        assert_pairs_valid(P, 200)
        assert (P[:, 0] < P[:, 1]).all()              # i < j: no self pairs, unordered
    assert no_duplicates(ml, cl)
    assert (y[ml[:, 0]] == y[ml[:, 1]]).all()
    assert (y[cl[:, 0]] != y[cl[:, 1]]).all()
    # about 1/4 must-links for 4 balanced classes
    assert 0.15 < ml.shape[0] / 500 < 0.35


def test_pairwise_constraints_ratio_and_determinism():
    y = np.array(list("aabbbcddee" * 5))
    n = y.shape[0]
    ml, cl = simulate.pairwise_constraints(y, ratio=0.1, random_state=3)
    assert ml.shape[0] + cl.shape[0] == math.floor(0.1 * (n * (n - 1) // 2) + 0.5)  # half up
    ml2, cl2 = simulate.pairwise_constraints(y, ratio=0.1, random_state=3)
    np.testing.assert_array_equal(ml, ml2)
    np.testing.assert_array_equal(cl, cl2)
    ml3, _ = simulate.pairwise_constraints(y, ratio=0.1, random_state=4)
    assert not np.array_equal(ml, ml3)
    # a Generator is accepted and advanced
    g = np.random.default_rng(3)
    a = simulate.pairwise_constraints(y, ratio=0.1, random_state=g)
    b = simulate.pairwise_constraints(y, ratio=0.1, random_state=g)
    np.testing.assert_array_equal(a[0], ml)
    assert not np.array_equal(a[0], b[0])


def test_pairwise_constraints_all_pairs_and_edge_cases():
    y = labels(30)
    ml, cl = simulate.pairwise_constraints(y, ratio=1.0, random_state=0)
    assert ml.shape[0] + cl.shape[0] == 30 * 29 // 2 and no_duplicates(ml, cl)
    n_must = sum(c * (c - 1) // 2 for c in np.bincount(y))
    assert ml.shape[0] == n_must
    ml, cl = simulate.pairwise_constraints(y, 0, random_state=0)
    assert ml.shape == (0, 2) and cl.shape == (0, 2) and ml.dtype == np.int64
    ml, cl = simulate.pairwise_constraints([5], ratio=0.5, random_state=0)
    assert ml.shape == cl.shape == (0, 2)
    ml, cl = simulate.pairwise_constraints([1, 1], 1, random_state=0)
    np.testing.assert_array_equal(ml, [[0, 1]])


def test_pairwise_constraints_pair_frequencies_uniform():
    # every one of the 10 pairs of 5 samples is drawn with probability 3/10
    y = np.arange(5)
    counts = np.zeros((5, 5))
    rng = np.random.default_rng(0)
    for _ in range(3000):
        _, cl = simulate.pairwise_constraints(y, 3, random_state=rng)
        np.add.at(counts, (cl[:, 0], cl[:, 1]), 1)
    freq = counts[np.triu_indices(5, 1)]
    assert stats.chisquare(freq).pvalue > 1e-4


def test_pairwise_constraints_large_n_no_quadratic_memory():
    y = labels(1_000_000, k=10)
    ml, cl = simulate.pairwise_constraints(y, 20_000, random_state=0)
    assert ml.shape[0] + cl.shape[0] == 20_000 and no_duplicates(ml, cl)
    assert (ml[:, 0] < ml[:, 1]).all() and (cl[:, 0] < cl[:, 1]).all()
    assert (y[ml[:, 0]] == y[ml[:, 1]]).all() and (y[cl[:, 0]] != y[cl[:, 1]]).all()


def test_pairwise_constraints_validation():
    with pytest.raises(ValueError, match="exactly one"):
        simulate.pairwise_constraints([0, 1, 2])
    with pytest.raises(ValueError, match="exactly one"):
        simulate.pairwise_constraints([0, 1, 2], 1, ratio=0.1)
    with pytest.raises(ValueError, match="n_constraints"):
        simulate.pairwise_constraints([0, 1, 2], 4)
    with pytest.raises(ValueError, match="n_constraints"):
        simulate.pairwise_constraints([0, 1, 2], -1)
    with pytest.raises(TypeError, match="n_constraints"):
        simulate.pairwise_constraints([0, 1, 2], 1.5)
    with pytest.raises(ValueError, match="ratio"):
        simulate.pairwise_constraints([0, 1, 2], ratio=1.5)
    with pytest.raises(ValueError, match="y must be 1-D"):
        simulate.pairwise_constraints([[0, 1]], 1)
    with pytest.raises(TypeError, match="random_state"):
        simulate.pairwise_constraints([0, 1, 2], 1, random_state="x")


# ---------------------------------------------------------------------------------------
# partial labels
# ---------------------------------------------------------------------------------------

def test_partial_labels_counts_consistency_determinism():
    y = labels(1000, k=5) * 3 + 7                      # labels 7, 10, ..., 19
    y0 = y.copy()
    out = simulate.partial_labels(y, 0.2, random_state=0)
    np.testing.assert_array_equal(y, y0)
    assert out.dtype == np.int64 and out.shape == (1000,)
    known = out >= 0
    assert known.sum() == 200
    assert set(np.unique(out)) <= {-1, 0, 1, 2, 3, 4}
    np.testing.assert_array_equal(out[known], (y[known] - 7) // 3)   # rank of the label
    np.testing.assert_array_equal(out, simulate.partial_labels(y, 0.2, random_state=0))
    assert not np.array_equal(out, simulate.partial_labels(y, 0.2, random_state=1))


def test_partial_labels_edges_and_stratify():
    y = np.array(["b", "a", "c", "a", "b", "a"] * 10)
    assert (simulate.partial_labels(y, 0.0, random_state=0) == -1).all()
    assert (simulate.partial_labels(y, 1e-6, random_state=0) >= 0).sum() == 1   # at least one
    full = simulate.partial_labels(y, 1.0, random_state=0)
    np.testing.assert_array_equal(full, np.unique(y, return_inverse=True)[1])
    ys = np.array([0] * 95 + [1] * 5)
    st = simulate.partial_labels(ys, 0.1, stratify=True, random_state=0)
    assert (st[:95] >= 0).sum() == 10 and (st[95:] >= 0).sum() == 1   # round(0.5) -> 1
    np.testing.assert_array_equal(st[st >= 0], ys[st >= 0])
    with pytest.raises(ValueError, match="ratio"):
        simulate.partial_labels(y, -0.1)
    with pytest.raises(ValueError, match="y is empty"):
        simulate.partial_labels([], 0.5)


# ---------------------------------------------------------------------------------------
# incomplete mask
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, m, ratio", [(1000, 2, 0.3), (1000, 3, 0.5), (997, 4, 0.7),
                                         (500, 2, 0.5), (1000, 3, 2 / 3), (10, 5, 0.1),
                                         (1, 1, 0.0), (1, 3, 0.5)])
@pytest.mark.filterwarnings("ignore:missing_ratio")
def test_incomplete_mask_exact_counts_and_coverage(n, m, ratio):
    mask = simulate.incomplete_mask(n, m, ratio, random_state=0)
    assert mask.shape == (n, m) and mask.dtype == bool
    assert mask.any(axis=1).all()
    r = min(math.floor(ratio * n + 0.5), n * (m - 1) // m)
    np.testing.assert_array_equal((~mask).sum(axis=0), np.full(m, r))
    np.testing.assert_array_equal(mask, simulate.incomplete_mask(n, m, ratio, random_state=0))


def test_incomplete_mask_missing_fraction_near_target_and_views_mix():
    mask = simulate.incomplete_mask(10_000, 3, 0.3, random_state=1)
    assert np.allclose((~mask).mean(axis=0), 0.3)
    # views are dropped (nearly) independently: joint absence of two views ≈ 0.09
    both = (~mask[:, 0] & ~mask[:, 1]).mean()
    assert 0.07 < both < 0.11


def test_incomplete_mask_caps_impossible_ratio_with_warning():
    with pytest.warns(UserWarning, match="missing_ratio"):
        mask = simulate.incomplete_mask(100, 2, 0.8, random_state=0)
    np.testing.assert_array_equal(mask.sum(axis=1), np.ones(100))   # each sample in one view
    with pytest.warns(UserWarning):
        mask = simulate.incomplete_mask(10, 1, 0.5, random_state=0)
    assert mask.all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate.incomplete_mask(100, 2, 0.5, random_state=0)     # exactly feasible: no warning


def test_incomplete_mask_validation():
    with pytest.raises(ValueError, match="'n' parameter"):
        simulate.incomplete_mask(0, 2, 0.1)
    with pytest.raises(ValueError, match="n_views"):
        simulate.incomplete_mask(10, 0, 0.1)
    with pytest.raises(ValueError, match="missing_ratio"):
        simulate.incomplete_mask(10, 2, 1.1)
    with pytest.raises(TypeError, match="n_views"):
        simulate.incomplete_mask(10, 2.0, 0.1)


# ---------------------------------------------------------------------------------------
# unmapped views and inter-view constraints
# ---------------------------------------------------------------------------------------

def make_views(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X1 = rng.random((n, 5))
    X2 = rng.random((n, 3)).astype(np.float32)
    X3 = sp.random(n, 40, density=0.1, format="csr", random_state=seed)
    return [X1, X2, X3]


def test_unmapped_index_maps_recover_rows_exactly():
    views = make_views()
    copies = [v.copy() for v in views]
    y = labels(200)
    out_views, out_labels, out_index = simulate.unmapped(views, y, random_state=0)
    for X, X0 in zip(views, copies):                                  # inputs unchanged
        if sp.issparse(X):
            assert (X != X0).nnz == 0
        else:
            np.testing.assert_array_equal(X, X0)
    for a, (V, lab, idx) in enumerate(zip(out_views, out_labels, out_index)):
        assert idx.dtype == np.int64 and idx.shape == (190,)
        assert np.unique(idx).shape[0] == 190
        assert V.shape == (190, views[a].shape[1])
        np.testing.assert_array_equal(lab, y[idx])
        if sp.issparse(V):
            assert sp.isspmatrix_csr(V) or V.format == "csr"
            assert (V != views[a][idx]).nnz == 0
        else:
            np.testing.assert_array_equal(V, views[a][idx])
    assert out_views[1].dtype == np.float32
    assert not np.array_equal(out_index[0], out_index[1])            # independent permutations
    assert not np.array_equal(np.sort(out_index[0]), out_index[0])   # rows are shuffled
    again = simulate.unmapped(views, y, random_state=0)[2]
    for i1, i2 in zip(out_index, again):
        np.testing.assert_array_equal(i1, i2)


def test_unmapped_keep_and_validation():
    views = make_views(50)
    y = labels(50)
    v, lab, idx = simulate.unmapped(views, y, keep=1.0, random_state=0)
    assert all(np.array_equal(np.sort(i), np.arange(50)) for i in idx)
    v, lab, idx = simulate.unmapped(views, y, keep=0.001, random_state=0)
    assert all(i.shape == (1,) for i in idx)
    with pytest.raises(ValueError, match="keep"):
        simulate.unmapped(views, y, keep=0.0)
    with pytest.raises(ValueError, match="y must have length 50"):
        simulate.unmapped(views, y[:-1])
    with pytest.raises(ValueError, match="same number of samples"):
        simulate.unmapped([views[0], views[1][:-1]], y)


def test_inter_view_constraints_properties():
    _, labs, _ = simulate.unmapped(make_views(), labels(200), random_state=0)
    ml, cl = simulate.inter_view_constraints(labs, n_constraints=300, random_state=1)
    assert list(ml) == [(0, 1), (0, 2), (1, 2)] == list(cl)
    for (a, b) in ml:
        assert ml[(a, b)].shape[0] + cl[(a, b)].shape[0] == 300
        assert_pairs_valid(ml[(a, b)], 190, 190)
        assert_pairs_valid(cl[(a, b)], 190, 190)
        assert no_duplicates(ml[(a, b)], cl[(a, b)])
        assert (labs[a][ml[(a, b)][:, 0]] == labs[b][ml[(a, b)][:, 1]]).all()
        assert (labs[a][cl[(a, b)][:, 0]] != labs[b][cl[(a, b)][:, 1]]).all()
    ml2, cl2 = simulate.inter_view_constraints(labs, n_constraints=300, random_state=1)
    for k in ml:
        np.testing.assert_array_equal(ml[k], ml2[k])
        np.testing.assert_array_equal(cl[k], cl2[k])


def test_inter_view_constraints_ratio_view_pairs_and_unequal_sizes():
    labs = [labels(30, seed=1), labels(50, seed=2), labels(7, seed=3)]
    ml, cl = simulate.inter_view_constraints(labs, ratio=0.05, view_pairs=[(2, 0), (1, 1)],
                                             random_state=0)
    assert list(ml) == [(0, 2), (1, 1)]
    assert ml[(0, 2)].shape[0] + cl[(0, 2)].shape[0] == math.floor(0.05 * (30 * 7) + 0.5)
    assert_pairs_valid(ml[(0, 2)], 30, 7)
    intra = np.concatenate([ml[(1, 1)], cl[(1, 1)]])
    assert intra.shape[0] == math.floor(0.05 * (50 * 49 // 2) + 0.5)
    assert (intra[:, 0] < intra[:, 1]).all()
    # all cross pairs when ratio = 1
    ml, cl = simulate.inter_view_constraints(labs[:2], ratio=1.0, random_state=0)
    allp = np.concatenate([ml[(0, 1)], cl[(0, 1)]])
    assert allp.shape[0] == 1500 and no_duplicates(allp)
    expected_must = (labs[0][:, None] == labs[1][None, :]).sum()
    assert ml[(0, 1)].shape[0] == expected_must


def test_inter_view_constraints_budget_samples_is_linear_in_n():
    labs = [labels(300, seed=1), labels(500, seed=2), labels(40, seed=3)]
    ml, cl = simulate.inter_view_constraints(labs, ratio=0.1, budget="samples",
                                             view_pairs=[(0, 1), (0, 2), (1, 1)],
                                             random_state=0)
    count = {k: ml[k].shape[0] + cl[k].shape[0] for k in ml}
    assert count == {(0, 1): 40, (0, 2): 17, (1, 1): 50}   # round(0.1 · (n_a + n_b) / 2)
    for (a, b) in ((0, 1), (0, 2)):
        assert_pairs_valid(ml[(a, b)], labs[a].size, labs[b].size)
        assert no_duplicates(np.concatenate([ml[(a, b)], cl[(a, b)]]))
    # "pairs" (the default) reads the same ratio as a share of the n_a · n_b cross pairs
    ml, cl = simulate.inter_view_constraints(labs[:2], ratio=0.1, random_state=0)
    assert ml[(0, 1)].shape[0] + cl[(0, 1)].shape[0] == 15000
    # never more than all the pairs there are; n_constraints ignores the budget
    ml, cl = simulate.inter_view_constraints([labels(2), labels(2)], ratio=1.0,
                                             budget="samples", random_state=0)
    assert ml[(0, 1)].shape[0] + cl[(0, 1)].shape[0] == 2
    ml, cl = simulate.inter_view_constraints(labs[:2], n_constraints=7, budget="samples",
                                             random_state=0)
    assert ml[(0, 1)].shape[0] + cl[(0, 1)].shape[0] == 7
    with pytest.raises(ValueError, match="budget"):
        simulate.inter_view_constraints(labs, ratio=0.1, budget="pair")


def test_inter_view_constraints_validation():
    labs = [labels(10), labels(12)]
    with pytest.raises(ValueError, match="exactly one"):
        simulate.inter_view_constraints(labs)
    with pytest.raises(ValueError, match="n_constraints"):
        simulate.inter_view_constraints(labs, n_constraints=121)
    with pytest.raises(ValueError, match=r"view_pairs\[0\]\[1\]"):
        simulate.inter_view_constraints(labs, n_constraints=1, view_pairs=[(0, 2)])
    with pytest.raises(ValueError, match="repeats"):
        simulate.inter_view_constraints(labs, n_constraints=1, view_pairs=[(0, 1), (1, 0)])
    with pytest.raises(ValueError, match=r"labels_per_view\[1\]"):
        simulate.inter_view_constraints([labels(5), np.zeros((2, 2))], n_constraints=1)
    with pytest.raises(TypeError, match="labels_per_view"):
        simulate.inter_view_constraints(labels(5), n_constraints=1)


# ---------------------------------------------------------------------------------------
# corruption
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("snr", [-5.0, 0.0, 10.0, 20.0])
def test_corrupt_gaussian_snr_measured(snr):
    rng = np.random.default_rng(0)
    X = rng.random((400, 100)) * 3 - 1
    X0 = X.copy()
    Y = simulate.corrupt(X, "gaussian", snr, random_state=0)
    np.testing.assert_array_equal(X, X0)
    assert Y.shape == X.shape and Y.dtype == np.float64 and Y is not X
    noise = Y - X
    measured = 10 * np.log10(np.mean(X**2) / np.mean(noise**2))
    assert measured == pytest.approx(snr, abs=0.1)
    assert abs(noise.mean()) < 0.05 * noise.std()
    np.testing.assert_array_equal(Y, simulate.corrupt(X, "gaussian", snr, random_state=0))


def test_corrupt_gaussian_float32_and_sparse():
    X = np.random.default_rng(1).random((300, 50)).astype(np.float32)
    Y = simulate.corrupt(X, "gaussian", 15, random_state=0)
    assert Y.dtype == np.float32
    S = sp.random(300, 50, density=0.2, format="csr", random_state=0)
    S0 = S.copy()
    Z = simulate.corrupt(S, "gaussian", 15, random_state=0)
    assert isinstance(Z, np.ndarray) and Z.shape == S.shape
    assert (S != S0).nnz == 0
    dense = S.toarray()
    measured = 10 * np.log10(np.mean(dense**2) / np.mean((Z - dense) ** 2))
    assert measured == pytest.approx(15, abs=0.15)


def test_corrupt_entries_dense_and_sparse():
    rng = np.random.default_rng(2)
    X = rng.random((100, 40)) + 5.0          # range [5, 6]
    X0 = X.copy()
    Y = simulate.corrupt(X, "entries", 0.1, random_state=0)
    np.testing.assert_array_equal(X, X0)
    changed = Y != X
    assert changed.sum() == 400              # continuous values: every replaced entry differs
    assert Y.min() >= X.min() and Y.max() <= X.max()
    S = sp.random(100, 40, density=0.1, format="csr", random_state=1)
    S0 = S.copy()
    T = simulate.corrupt(S, "entries", 0.2, random_state=0)
    assert (S != S0).nnz == 0
    assert sp.issparse(T) and T.format == "csr" and T.shape == S.shape
    diff = (T.toarray() != S.toarray())
    assert 780 <= diff.sum() <= 800          # 800 replaced (a replaced 0 can stay 0: prob 0)
    assert T.data.min() >= 0 and T.data.max() <= S.data.max()
    Y0 = simulate.corrupt(X, "entries", 0.0, random_state=0)
    np.testing.assert_array_equal(Y0, X)
    assert Y0 is not X


def test_corrupt_samples_dense_sparse_and_views_share_rows():
    rng = np.random.default_rng(3)
    X = rng.random((200, 30))
    Y = simulate.corrupt(X, "samples", 0.1, random_state=0)
    rows = np.flatnonzero((Y != X).any(axis=1))
    assert rows.shape[0] == 20
    assert (Y[rows] != X[rows]).all()        # whole rows replaced
    np.testing.assert_array_equal(np.delete(Y, rows, 0), np.delete(X, rows, 0))
    S = sp.random(200, 30, density=0.1, format="csr", random_state=0)
    V2 = rng.random((200, 5)).astype(np.float32)
    outs = simulate.corrupt([X, S, V2], "samples", 0.1, random_state=0)
    assert isinstance(outs, list) and len(outs) == 3
    r0 = np.flatnonzero((outs[0] != X).any(axis=1))
    r1 = np.flatnonzero(np.asarray((outs[1] != S).sum(axis=1)).ravel() > 0)
    r2 = np.flatnonzero((outs[2] != V2).any(axis=1))
    np.testing.assert_array_equal(r0, r1)
    np.testing.assert_array_equal(r0, r2)
    np.testing.assert_array_equal(r0, rows)   # rows drawn first: same as the single-view call
    assert sp.issparse(outs[1]) and outs[1].format == "csr" and outs[2].dtype == np.float32
    assert outs[1][r1].nnz == r1.shape[0] * 30


def test_corrupt_validation():
    X = np.ones((5, 3))
    with pytest.raises(ValueError, match="kind"):
        simulate.corrupt(X, "salt", 0.1)
    with pytest.raises(ValueError, match="level"):
        simulate.corrupt(X, "entries", 1.5)
    with pytest.raises(ValueError, match="level"):
        simulate.corrupt(X, "gaussian", np.inf)
    with pytest.raises(ValueError, match="X contains NaN"):
        simulate.corrupt(np.array([[np.nan, 1.0]]), "gaussian", 10)
    with pytest.raises(ValueError, match="X must be 2-D"):
        simulate.corrupt(np.ones(5), "gaussian", 10)
    with pytest.raises(ValueError, match="same number of samples"):
        simulate.corrupt([X, np.ones((4, 3))], "samples", 0.5)


def test_pairs_from_labels_are_every_pair_among_the_labelled_samples():
    rng = np.random.default_rng(0)
    labels = np.where(rng.random(40) < 0.3, rng.integers(0, 3, 40), -1)
    ml, cl = simulate.pairs_from_labels(labels)
    lab = np.flatnonzero(labels >= 0)
    assert len(ml) + len(cl) == lab.size * (lab.size - 1) // 2
    for pairs, same in ((ml, True), (cl, False)):
        assert pairs.dtype == np.int64 and np.all(pairs[:, 0] < pairs[:, 1])
        assert np.all((labels[pairs[:, 0]] == labels[pairs[:, 1]]) == same)
        assert np.all(labels[pairs] >= 0)
    none = simulate.pairs_from_labels([-1, -1, 2])
    assert none[0].shape == (0, 2) and none[1].shape == (0, 2)
