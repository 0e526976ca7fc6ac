"""MVFL's cases for the tests that run every solver (``tests/solvers.py``): its quick
command line, its side-information files, the calls that fill a result, that do not
converge, that are interrupted, that are refused for memory and that run several starts."""
import numpy as np

import fastmv
from fastmv import simulate

#: ``python -m fastmv run mvfl`` options that keep a real run quick
CLI_QUICK = ["--max_iter", "10"]
#: what a cold warm-up may compile: the package's own functions, and all of them
COLD_COMPILES = (7, 16)
#: the fields of a result cut short in the load test
CUT_FIELDS = ("F", "W", "b")
#: the strict-JSON test also runs MVFL with labels that are all unknown
RESULT_VARIANTS = ("unknown-labels",)
#: samples of the interrupted solve
INTERRUPT_N = 6000


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: the side-information files of a run without labels."""
    part = np.where(rng.random(y0.size) < 0.2, y0, -1)
    np.savetxt(folder / "labels.txt", part, fmt="%d")
    return views, ["--labels", str(folder / "labels.txt")]


def result(views, y, c, tuned, variant=None):
    """A result on ``views`` (``tuned``: with the self-tuned options)."""
    n = len(y)
    if variant == "unknown-labels":
        return fastmv.mvfl(views, c, labels=np.full(n, -1), random_state=0)
    labels = np.where(np.arange(n) % 3 == 0, y, -1)
    return fastmv.mvfl(views, c, labels=labels if tuned else None, random_state=0)


def no_convergence(Xs, options):
    """A call stopped at ``max_iter``: ``(views, options, args, kwargs, fit_kwargs)``, the
    function called as ``f(*args, **kwargs, **options)``, the estimator as
    ``Estimator(3, **options).fit(views, **fit_kwargs)``."""
    return Xs, options, (Xs, 3), {}, {}


def interrupt_call(views, y, long):
    """A solve that runs until it is interrupted: without labels (with them the defaults reach
    an exact fixed point within ~0.2 s of the first iteration, after seconds of validating
    the options, before the signal)."""
    return lambda: fastmv.mvfl(views, 3, **long)


def refusal_calls(views, y, P):
    """Calls refused for memory (``{name: call}``)."""
    return {"mvfl": lambda: fastmv.mvfl(views, 3, labels=simulate.partial_labels(
        y, 0.3, random_state=0))}


def several_starts(views, y, n_init):
    """A solve of ``n_init`` starts with a progress bar."""
    known = simulate.partial_labels(y, 0.3, random_state=0)
    return fastmv.mvfl(views, 3, labels=known, init="k-means++", n_init=n_init, max_iter=4,
                       progress=True, random_state=0)
