"""Upper and lower bounds of every whole-number and duration setting, checked before any work starts.

A value past its bound is never a real request (``--workers 0..99999999999``, ``--devices 100000``,
``--timeout 1e300``): without a bound it becomes a list of 10**11 runs, 100000 processes or an
overflow deep inside a library, long after the command started. One table, one check.
"""

from __future__ import annotations

import math
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

MAX_SECONDS = 10_000_000.0
"""About 115 days: the longest duration any setting takes (time.sleep and select overflow past ~1e9)."""

MAX_WORKER_COUNTS = 256
"""Distinct values a range such as --workers may name (each is at least one run)."""

LIMITS: dict[str, tuple[int, int]] = {
    "batch_size": (1, 1_000_000),
    "epochs": (1, 100_000),
    "repeat": (1, 1_000),
    "max_batches": (1, 1_000_000_000),
    "eval_workers": (0, 1_024),
    "workers": (0, 1_024),
    "hosts": (1, 1_024),
    "devices": (1, 1_024),
    "servers": (0, 1_024),
    "prefetch": (0, 100_000),
    "classes": (1, 1_000_000),
    "image_size": (1, 16_384),
    "port": (0, 65_535),
    "diagnose_rank": (0, 1_023),
    "gpus": (0, 1_023),
}
"""Inclusive (low, high) of each whole-number setting; lows repeat what the settings' own checks say."""


def _flag(name: str) -> str:
    return param(name)


def check_int(value: Any, name: str, what: str | None = None) -> int:
    """``value`` if it is a whole number (not a bool, not a float) inside ``LIMITS[name]``."""
    what = what or _flag(name)
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise GluonbenchError(f"{what} must be a whole number from {low} to {high} (got {value!r})")
    if not low <= value <= high:
        raise GluonbenchError(f"{what} must be from {low} to {high} (got {value})")
    return value


def check_duration(value: Any, what: str, minimum: float = 0.0) -> float:
    """A duration in seconds: a finite number, not a bool, in ``minimum .. MAX_SECONDS``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GluonbenchError(f"{what} must be a finite number of seconds (got {value!r})")
    if value > MAX_SECONDS:
        raise GluonbenchError(f"{what} {value:g} s is too long; the most is {MAX_SECONDS:g} s (about 115 days)")
    if value < minimum:
        raise GluonbenchError(f"{what} must be at least {minimum:g} seconds (got {value:g})")
    return float(value)


def check_settings_bounds(settings: Any) -> None:
    """No bounded field of ``settings`` (any object with some of ``LIMITS``' names) above its upper bound."""
    for name, (low, high) in LIMITS.items():
        value = getattr(settings, name, None)
        if value is None:
            continue
        if isinstance(value, tuple | list):
            if len(value) > MAX_WORKER_COUNTS:
                raise GluonbenchError(
                    f"{_flag(name)} names {len(value)} values; the most is {MAX_WORKER_COUNTS}: narrow the range or add a step"
                )
            values = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        elif isinstance(value, int) and not isinstance(value, bool):
            values = [value]
        else:
            continue  # a type error: the settings' own type check names it
        # lower bounds (and their messages) stay with the settings' own checks; here: the upper ones
        too_big = [v for v in values if v > high]
        if too_big:
            raise GluonbenchError(f"{_flag(name)} must be from {low} to {high} (got {too_big[0]})")
