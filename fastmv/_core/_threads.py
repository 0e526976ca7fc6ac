"""Thread control: every public solver takes ``n_jobs`` and runs under :func:`thread_limit`.

Numba's thread pool is sized by ``NUMBA_NUM_THREADS`` (respected as the maximum);
``n_jobs`` lowers the number of threads used for the duration of one call and restores the
previous setting afterwards, so fastmv leaves no global state behind. Kernels reduce with
per-thread partial sums over a fixed partition, so results depend on the thread count only
through floating-point rounding.

BLAS/LAPACK (NumPy's and SciPy's OpenBLAS) has a thread pool of its own, and the two pools
must not run side by side: an OpenBLAS worker keeps spinning for a while after each call, on
the core the next Numba kernel wants, and Numba's workers spin likewise after a kernel. Solver
calls therefore run their BLAS calls on one thread (through threadpoolctl, a dependency) and
their Numba kernels on ``n_jobs`` threads; the parallel work is in the kernels, and the few
large LAPACK calls that gain from more threads ask for them (:func:`blas_threads`). OPIMC,
whose distance GEMMs do not alternate with parallel kernels, keeps BLAS threads as configured.
docs/records/perf.md has the measurements behind this policy.

The BLAS limit is process-wide, so calls that overlap in several Python threads share it:
the limits in force when the first of them starts are saved, and restored when the last of
them ends (a lock and a count), so no call leaves the host process with a changed BLAS
setting. Numba's thread count is per Python thread and is restored by each call.

Work that alternates medium-sized BLAS calls and Numba kernels every few milliseconds (MVMC's
passes over ``S`` and its per-view gradient steps) suffers most from that competition: an
OpenBLAS worker keeps spinning for a while after each call, on the core a Numba thread wants
next. :func:`task_map` runs such work as independent tasks on Python threads instead, each
single-threaded in BLAS and Numba, so no pool ever waits against another (needs a thread-safe
Numba layer, ``omp`` or ``tbb``; otherwise the tasks run in turn).
"""
from __future__ import annotations

import collections
import contextlib
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numba
from threadpoolctl import ThreadpoolController

from fastmv.kernels._partition import SERIAL_BELOW, start_thread_pool

from ._interrupts import cancel_scope, check_cancelled, result_of, sigint_deferred
from ._validation import check_n_jobs


def effective_n_jobs(n_jobs) -> int:
    """Number of threads ``n_jobs`` means here (``None`` → the current Numba setting)."""
    n_jobs = check_n_jobs(n_jobs)
    max_threads = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None:
        return numba.get_num_threads()
    if n_jobs < 0:
        return max(1, max_threads + 1 + n_jobs)
    return min(n_jobs, max_threads)


_blas_lock = threading.RLock()
_blas_users = 0
_blas_saved = None
_controller = None
_controller_modules = -1


def _blas_controller(refresh):
    """The BLAS libraries loaded now. Scanning the loaded libraries costs more than a whole
    small OPIMC pass (docs/records/perf.md "Figures behind the code's choices"), so the scan is
    repeated only by the first of overlapping calls and only when modules were imported since
    the last one: a BLAS library loaded later (e.g. SciPy's OpenBLAS, which Numba's ``np.dot``
    calls) comes with an import and would otherwise run unlimited."""
    global _controller, _controller_modules
    n_modules = len(sys.modules)
    if _controller is None or (refresh and n_modules != _controller_modules):
        _controller = ThreadpoolController()
        _controller_modules = n_modules
    return _controller


@contextlib.contextmanager
def _blas_limit(n_threads):
    """Limit BLAS to ``n_threads`` for the body; see the module docstring for overlapping
    calls (the limits seen by the first entrant are restored by the last one to leave)."""
    global _blas_users, _blas_saved
    libs = at_entry = None
    try:
        # counted and limited together, or not at all: a Ctrl-C in between would leave a
        # count that no call gives back, and the limits of every later call unrestored
        with sigint_deferred(), _blas_lock:
            controller = _blas_controller(refresh=_blas_users == 0)
            found = [lib for lib in controller.lib_controllers if lib.user_api == "blas"]
            entry = [lib.num_threads for lib in found]
            if _blas_users == 0:
                _blas_saved = entry
            _blas_users += 1
            libs, at_entry = found, entry
            for lib in libs:
                lib.set_num_threads(n_threads)
        yield
    finally:
        if libs is not None:
            with sigint_deferred(), _blas_lock:
                _blas_users -= 1
                # the last one out restores what the first one in saw; a nested limit (e.g.
                # blas_threads inside a solver call) gives back what it found
                restore = _blas_saved if _blas_users == 0 else at_entry
                for lib, threads in zip(libs, restore):
                    lib.set_num_threads(threads)
                if _blas_users == 0:
                    _blas_saved = None


@contextlib.contextmanager
def thread_limit(n_jobs: int | None, *, single_threaded_blas: bool = True) -> Iterator[int]:
    """Run the body with Numba limited to ``effective_n_jobs(n_jobs)`` threads and BLAS to
    one thread (see the module docstring); both are restored afterwards.

    Parameters
    ----------
    n_jobs : int or None
        Threads for the Numba kernels: ``None`` keeps the current setting, a negative value
        counts back from ``NUMBA_NUM_THREADS`` (``-1``: all).
    single_threaded_blas : bool, default True
        ``False`` is for solvers whose BLAS calls do not alternate with parallel kernels
        (OPIMC): BLAS is then limited to the same number of threads when ``n_jobs`` is given,
        and left alone otherwise.

    Yields
    ------
    int
        The number of Numba threads in force inside the body.

    Examples
    --------
    >>> import numba
    >>> from fastmv import thread_limit
    >>> before = numba.get_num_threads()
    >>> with thread_limit(1) as n:
    ...     n, numba.get_num_threads()
    (1, 1)
    >>> numba.get_num_threads() == before
    True
    """
    n = effective_n_jobs(n_jobs)
    previous = numba.get_num_threads()
    numba.set_num_threads(n)
    if single_threaded_blas:
        blas: contextlib.AbstractContextManager = _blas_limit(1)
    else:
        blas = _blas_limit(n) if n_jobs is not None else contextlib.nullcontext()
    try:
        with blas:
            yield n
    finally:
        numba.set_num_threads(previous)


def blas_threads(enabled=True):
    """Inside :func:`thread_limit`, let BLAS use the call's ``n_jobs`` threads for one large
    LAPACK/BLAS call (e.g. a full SVD of an ``n × n`` matrix with ``n`` in the thousands),
    where that pays for the spinning workers it leaves behind. A no-op when ``enabled`` is
    false or with one thread."""
    n = numba.get_num_threads()
    if not enabled or n < 2:
        return contextlib.nullcontext()
    return _blas_limit(n)


# Below this much work a kernel call runs on one thread (the one threshold of every family).
PARALLEL_MIN_WORK = SERIAL_BELOW


@contextlib.contextmanager
def serial_when_small(work, min_work=PARALLEL_MIN_WORK):
    """Run the body on one Numba thread when ``work < min_work`` (restored afterwards)."""
    if work >= min_work or numba.get_num_threads() == 1:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def use_serial_kernel(work, min_work=PARALLEL_MIN_WORK):
    """Whether a call of ``work`` runs a kernel's serial copy (``*_serial``, the same result
    bit for bit) instead of its ``parallel=True`` kernel: below ``min_work`` or with one Numba
    thread. A call that runs only serial copies never compiles a parallel kernel, which costs
    more to compile than a small problem costs to solve."""
    return work < min_work or numba.get_num_threads() == 1


def _concurrent_launches_safe():
    """Whether Numba's threading layer accepts parallel launches from several Python threads
    at once (``omp`` and ``tbb`` do; ``workqueue`` does not)."""
    try:
        return numba.threading_layer() in ("omp", "tbb")
    except ValueError:  # no parallel kernel has run yet: run a trivial one to choose the layer
        start_thread_pool(1)
        return numba.threading_layer() in ("omp", "tbb")


@contextlib.contextmanager
def task_map(n_threads):
    """A ``map`` that runs independent, GIL-releasing tasks on ``n_threads`` Python threads,
    each with one Numba thread, while BLAS is limited to one thread; the builtin ``map`` when
    that is not possible (one thread, or a Numba threading layer that is not thread-safe).

    For work made of medium-sized BLAS calls and Numba kernels that alternate every few
    milliseconds: run that way, no thread pool ever busy-waits against another, which is
    faster than letting BLAS and Numba each use every core in turn (docs/records/perf.md
    "Thread policy"). Results
    come back in input order, so a caller that reduces them in that order gets results that do
    not depend on the scheduling.
    """
    if n_threads < 2 or not _concurrent_launches_safe():
        yield map
        return

    cancel = threading.Event()

    def one_thread(fn):
        def run(item):
            numba.set_num_threads(1)  # thread-local: affects this pool thread only
            with cancel_scope(cancel):
                check_cancelled()
                return fn(item)
        return run

    with _blas_limit(1):
        with sigint_deferred():
            pool = ThreadPoolExecutor(max_workers=n_threads)
        try:
            yield lambda fn, items: _ordered_results(pool, one_thread(fn), items)
        except BaseException:
            # the caller stopped (Ctrl-C, an error in one task): tasks still running stop at
            # their next check instead of running to the end while the pool shuts down
            with sigint_deferred():
                cancel.set()
            raise
        finally:
            # a Ctrl-C during the shutdown is delivered once the workers have stopped
            with sigint_deferred():
                pool.shutdown(wait=True, cancel_futures=True)


def _ordered_results(pool, fn, items):
    """``fn(item)`` for every item as tasks on ``pool``; yields the results in the order of
    ``items``, the first failure raised in its turn. The main thread submits and waits under
    :func:`~fastmv._core._interrupts.sigint_deferred` (a Ctrl-C then reaches it between two
    slices of a wait, never inside the pool's locks), and yields outside it."""
    futures = collections.deque()
    try:
        with sigint_deferred() as sigint:
            for item in items:
                futures.append(pool.submit(fn, item))
                sigint.deliver()
        while futures:
            with sigint_deferred() as sigint:
                future = futures.popleft()
                try:
                    value, error = result_of(future, sigint), None
                except Exception as exc:  # the task's: raised below, outside the deferral
                    value, error = None, exc
                del future
            if error is not None:
                raise error
            yield value
    finally:
        if futures:  # stopped early (an error, Ctrl-C, or the caller stopped reading)
            with sigint_deferred():
                for future in futures:
                    future.cancel()
