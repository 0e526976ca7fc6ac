"""fastmv's estimators as a drop-in for the tools people already use.

- imml's OPIMC test cases (default parameters, invalid parameters, ``fit_predict``, views
  amputed with NaN rows), restated against ``fastmv.OPIMC`` and run for every estimator that
  takes aligned views: a list of pandas DataFrames or of arrays, ``labels`` and ``embedding_``
  read as imml reads them.
- mvlearn's usage pattern (a list of views; ``fit``, ``labels_``, ``predict`` on new samples,
  ``fit_predict``; ``Pipeline`` steps per view).
- scikit-learn: ``GridSearchCV(cv=3)`` gives finite scores for every estimator, with the
  default ``score`` and with a supervised scorer through ``predict``.

The restated cases need only fastmv and pandas and always run; a last check runs the same
data through imml / mvlearn themselves when they are importable.
"""
import warnings

import numpy as np
import pytest

import fastmv
from fastmv._core._spec import solver_specs
from fastmv.estimators import EMVC, MVFL, OPIMC, ViewTransformer
from tests.solvers import case, cases, declaring

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: every solver's estimator, and its name in the registry
ALIGNED = [getattr(fastmv, spec.estimator) for spec in solver_specs().values()]
_SOLVER = {getattr(fastmv, spec.estimator): name for name, spec in solver_specs().items()}


def _fit_kwargs(cls, n):
    """What each estimator needs besides the views (pairs for one that needs them:
    ``estimator_pairs`` of tests/<solver>/cases.py)."""
    return case(_SOLVER[cls], "estimator_pairs", lambda n: {})(n)


def _side(cls, labels):
    """What the estimator needs besides the views, from partial labels (``estimator_side``)."""
    return case(_SOLVER[cls], "estimator_side", lambda y: {})(labels)


def _views_for(cls, Xs):
    """The views as the estimator takes them: shifted non-negative where it needs that."""
    return [X - X.min() for X in Xs] if case(_SOLVER[cls], "NONNEGATIVE", False) else Xs


def _labels(cls, labels):
    return labels  # CMVNMF too: one label per sample for views of the same samples


def _embedding(cls, model):
    return model.embedding_


@pytest.fixture
def sample_data():
    # imml's fixture: 8 samples, 5 random columns split into views of 2, 2 and 1 columns,
    # once as DataFrames and once as arrays
    X = pd.DataFrame(np.random.default_rng(42).random((8, 5)))
    X1, X2, X3 = X.iloc[:, :2], X.iloc[:, 2:4], X.iloc[:, 4:]
    return [X1, X2, X3], [X1.values, X2.values, X3.values]


def _ampute(Xs, p, seed):
    """A fraction ``p`` of the samples loses one view (its row set to NaN); every sample
    keeps at least one view (what imml's ``Amputer`` does)."""
    rng = np.random.default_rng(seed)
    n = len(Xs[0])
    frames = isinstance(Xs[0], pd.DataFrame)
    out = [X.copy() for X in Xs]
    for i in rng.choice(n, max(1, int(round(p * n))), replace=False):
        v = int(rng.integers(len(Xs)))
        if frames:
            out[v].iloc[i] = np.nan
        else:
            out[v] = out[v].astype(float)
            out[v][i] = np.nan
    return out


def _check_answer(cls, model, labels, n_samples, n_clusters):
    labels = _labels(cls, labels)
    assert labels is not None
    assert len(labels) == n_samples
    assert min(labels) == 0
    assert not np.isnan(labels).any()
    emb = _embedding(cls, model)
    assert not np.isnan(emb).any()
    assert emb.shape == (n_samples, n_clusters)


# ------------------------------------------------------------------- imml's four cases
@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_default_params(cls, sample_data):
    for Xs in sample_data:
        model = cls(random_state=42)
        n_samples = len(Xs[0])
        labels = model.fit_predict(Xs, **_fit_kwargs(cls, n_samples))
        _check_answer(cls, model, labels, n_samples, model.n_clusters)


@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_invalid_params(cls, sample_data):
    # imml raises in the constructor; fastmv, like scikit-learn, stores the parameters
    # unchanged and validates them in fit, with a ValueError subclass naming the parameter
    Xs = sample_data[0]
    for bad in ("invalid", 0):
        with pytest.raises(ValueError, match="n_clusters"):
            cls(n_clusters=bad).fit(Xs, **_fit_kwargs(cls, len(Xs[0])))


@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_fit_predict(cls, sample_data):
    n_clusters = 3
    for Xs in sample_data:
        model = cls(n_clusters=n_clusters, random_state=42)
        n_samples = len(Xs[0])
        labels = model.fit_predict(Xs, **_fit_kwargs(cls, n_samples))
        _check_answer(cls, model, labels, n_samples, n_clusters)


@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_missing_values_handling(cls, sample_data):
    n_clusters = 2
    for Xs in sample_data:
        model = cls(n_clusters=n_clusters, random_state=42)
        Xs = _ampute(Xs, 0.3, seed=42)
        n_samples = len(Xs[0])
        assert any(np.isnan(np.asarray(X, dtype=float)).all(axis=1).any() for X in Xs)
        labels = model.fit_predict(Xs, **_fit_kwargs(cls, n_samples))
        _check_answer(cls, model, labels, n_samples, n_clusters)


def test_nan_rows_are_missing_samples_for_opimc():
    """OPIMC reads an all-NaN row as the sample's absence: the same labels as the mask."""
    views, _ = fastmv.datasets.load_handwritten(["fou", "zer"])
    views = [V[:200] for V in views]
    mask = fastmv.simulate.incomplete_mask(200, 2, 0.3, random_state=0)
    with_nan = [np.where(mask[:, [v]], V, np.nan) for v, V in enumerate(views)]
    a = OPIMC(10, random_state=0).fit(views, mask=mask)
    b = OPIMC(10, random_state=0).fit([pd.DataFrame(V) for V in with_nan])
    np.testing.assert_array_equal(a.labels_, b.labels_)
    # the centres ignore the missing rows: predict on the amputed views gives finite
    # distances and the fitted labels for most samples
    D = b.transform(with_nan)
    assert np.isfinite(D).all()
    assert np.mean(b.predict(with_nan) == b.labels_) > 0.8


def test_emvc_traps_are_gone():
    Xs = [pd.DataFrame(np.random.default_rng(0).random((20, 3))) for _ in range(2)]
    model = EMVC(3)
    assert model.n_clusters == 3 and model.lam1 == 0.01  # n_clusters first
    labels = EMVC(random_state=0).fit_predict(Xs)  # DataFrames, default c
    assert labels is not None and labels.shape == (20,)
    with pytest.raises(ValueError, match="n_clusters"):
        EMVC(n_clusters=None).fit(Xs)


# ------------------------------------------------------------ mvlearn's usage pattern
def _two_views(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    centres = [rng.normal(size=(3, d)) * 3 for d in (5, 8)]
    return [C[y] + rng.normal(size=(n, C.shape[1])) for C in centres], y


@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_mvlearn_pattern_fit_then_predict_new_samples(cls):
    """``m = Estimator(n_clusters); m.fit(Xs_train); m.predict(Xs_test)``; ``fit_predict``;
    ``labels_`` (mvlearn's MultiviewKMeans / MultiviewSphericalKMeans usage)."""
    Xs, y = _two_views()
    Xs = _views_for(cls, Xs)
    train, test = np.arange(0, 120, 2), np.arange(1, 120, 2)
    kw = _side(cls, np.where(np.arange(60) < 15, y[train], -1))
    m = cls(3, random_state=0).fit([X[train] for X in Xs], **kw)
    assert m.labels_ is not None
    pred = m.predict([X[test] for X in Xs])
    assert pred.shape == (60,) and pred.dtype == np.int64
    # nearest learned cluster: three well separated blobs are recovered on unseen samples
    assert fastmv.metrics.ari(y[test], pred) > 0.9
    np.testing.assert_array_equal(m.predict([X[train] for X in Xs]),
                                  _labels(cls, m.labels_))
    D = m.transform([X[test] for X in Xs])
    assert D.shape == (60, 3) and np.all(D >= 0)
    assert np.isfinite(m.score([X[test] for X in Xs]))


def test_predict_errors_name_the_problem():
    Xs, _ = _two_views()
    with pytest.raises(fastmv.exceptions.NotFittedError, match="not fitted"):
        OPIMC(3).predict(Xs)
    m = OPIMC(3, random_state=0).fit(Xs)
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="views"):
        m.predict(Xs[:1])
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match=r"Xs\[1\]"):
        m.predict([Xs[0], Xs[1][:, :3]])
    P = fastmv.transition_matrix(Xs[0])
    e = EMVC(3, max_iter=5, affinity="precomputed").fit([P, P])
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="affinity"):
        e.predict(Xs)


def test_pipeline_steps_per_view():
    """A scikit-learn transformer per view before the clustering, on a list of views and on
    one 2-D array with ``view_sizes`` (the form ``GridSearchCV`` can index)."""
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    Xs, y = _two_views()
    pipe = make_pipeline(ViewTransformer(StandardScaler()), OPIMC(3, random_state=0))
    assert fastmv.metrics.ari(y, pipe.fit(Xs).predict(Xs)) > 0.9
    X = np.hstack(Xs)
    pipe = make_pipeline(ViewTransformer(PCA(3), view_sizes=[5, 8]), MVFL(3, random_state=0))
    labels = pipe.fit(X).predict(X)
    assert fastmv.metrics.ari(y, labels) > 0.9
    assert [t.n_components_ for t in pipe[0].transformers_] == [3, 3]


# --------------------------------------------------------------- scikit-learn's tools
@pytest.mark.parametrize("cls", ALIGNED, ids=lambda c: c.__name__)
def test_grid_search_cv3_gives_finite_scores(cls):
    from sklearn.model_selection import GridSearchCV

    Xs, y = _two_views(n=90)
    X = np.hstack(_views_for(cls, Xs))
    # pairs as one partial label per sample, split with the samples
    fit = {"view_sizes": [5, 8],
           **_side(cls, fastmv.simulate.partial_labels(y, 0.3, random_state=0))}
    grid = {"max_iter": [5, 20]}
    for scoring in (None, "adjusted_rand_score"):
        search = GridSearchCV(cls(3, random_state=0), grid, cv=3, scoring=scoring,
                              error_score="raise").fit(X, y, **fit)
        scores = search.cv_results_["mean_test_score"]
        assert np.all(np.isfinite(scores)), (scoring, scores)
    assert search.best_score_ > 0.5  # ARI on held-out folds


# ----------------------------------------------------- the peers themselves, if present
def test_same_cases_run_through_imml_when_installed(sample_data):
    imml_cluster = pytest.importorskip("imml.cluster")
    pytest.importorskip("oct2py")
    for Xs in sample_data:
        theirs = imml_cluster.OPIMC(n_clusters=2, random_state=42).fit(Xs)
        ours = OPIMC(n_clusters=2, random_state=42).fit(Xs)
        assert theirs.embedding_.shape == ours.embedding_.shape


def test_mvlearn_pattern_against_mvlearn_when_installed():
    mvcluster = pytest.importorskip("mvlearn.cluster")
    Xs, y = _two_views()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = mvcluster.MultiviewKMeans(n_clusters=3, random_state=0).fit(Xs)
    ours = OPIMC(n_clusters=3, random_state=0).fit(Xs)
    assert theirs.predict(Xs).shape == ours.predict(Xs).shape
    assert fastmv.metrics.ari(theirs.labels_, ours.labels_) > 0.9


# ------------------------------------------------------ warnings point at the user's line
def _trigger_convergence_warning(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, fastmv.exceptions.ConvergenceWarning)]


@pytest.mark.parametrize("name", declaring("no_convergence"))
def test_convergence_warning_points_at_the_callers_line(name):
    spec = solver_specs()[name]
    Xs, _ = _two_views(n=60)
    kw = {"max_iter": 2, "tol": 1e-300, "random_state": 0}
    # the solver's own call that stops at max_iter (tests/<solver>/cases.py)
    views, kw, args, kwargs, fit_kw = cases(name).no_convergence(Xs, kw)
    est = getattr(fastmv, spec.estimator)
    for call in (lambda: spec.function(*args, **kwargs, **kw),
                 lambda: est(3, **kw).fit(views, **fit_kw)):
        caught = _trigger_convergence_warning(call)
        assert caught, name
        assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]


def test_sparse_views_predict_without_densifying():
    sp = pytest.importorskip("scipy.sparse")
    Xs, y = _two_views()
    Xs = [X - X.min() for X in Xs]
    dense = OPIMC(3, random_state=0).fit(Xs)
    sparse = OPIMC(3, random_state=0).fit([sp.csr_matrix(X) for X in Xs])
    # the same partition; k-means++ seeding may number the clusters differently on CSR
    perm = np.zeros(3, dtype=int)
    perm[dense.labels_] = sparse.labels_
    np.testing.assert_array_equal(perm[dense.labels_], sparse.labels_)
    assert np.unique(perm).size == 3
    np.testing.assert_allclose(dense.transform(Xs)[:, np.argsort(perm)],
                               sparse.transform([sp.csr_matrix(X) for X in Xs]))
