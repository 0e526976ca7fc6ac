"""CMVNMF's kernels (kernels/cmvnmf.py) against their NumPy twins (tests/cmvnmf/naive.py) at
awkward shapes and both dtypes; thread-count independence; the serial copy on small
problems."""
from __future__ import annotations

import numpy as np
import pytest

import fastmv
from fastmv.kernels import cmvnmf as K
from tests.cmvnmf import naive as N

# short runs (small max_iter) are the point of most tests here
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")

DTYPES = [np.float32, np.float64]


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def _random_pattern(rng, n_rows, n_cols, nnz, idx=np.int32):
    rows = np.sort(rng.integers(0, n_rows, nnz)) if n_rows else np.zeros(0, np.int64)
    indptr = np.zeros(n_rows + 1, dtype=np.int64 if idx == np.int64 else np.int32)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    indices = rng.integers(0, max(n_cols, 1), nnz).astype(idx)
    return indptr, indices


@pytest.mark.parametrize("idx", [np.int32, np.int64])
@pytest.mark.parametrize("n_rows,n_cols,nnz", [(0, 3, 0), (1, 1, 0), (1, 1, 3), (5, 1, 9),
                                               (40, 70, 500), (300, 20, 50)])
def test_pattern_csr_equals_twin(idx, n_rows, n_cols, nnz, rng):
    rows = rng.integers(0, max(n_rows, 1), nnz).astype(np.int64)
    cols = rng.integers(0, n_cols, nnz).astype(idx)
    got = K.pattern_csr(rows, cols, n_rows, n_cols)
    want = N.pattern_csr(rows, cols, n_rows, n_cols)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == idx and got[0].shape == (n_rows + 1,)


# --------------------------------------------------------------------------- kernels = twins
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 1), (1, 4, 3), (40, 30, 6), (0, 3, 2)])
def test_csr_matmul_equals_twin(dtype, shape, rng):
    n_rows, n_cols, c = shape
    indptr, indices = _random_pattern(rng, n_rows, n_cols, 3 * n_rows)
    data = rng.random(indices.size).astype(dtype)
    B = rng.random((n_cols, c)).astype(dtype)
    got = K.csr_matmul(indptr, indices, data, B)
    want = N.csr_matmul(indptr, indices, data, B)
    assert got.dtype == dtype and got.shape == (n_rows, c)
    np.testing.assert_allclose(got, want, **_tol(dtype))


def _no_terms(dtype, c, idx=np.int32):
    none_i, none_f = np.zeros(0, np.int64), np.zeros(0, dtype)
    return K.ConstraintTerms(np.zeros((0, c), dtype), none_i, np.zeros(0, idx), none_i,
                             np.zeros(0, idx), none_f, none_f, none_f, none_i)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d,c", [(1, 1), (5, 1), (1, 4), (130, 7), (64, 3), (0, 2), (1, 12),
                                 (70, 13), (9, 40)])
def test_multiplicative_update_without_terms_equals_twin(dtype, d, c, rng):
    U = rng.random((d, c)).astype(dtype)
    if d:
        U[0, 0] = 0.0  # a zero entry stays zero
    V = rng.random((11, c)).astype(dtype)
    XtV = rng.random((d, c)).astype(dtype)
    VtV = (V.T @ V).astype(dtype)
    before = U.copy()
    got, pen = K.multiplicative_update(U, XtV, VtV, _no_terms(dtype, c), 0.0, 1e-10)
    want, _ = N.multiplicative_update(U, XtV, VtV, _no_terms(dtype, c), 0.0, 1e-10)
    assert pen == 0.0
    # the serial copy computes exactly what the parallel kernel does
    serial, serial_pen = K.multiplicative_update_serial(U, XtV, VtV, _no_terms(dtype, c), 0.0,
                                                        1e-10)
    np.testing.assert_array_equal(serial, got)
    assert serial_pen == 0.0
    np.testing.assert_array_equal(U, before)  # out of place
    assert got.dtype == dtype and got.shape == (d, c)
    np.testing.assert_allclose(got, want, **_tol(dtype))
    assert d == 0 or got[0, 0] == 0.0


@pytest.mark.parametrize("c", [1, 11, 12, 13, 40])
def test_multiplicative_update_sums_each_denominator_in_order(c, rng):
    # both ways of forming row i of F gram (one dot product per k for few columns, all k at
    # once for many) must add F[i, l] gram[l, k] over l = 0, 1, ... from 0.0: the result is
    # then bit for bit that of plain IEEE arithmetic in that order
    F = rng.random((5, c))
    numer = rng.random((5, c))
    gram = rng.random((c, c)) * 10.0 ** rng.integers(-8, 8, (c, c))
    got, _ = K.multiplicative_update_serial(F, numer, gram, _no_terms(np.float64, c), 0.0,
                                            1e-10)
    for i in range(5):
        for k in range(c):
            den = 0.0
            for l in range(c):
                den += float(F[i, l]) * float(gram[l, k])
            assert got[i, k] == float(F[i, k]) * ((float(numer[i, k]) + 1e-10) / (den + 1e-10))


def test_multiplicative_update_zero_denominator_guarded():
    got, _ = K.multiplicative_update(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((2, 2)),
                                     _no_terms(np.float64, 2), 0.0, 1e-10)
    assert np.all(got == 0)
    got, _ = K.multiplicative_update(np.ones((2, 2)), np.zeros((2, 2)), np.zeros((2, 2)),
                                     _no_terms(np.float64, 2), 1.0, 1e-10)
    np.testing.assert_array_equal(got, 1.0)  # 0/0 guarded: (0 + ε) / (0 + ε)


@pytest.mark.parametrize("dtype,idx", [(np.float32, np.int32), (np.float64, np.int32),
                                       (np.float64, np.int64)])
@pytest.mark.parametrize("n_a,N_all,c,nnz_m,nnz_c", [(1, 1, 1, 0, 0), (1, 6, 3, 4, 2),
                                                      (30, 90, 4, 0, 50), (50, 120, 5, 200, 300),
                                                      (5, 5, 1, 7, 0), (70, 70, 3, 300, 100),
                                                      (40, 100, 27, 300, 200)])
@pytest.mark.parametrize("beta", [0.0, 0.7])
def test_multiplicative_update_with_terms_equals_twin(dtype, idx, n_a, N_all, c, nnz_m, nnz_c,
                                                      beta, rng):
    V_all = rng.random((N_all, c)).astype(dtype)
    V_a = V_all[:n_a]   # a row block of V_all: intra-view pairs read rows being updated
    m_ptr, m_idx = (K.pattern_csr(np.sort(rng.integers(0, n_a, nnz_m)),
                                  rng.integers(0, N_all, nnz_m).astype(idx), n_a, N_all))
    c_ptr, c_idx = _random_pattern(rng, n_a, N_all, nnz_c, idx)
    c_ptr = c_ptr.astype(np.int64)
    degrees = [rng.integers(0, k, n_a).astype(dtype) for k in (3, 5, 4)]
    XU = rng.random((n_a, c)).astype(dtype)
    U = rng.random((8, c)).astype(dtype)
    UtU = (U.T @ U).astype(dtype)
    before = V_all.copy()
    # no penalty part, every column "later" (split 0), a split inside the columns
    for split in ([], [0], [rng.integers(1, N_all + 1)]):
        terms = K.ConstraintTerms(V_all, m_ptr, m_idx, c_ptr, c_idx, *degrees,
                                  np.array(split, dtype=np.int64))
        got, got_pen = K.multiplicative_update(V_a, XU, UtU, terms, beta, 1e-10)
        want, want_pen = N.multiplicative_update(V_a, XU, UtU, terms, beta, 1e-10)
        serial, serial_pen = K.multiplicative_update_serial(V_a, XU, UtU, terms, beta, 1e-10)
        np.testing.assert_array_equal(serial, got)
        assert serial_pen == got_pen
        np.testing.assert_array_equal(V_all, before)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, **_tol(dtype))
        # the penalty part, from the kernel's own (rounded) F_new
        size = float(np.abs(want).sum() * (1 + np.abs(V_all).sum()) * (1 + degrees[2].max()))
        assert abs(got_pen - want_pen) <= (1e-5 if dtype == np.float32 else 1e-12) * size
        assert split or got_pen == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("constrained", [False, True])
def test_multiplicative_update_sets_subnormal_entries_to_zero(dtype, constrained):
    # F ⊙ ratio below the smallest normal number is 0 (a zero stays zero); the smallest
    # normal itself and everything above are kept as computed
    tiny = np.finfo(dtype).tiny
    F = np.ones((2, 3), dtype=dtype)
    numer = np.array([[tiny, 2 * tiny, 2.0], [2.0, 1.5 * tiny, 0.0]], dtype=dtype)
    gram = 2 * np.eye(3, dtype=dtype)
    if constrained:
        V_all = np.zeros((2, 3), dtype)
        ptr, none = np.zeros(3, np.int64), np.zeros(0, np.int32)
        zero = np.zeros(2, dtype)
        terms = K.ConstraintTerms(V_all, ptr, none, ptr, none, zero, zero, zero,
                                  np.zeros(0, np.int64))
    else:
        terms = _no_terms(dtype, 3)
    got, _ = K.multiplicative_update(F, numer, gram, terms, 1.0, 0.0)
    # F_new = F ⊙ numer / (2 F) = numer / 2: tiny / 2 and 0.75 tiny are subnormal
    want = np.array([[0.0, tiny, 1.0], [1.0, 0.0, 0.0]], dtype=dtype)
    np.testing.assert_array_equal(got, want)
    assert not np.any((got > 0) & (got < tiny))
    twin, _ = N.multiplicative_update(F, numer, gram, terms, 1.0, 0.0)
    np.testing.assert_array_equal(twin, want)


@pytest.mark.parametrize("sort_columns", [True, False])
@pytest.mark.parametrize("c", [1, 5, 27])
def test_multiplicative_update_adds_each_pair_in_order(sort_columns, c, rng):
    # the pair sums are formed four rows at a time where the rows fall on one side of the
    # split, yet every entry must still be added in the order of the pattern: the result is
    # then bit for bit that of the plain loop (float64 here; the split inside every row)
    n_a, N_all = 9, 40
    V_all = rng.random((N_all, c)) * 10.0 ** rng.integers(-6, 6, (N_all, c))
    F = V_all[:n_a]
    patterns = []
    for nnz in (60, 200):
        ptr, idx = _random_pattern(rng, n_a, N_all, nnz, np.int32)
        if sort_columns:
            for i in range(n_a):
                idx[ptr[i]:ptr[i + 1]].sort()
        patterns += [ptr.astype(np.int64), idx]
    deg = [rng.integers(0, 4, n_a).astype(np.float64) for _ in range(3)]
    numer, gram = rng.random((n_a, c)), rng.random((c, c))
    beta, eps, split = 0.7, 1e-10, 17
    terms = K.ConstraintTerms(V_all, *patterns, *deg, np.array([split], dtype=np.int64))
    got, _ = K.multiplicative_update_serial(F, numer, gram, terms, beta, eps)
    (m_ptr, m_idx, c_ptr, c_idx) = patterns
    for i in range(n_a):
        for k in range(c):
            den = 0.0
            for l in range(c):
                den += float(F[i, l]) * float(gram[l, k])
            num = float(numer[i, k])
            num += beta * deg[0][i] * float(F[i, k])
            den += beta * deg[1][i] * float(F[i, k])
            m_low = c_low = 0.0
            for p in range(m_ptr[i], m_ptr[i + 1]):
                if m_idx[p] < split:
                    m_low += float(V_all[m_idx[p], k])
                else:
                    num += beta * float(V_all[m_idx[p], k])
            for p in range(c_ptr[i], c_ptr[i + 1]):
                if c_idx[p] < split:
                    c_low += float(V_all[c_idx[p], k])
                else:
                    den += beta * float(V_all[c_idx[p], k])
            want = float(F[i, k]) * ((num + beta * m_low + eps) / (den + beta * c_low + eps))
            assert got[i, k] == want


@pytest.mark.parametrize("dtype,idx", [(np.float32, np.int32), (np.float64, np.int32),
                                       (np.float64, np.int64)])
@pytest.mark.parametrize("p_m,p_c", [(0, 0), (1, 0), (0, 3), (5000, 9000), (4096, 4097)])
def test_constraint_penalty_equals_twin(dtype, idx, p_m, p_c, rng):
    V_all = rng.random((300, 4)).astype(dtype)
    must = rng.integers(0, 300, (p_m, 2)).astype(idx)
    cannot = rng.integers(0, 300, (p_c, 2)).astype(idx)
    got = K.constraint_penalty(V_all, must, cannot)
    want = N.constraint_penalty(V_all, must, cannot)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_kernels_thread_count_independent(rng):
    V_all = rng.random((5000, 6))
    must = rng.integers(0, 5000, (30000, 2)).astype(np.int32)
    cannot = rng.integers(0, 5000, (30000, 2)).astype(np.int32)
    with fastmv.thread_limit(1):
        one = K.constraint_penalty(V_all, must, cannot)
    with fastmv.thread_limit(2):
        two = K.constraint_penalty(V_all, must, cannot)
    assert one == two
    # the update's penalty part: blocks of rows summed in order
    n_a = 3000
    m_ptr, m_idx = K.pattern_csr((must[:, 0] % n_a).astype(np.int64), must[:, 1], n_a, 5000)
    c_ptr, c_idx = K.pattern_csr((cannot[:, 0] % n_a).astype(np.int64), cannot[:, 1],
                                 n_a, 5000)
    terms = K.ConstraintTerms(V_all, m_ptr, m_idx, c_ptr, c_idx, np.zeros(n_a), np.ones(n_a),
                              np.ones(n_a), np.array([2000], dtype=np.int64))
    args = (V_all[:n_a], rng.random((n_a, 6)), np.eye(6), terms, 0.5, 1e-10)
    with fastmv.thread_limit(1):
        F1, p1 = K.multiplicative_update(*args)
    with fastmv.thread_limit(2):
        F2, p2 = K.multiplicative_update(*args)
    np.testing.assert_array_equal(F1, F2)
    assert p1 == p2
    F3, p3 = K.multiplicative_update_serial(*args)
    np.testing.assert_array_equal(F3, F2)
    assert p3 == p2


def test_small_problem_runs_only_the_serial_kernel_and_the_parallel_one_agrees(monkeypatch):
    from fastmv._cmvnmf import _problem

    rng = np.random.default_rng(0)
    Xs = [np.abs(rng.standard_normal((40, 5))), np.abs(rng.standard_normal((30, 4)))]
    ml = {(0, 1): np.array([[0, 0], [1, 1], [2, 3]])}
    cl = {(0, 1): np.array([[5, 0], [6, 1]])}
    kwargs = dict(init="random", max_iter=5, random_state=0, n_jobs=2)
    parallel = _problem.multiplicative_update

    def refuse(*args):
        raise AssertionError("a small problem launched the parallel kernel")

    monkeypatch.setattr(_problem, "multiplicative_update", refuse)
    a = fastmv.cmvnmf(Xs, 2, ml, cl, **kwargs)
    # the parallel kernel forced (as on a large problem): the same factors bit for bit
    monkeypatch.setattr(_problem, "multiplicative_update", parallel)
    monkeypatch.setattr(_problem, "use_serial_kernel", lambda work: False)
    b = fastmv.cmvnmf(Xs, 2, ml, cl, **kwargs)
    for x, y in zip(a.V + a.U + a.labels, b.V + b.U + b.labels):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.objective, b.objective)

