"""The results store (JSON lines) and every report rebuilt from it, through one exporter interface.

:func:`rebuild` rebuilds every export of any run folder (a sweep, an io benchmark, a
diagnosis, a tune, a distributed sweep) from its stored records alone, its ``report.html``
included; ``gluonbench report RUN_DIR`` calls it. A profile folder's report is rebuilt by
:func:`gluonbench.profiler.session.build_report` through the same exporter.
Modules load lazily, so importing :mod:`gluonbench.report.store` stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gluonbench.report.exporters import Report
    from gluonbench.report.store import RunStore

__all__ = ["load", "rebuild", "report_types", "saved_settings"]


def report_types() -> list[type[Report]]:
    """Every kind of run folder, by the ``kind`` of its records: sweep (``run``), ``io``, ``diagnosis``, ``dist``,
    ``tune``."""
    from gluonbench.diagnosis.report import DiagnosisReport
    from gluonbench.report.iobench import IoReport
    from gluonbench.report.scaling import ScalingReport
    from gluonbench.report.sweep import SweepReport
    from gluonbench.report.tune import TuneReport

    return [SweepReport, IoReport, DiagnosisReport, ScalingReport, TuneReport]


def saved_settings(store: RunStore) -> dict[str, Any]:
    """The settings a run folder was made with (``sweep.json``), plus its command; ``{}`` if none."""
    from gluonbench.report.store import SETTINGS

    saved = store.read_settings() if (store.path / SETTINGS).is_file() else {}
    return dict(
        saved.get("settings", {}),
        command=saved.get("command", ""),
        **{k: v for k, v in saved.items() if k == "datasets_note"},
    )


def load(run_dir: str | Path) -> Report:
    """The report of a run folder, from ``runs.jsonl`` and ``sweep.json`` alone.

    Raises :class:`~gluonbench.errors.GluonbenchError` when ``run_dir`` is not a run folder.
    """
    from gluonbench.errors import GluonbenchError
    from gluonbench.report.exporters import MarkdownTable
    from gluonbench.report.store import RunStore

    store = RunStore(run_dir)
    if not store.path.is_dir():
        raise GluonbenchError(f"{run_dir} is not a folder; pass a run folder made by gluonbench sweep, io or diagnose")
    if not store.runs_path.is_file():
        raise GluonbenchError(
            f"{run_dir} has no runs.jsonl; pass a run folder made by gluonbench sweep, io or diagnose"
        )
    records = store.require_records()  # none valid: refuse, leaving the existing exports as they are
    kinds = {r.get("kind", "run") for r in records}
    for report_type in reversed(report_types()):  # io and diagnosis folders first; a sweep's records may lack kind
        if report_type.kind in kinds:
            try:
                report = report_type.from_records(records, saved_settings(store))
                report.data(), report.table(), report.document(MarkdownTable())  # every field read before any write
                return report
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                # valid JSON lines, but not what this kind of record holds (another tool's, or hand-edited)
                what = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else type(exc).__name__
                raise GluonbenchError(
                    f"{store.runs_path} holds {report_type.kind} records gluonbench cannot read ({what}); nothing "
                    "rebuilt; pass a run folder made by gluonbench sweep, io or diagnose"
                ) from None
    raise GluonbenchError(
        f"{store.runs_path} holds no record gluonbench can report on (kinds: {', '.join(sorted(map(str, kinds)))})"
    )


def rebuild(run_dir: str | Path) -> list[Path]:
    """Rebuild every export of any run folder from its stored records; the files written."""
    return load(run_dir).write(run_dir)
