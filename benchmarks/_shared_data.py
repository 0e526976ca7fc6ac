"""Where the shared benchmark datasets are: one lookup for tests, benchmarks and tools.

The real multi-view benchmark files (``3Sources.mat``, ``BBCSport.mat``, ...) are not part of
the repository or the wheel. They are looked up in ``$FASTMV_SHARED_DATASETS`` when it is
set, else in ``../shared/datasets`` beside a source checkout (seen from the current
directory or from this folder's location). Test and benchmark plumbing: it lives here, not
in the package, so the wheel does not ship it.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_datasets_dir", "shared_dataset", "shared_dataset_names"]


def shared_datasets_dir() -> Path | None:
    """The directory holding the shared datasets, or ``None`` when none is found."""
    env = os.environ.get("FASTMV_SHARED_DATASETS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent  # benchmarks/, one level below the checkout
    for root in (Path.cwd(), here):
        for base in (root, *root.parents[:2]):
            candidate = base.parent / "shared" / "datasets"
            if candidate.is_dir():
                return candidate
    return None


def shared_dataset(filename: str) -> Path | None:
    """Path of a shared dataset file, or ``None`` when it is not available here."""
    folder = shared_datasets_dir()
    if folder is None:
        return None
    path = folder / filename
    return path if path.is_file() else None


def shared_dataset_names() -> tuple:
    """The stems of every ``.mat`` file in the shared folder, sorted case-insensitively (empty
    when there is no folder): tables and benchmarks discover the datasets, none lists them."""
    folder = shared_datasets_dir()
    if folder is None or not folder.is_dir():
        return ()
    return tuple(sorted((p.stem for p in folder.glob("*.mat")), key=str.lower))
