"""OPIMC on the command line (``python -m fastmv run opimc``): its options beyond the
function's parameters and its ``run`` (see :mod:`fastmv._core._cli_parts`). The labels are
saved in the input's sample order (the shuffled stream is mapped back by ``opimc``)."""
from __future__ import annotations

import numpy as np

from .. import simulate
from .._core._cli_parts import (
    Option,
    RunOutcome,
    describe_params,
    fraction_parser,
    n_clusters_from,
    scored_pairs,
)
from ._spec import SPEC

SIMULATION = (Option("missing_ratio", fraction_parser(False, True), 0.4,
                     "fraction of each view's samples removed (0: complete views)",
                     simulated=True),)
CLI_DEFAULTS = {}
WITHOUT_SIDE = "opimc runs on the complete views."


def run(data, side, params, seed):
    views, y = data
    params = dict(params)
    missing_ratio = params.pop("missing_ratio")
    simulated = params.pop("simulate", False)
    c = n_clusters_from(params, y)
    n = views[0].shape[0]
    mask = side.get("mask")
    if mask is None and y is not None and simulated and missing_ratio > 0:
        mask = simulate.incomplete_mask(n, len(views), missing_ratio, random_state=seed)
        setting = f"{missing_ratio:.0%} missing (simulated)"
    elif mask is None:
        setting = "complete views"
    else:
        mask = np.asarray(mask)
        setting = f"given mask ({1 - mask.mean():.0%} missing)"
    # opimc visits the rows in a seeded random order itself (shuffle=True) and returns the
    # labels in the input's order
    res = SPEC.function(views, c, mask=mask, random_state=seed, **params)
    setting += (", shuffled" if params.get("shuffle", True) else "") + describe_params(
        {k: v for k, v in params.items() if k != "shuffle"})
    return RunOutcome(setting, scored_pairs(y, res.labels), res.labels, res)
