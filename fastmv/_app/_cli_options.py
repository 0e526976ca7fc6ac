"""The options of ``python -m fastmv run SOLVER``, built from the solver's signature and
docstring, and the side-information files they name; usage errors are one-line
:class:`CLIError` messages."""
from __future__ import annotations

import argparse
import inspect
import os
import re

import numpy as np

from .._core._cli_parts import parse_bool
from ._estimator_docs import parameter_entries
from ._registry import REGISTRY, hyper_parameters

__all__ = ["CLIError", "build_run_parser", "check_side"]


class CLIError(Exception):
    """An error reported to the user as one line."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (raised, printed by :func:`main`)."""

    def error(self, message):
        raise CLIError(f"{self.prog}: {message}")


def one_line(exc):
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return msg


def _param_docs(func):
    """``{name: first sentence}`` from the numpydoc Parameters section of ``func`` (``%``
    escaped for argparse)."""
    out = {}
    for names, _, body in parameter_entries(func):
        text = " ".join(line.strip() for line in body).strip()
        first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0].replace("%", "%%")
        out.update(dict.fromkeys(names, first))
    return out


def parse_int(text):
    """An int from text; ``2.5`` is refused rather than truncated."""
    try:
        return int(text)
    except ValueError:
        raise ValueError("expected an integer") from None


def _bool_or_level(text):
    """``verbose``: true/false or a level (0, 1, 2)."""
    try:
        return parse_bool(text)
    except ValueError:
        try:
            return int(text)
        except ValueError:
            raise ValueError("expected true, false or a level 0, 1, 2") from None


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise ValueError("expected a number") from None


def _value_parser(name, default):
    """A text -> value converter chosen from the parameter's default."""
    if isinstance(default, bool):
        return _bool_or_level if name == "verbose" else parse_bool
    if isinstance(default, int):
        return parse_int
    if isinstance(default, float):
        return _float

    def literal(text):
        if text.lower() == "none":
            return None
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
        return text
    if isinstance(default, str):
        # a string default may stand for a number too ("auto" or a weight: --beta 0.5)
        def text_or_number(text):
            if text.lower() == "none":
                return None
            if not any(ch.isdigit() for ch in text):
                return text
            for kind in (int, float):  # "--k 5" stays an int ("auto" or a rank)
                try:
                    return kind(text)
                except ValueError:
                    pass
            return text
        return text_or_number
    return literal


def typed(name, convert):
    """Wrap ``convert`` so argparse names the option in its one-line message."""
    def parse(text):
        try:
            return convert(text)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(f"invalid value {text!r} ({exc})") from None
    parse.__name__ = getattr(convert, "__name__", name)
    return parse


_SIDE_HELP = {
    "must": "file (.npy or .txt) of must-link pairs, one pair of 0-based sample indices per row",
    "cannot": "file (.npy or .txt) of cannot-link pairs, same layout as --must",
    "labels": "file (.npy or .txt) of partial labels, one per sample, -1 where unknown",
    "mask": "file (.npy or .txt) of an (n, views) 0/1 mask, 1 where a sample is present",
}


def build_run_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``python -m fastmv run NAME``: common options, the side-information files
    the solver takes, the simulation options, and the solver's own parameters (from its
    signature and docstring).

    Parameters
    ----------
    name : str
        A solver of the registry (``mvmc``, ``mvfl``, ``emvc``, ``cmvnmf``, ``opimc``).

    Returns
    -------
    argparse.ArgumentParser
        Its errors raise ``CLIError`` (printed as one line by :func:`fastmv._app._cli.main`).

    Examples
    --------
    >>> parser = build_run_parser("mvmc")
    >>> parser.parse_args(["--data", "d.mat", "--C1", "10"]).param_C1
    10.0
    """
    spec = REGISTRY[name]
    func = spec.function
    parser = Parser(
        prog=f"python -m fastmv run {name}", allow_abbrev=False,
        description=f"{name}: {spec.description}. Reads a MATLAB .mat file (see "
                    "fastmv.datasets.load_mat; labels optional), prints the metrics (when the "
                    "file has labels) and the seconds, and saves the labels in the input's "
                    "sample order.",
    )
    common = parser.add_argument_group("data and output")
    common.add_argument("--data", required=True, help="path of the .mat file")
    common.add_argument("--views", type=typed("views", _int_list), default=None,
                        help="comma-separated view indices to use (default: all)")
    common.add_argument("--n_clusters", type=typed("n_clusters", parse_int), default=None,
                        help="number of clusters (default: the number of classes in the "
                             "file's labels)")
    common.add_argument("--seed", type=typed("seed", parse_int), default=0, help="random seed")
    ext = spec.labels_suffix
    common.add_argument("--out", default=None,
                        help=f"where to save the labels (default: <data name>.{name}.labels"
                             f"{ext} in the current directory)")
    common.add_argument("--json", action="store_true",
                        help="print one JSON object instead of the table")
    common.add_argument("--plot", default=None, metavar="FILE.png",
                        help="save a picture (convergence, and the contingency table when "
                             "the file has labels)")
    if spec.side:
        side = parser.add_argument_group("side information (files)")
        for s in spec.side:
            side.add_argument(f"--{s}", default=None, metavar="FILE",
                              help=spec.side_help.get(s, _SIDE_HELP[s]))
    simulated = [o for o in spec.simulation if o.simulated]
    if simulated:
        sim = parser.add_argument_group(
            "simulated side information (only with --simulate)",
            "Side information drawn from the data file's own labels, to try the solver on a "
            "labelled benchmark. Without --simulate and without side-information files "
            f"{spec.without_side}")
        sim.add_argument("--simulate", action="store_true",
                         help="draw the side information from the file's labels (announced "
                              "in the output; the file must have labels)")
        for opt in simulated:
            sim.add_argument(f"--{opt.name}", type=typed(opt.name, opt.type), default=None,
                             help=f"{opt.help} (default: {opt.default}; needs --simulate)")
    construction = [o for o in spec.simulation if not o.simulated]
    if construction:
        group = parser.add_argument_group("input construction")
        for opt in construction:
            boolean = opt.type is parse_bool
            group.add_argument(f"--{opt.name}", type=typed(opt.name, opt.type),
                               default=opt.default, nargs="?" if boolean else None,
                               const=True if boolean else None,
                               help=f"{opt.help} (default: {opt.default})")
    docs = _param_docs(func)
    group = parser.add_argument_group(f"{name} parameters (see help(fastmv.{name}))")
    for p in hyper_parameters(func):
        if p.name in ("n_clusters", "random_state", "callback"):
            continue
        default = spec.cli_defaults.get(p.name, p.default)
        if default is inspect.Parameter.empty:
            continue
        if not isinstance(default, (bool, int, float, str, type(None))):
            continue
        boolean = isinstance(default, bool)  # a flag: --verbose alone means true
        group.add_argument(f"--{p.name}", dest=f"param_{p.name}", metavar=p.name.upper(),
                           type=typed(p.name, _value_parser(p.name, default)),
                           default=argparse.SUPPRESS, nargs="?" if boolean else None,
                           const=True if boolean else None,
                           help=(docs.get(p.name) or "") + f" (default: {default!r})")
    return parser


def _int_list(text):
    return [int(v) for v in text.split(",")]


def load_side(path, option):
    """A side-information array from ``.npy`` or text."""
    if not os.path.isfile(path):
        raise CLIError(f"--{option}: file not found: {path}")
    try:
        if path.endswith(".npy"):
            arr = np.load(path, allow_pickle=False)
        else:
            arr = np.loadtxt(path, ndmin=2 if option in ("must", "cannot", "mask") else 1)
    except (OSError, ValueError) as exc:
        raise CLIError(f"--{option}: cannot read {path}: {one_line(exc)}") from None
    if option == "labels":
        arr = np.asarray(arr).reshape(-1)
    if arr.dtype.kind not in "biuf":
        raise CLIError(f"--{option}: {path} must hold numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise CLIError(f"--{option}: {path} must hold integers")
        arr = arr.astype(np.int64)
    if option == "mask":
        if arr.ndim != 2 or not np.isin(arr, (0, 1)).all():
            raise CLIError(f"--{option}: {path} must be a 2-D table of 0 and 1 (one row per "
                           f"sample, one column per view), got shape {arr.shape} with values "
                           f"{_some_values(arr)}")
        return arr.astype(bool)
    return arr


def _some_values(arr):
    values = np.unique(arr)
    text = ", ".join(str(v) for v in values[:6])
    return text + (", ..." if values.size > 6 else "")


def check_side(side: dict, views: list, name: str) -> None:
    """Side-information arrays against the data (the number of samples and views), each
    error naming its option.

    Parameters
    ----------
    side : dict
        ``{option: array}`` as read by :func:`load_side`.
    views : list of array-like
        The data's views.
    name : str
        The solver.

    Examples
    --------
    >>> check_side({"labels": np.array([0, -1])}, [np.zeros((3, 2))], "mvfl")
    Traceback (most recent call last):
    ...
    fastmv._app._cli_options.CLIError: --labels: 2 labels for 3 samples
    """
    n, m = views[0].shape[0], len(views)
    check_pairs = REGISTRY[name].check_pairs
    for option, arr in side.items():
        if option == "mask":
            if arr.shape != (n, m):
                raise CLIError(f"--mask: shape {arr.shape}, expected ({n}, {m}): one row per "
                               "sample, one column per view")
        elif option == "labels":
            if arr.size != n:
                raise CLIError(f"--labels: {arr.size} labels for {n} samples")
            if arr.size and arr.min() < -1:
                raise CLIError("--labels: labels must be -1 (unknown) or a class 0, 1, ...; "
                               f"got {int(arr.min())}")
        elif check_pairs is not None:
            try:
                check_pairs(arr, option, views)
            except ValueError as exc:
                raise CLIError(str(exc)) from None
        else:
            if arr.ndim != 2 or arr.shape[1] != 2:
                raise CLIError(f"--{option}: pairs need 2 columns (two 0-based sample "
                               f"indices), got shape {arr.shape}")
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise CLIError(f"--{option}: sample index out of range 0..{n - 1}")
