"""Settings of every command as frozen, validated dataclasses: :class:`SweepSettings` (TOML configs with
``--set key=value`` overrides), :class:`DiagnoseSettings`, :class:`IoSettings`; the ``stream`` producer's
are :class:`gluonbench.sources.pipe.StreamOptions`. The library validates (``check()``, raising
:class:`~gluonbench.errors.GluonbenchError`); the CLI only turns flags into these."""

from __future__ import annotations

import datetime
import logging
import math
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gluonbench.bounds import check_int
from gluonbench.budgets import check_budget
from gluonbench.errors import GluonbenchError
from gluonbench.files import read_text
from gluonbench.identity import describe
from gluonbench.knobs import knob_default
from gluonbench.names import arg, example, param, param_example
from gluonbench.ranges import parse_int_list
from gluonbench.settings import SETTINGS, Setting, check_declared, declared
from gluonbench.sweeprun.run import RunSetting, RunSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSettings(RunSetting):
    """One sweep: every worker count in ``workers``, ``repeat`` times each; the settings its runs share are
    :class:`~gluonbench.sweeprun.run.RunSetting`'s (each run is a :class:`~gluonbench.sweeprun.run.RunSpec`)."""

    workers: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8)
    batch_size: int | None = None  # type: ignore[assignment]
    """samples per batch; None: the pipeline's own ``batch_size`` with ``pipeline``, else 64 (as the seed)"""
    repeat: int = declared("repeat")
    timeout_s: float = declared("timeout_s")
    name: str | None = declared("name")
    model: str | None = declared("model")
    """a classification model of gluoncv's zoo (``--model``); None: the workload's default (the seed's CNN)"""
    preset: str | None = declared("preset")
    """per-sample training transforms of an image workload: imagenet, cifar or none (``--preset``)"""
    classes: int | None = None
    """the model's outputs (``--classes``); None: the data set's class count"""
    image_size: int | None = None
    """the model's input size (``--image-size``); None: the model family's (224, 32 for CIFAR models, ...)"""

    def workload_options(self) -> dict[str, Any]:
        """``options`` plus the vision settings that are set (with ``pipeline``: the factory and its options)."""
        if self.pipeline:
            return pipeline_workload_options(self.pipeline, self.pipeline_options)
        vision = {k: getattr(self, k) for k in ("model", "preset", "classes", "image_size")}
        return {**self.options, **{k: v for k, v in vision.items() if v is not None}}

    def run_workload(self) -> str:
        """The workload each run builds (``source`` with a vision setting is ``imagefolder``)."""
        from gluonbench.workloads.vision_zoo import resolve_workload

        if self.pipeline:
            return "pipeline"
        return resolve_workload(self.workload, self.workload_options())

    # scale-out (gluonbench.distributed): per-device batch over ``devices`` contexts or ``gpus``, the
    # kvstore; with a dist_* kvstore, one job per entry of ``hosts`` (worker processes) with ``servers``
    gpus: tuple[int, ...] | None = None
    hosts: tuple[int, ...] = (1,)
    launcher: str = declared("launcher")
    hostfile: str | None = declared("hostfile")
    port: int | None = None
    pipeline: str | None = declared("pipeline")
    """a user's pipeline factory, ``"mypkg.train:make"`` or ``"path/file.py:make"`` (``--pipeline``; see
    :class:`gluonbench.PipelineSpec`): every run trains what it returns instead of ``workload``"""
    pipeline_options: dict[str, Any] = field(default_factory=dict)
    """keyword arguments of the pipeline factory (``--pipeline-option key=value``)"""

    def __post_init__(self) -> None:
        _pipeline_workload(self)

    def identity(self) -> str:
        """What this sweep trains (:func:`gluonbench.identity.describe`): the factory and its options, or the
        built-in workload's name."""
        return describe(self.pipeline, self.pipeline_options, self.workload)

    def specs(self) -> list[RunSpec]:
        """All runs, repeats interleaved (0, 2, 4, 0, 2, 4, ...) so drift spreads evenly."""
        if self.batch_size is None:  # the pipeline's own (the factory is called once in this process)
            return resolve_batch_size(self, keep=False).specs()
        shared = {f.name: getattr(self, f.name) for f in fields(RunSetting)}
        shared["workload"] = self.run_workload()
        gpus = list(self.gpus) if self.gpus is not None else None
        return [
            RunSpec(**dict(shared, options=self.workload_options()), gpus=gpus, hosts=h, workers=w, repeat=r)
            for r in range(self.repeat)
            for h in self.hosts
            for w in self.workers
        ]

    def label(self) -> str:
        what = f"{self.workload}-{self.options.get('mode', 'file')}" if self.workload == "source" else self.workload
        if self.pipeline:
            what = pipeline_label(self.pipeline)
        if self.workload in ("imagefolder", "seed004"):
            what = "-".join(str(v) for v in (self.workload, self.model, self.options.get("mode")) if v)
        scale = f"-{self.kvstore}" if self.kvstore else ""
        return self.name or f"sweep-{what}-{self.ctx.replace(':', '')}{scale}"

    def to_dict(self) -> dict[str, Any]:
        """The settings as stored in a run folder, with ``identity`` (what was trained) beside them."""
        d = asdict(self)
        d["workers"] = list(self.workers)
        d["hosts"] = list(self.hosts)
        d["gpus"] = None if self.gpus is None else list(self.gpus)
        d["identity"] = self.identity()
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSettings:
        data = {k: v for k, v in data.items() if k != "identity"}  # derived from the rest, never set
        return coerce(cls(), data, source="settings")

    def check(self) -> SweepSettings:
        """Raise :class:`GluonbenchError` naming the bad value and the fix; return the checked settings (an unset
        ``batch_size`` without a pipeline becomes the seed's 64; with one it stays unset until
        :func:`resolve_batch_size` reads the pipeline's own)."""
        if self.batch_size is None and not self.pipeline:
            return replace(self, batch_size=knob_default("batch_size")).check()
        check_types(self)
        from gluonbench.bounds import check_settings_bounds

        check_settings_bounds(self)  # upper bounds too, before any work (#21)
        from gluonbench.knobs import check_knobs

        # workers (each), batch_size (unset beside a pipeline: its own), thread_pool, prefetch, pin_memory
        check_knobs(self, param, unset=("batch_size",))
        check_declared(self)  # name (a plain name), diagnose_budget_s (finite seconds), ...
        if self.timeout_s <= 0:
            raise GluonbenchError(f"{param('timeout_s')} must be positive (got {self.timeout_s})")
        check_budget(self.diagnose_budget_s, "sweep.diagnose")
        if not isinstance(self.options, dict):
            raise GluonbenchError(f"options must be a table of workload options (got {self.options!r})")
        for key, value in self.options.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise GluonbenchError(f"option {key}={value} is not a finite number; give a finite value")
        if not self.workers:
            raise GluonbenchError(
                f"{param('workers')} names no worker count; e.g. {param_example('workers=(0, 1, 2)', '--workers 0..8')}"
            )
        self.run_workload()  # vision settings only with image data
        from gluonbench.pipeline.scale import check_scale

        check_scale(self)
        check_pipeline_settings(self)
        return self


def _pipeline_workload(settings: Any) -> None:
    """A command's settings with a ``pipeline`` name the ``pipeline`` workload, never the default ``mnist``."""
    if settings.pipeline and settings.workload == "mnist":
        object.__setattr__(settings, "workload", "pipeline")


class _MeasuresAPipeline:
    """What the settings of diagnose and tune share: the pipeline they measure in this process, a factory
    (``pipeline``, ``pipeline_options``) or a built-in ``workload`` with its ``options``."""

    def __post_init__(self) -> None:
        _pipeline_workload(self)

    def identity(self) -> str:
        """What is measured: the factory and its options, or the built-in workload's name."""
        return describe(self.pipeline, self.pipeline_options, self.workload)  # type: ignore[attr-defined]

    def check_measured(self) -> None:
        """What is measured exists: the pipeline's settings (:func:`check_pipeline_settings`), a registered
        workload, a synthetic one's options."""
        from gluonbench.workloads import workload_names

        check_pipeline_settings(self)
        workload = self.workload  # type: ignore[attr-defined]
        if workload not in workload_names():
            raise GluonbenchError(
                f"unknown {param('workload')} {workload!r}; choose one of {', '.join(workload_names())}"
            )
        if workload == "synthetic":
            from gluonbench.workloads.synthetic import check_options

            check_options(self.options)  # type: ignore[attr-defined]

    def run_workload(self) -> tuple[str, dict[str, Any]]:
        """The registered workload and its options measured (``pipeline`` for a factory)."""
        if self.pipeline:  # type: ignore[attr-defined]
            return "pipeline", pipeline_workload_options(self.pipeline, self.pipeline_options)  # type: ignore[attr-defined]
        return self.workload, self.options  # type: ignore[attr-defined]


def resolve_batch_size(settings: Any, keep: bool = True) -> Any:
    """``settings`` with an unset ``batch_size`` made the pipeline's own (its factory called once in this process;
    with ``keep`` the spec is kept for the command: :func:`gluonbench.workloads.spec.spec_batch_size`), else the
    seed's 64; settings with a batch size are returned as they are. A ``batch_size`` the user gave that differs
    from the spec's is said once, by :func:`gluonbench.workloads.spec.check_pipeline`."""
    if getattr(settings, "batch_size", 0) is not None:
        return settings
    if not getattr(settings, "pipeline", None):
        return replace(settings, batch_size=knob_default("batch_size"))
    from gluonbench.workloads.spec import spec_batch_size

    own = spec_batch_size(settings.pipeline, settings.pipeline_options, keep=keep)
    log.info("batch size %d: the pipeline's own (%s sets another)", own, arg("batch_size"))
    return replace(settings, batch_size=own)


def pipeline_workload_options(target: str, options: dict[str, Any]) -> dict[str, Any]:
    """The ``pipeline`` workload's options: the factory (a file path made absolute) and its keyword arguments."""
    from gluonbench.workloads.spec import absolute_target

    return {"pipeline": absolute_target(target), "pipeline_options": dict(options)}


def pipeline_label(target: str) -> str:
    """A run folder's name for a pipeline factory: ``train-make`` for ``mypkg/train.py:make``."""
    from gluonbench.workloads.spec import split_target

    where, func = split_target(target)
    stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in f"{stem}-{func}")


def check_pipeline_settings(settings: Any) -> None:
    """``pipeline`` is a factory's name and ``pipeline_options`` a table; ``--dataset`` and its options are not
    given beside it (any command's settings)."""
    pipeline = settings.pipeline
    if pipeline is None:
        if settings.pipeline_options:
            raise GluonbenchError(
                f"{param('pipeline_options', '--pipeline-option')} goes with {param('pipeline')} MODULE:FUNCTION; "
                f"add {param('pipeline')}"
            )
        return
    from gluonbench.workloads.spec import split_target

    split_target(pipeline)
    if not isinstance(settings.pipeline_options, dict):
        raise GluonbenchError(
            f"pipeline_options must be a table of factory options (got {settings.pipeline_options!r})"
        )
    if settings.workload not in ("mnist", "pipeline"):
        raise GluonbenchError(
            f"{param('pipeline')} and {param('workload')} {settings.workload} exclude each other; "
            "the pipeline's factory gives the data"
        )
    extra = [k for k in ("model", "preset", "classes", "image_size") if getattr(settings, k, None) is not None]
    if settings.options or extra:
        names = ", ".join([*sorted(settings.options), *extra])
        raise GluonbenchError(
            f"{param('pipeline')} takes no data set options ({names}); pass them to the factory with "
            f"{param_example('pipeline_options={KEY: VALUE}', '--pipeline-option KEY=VALUE')}"
        )


LISTS = ("workers", "hosts", "gpus")
"""settings that hold a list of a declared setting's values (``--workers 0,2,4``)"""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def declaration(name: str) -> Setting | None:
    """The one declaration of settings field ``name``: a shared setting or a loader knob (by its key); None for
    a field that is no single value (``options``, ``emulate_step_ms``: a number or a named target)."""
    from gluonbench.knobs import KNOBS

    return next((k for k in KNOBS.values() if k.key == name), None) or SETTINGS.get(name)


def _unset_is_none(name: str) -> bool:
    """None is a value of sweep field ``name`` where its default is None: no value (no cap, none set), or the
    pipeline's own (``batch_size``). A sweep's ``ctx`` is a context (diagnose's None picks one, a sweep's never)."""
    return SweepSettings.__dataclass_fields__[name].default is None


def check_types(settings: SweepSettings) -> None:
    """Every field has its declared type (the Python API takes no ``"64"`` for 64); one line per mistake."""

    def bad(name: str, want: str, value: Any) -> GluonbenchError:
        return GluonbenchError(
            f"setting {name} must be {want} (got {type(value).__name__} {value!r}); "
            "convert it, or pass strings through config.coerce()"
        )

    if not isinstance(settings, SweepSettings):
        raise GluonbenchError(
            f"settings must be a SweepSettings (got {type(settings).__name__}); e.g. SweepSettings(workers=(0, 2))"
        )
    for f in fields(settings):
        s = declaration(f.name)
        value = getattr(settings, f.name)
        if s is None or f.name in LISTS or (value is None and _unset_is_none(f.name)):
            continue  # batch_size None: the pipeline's own (read once its factory is loaded), else 64
        if not s.is_type(value):
            raise bad(f.name, s.words(_unset_is_none(f.name)), value)
    workers = settings.workers
    if not isinstance(workers, tuple | list) or not all(_whole(w) for w in workers):
        raise bad("workers", "a tuple of whole numbers, e.g. (0, 2, 4)", workers)


def check_seconds(value: float, what: str) -> float:
    """A time in seconds: a finite number (``nan`` and ``inf`` are refused)."""
    from gluonbench.settings import check_duration

    check_duration(value, what, minimum=-math.inf)
    return value


def check_name(name: str | None, what: str) -> str | None:
    """A run name is a name, never a path: no ``/``, ``\\``, ``..`` or leading dot, no control characters (the
    ``name`` setting's own check, for a settings type that does not declare the field)."""
    return None if name is None else SETTINGS["name"].parse(name, what)  # type: ignore[misc]


def _flag(name: str, source: str) -> str:
    """Setting ``name`` in an error's message: its parameter from the command line, ``FILE: name`` from a config."""
    if source == "command line":
        return param(name)
    return f"{source}: {name}"


def _convert(name: str, raw: Any, source: str) -> Any:
    """A config's or ``--set``'s value of field ``name`` as its declaration's type (lists value by value)."""
    if name in LISTS:
        if raw is None:
            return None if name == "gpus" else raw
        if isinstance(raw, list | tuple):
            if not all(_whole(v) for v in raw):
                raise GluonbenchError(f"{source}: {name} must be whole numbers (got {raw!r})")
            return tuple(raw)
        return tuple(parse_int_list(str(raw), what=f"--{name}" if source == "command line" else f"{source}: {name}"))
    if name == "emulate_step_ms":
        if raw is None or str(raw).lower() in ("none", ""):
            return None
        from gluonbench.pipeline.emulate import step_ms

        return step_ms(raw, what=_flag(name, source))
    if name in ("options", "pipeline_options") and not isinstance(raw, dict):
        what = "workload options" if name == "options" else "factory options"
        raise GluonbenchError(f"{source}: {name} must be a table of {what} (got {raw!r})")
    s = declaration(name)
    return raw if s is None else s.convert(raw, _flag(name, source), optional=_unset_is_none(name))


def coerce(base: SweepSettings, values: dict[str, Any], source: str) -> SweepSettings:
    """``base`` with ``values`` applied; unknown keys and bad values raise :class:`GluonbenchError`."""
    known = {f.name: f for f in fields(SweepSettings)}
    changes = {}
    for key, raw in values.items():
        name = key.replace("-", "_")
        if name not in known:
            raise GluonbenchError(f"{source}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        changes[name] = _convert(name, raw, source)
    return replace(base, **changes)


TOML_MAX_BYTES = 1 << 20
"""A config larger than this is not a settings file (``--config /dev/zero`` would be read forever)."""


def refuse_toml_datetimes(data: Any, label: str, key: str = "") -> None:
    """Refuse a TOML date or time value anywhere in ``data`` (``when = 1979-05-27``): no setting or option takes
    one, and it is not JSON, so it would fail only when the settings are written, after the work."""
    if isinstance(data, dict):
        for k, v in data.items():
            refuse_toml_datetimes(v, label, f"{key}.{k}" if key else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            refuse_toml_datetimes(v, label, f"{key}[{i}]")
    elif isinstance(data, datetime.date | datetime.time):
        raise GluonbenchError(
            f"{label}: {key} = {data.isoformat()} is a TOML date/time; settings take numbers, strings, booleans and "
            f'tables: quote it ({key.rsplit(".", 1)[-1]} = "{data.isoformat()}")'
        )


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a config file; settings live at the top level or under ``[sweep]`` (not both)."""
    path = Path(path)
    fix = "give a TOML settings file, e.g. configs/mnist-cpu.toml"
    if not path.exists() and not path.is_symlink():
        raise GluonbenchError(f"--config {path} does not exist; see configs/ for examples")
    text = read_text(path, "--config", TOML_MAX_BYTES, fix)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GluonbenchError(f"--config {path} is not valid TOML ({exc}); fix the file") from None
    except RecursionError:
        raise GluonbenchError(f"--config {path} is nested too deeply to be a settings file; fix the file") from None
    refuse_toml_datetimes(data, f"--config {path}")
    # [machine] describes the hardware a config was written for (read by people and tests, not settings)
    if "sweep" in data and set(data) - {"sweep", "machine"}:
        others = ", ".join(sorted(set(data) - {"sweep", "machine"}))
        raise GluonbenchError(
            f"--config {path}: {others} beside [sweep] would be ignored; move them into [sweep] (or drop [sweep])"
        )
    table = data.get("sweep", data)
    if not isinstance(table, dict):
        raise GluonbenchError(f"--config {path}: [sweep] must be a table of settings")
    return table


def parse_overrides(items: list[str], flag: str = "--set", example: str = "batch_size=128") -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GluonbenchError(f"{flag} {item!r}: write KEY=VALUE, e.g. {flag} {example}")
        out[key.strip()] = value.strip()
    return out


IO_MODES = ("file", "fastfile", "pipe")
IO_SIZES = ("small", "large")
IO_LAYOUTS = ("files", "shards")


@dataclass(frozen=True)
class IoSettings:
    """The input-mode benchmark (``gluonbench io``): seed 004's matrix of modes x sizes x file layouts.

    Sizes are scaled to finish in minutes on a small machine: ``small``/``large``
    bytes of ~``file_size`` JPEGs, packed into shards of ``shard_size`` (None:
    a fifth of the data set, capped at the real-world 150 MB, so "few large
    shards" means several shards at every size). ``src`` benchmarks your own
    image folder instead (one size, named after the folder). ``s3_uri`` stages
    the data sets under that prefix and reads them through boto3.
    """

    modes: tuple[str, ...] = IO_MODES
    sizes: tuple[str, ...] = IO_SIZES
    layouts: tuple[str, ...] = IO_LAYOUTS
    small_bytes: int = 20_000_000
    large_bytes: int = 200_000_000
    file_size: int = 40_000
    shard_size: int | None = None
    src: str | None = None
    s3_uri: str | None = None
    endpoint_url: str | None = None
    epochs: int = declared("epochs", 2)
    batch_size: int = 64
    threads: int = 4
    stage: str = "read"
    page_cache: str = "warm"
    drop_caches: bool = False
    shuffle: bool = True
    seed: int = declared("seed", 0)
    work_dir: str | None = None
    mnist_dir: str | None = None
    timeout_s: float = declared("timeout_s", 600.0)
    name: str | None = None
    preset: str | None = None
    """``stage="decode"``: decode to RGB and apply this preset (imagenet, cifar, none); None: the seed's decode"""
    image_size: int = 224
    emulate_step_ms: float | str | None = None
    """swap each cell's (absent) model step for a timed wait: ms per batch or a target such as ``resnet50@v100``;
    each cell then reports its accelerator utilisation (see :mod:`gluonbench.pipeline.emulate`)"""

    def size_bytes(self, size: str) -> int:
        return self.small_bytes if size == "small" else self.large_bytes

    def shard_bytes(self, data_bytes: int) -> int:
        return self.shard_size or max(64_000, min(150_000_000, data_bytes // 5))

    def label(self) -> str:
        return self.name or f"io-{'s3' if self.s3_uri else 'local'}-{self.stage}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IoSettings:
        names = {f.name for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
        return cls(**values)

    def check(self) -> IoSettings:
        def subset(name: str, allowed: tuple[str, ...]) -> None:
            values = getattr(self, name)
            bad = [v for v in values if v not in allowed]
            if not values or bad:
                raise GluonbenchError(
                    f"{param(name)} {','.join(values)!r}: choose from {', '.join(allowed)} (comma-separated)"
                )

        subset("modes", IO_MODES)
        subset("sizes", IO_SIZES)
        subset("layouts", IO_LAYOUTS)
        for name in ("epochs", "batch_size", "threads"):
            if getattr(self, name) < 1:
                raise GluonbenchError(f"{param(name)} must be at least 1 (got {getattr(self, name)})")
        if self.stage not in ("read", "decode"):
            raise GluonbenchError(f"{param('stage')} must be read or decode (got {self.stage!r})")
        if self.page_cache not in ("warm", "cold"):
            raise GluonbenchError(f"{param('page_cache')} must be warm or cold (got {self.page_cache!r})")
        check_seconds(self.timeout_s, param("timeout_s"))
        if self.timeout_s <= 0:
            raise GluonbenchError(f"{param('timeout_s')} must be positive (got {self.timeout_s})")
        check_name(self.name, param("name"))
        check_declared(self)
        for flag, value, want in (
            (arg("mnist_dir"), self.mnist_dir, "the folder of the MNIST files"),
            (arg("src"), self.src, "an image folder (SRC/<class>/*.jpg)"),
        ):
            if value is not None and not Path(value).is_dir():
                what = "is not a folder" if Path(value).exists() else "does not exist"
                raise GluonbenchError(f"{flag} {value} {what}; give {want}")
        if self.small_bytes > self.large_bytes:
            raise GluonbenchError(
                f"{param('small_bytes', '--small')} must not exceed {param('large_bytes', '--large')}"
            )
        if self.file_size > self.small_bytes:
            raise GluonbenchError(
                f"{param('file_size')} must be below {param('small_bytes', '--small')}; the small data set needs several files"
            )
        if self.endpoint_url and not self.s3_uri:
            raise GluonbenchError(f"{param('endpoint_url')} goes with {param('s3_uri')} s3://BUCKET/PREFIX")
        check_int(self.image_size, "image_size", param("image_size"))  # checked with or without a preset
        if self.preset is not None:
            if self.stage != "decode":
                add = example("stage='decode'", "--stage decode")
                raise GluonbenchError(f"{param('preset')} applies to {param('stage')} decode; add {add}")
            from gluonbench.workloads.vision_zoo import Preset

            Preset(self.preset, self.image_size)  # validates both
        if self.endpoint_url:
            from gluonbench.data.s3 import check_endpoint_url

            check_endpoint_url(self.endpoint_url)
        if self.s3_uri and not self.s3_uri.startswith("s3://"):
            raise GluonbenchError(f"{param('s3_uri')} {self.s3_uri!r} must look like s3://BUCKET/PREFIX")
        if self.emulate_step_ms is not None:
            from gluonbench.pipeline.emulate import step_ms

            step_ms(self.emulate_step_ms)
        return self


# -- workload options from flags (sweep and diagnose) --------------------------------------------

SYNTHETIC_KNOBS = ("samples", "record_kb", "read_ms", "cold", "cpu_ms", "width", "depth")
"""The synthetic workload's knobs (``--samples``, ``--record-kb``, ...)."""


def synthetic_options(workload: str, knobs: dict[str, Any]) -> dict[str, Any]:
    """The synthetic knobs that were given (not None); an error if given for another data set."""
    given = {k: v for k, v in knobs.items() if v is not None}
    unknown = sorted(set(given) - set(SYNTHETIC_KNOBS))
    if unknown:
        raise GluonbenchError(f"unknown synthetic option(s) {', '.join(unknown)}; known: {', '.join(SYNTHETIC_KNOBS)}")
    if given and workload != "synthetic":
        flags = ", ".join(param(k) for k in given)
        raise GluonbenchError(
            f"{flags} only apply to {param('workload')} synthetic (got {param('workload')} {workload})"
        )
    return given


def source_options(
    options: dict[str, Any],
    mode: str | None = None,
    uri: str | None = None,
    endpoint_url: str | None = None,
    cache_dir: str | None = None,
) -> dict[str, Any] | None:
    """The ``source`` workload's options (``--source/--uri/...`` over ``options``), or None when no source is named."""
    if mode or uri:
        out = dict(options)
        out["mode"] = mode or options.get("mode", "file")
        out.update({k: v for k, v in (("uri", uri), ("endpoint_url", endpoint_url), ("cache_dir", cache_dir)) if v})
        return out
    if endpoint_url or cache_dir:
        raise GluonbenchError(
            f"{param('endpoint_url')} and {param('cache_dir')} go with {param('mode', '--source')}/{param('uri')}; "
            f"add {param('uri')}"
        )
    return None


def parse_thresholds(items: list[str], base: Any = None) -> Any:
    """``Thresholds`` from ``KEY=VALUE`` texts (``--threshold``) over ``base`` (default: the defaults), each value
    read as its declaration's type (:data:`gluonbench.diagnosis.verdict.THRESHOLDS`)."""
    from gluonbench.diagnosis.verdict import THRESHOLDS, Thresholds

    changes: dict[str, Any] = {}
    for key, raw in parse_overrides(items, "--threshold", "rel_ci=0.03").items():
        if key not in THRESHOLDS:
            raise GluonbenchError(f"--threshold {key}: unknown; known: {', '.join(sorted(THRESHOLDS))}")
        kind = THRESHOLDS[key].kind
        try:
            changes[key] = kind(raw)
        except ValueError:
            what = "whole number" if kind is int else "number"
            raise GluonbenchError(f"--threshold {key}={raw!r} must be a {what}") from None
    try:
        return replace(base or Thresholds(), **changes)  # Thresholds validates itself (out of range, nan, ...)
    except GluonbenchError as exc:
        raise GluonbenchError(f"--{exc}") from None  # "--threshold KEY=VALUE ...": the flag the user typed


# -- diagnose ------------------------------------------------------------------------------------


def _default_thresholds() -> Any:
    from gluonbench.diagnosis.verdict import Thresholds

    return Thresholds()


@dataclass(frozen=True)
class DiagnoseSettings(_MeasuresAPipeline):
    """One diagnosis of a registered workload (``gluonbench diagnose``); :meth:`check` validates it.

    ``ctx`` None picks ``gpu:0`` when MXNet sees a GPU, else the CPU. ``json_path`` also writes the
    whole diagnosis there; ``options`` go to the workload factory (synthetic knobs, a source).
    """

    workload: str = declared("workload")
    data_dir: str | None = declared("data_dir")
    download: bool = declared("download")
    workers: int = knob_default("num_workers")
    batch_size: int | None = None
    """samples per batch; None: the pipeline's own ``batch_size`` with ``pipeline``, else 64 (as the seed)"""
    ctx: str | None = declared("ctx")
    thread_pool: bool = knob_default("thread_pool")
    pin_memory: bool = knob_default("pin_memory")
    """DataLoader(pin_memory=True, pin_device_id=<the context's GPU>); the cached_batch ceiling pinned too"""
    budget_s: float = 60.0
    seed: int = declared("seed")
    options: dict[str, Any] = field(default_factory=dict)
    thresholds: Any = field(default_factory=_default_thresholds)
    """:class:`gluonbench.diagnosis.verdict.Thresholds`"""
    json_path: str | None = declared("json_path")
    name: str | None = declared("name")
    pipeline: str | None = declared("pipeline")
    """a user's pipeline factory (``--pipeline mypkg.train:make``), diagnosed instead of ``workload``"""
    pipeline_options: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """The run folder's suffix with ``--out``: ``diagnose-<data set>-w<workers>``."""
        what = f"{self.workload}-{self.options.get('mode', 'file')}" if self.workload == "source" else self.workload
        if self.pipeline:
            what = pipeline_label(self.pipeline)
        return self.name or f"diagnose-{what}-w{self.workers}"

    def to_dict(self) -> dict[str, Any]:
        """The settings as stored in a run folder, with ``identity`` (what was measured) beside them."""
        d = asdict(self)
        d["thresholds"] = self.thresholds.to_dict()
        d["identity"] = self.identity()
        return d

    def check(self) -> DiagnoseSettings:
        """Raise :class:`GluonbenchError` naming the bad value and the fix; return the checked settings (an unset
        ``batch_size`` is the seed's 64 without a pipeline, the pipeline's own with one: :func:`resolve_batch_size`)."""
        from gluonbench.diagnosis.verdict import Thresholds
        from gluonbench.knobs import check_knobs

        if self.batch_size is None and not self.pipeline:
            return replace(self, batch_size=knob_default("batch_size")).check()
        # the loader's knobs it holds, against their declarations (bounds included); an unset batch size beside a
        # pipeline is the pipeline's own
        check_knobs(self, param, unset=("batch_size",))
        check_budget(self.budget_s, "diagnose")
        check_declared(self)
        if not isinstance(self.thresholds, Thresholds):
            raise GluonbenchError(f"thresholds must be a Thresholds (got {type(self.thresholds).__name__})")
        if not isinstance(self.options, dict):
            raise GluonbenchError(f"options must be a table of workload options (got {self.options!r})")
        if self.json_path:
            from gluonbench.report.store import check_writable_file

            check_writable_file(self.json_path, arg("json_path", "--json"))  # before the measurement, not after it
        self.check_measured()
        return self


# -- tune ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneSettings(_MeasuresAPipeline):
    """One search of the best DataLoader setting for a registered workload (``gluonbench tune``).

    ``workers``/``thread_pool``/``prefetch`` are the current setting (the baseline); ``batch_sizes``
    also searches those batch sizes; ``emulate_step_ms`` swaps the model step for a timed wait (ms per
    batch or a named target such as ``resnet50@v100``). :meth:`check` validates everything before any
    work starts.
    """

    workload: str = declared("workload")
    data_dir: str | None = declared("data_dir")
    download: bool = declared("download")
    workers: int = knob_default("num_workers")
    thread_pool: bool = knob_default("thread_pool")
    prefetch: int | None = knob_default("prefetch")
    pin_memory: bool = knob_default("pin_memory")
    """the current setting pins its batches (DataLoader(pin_memory=True, pin_device_id=<the context's GPU>))"""
    batch_size: int | None = None
    """samples per batch; None: the pipeline's own ``batch_size`` with ``pipeline``, else 64 (as the seed)"""
    batch_sizes: tuple[int, ...] | None = None
    max_workers: int | None = declared("max_workers")
    ctx: str | None = declared("ctx")
    emulate_step_ms: float | str | None = None
    budget_s: float = 60.0
    seed: int = declared("seed")
    options: dict[str, Any] = field(default_factory=dict)
    json_path: str | None = declared("json_path")
    toml_path: str | None = None
    pipeline: str | None = declared("pipeline")
    """a user's pipeline factory (``--pipeline mypkg.train:make``), tuned instead of ``workload``"""
    pipeline_options: dict[str, Any] = field(default_factory=dict)

    def label(self, ctx: str) -> str:
        """The run folder's suffix with ``--out``: ``tune-<data set or pipeline>-<ctx>`` (``ctx``: ``cpu``, ``gpu:0``)."""
        what = pipeline_label(self.pipeline) if self.pipeline else self.workload
        return f"tune-{what}-{ctx.replace(':', '')}"

    def to_dict(self) -> dict[str, Any]:
        """The settings as stored in a run folder, with ``identity`` (what was tuned) beside them."""
        return {**asdict(self), "identity": self.identity()}

    def check(self) -> TuneSettings:
        """Raise :class:`GluonbenchError` naming the bad value and the fix; return the checked settings (an unset
        ``batch_size`` is the seed's 64 without a pipeline, the pipeline's own with one: :func:`resolve_batch_size`)."""
        from gluonbench.pipeline.emulate import step_ms

        if self.batch_size is None and not self.pipeline:
            return replace(self, batch_size=knob_default("batch_size")).check()
        check_budget(self.budget_s, "tune")
        from gluonbench.knobs import check_knobs

        # the loader's knobs it holds, against their declarations; an unset batch size is the pipeline's own
        check_knobs(self, param, unset=("batch_size",))
        check_declared(self)
        if self.batch_sizes is not None and (not self.batch_sizes or min(self.batch_sizes) < 1):
            raise GluonbenchError(f"{param('batch_sizes')} must be at least 1 each (got {self.batch_sizes})")
        if self.emulate_step_ms is not None:
            step_ms(self.emulate_step_ms)
        for flag, path in ((arg("json_path", "--json"), self.json_path), (arg("toml_path", "--toml"), self.toml_path)):
            if path:
                from gluonbench.report.store import check_writable_file

                check_writable_file(path, flag)  # before the search, not after it
        self.check_measured()
        return self
