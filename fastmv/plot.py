"""Pictures of a clustering: convergence, MVFL view/feature weights, contingency table,
2-D spectral embedding.

Every function draws on ``ax`` (a new figure when None) and returns the matplotlib ``Axes``
(``ax.figure`` is the Figure). matplotlib is imported on first use; install it with
``pip install "fastmv[plot]"``.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import numpy as np
>>> from fastmv import plot
>>> ax = plot.contingency(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]))
>>> ax.get_xlabel()
'predicted cluster (matched to the classes)'
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from . import metrics
from ._blocks._affinity import transition_matrices
from .exceptions import InvalidParameterError

__all__ = ["contingency", "convergence", "embedding", "feature_weights", "view_weights"]


def _pyplot():
    # matplotlib is optional (the "plot" extra) and slow to import: import it on first use.
    try:
        import matplotlib.pyplot as plt  # noqa: PLC0415 (optional dependency, slow import)
    except ImportError as exc:
        raise ImportError("fastmv.plot needs matplotlib, which is not installed; install the "
                          "'plot' extra: pip install \"fastmv[plot]\"") from exc
    return plt


def _axes(ax, figsize=(6.0, 4.5)):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _integer_ticks(axis):
    """Ticks at whole numbers only (iterations, passes and chunks are counts)."""
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 (matplotlib: on first use)

    axis.set_major_locator(MaxNLocator(integer=True))


def _plain_formatter():
    """Tick labels that show the values, without an offset or a shared exponent."""
    from matplotlib.ticker import ScalarFormatter  # noqa: PLC0415

    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    return fmt


def convergence(result: Any, ax: Any = None) -> Any:
    """Objective per iteration of a solver's result, and its relative change (log scale).

    A result that records the residual its stop test reads (EMVC's primal residual) shows
    that instead of the relative change. EMVC's objective ``‖Q‖_* + error terms`` is the
    model's objective at a point that does not meet the constraints yet: while the penalty
    ``μ`` is small the singular value threshold ``1/μ`` removes every singular value, so
    ``Q = 0`` and the objective is the error terms alone (about 1e-12); it jumps to the
    size of ``‖Q‖_*`` (tens to hundreds) at the iteration where ``Q`` gets its first
    singular values, then decreases while the residual falls. Those first iterations are
    shaded and labelled on the picture.

    Parameters
    ----------
    result : result object of a fastmv solver
        Anything with an ``objective`` array (one entry per iteration); ``converged`` is shown
        in the legend when present; ``residual`` (one per iteration) replaces the relative
        change; ``rank`` (of ``Q``, one per iteration) marks the iterations with ``Q = 0``.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axes with the objective; the relative change is on a twin axis.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from fastmv.plot import convergence
    >>> ax = convergence(SimpleNamespace(objective=np.array([4.0, 2.0, 1.5, 1.4]),
    ...                                  converged=True))
    >>> len(ax.lines)
    1
    """
    if not hasattr(result, "objective"):
        raise InvalidParameterError(
            f"result must be a fastmv solver's result (with an objective history), got "
            f"{type(result).__name__}")
    obj = np.asarray(result.objective, dtype=np.float64).reshape(-1)
    chunk_loss = getattr(result, "chunk_loss", None)
    if obj.size == 1 and chunk_loss is not None and np.size(chunk_loss) > 1:
        return _one_pass(result, _axes(ax))
    ax = _axes(ax)
    it = np.arange(1, obj.size + 1)
    converged = getattr(result, "converged", None)
    label = "objective" + ("" if converged is None else
                           f" ({'converged' if bool(converged) else 'not converged'})")
    line, = ax.plot(it, obj, "o-", ms=3, color="C0", label=label)
    ax.set_xlabel("pass" if hasattr(result, "chunk_loss") else "iteration")  # OPIMC: passes
    ax.set_ylabel("objective", color="C0")
    _integer_ticks(ax.xaxis)
    if obj.size and np.all(obj > 0) and obj.max() > 100 * obj.min():
        ax.set_yscale("log")  # a large first step would flatten the rest of the curve
    else:  # the values themselves, not "−5.321e3" and offsets from it
        ax.yaxis.set_major_formatter(_plain_formatter())
    handles = [line]
    residual = getattr(result, "residual", None)
    if residual is not None and np.size(residual) == obj.size and obj.size > 1:
        # the quantity the stop test reads (EMVC: the primal residual, compared with tol)
        x, change = it, np.asarray(residual, dtype=np.float64).reshape(-1)
        name = "primal residual (the stop test)"
    elif obj.size > 1:
        prev = np.abs(obj[:-1])
        x = it[1:]
        change = np.abs(np.diff(obj)) / np.where(prev > 0, prev, 1.0)
        name = "relative change"
    else:
        change = np.zeros(0)
    positive = change > 0
    top = ax  # the legend goes on the axes drawn last, so no line crosses it
    if np.any(positive):
        top = ax.twinx()
        h, = top.semilogy(x[positive], change[positive], "s--", ms=3, color="C1", label=name)
        top.set_ylabel(name, color="C1")
        handles.append(h)
    shaded = _mark_empty_low_rank_part(result, obj.size, ax)
    if shaded:  # below the flat residual of the shaded first iterations, above the objective
        top.legend(handles=handles + shaded, loc="upper left", bbox_to_anchor=(0.0, 0.92),
                   fontsize="x-small")
    else:
        top.legend(handles=handles, loc="upper right", fontsize="small")
    ax.set_title(type(result).__name__.replace("Result", "") + " convergence")
    return ax


def _mark_empty_low_rank_part(result, n_iter, ax):
    """Shade the first iterations with ``rank == 0`` (EMVC: ``Q = 0`` while the threshold
    ``1/μ`` exceeds every singular value): there the objective is the error terms alone and
    its later jump is the low-rank part arriving, not the solve going wrong."""
    rank = getattr(result, "rank", None)
    if rank is None or np.size(rank) != n_iter or n_iter == 0:
        return []
    rank = np.asarray(rank).reshape(-1)
    if rank[0] != 0:
        return []
    last = int(np.argmax(rank != 0)) if np.any(rank != 0) else n_iter
    from matplotlib.patches import Patch  # noqa: PLC0415 (matplotlib: on first use)

    ax.axvspan(0.5, last + 0.5, color="0.9", zorder=0)
    text = (f"iterations 1–{last}: Q = 0 (penalty μ still small),\nthe objective is the "
            "error terms alone;\nit jumps when Q gets its first\nsingular values "
            f"(iteration {last + 1})" if last < n_iter else
            "Q = 0 throughout (penalty μ small):\nthe objective is the error terms alone")
    return [Patch(color="0.9", label=text)]


def _one_pass(result, ax):
    """A single streaming pass (OPIMC's default) has no iteration history to converge: draw
    the loss after each chunk per sample streamed so far (a level line: the centres describe
    new chunks as well as the old), and the inner iterations each chunk took (a chunk that
    hits ``max_inner_iter`` did not settle)."""
    loss = np.asarray(result.chunk_loss, dtype=np.float64)
    loss = loss.reshape(-1, loss.shape[-1])[-1]
    chunks = np.arange(1, loss.size + 1)
    n = np.size(getattr(result, "labels", ())) or loss.size
    seen = np.minimum(chunks * -(-n // loss.size), n)  # equal chunks, the last one shorter
    line, = ax.plot(chunks, loss / seen, "o-", ms=3, color="C0",
                    label="loss per sample streamed so far (one pass)")
    ax.set_xlabel("chunk")
    ax.set_ylabel("loss per sample", color="C0")
    _integer_ticks(ax.xaxis)
    ax.yaxis.set_major_formatter(_plain_formatter())
    handles = [line]
    inner = getattr(result, "chunk_iter", None)
    if inner is not None:
        inner = np.asarray(inner).reshape(-1, loss.size)[-1]
        twin = ax.twinx()
        h, = twin.step(chunks, inner, where="mid", color="C1", label="inner iterations")
        twin.set_ylabel("inner iterations per chunk", color="C1")
        twin.set_ylim(0, max(1, inner.max()) * 1.15)
        _integer_ticks(twin.yaxis)
        handles.append(h)
    ax.legend(handles=handles, loc="best", fontsize="small")
    ax.set_title(type(result).__name__.replace("Result", "") + ": one pass over the stream")
    return ax


def view_weights(result: Any, ax: Any = None, view_names: Sequence[str] | None = None, *,
                 max_ticks: int = 20) -> Any:
    """Heat map of MVFL's view weights ``‖w_k^v‖`` (views x clusters).

    Many clusters (100) keep every cell, in a figure at most 11 inches wide, with at most
    ``max_ticks`` clusters labelled.

    Parameters
    ----------
    result : MVFLResult
        A result of :func:`fastmv.mvfl` (any object with a ``view_weights`` array (m, c)).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    view_names : sequence of str, optional
        Names of the views (default ``view 0``, ``view 1``, ...).
    max_ticks : int, default 20
        Label at most this many clusters (evenly spaced) when there are more.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from fastmv.plot import view_weights
    >>> ax = view_weights(SimpleNamespace(view_weights=np.array([[1.0, 0.2], [0.1, 0.9]])))
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['view 0', 'view 1']
    """
    if getattr(result, "view_weights", None) is None:
        raise InvalidParameterError(
            "result must have view weights (a result of fastmv.mvfl, or an object with a "
            f"view_weights array of shape (n_views, n_clusters)); {type(result).__name__} has "
            "none")
    W = np.asarray(result.view_weights, dtype=np.float64)
    if W.ndim != 2:
        raise InvalidParameterError(f"result.view_weights must be 2-D (n_views, n_clusters), "
                                    f"got shape {W.shape}")
    m, c = W.shape
    names = list(view_names) if view_names is not None else [f"view {v}" for v in range(m)]
    if int(max_ticks) < 1:
        raise InvalidParameterError(f"max_ticks must be a positive integer, got {max_ticks!r}")
    ax = _axes(ax, figsize=(min(11.0, max(4.0, 0.5 * c + 2.5)),
                            min(9.0, max(2.5, 0.5 * m + 1.5))))
    im = ax.imshow(W, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, label="‖w_k^v‖")
    ax.set_xticks(_tick_positions(c, max_ticks))
    ax.set_yticks(range(m))
    ax.set_yticklabels(names)
    ax.set_xlabel("cluster k")
    ax.set_title("MVFL view weights")
    return ax


def feature_weights(result: Any, ax: Any = None,
                    view_names: Sequence[str] | None = None, *,
                    top_k: int | None = None) -> Any:
    """MVFL's feature weights ``‖w^i‖``, coloured by view: every feature along the
    concatenated features, or the ``top_k`` largest of each view as labelled bars.

    A few hundred features read well as one line of bars; thousands do not (a wall of bars
    whose labels cannot be written), so beyond 100 features the default draws the largest
    features of each view, each bar named by its view and its index in that view, and the
    legend gives each view's share of the total weight.

    Parameters
    ----------
    result : MVFLResult
        A result of :func:`fastmv.mvfl` (``feature_weights`` (d,) and ``view_ptr`` (m + 1,)).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    view_names : sequence of str, optional
        Names of the views for the legend and the bar labels.
    top_k : int, optional
        Draw the ``top_k`` largest weights of each view as horizontal bars. Default: every
        feature when there are at most 100, else ``max(3, min(10, 30 // n_views))`` per view
        (at most 30 bars for 3 views or more).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from fastmv.plot import feature_weights
    >>> r = SimpleNamespace(feature_weights=np.array([0.5, 0.1, 0.9]),
    ...                     view_ptr=np.array([0, 2, 3]))
    >>> len(feature_weights(r).collections)
    2
    >>> len(feature_weights(r, top_k=1).patches)  # the largest of each view
    2
    """
    w = np.asarray(result.feature_weights, dtype=np.float64).reshape(-1)
    ptr = np.asarray(result.view_ptr)
    m = ptr.size - 1
    names = list(view_names) if view_names is not None else [f"view {v}" for v in range(m)]
    if top_k is None and w.size > _ALL_FEATURES_MAX:
        top_k = max(3, min(10, 30 // max(m, 1)))
    if top_k is not None:
        if int(top_k) < 1:
            raise InvalidParameterError(f"top_k must be a positive integer, got {top_k!r}")
        return _top_features(w, ptr, names, int(top_k), ax)
    ax = _axes(ax, figsize=(8.0, 3.5))
    for v in range(m):
        idx = np.arange(ptr[v], ptr[v + 1])
        ax.vlines(idx, 0, w[idx], color=f"C{v % 10}", lw=1, label=names[v])
    ax.set_xlabel("feature (views concatenated)")
    ax.set_ylabel("‖w^i‖")
    ax.set_title("MVFL feature weights")
    ax.legend(fontsize="small", ncol=min(m, 6))
    return ax


_ALL_FEATURES_MAX = 100  # beyond this many features, feature_weights draws the top ones


def _top_features(w, ptr, names, top_k, ax):
    """The ``top_k`` largest weights of each view as horizontal bars, views one after the
    other (largest first within a view), each labelled ``view: feature j``."""
    total = w.sum()
    rows, labels, colours, handles = [], [], [], []
    for v in range(ptr.size - 1):
        part = w[ptr[v]:ptr[v + 1]]
        top = np.argsort(-part, kind="stable")[:top_k]
        rows.extend(part[top])
        labels.extend(f"{names[v]}: {j}" for j in top)
        colours.extend([f"C{v % 10}"] * top.size)
        share = part.sum() / total if total > 0 else 0.0
        handles.append((f"C{v % 10}", f"{names[v]} ({part.size} features, "
                                      f"{100 * share:.0f} % of the weight)"))
    ax = _axes(ax, figsize=(7.0, max(3.0, 0.22 * len(rows) + 1.2)))
    pos = np.arange(len(rows))
    ax.barh(pos, rows, color=colours)
    ax.set_yticks(pos)
    ax.set_yticklabels(labels, fontsize="x-small")
    ax.invert_yaxis()  # the first view's largest on top
    from matplotlib.patches import Patch  # noqa: PLC0415 (matplotlib: on first use)

    ax.legend(handles=[Patch(color=c, label=t) for c, t in handles], fontsize="small",
              loc="lower right")
    ax.set_xlabel("‖w^i‖")
    ax.set_title(f"MVFL feature weights: the {top_k} largest of each view "
                 f"({w.size} features)")
    return ax


def contingency(y_true: Any, y_pred: Any, ax: Any = None, annotate: bool | None = None, *,
                max_ticks: int = 20) -> Any:
    """Heat map of the contingency table of classes against clusters.

    The clusters are ordered by the one-to-one matching that maximises the agreement
    (Hungarian matching, as in :func:`fastmv.metrics.accuracy`), so a good clustering shows
    a strong diagonal. Large tables (100 classes) keep every cell, in a figure of bounded
    size, with at most ``max_ticks`` labelled rows and columns: the diagonal and the
    off-diagonal cells (the confusions) stay visible where a hundred labels would not.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Ground-truth classes.
    y_pred : array-like of shape (n,)
        Cluster labels.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    annotate : bool, optional
        Write the counts in the cells (default: when the table is at most 20 x 20).
    max_ticks : int, default 20
        Label at most this many rows and columns (evenly spaced) when the table has more.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from fastmv.plot import contingency
    >>> ax = contingency([0, 0, 1, 1, 2], [2, 2, 0, 0, 1])
    >>> ax.images[0].get_array().data.diagonal().tolist()
    [2, 2, 1]
    """
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    classes = np.unique(y_true)
    clusters = np.unique(y_pred)
    C = np.asarray(metrics.contingency_matrix(y_true, y_pred))
    rows, cols = linear_sum_assignment(-C)
    order = list(cols[np.argsort(rows)]) + [j for j in range(C.shape[1]) if j not in set(cols)]
    C = C[:, order]
    if int(max_ticks) < 1:
        raise InvalidParameterError(f"max_ticks must be a positive integer, got {max_ticks!r}")
    ax = _axes(ax, figsize=(min(11.0, max(4.0, 0.45 * C.shape[1] + 2.5)),
                            min(9.0, max(3.5, 0.4 * C.shape[0] + 1.5))))
    im = ax.imshow(C, cmap="Blues", aspect="auto", interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, label="samples")
    cols, rows_ = _tick_positions(C.shape[1], max_ticks), _tick_positions(C.shape[0], max_ticks)
    ax.set_xticks(cols)
    ax.set_xticklabels([str(clusters[order[j]]) for j in cols],
                       fontsize="small" if cols.size > 10 else None,
                       rotation=90 if cols.size > 10 else 0)
    ax.set_yticks(rows_)
    ax.set_yticklabels([str(classes[i]) for i in rows_],
                       fontsize="small" if rows_.size > 10 else None)
    ax.set_xlabel("predicted cluster (matched to the classes)")
    ax.set_ylabel("true class")
    if annotate is None:
        annotate = max(C.shape) <= 20
    if annotate:
        top = C.max() if C.size else 0
        for i in range(C.shape[0]):
            for j in range(C.shape[1]):
                if C[i, j]:
                    ax.text(j, i, str(C[i, j]), ha="center", va="center", fontsize="x-small",
                            color="white" if C[i, j] > 0.6 * top else "black")
    ax.set_title(f"contingency table (accuracy {metrics.accuracy(y_true, y_pred):.3f})")
    return ax


def _tick_positions(size, max_ticks):
    """Every position up to ``max_ticks``, else every ``step``-th from the first, the
    smallest whole step that gives at most ``max_ticks`` (0, 5, 10, ... for 100 and 20)."""
    return np.arange(0, size, max(1, -(-size // int(max_ticks))))


def _similarity(X, similarity):
    """A symmetric nonnegative similarity from a similarity matrix, data, or a list of views."""
    if isinstance(X, (list, tuple)):
        S = sum(_similarity(V, False) for V in X) / len(X)
        return S
    is_square = X.shape[0] == X.shape[1]
    if similarity is None:
        if is_square:
            A = X.toarray() if sp.issparse(X) else np.asarray(X)
            similarity = bool(np.all(A >= 0) and np.allclose(A, A.T))
        else:
            similarity = False
    if similarity:
        A = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return (A + A.T) / 2
    P = transition_matrices([X])[0]
    P = P.toarray() if sp.issparse(P) else np.asarray(P)
    return (P + P.T) / 2


def _spread_coordinates(S, c, codes=None):
    """2-D coordinates of the samples: the ``c`` leading eigenvectors of
    ``D^{-1/2} S D^{-1/2}``, rows scaled to unit norm (the space in which spectral
    clustering separates ``c`` clusters, each on its own direction), then their two
    principal components. Two eigenvectors alone separate two or three clusters
    and pile the others together; the principal plane of all ``c`` spreads them out. With
    ``codes`` (the cluster of each sample, -1 for none) and three clusters or more, the
    plane is turned so that the clusters' means sit near the corners of a regular polygon
    (:func:`_polygon_plane`)."""
    n = S.shape[0]
    deg = S.sum(axis=1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    A = inv[:, None] * S * inv[None, :]
    k = min(max(c, 3), n)
    if n <= 2000 or k >= n - 1:
        _, V = np.linalg.eigh((A + A.T) / 2)
        V = V[:, ::-1][:, :k]
    else:
        from ._blocks._spectral import top_eigenvectors  # noqa: PLC0415 (capped, with a fallback)

        _, V = top_eigenvectors(A, k, np.random.default_rng(0))
    if k < 3:
        return np.column_stack([V[:, -1], np.zeros(n)])
    E = V[:, :k].copy()   # Ng-Jordan-Weiss: the top c eigenvectors, rows to unit norm
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    E = E / np.where(norms > 0, norms, 1.0)
    E = E - E.mean(axis=0)
    U, sv, _ = np.linalg.svd(E, full_matrices=False)
    Y = U[:, :2] * sv[:2]
    if Y.shape[1] < 2:
        Y = np.column_stack([Y, np.zeros(n)])
    if codes is not None and np.unique(codes[codes >= 0]).size >= 3:
        Y = E @ _polygon_plane(E[codes >= 0], Y[codes >= 0], codes[codes >= 0])
    # a deterministic orientation: the largest coordinate of each axis positive
    return Y * np.where(np.sign(Y[np.argmax(np.abs(Y), axis=0), range(2)]) < 0, -1, 1)


def _polygon_plane(E, Y, codes):
    """The plane of the embedding ``E`` (k columns) that puts the clusters' mean points
    closest to the corners of a regular polygon, corners taken in the order of the clusters'
    angles on the principal plane ``Y`` (neighbours stay neighbours).

    With many clusters the principal plane of ``E`` is nearly arbitrary: each cluster has its
    own direction, the directions are about equally spread, so every plane holds about the
    same variance and two clusters may land on one spot. The orthogonal Procrustes rotation
    towards the polygon gives each cluster its own place on the plane; it is still a linear
    projection of ``E``, so a sample far from its cluster stays far on the picture."""
    groups, codes = np.unique(codes, return_inverse=True)
    g = groups.size
    counts = np.bincount(codes, minlength=g)[:, None]
    M = np.zeros((g, E.shape[1]))
    np.add.at(M, codes, E)
    M /= counts
    centre = np.zeros((g, 2))
    np.add.at(centre, codes, Y)
    order = np.argsort(np.arctan2(centre[:, 1], centre[:, 0]), kind="stable")
    angle = np.empty(g)
    angle[order] = 2 * np.pi * np.arange(g) / g
    T = np.column_stack([np.cos(angle), np.sin(angle)])
    U, _, Vt = np.linalg.svd(M.T @ T, full_matrices=False)
    return U @ Vt


def embedding(X_or_similarity: Any, labels: Any, ax: Any = None, *,
              similarity: bool | None = None, highlight: int | Sequence | None = None) -> Any:
    """2-D spectral embedding of the samples, coloured by cluster.

    Up to 20 clusters each get a colour and a legend entry. Beyond that, colours cycle and
    a legend cannot be read, so only the ``highlight`` clusters (default: the 10 largest)
    are coloured and named; the others are drawn together in light grey.

    The leading eigenvectors of ``D^{-1/2} S D^{-1/2}`` (one per cluster), row-normalised
    (the space spectral clustering separates the clusters in), projected on the plane that
    puts the clusters' means nearest the corners of a regular polygon (from three clusters;
    the corners in the order of the clusters on the principal plane), so that every cluster
    gets its own place on the plane. ``S`` is given, or built from data as the
    symmetrised transition matrix of the unit-norm rows (:func:`fastmv.transition_matrix`,
    its default kNN kernel), averaged over views for a list.

    Parameters
    ----------
    X_or_similarity : array-like or sparse, (n, n) similarity or (n, d) data, or list of views
        What to embed.
    labels : array-like of shape (n,)
        Colour of each sample (cluster labels; negative labels drawn grey).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    similarity : bool, optional
        Whether a square input is a similarity (default: when it is symmetric and
        nonnegative).
    highlight : int or sequence of labels, optional
        The clusters drawn in colour and named in the legend: the ``highlight`` largest
        (an int) or the labels given. Default: every cluster when there are at most 20,
        else the 10 largest.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from fastmv.plot import embedding
    >>> X = np.vstack([np.zeros((5, 2)), np.ones((5, 2))]) + 0.01 * np.arange(20).reshape(10, 2)
    >>> ax = embedding(X, np.repeat([0, 1], 5))
    >>> [c.get_offsets().shape for c in ax.collections]
    [(5, 2), (5, 2)]
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['0', '1']
    """
    S = _similarity(X_or_similarity, similarity)
    labels = np.asarray(labels).reshape(-1)
    n = S.shape[0]
    if labels.size != n:
        raise ValueError(f"labels has {labels.size} entries, the data {n} samples")
    known = labels >= 0 if labels.dtype.kind in "iu" else np.ones(n, bool)
    codes = np.full(n, -1)
    codes[known] = np.unique(labels[known], return_inverse=True)[1]
    Y = _spread_coordinates(S, max(np.unique(labels[known]).size, 2), codes)
    ax = _axes(ax, figsize=(5.5, 5.0))
    if not np.all(known):
        ax.scatter(Y[~known, 0], Y[~known, 1], s=6, c="lightgrey")
    classes, codes, sizes = np.unique(labels[known], return_inverse=True, return_counts=True)
    shown = _highlighted(classes, sizes, highlight)
    Yk = Y[known]
    rest = ~np.isin(codes, shown)
    if np.any(rest):
        ax.scatter(Yk[rest, 0], Yk[rest, 1], s=4, color="0.82",
                   label=f"{classes.size - shown.size} other clusters")
    cmap = _pyplot().get_cmap("tab10" if shown.size <= 10 else "tab20")
    for i, k in enumerate(shown):
        sel = codes == k
        ax.scatter(Yk[sel, 0], Yk[sel, 1], s=8, color=cmap(i % cmap.N),
                   label=str(classes[k]))
    if shown.size <= 20:
        title = "cluster" if shown.size == classes.size else (
            f"the {shown.size} largest clusters" if highlight is None
            or isinstance(highlight, (int, np.integer)) else "cluster")
        ax.legend(title=title, fontsize="small", title_fontsize="small", markerscale=2,
                  loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ax.set_xlabel("spectral embedding, axis 1")
    ax.set_ylabel("axis 2")
    ax.set_title(f"spectral embedding, {np.unique(labels[known]).size} clusters")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


_COLOURED_MAX = 20   # clusters that each get a colour and a legend entry by default
_HIGHLIGHT = 10      # beyond that, the largest ones coloured


def _highlighted(classes, sizes, highlight):
    """Indices (into ``classes``) of the clusters drawn in colour, in legend order."""
    if highlight is None:
        if classes.size <= _COLOURED_MAX:
            return np.arange(classes.size)
        highlight = _HIGHLIGHT
    if isinstance(highlight, (int, np.integer)) and not isinstance(highlight, bool):
        if highlight < 0:
            raise InvalidParameterError(
                f"highlight must be a nonnegative number of clusters, got {highlight}")
        largest = np.argsort(-sizes, kind="stable")[:int(highlight)]
        return np.sort(largest)
    wanted = np.asarray(list(highlight))
    missing = wanted[~np.isin(wanted, classes)]
    if missing.size:
        raise InvalidParameterError(
            f"highlight names labels that no sample has: {missing.tolist()[:5]}")
    return np.flatnonzero(np.isin(classes, wanted))


def __dir__():  # dir(module) lists the public names, not the imports
    return list(__all__)
