"""The sweep's report (:class:`SweepReport`): the seed's table per worker count, as csv, markdown, json
and a plot (``summary.csv``, ``summary.md``, ``summary.json``, ``sweep.png``), all rebuilt from runs.jsonl."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gluonbench.identity import of_settings
from gluonbench.report.charts import SPLIT_COLORS, Chart, new_figure, repeats_text, stacked_figure
from gluonbench.report.exporters import (
    MarkdownTable,
    Report,
    Table,
    TableSyntax,
    fmt,
    machine_line,
    stage_label,
    where_when,
)
from gluonbench.report.summary import SweepSummary, summarise
from gluonbench.units import count

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


def _extra_cell(value: object, ctx: str | None = None) -> object:
    """A run's extra finding as one csv/markdown cell: shares as ``stage 33 %, ...``, lists joined; with ``ctx``
    the stages are named as reports name them (:func:`~gluonbench.report.exporters.stage_label`)."""
    if isinstance(value, dict):
        order = {"preprocessing": 0, "disk_io": 1, "gpu_io": 2}
        value = dict(sorted(value.items(), key=lambda kv: order.get(kv[0], len(order))))
        name = (lambda k: stage_label(k, ctx)) if ctx else str
        return ", ".join(
            f"{name(k)} {v * 100:.0f} %" if isinstance(v, int | float) else f"{name(k)} {v}" for k, v in value.items()
        )
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
        f"# gluonbench sweep: {of_settings(s)} on {s.get('ctx', '?')}",
        "",
        f"- Machine: {machine_line(summary)}",
        f"- Date (UTC): {summary.started_utc} to {summary.finished_utc}",
        f"- Command: `{summary.command}`",
        f"- Settings: batch size {s.get('batch_size')}, epochs {s.get('epochs')}, "
        f"max batches {s.get('max_batches') or 'all'}, repeats {s.get('repeat')}, thread pool {s.get('thread_pool')}",
        "",
        "Medians over repeats; min-max in brackets when repeated. "
        + (
            "*samples/s* is training samples over the time of the script's timed training steps (after its "
            "warm-up; epoch ends and evaluation left out); *train duration* is that time; "
            if s.get("script") and not s.get("to_end")
            else "*samples/s* is training samples over the seed's train duration (worker start-up included); "
            "*steady* leaves out the first step; "
        )
        + "*input wait* is the share of steady step time spent waiting for the next batch"
        + (CPU_WAIT_NOTE if not str(s.get("ctx") or "cpu").startswith("gpu") else "")
        + ".",
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
                f"{row.workers}{' **best**' if row.workers == summary.best_workers and summary.best_named else ''}",
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
    lines += best_lines(summary)
    failures = [(r.workers, e) for r in summary.rows for e in r.errors]
    if failures:
        lines += ["", "## Failed runs", ""] + [f"- {count(w, 'worker')}: {e}" for w, e in failures]
    extra = [r for r in summary.rows if r.extra.get("verdict")]
    if extra:
        lines += [
            "",
            "## Bottleneck per worker count",
            "",
            "From `gluonbench diagnose` at each worker count (`--diagnose`), by the seed's rule: how much faster one "
            "reused batch trains than the full pipeline (95 % interval); the verdict (`gpu_io` only when that gains "
            "nothing, the input stage whose removal gains the most when the whole interval lies above the 5 % line, "
            "inconclusive otherwise: *at the line* when a gain beyond the noise crosses it); the time each stage's removal saves, as "
            "shares of the step; secondary stages; TF's input-bound label on the same reading.",
            "",
        ]
        bottleneck = Table(
            ["workers", "one reused batch", "verdict", "time saved by removing", "secondary", "input-bound"], align="r"
        )
        for r in extra:
            ctx = ((r.extra.get("diagnosis") or {}).get("setting") or {}).get("ctx") or s.get("ctx")
            gain, ci = r.extra.get("input_speedup"), r.extra.get("input_speedup_ci") or []
            reused = (
                f"{gain:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if len(ci) == 2 and None not in ci else "")
                if isinstance(gain, int | float) and gain == gain
                else "-"
            )
            bottleneck.rows.append(
                [
                    r.workers,
                    reused,
                    stage_label(r.extra.get("verdict"), ctx)
                    + (" (at the line)" if r.extra.get("at_line") else "")
                    + (f" (stalled in {r.extra['stalled']}: the rounds before it)" if r.extra.get("stalled") else ""),
                    _extra_cell(r.extra.get("shares", ""), ctx),
                    ", ".join(stage_label(x, ctx) for x in r.extra.get("secondary") or []) or "-",
                    r.extra.get("input_bound", "-"),
                ]
            )
        lines.append(tables.render(bottleneck).rstrip("\n"))
        scope = next((r.extra["diagnosis_scope"] for r in extra if r.extra.get("diagnosis_scope")), None)
        if scope:
            lines += ["", f"Note: {scope}."]
    lines += data_parallel_lines(summary, tables)
    return "\n".join(lines) + "\n"


CPU_WAIT_NOTE = (
    " (blocked in next(loader); on a CPU context that includes the previous step's compute, which MXNet's one "
    "engine queue runs beside the loader's NDArray work, so it is not the input pipeline's own cost: "
    "gluonbench diagnose measures that)"
)
"""what the input wait column holds on a CPU context (the page says the same)"""


def best_lines(summary: SweepSummary) -> list[str]:
    """The best worker count, named only when it beats the next by more than the noise
    (:attr:`SweepSummary.best_named`); otherwise the fastest count, said to be within noise."""
    best = next((r for r in summary.rows if r.workers == summary.best_workers), None)
    if best is None:
        return []
    cores = summary.env.get("cores_logical")
    machine = f"; this machine has {cores} logical cores." if cores else "."
    if not summary.best_named:
        lines = [
            f"**Best worker count: {summary.best_note}**. The fastest: {count(best.workers, 'worker')}, "
            f"{fmt(best.samples_per_s, 4)} samples/s ({fmt(best.speedup, 3)}x the "
            f"{count(summary.baseline_workers or 0, 'worker')} throughput){machine}"
        ]
        tied = summary.within_noise()
        if tied:
            floor, rule = summary.noise_floor()
            why = (
                "their best repeat reaches its worst"
                if best.runs > 1
                else f"at {fmt(floor, 4)} samples/s or more, within {rule}, with one run each"
            )
            lines.append(
                f"Also within noise of it: {', '.join(map(str, tied))} {_workers(tied)} ({why}); of those, fewer "
                "workers cost less CPU and memory."
            )
        return lines
    lines = [
        f"**Best worker count: {best.workers}** ({fmt(best.samples_per_s, 4)} samples/s, "
        f"{fmt(best.speedup, 3)}x the {count(summary.baseline_workers or 0, 'worker')} throughput){machine}"
    ]
    if summary.near_best:
        lines.append(
            f"Within run-to-run noise of it: {', '.join(map(str, summary.near_best))} {_workers(summary.near_best)} "
            "(their best repeat "
            "reaches its worst); of those, fewer workers cost less CPU and memory."
        )
    return lines


def _workers(counts: list[int]) -> str:
    """``worker`` after a list that is just ``1``, else ``workers``."""
    return "worker" if list(counts) == [1] else "workers"


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


def _cores_line(env: dict[str, Any]) -> tuple[int | None, str]:
    """The usable core count (affinity and cgroup aware) and how to name it; older records: logical cores."""
    usable = env.get("cores_usable")
    if isinstance(usable, int) and usable > 0:
        return usable, f"{usable} usable cores"
    logical = env.get("cores_logical")
    if isinstance(logical, int) and logical > 0:
        return logical, f"{logical} logical cores"
    return None, ""


def figure(summary: SweepSummary, runs: list[dict[str, Any]] | None = None) -> Any:
    """The throughput chart (``sweep.png``, and the HTML page's): samples/s and train duration per worker count,
    y-axes from zero, the best count marked with its min-max, a band for "within noise of the best" (the rule
    the markdown states), the steady samples/s (first step left out), each repeat's samples/s (``runs``, when
    repeated) and a line at the usable core count."""
    rows = [r for r in summary.rows if r.runs]
    fig = new_figure(6.8, 7.6)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    xs = [r.workers for r in rows]
    repeated = summary.repeats > 1
    steady = [(r.workers, r.steady_samples_per_s) for r in rows if math.isfinite(r.steady_samples_per_s)]
    each = [
        (r["workers"], r["samples_per_s"])
        for r in runs or []
        if repeated and r.get("status") == "ok" and isinstance(r.get("samples_per_s"), int | float)
    ]

    def bars(ax, values, lo, hi, color, ylabel):
        if repeated:
            yerr = [
                [max(v - a, 0) for v, a in zip(values, lo, strict=False)],
                [max(b - v, 0) for v, b in zip(values, hi, strict=False)],
            ]
            ax.errorbar(xs, values, yerr=yerr, marker="o", color=color, capsize=4, label="median, min-max")
        else:
            ax.plot(xs, values, marker="o", color=color, label="one run")
        ax.set_ylabel(ylabel)
        more = [y for _, y in steady + each] if ax is ax1 else []
        ax.set_ylim(bottom=0, top=max([*hi, *values, *more, 0]) * 1.18 or 1)
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
    if steady:
        ax1.plot(
            *zip(*steady, strict=True), linestyle="--", color="#999", label="steady samples/s (first step left out)"
        )
    if each:
        ax1.plot(*zip(*each, strict=True), linestyle="none", marker="o", markersize=3.5, markerfacecolor="none",
                 color="tab:blue", alpha=0.7, label="each repeat")  # fmt: skip
    best = next((r for r in rows if r.workers == summary.best_workers), None)
    if best is not None:
        floor, rule = summary.noise_floor()
        top = best.samples_per_s_max if repeated else best.samples_per_s
        if math.isfinite(floor):
            ax1.axhspan(floor, top, color="tab:green", alpha=0.15, label=f"within noise of the best: {rule}")
        # what the star means goes in the legend (the axes' empty lower part), not beside the star, where it would
        # cross the line of the counts next to it
        tied = summary.within_noise()
        label = (
            f"{'best' if summary.best_named else 'fastest, within noise'}: {best.workers} "
            f"({best.samples_per_s:.0f}/s{', median with min-max' if repeated else ''})"
        )
        if tied:
            label += f"\nalso within noise: {', '.join(map(str, tied))}"
        ax1.errorbar(
            [best.workers],
            [best.samples_per_s],
            yerr=[[best.samples_per_s - best.samples_per_s_min], [best.samples_per_s_max - best.samples_per_s]],
            marker="*",
            markersize=15,
            color="tab:green",
            capsize=6,
            linestyle="none",
            label=label,
        )
    cores, cores_text = _cores_line(summary.env)
    if cores is not None and xs and min(xs) <= cores <= max(xs):
        for ax in (ax1, ax2):
            ax.axvline(cores, color="grey", linestyle="--", linewidth=1, label=cores_text if ax is ax1 else None)
    ax1.legend(fontsize=7, loc="lower right")
    ax2.set_xlabel("DataLoader workers")
    ax2.set_xticks(xs)
    s = summary.settings
    env = summary.env
    spread = (
        f"median with min-max over {summary.repeats} repeats"
        if repeated
        else "one run per worker count (spread unknown)"
    )
    fig.suptitle(
        f"{of_settings(s)}, batch {s.get('batch_size')}, {s.get('ctx')}: "
        f"{str(env.get('cpu', '?'))[:40]} ({cores_text or '? cores'})\n{summary.started_utc[:10]}, {spread}",
        fontsize=9,
    )
    return fig


def split_figure(summary: SweepSummary) -> Any:
    """Where each worker count's steady step time goes: input wait (as the table's), copy to device, compute."""
    rows = [r for r in summary.rows if r.runs and math.isfinite(r.samples_per_s)]
    parts: list[list[float] | None] = []
    for r in rows:
        sp = r.split or {}
        wait = r.wait_frac if math.isfinite(r.wait_frac) else sp.get("wait")
        rest = (sp.get("copy") or 0.0) + (sp.get("compute") or 0.0)
        if wait is None or not math.isfinite(wait):
            parts.append(None)
        elif rest > 0:  # the input wait of the table; the rest of the step split as measured
            parts.append([wait, (1 - wait) * sp["copy"] / rest, (1 - wait) * sp["compute"] / rest])
        else:
            parts.append([wait, 0.0, 1 - wait])
    repeated = summary.repeats > 1
    return stacked_figure(
        f"{of_settings(summary.settings)}: where the steady step time goes",
        "waiting for the next batch, copying it to the device, compute (forward, backward, update); first step left "
        "out"
        + ("; input wait: median over repeats (as in the table), the rest split over all repeats" if repeated else ""),
        [f"{count(r.workers, 'worker')}" for r in rows],
        parts,
        ["input wait", "copy to device", "compute"],
        [SPLIT_COLORS["wait"], SPLIT_COLORS["copy"], SPLIT_COLORS["compute"]],
    )


class SweepReport(Report):
    """A sweep's run folder: one row per worker count (``kind == "run"`` records)."""

    kind = "run"
    files: ClassVar[dict[str, str]] = {
        "csv": "summary.csv",
        "markdown": "summary.md",
        "json": "summary.json",
        "png": "sweep.png",
        "html": "report.html",
    }

    def __init__(self, summary: SweepSummary, runs: list[dict[str, Any]] | None = None) -> None:
        self.summary = summary
        self.runs = runs or []
        """one line per run record: workers, repeat, status, samples/s (the HTML page plots each repeat)"""

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> SweepReport:
        runs = [
            {
                "workers": r["spec"]["workers"],
                "repeat": r["spec"].get("repeat", 0),
                "status": r.get("status"),
                "samples_per_s": r.get("samples_per_s"),
            }
            for r in records
            if r.get("kind", "run") == "run"
        ]
        return cls(summarise(records, settings), runs)

    def table(self) -> Table:
        return csv_table(self.summary)

    def document(self, tables: TableSyntax) -> str:
        return to_markdown(self.summary, tables)

    png_chart = "throughput"

    def charts(self) -> list[Chart]:
        """The throughput chart (``sweep.png``) and the step split; none when no worker count finished a run."""
        if not any(r.runs for r in self.summary.rows):
            return []
        counts = [r.runs for r in self.summary.rows if r.runs]
        return [
            Chart(
                "throughput",
                f"Training samples/s vs DataLoader workers ({repeats_text(counts, 'worker count')})",
                lambda: figure(self.summary, self.runs),
            ),
            Chart("split", "Where the steady step time goes", lambda: split_figure(self.summary)),
        ]

    def html_title(self) -> str:
        s = self.summary.settings
        return f"gluonbench sweep: {of_settings(s)} on {s.get('ctx', '?')}"

    def html_subtitle(self) -> str:
        return where_when(self.summary.env, self.summary.started_utc)

    def html_data(self) -> dict[str, Any]:
        """The summary, plus each run's samples/s (``runs``) so the page can show every repeat."""
        return dict(self.summary.to_dict(), runs=self.runs)
