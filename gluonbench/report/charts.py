"""The one chart implementation: matplotlib figures, saved as PNG files and inlined into HTML pages as SVG.

Each chart is one Python function that returns a matplotlib :class:`~matplotlib.figure.Figure`; a
:class:`Chart` names it. A report's PNG file is that figure saved as PNG (:func:`png_bytes`); its
``report.html`` inlines the same figure saved as SVG (:func:`chart_html`): no image file, no network,
text kept as text (``svg.fonttype`` ``none``) and the same bytes for the same data (a fixed
``svg.hashsalt``, no date). Figures are made without pyplot (no global figure list, so nothing to leak)
with the Agg canvas, and matplotlib is imported only when a chart is drawn, so the CLI starts without it.

The shared drawing pieces are here: :func:`new_figure`, :func:`heading`, :func:`hbars` (horizontal
bars from zero with 95 % CI whiskers) and :func:`stacked` (100 % stacked shares). The charts of a
diagnosis are here too (:func:`probe_chain_figure`, :func:`shares_figure`), drawn from its stored record.
"""

from __future__ import annotations

import html
import io
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
"""Series colours, in order (matplotlib's tab10)."""

SPLIT_COLORS = {"wait": "#d62728", "copy": "#ff7f0e", "compute": "#1f77b4", "kvstore": "#9467bd"}
"""The step split's colours: input wait, copy to device, compute, kvstore push/pull."""

WIDTH_IN = 9.4
"""A page chart's width in inches (about 900 CSS pixels: the page is 1000 wide)."""

DPI = 110
"""The resolution of PNG files."""


@dataclass(frozen=True)
class Chart:
    """One chart of a report: ``name`` (unique in its page, the SVG's element id) and the function drawing it."""

    name: str
    title: str
    draw: Callable[[], Any]
    """returns a new matplotlib Figure each call"""


def new_figure(height_in: float, width_in: float = WIDTH_IN) -> Any:
    """A new matplotlib Figure (Agg canvas, not registered with pyplot: dropping it frees it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in))
    FigureCanvasAgg(fig)
    return fig


def _finish(fig: Any) -> None:
    import warnings

    header = getattr(fig, "_gluonbench_header_in", 0.0)  # room for :func:`heading`'s lines
    with warnings.catch_warnings():  # a chart too small for its labels still saves; tight_layout only warns
        warnings.simplefilter("ignore")
        fig.tight_layout(rect=(0, 0, 1, 1 - header / fig.get_figheight()))


def png_bytes(fig: Any) -> bytes:
    """A figure as PNG bytes (laid out first; the figure is released)."""
    _finish(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    _release(fig)
    return buf.getvalue()


def svg_text(fig: Any, salt: str = "gluonbench") -> str:
    """A figure as an inline ``<svg>`` element: text as text, no XML prologue, no date, ids salted with
    ``salt`` (so two charts of one page do not share ids and the same data gives the same bytes)."""
    import matplotlib

    _finish(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    _release(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :].strip()
    # inline in HTML: no namespace declarations (the HTML parser knows svg and xlink:href), no RDF metadata,
    # and the element ids matplotlib numbers per figure (figure_1, axes_1, ...) made unique to this chart
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    text = re.sub(r'\s+xmlns(?::xlink)?="[^"]*"', "", text)
    return re.sub(r' id="([A-Za-z.]+_\d+)"', lambda m: f' id="{salt}-{m.group(1)}"', text)


def _release(fig: Any) -> None:
    """Drop what the figure holds (it was never registered with pyplot, so nothing else keeps it)."""
    fig.clear()


def chart_html(chart: Chart) -> str:
    """A chart as an HTML ``<figure>`` holding its inline SVG (``id="chart-NAME"``, labelled by its title)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", chart.name)
    svg = svg_text(chart.draw(), salt=f"gluonbench-{name}")
    label = html.escape(chart.title, quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
    return f'<figure class="chart" id="chart-{name}">{svg}</figure>'


def finite(v: Any) -> bool:
    """True for a real, finite number (not None, NaN or inf; not a bool)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def fmt(value: Any, digits: int = 4) -> str:
    """A number for a chart label (:func:`gluonbench.report.exporters.fmt`, four digits); ``-`` if not finite."""
    from gluonbench.report.exporters import fmt as number

    return number(value, digits) if finite(value) else "-"


def pct(value: Any, digits: int = 0) -> str:
    """A share as ``NN %``."""
    return f"{value * 100:.{digits}f} %" if finite(value) else "-"


def pct_ci(lo: Any, hi: Any) -> str:
    """A share's interval as ``[NN-MM %]``."""
    return f"[{lo * 100:.0f}-{hi * 100:.0f} %]"


def heading(fig: Any, title: str, sub: str = "", width: int = 150) -> None:
    """The chart's title (bold) with its subtitle (grey, wrapped) above the plot; the layout leaves them room."""
    lines = textwrap.wrap(sub, width) if sub else []
    height = fig.get_figheight()
    fig.text(0.01, 1 - 0.08 / height, title, ha="left", va="top", fontsize=10, fontweight="bold")
    if lines:
        fig.text(0.01, 1 - 0.3 / height, "\n".join(lines), ha="left", va="top", fontsize=8, color="#555")
    fig._gluonbench_header_in = 0.34 + 0.15 * len(lines)


@dataclass
class Bar:
    """One bar of :func:`hbars`: a value from zero, its 95 % interval (``lo``-``hi``), a note after it."""

    label: str
    value: Any = None
    lo: Any = None
    hi: Any = None
    color: str = PALETTE[0]
    bold: bool = False
    note: str = ""


def hbars(
    ax: Any,
    bars: Sequence[Bar],
    xlabel: str,
    fmt_value: Callable[[Any], str] = fmt,
    fmt_ci: Callable[[Any, Any], str] = lambda lo, hi: f"[{fmt(lo)}-{fmt(hi)}]",
    xmax: float | None = None,
    percent_axis: bool = False,
) -> None:
    """Horizontal bars from zero, first on top, each with its ``lo``-``hi`` whisker and its value written after
    it; a bar without a value shows its note only (``not measured`` by default)."""
    n = len(bars)
    top = xmax or max([0.0, *(v for b in bars for v in (b.value, b.hi) if finite(v))]) or 1.0
    for i, b in enumerate(bars):
        y = n - 1 - i
        if not finite(b.value):
            ax.annotate(b.note or "not measured", (0, y), xytext=(5, 0), textcoords="offset points", va="center",
                        fontsize=8, color="#666")  # fmt: skip
            continue
        ax.barh(y, max(b.value, 0), height=0.62, color=b.color, alpha=0.85)
        end = b.value
        ci = finite(b.lo) and finite(b.hi)
        if ci:
            lo, hi = min(max(b.lo, 0), top), min(b.hi, top)
            ax.errorbar([b.value], [y], xerr=[[max(b.value - lo, 0)], [max(hi - b.value, 0)]], fmt="none",
                        ecolor="#222", elinewidth=1, capsize=4)  # fmt: skip
            end = max(end, hi)
        text = fmt_value(b.value) + (" " + fmt_ci(b.lo, b.hi) if ci else "") + (f", {b.note}" if b.note else "")
        ax.annotate(text, (min(end, top), y), xytext=(5, 0), textcoords="offset points", va="center", fontsize=8,
                    annotation_clip=False)  # fmt: skip
    ax.set_yticks(range(n))
    ax.set_yticklabels([b.label for b in reversed(bars)], fontsize=8)
    for tick, b in zip(ax.get_yticklabels(), reversed(bars), strict=True):
        if b.bold:
            tick.set_fontweight("bold")
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, top if xmax else top * 1.04)
    ax.set_xlabel(xlabel, fontsize=8, color="#555")
    ax.tick_params(axis="x", labelsize=8)
    if percent_axis:
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xticklabels(["0 %", "25 %", "50 %", "75 %", "100 %"])
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def bars_height(n: int, heading_lines: int = 2) -> float:
    """A figure height (inches) for ``n`` bars under a heading."""
    return 0.75 + 0.17 * heading_lines + 0.3 * max(n, 1)


def bars_figure(bars: Sequence[Bar], title: str, sub: str, xlabel: str = "samples/s") -> Any:
    """A figure of one :func:`hbars` chart under its :func:`heading`, as tall as its bars need."""
    fig = new_figure(bars_height(len(bars)))
    heading(fig, title, sub)
    hbars(fig.add_subplot(), bars, xlabel)
    return fig


def stacked(ax: Any, labels: Sequence[str], parts: Sequence[Sequence[Any] | None], names: Sequence[str],
            colors: Sequence[str]) -> None:  # fmt: skip
    """100 % stacked horizontal bars, first on top: each row's parts as shares of its sum, labelled where wide
    enough; a row without parts says ``not recorded``."""
    n = len(labels)
    for i, (label, row) in enumerate(zip(labels, parts, strict=True)):
        y = n - 1 - i
        values = [v if finite(v) and v > 0 else 0.0 for v in (row or [])]
        total = sum(values)
        if not total:
            ax.text(0.01, y, f"{label}: not recorded", va="center", fontsize=8, color="#666")
            continue
        left = 0.0
        for k, v in enumerate(values):
            share = v / total
            if share <= 0:
                continue
            ax.barh(y, share, left=left, height=0.62, color=colors[k])
            if share >= 0.06:
                ax.text(left + share / 2, y, pct(share), ha="center", va="center", fontsize=8, color="white")
            left += share
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(reversed(labels)), fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xticklabels(["0 %", "25 %", "50 %", "75 %", "100 %"], fontsize=8)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=n) for n, c in zip(names, colors, strict=True)], loc="lower left",
              bbox_to_anchor=(0, 1.0), ncol=len(names), fontsize=8, frameon=False)  # fmt: skip
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def stacked_figure(title: str, sub: str, labels: Sequence[str], parts: Sequence[Sequence[Any] | None],
                   names: Sequence[str], colors: Sequence[str]) -> Any:  # fmt: skip
    """A figure of one :func:`stacked` chart under its heading."""
    fig = new_figure(bars_height(len(labels), 3) + 0.3)
    heading(fig, title, sub)
    stacked(fig.add_subplot(), labels, parts, names, colors)
    return fig


def repeats_text(counts: Sequence[int], what: str) -> str:
    """How many repeats each point is the median of, and what its whiskers are."""
    if not counts or max(counts) <= 1:
        return f"one run per {what} (no spread measured)"
    lo, hi = min(counts), max(counts)
    return f"median of {hi if lo == hi else f'{lo}-{hi}'} repeats; whiskers: min-max"


# -- a diagnosis ------------------------------------------------------------------------------------------

STAGE_ORDER = ("preprocessing", "disk_io", "gpu_io")
SUBSTAGE_ORDER = ("preprocessing", "read", "loader", "copy", "compute")


def ordered(keys: Sequence[str], order: Sequence[str]) -> list[str]:
    """``keys`` with those named in ``order`` first, in that order, then the rest as they come."""
    return [k for k in order if k in keys] + [k for k in keys if k not in order]


def _pair(v: Any) -> tuple[Any, Any]:
    return (v[0], v[1]) if isinstance(v, list | tuple) and len(v) == 2 else (None, None)


def probe_chain_figure(identity: str, diagnosis: dict[str, Any], probe_order: Sequence[str]) -> Any:
    """Samples/s of each probe of a diagnosis, in pipeline order, each with its 95 % CI; a probe that is the
    same pipeline as another says so."""
    probes = diagnosis.get("probes") or {}
    order = [k for k in probe_order if k in probes] + [k for k in probes if k not in probe_order]
    bars = []
    for i, k in enumerate(order):
        p = probes.get(k) or {}
        if p.get("same_as"):
            bars.append(Bar(k, note=f"= {p['same_as']} (the same pipeline here)"))
            continue
        lo, hi = _pair(p.get("samples_per_s_ci"))
        bars.append(Bar(k, p.get("samples_per_s"), lo, hi, PALETTE[i % len(PALETTE)], bold=k == "full"))
    rounds = diagnosis.get("rounds")
    over = f" over {rounds} interleaved round{'' if rounds == 1 else 's'}" if finite(rounds) else ""
    return bars_figure(
        bars,
        f"{identity}: samples/s of each probe, in pipeline order",
        f"each probe swaps stages for ready-made stand-ins; median with its 95 % CI{over}; axis from zero",
    )


def shares_figure(identity: str, diagnosis: dict[str, Any], labels: dict[str, str] | None = None) -> Any:
    """The shares of the step time each stage's removal saves (and the sub-stages, when measured), each with
    its 95 % interval, on a 0-100 % axis."""
    panels = []
    shares, stages = diagnosis.get("shares") or {}, diagnosis.get("stages") or {}
    if shares:
        panels.append(("Shares of the step time", shares, diagnosis.get("share_ci") or {}, STAGE_ORDER, labels or {}))
    if stages:
        title = "Sub-stages, each measured by its own probe"
        panels.append((title, stages, diagnosis.get("stage_ci") or {}, SUBSTAGE_ORDER, {}))
    rows = sum(len(p[1]) for p in panels)
    fig = new_figure(bars_height(rows) + 0.55 * (len(panels) - 1))
    heading(fig, f"{identity}: " + " and ".join(p[0].lower() for p in panels), "each bar's whisker: its 95 % interval")
    axes = fig.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": [len(p[1]) for p in panels]})
    for ax, (title, values, intervals, order, names) in zip(axes[:, 0], panels, strict=True):
        bars = []
        for i, k in enumerate(ordered(list(values), order)):
            lo, hi = _pair(intervals.get(k))
            bars.append(Bar(names.get(k, k), values[k], lo, hi, PALETTE[i % len(PALETTE)]))
        hbars(ax, bars, "share of the step time", fmt_value=pct, fmt_ci=pct_ci, xmax=1.0, percent_axis=True)
        ax.set_title(title, loc="left", fontsize=9)
    return fig


def diagnosis_charts(identity: str, data: dict[str, Any]) -> list[Chart]:
    """The charts of a diagnosis's page from what it embeds (``diagnosis`` with its ``facts``, ``probe_order``)."""
    d = data.get("diagnosis") or {}
    charts = []
    if d.get("probes"):
        order = data.get("probe_order") or []
        charts.append(Chart("probes", "Samples/s of each probe", lambda: probe_chain_figure(identity, d, order)))
    if d.get("shares") or d.get("stages"):
        labels = (d.get("facts") or {}).get("share_labels") or {}
        charts.append(Chart("shares", "Shares of the step time", lambda: shares_figure(identity, d, labels)))
    return charts
