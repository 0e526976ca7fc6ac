"""The honest baseline: the strongest simple alternative a user would try first.

For a dataset and a kind of side information, :func:`baseline` runs every variant below over
the given seeds and reports the best one (by mean ACC), with mean ± std ACC / NMI:

- ``"none"`` (no supervision; also the reference for ``"incomplete"`` and ``"unmapped"``,
  which a user with the complete, mapped data would cluster this way):
  scikit-learn ``KMeans(n_init=10)`` on the concatenated views, raw, with each view's rows
  L2-normalised, or with every feature z-scored;
- ``"labels"`` (10 % partial labels, ``fastmv.simulate.partial_labels(y, 0.1)``): the
  k-means variants plus ``LabelSpreading(kernel="knn")`` on the L2-row or z-scored
  concatenation (ACC / NMI on all samples, as for the solvers);
- ``"pairs"`` (``fastmv.simulate.pairwise_constraints(y, 5 n)``): the k-means variants plus
  constrained spectral clustering: a symmetric kNN graph of the L2-row concatenation
  (cosine similarity), must-link entries set to 1 and cannot-link entries to 0, then
  ``SpectralClustering(affinity="precomputed")``;
- ``"incomplete-imputed"`` (the same incomplete data OPIMC gets: 40 % of each view missing,
  ``fastmv.simulate.incomplete_mask(n, m, 0.4)`` with the seed): each view's missing rows
  filled with the observed mean of every feature (what ``SimpleImputer`` does), then the
  k-means variants on that;
- ``"unmapped-per-view"`` (the same unmapped views CMVNMF gets without pairs,
  ``fastmv.simulate.unmapped(keep=0.95)`` with the seed): nothing links the views' rows, so
  a user clusters each view on its own: ``KMeans(n_init=10)`` on the view raw, L2-row or
  z-scored, ACC / NMI averaged over the views (as CMVNMF's are).

Not part of the wheel (it needs scikit-learn). Results are cached as JSON under
``$FASTMV_BASELINE_CACHE`` (default ``/tmp/fastmv_baseline``) keyed by dataset, kind,
seeds and a version string, because the k-means restarts on the text sets take minutes on a
loaded machine. ``python -m benchmarks.baseline BBCSport labels`` prints one row.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks._shared_data import shared_dataset_names

VERSION = "1"
KINDS = ("none", "labels", "pairs", "incomplete", "unmapped", "incomplete-imputed",
         "unmapped-per-view")
#: fraction of each view's samples kept in the CMVNMF protocol (benchmarks/defaults_table.py)
KEEP = 0.95
#: fraction of each view missing in the OPIMC protocol (benchmarks/defaults_table.py)
MISSING = 0.4
#: every shared dataset found (``benchmarks/_shared_data.py``): none is listed by hand
DATASETS = shared_dataset_names()
LABEL_RATIO = 0.1
PAIRS_PER_SAMPLE = 5


def load(name, views=None):
    """Views (dense float64) and labels of a shared dataset, by file stem; ``views``: the
    indices of the views to keep (default all)."""
    import fastmv
    from benchmarks._shared_data import shared_dataset

    path = shared_dataset(f"{name}.mat")
    if path is None:
        raise FileNotFoundError(f"{name}.mat not found (set FASTMV_SHARED_DATASETS)")
    Xs, y = fastmv.datasets.load_mat(path, views=views)
    return [X.toarray() if sp.issparse(X) else np.asarray(X) for X in Xs], y


def _l2(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def _zscore(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def concatenations(views):
    """The three concatenations a user would try: raw, L2 rows per view, z-scored."""
    return {
        "raw": np.hstack(views),
        "l2": np.hstack([_l2(X) for X in views]),
        "zscore": _zscore(np.hstack(views)),
    }


def _scores(y, labels):
    from fastmv import metrics
    return float(metrics.accuracy(y, labels)), float(metrics.nmi(y, labels))


def _kmeans(X, c, seed):
    from sklearn.cluster import KMeans
    return KMeans(c, n_init=10, random_state=seed).fit_predict(X)


def _label_spreading(X, y, seed):
    from sklearn.semi_supervised import LabelSpreading

    import fastmv
    partial = fastmv.simulate.partial_labels(y, LABEL_RATIO, random_state=seed)
    model = LabelSpreading(kernel="knn", n_neighbors=min(7, len(y) - 1), max_iter=100)
    return model.fit(X, partial).transduction_


def constrained_spectral(X, c, must, cannot, seed, n_neighbors=10):
    """Spectral clustering of a cosine kNN graph with must-links 1 and cannot-links 0."""
    from sklearn.cluster import SpectralClustering
    from sklearn.neighbors import NearestNeighbors

    Xn = _l2(X)
    n = Xn.shape[0]
    k = min(n_neighbors, n - 1)
    dist, idx = NearestNeighbors(n_neighbors=k + 1, metric="cosine").fit(Xn).kneighbors(Xn)
    rows = np.repeat(np.arange(n), k + 1)
    W = sp.csr_matrix((np.clip(1.0 - dist.ravel(), 0.0, None), (rows, idx.ravel())),
                      shape=(n, n)).tolil()
    W = W.maximum(W.T).tolil()
    for i, j in np.asarray(must).reshape(-1, 2):
        W[i, j] = W[j, i] = 1.0
    for i, j in np.asarray(cannot).reshape(-1, 2):
        W[i, j] = W[j, i] = 0.0
    W = W.tocsr()
    W.eliminate_zeros()
    return SpectralClustering(c, affinity="precomputed", n_init=10, random_state=seed,
                              assign_labels="kmeans").fit_predict(W)


def mean_imputed(views, mask):
    """Each view with its missing rows (``mask[:, v]`` False) set to the mean of its
    observed rows, feature by feature."""
    out = []
    for v, X in enumerate(views):
        present = np.asarray(mask[:, v], dtype=bool)
        Z = np.array(X, dtype=np.float64, copy=True)
        Z[~present] = Z[present].mean(axis=0) if present.any() else 0.0
        out.append(Z)
    return out


def _variants(kind, views, y, seed):
    """``{variant: labels}`` for one seed."""
    import fastmv
    c = len(np.unique(y))
    if kind == "incomplete-imputed":
        mask = fastmv.simulate.incomplete_mask(len(y), len(views), MISSING, random_state=seed)
        views = mean_imputed(views, mask)
    concat = concatenations(views)
    out = {f"kmeans-{name}": _kmeans(X, c, seed) for name, X in concat.items()}
    if kind == "labels":
        for name in ("l2", "zscore"):
            out[f"labelspreading-{name}"] = _label_spreading(concat[name], y, seed)
    elif kind == "pairs":
        must, cannot = fastmv.simulate.pairwise_constraints(
            y, PAIRS_PER_SAMPLE * len(y), random_state=seed)
        out["constrained-spectral-l2"] = constrained_spectral(concat["l2"], c, must, cannot,
                                                              seed)
    return out


def _cache_path(name, kind, seeds, views):
    root = Path(os.environ.get("FASTMV_BASELINE_CACHE", "/tmp/fastmv_baseline"))
    root.mkdir(parents=True, exist_ok=True)
    tag = "-".join(str(s) for s in seeds)
    vtag = "" if views is None else "_v" + "-".join(str(v) for v in views)
    return root / f"v{VERSION}_{name}{vtag}_{kind}_{tag}.json"


def _scored_variants(kind, views, y, seed):
    """``{variant: (ACC, NMI)}`` for one seed."""
    if kind != "unmapped-per-view":
        return {v: _scores(y, labels) for v, labels in _variants(kind, views, y, seed).items()}
    import fastmv
    c = len(np.unique(y))
    uviews, uy, _ = fastmv.simulate.unmapped(views, y, keep=KEEP, random_state=seed)
    out = {}
    for name in ("raw", "l2", "zscore"):
        scores = [_scores(t, _kmeans(concatenations([np.asarray(X)])[name], c, seed))
                  for X, t in zip(uviews, uy)]
        out[f"kmeans-{name}-per-view"] = tuple(float(np.mean(col)) for col in zip(*scores))
    return out


def baseline(name, kind="none", seeds=range(5), *, views=None, cache=True):
    """The best simple alternative on one shared dataset.

    Parameters
    ----------
    name : str
        File stem of a shared dataset (one of :data:`DATASETS`).
    kind : str
        One of :data:`KINDS`: the side information the compared solver gets (see the module
        docstring);
        ``"incomplete"`` and ``"unmapped"`` are compared with ``"none"`` on the complete data;
        ``"incomplete-imputed"`` clusters the same incomplete data, mean-imputed, and
        ``"unmapped-per-view"`` each unmapped view on its own.
    seeds : iterable of int
        Seeds of the k-means restarts and of the simulated supervision.
    views : sequence of int, optional
        Indices of the views used (as the compared solver's protocol), default all.
    cache : bool
        Read / write the JSON cache.

    Returns
    -------
    dict
        ``best`` (variant name), ``acc`` / ``nmi`` (mean and std of the best variant, each a
        ``[mean, std]`` pair) and ``variants`` (``{name: {"acc": [...], "nmi": [...]}}``, the
        per-seed scores of every variant).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    base_kind = "none" if kind in ("incomplete", "unmapped") else kind
    seeds = [int(s) for s in seeds]
    path = _cache_path(name, base_kind, seeds, views)
    if cache and path.exists():
        return json.loads(path.read_text())
    Xs, y = load(name, views)
    per = {}
    for seed in seeds:
        for variant, (acc, nmi) in _scored_variants(base_kind, Xs, y, seed).items():
            entry = per.setdefault(variant, {"acc": [], "nmi": []})
            entry["acc"].append(acc)
            entry["nmi"].append(nmi)
    best = max(per, key=lambda v: np.mean(per[v]["acc"]))
    result = {
        "dataset": name, "kind": base_kind, "seeds": seeds, "views": views, "best": best,
        "acc": [float(np.mean(per[best]["acc"])), float(np.std(per[best]["acc"]))],
        "nmi": [float(np.mean(per[best]["nmi"])), float(np.std(per[best]["nmi"]))],
        "variants": per,
    }
    if cache:
        path.write_text(json.dumps(result))
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    names = [argv[0]] if argv and argv[0] != "all" else list(DATASETS)
    kinds = [argv[1]] if len(argv) > 1 else ["none", "labels", "pairs"]
    for name in names:
        for kind in kinds:
            r = baseline(name, kind)
            print(f"{name:13s} {kind:7s} {r['best']:26s} ACC {r['acc'][0]:.3f} ± {r['acc'][1]:.3f}"
                  f"  NMI {r['nmi'][0]:.3f} ± {r['nmi'][1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
