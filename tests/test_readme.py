"""Every ```python block of README.md runs as written, in order, in one namespace (a block
may use the names of the blocks before it)."""
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text):
    """The bodies of the fenced ```python blocks of a Markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_readme_has_python_blocks():
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert blocks, "README.md has no ```python block"
    assert python_blocks("```python\na = 1\n```\ntext\n```bash\nls\n```\n") == ["a = 1\n"]


@pytest.mark.slow
def test_every_readme_python_block_runs(capsys):
    pytest.importorskip("sklearn")
    namespace = {"__name__": "__readme__"}
    for i, block in enumerate(python_blocks(README.read_text(encoding="utf-8"))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)
            code = compile(block, f"README.md python block {i + 1}", "exec")
        exec(code, namespace)  # noqa: S102 (the README's own code)
    out = capsys.readouterr().out
    assert "acc" in out.lower() and "alpha" in out
