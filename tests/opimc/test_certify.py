"""Tests of the certified sweeps (fastmv._opimc._certify): the chunk loop's bounds bound the
distances, a chunk the bounds certify has no single-row move that lowers the loss, bounds
carried across centre moves stay bounds, a row the bounds prove has no move that lowers the
loss, a chunk of some rows is the chunk of those rows, and OPIMC with the certificate gives the
labels of OPIMC without it while skipping sweeps and building only the rows not proven."""
from __future__ import annotations

import numpy as np
import pytest

import fastmv
import fastmv._opimc._problem as problem
from fastmv._opimc._certify import (
    RowBounds,
    center_shift,
    optimal_centers,
    proven,
    settled,
    to_optimal,
)
from fastmv.kernels import opimc as K
from fastmv.kernels import opimc_refine as K_refine
from tests.opimc import naive as N
from tests.opimc.helpers import SHAPES, make_chunk, planted

pytestmark = pytest.mark.filterwarnings("ignore:opimc stopped at max_iter")


def stacked(ch, b):
    """The chunk as an (s, D) matrix, zeros where a row misses a view."""
    Z = N._csr_dense(ch.sparse, ch.s, b.D)
    for v, X in enumerate(N._dense_views(ch.dense, b.view_ptr)):
        r0, r1 = ch.dense.row_start[v], ch.dense.row_start[v + 1]
        Z[ch.dense.rows[r0:r1], b.view_ptr[v]:b.view_ptr[v + 1]] = X
    return Z


def distances(Z, W, U, view_ptr):
    """(s, c): ``sqrt(Σ_v W[i, v] ‖z_{v,i} − u_{v,k}‖²)``."""
    out = np.zeros((Z.shape[0], U.shape[1]))
    for v in range(W.shape[1]):
        sl = slice(view_ptr[v], view_ptr[v + 1])
        d = ((Z[:, sl, None] - U[None, sl, :]) ** 2).sum(axis=1)
        out += W[:, v:v + 1] * d
    return np.sqrt(out)


def own_and_other(dist, labels):
    own = dist[np.arange(labels.size), labels]
    other = dist.copy()
    other[np.arange(labels.size), labels] = np.inf
    return own, other.min(axis=1)


def chunk_after_lloyd(rng, s, dd, sd, c, alpha, separated):
    """A chunk clustered by the chunk loop from k-means++-like centres; planted clusters when
    ``separated``."""
    b, ch = make_chunk(rng, s, dd, sd, np.float64, p_missing=0.2)
    if separated:
        Z = stacked(ch, b)
        y = rng.integers(0, c, s)
        centers = rng.normal(size=(c, b.D)) * 4
        noisy = ch.W.repeat(np.diff(b.view_ptr), axis=1) * (centers[y] + 0.05 * Z)
        views, mask = [noisy[:, b.view_ptr[v]:b.view_ptr[v + 1]]
                       for v in range(b.spec.m)], ch.W > 0
        from fastmv._opimc._chunks import ChunkBuilder
        from fastmv._opimc._sources import ArraySource
        src = ArraySource(views, mask, s)
        b = ChunkBuilder(src.spec, False, s)
        ch = b.build(*next(src.chunks()))
        U0 = centers.T.copy()
    else:
        U0 = rng.normal(size=(b.D, c))
    stats = K.Statistics(np.zeros((c, b.D)), np.zeros((b.spec.m, c)), U0)
    lab = np.empty(s, np.int64)
    ub, lb = np.empty(s), np.empty(s)
    K._stream_chunk_iterate(ch.dense, ch.sparse, ch.W, b.view_ptr, stats, lab,
                            K.START_FROM_CENTERS, np.zeros(0), alpha, 30, 0.0,
                            K.DistanceBounds(ub, lb))
    return b, ch, stats, lab, ub, lb


@pytest.mark.parametrize("alpha", [0.0, 0.1])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_chunk_loop_bounds_bound_the_distances(shape, alpha):
    """On exit the bounds hold for the centres ``U`` the loop ended with, and moved by
    ``center_shift`` for the optimal centres of the statistics."""
    rng = np.random.default_rng(3)
    s, dd, sd, c = shape
    b, ch, stats, lab, ub, lb = chunk_after_lloyd(rng, s, dd, sd, c, alpha, separated=False)
    Z = stacked(ch, b)
    own, other = own_and_other(distances(Z, ch.W, stats.centers, b.view_ptr), lab)
    assert np.all(ub >= own - 1e-12) and np.all(lb <= other + 1e-12)
    U_bar = optimal_centers(stats, alpha, b.view_ptr)
    up, lo = to_optimal(ub, lb, lab, center_shift(stats.centers, U_bar))
    own, other = own_and_other(distances(Z, ch.W, U_bar, b.view_ptr), lab)
    assert np.all(up >= own - 1e-12) and np.all(lo <= other + 1e-12)


def test_optimal_centers_are_sums_over_counts():
    rng = np.random.default_rng(4)
    view_ptr = np.array([0, 3, 5])
    R, T = rng.normal(size=(4, 5)), rng.integers(0, 3, size=(2, 4)).astype(float)
    stats = K.Statistics(R, T, np.zeros((5, 4)))
    U = optimal_centers(stats, 0.0, view_ptr)
    for v in range(2):
        for k in range(4):
            sl = slice(view_ptr[v], view_ptr[v + 1])
            want = R[k, sl] / T[v, k] if T[v, k] > 0 else np.zeros(sl.stop - sl.start)
            np.testing.assert_allclose(U[sl, k], want)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_a_settled_chunk_has_no_move_and_planted_chunks_settle(seed, alpha):
    """Whenever the certificate holds, a sweep of single-row moves moves nothing; on planted,
    well separated clusters it holds (so the skip happens), on noise it may not."""
    rng = np.random.default_rng(seed)
    n_settled = 0
    for separated in (True, False):
        b, ch, stats, lab, ub, lb = chunk_after_lloyd(rng, 300, [12, 8], [6], 4, alpha,
                                                      separated)
        U_bar = optimal_centers(stats, alpha, b.view_ptr)
        up, lo = to_optimal(ub, lb, lab, center_shift(stats.centers, U_bar))
        proven = settled(up, lo, lab, stats.counts, alpha)
        n_settled += proven
        if separated:
            assert proven
        before = lab.copy()
        moves, _ = K_refine.stream_chunk_refine(ch.dense, ch.sparse, ch.W, b.view_ptr, stats,
                                                lab, np.zeros(0), alpha, 3)
        if proven:
            assert moves == 0
            np.testing.assert_array_equal(lab, before)
    assert n_settled >= 1


def move_gains(ch, stats, alpha, view_ptr, labels):
    """(s, c): the change of the loss when row ``i`` alone moves to cluster ``k`` (0 for its
    own), by moving it and recomputing the loss at the optimal centres (the refinement's
    naive twin, ``tests/opimc/naive.py``)."""
    Xs = N._full_views(ch.dense, ch.sparse, ch.W, view_ptr)
    R, T = stats.sums, stats.counts
    before = N._optimal_loss_terms(R, T, view_ptr, alpha).sum()
    out = np.zeros((ch.s, T.shape[1]))
    for i in range(ch.s):
        for k in range(T.shape[1]):
            if k != labels[i]:
                R2, T2 = R.copy(), T.copy()
                N._move_row(R2, T2, Xs, ch.W, view_ptr, i, labels[i], k)
                out[i, k] = N._optimal_loss_terms(R2, T2, view_ptr, alpha).sum() - before
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_proven_row_has_no_move_that_lowers_the_loss(seed):
    """Row by row: every row ``proven`` certifies gains nothing by any move alone, on chunks
    where some rows are proven and some not (so the test says something either way)."""
    rng = np.random.default_rng(seed)
    b, ch, stats, lab, ub, lb = chunk_after_lloyd(rng, 200, [6, 4], [3], 3, 0.1, False)
    U_bar = optimal_centers(stats, 0.1, b.view_ptr)
    up, lo = to_optimal(ub, lb, lab, center_shift(stats.centers, U_bar))
    rows = proven(up, lo, lab, stats.counts, 0.1)
    assert 0 < rows.sum() < rows.size
    gains = move_gains(ch, stats, 0.1, b.view_ptr, lab)
    assert gains[rows].min() >= -1e-9
    assert settled(up, lo, lab, stats.counts, 0.1) == bool(rows.all())


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_chunk_of_some_rows_is_the_chunk_of_those_rows(shuffled):
    """The chunk ``_next_chunk`` builds of the rows ``skip`` names holds them as the chunk of
    all rows does (values, presence), in the same order; none named: no chunk."""
    from fastmv._opimc._chunks import ChunkBuilder, _next_chunk
    from fastmv._opimc._sources import ArraySource
    rng = np.random.default_rng(5)
    n, s = 40, 25
    views = [rng.normal(size=(n, 4)), rng.normal(size=(n, 3))]
    mask = rng.random((n, 2)) > 0.3
    mask[:, 0] |= ~mask[:, 1]
    src = ArraySource(views, mask, s, order=rng.permutation(n) if shuffled else None)
    b = ChunkBuilder(src.spec, True, s)
    keep = np.array([1, 2, 7, 19, 24])
    first = b.build(*next(src.chunks()))
    full = stacked(first, b), first.W.copy()
    b = ChunkBuilder(src.spec, True, s)
    start, ch, error = _next_chunk(iter(src.chunks()), b, lambda start: keep)
    assert error is None and start == 0 and ch.s == keep.size
    np.testing.assert_array_equal(ch.rows, keep)
    np.testing.assert_allclose(stacked(ch, b), full[0][keep])
    np.testing.assert_array_equal(ch.W, full[1][keep])
    assert _next_chunk(iter(src.chunks()), b, lambda start: keep[:0])[1:] == (None, None)


def test_settled_refuses_what_it_cannot_prove():
    labels = np.array([0, 1])
    ok = (np.array([1.0, 1.0]), np.array([3.0, 3.0]))
    T = np.full((2, 2), 50.0)
    assert settled(*ok, labels, T, 0.0)
    T1 = T.copy()
    T1[1, 0] = 1.0                         # leaving cluster 0 could empty it in view 1
    assert not settled(*ok, labels, T1, 0.0)
    assert settled(*ok, labels, T1, 0.5)   # t = T + α > 1
    T0 = T.copy()
    T0[0, 1] = 0.0                         # an empty cluster without ridge: no proof
    assert not settled(*ok, labels, T0, 0.0)
    assert not settled(np.array([1.0, np.inf]), ok[1], labels, T, 0.0)
    assert not settled(np.array([1.0, 1.0]), np.array([3.0, 1.0]), labels, T, 0.0)
    assert settled(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), T, 0.0)


@pytest.mark.parametrize("snapshots", [False, True])
def test_carried_bounds_stay_bounds(snapshots):
    """Bounds set for one set of centres, carried through several moves of the centres
    (``advance``), bound the distances to the last centres; float32 storage rounds outwards."""
    rng = np.random.default_rng(8)
    s, D, c = 50, 6, 3
    view_ptr = np.array([0, D])
    Z, W = rng.normal(size=(s, D)), np.ones((s, 1))
    U = rng.normal(size=(D, c))
    lab = rng.integers(0, c, s)
    rb = RowBounds(2 * s, c, snapshots)
    rb.advance(U)
    own, other = own_and_other(distances(Z, W, U, view_ptr), lab)
    rb.set(s, own, other)
    assert rb.current(0, s, lab) is None             # never set
    for _ in range(4):
        U = U + 0.1 * rng.normal(size=(D, c))
        rb.advance(U)
    up, lo = rb.current(s, s, lab)
    own, other = own_and_other(distances(Z, W, U, view_ptr), lab)
    assert np.all(up >= own) and np.all(lo <= other)
    rb.forget(np.arange(s, 2 * s))
    assert np.isinf(rb.current(s, s, lab)[0]).all()


def _runs(views, mask, chunk_size, **kw):
    """opimc with and without the certificate (``CERTIFY_MIN_ROWS``), counting the sweeps
    and chunk builds."""
    from fastmv._opimc._chunks import ChunkBuilder
    out = []
    for certify in (False, True):
        counts = {"sweeps": 0, "builds": 0, "partial": 0}
        refine, build = problem._stream_chunk_refine, ChunkBuilder.build

        def counted_refine(*a, _f=refine):
            counts["sweeps"] += 1
            return _f(*a)

        def counted_build(self, *a, _f=build):
            counts["builds"] += 1
            out = _f(self, *a)
            counts["partial"] += out.s < chunk_size
            return out

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(problem, "CERTIFY_MIN_ROWS", chunk_size if certify else 10 ** 9)
            mp.setattr(problem, "_stream_chunk_refine", counted_refine)
            mp.setattr(ChunkBuilder, "build", counted_build)
            mp.setattr(problem, "KEEP_MAX_VALUES", 0)       # later passes read again
            r = fastmv.opimc(views, 5, mask=mask, chunk_size=chunk_size, random_state=0, **kw)
        out.append((r, counts))
    return out


@pytest.mark.parametrize("kind", ["arrays", "memmaps", "read_ahead"])
def test_certified_sweeps_give_the_labels_of_running_them(kind, tmp_path):
    """Same labels and losses with the certificate as without (on these planted clusters),
    with fewer sweeps; a later pass builds only the rows it cannot prove (with read-ahead
    too: its later passes read in the clustering thread), and no chunk it proves whole."""
    views, y = planted(3000, [30, 20, 10], 5, seed=21, noise=0.8)
    mask = fastmv.simulate.incomplete_mask(3000, 3, 0.3, random_state=1)
    if kind == "memmaps":
        mms = []
        for v, X in enumerate(views):
            np.save(tmp_path / f"v{v}.npy", X)
            mms.append(np.load(tmp_path / f"v{v}.npy", mmap_mode="r"))
        views = mms
    kw = dict(max_iter=4, tol=0.0)
    if kind == "read_ahead":
        kw["n_jobs"] = 2
    with pytest.MonkeyPatch.context() as mp:
        if kind == "read_ahead":
            import fastmv._opimc._solver as solver
            mp.setattr(solver, "READ_AHEAD_MIN_VALUES", 0)
        (plain, n_plain), (cert, n_cert) = _runs(views, mask, 300, **kw)
    np.testing.assert_array_equal(cert.labels, plain.labels)
    np.testing.assert_allclose(cert.objective, plain.objective, rtol=1e-12)
    assert cert.n_iter == plain.n_iter and fastmv.metrics.ari(y, cert.labels) > 0.95
    assert n_cert["sweeps"] < n_plain["sweeps"]
    assert n_cert["builds"] < n_plain["builds"]
    assert n_cert["partial"] > n_plain["partial"]     # chunks of their unproven rows
