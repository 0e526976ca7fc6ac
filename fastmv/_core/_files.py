"""Reading untrusted files: sizes are checked against the file before anything is inflated.

A small ``.npz`` or ``.mat`` file can declare (or inflate to) gigabytes; NumPy and SciPy then
allocate first and fail with a bare ``MemoryError``, or build arrays whose indices point
anywhere. The readers here check every declared size against the bytes actually present and
against a limit (:data:`MAX_INFLATION` times the file's size, at least
:data:`INFLATION_FLOOR` bytes) and raise :class:`~fastmv.exceptions.InvalidFileError`
naming the file and the problem.
"""
from __future__ import annotations

import os
import struct
import zipfile
import zlib

import numpy as np

from ..exceptions import InvalidFileError

__all__ = ["MAX_INFLATION", "INFLATION_FLOOR", "read_npz", "check_mat_inflation"]

#: Largest ratio of inflated to stored bytes accepted: far above what compressed datasets and
#: uncompressed ``.npz`` results reach, far below what a decompression bomb needs.
MAX_INFLATION = 200
#: Inflated sizes up to this many bytes are accepted whatever the ratio.
INFLATION_FLOOR = 256 * 2 ** 20

_CHUNK = 1 << 22


def inflation_limit(path: str) -> int:
    """Bytes that the file at ``path`` may inflate to."""
    return max(INFLATION_FLOOR, MAX_INFLATION * os.path.getsize(path))


def _npy_header(fh, where):
    """(shape, fortran, dtype, header bytes) of a ``.npy`` stream, validated."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError,
            UnicodeDecodeError, struct.error, EOFError) as exc:
        raise InvalidFileError(f"{where}: not a valid .npy array ({exc})") from None
    if dtype.hasobject:
        raise InvalidFileError(f"{where}: holds Python objects, which are never loaded")
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise InvalidFileError(f"{where}: invalid shape {shape}")
    return shape, fortran, dtype


def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file at ``path``, after checking each member's declared
    shape and dtype against its stored size, and the total against the inflation limit."""
    path = os.fspath(path)
    limit = inflation_limit(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise InvalidFileError(f"{path}: not a .npz (zip) file ({exc})") from None
    out = {}
    with archive:
        infos = archive.infolist()
        total = sum(info.file_size for info in infos)
        if total > limit:
            raise InvalidFileError(
                f"{path}: declares {total} bytes of arrays in a {os.path.getsize(path)}-byte "
                f"file (limit {limit}); refused before inflating")
        for info in infos:
            name = info.filename
            where = f"{path} [{name}]"
            if not name.endswith(".npy") or info.is_dir():
                raise InvalidFileError(f"{where}: unexpected member (not a .npy array)")
            try:
                with archive.open(info) as fh:
                    shape, fortran, dtype = _npy_header(fh, where)
                    header = fh.tell()
                    count = int(np.prod(shape, dtype=object))
                    nbytes = count * dtype.itemsize
                    if nbytes != info.file_size - header:
                        raise InvalidFileError(
                            f"{where}: declares shape {shape} of {dtype} ({nbytes} bytes) but "
                            f"stores {info.file_size - header} bytes")
                    raw = fh.read(nbytes)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
                    RuntimeError) as exc:
                raise InvalidFileError(f"{where}: damaged member ({exc})") from None
            if len(raw) != nbytes:
                raise InvalidFileError(f"{where}: truncated ({len(raw)} of {nbytes} bytes)")
            arr = np.frombuffer(raw, dtype=dtype, count=count)
            arr = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
            out[name[:-4]] = np.array(arr)  # own, writeable memory
    return out


def check_mat_inflation(path: str) -> None:
    """Refuse a MATLAB v5 file whose compressed variables inflate past the limit, by
    inflating them chunk by chunk into nothing (constant memory) before SciPy reads it."""
    limit = inflation_limit(path)
    total = 0
    with open(path, "rb") as fh:
        head = fh.read(128)
        if len(head) < 128 or head[126:128] not in (b"IM", b"MI"):
            return  # not a v5 file (v4 stores no compressed data): SciPy decides
        endian = "<" if head[126:128] == b"IM" else ">"
        while True:
            tag = fh.read(8)
            if len(tag) < 8:
                return
            mtype, nbytes = struct.unpack(endian + "II", tag)
            if mtype != 15:  # miCOMPRESSED; anything else is stored as is
                total += nbytes
                fh.seek(nbytes + (-nbytes % 8), os.SEEK_CUR)
                continue
            inflater = zlib.decompressobj()
            left = nbytes
            while left > 0:
                chunk = fh.read(min(left, _CHUNK))
                if not chunk:
                    break
                left -= len(chunk)
                try:
                    total += len(inflater.decompress(chunk, _CHUNK))
                    while inflater.unconsumed_tail and total <= limit:
                        total += len(inflater.decompress(inflater.unconsumed_tail, _CHUNK))
                except zlib.error:
                    return  # damaged stream: SciPy's reader reports it
                if total > limit:
                    raise InvalidFileError(
                        f"{path}: its compressed variables inflate to more than {limit} bytes "
                        f"from a {os.path.getsize(path)}-byte file; refused before inflating "
                        f"(limit {MAX_INFLATION}x the file size, at least {INFLATION_FLOOR} "
                        "bytes)")
