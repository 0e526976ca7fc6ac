"""Where Numba caches the kernels: an installed copy (kernels/ inside the fastmv package, as
pip installs it) must leave no file in its own directory that pip did not install, or
``pip uninstall`` / ``pip install -e .`` over it leaves a bare fastmv/ directory that Python
imports as an empty namespace package; a source checkout keeps kernels/__pycache__."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

_CALL = textwrap.dedent("""
    import numpy as np
    from {package}.clustering import nearest_center
    from {package}._options import numba_cache_directory
    labels, _ = nearest_center(np.array([[0.0, 1.0]]), np.array([1.0]), np.array([0.0, 1.0]))
    assert labels.tolist() == [1]
    print(numba_cache_directory())
""")


def _run(root, package, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), NUMBA_NUM_THREADS="1",
               PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", _CALL.format(package=package)], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


def _numba_files(directory):
    return sorted(p.name for p in Path(directory).rglob("*") if p.suffix in (".nbi", ".nbc"))


@pytest.mark.slow
def test_an_installed_copy_caches_outside_its_package(tmp_path):
    site = tmp_path / "site"
    (site / "fakefastmv").mkdir(parents=True)
    (site / "fakefastmv" / "__init__.py").write_text("")
    shutil.copytree(KERNELS, site / "fakefastmv" / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    where = _run(site, "fakefastmv.kernels", tmp_path)
    assert not _numba_files(site), "Numba wrote into the installed package"
    assert where.is_relative_to(tmp_path / "cache" / "numba")
    assert _numba_files(where)


@pytest.mark.slow
def test_a_source_checkout_caches_in_its_pycache(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(KERNELS, checkout / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    where = _run(checkout, "kernels", tmp_path)
    assert where == checkout / "kernels" / "__pycache__"
    assert _numba_files(where)
    assert not (tmp_path / "cache").exists()
