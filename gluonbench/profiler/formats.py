"""On-disk formats other tools read.

System metrics in SageMaker Debugger's layout::

    profiler-output/system/incremental/<YYYYMMDDHH>/<epoch-seconds-of-the-minute>.<node>.json
    profiler-output/system/training_job_end.ts

one JSON object per line (``Type``, ``Name``, ``Dimension``, ``Value``, ``NodeId``, ``Timestamp``).
Framework events as Chrome trace JSON (``X`` complete events, microseconds since the epoch)
under ``profiler-output/framework/``, written as an open JSON array (``[`` then one event and a
comma per line): the trace viewers accept it unterminated, so a killed job keeps every line
flushed. Readers here tolerate torn last lines in both.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.files import parse_json, read_text
from gluonbench.monitor.node import MetricRow

PROFILE_FILE_MAX_BYTES = 1 << 30
"""One file of a profile folder (a system-metrics minute or a framework trace); a larger one is refused unread."""

log = logging.getLogger(__name__)

SYSTEM_DIR = Path("system") / "incremental"
JOB_END = Path("system") / "training_job_end.ts"
FRAMEWORK_DIR = Path("framework") / "pevents"
MXNET_DIR = Path("framework") / "mxnet"


def _append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def system_file(root: Path, timestamp: float, node_id: str) -> Path:
    """The incremental file a sample taken at ``timestamp`` belongs to (one per minute)."""
    minute = int(timestamp // 60 * 60)
    hour = datetime.fromtimestamp(minute, UTC).strftime("%Y%m%d%H")
    return root / SYSTEM_DIR / hour / f"{minute}.{node_id}.json"


class SystemWriter:
    """Buffer rows and append them to the per-minute files at least every ``flush_s`` seconds."""

    def __init__(self, root: Path, node_id: str = "algo-1", flush_s: float = 10.0) -> None:
        self.root = Path(root)
        self.node_id = node_id
        self.flush_s = flush_s
        self._buf: list[MetricRow] = []
        self._last_flush = time.monotonic()
        self.rows_written = 0

    def add(self, rows: list[MetricRow]) -> None:
        self._buf.extend(rows)
        if time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._buf:
            return
        rows, self._buf = self._buf, []
        by_file: dict[Path, list[str]] = defaultdict(list)
        for r in rows:
            line = {
                "Type": r.type,
                "Name": r.name,
                "Dimension": r.dimension,
                "Value": r.value,
                "NodeId": self.node_id,
                "Timestamp": round(r.timestamp, 6),
            }
            by_file[system_file(self.root, r.timestamp, self.node_id)].append(json.dumps(line))
        for path, lines in by_file.items():
            _append(path, ("\n".join(lines) + "\n").encode())
        self.rows_written += len(rows)

    def close(self, end_timestamp: float | None = None) -> None:
        """Flush and write the end-of-job marker (epoch seconds, as Debugger writes it)."""
        self.flush()
        path = self.root / JOB_END
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{end_timestamp if end_timestamp is not None else time.time():.6f}\n")


def read_system(root: Path) -> list[dict[str, Any]]:
    """Every system row under ``root`` (a ``profiler-output`` folder), sorted by time."""
    rows = []
    # <YYYYMMDDHH>/<minute>.<node>.json; early Debugger releases wrote the files without the hour folder
    for path in sorted((Path(root) / SYSTEM_DIR).rglob("*.json")):
        text = read_text(path, "profile file", PROFILE_FILE_MAX_BYTES, "remove it or profile again", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                r = parse_json(line, "", "")
                if not math.isfinite(float(r["Value"])) or not math.isfinite(float(r["Timestamp"])):
                    raise ValueError("not finite")
                rows.append(
                    {
                        "Type": r.get("Type", ""),
                        "Name": r.get("Name") or "",
                        "Dimension": r.get("Dimension") or "",
                        "Value": float(r["Value"]),
                        "NodeId": r.get("NodeId", "algo-1"),
                        "Timestamp": float(r["Timestamp"]),
                    }
                )
            except (ValueError, KeyError, TypeError, AttributeError, GluonbenchError):
                log.warning("%s line %d is incomplete or corrupt; skipped", path, n)
    rows.sort(key=lambda r: r["Timestamp"])
    return rows


def read_job_end(root: Path) -> float | None:
    path = Path(root) / JOB_END
    if not path.exists():
        return None
    try:
        end = float(read_text(path, "profile file", 4096, "remove it or profile again", errors="replace").split()[0])
    except (ValueError, IndexError):
        return None
    return end if math.isfinite(end) else None


def parse_trace(text: str) -> list[dict[str, Any]]:
    """Events of a Chrome trace: ``{"traceEvents": [...]}``, a closed or unterminated array."""
    text = text.strip()
    if not text:
        return []
    try:
        data = json.loads(text)
        return data.get("traceEvents", []) if isinstance(data, dict) else list(data)
    except json.JSONDecodeError:
        pass
    events = []
    for line in text.lstrip("[").splitlines():
        line = line.strip().rstrip(",").rstrip("]").rstrip(",")
        if not line:
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    return events


def _epoch_offset_us(events: list[dict[str, Any]]) -> float:
    """Debugger's timelines hold ``ts`` relative to ``start_time_since_epoch_in_micros`` (a metadata
    event's argument); gluonbench's and MXNet's hold microseconds since the epoch (offset 0)."""
    for e in events:
        if e.get("ph") == "M":
            start = (e.get("args") or {}).get("start_time_since_epoch_in_micros")
            if start is not None:
                return float(start)
    return 0.0


def read_framework(root: Path) -> list[dict[str, Any]]:
    """Every trace event under ``root/framework`` (gluonbench's, Debugger's and MXNet's dumps),
    with ``ts`` in microseconds since the epoch."""
    events = []
    for path in sorted((Path(root) / "framework").rglob("*.json")):
        try:
            text = read_text(
                path, "profile file", PROFILE_FILE_MAX_BYTES, "remove it or profile again", errors="replace"
            )
            found = [e for e in parse_trace(text) if isinstance(e, dict)]
        except (OSError, RecursionError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            continue
        offset = _epoch_offset_us(found)
        for e in found:
            if offset and "ts" in e:
                try:
                    e["ts"] = float(e["ts"]) + offset
                except (TypeError, ValueError):
                    continue
            events.append(e)
    return events


class TraceWriter:
    """Append Chrome trace events to one file as an open JSON array.

    Each :meth:`write` hands the lines to the kernel (no fsync: a killed process keeps them; only
    a power loss could lose the last seconds), so the training process pays no disk latency."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, b"[\n")

    def write(self, events: list[dict[str, Any]]) -> None:
        if events:
            self.write_lines([json.dumps(e, separators=(",", ":")) for e in events])

    def write_lines(self, lines: list[str]) -> None:
        """Events already serialised, one JSON object per string."""
        if lines:
            os.write(self._fd, (",\n".join(lines) + ",\n").encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
