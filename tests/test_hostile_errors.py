"""Errors that used to be raised inside a dependency (numpy, scipy, h5py) without naming the
argument: the one validator now names it."""


import numpy as np
import pytest

import fastmv
from fastmv.exceptions import InvalidFileError


class _ClosedDataset:
    """What an h5py dataset whose file was closed does: every read raises."""

    @property
    def shape(self):
        raise RuntimeError("Not a dataset (not a dataset)")

    @property
    def dtype(self):
        raise RuntimeError("Not a dataset (not a dataset)")

    def __getitem__(self, key):
        raise RuntimeError("Not a dataset (not a dataset)")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("Not a dataset (not a dataset)")


# far beyond any machine's memory, so that the refusal never depends on the machine
_HUGE = 2 ** 31 * 64


def _vague_cases():
    import concurrent.futures  # noqa: PLC0415

    import scipy.sparse as sp  # noqa: PLC0415

    from fastmv.estimators import MVFL, MVMC, OPIMC  # noqa: PLC0415

    X = np.random.default_rng(0).normal(size=(40, 3))
    wide = np.broadcast_to(np.zeros(1), (5, _HUGE))
    tall = np.broadcast_to(np.zeros(1), (_HUGE, 5))
    tall_sparse = sp.coo_matrix((_HUGE, 5))
    cases = {
        "set_params-nested-int": (lambda: MVMC().set_params(n_clusters__foo=3),
                                  r"invalid parameter n_clusters__foo for estimator MVMC"),
        "set_params-executor": (
            lambda: MVMC(executor=concurrent.futures.ThreadPoolExecutor(1)).set_params(
                executor__max_workers=2), r"invalid parameter executor__max_workers"),
        "estimator-3d": (lambda: MVFL(2).fit(np.zeros((10, 3, 2))), r"3-D"),
        "estimator-3d-view_sizes": (lambda: OPIMC(2).fit(np.zeros((10, 3, 2)), view_sizes=[1, 2]),
                                    r"3-D"),
        "pairs_from_labels-strings": (lambda: fastmv.simulate.pairs_from_labels(["a", "b", "a"]),
                                      r"labels must be integer classes"),
        "closed-dataset-opimc": (lambda: fastmv.opimc([X, _ClosedDataset()], 2),
                                 r"X_list\[1\] cannot be read"),
        "closed-dataset-kmeans": (lambda: fastmv.kmeans(_ClosedDataset(), 2),
                                  r"X could not be read"),
        "closed-dataset-mvfl": (lambda: fastmv.mvfl([X, _ClosedDataset()], 2),
                                r"X_list\[1\] could not be read"),
        "huge-rows-kmeans": (lambda: fastmv.kmeans(tall, 2), r"X: .* GiB"),
        "huge-columns-kmeans": (lambda: fastmv.kmeans(wide, 2), r"X: .* GiB"),
        "huge-rows-mvfl": (lambda: fastmv.mvfl([tall, tall], 2), r"X_list\[0\]: .* GiB"),
        "huge-sparse-rows-mvmc": (lambda: fastmv.mvmc([tall_sparse], 2, None, None),
                                  r"X_list\[0\]: the per-row arrays"),
        "huge-rows-opimc": (lambda: fastmv.opimc([tall], 2), r"X_list: the labels"),
        "huge-sparse-rows-opimc": (lambda: fastmv.opimc([tall_sparse], 2), r"X_list: the row"),
        "huge-columns-opimc": (lambda: fastmv.opimc([wide], 2), r"X_list\[0\]: chunks"),
    }
    try:
        import dask.array as da  # noqa: PLC0415
    except ImportError:
        return cases
    short = da.from_array(np.ones((30, 2), bool), chunks=(10, 2))
    dviews = [da.from_array(X, chunks=(10, 3))] * 2
    cases["dask-mask-rows"] = (lambda: fastmv.opimc([X, X], 2, mask=short), r"mask must have shape")
    cases["dask-mask-rows-dask-views"] = (lambda: fastmv.opimc(dviews, 2, mask=short),
                                          r"mask must have shape")
    cases["dask-mask-rows-in-order"] = (
        lambda: fastmv.opimc(dviews, 2, mask=short, shuffle=False), r"mask must have shape")
    return cases


@pytest.mark.parametrize("case", list(_vague_cases()))
def test_vague_errors_now_name_the_argument(case):
    from fastmv.exceptions import InvalidParameterError

    call, match = _vague_cases()[case]
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_load_mat_refuses_an_empty_view_naming_it(tmp_path):
    import scipy.io  # noqa: PLC0415

    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = np.ones((5, 2)), np.zeros((0, 0))
    scipy.io.savemat(tmp_path / "empty.mat", {"X": cell, "y": np.arange(5)})
    with pytest.raises(InvalidFileError, match=r"view X\{2\} .* is empty"):
        fastmv.datasets.load_mat(tmp_path / "empty.mat")
    cell[0, 0] = np.zeros((0, 0))
    scipy.io.savemat(tmp_path / "none.mat", {"X": cell})
    with pytest.raises(InvalidFileError, match=r"view X\{1\} .* is empty"):
        fastmv.datasets.load_mat(tmp_path / "none.mat", require_labels=False)


def test_emvc_estimator_warns_naming_a_constant_view():
    import json  # noqa: PLC0415

    from fastmv.estimators import EMVC  # noqa: PLC0415
    from fastmv.exceptions import DegenerateSolutionWarning  # noqa: PLC0415

    views = [np.random.default_rng(0).normal(size=(30, 3)), np.ones((30, 2))]
    with pytest.warns(DegenerateSolutionWarning, match="view 1 is constant"):
        est = EMVC(n_clusters=2, random_state=0).fit(views)
    change = est.result_.p_hat_change
    assert np.isnan(change[0]) and np.isfinite(change[1:]).all()
    json.dumps(est.result_.to_dict(jsonable=True), allow_nan=False)


def test_a_saved_result_whose_z_was_cut_is_refused_on_load(tmp_path):
    import dataclasses  # noqa: PLC0415

    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    views = [rng.normal(size=(40, 3)) + y[:, None], rng.normal(size=(40, 2))]
    must, cannot = fastmv.simulate.pairwise_constraints(y, 30, random_state=0)
    res = fastmv.mvmc(views, 2, must, cannot, random_state=0, max_iter=3)
    dataclasses.replace(res, Z=[res.Z[0][:-5]] + res.Z[1:]).save(tmp_path / "cut.npz")
    with pytest.raises(InvalidFileError, match=r"Z\[0\] has 35 entries along axis 0"):
        fastmv.Result.load(tmp_path / "cut.npz")
