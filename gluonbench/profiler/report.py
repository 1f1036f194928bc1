"""The profile report: one self-contained ``report.html`` (inline SVG, no network), written like every run
folder's report by the one HTML exporter (:class:`ProfileReport`)."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np

from gluonbench.errors import GluonbenchError
from gluonbench.profiler.data import NodeMetrics, ProfileData
from gluonbench.profiler.rules.base import RuleReport
from gluonbench.report.exporters import Report, Table, TableSyntax

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MAX_POINTS = 800


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


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values (1, 2, 2.5 or 5 times a power of ten) covering ``lo..hi``."""
    span = hi - lo
    if not (np.isfinite(span) and span > 0):
        return [lo]
    raw = span / max(n, 1)
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = np.floor(lo / step) * step
    ticks = [float(round(first + i * step, 10)) for i in range(int(np.ceil((hi - first) / step)) + 1)]
    return [t for t in ticks if lo - 1e-9 * span <= t <= hi + 1e-9 * span] or [lo]


def nice_max(v: float) -> float:
    """The smallest round tick at or above ``v`` (the top of an axis that starts at zero)."""
    if not (np.isfinite(v) and v > 0):
        return 1.0
    step = nice_ticks(0.0, v, 4)
    return step[-1] if step[-1] >= v else step[-1] + (step[1] - step[0] if len(step) > 1 else v)


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(x) <= MAX_POINTS:
        return x, y
    idx = np.linspace(0, len(x) - 1, MAX_POINTS).astype(int)
    return x[idx], y[idx]


def line_chart(
    title: str,
    series: list[tuple[str, np.ndarray, np.ndarray]],
    unit: str = "",
    x_label: str = "seconds since job start",
    width: int = 940,
    height: int = 170,
    y_max: float | None = None,
) -> str:
    """An SVG line chart; ``series`` are (label, x, y)."""
    series = [(n, np.asarray(x, float), np.asarray(y, float)) for n, x, y in series if len(x)]
    if not series:
        return f'<p class="note">{_esc(title)}: no data.</p>'
    left, right, top, bottom = 60, 200, 22, 30
    pw, ph = width - left - right, height - top - bottom
    x0 = min(float(x.min()) for _, x, _ in series)
    x1 = max(float(x.max()) for _, x, _ in series)
    ymax = y_max if y_max is not None else nice_max(max(float(np.nanmax(y)) for _, _, y in series))
    ymax = ymax if ymax > 0 else 1.0
    xs = max(x1 - x0, 1e-9)
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="{_esc(title)}">',
        f'<text x="{left}" y="14" font-weight="600">{_esc(title)}{" (" + _esc(unit) + ")" if unit else ""}</text>',
    ]
    for yv in nice_ticks(0.0, ymax, 4):
        yy = top + ph - ph * yv / ymax
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{_fmt(yv)}</text>')
    for xv in nice_ticks(x0, x1, 6):
        xx = left + pw * (xv - x0) / xs
        parts.append(f'<text x="{xx:.1f}" y="{top + ph + 14}" text-anchor="middle">{_fmt(xv)}</text>')
    parts.append(
        f'<text x="{left + pw / 2}" y="{height - 2}" text-anchor="middle" class="muted">{_esc(x_label)}</text>'
    )
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#ccc"/>')
    # the legend lists what fits beside the plot (one line kept for "+N more"); long labels are shortened
    # to the column's width, the full label in the tooltip
    rows = max(1, int((ph - 4) // 14) + 1)
    fits = len(series) if len(series) <= rows else rows - 1
    for k, (label, x, y) in enumerate(series):
        x, y = _thin(x, y)
        pts = " ".join(
            f"{left + pw * (a - x0) / xs:.1f},{top + ph - ph * min(max(b, 0.0), ymax) / ymax:.1f}"
            for a, b in zip(x, y, strict=True)
        )
        color = COLORS[k % len(COLORS)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.3" points="{pts}"/>')
        if k < fits:
            ly = top + 10 + 14 * k
            short = label if len(label) <= 27 else label[:26] + "…"
            parts.append(f'<rect x="{left + pw + 10}" y="{ly - 8}" width="10" height="3" fill="{color}"/>')
            parts.append(f'<text x="{left + pw + 24}" y="{ly}"><title>{_esc(label)}</title>{_esc(short)}</text>')
    if len(series) > fits:
        ly = top + 10 + 14 * fits
        parts.append(f'<text x="{left + pw + 10}" y="{ly}" class="muted">+{len(series) - fits} more</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    title: str,
    values: np.ndarray,
    limit: float | None,
    unit: str = "ms",
    bins: int = 40,
    width: int = 940,
    height: int = 170,
) -> str:
    """An SVG histogram; bars beyond ``limit`` (outliers) in red, the limit as a dashed line.

    The axis covers the bulk of the values (to the 99th percentile, and the limit); the few beyond it (a
    slow first step) are counted in one last bar marked with their maximum, so they do not squash the rest.
    """
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not len(values):
        return f'<p class="note">{_esc(title)}: no data.</p>'
    vmin, vmax = float(values.min()), float(values.max())
    view_hi = float(np.percentile(values, 99)) * 1.1
    if limit is not None and np.isfinite(limit):
        view_hi = max(view_hi, limit * 1.05)
    view_hi = min(view_hi, vmax)
    ticks = nice_ticks(vmin, view_hi, 6) if view_hi > vmin else [vmin]
    lo = min(ticks[0], vmin)
    hi = max(ticks[-1], view_hi) if len(ticks) > 1 else vmax
    if not hi > lo:
        hi = lo + max(abs(lo) * 0.1, 1e-9)
    overflow = values[values > hi]
    counts, edges = np.histogram(values[values <= hi], bins=bins, range=(lo, hi))
    counts = list(counts)
    if len(overflow):
        counts.append(len(overflow))
    left, right, top, bottom = 60, 20, 22, 30
    pw, ph = width - left - right, height - top - bottom
    cmax = max(max(counts), 1)
    span = hi - lo
    bw = pw / len(counts)
    pw_main = bw * bins
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="{_esc(title)}">',
        f'<text x="{left}" y="14" font-weight="600">{_esc(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#ccc"/>',
    ]
    for i, c in enumerate(counts):
        h = ph * c / cmax
        over = i >= bins
        color = "#d62728" if over or (limit is not None and edges[i] >= limit) else "#1f77b4"
        tip = (
            f"&gt; {_fmt(hi)} {unit} (up to {_fmt(vmax)}): {c}"
            if over
            else f"{_fmt(edges[i])}-{_fmt(edges[i + 1])} {unit}: {c}"
        )
        parts.append(
            f'<rect x="{left + i * bw + 0.5:.1f}" y="{top + ph - h:.1f}" width="{max(bw - 1, 0.5):.1f}" '
            f'height="{h:.1f}" fill="{color}"><title>{tip}</title></rect>'
        )
    for xv in ticks:
        if lo <= xv <= hi:
            parts.append(
                f'<text x="{left + pw_main * (xv - lo) / span:.1f}" y="{top + ph + 14}" text-anchor="middle">'
                f"{_fmt(xv)}</text>"
            )
    if len(overflow):
        # above the plot, right-aligned over the overflow bar (clear of the tick labels)
        parts.append(
            f'<text x="{left + pw:.1f}" y="14" text-anchor="end" fill="#d62728">'
            f"last bar: {len(overflow)} step(s) &gt; {_fmt(hi)} {_esc(unit)} (max {_fmt(vmax)})</text>"
        )
    parts.append(f'<text x="{left - 6}" y="{top + 8}" text-anchor="end">{cmax}</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{height - 2}" text-anchor="middle" class="muted">{_esc(unit)}</text>')
    if limit is not None and lo <= limit <= hi:
        lx = left + pw_main * (limit - lo) / span
        parts.append(
            f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="{top}" y2="{top + ph}" stroke="#d62728" stroke-dasharray="4 3"/>'
        )
        parts.append(f'<text x="{lx + 4:.1f}" y="{top + 12}" fill="#d62728">outlier limit</text>')
    parts.append("</svg>")
    return "".join(parts)


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

    out.append(line_chart("CPU utilisation per core", dim("CPUUtilization"), "%", y_max=100))
    out.append(line_chart("I/O wait per core", dim("I/OWaitPercentage"), "%"))
    if node.gpus:
        out.append(line_chart("GPU utilisation", dim("GPUUtilization"), "%", y_max=100))
        out.append(line_chart("GPU memory utilisation", dim("GPUMemoryUtilization"), "%", y_max=100))
    else:
        out.append('<p class="note">GPU: no GPU rows for this node.</p>')
    out.append(line_chart("Memory used", named("MemoryUsedPercent"), "%", y_max=100))
    out.append(line_chart("Disk", named("ReadThroughputInBytesPerSecond", "WriteThroughputInBytesPerSecond"), "B/s"))
    out.append(line_chart("Network", named("ReceiveBytesPerSecond", "TransmitBytesPerSecond"), "B/s"))
    out.append(line_chart("Training processes", named("ProcessCount", "WorkerCount", dimension="Training"), "count"))
    out.append(line_chart("CPU per process (root first; 100 % = one core)", dim("ProcessCPUPercent"), "%"))
    out.append(line_chart("PSS per process", dim("ProcessPSSBytes"), "bytes"))
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
        bar = _phase_bar(
            [("initialisation", init, "#9e9e9e"), ("training loop", loop, "#1f77b4"), ("finalisation", fin, "#ff7f0e")]
        )
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


def _phase_bar(parts: list[tuple[str, float, str]], width: int = 940) -> str:
    total = sum(max(p[1], 0) for p in parts) or 1.0
    x = 0.0
    out = [f'<svg width="{width}" height="38" role="img" aria-label="job phases">']
    for label, v, color in parts:
        w = width * max(v, 0) / total
        out.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="18" fill="{color}"><title>{label}: {v:.2f} s</title></rect>'
        )
        if w > 80:
            out.append(f'<text x="{x + 4:.1f}" y="32">{_esc(label)} {v:.1f} s</text>')
        x += w
    out.append("</svg>")
    return "".join(out)


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
    out = [histogram(f"Step duration ({len(dur)} steps, {n_out} beyond mean + 3 sigma = {limit:.2f} ms)", dur, limit)]
    idx = np.array([s.step_num for s in steps], float)
    series = [("step", idx, dur)]
    if any(s.wait_s is not None for s in steps):
        series.append(("data wait", idx, np.array([(s.wait_s or 0.0) for s in steps]) * 1e3))
    out.append(line_chart("Step duration and data wait per step", series, "ms", x_label="step"))
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
    """The report's sections as HTML (inline SVG, no script): the body of its ``report.html``."""
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
    as every run folder's report, its sections rendered here as HTML with inline SVG.
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
