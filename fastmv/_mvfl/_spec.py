"""MVFL's specification: what the package's registry, command line, estimators and common
tests know about it (see :mod:`fastmv._core._spec`)."""
from __future__ import annotations

from .._core._spec import Setting, SolverSpec, blobs, planted, warmup_call


def _warmup(dtype=None, sparse=False):
    from .. import simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415 (the kernels: on first use)

    views, y = blobs(60, (5, 4), 3, dtype=dtype or "float64", sparse=sparse)
    lab = simulate.partial_labels(y, 0.3, random_state=0)
    warmup_call(_solver.mvfl, views, 3, labels=lab, max_iter=2, random_state=0)
    ml, cl = simulate.pairwise_constraints(y, 50, random_state=0)
    warmup_call(_solver.mvfl, views, 3, must_link=ml, cannot_link=cl, max_iter=2,
                random_state=0)


def _demo(seed):
    from .. import datasets, simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415

    views, y = datasets.load_handwritten(["fou", "fac", "zer"])

    def kmeans():  # what MVFL is measured against: k-means of the scaled concatenation
        import numpy as np  # noqa: PLC0415

        from .._blocks._kmeans import kmeans as _kmeans  # noqa: PLC0415

        Z = []
        for X in views:
            X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
            Z.append(X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12))
        res = _kmeans(np.hstack(Z), 10, n_init=10, random_state=seed)
        return [(y, res.labels)], None

    lab = simulate.partial_labels(y, 0.1, random_state=seed)

    def labels():
        res = _solver.mvfl(views, 10, labels=lab, random_state=seed)
        return [(y, res.labels)], res

    # pairs among 10% of the samples do not beat the k-means row; among 20% they do
    ml, cl = simulate.pairs_from_labels(simulate.partial_labels(y, 0.2, random_state=seed))

    def pairs():
        res = _solver.mvfl(views, 10, must_link=ml, cannot_link=cl, random_state=seed)
        return [(y, res.labels)], res

    return [Setting("no prior: k-means", kmeans), Setting("10% labels", labels),
            Setting("pairs in 20%", pairs)]


def _fixture():
    import numpy as np  # noqa: PLC0415

    views, y = planted()
    labels = np.full(y.size, -1)
    labels[::5] = y[::5]
    return (views, 3), {"labels": labels, "max_iter": 3}, y


def _view_weights(result, y_pred):
    from .. import plot  # noqa: PLC0415 (matplotlib: on first use)

    return plot.view_weights(result, view_names=["fou", "fac", "zer"])


SPEC = SolverSpec(
    name="mvfl",
    module="fastmv._mvfl._solver",
    result="MVFLResult",
    estimator="MVFL",
    description="joint view/feature selection with partial labels or pairs",
    side=("labels", "must", "cannot"),
    warmup=_warmup,
    demo=_demo,
    demo_note="Handwritten fou+fac+zer (n=2000), lam1=lam2=1e-3; baseline: k-means of the "
              "z-scored, L2-normalised views side by side",
    fixture=_fixture,
    plots=(("view_weights", _view_weights),),
)
