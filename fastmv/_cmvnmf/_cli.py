"""CMVNMF on the command line (``python -m fastmv run cmvnmf``): its options beyond the
function's parameters, the pair files' four-column rows and its ``run`` (see
:mod:`fastmv._core._cli_parts`). The labels are saved one array per view, in that view's row
order."""
from __future__ import annotations

import numpy as np

from .. import simulate
from .._core._cli_parts import Option, RunOutcome, describe_params, fraction_parser, n_clusters_from
from ._spec import SPEC

SIMULATION = (Option("keep", fraction_parser(True, False), 0.95,
                     "fraction of rows each view keeps (rows dropped and permuted per "
                     "view, saved as -1)", simulated=True),
              Option("constraint_ratio", fraction_parser(True, False), 0.05,
                     "inter-view pairs drawn, as a fraction of all cross pairs",
                     simulated=True))
CLI_DEFAULTS = {}
WITHOUT_SIDE = "cmvnmf runs on the file's views as they are, without pairs."
# one array per view, each in its view's row order
LABELS_SUFFIX = ".npz"
SIDE_HELP = {
    "must": "file (.npy or .txt) of must-link pairs across views, one pair per row in 4 "
            "columns: view_a, row_i, view_b, row_j (0-based)",
    "cannot": "file (.npy or .txt) of cannot-link pairs, same layout as --must",
}


def check_pairs(pairs, option, views):
    """Check a pairs file of ``(p, 4)`` rows ``(view_a, row_i, view_b, row_j)`` against the
    views' row counts; raise ``ValueError`` naming ``--option``.

    Examples
    --------
    >>> check_pairs(np.array([[0, 1, 1, 5]]), "must", [np.zeros((3, 2)), np.zeros((4, 2))])
    Traceback (most recent call last):
    ...
    ValueError: --must: row 0: row index 5 out of range for view 1 (4 rows)
    """
    m = len(views)
    if pairs.ndim != 2 or pairs.shape[1] != 4:
        raise ValueError(f"--{option}: cmvnmf pairs need 4 columns (view_a, row_i, "
                         f"view_b, row_j), got shape {pairs.shape}")
    for col_view, col_row in ((0, 1), (2, 3)):
        v = pairs[:, col_view]
        if v.size and (v.min() < 0 or v.max() >= m):
            raise ValueError(f"--{option}: view index out of range 0..{m - 1}")
        sizes = np.array([V.shape[0] for V in views])[v]
        bad = (pairs[:, col_row] < 0) | (pairs[:, col_row] >= sizes)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"--{option}: row {i}: row index {int(pairs[i, col_row])} "
                             f"out of range for view {int(v[i])} ({int(sizes[i])} rows)")


def _view_pairs(pairs, name, n_views):
    """``(p, 4)`` rows ``(view_a, row_i, view_b, row_j)`` -> CMVNMF's dict of pairs."""
    if pairs is None:
        return {}
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 4:
        raise ValueError(f"--{name}: cmvnmf pairs need 4 columns (view_a, row_i, view_b, "
                         f"row_j), got shape {pairs.shape}")
    out = {}
    for a, b in sorted({(int(a), int(b)) for a, b in pairs[:, [0, 2]]}):
        if not (0 <= a < n_views and 0 <= b < n_views):
            raise ValueError(f"--{name}: view index out of range ({a}, {b}); the data has "
                             f"{n_views} views")
        sel = (pairs[:, 0] == a) & (pairs[:, 2] == b)
        out[(a, b)] = pairs[sel][:, [1, 3]].astype(np.int64)
    return out


def run(data, side, params, seed):
    views, y = data
    params = dict(params)
    keep, ratio = params.pop("keep"), params.pop("constraint_ratio")
    simulated = params.pop("simulate", False)
    c = n_clusters_from(params, y)
    m = len(views)
    if side.get("must") is not None or side.get("cannot") is not None or y is None \
            or not simulated:
        ml = _view_pairs(side.get("must"), "must", m)
        cl = _view_pairs(side.get("cannot"), "cannot", m)
        res = SPEC.function(views, c, ml, cl, random_state=seed, **params)
        labels = {f"view{a}": lab for a, lab in enumerate(res.labels)}
        # one score per view, averaged (each view's cluster numbers matched on their own),
        # as metrics.evaluate and the CMVNMF estimator's score give it
        scored = [] if y is None or len({V.shape[0] for V in views}) > 1 else [
            (y, lab) for lab in res.labels]
        n_pairs = sum(len(p) for p in ml.values()) + sum(len(p) for p in cl.values())
        return RunOutcome(f"{n_pairs} given pairs" + describe_params(params), scored, labels,
                          res)
    kept = int(round(keep * y.size))
    if kept < c:
        raise ValueError(f"--keep {keep:g} keeps about {kept} of the {y.size} rows per view, "
                         f"fewer than the {c} clusters; raise --keep")
    Xs, ys, index = simulate.unmapped(views, y, keep=keep, random_state=seed)
    ml, cl = simulate.inter_view_constraints(ys, ratio=ratio, random_state=seed)
    res = SPEC.function(Xs, c, ml, cl, random_state=seed, **params)
    labels = {}
    for a, (idx, lab) in enumerate(zip(index, res.labels)):
        full = np.full(y.size, -1, dtype=np.int64)  # rows the simulation dropped: -1
        full[idx] = lab
        labels[f"view{a}"] = full
    setting = f"unmapped ({keep:.0%} kept), {ratio:.0%} pairs" + describe_params(params)
    return RunOutcome(setting, list(zip(ys, res.labels)), labels, res)
