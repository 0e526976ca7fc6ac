"""fastmv.cmvnmf's contract: inputs unchanged, determinism, threads, sparse and float32,
callbacks and logging, the result, restarts, scale safety, warnings and validation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from tests.cmvnmf.helpers import planted_unmapped, random_problem

# short runs (small max_iter) are the point of most tests here
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def test_inputs_not_modified_and_deterministic():
    rng = np.random.default_rng(8)
    X, ml, cl, U0, V0 = random_problem(rng, sparse=False)
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
    (Xs, ys, _), rng = planted_unmapped(3, noise=2.0)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=rng)
    r1 = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=1, n_jobs=1, max_iter=30, n_init=1)
    r2 = fastmv.cmvnmf(Xs, 4, ml, cl, random_state=1, n_jobs=2, max_iter=30, n_init=1)
    for a in range(3):
        np.testing.assert_allclose(r1.V[a], r2.V[a], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(r1.labels[a], r2.labels[a])


def test_sparse_and_dense_views_agree_and_float32():
    (Xs, ys, _), rng = planted_unmapped(4, noise=1.0)
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
    (Xs, ys, _), _ = planted_unmapped(5)
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
    # the call's start record, the starts chosen, then one line per start
    assert "clusters" in lines[0] and lines[1] == "cmvnmf: 3 starts (k-means++ × 3)"
    lines = lines[2:]
    assert len(lines) == 3 and lines[2].startswith("cmvnmf: start 3/3  sweeps    2")
    assert "CMVNMFResult" in repr(res)


@pytest.mark.parametrize("how", ["return_true", "stop_iteration"])
def test_callback_stop_ends_every_start(how):
    (Xs, ys, _), _ = planted_unmapped(5, n=60)
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
    (Xs, ys, _), rng = planted_unmapped(6, n=80)
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
    (Xs, ys, _), rng = planted_unmapped(7, n=80, noise=3.0)
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
    (Xs, ys, _), rng = planted_unmapped(8, n=80, noise=1.0)
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

