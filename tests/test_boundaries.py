"""Honest boundaries: a name another module imports is shared, so it carries no leading
underscore (a module is private by its own underscore, ``fastmv/_core/_pair_codes.py``; the
names it shares are plain, ``sample_codes``). Counted over ``fastmv/`` and ``kernels/`` from the
source (``ast``); the count may only go down."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ``from fastmv._x._y import _name`` across modules, today: ``exceptions._not_fitted_error``
# (a public module's private helper) and the unchecked OPIMC and simplex kernels that other
# kernel modules (and ``_opimc/_problem.py``) call; a plain name would make each a public
# kernel, owing bounds checks, a NumPy twin and hostile cases.
BUDGET = 17


def _modules():
    """``{dotted name: path}`` of fastmv's modules, the kernels as ``fastmv.kernels.*``."""
    out = {}
    for folder, package in (("fastmv", "fastmv"), ("kernels", "fastmv.kernels")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts
                     if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def underscored_imports(modules):
    """``(importer, module, name)`` for every ``from <fastmv module> import _name`` where
    ``_name`` is not itself a module (importing a private module is how a package uses it)."""
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "fastmv":
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{source}.{alias.name}" not in modules:
                    found.append((name, source, alias.name))
    return found


def test_the_count_reads_real_imports():
    found = underscored_imports(_modules())
    # a private module imported whole is not counted; a plain shared name is not counted
    assert not any(name == "_driver" for _, _, name in found)
    assert not any(name == "sample_codes" for _, _, name in found)
    assert ("fastmv._app._clusterer", "fastmv.exceptions", "_not_fitted_error") in found


def test_the_count_finds_a_planted_import(tmp_path):
    (tmp_path / "a.py").write_text("from fastmv.b import _shared, plain\nfrom . import _c\n")
    (tmp_path / "b.py").write_text("_shared = plain = 1\n")
    (tmp_path / "_c.py").write_text("")
    modules = {"fastmv.a": tmp_path / "a.py", "fastmv.b": tmp_path / "b.py",
               "fastmv._c": tmp_path / "_c.py"}
    assert underscored_imports(modules) == [("fastmv.a", "fastmv.b", "_shared")]


def test_shared_names_carry_no_underscore():
    found = underscored_imports(_modules())
    assert len(found) <= BUDGET, (
        f"{len(found)} imports of underscored names across modules (budget {BUDGET}): a name "
        "another module imports is shared, name it without the underscore; "
        f"{sorted(found)[:20]}")
