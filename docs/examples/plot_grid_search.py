"""
Choosing a parameter with ``GridSearchCV``
==========================================

The estimators (:class:`fastmv.MVFL`, :class:`fastmv.OPIMC`, ...) predict the nearest learned
cluster of new samples, so scikit-learn's cross-validation scores them on held-out folds.
``GridSearchCV`` indexes samples, so the views go side by side in one array with
``view_sizes``; a :class:`fastmv.estimators.ViewTransformer` applies a scikit-learn step to
each view inside the pipeline.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fastmv
from fastmv.estimators import ViewTransformer

views, y = fastmv.datasets.load_handwritten(["fou", "zer"])
X = np.hstack(views)
sizes = [V.shape[1] for V in views]

pipe = make_pipeline(ViewTransformer(StandardScaler(), view_sizes=sizes),
                     fastmv.OPIMC(10, random_state=0))
alphas = [0.01, 0.1, 1.0, 10.0]
search = GridSearchCV(pipe, {"opimc__alpha": alphas}, scoring="adjusted_rand_score",
                      cv=KFold(3, shuffle=True, random_state=0))
search.fit(X, y)
scores = search.cv_results_["mean_test_score"]
print("held-out ARI per alpha:", np.round(scores, 3), "best:", search.best_params_)

fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(alphas, scores, yerr=search.cv_results_["std_test_score"], marker="o")
ax.set_xscale("log")
ax.set_xlabel("OPIMC alpha")
ax.set_ylabel("ARI on the held-out fold (3-fold CV)")
ax.set_title("GridSearchCV over a fastmv pipeline")
fig.tight_layout()
