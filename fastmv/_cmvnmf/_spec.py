"""CMVNMF's specification: what the package's registry, command line, estimators and common
tests know about it (see :mod:`fastmv._core._spec`)."""
from __future__ import annotations

from .._core._spec import Setting, SolverSpec, blobs, planted, warmup_call


def _warmup(dtype=None, sparse=False):
    from .. import simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415 (the kernels: on first use)

    views, y = blobs(40, (5, 4), 3, dtype=dtype or "float64", sparse=sparse, nonnegative=True)
    ml, cl = simulate.inter_view_constraints([y, y], ratio=0.05, random_state=0)
    warmup_call(_solver.cmvnmf, views, 3, ml, cl, max_iter=2, random_state=0)


def _demo(seed):
    from .. import datasets, simulate  # noqa: PLC0415
    from . import _solver  # noqa: PLC0415

    views, y = datasets.load_handwritten(["fou", "pix", "zer"])
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=seed)
    # 2% of the cross pairs tie the views as well as 5% (docs/records/cmvnmf.md, "The demo")
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.02, random_state=seed)
    # Without pairs one start with tol=1e-4 (docs/records/cmvnmf-nopairs.md, "The demo")
    # scores as well as the default five (every view keeps its best-separated partition
    # either way) at a fifth of the cost; with pairs the default start is the must-link one,
    # a single start.

    def unconstrained():
        res = _solver.cmvnmf(Xs, 10, {}, {}, n_init=1, tol=1e-4, random_state=seed)
        return list(zip(ys, res.labels)), res

    def constrained():
        # beta fixed: beta="auto" would add its validation fits (docs/defaults.md,
        # "Self-tuning")
        res = _solver.cmvnmf(Xs, 10, ml, cl, beta=1.0, random_state=seed)
        return list(zip(ys, res.labels)), res

    return [Setting("no pairs, per view (1 start, tol 1e-4)", unconstrained),
            Setting("2% pairs, views jointly (must-link start)", constrained)]


def _fixture():
    import numpy as np  # noqa: PLC0415

    views, y = planted(nonnegative=True)
    pairs = np.column_stack([np.arange(0, 30, 3), np.arange(0, 30, 3)])
    cannot = np.column_stack([np.arange(0, 10), np.arange(10, 20)])
    return (views, 3, {(0, 1): pairs}, {(0, 1): cannot}), {"max_iter": 3}, y


SPEC = SolverSpec(
    name="cmvnmf",
    module="fastmv._cmvnmf._solver",
    result="CMVNMFResult",
    estimator="CMVNMF",
    description="constrained NMF on unmapped views with inter-view pairs",
    side=("must", "cannot"),
    warmup=_warmup,
    demo=_demo,
    demo_note="Handwritten fou+pix+zer unmapped (95% kept, rows permuted per view), 2% of "
              "cross pairs as constraints",
    fixture=_fixture,
)
