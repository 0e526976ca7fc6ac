"""fastmv.mvfl's contract, restarts, loud failures and scale safety; its stop once the labels
have settled; its start's k-means in the rows' span (docs/algorithms.md §2)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from tests.mvfl.helpers import (
    planted_blobs,
)

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


# ------------------------------------------------------------------------------------------
# contract, restarts, loud failures, scale safety


def test_result_contract_and_save_load(tmp_path):
    rng = np.random.default_rng(30)
    views, y = planted_blobs(rng, 10, 3, [4, 5], sep=5.0)
    r = fastmv.mvfl(views, 3, labels=simulate.partial_labels(y, 0.3, random_state=0),
                    random_state=0, max_iter=5)
    assert isinstance(r, fastmv._core._result.Result)
    assert r.objective.dtype == np.float64 and r.objective.shape == (r.n_iter,)
    assert isinstance(r.n_iter, int) and isinstance(r.converged, bool)
    assert r.lam3 == 100.0 and r.normalize == ["zscore", "zscore"]
    r.save(tmp_path / "r.npz")
    back = fastmv._core._result.Result.load(tmp_path / "r.npz")
    assert type(back) is type(r)
    np.testing.assert_array_equal(back.F, r.F)
    r0 = fastmv.mvfl(views, 3, random_state=0, max_iter=0)  # the start itself
    assert r0.n_iter == 0 and r0.objective.shape == (0,) and r0.labels.shape == (30,)


@pytest.mark.parametrize("how", ["true", "stopiteration"])
def test_callback_stops(how):
    rng = np.random.default_rng(31)
    views, _ = planted_blobs(rng, 10, 2, [3], sep=5.0)
    seen = []

    def cb(info):
        seen.append(info.iteration)
        assert info.solver == "mvfl" and set(info.state) == {"W", "b", "F", "Z"}
        if info.iteration == 2:
            if how == "true":
                return True
            raise StopIteration

    r = fastmv.mvfl(views, 2, random_state=0, tol=0, callback=cb, n_init=3)
    assert seen == [1, 2] and r.n_iter == 2 and not r.converged


def test_n_init_keeps_the_lowest_objective():
    rng = np.random.default_rng(32)
    views, _ = planted_blobs(rng, 15, 4, [5, 6], sep=1.5, noise=1.5)
    seen = []
    r = fastmv.mvfl(views, 4, init="random", n_init=3, random_state=1, max_iter=8, tol=0,
                    callback=lambda info: seen.append(info.objective))
    finals = [seen[7], seen[15], seen[23]]
    assert len(seen) == 24 and len(set(finals)) == 3  # three different starts
    assert r.objective[-1] == min(finals)


def test_one_cluster_warns():
    X = np.ones((12, 3))  # nothing to separate: every sample lands in one cluster
    X[:, 0] = np.arange(12) * 1e-12
    with pytest.warns(fastmv.exceptions.DegenerateSolutionWarning, match="one cluster"):
        fastmv.mvfl([X], 3, random_state=0, max_iter=3, normalize=None, init=np.tile(
            [1.0, 0.0, 0.0], (12, 1)))


@pytest.mark.parametrize("scale", [1e300, 1e160, 1e-300])
def test_scaled_views_give_the_same_labels(scale):
    rng = np.random.default_rng(33)
    views, y = planted_blobs(rng, 12, 3, [4, 6], sep=4.0)
    views.append(sp.csr_matrix(np.abs(rng.normal(size=(36, 30))) * (rng.random((36, 30)) < 0.2)))
    base = fastmv.mvfl(views, 3, random_state=0, max_iter=10)
    with np.errstate(all="raise"):
        scaled = [v * scale for v in views]
    r = fastmv.mvfl(scaled, 3, random_state=0, max_iter=10)
    assert np.isfinite(r.objective).all() and np.isfinite(r.F).all()
    np.testing.assert_array_equal(r.labels, base.labels)
    np.testing.assert_allclose(r.objective, base.objective, rtol=1e-6)
    if scale > 1:  # without normalisation the W step overflows: a clear error, no inf/NaN
        with pytest.raises(FloatingPointError, match="normalize"), np.errstate(all="ignore"):
            fastmv.mvfl(scaled[:2], 3, init=np.ones((36, 3)), max_iter=3, normalize=None)
        with pytest.raises((FloatingPointError, fastmv.exceptions.DegenerateSolutionError)), \
                np.errstate(all="ignore"):  # the k-means start refuses first
            fastmv.mvfl(scaled[:2], 3, random_state=0, max_iter=3, normalize=None)


_CACHE_SCRIPT = """
import numpy as np, scipy.sparse as sp
from fastmv.kernels import mvfl as K
F = np.ones((4, 2)); Z = np.ones((4, 2)); W = np.ones((3, 2)); vp = np.array([0, 1, 3])
g, r = K.weight_norms(W, vp, 1e-8)
K.irls_diagonal(g, r, vp, 1e-3, 1e-3)
X = sp.csr_matrix(np.eye(4, 3)); T = X.T.tocsr()
i64 = lambda a: a.astype(np.int64)
K.sparse_weighted_gram(i64(X.indptr), i64(X.indices), X.data, i64(T.indptr), i64(T.indices),
                       T.data, np.ones((2, 3)))
e = (np.zeros(5, np.int64), np.zeros(0, np.int64), np.zeros(0))
K.pair_gram(F, *e)
K.multiplicative_f_update(F, Z, np.eye(2), 0.0, *e, np.arange(4))
K.labelled_rows_update(F, Z, np.arange(2), np.zeros(2, np.int64), 1.0)
"""


@pytest.mark.slow
def test_kernels_are_served_from_numba_cache(tmp_path):
    """A second process loads every MVFL kernel from the cache and compiles nothing."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_DEBUG_CACHE="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    run = [sys.executable, "-c", _CACHE_SCRIPT]
    subprocess.run(run, env=env, check=True, capture_output=True, text=True, cwd=root)
    second = subprocess.run(run, env=env, check=True, capture_output=True, text=True,
                            cwd=root)
    log = second.stdout + second.stderr
    assert "data saved" not in log, log
    assert log.count("data loaded") >= 6, log


# ------------------------------------------------------------------------------------------
# stopping once the labels have settled


def test_labels_settled_bound():
    """Settled iff every row's projected remaining move (both entries, contraction ρ) stays
    below its margin; a zero row or ρ ≥ 1 never settles; c = 1 and n = 0 always do."""
    from fastmv._mvfl._settle import labels_settled

    F = np.array([[1.0, 0.2], [0.1, 0.6]])
    move = np.array([[0.01, 0.0], [0.0, -0.02]])  # margins 0.8 and 0.5
    # row 2 bounds 2 · 0.02 · ρ/(1 − ρ): ρ = 0.9 gives 0.36 < 0.5, ρ = 0.95 gives 0.76
    assert labels_settled(F - move, F, 0.9, 1.0)
    assert not labels_settled(F - move, F, 0.95, 1.0)
    assert not labels_settled(F - move, F, 0.9, 2.0)  # the safety factor scales the bound
    assert not labels_settled(F - move, F, 1.0, 1.0)
    dead = F.copy()
    dead[1] = 0.0
    assert not labels_settled(dead, dead, 0.0, 1.0)
    assert labels_settled(F[:, :1] - 0.1, F[:, :1], 0.99, 1.0)
    assert labels_settled(np.zeros((0, 3)), np.zeros((0, 3)), 0.5, 1.0)


def test_settle_residual_follows_the_objective_until_settled():
    from fastmv._core._driver import relative_change
    from fastmv._mvfl._settle import Settle

    s = Settle(rtol=1e-4, safety=1.0, history=2)
    F = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert s.residual(10.0, F, F + 0.1) == np.inf  # no previous objective
    assert s.residual(9.0, F, F + 0.05) == relative_change(10.0, 9.0)  # objective moving
    J = 9.0 - 1e-6
    r = s.residual(J, F, F + 0.025)  # ratios 0.5: remaining ≤ 0.025, margins ~1
    assert r == 0.0
    off = Settle(rtol=None)
    off.residual(10.0, F, F)
    assert off.residual(10.0 - 1e-9, F, F) == relative_change(10.0, 10.0 - 1e-9)


def test_settled_stop_keeps_the_labels_of_the_full_solve(monkeypatch):
    """Planted blobs, 10 % labels: the settled stop ends earlier with the labels of the solve
    run to tol, and converged is reported; tol = 0 runs to max_iter."""
    from fastmv._mvfl import _solver as S

    rng = np.random.default_rng(0)
    views, y = planted_blobs(rng, 30, 3, (40, 50), sep=0.6)
    lab = simulate.partial_labels(y, 0.1, random_state=0)
    fast = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    monkeypatch.setattr(S, "SETTLE_RTOL", None)
    full = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert fast.converged and full.converged and fast.n_iter < full.n_iter
    np.testing.assert_array_equal(fast.labels, full.labels)
    assert metrics.accuracy(y, fast.labels) == 1.0
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fastmv.mvfl(views, 3, labels=lab, random_state=0, tol=0.0, max_iter=25).n_iter == 25


def test_woodbury_route_runs_more_inner_steps(monkeypatch):
    """The Woodbury route's F step takes N_INNER_WOODBURY projected-gradient steps per
    factorisation, the direct route N_INNER (the count each F step is given)."""
    from fastmv._mvfl import _fstep
    from fastmv._mvfl import _solver as S

    rng = np.random.default_rng(0)
    calls = {}

    def counting(F, Z, term, alpha, n_inner):
        calls.setdefault("n_inner", []).append(n_inner)
        return monotone(F, Z, term, alpha, n_inner)

    monotone = _fstep.monotone_f_step
    monkeypatch.setattr(S, "monotone_f_step", counting)
    views = [rng.random((15, 4)), rng.random((15, 30))]
    for solver, want in (("direct", S.N_INNER), ("woodbury", S.N_INNER_WOODBURY)):
        calls.clear()
        fastmv.mvfl(views, 2, solver=solver, init="random", random_state=0, max_iter=2,
                    tol=0.0)
        assert calls["n_inner"] == [want, want]
    assert S.N_INNER_WOODBURY > S.N_INNER


def test_quiet_stop_needs_unchanged_labels_and_a_small_change():
    """A quiet rule ``(q, r)`` returns 0 once the argmax of every row stayed the same for
    ``q`` iterations and the objective's relative change is at most ``r``; a label change
    restarts the count; ``quiet=()`` (or ``rtol=None``) turns them off."""
    from fastmv._core._driver import relative_change
    from fastmv._mvfl._settle import Settle

    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    B = np.array([[0.0, 1.0], [0.0, 1.0]])  # row 0 flips
    s = Settle(rtol=1e-12, history=50, quiet=((2, 1e-3),))
    assert s.residual(10.0, A, A) == np.inf
    assert s.residual(9.9999, A, A + 0.1) == 0.0  # two unchanged iterations, change 1e-5
    s = Settle(rtol=1e-12, history=50, quiet=((2, 1e-3),))
    s.residual(10.0, A, A)
    assert s.residual(9.9999, A, B) == relative_change(10.0, 9.9999)  # a label moved
    assert s.residual(9.9998, B, B) == relative_change(9.9999, 9.9998)  # one quiet only
    assert s.residual(9.9997, B, B) == 0.0
    assert s.residual(9.0, B, B) == relative_change(9.9997, 9.0)  # change above r
    # (0, r): the change alone; (1, r') with r' > r: a larger change once the labels rest
    s = Settle(rtol=1e-12, history=50, quiet=((1, 1e-2), (0, 1e-4)))
    s.residual(10.0, A, A)
    assert s.residual(9.99, A, B) > 0.0  # 1e-3: above 1e-4, and a label moved
    assert s.residual(9.98999, B, A) == 0.0  # 1e-6 with a label moving: (0, 1e-4) holds
    s = Settle(rtol=1e-12, history=50, quiet=((1, 1e-2), (0, 1e-4)))
    s.residual(10.0, A, A)
    assert s.residual(9.95, A, A) == 0.0  # 5e-3, labels unchanged: (1, 1e-2) holds
    for off in (Settle(rtol=1e-12, history=50, quiet=()), Settle(rtol=None)):
        off.residual(10.0, A, A)
        off.residual(10.0 - 1e-6, A, A)
        assert off.residual(10.0 - 2e-6, A, A) > 0.0
    empty = Settle(rtol=1e-12, history=50, quiet=((1, 1e-3),))
    F0 = np.zeros((3, 0))
    empty.residual(1.0, F0, F0)
    assert empty.residual(1.0, F0, F0) == 0.0


# ------------------------------------------------------------------------------------------
# the start's k-means in the rows' span


@pytest.mark.parametrize("sparse", [False, True])
def test_row_space_coordinates_keep_every_inner_product(sparse):
    """``Y Yᵀ = X Xᵀ`` with at most ``n`` columns: full-rank rows (Cholesky), duplicated and
    zero rows (the eigendecomposition), one row; dense and CSR."""
    from fastmv._mvfl._start import row_space_coordinates

    rng = np.random.default_rng(0)
    full = rng.normal(size=(7, 20))
    dup = np.vstack([full[:4], full[:2], np.zeros((1, 20))])
    for X in (full, dup, full[:1], np.zeros((3, 5))):
        A = sp.csr_matrix(X) if sparse else X
        Y = row_space_coordinates(A)
        assert Y.shape[0] == X.shape[0] and 1 <= Y.shape[1] <= X.shape[0]  # zero rows too
        G = X @ X.T
        np.testing.assert_allclose(Y @ Y.T, G, atol=1e-12 * max(1.0, np.abs(G).max()))
        d = ((X[:, None] - X[None]) ** 2).sum(-1)
        dy = ((Y[:, None] - Y[None]) ** 2).sum(-1)
        np.testing.assert_allclose(dy, d, atol=1e-10 * max(1.0, d.max()))


def test_start_kmeans_in_the_span_matches_kmeans_on_the_features(monkeypatch):
    """More features than samples: the start's k-means runs on the span coordinates and
    finds the partition k-means finds on the features themselves (planted clusters); the
    input is not modified."""
    from fastmv._blocks._kmeans import kmeans
    from fastmv._mvfl import _start

    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), 10)
    X = rng.normal(size=(40, 120)) + 3.0 * rng.normal(size=(4, 120))[y]
    X0 = X.copy()
    data = SimpleNamespace(c=4)
    seen = {}

    def spy(Z, *a, **k):
        seen["shape"] = Z.shape
        return kmeans(Z, *a, **k)

    monkeypatch.setattr("fastmv._blocks._kmeans.kmeans", spy)
    got = _start.kmeans_labels(X, data, np.random.default_rng(0), None)
    assert seen["shape"] == (40, 40)
    want = kmeans(X, 4, n_init=_start._KMEANS_N_INIT, random_state=np.random.default_rng(0))
    assert metrics.accuracy(want.labels, got) == 1.0 and metrics.accuracy(y, got) == 1.0
    np.testing.assert_array_equal(X, X0)
    _start.kmeans_labels(X[:, :45], data, np.random.default_rng(0), None)
    assert seen["shape"] == (40, 45)  # d <= 1.25 n: the features themselves
