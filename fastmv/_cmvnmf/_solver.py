"""CMVNMF: constrained NMF clustering of unmapped views (docs/algorithms.md §4).

Each view ``a`` is factorised as ``X_aᵀ ≈ U_a V_aᵀ`` (``U_a ≥ 0``: ``d_a × c`` basis,
``V_a ≥ 0``: ``n_a × c`` cluster indicators); the views' rows need not correspond and are tied
only by must-link / cannot-link pairs between (or within) views. One sweep updates ``U_a`` then
``V_a`` for every view in turn (Gauss–Seidel) by multiplicative rules; intra-view blocks use
the symmetrised rule of docs/algorithms.md §4.4, so with ``rescale=False`` the objective is
non-increasing at every update. With pairs (and ``rescale=True``) the sweeps are
extrapolated, safeguarded so that no accepted sweep ends above the plain sweep
(:mod:`fastmv._cmvnmf._extrapolation`; docs/algorithms.md §4.5). :func:`cmvnmf` =
:func:`_prepare` (validated, normalised,
scaled data) + :func:`initial_factors` (the must-link or k-means starts) +
:class:`~fastmv._cmvnmf._problem.Problem` (one ``step()`` per sweep) driven
by :func:`fastmv._core._driver.iterate`, once per start.

Scale: when the views' largest entry is far from 1 (``normalize=None`` on data near the
floating-point limits), they are divided by one common power of two (exact) before solving,
and ``V`` and the objective are scaled back for the result (the fit is homogeneous of degree
2 in ``(X, V)``); the solve then neither overflows nor underflows, and a result that cannot be
represented in the data's units raises ``ValueError`` instead of returning inf or NaN.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import ClassVar, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._core._driver import (
    IterationInfo,
    callback_stops,
    caller_stacklevel,
    iterate,
    verbose_logging,
)
from .._core._preprocessing import normalize_rows
from .._core._result import Result
from .._core._threads import thread_limit
from .._core._validation import (
    Interval,
    Options,
    check_n_clusters,
    check_random_state,
    check_views,
    declare_params,
)
from ..exceptions import ConvergenceWarning, DegenerateSolutionWarning, InvalidParameterError
from ._extrapolation import Extrapolated
from ._neighbourhoods import conflicts
from ._pairs import Constraints, prepare_pairs
from ._peak import check_cmvnmf
from ._problem import Problem
from ._select import ViewChoice
from ._start import initial_factors
from ._tune import tune_beta
from ._views import max_abs, mostly_zero_as_csr, normalized_view, scaled_view, view_scheme

__all__ = ["cmvnmf", "CMVNMFResult"]

# with pairs, sweeps are extrapolated (fastmv._cmvnmf._extrapolation); the tests compare the
# plain sweeps with their NumPy reference by turning this off
_EXTRAPOLATE = True
# views whose largest entry lies in this range are solved as given: squares and products of
# such entries with factors of similar size stay far from float64's (and float32's) limits
_SAFE_RANGE = (2.0 ** -32, 2.0 ** 32)


@dataclasses.dataclass(frozen=True, repr=False)
class CMVNMFResult(Result):
    """Result of :func:`cmvnmf`.

    Attributes
    ----------
    labels : list of ndarray of int64
        ``labels[a][i]`` = cluster of row ``i`` of view ``a`` (argmax of ``V[a][i]``).
    objective : ndarray of float64, shape (n_iter,)
        Objective after every sweep (in the units of the input data).
    n_iter : int
        Number of sweeps run (of the start kept, see ``n_init``).
    converged : bool
        Whether the relative change of the objective fell to ``tol``.
    U : list of ndarray, shapes (d_a, c)
        Nonnegative bases (unit-norm columns when ``rescale=True``).
    V : list of ndarray, shapes (n_a, c)
        Nonnegative cluster indicators.
    initial_objective : float
        Objective at the initial factors of the start kept.
    normalize : list of str or None
        The normalisation applied to each view (``normalize="auto"`` resolved).
    start_kept : list of bool or None
        Without any pair (and with the k-means start): per view, whether the factors
        returned are a k-means start rather than NMF sweeps. Without pairs every view is
        judged on its own: of every start's k-means partition and sweeps' partition, the
        one with the highest mean cosine silhouette on the normalised view (a ``"minmax"``
        view: on its signed features' unit rows) is returned. ``None`` with pairs or another
        ``init``.
    view_start : list of int or None
        With ``start_kept``: per view, the start (``0 .. n_init - 1``) its factors come
        from; ``objective``, ``n_iter`` and ``converged`` are those of the start with the
        lowest objective, whatever the views chose.
    silhouette : list of ndarray or None
        With ``start_kept``: per view, an ``(n_init, 2)`` array of the mean cosine
        silhouettes of every start's k-means partition (column 0) and sweeps' partition
        (column 1); a ``"minmax"`` view is judged on its signed features' unit rows.
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.
    """

    U: list
    V: list
    initial_objective: float
    normalize: list = None
    start_kept: list = None
    view_start: list = None
    silhouette: list = None

    _shapes: ClassVar[dict] = {"labels": [("n_v",)], "U": [("d_v", "c")], "V": [("n_v", "c")]}


# --------------------------------------------------------------------------- validation
class _Data(NamedTuple):
    views: list          # normalised and divided by 2**log2_scale, C-contiguous or CSR
    n_clusters: int
    blocks: Constraints  # the pairs, as patterns built once for every start
    beta: float
    log2_scale: int      # the views were divided by 2**log2_scale
    schemes: list        # the normalisation applied to each view
    # the same values as ``views``, mostly-zero dense views as CSR: what the sweeps multiply
    # by (see mostly_zero_as_csr)
    sweep_views: list
    # without pairs, per view the rows whose cosine silhouette judges its partitions
    # (ViewChoice): ``views[a]``, but for a "minmax" view the signed features' unit rows,
    # since the shift's origin (every feature's minimum) is an artefact cosines would measure;
    # None with pairs (no choice is made)
    judge_views: list = None
    # what the k-means starts cluster: without pairs ``sweep_views`` (a Lloyd step on a
    # mostly-zero view costs nnz · c as CSR, n d c dense); with pairs ``views``, whose
    # partitions the solve's basins were measured from (docs/cmvnmf.md, "Speed")
    start_views: list = None


def _prepare(X_list, n_clusters, must_link, cannot_link, beta, normalize):
    raw = check_views(X_list, "X_list", same_n=False,
                      nonnegative=normalize not in ("auto", "minmax"))
    dtype = np.float32 if all(X.dtype == np.float32 for X in raw) else np.float64
    raw = [X.astype(dtype) if X.dtype != dtype else X for X in raw]
    n_list = [X.shape[0] for X in raw]
    n_clusters = check_n_clusters(n_clusters, min(n_list))
    check_cmvnmf(raw, n_clusters)
    pairs = prepare_pairs(must_link, cannot_link, n_list, dtype)
    schemes = [view_scheme(X, normalize) for X in raw]
    views = [normalized_view(X, sc) for X, sc in zip(raw, schemes)]
    # data far from 1 (possible with normalize=None) is divided by one power of two for all
    # views: exact, keeps the views' relative weights; ordinary data is left as it is
    top = max(max_abs(X) for X in views)
    log2_scale = 0 if top == 0 or _SAFE_RANGE[0] <= top <= _SAFE_RANGE[1] \
        else math.frexp(top)[1]
    views = [scaled_view(X, log2_scale) for X in views] if log2_scale else views
    judge = None
    sweep = mostly_zero_as_csr(views)
    start = views
    if not (pairs.must_global.shape[0] or pairs.cannot_global.shape[0]):
        judge = [normalize_rows(R, "l2") if sc == "minmax" else X
                 for X, R, sc in zip(views, raw, schemes)]
        start = sweep
    return _Data(views, n_clusters, pairs, float(beta), log2_scale, schemes, sweep, judge,
                 start)


# --------------------------------------------------------------------------- the starts
def _plan_starts(init, data, n_init):
    """The starts of the solve, in order: ``init`` with ``"auto"`` resolved.

    ``"auto"``: with consistent pairs (no cannot-link joins two rows that chains of
    must-links tie together) the must-link start alone; with inconsistent ones the must-link
    start from the split neighbourhoods and the ``n_init`` k-means starts, the lowest
    objective kept (docs/cmvnmf.md, "Starts"); without must-links the k-means starts.
    ``"must-link"`` without a must-link raises, and with inconsistent pairs warns."""
    if not isinstance(init, str):
        return [init]
    if init in ("k-means++", "random"):
        return [init] * n_init
    if not data.blocks.must_global.shape[0]:
        if init == "must-link":
            raise InvalidParameterError("init='must-link' starts from the must-link pairs, "
                                        "and must_link holds none; use init='auto' or "
                                        "'k-means++'")
        return ["k-means++"] * n_init
    contradicted = conflicts(data.blocks, sum(X.shape[0] for X in data.views))
    if not contradicted:
        return ["must-link"]
    if init == "must-link":
        warnings.warn(f"cmvnmf: {contradicted} cannot-link pair(s) join rows that chains of "
                      "must-links tie together, so some must-link is wrong; the must-link "
                      "start splits those neighbourhoods where the must-links are thinnest, "
                      "and init='auto' adds the k-means starts", UserWarning,
                      stacklevel=caller_stacklevel())
        return ["must-link"]
    return ["must-link"] + ["k-means++"] * n_init


def _solve(data, init, rescale, rng, n_jobs, extrapolation=None, **driver):
    """One start: initial factors, then the driver. Returns (problem, trace).

    ``extrapolation``: the :class:`Extrapolation` settings of the extrapolated sweeps (with
    pairs; default: the solve's)."""
    U0, V0 = initial_factors(data, init, rng, n_jobs)
    # with pairs the sweeps are extrapolated (docs/cmvnmf.md, "Speed"); without pairs the
    # views are plain NMF, judged view by view (ViewChoice), and keep the plain sweeps; so
    # does rescale=False, where nothing fixes the scale of the columns and the extrapolation
    # would follow its drift (U up, V down, the objective unchanged)
    pairs = data.blocks.must_global.shape[0] or data.blocks.cannot_global.shape[0]
    problem = Problem(data.sweep_views, data.blocks, U0, V0, beta=data.beta, rescale=rescale,
                      extrapolate=(_EXTRAPOLATE and rescale and bool(pairs) and data.beta != 0.0
                                   and Extrapolated(extrapolation)))
    problem.initial = problem.objective()
    problem.start = (U0, V0)  # the Problem holds copies: kept for ViewChoice
    return problem, iterate(problem, initial_objective=problem.initial, warn=False, **driver)


class _StartGuard:
    """The callback of one start: the caller's callback; ``stopped`` records that it asked
    the solve to stop (which ends every start)."""

    def __init__(self, callback):
        self.callback = callback
        self.stopped = False

    def __call__(self, info):
        if self.callback is not None and callback_stops(self.callback, info):
            self.stopped = True
            return True
        return False


def _final(problem, trace):
    return trace.objective[-1] if trace.n_iter else problem.objective()


def _result(problem, trace, data, max_iter, tol):
    """Factors and objective back in the units of the data (checked finite); warnings about
    the start kept (the driver's own warning would speak for every start)."""
    if trace.stop_reason == "max_iter" and max_iter > 0:
        warnings.warn(f"cmvnmf stopped at max_iter={max_iter} before reaching tol={tol:g} "
                      f"(last residual {trace.residual[-1]:.3g}); raise max_iter or tol for a "
                      "converged answer", ConvergenceWarning, stacklevel=caller_stacklevel())
    U_list, V_scaled = problem.factors()
    e = data.log2_scale
    with np.errstate(over="ignore", under="ignore"):
        V_list = [np.ldexp(V, e).astype(V.dtype) for V in V_scaled]
        objective = np.ldexp(trace.objective, 2 * e)
        initial = float(np.ldexp(problem.initial, 2 * e))
    if not (np.all(np.isfinite(objective)) and np.isfinite(initial)
            and all(np.all(np.isfinite(V)) for V in V_list)):
        raise ValueError(f"cmvnmf: the factors or the objective at this data scale (largest "
                         f"entry ~2**{e}) do not fit in floating point; rescale the views or "
                         "use normalize='l2'")
    labels = [np.argmax(V, axis=1).astype(np.int64) for V in V_scaled]
    # a factor 1e12 below the largest of any view has collapsed as surely as an all-zero one
    # (its argmax is rounding noise): an all-zero view's V decays towards 0 without reaching it
    top = max((float(np.max(V)) for V in V_scaled if V.size), default=0.0)
    for a, (V, lab) in enumerate(zip(V_scaled, labels)):
        if not np.any(V) or (V.size and float(np.max(V)) <= 1e-12 * top):
            warnings.warn(f"cmvnmf: the factor V of view {a} collapsed to zero (every sample "
                          "in cluster 0); lower beta or change init", DegenerateSolutionWarning,
                          stacklevel=caller_stacklevel())
        elif data.n_clusters > 1 and lab.size > 1 and np.all(lab == lab[0]):
            warnings.warn(f"cmvnmf: every sample of view {a} is in one cluster although "
                          f"n_clusters={data.n_clusters}; lower beta, raise n_init or change "
                          "init", DegenerateSolutionWarning, stacklevel=caller_stacklevel())
        elif lab.size >= data.n_clusters and np.unique(lab).size < data.n_clusters:
            warnings.warn(f"cmvnmf: only {np.unique(lab).size} of n_clusters="
                          f"{data.n_clusters} clusters of view {a} hold samples (a column of "
                          "V is zero or dominated, e.g. by all-zero rows); lower beta, raise "
                          "n_init or change init", DegenerateSolutionWarning,
                          stacklevel=caller_stacklevel())
    return CMVNMFResult(labels=labels, objective=objective, n_iter=trace.n_iter,
                        converged=trace.converged, U=U_list, V=V_list, initial_objective=initial)


# --------------------------------------------------------------------------- public
@declare_params({
    "X_list": ["views"], "n_clusters": [Interval(Integral, 1, None, closed="left")],
    "must_link": ["mapping", None], "cannot_link": ["mapping", None],
    "beta": [Interval(Real, 0, None, closed="left"), Options({"auto"})],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "normalize": [Options({"auto", "l2", "l1", "minmax"}), None],
    "init": [Options({"auto", "must-link", "k-means++", "random"}), tuple, list],
    "n_init": [Interval(Integral, 1, None, closed="left")], "rescale": ["boolean"],
    "random_state": ["random_state"], "verbose": ["verbose"], "callback": [callable, None],
    "progress": ["boolean"], "n_jobs": ["n_jobs"],
})
def cmvnmf(X_list: Sequence[ArrayLike | sp.spmatrix], n_clusters: int,
           must_link: dict[tuple[int, int], np.ndarray | Sequence[Sequence[int]]] | None,
           cannot_link: dict[tuple[int, int], np.ndarray | Sequence[Sequence[int]]] | None, *,
           beta: float | Literal["auto"] = "auto", max_iter: int = 300, tol: float = 1e-6,
           normalize: Literal["auto", "l2", "l1", "minmax"] | None = "auto",
           init: Literal["auto", "must-link", "k-means++", "random"]
           | Sequence[Sequence[ArrayLike]] = "auto",
           n_init: int = 5, rescale: bool = True,
           random_state: int | np.random.Generator | None = None, verbose: bool | int = False,
           callback: Callable[[IterationInfo], bool | None] | None = None, progress: bool = False,
           n_jobs: int | None = None) -> CMVNMFResult:
    """Constrained multi-view NMF clustering of unmapped views (CMVNMF).

    Each view is factorised as ``X_aᵀ ≈ U_a V_aᵀ`` with nonnegative factors; views whose rows
    do not correspond (different sample counts, unknown order) are tied by inter-view
    must-link / cannot-link pairs, which pull the indicator rows ``V_a[i]``, ``V_b[j]``
    together (must-link, squared distance) or apart (cannot-link, inner product).

    Parameters
    ----------
    X_list : list of array-like or scipy.sparse matrices, shapes (n_a, d_a)
        Views, samples in rows (nonnegative, or see ``normalize``); ``n_a`` may differ between
        views and rows need not correspond. Sparse views are used as CSR and never densified.
    n_clusters : int
        Number of clusters ``c`` (``1 <= c <= min_a n_a``).
    must_link : dict or None
        ``{(a, b): (p, 2) int array}``: row ``i`` of view ``a`` and row ``j`` of view ``b``
        must be in the same cluster. ``a == b`` gives intra-view pairs (no self-pairs);
        a key ``(b, a)`` is read with its columns swapped, and pairs of both orientations of
        one view pair are merged. A repeated pair counts repeatedly. ``None``: no pairs.
    cannot_link : dict or None
        Pairs that must not share a cluster, in the same layout. A pair given both as
        must-link and as cannot-link raises ``ValueError``.
    beta : float or "auto", default "auto"
        Weight of the constraint term (``β >= 0``; ``0`` gives independent NMF per view).
        ``"auto"`` with pairs: chosen from ``(1, 0.1, 10)`` by 3-fold validation over the
        pairs (fit on two thirds of the pairs, one start per fit: the must-link start of
        the fold's own pairs, or one k-means start shared by every fit; score: the share of
        held-out must-links kept together and of cannot-links kept apart, averaged over the
        two kinds; ties keep 1), then the solve runs on all pairs.
        Cost: ``3 candidates × 3 folds = 9`` single starts beside the solve's own; a fit's
        sweeps are extrapolated after 20
        plain ones, and it stops at the solve's own rule, once its held-out score has not
        changed over 20 sweeps, once (with inter-view pairs only) it has stayed within
        0.005 of 1/2, the score of views that agree by chance, over the 20 sweeps after
        the plain ones, or after 100 sweeps. A weight that can no longer
        be chosen is not fitted (its scores are NaN): all after 1 when 1 honours every
        held-out pair on all folds but one, and 10 when 0.1 passed the rule with every pair
        honoured on every fold. The choice and the scores are in ``result.tuning``
        (docs/defaults.md, "Self-tuning"). Without pairs: 1. A number skips the tuning.
    max_iter : int, default 300
        Maximum number of sweeps (one ``U`` and one ``V`` update per view) per start. ``0``
        returns the initialisation.
    tol : float, default 1e-6
        Stop when the objective's relative change over a sweep is ``<= tol``.
    normalize : {"auto", "l2", "l1", "minmax"} or None, default "auto"
        Scale every sample (row) of every view to unit norm first (all-zero rows stay zero);
        the constraint terms need the views' ``V`` comparable. ``"minmax"``: each feature
        shifted and scaled to ``[0, 1]``, then every row to unit ℓ2 norm; the way forward
        for views with negative values (features such as z-scored descriptors or signed
        image statistics), which NMF cannot factorise as given. ``"auto"``: ``"minmax"``
        for a view with a negative entry, ``"l2"`` for every other view. ``None`` uses the
        data as is. With ``"l2"``, ``"l1"`` or ``None`` a negative entry raises
        ``ValueError``.
    init : {"auto", "must-link", "k-means++", "random"} or (U_list, V_list), default "auto"
        ``"must-link"``: one start from the must-link pairs (deterministic): the connected
        components of the must-link graph over all views' rows with at least two rows are
        neighbourhoods, the ``c`` largest take one column each in every view, and each view's
        other rows are clustered around them by k-means that keeps the neighbourhoods' rows
        in place (docs/algorithms.md §4.3); ``V`` = one-hot labels + 0.2, ``U`` = the centers
        (clipped at 0). A neighbourhood that a cannot-link contradicts (some must-link is
        wrong) is bisected where its must-links are thinnest until none is (a warning says
        so). ``"k-means++"``: per view, :func:`fastmv.kmeans` on the normalised data, the
        clusters renumbered to agree with the pairs, same ``V`` and ``U``. ``"random"``:
        scaled absolute Gaussians. ``"auto"``: with must-links that no cannot-link
        contradicts, the must-link start alone (on the twelve shared datasets it ends at a
        lower objective than the best of five k-means starts); with contradicted ones, the
        must-link start and ``n_init`` k-means starts, the lowest objective kept; without
        must-links, ``"k-means++"`` (docs/cmvnmf.md, "Starts"). A pair of lists gives
        the initial ``U_a`` (``d_a × c``) and ``V_a`` (``n_a × c``) directly (nonnegative;
        copied; one start).
    n_init : int, default 5
        Number of starts with ``init="k-means++"`` or ``"random"`` (each from its own
        initialisation); the start with the lowest final objective is returned. More starts
        make the answer depend less on the seed. Every start runs to its own stopping rule.
        The must-link start and a given start are one start each; with ``init="auto"`` and
        must-links that cannot-links contradict, the must-link start runs beside the
        ``n_init`` k-means starts.
    rescale : bool, default True
        After each ``U_a`` update, scale every column of ``U_a`` to unit ℓ2 norm and multiply
        the matching column of ``V_a`` by the old norm (``U_a V_aᵀ`` unchanged), so that the
        views' ``V`` are comparable for the constraint terms and the argmax; the monotonicity
        theorem covers ``rescale=False`` only.
    random_state : None, int or numpy Generator
        Seeds the initialisations.
    verbose : bool or int, default False
        Log one line per start (sweeps, final objective, why it stopped) to the logger
        ``"fastmv"``; ``2`` also logs the objective after every sweep.
    callback : callable, optional
        ``callback(info)`` after every sweep with a :class:`fastmv._core._driver.IterationInfo`
        whose ``state`` holds read-only ``"U"`` and ``"V"`` lists (in the internal scale of
        the data); returning ``True`` or raising ``StopIteration`` stops the solve
        (``converged=False``, no further starts).
    progress : bool, default False
        Show a progress bar over the sweeps (needs tqdm): one bar per start, labelled
        with the start ("cmvnmf start 2/5") when there are several.
    n_jobs : int or None
        Threads for the Numba kernels (``None``: ``NUMBA_NUM_THREADS``).

    Returns
    -------
    CMVNMFResult
        Per-view ``labels`` (argmax of the rows of ``V_a``), ``objective`` per sweep,
        ``n_iter``, ``converged``, ``U``, ``V``, ``initial_objective``, ``normalize`` (the
        scheme of every view), ``start_kept``, ``view_start`` and ``silhouette`` (without
        pairs: the choice made for every view) and ``tuning`` (``beta="auto"`` with pairs:
        the record of the choice; else ``None``).

    Warns
    -----
    fastmv.exceptions.ConvergenceWarning
        The start kept stopped at ``max_iter``.
    fastmv.exceptions.DegenerateSolutionWarning
        A view's ``V`` collapsed to zero, or all its samples fell in one cluster.

    Notes
    -----
    Objective and updates: docs/algorithms.md §4 (Lee–Seung-type multiplicative updates
    guarded by ``ε = 1e-10``; with ``rescale=False`` the objective is non-increasing at every
    update). With pairs and ``rescale=True``, once the labels have settled (unchanged over 10
    sweeps, or at most 1 % of them changed over 10 sweeps while the objective fell by at
    least 5e-4 of itself per sweep; and not before the 51st), every sweep starts from a
    point extrapolated along the last accepted move, and is run again from the accepted
    point when it ends higher (docs/algorithms.md §4.5, item 7): the same fixed points in
    fewer sweeps; ``objective``, ``n_iter`` and the factors are those of the accepted
    sweeps. Factor entries below the smallest normal number are set to zero (they would
    otherwise slow every sweep several times over; docs/algorithms.md §4.5, item 8).
    Cost per sweep: O(Σ_a (n_a d_a or nnz(X_a)) · c) for the products with ``X_a``
    plus O(Σ_a (n_a + d_a) c² + |Ω| c) in the fused kernels, ``|Ω|`` the number of pairs;
    memory O(Σ_a (n_a + d_a) c + |Ω|) beyond the normalised views (plus a CSR copy of
    ``X_aᵀ`` per sparse view). The ``n_a × n_b`` constraint matrices are never formed.

    Without any pair the model is NMF per view: the views do not interact, and the fit
    judges no partition (the sweeps can move away from a better k-means partition, and the
    worse of two partitions can have the lower fit). So with ``init="k-means++"`` every view
    is judged on its own over all ``n_init`` starts: of each start's k-means partition and
    its sweeps' partition, the one with the highest mean cosine silhouette on the
    normalised view is returned (``result.start_kept``, ``result.view_start``,
    ``result.silhouette``). A ``"minmax"`` view, whose origin is an artefact of the shift,
    is judged on its signed features' unit rows instead. Cost: two silhouettes per view
    and start, O(nnz(X_a) c) each (exact, from the clusters' row sums).

    References
    ----------
    Zhang, X., Zong, L., Liu, X., Yu, H. "Constrained NMF-Based Multi-View Clustering on
    Unmapped Data". AAAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from fastmv import cmvnmf
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> res = cmvnmf([X, X[::-1]], 2, {(0, 1): [[0, 3], [2, 1]]}, {(0, 1): [[0, 0]]},
    ...              tol=1e-4, random_state=0)
    >>> [bool(lab[0] == lab[1] != lab[2] == lab[3]) for lab in res.labels]
    [True, True]
    """
    rng = check_random_state(random_state)
    tuning = None
    data = _prepare(X_list, n_clusters, must_link, cannot_link,
                    1.0 if isinstance(beta, str) else beta, normalize)
    starts = _plan_starts(init, data, n_init)
    if isinstance(beta, str) and (data.blocks.must_global.shape[0]
                                  or data.blocks.cannot_global.shape[0]):
        # the fits start as the solve's last start does (the k-means start beside an
        # inconsistent must-link one; "auto" for given factors)
        fit_init = starts[-1] if isinstance(init, str) else _plan_starts("auto", data, 1)[-1]
        with thread_limit(n_jobs), verbose_logging(verbose) as log:
            beta, record = tune_beta(data, must_link, cannot_link, fit_init, rescale, rng,
                                      n_jobs, max_iter, tol, log, _solve)
        tuning = {"beta": record}
        data = data._replace(beta=float(beta))
    # verbose=True: one line per start; 2 or more: every sweep as well
    every_sweep = not isinstance(verbose, bool) and verbose >= 2
    driver = dict(solver="cmvnmf", max_iter=max_iter, tol=tol, callback=callback,
                  verbose=verbose if every_sweep else False, progress=progress)
    best = None
    n_starts = len(starts)
    # without pairs the views do not interact: each is judged on its own (ViewChoice)
    choice = (ViewChoice(data) if starts[0] == "k-means++" and max_iter > 0
              and not (data.blocks.must_global.shape[0] or data.blocks.cannot_global.shape[0])
              else None)
    kept = None
    with thread_limit(n_jobs), verbose_logging(verbose) as log:
        log("cmvnmf: %d start%s (%s)", n_starts, "s" if n_starts > 1 else "",
            ", ".join(f"{k} × {starts.count(k)}" for k in dict.fromkeys(starts))
            if isinstance(init, str) else "the factors given")
        for start, kind in enumerate(starts):
            # every start runs to its own stop: starts 6-10 % above the kept one after 50
            # sweeps still ended lowest on ProteinFold (docs/records/cmvnmf.md, "Fourth round")
            guard = _StartGuard(callback)
            run = _solve(data, kind, rescale, rng, n_jobs, **dict(
                driver, callback=guard,
                progress_desc=f"cmvnmf start {start + 1}/{n_starts}" if n_starts > 1 else None))
            log("cmvnmf: start %d/%d  sweeps %4d  objective %.8e  %s  %.2fs", start + 1,
                n_starts, run[1].n_iter, _final(*run), run[1].stop_reason, run[1].seconds)
            if best is None or guard.stopped or _final(*run) < _final(*best):
                best, kept = run, start
            if guard.stopped:   # the caller's stop ends every start
                break
            if choice is not None:
                choice.add(run[0])
    picked = (None, None, None) if choice is None or guard.stopped \
        else choice.apply(best[0], kept)
    return dataclasses.replace(_result(*best, data, max_iter, tol), tuning=tuning,
                               normalize=data.schemes, start_kept=picked[0],
                               view_start=picked[1], silhouette=picked[2])
