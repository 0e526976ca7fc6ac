"""Command line: ``python -m fastmv {demo,run,compile,list}``.

- ``demo`` runs every solver on the embedded Handwritten data and prints one row per setting
  with its own seconds; the compilation (or cache load) of each solver's kernels is timed
  apart, once, by a tiny warm-up call. ``--plot DIR`` writes pictures.
- ``run SOLVER --data FILE`` runs one solver on a user's ``.mat`` file (with or without
  labels) and prints the metrics (when the file has labels), the seconds and where the labels
  were saved; ``--json`` prints one JSON object instead. ``run SOLVER --help`` lists the
  solver's options, taken from its signature and docstring. Side information comes from
  files, checked against the data before the solve, or from the file's own labels with
  ``--simulate`` only (announced in the output); ``--out`` and ``--plot`` are checked before
  the solve too. A solve still running after a few seconds shows itself on stderr: what it
  is doing, then a progress bar (tqdm) or, without tqdm, a plain line every few seconds.
- ``compile`` fills Numba's cache for every solver (float64 and float32, dense and sparse).
- ``list`` lists the solvers.

Every error is one line on stderr (``fastmv: error: ...``) naming the option or file, with exit
status 2; set ``FASTMV_DEBUG=1`` to see the traceback instead. Ctrl-C exits 130 ("fastmv:
interrupted"), a closed pipe 141 without a message; ``--version`` prints the version.

``run``'s options and side-information files are built in :mod:`fastmv._app._cli_options`; what
each solver needs lives in :mod:`fastmv._app._registry`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .. import datasets, metrics, plot
from .._core._driver import feedback
from .._core._validation import validate_params
from ._cli_options import (
    CLIError,
    Parser,
    build_run_parser,
    check_side,
    load_side,
    one_line,
    parse_int,
    typed,
)
from ._registry import REGISTRY

__all__ = ["main"]

_DEMO_HEADER = ("solver", "setting", "ACC", "NMI", "ARI", "seconds")


# --------------------------------------------------------------------------------- tables
def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 2) -> str:
    """Rows of cells as aligned text: the first ``left`` columns left-aligned, the others
    right-aligned, each column as wide as its widest cell.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequence of str
        The cells, one sequence per row.
    left : int, default 2
        Number of leading left-aligned columns.

    Returns
    -------
    str
        The header, a rule and the rows, one per line.

    Examples
    --------
    >>> print(format_table(("a", "n"), [("x", "1"), ("long", "10")], left=1))
    a      n
    ----  --
    x      1
    long  10
    """
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]

    def line(cells):
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])]
                     + [line(r) for r in rows])


def _scores(pairs):
    if not pairs:
        return None
    keys = ("acc", "nmi", "ari")
    out = dict.fromkeys(keys, 0.0)
    for y_true, y_pred in pairs:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        keep = y_pred >= 0
        out["acc"] += metrics.accuracy(y_true[keep], y_pred[keep])
        out["nmi"] += metrics.nmi(y_true[keep], y_pred[keep])
        out["ari"] += metrics.ari(y_true[keep], y_pred[keep])
    return {k: v / len(pairs) for k, v in out.items()}


# ------------------------------------------------------------------------------------ demo
def _solver_list(text):
    names = [s.strip() for s in re.split(r"[,\s]+", " ".join(text)) if s.strip()]
    for name in names:
        if name not in REGISTRY:
            raise CLIError(f"--solvers: unknown solver {name!r}; choose from "
                           f"{', '.join(REGISTRY)}")
    return names or list(REGISTRY)


class _Streamed:
    """A table printed row by row: widths fixed up front from the header and the cells that
    are known before the slow work starts (setting names; numbers have a fixed width)."""

    def __init__(self, header, known_rows, left=2, number_width=6):
        self.widths = [max([len(h)] + [len(str(r[i])) for r in known_rows if i < len(r)]
                           + ([number_width] if i >= left else []))
                       for i, h in enumerate(header)]
        self.left = left
        self.line(header)
        self.line(["-" * w for w in self.widths])

    def line(self, cells):
        print("  ".join(str(c).ljust(w) if i < self.left else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(cells, self.widths))).rstrip(),
              flush=True)


def _cmd_demo(args):
    names = _solver_list(args.solvers or [])
    if args.plot:
        plot._pyplot()  # fail early when matplotlib is missing
        os.makedirs(args.plot, exist_ok=True)
    start_all = time.perf_counter()
    print(f"fastmv demo on the embedded UCI Multiple Features (Handwritten) data, seed "
          f"{args.seed}")
    for name in names:
        print(f"  {name}: {REGISTRY[name].demo_note}")
    print("seconds: each setting's own solve; compile: the solver's first, tiny call "
          "(Numba compilation or cache load), timed apart")
    settings, failures = {}, {}
    for name in names:  # cheap: data and simulated side information, no solve yet
        try:
            settings[name] = REGISTRY[name].demo(args.seed)
        except Exception as exc:  # reported in the table, the other solvers still run
            if os.environ.get("FASTMV_DEBUG"):
                raise
            failures[name] = exc
    known = [(name, s.label) for name in settings for s in settings[name]]
    table = _Streamed(_DEMO_HEADER, known + [("", "compile")])
    notes = []
    for name in names:
        try:
            if name in failures:
                raise failures[name]
            t0 = time.perf_counter()
            REGISTRY[name].warmup()
            table.line((name, "compile", "", "", "", f"{time.perf_counter() - t0:.2f}"))
            last = None
            for setting in settings[name]:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    pairs, result = setting.solve()
                    seconds = time.perf_counter() - t0
                notes += [f"{name} ({setting.label}): {w.category.__name__}: "
                          f"{one_line(w.message)}" for w in caught]
                s = _scores(pairs)
                table.line((name, setting.label, f"{s['acc']:.3f}", f"{s['nmi']:.3f}",
                            f"{s['ari']:.3f}", f"{seconds:.2f}"))
                if result is not None:
                    last = (setting, pairs, result)
        except Exception as exc:  # report the failure in the table, keep going
            if os.environ.get("FASTMV_DEBUG"):
                raise
            table.line((name, f"FAILED: {type(exc).__name__}: {one_line(exc)}"))
            failures[name] = exc
            continue
        if args.plot and last is not None:
            _demo_pictures(name, last, args.plot)
    for note in dict.fromkeys(notes):
        print(f"note: {note}")
    total = time.perf_counter() - start_all
    print(f"whole demo: {total:.1f} s (compilation included)")
    if args.plot:
        print(f"pictures written to {args.plot}")
    return 1 if failures else 0


def _demo_pictures(name, last, directory):
    """Pictures of a solver's last demo setting: convergence and contingency table, plus the
    solver's own (its spec's ``plots``: MVFL's view weights, an embedding of EMVC's consensus
    transition matrix)."""
    plt = plot._pyplot()
    setting, pairs, result = last

    def save(ax, what, title=True):
        if title:
            ax.set_title(f"{name}: {setting.label}")
        ax.figure.savefig(os.path.join(directory, f"{name}_{what}.png"), dpi=100,
                          bbox_inches="tight")
        plt.close(ax.figure)

    save(plot.convergence(result), "convergence")
    y_true, y_pred = pairs[-1]
    keep = np.asarray(y_pred) >= 0
    save(plot.contingency(np.asarray(y_true)[keep], np.asarray(y_pred)[keep]), "contingency",
         title=False)
    for what, draw in REGISTRY[name].plots:
        save(draw(result, y_pred), what)


# ------------------------------------------------------------------------------------- run
def _output_path(path, option, ext):
    """Where ``--out`` / ``--plot`` will write, checked before the solve: ``(path, stream)``
    with ``stream`` True for an existing non-regular file (``/dev/null``, a pipe), written
    as given, without an added extension."""
    if os.path.isdir(path):
        raise CLIError(f"{option}: {path} is a directory; give a file name")
    if os.path.exists(path) and not os.path.isfile(path):
        if not os.access(path, os.W_OK):
            raise CLIError(f"{option}: cannot write to {path}")
        return path, True
    if ext and not path.endswith(ext):
        path += ext
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CLIError(f"{option}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CLIError(f"{option}: cannot write to {path} (permission denied)")
    return path, False


def _simulation_options(spec, args, y):
    """The simulation options' values (defaults filled in) after checking that they are used
    only with ``--simulate``, and ``--simulate`` only with labels and without side files."""
    simulate = bool(getattr(args, "simulate", False))
    values = {}
    for opt in spec.simulation:
        value = getattr(args, opt.name)
        if opt.simulated and value is not None and not simulate:
            raise CLIError(f"--{opt.name} applies only with --simulate (side information "
                           "drawn from the file's labels)")
        values[opt.name] = opt.default if value is None else value
    if simulate:
        if y is None:
            raise CLIError(f"--simulate draws side information from the data file's labels; "
                           f"{args.data} has none")
        given = [f"--{s}" for s in spec.side if getattr(args, s) is not None]
        if given:
            raise CLIError(f"--simulate and {', '.join(given)} exclude each other: use the "
                           "file(s) or simulate, not both")
    return simulate, values


def _cmd_run(name, argv):
    parser = build_run_parser(name)
    args = parser.parse_args(argv)
    spec = REGISTRY[name]
    if os.path.isdir(args.data):
        raise CLIError(f"--data: {args.data} is a directory; give a .mat file")
    _check_options_first(spec, args, parser)
    if not os.path.isfile(args.data):
        raise CLIError(f"--data: file not found: {args.data}")
    out = args.out
    if out is None:
        stem = os.path.splitext(os.path.basename(args.data))[0]
        out = f"{stem}.{name}.labels"
    out, out_stream = _output_path(out, "--out", spec.labels_suffix)
    if args.plot:
        plot._pyplot()  # fail before the solve when matplotlib is missing
        _output_path(args.plot, "--plot", None)
    views, y, classes = datasets.load_mat(args.data, views=args.views, return_classes=True)
    side = {s: load_side(getattr(args, s), s) for s in spec.side
            if getattr(args, s) is not None}
    coded = _labels_in_file_codes(side, classes)
    check_side(side, views, name)
    simulate, simulation = _simulation_options(spec, args, y)
    params = {k[len("param_"):]: v for k, v in vars(args).items() if k.startswith("param_")}
    for key, value in spec.cli_defaults.items():
        params.setdefault(key, value)
    params.update(simulation)
    if any(opt.simulated for opt in spec.simulation):
        params["simulate"] = simulate
    params["n_clusters"] = args.n_clusters
    # compile (or load from Numba's cache) the kernels for this kind of data first, so that
    # "seconds" is the solve alone
    t0 = time.perf_counter()
    spec.warmup(dtype=np.float32 if all(V.dtype == np.float32 for V in views) else np.float64,
                sparse=any(sp.issparse(V) for V in views))
    compile_seconds = time.perf_counter() - t0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            with feedback(sys.stderr):  # long work shows itself after a few seconds
                outcome = spec.run((views, y), side, params, args.seed)
        except ValueError as exc:  # InvalidParameterError too: say the option, not the name
            raise CLIError(_as_option(exc, parser)) from exc
        seconds = time.perf_counter() - start
    notes = list(dict.fromkeys(f"{w.category.__name__}: {one_line(w.message)}"
                               for w in caught))
    for note in notes:  # one line each, after the solve
        print(f"fastmv: warning: {note}", file=sys.stderr)
    if out_stream:
        with open(out, "wb") as f:
            _save_labels(f, outcome.labels)
    else:
        _save_labels(out, outcome.labels)
    scores = _scores(outcome.scored)
    if args.plot:
        _run_picture(name, outcome, args.plot)
    res = outcome.result
    report = {
        "solver": name, "data": args.data, "setting": outcome.setting,
        "n_samples": int(views[0].shape[0]), "n_views": len(views),
        "metrics": scores, "seconds": seconds, "compile_seconds": compile_seconds,
        "n_iter": _jsonable(getattr(res, "n_iter", None)),
        "converged": _jsonable(getattr(res, "converged", None)),
        "labels_file": os.path.abspath(out), "plot_file":
            os.path.abspath(args.plot) if args.plot else None,
        "warnings": notes, "simulated": simulate,
        "classes": None if classes is None else _jsonable(classes),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    header = ("solver", "setting") + (("ACC", "NMI", "ARI") if scores else ()) + ("seconds",)
    row = (name, outcome.setting) + ((tuple(f"{scores[k]:.3f}" for k in ("acc", "nmi", "ari"))
                                      if scores else ()) + (f"{seconds:.2f}",))
    if coded:
        print(f"note: --labels holds the file's class codes ({_codes(classes)}), read as "
              f"classes 0..{classes.size - 1} in that order, as the file's labels are")
    if simulate:
        print(f"note: --simulate: the side information was drawn from the file's own labels "
              f"({outcome.setting.split(',')[0]}); the metrics are those of a run that was "
              "shown part of the answer")
    print(format_table(header, [row]))
    if not scores:
        print("(no labels in the file: metrics omitted)")
    print(f"compile (or cache load) before the solve: {compile_seconds:.2f} s")
    print(f"labels saved to {out}")
    if args.plot:
        print(f"picture saved to {args.plot}")
    return 0


def _labels_in_file_codes(side, classes):
    """Renumber a ``--labels`` file given in the data file's own class codes (e.g. 1..10) as
    :func:`fastmv.datasets.load_mat` numbers the file's labels (0..c-1); True when it did.
    A file is read in the file's codes when those are not 0..c-1 already and every entry
    other than -1 (unknown) is one of them; otherwise as 0-based classes."""
    labels = side.get("labels")
    if labels is None or classes is None or classes.dtype.kind not in "biuf":
        return False
    if np.array_equal(classes, np.arange(classes.size)):
        return False
    known = labels != -1
    if not known.any() or not np.isin(labels[known], classes).all():
        return False
    side["labels"] = np.where(known, np.searchsorted(classes, np.where(known, labels,
                                                                        classes[0])), -1)
    return True


def _codes(classes):
    shown = ", ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in classes.tolist())
    if classes.size > 4 and np.array_equal(np.diff(classes), np.ones(classes.size - 1)):
        shown = f"{classes[0]}..{classes[-1]}"
    return shown


# The solvers' names of the side information, and the options that give it.
_SIDE_OPTIONS = {"must_link": "must", "cannot_link": "cannot", "labels": "labels",
                 "mask": "mask"}
_SIDE_MESSAGE = re.compile(r"^(must_link|cannot_link|labels|mask)(?:\[(\d+)\])?"
                           r"( (?:=|must|has|contains|is) .*)$", re.S)

def _check_options_first(spec, args, parser):
    """The solver's options against its declared constraints, before any file is read or
    side information is asked for: a bad value is named as its option first."""
    constraints = getattr(spec.function, "parameter_constraints", {})
    given = {k[len("param_"):]: v for k, v in vars(args).items()
             if k.startswith("param_") and v is not None and k[len("param_"):] in constraints}
    try:
        validate_params(constraints, given, spec.name)
    except ValueError as exc:
        raise CLIError(_as_option(exc, parser)) from exc


_PARAMETER_MESSAGE = re.compile(r"^The '(\w+)' parameter of \w+\(\) (.*)$|^(\w+)=(.*)$", re.S)


def _as_option(exc, parser):
    """A solver's message about parameter ``name`` as one about the option ``--name``."""
    msg = one_line(exc)
    side = _SIDE_MESSAGE.match(msg)
    if side and f"--{_SIDE_OPTIONS[side.group(1)]}" in {
            o for a in parser._actions for o in a.option_strings}:
        where = f"row {side.group(2)} of the file" if side.group(2) else "the file"
        rest = side.group(3).strip()
        return f"--{_SIDE_OPTIONS[side.group(1)]}: {where} {rest}".rstrip()
    m = _PARAMETER_MESSAGE.match(msg)
    options = {o for a in parser._actions for o in a.option_strings}
    if m and m.group(1) and f"--{m.group(1)}" in options:
        return f"--{m.group(1)}: {m.group(2)}"
    if m and m.group(3) and f"--{m.group(3)}" in options:
        return f"--{m.group(3)}: {m.group(3)}={m.group(4)}"
    return msg


def _save_labels(target, labels):
    if isinstance(labels, dict):
        np.savez(target, **labels)
    else:
        np.save(target, np.asarray(labels))


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _run_picture(name, outcome, path):
    plt = plot._pyplot()
    has_labels = bool(outcome.scored)
    fig, axes = plt.subplots(1, 2 if has_labels else 1, figsize=(11 if has_labels else 6, 4.5),
                             squeeze=False)
    if outcome.result is not None:
        plot.convergence(outcome.result, ax=axes[0, 0])
    axes[0, 0].set_title(f"{name}: {outcome.setting}"[:70])
    if has_labels:
        y_true, y_pred = outcome.scored[0]
        keep = np.asarray(y_pred) >= 0
        plot.contingency(np.asarray(y_true)[keep], np.asarray(y_pred)[keep], ax=axes[0, 1])
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


# --------------------------------------------------------------------------------- compile
def _cmd_compile(args):
    names = _solver_list(args.solvers or [])
    total = time.perf_counter()
    table = _Streamed(("solver", "dtype", "input", "seconds"),
                      [(n, "float64", "sparse") for n in names], left=3)
    for name in names:
        spec = REGISTRY[name]
        for dtype in (np.float64, np.float32):
            for sparse in ((False, True) if spec.sparse else (False,)):
                t0 = time.perf_counter()
                spec.warmup(dtype=dtype, sparse=sparse)
                table.line((name, np.dtype(dtype).name, "sparse" if sparse else "dense",
                            f"{time.perf_counter() - t0:.2f}"))
    # numba: on first use
    from ..kernels._options import numba_cache_directory  # noqa: PLC0415

    print(f"Numba cache filled in {time.perf_counter() - total:.1f} s, in "
          f"{numba_cache_directory()} (set NUMBA_CACHE_DIR to choose)")
    return 0


def _cmd_list(args):
    width = max(len(n) for n in REGISTRY)
    for name, spec in REGISTRY.items():
        side = ", ".join(f"--{s}" for s in spec.side) or "none"
        print(f"{name:{width}s}  {spec.description} (side information: {side})")
    return 0


# -------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The top-level parser (``run``'s solver options are parsed by
    :func:`build_run_parser`).

    Returns
    -------
    argparse.ArgumentParser
        Its errors raise ``CLIError`` (printed as one line by :func:`main`).

    Examples
    --------
    >>> build_parser().parse_args(["demo", "--seed", "3"]).seed
    3
    """
    parser = Parser(prog="python -m fastmv",
                     description="fastmv: fast multi-view clustering (MVMC, MVFL, EMVC, "
                                 "CMVNMF, OPIMC).")
    parser.add_argument("--version", action="version",
                        version=f"fastmv {_version()} (python -m fastmv)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    demo = sub.add_parser(
        "demo", help="run every solver on the embedded Handwritten data",
        description="Run every solver on the embedded UCI Multiple Features (Handwritten) "
                    "data with simulated side information; one row per setting with its own "
                    "seconds, compilation timed apart.")
    demo.add_argument("--seed", type=typed("seed", parse_int), default=0,
                      help="random seed (default 0)")
    demo.add_argument("--solvers", nargs="+", default=None, metavar="SOLVER",
                      help="subset of solvers, space- or comma-separated (default: all)")
    demo.add_argument("--plot", default=None, metavar="DIR",
                      help="write pictures (convergence, contingency, MVFL view weights) here")
    run = sub.add_parser(
        "run", help="run one solver on a .mat file (run SOLVER --help for its options)",
        description="Run one solver on a MATLAB .mat file. 'python -m fastmv run SOLVER "
                    "--help' lists the solver's options.",
        epilog="Solvers: " + "; ".join(f"{k}: {v.description}" for k, v in REGISTRY.items()))
    run.add_argument("solver", choices=list(REGISTRY), help="one of: " + ", ".join(REGISTRY))
    run.add_argument("options", nargs=argparse.REMAINDER,
                     help="the solver's options (see run SOLVER --help)")
    comp = sub.add_parser(
        "compile", help="fill Numba's cache for every solver",
        description="Compile every solver's kernels into Numba's cache (float64 and float32, "
                    "dense and sparse inputs) with small synthetic calls, e.g. when building a "
                    "container image.")
    comp.add_argument("--solvers", nargs="+", default=None, metavar="SOLVER",
                      help="subset of solvers (default: all)")
    sub.add_parser("list", help="list the solvers")
    return parser


def _version():
    from .. import __version__  # noqa: PLC0415 (the package's __init__ imports nothing eagerly)

    return __version__


def _interrupted(exc):
    """Whether ``exc`` is, or was caused by, a KeyboardInterrupt (a compiled call can wrap
    it in a SystemError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _quiet_broken_pipe():
    """The reader went away (``fastmv list | head -2``): send the rest of stdout nowhere so
    that the interpreter's final flush does not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by a closed pipe


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 when a demo solver failed, 2 on any error (one line on stderr).

    Examples
    --------
    >>> main(["list"])  # doctest: +ELLIPSIS
    mvmc ...
    0
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 2
        if args.command == "demo":
            return _cmd_demo(args)
        if args.command == "compile":
            return _cmd_compile(args)
        if args.command == "list":
            return _cmd_list(args)
        return _cmd_run(args.solver, args.options)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        print("fastmv: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line, no traceback (FASTMV_DEBUG=1 shows it)
        if _interrupted(exc):
            print("fastmv: interrupted", file=sys.stderr)
            return 130
        if os.environ.get("FASTMV_DEBUG"):
            raise
        msg = one_line(exc)
        if not isinstance(exc, (CLIError, ValueError, TypeError, OSError)):
            msg = f"{type(exc).__name__}: {msg}"
        print(f"fastmv: error: {msg}", file=sys.stderr)
        return 2
