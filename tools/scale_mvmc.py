"""Scale and speed runs of fastmv.mvmc (not part of the test-suite). Run from the repository
root as a module, so that this checkout's ``fastmv`` and ``benchmarks`` are imported:

    python -m tools.scale_mvmc scale --n 50000 --k 50 --max-iter 10
        synthetic n × (2 views × 200 dims), 10 clusters, |Ω| = 20 n: time per outer iteration,
        time of the final spectral step (products with S only) and how many products it
        took, peak traced memory (NumPy allocations, tracemalloc) and peak RSS, NMI.
    python -m tools.scale_mvmc speed --n 5000 --iters 3 [--n-jobs 1] [--repeat 3]
        fastmv.mvmc against the dense NumPy implementation (benchmarks/references/mvmc.py)
        on the same bases, same iterations: whole-call and per-iteration ratios.
    python -m tools.scale_mvmc paper --data BBCSport.mat
        time to reach the optimum: fastmv defaults against the paper's algorithm (plain
        projected gradient, step 1/(2(C1 k² + C2))) run for as long.
    python -m tools.scale_mvmc quality --data BBCSport.mat --draws 5 [--baseline]
        NMI / accuracy over constraint draws (5000 pairs), optionally with the
        concatenated-k-means baseline.

Datasets are read from ``$FASTMV_SHARED_DATASETS`` (default ``../shared/datasets``).
"""
import argparse
import os
import resource
import time
import tracemalloc

import numpy as np

import fastmv
from benchmarks.bench_mvmc import _speedups
from benchmarks.references.mvmc import synthetic_views
from fastmv import metrics, simulate
from fastmv._core._preprocessing import normalize_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("FASTMV_SHARED_DATASETS",
                      os.path.join(os.path.dirname(ROOT), "shared", "datasets"))


def _count_products(operator_class):
    counter = {"calls": 0, "columns": 0}
    original = operator_class._matmat

    def counted(self, X):
        X = np.asarray(X)
        counter["calls"] += 1
        counter["columns"] += 1 if X.ndim == 1 else X.shape[1]
        return original(self, X)

    operator_class._matmat = counted
    return counter


def cmd_scale(args):
    views, y = synthetic_views(args.n)
    ml, cl = simulate.pairwise_constraints(y, 20 * args.n, random_state=0)
    v, yy = synthetic_views(300)
    m2, c2 = simulate.pairwise_constraints(yy, 2000, random_state=0)
    small = fastmv.mvmc(v, 10, m2, c2, max_iter=2, random_state=0)  # compile / load kernels
    data_bytes = sum(X.nbytes for X in views) + ml.nbytes + cl.nbytes
    counter = _count_products(type(small.similarity()))
    stamps = []
    history = []

    def cb(info):
        it, state = info.iteration, info.state
        stamps.append(time.perf_counter())
        history.append((state["objective"], state["rank"], state["clip_nnz"]))
        print(f"  iteration {it}: {stamps[-1] - t0:8.1f} s  objective {state['objective']:.8g}  "
              f"rank {state['rank']}  clipped {state['clip_nnz'] / args.n ** 2:.1%}", flush=True)

    tracemalloc.start()
    t0 = time.perf_counter()
    res = fastmv.mvmc(views, 10, ml, cl, k=args.k, max_iter=args.max_iter, random_state=0,
                      callback=cb, n_jobs=args.n_jobs)
    t_total = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_iter = np.diff([t0] + stamps)
    later = np.median(per_iter[1:]) if per_iter.size > 1 else float("nan")
    print(f"n = {args.n}, k = {args.k}, |Ω| = {20 * args.n} pairs, {res.n_iter} iterations "
          f"(converged: {res.converged})")
    print(f"total {t_total:.1f} s; first iteration (incl. SVD/init) {per_iter[0]:.1f} s, "
          f"later iterations median {later:.1f} s; spectral step "
          f"{t0 + t_total - stamps[-1]:.1f} s with {counter['calls']} products "
          f"({counter['columns']} vectors)")
    nn_gib = args.n ** 2 * 8 / 2**30
    print(f"peak traced NumPy memory {peak / 2**20:.0f} MiB (input data "
          f"{data_bytes / 2**20:.0f} MiB; one n × n float64 array would be {nn_gib:.1f} GiB); "
          f"peak RSS {rss:.0f} MiB")
    print(f"NMI {metrics.nmi(y, res.labels):.4f}, accuracy {metrics.accuracy(y, res.labels):.4f}")


def cmd_speed(args):
    views, y = synthetic_views(args.n)
    ml, cl = simulate.pairwise_constraints(y, 20 * args.n, random_state=0)
    v, yy = synthetic_views(300)
    m2, c2 = simulate.pairwise_constraints(yy, 2000, random_state=0)
    fastmv.mvmc(v, 10, m2, c2, max_iter=2, random_state=0)
    for rep in range(args.repeat):
        whole, per = _speedups(views, y, ml, cl, 10, args.iters, k=args.k, n_jobs=args.n_jobs)
        print(f"n = {args.n}, k = {args.k}, {args.iters} outer iterations: whole call "
              f"{whole:.1f}x, per iteration {per:.1f}x (NumPy time / fastmv time)", flush=True)


def _load(name):
    return fastmv.datasets.load_mat(os.path.join(DATA, name))


def cmd_paper(args):
    views, y = _load(args.data)
    c = int(np.unique(y).size)
    ml, cl = simulate.pairwise_constraints(y, 5000, random_state=0)
    t0 = time.perf_counter()
    fast = fastmv.mvmc(views, c, ml, cl, random_state=0)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    paper = fastmv.mvmc(views, c, ml, cl, accelerated=False, step="paper", tol=0.0,
                        max_iter=args.max_iter, random_state=0)
    t_paper = time.perf_counter() - t0
    print(f"{args.data}: fastmv defaults {fast.n_iter} iterations, {t_fast:.1f} s, objective "
          f"{fast.objective[-1]:.8g}, NMI {metrics.nmi(y, fast.labels):.4f}")
    print(f"paper's algorithm (plain, L = 2(C1 k² + C2)) {paper.n_iter} iterations, "
          f"{t_paper:.1f} s, objective {paper.objective[-1]:.8g} "
          f"({paper.objective[-1] / fast.objective[-1] - 1:+.2%} above), "
          f"NMI {metrics.nmi(y, paper.labels):.4f}")


def cmd_quality(args):
    views, y = _load(args.data)
    c = int(np.unique(y).size)
    rows = []
    for draw in range(args.draws):
        ml, cl = simulate.pairwise_constraints(y, 5000, random_state=draw)
        t0 = time.perf_counter()
        res = fastmv.mvmc(views, c, ml, cl, random_state=0)
        rows.append((metrics.nmi(y, res.labels), metrics.accuracy(y, res.labels),
                     time.perf_counter() - t0, res.n_iter))
        print(f"  draw {draw}: NMI {rows[-1][0]:.4f} acc {rows[-1][1]:.4f} "
              f"({rows[-1][3]} iterations, {rows[-1][2]:.1f} s)", flush=True)
    a = np.array(rows)
    print(f"{args.data}, 5000 pairs, {args.draws} draws: NMI {a[:, 0].mean():.4f} ± "
          f"{a[:, 0].std():.4f}, accuracy {a[:, 1].mean():.4f} ± {a[:, 1].std():.4f}")
    if args.baseline:
        import scipy.sparse as sp
        blocks = []
        for X in views:
            X = normalize_rows(X, "l2")
            blocks.append(X if sp.issparse(X) else sp.csr_matrix(X))
        Xc = sp.hstack(blocks).tocsr()
        scores = []
        for seed in range(args.draws):
            lab = fastmv.kmeans(Xc, c, random_state=seed).labels
            scores.append((metrics.nmi(y, lab), metrics.accuracy(y, lab)))
        s = np.array(scores)
        print(f"  concatenated k-means (ℓ2 rows per view, no constraints), {args.draws} seeds: "
              f"NMI {s[:, 0].mean():.4f} ± {s[:, 0].std():.4f}, accuracy {s[:, 1].mean():.4f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("scale")
    a.add_argument("--n", type=int, default=50000)
    a.add_argument("--k", type=int, default=50)
    a.add_argument("--max-iter", type=int, default=10)
    a.add_argument("--n-jobs", type=int, default=None)
    a = sub.add_parser("speed")
    a.add_argument("--n", type=int, default=5000)
    a.add_argument("--k", type=int, default=100)
    a.add_argument("--iters", type=int, default=3)
    a.add_argument("--repeat", type=int, default=1)
    a.add_argument("--n-jobs", type=int, default=None)
    a = sub.add_parser("paper")
    a.add_argument("--data", default="BBCSport.mat")
    a.add_argument("--max-iter", type=int, default=100)
    a = sub.add_parser("quality")
    a.add_argument("--data", default="BBCSport.mat")
    a.add_argument("--draws", type=int, default=5)
    a.add_argument("--baseline", action="store_true")
    args = p.parse_args(argv)
    commands = {"scale": cmd_scale, "speed": cmd_speed, "paper": cmd_paper,
                "quality": cmd_quality}
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
