"""
Your own ``.mat`` file
======================

Multi-view benchmark files usually store the views as a MATLAB cell array ``X`` and the
labels as ``Y`` (or ``gt``). :func:`fastmv.datasets.load_mat` reads that layout (and the
others it lists), with or without labels. This example writes a tiny one with
:func:`scipy.io.savemat`, reads it back, clusters it, and runs the same through the command
line (``python -m fastmv run opimc --data FILE``).
"""
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import scipy.io

import fastmv
from fastmv import metrics, plot
from fastmv._app._cli import main

views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
pick = np.random.default_rng(0).choice(y.size, 300, replace=False)
cells = np.empty((1, 2), dtype=object)  # a 1 x m cell array of (n, d_v) views
cells[0, 0], cells[0, 1] = views[0][pick], views[1][pick]
folder = tempfile.mkdtemp()
path = os.path.join(folder, "digits.mat")
scipy.io.savemat(path, {"X": cells, "Y": (y[pick] + 1)[:, None]})  # 1-based, as in MATLAB

Xs, labels = fastmv.datasets.load_mat(path)
print([V.shape for V in Xs], "labels", np.unique(labels))
result = fastmv.opimc(Xs, 10, random_state=0)
print(f"ACC {metrics.accuracy(labels, result.labels):.3f}")

# the command line, run from the folder that holds the file (as in a shell: cd there first):
# metrics, seconds and where the labels went
here = os.getcwd()
os.chdir(folder)
try:
    main(["run", "opimc", "--data", "digits.mat", "--out", "labels.npy"])
finally:
    os.chdir(here)

ax = plot.contingency(labels, result.labels)
plt.tight_layout()
