"""A profile read back from its files alone: system rows per node, steps, framework events."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gluonbench.errors import GluonbenchError
from gluonbench.files import load_json, number
from gluonbench.profiler.formats import SYSTEM_DIR, read_framework, read_job_end, read_system
from gluonbench.report import versions

META = "profile.json"
META_MAX_BYTES = 16 << 20
"""``profile.json`` holds a profile's settings and rule results (tens of KB)."""
SNAPSHOT_S = 0.02
"""rows of one node within 20 ms belong to one snapshot (Debugger's snapshot window)"""


@dataclass
class Series:
    """One metric of one node over time."""

    ts: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def between(self, t0: float, t1: float) -> Series:
        m = (self.ts >= t0) & (self.ts < t1)
        return Series(self.ts[m], self.values[m])


@dataclass
class NodeMetrics:
    """The system rows of one node, grouped by (Name, Dimension)."""

    node_id: str
    series: dict[tuple[str, str], Series] = field(default_factory=dict)
    snapshots: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def by_dimension(self, dimension: str) -> dict[str, Series]:
        """``{name: series}`` of one dimension, e.g. ``CPUUtilization`` -> cpu0, cpu1, ..."""
        out = {n: s for (n, d), s in self.series.items() if d == dimension}
        return dict(sorted(out.items(), key=lambda kv: (len(kv[0]), kv[0])))

    def get(self, name: str, dimension: str = "") -> Series | None:
        return self.series.get((name, dimension))

    def snapshot_index(self, ts: np.ndarray) -> np.ndarray:
        """Index of the snapshot each timestamp belongs to."""
        i = np.searchsorted(self.snapshots, ts + SNAPSHOT_S / 2, side="right") - 1
        return np.clip(i, 0, max(len(self.snapshots) - 1, 0))

    @property
    def cores(self) -> int:
        return len(self.by_dimension("CPUUtilization"))

    @property
    def gpus(self) -> list[str]:
        return list(self.by_dimension("GPUUtilization"))


@dataclass
class StepRecord:
    """One ``Step:ModeKeys.*`` event."""

    node_id: str
    phase: str
    step_num: int
    start_s: float
    dur_s: float
    wait_s: float | None
    epoch: int | None = None
    pid: int | None = None


@dataclass
class ProfileData:
    """Everything the rules and the report use."""

    root: Path
    nodes: dict[str, NodeMetrics]
    steps: list[StepRecord]
    events: list[dict[str, Any]]
    meta: dict[str, Any]
    start: float
    end: float
    hooks_seen: bool

    def _loop_marks(self) -> list[tuple[float, float]]:
        """``TrainingLoop`` events (a sweep's progress marks where the script has no step hooks)."""
        return [
            (float(e["ts"]) / 1e6, (float(e["ts"]) + float(e.get("dur", 0))) / 1e6)
            for e in self.events
            if e.get("name") == "TrainingLoop" and e.get("ph") == "X"
        ]

    @property
    def first_step(self) -> float | None:
        if not self.steps:
            return min((a for a, _ in self._loop_marks()), default=None)
        return min((s.start_s for s in self.steps), default=None)

    @property
    def last_step_end(self) -> float | None:
        if not self.steps:
            return max((b for _, b in self._loop_marks()), default=None)
        return max((s.start_s + s.dur_s for s in self.steps), default=None)

    def train_steps(self) -> list[StepRecord]:
        return [s for s in self.steps if s.phase == "TRAIN"]


def find_output(folder: Path) -> tuple[Path, Path]:
    """(profile folder, profiler-output folder) for a profile folder or a bare profiler-output."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GluonbenchError(f"{folder} is not a folder; pass a profile folder or a profiler-output folder")
    if (folder / "profiler-output").is_dir():
        return folder, folder / "profiler-output"
    if (folder / SYSTEM_DIR).is_dir() or (folder / "framework").is_dir():
        return folder.parent, folder
    raise GluonbenchError(
        f"{folder} holds no profile (no profiler-output/ nor system/incremental/); "
        "pass a folder made by gluonbench profile or a SageMaker Debugger profiler-output folder"
    )


def _node_metrics(rows: list[dict[str, Any]]) -> dict[str, NodeMetrics]:
    grouped: dict[str, dict[tuple[str, str], list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        grouped[r["NodeId"]][(r["Name"], r["Dimension"])].append((r["Timestamp"], r["Value"]))
    nodes = {}
    for node_id, metrics in sorted(grouped.items()):
        nm = NodeMetrics(node_id)
        all_ts = []
        for key, pairs in metrics.items():
            a = np.array(pairs, dtype=float)
            nm.series[key] = Series(a[:, 0], a[:, 1])
            all_ts.append(a[:, 0])
        ts = np.sort(np.concatenate(all_ts)) if all_ts else np.zeros(0)
        if len(ts):
            keep = np.concatenate([[True], np.diff(ts) > SNAPSHOT_S])
            # a snapshot starts where the gap to the previous row exceeds the window
            nm.snapshots = ts[keep]
        nodes[node_id] = nm
    return nodes


def _steps(events: list[dict[str, Any]]) -> list[StepRecord]:
    steps = []
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") != "X" or not name.startswith("Step:ModeKeys"):
            continue
        args = e.get("args") or {}
        wait = args.get("data_wait_us")
        try:
            steps.append(
                StepRecord(
                    node_id=str(args.get("node_id", "algo-1")),
                    phase=name.rsplit(".", 1)[-1],
                    step_num=int(args.get("step_num", len(steps))),
                    start_s=float(e["ts"]) / 1e6,
                    dur_s=float(e.get("dur", 0.0)) / 1e6,
                    wait_s=None if wait is None else float(wait) / 1e6,
                    epoch=args.get("epoch"),
                    pid=e.get("pid"),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    steps.sort(key=lambda s: s.start_s)
    return steps


def load(folder: str | Path) -> ProfileData:
    """Read a profile (or a bare Debugger ``profiler-output`` folder) from its files."""
    profile_dir, out = find_output(Path(folder))
    rows = read_system(out)
    events = read_framework(out)
    meta: dict[str, Any] = {}
    meta_path = profile_dir / META
    if meta_path.exists():
        fix = "remove it (the profile's files are read without it) or profile again"
        meta = load_json(meta_path, "profile", META_MAX_BYTES, fix)
        if not isinstance(meta, dict):
            raise GluonbenchError(f"profile {meta_path} is not an object of settings; {fix}")
        for key in ("start", "end"):
            number(meta.get(key), key, f"profile {meta_path}", fix, low=0.0, high=1e11, none_ok=True)
        meta = versions.upgrade("profile", meta, str(meta_path))  # an older profile upgraded; a newer one refused
    steps = _steps(events)
    times = [r["Timestamp"] for r in rows[:1] + rows[-1:]] + [s.start_s for s in steps[:1]]
    start = float(meta.get("start") or (min(times) if times else 0.0))
    end = (
        read_job_end(out)
        or meta.get("end")
        or max([r["Timestamp"] for r in rows[-1:]] + [s.start_s + s.dur_s for s in steps] + [start])
    )
    hooks_seen = any(e.get("ph") == "M" and (e.get("args") or {}).get("name") == "gluonbench hooks" for e in events)
    hooks_seen = hooks_seen or any(e.get("name") == "TrainingLoop" for e in events)
    return ProfileData(
        root=profile_dir,
        nodes=_node_metrics(rows),
        steps=steps,
        events=events,
        meta=meta,
        start=start,
        end=float(end),
        hooks_seen=hooks_seen or bool(steps),
    )
