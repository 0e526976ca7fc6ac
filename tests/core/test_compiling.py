"""Numba compiles with Python's cyclic collector paused inside a public call, and the
collector is as the application left it afterwards (:mod:`fastmv._core._compiling`)."""
from __future__ import annotations

import gc
import itertools
import warnings

import numpy as np
import pytest
from numba import njit
from numba.core import event

import fastmv
from fastmv._core import _progress
from fastmv._core._compiling import collector_paused_while_compiling

_names = itertools.count()


def _fresh_kernel():
    """A function Numba has never compiled (a new code object each time: no cache hit)."""
    name = f"kernel_{next(_names)}"
    namespace = {}
    exec(f"def {name}(x):\n    return x * 2.0 + 1.0\n", namespace)
    return njit(cache=False)(namespace[name])


class _Seen(event.Listener):
    """Whether the collector was on at each compilation's start and end (registered after
    the pausing listener, so it sees the state that listener set)."""

    def __init__(self):
        self.starts, self.ends = [], []

    def on_start(self, ev):
        self.starts.append(gc.isenabled())

    def on_end(self, ev):
        self.ends.append(gc.isenabled())


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_a_compilation_inside_the_scope_runs_with_the_collector_off():
    seen = _Seen()
    with collector_paused_while_compiling():
        with event.install_listener("numba:compile", seen):
            assert gc.isenabled()               # nothing compiling: untouched
            assert _fresh_kernel()(1.5) == 4.0
        assert gc.isenabled()                   # on again right after the compilation
    assert seen.starts == [False] and gc.isenabled()


def test_outside_the_scope_nothing_changes():
    seen = _Seen()
    with event.install_listener("numba:compile", seen):
        _fresh_kernel()(1.0)
    assert seen.starts == [True] and seen.ends == [True]


def test_a_collector_the_application_disabled_stays_disabled():
    gc.disable()
    with collector_paused_while_compiling():
        _fresh_kernel()(1.0)
    assert not gc.isenabled()


def test_an_error_inside_a_compilation_leaves_the_collector_on():
    @njit(cache=False)
    def broken(x):
        return x.no_such_attribute

    with pytest.raises(Exception):
        with collector_paused_while_compiling():
            broken(np.ones(2))
    assert gc.isenabled()


def test_nested_scopes_and_an_error_in_the_scope():
    with pytest.raises(RuntimeError):
        with collector_paused_while_compiling():
            with collector_paused_while_compiling():
                _fresh_kernel()(1.0)
            raise RuntimeError("inside")
    assert gc.isenabled()
    listeners = event._registered["numba:compile"]
    assert not any(type(x).__name__ == "_PauseCollector" for x in listeners)


def test_a_public_call_compiles_with_the_collector_off():
    """Solvers' callbacks run inside the public call: a kernel compiled there sees the
    collector off, and the call leaves it on and no listener behind."""
    seen = _Seen()
    rng = np.random.default_rng(0)
    views = [rng.standard_normal((30, 4)), rng.standard_normal((30, 3))]

    def callback(info):
        with event.install_listener("numba:compile", seen):
            _fresh_kernel()(1.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastmv.ConvergenceWarning)   # two iterations only
        fastmv.mvmc(views, 2, [[0, 1]], [[0, 29]], max_iter=2, random_state=0,
                    callback=callback)
    assert seen.starts and not any(seen.starts)
    assert gc.isenabled()
    assert not any(type(x).__name__ == "_PauseCollector"
                   for x in event._registered["numba:compile"])


def test_a_nested_public_call_installs_nothing_of_its_own(monkeypatch):
    calls = []
    real = _progress.collector_paused_while_compiling

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(_progress, "collector_paused_while_compiling", counted)

    def outer():
        """Outer."""

    def inner():
        """Inner."""

    with _progress.public_call(outer, {}):
        with _progress.public_call(inner, {}):
            pass
    assert calls == [1]
