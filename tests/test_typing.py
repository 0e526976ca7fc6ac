"""The public functions are fully annotated (the package ships ``py.typed``)."""
import inspect
import typing

import pytest

import fastmv
from fastmv import datasets, metrics, plot, simulate


def _public_functions():
    found = {}
    for name in fastmv.__all__:
        obj = getattr(fastmv, name)
        if inspect.isfunction(obj):
            found[f"fastmv.{name}"] = obj
    for module in (metrics, simulate, plot, datasets):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                found[f"{module.__name__}.{name}"] = obj
    for name in ("save", "to_dict"):
        found[f"fastmv.Result.{name}"] = getattr(fastmv.Result, name)
    found["fastmv.Result.load"] = fastmv.Result.load.__func__
    return found


PUBLIC = _public_functions()


def test_the_public_api_has_functions():
    assert {"fastmv.mvmc", "fastmv.kmeans", "fastmv.thread_limit", "fastmv.metrics.nmi",
            "fastmv.datasets.load_mat", "fastmv.plot.embedding"} <= set(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_parameter_and_the_return_are_annotated(name):
    func = PUBLIC[name]
    hints = typing.get_type_hints(func)  # the annotations must resolve, too
    params = [p for p in inspect.signature(func).parameters if p not in ("self", "cls")]
    missing = [p for p in params if p not in hints]
    assert not missing, f"{name}: parameters without annotations: {missing}"
    assert "return" in hints, f"{name}: no return annotation"
