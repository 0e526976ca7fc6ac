"""CMVNMF report runs: real-data quality and speed against the NumPy reference.

    python -m tools.scale_cmvnmf quality [--draws 5] [--data handwritten|reuters|both]
    python -m tools.scale_cmvnmf speed [--n 20000] [--sweeps 20]

(from the repository root; datasets from ``$FASTMV_SHARED_DATASETS``, default
``../shared/datasets``)

``quality``: Handwritten (fou, pix, zer; views 1, 4, 5 of ../shared/datasets/Handwritten.mat)
and Reuters-1200 (first three views of the file: English, French, German, used as CSR),
made unmapped (95% of each view kept, rows permuted per view), inter-view constraints at
0% / 0.5% / 5% of the cross pairs of every view pair; accuracy and NMI per view averaged
over draws (each draw: new unmapped data, constraints and initialisation).

``speed``: seconds per sweep of fastmv's kernels against ``tests.cmvnmf.naive.cmvnmf_reference``
(NumPy + scipy.sparse, the same updates from the same initial factors) in the same process,
on the two real settings (5%) and on synthetic 3 views × n. Run it with
``NUMBA_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` set to control threads.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import fastmv
from benchmarks._common import best_of
from fastmv import datasets, metrics, simulate

DATA = Path(os.environ.get("FASTMV_SHARED_DATASETS",
                           Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def load(name):
    if name == "handwritten":
        views, y = datasets.load_mat(DATA / "Handwritten.mat")
        return [views[i] for i in (1, 4, 5)], y, "Handwritten fou,pix,zer"
    views, y = datasets.load_mat(DATA / "Reuters-1200.mat")
    return [sp.csr_matrix(v) for v in views[:3]], y, "Reuters-1200 EN,FR,DE (CSR)"


def quality(name, draws, ratios=(0.0, 0.005, 0.05)):
    views, y, title = load(name)
    c = len(np.unique(y))
    print(f"\n## {title}: n={len(y)}, c={c}, d={[v.shape[1] for v in views]}, {draws} draws")
    for ratio in ratios:
        accs, nmis, iters, secs = [], [], [], []
        for draw in range(draws):
            rng = np.random.default_rng(1000 + draw)
            Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
            if ratio > 0:
                ml, cl = simulate.inter_view_constraints(ys, ratio=ratio, random_state=rng)
            else:
                ml, cl = {}, {}
            t = time.perf_counter()
            res = fastmv.cmvnmf(Xs, c, ml, cl, random_state=rng)
            secs.append(time.perf_counter() - t)
            accs.append([metrics.accuracy(ys[a], res.labels[a]) for a in range(len(Xs))])
            nmis.append([metrics.nmi(ys[a], res.labels[a]) for a in range(len(Xs))])
            iters.append(res.n_iter)
        accs, nmis = np.array(accs), np.array(nmis)
        per_acc = " ".join(f"{v:.3f}" for v in accs.mean(0))
        per_nmi = " ".join(f"{v:.3f}" for v in nmis.mean(0))
        print(f"ratio {ratio:6.1%}: ACC mean {accs.mean():.3f} ± {accs.mean(1).std():.3f} "
              f"(per view {per_acc}) | NMI mean {nmis.mean():.3f} ± {nmis.mean(1).std():.3f} "
              f"(per view {per_nmi}) | sweeps {np.mean(iters):.0f} | {np.mean(secs):.1f} s/run")


def speed_case(title, Xs, ml, cl, c, sweeps, repeat=3):
    from benchmarks.references.cmvnmf import cmvnmf_reference
    from fastmv._cmvnmf._solver import Problem, _prepare
    data = _prepare(Xs, c, ml, cl, 1.0, "l2")
    Xn, c, blocks = data.views, data.n_clusters, data.blocks
    rng = np.random.default_rng(0)
    U0 = [rng.random((X.shape[1], c)) for X in Xn]
    V0 = [rng.random((X.shape[0], c)) for X in Xn]
    n_pairs = sum(len(v) for v in ml.values()) + sum(len(v) for v in cl.values())

    def fast():
        p = Problem(Xn, blocks, U0, V0, beta=1.0, rescale=True)
        for _ in range(sweeps):
            p.sweep()
            p.objective()
        return p

    def ref():
        return cmvnmf_reference(Xn, ml, cl, U0, V0, sweeps, rescale=True)

    p = fast()  # warm-up (compile) + equality check
    U, V, h = ref()
    err = max(np.abs(V[a] - p.V(a)).max() / np.abs(V[a]).max() for a in range(len(Xn)))
    t_fast = best_of(fast, repeat)
    t_ref = best_of(ref, repeat)
    print(f"{title}: |Ω|={n_pairs}, {sweeps} sweeps: fastmv {t_fast / sweeps * 1e3:.1f} ms/sweep, "
          f"NumPy/scipy.sparse {t_ref / sweeps * 1e3:.1f} ms/sweep, speedup {t_ref / t_fast:.2f}x "
          f"(max rel. diff of V {err:.1e})")
    return t_ref / t_fast


def synthetic(n, d=(100, 200, 50), c=10, n_constraints=200_000, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = []
    for dv in d:
        centers = rng.gamma(1.0, 1.0, (c, dv))
        X = centers[y] + rng.gamma(1.0, 0.7, (n, dv))
        views.append(sp.csr_matrix(X * (rng.random(X.shape) < 0.05)) if sparse else X)
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
    ml, cl = simulate.inter_view_constraints(ys, n_constraints=n_constraints, random_state=rng)
    return Xs, ml, cl


def speed(n, sweeps):
    import numba
    print(f"threads: numba {numba.get_num_threads()}")
    for name in ("handwritten", "reuters"):
        views, y, title = load(name)
        rng = np.random.default_rng(0)
        Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
        ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
        speed_case(f"{title}, 5%", Xs, ml, cl, len(np.unique(y)), sweeps)
    for sparse in (False, True):
        Xs, ml, cl = synthetic(n, sparse=sparse)
        kind = "CSR, 5% nonzero" if sparse else "dense"
        speed_case(f"synthetic 3 views × n={n} ({kind}, d=100/200/50)", Xs, ml, cl, 10, sweeps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["quality", "speed"])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--data", default="both")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--sweeps", type=int, default=20)
    args = ap.parse_args()
    if args.what == "quality":
        for name in (["handwritten", "reuters"] if args.data == "both" else [args.data]):
            quality(name, args.draws)
    else:
        speed(args.n, args.sweeps)


if __name__ == "__main__":
    main()
