"""The toy's cases for the tests that run every solver (``tests/solvers.py``): what a new
solver writes beside its tests. The toy is pure NumPy (nothing to compile, no memory
estimate, nothing long enough to interrupt) and lives outside the package (its warnings
point at its own lines), so it declares no ``COLD_COMPILES``, ``refusal_calls``,
``interrupt_call`` or ``no_convergence``."""
import numpy as np

from ._solver import toy

#: ``python -m fastmv run toy`` options that keep a real run quick
CLI_QUICK = ["--max_iter", "5"]
#: the fields of a result cut short in the load test
CUT_FIELDS = ("objective",)


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: the side-information files of a run without labels."""
    part = np.where(rng.random(y0.size) < 0.2, y0, -1)
    np.savetxt(folder / "labels.txt", part, fmt="%d")
    return views, ["--labels", str(folder / "labels.txt")]


def result(views, y, c, tuned):
    """A result on ``views``."""
    labels = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    return toy(views, c, labels=labels if tuned else None, random_state=0)

