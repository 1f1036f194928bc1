"""Reading a file a user hands gluonbench: a regular file, of bounded size, parsed with bounds, never blocking.

Every reader of a file kind (a baseline, a run folder's records, a config, a profile folder, the doctor's cache)
goes through here, so that each refuses the same things the same way, in one line naming the file, the field and
the fix, before it reads a byte it does not need:

* something other than a regular file where a file is expected (a FIFO with no writer would block ``open`` or
  ``read`` for ever, a device such as ``/dev/zero`` never ends, a socket cannot be read): checked with ``os.stat``
  before opening, then again on the open descriptor (opened with ``O_NONBLOCK``, so a FIFO swapped in between
  cannot block it);
* a file over the kind's size bound, refused from its size before it is read (150 MB of padding in a baseline
  is not a baseline), and never more than the bound read (a file that grows while it is read);
* in JSON: a number that is not finite (``1e999`` parses as infinity, ``NaN``), an integer of thousands of
  digits, nesting deeper than a record ever is.

The typed checks of fields (:func:`whole`, :func:`number`, :func:`text`, :func:`table`) name the field by its
dotted path in the file (``total.rel``), so the one line says which value to fix.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

KiB = 1 << 10
MiB = 1 << 20

CACHE_ENV = "GLUONBENCH_CACHE"
"""The folder of gluonbench's caches (the doctor's ceilings, synthetic data sets, MXNet's compiled operators)."""


MXNET_CACHE_ENV = "GLUONBENCH_MXNET_CACHE"
"""The file of MXNet's compiled operator functions (:mod:`gluonbench.mxops`) in place of the cache folder's; ``off``:
none."""


def cache_folder() -> Path:
    """``$GLUONBENCH_CACHE``, else ``$XDG_CACHE_HOME/gluonbench``, else ``~/.cache/gluonbench``."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gluonbench"


MAX_DEPTH = 32
"""Nesting of a JSON document gluonbench reads (its deepest records are about 8 levels)."""

MAX_INT_DIGITS = 30
"""Digits of an integer in a record: every count gluonbench writes fits in 20."""


def _label(path: str | Path, what: str) -> str:
    return f"{what} {path}" if what else str(path)


def require_regular(path: str | Path, what: str = "", fix: str = "give a plain file") -> os.stat_result:
    """``os.stat`` of ``path`` when it is a regular file (links followed); one line otherwise, before anything
    opens it: a FIFO, device or socket where a file is expected is refused before it can block."""
    label = _label(path, what)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise GluonbenchError(f"{label}: no such file; {fix}") from None
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise GluonbenchError(f"{label}: permission denied; make it readable or {fix}") from None
        raise GluonbenchError(f"{label} cannot be read: {exc.strerror or exc}; {fix}") from None
    if stat.S_ISDIR(st.st_mode):
        raise GluonbenchError(f"{label} is a folder, not a file; {fix}")
    if not stat.S_ISREG(st.st_mode):
        raise GluonbenchError(f"{label} is not a regular file (a FIFO, device or socket); {fix}")
    return st


def open_regular(path: str | Path, what: str = "", fix: str = "give a plain file") -> int:
    """A read-only descriptor of ``path``, refused (one line) unless it is a regular file; never blocks on open."""
    require_regular(path, what, fix)
    label = _label(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise GluonbenchError(f"{label} cannot be read: {exc.strerror or exc}; {fix}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GluonbenchError(f"{label} is not a regular file (a FIFO, device or socket); {fix}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: str | Path, what: str, max_bytes: int, fix: str) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``max_bytes`` (from its size, before reading)."""
    label = _label(path, what)
    fd = open_regular(path, what, fix)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise GluonbenchError(f"{label} is {_size(size)}, over the {_size(max_bytes)} such a file can be; {fix}")
        chunks, got = [], 0
        while True:
            chunk = os.read(fd, min(1 * MiB, max_bytes + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > max_bytes:
                raise GluonbenchError(f"{label} grew past {_size(max_bytes)} while it was read; {fix}")
    except OSError as exc:
        raise GluonbenchError(f"{label} cannot be read: {exc.strerror or exc}; {fix}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str | Path, what: str, max_bytes: int, fix: str, errors: str = "strict") -> str:
    """:func:`read_bounded` decoded as UTF-8 (one line naming the file when it is not text, unless ``errors`` is
    ``replace``)."""
    raw = read_bounded(path, what, max_bytes, fix)
    try:
        return raw.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise GluonbenchError(
            f"{_label(path, what)} is not a text file (not UTF-8: byte {exc.start} is 0x{raw[exc.start]:02x}); {fix}"
        ) from None


class _BoundError(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BoundError(f"the number {text[:40]} is not finite")
    return value


def _whole(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _BoundError(f"an integer of {len(text)} digits")
    return int(text)


def _constant(text: str) -> float:
    raise _BoundError(f"{text} is not a number JSON allows")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def parse_json(text: str, label: str, fix: str, *, finite: bool = True) -> Any:
    """``json.loads`` with bounds: finite numbers, integers of at most ``MAX_INT_DIGITS`` digits, nesting of at
    most ``MAX_DEPTH``; one line naming ``label`` otherwise. ``finite=False`` lets ``NaN``, ``Infinity`` and
    ``1e999`` through as floats, for a reader that names the record holding one itself."""
    try:
        if finite:
            doc = json.loads(text, parse_float=_finite, parse_int=_whole, parse_constant=_constant)
        else:
            doc = json.loads(text, parse_int=_whole)
    except _BoundError as exc:
        raise GluonbenchError(f"{label}: {exc}; {fix}") from None
    except json.JSONDecodeError as exc:
        raise GluonbenchError(f"{label} is not readable JSON (line {exc.lineno}: {exc.msg}); {fix}") from None
    except (RecursionError, MemoryError):
        raise GluonbenchError(f"{label} is nested too deeply to be a gluonbench file; {fix}") from None
    if _depth(doc) > MAX_DEPTH:
        raise GluonbenchError(f"{label} is nested more than {MAX_DEPTH} levels deep; {fix}")
    return doc


def load_json(path: str | Path, what: str, max_bytes: int, fix: str) -> Any:
    """The JSON document in the regular file ``path`` (:func:`read_text` then :func:`parse_json`)."""
    return parse_json(read_text(path, what, max_bytes, fix), _label(path, what), fix)


# -- typed fields --------------------------------------------------------------------------------------------


class FieldError(GluonbenchError):
    """A field of a file with a value out of its type or bounds; the message names the file, the field, the fix."""


def _field_error(label: str, name: str, why: str, fix: str) -> FieldError:
    return FieldError(f"{label} is damaged: field {name} {why}; {fix}")


def table(doc: Any, name: str, label: str, fix: str, *, max_items: int = 1024, required: bool = True) -> dict:
    """``doc[name]`` (``doc`` itself when ``name`` is empty) as a JSON object of at most ``max_items`` entries."""
    value = doc.get(name) if name else doc
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _field_error(label, name or "(top level)", f"must be an object (got {_kind(value)})", fix)
    if len(value) > max_items:
        raise _field_error(label, name, f"has {len(value)} entries, over {max_items}", fix)
    return value


def number(
    value: Any, name: str, label: str, fix: str, *, low: float, high: float, none_ok: bool = False
) -> float | None:
    """``value`` as a finite float in ``low .. high`` (a bool is not a number); None allowed when ``none_ok``."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _field_error(label, name, f"must be a finite number (got {_kind(value)})", fix)
    if not low <= value <= high:
        raise _field_error(label, name, f"must be from {low:g} to {high:g} (got {value:g})", fix)
    return float(value)


def whole(value: Any, name: str, label: str, fix: str, *, low: int, high: int) -> int:
    """``value`` as a whole number (not a bool, not a float) in ``low .. high``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _field_error(label, name, f"must be a whole number (got {_kind(value)})", fix)
    if not low <= value <= high:
        raise _field_error(label, name, f"must be from {low} to {high} (got {value})", fix)
    return value


def text(value: Any, name: str, label: str, fix: str, *, max_len: int = 4096, none_ok: bool = False) -> str:
    """``value`` as a string of at most ``max_len`` characters."""
    if value is None and none_ok:
        return ""
    if not isinstance(value, str):
        raise _field_error(label, name, f"must be a string (got {_kind(value)})", fix)
    if len(value) > max_len:
        raise _field_error(label, name, f"is {len(value)} characters long, over {max_len}", fix)
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, int | float):
        return f"{value!r}"[:40]
    if isinstance(value, str):
        return f"the string {value[:30]!r}"
    return f"a {type(value).__name__}"


def _size(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    if n >= KiB:
        return f"{n / KiB:.0f} KiB"
    return f"{n} bytes"


# Writing: the one way gluonbench replaces a file, and how a failed write is said.


def write_error(path: str | Path, exc: OSError, kept: str = "") -> GluonbenchError:
    """A failed write as one line naming the path and the fix (disk full, read-only, no permission).

    ``kept`` says what survived (``records already written are kept``); it is said only where true.
    """
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return GluonbenchError(f"disk full at {path}: free some space" + (f" ({kept})" if kept else ""))
    if exc.errno == errno.EFBIG:
        return GluonbenchError(
            f"cannot write {path}: the file size limit (ulimit -f) stops it; raise it (ulimit -f unlimited)"
            + (f" ({kept})" if kept else "")
        )
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return GluonbenchError(f"cannot write {path}: too many open files; raise the limit (ulimit -n 1024)")
    if exc.errno == errno.EROFS:
        return GluonbenchError(f"cannot write {path}: read-only file system; choose a writable {param('out')}")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return GluonbenchError(f"cannot write {path}: permission denied; choose a writable folder")
    if exc.errno == errno.EISDIR:
        return GluonbenchError(f"cannot write {path}: it is a folder; give a file name")
    if exc.errno == errno.ENOTDIR:
        return GluonbenchError(f"cannot write {path}: a parent of it is a file, not a folder")
    return GluonbenchError(f"cannot write {path}: {exc.strerror or exc}")


def refuse_non_regular(path: str | Path, what: str = "") -> None:
    """Refuse ``path`` when something other than a regular file (or nothing) is there.

    A results write replaces its target; a symlink, device node, FIFO or socket there is not ours
    to replace (``--json /dev/null`` as root would turn the device into a file; a symlink's target
    would be written through), so it is refused with one line instead.
    """
    label = f"{what} {path}" if what else str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
            raise GluonbenchError(f"{label}: {exc.strerror}; choose a shorter path") from None
        return  # the write itself reports what is wrong
    if stat.S_ISLNK(st.st_mode):
        raise GluonbenchError(
            f"{label} is a symbolic link; gluonbench does not write through links, give a plain file path"
        )
    if stat.S_ISDIR(st.st_mode):
        raise GluonbenchError(f"{label} is a folder; give a file name, e.g. {Path(path) / 'result.json'}")
    if not stat.S_ISREG(st.st_mode):
        raise GluonbenchError(f"{label} is not a regular file (a device, FIFO or socket); give a plain file path")


def open_nofollow(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` (``O_NOFOLLOW``) and anything but a regular file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise GluonbenchError(
                f"{path} is a symbolic link; gluonbench does not write through links in a run folder, remove it"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise GluonbenchError(f"{path} is not a regular file (a device, FIFO or folder); remove it")
    os.set_blocking(fd, True)
    return fd


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``os.umask`` sets it for a moment,
    which a thread creating a file at that moment would see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse to open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_writer(
    path: str | Path,
    *,
    sync: bool = True,
    error: Callable[[Path, OSError], Exception] = write_error,
) -> Iterator[BinaryIO]:
    """The one way gluonbench replaces a file: ``with atomic_writer(path) as f: f.write(...)``.

    The bytes go to a temporary file with a unique name in ``path``'s folder (``mkstemp``: created with
    ``O_EXCL``, so it never opens an existing file or follows a link), which is flushed, fsynced (``sync``) and
    renamed over ``path`` when the block ends; a block that raises leaves ``path`` as it was and the temporary
    file removed. Two processes writing one path at once each write their own temporary file and the last rename
    wins, whole. A symbolic link, folder or special file at ``path`` is refused (:func:`refuse_non_regular`).
    ``sync=False`` skips the fsyncs where many small files are written that a crash may lose (generated data, a
    cache). An ``OSError`` becomes ``error(path, exc)`` (default: one line naming the path and the fix).
    """
    path = Path(path)
    refuse_non_regular(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(path, exc) from None
    try:
        # mkstemp makes the file private (0600); a results file gets the mode an ordinary one would
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise error(path, exc) from None
        raise
    if sync:
        _fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` through :func:`atomic_writer`."""
    with atomic_writer(path, sync=sync) as f:
        f.write(data)


def atomic_write_text(path: str | Path, text: str, *, sync: bool = True) -> None:
    """Replace ``path`` with ``text`` (UTF-8) through :func:`atomic_writer`."""
    atomic_write_bytes(path, text.encode("utf-8"), sync=sync)
