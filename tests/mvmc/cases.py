"""MVMC's cases for the tests that run every solver (``tests/solvers.py``): its quick
command line, its side-information files, the calls that fill a result, that do not
converge, that are interrupted and that are refused for memory."""
import numpy as np

import fastmv
from fastmv import simulate

#: ``python -m fastmv run mvmc`` options that keep a real run quick
CLI_QUICK = ["--max_iter", "5", "--k", "5"]
#: the run test draws the pairs from the file's labels (``--simulate``)
CLI_SIMULATE = True
#: what a cold warm-up may compile: the package's own functions, and all of them
COLD_COMPILES = (7, 19)
#: the fields of a result cut short in the load test
CUT_FIELDS = ("Z", "M", "objective")
#: samples of the interrupted solve: the defaults settle exactly (residual 0) within ~0.5 s
#: at n = 600, so keep it longer
INTERRUPT_N = 6000


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: the side-information files of a run without labels."""
    ml, cl = simulate.pairwise_constraints(y0, 300, random_state=0)
    np.save(folder / "must.npy", ml)
    np.savetxt(folder / "cannot.txt", cl, fmt="%d")
    return views, ["--must", str(folder / "must.npy"), "--cannot", str(folder / "cannot.txt")]


def result(views, y, c, tuned):
    """A result on ``views`` (``tuned``: with the self-tuned options)."""
    n = len(y)
    must, cannot = simulate.pairwise_constraints(y, min(n, n * (n - 1) // 2), random_state=0)
    return fastmv.mvmc(views, c, must, cannot, random_state=0,
                       **({} if tuned else {"C1": 100.0, "k": 3}))


def no_convergence(Xs, options):
    """A call stopped at ``max_iter``: ``(views, options, args, kwargs, fit_kwargs)``, the
    function called as ``f(*args, **kwargs, **options)``, the estimator as
    ``Estimator(3, **options).fit(views, **fit_kwargs)``."""
    return Xs, options, (Xs, 3, [[0, 3]], [[0, 1]]), {}, {"must_link": [[0, 3]]}


def interrupt_call(views, y, long):
    """A solve that runs until it is interrupted."""
    must, cannot = simulate.pairwise_constraints(y, 3000, random_state=0)
    return lambda: fastmv.mvmc(views, 3, must, cannot, **long)


def refusal_calls(views, y, P):
    """Calls refused for memory (``{name: call}``)."""
    ml, cl = simulate.pairwise_constraints(y, 20, random_state=0)
    return {"mvmc": lambda: fastmv.mvmc(views, 3, ml, cl)}


def estimator_side(y):
    """What the estimator's ``fit`` needs beside the views: pairs, here from (partial)
    labels."""
    return {"labels": y}


def estimator_pairs(n):
    """What the estimator's ``fit`` needs beside ``n`` samples' views when no labels are at
    hand: a must-link and a cannot-link."""
    return {"must_link": [[0, 1]], "cannot_link": [[0, n - 1]]}
