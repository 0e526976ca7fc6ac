"""OPIMC: one-pass streaming clustering of incomplete multi-view data (docs/algorithms.md §5).

Hu & Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019. The data streams through in
chunks of rows; only the global statistics ``R_v`` (``d_v × c`` per-cluster sums) and
``T_v`` (per-cluster counts) and the centres ``U_v`` persist between chunks, so memory is
O(Σ d_v (s + c)) whatever ``n`` is (plus the ``n`` output labels; in-memory views of at most
``2**23`` values keep their chunks between passes).

The solver has the shape every fastmv solver has: :func:`_prepare` (validated inputs:
a chunk source and a chunk builder, see ``_sources`` and ``_chunks``), a problem object
whose ``step()`` is one pass over the stream (``_problem.Problem``), and the shared
driver ``fastmv._core._driver.iterate`` that owns the loop over passes and its convergence test.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike

from .._core._driver import (
    IterationInfo,
    iterate,
    progress_bar,
    warn_if_degenerate,
)
from .._core._result import Result
from .._core._threads import effective_n_jobs, thread_limit
from .._core._validation import (
    Interval,
    Options,
    check_n_clusters,
    check_random_state,
    declare_params,
)
from ..exceptions import DegenerateSolutionError, InvalidParameterError
from ._chunks import ChunkBuilder
from ._dask import DaskChunkStream, is_dask_collection
from ._peak import check_opimc
from ._problem import Data, Problem
from ._sources import (
    ArraySource,
    StreamSource,
    is_one_shot,
    is_view,
    looks_like_view,
)

__all__ = ["opimc", "OPIMCResult"]


@dataclasses.dataclass(frozen=True, repr=False)
class OPIMCResult(Result):
    """Result of :func:`opimc`.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        Cluster of each sample after the last pass (in ``[0, n_clusters)``).
    objective : ndarray of shape (n_iter,), float64
        The streamed loss ``Σ_v (−2 tr(U_vᵀ R_v) + tr(U_vᵀ U_v T_v) + α‖U_v‖²)`` at the end of
        each pass (over all samples; the paper's objective without the constant
        ``Σ_v Σ_i w_{v,i} ‖x_{v,i}‖²``).
    n_iter : int
        Passes over the data.
    converged : bool
        Whether a pass changed the loss by at most ``tol`` (relative) from the pass before;
        a single pass has nothing to compare with and reports ``False``.
    U : list of ndarray, each (d_v, n_clusters), float64
        Per-view centres (columns) after the last chunk, ``U_v = R_v (T_v + αI)⁻¹``.
    chunk_loss : ndarray of shape (n_iter, n_chunks), float64
        The loss after each chunk (in the first pass over the samples streamed so far).
    chunk_iter : ndarray of shape (n_iter, n_chunks), int64
        Inner iterations spent on each chunk (after the first pass, with ``refine``: sweeps
        of single-row moves).
    tuning : dict or None
        What self-tuning chose from the supervision, per option (candidates, scores, choice;
        docs/defaults.md, "Self-tuning"); None when nothing was tuned.
    """

    U: list
    chunk_loss: np.ndarray
    chunk_iter: np.ndarray

    _shapes: ClassVar[dict] = {"U": [("d_v", "c")], "chunk_loss": ("n_iter", "n_chunks"),
                               "chunk_iter": ("n_iter", "n_chunks")}


# ---------------------------------------------------------------------------------------
# validated inputs
# ---------------------------------------------------------------------------------------

def _is_stream(X_list) -> bool:
    return not (isinstance(X_list, (list, tuple)) and len(X_list) > 0
                and all(looks_like_view(X) for X in X_list))


def _prepare(X_list, n_clusters, mask, chunk_size, max_iter, init, normalize,
             random_state, shuffle=False) -> Data:
    """Chunk source, builder and start of an OPIMC call (shapes, dtypes, ``init``)."""
    if is_view(X_list) and not isinstance(X_list, (list, tuple)):
        raise TypeError("X_list must be a list of views (one 2-D array per view) or an "
                        f"iterable of (blocks, mask_block) chunks; got {type(X_list).__name__}")
    if not _is_stream(X_list) and any(is_dask_collection(X) for X in X_list) and not shuffle:
        # dask views read in order: blocks computed by the active scheduler, the next ones
        # prefetched (shuffled, each chunk's rows are gathered by one compute: ArraySource)
        X_list, mask = DaskChunkStream(X_list, mask), None
    rng = check_random_state(random_state)
    if not _is_stream(X_list):
        source = ArraySource(X_list, mask, chunk_size)
        n = source.n
        n_clusters = check_n_clusters(n_clusters, n)
        if shuffle:
            source = ArraySource(source.views, source.mask, chunk_size,
                                  order=rng.permutation(n))
    else:
        if isinstance(X_list, (list, tuple)) and len(X_list) == 0:
            raise InvalidParameterError("X_list must hold at least one view")
        if mask is not None:
            raise InvalidParameterError("mask is not used with a chunk stream: "
                                        "yield (blocks, mask_block)")
        source = StreamSource(X_list, chunk_size, max_iter)
        source.peek_spec()
        n = None
    spec = source.spec
    labels, centers = _parse_init(init, spec, n_clusters, n)
    if labels is not None and n is not None and labels.size not in (min(chunk_size, n), n):
        raise InvalidParameterError(f"init labels must have length {min(chunk_size, n)} "
                                    f"(first chunk) or {n} (all samples), got {labels.size}")
    order = getattr(source, "order", None)
    if labels is not None and order is not None and labels.size == n:
        labels = labels[order]                    # the samples' labels in visit order
    start = init if isinstance(init, str) else None
    check_opimc(spec.dims, n, chunk_size, n_clusters)
    return Data(source, spec, ChunkBuilder(spec, normalize == "l2", chunk_size), n,
                 int(n_clusters), start, labels, centers, rng)


def _parse_init(init, spec, n_clusters, n):
    """-> (labels or None, per-view centres (user order) or None)."""
    if isinstance(init, str):
        return None, None
    if isinstance(init, (list, tuple)) and len(init) == spec.m and all(
            np.ndim(u) == 2 for u in init):
        centers = []
        for v, u in enumerate(init):
            u = np.asarray(u, dtype=np.float64)
            if u.shape != (spec.dims[v], n_clusters):
                raise InvalidParameterError(f"init[{v}] must have shape (d_v, n_clusters) = "
                                 f"({spec.dims[v]}, {n_clusters}), got {u.shape}")
            if not np.isfinite(u).all():
                raise InvalidParameterError(f"init[{v}] contains NaN or infinite values")
            centers.append(u)
        return None, centers
    lab = np.asarray(init)
    if lab.ndim != 1 or lab.dtype.kind not in "iu":
        raise InvalidParameterError("init must be 'random', 'k-means++', a 1-D integer array "
                                    "of initial labels (for the first chunk, or for all n "
                                    "samples) or a list of per-view centres (d_v, n_clusters)")
    if lab.size and (lab.min() < 0 or lab.max() >= n_clusters):
        raise InvalidParameterError(f"init labels must lie in [0, n_clusters) = [0, {n_clusters})")
    return lab.astype(np.int64), None


# ---------------------------------------------------------------------------------------
# the public function
# ---------------------------------------------------------------------------------------

#: Chunks of at least this many values (rows × Σ d_v) are read ahead on a second thread when
#: the call has two threads or more (small chunks are slower that way, large ones much
#: faster: docs/records/opimc.md).
READ_AHEAD_MIN_VALUES = 2 ** 17

_POSITIVE_INT = Interval(Integral, 1, None, closed="left")
#: Passes at most by default (they stop once the loss settles: 2-5 on the shared datasets);
#: chosen leave-one-dataset-out, docs/defaults.md "Without supervision".
DEFAULT_PASSES = 10
#: With ``tol > 0``, a pass that changes at most this fraction of the labels ends the passes
#: (settled labels); chosen leave-one-dataset-out (docs/records/opimc-defaults.md).
LABEL_TOL = 0.005
_NONNEGATIVE = Interval(Real, 0, None, closed="left")


@declare_params({
    "X_list": ["views", "iterable"], "n_clusters": [_POSITIVE_INT],
    "mask": ["array-like", None], "alpha": [_NONNEGATIVE], "chunk_size": [_POSITIVE_INT],
    "max_iter": [_POSITIVE_INT, None], "tol": [_NONNEGATIVE], "max_inner_iter": [_POSITIVE_INT],
    "inner_tol": [_NONNEGATIVE], "normalize": [Options({"l2"}), None], "shuffle": ["boolean"],
    "init": [Options({"random", "k-means++"}), "array-like"], "n_init": [_POSITIVE_INT],
    "refine": [Options({"best", "each"}), None],
    "random_state": ["random_state"], "verbose": ["verbose"], "progress": ["boolean"],
    "callback": [callable, None], "n_jobs": ["n_jobs"],
})
def opimc(X_list: Sequence[Any] | Iterable[tuple[Sequence[Any], ArrayLike | None]],
          n_clusters: int, *, mask: ArrayLike | None = None, alpha: float = 0.1,
          chunk_size: int = 2000, max_iter: int | None = None, tol: float = 1e-6,
          max_inner_iter: int = 30, inner_tol: float = 1e-6,
          normalize: Literal["l2"] | None = "l2",
          init: Literal["random", "k-means++"] | ArrayLike = "k-means++", n_init: int = 10,
          refine: Literal["best", "each"] | None = "each",
          shuffle: bool = True, random_state: int | np.random.Generator | None = None,
          verbose: bool | int = False, progress: bool = False,
          callback: Callable[[IterationInfo], bool | None] | None = None,
          n_jobs: int | None = None) -> OPIMCResult:
    """One-pass incomplete multi-view clustering (OPIMC), streamed chunk by chunk.

    Each chunk ``X_t`` of ``s`` rows is read once per pass (at most two chunks per view in
    memory at a time: with two threads or more the next chunk is read while the current one
    is clustered; in-memory views of at most ``2**23`` values keep their chunks for the
    later passes, see ``max_iter``). Samples are scaled to unit ℓ2 norm per view
    (``normalize``; missing rows count as zero with weight 0). With the global statistics
    ``R_v = Σ X_vᵀ V`` and ``T_v = Σ Vᵀ W_v V`` (per-cluster sums and counts of the present
    rows streamed so far), each chunk repeats, until no label changes or the chunk's loss
    changes by at most ``inner_tol`` (relative), at most ``max_inner_iter`` times::

        U_v = (R_v + X_tᵀ V_t) (T_v + V_tᵀ W_t V_t + αI)⁻¹   (diagonal T: a column scaling;
              clusters with zero count: chunk mean on the first chunk, previous centre later)
        label_i = argmin_k Σ_v w_{v,i} (‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k})

    then adds the chunk to ``R_v``, ``T_v``. The first chunk of the first pass starts from
    ``init``, every later chunk from the labels given by the current centres. One pass is the
    paper's algorithm; each further pass (``max_iter > 1``) re-assigns every chunk against
    the statistics of all the others (docs/algorithms.md §5; ``max_iter``).

    Parameters
    ----------
    X_list : list of views, or an iterable of chunks
        Either one object per view, each ``(n, d_v)`` with a common ``n``: a NumPy array, an
        ``np.memmap``, a scipy.sparse matrix (CSR is sliced directly; other formats are
        converted to CSR once), or any object with ``shape`` and row slicing ``X[a:b]`` (e.g.
        an h5py dataset). Only ``chunk_size`` rows of each view are read at a time; a memmap's
        pages are released after each chunk. All-NaN rows of dense views count as missing.
        Or an iterable yielding ``(blocks, mask_block)`` pairs for a true stream: ``blocks`` a
        list of per-view row blocks (dense or sparse, any number of rows, the same for every
        view), ``mask_block`` a ``(rows, m)`` bool array or None. The stream is re-cut into
        chunks of ``chunk_size`` rows, so results equal those on the concatenated arrays.
        ``max_iter > 1`` needs a re-iterable (``iter()`` restarts it), not a one-shot iterator.
        Every block (sparse ones included) is validated as it arrives; the first pass fixes
        the stream's precision (a float32 first block computes in float32 and refuses a later
        block float32 cannot hold, e.g. float64) and its row count (a later pass of another
        length raises). ``dask.array`` views (chunked along samples; the mask a NumPy or dask
        array) are computed by the active Dask scheduler (with ``shuffle=False`` block by
        block, the next blocks prefetched); results equal NumPy input.
    n_clusters : int
        Number of clusters ``c`` (``1 <= c <= n``).
    mask : array-like of shape (n, m), bool, optional
        ``True`` where a sample is present in a view (may be a memmap; read by chunk). Not used
        with a chunk stream (give ``mask_block`` there). Default: every row present (NaN rows
        aside). Every sample must be present in at least one view.
    alpha : float >= 0, default 0.1
        Ridge weight α of the centres.
    chunk_size : int >= 1, default 2000
        Rows per chunk ``s`` (memory ``O(s Σ d_v)``). The first chunk alone gives the start,
        so larger first chunks start better: chosen leave-one-dataset-out over the twelve
        shared datasets (500, 1000 or 2000; docs/defaults.md "Without supervision").
    max_iter : int >= 1 or None, default None
        ``None``: 10, or 1 for a one-shot iterator (which can be read only once). Passes over
        the data at most (an iteration of OPIMC is one pass; at least one pass is
        needed to have labels at all); the passes stop earlier once the loss or the labels
        settle (``tol``: 2–5 passes on the shared datasets). One pass is the paper's algorithm;
        further passes re-assign every chunk against the statistics of all the others and
        raised ACC on six of seven shared datasets (docs/defaults.md "Without supervision").
        With ``refine``, a later pass re-assigns each chunk by one sweep of single-row moves
        on the global statistics, which still hold the chunk (every move lowers the loss);
        without, by Lloyd's iterations after removing the chunk's previous contribution.
        NumPy arrays and scipy.sparse matrices of at most ``2**23`` values (``n × Σ d_v``)
        keep the chunks built in the first pass for the later ones (the same results as
        reading them again); memmaps, files, Dask arrays and streams are read in every
        pass, their memory bounded by the chunk size.
    tol : float >= 0, default 1e-6
        The passes stop once a pass changes the loss by at most ``tol`` relative to the pass
        before, or, with ``tol > 0``, changes at most 0.5 % of the labels (settled labels:
        the last passes move a few rows each and barely change the result). ``tol=0`` runs
        ``max_iter`` passes unless a pass changes nothing.
    max_inner_iter : int >= 1, default 30
        Inner iterations per chunk at most.
    inner_tol : float >= 0, default 1e-6
        Relative change of the chunk's loss that ends its inner loop.
    normalize : {"l2", None}, default "l2"
        ``"l2"``: scale each present row of each view to unit ℓ2 norm (scale-safe: rows of any
        finite magnitude, 1e-300 or 1e300, give the same unit rows), as the other solvers'
        ``normalize="l2"`` does. ``None``: use the rows as given.
    init : 'random', 'k-means++', int array, or list of arrays, default 'k-means++'
        Start of the first chunk: ``'random'`` (the paper's: a random balanced partition,
        whose cluster means all start near the global mean: on ℓ2-normalised text one
        cluster then takes almost every sample);
        ``'k-means++'`` (greedy D² seeding on the first chunk in the assignment metric, as
        scikit-learn's, seeds drawn among the rows present in the most views, a seed's
        missing views filled with the chunk mean: records/opimc.md); initial labels (length of
        the first chunk visited, or ``n`` in the input's order: the first chunk's rows are
        used); or per-view centres ``U_v``
        ``(d_v, n_clusters)``, which then give the first labels. With ``alpha=0``, no missing
        data and one chunk holding every sample, :func:`opimc` is Lloyd's k-means on the
        concatenated normalised views from that start.
    n_init : int >= 1, default 10
        Starts tried on the first chunk with ``init='random'`` or ``'k-means++'``; the one
        with the lowest chunk loss is kept (given labels or centres are one start). Chosen
        leave-one-dataset-out over the seven shared datasets among 3, 10 and 20
        (docs/defaults.md "Without supervision"). When later passes follow and the first
        chunk holds under a tenth of the samples, ``⌈10 n_init s / n⌉`` starts are tried
        (at least 3, at most ``n_init``): the later passes re-assign every sample against
        all the others, so a small first chunk's start matters less than its cost
        (docs/defaults.md "Without supervision").
    refine : {"each", "best"} or None, default "each"
        Single-row moves after Lloyd's iterations on each chunk (Hartigan's method on the
        same loss: a row moves to the cluster that lowers the loss most *with the centres
        moving with it*; every move lowers the loss), then Lloyd's iterations again from
        there, until no row moves (at most 5 rounds of at most 10 sweeps). ``"each"``: every
        one of the ``n_init`` starts is refined and the lowest refined loss is kept;
        ``"best"``: only the start kept; later chunks and passes are refined either way
        (a later pass by single-row moves alone, see ``max_iter``).
        ``None``: Lloyd's iterations only (the paper's algorithm). On incomplete views the
        Lloyd fixed points the starts reach are often far from the loss's best; chosen
        leave-one-dataset-out over the seven shared datasets (docs/records/opimc.md "Refinement",
        docs/defaults.md). Costs about a Lloyd assignment per sweep; memory O(c Σ d_v).
    shuffle : bool, default True
        Visit the samples of views held as arrays, memmaps, CSR matrices or row-sliceable
        objects (h5py) in a random order, seeded by ``random_state``: a fixed random
        permutation of the rows cut into chunks (each chunk read in increasing row order,
        so h5py and memmaps read forwards), the same in every pass. ``labels`` are returned
        in the input's order either way. One pass is order-dependent: on a file sorted by
        class the first chunks hold few classes, the centres are fitted to them and later
        classes are merged into the wrong clusters (Handwritten sorted by class, 40 %
        missing: docs/records/opimc.md). ``False`` reads the rows in file order (contiguous
        slices: the fastest reads). The order is a function of ``random_state`` and ``n`` alone, so
        arrays, memmaps, CSR matrices, h5py datasets and dask arrays (Zarr stores included;
        shuffled, each chunk's rows are gathered by one ``dask.compute``, which may read
        every stored block: ``False`` reads each block once per pass) of the same rows give
        the same labels, float32 and float64 alike. The one exception: a chunk stream (an
        iterable of blocks, one-shot or re-iterable) cannot be read out of order in bounded
        memory, so it is always visited in its own order, whatever ``shuffle`` says, and
        gives the labels of the same rows as arrays with ``shuffle=False``; shuffle a stream
        at its source if it may be sorted.
    random_state : None, int or numpy.random.Generator
        Seeds the random start and the visiting order.
    verbose : bool or int, default False
        Log one line per pass (logger ``"fastmv"``).
    progress : bool, default False
        Show a progress bar over the chunks (needs tqdm).
    callback : callable, optional
        ``callback(info)`` after every pass with a ``fastmv`` ``IterationInfo``; its
        ``state`` holds ``labels``, ``U`` (per-view centres) and ``chunk_loss`` (the pass's
        losses after each chunk). Returning ``True`` or raising ``StopIteration`` stops
        after that pass with ``converged=False``.
    n_jobs : int, optional
        Threads (see :func:`fastmv.thread_limit`). With two or more and chunks of at least
        ``2**17`` values (``chunk_size × Σ d_v``), one thread reads, validates and lays out
        the next chunk while the others cluster the current one (the kernels are serial; BLAS
        gets ``n_jobs - 1`` threads); smaller chunks are read by the clustering thread.
        Results do not depend on it.

    Returns
    -------
    OPIMCResult
        ``labels``, ``objective`` (loss per pass), ``n_iter`` (passes), ``converged``,
        ``U`` (per view, ``d_v × c``), ``chunk_loss`` and ``chunk_iter`` (per pass and chunk).

    Raises
    ------
    ValueError, TypeError
        Naming the argument: views with different ``n`` or bad shapes, infinite values or
        partially-NaN rows in present rows, malformed CSR blocks (indices past a view's
        width, e.g. 1-based), samples missing from every view, bad ``mask`` values,
        out-of-range parameters. An exception raised by a chunk source, or a block of the
        wrong shape midway through a stream, reaches the caller with the chunk's index in
        its message; thread settings are restored either way.

    Notes
    -----
    Time per pass: O(Σ_v |Ω_v| d_v c + nnz c) for the first assignment of each chunk
    (``|Ω_v|`` present rows of view ``v``: one GEMM per dense view, a fused CSR kernel for
    sparse views, then a fused distance + argmin), and per inner iteration O(D c + s) plus
    O(Σ d_v c) for each row whose Hamerly bounds overlap (the re-assignment is pruned exactly)
    and O(d) for each row whose label changed. Memory: O(s Σ d_v + Σ d_v c), independent of
    ``n``, plus the ``n`` output labels (int64). Float32 views are processed in float32 (the
    statistics are float64). Measurements: ``docs/records/opimc.md``.

    References
    ----------
    M. Hu and S. Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019.

    Examples
    --------
    >>> import numpy as np, fastmv
    >>> rng = np.random.default_rng(0)
    >>> y = np.arange(500) % 3                        # three planted clusters
    >>> X1 = rng.random((500, 20)) + np.eye(20)[y]
    >>> X2 = rng.random((500, 30)) + np.eye(30)[y]
    >>> res = fastmv.opimc([X1, X2], 3, chunk_size=100, random_state=0)
    >>> res.labels.shape, [u.shape for u in res.U], res.converged   # passes until settled
    ((500,), [(20, 3), (30, 3)], True)
    """
    if max_iter is None:
        max_iter = 1 if _is_stream(X_list) and is_one_shot(X_list) else DEFAULT_PASSES
    prep = _prepare(X_list, n_clusters, mask, chunk_size, max_iter, init, normalize,
                    random_state, shuffle)
    return _solve(prep, chunk_size=chunk_size, alpha=alpha, max_iter=max_iter, tol=tol,
                  max_inner_iter=max_inner_iter, inner_tol=inner_tol, n_init=n_init,
                  refine=refine, verbose=verbose, progress=progress, callback=callback,
                  n_jobs=n_jobs)


# counting distinct rows sorts them: done only for the warning, and only up to this size
_DISTINCT_MAX_VALUES = 50_000_000


def _distinct_rows(prep) -> int | None:
    """Distinct samples (rows of the views side by side) of in-memory dense views, or None
    (a stream, sparse or too large to count cheaply)."""
    views = getattr(prep.source, "views", None)
    if views is None or not all(isinstance(X, np.ndarray) for X in views) \
            or prep.n * sum(X.shape[1] for X in views) > _DISTINCT_MAX_VALUES:
        return None
    return int(np.unique(np.hstack(views), axis=0).shape[0])


def _degenerate_cause(prep) -> str:
    """What to say when clusters ended empty: fewer distinct samples than clusters, else
    fewer groups in the data than clusters (a subset missing classes)."""
    distinct = _distinct_rows(prep)
    if distinct is not None and distinct < prep.n_clusters:
        return (f"the views hold only {distinct} distinct samples (identical rows); lower "
                "n_clusters")
    rows = f"{distinct} distinct samples" if distinct is not None else "enough samples"
    return (f"the data hold {rows}, but clusters emptied during the passes: the samples form "
            "fewer separate groups than n_clusters. On a subset of labelled data this means it "
            "lacks classes, as a cross-validation fold of data sorted by class does (shuffle "
            "the folds: KFold(n_splits, shuffle=True)); otherwise lower n_clusters, or use "
            "normalize=None on views whose rows differ only in scale")


def _solve(prep, *, chunk_size, alpha, max_iter, tol, max_inner_iter, inner_tol, n_init,
           verbose, refine="each", progress, callback, n_jobs):
    """The passes over the stream, driven by the shared driver; returns the result."""
    total = None if prep.n is None else -(-prep.n // chunk_size) * max_iter
    # two threads or more: one reads and builds the next chunk while the others cluster the
    # current one (its kernels are serial and release the GIL; BLAS gets the other threads).
    # Small chunks are read in the clustering thread: building them is mostly Python, which a
    # second thread would contend for the GIL with; BLAS is then left as the caller set it
    # (limiting it costs a library scan, more than such a pass; docs/records/perf.md "Figures
    # behind the code's choices").
    n_threads = effective_n_jobs(n_jobs)
    read_ahead = n_threads >= 2 and chunk_size * prep.builder.D >= READ_AHEAD_MIN_VALUES
    kernel_jobs = n_threads - 1 if read_ahead else n_jobs
    with thread_limit(kernel_jobs, single_threaded_blas=False), \
            progress_bar(total, progress, "opimc chunks") as bar:
        problem = Problem(prep, alpha=float(alpha), max_inner_iter=int(max_inner_iter),
                          inner_tol=float(inner_tol), n_init=int(n_init), bar=bar,
                          read_ahead=read_ahead, refine=refine,
                          label_tol=LABEL_TOL if tol > 0 else 0.0, max_iter=int(max_iter))
        trace = iterate(problem, solver="opimc", max_iter=int(max_iter), tol=float(tol),
                        callback=callback, verbose=verbose, warn=max_iter > 1)
    if not (np.all(np.isfinite(trace.objective)) and np.all(np.isfinite(problem.stats.centers))):
        raise DegenerateSolutionError(
            "opimc: the objective or the centres overflowed float64 (squared distances of "
            "data this large in magnitude do not fit); use normalize='l2' or rescale the views")
    warn_if_degenerate(problem.labels, prep.n_clusters, "opimc",
                       lambda: _degenerate_cause(prep))
    return OPIMCResult(labels=problem.labels, objective=trace.objective, n_iter=trace.n_iter,
                       converged=trace.converged, U=problem.centers(),
                       chunk_loss=np.asarray(problem.chunk_loss, dtype=np.float64),
                       chunk_iter=np.asarray(problem.chunk_iter, dtype=np.int64))
