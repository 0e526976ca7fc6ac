"""Sweep of MVFL's data-dependent options over the shared datasets (evidence for the defaults).

Every run: 10% partial labels (``fastmv.simulate.partial_labels(y, 0.1, random_state=s)``),
or with ``--prior pairs`` every pair among those labelled samples (must-link where the
classes agree, as the paper turns labels into pairs); seed ``s`` also seeds the solver; ACC
and NMI against the classes, ``n_iter``, ``converged`` and the CPU seconds of the solve. The
concatenated k-means baseline (all views side by side, ``fastmv.kmeans``, same seed) is
computed once per seed. One JSON object per line on stdout, so partial sweeps can be merged
and summarised::

    python tools/sweep_mvfl.py run --normalize zscore l2 --lam3 100 --seeds 0 1 2 3 4 > a.jsonl
    python tools/sweep_mvfl.py kmeans --seeds 0 1 2 3 4 > km.jsonl
    python tools/sweep_mvfl.py table a.jsonl km.jsonl

Run sweeps with one thread per process (``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1``) and
``nice``.

Datasets are read from ``$FASTMV_SHARED_DATASETS`` (default ``../shared/datasets``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import fastmv
from fastmv import metrics, simulate
from fastmv.datasets import load_mat

DATASETS = ["3Sources", "BBCSport", "WebKB", "Reuters-1200", "Handwritten"]
DATA = Path(os.environ.get("FASTMV_SHARED_DATASETS",
                           Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def load(name):
    """Views (text views as CSR) and classes of a shared dataset."""
    views, y = load_mat(DATA / f"{name}.mat")
    views = [sp.csr_matrix(v) if np.count_nonzero(v) < 0.1 * v.size else v for v in views]
    return views, np.asarray(y)


def _value(text):
    if text in ("None", "auto"):
        return None if text == "None" else text
    try:
        return float(text)
    except ValueError:
        return text


def prior_kwargs(y, kind, seed):
    """``labels=`` (10% partial labels) or ``must_link=, cannot_link=`` (all pairs among them)."""
    lab = simulate.partial_labels(y, 0.1, random_state=seed)
    if kind == "labels":
        return {"labels": lab}
    must_link, cannot_link = simulate.pairs_from_labels(lab)
    return {"must_link": must_link, "cannot_link": cannot_link}


def run(args):
    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        for norm in args.normalize:
            for lam3 in args.lam3:
                for anchor in args.anchor:
                    for s in args.seeds:
                        kw = {"normalize": _value(norm), "max_iter": args.max_iter,
                              "random_state": s, "f_step": args.f_step}
                        if lam3 != "default":
                            kw["lam3"] = _value(lam3)
                        if anchor != "default":
                            kw["anchor"] = _value(anchor)
                        if args.n_init != 1:
                            kw["n_init"] = args.n_init
                        t = time.process_time()
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always")
                            r = fastmv.mvfl(views, c, **prior_kwargs(y, args.prior, s), **kw)
                        sec = time.process_time() - t
                        row = {"dataset": name, "normalize": norm, "lam3": lam3,
                               "anchor": anchor, "prior": args.prior, "seed": s,
                               "f_step": args.f_step, "n_init": args.n_init,
                               "max_iter": args.max_iter, "acc": metrics.accuracy(y, r.labels),
                               "nmi": metrics.nmi(y, r.labels), "n_iter": int(r.n_iter),
                               "converged": bool(r.converged), "cpu_seconds": sec,
                               "warnings": sorted({type(w.message).__name__ for w in caught}),
                               "largest_cluster": int(np.bincount(r.labels).max())}
                        print(json.dumps(row), flush=True)


def kmeans_baseline(args):
    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        X = (sp.hstack(views, format="csr") if any(sp.issparse(v) for v in views)
             else np.hstack(views))
        for s in args.seeds:
            km = fastmv.kmeans(X, c, random_state=s).labels
            print(json.dumps({"dataset": name, "normalize": "kmeans", "lam3": "-",
                              "prior": "-", "seed": s,
                              "acc": metrics.accuracy(y, km), "nmi": metrics.nmi(y, km)}),
                  flush=True)


def _key(r):
    return (r["dataset"], r.get("prior", "labels"), r["normalize"], str(r["lam3"]),
            str(r.get("anchor", "default")), r.get("n_init", 1), r.get("f_step", "-"))


def table(args):
    """Markdown table: ACC/NMI mean ± std (population std over seeds), converged runs,
    mean iterations and CPU seconds per solve."""
    rows = [json.loads(line) for f in args.files for line in open(f) if line.strip()]
    print("| dataset | setting | ACC | NMI | converged | n_iter | CPU s | seeds |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted({_key(r) for r in rows}):
        sel = [r for r in rows if _key(r) == key]
        acc = np.array([r["acc"] for r in sel])
        nmi = np.array([r["nmi"] for r in sel])
        if key[2] == "kmeans":
            setting, conv, it, sec = "concatenated k-means", "-", "-", "-"
        else:
            setting = (f"{key[1]}, normalize={key[2]}, lam3={key[3]}, anchor={key[4]}, "
                       f"n_init={key[5]}" + ("" if key[6] == "monotone" else f", {key[6]}"))
            conv = f"{sum(r['converged'] for r in sel)}/{len(sel)}"
            it = f"{np.mean([r['n_iter'] for r in sel]):.0f}"
            sec = f"{np.mean([r.get('cpu_seconds', r.get('seconds', np.nan)) for r in sel]):.1f}"
        print(f"| {key[0]} | {setting} | {acc.mean():.3f} ± {acc.std():.3f} | "
              f"{nmi.mean():.3f} ± {nmi.std():.3f} | {conv} | {it} | {sec} | {len(sel)} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd in ("run", "kmeans"):
        q = sub.add_parser(cmd)
        q.add_argument("--datasets", nargs="+", default=DATASETS)
        q.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
        q.add_argument("--normalize", nargs="+", default=["auto"])
        q.add_argument("--lam3", nargs="+", default=["default"])
        q.add_argument("--max-iter", type=int, default=100)
        q.add_argument("--n-init", type=int, default=1)
        q.add_argument("--f-step", default="monotone")
        q.add_argument("--anchor", nargs="+", default=["default"])
        q.add_argument("--prior", choices=["labels", "pairs"], default="labels")
    q = sub.add_parser("table")
    q.add_argument("files", nargs="+")
    args = p.parse_args(argv)
    {"run": run, "kmeans": kmeans_baseline, "table": table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
