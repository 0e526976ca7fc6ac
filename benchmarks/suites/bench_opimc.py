"""asv suite for fastmv.opimc.

Speed ratios are measured inside one ``track_*`` call against ``benchmarks/references/opimc.py``
(the same algorithm in vectorised NumPy: BLAS products for the distances, one-hot products for
the statistics, same start and stopping rules), so machine noise affects both alike. The
comparison with imml's OPIMC (a different package) and the 10^6-sample memmap run are
recorded in ``docs/records/opimc.md``.
"""
import os
import tempfile

import numpy as np
import scipy.sparse as sp

import fastmv
from benchmarks._common import best_of, cache_or_skip, from_cache, shared_dataset
from benchmarks.references.opimc import opimc_reference, synthetic_views
from fastmv import metrics, simulate


class OPIMCSynthetic:
    """n samples, 5 views × 200 dims, 20 clusters, chunk 2000, 40% of each view missing, one
    pass (the issue's synthetic setting, at n = 20000 so that asv stays quick). The data, the
    NMI and the speed-up over NumPy (same run) are made once in ``setup_cache``."""

    timeout = 600
    params = [[20000]]
    param_names = ["n"]

    def setup_cache(self):
        n = self.params[0][0]
        views, y = synthetic_views(n, 5, 200, 20)
        mask = simulate.incomplete_mask(n, 5, 0.4, random_state=0)
        lab0 = np.random.default_rng(0).integers(0, 20, 2000)
        _warm_dense(views, mask, lab0)

        def run():
            return fastmv.opimc(views, 20, mask=mask, chunk_size=2000, init=lab0)
        ref = best_of(lambda: opimc_reference(views, 20, lab0, mask=mask, chunk_size=2000), 1)
        return {"views": views, "mask": mask, "lab0": lab0,
                "nmi": metrics.nmi(y, run().labels), "speedup": ref / best_of(run, 3)}

    def setup(self, cache, n):
        self.views, self.mask, self.lab0 = cache["views"], cache["mask"], cache["lab0"]
        _warm_dense(self.views, self.mask, self.lab0)

    def run(self):
        return fastmv.opimc(self.views, 20, mask=self.mask, chunk_size=2000, init=self.lab0)

    def time_one_pass(self, cache, n):
        self.run()

    def peakmem_one_pass(self, cache, n):
        self.run()

    def track_nmi(self, cache, n):
        return cache["nmi"]

    def track_speedup_vs_numpy(self, cache, n):
        return cache["speedup"]

    track_nmi.unit = "NMI"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


def _warm_dense(views, mask, lab0):
    """Load (or compile) OPIMC's dense kernels on two chunks, outside the timings."""
    fastmv.opimc([X[:4000] for X in views], 20, mask=mask[:4000], chunk_size=2000, init=lab0)


class OPIMCHandwritten:
    """Handwritten (fou, fac, kar, pix, zer), 40% missing per view, shuffled, chunk 50,
    alpha 0.1 (the paper's Digit setting): one pass and ten passes. The NMIs and the speed-up
    over NumPy (same run) are measured once in ``setup_cache``."""

    timeout = 600

    def setup_cache(self):
        return cache_or_skip(self.build)

    def build(self):
        views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"),
                                            views=[1, 0, 2, 4, 5])
        rng = np.random.default_rng(0)
        perm = rng.permutation(y.size)
        self.views = [np.ascontiguousarray(X[perm]) for X in views]
        self.mask = simulate.incomplete_mask(y.size, 5, 0.4, random_state=0)
        self.lab0 = rng.integers(0, 10, 50)
        y = y[perm]
        self.run(1)  # compile / load the kernels
        ref = best_of(lambda: opimc_reference(self.views, 10, self.lab0, mask=self.mask,
                                              chunk_size=50), 3)
        return {"views": self.views, "mask": self.mask, "lab0": self.lab0,
                "speedup": ref / best_of(lambda: self.run(1), 5),
                "nmi_one_pass": metrics.nmi(y, self.run(1).labels),
                "nmi_ten_passes": metrics.nmi(y, self.run(10).labels)}

    def setup(self, cache):
        cache = from_cache(cache)
        self.views, self.mask, self.lab0 = cache["views"], cache["mask"], cache["lab0"]
        self.run(1)

    def run(self, passes):
        return fastmv.opimc(self.views, 10, mask=self.mask, chunk_size=50, max_iter=passes,
                            tol=0.0, init=self.lab0)

    def time_one_pass(self, cache):
        self.run(1)

    def time_ten_passes(self, cache):
        self.run(10)

    def peakmem_ten_passes(self, cache):
        self.run(10)

    def track_nmi_one_pass(self, cache):
        return cache["nmi_one_pass"]

    def track_nmi_ten_passes(self, cache):
        return cache["nmi_ten_passes"]

    def track_speedup_vs_numpy(self, cache):
        return cache["speedup"]

    track_nmi_one_pass.unit = "NMI"
    track_nmi_ten_passes.unit = "NMI"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


class OPIMCSparse:
    """CSR views (text-like): 3 views × 20000 features at 0.5% density, n = 20000, chunk
    2000, 40% missing, one pass. (The dense NumPy route would need n × 60000 floats.) The
    data and the NMI are made once in ``setup_cache``."""

    timeout = 600

    def setup_cache(self):
        rng = np.random.default_rng(0)
        n, d, c = 20000, 20000, 10
        y = rng.integers(0, c, n)
        views = []
        nnz_row = int(0.005 * d)
        for _ in range(3):
            topics = rng.integers(0, d, size=(c, 400))
            own = rng.random((n, nnz_row)) < 0.5
            cols = np.where(own, topics[y[:, None], rng.integers(0, 400, (n, nnz_row))],
                            rng.integers(0, d, (n, nnz_row)))
            X = sp.csr_matrix((rng.random(n * nnz_row) + 0.5,
                               (np.repeat(np.arange(n), nnz_row), cols.ravel())), shape=(n, d))
            X.sum_duplicates()
            views.append(X)
        self.views = views
        self.mask = simulate.incomplete_mask(n, 3, 0.4, random_state=0)
        return {"views": views, "mask": self.mask, "nmi": metrics.nmi(y, self.run().labels)}

    def setup(self, cache):
        self.views, self.mask = cache["views"], cache["mask"]
        fastmv.opimc([X[:4000] for X in self.views], 10, mask=self.mask[:4000],
                     chunk_size=2000, random_state=0)  # compile / load the kernels

    def run(self):
        return fastmv.opimc(self.views, 10, mask=self.mask, chunk_size=2000, random_state=0)

    def time_one_pass(self, cache):
        self.run()

    def peakmem_one_pass(self, cache):
        self.run()

    def track_nmi(self, cache):
        return cache["nmi"]

    track_nmi.unit = "NMI"


class OPIMCMemmap:
    """float32 memmaps on disk, 3 views × 100 dims, chunk 1000, one pass: time and peak memory
    for n = 20000 and n = 80000 (peak memory should not grow with n)."""

    timeout = 600
    params = [[20000, 80000]]
    param_names = ["n"]

    def setup(self, n):
        self.dir = tempfile.mkdtemp(prefix="fastmv_opimc_bench_")
        rng = np.random.default_rng(0)
        self.views = []
        for v in range(3):
            path = os.path.join(self.dir, f"v{v}.npy")
            mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, 100))
            for a in range(0, n, 10000):
                mm[a:a + 10000] = rng.normal(size=(min(10000, n - a), 100))
            mm.flush()
            del mm
            self.views.append(np.load(path, mmap_mode="r"))
        fastmv.opimc([X[:3000] for X in self.views], 10, chunk_size=1000)

    def teardown(self, n):
        self.views = None
        for f in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, f))
        os.rmdir(self.dir)

    def run(self):
        return fastmv.opimc(self.views, 10, chunk_size=1000, random_state=0)

    def time_one_pass(self, n):
        self.run()

    def peakmem_one_pass(self, n):
        self.run()


class OPIMCKernels:
    """The chunk kernels on one chunk of 2000 rows, 5 dense views × 200 dims (40% missing),
    20 clusters."""

    def setup(self):
        from fastmv._opimc._chunks import ChunkBuilder
        from fastmv._opimc._sources import ArraySource
        from fastmv.kernels import opimc as K
        self.K = K
        views, _ = synthetic_views(2000, 5, 200, 20)
        mask = simulate.incomplete_mask(2000, 5, 0.4, random_state=0)
        src = ArraySource(views, mask, 2000)
        self.b = ChunkBuilder(src.spec, True, 2000)
        self.raw = next(src.chunks())
        self.ch = self.b.build(*self.raw)
        rng = np.random.default_rng(1)
        self.U = rng.normal(size=(self.b.D, 20))
        self.lab = rng.integers(0, 20, 2000)
        self.new = np.where(rng.random(2000) < 0.1, rng.integers(0, 20, 2000), self.lab)
        self.R = np.zeros((20, self.b.D))
        self.time_chunk_assign()
        self.time_scatter_dense()
        self.time_move_dense()

    def time_build_chunk(self):
        self.b.build(*self.raw)

    def time_chunk_assign(self):
        ch = self.ch
        self.K.stream_chunk_assign(ch.dense, ch.sparse, ch.W, self.b.view_ptr, self.U,
                                   np.empty(2000, np.int64))

    def time_scatter_dense(self):
        ch = self.ch
        self.K.stream_scatter_dense(ch.dense, self.b.view_ptr, self.lab, self.R, 1.0)

    def time_move_dense(self):
        ch = self.ch
        self.K.stream_move_dense(ch.dense, self.b.view_ptr, self.lab, self.new, self.R)

    def track_scatter_speedup_vs_onehot_gemm(self):
        dn, vp = self.ch.dense, self.b.view_ptr
        V = np.eye(20)[self.lab]
        blocks = [(dn.values[dn.value_start[v]:dn.value_start[v + 1]]
                   .reshape(-1, vp[v + 1] - vp[v]),
                   V[dn.rows[dn.row_start[v]:dn.row_start[v + 1]]]) for v in range(5)]

        def numpy_route():
            return [X.T @ Vv for X, Vv in blocks]
        return best_of(numpy_route, 5) / best_of(self.time_scatter_dense, 5)

    track_scatter_speedup_vs_onehot_gemm.unit = "x (one-hot GEMM time / scatter time)"
