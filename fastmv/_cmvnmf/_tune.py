"""CMVNMF's ``beta="auto"``: k-fold validation over the pairs (docs/defaults.md,
"Self-tuning"; docs/records/cmvnmf.md, "Time to solution")."""
from __future__ import annotations

import warnings

import numpy as np

from .._core._tuning import (
    beats_default,
    eligible,
    fold_means,
    from_pairs,
    grid_search,
    may_beat_default,
    pair_folds,
    pair_score,
    paired_gain,
    tuning_rng,
)
from ._extrapolation import Extrapolation
from ._pairs import check_constraints, prepare_pairs
from ._start import initial_factors

# beta="auto": the constraint weights compared, the old default first (it wins ties), and
# the folds over the pairs (docs/defaults.md, "Self-tuning"). Every candidate and fold costs
# one start from one shared initialisation, so tuning costs len × folds single starts.
_TUNE_BETAS = (1.0, 0.1, 10.0)
_TUNE_FOLDS = 3
# a validation fit stops once its held-out score has not changed over this many sweeps: the
# score is all a fit is for (docs/records/cmvnmf.md, "Time to solution": 15 sweeps changed a choice)
_TUNE_SETTLE = 20
# a validation fit only scores its weight: after 20 plain sweeps, which choose its basin
# (extrapolated from the first sweeps, a fit can fall into another basin than the solve
# with that weight would, and score the weight for it), its sweeps are extrapolated
# without waiting for the labels to settle
_FIT_EXTRAPOLATION = Extrapolation(after=20, settle=0)
# and it ends after at most this many accepted sweeps: the weights are compared by their
# scores there, not run to the solve's own convergence
_TUNE_MAX_SWEEPS = 100
# ... or once, after its plain sweeps, its score has stayed within this distance of 1/2 over
# _TUNE_SETTLE sweeps. 1/2 is what labels score whose views agree only by chance (a
# must-link kept together as often as a cannot-link split apart, whatever the cluster
# sizes): the weight leaves the views untied, and on the shared datasets a fit that stays
# there for 20 sweeps after choosing its basin stays there to the cap (LandUse-21's weights
# 1 and 0.1, every fit of the twelve datasets recorded: docs/records/index.md lists it)
_CHANCE_BAND = 0.005


def _flat_pairs(constraints):
    """``{(a, b): (p, 2)}`` as one ``(P, 4)`` array of rows ``(a, i, b, j)``."""
    rows = [np.column_stack([np.full(len(p), a), np.asarray(p)[:, 0], np.full(len(p), b),
                             np.asarray(p)[:, 1]])
            for (a, b), p in (constraints or {}).items() if len(p)]
    return (np.vstack(rows).astype(np.int64) if rows else np.zeros((0, 4), np.int64))


def _as_dict(flat):
    out = {}
    for a, b in {(int(r[0]), int(r[2])) for r in flat}:
        sel = (flat[:, 0] == a) & (flat[:, 2] == b)
        out[(a, b)] = flat[sel][:, [1, 3]]
    return out


class _SettledScore:
    """Callback of one validation fit: the held-out score after every sweep (recomputed only
    when a label at an end of a held-out pair changed); stops the fit once the score has not
    changed over ``_TUNE_SETTLE`` sweeps, or, with ``at_chance`` (inter-view pairs of both
    kinds held out), once it has stayed within ``_CHANCE_BAND`` of 1/2 over ``_TUNE_SETTLE``
    sweeps after the fit's plain ones. ``score(labels)``: the score of the global labels
    (only the entries at ``ends`` are read)."""

    def __init__(self, score, ends, offsets, V_list, at_chance=False):
        self.score, self.ends, self.offsets = score, ends, offsets
        self.at_chance = at_chance
        self.rows = [ends[(ends >= offsets[a]) & (ends < offsets[a + 1])] - offsets[a]
                     for a in range(len(V_list))]
        self.labels = np.zeros(int(offsets[-1]), dtype=np.int64)
        self.seen = None
        self.history = [self._score(V_list)]

    def _score(self, V_list):
        at_ends = np.concatenate([np.argmax(V[r], axis=1) for V, r in zip(V_list, self.rows)])
        if self.seen is not None and np.array_equal(at_ends, self.seen):
            return self.history[-1]
        self.seen = at_ends
        self.labels[self.ends] = at_ends
        return self.score(self.labels)

    def __call__(self, info):
        self.history.append(self._score(info.state["V"]))
        recent = self.history[-_TUNE_SETTLE - 1:]
        if len(self.history) <= _TUNE_SETTLE:
            return False
        if all(s == recent[-1] for s in recent):
            return True
        # the history holds the score of the start, then one per sweep
        return (self.at_chance and len(self.history) > _FIT_EXTRAPOLATION.after + _TUNE_SETTLE
                and all(abs(s - 0.5) <= _CHANCE_BAND for s in recent))


def _next_fold(default, earlier, own):
    """The fold a later candidate is fitted on next, or None once fitting it further cannot
    change the choice of :func:`fastmv._core._tuning.grid_search`.

    ``default``: the default's fold scores; ``earlier``: the fold scores of the candidates
    between them (NaN where not fitted); ``own``: ``{fold: score}`` of this candidate so far.
    Scores are at most 1, and a fold with nothing held out is NaN for every candidate (it is
    never fitted). The candidate is chosen only if it passes the one-standard-error rule
    against the default and its mean beats ``best``, the highest mean of the default and the
    earlier candidates that pass (ties: the earlier one). It is dropped once neither holds:

    - its scores so far do not pass or do not beat ``best`` (they are what ``grid_search``
      sees if it is dropped), and
    - with every unfitted fold at 1, the most it can score there, its mean does not beat
      ``best`` or its gains fail the rule in exact arithmetic
      (:func:`fastmv._core._tuning.may_beat_default`, closed upwards: no scores of the
      unfitted folds can then pass).

    So a default with 1 on every fold, or on all folds but one (the best gains
    ``(0, …, 0, b)`` are an exact tie, which keeps the default), or an earlier candidate
    that passed with a mean of 1, leaves nothing to fit. Folds are fitted in order of the
    default's score, highest first: there the candidate can gain least, so a loss that
    rules it out shows first.
    """
    default = np.asarray(default, dtype=np.float64)
    table = np.vstack([default, np.asarray(earlier, dtype=np.float64).reshape(-1, default.size)])
    means = fold_means(table)
    best = max(means[h] for h in eligible(table))
    row = np.full(default.size, np.nan)
    row[list(own)] = list(own.values())
    upper = np.where(np.isfinite(default) & np.isnan(row), 1.0, row)
    if ((beats_default(*paired_gain(row, default)) and fold_means(row[None])[0] > best)
            or (may_beat_default(upper - default) and fold_means(upper[None])[0] > best)):
        return _first_unfitted(default, own)
    return None


def _first_unfitted(default, own):
    """The unfitted fold with the default's highest score (NaN folds never), or None."""
    order = sorted((f for f in range(default.size) if np.isfinite(default[f]) and f not in own),
                   key=lambda f: -default[f])
    return order[0] if order else None


def tune_beta(data, must_link, cannot_link, init, rescale, rng, n_jobs, max_iter, tol, log,
               solve):
    """``beta="auto"``: k-fold over the pairs, one start per candidate and fold from one
    shared initialisation, scored by the held-out pairs honoured (:func:`fastmv._core._tuning.
    pair_score`, balanced over must- and cannot-links). ``data``: the prepared call;
    ``solve``: the solver's one start (``_solver._solve``, passed in so that this module does
    not import the solver that calls it)."""
    n_list = [X.shape[0] for X in data.views]
    dtype = data.views[0].dtype.type
    flat_m = _flat_pairs(check_constraints(must_link, "must_link", n_list))
    flat_c = _flat_pairs(check_constraints(cannot_link, "cannot_link", n_list))
    sup = from_pairs(np.zeros((len(flat_m), 2)), np.zeros((len(flat_c), 2)))
    fm, fc = pair_folds(sup, _TUNE_FOLDS, tuning_rng(rng))
    # the shared start sees no pairs: aligning it by all of them would leak the held-out ones
    full = data._replace(blocks=prepare_pairs(None, None, n_list, dtype))
    start_rng = tuning_rng(rng)
    # fits run to the solve's own stopping rule, until their score settles (_SettledScore) or
    # to _TUNE_MAX_SWEEPS: a cap on plain sweeps (e.g. 50 or 100) favours the weights that
    # converge first, and on ORL chose another weight than the full fits; extrapolated fits
    # reach the full fits' order of the weights within the cap (docs/records/cmvnmf.md)
    driver = dict(solver="cmvnmf", max_iter=min(max_iter, _TUNE_MAX_SWEEPS), tol=tol,
                  verbose=False, progress=False)
    offsets = np.concatenate([[0], np.cumsum([X.shape[0] for X in full.views])])

    def ends(flat):
        return np.concatenate([offsets[flat[:, 0]] + flat[:, 1],
                               offsets[flat[:, 2]] + flat[:, 3]])

    def scorer(f):
        held_m, held_c = flat_m[fm == f], flat_c[fc == f]

        def score(lab):
            return pair_score(lambda flat: lab[offsets[flat[:, 0]] + flat[:, 1]]
                              == lab[offsets[flat[:, 2]] + flat[:, 3]], held_m, held_c)
        # chance is 1/2 for pairs between views; within a view the data alone ties them
        inter = bool(len(held_m) and len(held_c) and np.all(held_m[:, 0] != held_m[:, 2])
                     and np.all(held_c[:, 0] != held_c[:, 2]))
        return score, np.unique(np.concatenate([ends(held_m), ends(held_c)])), inter

    # the views are prepared once and the pairs once per fold, for every candidate
    fold_pairs = [prepare_pairs(_as_dict(flat_m[fm != f]), _as_dict(flat_c[fc != f]), n_list,
                                dtype) for f in range(_TUNE_FOLDS)]
    starts = {}

    def start(f):
        """The start of fold ``f``'s fits, in the data's units (an explicit start is read in
        them): one shared by every fold, or the must-link start of the fold's own pairs (the
        held-out ones must not shape it)."""
        key = f if init == "must-link" else None
        if key not in starts:
            U0, V0 = initial_factors(full if key is None
                                     else full._replace(blocks=fold_pairs[f]),
                                     init, start_rng, n_jobs)
            starts[key] = U0, [np.ldexp(V, full.log2_scale).astype(V.dtype) for V in V0]
        return starts[key]

    def fit(beta, f):
        data = full._replace(blocks=fold_pairs[f], beta=float(beta))
        score, ends_f, inter = scorer(f)
        U0, V0 = start(f)
        settled = _SettledScore(score, ends_f, offsets, V0, at_chance=inter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solve(data, ([U.copy() for U in U0], [V.copy() for V in V0]), rescale, rng,
                  n_jobs, extrapolation=_FIT_EXTRAPOLATION, **dict(driver, callback=settled))
        return settled.history[-1]

    fitted = {beta: {} for beta in _TUNE_BETAS}   # {beta: {fold: score}} of the fits run

    def evaluate(beta, f):
        own = fitted[beta]
        if beta == _TUNE_BETAS[0]:
            own[f] = fit(beta, f)
        else:
            # a later weight is fitted fold by fold while it can still be chosen (_next_fold)
            default = [fitted[_TUNE_BETAS[0]][g] for g in range(_TUNE_FOLDS)]
            earlier = [[fitted[b].get(g, np.nan) for g in range(_TUNE_FOLDS)]
                       for b in _TUNE_BETAS[1:_TUNE_BETAS.index(beta)]]
            while f not in own and (g := _next_fold(default, earlier, own)) is not None:
                own[g] = fit(beta, g)
        return (own[f], 1) if f in own else (np.nan, 0)

    return grid_search("beta", list(_TUNE_BETAS), evaluate, _TUNE_FOLDS,
                       method="held-out inter-view pairs honoured, one start per fit, "
                       f"extrapolated after {_FIT_EXTRAPOLATION.after} plain sweeps, "
                       "stopped when the score is "
                       f"unchanged over {_TUNE_SETTLE} sweeps, within {_CHANCE_BAND} of "
                       f"chance (1/2) over {_TUNE_SETTLE} sweeps after the plain ones, or "
                       f"after {_TUNE_MAX_SWEEPS}; "
                       "the other weights fitted fold by fold while they can still be "
                       "chosen (NaN: not fitted)",
                       log=log)
