"""
OPIMC: one pass over incomplete views
=====================================

:func:`fastmv.opimc` streams the samples in chunks and keeps only per-view centres, so it
handles views that miss samples and data larger than memory. 40% of each view is removed
(:func:`fastmv.simulate.incomplete_mask`); an all-NaN row would say the same.
"""
import matplotlib.pyplot as plt
import numpy as np

import fastmv
from fastmv import metrics, plot, simulate

views, y = fastmv.datasets.load_handwritten(["fou", "fac", "kar", "pix", "zer"])
perm = np.random.default_rng(0).permutation(y.size)  # a stream in no particular order
views, y = [V[perm] for V in views], y[perm]
mask = simulate.incomplete_mask(y.size, len(views), 0.4, random_state=0)

# the paper's algorithm: a single pass over the stream
one = fastmv.opimc(views, 10, mask=mask, chunk_size=50, max_iter=1, random_state=0)
# the default: further passes (at most 10) until the loss or the labels settle
passes = fastmv.opimc(views, 10, mask=mask, chunk_size=50, random_state=0)
print(f"one pass: ACC {metrics.accuracy(y, one.labels):.3f}; "
      f"{passes.n_iter} passes: ACC {metrics.accuracy(y, passes.labels):.3f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
plot.convergence(one, ax=axes[0])     # one pass: the loss over the stream, chunk by chunk
plot.convergence(passes, ax=axes[1])  # several passes: the objective per pass
fig.tight_layout()
