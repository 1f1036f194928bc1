"""The sweep's report (:class:`SweepReport`): the seed's table per worker count, as csv, markdown, json
and a plot (``summary.csv``, ``summary.md``, ``summary.json``, ``sweep.png``), all rebuilt from runs.jsonl."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gluonbench.report.exporters import MarkdownTable, Report, Table, TableSyntax, fmt, machine_line, png_bytes
from gluonbench.report.summary import SweepSummary, summarise

CSV_FIELDS = [
    "workers",
    "runs",
    "failed",
    "train_s",
    "train_s_min",
    "train_s_max",
    "eval_s",
    "accuracy",
    "samples_per_s",
    "samples_per_s_min",
    "samples_per_s_max",
    "steady_samples_per_s",
    "speedup",
    "first_batch_s",
    "wait_frac",
    "peak_mem_mb",
    "cpu_util_pct",
]


def _spread(runs: int, value: float, lo: float, hi: float) -> str:
    """``median [min-max]`` when repeated, else the value."""
    return f"{fmt(value, 4)} [{fmt(lo, 4)}-{fmt(hi, 4)}]" if runs > 1 else fmt(value, 4)


def _extra_cell(value: object) -> object:
    """A run's extra finding as one csv/markdown cell: shares as ``stage 33 %, ...``, lists joined."""
    if isinstance(value, dict):
        order = {"preprocessing": 0, "disk_io": 1, "gpu_io": 2}
        value = dict(sorted(value.items(), key=lambda kv: order.get(kv[0], len(order))))
        return ", ".join(f"{k} {v * 100:.0f} %" if isinstance(v, int | float) else f"{k} {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return value


# extras kept out of the csv (the full diagnosis stays in runs.jsonl and summary.json)
CSV_SKIP_EXTRA = {"diagnosis"}


def csv_table(summary: SweepSummary) -> Table:
    """One row per worker count in plain values (``summary.csv``), the runs' extra findings last."""
    extra_keys = sorted({k for row in summary.rows for k in row.extra} - CSV_SKIP_EXTRA)
    table = Table(CSV_FIELDS + extra_keys)
    for row in summary.rows:
        d = row.to_dict()
        table.rows.append([d[k] for k in CSV_FIELDS] + [_extra_cell(row.extra.get(k, "")) for k in extra_keys])
    return table


def to_markdown(summary: SweepSummary, tables: TableSyntax | None = None) -> str:
    """The sweep as a document (``summary.md``): settings, the seed's table, the best worker count."""
    tables = tables or MarkdownTable()
    s = summary.settings
    lines = [
        f"# gluonbench sweep: {s.get('workload', '?')} on {s.get('ctx', '?')}",
        "",
        f"- Machine: {machine_line(summary)}",
        f"- Date (UTC): {summary.started_utc} to {summary.finished_utc}",
        f"- Command: `{summary.command}`",
        f"- Settings: batch size {s.get('batch_size')}, epochs {s.get('epochs')}, "
        f"max batches {s.get('max_batches') or 'all'}, repeats {s.get('repeat')}, thread pool {s.get('thread_pool')}",
        "",
        "Medians over repeats; min-max in brackets when repeated. *samples/s* is training samples over the "
        "seed's train duration (worker start-up included); *steady* leaves out the first step; "
        "*input wait* is the share of steady step time spent waiting for the next batch.",
        "",
    ]
    main = Table(
        [
            "workers",
            "train duration (s)",
            "eval duration (s)",
            "test accuracy",
            "samples/s",
            f"speed-up vs {summary.baseline_workers}",
            "steady samples/s",
            "first batch (s)",
            "input wait",
            "peak mem (MiB)",
            "CPU util",
        ],
        align="r" * 11,
    )
    for row in summary.rows:
        if not row.runs:
            main.rows.append([row.workers, f"failed ({row.failed})"] + ["-"] * 9)
            continue
        main.rows.append(
            [
                f"{row.workers}{' **best**' if row.workers == summary.best_workers else ''}",
                _spread(row.runs, row.train_s, row.train_s_min, row.train_s_max),
                fmt(row.eval_s, 4),
                fmt(row.accuracy, 3),
                _spread(row.runs, row.samples_per_s, row.samples_per_s_min, row.samples_per_s_max),
                f"{fmt(row.speedup, 3)}x",
                fmt(row.steady_samples_per_s, 4),
                fmt(row.first_batch_s, 3),
                f"{row.wait_frac * 100:.0f} %",
                f"{row.peak_mem_mb:.0f}",
                f"{row.cpu_util_pct:.0f} %",
            ]
        )
    lines += [tables.render(main)]
    best = next((r for r in summary.rows if r.workers == summary.best_workers), None)
    if best is not None:
        cores = summary.env.get("cores_logical")
        lines.append(
            f"**Best worker count: {best.workers}** ({fmt(best.samples_per_s, 4)} samples/s, "
            f"{fmt(best.speedup, 3)}x the {summary.baseline_workers}-worker throughput)"
            + (f"; this machine has {cores} logical cores." if cores else ".")
        )
        if best.runs == 1 and len([r for r in summary.rows if r.runs]) > 1:
            runner_up = max((r.samples_per_s for r in summary.rows if r.runs and r is not best), default=math.nan)
            lines.append(
                f"One run per worker count, so the run-to-run spread is unknown: the best is "
                f"{(best.samples_per_s / runner_up - 1) * 100:.0f} % ahead of the next; treat differences of "
                "about 10 % or less as noise, or rerun with --repeat 3 for min-max bars."
            )
        if summary.near_best:
            lines.append(
                f"Within run-to-run noise of it: {', '.join(map(str, summary.near_best))} workers (their best repeat "
                "reaches its worst); of those, fewer workers cost less CPU and memory."
            )
    failures = [(r.workers, e) for r in summary.rows for e in r.errors]
    if failures:
        lines += ["", "## Failed runs", ""] + [f"- {w} workers: {e}" for w, e in failures]
    extra = [r for r in summary.rows if r.extra.get("verdict")]
    if extra:
        lines += [
            "",
            "## Bottleneck per worker count",
            "",
            "From `gluonbench diagnose` at each worker count (`--diagnose`): the verdict, the share of step time "
            "per stage, secondary stages and TF's input-bound label.",
            "",
        ]
        bottleneck = Table(["workers", "verdict", "shares", "secondary", "input-bound"], align="r")
        for r in extra:
            bottleneck.rows.append(
                [
                    r.workers,
                    r.extra.get("verdict"),
                    _extra_cell(r.extra.get("shares", "")),
                    _extra_cell(r.extra.get("secondary", "")) or "-",
                    r.extra.get("input_bound", "-"),
                ]
            )
        lines.append(tables.render(bottleneck).rstrip("\n"))
        scope = next((r.extra["diagnosis_scope"] for r in extra if r.extra.get("diagnosis_scope")), None)
        if scope:
            lines += ["", f"Note: {scope}."]
    lines += data_parallel_lines(summary, tables)
    return "\n".join(lines) + "\n"


def data_parallel_lines(summary: SweepSummary, tables: TableSyntax) -> list[str]:
    """The kvstore's share of the step for runs over several devices (``--devices``/``--gpus``), else nothing."""
    rows = [r for r in summary.rows if "comm_share" in r.extra]
    noted = [r.extra["kvstore_note"] for r in summary.rows if r.extra.get("kvstore_note")]
    if not rows and noted:
        return ["", "## Data-parallel step", "", noted[0][0].upper() + noted[0][1:] + "."]
    if not rows:
        return []
    devices = rows[0].extra.get("devices") or []
    lines = [
        "",
        "## Data-parallel step",
        "",
        f"Batch size {summary.settings.get('batch_size')} per device on {len(devices)} device(s) "
        f"({', '.join(devices)}), kvstore {summary.settings.get('kvstore')}: each batch is split over the devices; "
        "*kvstore* is the push/pull (allreduce) time, waited for after backward, as a share of the steady step "
        "(last repeat).",
        "",
    ]
    table = Table(["workers", "kvstore share", "kvstore ms/step", "parameters equal on every device"], align="rrr")
    for r in rows:
        table.rows.append(
            [
                r.workers,
                f"{r.extra['comm_share'] * 100:.1f} %",
                fmt(r.extra.get("kvstore_step_ms"), 3),
                "yes" if r.extra.get("params_equal_on_devices") else "NO",
            ]
        )
    lines.append(tables.render(table).rstrip("\n"))
    return lines


def seed_lines(summary: SweepSummary) -> list[str]:
    """One line per worker count in the seed's own format (medians)."""
    out = []
    for row in summary.rows:
        if not row.runs:
            out.append(f"{row.workers} workers: failed")
        else:
            out.append(
                f"{row.workers} workers: train duration {row.train_s:.4}, eval duration {row.eval_s:.4}, "
                f"test accuracy {row.accuracy:.2}"
            )
    return out


def to_png(summary: SweepSummary) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in summary.rows if r.runs]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    xs = [r.workers for r in rows]

    def bars(ax, values, lo, hi, color, ylabel):
        yerr = [
            [max(v - a, 0) for v, a in zip(values, lo, strict=False)],
            [max(b - v, 0) for v, b in zip(values, hi, strict=False)],
        ]
        ax.errorbar(xs, values, yerr=yerr, marker="o", color=color, capsize=4)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)

    bars(
        ax1,
        [r.samples_per_s for r in rows],
        [r.samples_per_s_min for r in rows],
        [r.samples_per_s_max for r in rows],
        "tab:blue",
        "training samples/s",
    )
    bars(
        ax2,
        [r.train_s for r in rows],
        [r.train_s_min for r in rows],
        [r.train_s_max for r in rows],
        "tab:red",
        "train duration (s)",
    )
    if summary.best_workers is not None:
        best = next(r for r in rows if r.workers == summary.best_workers)
        ax1.annotate(
            f"best: {best.workers}",
            (best.workers, best.samples_per_s),
            textcoords="offset points",
            xytext=(0, 10),
            ha="center",
        )
    ax2.set_xlabel("DataLoader workers")
    ax2.set_xticks(xs)
    s = summary.settings
    env = summary.env
    fig.suptitle(
        f"{s.get('workload', '?')}, batch {s.get('batch_size')}, {s.get('ctx')}: "
        f"{str(env.get('cpu', '?'))[:40]} ({env.get('cores_logical', '?')} cores)\n{summary.started_utc[:10]}, "
        "median with min-max over repeats",
        fontsize=9,
    )
    return png_bytes(fig)


class SweepReport(Report):
    """A sweep's run folder: one row per worker count (``kind == "run"`` records)."""

    kind = "run"
    files: ClassVar[dict[str, str]] = {
        "csv": "summary.csv",
        "markdown": "summary.md",
        "json": "summary.json",
        "png": "sweep.png",
    }

    def __init__(self, summary: SweepSummary) -> None:
        self.summary = summary

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> SweepReport:
        return cls(summarise(records, settings))

    def table(self) -> Table:
        return csv_table(self.summary)

    def document(self, tables: TableSyntax) -> str:
        return to_markdown(self.summary, tables)

    def figure(self) -> bytes | None:
        return to_png(self.summary) if any(r.runs for r in self.summary.rows) else None
