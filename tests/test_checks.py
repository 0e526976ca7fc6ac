"""The kernels' boundary checks (``kernels/_checks.py``) against their NumPy twins, on valid
structures and on each kind of corruption, awkward shapes included (empty, one row)."""
from __future__ import annotations

import numpy as np
import pytest

from fastmv.kernels import _checks as K
from fastmv.kernels.opimc_layout import DenseRows, SparseRows
from tests import naive_checks as N

i64 = np.int64


def _csr(rng, n_rows, n_cols, density=0.4):
    mask = rng.random((n_rows, n_cols)) < density
    indptr = np.r_[0, np.cumsum(mask.sum(1))].astype(i64)
    indices = np.nonzero(mask)[1].astype(i64)
    return indptr, indices, rng.random(indices.size)


def _csr_variants(rng):
    for n_rows, n_cols in [(0, 3), (1, 1), (5, 4), (12, 7)]:
        indptr, indices, data = _csr(rng, n_rows, n_cols)
        yield "valid", (indptr, indices, data, n_rows, n_cols)
        if indices.size:
            far = indices.copy()
            far[-1] = n_cols
            yield "index past the end", (indptr, far, data, n_rows, n_cols)
            neg = indices.copy()
            neg[0] = -1
            yield "negative index", (indptr, neg, data, n_rows, n_cols)
            yield "short data", (indptr, indices, data[:-1], n_rows, n_cols)
        yield "short indptr", (indptr[:-1], indices, data, n_rows, n_cols)
        if n_rows >= 2 and indptr[-1] > 0:
            dec = indptr.copy()
            dec[1] = indptr[-1]
            yield "decreasing indptr", (dec, indices, data, n_rows, n_cols)


@pytest.mark.parametrize("seed", range(3))
def test_csr_checks_match_their_twins(seed):
    rng = np.random.default_rng(seed)
    seen = set()
    for kind, args in _csr_variants(rng):
        expected = N.valid_csr(*args)
        assert K.valid_csr(*args) == expected, kind
        assert K.valid_ptr(args[0], args[3], args[1].size) == N.valid_ptr(args[0], args[3],
                                                                           args[1].size), kind
        assert K.valid_sparse_rows(SparseRows(args[2], args[1], args[0]), args[3], args[4]) \
            == N.valid_sparse_rows(SparseRows(args[2], args[1], args[0]), args[3], args[4])
        seen.add((kind, expected))
    assert ("valid", True) in seen and ("index past the end", False) in seen
    assert K.valid_sparse_rows(None, 3, 3) and N.valid_sparse_rows(None, 3, 3)


@pytest.mark.parametrize("shape", [(0,), (1,), (4, 3), (2, 0)])
def test_in_range_matches_its_twin(shape):
    rng = np.random.default_rng(1)
    idx = rng.integers(-2, 6, size=shape).astype(i64)
    for low, high in [(0, 4), (-2, 6), (0, 0), (1, 2)]:
        assert K.in_range(idx, low, high) == N.in_range(idx, low, high)


@pytest.mark.parametrize("view_ptr,n_rows", [([0, 3, 5], 5), ([0, 5], 5), ([0, 3, 5], 6),
                                             ([0], 0), ([0, 4, 3], 4), ([1, 5], 5),
                                             ([0, 0, 0], 0)])
def test_view_ptr_check_matches_its_twin(view_ptr, n_rows):
    vp = np.array(view_ptr, dtype=i64)
    assert K.valid_view_ptr(vp, n_rows) == N.valid_view_ptr(vp, n_rows)


def _dense_rows(rng, s, widths, missing=0.3):
    rows, values, row_start, value_start = [], [], [0], [0]
    position = np.full((s, len(widths)), -1, dtype=i64)
    for v, d in enumerate(widths):
        present = np.flatnonzero(rng.random(s) >= missing)
        position[present, v] = row_start[-1] + np.arange(present.size)
        rows.extend(present)
        values.append(rng.random(present.size * d))
        row_start.append(row_start[-1] + present.size)
        value_start.append(value_start[-1] + present.size * d)
    return DenseRows(np.concatenate(values) if values else np.zeros(0),
                     np.array(value_start, dtype=i64), np.array(rows, dtype=i64),
                     np.array(row_start, dtype=i64), position)


@pytest.mark.parametrize("s,widths", [(1, (1,)), (6, (3, 2)), (9, (1, 4, 2)), (4, (0, 2))])
def test_dense_rows_check_matches_its_twin(s, widths):
    rng = np.random.default_rng(s)
    dense = _dense_rows(rng, s, widths)
    view_ptr = np.r_[0, np.cumsum(widths)].astype(i64)
    cases = {"valid": dense,
             "row out of range": dense._replace(rows=np.where(dense.rows == dense.rows.max(),
                                                               s, dense.rows)),
             "short values": dense._replace(values=dense.values[:-1]),
             "position past its view": dense._replace(position=np.where(
                 dense.position >= 0, dense.position + 1, -1)),
             "short position": dense._replace(position=dense.position[:-1])}
    for kind, d in cases.items():
        assert K.valid_dense_rows(d, view_ptr, s) == N.valid_dense_rows(d, view_ptr, s), kind
    assert K.valid_dense_rows(dense, view_ptr, s)
    if dense.values.size:
        assert not K.valid_dense_rows(cases["short values"], view_ptr, s)
        assert not K.valid_dense_rows(cases["short position"], view_ptr, s)
    assert K.valid_dense_rows(None, view_ptr, s) and N.valid_dense_rows(None, view_ptr, s)
