"""OPIMC's cases for the tests that run every solver (``tests/solvers.py``): its quick
command line, its side-information files, the calls that fill a result, that do not
converge, that are interrupted and that are refused for memory."""
import numpy as np

import fastmv

#: ``python -m fastmv run opimc`` options that keep a real run quick
CLI_QUICK = ["--chunk_size", "30"]
#: what a cold warm-up may compile: the package's own functions, and all of them
COLD_COMPILES = (15, 22)
#: the fields of a result cut short in the load test
CUT_FIELDS = ("chunk_loss", "chunk_iter")
#: the callback-fault test: two passes are enough
FAULT_OPTIONS = {"max_iter": 2}
#: samples of the interrupted solve
INTERRUPT_N = 300000


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: a mask of the samples each view holds."""
    mask = rng.random((y0.size, 2)) > 0.2
    mask[:, 0] |= ~mask[:, 1]
    np.save(folder / "mask.npy", mask)
    return views, ["--mask", str(folder / "mask.npy")]


def result(views, y, c, tuned):
    """A result on ``views``."""
    n = len(y)
    return fastmv.opimc(views, c, chunk_size=max(n // 2, 1), random_state=0)


def no_convergence(Xs, options):
    """A call stopped at ``max_iter``: ``(views, options, args, kwargs, fit_kwargs)``, the
    function called as ``f(*args, **kwargs, **options)``, the estimator as
    ``Estimator(3, **options).fit(views, **fit_kwargs)``: structureless data in small chunks,
    one start (the second pass still moves)."""
    rng = np.random.default_rng(0)
    Xs = [rng.random((60, 5)), rng.random((60, 8))]
    return Xs, {**options, "chunk_size": 10, "n_init": 1}, (Xs, 3), {}, {}


def interrupt_call(views, y, long):
    """A solve that runs until it is interrupted."""
    return lambda: fastmv.opimc(views, 3, chunk_size=100, **long)


def refusal_calls(views, y, P):
    """Calls refused for memory (``{name: call}``)."""
    return {"opimc": lambda: fastmv.opimc(views, 3)}
