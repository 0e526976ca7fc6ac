"""Kernels for dense affinity / transition matrices built from a Gram matrix.

The Gram matrix ``X Xᵀ`` itself is one BLAS call in the caller; these kernels turn it, in
place, into squared distances and then into a row-stochastic Gaussian transition matrix, so
the ``n × n`` output is the only ``n × n`` array alive (docs/algorithms.md §6). All of them
are memory-bound: the bytes they move are stated below.

The three kernels every transition matrix needs are serial: each runs once per view, in
milliseconds below n ≈ 2000 (n = 8000: a fraction of a second, against minutes for the
solver that uses the matrix), while a ``parallel=True`` kernel costs about a second more to
compile on a solver's first call.
"""
import numpy as np
from numba import njit, prange

from ._checks import in_range
from ._options import PARALLEL, SERIAL


@njit(**SERIAL)
def gram_to_sq_distances(G, sq_norms):
    """Overwrite a Gram matrix with squared Euclidean distances, in place.

    Parameters
    ----------
    G : ndarray, shape (n, n)
        ``X Xᵀ``; only the upper triangle (``j >= i``) is read, as BLAS ``syrk`` fills it.
    sq_norms : ndarray, shape (n,)
        ``‖x_i‖²``.

    Returns
    -------
    G : ndarray, shape (n, n)
        The same array, now ``‖x_i − x_j‖²`` (symmetric, clipped at 0, exactly 0 on the
        diagonal).

    Notes
    -----
    O(n²) time (3 flops per pair), serial; reads the upper triangle and writes both (about
    1.5 · n² · itemsize bytes). Row ``i`` writes column ``i`` below the diagonal from its own
    upper-triangle entries.

    Cost: moves ``1.5 n² b`` bytes (``b`` the itemsize: the upper triangle read, both triangles
    written) and does ``1.5 n²`` flops; memory-bound.
    """
    if G.shape[0] != G.shape[1] or sq_norms.shape[0] != G.shape[0]:
        raise ValueError("gram_to_sq_distances: G must be square n x n and sq_norms of length n")
    n = G.shape[0]
    for i in range(n):
        G[i, i] = 0.0
        for j in range(i + 1, n):
            d = sq_norms[i] + sq_norms[j] - 2.0 * G[i, j]
            if d < 0.0:
                d = 0.0
            G[i, j] = d
            G[j, i] = d
    return G


@njit(**SERIAL)
def strict_upper_triangle(A):
    """The entries ``A[i, j]`` with ``j > i``, row by row, as a flat array.

    Parameters
    ----------
    A : ndarray, shape (n, n)

    Returns
    -------
    ndarray, shape (n (n − 1) / 2,)

    Notes
    -----
    Moves n² · itemsize bytes (half read, half written), no flops; serial. Avoids
    ``np.triu_indices``, whose two index arrays take 8× the memory of the result.

    Cost: moves ``n² b`` bytes (``n²/2`` entries read, ``n²/2`` written), no flops;
    memory-bound.
    """
    if A.shape[0] != A.shape[1]:
        raise ValueError("strict_upper_triangle: A must be square")
    n = A.shape[0]
    out = np.empty(n * (n - 1) // 2, A.dtype)
    for i in range(n):
        start = i * n - (i * (i + 1)) // 2
        for j in range(i + 1, n):
            out[start + j - i - 1] = A[i, j]
    return out


@njit(**SERIAL)
def gaussian_transition_rows(D2, inv_two_sigma_sq):
    """Overwrite squared distances with a row-stochastic Gaussian transition matrix.

    Parameters
    ----------
    D2 : ndarray, shape (n, m)
        Squared distances; entries equal to ``+inf`` become exact zeros (used for
        sparsified neighbourhoods).
    inv_two_sigma_sq : float
        ``1 / (2 σ²)``.

    Returns
    -------
    D2 : ndarray, shape (n, m)
        The same array holding ``exp(−D2 / (2σ²))`` with every row divided by its sum.

    Notes
    -----
    O(n m): one ``exp`` and about 4 flops per entry, three passes over each row (in cache
    for rows up to ~10⁵ entries: 2 · n m · itemsize bytes from memory); serial.
    The exponent is shifted by the row's smallest distance
    before ``exp`` (a factor that cancels in the normalisation) so that no row underflows
    to all zeros when ``σ`` is small; a row with no finite entry gets 1 on its own column.

    Cost: moves ``2 n m b`` bytes (``b`` the itemsize; the row's second and third passes hit
    the cache) and does ``n m`` exponentials plus ``~5 n m`` flops; bound by ``exp``, not by
    memory.
    """
    n, m = D2.shape
    for i in range(n):
        dmin = np.inf
        for j in range(m):
            if D2[i, j] < dmin:
                dmin = D2[i, j]
        if not np.isfinite(dmin):
            for j in range(m):
                D2[i, j] = 0.0
            if i < m:
                D2[i, i] = 1.0
            continue
        s = 0.0
        for j in range(m):
            e = np.exp(-(D2[i, j] - dmin) * inv_two_sigma_sq)
            D2[i, j] = e
            s += e
        inv = 1.0 / s
        for j in range(m):
            D2[i, j] *= inv
    return D2


@njit(**PARALLEL)
def keep_nearest_neighbors(D2, n_neighbors):
    """Set all but each row's ``n_neighbors`` smallest off-diagonal distances to ``+inf``.

    Parameters
    ----------
    D2 : ndarray, shape (n, n)
        Squared distances (modified in place).
    n_neighbors : int
        Neighbours kept per row, besides the sample itself (the diagonal is kept).

    Returns
    -------
    keep : ndarray of bool, shape (n, n)
        ``True`` where an entry was kept (to be symmetrised by the caller).

    Notes
    -----
    Ties at the threshold are broken by column index. O(n² log n) worst case (a partial sort
    per row), parallel over rows.

    Cost: reads ``n² b`` bytes and writes ``n²`` bytes (the boolean mask); ``O(n² log n)``
    comparisons at worst (a partial sort per row).
    """
    if D2.shape[0] != D2.shape[1]:
        raise ValueError("keep_nearest_neighbors: D2 must be square")
    n = D2.shape[0]
    keep = np.zeros((n, n), np.bool_)
    for i in prange(n):
        row = D2[i].copy()
        row[i] = np.inf
        order = np.argsort(row, kind="mergesort")
        keep[i, i] = True
        for t in range(min(n_neighbors, n - 1)):
            keep[i, order[t]] = True
    return keep


@njit(**SERIAL)
def nearest_neighbors_rows(D2, n_neighbors):
    """Each row's ``n_neighbors`` smallest off-diagonal squared distances and their columns.

    Parameters
    ----------
    D2 : ndarray, shape (n, n)
        Squared distances (not modified).
    n_neighbors : int
        Neighbours per row, ``1 <= n_neighbors <= n − 1``.

    Returns
    -------
    index : ndarray of int64, shape (n, n_neighbors)
        Columns of the neighbours, nearest first (ties broken by column index).
    sq_dist : ndarray, shape (n, n_neighbors)
        Their squared distances.

    Notes
    -----
    Serial. Per row a bounded max-heap of the ``n_neighbors`` smallest (distance, column)
    pairs, then a heap sort of them: the same neighbours, in the same order, as a stable sort
    of the row with its diagonal set to ``inf``. (``np.argsort(kind="mergesort")`` did this before;
    its compilation cost a solver's cold first call about a second.) Cost: reads ``n² b`` bytes,
    ``O(n² log k)`` comparisons at worst; writes ``O(n · n_neighbors)``: the only memory
    beyond ``D2``.
    """
    n = D2.shape[0]
    if D2.shape[1] != n or n_neighbors < 1 or n_neighbors > n - 1:
        raise ValueError("nearest_neighbors_rows: D2 must be square n x n and "
                         "1 <= n_neighbors <= n - 1")
    k = n_neighbors
    index = np.empty((n, k), np.int64)
    sq_dist = np.empty((n, k), D2.dtype)
    for i in range(n):
        val, idx = sq_dist[i], index[i]
        size = 0
        for j in range(n):
            # the diagonal as an infinite distance (what the stable sort saw)
            x = D2[i, j] if j != i else np.inf
            if size < k:
                # sift up: columns arrive in increasing order, so (x, j) ranks above a
                # pair of equal distance
                p = size
                size += 1
                while p > 0:
                    parent = (p - 1) // 2
                    if x < val[parent]:
                        break
                    val[p], idx[p] = val[parent], idx[parent]
                    p = parent
                val[p], idx[p] = x, j
            elif x < val[0]:
                _sift_down(val, idx, x, j, k)
        # heap sort: the largest (distance, column) pair goes last
        for last in range(k - 1, 0, -1):
            x, j = val[last], idx[last]
            val[last], idx[last] = val[0], idx[0]
            _sift_down(val, idx, x, j, last)
    return index, sq_dist


@njit(**SERIAL)
def _sift_down(val, idx, x, j, size):
    """Put the pair ``(x, j)`` at the root of the max-heap ``val[:size]``, ``idx[:size]``
    (ordered by distance, then column) and sift it down."""
    p = 0
    while True:
        child = 2 * p + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (val[right] > val[child] or (
                val[right] == val[child] and idx[right] > idx[child])):
            child = right
        if val[child] > x or (val[child] == x and idx[child] > j):
            val[p], idx[p] = val[child], idx[child]
            p = child
        else:
            break
    val[p], idx[p] = x, j


@njit(**SERIAL)
def local_scaling_transition_rows(out, index, sq_dist, sigma, mutual=False):
    """Overwrite ``out`` with the row-stochastic locally scaled kNN transition matrix.

    ``W[i, j] = exp(−‖x_i − x_j‖² / (σ_i σ_j))`` for ``j`` among the neighbours of ``i`` or
    ``i`` among those of ``j`` (the symmetrised kNN graph), ``W[i, i] = 1``, 0 elsewhere;
    then every row is divided by its sum.

    Parameters
    ----------
    out : ndarray, shape (n, n)
        Overwritten (its content is not read).
    index, sq_dist : ndarray, shape (n, k)
        From :func:`nearest_neighbors_rows`.
    sigma : ndarray, shape (n,)
        Local widths ``σ_i > 0``.
    mutual : bool, default False
        Keep only the pairs that are neighbours both ways.

    Returns
    -------
    out : ndarray, shape (n, n)

    Notes
    -----
    Serial. Cost: writes ``n² b`` bytes (zeroing) and ``2 n k`` entries, ``n k`` exponentials,
    then one pass over each row for its sum (``2 n² b`` bytes), with ``mutual`` one more
    pass over the pairs; memory-bound.
    """
    n, k = index.shape
    if out.shape[0] != n or out.shape[1] != n or sq_dist.shape[0] != n \
            or sq_dist.shape[1] != k or sigma.shape[0] != n or not in_range(index, 0, n):
        raise ValueError("local_scaling_transition_rows: out must be n x n, sq_dist the shape "
                         "of index, sigma of length n and index in [0, n)")
    out[:] = 0.0
    for i in range(n):
        out[i, i] = 1.0
        for t in range(k):
            j = index[i, t]
            w = np.exp(-sq_dist[i, t] / (sigma[i] * sigma[j]))
            out[i, j] = w
            if not mutual:
                out[j, i] = w
    if mutual:
        # each direction was written once; a pair is kept only when both were written
        # (a weight that underflowed to 0 counts as not kept either way)
        for i in range(n):
            for j in range(i + 1, n):
                # min() as a conditional: Numba compiles min once per argument types
                w = out[i, j] if out[i, j] < out[j, i] else out[j, i]
                out[i, j] = w
                out[j, i] = w
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += out[i, j]
        inv = 1.0 / s
        for j in range(n):
            out[i, j] *= inv
    return out
