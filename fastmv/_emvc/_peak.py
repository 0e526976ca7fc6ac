"""EMVC's peak memory (docs/algorithms.md §3.7), checked before the views are stacked."""
from __future__ import annotations

import numpy as np

from .._blocks._peak import shape_of, transition_peak_bytes
from .._core._memory import check_memory

__all__ = ["peak_bytes", "check_emvc", "check_emvc_from_views"]


def peak_bytes(m, n, itemsize, *, settle=True, convert=False):
    """Peak bytes of :func:`fastmv.emvc` on ``m`` transition matrices ``n × n`` in a dtype of
    ``itemsize`` bytes, beyond the caller's matrices.

    The state is ``3m + 3`` dense ``n × n`` arrays (the stacked ``P_v``, ``E_v``, ``Y_v``,
    ``P̂``, ``Q``, ``P̂ + Z/μ``), one more for the previous ``P̂`` (``tol_settle``), and one
    for a view being converted to ``dtype`` (``convert``); on top of it, at the peak, either
    a full SVD's (``U``, ``Vᵀ`` and LAPACK's workspace, about five ``n × n``) or the labels' Markov
    spectral clustering of ``P̂`` (``Θ`` and two float64 temporaries, plus a float64 copy of a
    float32 ``P̂``).
    """
    nn = float(n) * float(n)
    state = (3 * m + 3 + bool(settle) + bool(convert)) * nn * itemsize
    svd = 5 * nn * itemsize
    labels = (3 + (itemsize != 8)) * nn * 8
    return state + max(svd, labels)


_REMEDY = ("every view adds three n × n arrays{half}; EMVC's memory grows as n², so "
           "cluster a subsample, or use OPIMC, which streams the views in bounded memory")


def _remedy(itemsize):
    return _REMEDY.format(half=", dtype=float32 halves them" if itemsize == 8 else "")


def check_emvc(P_list, dtype, settle):
    """Refuse :func:`fastmv.emvc` on ``P_list`` before stacking it when the solve's peak
    exceeds the memory available (shapes read without converting the matrices)."""
    try:
        m = len(P_list)
        shape = shape_of(P_list[0]) if m else None
    except (TypeError, KeyError, IndexError):
        return  # not a list of matrices: the validator names it
    if shape is None or len(shape) != 2:
        return
    n, itemsize = shape[0], np.dtype(dtype).itemsize
    convert = getattr(P_list[0], "dtype", None) != np.dtype(dtype)
    check_memory(peak_bytes(m, n, itemsize, settle=settle, convert=convert),
                 f"emvc() on {m} transition matrices of {n} × {n} ({np.dtype(dtype).name})",
                 _remedy(itemsize))


def check_emvc_from_views(views, dtype, settle=True):
    """Refuse ``EMVC.fit(views)`` on feature views before building any transition matrix:
    the ``m`` float64 ``n × n`` matrices of :func:`fastmv.transition_matrix` stay while the
    solve runs, so the peak is theirs plus the larger of one matrix's construction and the
    solve's."""
    m = len(views)
    shape = shape_of(views[0]) if m else None
    if shape is None or len(shape) != 2:
        return
    n = shape[0]
    itemsize = np.dtype(dtype or np.float64).itemsize
    nn = float(n) * float(n)
    build = transition_peak_bytes(n, max((shape_of(v) or (0, 1))[-1] for v in views), 8) - nn * 8
    needed = m * nn * 8 + max(build, peak_bytes(m, n, itemsize, settle=settle,
                                                convert=itemsize != 8))
    check_memory(needed, f"EMVC.fit on {m} feature views of {n} samples "
                 f"({m} transition matrices of {n} × {n}, then the solve)", _remedy(itemsize))
