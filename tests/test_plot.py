"""fastmv.plot: pictures render to non-empty files with the Agg backend."""
import builtins
import importlib
import sys
from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import fastmv  # noqa: E402
from fastmv import plot  # noqa: E402

# small max_iter on purpose: the pictures need a history, not a converged answer
pytestmark = pytest.mark.filterwarnings("ignore::fastmv.exceptions.ConvergenceWarning")


def _save(ax, path):
    ax.figure.savefig(path, dpi=60)
    plt.close(ax.figure)
    assert path.stat().st_size > 2000  # a real picture, not an empty canvas
    return path


def _blobs(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = np.eye(3)[y] * 4 + 0.3 * rng.standard_normal((n, 3))
    return X, y


def test_convergence(tmp_path):
    res = SimpleNamespace(objective=np.geomspace(1e4, 1.0, 12), converged=False)
    ax = plot.convergence(res)
    assert ax.get_yscale() == "log" and len(ax.figure.axes) == 2  # objective + its change
    _save(ax, tmp_path / "conv.png")
    one = plot.convergence(SimpleNamespace(objective=np.array([2.0])))
    assert len(one.figure.axes) == 1
    plt.close(one.figure)


def test_convergence_on_a_real_result(tmp_path):
    import fastmv
    X, y = _blobs()
    res = fastmv.cmvnmf([np.abs(X), np.abs(X[:, ::-1])], 3, None, None, max_iter=10,
                        random_state=0)
    fig, ax = plt.subplots()
    assert plot.convergence(res, ax=ax) is ax
    _save(ax, tmp_path / "cmvnmf.png")


def test_view_and_feature_weights(tmp_path):
    res = SimpleNamespace(view_weights=np.array([[1.0, 0.2, 0.5], [0.1, 0.9, 0.4]]),
                          feature_weights=np.abs(np.sin(np.arange(9.0))),
                          view_ptr=np.array([0, 4, 9]))
    _save(plot.view_weights(res, view_names=["a", "b"]), tmp_path / "vw.png")
    _save(plot.feature_weights(res), tmp_path / "fw.png")


def test_contingency_orders_clusters_by_matching(tmp_path):
    y = np.repeat([0, 1, 2], 5)
    ax = plot.contingency(y, (y + 1) % 3)
    table = ax.images[0].get_array()
    np.testing.assert_array_equal(np.diag(table), [5, 5, 5])
    assert "accuracy 1.000" in ax.get_title()
    _save(ax, tmp_path / "ct.png")
    # more clusters than classes: unmatched clusters come last
    ax = plot.contingency(y, np.arange(15) % 4)
    assert ax.images[0].get_array().shape == (3, 4)
    plt.close(ax.figure)


@pytest.mark.parametrize("kind", ["data", "similarity", "views"])
def test_embedding(kind, tmp_path):
    X, y = _blobs()
    arg = {"data": X, "views": [X, X[:, ::-1]],
           "similarity": np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))}[kind]
    ax = plot.embedding(arg, y)
    per_cluster = [np.asarray(c.get_offsets()) for c in ax.collections]  # one per cluster
    assert [len(o) for o in per_cluster] == [20, 20, 20]
    assert all(np.all(np.isfinite(o)) for o in per_cluster)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0", "1", "2"]
    # well-separated blobs stay apart in the embedding
    centres = np.array([o.mean(0) for o in per_cluster])
    spread = max(o.std(0).max() for o in per_cluster)
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)[np.triu_indices(3, 1)]
    assert gaps.min() > 2 * spread
    _save(ax, tmp_path / f"emb_{kind}.png")
    with pytest.raises(ValueError, match="labels"):
        plot.embedding(X, y[:-1])


def test_clear_import_error_without_matplotlib(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    for mod in [m for m in sys.modules if m.startswith("matplotlib")]:
        monkeypatch.delitem(sys.modules, mod)
    fresh = importlib.reload(plot)  # importing fastmv.plot itself needs no matplotlib
    with pytest.raises(ImportError, match=r"fastmv\[plot\]"):
        fresh.convergence(SimpleNamespace(objective=np.ones(3)))


def test_one_pass_convergence_and_view_weights_of_other_results(tmp_path):
    """A single OPIMC pass draws the loss over the chunks, not one dot; a result without view
    weights gets a fastmv error, not an AttributeError."""
    X, y = _blobs()
    res = fastmv.opimc([X, X[:, ::-1]], 3, chunk_size=10, max_iter=1, random_state=0)
    ax = plot.convergence(res)
    assert ax.get_xlabel() == "chunk" and len(ax.lines[0].get_xdata()) == 6
    assert "one pass" in ax.get_legend().get_texts()[0].get_text()
    assert "not converged" not in ax.get_legend().get_texts()[0].get_text()
    _save(ax, tmp_path / "opimc_one_pass.png")
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="view weights"):
        plot.view_weights(res)
    with pytest.raises(fastmv.exceptions.InvalidParameterError, match="objective"):
        plot.convergence(object())


def test_convergence_ticks_are_whole_iterations_and_plain_values():
    from matplotlib.ticker import MaxNLocator

    # a few iterations of an objective near -5321: fractional ticks and an offset by default
    res = SimpleNamespace(objective=-5321.0 - np.array([0.0, 0.4, 0.55, 0.6]),
                          converged=True)
    ax = plot.convergence(res)
    ax.figure.canvas.draw()
    locator = ax.xaxis.get_major_locator()
    assert isinstance(locator, MaxNLocator)
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 4]
    assert ticks and all(float(t).is_integer() for t in ticks)
    formatter = ax.yaxis.get_major_formatter()
    assert formatter.get_useOffset() is False
    assert formatter.get_offset() == ""
    assert any(lab.get_text().lstrip("\u2212-").startswith("532") for lab in
               ax.get_yticklabels())
    plt.close(ax.figure)


def test_one_pass_picture_counts_chunks_in_whole_numbers():
    from matplotlib.ticker import MaxNLocator

    res = SimpleNamespace(objective=np.array([-5321.0]), labels=np.zeros(30, int),
                          chunk_loss=np.array([[-100.0, -2000.0, -5321.0]]),
                          chunk_iter=np.array([[3, 2, 2]]))
    ax = plot.convergence(res)
    assert isinstance(ax.xaxis.get_major_locator(), MaxNLocator)
    assert ax.yaxis.get_major_formatter().get_useOffset() is False
    plt.close(ax.figure)


def test_embedding_gives_every_one_of_ten_clusters_its_own_place():
    rng = np.random.default_rng(0)
    c, per = 10, 30
    y = np.repeat(np.arange(c), per)
    X = np.eye(c)[y] * 3 + 0.25 * rng.standard_normal((y.size, c))
    ax = plot.embedding(X, y)
    Y = np.vstack([col.get_offsets() for col in ax.collections])
    labels = np.concatenate([np.full(len(col.get_offsets()), k)
                             for k, col in enumerate(ax.collections)])
    centres = np.array([Y[labels == k].mean(axis=0) for k in range(c)])
    spread = np.ptp(Y, axis=0).max()
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=2)[np.triu_indices(c, 1)]
    # no cluster lands on top of another: each centre keeps a distance from the others
    assert gaps.min() > 0.05 * spread
    plt.close(ax.figure)


def test_emvc_convergence_shows_the_residual_and_marks_the_iterations_with_q_zero():
    """EMVC's objective jumps from ~1e-12 to ~1e2 when Q gets its first singular values: the
    picture shades the iterations with Q = 0, says why, and shows the stop test's residual."""
    res = SimpleNamespace(objective=np.array([2e-5, 1e-12, 4e-12, 0.75, 58.0, 35.0, 34.9]),
                          residual=np.array([0.18, 0.18, 0.18, 0.18, 0.05, 1e-3, 1e-7]),
                          rank=np.array([0, 0, 0, 2, 227, 212, 207]), converged=True)
    ax = plot.convergence(res)
    twin = ax.figure.axes[1]
    assert twin.get_ylabel() == "primal residual (the stop test)"
    np.testing.assert_array_equal(twin.lines[0].get_ydata(), res.residual)
    spans = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb("0.9")]
    assert len(spans) == 1
    extent = spans[0].get_path().get_extents(spans[0].get_patch_transform())
    assert (extent.x0, extent.x1) == (0.5, 3.5)      # iterations 1-3, not the 4th
    texts = [t.get_text() for t in twin.get_legend().get_texts()]
    assert any(t.startswith("iterations 1–3: Q = 0") and "iteration 4" in t for t in texts)
    plt.close(ax.figure)
    # Q nonzero from the start (or no rank recorded): nothing shaded
    ax = plot.convergence(SimpleNamespace(objective=res.objective[3:], residual=res.residual[3:],
                                          rank=res.rank[3:]))
    assert not ax.patches and len(ax.figure.axes[1].get_legend().get_texts()) == 2
    plt.close(ax.figure)
