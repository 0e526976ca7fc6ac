"""Hostile input from new angles: every public kernel called directly with indices out of
range and short arrays, tampered and inflating files, streams that change between passes,
and Ctrl-C in the middle of every solver and block.

Where a failure could crash the interpreter (a kernel reading out of bounds, a file that
inflates to gigabytes, a signal), the case runs in a child process, so that a crash fails
the one test instead of ending the run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import fastmv
from fastmv.exceptions import InvalidFileError
from tests.conftest import default_sigint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(code: str, timeout: float = 120, **popen):
    """Run ``code`` in a fresh interpreter with this tree on the path."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "2")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, **popen)


# ------------------------------------------------------------------------------ kernels
def _kernel_cases():
    """(module, kernel, valid args, {case: args}) for every public kernel: each case breaks
    one index range or length the kernel relies on. Called in the child process."""
    import importlib  # noqa: PLC0415

    from fastmv.kernels import (  # noqa: PLC0415
        affinity,
        clustering,
        cmvnmf,
        emvc,
        mvfl,
        mvmc,
        opimc,
        opimc_layout,
        opimc_refine,
        opimc_stats,
        simplex,
    )

    rng = np.random.default_rng(0)
    i64 = np.int64
    cases = []

    def add(module, name, args, **bad):
        cases.append((module.__name__.rsplit(".", 1)[1], name, args, bad))

    def sub(args, i, value):
        return args[:i] + (value,) + args[i + 1:]

    # affinity
    G = rng.random((4, 4))
    add(affinity, "gram_to_sq_distances", (G.copy(), np.ones(4)),
        short_norms=(G.copy(), np.ones(3)), not_square=(rng.random((4, 3)), np.ones(4)))
    add(affinity, "strict_upper_triangle", (G.copy(),), not_square=(rng.random((4, 3)),))
    add(affinity, "keep_nearest_neighbors", (G.copy(), 2), not_square=(rng.random((4, 3)), 2))
    add(affinity, "nearest_neighbors_rows", (G.copy(), 2), not_square=(rng.random((4, 3)), 2),
        too_many_neighbors=(G.copy(), 4))
    nn_index, nn_sq = np.array([[1], [0], [3], [2]], dtype=i64), np.ones((4, 1))
    args = (np.empty((4, 4)), nn_index, nn_sq, np.ones(4))
    add(affinity, "local_scaling_transition_rows", args,
        index_out_of_range=sub(args, 1, nn_index + 4), short_sigma=sub(args, 3, np.ones(3)),
        short_out=sub(args, 0, np.empty((3, 4))))

    # clustering: a 6 x 3 CSR matrix
    X = rng.random((6, 3))
    C = rng.random((2, 3))
    xsq = (X ** 2).sum(1)
    data, indices, indptr = X.ravel(), np.tile(np.arange(3, dtype=i64), 6), np.arange(0, 19, 3,
                                                                                        dtype=i64)
    far = indices.copy()
    far[4] = 10 ** 8
    backwards = indptr.copy()
    backwards[2] = 1
    add(clustering, "nearest_center", (X @ C.T, xsq, (C ** 2).sum(1)),
        short_x=(X @ C.T, xsq[:4], (C ** 2).sum(1)), short_c=(X @ C.T, xsq, np.ones(1)))
    for name in ("lloyd_step", "lloyd_step_serial"):
        args = (X, C, xsq, 2)
        add(clustering, name, args, short_norms=sub(args, 2, xsq[:3]),
            narrow_centers=sub(args, 1, C[:, :2].copy()))
    for name in ("lloyd_step_csr", "lloyd_step_csr_serial"):
        args = (data, indices, indptr, C, xsq, 2)
        add(clustering, name, args, index_out_of_range=sub(args, 1, far),
            indptr_decreasing=sub(args, 2, backwards), short_indices=sub(args, 1, indices[:9]),
            short_norms=sub(args, 4, xsq[:2]))
    args = (X, C, xsq, np.full(6, np.inf), 2)
    add(clustering, "seeding_distances", args, short_closest=sub(args, 3, np.ones(2)))
    args = (data, indices, indptr, C, xsq, np.full(6, np.inf), 2)
    add(clustering, "seeding_distances_csr", args, index_out_of_range=sub(args, 1, far),
        short_closest=sub(args, 5, np.ones(2)))

    # feature selection: 5 features in views of 2 and 3, c = 2
    W = rng.random((5, 2))
    vp = np.array([0, 2, 5], dtype=i64)
    add(mvfl, "weight_norms", (W, vp, 1e-8),
        view_ptr_past_end=(W, np.array([0, 2, 9], dtype=i64), 1e-8))
    add(mvfl, "irls_diagonal", (np.ones((2, 2)), np.ones(5), vp, 0.1, 0.1),
        view_ptr_past_end=(np.ones((2, 2)), np.ones(5), np.array([0, 2, 9], dtype=i64), 0.1,
                           0.1),
        short_rows=(np.ones((2, 2)), np.ones(3), vp, 0.1, 0.1))
    L = np.broadcast_to(np.eye(3), (1, 3, 3)).copy()
    add(mvfl, "cholesky_solve", (L, np.ones((3, 2))),
        small_factor=(L[:, :2, :2].copy(), np.ones((3, 2))))
    t = X.T.copy()
    t_data, t_indices, t_indptr = t.ravel(), np.tile(np.arange(6, dtype=i64), 3), \
        np.arange(0, 19, 6, dtype=i64)
    args = (indptr, indices, data, t_indptr, t_indices, t_data, np.ones((2, 3)))
    add(mvfl, "sparse_weighted_gram", args, index_out_of_range=sub(args, 1, far),
        transpose_out_of_range=sub(args, 4, np.where(t_indices == 5, 10 ** 8, t_indices)))
    add(mvfl, "centre_woodbury_lower", (G.copy(), np.ones(4), 1.0),
        short_means=(G.copy(), np.ones(3), 1.0), not_square=(rng.random((4, 3)), np.ones(4), 1.0))
    F = rng.random((4, 2))
    p_indptr = np.array([0, 1, 2, 2, 2], dtype=i64)
    p_indices = np.array([1, 0], dtype=i64)
    p_data = np.ones(2)
    add(mvfl, "pair_gram", (F, p_indptr, p_indices, p_data),
        index_out_of_range=(F, p_indptr, np.array([1, 10 ** 8], dtype=i64), p_data),
        short_indptr=(F, p_indptr[:3], p_indices, p_data))
    args = (F, F.copy(), np.eye(2), 0.5, p_indptr, p_indices, p_data, np.arange(4, dtype=i64))
    add(mvfl, "multiplicative_f_update", args,
        row_out_of_range=sub(args, 7, np.array([0, 10 ** 8], dtype=i64)),
        index_out_of_range=sub(args, 5, np.array([1, 10 ** 8], dtype=i64)),
        short_z=sub(args, 1, F[:2].copy()))
    args = (F.copy(), F.copy(), np.array([0, 3], dtype=i64), np.array([1, 0], dtype=i64), 0.5)
    add(mvfl, "labelled_rows_update", args,
        row_out_of_range=sub(args, 2, np.array([0, 10 ** 8], dtype=i64)),
        class_out_of_range=sub(args, 3, np.array([1, 7], dtype=i64)),
        short_classes=sub(args, 3, np.array([1], dtype=i64)))

    # mvmc: a 4 x 4 symmetric pattern with its mirror
    A = rng.random((4, 2))
    m_indptr = np.array([0, 1, 2, 3, 4], dtype=i64)
    m_indices = np.array([1, 0, 3, 2], dtype=i64)
    mirror = np.array([1, 0, 3, 2], dtype=i64)
    args = (A, A.copy(), rng.random((4, 3)), m_indptr, m_indices, np.ones(4), mirror)
    add(mvmc, "masked_residual_product", args,
        index_out_of_range=sub(args, 4, np.array([1, 0, 10 ** 8, 2], dtype=i64)),
        mirror_out_of_range=sub(args, 6, np.array([1, 0, 10 ** 8, 2], dtype=i64)),
        short_values=sub(args, 5, np.ones(2)), short_z=sub(args, 2, rng.random((2, 3))))
    add(mvmc, "dense_to_csr", (np.eye(3), np.array([0, 1, 2, 3], dtype=i64)),
        short_indptr=(np.eye(3), np.array([0, 1], dtype=i64)))

    # cmvnmf
    add(cmvnmf, "pattern_csr", (np.array([0, 2], dtype=i64), np.array([1, 3], dtype=i64), 3, 4),
        row_out_of_range=(np.array([0, 10 ** 8], dtype=i64), np.array([1, 3], dtype=i64), 3, 4),
        col_out_of_range=(np.array([0, 2], dtype=i64), np.array([1, -5], dtype=i64), 3, 4),
        short_cols=(np.array([0, 2], dtype=i64), np.array([1], dtype=i64), 3, 4))
    args = (indptr, indices, data, rng.random((3, 2)))
    add(cmvnmf, "csr_matmul", args, index_out_of_range=sub(args, 1, far),
        short_factor=sub(args, 3, rng.random((2, 2))))
    V = rng.random((6, 2))
    pairs = np.array([[0, 1], [2, 3]], dtype=i64)
    add(cmvnmf, "constraint_penalty", (V, pairs, pairs[:1].copy()),
        pair_out_of_range=(V, np.array([[0, 10 ** 8]], dtype=i64), pairs),
        three_columns=(V, np.zeros((1, 3), dtype=i64), pairs))
    Vn = rng.random((3, 2))
    ip = np.array([0, 1, 1, 2], dtype=i64)
    terms = cmvnmf.ConstraintTerms(V, ip, np.array([4, 5], dtype=i64), ip.copy(),
                                np.array([3, 0], dtype=i64), np.ones(3), np.ones(3), np.ones(3),
                                np.zeros(1, dtype=i64))
    far_terms = terms._replace(must_indices=np.array([4, 10 ** 8], dtype=i64))
    args = (Vn, Vn.copy(), np.eye(2), terms, 0.5, 1e-10)
    add(cmvnmf, "multiplicative_update", args, pattern_out_of_range=sub(args, 3, far_terms),
        short_degrees=sub(args, 3, terms._replace(deg_num=np.ones(1))),
        short_numer=sub(args, 1, Vn[:1].copy()))

    # emvc: m = 2 views of n = 3
    P = np.full((2, 3, 3), 1 / 3)
    wts = emvc.ErrorWeights(np.ones((2, 3)), np.ones((2, 3)), 0.1, 0.1, 1e-8)
    args = (P, np.zeros_like(P), np.zeros_like(P), np.zeros((3, 3)), np.zeros((3, 3)),
            np.zeros((3, 3)), 1.0, 1.0, False, wts)
    add(emvc, "consensus_error_update", args, short_errors=sub(args, 1, np.zeros((1, 3, 3))),
        short_p_hat=sub(args, 5, np.zeros((2, 3))),
        short_norms=sub(args, 9, wts._replace(row_norms=np.ones((1, 3)))))

    # simplex
    add(simplex, "rowwise_simplex_projection", (G.copy(), np.empty((4, 4))),
        short_out=(G.copy(), np.empty((2, 4))))

    # opimc: s = 5 rows, one dense view (d = 3) and one sparse view (d = 4), c = 2
    s, c = 5, 2
    Pm = np.ones((s, 2), dtype=bool)
    Pm[1, 0] = False
    dims = np.array([3], dtype=i64)
    rows, row_start, value_start, position, Wt, _ = opimc_layout.stream_layout(Pm, dims)
    Xd = rng.random((s, 3))
    values = np.empty(rows.shape[0] * 3)
    opimc_layout.stream_gather_view(Xd, rows, False, values, np.empty(rows.shape[0], np.int8))
    dense = opimc.DenseRows(values, value_start, rows, row_start, position)
    sparse = opimc.SparseRows(np.ones(s), np.array([3, 4, 5, 6, 3], dtype=i64),
                                  np.arange(s + 1, dtype=i64))
    view_ptr = np.array([0, 3, 7], dtype=i64)
    U = rng.random((7, c))
    labels = np.array([0, 1, 0, 1, 0], dtype=i64)
    bad_sparse = sparse._replace(indices=np.array([3, 4, 10 ** 8, 6, 3], dtype=i64))
    bad_rows = dense._replace(rows=np.where(rows == 2, 10 ** 8, rows))
    bad_position = dense._replace(position=np.where(position == 2, 10 ** 8, position))
    bad_ptr = np.array([0, 3, 99], dtype=i64)
    bad_labels = np.array([0, 1, 0, 7, 0], dtype=i64)
    add(opimc_layout, "stream_layout", (Pm, dims),
        too_many_dims=(Pm, np.array([3, 4, 5], dtype=i64)))
    args = (Xd, rows, False, np.empty(rows.shape[0] * 3), np.empty(rows.shape[0], np.int8))
    add(opimc_layout, "stream_gather_view", args,
        row_out_of_range=sub(args, 1, np.where(rows == 2, 10 ** 8, rows)),
        short_out=sub(args, 3, np.empty(2)))
    args = (np.ones(6), 3, True, np.empty(2, np.int8))
    add(opimc_layout, "stream_finish_rows", args, short_values=sub(args, 0, np.ones(5)),
        negative_dim=sub(args, 1, -1))
    add(opimc, "stream_cross", (dense, view_ptr, U), row_out_of_range=(bad_rows, view_ptr, U),
        view_ptr_past_end=(dense, bad_ptr, U))
    usq = opimc.stream_center_sqnorms(U, view_ptr)
    out = opimc.Nearest(np.empty(s, i64), np.empty(s), np.empty(s))
    args = (dense, sparse, Wt, view_ptr, U, usq, np.empty((0, c)), np.arange(s, dtype=i64), out)
    add(opimc, "stream_assign", args, sparse_out_of_range=sub(args, 1, bad_sparse),
        position_out_of_range=sub(args, 0, bad_position),
        row_out_of_range=sub(args, 7, np.array([0, 10 ** 8], dtype=i64)),
        short_weights=sub(args, 2, Wt[:2].copy()))
    add(opimc, "stream_row_sqnorms", (dense, sparse, view_ptr, s),
        sparse_out_of_range=(dense, bad_sparse, view_ptr, s), rows_past_s=(dense, sparse,
                                                                            view_ptr, 2))
    add(opimc_stats, "stream_center_shift", (U, U.copy()), short_old=(U[:3].copy(), U))
    add(opimc_stats, "stream_center_sqnorms", (U, view_ptr), view_ptr_past_end=(U, bad_ptr))
    args = (dense, sparse, Wt, view_ptr, U, labels.copy())
    add(opimc, "stream_chunk_assign", args, sparse_out_of_range=sub(args, 1, bad_sparse),
        short_labels=sub(args, 5, labels[:2].copy()), view_ptr_past_end=sub(args, 3, bad_ptr))

    def stats():
        return opimc.Statistics(np.zeros((c, 7)), np.zeros((2, c)), U.copy())

    args = (dense, sparse, Wt, view_ptr, stats(), labels.copy(), opimc.START_FROM_LABELS,
            np.zeros(0), 1e-3, 5, 1e-6)
    add(opimc, "stream_chunk_iterate", args,
        label_out_of_range=sub(args, 5, bad_labels), sparse_out_of_range=sub(args, 1, bad_sparse),
        short_counts=sub(args, 4, stats()._replace(counts=np.zeros((1, c)))),
        bad_start=sub(args, 6, 9))
    args = (dense, sparse, Wt, view_ptr, stats(), labels.copy(), np.zeros(0), 1e-3, 5)
    add(opimc_refine, "stream_chunk_refine", args,
        label_out_of_range=sub(args, 5, bad_labels), sparse_out_of_range=sub(args, 1, bad_sparse),
        short_counts=sub(args, 4, stats()._replace(counts=np.zeros((1, c)))),
        short_fill=sub(args, 6, np.zeros(2)), view_ptr_past_end=sub(args, 3, bad_ptr))
    R = np.zeros((c, 7))
    add(opimc_stats, "stream_scatter_dense", (dense, view_ptr, labels, R.copy(), 1.0),
        label_out_of_range=(dense, view_ptr, bad_labels, R.copy(), 1.0),
        row_out_of_range=(bad_rows, view_ptr, labels, R.copy(), 1.0))
    add(opimc_stats, "stream_move_dense", (dense, view_ptr, labels, labels[::-1].copy(),
                                               R.copy()),
        label_out_of_range=(dense, view_ptr, labels, bad_labels, R.copy()),
        short_new=(dense, view_ptr, labels, labels[:2].copy(), R.copy()))
    add(opimc_stats, "stream_scatter_csr", (sparse, labels, R.copy(), 1.0),
        index_out_of_range=(bad_sparse, labels, R.copy(), 1.0),
        label_out_of_range=(sparse, bad_labels, R.copy(), 1.0))
    add(opimc_stats, "stream_move_csr", (sparse, labels, labels[::-1].copy(), R.copy()),
        index_out_of_range=(bad_sparse, labels, labels[::-1].copy(), R.copy()),
        label_out_of_range=(sparse, labels, bad_labels, R.copy()))
    T = np.zeros((2, c))
    add(opimc_stats, "stream_scatter_counts", (labels, Wt, T.copy(), 1.0),
        label_out_of_range=(bad_labels, Wt, T.copy(), 1.0),
        short_weights=(labels, Wt[:2].copy(), T.copy(), 1.0))
    add(opimc_stats, "stream_move_counts", (labels, labels[::-1].copy(), Wt, T.copy()),
        label_out_of_range=(labels, bad_labels, Wt, T.copy()),
        short_new=(labels, labels[:1].copy(), Wt, T.copy()))
    args = (R.copy(), np.ones((2, c)), view_ptr, 1e-3, np.zeros(0), U.copy())
    add(opimc_stats, "stream_update_centers", args, view_ptr_past_end=sub(args, 2, bad_ptr),
        short_sums=sub(args, 0, np.zeros((c, 3))), short_fill=sub(args, 4, np.zeros(2)))
    args = (U, R, np.ones((2, c)), view_ptr, 1e-3)
    add(opimc_stats, "stream_loss", args, view_ptr_past_end=sub(args, 3, bad_ptr),
        short_counts=sub(args, 2, np.ones((1, c))))
    # a serial copy (same code compiled without parallel=True) gets its kernel's cases
    for module, name, args, bad in list(cases):
        mod = importlib.import_module(f"fastmv.kernels.{module}")
        if not name.endswith("_serial") and hasattr(mod, name + "_serial") \
                and not any(c[:2] == (module, name + "_serial") for c in cases):
            cases.append((module, name + "_serial", args, bad))
    return cases


def _public_kernels():
    """Every public function of every kernel module (what a user can import and call)."""
    import importlib  # noqa: PLC0415

    out = set()
    import pkgutil  # noqa: PLC0415

    import fastmv.kernels  # noqa: PLC0415

    names = sorted(m.name for m in pkgutil.iter_modules(fastmv.kernels.__path__)
                   if not m.name.startswith("_"))
    for mod_name in names:
        mod = importlib.import_module(f"fastmv.kernels.{mod_name}")
        for name in dir(mod):
            obj = getattr(mod, name)
            if (not name.startswith("_") and hasattr(obj, "py_func")
                    and obj.py_func.__module__ == mod.__name__):
                out.add((mod_name, name))
    return out


# kernels whose arguments carry no index or length that another argument must match
_NOTHING_TO_CHECK = {("affinity", "gaussian_transition_rows"), ("mvmc", "clip_correction")}


def _run_kernel_cases():
    """Child process: every case must raise ValueError, every valid call must run."""
    import importlib  # noqa: PLC0415

    for mod_name, name, args, bad in _kernel_cases():
        kernel = getattr(importlib.import_module(f"fastmv.kernels.{mod_name}"), name)
        kernel(*args)
        for case, bad_args in bad.items():
            try:
                kernel(*bad_args)
            except ValueError as exc:
                assert name.removesuffix("_serial") in str(exc), (name, case, str(exc))
            else:
                raise AssertionError(f"{mod_name}.{name}: {case} was not refused")
            print(f"refused {mod_name}.{name} {case}", flush=True)


def test_every_public_kernel_has_hostile_cases():
    covered = {(mod, name) for mod, name, _, _ in _kernel_cases()}
    assert _public_kernels() - covered == _NOTHING_TO_CHECK
    assert sum(len(bad) for *_, bad in _kernel_cases()) >= 80


def test_public_kernels_refuse_out_of_range_indices_and_short_arrays():
    proc = _child("import tests.test_hostile as h; h._run_kernel_cases()", timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    n = sum(len(bad) for *_, bad in _kernel_cases())
    assert proc.stdout.count("refused ") == n


# -------------------------------------------------------------------------------- files
def _saved_result(tmp_path):
    views = [np.random.default_rng(0).normal(size=(30, 4)) + np.repeat(np.arange(3), 10)[:, None]
             for _ in range(2)]
    path = tmp_path / "good.npz"
    fastmv.kmeans(views[0], 3, random_state=0).save(path)
    return path


def _npz(path, members, meta=None, compression=zipfile.ZIP_STORED):
    """Write a .npz-like zip: ``members`` maps names to raw bytes or arrays."""
    import io
    import json

    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, value in members.items():
            if isinstance(value, np.ndarray):
                buf = io.BytesIO()
                np.lib.format.write_array(buf, value, allow_pickle=True)
                value = buf.getvalue()
            z.writestr(name, value)
        if meta is not None:
            raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.frombuffer(raw, dtype=np.uint8))
            z.writestr("__fastmv_result__.npy", buf.getvalue())
    return path


def _meta(fields, cls="KMeansResult"):
    return {"class": cls, "fields": fields}


_CONTRACT = {"labels": {"kind": "array", "key": "labels"},
             "objective": {"kind": "array", "key": "objective"},
             "n_iter": {"kind": "literal", "value": 1},
             "converged": {"kind": "literal", "value": True}}
_ARRAYS = {"labels.npy": np.zeros(4, dtype=np.int64), "objective.npy": np.ones(1)}


def _npy_header_only(shape, dtype="<f8"):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                              "shape": shape})
    return buf.getvalue()


def _file_cases(tmp):
    """name -> path of a file Result.load must refuse with InvalidFileError."""
    good = _saved_result(tmp)
    raw = good.read_bytes()
    cases = {}

    def write(name, data):
        path = tmp / f"{name}.npz"
        path.write_bytes(data)
        cases[name] = path

    write("random-bytes", bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)))
    write("empty", b"")
    write("truncated", raw[: len(raw) // 2])
    write("flipped-bytes", raw[:200] + bytes(b ^ 0xFF for b in raw[200:400]) + raw[400:])
    cases["no-meta"] = _npz(tmp / "no-meta.npz", dict(_ARRAYS))
    cases["meta-not-json"] = _npz(tmp / "meta-not-json.npz", dict(_ARRAYS), b"{not json")
    cases["meta-not-utf8"] = _npz(tmp / "meta-not-utf8.npz", dict(_ARRAYS), b"\xff\xfe\x00{")
    cases["meta-deep"] = _npz(tmp / "meta-deep.npz", dict(_ARRAYS), b"[" * 100000 + b"]" * 100000)
    cases["meta-a-list"] = _npz(tmp / "meta-a-list.npz", dict(_ARRAYS), [1, 2])
    cases["unknown-class"] = _npz(tmp / "unknown-class.npz", dict(_ARRAYS),
                                  _meta(_CONTRACT, "os.system"))
    cases["missing-array"] = _npz(tmp / "missing-array.npz", {"objective.npy": np.ones(1)},
                                  _meta(_CONTRACT))
    deep = {"kind": "list", "items": []}
    node = deep
    for _ in range(200):
        node["items"] = [{"kind": "list", "items": []}]
        node = node["items"][0]
    cases["nested-fields"] = _npz(tmp / "nested-fields.npz", dict(_ARRAYS),
                                  _meta({**_CONTRACT, "centers": deep}))
    cases["unknown-kind"] = _npz(tmp / "unknown-kind.npz", dict(_ARRAYS),
                                 _meta({**_CONTRACT, "centers": {"kind": "pickle"}}))
    cases["labels-2d-float"] = _npz(tmp / "labels-2d-float.npz",
                                    {**_ARRAYS, "labels.npy": np.zeros((2, 2))}, _meta(_CONTRACT))
    cases["n_iter-string"] = _npz(tmp / "n_iter-string.npz", dict(_ARRAYS), _meta(
        {**_CONTRACT, "n_iter": {"kind": "literal", "value": "3"}}))
    cases["wrong-fields"] = _npz(tmp / "wrong-fields.npz", dict(_ARRAYS), _meta(
        {**_CONTRACT, "surprise": {"kind": "literal", "value": 1}}))
    for name, (data, indices, indptr, shape) in {
            "csr-index-1e8": ([1.0], [10 ** 8], [0, 1, 1], [2, 2]),
            "csr-indptr-decreasing": ([1.0, 1.0], [0, 1], [0, 2, 1], [2, 2]),
            "csr-short-indptr": ([1.0], [0], [0, 1], [2, 2]),
            "csr-negative-shape": ([1.0], [0], [0, 1, 1], [2, -2])}.items():
        arrays = {**_ARRAYS, "c.data.npy": np.asarray(data), "c.indices.npy":
                  np.asarray(indices, dtype=np.int64), "c.indptr.npy":
                  np.asarray(indptr, dtype=np.int64)}
        cases[name] = _npz(tmp / f"{name}.npz", arrays, _meta(
            {**_CONTRACT, "centers": {"kind": "csr", "key": "c", "shape": shape}}))
    cases["object-array"] = _npz(tmp / "object-array.npz",
                                 {**_ARRAYS, "labels.npy": np.array([{"a": 1}], dtype=object)},
                                 _meta(_CONTRACT))
    cases["declared-larger-than-stored"] = _npz(
        tmp / "declared-larger.npz", {**_ARRAYS, "labels.npy": _npy_header_only((10 ** 9,),
                                                                                "<i8")},
        _meta(_CONTRACT))
    cases["not-npy-member"] = _npz(tmp / "not-npy-member.npz",
                                   {**_ARRAYS, "evil.txt": b"hello"}, _meta(_CONTRACT))
    return cases


def test_every_damaged_or_hostile_result_file_raises_invalid_file_error(tmp_path):
    cases = _file_cases(tmp_path)
    assert len(cases) >= 23
    for name, path in cases.items():
        with pytest.raises(InvalidFileError) as err:
            fastmv.Result.load(path)
        assert str(path) in str(err.value) or os.fspath(path) in str(err.value), name
    assert isinstance(fastmv.Result.load(_saved_result(tmp_path)), fastmv.KMeansResult)


_BOMB_NPZ = """
import numpy as np, zipfile, sys, resource
import fastmv
from fastmv.exceptions import InvalidFileError
from fastmv.exceptions import InvalidFileError
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: inflating would fail
path = sys.argv[1] if len(sys.argv) > 1 else {path!r}
with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
    with z.open("labels.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(
            f, {{"descr": "<i8", "fortran_order": False, "shape": (2 ** 27,)}})
        chunk = bytes(1 << 24)
        for _ in range(2 ** 30 // len(chunk)):
            f.write(chunk)
try:
    fastmv.Result.load(path)
except InvalidFileError as exc:
    print("refused:", exc)
"""

_BOMB_MAT = """
import numpy as np, scipy.io, resource
import fastmv
from fastmv.exceptions import InvalidFileError
path = {path!r}
X = np.zeros((8000, 8000))  # 512 MB of zeros: about 0.5 MB compressed
scipy.io.savemat(path, {{"X": X}}, do_compression=True)
del X
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: inflating twice would fail
try:
    fastmv.datasets.load_mat(path)
except InvalidFileError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("kind", ["npz", "mat"])
def test_small_files_that_inflate_hundreds_of_times_are_refused_before_inflating(kind, tmp_path):
    path = tmp_path / f"bomb.{kind}"
    script = (_BOMB_NPZ if kind == "npz" else _BOMB_MAT).format(path=os.fspath(path))
    proc = _child(script, timeout=300)
    assert proc.returncode == 0 and "refused:" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert os.fspath(path) in proc.stdout and "before inflating" in proc.stdout
    assert path.stat().st_size < 20 * 2 ** 20


def _mat_with_sparse_row(tmp_path, row):
    """A .mat file holding a 5 x 3 sparse view whose first stored row index is ``row``."""
    import scipy.io
    import scipy.sparse as sp

    X = sp.csc_matrix((np.array([1.0, 2.0, 3.0]), np.array([3, 1, 4], dtype=np.int32),
                       np.array([0, 1, 2, 3], dtype=np.int32)), shape=(5, 3))
    path = tmp_path / "sparse.mat"
    scipy.io.savemat(path, {"X": X, "y": np.arange(5)[:, None] % 2}, do_compression=False)
    raw = path.read_bytes()
    pattern = np.array([3, 1, 4], dtype="<i4").tobytes()
    assert raw.count(pattern) == 1
    path.write_bytes(raw.replace(pattern, np.array([row, 1, 4], dtype="<i4").tobytes()))
    return path


def test_load_mat_refuses_damaged_files_naming_them(tmp_path):
    views, y = fastmv.datasets.load_mat(_mat_with_sparse_row(tmp_path, 3))
    assert views[0].shape == (5, 3)
    proc = _child(f"""
        import fastmv
        from fastmv.exceptions import InvalidFileError
        try:
            fastmv.datasets.load_mat({os.fspath(_mat_with_sparse_row(tmp_path, 10 ** 8))!r})
        except InvalidFileError as exc:
            print("refused:", exc)
    """)
    assert proc.returncode == 0 and "refused:" in proc.stdout and "sparse" in proc.stdout, \
        (proc.stdout, proc.stderr[-2000:])
    for name, data in {"garbage.mat": bytes(range(256)) * 8, "empty.mat": b"",
                       "header-only.mat": b"MATLAB 5.0 MAT-file" + b" " * 97 + bytes(8)
                       + b"\x00\x01IM"}.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InvalidFileError, match=name):
            fastmv.datasets.load_mat(path)


# ------------------------------------------------------------------------------ streams
class _Reiterable:
    def __init__(self, make):
        self.make, self.passes = make, 0

    def __iter__(self):
        self.passes += 1
        return self.make(self.passes)


def _blocks(rows, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(rows, 3)), rng.normal(size=(rows, 2))]


def _stream_cases():
    import scipy.sparse as sp

    def one_based(p):
        for _ in range(3):
            B = sp.csr_matrix((np.ones(8), np.tile(np.array([1, 4]), 4), np.arange(0, 9, 2)),
                              shape=(4, 4))
            B.indices[1] = 4  # 1-based: column d_v does not exist
            yield [np.ones((4, 3)), B], None

    # every iter() yields fewer (more) rows than the one before, so that any two passes differ
    def shorter_second_pass(p):
        for t in range(3):
            yield _blocks(10 if t < 2 else 10 - 2 * p, t), None

    def more_rows_second_pass(p):
        for t in range(2 + p):
            yield _blocks(10, t), None

    def width_changes(p):
        yield _blocks(10), None
        yield [np.ones((10, 4)), np.ones((10, 2))], None

    def nan_block(p):
        b = _blocks(10)
        b[0][3, 1] = np.nan
        yield b, None

    def not_a_pair(p):
        yield _blocks(10)

    def bad_mask(p):
        yield _blocks(10), np.full((10, 2), 0.5)

    def timedelta_block(p):
        b = _blocks(10)
        yield [b[0].astype("m8[s]"), b[1]], None

    return {"one-based-sparse": one_based, "shorter-second-pass": shorter_second_pass,
            "more-rows-second-pass": more_rows_second_pass, "width-changes": width_changes,
            "nan-in-block": nan_block, "item-not-a-pair": not_a_pair, "mask-half": bad_mask,
            "timedelta-block": timedelta_block}


@pytest.mark.parametrize("case", list(_stream_cases()))
def test_hostile_chunk_streams_raise(case):
    source = _Reiterable(_stream_cases()[case])
    with pytest.raises((ValueError, TypeError)):
        fastmv.opimc(source, 2, max_iter=3, tol=0.0, random_state=0)


def test_one_shot_generator_with_several_passes_is_refused():
    gen = ((_blocks(10), None) for _ in range(2))
    with pytest.raises(ValueError, match="one-shot"):
        fastmv.opimc(gen, 2, max_iter=2)


@pytest.mark.parametrize("bad", [0.5, np.nan, 2.0, -1.0])
@pytest.mark.parametrize("dask_mask", [False, True])
def test_opimc_over_dask_checks_the_mask_like_numpy(bad, dask_mask):
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(0).normal(size=(40, 3))
    mask = np.ones((40, 2))
    mask[5, 0] = bad
    if dask_mask:
        mask = da.from_array(mask, chunks=(10, 2))
    for views in ([X, X.copy()], [da.from_array(X, chunks=(10, 3)), da.from_array(X, chunks=10)]):
        with pytest.raises(ValueError, match="mask"):
            fastmv.opimc(views, 2, mask=mask, random_state=0)


def _precision_changes(p):
    yield [B.astype(np.float32) for B in _blocks(10)], None
    yield _blocks(10, 1), None                      # float64 after a float32 first block


def _fewer_rows_later(p):
    for t in range(3):
        yield _blocks(10 if p == 1 or t < 2 else 4, t), None


@pytest.mark.parametrize("make,match", [
    (_precision_changes, r"X_list.*view 0 block is float64.*float32"),
    (_fewer_rows_later, r"X_list yielded 24 rows in pass 2, 30 in pass 1"),
], ids=["float64-after-float32", "fewer-rows-in-pass-2"])
def test_a_stream_is_fixed_by_its_first_pass(make, match):
    from fastmv.exceptions import InvalidParameterError

    source = _Reiterable(make)
    with pytest.raises(InvalidParameterError, match=match):
        fastmv.opimc(source, 2, max_iter=3, tol=0.0, random_state=0)


def test_a_reiterable_stream_is_iterated_once_per_pass():
    source = _Reiterable(lambda p: iter([(_blocks(10, t), None) for t in range(3)]))
    res = fastmv.opimc(source, 2, random_state=0)            # max_iter=None: several passes
    assert source.passes == res.n_iter >= 1


def test_a_float32_stream_accepts_blocks_float32_holds_exactly():
    def narrow(p):
        yield [B.astype(np.float32) for B in _blocks(10)], None
        yield [B.astype(np.int8) for B in _blocks(10, 1)], None
    assert fastmv.opimc(_Reiterable(narrow), 2, max_iter=2, random_state=0).labels.size == 20


# ----------------------------------------------------------------------- vague errors
class _ClosedDataset:
    """What an h5py dataset whose file was closed does: every read raises."""

    @property
    def shape(self):
        raise RuntimeError("Not a dataset (not a dataset)")

    @property
    def dtype(self):
        raise RuntimeError("Not a dataset (not a dataset)")

    def __getitem__(self, key):
        raise RuntimeError("Not a dataset (not a dataset)")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("Not a dataset (not a dataset)")


# far beyond any machine's memory, so that the refusal never depends on the machine
_HUGE = 2 ** 31 * 64


def _vague_cases():
    import concurrent.futures  # noqa: PLC0415

    import scipy.sparse as sp  # noqa: PLC0415

    from fastmv.estimators import MVFL, MVMC, OPIMC  # noqa: PLC0415

    X = np.random.default_rng(0).normal(size=(40, 3))
    wide = np.broadcast_to(np.zeros(1), (5, _HUGE))
    tall = np.broadcast_to(np.zeros(1), (_HUGE, 5))
    tall_sparse = sp.coo_matrix((_HUGE, 5))
    cases = {
        "set_params-nested-int": (lambda: MVMC().set_params(n_clusters__foo=3),
                                  r"invalid parameter n_clusters__foo for estimator MVMC"),
        "set_params-executor": (
            lambda: MVMC(executor=concurrent.futures.ThreadPoolExecutor(1)).set_params(
                executor__max_workers=2), r"invalid parameter executor__max_workers"),
        "estimator-3d": (lambda: MVFL(2).fit(np.zeros((10, 3, 2))), r"3-D"),
        "estimator-3d-view_sizes": (lambda: OPIMC(2).fit(np.zeros((10, 3, 2)), view_sizes=[1, 2]),
                                    r"3-D"),
        "pairs_from_labels-strings": (lambda: fastmv.simulate.pairs_from_labels(["a", "b", "a"]),
                                      r"labels must be integer classes"),
        "closed-dataset-opimc": (lambda: fastmv.opimc([X, _ClosedDataset()], 2),
                                 r"X_list\[1\] cannot be read"),
        "closed-dataset-kmeans": (lambda: fastmv.kmeans(_ClosedDataset(), 2),
                                  r"X could not be read"),
        "closed-dataset-mvfl": (lambda: fastmv.mvfl([X, _ClosedDataset()], 2),
                                r"X_list\[1\] could not be read"),
        "huge-rows-kmeans": (lambda: fastmv.kmeans(tall, 2), r"X: .* GiB"),
        "huge-columns-kmeans": (lambda: fastmv.kmeans(wide, 2), r"X: .* GiB"),
        "huge-rows-mvfl": (lambda: fastmv.mvfl([tall, tall], 2), r"X_list\[0\]: .* GiB"),
        "huge-sparse-rows-mvmc": (lambda: fastmv.mvmc([tall_sparse], 2, None, None),
                                  r"X_list\[0\]: the per-row arrays"),
        "huge-rows-opimc": (lambda: fastmv.opimc([tall], 2), r"X_list: the labels"),
        "huge-sparse-rows-opimc": (lambda: fastmv.opimc([tall_sparse], 2), r"X_list: the row"),
        "huge-columns-opimc": (lambda: fastmv.opimc([wide], 2), r"X_list\[0\]: chunks"),
    }
    try:
        import dask.array as da  # noqa: PLC0415
    except ImportError:
        return cases
    short = da.from_array(np.ones((30, 2), bool), chunks=(10, 2))
    dviews = [da.from_array(X, chunks=(10, 3))] * 2
    cases["dask-mask-rows"] = (lambda: fastmv.opimc([X, X], 2, mask=short), r"mask must have shape")
    cases["dask-mask-rows-dask-views"] = (lambda: fastmv.opimc(dviews, 2, mask=short),
                                          r"mask must have shape")
    cases["dask-mask-rows-in-order"] = (
        lambda: fastmv.opimc(dviews, 2, mask=short, shuffle=False), r"mask must have shape")
    return cases


@pytest.mark.parametrize("case", list(_vague_cases()))
def test_vague_errors_now_name_the_argument(case):
    from fastmv.exceptions import InvalidParameterError

    call, match = _vague_cases()[case]
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_load_mat_refuses_an_empty_view_naming_it(tmp_path):
    import scipy.io  # noqa: PLC0415

    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = np.ones((5, 2)), np.zeros((0, 0))
    scipy.io.savemat(tmp_path / "empty.mat", {"X": cell, "y": np.arange(5)})
    with pytest.raises(InvalidFileError, match=r"view X\{2\} .* is empty"):
        fastmv.datasets.load_mat(tmp_path / "empty.mat")
    cell[0, 0] = np.zeros((0, 0))
    scipy.io.savemat(tmp_path / "none.mat", {"X": cell})
    with pytest.raises(InvalidFileError, match=r"view X\{1\} .* is empty"):
        fastmv.datasets.load_mat(tmp_path / "none.mat", require_labels=False)


def test_emvc_estimator_warns_naming_a_constant_view():
    import json  # noqa: PLC0415

    from fastmv.estimators import EMVC  # noqa: PLC0415
    from fastmv.exceptions import DegenerateSolutionWarning  # noqa: PLC0415

    views = [np.random.default_rng(0).normal(size=(30, 3)), np.ones((30, 2))]
    with pytest.warns(DegenerateSolutionWarning, match="view 1 is constant"):
        est = EMVC(n_clusters=2, random_state=0).fit(views)
    change = est.result_.p_hat_change
    assert np.isnan(change[0]) and np.isfinite(change[1:]).all()
    json.dumps(est.result_.to_dict(jsonable=True), allow_nan=False)


def test_a_saved_result_whose_z_was_cut_is_refused_on_load(tmp_path):
    import dataclasses  # noqa: PLC0415

    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    views = [rng.normal(size=(40, 3)) + y[:, None], rng.normal(size=(40, 2))]
    must, cannot = fastmv.simulate.pairwise_constraints(y, 30, random_state=0)
    res = fastmv.mvmc(views, 2, must, cannot, random_state=0, max_iter=3)
    dataclasses.replace(res, Z=[res.Z[0][:-5]] + res.Z[1:]).save(tmp_path / "cut.npz")
    with pytest.raises(InvalidFileError, match=r"Z\[0\] has 35 entries along axis 0"):
        fastmv.Result.load(tmp_path / "cut.npz")


# --------------------------------------------------------------------------- interrupts
_INTERRUPT = """
import signal, sys, time, warnings
import numba, numpy as np, scipy.linalg, threadpoolctl
import fastmv
warnings.simplefilter("ignore")
# LAPACK's first call in a process can take seconds (thread pools, buffers), and one LAPACK
# call cannot be interrupted: warm it up so that the signal meets the solve itself
scipy.linalg.eigh(np.eye(60) + 1.0, subset_by_index=[57, 59])
rng = np.random.default_rng(0)
n = {n}
y = np.repeat(np.arange(3), n // 3)
views = [rng.normal(size=(y.size, 20)) + 3 * y[:, None], rng.normal(size=(y.size, 15)) + y[:, None]]
started = []

def callback(info):
    if not started:
        started.append(time.perf_counter())
        print("running", flush=True)

def blas():
    return sorted((d["internal_api"], d["num_threads"]) for d in threadpoolctl.threadpool_info()
                  if d["user_api"] == "blas")

before = (numba.get_num_threads(), blas())
long = dict(max_iter=10 ** 6, tol=0.0, callback=callback)
name = {name!r}
if name == "mvmc":
    # the new defaults settle exactly (residual 0) within ~0.5 s at n = 600: keep it longer
    must, cannot = fastmv.simulate.pairwise_constraints(y, 3000, random_state=0)
    call = lambda: fastmv.mvmc(views, 3, must, cannot, **long)
elif name == "mvfl":
    labels = np.where(np.arange(y.size) % 10 == 0, y, -1)
    call = lambda: fastmv.mvfl(views, 3, labels=labels, **long)
elif name == "emvc":
    P = [fastmv.transition_matrix(X) for X in views]
    call = lambda: fastmv.emvc(P, 0.01, 0.01, n_clusters=3, **long)
elif name == "cmvnmf":
    pos = [np.abs(X) for X in views]
    pairs = np.column_stack([np.arange(0, y.size, 7)] * 2)
    # an explicit beta: with tol=0 the beta="auto" fits (no callback) would never end
    call = lambda: fastmv.cmvnmf(pos, 3, {{(0, 1): pairs}}, {{}}, beta=1.0, **long)
elif name == "opimc":
    call = lambda: fastmv.opimc(views, 3, chunk_size=100, **long)
elif name == "kmeans":
    call = lambda: fastmv.kmeans(views[0], 50, n_init=10 ** 4, max_iter=10 ** 4, tol=0.0)
elif name == "spectral_clustering":
    S = np.exp(-np.square(views[0][:, None, :2] - views[0][None, :, :2]).sum(-1))
    call = lambda: fastmv.spectral_clustering(S, 3, n_init=10 ** 4)
elif name == "markov_spectral_clustering":
    P = fastmv.transition_matrix(views[0])
    call = lambda: fastmv.markov_spectral_clustering(P, 3, n_init=10 ** 4)
if name in ("kmeans", "spectral_clustering", "markov_spectral_clustering"):
    # the blocks have no callback: run the same call with two restarts first, so that the
    # signal meets the restarts themselves, not the first call's compilation (Numba compiles
    # on the pool's threads, which a signal cannot stop: on a loaded machine, or with an empty
    # cache in a fresh clone, that took longer than the test waits)
    warm = {{"kmeans": lambda: fastmv.kmeans(views[0], 50, n_init=2, max_iter=3),
             "spectral_clustering": lambda: fastmv.spectral_clustering(S, 3, n_init=2),
             "markov_spectral_clustering":
                 lambda: fastmv.markov_spectral_clustering(P, 3, n_init=2)}}[name]
    warm()
    print("running", flush=True)
try:
    call()
    print("finished without interruption", flush=True)
except KeyboardInterrupt:
    stopped = time.perf_counter()
    after = blas()  # libraries loaded during the call are not compared
    assert numba.get_num_threads() == before[0], "Numba threads not restored"
    assert all(entry in after for entry in before[1]), ("BLAS threads not restored", before, after)
    # the moment the interrupt reached the caller (CLOCK_MONOTONIC: the parent's clock too);
    # the interpreter's shutdown after it is not part of the latency
    print("interrupted", stopped, flush=True)
    sys.exit(130)
"""

_SOLVERS_AND_BLOCKS = ["mvmc", "mvfl", "emvc", "cmvnmf", "opimc", "kmeans", "spectral_clustering",
                       "markov_spectral_clustering"]


@pytest.mark.parametrize("name", _SOLVERS_AND_BLOCKS)
def test_ctrl_c_raises_keyboard_interrupt_promptly_and_restores_state(name):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_NUM_THREADS": "2"}
    # large enough that no solve reaches a fixed point before the signal arrives; small for
    # the spectral blocks, whose one dense eigh (LAPACK: not interruptible) must stay short
    n = {"kmeans": 3000, "mvfl": 6000, "mvmc": 6000, "opimc": 300000, "spectral_clustering": 150,
         "markov_spectral_clustering": 150}.get(name, 600)
    proc = subprocess.Popen([sys.executable, "-c", _INTERRUPT.format(name=name, n=n)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        assert proc.stdout.readline().strip() == "running", proc.stderr.read()[-2000:]
        time.sleep(0.2)  # into the solve's kernels, past the first callback
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        # generous: on a loaded 2-core machine the child's shutdown alone can take seconds
        out, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in out, (proc.returncode, out, err[-3000:])
    assert "SystemError" not in err
    latency = float(out.split("interrupted", 1)[1].split()[0]) - sent
    assert latency < 5.0, f"{name}: KeyboardInterrupt {latency:.1f} s after SIGINT"


# ---------------------------------------------------------------------- lost workers
class _DeadWorker:
    exitcode = -9


class _PoolThatLostAWorker:
    """A process pool whose worker died without the pool noticing: futures never finish."""

    _broken = False

    def __init__(self):
        self._processes = {}

    def submit(self, fn, *args):
        import concurrent.futures  # noqa: PLC0415

        self._processes[1] = _DeadWorker()
        return concurrent.futures.Future()


def test_a_lost_worker_never_hangs_the_wait():
    from fastmv._core._executor import BlockMap

    blocks = BlockMap(_PoolThatLostAWorker())
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="worker process"):
        list(blocks.map(abs, [1, 2]))
    assert time.perf_counter() - start < 10


_KILL_WORKER = """
import multiprocessing as mp, os, signal, threading, time, warnings
from concurrent.futures import ProcessPoolExecutor
import numpy as np
import fastmv
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
y = np.repeat(np.arange(3), 300)
views = [rng.normal(size=(900, 20)) + 3 * y[:, None], rng.normal(size=(900, 15)) + y[:, None]]
must, cannot = fastmv.simulate.pairwise_constraints(y, 300, random_state=0)
with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
    def kill(info):
        if info.iteration == 2:
            os.kill(next(iter(pool._processes)), signal.SIGKILL)
    try:
        fastmv.mvmc(views, 3, must, cannot, max_iter=10 ** 6, tol=0.0, executor=pool,
                    callback=kill)
    except Exception as exc:
        print("raised", type(exc).__name__, flush=True)
"""


def test_killing_a_process_pool_worker_during_mvmc_raises():
    proc = _child(_KILL_WORKER, timeout=240)
    assert proc.returncode == 0 and "raised RuntimeError" in proc.stdout, \
        (proc.stdout, proc.stderr[-3000:])
