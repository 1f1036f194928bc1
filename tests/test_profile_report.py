"""gluonbench report on profile folders, including a profiler-output folder as SageMaker Debugger writes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_clear_line

from gluonbench.profiler.session import build_report

START = 1_594_662_600.0


def debugger_output(root: Path) -> Path:
    """A profiler-output folder in Debugger's own conventions: compact JSON lines, rows of one
    snapshot a few ms apart, a GPU node, network Algorithm/Platform rows, and a Python timeline
    whose ``ts`` is relative to ``start_time_since_epoch_in_micros``."""
    out = root / "profiler-output"
    hour = "2020071317"
    lines: dict[Path, list[str]] = {}
    for i in range(1300):  # 650 s at 0.5 s: past patience (1000); CPU saturated, GPU idle
        ts = START + 0.5 * i
        minute = int(ts // 60 * 60)
        path = out / "system" / "incremental" / hour / f"{minute}.algo-1.json"
        rows = []
        for c in range(4):
            rows.append(
                {
                    "Type": "cpu",
                    "Name": f"cpu{c}",
                    "Dimension": "CPUUtilization",
                    "Value": 97.5,
                    "Timestamp": ts + 0.001,
                }
            )
            rows.append(
                {
                    "Type": "cpu",
                    "Name": f"cpu{c}",
                    "Dimension": "I/OWaitPercentage",
                    "Value": 1.0,
                    "Timestamp": ts + 0.001,
                }
            )
        rows.append(
            {"Type": "gpu", "Name": "gpu0", "Dimension": "GPUUtilization", "Value": 3.0, "Timestamp": ts + 0.004}
        )
        rows.append(
            {"Type": "gpu", "Name": "gpu0", "Dimension": "GPUMemoryUtilization", "Value": 12.0, "Timestamp": ts + 0.004}
        )
        rows.append({"Type": "memory", "Name": "MemoryUsedPercent", "Dimension": "", "Value": 6.2, "Timestamp": ts})
        for dim in ("Algorithm", "Platform"):
            rows.append(
                {
                    "Type": "network",
                    "Name": "ReceiveBytesPerSecond",
                    "Dimension": dim,
                    "Value": 1e6,
                    "Timestamp": ts + 0.005,
                }
            )
        rows.append(
            {
                "Type": "i/o",
                "Name": "ReadThroughputInBytesPerSecond",
                "Dimension": "",
                "Value": 8e6,
                "Timestamp": ts + 0.002,
            }
        )
        lines.setdefault(path, []).extend(json.dumps({**r, "NodeId": "algo-1"}, separators=(",", ":")) for r in rows)
    for path, ls in lines.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(ls) + "\n")
    (out / "system" / "training_job_end.ts").write_text(f"{START + 651}\n")
    start_us = int((START + 20) * 1e6)
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": start_us}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},
    ]
    t = 0
    for n in range(150):
        dur = 400_000 if n % 10 == 0 and n < 150 else 84_000  # 15 slow steps among 150
        events.append(
            {
                "name": "Step:ModeKeys.TRAIN",
                "pid": 1,
                "ph": "X",
                "ts": t,
                "dur": dur,
                "args": {"pid": 905, "step_num": str(n)},
            }
        )
        t += dur + 1000
    trace = out / "framework" / "pevents" / hour / f"{start_us}_905-algo-1_pythontimeline.json"
    trace.parent.mkdir(parents=True)
    trace.write_text("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
    return out


def test_report_on_a_debugger_profiler_output(cli, tmp_path):
    out = debugger_output(tmp_path / "job")
    dest = tmp_path / "report"
    proc = cli("report", str(out), "--out", str(dest))
    assert proc.returncode == 0, proc.stderr
    rules = {r["rule"]: r for r in json.loads((dest / "rules.json").read_text())}
    assert rules["CPUBottleneck"]["triggered"] and rules["CPUBottleneck"]["datapoints"] == 1300
    assert rules["LowGPUUtilization"]["triggered"]
    assert not rules["IOBottleneck"]["triggered"] and rules["IOBottleneck"]["applicable"]
    assert rules["StepOutlier"]["triggered"] and rules["StepOutlier"]["violations"] == 15
    init = rules["MaxInitializationTime"]["details"]["initialization_s"]
    assert init == pytest.approx(20.0, abs=0.01)  # steps placed by start_time_since_epoch_in_micros
    assert not rules["Dataloader"]["applicable"] and not rules["InputBound"]["applicable"]
    html = (dest / "report.html").read_text()
    assert "CPUBottleneck" in html and "gpu0" in html


def test_report_rebuilds_beside_the_folder_and_takes_overrides(cli, tmp_path):
    out = debugger_output(tmp_path / "job")
    proc = cli("report", str(tmp_path / "job"), "--rule", "StepOutlier.n_outliers=20")
    assert proc.returncode == 0, proc.stderr
    rules = {r["rule"]: r for r in json.loads((tmp_path / "job" / "rules.json").read_text())}
    assert not rules["StepOutlier"]["triggered"] and rules["StepOutlier"]["parameters"]["n_outliers"] == 20
    assert (out.parent / "report.html").is_file()


def test_report_from_stored_files_alone(tmp_path):
    """The report is a pure function of the files: rebuilding gives the same rules."""
    out = debugger_output(tmp_path / "job")
    first = [r.to_dict() for r in build_report(out)]
    shutil.copytree(tmp_path / "job", tmp_path / "copy")
    second = [r.to_dict() for r in build_report(tmp_path / "copy" / "profiler-output")]
    assert json.dumps(first, default=str) == json.dumps(second, default=str)


def test_report_reads_the_early_layout_without_hour_folders(tmp_path):
    out = debugger_output(tmp_path / "job")
    inc = out / "system" / "incremental"
    for f in list(inc.glob("*/*.json")):
        f.rename(inc / f.name)
    reports = {r.rule: r for r in build_report(out)}
    assert reports["CPUBottleneck"].datapoints == 1300 and reports["CPUBottleneck"].triggered


def test_report_bad_folders(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_clear_line(cli("report", str(empty / "nope")), "is not a folder")
    assert_one_clear_line(cli("report", str(empty)), "runs.jsonl")
