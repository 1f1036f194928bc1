"""One exporter interface for every report: a run folder's :class:`Report`, written in each format.

A :class:`Report` is what a run folder says, built from its stored records alone
(``runs.jsonl`` and the settings in ``sweep.json``): the sweep's table per worker
count, the io benchmark's matrix, a diagnosis. An :class:`Exporter` writes one
format of any report: :class:`JsonExporter`, :class:`CsvExporter`,
:class:`MarkdownExporter`, :class:`PngExporter` and :class:`HtmlExporter` (one
self-contained ``report.html`` per run folder, :mod:`gluonbench.report.html`). Tabular formats share one
base, :class:`TableSyntax`, and differ only in syntax (hyperfine's ``markup.rs``):
CSV and Markdown write the same :class:`Table` through :class:`CsvTable` and
:class:`MarkdownTable`. Every file is written atomically, so an export is either
the old file or the new one, never half of each.

Adding a format is one :class:`Exporter` subclass registered in :data:`EXPORTERS`;
adding a kind of run folder is one :class:`Report` subclass listed in
:func:`gluonbench.rundir.report_types`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gluonbench.files import atomic_write_bytes
from gluonbench.report import versions
from gluonbench.report.store import json_safe

if TYPE_CHECKING:
    from gluonbench.report.charts import Chart


@dataclass
class Table:
    """Rows of cells under named columns; ``align`` per column: ``l`` (default) or ``r``."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    align: str = ""

    def alignment(self, i: int) -> str:
        return self.align[i] if i < len(self.align) else "l"


class TableSyntax(ABC):
    """How a :class:`Table` is written; formats differ only in :meth:`header`, :meth:`divider` and :meth:`row`."""

    def render(self, table: Table) -> str:
        lines = [self.header(table)]
        divider = self.divider(table)
        if divider is not None:
            lines.append(divider)
        lines += [self.row(table, [self.cell(v) for v in r]) for r in table.rows]
        return "\n".join(lines) + "\n"

    def cell(self, value: Any) -> str:
        """A value as text: missing and non-finite numbers are empty."""
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return ""
        return str(value)

    @abstractmethod
    def header(self, table: Table) -> str: ...

    def divider(self, table: Table) -> str | None:
        return None

    @abstractmethod
    def row(self, table: Table, cells: list[str]) -> str: ...


class MarkdownTable(TableSyntax):
    """GitHub-flavoured Markdown: ``| a | b |`` with a ``|---|---:|`` divider."""

    def cell(self, value: Any) -> str:
        text = super().cell(value)
        return text.replace("|", "\\|").replace("\n", " ") if text else "-"

    def header(self, table: Table) -> str:
        return "| " + " | ".join(table.columns) + " |"

    def divider(self, table: Table) -> str:
        return "|" + "|".join("---:" if table.alignment(i) == "r" else "---" for i in range(len(table.columns))) + "|"

    def row(self, table: Table, cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"


class TextTable(TableSyntax):
    """Plain text for a terminal: each column padded to its widest cell (right-aligned where ``align`` says ``r``),
    two spaces apart, dashes under the header."""

    def render(self, table: Table) -> str:
        cells = [list(table.columns), *([self.cell(v) for v in r] for r in table.rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]

        def line(row: list[str]) -> str:
            return "  ".join(
                c.rjust(w) if table.alignment(i) == "r" else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )

        return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths), *map(line, cells[1:])]) + "\n"

    def header(self, table: Table) -> str:
        return "  ".join(table.columns)

    def row(self, table: Table, cells: list[str]) -> str:
        return "  ".join(cells)


class CsvTable(TableSyntax):
    """RFC 4180 CSV (Python's ``csv`` dialect ``excel``, ``\\n`` line ends)."""

    def _line(self, cells: Sequence[str]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(cells)
        return buf.getvalue()

    def header(self, table: Table) -> str:
        return self._line(table.columns)

    def row(self, table: Table, cells: list[str]) -> str:
        return self._line(cells)


class Report(ABC):
    """A run folder's content, ready to export, built from its records alone (a pure function of them)."""

    kind: ClassVar[str]
    """the ``kind`` of the records in ``runs.jsonl`` this report reads"""
    files: ClassVar[dict[str, str]]
    """exporter name -> file name in the run folder, e.g. ``{"csv": "summary.csv"}``"""

    summary: Any

    @classmethod
    @abstractmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> Report:
        """The report of these records (``runs.jsonl``) and settings (``sweep.json``)."""

    def data(self) -> dict[str, Any]:
        """Everything, JSON-serialisable (the ``json`` export)."""
        return self.summary.to_dict()

    def table(self) -> Table | None:
        """The report's main table in plain values (the ``csv`` export); None if it has none."""
        return None

    @abstractmethod
    def document(self, tables: TableSyntax) -> str:
        """The report as a text document whose tables are written in ``tables``' syntax."""

    png_chart: ClassVar[str] = ""
    """the name of the chart (of :meth:`charts`) the ``png`` export writes; "" for none"""

    def charts(self) -> list[Chart]:
        """The report's charts, in page order (none when there is nothing to plot); the HTML page inlines each
        as SVG, the ``png`` export writes the one named :attr:`png_chart`."""
        return []

    def figure(self) -> bytes | None:
        """The PNG of the chart named :attr:`png_chart`, or None when there is nothing to plot."""
        from gluonbench.report.charts import png_bytes

        chart = next((c for c in self.charts() if c.name == self.png_chart), None) if self.png_chart else None
        return None if chart is None else png_bytes(chart.draw())

    def html_title(self) -> str:
        """The HTML page's title (its first heading too)."""
        return f"gluonbench {self.kind}"

    def html_subtitle(self) -> str:
        """One line under the title: what was measured, where and when."""
        return ""

    def html_data(self) -> Any:
        """What the HTML page embeds as JSON and draws from (default: :meth:`data`)."""
        return self.data()

    def html_body(self) -> str:
        """HTML the page shows as it is, before its charts and what its script writes (a report that is already HTML)."""
        return ""

    def html_fallback(self) -> str:
        """Text shown when the page's script cannot run: the Markdown document."""
        return self.document(MarkdownTable())

    def write(self, run_dir: str | Path) -> list[Path]:
        """Every export of :attr:`files` into ``run_dir``; the paths written (a format with nothing to say is skipped)."""
        written = []
        for name, file_name in self.files.items():
            path = EXPORTERS[name].export(self, Path(run_dir) / file_name)
            if path is not None:
                written.append(path)
        return written


class Exporter(ABC):
    """One output format for any :class:`Report`."""

    name: ClassVar[str]
    suffix: ClassVar[str]

    @abstractmethod
    def render(self, report: Report) -> str | bytes | None:
        """The file's content; None when this report has nothing in this format."""

    def export(self, report: Report, path: str | Path) -> Path | None:
        """Write :meth:`render`'s content to ``path`` atomically; the path, or None if nothing was written."""
        content = self.render(report)
        if content is None:
            return None
        path = Path(path)
        atomic_write_bytes(path, content.encode("utf-8") if isinstance(content, str) else content)
        return path


class JsonExporter(Exporter):
    """The whole report as indented JSON (NaN and inf as null)."""

    name, suffix = "json", ".json"

    def render(self, report: Report) -> str:
        data = report.data()
        if isinstance(data, dict) and versions.KEY not in data:  # a diagnosis or tune says its own kind's version
            data = versions.stamp("summary", data)
        return json.dumps(json_safe(data), indent=2)


class CsvExporter(Exporter):
    """The report's main table as CSV."""

    name, suffix = "csv", ".csv"

    def render(self, report: Report) -> str | None:
        table = report.table()
        return None if table is None else CsvTable().render(table)


class MarkdownExporter(Exporter):
    """The report as a Markdown document."""

    name, suffix = "markdown", ".md"

    def render(self, report: Report) -> str:
        return report.document(MarkdownTable())


class PngExporter(Exporter):
    """The report's main chart as PNG (the same matplotlib figure its HTML page inlines as SVG)."""

    name, suffix = "png", ".png"

    def render(self, report: Report) -> bytes | None:
        return report.figure()


class HtmlExporter(Exporter):
    """The report as one self-contained HTML page: template files, the records embedded as JSON, no network."""

    name, suffix = "html", ".html"

    def render(self, report: Report) -> str:
        from gluonbench.report.html import html_text

        return html_text(report)


EXPORTERS: dict[str, Exporter] = {
    e.name: e for e in (JsonExporter(), CsvExporter(), MarkdownExporter(), PngExporter(), HtmlExporter())
}
"""Every format, by name."""


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for people: ``digits`` significant digits below 1000, whole numbers above; ``-`` if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"


def machine_line(summary: Any) -> str:
    """The machine and software versions of a summary's ``env``, in one line."""
    env = summary.env
    gpus = ", ".join(env.get("gpus") or []) or "no GPU"
    return (
        f"{env.get('cpu', '?')} ({env.get('cores_logical', '?')} logical cores), {gpus}; "
        f"Python {env.get('python', '?')}, mxnet {env.get('mxnet', '?')}, numpy {env.get('numpy', '?')}, "
        f"gluonbench {env.get('gluonbench', '?')}; {env.get('os', '?')}"
    )


def where_when(env: dict[str, Any], started_utc: str) -> str:
    """``CPU (N cores), GPUs; YYYY-MM-DD`` for a page's subtitle."""
    gpus = ", ".join(env.get("gpus") or []) or "no GPU"
    return f"{str(env.get('cpu', '?'))[:40]} ({env.get('cores_logical', '?')} cores), {gpus}; {started_utc[:10] or '?'}"


TOO_WIDE = 2.0
"""an interval whose upper end exceeds its lower end by more than this factor is too wide to be a result"""


def too_wide(lo: Any, hi: Any) -> bool:
    """True when the interval ``[lo, hi]`` of a positive figure spans more than :data:`TOO_WIDE` times."""
    if not all(isinstance(x, int | float) and math.isfinite(x) for x in (lo, hi)):
        return False
    return lo <= 0 < hi or (lo > 0 and hi / lo > TOO_WIDE)


def wide_text(lo: Any, hi: Any) -> str:
    """`` (too wide to be a result)`` after an interval that is (:func:`too_wide`), else ""."""
    return " (too wide to be a result)" if too_wide(lo, hi) else ""


STAGE_LABEL = {"preprocessing": "preprocessing", "disk_io": "disk I/O", "gpu_io": "GPU I/O"}
"""Each headline stage's short display label (records keep the seed's class names)."""


def stage_label(stage: str, ctx: str | None = None) -> str:
    """A headline stage (or verdict class) as reports name it: on a CPU context (``ctx`` not ``gpu...``)
    ``gpu_io`` is ``model compute (CPU)``; other names pass through."""
    if stage == "gpu_io" and ctx and not str(ctx).startswith("gpu"):
        return "model compute (CPU)"
    return STAGE_LABEL.get(stage, stage)


def roofline_text(texts: list[str]) -> str:
    """Roofline lines (each stage against this machine's ceiling, :mod:`gluonbench.doctor.roofline`) as the
    reports print them, under one heading; "" when there are none."""
    if not texts:
        return ""
    return "roofline (each stage against this machine's measured ceiling; gluonbench doctor):\n" + "".join(
        f"  {text}\n" for text in texts
    )
