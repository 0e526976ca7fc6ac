"""Slow, obviously-correct NumPy twins of every kernel and solver step (stumpy's pattern).

Each public kernel in ``kernels/`` has a twin here with the same name, written for clarity
rather than speed (plain loops or direct NumPy formulas straight from ALGORITHMS.md). Tests
compare kernels against these on random inputs, including awkward shapes. Families live in
``tests/naive_<family>.py`` and are re-exported here by name, so ``from tests import naive``
(or ``from tests.naive import <kernel>``) reaches them all.
"""
from tests.naive_clustering import (nearest_center, cluster_sums, cluster_sums_csr, gram_to_sq_distances, strict_upper_triangle, gaussian_transition_rows, keep_nearest_neighbors)  # noqa: F401,E501
from tests.naive_clustering import lloyd, transition_matrix  # noqa: F401
from tests.naive_clustering import lloyd_step  # noqa: F401
from tests.naive_cmvnmf import (constraint_penalty, constraint_products, csr_matmul, multiplicative_update_u, multiplicative_update_v, pattern_csr)  # noqa: F401

from tests.naive_mvfl import (weight_norms, irls_diagonal, sparse_weighted_gram, pair_gram, multiplicative_f_update, labelled_rows_update)  # noqa: F401,E501
from tests.naive_opimc import (stream_layout, stream_gather_views, stream_cross, stream_assign, stream_assign_rows, stream_row_sqnorms, stream_center_shift, stream_chunk_assign, stream_scatter_dense, stream_scatter_csr, stream_scatter_counts, stream_move_dense, stream_move_csr, stream_move_counts, stream_center_sqnorms, stream_update_centers, stream_loss, stream_chunk_iterate)  # noqa: F401,E501
from tests.naive_emvc import (rowwise_simplex_projection, error_norms, reweighted_error_update, consensus_update, max_abs_diff)  # noqa: F401
from tests.naive_mvmc import (masked_residual_product, clip_correction, dense_to_csr, mvmc_dense)  # noqa: F401,E501
