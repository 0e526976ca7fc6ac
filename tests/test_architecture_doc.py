"""docs/architecture.md, the contributors' map, kept true: every file or folder it cites
exists, and every ``file.py::name`` it cites is defined in that file."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
# `fastmv/_core/_spec.py`, `kernels/_compile.py::_serial_copy`, `benchmarks/`
CITED = re.compile(r"`((?:fastmv|kernels|tests|benchmarks|docs|tools)/[A-Za-z0-9_./]*)"
                   r"(?:::([A-Za-z_][A-Za-z0-9_]*))?`")


def _citations(text):
    return [(path, name) for path, name in CITED.findall(text)]


def test_the_map_cites_paths_and_names():
    assert len(_citations(DOC.read_text())) >= 20


def test_every_cited_path_and_name_exists():
    missing = []
    for path, name in _citations(DOC.read_text()):
        target = ROOT / path
        if not target.exists():
            missing.append(path)
        elif name and not re.search(rf"^\s*(?:def|class)\s+{name}\b|^{name}\s*=",
                                     target.read_text(), re.M):
            missing.append(f"{path}::{name}")
    assert not missing, missing


def test_the_check_catches_a_stale_citation():
    stale = "`kernels/_partition.py::_serial_copy` and `fastmv/_core/_nothing.py`"
    cites = _citations(stale)
    assert cites == [("kernels/_partition.py", "_serial_copy"), ("fastmv/_core/_nothing.py", "")]
    assert "def _serial_copy" not in (ROOT / "kernels" / "_partition.py").read_text()


def test_every_record_is_listed_in_the_records_index():
    records = ROOT / "docs" / "records"
    index = (records / "index.md").read_text()
    unlisted = sorted(p.name for p in records.glob("*.md")
                      if p.name != "index.md" and f"]({p.name})" not in index)
    assert not unlisted, f"add a line for each to docs/records/index.md: {unlisted}"
