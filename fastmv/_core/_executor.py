"""Row-block tasks on any :class:`concurrent.futures.Executor`, results back in a fixed order.

The work that fastmv already splits into independent row-block tasks with an ordered
reduction (MVMC's passes over ``S`` and its products with ``S``, k-means' Lloyd steps) can run
on an executor the caller provides: a ``ThreadPoolExecutor``, a ``ProcessPoolExecutor``, or
the one a ``distributed.Client`` hands out (``client.get_executor()``). :class:`BlockMap` is
the one place that talks to it:

- task functions are top-level (picklable) and are called as ``fn(item, *args)``; results
  come back in the order of the items, so a caller that reduces them in that order gets the
  same floating-point result as the in-process thread path, whatever the scheduling;
- broadcast data (bases, factors, centers) is sent once per :meth:`BlockMap.map` call, or
  once per BlockMap for data given to :meth:`BlockMap.keep`: for a Dask executor it is
  scattered to the workers and the tasks carry only its key; for any other executor a
  task carries a plain reference (free for threads, pickled with each task for processes);
- at most ``window`` tasks are in flight per map, so the results waiting for their turn stay
  bounded; a task that fails (or a worker that dies after Dask gave up retrying) raises
  :class:`RuntimeError` naming the task, with the original error as its cause.

Dask is imported only when the executor is Dask's (its module is checked by name).
"""
from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import contextlib
import pickle
import threading

import numba
import numpy as np

from ._interrupts import result_of, sigint_deferred

__all__ = ["BlockMap", "open_block_map", "map_blocks", "is_dask_executor"]

# Tasks submitted ahead of the one whose result is awaited (per map call): enough to keep a
# few workers busy, few enough that the results waiting for their turn stay small.
_WINDOW = 16
# Arguments that pickle to fewer bytes than this travel inline with every task; larger ones
# are sent once per map call (scattered on Dask), which costs a round trip of its own.
_INLINE_MAX_BYTES = 1 << 16
# Seconds a wait for one task's result lasts before the executor's workers are checked.
_POLL_SECONDS = 1.0


def is_dask_executor(executor) -> bool:
    """Whether ``executor`` is a ``distributed`` client executor (without importing Dask)."""
    return (type(executor).__module__.split(".")[0] == "distributed"
            and hasattr(executor, "_client"))


def payload_bytes(obj) -> int:
    """Bytes ``obj`` takes when pickled (protocol 5; array buffers are counted, not copied)."""
    buffers = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return len(head) + sum(b.raw().nbytes for b in buffers)


class _Broadcast:
    """Data scattered to Dask workers, pickled in-band so that its arrays are allocated anew
    (aligned) where it is unpickled, once per worker.

    Dask ships arrays out of band, as slices of its message frames, and a slice can start at
    any byte: an array that is not aligned to its itemsize takes other code paths (NumPy
    leaves BLAS for its own loops, Numba compiles another specialisation) that round
    differently, so a task on a worker would not give the thread path's bits. Tasks receive
    the wrapper and :func:`_aligned` unwraps it.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        return _unpickle_broadcast, (pickle.dumps(self.value, protocol=pickle.HIGHEST_PROTOCOL),)


def _unpickle_broadcast(data):
    return _Broadcast(pickle.loads(data))


def _aligned(obj):
    """``obj`` with :class:`_Broadcast` wrappers unwrapped and every NumPy array that is not
    aligned (inside tuples, named tuples, lists and dicts, at any depth) replaced by an
    aligned copy; whatever needs no change is returned as is (the same object)."""
    if isinstance(obj, _Broadcast):
        return _aligned(obj.value)
    if isinstance(obj, np.ndarray):
        return obj if obj.flags.aligned else obj.copy(order="K")
    if isinstance(obj, (tuple, list)):
        items = [_aligned(x) for x in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        if isinstance(obj, list):
            return items
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        items = {k: _aligned(v) for k, v in obj.items()}
        return obj if all(items[k] is v for k, v in obj.items()) else items
    return obj


def _run_task(fn, item, *args):
    """Run one task with one Numba thread (thread-local), as the thread path runs its tasks:
    the task's share of the work is the parallelism, and the kernels' fixed partitions keep
    the result the same for any thread count. Arrays arrive aligned (:func:`_aligned`), as
    the thread path's are."""
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return fn(_aligned(item), *_aligned(args))
    finally:
        numba.set_num_threads(previous)


class BlockMap:
    """Maps row-block tasks over an executor in a fixed order (see the module docstring).

    Parameters
    ----------
    executor : concurrent.futures.Executor
        Any executor; a ``distributed`` ``ClientExecutor`` gets broadcast data scattered.
    window : int, optional
        Tasks in flight per :meth:`map` call (default 16).

    Attributes
    ----------
    stats : dict
        Counters of what was shipped: ``maps`` (map calls), ``tasks``, ``broadcast_bytes`` (data
        sent once per map
        or per BlockMap, counted once however many workers receive it), ``task_bytes``
        (what travels with the tasks themselves) and ``result_bytes`` (pickled sizes).
    """

    def __init__(self, executor, window=None):
        self.executor = executor
        self.window = int(_WINDOW if window is None else window)
        self._client = executor._client if is_dask_executor(executor) else None
        self._kept = {}  # id(value) -> (value, handle): the value is held so its id stays
        self._lock = threading.Lock()
        self.stats = {"maps": 0, "tasks": 0, "broadcast_bytes": 0, "task_bytes": 0,
                      "result_bytes": 0}

    def _count(self, key, nbytes):
        with self._lock:
            self.stats[key] += nbytes

    def _send(self, values, broadcast):
        """Handles for ``values``: Dask futures (scattered now) or the values themselves."""
        for value in values:
            self._count("broadcast_bytes", payload_bytes(value))
        if self._client is None:
            return list(values)
        try:
            return self._client.scatter([_Broadcast(v) for v in values], broadcast=broadcast,
                                        hash=False)
        except Exception as exc:
            raise RuntimeError(f"sending {len(values)} array(s) to the workers of the executor "
                               f"failed: {type(exc).__name__}: {exc}") from exc

    def keep(self, value):
        """Send ``value`` to every worker now, once for the lifetime of this BlockMap: later
        :meth:`map` calls given the same object refer to it instead of sending it again."""
        self.keep_each([value], broadcast=True)

    def keep_each(self, values, broadcast=False):
        """Send several values once for the lifetime of this BlockMap and return their
        handles, for use inside task items (e.g. one row block of the data per task). Without
        ``broadcast`` each value goes to one worker (Dask spreads them), and a task reading it
        is scheduled there."""
        handles = self._send(values, broadcast)
        with self._lock:
            for value, handle in zip(values, handles):
                self._kept[id(value)] = (value, handle)
        return handles

    def _handles(self, args):
        """Per-call handles of ``args``: kept ones, small ones inline, the rest sent now."""
        handles, sent = [], []
        for arg in args:
            with self._lock:
                kept = self._kept.get(id(arg))
            if kept is not None and kept[0] is arg:
                handles.append(kept[1])
            elif payload_bytes(arg) < _INLINE_MAX_BYTES:
                handles.append(arg)
            else:
                handle = self._send([arg], broadcast=True)[0]
                sent.append(handle)
                handles.append(handle)
        return handles, sent

    def map(self, fn, items, *args):
        """``fn(item, *args)`` for every item, as tasks on the executor; yields the results in
        the order of ``items``.

        ``fn`` must be a top-level function. ``args`` are the same for every task and are sent
        once for this call (or not at all when given to :meth:`keep` before); items travel
        with their task and may hold handles from :meth:`keep_each`.
        """
        self._count("maps", 1)
        handles, sent = self._handles(args)
        # what travels with every task: small arguments inline, keys of the scattered ones
        # (other executors get references to the large ones: pickled per task only by a
        # process pool)
        inline = sum(_item_bytes(h) if _is_future(h) or payload_bytes(h) < _INLINE_MAX_BYTES
                     else 0 for h in handles)
        pending = collections.deque()
        items = iter(items)

        def submit():
            for item in items:
                self._count("tasks", 1)
                self._count("task_bytes", inline + _item_bytes(item))
                try:
                    future = self.executor.submit(_run_task, fn, item, *handles)
                except Exception as exc:
                    # a pool that lost a worker between two maps refuses new tasks at once
                    if _lost_worker(self.executor) is not None:
                        release_broken_pool(self.executor)
                    raise RuntimeError(
                        f"the executor {type(self.executor).__name__} refused the row-block "
                        f"task {fn.__name__}({_describe(item)}): {type(exc).__name__}: "
                        f"{exc}") from exc
                pending.append((item, future))
                return True
            return False

        # the main thread submits and waits under sigint_deferred (a Ctrl-C reaches it between
        # two slices of a wait, never inside the executor's locks) and yields outside it
        try:
            with sigint_deferred():
                for _ in range(self.window):
                    if not submit():
                        break
            while pending:
                with sigint_deferred() as sigint:
                    item, future = pending.popleft()
                    try:
                        result = self._result(future, sigint)
                    except Exception as exc:
                        if _lost_worker(self.executor) is not None:
                            release_broken_pool(self.executor)
                        hint = (" (the task or data it needs was lost with a worker, and the "
                                "executor could not recover it)"
                                if "Cancelled" in type(exc).__name__ else "")
                        raise RuntimeError(
                            f"a row-block task {fn.__name__}({_describe(item)}) failed on the "
                            f"executor {type(self.executor).__name__}: {type(exc).__name__}: "
                            f"{exc}{hint}") from exc
                    submit()
                self._count("result_bytes", payload_bytes(result))
                # results unpickled from Dask's frames: aligned, as the thread path's are
                yield result if self._client is None else _aligned(result)
        finally:
            with sigint_deferred():
                # a broken pool fails its pending futures itself: one cancelled here first
                # would make its manager thread fail (InvalidStateError) before it closes
                # its queues, and the interpreter would wait for them at exit
                if _lost_worker(self.executor) is None:
                    for _, future in pending:
                        future.cancel()
            del sent  # per-call data: dropping the futures releases it on the cluster

    def _result(self, future, sigint):
        """The task's result, waiting in slices (:func:`~fastmv._core._interrupts.result_of`):
        a process pool that lost a worker can leave a future that never completes (the pool's
        manager thread stuck on the dead worker's queue), so every ``_POLL_SECONDS`` the
        pool's processes are checked. Dask retries lost tasks and reports what it gave up on."""
        def check():
            lost = _lost_worker(self.executor)
            if lost is not None:
                raise concurrent.futures.process.BrokenProcessPool(
                    f"a worker process of the executor ended (exit code {lost}) while "
                    "a task was running; the executor cannot finish the solve")

        dask = is_dask_executor(self.executor)
        return result_of(future, sigint, _POLL_SECONDS, None if dask else check)

    def close(self):
        """Release everything sent with :meth:`keep` / :meth:`keep_each`."""
        with self._lock:
            self._kept.clear()


def _lost_worker(executor):
    """Exit code of a process of ``executor`` that ended abnormally, or None (also for
    executors without processes)."""
    if getattr(executor, "_broken", False):
        return "unknown (the pool is broken)"
    processes = getattr(executor, "_processes", None)
    if not isinstance(processes, dict):
        return None
    for process in list(processes.values()):
        code = getattr(process, "exitcode", None)
        if code is not None and code != 0:
            return code
    return None


def release_broken_pool(executor):
    """Let a process pool that lost a worker wind down, so that the interpreter can exit.

    When a worker is killed while it writes a result, the pool's manager thread can be left
    in ``recv()`` of a message that never completes: the parent process holds the result
    pipe's write end itself and the surviving workers hold theirs, so no end-of-file comes,
    the manager never sees the dead worker's sentinel, and the interpreter's exit hook
    (``concurrent.futures.process._python_exit``) joins that thread forever; the call queue's
    feeder thread meanwhile blocks writing tasks into a pipe no worker reads, and
    multiprocessing's exit hook joins it forever (a busy machine makes the windows wide).
    The pool is unusable already
    (``BrokenProcessPool``): its remaining workers are killed and the parent's ends of both
    pipes are closed, so the manager's ``recv()`` ends with end-of-file (it then marks the
    pool broken and joins the dead workers) and the feeder's ``send()`` fails. Executors
    without processes are left alone.
    """
    processes = getattr(executor, "_processes", None)
    if not isinstance(processes, dict):
        return
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            process.kill()
    # the parent's ends of the two pipes: the result pipe's write end (the manager's recv()
    # then ends) and the call pipe's read end (the feeder's send() then fails with EPIPE
    # once the killed workers' ends are closed, as the pool's own teardown does)
    for queue, end in (("_result_queue", "_writer"), ("_call_queue", "_reader")):
        connection = getattr(getattr(executor, queue, None), end, None)
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()


def _is_future(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "distributed"


def _item_bytes(item) -> int:
    """Pickled size of a task item; Dask futures inside it count as their key only."""
    if isinstance(item, tuple):
        return sum(_item_bytes(x) for x in item)
    if _is_future(item):
        return len(str(item.key))
    return payload_bytes(item)


def _describe(item) -> str:
    if isinstance(item, tuple):
        return ", ".join(_describe(x) for x in item if not hasattr(x, "shape")
                         and not _is_future(x))
    return repr(item)


@contextlib.contextmanager
def open_block_map(executor):
    """A :class:`BlockMap` over ``executor`` for the body (None when ``executor`` is None);
    what it kept is released on exit."""
    if executor is None:
        yield None
        return
    blocks = BlockMap(executor)
    try:
        yield blocks
    finally:
        blocks.close()


def map_blocks(map_, fn, items, *args):
    """``fn(item, *args)`` over ``items`` in order, with ``map_`` a :class:`BlockMap` or a
    plain ``map``-like callable (the in-process thread path, which shares ``args`` by
    reference)."""
    if isinstance(map_, BlockMap):
        return map_.map(fn, items, *args)
    return map_(lambda item: fn(item, *args), items)
