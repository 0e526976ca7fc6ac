"""Tests for fastmv.datasets: the .mat reader and the embedded Handwritten data."""
from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from fastmv.datasets import HANDWRITTEN_VIEWS, _mat, load_handwritten, load_mat
from tests.conftest import shared_dataset

HW_DIMS = {"fac": 216, "fou": 76, "kar": 64, "mor": 6, "pix": 240, "zer": 47}

# The README table of ../shared/datasets: file -> (n, view dims in cell order, classes).
SHARED = {
    "Handwritten.mat": (2000, [216, 76, 64, 6, 240, 47], 10),
    "3Sources.mat": (169, [3560, 3631, 3068], 6),
    "WebKB.mat": (1051, [1840, 3000], 2),
    "Reuters-1200.mat": (1200, [2000] * 5, 6),
    "BBCSport.mat": (544, [3183, 3203], 5),
}


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def cell(arrays, shape="row"):
    """A MATLAB cell array (object ndarray) of shape 1 x V ('row') or V x 1 ('col')."""
    V = len(arrays)
    out = np.empty((1, V) if shape == "row" else (V, 1), dtype=object)
    for i, a in enumerate(arrays):
        out.flat[i] = a
    return out


def save(tmp_path, name, variables):
    path = tmp_path / name
    scipy.io.savemat(path, variables)
    return path


@pytest.fixture
def small():
    """Three views of 7 samples with 1-based labels, as a MATLAB user would have them."""
    rng = np.random.default_rng(0)
    X = [rng.standard_normal((7, d)) for d in (3, 5, 2)]
    y = np.array([1, 1, 2, 2, 3, 3, 3])
    return X, y


def assert_dense_views(views, expected, dtype=np.float64):
    assert len(views) == len(expected)
    for got, want in zip(views, expected):
        assert isinstance(got, np.ndarray)
        assert got.dtype == dtype
        assert got.flags.c_contiguous and got.flags.writeable
        np.testing.assert_array_equal(got, np.asarray(want, dtype=dtype))


# --------------------------------------------------------------------------------------
# the shared real data sets
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("filename", sorted(SHARED))
def test_shared_files(filename):
    path = shared_dataset(filename)
    n, dims, n_classes = SHARED[filename]
    views, y = load_mat(path)
    assert [X.shape for X in views] == [(n, d) for d in dims]
    for X in views:
        assert X.dtype == np.float64
        if isinstance(X, np.ndarray):
            assert X.flags.c_contiguous
            assert np.isfinite(X).all()
    assert y.dtype == np.int64 and y.shape == (n,)
    assert np.array_equal(np.unique(y), np.arange(n_classes))
    # the files store 1-based classes: the mapping is exactly y - 1
    raw = scipy.io.loadmat(path)["y"].ravel()
    np.testing.assert_array_equal(y, raw.astype(np.int64) - 1)


def test_shared_handwritten_view_selection():
    path = shared_dataset("Handwritten.mat")
    views, y = load_mat(path, views=[1, 0, -1])
    assert [X.shape[1] for X in views] == [76, 216, 47]
    all_views, y_all = load_mat(path)
    np.testing.assert_array_equal(views[0], all_views[1])
    np.testing.assert_array_equal(views[2], all_views[5])
    np.testing.assert_array_equal(y, np.repeat(np.arange(10), 200))


# --------------------------------------------------------------------------------------
# layout variants written with scipy.io.savemat
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["row", "col"])
def test_cell_row_and_column(tmp_path, small, shape):
    X, y = small
    path = save(tmp_path, "cell.mat", {"X": cell(X, shape), "y": y.reshape(-1, 1)})
    views, labels = load_mat(path)
    assert_dense_views(views, X)
    np.testing.assert_array_equal(labels, y - 1)
    assert labels.dtype == np.int64


def test_cell_of_same_shape_views_and_str_or_pathlike(tmp_path):
    rng = np.random.default_rng(1)
    X = [rng.random((6, 4)) for _ in range(3)]
    y = np.arange(6) % 2
    path = save(tmp_path, "same.mat", {"X": cell(X, "col"), "y": y})
    for p in (path, str(path)):
        views, labels = load_mat(p)
        assert_dense_views(views, X)
        np.testing.assert_array_equal(labels, y)


def test_transposed_views_detected_per_view(tmp_path, small):
    X, y = small
    stored = [X[0].T, X[1], X[2].T]  # features x samples for two of them
    path = save(tmp_path, "t.mat", {"X": cell(stored), "y": y})
    views, _ = load_mat(path)
    assert_dense_views(views, X)


def test_square_view_is_read_as_samples_by_features(tmp_path):
    rng = np.random.default_rng(2)
    A = rng.random((5, 5))
    B = rng.random((3, 5))  # features x samples, unambiguous
    path = save(tmp_path, "sq.mat", {"X": cell([A, B]), "y": np.arange(5)})
    views, _ = load_mat(path)
    assert_dense_views(views, [A, B.T])  # the square one is NOT transposed


@pytest.mark.parametrize("names", [("x1", "x2", "x3"), ("X1", "X2", "X3"), ("x_1", "x_2", "x_3")])
def test_separate_view_variables(tmp_path, small, names):
    X, y = small
    path = save(tmp_path, "sep.mat", {**dict(zip(names, X)), "y": y})
    views, labels = load_mat(path)
    assert_dense_views(views, X)
    np.testing.assert_array_equal(labels, y - 1)


def test_separate_variables_sorted_numerically(tmp_path):
    rng = np.random.default_rng(3)
    X = {f"x{i}": rng.random((4, i)) for i in (1, 2, 10)}
    path = save(tmp_path, "num.mat", {**X, "y": [0, 1, 0, 1]})
    views, _ = load_mat(path)
    assert [v.shape[1] for v in views] == [1, 2, 10]


def test_separate_variables_with_duplicate_index_rejected(tmp_path):
    path = save(tmp_path, "dup.mat", {"x1": np.ones((3, 2)), "X1": np.ones((3, 2)), "y": [1, 2, 3]})
    with pytest.raises(ValueError, match="ambiguous views.*x1.*X1|ambiguous views.*X1.*x1"):
        load_mat(path)


def test_single_numeric_matrix_is_one_view(tmp_path):
    A = np.arange(12.0).reshape(4, 3)
    path = save(tmp_path, "one.mat", {"X": A, "y": [1, 1, 2, 2]})
    views, labels = load_mat(path)
    assert_dense_views(views, [A])
    np.testing.assert_array_equal(labels, [0, 0, 1, 1])


@pytest.mark.parametrize("label_name",
                         ["y", "Y", "gt", "GT", "truth", "Truth", "truelabel", "labels", "gnd"])
def test_label_names(tmp_path, small, label_name):
    X, y = small
    path = save(tmp_path, "lab.mat", {"X": cell(X), label_name: y.reshape(-1, 1)})
    views, labels = load_mat(path)
    assert_dense_views(views, X)
    np.testing.assert_array_equal(labels, y - 1)


def test_exact_label_name_preferred_over_other_candidates(tmp_path, small):
    X, y = small
    other = np.array([7, 7, 7, 8, 8, 8, 8])
    path = save(tmp_path, "two.mat", {"X": cell(X), "gt": other, "y": y})
    _, labels = load_mat(path)
    np.testing.assert_array_equal(labels, y - 1)


def test_labels_in_cell_of_identical_vectors(tmp_path, small):
    X, y = small
    path = save(tmp_path, "lc.mat", {"X": cell(X), "truelabel": cell([y, y, y])})
    _, labels = load_mat(path)
    np.testing.assert_array_equal(labels, y - 1)


@pytest.mark.parametrize("raw, expected", [
    ([3, 3, 7, 7, 10, 3, 10], [0, 0, 1, 1, 2, 0, 2]),       # gaps
    ([-1, 1, -1, 1, 1, -1, -1], [0, 1, 0, 1, 1, 0, 0]),     # +-1 coding
    ([0.5, 2.0, 0.5, 2.0, 1.0, 1.0, 1.0], [0, 2, 0, 2, 1, 1, 1]),  # float-valued
    ([0, 0, 1, 1, 2, 2, 2], [0, 0, 1, 1, 2, 2, 2]),         # already 0-based
])
def test_label_values_mapped_to_consecutive_zero_based(tmp_path, small, raw, expected):
    X, _ = small
    path = save(tmp_path, "map.mat", {"X": cell(X), "y": np.array(raw)})
    _, labels = load_mat(path)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, expected)


@pytest.mark.parametrize("int_dtype", [np.uint8, np.uint16, np.int8, np.int16, np.int32,
                                       np.int64, np.float32, np.bool_])
def test_integer_and_other_stored_types_become_float64(tmp_path, int_dtype):
    rng = np.random.default_rng(4)
    A = rng.integers(0, 2 if int_dtype is np.bool_ else 100, size=(6, 3)).astype(int_dtype)
    path = save(tmp_path, "int.mat", {"X": cell([A, A.T]),
                                      "y": np.array([1, 2, 1, 2, 1, 2], dtype=np.uint8)})
    views, labels = load_mat(path)
    assert_dense_views(views, [A.astype(np.float64), A.astype(np.float64)])
    np.testing.assert_array_equal(labels, [0, 1, 0, 1, 0, 1])


def test_sparse_views_stay_sparse_csr(tmp_path):
    rng = np.random.default_rng(5)
    S1 = sp.random(8, 30, density=0.2, format="csr", random_state=rng)
    S2 = sp.random(25, 8, density=0.2, format="csc", random_state=rng)  # features x samples
    D = rng.random((8, 4))
    path = save(tmp_path, "sp.mat", {"X": cell([S1, S2, D]), "y": np.arange(8) % 3 + 1})
    views, labels = load_mat(path)
    assert sp.issparse(views[0]) and views[0].format == "csr" and views[0].dtype == np.float64
    assert sp.issparse(views[1]) and views[1].format == "csr" and views[1].shape == (8, 25)
    assert views[0].has_sorted_indices and views[1].has_sorted_indices
    np.testing.assert_array_equal(views[0].toarray(), S1.toarray())
    np.testing.assert_array_equal(views[1].toarray(), S2.T.toarray())
    assert_dense_views(views[2:], [D])
    np.testing.assert_array_equal(labels, np.arange(8) % 3)


def test_dtype_float32(tmp_path, small):
    X, y = small
    S = sp.random(7, 9, density=0.3, format="csr", random_state=0)
    path = save(tmp_path, "f32.mat", {"X": cell([*X, S]), "y": y})
    views, _ = load_mat(path, dtype=np.float32)
    assert_dense_views(views[:3], X, dtype=np.float32)
    assert views[3].dtype == np.float32 and views[3].format == "csr"
    with pytest.raises(ValueError, match="dtype"):
        load_mat(path, dtype=np.int32)


def test_views_selection(tmp_path, small):
    X, y = small
    path = save(tmp_path, "sel.mat", {"X": cell(X), "y": y})
    views, labels = load_mat(path, views=[2, 0])
    assert_dense_views(views, [X[2], X[0]])
    views, _ = load_mat(path, views=1)
    assert_dense_views(views, [X[1]])
    views, _ = load_mat(path, views=(-1,))
    assert_dense_views(views, [X[2]])
    np.testing.assert_array_equal(labels, y - 1)
    with pytest.raises(ValueError, match=r"views index 3 out of range.*3 view"):
        load_mat(path, views=[0, 3])
    with pytest.raises(ValueError, match="more than once"):
        load_mat(path, views=[1, 1])
    with pytest.raises(ValueError, match="at least one"):
        load_mat(path, views=[])
    with pytest.raises(TypeError, match="views"):
        load_mat(path, views=[True])
    with pytest.raises(TypeError, match="views"):
        load_mat(path, views=["fac"])


def test_file_without_extension(tmp_path, small):
    X, y = small
    path = save(tmp_path, "data.mat", {"X": cell(X), "y": y})
    plain = tmp_path / "data_noext"
    plain.write_bytes(path.read_bytes())
    views, _ = load_mat(plain)
    assert_dense_views(views, X)


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------
def fake_v73(path):
    """What MATLAB's save -v7.3 writes: a 128-byte MATLAB header (version 0x0200) in a
    512-byte user block, followed by the HDF5 superblock signature."""
    header = (b"MATLAB 7.3 MAT-file, Platform: GLNXA64, "
              b"Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 .")
    header = header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02" + b"IM"
    path.write_bytes(header.ljust(512, b"\x00") + b"\x89HDF\r\n\x1a\n" + b"\x00" * 256)
    return path


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.mat"
    with pytest.raises(FileNotFoundError, match="nope.mat"):
        load_mat(missing)
    with pytest.raises(IsADirectoryError, match="is a directory, not a .mat file"):
        load_mat(tmp_path)  # a directory is not a file


def test_v73_hdf5_file_refused_clearly(tmp_path):
    path = fake_v73(tmp_path / "big73.mat")
    with pytest.raises(ValueError, match=r"big73\.mat.*-v7\.3.*HDF5.*scipy\.io\.loadmat") as info:
        load_mat(path)
    assert "-v7'" in str(info.value) and "h5py" in str(info.value)


def test_plain_hdf5_file_refused_clearly(tmp_path):
    path = tmp_path / "h5.mat"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 600)
    with pytest.raises(ValueError, match=r"h5\.mat.*HDF5"):
        load_mat(path)


def test_v73_fallback_when_loadmat_says_not_implemented(tmp_path, monkeypatch):
    # scipy.io.loadmat raises NotImplementedError on a v7.3 header; if the signature sniffing
    # misses a file, that error is still turned into the same clear ValueError.
    path = fake_v73(tmp_path / "sniffmiss.mat")
    monkeypatch.setattr(_mat, "_refuse_hdf5", lambda p: None)
    with pytest.raises(ValueError, match=r"sniffmiss\.mat.*-v7\.3"):
        load_mat(path)


def test_not_a_mat_file(tmp_path):
    path = tmp_path / "junk.mat"
    path.write_bytes(b"this is not a MATLAB file " * 20)
    with pytest.raises(ValueError, match=r"junk\.mat.*MATLAB \.mat file"):
        load_mat(path)


def test_no_views(tmp_path):
    path = save(tmp_path, "noviews.mat", {"y": [1, 2, 3], "W": np.ones((3, 3, 2)), "s": "text"})
    with pytest.raises(ValueError, match=r"no views found in .*noviews\.mat.*variables found: "
                                         r".*y \(1x3 .*W \(3x3x2 float64\).*s \(1 char\)"):
        load_mat(path)


def test_no_labels_required(tmp_path, small):
    X, _ = small
    path = save(tmp_path, "nolab.mat", {"X": cell(X), "target_names": np.ones((3, 3))})
    with pytest.raises(ValueError, match=r"no labels found in .*nolab\.mat.*truelabel.*"
                                         r"variables found: X \(1x3 cell\), target_names"):
        load_mat(path, require_labels=True)


def test_file_without_labels_is_accepted(tmp_path, small):
    X, _ = small
    path = save(tmp_path, "nolab.mat", {"X": cell(X), "target_names": np.ones((3, 3))})
    views, y = load_mat(path)
    assert y is None
    assert_dense_views(views, X)


def test_without_labels_orientation_from_the_shared_sample_count(tmp_path, small):
    X, _ = small
    path = save(tmp_path, "nolab_t.mat", {"X": cell([X[0], X[1].T, X[2]])})
    views, y = load_mat(path, views=[1, 0])
    assert y is None
    assert_dense_views(views, [X[1], X[0]])


def test_without_labels_unmapped_views_read_rows_as_samples(tmp_path):
    rng = np.random.default_rng(1)
    A, B = rng.random((6, 3)), rng.random((4, 5))
    views, y = load_mat(save(tmp_path, "unmapped.mat", {"X": cell([A, B])}))
    assert y is None
    assert_dense_views(views, [A, B])


def test_truncated_file_names_the_file(tmp_path, small):
    X, y = small
    full = save(tmp_path, "full.mat", {"X": cell(X), "y": y})
    data = full.read_bytes()
    trunc = tmp_path / "trunc.mat"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"trunc\.mat.*truncated or corrupt"):
        load_mat(trunc)
    head = tmp_path / "head.mat"
    head.write_bytes(data[:128])
    with pytest.raises(ValueError, match=r"head\.mat.*holds no variables.*truncated"):
        load_mat(head)


def test_unusable_labels(tmp_path, small):
    X, _ = small
    path = save(tmp_path, "badlab.mat", {"X": cell(X), "y": np.ones((7, 2))})
    with pytest.raises(ValueError, match=r"no usable labels in .*badlab\.mat.*y"):
        load_mat(path)


def test_label_length_matches_no_orientation(tmp_path, small):
    X, y = small
    path = save(tmp_path, "len.mat", {"X": cell(X), "y": y[:5]})
    with pytest.raises(ValueError, match=r"len\.mat.*X\{1\} has shape 7 x 3.*length 5.*"
                                         r"variables found: X \(1x3 cell\), y \(1x5 "):
        load_mat(path)


def test_non_numeric_view_in_cell(tmp_path):
    path = save(tmp_path, "str.mat", {"X": cell([np.ones((3, 2)), "text"]), "y": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"view X\{2\} in .*str\.mat"):
        load_mat(path)


def test_several_unnamed_cells_are_ambiguous(tmp_path, small):
    X, y = small
    path = save(tmp_path, "cells.mat", {"A": cell(X), "B": cell(X), "y": y})
    with pytest.raises(ValueError, match=r"several cells \(A, B\)"):
        load_mat(path)


def test_single_cell_with_other_name(tmp_path, small):
    X, y = small
    path = save(tmp_path, "fea.mat", {"features_all": cell(X, "col"), "Y": y})
    views, _ = load_mat(path)
    assert_dense_views(views, X)


# --------------------------------------------------------------------------------------
# the embedded Handwritten data
# --------------------------------------------------------------------------------------
def test_handwritten_shapes_classes_dtype():
    views, y = load_handwritten()
    assert HANDWRITTEN_VIEWS == ("fac", "fou", "kar", "mor", "pix", "zer")
    assert [X.shape for X in views] == [(2000, HW_DIMS[v]) for v in HANDWRITTEN_VIEWS]
    for X in views:
        assert X.dtype == np.float64 and X.flags.c_contiguous and X.flags.writeable
        assert np.isfinite(X).all()
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.repeat(np.arange(10), 200))
    # fac and pix are integer-valued counts (pix: 0..6 pixel averages)
    np.testing.assert_array_equal(views[0], np.round(views[0]))
    assert views[4].min() == 0 and views[4].max() == 6


def test_handwritten_float32():
    views64, _ = load_handwritten(["fou", "pix"])
    views32, y = load_handwritten(["fou", "pix"], dtype=np.float32)
    assert all(X.dtype == np.float32 for X in views32)
    np.testing.assert_array_equal(views32[0], views64[0].astype(np.float32))
    np.testing.assert_array_equal(views32[1], views64[1])
    with pytest.raises(ValueError, match="dtype"):
        load_handwritten(dtype=np.int64)


def test_handwritten_view_selection():
    full, _ = load_handwritten()
    by_name, _ = load_handwritten(["fou", "fac", "zer"])
    by_index, _ = load_handwritten([1, 0, 5])
    mixed, _ = load_handwritten(("FOU", 0, -1))
    for sel in (by_name, by_index, mixed):
        assert [X.shape[1] for X in sel] == [76, 216, 47]
        for X, ref in zip(sel, (full[1], full[0], full[5])):
            np.testing.assert_array_equal(X, ref)
    single, _ = load_handwritten("mor")
    assert len(single) == 1 and single[0].shape == (2000, 6)
    single, _ = load_handwritten(3)
    np.testing.assert_array_equal(single[0], full[3])


def test_handwritten_selection_errors():
    with pytest.raises(ValueError, match="unknown Handwritten view 'digits'.*fac, fou"):
        load_handwritten(["fou", "digits"])
    with pytest.raises(ValueError, match="out of range"):
        load_handwritten([6])
    with pytest.raises(ValueError, match="more than once"):
        load_handwritten(["fac", 0])
    with pytest.raises(ValueError, match="at least one"):
        load_handwritten([])
    with pytest.raises(TypeError, match="views"):
        load_handwritten([1.5])
    with pytest.raises(TypeError, match="views"):
        load_handwritten(object())


def test_handwritten_returns_independent_copies():
    views, y = load_handwritten(["kar"])
    expected = views[0].copy()
    views[0][:] = -1.0
    y[:] = 99
    again, y2 = load_handwritten(["kar"])
    np.testing.assert_array_equal(again[0], expected)
    np.testing.assert_array_equal(y2, np.repeat(np.arange(10), 200))


def test_handwritten_is_package_data_and_small():
    ref = importlib.resources.files("fastmv.datasets").joinpath("data", "handwritten.npz")
    assert ref.is_file()
    with importlib.resources.as_file(ref) as path:
        assert Path(path).stat().st_size < 5 * 2**20


def test_handwritten_matches_shared_file():
    """Same rows in the same order as the community Handwritten.mat: fac and pix identical,
    fou/kar/mor/zer equal to the CSV rounding (about five significant digits)."""
    path = shared_dataset("Handwritten.mat")
    shared, y_shared = load_mat(path)
    embedded, y = load_handwritten()
    np.testing.assert_array_equal(y, y_shared)  # the labels align row by row
    for name, E, S in zip(HANDWRITTEN_VIEWS, embedded, shared):
        assert E.shape == S.shape, name
        if name in ("fac", "pix"):
            np.testing.assert_array_equal(E, S, err_msg=name)
        else:
            err = np.abs(E - S)
            assert np.all(err <= 5.0001e-5 * np.abs(S) + 5e-8), name
            assert err.max() > 0, name  # really the rounded copy, not the shared file


# ------------------------------------------------- what scipy reads by name; the file's codes
def _with_truncated_last_variable(path, compress):
    X = np.empty((1, 2), dtype=object)
    X[0, 0], X[0, 1] = np.arange(24.0).reshape(8, 3), np.arange(32.0).reshape(8, 4)
    y = np.array([[1, 1, 2, 2, 3, 3, 10, 10]])
    extra = np.random.default_rng(0).random((40, 40))  # incompressible: the cut stays in it
    scipy.io.savemat(path, {"X": X, "y": y, "extra": extra},
                     do_compression=compress)
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # the last variable cut short
    return X, y


@pytest.mark.parametrize("compress", [False, True])
def test_reads_what_scipy_reads_by_variable_name(tmp_path, compress):
    path = tmp_path / "partly.mat"
    X, y = _with_truncated_last_variable(path, compress)
    with pytest.raises(Exception):  # noqa: B017 - scipy's own failure on the whole file
        scipy.io.loadmat(path)
    by_name = scipy.io.loadmat(path, variable_names=["X", "y"])
    with pytest.warns(UserWarning, match=r"partly\.mat.*skipped the variable\(s\) extra"):
        views, labels = load_mat(path)
    np.testing.assert_array_equal(views[0], by_name["X"][0, 0])
    np.testing.assert_array_equal(views[1], X[0, 1])
    np.testing.assert_array_equal(labels, [0, 0, 1, 1, 2, 2, 3, 3])


def test_a_file_whose_views_are_cut_is_still_refused(tmp_path):
    path = tmp_path / "cut.mat"
    _with_truncated_last_variable(path, True)
    data = path.read_bytes()
    path.write_bytes(data[:200])  # inside X itself
    with pytest.raises(ValueError, match=r"cut\.mat"):
        load_mat(path)


def test_return_classes_maps_back_to_the_files_codes(tmp_path, small):
    views, _ = small
    codes = np.array([10, 3, 3, 7, 7, 10, 3])
    path = tmp_path / "codes.mat"
    X = np.empty((1, len(views)), dtype=object)
    for v, V in enumerate(views):
        X[0, v] = V
    scipy.io.savemat(path, {"X": X, "y": codes[None, :]})
    got, y, classes = load_mat(path, return_classes=True)
    np.testing.assert_array_equal(classes, [3, 7, 10])
    np.testing.assert_array_equal(classes[y], codes)
    assert len(got) == len(views)
    scipy.io.savemat(path, {"X": X})
    assert load_mat(path, return_classes=True)[1:] == (None, None)
