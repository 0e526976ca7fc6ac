"""MVFL time to solution against k-means, in one process (docs/performance.md, docs/mvfl.md).

One thread (``NUMBA_NUM_THREADS=1`` set here before Numba loads, BLAS limited with
threadpoolctl), CPU time, warm (each timed call is preceded by one untimed call), seed 0,
10 % labels (``fastmv.simulate.partial_labels(y, 0.1, random_state=0)``). The yardstick is
``sklearn.cluster.KMeans(n_clusters=c, n_init=10, random_state=0)`` on the L2-row-normalised
views side by side; views with under 10 % nonzeros are passed as CSR to both sides.

Rows: k-means; MVFL with defaults (self-tuning included); MVFL "fixed" (the options the
self-tuning chose passed explicitly, so nothing is tuned). Labels are saved with ``--save``
so that two versions of the code can be compared label by label::

    NUMBA_NUM_THREADS=1 python -m tools.time_mvfl ORL WebKB --save /tmp/after.npz
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastmv  # noqa: E402
from benchmarks.baseline import DATASETS, load  # noqa: E402
from fastmv import metrics, simulate  # noqa: E402


def _views(name):
    views, y = load(name)
    out = [sp.csr_matrix(V) if np.count_nonzero(V) < 0.1 * V.size else V for V in views]
    return out, y


def _cpu(fn):
    fn()  # warm
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def _kmeans(views, c):
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import normalize

    Xl2 = [normalize(V) for V in views]
    X = sp.hstack(Xl2, format="csr") if any(sp.issparse(V) for V in Xl2) else np.hstack(Xl2)
    return KMeans(n_clusters=c, n_init=10, random_state=0).fit(X).labels_


def measure(name):
    """One row per setting: CPU seconds, ratio to k-means, iterations, ACC."""
    views, y = _views(name)
    c = len(np.unique(y))
    lab = simulate.partial_labels(y, 0.1, random_state=0)
    t_km, km = _cpu(lambda: _kmeans(views, c))
    t_auto, r = _cpu(lambda: fastmv.mvfl(views, c, labels=lab, random_state=0))
    init = (r.tuning or {}).get("init", {}).get("choice", "k-means++")
    norm = r.normalize[0] if len(set(r.normalize)) == 1 else "auto"
    t_fix, rf = _cpu(lambda: fastmv.mvfl(views, c, labels=lab, random_state=0, init=init,
                                         normalize=norm))
    return {"data": name, "n": len(y), "c": c, "kmeans_s": t_km,
            "kmeans_acc": metrics.accuracy(y, km), "auto_s": t_auto, "fixed_s": t_fix,
            "auto_ratio": t_auto / t_km, "fixed_ratio": t_fix / t_km,
            "tuned_over_fixed": t_auto / t_fix, "n_iter": int(r.n_iter),
            "acc": metrics.accuracy(y, r.labels), "init": init, "normalize": norm,
            "labels": r.labels.tolist()}


def main(argv=None):
    from threadpoolctl import threadpool_limits

    p = argparse.ArgumentParser()
    p.add_argument("data", nargs="*", default=list(DATASETS))
    p.add_argument("--save", default=None)
    p.add_argument("--tag", default="")
    args = p.parse_args(argv)
    rows = []
    with threadpool_limits(1):
        for name in args.data:
            row = measure(name)
            rows.append(row)
            print(json.dumps({"tag": args.tag, **{k: (round(v, 3) if isinstance(v, float)
                                                       else v) for k, v in row.items()
                                                   if k != "labels"}}), flush=True)
    if args.save:
        np.savez(args.save, **{r["data"]: np.asarray(r["labels"]) for r in rows})


if __name__ == "__main__":
    main()
