"""Slow, obviously-correct NumPy twins of every kernel and solver step (stumpy's pattern).

Each public kernel in ``kernels/`` has a twin here with the same name, written for clarity
rather than speed (plain loops or direct NumPy formulas straight from docs/algorithms.md). Tests
compare kernels against these on random inputs, including awkward shapes. Families live in
``tests/naive_<family>.py`` and are re-exported here by name, so ``from tests import naive``
(or ``from tests.naive import <kernel>``) reaches them all.
"""
from tests.naive_clustering import (  # noqa: F401
    cluster_sums,
    cluster_sums_csr,
    gaussian_transition_rows,
    gram_to_sq_distances,
    keep_nearest_neighbors,
    lloyd,
    lloyd_step,
    lloyd_step_csr,
    lloyd_step_csr_serial,
    lloyd_step_serial,
    local_scaling_transition,
    nearest_center,
    nearest_neighbors_rows,
    seeding_distances,
    seeding_distances_csr,
    strict_upper_triangle,
    transition_matrix,
)
from tests.naive_cmvnmf import (  # noqa: F401
    constraint_penalty,
    constraint_products,
    csr_matmul,
    multiplicative_update,
    pattern_csr,
)
from tests.naive_emvc import (  # noqa: F401
    consensus_error_update,
    error_norms,
    max_abs_diff,
    rowwise_simplex_projection,
)
from tests.naive_mvfl import (  # noqa: F401
    cholesky_solve,
    irls_diagonal,
    labelled_rows_update,
    multiplicative_f_update,
    pair_gram,
    sparse_weighted_gram,
    weight_norms,
)
from tests.naive_mvmc import (  # noqa: F401
    clip_correction,
    dense_to_csr,
    masked_residual_product,
    mvmc_dense,
)
from tests.naive_opimc import (  # noqa: F401
    stream_assign,
    stream_center_shift,
    stream_center_sqnorms,
    stream_chunk_assign,
    stream_chunk_iterate,
    stream_cross,
    stream_gather_view,
    stream_layout,
    stream_loss,
    stream_move_counts,
    stream_move_csr,
    stream_move_dense,
    stream_row_sqnorms,
    stream_scatter_counts,
    stream_scatter_csr,
    stream_scatter_dense,
    stream_update_centers,
)
from tests.naive_partition import (  # noqa: F401
    n_parts,
    part_bounds,
    part_range,
    start_thread_pool,
    sum_parts,
)
