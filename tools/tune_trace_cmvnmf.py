"""Traces of CMVNMF's ``beta="auto"`` validation fits, to study cheaper tuning offline.

For the ``cmvnmf`` protocol of ``tools/defaults_table.py`` (unmapped keep=0.95, inter-view
pairs ratio=0.05, the seed; Handwritten fou+pix+zer) this runs exactly the fits of
``fastmv._cmvnmf._tune._tune_beta`` (same folds, same shared start, same stopping rule)
and records for every candidate and fold: the held-out score after every sweep (recomputed
only when a label changed), the objective per sweep, the sweeps and CPU seconds. Any rule
that stops fits earlier, drops candidates or folds can then be replayed on the records
(``replay``) and its choice compared with the full tuning's.

``--mode``: ``shared`` (the fits of the previous code: dense views, one shared start),
``csr`` (views with <= 10 % nonzeros as CSR inside the fits, as ``_tune_beta`` now does),
``aligned`` (the shared start renumbered by each fold's pairs; tried, not kept). Both
rules of the current ``_tune_beta`` (CSR, settled score) are replayed from the records, so
``shared`` traces are the reference (docs/cmvnmf.md, "Cheaper self-tuning").

``python -m tools.tune_trace_cmvnmf run [--data D ...] [--seeds ...] [--mode M] --out F.jsonl``
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

from benchmarks.baseline import DATASETS, load  # noqa: E402
from fastmv import simulate  # noqa: E402
from fastmv._cmvnmf import _solver as S  # noqa: E402
from fastmv._cmvnmf import _tune as T  # noqa: E402
from fastmv._cmvnmf._pairs import _check_constraints, prepare_pairs  # noqa: E402
from fastmv._cmvnmf._start import _aligned_cluster_order, _initial_factors  # noqa: E402
from fastmv._core._driver import iterate  # noqa: E402
from fastmv._core._tuning import from_pairs, pair_folds, pair_score, tuning_rng  # noqa: E402

PAPER_VIEWS = {"Handwritten": [1, 4, 5]}


def _aligned(U0, V0, blocks, c):
    """The shared start with every view's columns renumbered by the fold's training pairs
    (``_aligned_cluster_order``, as the solve's own starts are aligned by all pairs)."""
    perms = _aligned_cluster_order([np.argmax(V, axis=1) for V in V0], blocks.blocks, c)
    U1, V1 = [], []
    for U, V, perm in zip(U0, V0, perms):
        Un, Vn = np.empty_like(U), np.empty_like(V)
        Un[:, perm] = U
        Vn[:, perm] = V
        U1.append(Un)
        V1.append(Vn)
    return U1, V1


def _sparse(views, density=0.1):
    """Views with at most ``density`` nonzeros as CSR (``mode="csr"``: cheaper products that
    round differently from the dense ones), as the validation fits store them."""
    from fastmv._cmvnmf._views import _mostly_zero_as_csr  # noqa: PLC0415
    return _mostly_zero_as_csr(views, density)


def trace(name, seed, max_iter=300, tol=1e-6, mode="shared"):
    views, y = load(name, PAPER_VIEWS.get(name))
    c = len(np.unique(y))
    uv, uy, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
    rng = np.random.default_rng(seed)
    data = S._prepare(uv, c, ml, cl, 1.0, "auto")
    n_list = [X.shape[0] for X in data.views]
    dtype = data.views[0].dtype.type
    flat_m = T._flat_pairs(_check_constraints(ml, "must_link", n_list))
    flat_c = T._flat_pairs(_check_constraints(cl, "cannot_link", n_list))
    sup = from_pairs(np.zeros((len(flat_m), 2)), np.zeros((len(flat_c), 2)))
    fm, fc = pair_folds(sup, T._TUNE_FOLDS, tuning_rng(rng))
    full = data._replace(blocks=prepare_pairs(None, None, n_list, dtype))
    U0, V0 = _initial_factors(full, "k-means++", tuning_rng(rng), None)
    if mode == "csr":   # the fits only: the shared k-means start is the dense one
        full = full._replace(views=_sparse(full.views))
    offsets = np.concatenate([[0], np.cumsum(n_list)])
    rows = []
    for beta in T._TUNE_BETAS:
        for f in range(T._TUNE_FOLDS):
            blocks = prepare_pairs(T._as_dict(flat_m[fm != f]), T._as_dict(flat_c[fc != f]),
                                   n_list, dtype)
            dat = full._replace(blocks=blocks, beta=float(beta))
            hm, hc = flat_m[fm == f], flat_c[fc == f]
            ends = np.unique(np.concatenate([offsets[hm[:, 0]] + hm[:, 1],
                                             offsets[hm[:, 2]] + hm[:, 3],
                                             offsets[hc[:, 0]] + hc[:, 1],
                                             offsets[hc[:, 2]] + hc[:, 3]]))
            Us, Vs = (_aligned(U0, V0, blocks, c) if mode == "aligned"
                      else ([U.copy() for U in U0], [V.copy() for V in V0]))
            problem = S.Problem(dat.views, dat.blocks, Us, Vs, beta=dat.beta, rescale=True)
            problem.initial = problem.objective()
            scores, last = [], [None, None]

            def score_now():
                lab = np.argmax(problem.V_all, axis=1)
                if last[0] is not None and np.array_equal(lab[ends], last[0][ends]):
                    return last[1]

                def same(flat):
                    return lab[offsets[flat[:, 0]] + flat[:, 1]] == \
                        lab[offsets[flat[:, 2]] + flat[:, 3]]
                last[0], last[1] = lab, pair_score(same, hm, hc)
                return last[1]

            def cb(info):
                scores.append(score_now())
                return False

            scores.append(score_now())   # at the shared start
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tr = iterate(problem, solver="cmvnmf", max_iter=max_iter, tol=tol, callback=cb,
                             initial_objective=problem.initial, warn=False)
            rows.append(dict(dataset=name, seed=seed, mode=mode, beta=beta, fold=f, sweeps=tr.n_iter,
                             cpu_s=round(time.process_time() - t, 3),
                             score=[round(float(s), 6) for s in scores],
                             objective=[float(o) for o in tr.objective]))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("--data", nargs="*", default=list(DATASETS))
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=["shared", "aligned", "csr"], default="shared")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits  # noqa: PLC0415
    with threadpool_limits(1):
        for name in args.data:
            for seed in args.seeds:
                for row in trace(name, seed, mode=args.mode):
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
                print(name, seed, "done", flush=True)


if __name__ == "__main__":
    main()
