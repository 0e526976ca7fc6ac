"""MVMC's specification: what the package's registry, command line, estimators and common
tests know about it (see :mod:`fastmv._core._spec`)."""
from __future__ import annotations

from .._core._spec import Setting, SolverSpec, blobs, planted, warmup_call


def _warmup(dtype=None, sparse=False):
    from .. import simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415 (the kernels: on first use)

    views, y = blobs(60, (5, 4), 3, dtype=dtype or "float64", sparse=sparse)
    ml, cl = simulate.pairwise_constraints(y, 200, random_state=0)
    warmup_call(_solver.mvmc, views, 3, ml, cl, k=4, max_iter=2, random_state=0)
    # Problems beyond one tile also run float32 specialisations of the clipping kernels (their
    # passes over S); a small problem never does, so they compile on the first large call,
    # where their compile time is small beside the solve (docs/records/mvmc.md, "Cold first call").


def _demo(seed):
    from .. import datasets, simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415

    views, y = datasets.load_handwritten(["fou", "fac", "zer"])
    settings = []
    for p in (1000, 5000):
        ml, cl = simulate.pairwise_constraints(y, p, random_state=seed)

        def solve(ml=ml, cl=cl):
            res = _solver.mvmc(views, 10, ml, cl, random_state=seed)
            return [(y, res.labels)], res
        settings.append(Setting(f"{p} pairs", solve))
    return settings


def _fixture():
    from .. import simulate  # noqa: PLC0415

    views, y = planted()
    must, cannot = simulate.pairwise_constraints(y, 60, random_state=0)
    return (views, 3, must, cannot), {"max_iter": 3}, y


SPEC = SolverSpec(
    name="mvmc",
    module="fastmv._mvmc._solver",
    result="MVMCResult",
    estimator="MVMC",
    description="multi-view matrix completion with must-link / cannot-link pairs",
    side=("must", "cannot"),
    warmup=_warmup,
    demo=_demo,
    demo_note="Handwritten fou+fac+zer (n=2000), random pairs, C1=100, C2=1, k=\"auto\"",
    fixture=_fixture,
)
