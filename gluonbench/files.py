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
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError

KiB = 1 << 10
MiB = 1 << 20

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
