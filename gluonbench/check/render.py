"""Renderings of a check: a text table, Markdown (``$GITHUB_STEP_SUMMARY``), JUnit XML; pure functions of the result."""

from __future__ import annotations

import math
from xml.etree import ElementTree as ET

from gluonbench.check.gate import CheckResult, Row, Snapshot, threshold_text
from gluonbench.report.exporters import MarkdownTable, Table, TextTable

HEADER = ("stage", "unit", "baseline", "now", "ratio (95 % CI)", "verdict")


def _num(v: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3f}"


def _below_zero(row: Row) -> bool:
    """A stage time got by subtraction that came out under 0 (the probe without it ran slower: noise)."""
    return any(math.isfinite(v) and v < 0 for v in (row.baseline, row.now))


def _value(v: float) -> str:
    """A figure for the table; a time under 0 is clamped at 0 and marked (see :func:`clamp_note`)."""
    return f"{_num(0.0)}*" if math.isfinite(v) and v < 0 else _num(v)


def clamp_note(rows: list[Row]) -> str | None:
    """The one line naming each stage time clamped at 0, with its measured figure; None when none was."""
    clamped = [
        f"{r.name} {which} {v:.3f}"
        for r in rows
        for which, v in (("baseline", r.baseline), ("now", r.now))
        if math.isfinite(v) and v < 0
    ]
    if not clamped:
        return None
    return (
        "* a stage's time is the difference of two probes, and came out below 0 here (the probe without the stage "
        "ran slower, within the noise of the rounds): shown as 0, its ratio as n/a; measured " + ", ".join(clamped)
    )


def _ratio(row: Row) -> str:
    if not math.isfinite(row.ratio) or _below_zero(row):
        return "n/a"
    lo, hi = row.ratio_ci
    if math.isfinite(lo) and math.isfinite(hi):
        return f"{row.ratio:.3f} ({lo:.3f}..{hi:.3f})"
    return f"{row.ratio:.3f}"


def _cells(result: CheckResult) -> list[tuple[str, ...]]:
    return [(r.name, r.unit, _value(r.baseline), _value(r.now), _ratio(r), r.verdict) for r in result.rows]


def table(result: CheckResult) -> Table:
    """The check's table, written by the exporters' table syntaxes (text for a terminal, Markdown for a summary)."""
    return Table(list(HEADER), [list(c) for c in _cells(result)], align="llrrrl")


def _unit_text(result: CheckResult) -> str:
    if result.reference == "baseline":
        return (
            f"baseline = {result.baseline_path}, now = the working tree, measured side by side in alternating rounds; "
            "each stage's time per sample over the baseline's full pipeline in the same round; ratio = now / baseline"
        )
    return (
        "each stage's time per sample over the ruler's in the same round (machine speed and background load "
        "cancel); ratio = now / baseline"
    )


def headline(result: CheckResult) -> str:
    return f"gluonbench check: {result.outcome.upper()}: {result.message}"


def to_text(result: CheckResult) -> str:
    """The table a terminal or a CI log shows, then the headline and notes."""
    lines = TextTable().render(table(result)).rstrip("\n").split("\n")
    out = [
        f"pipeline {result.now.shown}: {_unit_text(result)}",
        *lines,
        *([note] if (note := clamp_note(result.rows)) else []),
        "",
        headline(result),
        f"compared: {result.basis} time ({result.basis_reason})",
        *(f"note: {n}" for n in result.notes),
    ]
    return "\n".join(out)


def to_markdown(result: CheckResult) -> str:
    """A Markdown summary (GitHub's job summary)."""
    icon = {"pass": "PASS", "regression": "REGRESSION", "inconclusive": "INCONCLUSIVE"}[result.outcome]
    rows = [
        f"### gluonbench check: {icon}",
        "",
        f"**{result.message}**",
        "",
        f"Pipeline `{result.now.shown}`; baseline `{result.baseline_path}` ({result.baseline.started_utc}); "
        f"max slowdown {threshold_text(result.max_slowdown)}; compared {result.basis} time ({result.basis_reason}).",
        "",
        MarkdownTable().render(table(result)).rstrip("\n"),
        "",
        _unit_text(result)[0].upper() + _unit_text(result)[1:] + ".",
        *([f"\n{note}"] if (note := clamp_note(result.rows)) else []),
    ]
    rows += [f"- note: {n}" for n in result.notes]
    return "\n".join(rows) + "\n"


def to_junit(result: CheckResult) -> str:
    """JUnit XML: one test case for the pipeline; a regression is a failure, inconclusive is skipped."""
    suite = ET.Element(
        "testsuite",
        name="gluonbench check",
        tests="1",
        failures="1" if result.outcome == "regression" else "0",
        skipped="1" if result.outcome == "inconclusive" else "0",
        errors="0",
        time=f"{result.now.elapsed_s:.1f}",
    )
    case = ET.SubElement(
        suite, "testcase", classname="gluonbench.check", name=result.now.shown, time=f"{result.now.elapsed_s:.1f}"
    )
    if result.outcome == "regression":
        failure = ET.SubElement(case, "failure", message=result.message, type="regression")
        failure.text = to_text(result)
    elif result.outcome == "inconclusive":
        ET.SubElement(case, "skipped", message=result.message)
    out = ET.SubElement(case, "system-out")
    out.text = to_text(result)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def snapshot_text(snap: Snapshot) -> str:
    """What a saved baseline holds, for the terminal."""
    lines = [f"baseline of {snap.shown}: {snap.rounds} paired rounds in {snap.elapsed_s:.0f} s on {snap.cores} core(s)"]
    t = snap.total
    lines.append(
        f"  full pipeline: {1 / t.s_per_sample:,.0f} samples/s, {t.rel:.3f} x the ruler's wall time "
        f"(95 % CI {t.rel_ci[0]:.3f}..{t.rel_ci[1]:.3f}), {t.cpu_rel:.3f} x its CPU time "
        f"({t.cpu_rel_ci[0]:.3f}..{t.cpu_rel_ci[1]:.3f})"
        if t.s_per_sample > 0
        else "  full pipeline: no figure"
    )
    clamped = []
    for name, f in snap.stages.items():
        wall, cpu = (max(x, 0.0) if math.isfinite(x) else x for x in (f.s_per_sample, f.cpu_s_per_sample))
        if (wall, cpu) != (f.s_per_sample, f.cpu_s_per_sample):
            clamped.append(f"{name} {f.s_per_sample * 1e6:.1f} us, {f.cpu_s_per_sample * 1e6:.1f} CPU us")
        lines.append(f"  {name:14s} {wall * 1e6:10.1f} us/sample  {cpu * 1e6:10.1f} CPU us/sample")
    if clamped:
        lines.append(
            "  (a stage's time is the difference of two probes; below 0, within the noise of the rounds, it is "
            "shown as 0: measured " + "; ".join(clamped) + ")"
        )
    lines.append(f"  loader-only ceiling: {snap.ceiling_samples_per_s:,.0f} samples/s")
    lines.append(
        f"  ruler: {snap.ruler.s_per_sample * 1e6:.1f} us/sample, {snap.ruler.cpu_s_per_sample * 1e6:.1f} CPU us/sample"
    )
    return "\n".join(lines)
