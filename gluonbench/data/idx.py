"""Read and validate IDX files (the MNIST format), gzipped or not.

An IDX file is a 4-byte magic ``0x00 0x00 <dtype> <ndim>``, ``ndim`` big-endian
uint32 dimensions, then the values. Validation checks the magic, the shape
against what the caller expects, and that exactly ``prod(shape)`` values follow:
a truncated or padded file is an error that names the file.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gluonbench.errors import DataError

_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


@dataclass(frozen=True)
class IdxHeader:
    dtype: np.dtype
    shape: tuple[int, ...]


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise DataError(f"{path} is a truncated or corrupt gzip file ({exc}); replace it with a good copy") from exc
    return raw


def parse_header(data: bytes, path: Path) -> tuple[IdxHeader, int]:
    """Return the header and the offset of the first value."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise DataError(
            f"{path} is not an IDX file (magic {data[:4].hex() or 'empty'}); "
            "expected 0000 08 <ndim> as in the MNIST files"
        )
    ndim = data[3]
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise DataError(f"{path} is truncated inside its IDX header; replace it with a good copy")
    shape = struct.unpack(">" + "I" * ndim, data[4:offset])
    return IdxHeader(_DTYPES[data[2]], tuple(shape)), offset


def read_idx(
    path: str | Path, expect_ndim: int | None = None, expect_tail: tuple[int, ...] | None = None
) -> np.ndarray:
    """Read one IDX file into a numpy array, validating it on the way.

    ``expect_ndim`` and ``expect_tail`` (the dimensions after the first, e.g.
    ``(28, 28)`` for MNIST images) reject files of the wrong kind.
    """
    path = Path(path)
    data = _read_bytes(path)
    header, offset = parse_header(data, path)
    if expect_ndim is not None and len(header.shape) != expect_ndim:
        raise DataError(
            f"{path} has {len(header.shape)} dimensions {header.shape}, expected {expect_ndim}; "
            "is it the images file where labels were expected, or the other way round?"
        )
    if expect_tail is not None and tuple(header.shape[1:]) != tuple(expect_tail):
        raise DataError(f"{path} has sample shape {header.shape[1:]}, expected {expect_tail}")
    count = int(np.prod(header.shape, dtype=np.int64))
    need = count * header.dtype.itemsize
    have = len(data) - offset
    if have != need:
        state = "truncated" if have < need else "longer than its header says"
        raise DataError(
            f"{path} is {state}: header {header.shape} needs {need} bytes of values, "
            f"found {have}; replace it with a good copy"
        )
    values = np.frombuffer(data, dtype=header.dtype, count=count, offset=offset)
    return values.reshape(header.shape)


def read_image_label_pair(images: str | Path, labels: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read an (images, labels) IDX pair, checking the counts agree.

    Returns images as uint8 ``(N, H, W, 1)`` and labels as int32 ``(N,)``, the
    layout ``gluon.data.vision.MNIST`` uses.
    """
    x = read_idx(images, expect_ndim=3)
    y = read_idx(labels, expect_ndim=1)
    if x.shape[0] != y.shape[0]:
        raise DataError(
            f"{images} holds {x.shape[0]} images but {labels} holds {y.shape[0]} labels; "
            "the two files do not belong together"
        )
    return x.reshape((*x.shape, 1)).astype(np.uint8, copy=False), y.astype(np.int32)


def write_idx(path: str | Path, array: np.ndarray, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file (gzipped when the name ends in .gz)."""
    path = Path(path)
    codes = {v: k for k, v in _DTYPES.items()}
    dtype = np.dtype(array.dtype).newbyteorder(">") if array.dtype.itemsize > 1 else array.dtype
    code = codes.get(np.dtype(dtype))
    if code is None:
        raise ValueError(f"IDX cannot store dtype {array.dtype}")
    header = bytes([0, 0, code, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
    payload = header + np.ascontiguousarray(array, dtype=dtype).tobytes()
    if compress if compress is not None else path.suffix == ".gz":
        payload = gzip.compress(payload, compresslevel=6)
    path.write_bytes(payload)
