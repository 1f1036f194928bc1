"""The source stage: how a data set's bytes reach the training process.

A data set on a :class:`~gluonbench.data.store.Store` is either an *image
folder* (one object per sample, class from its folder) or *packed RecordIO*
(``manifest.json`` + shards, many records per object); :class:`DataSet` finds
which and lists every sample. A :class:`Source` is one input mode over a store:

* :meth:`Source.open` does the mode's start-up (File: list and copy; FastFile:
  list and read the indexes; Pipe: start or find the producer) and returns
  :class:`OpenStats` with its timings;
* :meth:`Source.read` reads one sample by reference (random access, what a
  ``gluon.data.Dataset`` needs; not for Pipe);
* :meth:`Source.stream` yields one epoch's ``(image bytes, label)`` in a
  (shuffled) order with bounded read-ahead: whole files for an image folder,
  shards read sequentially in chunks for RecordIO (shuffle = shard order plus a
  local shuffle buffer, as seed 004 advises).

File and FastFile share everything but where reads go; Pipe reads a FIFO.
"""

from __future__ import annotations

import collections
import logging
import random
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.data.images import image_folder
from gluonbench.data.recordio import (
    IR_SIZE,
    MANIFEST,
    Manifest,
    RecordParser,
    parse_index,
    parse_lst,
    parse_record,
    scan_records,
    unpack,
)
from gluonbench.data.store import ObjectInfo, Store, open_store
from gluonbench.errors import DataError

log = logging.getLogger(__name__)

DEFAULT_CHUNK = 8 << 20
DEFAULT_READAHEAD = 64 << 20


@dataclass(frozen=True)
class SampleRef:
    """Where one sample lives: bytes ``[start, end)`` of object ``key``; ``label`` -1 if in the record."""

    key: str
    start: int
    end: int
    label: int


@dataclass
class OpenStats:
    """What a source's start-up did and how long each part took (seconds)."""

    mode: str
    uri: str
    kind: str = ""
    list_s: float = 0.0
    copy_s: float = 0.0
    index_s: float = 0.0
    producer_s: float = 0.0
    startup_s: float = 0.0
    objects: int = 0
    samples: int = 0
    data_bytes: int = 0
    bytes_copied: int = 0
    disk_used: int = 0
    cache_dir: str | None = None
    channel_dir: str | None = None
    """pipe: the folder of this reader's FIFOs"""
    shard_index: int | None = None
    """pipe, sharded: this worker's rank; ``objects``, ``samples`` and ``data_bytes`` are then its shard's"""
    shard_count: int | None = None
    epoch_records: int | None = None
    """pipe, sharded: records read per epoch at most (the smallest worker's shard), None: all"""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DataSet:
    """The layout of a data set on a store: its data objects and samples."""

    kind: str  # "images" or "recordio"
    classes: list[str]
    objects: list[ObjectInfo]  # image files, or .rec shards
    samples: list[SampleRef] = field(default_factory=list)
    manifest: Manifest | None = None
    support: list[ObjectInfo] = field(default_factory=list)  # manifest and .idx files

    @property
    def data_bytes(self) -> int:
        return sum(o.size for o in self.objects)

    @classmethod
    def discover(cls, store: Store, listing: list[ObjectInfo] | None = None) -> DataSet:
        """Read the listing (and, for RecordIO, the manifest and every index)."""
        listing = store.list() if listing is None else listing
        if not [o for o in listing if not o.is_folder]:
            raise DataError(f"{store.uri} holds no objects; check the path or the S3 prefix")
        by_key = {o.key: o for o in listing}
        if MANIFEST in by_key:
            return cls._recordio(store, by_key)
        if any(k.endswith(".rec") for k in by_key):
            return cls._bare_recordio(store, by_key)
        folder = image_folder(listing, store.uri)
        samples = [SampleRef(o.key, 0, o.size, label) for o, label in folder.items]
        return cls("images", folder.classes, [o for o, _ in folder.items], samples)

    @classmethod
    def _recordio(cls, store: Store, by_key: dict[str, ObjectInfo]) -> DataSet:
        where = store.describe(MANIFEST)
        manifest = Manifest.from_json(store.get(MANIFEST).decode("utf-8", "replace"), where)
        objects, support, samples = [], [by_key[MANIFEST]], []
        for shard in manifest.shards:
            for key in (shard.rec, shard.idx):
                if key not in by_key:
                    raise DataError(f"{store.describe(key)} is listed in {where} but missing; re-copy the data set")
            rec = by_key[shard.rec]
            if rec.size != shard.bytes:
                raise DataError(
                    f"{store.describe(shard.rec)} has {rec.size} bytes but the manifest says {shard.bytes}; "
                    "the shard is truncated or replaced, re-copy or re-pack it"
                )
            objects.append(rec)
            support.append(by_key[shard.idx])
            text = store.get(shard.idx).decode("utf-8", "replace")
            offsets = sorted(off for _, off in parse_index(text, store.describe(shard.idx), rec.size))
            bounds = [*offsets[1:], rec.size]
            samples += [SampleRef(shard.rec, a, b, -1) for a, b in zip(offsets, bounds, strict=True)]
        return cls("recordio", manifest.classes, objects, samples, manifest, support)

    @classmethod
    def _bare_recordio(cls, store: Store, by_key: dict[str, ObjectInfo]) -> DataSet:
        """``.rec`` files with no manifest (MXNet's ``im2rec.py``, ``MXIndexedRecordIO``): every ``.rec`` in key order.

        A ``.rec`` with a ``.idx`` beside it is indexed from it; one without is read once to build the
        index. Classes are ``0..max label`` when every label was seen (a scan, or ``.lst`` files beside
        the shards), else unknown (empty: the workload asks for ``--classes``).
        """
        objects, support, samples = [], [], []
        labels: list[int] = []
        seen_all = True
        for key in sorted(k for k in by_key if k.endswith(".rec")):
            rec, stem = by_key[key], key[: -len(".rec")]
            where = store.describe(key)
            idx, lst = by_key.get(stem + ".idx"), by_key.get(stem + ".lst")
            if idx is not None:
                text = store.get(idx.key).decode("utf-8", "replace")
                offsets = sorted(off for _, off in parse_index(text, store.describe(idx.key), rec.size))
                support.append(idx)
                if lst is not None:
                    labels += parse_lst(store.get(lst.key).decode("utf-8", "replace"), store.describe(lst.key))
                    support.append(lst)
                else:
                    seen_all = False
            else:
                log.info("%s has no .idx: reading it once to build the index", where)
                offsets, found = scan_records(lambda a, b, key=key: store.get_range(key, a, b), rec.size, where)
                labels += found
            objects.append(rec)
            bounds = [*offsets[1:], rec.size]
            samples += [SampleRef(key, a, b, -1) for a, b in zip(offsets, bounds, strict=True)]
        classes = [str(c) for c in range(max(labels) + 1)] if seen_all and labels else []
        return cls("recordio", classes, objects, samples, None, support)


def decode_sample(payload: bytes, ref: SampleRef, where: str) -> tuple[bytes, int]:
    """(image bytes, label) of a raw sample: an image file as is, or an image record unpacked."""
    if ref.label >= 0:
        return payload, ref.label
    header, body = unpack(payload, where)
    label = header.label if isinstance(header.label, float) else header.label[0]
    return body, int(label)


def image_record(payload: bytes, where: str, offset: int) -> tuple[bytes, int]:
    """(image bytes, label) of one MXNet image record; the fast path for a scalar label."""
    if len(payload) >= IR_SIZE:
        flag, label = struct.unpack_from("<If", payload)
        if flag == 0:
            return payload[IR_SIZE:], int(label)
    header, body = unpack(payload, f"{where}: record at byte offset {offset}")
    return body, int(header.label[0] if isinstance(header.label, tuple) else header.label)


class ReadAhead:
    """Fetch byte ranges in order with a thread pool, at most ``window_bytes`` in flight; yield in order."""

    def __init__(self, fetch, threads: int = 4, window_bytes: int = DEFAULT_READAHEAD) -> None:
        self.fetch = fetch
        self.threads = max(1, threads)
        self.window_bytes = window_bytes

    def run(self, units: list[tuple[str, int, int]]) -> Iterator[tuple[tuple[str, int, int], bytes]]:
        pending: collections.deque[tuple[tuple[str, int, int], Future]] = collections.deque()
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gluonbench-read")
        in_flight = 0
        it = iter(units)
        try:
            exhausted = False
            while True:
                while (
                    not exhausted and (not pending or in_flight < self.window_bytes) and len(pending) < 4 * self.threads
                ):
                    unit = next(it, None)
                    if unit is None:
                        exhausted = True
                        break
                    pending.append((unit, pool.submit(self.fetch, *unit)))
                    in_flight += unit[2] - unit[1]
                if not pending:
                    return
                unit, fut = pending.popleft()
                data = fut.result()
                in_flight -= unit[2] - unit[1]
                yield unit, data
        finally:
            for _, fut in pending:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


class Source(ABC):
    """One input mode over a store. Use as a context manager or call :meth:`close`."""

    mode: str = ""
    random_access: bool = True

    def __init__(
        self,
        uri: str,
        endpoint_url: str | None = None,
        threads: int = 4,
        readahead_bytes: int = DEFAULT_READAHEAD,
        chunk_bytes: int = DEFAULT_CHUNK,
        shuffle_buffer: int = 256,
    ) -> None:
        self.uri = str(uri)
        self.endpoint_url = endpoint_url
        self.store = open_store(uri, endpoint_url)
        self.threads = threads
        self.readahead_bytes = readahead_bytes
        self.chunk_bytes = chunk_bytes
        self.shuffle_buffer = shuffle_buffer
        self.dataset: DataSet | None = None
        self.stats: OpenStats | None = None

    # -- lifecycle ----------------------------------------------------------------
    @abstractmethod
    def open(self) -> OpenStats:
        """The mode's start-up; sets :attr:`dataset` and :attr:`stats`."""

    def close(self) -> None:  # noqa: B027 - a mode with nothing to release keeps this
        """Release what :meth:`open` made (caches, processes)."""

    def __enter__(self) -> Source:
        if self.stats is None:
            self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_open(self) -> DataSet:
        if self.dataset is None:
            raise RuntimeError(f"{type(self).__name__}.open() was not called")
        return self.dataset

    # -- reading ------------------------------------------------------------------------
    @abstractmethod
    def fetch(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of a data object, wherever this mode reads them."""

    def read(self, index: int) -> tuple[bytes, int]:
        """Sample ``index`` as (image bytes, label): random access."""
        ds = self._require_open()
        ref = ds.samples[index]
        where = self.store.describe(ref.key)
        if ref.label >= 0:
            return self.fetch(ref.key, ref.start, ref.end), ref.label
        payload = parse_record(self.fetch(ref.key, ref.start, ref.end), where, ref.start)
        return decode_sample(payload, ref, f"{where}: record at byte offset {ref.start}")

    def stream(self, epoch: int = 0, shuffle: bool = False, seed: int = 0) -> Iterator[tuple[bytes, int]]:
        """One epoch of (image bytes, label), read sequentially with bounded read-ahead."""
        ds = self._require_open()
        rng = random.Random(seed * 1_000_003 + epoch)
        if ds.kind == "images":
            refs = list(ds.samples)
            if shuffle:
                rng.shuffle(refs)
            labels = {ref.key: ref.label for ref in refs}
            reader = ReadAhead(self.fetch, self.threads, self.readahead_bytes)
            for (key, _, _), data in reader.run([(r.key, r.start, r.end) for r in refs]):
                yield data, labels[key]
            return
        shards = list(ds.objects)
        if shuffle:
            rng.shuffle(shards)
        units = [
            (o.key, a, min(a + self.chunk_bytes, o.size)) for o in shards for a in range(0, o.size, self.chunk_bytes)
        ]
        reader = ReadAhead(self.fetch, self.threads, self.readahead_bytes)
        buffer: list[tuple[bytes, int]] = []
        parser: RecordParser | None = None
        for (key, start, _end), data in reader.run(units):
            if start == 0:
                if parser is not None:
                    parser.finish()
                parser = RecordParser(self.store.describe(key))
            for offset, payload in parser.records(data):
                sample = image_record(payload, parser.where, offset)
                if not shuffle:
                    yield sample
                    continue
                buffer.append(sample)
                if len(buffer) >= self.shuffle_buffer:
                    yield buffer.pop(rng.randrange(len(buffer)))
        if parser is not None:
            parser.finish()
        rng.shuffle(buffer)
        yield from buffer


class LRUCache:
    """A byte-bounded least-recently-used cache, safe across threads."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._items: collections.OrderedDict[Any, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> bytes | None:
        with self._lock:
            data = self._items.get(key)
            if data is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return data

    def put(self, key: Any, data: bytes) -> None:
        if len(data) > self.max_bytes:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = data
            self.bytes += len(data)
            while self.bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self.bytes -= len(old)
