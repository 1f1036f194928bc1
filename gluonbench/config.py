"""Sweep settings: frozen dataclasses, loaded from TOML configs with ``--set key=value`` overrides."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gluonbench.engine.run import RunSpec
from gluonbench.errors import GluonbenchError
from gluonbench.ranges import parse_int_list


@dataclass(frozen=True)
class SweepSettings:
    """One sweep: every worker count in ``workers``, ``repeat`` times each."""

    workload: str = "mnist"
    data_dir: str | None = None
    workers: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8)
    eval_workers: int | None = None
    batch_size: int = 64
    epochs: int = 1
    max_batches: int | None = None
    ctx: str = "cpu"
    thread_pool: bool = False
    repeat: int = 1
    seed: int = 1
    timeout_s: float = 3600.0
    download: bool = True
    name: str | None = None
    diagnose: bool = False
    """diagnose the bottleneck after each run (``gluonbench sweep --diagnose``)"""
    diagnose_budget_s: float = 30.0
    options: dict[str, Any] = field(default_factory=dict)
    """Passed to the workload factory of every run (``RunSpec.options``)."""
    prefetch: int | None = None
    """DataLoader(prefetch=...) of every run (None: MXNet's 2 x workers; ``gluonbench tune`` writes it)"""
    emulate_step_ms: float | str | None = None
    """swap the model step for a timed wait of this many ms per batch, or a named target such as
    ``resnet50@v100`` (``--emulate-step-ms``; see :mod:`gluonbench.tune.emulate`)"""

    def specs(self) -> list[RunSpec]:
        """All runs, repeats interleaved (0, 2, 4, 0, 2, 4, ...) so drift spreads evenly."""
        shared = {
            f.name: getattr(self, f.name)
            for f in fields(RunSpec)
            if f.name not in ("workers", "repeat") and hasattr(self, f.name)
        }
        return [
            RunSpec(**dict(shared, options=dict(self.options)), workers=w, repeat=r)
            for r in range(self.repeat)
            for w in self.workers
        ]

    def label(self) -> str:
        what = f"{self.workload}-{self.options.get('mode', 'file')}" if self.workload == "source" else self.workload
        return self.name or f"sweep-{what}-{self.ctx.replace(':', '')}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["workers"] = list(self.workers)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSettings:
        return coerce(cls(), data, source="settings")

    def check(self) -> SweepSettings:
        for name in ("batch_size", "epochs", "repeat"):
            if getattr(self, name) < 1:
                raise GluonbenchError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if self.max_batches is not None and self.max_batches < 1:
            raise GluonbenchError(f"--max-batches must be at least 1 (got {self.max_batches})")
        if self.timeout_s <= 0:
            raise GluonbenchError(f"--timeout must be positive (got {self.timeout_s})")
        if self.diagnose and not self.diagnose_budget_s >= 2:
            raise GluonbenchError(f"--diagnose-budget must be at least 2 seconds (got {self.diagnose_budget_s:g})")
        if not isinstance(self.options, dict):
            raise GluonbenchError(f"options must be a table of workload options (got {self.options!r})")
        if not self.workers:
            raise GluonbenchError("--workers names no worker count; e.g. --workers 0..8")
        if self.prefetch is not None and self.prefetch < 0:
            raise GluonbenchError(f"prefetch must be 0 or more (got {self.prefetch})")
        return self


def _flag(name: str, source: str) -> str:
    return f"--{name.replace('_', '-')}" if source == "command line" else f"{source}: {name}"


def _convert(name: str, raw: Any, current: Any, source: str) -> Any:
    if name == "workers":
        if isinstance(raw, list):
            return tuple(int(v) for v in raw)
        return tuple(parse_int_list(str(raw), what="--workers" if source == "command line" else f"{source}: workers"))
    if isinstance(current, bool) or name in ("thread_pool", "download", "diagnose"):
        if isinstance(raw, bool):
            return raw
        text = str(raw).lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise GluonbenchError(f"{source}: {name} must be true or false (got {raw!r})")
    if name == "emulate_step_ms":
        if raw is None or str(raw).lower() in ("none", ""):
            return None
        from gluonbench.tune.emulate import step_ms

        return step_ms(raw, what=_flag(name, source))
    if name in ("batch_size", "epochs", "repeat", "seed", "max_batches", "eval_workers", "prefetch"):
        if raw is None or str(raw).lower() in ("none", ""):
            return None
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise GluonbenchError(f"{_flag(name, source)} must be a whole number (got {raw!r})") from None
    if name in ("timeout_s", "diagnose_budget_s"):
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise GluonbenchError(f"{source}: {name} must be a number of seconds (got {raw!r})") from None
    return raw


def coerce(base: SweepSettings, values: dict[str, Any], source: str) -> SweepSettings:
    """``base`` with ``values`` applied; unknown keys and bad values raise :class:`GluonbenchError`."""
    known = {f.name: f for f in fields(SweepSettings)}
    changes = {}
    for key, raw in values.items():
        name = key.replace("-", "_")
        if name not in known:
            raise GluonbenchError(f"{source}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        changes[name] = _convert(name, raw, getattr(base, name), source)
    return replace(base, **changes)


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a config file; settings live at the top level or under ``[sweep]``."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GluonbenchError(f"--config {path} does not exist; see configs/ for examples") from None
    except tomllib.TOMLDecodeError as exc:
        raise GluonbenchError(f"--config {path} is not valid TOML ({exc}); fix the file") from None
    return data.get("sweep", data)


def parse_overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GluonbenchError(f"--set {item!r}: write KEY=VALUE, e.g. --set batch_size=128")
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
    epochs: int = 2
    batch_size: int = 64
    threads: int = 4
    stage: str = "read"
    page_cache: str = "warm"
    drop_caches: bool = False
    shuffle: bool = True
    seed: int = 0
    work_dir: str | None = None
    mnist_dir: str | None = None
    timeout_s: float = 600.0
    name: str | None = None

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
                    f"--{name} {','.join(values)!r}: choose from {', '.join(allowed)} (comma-separated)"
                )

        subset("modes", IO_MODES)
        subset("sizes", IO_SIZES)
        subset("layouts", IO_LAYOUTS)
        for name in ("epochs", "batch_size", "threads"):
            if getattr(self, name) < 1:
                raise GluonbenchError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if self.stage not in ("read", "decode"):
            raise GluonbenchError(f"--stage must be read or decode (got {self.stage!r})")
        if self.page_cache not in ("warm", "cold"):
            raise GluonbenchError(f"--page-cache must be warm or cold (got {self.page_cache!r})")
        if self.small_bytes > self.large_bytes:
            raise GluonbenchError("--small must not exceed --large")
        if self.file_size > self.small_bytes:
            raise GluonbenchError("--file-size must be below --small; the small data set needs several files")
        if self.endpoint_url and not self.s3_uri:
            raise GluonbenchError("--endpoint-url goes with --s3-uri s3://BUCKET/PREFIX")
        if self.s3_uri and not self.s3_uri.startswith("s3://"):
            raise GluonbenchError(f"--s3-uri {self.s3_uri!r} must look like s3://BUCKET/PREFIX")
        return self
