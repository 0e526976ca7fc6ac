"""EMVC's view weights: the weights ``α_v`` of each view's share of the error penalty
(``view_weights`` of :func:`fastmv.emvc`; docs/records/emvc-weights.md).

The published model penalises every view's error alike. With weights, the model is
``min ‖P̂‖_* + Σ_v α_v h_v(E_v)`` s.t. ``P_v = P̂ + E_v``, with ``h_v(E_v) = (lam1/2) Σ_i
‖E_v[:, i]‖₂ + (lam2/2) Σ_r ‖E_v[r, :]‖₂``; the reweighted ``E`` step of view ``v`` is the
published one with ``lam1``, ``lam2`` multiplied by ``α_v``, which the solver passes to the
unchanged kernel as the error norms divided by ``α_v``.
"""
from __future__ import annotations

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = ["check_view_weights", "error_weights"]

# ``view_weights="error"``: α_v ∝ h_v^(-p). With p = 1 (the majorize-minimize weights of
# Σ_v log h_v) the reweighting feeds on itself and one view takes over the consensus
# (docs/records/emvc-weights.md).
_WEIGHT_POWER = 0.5


def error_weights(costs, power=None):
    """View weights from the views' error costs ``h_v``: ``α_v ∝ h_v^(-p)``, mean 1.

    Positive and finite for any nonnegative costs. Invariant to a common scale of the
    costs, so ``lam1 = lam2 = λ`` gives the same weights for every ``λ > 0``. A zero cost
    (a view without error) is floored at ``1e-12`` times the largest; all zero (or
    ``p = 0``): all ones.
    """
    p = _WEIGHT_POWER if power is None else float(power)
    costs = np.asarray(costs, dtype=np.float64)
    if not np.all(costs > 0.0):
        tiny = np.finfo(np.float64).tiny
        costs = np.maximum(costs, max(float(costs.max()) * 1e-12, tiny))
    # in logs: the costs may span many orders of magnitude
    logw = -p * np.log(costs)
    w = np.exp(logw - logw.max())
    return w * (w.size / w.sum())


def check_view_weights(view_weights, m):
    """``"equal"``, ``"error"``, or the given weights as float64 ``(m,)``, scaled to mean 1
    (the declaration has checked the kind; this checks the values)."""
    if isinstance(view_weights, str):
        return view_weights
    w = np.array(view_weights, dtype=np.float64)
    if w.shape != (m,) or not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise InvalidParameterError(
            f"view_weights must be 'equal', 'error' or {m} positive finite numbers (one per "
            f"view), got {view_weights!r}")
    return w * (m / w.sum())
