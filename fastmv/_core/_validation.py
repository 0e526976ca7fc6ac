"""Input validation shared by every public entry point of fastmv.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, bad
value) with a message that names the offending argument, and never modifies its input: the
returned arrays are new objects whenever a conversion was needed, and callers that write
into an array they received must copy it first (``copy=True``).

The imperative checks of data arguments and the declared-parameter vocabulary must agree,
so they live together. The checks that an input can reach the kernels and memory at all (a
sparse matrix's index structure, a dense copy's size) are in :mod:`fastmv._core._structure`
and re-exported here.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers

import numpy as np
import scipy.sparse as sp

from ..exceptions import InsufficientMemoryError, InvalidParameterError
from ._progress import public_call
from ._structure import PER_ROW_VALUES, check_fits_in_memory, check_sparse_structure, shape_of

__all__ = [
    "Interval",
    "Options",
    "declare_params",
    "validate_params",
    "check_sparse_structure",
    "check_fits_in_memory",
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
    "check_operator_product",
]


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Accepts ``None`` (fresh entropy), an int, a :class:`numpy.random.SeedSequence`, a
    :class:`numpy.random.Generator` (returned as is, so draws advance it) or a legacy
    :class:`numpy.random.RandomState` (used to seed a new Generator).
    """
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise InvalidParameterError(
                f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise InvalidParameterError(
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
        raise InvalidParameterError(f"{name} must be float32 or float64, got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise InvalidParameterError(f"{name} must be float32 or float64, got {dt}")
    return dt.type


def check_n_jobs(n_jobs, name: str = "n_jobs") -> int | None:
    """Validate an ``n_jobs`` value: ``None`` (Numba's default, ``NUMBA_NUM_THREADS``),
    a positive int, or a negative int counting back from the maximum (``-1`` = all)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise InvalidParameterError(f"{name} must be None or a non-zero int, got {n_jobs!r}")
    return int(n_jobs)


def check_scalar(value, name: str, *, low=None, high=None, low_inclusive=True,
                 high_inclusive=True) -> float:
    """Validate a real scalar parameter and return it as a Python float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise InvalidParameterError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise InvalidParameterError(f"{name} must be {op} {low}, got {value}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise InvalidParameterError(f"{name} must be {op} {high}, got {value}")
    return value


def check_int(value, name: str, *, low=None, high=None) -> int:
    """Validate an integer parameter (NumPy integers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameterError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if low is not None and value < low:
        raise InvalidParameterError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise InvalidParameterError(f"{name} must be <= {high}, got {value}")
    return value


def check_n_clusters(n_clusters, n_samples: int, name: str = "n_clusters") -> int:
    """``1 <= n_clusters <= n_samples``."""
    n_clusters = check_int(n_clusters, name, low=1)
    if n_clusters > n_samples:
        raise InvalidParameterError(
            f"{name}={n_clusters} exceeds the number of samples ({n_samples})")
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
            raise InvalidParameterError(
                f"{name} must be a dense array; scipy.sparse is not supported here")
        if X.ndim != 2:
            raise InvalidParameterError(f"{name} must be 2-D, got {X.ndim}-D")
        # every solver keeps a few dense arrays of one value per row (labels, degrees, ...)
        check_fits_in_memory((X.shape[0], PER_ROW_VALUES), 8, name,
                             what=f"the per-row arrays of its {X.shape[0]} rows")
        target = dtype if dtype is not None else (
            np.float32 if X.dtype == np.float32 else np.float64)
        Xc = check_sparse_structure(X, name, dtype=target, copy=copy)
        data = Xc.data
        bad = ~np.isfinite(data)
        if bad.any():
            raise InvalidParameterError(f"{name} contains NaN or infinite values")
        if nonnegative and data.size and data.min() < 0:
            raise InvalidParameterError(
                f"{name} contains negative values (nonnegative data required)")
        _check_shape(Xc.shape, name, min_rows, min_cols)
        return Xc
    if isinstance(X, (str, bytes)) or X is None:
        raise InvalidParameterError(f"{name} must be an array, got {type(X).__name__}")
    try:
        arr = np.asarray(X)
    except MemoryError:
        raise InvalidParameterError(f"{name} does not fit in memory as an array "
                                    f"(shape {shape_of(X)})") from None
    except Exception as exc:  # a closed h5py file, a failing __array__, ...
        raise InvalidParameterError(f"{name} could not be read as an array "
                                    f"({type(exc).__name__}: {exc})") from exc
    if arr.dtype == object:
        raise InvalidParameterError(f"{name} must be numeric, got an object array")
    if arr.dtype.kind in "mM" or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InvalidParameterError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise InvalidParameterError(f"{name} must be real, got complex values")
    if arr.ndim != ndim:
        raise InvalidParameterError(
            f"{name} must be {ndim}-D, got {arr.ndim}-D with shape {arr.shape}")
    target = dtype if dtype is not None else (np.float32 if arr.dtype == np.float32 else np.float64)
    check_fits_in_memory(arr.shape, np.dtype(target).itemsize, name)
    out = np.ascontiguousarray(arr, dtype=target)
    if copy and np.shares_memory(out, arr):
        out = out.copy()
    if ndim == 2:
        _check_shape(out.shape, name, min_rows, min_cols)
    elif out.size < min_rows:
        raise InvalidParameterError(f"{name} is empty")
    if allow_nan:
        if np.isinf(out).any():
            raise InvalidParameterError(f"{name} contains infinite values")
    elif not np.isfinite(out).all():
        raise InvalidParameterError(f"{name} contains NaN or infinite values")
    if nonnegative and out.size and np.nanmin(out) < 0:
        raise InvalidParameterError(f"{name} contains negative values (nonnegative data required)")
    return out


def _check_shape(shape, name, min_rows, min_cols):
    if shape[0] < min_rows:
        raise InvalidParameterError(f"{name} has {shape[0]} rows; at least {min_rows} required")
    if shape[1] < min_cols:
        raise InvalidParameterError(f"{name} has {shape[1]} columns; at least {min_cols} required")


def check_views(X_list, name: str = "X_list", *, accept_sparse: bool = True, same_n: bool = True,
                nonnegative: bool = False, dtype=None, allow_nan: bool = False,
                min_views: int = 1, copy: bool = False):
    """Validate a list of views, each ``(n, d_v)``; returns a new list of checked arrays.

    Error messages name the view as ``X_list[v]``. With ``same_n`` every view must have the
    same number of rows (samples).
    """
    if sp.issparse(X_list) or isinstance(X_list, np.ndarray) and X_list.ndim == 2:
        raise InvalidParameterError(f"{name} must be a list of views (one 2-D array per view), "
                        "got a single array; wrap it as [X]")
    try:
        views = list(X_list)
    except TypeError as exc:
        raise InvalidParameterError(
            f"{name} must be a list of 2-D arrays, got {type(X_list).__name__}") from exc
    if len(views) < min_views:
        raise InvalidParameterError(
            f"{name} must hold at least {min_views} view(s), got {len(views)}")
    out = [check_array(X, f"{name}[{v}]", accept_sparse=accept_sparse, dtype=dtype,
                       allow_nan=allow_nan, nonnegative=nonnegative, copy=copy)
           for v, X in enumerate(views)]
    if same_n:
        ns = [X.shape[0] for X in out]
        if len(set(ns)) > 1:
            raise InvalidParameterError(
                f"all views in {name} must have the same number of samples (rows); got {ns}")
    return out


def _integer_array(arr, name, what):
    """``arr`` as int64; floats are accepted when they hold whole numbers."""
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InvalidParameterError(f"{name} must hold {what}")
    elif arr.dtype.kind not in "iu":
        raise InvalidParameterError(f"{name} must hold {what}, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _plain(row):
    """A row of indices as a tuple of Python ints, printed ``(3, 4)`` whatever NumPy's repr."""
    return tuple(int(x) for x in row)


def check_pairs(pairs, name: str, n_a: int, n_b: int | None = None, *,
                allow_self: bool | None = None):
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
        raise InvalidParameterError(
            f"{name} must be a (p, 2) integer array of index pairs, got a sparse matrix")
    arr = np.asarray(pairs)
    if arr.size == 0:
        if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[1] != 2):
            raise InvalidParameterError(f"{name} must have shape (p, 2), got {arr.shape}")
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidParameterError(f"{name} must have shape (p, 2), got {arr.shape}")
    arr = _integer_array(arr, name, "integer sample indices")
    for col, bound in ((0, n_a), (1, n_b)):
        bad = np.flatnonzero((arr[:, col] < 0) | (arr[:, col] >= bound))
        if bad.size:
            p = bad[0]
            raise InvalidParameterError(f"{name}[{p}] = {_plain(arr[p])} has an index out of range "
                             f"[0, {bound})")
    if not allow_self:
        bad = np.flatnonzero(arr[:, 0] == arr[:, 1])
        if bad.size:
            p = bad[0]
            raise InvalidParameterError(
                f"{name}[{p}] = {_plain(arr[p])} pairs a sample with itself")
    return arr


def check_partial_labels(labels, n: int, n_clusters: int, name: str = "labels"):
    """Validate partial labels: length ``n``, ints in ``[0, n_clusters)`` or ``-1`` (unknown)."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidParameterError(f"{name} must have shape ({n},), got {arr.shape}")
    arr = _integer_array(arr, name, "integer class ids (-1 for unknown)")
    bad = np.flatnonzero((arr < -1) | (arr >= n_clusters))
    if bad.size:
        raise InvalidParameterError(f"{name}[{bad[0]}] = {arr[bad[0]]} is outside "
                                    f"[0, {n_clusters}) and is not -1 (unknown)")
    return arr


def check_labels(labels, name: str = "labels", n: int | None = None):
    """Validate a full labelling (1-D, any hashable integer-like values); returns ndarray."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise InvalidParameterError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InvalidParameterError(f"{name} must have length {n}, got {arr.shape[0]}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} contains NaN or infinite values")
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
            raise InvalidParameterError(
                f"{name}[{v}] must be square n × n with n = {n}, got {P.shape}")
        if P.min() < 0:
            raise InvalidParameterError(
                f"{name}[{v}] has negative entries; a transition matrix is nonnegative")
        rs = P.sum(axis=1, dtype=np.float64)
        tol = atol if P.dtype == np.float64 else max(atol, 1e-6 * np.sqrt(n))
        r = int(np.argmax(np.abs(rs - 1.0)))
        if abs(rs[r] - 1.0) > tol:
            raise InvalidParameterError(
                f"{name}[{v}] is not row-stochastic: row {r} sums to {rs[r]:.6g}")
    return views


def check_operator_product(values, name: str):
    """Refuse, naming the operator ``name``, a product that holds NaN or infinite entries (a
    :class:`~scipy.sparse.linalg.LinearOperator` is only multiplied, so its values are first
    seen here; an eigensolver given them fails inside LAPACK without a name)."""
    values = np.asarray(values)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1) if bad.ndim == 2 else bad)[0])
        raise InvalidParameterError(
            f"{name} is a LinearOperator whose product with a vector has a NaN or infinite "
            f"entry (row {row}); its matvec / matmat must return finite values")
    return values


# ============================================================================ declared parameters
# Every public function states its parameters' constraints once, as data, with
# :func:`declare_params`; one validator (:func:`validate_params`) checks a call against them.
# A value is valid when it satisfies at least one of the constraints listed for its parameter.
# Deep checks of data arguments (shapes, finiteness, index ranges) stay in each solver's
# ``_prepare_*`` function; the declaration gives their kind ("views", "array-like", ...).


class Interval:
    """Numbers of one kind (``numbers.Integral`` or ``numbers.Real``) in an interval.

    ``closed`` is ``"left"``, ``"right"``, ``"both"`` or ``"neither"``; ``None`` bounds are
    unbounded. Bools are never numbers here; non-finite reals are refused unless a bound
    is ``inf``.
    """

    def __init__(self, kind, low, high, *, closed="both"):
        if kind not in (numbers.Integral, numbers.Real):
            raise ValueError("Interval kind must be numbers.Integral or numbers.Real")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be left/right/both/neither, got {closed!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def is_satisfied_by(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if isinstance(value, numbers.Real) and np.isnan(value):
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        elif self.kind is numbers.Real and value == -np.inf:
            return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        elif self.kind is numbers.Real and value == np.inf:
            return False
        return True

    def __str__(self):
        kind = "an int" if self.kind is numbers.Integral else "a real number"
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"{kind} in the range {left}{low}, {high}{right}"

    __repr__ = __str__


class Options:
    """One of a fixed set of values (strings, ``None``...)."""

    def __init__(self, options):
        self.options = frozenset(options)

    def is_satisfied_by(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)):  # True == 1: match bools by identity only
            return any(o is value for o in self.options)
        try:
            return value in self.options
        except TypeError:  # unhashable, e.g. an array
            return False

    def __str__(self):
        return "one of {" + ", ".join(sorted(repr(o) for o in self.options)) + "}"

    __repr__ = __str__


def _is_array_like(value) -> bool:
    return (isinstance(value, (np.ndarray, list, tuple)) or sp.issparse(value)
            or hasattr(value, "__array__")) and not isinstance(value, (str, bytes))


def _is_views(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        _is_array_like(v) or hasattr(v, "shape") for v in value)


def _is_random_state(value) -> bool:
    if value is None or isinstance(value, (np.random.Generator, np.random.RandomState,
                                           np.random.SeedSequence)):
        return True
    return (isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
            and value >= 0)


def _is_n_jobs(value) -> bool:
    return value is None or (isinstance(value, numbers.Integral)
                             and not isinstance(value, (bool, np.bool_)) and value != 0)


def _is_verbose(value) -> bool:
    return isinstance(value, (bool, np.bool_)) or (
        isinstance(value, numbers.Integral) and value >= 0)


_NAMED = {
    "boolean": (lambda v: isinstance(v, (bool, np.bool_)), "a bool"),
    "verbose": (_is_verbose, "a bool or an int >= 0"),
    "random_state": (_is_random_state, "None, an int >= 0 or a numpy Generator/RandomState"),
    "n_jobs": (_is_n_jobs, "None or a non-zero int"),
    "array-like": (_is_array_like, "an array-like"),
    "sparse matrix": (sp.issparse, "a scipy.sparse matrix"),
    "views": (_is_views, "a non-empty list of 2-D arrays (one per view)"),
    "pairs": (lambda v: _is_array_like(v) or isinstance(v, dict), "a (p, 2) array of index pairs"),
    "mapping": (lambda v: isinstance(v, dict), "a dict"),
    "iterable": (lambda v: hasattr(v, "__iter__") and not isinstance(v, (str, bytes)),
                 "an iterable"),
    "data": (lambda v: True, "data"),
}


def _satisfies(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, str):
        return _NAMED[constraint][0](value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.is_satisfied_by(value)


def _describe_constraint(constraint) -> str:
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if isinstance(constraint, str):
        return _NAMED[constraint][1]
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__}"
    return str(constraint)


def validate_params(constraints: dict, values: dict, caller: str) -> None:
    """Check ``values`` (parameter name → value) against ``constraints``.

    Raises
    ------
    InvalidParameterError
        Naming the first parameter whose value satisfies none of its constraints, the
        function ``caller`` and what is accepted.
    """
    for name, value in values.items():
        allowed = constraints.get(name)
        if allowed is None or "data" in allowed:
            continue
        if any(_satisfies(c, value) for c in allowed):
            continue
        kinds = [_describe_constraint(c) for c in allowed]
        accepted = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
        shown = repr(value)
        if len(shown) > 60:
            shown = f"<{type(value).__name__}>"
        raise InvalidParameterError(
            f"The {name!r} parameter of {caller}() must be {accepted}; got {shown}")


def _largest_input(values) -> str:
    """``name of shape (...)`` of the argument (or view) with the most entries."""
    best, where = -1, "unknown"
    for key, value in values.items():
        items = [(key, value)]
        if isinstance(value, (list, tuple)):
            items = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
        for name, v in items:
            shape = getattr(v, "shape", None)
            try:
                size = math.prod(int(a) for a in shape) if shape is not None else -1
            except (TypeError, ValueError):
                continue
            if size > best:
                best, where = size, f"{name} of shape {tuple(int(a) for a in shape)}"
    return where


def declare_params(constraints: dict):
    """Decorator: declare a public function's parameter constraints and validate every call.

    The declaration must name every parameter of the function (checked when the decorator
    is applied, and again by the test suite); it is kept as ``func.parameter_constraints``.
    Constraints: ``None``, ``callable``, a type (isinstance), :class:`Interval`,
    :class:`Options`, or one of the names ``"boolean"``, ``"verbose"``, ``"random_state"``,
    ``"n_jobs"``, ``"array-like"``, ``"sparse matrix"``, ``"views"``, ``"pairs"``,
    ``"mapping"``, ``"iterable"``, ``"data"`` (no declarative check; validated by the
    function itself).
    """
    def decorate(func):
        sig = inspect.signature(func)
        params = set(sig.parameters) - {"self"}
        declared = set(constraints)
        if declared != params:
            raise InvalidParameterError(
                f"parameter declaration of {func.__qualname__} does not match its "
                f"signature: missing {sorted(params - declared)}, "
                f"extra {sorted(declared - params)}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise InvalidParameterError(f"{func.__name__}(): {exc}") from None
            values = {k: v for k, v in bound.arguments.items() if k != "self"}
            validate_params(constraints, values, func.__name__)
            try:
                with public_call(func, values):
                    return func(*args, **kwargs)
            except InsufficientMemoryError:
                raise  # refused before allocating: its message has the figures
            except MemoryError:
                raise InvalidParameterError(
                    f"{func.__name__}(): out of memory; the largest input is "
                    f"{_largest_input(values)}: too large for this machine") from None

        wrapper.parameter_constraints = constraints
        return wrapper

    return decorate
