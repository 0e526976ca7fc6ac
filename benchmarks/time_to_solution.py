"""Time to solution: every solver with its defaults on the shared datasets, in units of the
cheap thing a user runs instead, measured in the same process.

Yardsticks (docs/performance.md):

- ``kmeans``: scikit-learn ``KMeans(n_clusters=c, n_init=10, random_state=0)`` on the views'
  L2-normalised rows side by side (MVFL, MVMC, OPIMC);
- ``nmf``: scikit-learn ``NMF(n_components=c, init="nndsvda", max_iter=300,
  random_state=0)`` fitted once on every (unmapped, non-negative, L2-row) view, times
  CMVNMF's ``n_init`` — "NMF per view per start" (CMVNMF); ``init="random"`` on a view with
  fewer features than classes, where ``nndsvda`` is refused (scikit-learn's own choice);
- ``eigh``: one ``numpy.linalg.eigh`` of the symmetrised mean transition matrix, ``n × n``
  (EMVC; the transition matrices are built outside the timed call).

The solvers follow the protocols of ``benchmarks/defaults_table.py`` (MVFL 10 % labels, MVMC
``5 n`` pairs, CMVNMF 95 % kept and 5 % inter-view pairs, OPIMC 40 % missing in the file's
order, EMVC the README route with ``lam1 = lam2 = --lam``) with every other option at its
default. ``--data tiny`` runs on the embedded 200-sample subsample of
``benchmarks/defaults_table.py`` (the smoke test and CI use it). Everything runs on one
thread (``NUMBA_NUM_THREADS=1``, BLAS limited by ``threadpoolctl``); times are process CPU seconds
of a warm call: the solver is first called on
a subsample (which compiles most kernels) and then once on the full data, discarded, because a
subsample can take another route than the full call (Handwritten and ProteinFold: ``d > n`` on
80–160 rows, the Woodbury route of MVFL; serial k-means kernels), whose signatures the first
full call would otherwise load from the Numba cache inside the timed call (0.2–0.3 s on
ProteinFold's MVFL). ``--warm subsample`` skips the full call. A garbage collection runs
before every timed call. A self-tuned solve is timed again with the
options its tuning chose given explicitly, so ``tuned / fixed`` is the cost of the tuning.

The package timed is whatever ``import fastmv`` finds, so one script measures several
versions::

    PYTHONPATH=/path/to/a/checkout python -m benchmarks.time_to_solution run \
        --tag before --out /tmp/tts.jsonl
    python -m benchmarks.time_to_solution run --tag after --out /tmp/tts.jsonl
    python -m benchmarks.time_to_solution table --out /tmp/tts.jsonl

Records are JSON lines (tag, solver, dataset, seconds, yardstick seconds, ratio, ACC, a hash
of the labels); a record already in ``--out`` is not recomputed.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import inspect
import json
import os
import time
import warnings

if __name__ == "__main__":  # one thread for the measured runs; importing it changes nothing
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks._shared_data import shared_dataset_names  # noqa: E402
from benchmarks.solvers import SOLVERS, protocol  # noqa: E402

DATASETS = shared_dataset_names()  # every shared dataset found
#: each solver's yardstick and protocol: ``benchmarks/solvers/<solver>.py``
YARDSTICK = {name: protocol(name).YARDSTICK for name in SOLVERS}


def _paper_views(solver, name):
    """The views of ``name`` the solver's paper used (as benchmarks/defaults_table.py)."""
    return getattr(protocol(solver), "PAPER_VIEWS", {}).get(name)


def _load(name, views=None):
    import fastmv
    from benchmarks.baseline import load
    if name == "tiny":  # as benchmarks/defaults_table.py: 20 digits of each class, fou and zer
        Xs, y = fastmv.datasets.load_handwritten(["fou", "zer"])
        keep = np.concatenate([np.flatnonzero(y == k)[:20] for k in range(10)])
        Xs, y = [X[keep] for X in Xs], y[keep]
    else:
        Xs, y = load(name, views)
    return [X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64) for X in Xs], y


def _l2(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def _nonneg_l2(X):
    lo = X.min(axis=0)
    if lo.min() < 0:
        span = X.max(axis=0) - lo
        X = (X - lo) / np.where(span > 0, span, 1.0)
    return _l2(X)


def _cpu(fn):
    gc.collect()  # a full pass costs 0.05-0.08 s with numba and scipy loaded
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def _hash(labels):
    parts = labels if isinstance(labels, list) else [labels]
    h = hashlib.sha256()
    for p in parts:
        h.update(np.ascontiguousarray(np.asarray(p, dtype=np.int64)).tobytes())
    return h.hexdigest()[:12]


def _accuracy(ys, labels):
    from fastmv import metrics
    return float(np.mean([metrics.accuracy(a, b) for a, b in zip(ys, labels)]))


def _yardstick(kind, solver, views, y, seed, data=None):
    from sklearn.cluster import KMeans
    from sklearn.decomposition import NMF
    c = len(np.unique(y))
    if kind == "eigh":  # the solver's graphs (``data``), built outside the timed call
        M = sum(data) / len(data)
        M = (M + M.T) / 2
        return _cpu(lambda: np.linalg.eigh(M))[1]
    if kind == "kmeans":
        X = np.hstack([_l2(V) for V in views])
        return _cpu(lambda: KMeans(c, n_init=10, random_state=0).fit(X))[1]
    if kind == "nmf":
        from fastmv import simulate
        uviews, _, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
        from fastmv._core._spec import solver_specs
        solve = solver_specs()[solver].function
        n_init = inspect.signature(solve).parameters["n_init"].default
        total = 0.0
        for V in uviews:
            X = _nonneg_l2(np.asarray(V, dtype=np.float64))
            # nndsvda needs c <= min(n, d): where a view has fewer features than classes
            # (100Leaves, LandUse-21) scikit-learn's own choice for init=None, "random"
            init = "nndsvda" if c <= min(X.shape) else "random"
            total += _cpu(lambda X=X, init=init: NMF(c, init=init, max_iter=300,
                                                     random_state=0).fit(X))[1]
        return total * n_init
    raise ValueError(kind)


def _warm(solver, views, y, seed):
    """Compile what a solve of this shape compiles, on a small subsample."""
    rng = np.random.default_rng(12345)
    c = len(np.unique(y))
    n = len(y)
    keep = np.sort(rng.choice(n, size=min(n, max(6 * c, 80)), replace=False))
    ys = y[keep]
    sub = [V[keep] for V in views]
    if len(np.unique(ys)) < c:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            protocol(solver).timed(sub, ys, seed, 0.01).run()
        except (ValueError, TypeError):
            pass


def measure(solver, name, seed=0, lam=0.01, warm="full"):
    """One record: the solver's warm CPU seconds against its yardstick's, same process."""
    # threadpool_limits reaches only the runtimes already loaded: scikit-learn's OpenMP loads
    # with sklearn.cluster, so an import inside the block would leave the first k-means of a
    # process on every core; scipy's OpenBLAS (the one Numba's np.dot calls) loads with
    # scipy.linalg, a different copy from NumPy's
    import scipy.linalg  # noqa: F401
    import sklearn.cluster  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    from threadpoolctl import threadpool_limits
    views, y = _load(name, _paper_views(solver, name))
    rec = dict(solver=solver, dataset=name, seed=seed, n=len(y), c=int(len(np.unique(y))),
               yardstick=YARDSTICK[solver], warm=warm)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _warm(solver, views, y, seed)
        try:
            timed = protocol(solver).timed(views, y, seed, lam)
            run, truth = timed.run, timed.truth
            if warm == "full":
                run()
            res, sec = _cpu(run)
            rec["yardstick_s"] = _yardstick(YARDSTICK[solver], solver, views, y, seed,
                                            timed.yardstick_data)
            rec.update(timed.record)
            chosen = {k: v.get("chosen") for k, v in (getattr(res, "tuning", None)
                                                      or {}).items()}
            if chosen and timed.retime_tuned:
                rec["tuned"] = chosen
                rec["fixed_s"] = _cpu(lambda: run(**chosen))[1]
        except (ValueError, TypeError) as exc:
            rec["error"] = str(exc).splitlines()[0][:200]
            return rec
    labels = res.labels if isinstance(res.labels, list) else [res.labels]
    rec.update(seconds=sec, ratio=sec / rec["yardstick_s"], acc=_accuracy(truth, labels),
               labels=_hash(labels), n_iter=int(np.max(getattr(res, "n_iter", -1))),
               converged=bool(np.all(getattr(res, "converged", False))))
    return rec


def _records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cmd_run(args):
    import fastmv
    done = {(r["tag"], r["solver"], r["dataset"], r["seed"]) for r in _records(args.out)}
    for solver in args.solver:
        for name in args.data:
            for seed in args.seeds:
                if (args.tag, solver, name, seed) in done:
                    continue
                rec = dict(tag=args.tag, version=os.path.dirname(fastmv.__file__),
                           **measure(solver, name, seed, args.lam, args.warm))
                print(json.dumps(rec), flush=True)
                with open(args.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")


def cmd_table(args):
    recs = _records(args.out)
    tags = list(dict.fromkeys(r["tag"] for r in recs))
    head = ["solver", "dataset", "yardstick s"]
    for t in tags:
        head += [f"{t}: s", f"{t}: × yardstick", f"{t}: ACC"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    keys = list(dict.fromkeys((r["solver"], r["dataset"]) for r in recs))
    for solver, name in keys:
        row = [solver, name]
        mine = [r for r in recs if r["solver"] == solver and r["dataset"] == name]
        ys = [r["yardstick_s"] for r in mine if "yardstick_s" in r]
        row.append(f"{np.median(ys):.2f}" if ys else "–")
        for t in tags:
            rs = [r for r in mine if r["tag"] == t]
            ok = [r for r in rs if "seconds" in r]
            if not ok:
                row += ["refused" if rs else "–", "", ""]
                continue
            tuned = [r["seconds"] / r["fixed_s"] for r in ok if r.get("fixed_s")]
            extra = f" (tuned/fixed {np.median(tuned):.2f})" if tuned else ""
            row += [f"{np.median([r['seconds'] for r in ok]):.2f}",
                    f"{np.median([r['ratio'] for r in ok]):.2f}×{extra}",
                    f"{np.mean([r['acc'] for r in ok]):.3f}"]
        print("| " + " | ".join(row) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "table"])
    ap.add_argument("--solver", nargs="*", default=list(SOLVERS))
    ap.add_argument("--data", nargs="*", default=list(DATASETS))
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    ap.add_argument("--lam", type=float, default=0.01, help="EMVC's lam1 = lam2")
    ap.add_argument("--warm", choices=["full", "subsample"], default="full",
                    help="warm-up before the timed call (see the module docstring)")
    ap.add_argument("--tag", default="now")
    ap.add_argument("--out", default="/tmp/fastmv_tts.jsonl")
    args = ap.parse_args(argv)
    (cmd_run if args.what == "run" else cmd_table)(args)


if __name__ == "__main__":
    main()
