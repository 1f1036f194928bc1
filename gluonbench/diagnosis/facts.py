"""The facts every diagnosis report states, derived in one place (:func:`facts`).

The text (:func:`gluonbench.diagnosis.report.to_text`), the JSON (``Diagnosis.to_dict()["facts"]``) and
the HTML page render these and nothing else for them, so no two outputs of one diagnosis can disagree on
the verdict, the headline gain and its interval, TF's input-bound label, the shares, the loop's wait, the
roofline's binding stage or what each recommendation assumes.

Pure functions of a diagnosis (a :class:`~gluonbench.diagnosis.run.Diagnosis` or a stored one read back
with :func:`gluonbench.diagnosis.report.view`): a stored diagnosis gets the same facts when re-read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.diagnosis.recommend import Setting, engine_queue_wait, removal_text, stage_label
from gluonbench.diagnosis.verdict import STAGES
from gluonbench.report.exporters import too_wide, wide_text

__all__ = ["Facts", "Premise", "facts", "too_wide", "verdict_label", "wide_text"]


@dataclass(frozen=True)
class Premise:
    """What one recommendation assumes: the stage it is about and its role in the diagnosis."""

    stage: str
    """the headline stage (preprocessing, disk_io, gpu_io), ``overlap`` or ``inconclusive``"""
    role: str
    """``verdict``, ``secondary``, ``overlap`` or ``inconclusive``"""
    label: str
    """the stage as the reports name it (``model compute (CPU)`` for gpu_io on a CPU context)"""
    kind: str
    substage: str | None = None


@dataclass(frozen=True)
class Facts:
    """The fixed set of facts a diagnosis report states (see the module docstring)."""

    verdict: str
    """the seed's class as stored: preprocessing, disk_io, gpu_io or inconclusive (gpu_io also on a CPU context)"""
    verdict_label: str
    """the verdict as every report names it: ``model compute (CPU)`` for gpu_io on a CPU context"""
    reading: str
    """how the input speed-up reads (:func:`~gluonbench.diagnosis.verdict.read_reuse`): nothing, gain, at_line,
    noise or short"""
    gain: float | None
    """how much faster training runs with a perfect input pipeline (one batch reused)"""
    gain_ci: list[float] | None
    gain_text: str
    """the gain with its 95 % interval as printed (``?`` when not measured), or why it is no speed-up"""
    gain_too_wide: bool
    """the gain's interval is too wide to be a result (:func:`too_wide`)"""
    input_bound: str
    """TF's label on the time a perfect input pipeline saves: highly, moderately, not, unknown"""
    shares: dict[str, float]
    share_labels: dict[str, str]
    shares_text: str
    """``preprocessing 20 % [15-25], disk I/O 10 % [...], model compute (CPU) 70 % [...]``"""
    removals: dict[str, str]
    """each stage's removal as printed: its speed-up, or in words when it slowed training"""
    wait: float | None
    """the loop's wait for the next batch as a share of the step; None when it is no wait"""
    wait_text: str | None
    """the wait as a sentence; None when it is not stated"""
    wait_note: str | None
    """why the wait is not stated (said once), or None"""
    binding_stage: str | None
    """the roofline's stage nearest its ceiling (None when no stage has a ceiling here)"""
    binding_text: str | None
    secondary: list[str]
    secondary_labels: list[str]
    premises: list[Premise] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)
    """pairs of statements that disagree (empty for a consistent diagnosis)"""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _setting(d: Any) -> Setting | None:
    s = getattr(d, "setting", None) or {}
    try:
        return Setting(**s) if s else None
    except TypeError:  # a record written by another version: no setting-dependent labels
        return None


def _pct_ci(ci: Any) -> str:
    return f" [{ci[0] * 100:.0f}-{ci[1] * 100:.0f}]" if ci and len(ci) == 2 and all(_num(x) for x in ci) else ""


def verdict_label(verdict: str, reading: str, setting: Setting | None) -> str:
    """The verdict as the reports name it."""
    if verdict == "inconclusive":
        return {"at_line": "inconclusive, at the line", "short": "inconclusive (too little data)"}.get(
            reading, "inconclusive"
        )
    return stage_label(verdict, setting)


def _binding(d: Any) -> tuple[str | None, str | None]:
    lines = (getattr(d, "analysis", None) or {}).get("roofline") or []
    rated = [
        ln
        for ln in lines
        if isinstance(ln, dict) and ln.get("stage") != "verdict" and ln.get("bound") not in (None, "none")
        if _num(ln.get("fraction"))
    ]
    if not rated:
        return None, None
    top = max(rated, key=lambda ln: ln["fraction"])
    return str(top["stage"]), f"{top['stage']} at {top['fraction'] * 100:.0f} % of its ceiling ({top['bound']}-bound)"


def _premises(d: Any, setting: Setting | None) -> list[Premise]:
    out = []
    secondary = set(getattr(d, "secondary", None) or [])
    for rec in getattr(d, "advice", None) or []:
        stage = str(rec.get("stage", ""))
        if stage in STAGES:
            role = "secondary" if rec.get("secondary") or (stage in secondary and stage != d.verdict) else "verdict"
            label = stage_label(stage, setting)
        else:
            role, label = stage, stage
        out.append(Premise(stage, role, label, str(rec.get("kind", "")), rec.get("substage")))
    return out


def _contradictions(
    f_verdict: str,
    reading: str,
    input_bound: str,
    premises: list[Premise],
    secondary: list[str],
    speedups: Mapping[str, Any] | None = None,
):
    out = []
    removed = (speedups or {}).get(f_verdict)
    if f_verdict in ("preprocessing", "disk_io") and _num(removed) and removed <= 1.0:
        out.append(f"the verdict {f_verdict} beside removing it gaining nothing ({removed:.2f}x)")
    expected = {"gpu_io": {"not"}, "inconclusive": {"unknown"}}.get(f_verdict, {"highly", "moderately"})
    if input_bound not in expected:
        out.append(f"input-bound '{input_bound}' beside the verdict {f_verdict}")
    for p in premises:
        if p.role == "verdict" and p.stage != f_verdict:
            out.append(f"a recommendation about {p.stage} as the verdict, which is {f_verdict}")
        if p.role == "secondary" and p.stage not in secondary:
            out.append(f"a recommendation about {p.stage} as secondary, which is not named secondary")
        if p.role == "inconclusive" and f_verdict != "inconclusive":
            out.append(f"an inconclusive recommendation beside the verdict {f_verdict}")
    if f_verdict == "gpu_io" and reading == "gain":
        out.append("the verdict gpu_io beside a gain beyond the line")
    return out


def facts(d: Any) -> Facts:
    """The facts of diagnosis ``d`` (a ``Diagnosis`` or a stored one seen through ``report.view``)."""
    setting = _setting(d)
    analysis = getattr(d, "analysis", None) or {}
    verdict = str(getattr(d, "verdict", "") or "inconclusive")
    reading = str(analysis.get("reuse") or ("nothing" if verdict == "gpu_io" else "noise"))
    gain = (getattr(d, "speedups", None) or {}).get("input")
    gain_ci = (getattr(d, "speedup_ci", None) or {}).get("input")
    gain_ci = list(gain_ci) if gain_ci and len(gain_ci) == 2 and all(_num(x) for x in gain_ci) else None
    wide = bool(gain_ci) and too_wide(*gain_ci)
    digits = 3 if reading == "at_line" else 2
    gain_text = removal_text(d, "input", digits) if _num(gain) else "?"
    if wide:
        gain_text += ", an interval too wide to be a result"
    shares = {k: float(v) for k, v in (getattr(d, "shares", None) or {}).items() if k in STAGES and _num(v)}
    labels = {k: stage_label(k, setting) for k in STAGES}
    share_ci = getattr(d, "share_ci", None) or {}
    shares_text = ", ".join(
        f"{labels[k]} {shares[k] * 100:.0f} %{_pct_ci(share_ci.get(k))}" for k in STAGES if k in shares
    )
    removals = {k: removal_text(d, k) for k in (getattr(d, "speedups", None) or {}) if k != "input"}
    wait_frac = getattr(d, "wait_frac", None)
    wait = float(wait_frac) if _num(wait_frac) else None
    note = engine_queue_wait(wait, getattr(d, "probes", None) or {}, setting) if wait is not None else None
    if note is not None:
        wait = None
    wait_text = (
        f"the loop itself waited for the next batch {wait * 100:.0f} % of the step" if wait is not None else None
    )
    binding, binding_text = _binding(d)
    secondary = [str(s) for s in getattr(d, "secondary", None) or []]
    premises = _premises(d, setting)
    input_bound = str(getattr(d, "input_bound", "") or "unknown")
    return Facts(
        verdict=verdict,
        verdict_label=verdict_label(verdict, reading, setting),
        reading=reading,
        gain=float(gain) if _num(gain) else None,
        gain_ci=gain_ci,
        gain_text=gain_text,
        gain_too_wide=wide,
        input_bound=input_bound,
        shares=shares,
        share_labels={k: labels[k] for k in shares},
        shares_text=shares_text,
        removals=removals,
        wait=wait,
        wait_text=wait_text,
        wait_note=note,
        binding_stage=binding,
        binding_text=binding_text,
        secondary=secondary,
        secondary_labels=[stage_label(s, setting) for s in secondary],
        premises=premises,
        contradictions=_contradictions(
            verdict, reading, input_bound, premises, secondary, getattr(d, "speedups", None)
        ),
    )
