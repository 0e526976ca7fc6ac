"""The installed-extras check that ``.ci/run`` runs after every install."""
import subprocess
import sys
from pathlib import Path

from tests.extras import installed_extras, strict_modules

ROOT = Path(__file__).resolve().parents[1]


def test_the_test_extra_is_found_with_its_modules():
    # the suite runs with the test extra installed (README), so it must be found
    extras = installed_extras()
    assert "test" in extras
    assert {"pytest", "sklearn", "pandas"} <= set(extras["test"])
    assert "sklearn" in strict_modules()


def test_an_unknown_package_has_no_extras():
    assert installed_extras("no-such-distribution-here") == {}


def test_a_broken_module_of_an_installed_extra_fails_the_check(tmp_path):
    # a stand-in for the broken dask/distributed pair: the 'test' extra's pandas shadowed by
    # a module that raises on import
    (tmp_path / "pandas").mkdir()
    (tmp_path / "pandas" / "__init__.py").write_text("raise ImportError('broken pair')\n")
    run = subprocess.run([sys.executable, "-m", "tests.extras"], cwd=ROOT, text=True,
                         capture_output=True, timeout=120,
                         env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "extra 'test': import pandas failed: ImportError: broken pair" in run.stderr
