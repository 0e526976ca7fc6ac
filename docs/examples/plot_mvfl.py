"""
MVFL: which views matter, with 10% of the labels
================================================

:func:`fastmv.mvfl` selects views and features while it clusters. With 10% of the labels
known (:func:`fastmv.simulate.partial_labels`) it also learns a linear model ``W`` whose
view weights show which view describes which cluster.
"""
import matplotlib.pyplot as plt

import fastmv
from fastmv import metrics, plot, simulate

names = ["fou", "fac", "zer"]
views, y = fastmv.datasets.load_handwritten(names)
labels = simulate.partial_labels(y, 0.1, random_state=0)
result = fastmv.mvfl(views, 10, labels=labels, random_state=0)
print(f"ACC {metrics.accuracy(y, result.labels):.3f} with {int((labels >= 0).sum())} labels")

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
plot.view_weights(result, ax=axes[0], view_names=names)
plot.convergence(result, ax=axes[1])
fig.tight_layout()
