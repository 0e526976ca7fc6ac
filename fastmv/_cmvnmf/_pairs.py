"""CMVNMF's pairs: validation of the must-link / cannot-link dicts and the patterns the
update kernels read, built once per call (docs/algorithms.md §4)."""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from fastmv.kernels.cmvnmf import pattern_csr

from .._core._preprocessing import check_pair_conflicts
from .._core._validation import check_pairs

__all__ = ["Constraints", "build_constraints", "prepare_pairs"]


class Constraints(NamedTuple):
    """The pairs of every block as the kernels read them (built once per call)."""

    blocks: dict         # {(a, b): (must (p, 2), cannot (q, 2))}, a <= b
    must_pattern: list   # per view (indptr, indices): columns index the stacked V_all
    cannot_pattern: list
    deg_num: list        # per view: intra-view must-link degrees (numerator)
    deg_den: list        # per view: all must-link degrees, intra-view ones twice
    deg_pen: list        # per view: inter-view must-link degrees (penalty part)
    must_global: np.ndarray    # (p, 2) all pairs as rows of V_all, for the objective
    cannot_global: np.ndarray
    must_intra: np.ndarray     # the intra-view pairs alone (the sweep's penalty part
    cannot_intra: np.ndarray   # covers the inter-view ones)


def prepare_pairs(must_link, cannot_link, n_list, dtype):
    """Validated pairs of every block (no pair both must- and cannot-linked) as
    :class:`Constraints` for views of ``n_list`` rows and factors of ``dtype``."""
    must = check_constraints(must_link, "must_link", n_list)
    cannot = check_constraints(cannot_link, "cannot_link", n_list)
    empty = np.zeros((0, 2), dtype=np.int64)
    blocks = {key: (must.get(key, empty), cannot.get(key, empty))
              for key in sorted(set(must) | set(cannot))}
    for (a, b), (ml, cl) in blocks.items():
        # an intra-view pair (i, j) is the pair (j, i)
        ml, cl = (np.sort(ml, axis=1), np.sort(cl, axis=1)) if a == b else (ml, cl)
        check_pair_conflicts(ml, cl, f"must_link[({a}, {b})]", f"cannot_link[({a}, {b})]")
    return build_constraints(blocks, n_list, dtype)


def check_constraints(constraints, name, n_list):
    """Validate a constraint dict; returns ``{(a, b): (p, 2) int64}`` with ``a <= b``.

    Keys ``(a, b)`` are view ids (``a == b``: intra-view); rows hold (row of view a, row of
    view b). A key ``(b, a)`` with ``b > a`` is transposed onto ``(a, b)`` and merged.
    """
    m = len(n_list)
    if constraints is None:
        return {}
    out = {}
    for key, pairs in constraints.items():
        if (not isinstance(key, tuple) or len(key) != 2
                or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                           for v in key)):
            raise TypeError(f"{name} keys must be (a, b) tuples of view indices, got {key!r}")
        a, b = int(key[0]), int(key[1])
        for v in (a, b):
            if not 0 <= v < m:
                raise ValueError(f"{name}[{key!r}]: view index {v} out of range [0, {m})")
        label = f"{name}[({a}, {b})]"
        if a == b:
            arr = check_pairs(pairs, label, n_list[a])
        else:
            arr = check_pairs(pairs, label, n_list[a], n_list[b])
        if a > b:
            a, b = b, a
            arr = np.ascontiguousarray(arr[:, ::-1])
        if arr.shape[0]:
            out[(a, b)] = np.vstack([out[(a, b)], arr]) if (a, b) in out else arr
    return out


def build_constraints(blocks, n_list, dtype):
    """:class:`Constraints` of ``blocks`` for views of ``n_list`` rows (factors of ``dtype``)."""
    m = len(n_list)
    off = np.concatenate([[0], np.cumsum(n_list)]).astype(np.int64)
    rows_m = [[] for _ in range(m)]
    cols_m = [[] for _ in range(m)]
    rows_c = [[] for _ in range(m)]
    cols_c = [[] for _ in range(m)]
    deg_num = [np.zeros(n, dtype=dtype) for n in n_list]
    deg_den = [np.zeros(n, dtype=dtype) for n in n_list]
    deg_pen = [np.zeros(n, dtype=dtype) for n in n_list]
    g_must, g_cannot, i_must, i_cannot = [], [], [], []
    for (a, b), (must, cannot) in blocks.items():
        i, j = must[:, 0], must[:, 1]
        if a == b:
            rows_m[a] += [i, j]
            cols_m[a] += [off[a] + j, off[a] + i]
            ds = (np.bincount(i, minlength=n_list[a])
                  + np.bincount(j, minlength=n_list[a])).astype(dtype)
            deg_num[a] += ds
            deg_den[a] += 2 * ds
        else:
            rows_m[a].append(i)
            cols_m[a].append(off[b] + j)
            rows_m[b].append(j)
            cols_m[b].append(off[a] + i)
            for v, rows in ((a, i), (b, j)):
                d = np.bincount(rows, minlength=n_list[v]).astype(dtype)
                deg_den[v] += d
                deg_pen[v] += d
        g_must.append(np.column_stack([off[a] + i, off[b] + j]))
        i, j = cannot[:, 0], cannot[:, 1]
        rows_c[a].append(i)
        cols_c[a].append(off[b] + j)
        rows_c[b].append(j)
        cols_c[b].append(off[a] + i)
        g_cannot.append(np.column_stack([off[a] + i, off[b] + j]))
        if a == b:
            i_must.append(g_must[-1])
            i_cannot.append(g_cannot[-1])
    # int32 indices when they fit: the gathers are memory bound
    N = int(off[-1])
    idx = np.int32 if N < np.iinfo(np.int32).max else np.int64

    def pattern(rows, cols, n):
        r = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
        col = np.concatenate(cols).astype(idx) if cols else np.zeros(0, idx)
        return pattern_csr(r, col, n, N)

    def stacked(pairs):
        return (np.ascontiguousarray(np.vstack(pairs), dtype=idx) if pairs
                else np.zeros((0, 2), dtype=idx))

    return Constraints(blocks, [pattern(rows_m[a], cols_m[a], n_list[a]) for a in range(m)],
                        [pattern(rows_c[a], cols_c[a], n_list[a]) for a in range(m)],
                        deg_num, deg_den, deg_pen, stacked(g_must), stacked(g_cannot),
                        stacked(i_must), stacked(i_cannot))
