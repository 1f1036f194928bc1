"""A tune's run folder (``gluonbench tune --out``): the stored result as Markdown, JSON and ``report.html``.

The folder's ``runs.jsonl`` holds one ``kind == "tune"`` record whose ``tune`` is
``TuneResult.to_dict()``; every export is rebuilt from it (``gluonbench report RUN_DIR``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gluonbench.errors import GluonbenchError
from gluonbench.identity import of_settings
from gluonbench.report.charts import PALETTE, Bar, Chart, bars_figure
from gluonbench.report.exporters import Report, Table, TableSyntax, fmt, where_when, wide_text


def _rate(value: Any, ci: Any) -> str:
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "n/a"
    lo, hi = ([*list(ci), None, None])[:2] if isinstance(ci, list | tuple) else (None, None)
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        return f"{value:.0f} samples/s [{lo:.0f}, {hi:.0f}]{wide_text(lo, hi)}"
    return f"{value:.0f} samples/s"


def _ci(value: Any) -> tuple[Any, Any]:
    return (value[0], value[1]) if isinstance(value, list | tuple) and len(value) == 2 else (None, None)


def expected_figure(identity: str, r: dict[str, Any]) -> Any:
    """The current setting, the recommendation and the model ceiling: samples/s with 95 % CIs, axis from zero."""
    bars = [
        Bar(f"current setting (batch {r.get('current_batch_size', '?')})", r.get("current_samples_per_s"),
            *_ci(r.get("current_ci")), color="#7f7f7f"),
        Bar(f"recommended (batch {r.get('batch_size', '?')})", r.get("samples_per_s"), *_ci(r.get("ci")),
            color="#2ca02c", bold=True),
        Bar("model ceiling", r.get("ceiling_samples_per_s"), *_ci(r.get("ceiling_ci")), color="#1f77b4"),
    ]  # fmt: skip
    return bars_figure(
        bars,
        f"{identity}: current setting, recommendation and the model ceiling",
        "samples/s, median with its 95 % CI; the ceiling steps one cached batch (a perfect loader); axis from zero",
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def evidence_figure(identity: str, r: dict[str, Any]) -> Any:
    """Every measurement the search made: samples/s with its 95 % CI and the cores it kept busy, coloured by
    phase; a failed one says why."""
    evidence = r.get("evidence") or []
    phases = list(dict.fromkeys(str(e.get("phase")) for e in evidence))
    bars = []
    for e in evidence:
        label = f"{e.get('phase')}: {e.get('label')}"
        ok = e.get("status") == "ok"
        cores = e.get("cpu_cores")
        note = (
            (f"{cores:.2f} cores busy" if isinstance(cores, int | float) and math.isfinite(cores) else "") if ok else ""
        )
        bars.append(
            Bar(
                _short(label, 60),
                e.get("samples_per_s") if ok else None,
                *(_ci(e.get("ci")) if ok else (None, None)),
                color=PALETTE[phases.index(str(e.get("phase"))) % len(PALETTE)],
                note=note if ok else _short(f"FAILED: {e.get('error')}", 90),
            )
        )
    return bars_figure(
        bars,
        f"{identity}: every measurement the search made",
        f"samples/s, median with its 95 % CI; colour by phase: {', '.join(phases)}; axis from zero",
    )


def _ratio(value: Any, suffix: str) -> str:
    return f"{value:.2f}{suffix}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"


STATEMENTS = (("Model fed", "fed_text"), ("Sweep", "sweep_text"))
"""the tune record's statements (:meth:`TuneResult.to_dict`) the reports print as they are"""


class TuneReport(Report):
    """A tune's run folder: one ``kind == "tune"`` record (``TuneResult.to_dict()`` under ``tune``)."""

    kind = "tune"
    files: ClassVar[dict[str, str]] = {
        "markdown": "tune.md",
        "csv": "tune.csv",
        "json": "tune.json",
        "html": "report.html",
    }

    def __init__(self, record: dict[str, Any]) -> None:
        self.summary = record
        self.result: dict[str, Any] = record.get("tune") or {}

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> TuneReport:
        found = [r for r in records if r.get("kind") == cls.kind]
        if not found:
            raise GluonbenchError("no tune record in runs.jsonl; pass a folder made by gluonbench tune --out")
        return cls(dict(found[-1], settings=settings))

    def data(self) -> dict[str, Any]:
        return self.result

    def table(self) -> Table:
        """One row per measurement the tuner made (``tune.csv``)."""
        table = Table(
            ["phase", "label", "status", "samples_per_s", "ci_lo", "ci_hi", "cpu_cores", "elapsed_s", "error"]
        )
        for e in self.result.get("evidence") or []:
            ci = [*list(e.get("ci") or [None, None]), None, None]
            table.rows.append(
                [
                    e.get("phase"),
                    e.get("label"),
                    e.get("status"),
                    e.get("samples_per_s"),
                    ci[0],
                    ci[1],
                    e.get("cpu_cores"),
                    e.get("elapsed_s"),
                    e.get("error") or "",
                ]
            )
        return table

    def document(self, tables: TableSyntax) -> str:
        r = self.result
        lines = [
            f"# {self.html_title()}",
            "",
            f"- Recommended: `{r.get('dataloader', '?')}`",
        ]
        if r.get("lr_note"):
            lines.append(f"- Batch size: {r['lr_note']}")
        lines += [
            f"- Expected: {_rate(r.get('samples_per_s'), r.get('ci'))}, {_ratio(r.get('speedup'), 'x')} the current "
            f"setting ({_rate(r.get('current_samples_per_s'), r.get('current_ci'))}, batch "
            f"{r.get('current_batch_size', '?')})",
            f"- Against the model ceiling (one cached batch stepped): {r['ceiling_text']}"
            if r.get("ceiling_text")
            else f"- Model ceiling (one cached batch stepped): {_rate(r.get('ceiling_samples_per_s'), r.get('ceiling_ci'))}",
        ]
        lines += [f"- {name}: {r[key]}" for name, key in STATEMENTS if r.get(key)]
        lines += [
            f"- Search stopped (batch {b.get('batch_size')}): {b.get('stop_text') or b.get('stop_reason')}"
            for b in r.get("batch_sizes") or []
            if b.get("stop_text") or b.get("stop_reason")
        ]
        lines += [
            f"- Search: {fmt(r.get('elapsed_s'))} s of a {fmt(r.get('budget_s'))} s budget, {r.get('cores', '?')} "
            f"cores, {r.get('ctx', '?')}",
            f"- Command: `{self.summary.get('command', '')}`",
            "",
            "Evidence: samples/s, median and 95 % CI, every measurement through `measure()`.",
            "",
        ]
        evidence = self.table()
        shown = Table(["phase", "setting", "samples/s", "95 % CI", "cores busy"], align="llrrr")
        for phase, label, status, rate, lo, hi, cores, _elapsed, error in evidence.rows:
            if status != "ok":
                shown.rows.append([phase, label, f"failed: {error}", "", ""])
                continue
            shown.rows.append([phase, label, fmt(rate, 4), f"{fmt(lo, 4)}-{fmt(hi, 4)}", fmt(cores, 2)])
        lines.append(tables.render(shown).rstrip("\n"))
        if r.get("tried"):
            lines += ["", f"Tried: {'; '.join(map(str, r['tried']))}"]
        skipped = r.get("skipped") or []
        if skipped:
            lines += ["", "Skipped:", ""] + [f"- {s.get('what')}: {s.get('reason')}" for s in skipped]
        return "\n".join(lines) + "\n"

    def identity(self) -> str:
        """The tuned pipeline as its records name it."""
        return str(self.result.get("label") or of_settings(self.summary.get("settings")) or "")

    def html_title(self) -> str:
        label = self.identity()
        return f"gluonbench tune{': ' + label if label else ''}"

    def charts(self) -> list[Chart]:
        """The expected throughput (current, recommended, ceiling) and every measurement of the search."""
        identity = self.identity() or "tune"
        charts = [Chart("expected", "Current setting, recommendation and the model ceiling",
                        lambda: expected_figure(identity, self.result))]  # fmt: skip
        if self.result.get("evidence"):
            charts.append(Chart("evidence", "Every measurement the search made",
                                lambda: evidence_figure(identity, self.result)))  # fmt: skip
        return charts

    def html_subtitle(self) -> str:
        return where_when(self.result.get("env") or {}, str(self.result.get("started_utc") or ""))

    def html_data(self) -> dict[str, Any]:
        return dict(self.result, command=self.summary.get("command", ""))
