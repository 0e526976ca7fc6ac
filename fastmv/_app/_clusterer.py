"""The multi-view clusterer base class the estimators of :mod:`fastmv.estimators` share: fit
(the solver called, its result stored, one centre per cluster and view learned), then predict,
transform and score; the helpers of those centres (unit rows, distances, matched labels)
and of per-view labels (their consensus, the views' fingerprint).
``BaseEstimator`` is in :mod:`fastmv._app._params`, the views' preparation and the feature
names in :mod:`fastmv._app._inputs`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from .._core._driver import caller_stacklevel
from ..exceptions import DegenerateSolutionWarning, InvalidParameterError, _not_fitted_error
from ._estimator_docs import RESULT_BASE, sections
from ._inputs import (
    as_frame,
    check_feature_names,
    check_view_sizes,
    checked_views,
    impute_missing,
    input_attributes,
    missing_rows,
    one_array,
    set_attributes,
    split_views,
)
from ._params import SHARED_BY_REFERENCE, BaseEstimator  # noqa: F401 (re-exported)


def unit_rows(V):
    """Rows scaled to unit L2 norm (zero rows stay zero); sparse stays sparse (CSR)."""
    if sp.issparse(V):
        V = sp.csr_matrix(V, dtype=np.float64)
        norms = np.sqrt(np.asarray(V.multiply(V).sum(axis=1)).ravel())
        return sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ V
    V = np.asarray(V, dtype=np.float64)
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > 0, norms, 1.0)


def sq_distances(U, C):
    """Squared distances between the rows of ``U`` (dense or sparse) and of dense ``C``."""
    sq = np.asarray(U.multiply(U).sum(axis=1)).ravel() if sp.issparse(U) else (U * U).sum(1)
    cross = np.asarray(U @ C.T)
    return np.maximum(sq[:, None] - 2 * cross + (C * C).sum(1)[None, :], 0)


def matched_to(labels, reference, c):
    """``labels`` renumbered to agree most with ``reference`` (same samples)."""
    ok = (labels >= 0) & (reference >= 0)
    table = np.zeros((c, c))
    np.add.at(table, (labels[ok], reference[ok]), 1)
    rows, cols = linear_sum_assignment(-table)
    mapping = np.arange(c)
    mapping[rows] = cols
    return np.where(labels >= 0, mapping[np.maximum(labels, 0)], labels)


def one_hot(labels, c):
    labels = np.asarray(labels)
    out = np.zeros((labels.size, c), dtype=np.float64)
    ok = (labels >= 0) & (labels < c)
    out[np.flatnonzero(ok), labels[ok]] = 1.0
    return out


def consensus_labels(view_labels, c):
    """One label per sample from per-view labels of the same samples: the views' clusters
    renumbered as the first view's, then the most frequent label (ties: the earliest
    view's)."""
    first = np.asarray(view_labels[0])
    aligned = np.stack([first] + [matched_to(np.asarray(lab), first, c)
                                  for lab in view_labels[1:]])
    votes = np.zeros((first.size, c), dtype=np.int64)
    rows = np.arange(first.size)
    for lab in aligned:
        np.add.at(votes, (rows, lab), 1)
    best = votes.max(axis=1)
    # the earliest view whose label has the most votes
    wins = votes[rows[None, :], aligned] == best[None, :]
    return aligned[np.argmax(wins, axis=0), rows].astype(np.int64)


def views_digest(views):
    """A fingerprint of the views' contents (shape, dtype and bytes), so that ``score`` can
    tell the views ``fit`` labelled from new ones."""
    h = hashlib.blake2b(digest_size=16)
    for V in views:
        if sp.issparse(V):
            V = sp.csr_matrix(V)
            parts = (V.data, V.indices, V.indptr)
        else:
            parts = (np.asarray(V),)
        h.update(repr((type(V).__name__, np.shape(V))).encode())
        for a in parts:
            h.update(a.dtype.str.encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _fewer_classes(y, n_clusters, name):
    """The cause to name when the ``y`` handed to ``fit`` (model selection passes it, the
    estimator does not use it) holds fewer classes than ``n_clusters``, else None."""
    if y is None or isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        return None
    try:
        y = np.asarray(y)
        classes = np.unique(y[y >= 0] if y.dtype.kind in "iuf" else y).size
    except (TypeError, ValueError):
        return None
    if y.ndim != 1 or classes == 0 or classes >= n_clusters:
        return None
    return (f"{name}.fit: the y given with these samples holds only {classes} classes, fewer "
            f"than n_clusters={int(n_clusters)}: the samples lack classes, as a "
            "cross-validation fold of data sorted by class does; shuffle the folds "
            "(KFold(n_splits, shuffle=True), or shuffle the data) or lower n_clusters")


def _with_cause(note, func, Xs, params, side):
    """``func(Xs, ...)`` with its degenerate-answer warnings replaced by ``note``, which
    names their cause; other warnings pass through unchanged."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(Xs, **params, **side)
    degenerate = [w for w in caught if issubclass(w.category, DegenerateSolutionWarning)]
    for w in caught:
        if w not in degenerate:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if degenerate:
        first = str(degenerate[0].message).split(";", 1)[0]
        warnings.warn(f"{first}: {note}", DegenerateSolutionWarning,
                      stacklevel=caller_stacklevel())
    else:
        warnings.warn(note, UserWarning, stacklevel=caller_stacklevel())
    return result


UNFITTED = object()


class MultiViewClusterer(BaseEstimator):
    """Shared fit machinery: call the solver with the parameters and the side information,
    store the result's fields as ``<field>_``; then learn one centre per cluster and view
    (the mean of the cluster's present rows scaled to unit L2 norm) for ``predict``,
    ``transform`` and ``score``."""

    _solver = None  # set per estimator class by _estimator_docs.document
    _estimator_type = "clusterer"  # scikit-learn < 1.6 reads this instead of the tags
    # OPIMC takes all-NaN rows as missing samples itself; the others get them mean-imputed
    _native_missing = False

    # scikit-learn's estimator checks that fail, with their reasons (``expected_failed_checks``
    # of sklearn.utils.estimator_checks.check_estimator; tests/test_sklearn_checks.py)
    _sklearn_expected_failed_checks: dict = {}
    # True: fit needs side information, which check_estimator does not give
    _sklearn_needs_side_information = False
    # whether the solver takes sparse views (its spec's ``sparse``; the five solvers do)
    _sparse_views = True

    # scikit-learn's input tags: views may be sparse (where the solver takes them) and negative.
    # NaN is not allowed in scikit-learn's sense (anywhere): only a whole all-NaN row is
    # taken, as a sample missing from the view (see docs/usage.md).
    def __sklearn_tags__(self):
        # Only scikit-learn (>= 1.6) calls this, so importing it here adds no dependency.
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags  # noqa: PLC0415

        return Tags(estimator_type="clusterer", target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(preserves_dtype=["float64"]),
                    input_tags=InputTags(two_d_array=True, sparse=self._sparse_views,
                                         allow_nan=False, pairwise=self._pairwise_input()))

    def _pairwise_input(self):
        """Whether ``fit`` takes (n, n) matrices over the samples (EMVC's precomputed)."""
        return False

    def _views(self, Xs, view_sizes, y=None):
        """The views of ``Xs``; the attributes that describe the input (``view_sizes_``,
        ``n_views_``, ``n_features_in_``, ``feature_names_in_``) are kept aside until the
        solve succeeds (:meth:`_fit` sets them), so that a failed ``fit`` sets nothing."""
        views = checked_views(split_views(Xs, view_sizes), self.n_clusters)
        self._input = {"view_sizes_": None if view_sizes is None
                       else check_view_sizes(view_sizes),
                       "n_views_": len(views), **input_attributes(Xs, views)}
        self._classes_note = _fewer_classes(y, self.n_clusters, type(self).__name__)
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
                Xs = impute_missing(Xs)
        note, self._classes_note = getattr(self, "_classes_note", None), None
        described, self._input = getattr(self, "_input", {}), {}
        if note is None:
            result = func(Xs, **params, **side)
        else:
            result = _with_cause(note, func, Xs, params, side)
        c = int(self.n_clusters)
        labels = result.labels
        embedding = ([one_hot(lab, c) for lab in labels] if isinstance(labels, list)
                     else one_hot(labels, c))
        centres = None if views is False else self._centres(views, side.get("mask"), c, labels)
        # every fitted attribute is set here, after the solve and the centres succeeded
        set_attributes(self, described)
        self.result_ = result
        self.labels_ = labels
        self.objective_ = getattr(result, "objective", None)
        self.n_iter_ = getattr(result, "n_iter", None)
        self.converged_ = getattr(result, "converged", None)
        if dataclasses.is_dataclass(result):
            for f in dataclasses.fields(result):
                if f.name not in RESULT_BASE:
                    setattr(self, f"{f.name}_", getattr(result, f.name))
        self.embedding_ = embedding
        self.centers_ = centres
        return self

    def _centres(self, views, mask, c, labels):
        """Per view, the (c, d_v) mean of each cluster's present unit-norm rows (NaN for a
        cluster with no present row in the view); None when a view is not an in-memory
        array (a stream or a dask array)."""
        if not isinstance(views, list) or not all(
                isinstance(V, np.ndarray) or sp.issparse(V) for V in views):
            return None
        per_view = isinstance(labels, list)
        if per_view and len({V.shape[0] for V in views}) > 1:
            return None  # unmapped views: no sample has a row in every view
        centres = []
        for v, V in enumerate(views):
            lab = np.asarray(labels[v] if per_view else labels)
            if per_view and v > 0:  # number each view's clusters as view 0's
                lab = matched_to(lab, np.asarray(labels[0]), c)
            present = lab >= 0
            V = sp.csr_matrix(V) if sp.issparse(V) else V  # rows of any sparse format
            missing = missing_rows(V)
            if missing is not None:
                present &= ~missing
            if mask is not None:
                present &= np.asarray(mask, dtype=bool)[:, v]
            rows = np.flatnonzero(present)
            U = unit_rows(V[rows])
            C = np.full((c, V.shape[1]), np.nan)
            counts = np.bincount(lab[rows], minlength=c)[:c]
            members = sp.csr_matrix((np.ones(rows.size), (lab[rows], np.arange(rows.size))),
                                    shape=(c, rows.size))
            sums = members @ U
            sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            C[counts > 0] = sums[counts > 0] / counts[counts > 0, None]
            centres.append(C)
        return centres

    @sections([("Xs : list of array-like, or 2-D array-like",
                "New samples, the views as in ``fit`` (a 2-D array with the views side by side\n"
                "when ``fit`` was given ``view_sizes``)."), "view_sizes"],
              ("ndarray of shape (n_samples, n_clusters)",
               "``inf`` for a cluster with no centre in any of the sample's views."),
              """>>> OPIMC(n_clusters=2, random_state=0).fit(Xs).transform(Xs).shape
              (20, 2)""", toy="OPIMC")
    def transform(self, Xs: Any, view_sizes: Sequence[int] | None = None) -> np.ndarray:
        """Distance of new samples to every learned cluster.

        The mean, over the views in which a sample is present (not an all-NaN row), of the
        squared distance between its row scaled to unit L2 norm and each cluster's centre in
        that view (``centers_``), as scikit-learn's ``KMeans.transform`` gives distances.
        """
        centres = self._check_input(Xs)
        Xs = one_array(Xs)
        if centres is None:
            raise InvalidParameterError(
                f"{type(self).__name__} was fitted on input without aligned per-sample "
                "features (transition matrices, a stream, a dask array, or CMVNMF's views of "
                "different lengths): predict, transform and score need in-memory views of "
                "the same samples (EMVC: fit feature views, its default affinity)")
        if view_sizes is None and not isinstance(Xs, (list, tuple)):
            view_sizes = self.view_sizes_
            width = getattr(Xs, "shape", (0, 0))[-1] if view_sizes else None
            if view_sizes and width != sum(view_sizes):
                raise InvalidParameterError(
                    f"Xs: X has {width} features, but {type(self).__name__} is expecting "
                    f"{sum(view_sizes)} features as input (the views side by side, "
                    f"view_sizes={view_sizes})")
        views = split_views(Xs, view_sizes)
        if len(views) != len(centres):
            one = "" if isinstance(Xs, (list, tuple)) or view_sizes else (
                " (a 2-D array without view_sizes is one view: give a list of views, or "
                "fit with view_sizes)")
            raise InvalidParameterError(
                f"Xs has {len(views)} view{'s' * (len(views) != 1)}; the model was fitted on "
                f"{len(centres)} view{'s' * (len(centres) != 1)}{one}")
        n = views[0].shape[0]
        total = np.zeros((n, centres[0].shape[0]))
        count = np.zeros((n, centres[0].shape[0]))
        for v, (V, C) in enumerate(zip(views, centres)):
            where = f"Xs[{v}]" if isinstance(Xs, (list, tuple)) or len(views) > 1 else "Xs"
            if V.ndim != 2 or V.shape[0] != n:
                raise InvalidParameterError(
                    f"{where} must have shape ({n}, {C.shape[1]}) (the fitted view's width), "
                    f"got {V.shape}")
            if V.shape[1] != C.shape[1]:
                raise InvalidParameterError(
                    f"{where}: X has {V.shape[1]} features, but {type(self).__name__} is "
                    f"expecting {C.shape[1]} features as input (the width of view {v} in fit)")
            V = sp.csr_matrix(V) if sp.issparse(V) else V  # rows of any sparse format
            missing = missing_rows(V)
            present = np.ones(n, dtype=bool) if missing is None else ~missing
            U = unit_rows(V[np.flatnonzero(present)])
            if not np.all(np.isfinite(U.data if sp.issparse(U) else U)):
                raise InvalidParameterError(f"{where} contains NaN or infinite values outside "
                                            "all-NaN (missing) rows")
            ok = np.all(np.isfinite(C), axis=1)
            D = np.zeros((U.shape[0], C.shape[0]))
            D[:, ok] = sq_distances(U, C[ok])
            total[present] += D * ok
            count[present] += ok
        nowhere = ~count.any(axis=1)
        if nowhere.any():
            raise InvalidParameterError(f"Xs: sample {int(np.flatnonzero(nowhere)[0])} is "
                                        "missing from every view")
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(count > 0, total / np.maximum(count, 1), np.inf)
        if self._pandas_output():
            return as_frame(out, self.get_feature_names_out(), Xs)
        return out

    def _check_input(self, Xs):
        """The fitted centres, after checking that the estimator is fitted and that the
        feature names of ``Xs`` are those ``fit`` saw."""
        centres = getattr(self, "centers_", UNFITTED)
        if centres is UNFITTED:
            raise _not_fitted_error(f"this {type(self).__name__} is not fitted yet: call fit "
                                   "first")
        check_feature_names(self, Xs)
        return centres

    @sections(["Xs", "y", "fit_params"],
              ("ndarray of shape (n_samples, n_clusters)", "As :meth:`transform`."),
              """>>> OPIMC(n_clusters=2, random_state=0).fit_transform(Xs).shape
              (20, 2)""", toy="OPIMC")
    def fit_transform(self, Xs: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit, then the distance of the samples to every learned cluster (:meth:`transform`
        of the same input)."""
        return self.fit(Xs, y, **fit_params).transform(Xs, fit_params.get("view_sizes"))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of :meth:`transform`'s columns: ``"<estimator>0"``, ``"<estimator>1"``, ...
        (one per cluster, as scikit-learn's ``KMeans``).

        Parameters
        ----------
        input_features : None
            Ignored (the columns are the clusters, not the input's features).

        Returns
        -------
        ndarray of str objects
            One name per cluster.

        Examples
        --------
        >>> from fastmv.estimators import OPIMC
        >>> OPIMC(2).get_feature_names_out().tolist()
        ['opimc0', 'opimc1']
        """
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{k}" for k in range(int(self.n_clusters))], dtype=object)

    @sections(["new Xs", "view_sizes"],
              ("ndarray of int64, shape (n_samples,)",
               "Cluster labels in ``0 .. n_clusters - 1``."),
              """>>> model = OPIMC(n_clusters=2, random_state=0).fit(Xs)
              >>> bool((model.predict(Xs) == model.labels_).all())
              True""", toy="OPIMC")
    def predict(self, Xs: Any, view_sizes: Sequence[int] | None = None) -> np.ndarray:
        """The nearest learned cluster of new samples (the smallest of :meth:`transform`)."""
        return np.argmin(self.transform(Xs, view_sizes), axis=1).astype(np.int64)

    @sections([("Xs : list of array-like, or 2-D array-like", "Samples (see :meth:`transform`)."),
               "y", "view_sizes"], ("float", "``-mean(min(transform(Xs), axis=1))``."),
              """>>> OPIMC(n_clusters=2, random_state=0).fit(Xs).score(Xs) <= 0
              True""", toy="OPIMC")
    def score(self, Xs: Any, y: Any = None, view_sizes: Sequence[int] | None = None) -> float:
        """Minus the mean distance of the samples to their nearest learned cluster.

        Higher is better, as for scikit-learn's ``KMeans.score``; it favours more clusters,
        so to choose ``n_clusters`` score against labels instead (``scoring=
        "adjusted_rand_score"`` in ``GridSearchCV`` calls :meth:`predict`).
        """
        return -float(np.mean(np.min(self.transform(Xs, view_sizes), axis=1)))

    @sections(["Xs", "y", "fit_params"],
              ("ndarray (list of ndarray for CMVNMF on unmapped views)",
               "The cluster labels (``labels_``)."),
              """>>> OPIMC(n_clusters=2, random_state=0).fit_predict(Xs).shape
              (20,)""", toy="OPIMC")
    def fit_predict(self, Xs: Any, y: Any = None, **fit_params: Any) -> Any:
        """Fit and return ``labels_``."""
        return self.fit(Xs, y, **fit_params).labels_
