"""The shared input validation, result base and thread control."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv._core import _validation as V
from fastmv._core._result import Result
from fastmv._core._threads import effective_n_jobs, thread_limit


def test_check_array_converts_without_mutating():
    X = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = V.check_array(X, "X")
    assert out.dtype == np.float64 and out.flags.c_contiguous
    Xf = np.asfortranarray(np.ones((3, 2), dtype=np.float32))
    assert V.check_array(Xf, "X").dtype == np.float32
    same = np.ones((2, 2))
    assert V.check_array(same, "X", copy=True) is not same
    S = sp.csc_matrix(np.array([[0, 2.0], [1.0, 0]]))
    S.has_sorted_indices = False
    out = V.check_array(S, "X")
    assert sp.isspmatrix_csr(out)


@pytest.mark.parametrize("bad,exc,msg", [
    (np.array([[np.nan]]), ValueError, "NaN"),
    (np.array([[np.inf]]), ValueError, "infinite"),
    (np.zeros((0, 3)), ValueError, "rows"),
    (np.zeros((3, 0)), ValueError, "columns"),
    (np.zeros(3), ValueError, "2-D"),
    (np.array([["a"]]), TypeError, "numeric"),
    (np.array([[1 + 2j]]), TypeError, "real"),
    ("abc", TypeError, "array"),
])
def test_check_array_errors_name_argument(bad, exc, msg):
    with pytest.raises(exc, match=f"X_bad.*{msg}|{msg}.*"):
        V.check_array(bad, "X_bad")
    with pytest.raises(exc) as info:
        V.check_array(bad, "X_bad")
    assert "X_bad" in str(info.value)


def test_check_array_nonnegative_and_nan():
    with pytest.raises(ValueError, match="negative"):
        V.check_array(np.array([[-1.0]]), "X", nonnegative=True)
    with pytest.raises(ValueError, match="negative"):
        V.check_array(sp.csr_matrix(np.array([[-1.0]])), "X", nonnegative=True)
    out = V.check_array(np.array([[np.nan, 1.0]]), "X", allow_nan=True)
    assert np.isnan(out[0, 0])


def test_check_views():
    a, b = np.ones((4, 2)), np.ones((5, 3))
    with pytest.raises(ValueError, match="same number of samples"):
        V.check_views([a, b])
    with pytest.raises(TypeError, match="list of views"):
        V.check_views(a)
    with pytest.raises(ValueError, match=r"X_list\[1\]"):
        V.check_views([a, np.full((4, 2), np.nan)])
    with pytest.raises(ValueError, match="at least 2"):
        V.check_views([a], min_views=2)
    out = V.check_views([a, sp.csr_matrix(a)])
    assert len(out) == 2 and sp.issparse(out[1])


def test_check_pairs():
    assert V.check_pairs(None, "must_link", 5).shape == (0, 2)
    assert V.check_pairs([], "must_link", 5).shape == (0, 2)
    out = V.check_pairs([[0, 1], [2, 3]], "must_link", 5)
    assert out.dtype == np.int64
    with pytest.raises(ValueError, match=r"must_link\[1\].*out of range"):
        V.check_pairs([[0, 1], [2, 5]], "must_link", 5)
    with pytest.raises(ValueError, match=r"cannot_link\[0\].*itself"):
        V.check_pairs([[2, 2]], "cannot_link", 5)
    with pytest.raises(ValueError, match="shape"):
        V.check_pairs([[0, 1, 2]], "must_link", 5)
    with pytest.raises(TypeError, match="integer"):
        V.check_pairs([[0.5, 1]], "must_link", 5)
    # cross-view pairs may repeat an index
    assert V.check_pairs([[2, 2]], "pairs", 3, 4).shape == (1, 2)


def test_scalars_and_labels():
    assert V.check_scalar(1, "C1", low=0) == 1.0
    with pytest.raises(ValueError, match="C1"):
        V.check_scalar(-1, "C1", low=0)
    with pytest.raises(ValueError, match="C1"):
        V.check_scalar(0.0, "C1", low=0, low_inclusive=False)
    with pytest.raises(TypeError, match="C1"):
        V.check_scalar("1", "C1")
    with pytest.raises(ValueError, match="C1"):
        V.check_scalar(float("nan"), "C1")
    with pytest.raises(TypeError, match="k"):
        V.check_int(True, "k")
    with pytest.raises(ValueError, match="n_clusters"):
        V.check_n_clusters(5, 4)
    lab = V.check_partial_labels([0, -1, 2], 3, 3)
    assert lab.tolist() == [0, -1, 2]
    with pytest.raises(ValueError, match=r"labels\[1\]"):
        V.check_partial_labels([0, 3, 1], 3, 3)
    with pytest.raises(ValueError, match="labels"):
        V.check_partial_labels([0, 1], 3, 3)
    assert V.check_dtype(None) is np.float64 and V.check_dtype("float32") is np.float32
    with pytest.raises(ValueError, match="dtype"):
        V.check_dtype(np.int64)
    assert isinstance(V.check_random_state(3), np.random.Generator)
    g = np.random.default_rng(0)
    assert V.check_random_state(g) is g
    with pytest.raises(TypeError, match="random_state"):
        V.check_random_state("seed")


def test_check_transition_matrices():
    P = np.full((3, 3), 1 / 3)
    out = V.check_transition_matrices([P, P])
    assert out[0] is not P
    with pytest.raises(ValueError, match=r"P_list\[1\].*row-stochastic"):
        V.check_transition_matrices([P, P * 2])
    with pytest.raises(ValueError, match=r"P_list\[0\].*square"):
        V.check_transition_matrices([np.full((2, 3), 1 / 3)])
    Q = P.copy()
    Q[0] = [1.5, -0.5, 0.0]
    with pytest.raises(ValueError, match="negative"):
        V.check_transition_matrices([Q])


def test_result_repr_and_threads():
    @dataclasses.dataclass(frozen=True, repr=False)
    class R(Result):
        scale: float

    r = R(labels=np.zeros(3, dtype=int), objective=np.zeros(0), n_iter=0, converged=False,
          scale=1.5)
    assert "ndarray(3,)" in repr(r) and r.to_dict()["scale"] == 1.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.scale = 2.0
    import numba
    before = numba.get_num_threads()
    with thread_limit(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    assert effective_n_jobs(-1) == numba.config.NUMBA_NUM_THREADS
    with pytest.raises(ValueError, match="n_jobs"):
        effective_n_jobs(0)


def test_thread_limit_keeps_blas_on_one_thread_and_restores_it():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fastmv._core._threads import blas_threads

    def blas_threads_now():
        return {d["num_threads"] for d in threadpoolctl.threadpool_info()
                if d["user_api"] == "blas"}

    before = blas_threads_now()
    with thread_limit(None) as n:
        assert blas_threads_now() == {1}
        with blas_threads(True):
            assert blas_threads_now() == ({n} if n > 1 else {1})
        with blas_threads(False):
            assert blas_threads_now() == {1}
        assert blas_threads_now() == {1}
    assert blas_threads_now() == before
    with thread_limit(None, single_threaded_blas=False):
        assert blas_threads_now() == before  # left alone when n_jobs is not given
    with thread_limit(1, single_threaded_blas=False):
        assert blas_threads_now() == {1}
    assert blas_threads_now() == before


def test_overlapping_calls_restore_the_blas_setting_seen_first():
    import threading

    import threadpoolctl

    def blas_threads_now():
        return {d["num_threads"] for d in threadpoolctl.threadpool_info()
                if d["user_api"] == "blas"}

    before = blas_threads_now()
    first_in, second_out = threading.Event(), threading.Event()

    def first():
        with thread_limit(1):
            first_in.set()
            second_out.wait(10)

    def second():
        first_in.wait(10)
        with thread_limit(1):
            pass
        second_out.set()

    for order in ((first, second), (second, first)):
        first_in.clear()
        second_out.clear()
        threads = [threading.Thread(target=f) for f in order]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert blas_threads_now() == before


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "bsr", "csr_array"])
def test_any_sparse_format_becomes_canonical_csr(fmt):
    import scipy.sparse as sp

    X = sp.random(6, 5, density=0.4, format="csr", random_state=1)
    Y = sp.csr_array(X) if fmt == "csr_array" else X.asformat(fmt)
    out = V.check_array(Y, "X")
    assert out.format == "csr" and out.has_canonical_format
    np.testing.assert_allclose(out.toarray(), X.toarray())


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("defect", ["past_width", "negative", "indptr_decreasing",
                                    "indptr_length", "indptr_end"])
def test_malformed_sparse_views_are_refused_naming_the_argument(fmt, defect):
    import scipy.sparse as sp

    X = sp.random(6, 5, density=0.5, format=fmt, random_state=2)
    data, indices, indptr = X.data.copy(), X.indices.copy(), X.indptr.copy()
    if defect == "past_width":
        indices[-1] = X.shape[1 if fmt == "csr" else 0] + 3   # e.g. 1-based indices
    elif defect == "negative":
        indices[0] = -1
    elif defect == "indptr_decreasing":
        indptr[2], indptr[3] = indptr[3], indptr[2] - 1
    elif defect == "indptr_length":
        indptr = indptr[:-1]
    else:
        indptr[-1] += 2
    klass = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    bad = klass(X.shape)
    bad.data, bad.indices, bad.indptr = data, indices, indptr   # bypasses scipy's checks
    saved = (data.copy(), indices.copy(), indptr.copy())
    with pytest.raises(ValueError, match=r"X_list\[0\]"):
        V.check_views([bad], "X_list")
    for a, b in zip((bad.data, bad.indices, bad.indptr), saved):
        np.testing.assert_array_equal(a, b)   # input untouched


def test_duplicate_and_unsorted_indices_are_canonicalised_on_a_copy():
    import scipy.sparse as sp

    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([2, 0, 2]), np.array([0, 3])),
                      shape=(1, 3))
    saved = X.indices.copy()
    out = V.check_array(X, "X")
    np.testing.assert_array_equal(out.toarray(), [[2.0, 0.0, 6.0]])
    np.testing.assert_array_equal(X.indices, saved)


def test_declare_params_names_the_parameter_and_covers_the_signature():
    from numbers import Integral, Real

    from fastmv.exceptions import InvalidParameterError

    @V.declare_params({"X": ["views"], "k": [V.Interval(Integral, 1, None, closed="left")],
                       "tol": [V.Interval(Real, 0, None, closed="left")],
                       "how": [V.Options({"a", "b"}), None], "cb": [callable, None],
                       "flag": ["boolean"]})
    def f(X, k, *, tol=0.0, how="a", cb=None, flag=False):
        return k

    assert f([np.zeros((2, 2))], 3) == 3
    assert f.parameter_constraints["k"]
    for kwargs, name in [({"k": 0}, "k"), ({"k": 2.0}, "k"), ({"k": True}, "k"),
                         ({"k": 1, "tol": -1.0}, "tol"), ({"k": 1, "tol": np.nan}, "tol"),
                         ({"k": 1, "how": "c"}, "how"), ({"k": 1, "cb": 1}, "cb"),
                         ({"k": 1, "flag": 1}, "flag")]:
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of f"):
            f([np.zeros((2, 2))], **kwargs)
    with pytest.raises(TypeError):
        f("not views", 1)
    with pytest.raises(TypeError, match="missing"):
        @V.declare_params({"X": ["views"]})
        def g(X, k):
            return k
