"""A run folder of any kind: its report (:func:`load`) and every export rebuilt from its records (:func:`rebuild`).

The kinds are a sweep (``run`` records), an io benchmark (``io``), a diagnosis (``diagnosis``), a distributed
sweep (``dist``) and a tune (``tune``); each has its :class:`~gluonbench.report.exporters.Report`. This module
sits above them all, the diagnosis's (:mod:`gluonbench.diagnosis.report`) included, so that
:mod:`gluonbench.report` stays below the diagnosis. ``gluonbench report RUN_DIR`` calls :func:`rebuild`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gluonbench.errors import GluonbenchError
from gluonbench.report import saved_settings

if TYPE_CHECKING:
    from gluonbench.report.exporters import Report

__all__ = ["load", "rebuild", "report_types"]


def report_types() -> list[type[Report]]:
    """Every kind of run folder, by the ``kind`` of its records: sweep (``run``), ``io``, ``diagnosis``, ``dist``,
    ``tune``."""
    # loaded on first use: importing this module stays cheap
    from gluonbench.diagnosis.report import DiagnosisReport
    from gluonbench.report.iobench import IoReport
    from gluonbench.report.scaling import ScalingReport
    from gluonbench.report.sweep import SweepReport
    from gluonbench.report.tune import TuneReport

    return [SweepReport, IoReport, DiagnosisReport, ScalingReport, TuneReport]


def load(run_dir: str | Path) -> Report:
    """The report of a run folder, from ``runs.jsonl`` and ``sweep.json`` alone.

    Raises :class:`~gluonbench.errors.GluonbenchError` when ``run_dir`` is not a run folder.
    """
    from gluonbench.report.exporters import MarkdownTable
    from gluonbench.report.store import RunStore

    store = RunStore(run_dir)
    if not store.path.is_dir():
        raise GluonbenchError(f"{run_dir} is not a folder; pass a run folder made by gluonbench sweep, io or diagnose")
    if not store.has():
        if (store.path / "tune.json").is_file() and store.path.name.endswith("-stalled"):
            raise GluonbenchError(
                f"{run_dir} is a tune that a stall stopped: it has no report, and its measurements are in "
                f"{store.path / 'tune.json'}; fix the stalled stage and tune again"
            )
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
