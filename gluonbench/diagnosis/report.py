"""Text of a diagnosis: probe table, verdict, shares, evidence, recommendations (what the CLI prints)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gluonbench.diagnosis.facts import Facts, facts, wide_text
from gluonbench.diagnosis.recommend import Setting, removed_words, substage_name
from gluonbench.diagnosis.verdict import HEADLINE_OF, Thresholds
from gluonbench.errors import GluonbenchError
from gluonbench.report.charts import Chart, diagnosis_charts
from gluonbench.report.exporters import MarkdownTable, Report, Table, TableSyntax, roofline_text, where_when
from gluonbench.units import count


def _num(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:.0f}"


def _ci(ci: Any) -> str:
    return f" [{ci[0] * 100:.0f}-{ci[1] * 100:.0f}]" if ci and len(ci) == 2 else ""


def stages_text(d: Any, setting: Setting | None) -> str:
    """``reading 0 % [0-2], loader 20 % [15-25], ...``: each sub-stage's share with its 95 % interval."""
    parts = []
    stages = d.stages or {}
    for k in [k for k in HEADLINE_OF if k in stages]:  # pipeline order, whatever order they were stored in
        v = stages[k]
        name = substage_name(k, setting, (d.analysis or {}).get("read")) if setting else k
        parts.append(f"{name} {v * 100:.0f} %{_ci((d.stage_ci or {}).get(k))}")
    return ", ".join(parts)


def verdict_lines(d: Any, setting: Setting | None, f: Facts | None = None) -> list[str]:
    """The verdict by the seed's rule, its speed-ups, the shares, the input-bound label and the overlap.

    Every fact a report states comes from ``f`` (:func:`~gluonbench.diagnosis.facts.facts` of ``d``)."""
    f = facts(d) if f is None else f
    out = []
    has_gains = bool(d.speedups)
    read = (d.analysis or {}).get("read") or {}
    inside = read.get("headline") == "preprocessing"  # the read's CPU work counts as preprocessing
    words = removed_words(read)
    pre_name, rest_name = words["preprocessing"], words["disk_io"]
    gain = f.gain_text
    if f.reading == "at_line" and f.verdict == "inconclusive":
        out.append(
            f"**Verdict: {f.verdict_label}**: reusing one batch gains beyond the noise (a perfect input "
            f"pipeline: {gain}) but its interval crosses the input_gain line: too close to call"
        )
    elif f.reading == "short" and f.verdict == "inconclusive":
        blocks = (d.thresholds or {}).get("min_blocks", Thresholds().min_blocks)
        out.append(
            f"**Verdict: {f.verdict_label}**: a probe has fewer than {blocks} blocks"
            + (f"; so far a perfect input pipeline gains {gain}" if has_gains else "")
        )
    elif f.verdict == "inconclusive":
        out.append(
            "**Verdict: inconclusive** (the noise hides whether reusing one batch gains anything"
            + (f": a perfect input pipeline gains {gain})" if has_gains else ")")
        )
    elif f.verdict == "gpu_io":
        bound = (d.analysis or {}).get("bound") or {}
        out.append(
            f"**Verdict: {f.verdict_label}** (`gpu_io`): "
            + (bound["text"] if bound.get("text") else "reusing one batch gains nothing beyond the noise")
            + (f" (a perfect input pipeline: {gain})" if has_gains else "")
            + "; the input pipeline keeps up and training runs at its peak for this batch size"
        )
    else:
        out.append(
            f"**Verdict: {f.verdict_label}** (`{f.verdict}`)"
            + (
                f": with a perfect input pipeline training would be {gain} faster; removing "
                f"{pre_name if f.verdict == 'preprocessing' else rest_name} gains the most"
                if has_gains
                else ""
            )
        )
    if read.get("kind") not in (None, "unknown", "none") and read.get("why"):
        out.append(
            f"- The read stage by its evidence: {read.get('name')}, counted as {read['headline']}: {read['why']}"
        )
    if has_gains:
        r = f.removals
        sub = ""
        if (d.stages or {}).get("read") is not None and "read" in r and not inside:
            sub = f" (reading {r['read']}, loader {r.get('loader', '?')})"
        out.append(
            f"- Speed-ups, paired round by round (95 % interval): removing {pre_name} {r.get('preprocessing', '?')}, "
            f"then {rest_name} {r.get('disk_io', '?')}{sub}; both, i.e. one batch reused: {gain}"
        )
    out.append(
        "- Time each stage's removal saves, share of the step (95 % interval): "
        + f.shares_text
        + (" (shares of an overlapped loop: the largest is not necessarily what limits training)" if has_gains else "")
    )
    if d.stages:
        out.append(f"- Sub-stages, each measured by its own probe: {stages_text(d, setting)}")
    if f.secondary_labels:
        out.append(f"- Secondary: {', '.join(f.secondary_labels)}")
    saved = d.input_saved if isinstance(d.input_saved, int | float) else math.nan
    if has_gains and math.isfinite(saved):
        out.append(
            f"- Input-bound (TF's labels on the time a perfect input pipeline saves): {f.input_bound}, "
            f"{max(saved, 0.0) * 100:.0f} % of the step{_ci([max(x or 0.0, 0.0) for x in d.input_saved_ci or []])}"
            + (f"; {f.wait_text}" if f.wait_text else "")
        )
    else:
        out.append(
            f"- Input-bound (TF Profiler's rule, input wait of the full pipeline): {f.input_bound}"
            + (f", {f.wait * 100:.0f} % of step time" if f.wait is not None else "")
        )
    if f.wait_note:
        out.append(f"- Wait: {f.wait_note}")
    if f.binding_text:
        out.append(f"- Roofline: nearest its ceiling: {f.binding_text}")
    lo_p, full_p = d.probes.get("loader_only"), d.probes.get("full")
    o = d.overlap or {}
    model_name = o.get("model_probe", "cached_batch")
    model_p = d.probes.get(model_name)
    if lo_p is not None and full_p is not None and model_p is not None and full_p.samples_per_s > 0:
        line = (
            f"- Overlap: the input pipeline alone (`loader_only`) {_num(lo_p.step_s * 1000, 3)} ms a batch "
            f"({lo_p.samples_per_s / full_p.samples_per_s:.1f}x what `full` trains at), the model alone "
            f"(`{model_name}`) {_num(model_p.step_s * 1000, 3)} ms, both together (`full`) "
            f"{_num(full_p.step_s * 1000, 3)} ms"
        )
        if o:
            lo, hi = o["full_vs_slower_ci"]
            verdicts = []
            if o.get("contention"):
                verdicts.append(
                    f"contention: `full` is {o['full_vs_slower']:.2f}x [{lo:.2f}, {hi:.2f}] the slower of the two "
                    "alone, so they compete for a shared resource (see the recommendations)"
                )
            else:
                verdicts.append(f"`full` runs at {o['full_vs_slower']:.2f}x [{lo:.2f}, {hi:.2f}] the slower one's time")
            if o.get("balanced"):
                verdicts.append("balanced: the two alone cost about the same")
            line += "; " + "; ".join(verdicts)
        out.append(line)
    return out


def probe_table(d: Any, tables: TableSyntax | None = None, f: Facts | None = None) -> list[str]:
    """The probes as table lines (Markdown unless ``tables`` says otherwise), in the diagnosis's order.

    Where the loop's wait is no wait (``f.wait_note``: MXNet's engine queue on a CPU context) the column
    says what it holds, the time blocked in ``next(loader)``."""
    f = facts(d) if f is None else f
    table = Table(
        [
            "probe",
            "samples/s",
            "95 % CI",
            "step (ms)",
            "+-CI",
            "in next() (engine queue)" if f.wait_note else "input wait",
            "copy",
            "compute",
            "cores busy",
            "removes",
        ],
        align="lrrrrrrrll",
    )
    for name, p in d.probes.items():  # in the order the diagnosis lists them (pipeline order)
        if p.same_as:
            table.rows.append([name, f"= {p.same_as}", "", "", "", "", "", "", "", p.removes])
            continue
        lo, hi = p.samples_per_s_ci
        split = p.split or {}
        total = split.get("total_s") or 0.0
        wait, copy, compute = (
            (f"{split.get(k, 0.0) / total * 100:.0f} %" if total else "-") for k in ("wait_s", "copy_s", "compute_s")
        )
        cores = ", ".join(f"{c:.0f}" for c in (p.system or {}).get("per_core_pct", [])) or "-"
        table.rows.append(
            [
                name,
                _num(p.samples_per_s),
                f"{_num(lo)}-{_num(hi)}{wide_text(lo, hi)}",
                _num(p.step_s * 1000, 3),
                f"{p.rel_half_width * 100:.1f} %",
                wait,
                copy,
                compute,
                f"{cores} %",
                p.removes,
            ]
        )
    return (tables or MarkdownTable()).render(table).splitlines()


def premises_text(f: Facts) -> str:
    """`` (on the verdict, model compute (CPU); secondary: disk I/O)``: what the recommendations assume."""
    roles: dict[str, list[str]] = {}
    for p in f.premises:
        if p.role in ("verdict", "secondary") and p.label not in roles.setdefault(p.role, []):
            roles[p.role].append(p.label)
    parts = [f"on the verdict, {', '.join(roles['verdict'])}"] if roles.get("verdict") else []
    if roles.get("secondary"):
        parts.append(f"secondary: {', '.join(roles['secondary'])}")
    return f" ({'; '.join(parts)})" if parts else ""


def to_text(d: Any, tables: TableSyntax | None = None) -> str:
    """The whole diagnosis as Markdown-flavoured text (its probe table in ``tables``' syntax, default Markdown)."""
    s = d.setting or {}
    setting = Setting(**s) if s else None
    head = (
        f"# gluonbench diagnose{': ' + d.label if d.label else ''}: batch {s.get('batch_size')}, "
        f"{s.get('num_workers')} worker(s){' (threads)' if s.get('thread_pool') else ''}, {s.get('ctx')} "
        f"({s.get('cores')} cores), budget {_num(s.get('budget_s'), 3)} s"
    )
    f = facts(d)
    out = [head, ""]
    out += probe_table(d, tables, f)
    out.append("")
    out += verdict_lines(d, setting, f)
    widest = max((p.rel_half_width for p in d.probes.values() if not p.same_as), default=math.nan)
    out.append(
        f"- Measured: {count(d.rounds, 'interleaved round')} in {d.elapsed_s:.1f} s (stopped: {d.stop_reason}); "
        + (f"verdict reached after {d.settled_s:.1f} s; " if d.settled_s is not None else "")
        + f"widest 95 % CI +-{widest * 100:.1f} % of a median"
    )
    for note in d.notes:
        out.append(f"- Note: {note}")
    if d.evidence:
        out += ["", "Evidence (psutil, per probe):"] + [f"- {line}" for line in d.evidence]
    if d.recommendations:
        out += ["", f"Recommendations{premises_text(f)}:"] + [
            f"{i}. {line}" for i, line in enumerate(d.recommendations, 1)
        ]
    roofline = roofline_text([line["text"] for line in (d.analysis or {}).get("roofline") or []])
    return "\n".join(out) + "\n" + roofline


class _View:
    """Attribute access to a stored diagnosis (a dict), as :func:`to_text` reads a ``Diagnosis``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)

    def __getattr__(self, name: str) -> Any:  # a field this record predates
        return None


# figures stored as null (NaN, inf) that the text formats as numbers
_PROBE_NUMBERS = ("s_per_sample", "step_s", "samples_per_s", "half_width", "rel_half_width")


def view(data: dict[str, Any], probe_order: list[str] | None = None) -> Any:
    """A stored diagnosis (``Diagnosis.to_dict()``) readable by :func:`to_text`, probes in ``probe_order``."""
    probes = data.get("probes") or {}
    order = [k for k in probe_order or [] if k in probes] + [k for k in probes if k not in (probe_order or [])]
    views = {}
    for name in order:
        p = dict(probes[name])
        for key in _PROBE_NUMBERS:
            if p.get(key) is None:
                p[key] = math.inf if key == "rel_half_width" else math.nan
        for key in ("samples_per_s_ci", "s_per_sample_ci", "step_s_ci"):
            p[key] = tuple(math.nan if v is None else v for v in p.get(key) or (None, None))
        views[name] = _View(p)
    d = dict(data, probes=views)
    for key in ("wait_frac", "input_saved"):
        if d.get(key) is None:
            d[key] = math.nan
    for key in ("secondary", "notes", "evidence", "recommendations"):
        d[key] = d.get(key) or []
    return _View(d)


class DiagnosisReport(Report):
    """A diagnosis's run folder (``gluonbench diagnose --out``): one ``kind == "diagnosis"`` record.

    The record holds ``diagnosis`` (``Diagnosis.to_dict()``) and ``probe_order`` (the probes in
    pipeline order, which the store's sorted keys would otherwise lose).
    """

    kind = "diagnosis"
    files: ClassVar[dict[str, str]] = {
        "markdown": "diagnosis.md",
        "csv": "diagnosis.csv",
        "json": "diagnosis.json",
        "html": "report.html",
    }

    def __init__(self, record: dict[str, Any]) -> None:
        self.summary = record
        self.diagnosis = view(record.get("diagnosis") or {}, record.get("probe_order"))

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> DiagnosisReport:
        found = [r for r in records if r.get("kind") == cls.kind]
        if not found:
            raise GluonbenchError("no diagnosis record in runs.jsonl; pass a folder made by gluonbench diagnose --out")
        return cls(found[-1])

    def data(self) -> dict[str, Any]:
        return self.summary.get("diagnosis") or {}

    def table(self) -> Table:
        """One row per probe: throughput with its 95 % CI, step time and the wait/copy/compute split."""
        table = Table(
            [
                "probe",
                "samples_per_s",
                "samples_per_s_lo",
                "samples_per_s_hi",
                "step_s",
                "rel_half_width",
                "wait_frac",
                "copy_frac",
                "compute_frac",
                "same_as",
                "removes",
            ]
        )
        for name, p in self.diagnosis.probes.items():
            split = p.split or {}
            total = split.get("total_s") or 0.0
            fracs = [split.get(k, 0.0) / total if total else None for k in ("wait_s", "copy_s", "compute_s")]
            lo, hi = p.samples_per_s_ci
            table.rows.append(
                [name, p.samples_per_s, lo, hi, p.step_s, p.rel_half_width, *fracs, p.same_as or "", p.removes]
            )
        return table

    def document(self, tables: TableSyntax) -> str:
        return to_text(self.diagnosis, tables)

    def html_title(self) -> str:
        label = (
            self.summary.get("diagnosis", {}).get("label") if isinstance(self.summary.get("diagnosis"), dict) else ""
        )
        return f"gluonbench diagnose{': ' + label if label else ''}"

    def html_subtitle(self) -> str:
        d = self.summary.get("diagnosis") or {}
        return where_when(d.get("env") or {}, str(d.get("started_utc") or ""))

    def facts(self) -> Facts:
        """The facts of the stored diagnosis, derived again by the current rule (a record may predate them)."""
        return facts(self.diagnosis)

    def html_data(self) -> dict[str, Any]:
        """The stored diagnosis, its ``facts`` as this report states them, and its probes' pipeline order."""
        stored = dict(self.summary.get("diagnosis") or {}, facts=self.facts().to_dict())
        return {"diagnosis": stored, "probe_order": self.summary.get("probe_order") or []}

    def charts(self) -> list[Chart]:
        """The probe chain's samples/s and the shares of the step time (:mod:`gluonbench.report.charts`)."""
        d = self.summary.get("diagnosis")
        identity = (d.get("label") if isinstance(d, dict) else "") or "diagnosis"
        return diagnosis_charts(identity, self.html_data())

    def html_body(self) -> str:
        """The facts as a list the page shows without its script (the script writes the rest from the JSON)."""
        return facts_html(self.facts())


def facts_html(f: Facts) -> str:
    """The facts of a diagnosis as an HTML definition list (escaped)."""
    from html import escape

    premises = premises_text(f).strip(" ()")
    rows = [
        ("Verdict", f"{f.verdict_label} ({f.verdict})"),
        ("A perfect input pipeline", f.gain_text),
        ("Input-bound (TF's labels)", f.input_bound),
        ("Time each stage's removal saves", f.shares_text or "-"),
        ("Wait for the next batch", f.wait_text or f.wait_note or "not measured"),
        ("Roofline: nearest its ceiling", f.binding_text or "no stage has a ceiling here"),
        ("Secondary", ", ".join(f.secondary_labels) or "none"),
        ("Recommendations assume", premises or "no stage (see the verdict)"),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<section class="facts"><h2>Facts</h2><dl>{items}</dl></section>'
