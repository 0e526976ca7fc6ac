"""Slow, obviously-correct NumPy twins of every kernel and solver step (stumpy's pattern).

Each public kernel in ``kernels/`` has a twin here with the same name, written for clarity
rather than speed (plain loops or direct NumPy formulas straight from ALGORITHMS.md). Tests
compare kernels against these on random inputs, including awkward shapes. Families live in
``tests/naive_<family>.py`` and are re-exported here by name, so ``from tests import naive``
(or ``from tests.naive import <kernel>``) reaches them all.
"""
from tests.naive_clustering import (  # noqa: F401
    nearest_center, cluster_sums, cluster_sums_csr, gram_to_sq_distances,
    strict_upper_triangle, gaussian_transition_rows, keep_nearest_neighbors, lloyd,
    transition_matrix, lloyd_step,
)
from tests.naive_cmvnmf import (  # noqa: F401
    constraint_penalty, constraint_products, csr_matmul, multiplicative_update, pattern_csr,
)
from tests.naive_emvc import (  # noqa: F401
    rowwise_simplex_projection, error_norms, reweighted_error_update, consensus_update,
    max_abs_diff,
)
from tests.naive_mvfl import (  # noqa: F401
    weight_norms, irls_diagonal, sparse_weighted_gram, pair_gram, multiplicative_f_update,
    labelled_rows_update,
)
from tests.naive_mvmc import (  # noqa: F401
    masked_residual_product, clip_correction, dense_to_csr, mvmc_dense,
)
from tests.naive_opimc import (  # noqa: F401
    stream_layout, stream_gather_view, stream_cross, stream_assign,
    stream_row_sqnorms, stream_center_shift, stream_chunk_assign, stream_scatter_dense,
    stream_scatter_csr, stream_scatter_counts, stream_move_dense, stream_move_csr,
    stream_move_counts, stream_center_sqnorms, stream_update_centers, stream_loss,
    stream_chunk_iterate,
)
