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
        return self.name or f"sweep-{self.workload}-{self.ctx.replace(':', '')}"

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
    if name in ("batch_size", "epochs", "repeat", "seed", "max_batches", "eval_workers"):
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
