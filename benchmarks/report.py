"""One table, measured in one run: every asv suite's timings and ratios.

``python -m benchmarks.report [--quick] [--match REGEX] [--markdown]`` imports the asv suites
in this folder, and for every benchmark class (each parameter combination, or the first one
with ``--quick``) runs ``setup``, times every ``time_*`` method (best of 3, compilation kept
out by ``setup`` as in asv) and calls every ``track_*`` method: the speed ratios against the
NumPy references and the peers (scikit-learn's KMeans, SpectralClustering, NMF; imml's OPIMC
when installed) and the quality figures (ACC, NMI) that the suites define. The output starts
with the date, the machine and the package versions, so it can be pasted into
``docs/performance.md`` as a dated record.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import itertools
import os
import pkgutil
import platform
import re
import sys
import traceback

import numpy as np

from benchmarks._common import best_of

HERE = os.path.dirname(os.path.abspath(__file__))


def _suites(match):
    package = os.path.basename(HERE)
    for info in sorted(pkgutil.iter_modules([HERE]), key=lambda m: m.name):
        if not info.name.startswith("bench_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for name, klass in inspect.getmembers(module, inspect.isclass):
            if klass.__module__ != module.__name__:
                continue
            methods = [m for m in dir(klass) if m.startswith(("time_", "track_"))]
            if not methods:
                continue
            label = f"{info.name[6:]}.{name}"
            if match and not re.search(match, label):
                continue
            yield label, klass, methods


def _param_sets(klass, quick):
    params = getattr(klass, "params", None)
    if not params:
        return [()]
    if not isinstance(params[0], (list, tuple)):
        params = [params]
    combos = list(itertools.product(*params))
    return combos[:1] if quick else combos


def run(quick=False, match=None):
    """Rows ``(benchmark, metric, value, unit)``."""
    rows = []
    for label, klass, methods in _suites(match):
        for combo in _param_sets(klass, quick):
            tag = label + (f"[{', '.join(map(str, combo))}]" if combo else "")
            bench = klass()
            try:
                if hasattr(bench, "setup"):
                    bench.setup(*combo)
            except NotImplementedError as exc:
                rows.append((tag, "skipped", str(exc), ""))
                continue
            for method in sorted(methods):
                fn = getattr(bench, method)
                try:
                    if method.startswith("time_"):
                        value, unit = best_of(lambda: fn(*combo)), "s"
                    else:
                        value = fn(*combo)
                        unit = getattr(getattr(klass, method), "unit", "")
                except NotImplementedError as exc:
                    rows.append((tag, method, f"skipped: {exc}", ""))
                    continue
                except Exception as exc:  # report and go on: one table for everything
                    rows.append((tag, method, f"FAILED: {type(exc).__name__}: {exc}", ""))
                    traceback.print_exc(file=sys.stderr)
                    continue
                rows.append((tag, method, value, unit))
            if hasattr(bench, "teardown"):
                bench.teardown(*combo)
    return rows


def header():
    import numba
    import scipy

    import fastmv
    return (f"fastmv {fastmv.__version__}, {datetime.date.today().isoformat()}, "
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, SciPy "
            f"{scipy.__version__}, Numba {numba.__version__}, "
            f"NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")


def format_rows(rows, markdown):
    def cell(v):
        return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)

    if markdown:
        lines = ["| benchmark | metric | value | unit |", "|---|---|---|---|"]
        lines += [f"| {b} | {m} | {cell(v)} | {u} |" for b, m, v, u in rows]
        return "\n".join(lines)
    widths = [max([len(cell(r[i])) for r in rows] + [6]) for i in range(4)]
    return "\n".join("  ".join(cell(c).ljust(w) for c, w in zip(r, widths)) for r in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first parameter set only")
    parser.add_argument("--match", default=None, help="regex on 'suite.Class'")
    parser.add_argument("--markdown", action="store_true", help="a markdown table")
    args = parser.parse_args(argv)
    print(header())
    rows = run(quick=args.quick, match=args.match)
    print(format_rows(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
