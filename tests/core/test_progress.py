"""The stage line of :func:`fastmv._core._progress.feedback` holds on a busy machine: a call
that ends past the delay before the timer thread ran still says what it was doing, once."""
from __future__ import annotations

import io
import threading
import time

from fastmv._core import _progress


class _NeverScheduled(threading.Timer):
    """A timer whose thread the scheduler never gets to before the call ends."""

    def start(self):
        pass


def _call(out, delay, pause=0.0):
    def solve():
        """Solve nothing."""

    with _progress.feedback(out, delay=delay, interval=60.0):
        with _progress.public_call(solve, {}):
            time.sleep(pause)


def test_a_call_past_the_delay_writes_its_line_even_if_the_timer_never_ran(monkeypatch):
    monkeypatch.setattr(_progress.threading, "Timer", _NeverScheduled)
    out = io.StringIO()
    _call(out, delay=0.0)
    assert out.getvalue() == "solve: solve nothing\u2026\n"
    out = io.StringIO()
    _call(out, delay=60.0)  # shorter than the delay: nothing
    assert out.getvalue() == ""


def test_the_line_is_written_once_when_the_timer_did_run():
    out = io.StringIO()
    _call(out, delay=0.0, pause=0.3)
    assert out.getvalue() == "solve: solve nothing\u2026\n"
