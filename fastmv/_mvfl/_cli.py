"""MVFL on the command line (``python -m fastmv run mvfl``): its options beyond the function's
parameters and its ``run`` (see :mod:`fastmv._core._cli_parts`)."""
from __future__ import annotations

import numpy as np

from .. import simulate
from .._core._cli_parts import (
    Option,
    RunOutcome,
    describe_params,
    fraction_parser,
    n_clusters_from,
    pair_count,
    scored_pairs,
)
from ._spec import SPEC


def _prior(text):
    if text not in ("labels", "pairs", "none"):
        raise ValueError("expected one of labels, pairs, none")
    return text


SIMULATION = (Option("prior", _prior, "labels",
                     "what to draw from the file's labels: labels, pairs or none",
                     simulated=True),
              Option("label_ratio", fraction_parser(True, False), 0.1,
                     "fraction of samples whose labels (or pairs among them) are "
                     "revealed", simulated=True))
CLI_DEFAULTS = {}
WITHOUT_SIDE = "mvfl runs without a prior (unsupervised)."


def _pairs_from_labelled(y, ratio, seed):
    """All pairs among a random ``ratio`` of the samples (``simulate.pairs_from_labels``)."""
    return simulate.pairs_from_labels(simulate.partial_labels(y, ratio, random_state=seed))


def run(data, side, params, seed):
    views, y = data
    params = dict(params)
    prior, ratio = params.pop("prior"), params.pop("label_ratio")
    simulated = params.pop("simulate", False)
    c = n_clusters_from(params, y)
    given = {k: side[k] for k in ("labels", "must", "cannot") if side.get(k) is not None}
    kwargs = {}
    if given:
        if "labels" in given:
            kwargs["labels"] = given["labels"]
            setting = f"{int(np.sum(given['labels'] >= 0))} given labels"
        else:
            kwargs["must_link"], kwargs["cannot_link"] = given.get("must"), given.get("cannot")
            setting = (f"{pair_count(kwargs['must_link'])} must, "
                       f"{pair_count(kwargs['cannot_link'])} cannot")
    elif prior == "none" or y is None or not simulated:
        setting = "no prior"
    elif prior == "labels":
        kwargs["labels"] = simulate.partial_labels(y, ratio, random_state=seed)
        setting = f"{ratio:.0%} simulated labels"
    else:
        kwargs["must_link"], kwargs["cannot_link"] = _pairs_from_labelled(y, ratio, seed)
        setting = f"pairs among {ratio:.0%} (simulated)"
    res = SPEC.function(views, c, random_state=seed, **kwargs, **params)
    return RunOutcome(setting + describe_params(params), scored_pairs(y, res.labels), res.labels,
                      res)
