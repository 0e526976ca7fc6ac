"""MVMC on a two-worker ``distributed.LocalCluster`` executor against the in-process thread
path (not part of the test-suite). Run from the repository root as a module:

    python -m tools.scale_dask_mvmc --n 100000 --k 50 --max-iter 2

Synthetic data as ``tools.scale_mvmc`` (2 views × 200 dims, 10 clusters, |Ω| = 20 n). Both
paths run the same call (``tol=0``, ``max_iter`` outer iterations, then the spectral step)
and print, as they go: seconds per outer iteration, what the executor path shipped per
iteration and per product with ``S`` in the spectral step (pickled sizes counted by
:class:`fastmv._core._executor.BlockMap`: data broadcast once per iteration or product — counted
once, each worker receives a copy —, what travels with the tasks, and the results coming
back), the user and system CPU time of the client and of the workers per iteration and in
the spectral step, the peak resident memory of the client and of every worker, and the
thread settings of both. At the end: whether the labels and objectives are identical.

The executor path runs first (``--order thread-first`` reverses it); ``--workers`` sets the
cluster size, one thread per worker; the thread path uses as many threads (``n_jobs``).
"""
import argparse
import resource
import time
import warnings

import numpy as np

import fastmv
from benchmarks.references.mvmc import synthetic_views
from fastmv import simulate
from fastmv._core import _executor
from fastmv._mvmc import _solver as _mvmc


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_times():
    """(user, system) CPU seconds of this process (run on the workers by ``client.run``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([usage.ru_utime, usage.ru_stime])


def _peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _thread_settings():
    """What a process runs its kernels with: Numba's layer and threads, the BLAS pools."""
    import numba  # noqa: PLC0415 (run on the workers)
    from threadpoolctl import threadpool_info  # noqa: PLC0415
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run in this process yet
        layer = "not started"
    return (layer, numba.config.NUMBA_NUM_THREADS,
            [(i["internal_api"], i["num_threads"]) for i in threadpool_info()])


def _run(views, ml, cl, args, client=None):
    """One MVMC call; per-iteration seconds, CPU and, on an executor, shipped bytes."""
    executor = None if client is None else client.get_executor()
    maps = []
    original = _executor.BlockMap.__init__

    def register(self, *a, **kw):
        original(self, *a, **kw)
        maps.append(self)

    _executor.BlockMap.__init__ = register
    problem_class = _mvmc.Problem

    def cpu_now():  # client (user, system), workers (user, system) summed
        workers = (sum(client.run(_cpu_times).values()) if client is not None
                   else np.zeros(2))
        return np.concatenate([_cpu_times(), workers])

    class Timed(problem_class):  # the first iteration starts after the SVDs and the set-up
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            ready.append(time.perf_counter())
            shipped.append(shipped_now())  # the bases U, sent once per call
            cpus.append(cpu_now())

    _mvmc.Problem = Timed
    ready = []
    stamps, shipped, cpus = [], [], []
    label = "executor" if executor is not None else "threads "

    def shipped_now():
        s = maps[0].stats if maps else {}
        return np.array([s.get(key, 0) for key in
                         ("broadcast_bytes", "task_bytes", "result_bytes", "tasks", "maps")])

    def callback(info):
        stamps.append(time.perf_counter())
        shipped.append(shipped_now())
        cpus.append(cpu_now())
        dt = stamps[-1] - (stamps[-2] if len(stamps) > 1 else ready[0])
        c = cpus[-1] - cpus[-2]
        msg = (f"  [{label}] iteration {info.iteration}: {dt:8.1f} s; CPU client "
               f"{c[0]:.1f} user + {c[1]:.1f} sys")
        if client is not None:
            msg += f", workers {c[2]:.1f} user + {c[3]:.1f} sys"
        if maps:
            d = shipped[-1] - shipped[-2]
            msg += (f"; shipped: broadcast {d[0] / 2**20:.1f} MiB, with tasks "
                    f"{d[1] / 2**20:.2f} MiB, results {d[2] / 2**20:.1f} MiB, {d[3]} tasks")
        print(msg, flush=True)

    t0 = time.perf_counter()
    cpu0 = cpu_now()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fastmv.mvmc(views, 10, ml, cl, k=args.k, max_iter=args.max_iter, tol=0.0,
                              random_state=0, callback=callback, n_jobs=args.workers,
                              executor=executor)
    finally:
        _executor.BlockMap.__init__ = original
        _mvmc.Problem = problem_class
    total = time.perf_counter() - t0
    spectral = t0 + total - stamps[-1]
    c_all = cpu_now() - cpu0
    c_spec = cpu_now() - cpus[-1]
    if maps:
        print(f"  [{label}] sent once per call (bases U): {shipped[0][0] / 2**20:.1f} MiB",
              flush=True)
    msg = (f"  [{label}] total {total:.1f} s (SVDs and set-up {ready[0] - t0:.1f} s), spectral "
           f"step {spectral:.1f} s (CPU client {c_spec[0]:.1f} user + {c_spec[1]:.1f} sys")
    if client is not None:
        msg += f", workers {c_spec[2]:.1f} user + {c_spec[3]:.1f} sys"
    msg += f"); whole call CPU client {c_all[0]:.1f} user + {c_all[1]:.1f} sys"
    if client is not None:
        msg += f", workers {c_all[2]:.1f} user + {c_all[3]:.1f} sys"
    print(msg, flush=True)
    if maps:
        s = maps[0].stats
        end = shipped_now()
        d = end - shipped[-1]  # the spectral step: degrees and block products, one map each
        products = max(int(d[4]), 1)
        print(f"  [{label}] spectral step: {int(d[4])} products with S, per product: broadcast "
              f"{d[0] / products / 2**20:.1f} MiB, with tasks {d[1] / products / 2**20:.2f} MiB, "
              f"results {d[2] / products / 2**20:.1f} MiB, {d[3] / products:.0f} tasks",
              flush=True)
        print(f"  [{label}] whole call shipped: broadcast {s['broadcast_bytes'] / 2**20:.1f} MiB, "
              f"with tasks {s['task_bytes'] / 2**20:.2f} MiB, results "
              f"{s['result_bytes'] / 2**20:.1f} MiB, {s['tasks']} tasks (k-means: "
              f"{sum(m.stats['tasks'] for m in maps[1:])} tasks)", flush=True)
        print(f"  [{label}] peak RSS: client {_peak_rss_mib():.0f} MiB, workers "
              f"{sorted(round(v) for v in client.run(_peak_rss_mib).values())} MiB", flush=True)
    else:
        print(f"  [{label}] peak RSS of the process so far: {_peak_rss_mib():.0f} MiB",
              flush=True)
    return res, np.diff(ready[:1] + stamps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--max-iter", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--order", choices=["executor-first", "thread-first"],
                        default="executor-first")
    parser.add_argument("--no-malloc-trim", action="store_true",
                        help="start the workers without the MALLOC_TRIM_THRESHOLD_ that "
                             "Dask's nanny sets (it fixes glibc's mmap threshold)")
    parser.add_argument("--skip-spectral", action="store_true",
                        help="stop after the outer iterations (labels all 0): compares the "
                             "objectives and M only, for a loaded machine")
    args = parser.parse_args(argv)
    if args.skip_spectral:
        _mvmc._cluster = lambda S, *a: np.zeros(S.shape[0], dtype=np.int64)
    import distributed  # noqa: PLC0415 (optional dependency of the tool only)

    views, y = synthetic_views(args.n)
    ml, cl = simulate.pairwise_constraints(y, 20 * args.n, random_state=0)
    v, yy = synthetic_views(300)
    m2, c2 = simulate.pairwise_constraints(yy, 2000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastmv.mvmc(v, 10, m2, c2, max_iter=2, random_state=0)  # load the compiled kernels
    print(f"n = {args.n}, k = {args.k}, 2 views × 200 dims, |Ω| = {20 * args.n} pairs, "
          f"{args.max_iter} outer iterations; {args.workers} workers × 1 thread against "
          f"n_jobs = {args.workers}", flush=True)
    if args.no_malloc_trim:
        import dask  # noqa: PLC0415 (optional dependency of the tool only)
        environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        dask.config.set({"distributed.nanny.pre-spawn-environ": environ})
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    try:
        executor = client.get_executor()
        with warnings.catch_warnings():  # load the kernels on the workers too
            warnings.simplefilter("ignore")
            fastmv.mvmc(v, 10, m2, c2, max_iter=2, random_state=0, executor=executor)
        print(f"client: Numba layer, threads, BLAS pools: {_thread_settings()}; workers: "
              f"{list(client.run(_thread_settings).values())}", flush=True)
        runs = {}
        order = ["executor", "threads"] if args.order == "executor-first" else [
            "threads", "executor"]
        for name in order:
            runs[name] = _run(views, ml, cl, args, client if name == "executor" else None)
        (a, ta), (b, tb) = runs["executor"], runs["threads"]
        same_M = all(np.array_equal(p, q) for p, q in zip(a.M, b.M))
        print(f"M identical: {same_M}; labels identical: {np.array_equal(a.labels, b.labels)}"
              f"{' (spectral step skipped)' if args.skip_spectral else ''}; objectives identical: "
              f"{np.array_equal(a.objective, b.objective)} (max relative difference "
              f"{np.max(np.abs(a.objective / b.objective - 1)):.1e})")
        print(f"seconds per outer iteration (the pass over S and the M-steps): executor "
              f"{np.round(ta, 1).tolist()}, threads {np.round(tb, 1).tolist()}")
        print(f"NMI {fastmv.metrics.nmi(y, a.labels):.4f}")
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
