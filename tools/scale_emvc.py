"""Measurements of fastmv.emvc (run once, not part of the suite; results in docs/emvc.md).
Run from the repository root:

    python -m tools.scale_emvc speed   --data webkb|N [--iters 50] [--dtype float64] [--ref]
    python -m tools.scale_emvc compare --data webkb|N [--repeat 2] [--n_jobs 1]
    python -m tools.scale_emvc grid                      # WebKB lam grid: acc / NMI
    python -m tools.scale_emvc scale   --n 8000 [--iters 100] [--dtype float32] [--n_jobs 2]
    python -m tools.scale_emvc ideas   --data webkb|N
    python -m tools.scale_emvc eigh    --data WebKB,syn2000 [--lam 0.01,1] [--before DIR]

``ideas`` checks, on the inputs of a solve's full decompositions, two shortcuts of the
high-rank SVT: float32 (its Gram eigenvalue error ``eps32 σ₁²`` against ``τ²``) and reusing
the previous decomposition's subspace (coupling of the previous eigenvectors under the new
Gram matrix, and the angle to the new wanted subspace).

``eigh`` times whole solves in units of one ``numpy.linalg.eigh`` of a random symmetric
``n × n`` matrix (the issue's yardstick: one thread, process CPU time, warm, seed 0, the README
route ``transition_matrix`` on a shared dataset or ``synN``, two Gaussian-cluster views); with
``--before DIR`` each dataset is first measured with the fastmv of the source tree ``DIR`` in a
subprocess (same script), so the two columns come from one run. One JSON line per solve.

``speed`` prints seconds per iteration in each SVT regime and the total, and with ``--ref``
the NumPy reference (full SVD every iteration) timed in the same process plus the largest
``|P̂ − P̂_ref|``. ``scale`` runs the synthetic planted problem and reports the peak resident
memory (``ru_maxrss``) next to the ``(3m+3) n²`` floor.
"""
import argparse
import resource
import time

import numpy as np

import fastmv
from benchmarks.bench_emvc import synthetic, webkb_transition_matrices


def _load(data, dtype):
    if data == "webkb":
        P, y = webkb_transition_matrices(np.float64)
    else:
        P, y = synthetic(int(data), dtype=np.float64)
    return [p.astype(dtype) for p in P], y


def _timed_solve(P, lam, iters, dtype, tol=0.0, n_clusters=None, n_jobs=None, cpu=False,
                 echo=False):
    """One solve; per-iteration wall (or, with ``cpu``, process CPU) seconds; ``echo``
    prints one line per iteration as it ends (long runs)."""
    clock = time.process_time if cpu else time.perf_counter
    stamps, methods, ranks = [clock()], [], []

    def cb(info):
        stamps.append(clock())
        methods.append(info.state["svt_method"])
        ranks.append(info.state["rank"])
        if echo:
            print(f"    it {len(methods)} {methods[-1]} rank {ranks[-1]} "
                  f"{stamps[-1] - stamps[-2]:.1f} s, residual {info.residual:.2e}", flush=True)

    t0 = clock()
    res = fastmv.emvc(P, lam, lam, max_iter=iters, tol=tol, dtype=dtype, random_state=0,
                      callback=cb, n_clusters=n_clusters, n_jobs=n_jobs)
    total = clock() - t0
    dt = np.diff(stamps)
    return res, total, dt, methods, ranks


def _summary(dt, methods):
    out = {}
    for m in ("skip-bound", "skip-power", "partial", "gram", "full"):
        sel = [k for k, x in enumerate(methods) if x == m]
        if sel:
            out[m] = (len(sel), float(np.median(dt[sel])), float(np.sum(dt[sel])))
    return out


def speed(args):
    dtype = np.dtype(args.dtype).type
    P, _ = _load(args.data, dtype)
    fastmv.emvc(P, args.lam, args.lam, max_iter=2, dtype=dtype)  # compile
    res, total, dt, methods, ranks = _timed_solve(P, args.lam, args.iters, dtype)
    print(f"data={args.data} n={P[0].shape[0]} dtype={args.dtype} iters={args.iters}")
    print(f"fastmv total {total:.2f} s")
    for m, (k, med, tot) in _summary(dt, methods).items():
        print(f"  {m:10s} {k:3d} iterations, median {med:.4f} s/it, sum {tot:.2f} s")
    print("  ranks:", " ".join(f"{m[0]}{r}" for m, r in zip(methods, ranks)))
    if args.ref:
        from benchmarks.references.emvc import emvc_reference
        stamps = [time.perf_counter()]
        t0 = time.perf_counter()
        ref = emvc_reference(P, args.lam, args.lam, max_iter=args.iters, tol=0.0, dtype=dtype,
                             callback=lambda it, s: stamps.append(time.perf_counter()))
        t_ref = time.perf_counter() - t0
        print(f"numpy reference total {t_ref:.2f} s, median {np.median(np.diff(stamps)):.4f}"
              f" s/it; speed-up {t_ref / total:.2f}x; max |P_hat - P_hat_ref| = "
              f"{np.abs(res.P_hat.astype(np.float64) - ref['P_hat']).max():.2e}")


def compare(args):
    """Whole solves (default tol, labels) with ``full_svd="gesdd"`` (the previous route) and
    ``"auto"`` (Gram eigendecomposition where accurate), alternated in one process; wall and
    process CPU time (with ``--n_jobs 1`` the CPU time is the one-core time, robust to a
    loaded machine)."""
    from fastmv import metrics
    P, y = _load(args.data, np.float64)
    c = int(np.unique(y).size)
    fastmv.emvc([p[:60, :60] / p[:60, :60].sum(1, keepdims=True) for p in P], args.lam,
                args.lam, n_clusters=2, max_iter=40)  # compile
    print(f"data={args.data} n={P[0].shape[0]} lam={args.lam} n_jobs={args.n_jobs}", flush=True)
    best, res = {}, {}
    for rep in range(args.repeat):
        for route in ("gesdd", "auto"):
            stamps, methods = [time.perf_counter()], []

            def cb(info):
                stamps.append(time.perf_counter())
                methods.append(info.state["svt_method"])

            t0, c0 = time.perf_counter(), time.process_time()
            r = fastmv.emvc(P, args.lam, args.lam, n_clusters=c, full_svd=route,
                            random_state=0, n_jobs=args.n_jobs, callback=cb)
            total, cpu = time.perf_counter() - t0, time.process_time() - c0
            per = np.diff(stamps)
            full = sum(d for d, m in zip(per, methods) if m in ("full", "gram"))
            counts = {m: methods.count(m) for m in sorted(set(methods))}
            full_ranks = [int(k) for k, m in zip(r.rank, methods) if m in ("full", "gram")]
            print(f"  rep {rep} {route:5s}: wall {total:8.2f} s, cpu {cpu:8.2f} s (wall of the "
                  f"full-decomposition iterations {full:8.2f} s) iters {r.n_iter} converged "
                  f"{r.converged} {counts} acc {metrics.accuracy(y, r.labels):.4f}; ranks of "
                  f"the full decompositions {full_ranks}", flush=True)
            for key, t in (("wall", total), ("cpu", cpu)):
                best[route, key] = min(best.get((route, key), np.inf), t)
            res[route] = r
    a, b = res["gesdd"], res["auto"]
    for key in ("wall", "cpu"):
        g, a_ = best["gesdd", key], best["auto", key]
        print(f"best {key}: gesdd {g:.2f} s, auto {a_:.2f} s, ratio {g / a_:.2f}x")
    print("same labels: "
          f"{np.array_equal(a.labels, b.labels)}; max |dP_hat| = "
          f"{np.abs(a.P_hat - b.P_hat).max():.2e}; iterations {a.n_iter} / {b.n_iter}")


def grid(args):
    from fastmv import metrics
    P, y = _load("webkb", np.float64)
    for lam1 in (0.001, 0.01, 0.1):
        for lam2 in (0.001, 0.01, 0.1):
            res = fastmv.emvc(P, lam1, lam2, n_clusters=2, random_state=0)
            print(f"lam1={lam1:<6g} lam2={lam2:<6g} acc={metrics.accuracy(y, res.labels):.4f} "
                  f"nmi={metrics.nmi(y, res.labels):.4f} iters={res.n_iter} "
                  f"converged={res.converged}", flush=True)


def scale(args):
    dtype = np.dtype(args.dtype).type
    n = args.n
    t0 = time.perf_counter()
    P, y = synthetic(n, dtype=dtype)
    print(f"synthetic n={n} built in {time.perf_counter() - t0:.1f} s; "
          f"rss so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB",
          flush=True)
    w0 = time.perf_counter()
    res, total, dt, methods, ranks = _timed_solve(P, args.lam, args.iters, dtype,
                                                  tol=args.tol, n_clusters=5,
                                                  n_jobs=args.n_jobs, cpu=True, echo=True)
    wall = time.perf_counter() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    floor = (3 * len(P) + 3) * n * n * np.dtype(dtype).itemsize / 2**30
    from fastmv import metrics
    print(f"n={n} dtype={args.dtype}: {res.n_iter} iterations in {wall:.1f} s wall, {total:.1f} s CPU, converged="
          f"{res.converged}, final residual {res.residual[-1]:.2e}, "
          f"acc={metrics.accuracy(y, res.labels):.4f}")
    for m, (k, med, tot) in _summary(dt, methods).items():
        print(f"  {m:10s} {k:3d} iterations, median {med:.3f} s/it, sum {tot:.1f} s (CPU)")
    print("  ranks:", " ".join(f"{m[0]}{r}" for m, r in zip(methods, ranks)))
    print("  CPU s per iteration:", " ".join(f"{x:.1f}" for x in dt))
    print(f"peak RSS {peak:.2f} GiB (inputs {len(P)} x n^2 included); (3m+3) n^2 state = "
          f"{floor:.2f} GiB")


def ideas(args):
    import fastmv._emvc._solver as emvc_module
    P, _ = _load(args.data, np.float64)
    inner, saved = emvc_module.svt, []

    def recording_svt(B, tau, **kw):
        Q, info = inner(B, tau, **kw)
        if info.method in ("gram", "full"):
            saved.append((B.copy(), tau))
        return Q, info

    emvc_module.svt = recording_svt
    try:
        fastmv.emvc(P, args.lam, args.lam, random_state=0, n_jobs=1)
    finally:
        emvc_module.svt = inner
    eps32 = float(np.finfo(np.float32).eps)
    prev = None
    for B, tau in saved:
        w, Z = np.linalg.eigh(B @ B.T)
        w, Z = w[::-1], Z[:, ::-1]
        r = int(np.count_nonzero(w > tau * tau))
        line = (f"tau {tau:.2e} rank {r}: tau^2 {tau * tau:.1e}, float32 Gram eigenvalue error "
                f"eps32 s1^2 {eps32 * w[0]:.1e}")
        if prev is not None:
            H = prev.T @ (B @ (B.T @ prev))
            k = min(2 * r, len(w))
            coupling = np.linalg.norm(H[:k, k:], 2) if k < len(w) else 0.0
            cos = np.linalg.svd(prev[:, :k].T @ Z[:, :r], compute_uv=False).min()
            line += (f"; previous vectors (2r = {k}): coupling {coupling:.1e}, sin angle to "
                     f"the wanted subspace {np.sqrt(max(0.0, 1 - cos * cos)):.2f}")
        print(line, flush=True)
        prev = Z


def _views_for_eigh(name):
    if name.startswith("syn"):
        n = int(name[3:])
        rng = np.random.default_rng(0)
        y = np.arange(n) % 5
        views = []
        for d, noise in ((40, 2.0), (20, 2.5)):
            C = rng.normal(0, 1.5, (5, d))
            scale = rng.uniform(0.5, 1.5, (n, 1))
            views.append(C[y] + noise * rng.normal(size=(n, d)) * scale)
        return views, y
    from benchmarks.baseline import load
    return load(name)


def _eigh_cpu(n, reps=2):
    A = np.random.default_rng(1).standard_normal((n, n))
    A += A.T
    np.linalg.eigh(A)
    best = np.inf
    for _ in range(reps):
        t = time.process_time()
        np.linalg.eigh(A)
        best = min(best, time.process_time() - t)
    return best


def eigh(args):
    import hashlib
    import json
    import os
    import subprocess
    import sys

    from threadpoolctl import threadpool_limits

    for name in args.data.split(","):
        if args.before:
            env = dict(os.environ, PYTHONPATH=args.before, NUMBA_NUM_THREADS="1")
            subprocess.run([sys.executable, os.path.abspath(__file__), "eigh", "--data", name,
                            "--lam", args.lam, "--tag", "before"], env=env, check=True)
        views, y = _views_for_eigh(name)
        c = len(np.unique(y))
        with threadpool_limits(1):
            P = [fastmv.transition_matrix(X) for X in views]
            fastmv.emvc(P, 0.01, 0.01, n_clusters=c, max_iter=3, random_state=0, n_jobs=1)
            e = _eigh_cpu(len(y))
            for lam in (float(x) for x in args.lam.split(",")):
                t = time.process_time()
                res = fastmv.emvc(P, lam, lam, n_clusters=c, random_state=0, n_jobs=1)
                cpu = time.process_time() - t
                print(json.dumps(dict(
                    tag=args.tag, data=name, n=len(y), lam=lam, emvc_s=round(cpu, 3),
                    eigh_s=round(e, 4), ratio=round(cpu / e, 2), n_iter=int(res.n_iter),
                    full=sum(m in ("gram", "full") for m in res.svt_method),
                    labels=hashlib.md5(res.labels.astype(np.int64).tobytes()).hexdigest(),
                    acc=round(float(fastmv.metrics.accuracy(y, res.labels)), 4))), flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--data", default="webkb")
    s.add_argument("--iters", type=int, default=50)
    s.add_argument("--dtype", default="float64")
    s.add_argument("--lam", type=float, default=0.01)
    s.add_argument("--ref", action="store_true")
    s.set_defaults(func=speed)
    q = sub.add_parser("compare")
    q.add_argument("--data", default="webkb")
    q.add_argument("--lam", type=float, default=0.01)
    q.add_argument("--repeat", type=int, default=2)
    q.add_argument("--n_jobs", type=int, default=1)
    q.set_defaults(func=compare)
    g = sub.add_parser("grid")
    g.set_defaults(func=grid)
    c = sub.add_parser("scale")
    c.add_argument("--n", type=int, default=8000)
    c.add_argument("--iters", type=int, default=100)
    c.add_argument("--tol", type=float, default=1e-6)
    c.add_argument("--dtype", default="float32")
    c.add_argument("--lam", type=float, default=0.01)
    c.add_argument("--n_jobs", type=int, default=None)
    c.set_defaults(func=scale)
    i = sub.add_parser("ideas")
    i.add_argument("--data", default="webkb")
    i.add_argument("--lam", type=float, default=0.01)
    i.set_defaults(func=ideas)
    e = sub.add_parser("eigh")
    e.add_argument("--data", default="WebKB,syn2000")
    e.add_argument("--lam", default="0.01,1")
    e.add_argument("--before", default=None)
    e.add_argument("--tag", default="after")
    e.set_defaults(func=eigh)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
