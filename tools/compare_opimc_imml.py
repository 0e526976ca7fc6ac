"""Compare fastmv.opimc with imml's OPIMC (``imml.cluster.OPIMC``, engine "python").

Run with the interpreter of a separate venv that has imml (never install imml into the
project's environment)::

    python -m venv /tmp/imml-venv
    /tmp/imml-venv/bin/pip install imml numpy scipy numba
    /tmp/imml-venv/bin/pip install -e .      # fastmv itself, from the repository root
    /tmp/imml-venv/bin/python -m tools.compare_opimc_imml quality
    /tmp/imml-venv/bin/python -m tools.compare_opimc_imml speed-handwritten
    /tmp/imml-venv/bin/python -m tools.compare_opimc_imml speed-synthetic

Both methods get the same data, masks and sample order. imml's OPIMC takes a list of
``(n, d_v)`` arrays with all-NaN rows for the missing samples, imputes them with 0 and does
*not* normalise, so it is given the views already scaled to unit row norm (the paper's
hypersphere, what ``fastmv.opimc(normalize=True)`` does internally). fastmv gets the raw views
and the mask.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import fastmv
from benchmarks.references.opimc import synthetic_views
from fastmv.metrics import accuracy, nmi
from fastmv.simulate import incomplete_mask

ROOT = Path(__file__).resolve().parents[1]

DATA = Path(os.environ.get("FASTMV_SHARED_DATASETS", ROOT.parent / "shared" / "datasets")) \
    / "Handwritten.mat"
HW_VIEWS = [1, 0, 2, 4, 5]   # fou, fac, kar, pix, zer (file order fac, fou, kar, mor, pix, zer)


def imml_opimc(views_norm, mask, n_clusters, *, alpha, chunk_size, n_passes, seed,
               max_iter=30, tol=1e-6):
    from imml.cluster import OPIMC
    Xs = []
    for v, X in enumerate(views_norm):
        X = np.array(X, dtype=np.float64)
        X[~mask[:, v]] = np.nan
        Xs.append(X)
    est = OPIMC(n_clusters=n_clusters, alpha=alpha, num_passes=n_passes, max_iter=max_iter,
                tol=tol, batch_size=chunk_size, random_state=seed, engine="python")
    return np.asarray(est.fit_predict(Xs))


def unit_rows(X):
    X = np.asarray(X, dtype=np.float64)
    nrm = np.linalg.norm(X, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return X / nrm


def handwritten():
    views, y = fastmv.datasets.load_mat(DATA, views=HW_VIEWS)
    return views, y


def shuffled_instance(views, y, seed, missing=0.4):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size)
    views = [np.ascontiguousarray(X[perm]) for X in views]
    mask = incomplete_mask(y.size, len(views), missing, random_state=seed)
    return views, y[perm], mask


def quality(args):
    views0, y0 = handwritten()
    rows = []
    for passes in args.passes:
        for seed in range(args.seeds):
            views, y, mask = shuffled_instance(views0, y0, seed)
            t = time.perf_counter()
            ours = fastmv.opimc(views, 10, mask=mask, alpha=args.alpha, chunk_size=50,
                                max_iter=passes, tol=0.0, random_state=seed, init=args.init).labels
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            theirs = imml_opimc([unit_rows(X) for X in views], mask, 10, alpha=args.alpha,
                                chunk_size=50, n_passes=passes, seed=seed)
            t_imml = time.perf_counter() - t
            rows.append((passes, seed, nmi(y, ours), accuracy(y, ours), nmi(y, theirs),
                         accuracy(y, theirs), t_ours, t_imml))
            print("passes %2d seed %d  fastmv NMI %.4f ACC %.4f | imml NMI %.4f ACC %.4f | "
                  "time %.3fs vs %.3fs" % rows[-1], flush=True)
    rows = np.array(rows)
    print(f"\nHandwritten (fou, fac, kar, pix, zer), 40% missing per view, shuffled, chunk 50, "
          f"alpha {args.alpha}, fastmv init {args.init!r}, {args.seeds} seeds: mean ± sd")
    for passes in args.passes:
        r = rows[rows[:, 0] == passes]
        print(f"  {passes:2d} pass(es): fastmv NMI {r[:, 2].mean():.4f}±{r[:, 2].std():.4f} "
              f"ACC {r[:, 3].mean():.4f}±{r[:, 3].std():.4f} | imml NMI "
              f"{r[:, 4].mean():.4f}±{r[:, 4].std():.4f} ACC {r[:, 5].mean():.4f}±"
              f"{r[:, 5].std():.4f}")


def _paired(f_ours, f_imml, repeat):
    """Alternate the two calls ``repeat`` times (machine load hits both alike); best times."""
    t_ours, t_imml, out_ours, out_imml = np.inf, np.inf, None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out_ours = f_ours()
        t_ours = min(t_ours, time.perf_counter() - t)
        t = time.perf_counter()
        out_imml = f_imml()
        t_imml = min(t_imml, time.perf_counter() - t)
    return t_ours, t_imml, out_ours, out_imml


def speed_handwritten(args):
    views, y, mask = shuffled_instance(*handwritten(), seed=0)
    norm = [unit_rows(X) for X in views]
    fastmv.opimc(views, 10, mask=mask, chunk_size=50, random_state=0)        # compile / load
    for passes in args.passes:
        for n_jobs in args.n_jobs:
            t_ours, t_imml, r, lab = _paired(
                lambda: fastmv.opimc(views, 10, mask=mask, alpha=args.alpha, chunk_size=50,
                                     max_iter=passes, tol=0.0, random_state=0, n_jobs=n_jobs),
                lambda: imml_opimc(norm, mask, 10, alpha=args.alpha, chunk_size=50,
                                   n_passes=passes, seed=0), args.repeat)
            print(f"Handwritten {passes} pass(es), chunk 50 (fastmv n_jobs={n_jobs}): fastmv "
                  f"{t_ours:.4f}s (NMI {nmi(y, r.labels):.3f}), imml {t_imml:.4f}s "
                  f"(NMI {nmi(y, lab):.3f}): speed-up {t_imml / t_ours:.1f}x", flush=True)


def speed_synthetic(args):
    n, m, d, c, s = args.n, 5, 200, 20, 2000
    views, y = synthetic_views(n, m, d, c, 0)
    mask = incomplete_mask(n, m, 0.4, random_state=0)
    fastmv.opimc([X[:3 * s] for X in views], c, mask=mask[:3 * s], chunk_size=s)  # compile
    norm = [unit_rows(X) for X in views]
    for n_jobs in args.n_jobs:
        t_ours, t_imml, r, lab = _paired(
            lambda: fastmv.opimc(views, c, mask=mask, alpha=args.alpha, chunk_size=s,
                                 random_state=0, n_jobs=n_jobs),
            lambda: imml_opimc(norm, mask, c, alpha=args.alpha, chunk_size=s, n_passes=1,
                               seed=0), args.repeat)
        print(f"synthetic n={n}, {m}x{d}, c={c}, chunk {s}, 40% missing, 1 pass (fastmv "
              f"n_jobs={n_jobs}): fastmv {t_ours:.3f}s NMI {nmi(y, r.labels):.4f} | imml "
              f"{t_imml:.3f}s NMI {nmi(y, lab):.4f}: speed-up {t_imml / t_ours:.1f}x",
              flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["quality", "speed-handwritten", "speed-synthetic"])
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--init", default="random", help="fastmv's init ('random' or 'k-means++')")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--passes", type=int, nargs="+", default=None,
                   help="default: 1 10 for quality, 1 for speed-handwritten")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--n-jobs", type=lambda s: None if s == "None" else int(s), nargs="+",
                   default=[None])
    args = p.parse_args(argv)
    if args.passes is None:
        args.passes = [1, 10] if args.what == "quality" else [1]
    {"quality": quality, "speed-handwritten": speed_handwritten,
     "speed-synthetic": speed_synthetic}[args.what](args)


if __name__ == "__main__":
    main()
