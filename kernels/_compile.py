"""How the kernels are compiled, apart from the option sets of ``_options``.

- :func:`inlining`: a function with the serial helpers it calls compiled into it (one
  compilation instead of one per helper on a cold first call);
- :func:`serial_copy`: a ``parallel=True`` kernel's code as a function of its own name, for
  the serial kernel that small calls run (the same parts in the same order).
"""
from __future__ import annotations

import types

from numba import njit

from ._options import SERIAL


def inlining(fn, helpers, name=None):
    """The Python function ``fn`` with the serial helpers it calls compiled into it: for
    ``njit`` to compile as one function instead of one per helper.

    On a cold first call every separately compiled helper costs a whole compilation pipeline,
    a Python wrapper and an LLVM module of its own, and its code is optimised again inside
    each caller; a helper called from one place needs none of that. Numba inlines the
    helpers' code where ``fn`` calls them (``inline="always"``), which moves no arithmetic,
    so the result is bit for bit that of the separately compiled helpers.

    Parameters
    ----------
    fn : function
        A plain Python function (a kernel before ``njit``, or a kernel's ``py_func``).
    helpers : sequence of numba dispatchers
        Serial helpers that ``fn``, or another helper in ``helpers``, calls by a
        module-level name (in its own module or another). Every such call, in ``fn`` and
        in the inlined helpers, is inlined; other calls are left as they are.
    name : str, optional
        The new function's name and qualified name (default: ``fn``'s).

    Returns
    -------
    function
        A new Python function with ``fn``'s code, whose names of the helpers resolve to
        inlined copies (the module's own functions and its namespace are unchanged).

    Notes
    -----
    Cost: none at run time. Use it on serial code only: inside a ``parallel=True`` kernel an
    inlined allocation would become a parfor of its own. The new function sees a copy of
    its module's names as they are when ``inlining`` is called, so call it below everything
    the function and its helpers use.
    """
    spaces = {}                    # a copy of each module's names, the helpers' replaced

    def space(names):
        return spaces.setdefault(id(names), dict(names))

    home = space(fn.__globals__)
    inlined = {}
    for helper in helpers:
        h = helper.py_func
        body = types.FunctionType(h.__code__, space(h.__globals__), h.__name__,
                                  h.__defaults__, h.__closure__)
        inlined[id(helper)] = njit(**SERIAL, inline="always")(body)
    for names in spaces.values():
        for key, value in names.items():
            if id(value) in inlined:
                names[key] = inlined[id(value)]
    called = set(fn.__code__.co_names).union(*(h.py_func.__code__.co_names for h in helpers))
    for helper in helpers:
        if helper.py_func.__name__ not in called:
            raise ValueError(f"neither {fn.__name__} nor the other helpers call "
                             f"{helper.py_func.__name__}")
    name = name or fn.__name__
    copy = types.FunctionType(fn.__code__, home, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = name
    copy.__module__ = fn.__module__
    copy.__doc__ = fn.__doc__
    return copy


def serial_copy(kernel, name, summary, inline=()):
    """The Python function of a ``parallel=True`` kernel as a new function called ``name``, to
    be compiled without ``parallel=True``: its ``prange`` loops then run as ``range`` loops,
    the same parts in the same order, so the serial kernel computes exactly what the parallel
    one does and a call that uses only it never compiles the parallel one.

    A function of its own name because Numba's on-disk cache keys a compiled kernel by its
    function's qualified name and signature, not by ``parallel``: two dispatchers of one
    function would overwrite each other's cache entries.

    Parameters
    ----------
    kernel : numba dispatcher
        A ``parallel=True`` kernel whose parallel loops are ``prange`` loops over parts.
    name : str
        The new function's name (its module is the kernel's).
    summary : str
        First paragraph of the new docstring; the kernel's docstring follows.
    inline : sequence of numba dispatchers, optional
        Serial helpers compiled into the copy (:func:`inlining`); the parallel kernel keeps
        calling them as functions.

    Returns
    -------
    function
        A plain Python function, for ``njit`` to compile.

    Notes
    -----
    Cost: none at run time; the serial kernel costs what the parallel one does on one thread.
    """
    copy = inlining(kernel.py_func, inline, name)
    copy.__doc__ = f"{summary}\n\n    {kernel.py_func.__doc__}"
    return copy

