"""Time and peak memory against n for every solver, with the fitted exponent.

``python -m benchmarks.scaling [--solvers mvmc,opimc] [--out docs/img] [--quick]`` runs each
solver on planted synthetic data of growing ``n`` (side information scaled with ``n``), each
point in a fresh subprocess after a warm-up call (so Numba compilation and cache loading are
not counted), and records the call's wall and CPU time and the growth of the process's peak
resident memory during the call. It prints one row per point, fits ``time ∝ n^a`` and
``memory ∝ n^b`` on the log–log points (CPU time: the machine may be shared), and with
``--out DIR`` writes ``DIR/scaling.png`` (matplotlib, the ``bench`` extra) and with
``--json FILE`` the points.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from benchmarks.solvers import SOLVERS, protocol

#: the checkout this file lives in (the child imports its benchmarks.solvers)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: moderate ranges (each solver's ``SCALING_SIZES``, ``benchmarks/solvers/<solver>.py``):
#: about 3 CPU minutes for all on one thread
SIZES = {**{name: protocol(name).SCALING_SIZES for name in SOLVERS},
         "kmeans": [10000, 40000, 160000, 640000]}

_CHILD = r'''
import json, resource, sys, time, warnings
import numpy as np
import fastmv
warnings.simplefilter("ignore")
name, n = sys.argv[1], int(sys.argv[2])
c, dims = 10, (100, 80)

def data(n, nonnegative=False, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    views = []
    for d in dims:
        centers = rng.normal(0, 3, (c, d))
        X = centers[y] + rng.normal(0, 1, (n, d))
        views.append(np.abs(X) if nonnegative else X)
    return views, y

def call(n):
    if name == "kmeans":
        views, y = data(n)
        return lambda: fastmv.kmeans(views[0], c, n_init=3, random_state=0)
    # a solver's own call: benchmarks/solvers/<name>.py
    from benchmarks.solvers import SOLVERS, protocol
    if name not in SOLVERS:
        raise SystemExit(f"unknown solver {name}")
    return protocol(name).scaling_call(data, n, c)

def rss_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))

call(min(n, 300))()           # compile or load the kernels outside the measurement
run = call(n)
try:  # Linux: reset the peak (VmHWM) to the current resident set, so that the data's
    with open("/proc/self/clear_refs", "w") as f:  # temporaries do not hide the call's peak
        f.write("5")
    base = rss_kib("VmRSS:")
except OSError:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
run()
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
try:
    peak = rss_kib("VmHWM:")
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"wall_seconds": seconds, "seconds": cpu,
                  "peak_growth_MiB": max(peak - base, 0) / 1024}))
'''


def measure(name, n, timeout=1800):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", _CHILD, name, str(n)], capture_output=True,
                         text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{name} n={n} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


FLAT_MIB = 10  # peak growth below this is allocator noise, not a trend


def fit_exponent(ns, values):
    ns, values = np.asarray(ns, float), np.asarray(values, float)
    ok = values > 0
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns[ok]), np.log(values[ok]), 1)[0])


def plot(results, path):
    import matplotlib  # noqa: PLC0415 (bench extra only)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 (bench extra only)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, points in results.items():
        ns = [p["n"] for p in points]
        for ax, key in zip(axes, ("seconds", "peak_growth_MiB")):
            vals = [p[key] for p in points]
            a = fit_exponent(ns, vals)
            flat = key == "peak_growth_MiB" and max(vals) < FLAT_MIB
            label = f"{name} (flat, < {FLAT_MIB} MiB)" if flat else f"{name} (n^{a:.2f})"
            ax.loglog(ns, [max(v, 1e-2) for v in vals], "o-", label=label)
    axes[0].set(xlabel="n (samples)", ylabel="CPU seconds per call", title="time")
    axes[1].set(xlabel="n (samples)", ylabel="peak RSS growth (MiB)", title="memory")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default=",".join(SIZES))
    parser.add_argument("--quick", action="store_true", help="the three smallest sizes")
    parser.add_argument("--out", default=None, help="folder for scaling.png")
    parser.add_argument("--json", default=None, help="file for the measured points")
    parser.add_argument("--replot", default=None, metavar="JSON",
                        help="only redraw the plot from a --json file")
    args = parser.parse_args(argv)
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), os.path.join(args.out or ".", "scaling.png"))
        return 0
    results = {}
    for name in args.solvers.split(","):
        sizes = SIZES[name][:3] if args.quick else SIZES[name]
        results[name] = []
        for n in sizes:
            point = {"n": n, **measure(name, n)}
            results[name].append(point)
            print(f"{name:7s} n={n:7d}  {point['seconds']:9.3f} s CPU  "
                  f"{point['wall_seconds']:9.3f} s wall  {point['peak_growth_MiB']:9.1f} MiB",
                  flush=True)
        ns = [p["n"] for p in results[name]]
        print(f"{name:7s} CPU time ~ n^"
              f"{fit_exponent(ns, [p['seconds'] for p in results[name]]):.2f}"
              f"  memory ~ n^"
              f"{fit_exponent(ns, [p['peak_growth_MiB'] for p in results[name]]):.2f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        plot(results, os.path.join(args.out, "scaling.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
