"""``gluonbench compare``: two run folders of the same kind, row by row, with bootstrap intervals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli, with_more_budget

from gluonbench.check.compare import bootstrap_ratio, compare_runs, to_text
from gluonbench.errors import GluonbenchError

SWEEP3 = REPO / "results" / "20261122T163950Z-sweep-mnist-cpu-1epoch-repeat3"
SWEEP1 = REPO / "results" / "20261122T161015Z-sweep-mnist-cpu-1epoch"
IO = REPO / "results" / "20261122T162310Z-io-local-read"


def _scaled_copy(src: Path, dst: Path, factor: float) -> Path:
    """The same sweep folder with every run's samples/s multiplied by ``factor`` (a slower or faster B)."""
    shutil.copytree(src, dst)
    lines = []
    for line in (src / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        r["samples_per_s"] *= factor
        lines.append(json.dumps(r))
    (dst / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return dst


def test_mismatched_kinds_are_refused_in_one_line():
    proc = run_cli("compare", str(SWEEP3), str(IO))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "a sweep result" in line and "an io one" in line and "same kind" in line


def test_not_a_run_folder(tmp_path):
    proc = run_cli("compare", str(tmp_path), str(SWEEP3))
    assert proc.returncode == 2 and "no runs.jsonl" in proc.stderr


def test_same_folder_is_same_everywhere_and_writes_all_formats(tmp_path):
    md, js, page = tmp_path / "c.md", tmp_path / "c.json", tmp_path / "c.html"
    proc = run_cli("compare", str(SWEEP3), str(SWEEP3), "--markdown", str(md), "--json", str(js), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(js.read_text())
    assert data["kind"] == "sweep" and len(data["rows"]) == 5
    assert all(r["flag"] == "same" and r["ratio"] == 1.0 for r in data["rows"])
    assert all(r["ratio_ci"][0] < 1 < r["ratio_ci"][1] for r in data["rows"])
    assert "| workers=0 batch=64 |" in md.read_text()
    html = page.read_text()
    assert html.lower().startswith("<!doctype html>") and "<table>" in html and "http" not in html.split("<body>")[1]
    # the one page every report uses (the HTML exporter's template), with the comparison embedded as its data
    assert 'id="gluonbench-data"' in html and '"kind": "compare"' in html and "workers=0 batch=64" in html


def test_fail_on_slowdown_flags_a_slower_b(tmp_path):
    slower = _scaled_copy(SWEEP3, tmp_path / "slower", 0.8)
    proc = run_cli("compare", str(SWEEP3), str(slower), "--fail-on-slowdown", "5%")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout and "slower" in proc.stdout
    # 2 % slower is below the 5 % allowed: no failure whatever the interval says
    slight = _scaled_copy(SWEEP3, tmp_path / "slight", 0.98)
    assert run_cli("compare", str(SWEEP3), str(slight), "--fail-on-slowdown", "5%").returncode == 0
    faster = _scaled_copy(SWEEP3, tmp_path / "faster", 1.3)
    cmp = compare_runs(SWEEP3, faster, fail_on_slowdown="5%")
    assert cmp.exit_code == 0 and all(r.flag == "faster" for r in cmp.rows)


def test_one_run_a_side_has_no_interval_and_rows_only_in_one_are_listed():
    cmp = compare_runs(SWEEP3, SWEEP1)
    flags = {r.key: r.flag for r in cmp.rows}
    assert flags["workers=0 batch=64"] == "no interval"
    assert flags["workers=3 batch=64"] == "only in B"
    assert any("--repeat" in n for n in cmp.notes)


def test_bad_threshold_is_one_line():
    with pytest.raises(GluonbenchError, match="fail_on_slowdown"):
        compare_runs(SWEEP3, SWEEP3, fail_on_slowdown="lots")


def test_bootstrap_interval_covers_the_ratio():
    a = [100.0, 102.0, 98.0, 101.0, 99.0]
    b = [x * 0.5 for x in a]
    r, (lo, hi) = bootstrap_ratio(a, b)
    assert r == pytest.approx(0.5) and lo <= 0.5 <= hi and hi < 1


def test_tune_json_files_compare_with_stored_intervals(tmp_path):
    doc = {
        "dataloader": "gluon.data.DataLoader(...)",
        "evidence": [
            {"phase": "loader", "label": "workers=0", "samples_per_s": 1000.0, "ci": [950.0, 1050.0]},
            {"phase": "loader", "label": "workers=2", "samples_per_s": 1800.0, "ci": [1700.0, 1900.0]},
        ],
    }
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    doc["evidence"][1].update(samples_per_s=900.0, ci=[850.0, 950.0])
    b.write_text(json.dumps(doc))
    cmp = compare_runs(a, b, fail_on_slowdown=0.05)
    assert cmp.kind == "tune" and cmp.failed == ["loader: workers=2"]
    with pytest.raises(GluonbenchError, match="same kind"):
        compare_runs(a, SWEEP3)


def test_two_real_diagnoses_compare_per_probe(tmp_path):
    """Two short real diagnoses of the synthetic workload: one row per probe, from the stored blocks."""

    def both(budget: float) -> dict:
        folders = []
        for name in ("a", "b"):
            out = tmp_path / f"{name}-{budget:g}"
            proc = run_cli(
                "diagnose", "--dataset", "synthetic", "--samples", "512", "--batch-size", "32",
                "--data-dir", str(tmp_path / "cache"), "--budget", f"{budget:g}", "--out", str(out),
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            (folder,) = out.iterdir()
            folders.append(folder)
        js = tmp_path / f"c-{budget:g}.json"
        proc = run_cli("compare", str(folders[0]), str(folders[1]), "--json", str(js))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(js.read_text())

    def every_probe_measured(data: dict) -> bool:
        keys = {r["key"] for r in data["rows"]}
        return {"full", "cached_batch", "loader_only"} <= keys and all(
            r["n_a"] >= 1 and r["n_b"] >= 1 for r in data["rows"]
        )

    # a busy machine can leave a probe without a block in 4 s: measure again with more, as the tool advises
    data = with_more_budget(both, (4.0, 8.0, 16.0), every_probe_measured)
    assert data["kind"] == "diagnosis"
    keys = {r["key"] for r in data["rows"]}
    assert {"full", "cached_batch", "loader_only"} <= keys
    assert all(r["n_a"] >= 1 and r["n_b"] >= 1 and r["a"] > 0 for r in data["rows"])


def _retitled(src: Path, dst: Path, **settings) -> Path:
    """The same sweep folder with its saved settings changed (another pipeline, other options)."""
    shutil.copytree(src, dst)
    doc = json.loads((dst / "sweep.json").read_text())
    doc["settings"].update(settings)
    (dst / "sweep.json").write_text(json.dumps(doc))
    return dst


def test_the_header_names_each_side_pipeline_options_and_machine():
    text = to_text(compare_runs(SWEEP3, SWEEP1))
    a, b = text.splitlines()[:2]
    assert "A = " in a and "mnist" in a and "machine: Intel(R) Xeon(R) Processor, 2 cores" in a
    assert "B = " in b and "mnist" in b and "machine:" in b


@pytest.mark.parametrize(
    "change",
    [
        {"workload": "synthetic"},
        {"pipeline": "mypkg.train:make", "pipeline_options": {"classes": 5}},
        {"options": {"name": "fashion-mnist"}},
        {"data_dir": "/elsewhere/mnist"},
    ],
    ids=["workload", "factory", "options", "data"],
)
def test_different_pipelines_are_refused_unless_forced(tmp_path, change):
    other = _retitled(SWEEP3, tmp_path / "other", **change)
    proc = run_cli("compare", str(SWEEP3), str(other))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "different pipelines" in line and "--force" in line
    forced = run_cli("compare", str(SWEEP3), str(other), "--force")
    assert forced.returncode == 0, forced.stderr
    assert "different pipelines (compared with --force)" in forced.stdout


def test_loader_settings_may_differ():
    # the two folders are one pipeline at other worker counts and repeats: compared, not refused
    cmp = compare_runs(SWEEP3, SWEEP1)
    assert cmp.a.key() == cmp.b.key() and not any("different pipelines" in n for n in cmp.notes)


@pytest.mark.parametrize("bad", [float("nan"), -120.0, 0.0, float("inf")], ids=["nan", "negative", "zero", "inf"])
def test_a_bad_figure_is_a_bad_record_in_one_line(tmp_path, bad):
    broken = _scaled_copy(SWEEP3, tmp_path / "broken", 1.0)
    lines = (broken / "runs.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["samples_per_s"] = bad
    lines[0] = json.dumps(first)
    (broken / "runs.jsonl").write_text("\n".join(lines) + "\n")
    proc = run_cli("compare", str(SWEEP3), str(broken), "--fail-on-slowdown", "5%")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "not a positive finite figure" in line and str(broken) in line


def _single_runs(src: Path, dst: Path, factor: float, spread: float = 0.03) -> Path:
    """One run per worker count (the first repeat of ``src``), with per-block figures around its samples/s, scaled."""
    shutil.copytree(src, dst)
    out, seen = [], set()
    for line in (src / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["spec"]["workers"] in seen:
            continue
        seen.add(r["spec"]["workers"])
        r["samples_per_s"] *= factor
        rate = r["samples_per_s"]
        r["steady"]["block_samples_per_s"] = [rate * (1 + spread * ((i % 5) - 2) / 2) for i in range(12)]
        out.append(json.dumps(r))
    (dst / "runs.jsonl").write_text("\n".join(out) + "\n")
    return dst


def test_single_runs_are_judged_by_their_blocks_and_a_large_slowdown_is_never_unjudged(tmp_path):
    a = _single_runs(SWEEP3, tmp_path / "a", 1.0)
    b = _single_runs(SWEEP3, tmp_path / "b", 1 / 4.5)
    cmp = compare_runs(a, b, fail_on_slowdown="5%")
    assert cmp.rows and all(r.flag == "slower" and r.n_a == 12 for r in cmp.rows)
    assert cmp.exit_code == 1 and any("blocks of steps" in n for n in cmp.notes)
    same = compare_runs(a, _single_runs(SWEEP3, tmp_path / "same", 1.0), fail_on_slowdown="5%")
    assert same.exit_code == 0 and all(r.flag == "same" for r in same.rows)


def test_a_runs_blocks_are_consecutive_steps_of_its_steady_state():
    from gluonbench.engine.loop import StepTimes

    times = StepTimes(wait=[0.5] + [0.01] * 40, copy=[0.0] * 41, compute=[0.01] * 20 + [0.03] * 21, samples=[10] * 41)
    split = times.split(skip=1)
    rates = split.block_samples_per_s
    assert len(rates) == 6  # 40 steady steps in 6 blocks
    assert rates[0] == pytest.approx(10 / 0.02) and rates[-1] == pytest.approx(10 / 0.04)
    assert times.split(skip=1).to_dict()["block_samples_per_s"] == rates  # kept in a run's steady figures
    assert (
        StepTimes(wait=[0.1] * 3, copy=[0.0] * 3, compute=[0.0] * 3, samples=[1] * 3).split().block_samples_per_s == []
    )
