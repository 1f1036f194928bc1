"""The profile report: one self-contained ``report.html`` (no network), written like every run folder's
report by the one HTML exporter (:class:`ProfileReport`); its charts are matplotlib figures inlined as SVG
through the one chart helper (:mod:`gluonbench.report.charts`)."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np

from gluonbench.errors import GluonbenchError
from gluonbench.profiler.data import NodeMetrics, ProfileData
from gluonbench.profiler.rules.base import RuleReport
from gluonbench.report.charts import Chart, chart_html, heading, new_figure
from gluonbench.report.exporters import Report, Table, TableSyntax

MAX_POINTS = 800
LEGEND_ROWS = 9
"""a timeline's legend lists this many series (one line kept for "+N more" when there are more)"""


def _esc(v: Any) -> str:
    return html.escape(str(v))


def _utc(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "-"


def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    if a >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.3g}"


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(x) <= MAX_POINTS:
        return x, y
    idx = np.linspace(0, len(x) - 1, MAX_POINTS).astype(int)
    return x[idx], y[idx]


def _chart(name: str, title: str, draw: Callable[[], Any] | None) -> str:
    """The chart inlined as SVG (the one chart helper every report uses), or a note when there is no data."""
    if draw is None:
        return f'<p class="note">{_esc(title)}: no data.</p>'
    return chart_html(Chart(name, title, draw))


def line_figure(
    title: str,
    series: list[tuple[str, np.ndarray, np.ndarray]],
    unit: str = "",
    x_label: str = "seconds since job start",
    y_max: float | None = None,
) -> Any:
    """A timeline: ``series`` are (label, x, y), y from zero (to ``y_max`` when given, e.g. 100 %); the legend
    beside it names what fits, long labels shortened."""
    from matplotlib.ticker import FuncFormatter

    fig = new_figure(2.2)
    heading(fig, f"{title}{' (' + unit + ')' if unit else ''}")
    ax = fig.add_subplot()
    fits = len(series) if len(series) <= LEGEND_ROWS else LEGEND_ROWS - 1
    for k, (label, x, y) in enumerate(series):
        x, y = _thin(np.asarray(x, float), np.asarray(y, float))
        short = label if len(label) <= 27 else label[:26] + "…"
        ax.plot(x, y, linewidth=1.1, color=f"C{k % 10}", label=short if k < fits else None)
    ax.set_ylim(0, y_max * 1.04 if y_max is not None else None)  # a line at the top stays visible above the frame
    ax.set_xlabel(x_label, fontsize=8, color="#555")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _fmt(v)))
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    if len(series) > fits:
        ax.text(1.02, 1.0 - 0.105 * (fits + 0.6), f"+{len(series) - fits} more", transform=ax.transAxes,
                fontsize=7, color="#777", va="top")  # fmt: skip
    legend.set_in_layout(True)
    return fig


def line_chart(
    name: str,
    title: str,
    series: list[tuple[str, np.ndarray, np.ndarray]],
    unit: str = "",
    x_label: str = "seconds since job start",
    y_max: float | None = None,
) -> str:
    """:func:`line_figure` inlined as SVG, or a note when no series has data."""
    series = [(n, np.asarray(x, float), np.asarray(y, float)) for n, x, y in series if len(x)]
    draw = (lambda: line_figure(title, series, unit, x_label, y_max)) if series else None
    return _chart(name, title, draw)


def histogram_figure(title: str, values: np.ndarray, limit: float | None, unit: str = "ms", bins: int = 40) -> Any:
    """A histogram; bars beyond ``limit`` (outliers) in red, the limit as a dashed line.

    The axis covers the bulk of the values (to the 99th percentile, and the limit); the few beyond it (a
    slow first step) are counted in one last bar marked with their maximum, so they do not squash the rest.
    """
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    vmin, vmax = float(values.min()), float(values.max())
    view_hi = float(np.percentile(values, 99)) * 1.1
    if limit is not None and np.isfinite(limit):
        view_hi = max(view_hi, limit * 1.05)
    hi = min(view_hi, vmax)
    lo = vmin
    if not hi > lo:
        hi = lo + max(abs(lo) * 0.1, 1e-9)
    overflow = values[values > hi]
    counts, edges = np.histogram(values[values <= hi], bins=bins, range=(lo, hi))
    width = edges[1] - edges[0]
    fig = new_figure(2.2)
    heading(fig, title)
    ax = fig.add_subplot()
    red = [limit is not None and e >= limit for e in edges[:-1]]
    ax.bar(edges[:-1], counts, width=width * 0.9, align="edge", color=["#d62728" if r else "#1f77b4" for r in red])
    if len(overflow):
        ax.bar([hi + width * 0.5], [len(overflow)], width=width * 0.9, align="edge", color="#d62728")
        ax.text(1.0, 1.02, f"last bar: {len(overflow)} step(s) > {_fmt(hi)} {unit} (max {_fmt(vmax)})",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8, color="#d62728")  # fmt: skip
    if limit is not None and lo <= limit <= hi:
        ax.axvline(limit, color="#d62728", linestyle="--", linewidth=1)
        ax.text(limit, 0.97, " outlier limit", transform=ax.get_xaxis_transform(), va="top", fontsize=8,
                color="#d62728")  # fmt: skip
    ax.set_xlim(lo, hi + (width * 1.5 if len(overflow) else 0))
    ax.set_xlabel(unit, fontsize=8, color="#555")
    ax.set_ylabel("steps", fontsize=8, color="#555")
    ax.tick_params(labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig


def phase_figure(parts: list[tuple[str, float, str]]) -> Any:
    """The job's phases as one bar of their durations, each named with its seconds in the legend."""
    fig = new_figure(1.0)
    ax = fig.add_subplot()
    total = sum(max(v, 0) for _, v, _ in parts) or 1.0
    left = 0.0
    for label, v, color in parts:
        ax.barh(0, max(v, 0), left=left, height=0.8, color=color, label=f"{label} {v:.2f} s")
        left += max(v, 0)
    ax.set_xlim(0, total)
    ax.set_ylim(-0.45, 0.45)
    ax.set_yticks([])
    ax.set_xlabel("seconds since job start", fontsize=8, color="#555")
    ax.tick_params(labelsize=8)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(parts), fontsize=8, frameon=False)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return fig


def _rel(data: ProfileData, ts: np.ndarray) -> np.ndarray:
    return ts - data.start


def _timelines(data: ProfileData, node: NodeMetrics) -> str:
    out = []

    def dim(d: str) -> list:
        return [(n, _rel(data, s.ts), s.values) for n, s in node.by_dimension(d).items()]

    def named(*names: str, dimension: str = "") -> list:
        rows = []
        for (n, d), s in node.series.items():
            if n in names and (not dimension or d == dimension):
                rows.append((n, _rel(data, s.ts), s.values))
        return rows

    n = node.node_id

    def chart(key: str, title: str, series: list, unit: str, y_max: float | None = None) -> str:
        return line_chart(f"{n}-{key}", title, series, unit, y_max=y_max)

    out.append(chart("cpu", "CPU utilisation per core", dim("CPUUtilization"), "%", 100))
    out.append(chart("iowait", "I/O wait per core", dim("I/OWaitPercentage"), "%"))
    if node.gpus:
        out.append(chart("gpu", "GPU utilisation", dim("GPUUtilization"), "%", 100))
        out.append(chart("gpumem", "GPU memory utilisation", dim("GPUMemoryUtilization"), "%", 100))
    else:
        out.append('<p class="note">GPU: no GPU rows for this node.</p>')
    out.append(chart("mem", "Memory used", named("MemoryUsedPercent"), "%", 100))
    out.append(chart("disk", "Disk", named("ReadThroughputInBytesPerSecond", "WriteThroughputInBytesPerSecond"), "B/s"))
    out.append(chart("net", "Network", named("ReceiveBytesPerSecond", "TransmitBytesPerSecond"), "B/s"))
    out.append(
        chart("procs", "Training processes", named("ProcessCount", "WorkerCount", dimension="Training"), "count")
    )
    out.append(chart("proccpu", "CPU per process (root first; 100 % = one core)", dim("ProcessCPUPercent"), "%"))
    out.append(chart("pss", "PSS per process", dim("ProcessPSSBytes"), "bytes"))
    return "".join(out)


def _job_summary(data: ProfileData) -> str:
    first, last = data.first_step, data.last_step_end
    total = data.end - data.start
    rows = [("Job start", _utc(data.start)), ("Job end", _utc(data.end)), ("Total", f"{total:.2f} s")]
    if first is not None and last is not None:
        init, loop, fin = first - data.start, last - first, data.end - last
        rows += [
            ("Initialisation (start to first step)", f"{init:.2f} s"),
            ("Training loop (first step to last step end)", f"{loop:.2f} s"),
            ("Finalisation (last step end to job end)", f"{fin:.2f} s"),
        ]
        phases = [
            ("initialisation", init, "#9e9e9e"),
            ("training loop", loop, "#1f77b4"),
            ("finalisation", fin, "#ff7f0e"),
        ]
        bar = _chart("phases", "job phases", lambda: phase_figure(phases))
    else:
        rows.append(("Training loop", "no step events (the script does not use gluonbench.profiler.step())"))
        bar = ""
    trains = data.train_steps()
    rows.append(("Steps", f"{len(trains)} train, {len(data.steps) - len(trains)} other"))
    meta = data.meta
    if meta.get("command"):
        rows.insert(0, ("Command", f"<code>{_esc(' '.join(meta['command']))}</code>"))
    if meta.get("exit_code") is not None:
        rows.append(("Exit code", _esc(meta["exit_code"]) + (" (interrupted)" if meta.get("interrupted") else "")))
    if meta.get("interval_ms"):
        rows.append(("Sampling interval", f"{meta['interval_ms']} ms"))
    if meta.get("sampler_cpu_s") is not None and total > 0:
        rows.append(
            (
                "Sampler cost",
                f"{meta['sampler_cpu_s']:.3f} CPU s ({100 * meta['sampler_cpu_s'] / total:.2f} % of one core)",
            )
        )
    body = "".join(
        f"<tr><th>{_esc(k)}</th><td>{v if k in ('Command', 'Exit code') else _esc(v)}</td></tr>" for k, v in rows
    )
    notes = "".join(f'<p class="note">{_esc(n)}</p>' for n in meta.get("notes", []))
    return f"<table>{body}</table>{bar}{notes}"


def _rules_table(reports: list[RuleReport]) -> str:
    rows = []
    for r in reports:
        if not r.applicable:
            status, cls, text = "not applicable", "na", r.reason
        elif r.triggered:
            status, cls, text = "triggered", "fired", r.recommendation
        else:
            status, cls, text = "ok", "ok", r.recommendation
        params = ", ".join(f"{k}={v}" for k, v in r.parameters.items()) or "-"
        rows.append(
            f'<tr><td><b>{_esc(r.rule)}</b><br><span class="muted">{_esc(r.description)}</span></td>'
            f'<td class="{cls}">{status}</td><td class="num">{r.violations}</td><td class="num">{r.datapoints}</td>'
            f"<td><code>{_esc(params)}</code></td><td>{_esc(text)}</td></tr>"
        )
    head = "<tr><th>Rule</th><th>Status</th><th>Violations</th><th>Datapoints</th><th>Parameters</th><th>Recommendation / reason</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _usage_table(reports: list[RuleReport]) -> str:
    usage = next((r for r in reports if r.rule == "OverallSystemUsage" and r.applicable), None)
    if usage is None:
        return '<p class="note">No system metrics.</p>'
    out = []
    for node_id, table in usage.details.items():
        rows = "".join(
            f"<tr><td>{_esc(label)}</td>"
            + "".join(f'<td class="num">{_fmt(q.get(k, 0.0))}</td>' for k in ("p50", "p95", "p99", "max"))
            + "</tr>"
            for label, q in table.items()
        )
        out.append(
            f"<h3>{_esc(node_id)}</h3><table><tr><th>Metric</th><th>p50</th><th>p95</th><th>p99</th><th>max</th></tr>{rows}</table>"
        )
    return "".join(out)


def _steps_section(data: ProfileData, reports: list[RuleReport]) -> str:
    steps = data.train_steps() or data.steps
    if not steps:
        return '<p class="note">No step events: add <code>with gluonbench.profiler.step():</code> around the step.</p>'
    dur = np.array([s.dur_s for s in steps]) * 1e3
    outlier = next((r for r in reports if r.rule == "StepOutlier"), None)
    limit = None
    if outlier and outlier.details:
        first = next(iter(outlier.details.values()))
        limit = first.get("limit_s", 0) * 1e3
    else:
        limit = float(dur.mean() + 3 * dur.std())
    n_out = int(np.count_nonzero(dur > limit))
    title = f"Step duration ({len(dur)} steps, {n_out} beyond mean + 3 sigma = {limit:.2f} ms)"
    finite = dur[np.isfinite(dur)]
    out = [_chart("steps-histogram", title, (lambda: histogram_figure(title, finite, limit)) if len(finite) else None)]
    idx = np.array([s.step_num for s in steps], float)
    series = [("step", idx, dur)]
    if any(s.wait_s is not None for s in steps):
        series.append(("data wait", idx, np.array([(s.wait_s or 0.0) for s in steps]) * 1e3))
    out.append(line_chart("steps", "Step duration and data wait per step", series, "ms", x_label="step"))
    return "".join(out)


def _dataloader_section(data: ProfileData, reports: list[RuleReport]) -> str:
    by = {r.rule: r for r in reports}
    rows = []
    dl, ib = by.get("Dataloader"), by.get("InputBound")
    for node_id, info in dl.details.items() if dl and dl.applicable else []:
        rows.append(
            (
                f"{node_id}: workers (median while training) / cores",
                f"{info['median_workers']:g} / {info['cores']} ({info['finding']})",
            )
        )
    if ib and ib.applicable and ib.details:
        d = ib.details
        rows.append(("Input share of step time", f"{d['input_share_pct']} % ({d['level']})"))
        rows.append(
            (
                "Data wait per step p50 / p95 / max",
                " / ".join(f"{d['wait_s'][k] * 1e3:.2f} ms" for k in ("p50", "p95", "max")),
            )
        )
        rows.append(("Step (compute) p50 / p95", " / ".join(f"{d['step_s'][k] * 1e3:.2f} ms" for k in ("p50", "p95"))))
    if not rows:
        return (
            '<p class="note">No DataLoader figures: wrap the loader with <code>gluonbench.profiler.wrap()</code>.</p>'
        )
    advice = [r.recommendation for r in (dl, ib) if r and r.applicable and r.recommendation]
    body = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>" + "".join(f"<p>{_esc(a)}</p>" for a in advice)


def operator_times(events: list[dict[str, Any]], top: int = 15) -> list[tuple[str, int, float]]:
    """(operator, calls, total seconds) from MXNet profiler ``B``/``E`` pairs, largest first."""
    open_: dict[tuple[Any, Any, str], list[float]] = {}
    totals: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") != "operator" or e.get("ph") not in ("B", "E"):
            continue
        key = (e.get("pid"), e.get("tid"), str(e.get("name")))
        if e["ph"] == "B":
            open_.setdefault(key, []).append(float(e["ts"]))
        elif open_.get(key):
            t = totals.setdefault(key[2], [0, 0.0])
            t[0] += 1
            t[1] += (float(e["ts"]) - open_[key].pop()) / 1e6
    return sorted(((k, int(v[0]), v[1]) for k, v in totals.items()), key=lambda r: -r[2])[:top]


def _operators_section(data: ProfileData) -> str:
    ops = operator_times(data.events)
    if not ops:
        return '<p class="note">No operator events (run with <code>gluonbench profile --mxnet-profiler</code>).</p>'
    rows = "".join(
        f'<tr><td>{_esc(n)}</td><td class="num">{c}</td><td class="num">{1e3 * t:.2f}</td></tr>' for n, c, t in ops
    )
    return f"<table><tr><th>Operator</th><th>Calls</th><th>Total ms</th></tr>{rows}</table>"


def render_body(data: ProfileData, reports: list[RuleReport]) -> str:
    """The report's sections as HTML (charts inlined as SVG, no script): the body of its ``report.html``."""
    fired = [r.rule for r in reports if r.triggered]
    parts = [
        f"<p class='note'>Rules triggered: {_esc(', '.join(fired) or 'none')}. "
        f"Nodes: {_esc(', '.join(data.nodes) or 'none')}.</p>",
        "<h2>Job summary</h2>",
        _job_summary(data),
        "<h2>Rules</h2>",
        _rules_table(reports),
        "<h2>System usage</h2>",
        _usage_table(reports),
        "<h2>Steps</h2>",
        _steps_section(data, reports),
        "<h2>DataLoader analysis</h2>",
        _dataloader_section(data, reports),
        "<h2>Operators (MXNet profiler)</h2>",
        _operators_section(data),
        "<h2>Timelines</h2>",
    ]
    for node in data.nodes.values():
        parts.append(f"<h3>{_esc(node.node_id)}</h3>")
        parts.append(_timelines(data, node))
    if not data.nodes:
        parts.append('<p class="note">No system metrics.</p>')
    return "".join(parts)


class ProfileReport(Report):
    """A profile folder (``gluonbench profile``): its rules and plots as ``report.html``.

    Built from the profile's files (``profiler-output/``, ``profile.json``) and the rule reports
    run over them, not from ``runs.jsonl``; written by the same :class:`~gluonbench.report.exporters.HtmlExporter`
    as every run folder's report, its sections rendered here as HTML with its charts inlined as SVG.
    """

    kind = "profile"
    files: ClassVar[dict[str, str]] = {"html": "report.html"}

    def __init__(self, data: ProfileData, reports: list[RuleReport]) -> None:
        self.profile = data
        self.reports = reports
        self.summary = {"name": data.root.name, "meta": data.meta, "rules": [r.to_dict() for r in reports]}

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> ProfileReport:
        raise GluonbenchError("a profile folder has no runs.jsonl; gluonbench report PROFILE_DIR rebuilds it")

    def data(self) -> dict[str, Any]:
        return self.summary

    def document(self, tables: TableSyntax) -> str:
        table = Table(["rule", "status", "violations", "datapoints", "recommendation / reason"], align="llrrl")
        for r in self.reports:
            status = "not applicable" if not r.applicable else "triggered" if r.triggered else "ok"
            table.rows.append(
                [r.rule, status, r.violations, r.datapoints, r.reason if not r.applicable else r.recommendation]
            )
        return f"# {self.html_title()}\n\n" + tables.render(table)

    def html_title(self) -> str:
        """What was profiled (the pipeline with its options, or the program's command), else the folder's name."""
        what = self.profile.meta.get("identity")
        if not isinstance(what, str) or not what.strip():
            command = self.profile.meta.get("command")
            what = " ".join(map(str, command)) if isinstance(command, list) and command else self.profile.root.name
        return f"gluonbench profile: {what}"

    def html_subtitle(self) -> str:
        return f"{self.profile.root.name}: {_utc(self.profile.start)} to {_utc(self.profile.end)}"

    def html_data(self) -> dict[str, Any]:
        """The rules' findings (the plots are in the body); the whole profile stays in its own files."""
        return {"name": self.profile.root.name, "rules": [r.to_dict() for r in self.reports]}

    def html_body(self) -> str:
        return render_body(self.profile, self.reports)
