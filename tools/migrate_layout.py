"""Rewrite imports and names of the flat layout (before the folder per solver) to the new one.

For a branch started before the move, after merging it: ``python -m tools.migrate_layout
FILE...`` rewrites, in place, every import that does not resolve in the new tree (``from
._validation import x`` in ``fastmv/_mvfl/_solver.py`` becomes ``from .._core._validation
import x``; ``fastmv.kernels.robust`` becomes ``fastmv.kernels.emvc``; ``tests.naive_mvfl``
becomes ``tests.mvfl.naive``), and the renamed solver names (``_prepare_mvfl`` ->
``_prepare``, ``_MVFLProblem`` -> ``Problem``, ...). Imports that already resolve are left
alone. It prints the files it changed; run ruff's import sorting afterwards.
"""
from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLVERS = ("mvmc", "mvfl", "emvc", "cmvnmf", "opimc")

MODULES = {  # old module under fastmv -> new one
    "_mvmc": "_mvmc._solver", "_mvfl": "_mvfl._solver", "_emvc": "_emvc._solver",
    "_cmvnmf": "_cmvnmf._solver", "_opimc": "_opimc._solver",
    "_mvmc_problem": "_mvmc._problem", "_lowrank": "_mvmc._lowrank",
    "_mvfl_fstep": "_mvfl._fstep", "_mvfl_wstep": "_mvfl._wstep", "_svt": "_emvc._svt",
    "_cmvnmf_pairs": "_cmvnmf._pairs", "_opimc_chunks": "_opimc._chunks",
    "_opimc_sources": "_opimc._sources", "_dask": "_opimc._dask", "_solver": "_core._driver",
    **{m: "_core." + m for m in ("_result", "_validation", "_threads", "_executor",
                                 "_preprocessing", "_linalg", "_shared_data", "_contingency",
                                 "_corruption", "_pair_codes")},
    **{m: "_blocks." + m for m in ("_kmeans", "_spectral", "_affinity")},
    **{m: "_app." + m for m in ("_cli", "_cli_options", "_registry", "_estimator_docs")},
}
KERNELS = {"masked": "mvmc", "feature_selection": "mvfl", "robust": "emvc", "nmf": "cmvnmf",
           "streaming": "opimc", "streaming_layout": "opimc_layout",
           "streaming_stats": "opimc_stats"}
RENAMES = [(r"\b_prepare_(mvmc|mvfl|emvc|opimc)\b", "_prepare"),
           (r"\b(MVMCProblem|_MVFLProblem|_EMVCProblem|_OPIMCProblem)\b", "Problem"),
           (r"\b(_Prepared|_EMVCData)\b", "_Data")]
_IMPORT = re.compile(r"^(\s*(?:>>> )?from )(\.*)([\w.]*)( import )(.*)$")


def _exists(module):
    """Whether ``module`` (absolute, ``fastmv.kernels`` mapped to ``kernels/``) is in the tree."""
    parts = module.split(".")
    if parts[:2] == ["fastmv", "kernels"]:
        parts = ["kernels"] + parts[2:]
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _new_name(module):
    parts = module.split(".")
    if parts[0] == "fastmv" and len(parts) > 1 and parts[1] in MODULES:
        return ".".join(["fastmv", MODULES[parts[1]], *parts[2:]])
    if parts[:2] == ["fastmv", "kernels"] and len(parts) > 2 and parts[2] in KERNELS:
        return ".".join(["fastmv", "kernels", KERNELS[parts[2]], *parts[3:]])
    if parts[0] == "tests" and len(parts) == 2 and parts[1][6:] in SOLVERS \
            and parts[1].startswith("naive_"):
        return f"tests.{parts[1][6:]}.naive"
    if parts[0] == "benchmarks" and len(parts) == 2 and parts[1].startswith("_ref_"):
        return f"benchmarks.references.{parts[1][5:]}"
    return module


def _package(path):
    """The package a file is in (``fastmv.kernels`` for ``kernels/``), as a list of names."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "kernels":
        parts = ["fastmv"] + parts
    return parts[:-1]


def _old_package(path):
    """The package the file sat in before the move (the flat ``fastmv`` for its modules)."""
    parts = _package(path)
    if parts[:1] == ["fastmv"] and len(parts) == 2 and parts[1] != "kernels" \
            and parts[1] != "datasets":
        return ["fastmv"]
    return parts


def _relative(target, package):
    t = target.split(".")
    common = 0
    while common < min(len(package), len(t)) and package[common] == t[common]:
        common += 1
    return "." * (len(package) - common + 1) + ".".join(t[common:])


def _defines(module, names):
    """Whether ``module`` defines (or imports, or has as submodules) every name of an
    ``import`` list (``a, b as c``; parentheses and comments ignored)."""
    parts = module.split(".")
    if parts[:2] == ["fastmv", "kernels"]:
        parts = ["kernels"] + parts[2:]
    path = ROOT.joinpath(*parts)
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    text = source.read_text()
    for name in _names(names):
        if (path / f"{name}.py").is_file() or (path / name / "__init__.py").is_file():
            continue
        if not re.search(rf"^(?:def|class) {name}\b|^{name}\s*[:=]|^\s*(?:from .+ )?import .*\b"
                         rf"{name}\b|^\s+{name},", text, re.M):
            return False
    return True


def _names(names):
    return [n.strip().split(" as ")[0] for n in names.split("#")[0].strip("() \\").split(",")
            if n.strip()]


def _resolves(module, names):
    return _exists(module) and _defines(module, names)


def _submodule_import(head, module, imp, names):
    """``from P import old_module [as alias]``: the moved submodule, imported from its new
    parent under its old name (or its alias), so the code that uses it is unchanged."""
    items = _names(names)
    if len(items) != 1 or "#" in names:
        return None
    name = items[0]
    alias = names.split(" as ")[1].strip() if " as " in names else name
    new = _new_name(f"{module}.{name}")
    if new == f"{module}.{name}" or not _exists(new):
        return None
    parent, _, base = new.rpartition(".")
    return head + parent + imp + base + ("" if base == alias else f" as {alias}") + "\n"


def migrate(path):
    text = path.read_text()
    out = []
    for line in text.splitlines(keepends=True):
        m = _IMPORT.match(line.rstrip("\n"))
        if m:
            head, dots, module, imp, names = m.groups()
            if dots:
                new_pkg = _package(path)
                here = ".".join(new_pkg[: len(new_pkg) - len(dots) + 1] + [module] * bool(module))
                itself = ".".join(new_pkg + [path.stem])  # an import of the file itself is stale
                if here == itself or not _resolves(here, names):
                    old_pkg = _old_package(path)
                    absolute = ".".join(old_pkg[: len(old_pkg) - len(dots) + 1]
                                        + [module] * bool(module))
                    target = _new_name(absolute)
                    moved = _submodule_import(head, absolute, imp, names)
                    if moved is not None:
                        target_mod = moved[len(head):].split(imp)[0]
                        line = head + _relative(target_mod, new_pkg) + moved[
                            len(head) + len(target_mod):]
                    elif _resolves(target, names):
                        line = head + _relative(target, new_pkg) + imp + names + "\n"
            elif not _resolves(module, names):
                moved = _submodule_import(head, module, imp, names)
                if moved is not None:
                    line = moved
                elif _resolves(_new_name(module), names):
                    line = head + _new_name(module) + imp + names + "\n"
        out.append(line)
    new = "".join(out)
    for pattern, repl in RENAMES:
        new = re.sub(pattern, repl, new)
    new = re.sub(r"kernels\.(streaming_layout|streaming_stats|streaming|masked|"
                 r"feature_selection|robust|nmf)\b", lambda m: "kernels." + KERNELS[m.group(1)],
                 new)
    if new != text:
        path.write_text(new)
        return True
    return False


def main(argv=None):
    changed = [f for f in (argv if argv is not None else sys.argv[1:])
               if migrate(pathlib.Path(f).resolve())]
    print("\n".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
