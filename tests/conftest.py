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

SHARED_DATASETS = Path(
    os.environ.get("FASTMV_SHARED_DATASETS",
                   Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
)


def shared_dataset(filename: str) -> Path:
    """Path of ``../shared/datasets/<filename>``, or skip the test when it is absent."""
    path = SHARED_DATASETS / filename
    if not path.is_file():
        pytest.skip(f"real dataset {filename} not found under {SHARED_DATASETS}")
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
