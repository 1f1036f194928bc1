"""The results store: a folder per sweep with ``runs.jsonl``, one JSON line per finished run.

A line is written with one ``write`` of the whole line, flushed and fsynced as
soon as the run ends, so a crash or Ctrl-C loses nothing that had finished; a
torn last line (power loss mid-write) is skipped with a warning on reading.
``sweep.json`` holds the settings, so ``--resume`` can finish the sweep; every
export is a pure function of ``runs.jsonl`` and is written atomically.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError

log = logging.getLogger(__name__)

RUNS = "runs.jsonl"
SETTINGS = "sweep.json"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); a results file gets the mode an ordinary one would
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def json_safe(value: Any) -> Any:
    """NaN and inf are not JSON: store them as null (recursively through dicts, lists and tuples)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


_clean = json_safe  # the former private name, used in this module


def dumps(record: Any) -> str:
    data = record.to_dict() if hasattr(record, "to_dict") else record
    return json.dumps(_clean(data), default=_json_default, sort_keys=True)


def new_run_dir(out: str | Path, name: str) -> Path:
    """``OUT/<UTC timestamp>-<name>``, created; unique even within one second."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GluonbenchError(f"cannot create --out {out}: {exc.strerror}; choose a writable folder") from exc
    for n in range(100):
        path = out / (f"{stamp}-{name}" if n == 0 else f"{stamp}-{name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise GluonbenchError(f"cannot create a fresh run folder under {out}")


class RunStore:
    """One sweep's folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def runs_path(self) -> Path:
        return self.path / RUNS

    def write_settings(self, settings: dict[str, Any]) -> None:
        atomic_write_text(self.path / SETTINGS, json.dumps(_clean(settings), indent=2, sort_keys=True))

    def read_settings(self) -> dict[str, Any]:
        path = self.path / SETTINGS
        if not path.is_file():
            raise GluonbenchError(f"{self.path} has no {SETTINGS}; is it a gluonbench run folder?")
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise GluonbenchError(f"{path} is not valid JSON ({exc.msg}); restore it or start a new sweep") from exc

    def append(self, record: Any) -> None:
        line = (dumps(record) + "\n").encode("utf-8")
        fd = os.open(self.runs_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Every complete line of ``runs.jsonl``; a torn or corrupt line is skipped with a warning."""
        if not self.runs_path.is_file():
            if not self.path.is_dir():
                raise GluonbenchError(f"{self.path} does not exist; pass a run folder made by gluonbench sweep")
            return []
        out = []
        with open(self.runs_path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    log.warning("%s line %d is incomplete or corrupt; skipped", self.runs_path, n)
        return out
