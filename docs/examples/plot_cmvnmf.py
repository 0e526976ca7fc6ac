"""
CMVNMF: views whose rows do not correspond
==========================================

:func:`fastmv.cmvnmf` factorises views whose rows are different samples (or in an unknown
order), tied only by pairs across views. :func:`fastmv.simulate.unmapped` keeps 95% of each
view's rows and shuffles them; 2% of the cross-view pairs are given as constraints.
"""
import matplotlib.pyplot as plt
import numpy as np

import fastmv
from fastmv import metrics, plot, simulate

views, y = fastmv.datasets.load_handwritten(["fou", "pix", "zer"])
Xs, ys, _ = simulate.unmapped(views, y, keep=0.95, random_state=0)
must_link, cannot_link = simulate.inter_view_constraints(ys, ratio=0.02, random_state=0)
result = fastmv.cmvnmf(Xs, 10, must_link, cannot_link, random_state=0)
for a, (y_a, lab) in enumerate(zip(ys, result.labels)):
    print(f"view {a}: {len(lab)} rows, ACC {metrics.accuracy(y_a, lab):.3f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
plot.convergence(result, ax=axes[0])
plot.contingency(np.concatenate(ys), np.concatenate(result.labels), ax=axes[1])
fig.tight_layout()
