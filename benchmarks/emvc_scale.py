"""EMVC at the size of its paper's largest dataset: planted data of CCV's shape.

``python -m benchmarks.emvc_scale [--n 9317] [--seed 0] [--max-rank auto]`` builds ``n``
samples in 20 planted Gaussian clusters seen through three dense views of 100, 80 and 60
features (CCV: 9317 videos, 3 views, 20 classes; EMVC's paper), runs the README's route
(``P = [fastmv.transition_matrix(X) for X in views]``, ``fastmv.emvc(P, 0.01, 0.01)`` with
every other option at its default and the default threads) and prints one JSON line: wall
seconds of the graphs and of the solve, ACC / NMI, iterations, how each iteration's SVT
was computed, and the peak resident memory next to the ``(3m + 3) n²`` floor of the state.
The figures are quoted in docs/emvc.md and docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

N_CLUSTERS = 20
DIMS = (100, 80, 60)


def planted_views(n, seed=0):
    """Three dense views of ``n`` samples in 20 planted clusters (class-sorted): centres
    ``N(0, 4²)`` per feature, unit Gaussian noise, as ``fastmv``'s common test problems."""
    rng = np.random.default_rng(seed)
    y = np.sort(np.arange(n) % N_CLUSTERS)
    views = []
    for d in DIMS:
        centres = rng.normal(0.0, 4.0, (N_CLUSTERS, d))
        views.append(centres[y] + rng.normal(0.0, 1.0, (n, d)))
    return views, y


def run(n, seed=0, max_rank="auto"):
    """One solve by the README's route; returns the record printed by ``main``."""
    import fastmv
    from fastmv import metrics

    views, y = planted_views(n, seed)
    t0 = time.perf_counter()
    P = [fastmv.transition_matrix(X) for X in views]
    t1 = time.perf_counter()
    res = fastmv.emvc(P, 0.01, 0.01, n_clusters=N_CLUSTERS, random_state=seed,
                      max_rank=max_rank)
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # KiB -> GiB
    floor = (3 * len(P) + 3) * n * n * 8 / 2 ** 30
    return dict(n=n, seed=seed, max_rank=max_rank, graphs_s=round(t1 - t0, 2),
                solve_s=round(t2 - t1, 2), total_s=round(t2 - t0, 2),
                acc=round(metrics.accuracy(y, res.labels), 4),
                nmi=round(metrics.nmi(y, res.labels), 4), n_iter=res.n_iter,
                converged=bool(res.converged),
                svt=" ".join(f"{m}:{int(r)}" for m, r in zip(res.svt_method, res.rank)),
                peak_rss_gib=round(peak, 2), state_floor_gib=round(floor, 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=9317)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rank", default="auto",
                    help="the solver's max_rank: auto, an integer, or none (exact SVT)")
    args = ap.parse_args(argv)
    mr = args.max_rank
    mr = None if mr.lower() == "none" else (mr if mr == "auto" else int(mr))
    print(json.dumps(run(args.n, args.seed, mr)), flush=True)


if __name__ == "__main__":
    main()
