"""
OPIMC over Dask arrays
======================

Views that do not fit in memory (a Zarr store, many files) can be given as
``dask.array`` views: the workers compute the row blocks, :func:`fastmv.opimc` streams
them chunk by chunk. The labels are those of the same views in memory.
"""
import dask
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

import fastmv
from fastmv import plot

views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
lazy = [da.from_array(V, chunks=(250, V.shape[1])) for V in views]
with dask.config.set(scheduler="threads"):
    streamed = fastmv.opimc(lazy, 10, chunk_size=250, random_state=0)
in_memory = fastmv.opimc(views, 10, chunk_size=250, random_state=0)
print("same labels as in memory:", bool(np.array_equal(streamed.labels, in_memory.labels)))

ax = plot.convergence(streamed)
plt.tight_layout()
