"""`gluonbench io --emulate-step-ms`: each cell's step swapped for a timed wait, its AU in every export."""

from __future__ import annotations

import csv
import json
import math
import re

import pytest
from conftest import assert_one_clear_line

from gluonbench.analysis.io_rules import keeps_fed, recommend
from gluonbench.config import IoSettings
from gluonbench.errors import GluonbenchError
from gluonbench.pipeline.emulate import AU_PASS, utilisation

# 21 files of ~15 KB, 6 shards: 6 batches of 4 per epoch, read from the page cache in well under 250 ms each
TINY = ["--small", "300KB", "--large", "900KB", "--file-size", "15KB", "--timeout", "30", "--threads", "2"]
CELLS = ["--sizes", "small", "--modes", "fastfile,pipe", "--batch-size", "4", "--epochs", "2"]


def _io(cli, tmp_path, mnist_dir, step: str, name: str):
    out = tmp_path / "results"
    proc = cli("io", *TINY, *CELLS, "--emulate-step-ms", step, "--name", name, "--out", str(out),
               "--mnist-dir", str(mnist_dir))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.glob(f"*-{name}"))
    rows = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    return proc, run_dir, rows


def test_io_cells_report_au_with_a_long_and_a_tiny_emulated_step(cli, tmp_path, mnist_dir, no_leaks):
    # a busy machine can stretch a 60 KB page-cache read past 4 ms (AU < 0.9): that run measured the
    # machine, not the code; measure again (up to 3 times) rather than assert on a quiet machine
    for attempt in range(3):
        proc, run_dir, long_rows = _io(cli, tmp_path, mnist_dir, "250", f"long{attempt}")
        if all(r["emulated"]["au"] >= AU_PASS for r in long_rows):
            break
    for r in long_rows:
        e = r["emulated"]
        assert e["setting"] == 250.0 and e["step_ms"] == pytest.approx(250.0) and e["pass_line"] == AU_PASS
        # the wait is the emulated compute: 250 ms per batch of 4, scaled to the samples the epochs counted
        samples = sum(ep["samples"] for ep in r["epochs"])
        assert e["emulated_s"] == pytest.approx(0.250 * samples / 4)
        assert e["total_s"] == pytest.approx(sum(ep["seconds"] for ep in r["epochs"]))
        # reading ~60 KB from the page cache is far shorter than 250 ms: the accelerator is nearly always busy
        # (250, not 40 or 80: beside a CPU hog on each core, the input's wait averaged 9 ms a batch, and a
        # stall of a few tens of ms in 12 batches was 10 % of a 40 ms step)
        assert e["au"] >= 0.9 and e["passes"], (r["cell"], e)
        assert e["au"] <= 1.0 + 1e-9
        assert all(0.8 <= ep["au"] <= 1.0 + 1e-9 for ep in r["epochs"])
        assert r["samples_per_s"] <= 4 / 0.250 * 1.01, "the emulated step caps the rate"
    assert re.search(r"AU (9\d|100)", proc.stderr)  # per-cell progress lines name the AU
    md = (run_dir / "io.md").read_text()
    assert "| AU |" in md and "(pass)" in md and "emulated compute: 250 ms per batch of 4" in md
    assert "every cell keeps the accelerator fed" in md
    table = list(csv.DictReader((run_dir / "io.csv").open()))
    assert len(table) == 4 and all(float(t["au"]) >= 0.9 and t["au_passes"] == "True" for t in table)
    assert all(float(t["emulated_step_ms"]) == pytest.approx(250.0) for t in table)
    summary = json.loads((run_dir / "io.json").read_text())
    assert all(row["emulated"]["au"] >= 0.9 for row in summary["rows"])
    assert summary["advice"][0]["rule"] == "au"
    assert summary["settings"]["emulate_step_ms"] == "250"

    # `gluonbench report RUN_DIR` rebuilds every export, AU included, from runs.jsonl alone
    csv_text = (run_dir / "io.csv").read_text()
    for name in ("io.csv", "io.md", "io.json", "io.png"):
        (run_dir / name).unlink()
    rebuilt = cli("report", str(run_dir))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (run_dir / "io.md").read_text() == md and (run_dir / "io.csv").read_text() == csv_text

    # a step of 0.01 ms: the accelerator mostly waits for input
    _, run_dir, tiny_rows = _io(cli, tmp_path, mnist_dir, "0.01", "tiny")
    long_au = {r["cell"]["mode"] + r["cell"]["layout"]: r["emulated"]["au"] for r in long_rows}
    for r in tiny_rows:
        e = r["emulated"]
        assert 0 < e["au"] < 0.5 and not e["passes"], (r["cell"], e)
        assert e["au"] < long_au[r["cell"]["mode"] + r["cell"]["layout"]]
    md = (run_dir / "io.md").read_text()
    assert "(below 90 %)" in md and "no cell keeps the accelerator fed" in md


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("nan", "finite"),
        ("inf", "finite"),
        ("-5", "positive"),
        ("0", "positive"),
        ("1e12", "over 600000 ms"),
        ("resnet50@abacus", "resnet50@v100"),
    ],
)
def test_io_bad_emulation_cli(cli, tmp_path, value, needle):
    proc = cli("io", "--emulate-step-ms", value, "--out", str(tmp_path / "out"))
    assert_one_clear_line(proc, "--emulate-step-ms", needle)
    assert not (tmp_path / "out").exists(), "no run folder for bad input"


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0, 1e12, "resnet50@abacus", True])
def test_io_settings_validate_emulation_in_the_library(value):
    with pytest.raises(GluonbenchError, match="emulate_step_ms"):
        IoSettings(emulate_step_ms=value).check()
    assert IoSettings(emulate_step_ms="ResNet50@V100").check().emulate_step_ms == "ResNet50@V100"


def test_one_au_formula():
    # 10 batches of 64 at 20 ms each, in 0.25 s: 0.2 s of compute
    au = utilisation(20.0, 64, 640, 0.25)
    assert au.emulated_s == pytest.approx(0.2) and au.au == pytest.approx(0.8) and not au.passes
    # a smaller last batch waits less; a throughput is the samples of one second
    assert utilisation(20.0, 64, 32, 0.01).emulated_s == pytest.approx(0.01)
    assert utilisation("resnet50@v100", 64, 300, 1.0).au == pytest.approx(0.195 * 300 / 64)
    assert math.isnan(utilisation(20.0, 64, 0, 0.0).au)


def _row(mode, layout, au, sps=100.0):
    return {
        "status": "ok",
        "cell": {"mode": mode, "size": "large", "layout": layout, "data_bytes": 1e8, "objects": 10, "store": "local"},
        "open": {}, "startup_s": 0.1, "read_mb_per_s": 10.0, "samples_per_s": sps, "total_s": 1.0, "disk_used": 0,
        "epochs": [{}],
        "emulated": {"text": "emulated compute resnet50@v100", "au": au, "passes": au >= 0.9, "pass_line": 0.9},
    }  # fmt: skip


def test_advice_names_the_cells_that_keep_the_accelerator_fed():
    rows = [_row("fastfile", "shards", 0.97), _row("fastfile", "files", 0.41), _row("pipe", "shards", 0.93)]
    text = keeps_fed(rows).text
    assert "2 of 3 cells keep the accelerator fed" in text
    assert "fastfile/large/shards (97%), pipe/large/shards (93%)" in text
    assert "waits for input: fastfile/large/files (41%)" in text
    assert recommend(rows)[0].rule == "au"
    rows = [_row("fastfile", "files", 0.41, sps=321), _row("pipe", "files", 0.2)]
    assert "no cell keeps the accelerator fed" in keeps_fed(rows).text and "321 samples/s" in keeps_fed(rows).text
    for r in rows:
        r.pop("emulated")
    assert keeps_fed(rows) is None and all(a.rule != "au" for a in recommend(rows))
