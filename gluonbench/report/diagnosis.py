"""Text of a diagnosis: probe table, verdict, shares, evidence, recommendations (what the CLI prints)."""

from __future__ import annotations

import math
from typing import Any

from gluonbench.analysis.recommend import Setting, stage_name, substage_name
from gluonbench.analysis.verdict import STAGES
from gluonbench.probes import NAMES as PROBES


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
    for k, v in (d.stages or {}).items():
        name = substage_name(k, setting) if setting else k
        parts.append(f"{name} {v * 100:.0f} %{_ci((d.stage_ci or {}).get(k))}")
    return ", ".join(parts)


def probe_table(d: Any) -> list[str]:
    lines = [
        "| probe | samples/s | 95 % CI | step (ms) | +-CI | input wait | copy | compute | cores busy | removes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name in sorted(d.probes, key=lambda n: PROBES.index(n) if n in PROBES else len(PROBES)):
        p = d.probes[name]
        if p.same_as:
            lines.append(f"| {name} | = {p.same_as} | | | | | | | | {p.removes} |")
            continue
        lo, hi = p.samples_per_s_ci
        split = p.split or {}
        total = split.get("total_s") or 0.0
        wait, copy, compute = (
            (f"{split.get(k, 0.0) / total * 100:.0f} %" if total else "-") for k in ("wait_s", "copy_s", "compute_s")
        )
        cores = ", ".join(f"{c:.0f}" for c in (p.system or {}).get("per_core_pct", [])) or "-"
        lines.append(
            f"| {name} | {_num(p.samples_per_s)} | {_num(lo)}-{_num(hi)} | {_num(p.step_s * 1000, 3)} "
            f"| {p.rel_half_width * 100:.1f} % | {wait} | {copy} | {compute} "
            f"| {cores} % | {p.removes} |"
        )
    return lines


def to_text(d: Any) -> str:
    """The whole diagnosis as Markdown-flavoured text."""
    s = d.setting or {}
    setting = Setting(**s) if s else None
    head = (
        f"# gluonbench diagnose{': ' + d.label if d.label else ''}: batch {s.get('batch_size')}, "
        f"{s.get('num_workers')} worker(s){' (threads)' if s.get('thread_pool') else ''}, {s.get('ctx')} "
        f"({s.get('cores')} cores), budget {_num(s.get('budget_s'), 3)} s"
    )
    out = [head, ""]
    out += probe_table(d)
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
