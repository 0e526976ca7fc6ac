"""scikit-learn style estimators (fastmv.estimators)."""
import inspect

import numpy as np
import pytest

import fastmv
from fastmv import estimators, metrics
from fastmv._app import _estimator_docs
from fastmv._core._spec import solver_specs
from fastmv.estimators import CMVNMF, EMVC, MVFL, MVMC, OPIMC

#: every solver's estimator and function, from the registry
SOLVERS = {getattr(estimators, spec.estimator): spec.function
           for spec in solver_specs().values()}
# small max_iter on purpose: the tests compare labels, not converged answers
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")
DATA_AND_SIDE = {"X_list", "P_list", "must_link", "cannot_link", "labels", "mask"}


def _blobs(n=40, c=2, dims=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    views = [np.abs(rng.random((c, d))[y] * 4 + 0.2 * rng.standard_normal((n, d)))
             for d in dims]
    return views, y


@pytest.mark.parametrize("cls", list(SOLVERS), ids=lambda c: c.__name__)
def test_init_parameters_are_the_solvers_hyper_parameters(cls):
    func = SOLVERS[cls]
    solver = {n: p for n, p in inspect.signature(func).parameters.items()
              if n not in DATA_AND_SIDE}
    own = _estimator_docs.estimator_parameters(func)
    solver.update((n, inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d))
                  for n, (d, _) in own.items())
    init = {n: p for n, p in inspect.signature(cls.__init__).parameters.items() if n != "self"}
    fix = ("; paste this __init__ (and add annotations) into fastmv/estimators.py:\n"
           + _estimator_docs.init_source(func))
    assert set(init) == set(solver), (
        f"{cls.__name__}.__init__ is out of step with fastmv.{func.__name__}: missing "
        f"{sorted(set(solver) - set(init))}, extra {sorted(set(init) - set(solver))}{fix}")
    for name, p in solver.items():
        if name in own:
            assert init[name].default == p.default, f"default of {name}{fix}"
        elif p.default is not inspect.Parameter.empty:
            expected = _estimator_docs.estimator_default(func, name, p.default)
            assert init[name].default == expected, f"default of {name}{fix}"
    # n_clusters first and the only positional parameter, as in scikit-learn
    assert list(init)[0] == "n_clusters"
    assert all(p.kind is p.KEYWORD_ONLY for p in list(init.values())[1:])
    assert all(p.kind is not p.VAR_KEYWORD for p in init.values())


@pytest.mark.parametrize("cls", list(SOLVERS), ids=lambda c: c.__name__)
def test_get_set_params_repr_and_clone(cls):
    from sklearn.base import clone

    est = cls(max_iter=7, random_state=3)
    params = est.get_params()
    assert params["max_iter"] == 7 and params["random_state"] == 3
    assert "max_iter=7" in repr(est) and repr(est).startswith(cls.__name__ + "(")
    twin = clone(est)
    assert twin is not est and twin.get_params() == params
    assert est.set_params(tol=1e-3) is est and est.tol == 1e-3
    with pytest.raises(ValueError, match="invalid parameter 'nope'"):
        est.set_params(nope=1)
    assert repr(cls()) == f"{cls.__name__}()"
    # the class docstring documents every __init__ parameter
    for name in cls._get_param_names():
        assert f"\n{name}" in cls.__doc__ or f", {name}" in cls.__doc__, name


def test_clone_shares_the_executor_and_copies_the_rest():
    from concurrent.futures import ThreadPoolExecutor

    from sklearn.base import clone

    init = np.ones((4, 2))
    with ThreadPoolExecutor(1) as pool:  # holds a lock and a queue: deepcopy would fail
        est = MVMC(n_clusters=2, executor=pool, max_iter=3)
        twin = clone(est)
        assert twin.executor is pool and twin.max_iter == 3
    est = MVFL(init=init)
    twin = clone(est)
    assert twin.init is not init and np.array_equal(twin.init, init)
    assert not hasattr(twin, "labels_")


def test_estimators_give_the_function_labels():
    views, y = _blobs()
    ml, cl = fastmv.simulate.pairwise_constraints(y, 60, random_state=0)
    r = fastmv.mvmc(views, 2, ml, cl, k=3, max_iter=5, random_state=0)
    est = MVMC(n_clusters=2, k=3, max_iter=5, random_state=0).fit(views, must_link=ml,
                                                                 cannot_link=cl)
    np.testing.assert_array_equal(est.labels_, r.labels)
    assert len(est.M_) == 2 and est.n_iter_ == r.n_iter

    lab = fastmv.simulate.partial_labels(y, 0.2, random_state=0)
    r = fastmv.mvfl(views, 2, labels=lab, max_iter=5, random_state=0)
    est = MVFL(n_clusters=2, max_iter=5, random_state=0)
    np.testing.assert_array_equal(est.fit_predict(views, labels=lab), r.labels)
    np.testing.assert_array_equal(est.view_weights_, r.view_weights)

    P = [fastmv.transition_matrix(X) for X in views]  # the README's route
    r = fastmv.emvc(P, 0.01, 0.01, n_clusters=2, max_iter=10, random_state=0)
    est = EMVC(n_clusters=2, max_iter=10, random_state=0)
    np.testing.assert_array_equal(est.fit(views).labels_, r.labels)
    np.testing.assert_allclose(est.P_hat_, r.P_hat)
    est.set_params(affinity="precomputed")
    np.testing.assert_array_equal(est.fit(P).labels_, r.labels)

    ml = {(0, 1): np.array([[0, 0], [1, 1]])}
    r = fastmv.cmvnmf(views, 2, ml, None, max_iter=10, random_state=0)
    est = CMVNMF(n_clusters=2, max_iter=10, random_state=0)
    assert est.fit_predict(views, must_link=ml).shape == (40,)
    for a, b in zip(est.view_labels_, r.labels):
        np.testing.assert_array_equal(a, b)

    mask = fastmv.simulate.incomplete_mask(40, 2, 0.2, random_state=0)
    r = fastmv.opimc(views, 2, mask=mask, chunk_size=10, random_state=0)
    est = OPIMC(n_clusters=2, chunk_size=10, random_state=0).fit(views, mask=mask)
    np.testing.assert_array_equal(est.labels_, r.labels)
    assert len(est.U_) == 2


def test_views_side_by_side_with_view_sizes():
    views, y = _blobs()
    X = np.hstack(views)
    a = OPIMC(n_clusters=2, random_state=0).fit_predict(views)
    b = OPIMC(n_clusters=2, random_state=0).fit_predict(X, view_sizes=[3, 4])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="view_sizes"):
        OPIMC(n_clusters=2).fit(X, view_sizes=[3, 3])
    # without view_sizes, one 2-D array is one view (scikit-learn's X), as a list of rows is
    one = OPIMC(n_clusters=2, random_state=0).fit(X)
    assert one.n_views_ == 1 and one.n_features_in_ == 7
    np.testing.assert_array_equal(one.labels_, OPIMC(n_clusters=2, random_state=0)
                                  .fit_predict([X]))
    np.testing.assert_array_equal(one.labels_, OPIMC(n_clusters=2, random_state=0)
                                  .fit_predict(X.tolist()))
    with pytest.raises(TypeError, match="Reshape your data"):
        OPIMC(n_clusters=2).fit(X[:, 0])


def test_grid_search_over_lam1_lam2_with_an_nmi_scorer():
    from sklearn.model_selection import GridSearchCV

    views, y = _blobs(n=30, dims=(3, 3), seed=1)
    X = np.hstack(views)
    n = y.size
    # transductive: fit on every sample (EMVC sees no labels), score NMI on the held-out labels
    def nmi_scorer(est, X_, y_):
        return metrics.nmi(y_, est.labels_)

    search = GridSearchCV(EMVC(n_clusters=2, max_iter=15, random_state=0),
                          {"lam1": [0.001, 0.01], "lam2": [0.01, 0.1]}, scoring=nmi_scorer,
                          cv=[(np.arange(n), np.arange(n))], refit=True)
    search.fit(X, y, view_sizes=[3, 3])
    assert set(search.best_params_) == {"lam1", "lam2"}
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert 0.0 <= search.best_score_ <= 1.0
    assert search.best_estimator_.labels_.shape == (n,)


def test_estimators_module_lists_every_solver():
    assert set(estimators.ESTIMATORS) == set(solver_specs())


# ------------------------------------------------------------- CMVNMF: one label per sample
def test_cmvnmf_labels_are_one_per_sample_and_score_is_per_view():
    views, y = _blobs(n=60, c=3, dims=(4, 5, 3))
    est = CMVNMF(n_clusters=3, max_iter=30, random_state=0).fit(views)
    r = fastmv.cmvnmf(views, 3, {}, {}, max_iter=30, random_state=0)
    for a, b in zip(est.view_labels_, r.labels):
        np.testing.assert_array_equal(a, b)
    assert est.labels_.shape == (60,)
    assert 0.0 < metrics.accuracy(y, est.labels_) <= 1.0  # 1-D: the metrics take it
    # labels_: the views' majority after numbering each view's clusters as the first's
    aligned = [est.view_labels_[0]] + [estimators.matched_to(lab, est.view_labels_[0], 3)
                                       for lab in est.view_labels_[1:]]
    for i in range(60):
        votes = np.bincount([a[i] for a in aligned], minlength=3)
        assert votes[est.labels_[i]] == votes.max()
        if votes.max() == 1:  # all differ: the first view decides
            assert est.labels_[i] == aligned[0][i]
    per_view = np.mean([metrics.accuracy(y, lab) for lab in est.view_labels_])
    assert est.score(views, y) == pytest.approx(per_view)
    assert est.score(views, y) == metrics.evaluate(y, est.view_labels_)["acc"]
    assert est.score([V.copy() for V in views], [y] * 3) == pytest.approx(per_view)
    # new samples: each view's nearest centre, scored per view
    new = [V[::2] for V in views]
    predicted = est._per_view_predict(new, None)
    assert est.score(new, y[::2]) == pytest.approx(
        np.mean([metrics.accuracy(y[::2], p) for p in predicted]))
    assert est.score(views) <= 0  # without y: the distance score of the other estimators


def test_cmvnmf_unmapped_views_keep_per_view_labels():
    views, y = _blobs(n=60, c=3, dims=(4, 5))
    Xs, ys, _ = fastmv.simulate.unmapped(views, y, keep=0.9, random_state=0)
    # same length, rows permuted per view: the caller says they are not the same samples
    est = CMVNMF(n_clusters=3, max_iter=20, random_state=0).fit(Xs, mapped=False)
    assert isinstance(est.labels_, list) and est.labels_ is est.view_labels_
    assert est.score(Xs, ys) == metrics.evaluate(ys, est.view_labels_)["acc"]
    Xs, ys = [Xs[0], Xs[1][5:]], [ys[0], ys[1][5:]]  # different lengths: unmapped anyway
    est = CMVNMF(n_clusters=3, max_iter=20, random_state=0).fit(Xs)
    assert isinstance(est.labels_, list) and est.labels_ is est.view_labels_
    assert [lab.shape[0] for lab in est.labels_] == [X.shape[0] for X in Xs]
    assert est.score(Xs, ys) == metrics.evaluate(ys, est.view_labels_)["acc"]
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="mapped=True"):
        est.fit(Xs, mapped=True)


# ------------------------------------------------------------------ EMVC: one default
def test_emvc_estimator_default_is_the_readme_call():
    assert EMVC().lam1 == EMVC().lam2 == 0.01 == estimators.EMVC_LAMBDA
    views, y = _blobs(n=60, c=3, dims=(4, 5))
    # the README's function route on the same data and seed
    r = fastmv.emvc([fastmv.transition_matrix(X) for X in views], 0.01, 0.01, n_clusters=3,
                    random_state=0)
    est = EMVC(n_clusters=3, random_state=0).fit(views)  # feature views by default
    np.testing.assert_array_equal(est.labels_, r.labels)
    assert est.n_features_in_ == 9 and est.predict(views).shape == (60,)


def test_emvc_precomputed_takes_transition_matrices_and_refuses_feature_views():
    views, _ = _blobs()
    P = [fastmv.transition_matrix(X) for X in views]
    est = EMVC(n_clusters=2, affinity="precomputed", max_iter=10, random_state=0).fit(P)
    np.testing.assert_array_equal(
        est.labels_, EMVC(n_clusters=2, max_iter=10, random_state=0).fit(views).labels_)
    assert est.centers_ is None and est.n_features_in_ == 80
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="affinity"):
        est.predict(P)
    with pytest.raises(fastmv.exceptions.InvalidParameterError,
                       match=r"Xs\[0\] has shape \(40, 3\), not square.*affinity="):
        EMVC(n_clusters=2, affinity="precomputed").fit(views)
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="affinity must be"):
        EMVC(n_clusters=2, affinity="rbf").fit(views)
    # transition matrices given as feature views (the old default input): said, not silent
    with pytest.warns(UserWarning, match="affinity='precomputed'"):
        EMVC(n_clusters=2, max_iter=5, random_state=0).fit(P)
    assert EMVC(affinity="precomputed").__sklearn_tags__().input_tags.pairwise
    assert not EMVC().__sklearn_tags__().input_tags.pairwise


def test_emvc_fit_transition_keyword_is_deprecated_and_still_works():
    views, _ = _blobs()
    P = [fastmv.transition_matrix(X) for X in views]
    new = EMVC(n_clusters=2, max_iter=10, random_state=0).fit(views).labels_
    with pytest.warns(FutureWarning, match="affinity='transition_matrix'"):
        old = EMVC(n_clusters=2, max_iter=10, random_state=0).fit(views, transition=True)
    np.testing.assert_array_equal(old.labels_, new)
    with pytest.warns(FutureWarning, match="affinity='precomputed'"):
        old = EMVC(n_clusters=2, max_iter=10, random_state=0).fit(P, transition=False)
    np.testing.assert_array_equal(old.labels_, new)
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="contradicts"):
        EMVC(n_clusters=2, affinity="precomputed").fit(views, transition=True)


@pytest.mark.parametrize("bad, match", [
    (np.ones(40), r"Xs\[0\] must be 2-D"),
    (np.ones((40, 3)) + 1j, r"Xs\[0\] must be real"),
    (np.full((40, 3), "a"), r"Xs\[0\] must be numeric"),
    # object arrays of numbers are converted, as scikit-learn converts them
    (np.array([["x", 1.0, 1.0]] + [[1.0] * 3] * 39, dtype=object),
     r"Xs\[0\] must be numeric: .*'x'"),
    (np.ones((40, 3, 2)), r"Xs\[0\] must be 2-D"),
])
def test_emvc_transition_views_are_validated_like_the_other_solvers(bad, match):
    views, _ = _blobs()
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match=match):
        EMVC(n_clusters=2, max_iter=5).fit([bad, views[1]])


@pytest.mark.parametrize("fmt", ["coo", "dia", "bsr", "csc", "lil"])
def test_emvc_transition_takes_every_sparse_format(fmt):
    import scipy.sparse as sp

    views, _ = _blobs()
    dense = EMVC(n_clusters=2, max_iter=10, random_state=0).fit(
        [sp.csr_matrix(V) for V in views])
    given = [sp.csr_matrix(V).asformat(fmt) for V in views]
    before = [V.copy() for V in given]
    est = EMVC(n_clusters=2, max_iter=10, random_state=0).fit(given)
    np.testing.assert_array_equal(est.labels_, dense.labels_)
    for V, V0 in zip(given, before):  # inputs unchanged
        assert V.format == fmt and (V != V0).nnz == 0
# ------------------------------------------------------------------ scikit-learn habits
def _two_views(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    return [np.eye(2)[y] * 3 + rng.random((n, 2)), np.eye(2)[y] @ rng.random((2, 3)) * 3
            + rng.random((n, 3))], y


def test_n_features_in_and_feature_names_in_():
    pd = pytest.importorskip("pandas")
    Xs, y = _two_views()
    model = OPIMC(2, random_state=0).fit(Xs)
    assert model.n_features_in_ == 5
    assert not hasattr(model, "feature_names_in_")
    frames = [pd.DataFrame(Xs[0], columns=["a", "b"]),
              pd.DataFrame(Xs[1], columns=["c", "d", "e"])]
    model.fit(frames)
    assert model.feature_names_in_.tolist() == ["a", "b", "c", "d", "e"]
    wide = pd.concat(frames, axis=1)
    model = OPIMC(2, random_state=0).fit(wide, view_sizes=[2, 3])
    assert model.n_features_in_ == 5 and model.feature_names_in_.tolist() == list("abcde")
    model.fit(Xs)  # refitted on arrays: the names are gone
    assert not hasattr(model, "feature_names_in_")


def test_set_output_pandas_on_transform():
    pd = pytest.importorskip("pandas")
    Xs, y = _two_views()
    index = pd.RangeIndex(100, 140)
    frames = [pd.DataFrame(V, index=index) for V in Xs]
    model = OPIMC(2, random_state=0).set_output(transform="pandas").fit(Xs)
    out = model.transform(frames)
    assert isinstance(out, pd.DataFrame)
    assert out.columns.tolist() == ["opimc0", "opimc1"] and (out.index == index).all()
    np.testing.assert_allclose(out.to_numpy(), model.set_output(transform="default")
                               .transform(Xs))
    assert isinstance(model.transform(Xs), np.ndarray)
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="set_output"):
        model.set_output(transform="arrow")


def test_set_output_survives_clone_and_pipeline():
    pytest.importorskip("pandas")
    sklearn_base = pytest.importorskip("sklearn.base")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fastmv.estimators import ViewTransformer

    Xs, y = _two_views()
    X = np.hstack(Xs)
    clone = sklearn_base.clone(OPIMC(2).set_output(transform="pandas"))
    assert clone._sklearn_output_config == {"transform": "pandas"}
    pipe = make_pipeline(ViewTransformer(StandardScaler(), view_sizes=[2, 3]),
                         OPIMC(2, random_state=0)).set_output(transform="pandas")
    views = pipe[0].fit(X).transform(X)
    assert [v.columns.tolist() for v in views] == [["x0", "x1"], ["x0", "x1", "x2"]]
    assert pipe[0].n_features_in_ == 5
    out = pipe.fit(X).transform(X)
    assert out.columns.tolist() == ["opimc0", "opimc1"]


def test_repr_html():
    html = MVFL(3, lam1=0.01)._repr_html_()
    assert "MVFL" in html and "lam1" in html and html.lstrip().startswith("<")
