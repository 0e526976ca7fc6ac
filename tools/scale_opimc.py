"""Large-scale runs of fastmv.opimc (run by hand; not part of the tests).

    python tools/scale_opimc.py dense  [--n 1000000] [--dir /tmp/fastmv_opimc_scale]
    python tools/scale_opimc.py sparse [--n 100000]

``dense``: writes 5 views × 200 float32 features (n rows each, planted clusters, 20 classes) and
a 40%-missing mask as ``.npy`` memmaps (4 GB at n = 10^6), runs one pass of ``opimc`` (chunk 2000)
on ``np.load(..., mmap_mode="r")`` in a fresh subprocess, reports the time per pass, NMI and the
subprocess's peak resident set size (``ru_maxrss``), then deletes the files.

``sparse``: 5 CSR views × 20000 features at 0.5% density (100 nonzeros per row, topic-like
planted structure), n = 100000, 40% missing, chunk 2000, one pass, in a subprocess (time, NMI,
peak RSS). The dense equivalent imml would need is n × 100000 float64 = 80 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_dense(directory, n, m=5, d=200, c=20, seed=0, block=50_000):
    from fastmv.simulate import incomplete_mask
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    np.save(os.path.join(directory, "y.npy"), y)
    for v in range(m):
        C = rng.standard_normal((c, d), dtype=np.float32)
        mm = np.lib.format.open_memmap(os.path.join(directory, f"v{v}.npy"), mode="w+",
                                       dtype=np.float32, shape=(n, d))
        for a in range(0, n, block):
            b = min(a + block, n)
            mm[a:b] = C[y[a:b]] + 2.0 * rng.standard_normal((b - a, d), dtype=np.float32)
        mm.flush()
        del mm
    mask = incomplete_mask(n, m, 0.4, random_state=seed)
    np.save(os.path.join(directory, "mask.npy"), mask)


def run_dense(directory, chunk, m=5, c=20):
    import fastmv
    views = [np.load(os.path.join(directory, f"v{v}.npy"), mmap_mode="r") for v in range(m)]
    mask = np.load(os.path.join(directory, "mask.npy"), mmap_mode="r")
    fastmv.opimc([X[:3 * chunk] for X in views], c, mask=mask[:3 * chunk], chunk_size=chunk)
    rss_before = _peak_rss_mb()
    t = time.perf_counter()
    res = fastmv.opimc(views, c, mask=mask, chunk_size=chunk, random_state=0)
    elapsed = time.perf_counter() - t
    y = np.load(os.path.join(directory, "y.npy"))
    return {"n": int(views[0].shape[0]), "seconds_per_pass": elapsed,
            "nmi": fastmv.metrics.nmi(y, res.labels),
            "inner_iterations": int(res.chunk_iter.sum()), "chunks": int(res.chunk_iter.size),
            "peak_rss_mb": _peak_rss_mb(), "peak_rss_before_run_mb": rss_before,
            "file_gb": sum(X.nbytes for X in views) / 1e9}


def make_sparse(n, m=5, d=20000, c=20, density=0.005, seed=0):
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    k = int(round(density * d))                 # nonzeros per row
    views = []
    for _ in range(m):
        topics = rng.integers(0, d, size=(c, 500))
        own = rng.random((n, k)) < 0.5
        cols = np.where(own, topics[y[:, None], rng.integers(0, 500, (n, k))],
                        rng.integers(0, d, (n, k)))
        X = sp.csr_matrix((rng.random(n * k).astype(np.float64) + 0.5,
                           (np.repeat(np.arange(n), k), cols.ravel())), shape=(n, d))
        X.sum_duplicates()
        views.append(X)
    return views, y


def run_sparse(n, chunk, c=20):
    import fastmv
    from fastmv.simulate import incomplete_mask
    views, y = make_sparse(n, c=c)
    mask = incomplete_mask(n, len(views), 0.4, random_state=0)
    fastmv.opimc([X[:3 * chunk] for X in views], c, mask=mask[:3 * chunk], chunk_size=chunk)
    rss_before = _peak_rss_mb()
    t = time.perf_counter()
    res = fastmv.opimc(views, c, mask=mask, chunk_size=chunk, random_state=0)
    elapsed = time.perf_counter() - t
    return {"n": n, "views": f"{len(views)} x {views[0].shape[1]}",
            "nnz_total": int(sum(X.nnz for X in views)), "seconds_per_pass": elapsed,
            "nmi": fastmv.metrics.nmi(y, res.labels),
            "inner_iterations": int(res.chunk_iter.sum()), "peak_rss_mb": _peak_rss_mb(),
            "peak_rss_before_run_mb": rss_before,
            "dense_float64_equivalent_gb": n * sum(X.shape[1] for X in views) * 8 / 1e9}


def _child(argv):
    """Run in a fresh interpreter and print one JSON line."""
    cmd = [sys.executable, __file__, *argv]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["dense", "sparse", "_run_dense", "_run_sparse"])
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--chunk", type=int, default=2000)
    p.add_argument("--dir", default="/tmp/fastmv_opimc_scale")
    p.add_argument("--keep", action="store_true", help="keep the memmap files")
    args = p.parse_args(argv)
    if args.what == "_run_dense":
        print(json.dumps(run_dense(args.dir, args.chunk)))
    elif args.what == "_run_sparse":
        print(json.dumps(run_sparse(args.n, args.chunk)))
    elif args.what == "dense":
        n = args.n or 1_000_000
        t = time.perf_counter()
        make_dense(args.dir, n)
        print(f"wrote {n} x 5 x 200 float32 memmaps + mask to {args.dir} in "
              f"{time.perf_counter() - t:.1f}s", flush=True)
        try:
            print(json.dumps(_child(["_run_dense", "--dir", args.dir, "--chunk",
                                     str(args.chunk)]), indent=1))
        finally:
            if not args.keep:
                shutil.rmtree(args.dir, ignore_errors=True)
    else:
        n = args.n or 100_000
        print(json.dumps(_child(["_run_sparse", "--n", str(n), "--chunk", str(args.chunk)]),
                         indent=1))


if __name__ == "__main__":
    main()
