"""Shared test fixtures.

Real benchmark data lives outside the repository, at ``../shared/datasets`` beside the
checkout (override with ``FASTMV_SHARED_DATASETS``). Tests that need it use
:func:`shared_dataset`, which skips cleanly when the file is absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from benchmarks._shared_data import shared_dataset as _find
from benchmarks._shared_data import shared_datasets_dir

SHARED_DATASETS = shared_datasets_dir()

# With FASTMV_STRICT_EXTRAS=1 (CI sets it), a module that an installed extra provides must
# import: pytest.importorskip imports it plainly, so an import error fails the test instead
# of hiding a broken extra behind a skip. Modules of no extra (peers such as imml) still skip.
if os.environ.get("FASTMV_STRICT_EXTRAS") == "1":
    import importlib

    from tests.extras import strict_modules

    _STRICT = strict_modules()
    _importorskip = pytest.importorskip

    def _strict_importorskip(modname, *args, **kwargs):
        if modname.split(".")[0] in _STRICT:
            return importlib.import_module(modname)
        return _importorskip(modname, *args, **kwargs)

    pytest.importorskip = _strict_importorskip


def shared_dataset(filename: str) -> Path:
    """Path of a shared dataset file, or skip the test when it is absent."""
    path = _find(filename)
    if path is None:
        pytest.skip(f"real dataset {filename} not found (set FASTMV_SHARED_DATASETS)")
    return path


def pytest_collection_modifyitems(config, items):
    """Each solver's own folder of tests, ``tests/<solver>/`` for every solver the registry
    knows, runs with the slow tests: its kernels against their NumPy twins at many shapes and
    dtypes, its real-data checks. The quick run (``-m "not slow"``) keeps the public surface,
    hostile input, the shared blocks and the common battery that every solver passes."""
    from fastmv._core._spec import solver_specs

    tests = Path(__file__).resolve().parent
    folders = {tests / name for name in solver_specs()}
    for item in items:
        if any(folder in item.path.parents for folder in folders):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# tests/test_new_solver.py runs the common tests in a child process with the toy solver
# registered (the stand-in for a new solver's one registry line)
if os.environ.get("FASTMV_TEST_TOY_SOLVER") == "1":
    from fastmv._core._spec import registered
    from tests.toy import SPEC as _TOY

    _TOY_REGISTRATION = registered(_TOY)  # held for the session's lifetime
    _TOY_REGISTRATION.__enter__()


def default_sigint():
    """``preexec_fn`` of a child that is sent Ctrl-C: its SIGINT at the default disposition,
    as at an interactive terminal. A shell starts background jobs with SIGINT ignored, a
    disposition children inherit and Python keeps, and a child that ignores Ctrl-C would
    not test what Ctrl-C does."""
    import signal  # noqa: PLC0415

    signal.signal(signal.SIGINT, signal.SIG_DFL)
