"""Numba kernels of fastmv, installed as ``fastmv.kernels``.

One module per family of kernels. Every public kernel is a small ``@njit`` function
(``parallel=True`` where the loop is parallel, ``cache=True`` always) with a full docstring
and a slow, obviously-correct NumPy twin of the same name in ``tests/naive.py``.

This package never imports from ``fastmv`` (the Python-facing layer imports it, not the
other way round), so the kernels can be compiled and tested on their own.
"""
