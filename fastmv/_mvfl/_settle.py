"""Stopping once the labels have settled (docs/records/mvfl.md, "Time to solution").

The objective's relative change reaches ``tol = 1e-6`` long after the labels stop moving on
many problems: the last iterations shave rows of ``F`` that no argmax depends on. Stopping on
"labels unchanged for a few iterations" alone was measured to end one sample early on ORL
(labels there move by one sample after 5–10 quiet iterations), so the rule here asks for a
bound instead: with the iterates contracting at rate ``ρ`` (the largest ratio of successive
moves ``‖F_t − F_{t−1}‖_∞`` over the last ``SETTLE_HISTORY`` iterations), row ``i`` can still
move by at most ``δ_i ρ / (1 − ρ)`` (``δ_i`` its last move) if the contraction holds, which
changes no argmax while ``2 · SETTLE_SAFETY · δ_i ρ / (1 − ρ)`` is below the row's margin
(largest entry minus the second). The solve stops when that holds for every row and the
objective's relative change is at most ``SETTLE_RTOL``; otherwise the usual ``tol`` applies.

Looser tests end a solve whose labels have stopped moving while the objective still creeps:
for any pair ``(q, r)`` of ``QUIET_RULES``, the argmax of every row unchanged over the last
``q`` iterations and the objective's relative change at most ``r``. They bound nothing (a
label may still flip later); replayed on the recorded iterates of the defaults on the seven
shared datasets they moved no mean ACC or NMI by more than 0.006 and cut the iterations by
two thirds (docs/records/mvfl-speed.md).
"""
from __future__ import annotations

import numpy as np

from .._core._driver import relative_change

__all__ = ["Settle", "SETTLE_RTOL", "SETTLE_SAFETY", "SETTLE_HISTORY", "QUIET_RULES",
           "QUIET_RULES_DIRECT"]

# The objective must have settled too (relative change per iteration), the projected move is
# scaled by this safety factor, and the contraction rate is the worst over this many ratios.
SETTLE_RTOL = 1e-4
SETTLE_SAFETY = 1.0
SETTLE_HISTORY = 3
# The quiet stops: (iterations without a label change, largest relative change of the
# objective); the solve stops when any pair holds.
QUIET_RULES = ((1, 1e-2), (0, 3e-4))
# On the direct route (d <= n) the fit binds and, with the anchor validated on the labels, the
# objective's relative change falls about tenfold per iteration from the first; the labels
# still moving after the second iteration are samples the fit places poorly anyway. A solve
# there stops once the change is at most 1e-2 (docs/records/mvfl-speed.md: the replay on the
# shared data with d <= n moved no mean ACC by more than 0.002).
QUIET_RULES_DIRECT = ((0, 1e-2),)


def labels_settled(F_old, F_new, rho, safety):
    """Whether no row's argmax can change if every row keeps contracting at rate ``rho``:
    ``2 · safety · δ_i ρ / (1 − ρ) < margin_i`` for every row (``δ_i = max_k |ΔF[i, k]|``,
    ``margin_i`` = largest minus second-largest entry of ``F_new[i]``); a zero row (its label
    then comes from the regression) never counts as settled."""
    n, c = F_new.shape
    if n == 0:
        return True
    if not 0.0 <= rho < 1.0:
        return False
    top2 = -np.partition(-F_new, min(1, c - 1), axis=1)[:, :2]
    if (top2[:, 0] <= 0.0).any():
        return False
    margin = top2[:, 0] - top2[:, 1] if c > 1 else np.full(n, np.inf)
    move = np.abs(F_new - F_old).max(axis=1)
    return bool(np.all(2.0 * safety * move * (rho / (1.0 - rho)) < margin))


class Settle:
    """The stopping quantity of one run: the objective's relative change, or ``0`` once the
    labels have settled (:func:`labels_settled`) or, for a pair ``(q, r)`` of ``quiet``,
    stayed the same over ``q`` iterations with the relative change at most ``r``.
    ``rtol=None`` disables every rule, ``quiet=()`` the quiet ones."""

    def __init__(self, rtol=SETTLE_RTOL, safety=SETTLE_SAFETY, history=SETTLE_HISTORY,
                 quiet=QUIET_RULES):
        self.rtol, self.safety, self.history = rtol, safety, history
        self.quiet = tuple(quiet) if rtol is not None else ()
        self.previous = None  # the last objective
        self.moves = []  # ‖F_t − F_{t−1}‖_∞ of the last history + 1 iterations
        self.unchanged = 0  # consecutive iterations without a label change

    def residual(self, J, F_old, F_new):
        rel = np.inf if self.previous is None else relative_change(self.previous, J)
        self.previous = J
        self.moves = (self.moves + [float(np.abs(F_new - F_old).max(initial=0.0))])[
            -(self.history + 1):]
        if self.quiet:
            same = np.array_equal(np.argmax(F_old, axis=1), np.argmax(F_new, axis=1)) \
                if F_new.shape[1] else True
            self.unchanged = self.unchanged + 1 if same else 0
            if any(rel <= r and self.unchanged >= q for q, r in self.quiet):
                return 0.0
        if self.rtol is None or rel > self.rtol or len(self.moves) <= self.history:
            return rel
        m = self.moves
        rho = max((b / a if a > 0 else (0.0 if b == 0 else np.inf)) for a, b in zip(m, m[1:]))
        return 0.0 if labels_settled(F_old, F_new, rho, self.safety) else rel
