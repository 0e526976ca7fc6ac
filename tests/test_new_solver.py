"""A new solver is one folder and one registry line: the toy solver of ``tests/toy/``,
registered, is picked up by ``fastmv``'s names, the estimators, the command line, the
registry-parametrised tests (with its own cases, ``tests/toy/cases.py``) and the benchmarks
(the asv suite over every solver and the scripts behind the documentation's tables, with its
protocol), with no other file edited."""
import json
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


def test_the_estimators_public_names_follow_the_registry(toy):
    """``fastmv.estimators.__all__`` is the registry's estimators when the module is imported,
    then ``ViewTransformer`` and ``all_estimators``; ``dir()`` adds a solver registered since.
    A solver registered before the import is in ``__all__`` and a star import brings its
    generated estimator, with nothing written in ``fastmv/estimators.py``."""
    known = {spec.estimator for name, spec in solver_specs().items() if name != "toy"}
    assert set(estimators.__all__) == known | {"ViewTransformer", "all_estimators"}
    assert "Toy" in dir(estimators) and known <= set(dir(estimators))
    child = ("from fastmv._core._spec import registered\nfrom tests.toy import SPEC\n"
             "with registered(SPEC):\n    import fastmv.estimators as e\n    names = {}\n"
             "    exec('from fastmv.estimators import *', names)\n"
             "    print('Toy' in e.__all__, names['Toy'] is e.all_estimators()['toy'])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", child], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True"]


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


#: the modules parametrised by the registry that the toy runs through, and what each runs
#: on it at least: the common battery (invalid values of each declared parameter and the
#: behaviour checks), the command line's runs, the results' strict JSON and saved files,
#: scikit-learn's estimator checks on its generated estimator
_PARAMETRISED = {"tests/test_common.py": 30, "tests/test_cli.py": 2,
                 "tests/test_results_json.py": 9, "tests/test_sklearn_checks.py": 2}


def test_parametrised_tests_pick_it_up():
    """The registry-parametrised test modules, collected and run with the toy registered
    (the one registry line's stand-in): every per-solver check runs on it, with its own cases
    from tests/toy/cases.py."""
    env = {**os.environ, "FASTMV_TEST_TOY_SOLVER": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rA", *_PARAMETRISED, "-k", "toy", "-W", "ignore"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.findall(r"^PASSED (tests/\w+\.py)::\w+\[[^\]]*toy", proc.stdout, re.M)
    for module, least in _PARAMETRISED.items():
        assert passed.count(module) >= least, (module, passed.count(module), least)


#: what a new solver writes in benchmarks/solvers/<name>.py (here the toy's, put in place
#: under that name by the child below, as ``registered`` stands in for the registry line)
_TOY_PROTOCOL = """
import numpy as np
import fastmv
from benchmarks.solvers import Setting, Timed

YARDSTICK = "kmeans"
SCALING_SIZES = [1000, 2000]

def _defaults(views, y, seed, params):
    res = fastmv.toy(views, len(np.unique(y)), random_state=seed, **params)
    return [y], [res.labels]

DEFAULTS = {"toy": Setting("Toy", "none", _defaults)}

def timed(views, y, seed, lam):
    c = len(np.unique(y))
    return Timed(lambda **kw: fastmv.toy(views, c, random_state=seed, **kw), [y])

def scaling_call(data, n, c):
    views, y = data(n)
    return lambda: fastmv.toy(views, c, random_state=0)
"""

_BENCHMARKS_CHILD = """
import json, sys, types
from fastmv._core._spec import registered
from tests.toy import SPEC

registration = registered(SPEC)
registration.__enter__()
import benchmarks.solvers

protocol = types.ModuleType("benchmarks.solvers.toy")
exec(sys.argv[1], protocol.__dict__)
sys.modules[protocol.__name__] = benchmarks.solvers.toy = protocol
from benchmarks import defaults_table, scaling, time_to_solution
from benchmarks.suites import bench_first_call

out = sys.argv[2]
defaults_table.main(["run", "--solver", "toy", "--data", "tiny", "--seeds", "0",
                     "--out", out + ".defaults"])
time_to_solution.main(["run", "--solver", "toy", "--data", "tiny", "--out", out + ".tts"])
print(json.dumps({
    "first_call": list(bench_first_call.SOLVERS), "scaling": list(scaling.SIZES),
    "defaults": list(defaults_table.SETTINGS),
    "tts": list(time_to_solution.SOLVERS),
    "records": [json.loads(line) for ext in (".defaults", ".tts")
                for line in open(out + ext)]}))
"""


def test_benchmarks_pick_it_up(tmp_path):
    """The asv suite that runs every solver (the first calls) and the scripts behind the
    documentation's tables (defaults, time to solution, scaling) take the solvers from the
    registry and each solver's protocol from benchmarks/solvers/<name>.py: the toy, with its
    protocol, is measured by both table scripts."""
    pytest.importorskip("sklearn")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _BENCHMARKS_CHILD, _TOY_PROTOCOL,
                           str(tmp_path / "records")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    for lists in ("first_call", "scaling", "defaults", "tts"):
        assert "toy" in seen[lists], (lists, seen[lists])
    (quality, timing) = seen["records"]
    assert quality["solver"] == "toy" and 0.3 < quality["acc"] <= 1.0, quality
    assert timing["solver"] == "toy" and timing["yardstick"] == "kmeans", timing
    assert timing["seconds"] > 0 and 0.3 < timing["acc"] <= 1.0, timing


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
