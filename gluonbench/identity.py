"""What a command measured, named one way everywhere: a user's pipeline factory with its options
(``mypkg.train:make (classes=5)``), a built-in workload's name (``mnist``), or a training script's command.

Every record keeps it (``identity`` in the settings a run folder stores) and every title, report and run folder
name shows it; :func:`describe` makes it from the settings, :func:`of_settings` reads it back from a stored
settings table (older run folders, written before it was stored, included). An option whose name or value is a
credential is redacted (:func:`gluonbench.validate.redact`); a run folder's name holds the factory's module and
function only, never an option's value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from gluonbench.validate import redact

MAX_OPTION_TEXT = 60
"""the most characters of one option's value an identity shows (a longer value is cut, with "...")"""


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_OPTION_TEXT else text[: MAX_OPTION_TEXT - 3] + "..."


def options_text(options: Mapping[str, Any] | None) -> str:
    """``key=value, ...`` of a factory's options, sorted, credentials redacted ("" for none)."""
    shown = cast(dict[str, Any], redact(dict(options or {})))
    return ", ".join(f"{k}={_value(v)}" for k, v in sorted(shown.items()))


def describe(pipeline: str | None, options: Mapping[str, Any] | None = None, workload: str | None = None) -> str:
    """The identity of what runs: ``pipeline`` (``MODULE:FUNCTION`` or ``path/file.py:FUNCTION``) with its
    ``options``, else the built-in ``workload``'s name."""
    if pipeline:
        shown = options_text(options)
        return f"{pipeline} ({shown})" if shown else str(pipeline)
    return str(workload or "?")


def of_settings(settings: Mapping[str, Any] | None) -> str:
    """The identity a stored settings table names: its ``identity``, else (a run folder written before it was
    stored) its ``pipeline`` and options, else its ``workload``, else a script's ``command``."""
    s = settings or {}
    if s.get("identity"):
        return str(s["identity"])
    if s.get("pipeline"):
        return describe(s["pipeline"], s.get("pipeline_options"))
    if s.get("workload"):
        return str(s["workload"])
    command = s.get("command")
    if isinstance(command, list | tuple) and command:
        return " ".join(str(c) for c in command)
    return "?"
