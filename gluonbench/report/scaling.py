"""Scaling summary of a distributed sweep: a pure function of the per-worker records in ``runs.jsonl``.

Per job (one ``hosts`` x loader-``workers`` x repeat): the aggregate throughput is the samples every
worker trained in the steady state (first step left out) over the slowest worker's steady time, since
synchronous SGD moves at the slowest worker's pace. Per (hosts, workers) the median over repeats is
compared with the ideal, ``hosts`` times the 1-worker throughput at the same per-worker batch:
scaling efficiency = throughput / ideal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gluonbench.analysis.stats import median
from gluonbench.identity import of_settings
from gluonbench.report.charts import SPLIT_COLORS, Chart, new_figure, repeats_text, stacked_figure
from gluonbench.report.exporters import (
    MarkdownTable,
    Report,
    Table,
    TableSyntax,
    machine_line,
    stage_label,
    where_when,
)
from gluonbench.report.summary import ok_first
from gluonbench.units import count


@dataclass
class JobSummary:
    """One distributed job, aggregated over its workers."""

    hosts: int
    workers: int
    repeat: int
    ok: bool
    error: str | None
    reported: int
    samples_per_s: float
    """steady aggregate: all workers' steady samples over the slowest worker's steady time"""
    run_samples_per_s: float
    """whole run: all samples over the slowest worker's train duration (start-up included)"""
    slowest_rank: int | None
    slowest_samples_per_s: float
    fastest_samples_per_s: float
    wait_share: float
    copy_share: float
    compute_share: float
    comm_share: float
    kvstore_step_ms: float
    startup_s: float
    accuracy: float
    params_identical: bool
    param_sha256: list[str]


@dataclass
class ScalingRow:
    """All repeats of one (hosts, loader workers) setting: medians."""

    hosts: int
    workers: int
    jobs: int
    failed: int
    per_worker_batch: int
    global_batch: int
    samples_per_s: float
    run_samples_per_s: float
    ideal_samples_per_s: float
    efficiency: float
    slowest_rank: int | None
    slowest_samples_per_s: float
    spread: float
    """fastest over slowest worker's samples/s (1.0 = even)"""
    wait_share: float
    copy_share: float
    compute_share: float
    comm_share: float
    kvstore_step_ms: float
    startup_s: float
    accuracy: float
    params_identical: bool
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScalingSummary:
    rows: list[ScalingRow]
    jobs: list[JobSummary]
    env: dict[str, Any]
    settings: dict[str, Any]
    started_utc: str
    finished_utc: str
    diagnoses: list[dict[str, Any]] = field(default_factory=list)
    """the diagnosed worker of each job (``--diagnose``): hosts, workers, repeat, rank, verdict, shares"""

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _f(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def summarise_job(records: list[dict[str, Any]]) -> JobSummary:
    """Aggregate one job's worker records (all share ``spec.hosts/workers/repeat``)."""
    spec = records[0]["spec"]
    job = (records[0].get("extra") or {}).get("job") or {}
    ok = [r for r in records if r.get("status") == "ok" and r.get("steady")]
    steady = [r["steady"] for r in ok]
    slow_time = max((s["total_s"] for s in steady), default=math.nan)
    samples = sum(s["samples"] for s in steady)
    rates = [(r["extra"].get("rank"), _f(r["steady"].get("samples_per_s"))) for r in ok]
    slowest = min(rates, key=lambda kv: kv[1], default=(None, math.nan))
    total = sum(s["total_s"] for s in steady)

    def share(key: str) -> float:
        return sum(s[key] for s in steady) / total if total > 0 else math.nan

    good = bool(ok) and len(ok) == int(spec.get("hosts", 1)) and job.get("status", "ok") == "ok"
    return JobSummary(
        hosts=int(spec.get("hosts", 1)),
        workers=int(spec["workers"]),
        repeat=int(spec.get("repeat", 0)),
        ok=good,
        error=next((r.get("error") for r in records if r.get("status") != "ok"), None) or job.get("error"),
        reported=len(ok),
        samples_per_s=samples / slow_time if good and slow_time > 0 else math.nan,
        run_samples_per_s=(sum(r["train_samples"] for r in ok) / max(r["train_s"] for r in ok) if good else math.nan),
        slowest_rank=slowest[0],
        slowest_samples_per_s=slowest[1],
        fastest_samples_per_s=max((v for _, v in rates), default=math.nan),
        wait_share=share("wait_s"),
        copy_share=share("copy_s"),
        compute_share=share("compute_s"),
        comm_share=median([_f(r["extra"].get("comm_share")) for r in ok]),
        kvstore_step_ms=median([_f(r["extra"].get("kvstore_step_ms")) for r in ok]),
        startup_s=max((_f(r["extra"].get("startup_s")) for r in ok), default=math.nan),
        accuracy=median([_f(r.get("accuracy")) for r in ok]),
        params_identical=bool(job.get("params_identical")),
        param_sha256=sorted({str(r["extra"].get("param_sha256")) for r in ok}),
    )


def summarise_scaling(records: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> ScalingSummary:
    """Group ``kind == "dist"`` records into jobs, jobs into (hosts, workers) rows."""
    dist = [r for r in records if r.get("kind") == "dist"]
    by_job: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
    for r in dist:
        s = r["spec"]
        by_job.setdefault((int(s.get("hosts", 1)), int(s["workers"]), int(s.get("repeat", 0))), []).append(r)
    jobs = [summarise_job(by_job[k]) for k in sorted(by_job)]
    groups: dict[tuple[int, int], list[JobSummary]] = {}
    for j in jobs:
        groups.setdefault((j.hosts, j.workers), []).append(j)
    settings = settings or {}
    batch = int(settings.get("batch_size") or dist[0]["spec"]["batch_size"] if dist else 0)
    devices = len(settings.get("gpus") or []) or int(settings.get("devices") or 1)
    rows = []
    for (hosts, workers), js in sorted(groups.items()):
        good = [j for j in js if j.ok]
        slowest = min(good, key=lambda j: j.slowest_samples_per_s, default=None)
        rows.append(
            ScalingRow(
                hosts=hosts,
                workers=workers,
                jobs=len(good),
                failed=len(js) - len(good),
                per_worker_batch=batch * devices,
                global_batch=batch * devices * hosts,
                samples_per_s=median([j.samples_per_s for j in good]),
                run_samples_per_s=median([j.run_samples_per_s for j in good]),
                ideal_samples_per_s=math.nan,
                efficiency=math.nan,
                slowest_rank=slowest.slowest_rank if slowest else None,
                slowest_samples_per_s=median([j.slowest_samples_per_s for j in good]),
                spread=median([j.fastest_samples_per_s / j.slowest_samples_per_s for j in good]),
                wait_share=median([j.wait_share for j in good]),
                copy_share=median([j.copy_share for j in good]),
                compute_share=median([j.compute_share for j in good]),
                comm_share=median([j.comm_share for j in good]),
                kvstore_step_ms=median([j.kvstore_step_ms for j in good]),
                startup_s=median([j.startup_s for j in good]),
                accuracy=median([j.accuracy for j in good]),
                params_identical=bool(good) and all(j.params_identical for j in good),
                errors=[str(j.error) for j in js if not j.ok],
            )
        )
    for row in rows:
        base = next((r for r in rows if r.hosts == 1 and r.workers == row.workers and r.jobs), None)
        if base is not None and not math.isnan(row.samples_per_s):
            row.ideal_samples_per_s = base.samples_per_s * row.hosts
            row.efficiency = row.samples_per_s / row.ideal_samples_per_s
    diagnoses = [
        {
            "hosts": int(r["spec"].get("hosts", 1)),
            "workers": int(r["spec"]["workers"]),
            "repeat": int(r["spec"].get("repeat", 0)),
            "rank": r["extra"].get("rank"),
            **{k: r["extra"].get(k) for k in ("verdict", "shares", "secondary", "input_bound", "diagnose_error")},
        }
        for r in dist
        if (r.get("extra") or {}).get("verdict") or (r.get("extra") or {}).get("diagnose_error")
    ]
    return ScalingSummary(
        diagnoses=diagnoses,
        rows=rows,
        jobs=jobs,
        env=next((r.get("env") for r in ok_first(dist)), {}) or {},
        settings=settings,
        started_utc=min((r.get("started_utc", "") for r in dist if r.get("started_utc")), default=""),
        finished_utc=max((r.get("finished_utc", "") for r in dist if r.get("finished_utc")), default=""),
    )


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * 100:.0f} %"


CSV_FIELDS = [f for f in ScalingRow.__dataclass_fields__ if f != "errors"]


def csv_table(summary: ScalingSummary) -> Table:
    """One row per (workers, loader workers): the figures in plain values."""
    table = Table(list(CSV_FIELDS))
    for row in summary.rows:
        d = row.to_dict()
        table.rows.append([d[k] for k in CSV_FIELDS])
    return table


def _identical(same: bool, kvstore: str | None) -> str:
    if same:
        return "yes"
    # dist_async: each worker pulls whenever it pushes, so workers end on different parameters by design
    return "no (async: expected)" if kvstore and "async" in kvstore else "NO"


def to_markdown(summary: ScalingSummary, tables: TableSyntax | None = None) -> str:
    """The scaling report as a document; its tables in ``tables``' syntax (Markdown by default)."""
    tables = tables or MarkdownTable()
    s = summary.settings
    lines = [
        f"# gluonbench scaling: {of_settings(s)}, kvstore {s.get('kvstore')}, launcher {s.get('launcher')}",
        "",
        f"- Machine: {machine_line(summary)}" if summary.env else "- Machine: unknown",
        f"- Date (UTC): {summary.started_utc} to {summary.finished_utc}",
        f"- Command: `{s.get('command', '')}`",
        f"- Settings: per-device batch {s.get('batch_size')}, devices per worker "
        f"{len(s.get('gpus') or []) or s.get('devices', 1)}, servers {s.get('servers')}, "
        f"max batches {s.get('max_batches') or 'all'}, epochs {s.get('epochs')}, repeats {s.get('repeat')}",
        "",
        "*workers (dist)* are kvstore worker processes (one per host in a real cluster); *loader* is the "
        "DataLoader's worker count in each. *samples/s* is the steady aggregate: all workers' samples "
        "(first step left out) over the slowest worker's time. *ideal* is the 1-worker throughput times "
        "the worker count (same per-worker batch); *efficiency* = samples/s / ideal. Shares are of the "
        "summed steady step time of all workers; *kvstore* is push/pull (allreduce) time, a part of compute.",
        "",
    ]
    main = Table(
        [
            "workers (dist)", "loader", "global batch", "samples/s", "ideal", "efficiency",
            "slowest worker (rank: samples/s)", "input wait", "copy", "compute", "kvstore", "kvstore ms/step",
            "start-up (s)", "test accuracy", "params identical",
        ],
        align="rrrrrrlrrrrrrrl",
    )  # fmt: skip
    for r in summary.rows:
        if not r.jobs:
            main.rows.append([r.hosts, r.workers, r.global_batch, f"failed ({r.failed})"] + [None] * 11)
            continue
        main.rows.append(
            [
                r.hosts, r.workers, r.global_batch, _fmt(r.samples_per_s, 4), _fmt(r.ideal_samples_per_s, 4),
                _pct(r.efficiency), f"{r.slowest_rank}: {_fmt(r.slowest_samples_per_s, 4)}", _pct(r.wait_share),
                _pct(r.copy_share), _pct(r.compute_share), _pct(r.comm_share), _fmt(r.kvstore_step_ms, 3),
                _fmt(r.startup_s, 3), _fmt(r.accuracy, 3), _identical(r.params_identical, s.get("kvstore")),
            ]
        )  # fmt: skip
    lines.append(tables.render(main).rstrip("\n"))
    failures = [(j.hosts, j.workers, j.repeat, j.error) for j in summary.jobs if not j.ok]
    if failures:
        lines += ["", "## Failed jobs", ""] + [
            f"- {count(h, 'worker')}, loader {w}, repeat {r}: {e}" for h, w, r, e in failures
        ]
    diagnosed = [r for r in summary.diagnoses if r.get("verdict")]
    if diagnosed:
        lines += [
            "",
            "## Bottleneck of the diagnosed worker",
            "",
            "`--diagnose` on one rank: after training, that worker's input pipeline measured with one stage "
            "swapped at a time (single-process probes, the other workers idle).",
            "",
        ]
        table = Table(["workers (dist)", "loader", "repeat", "rank", "verdict", "shares", "input-bound"], align="rrrr")
        ctx = "gpu" if summary.settings.get("gpus") else "cpu"  # the diagnosed worker's context
        for d in diagnosed:
            shares = ", ".join(f"{stage_label(k, ctx)} {v * 100:.0f} %" for k, v in (d.get("shares") or {}).items())
            verdict = stage_label(d["verdict"], ctx)
            table.rows.append(
                [d["hosts"], d["workers"], d["repeat"], d["rank"], verdict, shares, d.get("input_bound", "-")]
            )
        lines.append(tables.render(table).rstrip("\n"))
    lines += [
        "",
        "## Parameter checksums per job",
        "",
        "SHA-256 of every parameter after training, per worker; identical on every worker is what "
        "synchronous SGD promises.",
        "",
    ]
    for j in summary.jobs:
        if j.ok:
            lines.append(
                f"- {count(j.hosts, 'worker')}, loader {j.workers}, repeat {j.repeat}: "
                f"{'identical' if j.params_identical else 'different'} on {j.reported} worker(s) "
                f"({', '.join(h[:12] for h in j.param_sha256)})"
            )
    return "\n".join(lines) + "\n"


def figure(summary: ScalingSummary) -> Any:
    """The throughput chart (``scaling.png``, and the HTML page's): aggregate steady samples/s per kvstore worker
    count against the ideal (linear) line, min-max whiskers over repeats, each point's efficiency annotated; under
    it the kvstore and input-wait shares of the step time."""
    fig = new_figure(7, 7.6)
    ax1, ax2 = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    loaders = sorted({r.workers for r in summary.rows})
    hosts = sorted({r.hosts for r in summary.rows})
    for n, w in enumerate(loaders):
        rows = [r for r in summary.rows if r.workers == w and r.jobs]
        color = f"C{n}"
        ax1.plot(
            [r.hosts for r in rows], [r.samples_per_s for r in rows], "o-", color=color, label=f"measured, loader {w}"
        )
        for r in rows:  # min-max over the repeats that finished
            rates = [j.samples_per_s for j in summary.jobs if j.ok and (j.hosts, j.workers) == (r.hosts, r.workers)]
            rates = [v for v in rates if math.isfinite(v)]
            if len(rates) > 1:
                lo, hi = min(rates), max(rates)
                ax1.errorbar([r.hosts], [r.samples_per_s], yerr=[[max(r.samples_per_s - lo, 0)], [max(hi - r.samples_per_s, 0)]],
                             fmt="none", ecolor=color, capsize=4)  # fmt: skip
        ideal = [r for r in rows if not math.isnan(r.ideal_samples_per_s)]
        if ideal:
            ax1.plot(
                [r.hosts for r in ideal],
                [r.ideal_samples_per_s for r in ideal],
                "--",
                color=color,
                alpha=0.6,
                label=f"ideal (linear), loader {w}",
            )
        for r in ideal:
            ax1.annotate(
                "baseline" if r.hosts == 1 else _pct(r.efficiency) + " of ideal",
                (r.hosts, r.samples_per_s),
                textcoords="offset points",
                xytext=(0, -14),
                ha="center",
                fontsize=8,
            )
        ax2.plot(
            [r.hosts for r in rows],
            [r.comm_share * 100 for r in rows],
            "s-",
            color=color,
            label=f"kvstore share, loader {w}",
        )
        ax2.plot(
            [r.hosts for r in rows],
            [r.wait_share * 100 for r in rows],
            "^:",
            color=color,
            alpha=0.7,
            label=f"input wait share, loader {w}",
        )
    ax1.set_ylabel("aggregate training samples/s (steady)")
    ax1.set_ylim(bottom=0)
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.set_ylabel("% of step time")
    ax2.set_xlabel("kvstore workers")
    ax2.set_xticks(hosts)
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=8)
    s, env = summary.settings, summary.env
    fig.suptitle(
        f"{of_settings(s)}, {s.get('kvstore')}, per-worker batch "
        f"{summary.rows[0].per_worker_batch if summary.rows else '?'}, {s.get('servers')} server(s): "
        f"{str(env.get('cpu', '?'))[:40]} ({env.get('cores_logical', '?')} cores)\n{summary.started_utc[:10]}, "
        f"efficiency annotated; {repeats_text(_repeat_counts(summary), 'setting')}\n"
        "dashed: ideal (the 1-worker figure times the workers)",
        fontsize=9,
    )
    return fig


def _repeat_counts(summary: ScalingSummary) -> list[int]:
    return [
        sum(j.ok and (j.hosts, j.workers) == (r.hosts, r.workers) for j in summary.jobs) for r in summary.rows if r.jobs
    ]


def split_figure(summary: ScalingSummary) -> Any:
    """The summed steady step time of all workers per setting: input wait, copy, compute, kvstore push/pull."""
    rows = [r for r in summary.rows if r.jobs]
    parts = []
    for r in rows:
        comm = r.comm_share if math.isfinite(r.comm_share) else 0.0
        parts.append(
            [r.wait_share, r.copy_share, max(r.compute_share - comm, 0.0), comm]
            if math.isfinite(r.compute_share)
            else None
        )
    return stacked_figure(
        f"{of_settings(summary.settings)}: summed steady step time of all workers",
        "kvstore push/pull is part of compute, drawn apart here",
        [f"{count(r.hosts, 'worker')}, loader {r.workers}" for r in rows],
        parts,
        ["input wait", "copy", "compute (no kvstore)", "kvstore"],
        [SPLIT_COLORS["wait"], SPLIT_COLORS["copy"], SPLIT_COLORS["compute"], SPLIT_COLORS["kvstore"]],
    )


class ScalingReport(Report):
    """A distributed sweep's run folder: one row per (kvstore workers, loader workers) (``kind == "dist"``)."""

    kind = "dist"
    files: ClassVar[dict[str, str]] = {
        "csv": "scaling.csv",
        "markdown": "scaling.md",
        "json": "scaling.json",
        "png": "scaling.png",
        "html": "report.html",
    }

    def __init__(self, summary: ScalingSummary) -> None:
        self.summary = summary

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> ScalingReport:
        return cls(summarise_scaling(records, settings))

    def table(self) -> Table:
        return csv_table(self.summary)

    def document(self, tables: TableSyntax) -> str:
        return to_markdown(self.summary, tables)

    png_chart = "throughput"

    def charts(self) -> list[Chart]:
        """The throughput chart (``scaling.png``) and the step split; none when no job finished."""
        if not any(r.jobs for r in self.summary.rows):
            return []
        return [
            Chart("throughput", "Aggregate steady samples/s vs kvstore workers", lambda: figure(self.summary)),
            Chart("split", "Summed steady step time of all workers", lambda: split_figure(self.summary)),
        ]

    def html_title(self) -> str:
        s = self.summary.settings
        return f"gluonbench scaling: {of_settings(s)}, kvstore {s.get('kvstore')}"

    def html_subtitle(self) -> str:
        return where_when(self.summary.env, self.summary.started_utc)


def write_scaling_reports(run_dir: str | Path) -> ScalingSummary:
    """Rebuild ``scaling.csv``, ``scaling.md``, ``scaling.json`` and ``scaling.png`` from ``runs.jsonl``."""
    from gluonbench.report import saved_settings
    from gluonbench.report.store import RunStore

    store = RunStore(run_dir)
    report = ScalingReport.from_records(store.require_records(), saved_settings(store))
    report.write(run_dir)
    return report.summary


def worker_line(record: Any) -> str:
    """One line per worker record of a distributed job (the CLI prints it as jobs finish)."""
    spec, extra = record.spec, record.extra or {}
    what = f"{spec.get('hosts')} workers ({spec.get('kvstore')}), loader {spec.get('workers')}"
    if not record.ok:
        return f"{what}: {record.status}: {record.error}"
    job = extra.get("job") or {}
    accuracy = _f(record.accuracy)  # None in a stored record: a workload without a test split (a source)
    return (
        f"{what}, rank {extra.get('rank')} on {extra.get('host')}: {record.steady.get('samples_per_s', 0):.0f} samples/s "
        f"(steady), kvstore {extra.get('comm_share', 0) * 100:.0f} % of step, start-up "
        f"{extra.get('startup_s', math.nan):.2f} s, test accuracy "
        f"{'n/a (no test split)' if math.isnan(accuracy) else f'{accuracy:.3f}'}, params "
        f"{'identical on all workers' if job.get('params_identical') else 'differ between workers'}"
        + (" (async: expected)" if "async" in str(spec.get("kvstore")) and not job.get("params_identical") else "")
    )
