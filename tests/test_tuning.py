"""Self-tuning from the caller's supervision (fastmv._core._tuning and the solvers' "auto"
options)."""
import numpy as np
import pytest

import fastmv
import fastmv._cmvnmf._solver as cmv
from fastmv import metrics, simulate
from fastmv._core._tuning import (
    GAIN_RTOL,
    beats_default,
    from_labels,
    from_pairs,
    grid_search,
    label_folds,
    may_beat_default,
    pair_auc,
    pair_folds,
    pair_score,
    paired_gain,
)


# ----------------------------------------------------------------------------- building blocks
def test_pair_auc_matches_counting_definition():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 30).astype(float)   # ties on purpose
    b = rng.integers(0, 5, 40).astype(float)
    naive = np.mean([(x > y) + 0.5 * (x == y) for x in a for y in b])
    assert pair_auc(a, b) == pytest.approx(naive)
    assert np.isnan(pair_auc([], b))


def test_folds_are_stratified_and_cover_every_item():
    rng = np.random.default_rng(1)
    classes = np.repeat([0, 1, 2], [10, 7, 3])
    sup = from_labels(np.arange(20), classes)
    folds = label_folds(sup, 3, rng)
    assert set(folds) == {0, 1, 2}
    for c in range(3):
        counts = np.bincount(folds[classes == c], minlength=3)
        assert counts.max() - counts.min() <= 1
    assert np.ptp(np.bincount(folds)) <= 1
    sup = from_pairs(np.zeros((5, 2)), np.zeros((9, 2)))
    fm, fc = pair_folds(sup, 2, rng)
    assert fm.size == 5 and fc.size == 9 and np.ptp(np.bincount(fm)) <= 1


def test_pair_score_balances_the_two_kinds():
    labels = np.array([0, 0, 1, 1])
    same = lambda p: labels[p[:, 0]] == labels[p[:, 1]]  # noqa: E731
    must = np.array([[0, 1], [0, 2]])          # one kept, one broken: 0.5
    cannot = np.array([[0, 2], [1, 3], [0, 3], [1, 2]])  # all kept apart: 1.0
    assert pair_score(same, must, cannot) == pytest.approx(0.75)


def test_grid_search_first_candidate_wins_ties_and_counts_solves():
    chosen, rec = grid_search("x", ["a", "b", "c"],
                              lambda c, f: ({"a": 0.5, "b": 0.7, "c": 0.7}[c], 2), 3,
                              method="m")
    assert chosen == "b" and rec["solves"] == 18 and rec["scores"].shape == (3, 3)
    chosen, _ = grid_search("x", ["a", "b"], lambda c, f: (0.5, 0), 2, method="m")
    assert chosen == "a"


# ----------------------------------------------------------------------------- MVFL
def _l2_wins(rng, n_per=30, c=3, d=20):
    """Class = direction; every sample has a random magnitude over three decades, so only
    per-sample scaling makes samples of one class look alike."""
    y = np.repeat(np.arange(c), n_per)
    views = []
    for _ in range(2):
        centres = np.abs(rng.normal(size=(c, d))) + 0.05
        X = centres[y] + 0.15 * np.abs(rng.normal(size=(y.size, d)))
        X *= 10.0 ** rng.uniform(-1.5, 1.5, size=(y.size, 1))
        views.append(X)
    return views, y


def _zscore_wins(rng, n_per=30, c=3):
    """Class in a few low-variance features; many high-variance noise features dominate the
    rows' norms and distances unless every feature is scaled to unit variance."""
    y = np.repeat(np.arange(c), n_per)
    views = []
    for _ in range(2):
        signal = 0.05 * np.eye(c)[y] @ rng.normal(size=(c, 4)) * 8 + 0.02 * rng.normal(
            size=(y.size, 4))
        noise = 50.0 * rng.normal(size=(y.size, 2))
        views.append(np.hstack([signal, noise]))
    return views, y


@pytest.mark.parametrize("make, expected", [(_l2_wins, "l2"), (_zscore_wins, "zscore")])
def test_mvfl_tuning_picks_the_scaling_that_wins(make, expected):
    rng = np.random.default_rng(4)
    views, y = make(rng)
    lab = simulate.partial_labels(y, 0.3, random_state=0)
    r = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert r.tuning["normalize"]["chosen"] == expected
    assert r.normalize == [expected, expected]
    other = "zscore" if expected == "l2" else "l2"
    r_other = fastmv.mvfl(views, 3, labels=lab, normalize=other, random_state=0)
    # the chosen scaling clusters at least as well as the other one
    assert metrics.accuracy(y, r.labels) >= metrics.accuracy(y, r_other.labels)
    # with pairs instead of labels the pair-distance score decides the same way
    ml, cl = simulate.pairs_from_labels(lab)
    rp = fastmv.mvfl(views, 3, must_link=ml, cannot_link=cl, random_state=0)
    assert rp.tuning["normalize"]["chosen"] == expected


def test_mvfl_explicit_value_bypasses_tuning_and_equals_the_tuned_solve():
    rng = np.random.default_rng(5)
    views, y = _l2_wins(rng)
    lab = simulate.partial_labels(y, 0.3, random_state=1)
    tuned = fastmv.mvfl(views, 3, labels=lab, random_state=3)
    chosen = {k: v["chosen"] for k, v in tuned.tuning.items()}
    assert set(chosen) == {"normalize", "init", "anchor"}  # d <= n: the anchor too
    partly = fastmv.mvfl(views, 3, labels=lab, normalize=chosen["normalize"], random_state=3)
    assert set(partly.tuning) == {"init", "anchor"}
    fixed = fastmv.mvfl(views, 3, labels=lab, random_state=3, **chosen)
    assert fixed.tuning is None
    np.testing.assert_array_equal(fixed.labels, tuned.labels)
    np.testing.assert_array_equal(fixed.objective, tuned.objective)
    # without supervision "auto" is the per-view rule: nothing is tuned
    with pytest.warns(fastmv.exceptions.ConvergenceWarning):
        assert fastmv.mvfl(views, 3, random_state=0, max_iter=3).tuning is None


def _rings(seed, n_per=60):
    """Three concentric rings in the plane, seen twice with small noise: the kNN graph (and
    label spreading) finds them, a linear map of the two coordinates cannot represent them,
    so the fit term pulls ``F`` away from a good start unless the anchor holds it."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per)
    r = np.array([1.0, 2.5, 4.0])[y] + rng.normal(0, 0.05, y.size)
    t = rng.uniform(0, 2 * np.pi, y.size)
    base = np.column_stack([r * np.cos(t), r * np.sin(t)])
    lab = np.full(y.size, -1)
    idx = rng.choice(y.size, 24, replace=False)
    lab[idx] = y[idx]
    return [base + rng.normal(0, 0.05, base.shape) for _ in range(2)], y, lab


def test_mvfl_anchor_tuned_from_labels_where_the_fit_pulls_away():
    views, y, lab = _rings(1)
    kw = dict(labels=lab, normalize="zscore", init="spread", random_state=0)
    tuned = fastmv.mvfl(views, 3, **kw)
    rec = tuned.tuning["anchor"]
    assert rec["candidates"] == [0.1, 0.3] and rec["chosen"] in (0.1, 0.3)
    assert rec["scores"].shape == (2, rec["folds"]) and rec["solves"] == 2 * rec["folds"]
    default = fastmv.mvfl(views, 3, anchor=0.01, **kw)  # the rule of d > n: too weak here
    assert default.tuning is None  # an explicit anchor skips the validation
    assert metrics.accuracy(y, tuned.labels) > metrics.accuracy(y, default.labels) + 0.05
    fixed = fastmv.mvfl(views, 3, anchor=rec["chosen"], **kw)
    np.testing.assert_array_equal(fixed.labels, tuned.labels)
    np.testing.assert_array_equal(fixed.objective, tuned.objective)


def test_mvfl_anchor_not_tuned_where_the_fit_is_exact():
    """``d > n`` (the Woodbury route, text): the fit is exact for any ``F`` and the anchor
    rule is kept without validation; so is it for the paper's step (no anchor)."""
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1, 2], 10)
    views = [np.eye(3)[y] @ rng.normal(size=(3, 40)) + 0.1 * rng.normal(size=(30, 40))
             for _ in range(2)]
    lab = simulate.partial_labels(y, 0.3, random_state=0)
    r = fastmv.mvfl(views, 3, labels=lab, random_state=0)
    assert "anchor" not in r.tuning
    small = [V[:, :5] for V in views]
    assert "anchor" in fastmv.mvfl(small, 3, labels=lab, random_state=0).tuning
    with pytest.warns(fastmv.exceptions.ConvergenceWarning):  # the paper's step, 5 sweeps
        paper = fastmv.mvfl(small, 3, labels=lab, random_state=0, f_step="paper", max_iter=5)
    assert "anchor" not in paper.tuning


def test_tuning_is_deterministic_and_round_trips(tmp_path):
    rng = np.random.default_rng(6)
    views, y = _zscore_wins(rng)
    lab = simulate.partial_labels(y, 0.3, random_state=2)
    a = fastmv.mvfl(views, 3, labels=lab, random_state=7)
    b = fastmv.mvfl(views, 3, labels=lab, random_state=7)
    np.testing.assert_array_equal(a.tuning["normalize"]["scores"],
                                  b.tuning["normalize"]["scores"])
    path = tmp_path / "r.npz"
    a.save(path)
    back = fastmv.Result.load(path)
    rec, rec2 = a.tuning["normalize"], back.tuning["normalize"]
    assert rec2["chosen"] == rec["chosen"] and rec2["candidates"] == rec["candidates"]
    np.testing.assert_array_equal(rec2["scores"], rec["scores"])
    assert a.to_dict(jsonable=True)["tuning"]["normalize"]["folds"] == rec["folds"]


# ----------------------------------------------------------------------------- CMVNMF
def _unmapped_problem(seed, negative=False):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), 25)
    views = []
    for _ in range(2):
        X = np.eye(3)[y] @ rng.uniform(0, 1, size=(3, 8)) * 3 + 0.3 * rng.random((75, 8))
        views.append(X - 2.0 if negative else X)
    Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=rng)
    ml, cl = simulate.inter_view_constraints(ys, ratio=0.05, random_state=rng)
    return Xs, ys, ml, cl


def test_cmvnmf_negative_views_have_a_way_forward():
    Xs, ys, ml, cl = _unmapped_problem(0, negative=True)
    with pytest.raises(ValueError, match="negative"):
        fastmv.cmvnmf(Xs, 3, ml, cl, normalize="l2", beta=1.0)
    r = fastmv.cmvnmf(Xs, 3, ml, cl, random_state=0, tol=1e-4)
    assert r.normalize == ["minmax", "minmax"]
    assert min(metrics.accuracy(yv, lv) for yv, lv in zip(ys, r.labels)) > 0.9
    # "minmax" is shift-invariant: the nonnegative version of the same data clusters alike
    Xp, _, _, _ = _unmapped_problem(0, negative=False)
    rp = fastmv.cmvnmf(Xp, 3, ml, cl, normalize="minmax", beta=1.0, random_state=0, tol=1e-4)
    rn = fastmv.cmvnmf(Xs, 3, ml, cl, normalize="minmax", beta=1.0, random_state=0, tol=1e-4)
    for a, b in zip(rp.labels, rn.labels):
        assert metrics.accuracy(a, b) == 1.0  # the same partition


def test_cmvnmf_explicit_beta_runs_no_tuning_solve(monkeypatch):
    Xs, ys, ml, cl = _unmapped_problem(1)
    calls = []
    real = cmv._solve
    monkeypatch.setattr(cmv, "_solve", lambda *a, **k: calls.append(1) or real(*a, **k))
    # with must-links the default start is the must-link one: one start, whatever n_init
    r = fastmv.cmvnmf(Xs, 3, ml, cl, beta=1.0, n_init=2, random_state=0, tol=1e-4)
    assert r.tuning is None and len(calls) == 1
    calls.clear()
    r = fastmv.cmvnmf(Xs, 3, ml, cl, beta=1.0, n_init=2, random_state=0, tol=1e-4,
                      init="k-means++")
    assert r.tuning is None and len(calls) == 2
    calls.clear()
    r = fastmv.cmvnmf(Xs, 3, ml, cl, n_init=2, random_state=0, tol=1e-4)
    rec = r.tuning["beta"]
    # the default on every fold; the others only while they can still be chosen
    assert rec["folds"] <= rec["solves"] <= len(rec["candidates"]) * rec["folds"]
    assert rec["solves"] == np.count_nonzero(np.isfinite(rec["scores"]))
    assert len(calls) == 1 + rec["solves"]
    assert rec["chosen"] in rec["candidates"]
    again = fastmv.cmvnmf(Xs, 3, ml, cl, n_init=2, random_state=0, tol=1e-4)
    np.testing.assert_array_equal(again.tuning["beta"]["scores"], rec["scores"])


# ----------------------------------------------------------------------------- MVMC
def test_mvmc_auto_C1_records_its_choice_and_a_number_skips_it():
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1, 2], 20)
    views = [np.eye(3)[y] @ rng.normal(size=(3, 6)) * 3 + rng.normal(size=(60, 6))
             for _ in range(2)]
    ml, cl = simulate.pairwise_constraints(y, 200, random_state=0)
    r = fastmv.mvmc(views, 3, ml, cl, C1="auto", k=6, random_state=0)
    rec = r.tuning["C1"]
    assert rec["chosen"] in rec["candidates"] and rec["scores"].shape == (3, 2)
    assert np.all(rec["mean"] > 0.5)  # the held-out pairs are ranked better than chance
    fixed = fastmv.mvmc(views, 3, ml, cl, C1=rec["chosen"], k=6, random_state=0)
    assert "C1" not in (fixed.tuning or {})  # a number skips C1's tuning (normalize is tuned)
    np.testing.assert_array_equal(fixed.labels, r.labels)


def test_cli_reads_a_number_for_an_auto_option():
    from fastmv._app._cli_options import _value_parser

    parse = _value_parser("beta", "auto")
    assert parse("0.5") == 0.5 and parse("auto") == "auto" and parse("l2") == "l2"
    assert parse("None") is None


def test_an_exact_tie_keeps_the_default_whatever_the_rounding():
    # a gain b on one fold and ties on the others: mean gain and standard error are both
    # |b| / k in exact arithmetic; in floating point ``gain > se`` holds for some (b, k)
    rounded_wins = 0
    for k in range(2, 9):
        for m in (7, 12, 97, 331):
            for i in range(1, m + 1):
                default = (np.arange(k) % m) / m          # rational scores like a share of m
                other = default.copy()
                other[i % k] = min(default[i % k] + i / m, 1.0)
                gain, se = paired_gain(other, default)
                rounded_wins += gain > se
                assert not beats_default(gain, se), (k, m, i)
                chosen, rec = grid_search("x", ["a", "b"], lambda c, f: (
                    (default, other)[c == "b"][f], 1), k, method="m")
                assert chosen == "a" and rec["gain_se"][1] == se
    assert rounded_wins > 100        # the cases a bare ``gain > se`` decides by rounding


def test_the_rule_needs_more_than_rounding_to_pass_and_any_true_excess_passes():
    assert not beats_default(0.0, 0.0)                      # all-zero gains
    assert beats_default(1e-12, 0.0)                        # no spread: any positive gain
    assert not beats_default(-np.inf, np.inf) and not beats_default(0.5, np.inf)
    assert not beats_default(0.1 * (1 + 0.1 * GAIN_RTOL), 0.1)
    assert beats_default(0.1 * (1 + 10 * GAIN_RTOL), 0.1)
    for k in range(3, 9):
        for b in (1 / 3, 0.5, 2 / 7, 1.0):
            tie = np.zeros(k)
            tie[-1] = b
            assert not beats_default(*paired_gain(tie, np.zeros(k)))
            tie[0] = b / 331                                 # a second fold gains a little
            assert beats_default(*paired_gain(tie, np.zeros(k)))
            tie[0] = -b / 331                                # or loses a little
            assert not beats_default(*paired_gain(tie, np.zeros(k)))
    # gains equal in exact arithmetic but not in floating point: a tiny positive se
    gain, se = paired_gain([0.7, 0.8, 0.9], [0.6, 0.7, 0.8])
    assert se < 1e-15 and beats_default(gain, se)
    assert paired_gain([0.5, np.nan], [0.4, 0.4]) == (pytest.approx(0.1), np.inf)
    assert paired_gain([np.nan], [0.4]) == (-np.inf, np.inf)


def test_the_exact_bound_is_necessary_for_the_rule_and_closed_upwards():
    rng = np.random.default_rng(3)
    passed = 0
    for _ in range(3000):
        k = int(rng.integers(2, 7))
        m = int(rng.integers(2, 40))
        d = rng.integers(-m, m + 1, k) / m * (rng.random(k) < 0.7)   # many exact zeros
        gains = d - 0.0
        if beats_default(*paired_gain(gains, np.zeros(k))):
            passed += 1
            assert may_beat_default(gains)
        if may_beat_default(gains):
            up = gains.copy()
            up[int(rng.integers(k))] += rng.integers(1, m + 1) / m
            assert may_beat_default(up)
    assert passed > 300
    assert not may_beat_default([0.0, 0.0, 0.5]) and may_beat_default([1e-300, 0.0, 0.5])
    assert not may_beat_default([np.nan, 0.5]) and not may_beat_default([0.0, 0.0])


def test_grid_search_keeps_the_default_unless_the_gain_beats_its_noise():
    noisy = {"a": [0.5, 0.5, 0.5], "b": [0.8, 0.25, 0.6]}     # mean gain 0.05, se ≈ 0.16
    chosen, rec = grid_search("x", ["a", "b"], lambda c, f: (noisy[c][f], 0), 3, method="m")
    assert chosen == "a" and rec["mean"][1] > rec["mean"][0]
    steady = {"a": [0.5, 0.5, 0.5], "b": [0.56, 0.55, 0.57]}
    chosen, _ = grid_search("x", ["a", "b"], lambda c, f: (steady[c][f], 0), 3, method="m")
    assert chosen == "b"
