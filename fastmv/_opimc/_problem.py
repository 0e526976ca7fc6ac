"""One OPIMC pass over the stream as a problem for the shared driver (:class:`Problem`):
the first chunk's starts, each later chunk's Lloyd iterations and single-row moves, and the
later passes, over chunks kept in memory or read again (docs/algorithms.md §5)."""
from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from fastmv.kernels.opimc import (
    REPLACE_PREVIOUS,
    START_FROM_CENTERS,
    START_FROM_LABELS,
    DistanceBounds,
    Statistics,
    _stream_chunk_iterate,
)
from fastmv.kernels.opimc_refine import _stream_chunk_refine

from .._core._driver import Step, relative_change, state_view
from ..exceptions import InvalidParameterError
from ._certify import RowBounds, center_shift, optimal_centers, proven, settled, to_optimal
from ._chunks import ChunkBuilder, Seeding, cut_chunks, kmeanspp, read_chunks
from ._sources import ViewSpec


class Data(NamedTuple):
    """What ``_solver._prepare`` validated: the source, its chunk builder and the start."""

    source: object            # ArraySource or StreamSource
    spec: ViewSpec
    builder: ChunkBuilder
    n: int | None             # None for a stream (known after the first pass)
    n_clusters: int
    init: object              # "random" | "k-means++" | None (labels or centres given)
    init_labels: np.ndarray | None
    init_centers: list | None
    rng: np.random.Generator


#: Rounds of (single-row move sweeps, Lloyd) per chunk solve at most, and sweeps per round.
REFINE_ROUNDS = 5
REFINE_SWEEPS = 10
#: Sweeps of single-row moves per chunk in the passes after the first.
LATER_SWEEPS = 1
#: Starts on a first chunk under a tenth of the samples at least (``Problem._n_starts``;
#: docs/defaults.md "Without supervision").
MIN_STARTS = 3
#: In-memory views of at most this many values (``n × Σ d_v``; 64 MB as float64) keep their
#: chunks between passes.
KEEP_MAX_VALUES = 2 ** 23
#: Chunks of at least this many rows skip the sweeps that the distance bounds prove move
#: nothing (``_certify``): the proof costs O(D c + s m) in a few NumPy calls, tens of µs,
#: which a sweep over fewer rows costs as well (docs/records/opimc-speed.md "Certified
#: sweeps").
CERTIFY_MIN_ROWS = 256


def _with_chunk(exc: Exception, t: int, start: int | None) -> Exception:
    """The same kind of exception, its message prefixed with the chunk it happened in."""
    where = f"chunk {t}" + ("" if start is None else f" (rows from {start})")
    try:
        new = type(exc)(f"{where}: {exc}")
    except Exception:  # an exception type with a constructor of its own: keep it as it is
        exc.add_note(f"raised while streaming {where}")
        return exc
    return new.with_traceback(exc.__traceback__)


class _SweepOutput(NamedTuple):
    """Chunk ends given to the refinement kernel and what it reports per chunk."""

    ends: np.ndarray     # (n_chunks,) int64: end row of each chunk in the layout swept
    loss: np.ndarray     # (n_chunks,) float64: the loss after each chunk
    sweeps: np.ndarray   # (n_chunks,) int64: sweeps spent on each chunk


class Problem:
    """OPIMC as a problem for the shared driver: each ``step()`` is one pass over the data."""

    def __init__(self, prep: Data, *, alpha, max_inner_iter, inner_tol, n_init, bar,
                 read_ahead=False, refine="each", label_tol=0.0, max_iter=1):
        self.prep, self.bar, self.read_ahead = prep, bar, read_ahead
        self.max_iter = max_iter
        # in-memory views are built once, all rows in one build, and kept for the later
        # passes (building a small chunk costs more than clustering it); files and streams
        # are read again
        self.keeps = max_iter > 1 and _keeps_chunks(prep)
        self._whole = None       # (a chunk of all the rows, the end row of each chunk)
        self.label_tol = label_tol
        self.refine = refine is not None
        self.refine_each = refine == "each"
        self.alpha, self.max_inner_iter, self.inner_tol = alpha, max_inner_iter, inner_tol
        self.n_init = n_init
        b, c = prep.builder, prep.n_clusters
        self.stats = Statistics(np.zeros((c, b.D)), np.zeros((prep.spec.m, c)),
                                np.zeros((b.D, c)))
        if prep.init_centers is not None:
            for iv, v in enumerate(b.order):
                self.stats.centers[b.view_ptr[iv]:b.view_ptr[iv + 1]] = prep.init_centers[v]
        self.labels = None if prep.n is None else np.empty(prep.n, np.int64)
        self.passes = 0
        self.objective_prev = None
        self.chunk_loss, self.chunk_iter = [], []
        self._one = _SweepOutput(np.empty(1, np.int64), np.empty(1), np.empty(1, np.int64))
        # certified sweeps (``_certify``): the last Lloyd call's bounds; each row's bounds
        # across passes for chunks read again (kept chunks take one kernel call a pass)
        self.certify = self.refine and getattr(prep.source, "chunk_size", 0) >= CERTIFY_MIN_ROWS
        self._bounds = self._optimal = None
        self.row_bounds = (RowBounds(prep.n, prep.n_clusters, _in_memory(prep))
                           if self.certify and prep.n is not None and max_iter > 1
                           and not self.keeps else None)
        self._loss = 0.0

    def _rows(self, start, s):
        """Where the chunk at visit positions ``[start, start + s)`` sits in the input: the
        labels are kept in the input's order (no un-shuffling copy at the end)."""
        order = getattr(self.prep.source, "order", None)
        return slice(start, start + s) if order is None else order[start:start + s]

    def _chunk_rows(self, start, ch):
        """Where the rows of chunk ``ch`` at ``start`` sit in the input (:meth:`_rows`; of its
        ``rows`` alone when it holds some of its chunk's rows)."""
        if ch.rows is None:
            return self._rows(start, ch.s)
        order = getattr(self.prep.source, "order", None)
        return start + ch.rows if order is None else order[start + ch.rows]

    def centers(self):
        """Per-view centres in the user's view order."""
        b, U = self.prep.builder, self.stats.centers
        return [U[b.view_ptr[iv]:b.view_ptr[iv + 1]].copy() for iv in np.argsort(b.order)]

    def _run(self, ch, lab, start, fill, refine=None):
        """The chunk loop's kernel (its bounds kept in ``_bounds``), then the single-row moves
        when ``refine`` (default: the call's ``refine``) asks for them."""
        self._bounds, self._optimal = DistanceBounds(np.empty(ch.s), np.empty(ch.s)), None
        out = _stream_chunk_iterate(ch.dense, ch.sparse, ch.W, self.prep.builder.view_ptr,
                                    self.stats, lab, start, fill, self.alpha,
                                    self.max_inner_iter, self.inner_tol, self._bounds)
        if not (self.refine if refine is None else refine):
            return out
        return self._refine(ch, lab, fill, out)

    def _optimal_bounds(self, lab):
        """The last Lloyd call's bounds moved to the optimal centres of the statistics."""
        if self._optimal is None:                # the statistics moved since
            U_bar = optimal_centers(self.stats, self.alpha, self.prep.builder.view_ptr)
            self._optimal = U_bar, to_optimal(*self._bounds, lab,
                                              center_shift(self.stats.centers, U_bar))
        return self._optimal

    def _refine(self, ch, lab, fill, out):
        for _ in range(REFINE_ROUNDS):
            # Lloyd's fixed point, then single-row moves (each lowers the loss), then Lloyd
            # again from where they end, until no row moves (docs/records/opimc.md "Refinement");
            # a sweep the bounds prove moves nothing is skipped (``_certify``)
            if self.certify and settled(*self._optimal_bounds(lab)[1], lab,
                                        self.stats.counts, self.alpha):
                break
            moves, _ = self._sweeps(ch, lab, fill, REFINE_SWEEPS)
            if moves == 0:
                break
            out = self._run(ch, lab, REPLACE_PREVIOUS, fill, refine=False)
        return out

    def _first_chunk(self, ch):
        """The first chunk of the first pass, from the start ``init`` asks for; with a random
        or k-means++ start, the best of ``n_init`` starts (lowest chunk loss, after
        refinement with ``refine="each"``, before it with ``"best"``) is kept."""
        prep, s = self.prep, ch.s
        fill = prep.builder.chunk_means(ch)
        if prep.init is None:                         # given labels or centres
            lab = np.empty(s, np.int64)
            if prep.init_labels is None:
                return lab, self._run(ch, lab, START_FROM_CENTERS, fill)
            if prep.init_labels.size < s:
                raise InvalidParameterError(f"init labels must have length >= {s}")
            lab[:] = prep.init_labels[:s]
            return lab, self._run(ch, lab, START_FROM_LABELS, fill)
        best, c, fresh = None, prep.n_clusters, self.stats
        each = self.refine_each
        n_starts = self._n_starts(s)
        seeds = (kmeanspp(Seeding(ch, prep.builder, fill), c, prep.rng, n_starts)
                 if prep.init == "k-means++" else None)
        for j in range(n_starts):
            self.stats = Statistics(*(np.zeros_like(a) for a in fresh))
            lab = np.empty(s, np.int64)
            if prep.init == "k-means++":
                self.stats.centers[:] = seeds[j]
                out = self._run(ch, lab, START_FROM_CENTERS, fill, refine=each)
            else:
                lab[:] = prep.rng.permutation(np.arange(s) % c)
                out = self._run(ch, lab, START_FROM_LABELS, fill, refine=each)
            if best is None or out[0] < best[1][0]:
                best = (lab, out, self.stats, self._bounds)
        self.stats, self._bounds, self._optimal = best[2], best[3], None
        if self.refine and not each:
            return best[0], self._refine(ch, best[0], fill, best[1])
        return best[0], best[1]

    def _n_starts(self, s):
        """Starts tried on a first chunk of ``s`` rows: ``n_init``, or fewer on a first chunk
        under a tenth of the samples when later passes follow (they re-assign every row
        against all the others, so the start matters less than its cost)."""
        n = self.prep.n
        if self.max_iter == 1 or n is None or 10 * s >= n:
            return self.n_init
        return int(min(self.n_init, max(MIN_STARTS, -(-10 * self.n_init * s // n))))

    def _chunk(self, t, start, ch):
        if self.passes == 0 and t == 0:
            return ch.s, self._first_chunk(ch)
        lab = np.empty(ch.s, np.int64)
        if self.passes == 0:
            return ch.s, (lab, self._run(ch, lab, START_FROM_CENTERS, np.zeros(0)))
        if start + ch.s > self.labels.size:
            raise InvalidParameterError(f"the chunk stream X_list yielded more rows in pass "
                                        f"{self.passes + 1} than in pass 1 "
                                        f"({self.labels.size})")
        lab[:] = self.labels[self._chunk_rows(start, ch)]
        if self.refine:
            # the statistics hold this chunk under its labels of the pass before, so single-row
            # moves on the global loss re-assign it in place: no removal, no Lloyd restart from
            # centres without it (the same labels on the shared data, at a fraction of the
            # cost); one sweep, the next pass sweeps again (docs/opimc.md "Passes")
            moves, out = self._sweeps(ch, lab, np.zeros(0), LATER_SWEEPS)
            return ch.s, (lab, (float(out.loss[0]), int(out.sweeps[0]), moves == 0))
        return ch.s, (lab, self._run(ch, lab, REPLACE_PREVIOUS, np.zeros(0)))

    def _unproven(self, start):
        """The positions in the chunk at ``start`` of the rows whose carried bounds do not
        prove they stay (none: the chunk is not built), or None for every row. The rows
        proven are left out of the chunk's sweep: a row in it sees the statistics it would
        with them, and a proven row, not checked again after another row of its chunk moved
        (each move lowers the loss), is checked by the next pass against the moved centres."""
        s = min(start + self.prep.source.chunk_size, self.prep.n) - start
        lab = self.labels[self._rows(start, s)]
        bounds = self.row_bounds.current(start, s, lab)
        ok = None if bounds is None else proven(*bounds, lab, self.stats.counts, self.alpha)
        if ok is None:
            return None
        keep = np.flatnonzero(~ok)
        return None if keep.size == s else keep

    def _track(self, start, ch, lab, moved):
        """After chunk ``ch`` (labels ``lab``): the drift of the optimal centres; the chunk's
        bounds set (first pass), or in a later pass forgotten for the rows that moved (``moved``
        (s,) bool: their bounds are for their old cluster)."""
        rb = self.row_bounds
        if self.passes == 0:
            U_bar, (upper, lower) = self._optimal_bounds(lab)
            rb.advance(U_bar)
            rb.set(start, upper, lower)
        else:
            rb.advance(optimal_centers(self.stats, self.alpha, self.prep.builder.view_ptr))
            if moved is not None and moved.any():
                at = np.flatnonzero(moved)
                rb.forget(start + (at if ch.rows is None else ch.rows[at]))

    def _sweeps(self, ch, lab, fill, max_sweeps, ends=None):
        """Sweeps of single-row moves over one chunk, or with ``ends`` over chunks laid out
        one after the other (``_stream_chunk_refine``). -> (rows moved, per-chunk output)."""
        self._optimal = None
        if ends is None:
            out = self._one
            out.ends[0] = ch.s
        else:
            out = _SweepOutput(ends, np.empty(ends.size), np.empty(ends.size, np.int64))
        moves = _stream_chunk_refine(ch.dense, ch.sparse, ch.W, self.prep.builder.view_ptr,
                                     self.stats, lab, fill, self.alpha, max_sweeps, *out)
        return moves, out

    def _build_whole(self):
        """Every row in one build (one validation, gather and layout, not one per chunk) and
        the end row of each chunk; None if the build fails: the pass then reads chunk by chunk
        and raises the error with the chunk it is in named."""
        source, builder = self.prep.source, self.prep.builder
        builder.keep = True                     # buffers of its own, kept
        try:
            whole = builder.build(*source.whole())
        except Exception:
            self.keeps = False
            return None
        finally:
            builder.keep = False
        n, s = source.n, source.chunk_size
        return whole, np.minimum(np.arange(1, -(-n // s) + 1, dtype=np.int64) * s, n)

    def _kept_pass(self):
        """A later pass with ``refine`` over the rows kept in memory: one kernel call over
        their layout, the same moves, losses and sweeps as chunk by chunk. -> (labels
        changed, per-chunk losses, per-chunk sweeps)."""
        merged, ends = self._whole
        rows = self._rows(0, merged.s)
        lab = np.array(self.labels[rows])       # a copy (rows may be a slice): moved in place
        _, out = self._sweeps(merged, lab, np.zeros(0), LATER_SWEEPS, ends=ends)
        changed = int(np.count_nonzero(self.labels[rows] != lab))
        self.labels[rows] = lab
        self.bar.update(ends.size)
        return changed, out.loss, out.sweeps

    def step(self) -> Step:
        losses, iters, parts = [], [], []
        loss = 0.0
        changed = 0
        if self.keeps and self._whole is None:
            self._whole = self._build_whole()
        if self._whole is not None and self.passes > 0 and self.refine:
            changed, losses, iters = self._kept_pass()
            return self._end_step(parts, list(losses), list(iters), float(losses[-1]), changed)
        if self._whole is not None:
            reading = contextlib.nullcontext(cut_chunks(*self._whole,
                                                         self.prep.builder.dense_dims))
        else:
            # of a chunk, only the rows the carried bounds do not prove stay are built and
            # swept; read in this thread then, as the proof needs the centres the chunk before
            # left (a reading thread would build ahead of them), and the chunks left are few
            skip = (self._unproven if self.row_bounds is not None and self.passes > 0
                    else None)
            reading = read_chunks(self.prep.source, self.prep.builder,
                                   self.read_ahead and skip is None, skip)
        with reading as chunks:
            for t, (start, ch, error) in enumerate(chunks):
                try:
                    if error is not None:
                        raise error
                    if ch is None:                   # skipped: its labels stand
                        s = min(start + self.prep.source.chunk_size, self.prep.n) - start
                        lab, loss, n_inner = self.labels[self._rows(start, s)], self._loss, 0
                        built = False
                    else:
                        s, (lab, (loss, n_inner, _)) = self._chunk(t, start, ch)
                        built = True
                except Exception as exc:
                    raise _with_chunk(exc, t, start) from exc
                moved = None
                if self.labels is not None:
                    rows = self._rows(start, s) if ch is None else self._chunk_rows(start, ch)
                    if self.passes > 0:
                        moved = self.labels[rows] != lab
                        changed += int(np.count_nonzero(moved))
                    self.labels[rows] = lab
                else:
                    parts.append(lab)
                if self.row_bounds is not None and built:
                    self._track(start, ch, lab, moved)
                del ch
                self._loss = loss
                losses.append(loss)
                iters.append(n_inner)
                self.bar.update(1)
        return self._end_step(parts, losses, iters, loss, changed)

    def _end_step(self, parts, losses, iters, loss, changed):
        self._end_pass(parts, len(losses))
        self.chunk_loss.append(losses)
        self.chunk_iter.append(iters)
        self.passes += 1
        residual = None
        if self.passes > 1 and self.label_tol > 0:
            # settled labels end the passes as a settled loss does (the driver's test on 0)
            settled = changed <= self.label_tol * self.labels.size
            residual = 0.0 if settled else relative_change(self.objective_prev, loss)
        self.objective_prev = loss
        return Step(objective=loss, residual=residual, state=state_view(
            labels=self.labels, U=self.centers(), chunk_loss=np.asarray(losses)))

    def _end_pass(self, parts, n_chunks):
        source, c = self.prep.source, self.prep.n_clusters
        if self.labels is None:                       # a stream: n is known now
            self.labels = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            if self.labels.size < c:
                raise ValueError(f"n_clusters={c} exceeds the number of samples "
                                 f"({self.labels.size})")
        elif self.passes > 0 and source.n is not None and source.n != self.labels.size:
            raise InvalidParameterError(f"the chunk stream X_list yielded {source.n} rows in "
                                        f"pass {self.passes + 1}, {self.labels.size} in pass 1 "
                                        "(its row count is fixed by the first pass)")
        if self.chunk_loss and n_chunks != len(self.chunk_loss[0]):
            raise InvalidParameterError("the chunk stream X_list changed its length between "
                                        "passes")


def _in_memory(prep) -> bool:
    """Whether the views are NumPy arrays or scipy.sparse matrices (not memmaps, files, Dask
    arrays or streams, whose memory stays bounded by the chunk size)."""
    views = getattr(prep.source, "views", None)
    if views is None or getattr(prep.source, "dask", False):
        return False
    return all(type(X) is np.ndarray or sp.issparse(X) for X in views)


def _keeps_chunks(prep) -> bool:
    """Whether the chunks of pass 1 are kept for the later passes: views in memory
    (:func:`_in_memory`) of at most ``KEEP_MAX_VALUES`` values."""
    return _in_memory(prep) and prep.n * prep.builder.D <= KEEP_MAX_VALUES
