"""Simulate the side information and damage that the five solvers' experiments need.

Every function takes a ``random_state`` (``None``, an int, or a :class:`numpy.random.Generator`,
see :func:`fastmv._core._validation.check_random_state`): the same int gives the same output, and a
Generator is advanced. Inputs are never modified; outputs are new arrays.

- :func:`pairwise_constraints` — must-link / cannot-link pairs from labels (MVMC, MVFL).
- :func:`partial_labels` — a labelled fraction of the samples, ``-1`` elsewhere (MVFL).
- :func:`incomplete_mask` — which view of which sample is present (OPIMC).
- :func:`unmapped` — views whose rows no longer correspond (CMVNMF).
- :func:`inter_view_constraints` — must-link / cannot-link pairs across unmapped views (CMVNMF).
- :func:`corrupt` — Gaussian noise at an SNR, random entry corruption, sample-specific
  corruption (EMVC).

Pair sampling never forms the n(n-1)/2 candidate pairs: pairs are numbered, a uniform random
set of distinct numbers is drawn (Floyd's algorithm inside ``Generator.choice`` when the set is
small relative to the range, otherwise rejection or complement sampling; memory O(p) or
O(range) ≤ O(50 p)), and numbers are decoded to index pairs arithmetically.

The pair numbering and sampling live in :mod:`fastmv._core._pair_codes`, the kinds of damage in
:mod:`fastmv._core._corruption`; this module holds the public functions and their documentation.
"""
from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._core._corruption import (
    CORRUPTION_KINDS,
    add_gaussian_noise,
    corrupt_entries,
    corrupt_samples,
)
from ._core._driver import caller_stacklevel
from ._core._memory import check_memory
from ._core._pair_codes import (
    MAX_PAIR_N,
    codes_of,
    decode_pairs,
    n_pairs_from,
    round_half_up,
    sample_codes,
    split_must_cannot,
)
from ._core._validation import (
    Interval,
    Options,
    check_array,
    check_int,
    check_labels,
    check_random_state,
    check_scalar,
    check_views,
    declare_params,
)
from .exceptions import InvalidParameterError

# an int seed, a numpy Generator or None (fresh entropy)
_RandomState = int | np.random.Generator | None

__all__ = [
    "pairwise_constraints",
    "partial_labels",
    "pairs_from_labels",
    "incomplete_mask",
    "unmapped",
    "inter_view_constraints",
    "corrupt",
]

# readings of inter_view_constraints' ratio: a share of the candidate pairs or of the samples
_BUDGETS = frozenset({"pairs", "samples"})


@declare_params({
    "y": ["array-like"],
    "n_constraints": [Interval(numbers.Integral, 0, None, closed="left"), None],
    "ratio": [Interval(numbers.Real, 0, 1, closed="both"), None], "random_state": ["random_state"],
})
def pairwise_constraints(y: ArrayLike, n_constraints: int | None = None, *,
                         ratio: float | None = None,
                         random_state: _RandomState = None) -> tuple[np.ndarray, np.ndarray]:
    """Must-link and cannot-link pairs drawn uniformly from all sample pairs.

    Parameters
    ----------
    y : array-like of shape (n,)
        Ground-truth labels (any comparable values).
    n_constraints : int, optional
        Number of distinct pairs to draw, 0 ≤ n_constraints ≤ n(n-1)/2.
    ratio : float in [0, 1], optional
        Draw ``round(ratio · n(n-1)/2)`` pairs instead (give exactly one of the two). This is the
        fraction of the off-diagonal entries of the symmetric n × n constraint matrix, i.e. the
        papers' ``|Ω| = RATIO · n²`` up to the diagonal (MVMC).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    must_link, cannot_link : ndarray of shape (p_m, 2) and (p_c, 2), int64
        Each row ``(i, j)`` has ``i < j``; no pair occurs twice. The drawn pairs form a uniform
        random subset of the n(n-1)/2 unordered pairs; a pair is a must-link when
        ``y[i] == y[j]`` and a cannot-link otherwise; p_m + p_c = the number drawn. Rows are in
        increasing order of ``j (j-1)/2 + i``.

    Notes
    -----
    Never forms the pairs: O(p) time and memory when p ≤ n(n-1)/100, otherwise
    O(n²) time and O(max(p, n²/2)) bytes ≤ 50× the output.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import simulate
    >>> must, cannot = simulate.pairwise_constraints(np.array([0, 0, 1, 1, 2, 2]), 4,
    ...                                              random_state=0)
    >>> must.shape[0] + cannot.shape[0]
    4
    """
    y = check_labels(y, "y")
    n = y.shape[0]
    if n > MAX_PAIR_N:
        raise ValueError(f"y has {n} samples; pair sampling supports at most {MAX_PAIR_N}")
    N = n * (n - 1) // 2
    p = n_pairs_from(N, n_constraints, ratio, "pairs")
    rng = check_random_state(random_state)
    i, j = decode_pairs(sample_codes(N, p, rng))
    return split_must_cannot(i, j, y[i] == y[j])


@declare_params({
    "labels_per_view": ["views"], "ratio": [Interval(numbers.Real, 0, 1, closed="both"), None],
    "n_constraints": [Interval(numbers.Integral, 0, None, closed="left"), None],
    "view_pairs": ["array-like", None], "budget": [Options(_BUDGETS)],
    "random_state": ["random_state"],
})
def inter_view_constraints(labels_per_view: Sequence[ArrayLike], *, ratio: float | None = None,
                           n_constraints: int | None = None,
                           view_pairs: ArrayLike | None = None, budget: str = "pairs",
                           random_state: _RandomState = None) -> tuple[dict, dict]:
    """Must-link and cannot-link pairs between the rows of different (unmapped) views.

    Parameters
    ----------
    labels_per_view : sequence of array-like, one of shape (n_a,) per view
        Ground-truth labels of each view's rows (e.g. the second output of :func:`unmapped`).
    ratio : float in [0, 1], optional
        For each view pair ``(a, b)``, the share of constraints; ``budget`` says what it is a
        share of.
    n_constraints : int, optional
        Or draw this many pairs for each view pair (give exactly one of the two).
    view_pairs : iterable of (a, b), optional
        View pairs to draw for; default all ``(a, b)`` with ``a < b``. ``(b, a)`` is read as
        ``(a, b)``. ``(a, a)`` asks for intra-view pairs of view ``a``, drawn like
        :func:`pairwise_constraints` from its ``n_a (n_a - 1) / 2`` pairs (and ``ratio`` refers
        to that number).
    budget : {"pairs", "samples"}, default "pairs"
        How ``ratio`` is read ("x% constraints" is ambiguous in the literature):
        ``"pairs"`` draws ``round(ratio · n_a · n_b)`` cross pairs, a share of all candidate
        pairs (``n_a (n_a - 1) / 2`` for an intra-view block) — quadratic in ``n``;
        ``"samples"`` draws ``round(ratio · (n_a + n_b) / 2)`` pairs, a share of the
        number of samples — linear in ``n`` (about ``ratio · n`` for views of ``n`` rows).
        At equal ``ratio`` the ``"pairs"`` reading gives ``n`` times more pairs; the
        ``"samples"`` reading reproduces the shape of the CMVNMF paper's accuracy curves
        (``docs/records/cmvnmf.md``). Ignored when ``n_constraints`` is given.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    must_link, cannot_link : dict {(a, b): ndarray of shape (p, 2), int64}
        One entry per view pair (``a ≤ b``, in the order given / lexicographic order). Row
        ``(i, j)``: row ``i`` of view ``a`` and row ``j`` of view ``b``, drawn uniformly without
        repetition from the ``n_a × n_b`` cross pairs, must-link when their labels agree.

    Notes
    -----
    O(Σ p) time and memory per view pair when p ≤ n_a n_b / 50 (see
    :func:`pairwise_constraints`); never forms the n_a × n_b pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import simulate
    >>> y = np.array([0, 0, 1, 1, 2, 2])
    >>> ml, cl = simulate.inter_view_constraints([y, y[:4]], ratio=0.5, random_state=0)
    >>> ml[(0, 1)].shape[0] + cl[(0, 1)].shape[0]       # half of the 6 · 4 cross pairs
    12
    >>> ml, cl = simulate.inter_view_constraints([y, y[:4]], ratio=0.5, budget="samples",
    ...                                          random_state=0)
    >>> ml[(0, 1)].shape[0] + cl[(0, 1)].shape[0]       # half of (6 + 4) / 2 samples
    3
    """
    if isinstance(labels_per_view, np.ndarray) and labels_per_view.ndim == 1:
        raise TypeError("labels_per_view must be a list of 1-D label arrays (one per view)")
    try:
        labels = [check_labels(lab, f"labels_per_view[{a}]")
                  for a, lab in enumerate(labels_per_view)]
    except TypeError as exc:
        if "labels_per_view" in str(exc):
            raise
        raise TypeError("labels_per_view must be a list of 1-D label arrays") from exc
    m = len(labels)
    if m == 0:
        raise ValueError("labels_per_view must hold at least one view")
    if (n_constraints is None) == (ratio is None):
        raise ValueError("give exactly one of n_constraints and ratio")
    if budget not in _BUDGETS:
        raise ValueError(f"budget must be one of {sorted(_BUDGETS)}, got {budget!r}")
    if view_pairs is None:
        pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
    else:
        pairs = []
        for k, vp in enumerate(view_pairs):
            try:
                a, b = vp
            except (TypeError, ValueError) as exc:
                raise ValueError(f"view_pairs[{k}] must be a pair (a, b), got {vp!r}") from exc
            a = check_int(a, f"view_pairs[{k}][0]", low=0, high=m - 1)
            b = check_int(b, f"view_pairs[{k}][1]", low=0, high=m - 1)
            key = (min(a, b), max(a, b))
            if key in pairs:
                raise ValueError(f"view_pairs[{k}] = {vp!r} repeats the view pair {key}")
            pairs.append(key)
    rng = check_random_state(random_state)
    must, cannot = {}, {}
    for a, b in pairs:
        la, lb = labels[a], labels[b]
        if a == b:
            if la.shape[0] > MAX_PAIR_N:
                raise ValueError(f"labels_per_view[{a}] has {la.shape[0]} samples; intra-view "
                                 f"pair sampling supports at most {MAX_PAIR_N}")
            N = la.shape[0] * (la.shape[0] - 1) // 2
        else:
            N = la.shape[0] * lb.shape[0]
        if ratio is not None and budget == "samples":
            n_mean = (la.shape[0] + lb.shape[0]) / 2.0
            p = min(N, round_half_up(check_scalar(ratio, "ratio", low=0.0, high=1.0) * n_mean))
        else:
            p = n_pairs_from(N, n_constraints, ratio, f"pairs between views {a} and {b}")
        codes = sample_codes(N, p, rng)
        if a == b:
            i, j = decode_pairs(codes)
        else:
            i, j = np.divmod(codes, lb.shape[0])
        must[(a, b)], cannot[(a, b)] = split_must_cannot(i, j, la[i] == lb[j])
    return must, cannot


@declare_params({
    "y": ["array-like"], "ratio": [Interval(numbers.Real, 0, 1, closed="both")],
    "stratify": ["boolean"], "random_state": ["random_state"],
})
def partial_labels(y: ArrayLike, ratio: float, *, stratify: bool = False,
                   random_state: _RandomState = None) -> np.ndarray:
    """Reveal the labels of a random fraction of the samples.

    Parameters
    ----------
    y : array-like of shape (n,)
        Ground-truth labels (any comparable values).
    ratio : float in [0, 1]
        Fraction of samples to label: ``round(ratio · n)`` samples, but at least one when
        ``ratio > 0`` (none when ``ratio == 0``).
    stratify : bool, default False
        Label ``max(1, round(ratio · n_c))`` samples of every class ``c`` instead (every class then
        has a labelled sample whenever ``ratio > 0``).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    labels : ndarray of shape (n,), int64
        ``-1`` for unlabelled samples; for labelled ones the class id in ``0..c-1``, the rank of
        ``y[i]`` among the sorted distinct values of ``y`` (so ``y`` already in ``0..c-1`` is kept
        as is).

    Notes
    -----
    O(n log n) time (a sort of the labels), O(n) memory.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import simulate
    >>> lab = simulate.partial_labels(np.array([0, 0, 1, 1, 2, 2]), 0.5, random_state=0)
    >>> int((lab >= 0).sum())
    3
    """
    y = check_labels(y, "y")
    n = y.shape[0]
    if n == 0:
        raise ValueError("y is empty")
    ratio = check_scalar(ratio, "ratio", low=0.0, high=1.0)
    rng = check_random_state(random_state)
    codes, c = codes_of(y, "y")
    out = np.full(n, -1, dtype=np.int64)
    if ratio == 0.0:
        return out
    if stratify:
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=c))])
        chosen = []
        for k in range(c):
            members = order[bounds[k]:bounds[k + 1]]
            take = max(1, round_half_up(ratio * members.shape[0]))
            chosen.append(rng.choice(members, size=take, replace=False))
        idx = np.concatenate(chosen)
    else:
        idx = rng.choice(n, size=max(1, round_half_up(ratio * n)), replace=False)
    out[idx] = codes[idx]
    return out


@declare_params({"labels": ["array-like"]})
def pairs_from_labels(labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Every pair among the labelled samples of a partial labelling, as constraints.

    How MVFL's paper turns labelled samples into pairwise constraints: a must-link where two
    labelled samples share a class, a cannot-link where they differ.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Partial labels: ``-1`` (any negative value) for an unlabelled sample, the class
        otherwise (as returned by :func:`partial_labels`).

    Returns
    -------
    must_link, cannot_link : ndarray of shape (p, 2), int64
        Pairs ``(i, j)`` with ``i < j``, in row-major order of ``(i, j)``.

    Notes
    -----
    ``l (l − 1) / 2`` pairs for ``l`` labelled samples: O(l²) time and memory.

    Examples
    --------
    >>> from fastmv import simulate
    >>> ml, cl = simulate.pairs_from_labels([0, -1, 0, 1])
    >>> ml.tolist(), cl.tolist()
    ([[0, 2]], [[0, 3], [2, 3]])
    """
    labels = check_labels(labels, "labels")
    if labels.dtype.kind not in "biuf":
        raise InvalidParameterError(
            f"labels must be integer classes, -1 (any negative value) for an unlabelled "
            f"sample; got dtype {labels.dtype}: encode other classes first, e.g. "
            "np.unique(labels, return_inverse=True)[1]")
    idx = np.flatnonzero(labels >= 0)
    _check_pairs_memory(idx.size)
    i, j = np.triu_indices(idx.size, 1)
    a, b = idx[i], idx[j]
    return split_must_cannot(a, b, labels[a] == labels[b])


#: Bytes per pair of :func:`pairs_from_labels` at its peak: the ``(i, j)`` and sample-index
#: arrays (int64, 32), the ``(p, 2)`` table and the two outputs (32), boolean masks and
#: NumPy's temporaries (measured: 69).
_PAIR_PEAK_BYTES = 72


def _pairs_peak_bytes(n_labelled):
    """Peak bytes of :func:`pairs_from_labels` with ``n_labelled`` labelled samples: the
    ``l (l − 1) / 2`` pairs at :data:`_PAIR_PEAK_BYTES` each, or the ``l × l`` boolean
    triangle ``np.triu_indices`` builds first, if larger."""
    count = float(n_labelled)
    return max(_PAIR_PEAK_BYTES * count * (count - 1) / 2, 2 * count * count)


def _check_pairs_memory(n_labelled):
    check_memory(_pairs_peak_bytes(n_labelled),
                 f"pairs_from_labels() of {n_labelled} labelled samples "
                 f"({n_labelled * (n_labelled - 1) // 2} pairs)",
                 "the pairs grow as the square of the labelled samples: label fewer "
                 "(simulate.partial_labels), or give the solvers the partial labels "
                 "themselves (mvfl takes labels; simulate.pairwise_constraints draws a "
                 "number of pairs)")


@declare_params({
    "n": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_views": [Interval(numbers.Integral, 1, None, closed="left")],
    "missing_ratio": [Interval(numbers.Real, 0, 1, closed="both")],
    "random_state": ["random_state"],
})
def incomplete_mask(n: int, n_views: int, missing_ratio: float, *,
                    random_state: _RandomState = None) -> np.ndarray:
    """Presence mask for incomplete multi-view data: every sample keeps at least one view.

    Scheme: with ``r = round(missing_ratio · n)``, every view misses exactly ``r`` samples.
    First each view drops a uniformly random set of ``r`` samples, independently of the other
    views. Samples then left with no view are repaired by swaps that keep every view's count:
    such a sample gets back a view ``v`` in exchange for a random sample present in at least two
    views, which loses its (randomly chosen) view ``v`` instead. A repair always exists when
    ``m · r ≤ n (m - 1)``; a larger ``r`` is impossible (some sample would lose every view), so
    ``r`` is capped at ``floor(n (m - 1) / m)`` with a warning (with ``n_views = 1`` nothing can be
    missing).

    Parameters
    ----------
    n : int ≥ 1
        Number of samples.
    n_views : int ≥ 1
        Number of views ``m``.
    missing_ratio : float in [0, 1]
        Fraction of the samples missing from each view.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    mask : ndarray of shape (n, n_views), bool
        ``True`` where the sample is present in the view; every row has at least one ``True``;
        every column has exactly ``n - r`` ``True``.

    Notes
    -----
    O(n m) time and memory.

    Examples
    --------
    >>> from fastmv import simulate
    >>> mask = simulate.incomplete_mask(6, 2, 0.5, random_state=0)
    >>> mask.sum(axis=0).tolist(), bool(mask.any(axis=1).all())
    ([3, 3], True)
    """
    n = check_int(n, "n", low=1)
    m = check_int(n_views, "n_views", low=1)
    missing_ratio = check_scalar(missing_ratio, "missing_ratio", low=0.0, high=1.0)
    rng = check_random_state(random_state)
    r = round_half_up(missing_ratio * n)
    cap = n * (m - 1) // m
    if r > cap:
        warnings.warn(f"missing_ratio={missing_ratio} would leave some samples with no view "
                      f"(n={n}, n_views={m}); each view misses {cap} samples instead of {r}",
                      UserWarning, stacklevel=caller_stacklevel())
        r = cap
    missing = np.zeros((n, m), dtype=bool)
    if r == 0:
        return ~missing
    for v in range(m):
        missing[rng.choice(n, size=r, replace=False), v] = True
    while True:
        cnt = missing.sum(axis=1)
        orphans = np.flatnonzero(cnt == m)
        if orphans.size == 0:
            break
        donors = np.flatnonzero(cnt <= m - 2)   # nonempty whenever m r <= n (m - 1)
        s = min(orphans.size, donors.size)
        orphans = rng.choice(orphans, size=s, replace=False)
        donors = rng.choice(donors, size=s, replace=False)
        keys = rng.random((s, m))
        keys[missing[donors]] = -1.0          # only views where the donor is present
        v = np.argmax(keys, axis=1)
        missing[orphans, v] = False
        missing[donors, v] = True
    return ~missing


@declare_params({
    "X_list": ["views"], "y": ["array-like"],
    "keep": [Interval(numbers.Real, 0, 1, closed="right")], "random_state": ["random_state"],
})
def unmapped(X_list: Sequence[Any], y: ArrayLike, keep: float = 0.95, *,
             random_state: _RandomState = None) -> tuple[list, list, list]:
    """Turn mapped multi-view data into unmapped views (the CMVNMF protocol).

    Each view independently keeps a uniformly random subset of ``round(keep · n)`` samples (at
    least one) in a uniformly random order, so row ``i`` of view ``a`` and row ``i`` of view ``b``
    are in general different samples.

    Parameters
    ----------
    X_list : list of array or sparse matrix, each (n, d_v)
        Mapped views (same samples in the same order).
    y : array-like of shape (n,)
        Labels of the samples.
    keep : float in (0, 1], default 0.95
        Fraction of samples each view keeps.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    views : list of ndarray or CSR matrix, each (n_a, d_v)
        Float arrays (float32 input stays float32); sparse views stay CSR.
    labels_per_view : list of ndarray, each (n_a,)
        ``y`` of each view's rows.
    index_per_view : list of ndarray, each (n_a,), int64
        ``index_per_view[a][i]`` is the original sample index of row ``i`` of view ``a``:
        ``views[a] == X_list[a][index_per_view[a]]``.

    Notes
    -----
    O(Σ_v nnz(X_v)) time and memory (one row gather per view).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import simulate
    >>> X = np.arange(12.0).reshape(6, 2)
    >>> Xs, ys, _ = simulate.unmapped([X, X], np.array([0, 0, 1, 1, 2, 2]), keep=0.5,
    ...                               random_state=0)
    >>> [x.shape for x in Xs]
    [(3, 2), (3, 2)]
    """
    views = check_views(X_list, "X_list")
    n = views[0].shape[0]
    y = check_labels(y, "y", n=n)
    keep = check_scalar(keep, "keep", low=0.0, high=1.0, low_inclusive=False)
    rng = check_random_state(random_state)
    n_keep = max(1, round_half_up(keep * n))
    out_views, out_labels, out_index = [], [], []
    for X in views:
        idx = rng.choice(n, size=n_keep, replace=False).astype(np.int64, copy=False)
        out_views.append(X[idx])
        out_labels.append(y[idx])
        out_index.append(idx)
    return out_views, out_labels, out_index


@declare_params({
    "X": ["array-like", "views"], "kind": [Options(CORRUPTION_KINDS)],
    "level": [Interval(numbers.Real, None, None)], "random_state": ["random_state"],
})
def corrupt(X: Any, kind: str, level: float, *, random_state: _RandomState = None) -> Any:
    """Damage data the way EMVC's robustness experiments do.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or a list of them (views with equal n)
        Data; never modified.
    kind : {"gaussian", "entries", "samples"}
        - ``"gaussian"``: add white Gaussian noise at signal-to-noise ratio ``level`` in dB:
          noise variance ``σ² = P / 10^(level/10)`` with ``P = mean(X²)`` over all n·d entries
          (MATLAB ``awgn(X, level, 'measured')``), so ``10 log10(mean(X²) / mean(noise²)) ≈ level``.
          Every entry gets noise: a sparse ``X`` gives a dense array.
        - ``"entries"``: replace ``round(level · n · d)`` entries, a uniform random set, by values
          drawn uniformly from ``[min X, max X]`` (for sparse ``X`` the range includes the implicit
          zeros). ``level`` in [0, 1].
        - ``"samples"``: replace ``round(level · n)`` whole rows, a uniform random set, by values
          drawn uniformly from ``[min X, max X]`` (sample-specific corruption / outliers).
          ``level`` in [0, 1]. With a list of views the SAME rows are corrupted in every view
          (EMVC: "replace their feature values in all views by random values"), each view with
          values from its own range.
    level : float
        SNR in dB (``"gaussian"``, any finite value) or fraction in [0, 1] (other kinds).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ndarray or CSR matrix (or a list of them, for a list input)
        A new array: float32 input stays float32, other input becomes float64; sparse input
        stays CSR except for ``"gaussian"``.

    Notes
    -----
    O(n d) time and memory for dense input; for sparse input ``"entries"`` costs
    O(nnz + level n d) and ``"samples"`` O(nnz + level n d).

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import simulate
    >>> simulate.corrupt(np.arange(12.0).reshape(6, 2), "gaussian", 20.0, random_state=0).shape
    (6, 2)
    """
    if kind not in CORRUPTION_KINDS:
        raise ValueError(f"kind must be one of {CORRUPTION_KINDS}, got {kind!r}")
    if kind == "gaussian":
        if isinstance(level, bool) or not isinstance(level, numbers.Real):
            raise TypeError(f"level must be a real number (SNR in dB), got {type(level).__name__}")
        level = check_scalar(level, "level")
    else:
        level = check_scalar(level, "level", low=0.0, high=1.0)
    is_list = isinstance(X, (list, tuple))
    views = check_views(X, "X", same_n=False) if is_list else [check_array(X, "X")]
    rng = check_random_state(random_state)
    if kind == "samples":
        n = views[0].shape[0]
        if any(V.shape[0] != n for V in views):
            raise ValueError("all views in X must have the same number of samples (rows)")
        rows = np.sort(rng.choice(n, size=round_half_up(level * n), replace=False)).astype(np.int64)
        out = [corrupt_samples(V, rows, rng) for V in views]
    elif kind == "gaussian":
        out = [add_gaussian_noise(V, level, rng) for V in views]
    else:
        out = [corrupt_entries(V, level, rng) for V in views]
    return out if is_list else out[0]


def __dir__():  # dir(module) lists the public names, not the imports
    return list(__all__)
