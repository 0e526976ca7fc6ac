"""EMVC: error-robust multi-view clustering of transition matrices (``docs/algorithms.md §3``).

Najafi, He & Yu, "Error-Robust Multi-View Clustering" (IEEE BigData 2017). Each view's
row-stochastic transition matrix is split as ``P_v = P̂ + E_v`` with a shared ``P̂`` (rows on
the probability simplex) and errors penalised by a group-ℓ1 norm over columns and an
ℓ2,1 norm over rows; ``P̂`` is kept low rank by the nuclear norm. Solved by an augmented
Lagrangian with the authors' updates (taken from their code) and two fixes: the ``E`` step
is elementwise (the authors solve an ``(mn) × (mn)`` diagonal system per column) and the
stopping rule is on primal residuals (theirs fires when the objective rises).

The solver is :func:`_prepare` (validated data), :class:`Problem` (one augmented-
Lagrangian iteration per ``step()``) and the shared driver :func:`fastmv._core._driver.iterate`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import ClassVar, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from fastmv.kernels.emvc import (
    ErrorWeights,
    consensus_error_update,
    consensus_error_update_serial,
)

from .._blocks._spectral import markov_spectral_clustering
from .._core._driver import IterationInfo, Step, iterate, state_view
from .._core._result import Result
from .._core._threads import serial_when_small, thread_limit, use_serial_kernel
from .._core._validation import (
    Interval,
    Options,
    check_dtype,
    check_n_clusters,
    check_random_state,
    check_transition_matrices,
    declare_params,
)
from ..exceptions import InvalidParameterError
from ._peak import check_emvc
from ._stop import LabelWatch
from ._svt import capped_applies, svt
from ._weights import check_view_weights, error_weights

__all__ = ["emvc", "EMVCResult"]

# Guard of the reweighting norms ``1 / (2 max(‖e‖, ε))``.
_EPS = 1e-10

# Entries per block of the two NumPy passes below (2 MiB of float64: a block and its
# temporaries stay in cache while they are reduced).
_BLOCK_ENTRIES = 2 ** 18


def _row_blocks(n, d):
    """Consecutive row ranges of about ``_BLOCK_ENTRIES`` entries of an ``n × d`` array."""
    step = max(1, _BLOCK_ENTRIES // max(d, 1))
    return ((lo, min(lo + step, n)) for lo in range(0, n, step))


def error_norms(E):
    """Row and column Euclidean norms of one error matrix, in float64.

    Needed once per solve (each step's :func:`~fastmv.kernels.emvc.consensus_error_update`
    returns the next norms), so NumPy over row blocks rather than a kernel that a solver's
    first call would compile. Temporary memory: one float64 block of ``_BLOCK_ENTRIES``.
    """
    n, d = E.shape
    row, col = np.empty(n), np.zeros(d)
    for lo, hi in _row_blocks(n, d):
        sq = np.square(E[lo:hi], dtype=np.float64)
        np.sqrt(sq.sum(axis=1), out=row[lo:hi])
        col += sq.sum(axis=0)
    return row, np.sqrt(col)


def max_abs_diff(A, B):
    """``max |A − B|`` in float64 (the consensus residual ``‖P̂ − Q‖_∞``; 0.0 when empty).

    Once per iteration, beside a singular value thresholding of the same matrix that costs
    far more, so NumPy over row blocks (exact: a maximum of float64 differences) rather
    than a kernel that a solver's first call would compile.
    """
    n, d = A.shape
    out = 0.0
    for lo, hi in _row_blocks(n, d):
        diff = np.subtract(A[lo:hi], B[lo:hi], dtype=np.float64)
        if diff.size:
            out = max(out, float(np.abs(diff, out=diff).max()))
    return out


# Settling test: the last two ratios of successive ``‖ΔP̂‖_∞`` must be below this, and the
# SVT must have been active (rank > 0) for this many iterations.
_SETTLE_MAX_RATIO = 0.9
_SETTLE_ACTIVE = 3
# ``tol_settle="auto"``: this many times ``tol`` (docs/records/emvc.md "Stopping rule"; 10
# before the capped SVT's warm steps, 100 since: the same labels on the shared datasets).
_SETTLE_AUTO_FACTOR = 100.0
# ``stop="labels"``: the labels of P̂ unchanged over this many consecutive checks, each at an
# iteration whose objective moved by at most this relative change (docs/records/emvc.md "Stopping
# when the labels have settled").
_LABEL_CHECKS = 3
_LABEL_OBJECTIVE_RTOL = 1e-2
# A check clusters P̂ as the result does: its k-means (10 restarts, ~20 Lloyd steps of
# 3 n c² flops each) costs about 600 n c² flops against the (4/3) n³ of the tridiagonal
# reduction in every late iteration, so below n = 20 c a check costs more than the
# iteration it may save and the label stop is not used (docs/records/emvc.md). Nor is it
# where the late SVTs are capped: a capped iteration costs less than one check.
_LABEL_MIN_SAMPLES_PER_CLUSTER = 20
# ``max_rank="auto"``: the SVT's rank cap, at least this, and this many per cluster
# (docs/records/emvc.md "Capped SVT").
_AUTO_RANK = 64
_AUTO_RANK_PER_CLUSTER = 4
# ... and at most this fraction of n (many classes: 100 of 1600 samples); a cap that would be
# below _AUTO_RANK there means an n too small for the capped tier to pay: the exact SVT
_AUTO_RANK_MAX_FRACTION = 8


def settled_tail(changes, ranks):
    """Estimated remaining movement of ``P̂``: ``Δ_k q/(1 − q)`` with ``Δ_k = ‖P̂_k −
    P̂_{k−1}‖_∞`` and ``q`` the larger of the last two ratios ``Δ_k/Δ_{k−1}``, the sum of
    the geometric tail the penalty's growth gives the late iterations (``q ≈ 1/ρ``;
    docs/records/emvc.md "Stopping rule"). ``inf`` while the tail is not geometric yet: fewer than
    three changes, a ratio ``≥ 0.9``, or the SVT still zero in one of the last three
    iterations (there ``P̂`` hardly moves although it is far from its limit)."""
    if len(changes) < 3 or len(ranks) < _SETTLE_ACTIVE or min(ranks[-_SETTLE_ACTIVE:]) == 0:
        return np.inf
    d0, d1, d2 = changes[-3], changes[-2], changes[-1]
    if not (d0 > 0.0 and d1 > 0.0):
        return np.inf if d2 > 0.0 or not np.isfinite(d2) else 0.0
    q = max(d1 / d0, d2 / d1)
    if not q < _SETTLE_MAX_RATIO:
        return np.inf
    return d2 * q / (1.0 - q)


@dataclasses.dataclass(frozen=True, repr=False)
class EMVCResult(Result):
    """Result of :func:`emvc`.

    Attributes
    ----------
    labels : ndarray of int64, shape (n,), or None
        Markov-chain spectral clustering of ``P_hat`` (when ``n_clusters`` was given).
    objective : ndarray, shape (n_iter,)
        ``‖Q‖_* + (lam1/2) ‖E‖_G1 + (lam2/2) ‖E‖_2,1`` after each iteration (halved weights:
        the function the authors' updates minimise; see :func:`emvc`).
    n_iter : int
        Iterations run.
    converged : bool
        ``residual[-1] <= tol``, or ``P̂`` or its labels settled (``tol_settle``, ``stop`` of
        :func:`emvc`).
    P_hat : ndarray, shape (n, n)
        Shared transition matrix; every row on the probability simplex.
    E : list of ndarray, shape (n, n)
        Error matrix of each view (``P_v ≈ P_hat + E[v]``).
    residual : ndarray, shape (n_iter,)
        Primal residual ``max(‖P̂ − Q‖_∞, max_v ‖P_v − P̂ − E_v‖_∞)`` after each iteration
        (compared with ``tol``; the settling test is the other stop).
    residual_consensus, residual_views : ndarray, shape (n_iter,)
        The two parts of ``residual``.
    p_hat_change : ndarray, shape (n_iter,), or None
        ``‖P̂_k − P̂_{k−1}‖_∞`` per iteration (the settling test): ``nan`` at the first, which
        has no previous ``P̂`` (``None`` in ``to_dict(jsonable=True)``); ``None`` when
        ``tol_settle=None`` (not tracked).
    rank : ndarray of int64, shape (n_iter,)
        Rank of ``Q`` (singular values of ``P̂ + Z/μ`` above ``1/μ``) per iteration.
    svt_method : tuple of str
        How each iteration's SVT was computed: ``"skip-bound"``, ``"skip-power"`` (no SVD),
        ``"partial"``, ``"gram"`` (Gram eigendecomposition), ``"full"`` (``gesdd``) or
        ``"capped"`` (rank-capped, within ``2/μ`` of the exact SVT; ``max_rank``).
    view_weights : ndarray, shape (m,)
        Weights ``α_v`` of the views' error penalties in the last iteration, mean 1 (all 1
        with ``view_weights="equal"``; see :func:`emvc`).
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.
    """

    P_hat: np.ndarray
    E: list
    residual: np.ndarray
    residual_consensus: np.ndarray
    residual_views: np.ndarray
    rank: np.ndarray
    svt_method: tuple
    p_hat_change: np.ndarray
    view_weights: np.ndarray

    _shapes: ClassVar[dict] = {
        "P_hat": ("n", "n"), "E": [("n", "n")], "residual": ("n_iter",),
        "residual_consensus": ("n_iter",), "residual_views": ("n_iter",), "rank": ("n_iter",),
        "p_hat_change": ("n_iter",), "view_weights": ("m",)}


class _Data(NamedTuple):
    """Validated input of one solve."""

    P: np.ndarray  # (m, n, n) stack of the views, in the working precision
    lam1: float
    lam2: float
    mu: float
    rho: float
    mu_max: float
    init: str
    full_svd: str
    n_clusters: int | None
    rng: np.random.Generator
    tol: float
    tol_settle: float | None
    stop: str = "residual"
    max_rank: int | None = None
    view_weights: object = "equal"  # "equal", "error" or a float64 array (m,), mean 1


def _check_P_list(P_list, dt, name="P_list", atol=1e-6):
    """Validate row-stochastic views and copy them into one ``(m, n, n)`` stack.

    :func:`fastmv._core._validation.check_transition_matrices` without its copy: each view is
    converted (if at all) and copied straight into the stack, so the peak is the stack plus
    one view rather than two copies of every view.
    """
    views = check_transition_matrices(P_list, name, atol=atol, copy=False)
    n = views[0].shape[0]
    stack = np.empty((len(views), n, n), dtype=dt)
    for v, P in enumerate(views):
        stack[v] = P
    return stack


def _settle_tolerance(tol_settle, tol):
    if tol_settle is None:
        return None
    return _SETTLE_AUTO_FACTOR * float(tol) if tol_settle == "auto" else float(tol_settle)


def _max_rank(max_rank, n_clusters, n):
    """The SVT's rank cap: ``"auto"`` is ``min(max(64, 4 n_clusters), n // 8)``, None (the
    exact SVT) where that is below 64 (docs/records/emvc.md "Capped SVT")."""
    if max_rank != "auto":
        return None if max_rank is None else int(max_rank)
    r = min(max(_AUTO_RANK, _AUTO_RANK_PER_CLUSTER * (n_clusters or 0)),
            n // _AUTO_RANK_MAX_FRACTION)
    return r if r >= _AUTO_RANK else None


def _prepare(P_list, lam1, lam2, *, n_clusters, mu, rho, mu_max, init, dtype, full_svd,
             random_state, tol=1e-6, tol_settle=None, stop="residual", max_rank=None,
             view_weights="equal"):
    """Checks that the declarations cannot state, and the views as one stack."""
    if mu_max < mu:
        raise InvalidParameterError(f"mu_max must be >= mu ({mu:g}), got {mu_max!r}")
    dt = check_dtype(dtype)
    check_emvc(P_list, dt, tol_settle is not None)
    P = _check_P_list(P_list, dt)
    if n_clusters is not None:
        n_clusters = check_n_clusters(n_clusters, P.shape[1])
    cap = _max_rank(max_rank, n_clusters, P.shape[1])
    return _Data(P, float(lam1), float(lam2), float(mu), float(rho), float(mu_max), init,
                 full_svd, n_clusters, check_random_state(random_state), float(tol),
                 _settle_tolerance(tol_settle, tol), stop, cap,
                 check_view_weights(view_weights, P.shape[0]))


def _watch_labels(data):
    """Whether the label stop applies: labels to watch, a tolerance (``tol=0`` runs
    ``max_iter``) and checks cheaper than the iterations they may save."""
    n = data.P.shape[1]
    return (data.stop == "labels" and data.n_clusters is not None and data.tol > 0
            and n >= _LABEL_MIN_SAMPLES_PER_CLUSTER * data.n_clusters
            and not capped_applies(n, n, data.max_rank))


class Problem:
    """The augmented-Lagrangian state; ``step()`` runs one iteration (``docs/algorithms.md
    §3.3``) and returns the objective and the primal residual."""

    def __init__(self, data: _Data, n_jobs=None):
        self.data = data
        P = data.P
        m, n, _ = P.shape
        dt = P.dtype
        self.mu = data.mu
        self.zc = 0.0  # μ_prev / μ (Z = 0 at the start)
        # P̂ starts as the mean view (it is overwritten by the first step)
        self.P_hat = np.empty((n, n), dtype=dt)
        np.sum(P, axis=0, out=self.P_hat)
        self.P_hat *= dt.type(1.0 / m)
        self.E = np.empty((m, n, n), dtype=dt)
        for v in range(m):
            if data.init == "mean":
                np.subtract(P[v], self.P_hat, out=self.E[v])
            else:
                data.rng.standard_normal(out=self.E[v], dtype=dt)
        self.Y = np.zeros((m, n, n), dtype=dt)
        self.Q = np.zeros((n, n), dtype=dt)
        self.Zb = np.zeros((n, n), dtype=dt)  # P̂ + Z/μ, the SVT input (with Q it encodes Z)
        self.has_q = False
        self.row_norms = np.empty((m, n))
        self.col_norms = np.empty((m, n))
        for v in range(m):
            self.row_norms[v], self.col_norms[v] = error_norms(self.E[v])
        self.rank_prev = self.V_prev = self.sigma_prev = None
        self.res_c, self.res_v, self.ranks, self.methods = [], [], [], []
        self.P_prev = self.P_hat.copy() if data.tol_settle is not None else None
        self.dp = []
        self.watch = (LabelWatch(data.n_clusters, _LABEL_CHECKS, _LABEL_OBJECTIVE_RTOL, n_jobs)
                      if _watch_labels(data) else None)
        self.labels_settled = False
        # the views' weights alpha_v of the error penalty (None: all 1, the published model)
        if isinstance(data.view_weights, str):
            self.alpha = (None if data.view_weights == "equal"
                          else error_weights(self.error_costs()))
        else:
            self.alpha = data.view_weights
        self.alpha_used = None

    def step(self) -> Step:
        d = self.data
        P, E, Y = d.P, self.E, self.Y
        mu = self.mu
        rn, cn = self.row_norms, self.col_norms
        if self.alpha is not None:
            # (alpha lam) / (2 ||e||) = lam / (2 ||e|| / alpha): the weighted step, same kernel
            rn, cn = rn / self.alpha[:, None], cn / self.alpha[:, None]
        weights = ErrorWeights(rn, cn, float(d.lam1), float(d.lam2), _EPS)
        work = P.size + self.Zb.size
        # the serial copy gives the same result; a small problem never compiles the parallel one
        update = (consensus_error_update_serial if use_serial_kernel(work)
                  else consensus_error_update)
        with serial_when_small(work):
            (self.row_norms, self.col_norms, res_v, fro2, norminf, norm1,
             min_b) = update(P, E, Y, self.Q, self.Zb, self.P_hat, mu, self.zc, self.has_q,
                             weights)
        bounds = dict(fro=float(np.sqrt(fro2)), norm1=float(norm1), norminf=float(norminf),
                      nonneg=bool(min_b >= 0.0))
        _, info = svt(self.Zb, 1.0 / mu, out=self.Q, bounds=bounds, rank_hint=self.rank_prev,
                      V0=self.V_prev, full_svd=d.full_svd, sigma_hint=self.sigma_prev,
                      max_rank=d.max_rank, random_state=d.rng)
        self._remember_svt(info)
        res_c = max_abs_diff(self.P_hat, self.Q) if self.has_q else float(self.P_hat.max())
        if self.P_prev is not None:
            self.dp.append(max_abs_diff(self.P_hat, self.P_prev) if self.dp else np.nan)
            np.copyto(self.P_prev, self.P_hat)
        if self.alpha is None:
            objective = (info.nuclear_norm
                         + 0.5 * d.lam1 * float(sum(c.sum() for c in self.col_norms))
                         + 0.5 * d.lam2 * float(sum(r.sum() for r in self.row_norms)))
        else:
            objective = info.nuclear_norm + float(self.alpha @ self.error_costs())
            self.alpha_used = self.alpha
            if isinstance(d.view_weights, str):  # "error": reweighted every step
                self.alpha = error_weights(self.error_costs())
        if self.watch is not None:
            self.labels_settled = self.watch.update(self.P_hat, objective, info.rank, d.rng)
        self.res_c.append(res_c)
        self.res_v.append(res_v)
        self.ranks.append(info.rank)
        self.methods.append(info.method)
        state = state_view(P_hat=self.P_hat, residual_consensus=res_c, residual_views=res_v,
                           mu=mu, rank=info.rank, svt_method=info.method)
        # the penalty of the next step (unused when the driver stops here)
        mu_new = min(d.rho * mu, d.mu_max)
        self.zc, self.mu = mu / mu_new, mu_new
        return Step(objective=objective, residual=self._stop_quantity(max(res_c, res_v)),
                    state=state)

    def weights_used(self):
        """The weights of the last step (ones for ``"equal"``), float64 ``(m,)``."""
        if self.alpha is None:
            return np.ones(self.row_norms.shape[0])
        return np.array(self.alpha if self.alpha_used is None else self.alpha_used)

    def error_costs(self):
        """Each view's share ``h_v = (lam1/2) Σ_i ‖E_v[:, i]‖ + (lam2/2) Σ_r ‖E_v[r, :]‖`` of
        the error penalty (from the norms of the last step)."""
        d = self.data
        return 0.5 * (d.lam1 * self.col_norms.sum(axis=1) + d.lam2 * self.row_norms.sum(axis=1))

    def _stop_quantity(self, residual):
        """What the driver compares with ``tol``: the primal residual, or a value ``<= tol``
        once ``P̂`` has settled (:func:`settled_tail`; docs/records/emvc.md "Stopping rule")."""
        d = self.data
        if self.labels_settled and d.tol > 0.0:
            return min(residual, d.tol)
        if d.tol_settle is None or not d.tol > 0.0 or residual > d.tol_settle:
            return residual
        tail = settled_tail(self.dp, self.ranks)
        if tail <= d.tol_settle:
            return min(residual, d.tol)
        return residual

    def _remember_svt(self, info):
        """Warm starts of the next SVT: rank, right vectors, σ₁ estimate."""
        self.has_q = info.rank > 0
        if info.rank:
            self.rank_prev, self.V_prev = info.rank, info.V
        elif info.method in ("partial", "gram", "full", "capped"):
            self.rank_prev, self.V_prev = 0, None
        if np.isfinite(info.sigma_bounds[0]):
            self.sigma_prev = info.sigma_bounds[0]

    def labels(self, n_jobs):
        """Free the iteration's arrays, then cluster ``P̂`` (None without ``n_clusters``)."""
        self.Y = self.Q = self.Zb = self.P_prev = None
        self.data = self.data._replace(P=None)
        if self.data.n_clusters is None:
            return None
        if self.watch is not None and self.watch.current:
            # the last iteration's check: the same call on the same P̂ and generator state
            return self.watch.labels
        return markov_spectral_clustering(np.asarray(self.P_hat, dtype=np.float64),
                                          self.data.n_clusters, random_state=self.data.rng,
                                          n_jobs=n_jobs)

    def result(self, trace, labels) -> EMVCResult:
        res_c = np.asarray(self.res_c, dtype=np.float64)
        res_v = np.asarray(self.res_v, dtype=np.float64)
        # not tracked without the settling test: None, the one "not computed" of a field
        dp = (np.asarray(self.dp, dtype=np.float64) if self.data.tol_settle is not None
              else None)
        return EMVCResult(labels=labels, objective=trace.objective, n_iter=trace.n_iter,
                          converged=trace.converged, P_hat=self.P_hat, E=list(self.E),
                          residual=np.maximum(res_c, res_v), residual_consensus=res_c,
                          residual_views=res_v, rank=np.asarray(self.ranks, dtype=np.int64),
                          svt_method=tuple(self.methods), p_hat_change=dp,
                          view_weights=self.weights_used())


_POSITIVE = Interval(Real, 0, None, closed="neither")
_NONNEGATIVE = Interval(Real, 0, None, closed="left")


@declare_params({
    "P_list": ["views"],
    "lam1": [_NONNEGATIVE],
    "lam2": [_NONNEGATIVE],
    "n_clusters": [Interval(Integral, 1, None, closed="left"), None],
    "max_iter": [Interval(Integral, 0, None, closed="left")],
    "tol": [_NONNEGATIVE],
    "tol_settle": [Options({"auto"}), _NONNEGATIVE, None],
    "stop": [Options({"labels", "residual"})],
    "mu": [_POSITIVE],
    "rho": [Interval(Real, 1, None, closed="left")],
    "mu_max": [_POSITIVE],
    "init": [Options({"mean", "random"})],
    "dtype": [None, type, np.dtype, str],
    "full_svd": [Options({"auto", "gesdd"})],
    "max_rank": [Options({"auto"}), Interval(Integral, 1, None, closed="left"), None],
    "view_weights": [Options({"equal", "error"}), "array-like"],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "progress": ["boolean"],
    "callback": [callable, None],
    "n_jobs": ["n_jobs"],
})
def emvc(P_list: Sequence[ArrayLike], lam1: float, lam2: float, *, n_clusters: int | None = None,
         max_iter: int = 100, tol: float = 1e-6,
         tol_settle: float | Literal["auto"] | None = "auto",
         stop: Literal["labels", "residual"] = "labels",
         mu: float = 1e-6, rho: float = 1.9, mu_max: float = 1e10,
         init: Literal["mean", "random"] = "mean",
         dtype: DTypeLike | None = None, full_svd: Literal["auto", "gesdd"] = "auto",
         max_rank: int | Literal["auto"] | None = "auto",
         view_weights: Literal["equal", "error"] | ArrayLike = "equal",
         random_state: int | np.random.Generator | None = None, verbose: bool | int = False,
         progress: bool = False, callback: Callable[[IterationInfo], bool | None] | None = None,
         n_jobs: int | None = None) -> EMVCResult:
    """Error-robust multi-view clustering (EMVC) of row-stochastic transition matrices.

    Solves ``min ‖P̂‖_* + lam1 ‖E‖_G1 + lam2 ‖E‖_2,1`` s.t. ``P_v = P̂ + E_v`` for every view
    and every row of ``P̂`` on the probability simplex, where ``E = [E_1; …; E_m]`` (stacked
    vertically), ``‖E‖_G1 = Σ_i Σ_v ‖E_v[:, i]‖₂`` and ``‖E‖_2,1 = Σ_v Σ_r ‖E_v[r, :]‖₂``,
    by the authors' augmented Lagrangian (auxiliary ``Q = P̂``, multipliers ``Y_v``, ``Z``,
    penalty ``μ ← min(ρ μ, μ_max)``; ``docs/algorithms.md §3``)::

        P̂   = rowwise_simplex_projection((Σ_v (P_v − E_v − Y_v/μ) + Q − Z/μ) / (m + 1))
        E_v = (P_v − P̂ − Y_v/μ) / (1 + (lam2/μ) d_r + (lam1/μ) g_i)   (elementwise)
        Q   = SVT(P̂ + Z/μ, 1/μ);  Z += μ (P̂ − Q);  Y_v += μ (P̂ + E_v − P_v)

    with ``d_r = 1/(2‖E_v[r, :]‖)``, ``g_i = 1/(2‖E_v[:, i]‖)`` from the previous ``E_v``
    (guarded at 1e-10), until the primal residual
    ``max(‖P̂ − Q‖_∞, max_v ‖P_v − P̂ − E_v‖_∞) <= tol``, or until ``P̂`` has settled: the
    residual and the estimated remaining movement of ``P̂`` are both ``<= tol_settle``.

    **Weight convention.** The reweighted step above is the exact step for weights
    ``lam1/2`` and ``lam2/2`` (for ``λ‖e‖₂`` it would be ``1 + (λ/μ)/‖e‖``). It is kept as the
    authors wrote it, so their λ grids and results carry over; the reported ``objective``
    uses the same halved weights, ``‖Q‖_* + (lam1/2) ‖E‖_G1 + (lam2/2) ‖E‖_2,1``, i.e. the
    function actually being minimised (``‖Q‖_*`` comes free from the SVT).

    Parameters
    ----------
    P_list : list of ndarray, shape (n, n)
        Row-stochastic transition matrices, one per view (e.g. from
        :func:`fastmv.transition_matrix`): square, same ``n``, finite, nonnegative, rows
        summing to 1 (within 1e-6; ``1e-6 √n`` for float32). Never modified.
    lam1 : float
        Weight (``>= 0``) of the group-ℓ1 norm (sample-specific corruption: columns of ``E``).
    lam2 : float
        Weight (``>= 0``) of the ℓ2,1 norm (rows of ``E``).
    n_clusters : int, optional
        If given, ``labels`` = Markov-chain spectral clustering of ``P̂``
        (:func:`fastmv.markov_spectral_clustering`).
    max_iter : int, default 100
        Maximum number of iterations (``>= 0``).
    tol : float, default 1e-6
        Primal-residual tolerance (sup norm): converged when the residual is ``<= tol``.
        ``tol=0`` runs ``max_iter`` iterations (no settling test either).
    tol_settle : float, "auto" or None, default "auto"
        Also converged when the primal residual is ``<= tol_settle`` and ``P̂`` has
        settled: with the penalty growing by ``rho``, the late changes
        ``Δ_k = ‖P̂_k − P̂_{k−1}‖_∞`` shrink geometrically, and the sum of the rest of that
        tail, ``Δ_k q/(1 − q)`` (``q``: the larger of the last two ratios, required
        ``< 0.9``, with the SVT active for three iterations), is ``<= tol_settle``. The
        last iterations move ``P̂`` by less than this, and its labels not at all on the
        twelve shared datasets (docs/records/emvc.md "Stopping rule"). ``"auto"``:
        ``100 * tol`` (1e-4 with the default ``tol``); ``None``: the primal residual alone.
    stop : {"labels", "residual"}, default "labels"
        ``"labels"`` (with ``n_clusters``): also converged once the labels have settled:
        at each iteration whose objective changed by at most 1 % (relative) with ``Q ≠ 0``,
        the labels of ``P̂`` are computed as the result's would be, and the solve stops when
        they are the same partition at four consecutive such iterations (those labels are
        returned). Used when ``n >= 20 n_clusters`` and the late SVTs are full
        decompositions (``max_rank=None``, or ``n`` too small for the capped tier): with
        fewer samples per cluster, or with capped late SVTs, a check costs more than the
        iterations it may save. ``"residual"``: only the two tests
        above, bit for bit. Either way ``tol=0`` runs
        ``max_iter`` iterations (docs/records/emvc.md "Stopping when the labels have settled").
    mu : float, default 1e-6
        Initial penalty ``μ > 0``.
    rho : float, default 1.9
        Growth factor of the penalty (``>= 1``).
    mu_max : float, default 1e10
        Cap of the penalty (``>= mu``).
    init : {"mean", "random"}, default "mean"
        Start of ``E_v``: ``P_v − mean_w P_w`` (deterministic) or standard normal entries
        (the authors' ``randn``; a zero start would freeze the reweighting).
    dtype : float32 or float64, optional
        Precision of the whole iteration (default float64); float32 halves the memory.
    full_svd : {"auto", "gesdd"}, default "auto"
        How the SVT decomposes ``P̂ + Z/μ`` when it needs all singular values: ``"auto"``
        by the eigendecomposition of its Gram matrix where that is accurate to ``4e-11 σ₁``
        (about twice as fast), else LAPACK ``gesdd``; ``"gesdd"`` always ``gesdd``.
    max_rank : int, "auto" or None, default "auto"
        Rank cap of the singular value thresholding. Where the exact ``Q`` would have more
        than ``max_rank`` singular values above ``1/μ`` (the late iterations, each a full
        ``n × n`` decomposition), the top ``max_rank`` triplets are shrunk exactly and the
        rest of ``P̂ + Z/μ`` is kept: within ``2/μ`` of the exact ``Q`` in the spectral norm
        whatever the accuracy of the triplets. They come from a subspace iteration that
        advances one step per solver iteration (warm-started from the previous one), so
        they converge to the leading subspace the labels are read from as the solve goes
        on, at O(n² max_rank) instead of O(n³) per iteration
        (:func:`fastmv._emvc._svt.svt`; docs/records/emvc.md "Capped SVT").
        ``"auto"``: ``min(max(64, 4 n_clusters), n // 8)``, and the exact SVT where that is
        below 64 (``n < 512``); ``None``: the exact SVT every iteration (the published
        iteration).
    view_weights : {"equal", "error"} or array-like of shape (m,), default "equal"
        Weights ``α_v > 0`` of each view's share of the error penalty: the model becomes
        ``min ‖P̂‖_* + Σ_v α_v h_v(E_v)`` with ``h_v(E_v) = (lam1/2) Σ_i ‖E_v[:, i]‖₂ +
        (lam2/2) Σ_r ‖E_v[r, :]‖₂`` (the published model is ``α_v = 1``, the same function
        as above). A view with a small ``α_v`` may deviate from ``P̂`` cheaply, so it pulls
        ``P̂`` less. ``"equal"``: all ``1``, the published model (the iteration bit for bit).
        ``"error"``: reweighted after every iteration from the errors just computed,
        ``α_v ∝ h_v(E_v)^(-p)`` (``p = 0.5``; with ``p = 1`` the majorize-minimize weights of
        the concave penalty ``Σ_v log h_v(E_v)``), so a view far from the consensus loses
        weight. Given numbers are fixed weights. Either way they are scaled to average 1,
        which keeps ``lam1`` and ``lam2`` on the published scale; ``view_weights`` of the
        result holds the weights of the last iteration (docs/records/emvc-weights.md).
    random_state : None, int or Generator
        Seeds ``init="random"``, the SVT's start blocks and the clustering's k-means.
    verbose : bool or int, default False
        Log one line per iteration (logger ``"fastmv"``).
    progress : bool, default False
        Show a progress bar over the iterations (needs tqdm).
    callback : callable, optional
        ``callback(info)`` after every iteration with a :class:`fastmv._core._driver.IterationInfo`;
        ``info.state`` holds read-only ``P_hat``, ``residual_consensus``,
        ``residual_views``, ``mu`` (the penalty of this iteration), ``rank`` and
        ``svt_method``. Returning ``True`` or raising ``StopIteration`` stops the solve
        (``converged=False``).
    n_jobs : int, optional
        Threads of the Numba kernels (BLAS/LAPACK keep their own setting).

    Returns
    -------
    EMVCResult
        ``labels``, ``objective`` and ``residual`` per iteration, ``n_iter``, ``converged``,
        ``P_hat``, ``E`` (per view), ``rank`` of ``Q`` and ``svt_method`` per iteration.

    Notes
    -----
    Memory: ``3m + 3`` dense ``n × n`` arrays (``P_v``, ``E_v``, ``Y_v``, ``P̂``, ``Q`` and one
    array holding ``P̂ + Z/μ``, which with ``Q`` encodes ``Z``), one more (the previous
    ``P̂``) for the settling test, plus the workspace of a full decomposition. Time per iteration:
    O(m n²) in three fused passes over the data, plus the
    SVT: no SVD while ``1/μ`` is above a certified upper bound of the top singular value (the
    first ~20 iterations with the default schedule), a growing partial SVD while ``Q`` has
    low rank, and a full decomposition (O(n³)) otherwise; see :func:`fastmv._emvc._svt.svt` and
    ``docs/algorithms.md §3.4``. Measurements: ``docs/records/emvc.md``.

    Examples
    --------
    >>> import numpy as np
    >>> import fastmv
    >>> K = np.kron(np.eye(2), np.ones((4, 4))) + 0.05
    >>> P = K / K.sum(axis=1, keepdims=True)
    >>> res = fastmv.emvc([P, P], 0.1, 0.1, n_clusters=2, random_state=0)
    >>> res.converged, bool(res.labels[0] == res.labels[3] != res.labels[4])
    (True, True)
    """
    data = _prepare(P_list, lam1, lam2, n_clusters=n_clusters, mu=mu, rho=rho,
                    mu_max=mu_max, init=init, dtype=dtype, full_svd=full_svd,
                    random_state=random_state, tol=tol, tol_settle=tol_settle, stop=stop,
                    max_rank=max_rank, view_weights=view_weights)
    return _solve(data, max_iter=max_iter, tol=tol, callback=callback, verbose=verbose,
                  progress=progress, n_jobs=n_jobs)


def _solve(data, *, max_iter, tol, callback, verbose, progress, n_jobs):
    """The iterations, driven by the shared driver, then the spectral step; the result."""
    with thread_limit(n_jobs):
        problem = Problem(data, n_jobs)
        trace = iterate(problem, solver="emvc", max_iter=max_iter, tol=tol, callback=callback,
                        verbose=verbose, progress=progress)
        labels = problem.labels(n_jobs)
    return problem.result(trace, labels)
