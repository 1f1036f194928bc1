"""Text of a diagnosis: probe table, verdict, shares, evidence, recommendations (what the CLI prints)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gluonbench.analysis.recommend import Setting, stage_name, substage_name
from gluonbench.analysis.verdict import HEADLINE_OF, STAGES
from gluonbench.errors import GluonbenchError
from gluonbench.report.exporters import MarkdownTable, Report, Table, TableSyntax, where_when


def _num(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:.0f}"


def shares_text(shares: dict[str, float]) -> str:
    """``preprocessing 33 %, disk_io 2 %, gpu_io 65 %``, in pipeline order."""
    return ", ".join(f"{k} {shares[k] * 100:.0f} %" for k in STAGES if k in shares)


def _ci(ci: Any) -> str:
    return f" [{ci[0] * 100:.0f}-{ci[1] * 100:.0f}]" if ci and len(ci) == 2 else ""


def stages_text(d: Any, setting: Setting | None) -> str:
    """``reading 0 % [0-2], loader 20 % [15-25], ...``: each sub-stage's share with its 95 % interval."""
    parts = []
    stages = d.stages or {}
    for k in [k for k in HEADLINE_OF if k in stages]:  # pipeline order, whatever order they were stored in
        v = stages[k]
        name = substage_name(k, setting) if setting else k
        parts.append(f"{name} {v * 100:.0f} %{_ci((d.stage_ci or {}).get(k))}")
    return ", ".join(parts)


def probe_table(d: Any, tables: TableSyntax | None = None) -> list[str]:
    """The probes as table lines (Markdown unless ``tables`` says otherwise), in the diagnosis's order."""
    table = Table(
        [
            "probe",
            "samples/s",
            "95 % CI",
            "step (ms)",
            "+-CI",
            "input wait",
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
                f"{_num(lo)}-{_num(hi)}",
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


def to_text(d: Any, tables: TableSyntax | None = None) -> str:
    """The whole diagnosis as Markdown-flavoured text (its probe table in ``tables``' syntax, default Markdown)."""
    s = d.setting or {}
    setting = Setting(**s) if s else None
    head = (
        f"# gluonbench diagnose{': ' + d.label if d.label else ''}: batch {s.get('batch_size')}, "
        f"{s.get('num_workers')} worker(s){' (threads)' if s.get('thread_pool') else ''}, {s.get('ctx')} "
        f"({s.get('cores')} cores), budget {_num(s.get('budget_s'), 3)} s"
    )
    out = [head, ""]
    out += probe_table(d, tables)
    out.append("")
    if d.verdict == "inconclusive":
        out.append("**Verdict: inconclusive** (the noise exceeds the differences between the probes)")
    else:
        out.append(
            f"**Verdict: {d.verdict}**, {d.shares.get(d.verdict, 0) * 100:.0f} % of the step "
            f"({stage_name(d.verdict, setting) if setting else d.verdict})"
        )
    out.append(
        "- Shares of step time (95 % interval): "
        + ", ".join(f"{k} {d.shares[k] * 100:.0f} %{_ci((d.share_ci or {}).get(k))}" for k in STAGES if k in d.shares)
    )
    if d.stages:
        out.append(f"- Sub-stages, each measured by its own probe: {stages_text(d, setting)}")
    if d.secondary:
        out.append(f"- Secondary: {', '.join(d.secondary)}")
    wait = d.wait_frac
    out.append(
        f"- Input-bound (TF Profiler's rule, input wait of the full pipeline): {d.input_bound}"
        + (f", {wait * 100:.0f} % of step time" if isinstance(wait, float) and math.isfinite(wait) else "")
    )
    lo_p, full_p, cached_p = d.probes.get("loader_only"), d.probes.get("full"), d.probes.get("cached_batch")
    if lo_p is not None and full_p is not None and cached_p is not None and full_p.samples_per_s > 0:
        out.append(
            f"- Input pipeline ceiling (`loader_only`): {_num(lo_p.samples_per_s)} samples/s, "
            f"{lo_p.samples_per_s / full_p.samples_per_s:.1f}x what `full` trains at; the model alone "
            f"(`cached_batch`) runs at {_num(cached_p.samples_per_s)} samples/s"
        )
    widest = max((p.rel_half_width for p in d.probes.values() if not p.same_as), default=math.nan)
    out.append(
        f"- Measured: {d.rounds} interleaved rounds in {d.elapsed_s:.1f} s (stopped: {d.stop_reason}); "
        + (f"verdict reached after {d.settled_s:.1f} s; " if d.settled_s is not None else "")
        + f"widest 95 % CI +-{widest * 100:.1f} % of a median"
    )
    for note in d.notes:
        out.append(f"- Note: {note}")
    if d.evidence:
        out += ["", "Evidence (psutil, per probe):"] + [f"- {line}" for line in d.evidence]
    if d.recommendations:
        out += ["", "Recommendations:"] + [f"{i}. {line}" for i, line in enumerate(d.recommendations, 1)]
    return "\n".join(out) + "\n"


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
    if d.get("wait_frac") is None:
        d["wait_frac"] = math.nan
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

    def html_data(self) -> dict[str, Any]:
        """The stored diagnosis as it is, with its probes' pipeline order."""
        return {"diagnosis": self.summary.get("diagnosis") or {}, "probe_order": self.summary.get("probe_order") or []}
