"""One-off measurements for the MVFL report (docs/mvfl.md): quality on Handwritten and 3Sources
over several draws, and speed/memory against the plain NumPy transcription
(``benchmarks/references/mvfl.py``'s ``mvfl_reference``, which solves the ``d × d`` systems with
``numpy.linalg.solve``) in the same run.

Usage (from the repository root)::

    python -m tools.scale_mvfl quality [n_draws]
    python -m tools.scale_mvfl speed
    python -m tools.scale_mvfl memory            # peak RSS of each side, in subprocesses

Datasets are read from ``../shared/datasets`` (override with FASTMV_SHARED_DATASETS).
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import fastmv
from benchmarks._common import best_of
from benchmarks.references.mvfl import mvfl_reference
from fastmv import metrics, simulate
from fastmv._core._preprocessing import normalize_rows
from fastmv._core._shared_data import shared_datasets_dir

DATA = shared_datasets_dir() or Path("../shared/datasets")


def _normalize_views(views, scheme):
    """The views as mvfl scales them: "zscore" (unit-variance features, each view by
    1/sqrt(d_v); columns are not centred, the intercept absorbs shifts) or "l2" (unit rows)."""
    if scheme == "l2":
        return [normalize_rows(v, "l2") for v in views]
    out = []
    for X in views:
        sd = X.std(axis=0)
        out.append(X * (np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
                        / np.sqrt(X.shape[1])))
    return out


def _concatenate(views):
    return sp.hstack([sp.csr_matrix(v) for v in views], format="csr")


def _pairs_from_labelled(y, ratio, rng):
    return simulate.pairs_from_labels(simulate.partial_labels(y, ratio, random_state=rng))


def handwritten():
    views, y = fastmv.datasets.load_mat(DATA / "Handwritten.mat", views=[1, 0, 5])
    return views, y  # fou, fac, zer


def three_sources():
    views, y = fastmv.datasets.load_mat(DATA / "3Sources.mat")
    return [sp.csr_matrix(v) for v in views], y


def _stats(vals):
    return f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"


def quality(n_draws=5):
    views, y = handwritten()
    res = {k: {"acc": [], "nmi": []} for k in ("none", "labels", "pairs")}
    for s in range(n_draws):
        runs = {
            "none": {},
            "labels": {"labels": simulate.partial_labels(y, 0.1, random_state=s), "lam3": 100.0},
        }
        ml, cl = _pairs_from_labelled(y, 0.1, np.random.default_rng(s))
        runs["pairs"] = {"must_link": ml, "cannot_link": cl, "lam3": 0.01}
        for k, kw in runs.items():
            r = fastmv.mvfl(views, 10, random_state=s, **kw)
            res[k]["acc"].append(metrics.accuracy(y, r.labels))
            res[k]["nmi"].append(metrics.nmi(y, r.labels))
        print(f"draw {s}: " + ", ".join(f"{k} {res[k]['acc'][-1]:.3f}" for k in res), flush=True)
    print("Handwritten fou+fac+zer, lam1 = lam2 = 1e-3, normalize='zscore', "
          f"{n_draws} draws (seed s for labels/pairs and k-means):")
    for k in res:
        print(f"  {k:7s} acc {_stats(res[k]['acc'])}  nmi {_stats(res[k]['nmi'])}")

    views, y = three_sources()
    c = int(np.unique(y).size)
    rows = {"mvfl l2 labels": [], "mvfl zscore labels": [], "mvfl l2 none": [],
            "kmeans concat raw": [], "kmeans concat l2": []}
    Xraw = sp.hstack(views, format="csr")
    Xl2 = _concatenate(_normalize_views(views, "l2"))
    for s in range(n_draws):
        lab = simulate.partial_labels(y, 0.1, random_state=s)
        kw = {"lam1": 0.3, "lam2": 1e-3, "lam3": 100.0, "random_state": s}
        out = {
            "mvfl l2 labels": fastmv.mvfl(views, c, labels=lab, normalize="l2", **kw).labels,
            "mvfl zscore labels": fastmv.mvfl(views, c, labels=lab, **kw).labels,
            "mvfl l2 none": fastmv.mvfl(views, c, normalize="l2", **kw).labels,
            "kmeans concat raw": fastmv.kmeans(Xraw, c, random_state=s).labels,
            "kmeans concat l2": fastmv.kmeans(Xl2, c, random_state=s).labels,
        }
        for k, lab_pred in out.items():
            rows[k].append((metrics.accuracy(y, lab_pred), metrics.nmi(y, lab_pred)))
    print(f"3Sources (n = 169, d = 10259 sparse), 10% labels, lam1 = 0.3, lam2 = 1e-3, "
          f"lam3 = 100, {n_draws} draws:")
    for k, v in rows.items():
        v = np.array(v)
        print(f"  {k:20s} acc {_stats(v[:, 0])}  nmi {_stats(v[:, 1])}")


def speed():
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    views, y = handwritten()
    normed = _normalize_views(views, "zscore")
    X = np.hstack(normed)
    vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in normed])])
    km = fastmv.kmeans(X, 10, random_state=0).labels
    F0 = np.full((X.shape[0], 10), 0.2)
    F0[np.arange(X.shape[0]), km] += 1
    ml, cl = _pairs_from_labelled(y, 0.1, np.random.default_rng(0))
    priors = {"none": {}, "labels": {"labels": simulate.partial_labels(y, 0.1, random_state=0),
                                     "lam3": 100.0},
              "pairs": {"must_link": ml, "cannot_link": cl, "lam3": 0.01}}
    it = 20
    for k, kw in priors.items():
        def fast():
            return fastmv.mvfl(normed, 10, init=F0, normalize=None, max_iter=it, tol=0,
                               f_step="paper", **kw)
        fast()
        tf = best_of(fast, 3)
        tr = best_of(lambda: mvfl_reference(X, vp, F0, max_iter=it, **kw), 1)
        a = fast()
        W, b, F, h = mvfl_reference(X, vp, F0, max_iter=it, **kw)
        print(f"Handwritten {k:6s} {it} iterations: fastmv {tf:.3f} s, NumPy {tr:.3f} s, "
              f"ratio {tr / tf:.1f}x; max |F - F_ref| {np.abs(a.F - F).max():.1e}", flush=True)

    views, y = three_sources()
    c = int(np.unique(y).size)
    normed = _normalize_views(views, "l2")
    Xs = _concatenate(normed)
    vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in normed])])
    km = fastmv.kmeans(Xs, c, random_state=0).labels
    F0 = np.full((Xs.shape[0], c), 0.2)
    F0[np.arange(Xs.shape[0]), km] += 1
    kw = {"labels": simulate.partial_labels(y, 0.1, random_state=0), "lam1": 0.3,
          "lam2": 1e-3, "lam3": 100.0}

    def fast(n_iter):
        return fastmv.mvfl(normed, c, init=F0, normalize=None, max_iter=n_iter, tol=0,
                           f_step="paper", **kw)

    fast(2)
    t1 = best_of(lambda: fast(1), 3)
    t20 = best_of(lambda: fast(20), 3)
    Xd = Xs.toarray()
    t0 = time.perf_counter()
    W, b, F, h = mvfl_reference(Xd, vp, F0, max_iter=1, **kw)
    tr = time.perf_counter() - t0
    a = fast(1)
    print(f"3Sources d = {Xd.shape[1]}, 1 iteration: fastmv {t1:.3f} s (20 iterations "
          f"{t20:.3f} s), NumPy d×d solves {tr:.1f} s, ratio {tr / t1:.0f}x; "
          f"max |W - W_ref| / max |W_ref| {np.abs(a.W - W).max() / np.abs(W).max():.1e}")


def _memory_child(which):
    views, y = three_sources()
    c = int(np.unique(y).size)
    normed = _normalize_views(views, "l2")
    Xs = _concatenate(normed)
    vp = np.concatenate([[0], np.cumsum([v.shape[1] for v in normed])])
    F0 = np.full((Xs.shape[0], c), 0.2)
    F0[np.arange(Xs.shape[0]), np.arange(Xs.shape[0]) % c] += 1
    kw = {"labels": simulate.partial_labels(y, 0.1, random_state=0), "lam1": 0.3,
          "lam2": 1e-3, "lam3": 100.0}
    Xd = Xs.toarray()
    if which == "fastmv":  # load the compiled kernels before measuring
        tiny = [sp.csr_matrix(np.eye(6, 20))]
        fastmv.mvfl(tiny, 2, labels=np.r_[0, 1, [-1] * 4], init=np.ones((6, 2)),
                    normalize=None, max_iter=1)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if which == "fastmv":
        fastmv.mvfl(normed, c, init=F0, normalize=None, max_iter=1, tol=0, f_step="paper",
                    **kw)
    else:
        mvfl_reference(Xd, vp, F0, max_iter=1, **kw)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{which}: peak RSS growth {(peak - base) / 1024:.0f} MB (3Sources, 1 iteration)")


def memory():
    for which in ("fastmv", "numpy"):
        subprocess.run([sys.executable, "-m", "tools.scale_mvfl", "_memory_child", which],
                       check=True)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "quality"
    if cmd == "quality":
        quality(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif cmd == "speed":
        speed()
    elif cmd == "memory":
        memory()
    elif cmd == "_memory_child":
        _memory_child(sys.argv[2])
    else:
        raise SystemExit(__doc__)
