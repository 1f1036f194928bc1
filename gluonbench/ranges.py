"""Parse worker-count specs such as ``0..8``, ``0..8:2`` and ``0,2,4,8``."""

from __future__ import annotations

import re

from gluonbench.errors import GluonbenchError

_RANGE = re.compile(r"^(\d+)\.\.(\d+)(?::(\d+))?$")
_HINT = "use START..END, START..END:STEP or a comma list, e.g. 0..8, 0..8:2, 0,2,4,8"


def parse_int_list(spec: str, what: str = "--workers") -> list[int]:
    """Return the integers a spec names, in order, without duplicates.

    ``0..8`` is inclusive (0 to 8); ``0..8:2`` steps by 2 (0, 2, 4, 6, 8);
    ``0,2,4,8`` lists values; a single ``4`` is one value. Anything else, a
    negative value, an empty list, a reversed range or a zero step raises
    :class:`GluonbenchError`.
    """
    text = spec.strip()
    if not text:
        raise GluonbenchError(f"{what} is empty: {_HINT}")
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        match = _RANGE.match(part)
        if match:
            start, end = int(match.group(1)), int(match.group(2))
            step = int(match.group(3)) if match.group(3) is not None else 1
            if step == 0:
                raise GluonbenchError(f"{what} {spec!r}: the step must be at least 1; {_HINT}")
            if end < start:
                raise GluonbenchError(f"{what} {spec!r}: range {part} runs backwards; write {end}..{start}")
            values.extend(range(start, end + 1, step))
        elif part.isdigit():
            values.append(int(part))
        else:
            raise GluonbenchError(f"{what} {spec!r}: cannot read {part!r}; {_HINT}")
    seen: set[int] = set()
    unique = [v for v in values if not (v in seen or seen.add(v))]
    return unique
