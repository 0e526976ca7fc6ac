"""NumPy twins of kernels/_partition.py: the fixed partition every kernel family uses."""
import numpy as np

MAX_PARTS = 64


def n_parts(n_items, min_per_part):
    """``clip(n_items // min_per_part, 1, MAX_PARTS)``, and 1 for no items."""
    if n_items <= 0:
        return 1
    return int(np.clip(n_items // max(min_per_part, 1), 1, MAX_PARTS))


def part_bounds(n_items, parts):
    """``floor(n_items · b / parts)`` for ``b = 0 .. parts``."""
    return np.array([(n_items * b) // parts for b in range(parts + 1)], dtype=np.int64)


def part_range(n_items, parts, part):
    """The ``part``-th pair of consecutive :func:`part_bounds`."""
    bounds = part_bounds(n_items, parts)
    return int(bounds[part]), int(bounds[part + 1])


def start_thread_pool(n):
    """Counts the iterations of a loop of length ``n``."""
    return int(max(n, 0))


def sum_parts(partial):
    """Column sums, the rows added in order."""
    total = np.zeros(partial.shape[1])
    for row in partial:
        total = total + row
    return total
