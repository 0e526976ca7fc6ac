"""Tests of OPIMC's streaming kernels (kernels/opimc*.py) against their NumPy twins
(tests/opimc/naive.py), on random chunks and awkward shapes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv._opimc._chunks import ChunkBuilder
from fastmv._opimc._sources import ArraySource
from fastmv.kernels import opimc as K
from fastmv.kernels import opimc_refine as K_refine
from tests.opimc import naive as N
from tests.opimc.helpers import SHAPES, close, dense_views_of, make_chunk, planted

pytestmark = pytest.mark.filterwarnings("ignore:opimc stopped at max_iter")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("normalize", [True, False])
def test_gather_view_matches_twin(dtype, normalize):
    rng = np.random.default_rng(0)
    big = 1e200 if dtype == np.float64 else 1e30
    tiny = 1e-300 if dtype == np.float64 else 1e-40
    for d in (1, 7, 50):
        X = rng.normal(size=(30, d)).astype(dtype)
        X[3] = 0.0
        X[4] = np.nan                        # all-NaN row -> status 1
        if d > 2:
            X[5, 2] = np.nan                 # partial NaN -> status 2
            X[6, 1] = np.inf                 # inf -> status 2
        X[7] *= big                          # squares overflow, still finite
        X[8] *= tiny                         # squares underflow, still non-zero
        rows = np.array([3, 4, 5, 6, 7, 8, 9, 29], np.int64)
        got = np.full(rows.size * d, -7.0, dtype)
        want = np.full(rows.size * d, -7.0, dtype)
        st, st_want = np.empty(rows.size, np.int8), np.empty(rows.size, np.int8)
        K.stream_gather_view(X, rows, normalize, got, st)
        N.stream_gather_view(X, rows, normalize, want, st_want)
        np.testing.assert_array_equal(st, st_want)
        ok = np.repeat(st == 0, d)
        close(got[ok], want[ok], dtype)
        if normalize:   # the overflowing and underflowing rows are scaled to unit norm
            for r in (4, 5):
                block = got[r * d:(r + 1) * d].astype(np.float64)
                assert st[r] == 0 and abs(np.linalg.norm(block) - 1) < 1e-5


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("n,d", [(0, 3), (1, 1), (12, 5), (40, 64)])
def test_finish_rows_matches_twin(dtype, normalize, n, d):
    rng = np.random.default_rng(n + d)
    X = (rng.normal(size=(n, d)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))).astype(dtype)
    if n > 3:
        X[0] = 0.0
        X[1] = np.nan                        # all NaN -> status 1
        X[2, 0] = np.inf                     # -> status 2 (d = 1: an infinity alone)
    got, want = X.ravel().copy(), X.ravel().copy()
    st, st_want = np.full(n, 9, np.int8), np.full(n, 9, np.int8)
    K.stream_finish_rows(got, d, normalize, st)
    N.stream_finish_rows(want, d, normalize, st_want)
    np.testing.assert_array_equal(st, st_want)
    ok = np.repeat(st == 0, d)
    close(got[ok], want[ok], dtype)
    # the gather is the copy, then this kernel: the same bits
    out, st2 = np.empty(n * d, dtype), np.empty(n, np.int8)
    K.stream_gather_view(X, np.arange(n, dtype=np.int64), normalize, out, st2)
    np.testing.assert_array_equal(st2, st)
    np.testing.assert_array_equal(out[ok], got[ok])


@pytest.mark.parametrize("s,m,nd", [(1, 1, 1), (9, 3, 2), (40, 4, 0), (100, 5, 5)])
def test_layout_matches_twin(s, m, nd):
    rng = np.random.default_rng(s + m)
    P = rng.random((s, m)) < 0.6
    P[0] = False
    dims = rng.integers(1, 9, nd).astype(np.int64)
    got, want = K.stream_layout(P, dims), N.stream_layout(P, dims)
    for a, b in zip(got[:5], want[:5]):
        np.testing.assert_array_equal(a, b)
    assert got[5] == want[5] == 0


def test_layout_accepts_any_memory_order_and_refuses_bad_shapes():
    """The layout is NumPy, not a kernel: it must still hand the kernels C-contiguous int64
    and float64 arrays (one compiled signature) whatever the mask's order or integer dtype."""
    rng = np.random.default_rng(3)
    P = rng.random((30, 4)) < 0.7
    dims = np.array([3, 5], dtype=np.int32)
    want = N.stream_layout(P, dims)
    for mask in (np.asfortranarray(P), P[:, [0, 1, 2, 3]], P.astype(np.int8)):
        got = K.stream_layout(mask, dims)
        for a, b in zip(got[:5], want[:5]):
            np.testing.assert_array_equal(a, b)
            assert a.flags.c_contiguous
        assert [a.dtype for a in got[:5]] == [np.int64] * 4 + [np.float64]
        assert got[5] == want[5]
    with pytest.raises(ValueError, match="stream_layout"):
        K.stream_layout(P[:, 0], dims)
    with pytest.raises(ValueError, match="stream_layout"):
        K.stream_layout(P, dims.astype(np.float64))
    with pytest.raises(ValueError, match="stream_layout"):
        K.stream_layout(P, np.array([3, -1]))


def test_gather_view_large():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9000, 120))
    rows = np.arange(0, 9000, 1, dtype=np.int64)
    a, b = np.empty(X.size), np.empty(X.size)
    sa, sb = np.empty(9000, np.int8), np.empty(9000, np.int8)
    K.stream_gather_view(X, rows, True, a, sa)
    N.stream_gather_view(X, rows, True, b, sb)
    np.testing.assert_array_equal(sa, sb)
    close(a, b)


def nearest(s):
    return K.Nearest(np.full(s, -1, np.int64), np.full(s, 7.0), np.full(s, 7.0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("s,dd,sd,c", SHAPES)
def test_assign_kernels_match_twins(dtype, s, dd, sd, c):
    rng = np.random.default_rng(s + c)
    b, ch = make_chunk(rng, s, dd, sd, dtype)
    assert (ch.dense is None) == (not dd) and (ch.sparse is None) == (not sd)
    U = rng.normal(size=(b.D, c))
    usq = K.stream_center_sqnorms(U, b.view_ptr)
    close(usq, N.stream_center_sqnorms(U, b.view_ptr))
    G = np.empty((0, c))
    if ch.dense is not None:
        G = K.stream_cross(ch.dense, b.view_ptr, U)
        close(G, N.stream_cross(ch.dense, b.view_ptr, U), dtype)
    lab4 = np.empty(s, np.int64)
    md4, sd4 = N.stream_chunk_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, lab4)
    for rows in (np.arange(s), np.arange(0, s, 2)):
        for cross in (G, np.empty((0, c))):          # from the GEMM, or inline
            out = nearest(s)
            K.stream_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, usq, cross, rows, out)
            np.testing.assert_array_equal(out.labels[rows], lab4[rows])
            close(out.best[rows], md4[rows], dtype)
            close(out.second[rows], sd4[rows], dtype)
            rest = np.setdiff1d(np.arange(s), rows)
            assert np.all(out.labels[rest] == -1) and np.all(out.best[rest] == 7.0)
    lab3 = np.empty(s, np.int64)
    md3, sd3 = K.stream_chunk_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, lab3)
    np.testing.assert_array_equal(lab3, lab4)
    close(md3, md4, dtype)
    close(sd3, sd4, dtype)
    close(K.stream_row_sqnorms(ch.dense, ch.sparse, b.view_ptr, s),
          N.stream_row_sqnorms(ch.dense, ch.sparse, b.view_ptr, s), dtype)
    U2 = U + rng.normal(size=U.shape) * 0.1
    close(K.stream_center_shift(U, U2), N.stream_center_shift(U, U2))


@pytest.mark.parametrize("work", [np.float64, np.float32])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_products_on_row_ranges(dtype, work):
    """The GEMM kernel of the chunk loop (every stored row, in the values' dtype) and of the
    refinement (a block of rows, float64): rows ``lo[v]:hi[v]`` of view ``v`` land at
    ``at[v]``, in the dtype of ``B``; nothing else is written."""
    rng = np.random.default_rng(3)
    b, ch = make_chunk(rng, 40, [12, 1, 7], [], dtype)
    blocks, rs, vp, c = dense_views_of(ch, b), ch.dense.row_start, b.view_ptr, 3
    lo = rs[:-1] + np.array([2, 0, 0])
    hi = np.array([rs[1] - 1, rs[1], rs[3]])          # view 1: no rows
    at = np.array([0, 40, 42])                        # s = 40: no overlap
    B = rng.normal(size=(b.D, c)).astype(work)
    G = np.full((90, c), np.nan)
    K._dense_products(ch.dense, vp, B, lo, hi, at, G)
    for v in range(3):
        X = blocks[v][lo[v] - rs[v]:hi[v] - rs[v]].astype(work)
        want = X @ B[vp[v]:vp[v + 1]]
        close(G[at[v]:at[v] + len(want)], want, work)
    written = np.zeros(90, bool)
    for v in range(3):
        written[at[v]:at[v] + hi[v] - lo[v]] = True
    assert np.isnan(G[~written]).all() and not np.isnan(G[written]).any()


def test_assign_large_and_ties():
    rng = np.random.default_rng(3)
    b, ch = make_chunk(rng, 12000, [80, 40], [60], np.float64)
    U = rng.normal(size=(b.D, 9))
    U[:, 5] = U[:, 2]                           # exact tie: lowest index wins
    lab, lab2 = np.empty(12000, np.int64), np.empty(12000, np.int64)
    md, sd = K.stream_chunk_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, lab)
    md2, sd2 = N.stream_chunk_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, lab2)
    np.testing.assert_array_equal(lab, lab2)
    assert not np.any(lab == 5)
    close(md, md2)
    close(sd, sd2)
    out = nearest(12000)
    usq = K.stream_center_sqnorms(U, b.view_ptr)
    K.stream_assign(ch.dense, ch.sparse, ch.W, b.view_ptr, U, usq, np.empty((0, 9)),
                    np.arange(12000), out)
    np.testing.assert_array_equal(out.labels, lab2)
    close(out.best, md2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("s,dd,sd,c", SHAPES + [(7000, [150, 70], [600], 4)])
def test_scatter_and_move_kernels_match_twins(dtype, s, dd, sd, c):
    rng = np.random.default_rng(10 * s + c)
    b, ch = make_chunk(rng, s, dd, sd, dtype)
    dn, sps, vp = ch.dense, ch.sparse, b.view_ptr
    old = rng.integers(0, c, s)
    new = np.where(rng.random(s) < 0.3, rng.integers(0, c, s), old)
    R0 = rng.normal(size=(c, b.D))
    T0 = rng.integers(0, 5, size=(b.spec.m, c)).astype(np.float64)

    def both(kernel, *args, R=R0):
        Ra, Rb = R.copy(), R.copy()
        getattr(K, kernel)(*args, Ra)
        getattr(N, kernel)(*args, Rb)
        close(Ra, Rb, dtype)

    for sign in (1.0, -1.0):
        if dn is not None:
            Ra, Rb = R0.copy(), R0.copy()
            K.stream_scatter_dense(dn, vp, old, Ra, sign)
            N.stream_scatter_dense(dn, vp, old, Rb, sign)
            close(Ra, Rb, dtype)
        if sps is not None:
            Ra, Rb = R0.copy(), R0.copy()
            K.stream_scatter_csr(sps, old, Ra, sign)
            N.stream_scatter_csr(sps, old, Rb, sign)
            close(Ra, Rb, dtype)
        Ta, Tb = T0.copy(), T0.copy()
        K.stream_scatter_counts(old, ch.W, Ta, sign)
        N.stream_scatter_counts(old, ch.W, Tb, sign)
        np.testing.assert_array_equal(Ta, Tb)
    if dn is not None:
        both("stream_move_dense", dn, vp, old, new)
    if sps is not None:
        both("stream_move_csr", sps, old, new)
    Ta, Tb = T0.copy(), T0.copy()
    assert K.stream_move_counts(old, new, ch.W, Ta) == N.stream_move_counts(old, new, ch.W, Tb)
    np.testing.assert_array_equal(Ta, Tb)
    # removal of a chunk's contribution: add then move then remove leaves R unchanged
    R = R0.copy()
    if dn is not None:
        K.stream_scatter_dense(dn, vp, old, R, 1.0)
        K.stream_move_dense(dn, vp, old, new, R)
        K.stream_scatter_dense(dn, vp, new, R, -1.0)
    if sps is not None:
        K.stream_scatter_csr(sps, old, R, 1.0)
        K.stream_move_csr(sps, old, new, R)
        K.stream_scatter_csr(sps, new, R, -1.0)
    close(R, R0, dtype)


@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("with_fill", [True, False])
def test_update_centers_and_loss_match_twins(alpha, with_fill):
    rng = np.random.default_rng(5)
    view_ptr = np.array([0, 3, 10, 11], np.int64)
    c = 6
    R = rng.normal(size=(c, 11))
    T = rng.integers(0, 4, size=(3, c)).astype(np.float64)
    T[:, 2] = 0.0
    T[1, 4] = 0.0
    R[:, ] *= (T[np.searchsorted(view_ptr, np.arange(11), side="right") - 1].T > 0)
    fill = rng.normal(size=11) if with_fill else np.zeros(0)
    U0 = rng.normal(size=(11, c))
    Ua, Ub = U0.copy(), U0.copy()
    K.stream_update_centers(R, T, view_ptr, alpha, fill, Ua)
    N.stream_update_centers(R, T, view_ptr, alpha, fill, Ub)
    close(Ua, Ub)
    if not with_fill:
        np.testing.assert_array_equal(Ua[:, 2], U0[:, 2])       # empty cluster keeps centre
    close(K.stream_loss(Ua, R, T, view_ptr, alpha), N.stream_loss(Ua, R, T, view_ptr, alpha))
    # large D
    view_ptr = np.array([0, 20000, 30000], np.int64)
    R = rng.normal(size=(c, 30000))
    T = rng.integers(1, 4, size=(2, c)).astype(np.float64)
    Ua, Ub = np.zeros((30000, c)), np.zeros((30000, c))
    K.stream_update_centers(R, T, view_ptr, alpha, np.zeros(0), Ua)
    N.stream_update_centers(R, T, view_ptr, alpha, np.zeros(0), Ub)
    close(Ua, Ub)


START_MODES = [K.START_FROM_LABELS, K.START_FROM_CENTERS, K.REPLACE_PREVIOUS]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("start", START_MODES)
@pytest.mark.parametrize("s,dd,sd,c", SHAPES[1:])
def test_chunk_iterate_matches_twin(dtype, start, s, dd, sd, c):
    rng = np.random.default_rng(s * 7 + c + start)
    b, ch = make_chunk(rng, s, dd, sd, dtype)
    # statistics of "earlier chunks": sums of random unit rows, and counts
    T0 = rng.integers(1, 20, size=(b.spec.m, c)).astype(np.float64)
    R0 = rng.normal(size=(c, b.D)) * 0.3
    U0 = rng.normal(size=(b.D, c))
    lab0 = rng.integers(0, c, s)
    if start == K.REPLACE_PREVIOUS:            # R, T already hold the chunk under lab0
        N.stream_scatter_dense(ch.dense, b.view_ptr, lab0, R0, 1.0)
        N.stream_scatter_csr(ch.sparse, lab0, R0, 1.0)
        N.stream_scatter_counts(lab0, ch.W, T0, 1.0)
    fill = rng.normal(size=b.D) if start == K.START_FROM_LABELS else np.zeros(0)
    out = []
    for impl in (K, N):
        stats = K.Statistics(R0.copy(), T0.copy(), U0.copy())
        lab = lab0.copy()
        res = impl.stream_chunk_iterate(ch.dense, ch.sparse, ch.W, b.view_ptr, stats, lab,
                                        start, fill, 0.1, 30, 1e-9)
        out.append((res, stats, lab))
    (la, ia, ca), sa, laba = out[0]
    (lb, ib, cb), sb, labb = out[1]
    np.testing.assert_array_equal(laba, labb)
    assert (ia, ca) == (ib, cb)
    close(la, lb, dtype)
    close(sa.sums, sb.sums, dtype)
    np.testing.assert_array_equal(sa.counts, sb.counts)
    close(sa.centers, sb.centers, dtype)


@pytest.mark.parametrize("alpha", [0.0, 0.1])
@pytest.mark.parametrize("s,dd,sd,c,dtype", [   # one compile per layout kind and dtype
    (*SHAPES[4], np.float64), (*SHAPES[4], np.float32), (*SHAPES[3], np.float64),
    (*SHAPES[5], np.float64),                   # several blocks of the products' GEMM
])
def test_chunk_refine_matches_twin_and_lowers_the_loss(alpha, s, dd, sd, c, dtype):
    rng = np.random.default_rng(s * 11 + c)
    b, ch = make_chunk(rng, s, dd, sd, dtype)
    lab0 = rng.integers(0, c, s)
    # earlier chunks' statistics (some clusters empty in some views), plus this chunk
    T0 = rng.integers(0, 3, size=(b.spec.m, c)).astype(np.float64)
    R0 = rng.normal(size=(c, b.D)) * 0.3 * (T0.sum(axis=0) > 0)[:, None]
    N.stream_scatter_dense(ch.dense, b.view_ptr, lab0, R0, 1.0)
    N.stream_scatter_csr(ch.sparse, lab0, R0, 1.0)
    N.stream_scatter_counts(lab0, ch.W, T0, 1.0)
    fill = rng.normal(size=b.D)
    out = []
    for impl in (K_refine, N):
        stats = K.Statistics(R0.copy(), T0.copy(), np.zeros((b.D, c)))
        lab = lab0.copy()
        res = impl.stream_chunk_refine(ch.dense, ch.sparse, ch.W, b.view_ptr, stats, lab,
                                       fill, alpha, 20)
        out.append((res, stats, lab))
    (res_k, sk, lk), (res_n, sn, ln) = out
    assert res_k == res_n
    np.testing.assert_array_equal(lk, ln)
    close(sk.sums, sn.sums, dtype)
    np.testing.assert_array_equal(sk.counts, sn.counts)
    close(sk.centers, sn.centers, dtype)
    before = N._optimal_loss_terms(R0, T0, b.view_ptr, alpha).sum()
    after = N._optimal_loss_terms(sk.sums, sk.counts, b.view_ptr, alpha).sum()
    assert after <= before + 1e-9 * abs(before)
    if res_k[0]:
        assert after < before
    # the statistics still hold the chunk under the new labels
    R1, T1 = R0.copy(), T0.copy()
    for lab, sign in ((lab0, -1.0), (lk, 1.0)):
        N.stream_scatter_dense(ch.dense, b.view_ptr, lab, R1, sign)
        N.stream_scatter_csr(ch.sparse, lab, R1, sign)
        N.stream_scatter_counts(lab, ch.W, T1, sign)
    close(sk.sums, R1, dtype)
    np.testing.assert_allclose(sk.counts, T1, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_refine_over_whole_layout_equals_chunk_by_chunk(dtype):
    """Kept in-memory views are built whole and cut into chunks: each cut is the layout a
    build of its rows alone gives, bit for bit, and a later pass is one kernel call over the
    whole layout, with the same moves, labels, statistics, per-chunk losses and sweeps as one
    call per chunk (chunks of several GEMM blocks, of one row, and with every row missing
    from a view; an all-NaN row taken as missing)."""
    from fastmv._opimc._chunks import cut_chunks
    from fastmv.kernels.opimc_refine import _stream_chunk_refine
    rng = np.random.default_rng(31)
    dd, sd, c = [7, 4], [9], 5
    views = [rng.normal(size=(300, d)).astype(dtype) for d in dd]
    views[1][200] = np.nan
    views.append(sp.random(300, sd[0], density=0.4, random_state=rng, format="csr",
                           dtype=dtype))
    mask = rng.random((300, 3)) > 0.3
    mask[np.arange(300), rng.integers(0, 3, 300)] = True
    mask[150:160, 0] = False
    mask[150:160, 1] = True
    mask[200] = [True, True, False]
    src = ArraySource(views, mask, 300)
    b = ChunkBuilder(src.spec, True, 300)
    b.keep = True
    _, blocks, mb, _ = next(src.chunks())
    cuts = [0, 140, 141, 150, 160, 300]           # 140 rows: three GEMM blocks
    chunks = [b.build(a, [X[a:e] for X in blocks], mb[a:e]) for a, e in zip(cuts, cuts[1:])]
    merged = b.build(0, blocks, mb)
    ends = np.array(cuts[1:], np.int64)
    for ch, (start, cut, err) in zip(chunks, cut_chunks(merged, ends, b.dense_dims),
                                     strict=True):
        assert err is None and cut.s == ch.s
        np.testing.assert_array_equal(cut.W, ch.W)
        for part in ("dense", "sparse"):
            for x1, x2 in zip(getattr(cut, part), getattr(ch, part), strict=True):
                assert x1.dtype == x2.dtype
                np.testing.assert_array_equal(x1, x2)
    assert merged.dense.position[200, 1] == -1       # the all-NaN row is missing
    lab0 = rng.integers(0, c, 300)
    stats0 = K.Statistics(np.zeros((c, b.D)), np.zeros((b.spec.m, c)), np.zeros((b.D, c)))
    for ch, a in zip(chunks, cuts):
        N.stream_scatter_dense(ch.dense, b.view_ptr, lab0[a:a + ch.s], stats0.sums, 1.0)
        N.stream_scatter_csr(ch.sparse, lab0[a:a + ch.s], stats0.sums, 1.0)
        N.stream_scatter_counts(lab0[a:a + ch.s], ch.W, stats0.counts, 1.0)

    def fresh():
        return K.Statistics(*(x.copy() for x in stats0)), lab0.copy()

    st1, lab1 = fresh()
    loss1, sweeps1, moves1 = [], [], 0
    for ch, a in zip(chunks, cuts):
        out = (np.array([ch.s]), np.empty(1), np.empty(1, np.int64))
        part = lab1[a:a + ch.s]                   # a view: the kernel moves its labels
        moves1 += _stream_chunk_refine(ch.dense, ch.sparse, ch.W, b.view_ptr, st1, part,
                                       np.zeros(0), 0.1, 2, *out)
        loss1.append(out[1][0])
        sweeps1.append(out[2][0])
    st2, lab2 = fresh()
    loss2, sweeps2 = np.empty(len(chunks)), np.empty(len(chunks), np.int64)
    moves2 = _stream_chunk_refine(merged.dense, merged.sparse, merged.W, b.view_ptr, st2, lab2,
                                  np.zeros(0), 0.1, 2, ends, loss2, sweeps2)
    assert moves1 == moves2 > 0
    np.testing.assert_array_equal(lab1, lab2)
    np.testing.assert_array_equal(loss1, loss2)
    np.testing.assert_array_equal(sweeps1, sweeps2)
    for x1, x2 in zip(st1, st2):
        np.testing.assert_array_equal(x1, x2)


def test_chunk_refine_stops_at_a_fixed_point():
    """A second call on its own output moves nothing and changes nothing."""
    rng = np.random.default_rng(5)
    b, ch = make_chunk(rng, 60, [8, 5], [9], np.float64)
    c = 4
    lab = rng.integers(0, c, 60)
    stats = K.Statistics(np.zeros((c, b.D)), np.zeros((b.spec.m, c)), np.zeros((b.D, c)))
    N.stream_scatter_dense(ch.dense, b.view_ptr, lab, stats.sums, 1.0)
    N.stream_scatter_csr(ch.sparse, lab, stats.sums, 1.0)
    N.stream_scatter_counts(lab, ch.W, stats.counts, 1.0)
    moves, sweeps = K_refine.stream_chunk_refine(ch.dense, ch.sparse, ch.W, b.view_ptr, stats,
                                                 lab, np.zeros(0), 0.1, 100)
    assert moves > 0 and sweeps < 100
    kept = lab.copy(), stats.sums.copy()
    assert K_refine.stream_chunk_refine(ch.dense, ch.sparse, ch.W, b.view_ptr, stats, lab,
                                        np.zeros(0), 0.1, 100) == (0, 1)
    np.testing.assert_array_equal(lab, kept[0])
    np.testing.assert_array_equal(stats.sums, kept[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pruned_inner_loop_equals_full_reassignment(dtype):
    """Many iterations from a random partition: the bounds skip most rows in the later
    iterations, and the result is still exactly that of re-assigning every row (the twin)."""
    views, y = planted(400, [30, 20], 8, seed=21, noise=2.0, sparse_views=(1,), density=0.6)
    views = [X.astype(dtype) for X in views]
    src = ArraySource(views, None, 400)
    b = ChunkBuilder(src.spec, True, 400)
    ch = b.build(*next(src.chunks()))
    lab0 = np.random.default_rng(0).integers(0, 8, 400)
    out = []
    for impl in (K, N):
        stats = K.Statistics(np.zeros((8, b.D)), np.zeros((2, 8)), np.zeros((b.D, 8)))
        lab = lab0.copy()
        res = impl.stream_chunk_iterate(ch.dense, ch.sparse, ch.W, b.view_ptr, stats, lab,
                                        K.START_FROM_LABELS, b.chunk_means(ch), 0.0, 200, 0.0)
        out.append((res, lab, stats.centers))
    assert out[0][0][1] == out[1][0][1] > 5                 # same (and many) iterations
    np.testing.assert_array_equal(out[0][1], out[1][1])
    close(out[0][0][0], out[1][0][0], dtype)
    close(out[0][2], out[1][2], dtype)


# ---------------------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------------------
