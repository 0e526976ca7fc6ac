"""The common battery: one set of checks run over every public function.

Every public function declares its parameters (``func.parameter_constraints``); from those
declarations the battery generates invalid values for every parameter and checks the error
names it. It also checks, for every solver, that inputs are never modified, read-only inputs
work, ``random_state`` makes runs identical, ``n_jobs`` does not change the labels, callbacks
can stop a solve, the result contract holds, results save and load, faults leave the thread
settings as they were, overlapping calls from several Python threads give the sequential
answers, and repeated calls do not grow the process's memory.
"""
from __future__ import annotations

import copy
import inspect
import threading
import warnings
from numbers import Integral, Real

import numba
import numpy as np
import pytest
import scipy.sparse as sp
import threadpoolctl

import fastmv
from fastmv import metrics
from fastmv._core._spec import planted as _planted
from fastmv._core._spec import solver_specs
from fastmv._core._validation import Interval, Options, _satisfies
from fastmv.exceptions import (
    ConvergenceWarning,
    DegenerateSolutionError,
    DegenerateSolutionWarning,
    InvalidFileError,
    InvalidParameterError,
)
from tests.solvers import case

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning",
                                        "ignore::fastmv.exceptions.DegenerateSolutionWarning")


# ------------------------------------------------------------------------------- data
# The solvers and their small problems come from the registry (each solver's spec); the
# building blocks' are here.

def _setup_kmeans():
    views, y = _planted()
    return (views[0], 3), {}, y


def _setup_spectral():
    views, y = _planted()
    P = fastmv.transition_matrix(views[0])
    return (P + P.T, 3), {}, y


def _setup_markov():
    views, y = _planted()
    return (fastmv.transition_matrix(views[0]), 3), {}, y


def _setup_transition():
    views, y = _planted()
    return (views[0],), {}, y


SOLVERS = {name: spec.fixture for name, spec in solver_specs().items()}
BLOCKS = {
    "kmeans": _setup_kmeans,
    "spectral_clustering": _setup_spectral,
    "markov_spectral_clustering": _setup_markov,
    "transition_matrix": _setup_transition,
}
SETUPS = {**SOLVERS, **BLOCKS}


def _metric_setup():
    y = np.array([0, 0, 1, 1, 2, 2])
    return (y, np.array([1, 1, 0, 0, 2, 2])), {}, y


def _simulate_setups():
    views, y = _planted()
    return {
        "pairwise_constraints": ((y, 10), {}),
        "inter_view_constraints": (([y, y[:20]],), {"ratio": 0.1}),
        "partial_labels": ((y, 0.2), {}),
        "pairs_from_labels": ((np.where(np.arange(y.size) % 3 == 0, y, -1),), {}),
        "incomplete_mask": ((30, 2, 0.3), {}),
        "unmapped": ((views, y), {}),
        "corrupt": ((views[0], "samples", 0.2), {}),
    }


SIMULATE = list(_simulate_setups())
DATASETS = ["load_handwritten", "load_mat"]

METRICS = ["contingency_matrix", "accuracy", "nmi", "ari", "precision", "recall", "f_score",
           "purity", "entropy", "evaluate"]


def _function(name):
    if name in METRICS:
        return getattr(metrics, name)
    if name in SIMULATE:
        return getattr(fastmv.simulate, name)
    if name in DATASETS:
        return getattr(fastmv.datasets, name)
    return getattr(fastmv, name)


def _mat_file():
    import os
    import tempfile

    import scipy.io

    path = os.path.join(tempfile.mkdtemp(), "tiny.mat")
    views, y = _planted()
    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = views[0], views[1]
    scipy.io.savemat(path, {"X": cell, "y": y[:, None]})
    return path


def _setup(name):
    if name in METRICS:
        return _metric_setup()
    if name in SIMULATE:
        args, kwargs = _simulate_setups()[name]
        return args, kwargs, None
    if name == "load_handwritten":
        return (), {"views": ["fou"]}, None
    if name == "load_mat":
        return (_mat_file(),), {}, None
    return SETUPS[name]()


def _call(name, args, kwargs):
    return _function(name)(*args, **kwargs)


# ---------------------------------------------------------------------- declarations
ALL = list(SETUPS) + METRICS + SIMULATE + DATASETS


@pytest.mark.parametrize("name", ALL)
def test_declaration_covers_the_whole_signature(name):
    func = _function(name)
    declared = getattr(func, "parameter_constraints", None)
    assert declared is not None, f"{name} does not declare its parameters"
    assert set(declared) == set(inspect.signature(func).parameters)


_NOT_A_VALUE = object()


def _invalid_values(constraints):
    """Values that satisfy none of ``constraints`` (one per kind of mistake)."""
    candidates = ["not-a-valid-value", -1, 0, 2.5, -0.5, True, np.nan, np.inf, [], 42,
                  None, {"a": 1}, lambda *a: None]
    for c in constraints:
        if isinstance(c, Interval):
            if c.low is not None:
                candidates += [c.low - 1, c.low - 0.5]
            if c.high is not None:
                candidates += [c.high + 1, c.high + 0.5]
    out = []
    for v in candidates:
        if not any(_satisfies(c, v) for c in constraints):
            out.append(v)
    # one of each type is enough; keep the list short but varied
    seen, unique = set(), []
    for v in out:
        key = (type(v).__name__, v if isinstance(v, (str, int, float)) and v == v else id(v))
        if key not in seen:
            seen.add(key)
            unique.append(v)
    return unique[:4]


def _battery_cases():
    cases = []
    for name in ALL:
        try:
            func = _function(name)
        except AttributeError:
            continue
        declared = getattr(func, "parameter_constraints", {}) or {}
        for param, constraints in declared.items():
            if "data" in constraints:
                continue
            for i, value in enumerate(_invalid_values(constraints)):
                cases.append(pytest.param(name, param, value, id=f"{name}-{param}-{i}"))
    return cases


@pytest.mark.parametrize("name,param,value", _battery_cases())
def test_invalid_value_raises_naming_the_parameter(name, param, value):
    args, kwargs, _ = _setup(name)
    func = _function(name)
    sig = inspect.signature(func)
    bound = sig.bind_partial(*args, **kwargs)
    bound.arguments[param] = value
    with pytest.raises(InvalidParameterError) as err:
        func(*bound.args, **bound.kwargs)
    assert param in str(err.value), str(err.value)


def test_battery_is_large():
    assert len(_battery_cases()) >= 200


# ------------------------------------------------------------------- solver behaviour
def _labels(result):
    labels = result.labels if hasattr(result, "labels") else result
    if isinstance(labels, list):
        return np.concatenate(labels)
    return np.asarray(labels)


def _arrays_in(obj):
    if isinstance(obj, np.ndarray):
        yield obj
    elif sp.issparse(obj):
        yield obj.data
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _arrays_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _arrays_in(o)


@pytest.mark.parametrize("name", list(SETUPS))
def test_inputs_are_never_modified_and_read_only_inputs_work(name):
    args, kwargs, _ = _setup(name)
    saved = copy.deepcopy((args, kwargs))
    for a in _arrays_in((args, kwargs)):
        a.flags.writeable = False
    _call(name, args, kwargs)
    for a, b in zip(_arrays_in((args, kwargs)), _arrays_in(saved)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", [n for n in SETUPS if n != "transition_matrix"])
def test_same_random_state_gives_identical_results(name):
    args, kwargs, _ = _setup(name)
    a = _call(name, args, {**kwargs, "random_state": 3})
    b = _call(name, args, {**kwargs, "random_state": 3})
    np.testing.assert_array_equal(_labels(a), _labels(b))


@pytest.mark.parametrize("name", [n for n in SETUPS if n != "transition_matrix"])
def test_thread_count_does_not_change_the_labels(name):
    if "n_jobs" not in inspect.signature(_function(name)).parameters:
        pytest.skip("no n_jobs")
    args, kwargs, _ = _setup(name)
    a = _call(name, args, {**kwargs, "random_state": 0, "n_jobs": 1})
    b = _call(name, args, {**kwargs, "random_state": 0, "n_jobs": 2})
    np.testing.assert_array_equal(_labels(a), _labels(b))


@pytest.mark.parametrize("name", list(SOLVERS))
def test_result_contract_and_save_load(name, tmp_path):
    args, kwargs, y = _setup(name)
    res = _call(name, args, {**kwargs, "random_state": 0})
    assert isinstance(res, fastmv.Result)
    assert isinstance(res.n_iter, int) and not isinstance(res.n_iter, bool)
    assert isinstance(res.converged, bool)
    assert res.objective.ndim == 1 and res.objective.dtype == np.float64
    assert res.objective.shape == (res.n_iter,)
    assert np.all(np.isfinite(res.objective))
    assert _labels(res).dtype.kind == "i"
    assert type(res).__name__ in dir(fastmv), "result classes are public"
    res.save(tmp_path / "r.npz")
    back = fastmv.Result.load(tmp_path / "r.npz")
    assert type(back) is type(res)
    np.testing.assert_array_equal(_labels(back), _labels(res))
    np.testing.assert_array_equal(back.objective, res.objective)


@pytest.mark.parametrize("how", ["return_true", "numpy_true", "stop_iteration"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_callback_stops_the_solve(name, how):
    args, kwargs, _ = _setup(name)
    calls = []

    def callback(info):
        calls.append(info.iteration)
        assert info.solver and np.isfinite(info.objective)
        if how == "return_true":
            return True
        if how == "numpy_true":  # what a comparison of NumPy scalars returns
            return np.float64(info.objective) == np.float64(info.objective)
        raise StopIteration

    kwargs = {**kwargs, "random_state": 0, "callback": callback, "tol": 0.0}
    if "max_iter" in inspect.signature(_function(name)).parameters:
        kwargs["max_iter"] = 5
    res = _call(name, args, kwargs)
    assert calls == [1] and res.n_iter == 1 and res.converged is False


def _thread_settings():
    blas = sorted((d["internal_api"], d["num_threads"]) for d in threadpoolctl.threadpool_info()
                  if d["user_api"] == "blas")
    return numba.get_num_threads(), blas


@pytest.mark.parametrize("fault", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_faults_reach_the_caller_and_restore_thread_settings(name, fault):
    args, kwargs, _ = _setup(name)
    before = _thread_settings()

    def callback(info):
        raise fault("raised by the callback")

    kwargs = {**kwargs, "random_state": 0, "callback": callback, "n_jobs": 1,
              **case(name, "FAULT_OPTIONS", {})}
    with pytest.raises(fault, match="raised by the callback"):
        _call(name, args, kwargs)
    assert _thread_settings() == before


@pytest.mark.slow
def test_overlapping_calls_of_every_pair_of_solvers_match_sequential_calls():
    names = list(SOLVERS)
    expected = {}
    for name in names:
        args, kwargs, _ = _setup(name)
        expected[name] = _labels(_call(name, args, {**kwargs, "random_state": 0}))
    before = _thread_settings()
    for i, first in enumerate(names):
        for second in names[i:]:
            got, errors = {}, []
            barrier = threading.Barrier(2)

            def run(name, key):
                try:
                    args, kwargs, _ = _setup(name)
                    barrier.wait(30)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ConvergenceWarning)
                        warnings.simplefilter("ignore", DegenerateSolutionWarning)
                        got[key] = _labels(_call(name, args, {**kwargs, "random_state": 0}))
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=run, args=(first, 0)),
                       threading.Thread(target=run, args=(second, 1))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            np.testing.assert_array_equal(got[0], expected[first])
            np.testing.assert_array_equal(got[1], expected[second])
    assert _thread_settings() == before


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(np, "ndarray") or not __import__("os").path.exists(
    "/proc/self/statm"), reason="needs /proc")
@pytest.mark.parametrize("name", list(SOLVERS))
def test_repeated_calls_do_not_grow_memory(name):
    args, kwargs, _ = _setup(name)
    # a leak grows with the calls, not with the starts inside one (a solver's LEAK_OPTIONS)
    kwargs = {**kwargs, **case(name, "LEAK_OPTIONS", {})}
    for _ in range(20):  # warm-up: compilation, caches, allocator pools
        _call(name, args, {**kwargs, "random_state": 0})
    start = _rss_bytes()
    for _ in range(200):
        _call(name, args, {**kwargs, "random_state": 0})
    grown = (_rss_bytes() - start) / 2**20
    assert grown < 8.0, f"{name}: resident memory grew {grown:.1f} MiB over 200 calls"


def test_invalid_declaration_kinds_exist():
    # the vocabulary the battery relies on
    assert Interval(Integral, 0, None, closed="left").is_satisfied_by(0)
    assert not Interval(Real, 0, None, closed="neither").is_satisfied_by(0.0)
    assert Options({"a", None}).is_satisfied_by(None)
    assert _invalid_values([Interval(Integral, 1, None, closed="left")])


# ------------------------------------------------------------- one validator, one error
CLUSTERING = [n for n in SETUPS if n != "transition_matrix"]


@pytest.mark.parametrize("name", CLUSTERING)
def test_n_clusters_above_n_raises_invalid_parameter_error(name):
    args, kwargs, y = _setup(name)
    params = inspect.signature(_function(name)).parameters
    if "n_clusters" in kwargs or list(params).index("n_clusters") >= len(args):
        kwargs = {**kwargs, "n_clusters": y.size + 1}
    else:
        i = list(params).index("n_clusters")
        args = args[:i] + (y.size + 1,) + args[i + 1:]
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        _call(name, args, kwargs)


def _ten_places():
    views, y = _planted()
    P = [fastmv.transition_matrix(X) for X in views]
    labels = np.full(y.size, -1)
    labels[::5] = y[::5]
    return {
        "mvfl-lam1-lam2-zero": ("lam1", lambda: fastmv.mvfl(views, 3, labels=labels, lam1=0.0,
                                                             lam2=0.0)),
        "kmeans-init-shape": ("init", lambda: fastmv.kmeans(views[0], 3, init=np.zeros((2, 6)))),
        "opimc-init-labels": ("init", lambda: fastmv.opimc(views, 3, init=np.full(y.size, 7))),
        "thread_limit-zero": ("n_jobs", lambda: fastmv.thread_limit(0).__enter__()),
        "emvc-not-stochastic": ("P_list", lambda: fastmv.emvc([2 * p for p in P], 0.1, 0.1)),
        "mvmc-must-0x3": ("must_link", lambda: fastmv.mvmc(
            views, 3, np.zeros((0, 3), int),
            fastmv.simulate.pairwise_constraints(y, 10, random_state=0)[1])),
        "mvfl-must-0x3": ("must_link", lambda: fastmv.mvfl(views, 3,
                                                            must_link=np.zeros((0, 3), int))),
        "spectral-negative": ("S", lambda: fastmv.spectral_clustering(-np.ones((6, 6)), 2)),
        "spectral-asymmetric": ("S", lambda: fastmv.spectral_clustering(
            np.triu(np.ones((6, 6))), 2)),
        "opimc-mask-half": ("mask", lambda: fastmv.opimc(views, 3, mask=np.full((y.size, 2),
                                                                                 0.5))),
    }


@pytest.mark.parametrize("case", list(_ten_places()))
def test_bad_values_raise_invalid_parameter_error_naming_the_argument(case):
    name, call = _ten_places()[case]
    with pytest.raises(InvalidParameterError) as err:
        call()
    assert name.split("_")[0] in str(err.value), str(err.value)


def _with_first_view(name, args, make):
    """``args`` of ``name`` with its data (every view, or the matrix) replaced by ``make(X)``."""
    if name in solver_specs():
        return (type(args[0])(make(X) for X in args[0]),) + tuple(args[1:])
    return (make(np.asarray(args[0])),) + tuple(args[1:])


@pytest.mark.parametrize("kind", ["m8[s]", "M8[D]"])
@pytest.mark.parametrize("name", list(SETUPS))
def test_timedelta_and_datetime_data_are_refused(name, kind):
    args, kwargs, _ = _setup(name)
    args = _with_first_view(name, args, lambda X: np.asarray(X).astype(kind))
    with pytest.raises(InvalidParameterError, match="numeric"):
        _call(name, args, kwargs)


def _identical(name, X):
    X = np.asarray(X)
    if name in ("emvc", "markov_spectral_clustering"):  # the transition matrix of one point
        return np.full(X.shape, 1.0 / X.shape[1])
    return np.ones_like(X)


@pytest.mark.parametrize("name", [n for n in CLUSTERING if n != "spectral_clustering"])
def test_identical_samples_keep_the_degenerate_answer_promise(name):
    """Fewer distinct labels than n_clusters (or a non-finite objective) never passes
    silently: it warns DegenerateSolutionWarning or raises a fastmv error."""
    args, kwargs, y = _setup(name)
    args = _with_first_view(name, args, lambda X: _identical(name, X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = _call(name, args, {**kwargs, "random_state": 0})
        except (DegenerateSolutionError, InvalidParameterError):
            return
    warned = any(issubclass(w.category, DegenerateSolutionWarning) for w in caught)
    labels = res if isinstance(res, np.ndarray) else res.labels
    parts = labels if isinstance(labels, list) else [labels]
    degenerate = any(np.unique(p).size < 3 for p in parts)
    objective = getattr(res, "objective", np.zeros(1))
    assert warned or not (degenerate or not np.all(np.isfinite(objective)))


def _tamper(path, out, **replace):
    """Copy the saved result at ``path`` to ``out`` with some arrays or meta fields replaced."""
    import json
    import zipfile

    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(bytes(arrays["__fastmv_result__"]).decode())
    for key, value in replace.items():
        if isinstance(value, np.ndarray):
            arrays[key] = value
        else:
            meta["fields"][key] = {"kind": "literal", "value": value}
    arrays["__fastmv_result__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(out, **arrays)
    assert zipfile.is_zipfile(out)
    return out


@pytest.mark.parametrize("tamper", ["labels-2d-float", "n_iter-string", "converged-string",
                                    "objective-2d", "truncated", "not-a-zip"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_tampered_result_files_raise_invalid_file_error_naming_the_file(name, tamper, tmp_path):
    args, kwargs, y = _setup(name)
    res = _call(name, args, {**kwargs, "random_state": 0})
    path = tmp_path / "r.npz"
    res.save(path)
    bad = tmp_path / "bad.npz"
    if tamper == "labels-2d-float":  # per-view labels (a list) are saved as labels.0, ...
        with np.load(path) as saved:
            key = "labels.0" if "labels.0" in saved.files else "labels"
        _tamper(path, bad, **{key: np.zeros((3, 2))})
    elif tamper == "n_iter-string":
        _tamper(path, bad, n_iter="3")
    elif tamper == "converged-string":
        _tamper(path, bad, converged="yes")
    elif tamper == "objective-2d":
        _tamper(path, bad, objective=np.zeros((2, 2)))
    elif tamper == "truncated":
        bad.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        bad.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    with pytest.raises(InvalidFileError, match="bad.npz"):
        fastmv.Result.load(bad)
