"""The format version of every record gluonbench writes, and the upgrade of older records, in one place.

Each kind of record carries ``format_version`` (as asv's ``api_version``). A reader passes what it read through
:func:`upgrade`: a record without the field was written before records carried one and reads as version 0; each
step from version N to N+1 is one function in :data:`UPGRADES`, so a record of any older version reaches the
current layout one step at a time. A record with a version newer than this gluonbench knows is refused in one line
that says to upgrade gluonbench, never half read.

When a kind's layout changes: raise its number in :data:`CURRENT`, add the function that turns the previous
version into the new one to :data:`UPGRADES`, and say what changed in docs/reference/formats.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gluonbench.errors import GluonbenchError

KEY = "format_version"
"""the field every record carries"""

CURRENT: dict[str, int] = {
    "record": 1,  # one line of runs.jsonl (a sweep run, io cell, diagnosis, tune or scale-out worker)
    "settings": 1,  # sweep.json: a run folder's settings, for --resume
    "summary": 1,  # summary.json (and the json export of every run folder)
    "diagnosis": 1,  # diagnose --json, and the diagnosis held in a diagnosis record
    "tune": 1,  # tune --json and tune.json (a finished tune or one a stall stopped)
    "check": 1,  # check --json: the decision
    "compare": 1,  # compare --json
    "doctor": 1,  # doctor --json
    "profile": 1,  # profile.json beside a profile's profiler-output/
}
"""the version this gluonbench writes, per kind of record"""


def _from_unversioned(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (written before records carried ``format_version``) has version 1's layout."""
    return doc


UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    (kind, 0): _from_unversioned for kind in CURRENT
}
"""``(kind, N)`` -> the function that turns a version-N record of that kind into version N+1"""


class NewerFormatError(GluonbenchError):
    """A record written by a newer gluonbench than this one."""


def stamp(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with this gluonbench's ``format_version`` for ``kind`` (the field first, the rest as it was)."""
    return {KEY: CURRENT[kind], **{k: v for k, v in doc.items() if k != KEY}}


def version_of(doc: dict[str, Any], source: str) -> int:
    """The record's format version (0 when it has none); one line naming ``source`` when it is not a number."""
    version = doc.get(KEY, 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise GluonbenchError(
            f"{source}: {KEY} {version!r} is not a whole number; the file is damaged, restore it or write it again"
        )
    return version


def refuse_newer(kind: str, version: int, current: int, source: str) -> None:
    """One line when ``version`` is newer than ``current``, the newest this gluonbench reads."""
    if version > current:
        raise NewerFormatError(
            f"{source} was written by a newer gluonbench ({kind} format version {version}; this one reads up to "
            f"{current}): upgrade gluonbench (pip install -U gluonbench) to read it"
        )


def upgrade(kind: str, doc: dict[str, Any], source: str) -> dict[str, Any]:
    """``doc`` (a ``kind`` record read from ``source``) in the current layout, with the current ``format_version``.

    Older versions are upgraded one step at a time; a newer one is refused with :class:`NewerFormatError`.
    """
    current = CURRENT[kind]
    version = version_of(doc, source)
    refuse_newer(kind, version, current, source)
    while version < current:
        doc = UPGRADES[(kind, version)](dict(doc))
        version += 1
    return stamp(kind, doc)
