"""Upper and lower bounds of every whole-number and duration setting, checked before any work starts.

A value past its bound is never a real request (``--workers 0..99999999999``, ``--devices 100000``,
``--timeout 1e300``): without a bound it becomes a list of 10**11 runs, 100000 processes or an
overflow deep inside a library, long after the command started. The bounds are the declarations' (the loader's
knobs and the shared settings); this module checks them where a value comes in.
"""

from __future__ import annotations

from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.knobs import KNOBS
from gluonbench.names import param
from gluonbench.settings import SETTINGS

MAX_WORKER_COUNTS = 256
"""Distinct values a range such as --workers may name (each is at least one run)."""

LIMITS: dict[str, tuple[int, int]] = {
    s.key: (int(s.minimum), int(s.maximum))
    for s in (*KNOBS.values(), *SETTINGS.values())
    if s.kind is int and s.minimum is not None and s.maximum is not None
}
"""Inclusive (low, high) of each whole-number setting, read from its declaration (:data:`gluonbench.knobs.KNOBS`,
:data:`gluonbench.settings.SETTINGS`)."""


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
