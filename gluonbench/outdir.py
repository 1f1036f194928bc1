"""Where a command's results go: the output folder checked (and made) before anything is measured, and a run
folder written from its settings and one record, its exports rebuilt from the records (``gluonbench report``
rebuilds them the same way)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from gluonbench.env import command_line, environment, utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.names import arg, param
from gluonbench.report.store import RunStore, check_free_space, new_run_dir
from gluonbench.rundir import load
from gluonbench.validate import check_path


def write_reports(store: RunStore) -> Any:
    """Rebuild every export of ``store``'s folder from its records; the report's summary, or None if none."""
    if not store.runs_path.exists():
        return None
    report = load(store.path)
    report.write(store.path)
    return report.summary


def pipeline_record(settings: Any) -> dict[str, Any]:
    """What a run folder keeps of the pipeline beside its settings: ``{"pipeline": {"identity": ...,
    "unchecked_options": [...]}}``, the second naming the options only the factory's ``**options`` took (its
    signature names none of them); ``{}`` without a pipeline factory."""
    if not getattr(settings, "pipeline", None):
        return {}
    from gluonbench.workloads.spec import unnamed_options

    return {
        "pipeline": {
            "identity": settings.identity(),
            "unchecked_options": unnamed_options(settings.pipeline, settings.pipeline_options),
        }
    }


def save_run(
    out: str | Path,
    name: str,
    settings: dict[str, Any],
    kind: str,
    result: Any,
    *,
    status: str = "ok",
    env: dict[str, Any] | None = None,
    **record: Any,
) -> Path:
    """Write a new run folder ``OUT/<UTC>-<name>/``: its ``sweep.json`` (``settings``, the command line, ``env``
    or this host's environment), one ``runs.jsonl`` record of ``kind`` holding ``result.to_dict()`` under
    ``kind`` with ``status`` and ``record``'s fields, and the exports rebuilt from it. Returns the folder."""
    store = RunStore(new_run_dir(out, name))
    store.write_settings({**settings, "command": command_line(), "env": env or environment()})
    store.append(
        {
            "kind": kind,
            "status": status,
            kind: result.to_dict(),
            **record,
            "command": command_line(),
            "finished_utc": utc_now(),
        }
    )
    write_reports(store)
    return store.path


def _nearest_existing(path: Path) -> Path | None:
    """``path`` itself or the nearest of its parents that exists (None if none does)."""
    return next((p for p in (path, *path.parents) if p.exists()), None)


def make_out(out: str | Path, what: str = "out") -> Path:
    """Create the output folder ``out`` (``what``: its argument) if needed and prove it writable with room for
    results; one line naming the fix if not. Made before measuring: a result is never measured, then lost."""
    path = check_path(out, arg(what))
    if path.exists() and not path.is_dir():
        raise GluonbenchError(f"{param(what)} {out} is not a folder; choose a folder for the results")
    above = _nearest_existing(path.parent)
    if above is not None and not above.is_dir():
        raise GluonbenchError(f"{param(what)} {out}: {above} is a file, not a folder; choose a folder for the results")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GluonbenchError(f"cannot create {param(what)} {out}: {exc.strerror}; choose a writable folder") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise GluonbenchError(f"cannot write into {param(what)} {out}; choose a writable folder")
    check_free_space(path, arg(what))
    return path


def probe_mkdir(path: Path, what: str) -> None:
    """Prove ``path`` can be made (permissions alone do not tell, e.g. under /proc as root): make the missing
    folders, then remove the ones made here."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    made: list[Path] = []
    try:
        for p in reversed(missing):
            p.mkdir()
            made.append(p)
    except OSError as exc:
        raise GluonbenchError(f"cannot create {param(what)} {path}: {exc.strerror}; choose a writable folder") from exc
    finally:
        for p in reversed(made):
            with contextlib.suppress(OSError):
                p.rmdir()


def check_out(out: str | Path, what: str = "out") -> Path:
    """``out`` (``what``: its argument) is a folder that exists or can be made, and is writable; checked
    before anything is created."""
    out = check_path(out, arg(what))
    probe = _nearest_existing(out) or out
    if probe.exists() and not probe.is_dir():
        raise GluonbenchError(
            f"{param(what)} {out}: {probe} is a file, not a folder; choose a folder for the run folders"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        raise GluonbenchError(
            f"{param(what)} {out}: cannot write in {probe} (permission denied); choose a writable folder"
        )
    return out
