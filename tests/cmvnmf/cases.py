"""CMVNMF's cases for the tests that run every solver (``tests/solvers.py``): its quick
command line, its side-information files, the calls that fill a result, that do not
converge, that are interrupted, that are refused for memory and that run several starts."""
import numpy as np

import fastmv

#: ``python -m fastmv run cmvnmf`` options that keep a real run quick
CLI_QUICK = ["--max_iter", "30"]
#: the run test draws the views' rows and pairs from the file's labels (``--simulate``)
CLI_SIMULATE = True
#: what a cold warm-up may compile: the package's own functions, and all of them
COLD_COMPILES = (7, 15)
#: the fields of a result cut short in the load test
CUT_FIELDS = ("V",)
#: the estimator's views must be non-negative
NONNEGATIVE = True
#: the repeated-calls test: a leak grows with the calls, not with the starts inside one
#: (ten k-means starts per view would make its 220 calls the slowest test of the suite)
LEAK_OPTIONS = {"n_init": 1}


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: unmapped views (different row counts) and pairs across them."""
    views = [views[0], views[1][::-1][:60]]
    n = y0.size
    pairs = np.array([[0, i, 1, n - 1 - i] for i in range(30, 90, 6)])
    np.save(folder / "must.npy", pairs)
    return views, ["--must", str(folder / "must.npy")]


def result(views, y, c, tuned):
    """A result on ``views`` (``tuned``: with the self-tuned options)."""
    n = len(y)
    pos = [np.abs(X) for X in views]
    pairs = np.column_stack([np.arange(0, n, 3)] * 2)
    return fastmv.cmvnmf(pos, c, {(0, 1): pairs}, {}, random_state=0,
                         **({} if tuned else {"beta": 1.0, "normalize": "l2"}))


def no_convergence(Xs, options):
    """A call stopped at ``max_iter``: ``(views, options, args, kwargs, fit_kwargs)``, the
    function called as ``f(*args, **kwargs, **options)``, the estimator as
    ``Estimator(3, **options).fit(views, **fit_kwargs)`` (non-negative views)."""
    Xs = [X - X.min() for X in Xs]
    return Xs, options, (Xs, 3, {}, {}), {"n_init": 2}, {}


def interrupt_call(views, y, long):
    """A solve that runs until it is interrupted: an explicit beta (with tol=0 the
    beta="auto" fits, which take no callback, would never end)."""
    pos = [np.abs(X) for X in views]
    pairs = np.column_stack([np.arange(0, y.size, 7)] * 2)
    return lambda: fastmv.cmvnmf(pos, 3, {(0, 1): pairs}, {}, beta=1.0, **long)


def refusal_calls(views, y, P):
    """Calls refused for memory (``{name: call}``)."""
    return {"cmvnmf": lambda: fastmv.cmvnmf(views, 3, None, None)}


def several_starts(views, y, n_init):
    """A solve of ``n_init`` starts with a progress bar (one start: random, no k-means)."""
    pos = [np.abs(V) for V in views]
    if n_init == 1:
        return fastmv.cmvnmf(pos, 3, None, None, init="random", n_init=1, max_iter=4,
                             progress=True, random_state=0)
    return fastmv.cmvnmf(pos, 3, None, None, n_init=n_init, max_iter=4, progress=True,
                         random_state=0)
