"""Reader for the MATLAB ``.mat`` layouts in which multi-view benchmark data circulates."""
from __future__ import annotations

import numbers
import os
import re
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.io
import scipy.sparse as sp
from numpy.typing import DTypeLike

from .._core._files import check_mat_inflation
from .._core._validation import check_dtype, declare_params
from ..exceptions import InvalidFileError, InvalidParameterError

__all__ = ["load_mat"]

# Label variable names, in order of preference. Matching is exact first, then case-insensitive.
_LABEL_NAMES = ("y", "Y", "gt", "truth", "truelabel", "truelabels", "label", "labels", "gnd")
# Names of a cell array of views, in order of preference (exact, then case-insensitive).
_CELL_NAMES = ("X", "x", "data", "views", "fea")
# Views stored as separate variables: x1, x2, ... (also X1, x_1, X_1).
_SEPARATE_RE = re.compile(r"[xX]_?(\d+)")
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


@declare_params({
    "path": [str, os.PathLike],
    "views": [numbers.Integral, "array-like", None],
    "dtype": ["data"],
    "require_labels": ["boolean"],
    "return_classes": ["boolean"],
})
def load_mat(path: str | os.PathLike, *, views: int | Sequence[int] | None = None,
             dtype: DTypeLike | None = None, require_labels: bool = False,
             return_classes: bool = False) -> tuple:
    """Read a multi-view dataset from a MATLAB ``.mat`` file.

    Accepts the layouts in which multi-view clustering benchmarks are passed around:

    - the views in a cell array ``X`` stored ``1 x V`` or ``V x 1`` (a cell called ``x``,
      ``data``, ``views`` or ``fea`` is also accepted, as is a single cell of any name), or
      in separate variables ``x1, x2, ...`` (also ``X1``, ``x_1``), ordered by their number;
      a single numeric matrix ``X`` is read as a one-view dataset;
    - each view stored samples x features (``n x d_v``) or features x samples: the
      orientation is found by matching the label length ``n``. When a view is square
      (``d_v == n``) the two cannot be told apart and the rows are taken as samples
      (``n x d_v``); transpose such a view yourself if the file stores it the other way;
    - labels in a variable named ``y``, ``Y``, ``gt``, ``truth``, ``truelabel``,
      ``truelabels``, ``label``, ``labels`` or ``gnd`` (exact name preferred, then any
      capitalisation), as a row or column vector, or as a cell of identical per-view vectors.
      Labels are optional: without them ``y`` is None and the orientation of the views is
      found from the sample count they share (rows first); views that share no count are
      read rows-as-samples, as unmapped views (for :func:`fastmv.cmvnmf`);
    - views of any real numeric or logical MATLAB class (``double``, ``single``, ``uint8``,
      ``int32``, ...) and MATLAB sparse matrices.

    Parameters
    ----------
    path : str or os.PathLike
        A MATLAB v4/v5/v7 ``.mat`` file (what :func:`scipy.io.loadmat` reads). Files saved
        with ``-v7.3`` are HDF5 containers, which :func:`scipy.io.loadmat` cannot read; they
        are refused with a message saying how to convert them.
    views : int or sequence of int, optional
        Indices (into the file's view order; negative counts from the end) of the views to
        return, in the order given. Default: all views, in file order.
    dtype : {None, numpy.float64, numpy.float32}, optional
        Floating type of the returned views (default float64).
    require_labels : bool, default False
        Raise ``ValueError`` when the file holds no labels instead of returning ``y=None``.
    return_classes : bool, default False
        Also return ``classes``, the file's own class codes (see Returns).

    Returns
    -------
    views : list of ndarray or scipy.sparse.csr_matrix
        One ``(n, d_v)`` array per selected view. Dense views are C-contiguous arrays of
        ``dtype``; views stored sparse in the file stay sparse, as CSR matrices of ``dtype``
        with sorted indices (word-count data stays cheap).
    y : ndarray of int64, shape (n,), or None
        None when the file holds no labels. Otherwise the labels mapped to ``0 .. c-1`` in
        increasing order of the stored values (``numpy.unique`` inverse): MATLAB's 1-based
        classes ``1..c`` become ``0..c-1``, and any other numeric coding (gaps, negative,
        float-valued) becomes consecutive integers. ``classes[y]`` gives back the stored
        codes.
    classes : ndarray of shape (c,), or None
        Only with ``return_classes=True``: the distinct stored label values in increasing
        order, ``classes[k]`` being the file's code of class ``k`` (e.g. ``1..10`` for
        MATLAB's 1-based classes); None without labels.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not an existing file.
    fastmv.exceptions.InvalidFileError
        (a ``ValueError``) If the file's compressed variables inflate past
        :data:`fastmv._core._files.MAX_INFLATION` times its size (checked before inflating), it
        holds a sparse matrix with indices outside its shape, or the file is a MATLAB v7.3
        (HDF5) file, is not a readable ``.mat`` file (also a
        truncated or header-only one), holds no recognisable views, holds a label variable
        that is not a label vector (or none with ``require_labels``), a view's shape matches
        the label length in neither orientation, or ``views`` selects an index that does not
        exist. Every message names the file and, where relevant, the variables found in it.

    Warns
    -----
    UserWarning
        When some variables of the file cannot be read (a truncated last variable, a MATLAB
        class scipy does not parse) while the views and labels can: the others are read by
        name, as ``scipy.io.loadmat(path, variable_names=[...])`` does, and the skipped
        variables are named.

    Notes
    -----
    Time and memory are those of :func:`scipy.io.loadmat` (the whole file is read) plus one
    conversion copy of each selected view: ``O(sum_v n d_v)`` for dense views and
    ``O(nnz_v)`` for sparse ones.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, scipy.io
    >>> from fastmv.datasets import load_mat
    >>> X = np.empty((1, 2), dtype=object)
    >>> X[0, 0], X[0, 1] = np.ones((4, 3)), np.ones((2, 4))  # the second one transposed
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.mat")
    >>> scipy.io.savemat(path, {"X": X, "y": np.array([[1, 1, 2, 2]])})
    >>> X_list, y = load_mat(path)
    >>> [V.shape for V in X_list], y
    ([(4, 3), (4, 2)], array([0, 0, 1, 1]))
    >>> load_mat(path, return_classes=True)[2]  # the file's codes of classes 0 and 1
    array([1, 2])
    """
    dtype = check_dtype(dtype, "dtype", default=np.float64)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory, not a .mat file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such .mat file: {path!r}")
    _refuse_hdf5(path)
    check_mat_inflation(path)
    contents, failure = _read_variables(path)
    variables = {k: v for k, v in contents.items() if not k.startswith("__")}
    if not variables:
        raise InvalidFileError(f"{path!r} holds no variables: a MATLAB header and nothing after it "
                         "(truncated or empty file?)")

    try:
        y_name, y_raw = _find_labels(variables, path, require_labels)
        view_names, raw_views = _find_views(variables, y_name, path)
    except InvalidFileError:
        if failure is None:
            raise
        raise failure from None  # what was skipped was needed: the file's own failure
    if failure is not None:
        warnings.warn(f"{path!r}: skipped the variable(s) {', '.join(failure.skipped)}, which "
                      f"scipy.io.loadmat cannot read ({_one_line(failure.__cause__)}); the "
                      "others were read by name", UserWarning, stacklevel=3)
    for name, X in zip(view_names, raw_views):
        if 0 in X.shape:
            raise InvalidFileError(f"view {name} in {path!r} is empty (shape "
                                   f"{' x '.join(map(str, X.shape))}): no samples or no features")
    if y_raw is None:
        transpose = _orientation_without_labels(raw_views)
        selected = _select_indices(views, len(raw_views), path)
        out = [_convert(raw_views[v], transpose[v], dtype, path) for v in selected]
        return (out, None, None) if return_classes else (out, None)
    n = y_raw.shape[0]

    transpose = []
    for name, X in zip(view_names, raw_views):
        r, c = X.shape
        if r == n:  # also the square, ambiguous case: rows are samples
            transpose.append(False)
        elif c == n:
            transpose.append(True)
        else:
            raise InvalidFileError(
                f"in {path!r}, view {name} has shape {r} x {c} but the labels {y_name!r} have "
                f"length {n}: neither orientation matches; variables found: "
                f"{_describe(variables)}")

    selected = _select_indices(views, len(raw_views), path)
    out = [_convert(raw_views[v], transpose[v], dtype, path) for v in selected]
    classes, y = np.unique(y_raw, return_inverse=True)
    y = np.ascontiguousarray(y.reshape(-1), dtype=np.int64)
    return (out, y, classes) if return_classes else (out, y)


def _loadmat(path, **kwargs):
    """``scipy.io.loadmat`` with its failures as one clear :class:`InvalidFileError`."""
    try:
        return scipy.io.loadmat(path, appendmat=False, **kwargs)
    except NotImplementedError as exc:  # scipy's answer to a -v7.3 header
        raise InvalidFileError(_v73_message(path)) from exc
    except MemoryError:
        raise InvalidFileError(f"{path!r} declares more data than fits in memory") from None
    except (PermissionError, IsADirectoryError):
        raise
    except Exception as exc:  # corrupt, truncated or foreign file: one clear message
        raise InvalidFileError(f"could not read {path!r} as a MATLAB .mat file (truncated or "
                               f"corrupt?): {type(exc).__name__}: {exc}") from exc


def _read_variables(path):
    """``(variables, failure)``: every variable of the file and None; when scipy cannot read
    them all, those it can read one by one by name (scipy skips the others unparsed) and the
    whole file's error, its ``skipped`` the names left out.

    scipy reads a variable only when asked for it, so one unreadable variable (truncated,
    or of a class scipy does not parse) refuses the whole file to ``loadmat(path)`` while
    ``loadmat(path, variable_names=["X", "y"])`` succeeds."""
    try:
        return _loadmat(path), None
    except InvalidFileError as whole:
        failure = whole
    if "-v7.3" in str(failure) or "fits in memory" in str(failure):
        raise failure
    try:
        names = [entry[0] for entry in scipy.io.whosmat(path, appendmat=False)]
    except Exception:  # not even the variables' headers: the whole-file message stands
        raise failure from None
    contents, skipped = {}, []
    for name in dict.fromkeys(names):
        try:
            part = _loadmat(path, variable_names=[name])
        except InvalidFileError as exc:
            if "-v7.3" in str(exc) or "fits in memory" in str(exc):
                raise
            skipped.append(name)
            continue
        if name not in part:  # scipy found the header but returned nothing
            skipped.append(name)
            continue
        contents.update(part)
    if not skipped or not any(not k.startswith("__") for k in contents):
        raise failure
    failure.skipped = skipped
    return contents, failure


def _one_line(exc):
    return " ".join(f"{type(exc).__name__}: {exc}".split()) if exc is not None else "unknown"


def _v73_message(path):
    return (f"{path!r} is a MATLAB -v7.3 file (an HDF5 container), which scipy.io.loadmat "
            "cannot read. Re-save it from MATLAB/Octave in the v7 format, e.g. "
            "load('file.mat'); save('file_v7.mat', 'X', 'y', '-v7'), or read it with h5py "
            "and pass the arrays directly (note that h5py shows MATLAB matrices transposed)")


def _refuse_hdf5(path):
    """Raise the v7.3 message for files carrying an HDF5 signature or a v7.3 MATLAB header."""
    with open(path, "rb") as fh:
        head = fh.read(520)
    if (head.startswith(_HDF5_SIGNATURE) or head[512:520] == _HDF5_SIGNATURE
            or head.startswith(b"MATLAB 7.3")):
        raise InvalidFileError(_v73_message(path))


def _describe(variables):
    """Short listing ``name (shape class)`` of every variable, for error messages."""
    parts = []
    for k, v in variables.items():
        if sp.issparse(v):
            parts.append(f"{k} ({v.shape[0]}x{v.shape[1]} sparse)")
        elif isinstance(v, np.ndarray):
            shape = "x".join(str(s) for s in v.shape)
            kind = ("cell" if v.dtype == object else "struct" if v.dtype.names
                    else "char" if v.dtype.kind == "U" else str(v.dtype))
            parts.append(f"{k} ({shape} {kind})")
        else:  # pragma: no cover - loadmat only returns arrays
            parts.append(f"{k} ({type(v).__name__})")
    return ", ".join(parts) if parts else "none"


def _ordered_matches(variables, names):
    """Variable names matching ``names``: exact matches in ``names`` order, then
    case-insensitive matches in the same order."""
    found = [k for k in names if k in variables]
    lower = [k.lower() for k in names]
    rest = sorted((k for k in variables if k.lower() in lower and k not in found),
                  key=lambda k: (lower.index(k.lower()), k))
    return found + rest


def _is_numeric_matrix(v):
    if sp.issparse(v):
        return v.ndim == 2
    return (isinstance(v, np.ndarray) and v.ndim == 2 and v.dtype.names is None
            and (v.dtype.kind in "biuf"))


def _as_label_vector(v):
    """Return ``v`` as a 1-D numeric label array, or None if it cannot be one."""
    if sp.issparse(v):
        v = v.toarray()
    if not isinstance(v, np.ndarray) or v.dtype.names is not None:
        return None
    if v.dtype == object:  # a cell of per-view label vectors: all must agree
        vectors = [_as_label_vector(e) for e in v.ravel()]
        if not vectors or any(e is None for e in vectors):
            return None
        first = vectors[0]
        if any(e.shape != first.shape or not np.array_equal(e, first) for e in vectors[1:]):
            return None
        return first
    if v.dtype.kind not in "biuf" or v.size == 0:
        return None
    if v.ndim == 2 and min(v.shape) != 1 or v.ndim > 2:
        return None
    v = v.reshape(-1)
    if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
        return None
    return v


def _orientation_without_labels(raw_views):
    """Transpose flags when there are no labels: the sample count is the first view's row
    count if every view has it in one orientation, else its column count; views sharing
    neither are taken rows-as-samples (unmapped views)."""
    first = raw_views[0].shape
    for n in (first[0], first[1]):
        if all(n in X.shape for X in raw_views):
            return [X.shape[0] != n for X in raw_views]
    return [False] * len(raw_views)


def _find_labels(variables, path, require_labels=True):
    candidates = _ordered_matches(variables, _LABEL_NAMES)
    for name in candidates:
        vec = _as_label_vector(variables[name])
        if vec is not None:
            return name, vec
    if candidates:
        raise InvalidFileError(
            f"no usable labels in {path!r}: {' / '.join(candidates)} is not a finite numeric "
            f"vector (or a cell of identical vectors); variables found: {_describe(variables)}")
    if not require_labels:
        return None, None
    raise InvalidFileError(
        f"no labels found in {path!r}: expected a variable named one of "
        f"{', '.join(_LABEL_NAMES)} (any capitalisation); variables found: "
        f"{_describe(variables)}")


def _find_views(variables, y_name, path):
    """Return (names used in messages, list of raw 2-D numeric/sparse views)."""
    others = {k: v for k, v in variables.items() if k != y_name}
    cells = {k: v for k, v in others.items() if isinstance(v, np.ndarray) and v.dtype == object}
    preferred = _ordered_matches(cells, _CELL_NAMES)
    if preferred:
        cell_name = preferred[0]
    elif len(cells) == 1:
        cell_name = next(iter(cells))
    elif len(cells) > 1:
        raise InvalidFileError(
            f"cannot tell which cell array holds the views in {path!r}: several cells "
            f"({', '.join(cells)}) and none is named X; variables found: {_describe(variables)}")
    else:
        cell_name = None
    if cell_name is not None:
        cell = cells[cell_name]
        if cell.ndim > 2 or (cell.ndim == 2 and min(cell.shape) > 1):
            raise InvalidFileError(
                f"the cell {cell_name!r} in {path!r} has shape {cell.shape}; expected 1 x V or "
                "V x 1 (one view per cell)")
        raw = list(cell.ravel())
        names = [f"{cell_name}{{{i + 1}}}" for i in range(len(raw))]
        for name, X in zip(names, raw):
            if not _is_numeric_matrix(X):
                kind = (f"a {X.dtype} array of shape {X.shape}" if isinstance(X, np.ndarray)
                        else type(X).__name__)
                raise InvalidFileError(
                    f"view {name} in {path!r} is {kind}, not a real numeric matrix")
        if not raw:
            raise InvalidFileError(f"the cell {cell_name!r} in {path!r} is empty: no views found")
        return names, raw

    separate = {}
    for k, v in others.items():
        m = _SEPARATE_RE.fullmatch(k)
        if m and _is_numeric_matrix(v):
            idx = int(m.group(1))
            if idx in separate:
                raise InvalidFileError(
                    f"ambiguous views in {path!r}: both {separate[idx][0]!r} and {k!r} "
                    f"are view {idx}")
            separate[idx] = (k, v)
    if separate:
        order = sorted(separate)
        return [separate[i][0] for i in order], [separate[i][1] for i in order]

    single = _ordered_matches(others, ("X",))
    if single and _is_numeric_matrix(others[single[0]]):
        return [single[0]], [others[single[0]]]
    raise InvalidFileError(
        f"no views found in {path!r}: expected a cell array X (1 x V or V x 1) or variables "
        f"x1, x2, ...; variables found: {_describe(variables)}")


def _select_indices(views, n_views, path):
    if views is None:
        return list(range(n_views))
    if isinstance(views, numbers.Integral) and not isinstance(views, bool):
        items = [views]
    else:
        try:
            items = list(views)
        except TypeError:
            raise TypeError(f"views must be None, an int or a sequence of ints, got "
                            f"{type(views).__name__}") from None
    if not items:
        raise InvalidParameterError("views must select at least one view, got an empty sequence")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"views must hold int view indices, got {v!r}")
        if not -n_views <= v < n_views:
            raise InvalidParameterError(
                f"views index {v} out of range: {path!r} holds {n_views} view(s)")
        out.append(int(v) % n_views)
    if len(set(out)) != len(out):
        raise InvalidParameterError(f"views selects the same view more than once: {items}")
    return out


def _check_sparse(X, path):
    """SciPy builds a sparse variable from the file's index arrays as they are: refuse any
    that point outside the matrix before a conversion walks them."""
    X = X.tocsc() if X.format != "csc" else X
    n_rows, n_cols = X.shape
    indptr, indices = X.indptr, X.indices
    nnz = indices.shape[0]
    if (indptr.shape[0] != n_cols + 1 or X.data.shape[0] != nnz or indptr[0] != 0
            or indptr[-1] != nnz or np.any(np.diff(indptr.astype(np.int64)) < 0)):
        raise InvalidFileError(f"{path!r} holds a malformed sparse matrix (inconsistent "
                               "column pointers)")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= n_rows):
        raise InvalidFileError(f"{path!r} holds a sparse matrix with a row index outside "
                               f"[0, {n_rows})")


def _convert(X, transpose, dtype, path="the file"):
    if sp.issparse(X):
        _check_sparse(X, path)
        Xc = sp.csr_matrix(X.T if transpose else X, dtype=dtype, copy=True)
        Xc.sum_duplicates()  # also sorts the indices
        return Xc
    return np.ascontiguousarray(X.T if transpose else X, dtype=dtype)
