"""fastmv.plot at 100 classes and thousands of features: the pictures stay readable, which a
test can state as bounds on what is drawn (labels, bars, legend entries, figure size)."""
from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fastmv import plot  # noqa: E402
from fastmv.exceptions import InvalidParameterError  # noqa: E402

# figures of 100 classes and thousands of features take tens of seconds each
pytestmark = pytest.mark.slow


def _hundred_classes(n_per=16, c=100, confused=0.2, seed=0):
    """Labels of 100 classes of ``n_per`` samples and a clustering that renames them and
    sends a fraction of the samples to a random cluster."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(c), n_per)
    pred = rng.permutation(c)[y]
    moved = rng.random(y.size) < confused
    pred[moved] = rng.integers(0, c, moved.sum())
    return y, pred


def _labelled(ticklabels):
    return [t for t in ticklabels if t.get_text()]


def test_contingency_at_100_classes_keeps_every_cell_and_few_labels():
    y, pred = _hundred_classes()
    ax = plot.contingency(y, pred)
    ax.figure.canvas.draw()
    table = ax.images[0].get_array()
    assert table.shape == (100, 100)
    # the matching puts each class's own cluster on the diagonal: most samples there
    assert np.trace(table) >= 0.75 * y.size
    assert len(ax.texts) == 0                       # no counts written in 10 000 cells
    assert 2 <= len(_labelled(ax.get_xticklabels())) <= 20
    assert 2 <= len(_labelled(ax.get_yticklabels())) <= 20
    width, height = ax.figure.get_size_inches()
    assert width <= 11 and height <= 9              # not a 47-inch-wide figure
    # a labelled column names the cluster drawn there: the one matched to that row's class
    for tick in ax.get_xticks()[:5]:
        j = int(tick)
        label = int(ax.get_xticklabels()[list(ax.get_xticks()).index(tick)].get_text())
        assert table[:, j].sum() == np.count_nonzero(pred == label)
    plt.close(ax.figure)
    ax = plot.contingency(y, pred, max_ticks=5)
    assert len(ax.get_xticks()) == 5
    plt.close(ax.figure)
    with pytest.raises(InvalidParameterError, match="max_ticks"):
        plot.contingency(y, pred, max_ticks=0)


def test_feature_weights_of_3000_features_show_the_largest_of_each_view():
    rng = np.random.default_rng(0)
    ptr = np.array([0, 1200, 2100, 3000])
    w = rng.random(3000) * 0.1
    planted = [5, 1500, 2999]                       # one strong feature per view
    w[planted] = [3.0, 2.0, 1.0]
    res = SimpleNamespace(feature_weights=w, view_ptr=ptr)
    ax = plot.feature_weights(res, view_names=["a", "b", "c"])
    ax.figure.canvas.draw()
    bars = ax.patches
    assert len(bars) == 30 and len(ax.collections) == 0   # 10 bars per view, no wall
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # each view's strongest feature comes first in its group, named by its index in the view
    assert labels[0] == "a: 5" and labels[10] == "b: 300" and labels[20] == "c: 899"
    assert [b.get_width() for b in bars][::10] == [3.0, 2.0, 1.0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == 3 and legend[0].startswith("a (1200 features, ")
    plt.close(ax.figure)
    # twelve views: fewer per view, still a bounded number of bars
    ptr12 = np.linspace(0, 3000, 13).astype(int)
    ax = plot.feature_weights(SimpleNamespace(feature_weights=w, view_ptr=ptr12))
    assert len(ax.patches) == 36
    plt.close(ax.figure)
    ax = plot.feature_weights(res, top_k=2)
    assert len(ax.patches) == 6
    plt.close(ax.figure)
    with pytest.raises(InvalidParameterError, match="top_k"):
        plot.feature_weights(res, top_k=0)


def test_embedding_of_100_clusters_colours_the_largest_and_greys_the_rest():
    rng = np.random.default_rng(0)
    c = 100
    sizes = np.full(c, 8)
    sizes[[3, 50, 97]] = 30                         # three clusters larger than the rest
    y = np.repeat(np.arange(c), sizes)
    X = np.eye(c)[y] * 3 + 0.2 * rng.standard_normal((y.size, c))
    ax = plot.embedding(X, y)
    # one grey collection for the 90 others, one per highlighted cluster
    assert len(ax.collections) == 11
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == "90 other clusters" and len(legend) == 11
    assert {"3", "50", "97"} <= set(legend[1:])
    assert sum(len(col.get_offsets()) for col in ax.collections) == y.size
    plt.close(ax.figure)
    ax = plot.embedding(X, y, highlight=[3, 50])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["98 other clusters", "3",
                                                                   "50"]
    plt.close(ax.figure)
    ax = plot.embedding(X, y, highlight=0)          # everything grey, no colours
    assert len(ax.collections) == 1
    plt.close(ax.figure)
    with pytest.raises(InvalidParameterError, match="no sample"):
        plot.embedding(X, y, highlight=[1000])


def test_embedding_of_100_planted_clusters_gives_each_its_own_place():
    """The principal plane of 100 equally spread cluster directions is nearly arbitrary (two
    clusters may fall on one spot); the polygon plane keeps every centre apart."""
    rng = np.random.default_rng(1)
    c, per = 100, 8
    y = np.repeat(np.arange(c), per)
    X = np.eye(c)[y] * 3 + 0.2 * rng.standard_normal((y.size, c))
    ax = plot.embedding(X, y, highlight=c)           # every cluster its own collection
    assert len(ax.collections) == c and ax.get_legend() is None  # no 100-entry legend
    centres = np.array([np.asarray(col.get_offsets()).mean(axis=0) for col in ax.collections])
    spread = np.ptp(np.vstack([col.get_offsets() for col in ax.collections]), axis=0).max()
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=2)[np.triu_indices(c, 1)]
    # corners of a regular 100-gon are 2 sin(pi/100) = 0.063 radii apart: 3 % of the spread
    assert gaps.min() > 0.01 * spread
    plt.close(ax.figure)


def test_view_weights_of_100_clusters_fit_a_page():
    rng = np.random.default_rng(0)
    res = SimpleNamespace(view_weights=rng.random((3, 100)))
    ax = plot.view_weights(res, view_names=["shape", "texture", "margin"])
    ax.figure.canvas.draw()
    assert ax.images[0].get_array().shape == (3, 100)      # every cell kept
    assert len(_labelled(ax.get_xticklabels())) <= 20
    assert ax.figure.get_size_inches()[0] <= 11            # not 52 inches wide
    plt.close(ax.figure)
