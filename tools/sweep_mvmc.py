"""Sweep of MVMC's ``C1`` / ``C2`` over the shared datasets (the evidence behind the defaults
in docs/mvmc.md). Not part of the test-suite.

    python -m tools.sweep_mvmc run --out sweep.jsonl [--data BBCSport.mat ...]
        [--C1 1 10 100 1000] [--C2 1] [--seeds 5] [--pairs-per-sample 5]
        appends one JSON line per (dataset, C1, C2, seed) and per baseline seed.
    python -m tools.sweep_mvmc table --out sweep.jsonl
        prints the Markdown table (ACC / NMI mean ± std over the seeds).
    python -m tools.sweep_mvmc ninit --out ninit.jsonl [--data ...] [--n-init 1 3 10]
        the spread of the final spectral step's labels over k-means seeds per ``n_init``.

Constraints: ``fastmv.simulate.pairwise_constraints(y, 5 n, random_state=seed)``.
Baseline: ``fastmv.kmeans`` on the concatenation of the views with ℓ2-normalised rows (per
view, as MVMC's ``normalize="l2"``), ``random_state=seed``. ``synthetic-100`` is a 100-class
dataset built here (:func:`many_classes`), 1600 samples as the issue's many-class case.
Datasets are read from ``$FASTMV_SHARED_DATASETS`` (default ``../shared/datasets``).
"""
import argparse
import json
import os
import time
from collections import defaultdict

import numpy as np
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate

DATASETS = ["3Sources.mat", "BBCSport.mat", "Handwritten.mat", "Reuters-1200.mat",
            "WebKB.mat", "synthetic-100"]


def _data_dir():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.environ.get("FASTMV_SHARED_DATASETS",
                          os.path.join(os.path.dirname(here), "shared", "datasets"))


def many_classes(n_classes=100, per_class=16, n_views=3, d=64, noise=2.0, random_state=0):
    """``n_views`` dense views of ``n_classes · per_class`` samples: per-view class means
    N(0, I_d) plus N(0, noise²) noise; labels balanced and shuffled."""
    rng = np.random.default_rng(random_state)
    y = np.repeat(np.arange(n_classes), per_class)
    rng.shuffle(y)
    views = []
    for _ in range(n_views):
        means = rng.normal(size=(n_classes, d))
        views.append(means[y] + noise * rng.normal(size=(y.size, d)))
    return views, y


def load(name):
    if name == "synthetic-100":
        return many_classes()
    return fastmv.datasets.load_mat(os.path.join(_data_dir(), name))


def _l2_rows(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        X = np.asarray(X, dtype=np.float64)
        norms = np.linalg.norm(X, axis=1)
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]


def concatenated(views):
    blocks = [_l2_rows(X) for X in views]
    if any(sp.issparse(B) for B in blocks):
        return sp.hstack([sp.csr_matrix(B) for B in blocks]).tocsr()
    return np.hstack(blocks)


def _score(y, labels):
    return dict(acc=float(metrics.accuracy(y, labels)), nmi=float(metrics.nmi(y, labels)),
                n_found=int(np.unique(labels).size))


def cmd_run(args):
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as f:
            for line in f:
                r = json.loads(line)
                done.add((r["data"], r["method"], r.get("C1"), r.get("C2"), r["seed"]))
    for name in args.data:
        views, y = load(name)
        n = y.size
        c = int(np.unique(y).size)
        for seed in range(args.seeds):
            key = (name, "kmeans", None, None, seed)
            if key not in done:
                lab = fastmv.kmeans(concatenated(views), c, random_state=seed).labels
                _write(args.out, dict(data=name, method="kmeans", seed=seed, **_score(y, lab)))
        for C1 in args.C1:
            for C2 in args.C2:
                for seed in range(args.seeds):
                    if (name, "mvmc", C1, C2, seed) in done:
                        continue
                    ml, cl = simulate.pairwise_constraints(y, args.pairs_per_sample * n,
                                                           random_state=seed)
                    t0 = time.perf_counter()
                    import warnings
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        res = fastmv.mvmc(views, c, ml, cl, C1=C1, C2=C2, random_state=seed,
                                          n_jobs=args.n_jobs)
                    _write(args.out, dict(
                        data=name, method="mvmc", C1=C1, C2=C2, seed=seed,
                        n_iter=int(res.n_iter), converged=bool(res.converged),
                        seconds=time.perf_counter() - t0, ml_share=float(len(ml) / (len(ml) + len(cl))),
                        warnings=sorted({type(w.message).__name__ for w in caught}),
                        **_score(y, res.labels)))


def _write(path, row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def cmd_table(args):
    latest = {}  # the last row of every (dataset, method, C1, C2, seed): reruns replace
    for path in args.out:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r["method"] in ("kmeans", "mvmc"):
                    latest[(r["data"], r["method"], r.get("C1"), r.get("C2"), r["seed"])] = r
    groups = defaultdict(list)
    for key, r in latest.items():
        groups[key[:4]].append(r)
    names = [d for d in DATASETS if any(k[0] == d for k in groups)]
    configs = sorted({k[1:] for k in groups if k[1] == "mvmc"}, key=lambda k: (k[1], k[2]))
    head = "| method | " + " | ".join(names) + " |"
    print(head)
    print("|" + "---|" * (len(names) + 1))
    for cfg in [("kmeans", None, None)] + configs:
        label = ("concatenated k-means" if cfg[0] == "kmeans"
                 else f"MVMC C1={cfg[1]:g}, C2={cfg[2]:g}")
        cells = []
        for d in names:
            rows = groups.get((d,) + cfg, [])
            if not rows:
                cells.append("–")
                continue
            acc = np.array([r["acc"] for r in rows])
            nmi = np.array([r["nmi"] for r in rows])
            cells.append(f"{acc.mean():.3f} ± {acc.std():.3f} / {nmi.mean():.3f} ± "
                         f"{nmi.std():.3f}" + ("" if len(rows) == args.seeds else f" ({len(rows)})"))
        print(f"| {label} | " + " | ".join(cells) + " |")


def cmd_ninit(args):
    """The final spectral step's k-means restarts: for each constraint draw, one MVMC solve
    (defaults), then the labels of ``spectral_clustering(S, n_init=q, random_state=r)`` for
    several ``r``; ACC mean, std and range over all (draw, r)."""
    for name in args.data:
        views, y = load(name)
        n, c = y.size, int(np.unique(y).size)
        scores = defaultdict(list)
        for seed in range(args.seeds):
            ml, cl = simulate.pairwise_constraints(y, args.pairs_per_sample * n,
                                                   random_state=seed)
            S = fastmv.mvmc(views, c, ml, cl, random_state=seed).similarity()
            for q in args.n_init:
                for r in range(args.restarts):
                    lab = fastmv.spectral_clustering(S, c, n_init=q, random_state=r)
                    scores[q].append(metrics.accuracy(y, lab))
        for q in args.n_init:
            a = np.array(scores[q])
            _write(args.out, dict(data=name, method="n_init", n_init=q, acc_mean=a.mean(),
                                  acc_std=a.std(), acc_min=a.min(), acc_max=a.max(),
                                  runs=int(a.size), seed=-1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("run")
    a.add_argument("--out", required=True)
    a.add_argument("--data", nargs="+", default=DATASETS)
    a.add_argument("--C1", nargs="+", type=float, default=[1.0, 10.0, 100.0, 1000.0])
    a.add_argument("--C2", nargs="+", type=float, default=[1.0])
    a.add_argument("--seeds", type=int, default=5)
    a.add_argument("--pairs-per-sample", type=int, default=5)
    a.add_argument("--n-jobs", type=int, default=1)
    a = sub.add_parser("ninit")
    a.add_argument("--out", required=True)
    a.add_argument("--data", nargs="+", default=["synthetic-100", "BBCSport.mat"])
    a.add_argument("--n-init", nargs="+", type=int, default=[1, 3, 10])
    a.add_argument("--seeds", type=int, default=3)
    a.add_argument("--restarts", type=int, default=5)
    a.add_argument("--pairs-per-sample", type=int, default=5)
    a = sub.add_parser("table")
    a.add_argument("--out", required=True, nargs="+")
    a.add_argument("--seeds", type=int, default=5)
    args = p.parse_args(argv)
    {"run": cmd_run, "table": cmd_table, "ninit": cmd_ninit}[args.cmd](args)


if __name__ == "__main__":
    main()
