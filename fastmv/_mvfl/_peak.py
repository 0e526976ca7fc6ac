"""MVFL's peak memory (docs/algorithms.md §2.7), checked before the W step's systems are
formed."""
from __future__ import annotations

import scipy.sparse as sp

from .._core._memory import check_memory
from ._start import SPREAD_MAX_N

__all__ = ["peak_bytes", "check_mvfl"]


#: ``n × l`` float64 arrays of label spreading from ``l`` labels at once (the seeds, the
#: scores, their product with the graph, a temporary and the kept transpose).
_SPREAD_ARRAYS = 5


def peak_bytes(n, d, c, *, route, data_bytes, spread_labels=0, f_step="monotone"):
    """Peak bytes of :func:`fastmv.mvfl` on ``n`` samples of ``d`` features in all (the views
    side by side, ``data_bytes`` as float64 values, or 12 bytes per stored entry of sparse
    ones) and ``c`` clusters.

    The normalised concatenation of the views and its centred copy (dense), then the W step's
    Cholesky factors: ``d × d`` each on the direct route (plus the Gram ``X̃ᵀX̃``), ``n × n``
    on the Woodbury one. ``f_step="monotone"`` factorises one system per reweighting (the
    common majoriser): the first iteration's, held for the anchor's fold solves, the current
    one and a spare (overwritten in place on later iterations); ``f_step="paper"`` ``c``
    factors and as many spare ones. ``O(n c)`` for ``F`` and its work arrays.
    ``init="auto"`` with ``l = spread_labels`` labels first spreads every labelled sample's
    unit column over the kNN graph (:data:`_SPREAD_ARRAYS` ``n × l`` arrays), before the W
    step.
    """
    s = d if route == "direct" else n
    held = 3 if f_step == "monotone" else 2 * c
    systems = (held + (route == "direct")) * float(s) * float(s) * 8
    spread = _SPREAD_ARRAYS * 8 * float(n) * spread_labels
    return 2 * data_bytes + max(systems, spread) + 16 * 8 * n * c


def check_mvfl(views, n_clusters, solver, prior, init, f_step="monotone"):
    """Refuse :func:`fastmv.mvfl` when its peak exceeds the memory available (the route as
    :func:`fastmv._mvfl._wstep.choose_route` takes it: Woodbury when ``d > n``; the labels
    of ``prior`` that ``init="auto"`` spreads one by one up to ``SPREAD_MAX_N`` samples;
    :func:`peak_bytes` for the systems ``f_step`` holds)."""
    n = views[0].shape[0]
    spread = (isinstance(init, str) and init == "auto" and prior["kind"] == "labels"
              and n <= SPREAD_MAX_N)
    spread_labels = prior["rows"].size if spread else 0
    d = sum(X.shape[1] for X in views)
    data_bytes = sum(12 * X.nnz if sp.issparse(X) else 8 * X.shape[0] * X.shape[1]
                     for X in views)
    route = solver if solver != "auto" else ("woodbury" if d > n else "direct")
    needed = peak_bytes(n, d, n_clusters, route=route, data_bytes=data_bytes,
                        spread_labels=spread_labels, f_step=f_step)
    size = f"{d} × {d}" if route == "direct" else f"{n} × {n}"
    systems = 3 if f_step == "monotone" else 2 * n_clusters
    check_memory(needed, f"mvfl() on {len(views)} views, {n} samples, {d} features, "
                 f"{n_clusters} clusters ({route} route: {systems} systems of {size})",
                 "the W step holds its systems, d × d on the direct route and n × n on the "
                 "Woodbury one (d > n), and init='auto' spreads each label over n samples: "
                 "select fewer features, drop views, pass init='k-means++', or cluster a "
                 "subsample")
