"""OPIMC on a large Zarr store through a Dask LocalCluster, against the memmap path.

``python tools/scale_dask_opimc.py --dir /path/with/space [--n 2000000] [--views 5] [--dim 200]``

1. writes planted-cluster float32 views (n × dim each, 20 clusters, 40 % of each view missing)
   once as Zarr stores and once as ``.npy`` memmaps (chunks of 50 000 rows);
2. runs one OPIMC pass over the memmaps in a fresh process: seconds and the resident memory
   before and at its peak during the pass (sampled every 50 ms);
3. runs one pass over ``dask.array.from_zarr`` views in a fresh process with a
   ``distributed.LocalCluster`` of two single-threaded worker processes: seconds, the client's
   resident memory before and at its peak during the pass (sampled), and each worker's peak;
4. prints one JSON line per path and the agreement of the labels (ARI between the paths; they
   are identical when the chunking and the seed are the same).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROWS = 50_000


def _create(zarr, path, shape, chunks):
    """An uncompressed float32 Zarr array (zarr 3 API, or zarr 2's)."""
    if hasattr(zarr, "create_array"):
        return zarr.create_array(store=path, shape=shape, chunks=chunks, dtype=np.float32,
                                 compressors=None, overwrite=True)
    return zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype=np.float32,
                           compressor=None)


def write(folder, n, m, d, c=20, seed=0):
    import zarr

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    centers = [rng.normal(0, 1, (c, d)).astype(np.float32) for _ in range(m)]
    y = rng.integers(0, c, n)
    np.save(os.path.join(folder, "y.npy"), y)
    mask = rng.random((n, m)) >= 0.4
    mask[~mask.any(axis=1), 0] = True
    np.save(os.path.join(folder, "mask.npy"), mask)
    for v in range(m):
        z = _create(zarr, os.path.join(folder, f"view{v}.zarr"), (n, d), (ROWS, d))
        mm = np.lib.format.open_memmap(os.path.join(folder, f"view{v}.npy"), mode="w+",
                                       dtype=np.float32, shape=(n, d))
        for a in range(0, n, ROWS):
            b = min(a + ROWS, n)
            block = centers[v][y[a:b]] + rng.normal(0, 1.5, (b - a, d)).astype(np.float32)
            z[a:b] = block
            mm[a:b] = block
        mm.flush()
        del mm


_RUN = r'''
import json, os, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import fastmv
folder, path, m, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mask = np.load(os.path.join(folder, "mask.npy"), mmap_mode="r")
fastmv.opimc([np.random.default_rng(0).random((500, 4))], 3, chunk_size=100)  # warm the cache
out = {"path": path}

import threading
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
peak, running = [rss()], [True]
def sample():  # the resident set during the pass (ru_maxrss would include compilation)
    while running[0]:
        peak[0] = max(peak[0], rss())
        time.sleep(0.05)
sampler = threading.Thread(target=sample, daemon=True)
if path == "memmap":
    views = [np.load(os.path.join(folder, f"view{v}.npy"), mmap_mode="r") for v in range(m)]
else:
    import dask.array as da
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=40)
    client = Client(cluster)
    views = [da.from_zarr(os.path.join(folder, f"view{v}.zarr")) for v in range(m)]
out["rss_before_MiB"] = rss()
sampler.start()
t0 = time.perf_counter()
res = fastmv.opimc(views, 20, mask=mask, chunk_size=chunk, random_state=0)
out["seconds_per_pass"] = time.perf_counter() - t0
running[0] = False
sampler.join()
out["peak_rss_during_pass_MiB"] = peak[0]
if path == "dask":
    def peak():
        import resource  # runs on the worker
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["worker_peak_rss_MiB"] = sorted(client.run(peak).values())
    client.close(); cluster.close()
np.save(os.path.join(folder, f"labels_{path}.npy"), res.labels)
print(json.dumps(out))
'''


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--views", type=int, default=5)
    parser.add_argument("--dim", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=5000)
    parser.add_argument("--skip-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_write:
        t0 = time.perf_counter()
        write(args.dir, args.n, args.views, args.dim)
        print(json.dumps({"written_GB": args.n * args.views * args.dim * 4 / 1e9,
                          "write_seconds": time.perf_counter() - t0}), flush=True)
    for path in ("memmap", "dask"):
        out = subprocess.run([sys.executable, "-c", _RUN, args.dir, path, str(args.views),
                              str(args.chunk)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-3000:], file=sys.stderr)
            return 1
        print(out.stdout.strip().splitlines()[-1], flush=True)
    from fastmv import metrics
    a = np.load(os.path.join(args.dir, "labels_memmap.npy"))
    b = np.load(os.path.join(args.dir, "labels_dask.npy"))
    y = np.load(os.path.join(args.dir, "y.npy"))
    print(json.dumps({"identical_labels": bool(np.array_equal(a, b)),
                      "nmi_vs_truth": metrics.nmi(y, a)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
