"""Numba kernels of fastmv, installed as ``fastmv.kernels``.

One module per solver (``mvmc``, ``mvfl``, ``emvc``, ``cmvnmf``, ``opimc`` with its
``opimc_layout``, ``opimc_stats`` and ``opimc_refine``) plus the shared ones (``clustering``,
``affinity``, ``simplex``, the partition kernels ``_partition`` and the bounds checks
``_checks``) and the compile machinery (``_options``, the option sets; ``_compile``, serial
copies of the parallel kernels and helpers compiled into their callers; their public
functions are plain Python, not kernels, and have no twin: ``COMPILE_HELPERS`` of
``tests/test_layout.py`` lists them). Every public kernel is a small ``@njit`` function
with a full docstring and a slow, obviously-correct NumPy twin of the same name in
``tests/<solver>/naive.py`` (shared kernels: ``tests/naive_clustering.py``
for the clustering and affinity kernels, ``tests/naive_partition.py``,
``tests/naive_checks.py``; ``simplex``: ``tests/emvc/naive.py``). Every kernel compiles with
one of the option sets of ``_options`` (``SERIAL``, or ``PARALLEL`` where the loop is
parallel; ``cache=True`` always), so the library functions they use are compiled once per
process.

This package never imports from ``fastmv`` (the Python-facing layer imports it, not the
other way round), so the kernels can be compiled and tested on their own.
"""
