"""The seed's CNN trained through an input mode: the ``source`` workload.

:func:`make` (``uri=..., mode="file"|"fastfile"|"pipe", endpoint_url=...``) opens the source and
returns a :class:`~gluonbench.PipelineSpec` whose data arrive through it (its ``info`` what the source
reported, its ``close`` the source's); ``get_workload("source", ...)``, ``RunSpec(workload="source",
options={...})`` and ``gluonbench sweep --source MODE --uri URI`` train that spec. Everything after the source stage is the seed's:
images are decoded to greyscale, resized to ``image_size`` (28) and go through
the seed's transform and net, so an image folder or a packed MNIST trains the
seed's CNN unchanged.

* ``file`` / ``fastfile``: ``dataset`` is a random-access ``gluon.data.Dataset``
  (:class:`SourceDataset`) of raw records read through the source, and ``decode``
  the pipeline's decode stage (so decoding counts as preprocessing), so DataLoader workers,
  ``thread_pool`` and shuffling work as for MNIST, and every probe that builds
  its own loader over the data set runs over the source too.
* ``pipe``: a FIFO is a stream, not an indexable data set. ``dataset`` is None and
  ``batches(batch_size, workers, epoch)`` yields batches read from the
  epoch's FIFO, decoded by ``workers`` threads (OpenCV, same pixels as
  ``mx.image``) with the seed's transform applied per batch. Shuffle is the producer's
  (object order per epoch; ``shuffle``/``seed``), never by index. Pipe needs a
  packed data set (labels travel in the record headers); stopping early (e.g.
  ``max_batches``) closes the FIFO and the producer moves on to the next epoch.
  ``shard_index``/``shard_count`` (a worker of a data-parallel job) make the
  producer stream only that worker's objects (ShardedByS3Key); the run's
  ``source`` record then counts what the worker read: ``records_read`` and
  ``records_crc32`` (the sum of each record's image CRC-32, so the workers' sums
  add up to the whole channel's when the shards are disjoint and cover it).

There is no test split: ``test`` is None and runs report no accuracy.
"""

from __future__ import annotations

import functools
import logging
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gluonbench.data.store import open_store
from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import param
from gluonbench.sources import MODES, make_source
from gluonbench.sources.base import DataSet
from gluonbench.workloads.base import register
from gluonbench.workloads.mnist import seed_init, seed_loss, seed_net, seed_transform
from gluonbench.workloads.spec import PipelineSpec

log = logging.getLogger(__name__)


def decode_image(data: bytes, label: int, image_size: int = 28):
    """Image bytes -> ``(image_size, image_size, 1)`` uint8 NDArray (MNIST's layout) and an int32 label."""
    import numpy as np

    from gluonbench._mx import mx

    try:
        img = mx.image.imdecode(data, flag=0)
    except mx.base.MXNetError as exc:
        raise DataError(f"cannot decode an image of {len(data)} bytes (label {label}): not a JPEG/PNG/BMP") from exc
    if img.shape[0] != image_size or img.shape[1] != image_size:
        img = mx.image.imresize(img, image_size, image_size, interp=3)
    return img, np.int32(label)


def _dataset_class():
    from gluonbench._mx import gluon

    class _SourceDataset(gluon.data.Dataset):
        """Random-access raw samples ``(bytes, label)`` read through a File or FastFile source."""

        def __init__(self, source: Any, image_size: int = 28) -> None:
            self.source = source
            self.image_size = image_size

        def __getitem__(self, idx: int):
            # the raw record: decoding is the pipeline's decode stage (preprocessing), not reading
            return self.source.read(int(idx))

        def __len__(self) -> int:
            return len(self.source.dataset.samples)

    return _SourceDataset


def SourceDataset(source: Any, image_size: int = 28):  # noqa: N802 - a factory that reads like a class
    """A ``gluon.data.Dataset`` of raw ``(bytes, label)`` records over an opened random-access source (the class
    needs MXNet, imported lazily); the read stage of the ``source`` and ``imagefolder`` workloads."""
    return _dataset_class()(source, image_size)


def decode_numpy(data: bytes, label: int, image_size: int = 28):
    """As :func:`decode_image`, to numpy with OpenCV (which releases the GIL, so decoder threads run in parallel)."""
    import cv2
    import numpy as np

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    if img is None:
        raise DataError(f"cannot decode an image of {len(data)} bytes (label {label}): not a JPEG/PNG/BMP")
    if img.shape != (image_size, image_size):
        img = cv2.resize(img, (image_size, image_size), interpolation=cv2.INTER_AREA)
    return img[:, :, None], label


def seed_batchify(prepared: list[tuple[Any, int]]):
    """Stack decoded samples and apply the seed's transform to the whole batch (same values, one op)."""
    import numpy as np

    from gluonbench._mx import nd

    data = nd.array(np.stack([img for img, _ in prepared]), dtype=np.uint8)
    label = nd.array(np.array([lab for _, lab in prepared], np.float32))
    return nd.transpose(data.astype(np.float32), (0, 3, 1, 2)) / 255, label


def batch_stream(
    samples: Iterable[tuple[bytes, int]],
    batch_size: int,
    prepare: Callable[[bytes, int], Any],
    batchify: Callable[[list[Any]], tuple[Any, Any]],
    threads: int = 0,
) -> Iterator[tuple[Any, Any]]:
    """Group a sample stream into ``(data, label)`` batches; ``prepare`` (decode) runs in ``threads`` threads."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix="gluonbench-decode") if threads > 0 else None
    it = iter(samples)
    try:
        while True:
            group = [s for _, s in zip(range(batch_size), it, strict=False)]
            if not group:
                return
            prepared = list(pool.map(lambda s: prepare(*s), group)) if pool else [prepare(*s) for s in group]
            yield batchify(prepared)
            if len(group) < batch_size:
                return
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()  # a pipe consumer closes its FIFO, so the producer moves on
        if pool is not None:
            pool.shutdown(wait=True)


def stream_batches(
    source: Any,
    prepare: Callable[[bytes, int], Any],
    batchify: Callable[[list[Any]], tuple[Any, Any]],
    wrap: Callable[[Iterable[tuple[bytes, int]], int], Iterable[tuple[bytes, int]]] | None = None,
    shuffle: bool = True,
    seed: int = 0,
) -> Any:
    """``batches(batch_size, threads, epoch)`` over an opened source's sample stream: ``prepare``
    (decode) in ``threads`` threads, then ``batchify``; the loader stage of a stream
    (:class:`gluonbench.pipeline.Stream`). Pipe-mode training and the io cells read a mode
    through this one function. ``wrap(samples, epoch)`` may wrap each epoch's stream (e.g. to
    count bytes).
    """

    def batches(size: int, threads: int, epoch: int) -> Iterator[tuple[Any, Any]]:
        samples: Iterable[tuple[bytes, int]] = source.stream(epoch, shuffle=shuffle, seed=seed)
        if wrap is not None:
            samples = wrap(samples, epoch)
        return batch_stream(samples, size, prepare, batchify, threads=threads)

    return batches


def tally_records(info: dict[str, Any]) -> Callable[[Iterable[tuple[bytes, int]], int], Iterator[tuple[bytes, int]]]:
    """A ``stream_batches`` wrap that counts the samples read into ``info`` (``records_read``, ``records_crc32``)."""
    info.setdefault("records_read", 0)
    info.setdefault("records_crc32", 0)

    def wrap(samples: Iterable[tuple[bytes, int]], epoch: int) -> Iterator[tuple[bytes, int]]:
        del epoch
        it = iter(samples)
        try:
            for data, label in it:
                info["records_read"] += 1
                info["records_crc32"] += zlib.crc32(data)
                yield data, label
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()  # the FIFO is closed now, not when the generator is collected

    return wrap


def require_packed(kind: str | None, mode: str | None, uri: str) -> None:
    """Pipe mode trains on a packed (RecordIO) data set: its labels travel in the records, an image folder's do not."""
    if mode == "pipe" and kind != "recordio":
        raise DataError(
            f"pipe mode trains on a packed (RecordIO) data set (labels travel in the records), but {uri} is an "
            f"image folder; run 'gluonbench pack {uri} OUT_DIR' and pass {param('uri')} OUT_DIR"
        )


def open_input(
    mode: str,
    uri: str,
    endpoint_url: str | None = None,
    cache_dir: str | None = None,
    threads: int = 4,
    **pipe: Any,
) -> Any:
    """The (unopened) source of ``uri`` in input ``mode``: ``threads`` readers, the file mode's ``cache_dir``, a
    pipe's channel options (``channel``, ``channel_dir``, ``epochs``, ``shuffle``, ``seed``, ``timeout``,
    ``shard_index``, ``shard_count``). The ``source`` and ``imagefolder`` workloads open their data through it."""
    if mode not in MODES:
        raise GluonbenchError(f"unknown {param('mode', '--source')} {mode!r}; choose one of {', '.join(MODES)}")
    options: dict[str, Any] = {"threads": threads}
    if mode == "file":
        options["cache_dir"] = cache_dir
    if mode == "pipe":
        options.update(pipe)
        if pipe.get("channel_dir"):
            options["kind"] = "recordio"
    return make_source(mode, uri, endpoint_url, **options)


def check_source(options: dict[str, Any], data_dir: str | None = None, deep: bool = True) -> dict[str, int]:
    """Fail fast before any run: the options make sense and (``deep``) the source holds a usable data set.

    Returns the split sizes when ``deep``. The workload itself checks shallowly: opening the source finds
    the rest, so the data set is listed once per run, not twice.
    """
    mode = options.get("mode", "file")
    if mode not in MODES:
        raise GluonbenchError(f"unknown {param('mode', '--source')} {mode!r}; choose one of {', '.join(MODES)}")
    uri = options.get("uri") or data_dir
    if not uri:
        raise GluonbenchError(
            f"the source workload needs a data set: pass {param('uri')} FOLDER_OR_S3_URI (or {param('data_dir')})"
        )
    if mode == "file" and options.get("cache_dir"):
        from pathlib import Path

        from gluonbench.sources.file import check_writable

        check_writable(Path(options["cache_dir"]))
    if not deep or (mode == "pipe" and options.get("channel_dir")):
        return {}
    dataset = DataSet.discover(open_store(uri, options.get("endpoint_url")))
    require_packed(dataset.kind, mode, uri)
    return {"train": len(dataset.samples)}


def check_shard_mode(mode: str | None, shard_count: int | None) -> None:
    """``shard_index``/``shard_count`` shard a pipe channel by object; any other input mode is sharded by sample."""
    if shard_count is not None and mode != "pipe":
        raise GluonbenchError(
            "shard_index/shard_count shard a pipe channel; other input modes are sharded by sample (rank-strided)"
        )


def check_pipe_shards(options: dict[str, Any], workers: int, data_dir: str | None = None) -> None:
    """Before a job of ``workers`` processes reads a pipe channel sharded by object: every worker needs one."""
    uri = options.get("uri") or data_dir
    if options.get("mode") != "pipe" or options.get("channel_dir") or workers < 2 or not uri:
        return
    from gluonbench.sources.pipe import channel_objects

    objects, _ = channel_objects(open_store(uri, options.get("endpoint_url")))
    if len(objects) < workers:
        raise DataError(
            f"{param('mode', '--source')} pipe shards {uri} by object, but it has {len(objects)} data object(s) for {workers} workers; "
            f"use at most {len(objects)} workers ({param('hosts')}) or pack into smaller shards (gluonbench pack --shard-size)"
        )


def make(
    data_dir: str | None = None,
    download: bool = True,
    uri: str | None = None,
    mode: str = "file",
    endpoint_url: str | None = None,
    cache_dir: str | None = None,
    channel: str = "train",
    channel_dir: str | None = None,
    epochs: int = 1000,
    shuffle: bool = True,
    seed: int = 0,
    image_size: int = 28,
    classes: int | None = None,
    threads: int = 4,
    timeout: float = 60.0,
    shard_index: int | None = None,
    shard_count: int | None = None,
) -> PipelineSpec:
    """Open ``uri`` in input ``mode``; the seed's pipeline over it as a :class:`PipelineSpec` (see the module
    docstring): ``--pipeline gluonbench.workloads.source:make --pipeline-option uri=... mode=...`` trains what
    ``--source MODE --uri URI`` does. The spec's ``close`` closes the source."""
    del download  # sources never download
    uri = uri or data_dir
    check_shard_mode(mode, shard_count)
    check_source(
        {"mode": mode, "uri": uri, "endpoint_url": endpoint_url, "channel_dir": channel_dir, "cache_dir": cache_dir},
        deep=False,
    )
    source = open_input(
        mode, uri, endpoint_url, cache_dir, threads,
        channel=channel, channel_dir=channel_dir, epochs=epochs, shuffle=shuffle, seed=seed, timeout=timeout,
        shard_index=shard_index, shard_count=shard_count,
    )  # fmt: skip
    try:
        stats = source.open()
        require_packed(getattr(source, "kind", None), mode, uri)
        if source.dataset is not None:
            n_classes = len(source.dataset.classes) or classes or 10
        else:
            n_classes = classes or _manifest_classes(source) or 10
        info = {"mode": mode, "uri": uri, **stats.to_dict()}

        train_batches = None
        train = None
        if source.random_access:
            train = SourceDataset(source, image_size)
        else:
            # the producer shuffles a pipe (object order per epoch), never the reader
            prepare = functools.partial(decode_numpy, image_size=image_size)
            train_batches = stream_batches(source, prepare, seed_batchify, wrap=tally_records(info), shuffle=False)

        return PipelineSpec(
            name=f"source-{mode}",
            decode=functools.partial(decode_image, image_size=image_size) if train is not None else None,
            dataset=train,
            batches=train_batches,
            transform=seed_transform,  # a stream applies it per batch (seed_batchify)
            net=functools.partial(seed_net, num_outputs=n_classes),
            loss=seed_loss,
            classes=n_classes,
            init=seed_init(),
            info=info,
            close=source.close,
        )
    except BaseException:
        source.close()
        raise


@register("source")
def source_workload(**options: Any) -> PipelineSpec:
    """The ``source`` workload: :func:`make`'s spec (``--source MODE --uri URI``)."""
    return make(**options)


def _manifest_classes(source: Any) -> int | None:
    from gluonbench.data.recordio import MANIFEST, Manifest

    try:
        text = source.store.get(MANIFEST).decode("utf-8", "replace")
    except GluonbenchError:
        return None
    return len(Manifest.from_json(text, source.store.describe(MANIFEST)).classes) or None
