"""Rows of docs/defaults.md: every solver with its side information on the shared datasets,
against the honest baseline (``benchmarks/baseline.py``).

Protocols (seeds 0–4 unless ``--seeds``; ``docs/defaults.md`` "Against the baseline"; each
solver's in ``benchmarks/solvers/<solver>.py``, the solvers from the registry):

- ``mvfl``: 10 % labels, ``fastmv.simulate.partial_labels(y, 0.1, random_state=seed)``;
- ``mvmc``: ``5 n`` pairs, ``fastmv.simulate.pairwise_constraints(y, 5 n, random_state=seed)``;
- ``cmvnmf``: ``simulate.unmapped(keep=0.95)`` then ``inter_view_constraints(ratio=0.05)``
  (``cmvnmf-none``: the same unmapped views without pairs); ACC / NMI averaged over views;
  Handwritten uses the paper's views fou, pix, zer;
- ``opimc``: ``simulate.incomplete_mask(n, m, 0.4)``, samples in the file's order;
  Handwritten uses the paper's views fou, fac, kar, pix, zer;
- ``emvc``: the README's route, ``P = [fastmv.transition_matrix(X) for X in views]``,
  ``fastmv.emvc(P, lam, lam, n_clusters=c)`` with ``lam = 0.01`` unless ``--set`` (a
  ``--set`` naming a ``transition_matrix`` parameter goes to the graphs, any other to
  ``emvc``).

Every other option is the solver's default (``--set name=value`` overrides one, e.g. for a
sweep). Runnable per solver and per dataset so rows can be regenerated one at a time::

    python -m benchmarks.defaults_table run --solver opimc --data Handwritten
    python -m benchmarks.defaults_table run --solver emvc --set lam=0.1
    python -m benchmarks.defaults_table table --doc      # docs/defaults.md's rows
    python -m benchmarks.defaults_table lodo --solver opimc --param alpha

``--data tiny`` runs on a 200-sample, two-view subsample of the embedded Handwritten data
(no shared file needed; the smoke test and CI use it).

OPIMC and CMVNMF without pairs are flagged against the same-data baselines
(``incomplete-imputed``, ``unmapped-per-view``); the complete-data k-means is printed beside
them as an upper reference.

Records (one JSON line per solver × dataset × setting × seed) are appended to ``--out``
(default ``/tmp/fastmv_defaults.jsonl``); a record already there is not recomputed. The
fastmv measured is the one of the tree this file lives in (its root goes first on
``sys.path``, so ``PYTHONPATH`` cannot redirect it): run the copy in the tree you mean to
measure. ``run`` names that tree on stderr and stores it in every record (``version``). A cell
is flagged when its mean ACC is below the baseline's by more than 0.02.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastmv  # noqa: E402
from benchmarks import baseline as _baseline  # noqa: E402
from benchmarks.baseline import DATASETS  # noqa: E402
from benchmarks.solvers import settings  # noqa: E402
from fastmv import metrics  # noqa: E402

#: a small embedded dataset for smoke runs: 20 samples of each digit, views fou and zer
TINY = "tiny"

#: every solver's settings (``benchmarks/solvers/<solver>.py``'s ``DEFAULTS``), in registry
#: order: the kind of side information of each (the baseline it is compared with; incomplete
#: and unmapped-without-pairs data are compared with what a user holding the *same* data
#: runs: k-means on the mean-imputed views, k-means on each unmapped view), its label, the
#: views of Handwritten its paper used and the complete-data upper reference shown beside
#: the baseline (k-means on the complete, mapped views, which nobody holding incomplete or
#: unmapped data can run; the ratio solver / reference is shown)
SETTINGS = settings()
SIDE = {key: s.side for key, s in SETTINGS.items()}
FLAG = 0.02
REFERENCE = {key: s.reference for key, s in SETTINGS.items() if s.reference}


def _views_of(solver, name):
    return SETTINGS[solver].paper_views.get(name) if solver in SETTINGS else None


def load(name, views=None):
    """Views and labels of a shared dataset, or of the embedded subsample :data:`TINY`."""
    if name != TINY:
        return _baseline.load(name, views)
    Xs, y = fastmv.datasets.load_handwritten(["fou", "zer"])
    keep = np.concatenate([np.flatnonzero(y == k)[:20] for k in range(10)])
    return [np.asarray(X, dtype=np.float64)[keep] for X in Xs], y[keep]


def baseline(name, kind, seeds, views=None):
    """:func:`benchmarks.baseline.baseline`, computed without its cache for :data:`TINY`."""
    if name != TINY:
        return _baseline.baseline(name, kind, seeds, views=views)
    kind = "none" if kind in ("incomplete", "unmapped") else kind
    Xs, y = load(name, views)
    per = {}
    for seed in seeds:
        for variant, (acc, nmi) in _baseline._scored_variants(kind, Xs, y, seed).items():
            per.setdefault(variant, {"acc": [], "nmi": []})
            per[variant]["acc"].append(acc)
            per[variant]["nmi"].append(nmi)
    best = max(per, key=lambda v: np.mean(per[v]["acc"]))
    return {"best": best,
            **{m: [float(np.mean(per[best][m])), float(np.std(per[best][m]))]
               for m in ("acc", "nmi")}}


def _mean_scores(ys, labels):
    acc = [metrics.accuracy(a, b) for a, b in zip(ys, labels)]
    nmi = [metrics.nmi(a, b) for a, b in zip(ys, labels)]
    return float(np.mean(acc)), float(np.mean(nmi))


def run_one(solver, views, y, seed, params):
    """(ACC, NMI) of one solve under the solver's protocol (``solver``: a setting of
    :data:`SETTINGS`); raises on refusal."""
    if solver not in SETTINGS:
        raise ValueError(f"unknown solver {solver!r}")
    return _mean_scores(*SETTINGS[solver].solve(views, y, seed, dict(params)))


def _parse_set(items):
    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        for conv in (int, float):
            try:
                value = conv(value)
                break
            except ValueError:
                continue
        else:
            value = {"None": None, "True": True, "False": False}.get(value, value)
        out[key] = value
    return out


def _key(solver, name, setting, seed):
    return json.dumps([solver, name, setting, seed])


def _records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cmd_run(args):
    params = _parse_set(args.set)
    setting = ", ".join(f"{k}={v}" for k, v in sorted(params.items())) or "defaults"
    done = {_key(r["solver"], r["dataset"], r["setting"], r["seed"]) for r in _records(args.out)}
    print(f"measuring fastmv from {os.path.dirname(fastmv.__file__)}", file=sys.stderr)
    for solver in args.solver:
        _run_solver(args, solver, params, setting, done)


def _run_solver(args, solver, params, setting, done):
    names = args.data or list(DATASETS)
    for name in names:
        idx = _views_of(solver, name)
        views, y = load(name, idx)
        for seed in args.seeds:
            if _key(solver, name, setting, seed) in done:
                continue
            rec = dict(solver=solver, dataset=name, setting=setting, seed=seed,
                       views=idx, version=os.path.dirname(fastmv.__file__))
            t = time.process_time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rec["acc"], rec["nmi"] = run_one(solver, views, y, seed, params)
            except (ValueError, TypeError) as exc:
                rec["error"] = str(exc).splitlines()[0][:200]
            rec["cpu_s"] = round(time.process_time() - t, 2)
            print(json.dumps(rec), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            if "error" in rec:
                break


def _grouped(records):
    groups = {}
    for r in records:
        groups.setdefault((r["solver"], r["dataset"], r["setting"]), []).append(r)
    return groups


def _ms(values):
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}"


LABEL = {key: s.label for key, s in SETTINGS.items()}


def _row(solver, name, recs):
    """One table row's cells (None when the solver refused the data)."""
    seeds = [r["seed"] for r in recs]
    idx = recs[0].get("views")
    base = baseline(name, SIDE[solver], seeds, views=idx)
    if any("error" in r for r in recs):
        return dict(base=base, error=next(r["error"] for r in recs if "error" in r))
    acc = [r["acc"] for r in recs]
    row = dict(base=base, acc=acc, nmi=[r["nmi"] for r in recs],
               delta=float(np.mean(acc)) - base["acc"][0])
    if solver in REFERENCE:
        row["ref"] = baseline(name, REFERENCE[solver], seeds, views=idx)
    return row


def cmd_table(args):
    """Markdown rows of every record; ``--doc``: the layout of docs/defaults.md."""
    if args.doc:
        print("| solver | dataset | ACC | NMI | seeds | baseline ACC (variant) | Δ ACC | | "
              "complete-data reference ACC (solver / reference) |")
    else:
        print("| solver | side information | dataset | setting | ACC | NMI | seeds | baseline "
              "(best variant) ACC / NMI | Δ ACC | |")
    print("|---|---|---|---|---|---|---|---|---|" + ("" if args.doc else "---|"))
    order = {s: i for i, s in enumerate(LABEL)}
    dorder = {d: i for i, d in enumerate(DATASETS)}
    for (solver, name, setting), recs in sorted(
            _grouped(_records(args.out)).items(),
            key=lambda kv: (order.get(kv[0][0], 99), kv[0][2] != "defaults", kv[0][2],
                            dorder.get(kv[0][1], 99))):
        if (args.solver and solver not in args.solver) or (args.doc and setting != "defaults"):
            continue
        row = _row(solver, name, recs)
        base = row["base"]
        if "error" in row:
            print(f"| {solver} | {name} | refused: {row['error']} |")
            continue
        flag = "**below**" if row["delta"] < -FLAG else ""
        ref = ""
        if "ref" in row:
            ref = (f"{row['ref']['acc'][0]:.3f} "
                   f"({np.mean(row['acc']) / row['ref']['acc'][0]:.2f}×)")
        if args.doc:
            print(f"| {LABEL[solver]} | {name} | {_ms(row['acc'])} | {_ms(row['nmi'])} | "
                  f"{len(recs)} | {base['acc'][0]:.3f} ({base['best']}) | "
                  f"{row['delta']:+.3f} | {flag} | {ref} |".replace("-0.", "−0."))
            continue
        bcell = (f"{base['acc'][0]:.3f} ± {base['acc'][1]:.3f} / {base['nmi'][0]:.3f} "
                 f"({base['best']})")
        print(f"| {solver} | {SIDE[solver]} | {name} | {setting} | {_ms(row['acc'])} | "
              f"{_ms(row['nmi'])} | {len(recs)} | {bcell} | {row['delta']:+.3f} | {flag} "
              f"{'complete-data reference ' + ref if ref else ''} |")


def _delta(recs, name, solver):
    base = baseline(name, SIDE[solver], [r["seed"] for r in recs], views=recs[0].get("views"))
    return float(np.mean([r["acc"] for r in recs])) - base["acc"][0]


def cmd_lodo(args):
    """Leave-one-dataset-out choice of one parameter: for every held-out dataset, the grid
    value with the best mean ACC relative to the baseline on the other datasets."""
    groups = _grouped([r for r in _records(args.out) if r["solver"] in args.solver
                       and "error" not in r])
    table = {}
    for (solver, name, setting), recs in groups.items():
        parts = dict(p.split("=", 1) for p in setting.split(", ") if "=" in p)
        if args.param == "setting":           # every recorded setting is a candidate
            table.setdefault(setting, {})[name] = _delta(recs, name, solver)
            continue
        value = parts.get(args.param, "default")
        others = {k: v for k, v in parts.items() if k != args.param}
        if others != _parse_set(args.fixed):
            others_s = {k: str(v) for k, v in _parse_set(args.fixed).items()}
            if others != others_s:
                continue
        base = baseline(name, SIDE[solver], [r["seed"] for r in recs],
                        views=recs[0].get("views"))
        table.setdefault(value, {})[name] = float(np.mean([r["acc"] for r in recs])) \
            - base["acc"][0]
    values = sorted(table)
    names = sorted(set.intersection(*(set(t) for t in table.values()))) if table else []
    print(f"{' '.join(args.solver)} {args.param}: ACC − baseline ACC per dataset")
    print("| value | " + " | ".join(names) + " |")
    for v in values:
        print(f"| {v} | " + " | ".join(f"{table[v][n]:+.3f}" for n in names) + " |")
    worst = []
    for held in names:
        rest = [n for n in names if n != held]
        pick = max(values, key=lambda v: np.mean([table[v][n] for n in rest]))
        worst.append(table[pick][held])
        print(f"held out {held}: choose {args.param}={pick}, held-out ACC − baseline "
              f"{table[pick][held]:+.3f}")
    if worst:
        print(f"worst held-out case: {min(worst):+.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["run", "table", "lodo"])
    ap.add_argument("--solver", nargs="*", default=[])
    ap.add_argument("--data", nargs="*")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    ap.add_argument("--set", action="append", help="name=value: a non-default option")
    ap.add_argument("--param", help="lodo: the parameter chosen ('setting': every recorded "
                    "setting of the solver is one candidate)")
    ap.add_argument("--fixed", action="append", help="lodo: other options held fixed")
    ap.add_argument("--doc", action="store_true", help="table: docs/defaults.md's layout")
    ap.add_argument("--out", default="/tmp/fastmv_defaults.jsonl")
    args = ap.parse_args(argv)
    {"run": cmd_run, "table": cmd_table, "lodo": cmd_lodo}[args.what](args)


if __name__ == "__main__":
    main()
