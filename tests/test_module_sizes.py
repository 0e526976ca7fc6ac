"""No Python module of the repository is over 800 lines: a module that grows past it is split by
concern (a test module into modules of one concern each, with the inputs they share in a
``helpers.py`` or ``conftest.py`` beside them, as in ``tests/cmvnmf/``)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("fastmv", "kernels", "tests", "benchmarks", "tools", ".ci")
MAX_LINES = 800


def _modules():
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _lines(path):
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_check_reads_every_folder():
    seen = {path.relative_to(ROOT).parts[0] for path in _modules()}
    assert seen == set(FOLDERS)
    assert len(list(_modules())) >= 150


def test_no_module_is_over_800_lines():
    long = {str(p.relative_to(ROOT)): n for p in _modules() if (n := _lines(p)) > MAX_LINES}
    assert not long, f"split these modules by concern: {long}"


def test_the_count_is_of_lines(tmp_path):
    module = tmp_path / "long.py"
    module.write_text("x = 1\n" * (MAX_LINES + 1))
    assert _lines(module) == MAX_LINES + 1
    module.write_text("x = 1\n" * MAX_LINES)
    assert _lines(module) == MAX_LINES
