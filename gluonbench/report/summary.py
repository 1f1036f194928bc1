"""Aggregate a sweep's run records per worker count: the seed's table and the best setting."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.analysis.stats import median
from gluonbench.units import count


@dataclass
class SweepRow:
    """All repeats of one worker count: medians with min-max."""

    workers: int
    runs: int
    failed: int
    train_s: float
    train_s_min: float
    train_s_max: float
    eval_s: float
    accuracy: float
    samples_per_s: float
    samples_per_s_min: float
    samples_per_s_max: float
    steady_samples_per_s: float
    first_batch_s: float
    wait_frac: float
    peak_mem_mb: float
    cpu_util_pct: float
    speedup: float = math.nan
    errors: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    split: dict[str, float] = field(default_factory=dict)
    """the steady step time of all repeats pooled: ``wait``, ``copy``, ``compute`` as shares of it"""
    block_spread: float = math.nan
    """the spread within a run: half the range of its blocks' samples/s over their median (the median over
    repeats); NaN when the runs recorded no blocks"""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SweepSummary:
    rows: list[SweepRow]
    best_workers: int | None
    baseline_workers: int | None
    near_best: list[int]
    """Other worker counts whose best repeat reaches the best count's worst repeat (within noise)."""
    env: dict[str, Any]
    command: str
    started_utc: str
    finished_utc: str
    settings: dict[str, Any]
    best_named: bool = True
    """the fastest count beats the next by more than the noise (:func:`best_beyond_noise`); reports name a best
    worker count only then"""
    best_note: str = ""
    """when no best count is named: ``within noise: rerun with --repeat 3`` and why (the gap against the
    noise); empty otherwise"""

    def to_dict(self) -> dict[str, Any]:
        """The summary's fields, and the counts within noise of the best (:meth:`within_noise`), which the
        HTML page names as the Markdown and the plot do."""
        return dict(asdict(self), within_noise=self.within_noise())

    @property
    def repeats(self) -> int:
        """The most successful runs of any worker count (1: the run-to-run spread is unknown)."""
        return max((r.runs for r in self.rows), default=0)

    def noise_floor(self) -> tuple[float, str]:
        """The lowest samples/s still within noise of the best, and the rule, as the report states it.

        Repeated: the best count's worst repeat (a count is within noise when its best repeat reaches it,
        as :attr:`near_best`). One run each: the rule :func:`best_beyond_noise` names the best by, the gap to
        the next fastest count against the spread of the blocks within the two runs; where that spread was not
        recorded, 10 % below the best. So a count is within noise here exactly when it would keep the best
        from being named.
        """
        best = next((r for r in self.rows if r.workers == self.best_workers), None)
        if best is None:
            return math.nan, ""
        if best.runs > 1:
            return best.samples_per_s_min, "the best count's worst repeat"
        nxt = _next_fastest(self.rows, best)
        noise = best.block_spread + nxt.block_spread if nxt is not None else math.nan
        if math.isfinite(noise):
            return best.samples_per_s / (1 + noise), "the spread of the blocks within the two fastest runs"
        return NOISE_ONE_RUN * best.samples_per_s, f"{(1 - NOISE_ONE_RUN) * 100:.0f} % below the best (one run each)"

    def within_noise(self) -> list[int]:
        """Other worker counts within noise of the best (:meth:`noise_floor`), fewest workers first."""
        floor, _ = self.noise_floor()
        if not math.isfinite(floor):
            return []
        if any(r.runs > 1 for r in self.rows if r.workers == self.best_workers):
            return list(self.near_best)
        return [
            r.workers for r in self.rows if r.runs and r.workers != self.best_workers and r.samples_per_s_max >= floor
        ]


def _next_fastest(rows: list[SweepRow], best: SweepRow) -> SweepRow | None:
    others = [r for r in rows if r.runs and r is not best and math.isfinite(r.samples_per_s)]
    return max(others, key=lambda r: r.samples_per_s) if others else None


def best_beyond_noise(rows: list[SweepRow], best: SweepRow | None) -> tuple[bool, str]:
    """Whether ``best`` beats the next fastest count by more than the run-to-run noise, and if not, why.

    Repeated: the next count's best repeat stays under the best count's worst. One run each: the gap exceeds
    the two runs' spreads within themselves (:attr:`SweepRow.block_spread`, added); unknown spread: not named.
    """
    if best is None:
        return False, ""
    nxt = _next_fastest(rows, best)
    if nxt is None:
        return True, ""
    again = f"within noise: rerun with --repeat {max(3, 2 * min(best.runs, nxt.runs))}"
    if best.runs > 1 and nxt.runs > 1:
        if nxt.samples_per_s_max < best.samples_per_s_min:
            return True, ""
        return False, (
            f"{again} ({count(nxt.workers, 'worker')}: its best repeat reaches the worst of "
            f"{count(best.workers, 'worker')}, {nxt.samples_per_s_max:.4g} against {best.samples_per_s_min:.4g} samples/s)"
        )
    gap = best.samples_per_s / nxt.samples_per_s - 1 if nxt.samples_per_s > 0 else math.inf
    noise = best.block_spread + nxt.block_spread
    if not math.isfinite(noise):
        return False, (
            f"{again} ({count(best.workers, 'worker')} ran {gap * 100:.0f} % faster than {nxt.workers} in one run "
            "each, and the spread within those runs was not recorded)"
        )
    if gap > noise:
        return True, ""
    return False, (
        f"{again} ({count(best.workers, 'worker')} ran {gap * 100:.0f} % faster than {nxt.workers} in one run each, "
        f"within the spread of the blocks within those runs: +-{best.block_spread * 100:.0f} % and "
        f"+-{nxt.block_spread * 100:.0f} %)"
    )


def _spread(rates: list[float]) -> float:
    good = [x for x in rates if isinstance(x, int | float) and math.isfinite(x) and x > 0]
    if len(good) < 2:
        return math.nan
    return (max(good) - min(good)) / 2 / median(good)


NOISE_ONE_RUN = 0.9
"""With one run per count the spread is unknown: counts within 10 % of the best are called within noise."""


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status") == "ok"]


def summarise(records: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> SweepSummary:
    """Group run records (``kind == "run"``) by worker count."""
    runs = [r for r in records if r.get("kind", "run") == "run"]
    by_workers: dict[int, list[dict[str, Any]]] = {}
    for r in runs:
        by_workers.setdefault(int(r["spec"]["workers"]), []).append(r)
    rows = []
    for w in sorted(by_workers):
        group = by_workers[w]
        ok = _ok(group)
        get = lambda key, rs=ok: [float(r[key]) for r in rs if r.get(key) is not None]  # noqa: E731
        train, rate = get("train_s"), get("samples_per_s")
        rows.append(
            SweepRow(
                workers=w,
                runs=len(ok),
                failed=len(group) - len(ok),
                train_s=median(train),
                train_s_min=min(train, default=math.nan),
                train_s_max=max(train, default=math.nan),
                eval_s=median(get("eval_s")),
                accuracy=median(get("accuracy")),
                samples_per_s=median(rate),
                samples_per_s_min=min(rate, default=math.nan),
                samples_per_s_max=max(rate, default=math.nan),
                steady_samples_per_s=median(
                    [r["steady"].get("samples_per_s", math.nan) for r in ok if r.get("steady")]
                ),
                first_batch_s=median(get("first_batch_s")),
                wait_frac=median([r["steady"].get("wait_frac", math.nan) for r in ok if r.get("steady")]),
                peak_mem_mb=max(
                    (r["system"].get("peak_mem_bytes", 0) / 2**20 for r in ok if r.get("system")), default=math.nan
                ),
                cpu_util_pct=median([r["system"].get("cpu_util_pct", math.nan) for r in ok if r.get("system")]),
                errors=[str(r.get("error")) for r in group if r.get("status") != "ok"],
                extra={k: v for r in ok for k, v in (r.get("extra") or {}).items()},
                split=step_split([r["steady"] for r in ok if r.get("steady")]),
                block_spread=median(
                    [
                        x
                        for x in (_spread((r.get("steady") or {}).get("block_samples_per_s") or []) for r in ok)
                        if math.isfinite(x)
                    ]
                ),
            )
        )
    measured = [row for row in rows if row.runs and not math.isnan(row.samples_per_s)]
    baseline = min((row.workers for row in measured), default=None)
    base_rate = next((row.samples_per_s for row in measured if row.workers == baseline), math.nan)
    for row in measured:
        row.speedup = row.samples_per_s / base_rate if base_rate else math.nan
    best_row = max(measured, key=lambda row: row.samples_per_s) if measured else None
    best = best_row.workers if best_row else None
    near = [
        row.workers
        for row in measured
        if best_row is not None
        and row is not best_row
        and row.runs > 1
        and best_row.runs > 1
        and row.samples_per_s_max >= best_row.samples_per_s_min
    ]
    first = runs[0] if runs else {}
    named, note = best_beyond_noise(measured, best_row)
    return SweepSummary(
        best_named=named,
        best_note=note,
        rows=rows,
        best_workers=best,
        baseline_workers=baseline,
        near_best=near,
        env=next((r.get("env") for r in ok_first(runs)), {}) or {},
        command=(settings or {}).get("command") or first.get("command", ""),
        started_utc=min((r.get("started_utc", "") for r in runs if r.get("started_utc")), default=""),
        finished_utc=max((r.get("finished_utc", "") for r in runs if r.get("finished_utc")), default=""),
        settings=settings or {},
    )


def step_split(steady: list[dict[str, Any]]) -> dict[str, float]:
    """``wait``/``copy``/``compute`` as shares of the steady step time of these runs pooled; ``{}`` if unknown."""
    parts = {k: sum(float(s.get(f"{k}_s") or 0.0) for s in steady) for k in ("wait", "copy", "compute")}
    total = sum(float(s.get("total_s") or 0.0) for s in steady)
    if total <= 0 or not all(f"{k}_s" in s for s in steady for k in parts):
        return {}
    return {k: v / total for k, v in parts.items()}


def ok_first(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs with environment metadata first (a failed run may lack it)."""
    return sorted(runs, key=lambda r: not r.get("env"))
