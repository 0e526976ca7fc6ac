"""scikit-learn's conventions: its own ``check_estimator`` on every registered estimator,
feature names and widths checked after ``fit``, and a failed ``fit`` that sets nothing.

The estimators come from the registry (``fastmv.estimators.all_estimators()``). The checks
that fail are declared on each class (``_sklearn_expected_failed_checks``, check name → reason)
and the test asserts that the failed set is exactly the declared one. An estimator whose
``fit`` needs side information that ``check_estimator`` cannot give
(``_sklearn_needs_side_information``: MVMC's pairs) must fail only for that reason, and is
checked as well through a subclass that takes its partial labels from the checks' ``y``.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import fastmv
from fastmv.estimators import OPIMC, ViewTransformer, all_estimators
from fastmv.exceptions import InvalidParameterError, NotFittedError
from tests.solvers import case

sklearn_checks = pytest.importorskip("sklearn.utils.estimator_checks")
pd = pytest.importorskip("pandas")

ESTIMATORS = all_estimators()


def _with_labels_from_y(cls):
    """``cls`` whose ``fit`` takes ``y`` as partial labels when no side information is given
    (a module attribute, so that its instances pickle)."""
    def fit(self, Xs, y=None, **side_information):
        if y is not None and not side_information:  # the classes of y, numbered 0, 1, ...
            side_information = {"labels": np.unique(np.asarray(y), return_inverse=True)[1]}
        return cls.fit(self, Xs, y, **side_information)

    name = f"{cls.__name__}LabelsFromY"
    sub = type(name, (cls,), {"fit": fit, "__module__": __name__, "__qualname__": name})
    globals()[name] = sub
    return sub


def _failed_checks(estimator, declared):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = sklearn_checks.check_estimator(estimator, on_fail=None, on_skip=None,
                                                 expected_failed_checks=declared)
    failed = {r["check_name"]: r["exception"] for r in results if r["status"] == "failed"}
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    return failed, xfailed, passed


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_check_estimator_fails_only_the_declared_checks(name):
    cls = ESTIMATORS[name]
    declared = dict(cls._sklearn_expected_failed_checks)
    assert len(declared) <= 3 and all(reason.strip() for reason in declared.values())
    if cls._sklearn_needs_side_information:
        # every failure is the missing side information, named by the error
        failed, xfailed, passed = _failed_checks(cls(2), None)
        assert failed and passed  # the checks that do not fit pass
        for check, exc in failed.items():
            chain = exc
            while chain is not None and "side information" not in str(chain):
                chain = chain.__cause__ or chain.__context__
            assert chain is not None, (check, exc)
        # the same checks with side information: the conventions hold
        cls = _with_labels_from_y(cls)
    failed, xfailed, passed = _failed_checks(cls(2), declared)
    assert not failed, {k: f"{type(e).__name__}: {e}"[:300] for k, e in failed.items()}
    assert xfailed == set(declared)  # a declared failure that passes is taken out
    assert len(passed) >= 40


def test_tags_tell_the_truth():
    from sklearn.utils import get_tags

    for cls in ESTIMATORS.values():
        tags = get_tags(cls(2))
        assert tags.estimator_type == "clusterer" and not tags.no_validation
        assert tags.input_tags.sparse and tags.input_tags.two_d_array
        assert not tags.input_tags.allow_nan  # a NaN inside a row is refused
        assert tags.transformer_tags is not None
        assert tags.target_tags.required is False


# ------------------------------------------------------------------------ feature names
def _frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = np.hstack([np.eye(2)[y] * 3 + rng.random((n, 2)), rng.random((n, 3))])
    return pd.DataFrame(X, columns=list("abcde")), y


@pytest.mark.parametrize("method", ["predict", "transform", "score"])
def test_feature_names_are_checked_as_scikit_learn_checks_them(method):
    X, y = _frame()
    model = OPIMC(2, random_state=0).fit(X, view_sizes=[2, 3])
    call = getattr(model, method)
    expected = call(X)
    with pytest.raises(InvalidParameterError,
                       match="Xs: The feature names should match.*\n"
                             "Feature names must be in the same order as they were in fit"):
        call(X.iloc[:, ::-1])
    renamed = X.set_axis(list("abcdz"), axis=1)
    with pytest.raises(ValueError, match="unseen at fit time:\n- z\n.*yet now missing:\n- e"):
        call(renamed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(call(X), expected)  # the same names: no warning
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        call(X.to_numpy())
    fitted_on_array = OPIMC(2, random_state=0).fit(X.to_numpy(), view_sizes=[2, 3])
    with pytest.warns(UserWarning, match="fitted without feature names"):
        getattr(fitted_on_array, method)(X)


def test_feature_names_of_a_list_of_views_and_of_cmvnmf_score():
    X, y = _frame()
    views = [X[["a", "b"]], X[["c", "d", "e"]]]
    model = ESTIMATORS["cmvnmf"](2, max_iter=10, random_state=0).fit(views)
    assert model.feature_names_in_.tolist() == list("abcde")
    swapped = [views[0][["b", "a"]], views[1]]
    with pytest.raises(InvalidParameterError, match="same order"):
        model.score(swapped, y)  # the path that reuses fit's per-view labels too
    with pytest.raises(InvalidParameterError, match="same order"):
        model.predict(swapped)
    assert model.score(views, y) == model.score([V.copy() for V in views], y)
    names = pd.DataFrame(np.ones((3, 2)), columns=["a", 1])
    with pytest.raises(InvalidParameterError, match="string names"):
        OPIMC(2).fit(names)


def test_view_transformer_checks_feature_names():
    from sklearn.preprocessing import StandardScaler

    X, y = _frame()
    vt = ViewTransformer(StandardScaler(), view_sizes=[2, 3]).fit(X)
    with pytest.raises(InvalidParameterError, match="same order"):
        vt.transform(X.iloc[:, ::-1])


def test_other_widths_are_refused_naming_the_expected_number():
    X, y = _frame()
    model = OPIMC(2, random_state=0).fit(X.to_numpy())  # one view of 5 features
    with pytest.raises(InvalidParameterError,
                       match="Xs: X has 1 features, but OPIMC is expecting 5 features"):
        model.predict(X.to_numpy()[:, :1])
    wide = OPIMC(2, random_state=0).fit(X.to_numpy(), view_sizes=[2, 3])
    with pytest.raises(InvalidParameterError, match="X has 4 features.*expecting 5"):
        wide.predict(X.to_numpy()[:, :4])
    with pytest.raises(InvalidParameterError, match=r"Xs\[1\]: X has 2 features.*expecting 3"):
        wide.predict([X.to_numpy()[:, :2], X.to_numpy()[:, 2:4]])


# ------------------------------------------------------------------ a failed fit sets nothing
def _fitted_attributes(est):
    return sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("__"))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_failed_fit_sets_no_fitted_attribute(name):
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    from sklearn.utils.validation import check_is_fitted

    X, y = _frame()
    est = ESTIMATORS[name](X.shape[0] + 1)  # more clusters than samples
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        est.fit(X, **case(name, "estimator_side", lambda y: {})(y))
    assert _fitted_attributes(est) == []
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(X)


def test_a_failed_refit_keeps_the_previous_fit_whole():
    X, y = _frame()
    model = OPIMC(2, random_state=0).fit(X, view_sizes=[2, 3])
    before = {k: getattr(model, k) for k in _fitted_attributes(model)}
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        model.set_params(n_clusters=10).fit(np.ones((3, 7)))  # other data, and it fails
    model.set_params(n_clusters=2)
    assert _fitted_attributes(model) == sorted(before)
    assert model.n_features_in_ == 5 and model.view_sizes_ == [2, 3]
    assert model.feature_names_in_.tolist() == list("abcde")
    np.testing.assert_array_equal(model.predict(X), before["labels_"])


def test_not_fitted_error_is_scikit_learns_when_it_is_imported_and_pickles():
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    with pytest.raises(SklearnNotFittedError) as info:
        OPIMC(2).predict(np.ones((3, 2)))
    assert isinstance(info.value, fastmv.exceptions.NotFittedError)
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is type(info.value) and str(back) == str(info.value)
