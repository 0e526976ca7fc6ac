"""Hostile chunk streams and operators: what failed inside a dependency (or read outside a
buffer) is refused by the one validator, naming ``X_list``, the stream's item and the view,
or the operator ``S``.

A 1-based CSR block used to be read out of bounds by scipy's slicing and stacking (heap
corruption, ``free(): invalid size``) whenever the stream's blocks did not line up with the
chunks, so the stream cases run in a child process: a crash fails the test, not the run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import fastmv
from fastmv.exceptions import InvalidParameterError
from tests.child import ROOT

_STREAMS = """
import json, warnings
import numpy as np, scipy.sparse as sp
import fastmv
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)


def csr(rows, d=5, one_based=False):
    A = sp.csr_matrix(sp.random(rows, d, density=0.5, format="csr", random_state=1)
                      + sp.csr_matrix(np.eye(rows, d)))
    if one_based:
        A = sp.csr_matrix((A.data, A.indices + 1, A.indptr), shape=A.shape)
    return A


def csc_one_based(rows, d=5):
    C = csr(rows, d).tocsc()
    return sp.csc_matrix((C.data, C.indices + 1, C.indptr), shape=C.shape)


def dense(rows, d=3):
    return rng.random((rows, d))


class Stream:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


strings = np.array([["a"] * 5] * 50)
cases = {
    "strings in a sparse view's later block": [([csr(50), dense(50)], None),
                                               ([strings, dense(50)], None)],
    "strings in a dense view's later block": [([csr(50), dense(50)], None),
                                              ([csr(50), strings[:, :3]], None)],
    "1-based, blocks the chunk's size": [([csr(50), dense(50)], None),
                                         ([csr(50, one_based=True), dense(50)], None)],
    "1-based, blocks stacked": [([csr(20), dense(20)], None),
                                ([csr(20, one_based=True), dense(20)], None),
                                ([csr(20), dense(20)], None)],
    "1-based, a block sliced": [([csr(50), dense(50)], None),
                                ([csr(120, one_based=True), dense(120)], None)],
    "1-based, the first block": [([csr(50, one_based=True), dense(50)], None),
                                 ([csr(50), dense(50)], None)],
    "1-based, after a dense block": [([dense(50, 5), dense(50)], None),
                                     ([csr(50, one_based=True), dense(50)], None)],
    "1-based csr_array": [([csr(50), dense(50)], None),
                          ([sp.csr_array(csr(50, one_based=True)), dense(50)], None)],
    "1-based csc": [([csr(50), dense(50)], None), ([csc_one_based(50), dense(50)], None)],
}
out = {}
for name, items in cases.items():
    for chunk in (50, 30):
        try:
            fastmv.opimc(Stream(items), 2, chunk_size=chunk, max_iter=1, random_state=0)
            out[f"{name}, chunk_size={chunk}"] = "accepted"
        except Exception as exc:
            out[f"{name}, chunk_size={chunk}"] = f"{type(exc).__name__}: {exc}"
print("RESULTS", json.dumps(out))
"""


def test_every_hostile_stream_block_is_refused_naming_the_item_and_the_view():
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_STREAMS)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.split("RESULTS", 1)[1])
    assert len(results) == 18
    for case, message in results.items():
        assert message.startswith("InvalidParameterError"), (case, message)
        assert "X_list (chunk stream) item" in message, (case, message)
        view = "view 1" if "dense view" in case else "view 0"
        assert view in message, (case, message)
        if "strings" in case:
            assert "must be numeric" in message and "item 1" in message, (case, message)
        else:
            assert "1-based" in message and "outside [0, " in message, (case, message)
            assert ("item 0" in message) == ("first block" in case), (case, message)


def _operator(n, product):
    return spla.LinearOperator((n, n), matvec=product, matmat=product, rmatvec=product,
                               dtype=np.float64)


def _nan_everywhere(v):
    return np.full(np.shape(v), np.nan)


def _nan_beyond_the_degrees(v):
    """Finite on the vector of ones (the degrees), NaN on any other vector."""
    out = np.array(v, dtype=float)
    if not np.allclose(out, out.flat[0]):
        out[...] = np.nan
    return out


@pytest.mark.parametrize("product", [_nan_everywhere, _nan_beyond_the_degrees])
@pytest.mark.parametrize("block", [fastmv.spectral_clustering, fastmv.spectral_embedding])
def test_an_operator_with_nan_products_is_named(product, block):
    with pytest.raises(InvalidParameterError, match=r"^S is a LinearOperator whose product "
                                                    r"with a vector has a NaN"):
        block(_operator(300, product), 3, random_state=0)


def test_an_operator_with_finite_products_still_clusters():
    S = np.kron(np.eye(2), np.ones((60, 60))) + 0.01
    labels = fastmv.spectral_clustering(_operator(120, lambda v: S @ v), 2, random_state=0)
    assert np.unique(labels[:60]).size == 1 and labels[0] != labels[-1]


# ------------------------------------------------- streams that change between passes
class _Reiterable:
    def __init__(self, make):
        self.make, self.passes = make, 0

    def __iter__(self):
        self.passes += 1
        return self.make(self.passes)


def _blocks(rows, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(rows, 3)), rng.normal(size=(rows, 2))]


def _stream_cases():
    import scipy.sparse as sp

    def one_based(p):
        for _ in range(3):
            B = sp.csr_matrix((np.ones(8), np.tile(np.array([1, 4]), 4), np.arange(0, 9, 2)),
                              shape=(4, 4))
            B.indices[1] = 4  # 1-based: column d_v does not exist
            yield [np.ones((4, 3)), B], None

    # every iter() yields fewer (more) rows than the one before, so that any two passes differ
    def shorter_second_pass(p):
        for t in range(3):
            yield _blocks(10 if t < 2 else 10 - 2 * p, t), None

    def more_rows_second_pass(p):
        for t in range(2 + p):
            yield _blocks(10, t), None

    def width_changes(p):
        yield _blocks(10), None
        yield [np.ones((10, 4)), np.ones((10, 2))], None

    def nan_block(p):
        b = _blocks(10)
        b[0][3, 1] = np.nan
        yield b, None

    def not_a_pair(p):
        yield _blocks(10)

    def bad_mask(p):
        yield _blocks(10), np.full((10, 2), 0.5)

    def timedelta_block(p):
        b = _blocks(10)
        yield [b[0].astype("m8[s]"), b[1]], None

    return {"one-based-sparse": one_based, "shorter-second-pass": shorter_second_pass,
            "more-rows-second-pass": more_rows_second_pass, "width-changes": width_changes,
            "nan-in-block": nan_block, "item-not-a-pair": not_a_pair, "mask-half": bad_mask,
            "timedelta-block": timedelta_block}


@pytest.mark.parametrize("case", list(_stream_cases()))
def test_hostile_chunk_streams_raise(case):
    source = _Reiterable(_stream_cases()[case])
    with pytest.raises((ValueError, TypeError)):
        fastmv.opimc(source, 2, max_iter=3, tol=0.0, random_state=0)


def test_one_shot_generator_with_several_passes_is_refused():
    gen = ((_blocks(10), None) for _ in range(2))
    with pytest.raises(ValueError, match="one-shot"):
        fastmv.opimc(gen, 2, max_iter=2)


@pytest.mark.parametrize("bad", [0.5, np.nan, 2.0, -1.0])
@pytest.mark.parametrize("dask_mask", [False, True])
def test_opimc_over_dask_checks_the_mask_like_numpy(bad, dask_mask):
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(0).normal(size=(40, 3))
    mask = np.ones((40, 2))
    mask[5, 0] = bad
    if dask_mask:
        mask = da.from_array(mask, chunks=(10, 2))
    for views in ([X, X.copy()], [da.from_array(X, chunks=(10, 3)), da.from_array(X, chunks=10)]):
        with pytest.raises(ValueError, match="mask"):
            fastmv.opimc(views, 2, mask=mask, random_state=0)


def _precision_changes(p):
    yield [B.astype(np.float32) for B in _blocks(10)], None
    yield _blocks(10, 1), None                      # float64 after a float32 first block


def _fewer_rows_later(p):
    for t in range(3):
        yield _blocks(10 if p == 1 or t < 2 else 4, t), None


@pytest.mark.parametrize("make,match", [
    (_precision_changes, r"X_list.*view 0 block is float64.*float32"),
    (_fewer_rows_later, r"X_list yielded 24 rows in pass 2, 30 in pass 1"),
], ids=["float64-after-float32", "fewer-rows-in-pass-2"])
def test_a_stream_is_fixed_by_its_first_pass(make, match):
    from fastmv.exceptions import InvalidParameterError

    source = _Reiterable(make)
    with pytest.raises(InvalidParameterError, match=match):
        fastmv.opimc(source, 2, max_iter=3, tol=0.0, random_state=0)


def test_a_reiterable_stream_is_iterated_once_per_pass():
    source = _Reiterable(lambda p: iter([(_blocks(10, t), None) for t in range(3)]))
    res = fastmv.opimc(source, 2, random_state=0)            # max_iter=None: several passes
    assert source.passes == res.n_iter >= 1


def test_a_float32_stream_accepts_blocks_float32_holds_exactly():
    def narrow(p):
        yield [B.astype(np.float32) for B in _blocks(10)], None
        yield [B.astype(np.int8) for B in _blocks(10, 1)], None
    assert fastmv.opimc(_Reiterable(narrow), 2, max_iter=2, random_state=0).labels.size == 20
