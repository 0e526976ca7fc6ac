"""The estimators' input (:mod:`fastmv.estimators`): the views as given (a list, one 2-D
array, the views side by side with ``view_sizes``, pandas DataFrames), the samples missing
from a view (all-NaN rows), and the attributes that describe the input (``n_features_in_``,
``feature_names_in_``) with scikit-learn's checks of the feature names.
"""
from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .._core._driver import caller_stacklevel
from ..exceptions import InvalidParameterError


def check_view_sizes(view_sizes):
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


def is_frame(V):
    return hasattr(V, "to_numpy") and hasattr(V, "columns")


def split_views(Xs, view_sizes):
    """The list of views: ``Xs`` itself, one 2-D ``Xs`` as one view, or the column blocks of
    a 2-D ``Xs`` with ``view_sizes``; pandas DataFrames become float arrays (missing values as
    NaN)."""
    if view_sizes is None:
        if _is_rows(Xs):
            return [np.asarray(Xs)]  # one view given as nested lists, a list per sample
        if isinstance(Xs, (list, tuple)):
            return [V.to_numpy(dtype=np.float64, na_value=np.nan) if is_frame(V) else V
                    for V in Xs]
        if is_frame(Xs):
            return [Xs.to_numpy(dtype=np.float64, na_value=np.nan)]
        if not hasattr(Xs, "shape") and hasattr(Xs, "__array__"):
            Xs = np.asarray(Xs)
        shape = getattr(Xs, "shape", None)
        if shape is not None and len(shape) == 2:
            return [Xs]  # one view (an array, a sparse matrix, a dask array)
        got = (f"a {len(shape)}-D {type(Xs).__name__} of shape {tuple(shape)}"
               if shape is not None else type(Xs).__name__)
        if shape is not None and len(shape) == 1:
            raise InvalidParameterError(
                f"Xs: expected a 2-D array (one view) or a list of views, got {got}; Reshape "
                "your data either using X.reshape(-1, 1) if your data has a single feature or "
                "X.reshape(1, -1) if it contains a single sample")
        raise InvalidParameterError(
            f"Xs must be a list of views, one 2-D array (one view), or a 2-D array with "
            f"view_sizes (the views side by side), got {got}")
    sizes = check_view_sizes(view_sizes)
    if is_frame(Xs):
        Xs = Xs.to_numpy(dtype=np.float64, na_value=np.nan)
    X = Xs if sp.issparse(Xs) else np.asarray(Xs)
    if X.ndim != 2:
        raise InvalidParameterError(f"Xs with view_sizes must be a 2-D array (samples × the "
                                    f"views' columns side by side), got a {X.ndim}-D array of "
                                    f"shape {X.shape}")
    if sum(sizes) != X.shape[1]:
        raise InvalidParameterError(f"view_sizes {sizes} must sum to the number of columns of "
                                    f"Xs ({X.shape[-1]})")
    edges = np.cumsum([0] + sizes)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    return [X[:, a:b] for a, b in itertools.pairwise(edges)]


def checked_views(views, n_clusters):
    """The views with object arrays of numbers made float (as scikit-learn converts them),
    after the checks whose messages scikit-learn's conventions fix: complex data, a view
    without features, fewer samples than ``n_clusters``. The solver checks the rest."""
    out = []
    for v, V in enumerate(views):
        if isinstance(V, np.ndarray) and V.dtype == object:
            try:
                V = V.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidParameterError(f"Xs[{v}] must be numeric: an object array with "
                                            f"an entry that is not a number ({exc})") from None
        kind = getattr(getattr(V, "dtype", None), "kind", "")
        if kind == "c":
            raise InvalidParameterError(f"Xs[{v}] must be real, got complex values (Complex "
                                        "data not supported)")
        shape = getattr(V, "shape", ())
        if len(shape) == 2 and shape[1] == 0:
            raise InvalidParameterError(f"Xs[{v}]: Found array with 0 feature(s) (shape="
                                        f"{tuple(shape)}) while a minimum of 1 is required.")
        out.append(V)
    rows = {V.shape[0] for V in out if len(getattr(V, "shape", ())) == 2}
    if (len(rows) == 1 and isinstance(n_clusters, numbers.Integral)
            and not isinstance(n_clusters, bool) and 0 < rows.pop() < n_clusters):
        n = out[0].shape[0]
        raise InvalidParameterError(f"n_clusters={int(n_clusters)} exceeds the number of "
                                    f"samples (n_samples={n})")
    return out


def _is_rows(Xs):
    """Whether ``Xs`` is a 2-D array as nested Python lists (a list of samples, each a list
    of numbers), not a list of views (each view is 2-D)."""
    return (isinstance(Xs, (list, tuple)) and len(Xs) > 0
            and all(isinstance(r, (list, tuple)) and len(r) > 0
                    and all(isinstance(x, numbers.Number) for x in r) for r in Xs))


def one_array(Xs):
    """``Xs`` as an array when it is one 2-D array in another form (nested lists, an object
    with ``__array__`` only), else unchanged."""
    if _is_rows(Xs) or (not isinstance(Xs, (list, tuple)) and not hasattr(Xs, "shape")
                        and hasattr(Xs, "__array__")):
        return np.asarray(Xs)
    return Xs


def missing_rows(V):
    """Rows of a dense view that are all NaN (a sample missing from the view), or None."""
    if sp.issparse(V) or not isinstance(V, np.ndarray) or V.dtype.kind != "f" or V.ndim != 2:
        return None
    nan = np.isnan(V)
    if not nan.any():
        return None
    return nan.all(axis=1)


def impute_missing(Xs):
    """Views with their all-NaN rows (missing samples) replaced by the mean of the view's
    present rows, for the solvers that need complete views. Partial NaN rows are left for
    the solver's validation to refuse."""
    out = []
    for v, V in enumerate(Xs):
        missing = missing_rows(V)
        if missing is None or not missing.any():
            out.append(V)
            continue
        if missing.all():
            raise InvalidParameterError(f"Xs[{v}] has no present sample (every row is NaN)")
        V = V.copy()
        V[missing] = V[~missing].mean(axis=0)
        out.append(V)
    return out


def as_frame(values, columns, like):
    """``values`` as a DataFrame, with the index of ``like`` (or of its first view) when that
    is a DataFrame."""
    import pandas as pd  # noqa: PLC0415 (optional dependency: asked for by set_output)

    first = like[0] if isinstance(like, (list, tuple)) and like else like
    index = first.index if is_frame(first) and len(first.index) == len(values) else None
    return pd.DataFrame(values, columns=list(columns), index=index)


def _feature_names(Xs):
    """The input's feature names, as scikit-learn reads them: the columns of a DataFrame (of
    every view's DataFrame, in order, for a list of views) when all are strings; None for
    arrays, for a list that mixes DataFrames and arrays, and for names that are not strings.
    Names of mixed types (some strings) are refused, as scikit-learn refuses them."""
    frames = [Xs] if is_frame(Xs) else list(Xs) if isinstance(Xs, (list, tuple)) else []
    if not frames or not all(is_frame(F) for F in frames):
        return None
    names = [c for F in frames for c in F.columns]
    strings = [isinstance(c, str) for c in names]
    if names and all(strings):
        return np.asarray(names, dtype=object)
    if any(strings):
        kinds = sorted({type(c).__name__ for c in names})
        raise InvalidParameterError(
            f"Xs: feature names are only supported if all input features have string names, "
            f"but the columns have {kinds} as name types; convert them all to strings (for "
            "example X.columns = X.columns.astype(str)) or to non-strings")
    return None


ABSENT = object()


def input_attributes(Xs, views):
    """``n_features_in_`` (the views' widths added up; absent when not every view is a 2-D
    array) and ``feature_names_in_`` (:func:`_feature_names`; absent without names): the
    attributes ``fit`` sets on success."""
    widths = [V.shape[1] for V in views if len(getattr(V, "shape", ())) == 2]
    names = _feature_names(Xs)
    return {"n_features_in_": int(sum(widths)) if len(widths) == len(views) else ABSENT,
            "feature_names_in_": ABSENT if names is None else names}


def set_attributes(est, attributes):
    """Set ``attributes`` on ``est``; an ``ABSENT`` value removes the attribute (a refit on
    input without it)."""
    for name, value in attributes.items():
        if value is not ABSENT:
            setattr(est, name, value)
        elif hasattr(est, name):
            delattr(est, name)


def record_features(est, Xs, views):
    """``n_features_in_`` and ``feature_names_in_`` of ``Xs`` set on ``est`` (see
    :func:`input_attributes`)."""
    set_attributes(est, input_attributes(Xs, views))


def check_feature_names(est, Xs):
    """Compare the feature names of ``Xs`` with those ``fit`` saw, as scikit-learn's
    ``validate_data(reset=False)`` does: an error for other names or another order, a warning
    when only one of the two had names."""
    fitted = getattr(est, "feature_names_in_", None)
    given = _feature_names(Xs)
    name = type(est).__name__
    if fitted is None and given is None:
        return
    if fitted is None:
        warnings.warn(f"Xs has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=caller_stacklevel())
        return
    if given is None:
        warnings.warn(f"Xs does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=caller_stacklevel())
        return
    if len(fitted) == len(given) and np.all(fitted == given):
        return

    def listed(names, most=5):
        return "".join(f"- {n}\n" for n in names[:most]) + ("- ...\n" if len(names) > most
                                                            else "")

    unseen = sorted(set(given) - set(fitted))
    missing = sorted(set(fitted) - set(given))
    message = "Xs: The feature names should match those that were passed during fit.\n"
    if unseen:
        message += "Feature names unseen at fit time:\n" + listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise InvalidParameterError(message)
