"""Where a solver's cold first call spends its compile time, kernel by kernel.

Runs one solver's warm-up (the call of ``python -m fastmv compile`` and of
``benchmarks/suites/bench_first_call.py``) in this process and prints, from Numba's
``numba:compile`` events, the CPU seconds of every compilation: *own* (callees compiled
inside it subtracted) and *total*, largest first, with the ``parallel=True`` kernels it
compiled. Run it on an empty cache, or nothing compiles::

    NUMBA_CACHE_DIR=$(mktemp -d) python -m tools.compile_events mvmc [--top 25]

Process CPU seconds (``resource.getrusage``): a loaded machine inflates them less than wall
time. docs/records/perf.md has what it found.
"""
import argparse
import resource
import sys

from numba.core import event


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _Compiles(event.Listener):
    """Own and total CPU seconds of every compilation (a stack: compilations nest)."""

    def __init__(self):
        self.stack, self.rows = [], []

    def on_start(self, ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        name = f"{fn.__module__}.{fn.__qualname__}" if fn is not None else "?"
        self.stack.append([name, str(ev.data.get("args")), _cpu(), 0.0])

    def on_end(self, ev):
        name, args, start, inner = self.stack.pop()
        total = _cpu() - start
        if self.stack:
            self.stack[-1][3] += total
        self.rows.append((total - inner, total, name, args))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solver")
    parser.add_argument("--top", type=int, default=25, help="rows to print (default 25)")
    args = parser.parse_args(argv)
    listener = _Compiles()
    event.register("numba:compile", listener)
    # imported after the listener is registered, lazily, as a user would
    from fastmv._app._registry import REGISTRY  # noqa: PLC0415

    start = _cpu()
    REGISTRY[args.solver].warmup()
    seconds = _cpu() - start
    rows = sorted(listener.rows, reverse=True)
    print(f"{args.solver}: warm-up {seconds:.2f} s CPU, {len(rows)} compilations, "
          f"{sum(r[0] for r in rows):.2f} s of them")
    print(" own s  total s  function (argument types)")
    for own, total, name, types in rows[:args.top]:
        print(f"{own:6.2f} {total:8.2f}  {name} {types[:100]}")
    parallel = sorted({f"{m}.{k}" for m, module in sys.modules.items()
                       if m.startswith("fastmv.kernels.")
                       for k, obj in vars(module).items()
                       if getattr(obj, "targetoptions", {}).get("parallel") and obj.signatures})
    print("parallel=True kernels compiled or loaded:", ", ".join(parallel) or "none")


if __name__ == "__main__":
    main()
