"""Every result converts to strict JSON (no NaN, no infinity) and loads back only whole.

One "not computed" representation: ``None`` for a field, ``nan`` for an entry of a float
array, and ``None`` for both in ``to_dict(jsonable=True)``, which therefore passes
``json.dumps(..., allow_nan=False)`` for every solver and block, self-tuned or not, on tiny
and degenerate inputs.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import fastmv
from fastmv.exceptions import DegenerateSolutionError, InvalidFileError, InvalidParameterError
from tests.solvers import SOLVERS, case, cases


def _views(n, seed=0, constant=False):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    views = [rng.normal(size=(n, 3)) + 2 * y[:, None], rng.normal(size=(n, 2)) + y[:, None]]
    if constant:
        views[1] = np.ones((n, 2))
    return views, y


def _solve(name, n, tuned, constant=False):
    """A result of a solver (``tests/<solver>/cases.py``'s ``result``; ``name-variant`` for
    one of its ``RESULT_VARIANTS``) or of k-means."""
    views, y = _views(n, constant=constant)
    c = 2 if n >= 2 else 1
    if name == "kmeans":
        return fastmv.kmeans(views[0], c, random_state=0)
    solver, _, variant = name.partition("-")
    return cases(solver).result(views, y, c, tuned, **({"variant": variant} if variant else {}))


_NAMES = [*SOLVERS, *(f"{s}-{v}" for s in SOLVERS for v in case(s, "RESULT_VARIANTS", ())),
          "kmeans"]


def _strict(res):
    return json.loads(json.dumps(res.to_dict(jsonable=True), allow_nan=False))


@pytest.mark.parametrize("tuned", [False, True], ids=["explicit", "self-tuned"])
@pytest.mark.parametrize("n", [2, 5, 30], ids=lambda n: f"n={n}")
@pytest.mark.parametrize("name", _NAMES)
def test_every_result_is_strict_json(name, n, tuned):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = _solve(name, n, tuned)
        except (InvalidParameterError, DegenerateSolutionError):
            pytest.skip("refused: too few samples for this solver")
    _strict(res)


@pytest.mark.parametrize("name", [*SOLVERS, "kmeans"])
def test_strict_json_with_a_constant_view(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _solve(name, 20, True, constant=True)
    _strict(res)


def test_spectral_blocks_give_plain_labels():
    views, _ = _views(20)
    P = fastmv.transition_matrix(views[0])
    S = (P + P.T) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for labels in (fastmv.spectral_clustering(S, 2, random_state=0),
                       fastmv.markov_spectral_clustering(P, 2, random_state=0)):
            json.dumps(labels.tolist(), allow_nan=False)


def test_not_computed_entries_are_nan_in_memory_and_null_in_json():
    views, _ = _views(30)
    P = [fastmv.transition_matrix(X) for X in views]
    res = fastmv.emvc(P, 0.01, 0.01, n_clusters=2, random_state=0)
    assert np.isnan(res.p_hat_change[0]) and np.isfinite(res.p_hat_change[1:]).all()
    assert _strict(res)["p_hat_change"][0] is None
    assert fastmv.emvc(P, 0.01, 0.01, tol_settle=None, max_iter=3).p_hat_change is None


def test_untunable_supervision_is_skipped_and_says_why():
    views, y = _views(20)
    res = fastmv.mvfl(views, 2, labels=np.full(20, -1), random_state=0)
    record = res.tuning["normalize"]
    assert record["scores"] is None and record["solves"] == 0 and "labelled" in record["reason"]
    one = np.full(20, -1)
    one[3] = 1
    res = fastmv.mvfl(views, 2, labels=one, random_state=0)
    assert all(r["scores"] is None and r["reason"] for r in res.tuning.values())
    _strict(res)
    # must-links only: no fold holds a cannot-link out to compare with
    res = fastmv.mvfl(views, 2, must_link=np.array([[0, 1], [2, 3], [4, 5]]), random_state=0)
    assert res.tuning["normalize"]["scores"] is None
    assert "could be scored" in res.tuning["normalize"]["reason"]
    _strict(res)


def test_tuning_scores_of_unfitted_folds_are_null():
    res = _solve("cmvnmf", 30, True)
    out = _strict(res)
    assert res.tuning is not None
    scores = np.asarray(res.tuning["beta"]["scores"], dtype=float)
    flat = [v for row in out["tuning"]["beta"]["scores"] for v in row]
    assert [v is None for v in flat] == list(np.isnan(scores).ravel())


@pytest.mark.parametrize("name", [*SOLVERS, "kmeans"])
def test_saved_results_round_trip(name, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _solve(name, 30, True)
    res.save(tmp_path / "r.npz")
    back = fastmv.Result.load(tmp_path / "r.npz")
    assert type(back) is type(res)
    assert json.dumps(back.to_dict(jsonable=True), allow_nan=False) == \
        json.dumps(res.to_dict(jsonable=True), allow_nan=False)


def _cut(res, field, rows):
    """``res`` with the first (or every) array of ``field`` cut to ``rows`` rows."""
    import dataclasses  # noqa: PLC0415

    value = getattr(res, field)
    value = [value[0][:rows]] + list(value[1:]) if isinstance(value, list) else value[:rows]
    return dataclasses.replace(res, **{field: value})


@pytest.mark.parametrize("name,field", [(name, field) for name in SOLVERS
                                        for field in cases(name).CUT_FIELDS])
def test_a_saved_result_with_a_cut_array_is_refused(name, field, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _solve(name, 30, False)
    _cut(res, field, 1).save(tmp_path / "cut.npz")
    with pytest.raises(InvalidFileError, match=field):
        fastmv.Result.load(tmp_path / "cut.npz")
