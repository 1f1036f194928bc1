"""``gluonbench check``: measure a pipeline beside the ruler, save it as a baseline, or judge it against one.

**What is measured.** The pipeline's diagnose probes (:mod:`gluonbench.diagnosis.probes`: the full pipeline, then
preprocessing, reading and the loader swapped out one after another, and the loader alone) and the
:mod:`ruler <gluonbench.check.ruler>` run in the same interleaved :class:`~gluonbench.engine.measure.Rounds`
through :func:`~gluonbench.engine.measure.measure`. Every figure is taken relative to the ruler *round by
round* (:func:`~gluonbench.analysis.stats.paired_ratio`): background load and machine speed move both
sides of a round alike and cancel. Two kinds of figure: wall seconds per sample, and CPU seconds per
sample of the process tree (less sensitive to neighbours; the same whether 1 or 2 cores run the work).

**Per stage.** A stage's cost is the difference between the probe that still runs it and the next one,
per round, over the ruler: preprocessing (decode + transform), read (``dataset[i]``), loader (batchify,
worker hand-off), copy (GPU only) and compute (the model step).

**Decision.** ``slowdown = now / baseline`` of the full pipeline's ruler-relative figure, with its
95 % CI (the baseline's and today's uncertainties combined, :func:`~gluonbench.analysis.stats.ratio_ci`).
With ``max_slowdown = t``:

* ``pass`` (exit 0): the CI's upper end is at most ``1 + t``: with 95 % confidence not slower beyond the
  threshold;
* ``regression`` (exit 1): the estimate is beyond ``1 + t`` and the CI's lower end above 1 (slower with
  95 % confidence); the stage whose cost grew most is named. Where the baseline was measured under other
  conditions (another CPU model or core count, other processes' load, or a ruler more than
  :data:`RULER_DRIFT` times faster or slower), the CI's lower end must be above ``1 + t`` too, else it is
  ``inconclusive`` with the advice to measure both side by side (``check --against``);
* ``inconclusive`` (exit 3): neither; the message says what budget would settle it;
* bad input (exit 2): :class:`~gluonbench.errors.GluonbenchError`, before anything is measured.

The figure compared is the sharper of wall and CPU time (the narrower CI; it does not depend on the
direction of the difference), and always CPU time when the baseline ran on another number of cores
(wall time of a pipeline with loader workers does not scale like the ruler's there); the result says
which, and why.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS, median, median_ci, ratio_ci
from gluonbench.bounds import LIMITS
from gluonbench.budgets import BUDGETS
from gluonbench.check.ruler import RULER_VERSION, ruler_description, ruler_pipeline
from gluonbench.check.target import Target
from gluonbench.errors import GluonbenchError
from gluonbench.files import FieldError, load_json, number, table, text, whole
from gluonbench.names import arg, example, param, param_example
from gluonbench.report import versions
from gluonbench.units import MAX_SECONDS, count

log = logging.getLogger(__name__)

FORMAT = "gluonbench-baseline"
FORMAT_VERSION = 1
EXIT_PASS, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3
RULER_DRIFT = 1.25
"""the ruler's pace against the baseline's beyond which the machine's state changed (load, clock): the comparison
is weaker then, and a regression must be beyond the threshold with 95 % confidence"""
EXIT_CODES = {"pass": EXIT_PASS, "regression": EXIT_REGRESSION, "inconclusive": EXIT_INCONCLUSIVE}
RULER = "ruler"
STAGE_ORDER = ("preprocessing", "read", "loader", "copy", "compute")
MAX_BUDGET_S = BUDGETS["check"].maximum
DEFAULT_BUDGET_S = 60.0
DEFAULT_MAX_SLOWDOWN = 0.05
GATE_SHARE = 0.5
"""share of the budget for the full pipeline beside the ruler (the verdict's figure); the rest measures the stages"""
GATE_ROUND_S = 0.0
"""one block per pipeline per round: the most paired rounds in the budget. The baseline and today's check are
measured alike, so what short rounds cost in accuracy cancels in their ratio (the diagnosis, which compares
probes with each other, uses longer rounds)"""
STAGE_MIN_ROUNDS = 3
"""paired rounds a stage's figure needs (the stages name a regression; the verdict itself needs PAIRED_MIN_ROUNDS)"""


def cores_here() -> int:
    """Cores this process may run on (``taskset`` and cgroup cpusets count, unlike ``os.cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass
class Figure:
    """One row of a measurement: absolute seconds per sample (wall and CPU) and the ruler-relative figures."""

    s_per_sample: float = math.nan
    rel: float = math.nan
    """wall seconds per sample over the ruler's, median over rounds"""
    rel_ci: list[float] = field(default_factory=lambda: [math.nan, math.nan])
    cpu_s_per_sample: float = math.nan
    cpu_rel: float = math.nan
    """CPU seconds per sample over the ruler's, median over rounds"""
    cpu_rel_ci: list[float] = field(default_factory=lambda: [math.nan, math.nan])
    rounds: int = 0

    def value(self, basis: str) -> tuple[float, tuple[float, float]]:
        if basis == "cpu":
            return self.cpu_rel, (self.cpu_rel_ci[0], self.cpu_rel_ci[1])
        return self.rel, (self.rel_ci[0], self.rel_ci[1])

    def absolute(self, basis: str) -> float:
        return self.cpu_s_per_sample if basis == "cpu" else self.s_per_sample

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Figure:
        out = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
        for k in ("s_per_sample", "rel", "cpu_s_per_sample", "cpu_rel"):
            v = getattr(out, k)
            setattr(out, k, math.nan if v is None else float(v))
        out.rel_ci = [math.nan if v is None else float(v) for v in out.rel_ci]
        out.cpu_rel_ci = [math.nan if v is None else float(v) for v in out.cpu_rel_ci]
        return out


@dataclass
class Snapshot:
    """One check measurement of a pipeline beside the ruler (what a baseline file stores)."""

    identity: str
    pipeline: dict[str, str]
    setting: dict[str, Any]
    cores: int
    total: Figure
    stages: dict[str, Figure]
    ceiling: Figure
    """the loader alone (no model step): the input pipeline's ceiling"""
    ruler: Figure
    budget_s: float
    elapsed_s: float
    rounds: int
    env: dict[str, Any] = field(default_factory=dict)
    started_utc: str = ""
    hash_rate: float = 0.0
    """the synthetic workload's ``cpu_ms`` calibration the pipeline was built with (0: none), so a check against this
    baseline builds it with the same work per sample (:func:`gluonbench.workloads.synthetic.pin_hash_rate`)"""
    background: dict[str, Any] | None = None
    """other processes' CPU while it was measured (:class:`~gluonbench.monitor.load.BackgroundLoad` as a dict);
    None in a baseline saved before it was kept"""
    options: dict[str, Any] | None = None
    """the workload's options (``--set``) or the factory's keyword arguments (``--pipeline-option``) it was built
    with, URL credentials redacted (:func:`options_record`); None in a baseline saved before they were kept"""

    @property
    def shown(self) -> str:
        """The identity with the options it was built with, as every title and report names it
        (``mypkg.train:make (classes=5)``); the baseline is tied to :attr:`identity`, a changed option is a note."""
        from gluonbench.identity import describe

        return describe(self.identity, self.options)

    @property
    def ceiling_samples_per_s(self) -> float:
        s = self.ceiling.s_per_sample
        return 1.0 / s if s > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        from gluonbench.report.store import json_safe

        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Snapshot:
        return cls(
            identity=str(d["identity"]),
            pipeline=dict(d.get("pipeline") or {}),
            setting=dict(d.get("setting") or {}),
            cores=int(d["cores"]),
            total=Figure.from_dict(d["total"]),
            stages={k: Figure.from_dict(v) for k, v in (d.get("stages") or {}).items()},
            ceiling=Figure.from_dict(d["ceiling"]),
            ruler=Figure.from_dict(d["ruler"]),
            budget_s=float(d["budget_s"]),
            elapsed_s=float(d.get("elapsed_s", 0.0)),
            rounds=int(d.get("rounds", 0)),
            env=dict(d.get("env") or {}),
            started_utc=str(d.get("started_utc", "")),
            hash_rate=float(d.get("hash_rate") or 0.0),
            options=dict(d["options"]) if isinstance(d.get("options"), dict) else None,
            background=dict(d["background"]) if isinstance(d.get("background"), dict) else None,
        )


def options_record(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` as a baseline keeps them: JSON values (anything else as its text, such as a path), with every
    secret in them redacted (:func:`gluonbench.validate.redact`: values under credential names, URL credentials,
    values of a known credential shape)."""
    from gluonbench.report.store import json_safe
    from gluonbench.validate import redact

    def plain(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v if v is None or isinstance(v, str | int | float | bool) else str(v)

    return {k: redact(json_safe(v), k) for k, v in plain(options or {}).items()}


def check_budget(budget_s: Any) -> float:
    """A check's budget, against its declaration (:data:`gluonbench.budgets.BUDGETS`)."""
    return BUDGETS["check"].check(budget_s)


def parse_fraction(text: Any, flag: str | None = None) -> float:
    """``5%``, ``5 %``, ``0.05`` -> 0.05; bounds 0.1 % (:data:`MIN_FRACTION`) <= x <= 1 (100 %)."""
    flag = flag or param("max_slowdown")  # the argument as the caller knows it
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        raw = str(text).strip()
        try:
            value = float(raw[:-1].strip()) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            raise GluonbenchError(f"{flag} {text!r} is not a percentage; e.g. {flag} 5%") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise GluonbenchError(f"{flag} {text!r} must be above 0 % and at most 100 %; e.g. {flag} 5%")
    if value < MIN_FRACTION:
        raise GluonbenchError(
            f"{flag} {text!r} is below {threshold_text(MIN_FRACTION)}, finer than a timed run can tell from noise; "
            f"give {threshold_text(MIN_FRACTION)} or more, e.g. {flag} 5%"
        )
    return value


MIN_FRACTION = 0.001
"""the smallest allowed slowdown threshold (0.1 %): a smaller one (``1e-300``) is parseable but absurd"""


def threshold_text(fraction: float) -> str:
    """A threshold as the user wrote it: 0.05 -> ``5%``, 0.001 -> ``0.1%`` (never rounded to ``0%``)."""
    return f"{round(fraction * 100, 2):g}%"


# -- measuring ---------------------------------------------------------------------------------------


def _series(per_round: Mapping[int, float], ruler: Mapping[int, float]) -> dict[int, float]:
    return {
        r: v / ruler[r]
        for r, v in per_round.items()
        if r in ruler and math.isfinite(v) and math.isfinite(ruler[r]) and ruler[r] > 0
    }


def relative_figure(
    wall: Mapping[int, float],
    cpu: Mapping[int, float],
    rw: Mapping[int, float],
    rc: Mapping[int, float],
    min_rounds: int = PAIRED_MIN_ROUNDS,
) -> Figure:
    """Median and 95 % CI over rounds of the figures over the reference's in the same round (``rw``, ``rc``: the
    ruler's, or the baseline's full pipeline for ``--against``), wall and CPU, and the absolute medians."""
    rel, crel = _series(wall, rw), _series(cpu, rc)
    out = Figure(rounds=len(rel))
    out.s_per_sample = median(list(wall.values()))
    out.cpu_s_per_sample = median(list(cpu.values()))
    if len(rel) >= min_rounds:
        out.rel, out.rel_ci = median(list(rel.values())), list(median_ci(list(rel.values())))
    if len(crel) >= min_rounds:
        out.cpu_rel, out.cpu_rel_ci = median(list(crel.values())), list(median_ci(list(crel.values())))
    return out


def minus(a: Mapping[int, float], b: Mapping[int, float]) -> dict[int, float]:
    return {r: a[r] - b[r] for r in a if r in b}


def stage_figures(
    rec: Mapping[str, Any], rw: Mapping[int, float], rc: Mapping[int, float], no_copy: bool
) -> dict[str, Figure]:
    """Each stage's figure from the probes' per-round records ``rec`` (a probe not measured stands for the one before
    it in the chain), relative to the reference's rounds ``rw``/``rc``: a stage is the difference of the probes
    before and after its removal; ``compute`` is the last probe. ``no_copy``: the copy to the device is not a
    separate stage here."""
    from gluonbench.diagnosis.probes import CHAIN

    wall: dict[str, dict[int, float]] = {}
    cpu: dict[str, dict[int, float]] = {}
    previous = None
    for p in CHAIN:
        source = p.name if p.name in rec else previous
        wall[p.name], cpu[p.name] = dict(rec[source].per_round), dict(rec[source].cpu_per_round)
        previous = source
    stages: dict[str, Figure] = {}
    for before, probe in itertools.pairwise(CHAIN):
        if probe.substage and (probe.substage != "copy" or not no_copy):
            stages[probe.substage] = relative_figure(
                minus(wall[before.name], wall[probe.name]),
                minus(cpu[before.name], cpu[probe.name]),
                rw,
                rc,
                STAGE_MIN_ROUNDS,
            )
    last = CHAIN[-1].name
    stages["compute"] = relative_figure(wall[last], cpu[last], rw, rc, STAGE_MIN_ROUNDS)
    return {k: stages[k] for k in STAGE_ORDER if k in stages}


def measure_snapshot(
    target: Target, budget_s: float = DEFAULT_BUDGET_S, on_progress: Callable[[float, float], None] | None = None
) -> Snapshot:
    """Measure ``target``'s probes and the ruler in interleaved rounds for the whole budget."""
    from gluonbench.contexts import ctx_text
    from gluonbench.diagnosis.measure import measure_first_batch
    from gluonbench.diagnosis.probes import PROBES, Context
    from gluonbench.engine.measure import Rounds, measure
    from gluonbench.env import environment, utc_now

    budget_s = check_budget(budget_s)
    pipeline = target.pipeline
    started = utc_now()
    skipped = {p.name for p in PROBES if p.skip_reason(pipeline) is not None}
    context = Context(first_batch=measure_first_batch(pipeline))
    built = {p.name: p.build(pipeline, context) for p in PROBES if p.name not in skipped}
    ruler_p = ruler_pipeline(pipeline.ctx)
    # two phases, each beside the ruler: the verdict's figure (the full pipeline alone with the ruler, so
    # it gets many paired rounds), then every probe for the per-stage figures. Each runs its whole share
    # of the budget: a fixed amount of evidence, no stopping when the answer looks good.
    gate_s = GATE_SHARE * budget_s
    stage_s = budget_s - gate_s

    def progress(offset: float) -> Callable[[float, float], None] | None:
        if on_progress is None:
            return None
        return lambda elapsed, _budget: on_progress(min(offset + elapsed, budget_s), budget_s)

    gate = measure(
        {"full": pipeline, RULER: ruler_p},
        Rounds(budget_s=gate_s, round_s=GATE_ROUND_S),
        on_progress=progress(0.0),
        done=lambda _m: False,
    )
    probes = measure(
        {**{k: v for k, v in built.items() if k != "full"}, "full": pipeline, RULER: ruler_p},
        Rounds(budget_s=stage_s, round_s=GATE_ROUND_S),
        on_progress=progress(gate.elapsed_s),
        done=lambda _m: False,
    )
    g, rec = gate.records, probes.records
    rw, rc = rec[RULER].per_round, rec[RULER].cpu_per_round
    background = _background([r.system for r in (*g.values(), *rec.values())])

    ordered = stage_figures(rec, rw, rc, "device_batch" in skipped)
    ruler = relative_figure(g[RULER].per_round, g[RULER].cpu_per_round, g[RULER].per_round, g[RULER].cpu_per_round)
    return Snapshot(
        identity=target.identity,
        pipeline=pipeline.stages(),
        setting={"batch_size": pipeline.batch_size, "num_workers": pipeline.num_workers, "ctx": ctx_text(pipeline.ctx)},
        cores=cores_here(),
        total=relative_figure(g["full"].per_round, g["full"].cpu_per_round, g[RULER].per_round, g[RULER].cpu_per_round),
        stages=ordered,
        ceiling=relative_figure(
            rec["loader_only"].per_round, rec["loader_only"].cpu_per_round, rw, rc, STAGE_MIN_ROUNDS
        ),
        ruler=ruler,
        budget_s=budget_s,
        elapsed_s=gate.elapsed_s + probes.elapsed_s,
        rounds=gate.rounds,
        env=environment(),
        started_utc=started,
        background=background,
    )


def _background(systems: list[Any]) -> dict[str, Any] | None:
    """Other processes' CPU over the whole measurement (its monitors' windows), as a dict."""
    from gluonbench.monitor import merge_summaries
    from gluonbench.monitor.load import from_summary

    load = from_summary(merge_summaries(systems).to_dict()) if systems else None
    return load.to_dict() if load is not None else None


# -- baseline files ----------------------------------------------------------------------------------


def save_baseline(snapshot: Snapshot, path: str | Path) -> Path:
    """Write ``snapshot`` as a baseline file (JSON, written atomically); refuse one without usable figures."""
    from gluonbench.files import atomic_write_text, write_error
    from gluonbench.report.store import check_writable_file

    if not (math.isfinite(snapshot.total.rel) and math.isfinite(snapshot.total.cpu_rel)):
        bigger = max(60, math.ceil(2 * snapshot.budget_s))
        raise GluonbenchError(
            f"only {snapshot.total.rounds} paired rounds of the pipeline and the ruler fitted in {param('budget_s')} "
            f"{snapshot.budget_s:g} (at least {PAIRED_MIN_ROUNDS} are needed); nothing saved: raise {param('budget_s')}, "
            f"e.g. {param_example(f'budget_s={bigger}', f'--budget {bigger}')}"
        )

    path = check_writable_file(path, arg("save", "--save-baseline"))
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "ruler_spec": ruler_description(), **snapshot.to_dict()}
    try:
        atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")
    except OSError as exc:
        raise write_error(path, exc) from exc
    return path


def _check_figure(value: Any, name: str, label: str, fix: str, *, signed: bool = False) -> None:
    """A stored :class:`Figure`: finite numbers (null where not measured) in range; a stage's figure is a
    difference of two measurements, so it may be negative."""
    if not isinstance(value, dict):
        raise FieldError(f"{label} is damaged: field {name} must be an object of figures; {fix}")
    low = -1e9 if signed else 0.0
    for key in ("s_per_sample", "cpu_s_per_sample"):
        number(value.get(key), f"{name}.{key}", label, fix, low=max(low, -MAX_SECONDS), high=MAX_SECONDS, none_ok=True)
    for key in ("rel", "cpu_rel"):
        number(value.get(key), f"{name}.{key}", label, fix, low=low, high=1e9, none_ok=True)
    for key in ("rel_ci", "cpu_rel_ci"):
        ci = value.get(key, [None, None])
        if not isinstance(ci, list) or len(ci) != 2:
            raise FieldError(f"{label} is damaged: field {name}.{key} must be a list of two numbers; {fix}")
        for i, v in enumerate(ci):
            number(v, f"{name}.{key}[{i}]", label, fix, low=-1e9, high=1e9, none_ok=True)
    whole(value.get("rounds", 0), f"{name}.rounds", label, fix, low=0, high=MAX_ROUNDS)


MAX_ROUNDS = 10_000_000
"""Paired rounds a baseline may hold (one a millisecond for the longest budget would be fewer)."""


def check_baseline_fields(doc: Mapping[str, Any], label: str, fix: str) -> None:
    """Every field of a baseline document typed and bounded (finite figures, cores and rounds in range, a budget a
    command could run), or one line naming ``label``, the field and ``fix``: a hand-edited or damaged baseline is
    refused before it is compared with anything."""
    text(doc.get("identity"), "identity", label, fix)
    for name in ("pipeline", "setting", "env"):
        table(doc, name, label, fix, required=False, max_items=256)
    whole(doc.get("cores"), "cores", label, fix, low=1, high=LIMITS["workers"][1] * 16)
    number(doc.get("budget_s"), "budget_s", label, fix, low=1e-3, high=MAX_SECONDS)
    number(doc.get("elapsed_s", 0.0), "elapsed_s", label, fix, low=0.0, high=MAX_SECONDS)
    whole(doc.get("rounds", 0), "rounds", label, fix, low=0, high=MAX_ROUNDS)
    number(doc.get("hash_rate") or 0.0, "hash_rate", label, fix, low=0.0, high=1e15)
    text(doc.get("started_utc", ""), "started_utc", label, fix, max_len=64, none_ok=True)
    for name in ("total", "ceiling", "ruler"):
        if name not in doc:
            raise FieldError(f"{label} is damaged: field {name} is missing; {fix}")
        _check_figure(doc[name], name, label, fix)
    for stage, fig in table(doc, "stages", label, fix, required=False, max_items=64).items():
        _check_figure(fig, f"stages.{stage}", label, fix, signed=True)
    for name in ("options", "background"):
        table(doc, name, label, fix, required=False, max_items=1024)


BASELINE_MAX_BYTES = 4 << 20
"""A baseline is a few KB (its figures, settings and environment); a file over this is not one."""


def load_baseline(path: str | Path, identity: str | None = None) -> Snapshot:
    """Read a baseline file; one-line errors for a missing, corrupt or foreign file, or another pipeline's."""
    path = Path(path)
    fix = f"save it again with {arg('save', '--save-baseline')}"
    if not path.exists() and not path.is_symlink():
        raise GluonbenchError(
            f"{param('baseline')} {path}: no such file; make one with "
            + param_example(f"save='{path}'", f"gluonbench check --save-baseline {path}")
        )
    doc = load_json(path, arg("baseline"), BASELINE_MAX_BYTES, fix)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GluonbenchError(
            f"{param('baseline')} {path} is not a gluonbench baseline file; save one with {param('save', '--save-baseline')}"
        )
    version = doc.get("version")
    if isinstance(version, int) and not isinstance(version, bool):  # a baseline's own version is its format version
        versions.refuse_newer("baseline", version, FORMAT_VERSION, f"{arg('baseline')} {path}")
    if version != FORMAT_VERSION:
        raise GluonbenchError(
            f"{param('baseline')} {path} has format version {doc.get('version')!r}, this gluonbench reads {FORMAT_VERSION}; "
            f"save it again with {param('save', '--save-baseline')}"
        )
    spec = doc.get("ruler_spec")
    version = spec.get("version") if isinstance(spec, dict) else None
    if version != RULER_VERSION:
        raise GluonbenchError(
            f"{param('baseline')} {path} was measured with ruler version {version!r}, "
            f"this gluonbench uses {RULER_VERSION}; save it again with {param('save', '--save-baseline')}"
        )
    check_baseline_fields(doc, f"{arg('baseline')} {path}", fix)
    try:
        snap = Snapshot.from_dict(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GluonbenchError(
            f"{param('baseline')} {path} is damaged (field {exc}); save it again with {param('save', '--save-baseline')}"
        ) from None
    if not (math.isfinite(snap.total.rel) and snap.total.rel > 0 and math.isfinite(snap.total.cpu_rel)):
        raise GluonbenchError(
            f"{param('baseline')} {path} holds no usable figures for the full pipeline; save it again"
        )
    if identity is not None and snap.identity != identity:
        raise GluonbenchError(
            f"{param('baseline')} {path} is for pipeline {snap.identity!r}, not {identity!r}; "
            f"save a baseline for this pipeline with {param('save', '--save-baseline')}"
        )
    return snap


# -- deciding ----------------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the check's table: baseline and today's absolute figure, the ruler-relative ratio, verdict."""

    name: str
    unit: str
    baseline: float
    now: float
    ratio: float
    ratio_ci: list[float]
    verdict: str


@dataclass
class CheckResult:
    """The outcome of a check against a baseline; ``to_dict()`` is JSON-serialisable."""

    outcome: str
    """``pass``, ``regression`` or ``inconclusive``"""
    exit_code: int
    message: str
    max_slowdown: float
    basis: str
    """``wall`` or ``cpu``: which figure was compared"""
    basis_reason: str
    slowdown: float
    slowdown_ci: list[float]
    stage: str | None
    """the stage whose cost grew most (named on a regression)"""
    rows: list[Row]
    notes: list[str]
    needed_budget_s: float | None
    baseline_path: str
    now: Snapshot
    baseline: Snapshot
    reference: str = "ruler"
    """what every figure is taken over in the same round: ``ruler`` (a stored baseline) or ``baseline`` (``--against``:
    the baseline's own full pipeline, measured beside the candidate)"""

    def to_dict(self) -> dict[str, Any]:
        from gluonbench.report.store import json_safe

        d = asdict(self)
        d["now"], d["baseline"] = self.now.to_dict(), self.baseline.to_dict()
        return json_safe(versions.stamp("check", d))


def _slowdown(now: Figure, base: Figure, basis: str) -> tuple[float, tuple[float, float]]:
    a, a_ci = now.value(basis)
    b, b_ci = base.value(basis)
    return ratio_ci(a, a_ci, b, b_ci)


def _log_half(value: float, ci: tuple[float, float]) -> float:
    lo, hi = ci
    if not all(math.isfinite(v) and v > 0 for v in (value, lo, hi)):
        return math.inf
    return max(math.log(value / lo), math.log(hi / value))


def _choose_basis(now: Snapshot, base: Snapshot) -> tuple[str, str]:
    if "wall" in ((now.setting or {}).get("timed"), (base.setting or {}).get("timed")):
        return "wall", "the script's steps are timed by wall clock inside it (no CPU figure of its own)"
    if now.cores != base.cores:
        return "cpu", (
            f"the baseline ran on {base.cores} core(s), this check on {now.cores}: wall time does not normalise "
            "across core counts (loader workers and the model's threads scale unlike the ruler), so CPU seconds "
            "per sample (relative to the ruler's) were compared"
        )
    widths = {b: _log_half(*_slowdown(now.total, base.total, b)) for b in ("wall", "cpu")}
    if widths["cpu"] < widths["wall"]:
        return (
            "cpu",
            f"CPU seconds per sample had the narrower 95 % CI (+-{widths['cpu']:.1%} vs +-{widths['wall']:.1%} wall)",
        )
    return "wall", f"wall time had the narrower 95 % CI (+-{widths['wall']:.1%} vs +-{widths['cpu']:.1%} CPU)"


def _options_text(options: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(options.items())) or "none"


def decide(
    now: Snapshot,
    base: Snapshot,
    max_slowdown: float = DEFAULT_MAX_SLOWDOWN,
    baseline_path: str = "",
    reference: str = "ruler",
) -> CheckResult:
    """Judge ``now`` against ``base`` (see the module docstring for the rule). ``reference``: what the snapshots'
    relative figures are taken over, ``ruler`` or ``baseline`` (:mod:`gluonbench.check.against`)."""
    t = parse_fraction(max_slowdown)
    notes: list[str] = []
    if now.identity != base.identity:
        raise GluonbenchError(f"the baseline is for pipeline {base.identity!r}, not {now.identity!r}")
    basis, why = _choose_basis(now, base)
    for key in ("batch_size", "num_workers", "ctx"):
        if base.setting.get(key) != now.setting.get(key):
            notes.append(f"{key} changed: baseline {base.setting.get(key)}, now {now.setting.get(key)}")
    if base.options is not None and now.options is not None and base.options != now.options:
        notes.append(f"options changed: baseline {_options_text(base.options)}, now {_options_text(now.options)}")
    weaker: list[str] = []
    if base.env.get("cpu") and base.env.get("cpu") != now.env.get("cpu"):
        notes.append(
            f"another CPU model: baseline {base.env.get('cpu')}, now {now.env.get('cpu')} (the ruler normalises speed)"
        )
        weaker.append("another CPU model")
    if now.cores != base.cores:
        weaker.append(f"{base.cores} cores then, {now.cores} now")
    loads = [(s.background or {}).get("other_cores") for s in (base, now)]
    if reference == "ruler" and all(isinstance(x, int | float) for x in loads):
        then, today = float(loads[0]), float(loads[1])  # type: ignore[arg-type]
        from gluonbench.monitor.load import OTHER_CORES_WARN, OTHER_SHARE_WARN

        if abs(today - then) >= max(OTHER_CORES_WARN, OTHER_SHARE_WARN * now.cores):
            weaker.append(f"other processes used {then:.1f} cores then, {today:.1f} now")
    pace = base.ruler.s_per_sample / now.ruler.s_per_sample if now.ruler.s_per_sample > 0 else math.nan
    if reference == "ruler" and math.isfinite(pace) and not 1 / RULER_DRIFT <= pace <= RULER_DRIFT:
        weaker.append(f"the ruler ran {pace:.2f}x as fast now as then (the machine's load or clock changed)")
    if (now.background or {}).get("busy"):
        from gluonbench.monitor.load import BackgroundLoad

        load = BackgroundLoad(**{k: now.background[k] for k in ("window_s", "cores", "other_cores", "steal_pct")})
        notes.append(f"during this check {load.text()}: {load.effect()}")
    if weaker and reference == "ruler":
        notes.append(
            f"the baseline was measured under other conditions ({'; '.join(weaker)}): the ruler corrects for speed, "
            "not for everything a machine's state changes, so this comparison is weaker; "
            "check --against REF measures the baseline's code beside this one, in one job"
        )
    for key in ("mxnet", "numpy", "python"):
        if base.env.get(key) and base.env.get(key) != now.env.get(key):
            notes.append(f"{key} {base.env.get(key)} in the baseline, {now.env.get(key)} now")

    s, (lo, hi) = _slowdown(now.total, base.total, basis)
    rows = _rows(now, base, basis, t, reference)
    limit = 1 + t
    needed: float | None = None
    stage = None
    if not all(math.isfinite(v) for v in (s, lo, hi)):
        outcome = "inconclusive"
        needed = now.budget_s * 1.5 * PAIRED_MIN_ROUNDS / max(now.total.rounds, 1)
        message = (
            f"only {count(now.total.rounds, 'paired round')} fitted in the budget (at least {PAIRED_MIN_ROUNDS} are needed); "
            f"a budget of about {needed:.0f} s would give enough "
            f"({example(f'budget_s={math.ceil(needed)}', f'--budget {math.ceil(needed)}')})"
        )
    elif hi <= limit:
        outcome = "pass"
        message = (
            f"not slower beyond {threshold_text(t)}: {_pct(s)} (95 % CI {_pct(lo)} .. {_pct(hi)}) against the baseline, "
            f"{basis} time relative to the {'ruler' if reference == 'ruler' else 'baseline in the same round'}"
        )
    elif s > limit and lo > (limit if weaker and reference == "ruler" else 1):
        outcome = "regression"
        stage, unnamed = _slower_stage(rows, base)
        more = math.ceil(2 * now.budget_s)
        message = f"slower by {_pct(s)} (95 % CI {_pct(lo)} .. {_pct(hi)}), beyond the {threshold_text(t)} allowed" + (
            f"; the stage that got slower: {stage}"
            if stage
            else f"; {unnamed}: a larger budget would name the one that got slower "
            f"({example(f'budget_s={more}', f'--budget {more}')})"
        )
    elif s > limit and lo > 1:  # slower, under other conditions than the baseline's: not beyond doubt
        outcome = "inconclusive"
        message = (
            f"slower by {_pct(s)} (95 % CI {_pct(lo)} .. {_pct(hi)}), but the baseline was measured under other "
            f"conditions and the CI reaches below the {threshold_text(t)} allowed: measure the baseline's code beside "
            "this one (check --against REF) to settle it"
        )
    else:
        outcome = "inconclusive"
        needed = _needed_budget(now, base, basis, s, limit)
        settle = (
            f"a budget of about {needed:.0f} s would settle it "
            f"({example(f'budget_s={math.ceil(needed or 0)}', f'--budget {math.ceil(needed or 0)}')})"
            if needed is not None and needed <= MAX_BUDGET_S
            else f"the baseline is too noisy to settle it: save it again with a larger {arg('budget_s')}"
            if needed is None
            else f"it would take over {MAX_BUDGET_S:.0f} s: the change is too close to the threshold to resolve"
        )
        message = (
            f"{_pct(s)} (95 % CI {_pct(lo)} .. {_pct(hi)}) is too noisy to tell against {threshold_text(t)}; {settle}"
        )
    return CheckResult(
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
        message=message,
        max_slowdown=t,
        basis=basis,
        basis_reason=why,
        slowdown=s,
        slowdown_ci=[lo, hi],
        stage=stage,
        rows=rows,
        notes=notes,
        needed_budget_s=needed,
        baseline_path=str(baseline_path),
        now=now,
        baseline=base,
        reference=reference,
    )


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}" if math.isfinite(ratio) else "n/a"


def _needed_budget(now: Snapshot, base: Snapshot, basis: str, s: float, limit: float) -> float | None:
    """Budget at which today's CI would be narrow enough to decide, if the estimate stays put (CI ~ 1/sqrt(rounds))."""
    h_now = _log_half(*now.total.value(basis))
    h_base = _log_half(*base.total.value(basis))
    target = math.log(s) if s > limit else math.log(limit / s)  # regression needs lo > 1; pass needs hi <= limit
    if not (math.isfinite(h_now) and math.isfinite(h_base)) or target <= 0:
        return math.inf
    room = target**2 - h_base**2
    if room <= 0:
        return None
    return now.budget_s * (h_now**2 / room)


def _slower_stage(rows: list[Row], base: Snapshot) -> tuple[str | None, str]:
    """The stage the table itself calls ``slower`` (the one whose cost grew most, if several), else why none is named.

    Named from the rows, never from point figures alone: under load a stage got by subtraction can move
    either way by more than the change, so a stage whose own interval is missing or wide is not named.
    """
    stages = [r for r in rows if r.name in base.stages]
    slower = [r for r in stages if r.verdict == "slower"]
    if slower:
        return max(slower, key=lambda r: r.now - r.baseline).name, ""
    if any(r.verdict == "n/a" for r in stages):
        return None, "too few paired rounds of the stages to tell them apart"
    return None, "no one stage is clearly slower at this budget (their intervals are wide, or the cost spread)"


def _rows(now: Snapshot, base: Snapshot, basis: str, t: float, reference: str = "ruler") -> list[Row]:
    # baseline and now in the unit the ratio is taken in (the pipeline's time over the reference's in the same
    # round), so the columns and the ratio always agree; the ruler's own row shows the machine's speed
    unit = f"x {reference} ({'CPU' if basis == 'cpu' else 'wall'})"
    rows: list[Row] = []

    def row(name: str, a: Figure, b: Figure, verdict: Callable[[float, float, float], str]) -> None:
        r, (lo, hi) = _slowdown(a, b, basis)
        rows.append(Row(name, unit, b.value(basis)[0], a.value(basis)[0], r, [lo, hi], verdict(r, lo, hi)))

    def judge(r: float, lo: float, hi: float) -> str:
        if not math.isfinite(r):
            return "n/a"
        if r > 1 + t and lo > 1:
            return "slower"
        if hi <= 1 + t:
            return "ok"
        if r < 1 and hi < 1:
            return "faster"
        return "unclear"

    row("total (full pipeline)", now.total, base.total, judge)
    growth_total = now.total.value(basis)[0] - base.total.value(basis)[0]
    for name, fig in now.stages.items():
        if name not in base.stages:
            continue

        def stage_judge(r: float, lo: float, hi: float, name: str = name, fig: Figure = fig) -> str:
            v = judge(r, lo, hi)
            grew = fig.value(basis)[0] - base.stages[name].value(basis)[0]
            # a stage is slower only when its growth is a real part of the pipeline's (small stages' ratios are noisy)
            if v == "slower" and not (growth_total > 0 and grew >= growth_total / 3):
                return "unclear"
            return v

        row(name, fig, base.stages[name], stage_judge)
    if math.isfinite(now.ceiling.s_per_sample) or math.isfinite(base.ceiling.s_per_sample):
        row("loader-only ceiling", now.ceiling, base.ceiling, judge)
    if reference != "ruler":
        return rows  # the reference is the baseline itself: no machine-speed row
    # the ruler itself: its absolute speed today over the baseline's (machine speed, not normalised)
    a, b = now.ruler.absolute(basis), base.ruler.absolute(basis)
    rows.append(
        Row(
            "ruler (machine speed)",
            "CPU us/sample" if basis == "cpu" else "us/sample",
            b * 1e6,
            a * 1e6,
            a / b if b > 0 else math.nan,
            [math.nan, math.nan],
            "reference",
        )
    )
    return rows
