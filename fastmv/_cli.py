"""Command line: ``python -m fastmv {demo,run,list}``.

- ``demo`` runs every solver that exists on the embedded Handwritten data with simulated
  side information and prints one table (solver, setting, ACC, NMI, ARI, seconds).
- ``run SOLVER --data FILE.mat [--param value ...]`` runs one solver on a user's file.
- ``list`` says which solvers are built.

Errors print one line (``fastmv: error: ...``) and exit with status 2; set
``FASTMV_DEBUG=1`` to see the traceback instead.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
import time

import numpy as np

SOLVERS = {
    "mvmc": "multi-view matrix completion with must-link / cannot-link pairs",
    "mvfl": "joint view/feature selection with partial labels or pairs",
    "emvc": "error-robust Markov-chain clustering of per-view transition matrices",
    "cmvnmf": "constrained NMF on unmapped views with inter-view pairs",
    "opimc": "one-pass streaming clustering of incomplete views",
}


class CLIError(Exception):
    """An error reported to the user as one line."""


def _solver_module(name):
    """The solver's module, or None when it is not built yet."""
    try:
        module = importlib.import_module(f"fastmv._{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"fastmv._{name}":
            return None
        raise
    if not hasattr(module, "_demo") or not hasattr(module, "_cli"):
        return None
    return module


def _parse_value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_params(extra):
    """``['--C1', '2', '--accelerated', 'False']`` -> ``{'C1': 2, 'accelerated': False}``."""
    params = {}
    i = 0
    while i < len(extra):
        key = extra[i]
        if not key.startswith("--") or len(key) <= 2:
            raise CLIError(f"unexpected argument {key!r}: solver parameters are given as "
                           "--name value")
        name = key[2:].replace("-", "_")
        if "=" in name:
            name, value = name.split("=", 1)
            i += 1
        else:
            if i + 1 >= len(extra) or extra[i + 1].startswith("--"):
                raise CLIError(f"parameter --{name} needs a value")
            value = extra[i + 1]
            i += 2
        params[name] = _parse_value(value)
    return params


_HEADER = ("solver", "setting", "ACC", "NMI", "ARI", "seconds")
_WIDTHS = (7, 64, 6, 6, 6, 8)


def _format_row(cells):
    return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, _WIDTHS)))


def _row_cells(r):
    if r.get("note"):
        return (r["solver"], r["note"], "-", "-", "-", "-")
    return (r["solver"], r["setting"], f"{r['acc']:.3f}", f"{r['nmi']:.3f}",
            f"{r['ari']:.3f}", f"{r['seconds']:.2f}")


def _format_table(rows):
    lines = [_format_row(_HEADER), _format_row(tuple("-" * w for w in _WIDTHS))]
    lines += [_format_row(_row_cells(r)) for r in rows]
    return "\n".join(lines)


def _cmd_demo(args):
    from fastmv import metrics
    names = list(SOLVERS) if not args.solvers else [s.strip() for s in args.solvers.split(",")]
    for name in names:
        if name not in SOLVERS:
            raise CLIError(f"unknown solver {name!r}; choose from {', '.join(SOLVERS)}")
    print("fastmv demo on the embedded UCI Multiple Features (Handwritten) data, "
          f"seed {args.seed}")
    print("(seconds per setting, averaged over a solver's settings; the first run of a "
          "solver includes Numba compilation)")
    print(_format_table([]), flush=True)
    failed = False
    for name in names:
        module = _solver_module(name)
        if module is None:
            print(_format_row(_row_cells({"solver": name, "note": "not built yet"})), flush=True)
            continue
        start = time.perf_counter()
        try:
            results = module._demo(random_state=args.seed)
        except Exception as exc:  # report the failure in the table, keep going
            if os.environ.get("FASTMV_DEBUG"):
                raise
            print(_format_row(_row_cells(
                {"solver": name, "note": f"FAILED: {type(exc).__name__}: {exc}"})), flush=True)
            failed = True
            continue
        seconds = (time.perf_counter() - start) / max(len(results), 1)
        for setting, y_true, y_pred in results:
            scores = metrics.evaluate(y_true, y_pred)
            print(_format_row(_row_cells(
                {"solver": name, "setting": setting, "seconds": seconds, "acc": scores["acc"],
                 "nmi": scores["nmi"], "ari": scores["ari"]})), flush=True)
    return 1 if failed else 0


def _cmd_list(args):
    for name, what in SOLVERS.items():
        state = "built" if _solver_module(name) is not None else "not built yet"
        print(f"{name:8s} {state:14s} {what}")
    return 0


def _cmd_run(args, extra):
    from fastmv import datasets, metrics
    if args.solver not in SOLVERS:
        raise CLIError(f"unknown solver {args.solver!r}; choose from {', '.join(SOLVERS)}")
    module = _solver_module(args.solver)
    if module is None:
        raise CLIError(f"solver {args.solver!r} is not built yet")
    params = _parse_params(extra)
    if not os.path.isfile(args.data):
        raise CLIError(f"data file not found: {args.data}")
    view_idx = None
    if args.views:
        try:
            view_idx = [int(v) for v in args.views.split(",")]
        except ValueError:
            raise CLIError(f"--views must be comma-separated view indices, got {args.views!r}")
    views, y = datasets.load_mat(args.data, views=view_idx)
    start = time.perf_counter()
    y_true, y_pred, setting = module._cli(views, y, params, args.seed)
    seconds = time.perf_counter() - start
    rows = [{"solver": args.solver, "setting": setting, "seconds": seconds,
             "acc": metrics.accuracy(y_true, y_pred), "nmi": metrics.nmi(y_true, y_pred),
             "ari": metrics.ari(y_true, y_pred)}]
    print(_format_table(rows))
    if args.out:
        np.save(args.out, np.asarray(y_pred))
        print(f"labels written to {args.out}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m fastmv",
        description="fastmv: fast multi-view clustering (MVMC, MVFL, EMVC, CMVNMF, OPIMC).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="run every built solver on the embedded Handwritten data",
        description="Run every built solver on the embedded UCI Multiple Features "
                    "(Handwritten) data with simulated side information and print one table: "
                    "solver, setting, ACC, NMI, ARI, seconds.")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--solvers", default=None,
                      help="comma-separated subset of solvers (default: all)")
    run = sub.add_parser(
        "run", help="run one solver on a .mat file",
        description="Run one solver on a MATLAB .mat file in the community layout (cell X of "
                    "views, labels y; see fastmv.datasets.load_mat). The side information the "
                    "solver needs (pairs, partial labels, missing views, unmapped views) is "
                    "simulated from the file's labels; every other --name value pair is passed "
                    "to the solver as a keyword argument (values parsed as Python literals), "
                    "e.g. --lam1 0.01 --max_iter 50. See each solver's _cli docstring for its "
                    "side-information parameters.",
        epilog="Solvers: " + "; ".join(f"{k}: {v}" for k, v in SOLVERS.items()))
    run.add_argument("solver", help="one of: " + ", ".join(SOLVERS))
    run.add_argument("--data", required=True, help="path of the .mat file")
    run.add_argument("--views", default=None, help="comma-separated view indices to use")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--out", default=None, help="write the predicted labels to this .npy")
    sub.add_parser("list", help="list the solvers and whether they are built")
    return parser


def main(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args, extra = parser.parse_known_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        if args.command != "run" and extra:
            raise CLIError(f"unrecognized arguments: {' '.join(extra)}")
        if args.command == "demo":
            return _cmd_demo(args)
        if args.command == "list":
            return _cmd_list(args)
        return _cmd_run(args, extra)
    except Exception as exc:  # one clear line, no traceback (FASTMV_DEBUG=1 shows it)
        if os.environ.get("FASTMV_DEBUG"):
            raise
        msg = str(exc) or type(exc).__name__
        if not isinstance(exc, (CLIError, ValueError, TypeError, FileNotFoundError, OSError)):
            msg = f"{type(exc).__name__}: {msg}"
        print(f"fastmv: error: {msg}", file=sys.stderr)
        return 2
