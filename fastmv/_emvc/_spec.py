"""EMVC's specification: what the package's registry, command line, estimators and common
tests know about it (see :mod:`fastmv._core._spec`)."""
from __future__ import annotations

from .._core._spec import Setting, SolverSpec, blobs, planted, warmup_call

_AFFINITY_DOC = """\
affinity : {'transition_matrix', 'precomputed'}, default 'transition_matrix'
    How ``fit`` reads ``Xs``. ``'transition_matrix'``: feature views (n, d_v), each turned
    into its transition matrix by :func:`fastmv.transition_matrix` with its defaults (the
    README's route, ``[fastmv.transition_matrix(X) for X in views]``); ``predict``,
    ``transform`` and ``score`` then take feature views too. ``'precomputed'``: ``Xs`` are
    the row-stochastic transition matrices themselves, each (n, n), as
    ``SpectralClustering(affinity="precomputed")`` takes an affinity matrix (no prediction
    for new samples)."""


def _warmup(dtype=None, sparse=False):
    from .._blocks._affinity import transition_matrices  # noqa: PLC0415 (on first use)
    from . import _solver  # noqa: PLC0415

    dtype = dtype or "float64"
    views, _ = blobs(40, (5, 4), 3, sparse=sparse)
    # the graph every EMVC entry point builds by default: fastmv.transition_matrix of the raw
    # view (fastmv.estimators.EMVC_LAMBDA)
    P_list = [P.astype(dtype) for P in transition_matrices(views, normalize=False)]
    warmup_call(_solver.emvc, P_list, 0.01, 0.01, n_clusters=3, max_iter=3, random_state=0,
                dtype=dtype)


def _demo(seed):
    import numpy as np  # noqa: PLC0415

    from .. import datasets, simulate  # noqa: PLC0415
    from .._blocks._affinity import transition_matrices  # noqa: PLC0415
    from .._blocks._spectral import markov_spectral_clustering  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    views, y = datasets.load_handwritten(["fou", "pix"])
    idx = np.sort(np.concatenate([rng.choice(np.flatnonzero(y == k), 50, replace=False)
                                  for k in np.unique(y)]))
    views, y = [X[idx] for X in views], y[idx]
    settings = []
    for corrupted in (False, True):
        # each view damaged its own way (fou: 20% of its entries; pix: 40% of its samples,
        # others than fou's), the errors EMVC's per-view sparse terms are there to absorb
        Xs = ([simulate.corrupt(views[0], "entries", 0.2, random_state=seed),
               simulate.corrupt(views[1], "samples", 0.4, random_state=seed + 5)]
              if corrupted else views)
        P_list = transition_matrices(Xs)
        tag = "corrupt" if corrupted else "clean"

        def mean(P_list=P_list):
            P = sum(P_list) / len(P_list)
            return [(y, markov_spectral_clustering(P, 10, random_state=seed))], None

        def solve(P_list=P_list):
            res = _solver.emvc(P_list, 0.01, 0.01, n_clusters=10, random_state=seed)
            return [(y, res.labels)], res
        settings += [Setting(f"{tag}: mean of P_v", mean), Setting(f"{tag}: EMVC", solve)]
    return settings


def _fixture():
    from .._blocks._affinity import transition_matrix  # noqa: PLC0415

    views, y = planted()
    P = [transition_matrix(X) for X in views]
    return (P, 0.01, 0.01), {"n_clusters": 3, "max_iter": 3}, y


def _embedding(result, y_pred):
    from .. import plot  # noqa: PLC0415 (matplotlib: on first use)

    return plot.embedding(result.P_hat, y_pred, similarity=True)


SPEC = SolverSpec(
    name="emvc",
    module="fastmv._emvc._solver",
    result="EMVCResult",
    estimator="EMVC",
    description="error-robust Markov-chain clustering of per-view transition matrices",
    side=(),
    warmup=_warmup,
    demo=_demo,
    demo_note="Handwritten fou+pix, 500-sample subsample, lam1=lam2=0.01; corrupt: 20% of "
              "fou's entries and 40% of pix's samples replaced by noise",
    fixture=_fixture,
    plots=(("embedding", _embedding),),
    # the function leaves n_clusters None (P_hat alone); an estimator must label the samples
    estimator_defaults={"n_clusters": 2},
    estimator_parameters={"affinity": ("transition_matrix", _AFFINITY_DOC)},
)
