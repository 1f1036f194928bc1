"""The input-mode benchmark's report (:class:`IoReport`, ``gluonbench io``): csv, markdown, json and a plot.

Written through the same exporters as every report (:mod:`gluonbench.report.exporters`):
each file is a pure function of the run folder's ``runs.jsonl`` (one line per cell,
``kind == "io"``) and ``sweep.json`` (the settings), so ``gluonbench report RUN_DIR``
rebuilds them at any time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from gluonbench.analysis.io_rules import recommend
from gluonbench.report.charts import Chart, new_figure
from gluonbench.report.exporters import (
    MarkdownTable,
    Report,
    Table,
    TableSyntax,
    fmt,
    machine_line,
    where_when,
)
from gluonbench.units import format_size

CSV_FIELDS = [
    "mode",
    "size",
    "layout",
    "store",
    "status",
    "data_bytes",
    "objects",
    "samples",
    "startup_s",
    "list_s",
    "copy_s",
    "index_s",
    "producer_s",
    "read_mb_per_s",
    "samples_per_s",
    "epochs_mb_per_s",
    "epochs_samples_per_s",
    "total_s",
    "disk_used",
    "peak_mem_mb",
    "cpu_util_pct",
    "page_cache",
    "cache_method",
    "resident_before",
    "emulated_step_ms",
    "au",
    "au_passes",
    "error",
]


@dataclass
class IoSummary:
    rows: list[dict[str, Any]]
    advice: list[dict[str, str]]
    env: dict[str, Any]
    command: str
    started_utc: str
    finished_utc: str
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def io_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("kind") == "io"]


def summarise_io(records: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> IoSummary:
    rows = io_records(records)
    ok = [r for r in rows if r.get("status") == "ok"]
    return IoSummary(
        rows=rows,
        advice=[asdict(a) for a in recommend(ok)],
        env=next((r.get("env") for r in rows if r.get("env")), {}) or {},
        command=(settings or {}).get("command") or (rows[0].get("command", "") if rows else ""),
        started_utc=min((r.get("started_utc", "") for r in rows if r.get("started_utc")), default=""),
        finished_utc=max((r.get("finished_utc", "") for r in rows if r.get("finished_utc")), default=""),
        settings=settings or {},
    )


def _flat(r: dict[str, Any]) -> dict[str, Any]:
    c, o, s = r["cell"], r.get("open") or {}, r.get("system") or {}
    epochs = r.get("epochs") or []
    return {
        "mode": c["mode"],
        "size": c["size"],
        "layout": c["layout"],
        "store": c["store"],
        "status": r.get("status"),
        "data_bytes": c["data_bytes"],
        "objects": c["objects"],
        "samples": o.get("samples", ""),
        "startup_s": r.get("startup_s"),
        "list_s": o.get("list_s", ""),
        "copy_s": o.get("copy_s", ""),
        "index_s": o.get("index_s", ""),
        "producer_s": o.get("producer_s", ""),
        "read_mb_per_s": r.get("read_mb_per_s"),
        "samples_per_s": r.get("samples_per_s"),
        "epochs_mb_per_s": ";".join(f"{e['mb_per_s']:.1f}" for e in epochs),
        "epochs_samples_per_s": ";".join(f"{e['samples_per_s']:.0f}" for e in epochs),
        "total_s": r.get("total_s"),
        "disk_used": r.get("disk_used"),
        "peak_mem_mb": s.get("peak_mem_bytes", 0) / 2**20 if s else "",
        "cpu_util_pct": s.get("cpu_util_pct", ""),
        "page_cache": r.get("page_cache"),
        "cache_method": r.get("cache_method"),
        "resident_before": r.get("resident_before"),
        "emulated_step_ms": (r.get("emulated") or {}).get("step_ms", ""),
        "au": (r.get("emulated") or {}).get("au", ""),
        "au_passes": (r.get("emulated") or {}).get("passes", ""),
        "error": r.get("error") or "",
    }


def csv_table(summary: IoSummary) -> Table:
    """One row per cell in plain values (``io.csv``)."""
    return Table(list(CSV_FIELDS), [list(_flat(r).values()) for r in summary.rows])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def _au(emulated: dict[str, Any] | None) -> str:
    if not emulated:
        return "-"
    return f"{_pct(emulated['au'])} ({'pass' if emulated['passes'] else 'below 90 %'})"


def to_markdown(summary: IoSummary, tables: TableSyntax | None = None) -> str:
    """The matrix as a document (``io.md``), ending with seed 004's recommendation from the numbers."""
    tables = tables or MarkdownTable()
    s = summary.settings
    store = "S3 " + str(s.get("s3_uri")) + (f" at {s.get('endpoint_url')}" if s.get("endpoint_url") else "")
    lines = [
        "# gluonbench io: input modes x data set size x file layout",
        "",
        f"- Machine: {machine_line(summary)}",
        f"- Date (UTC): {summary.started_utc} to {summary.finished_utc}",
        f"- Command: `{summary.command}`",
        f"- Store: {store if s.get('s3_uri') else 'local folder'}; stage: {s.get('stage')} "
        f"({'bytes read, nothing else' if s.get('stage') == 'read' else 'read, decoded and transformed'}); "
        f"epochs {s.get('epochs')}; batch {s.get('batch_size')}; {s.get('threads')} reader threads; "
        f"shuffle {s.get('shuffle')}; page cache {s.get('page_cache')}",
        f"- Data sets: {s.get('datasets_note', '')}",
    ]
    emulated = next((r["emulated"] for r in summary.rows if r.get("emulated")), None)
    if emulated:
        lines.append(
            f"- Step: {emulated['text']} (DLIO's method): *AU* is the accelerator utilisation, "
            f"emulated compute time / total time over the epochs; DLIO passes a run at AU >= "
            f"{emulated['pass_line']:.0%}"
        )
    lines += [
        "",
        "*start-up* is the time to the first batch (listing, File mode's copy, the Pipe producer's start, the first "
        "read); *MB/s* and *samples/s* are over all epochs (per epoch in brackets); *total* includes start-up; "
        "*disk* is local disk the mode needed (File mode's copy).",
        "",
    ]
    matrix = Table(
        [
            "data set",
            "layout",
            "mode",
            "objects",
            "start-up (s)",
            "copy (s)",
            "MB/s [per epoch]",
            "samples/s",
            "total (s)",
            "disk",
            "cache before",
        ]
        + (["AU"] if emulated else []),
        align="lllrrrrrrrr" + ("r" if emulated else ""),
    )
    for r in summary.rows:
        c = r["cell"]
        label = f"{c['size']} ({format_size(c['data_bytes'])})"
        if r.get("status") != "ok":
            matrix.rows.append(
                [label, c["layout"], c["mode"], c["objects"], f"failed: {r.get('error')}"]
                + ["-"] * (len(matrix.columns) - 5)
            )
            continue
        epochs = ", ".join(f"{e['mb_per_s']:.0f}" for e in r["epochs"])
        copy = r["open"].get("copy_s") or 0
        matrix.rows.append(
            [
                label,
                c["layout"],
                c["mode"],
                c["objects"],
                fmt(r["startup_s"], 3),
                fmt(copy, 3) if copy else "-",
                f"{r['read_mb_per_s']:.0f} [{epochs}]",
                f"{r['samples_per_s']:.0f}",
                fmt(r["total_s"], 3),
                format_size(r["disk_used"]) if r["disk_used"] else "-",
                _pct(r.get("resident_before")),
            ]
            + ([_au(r.get("emulated"))] if emulated else [])
        )
    lines += [tables.render(matrix).rstrip("\n")]
    lines += ["", "## Recommendation (from the numbers above, seed 004's rules)", ""]
    lines += [f"- {a['text']}" for a in summary.advice] or ["- no cell finished; nothing to recommend"]
    methods = sorted({str(r.get("cache_method")) for r in summary.rows if r.get("cache_method")})
    lines += [
        "",
        "## Notes",
        "",
        f"- Page cache before each cell: {'; '.join(methods) or '-'}. *cache before* is the share of the origin's "
        "pages resident (mincore) as the cell started; a virtual machine's host may cache the disk further.",
        "- Sizes are scaled to run in minutes: the real-world shard size is 150 MB (seed 004) and data sets there "
        "are GBs to TBs; pass --small/--large/--shard-size/--file-size to measure at other scales, or --src to "
        "measure your own image folder.",
    ]
    failures = [r for r in summary.rows if r.get("status") != "ok"]
    if failures:
        lines += ["", "## Failed cells", ""] + [
            f"- {r['cell']['mode']}/{r['cell']['size']}/{r['cell']['layout']}: {r.get('error')}" for r in failures
        ]
    return "\n".join(lines) + "\n"


def figure(summary: IoSummary) -> Any:
    """The io chart (``io.png``, and the HTML page's): read MB/s over all epochs and the start-up to the first
    batch of each finished cell, grouped by data set and layout, one bar per input mode; axes from zero."""
    rows = [r for r in summary.rows if r.get("status") == "ok"]
    groups = sorted({(r["cell"]["size"], r["cell"]["layout"]) for r in rows}, key=lambda g: (g[0] != "small", g))
    modes = [m for m in ("file", "fastfile", "pipe") if any(r["cell"]["mode"] == m for r in rows)]
    fig = new_figure(6.5, 8.5)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    width = 0.8 / max(len(modes), 1)
    colors = {"file": "tab:blue", "fastfile": "tab:orange", "pipe": "tab:green"}
    for i, mode in enumerate(modes):
        xs, mbs, starts = [], [], []
        for j, (size, layout) in enumerate(groups):
            r = next((r for r in rows if (r["cell"]["mode"], r["cell"]["size"], r["cell"]["layout"]) ==
                      (mode, size, layout)), None)  # fmt: skip
            if r is None:
                continue
            xs.append(j + (i - (len(modes) - 1) / 2) * width)
            mbs.append(r["read_mb_per_s"])
            starts.append(r["startup_s"])
        ax1.bar(xs, mbs, width, label=mode, color=colors[mode])
        ax2.bar(xs, starts, width, label=mode, color=colors[mode])
    ax1.set_ylabel("read MB/s (all epochs)")
    ax2.set_ylabel("start-up to first batch (s)")
    ax2.set_xticks(range(len(groups)))
    ax2.set_xticklabels([f"{size}\n{layout}" for size, layout in groups])
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, axis="y")
    ax1.legend(title="input mode")
    env = summary.env
    fig.suptitle(
        f"gluonbench io ({summary.settings.get('stage', 'read')} stage): {str(env.get('cpu', '?'))[:40]} "
        f"({env.get('cores_usable') or env.get('cores_logical', '?')} {'usable' if env.get('cores_usable') else 'logical'} "
        f"cores), {summary.started_utc[:10]}, one run per cell",
        fontsize=9,
    )
    return fig


class IoReport(Report):
    """An io benchmark's run folder: one row per (data set, layout, mode) cell (``kind == "io"`` records)."""

    kind = "io"
    files: ClassVar[dict[str, str]] = {
        "csv": "io.csv",
        "markdown": "io.md",
        "json": "io.json",
        "png": "io.png",
        "html": "report.html",
    }

    def __init__(self, summary: IoSummary) -> None:
        self.summary = summary

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> IoReport:
        return cls(summarise_io(records, settings))

    def table(self) -> Table:
        return csv_table(self.summary)

    def document(self, tables: TableSyntax) -> str:
        return to_markdown(self.summary, tables)

    png_chart = "throughput"

    def charts(self) -> list[Chart]:
        """The read throughput and start-up per cell (``io.png``); none when no cell finished."""
        if not any(r.get("status") == "ok" for r in self.summary.rows):
            return []
        return [Chart("throughput", "Read MB/s and start-up per cell", lambda: figure(self.summary))]

    def html_title(self) -> str:
        return f"gluonbench io: input modes ({self.summary.settings.get('stage', 'read')} stage)"

    def html_subtitle(self) -> str:
        return where_when(self.summary.env, self.summary.started_utc)
