"""docs/architecture.md, the contributors' map, kept true: every file or folder it cites
exists, every ``file.py::name`` (or ``file.py::Class.method``) it cites is defined in that
file, every dotted ``fastmv.module.name`` resolves, every module of the shared folders and
the kernels is named, and each public function has its walk to its kernels."""
import ast
import re
from pathlib import Path

import fastmv
from fastmv._core._spec import solver_specs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
# `fastmv/_core/_spec.py`, `kernels/_compile.py::serial_copy`, `benchmarks/`,
# `fastmv/_opimc/_problem.py::Problem.step`
CITED = re.compile(r"`((?:fastmv|kernels|tests|benchmarks|docs|tools)/[A-Za-z0-9_./]*)"
                   r"(?:::([A-Za-z_][A-Za-z0-9_.]*))?`")
# `fastmv._core._driver.Step`, `fastmv.emvc`
DOTTED = re.compile(r"`(fastmv(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")
# the walks: a bold public name opening a paragraph
WALK = re.compile(r"^\*\*`fastmv\.([a-z_]+)`\*\* \((\d+) hops", re.M)


def _citations(text):
    return [(path, name) for path, name in CITED.findall(text)]


def _defines(path, dotted):
    """Whether ``path`` defines ``dotted`` (``name`` or ``Class.method``) at its top level
    (a def, a class, an assignment or an import that re-exports it)."""
    scope = ast.parse(path.read_text(encoding="utf-8")).body
    for part in dotted.split("."):
        found = None
        for node in scope:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = {node.name}
            elif isinstance(node, ast.Assign):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = {node.target.id}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = {a.asname or a.name for a in node.names}
            else:
                continue
            if part in names:
                found = node
        if found is None:
            return False
        scope = getattr(found, "body", [])
    return True


def _module_file(parts):
    """The file of the dotted module ``parts`` (``fastmv.kernels.x``: ``kernels/x.py``)."""
    rel = ["kernels", *parts[2:]] if parts[1:2] == ["kernels"] else parts
    for candidate in (ROOT.joinpath(*rel).with_suffix(".py"), ROOT.joinpath(*rel, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _resolves(dotted):
    """A dotted ``fastmv...`` name: a module, or a name defined in one (a public solver
    function is one of ``fastmv``'s lazy names)."""
    parts = dotted.split(".")
    if len(parts) == 2 and parts[1] in dir(fastmv):
        return True
    for cut in range(len(parts), 0, -1):
        path = _module_file(parts[:cut])
        if path is not None:
            return cut == len(parts) or _defines(path, ".".join(parts[cut:]))
    return False


def test_the_map_cites_paths_and_names():
    assert len(_citations(DOC.read_text())) >= 20


def test_every_cited_path_and_name_exists():
    missing = []
    for path, name in _citations(DOC.read_text()):
        target = ROOT / path
        if not target.exists():
            missing.append(path)
        elif name and not _defines(target, name):
            missing.append(f"{path}::{name}")
    assert not missing, missing


def test_every_cited_dotted_name_resolves():
    cited = set(DOTTED.findall(DOC.read_text()))
    assert {"fastmv.emvc", "fastmv._core._driver.Step"} <= cited
    missing = sorted(d for d in cited if not _resolves(d))
    assert not missing, missing


def test_the_check_catches_a_stale_citation():
    stale = "`kernels/_partition.py::serial_copy` and `fastmv/_core/_nothing.py`"
    cites = _citations(stale)
    assert cites == [("kernels/_partition.py", "serial_copy"), ("fastmv/_core/_nothing.py", "")]
    assert not _defines(ROOT / "kernels" / "_partition.py", "serial_copy")
    assert _defines(ROOT / "kernels" / "_compile.py", "serial_copy")
    # a method: its class must hold it
    assert _defines(ROOT / "fastmv" / "_opimc" / "_problem.py", "Problem.step")
    assert not _defines(ROOT / "fastmv" / "_opimc" / "_problem.py", "Problem._iterate")
    assert not _resolves("fastmv._core._driver.no_such_name")
    assert not _resolves("fastmv._core._no_such_module")


def test_every_module_of_the_shared_folders_and_the_kernels_is_named():
    text = DOC.read_text()
    unnamed = []
    for folder in ("fastmv", "fastmv/_core", "fastmv/_blocks", "fastmv/_app", "kernels"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.stem == "__init__" and folder != "fastmv":
                continue
            if not re.search(rf"`(?:[\w/]*/)?{re.escape(path.stem)}(?:\.py)?(?:::\w+)?`", text):
                unnamed.append(str(path.relative_to(ROOT)))
    assert not unnamed, f"name these modules in docs/architecture.md: {unnamed}"


def _walks():
    """``{solver: (hops stated, [(file, name) of each step])}`` of the map's walks."""
    text = DOC.read_text()
    out = {}
    for m in WALK.finditer(text):
        paragraph = text[m.start():text.find("\n\n", m.start())]
        walk = paragraph.split("):", 1)[1]          # after the heading's (hops, files)
        walk = walk.split(";")[0].split(". ")[0]    # the walk itself, before the asides
        # each step: the first citation between two arrows (the rest are asides)
        steps = [_citations(piece)[0] for piece in walk.split("→")]
        out[m.group(1)] = (int(m.group(2)), steps)
    return out


def _function(path, dotted):
    """The ``def`` of ``dotted`` (``name`` or ``Class.method``) in ``path``."""
    scope = ast.parse(path.read_text(encoding="utf-8")).body
    node = None
    for part in dotted.split("."):
        node = next(n for n in scope if getattr(n, "name", None) == part)
        scope = node.body
    return node


def _referenced(node):
    """The names a function's body refers to (``f``, ``self.f``, ``problem.step``)."""
    return ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)})


def _called(node):
    """The names a function's body calls (``f(...)``, ``self.f(...)``)."""
    calls = [n.func for n in ast.walk(node) if isinstance(n, ast.Call)]
    return ({f.id for f in calls if isinstance(f, ast.Name)}
            | {f.attr for f in calls if isinstance(f, ast.Attribute)})


def _calls_next(path, dotted, callee):
    """Whether the function ``dotted`` of ``path`` refers to ``callee``, itself or through a
    function of the same class or module that picks it without calling it
    (``self._update_kernel()(...)``): a function in between that makes the call is a hop
    the walk must show."""
    node = _function(path, dotted)
    names = _referenced(node)
    if callee in names:
        return True
    owner = dotted.rpartition(".")[0]
    for helper in names:
        try:
            other = _function(path, f"{owner}.{helper}" if owner else helper)
        except StopIteration:
            continue
        if (isinstance(other, ast.FunctionDef) and callee in _referenced(other)
                and callee not in _called(other)):
            return True
    return False


def test_every_public_function_has_its_walk_to_its_kernels():
    """One walk per registered solver, each ending at a kernel of ``kernels/``, its hop count
    the number of arrows (the parameter check counted as the first hop), each step calling
    the next: a walk that no longer matches the code fails here."""
    walks = _walks()
    assert set(walks) == set(solver_specs()), sorted(walks)
    for name, (hops, steps) in walks.items():
        assert len(steps) == hops, (name, len(steps), hops)
        assert steps[-1][0].startswith(f"kernels/{name}"), (name, steps[-1])
        assert steps[0] == (f"fastmv/_{name}/_solver.py", name), (name, steps[0])
        for (path, caller), (_, callee) in zip(steps, steps[1:]):
            assert _calls_next(ROOT / path, caller, callee.rpartition(".")[2]), (
                f"{path}::{caller} does not call {callee}")


def test_the_walk_check_catches_a_missing_hop():
    problem = ROOT / "fastmv" / "_opimc" / "_problem.py"
    assert _calls_next(problem, "Problem._run", "_stream_chunk_iterate")
    assert not _calls_next(problem, "Problem.step", "_stream_chunk_iterate")
    assert _calls_next(ROOT / "fastmv" / "_cmvnmf" / "_problem.py", "Problem.update_v",
                       "multiplicative_update")        # picked by Problem._update_kernel
    # a method in between that makes the call is a hop of its own
    assert not _calls_next(problem, "Problem._chunk", "_stream_chunk_iterate")


def test_every_record_is_listed_in_the_records_index():
    records = ROOT / "docs" / "records"
    index = (records / "index.md").read_text()
    unlisted = sorted(p.name for p in records.glob("*.md")
                      if p.name != "index.md" and f"]({p.name})" not in index)
    assert not unlisted, f"add a line for each to docs/records/index.md: {unlisted}"
