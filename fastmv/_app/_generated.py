"""The estimator of a registered solver that has no hand-written class in
:mod:`fastmv.estimators`, generated from the solver's signature and docstring (that module's
``__getattr__`` and ``all_estimators`` hand it out).
"""
from __future__ import annotations

import inspect
import textwrap

from ._clusterer import MultiViewClusterer
from ._estimator_docs import SIDE_ARGS, document, init_source

_CACHE: dict = {}


def generated_estimator(spec):
    """The estimator of a solver without a hand-written class in :mod:`fastmv.estimators`
    (one class per solver, the same on every call, named as that module's for pickling):
    ``__init__`` with the solver's hyper-parameters and defaults
    (:func:`fastmv._app._estimator_docs.init_source`), ``fit(Xs, y=None, view_sizes=None,
    **side_information)``."""
    key = (spec.name, spec.module)
    if key in _CACHE:
        return _CACHE[key]
    func = spec.function
    namespace: dict = {}
    exec(textwrap.dedent(init_source(func)), namespace)  # an explicit signature, as sklearn wants
    sides = [p for p in inspect.signature(func).parameters if p in SIDE_ARGS]

    def fit(self, Xs, y=None, view_sizes=None, **side_information):
        unknown = sorted(set(side_information) - set(sides))
        if unknown:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected side information "
                            f"{unknown}; {spec.name} takes {sides}")
        return self._fit(self._views(Xs, view_sizes, y), side_information)

    cls = type(spec.estimator, (MultiViewClusterer,),
               {"__init__": namespace["__init__"], "fit": fit, "__module__": "fastmv.estimators",
                "__qualname__": spec.estimator, "_sparse_views": spec.sparse})
    document(cls, func, f"{spec.description[:1].upper()}{spec.description[1:]}, as an "
              f"estimator.\n\nWraps :func:`fastmv.{spec.name}`.", "")
    _CACHE[key] = cls
    return cls
