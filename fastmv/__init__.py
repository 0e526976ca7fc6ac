"""fastmv: fast, validated multi-view clustering.

Five solvers behind plain functions, each taking arrays and returning a frozen result
object (``labels``, learned matrices, ``objective`` history, ``n_iter``, ``converged``):

- :func:`mvmc` — multi-view matrix completion with must-link / cannot-link pairs
- :func:`mvfl` — joint view/feature selection with partial labels or pairs
- :func:`emvc` — error-robust Markov-chain clustering of transition matrices
- :func:`cmvnmf` — constrained NMF on unmapped views
- :func:`opimc` — one-pass streaming clustering of incomplete views

Shared building blocks: :func:`kmeans`, :func:`spectral_clustering`,
:func:`markov_spectral_clustering`, :func:`transition_matrix`, and the modules
:mod:`fastmv.metrics`, :mod:`fastmv.simulate`, :mod:`fastmv.datasets`.

The hot loops are Numba kernels in :mod:`fastmv.kernels`. Attributes are imported lazily,
so ``import fastmv`` is cheap and a solver's kernels compile (or load from Numba's cache)
on first use.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import TYPE_CHECKING

__version__ = "0.2.0"


def _map_source_kernels():
    """Make ``fastmv.kernels`` importable when ``fastmv`` is imported from a source checkout.

    Installed (wheel or editable), ``kernels/`` is ``fastmv.kernels``. From the repository
    root, however, the local ``fastmv/`` shadows any installed copy and ``kernels/`` sits
    beside it rather than inside it; map it here so ``pip install . && python -m fastmv
    demo`` works from the checkout too. Nothing happens when ``fastmv/kernels`` exists
    (wheel) or when the name is already imported.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.isdir(os.path.join(here, "kernels")) or "fastmv.kernels" in sys.modules:
        return
    source = os.path.join(os.path.dirname(here), "kernels")
    init = os.path.join(source, "__init__.py")
    if not os.path.isfile(init):
        return
    spec = importlib.util.spec_from_file_location(
        "fastmv.kernels", init, submodule_search_locations=[source])
    module = importlib.util.module_from_spec(spec)
    sys.modules["fastmv.kernels"] = module
    spec.loader.exec_module(module)


_map_source_kernels()

# the registry of solvers (light: reading it imports no kernels, nor numpy)
from ._core._spec import solver_specs as _solver_specs  # noqa: E402


def _solver_names():
    """Public name -> module, for every registered solver: its function, result and
    estimator (the registry: :mod:`fastmv._core._spec`)."""
    names = {}
    for spec in _solver_specs().values():
        names[spec.name] = names[spec.result] = spec.module
        names[spec.estimator] = ".estimators"
    return names


# public name -> private module that defines it
_LAZY = {
    **_solver_names(),
    "kmeans": "._blocks._kmeans",
    "spectral_clustering": "._blocks._spectral",
    "spectral_embedding": "._blocks._spectral",
    "markov_spectral_clustering": "._blocks._spectral",
    "stationary_distribution": "._blocks._spectral",
    "transition_matrix": "._blocks._affinity",
    "thread_limit": "._core._threads",
    "memory_limit": "._core._memory",
    "Result": "._core._result",
    "KMeansResult": "._blocks._kmeans",
    "ConvergenceWarning": ".exceptions",
    "DegenerateSolutionWarning": ".exceptions",
}
_SUBMODULES = {"metrics", "simulate", "datasets", "kernels", "exceptions", "estimators", "plot"}

__all__ = sorted(set(_LAZY) | _SUBMODULES)

if TYPE_CHECKING:  # the lazy names, for IDEs and type checkers (``X as X``: re-exported)
    from . import datasets as datasets
    from . import estimators as estimators
    from . import exceptions as exceptions
    from . import kernels as kernels
    from . import metrics as metrics
    from . import plot as plot
    from . import simulate as simulate
    from ._blocks._affinity import transition_matrix as transition_matrix
    from ._blocks._kmeans import KMeansResult as KMeansResult
    from ._blocks._kmeans import kmeans as kmeans
    from ._blocks._spectral import markov_spectral_clustering as markov_spectral_clustering
    from ._blocks._spectral import spectral_clustering as spectral_clustering
    from ._blocks._spectral import spectral_embedding as spectral_embedding
    from ._blocks._spectral import stationary_distribution as stationary_distribution
    from ._cmvnmf._solver import CMVNMFResult as CMVNMFResult
    from ._cmvnmf._solver import cmvnmf as cmvnmf
    from ._core._memory import memory_limit as memory_limit
    from ._core._result import Result as Result
    from ._core._threads import thread_limit as thread_limit
    from ._emvc._solver import EMVCResult as EMVCResult
    from ._emvc._solver import emvc as emvc
    from ._mvfl._solver import MVFLResult as MVFLResult
    from ._mvfl._solver import mvfl as mvfl
    from ._mvmc._solver import MVMCResult as MVMCResult
    from ._mvmc._solver import mvmc as mvmc
    from ._opimc._solver import OPIMCResult as OPIMCResult
    from ._opimc._solver import opimc as opimc
    from .estimators import CMVNMF as CMVNMF
    from .estimators import EMVC as EMVC
    from .estimators import MVFL as MVFL
    from .estimators import MVMC as MVMC
    from .estimators import OPIMC as OPIMC
    from .exceptions import ConvergenceWarning as ConvergenceWarning
    from .exceptions import DegenerateSolutionWarning as DegenerateSolutionWarning


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name], __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    registered = _solver_names()  # a solver registered since import (not cached: it may go)
    if name in registered:
        return getattr(importlib.import_module(registered[name], __name__), name)
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'fastmv' has no attribute {name!r}")


def __dir__():
    return sorted(set(__all__) | set(_solver_names())) + ["__version__"]
