"""What a user sees while and after a solve: the start record, progress, and warnings that
name their cause (unsupervised MVFL, labels without pairs, empty clusters)."""
import functools
import io
import logging
import sys
import time
import warnings

import numpy as np
import pytest

import fastmv
from fastmv import simulate
from fastmv._app import _cli
from fastmv._core._driver import feedback, iterate
from fastmv.exceptions import DegenerateSolutionWarning, InvalidParameterError
from tests.solvers import cases, declaring


def _blobs(n=60, c=3, dims=(5, 4), seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    views = [np.eye(c)[y] @ rng.normal(size=(c, d)) * 3 + rng.normal(size=(n, d)) * 0.3
             for d in dims]
    return views, y


def _no_tqdm(monkeypatch):
    # an import of a name set to None in sys.modules raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


def _fastmv_records(caplog, level=logging.INFO):
    return [r for r in caplog.records if r.name == "fastmv" and r.levelno == level]


class _Slow:
    """A problem whose steps take ``pause`` seconds; the objective halves each step."""

    def __init__(self, pause):
        self.pause, self.f = pause, 1.0

    def step(self):
        time.sleep(self.pause)
        self.f /= 2
        return self.f


# --------------------------------------------------------------------------- start record
def test_a_solver_call_logs_one_info_record_at_its_start(caplog):
    views, y = _blobs()
    known = simulate.partial_labels(y, 0.3, random_state=0)
    with caplog.at_level(logging.INFO, logger="fastmv"):
        fastmv.mvfl(views, 3, labels=known, random_state=0)
    records = _fastmv_records(caplog)
    assert len(records) == 1
    text = records[0].getMessage()
    assert text.startswith("mvfl: 60 samples, 2 views (5+4 columns), 3 clusters: ")
    assert "at most 100 iterations" in text


def test_nested_public_calls_log_nothing_more(caplog):
    views, y = _blobs()
    ml, cl = simulate.pairwise_constraints(y, 100, random_state=0)
    with caplog.at_level(logging.INFO, logger="fastmv"):
        fastmv.mvmc(views, 3, ml, cl, k=3, random_state=0)  # k-means and more inside
        fastmv.kmeans(views[0], 3, random_state=0)          # not a solver: no record
    texts = [r.getMessage() for r in _fastmv_records(caplog)]
    assert len(texts) == 1 and texts[0].startswith("mvmc: 60 samples")


def test_the_python_api_prints_nothing_by_default(capsys):
    views, y = _blobs()
    fastmv.opimc(views, 3, random_state=0)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


# ------------------------------------------------------------------------------ progress
def test_progress_without_tqdm_says_so_once_per_call(monkeypatch):
    _no_tqdm(monkeypatch)
    views, y = _blobs()
    known = simulate.partial_labels(y, 0.3, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastmv.mvfl(views, 3, labels=known, init="k-means++", n_init=3, progress=True,
                    random_state=0)  # three starts, three loops: one warning
    told = [w for w in caught if "tqdm" in str(w.message)]
    assert len(told) == 1
    assert issubclass(told[0].category, UserWarning)
    assert "pip install tqdm" in str(told[0].message)
    assert told[0].filename == __file__   # points at the user's call


def test_progress_false_without_tqdm_is_silent(monkeypatch):
    _no_tqdm(monkeypatch)
    views, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastmv.opimc(views, 3, random_state=0)


def test_feedback_without_tqdm_prints_plain_lines(monkeypatch):
    _no_tqdm(monkeypatch)
    out = io.StringIO()
    with feedback(out, delay=0.0, interval=0.0):
        iterate(_Slow(0.01), solver="toy", max_iter=4, tol=0.0, warn=False)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("toy: iteration 1/4, ")
    assert "left at this pace" in lines[0]
    assert lines[-1].startswith("toy: iteration 4/4, ")


def test_feedback_shows_nothing_for_short_work(monkeypatch):
    _no_tqdm(monkeypatch)
    out = io.StringIO()
    views, y = _blobs()
    with feedback(out, delay=30.0):
        fastmv.opimc(views, 3, random_state=0)
        iterate(_Slow(0.0), solver="toy", max_iter=3, tol=0.0, warn=False)
    assert out.getvalue() == ""


def test_feedback_says_what_a_long_call_is_doing(monkeypatch):
    _no_tqdm(monkeypatch)
    out = io.StringIO()
    views, y = _blobs()
    known = simulate.partial_labels(y, 0.3, random_state=0)
    with feedback(out, delay=0.0, interval=0.0), warnings.catch_warnings():
        warnings.simplefilter("ignore", fastmv.ConvergenceWarning)
        fastmv.mvfl(views, 3, labels=known, max_iter=3, random_state=0)
    # written by a timer thread, or by the call itself when that thread had not run yet
    lines = out.getvalue().splitlines()
    assert any(ln.startswith("mvfl: 60 samples, 2 views") and ln.endswith("\u2026")
               for ln in lines)
    assert any(ln.startswith("mvfl: iteration 1/3") for ln in lines)


def test_cli_run_shows_progress_by_default(monkeypatch, tmp_path, capsys):
    import scipy.io

    _no_tqdm(monkeypatch)
    monkeypatch.setattr(_cli, "feedback", functools.partial(feedback, delay=0.0, interval=0.0))
    views, y = _blobs(n=90)
    X = np.empty((1, 2), dtype=object)
    X[0, 0], X[0, 1] = views
    path = tmp_path / "d.mat"
    scipy.io.savemat(path, {"X": X, "y": y[:, None]})
    assert _cli.main(["run", "emvc", "--data", str(path), "--max_iter", "5",
                      "--out", str(tmp_path / "labels")]) == 0
    err = capsys.readouterr().err
    assert "emvc: 90 samples, 2 views, each 90\u00d790, 3 clusters" in err
    assert "emvc: iteration 1/5" in err


# ----------------------------------------------------------------- supervision warnings
def test_unsupervised_mvfl_warns_and_names_what_to_do():
    views, y = _blobs()
    with pytest.warns(UserWarning, match="no labels and no pairs") as record:
        fastmv.mvfl(views, 3, random_state=0)
    text = str(record[0].message)
    assert "k-means" in text and "labels=" in text and "must_link" in text
    assert record[0].filename == __file__


def test_mvfl_with_only_unknown_labels_warns():
    views, y = _blobs()
    with pytest.warns(UserWarning, match="no known label"):
        fastmv.mvfl(views, 3, labels=np.full(y.size, -1), random_state=0)


@pytest.mark.parametrize("side", ["labels", "pairs"])
def test_supervised_mvfl_does_not_warn_about_supervision(side):
    views, y = _blobs()
    known = simulate.partial_labels(y, 0.3, random_state=0)
    kwargs = ({"labels": known} if side == "labels" else
              dict(zip(("must_link", "cannot_link"), simulate.pairs_from_labels(known))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastmv.mvfl(views, 3, random_state=0, **kwargs)
    assert not [w for w in caught if "unsupervised" in str(w.message)]


def test_mvmc_estimator_with_labels_uses_their_pairs_and_explains_no_pairs():
    views, y = _blobs()
    known = simulate.partial_labels(y, 0.3, random_state=0)
    model = fastmv.MVMC(3, k=3, random_state=0).fit(views, labels=known)
    assert fastmv.metrics.accuracy(y, model.labels_) > 0.9
    for labels in (np.full(y.size, -1), np.r_[0, [-1] * (y.size - 1)]):
        with pytest.raises(InvalidParameterError, match="pairs_from_labels") as info:
            fastmv.MVMC(3, k=3).fit(views, labels=labels)
        assert "must_link and cannot_link are both empty" not in str(info.value)
        assert "at least two known labels" in str(info.value)


# ------------------------------------------------------------------------ empty clusters
def test_opimc_empty_clusters_name_duplicate_rows_when_that_is_the_cause():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(2, 4))
    views = [np.repeat(base, 20, axis=0)]   # two distinct samples, five clusters asked
    with pytest.warns(DegenerateSolutionWarning, match="only 2 distinct samples"):
        fastmv.opimc(views, 5, random_state=0)


def test_opimc_prep_cause_without_duplicates_names_missing_groups():
    from fastmv._opimc import _solver

    views, _ = _blobs()
    prep = _solver._prepare(views, 10, None, 1000, 1, "k-means++", "l2", 0)
    text = _solver._degenerate_cause(prep)
    assert "60 distinct samples" in text
    assert "fewer separate groups" in text and "shuffle=True" in text
    assert "fewer distinct rows" not in text


def test_estimator_fitted_with_y_lacking_classes_names_the_fold():
    views, y = _blobs(n=60, c=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastmv.OPIMC(6, random_state=0).fit(views, y)
    texts = [str(w.message) for w in caught]
    notes = [t for t in texts if "holds only 3 classes" in t]
    assert len(notes) == 1, texts
    assert "shuffle=True" in notes[0]
    # the solver's own degenerate warning is folded into that one message
    assert not [t for t in texts if "distinct samples" in t or "fewer distinct" in t]
    # y with as many classes as clusters: nothing said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastmv.OPIMC(3, random_state=0).fit(views, y)
    assert not [w for w in caught if "classes" in str(w.message)]


@pytest.mark.slow
def test_grid_search_on_class_sorted_folds_names_the_missing_classes():
    sklearn = pytest.importorskip("sklearn.model_selection")
    views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
    order = np.argsort(y, kind="stable")
    X, y = np.hstack(views)[order], y[order]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sklearn.cross_val_score(fastmv.OPIMC(10, random_state=0), X, y, cv=3,
                                scoring="adjusted_rand_score",
                                params={"view_sizes": [V.shape[1] for V in views]})
    texts = [str(w.message) for w in caught]
    assert texts and all("classes, fewer than n_clusters=10" in t for t in texts), texts


class _RecordedBar:
    """A stand-in for tqdm that records the label and the count of every bar opened."""

    opened: list = []

    def __init__(self, total=None, desc="", **kwargs):
        self.desc, self.total, self.n = desc, total, 0
        _RecordedBar.opened.append(self)

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, text):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.mark.parametrize("solver", declaring("several_starts"))
def test_each_start_s_progress_bar_names_its_start(monkeypatch, solver):
    """Each start's bar counts from 0 again: its label says which start it is; one start's
    bar is the solver's name alone. (The solvers of several starts declare
    ``several_starts`` in tests/<solver>/cases.py.)"""
    from fastmv._core import _progress

    monkeypatch.setattr(_progress, "_tqdm", lambda: _RecordedBar)
    monkeypatch.setattr(_RecordedBar, "opened", [])
    views, y = _blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases(solver).several_starts(views, y, 3)
    bars = _RecordedBar.opened
    assert [b.desc for b in bars] == [f"{solver} start {s}/3" for s in (1, 2, 3)]
    assert all(0 < b.n <= b.total == 4 for b in bars)
    monkeypatch.setattr(_RecordedBar, "opened", [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases(solver).several_starts(views, y, 1)
    assert [b.desc for b in _RecordedBar.opened] == [solver]
