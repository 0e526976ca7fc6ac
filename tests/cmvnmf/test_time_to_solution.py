"""What CMVNMF does to reach its answer sooner (docs/records/cmvnmf.md, "Time to solution"): every
start runs to its own stop (none is abandoned), views prepared once for the validation fits
of beta="auto", validation fits that cannot change the choice are not run."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import fastmv
import fastmv._cmvnmf._solver as C
import fastmv._cmvnmf._tune as T
from fastmv import simulate
from fastmv._cmvnmf._extrapolation import Extrapolation
from fastmv._core._driver import IterationInfo

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _views(seed=0, n=80, c=3, density=0.05):
    """Two unmapped views of planted clusters: the first mostly zeros (word-count like), the
    second dense."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    n = y.size
    words = ((rng.random((n, 200)) < density) * rng.integers(1, 4, (n, 200))).astype(float)
    words[:, :c * 5] += 3 * (np.repeat(np.eye(c), 5, axis=1)[y] * (rng.random((n, c * 5)) < .6))
    dense = np.eye(c)[y] @ rng.random((c, 8)) + 0.3 * rng.random((n, 8))
    uv, uy, _ = simulate.unmapped([words, dense], y, keep=0.95,
                                  random_state=seed)
    return uv, uy


def _tuned_draw(wanted, **kw):
    """``(views, must, cannot, result)`` of the first of ten small draws whose
    ``beta="auto"`` record satisfies ``wanted``. Which draws have a default that honours every
    held-out pair (and so fit nothing else) moved between hosts (the BLAS and Numba kernels
    picked for the CPU round differently): the tests ask for a kind of draw, not a seed."""
    for seed in range(10):
        uv, uy = _views(seed=seed, n=60)
        ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=seed)
        res = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
        if wanted(res.tuning["beta"]):
            return uv, ml, cl, res
    pytest.fail("no draw of the kind the test needs")


def _info(it, f):
    return IterationInfo("cmvnmf", it, f, 0.0, 0.0, {})


def test_start_guard_passes_the_callers_stop_on_and_nothing_else():
    assert not C._StartGuard(None)(_info(50, 1e9))   # no sweep count stops a start
    user = C._StartGuard(lambda info: True)
    assert user(_info(1, 0.0)) and user.stopped
    # the driver's stop rule: True or StopIteration stop, any other value does not
    assert not C._StartGuard(lambda info: 1)(_info(1, 0.0))

    def raising(info):
        raise StopIteration

    stop = C._StartGuard(raising)
    assert stop(_info(2, 0.0)) and stop.stopped


def test_every_start_runs_to_its_stop_and_the_lowest_final_objective_is_kept(caplog):
    uv, uy = _views(seed=1, n=60)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=1)
    kw = dict(beta=1.0, init="random", max_iter=60, tol=0.0)
    with caplog.at_level(logging.INFO, logger="fastmv"):
        res = fastmv.cmvnmf(uv, 3, ml, cl, n_init=4, verbose=True,
                            random_state=np.random.default_rng(4), **kw)
    lines = [r.getMessage() for r in caplog.records if "cmvnmf: start" in r.getMessage()]
    assert len(lines) == 4
    sweeps = [int(s.split("sweeps")[1].split()[0]) for s in lines]
    finals = [float(s.split("objective")[1].split()[0]) for s in lines]
    assert sweeps == [kw["max_iter"]] * 4               # tol=0: each start runs max_iter
    assert len(set(finals)) > 1                         # the starts differ: the choice matters
    assert res.objective[-1] == pytest.approx(min(finals), rel=1e-7)


def test_beta_tuning_prepares_the_views_once_and_the_solve_equals_the_fixed_call(monkeypatch):
    calls = []
    prepare = C._prepare

    def counting(*args, **kwargs):
        calls.append(args[4])
        return prepare(*args, **kwargs)

    monkeypatch.setattr(C, "_prepare", counting)
    kw = dict(n_init=2, max_iter=40, random_state=0)
    uv, ml, cl, _ = _tuned_draw(lambda rec: rec["solves"] > T._TUNE_FOLDS, **kw)
    calls.clear()
    tuned = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    record = tuned.tuning["beta"]
    assert len(calls) == 1      # the validation fits reuse the prepared views
    assert record["solves"] == np.isfinite(record["scores"]).sum()
    fixed = fastmv.cmvnmf(uv, 3, ml, cl, beta=record["chosen"], **kw)
    np.testing.assert_array_equal(tuned.objective, fixed.objective)
    for a in range(2):
        np.testing.assert_array_equal(tuned.labels[a], fixed.labels[a])


def test_a_validation_fit_stops_once_its_held_out_score_has_settled():
    offsets = np.array([0, 3, 5])
    ends = np.array([0, 2, 4])
    calls = []

    def score(lab):
        calls.append(lab[ends].copy())
        return float(lab[0] == lab[4])

    V = [np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0]])]
    settled = T._SettledScore(score, ends, offsets, V)
    assert settled.history == [0.0] and len(calls) == 1     # row 4 is in cluster 1

    def sweep(V_list):
        return settled(IterationInfo("cmvnmf", len(settled.history), 0.0, 0.0, 0.0,
                                     {"V": V_list}))

    assert not sweep(V)                       # labels at the ends unchanged: not rescored
    assert len(calls) == 1
    V[1][1] = [2.0, 0.0]                      # row 4 joins row 0: the score changes
    stops = [sweep(V) for _ in range(T._TUNE_SETTLE + 1)]
    assert settled.history[2:] == [1.0] * (T._TUNE_SETTLE + 1)
    # the first sweep at the new score, then _TUNE_SETTLE unchanged ones: stop at the last
    assert stops == [False] * T._TUNE_SETTLE + [True]
    assert len(calls) == 2


class _FedScore(T._SettledScore):
    """The stop rule of a validation fit on a given sequence of held-out scores."""

    def __init__(self, scores, at_chance):
        self.values = iter(scores)
        super().__init__(None, np.zeros(0, np.int64), np.array([0, 1]), [np.ones((1, 1))],
                         at_chance=at_chance)

    def _score(self, V_list):
        return next(self.values)


def _stop_sweep(scores, at_chance):
    fed = _FedScore(scores, at_chance)
    for sweep in range(1, len(scores)):
        if fed(IterationInfo("cmvnmf", sweep, 0.0, 0.0, 0.0, {"V": None})):
            return sweep
    return None


def test_a_validation_fit_at_chance_stops_after_its_plain_sweeps():
    plain, settle, band = T._FIT_EXTRAPOLATION.after, T._TUNE_SETTLE, T._CHANCE_BAND
    # a score moving every sweep (never "unchanged") within the band around 1/2
    wobble = [0.5 + 0.8 * band * (-1) ** k for k in range(T._TUNE_MAX_SWEEPS + 1)]
    # stops once the last settle + 1 scores, all after the plain sweeps' start, are in it
    assert _stop_sweep(wobble, at_chance=True) == plain + settle
    assert _stop_sweep(wobble, at_chance=False) is None     # e.g. pairs within a view
    # a score that leaves the band at sweep 30 waits for settle sweeps back inside it
    left = list(wobble)
    left[30] = 0.5 + 2 * band
    assert _stop_sweep(left, at_chance=True) == 30 + settle + 1
    # a fit that moves off chance is never stopped by it
    rising = [0.5 + 0.01 * k for k in range(60)]
    assert _stop_sweep(rising, at_chance=True) is None
    # an unchanged score stops any fit, at chance or not, after settle sweeps
    assert _stop_sweep([0.7] * 40, at_chance=False) == settle


def test_only_fits_scored_on_pairs_between_views_stop_at_chance(monkeypatch):
    flags = []
    init = T._SettledScore.__init__

    def recording(self, *args, **kwargs):
        flags.append(kwargs.get("at_chance"))
        init(self, *args, **kwargs)

    monkeypatch.setattr(T._SettledScore, "__init__", recording)
    uv, uy = _views(seed=2, n=60)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=2)
    kw = dict(n_init=1, max_iter=30, random_state=0)
    fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    assert flags and all(flags)
    # with pairs within view 0 on every fold, chance is no longer 1/2: never stopped by it
    same = np.flatnonzero(uy[0] == uy[0][0])
    other = np.flatnonzero(uy[0] != uy[0][0])
    ml[(0, 0)] = np.column_stack([same[:-1], same[1:]])
    cl[(0, 0)] = np.column_stack([same[:len(other)], other[:len(same)]])
    flags.clear()
    fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    assert flags and not any(flags)


def test_sweeps_multiply_by_csr_and_kmeans_starts_read_the_views_as_given(monkeypatch):
    import scipy.sparse as sp

    import fastmv._blocks._kmeans as K

    # a draw whose tuning fits other weights beside the default (see _tuned_draw); the
    # k-means starts (the must-link start runs no k-means)
    kw = dict(n_init=2, max_iter=30, random_state=0, init="k-means++")
    uv, ml, cl, _ = _tuned_draw(lambda rec: rec["solves"] > T._TUNE_FOLDS, **kw)
    seen, starts = [], []
    problem, kmeans = C.Problem, K.kmeans

    def recording(X_list, *args, **kwargs):
        seen.append([sp.issparse(X) for X in X_list])
        return problem(X_list, *args, **kwargs)

    def recording_kmeans(X, *args, **kwargs):
        starts.append(sp.issparse(X))
        return kmeans(X, *args, **kwargs)

    monkeypatch.setattr(C, "Problem", recording)
    monkeypatch.setattr(K, "kmeans", recording_kmeans)
    res = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    fits = res.tuning["beta"]["solves"]
    assert fits > T._TUNE_FOLDS
    # the word-count view (5 % nonzeros) is CSR in every fit and start; the dense view is not
    assert seen == [[True, False]] * (fits + 2)
    # k-means on a CSR copy ends elsewhere (no centring): the starts see the views as given
    assert starts == [False] * 2 * (1 + 2)


def test_without_pairs_kmeans_starts_read_mostly_zero_views_as_csr(monkeypatch):
    import scipy.sparse as sp

    import fastmv._blocks._kmeans as K

    uv, _ = _views(seed=1)
    starts, kmeans = [], K.kmeans

    def recording_kmeans(X, *args, **kwargs):
        starts.append(sp.issparse(X))
        return kmeans(X, *args, **kwargs)

    monkeypatch.setattr(K, "kmeans", recording_kmeans)
    res = fastmv.cmvnmf(uv, 3, None, None, n_init=2, max_iter=20, random_state=0)
    # the word-count view (5 % nonzeros) as CSR, the dense one as given, in both starts
    assert starts == [True, False] * 2
    assert res.tuning is None and res.start_kept is not None


def test_csr_sweeps_give_the_labels_and_objective_of_dense_products(monkeypatch):
    uv, uy = _views(seed=3, n=90)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=3)
    # one start: extrapolated, both starts of this problem reach one fixed point (columns
    # permuted), and which is kept is a tie that rounding breaks
    kw = dict(beta=1.0, n_init=1, max_iter=60, tol=0.0, random_state=0)
    sparse = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    prepare = C._prepare
    monkeypatch.setattr(C, "_prepare", lambda *a: prepare(*a)._replace(
        sweep_views=prepare(*a).views))
    dense = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    for a in range(2):
        np.testing.assert_array_equal(sparse.labels[a], dense.labels[a])
        np.testing.assert_allclose(sparse.V[a], dense.V[a], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.objective, dense.objective, rtol=1e-10)


def test_later_weights_are_fitted_fold_by_fold_while_they_can_be_chosen():

    nxt = T._next_fold
    assert nxt([1.0, 1.0, 1.0], [], {}) is None                 # gains <= 0 only
    assert nxt([1.0, 1.0, 0.9], [], {}) is None                 # (0, 0, b) at best: a tie
    assert nxt([0.9, 1.0, 1.0], [], {}) is None
    assert nxt([0.9, 0.8, 0.7], [], {}) == 0                    # the default's best fold first
    assert nxt([0.7, 0.8, 0.9], [], {}) == 2
    assert nxt([0.9, 0.8, 0.7], [], {0: 0.85}) == 1             # (-.05, .2, .3) can pass
    assert nxt([0.9, 0.8, 0.7], [], {0: 0.85, 1: 0.8}) is None  # (-.05, 0, .3) cannot
    assert nxt([1.0, 0.9, 0.8], [], {0: 1.0, 1: 0.9}) is None   # (0, 0, .2): a tie at best
    assert nxt([0.9, 0.8, 1.0], [], {0: 0.5}) is None           # a loss the rest cannot repay
    assert nxt([0.5, 0.5, 0.5], [], {0: 0.9, 1: 0.9}) == 2      # passes on the folds so far
    assert nxt([0.5, 0.5, 0.5], [], {0: 0.9, 1: 0.9, 2: 0.9}) is None
    assert nxt([0.99, 0.98, 0.99], [[1.0, 1.0, 1.0]], {}) is None   # eligible, perfect
    assert nxt([0.99, 0.98, 0.99], [[1.0, 1.0, 0.999]], {}) == 0
    # an earlier weight that passed with mean .95: gains that pass are not enough
    assert nxt([0.5, 0.5, 0.5], [[0.95, 0.95, 0.95]], {0: 0.8}) is None
    assert nxt([0.5, 0.5, 0.5], [[0.95, 0.95, 0.95]], {0: 0.9}) == 1
    assert nxt([1.0, np.nan, 0.5], [], {0: 0.9}) is None        # a fold with no score
    assert nxt([0.5, np.nan, 0.5], [], {0: 0.9}) == 2           # ... is never fitted
    assert nxt([0.5, np.nan, 0.5], [], {0: 0.9, 2: 0.9}) is None


def _score_tables(rng, n):
    """Random score tables (3 candidates × k folds, scores <= 1) of the kinds the rule acts
    on: many exact 1s, rational shares i / m, gains on one fold only (exact ties), and
    folds with nothing held out (NaN for every candidate)."""
    for _ in range(n):
        k = int(rng.integers(2, 6))
        kind = rng.random()
        if kind < 0.4:          # coarse shares, often exactly 1
            full = np.where(rng.random((3, k)) < 0.6, 1.0, 1.0 - rng.integers(1, 30, (3, k)) / 331)
        else:                   # shares i / m of small m
            m = int(rng.integers(2, 13))
            full = rng.integers(m // 2, m + 1, (3, k)) / m
        for g in (1, 2):
            if rng.random() < 0.4:      # equal to the default but on one fold: gains (0,..,b)
                full[g] = full[0]
                f = int(rng.integers(k))
                full[g, f] = rng.integers(0, 13) / 12 if rng.random() < 0.5 else 1.0
        if k > 2 and rng.random() < 0.15:
            full[:, int(rng.integers(k))] = np.nan
        yield k, full


def test_fitting_fold_by_fold_keeps_grid_search_choice():
    from fastmv._core._tuning import grid_search

    skipped = changed = 0
    for k, full in _score_tables(np.random.default_rng(0), 4000):
        lazy = [full[0].copy()]
        for g in (1, 2):
            own = {}
            while (f := T._next_fold(full[0], [list(x) for x in lazy[1:g]], own)) is not None:
                assert f not in own and np.isfinite(full[0, f])
                own[f] = full[g][f]
            lazy.append(np.array([own.get(f, np.nan) for f in range(k)]))
            skipped += int(np.isfinite(full[0]).sum()) - len(own)

        def choose(table):
            return grid_search("x", [0, 1, 2], lambda g, f: (table[g][f], 1), k,
                               method="test")[0]
        chosen = choose(full)
        assert choose(lazy) == chosen, full
        changed += chosen != 0
    assert skipped > 3000 and changed > 200       # the rule both skips fits and lets weights win


def test_tuning_skips_the_other_weights_when_the_default_is_perfect(monkeypatch):

    kw = dict(n_init=1, max_iter=40, random_state=0)
    uv, ml, cl, short = _tuned_draw(lambda rec: np.all(rec["scores"][0] == 1.0), **kw)
    record = short.tuning["beta"]
    assert np.all(record["scores"][0] == 1.0)       # planted clusters: every pair honoured
    assert record["solves"] == T._TUNE_FOLDS
    assert np.all(np.isnan(record["scores"][1:]))

    def every_fold(default, earlier, own):
        return next((f for f in range(len(default)) if f not in own), None)

    monkeypatch.setattr(T, "_next_fold", every_fold)
    full = fastmv.cmvnmf(uv, 3, ml, cl, **kw)
    assert full.tuning["beta"]["solves"] == len(T._TUNE_BETAS) * T._TUNE_FOLDS
    assert full.tuning["beta"]["chosen"] == record["chosen"] == T._TUNE_BETAS[0]
    np.testing.assert_array_equal(full.tuning["beta"]["scores"][0], record["scores"][0])
    for a in range(2):
        np.testing.assert_array_equal(short.labels[a], full.labels[a])



def test_validation_fits_are_extrapolated_and_capped(monkeypatch):
    # a fit only scores its weight: its sweeps are extrapolated after a few plain ones
    # without waiting for the labels, and end after _TUNE_MAX_SWEEPS at most; the solve's
    # starts keep the solve's settings and max_iter
    runs = []
    solve = C._solve

    def spy(data, init, rescale, rng, n_jobs, extrapolation=None, **driver):
        problem, trace = solve(data, init, rescale, rng, n_jobs, extrapolation, **driver)
        runs.append((isinstance(init, tuple), extrapolation, driver["max_iter"], trace.n_iter,
                     problem.extrapolated))
        return problem, trace

    monkeypatch.setattr(C, "_solve", spy)
    uv, uy = _views(seed=0, n=60)
    ml, cl = simulate.inter_view_constraints(uy, ratio=0.05, random_state=0)
    max_iter = T._TUNE_MAX_SWEEPS + 50
    fastmv.cmvnmf(uv, 3, ml, cl, n_init=2, max_iter=max_iter, tol=0.0, random_state=0,
                  init="k-means++")
    fits = [r for r in runs if r[0]]
    starts = [r for r in runs if not r[0]]
    assert len(fits) >= T._TUNE_FOLDS and len(starts) == 2
    for _, settings, cap, n_iter, ext in fits:
        assert settings == T._FIT_EXTRAPOLATION and settings.settle == 0
        assert settings.after < Extrapolation().after
        assert cap == T._TUNE_MAX_SWEEPS and n_iter <= cap
        assert ext.settings is settings
        assert ext.started == (n_iter > settings.after)
    for _, settings, cap, n_iter, ext in starts:
        assert settings is None and cap == max_iter == n_iter
        assert ext.settings == Extrapolation()
    # a smaller max_iter caps the fits too
    runs.clear()
    fastmv.cmvnmf(uv, 3, ml, cl, n_init=1, max_iter=7, tol=0.0, random_state=0)
    assert {r[2] for r in runs} == {7}
