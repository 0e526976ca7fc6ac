"""Hostile input to the command line and the estimators.

The command-line cases run in child processes (a crash there cannot take the test session
down): the usage errors all in one child that calls ``main`` per case, the others as
``python -m fastmv`` so that the exit status and stderr are what a user sees. Malformed
side-information files, bad option values, unwritable outputs, a closed pipe, Ctrl-C. Every
error must be one ``fastmv: error:`` line naming the option, with exit status 2, before any
solve. The estimator cases check that sizes are never coerced and that each misuse raises a
fastmv exception naming the argument.
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.io

import fastmv
from fastmv._core._spec import solver_specs
from fastmv.estimators import CMVNMF, EMVC, MVFL, MVMC, OPIMC
from fastmv.exceptions import InvalidParameterError, NotFittedError
from tests.conftest import default_sigint
from tests.solvers import SOLVERS, cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 60


def _fastmv(*argv, cwd, timeout=120, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONWARNINGS="ignore")
    env.pop("FASTMV_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "fastmv", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2, 3], N // 3)
    X = np.empty((1, 2), dtype=object)
    X[0, 0] = np.abs(rng.random((3, 5))[y - 1] * 5 + 0.3 * rng.standard_normal((N, 5)))
    X[0, 1] = np.abs(rng.random((3, 4))[y - 1] * 5 + 0.3 * rng.standard_normal((N, 4)))
    scipy.io.savemat(d / "small.mat", {"X": X, "y": y[:, None]})
    scipy.io.savemat(d / "nolabels.mat", {"X": X})
    np.save(d / "mask_long.npy", np.ones((N + 7, 2)))
    np.save(d / "mask_short.npy", np.ones((N - 5, 2)))
    np.save(d / "mask_values.npy", np.tile([2, -1], (N, 1)))
    np.save(d / "mask_1d.npy", np.ones(N))
    np.save(d / "mask_text.npy", np.array([["a", "b"]] * N))
    np.save(d / "mask_object.npy", np.array([[1, None]] * N, dtype=object), allow_pickle=True)
    with open(d / "mask_nan.txt", "w") as f:
        f.write("1 nan\n" * N)
    np.save(d / "labels_long.npy", np.zeros(N + 1, dtype=int))
    np.save(d / "labels_neg.npy", np.full(N, -3))
    np.save(d / "pairs_range.npy", np.array([[0, N + 100]]))
    np.save(d / "pairs_3col.npy", np.array([[0, 1, 2]]))
    np.save(d / "pairs_neg.npy", np.array([[-1, 2]]))
    np.save(d / "cm_pairs_2col.npy", np.array([[0, 1]]))
    np.save(d / "cm_pairs_view.npy", np.array([[0, 1, 5, 2]]))
    np.save(d / "cm_pairs_row.npy", np.array([[0, 1, 1, N + 3]]))
    (d / "adir").mkdir()
    return d


# ----------------------------------------------------------- usage errors: one line, exit 2
CASES = [
    # (argv after "run", the option the message must name)
    (["opimc", "--data", "small.mat", "--mask", "mask_long.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_short.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_values.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_1d.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_text.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_object.npy"], "--mask"),
    (["opimc", "--data", "small.mat", "--mask", "mask_nan.txt"], "--mask"),
    (["mvfl", "--data", "small.mat", "--prior", "bogus"], "--prior"),
    (["mvfl", "--data", "small.mat", "--simulate", "--label_ratio", "0"], "--label_ratio"),
    (["mvfl", "--data", "small.mat", "--labels", "labels_long.npy"], "--labels"),
    (["mvfl", "--data", "small.mat", "--labels", "labels_neg.npy"], "--labels"),
    (["mvfl", "--data", "small.mat", "--must", "pairs_range.npy"], "--must"),
    (["mvmc", "--data", "small.mat", "--cannot", "pairs_3col.npy"], "--cannot"),
    (["mvmc", "--data", "small.mat", "--must", "pairs_neg.npy"], "--must"),
    (["cmvnmf", "--data", "small.mat", "--must", "cm_pairs_2col.npy"], "--must"),
    (["cmvnmf", "--data", "small.mat", "--must", "cm_pairs_view.npy"], "--must"),
    (["cmvnmf", "--data", "small.mat", "--cannot", "cm_pairs_row.npy"], "--cannot"),
    (["cmvnmf", "--data", "small.mat", "--simulate", "--keep", "0.01"], "--keep"),
    (["cmvnmf", "--data", "small.mat", "--simulate", "--keep", "1.5"], "--keep"),
    (["opimc", "--data", "small.mat", "--simulate", "--missing_ratio", "1"], "--missing_ratio"),
    (["opimc", "--data", "small.mat", "--missing_ratio", "0.3"], "--simulate"),
    (["opimc", "--data", "nolabels.mat", "--n_clusters", "3", "--simulate"], "--simulate"),
    (["opimc", "--data", "small.mat", "--simulate", "--mask", "mask_values.npy"], "--mask"),
    (["mvmc", "--data", "small.mat", "--simulate", "--n_constraints", "0"], "--n_constraints"),
    (["mvmc", "--data", "small.mat"], "--simulate"),
    (["mvfl", "--data", "small.mat", "--verbose", "maybe"], "--verbose"),
    (["opimc", "--data", "small.mat", "--out", "adir"], "--out"),
    (["opimc", "--data", "small.mat", "--out", "no/such/dir/labels.npy"], "--out"),
    (["opimc", "--data", "small.mat", "--plot", "no/such/dir/p.png"], "--plot"),
    (["opimc", "--data", "small.mat", "--plot", "adir"], "--plot"),
    # the solver's own validation, reported with the option's name
    (["mvfl", "--data", "small.mat", "--lam1", "-1"], "--lam1: "),
    (["opimc", "--data", "small.mat", "--chunk_size", "0"], "--chunk_size: "),
    (["opimc", "--data", "small.mat", "--n_clusters", "500"], "--n_clusters: "),
    (["opimc", "--data", "small.mat", "--normalize", "xx"], "--normalize: "),
    # options are checked before side files are asked for, and before the file is read
    (["mvmc", "--data", "small.mat", "--C1", "-5"], "--C1: "),
    (["mvmc", "--data", "small.mat", "--k", "0"], "--k: "),
    (["mvmc", "--data", "missing.mat", "--C1", "-5"], "--C1: "),
    (["cmvnmf", "--data", "small.mat", "--beta", "-1"], "--beta: "),
]


# Every case runs in one child process (one interpreter start instead of one per case; a
# crash there still cannot take the test session down): main() per argv, its status and
# what it printed.
_BATCH = """
import contextlib, io, json, sys
from fastmv._app._cli import main
out = []
for argv in json.loads(sys.stdin.read()):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        rc = main(argv)
    out.append([rc, o.getvalue(), e.getvalue()])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def usage_results(files):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONWARNINGS="ignore", MPLBACKEND="Agg")
    env.pop("FASTMV_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", _BATCH], cwd=files, env=env, text=True,
                       input=json.dumps([["run", *argv] for argv, _ in CASES]),
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]  # the child itself must not crash
    return dict(zip((" ".join(a) for a, _ in CASES), json.loads(r.stdout)))


@pytest.mark.parametrize("argv,option", CASES, ids=[" ".join(a[:1] + a[3:]) for a, _ in CASES])
def test_usage_errors_name_the_option(usage_results, argv, option):
    rc, out, err = usage_results[" ".join(argv)]
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastmv: error:"), err
    assert option in lines[0], lines[0]
    for internal in ("IndexError", "Traceback", "n_clusters must"):
        assert internal not in err
    assert out == ""  # nothing solved, nothing announced


def test_bad_output_fails_before_the_solve(files):
    """The --plot check comes before the solve: no labels file is left behind."""
    r = _fastmv("run", "opimc", "--data", "small.mat", "--out", "left.npy", "--plot",
                "no/such/p.png", cwd=files)
    assert r.returncode == 2
    assert not (files / "left.npy").exists()


def test_out_dev_null_is_written_as_given(files):
    before = os.path.exists("/dev/null.npy")
    r = _fastmv("run", "opimc", "--data", "small.mat", "--out", os.devnull, cwd=files)
    assert r.returncode == 0, r.stderr
    assert f"labels saved to {os.devnull}" in r.stdout
    assert os.path.exists("/dev/null.npy") == before


def test_version_flags_and_first_progress_line(files):
    r = _fastmv("--version", cwd=files)
    assert r.returncode == 0 and r.stdout.strip() == f"fastmv {fastmv.__version__} " \
                                                      "(python -m fastmv)"
    r = _fastmv("run", "mvfl", "--data", "small.mat", "--verbose", "--max_iter", "3",
                "--out", "v.npy", cwd=files)
    assert r.returncode == 0, r.stderr
    progress = [ln for ln in r.stderr.splitlines() if "iter" in ln]
    assert progress and "inf" not in progress[0] and "nan" not in progress[0]


def test_simulation_is_opt_in_and_announced(files):
    r = _fastmv("run", "opimc", "--data", "small.mat", "--json", "--out", "o.npy", cwd=files)
    assert r.returncode == 0, r.stderr
    assert '"simulated": false' in r.stdout and "complete views" in r.stdout
    r = _fastmv("run", "opimc", "--data", "small.mat", "--simulate", "--out", "o.npy",
                cwd=files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("note: --simulate") and "40% missing" in r.stdout
    help_text = _fastmv("run", "cmvnmf", "--help", cwd=files).stdout
    assert "--simulate" in help_text and "default: 0.95" in help_text


def test_closed_pipe_is_quiet(files):
    r = subprocess.run(f"{sys.executable} -m fastmv list | head -1", shell=True, cwd=files,
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.stdout.startswith("mvmc")
    assert r.stderr == ""


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
    X = np.empty((1, 2), dtype=object)
    X[0, 0], X[0, 1] = views
    path = tmp_path_factory.mktemp("big") / "hw.mat"
    scipy.io.savemat(path, {"X": X, "y": y[:, None]})
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_exits_130_saying_interrupted(big_file):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONWARNINGS="ignore", NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastmv", "run", "mvfl", "--data", str(big_file), "--verbose",
         "--max_iter", "1000000", "--tol", "0", "--out", str(big_file.parent / "l.npy")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait for the solve's first progress line
            line = proc.stderr.readline()
            if "iter" in line or not line:
                break
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-2000:]
    assert "fastmv: interrupted" in err
    assert "Traceback" not in err and "SystemError" not in err
    assert waited < 30


# -------------------------------------------------------------------------- estimators
def _views(n=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    return [np.abs(np.eye(2)[y] @ rng.random((2, d)) * 3 + 0.1 * rng.random((n, d)))
            for d in (5, 7)], y


#: the estimators that fit on views alone (not one that needs pairs, ``estimator_side``)
_UNSUPERVISED = [getattr(fastmv, solver_specs()[name].estimator) for name in SOLVERS
                 if not hasattr(cases(name), "estimator_side")]


@pytest.mark.parametrize("cls", _UNSUPERVISED, ids=lambda c: c.__name__)
@pytest.mark.parametrize("sizes", ["57", [6.9, 6.9], [5.0, 7.0], [True, 11], [0, 12], [-5, 17],
                                   [5, 6], [], None], ids=repr)
def test_view_sizes_are_never_coerced(cls, sizes):
    X = np.hstack(_views()[0])
    if sizes is None:  # no view_sizes: the 2-D array is one view, as scikit-learn's X
        assert cls(2, random_state=0).fit(X).n_views_ == 1
        return
    with pytest.raises(InvalidParameterError, match="view_sizes|Xs"):
        cls(2).fit(X, view_sizes=sizes)


def test_estimator_misuse_raises_fastmv_errors_naming_the_argument():
    pd = pytest.importorskip("pandas")
    views, y = _views()
    with pytest.raises(InvalidParameterError, match="Xs"):
        OPIMC(2).fit(np.zeros((30, 5, 2)))  # 3-D: neither one view nor a list of views
    assert OPIMC(2, random_state=0).fit(pd.DataFrame(np.hstack(views))).n_views_ == 1
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        EMVC(n_clusters=None).fit(views)
    with pytest.raises(NotFittedError):
        MVFL(2).predict(views)
    with pytest.raises(NotFittedError):
        MVFL(2).transform(views)
    all_nan = [np.full_like(views[0], np.nan), views[1]]
    with pytest.raises(InvalidParameterError, match=r"Xs\[0\]"):
        MVFL(2).fit(all_nan)
    partial = [views[0].copy(), views[1]]
    partial[0][3, 1] = np.nan  # a NaN inside a present row is not a missing sample
    for cls in _UNSUPERVISED:
        with pytest.raises(ValueError, match="NaN"):
            cls(2).fit(partial)
    model = OPIMC(2, random_state=0).fit(views)
    with pytest.raises(InvalidParameterError, match=r"Xs\[0\]"):
        model.predict(partial)
    with pytest.raises(InvalidParameterError, match="missing from every view"):
        model.predict([np.full((2, 5), np.nan), np.full((2, 7), np.nan)])


@pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")
def test_estimators_leave_their_input_alone():
    pd = pytest.importorskip("pandas")
    views, y = _views()
    views[0][:3] = np.nan
    frames = [pd.DataFrame(V) for V in views]
    copies = [V.copy() for V in views]
    for cls, kw in ((MVFL, {}), (EMVC, {}), (CMVNMF, {}), (OPIMC, {}),
                    (MVMC, {"must_link": [[0, 2]]})):
        cls(2, random_state=0).fit(frames, **kw)
        cls(2, random_state=0).fit(views, **kw)
        for V, F, C in zip(views, frames, copies):
            np.testing.assert_array_equal(V, C)
            np.testing.assert_array_equal(F.to_numpy(), C)


def test_refit_and_clone_after_fit():
    from sklearn.base import clone

    views, y = _views()
    model = OPIMC(2, random_state=0).fit(np.hstack(views), view_sizes=[5, 7])
    assert model.view_sizes_ == [5, 7]
    twin = clone(model)
    assert not hasattr(twin, "labels_")
    model.fit(views)  # refit on a list: the stored widths go
    assert model.view_sizes_ is None and model.predict(views).shape == (30,)
    with pytest.raises(InvalidParameterError, match="list of views"):
        model.predict(np.hstack(views))
