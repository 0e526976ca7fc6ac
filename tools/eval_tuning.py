"""Self-tuned defaults against the old defaults and a simple baseline (docs/defaults.md,
"Self-tuning").

Per dataset and seed ``s`` (one JSON object per line on stdout)::

    python tools/eval_tuning.py baseline --prior labels --seeds 0 1 2 3 4 > base.jsonl
    python tools/eval_tuning.py mvfl --seeds 0 1 2 3 4 > mvfl.jsonl
    python tools/eval_tuning.py mvmc --seeds 0 1 2 3 4 > mvmc.jsonl
    python tools/eval_tuning.py cmvnmf --seeds 0 1 2 3 4 > cmvnmf.jsonl
    python tools/eval_tuning.py table base.jsonl mvfl.jsonl ...

Protocols: MVFL 10 % labels (``simulate.partial_labels(y, 0.1, random_state=s)``); MVMC
``5 n`` random pairs (``simulate.pairwise_constraints(y, 5 n, random_state=s)``, as
docs/mvmc.md); CMVNMF ``simulate.unmapped(keep=0.95)`` then
``inter_view_constraints(ratio=0.05)`` (one generator seeded with ``s``), ACC averaged over
the views. Each solver row runs the new defaults ("tuned"; MVMC: the opt-in ``C1="auto"``) and the
old fixed defaults ("fixed"; MVMC: the default ``C1=100``) in the same process and records the CPU seconds of each (their ratio is the cost
of tuning). Baseline: the best of k-means (``n_init=10``) on the raw, L2-row and z-scored
concatenation of the views; with labels also scikit-learn ``LabelSpreading(kernel="knn")``
on the L2-row and z-scored concatenations. Run with ``NUMBA_NUM_THREADS=1`` and ``nice``.
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

DATASETS = ["3Sources", "BBCSport", "Handwritten", "Reuters-1200", "WebKB", "ORL",
            "ProteinFold"]
DATA = Path(os.environ.get("FASTMV_SHARED_DATASETS",
                           Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def load(name):
    views, y = load_mat(DATA / f"{name}.mat")
    views = [sp.csr_matrix(v) if np.count_nonzero(v) < 0.1 * v.size else
             np.asarray(v, np.float64) for v in views]
    return views, np.asarray(y)


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, np.float64)


def concatenations(views):
    """Raw, L2-row (per view) and z-scored (per feature) concatenations, dense."""
    raw = [_dense(v) for v in views]
    l2 = []
    for v in raw:
        nr = np.linalg.norm(v, axis=1, keepdims=True)
        l2.append(v / np.where(nr > 0, nr, 1.0))
    z = []
    for v in raw:
        sd = v.std(axis=0)
        z.append((v - v.mean(axis=0)) / np.where(sd > 0, sd, 1.0))
    return {"raw": np.hstack(raw), "l2": np.hstack(l2), "zscore": np.hstack(z)}


def _cpu(fn):
    t = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn()
    return out, time.process_time() - t


def cmd_baseline(args):
    from sklearn.semi_supervised import LabelSpreading  # noqa: PLC0415

    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        cats = concatenations(views)
        for s in args.seeds:
            row = {"dataset": name, "seed": s, "method": "baseline", "prior": args.prior}
            for key, X in cats.items():
                km, sec = _cpu(lambda X=X: fastmv.kmeans(X, c, n_init=10, random_state=s))
                row[f"kmeans_{key}"] = metrics.accuracy(y, km.labels)
                row[f"kmeans_{key}_cpu"] = sec
            if args.prior == "labels":
                lab = simulate.partial_labels(y, 0.1, random_state=s)
                for key in ("l2", "zscore"):
                    ls, sec = _cpu(lambda key=key: LabelSpreading(kernel="knn").fit(
                        cats[key], lab).transduction_)
                    row[f"ls_{key}"] = metrics.accuracy(y, ls)
                    row[f"ls_{key}_cpu"] = sec
            row["acc"] = max(v for k, v in row.items()
                             if k.startswith(("kmeans_", "ls_")) and not k.endswith("_cpu"))
            print(json.dumps(row), flush=True)


def _row(name, s, method, res, y, sec, score=None):
    acc = score if score is not None else metrics.accuracy(y, res.labels)
    tuning = res.tuning
    chosen = ({k: v["chosen"] for k, v in tuning.items()} if tuning else None)
    return {"dataset": name, "seed": s, "method": method, "acc": acc, "cpu": sec,
            "n_iter": int(res.n_iter), "chosen": chosen,
            "solves": sum(v["solves"] for v in tuning.values()) if tuning else 0}


def cmd_mvfl(args):
    from fastmv._mvfl._solver import _auto_scheme  # noqa: PLC0415

    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        rule = [_auto_scheme(v) for v in views]
        old = max(set(rule), key=rule.count)
        for s in args.seeds:
            lab = simulate.partial_labels(y, 0.1, random_state=s)
            r, sec = _cpu(lambda: fastmv.mvfl(views, c, labels=lab, random_state=s))
            print(json.dumps(_row(name, s, "mvfl tuned", r, y, sec)), flush=True)
            r, sec = _cpu(lambda: fastmv.mvfl(views, c, labels=lab, normalize=old,
                                              init="k-means++", random_state=s))
            print(json.dumps(_row(name, s, "mvfl fixed", r, y, sec)), flush=True)


def cmd_mvmc(args):
    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        n = y.size
        for s in args.seeds:
            ml, cl = simulate.pairwise_constraints(y, 5 * n, random_state=s)
            r, sec = _cpu(lambda: fastmv.mvmc(views, c, ml, cl, C1="auto", random_state=s))
            print(json.dumps(_row(name, s, "mvmc C1=auto", r, y, sec)), flush=True)
            r, sec = _cpu(lambda: fastmv.mvmc(views, c, ml, cl, C1=100.0, C2=1.0,
                                              random_state=s))
            print(json.dumps(_row(name, s, "mvmc default", r, y, sec)), flush=True)


def cmd_cmvnmf(args):
    for name in args.datasets:
        views, y = load(name)
        c = int(np.unique(y).size)
        for s in args.seeds:
            rng = np.random.default_rng(s)
            Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
            ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
            for method, kw in (("cmvnmf tuned", {}),
                               ("cmvnmf fixed", {"normalize": "l2", "beta": 1.0})):
                negative = any((X.data if sp.issparse(X) else X).min() < 0 for X in Xs)
                if negative and method.endswith("fixed"):
                    print(json.dumps({"dataset": name, "seed": s, "method": method,
                                      "acc": None, "error": "negative values"}), flush=True)
                    continue
                r, sec = _cpu(lambda kw=kw: fastmv.cmvnmf(Xs, c, ml, cl, random_state=s,
                                                          **kw))
                acc = float(np.mean([metrics.accuracy(yv, lv)
                                     for yv, lv in zip(ys, r.labels)]))
                print(json.dumps(_row(name, s, method, r, y, sec, score=acc)), flush=True)


def cmd_table(args):
    rows = [json.loads(line) for f in args.files for line in open(f) if line.strip()]
    keys = sorted({(r["dataset"], r["method"], r.get("prior", "")) for r in rows})
    print("| dataset | method | ACC mean ± std | CPU s | seeds | chosen |")
    print("|---|---|---|---|---|---|")
    for d, m, p in keys:
        sel = [r for r in rows if (r["dataset"], r["method"], r.get("prior", "")) == (d, m, p)]
        acc = np.array([r["acc"] for r in sel if r["acc"] is not None], float)
        if acc.size == 0:
            print(f"| {d} | {m} | refused | - | {len(sel)} | - |")
            continue
        cpu = np.mean([r.get("cpu", np.nan) for r in sel])
        ch = sorted({json.dumps(r.get("chosen")) for r in sel})
        label = f"{m} ({p})" if p else m
        print(f"| {d} | {label} | {acc.mean():.3f} ± {acc.std():.3f} | {cpu:.2f} | "
              f"{acc.size} | {'; '.join(ch)} |")


def _ms(values):
    v = np.asarray(values, float)
    return f"{v.mean():.3f} ± {v.std():.3f}" if v.size else "–"


def cmd_report(args):
    """One row per dataset × solver: baseline, old defaults, self-tuned defaults, the gap
    of the tuned defaults to the baseline and the CPU ratio tuned / old (same process)."""
    rows = [json.loads(line) for f in args.files for line in open(f) if line.strip()]
    base = {(r["dataset"], r["seed"]): r for r in rows if r["method"] == "baseline"}
    solvers = (("MVFL", "mvfl tuned", "mvfl fixed", True),
               ("CMVNMF", "cmvnmf tuned", "cmvnmf fixed", False),
               ("MVMC", "mvmc default", None, False),
               ("MVMC C1=auto", "mvmc C1=auto", "mvmc default", False))
    print("| dataset | solver | baseline | old defaults | self-tuned defaults | tuned − "
          "baseline | CPU tuned / old | seeds | chosen |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in DATASETS:
        for label, new, old, with_ls in solvers:
            tuned = {r["seed"]: r for r in rows if r["dataset"] == d and r["method"] == new}
            if not tuned:
                continue
            seeds = sorted(tuned)
            b = []
            for s in seeds:
                r = base.get((d, s))
                if r is None:
                    continue
                keys = [k for k in r if (k.startswith("kmeans_") or
                                         (with_ls and k.startswith("ls_")))
                        and not k.endswith("_cpu")]
                b.append(max(r[k] for k in keys))
            olds = {r["seed"]: r for r in rows if r["dataset"] == d and r["method"] == old}
            o = [olds[s]["acc"] for s in seeds if s in olds and olds[s]["acc"] is not None]
            t = [tuned[s]["acc"] for s in seeds]
            ratio = [tuned[s]["cpu"] / olds[s]["cpu"] for s in seeds
                     if s in olds and olds[s].get("cpu")]
            refused = any(s in olds and olds[s]["acc"] is None for s in seeds)
            gap = f"{np.mean(t) - np.mean(b):+.3f}" if b else "–"
            ch = "; ".join(sorted({", ".join(f"{k}={v}" for k, v in (tuned[s]["chosen"] or
                                                                      {}).items())
                                   for s in seeds})) or "–"
            print(f"| {d} | {label} | {_ms(b)} | {'refused (negative values)' if refused else _ms(o)}"
                  f" | {_ms(t)} | {gap} | {(f'{np.mean(ratio):.2f}' if ratio else '–')} | "
                  f"{len(seeds)} | {ch} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("baseline", "mvfl", "mvmc", "cmvnmf"):
        p = sub.add_parser(cmd)
        p.add_argument("--datasets", nargs="+", default=DATASETS)
        p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
        if cmd == "baseline":
            p.add_argument("--prior", choices=["labels", "pairs"], default="labels")
    for cmd in ("table", "report"):
        p = sub.add_parser(cmd)
        p.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    {"baseline": cmd_baseline, "mvfl": cmd_mvfl, "mvmc": cmd_mvmc, "cmvnmf": cmd_cmvnmf,
     "table": cmd_table, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
