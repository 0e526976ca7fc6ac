"""EMVC on the command line (``python -m fastmv run emvc``): its options beyond the function's
parameters (how the transition matrices are built from the views) and its ``run`` (see
:mod:`fastmv._core._cli_parts`)."""
from __future__ import annotations

from .._blocks._affinity import transition_matrices
from .._core._cli_parts import (
    Option,
    RunOutcome,
    describe_params,
    n_clusters_from,
    optional_int,
    parse_bool,
    scored_pairs,
)
from ._peak import check_emvc_from_views
from ._spec import SPEC


def _parse_sigma(text):
    return text if text == "median" else float(text)


SIMULATION = (Option("unit_rows", parse_bool, False,
                     "scale each view's rows to unit norm before the transition matrices "
                     "(default false: fastmv.transition_matrix of the raw view, as "
                     "fastmv.EMVC() and the README)"),
              Option("sigma", _parse_sigma, "median",
                     "Gaussian width of the transition matrices (a number or median)"),
              Option("n_neighbors", optional_int, None,
                     "keep this many nearest neighbours per row (default: all)"))
# fastmv.estimators.EMVC_LAMBDA: one default for the function's README route, the estimator
# and the command line (tests/test_cli.py checks they agree)
CLI_DEFAULTS = {"lam1": 0.01, "lam2": 0.01}


def run(data, side, params, seed):
    views, y = data
    params = dict(params)
    normalize, sigma = params.pop("unit_rows"), params.pop("sigma")
    n_neighbors = params.pop("n_neighbors")
    c = n_clusters_from(params, y)
    lam1, lam2 = params.pop("lam1"), params.pop("lam2")
    # refused before any matrix is built when the matrices and the solve cannot fit
    check_emvc_from_views(views, params.get("dtype"),
                          params.get("tol_settle", "auto") is not None)
    P_list = transition_matrices(views, sigma=sigma, n_neighbors=n_neighbors,
                                 normalize=normalize)
    res = SPEC.function(P_list, lam1, lam2, n_clusters=c, random_state=seed, **params)
    setting = f"lam1={lam1:g}, lam2={lam2:g}, sigma={sigma}" + describe_params(params)
    return RunOutcome(setting, scored_pairs(y, res.labels), res.labels, res)
