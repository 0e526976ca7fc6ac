"""MVMC on the command line (``python -m fastmv run mvmc``): its options beyond the function's
parameters and its ``run`` (see :mod:`fastmv._core._cli_parts`)."""
from __future__ import annotations

from .. import simulate
from .._core._cli_parts import (
    Option,
    RunOutcome,
    describe_params,
    n_clusters_from,
    pair_count,
    positive_int,
    scored_pairs,
)
from ._spec import SPEC

SIMULATION = (Option("n_constraints", positive_int, 5000,
                     "number of pairs drawn from the file's labels", simulated=True),)
CLI_DEFAULTS = {}
WITHOUT_SIDE = "mvmc stops with a message: it needs --must and/or --cannot pairs."


def run(data, side, params, seed):
    views, y = data
    params = dict(params)
    n_constraints = params.pop("n_constraints")
    simulated = params.pop("simulate", False)
    c = n_clusters_from(params, y)
    ml, cl = side.get("must"), side.get("cannot")
    if ml is None and cl is None:
        if not simulated or y is None:
            raise ValueError("mvmc needs --must and/or --cannot pair files, or --simulate to "
                             "draw pairs from the data file's labels (--n_constraints, "
                             "default 5000)")
        n = y.size
        n_constraints = min(int(n_constraints), n * (n - 1) // 2)
        ml, cl = simulate.pairwise_constraints(y, n_constraints, random_state=seed)
        setting = f"{n_constraints} simulated pairs"
    else:
        setting = f"{pair_count(ml)} must, {pair_count(cl)} cannot"
    res = SPEC.function(views, c, ml, cl, random_state=seed, **params)
    return RunOutcome(setting + describe_params(params), scored_pairs(y, res.labels), res.labels,
                      res)
