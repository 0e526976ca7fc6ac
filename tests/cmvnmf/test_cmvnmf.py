"""Tests of fastmv.cmvnmf (docs/algorithms.md §4) and its kernels (kernels/cmvnmf.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from benchmarks.references import cmvnmf as R
from fastmv import metrics, simulate
from fastmv._cmvnmf import _solver as S
from fastmv._cmvnmf._solver import Problem, _prepare
from fastmv.kernels import cmvnmf as K
from tests.cmvnmf import naive as N
from tests.conftest import shared_dataset

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
    from fastmv._cmvnmf import _solver

    rng = np.random.default_rng(0)
    Xs = [np.abs(rng.standard_normal((40, 5))), np.abs(rng.standard_normal((30, 4)))]
    ml = {(0, 1): np.array([[0, 0], [1, 1], [2, 3]])}
    cl = {(0, 1): np.array([[5, 0], [6, 1]])}
    kwargs = dict(init="random", max_iter=5, random_state=0, n_jobs=2)
    parallel = _solver.multiplicative_update

    def refuse(*args):
        raise AssertionError("a small problem launched the parallel kernel")

    monkeypatch.setattr(_solver, "multiplicative_update", refuse)
    a = fastmv.cmvnmf(Xs, 2, ml, cl, **kwargs)
    # the parallel kernel forced (as on a large problem): the same factors bit for bit
    monkeypatch.setattr(_solver, "multiplicative_update", parallel)
    monkeypatch.setattr(_solver, "use_serial_kernel", lambda work: False)
    b = fastmv.cmvnmf(Xs, 2, ml, cl, **kwargs)
    for x, y in zip(a.V + a.U + a.labels, b.V + b.U + b.labels):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.objective, b.objective)


# --------------------------------------------------------------------------- problems
def _without(pairs, other, symmetric=False):
    """``pairs`` minus the rows that are also in ``other`` (either orientation if symmetric)."""
    key = [tuple(p) for p in other] + ([tuple(p[::-1]) for p in other] if symmetric else [])
    keep = [tuple(p) not in set(key) for p in pairs]
    return pairs[np.asarray(keep, dtype=bool)]


def _random_problem(rng, n_list=(30, 25, 18), d_list=(6, 9, 4), c=3, sparse=False, intra=True,
                    transposed=True, n_pairs=40):
    X = []
    for n, d in zip(n_list, d_list):
        A = rng.random((n, d))
        if sparse:
            A[rng.random((n, d)) < 0.6] = 0.0
            A[0] = 0.0  # an all-zero row
            A = sp.csr_matrix(A)
        X.append(A)
    ml, cl = {}, {}
    m = len(n_list)
    for a in range(m):
        for b in range(a + 1, m):
            pm, pc = (np.column_stack([rng.integers(0, n_list[a], n_pairs),
                                       rng.integers(0, n_list[b], n_pairs)]) for _ in range(2))
            pc = _without(pc, pm)
            if transposed and (a + b) % 2:
                ml[(b, a)] = pm[:, ::-1]
                cl[(b, a)] = pc[:, ::-1]
            else:
                ml[(a, b)] = pm
                cl[(a, b)] = pc
    if intra:
        i = rng.integers(0, n_list[0], 20)
        j = (i + 1 + rng.integers(0, n_list[0] - 1, 20)) % n_list[0]
        ml[(0, 0)] = np.column_stack([i, j])
        k = (i[:10] + 2) % n_list[0]
        cl[(0, 0)] = _without(np.column_stack([k, i[:10]]), ml[(0, 0)], symmetric=True)
    U0 = [rng.random((d, c)) for d in d_list]
    V0 = [rng.random((n, c)) for n in n_list]
    return X, ml, cl, U0, V0


def _dense_objective(views, prob, ml, cl, beta):
    return N.cmvnmf_objective(views, prob.U, [prob.V(a) for a in range(prob.m)], ml, cl, beta)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_non_increasing_at_every_update(sparse, seed):
    rng = np.random.default_rng(seed)
    beta = [1.0, 0.3, 5.0][seed]
    X, ml, cl, U0, V0 = _random_problem(rng, sparse=sparse)
    data = _prepare(X, 3, ml, cl, beta, "l2")
    views = data.views
    prob = Problem(views, data.blocks, U0, V0, beta=beta, rescale=False)
    f = _dense_objective(views, prob, ml, cl, beta)
    assert np.isclose(prob.objective(), f, rtol=1e-10)
    start = f
    for _ in range(40):
        for a in range(prob.m):
            for update in (prob.update_u, prob.update_v):
                update(a)
                g = _dense_objective(views, prob, ml, cl, beta)
                assert g <= f * (1 + 1e-12) + 1e-12, (update.__name__, a, f, g)
                f = g
        # the cached objective the solver uses equals the dense one after a sweep
        assert np.isclose(prob.objective(), f, rtol=1e-9)
    assert f < 0.9 * start  # it did decrease, not just stay


def test_intra_view_symmetrised_rule_reaches_stationary_point():
    # with only intra-view must-links, the fixed point satisfies the KKT conditions of the
    # objective: V ⊙ gradient ≈ 0 (complementary slackness) for the symmetrised Laplacian term
    rng = np.random.default_rng(3)
    X = [rng.random((12, 5))]
    ml = {(0, 0): np.array([[0, 1], [1, 2], [3, 7], [4, 9]])}
    data = _prepare(X, 2, ml, {}, 2.0, None)
    prob = Problem(data.views, data.blocks, [rng.random((5, 2))], [rng.random((12, 2))], beta=2.0,
                    rescale=False)
    for _ in range(5000):
        prob.sweep()
    U, V = prob.U[0], prob.V(0)
    M = np.zeros((12, 12))
    for i, j in ml[(0, 0)]:
        M[i, j] += 1
    Ms = M + M.T
    L = np.diag(Ms.sum(1)) - Ms
    grad = 2 * (V @ U.T @ U - X[0] @ U) + 2 * 2.0 * L @ V
    scale = np.abs(V * 2 * (X[0] @ U)).max()  # size of the terms that cancel at a KKT point
    assert np.abs(V * grad).max() < 1e-4 * scale


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("rescale", [False, True])
def test_solver_equals_numpy_reference(sparse, rescale, monkeypatch):
    # the plain sweeps (the extrapolated ones: tests/cmvnmf/test_extrapolation.py)
    monkeypatch.setattr(S, "_EXTRAPOLATE", False)
    rng = np.random.default_rng(7)
    X, ml, cl, U0, V0 = _random_problem(rng, sparse=sparse)
    res = fastmv.cmvnmf(X, 3, ml, cl, beta=1.0, init=(U0, V0), rescale=rescale, max_iter=25,
                        tol=0.0)
    views = _prepare(X, 3, ml, cl, 1.0, "l2").views
    U, V, hist = R.cmvnmf_reference(views, ml, cl, U0, V0, 25, rescale=rescale)
    assert res.n_iter == 25 and not res.converged
    for a in range(3):
        np.testing.assert_allclose(res.U[a], U[a], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(res.V[a], V[a], rtol=1e-8, atol=1e-12)
        np.testing.assert_array_equal(res.labels[a], np.argmax(V[a], axis=1))
    np.testing.assert_allclose(res.objective, hist, rtol=1e-9)
    f0 = N.cmvnmf_objective(views, U0, V0, ml, cl, 1.0)
    assert np.isclose(res.initial_objective, f0, rtol=1e-9)
    f_final = N.cmvnmf_objective(views, res.U, res.V, ml, cl, 1.0)
    assert np.isclose(res.objective[-1], f_final, rtol=1e-9)
    if rescale:
        for U in res.U:
            np.testing.assert_allclose(np.linalg.norm(U, axis=0), 1.0, rtol=1e-12)


def test_transposed_keys_equal_canonical():
    rng = np.random.default_rng(11)
    X, ml, cl, U0, V0 = _random_problem(rng, transposed=False, intra=False)
    flipped_ml = {(b, a): p[:, ::-1] for (a, b), p in ml.items()}
    # split one block's pairs over both orientations: merged into one block
    half = {(0, 1): ml[(0, 1)][:20], (1, 0): ml[(0, 1)][20:, ::-1]}
    ml_split = {**{k: v for k, v in ml.items() if k != (0, 1)}, **half}
    kw = dict(init=(U0, V0), max_iter=15, tol=0.0, beta=1.0)
    r0 = fastmv.cmvnmf(X, 3, ml, cl, **kw)
    r1 = fastmv.cmvnmf(X, 3, flipped_ml, cl, **kw)
    r2 = fastmv.cmvnmf(X, 3, ml_split, cl, **kw)
    for r in (r1, r2):
        for a in range(3):
            np.testing.assert_allclose(r.V[a], r0.V[a], rtol=1e-12)
        np.testing.assert_allclose(r.objective, r0.objective, rtol=1e-12)


# --------------------------------------------------------------------------- reduces to NMF
def _mapped_views(rng, n=60, d_list=(8, 5), c=3):
    y = rng.integers(0, c, n)
    return [rng.random((c, d))[y] + 0.3 * rng.random((n, d)) for d in d_list], y


@pytest.mark.parametrize("rescale", [False, True])
def test_no_constraints_is_independent_nmf_per_view(rescale):
    rng = np.random.default_rng(5)
    X, _ = _mapped_views(rng)
    U0 = [rng.random((x.shape[1], 3)) for x in X]
    V0 = [rng.random((x.shape[0], 3)) for x in X]
    res = fastmv.cmvnmf(X, 3, {}, None, init=(U0, V0), normalize=None, rescale=rescale,
                        max_iter=60, tol=0.0)
    for a, x in enumerate(X):
        U, V = N.nmf_reference(x, U0[a], V0[a], 60, rescale=rescale)
        np.testing.assert_allclose(res.U[a], U, rtol=1e-9)
        np.testing.assert_allclose(res.V[a], V, rtol=1e-9)
    # beta = 0 switches the constraints off: same result as no constraints at all
    ml, cl = simulate.inter_view_constraints([np.arange(60) % 3] * 2, n_constraints=100,
                                             random_state=0)
    res0 = fastmv.cmvnmf(X, 3, ml, cl, beta=0.0, init=(U0, V0), normalize=None,
                         rescale=rescale, max_iter=60, tol=0.0)
    for a in range(2):
        np.testing.assert_allclose(res0.V[a], res.V[a], rtol=1e-12)


def test_no_constraints_matches_scikit_learn_nmf():
    sklearn_nmf = pytest.importorskip("sklearn.decomposition").NMF
    rng = np.random.default_rng(6)
    X, _ = _mapped_views(rng)
    U0 = [rng.random((x.shape[1], 3)) + 0.1 for x in X]
    V0 = [rng.random((x.shape[0], 3)) + 0.1 for x in X]
    res = fastmv.cmvnmf(X, 3, None, None, init=(U0, V0), normalize=None, rescale=False,
                        max_iter=50, tol=0.0)
    for a, x in enumerate(X):
        # scikit-learn factorises Xᵀ ≈ W H with W = U (updated first), H = Vᵀ
        model = sklearn_nmf(n_components=3, init="custom", solver="mu", beta_loss="frobenius",
                            max_iter=50, tol=0.0)
        W = model.fit_transform(x.T.copy(), W=U0[a].copy(), H=V0[a].T.copy())
        np.testing.assert_allclose(res.U[a], W, rtol=1e-6)
        np.testing.assert_allclose(res.V[a], model.components_.T, rtol=1e-6)


# --------------------------------------------------------------------------- clustering
def _planted_unmapped(seed, n=300, c=4, noise=0.4, sparse=False):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    views = []
    for d in (20, 12, 30):
        centers = rng.gamma(2.0, 1.0, (c, d)) * (rng.random((c, d)) < 0.5)
        X = centers[y] + noise * rng.random((n, d))
        views.append(sp.csr_matrix(X) if sparse else X)
    return simulate.unmapped(views, y, keep=0.95, random_state=rng), rng


@pytest.mark.parametrize("sparse", [False, True])
def test_planted_clusters_recovered_exactly(sparse):
    (Xs, ys, _), rng = _planted_unmapped(0, sparse=sparse)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.01, random_state=rng)
    res = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=0)
    for a in range(3):
        assert metrics.accuracy(ys[a], res.labels[a]) == 1.0
        assert res.labels[a].dtype == np.int64 and res.V[a].shape == (Xs[a].shape[0], 4)
    # the views' clusters are matched by the constraints: same label = same class across views
    lab_of_class = [{int(k): int(np.bincount(res.labels[a][ys[a] == k]).argmax()) for k in range(4)}
                    for a in range(3)]
    assert lab_of_class[0] == lab_of_class[1] == lab_of_class[2]


def test_constraints_improve_noisy_views():
    (Xs, ys, _), rng = _planted_unmapped(1, n=400, noise=10.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
    acc = {}
    for name, (m_, c_) in {"none": ({}, {}), "5%": (ml, cl)}.items():
        r = fastmv.cmvnmf(Xs, 4, m_, c_, random_state=3)
        acc[name] = np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)])
    assert acc["5%"] > acc["none"] + 0.1, acc
    assert acc["5%"] > 0.9, acc


def test_kmeans_init_and_max_iter_zero():
    (Xs, ys, _), _ = _planted_unmapped(2)
    res = fastmv.cmvnmf(Xs, 4, None, None, max_iter=0, random_state=4)
    assert res.n_iter == 0 and res.objective.shape == (0,) and res.initial_objective > 0
    for a in range(3):
        V = res.V[a]
        assert set(np.unique(V)) == {0.2, 1.2}
        np.testing.assert_array_equal((V == 1.2).sum(axis=1), 1)
        assert res.U[a].min() >= 0 and res.U[a].shape == (Xs[a].shape[1], 4)
        np.testing.assert_array_equal(res.labels[a], np.argmax(V, axis=1))


# --------------------------------------------------------------------------- API contracts
def test_inputs_not_modified_and_deterministic():
    rng = np.random.default_rng(8)
    X, ml, cl, U0, V0 = _random_problem(rng, sparse=False)
    X[1] = sp.csr_matrix(X[1])
    copies = ([x.copy() for x in X], {k: v.copy() for k, v in ml.items()},
              {k: v.copy() for k, v in cl.items()}, [u.copy() for u in U0], [v.copy() for v in V0])
    r1 = fastmv.cmvnmf(X, 3, ml, cl, random_state=42, max_iter=30, n_init=2)
    r2 = fastmv.cmvnmf(X, 3, ml, cl, random_state=42, max_iter=30, n_init=2)
    r3 = fastmv.cmvnmf(X, 3, ml, cl, init=(U0, V0), max_iter=5)
    for a in range(3):
        np.testing.assert_array_equal(r1.V[a], r2.V[a])
    np.testing.assert_array_equal(r1.objective, r2.objective)
    for x, x0 in zip(X, copies[0]):
        if sp.issparse(x):
            assert (x != x0).nnz == 0
        else:
            np.testing.assert_array_equal(x, x0)
    for d, d0 in zip((ml, cl), copies[1:3]):
        for k in d:
            np.testing.assert_array_equal(d[k], d0[k])
    for lst, lst0 in zip((U0, V0), copies[3:]):
        for u, u0 in zip(lst, lst0):
            np.testing.assert_array_equal(u, u0)
    assert r3.n_iter == 5


def test_thread_count_independent():
    (Xs, ys, _), rng = _planted_unmapped(3, noise=2.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=rng)
    r1 = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=1, n_jobs=1, max_iter=30, n_init=1)
    r2 = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=1, n_jobs=2, max_iter=30, n_init=1)
    for a in range(3):
        np.testing.assert_allclose(r1.V[a], r2.V[a], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(r1.labels[a], r2.labels[a])


def test_sparse_and_dense_views_agree_and_float32():
    (Xs, ys, _), rng = _planted_unmapped(4, noise=1.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.01, random_state=rng)
    kw = dict(random_state=2, max_iter=40, n_init=1)
    rd = fastmv.cmvnmf(Xs, 4, ml, cl, **kw)
    rs = fastmv.cmvnmf([sp.csr_matrix(x) for x in Xs], 4, ml, cl, **kw)
    r32 = fastmv.cmvnmf([x.astype(np.float32) for x in Xs], 4, ml, cl, **kw)
    for a in range(3):
        np.testing.assert_allclose(rs.V[a], rd.V[a], rtol=1e-7, atol=1e-10)
        assert r32.V[a].dtype == np.float32 and r32.U[a].dtype == np.float32
        assert metrics.accuracy(ys[a], r32.labels[a]) == metrics.accuracy(ys[a], rd.labels[a])


def test_callback_info_and_verbose(caplog):
    (Xs, ys, _), _ = _planted_unmapped(5)
    seen = []

    def cb(info):
        seen.append((info.iteration, info.objective, len(info.state["V"])))
        assert not info.state["V"][0].flags.writeable
        return info.iteration == 3

    res = fastmv.cmvnmf(Xs, 4, None, None, callback=cb, random_state=0, tol=0.0)
    assert res.n_iter == 3 and [s[0] for s in seen] == [1, 2, 3] and not res.converged
    assert seen[-1][1] == res.objective[-1] and seen[0][2] == 3
    with caplog.at_level("INFO", logger="fastmv"):
        fastmv.cmvnmf(Xs, 4, None, None, verbose=2, max_iter=2, random_state=0, n_init=1)
    assert "cmvnmf: iter    2  objective" in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="fastmv"):  # True: one line per start, no sweeps
        fastmv.cmvnmf(Xs, 4, None, None, verbose=True, max_iter=2, random_state=0, n_init=3)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert "clusters" in lines[0]  # the call's start record, then one line per start
    lines = lines[1:]
    assert len(lines) == 3 and lines[2].startswith("cmvnmf: start 3/3  sweeps    2")
    assert "CMVNMFResult" in repr(res)


@pytest.mark.parametrize("how", ["return_true", "stop_iteration"])
def test_callback_stop_ends_every_start(how):
    (Xs, ys, _), _ = _planted_unmapped(5, n=60)
    calls = []

    def cb(info):
        calls.append(info.iteration)
        if how == "return_true":
            return True
        raise StopIteration

    res = fastmv.cmvnmf(Xs, 4, None, None, callback=cb, random_state=0, n_init=3, tol=0.0)
    assert calls == [1] and res.n_iter == 1 and res.converged is False
    # a stop during a later start: that start is returned, the rest are not run
    calls.clear()

    def late(info):
        calls.append(info.iteration)
        return len(calls) == 8

    res = fastmv.cmvnmf(Xs, 4, None, None, callback=late, random_state=0, n_init=3,
                        max_iter=5, tol=0.0)
    assert len(calls) == 8 and res.n_iter == 3 and res.converged is False


def test_result_contract():
    (Xs, ys, _), rng = _planted_unmapped(6, n=80)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=rng)
    res = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=0, max_iter=7, tol=0.0)
    assert isinstance(res, fastmv.Result) and isinstance(res, fastmv._cmvnmf._solver.CMVNMFResult)
    assert res.n_iter == 7 and res.objective.shape == (7,) and res.objective.dtype == np.float64
    assert isinstance(res.converged, bool) and not res.converged
    assert isinstance(res.initial_objective, float)
    assert res.initial_objective >= res.objective[0]
    assert len(res.labels) == len(res.U) == len(res.V) == 3
    assert all(lab.dtype == np.int64 for lab in res.labels)


def test_n_init_keeps_the_lowest_objective():
    (Xs, ys, _), rng = _planted_unmapped(7, n=80, noise=3.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=rng)
    kw = dict(max_iter=20, tol=0.0, init="random", beta=1.0)
    best = fastmv.cmvnmf(Xs, 4, ml, cl, n_init=4, random_state=np.random.default_rng(5), **kw)
    gen = np.random.default_rng(5)
    singles = [fastmv.cmvnmf(Xs, 4, ml, cl, n_init=1, random_state=gen, **kw).objective[-1]
               for _ in range(4)]
    assert best.objective[-1] == min(singles)


def test_pair_in_must_and_cannot_link_raises():
    rng = np.random.default_rng(9)
    X = [rng.random((10, 3)), rng.random((8, 4))]
    with pytest.raises(ValueError, match=r"\(2, 5\).*must_link\[\(0, 1\)\].*cannot_link"):
        fastmv.cmvnmf(X, 2, {(0, 1): [[1, 1], [2, 5]]}, {(1, 0): [[5, 2]]})
    with pytest.raises(ValueError, match="both"):    # intra-view: (i, j) is (j, i)
        fastmv.cmvnmf(X, 2, {(0, 0): [[1, 4]]}, {(0, 0): [[4, 1]]})
    fastmv.cmvnmf(X, 2, {(0, 1): [[1, 1]]}, {(0, 0): [[1, 2]]}, max_iter=2)  # no conflict


@pytest.mark.parametrize("scale", [1e300, 1e200, 1e-300])
def test_extreme_scales_same_labels_and_never_nonfinite(scale):
    (Xs, ys, _), rng = _planted_unmapped(8, n=80, noise=1.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=rng)
    kw = dict(random_state=0, max_iter=30, n_init=1)
    base = fastmv.cmvnmf(Xs, 4, ml, cl, **kw)
    scaled = [X * scale for X in Xs]
    with np.errstate(all="raise"):
        r = fastmv.cmvnmf(scaled, 4, ml, cl, **kw)
    for a in range(3):
        np.testing.assert_array_equal(r.labels[a], base.labels[a])
    np.testing.assert_allclose(r.objective, base.objective, rtol=1e-8)
    # without normalisation: a finite answer in the data's units, or a clear error
    try:
        with np.errstate(all="raise"):
            r = fastmv.cmvnmf(scaled, 4, ml, cl, normalize=None, **kw)
    except ValueError as exc:
        assert "do not fit in floating point" in str(exc) and scale > 1
    else:
        assert np.all(np.isfinite(r.objective)) and np.isfinite(r.initial_objective)
        assert all(np.all(np.isfinite(V)) for V in r.V)
        # the same solve as on the data brought near 1 by a power of two (exact)
        e = np.frexp(max(X.max() for X in scaled))[1]
        plain = fastmv.cmvnmf([np.ldexp(X, -e) for X in scaled], 4, ml, cl, normalize=None,
                              **kw)
        for a in range(3):
            np.testing.assert_array_equal(r.labels[a], plain.labels[a])
            np.testing.assert_array_equal(r.V[a], np.ldexp(plain.V[a], e))


def test_collapsed_factor_warns_naming_the_cause():
    rng = np.random.default_rng(13)
    X = [rng.random((12, 3)), rng.random((10, 4))]
    zero = ([np.zeros((3, 2)), rng.random((4, 2))], [np.zeros((12, 2)), rng.random((10, 2))])
    with pytest.warns(fastmv.DegenerateSolutionWarning, match="V of view 0 collapsed.*beta"):
        fastmv.cmvnmf(X, 2, None, None, init=zero, max_iter=2)
    one = ([rng.random((3, 2)), rng.random((4, 2))],
           [np.column_stack([np.ones(12), np.zeros(12)]), rng.random((10, 2))])
    with pytest.warns(fastmv.DegenerateSolutionWarning, match="view 0 is in one cluster"):
        fastmv.cmvnmf(X, 2, None, None, init=one, max_iter=0)


def test_validation_errors():
    rng = np.random.default_rng(9)
    X = [rng.random((10, 3)), rng.random((8, 4))]
    ok = {(0, 1): np.array([[0, 0]])}
    bad = X[1].copy()
    bad[2, 1] = -1.0
    for norm in ("l2", "l1", None):
        with pytest.raises(ValueError, match=r"X_list\[1\].*negative"):
            fastmv.cmvnmf([X[0], bad], 2, ok, None, normalize=norm)
        with pytest.raises(ValueError, match=r"X_list\[1\].*negative"):
            fastmv.cmvnmf([X[0], sp.csr_matrix(bad)], 2, ok, None, normalize=norm)
    with pytest.raises(ValueError, match=r"must_link.*view index 2"):
        fastmv.cmvnmf(X, 2, {(0, 2): np.array([[0, 0]])}, None)
    with pytest.raises(ValueError, match=r"cannot_link\[\(0, 1\)\]"):
        fastmv.cmvnmf(X, 2, None, {(0, 1): np.array([[0, 8]])})  # row 8 not in view 1
    with pytest.raises(ValueError, match=r"must_link\[\(1, 0\)\]"):
        fastmv.cmvnmf(X, 2, {(1, 0): np.array([[9, 0]])}, None)  # row 9 not in view 1
    with pytest.raises(ValueError, match=r"must_link\[\(0, 0\)\].*itself"):
        fastmv.cmvnmf(X, 2, {(0, 0): np.array([[3, 3]])}, None)
    with pytest.raises(TypeError, match="must_link"):
        fastmv.cmvnmf(X, 2, [[0, 0]], None)
    with pytest.raises(TypeError, match="cannot_link keys"):
        fastmv.cmvnmf(X, 2, None, {0: np.array([[0, 0]])})
    with pytest.raises(ValueError, match="shape"):
        fastmv.cmvnmf(X, 2, {(0, 1): np.array([0, 1, 2])}, None)
    with pytest.raises(ValueError, match="n_clusters"):
        fastmv.cmvnmf(X, 9, None, None)
    with pytest.raises(ValueError, match="beta"):
        fastmv.cmvnmf(X, 2, None, None, beta=-1.0)
    with pytest.raises(ValueError, match="normalize"):
        fastmv.cmvnmf(X, 2, None, None, normalize="max")
    with pytest.raises(ValueError, match="init"):
        fastmv.cmvnmf(X, 2, None, None, init="nndsvd")
    with pytest.raises(ValueError, match="init"):
        fastmv.cmvnmf(X, 2, None, None, init="kmeans")
    with pytest.raises(ValueError, match="n_init"):
        fastmv.cmvnmf(X, 2, None, None, n_init=0)
    with pytest.raises(ValueError, match=r"init\[1\]\[0\]"):
        fastmv.cmvnmf(X, 2, None, None, init=([np.ones((3, 2)), np.ones((4, 2))],
                                               [np.ones((9, 2)), np.ones((8, 2))]))
    with pytest.raises(ValueError, match=r"init\[0\]\[1\].*negative"):
        fastmv.cmvnmf(X, 2, None, None, init=([np.ones((3, 2)), -np.ones((4, 2))],
                                               [np.ones((10, 2)), np.ones((8, 2))]))
    with pytest.raises(ValueError, match="max_iter"):
        fastmv.cmvnmf(X, 2, None, None, max_iter=-1)
    with pytest.raises(TypeError, match="callback"):
        fastmv.cmvnmf(X, 2, None, None, callback=3)
    with pytest.raises(TypeError, match="X_list"):
        fastmv.cmvnmf(X[0], 2, None, None)
    with pytest.raises(TypeError, match="rescale"):
        fastmv.cmvnmf(X, 2, None, None, rescale="yes")


def test_awkward_shapes():
    rng = np.random.default_rng(12)
    # a one-row view, one cluster, inter- and intra-view pairs, (b, a) key
    r = fastmv.cmvnmf([rng.random((1, 3)), rng.random((5, 2))], 1, {(1, 0): [[4, 0]]},
                      {(1, 1): [[0, 1]]}, random_state=0)
    assert [lab.tolist() for lab in r.labels] == [[0], [0] * 5]
    assert np.all(np.diff(r.objective) <= 1e-12 * r.objective[:-1])
    # an all-zero view and a sparse view with empty rows: finite factors, the all-zero
    # view's samples in one cluster (said by a warning)
    Xs = sp.csr_matrix(np.array([[0, 0, 1.0], [0, 0, 0], [2.0, 0, 0], [0, 0, 0]]))
    with np.errstate(divide="raise", invalid="raise", over="raise"), \
            pytest.warns(fastmv.DegenerateSolutionWarning, match="view 0"):
        r = fastmv.cmvnmf([np.zeros((4, 3)), Xs], 2, None, {(1, 0): np.array([[0, 1]])},
                          random_state=0, init="random")
    assert all(np.all(np.isfinite(V)) for V in r.V) and all(np.all(np.isfinite(U)) for U in r.U)


# --------------------------------------------------------------------------- real data
def _handwritten_fou_pix_zer():
    views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"))
    return [views[i] for i in (1, 4, 5)], y  # file order: fac, fou, kar, mor, pix, zer


@pytest.mark.slow
def test_handwritten_unmapped_5_percent_constraints():
    views, y = _handwritten_fou_pix_zer()
    accs, base = [], []
    for draw in range(2):  # the record averages 5 draws (docs/records/cmvnmf.md)
        rng = np.random.default_rng(1000 + draw)
        Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
        ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
        r = fastmv.cmvnmf(Xs, 10, ml, cl, random_state=rng, n_init=1)
        accs.append(np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)]))
        if draw == 0:
            r0 = fastmv.cmvnmf(Xs, 10, {}, {}, random_state=rng, max_iter=100, n_init=1)
            base.append(np.mean([metrics.accuracy(ys[a], r0.labels[a]) for a in range(3)]))
    assert np.mean(accs) >= 0.80, accs
    assert np.mean(accs) > base[0] + 0.1, (accs, base)


@pytest.mark.slow
def test_reuters_unmapped_5_percent_constraints():
    views, y = fastmv.datasets.load_mat(shared_dataset("Reuters-1200.mat"))
    rng = np.random.default_rng(2000)
    views = [sp.csr_matrix(v) for v in views[:3]]  # English, French, German; text as CSR
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
    # beta="auto" picks 10 here, and this single start merges two classes into one column of
    # every view's V (the k-means start has all six clusters and no row is empty): a genuine
    # local minimum of the model at that weight, which the solver must report, view by view
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fastmv.cmvnmf(Xs, 6, ml, cl, random_state=rng, n_init=1)
    acc = np.mean([metrics.accuracy(ys[a], r.labels[a]) for a in range(3)])
    assert acc >= 0.6, acc
    degenerate = {a for a in range(3) if np.unique(r.labels[a]).size < 6}
    warned = {int(v) for w in caught if issubclass(w.category, fastmv.DegenerateSolutionWarning)
              for v in re.findall(r"of view (\d+)", str(w.message))}
    assert warned == degenerate


# --------------------------------------------------------------------------- Numba's cache
_FIRST_CALLS = textwrap.dedent("""
    import json, pkgutil, sys, time
    import numba
    import numpy as np
    # Numba's own one-time set-up (target registries), paid by any first compile or cache
    # load in a process whatever the library: not fastmv's to cut, so kept out of the timing
    numba.njit(lambda x: x + 1)(1)
    import fastmv
    import fastmv.kernels
    rng = np.random.default_rng(0)
    Xs = [np.abs(rng.standard_normal((40, 5))), np.abs(rng.standard_normal((30, 4)))]
    ml = {(0, 1): np.array([[0, 0], [1, 1], [2, 3]])}
    cl = {(0, 1): np.array([[5, 0], [6, 1]])}
    seconds = []
    for seed in range(3):
        t = time.perf_counter()
        fastmv.cmvnmf(Xs, 2, ml, cl, init="random", max_iter=3, random_state=seed, n_jobs=1)
        seconds.append(time.perf_counter() - t)
    misses = 0
    for info in pkgutil.iter_modules(fastmv.kernels.__path__):
        module = sys.modules.get("fastmv.kernels." + info.name)
        for obj in vars(module).values() if module else ():
            if hasattr(obj, "py_func") and hasattr(obj, "stats"):
                misses += sum(obj.stats.cache_misses.values())
    print(json.dumps(dict(seconds=seconds, misses=misses)))
""")


@pytest.mark.slow
def test_second_process_loads_every_kernel_from_numba_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    root = Path(__file__).resolve().parents[1]

    def run():
        out = subprocess.run([sys.executable, "-c", _FIRST_CALLS], cwd=root, env=env,
                             capture_output=True, text=True, timeout=600, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = run()
    warm = [run(), run()]
    assert cold["misses"] > 0                     # the first process compiled (fresh cache)...
    assert all(w["misses"] == 0 for w in warm)    # ...the later ones compiled nothing
    excess = min(w["seconds"][0] - min(w["seconds"][1:]) for w in warm)
    # target: the first call ≤ 0.3 s above a later one on an idle machine; a loaded machine
    # (load average above the core count) stretches every step of loading by about as much
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    assert excess <= 0.3 * max(1.0, load), (warm, load)


# ------------------------------------------------------------------ aligned starts
def test_aligned_cluster_order_recovers_planted_permutations():
    from fastmv._cmvnmf._start import _aligned_cluster_order

    rng = np.random.default_rng(3)
    c, n = 5, 200
    y = rng.integers(0, c, n)
    truth = [np.arange(c), rng.permutation(c), rng.permutation(c)]   # k-means numbering
    labels = [truth[v][y] for v in range(3)]
    must = {}
    for a, b in ((0, 1), (1, 2)):                    # view 2 reaches view 0 through view 1
        i = rng.integers(0, n, 400)
        j = rng.integers(0, n, 400)
        same = y[i] == y[j]
        must[(a, b)] = (np.column_stack([i[same], j[same]]), np.zeros((0, 2), np.int64))
    perms = _aligned_cluster_order(labels, must, c)
    for v in range(3):
        # cluster k of view v sits in the column of the class it holds in view 0
        np.testing.assert_array_equal(perms[v][truth[v]], perms[0])
    # no pairs: every view keeps its numbering
    assert all((p == np.arange(c)).all() for p in _aligned_cluster_order(labels, {}, c))


def test_the_lowest_objective_start_is_kept(monkeypatch):
    import fastmv._cmvnmf._solver as C

    finals = []
    solve = C._solve

    def recording(*args, **kwargs):
        run = solve(*args, **kwargs)
        finals.append(C._final(*run))
        return run

    monkeypatch.setattr(C, "_solve", recording)
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 90)
    views = [np.abs(rng.normal(size=(90, 6))) + 2.0 * np.eye(3)[y] @ rng.random((3, 6))
             for _ in range(2)]
    uviews, uy, _ = simulate.unmapped(views, y, keep=0.9, random_state=0)
    must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=0)
    res = fastmv.cmvnmf(uviews, 3, must, cannot, n_init=4, init="random", max_iter=30,
                        beta=1.0, random_state=1)   # an explicit beta: no tuning solves
    assert len(finals) == 4 and len(set(finals)) > 1
    assert res.objective[-1] == pytest.approx(min(finals), rel=1e-12)


def test_handwritten_starts_that_used_to_end_poor():
    """Handwritten fou+pix+zer, 95 % kept, 5 % pairs: seeds 6 and 7 ended in the worse
    basin (ACC 0.959 and 0.903) before the views' k-means starts were aligned."""
    views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"), views=[1, 4, 5])
    for seed in (6, 7):
        uviews, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
        must, cannot = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
        res = fastmv.cmvnmf(uviews, 10, must, cannot, random_state=seed)
        acc = np.mean([metrics.accuracy(a, b) for a, b in zip(uy, res.labels)])
        assert acc >= 0.98, (seed, acc)


# ----------------------------------------------------------------------------- no pairs
def _dense_and_text_views(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), 40)
    dense = np.abs(np.eye(4)[y] @ rng.normal(size=(4, 10)) + 0.7 * rng.normal(size=(160, 10))
                   + 3.0)
    topics = rng.random((4, 30)) ** 6
    text = rng.poisson(topics[y] * 8.0).astype(float)
    return simulate.unmapped([dense, text], y, keep=0.95, random_state=seed)[:2]


def test_cosine_silhouette_matches_scikit_learn():
    from sklearn.metrics import silhouette_score

    from fastmv._cmvnmf._start import cosine_silhouette

    rng = np.random.default_rng(3)
    X = np.abs(rng.normal(size=(60, 7)))
    X[5] = 0.0                                   # an all-zero row
    lab = rng.integers(0, 3, 60)
    lab[0] = 4                                   # a singleton cluster; cluster 3 is empty
    want = silhouette_score(X, lab, metric="cosine")
    assert cosine_silhouette(X, lab, 5) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert cosine_silhouette(sp.csr_matrix(X), lab, 5) == pytest.approx(want, rel=1e-12)
    assert cosine_silhouette(X, np.zeros(60, np.int64), 3) == -1.0


def test_without_pairs_a_view_keeps_its_kmeans_start_when_it_separates_better(monkeypatch):
    from fastmv._cmvnmf import _solver
    from fastmv._cmvnmf._start import cosine_silhouette

    views, ys = _dense_and_text_views()
    kw = dict(n_init=1, random_state=0)
    res = fastmv.cmvnmf(views, 4, None, None, **kw)
    start = fastmv.cmvnmf(views, 4, None, None, max_iter=0, **kw)
    assert start.start_kept is None and start.view_start is None
    monkeypatch.setattr(_solver, "ViewChoice", lambda data: None)
    sweeps = fastmv.cmvnmf(views, 4, None, None, **kw)
    monkeypatch.undo()
    normed = _prepare(views, 4, None, None, 1.0, "auto").views
    assert res.start_kept == [True, False]       # the dense view, not the counts
    assert res.view_start == [0, 0] and [S.shape for S in res.silhouette] == [(1, 2), (1, 2)]
    for a, kept in enumerate(res.start_kept):
        s0 = cosine_silhouette(normed[a], start.labels[a], 4)
        s1 = cosine_silhouette(normed[a], sweeps.labels[a], 4)
        assert (s0 > s1) == kept
        np.testing.assert_array_equal(res.labels[a], (start if kept else sweeps).labels[a])
        np.testing.assert_allclose(res.V[a], (start if kept else sweeps).V[a])
    np.testing.assert_array_equal(res.objective, sweeps.objective)
    acc = [metrics.accuracy(y, lab) for y, lab in zip(ys, res.labels)]
    acc_sweeps = [metrics.accuracy(y, lab) for y, lab in zip(ys, sweeps.labels)]
    assert acc[0] > acc_sweeps[0] and acc[1] == acc_sweeps[1]
    # with pairs, or another start, the sweeps' factors are returned as they are
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=0)
    assert fastmv.cmvnmf(views, 4, ml, cl, beta=1.0, **kw).start_kept is None
    assert fastmv.cmvnmf(views, 4, None, None, init="random", **kw).start_kept is None
    # shifted to [0, 1] per feature ("minmax"), the dense view's origin is an artefact
    signed = [views[0] - 3.0, views[1]]
    res = fastmv.cmvnmf(signed, 4, None, None, **kw)
    assert res.normalize[0] == "minmax" and res.start_kept[0] is False


class _Run:
    """What ViewChoice reads of one start: its k-means factors and its sweeps' factors."""

    def __init__(self, start_V, sweep_V, d=3):
        self.dtype = np.float64
        self.start = ([np.ones((d, V.shape[1])) for V in start_V], [V.copy() for V in start_V])
        self.U = [np.full((d, V.shape[1]), float(k)) for k, V in enumerate(sweep_V)]
        self._V = [V.copy() for V in sweep_V]

    def V(self, a):
        return self._V[a]


def _one_hot(labels, c=2):
    return np.eye(c)[labels] + 0.2


def test_view_choice_takes_the_best_separated_candidate_of_any_start_or_none():
    from fastmv._cmvnmf._select import ViewChoice
    from fastmv._cmvnmf._start import cosine_silhouette

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = np.abs(np.eye(2)[y] * 2.0 + 0.3 * rng.random((60, 2)))
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    good, bad = y, rng.permutation(y)
    data = type("D", (), dict(views=[X, X], n_clusters=2, schemes=["l2", "l2"]))()
    choice = ViewChoice(data)
    # start 0 (the lowest objective): view 0's sweeps right, view 1 wrong everywhere;
    # start 1: view 1's k-means start right, its sweeps wrong
    runs = [_Run([_one_hot(bad), _one_hot(bad)], [_one_hot(good), _one_hot(bad)]),
            _Run([_one_hot(bad), _one_hot(good)], [_one_hot(bad), _one_hot(bad)])]
    for run in runs:
        choice.add(run)
    kept, view_start, sil = choice.apply(runs[0], 0)
    assert kept == [False, True] and view_start == [0, 1]
    np.testing.assert_array_equal(np.argmax(runs[0].V(0), axis=1), good)   # its own sweeps
    np.testing.assert_array_equal(np.argmax(runs[0].V(1), axis=1), good)   # start 1's k-means
    np.testing.assert_array_equal(runs[0].U[1], np.ones((3, 2)))
    assert sil[1][1, 0] == pytest.approx(cosine_silhouette(X, good, 2))
    assert sil[1][1, 0] > max(sil[1][0, 0], sil[1][0, 1], sil[1][1, 1])
    # a tie keeps the sweeps of the start kept; a "minmax" view is never judged
    data.schemes = ["l2", "minmax"]
    choice = ViewChoice(data)
    runs = [_Run([_one_hot(good), _one_hot(good)], [_one_hot(good), _one_hot(bad)]),
            _Run([_one_hot(good), _one_hot(good)], [_one_hot(good), _one_hot(good)])]
    for run in runs:
        choice.add(run)
    kept, view_start, sil = choice.apply(runs[0], 0)
    assert kept == [False, False] and view_start == [0, 0]
    np.testing.assert_array_equal(runs[0].U[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(np.argmax(runs[0].V(1), axis=1), bad)
    assert np.all(np.isnan(sil[1]))


def test_without_pairs_every_view_returns_its_best_separated_partition_over_the_starts(
        monkeypatch):
    from fastmv._cmvnmf import _select, _solver
    from fastmv._cmvnmf._start import cosine_silhouette

    seen = []

    class Recording(_select.ViewChoice):
        def add(self, problem):
            seen.append([(np.argmax(problem.start[1][a], axis=1), np.argmax(problem.V(a), axis=1))
                         for a in range(len(self.views))])
            super().add(problem)

    monkeypatch.setattr(_solver, "ViewChoice", Recording)
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), [60, 20, 10])
    dense = np.abs(np.eye(3)[y] @ rng.normal(size=(3, 8)) + 0.9 * rng.normal(size=(90, 8)) + 2)
    text = rng.poisson((rng.random((3, 40)) ** 4)[y] * 3.0).astype(float)
    views, _ = simulate.unmapped([dense, text], y, keep=0.95, random_state=1)[:2]
    res = fastmv.cmvnmf(views, 3, None, None, n_init=4, random_state=1)
    normed = _prepare(views, 3, None, None, 1.0, "auto").views
    assert len(seen) == 4 and [S.shape for S in res.silhouette] == [(4, 2), (4, 2)]
    for a, X in enumerate(normed):
        sil = np.array([[cosine_silhouette(X, lab, 3) for lab in run[a]] for run in seen])
        np.testing.assert_allclose(res.silhouette[a], sil, rtol=1e-12)
        i, j = res.view_start[a], int(res.start_kept[a] is False)
        np.testing.assert_array_equal(res.labels[a], seen[i][a][j])
        assert sil[i, j] == sil.max()
    # here the two views take their factors from different starts (so one of them not
    # from the start with the lowest objective), and the dense view a k-means start
    assert res.view_start[0] != res.view_start[1] and res.start_kept == [True, False]
