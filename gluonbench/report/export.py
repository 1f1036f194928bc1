"""Exports of a sweep summary: csv, markdown, json and the plot; all rebuilt from runs.jsonl."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from gluonbench.report.store import SETTINGS, RunStore, _clean, atomic_write_bytes, atomic_write_text
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


def _fmt(value: float, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"


def _spread(runs: int, value: float, lo: float, hi: float) -> str:
    """``median [min-max]`` when repeated, else the value."""
    return f"{_fmt(value, 4)} [{_fmt(lo, 4)}-{_fmt(hi, 4)}]" if runs > 1 else _fmt(value, 4)


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


def to_csv(summary: SweepSummary) -> str:
    buf = io.StringIO()
    extra_keys = sorted({k for row in summary.rows for k in row.extra} - CSV_SKIP_EXTRA)
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS + extra_keys)
    for row in summary.rows:
        d = row.to_dict()
        writer.writerow(
            ["" if (isinstance(d[k], float) and math.isnan(d[k])) else d[k] for k in CSV_FIELDS]
            + [_extra_cell(row.extra.get(k, "")) for k in extra_keys]
        )
    return buf.getvalue()


def machine_line(summary: SweepSummary) -> str:
    env = summary.env
    gpus = ", ".join(env.get("gpus") or []) or "no GPU"
    return (
        f"{env.get('cpu', '?')} ({env.get('cores_logical', '?')} logical cores), {gpus}; "
        f"Python {env.get('python', '?')}, mxnet {env.get('mxnet', '?')}, numpy {env.get('numpy', '?')}, "
        f"gluonbench {env.get('gluonbench', '?')}; {env.get('os', '?')}"
    )


def to_markdown(summary: SweepSummary) -> str:
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
        "| workers | train duration (s) | eval duration (s) | test accuracy | samples/s | speed-up vs "
        f"{summary.baseline_workers} | steady samples/s | first batch (s) | input wait | peak mem (MiB) | CPU util |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in summary.rows:
        if not row.runs:
            lines.append(f"| {row.workers} | failed ({row.failed}) | - | - | - | - | - | - | - | - | - |")
            continue
        lines.append(
            f"| {row.workers}{' **best**' if row.workers == summary.best_workers else ''} "
            f"| {_spread(row.runs, row.train_s, row.train_s_min, row.train_s_max)} | {_fmt(row.eval_s, 4)} "
            f"| {_fmt(row.accuracy, 3)} | {_spread(row.runs, row.samples_per_s, row.samples_per_s_min, row.samples_per_s_max)} "
            f"| {_fmt(row.speedup, 3)}x | {_fmt(row.steady_samples_per_s, 4)} | {_fmt(row.first_batch_s, 3)} "
            f"| {row.wait_frac * 100:.0f} % | {row.peak_mem_mb:.0f} | {row.cpu_util_pct:.0f} % |"
        )
    lines.append("")
    best = next((r for r in summary.rows if r.workers == summary.best_workers), None)
    if best is not None:
        cores = summary.env.get("cores_logical")
        lines.append(
            f"**Best worker count: {best.workers}** ({_fmt(best.samples_per_s, 4)} samples/s, "
            f"{_fmt(best.speedup, 3)}x the {summary.baseline_workers}-worker throughput)"
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
            "| workers | verdict | shares | secondary | input-bound |",
            "|---:|---|---|---|---|",
        ]
        for r in extra:
            lines.append(
                f"| {r.workers} | {r.extra.get('verdict')} | {_extra_cell(r.extra.get('shares', ''))} "
                f"| {_extra_cell(r.extra.get('secondary', '')) or '-'} | {r.extra.get('input_bound', '-')} |"
            )
    lines += data_parallel_lines(summary)
    return "\n".join(lines) + "\n"


def data_parallel_lines(summary: SweepSummary) -> list[str]:
    """The kvstore's share of the step for runs over several devices (``--devices``/``--gpus``), else nothing."""
    rows = [r for r in summary.rows if "comm_share" in r.extra]
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
        "| workers | kvstore share | kvstore ms/step | parameters equal on every device |",
        "|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.workers} | {r.extra['comm_share'] * 100:.1f} % | {_fmt(r.extra.get('kvstore_step_ms'), 3)} "
            f"| {'yes' if r.extra.get('params_equal_on_devices') else 'NO'} |"
        )
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


def png_bytes(fig) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def saved_settings(store: RunStore) -> dict:
    """The settings a run folder was made with (``sweep.json``), plus its command; ``{}`` if none."""
    saved = store.read_settings() if (store.path / SETTINGS).is_file() else {}
    return dict(
        saved.get("settings", {}),
        command=saved.get("command", ""),
        **{k: v for k, v in saved.items() if k == "datasets_note"},
    )


def write_reports(run_dir: str | Path) -> SweepSummary:
    """Rebuild ``summary.csv``, ``summary.md``, ``summary.json`` and ``sweep.png`` from ``runs.jsonl``."""
    store = RunStore(run_dir)
    settings = saved_settings(store)
    summary = summarise(store.records(), settings)
    atomic_write_text(store.path / "summary.csv", to_csv(summary))
    atomic_write_text(store.path / "summary.md", to_markdown(summary))
    atomic_write_text(store.path / "summary.json", json.dumps(_clean(summary.to_dict()), indent=2))
    if any(r.runs for r in summary.rows):
        atomic_write_bytes(store.path / "sweep.png", to_png(summary))
    return summary
