"""Result objects: small frozen dataclasses, in the spirit of ``scipy.optimize.OptimizeResult``.

Each solver module defines its own ``@dataclass(frozen=True, repr=False)`` subclass of
:class:`Result` with the fields it returns (always ``labels``, ``objective``, ``n_iter`` and
``converged`` where they make sense). :class:`Result` only adds a compact ``repr`` (shapes,
not contents) and ``to_dict``.
"""
from __future__ import annotations

import dataclasses

import numpy as np


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


@dataclasses.dataclass(frozen=True, repr=False)
class Result:
    """Base class of the solvers' result objects (no fields of its own)."""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for f in dataclasses.fields(self):
            lines.append(f"    {f.name}={_describe(getattr(self, f.name))},")
        lines.append(")")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Shallow dict of the fields (arrays are not copied)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
