"""A new solver is one folder and one registry line: the toy solver of ``tests/toy/``,
registered, is picked up by the common tests, the command line, the estimators and
``fastmv``'s names, with no other file edited."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.io

import fastmv
from fastmv import estimators
from fastmv._app import _cli
from fastmv._core._spec import registered, solver_specs
from tests.toy import SPEC as TOY

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def toy():
    with registered(TOY):
        yield TOY


def test_fastmv_names_and_estimator_pick_it_up(toy):
    assert "toy" in solver_specs()
    assert fastmv.toy is toy.function and fastmv.ToyResult is toy.result_type
    assert {"toy", "ToyResult", "Toy"} <= set(dir(fastmv))
    assert estimators.ESTIMATORS["toy"] is fastmv.Toy is estimators.Toy
    X = np.eye(3)[np.arange(30) % 3] + 0.01 * np.arange(30)[:, None]
    views = [X[:, :2], X[:, 2:]]
    model = fastmv.Toy(n_clusters=3, random_state=0)
    assert model.get_params()["max_iter"] == 20  # the solver's default
    labels = model.fit_predict(views, labels=np.r_[0, 1, 2, [-1] * 27])
    assert labels.shape == (30,) and model.result_.n_iter >= 1
    assert np.array_equal(labels[:3], [0, 1, 2])
    with pytest.raises(TypeError, match="mask"):
        model.fit(views, mask=np.ones((30, 2), bool))
    sklearn = pytest.importorskip("sklearn.base")
    assert sklearn.clone(model).get_params() == model.get_params()


def test_gone_after_the_block():
    with registered(TOY):
        assert "toy" in solver_specs()
    assert "toy" not in solver_specs() and "toy" not in estimators.ESTIMATORS
    with pytest.raises(AttributeError):
        fastmv.toy  # noqa: B018


def test_command_line_picks_it_up(toy, tmp_path, capsys):
    assert _cli.main(["list"]) == 0
    assert re.search(r"^toy +k-means on the normalised views .*--labels", capsys.readouterr().out,
                     re.M)
    views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = views[0][:300], views[1][:300]
    scipy.io.savemat(tmp_path / "d.mat", {"X": cell, "y": y[:300, None]})
    labels = np.full(300, -1)
    labels[::10] = y[:300:10]
    np.save(tmp_path / "lab.npy", labels)
    assert _cli.main(["run", "toy", "--data", str(tmp_path / "d.mat"), "--labels",
                      str(tmp_path / "lab.npy"), "--max_iter", "5", "--out",
                      str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "given labels" in out and "ACC" in out
    saved = np.load(tmp_path / "out.npy")
    assert saved.shape == (300,) and np.array_equal(saved[::10], y[:300:10])
    assert _cli.main(["compile", "--solvers", "toy"]) == 0
    assert "Numba cache filled" in capsys.readouterr().out
    assert _cli.main(["demo", "--solvers", "toy"]) == 0
    assert re.search(r"^toy +two views +0\.\d{3}", capsys.readouterr().out, re.M)


def test_common_tests_pick_it_up():
    """tests/test_common.py, run with the toy registered: every per-solver check runs on it."""
    env = {**os.environ, "FASTMV_TEST_TOY_SOLVER": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_common.py", "-k", "toy", "-W", "ignore"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", proc.stdout).group(1))
    # the battery (invalid values of each declared parameter) and the behaviour checks
    assert passed >= 30, proc.stdout[-2000:]


def _files_naming(pattern, *, skip=()):
    found = set()
    for folder in ("fastmv", "kernels", "tests", "benchmarks", "tools", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".toml", "") or not path.is_file():
                continue
            rel = path.relative_to(ROOT).as_posix()
            if any(rel.startswith(s) for s in skip):
                continue
            if re.search(pattern, path.read_text(errors="ignore")):
                found.add(rel)
    return found


def test_files_a_new_solver_touches():
    """The toy is three files in its own folder and its test cases (``cases.py``, the part of
    a test folder the shared tests read) plus one registration (here, this test's
    ``registered``; in the package, a line of ``SOLVER_PACKAGES``): no other file of the
    package, the kernels, the tests, the benchmarks or the tools names it."""
    own = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "toy").glob("*.py"))
    assert own == ["tests/toy/__init__.py", "tests/toy/_solver.py", "tests/toy/_spec.py",
                   "tests/toy/cases.py"]
    others = _files_naming(r"\btests[./]toy\b", skip=("tests/toy/",))
    assert others == {"tests/test_new_solver.py", "tests/conftest.py", "tests/solvers.py"}, \
        others


@pytest.mark.parametrize("name", list(solver_specs()))
def test_files_outside_a_solver_that_import_it(name):
    """Inside the package, a solver's folder and kernels are imported from outside them by
    the registry line and, for the five solvers that predate the generated estimators, by
    their hand-written estimator class and the type checkers' names (a new solver needs
    neither: the estimator is generated and the names are lazy)."""
    unit = (f"fastmv/_{name}/", f"kernels/{name}")
    pattern = rf"fastmv\._{name}\b|from \.+_{name}\b|kernels\.{name}\b|kernels import {name}\b"
    importers = set()
    for folder in ("fastmv", "kernels"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(unit):
                continue
            code = [ln for ln in path.read_text().splitlines()
                    if ln.lstrip().startswith(("from ", "import ", f'"fastmv._{name}"'))]
            if any(re.search(pattern, ln) for ln in code):
                importers.add(rel)
    assert importers == {"fastmv/_core/_spec.py", "fastmv/estimators.py",
                         "fastmv/__init__.py"}, importers
