"""The compile options of every kernel, in one place.

Numba compiles each library function a kernel uses (``np.empty``, ``np.zeros``, ``min``,
``np.dot``, ...) once per signature *and per set of compile options of the calling kernel*:
its cache of compiled overloads is keyed by the caller's options. Kernels decorated with
different options (``nogil`` on some, not on others) therefore each compile their own copies
of the same small functions on a cold first call. Every kernel here uses :data:`SERIAL` or
:data:`PARALLEL` (plus ``fastmath`` where a kernel's docstring says it may reassociate), so
those copies are compiled once per process and shared.

``no_cfunc_wrapper``: Numba otherwise builds, for every compiled kernel, a C-callable
wrapper that only first-class function arguments use; no kernel is passed that way, and
skipping it saves compile time on every function of a cold first call
(docs/records/perf.md, "Cold first call").

For the same reason the kernels spell an allocation one way, ``np.empty(shape,
np.float64)`` (or ``np.int64``, or an input's dtype; always positional), and the serial ones
zero an array with ``out[:] = 0`` after ``np.empty``: ``np.empty(n)``, ``np.empty(n,
dtype=np.float64)`` and ``np.empty(n, np.float64)`` are three compilations to Numba (its
cache of compiled overloads is keyed by the keywords too), and ``np.zeros`` compiles three
library functions (``np.zeros``, the ``np.empty`` inside it and a fill) where the slice
assignment compiles none. (Inside a ``parallel=True`` kernel both would be parfors of their
own, so those kernels allocate in serial helpers.)
"""
from __future__ import annotations

import os

__all__ = ["SERIAL", "PARALLEL", "INNER", "REASSOC"]

#: Options of every serial kernel and helper.
SERIAL = {"cache": True, "nogil": True, "no_cfunc_wrapper": True}

#: Options of every ``parallel=True`` kernel (its serial copy, if any, uses :data:`SERIAL`).
PARALLEL = {**SERIAL, "parallel": True}

#: Options of a helper that only other kernels call and that calls no library function (so
#: it shares nothing with them): no Python wrapper is built for it.
INNER = {**SERIAL, "no_cpython_wrapper": True}

#: ``fastmath`` flags of the kernels whose sums may be reassociated (SIMD) and contracted
#: (FMA); each such kernel says so in its docstring.
REASSOC = {"reassoc", "contract"}


# ----------------------------------------------------------------------- where the cache goes
# Numba writes a ``cache=True`` kernel's compiled code next to its source, in __pycache__, when
# that directory is writable. For a copy installed by pip that is site-packages/fastmv/kernels/
# __pycache__: files pip did not install and so never uninstalls. After ``pip uninstall`` (or
# ``pip install -e .`` over ``pip install .``) they keep a bare site-packages/fastmv/ directory
# alive, which Python then imports as an empty namespace package in place of the editable
# checkout. An installed copy therefore caches where Numba caches for read-only installs (its
# user-wide cache directory, a subdirectory per source directory); a source checkout, whose
# kernels/ sits beside fastmv/ rather than inside it, keeps its __pycache__. NUMBA_CACHE_DIR,
# when set, still decides for both. Only the files of this directory are affected.
_HERE = os.path.dirname(os.path.abspath(__file__))
_INSTALLED = os.path.isfile(os.path.join(os.path.dirname(_HERE), "__init__.py"))


def _user_wide_locator():
    """Numba's user-wide cache locator class and its list of locators (names differ across
    Numba versions), or (None, None)."""
    try:
        from numba.core import caching  # noqa: PLC0415 (only for an installed copy)
    except ImportError:  # pragma: no cover - numba is a dependency
        return None, None
    base = getattr(caching, "UserWideCacheLocator", None) or getattr(
        caching, "_UserWideCacheLocator", None)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    return base, classes if isinstance(classes, list) else None


def _install_locator():
    base, classes = _user_wide_locator()
    if base is None or classes is None:
        return None
    for cls in classes:
        if getattr(cls, "_fastmv_kernels", False):
            return cls

    class InstalledKernelsLocator(base):
        """Numba's user-wide cache, for the kernels of an installed fastmv only."""

        _fastmv_kernels = True

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != _HERE:
                return None
            return super().from_function(py_func, py_file)

    # after NUMBA_CACHE_DIR's locator (the user's choice first), before the in-tree one
    classes.insert(1 if classes else 0, InstalledKernelsLocator)
    return InstalledKernelsLocator


_LOCATOR = _install_locator() if _INSTALLED else None


def numba_cache_directory() -> str:
    """The directory in which Numba caches these kernels: ``NUMBA_CACHE_DIR`` (a
    subdirectory of it) when set; else, for an installed copy, Numba's user-wide cache
    directory (a subdirectory of it), for a source checkout ``kernels/__pycache__``.

    Returns
    -------
    str
        An absolute path (it may not exist yet).

    Examples
    --------
    >>> import os
    >>> from fastmv.kernels._options import numba_cache_directory
    >>> os.path.isabs(numba_cache_directory())
    True
    """
    from numba.core import config  # noqa: PLC0415

    here = os.path.join(_HERE, "_options.py")
    if config.CACHE_DIR:
        from numba.core import caching  # noqa: PLC0415

        cls = getattr(caching, "UserProvidedCacheLocator", None) or getattr(
            caching, "_UserProvidedCacheLocator")
        return os.path.join(config.CACHE_DIR, cls.get_suitable_cache_subpath(here))
    if _LOCATOR is not None:
        return _LOCATOR(numba_cache_directory, here).get_cache_path()
    return os.path.join(_HERE, "__pycache__")
