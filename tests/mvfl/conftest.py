"""The MVFL tests run with one BLAS thread."""
import pytest


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """Run these tests with one BLAS thread (threadpoolctl comes with scikit-learn, a test
    dependency). On a CPU-contended machine a multi-threaded OpenBLAS ``potrf`` of the
    339 × 339 Handwritten systems takes 50–1000 ms instead of 1.3 ms, which turned the
    Handwritten test from ~25 s into ~12 min; the tests check mathematics, not BLAS
    threading."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield

