"""CMVNMF without pairs against plain scikit-learn NMF on the same unmapped views.

Without pairs CMVNMF is NMF on every view alone. This script scores, on the views of the
``cmvnmf-none`` protocol of ``tools/defaults_table.py`` (``simulate.unmapped(keep=0.95)``
with the seed; Handwritten: views fou, pix, zer), per view and averaged over the views:

- ``sk-raw`` / ``sk-l2``: ``sklearn.decomposition.NMF(c, init="nndsvda", max_iter=300,
  random_state=seed)`` on the view as given (skipped for a view with negative entries) or
  normalised as CMVNMF normalises it (``normalize="auto"``), labels = argmax of ``W``;
- ``sk-l2-scaled``: the same fit, labels = argmax of ``W`` with every column scaled by the
  norm of its row of ``H`` (what CMVNMF's ``rescale`` does: unit-norm basis);
- ``sk-l2-kmeans-init``: NMF started from CMVNMF's own k-means start (``init="custom"``);
- ``fastmv-n1`` / ``fastmv-n5``: ``fastmv.cmvnmf`` without pairs, ``n_init`` 1 / 5;
- ``kmeans-start``: the labels of CMVNMF's k-means start itself (no NMF sweep).

``python -m tools.nmf_per_view [--data D ...] [--seeds 0 1 2 3 4] [--out file.jsonl]``
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import fastmv  # noqa: E402
from benchmarks.baseline import DATASETS, load  # noqa: E402
from fastmv import metrics, simulate  # noqa: E402
from fastmv._cmvnmf import _solver  # noqa: E402
from fastmv._cmvnmf._start import _initial_factors  # noqa: E402

PAPER_VIEWS = {"Handwritten": [1, 4, 5]}


def _nmf(X, c, seed, **kw):
    from sklearn.decomposition import NMF  # noqa: PLC0415
    model = NMF(n_components=c, init=kw.pop("init", "nndsvda"), max_iter=300,
                random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        W = model.fit_transform(X, **kw)
    return W, model.components_


def one(name, seed, only_start=False):
    views, y = load(name, PAPER_VIEWS.get(name))
    c = len(np.unique(y))
    uv, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
    data = _solver._prepare(uv, c, None, None, 1.0, "auto")
    dense = [X.toarray() if sp.issparse(X) else np.asarray(X) for X in data.views]
    U0, V0 = _initial_factors(data, "k-means++", np.random.default_rng(seed), None)
    scores = {}

    def add(key, labels):
        scores.setdefault(key, []).append(labels)

    for a, (X, Xn) in enumerate(zip(uv, dense)):
        add("kmeans-start", np.argmax(V0[a], axis=1))
        if only_start:
            continue
        if np.min(X) >= 0:
            add("sk-raw", np.argmax(_nmf(np.asarray(X), c, seed)[0], axis=1))
        W, H = _nmf(Xn, c, seed)
        add("sk-l2", np.argmax(W, axis=1))
        add("sk-l2-scaled", np.argmax(W * np.linalg.norm(H, axis=1), axis=1))
        # copies: scikit-learn updates a custom W and H in place
        W, H = _nmf(Xn, c, seed, init="custom", W=np.array(V0[a], order="C"),
                    H=np.array(U0[a].T, order="C"))
        add("sk-l2-kmeans-init", np.argmax(W, axis=1))
    for n_init in () if only_start else (1, 5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fastmv.cmvnmf(uv, c, None, None, n_init=n_init, random_state=seed)
        scores[f"fastmv-n{n_init}"] = res.labels
    out = {}
    for key, labs in scores.items():
        ys = uy if len(labs) == len(uy) else [t for t, X in zip(uy, uv) if np.min(X) >= 0]
        out[key] = float(np.mean([metrics.accuracy(t, lab) for t, lab in zip(ys, labs)]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=list(DATASETS))
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--out")
    ap.add_argument("--only-start", action="store_true",
                    help="score only the k-means start (no NMF)")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits  # noqa: PLC0415
    with threadpool_limits(1):
        for name in args.data:
            for seed in args.seeds:
                row = dict(dataset=name, seed=seed, acc=one(name, seed, args.only_start))
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
