"""Result objects: one base contract for every solver, in the spirit of
``scipy.optimize.OptimizeResult``.

Every solver returns a frozen dataclass deriving from :class:`Result`, whose four fields
every result has — ``labels``, ``objective`` (1-D float64, one entry per iteration),
``n_iter`` (int, ``len(objective)``) and ``converged`` (bool) — followed by the solver's own
fields. Results print compactly (shapes, not contents), convert to dicts (plain or
JSON-ready) and save to / load from ``.npz`` files without pickle.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..exceptions import InvalidFileError
from ._files import read_npz

__all__ = ["Result", "untuned_record"]

_REGISTRY: dict[str, type] = {}
_META = "__fastmv_result__"


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray{value.shape} {value.dtype}"
    if hasattr(value, "shape") and hasattr(value, "nnz"):
        return f"{type(value).__name__}{value.shape} nnz={value.nnz}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, np.ndarray) for v in value):
        return f"[{len(value)} arrays: " + ", ".join(str(v.shape) for v in value[:4]) + \
            (", ...]" if len(value) > 4 else "]")
    if isinstance(value, float):
        return f"{value:.6g}"
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _finite_or_none(values):
    """A float array's entries as a nested list, every non-finite entry as ``None``."""
    out = values.astype(object)
    out[~np.isfinite(values)] = None
    return out.tolist()


def _jsonable(value):
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            return _finite_or_none(value)
        return value.tolist()
    if sp.issparse(value):
        coo = sp.coo_matrix(value)
        return {"shape": list(coo.shape), "row": coo.row.tolist(), "col": coo.col.tolist(),
                "data": _jsonable(coo.data)}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def untuned_record(record: dict, reason: str) -> dict:
    """A tuning record for an option left at its default because its supervision cannot
    be scored (no fold holds anything out, or nothing to compare it with): the grid and
    the default as ``"chosen"``, ``None`` for ``"scores"``, ``"mean"`` and ``"gain_se"``,
    and ``reason`` saying why (the :class:`Result` ``tuning`` field)."""
    return {"candidates": list(record["candidates"]), "scores": None, "mean": None,
            "gain_se": None, "chosen": record["candidates"][0], "folds": 0,
            "method": record.get("method"), "solves": 0, "reason": reason}


@dataclasses.dataclass(frozen=True, repr=False)
class Result:
    """Base contract of every solver's result.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        Cluster of every sample (CMVNMF: a list with one such array per view).
    objective : ndarray of float64, shape (n_iter,)
        The solver's objective after every iteration.
    n_iter : int
        Number of iterations run.
    converged : bool
        Whether the solver's convergence test was met (``False`` when it stopped at
        ``max_iter`` or because a callback asked it to).
    tuning : dict or None
        Options resolved by internal validation on the caller's supervision (``"auto"``
        options with labels or pairs; docs/defaults.md, "Self-tuning"): option name to
        ``{"candidates", "scores" (candidates × folds), "mean", "gain_se", "chosen",
        "folds", "method", "solves"}``. ``None`` when nothing was tuned. An option whose
        supervision cannot be scored (too few labelled samples or pairs to hold any out) is
        not tuned: its record keeps the default as ``"chosen"``, has ``None`` for
        ``"scores"``, ``"mean"`` and ``"gain_se"``, ``"solves": 0`` and says why under
        ``"reason"``. Keyword-only.

    Notes
    -----
    "Not computed" has one representation: a field that was not computed is ``None``; an
    entry of a float array that was not computed (the first iteration's change of a
    quantity, a validation fold that held nothing out) is ``nan``, as each solver's result
    documents per field. :meth:`to_dict` with ``jsonable=True`` writes every such entry, and
    any other non-finite number, as ``None``, so its output is strict JSON
    (``json.dumps(..., allow_nan=False)`` accepts it; JavaScript, Go and ``jq`` parse it).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import Result
    >>> r = Result(labels=np.array([0, 1]), objective=np.array([2.0, 1.0]), n_iter=2,
    ...            converged=True)
    >>> r.to_dict(jsonable=True)["objective"]
    [2.0, 1.0]
    """

    labels: Any
    objective: np.ndarray
    n_iter: int
    converged: bool
    tuning: Any = dataclasses.field(default=None, kw_only=True)

    _save_skip: ClassVar[tuple] = ()
    #: Field name to its shape, checked by :meth:`load` against the other fields': a tuple
    #: of dimensions (an int, or a name that must mean one size in every field), or a
    #: one-item list of such a tuple for a list of arrays, where a name ending in ``_v`` may
    #: differ from item to item (and must agree between lists item by item). Fields that
    #: are ``None`` are left out.
    _shapes: ClassVar[dict] = {"labels": ("n",), "objective": ("n_iter",)}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for f in dataclasses.fields(self):
            lines.append(f"    {f.name}={_describe(getattr(self, f.name))},")
        lines.append(")")
        return "\n".join(lines)

    def to_dict(self, *, jsonable: bool = False) -> dict:
        """The fields as a dict.

        Parameters
        ----------
        jsonable : bool, default False
            ``False``: a shallow dict (arrays are not copied). ``True``: nested lists, finite
            numbers, strings and ``None`` only, ready for :func:`json.dumps` with
            ``allow_nan=False`` (sparse matrices become ``{"shape", "row", "col", "data"}``;
            ``nan`` and infinite numbers become ``None``).

        Returns
        -------
        dict
            Field name to value.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if jsonable:
            out = {k: _jsonable(v) for k, v in out.items()}
        return out

    def save(self, path: str | os.PathLike) -> None:
        """Save to an ``.npz`` file that :meth:`load` reads back (no pickle involved).

        Parameters
        ----------
        path : str or path-like
            Destination (``.npz`` is appended by NumPy when missing).

        Raises
        ------
        TypeError
            A field holds something other than arrays, numbers, strings, ``None``,
            scipy.sparse matrices, or lists/tuples of those.
        """
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {"class": type(self).__name__, "fields": {}}
        for f in dataclasses.fields(self):
            if f.name in self._save_skip:
                continue
            meta["fields"][f.name] = _pack(f.name, getattr(self, f.name), arrays)
        arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        np.savez(os.fspath(path), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Result:
        """Read a result written by :meth:`save`.

        ``Result.load`` returns an object of the class that was saved.

        Parameters
        ----------
        path : str or path-like
            The ``.npz`` file.

        Returns
        -------
        Result
            The saved result.

        Raises
        ------
        fastmv.exceptions.InvalidFileError
            The file is not a saved result, is damaged, declares more data than it holds (or
            than :data:`fastmv._core._files.MAX_INFLATION` times its size), refers to arrays it does
            not hold, holds a malformed sparse matrix, or breaks the result contract (1-D
            integer ``labels``, 1-D float ``objective``, int ``n_iter``, bool ``converged``).
            Nothing is built from a file before it is checked.
        """
        path = os.fspath(path)
        data = read_npz(path)
        if _META not in data:
            raise InvalidFileError(f"{path} is not a saved fastmv result (no {_META} entry)")
        meta = _read_meta(path, data.pop(_META))
        name = meta["class"]
        klass = _REGISTRY.get(name, Result if name == "Result" else None)
        if klass is None:
            # the module defining it may not be imported yet
            import fastmv  # noqa: PLC0415 (circular: the package imports this module)
            for public in dir(fastmv):
                getattr(fastmv, public, None)
            klass = _REGISTRY.get(name)
        if klass is None:
            raise InvalidFileError(f"{path} holds an unknown result class {name!r}")
        if cls is not Result and not issubclass(klass, cls):
            raise TypeError(f"{path} holds a {name}, not a {cls.__name__}")
        fields = meta["fields"]
        used: set[str] = set()
        values = {k: _unpack(spec, data, f"{path} [{k}]", used, 0)
                  for k, spec in fields.items()}
        _check_contract(path, values)
        _check_shapes(path, klass, values)
        try:
            return klass(**values)
        except (TypeError, ValueError) as exc:
            raise InvalidFileError(f"{path}: cannot rebuild a {name}: {exc}") from None


# a saved result nests lists of arrays a few levels deep at most
_MAX_DEPTH = 16
_KINDS = {"literal", "array", "csr", "list", "tuple", "dict"}


def _read_meta(path, raw):
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise InvalidFileError(f"{path}: the {_META} entry is not a byte string")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidFileError(f"{path}: the {_META} entry is not valid JSON "
                               f"({type(exc).__name__})") from None
    if (not isinstance(meta, dict) or not isinstance(meta.get("class"), str)
            or not isinstance(meta.get("fields"), dict)):
        raise InvalidFileError(f"{path}: the {_META} entry lacks 'class' and 'fields'")
    return meta


def _check_contract(path, values):
    """The four fields every result has, with the types the contract promises."""
    labels = values.get("labels")
    parts = labels if isinstance(labels, (list, tuple)) and labels else [labels]
    if labels is not None and not all(isinstance(v, np.ndarray) and v.ndim == 1
                                      and v.dtype.kind in "iu" for v in parts):
        raise InvalidFileError(f"{path}: labels must be a 1-D integer array (or one per view), "
                               f"got {_describe(labels)}")
    objective = values.get("objective")
    if not (isinstance(objective, np.ndarray) and objective.ndim == 1
            and objective.dtype.kind == "f"):
        raise InvalidFileError(f"{path}: objective must be a 1-D float array, got "
                               f"{_describe(objective)}")
    n_iter = values.get("n_iter")
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 0:
        raise InvalidFileError(f"{path}: n_iter must be an int >= 0, got {n_iter!r}")
    if not isinstance(values.get("converged"), bool):
        raise InvalidFileError(f"{path}: converged must be a bool, got "
                               f"{values.get('converged')!r}")


def _check_shapes(path, klass, values):
    """Every array field's shape agrees with the other fields' (``Result._shapes``)."""
    shapes = {**Result._shapes, **klass._shapes}
    if isinstance(values.get("labels"), (list, tuple)) and "labels" not in klass._shapes:
        shapes.pop("labels")
    sizes = {"n_iter": values.get("n_iter")}
    seen = {"n_iter": "n_iter"}
    for field, spec in shapes.items():
        value = values.get(field)
        if value is None:
            continue
        if isinstance(spec, list):
            if not isinstance(value, (list, tuple)):
                raise InvalidFileError(f"{path}: {field} must be a list of arrays, got "
                                       f"{_describe(value)}")
            items = [(f"{field}[{i}]", v, i) for i, v in enumerate(value)]
            spec = spec[0]
        else:
            items = [(field, value, None)]
        for where, arr, i in items:
            shape = getattr(arr, "shape", None)
            if shape is None or len(shape) != len(spec):
                raise InvalidFileError(f"{path}: {where} must have {len(spec)} dimensions, got "
                                       f"{_describe(arr)}")
            for axis, (dim, size) in enumerate(zip(spec, shape)):
                if isinstance(dim, int):
                    if size != dim:
                        raise InvalidFileError(f"{path}: {where} has {size} entries along axis "
                                               f"{axis}, expected {dim}")
                    continue
                key = f"{dim}[{i}]" if dim.endswith("_v") and i is not None else dim
                if key not in sizes:
                    sizes[key], seen[key] = int(size), f"{where} axis {axis}"
                elif sizes[key] != size:
                    raise InvalidFileError(
                        f"{path}: {where} has {size} entries along axis {axis}, but "
                        f"{seen[key]} has {sizes[key]} ({dim}): the arrays do not belong "
                        "together (a damaged or edited file)")


def _pack(key, value, arrays):
    """A JSON description of ``value``; arrays go to ``arrays`` under derived keys."""
    if value is None or isinstance(value, (bool, str)):
        return {"kind": "literal", "value": value}
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        return {"kind": "literal", "value": value.item() if isinstance(value, np.generic)
                else value}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"cannot save field {key!r}: object arrays are not supported")
        arrays[key] = value
        return {"kind": "array", "key": key}
    if sp.issparse(value):
        csr = sp.csr_matrix(value)
        for part in ("data", "indices", "indptr"):
            arrays[f"{key}.{part}"] = getattr(csr, part)
        return {"kind": "csr", "key": key, "shape": list(csr.shape)}
    if isinstance(value, (list, tuple)):
        return {"kind": "list" if isinstance(value, list) else "tuple",
                "items": [_pack(f"{key}.{i}", v, arrays) for i, v in enumerate(value)]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"kind": "dict", "items": {k: _pack(f"{key}.{k}", v, arrays)
                                          for k, v in value.items()}}
    raise TypeError(f"cannot save field {key!r} of type {type(value).__name__}")


def _unpack(spec, data, where, used, depth):
    """The value ``spec`` describes, every reference and structure checked."""
    if depth > _MAX_DEPTH:
        raise InvalidFileError(f"{where}: nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(spec, dict) or spec.get("kind") not in _KINDS:
        raise InvalidFileError(f"{where}: malformed field description")
    kind = spec["kind"]
    if kind == "literal":
        value = spec.get("value")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise InvalidFileError(f"{where}: a literal must be a number, string or null")
        return value
    if kind == "array":
        return _array(data, spec.get("key"), where, used)
    if kind == "csr":
        return _csr(spec, data, where, used)
    items = spec.get("items")
    if kind == "dict":
        if not isinstance(items, dict):
            raise InvalidFileError(f"{where}: malformed dict description")
        return {k: _unpack(v, data, f"{where}.{k}", used, depth + 1) for k, v in items.items()}
    if not isinstance(items, list):
        raise InvalidFileError(f"{where}: malformed {kind} description")
    out = [_unpack(s, data, f"{where}.{i}", used, depth + 1) for i, s in enumerate(items)]
    return out if kind == "list" else tuple(out)


def _array(data, key, where, used):
    if not isinstance(key, str) or key not in data:
        raise InvalidFileError(f"{where}: refers to an array {key!r} the file does not hold")
    if key in used:
        raise InvalidFileError(f"{where}: the array {key!r} is referred to twice")
    used.add(key)
    return data[key]


def _csr(spec, data, where, used):
    key, shape = spec.get("key"), spec.get("shape")
    if not isinstance(key, str):
        raise InvalidFileError(f"{where}: malformed sparse description")
    if (not isinstance(shape, list) or len(shape) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in shape)):
        raise InvalidFileError(f"{where}: sparse shape must be two ints >= 0, got {shape!r}")
    values, indices, indptr = (_array(data, f"{key}.{part}", where, used)
                               for part in ("data", "indices", "indptr"))
    n_rows, n_cols = shape
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        raise InvalidFileError(f"{where}: sparse data must be a 1-D numeric array")
    for name, arr in (("indices", indices), ("indptr", indptr)):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InvalidFileError(f"{where}: sparse {name} must be a 1-D integer array")
    nnz = values.shape[0]
    if indices.shape[0] != nnz or indptr.shape[0] != n_rows + 1:
        raise InvalidFileError(f"{where}: sparse arrays of inconsistent lengths (data {nnz}, "
                               f"indices {indices.shape[0]}, indptr {indptr.shape[0]} for "
                               f"{n_rows} rows)")
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr.astype(np.int64)) < 0):
        raise InvalidFileError(f"{where}: sparse indptr must rise from 0 to nnz = {nnz}")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= n_cols):
        raise InvalidFileError(f"{where}: a sparse column index lies outside [0, {n_cols})")
    return sp.csr_matrix((values, indices, indptr), shape=(n_rows, n_cols))
