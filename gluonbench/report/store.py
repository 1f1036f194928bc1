"""The results store: a folder per sweep with ``runs.jsonl``, one JSON line per finished run.

A line is written with one ``write`` of the whole line, flushed and fsynced as
soon as the run ends, so a crash or Ctrl-C loses nothing that had finished. A
torn last line (a writer killed mid-write, power loss) is set aside in
``runs.jsonl.torn`` before the next append, so a new record never lands on it.
``sweep.json`` holds the settings, so ``--resume`` can finish the sweep; every
export is a pure function of ``runs.jsonl`` and is written atomically.

A sweep locks its folder (``fcntl.flock`` on ``.lock``), so two ``--resume`` of
one folder cannot run the same runs twice, and reserves disk space for its
records up front (``fallocate`` with ``FALLOC_FL_KEEP_SIZE``): a disk that fills
during the sweep cannot cost the record of a run that has been measured. Any
write that fails for lack of space says ``disk full at PATH``.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.files import (
    atomic_write_text,
    open_nofollow,
    parse_json,
    refuse_non_regular,
    require_regular,
    write_error,
)
from gluonbench.names import arg, param
from gluonbench.report import versions
from gluonbench.validate import check_path, redact

log = logging.getLogger(__name__)

RUNS = "runs.jsonl"
SETTINGS = "sweep.json"
TORN = "runs.jsonl.torn"
LOCK = ".lock"
RESERVE_PER_RECORD = 64 * 1024
"""Bytes of disk reserved per run still to record (a record is 1-30 KB, diagnosis included)."""

_FALLOC_FL_KEEP_SIZE = 1


class NotSavedError(GluonbenchError):
    """A measurement finished but its files could not be written (disk full, read-only); ``result`` holds it.

    The message names the result itself, so the one line the CLI prints still tells what was measured.
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


MIN_FREE_BYTES = 4 << 20
"""Free space a command's result files need (a diagnosis or tune record is 10-100 KB; exports a few more)."""


def check_free_space(folder: str | Path, what: str, need: int = MIN_FREE_BYTES) -> None:
    """Refuse to start measuring when ``folder`` (or its nearest existing parent) has less than ``need`` bytes free."""
    probe = Path(folder).absolute()
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except OSError:
        return  # the write itself reports what is wrong
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise GluonbenchError(
            f"disk full at {probe}: {free // 1024} KiB free, {what} needs about {need // 1024} KiB for its results; "
            "free some space or choose another path (checked before measuring)"
        )


def check_writable_file(path: str | Path, what: str) -> Path:
    """Fail now, before any measurement, if ``path`` cannot be written as a file (folder, read-only, missing)."""
    path = Path(path)
    if path.is_dir():
        raise GluonbenchError(f"{what} {path} is a folder; give a file name, e.g. {path / 'diagnosis.json'}")
    check_path(path, what)
    refuse_non_regular(path, what)
    parent = path.resolve().parent
    if not parent.is_dir():
        raise GluonbenchError(f"{what} {path}: folder {parent} does not exist; create it or choose another")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", dir=parent)
    except OSError as exc:
        raise GluonbenchError(f"{what} {path}: {write_error(parent, exc)}") from None
    os.close(fd)
    os.unlink(tmp)
    check_free_space(parent, what)
    return path


RECORD_FILES = ("runs.jsonl", "sweep.json")
"""the files of a run folder that hold its records: never an output's target"""


def refuse_overwriting_inputs(outputs: dict[str, str | Path | None], inputs: list[str | Path]) -> None:
    """Refuse, before any work, an output that is one of the command's inputs (a baseline, a run folder's records, a
    compared file), lies inside an input run folder, is any run folder's records file, or is another of its outputs:
    writing it would destroy what the command reads, another run's records or its other output. ``outputs``:
    flag -> path (None: not given)."""

    def same(a: Path, b: Path) -> bool:
        try:
            return a.exists() and b.exists() and os.path.samefile(a, b)
        except OSError:
            return False

    named: dict[Path, str] = {}
    for what, out in outputs.items():
        if out is None:
            continue
        path = Path(out)
        target = Path(os.path.abspath(path))
        if target in named:  # the second write would replace the first
            raise GluonbenchError(f"{what} {path} is also {named[target]}: give each output its own file")
        named[target] = what
        if path.name in RECORD_FILES:
            raise GluonbenchError(
                f"{what} {path} would replace a run folder's records ({path.name}); give another file name"
            )
        for src in inputs:
            source = Path(os.path.abspath(src))
            if target == source or same(target, source):
                raise GluonbenchError(
                    f"{what} {path} is also an input of this command ({src}); writing it would destroy that input: "
                    "give another file name"
                )
            if source.is_dir() and (source == target.parent or source in target.parents):
                raise GluonbenchError(
                    f"{what} {path} lies inside the run folder {src}, an input of this command; write it somewhere else"
                )


def check_append_file(path: str | Path, what: str) -> Path:
    """Fail now, before any work, if ``path`` cannot be appended to as a plain file (``$GITHUB_STEP_SUMMARY``): a
    folder, a symlink, a FIFO (opening one with no reader blocks), a device, a missing folder or no permission."""
    path = Path(path)
    refuse_non_regular(path, what)
    parent = Path(os.path.abspath(path)).parent
    if not parent.is_dir():
        raise GluonbenchError(f"{what} {path}: folder {parent} does not exist; create it or unset {what}")
    if path.exists() and not os.access(path, os.W_OK):
        raise GluonbenchError(f"{what} {path} is not writable; fix its permissions or unset {what}")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise GluonbenchError(f"{what} {path}: folder {parent} is not writable; fix it or unset {what}")
    check_free_space(parent, f"{what} {path}")  # a full disk found now, not after the whole budget was measured
    return path


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
    # a URL's user:password@ (an endpoint, a command line) is never stored
    return json.dumps(redact(_clean(data)), default=_json_default, sort_keys=True)


def new_run_dir(out: str | Path, name: str) -> Path:
    """``OUT/<UTC timestamp>-<name>``, created; unique even within one second."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = check_path(out, arg("out"))
    check_path(out / f"{stamp}-{name}-99", "the run folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GluonbenchError(f"cannot create {param('out')} {out}: {exc.strerror}; choose a writable folder") from exc
    if not out.is_dir():
        raise GluonbenchError(f"{param('out')} {out} is not a folder; choose a folder for the run folders")
    for n in range(100):
        path = out / (f"{stamp}-{name}" if n == 0 else f"{stamp}-{name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise GluonbenchError(
                f"cannot create a run folder in {param('out')} {out}: {write_error(path, exc)}"
            ) from None
    raise GluonbenchError(f"cannot create a fresh run folder under {out}")


SETTINGS_MAX_BYTES = 4 << 20
"""``sweep.json`` holds one command's settings (a few KB)."""
RUNS_MAX_BYTES = 256 << 20
"""``runs.jsonl``: 1-30 KB a record, so this is thousands of runs; a larger file is refused before it is read."""
RECORD_MAX_BYTES = 8 << 20
"""One line of ``runs.jsonl`` (a diagnosis with its rounds is about 100 KB)."""


def _read_at_most(f: Any, max_bytes: int, path: Path, fix: str) -> bytes:
    """The content of the open file ``f``, refused (one line) when it is over ``max_bytes``, from its size first."""
    size = os.fstat(f.fileno()).st_size
    if size > max_bytes:
        raise GluonbenchError(f"{path} is {size >> 20} MiB, over the {max_bytes >> 20} MiB such a file can be; {fix}")
    data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise GluonbenchError(f"{path} grew past {max_bytes >> 20} MiB while it was read; {fix}")
    return data


class RunStore:
    """One sweep's folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def runs_path(self) -> Path:
        return self.path / RUNS

    def has(self, name: str = RUNS) -> bool:
        """Whether the folder holds the records file ``name`` (``runs.jsonl``, ``sweep.json``) as a regular file;
        one line when something else is there (a FIFO with no writer would block the read, a device never ends)."""
        path = self.path / name
        if not os.path.lexists(path):
            return False
        require_regular(path, "", "restore it from a copy or re-run the command that made the folder")
        return True

    def write_settings(self, settings: dict[str, Any]) -> None:
        doc = versions.stamp("settings", settings)
        atomic_write_text(self.path / SETTINGS, json.dumps(redact(_clean(doc)), indent=2, sort_keys=True))

    def read_settings(self) -> dict[str, Any]:
        path = self.path / SETTINGS
        if not self.has(SETTINGS):
            raise GluonbenchError(f"{self.path} has no {SETTINGS}; is it a gluonbench run folder?")
        fix = "restore it or start a new sweep"
        try:
            with os.fdopen(open_nofollow(path, os.O_RDONLY), "rb") as f:
                raw = _read_at_most(f, SETTINGS_MAX_BYTES, path, fix)
            data = parse_json(raw.decode("utf-8"), str(path), fix)
        except UnicodeDecodeError:
            raise GluonbenchError(f"{path} is not UTF-8 text; {fix}") from None
        except OSError as exc:
            raise GluonbenchError(f"cannot read {path}: {exc.strerror}") from None
        if not isinstance(data, dict) or not isinstance(data.get("settings", {}), dict):
            raise GluonbenchError(f"{path} is not a gluonbench {SETTINGS} (no settings table); restore it")
        return versions.upgrade("settings", data, str(path))

    def refuse_links(self) -> None:
        """Refuse a run folder where a file or folder gluonbench writes is a symbolic link (``--resume``
        would write through it, outside the folder)."""
        for name in (LOCK, RUNS, TORN, SETTINGS, "logs", "profiles", *_EXPORT_NAMES):
            candidate = self.path / name
            if candidate.is_symlink():
                raise GluonbenchError(
                    f"{candidate} is a symbolic link; gluonbench does not write through links in a run folder. "
                    "Remove it (or start a new run folder)"
                )

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold this folder for one sweep; another process gets a one-line error instead of running twice."""
        path = self.path / LOCK
        try:
            self.refuse_links()
            fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(path, exc) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._in_use(fd) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _in_use(self, fd: int) -> GluonbenchError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        return GluonbenchError(
            f"{self.path} is in use by another gluonbench sweep (pid {holder}); wait for it to finish, then --resume"
        )

    def check_unlocked(self) -> None:
        """Fail with :meth:`lock`'s line when another sweep holds this folder now; takes and keeps nothing (a
        check before a command's first line; :meth:`lock` decides)."""
        try:
            fd = open_nofollow(self.path / LOCK, os.O_RDONLY)
        except OSError:
            return  # no lock file (never locked), or one :meth:`lock` reports itself
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._in_use(fd) from None
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def reserve(self, records: int) -> None:
        """Reserve disk space for ``records`` more lines of ``runs.jsonl`` (size unchanged).

        Fails with ``disk full at PATH`` now, before anything is measured, when the
        space is not there. File systems without ``fallocate`` are used as they are.
        """
        if records <= 0:
            return
        try:
            fd = open_nofollow(self.runs_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(self.runs_path, exc) from None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fallocate = libc.fallocate
            fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
            size = os.fstat(fd).st_size
            if fallocate(fd, _FALLOC_FL_KEEP_SIZE, size, records * RESERVE_PER_RECORD) != 0:
                err = ctypes.get_errno()
                if err in (errno.ENOSPC, errno.EDQUOT):
                    need = records * RESERVE_PER_RECORD // 1024
                    raise GluonbenchError(
                        f"disk full at {self.runs_path}: the records of {records} run(s) need about {need} KiB "
                        f"free; free some space or choose another {param('out')}"
                    )
                log.debug("cannot reserve space for %s: %s", self.runs_path, os.strerror(err))
        except AttributeError:  # pragma: no cover - a libc without fallocate
            pass
        finally:
            os.close(fd)

    def recover_tail(self) -> int:
        """Set a torn last line aside in ``runs.jsonl.torn`` and cut it off; return the bytes set aside."""
        try:
            fd = open_nofollow(self.runs_path, os.O_RDWR)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise write_error(self.runs_path, exc) from None
        try:
            size = os.fstat(fd).st_size
            if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
                return 0
            data = os.pread(fd, size, 0)
            keep = data.rfind(b"\n") + 1
            torn = data[keep:]
            aside = self.path / TORN
            try:
                with os.fdopen(open_nofollow(aside, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as f:
                    f.write(torn + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.ftruncate(fd, keep)
                os.fsync(fd)
            except OSError as exc:
                raise write_error(aside, exc) from None
        finally:
            os.close(fd)
        log.warning(
            "%s ended in a torn line (%d bytes, a writer killed mid-write); set aside in %s, the %s complete "
            "line(s) before it are kept",
            self.runs_path,
            len(torn),
            aside,
            data[:keep].count(b"\n"),
        )
        return len(torn)

    def append(self, record: Any) -> None:
        """Append one record as one line, fsynced; a failed write leaves the file as it was."""
        data = record.to_dict() if hasattr(record, "to_dict") else record
        line = (dumps(versions.stamp("record", data)) + "\n").encode("utf-8")
        self.recover_tail()
        try:
            fd = open_nofollow(self.runs_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(self.runs_path, exc) from None
        size = os.fstat(fd).st_size
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)  # no torn line for the next reader
            except OSError:
                pass
            raise write_error(self.runs_path, exc, kept=f"the records already in {RUNS} are kept") from None
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Every valid record of ``runs.jsonl``.

        A torn or corrupt line, or one that is not a gluonbench record (not a JSON
        object, a run without ``spec.workers``, a figure that is not a number), is
        skipped; one warning names them all.
        """
        out, skipped = self._read()
        if skipped:
            stat = os.stat(self.runs_path)
            seen = (str(self.runs_path.resolve()), stat.st_size, stat.st_mtime_ns)
            if seen not in _WARNED:
                _WARNED.add(seen)
                shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
                log.warning(
                    "%s: skipped %d line(s) that are incomplete or corrupt (not gluonbench records): line %s",
                    self.runs_path,
                    len(skipped),
                    shown,
                )
        return out

    def _read(self) -> tuple[list[dict[str, Any]], list[str]]:
        if not self.has():
            if not self.path.is_dir():
                raise GluonbenchError(f"{self.path} does not exist; pass a run folder made by gluonbench sweep")
            return [], []
        out = []
        skipped: list[str] = []
        try:
            with os.fdopen(open_nofollow(self.runs_path, os.O_RDONLY), "rb") as f:
                lines = _read_at_most(f, RUNS_MAX_BYTES, self.runs_path, "restore it or re-run the sweep").split(b"\n")
        except OSError as exc:
            raise GluonbenchError(f"cannot read {self.runs_path}: {exc.strerror}") from None
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            if len(raw) > RECORD_MAX_BYTES:
                skipped.append(f"{n} (over {RECORD_MAX_BYTES >> 20} MiB)")
                continue
            try:
                # a figure that is not finite is the record's own fault, which the commands name (compare: "bad
                # record"); what is refused here is what no record holds (thousands of digits, deep nesting)
                record = parse_json(raw.decode("utf-8"), "", "", finite=False)
            except UnicodeDecodeError:
                skipped.append(f"{n} (not UTF-8)")
                continue
            except GluonbenchError as exc:
                why = str(exc).removeprefix(": ").removeprefix(" is ").removesuffix("; ")
                skipped.append(f"{n} ({'not JSON' if 'readable JSON' in why else why[:60]})")
                continue
            why = invalid_record(record)
            if why:
                skipped.append(f"{n} ({why})")
                continue
            # an older record is upgraded; one from a newer gluonbench is refused, not half read
            try:
                out.append(versions.upgrade("record", record, f"{self.runs_path} line {n}"))
            except versions.NewerFormatError:
                raise
            except GluonbenchError:
                skipped.append(f"{n} ({versions.KEY} is not a whole number)")
        return out, skipped

    def require_records(self) -> list[dict[str, Any]]:
        """:meth:`records`, refusing a file with none (so a report never overwrites good summaries with nothing)."""
        if not self.has():
            raise GluonbenchError(f"{self.path} has no {RUNS}; pass a run folder made by gluonbench sweep")
        records, skipped = self._read()
        if not records:
            bad = f" ({len(skipped)} line(s), none a valid record)" if skipped else " (it is empty)"
            raise GluonbenchError(
                f"{self.runs_path} holds no valid record{bad}; nothing rebuilt, the existing summaries are left as "
                f"they were (restore {RUNS} or re-run the sweep)"
            )
        return self.records()


_EXPORT_NAMES = ("summary.csv", "summary.md", "summary.json", "summary.png", "report.html")
"""Exports commonly rebuilt in a run folder (each is also refused one by one by the atomic write)."""

_WARNED: set[tuple[str, int, int]] = set()
"""runs.jsonl versions already warned about (a report reads the file more than once)."""

_NUMBERS = ("train_s", "eval_s", "accuracy", "samples_per_s", "first_batch_s", "loader_start_s", "wall_s")
_TABLES = ("steady", "system", "extra", "env", "source")


def invalid_record(record: Any) -> str | None:
    """Why ``record`` is not a usable line of ``runs.jsonl``, or None."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    kind = record.get("kind", "run")
    if not isinstance(kind, str):
        return "kind is not a string"
    if kind != "run":
        return None
    spec = record.get("spec")
    if not isinstance(spec, dict):
        return "no spec object"
    if "workers" not in spec:
        return "no spec.workers"
    for key in ("workers", "repeat"):
        value = spec.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"spec.{key} is not a whole number"
    if not isinstance(record.get("status", "ok"), str):
        return "status is not a string"
    for key in _NUMBERS:
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"{key} is not a number"
    for key in _TABLES:
        value = record.get(key)
        if value is not None and not isinstance(value, dict):
            return f"{key} is not an object"
    for key, names in (("steady", ("samples_per_s", "wait_frac")), ("system", ("peak_mem_bytes", "cpu_util_pct"))):
        for name in names:
            value = (record.get(key) or {}).get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                return f"{key}.{name} is not a number"
    return None
