"""
MVMC: clustering with must-link and cannot-link pairs
=====================================================

:func:`fastmv.mvmc` completes a pairwise similarity from a few known pairs. Here the pairs
are drawn from the labels of the embedded UCI Handwritten digits (three views, 2000
samples) with :func:`fastmv.simulate.pairwise_constraints`.
"""
import matplotlib.pyplot as plt

import fastmv
from fastmv import metrics, plot, simulate

views, y = fastmv.datasets.load_handwritten(["fou", "fac", "zer"])
must_link, cannot_link = simulate.pairwise_constraints(y, 1000, random_state=0)
result = fastmv.mvmc(views, 10, must_link, cannot_link, random_state=0)
print(f"ACC {metrics.accuracy(y, result.labels):.3f}, NMI {metrics.nmi(y, result.labels):.3f}, "
      f"{result.n_iter} iterations, converged: {result.converged}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
plot.convergence(result, ax=axes[0])
plot.contingency(y, result.labels, ax=axes[1])
fig.tight_layout()
