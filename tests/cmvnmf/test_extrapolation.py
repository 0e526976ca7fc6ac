"""CMVNMF's extrapolated sweeps (fastmv/_cmvnmf/_extrapolation.py): the safeguard keeps the
objective of the accepted points non-increasing where the plain sweep is, the fixed points
are the plain sweep's, and the solver uses them with pairs only."""
from __future__ import annotations

import numpy as np
import pytest

import fastmv
from fastmv._cmvnmf import _solver as S
from fastmv._cmvnmf._extrapolation import Extrapolated, Extrapolation, _stride
from fastmv._cmvnmf._problem import Problem
from fastmv._cmvnmf._solver import _prepare
from tests.cmvnmf import naive as N
from tests.cmvnmf.helpers import random_problem as _random_problem

pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _problem(seed, *, extrapolate, rescale, beta=1.0, intra=False):
    rng = np.random.default_rng(seed)
    X, ml, cl, U0, V0 = _random_problem(rng, intra=intra)
    data = _prepare(X, 3, ml, cl, beta, "l2")
    prob = Problem(data.views, data.blocks, U0, V0, beta=beta, rescale=rescale,
                   extrapolate=extrapolate)
    return prob, data.views, ml, cl


def _dense(prob, views, ml, cl, beta=1.0):
    U_list, V_list = prob.factors()
    return N.cmvnmf_objective(views, U_list, V_list, ml, cl, beta)


def test_stride_extrapolates_with_a_floor():
    new = np.array([[1.0, 2.0], [4.0, 1e-3]])
    old = np.array([[0.5, 3.0], [4.0, 1.0]])
    got = _stride(new, old, 2.0, 0.5)
    # new + 2 (new - old) = [[2, 0], [4, -1.997]]; floored at half of new
    np.testing.assert_allclose(got, [[2.0, 1.0], [4.0, 5e-4]])
    assert _stride(new.astype(np.float32), old.astype(np.float32), 2.0, 0.5).dtype == np.float32
    np.testing.assert_array_equal(_stride(new, new, 3.0, 0.5), new)  # a fixed point stays


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("settings", [Extrapolation(after=0, settle=0),
                                      Extrapolation(weight=4.0, growth=2.0, max_weight=50.0,
                                                    after=0, settle=0)])
def test_accepted_objective_non_increasing_where_the_plain_sweep_is(seed, settings):
    # rescale=False: the plain multiplicative sweep is non-increasing (the paper's theorem),
    # so the safeguard must keep every accepted point at or below the one before; the bold
    # settings overshoot often, so the rejection path is exercised
    prob, views, ml, cl = _problem(seed, extrapolate=Extrapolated(settings), rescale=False)
    f = _dense(prob, views, ml, cl)
    for _ in range(60):
        step = prob.step()
        g = _dense(prob, views, ml, cl)
        assert np.isclose(step.objective, g, rtol=1e-9)   # the step reports the accepted point
        assert g <= f * (1 + 1e-12) + 1e-12
        f = g
    if settings.weight > 1.0:
        assert prob.extrapolated.n_rejected > 0


def test_rejected_extrapolation_runs_the_plain_sweep_from_the_accepted_point():
    prob, views, ml, cl = _problem(3, extrapolate=Extrapolated(Extrapolation(weight=1e6,
                                                                             after=0, settle=0)),
                                   rescale=False)
    plain, *_ = _problem(3, extrapolate=False, rescale=False)
    for _ in range(2):           # the first two steps: no extrapolation yet, then a wild one
        prob.step()
        plain.step()
    state = prob.factors()
    plain.set_factors(state[0], np.concatenate(state[1]))
    step = prob.step()           # from 1e6 times the last move: rejected
    assert prob.extrapolated.n_rejected == 1
    assert prob.extrapolated.weight == 1e6 / 2
    plain.sweep()
    np.testing.assert_allclose(step.objective, plain.objective(), rtol=1e-12)
    for a, (U, V) in enumerate(zip(*prob.factors())):
        np.testing.assert_allclose(U, plain.U[a], rtol=1e-12)
        np.testing.assert_allclose(V, plain.V(a), rtol=1e-12)


def test_same_fixed_points_as_the_plain_sweep():
    # run the extrapolated sweeps to a fixed point; the plain sweep leaves it where it is, and
    # an extrapolated step from two copies of it does too
    eager = Extrapolation(after=0, settle=0)
    prob, views, ml, cl = _problem(4, extrapolate=Extrapolated(eager), rescale=True)
    for _ in range(3000):
        prob.step()
    U_list, V_list = prob.factors()
    plain, *_ = _problem(4, extrapolate=False, rescale=True)
    plain.set_factors(U_list, np.concatenate(V_list))
    plain.sweep()
    for a in range(plain.m):
        np.testing.assert_allclose(plain.V(a), V_list[a], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(plain.U[a], U_list[a], rtol=1e-4, atol=1e-6)
    # the plain sweep's limit is a fixed point of the extrapolated step
    plain2, *_ = _problem(5, extrapolate=False, rescale=True)
    for _ in range(20000):
        plain2.sweep()
    U_list, V_list = plain2.factors()
    again, *_ = _problem(5, extrapolate=Extrapolated(eager), rescale=True)
    again.set_factors(U_list, np.concatenate(V_list))
    for _ in range(5):
        again.step()
    assert again.extrapolated.from_extrapolated
    for a, (U, V) in enumerate(zip(*again.factors())):
        np.testing.assert_allclose(V, V_list[a], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(U, U_list[a], rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("seed", [0, 1])
def test_extrapolation_reaches_lower_objective_in_the_same_sweeps(seed):
    # the point of it: until the labels have settled (and for `after` steps at least) the
    # steps are the plain sweeps, bit for bit; 60 steps after it starts the run is lower
    ext, views, ml, cl = _problem(seed, extrapolate=True, rescale=True)
    plain, *_ = _problem(seed, extrapolate=False, rescale=True)
    started = None
    for t in range(600):
        f_ext = ext.step().objective
        f_plain = plain.step().objective
        if started is None:
            assert f_ext == f_plain
            if ext.extrapolated.started:
                started = t
                assert t >= ext.extrapolated.settings.after
        elif t == started + 60:
            break
    assert started is not None
    assert f_ext < f_plain
    assert np.isclose(f_ext, _dense(ext, views, ml, cl), rtol=1e-9)


def test_solver_extrapolates_with_pairs_only(monkeypatch):
    made = []
    real = S.Problem

    def spy(*args, **kwargs):
        prob = real(*args, **kwargs)
        made.append(prob.extrapolated is not None)
        return prob

    monkeypatch.setattr(S, "Problem", spy)
    rng = np.random.default_rng(0)
    X, ml, cl, _, _ = _random_problem(rng, intra=False)
    # one start each (random pairs contradict each other: "auto" would add a must-link start)
    kw = dict(n_init=1, max_iter=5, random_state=0, init="k-means++")
    fastmv.cmvnmf(X, 3, ml, cl, beta=1.0, **kw)
    fastmv.cmvnmf(X, 3, None, None, **kw)
    fastmv.cmvnmf(X, 3, ml, cl, beta=1.0, rescale=False, **kw)
    fastmv.cmvnmf(X, 3, ml, cl, beta=0.0, **kw)
    assert made == [True, False, False, False]


def test_solver_result_is_the_accepted_point():
    rng = np.random.default_rng(1)
    X, ml, cl, _, _ = _random_problem(rng, intra=True)
    res = fastmv.cmvnmf(X, 3, ml, cl, beta=1.0, n_init=2, max_iter=30, random_state=0)
    views = _prepare(X, 3, ml, cl, 1.0, "auto").views
    f = N.cmvnmf_objective(views, res.U, res.V, ml, cl, 1.0)
    assert np.isclose(res.objective[-1], f, rtol=1e-9)
    for V, lab in zip(res.V, res.labels):
        np.testing.assert_array_equal(lab, np.argmax(V, axis=1))


class _Scripted:
    """A stand-in problem whose sweeps return scripted objectives (the factors are inert)."""

    def __init__(self, objectives):
        self.objectives = list(objectives)
        self.U = [np.ones((2, 2))]
        self.V_all = np.ones((3, 2))
        self.restored = 0

    def sweep(self):
        self.f = self.objectives.pop(0)
        self.U = [U + 1.0 for U in self.U]     # a move, for the extrapolation to follow
        self.V_all = self.V_all + 1.0

    def objective(self):
        return self.f

    def set_factors(self, U_list, V_all):
        self.U = [U.copy() for U in U_list]
        self.V_all = V_all.copy()
        self.restored += 1


@pytest.mark.parametrize("from_y,accepted", [(8.99, False), (8.4, True)])
def test_an_extrapolated_sweep_must_gain_part_of_the_last_decrease(from_y, accepted):
    # decreases 10 -> 9 (one), then the sweep from the extrapolated point ends at `from_y`:
    # 0.01 below is less than half the last decrease, so the plain sweep (8.5) runs instead
    ext = Extrapolated(Extrapolation(after=0, gain=0.5, settle=0))
    prob = _Scripted([10.0, 9.0, from_y, 8.5])
    assert ext.step(prob) == 10.0 and not ext.from_extrapolated
    assert ext.step(prob) == 9.0 and ext.from_extrapolated
    restored = prob.restored                  # set_factors moved it to the extrapolated point
    f = ext.step(prob)
    assert f == (from_y if accepted else 8.5)
    assert ext.n_rejected == (0 if accepted else 1)
    assert prob.restored - restored == (1 if accepted else 2)   # back to the accepted point


@pytest.mark.parametrize("moved,fall,starts", [(1, 0.05, True),    # long descent: follow it
                                               (3, 0.05, False),   # too many labels move
                                               (1, 0.001, False),  # nearby basins: wait
                                               (0, 0.0, True)])    # nothing moves at all
def test_extrapolation_starts_in_a_long_descent_before_every_label_settles(moved, fall, starts):
    # `moved` labels of 40 change at every sweep (over a window of 3 sweeps: 3 of 40 = 7.5 %
    # for one, 22.5 % for three) while the objective falls by `fall` per sweep: with
    # moved=0.1 and descent=0.01 only a fast fall with few labels moving (or labels that do
    # not move at all, the old rule) starts the extrapolation, and not before the window is
    # full
    settings = Extrapolation(after=2, settle=3, moved=0.1, descent=0.01)

    class Fake:
        def __init__(self):
            self.U = [np.ones((2, 2))]
            self.V_all = np.tile([[1.0, 0.0]], (40, 1))
            self.f = 100.0
            self.t = 0

        def sweep(self):
            self.t += 1
            for i in range(moved):   # labels that change back and forth
                row = (self.t * moved + i) % 40
                self.V_all[row] = self.V_all[row, ::-1]
            self.f *= 1.0 - fall

        def objective(self):
            return self.f

        def set_factors(self, U_list, V_all):
            pass   # the stride is not what this test is about

    ext, prob = Extrapolated(settings), Fake()
    first = None
    for t in range(1, 15):
        ext.step(prob)
        if ext.started and first is None:
            first = t
    assert (first is not None) == starts
    if starts:
        assert first > max(settings.after, settings.settle)
