"""Every solver folder has the same shape: ``_prepare``, a ``Problem`` satisfying the
driver's protocol, ``_solve``, and a public function that composes them."""
import ast
import importlib
import inspect

import pytest

from fastmv._core._driver import Problem as ProblemProtocol
from fastmv._core._spec import solver_specs


def _calls(func):
    """Names of the functions and classes ``func``'s body calls."""
    tree = ast.parse(inspect.getsource(func).lstrip())
    return {node.func.id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


@pytest.mark.parametrize("name", list(solver_specs()))
def test_solver_folder_has_prepare_problem_and_solve(name):
    spec = solver_specs()[name]
    module = importlib.import_module(spec.module)
    assert spec.module == f"fastmv._{name}._solver"
    for fixed in ("_prepare", "_solve", "Problem"):
        assert hasattr(module, fixed), f"{spec.module} has no {fixed}"
    assert inspect.isfunction(module._prepare) and inspect.isfunction(module._solve)
    assert inspect.isclass(module.Problem)
    assert issubclass(module.Problem, ProblemProtocol)
    assert callable(module.Problem.step)


@pytest.mark.parametrize("name", list(solver_specs()))
def test_public_function_composes_prepare_and_solve(name):
    """The public function validates (``_prepare``) and solves (``_solve``); ``_solve`` is
    where the problem object is made and handed to the shared driver."""
    spec = solver_specs()[name]
    module = importlib.import_module(spec.module)
    assert {"_prepare", "_solve"} <= _calls(spec.function)
    assert "iterate" in _calls(module._solve)
    assert "Problem" in _calls(module._solve)


@pytest.mark.parametrize("name", list(solver_specs()))
def test_prepared_problem_steps(name):
    """The problems the solver hands to the driver are its ``Problem`` and their steps give
    finite objectives: the protocol holds for real instances, not only for the class."""
    import numpy as np

    from fastmv._core import _driver

    spec = solver_specs()[name]
    module = importlib.import_module(spec.module)
    args, kwargs, _ = spec.fixture()
    seen, steps = [], []
    real_iterate = _driver.iterate

    def spy(problem, **kw):
        seen.append(problem)
        assert isinstance(problem, ProblemProtocol)
        step = problem.step

        def recording():
            steps.append(step())
            return steps[-1]
        problem.step = recording
        return real_iterate(problem, **kw)

    module.iterate = spy
    try:
        spec.function(*args, **{**kwargs, "random_state": 0})
    finally:
        module.iterate = real_iterate
    assert seen and all(isinstance(p, module.Problem) for p in seen)
    assert steps
    for step in steps:
        objective = step if isinstance(step, float) else step.objective
        assert np.isfinite(objective)
