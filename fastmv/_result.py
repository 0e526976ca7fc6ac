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

__all__ = ["Result"]

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


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if sp.issparse(value):
        coo = sp.coo_matrix(value)
        return {"shape": list(coo.shape), "row": coo.row.tolist(), "col": coo.col.tolist(),
                "data": coo.data.tolist()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


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
        "folds", "method", "solves"}``. ``None`` when nothing was tuned. Keyword-only.

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
            ``False``: a shallow dict (arrays are not copied). ``True``: nested lists, numbers
            and strings only, ready for :func:`json.dumps` (sparse matrices become
            ``{"shape", "row", "col", "data"}``).

        Returns
        -------
        dict
            Field name to value.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if jsonable:
            out = {k: _jsonable(v) for k, v in out.items()}
        return out

    def save(self, path) -> None:
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
    def load(cls, path) -> Result:
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
        """
        with np.load(os.fspath(path), allow_pickle=False) as data:
            if _META not in data:
                raise ValueError(f"{os.fspath(path)} is not a saved fastmv result")
            meta = json.loads(bytes(data[_META]).decode())
            name = meta["class"]
            klass = _REGISTRY.get(name, Result if name == "Result" else None)
            if klass is None:
                # the module defining it may not be imported yet
                import fastmv  # noqa: PLC0415 (circular: the package imports this module)
                for public in dir(fastmv):
                    getattr(fastmv, public, None)
                klass = _REGISTRY.get(name)
            if klass is None:
                raise ValueError(f"{os.fspath(path)} holds an unknown result class {name!r}")
            if cls is not Result and not issubclass(klass, cls):
                raise TypeError(f"{os.fspath(path)} holds a {name}, not a {cls.__name__}")
            values = {k: _unpack(spec, data) for k, spec in meta["fields"].items()}
        return klass(**values)


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


def _unpack(spec, data):
    kind = spec["kind"]
    if kind == "literal":
        return spec["value"]
    if kind == "array":
        return np.array(data[spec["key"]])
    if kind == "csr":
        key = spec["key"]
        return sp.csr_matrix((data[f"{key}.data"], data[f"{key}.indices"],
                              data[f"{key}.indptr"]), shape=tuple(spec["shape"]))
    if kind == "dict":
        return {k: _unpack(v, data) for k, v in spec["items"].items()}
    items = [_unpack(s, data) for s in spec["items"]]
    return items if kind == "list" else tuple(items)
