"""asv suite for fastmv.opimc.

Speed ratios are measured inside one ``track_*`` call against ``benchmarks/_ref_opimc.py``
(the same algorithm in vectorised NumPy: BLAS products for the distances, one-hot products for
the statistics, same start and stopping rules), so machine noise affects both alike. The
comparison with imml's OPIMC (a different package) is a script:
``tools/compare_opimc_imml.py``; the 10^6-sample memmap run is ``tools/scale_opimc.py``.
"""
import os
import tempfile

import numpy as np
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate

from ._common import best_of, shared_dataset
from ._ref_opimc import opimc_numpy, synthetic_views


class OPIMCSynthetic:
    """n samples, 5 views × 200 dims, 20 clusters, chunk 2000, 40% of each view missing, one
    pass (the issue's synthetic setting, at n = 20000 so that asv stays quick)."""

    timeout = 600
    params = [[20000]]
    param_names = ["n"]

    def setup(self, n):
        self.views, self.y = synthetic_views(n, 5, 200, 20)
        self.mask = simulate.incomplete_mask(n, 5, 0.4, random_state=0)
        self.lab0 = np.random.default_rng(0).integers(0, 20, 2000)
        fastmv.opimc([X[:4000] for X in self.views], 20, mask=self.mask[:4000],
                     chunk_size=2000, init=self.lab0)  # compile / load the kernels

    def run(self):
        return fastmv.opimc(self.views, 20, mask=self.mask, chunk_size=2000, init=self.lab0)

    def time_one_pass(self, n):
        self.run()

    def peakmem_one_pass(self, n):
        self.run()

    def track_nmi(self, n):
        return metrics.nmi(self.y, self.run().labels)

    def track_speedup_vs_numpy(self, n):
        ref = best_of(lambda: opimc_numpy(self.views, 20, self.lab0, mask=self.mask,
                                          chunk_size=2000), 1)
        return ref / best_of(self.run, 3)

    track_nmi.unit = "NMI"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


class OPIMCHandwritten:
    """Handwritten (fou, fac, kar, pix, zer), 40% missing per view, shuffled, chunk 50,
    alpha 0.1 (the paper's Digit setting): one pass and ten passes."""

    timeout = 600

    def setup(self):
        views, y = fastmv.datasets.load_mat(shared_dataset("Handwritten.mat"),
                                            views=[1, 0, 2, 4, 5])
        rng = np.random.default_rng(0)
        perm = rng.permutation(y.size)
        self.views = [np.ascontiguousarray(X[perm]) for X in views]
        self.y = y[perm]
        self.mask = simulate.incomplete_mask(y.size, 5, 0.4, random_state=0)
        self.lab0 = rng.integers(0, 10, 50)
        self.run(1)

    def run(self, passes):
        return fastmv.opimc(self.views, 10, mask=self.mask, chunk_size=50, max_iter=passes,
                            tol=0.0, init=self.lab0)

    def time_one_pass(self):
        self.run(1)

    def time_ten_passes(self):
        self.run(10)

    def peakmem_ten_passes(self):
        self.run(10)

    def track_nmi_one_pass(self):
        return metrics.nmi(self.y, self.run(1).labels)

    def track_nmi_ten_passes(self):
        return metrics.nmi(self.y, self.run(10).labels)

    def track_speedup_vs_numpy(self):
        ref = best_of(lambda: opimc_numpy(self.views, 10, self.lab0, mask=self.mask,
                                          chunk_size=50), 3)
        return ref / best_of(lambda: self.run(1), 5)

    track_nmi_one_pass.unit = "NMI"
    track_nmi_ten_passes.unit = "NMI"
    track_speedup_vs_numpy.unit = "x (NumPy time / fastmv time)"


class OPIMCSparse:
    """CSR views (text-like): 3 views × 20000 features at 0.5% density, n = 20000, chunk
    2000, 40% missing, one pass. (The dense NumPy route would need n × 60000 floats.)"""

    timeout = 600

    def setup(self):
        rng = np.random.default_rng(0)
        n, d, c = 20000, 20000, 10
        self.y = rng.integers(0, c, n)
        self.views = []
        nnz_row = int(0.005 * d)
        for _ in range(3):
            topics = rng.integers(0, d, size=(c, 400))
            own = rng.random((n, nnz_row)) < 0.5
            cols = np.where(own, topics[self.y[:, None], rng.integers(0, 400, (n, nnz_row))],
                            rng.integers(0, d, (n, nnz_row)))
            X = sp.csr_matrix((rng.random(n * nnz_row) + 0.5,
                               (np.repeat(np.arange(n), nnz_row), cols.ravel())), shape=(n, d))
            X.sum_duplicates()
            self.views.append(X)
        self.mask = simulate.incomplete_mask(n, 3, 0.4, random_state=0)
        fastmv.opimc([X[:4000] for X in self.views], 10, mask=self.mask[:4000],
                     chunk_size=2000, random_state=0)  # compile / load the kernels

    def run(self):
        return fastmv.opimc(self.views, 10, mask=self.mask, chunk_size=2000, random_state=0)

    def time_one_pass(self):
        self.run()

    def peakmem_one_pass(self):
        self.run()

    def track_nmi(self):
        return metrics.nmi(self.y, self.run().labels)

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
        from fastmv._opimc_chunks import _ChunkBuilder
        from fastmv._opimc_sources import _ArraySource
        from fastmv.kernels import streaming as K
        self.K = K
        views, _ = synthetic_views(2000, 5, 200, 20)
        mask = simulate.incomplete_mask(2000, 5, 0.4, random_state=0)
        src = _ArraySource(views, mask, 2000)
        self.b = _ChunkBuilder(src.spec, True, 2000)
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
