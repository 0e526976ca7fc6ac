"""The toy solver's spec."""
from fastmv._core._spec import Setting, SolverSpec, blobs, planted, warmup_call


def _warmup(dtype=None, sparse=False):
    from ._solver import toy

    views, _ = blobs(30, (4, 3), 3, dtype=dtype or "float64")
    warmup_call(toy, views, 3, max_iter=2, random_state=0)


def _demo(seed):
    from fastmv import datasets

    from ._solver import toy

    views, y = datasets.load_handwritten(["fou", "zer"])

    def solve():
        res = toy(views, 10, random_state=seed)
        return [(y, res.labels)], res
    return [Setting("two views", solve)]


def _fixture():
    views, y = planted()
    labels = y.copy()
    labels[1::2] = -1
    return (views, 3), {"labels": labels, "max_iter": 5}, y


SPEC = SolverSpec(
    name="toy",
    module="tests.toy._solver",
    result="ToyResult",
    estimator="Toy",
    description="k-means on the normalised views side by side (a test's toy)",
    side=("labels",),
    warmup=_warmup,
    demo=_demo,
    demo_note="Handwritten fou+zer, no side information",
    fixture=_fixture,
    sparse=False,
)
