"""Every public kernel called directly with indices out of range and short arrays: each
refuses with ``ValueError`` instead of reading out of bounds (run in a child process, so a
kernel that did read out of bounds fails its test, not the run)."""


import numpy as np

from tests.child import child


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
    proc = child("import tests.test_hostile_kernels as h; h._run_kernel_cases()", timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    n = sum(len(bad) for *_, bad in _kernel_cases())
    assert proc.stdout.count("refused ") == n
