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

__version__ = "0.1.0"


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

# public name -> private module that defines it
_LAZY = {
    "mvmc": "._mvmc",
    "mvfl": "._mvfl",
    "emvc": "._emvc",
    "cmvnmf": "._cmvnmf",
    "opimc": "._opimc",
    "kmeans": "._kmeans",
    "KMeansResult": "._kmeans",
    "spectral_clustering": "._spectral",
    "spectral_embedding": "._spectral",
    "markov_spectral_clustering": "._spectral",
    "stationary_distribution": "._spectral",
    "transition_matrix": "._affinity",
    "thread_limit": "._threads",
    "Result": "._result",
    "ConvergenceWarning": ".exceptions",
    "DegenerateSolutionWarning": ".exceptions",
}
_SUBMODULES = {"metrics", "simulate", "datasets", "kernels", "exceptions"}

__all__ = sorted(set(_LAZY) | _SUBMODULES)


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name], __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'fastmv' has no attribute {name!r}")


def __dir__():
    return __all__ + ["__version__"]
