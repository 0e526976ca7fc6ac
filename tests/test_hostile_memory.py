"""Memory known before it is taken: every solver and block refuses a call whose peak exceeds
what is available, before allocating it, with the needed and available sizes and a remedy;
the override lets it go on; the estimates are honest (compared with the measured peak).

The refusals are tested without allocating: the "available" figure is patched (and the
floor below which nothing is checked lowered), or the inputs are views of no memory
(``np.broadcast_to``) at sizes past any machine. The cases that must run under an
address-space limit, or measure a peak, run in a child process.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

import fastmv
from fastmv import simulate
from fastmv._blocks import _peak as blocks_peak
from fastmv._core import _memory
from fastmv._emvc import _peak as emvc_peak
from fastmv.exceptions import InsufficientMemoryError, InvalidParameterError
from tests.solvers import cases, declaring

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2 ** 30


def _child(code, timeout=120, env=None):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           **(env or {})}
    env.pop(_memory.LIMIT_ENV, None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def tight(monkeypatch):
    """Every estimate checked (no floor) against 1 KiB available."""
    monkeypatch.delenv(_memory.LIMIT_ENV, raising=False)
    monkeypatch.setattr(_memory, "MIN_CHECKED_BYTES", 0)
    monkeypatch.setattr(_memory, "available_memory",
                        lambda: _memory.Available(1024, "patched"))


def _figures(message):
    """(needed, available) in bytes from a refusal's message."""
    sizes = re.findall(r"([0-9.]+) (GiB|MiB|KiB)", message)
    assert len(sizes) >= 2, message
    unit = {"GiB": GIB, "MiB": 2 ** 20, "KiB": 2 ** 10}
    return [float(v) * unit[u] for v, u in sizes[:2]]


# --------------------------------------------------------------------------- the machinery
def test_parse_size_and_the_stated_limit(monkeypatch):
    assert _memory.parse_size("40GiB") == 40 * GIB
    assert _memory.parse_size("512M") == 512 * 2 ** 20
    assert _memory.parse_size("1.5g") == int(1.5 * GIB)
    assert _memory.parse_size(1000) == 1000
    assert _memory.parse_size("off") is None and _memory.parse_size(None) is None
    assert _memory.parse_size("auto") == "auto"
    for bad in ("lots", -1, 0, True, [1]):
        with pytest.raises(ValueError):
            _memory.parse_size(bad)
    monkeypatch.setenv(_memory.LIMIT_ENV, "3GiB")
    assert _memory._stated_limit() == 3 * GIB
    with fastmv.memory_limit(None):                  # the block wins over the environment
        assert _memory._stated_limit() is None
        with fastmv.memory_limit("1MiB"):
            assert _memory._stated_limit() == 2 ** 20
        assert _memory._stated_limit() is None
    assert _memory._stated_limit() == 3 * GIB
    monkeypatch.setenv(_memory.LIMIT_ENV, "nonsense")   # a bad variable: the machine's figure
    assert _memory._stated_limit() == "auto"
    with pytest.raises(ValueError, match="40GiB"):
        with fastmv.memory_limit("a lot"):
            pass


def test_available_memory_is_the_smallest_figure(monkeypatch):
    real = _memory.available_memory()
    assert real.bytes is None or real.bytes > 0
    monkeypatch.setattr(_memory, "_meminfo_available", lambda: 20 * GIB)
    monkeypatch.setattr(_memory, "_cgroup_available", lambda: (5 * GIB, "cgroup v2 limit"))
    monkeypatch.setattr(_memory, "_address_space_available", lambda: None)
    assert _memory.available_memory() == (5 * GIB, "cgroup v2 limit")
    monkeypatch.setattr(_memory, "_address_space_available", lambda: (GIB, "ulimit -v"))
    assert _memory.available_memory() == (GIB, "ulimit -v")
    monkeypatch.setattr(_memory, "_meminfo_available", lambda: None)
    monkeypatch.setattr(_memory, "_cgroup_available", lambda: None)
    monkeypatch.setattr(_memory, "_address_space_available", lambda: None)
    assert _memory.available_memory().bytes is None       # nothing known: nothing refused
    _memory.check_memory(10 ** 15, "anything")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cgroup_limit_less_usage(tmp_path, monkeypatch, version):
    files = ({"memory.limit_in_bytes": 6 * GIB, "memory.usage_in_bytes": 2 * GIB}
             if version == "v1" else {"memory.max": 6 * GIB, "memory.current": 2 * GIB})
    for name, value in files.items():
        (tmp_path / name).write_text(f"{value}\n")
    monkeypatch.setattr(_memory, "_cgroup_paths", lambda: [(version, str(tmp_path))])
    assert _memory._cgroup_available() == (4 * GIB, f"cgroup {version} limit 6.0 GiB")
    unlimited = "max" if version == "v2" else str(2 ** 63 - 4096)
    (tmp_path / next(iter(files))).write_text(unlimited + "\n")
    assert _memory._cgroup_available() is None


def test_small_estimates_read_nothing(monkeypatch):
    def fail():
        raise AssertionError("read the machine's figures for a small estimate")
    monkeypatch.setattr(_memory, "available_memory", fail)
    _memory.check_memory(_memory.MIN_CHECKED_BYTES - 1, "small")


def test_the_refusal_is_one_line_with_both_figures_a_remedy_and_the_override(tight):
    with pytest.raises(InsufficientMemoryError) as info:
        _memory.check_memory(3 * GIB, "thing()", "use less")
    message = str(info.value)
    assert "\n" not in message
    assert "thing() needs 3.0 GiB" in message and "1 KiB available (patched)" in message
    assert "use less" in message and "fastmv.memory_limit(None)" in message
    assert _memory.LIMIT_ENV in message
    assert isinstance(info.value, MemoryError) and isinstance(info.value, InvalidParameterError)


# ------------------------------------------------------------------ every solver and block
def _views(n=30, d=(4, 3), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.random((n, k)) for k in d]


def _solver_calls():
    """Every solver's calls (``refusal_calls`` of tests/<solver>/cases.py) and the blocks'."""
    views = _views()
    y = np.repeat([0, 1, 2], 10)
    P = [fastmv.transition_matrix(X) for X in views]
    calls = {}
    for name in declaring("refusal_calls"):
        calls.update(cases(name).refusal_calls(views, y, P))
    return {
        **calls,
        "kmeans": lambda: fastmv.kmeans(views[0], 3),
        "transition_matrix": lambda: fastmv.transition_matrix(views[0]),
        "spectral_clustering": lambda: fastmv.spectral_clustering(P[0] + P[0].T, 3),
        "spectral_embedding": lambda: fastmv.spectral_embedding(P[0] + P[0].T, 3),
        "markov_spectral_clustering": lambda: fastmv.markov_spectral_clustering(P[0], 3),
        "pairs_from_labels": lambda: simulate.pairs_from_labels(y),
    }


@pytest.mark.filterwarnings("ignore::fastmv.ConvergenceWarning")
@pytest.mark.parametrize("name", list(_solver_calls()))
def test_every_solver_and_block_refuses_before_allocating(tight, name):
    with fastmv.memory_limit(None):
        call = _solver_calls()[name]
    with pytest.raises(InsufficientMemoryError):
        call()                                         # modules imported before the count
    tracemalloc.start()
    try:
        with pytest.raises(InsufficientMemoryError, match=r"needs .* at its peak") as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "\n" not in message and "1 KiB available (patched)" in message
    needed, available = _figures(message)
    assert needed > available
    assert peak < 4 * 2 ** 20                          # refused before the work began
    with fastmv.memory_limit(None):                    # the override: the call goes on
        call()


def test_the_environment_variable_lets_a_call_go_on(tight, monkeypatch):
    X = _views()[0]
    with pytest.raises(InsufficientMemoryError):
        fastmv.transition_matrix(X)
    monkeypatch.setenv(_memory.LIMIT_ENV, "off")
    assert fastmv.transition_matrix(X).shape == (30, 30)
    monkeypatch.setenv(_memory.LIMIT_ENV, "1GiB")      # a stated figure replaces the machine's
    assert fastmv.transition_matrix(X).shape == (30, 30)


def _empty_square(n):
    """A dense ``n × n`` float64 array of no memory (every row the same view)."""
    return np.broadcast_to(np.zeros((1, 1)), (n, n))


@pytest.mark.parametrize("name", ["emvc", "spectral_clustering", "spectral_embedding",
                                  "markov_spectral_clustering", "pairs_from_labels",
                                  "transition_matrix", "EMVC.fit"])
def test_sizes_past_any_machine_are_refused_at_once(monkeypatch, name):
    """The real figures: no patch, inputs far past any machine (10⁶ samples: terabytes)."""
    monkeypatch.delenv(_memory.LIMIT_ENV, raising=False)
    n = 10 ** 6
    calls = {
        "emvc": lambda: fastmv.emvc([_empty_square(n)] * 3, 0.01, 0.01),
        "spectral_clustering": lambda: fastmv.spectral_clustering(_empty_square(n), 2),
        "spectral_embedding": lambda: fastmv.spectral_embedding(_empty_square(n), 2),
        "markov_spectral_clustering":
            lambda: fastmv.markov_spectral_clustering(_empty_square(n), 2),
        "pairs_from_labels": lambda: simulate.pairs_from_labels(np.zeros(n, np.int64)),
        "transition_matrix": lambda: fastmv.transition_matrix(np.zeros((n, 2))),
        "EMVC.fit": lambda: fastmv.EMVC(2).fit([np.zeros((n, 2))] * 3),
    }
    start = time.process_time()
    with pytest.raises(InsufficientMemoryError, match=r"needs [0-9.]+ GiB at its peak"):
        calls[name]()
    assert time.process_time() - start < 5


def test_spectral_estimate_counts_a_conversion():
    assert blocks_peak.dense_spectral_peak_bytes(100, convert=True) == 3 * 100 * 100 * 8
    assert blocks_peak.dense_spectral_peak_bytes(100) == 2 * 100 * 100 * 8


def test_emvc_estimate_follows_the_docs_state_count():
    """``3m + 3`` arrays of state (docs/algorithms.md §3.7), one for the settle check; float32
    halves the state."""
    n = 1000
    nn = n * n
    base = emvc_peak.peak_bytes(3, n, 8, settle=False)
    assert base - emvc_peak.peak_bytes(2, n, 8, settle=False) == 3 * nn * 8
    assert emvc_peak.peak_bytes(3, n, 8) - base == nn * 8
    assert emvc_peak.peak_bytes(3, n, 4, settle=False) < 0.75 * base


# ----------------------------------------------------------------- the must-show, in children
_EMVC_20000 = """
import sys, time
limit = {limit}
if limit:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
start = time.perf_counter()
import numpy as np
import fastmv
views = [np.random.default_rng(v).random((20000, 5)) for v in range(3)]
try:
    fastmv.EMVC(2).fit(views)
except fastmv.exceptions.InsufficientMemoryError as exc:
    print("REFUSED", exc)
print("SECONDS", time.perf_counter() - start)
"""


@pytest.mark.parametrize("limit_gib", [None, 6])
def test_emvc_20000_is_refused_in_seconds_with_and_without_an_address_space_limit(limit_gib):
    needed = 3 * 20000.0 ** 2 * 8 + emvc_peak.peak_bytes(3, 20000, 8)
    available = _memory.available_memory().bytes
    if limit_gib is None and (available is None or available >= needed):
        pytest.skip("this machine could hold EMVC at n = 20000")
    limit = 0 if limit_gib is None else limit_gib * GIB
    out = _child(_EMVC_20000.format(limit=limit), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "REFUSED" in out.stdout, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("REFUSED"))
    got_needed, got_available = _figures(line)
    assert got_needed > 60 * GIB and got_available < needed
    if limit_gib:
        assert got_available <= limit_gib * GIB and "ulimit -v 6.0 GiB" in line
    seconds = float(out.stdout.split("SECONDS")[1])
    assert seconds < 10


_PAST_THE_MACHINE = """
import resource
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import numpy as np, scipy.sparse as sp
import fastmv
from fastmv import simulate
n = 200000
square = np.broadcast_to(np.zeros((1, 1)), (n, n))
views = [sp.csr_matrix((10 ** 7, 300)) for _ in range(3)]
calls = {{
    "transition_matrix": lambda: fastmv.transition_matrix(np.zeros((n, 5))),
    "mvmc": lambda: fastmv.mvmc(views, 2, [[0, 1]], [[0, 2]], k=300, normalize="l2"),
    "spectral_clustering": lambda: fastmv.spectral_clustering(square, 2),
    "pairs_from_labels": lambda: simulate.pairs_from_labels(np.zeros(n, np.int64)),
}}
for name, call in calls.items():
    try:
        call()
    except fastmv.exceptions.InsufficientMemoryError as exc:
        print("REFUSED", name, exc)
"""


def test_blocks_and_mvmc_past_the_machine_are_refused_under_an_address_space_limit():
    out = _child(_PAST_THE_MACHINE.format(limit=6 * GIB), timeout=120)
    assert out.returncode == 0, out.stderr
    refused = [x for x in out.stdout.splitlines() if x.startswith("REFUSED")]
    assert [x.split()[1] for x in refused] == ["transition_matrix", "mvmc",
                                               "spectral_clustering", "pairs_from_labels"]
    for line in refused:
        needed, available = _figures(line)
        assert needed > 24 * GIB and available <= 6 * GIB and "ulimit -v" in line


# ------------------------------------------------------------------- honest estimates
_MEASURE = """
import warnings
import numpy as np
import fastmv
from fastmv import simulate
from fastmv._blocks import _peak as bp
from fastmv._emvc import _peak as ep
warnings.simplefilter("ignore")


def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024


def case(n):
    rng = np.random.default_rng(0)
    if {name!r} == "emvc":
        P = [fastmv.transition_matrix(rng.random((n, 4)), kernel="gaussian") for _ in range(3)]
        return (lambda: fastmv.emvc(P, 0.01, 0.01, n_clusters=3, max_iter=3, random_state=0),
                ep.peak_bytes(3, n, 8))
    if {name!r} == "transition_matrix":
        X = rng.random((n, 10))
        return lambda: fastmv.transition_matrix(X), bp.transition_peak_bytes(n, 10, 8)
    if {name!r} == "spectral_clustering":
        S = fastmv.transition_matrix(rng.random((n, 3)), kernel="gaussian")
        S = (S + S.T) / 2
        return (lambda: fastmv.spectral_clustering(S, 3, random_state=0),
                bp.dense_spectral_peak_bytes(n))
    y = rng.integers(0, 3, n)
    return lambda: simulate.pairs_from_labels(y), simulate._pairs_peak_bytes(n)


call, _ = case(50)
call()                                   # compiled before the measurement
call, estimate = case({n})
base = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")                        # VmHWM from here
call()
print("RATIO", estimate / (status("VmHWM:") - base))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux only")
@pytest.mark.parametrize("name, n", [("emvc", 1000), ("transition_matrix", 2000),
                                     ("spectral_clustering", 1500),
                                     ("pairs_from_labels", 1500)])
def test_estimates_are_within_a_factor_of_the_measured_peak(name, n):
    """Peak RSS growth of the call (``VmHWM`` reset before it) against the estimate; glibc's
    mmap threshold is fixed so that memory freed earlier is returned, not reused unseen."""
    out = _child(_MEASURE.format(name=name, n=n), timeout=180,
                 env={"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert out.returncode == 0, out.stderr
    ratio = float(out.stdout.split("RATIO")[1])
    assert 0.8 <= ratio <= 2.0, ratio


def test_estimates_scale_as_documented():
    """The n × n blocks grow as n², the pairs as l², OPIMC not with n beyond its labels."""
    from fastmv._opimc import _peak as opimc_peak  # noqa: PLC0415

    for f in (lambda n: blocks_peak.transition_peak_bytes(n, 5, 8),
              lambda n: blocks_peak.dense_spectral_peak_bytes(n),
              lambda n: emvc_peak.peak_bytes(3, n, 8),
              simulate._pairs_peak_bytes):
        assert 3.9 < f(20000) / f(10000) < 4.1
    small, large = opimc_peak.peak_bytes(10 ** 5, 50, 1000, 5), opimc_peak.peak_bytes(
        10 ** 7, 50, 1000, 5)
    assert large - small < 40 * 10 ** 7                  # 32 bytes a sample, nothing more
    assert blocks_peak.kmeans_peak_bytes(1000, 10, nnz=500) < blocks_peak.kmeans_peak_bytes(
        1000, 10)
