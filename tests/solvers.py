"""The solvers the tests run, from the registry, and each solver's own test cases.

A test that runs every solver takes the names from :func:`fastmv._core._spec.solver_specs`
(:data:`SOLVERS`) and what one solver needs there — its quick command-line options, the side
information files it reads, a call that does not converge, the problem that fills a result —
from ``tests/<solver>/cases.py`` (:func:`cases`), written beside the solver's own tests.

Every solver declares ``CLI_QUICK`` (options that keep a real ``python -m fastmv run``
quick), ``CUT_FIELDS`` (result fields cut short in the load test), ``cli_side_files`` and
``result``. The rest a solver declares when it applies: ``COLD_COMPILES``, ``no_convergence``,
``interrupt_call``, ``refusal_calls``, ``several_starts`` (the tests that need one run on the
solvers that declare it, :func:`declaring`), and ``CLI_SIMULATE``, ``RESULT_VARIANTS``,
``FAULT_OPTIONS``, ``LEAK_OPTIONS``, ``INTERRUPT_N``, ``estimator_side`` (defaults in the
tests, :func:`case`). ``tests/toy/cases.py`` is the smallest example.
"""
from __future__ import annotations

import importlib

from fastmv._core._spec import solver_specs

#: the registered solvers, in registry order (the tests' toy too when it is registered)
SOLVERS = tuple(solver_specs())


def cases(name):
    """The module ``tests/<name>/cases.py`` of the solver ``name``."""
    return importlib.import_module(f"tests.{name}.cases")


def declaring(attribute):
    """The solvers whose cases declare ``attribute``, in registry order."""
    return [name for name in SOLVERS if hasattr(cases(name), attribute)]


def case(name, attribute, default):
    """``cases(name).attribute``, or ``default`` when the solver declares none."""
    return getattr(cases(name), attribute, default)
