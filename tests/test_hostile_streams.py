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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
