"""Ctrl-C while fastmv drives threads: the signal is deferred out of the locks of
:mod:`threading` and :mod:`concurrent.futures`, delivered promptly, and the handler that was
installed is the one installed afterwards (fastmv/_core/_interrupts.py)."""
from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time

import pytest

from fastmv._core import _progress
from fastmv._core._interrupts import check_cancelled, deferred_pool, result_of, sigint_deferred
from fastmv._core._threads import _concurrent_launches_safe, task_map

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs POSIX signals")


@pytest.fixture(autouse=True)
def _sigint_raises():
    """Python's own Ctrl-C handler for each test: a run started in the background of a shell
    inherits SIGINT ignored, and the signals these tests send would then do nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_now():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)  # the handler runs in this thread at its next bytecode


def test_a_deferred_ctrl_c_is_raised_when_the_section_ends_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGINT)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred():
            _interrupt_now()
            reached.append("after the signal")  # not raised inside the section
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is before


def test_deliver_raises_at_the_point_the_section_chooses():
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred() as sigint:
            sigint.deliver()  # nothing recorded: nothing raised
            _interrupt_now()
            sigint.deliver()
            pytest.fail("deliver() did not raise the recorded interrupt")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_application_handler_is_called_not_replaced():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with sigint_deferred():
            _interrupt_now()
            assert seen == []
        assert seen == [signal.SIGINT]  # called once, and it does not raise
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_nested_sections_deliver_once_at_the_inner_deliver():
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred():
            with sigint_deferred() as inner:
                _interrupt_now()
                inner.deliver()
            pytest.fail("the inner deliver() did not reach the original handler")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_nothing_is_deferred():
    handlers = []

    def body():
        with sigint_deferred() as sigint:
            handlers.append(signal.getsignal(signal.SIGINT))
            sigint.deliver()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert handlers == [signal.default_int_handler]


def test_a_wait_for_a_task_that_never_ends_is_interrupted_within_a_second():
    never = concurrent.futures.Future()
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred() as sigint:
            result_of(never, sigint)
    assert time.monotonic() - start < 1.2
    timer.join()


def test_ctrl_c_while_waiting_for_a_read_ahead_stops_it_and_leaves_no_thread():
    release = threading.Event()
    before = {t.ident for t in threading.enumerate()}
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with deferred_pool(1) as pool:
            running = pool.submit(release.wait, 30.0)   # the chunk being read ahead
            queued = pool.submit(time.sleep, 30.0)      # never started: cancelled on the way out
            timer.start()
            try:
                pool.result(running)
            finally:
                interrupted = time.monotonic() - start
                release.set()                           # the read ends; the shutdown joins it
    assert interrupted < 1.2
    assert running.result() is True and queued.cancelled()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert {t.ident for t in threading.enumerate()} - before <= {timer.ident}
    timer.join()


def test_a_deferred_pool_returns_results_and_raises_a_tasks_error():
    with deferred_pool(1) as pool:
        assert pool.result(pool.submit(abs, -3)) == 3
        with pytest.raises(ValueError, match="task"):
            pool.result(pool.submit(int, "task"))
        assert pool.result(pool.submit(divmod, 7, 2)) == (3, 1)


def test_result_of_checks_between_slices_and_returns_a_late_result():
    done = concurrent.futures.Future()
    checks = []

    def check():
        checks.append(1)
        if len(checks) == 2:
            done.set_result("late")

    with sigint_deferred() as sigint:
        assert result_of(done, sigint, 0.0, check) == "late"
    assert len(checks) == 2
    failed = concurrent.futures.Future()
    failed.set_exception(TimeoutError("the task's own"))
    with pytest.raises(TimeoutError, match="the task's own"), sigint_deferred() as sigint:
        result_of(failed, sigint)


@pytest.mark.skipif(not _concurrent_launches_safe(), reason="thread-safe Numba layer needed")
def test_ctrl_c_during_a_task_map_stops_every_task_and_restores_the_handler():
    started, stopped = threading.Event(), []

    def task(i):
        started.set()
        try:
            while True:  # a restart that only ends when its caller stops
                check_cancelled()
                time.sleep(0.005)
        finally:
            stopped.append(i)

    before = {t.ident for t in threading.enumerate()}
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with task_map(2) as map_:
            timer.start()
            list(map_(task, range(10_000)))
    assert time.monotonic() - start < 5
    assert started.is_set() and sorted(stopped) == [0, 1]  # the two running ones, no others
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert {t.ident for t in threading.enumerate()} - before <= {timer.ident}
    timer.join()


@pytest.mark.skipif(not _concurrent_launches_safe(), reason="thread-safe Numba layer needed")
def test_a_task_map_gives_results_in_order_and_raises_a_tasks_error():
    with task_map(2) as map_:
        assert list(map_(lambda i: i * i, range(50))) == [i * i for i in range(50)]

        def fail(i):
            if i == 3:
                raise ValueError("task 3")
            return i

        with pytest.raises(ValueError, match="task 3"):
            list(map_(fail, range(8)))
        assert list(map_(abs, [-1, -2])) == [1, 2]  # the pool is still usable


def test_ctrl_c_in_a_public_call_under_feedback_leaves_nothing_behind():
    """The call record, the feedback timer and the log handler are set up and torn down
    whole, whenever the interrupt arrives."""

    def interrupted(delay):
        def solve():
            pass

        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        try:
            timer.start()
            with _progress.feedback(stream=open(os.devnull, "w"), delay=60):
                with _progress.public_call(solve, {}), _progress.verbose_logging(True):
                    time.sleep(1.0)
        except KeyboardInterrupt:
            pass
        timer.join()

    for delay in (0.0, 0.001, 0.01, 0.1):
        interrupted(delay)
        assert _progress._call.get() is None
        assert _progress._handler is None and _progress._handler_users == 0
        shown = [t for t in threading.enumerate() if isinstance(t, threading.Timer)
                 and t.interval == 60]
        for t in shown:  # cancelled: it ends at once instead of waiting out its minute
            t.join(timeout=5)
        assert not [t for t in shown if t.is_alive()]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
