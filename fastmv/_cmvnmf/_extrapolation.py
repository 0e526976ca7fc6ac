"""CMVNMF's sweeps lengthened by safeguarded extrapolation (docs/cmvnmf.md, "Speed").

With pairs, the multiplicative sweeps of CMVNMF move slowly (on ProteinFold the objective is
still falling by 1e-3 per sweep after 200 sweeps), yet sweeps that move faster *per
sweep* (several updates per factor, exact coordinate steps, line searches along the
multiplicative direction) end in worse local minima (docs/cmvnmf.md, "Speed").
Extrapolation follows the multiplicative path and takes longer strides along it: after an
accepted sweep ``X_k``, the next sweep starts from

``Y = max(X_k + w (X_k − X_{k−1}), floor · X_k)``  (every ``U_a`` and ``V_a``)

(once the labels have not changed over ``settle`` accepted sweeps, or have nearly settled
while the objective still falls fast — see :class:`Extrapolation` —, and not before sweep
``after + 1``: the sweeps that choose the basin are plain)

and its result is accepted only if it lowers the objective below ``X_k``'s by at least
``gain`` times the last accepted decrease; otherwise the sweep is run again from ``X_k``
itself (the plain sweep) and ``w`` is divided by ``shrink``. After
every accepted extrapolation ``w`` grows by ``growth`` up to ``max_weight`` (the heuristic
extrapolation with restarts of Ang & Gillis, 2019). So:

- the objective of the accepted points never exceeds that of the plain sweep from the
  previous accepted point: where the multiplicative sweep is non-increasing
  (``rescale=False``) so is the extrapolated sequence;
- a fixed point of the sweep is a fixed point here (``X_k = X_{k−1}`` gives ``Y = X_k``);
- the floor keeps every entry positive (multiplicative updates cannot revive a zero) and at
  least ``floor`` times its value, so no entry shrinks to subnormal numbers by extrapolation.
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Extrapolation:
    """Settings of the extrapolated sweeps (the defaults are the measured ones).

    Attributes
    ----------
    weight : float
        Initial extrapolation weight ``w``.
    growth : float
        Factor applied to ``w`` after every accepted extrapolated sweep.
    max_weight : float
        Largest ``w``.
    shrink : float
        Divisor of ``w`` after a rejected one.
    floor : float
        An extrapolated entry is at least ``floor`` times the accepted one (``0 < floor <= 1``).
    gain : float
        An extrapolated sweep is accepted only when it lowers the objective by at least
        ``gain`` times the last accepted sweep's decrease.
    settle : int
        Extrapolation starts once no label (argmax of a row of ``V``) has changed over this
        many accepted sweeps, or once at most ``moved`` of the labels have changed over them
        while the objective fell by at least ``descent`` of its value per sweep over them.
    moved : float
        Share of the labels (``0 <= moved <= 1``) that may still change in a long descent.
    descent : float
        Relative decrease of the objective per sweep (mean over the last ``settle`` sweeps)
        that marks a long descent: a partition that has nearly settled while the objective
        still falls fast is followed, not chosen. Starts whose objective changes little while
        a few labels still move are choosing between nearby basins, and wait for no label to
        move (docs/cmvnmf.md, "Speed").
    after : int
        Plain sweeps before the first extrapolated one: the early sweeps choose the basin
        (extrapolated from the first sweep on, a Reuters-1200 start ended in a worse local
        minimum, docs/cmvnmf.md, "Speed"); the later ones only follow it.
    """

    weight: float = 0.5
    growth: float = 1.2
    max_weight: float = 6.0
    shrink: float = 2.0
    floor: float = 0.5
    after: int = 50
    gain: float = 0.5
    settle: int = 10
    moved: float = 0.01
    descent: float = 5e-4


class Extrapolated:
    """The state of the extrapolation of one run: the last two accepted points, the weight.

    :meth:`step` runs one (or, after a rejection, two) sweeps of ``problem`` and leaves it at
    the next extrapolated point; :attr:`accepted` is the last accepted point
    ``(U_list, V_all)`` and :attr:`objective` its objective.
    """

    def __init__(self, settings=None):
        self.settings = settings or Extrapolation()
        self.weight = self.settings.weight
        self.accepted = None
        self.previous = None
        self.objective = None
        self.from_extrapolated = False
        self.n_rejected = 0
        self.n_steps = 0
        self.decrease = 0.0
        self.labels = None
        self.settled = 0
        # the labels and objectives of the last `settle` accepted sweeps, oldest first
        self.window = collections.deque()
        self.started = False

    def step(self, problem):
        """One accepted sweep; returns its objective."""
        problem.sweep()
        f = problem.objective()
        # an extrapolated sweep must gain at least `gain` of the last accepted step's
        # decrease: one that barely beats the accepted point is worse than the plain sweep
        # from it, and its tiny decrease would end the run by `tol` far from a fixed point
        if self.from_extrapolated and f > self.objective - self.settings.gain * self.decrease:
            # the sweep from the extrapolated point lost: the plain sweep from the last
            # accepted point instead, with a shorter stride next time
            problem.set_factors(*self.accepted)
            problem.sweep()
            f = problem.objective()
            self.weight /= self.settings.shrink
            self.n_rejected += 1
        elif self.from_extrapolated:
            self.weight = min(self.weight * self.settings.growth, self.settings.max_weight)
        self.previous = self.accepted
        self.accepted = ([U.copy() for U in problem.U], problem.V_all.copy())
        self.decrease = 0.0 if self.objective is None else max(self.objective - f, 0.0)
        self.objective = f
        self.n_steps += 1
        labels = np.argmax(problem.V_all, axis=1)
        self.settled = (self.settled + 1 if self.labels is not None
                        and np.array_equal(labels, self.labels) else 0)
        self.labels = labels
        # the basin is chosen while the labels move: extrapolation starts once they have not
        # changed over `settle` accepted sweeps, or have nearly settled in a long descent
        # (and not before sweep `after`), then stays on
        self.started = self.started or (self.n_steps > self.settings.after
                                        and (self.settled >= self.settings.settle
                                             or self._long_descent(labels, f)))
        self.from_extrapolated = self.previous is not None and self.started
        if self.from_extrapolated:
            w, floor = self.weight, self.settings.floor
            (U_new, V_new), (U_old, V_old) = self.accepted, self.previous
            problem.set_factors([_stride(U, U0, w, floor) for U, U0 in zip(U_new, U_old)],
                                _stride(V_new, V_old, w, floor))
        return f

    def _long_descent(self, labels, f):
        """Whether at most ``moved`` of the labels changed over the last ``settle`` accepted
        sweeps while the objective fell by at least ``descent`` of itself per sweep."""
        settings = self.settings
        self.window.append((labels, f))
        if len(self.window) <= settings.settle:
            return False
        old_labels, old_f = self.window.popleft()
        if not (f > 0 and old_f - f >= settings.descent * settings.settle * f):
            return False
        return np.count_nonzero(labels != old_labels) <= settings.moved * labels.size


def _stride(new, old, weight, floor):
    """``max(new + weight (new − old), floor · new)`` in the dtype of ``new``."""
    out = new - old
    out *= weight
    out += new
    np.maximum(out, floor * new, out=out)
    # as the updates do: no subnormal entries (multiplicative_update, Notes)
    out[out < np.finfo(out.dtype).tiny] = 0.0
    return out
