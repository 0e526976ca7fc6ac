"""Command line: python -m fastmv {demo,run,list}."""
import subprocess
import sys
import types

import numpy as np
import pytest
import scipy.io

from fastmv import _cli


def _fake_solver(monkeypatch, name, *, fail=False):
    mod = types.ModuleType(f"fastmv._{name}")

    def _demo(random_state=0):
        if fail:
            raise RuntimeError("boom")
        y = np.repeat(np.arange(3), 4)
        return [("fake setting", y, (y + 1) % 3)]

    def _cli_run(views, y, params, random_state):
        if "bad" in params:
            raise TypeError("unexpected keyword argument 'bad'")
        return y, y, f"fake run {sorted(params)}"

    mod._demo, mod._cli = _demo, _cli_run
    monkeypatch.setitem(sys.modules, f"fastmv._{name}", mod)


def test_demo_table_and_failures(monkeypatch, capsys):
    _fake_solver(monkeypatch, "mvmc")
    _fake_solver(monkeypatch, "mvfl", fail=True)
    rc = _cli.main(["demo", "--solvers", "mvmc,mvfl"])
    out = capsys.readouterr().out
    assert rc == 1  # a failing solver makes the demo fail, after printing the table
    header = [ln for ln in out.splitlines() if ln.startswith("solver")][0]
    assert header.split() == ["solver", "setting", "ACC", "NMI", "ARI", "seconds"]
    row = [ln for ln in out.splitlines() if ln.startswith("mvmc")][0]
    assert "fake setting" in row and "1.000" in row  # relabelled perfect clustering
    assert "FAILED: RuntimeError: boom" in out


def test_parse_params():
    assert _cli._parse_params(["--C1", "2", "--accelerated", "False", "--name=abc"]) == \
        {"C1": 2, "accelerated": False, "name": "abc"}
    with pytest.raises(_cli.CLIError, match="needs a value"):
        _cli._parse_params(["--C1"])
    with pytest.raises(_cli.CLIError, match="unexpected argument"):
        _cli._parse_params(["C1", "2"])


def test_run_with_fake_solver(monkeypatch, tmp_path, capsys):
    _fake_solver(monkeypatch, "opimc")
    path = tmp_path / "d.mat"
    y = np.repeat([1, 2, 3], 5)
    X = np.empty((1, 2), dtype=object)
    X[0, 0], X[0, 1] = np.random.rand(15, 4), np.random.rand(15, 3)
    scipy.io.savemat(path, {"X": X, "y": y[:, None]})
    out_file = tmp_path / "labels.npy"
    assert _cli.main(["run", "opimc", "--data", str(path), "--alpha", "0.5",
                      "--out", str(out_file)]) == 0
    assert "fake run ['alpha']" in capsys.readouterr().out
    assert np.load(out_file).shape == (15,)
    assert _cli.main(["run", "opimc", "--data", str(path), "--bad", "1"]) == 2
    assert "unexpected keyword argument 'bad'" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["run", "opimc", "--data", "/nonexistent.mat"], "not found"),
    (["run", "nosuch", "--data", "x.mat"], "unknown solver"),
    (["demo", "--solvers", "nosuch"], "unknown solver"),
    (["demo", "--bogus"], "unrecognized"),
])
def test_errors_are_one_line(argv, message, capsys):
    assert _cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fastmv: error:") and message in err[0]


def test_unreadable_mat_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.mat"
    bad.write_bytes(b"this is not a mat file at all" * 10)
    assert _cli.main(["run", "opimc", "--data", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.mat" in err[0]


def test_module_entry_point_help_and_list():
    out = subprocess.run([sys.executable, "-m", "fastmv", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "demo" in out and "run" in out
    out = subprocess.run([sys.executable, "-m", "fastmv", "run", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--data" in out and "--out" in out
    out = subprocess.run([sys.executable, "-m", "fastmv", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert len(out.strip().splitlines()) == 5


@pytest.mark.parametrize("solver", list(_cli.SOLVERS))
def test_run_every_built_solver_on_a_small_file(solver, tmp_path, capsys):
    if _cli._solver_module(solver) is None:
        pytest.skip(f"{solver} not built")
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2, 3], 30)
    centers = [rng.random((3, d)) * 5 for d in (6, 4)]
    X = np.empty((1, 2), dtype=object)
    for v, C in enumerate(centers):
        X[0, v] = np.abs(C[y - 1] + 0.3 * rng.standard_normal((90, C.shape[1])))
    path = tmp_path / "small.mat"
    scipy.io.savemat(path, {"X": X, "y": y[:, None]})
    out_file = tmp_path / "labels.npy"
    rc = _cli.main(["run", solver, "--data", str(path), "--out", str(out_file)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert solver in captured.out
    assert np.load(out_file).ndim == 1
