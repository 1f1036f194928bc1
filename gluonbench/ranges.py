"""Parse worker-count specs such as ``0..8``, ``0..8:2`` and ``0,2,4,8``."""

from __future__ import annotations

import re

from gluonbench.errors import GluonbenchError

_RANGE = re.compile(r"^(\d+)\.\.(\d+)(?::(\d+))?$", re.ASCII)
MAX_VALUE = 1_000_000
"""The largest value a range may name (a worker count, a host count): larger is never a real request."""
MAX_VALUES = 4096
"""The most values one spec may name, checked before the list is built (``0..99999999999`` is refused)."""
_HINT = "use START..END, START..END:STEP or a comma list, e.g. 0..8, 0..8:2, 0,2,4,8"


def parse_int_list(spec: str, what: str = "--workers") -> list[int]:
    """Return the integers a spec names, in order, without duplicates.

    ``0..8`` is inclusive (0 to 8); ``0..8:2`` steps by 2 (0, 2, 4, 6, 8);
    ``0,2,4,8`` lists values; a single ``4`` is one value. Anything else, a
    negative value, an empty list, a reversed range or a zero step raises
    :class:`GluonbenchError`.
    """
    if not isinstance(spec, str):
        raise GluonbenchError(f"{what} must be text such as 0..8 (got {type(spec).__name__}); {_HINT}")
    if len(spec) > 10_000:
        raise GluonbenchError(f"{what} is {len(spec)} characters long; {_HINT}")
    text = spec.strip()
    if not text:
        raise GluonbenchError(f"{what} is empty: {_HINT}")
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        match = _RANGE.match(part)
        if match:
            start, end = _num(match.group(1)), _num(match.group(2))
            step = _num(match.group(3)) if match.group(3) is not None else 1
            if step == 0:
                raise GluonbenchError(f"{what} {spec!r}: the step must be at least 1; {_HINT}")
            if end < start:
                raise GluonbenchError(f"{what} {spec!r}: range {part} runs backwards; write {end}..{start}")
            _check_value(max(start, end), spec, what)
            if (end - start) // step + 1 + len(values) > MAX_VALUES:
                raise GluonbenchError(f"{what} {spec!r} names over {MAX_VALUES} values; narrow it or add a step")
            values.extend(range(start, end + 1, step))
        elif part.isascii() and part.isdigit():
            _check_value(_num(part), spec, what)
            values.append(int(part))
            if len(values) > MAX_VALUES:
                raise GluonbenchError(f"{what} {spec!r} names over {MAX_VALUES} values; narrow it")
        else:
            raise GluonbenchError(f"{what} {spec!r}: cannot read {part!r}; {_HINT}")
    seen: set[int] = set()
    unique = [v for v in values if not (v in seen or seen.add(v))]
    return unique


def _check_value(value: int, spec: str, what: str) -> None:
    if value > MAX_VALUE:
        raise GluonbenchError(f"{what} {spec[:40]!r}: values go up to {MAX_VALUE}; {_HINT}")


def _num(digits: str) -> int:
    """The value of a run of digits, capped just past ``MAX_VALUE`` (no 5000-digit int is ever built)."""
    return int(digits) if len(digits) <= 12 else MAX_VALUE + 1
