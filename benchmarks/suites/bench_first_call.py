"""First calls of every solver: cold (empty Numba cache) and warm (cache filled, new process).

What a user meets before the first answer: compilation on a fresh install, cache loading on
every later start. Targets on the project's 2-core machine: cold ≤ 10 s when idle, warm ≤ 0.3 s
above the second call. The warm-ups are small problems, so a cold call compiles only serial
kernels (``parallel=True`` kernels compile on the first problem large enough to use them);
``FIRST_CALLS`` also reports the parallel kernels a call compiled, which should stay none. The call
is each solver's warm-up (``fastmv._app._registry``: the tiny call that
``python -m fastmv compile`` and the demo's compile rows make), run in a new process so that
nothing compiled earlier in the benchmark process counts; process CPU seconds
(``resource.getrusage``), which a busy machine inflates less than wall time. The absolute
figures move with the machine's speed (a shared VM measured the same commit 1.1–1.4× apart
on one day, ``docs/records/perf.md``): a change is judged against its neighbours in the asv
history, not against the target alone.
"""
import json
import os
import subprocess
import sys

from benchmarks._common import cache_or_skip, from_cache
from fastmv._core._spec import solver_specs

SOLVERS = tuple(solver_specs())

#: Run as ``python -c FIRST_CALLS [--prime] SOLVER...``: each solver's warm-up twice, in
#: CPU seconds, the kernels that missed Numba's cache and the ``parallel=True`` kernels the
#: process compiled or loaded, as one JSON line. ``--prime``
#: runs Numba's and the library's own start-up first (the first njit call, the thread pool):
#: they are paid once per process whatever the solver, not by a solver's warm first call. A
#: cold first call is measured without it, as a user meets it.
FIRST_CALLS = r"""
import json, pkgutil, resource, sys
import numba


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


names = [a for a in sys.argv[1:] if a != "--prime"]
if "--prime" in sys.argv:
    numba.njit(lambda x: x + 1)(1)
import fastmv
import fastmv.kernels
from fastmv._app._registry import REGISTRY

if "--prime" in sys.argv:
    from fastmv.kernels._partition import start_thread_pool
    start_thread_pool(4)
out = {}
for name in names:
    seconds = []
    for _ in range(2):
        t = cpu()
        REGISTRY[name].warmup()
        seconds.append(cpu() - t)
    out[name] = seconds
misses = []
parallel = []
for info in pkgutil.iter_modules(fastmv.kernels.__path__):
    module = sys.modules.get("fastmv.kernels." + info.name)
    for key, obj in (vars(module).items() if module else ()):
        if hasattr(obj, "py_func") and hasattr(obj, "stats") and obj.stats.cache_misses:
            misses.append(f"{info.name}.{key}")
        if getattr(obj, "targetoptions", {}).get("parallel") and obj.signatures:
            parallel.append(f"{info.name}.{key}")
print(json.dumps(dict(seconds=out, misses=sorted(set(misses)),
                      parallel=sorted(set(parallel)))))
"""


def first_calls(names, *, cache_dir=None, prime=False, cwd=None, timeout=900):
    """Run :data:`FIRST_CALLS` for the solvers ``names`` in a new process (with
    ``NUMBA_CACHE_DIR=cache_dir`` when given) and return its ``{"seconds": {name: [first,
    second]}, "misses": [...]}``."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    args = [sys.executable, "-c", FIRST_CALLS, *(["--prime"] if prime else []), *names]
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cache_dir(solver):
    # in asv's working directory: files that setup_cache writes there are kept for the
    # benchmarks of the class
    return os.path.abspath(f"numba-cache-{solver}")


class FirstCall:
    """``track_cold``: the first call with an empty cache (compilation included);
    ``track_warm_excess``: with that cache filled, a new process's first call minus its
    second (cache loading and first-call set-up)."""

    params = list(SOLVERS)
    param_names = ["solver"]
    timeout = 1200

    def setup_cache(self):
        def build():
            try:
                from fastmv._app._registry import REGISTRY  # noqa: PLC0415
            except ImportError as exc:
                raise NotImplementedError(f"no warm-up registry in this commit: {exc}")
            if not all(hasattr(REGISTRY.get(s), "warmup") for s in SOLVERS):
                raise NotImplementedError("a solver has no warm-up call in this commit")
            cold = {}
            for solver in SOLVERS:
                os.makedirs(_cache_dir(solver), exist_ok=True)
                result = first_calls([solver], cache_dir=_cache_dir(solver))
                cold[solver] = result["seconds"][solver][0]
            return cold
        return cache_or_skip(build)

    def setup(self, cache, solver):
        from_cache(cache)

    def track_cold(self, cache, solver):
        return cache[solver]

    track_cold.unit = "seconds"

    def track_warm_excess(self, cache, solver):
        result = first_calls([solver], cache_dir=_cache_dir(solver), prime=True)
        first, second = result["seconds"][solver]
        return first - second

    track_warm_excess.unit = "seconds"
