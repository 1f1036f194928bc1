"""What ``tune`` found: :class:`TuneResult`, its text, JSON and ``tuned.toml``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.analysis.stats import ratio_ci
from gluonbench.diagnosis.verdict import Thresholds, read_reuse
from gluonbench.names import arg, example
from gluonbench.report import versions
from gluonbench.report.exporters import wide_text
from gluonbench.tune.model import Confirmed, Setting
from gluonbench.units import count


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None, tuples lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


@dataclass
class Evidence:
    """One measurement the tuner made (all through ``measure``): what, samples/s with its 95 % CI."""

    phase: str
    """``ceiling + loader``, ``loader`` (the loader alone) or ``confirm`` (the full pipeline)"""
    label: str
    setting: dict[str, Any] | None = None
    samples_per_s: float = math.nan
    ci: tuple[float, float] = (math.nan, math.nan)
    cpu_cores: float = math.nan
    """cores the process tree kept busy on average (psutil)"""
    blocks: int = 0
    steps: int = 0
    elapsed_s: float = 0.0
    """seconds of the measure() call it was part of"""
    status: str = "ok"
    error: str | None = None


@dataclass
class BatchSizeResult:
    """The search at one batch size."""

    batch_size: int
    setting: dict[str, Any]
    samples_per_s: float
    ci: tuple[float, float]
    within_noise: list[str] = field(default_factory=list)
    confirmed: list[dict[str, Any]] = field(default_factory=list)
    current_samples_per_s: float = math.nan
    current_ci: tuple[float, float] = (math.nan, math.nan)
    ceiling_samples_per_s: float = math.nan
    ceiling_ci: tuple[float, float] = (math.nan, math.nan)
    stop_reason: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    phase_s: dict[str, float] = field(default_factory=dict)
    ceiling_gain: list[float] = field(default_factory=lambda: [math.nan] * 3)
    """one reused batch's speed-up over the recommendation (ratio, 95 % CI), paired in the confirmation's rounds"""
    speedup: list[float] = field(default_factory=lambda: [math.nan] * 3)
    """the recommendation's speed-up over the current setting (ratio, 95 % CI), paired in the same rounds"""
    ceiling_source: str = ""
    """``confirmation``: the ceiling ran in the confirmation's rounds; ``first``: only in the first phase"""
    first_ceiling_samples_per_s: float = math.nan
    """the first phase's ceiling, which steered the search (the loader alone was compared with it)"""
    rounds: int = 0
    """confirmation rounds of the recommendation"""
    epoch: dict[str, Any] = field(default_factory=dict)
    """what a sweep of whole epochs should read (:func:`~gluonbench.tune.model.epoch_rate`)"""

    @classmethod
    def chosen(
        cls,
        batch_size: int,
        winner: Confirmed,
        tied: Sequence[Confirmed],
        runs: Sequence[tuple[Confirmed, list[float], dict[str, Any]]],
        *,
        current: tuple[float, tuple[float, float]],
        ceiling: tuple[float, tuple[float, float]],
        **more: Any,
    ) -> BatchSizeResult:
        """The choice at one batch size, as every tune records it: the recommendation ``winner`` and the settings
        ``tied`` with it (:func:`~gluonbench.tune.model.choose`), each confirmed run as ``(its figure, its gain
        over the ceiling, fields of its own)``, the current setting's and the ceiling's samples/s with their 95 %
        CIs; ``more``: the other fields."""
        return cls(
            batch_size=batch_size,
            setting=winner.setting.to_dict(),
            samples_per_s=winner.samples_per_s,
            ci=winner.ci,
            within_noise=[c.setting.label for c in tied],
            confirmed=[
                {
                    "setting": c.setting.to_dict(),
                    "label": c.setting.label,
                    "samples_per_s": c.samples_per_s,
                    "ci": list(c.ci),
                    "ceiling_gain": gain,
                    **own,
                }
                for c, gain, own in runs
            ],
            current_samples_per_s=current[0],
            current_ci=current[1],
            ceiling_samples_per_s=ceiling[0],
            ceiling_ci=ceiling[1],
            **more,
        )


@dataclass
class TuneResult:
    """The recommended DataLoader setting, its expected throughput and the evidence; ``to_dict()`` is JSON."""

    setting: dict[str, Any]
    """the recommended knobs (:class:`~gluonbench.tune.model.Setting`)"""
    batch_size: int
    dataloader: str
    """the line to paste: ``gluon.data.DataLoader(...)``"""
    samples_per_s: float
    ci: tuple[float, float]
    current: dict[str, Any]
    current_batch_size: int
    current_samples_per_s: float
    current_ci: tuple[float, float]
    ceiling_samples_per_s: float
    """the model step on one cached batch: what a perfect loader would give"""
    ceiling_ci: tuple[float, float]
    evidence: list[Evidence] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    batch_sizes: list[BatchSizeResult] = field(default_factory=list)
    lr_note: str = ""
    emulated: dict[str, Any] | None = None
    """with emulated compute: the per-batch wait, its source, AU of the recommendation and of the current setting"""
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    cores: int = 0
    ctx: str = "cpu"
    started_utc: str = ""
    label: str = ""
    env: dict[str, Any] = field(default_factory=dict)
    sweep: dict[str, Any] = field(default_factory=dict)
    """settings for ``tuned.toml`` beyond the loader's (workload, data, options), set by the CLI"""
    run_dir: str | None = None
    """the run folder ``gluonbench tune --out`` kept (runs.jsonl, tune.md, report.html); None without it"""
    same_rounds: dict[str, Any] = field(default_factory=dict)
    """the recommendation's ratios from the confirmation's interleaved rounds: ``ceiling_gain`` and ``speedup``
    (ratio, 95 % CI low, high), ``ceiling_source`` and ``rounds``; empty in a file written before they were kept"""
    epoch: dict[str, Any] = field(default_factory=dict)
    """what a ``sweep --config`` of whole epochs should read by this tune's figures: ``samples_per_s``,
    ``batches`` a epoch, ``first_batch_s`` (each epoch's start, before the workers overlap the step)"""

    @property
    def recommended(self) -> Setting:
        return Setting.from_dict(self.setting)

    @property
    def cut_short(self) -> list[str]:
        """What the budget left unmeasured: a measurement with no block in its time, a step the budget skipped."""
        return [s["what"] for s in self.skipped if str(s.get("reason", "")).startswith(("no block measured", "budget"))]

    @property
    def within_noise(self) -> list[str]:
        """The settings (labels) within noise or 5 % of the best at the recommended batch size, the recommendation
        among them (the cheapest); a single entry when nothing else came close."""
        b = next((b for b in self.batch_sizes if b.batch_size == self.batch_size), None)
        rec = self.recommended.label
        tied = list(b.within_noise) if b is not None else []
        return tied if rec in tied else [rec, *tied]

    def _same(self, key: str) -> tuple[float, float, float] | None:
        g = self.same_rounds.get(key)
        if isinstance(g, list | tuple) and len(g) == 3 and all(isinstance(x, int | float) for x in g):
            if math.isfinite(g[0]):
                return float(g[0]), float(g[1]), float(g[2])
        return None

    @property
    def speedup(self) -> float:
        """The recommendation over the current setting: paired in the confirmation's rounds (else the medians)."""
        return self.speedup_ci()[0]

    def speedup_ci(self) -> tuple[float, tuple[float, float]]:
        same = self._same("speedup")
        if same is not None:
            return same[0], (same[1], same[2])
        c = self.current_samples_per_s
        if not (c and c > 0):
            return math.nan, (math.nan, math.nan)
        return ratio_ci(self.samples_per_s, tuple(self.ci), c, tuple(self.current_ci))

    @property
    def of_ceiling(self) -> float:
        """The recommendation's share of the ceiling: 1 / :meth:`ceiling_gain`, from the same rounds."""
        g = self.ceiling_gain()[0]
        if math.isfinite(g) and g > 0:
            return 1.0 / g
        c = self.ceiling_samples_per_s
        return self.samples_per_s / c if c and c > 0 else math.nan

    def ceiling_gain(self) -> tuple[float, tuple[float, float]]:
        """How much faster one reused batch (the model ceiling) trains than the recommendation, with its 95 % CI:
        paired round by round in the confirmation, where both ran side by side (a file without them: the two
        medians)."""
        same = self._same("ceiling_gain")
        if same is not None:
            return same[0], (same[1], same[2])
        return ratio_ci(self.ceiling_samples_per_s, tuple(self.ceiling_ci), self.samples_per_s, tuple(self.ci))

    @property
    def keeps_model_fed(self) -> str:
        """``yes``, ``no`` or ``unclear`` by the seed's rule, the one ``diagnose``'s verdict uses.

        ``yes``: reusing one batch would gain nothing over the recommendation (the ceiling's speed-up CI
        under the ``input_gain`` line, or 1 within it and the gain under the line); ``no``: the whole CI
        lies above the line (the input pipeline still limits training); else ``unclear``
        (:func:`~gluonbench.diagnosis.verdict.read_reuse`).
        """
        return self.fed_facts()[0]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        g, ci = self.ceiling_gain()
        d.update(
            speedup=self.speedup,
            of_ceiling=self.of_ceiling,
            ceiling_speedup=g,
            ceiling_speedup_ci=list(ci),
            keeps_model_fed=self.keeps_model_fed,
            # the statements the text makes, derived once, so that the Markdown and the page say the same
            fed_text=self.fed_text(),
            ceiling_text=self.ceiling_text(),
            sweep_text=self.sweep_expectation(),
        )
        for stored, b in zip(d["batch_sizes"], self.batch_sizes, strict=True):
            stored["stop_text"] = self.stop_text(b)  # why the search stopped, as the text says it
        return _clean(versions.stamp("tune", d))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TuneResult:
        names = set(cls.__dataclass_fields__)
        d = {k: v for k, v in data.items() if k in names}
        d["evidence"] = [Evidence(**e) for e in d.get("evidence", [])]
        fields_b = set(BatchSizeResult.__dataclass_fields__)  # a stored one also holds its stop_text
        d["batch_sizes"] = [
            BatchSizeResult(**{k: v for k, v in b.items() if k in fields_b}) for b in d.get("batch_sizes", [])
        ]
        return cls(**d)

    def to_text(self) -> str:
        """The report: recommendation, expected speed, evidence, what was tried and skipped, time."""
        cur = Setting.from_dict(self.current)
        lines = [f"recommended: {self.dataloader}"]
        if self.lr_note:
            lines.append(f"             {self.lr_note}")
        sp, (sp_lo, sp_hi) = self.speedup_ci()
        interval = f" [{sp_lo:.2f}, {sp_hi:.2f}]" if math.isfinite(sp_lo) and math.isfinite(sp_hi) else ""
        is_current = self.recommended == cur and self.batch_size == self.current_batch_size
        against = (
            f"the current setting itself ({cur.label}, batch {self.current_batch_size})"
            if is_current
            else f"{_x(sp)}{interval} the current setting ({cur.label}, batch {self.current_batch_size}: "
            f"{_rate(self.current_samples_per_s, self.current_ci)})"
        )
        lines.append(
            f"expected:    {_rate(self.samples_per_s, self.ci)} in steady state; {against}; {self.ceiling_text()}"
        )
        sweep_line = self.sweep_expectation()
        if sweep_line:
            lines.append(f"sweep:       {sweep_line}")
        tied = self.within_noise
        if len(tied) > 1:
            lines.append(
                f"equivalent:  {len(tied)} settings are within noise or 5 % of the best ({'; '.join(tied)}): any of them "
                f"does as well here; the cheapest, {self.recommended.label}, is recommended"
            )
        fed_line = self.fed_text()
        if fed_line:
            lines.append(f"model fed:   {fed_line}")
        if self.emulated:
            e = self.emulated
            lines.append(f"emulated:    {e['text']}")
            lines.append(
                f"             accelerator utilisation AU {_pct(e['au'])} "
                f"({'passes' if e['passes'] else 'fails'} DLIO's {_pct(e['pass_line'])} line); current setting: "
                f"AU {_pct(e['au_current'])} ({'passes' if e['passes_current'] else 'fails'})"
            )
        if self.cut_short:
            lines.append(
                f"warning:     the {self.budget_s:g} s budget ran out before {'; '.join(self.cut_short)}: this is the "
                f"best of what was measured, maybe not the best there is; raise {arg('budget_s')} (e.g. "
                f"{example(f'budget_s={2 * self.budget_s:g}', f'--budget {2 * self.budget_s:g}')}) on a busy machine"
            )
        for b in self.batch_sizes:
            if len(self.batch_sizes) > 1:
                lines.append(
                    f"batch {b.batch_size}: {Setting.from_dict(b.setting).label} {_rate(b.samples_per_s, b.ci)}"
                )
            if len(self.batch_sizes) > 1 and b.within_noise and len(b.within_noise) > 1:
                lines.append(f"  within noise or 5 % of the best (the cheapest wins): {'; '.join(b.within_noise)}")
            m = b.model
            if m.get("per_worker") is not None:
                sat = m.get("cpu_workers")
                lines.append(
                    f"loader model: {m['per_worker']:.0f} samples/s per worker, "
                    f"{_num(m.get('cpu_per_worker'), '.2f')} cores busy per worker "
                    + (
                        f"(the cores can run {_num(sat, '.1f')} such workers at once"
                        if isinstance(sat, int | float) and math.isfinite(sat)
                        else "(no CPU limit"
                    )
                    + (", latency-bound: more workers than cores can pay" if m.get("latency_bound") else "")
                    + ")"
                    + (f", plateau {m['plateau']:.0f} samples/s" if m.get("plateau") else "")
                )
            lines.append(f"search stopped: {self.stop_text(b)}")
        lines += evidence_lines(self.evidence)
        lines.append("tried: " + "; ".join(self.tried))
        if self.skipped:
            lines.append("skipped:")
            lines.extend(f"  {s['what']}: {s['reason']}" for s in self.skipped)
        lines.append(f"time: {self.elapsed_s:.1f} s of a {self.budget_s:g} s budget, {self.cores} cores, {self.ctx}")
        return "\n".join(lines) + "\n"

    def ceiling_text(self) -> str:
        """The recommendation's share of the model ceiling, from the same rounds; above 100 % with why."""
        share = self.of_ceiling
        same = self._same("ceiling_gain") is not None and self.same_rounds.get("ceiling_source") == "confirmation"
        where = "in the same rounds" if same else "measured in the search's first phase, at another moment"
        text = f"{_pct(share)} of the model ceiling ({_rate(self.ceiling_samples_per_s, self.ceiling_ci)}, {where})"
        if isinstance(share, float) and math.isfinite(share) and round(100 * share) > 100:
            _g, (lo, _hi) = self.ceiling_gain()
            within = math.isfinite(lo) and lo <= 1.0
            text += (
                ": above 100 % "
                + ("within the noise" if within else "beyond the noise")
                + " (reusing one batch saves nothing here); read it as at the ceiling: the loader is not the limit"
            )
        return text

    def fed_facts(self) -> tuple[str, float, float, float]:
        """The one derivation of "is the model fed": ``(yes|no|unclear, gain, low, high)``, the gain being one reused
        batch's speed-up over the recommendation (:meth:`ceiling_gain`, paired in the confirmation's rounds) read by
        the seed's rule (:func:`~gluonbench.diagnosis.verdict.read_reuse`). Every statement of the report about the
        model being fed or the input limiting training comes from here."""
        g, (lo, hi) = self.ceiling_gain()
        reading = read_reuse((g, lo, hi), Thresholds().line)
        return {"nothing": "yes", "gain": "no"}.get(reading, "unclear"), g, lo, hi

    def fed_text(self) -> str:
        """The "model fed" line (empty when no gain could be computed)."""
        fed, g, lo, hi = self.fed_facts()
        if not math.isfinite(g):
            return ""
        line = Thresholds().input_gain
        text = (
            f"{fed}: one reused batch (the model ceiling) would train {g:.2f}x [{lo:.2f}, {hi:.2f}] faster than the "
            "recommendation, in the same rounds; "
            + {
                "yes": f"it gains nothing beyond the noise or the {line:.0%} line: the input pipeline keeps the model fed",
                "no": "the input pipeline still limits training (gluonbench diagnose names the stage)",
                "unclear": (
                    f"beyond the noise but too close to the {line:.0%} line to call: the input pipeline costs at most "
                    f"{1 - 1 / hi:.0%} of the step"
                    if lo > 1.0
                    else f"the noise hides whether that gain is real: raise {arg('budget_s')} to tell"
                ),
            }[fed]
        )
        if fed != "yes":
            fed_elsewhere = self._fed_settings()
            if fed_elsewhere:
                text += (
                    f"; {fed_elsewhere[0]} keeps it fed in the same rounds, within noise or 5 % of the recommendation: "
                    "the cheapest such setting is recommended, take that one to close the rest"
                )
        return text

    def _fed_settings(self) -> list[str]:
        """The confirmed settings at the recommended batch size that keep the model fed (same rounds)."""
        b = next((b for b in self.batch_sizes if b.batch_size == self.batch_size), None)
        out = []
        for c in b.confirmed if b is not None else []:
            gain = c.get("ceiling_gain")
            if isinstance(gain, list) and len(gain) == 3 and all(isinstance(x, int | float) for x in gain):
                if read_reuse(tuple(gain), Thresholds().line) == "nothing" and c.get("label") != self.recommended.label:
                    out.append(str(c.get("label")))
        return out

    def stop_text(self, b: BatchSizeResult) -> str:
        """Why the search stopped, said as what it compared: the loader alone against the first phase's ceiling. When
        that reads "outruns" but the full pipeline, in the confirmation, is not fed, the line says why both hold."""
        text = b.stop_reason
        if not text.startswith("the loader outruns the model") or b.batch_size != self.batch_size:
            return text
        fed, g, _lo, _hi = self.fed_facts()
        text = "the loader alone (no model step) " + text[len("the loader ") :] + " (the first phase's ceiling)"
        if fed == "yes" or not math.isfinite(g):
            return text
        return (
            text + f"; in the full pipeline it does not: with the model step beside it, in the same rounds as the "
            f"ceiling, the recommendation ({self.recommended.label}) trains {g:.2f}x slower than one reused batch "
            f"(the loader's work and the model step share {self.cores} cores"
            + (", and at 0 workers they run one after the other" if self.recommended.num_workers == 0 else "")
            + ")"
        )

    def sweep_expectation(self) -> str:
        """What ``sweep --config tuned.toml`` should read beside this tune's steady figure, and why, when the two
        differ by more than 5 % (empty otherwise)."""
        e = self.epoch or {}
        rate = e.get("samples_per_s")
        if not isinstance(rate, int | float) or not math.isfinite(rate) or not self.samples_per_s > 0:
            return ""
        if abs(rate / self.samples_per_s - 1) <= 0.05:
            return ""
        first = e.get("first_batch_s")
        first_text = f"{1000 * first:.0f} ms" if isinstance(first, int | float) and math.isfinite(first) else "a batch"
        return (
            f"a sweep of this setting (sweep --config tuned.toml) times whole epochs, so it should read about "
            f"{rate:.0f} samples/s, not {self.samples_per_s:.0f}: each of its epochs ({e.get('batches')} batches of "
            f"{e.get('batch_size')}) starts with the workers' first batch (about {first_text}) before they overlap "
            "the step, and its first epoch holds MXNet's warm-up too; this tune's figure is the steady state (median "
            "of interleaved blocks after warm-up)"
        )

    def to_toml(self) -> str:
        """A ``tuned.toml`` that ``gluonbench sweep --config`` reads: the recommended setting as a sweep."""
        s = self.recommended
        tables = {k: v for k, v in self.sweep.items() if isinstance(v, dict)}  # options, pipeline_options
        values: dict[str, Any] = {k: v for k, v in self.sweep.items() if k not in tables and v is not None}
        values.update(workers=[s.num_workers], batch_size=self.batch_size, thread_pool=s.thread_pool)
        if s.prefetch is not None and s.num_workers:
            values["prefetch"] = s.prefetch
        if s.pin_memory:
            values["pin_memory"] = True
        if self.emulated:
            values["emulate_step_ms"] = self.emulated["setting"]
        cur = Setting.from_dict(self.current)
        lines = [
            "# written by gluonbench tune: the recommended DataLoader setting, as a sweep config",
            f"# {self.dataloader}",
            f"# expected {self.samples_per_s:.0f} samples/s in steady state; the current setting ({cur.label}) "
            f"{self.current_samples_per_s:.0f} samples/s",
            f"# compare them: gluonbench sweep --config tuned.toml --set workers={cur.num_workers},{s.num_workers}",
        ]
        if self.sweep_expectation():
            e = self.epoch
            lines.append(
                f"# a sweep times whole epochs ({e.get('batches')} batches, each epoch starting with the workers' first "
                f"batch, the first with MXNet's warm-up): expect about {e.get('samples_per_s', 0):.0f} samples/s there"
            )
        lines += [_toml_line(k, v) for k, v in values.items()]
        for name, table in tables.items():
            if table:
                lines += ["", f"[{name}]"] + [_toml_line(k, v) for k, v in table.items() if v is not None]
        return "\n".join(lines) + "\n"


def evidence_lines(evidence: list[Evidence]) -> list[str]:
    """The evidence table of a tune's text report: one line per measurement, a failed one with its error."""
    lines = ["evidence (samples/s, median and 95 % CI):"]
    lines.append(f"  {'phase':14s} {'pipeline measured':34s} {'samples/s [95 % CI]':28s} cores busy")
    for e in evidence:
        phase = PHASE_TEXT.get(e.phase, e.phase)
        if e.status != "ok":
            lines.append(f"  {phase:14s} {e.label:34s} FAILED: {e.error}")
            continue
        cpu = f"{e.cpu_cores:.2f}" if e.cpu_cores == e.cpu_cores else "-"
        lines.append(f"  {phase:14s} {e.label:34s} {_rate(e.samples_per_s, e.ci):28s} {cpu}")
    return lines


@dataclass
class StalledTune:
    """What a tune that a stall stopped had measured (``BudgetExceededError.partial``): the evidence, no recommendation.

    A stage that blocks past budget + grace ends the search before the confirmation of the batch size it was
    measuring, so the settings there were not compared in one interleaved measurement: the figures are kept (nothing
    already measured is lost), but the fastest of them is not a recommendation. Batch sizes confirmed before the stall
    (``--batch-sizes``) keep their results in ``batch_sizes``. ``to_dict()`` is JSON, with ``status: "stalled"``.
    """

    stage: str
    """the stage the pipeline stalled in (:func:`~gluonbench.engine.deadline.stalled_stage`)"""
    error: str
    """the stall's one line"""
    evidence: list[Evidence] = field(default_factory=list)
    """every measurement before the stall, the stalled measurement's complete rounds included (with several batch
    sizes, each label starts with ``batch N:``)"""
    batch_sizes: list[BatchSizeResult] = field(default_factory=list)
    """the batch sizes whose search and confirmation finished before the stall"""
    budget_s: float = 0.0
    """the tune's budget (seconds)"""
    elapsed_s: float = 0.0
    """seconds from the tune's start to the stall's error"""
    cores: int = 0
    """the cores this process may use"""
    ctx: str = "cpu"
    """the context tuned for: ``cpu`` or ``gpu:N``"""
    started_utc: str = ""
    label: str = ""
    """the tune's label (a workload's or pipeline's name)"""
    status: str = "stalled"
    """always ``stalled``: what tells this file from a finished tune's"""
    event: str = "stall"
    """what stopped it: ``stall`` (a stage blocked past the deadline) or ``failure`` (the pipeline's code raised)"""

    @property
    def measured(self) -> int:
        """How many measurements have a figure."""
        return sum(1 for e in self.evidence if e.status == "ok" and math.isfinite(e.samples_per_s))

    def to_dict(self) -> dict[str, Any]:
        return _clean(versions.stamp("tune", asdict(self)))

    def to_text(self) -> str:
        """What was measured before the stall, and why it is not a recommendation."""
        stalled, failed = (self.event, "failed") if self.event == "failure" else ("stall", "stalled")
        lines = [
            f"tune stopped: the pipeline {failed} in {self.stage} after {self.elapsed_s:.1f} s of a {self.budget_s:g} s "
            f"budget; no recommendation: the search {failed} before its confirmation compared the settings in one "
            "measurement",
            f"kept: {count(self.measured, 'measurement')} from before the {stalled} (the {stalled} itself is not in the "
            f"figures); fix the {failed} stage, then tune again",
        ]
        for b in self.batch_sizes:
            lines.append(
                f"batch {b.batch_size} (finished before the {stalled}): {Setting.from_dict(b.setting).label} "
                f"{_rate(b.samples_per_s, b.ci)}, confirmed"
            )
        lines += evidence_lines(self.evidence)
        lines.append(f"time: {self.elapsed_s:.1f} s of a {self.budget_s:g} s budget, {self.cores} cores, {self.ctx}")
        return "\n".join(lines) + "\n"


PHASE_TEXT = {
    "ceiling + loader": "first",
    "ceiling": "ceiling",
    "loader": "search",
    "confirm": "confirmation",
}
"""how the report names each phase of :attr:`Evidence.phase`: first (the ceiling and the loader at 0 and 1
workers, interleaved), the search (the loader alone), the confirmation (full pipelines)"""


def _toml_line(key: str, value: Any) -> str:
    """``key = value``; a credential (under a credential name, or of a credential's shape) is never written: a
    comment says to give it again."""
    from gluonbench.validate import redact

    if redact({key: value}) != {key: value}:
        return f"# {key} = (a credential, not written here: give it again, e.g. --pipeline-option {key}=...)"
    return f"{key} = {_toml(value)}"


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _num(v: Any, fmt: str) -> str:
    return format(v, fmt) if isinstance(v, int | float) and math.isfinite(v) else "?"


def _rate(v: float, ci: Any) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    lo, hi = ci if ci else (math.nan, math.nan)
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        return f"{v:.0f} samples/s [{lo:.0f}, {hi:.0f}]{wide_text(lo, hi)}"
    return f"{v:.0f} samples/s"


def _pct(v: Any) -> str:
    return f"{100 * v:.0f} %" if isinstance(v, int | float) and math.isfinite(v) else "n/a"


def _x(v: float) -> str:
    return f"{v:.2f}x" if math.isfinite(v) else "n/a x"


def dataloader_line(setting: Setting, batch_size: int) -> str:
    """The ``gluon.data.DataLoader(...)`` line for a setting."""
    kw = ", ".join(f"{k}={v!r}" for k, v in setting.loader_kwargs().items())
    return f"gluon.data.DataLoader(dataset, batch_size={batch_size}, shuffle=True, {kw})"


def lr_note(old: int, new: int, learning_rate: float) -> str:
    """The linear learning-rate scaling rule for a batch-size change (Goyal et al., 2017)."""
    if old == new:
        return f"batch size {old} kept (other batch sizes were not faster by more than 5 %)"
    lr = learning_rate * new / old
    return (
        f"batch size {old} -> {new}: scale the learning rate with it (linear scaling rule, Goyal et al. 2017), "
        f"e.g. {learning_rate:g} -> {lr:g}, with a few epochs of warm-up for large changes"
    )
