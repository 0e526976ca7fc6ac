"""The package's layout as a checked contract: which folder may import which, where a module
lives, and the size of the kernels' signatures. Read from the source (``ast``), nothing runs."""
import ast
import pathlib
import re

import pytest

from fastmv._core._spec import solver_specs

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLVERS = tuple(solver_specs())
SHARED_KERNELS = {"_options", "_compile", "_partition", "_checks", "simplex", "clustering",
                  "affinity"}


def _imports(path, package):
    """Absolute names of the modules ``path`` imports (relative imports resolved against
    ``package``), with the names a ``from X import a, b`` brings in as ``X.a``, ``X.b`` too
    (they may be submodules)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def _modules(folder, package):
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        name = ".".join([package, *parts])
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        yield name, path, _imports(path, pkg)


def _fastmv_modules():
    return list(_modules("fastmv", "fastmv"))


def _kernel_modules():
    return list(_modules("kernels", "fastmv.kernels"))


def _area(module):
    """``core``, ``blocks``, ``app``, a solver's name, ``kernels`` or ``public``."""
    parts = module.split(".")
    if len(parts) < 2:
        return "public"
    if parts[1] == "kernels":
        return "kernels"
    second = parts[1].lstrip("_")
    if second in SOLVERS or second in ("core", "blocks", "app"):
        return second if parts[1].startswith("_") else "public"
    return "public"


def test_kernels_import_only_numpy_numba_and_kernels_helpers():
    """A kernel module imports numpy, numba, the standard library's typing helpers, the
    shared kernel modules (the partition helpers and the generic kernels) and the parts of
    its own solver's module (``opimc_layout`` for ``opimc``) — never ``fastmv`` itself.
    The compile options (``_options``) may also read the file system (``os``: where an
    installed copy keeps Numba's cache)."""
    allowed_external = {"numpy", "numba", "typing", "types", "__future__"}
    for name, _, imports in _kernel_modules():
        own = name.rpartition(".")[2].split("_")[0]
        for imp in imports:
            top = imp.split(".")[0]
            if top != "fastmv":
                allowed = allowed_external | ({"os"} if name.endswith("._options") else set())
                assert top in allowed, f"{name} imports {imp}"
                continue
            assert imp.startswith("fastmv.kernels"), f"{name} imports {imp}"
            parts = imp.split(".")
            if len(parts) < 3 or not (ROOT / "kernels" / f"{parts[2]}.py").exists():
                continue  # ``from . import x`` names resolve below, or a symbol
            target = parts[2]
            assert target in SHARED_KERNELS or target.split("_")[0] == own, (
                f"{name} imports the kernels of another solver: {imp}")


def test_folders_import_downwards():
    """``_core`` imports nothing above it; ``_blocks`` only ``_core``; a solver folder only
    ``_core``, ``_blocks``, the kernels and the public helpers (``exceptions``, ``simulate``,
    ``metrics``, ``plot``; ``datasets`` for the demo), never another solver's folder. (A lazy
    ``import fastmv`` inside a function of
    ``_core._result``, for the version stamp, is the one upward reference.)"""
    order = {"core": {"core", "kernels"}, "blocks": {"core", "blocks", "kernels"}}
    for s in SOLVERS:
        order[s] = {"core", "blocks", "kernels", s}
    for name, _, imports in _fastmv_modules():
        area = _area(name)
        if area not in order:
            continue
        for imp in imports:
            if not imp.startswith("fastmv.") or imp in ("fastmv.exceptions",):
                continue
            target = _area(imp)
            if target == "public":
                if imp.split(".")[1] in ("exceptions", "simulate", "metrics", "plot"):
                    continue
                if area in SOLVERS and imp.split(".")[1] in ("datasets",):
                    continue
            assert target in order[area], f"{name} ({area}) imports {imp} ({target})"


def test_a_module_used_by_one_solver_lives_in_its_folder():
    """Every module of ``_core`` and ``_blocks`` is used by two solvers or more, or by the
    public modules, ``_app``, the other shared folder or the tests, benchmarks and tools."""
    users = {}
    modules = _fastmv_modules()
    for name, _, imports in modules:
        for imp in imports:
            users.setdefault(imp, set()).add(_area(name))
    for folder in ("tests", "benchmarks", "tools"):
        for _, _, imports in _modules(folder, folder):
            for imp in imports:
                users.setdefault(imp, set()).add("outside")
    for name, path, _ in modules:
        area = _area(name)
        if area not in ("core", "blocks") or path.name == "__init__.py":
            continue
        who = users.get(name, set()) - {area}
        solvers = who & set(SOLVERS)
        assert len(solvers) >= 2 or who - set(SOLVERS), (
            f"{name} is used by {sorted(who) or 'nobody'}: move it to that solver's folder")


def test_every_solver_has_its_folder_kernels_and_tests():
    for s in SOLVERS:
        assert (ROOT / "fastmv" / f"_{s}" / "_solver.py").is_file()
        assert (ROOT / "kernels" / f"{s}.py").is_file()
        assert (ROOT / "tests" / s / f"test_{s}.py").is_file()
        assert (ROOT / "tests" / s / "naive.py").is_file()
        assert (ROOT / "benchmarks" / "references" / f"{s}.py").is_file()
        assert (ROOT / "tests" / s / "cases.py").is_file()       # its part of the shared tests
        assert (ROOT / "benchmarks" / "solvers" / f"{s}.py").is_file()  # its protocols


def _runtime_import_nodes(tree):
    """The import statements of a module that can run: at its top level, in class bodies and
    in functions (a lazy import that closes a cycle hides the cycle, it does not remove it),
    but not under ``if TYPE_CHECKING:`` (annotations only, never executed)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def _import_graph():
    """``{module: modules it imports}`` over fastmv's modules (``fastmv.*`` and the kernels as
    ``fastmv.kernels.*``). ``from P import x`` is an edge to ``P.x`` when that is a module,
    else to ``P``; the parent packages an import implies are not edges of their own."""
    paths = {}
    for folder, package in (("fastmv", "fastmv"), ("kernels", "fastmv.kernels")):
        for name, path, _ in _modules(folder, package):
            paths[name] = path
    graph = {}
    for name, path in paths.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in _runtime_import_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
                continue
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                edges.add(sub if sub in paths else module)
        graph[name] = {m for m in edges if m in paths and m != name}
    return graph


def _a_cycle(graph):
    """One import cycle of ``graph`` as a list ``[a, b, ..., a]``, or ``None``."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) is None


def test_no_import_cycle_among_fastmvs_modules():
    """Imports go one way: no module imports, directly or through others, a module that
    imports it, not even lazily inside a function (a tuner that runs its solver takes the
    solver's function or class as an argument instead of importing it)."""
    graph = _import_graph()
    # the walk reads real imports: a one-way pair, a lazy import and a kernel's import
    assert "fastmv._cmvnmf._tune" in graph["fastmv._cmvnmf._solver"]
    assert "fastmv._mvmc._solver" in graph["fastmv._mvmc._spec"]
    assert "fastmv.kernels._options" in graph["fastmv.kernels._partition"]
    cycle = _a_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_command_lines_solver_parts_live_in_the_solvers_folders():
    """``fastmv/_app/_registry.py`` composes; each solver's own options and ``run`` are in
    its folder's ``_cli.py``, the parts they share in ``fastmv/_core/_cli_parts.py``."""
    registry = ast.parse((ROOT / "fastmv" / "_app" / "_registry.py").read_text())
    names = {node.name for node in ast.walk(registry)
             if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not {n for n in names if any(s in n.lower() for s in SOLVERS)}, names
    for s in SOLVERS:
        tree = ast.parse((ROOT / "fastmv" / f"_{s}" / "_cli.py").read_text())
        defined = {t.id for node in tree.body if isinstance(node, ast.Assign)
                   for t in node.targets if isinstance(t, ast.Name)}
        defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert {"SIMULATION", "CLI_DEFAULTS", "run"} <= defined, (s, sorted(defined))


def _jitted_functions():
    for path in sorted((ROOT / "kernels").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if getattr(target, "id", getattr(target, "attr", None)) == "njit":
                    args = node.args
                    n = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
                    yield f"{path.name}::{node.name}", n


def test_no_jitted_function_takes_more_than_twelve_arguments():
    """Related arrays travel as NamedTuples; a longer signature is a sign of a missing one."""
    arity = dict(_jitted_functions())
    assert len(arity) > 50  # the walk finds the kernels
    too_long = {name: n for name, n in arity.items() if n > 12}
    assert not too_long, too_long


#: The kernels package's public names that are not kernels, the only exemptions from the twin
#: rule below: its compile helpers, plain Python that builds or locates compiled code and
#: computes nothing a NumPy twin could mirror (``inlining`` and ``serial_copy`` are tested in
#: tests/test_compile.py, ``numba_cache_directory`` in tests/test_install_layout.py).
COMPILE_HELPERS = {"_compile": {"inlining", "serial_copy"}, "_options": {"numba_cache_directory"}}


def _is_njit_call(node):
    """Whether ``node`` is ``njit``, ``njit(...)`` or a call of ``njit(...)``."""
    while isinstance(node, ast.Call):
        node = node.func
    return getattr(node, "id", getattr(node, "attr", None)) == "njit"


def _public_kernels(kernels):
    """``{module: {public name: jitted}}`` of the modules of folder ``kernels``: the top-level
    functions and the names bound to a compiled function (``name = njit(...)(...)``) without
    a leading underscore."""
    out = {}
    for path in sorted(kernels.glob("*.py")):
        found = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = any(map(_is_njit_call, node.decorator_list))
            elif isinstance(node, ast.Assign) and _is_njit_call(node.value):
                found.update((t.id, True) for t in node.targets if isinstance(t, ast.Name))
        out[path.stem] = {k: v for k, v in found.items() if not k.startswith("_")}
    return out


def _kernels_without_twin(kernels, tests):
    """``module::name`` of every public kernel of folder ``kernels`` whose name no
    ``naive*.py`` under ``tests`` contains (a NumPy twin), the compile helpers excepted."""
    named = set()
    for path in tests.rglob("naive*.py"):
        named.update(re.findall(r"\w+", path.read_text()))
    return [f"{module}::{name}" for module, names in _public_kernels(kernels).items()
            for name in names
            if name not in named and name not in COMPILE_HELPERS.get(module, ())]


def test_every_public_kernel_has_a_numpy_twin():
    """Every public kernel (no leading underscore) is named in a ``tests/**/naive*.py``, its
    slow, obviously-correct NumPy twin; the one exemption is :data:`COMPILE_HELPERS`."""
    kernels = _public_kernels(ROOT / "kernels")
    assert sum(map(len, kernels.values())) > 50  # the walk finds the kernels
    assert not _kernels_without_twin(ROOT / "kernels", ROOT / "tests")


def test_the_exempted_compile_helpers_are_plain_python_functions():
    """An exemption names a function that exists and is not compiled: it cannot hide a kernel
    nor outlive its helper."""
    kernels = _public_kernels(ROOT / "kernels")
    for module, names in COMPILE_HELPERS.items():
        assert {name: kernels[module].get(name) for name in names} == dict.fromkeys(names, False)


def test_the_twin_check_finds_a_kernel_without_twin(tmp_path):
    kernels, tests = tmp_path / "kernels", tmp_path / "tests" / "solver"
    kernels.mkdir()
    tests.mkdir(parents=True)
    (kernels / "solver.py").write_text(
        "@njit(**SERIAL)\ndef twinned(x):\n    return x\n\n\n@njit\ndef lonely(x):\n"
        "    return x\n\n\ndef _private(x):\n    return x\n\n\n"
        "lonely_serial = njit(**SERIAL)(serial_copy(lonely, 'lonely_serial', 'S.'))\n")
    (kernels / "_compile.py").write_text("def serial_copy(kernel, name, summary):\n    pass\n")
    (tests / "naive.py").write_text("def twinned(x):\n    return x\n")
    assert _kernels_without_twin(kernels, tmp_path / "tests") == [
        "solver::lonely", "solver::lonely_serial"]
    # the exemption is by module: a kernel of that name elsewhere still needs its twin
    (kernels / "other.py").write_text("@njit\ndef serial_copy(x):\n    return x\n")
    assert "other::serial_copy" in _kernels_without_twin(kernels, tmp_path / "tests")


@pytest.mark.parametrize("module", ["fastmv.kernels.clustering", "fastmv.kernels.emvc"])
def test_layout_helpers_resolve_relative_imports(module):
    """The checks above read real imports (a guard against a walk that finds nothing)."""
    found = dict((name, imports) for name, _, imports in _kernel_modules())[module]
    assert "fastmv.kernels._partition" in found and "numpy" in found


def _docstrings(tree):
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _solver_names_in_code(path, root=ROOT):
    """Where ``path``'s code (not its docstrings) names a registered solver in a string: a
    comparison (``name == "cmvnmf"``), a literal collection or a dict key."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in SOLVERS and id(node) not in docs:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


def test_the_app_layer_names_no_solver():
    """The command line and the estimators' machinery know the solvers only through the
    registry: no branch on a solver's name and no per-solver table in ``fastmv/_app`` (what
    one solver needs is declared in its own folder, ``_spec.py`` or ``_cli.py``)."""
    found = [hit for path in sorted((ROOT / "fastmv" / "_app").rglob("*.py"))
             for hit in _solver_names_in_code(path)]
    assert not found, found


def test_the_check_finds_a_solver_name_branch(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""doc naming mvmc"""\nsuffix = ".npz" if name == "cmvnmf" else ""\n')
    assert _solver_names_in_code(planted, tmp_path) == ["planted.py:2: 'cmvnmf'"]


def test_no_import_circle_hides_behind_type_checking():
    """A module imports, for its annotations only, a module that imports it back: the circle
    behind ``if TYPE_CHECKING:`` that a shared type in a module of its own removes. Counted
    here (zero allowed); the package's lazy names in ``fastmv/__init__.py`` are not a circle."""
    circles = []
    for name, path, _ in _modules("fastmv", "fastmv"):
        if path.name == "__init__.py" and path.parent.name == "fastmv":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                circles.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not circles, circles


def _own_solver(rel):
    """The solver a file belongs to, or ``None``: its folder (``fastmv/_<s>/``,
    ``tests/<s>/``), its kernels (``kernels/<s>*.py``), its asv suite, NumPy reference or
    benchmark protocol (``benchmarks/**/bench_<s>.py``, ``references/<s>.py``,
    ``solvers/<s>.py``).

    The one exception to "no solver name outside the registry": a solver's own files compare
    with that solver's name (its tests check the name in its own callbacks and logs; its asv
    suite hands the other settings back to the shared runner). Lists of two names or more
    have no exception; the registry itself names folders (``"fastmv._mvmc"``), not solvers.
    """
    parts = rel.parts
    for s in SOLVERS:
        if f"_{s}" in parts[:-1] or (parts[0] == "tests" and s in parts[:-1]):
            return s
        stem = rel.stem
        if parts[0] == "kernels" and stem.split("_")[0] == s:
            return s
        if parts[0] == "benchmarks" and stem in (s, f"bench_{s}"):
            return s
    return None


#: what names a solver in code: its name as a string, its estimator and result classes
#: (``MVMC``, ``fastmv.MVMCResult``) and its function as an attribute (``fastmv.mvmc``)
_NAMED = {**{spec.estimator: name for name, spec in solver_specs().items()},
          **{spec.result: name for name, spec in solver_specs().items()}}


def _named_solver(node):
    """The solver ``node`` names, or ``None``."""
    if isinstance(node, ast.Constant) and node.value in SOLVERS:
        return node.value
    if isinstance(node, ast.Name):
        return _NAMED.get(node.id)
    if isinstance(node, ast.Attribute):
        return _NAMED.get(node.attr, node.attr if node.attr in SOLVERS else None)
    return None


def _solver_name_lists_and_branches(path, root=ROOT):
    """``(lists, branches)`` of ``path``: literal lists, tuples, sets and dict displays whose
    items (keys) name two solvers or more, and comparisons with a solver other than the
    file's own solver (a solver's own tests, suite or protocol may name it)."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(root)
    own = _own_solver(rel)
    lists, branches = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            names = [s for s in map(_named_solver, filter(None, items)) if s]
            if len(names) >= 2:
                lists.append(f"{rel}:{node.lineno}: {names}")
        elif isinstance(node, ast.Compare):
            names = {_named_solver(c) for c in (node.left, *node.comparators)} - {own, None}
            if names:
                branches.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:60]}")
    return lists, branches


def _solver_name_sites():
    lists, branches = [], []
    for folder in ("fastmv", "kernels", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found = _solver_name_lists_and_branches(path)
            lists += found[0]
            branches += found[1]
    return lists, branches


def test_the_registry_is_the_only_list_of_solvers():
    """Outside the registry no code lists solvers by name or branches on one: every list is
    ``solver_specs()``, and what one solver needs (its test problem, its protocol in a
    benchmark, its yardstick) is declared next to it — its ``SolverSpec``, its ``_cli.py``,
    ``tests/<solver>/cases.py`` or ``benchmarks/solvers/<solver>.py``. A solver's own files
    may name that solver (see :func:`_own_solver`)."""
    lists, branches = _solver_name_sites()
    assert not lists, lists
    assert not branches, branches


def test_the_counter_finds_lists_and_branches(tmp_path):
    folder = tmp_path / "tests"
    folder.mkdir()
    planted = folder / "planted.py"
    planted.write_text('A = {"mvmc": 1, "emvc": 2}\nB = ("x", "opimc", "mvfl")\nC = ["mvmc"]\n'
                       'if name == "cmvnmf":\n    pass\nD = [MVFL, fastmv.OPIMC]\n'
                       'E = {MVMC: fastmv.mvmc}\nF = cls is CMVNMF\n')
    lists, branches = _solver_name_lists_and_branches(planted, tmp_path)
    assert [hit.split(":")[1] for hit in lists] == ["1", "2", "6"]
    assert branches == ["tests/planted.py:4: name == 'cmvnmf'", "tests/planted.py:8: cls is CMVNMF"]
    own = tmp_path / "tests" / "cmvnmf"
    own.mkdir()
    (own / "t.py").write_text('if name == "cmvnmf":\n    pass\n')
    assert _solver_name_lists_and_branches(own / "t.py", tmp_path) == ([], [])


_ASV_PREFIXES = ("time_", "timeraw_", "mem_", "peakmem_", "track_")


def _asv_benchmarks(path):
    """The names of ``path`` asv would run: functions, and methods of classes, whose names
    start with one of asv's prefixes."""
    tree = ast.parse(path.read_text())
    found = [node.name for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name.startswith(_ASV_PREFIXES)]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        found += [f"{cls.name}.{node.name}" for node in cls.body
                  if isinstance(node, ast.FunctionDef) and node.name.startswith(_ASV_PREFIXES)]
    return found


def test_the_asv_suites_are_alone_in_asvs_benchmark_dir():
    """asv imports every module of its ``benchmark_dir``: there are the suites and nothing
    else, and no script of ``benchmarks/`` (run as ``python -m benchmarks.<script>``) holds
    a benchmark asv would miss."""
    import json

    suites = ROOT / json.loads((ROOT / "asv.conf.json").read_text())["benchmark_dir"]
    assert suites.relative_to(ROOT).parts[0] == "benchmarks" and suites != ROOT / "benchmarks"
    modules = sorted(p for p in suites.rglob("*.py") if p.name != "__init__.py")
    assert len(modules) >= 5 and all(p.name.startswith("bench_") for p in modules), modules
    assert all(_asv_benchmarks(p) for p in modules), [p.name for p in modules
                                                      if not _asv_benchmarks(p)]
    scripts = [p for p in (ROOT / "benchmarks").rglob("*.py") if suites not in p.parents]
    assert not {p.name: _asv_benchmarks(p) for p in scripts if _asv_benchmarks(p)}
