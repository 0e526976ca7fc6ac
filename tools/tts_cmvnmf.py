"""CMVNMF time to solution against scikit-learn NMF (one fit per view, times ``n_init``).

Protocol of ``tools/defaults_table.py`` (``simulate.unmapped(keep=0.95)`` +
``inter_view_constraints(ratio=0.05)``, seed 0; Handwritten: views fou, pix, zer). One
process, ``NUMBA_NUM_THREADS=1`` and BLAS on one thread, CPU time (``time.process_time``),
warm (every solve called once before timing). The NMF yardstick
(``NMF(n_components=c, init="nndsvda", max_iter=300, random_state=0)``) is fitted on the
views as CMVNMF factorises them (after its ``normalize="auto"``: rows to unit ℓ2 norm,
``minmax`` for a view with negative entries, which NMF cannot take as given).

Also prints where a solve's time goes: k-means starts (CPU s, count), sweeps per start and
CPU per sweep. ``python -m tools.tts_cmvnmf [--data D ...] [--out file.jsonl]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import fastmv  # noqa: E402
from benchmarks.baseline import DATASETS, load  # noqa: E402
from fastmv import metrics, simulate  # noqa: E402
from fastmv._cmvnmf import _solver  # noqa: E402

PAPER_VIEWS = {"Handwritten": [1, 4, 5]}


class _Probe:
    """Counts the k-means starts, sweeps and their CPU seconds of the calls it wraps."""

    def __init__(self):
        self.init_s = self.sweep_s = 0.0
        self.inits = self.sweeps = 0
        self._init = _solver._initial_factors
        self._sweep = _solver.Problem.sweep

    def __enter__(self):
        probe = self

        def init(*args, **kw):
            t = time.process_time()
            try:
                return probe._init(*args, **kw)
            finally:
                probe.init_s += time.process_time() - t
                probe.inits += 1

        def sweep(self_):
            t = time.process_time()
            try:
                return probe._sweep(self_)
            finally:
                probe.sweep_s += time.process_time() - t
                probe.sweeps += 1

        _solver._initial_factors = init
        _solver.Problem.sweep = sweep
        return self

    def __exit__(self, *exc):
        _solver._initial_factors = self._init
        _solver.Problem.sweep = self._sweep


def _acc(ys, labels):
    return float(np.mean([metrics.accuracy(a, b) for a, b in zip(ys, labels)]))


def nmf_seconds(views, c):
    from sklearn.decomposition import NMF  # noqa: PLC0415

    total = 0.0
    for X in views:
        model = NMF(n_components=c, init="nndsvda", max_iter=300, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)   # warm
            t = time.process_time()
            model.fit(X)
            total += time.process_time() - t
    return total


def timed(fn):
    fn()   # warm
    with _Probe() as probe:
        t = time.process_time()
        res = fn()
        cpu = time.process_time() - t
    return res, cpu, probe


def one(name, settings, seed=0):
    views, y = load(name, PAPER_VIEWS.get(name))
    c = len(np.unique(y))
    uv, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
    data = _solver._prepare(uv, c, None, None, 1.0, "auto")
    # NMF on the views as given (dense here), normalised as CMVNMF normalises them
    nmf = nmf_seconds([X.toarray() if sp.issparse(X) else X for X in data.views], c)
    rows = []
    for label, params in settings:
        def fn(params=params):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fastmv.cmvnmf(uv, c, ml, cl, random_state=seed, **params)
        res, cpu, probe = timed(fn)
        n_init = params.get("n_init", 5)
        rows.append(dict(dataset=name, setting=label, seed=seed, cpu_s=round(cpu, 3),
                         nmf_s=round(nmf, 4), n_init=n_init,
                         ratio=round(cpu / (nmf * n_init), 3), acc=round(_acc(uy, res.labels), 4),
                         n_iter=res.n_iter, converged=bool(res.converged),
                         inits=probe.inits, init_s=round(probe.init_s, 3), sweeps=probe.sweeps,
                         sweep_ms=round(1000 * probe.sweep_s / max(probe.sweeps, 1), 3),
                         beta=(res.tuning or {}).get("beta", {}).get("chosen")
                         if res.tuning else None))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=list(DATASETS))
    ap.add_argument("--out")
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    settings = [("defaults", {}), ("beta=1", {"beta": 1.0})]
    with threadpool_limits(1):
        for name in args.data:
            for row in one(name, settings):
                row["tag"] = args.tag
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
