"""RecordIO shards: pack many small files into large containers, verify them, and read them safely.

The on-disk format is MXNet's own (dmlc-core): each record is a little-endian
``uint32`` magic ``0xced7230a``, a ``uint32`` whose top 3 bits are a
continuation flag and low 29 bits the length, then the payload padded to 4
bytes. A payload that contains the magic at a 4-byte-aligned position is split
there into parts (flags 1, 2, ..., 3) and the reader puts the magic back.
Payloads are MXNet image records: an ``IRHeader`` (``<IfQQ``: flag, label, id,
id2) then the original file bytes, as ``im2rec --pass-through`` writes them, so
``gluon.data.vision.ImageRecordDataset`` and ``mx.io.ImageRecordIter`` read
the shards unchanged.

:func:`pack` writes ``OUT_DIR/<name>-NNNNN.rec`` + ``.idx`` with
``mx.recordio.MXIndexedRecordIO`` and a ``manifest.json`` (shards, records,
bytes, SHA-256 per shard). Everything is written into a hidden temporary folder
and renamed into place at the end, the manifest last, so an interrupted pack
leaves no half-written data set. :func:`verify` re-reads every shard.
:class:`RecordParser` is the pure-Python reader the sources and the pipe
consumer use: it checks the framing and raises :class:`DataError` naming the
shard and the byte offset of the bad record.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from gluonbench.data.store import LocalStore, safe_key
from gluonbench.errors import DataError, GluonbenchError
from gluonbench.files import read_text, require_regular
from gluonbench.names import param, param_example
from gluonbench.settings import plain_name
from gluonbench.validate import check_image_bytes, check_seed, outside_of

log = logging.getLogger(__name__)

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
LENGTH_MASK = (1 << 29) - 1
IR_FORMAT = "<IfQQ"
IR_SIZE = struct.calcsize(IR_FORMAT)
MANIFEST = "manifest.json"
FORMAT = "gluonbench-recordio/1"
DEFAULT_SHARD_SIZE = 150_000_000


# -- framing -----------------------------------------------------------------


def _pad(n: int) -> int:
    return (n + 3) & ~3


def frame(payload: bytes) -> bytes:
    """``payload`` as one RecordIO record, byte for byte as MXNet's writer frames it."""
    view = np.frombuffer(payload, dtype="<u4", count=len(payload) // 4)
    cuts = (np.flatnonzero(view == MAGIC) * 4).tolist()
    if not cuts:
        return _part(0, payload)
    out = []
    start = 0
    for n, cut in enumerate(cuts):
        out.append(_part(1 if n == 0 else 2, payload[start:cut]))
        start = cut + 4
    out.append(_part(3, payload[start:]))
    return b"".join(out)


def _part(cflag: int, data: bytes) -> bytes:
    n = len(data)
    return struct.pack("<II", MAGIC, (cflag << 29) | n) + data + b"\0" * (_pad(n) - n)


class RecordParser:
    """Incremental RecordIO reader: :meth:`feed` bytes in order, get whole payloads back.

    ``where`` names the stream (a shard, a FIFO) and ``offset`` is the absolute
    position of the first byte fed, so errors say exactly where a record is bad.
    """

    def __init__(self, where: str, offset: int = 0) -> None:
        self.where = where
        self._buf = bytearray()
        self._pos = 0  # parse position inside _buf
        self._base = offset  # absolute offset of _buf[0]
        self._parts: list[bytes] = []
        self._record_start = offset

    @property
    def offset(self) -> int:
        """Absolute offset of the next byte not yet parsed."""
        return self._base + self._pos

    def feed(self, data: bytes | memoryview) -> list[bytes]:
        """Whole payloads completed by ``data``."""
        return [payload for _, payload in self.records(data)]

    def records(self, data: bytes | memoryview) -> list[tuple[int, bytes]]:
        """(absolute start offset, payload) of every record completed by ``data``."""
        if self._pos == len(self._buf):
            # nothing pending (the usual case): parse ``data`` in place, keep only its incomplete tail
            self._base += self._pos
            self._buf, self._pos = bytearray(), 0
            view = memoryview(data)
            try:
                out, pos = self._parse(view, 0)
                self._buf += view[pos:]
            finally:
                view.release()
            self._base += pos
            return out
        if self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0
        self._buf += data
        view = memoryview(self._buf)
        try:
            out, self._pos = self._parse(view, self._pos)
        finally:
            view.release()
        return out

    def _parse(self, buf: memoryview, pos: int) -> tuple[list[tuple[int, bytes]], int]:
        """Whole records in ``buf`` from ``pos`` on; ``buf[0]`` is at absolute offset ``self._base``."""
        out: list[tuple[int, bytes]] = []
        end = len(buf)
        base = self._base
        while end - pos >= 8:
            magic, lrec = struct.unpack_from("<II", buf, pos)
            if magic != MAGIC:
                raise DataError(
                    f"{self.where}: bad record magic at byte offset {base + pos} "
                    f"(found {magic:#010x}, expected {MAGIC:#010x}); the file is corrupt, re-create it"
                )
            cflag, length = lrec >> 29, lrec & LENGTH_MASK
            stop = pos + 8 + _pad(length)
            if stop > end:
                break
            if not self._parts and cflag in (2, 3):
                raise DataError(
                    f"{self.where}: record at byte offset {base + pos} continues a record that never "
                    "started; the file is corrupt, re-create it"
                )
            if self._parts and cflag in (0, 1):
                raise DataError(
                    f"{self.where}: record at byte offset {self._record_start} is cut short at byte offset "
                    f"{base + pos}; the file is corrupt, re-create it"
                )
            if cflag > 3:
                raise DataError(f"{self.where}: bad record flag {cflag} at byte offset {base + pos}")
            if not self._parts:
                self._record_start = base + pos
            part = bytes(buf[pos + 8 : pos + 8 + length])
            pos = stop
            if cflag == 0:
                out.append((self._record_start, part))
            elif cflag == 3:
                self._parts.append(part)
                out.append((self._record_start, MAGIC_BYTES.join(self._parts)))
                self._parts = []
            else:
                self._parts.append(part)
        return out, pos

    def finish(self) -> None:
        """Raise :class:`DataError` if the stream ended inside a record."""
        left = len(self._buf) - self._pos
        if left or self._parts:
            start = self._record_start if self._parts else self.offset
            raise DataError(
                f"{self.where} is truncated: the record at byte offset {start} is incomplete "
                f"({left} byte(s) left over); re-create or re-copy it"
            )


def parse_record(data: bytes, where: str, offset: int) -> bytes:
    """The one record that ``data`` (read from ``offset``) starts with; :class:`DataError` if it is not whole."""
    parser = RecordParser(where, offset)
    records = parser.feed(data)
    if not records:
        if len(data) < 8:
            raise DataError(
                f"{where}: the record at byte offset {offset} lies past the end of the file; "
                "the index and the shard do not match, re-create them"
            )
        parser.finish()
    return records[0]


# -- image records -------------------------------------------------------------


@dataclass(frozen=True)
class RecordHeader:
    flag: int
    label: float | tuple[float, ...]
    id: int
    id2: int


def pack_header(label: float, record_id: int) -> bytes:
    return struct.pack(IR_FORMAT, 0, float(label), int(record_id), 0)


def unpack(payload: bytes, where: str = "record") -> tuple[RecordHeader, bytes]:
    """Split an MXNet image record into its header and the image bytes (as ``mx.recordio.unpack``)."""
    if len(payload) < IR_SIZE:
        raise DataError(f"{where}: record of {len(payload)} bytes is too short for an image-record header")
    flag, label, rid, rid2 = struct.unpack_from(IR_FORMAT, payload)
    body = payload[IR_SIZE:]
    if flag > 0:
        if len(body) < 4 * flag:
            raise DataError(f"{where}: record header says {flag} labels but the record is too short")
        labels = tuple(np.frombuffer(body, np.float32, flag).tolist())
        return RecordHeader(flag, labels, rid, rid2), body[4 * flag :]
    return RecordHeader(flag, label, rid, rid2), body


# -- index and manifest ----------------------------------------------------------


def parse_index(text: str, where: str, rec_size: int | None = None) -> list[tuple[int, int]]:
    """``key<TAB>offset`` lines -> [(key, offset)]; offsets past ``rec_size`` are an error."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        try:
            key, offset = int(parts[0]), int(parts[1])
        except (IndexError, ValueError):
            raise DataError(f"{where} line {n} is not 'key<TAB>offset'; re-create the index") from None
        if offset < 0 or (rec_size is not None and offset + 8 > rec_size):
            raise DataError(
                f"{where} line {n}: record offset {offset} points past the end of the shard "
                f"({rec_size} bytes); the shard is truncated or the index belongs to another shard"
            )
        out.append((key, offset))
    return out


@dataclass
class ShardEntry:
    rec: str
    idx: str
    records: int
    bytes: int
    sha256: str
    idx_bytes: int = 0


@dataclass
class Manifest:
    name: str
    classes: list[str]
    records: int
    bytes: int
    shards: list[ShardEntry]
    shard_size: int
    shuffle: bool = False
    seed: int = 0
    source: str = ""
    format: str = FORMAT
    created_utc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> Manifest:
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("shards"), list):
                raise TypeError("not an object with a list of shards")
            if not all(isinstance(s, dict) for s in data["shards"]):
                raise TypeError("a shard entry is not an object")
            shards = [ShardEntry(**s) for s in data.pop("shards")]
            manifest = cls(shards=shards, **data)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{where} is not a gluonbench manifest ({exc}); re-run gluonbench pack") from None
        except RecursionError:
            raise DataError(
                f"{where} is nested too deeply to be a gluonbench manifest; re-run gluonbench pack"
            ) from None
        why = _manifest_types(manifest)
        if why:
            raise DataError(f"{where} is not a gluonbench manifest ({why}); re-run gluonbench pack")
        if manifest.format != FORMAT:
            raise DataError(f"{where} has format {manifest.format!r}, expected {FORMAT!r}; re-run gluonbench pack")
        seen: set[str] = set()
        for s in manifest.shards:
            safe_key(s.rec, where)
            safe_key(s.idx, where)
            for key in (s.rec, s.idx):
                if key in seen:  # a shard read twice would count its records twice, and pass verify
                    raise DataError(f"{where} lists {key} twice; each shard once, re-run gluonbench pack")
                seen.add(key)
        return manifest


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62


def _manifest_types(m: Manifest) -> str:
    """Why the fields of ``m`` do not have their types (counts whole and >= 0, names strings), or ''."""
    if not isinstance(m.name, str) or not isinstance(m.format, str) or not isinstance(m.source, str):
        return "name, format and source must be strings"
    if not isinstance(m.classes, list) or not all(isinstance(c, str) for c in m.classes):
        return "classes must be a list of names"
    if not all(_whole(v) for v in (m.records, m.bytes, m.shard_size, m.seed)):
        return "records, bytes, shard_size and seed must be whole numbers"
    if not isinstance(m.shuffle, bool) or not isinstance(m.extra, dict) or not isinstance(m.created_utc, str):
        return "shuffle must be true/false, extra an object, created_utc a string"
    for s in m.shards:
        if not all(isinstance(v, str) for v in (s.rec, s.idx, s.sha256)):
            return "a shard's rec, idx and sha256 must be strings"
        if not all(_whole(v) for v in (s.records, s.bytes, s.idx_bytes)):
            return "a shard's records and bytes must be whole numbers"
    return ""


def load_manifest(out_dir: str | Path) -> Manifest:
    path = Path(out_dir) / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise DataError(f"{out_dir} has no {MANIFEST}; pass a folder made by gluonbench pack")
    try:
        text = read_text(path, "", MANIFEST_MAX_BYTES, "re-run gluonbench pack")
    except GluonbenchError as exc:
        raise DataError(str(exc)) from None
    return Manifest.from_json(text, str(path))


MANIFEST_MAX_BYTES = 64 << 20
"""A manifest lists its shards (about 200 bytes each): this is hundreds of thousands of shards."""
INDEX_MAX_BYTES = 1 << 30
"""A ``.idx`` holds one short line per record: this is tens of millions of records."""


def _regular(path: Path, fix: str) -> None:
    """Refuse a FIFO, device, socket or folder where a shard or index file is expected, before it is opened
    (a FIFO with no writer would block the read for ever)."""
    try:
        require_regular(path, "", fix)
    except GluonbenchError as exc:
        raise DataError(str(exc)) from None


# -- pack --------------------------------------------------------------------------


@dataclass
class PackResult:
    out_dir: str
    manifest: Manifest
    seconds: float
    input_bytes: int
    written_bytes: int

    @property
    def mb_per_s(self) -> float:
        return self.written_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0


Sample = tuple[Callable[[], bytes], int]
"""A sample to pack: a function returning its bytes, and its class index."""


def _idx_samples(folder: Path, split: str) -> tuple[list[Sample], list[str], int]:
    import cv2

    from gluonbench.data import vision
    from gluonbench.data.idx import read_image_label_pair

    images, labels = vision.TRAIN_FILES if split == "train" else vision.TEST_FILES
    x, y = read_image_label_pair(vision.find_file(folder, images), vision.find_file(folder, labels))

    def encoder(i: int) -> Callable[[], bytes]:
        def encode() -> bytes:
            ok, buf = cv2.imencode(".png", x[i, :, :, 0])
            if not ok:  # pragma: no cover
                raise DataError("OpenCV failed to encode a PNG; check the opencv-python install")
            return buf.tobytes()

        return encode

    classes = [str(c) for c in range(int(y.max()) + 1)]
    return [(encoder(i), int(y[i])) for i in range(len(y))], classes, int(x.size)


def source_samples(src: str | Path, split: str = "train") -> tuple[list[Sample], list[str], int, str]:
    """(samples, classes, input bytes, kind) of an image folder or an IDX (MNIST-style) folder."""
    from gluonbench.data import vision
    from gluonbench.data.images import image_folder

    folder = Path(src)
    images, labels = vision.TRAIN_FILES if split == "train" else vision.TEST_FILES
    if folder.is_dir() and vision.find_file(folder, images) and vision.find_file(folder, labels):
        samples, classes, nbytes = _idx_samples(folder, split)
        return samples, classes, nbytes, "idx"
    store = LocalStore(folder)
    layout = image_folder(store.list(), str(folder))
    samples = [(lambda key=o.key: store.get(key), label) for o, label in layout.items]
    return samples, layout.classes, layout.total_bytes, "images"


def _sample_names(src: Path) -> list[str]:
    """The image files of ``src`` in the order :func:`source_samples` lists them."""
    from gluonbench.data.images import image_folder

    return [str(src / o.key) for o, _ in image_folder(LocalStore(src).list(), str(src)).items]


def _checked_image(read: Callable[[], bytes], where: str) -> Callable[[], bytes]:
    def checked() -> bytes:
        data = read()
        check_image_bytes(data, where)
        return data

    return checked


def _prepare_out_dir(out_dir: Path, name: str) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create {out_dir}: {exc.strerror}; choose a writable folder") from exc
    if (out_dir / MANIFEST).exists() or any(out_dir.glob(f"{name}-*.rec")):
        raise DataError(f"{out_dir} already holds a packed data set; choose an empty folder or remove it first")
    if not os.access(out_dir, os.W_OK):
        raise DataError(f"{out_dir} is not writable; choose a writable folder")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(4 << 20):
            h.update(chunk)
    return h.hexdigest()


def pack(
    src: str | Path,
    out_dir: str | Path,
    shard_size: int = DEFAULT_SHARD_SIZE,
    shuffle: bool = False,
    seed: int = 0,
    name: str | None = None,
    split: str = "train",
    force: bool = False,
) -> PackResult:
    """Pack an image folder (one sub-folder per class) or an IDX data set into RecordIO shards.

    Records keep the original file bytes (IDX images are PNG-encoded, lossless);
    label = class index, id = sample index in key order. ``shuffle`` writes the
    records in a seeded random order. Shards close before they would pass
    ``shard_size`` (a single larger record gets a shard of its own).

    ``name`` is a name, never a path. ``out_dir`` may not be ``src`` or inside it,
    and must be empty unless ``force``; a file named like an image that is not one
    stops the pack with its name.
    """
    t0 = perf_counter()
    src, out_dir = Path(src), Path(out_dir)
    if name is not None:
        plain_name(name, param("name"), param_example("name='train'", "--name train"))
    check_seed(seed)
    if not src.exists():
        raise DataError(f"SRC {src} does not exist; give an image folder (SRC/<class>/*.jpg) or an IDX folder")
    if not src.is_dir():
        raise DataError(f"SRC {src} is not a folder; give an image folder (SRC/<class>/*.jpg) or an IDX folder")
    outside_of(out_dir, src, "OUT_DIR")
    if out_dir.exists() and not out_dir.is_dir():
        raise DataError(f"OUT_DIR {out_dir} is a file; choose a new or empty folder")
    if out_dir.is_dir() and (out_dir / MANIFEST).exists():
        raise DataError(f"{out_dir} already holds a packed data set; choose an empty folder or remove it first")
    if not force and out_dir.is_dir() and any(out_dir.iterdir()):
        raise DataError(
            f"OUT_DIR {out_dir} is not empty; choose an empty folder, or pass {param('force')} to write into it"
        )
    samples, classes, input_bytes, kind = source_samples(src, split)
    if not samples:
        raise DataError(f"{src} holds no samples; nothing to pack")
    if kind == "images":
        samples = [
            (_checked_image(read, where), label)
            for (read, label), where in zip(samples, _sample_names(src), strict=True)
        ]
    name = name or (f"{src.name}-{split}" if kind == "idx" else src.name) or "data"
    plain_name(name, "shard name (from SRC; pass --name)", "--name train")
    made = not out_dir.exists()
    _prepare_out_dir(out_dir, name)
    try:
        return _pack(src, out_dir, samples, classes, input_bytes, kind, name, shard_size, shuffle, seed, split, t0)
    except Exception as exc:
        full = not isinstance(exc, GluonbenchError) and _disk_full(exc, out_dir)
        if made:
            shutil.rmtree(out_dir, ignore_errors=True)  # a folder this call made: nothing of a failed pack stays
        if full:
            raise DataError(f"disk full at {out_dir}: free some space or choose another OUT_DIR") from None
        raise


def _disk_full(exc: BaseException, where: Path) -> bool:
    """A write failed for lack of space (MXNet's writer says only "FileStream.Write incomplete")."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    try:
        return "Write incomplete" in str(exc) or shutil.disk_usage(where).free < (1 << 20)
    except OSError:
        return False


def _pack(
    src: Path,
    out_dir: Path,
    samples: list[Sample],
    classes: list[str],
    input_bytes: int,
    kind: str,
    name: str,
    shard_size: int,
    shuffle: bool,
    seed: int,
    split: str,
    t0: float,
) -> PackResult:
    listed = perf_counter() - t0
    from gluonbench._mx import mx  # after the checks: bad input fails fast
    from gluonbench.env import utc_now

    t0 = perf_counter() - listed  # the timing includes the listing, not MXNet's one-time import
    order = np.random.default_rng(seed).permutation(len(samples)) if shuffle else np.arange(len(samples))
    tmp = Path(tempfile.mkdtemp(prefix=".pack-", dir=out_dir))
    moved: list[Path] = []
    try:
        shards: list[ShardEntry] = []
        writer = None
        rec_path = idx_path = None
        count = 0

        def close_shard() -> None:
            writer.close()
            for p in (rec_path, idx_path):
                _fsync(p)
            shards.append(
                ShardEntry(
                    rec=rec_path.name,
                    idx=idx_path.name,
                    records=count,
                    bytes=rec_path.stat().st_size,
                    sha256=_sha256(rec_path),
                    idx_bytes=idx_path.stat().st_size,
                )
            )

        for i in order.tolist():
            read, label = samples[i]
            payload = pack_header(label, i) + read()
            need = 8 + _pad(len(payload))
            if writer is not None and count and writer.tell() + need > shard_size:
                close_shard()
                writer = None
            if writer is None:
                stem = f"{name}-{len(shards):05d}"
                rec_path, idx_path = tmp / f"{stem}.rec", tmp / f"{stem}.idx"
                writer = mx.recordio.MXIndexedRecordIO(str(idx_path), str(rec_path), "w")
                count = 0
            writer.write_idx(i, payload)
            count += 1
        close_shard()
        manifest = Manifest(
            name=name,
            classes=classes,
            records=sum(s.records for s in shards),
            bytes=sum(s.bytes for s in shards),
            shards=shards,
            shard_size=shard_size,
            shuffle=shuffle,
            seed=seed,
            source=str(src),
            created_utc=utc_now(),
            extra={"kind": kind, "split": split} if kind == "idx" else {"kind": kind},
        )
        for s in shards:
            for fname in (s.rec, s.idx):
                os.replace(tmp / fname, out_dir / fname)
                moved.append(out_dir / fname)
        from gluonbench.files import atomic_write_text

        atomic_write_text(out_dir / MANIFEST, manifest.to_json())
    except BaseException:
        for p in moved:
            p.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = perf_counter() - t0
    log.info("packed %d records into %d shard(s) in %.2f s", manifest.records, len(manifest.shards), seconds)
    return PackResult(str(out_dir), manifest, seconds, input_bytes, manifest.bytes)


# -- verify --------------------------------------------------------------------------


@dataclass
class VerifyResult:
    out_dir: str
    shards: int
    records: int
    bytes: int
    seconds: float


def iter_records(path: Path, chunk: int = 4 << 20) -> Iterator[tuple[int, bytes]]:
    """(start offset, payload) of every record of a local ``.rec`` file, checking the framing."""
    parser = RecordParser(str(path))
    with open(path, "rb", buffering=0) as f:
        while data := f.read(chunk):
            yield from parser.records(data)
    parser.finish()


def _walk_shard(path: Path, classes: int) -> list[int]:
    """Start offsets of every record; :class:`DataError` at the first bad record or label."""
    starts = []
    for start, payload in iter_records(path):
        header, image = unpack(payload, f"{path}: record at byte offset {start}")
        check_image_bytes(image, f"{path}: record at byte offset {start} (id {header.id})")
        label = header.label if isinstance(header.label, float) else header.label[0]
        if not (0 <= label < max(classes, 1) and label == int(label)):
            raise DataError(
                f"{path}: record at byte offset {start} has label {label}, outside the {classes} classes "
                "of the manifest; the shard is corrupt, re-create it"
            )
        starts.append(start)
    return starts


def check_index(idx: Path, rec: Path, size: int, starts: list[int], fix: str = "") -> None:
    """``idx`` indexes ``rec`` exactly: every entry points at the start of a record, one entry per record."""
    _regular(idx, "re-create the index")
    try:
        text = read_text(idx, "", INDEX_MAX_BYTES, "re-create the index")
    except GluonbenchError as exc:
        raise DataError(str(exc)) from None
    index = parse_index(text, str(idx), size)
    known = set(starts)
    for key, offset in index:
        if offset not in known:
            raise DataError(
                f"{idx}: key {key} points at byte offset {offset} of {rec.name}, which is not the start of a "
                "record; the index belongs to another shard, re-create it"
            )
    if len(index) != len(starts):
        raise DataError(f"{idx} has {len(index)} entries but {rec.name} holds {len(starts)} records{fix}")


def verify(out_dir: str | Path) -> VerifyResult:
    """Re-read a packed folder: sizes, SHA-256, record framing, headers, labels and the index.

    A folder without ``manifest.json`` (made by MXNet's ``im2rec.py`` or ``MXIndexedRecordIO``) is
    checked by :func:`verify_bare`: framing, headers and any ``.idx``, with nothing to compare sizes to.
    """
    t0 = perf_counter()
    out_dir = Path(out_dir)
    if out_dir.is_dir() and not (out_dir / MANIFEST).exists() and any(out_dir.rglob("*.rec")):
        return verify_bare(out_dir)
    manifest = load_manifest(out_dir)
    records = 0
    for s in manifest.shards:
        rec, idx = out_dir / s.rec, out_dir / s.idx
        for p in (rec, idx):
            if not p.exists() and not p.is_symlink():
                raise DataError(f"{p} is listed in the manifest but missing; re-run gluonbench pack")
            _regular(p, "re-run gluonbench pack")
        size = rec.stat().st_size
        starts = _walk_shard(rec, len(manifest.classes))
        if size != s.bytes:
            raise DataError(f"{rec} has {size} bytes but the manifest says {s.bytes}; re-copy or re-pack it")
        if len(starts) != s.records:
            raise DataError(f"{rec} holds {len(starts)} records but the manifest says {s.records}; re-pack it")
        check_index(idx, rec, size, starts, "; re-pack")
        if _sha256(rec) != s.sha256:
            raise DataError(f"{rec}: SHA-256 differs from the manifest; the shard is corrupt, re-copy or re-pack it")
        records += s.records
    if records != manifest.records:
        raise DataError(f"{out_dir}: the shards hold {records} records but the manifest says {manifest.records}")
    return VerifyResult(str(out_dir), len(manifest.shards), records, manifest.bytes, perf_counter() - t0)


# -- RecordIO without a manifest (im2rec, MXIndexedRecordIO) ---------------------------


def scan_records(
    read_range: Callable[[int, int], bytes], size: int, where: str, chunk: int = 8 << 20
) -> tuple[list[int], list[int]]:
    """Start offsets and labels of every record of one ``.rec`` object, read sequentially in ``chunk`` ranges.

    The offsets are the index ``im2rec.py`` writes as ``.idx``; building it costs one sequential read.
    :class:`DataError` names the byte offset of the first bad record.
    """
    parser = RecordParser(where)
    offsets: list[int] = []
    labels: list[int] = []
    for start in range(0, size, chunk):
        for offset, payload in parser.records(read_range(start, min(start + chunk, size))):
            header, _ = unpack(payload, f"{where}: record at byte offset {offset}")
            label = header.label if isinstance(header.label, float) else header.label[0]
            offsets.append(offset)
            labels.append(int(label))
    parser.finish()
    return offsets, labels


def parse_lst(text: str, where: str) -> list[int]:
    """Labels of an ``im2rec.py`` list file (``index<TAB>label...<TAB>path`` lines)."""
    labels = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split("\t")
        if len(parts) < 3:
            if line.strip():
                raise DataError(f"{where} line {n} is not 'index<TAB>label<TAB>path'; re-create the list")
            continue
        try:
            labels.append(int(float(parts[1])))
        except ValueError:
            raise DataError(f"{where} line {n}: label {parts[1]!r} is not a number; re-create the list") from None
    return labels


def verify_bare(out_dir: str | Path) -> VerifyResult:
    """Check a RecordIO folder that has no manifest: every ``.rec``'s framing and headers, and its ``.idx`` if any."""
    t0 = perf_counter()
    out_dir = Path(out_dir)
    recs = sorted(out_dir.rglob("*.rec"))
    records = nbytes = 0
    for rec in recs:
        _regular(rec, "remove it or re-create the shard")
        size = rec.stat().st_size
        with open(rec, "rb", buffering=0) as f:

            def read_range(start: int, end: int, f=f) -> bytes:
                return os.pread(f.fileno(), end - start, start)

            starts, labels = scan_records(read_range, size, str(rec))
        bad = next((i for i, lab in enumerate(labels) if lab < 0), None)
        if bad is not None:
            raise DataError(
                f"{rec}: record at byte offset {starts[bad]} has label {labels[bad]}, below 0; "
                "the shard is corrupt, re-create it"
            )
        idx = rec.with_suffix(".idx")
        if idx.exists():
            check_index(idx, rec, size, starts)
        records += len(starts)
        nbytes += size
    return VerifyResult(str(out_dir), len(recs), records, nbytes, perf_counter() - t0)
