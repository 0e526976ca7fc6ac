"""Sweeps behind docs/cmvnmf.md (not part of the test-suite).

    python -m tools.sweep_cmvnmf budget --out budget.jsonl [--seeds 3] [--max-iter 100]
    python -m tools.sweep_cmvnmf defaults --out defaults.jsonl [--seeds 5] [--max-iter 100]
    python -m tools.sweep_cmvnmf spread --out spread.jsonl [--seeds 10] [--n-init 1 3 5]
    python -m tools.sweep_cmvnmf table --out FILE.jsonl

``budget``: accuracy against the number of inter-view constraints on Handwritten (fou, pix,
zer) and Reuters-1200 (English, French, German), unmapped as in the paper (95% of each view
kept, rows permuted), ratios 0.05% … 10% under both readings of
``fastmv.simulate.inter_view_constraints(budget=...)``.

``defaults``: ``normalize`` × ``beta`` (``n_init`` = the first ``--n-init``) on every shared dataset with mapped views (rows in the
original order, all samples), 5% inter-view constraints (``budget="pairs"``, the default),
against ``fastmv.kmeans`` on the concatenation of the views with ℓ2-normalised rows.

``spread``: Handwritten 5% (unmapped, as ``budget``), ACC over seeds for several ``n_init``
(single starts recorded in the order ``n_init`` runs them; the table keeps, per seed, the
start of lowest final objective among the first ``n_init``).

Scores: accuracy and NMI of every view's labels against that view's classes, averaged over
the views. Every run appends one JSON line (runs already in the file are skipped, so an
interrupted sweep resumes). Datasets are read from ``$FASTMV_SHARED_DATASETS`` (default
``../shared/datasets``). Runs use ``n_jobs=1`` so that several sweeps can share the machine.
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

DATASETS = ["3Sources.mat", "BBCSport.mat", "Handwritten.mat", "Reuters-1200.mat", "WebKB.mat"]
RATIOS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1]


def _data_dir():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.environ.get("FASTMV_SHARED_DATASETS",
                          os.path.join(os.path.dirname(here), "shared", "datasets"))


def load(name, paper_views=False):
    """Views and labels; ``paper_views``: the three views the CMVNMF paper used."""
    views, y = fastmv.datasets.load_mat(os.path.join(_data_dir(), name))
    if paper_views and name == "Handwritten.mat":
        views = [views[i] for i in (1, 4, 5)]      # fou, pix, zer
    elif paper_views and name == "Reuters-1200.mat":
        views = views[:3]                          # English, French, German
    return [sp.csr_matrix(X) if _mostly_zero(X) else X for X in views], y


def _mostly_zero(X):
    return not sp.issparse(X) and np.count_nonzero(X) < 0.2 * X.size


def _l2_rows(X):
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        norms = np.linalg.norm(X, axis=1)
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(scale) @ X) if sp.issparse(X) else X * scale[:, None]


def concatenated(views):
    blocks = [_l2_rows(X) for X in views]
    if any(sp.issparse(B) for B in blocks):
        return sp.hstack([sp.csr_matrix(B) for B in blocks]).tocsr()
    return np.hstack(blocks)


def _score(ys, labels):
    acc = [float(metrics.accuracy(y, lab)) for y, lab in zip(ys, labels)]
    nmi = [float(metrics.nmi(y, lab)) for y, lab in zip(ys, labels)]
    return dict(acc=float(np.mean(acc)), nmi=float(np.mean(nmi)), acc_views=acc)


def _done(path):
    done = set()
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                done.add(json.loads(line)["key"])
    return done


def _write(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _run_cmvnmf(Xs, c, ml, cl, seed, max_iter, **kw):
    t = time.perf_counter()
    res = fastmv.cmvnmf(Xs, c, ml, cl, random_state=seed, max_iter=max_iter, n_jobs=1, **kw)
    return res, time.perf_counter() - t


def cmd_budget(args):
    done = _done(args.out)
    for name in args.data or ["Handwritten.mat", "Reuters-1200.mat"]:
        views, y = load(name, paper_views=True)
        c = int(np.unique(y).size)
        for budget in ("samples", "pairs"):
            for ratio in args.ratios:
                for seed in range(args.seeds):
                    key = f"{name}|{budget}|{ratio}|{seed}"
                    if key in done:
                        continue
                    rng = np.random.default_rng(1000 + seed)
                    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
                    ml, cl = simulate.inter_view_constraints(ys, ratio=ratio, budget=budget,
                                                             random_state=rng)
                    n_pairs = int(sum(len(p) for p in ml.values())
                                  + sum(len(p) for p in cl.values()))
                    res, secs = _run_cmvnmf(Xs, c, ml, cl, seed, args.max_iter, n_init=1)
                    _write(args.out, dict(key=key, data=name, budget=budget, ratio=ratio,
                                          seed=seed, n_pairs=n_pairs, n_iter=res.n_iter,
                                          seconds=secs, **_score(ys, res.labels)))


def cmd_defaults(args):
    done = _done(args.out)
    configs = [(nz, 1.0) for nz in ("l2", "l1", None)] + [("l2", b) for b in args.betas
                                                          if b != 1.0]
    if args.only_default:
        configs = [("l2", 1.0)]
    for name in args.data or DATASETS:
        views, y = load(name, paper_views=args.paper_views)
        c = int(np.unique(y).size)
        ys = [y] * len(views)
        for seed in range(args.seeds):
            key = f"{name}|kmeans|{seed}"
            if key not in done:
                lab = fastmv.kmeans(concatenated(views), c, random_state=seed).labels
                _write(args.out, dict(key=key, data=name, method="kmeans", seed=seed,
                                      **_score([y], [lab])))
        for normalize, beta in configs:
            for seed in range(args.seeds):
                key = f"{name}|cmvnmf|{normalize}|{beta}|{seed}"
                if key in done:
                    continue
                ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=seed)
                res, secs = _run_cmvnmf(views, c, ml, cl, seed, args.max_iter,
                                        normalize=normalize, beta=beta, n_init=args.n_init[0])
                _write(args.out, dict(key=key, data=name, method="cmvnmf", normalize=normalize,
                                      beta=beta, n_init=args.n_init[0], seed=seed,
                                      n_iter=res.n_iter, seconds=secs,
                                      **_score(ys, res.labels)))


def cmd_spread(args):
    """Single starts in the order ``cmvnmf(n_init=k, random_state=seed)`` runs them (one
    Generator feeds every start), so ``n_init=k`` is the best of the first ``k`` starts."""
    done = _done(args.out)
    views, y = load("Handwritten.mat", paper_views=True)
    for seed in args.seed_list or range(args.seeds):
        if all(f"spread|{seed}|{s}" in done for s in range(max(args.n_init))):
            continue
        rng = np.random.default_rng(1000 + seed)
        Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
        ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
        gen = np.random.default_rng(seed)
        for start in range(max(args.n_init)):
            res, secs = _run_cmvnmf(Xs, 10, ml, cl, gen, args.max_iter, n_init=1)
            _write(args.out, dict(key=f"spread|{seed}|{start}", seed=seed, start=start,
                                  final=float(res.objective[-1]), n_iter=res.n_iter,
                                  seconds=secs, **_score(ys, res.labels)))


def _spread_table(records, n_inits):
    by_seed = defaultdict(list)
    for r in records:
        by_seed[r["seed"]].append(r)
    print("| n_init | ACC mean ± std | NMI mean ± std | ACC max − min over seeds | seeds |")
    print("|---|---|---|---|---|")
    for k in n_inits:
        kept = [min((r for r in rs if r["start"] < k), key=lambda r: r["final"])
                for rs in by_seed.values() if len(rs) >= k]
        acc = [r["acc"] for r in kept]
        print(f"| {k} | {_ms(acc)} | {_ms([r['nmi'] for r in kept])} | "
              f"{max(acc) - min(acc):.3f} | {len(kept)} |")


def _ms(values):
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}"


def _budget_table(records):
    cell = defaultdict(list)
    for r in records:
        cell[(r["ratio"], r["data"], r["budget"])].append(r)
    cols = [(d, b) for d in ("Handwritten.mat", "Reuters-1200.mat") for b in ("samples", "pairs")]
    print("| ratio | " + " | ".join(f"{d[:-4]} `{b}`: pairs, ACC, NMI" for d, b in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for ratio in sorted({k[0] for k in cell}):
        row = []
        for d, b in cols:
            rs = cell.get((ratio, d, b), [])
            row.append(f"{np.mean([r['n_pairs'] for r in rs]) / 3:.0f}, {_ms([r['acc'] for r in rs])}"
                       f", {_ms([r['nmi'] for r in rs])}" if rs else "")
        print(f"| {ratio:.2%} | " + " | ".join(row) + " |")


def cmd_table(args):
    groups = defaultdict(list)
    with open(args.out) as f:
        records = [json.loads(line) for line in f]
    if records and "start" in records[0]:
        return _spread_table(records, args.n_init)
    if records and "budget" in records[0]:
        return _budget_table(records)
    for r in records:
        if "budget" in r:
            groups[(r["data"], r["budget"], r["ratio"])].append(r)
        elif r["method"] == "kmeans":
            groups[(r["data"], "concatenated k-means")].append(r)
        else:
            n_init = f", n_init={r['n_init']}" if r.get("n_init", 1) != 1 else ""
            groups[(r["data"], f"normalize={r['normalize']}, beta={r['beta']:g}{n_init}")].append(r)
    print("| setting | pairs per view pair | ACC | NMI | sweeps | ACC max − min |")
    print("|---|---|---|---|---|---|")
    for key, rs in groups.items():
        acc = [r["acc"] for r in rs]
        pairs = f"{np.mean([r['n_pairs'] for r in rs]) / 3:.0f}" if "n_pairs" in rs[0] else ""
        sweeps = f"{np.mean([r['n_iter'] for r in rs]):.0f}" if "n_iter" in rs[0] else ""
        label = " / ".join(f"{k:.2%}" if isinstance(k, float) and k < 1 else str(k)
                           for k in key)
        print(f"| {label} | {pairs} | {_ms(acc)} | {_ms([r['nmi'] for r in rs])} | {sweeps} "
              f"| {max(acc) - min(acc):.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["budget", "defaults", "spread", "table"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", nargs="*")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--ratios", type=float, nargs="*", default=RATIOS)
    ap.add_argument("--betas", type=float, nargs="*", default=[0.1, 1.0, 10.0])
    ap.add_argument("--n-init", type=int, nargs="*", default=[1, 3, 5])
    ap.add_argument("--seed-list", type=int, nargs="*")
    ap.add_argument("--only-default", action="store_true",
                    help="defaults: only normalize='l2', beta=1")
    ap.add_argument("--paper-views", action="store_true",
                    help="defaults: Handwritten fou, pix, zer and Reuters EN, FR, DE only")
    args = ap.parse_args()
    {"budget": cmd_budget, "defaults": cmd_defaults, "spread": cmd_spread,
     "table": cmd_table}[args.what](args)


if __name__ == "__main__":
    main()
