"""Memory known before it is taken: a call states its peak bytes, compares them with what the
machine or its container allows, and refuses before allocating.

A solve whose arrays each fit while their sum does not is otherwise killed by the kernel
part-way (no message, nothing saved), or fails with a bare ``MemoryError`` after minutes of
work. Every solver and building block with a large working set calls :func:`check_memory`
with its peak (a small estimate function in its own folder, the formulas of the cost sections
of docs/algorithms.md) before its first large allocation. The refusal is one line: what needs
the memory, how many GiB, how many are available and what to do instead.

What is available is the smallest of

- ``MemAvailable`` of ``/proc/meminfo`` (memory the kernel can give without swapping);
- the container's limit less its usage: cgroup v2 ``memory.max − memory.current``, or cgroup
  v1 ``memory.limit_in_bytes − memory.usage_in_bytes``;
- the address-space limit ``RLIMIT_AS`` (``ulimit -v``) less the process's current virtual
  size, when one is set.

A user who knows better (swap, memory about to be freed, an estimate that is too cautious for
their data) states the figure, or turns the check off, with :func:`memory_limit` (a context
manager) or the environment variable ``FASTMV_MEMORY_LIMIT`` (``off``, or a size such as
``40GiB``). Estimates below :data:`MIN_CHECKED_BYTES` are not checked (no file is read).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from typing import NamedTuple

from ..exceptions import InsufficientMemoryError

__all__ = ["memory_limit", "available_memory", "check_memory", "Available", "GIB",
           "MIN_CHECKED_BYTES", "LIMIT_ENV", "format_bytes"]

GIB = 2 ** 30
#: Peaks below this are not compared with the machine (a read of /proc on every small call
#: would cost more than the call).
MIN_CHECKED_BYTES = 64 * 2 ** 20
#: The environment variable that states the limit (``off`` / ``none`` disables the check).
LIMIT_ENV = "FASTMV_MEMORY_LIMIT"
#: cgroup "no limit" values are near 2**63.
_UNLIMITED = 2 ** 60

_AUTO = "auto"
_limit = contextvars.ContextVar("fastmv_memory_limit", default=_AUTO)


class Available(NamedTuple):
    """Bytes a call may still allocate, and where the figure comes from."""

    bytes: int | None
    source: str


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40}


def parse_size(value, name: str = "limit"):
    """``None`` / ``"off"`` / ``"none"`` → None (no check), ``"auto"`` → ``"auto"``, a number
    of bytes or a string such as ``"40GiB"``, ``"512M"``, ``"1.5G"`` (binary units) → int."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("off", "none", "0", "false", "no"):
            return None
        if text in ("auto", ""):
            return _AUTO
        match = _SIZE.match(text)
        if match is None:
            raise ValueError(f"{name} must be 'auto', 'off' or a size such as '40GiB', "
                             f"got {value!r}")
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{name} must be 'auto', None/'off' or a positive number of bytes, "
                         f"got {value!r}")
    return int(value)


@contextlib.contextmanager
def memory_limit(limit: str | int | None = "auto") -> Iterator[None]:
    """State how much memory fastmv's calls may take, for the body of a ``with`` block.

    Every solver and building block estimates its peak memory before allocating it and
    refuses with :class:`~fastmv.exceptions.InsufficientMemoryError` when the peak exceeds
    what is available (``MemAvailable``, the container's cgroup limit, ``ulimit -v``). A user
    who knows better states the figure here.

    Parameters
    ----------
    limit : "auto", None, "off", int or str, default "auto"
        ``"auto"``: what the machine and its container allow (the default outside the
        block). ``None`` or ``"off"``: no check (a call too large for the machine then fails
        when it allocates, or is killed by the system). A number of bytes or a size such as
        ``"40GiB"``: the figure the estimates are compared with, whatever the machine says
        (e.g. with swap). The environment variable ``FASTMV_MEMORY_LIMIT`` takes the same
        values and applies outside any block.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> X = np.random.default_rng(0).random((3000, 2))
    >>> with fastmv.memory_limit("100MiB"):      # two 3000 × 3000 arrays at its peak
    ...     fastmv.transition_matrix(X)
    Traceback (most recent call last):
    ...
    fastmv.exceptions.InsufficientMemoryError: transition_matrix() of X ... needs 137 MiB ...
    >>> with fastmv.memory_limit(None):          # no check
    ...     P = fastmv.transition_matrix(X)
    """
    token = _limit.set(parse_size(limit))
    try:
        yield
    finally:
        _limit.reset(token)


def _read_int(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    if text in ("max", ""):
        return None
    try:
        value = int(text.split()[0])
    except ValueError:
        return None
    return None if value >= _UNLIMITED else value


def _meminfo_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_paths():
    """``(version, directory)`` of this process's memory cgroup, most specific first."""
    out = []
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2
            out += [("v2", "/sys/fs/cgroup" + path.rstrip("/")), ("v2", "/sys/fs/cgroup")]
        elif "memory" in controllers.split(","):
            out += [("v1", "/sys/fs/cgroup/memory" + path.rstrip("/")),
                    ("v1", "/sys/fs/cgroup/memory")]
    return out


def _cgroup_available():
    """The container's limit less its usage, or None (no limit, no cgroup)."""
    for version, root in _cgroup_paths():
        if version == "v2":
            limit, used = _read_int(f"{root}/memory.max"), _read_int(f"{root}/memory.current")
        else:
            limit = _read_int(f"{root}/memory.limit_in_bytes")
            used = _read_int(f"{root}/memory.usage_in_bytes")
        if limit is not None:
            return max(limit - (used or 0), 0), f"cgroup {version} limit {limit / GIB:.1f} GiB"
    return None


def _address_space_available():
    """``RLIMIT_AS`` less the process's virtual size, or None when no limit is set."""
    try:
        import resource  # noqa: PLC0415 (POSIX only)
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    used = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - used, 0), f"ulimit -v {soft / GIB:.1f} GiB"


def available_memory() -> Available:
    """Bytes this process may still allocate: the smallest of ``MemAvailable``, the cgroup's
    limit less its usage and ``RLIMIT_AS`` less the virtual size (``bytes=None`` when none
    can be read, e.g. not on Linux)."""
    found = []
    meminfo = _meminfo_available()
    if meminfo is not None:
        found.append((meminfo, "MemAvailable"))
    for figure in (_cgroup_available(), _address_space_available()):
        if figure is not None:
            found.append(figure)
    if not found:
        return Available(None, "unknown")
    return Available(*min(found))


def _stated_limit():
    """The user's figure: the innermost :func:`memory_limit` block, else the environment."""
    value = _limit.get()
    if value == _AUTO:
        env = os.environ.get(LIMIT_ENV)
        if env is not None:
            try:
                value = parse_size(env, LIMIT_ENV)
            except ValueError:
                value = _AUTO  # a bad variable must not break every call: the machine's figure
    return value


def check_memory(needed: float, what: str, remedy: str = "") -> None:
    """Refuse a call whose peak of ``needed`` bytes exceeds what is available.

    Parameters
    ----------
    needed : float
        The call's peak bytes beyond what the caller already holds (the estimate).
    what : str
        What needs it, e.g. ``"emvc() on 3 matrices of 20000 × 20000 (float64)"``.
    remedy : str
        What to do instead (``"pass dtype=float32 (halves it)"``, ...).

    Raises
    ------
    InsufficientMemoryError
        With the needed and available GiB, the remedy and the way to override.
    """
    if needed < MIN_CHECKED_BYTES:
        return
    stated = _stated_limit()
    if stated is None:
        return
    if stated == _AUTO:
        available = available_memory()
    else:
        available = Available(stated, f"as stated with {LIMIT_ENV} or fastmv.memory_limit")
    if available.bytes is None or needed <= available.bytes:
        return
    remedy = f"; {remedy}" if remedy else ""
    raise InsufficientMemoryError(
        f"{what} needs {format_bytes(needed)} at its peak, more than the "
        f"{format_bytes(available.bytes)} available ({available.source}){remedy}; to go on "
        f"regardless, use `with fastmv.memory_limit(None):` or {LIMIT_ENV}=off")


def format_bytes(nbytes) -> str:
    """``"47.7 GiB"``, or ``"137 MiB"`` below one GiB (``"12 KiB"`` below one MiB)."""
    if nbytes >= GIB:
        return f"{nbytes / GIB:.1f} GiB"
    if nbytes >= 2 ** 20:
        return f"{nbytes / 2 ** 20:.0f} MiB"
    return f"{nbytes / 2 ** 10:.0f} KiB"
