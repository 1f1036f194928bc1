"""Real vision workloads: gluoncv's model zoo, Gluon's standard training transforms, JPEG folders and RecordIO.

Three registered workloads:

* ``imagefolder``: an image folder (``DIR/<class>/*.jpg``) or a RecordIO folder (``.rec`` with or
  without ``.idx``, with or without gluonbench's ``manifest.json``), read in place or through an
  input mode (``mode`` = ``file``, ``fastfile`` or ``pipe``, local or ``s3://``);
* ``seed004``: seed 004's case study scaled down to run in minutes: ~39 KB JPEGs generated once
  and cached (the ``io`` benchmark's generator), optionally packed into RecordIO shards
  (``layout="shards"``), and ResNet-18 at a small input size.

Stages, kept apart so a diagnosis can attribute them:

* ``dataset[i]`` returns the *raw* sample: the encoded image bytes and the label (reading only);
* ``PipelineSpec.decode`` (:class:`Decode`): ``mx.image.imdecode`` to an RGB ``HWC`` uint8 NDArray;
* ``PipelineSpec.transform`` (:class:`Preset`): the standard training transforms of Gluon and
  gluoncv (``imagenet``: RandomResizedCrop, flip, colour jitter, lighting, ToTensor, Normalize;
  ``cifar``: pad-and-crop, flip, ToTensor, Normalize; ``none``: resize and ToTensor only), applied
  per sample in the loader, as users write them with ``gluon.data.vision.transforms``.

The model is any classification model of ``gluoncv.model_zoo.get_model(name, pretrained=False,
classes=N)``: random initialisation, never a weights download. gluoncv is imported lazily (it is
slow to import), and nothing here opens a network connection (``tests/test_vision_zoo.py`` runs
a workload with sockets blocked).
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import arg, param
from gluonbench.workloads.base import register
from gluonbench.workloads.source import SourceDataset, open_input, require_packed, stream_batches, tally_records
from gluonbench.workloads.spec import PipelineSpec

log = logging.getLogger(__name__)

PRESETS = ("imagenet", "cifar", "none")
VISION_KEYS = ("model", "classes", "image_size", "preset", "layout")
"""Options that only the vision workloads take."""
VISION_WORKLOADS = ("imagefolder", "seed004")
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
JITTER, LIGHTING = 0.4, 0.1  # gluoncv's train_imagenet.py
MIN_IMAGE_SIZE = 8
_BUILD_LOCK = threading.Lock()

# classification models of gluoncv's zoo, by name: the families that classify images, less the
# variants that detect, segment, estimate pose, recognise actions (e.g. resnet50_v1b_kinetics400) or
# need their pretrained files (int8 quantized, pruned resnet50_v1d_0.86)
_CLASSIFIER = re.compile(
    r"^(alexnet|cifar_|densenet|dla34$|googlenet$|inceptionv3$|mobilenet|nasnet|residualattentionnet|resnest"
    r"|resnet|resnext|se_resnet|se_resnext|senet|shufflenet|squeezenet|vgg|xception|darknet53$"
    r"|hrnet_w\d+(_small_v\d)?_c$)"
)
_OTHER_TASK = re.compile(
    r"(_voc|_coco|_int8|kinetics|_ucf101|_hmdb51|_sthsthv2|_custom|_citys|_ade|_pascal|_mhpv1|_tusimple"
    r"|^resnet\d+_v1[bd]_0\.\d+$)"
)
# input sizes the models were designed for; everything else 224
_SIZES = {"inceptionv3": 299, "xception": 299, "nasnet_6_4032": 331, "resnest101": 256, "resnest200": 320}
_SIZES |= {"resnest269": 416}


# -- the model zoo -------------------------------------------------------------------------------


def _zoo():
    """gluoncv's model zoo, imported on first use (after the MXNet shims)."""
    from gluonbench._mx import mx  # noqa: F401 - the numpy/distutils shims before gluoncv imports mxnet

    try:
        import gluoncv.model_zoo as zoo
    except ImportError as exc:  # pragma: no cover - gluoncv is a dependency
        raise GluonbenchError(f"cannot import gluoncv ({exc}): pip install 'gluoncv==0.10.5.post0'") from exc
    return zoo


@functools.lru_cache(maxsize=1)
def model_names() -> tuple[str, ...]:
    """Every classification model name of gluoncv's model zoo (``get_model_list()``), sorted."""
    names = _zoo().get_model_list()
    return tuple(sorted(n for n in names if _CLASSIFIER.match(n) and not _OTHER_TASK.search(n)))


def check_model(name: str) -> str:
    """``name`` if gluoncv's zoo has a classification model of that name, else one line naming close ones."""
    names = model_names()
    if name in names:
        return name
    key = name.lower()
    if key in names:
        return key
    close = difflib.get_close_matches(key, names, n=5, cutoff=0.6)
    hint = (
        f"close names: {', '.join(close)}"
        if close
        else f"e.g. {', '.join(('resnet18_v1', 'resnet50_v1', 'mobilenetv2_1.0'))}"
    )
    raise GluonbenchError(
        f"unknown {param('model')} {name!r}: not one of the {len(names)} classification models of gluoncv's model zoo; {hint}"
    )


def default_image_size(model: str | None) -> int:
    """The input size ``model`` was designed for: 32 for CIFAR models, 299 for Inception-v3, ..., else 224.

    The seed's CNN (``model`` None) takes 28 x 28.
    """
    if model is None:
        return 28
    if model.startswith("cifar_"):
        return 32
    return _SIZES.get(model, 224)


def make_model(name: str, classes: int) -> Any:
    """``gluoncv.model_zoo.get_model(name, pretrained=False, classes=classes)``, hybridized; random weights."""
    zoo = _zoo()
    try:
        net = zoo.get_model(check_model(name), pretrained=False, classes=classes)
    except TypeError as exc:
        raise GluonbenchError(
            f"gluoncv's {name} does not take classes={classes} ({exc}); choose another {param('model')}"
        ) from exc
    net.hybridize()
    return net


def model_init():
    """gluoncv's initialiser for training from scratch (train_imagenet.py): MSRA/He."""
    from gluonbench._mx import mx

    return mx.init.MSRAPrelu()


# -- the stages: decode, then the preset's transforms ------------------------------------------------


class Decode:
    """The decode stage: encoded image bytes -> RGB ``HWC`` uint8 NDArray (``mx.image.imdecode``), float32 label."""

    def __call__(self, data: bytes, label: Any) -> tuple[Any, Any]:
        import numpy as np

        from gluonbench._mx import mx

        try:
            img = mx.image.imdecode(data, flag=1)
        except mx.base.MXNetError as exc:
            raise DataError(f"cannot decode an image of {len(data)} bytes (label {label}): not a JPEG/PNG/BMP") from exc
        return img, np.float32(label)

    def __repr__(self) -> str:
        return "Decode(mx.image.imdecode, RGB)"


class Preset:
    """A preset's per-sample training transforms: ``(HWC uint8 image, label) -> (CHW float32, label)``.

    Built with ``gluon.data.vision.transforms`` (and gluoncv's pad-and-crop for ``cifar``) the way
    gluoncv's training scripts write them. The ``Compose`` is built on first use in each process,
    so the object pickles small for DataLoader workers.
    """

    def __init__(self, name: str = "imagenet", image_size: int = 224) -> None:
        if name not in PRESETS:
            raise GluonbenchError(f"unknown {param('preset')} {name!r}; choose one of {', '.join(PRESETS)}")
        if not isinstance(image_size, int) or image_size < MIN_IMAGE_SIZE:
            raise GluonbenchError(
                f"{param('image_size')} must be a whole number >= {MIN_IMAGE_SIZE} (got {image_size!r})"
            )
        self.name = name
        self.image_size = image_size
        self._local = threading.local()

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "image_size": self.image_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def build(self) -> Any:
        """The ``transforms.Compose`` of this preset."""
        from gluonbench._mx import gluon

        t = gluon.data.vision.transforms
        s = self.image_size
        if self.name == "imagenet":
            steps = [
                t.RandomResizedCrop(s),
                t.RandomFlipLeftRight(),
                t.RandomColorJitter(brightness=JITTER, contrast=JITTER, saturation=JITTER),
                t.RandomLighting(LIGHTING),
                t.ToTensor(),
                t.Normalize(IMAGENET_MEAN, IMAGENET_STD),
            ]
        elif self.name == "cifar":
            from gluoncv.data import transforms as gcv_transforms

            # CIFAR's images are already 32 x 32; others are resized to the model's size first
            steps = [
                t.Resize(s),
                gcv_transforms.RandomCrop(s, pad=max(1, s // 8)),
                t.RandomFlipLeftRight(),
                t.ToTensor(),
                t.Normalize(CIFAR_MEAN, CIFAR_STD),
            ]
        else:
            steps = [t.Resize(s), t.ToTensor()]
        return t.Compose(steps)

    def __call__(self, data: Any, label: Any) -> tuple[Any, Any]:
        compose = getattr(self._local, "compose", None)
        if compose is None:
            # one Compose per thread, built one at a time: Gluon's block scopes are not safe to enter from two
            # threads at once (decoder threads of a stream, DataLoader(thread_pool=True))
            with _BUILD_LOCK:
                compose = self._local.compose = self.build()
        return compose(data), label

    def __repr__(self) -> str:
        return f"Preset({self.name!r}, {self.image_size})"


class DecodeThenTransform:
    """``transform(*decode(data, label))``: both stages as one loader transform."""

    def __init__(self, decode: Any, transform: Any) -> None:
        self.decode = decode
        self.transform = transform

    def __call__(self, data: Any, label: Any) -> tuple[Any, Any]:
        sample = self.decode(data, label)
        return self.transform(*sample) if self.transform is not None else sample

    def __repr__(self) -> str:
        return f"{self.decode!r} then {self.transform!r}"


def preset_stage(preset: str, image_size: int) -> DecodeThenTransform:
    """Decode then ``preset``'s transforms, per sample: what ``gluonbench io --stage decode --preset`` times."""
    return DecodeThenTransform(Decode(), Preset(preset, image_size))


def stack_batch(samples: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Transformed samples -> one ``(data, label)`` batch (as the DataLoader's default batchify)."""
    import numpy as np

    from gluonbench._mx import nd

    return nd.stack(*[d for d, _ in samples]), nd.array(np.array([lab for _, lab in samples], np.float32))


# -- data --------------------------------------------------------------------------------------------


def _open_source(uri: str, mode: str | None, endpoint_url: str | None, cache_dir: str | None, pipe: dict[str, Any]):
    """The source for ``uri``: in place (``mode`` None: local reads, no cache) or through an input mode."""
    from gluonbench.sources import make_source

    if mode is None:
        if uri.startswith("s3://"):
            raise GluonbenchError(
                f"{uri} is on S3: pass {param('mode', '--source')} file, fastfile or pipe to say how to read it"
            )
        return make_source("fastfile", uri, cache_bytes=0)  # pread in place; the page cache is the only cache
    return open_input(mode, uri, endpoint_url, cache_dir, **pipe)


def check_uri(uri: str | None) -> str:
    if not uri:
        raise GluonbenchError(
            f"{param('workload')} imagefolder needs a data set: pass {param('data_dir')} DIR "
            f"(or {param('uri')} with {param('mode', '--source')})"
        )
    if not uri.startswith("s3://") and not Path(uri).is_dir():
        raise DataError(f"{uri} is not a folder; pass an image folder (DIR/<class>/*.jpg) or a folder of .rec files")
    return uri


def check_options(model: str | None, preset: str, image_size: int | None, classes: int | None) -> int:
    """Validate the vision options before anything is read; returns the input size."""
    if model is not None:
        check_model(model)
    size = default_image_size(model) if image_size is None else image_size
    Preset(preset, size)  # validates both
    if classes is not None and (not isinstance(classes, int) or classes < 1):
        raise GluonbenchError(f"{param('classes')} must be a whole number >= 1 (got {classes!r})")
    return size


def _n_classes(found: list[str], classes: int | None, uri: str) -> int:
    if classes is not None:
        if found and classes < len(found):
            raise GluonbenchError(
                f"{param('classes')} {classes} is below the {len(found)} classes of {uri}; raise it or drop it"
            )
        return classes
    if not found:
        raise GluonbenchError(
            f"{uri} does not say how many classes it has (RecordIO with .idx but no manifest.json or .lst); "
            f"pass {param('classes')} N"
        )
    return len(found)


def make_imagefolder(
    data_dir: str | None = None,
    download: bool = True,
    uri: str | None = None,
    mode: str | None = None,
    endpoint_url: str | None = None,
    cache_dir: str | None = None,
    model: str | None = None,
    classes: int | None = None,
    image_size: int | None = None,
    preset: str = "imagenet",
    learning_rate: float = 0.05,
    threads: int = 4,
    channel: str = "train",
    channel_dir: str | None = None,
    epochs: int = 1000,
    shuffle: bool = True,
    seed: int = 0,
    timeout: float = 60.0,
    name: str = "imagefolder",
    shard_index: int | None = None,
    shard_count: int | None = None,
) -> PipelineSpec:
    """An image or RecordIO folder, decoded, transformed by ``preset`` and trained with a gluoncv ``model``: a
    :class:`PipelineSpec` (``--pipeline gluonbench.workloads.vision_zoo:make_imagefolder --pipeline-option
    uri=DIR``; ``--dataset imagefolder`` trains the same), whose ``close`` closes the source.

    ``mode`` None reads a local folder in place; ``file``/``fastfile``/``pipe`` read it (or
    ``s3://...``) through that input mode. ``model`` None trains the seed's CNN. ``shard_index``/
    ``shard_count``: a pipe channel's share for one worker of a data-parallel job (ShardedByS3Key).
    """
    del download  # never downloads
    from gluonbench.workloads.source import check_shard_mode

    check_shard_mode(mode, shard_count)
    uri = uri or data_dir
    if mode is None or not uri:
        uri = check_uri(uri)  # a local folder read in place must exist; a source names its own errors
    size = check_options(model, preset, image_size, classes)
    pipe = {
        "threads": threads,
        "channel": channel,
        "channel_dir": channel_dir,
        "epochs": epochs,
        "shuffle": shuffle,
        "seed": seed,
        "timeout": timeout,
        "shard_index": shard_index,
        "shard_count": shard_count,
    }
    source = _open_source(str(uri), mode, endpoint_url, cache_dir, pipe)
    try:
        stats = source.open()
        require_packed(getattr(source, "kind", None), mode, str(uri))
        found = source.dataset.classes if source.dataset is not None else _stream_classes(source, classes)
        n_classes = _n_classes(found, classes, str(uri))
        decode, transform = Decode(), Preset(preset, size)
        if model is None:
            from gluonbench.workloads.mnist import seed_init, seed_net

            make_net, init = functools.partial(seed_net, num_outputs=n_classes), seed_init()
        else:
            make_net, init = functools.partial(make_model, model, n_classes), model_init()
        from gluonbench.workloads.mnist import seed_loss

        info = {
            **stats.to_dict(),
            "mode": mode or "in place",
            "uri": str(uri),
            "model": model or "seed-cnn",
            "preset": preset,
            "image_size": size,
            "classes": n_classes,
        }
        train, train_batches = None, None
        if source.random_access:
            train = SourceDataset(source)
        else:  # records_read, records_crc32 counted into info; the producer shuffles a pipe, never the reader
            prepare = DecodeThenTransform(decode, transform)
            train_batches = stream_batches(source, prepare, stack_batch, wrap=tally_records(info), shuffle=False)
        return PipelineSpec(
            name=name,
            dataset=train,
            batches=train_batches,
            transform=transform,
            decode=decode,
            net=make_net,
            loss=seed_loss,
            classes=n_classes,
            init=init,
            learning_rate=learning_rate,
            info=info,
            close=source.close,
        )
    except BaseException:
        source.close()
        raise


@register("imagefolder")
def imagefolder(**options: Any) -> PipelineSpec:
    """The ``imagefolder`` workload: :func:`make_imagefolder`'s spec."""
    return make_imagefolder(**options)


def _stream_classes(source: Any, classes: int | None) -> list[str]:
    """A stream's classes: from the manifest, else from ``.lst`` files or one read of the ``.rec`` headers."""
    if classes is not None or getattr(source, "channel_dir", None):
        return []  # given; or a channel of someone else's producer, with nothing to list
    from gluonbench.sources.base import DataSet

    return DataSet.discover(source.store).classes


# -- seed 004, scaled down ---------------------------------------------------------------------------

SEED004_DEFAULTS = {"data_mb": 40.0, "file_kb": 39.0, "model": "resnet18_v1", "image_size": 64, "preset": "imagenet"}
LAYOUTS = ("files", "shards")


def _cache_root(data_dir: str | Path | None) -> Path:
    from gluonbench.workloads.synthetic import cache_root

    return cache_root(data_dir)


def _mnist_dir() -> Path | None:
    from gluonbench.data import vision

    try:
        return vision.locate("mnist", None, download=False)
    except GluonbenchError:
        return None


def _atomic_folder(target: Path, build) -> Path:
    """``build(tmp)`` into a temporary sibling, renamed to ``target``; a finished ``target`` is reused."""
    from gluonbench.data.folders import atomic_folder

    def built(tmp: Path) -> None:
        info = build(tmp)
        (tmp / ".complete").write_text(json.dumps(info) + "\n")

    return atomic_folder(
        target,
        built,
        lambda t: (t / ".complete").is_file(),
        "the seed004 data set under {parent} ({reason}); pass "
        + arg("data_dir")
        + " DIR or set GLUONBENCH_CACHE to a writable folder",
    )


def seed004_data(
    data_dir: str | Path | None = None, data_mb: float = 40.0, file_kb: float = 39.0, layout: str = "files"
) -> Path:
    """The scaled-down seed-004 data set: ~``file_kb`` KB JPEGs (MNIST digits upscaled, tinted, noised), cached.

    ``layout="shards"`` also packs them once into RecordIO shards of a fifth of the data each.
    """
    from gluonbench.data.images import make_jpeg_folder

    if layout not in LAYOUTS:
        raise GluonbenchError(f"layout must be files or shards (got {layout!r})")
    if not (data_mb > 0 and file_kb > 0 and file_kb * 1e3 < data_mb * 1e6):
        raise GluonbenchError(f"seed004: data_mb ({data_mb}) must exceed file_kb ({file_kb}) / 1000, both positive")
    root = _cache_root(data_dir) / "seed004"
    name = f"jpeg-{data_mb:g}MB-{file_kb:g}KB"
    mnist = _mnist_dir()

    def write_jpegs(tmp: Path) -> dict[str, Any]:
        folder = make_jpeg_folder(tmp, int(data_mb * 1e6), int(file_kb * 1e3), mnist_dir=mnist, seed=0)
        return {"files": len(folder.items), "bytes": folder.total_bytes, "digits": "mnist" if mnist else "synthetic"}

    files = _atomic_folder(root / name, write_jpegs)
    if layout == "files":
        return files

    def write_shards(tmp: Path) -> dict[str, Any]:
        from gluonbench.data.recordio import pack

        out = tmp / "packed"
        result = pack(files, out, shard_size=max(64_000, int(data_mb * 1e6 / 5)), shuffle=True, seed=0, name="seed004")
        for p in out.iterdir():
            os.replace(p, tmp / p.name)
        out.rmdir()
        return {"shards": len(result.manifest.shards), "records": result.manifest.records}

    return _atomic_folder(root / f"{name}-shards", write_shards)


def make_seed004(
    data_dir: str | None = None,
    download: bool = True,
    data_mb: float = 40.0,
    file_kb: float = 39.0,
    layout: str = "files",
    model: str | None = "resnet18_v1",
    image_size: int | None = 64,
    preset: str = "imagenet",
    classes: int | None = None,
    **options: Any,
) -> PipelineSpec:
    """Seed 004's case study (ResNet on ~39 KB JPEGs, or the same packed in RecordIO shards), scaled down: a
    :class:`PipelineSpec` (``--pipeline gluonbench.workloads.vision_zoo:make_seed004``; ``--dataset seed004``
    trains the same). ``options`` are :func:`make_imagefolder`'s (an input ``mode``, its threads...)."""
    check_options(model, preset, image_size, classes)
    folder = seed004_data(data_dir, data_mb, file_kb, layout)
    options.pop("uri", None)
    return make_imagefolder(
        uri=str(folder),
        download=download,
        model=model,
        image_size=image_size,
        preset=preset,
        classes=classes,
        name=f"seed004-{layout}",
        **options,
    )


@register("seed004")
def seed004(**options: Any) -> PipelineSpec:
    """The ``seed004`` workload: :func:`make_seed004`'s spec."""
    return make_seed004(**options)


# -- checks before a sweep or diagnosis ----------------------------------------------------------------


def resolve_workload(workload: str, options: dict[str, Any]) -> str:
    """The workload a vision option implies: ``source`` with ``--model``/``--preset``... is ``imagefolder``.

    The seed's IDX data sets and the synthetic workload take no vision options: one clear line.
    """
    given = [k for k in VISION_KEYS if options.get(k) is not None]
    if not given or workload in VISION_WORKLOADS:
        return workload
    if workload == "source":
        return "imagefolder"
    flags = ", ".join(param(k) for k in given)
    dataset, data_dir, source, uri = param("workload"), param("data_dir"), param("mode", "--source"), param("uri")
    raise GluonbenchError(
        f"{flags} apply to image data: add {dataset} imagefolder {data_dir} DIR, {dataset} seed004, "
        f"or {source} MODE {uri} DIR (got {dataset} {workload})"
    )


def check_vision(workload: str, options: dict[str, Any], data_dir: str | None = None) -> dict[str, int]:
    """Fail fast before any run: model, preset and size valid; the data set there (seed004: made once).

    Returns the split sizes. Discovering the data set lists it (and, for RecordIO without
    ``.idx``, reads it once to index it).
    """
    from gluonbench.data.store import open_store
    from gluonbench.sources.base import DataSet

    opts = dict(options)
    if workload == "seed004":
        for key, value in SEED004_DEFAULTS.items():
            opts.setdefault(key, value)
    check_options(opts.get("model"), opts.get("preset", "imagenet"), opts.get("image_size"), opts.get("classes"))
    if workload == "seed004":
        uri = str(seed004_data(data_dir, opts["data_mb"], opts["file_kb"], opts.get("layout", "files")))
    else:
        uri = opts.get("uri") or data_dir
        if opts.get("mode") is None or not uri:
            uri = check_uri(uri)
    if opts.get("mode") == "pipe" and opts.get("channel_dir"):
        return {}
    dataset = DataSet.discover(open_store(uri, opts.get("endpoint_url")))
    require_packed(dataset.kind, opts.get("mode"), uri)
    _n_classes(dataset.classes, opts.get("classes"), uri)
    return {"train": len(dataset.samples)}
