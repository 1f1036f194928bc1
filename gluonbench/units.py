"""Byte sizes on the command line (``150MB``, ``64MiB``, ``40KB``) and in reports."""

from __future__ import annotations

import re
from decimal import Decimal

from gluonbench.errors import GluonbenchError

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*$", re.ASCII)
MAX_SECONDS = 10_000_000.0
"""About 115 days: the longest duration any setting takes (time.sleep and select overflow past ~1e9)."""

MAX_SIZE = 1 << 50
"""1 PiB: the largest size any option takes (a 400-digit size is a typo, not a request)."""


def parse_size(text: str | int, what: str = "size") -> int:
    """``150MB`` -> 150_000_000 (KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024); a bare number is bytes."""
    if isinstance(text, bool):
        raise GluonbenchError(f"{what} {text!r} is not a size; write e.g. 150MB, 64MiB, 40KB or a byte count")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(str(text)) if len(str(text)) <= 80 else None
        unit = match.group(2).lower() if match else None
        if not match or unit not in _UNITS:
            shown = str(text) if len(str(text)) <= 40 else str(text)[:37] + "..."
            raise GluonbenchError(f"{what} {shown!r} is not a size; write e.g. 150MB, 64MiB, 40KB or a byte count")
        value = int(Decimal(match.group(1)) * _UNITS[unit])
    if value > MAX_SIZE:
        raise GluonbenchError(f"{what} is over 1 PiB (got {str(text)[:40]!r}); give a smaller size")
    if value < 1:
        raise GluonbenchError(f"{what} must be at least 1 byte (got {text!r})")
    return value


def format_size(n: float) -> str:
    """1_500_000 -> ``1.5 MB`` (powers of 1000, as the seeds quote sizes)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} TB"  # pragma: no cover


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``count(1, "round")`` is "1 round", ``count(3, "round")``
    "3 rounds" (``noun`` may carry words before it: "paired round")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
