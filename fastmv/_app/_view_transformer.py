"""``ViewTransformer``: a scikit-learn transformer applied to each view (a ``Pipeline`` step).

Re-exported by :mod:`fastmv.estimators`, where users import it.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..exceptions import InvalidParameterError, _not_fitted_error
from ._estimator_docs import sections
from ._inputs import as_frame, check_feature_names, is_frame, record_features, split_views
from ._params import BaseEstimator

# the parameter entries and the result of the methods
_VIEWS = ("Xs : list of array-like, or 2-D array-like with ``view_sizes``", "The views.")
_Y = ("y : None", "Passed to each transformer's ``fit``.")
_TRANSFORMED = ("list", "One transformed array per view.")


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

    @sections([_VIEWS, _Y], ("self", "The fitted transformer."))
    def fit(self, Xs: Any, y: Any = None) -> ViewTransformer:
        """Fit one clone of ``base_transformer`` per view."""
        views = split_views(Xs, self.view_sizes)
        self.transformers_ = [self._clone().fit(V, y) for V in views]
        record_features(self, Xs, views)
        return self

    @sections([_VIEWS], _TRANSFORMED)
    def transform(self, Xs: Any) -> list:
        """The transformed views."""
        if not hasattr(self, "transformers_"):
            raise _not_fitted_error("this ViewTransformer is not fitted yet: call fit first")
        check_feature_names(self, Xs)
        views = split_views(Xs, self.view_sizes)
        if len(views) != len(self.transformers_):
            raise InvalidParameterError(f"Xs has {len(views)} views; the transformer was "
                                        f"fitted on {len(self.transformers_)}")
        out = [t.transform(V) for t, V in zip(self.transformers_, views)]
        if self._pandas_output():
            out = [W if is_frame(W) else as_frame(np.asarray(W), view_names(t, v, W), V)
                   for v, (t, W, V) in enumerate(zip(self.transformers_, out, views))]
        return out

    @sections([_VIEWS, _Y], _TRANSFORMED)
    def fit_transform(self, Xs: Any, y: Any = None) -> list:
        """``fit(Xs, y).transform(Xs)``."""
        return self.fit(Xs, y).transform(Xs)

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags, TransformerTags  # noqa: PLC0415

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(), no_validation=True)


def view_names(transformer, v, W):
    """Column names of view ``v``'s transformed block: the transformer's own when it has
    them, else ``view<v>_<j>``."""
    names = getattr(transformer, "get_feature_names_out", None)
    if callable(names):
        try:
            out = list(names())
            if len(out) == np.shape(W)[1]:
                return out
        except Exception:  # noqa: BLE001 (a transformer fitted without names)
            pass
    return [f"view{v}_{j}" for j in range(np.shape(W)[1])]
