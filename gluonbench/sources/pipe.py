"""Pipe mode: SageMaker's FIFO protocol, producer and consumer.

The protocol (seeds 000 and 003): one named pipe per channel per epoch at
``<channel_dir>/<channel>_<epoch>``. The producer creates ``train_0``, streams
the whole data set into it, closes it, then ``train_1``, and so on. The
consumer waits for the FIFO to exist, opens it for reading, reads to EOF (or
stops early), closes it, then waits for the next epoch's FIFO. There is no
seek, so there is no random access and no shuffle by index: shuffling is the
producer's (object order per epoch, ``--shuffle --seed``).

:class:`Producer` (``gluonbench stream``) streams the data objects of a store
(the ``.rec`` shards of a packed data set, else every object): with
``record_wrapper="none"`` an epoch is the objects' bytes concatenated, with
``"recordio"`` each object becomes one RecordIO record (its bytes unchanged, as
SageMaker's RecordWrapperType=RecordIO). ``gzip`` decompresses gzip objects
first (CompressionType=Gzip). ``shard_index``/``shard_count`` keep object ``i``
(in key order) when ``i % count == index`` (ShardedByS3Key); without them every
consumer gets everything (FullyReplicated). A pool of threads reads ahead of the
writer (bounded bytes); local files without a wrapper are spliced from the page
cache into the FIFO without a copy through Python. The producer never blocks
forever: it waits at most ``open_timeout`` for a reader to open a FIFO and at
most ``write_timeout`` for a stalled reader; a reader that closes early (EPIPE)
ends that epoch and the producer moves to the next. FIFOs are ``0600`` in a
``0700`` folder, and removed after each epoch.

:class:`PipeChannel` is the consumer. It works on any folder that follows the
protocol, a real SageMaker ``/opt/ml/input/data`` included. It raises
:class:`PipeError` instead of hanging: when a FIFO does not appear within
``timeout``, when no byte arrives for ``timeout``, when the stream ends inside a
record, or, when it was given the producer's process, when the producer died.
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import logging
import math
import os
import random
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.data.recordio import MANIFEST, Manifest, RecordParser, frame, unpack
from gluonbench.data.shard import shard_indices
from gluonbench.data.store import ObjectInfo, Store
from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import arg, param, param_example
from gluonbench.scratch import die_with_parent, owned_tempdir
from gluonbench.settings import check_declared, declared
from gluonbench.sources.base import OpenStats, ReadAhead, Source

log = logging.getLogger(__name__)

PIPE_BYTES = 1 << 20
READ_BYTES = PIPE_BYTES // 4
"""Consumer read size: a quarter of the pipe, so the producer refills what one read frees while the consumer
copies the rest (a read of the whole pipe leaves the two taking turns; measured in bench_pipe_vs_cat.py)."""
WRAPPERS = ("none", "recordio")


class PipeError(GluonbenchError):
    """The stream broke: no FIFO, no data, a dead producer or a truncated record."""


def _backoff(first: float = 0.0001, most: float = 0.001) -> Iterator[float]:
    """Sleeps for a polling loop: short at first (a ready peer is seen at once), then at most ``most``."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, most)


def fifo_path(channel_dir: str | Path, channel: str, epoch: int) -> Path:
    return Path(channel_dir) / f"{channel}_{epoch}"


def _grow_pipe(fd: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):  # pragma: no cover - older kernels or limits
        pass


def private_dir(path: Path) -> bool:
    """Create ``path`` with mode 0700; return True if it was created here.

    A folder that already exists is not ours: it is used as it is, never chmodded (``/tmp``
    tightened to 0700 would lock every other user out). The FIFOs made in it are 0600 either way.
    """
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise DataError(f"{param('channel_dir')} {path} exists and is not a folder; choose another path") from None
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o022:
            log.info("--channel-dir %s (mode %o) is writable by others; its FIFOs are made 0600", path, mode)
        return False
    except OSError as exc:
        raise DataError(
            f"cannot create {param('channel_dir')} {path}: {exc.strerror}; choose a writable folder"
        ) from exc
    # mkdir's mode goes through the umask: a fresh folder is made exactly 0700
    os.chmod(path, 0o700)
    return True


# -- producer --------------------------------------------------------------------------


@dataclass
class StreamOptions:
    channel: str
    channel_dir: str
    epochs: int = declared("epochs")
    shuffle: bool = False
    seed: int = declared("seed", 0)
    record_wrapper: str = "none"
    gzip: bool = False
    shard_index: int | None = None
    shard_count: int | None = None
    threads: int = 4
    readahead_bytes: int = 64 << 20
    open_timeout: float = 600.0
    write_timeout: float = 600.0

    def check(self) -> StreamOptions:
        if not self.channel or "/" in self.channel or self.channel.startswith("."):
            raise GluonbenchError(f"{param('channel')} {self.channel!r} must be a plain name such as train")
        check_declared(self)  # epochs, seed
        if self.record_wrapper not in WRAPPERS:
            raise GluonbenchError(f"{param('record_wrapper')} must be none or recordio (got {self.record_wrapper!r})")
        if (self.shard_index is None) != (self.shard_count is None):
            raise GluonbenchError(
                f"{param('shard_index')} and {param('shard_count')} go together, e.g. "
                + param_example("shard_index=0, shard_count=4", "--shard-index 0 --shard-count 4")
            )
        if self.shard_count is not None and not 0 <= self.shard_index < self.shard_count:
            raise GluonbenchError(
                f"{param('shard_index')} must be in 0..{self.shard_count - 1} for {param('shard_count')} {self.shard_count} "
                f"(got {self.shard_index})"
            )
        if self.threads < 1:
            raise GluonbenchError(f"{param('threads')} must be at least 1 (got {self.threads})")
        for flag, value in ((arg("open_timeout"), self.open_timeout), (arg("write_timeout"), self.write_timeout)):
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise GluonbenchError(f"{flag} must be a positive, finite number of seconds (got {value!r})")
        return self


@dataclass
class EpochStats:
    epoch: int
    objects: int = 0
    bytes: int = 0
    seconds: float = 0.0
    complete: bool = True
    note: str = ""

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StreamResult:
    epochs: list[EpochStats] = field(default_factory=list)


def data_objects(store: Store, listing: list[ObjectInfo] | None = None) -> list[ObjectInfo]:
    """What a producer streams: a packed data set's shards (manifest order), the ``.rec`` files of a folder
    without a manifest (im2rec; key order), else every object in key order."""
    return channel_objects(store, listing)[0]


def shard_objects(objects: list[ObjectInfo], index: int | None, count: int | None) -> list[ObjectInfo]:
    """Worker ``index`` of ``count``'s objects: object ``i`` when ``i % count == index`` (ShardedByS3Key, the
    rank-strided split of :func:`gluonbench.data.shard.shard_indices`); all of them without a shard."""
    if count is None or index is None:
        return list(objects)
    return [objects[i] for i in shard_indices(len(objects), index, count)]


def channel_objects(
    store: Store, listing: list[ObjectInfo] | None = None
) -> tuple[list[ObjectInfo], dict[str, int] | None]:
    """:func:`data_objects` and, for a packed data set, the records per object (from the manifest; else None)."""
    listing = store.list() if listing is None else listing
    files = [o for o in listing if not o.is_folder]
    if not files:
        raise DataError(f"{store.uri} holds no objects; check the path or the S3 prefix")
    by_key = {o.key: o for o in files}
    if MANIFEST in by_key:
        manifest = Manifest.from_json(store.get(MANIFEST).decode("utf-8", "replace"), store.describe(MANIFEST))
        missing = [s.rec for s in manifest.shards if s.rec not in by_key]
        if missing:
            raise DataError(f"{store.describe(missing[0])} is listed in the manifest but missing; re-copy the data set")
        return [by_key[s.rec] for s in manifest.shards], {s.rec: s.records for s in manifest.shards}
    recs = [o for o in files if o.key.endswith(".rec")]
    return recs or files, None  # RecordIO without a manifest (im2rec): the .rec payloads only, never .idx/.lst


class Producer:
    """Streams a store into ``<channel_dir>/<channel>_<epoch>`` FIFOs, one epoch after another."""

    def __init__(self, store: Store, options: StreamOptions) -> None:
        self.store = store
        self.opts = options.check()
        self.dir = Path(options.channel_dir)
        self._current: Path | None = None
        self._paths: dict[str, str] = {}

    def objects(self) -> list[ObjectInfo]:
        return shard_objects(data_objects(self.store), self.opts.shard_index, self.opts.shard_count)

    def run(self, on_epoch=None) -> StreamResult:
        objects = self.objects()
        if self.store.is_local:
            self._paths = {o.key: str(self.store.local_path(o.key)) for o in objects}
        created = private_dir(self.dir)
        result = StreamResult()
        try:
            for epoch in range(self.opts.epochs):
                order = list(objects)
                if self.opts.shuffle:
                    random.Random(self.opts.seed * 1_000_003 + epoch).shuffle(order)
                stats = self._epoch(epoch, order)
                result.epochs.append(stats)
                if on_epoch is not None:
                    on_epoch(stats)
        finally:
            if self._current is not None:
                self._current.unlink(missing_ok=True)
            if created:
                try:
                    self.dir.rmdir()
                except OSError:
                    pass
        return result

    def _make_fifo(self, path: Path) -> None:
        if path.exists() or path.is_symlink():
            if not stat.S_ISFIFO(path.lstat().st_mode):
                raise DataError(f"{path} exists and is not a FIFO; remove it or choose another {param('channel_dir')}")
            # a stale FIFO left by a killed producer: reuse it rather than replace it, so a reader already
            # blocked in open() on it (a SageMaker-style training job) is connected to this producer
            os.chmod(path, 0o600)
            log.info("%s: reusing a stale FIFO (a previous producer was killed)", path)
        else:
            os.mkfifo(path, 0o600)
        self._current = path

    def _open_writer(self, path: Path) -> int:
        deadline = time.monotonic() + self.opts.open_timeout
        for pause in _backoff():
            try:
                return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
            if time.monotonic() > deadline:
                raise PipeError(
                    f"no consumer opened {path} within {self.opts.open_timeout:g} s; "
                    f"start the training job or raise {param('open_timeout')}"
                )
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait_writable(self, fd: int, poller: select.poll) -> None:
        if not poller.poll(self.opts.write_timeout * 1000):
            raise PipeError(
                f"the consumer of {self._current} stopped reading for {self.opts.write_timeout:g} s; "
                f"giving up on this stream (raise {param('write_timeout')} for slow consumers)"
            )

    def _write(self, fd: int, data: bytes | memoryview, poller: select.poll) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(fd, view)
                view = view[n:]
            except BlockingIOError:
                self._wait_writable(fd, poller)

    def _splice(self, fd: int, path: str, size: int, poller: select.poll) -> int:
        """Move a local file's ``size`` bytes from the page cache into the FIFO, never through Python."""
        try:
            src = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc.strerror}; fix or remove the file") from exc
        sent = 0
        try:
            while sent < size:
                try:
                    n = os.splice(src, fd, size - sent, offset_src=sent, flags=os.SPLICE_F_NONBLOCK)
                except BlockingIOError:
                    self._wait_writable(fd, poller)
                    continue
                if n == 0:
                    raise DataError(f"{path} shrank while streaming ({sent} of {size} bytes); do not modify it")
                sent += n
            return sent
        finally:
            os.close(src)

    def _payload(self, obj: ObjectInfo, data: bytes) -> bytes:
        if self.opts.gzip:
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                raise DataError(
                    f"{self.store.describe(obj.key)} is not valid gzip ({exc}); drop --gzip or fix the object"
                ) from exc
        return frame(data) if self.opts.record_wrapper == "recordio" else data

    def _prefetch(self, objects: list[ObjectInfo]) -> bytes:
        """Ask the kernel to read these local files into the page cache (``POSIX_FADV_WILLNEED``)."""
        for obj in objects:
            try:
                fd = os.open(self._paths[obj.key], os.O_RDONLY)
            except OSError:
                continue  # the writer reports it
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            finally:
                os.close(fd)
        return b""

    def _epoch(self, epoch: int, order: list[ObjectInfo]) -> EpochStats:
        path = fifo_path(self.dir, self.opts.channel, epoch)
        self._make_fifo(path)
        stats = EpochStats(epoch)
        fd = self._open_writer(path)
        t0 = perf_counter()
        splice = self.store.is_local and self.opts.record_wrapper == "none" and not self.opts.gzip
        try:
            _grow_pipe(fd)
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            by_key = {o.key: o for o in order}
            units = [(o.key, 0, o.size) for o in order]
            if splice:
                # threads ask the kernel to read groups of files ahead into the page cache (one task per
                # ~8 MB, so many small files cost no thread hand-off each); the writer splices from it
                ahead = ReadAhead(lambda _, a, b: self._prefetch(order[a:b]), self.opts.threads, 1 << 62)
                for (_, start, end), _ in ahead.run(_groups(order, 8 << 20)):
                    for obj in order[start:end]:
                        stats.bytes += self._splice(fd, self._paths[obj.key], obj.size, poller)
                        stats.objects += 1
            else:
                ahead = ReadAhead(self.store.get_range, self.opts.threads, self.opts.readahead_bytes)
                for (key, _, _), data in ahead.run(units):
                    payload = self._payload(by_key[key], data)
                    self._write(fd, payload, poller)
                    stats.bytes += len(payload)
                    stats.objects += 1
        except BrokenPipeError:
            stats.complete = False
            stats.note = "the consumer closed the FIFO before the end of the epoch"
            log.info("epoch %d: %s after %d bytes", epoch, stats.note, stats.bytes)
        finally:
            # unlink before close: a consumer that sees EOF and no FIFO knows the epoch ended cleanly
            path.unlink(missing_ok=True)
            os.close(fd)
            self._current = None
        stats.seconds = perf_counter() - t0
        return stats


def _groups(objects: list[ObjectInfo], group_bytes: int) -> list[tuple[str, int, int]]:
    """Consecutive runs ``objects[start:end]`` of about ``group_bytes`` each, as ReadAhead units."""
    out, start, size = [], 0, 0
    for i, obj in enumerate(objects):
        size += obj.size
        if size >= group_bytes:
            out.append(("group", start, i + 1))
            start, size = i + 1, 0
    if start < len(objects):
        out.append(("group", start, len(objects)))
    return out


# -- consumer ------------------------------------------------------------------------------


class PipeChannel:
    """Read a channel's epochs from ``<channel_dir>/<channel>_<epoch>`` FIFOs.

    ``framing="recordio"`` splits the stream into RecordIO records (packed shards
    streamed as they are, or objects wrapped with ``record_wrapper=recordio``);
    ``"none"`` gives raw byte chunks. ``header=True`` reads each record as an
    MXNet image record (label from its header); ``False`` takes the record as
    the image bytes with label -1. ``producer`` (a ``subprocess.Popen``), when
    given, lets the consumer tell a dead producer from a finished epoch at once.
    """

    def __init__(
        self,
        channel_dir: str | Path,
        channel: str = "train",
        framing: str = "recordio",
        header: bool = True,
        timeout: float = 60.0,
        producer: subprocess.Popen | None = None,
        chunk_bytes: int = READ_BYTES,
    ) -> None:
        self.dir = Path(channel_dir)
        self.channel = channel
        self.framing = framing
        self.header = header
        self.timeout = timeout
        self.producer = producer
        self.chunk_bytes = chunk_bytes
        self.bytes_read = 0

    def _producer_died(self, wait: float = 2.0) -> str | None:
        """How the producer ended, if it did within ``wait`` s (its fds close a moment before it is reapable)."""
        if self.producer is None:
            return None
        deadline = time.monotonic() + wait
        for pause in _backoff():
            rc = self.producer.poll()
            if rc is not None or time.monotonic() > deadline:
                break
            time.sleep(pause)
        if rc is None:
            return None
        if rc == 0:
            return None
        return f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"

    def _wait_for_fifo(self, path: Path) -> None:
        deadline = time.monotonic() + self.timeout
        pauses = _backoff()
        while True:
            try:
                if stat.S_ISFIFO(os.stat(path).st_mode):
                    return
                raise PipeError(f"{path} is not a FIFO; is {self.dir} a Pipe-mode channel folder?")
            except FileNotFoundError:
                pass
            if self.producer is not None and self.producer.poll() is not None:
                why = self._producer_died() or "exited"
                raise PipeError(f"the producer ended ({why}) before creating {path}")
            if time.monotonic() > deadline:
                raise PipeError(f"{path} did not appear within {self.timeout:g} s; is the producer running?")
            time.sleep(next(pauses))

    def chunks(self, epoch: int) -> Iterator[memoryview]:
        """Raw bytes of one epoch, as views of a reused buffer (each valid until the next one)."""
        path = fifo_path(self.dir, self.channel, epoch)
        self._wait_for_fifo(path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        buf = bytearray(self.chunk_bytes)
        view = memoryview(buf)
        got = 0
        try:
            _grow_pipe(fd)
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            ready = False  # before a writer connects, read() on a fresh FIFO reports EOF: poll first
            while True:
                if not ready:
                    if not poller.poll(self.timeout * 1000):
                        raise PipeError(
                            f"no data on {path} for {self.timeout:g} s after {got} bytes; the producer hangs or died"
                        )
                    ready = True
                try:
                    n = os.readv(fd, [view])
                except BlockingIOError:
                    ready = False
                    continue
                if n == 0:
                    # a producer that finished unlinked the FIFO before closing it; one that died did not
                    why = None
                    if path.exists():
                        why = self._producer_died() if self.producer is not None else "killed or crashed"
                    if why:
                        raise PipeError(
                            f"the producer died mid-epoch ({why}) after {got} bytes of {path}: it closed the FIFO "
                            "without finishing the epoch; restart it (gluonbench stream reuses the stale FIFO)"
                        )
                    return
                got += n
                self.bytes_read += n
                yield view[:n]
        finally:
            os.close(fd)

    def records(self, epoch: int) -> Iterator[bytes]:
        """Whole RecordIO payloads of one epoch."""
        where = str(fifo_path(self.dir, self.channel, epoch))
        parser = RecordParser(where)
        try:
            for chunk in self.chunks(epoch):
                yield from parser.feed(chunk)
        except DataError as exc:
            why = self._producer_died()
            raise PipeError(f"{exc}" + (f" (the producer died: {why})" if why else "")) from exc
        try:
            parser.finish()
        except DataError as exc:
            raise PipeError(f"{exc}; the producer stopped mid-record") from exc

    def samples(self, epoch: int) -> Iterator[tuple[bytes, int]]:
        """(image bytes, label) of one epoch."""
        if self.framing != "recordio":
            raise DataError("samples need framing='recordio'; a raw stream has no sample boundaries")
        where = str(fifo_path(self.dir, self.channel, epoch))
        for payload in self.records(epoch):
            if not self.header:
                yield payload, -1
                continue
            header, body = unpack(payload, where)
            label = header.label if isinstance(header.label, float) else header.label[0]
            yield body, int(label)


# -- the source ---------------------------------------------------------------------------------


class PipeSource(Source):
    """Pipe mode as a source: start a ``gluonbench stream`` producer (or use a running one) and read its FIFOs.

    Without ``channel_dir`` a private temporary folder is made and a producer
    process started for ``epochs`` epochs; with it (e.g. ``/opt/ml/input/data``
    on SageMaker) the FIFOs of an outside producer are read. A packed data set is
    streamed as is (``record_wrapper=none``: the shards are a RecordIO stream);
    an image folder with ``record_wrapper=recordio`` (one record per file, label
    unknown: -1). Stream order is the producer's (``shuffle``/``seed``).

    ``shard_index``/``shard_count`` (a worker of a data-parallel job) start the
    producer with ``--shard-index/--shard-count``: this worker's FIFOs, in its own
    private folder, carry only objects ``i % count == index`` (ShardedByS3Key, see
    :func:`shard_objects`). A packed data set's manifest gives every worker's
    record count; when they differ, each epoch is cut at the smallest
    (``epoch_records``), so every worker takes the same number of steps (a
    ``dist_sync`` worker with more batches than the others would wait forever for
    their gradients). An outside producer (``channel_dir``) shards by itself, as
    SageMaker does per instance, so the two do not go together.
    """

    mode = "pipe"
    random_access = False

    def __init__(
        self,
        uri: str,
        endpoint_url: str | None = None,
        channel: str = "train",
        channel_dir: str | Path | None = None,
        epochs: int = 1,
        shuffle: bool = False,
        seed: int = 0,
        kind: str | None = None,
        timeout: float = 60.0,
        shard_index: int | None = None,
        shard_count: int | None = None,
        **kw,
    ) -> None:
        if (shard_index is None) != (shard_count is None):
            raise GluonbenchError("shard_index and shard_count go together (worker rank and number of workers)")
        if shard_count is not None:
            shard_indices(0, shard_index, shard_count)  # a rank outside 0..count-1 is refused here
            if channel_dir:
                raise GluonbenchError(
                    "a sharded pipe channel is streamed by gluonbench's own producer; with --channel-dir an outside "
                    "producer (SageMaker's ShardedByS3Key) delivers each worker's shard: leave one of them out"
                )
        super().__init__(uri, endpoint_url, **kw)
        self.channel = channel
        self.channel_dir = Path(channel_dir) if channel_dir else None
        self.epochs = epochs
        self.shuffle = shuffle
        self.seed = seed
        self.kind = kind
        self.timeout = timeout
        self.shard_index = shard_index
        self.shard_count = shard_count
        self.epoch_records: int | None = None
        """records read per epoch at most (the smallest shard's, when the workers' shards differ); None: all"""
        self.process: subprocess.Popen | None = None
        self._made_dir: Path | None = None
        self.channel_reader: PipeChannel | None = None

    def producer_command(self, channel_dir: Path, wrapper: str) -> list[str]:
        cmd = [
            sys.executable, "-m", "gluonbench", "stream", self.uri,
            "--channel", self.channel, "--channel-dir", str(channel_dir),
            "--epochs", str(self.epochs), "--record-wrapper", wrapper,
            "--threads", str(self.threads), "--open-timeout", str(self.timeout),
            "--write-timeout", str(self.timeout),
        ]  # fmt: skip
        if self.shuffle:
            cmd += ["--shuffle", "--seed", str(self.seed)]
        if self.endpoint_url:
            cmd += ["--endpoint-url", self.endpoint_url]
        if self.shard_count is not None:
            cmd += ["--shard-index", str(self.shard_index), "--shard-count", str(self.shard_count)]
        return cmd

    def open(self) -> OpenStats:
        t0 = perf_counter()
        list_s = 0.0
        shard: dict[str, Any] = {}
        if self.kind is None or self.shard_count is not None:
            listing = self.store.list()
            list_s = perf_counter() - t0
            if self.kind is None:
                recordio = any(o.key == MANIFEST or o.key.endswith(".rec") for o in listing)
                self.kind = "recordio" if recordio else "images"
            if self.shard_count is not None:
                shard = self._plan_shard(listing)
        wrapper = "none" if self.kind == "recordio" else "recordio"
        t1 = perf_counter()
        if self.channel_dir is None:
            self._made_dir = owned_tempdir("pipe")  # swept by the next run if we are killed
            channel_dir = self._made_dir / "data"
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            with open(self._made_dir / "producer.log", "wb") as log_file:
                self.process = subprocess.Popen(
                    self.producer_command(channel_dir, wrapper), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=log_file, env=env, preexec_fn=die_with_parent,
                )  # fmt: skip
        else:
            channel_dir = self.channel_dir
        self.channel_reader = PipeChannel(
            channel_dir, self.channel, framing="recordio", header=self.kind == "recordio",
            timeout=self.timeout, producer=self.process,
        )  # fmt: skip
        self.stats = OpenStats(
            mode=self.mode, uri=self.uri, kind=self.kind, list_s=list_s,
            producer_s=perf_counter() - t1, startup_s=perf_counter() - t0, channel_dir=str(channel_dir), **shard,
        )  # fmt: skip
        return self.stats

    def _plan_shard(self, listing: list[ObjectInfo]) -> dict[str, Any]:
        """This worker's objects (what its producer will stream) and, from a manifest, every worker's records."""
        index, count = self.shard_index, self.shard_count
        assert index is not None and count is not None
        objects, records = channel_objects(self.store, listing)
        mine = shard_objects(objects, index, count)
        if not mine:
            raise DataError(
                f"pipe shard {index} of {count} is empty: {self.uri} has {len(objects)} data object(s) for "
                f"{count} workers; use at most {len(objects)} workers or pack into smaller shards "
                "(gluonbench pack --shard-size)"
            )
        samples = 0
        if records is not None:
            counts = [sum(records[o.key] for o in shard_objects(objects, r, count)) for r in range(count)]
            samples = counts[index]
            if min(counts) < samples:
                self.epoch_records = min(counts)
                log.warning(
                    "pipe shard %d of %d holds %d records, the smallest %d: each epoch stops at %d so every worker "
                    "takes the same number of steps (pack into equal shards to read them all)",
                    index, count, samples, min(counts), min(counts),
                )  # fmt: skip
        else:
            log.warning(
                "%s has no manifest: the workers' record counts are unknown; shards of unequal records make the "
                "workers take unequal steps (a dist_sync job then stalls); pack it with gluonbench pack",
                self.uri,
            )
        return {
            "shard_index": index,
            "shard_count": count,
            "objects": len(mine),
            "samples": samples,
            "data_bytes": sum(o.size for o in mine),
            "epoch_records": self.epoch_records,
        }

    def fetch(self, key: str, start: int, end: int) -> bytes:
        raise DataError("pipe mode streams each epoch once in the producer's order; it has no random access")

    def read(self, index: int) -> tuple[bytes, int]:
        raise DataError("pipe mode streams each epoch once in the producer's order; it has no random access")

    def stream(self, epoch: int = 0, shuffle: bool = False, seed: int = 0) -> Iterator[tuple[bytes, int]]:
        """Epoch ``epoch`` from its FIFO; ``shuffle``/``seed`` are the producer's, set at construction."""
        if self.channel_reader is None:
            raise RuntimeError("PipeSource.open() was not called")
        samples = self.channel_reader.samples(epoch)
        try:
            for n, sample in enumerate(samples, 1):
                yield sample
                if self.epoch_records is not None and n >= self.epoch_records:
                    return  # closing the FIFO ends the epoch at the producer (EPIPE: it moves to the next)
        except PipeError as exc:
            raise PipeError(f"{exc}{self._producer_stderr()}") from exc
        finally:
            samples.close()

    def _producer_stderr(self) -> str:
        if self.process is None or self.process.poll() is None or self._made_dir is None:
            return ""
        try:
            text = (self._made_dir / "producer.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; producer said: {text[-1]}" if text else ""

    def close(self) -> None:
        proc, self.process = self.process, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._made_dir is not None:
            shutil.rmtree(self._made_dir, ignore_errors=True)
            self._made_dir = None
