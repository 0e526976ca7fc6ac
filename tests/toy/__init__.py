"""A sixth solver that lives outside the package: what a new solver writes, and nothing else.

``SPEC`` (in ``_spec``) is all the package needs: ``fastmv._core._spec.registered(SPEC)``
plays the role of the one registry line (``SOLVER_PACKAGES``); ``cases`` holds its part of
the tests that run every solver. tests/test_new_solver.py registers it and shows that the
parametrised tests, the command line, the estimators, the benchmarks and ``fastmv``'s names
pick it up.
"""
from ._spec import SPEC

__all__ = ["SPEC"]
