"""Numba kernels of fastmv, installed as ``fastmv.kernels``.

One module per solver (``mvmc``, ``mvfl``, ``emvc``, ``cmvnmf``, and ``opimc`` with its
``opimc_layout``, ``opimc_refine`` and ``opimc_stats``) plus the shared ones (``clustering``,
``affinity``, ``simplex``), the fixed partitions of parallel reductions and the serial copies
(``_partition``), the bounds checks every public kernel runs first (``_checks``) and the
compile options (``_options``). Every public kernel is a small ``@njit`` function with a full
docstring and a slow, obviously-correct NumPy twin of the same name: in
``tests/<solver>/naive.py`` for a solver's modules (``opimc_*`` in ``tests/opimc/naive.py``),
in ``tests/naive_clustering.py`` for ``clustering`` and ``affinity``, in
``tests/emvc/naive.py`` for ``simplex`` (EMVC's projection), in ``tests/naive_partition.py``
for ``_partition`` and in ``tests/naive_checks.py`` for ``_checks``. Every kernel compiles with one of the option sets of ``_options`` (``SERIAL``,
or ``PARALLEL`` where the loop is parallel; ``cache=True`` always), so the library functions
they use are compiled once per process.

This package never imports from ``fastmv`` (the Python-facing layer imports it, not the
other way round), so the kernels can be compiled and tested on their own.
"""
