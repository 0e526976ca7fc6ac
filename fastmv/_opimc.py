"""OPIMC: one-pass streaming clustering of incomplete multi-view data (ALGORITHMS.md §5).

Hu & Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019. The data streams through in
chunks of rows; only the global statistics ``R_v`` (``d_v × c`` per-cluster sums) and
``T_v`` (per-cluster counts) and the centres ``U_v`` persist between chunks, so memory is
O(Σ d_v (s + c)) whatever ``n`` is (plus the ``n`` output labels). Views may be dense arrays,
``np.memmap`` (read one chunk at a time; the pages read are handed back to the OS), CSR
matrices, any object with ``shape`` and row slicing (h5py datasets), or a stream of chunks.
"""
from __future__ import annotations

import dataclasses
import numbers
import time
from typing import Callable

import numpy as np

from fastmv.kernels.streaming import (REPLACE_PREVIOUS, START_FROM_CENTERS, START_FROM_LABELS,
                                      Statistics, stream_chunk_iterate)

from ._opimc_chunks import _ChunkBuilder, _kmeanspp
from ._opimc_sources import _ArraySource, _is_view, _looks_like_view, _StreamSource
from ._result import Result
from ._threads import thread_limit
from ._validation import (check_int, check_n_clusters, check_n_jobs, check_random_state,
                          check_scalar)

__all__ = ["opimc", "OPIMCResult"]


@dataclasses.dataclass(frozen=True, repr=False)
class OPIMCResult(Result):
    """Result of :func:`opimc`.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        Cluster of each sample after the last pass (in ``[0, n_clusters)``).
    U : list of ndarray, each (d_v, n_clusters), float64
        Per-view centres (columns) after the last chunk, ``U_v = R_v (T_v + αI)⁻¹``.
    loss : ndarray of shape (n_passes,)
        The streamed loss ``Σ_v (−2 tr(U_vᵀ R_v) + tr(U_vᵀ U_v T_v) + α‖U_v‖²)`` at the end of
        each pass (over all samples; the paper's objective without the constant
        ``Σ_v Σ_i w_{v,i} ‖x_{v,i}‖²``).
    chunk_loss : ndarray of shape (n_passes, n_chunks)
        The same loss after each chunk (over the samples streamed so far in the first pass).
    n_iter : ndarray of shape (n_passes, n_chunks), int64
        Inner iterations spent on each chunk.
    n_passes : int
    converged : bool
        Whether every chunk of the last pass stopped before ``max_iter``.
    """

    labels: np.ndarray
    U: list
    loss: np.ndarray
    chunk_loss: np.ndarray
    n_iter: np.ndarray
    n_passes: int
    converged: bool

    @property
    def objective(self) -> np.ndarray:
        """Alias of :attr:`loss` (the per-pass objective history)."""
        return self.loss


# ---------------------------------------------------------------------------------------
# the solver
# ---------------------------------------------------------------------------------------

def _parse_init(init, spec, n_clusters, n):
    """-> (labels or None, U0 stacked by user view or None)."""
    if isinstance(init, str):
        if init not in ("random", "k-means++"):
            raise ValueError(f"init must be 'random', 'k-means++', an array of initial labels "
                             f"or a list of per-view centres (d_v, n_clusters); got {init!r}")
        return None, None
    if isinstance(init, (list, tuple)) and len(init) == spec.m and all(
            np.ndim(u) == 2 for u in init):
        U0 = []
        for v, u in enumerate(init):
            u = np.asarray(u, dtype=np.float64)
            if u.shape != (spec.dims[v], n_clusters):
                raise ValueError(f"init[{v}] must have shape (d_v, n_clusters) = "
                                 f"({spec.dims[v]}, {n_clusters}), got {u.shape}")
            if not np.isfinite(u).all():
                raise ValueError(f"init[{v}] contains NaN or infinite values")
            U0.append(u)
        return None, U0
    lab = np.asarray(init)
    if lab.ndim != 1 or lab.dtype.kind not in "iu":
        raise ValueError("init must be 'random', a 1-D integer array of initial labels (for the "
                         "first chunk, or for all n samples) or a list of per-view centres")
    if lab.size and (lab.min() < 0 or lab.max() >= n_clusters):
        raise ValueError(f"init labels must lie in [0, n_clusters) = [0, {n_clusters})")
    return lab.astype(np.int64), None


def opimc(X_list, n_clusters, *, mask=None, alpha=0.1, chunk_size=250, n_passes=1,
          max_iter=30, tol=1e-6, normalize=True, random_state=None, verbose=False,
          callback: Callable | None = None, init="random", n_jobs=None) -> OPIMCResult:
    """One-pass incomplete multi-view clustering (OPIMC), streamed chunk by chunk.

    Each chunk ``X_t`` of ``s`` rows is read once per pass (one chunk per view in memory at a
    time). Samples are scaled to unit ℓ2 norm per view (``normalize``; missing rows count as
    zero with weight 0). With the global statistics ``R_v = Σ X_vᵀ V`` and ``T_v = Σ Vᵀ W_v V``
    (per-cluster sums and counts of the present rows streamed so far), each chunk repeats, until
    no label changes or the chunk's loss changes by less than ``tol`` (relative), at most
    ``max_iter`` times::

        U_v = (R_v + X_tᵀ V_t) (T_v + V_tᵀ W_t V_t + αI)⁻¹   (diagonal T: a column scaling;
              clusters with zero count: chunk mean on the first chunk, previous centre later)
        label_i = argmin_k Σ_v w_{v,i} (‖u_{v,k}‖² − 2 x_{v,i}·u_{v,k})

    then adds the chunk to ``R_v``, ``T_v``. The first chunk of the first pass starts from
    random labels (a random balanced partition; the random ``U_v`` of the paper would be
    overwritten by the first centre update, so none is drawn), every later chunk from the
    labels given by the current centres. In passes after the first the chunk's previous
    contribution is removed from ``R_v``, ``T_v`` before it is re-assigned.

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
        ``n_passes > 1`` needs a re-iterable (``iter()`` restarts it), not a one-shot iterator.
    n_clusters : int
        Number of clusters ``c`` (``1 <= c <= n``).
    mask : array-like of shape (n, m), bool, optional
        ``True`` where a sample is present in a view (may be a memmap; read by chunk). Not used
        with a chunk stream (give ``mask_block`` there). Default: every row present (NaN rows
        aside). Every sample must be present in at least one view.
    alpha : float >= 0, default 0.1
        Ridge weight α of the centres.
    chunk_size : int >= 1, default 250
        Rows per chunk ``s``.
    n_passes : int >= 1, default 1
        Passes over the data.
    max_iter : int >= 1, default 30
        Inner iterations per chunk at most.
    tol : float >= 0, default 1e-6
        Relative change of the chunk's loss that ends its inner loop.
    normalize : bool, default True
        Scale each present row of each view to unit ℓ2 norm.
    random_state : None, int or numpy.random.Generator
        Seeds the random initial labels.
    verbose : bool, default False
        Print one line per pass.
    callback : callable, optional
        ``callback(k, state)`` after the ``k``-th chunk (counted over all passes); ``state`` is
        a dict with ``pass``, ``chunk``, ``start``, ``stop``, ``loss``, ``n_iter``, ``labels``
        (the chunk's labels) and ``U`` (per-view centres).
    init : 'random', 'k-means++', int array, or list of arrays, default 'random'
        Start of the first chunk: ``'random'`` (the paper's: a random balanced partition);
        ``'k-means++'`` (seeds drawn from the first chunk by D² sampling in the assignment
        metric, a seed's missing views filled with the chunk mean); initial labels (length of
        the first chunk, or ``n``: its first rows are used); or per-view centres ``U_v``
        ``(d_v, n_clusters)``, which then give the first labels. With ``alpha=0``, no missing
        data and one chunk holding every sample, :func:`opimc` is Lloyd's k-means on the
        concatenated normalised views from that start.
    n_jobs : int, optional
        Threads for the kernels (see :func:`fastmv.thread_limit`).

    Returns
    -------
    OPIMCResult
        ``labels``, ``U`` (per view, ``d_v × c``), ``loss`` (per pass), ``chunk_loss`` (per
        chunk), ``n_iter``, ``n_passes``, ``converged``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: views with different ``n`` or bad shapes, infinite values or
        partially-NaN rows in present rows, samples missing from every view, bad ``mask``
        values, out-of-range parameters.

    Notes
    -----
    Time per pass: O(Σ_v |Ω_v| d_v c + nnz c) for the first assignment of each chunk
    (``|Ω_v|`` present rows of view ``v``: one GEMM per dense view (BLAS), a fused CSR kernel
    for sparse views, then a fused distance + argmin), and per inner iteration O(D c + s) plus
    O(Σ d_v c) for each row whose Hamerly bounds overlap (the re-assignment is pruned exactly:
    skipped rows provably keep their label) and O(d) for each row whose label changed (the
    statistics follow the labels by one-hot scatter-adds). Memory: O(s Σ d_v + Σ d_v c),
    independent of ``n``, plus the ``n`` output labels (int64). Float32 views are processed in
    float32 (the statistics are float64). Memmap pages are released after each chunk, so the
    resident set does not grow with the file either.

    References
    ----------
    M. Hu and S. Chen, "One-Pass Incomplete Multi-view Clustering", AAAI 2019.

    Examples
    --------
    >>> import numpy as np, fastmv
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.random((500, 20)), rng.random((500, 30))
    >>> res = fastmv.opimc([X1, X2], 3, chunk_size=100, random_state=0)
    >>> res.labels.shape, [u.shape for u in res.U]
    ((500,), [(20, 3), (30, 3)])
    """

    alpha = check_scalar(alpha, "alpha", low=0.0)
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    n_passes = check_int(n_passes, "n_passes", low=1)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_scalar(tol, "tol", low=0.0)
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
    if not isinstance(verbose, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None")
    check_n_jobs(n_jobs)
    rng = check_random_state(random_state)

    if X_list is None or isinstance(X_list, (str, bytes)) or _is_view(X_list) and not (
            isinstance(X_list, (list, tuple))):
        raise TypeError("X_list must be a list of views (one 2-D array per view) or an "
                        "iterable of (blocks, mask_block) chunks; got "
                        f"{type(X_list).__name__}")
    is_views = isinstance(X_list, (list, tuple)) and len(X_list) > 0 and all(
        _looks_like_view(X) for X in X_list)
    if is_views:
        source = _ArraySource(X_list, mask, chunk_size)
        n = source.n
        n_clusters = check_n_clusters(n_clusters, n)
        spec = source.spec
    else:
        if isinstance(X_list, (list, tuple)) and len(X_list) == 0:
            raise ValueError("X_list must hold at least one view")
        try:
            iter(X_list)
        except TypeError as exc:
            raise TypeError("X_list must be a list of views or an iterable of chunks, got "
                            f"{type(X_list).__name__}") from exc
        if mask is not None:
            raise ValueError("mask is not used with a chunk stream: yield (blocks, mask_block)")
        source = _StreamSource(X_list, chunk_size, n_passes)
        n_clusters = check_int(n_clusters, "n_clusters", low=1)
        spec = source.peek_spec()
        n = None

    init_labels, U0 = _parse_init(init, spec, n_clusters, n)
    if init_labels is not None and n is not None and init_labels.size not in (
            min(chunk_size, n), n):
        raise ValueError(f"init labels must have length {min(chunk_size, n)} (first chunk) or "
                         f"{n} (all samples), got {init_labels.size}")

    builder = _ChunkBuilder(spec, bool(normalize), chunk_size)
    m, c, D = spec.m, n_clusters, builder.D
    view_ptr = builder.view_ptr
    order = builder.order
    R = np.zeros((c, D))          # per-cluster sums, R_v transposed and stacked
    T = np.zeros((m, c))
    U = np.zeros((D, c))
    if U0 is not None:
        for iv, v in enumerate(order):
            U[view_ptr[iv]:view_ptr[iv + 1]] = U0[v]
    labels_all = np.empty(n, np.int64) if n is not None else None
    label_parts = []
    empty_fill = np.zeros(0)
    pass_loss, chunk_loss, n_iter_all, conv_all = [], [], [], []
    k_total = 0

    def user_U():
        return [U[view_ptr[iv]:view_ptr[iv + 1]].copy() for iv in np.argsort(order)]

    with thread_limit(n_jobs, single_threaded_blas=False):
        for p in range(n_passes):
            t0 = time.perf_counter()
            losses, iters, convs = [], [], []
            loss = 0.0
            for t, (start, blocks, mblock) in enumerate(source.chunks()):
                ch = builder.build(start, blocks, mblock)
                del blocks, mblock
                s = ch.s
                lab = np.empty(s, np.int64)
                fill = empty_fill
                if p == 0:
                    mode = START_FROM_CENTERS
                    if t == 0:
                        fill = builder.chunk_means(ch)
                        if init_labels is not None:
                            if init_labels.size < s:
                                raise ValueError(f"init labels must have length >= {s}")
                            lab[:] = init_labels[:s]
                            mode = START_FROM_LABELS
                        elif U0 is None and isinstance(init, str) and init == "k-means++":
                            U[:] = _kmeanspp(ch, builder, c, fill, rng)
                        elif U0 is None:
                            lab[:] = rng.permutation(np.arange(s) % c)
                            mode = START_FROM_LABELS
                else:
                    if start + s > labels_all.size:
                        raise ValueError("the chunk stream X_list yielded more rows in pass "
                                         f"{p + 1} than in pass 1 ({labels_all.size})")
                    lab[:] = labels_all[start:start + s]
                    mode = REPLACE_PREVIOUS
                loss, it, conv = stream_chunk_iterate(
                    ch.dense, ch.sparse, ch.W, view_ptr, Statistics(R, T, U), lab, mode, fill,
                    alpha, max_iter, tol)
                if labels_all is not None:
                    labels_all[start:start + s] = lab
                else:
                    label_parts.append(lab)
                losses.append(loss)
                iters.append(it)
                convs.append(conv)
                if callback is not None:
                    callback(k_total, {"pass": p, "chunk": t, "start": start, "stop": start + s,
                                       "loss": loss, "n_iter": it, "labels": lab.copy(),
                                       "U": user_U()})
                k_total += 1
            if labels_all is None:
                labels_all = (np.concatenate(label_parts) if label_parts
                              else np.zeros(0, np.int64))
                label_parts = []
                n = labels_all.size
                if n < c:
                    raise ValueError(f"n_clusters={c} exceeds the number of samples ({n})")
            elif p > 0 and source.n is not None and source.n != labels_all.size:
                raise ValueError(f"the chunk stream X_list yielded {source.n} rows in pass "
                                 f"{p + 1}, {labels_all.size} in pass 1")
            if chunk_loss and len(losses) != len(chunk_loss[0]):
                raise ValueError("the chunk stream X_list changed its length between passes")
            chunk_loss.append(losses)
            n_iter_all.append(iters)
            conv_all.append(convs)
            pass_loss.append(loss)
            if verbose:
                print(f"opimc pass {p + 1}/{n_passes}: loss {loss:.6g}, "
                      f"{len(losses)} chunks, {sum(iters)} inner iterations, "
                      f"{time.perf_counter() - t0:.3f} s")

    return OPIMCResult(
        labels=labels_all,
        U=user_U(),
        loss=np.asarray(pass_loss, dtype=np.float64),
        chunk_loss=np.asarray(chunk_loss, dtype=np.float64),
        n_iter=np.asarray(n_iter_all, dtype=np.int64),
        n_passes=n_passes,
        converged=bool(all(conv_all[-1])),
    )
