"""fastmv.opimc with its defaults against imml's OPIMC (``imml.cluster.OPIMC``, engine "python").

One command, both settings, timed in the same process with the calls alternated (machine load
hits both alike); the medians of the per-pair times and of the per-pair ratios are printed::

    python -m benchmarks.compare_opimc_imml                  # both settings
    python -m benchmarks.compare_opimc_imml --what handwritten --repeat 7

Settings: Handwritten (fou, fac, kar, pix, zer), 40 % of each view missing, rows shuffled,
chunk 50 (the OPIMC paper's Digit setting); and synthetic data, n = 100 000, 5 dense views
of 200 features, 20 clusters, 40 % missing, chunk 2000. imml runs one pass (its default
setting); fastmv runs with its defaults (``chunk_size`` as stated). Both get the same data,
mask and sample order. imml's OPIMC imputes missing rows with 0 and does not normalise, so it
is given the views scaled to unit row norm (what ``fastmv.opimc`` does internally); fastmv
gets the raw views and the mask. imml is imported only when the comparison runs; without it
the script says so and exits cleanly. Set ``NUMBA_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS``
for one-thread figures.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import time

import numpy as np

import fastmv
from fastmv.metrics import nmi
from fastmv.simulate import incomplete_mask

from ._shared_data import shared_dataset
from .references.opimc import synthetic_views

HW_VIEWS = [1, 0, 2, 4, 5]   # fou, fac, kar, pix, zer (file order fac, fou, kar, mor, pix, zer)


def imml_opimc(views_norm, mask, n_clusters, *, chunk_size, seed, alpha=0.1, n_passes=1):
    """Labels of imml's OPIMC (engine "python") on unit-row views, missing rows NaN."""
    from imml.cluster import OPIMC  # noqa: PLC0415 (optional: only this comparison needs it)
    Xs = []
    for v, X in enumerate(views_norm):
        X = np.array(X, dtype=np.float64)
        X[~mask[:, v]] = np.nan
        Xs.append(X)
    est = OPIMC(n_clusters=n_clusters, alpha=alpha, num_passes=n_passes, max_iter=30,
                tol=1e-6, batch_size=chunk_size, random_state=seed, engine="python")
    return np.asarray(est.fit_predict(Xs))


def unit_rows(X):
    X = np.asarray(X, dtype=np.float64)
    nrm = np.linalg.norm(X, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return X / nrm


def _handwritten(seed):
    path = shared_dataset("Handwritten.mat")
    if path is None:
        return None
    views, y = fastmv.datasets.load_mat(path, views=HW_VIEWS)
    perm = np.random.default_rng(seed).permutation(y.size)
    views = [np.ascontiguousarray(X[perm]) for X in views]
    return views, y[perm], incomplete_mask(y.size, len(views), 0.4, random_state=seed)


def _synthetic(n):
    views, y = synthetic_views(n, 5, 200, 20, 0)
    return views, y, incomplete_mask(n, 5, 0.4, random_state=0)


def paired(f_ours, f_imml, repeat):
    """Alternate the two calls ``repeat`` times; -> (times ours, times imml, outputs)."""
    t_ours, t_imml = [], []
    out_ours = out_imml = None
    for _ in range(repeat):
        t = time.perf_counter()
        out_ours = f_ours()
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        out_imml = f_imml()
        t_imml.append(time.perf_counter() - t)
    return np.array(t_ours), np.array(t_imml), out_ours, out_imml


def compare(name, data, c, chunk_size, repeat, n_jobs, seed=0):
    """Time both on one setting; print and return the medians and NMIs."""
    views, y, mask = data
    norm = [unit_rows(X) for X in views]
    k = min(y.size, 3 * chunk_size)
    fastmv.opimc([X[:k] for X in views], c, mask=mask[:k], chunk_size=chunk_size,
                 random_state=seed, n_jobs=n_jobs)                          # compile / load
    imml_opimc([X[:k] for X in norm], mask[:k], c, chunk_size=chunk_size, seed=seed)
    t_ours, t_imml, res, lab = paired(
        lambda: fastmv.opimc(views, c, mask=mask, chunk_size=chunk_size, random_state=seed,
                             n_jobs=n_jobs),
        lambda: imml_opimc(norm, mask, c, chunk_size=chunk_size, seed=seed), repeat)
    ratios = t_imml / t_ours
    row = {"setting": name, "fastmv_s": float(np.median(t_ours)),
           "imml_s": float(np.median(t_imml)), "ratio": float(np.median(ratios)),
           "ratio_min": float(ratios.min()), "ratio_max": float(ratios.max()),
           "nmi_fastmv": nmi(y, res.labels), "nmi_imml": nmi(y, lab), "passes": res.n_iter}
    print(f"{name} (fastmv defaults, n_jobs={n_jobs}; imml 1 pass): fastmv "
          f"{row['fastmv_s']:.3f} s ({row['passes']} passes, NMI {row['nmi_fastmv']:.4f}), "
          f"imml {row['imml_s']:.3f} s (NMI {row['nmi_imml']:.4f}): same-process ratio "
          f"median {row['ratio']:.2f}x (pairs {row['ratio_min']:.2f}-{row['ratio_max']:.2f}, "
          f"{repeat} pairs)", flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--what", choices=["both", "handwritten", "synthetic"], default="both")
    p.add_argument("--repeat", type=int, default=5, help="alternated pairs (Handwritten)")
    p.add_argument("--repeat-synthetic", type=int, default=3)
    p.add_argument("--n", type=int, default=100_000, help="samples of the synthetic setting")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1,
                   help="Handwritten: seeds seed .. seed + seeds - 1 (sample order and mask)")
    p.add_argument("--n-jobs", type=lambda s: None if s == "None" else int(s), default=None)
    args = p.parse_args(argv)
    if importlib.util.find_spec("imml") is None:
        print("imml is not installed: nothing to compare (pip install imml)")
        return []
    print(f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    rows = []
    if args.what in ("both", "handwritten"):
        for seed in range(args.seed, args.seed + args.seeds):
            data = _handwritten(seed)
            if data is None:
                print("Handwritten.mat not found (set FASTMV_SHARED_DATASETS): skipped")
                break
            rows.append(compare(f"Handwritten 5 views, 40% missing, chunk 50, seed {seed}",
                                data, 10, 50, args.repeat, args.n_jobs, seed))
        if args.seeds > 1 and rows:
            print(f"Handwritten, {len(rows)} seeds: median ratio "
                  f"{np.median([r['ratio'] for r in rows]):.2f}x, mean NMI fastmv "
                  f"{np.mean([r['nmi_fastmv'] for r in rows]):.4f}, imml "
                  f"{np.mean([r['nmi_imml'] for r in rows]):.4f}")
    if args.what in ("both", "synthetic"):
        rows.append(compare(f"synthetic n={args.n}, 5x200, c=20, 40% missing, chunk 2000",
                            _synthetic(args.n), 20, 2000, args.repeat_synthetic,
                            args.n_jobs))
    return rows


if __name__ == "__main__":
    main()
