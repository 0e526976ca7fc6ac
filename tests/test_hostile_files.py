"""Tampered, truncated and inflating files: results and ``.mat`` data are checked before
anything is built, and a small file that would inflate hundreds of times is refused before
it inflates."""

import os
import zipfile

import numpy as np
import pytest

import fastmv
from fastmv.exceptions import InvalidFileError
from tests.child import child


def _saved_result(tmp_path):
    views = [np.random.default_rng(0).normal(size=(30, 4)) + np.repeat(np.arange(3), 10)[:, None]
             for _ in range(2)]
    path = tmp_path / "good.npz"
    fastmv.kmeans(views[0], 3, random_state=0).save(path)
    return path


def _npz(path, members, meta=None, compression=zipfile.ZIP_STORED):
    """Write a .npz-like zip: ``members`` maps names to raw bytes or arrays."""
    import io
    import json

    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, value in members.items():
            if isinstance(value, np.ndarray):
                buf = io.BytesIO()
                np.lib.format.write_array(buf, value, allow_pickle=True)
                value = buf.getvalue()
            z.writestr(name, value)
        if meta is not None:
            raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.frombuffer(raw, dtype=np.uint8))
            z.writestr("__fastmv_result__.npy", buf.getvalue())
    return path


def _meta(fields, cls="KMeansResult"):
    return {"class": cls, "fields": fields}


_CONTRACT = {"labels": {"kind": "array", "key": "labels"},
             "objective": {"kind": "array", "key": "objective"},
             "n_iter": {"kind": "literal", "value": 1},
             "converged": {"kind": "literal", "value": True}}
_ARRAYS = {"labels.npy": np.zeros(4, dtype=np.int64), "objective.npy": np.ones(1)}


def _npy_header_only(shape, dtype="<f8"):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                              "shape": shape})
    return buf.getvalue()


def _file_cases(tmp):
    """name -> path of a file Result.load must refuse with InvalidFileError."""
    good = _saved_result(tmp)
    raw = good.read_bytes()
    cases = {}

    def write(name, data):
        path = tmp / f"{name}.npz"
        path.write_bytes(data)
        cases[name] = path

    write("random-bytes", bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)))
    write("empty", b"")
    write("truncated", raw[: len(raw) // 2])
    write("flipped-bytes", raw[:200] + bytes(b ^ 0xFF for b in raw[200:400]) + raw[400:])
    cases["no-meta"] = _npz(tmp / "no-meta.npz", dict(_ARRAYS))
    cases["meta-not-json"] = _npz(tmp / "meta-not-json.npz", dict(_ARRAYS), b"{not json")
    cases["meta-not-utf8"] = _npz(tmp / "meta-not-utf8.npz", dict(_ARRAYS), b"\xff\xfe\x00{")
    cases["meta-deep"] = _npz(tmp / "meta-deep.npz", dict(_ARRAYS), b"[" * 100000 + b"]" * 100000)
    cases["meta-a-list"] = _npz(tmp / "meta-a-list.npz", dict(_ARRAYS), [1, 2])
    cases["unknown-class"] = _npz(tmp / "unknown-class.npz", dict(_ARRAYS),
                                  _meta(_CONTRACT, "os.system"))
    cases["missing-array"] = _npz(tmp / "missing-array.npz", {"objective.npy": np.ones(1)},
                                  _meta(_CONTRACT))
    deep = {"kind": "list", "items": []}
    node = deep
    for _ in range(200):
        node["items"] = [{"kind": "list", "items": []}]
        node = node["items"][0]
    cases["nested-fields"] = _npz(tmp / "nested-fields.npz", dict(_ARRAYS),
                                  _meta({**_CONTRACT, "centers": deep}))
    cases["unknown-kind"] = _npz(tmp / "unknown-kind.npz", dict(_ARRAYS),
                                 _meta({**_CONTRACT, "centers": {"kind": "pickle"}}))
    cases["labels-2d-float"] = _npz(tmp / "labels-2d-float.npz",
                                    {**_ARRAYS, "labels.npy": np.zeros((2, 2))}, _meta(_CONTRACT))
    cases["n_iter-string"] = _npz(tmp / "n_iter-string.npz", dict(_ARRAYS), _meta(
        {**_CONTRACT, "n_iter": {"kind": "literal", "value": "3"}}))
    cases["wrong-fields"] = _npz(tmp / "wrong-fields.npz", dict(_ARRAYS), _meta(
        {**_CONTRACT, "surprise": {"kind": "literal", "value": 1}}))
    for name, (data, indices, indptr, shape) in {
            "csr-index-1e8": ([1.0], [10 ** 8], [0, 1, 1], [2, 2]),
            "csr-indptr-decreasing": ([1.0, 1.0], [0, 1], [0, 2, 1], [2, 2]),
            "csr-short-indptr": ([1.0], [0], [0, 1], [2, 2]),
            "csr-negative-shape": ([1.0], [0], [0, 1, 1], [2, -2])}.items():
        arrays = {**_ARRAYS, "c.data.npy": np.asarray(data), "c.indices.npy":
                  np.asarray(indices, dtype=np.int64), "c.indptr.npy":
                  np.asarray(indptr, dtype=np.int64)}
        cases[name] = _npz(tmp / f"{name}.npz", arrays, _meta(
            {**_CONTRACT, "centers": {"kind": "csr", "key": "c", "shape": shape}}))
    cases["object-array"] = _npz(tmp / "object-array.npz",
                                 {**_ARRAYS, "labels.npy": np.array([{"a": 1}], dtype=object)},
                                 _meta(_CONTRACT))
    cases["declared-larger-than-stored"] = _npz(
        tmp / "declared-larger.npz", {**_ARRAYS, "labels.npy": _npy_header_only((10 ** 9,),
                                                                                "<i8")},
        _meta(_CONTRACT))
    cases["not-npy-member"] = _npz(tmp / "not-npy-member.npz",
                                   {**_ARRAYS, "evil.txt": b"hello"}, _meta(_CONTRACT))
    return cases


def test_every_damaged_or_hostile_result_file_raises_invalid_file_error(tmp_path):
    cases = _file_cases(tmp_path)
    assert len(cases) >= 23
    for name, path in cases.items():
        with pytest.raises(InvalidFileError) as err:
            fastmv.Result.load(path)
        assert str(path) in str(err.value) or os.fspath(path) in str(err.value), name
    assert isinstance(fastmv.Result.load(_saved_result(tmp_path)), fastmv.KMeansResult)


_BOMB_NPZ = """
import numpy as np, zipfile, sys, resource
import fastmv
from fastmv.exceptions import InvalidFileError
from fastmv.exceptions import InvalidFileError
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: inflating would fail
path = sys.argv[1] if len(sys.argv) > 1 else {path!r}
with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
    with z.open("labels.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(
            f, {{"descr": "<i8", "fortran_order": False, "shape": (2 ** 27,)}})
        chunk = bytes(1 << 24)
        for _ in range(2 ** 30 // len(chunk)):
            f.write(chunk)
try:
    fastmv.Result.load(path)
except InvalidFileError as exc:
    print("refused:", exc)
"""

_BOMB_MAT = """
import numpy as np, scipy.io, resource
import fastmv
from fastmv.exceptions import InvalidFileError
path = {path!r}
X = np.zeros((8000, 8000))  # 512 MB of zeros: about 0.5 MB compressed
scipy.io.savemat(path, {{"X": X}}, do_compression=True)
del X
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: inflating twice would fail
try:
    fastmv.datasets.load_mat(path)
except InvalidFileError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("kind", ["npz", "mat"])
def test_small_files_that_inflate_hundreds_of_times_are_refused_before_inflating(kind, tmp_path):
    path = tmp_path / f"bomb.{kind}"
    script = (_BOMB_NPZ if kind == "npz" else _BOMB_MAT).format(path=os.fspath(path))
    proc = child(script, timeout=300)
    assert proc.returncode == 0 and "refused:" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert os.fspath(path) in proc.stdout and "before inflating" in proc.stdout
    assert path.stat().st_size < 20 * 2 ** 20


def _mat_with_sparse_row(tmp_path, row):
    """A .mat file holding a 5 x 3 sparse view whose first stored row index is ``row``."""
    import scipy.io
    import scipy.sparse as sp

    X = sp.csc_matrix((np.array([1.0, 2.0, 3.0]), np.array([3, 1, 4], dtype=np.int32),
                       np.array([0, 1, 2, 3], dtype=np.int32)), shape=(5, 3))
    path = tmp_path / "sparse.mat"
    scipy.io.savemat(path, {"X": X, "y": np.arange(5)[:, None] % 2}, do_compression=False)
    raw = path.read_bytes()
    pattern = np.array([3, 1, 4], dtype="<i4").tobytes()
    assert raw.count(pattern) == 1
    path.write_bytes(raw.replace(pattern, np.array([row, 1, 4], dtype="<i4").tobytes()))
    return path


def test_load_mat_refuses_damaged_files_naming_them(tmp_path):
    views, y = fastmv.datasets.load_mat(_mat_with_sparse_row(tmp_path, 3))
    assert views[0].shape == (5, 3)
    proc = child(f"""
        import fastmv
        from fastmv.exceptions import InvalidFileError
        try:
            fastmv.datasets.load_mat({os.fspath(_mat_with_sparse_row(tmp_path, 10 ** 8))!r})
        except InvalidFileError as exc:
            print("refused:", exc)
    """)
    assert proc.returncode == 0 and "refused:" in proc.stdout and "sparse" in proc.stdout, \
        (proc.stdout, proc.stderr[-2000:])
    for name, data in {"garbage.mat": bytes(range(256)) * 8, "empty.mat": b"",
                       "header-only.mat": b"MATLAB 5.0 MAT-file" + b" " * 97 + bytes(8)
                       + b"\x00\x01IM"}.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InvalidFileError, match=name):
            fastmv.datasets.load_mat(path)
