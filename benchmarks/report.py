"""One table, measured in one run: fastmv against its NumPy references and its peers.

``python -m benchmarks.report [--markdown] [--repeat R] [--threads T]`` runs every solver and
building block of fastmv on one real (or embedded) dataset, together with its plain NumPy
reference (``benchmarks/references/*.py``, the same algorithm and iterations) and its peer where
one exists (scikit-learn's ``KMeans``, ``SpectralClustering``, ``NMF`` and NMI), alternating
the calls in one process (best of ``R`` each, after one warm-up call that keeps Numba
compilation out) with ``T`` threads on every side (default 1, because the machine is
shared). It prints, per row: seconds (process CPU time) for fastmv, the reference and the
peer, the ratios reference/fastmv and peer/fastmv, and the quality (NMI against the labels,
or the agreement with the reference). imml's OPIMC needs its own environment; its ratios are
recorded in ``docs/records/opimc.md``. The output
starts with the date, the machine and the package versions, so it can be pasted into
``docs/records/perf.md`` as a dated record.

``--suites [--quick] [--match REGEX]`` instead runs every asv suite in this folder once
(``setup``, every ``time_*`` best of 3, every ``track_*``), one row per figure.
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
import time
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
        # asv runs setup_cache once per class and passes its value first to setup and every
        # benchmark; here it joins the parameters the same way
        cache = (klass().setup_cache(),) if hasattr(klass, "setup_cache") else ()
        for combo in _param_sets(klass, quick):
            tag = label + (f"[{', '.join(map(str, combo))}]" if combo else "")
            bench = klass()
            combo = cache + tuple(combo)
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


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return float("nan")


def header():
    """Date, machine (CPU, cores, RAM, load) and package versions, one line each."""
    import numba
    import scipy
    from threadpoolctl import threadpool_info

    import fastmv
    blas = ", ".join(sorted({f"{i.get('internal_api')} {i.get('version')}"
                             for i in threadpool_info() if i.get("user_api") == "blas"}))
    try:
        import sklearn
        sk = f", scikit-learn {sklearn.__version__}"
    except ImportError:
        sk = ""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        f"fastmv {fastmv.__version__}, measured {now}",
        f"machine: {_cpu_model()}, {os.cpu_count()} cores, {_ram_gib():.0f} GiB RAM, "
        f"load average {load} (1/5/15 min) at the start",
        f"Python {platform.python_version()}, NumPy {np.__version__}, SciPy {scipy.__version__}, "
        f"Numba {numba.__version__}{sk}, BLAS: {blas or 'unknown'}",
    ])


# ---- the comparison table ------------------------------------------------------------------
# Each case imports inside its function: scikit-learn (the peers) is optional, and a case run
# alone (--match) should load only its own suite and data.

def _cpu_best(fn, repeat):
    """Best process CPU seconds of ``repeat`` calls (CPU time: the machine is shared) and
    the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def _nmi(y, labels):
    from fastmv import metrics
    return float(metrics.nmi(y, np.asarray(labels)))


def _case_kmeans():
    from sklearn.cluster import KMeans

    import fastmv
    from benchmarks.suites.bench_kmeans import _handwritten
    X, y = _handwritten()
    return {
        "row": "k-means, Handwritten 2000 × 649, k = 10, n_init = 10",
        "fastmv": lambda: fastmv.kmeans(X, 10, n_init=10, random_state=0).labels,
        "peer": lambda: KMeans(10, n_init=10, random_state=0, algorithm="lloyd").fit(X).labels_,
        "peer_name": "sklearn KMeans",
        "y": y,
    }


def _case_lloyd_step():
    from benchmarks.suites.bench_kmeans import KMeansKernels
    from fastmv.kernels.clustering import lloyd_step
    b = KMeansKernels()
    b.setup(200_000, 20)
    n, c = b.X.shape[0], 20

    def ref():
        d = b.xs[:, None] + (b.C ** 2).sum(1)[None, :] - 2 * b.X @ b.C.T
        lab = d.argmin(1)
        onehot = np.zeros((n, c))
        onehot[np.arange(n), lab] = 1
        return lab, onehot.T @ b.X

    return {
        "row": "Lloyd step kernel, 200 000 × 50, c = 20",
        "fastmv": lambda: lloyd_step(b.X, b.C, b.xs, b.parts),
        "ref": ref,
        "quality": lambda out: "same labels" if np.array_equal(
            out["fastmv"][0], out["ref"][0]) else "labels differ",
    }


def _case_spectral():
    from sklearn.cluster import SpectralClustering

    import fastmv
    from benchmarks.suites.bench_kmeans import _handwritten
    X, y = _handwritten()
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = fastmv.transition_matrix(X)
    S = 0.5 * (S + S.T)
    return {
        "row": "spectral clustering, Handwritten affinity 2000², k = 10",
        "fastmv": lambda: fastmv.spectral_clustering(S, 10, random_state=0),
        "peer": lambda: SpectralClustering(10, affinity="precomputed",
                                           random_state=0).fit(S).labels_,
        "peer_name": "sklearn SpectralClustering",
        "y": y,
    }


def _case_transition():
    import fastmv
    from benchmarks.suites.bench_affinity import _cdist_transition
    X = np.abs(np.random.default_rng(0).standard_normal((1051, 3000)))
    return {
        "row": "transition matrix, 1051 × 3000",
        "fastmv": lambda: fastmv.transition_matrix(X),
        "ref": lambda: _cdist_transition(X),
        "quality": lambda out: f"max |Δ| {np.abs(out['fastmv'] - out['ref']).max():.1e}",
    }


def _case_nmi():
    from sklearn.metrics import normalized_mutual_info_score

    from fastmv import metrics
    rng = np.random.default_rng(0)
    y = rng.integers(0, 20, 1_000_000)
    pred = np.where(rng.random(y.size) < 0.7, y, rng.integers(0, 20, y.size))
    return {
        "row": "NMI, 10⁶ labels, 20 classes",
        "fastmv": lambda: metrics.nmi(y, pred),
        "peer": lambda: normalized_mutual_info_score(y, pred, average_method="geometric"),
        "peer_name": "sklearn NMI",
        "quality": lambda out: f"|Δ| {abs(out['fastmv'] - out['peer']):.1e}",
    }


def _case_mvmc():
    import fastmv
    from benchmarks._common import shared_dataset
    from benchmarks.references.mvmc import mvmc_dense
    from benchmarks.suites.bench_mvmc import _numpy_bases
    views, y = fastmv.datasets.load_mat(shared_dataset("BBCSport.mat"))
    ml, cl = fastmv.simulate.pairwise_constraints(y, 5000, random_state=0)
    Z = fastmv.mvmc(views, 5, ml, cl, max_iter=1, random_state=0).Z
    ks = [z.shape[1] for z in Z]

    def ref():
        bases = _numpy_bases(views, ks)
        S = mvmc_dense(bases, ml, cl, max_iter=10, tol=0.0)[2]
        return fastmv.spectral_clustering(S, 5, random_state=0)

    return {
        "row": "MVMC, BBCSport 544, 5000 pairs, 10 iterations",
        "fastmv": lambda: fastmv.mvmc(views, 5, ml, cl, max_iter=10, tol=0.0,
                                      random_state=0).labels,
        "ref": ref,
        "y": y,
    }


def _case_mvfl():
    from benchmarks.references.mvfl import mvfl_reference
    from benchmarks.suites.bench_mvfl import MVFLHandwritten
    b = MVFLHandwritten()
    b.setup("labels")
    return {
        "row": "MVFL, Handwritten 2000 × 339, 10% labels, 20 iterations",
        "fastmv": lambda: b.run().labels,
        "ref": lambda: mvfl_reference(b.X, b.vp, b.F0, max_iter=b.n_iter,
                                      **b.kw)[2].argmax(1),
        "y": b.y,
    }


def _case_emvc():
    import fastmv
    from benchmarks.references.emvc import emvc_reference
    from benchmarks.suites.bench_emvc import LAM, webkb_transition_matrices
    P, y = webkb_transition_matrices()
    iters = 50
    return {
        "row": f"EMVC, WebKB 1051, λ = {LAM}, {iters} iterations",
        "fastmv": lambda: fastmv.emvc(P, LAM, LAM, max_iter=iters, tol=0.0, random_state=0,
                                      n_clusters=2),
        "ref": lambda: emvc_reference(P, LAM, LAM, max_iter=iters, tol=0.0),
        "quality": lambda out: (f"NMI {_nmi(y, out['fastmv'].labels):.3f}, max |ΔP̂| "
                                f"{np.abs(out['fastmv'].P_hat - out['ref']['P_hat']).max():.1e}"),
        "repeat": 2,
    }


def _case_cmvnmf():
    from sklearn.decomposition import NMF

    from benchmarks.suites.bench_cmvnmf import CMVNMFHandwritten
    b = CMVNMFHandwritten()
    b.setup()

    def peer():  # per-view NMF of the same normalised views, labels = argmax of W
        return [NMF(b.c, init="nndsvda", max_iter=b.sweeps, tol=0.0, random_state=0)
                .fit_transform(X).argmax(1) for X in b.Xn]

    def quality(out):
        mean = {k: np.mean([_nmi(y, lab) for y, lab in zip(b.ys, out[k])])
                for k in ("fastmv", "ref", "peer")}
        return (f"mean NMI {mean['fastmv']:.3f} (ref {mean['ref']:.3f}, "
                f"NMF {mean['peer']:.3f})")

    return {
        "row": f"CMVNMF, Handwritten 3 views × 1900, 5% pairs, {b.sweeps} sweeps",
        "fastmv": lambda: b.run_sweeps().labels,
        "ref": lambda: [V.argmax(1) for V in b.run_reference()[1]],
        "peer": peer,
        "peer_name": "sklearn NMF per view",
        "quality": quality,
    }


def _case_opimc():
    from benchmarks.references.opimc import opimc_reference
    from benchmarks.suites.bench_opimc import OPIMCHandwritten
    b = OPIMCHandwritten()
    b.setup()
    return {
        "row": "OPIMC, Handwritten 5 views, 40% missing, chunk 50, one pass",
        "fastmv": lambda: b.run(1).labels,
        "ref": lambda: opimc_reference(b.views, 10, b.lab0, mask=b.mask, chunk_size=50),
        "quality": lambda out: f"NMI {_nmi(b.y, out['fastmv']):.3f}; imml: see note",
        "repeat": 5,
    }


CASES = [_case_lloyd_step, _case_kmeans, _case_spectral, _case_transition, _case_nmi,
         _case_mvmc, _case_mvfl, _case_emvc, _case_cmvnmf, _case_opimc]

IMML_NOTE = ("imml's OPIMC is installed in a separate environment, so it is not measured here: "
             "its same-run ratios are in docs/records/opimc.md.")


def compare(repeat=3, threads=1, match=None):
    """Rows of the comparison table: ``(row, t_fastmv, t_ref, t_peer, peer name, quality)``."""
    import numba
    from threadpoolctl import threadpool_limits

    rows = []
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for make in CASES:
            if match and not re.search(match, make.__name__):
                continue
            with threadpool_limits(threads):
                try:
                    case = make()
                except (NotImplementedError, ImportError) as exc:
                    rows.append((make.__name__[6:], None, None, None, "", f"skipped: {exc}"))
                    continue
                reps = case.get("repeat", repeat)
                sides = [k for k in ("fastmv", "ref", "peer") if k in case]
                out = {k: case[k]() for k in sides}        # warm-up (compilation)
            # limit again: threadpoolctl sees only the libraries loaded so far (Numba's BLAS,
            # scikit-learn's OpenMP are loaded by the warm-up)
            with threadpool_limits(threads):
                best = dict.fromkeys(sides, np.inf)
                for _ in range(reps):                     # alternated, best of reps
                    for k in sides:
                        t, out[k] = _cpu_best(case[k], 1)
                        best[k] = min(best[k], t)
                if "quality" in case:
                    quality = case["quality"](out)
                else:
                    quality = f"NMI {_nmi(case['y'], out['fastmv']):.3f}"
                    quality += "".join(f", {k} {_nmi(case['y'], out[k]):.3f}"
                                       for k in ("ref", "peer") if k in out)
                rows.append((case["row"], best["fastmv"], best.get("ref"), best.get("peer"),
                             case.get("peer_name", ""), quality))
                print(f"  done: {case['row']}", file=sys.stderr, flush=True)
    finally:
        numba.set_num_threads(previous)
    return rows


def format_compare(rows, markdown):
    def sec(t):
        return "–" if t is None else f"{t:.3g}"

    def ratio(a, b):
        return "–" if a is None or b is None else f"{a / b:.2f}×"

    table = [("solver / block, data", "fastmv s", "NumPy ref s", "ref/fastmv", "peer",
              "peer s", "peer/fastmv", "quality")]
    for row, tf, tr, tp, peer, quality in rows:
        table.append((row, sec(tf), sec(tr), ratio(tr, tf), peer or "–", sec(tp),
                      ratio(tp, tf), quality))
    if markdown:
        lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"
                  for r in table[1:]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in table)


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
    parser.add_argument("--markdown", action="store_true", help="a markdown table")
    parser.add_argument("--repeat", type=int, default=3, help="best of R alternated calls")
    parser.add_argument("--threads", type=int, default=1, help="threads on every side")
    parser.add_argument("--match", default=None,
                        help="regex on the case name (e.g. 'kmeans|emvc'), or with --suites "
                             "on 'suite.Class'")
    parser.add_argument("--suites", action="store_true",
                        help="run every asv suite instead of the comparison table")
    parser.add_argument("--quick", action="store_true", help="--suites: first parameter set only")
    args = parser.parse_args(argv)
    print(header())
    if args.suites:
        print(format_rows(run(quick=args.quick, match=args.match), args.markdown))
        return 0
    print(f"threads: {args.threads} on every side (Numba and BLAS/OpenMP); times are process "
          f"CPU seconds, best of {args.repeat} alternated calls after a warm-up call")
    print(format_compare(compare(args.repeat, args.threads, args.match), args.markdown))
    print(IMML_NOTE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
