"""The shared driver (fastmv._core._driver), the result contract and its files."""
import dataclasses
import json
import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv import ConvergenceWarning, Result
from fastmv._core._driver import IterationInfo, Step, iterate, relative_change


@dataclasses.dataclass(frozen=True, repr=False)
class _OtherResult(Result):
    extra: object


class Halving:
    """Objective 2^-t: relative change 1/2 at every step."""

    def __init__(self, residuals=None):
        self.f = 1.0
        self.residuals = residuals

    def step(self):
        self.f /= 2
        if self.residuals is not None:
            return Step(self.f, residual=self.residuals.pop(0), state={"f": self.f})
        return self.f


def test_relative_change():
    assert relative_change(2.0, 1.0) == 0.5
    assert relative_change(0.0, 0.0) == 0.0
    assert np.isfinite(relative_change(0.0, 1.0))


def test_converges_on_the_solvers_residual():
    trace = iterate(Halving([1.0, 0.1, 1e-9, 5.0]), solver="t", max_iter=10, tol=1e-6)
    assert trace.converged and trace.n_iter == 3 and trace.stop_reason == "converged"
    assert trace.objective.shape == trace.residual.shape == (3,)
    np.testing.assert_allclose(trace.objective, [0.5, 0.25, 0.125])


def test_relative_change_is_the_default_residual_and_tol_is_inclusive():
    trace = iterate(Halving(), solver="t", max_iter=5, tol=0.5, initial_objective=1.0)
    assert trace.converged and trace.n_iter == 1
    # no initial objective: the first step cannot converge
    trace = iterate(Halving(), solver="t", max_iter=5, tol=0.5)
    assert trace.converged and trace.n_iter == 2 and np.isinf(trace.residual[0])


def test_max_iter_warns_and_zero_iterations_do_not():
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        trace = iterate(Halving(), solver="t", max_iter=3, tol=0.0)
    assert not trace.converged and trace.n_iter == 3 and trace.stop_reason == "max_iter"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = iterate(Halving(), solver="t", max_iter=0, tol=0.0)
    assert trace.n_iter == 0 and trace.objective.shape == (0,)


@pytest.mark.parametrize("how", ["true", "stopiteration"])
def test_callback_stops_with_converged_false(how):
    seen = []

    def callback(info):
        assert isinstance(info, IterationInfo)
        seen.append((info.iteration, info.objective, info.state["f"]))
        if info.iteration == 2:
            if how == "true":
                return True
            raise StopIteration

    trace = iterate(Halving([1.0] * 10), solver="t", max_iter=10, tol=0.0, callback=callback)
    assert trace.n_iter == 2 and not trace.converged and trace.stop_reason == "callback"
    assert seen == [(1, 0.5, 0.5), (2, 0.25, 0.25)]


def test_callback_errors_reach_the_caller():
    def callback(info):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        iterate(Halving(), solver="t", max_iter=3, tol=0.0, callback=callback)


def test_verbose_logs_one_format_and_leaves_no_handler(capsys, caplog):
    logger = logging.getLogger("fastmv")
    handlers = list(logger.handlers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with caplog.at_level(logging.DEBUG, logger="fastmv"):
            iterate(Halving(), solver="demo", max_iter=2, tol=0.0, verbose=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "fastmv"]
    assert len(lines) == 2 and lines[0].startswith("demo: iter    1  objective 5.0")
    assert "residual" in lines[0] and "elapsed" in lines[0]
    assert logger.handlers == handlers


def test_verbose_without_logging_configured_prints_to_stderr(capsys):
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            iterate(Halving(), solver="demo", max_iter=2, tol=0.0, verbose=True)
            iterate(Halving(), solver="quiet", max_iter=2, tol=0.0, verbose=False)
    finally:
        root.handlers = saved
    err = capsys.readouterr().err
    assert err.count("demo: iter") == 2 and "quiet" not in err
    assert not logging.getLogger("fastmv").handlers


def test_progress_bar_runs():
    trace = iterate(Halving([1.0, 0.0]), solver="t", max_iter=5, tol=0.0, progress=True)
    assert trace.converged


# ---------------------------------------------------------------------------- results
def _result():
    @dataclasses.dataclass(frozen=True, repr=False)
    class DemoResult(Result):
        factors: list
        S: object
        method: tuple
        rank: int
        note: object

    return DemoResult(labels=np.array([0, 1, 1]), objective=np.array([3.0, 2.0]), n_iter=2,
                      converged=True, factors=[np.eye(2), np.ones((3, 2), np.float32)],
                      S=sp.random(4, 3, density=0.5, format="csr", random_state=0),
                      method=("svd", "gram"), rank=np.int64(4), note=None)


def test_result_save_load_round_trip(tmp_path):
    res = _result()
    path = tmp_path / "r.npz"
    res.save(path)
    back = Result.load(path)
    assert type(back) is type(res)
    np.testing.assert_array_equal(back.labels, res.labels)
    np.testing.assert_array_equal(back.factors[1], res.factors[1])
    assert back.factors[1].dtype == np.float32
    assert (back.S != res.S).nnz == 0
    assert back.method == ("svd", "gram") and back.rank == 4 and back.note is None
    assert back.converged is True and back.n_iter == 2
    with pytest.raises(TypeError, match="not a"):
        _OtherResult.load(path)


def test_result_to_dict_is_json_ready():
    d = _result().to_dict(jsonable=True)
    text = json.dumps(d)
    assert '"labels": [0, 1, 1]' in text
    assert _result().to_dict()["labels"] is not None
    assert "DemoResult(" in repr(_result())


def test_result_save_refuses_unknown_types(tmp_path):
    res = _OtherResult(labels=np.zeros(2), objective=np.zeros(0), n_iter=0, converged=False,
                       extra=object())
    with pytest.raises(TypeError, match="extra"):
        res.save(tmp_path / "x.npz")
