"""Warnings and exceptions raised by fastmv.

Examples
--------
>>> import warnings
>>> from fastmv.exceptions import ConvergenceWarning
>>> issubclass(ConvergenceWarning, UserWarning)
True
"""
from __future__ import annotations

import sys

__all__ = [
    "ConvergenceWarning",
    "DegenerateSolutionWarning",
    "DegenerateSolutionError",
    "InvalidParameterError",
    "InvalidFileError",
    "InsufficientMemoryError",
    "NotFittedError",
]


class ConvergenceWarning(UserWarning):
    """A solver stopped at ``max_iter`` before its convergence test was met.

    The result is returned all the same (``converged=False``); raise ``max_iter`` or loosen
    ``tol`` if the answer matters.
    """


class DegenerateSolutionWarning(UserWarning):
    """A solver produced an answer without content: a collapsed similarity or factor, or
    fewer distinct clusters than asked for. The message names the cause and the parameter to
    change."""


class DegenerateSolutionError(ValueError):
    """A solver cannot produce a meaningful answer (for example a result that cannot be
    represented in floating point)."""


class InvalidParameterError(ValueError, TypeError):
    """A parameter of a public function violates its declared constraints.

    Subclasses both ``ValueError`` and ``TypeError``, as scikit-learn's error of the same
    name does, so code catching either keeps working.
    """


class InvalidFileError(ValueError):
    """A file given to fastmv (a saved result, a ``.mat`` dataset) is damaged, is not what it
    claims to be, or declares more data than it could hold.

    Raised before anything is built from the file; the message names the file and the problem.
    A ``ValueError``, so code catching that keeps working.
    """


class InsufficientMemoryError(InvalidParameterError, MemoryError):
    """A call would need more memory than the machine or its container allows.

    Raised before the call allocates anything large, with the memory it needs, the memory
    available (``MemAvailable``, the cgroup limit, ``ulimit -v``) and what to do instead;
    :func:`fastmv.memory_limit` (or ``FASTMV_MEMORY_LIMIT``) states another figure or turns
    the check off. Both an :class:`InvalidParameterError` (a ``ValueError``) and a
    ``MemoryError``, so code catching either keeps working.
    """


class NotFittedError(ValueError, AttributeError):
    """An estimator's ``predict``, ``transform`` or ``score`` was called before ``fit``.

    Subclasses ``ValueError`` and ``AttributeError``, as scikit-learn's error of the same name
    does.
    """


def _not_fitted_error(message: str) -> NotFittedError:
    """A :class:`NotFittedError` carrying ``message``; when scikit-learn is imported in this
    process, one that is also scikit-learn's ``NotFittedError`` (what its ``check_is_fitted``
    callers and its estimator checks catch). scikit-learn is never imported here.

    Parameters
    ----------
    message : str
        The error's message.

    Returns
    -------
    NotFittedError
        The exception, to raise.

    Examples
    --------
    >>> isinstance(_not_fitted_error("call fit first"), NotFittedError)
    True
    """
    if "sklearn.exceptions" in sys.modules:
        name = "_SklearnNotFittedError"
        return (globals().get(name) or __getattr__(name))(message)
    return NotFittedError(message)


def __getattr__(name):
    # fastmv's NotFittedError that is also scikit-learn's, made on first use (importing
    # scikit-learn then, never at fastmv's import); a module attribute so that it pickles
    if name == "_SklearnNotFittedError":
        from sklearn.exceptions import NotFittedError as sklearn_error  # noqa: PLC0415

        cls = type(name, (NotFittedError, sklearn_error),
                   {"__module__": __name__, "__doc__": NotFittedError.__doc__})
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():  # dir(module) lists the public names, not the imports
    return list(__all__)
