"""What a distributed sweep needs on this machine when it starts (the settings themselves are checked by
:func:`gluonbench.pipeline.scale.check_scale`, from ``SweepSettings.check()``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

HOSTFILE_MAX_BYTES = 1 << 20
"""A hostfile larger than this is not a list of hosts."""
HOSTFILE_MAX_HOSTS = 10_000

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_LINE = re.compile(
    rf"(?:(?P<user>[A-Za-z_][A-Za-z0-9_.-]{{0,31}})@)?(?P<host>{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[0-9]{{1,5}}))?"
)


def parse_hostfile(path: str | Path, what: str | None = None) -> list[tuple[str, int]]:
    """``(host, port)`` per line of an ssh hostfile, every line checked strictly.

    MXNet's ``dmlc_tracker`` hands each line to ``ssh`` through a shell, so a line is accepted only
    as ``[user@]host[:port]`` (host: a DNS name or IPv4 address; port 1-65535); ``$(...)``, spaces,
    quotes, comments and anything else are refused with the line number, before any process starts.
    Blank lines are skipped (as ``dmlc_tracker`` skips them).
    """
    what = what or param("hostfile")  # the argument as the caller knows it
    path = Path(path)
    try:
        if not path.is_file():
            raise GluonbenchError(f"{what} {path} does not exist (or is not a file); write one host[:port] per line")
        with open(path, "rb") as f:
            raw = f.read(HOSTFILE_MAX_BYTES + 1)
    except OSError as exc:
        raise GluonbenchError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(raw) > HOSTFILE_MAX_BYTES:
        raise GluonbenchError(f"{what} {path} is over {HOSTFILE_MAX_BYTES // 1024} KiB; write one host[:port] per line")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise GluonbenchError(
            f"{what} {path} is not a text file of host names (non-ASCII bytes); write one host[:port] per line"
        ) from None
    hosts: list[tuple[str, int]] = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        m = _HOST_LINE.fullmatch(line)
        port = int(m.group("port")) if m and m.group("port") else 22
        if not m or len(m.group("host")) > 253 or not 0 < port < 65536:
            shown = line if len(line) <= 40 else line[:37] + "..."
            raise GluonbenchError(
                f"{what} {path} line {n} {shown!r} is not [user@]host[:port] (ssh runs it through a shell, so "
                "nothing else is accepted); fix that line"
            )
        hosts.append((line.rsplit(":", 1)[0] if m.group("port") else line, port))
        if len(hosts) > HOSTFILE_MAX_HOSTS:
            raise GluonbenchError(
                f"{what} {path} names over {HOSTFILE_MAX_HOSTS} hosts; write one host[:port] per line"
            )
    if not hosts:
        raise GluonbenchError(f"{what} {path} names no host; write one host[:port] per line")
    return hosts


def check_launch(s: Any) -> None:
    """What must hold on this machine when a distributed sweep starts (a config stays portable without it)."""
    if s.launcher == "ssh":
        parse_hostfile(s.hostfile)
