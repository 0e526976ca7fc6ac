"""Tests of fastmv.opimc's sources: arrays, memmaps, CSR, row-sliceable objects, chunk
streams and Dask arrays give the same results; the visiting order; faulty sources."""
from __future__ import annotations

import contextlib
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import fastmv
from tests.opimc.helpers import close, planted

pytestmark = pytest.mark.filterwarnings("ignore:opimc stopped at max_iter")


class RowSliceable:
    """An h5py-like dataset: shape, dtype and row slicing only; records the reads."""

    def __init__(self, X):
        self._X = X
        self.shape = X.shape
        self.dtype = X.dtype
        self.max_rows_read = 0

    def __getitem__(self, key):
        out = np.array(self._X[key])
        self.max_rows_read = max(self.max_rows_read, out.shape[0])
        return out


def _chunk_stream(views, mask, block_rows):
    class Stream:
        def __iter__(self):
            n = views[0].shape[0]
            for a in range(0, n, block_rows):
                yield [X[a:a + block_rows] for X in views], mask[a:a + block_rows]
    return Stream()


def test_arrays_memmaps_objects_and_streams_give_identical_results(tmp_path):
    views, y = planted(530, [9, 14], 4, seed=8, noise=2.5)
    views[0][[3, 77]] = np.nan                      # NaN rows count as missing
    mask = fastmv.simulate.incomplete_mask(530, 2, 0.3, random_state=4)
    mask[[3, 77]] = [False, True]
    kw = dict(mask=mask, chunk_size=60, max_iter=3, random_state=5, shuffle=False)
    ref = fastmv.opimc(views, 4, **kw)
    mms = []
    for v, X in enumerate(views):
        mm = np.lib.format.open_memmap(tmp_path / f"v{v}.npy", mode="w+", dtype=X.dtype,
                                       shape=X.shape)
        mm[:] = X
        mm.flush()
        mms.append(np.load(tmp_path / f"v{v}.npy", mmap_mode="r"))
    mask_mm = np.lib.format.open_memmap(tmp_path / "mask.npy", mode="w+", dtype=bool,
                                        shape=mask.shape)
    mask_mm[:] = mask
    objs = [RowSliceable(X) for X in views]
    runs = {
        "memmap": fastmv.opimc(mms, 4, **{**kw, "mask": mask_mm}),
        "object": fastmv.opimc(objs, 4, **kw),
        "stream 60": fastmv.opimc(_chunk_stream(views, mask, 60), 4,
                                  **{**kw, "mask": None}),
        "stream 37": fastmv.opimc(_chunk_stream(views, mask, 37), 4,
                                  **{**kw, "mask": None}),
        "stream 1000": fastmv.opimc(_chunk_stream(views, mask, 1000), 4,
                                    **{**kw, "mask": None}),
        "list of chunks": fastmv.opimc(list(_chunk_stream(views, mask, 53)), 4,
                                       **{**kw, "mask": None}),
    }
    for name, r in runs.items():
        np.testing.assert_array_equal(r.labels, ref.labels, err_msg=name)
        np.testing.assert_array_equal(r.objective, ref.objective, err_msg=name)
        np.testing.assert_array_equal(r.chunk_loss, ref.chunk_loss, err_msg=name)
        np.testing.assert_array_equal(r.chunk_iter, ref.chunk_iter, err_msg=name)
        for a, b in zip(r.U, ref.U):
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert max(o.max_rows_read for o in objs) == 60
    # NaN rows = masked rows
    masked = mask.copy()
    masked[[3, 77], 0] = False
    views2 = [X.copy() for X in views]
    views2[0][[3, 77]] = 123.0
    r2 = fastmv.opimc(views2, 4, **{**kw, "mask": masked})
    np.testing.assert_array_equal(r2.labels, ref.labels)


def test_one_shot_generator_stream():
    views, y = planted(200, [5, 6], 3, seed=9)
    mask = np.ones((200, 2), bool)
    gen = (([X[a:a + 30] for X in views], None) for a in range(0, 200, 30))
    r = fastmv.opimc(gen, 3, chunk_size=50, random_state=0)
    ref = fastmv.opimc(views, 3, mask=mask, chunk_size=50, random_state=0, shuffle=False)
    np.testing.assert_array_equal(r.labels, ref.labels)
    gen = (([X[a:a + 30] for X in views], None) for a in range(0, 200, 30))
    with pytest.raises(ValueError, match="one-shot iterator"):
        fastmv.opimc(gen, 3, max_iter=2, tol=0.0)


def test_sparse_views_equal_their_dense_copies():
    views, y = planted(400, [12, 30], 4, seed=10, noise=1.0, sparse_views=(1,))
    dense = [views[0], views[1].toarray()]
    mask = fastmv.simulate.incomplete_mask(400, 2, 0.3, random_state=5)
    a = fastmv.opimc(views, 4, mask=mask, chunk_size=70, max_iter=2, tol=0.0, random_state=0)
    b = fastmv.opimc(dense, 4, mask=mask, chunk_size=70, max_iter=2, tol=0.0, random_state=0)
    np.testing.assert_array_equal(a.labels, b.labels)
    close(a.objective, b.objective)
    for X in (sp.csc_matrix(views[1]), sp.coo_matrix(views[1])):
        c = fastmv.opimc([views[0], X], 4, mask=mask, chunk_size=70, max_iter=2, tol=0.0,
                         random_state=0)
        np.testing.assert_array_equal(c.labels, a.labels)


def test_float32_views_are_processed_in_float32():
    views, y = planted(600, [20, 25], 4, seed=11, noise=1.0)
    v32 = [X.astype(np.float32) for X in views]
    a = fastmv.opimc(v32, 4, chunk_size=100, random_state=0)
    b = fastmv.opimc(views, 4, chunk_size=100, random_state=0)
    assert fastmv.metrics.ari(a.labels, b.labels) == 1.0
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-4)


def test_peak_memory_does_not_grow_with_n(tmp_path):
    """tracemalloc peak of opimc on memmaps of growing n: beyond the n int64 output labels and
    two float32 distance bounds per sample it stays flat (the views are 2 x 60 float64 = 960
    bytes per sample)."""
    rng = np.random.default_rng(12)
    dims = (40, 20)

    def peak_for(n):
        mms = []
        for v, d in enumerate(dims):
            path = tmp_path / f"n{n}_v{v}.npy"
            mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
            for a in range(0, n, 5000):
                b = min(a + 5000, n)
                mm[a:b] = rng.normal(size=(b - a, d))
            mm.flush()
            del mm
            mms.append(np.load(path, mmap_mode="r"))
        tracemalloc.start()
        tracemalloc.reset_peak()
        # two passes read the files twice; the later passes allocate as the second does
        r = fastmv.opimc(mms, 5, chunk_size=500, random_state=0, max_iter=2)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert r.labels.shape == (n,)
        return peak

    peak_for(2000)                                   # warm-up (compilation, caches)
    small, large = peak_for(5000), peak_for(40000)
    extra = large - small
    # n int64 labels, the n int32 visiting order of shuffle=True, n pairs of float32 bounds
    assert extra < 20 * 35000 + 64 * 1024, (small, large)
    assert large < 0.1 * 40000 * sum(dims) * 8


@pytest.mark.parametrize("shift", [1, 40])
def test_csr_indices_past_the_width_raise(shift):
    """One bad entry, or 1-based indices as MATLAB / LIBSVM users build them: refused, with
    the argument named, from arrays, chunk streams and chunks past the first alike."""
    rng = np.random.default_rng(30)
    X = rng.normal(size=(60, 5))
    S = sp.csr_matrix(np.abs(X) * (rng.random((60, 5)) < 0.5) + np.eye(60, 5))
    bad = S.copy()
    if shift == 1:
        bad.indices = bad.indices + 1                    # 1-based
    else:
        bad.indices[-1] = 5 + shift                      # one entry, in the last chunk
    with pytest.raises(ValueError, match=r"X_list\[1\]"):
        fastmv.opimc([X, bad], 2, chunk_size=20, random_state=0)

    def rows(M, a, b):            # raw CSR row block (scipy's slicing would drop bad entries)
        p0, p1 = M.indptr[a], M.indptr[b]
        return sp.csr_matrix((M.data[p0:p1], M.indices[p0:p1], M.indptr[a:b + 1] - p0),
                             shape=(b - a, M.shape[1]))

    stream = [([X[a:a + 20], rows(bad, a, a + 20)], None) for a in range(0, 60, 20)]
    with pytest.raises(ValueError, match=r"X_list\[1\]|view 1"):
        fastmv.opimc(stream, 2, chunk_size=20, random_state=0)


def _thread_settings():
    import numba
    from threadpoolctl import threadpool_info
    return numba.get_num_threads(), [(i["internal_api"], i["num_threads"])
                                     for i in threadpool_info()]


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("n_jobs", [1, 2])                 # 2: the next chunk read ahead
@pytest.mark.parametrize("fault", ["raise", "width", "kwonly"])
def test_faulty_chunk_source(fault, n_jobs, monkeypatch):
    """A stream that raises or yields a block of the wrong width midway: the exception reaches
    the caller with the chunk's index, and thread settings are restored."""
    import fastmv._opimc._solver
    # read ahead when 2 threads
    monkeypatch.setattr(fastmv._opimc._solver, "READ_AHEAD_MIN_VALUES", 0)
    rng = np.random.default_rng(32)
    X, Y = rng.normal(size=(100, 4)), rng.normal(size=(100, 3))

    class KwOnly(Exception):
        def __init__(self, *, code):
            super().__init__(f"code {code}")

    def stream():
        for t, a in enumerate(range(0, 100, 25)):
            if t == 2:
                if fault == "raise":
                    raise Boom("disk gone")
                if fault == "kwonly":
                    raise KwOnly(code=7)
                yield [X[a:a + 25], Y[a:a + 25, :2]], None
            yield [X[a:a + 25], Y[a:a + 25]], None

    before = _thread_settings()
    expected = {"raise": (Boom, "chunk 2.*disk gone"), "width": (ValueError, "chunk 2.*view 1"),
                "kwonly": (KwOnly, "code 7")}[fault]
    with pytest.raises(expected[0], match=expected[1]) as info:
        fastmv.opimc(stream(), 2, chunk_size=25, n_jobs=n_jobs, random_state=0)
    if fault == "kwonly":
        assert any("chunk 2" in note for note in info.value.__notes__)
    assert _thread_settings() == before


def test_dask_views_equal_numpy_views(monkeypatch):
    da = pytest.importorskip("dask.array")
    import dask

    import fastmv._opimc._solver
    # read ahead when 2 threads
    monkeypatch.setattr(fastmv._opimc._solver, "READ_AHEAD_MIN_VALUES", 0)
    views, y = planted(230, [5, 7], 3, seed=34, noise=1.0)
    mask = fastmv.simulate.incomplete_mask(230, 2, 0.3, random_state=5)
    dviews = [da.from_array(X, chunks=(70, 3)) for X in views]    # blocks unlike the chunks
    with dask.config.set(scheduler="threads"):
        for shuffle in (True, False):          # shuffled: the arrays' visiting order
            ref = fastmv.opimc(views, 3, mask=mask, chunk_size=40, max_iter=2, tol=0.0,
                               random_state=0, shuffle=shuffle)
            for m in (mask, da.from_array(mask, chunks=(50, 2))):
                for n_jobs in (1, 2):
                    r = fastmv.opimc(dviews, 3, mask=m, chunk_size=40, max_iter=2, tol=0.0,
                                     random_state=0, n_jobs=n_jobs, shuffle=shuffle)
                    np.testing.assert_array_equal(r.labels, ref.labels)
                    np.testing.assert_array_equal(r.objective, ref.objective)


# ------------------------------------------------------------------ visiting order (shuffle)
def _visit_order(n, chunk_size, rng):
    """The visiting order shuffle=True draws first from ``rng`` (each chunk's rows sorted)."""
    order = rng.permutation(n)
    for a in range(0, n, chunk_size):
        order[a:a + chunk_size].sort()
    return order


def test_shuffle_visits_a_seeded_permutation_and_returns_labels_in_input_order():
    views, y = planted(310, [8, 12], 4, seed=21, noise=1.5)
    mask = fastmv.simulate.incomplete_mask(310, 2, 0.3, random_state=2)
    for seed in (0, 7):
        r = fastmv.opimc(views, 4, mask=mask, chunk_size=50, max_iter=2, tol=0.0,
                         random_state=seed)
        g = np.random.default_rng(seed)
        order = _visit_order(310, 50, g)
        # the same solve on the rows written in visiting order, read in that order
        ref = fastmv.opimc([X[order] for X in views], 4, mask=mask[order], chunk_size=50,
                           max_iter=2, tol=0.0, random_state=g, shuffle=False)
        np.testing.assert_array_equal(r.labels[order], ref.labels)
        np.testing.assert_array_equal(r.objective, ref.objective)
        again = fastmv.opimc(views, 4, mask=mask, chunk_size=50, max_iter=2, tol=0.0,
                             random_state=seed)
        np.testing.assert_array_equal(again.labels, r.labels)


@pytest.mark.parametrize("refine", ["each", None])
def test_shuffled_arrays_memmaps_sparse_and_row_sliceable_objects_agree(tmp_path, refine):
    # in-memory arrays keep their chunks between passes (rows gathered from the views
    # themselves); memmaps and row-sliceable objects are read again in every pass
    views, y = planted(275, [6, 9], 3, seed=22, noise=1.5)
    mask = fastmv.simulate.incomplete_mask(275, 2, 0.3, random_state=3)
    kw = dict(mask=mask, chunk_size=40, max_iter=3, tol=0.0, random_state=4, refine=refine)
    ref = fastmv.opimc(views, 3, **kw)
    assert ref.n_iter >= 2                       # at least one pass over kept chunks
    mms = []
    for v, X in enumerate(views):
        np.save(tmp_path / f"v{v}.npy", X)
        mms.append(np.load(tmp_path / f"v{v}.npy", mmap_mode="r"))
    objs = [RowSliceable(X) for X in views]
    for name, vs in {"memmap": mms, "object": objs,
                     "csr": [views[0], sp.csr_matrix(views[1])],
                     "fortran order": [np.asfortranarray(X) for X in views]}.items():
        r = fastmv.opimc(vs, 3, **kw)
        np.testing.assert_array_equal(r.labels, ref.labels, err_msg=name)
        np.testing.assert_allclose(r.objective, ref.objective, rtol=1e-12, err_msg=name)
        np.testing.assert_array_equal(r.chunk_iter, ref.chunk_iter, err_msg=name)
    assert max(o.max_rows_read for o in objs) <= 40


class _Reiterable:
    """A re-iterable chunk stream: every ``iter()`` reads the rows again, in blocks of 35."""

    def __init__(self, views, rows=35):
        self.views, self.rows, self.passes = views, rows, 0

    def __iter__(self):
        self.passes += 1
        n = self.views[0].shape[0]
        return iter([([X[a:a + self.rows] for X in self.views], None)
                     for a in range(0, n, self.rows)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_defaults_give_the_same_labels_on_every_random_access_source(dtype, tmp_path):
    """One visiting order, from the seed and the row count only: NumPy arrays, memmaps, CSR,
    row-sliceable objects and dask arrays (also read from Zarr) give the same labels with the
    defaults (shuffle=True); a chunk stream is visited in its own order, as arrays are with
    shuffle=False (a re-iterable one: every pass, no iteration started and thrown away)."""
    views, _ = planted(1234, [6, 9], 3, seed=40, noise=1.5)
    views = [X.astype(dtype) for X in views]
    kw = dict(chunk_size=150, random_state=3)
    ref = fastmv.opimc(views, 3, **kw)
    sources = {"memmap": [], "object": [RowSliceable(X) for X in views],
               "csr": [views[0], sp.csr_matrix(views[1])]}
    for v, X in enumerate(views):
        np.save(tmp_path / f"v{v}.npy", X)
        sources["memmap"].append(np.load(tmp_path / f"v{v}.npy", mmap_mode="r"))
    try:
        import dask
        import dask.array as da
    except ImportError:
        dask = None
    if dask is not None:
        sources["dask"] = [da.from_array(X, chunks=(200, -1)) for X in views]
        try:
            import zarr
        except ImportError:
            zarr = None
        if zarr is not None:
            sources["zarr"] = []
            for v, X in enumerate(views):
                store = zarr.open_array(str(tmp_path / f"v{v}.zarr"), mode="w", shape=X.shape,
                                        chunks=(170, X.shape[1]), dtype=X.dtype)
                store[:] = X
                sources["zarr"].append(da.from_zarr(str(tmp_path / f"v{v}.zarr")))
    for name, vs in sources.items():
        with (dask.config.set(scheduler="threads") if name in ("dask", "zarr")
              else contextlib.nullcontext()):
            r = fastmv.opimc(vs, 3, **kw)
        np.testing.assert_array_equal(r.labels, ref.labels, err_msg=name)
        np.testing.assert_allclose(r.objective, ref.objective, rtol=1e-12, err_msg=name)
        assert r.U[0].dtype == np.float64
    in_order = fastmv.opimc(views, 3, shuffle=False, **kw)
    stream = _Reiterable(views)
    r = fastmv.opimc(stream, 3, **kw)
    np.testing.assert_array_equal(r.labels, in_order.labels)
    np.testing.assert_array_equal(r.objective, in_order.objective)
    assert stream.passes == r.n_iter


def test_a_stream_keeps_its_order():
    views, y = planted(240, [5, 6], 3, seed=23)
    stream = [([X[a:a + 35] for X in views], None) for a in range(0, 240, 35)]
    r = fastmv.opimc(stream, 3, chunk_size=50, random_state=0)          # shuffle=True default
    ref = fastmv.opimc(views, 3, chunk_size=50, random_state=0, shuffle=False)
    np.testing.assert_array_equal(r.labels, ref.labels)


def test_shuffle_rescues_a_stream_sorted_by_class():
    """One pass over samples sorted by class fits the first chunks' few classes; a random
    visiting order sees every class from the first chunk on."""
    views, y = planted(1200, [10, 15], 6, seed=24, noise=1.0)
    order = np.argsort(y, kind="stable")
    views, y = [X[order] for X in views], y[order]
    mask = fastmv.simulate.incomplete_mask(1200, 2, 0.4, random_state=0)
    acc = {}
    for shuffle in (False, True):
        acc[shuffle] = np.mean([fastmv.metrics.accuracy(y, fastmv.opimc(
            views, 6, mask=mask, chunk_size=100, random_state=s, shuffle=shuffle).labels)
            for s in range(3)])
    assert acc[True] > 0.9 and acc[True] > acc[False] + 0.1, acc


@pytest.mark.parametrize("shuffle", [True, False])
def test_a_bad_row_is_named_by_its_row_in_the_input(shuffle):
    rng = np.random.default_rng(44)
    X = rng.normal(size=(300, 4))
    X[123, 1] = np.inf
    with pytest.raises(ValueError, match=r"X_list\[1\] row 123 contains infinite"):
        fastmv.opimc([rng.normal(size=(300, 2)), X], 3, chunk_size=50, shuffle=shuffle,
                     random_state=0)
    mask = np.ones((300, 2), bool)
    mask[77] = False
    with pytest.raises(ValueError, match="sample 77 is missing from every view"):
        fastmv.opimc([rng.normal(size=(300, 1)), rng.normal(size=(300, 3))], 3, mask=mask,
                     chunk_size=50, shuffle=shuffle, random_state=0)
    S = sp.random(300, 6, density=0.5, random_state=1, format="csr")
    S.data[S.indptr[200]] = np.nan
    with pytest.raises(ValueError, match="row 200 contains NaN"):
        fastmv.opimc([rng.normal(size=(300, 2)), S], 3, chunk_size=50, shuffle=shuffle,
                     random_state=0)
