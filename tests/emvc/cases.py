"""EMVC's cases for the tests that run every solver (``tests/solvers.py``): its quick
command line, the calls that fill a result, that do not converge, that are interrupted and
that are refused for memory."""
import numpy as np

import fastmv

#: ``python -m fastmv run emvc`` options that keep a real run quick
CLI_QUICK = ["--max_iter", "30"]
#: what a cold warm-up may compile: the package's own functions, and all of them
COLD_COMPILES = (9, 16)
#: the fields of a result cut short in the load test
CUT_FIELDS = ("P_hat", "residual", "E")


def cli_side_files(folder, views, y0, rng):
    """``(views, options)``: EMVC reads no side-information file."""
    return views, []


def result(views, y, c, tuned):
    """A result on ``views`` (``tuned``: with the self-tuned options)."""
    n = len(y)
    P = [fastmv.transition_matrix(X) for X in views] if n > 2 else \
        [np.full((n, n), 1.0 / n)] * 2
    return fastmv.emvc(P, 0.01, 0.01, n_clusters=c, random_state=0,
                       **({} if tuned else {"tol_settle": None}))


def no_convergence(Xs, options):
    """A call stopped at ``max_iter``: ``(views, options, args, kwargs, fit_kwargs)``, the
    function called as ``f(*args, **kwargs, **options)``, the estimator as
    ``Estimator(3, **options).fit(views, **fit_kwargs)`` (the function on transition
    matrices)."""
    P = [fastmv.transition_matrix(X) for X in Xs]
    return Xs, options, (P, 0.01, 0.01), {"n_clusters": 3}, {}


def interrupt_call(views, y, long):
    """A solve that runs until it is interrupted."""
    P = [fastmv.transition_matrix(X) for X in views]
    return lambda: fastmv.emvc(P, 0.01, 0.01, n_clusters=3, **long)


def refusal_calls(views, y, P):
    """Calls refused for memory (``{name: call}``): the function and the estimator's fit on
    feature views."""
    return {"emvc": lambda: fastmv.emvc(P, 0.01, 0.01),
            "EMVC.fit": lambda: fastmv.EMVC(3).fit(views)}
