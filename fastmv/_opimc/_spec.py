"""OPIMC's specification: what the package's registry, command line, estimators and common
tests know about it (see :mod:`fastmv._core._spec`)."""
from __future__ import annotations

from .._core._spec import Setting, SolverSpec, blobs, planted, warmup_call


def _warmup(dtype=None, sparse=False):
    from .. import simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415 (the kernels: on first use)

    # five views, as in the demo: the per-view gather kernel is specialised on their number
    views, _ = blobs(60, (5, 4, 3, 3, 3), 3, dtype=dtype or "float64", sparse=sparse)
    mask = simulate.incomplete_mask(60, 5, 0.3, random_state=0)
    warmup_call(_solver.opimc, views, 3, mask=mask, chunk_size=20, random_state=0, max_iter=2)


def _demo(seed):
    from .. import datasets, simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415

    # the file is sorted by class; opimc visits its rows in a seeded random order (shuffle=True)
    views, y = datasets.load_handwritten(["fou", "fac", "kar", "pix", "zer"])
    mask = simulate.incomplete_mask(y.size, len(views), 0.4, random_state=seed)
    def one_pass():
        res = _solver.opimc(views, 10, mask=mask, alpha=0.1, chunk_size=50,
                            random_state=seed, max_iter=1)
        return [(y, res.labels)], res

    def passes():  # further passes until the loss settles (a few here)
        res = _solver.opimc(views, 10, mask=mask, alpha=0.1, chunk_size=50,
                            random_state=seed, max_iter=20, tol=1e-3)
        return [(y, res.labels)], res
    return [Setting("1 pass", one_pass), Setting("passes to tol 1e-3", passes)]


def _fixture():
    import numpy as np  # noqa: PLC0415

    views, y = planted()
    mask = np.ones((y.size, len(views)), dtype=bool)
    mask[::4, 0] = False
    return (views, 3), {"mask": mask, "chunk_size": 10}, y


SPEC = SolverSpec(
    name="opimc",
    module="fastmv._opimc._solver",
    result="OPIMCResult",
    estimator="OPIMC",
    description="one-pass streaming clustering of incomplete views",
    side=("mask",),
    warmup=_warmup,
    demo=_demo,
    demo_note=("Handwritten 5 views, 40% missing per view, chunk 50, alpha 0.1 "
               "(rows visited in a random order)"),
    fixture=_fixture,
)
