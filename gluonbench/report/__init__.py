"""The results store (JSON lines) and the exporters every report goes through, one interface for all.

Each kind of run folder has its report here (a sweep, an io benchmark, a distributed sweep, a tune), but
the diagnosis's, which lives with the diagnosis (:mod:`gluonbench.diagnosis.report`): this package sits
below it. :mod:`gluonbench.rundir` reads a run folder of any kind (``load``) and rebuilds its exports, its
``report.html`` included (``rebuild``; ``gluonbench report RUN_DIR`` calls it). A profile folder's report
is rebuilt by :func:`gluonbench.profiler.session.build_report` through the same exporter.
Modules load lazily, so importing :mod:`gluonbench.report.store` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gluonbench.settings import DEFAULT_OUT  # declared with the out setting

if TYPE_CHECKING:
    from gluonbench.report.store import RunStore

__all__ = ["DEFAULT_OUT", "saved_settings"]


def saved_settings(store: RunStore) -> dict[str, Any]:
    """The settings a run folder was made with (``sweep.json``), plus its command; ``{}`` if none."""
    from gluonbench.report.store import SETTINGS

    saved = store.read_settings() if store.has(SETTINGS) else {}
    return dict(
        saved.get("settings", {}),
        command=saved.get("command", ""),
        **{k: v for k, v in saved.items() if k == "datasets_note"},
    )
