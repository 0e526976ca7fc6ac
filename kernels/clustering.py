"""Kernels for k-means (docs/algorithms.md §6): the Lloyd step (one parallel pass over the
samples, with a serial counterpart) and the k-means++ candidate evaluation (one serial
pass), dense or CSR.

A Lloyd step runs serially when a thread pool cannot speed it up: small steps, and every
step of a restart that runs on its own thread (several restarts run one per thread), which
is most calls. The serial kernels run the same parts in the same order, so they give the
same result bit for bit, and a call that uses only them never compiles a ``parallel=True``
kernel (more than a second each on a solver's first call).

Every kernel splits the samples into a fixed number of contiguous parts (``n_parts``, chosen by
the caller from the shapes alone), accumulates per part and adds the parts in part order, so
the result does not depend on the number of threads. Inside a dense part the inner products
``X Cᵀ`` are BLAS GEMMs on blocks of :data:`CHUNK_ROWS` rows (``np.dot`` compiles to a BLAS
call), whose results are consumed while they are in cache: the argmin, the distances and the
per-cluster sums are fused around each block, so no ``n × c`` array is ever formed. All
arithmetic is float64 (see :func:`fastmv.kmeans`).
"""
import numpy as np
from numba import njit, prange

from ._checks import valid_csr
from ._compile import inlining, serial_copy
from ._options import PARALLEL, SERIAL
from ._partition import part_bounds, sum_parts

#: Rows per GEMM block inside a part: the block of ``X`` (and its ``CHUNK_ROWS × c`` inner
#: products) stays in L2 while it is consumed; 256 is also scikit-learn's chunk size.
CHUNK_ROWS = 256


# The serial kernels clip with conditional expressions, not ``min`` and ``max``: Numba compiles
# each of those once per argument types and per caller's options, a compilation apiece on a
# solver's first call. ``v if v > 0.0 else 0.0`` is ``max(0.0, v)``, NaN included.
@njit(**SERIAL, inline="always")
def _clip_parts(n_parts, n):
    """``max(1, min(n_parts, n))``."""
    p = n_parts if n_parts < n else n
    return p if p > 1 else 1


@njit(**SERIAL)
def _sq_norms(A):
    n, d = A.shape
    out = np.empty(n, np.float64)
    for i in range(n):
        s = 0.0
        for j in range(d):
            s += A[i, j] * A[i, j]
        out[i] = s
    return out


@njit(**SERIAL)
def _add_parts(partial, partial_counts, sums, counts):
    """``sums`` and ``counts``: the per-part accumulators (part ``p``'s in rows
    ``[p c, (p + 1) c)``) added in part order."""
    c, d = sums.shape
    sums[:] = 0.0
    counts[:] = 0
    for p in range(partial.shape[0] // c if c > 0 else 0):   # the parts
        for k in range(c):
            counts[k] += partial_counts[p * c + k]
            for j in range(d):
                sums[k, j] += partial[p * c + k, j]


@njit(**PARALLEL)
def nearest_center(inner, x_sq_norms, c_sq_norms):
    """Nearest center of every sample from precomputed inner products (for callers that
    already hold ``X Cᵀ``; k-means itself uses :func:`lloyd_step`).

    Parameters
    ----------
    inner : ndarray, shape (n, c)
        ``X @ C.T``.
    x_sq_norms : ndarray, shape (n,)
        ``‖x_i‖²``.
    c_sq_norms : ndarray, shape (c,)
        ``‖c_k‖²``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        ``argmin_k ‖x_i − c_k‖²`` (the first minimiser on ties).
    sq_dist : ndarray, shape (n,)
        ``min_k ‖x_i − c_k‖²``, clipped at 0.

    Notes
    -----
    3 n c flops; reads ``inner`` once (n c · itemsize bytes); parallel over samples (each
    sample's answer is computed by one thread, so the result does not depend on threads).

    Cost: reads ``(n c + 2 n + c) b`` bytes (``b`` the itemsize) and writes ``16 n``; ``3 n c``
    flops; memory-bound.
    """
    if x_sq_norms.shape[0] != inner.shape[0] or c_sq_norms.shape[0] != inner.shape[1]:
        raise ValueError("nearest_center: x_sq_norms must have n entries and c_sq_norms c")
    n, c = inner.shape
    labels = np.empty(n, np.int64)
    sq_dist = np.empty(n, inner.dtype)
    for i in prange(n):
        best = np.inf
        arg = 0
        for k in range(c):
            v = c_sq_norms[k] - 2.0 * inner[i, k]
            if v < best:
                best = v
                arg = k
        labels[i] = arg
        v = best + x_sq_norms[i]
        sq_dist[i] = v if v > 0.0 else 0.0
    return labels, sq_dist


@njit(**SERIAL)
def _nearest_in_block(inner, c_sq, best, arg):
    """Nearest center of each of the ``m`` samples of a block from ``inner[k, r]`` =
    ``−2 c_k·x_r``: ``arg[r]`` (first minimiser on ties) and ``best[r] = ‖c‖² − 2 x·c``.
    The loop runs over samples innermost, so the compare-and-select vectorises."""
    c, m = inner.shape
    for r in range(m):
        best[r] = inner[0, r] + c_sq[0]
        arg[r] = 0
    for k in range(1, c):
        ck = c_sq[k]
        for r in range(m):
            v = inner[k, r] + ck
            closer = v < best[r]
            best[r] = v if closer else best[r]
            arg[r] = k if closer else arg[r]


# The Lloyd steps allocate their arrays themselves and their helpers write into them:
# Numba copies every array a helper returns, or a tuple of them, through several variables
# (a reference count each, the whole array descriptor unpacked): for a kernel this small, a
# large share of its compiled code (docs/records/perf.md, "Cold first call").


@njit(**SERIAL)
def _center_terms(centers, C2, c_sq):
    """``C2 = −2 C`` and ``c_sq[k] = ‖c_k‖²``, written into the arrays given. A serial
    helper: ``-2.0 * centers`` written inside a ``parallel=True`` kernel is a parfor of its
    own, which costs compilation time and nothing else."""
    c, d = centers.shape
    for k in range(c):
        s = 0.0
        for j in range(d):
            C2[k, j] = -2.0 * centers[k, j]
            s += centers[k, j] * centers[k, j]
        c_sq[k] = s


@njit(**SERIAL)
def _clear(partial, partial_counts):
    """Zero the per-part accumulators (a serial helper, as :func:`_center_terms`)."""
    partial[:] = 0.0
    partial_counts[:] = 0


@njit(**SERIAL)
def _lloyd_part(X, C2, c_sq, x_sq_norms, bounds, p, labels, sq_dist, sums, counts):
    """:func:`lloyd_step` on part ``p``, the rows ``[bounds[p], bounds[p + 1])``: labels and
    distances written, the rows added into the part's rows ``[p c, (p + 1) c)`` of ``sums``
    and ``counts``. The whole body of the parallel loop is this one call, so the parfor's own
    compilation handles a single call; it takes the whole arrays, not the part's slices,
    because every slice handed on is an array for Numba to reference-count, in every caller."""
    c, d = C2.shape
    lo = bounds[p]
    hi = bounds[p + 1]
    first = p * c
    full = np.empty((c, CHUNK_ROWS), np.float64)
    best = np.empty(CHUNK_ROWS, np.float64)
    arg = np.empty(CHUNK_ROWS, np.int64)
    for start in range(lo, hi, CHUNK_ROWS):
        stop = start + CHUNK_ROWS if start + CHUNK_ROWS < hi else hi
        m = stop - start
        # the part's last block gets its own buffer: a reshaped view of one buffer would
        # compile Numba's reshape on every first call
        inner = full if m == CHUNK_ROWS else np.empty((c, m), np.float64)
        np.dot(C2, X[start:stop].T, inner)
        _nearest_in_block(inner, c_sq, best, arg)
        for r in range(m):
            i = start + r
            k = arg[r]
            labels[i] = k
            v = best[r] + x_sq_norms[i]
            sq_dist[i] = v if v > 0.0 else 0.0
            counts[first + k] += 1
            for j in range(d):
                sums[first + k, j] += X[i, j]


@njit(**PARALLEL)
def lloyd_step(X, centers, x_sq_norms, n_parts):
    """One Lloyd step on dense data: nearest centers, their distances and the per-cluster sums.

    Parameters
    ----------
    X : ndarray of float64, shape (n, d), C-contiguous
    centers : ndarray of float64, shape (c, d)
    x_sq_norms : ndarray of float64, shape (n,)
        ``‖x_i‖²``, computed once per k-means call.
    n_parts : int
        Number of contiguous row parts accumulated separately (fixed by the caller from the
        shapes, never from the thread count).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        ``argmin_k ‖x_i − c_k‖²`` (the first minimiser on ties).
    sq_dist : ndarray of float64, shape (n,)
        ``min_k ‖x_i − c_k‖²`` from the expansion ``‖x‖² + ‖c‖² − 2 x·c``, clipped at 0.
    sums : ndarray of float64, shape (c, d)
        ``Σ_{i: labels[i] = k} x_i``.
    counts : ndarray of int64, shape (c,)

    Notes
    -----
    2 n d c flops, all in BLAS GEMMs ``(−2C) X_blockᵀ`` of ``c × d × CHUNK_ROWS``; reads ``X``
    once from memory (8 n d bytes; the block is read again for the sums while in cache) and
    writes 16 n bytes. Memory O(n_parts · c · d) for the per-part sums; parallel over parts.

    Cost: reads ``8 (n d + n)`` bytes (``X`` once, its squared norms) and writes ``16 n``;
    ``2 n d c`` flops in GEMMs plus ``n d`` for the sums and ``3 n c`` for the argmin:
    GEMM-bound for ``c`` beyond a few.
    """
    if centers.shape[1] != X.shape[1] or x_sq_norms.shape[0] != X.shape[0]:
        raise ValueError("lloyd_step: centers must have d columns and x_sq_norms n entries")
    n = X.shape[0]
    c, d = centers.shape
    parts = _clip_parts(n_parts, n)
    C2 = np.empty((c, d), np.float64)
    c_sq = np.empty(c, np.float64)
    _center_terms(centers, C2, c_sq)
    bounds = part_bounds(n, parts)
    labels = np.empty(n, np.int64)
    sq_dist = np.empty(n, np.float64)
    # one row of sums and one count per (part, cluster): 2-d and 1-d, the shapes of every
    # other allocation here (each new rank and dtype is a compilation of np.empty)
    partial = np.empty((parts * c, d), np.float64)
    partial_counts = np.empty(parts * c, np.int64)
    _clear(partial, partial_counts)
    for p in prange(parts):
        _lloyd_part(X, C2, c_sq, x_sq_norms, bounds, p, labels, sq_dist, partial,
                    partial_counts)
    sums = np.empty((c, d), np.float64)
    counts = np.empty(c, np.int64)
    _add_parts(partial, partial_counts, sums, counts)
    return labels, sq_dist, sums, counts


@njit(**SERIAL)
def _csr_row_times(data, indices, start, stop, BT, out):
    """``out = row · BT`` for the CSR row stored at ``data[start:stop]``, ``indices[start:stop]``
    (``BT``: ``d × k``, C-contiguous, so each stored entry reads one contiguous row)."""
    out[:] = 0.0
    for q in range(start, stop):
        v = data[q]
        row = BT[indices[q]]
        for k in range(out.shape[0]):
            out[k] += v * row[k]


@njit(**PARALLEL)
def lloyd_step_csr(data, indices, indptr, centers, x_sq_norms, n_parts):
    """One Lloyd step on a CSR matrix (the same outputs as :func:`lloyd_step`).

    Parameters
    ----------
    data, indices, indptr : ndarrays
        The CSR arrays of an ``(n, d)`` matrix (float64 data, valid and canonical).
    centers : ndarray of float64, shape (c, d)
    x_sq_norms : ndarray of float64, shape (n,)
    n_parts : int
        Number of contiguous row parts (see :func:`lloyd_step`).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
    sq_dist : ndarray of float64, shape (n,)
    sums : ndarray of float64, shape (c, d)
    counts : ndarray of int64, shape (c,)

    Notes
    -----
    O(nnz · c) flops: each stored entry updates the ``c`` inner products of its row from the
    contiguous row of ``Cᵀ`` for its column. Reads the CSR arrays once; memory
    O(n_parts · c · d), parallel over parts.

    Cost: reads ``12 nnz + 16 n`` bytes (the CSR arrays, norms) and writes ``16 n``;
    ``2 nnz c + nnz + 3 n c`` flops; the rows of ``Cᵀ`` it gathers stay in cache while
    ``8 d c`` bytes fit there.
    """
    if not valid_csr(indptr, indices, data, x_sq_norms.shape[0], centers.shape[1]):
        raise ValueError("lloyd_step_csr: indptr must have n + 1 non-decreasing entries up to "
                         "nnz and indices lie in [0, d) (n = len(x_sq_norms), "
                         "d = centers' columns)")
    n = indptr.shape[0] - 1
    c, d = centers.shape
    parts = _clip_parts(n_parts, n)
    CT = _transposed(centers)
    c_sq = _sq_norms(centers)
    bounds = part_bounds(n, parts)
    labels = np.empty(n, np.int64)
    sq_dist = np.empty(n, np.float64)
    # one row of sums and one count per (part, cluster): 2-d and 1-d, the shapes of every
    # other allocation here (each new rank and dtype is a compilation of np.empty)
    partial = np.empty((parts * c, d), np.float64)
    partial_counts = np.empty(parts * c, np.int64)
    _clear(partial, partial_counts)
    for p in prange(parts):
        _lloyd_csr_part(data, indices, indptr, CT, c_sq, x_sq_norms, bounds, p, labels,
                        sq_dist, partial, partial_counts)
    sums = np.empty((c, d), np.float64)
    counts = np.empty(c, np.int64)
    _add_parts(partial, partial_counts, sums, counts)
    return labels, sq_dist, sums, counts


@njit(**SERIAL)
def _transposed(centers):
    """``Cᵀ``, C-contiguous (a serial helper, as :func:`_center_terms`)."""
    return np.ascontiguousarray(centers.T)


@njit(**SERIAL)
def _lloyd_csr_part(data, indices, indptr, CT, c_sq, x_sq_norms, bounds, p, labels, sq_dist,
                    sums, counts):
    """:func:`lloyd_step_csr` on part ``p`` (see :func:`_lloyd_part`)."""
    c = CT.shape[1]
    first = p * c
    inner = np.empty(c, np.float64)
    for i in range(bounds[p], bounds[p + 1]):
        _csr_row_times(data, indices, indptr[i], indptr[i + 1], CT, inner)
        arg = 0
        best = c_sq[0] - 2.0 * inner[0]
        for k in range(1, c):
            v = c_sq[k] - 2.0 * inner[k]
            if v < best:
                best = v
                arg = k
        labels[i] = arg
        best += x_sq_norms[i]
        sq_dist[i] = best if best > 0.0 else 0.0
        counts[first + arg] += 1
        for q in range(indptr[i], indptr[i + 1]):
            sums[first + arg, indices[q]] += data[q]


#: :func:`lloyd_step` on the calling thread, bit for bit (see the module docstring); its
#: helpers compiled into it, not apart (see ``serial_copy``).
lloyd_step_serial = njit(**SERIAL)(serial_copy(
    lloyd_step, "lloyd_step_serial",
    "One Lloyd step on the calling thread (``lloyd_step`` compiled serially: the same parts "
    "in the same order, the same result bit for bit).",
    inline=(_center_terms, part_bounds, _clear, _lloyd_part, _nearest_in_block,
            _add_parts)))

#: :func:`lloyd_step_csr` on the calling thread, bit for bit.
lloyd_step_csr_serial = njit(**SERIAL)(serial_copy(
    lloyd_step_csr, "lloyd_step_csr_serial",
    "One CSR Lloyd step on the calling thread (``lloyd_step_csr`` compiled serially: the "
    "same parts in the same order, the same result bit for bit).",
    inline=(_transposed, _sq_norms, part_bounds, _clear, _lloyd_csr_part, _csr_row_times,
            _add_parts)))


@njit(**SERIAL)
def _seed_distances_row(x_sq, y_sq, inner, closest, dist_col, partial_row):
    """Squared distances of one sample to the candidates (clipped at 0 and at its current
    closest distance, as D² sampling needs), added into its part's potentials."""
    for q in range(y_sq.shape[0]):
        v = x_sq + y_sq[q] - 2.0 * inner[q]
        v = v if v > 0.0 else 0.0
        v = v if v < closest else closest
        dist_col[q] = v
        partial_row[q] += v


def seeding_distances(X, candidates, x_sq_norms, closest, n_parts):
    """k-means++ candidates: each sample's squared distance to its nearest center if the
    candidate were added, and the resulting potential of every candidate.

    Parameters
    ----------
    X : ndarray of float64, shape (n, d), C-contiguous
    candidates : ndarray of float64, shape (t, d)
        Candidate centers (rows of ``X``).
    x_sq_norms : ndarray of float64, shape (n,)
    closest : ndarray of float64, shape (n,)
        Squared distance of every sample to its nearest chosen center (``inf`` before the
        first).
    n_parts : int
        Number of contiguous row parts (see :func:`lloyd_step`).

    Returns
    -------
    dist : ndarray of float64, shape (t, n)
        ``min(closest_i, ‖x_i − y_q‖²)`` for candidate ``q`` (the distance clipped at 0).
    potential : ndarray of float64, shape (t,)
        ``Σ_i dist[q, i]``, summed per part and the parts in order.

    Notes
    -----
    O(n d t) flops in BLAS GEMMs ``Y X_blockᵀ`` of ``t × d × CHUNK_ROWS``; reads ``X`` once, writes
    8 n t bytes. Serial (the parts in turn, summed as in the parallel kernels): a whole
    seeding evaluates ``2 + log k`` candidates per center, about as much work as that many
    Lloyd steps, and restarts already run one per thread; a ``parallel=True`` kernel would
    add more than a second to the first call's compilation.

    Cost: reads ``8 (n d + 2 n)`` bytes and writes ``8 n t``; ``2 n d t`` flops in GEMMs plus
    ``~4 n t``.
    """
    if (candidates.shape[1] != X.shape[1] or x_sq_norms.shape[0] != X.shape[0]
            or closest.shape[0] != X.shape[0]):
        raise ValueError("seeding_distances: candidates must have d columns, x_sq_norms and "
                         "closest n entries")
    n = X.shape[0]
    t = candidates.shape[0]
    y_sq = _sq_norms(candidates)
    n_parts = _clip_parts(n_parts, n)
    bounds = part_bounds(n, n_parts)
    dist = np.empty((t, n), np.float64)
    partial = np.empty((n_parts, t), np.float64)
    partial[:] = 0.0
    # the products of a block as ``Y X_blockᵀ`` (t × rows), the orientation of the Lloyd
    # step's GEMM: one compiled ``np.dot`` for both, and ``dist`` written along its rows
    full = np.empty((t, CHUNK_ROWS), np.float64)
    for p in range(n_parts):
        for start in range(bounds[p], bounds[p + 1], CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            stop = stop if stop < bounds[p + 1] else bounds[p + 1]
            m = stop - start
            inner = full if m == CHUNK_ROWS else np.empty((t, m), np.float64)
            np.dot(candidates, X[start:stop].T, inner)
            # each sample's distance, clipped at 0 and at its current closest distance as D²
            # sampling needs, added into the candidate's potential in sample order; written
            # here, not in a helper: every slice handed to a helper is one more array that
            # Numba reference-counts, compiled code for nothing
            for q in range(t):
                y = y_sq[q]
                potential = partial[p, q]
                for r in range(m):
                    i = start + r
                    v = x_sq_norms[i] + y - 2.0 * inner[q, r]
                    v = v if v > 0.0 else 0.0
                    v = v if v < closest[i] else closest[i]
                    dist[q, i] = v
                    potential += v
                partial[p, q] = potential
    return dist, sum_parts(partial)


#: compiled with its helpers inside it (``inlining``: one compilation on a first call)
seeding_distances = njit(**SERIAL)(inlining(
    seeding_distances, (_sq_norms, part_bounds, sum_parts)))


def seeding_distances_csr(data, indices, indptr, candidates, x_sq_norms, closest, n_parts):
    """:func:`seeding_distances` for a CSR matrix.

    Parameters
    ----------
    data, indices, indptr : ndarrays
        The CSR arrays of an ``(n, d)`` matrix (float64 data).
    candidates : ndarray of float64, shape (t, d)
    x_sq_norms : ndarray of float64, shape (n,)
    closest : ndarray of float64, shape (n,)
    n_parts : int

    Returns
    -------
    dist : ndarray of float64, shape (t, n)
    potential : ndarray of float64, shape (t,)

    Notes
    -----
    O(nnz · t) flops, reads the CSR arrays once, writes 8 n t bytes; serial, as
    :func:`seeding_distances`.

    Cost: reads ``12 nnz + 16 n`` bytes and writes ``8 n t``; ``2 nnz t + 4 n t`` flops.
    """
    if (closest.shape[0] != x_sq_norms.shape[0]
            or not valid_csr(indptr, indices, data, x_sq_norms.shape[0], candidates.shape[1])):
        raise ValueError("seeding_distances_csr: indptr must have n + 1 non-decreasing entries up "
                         "to nnz, indices lie in [0, d), closest have n entries")
    n = indptr.shape[0] - 1
    t = candidates.shape[0]
    YT = np.ascontiguousarray(candidates.T)
    y_sq = _sq_norms(candidates)
    n_parts = _clip_parts(n_parts, n)
    bounds = part_bounds(n, n_parts)
    dist = np.empty((t, n), np.float64)
    partial = np.empty((n_parts, t), np.float64)
    partial[:] = 0.0
    for p in range(n_parts):
        inner = np.empty(t, np.float64)
        for i in range(bounds[p], bounds[p + 1]):
            _csr_row_times(data, indices, indptr[i], indptr[i + 1], YT, inner)
            _seed_distances_row(x_sq_norms[i], y_sq, inner, closest[i], dist[:, i], partial[p])
    return dist, sum_parts(partial)


#: compiled with its helpers inside it, as :func:`seeding_distances`
seeding_distances_csr = njit(**SERIAL)(inlining(
    seeding_distances_csr,
    (_sq_norms, _csr_row_times, part_bounds, _seed_distances_row, sum_parts)))
