"""What the package knows about a solver, and the registry of solvers.

Each solver folder (``fastmv/_<name>/``) exports one :class:`SolverSpec` as ``SPEC`` from its
``__init__``: the public function and its result type (by name, so that reading the spec
imports no kernels), the estimator's name, the kinds of side information the function takes,
a warm-up call, the demo's settings, a small problem for the common tests and the pictures
that suit its result. Everything that iterates over the solvers reads :func:`solver_specs`:
the lazy names of ``fastmv``, the estimators, the command line (demo, run, compile, list),
the warm-up and ``tests/test_common.py``.

Adding a solver is one folder, one kernels module, one test folder and one line in
:data:`SOLVER_PACKAGES`; :func:`registered` adds one for the duration of a ``with`` block
(the tests' toy solver). A folder may also hold ``_cli.py``, the solver's options and
``run`` for the command line (:mod:`fastmv._core._cli_parts`); without one the command line
runs the solver on the views and the side-information files given.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import warnings
from collections.abc import Callable

__all__ = ["SOLVER_PACKAGES", "Setting", "SolverSpec", "blobs", "planted", "registered",
           "solver_specs", "warmup_call"]

#: The registry: one solver folder per line, in the order the command line lists them.
SOLVER_PACKAGES = (
    "fastmv._mvmc",
    "fastmv._mvfl",
    "fastmv._emvc",
    "fastmv._cmvnmf",
    "fastmv._opimc",
)

_registered: dict = {}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of the demo: ``solve()`` returns ``(pairs, result)`` where ``pairs`` is a list
    of ``(y_true, y_pred)`` whose metrics are averaged into the row.

    Examples
    --------
    >>> import numpy as np
    >>> s = Setting("toy", lambda: ([(np.array([0, 1]), np.array([1, 0]))], None))
    >>> s.label, len(s.solve()[0])
    ('toy', 1)
    """

    label: str
    solve: Callable[[], tuple]


@dataclasses.dataclass(frozen=True)
class SolverSpec:
    """One solver, as the rest of the package sees it.

    Attributes
    ----------
    name : str
        The public function's name, ``fastmv.<name>`` (also the command line's name).
    module : str
        The module that defines the function and the result type.
    result : str
        The result class's name (a :class:`fastmv.Result`).
    estimator : str
        The estimator's class name in :mod:`fastmv.estimators`.
    description : str
        One line for ``python -m fastmv list``.
    side : tuple of str
        Kinds of side information the function takes: ``"must"``, ``"cannot"``
        (``must_link``, ``cannot_link``), ``"labels"``, ``"mask"``.
    warmup : callable
        ``warmup(dtype=numpy.float64, sparse=False)``: a tiny synthetic call that compiles (or
        loads from Numba's cache) the kernels the solver uses.
    demo : callable
        ``demo(seed)``: the demo's settings on the embedded Handwritten data, a list of
        :class:`Setting`.
    demo_note : str
        What the demo runs, one line.
    fixture : callable
        ``fixture()``: a small problem for the common tests, ``(args, kwargs, y_true)``.
    plots : tuple of (str, callable)
        Pictures of a demo result beyond the convergence and contingency plots every solver
        gets: ``(name, draw)`` with ``draw(result, y_pred)`` returning matplotlib axes.
    sparse : bool
        Whether the solver takes sparse views (the warm-up's sparse variants).
    estimator_defaults : dict
        ``{parameter: default}`` where the estimator's default differs from the function's.
    estimator_parameters : dict
        Parameters of the estimator that the function does not take (how the estimator
        reads its input), ``{name: (default, numpydoc entry)}``, after the function's.

    Examples
    --------
    >>> spec = solver_specs()["mvfl"]
    >>> spec.side, spec.result
    (('labels', 'must', 'cannot'), 'MVFLResult')
    """

    name: str
    module: str
    result: str
    estimator: str
    description: str
    side: tuple
    warmup: Callable[..., None]
    demo: Callable[[int], list]
    demo_note: str
    fixture: Callable[[], tuple]
    plots: tuple = ()
    sparse: bool = True
    estimator_defaults: dict = dataclasses.field(default_factory=dict)
    estimator_parameters: dict = dataclasses.field(default_factory=dict)

    @property
    def function(self) -> Callable:
        """The public solver function (its module is imported on first use)."""
        return getattr(importlib.import_module(self.module), self.name)

    @property
    def result_type(self) -> type:
        """The result class."""
        return getattr(importlib.import_module(self.module), self.result)


def solver_specs() -> dict:
    """The registered solvers, ``{name: SolverSpec}``, in registry order.

    Returns
    -------
    dict
        One :class:`SolverSpec` per solver.

    Examples
    --------
    >>> list(solver_specs())
    ['mvmc', 'mvfl', 'emvc', 'cmvnmf', 'opimc']
    """
    specs = {}
    for package in SOLVER_PACKAGES:
        spec = importlib.import_module(package).SPEC
        specs[spec.name] = spec
    specs.update(_registered)
    return specs


@contextlib.contextmanager
def registered(spec: SolverSpec):
    """Register ``spec`` for the duration of a ``with`` block (a solver outside the package,
    such as the tests' toy solver).

    Parameters
    ----------
    spec : SolverSpec
        The solver to add; its name must be new.

    Yields
    ------
    SolverSpec
        ``spec``.

    Examples
    --------
    >>> toy = dataclasses.replace(solver_specs()["mvmc"], name="toy")
    >>> with registered(toy):
    ...     "toy" in solver_specs()
    True
    >>> "toy" in solver_specs()
    False
    """
    if spec.name in solver_specs():
        raise ValueError(f"a solver named {spec.name!r} is already registered")
    _registered[spec.name] = spec
    try:
        yield spec
    finally:
        del _registered[spec.name]


def warmup_call(func: Callable, *args, **kwargs):
    """A warm-up call of ``func``, its warnings silenced (a few iterations on tiny data are
    expected to stop at ``max_iter``). Every keyword must be a parameter of ``func``.

    Parameters
    ----------
    func : callable
        The solver.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object
        What ``func`` returns.

    Examples
    --------
    >>> warmup_call(max, 1, 2)
    2
    """
    params = inspect.signature(func).parameters if kwargs else {}
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise TypeError(f"warm-up of {func.__name__}: no parameter {', '.join(unknown)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def blobs(n, dims, c, *, dtype="float64", sparse=False, seed=0, nonnegative=False):
    """Small well-separated multi-view blobs (views of the same ``n`` samples): for warm-up
    calls and test fixtures.

    Parameters
    ----------
    n : int
        Samples.
    dims : sequence of int
        Width of each view.
    c : int
        Clusters (sample ``i`` is in cluster ``i % c``).
    dtype : dtype, default "float64"
        The views' dtype.
    sparse : bool, default False
        CSR views (half the entries zeroed); implies nonnegative values.
    seed : int, default 0
        Random seed.
    nonnegative : bool, default False
        Absolute values.

    Returns
    -------
    views : list of ndarray or csr_matrix
        The views.
    y : ndarray of int
        The clusters.

    Examples
    --------
    >>> views, y = blobs(6, (2, 3), 2)
    >>> [X.shape for X in views], y.tolist()
    ([(6, 2), (6, 3)], [0, 1, 0, 1, 0, 1])
    """
    # numpy and scipy on first use: ``import fastmv`` reads the specs and stays cheap
    import numpy as np  # noqa: PLC0415
    import scipy.sparse as sp  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    views = []
    for d in dims:
        centres = rng.random((c, d)) * 4
        X = centres[y] + 0.3 * rng.standard_normal((n, d))
        if nonnegative or sparse:
            X = np.abs(X)
        if sparse:
            X[rng.random(X.shape) < 0.5] = 0.0
            X = sp.csr_matrix(X.astype(dtype))
        else:
            X = X.astype(dtype)
        views.append(X)
    return views, y


def planted(n=30, dims=(6, 5), c=3, seed=0, nonnegative=False):
    """Views of ``c`` planted Gaussian clusters (``n // c`` samples each, class-sorted): the
    common tests' small problems.

    Parameters
    ----------
    n : int, default 30
        Samples (a multiple of ``c``).
    dims : sequence of int, default (6, 5)
        Width of each view.
    c : int, default 3
        Clusters.
    seed : int, default 0
        Random seed.
    nonnegative : bool, default False
        Absolute values.

    Returns
    -------
    views : list of ndarray
        The views.
    y : ndarray of int
        The clusters.

    Examples
    --------
    >>> views, y = planted()
    >>> [X.shape for X in views], y[:4].tolist()
    ([(30, 6), (30, 5)], [0, 0, 0, 0])
    """
    import numpy as np  # noqa: PLC0415 (see blobs)

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n // c)
    views = []
    for d in dims:
        centers = rng.normal(0.0, 4.0, (c, d))
        X = centers[y] + rng.normal(0.0, 1.0, (y.size, d))
        views.append(np.abs(X) if nonnegative else X)
    return views, y
