"""Input validation shared by every public entry point of fastmv.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, bad
value) with a message that names the offending argument, and never modifies its input: the
returned arrays are new objects whenever a conversion was needed, and callers that write
into an array they received must copy it first (``copy=True``).
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_random_state",
    "check_dtype",
    "check_n_jobs",
    "check_scalar",
    "check_int",
    "check_n_clusters",
    "check_array",
    "check_views",
    "check_pairs",
    "check_partial_labels",
    "check_labels",
    "check_transition_matrices",
]


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Accepts ``None`` (fresh entropy), an int, a :class:`numpy.random.SeedSequence`, a
    :class:`numpy.random.Generator` (returned as is, so draws advance it) or a legacy
    :class:`numpy.random.RandomState` (used to seed a new Generator).
    """
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or RandomState, "
        f"got {type(random_state).__name__}"
    )


def check_dtype(dtype, name: str = "dtype", default=np.float64):
    """Return ``np.float32`` or ``np.float64`` (``None`` gives ``default``)."""
    if dtype is None:
        return np.dtype(default).type
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{name} must be float32 or float64, got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {dt}")
    return dt.type


def check_n_jobs(n_jobs, name: str = "n_jobs") -> int | None:
    """Validate an ``n_jobs`` value: ``None`` (Numba's default, ``NUMBA_NUM_THREADS``),
    a positive int, or a negative int counting back from the maximum (``-1`` = all)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"{name} must be None or a non-zero int, got {n_jobs!r}")
    return int(n_jobs)


def check_scalar(value, name: str, *, low=None, high=None, low_inclusive=True,
                 high_inclusive=True) -> float:
    """Validate a real scalar parameter and return it as a Python float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low}, got {value}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise ValueError(f"{name} must be {op} {high}, got {value}")
    return value


def check_int(value, name: str, *, low=None, high=None) -> int:
    """Validate an integer parameter (NumPy integers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_n_clusters(n_clusters, n_samples: int, name: str = "n_clusters") -> int:
    """``1 <= n_clusters <= n_samples``."""
    n_clusters = check_int(n_clusters, name, low=1)
    if n_clusters > n_samples:
        raise ValueError(f"{name}={n_clusters} exceeds the number of samples ({n_samples})")
    return n_clusters


def check_array(X, name: str, *, accept_sparse: bool = True, dtype=None, ndim: int = 2,
                allow_nan: bool = False, nonnegative: bool = False, copy: bool = False,
                min_rows: int = 1, min_cols: int = 1):
    """Validate one array.

    Dense input becomes a C-contiguous floating ndarray (``dtype``: float64 unless the input
    is already float32 and ``dtype`` is None); sparse input becomes CSR with sorted indices
    (a copy when anything had to change). Raises naming ``name`` on wrong type, dimension,
    emptiness, non-finite values (NaN allowed with ``allow_nan``, inf never) and negative
    entries (with ``nonnegative``).
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(f"{name} must be a dense array; scipy.sparse is not supported here")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
        target = dtype if dtype is not None else (
            np.float32 if X.dtype == np.float32 else np.float64)
        Xc = sp.csr_matrix(X, dtype=target)  # may share buffers with X
        if copy or not Xc.has_sorted_indices:
            Xc = Xc.copy()  # never sort (or later write) the caller's buffers in place
            Xc.sort_indices()
        data = Xc.data
        bad = ~np.isfinite(data)
        if bad.any():
            raise ValueError(f"{name} contains NaN or infinite values")
        if nonnegative and data.size and data.min() < 0:
            raise ValueError(f"{name} contains negative values (nonnegative data required)")
        _check_shape(Xc.shape, name, min_rows, min_cols)
        return Xc
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be an array, got {type(X).__name__}")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object:
        raise TypeError(f"{name} must be numeric, got an object array")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex values")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {arr.ndim}-D with shape {arr.shape}")
    target = dtype if dtype is not None else (np.float32 if arr.dtype == np.float32 else np.float64)
    out = np.ascontiguousarray(arr, dtype=target)
    if copy and np.shares_memory(out, arr):
        out = out.copy()
    if ndim == 2:
        _check_shape(out.shape, name, min_rows, min_cols)
    elif out.size < min_rows:
        raise ValueError(f"{name} is empty")
    if allow_nan:
        if np.isinf(out).any():
            raise ValueError(f"{name} contains infinite values")
    elif not np.isfinite(out).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if nonnegative and out.size and np.nanmin(out) < 0:
        raise ValueError(f"{name} contains negative values (nonnegative data required)")
    return out


def _check_shape(shape, name, min_rows, min_cols):
    if shape[0] < min_rows:
        raise ValueError(f"{name} has {shape[0]} rows; at least {min_rows} required")
    if shape[1] < min_cols:
        raise ValueError(f"{name} has {shape[1]} columns; at least {min_cols} required")


def check_views(X_list, name: str = "X_list", *, accept_sparse: bool = True, same_n: bool = True,
                nonnegative: bool = False, dtype=None, allow_nan: bool = False,
                min_views: int = 1, copy: bool = False):
    """Validate a list of views, each ``(n, d_v)``; returns a new list of checked arrays.

    Error messages name the view as ``X_list[v]``. With ``same_n`` every view must have the
    same number of rows (samples).
    """
    if sp.issparse(X_list) or isinstance(X_list, np.ndarray) and X_list.ndim == 2:
        raise TypeError(f"{name} must be a list of views (one 2-D array per view), "
                        "got a single array; wrap it as [X]")
    try:
        views = list(X_list)
    except TypeError as exc:
        raise TypeError(f"{name} must be a list of 2-D arrays, got {type(X_list).__name__}") from exc
    if len(views) < min_views:
        raise ValueError(f"{name} must hold at least {min_views} view(s), got {len(views)}")
    out = [check_array(X, f"{name}[{v}]", accept_sparse=accept_sparse, dtype=dtype,
                       allow_nan=allow_nan, nonnegative=nonnegative, copy=copy)
           for v, X in enumerate(views)]
    if same_n:
        ns = [X.shape[0] for X in out]
        if len(set(ns)) > 1:
            raise ValueError(f"all views in {name} must have the same number of samples (rows); "
                             f"got {ns}")
    return out


def check_pairs(pairs, name: str, n_a: int, n_b: int | None = None, *, allow_self: bool | None = None):
    """Validate a ``(p, 2)`` array of sample-index pairs; returns an int64 array.

    ``n_a`` bounds the first column and ``n_b`` (default ``n_a``) the second. Self-pairs
    ``(i, i)`` are refused when both columns index the same set (``n_b is None``), unless
    ``allow_self``. ``None`` or an empty sequence gives a ``(0, 2)`` array.
    """
    if n_b is None:
        same = True
        n_b = n_a
    else:
        same = False
    if allow_self is None:
        allow_self = not same
    if pairs is None:
        return np.zeros((0, 2), dtype=np.int64)
    if sp.issparse(pairs):
        raise TypeError(f"{name} must be a (p, 2) integer array of index pairs, got a sparse matrix")
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (p, 2), got {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise TypeError(f"{name} must hold integer sample indices")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer sample indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    for col, bound in ((0, n_a), (1, n_b)):
        bad = np.flatnonzero((arr[:, col] < 0) | (arr[:, col] >= bound))
        if bad.size:
            p = bad[0]
            raise ValueError(f"{name}[{p}] = {tuple(arr[p])} has an index out of range "
                             f"[0, {bound})")
    if not allow_self:
        bad = np.flatnonzero(arr[:, 0] == arr[:, 1])
        if bad.size:
            p = bad[0]
            raise ValueError(f"{name}[{p}] = {tuple(arr[p])} pairs a sample with itself")
    return arr


def check_partial_labels(labels, n: int, n_clusters: int, name: str = "labels"):
    """Validate partial labels: length ``n``, ints in ``[0, n_clusters)`` or ``-1`` (unknown)."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise TypeError(f"{name} must hold integer class ids (-1 for unknown)")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < -1) | (arr >= n_clusters))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {arr[bad[0]]} is outside [0, {n_clusters}) "
                         "and is not -1 (unknown)")
    return arr


def check_labels(labels, name: str = "labels", n: int | None = None):
    """Validate a full labelling (1-D, any hashable integer-like values); returns ndarray."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n}, got {arr.shape[0]}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_transition_matrices(P_list, name: str = "P_list", *, dtype=None, atol: float = 1e-6,
                              min_views: int = 1, copy: bool = True):
    """Validate row-stochastic ``n × n`` matrices (dense); returns C-contiguous arrays.

    Each must be square, finite, nonnegative, with rows summing to 1 within ``atol`` (scaled by
    the row length for float32), and all must share ``n``. With ``copy=False`` a view that
    needs no conversion is returned as is (the caller must not modify it): EMVC copies the
    views straight into one stack, so that its peak memory holds one copy of each.
    """
    views = check_views(P_list, name, accept_sparse=False, dtype=dtype, same_n=False,
                        min_views=min_views, copy=copy)
    n = views[0].shape[0]
    for v, P in enumerate(views):
        if P.shape != (n, n):
            raise ValueError(f"{name}[{v}] must be square n × n with n = {n}, got {P.shape}")
        if P.min() < 0:
            raise ValueError(f"{name}[{v}] has negative entries; a transition matrix is nonnegative")
        rs = P.sum(axis=1, dtype=np.float64)
        tol = atol if P.dtype == np.float64 else max(atol, 1e-6 * np.sqrt(n))
        r = int(np.argmax(np.abs(rs - 1.0)))
        if abs(rs[r] - 1.0) > tol:
            raise ValueError(f"{name}[{v}] is not row-stochastic: row {r} sums to {rs[r]:.6g}")
    return views
