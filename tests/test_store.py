"""The results store: append as runs finish, tolerate a torn line, resume, rebuild the report."""

import json

import pytest

from gluonbench.config import SweepSettings
from gluonbench.errors import GluonbenchError
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.rundir import load, rebuild
from gluonbench.sweeprun.run import RunResult, RunSpec


def _result(workers, repeat=0, rate=1000.0, status="ok"):
    r = RunResult(spec=RunSpec(workers=workers, repeat=repeat).to_dict(), status=status)
    if status == "ok":
        r.train_s, r.eval_s, r.accuracy = 64000 / rate, 1.0, 0.9
        r.train_samples, r.samples_per_s = 64000, rate
        r.steady = {"samples_per_s": rate * 1.05, "wait_frac": 0.2}
        r.system = {"peak_mem_bytes": 300 * 2**20, "cpu_util_pct": 80.0}
        r.env = {"cpu": "Test CPU", "cores_logical": 2, "python": "3.11"}
    else:
        r.error = "child process died (killed by signal SIGABRT)"
    return r


@pytest.fixture
def store(tmp_path):
    s = RunStore(new_run_dir(tmp_path, "t"))
    s.write_settings(
        {"settings": SweepSettings(workers=(0, 2, 4), repeat=2).to_dict(), "command": "gluonbench sweep", "env": {}}
    )
    return s


def test_run_dir_name(tmp_path):
    a, b = new_run_dir(tmp_path, "x"), new_run_dir(tmp_path, "x")
    assert a != b and a.name.endswith("Z-x") and b.name.endswith("Z-x-1")


def test_append_is_one_line_per_run_and_durable(store):
    store.append(_result(0))
    assert len(store.runs_path.read_text().splitlines()) == 1
    store.append(_result(2))
    lines = store.runs_path.read_text().splitlines()
    assert [json.loads(line)["spec"]["workers"] for line in lines] == [0, 2]


def test_nan_is_stored_as_null(store):
    store.append(_result(4, status="failed"))
    (rec,) = store.records()
    assert rec["accuracy"] is None and rec["status"] == "failed"


def test_torn_last_line_is_skipped(store, caplog):
    store.append(_result(0))
    with open(store.runs_path, "a") as f:
        f.write('{"spec": {"workers": 2')  # a crash mid-write
    assert [r["spec"]["workers"] for r in store.records()] == [0]
    assert "incomplete or corrupt" in caplog.text


def test_report_rebuilt_from_runs_jsonl_alone(store):
    for rep in (0, 1):
        store.append(_result(0, rep, rate=1000 + rep * 10))
        store.append(_result(2, rep, rate=1800 + rep * 100))
        store.append(_result(4, rep, rate=1700))
    store.append(_result(4, 2, status="failed"))
    written = rebuild(store.path)
    assert sorted(p.name for p in written) == ["report.html", "summary.csv", "summary.json", "summary.md", "sweep.png"]
    summary = load(store.path).summary
    assert summary.best_workers == 2
    row2 = next(r for r in summary.rows if r.workers == 2)
    assert (
        row2.samples_per_s == pytest.approx(1850) and row2.samples_per_s_min == 1800 and row2.samples_per_s_max == 1900
    )
    assert row2.speedup == pytest.approx(1850 / 1005)
    assert summary.near_best == [], "4 workers' best repeat (1700) stays below 2 workers' worst (1800)"
    row4 = next(r for r in summary.rows if r.workers == 4)
    assert row4.failed == 1 and row4.runs == 2
    md = (store.path / "summary.md").read_text()
    assert "**Best worker count: 2**" in md and "SIGABRT" in md and "Test CPU" in md
    csv_lines = (store.path / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("workers,runs,failed,train_s") and len(csv_lines) == 4
    assert (store.path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # delete every export: the report comes back identical from runs.jsonl
    before = (store.path / "summary.csv").read_text()
    for name in ("summary.csv", "summary.md", "summary.json", "sweep.png"):
        (store.path / name).unlink()
    rebuild(store.path)
    assert (store.path / "summary.csv").read_text() == before


def test_resume_skips_finished_runs(store):
    store.append(_result(0, 0))
    store.append(_result(2, 0))
    settings = SweepSettings.from_dict(store.read_settings()["settings"])
    done = {(r["spec"]["workers"], r["spec"]["repeat"]) for r in store.records()}
    todo = [s.key for s in settings.specs() if s.key not in done]
    assert todo == [(4, 0), (0, 1), (2, 1), (4, 1)]


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(GluonbenchError, match="does not exist"):
        RunStore(tmp_path / "nope").records()
    with pytest.raises(GluonbenchError, match=r"no sweep\.json"):
        RunStore(tmp_path).read_settings()


def test_near_best_names_counts_within_noise(store):
    for rep, (r2, r4) in enumerate([(1800, 1700), (1900, 1850)]):
        store.append(_result(0, rep, rate=1000))
        store.append(_result(2, rep, rate=r2))
        store.append(_result(4, rep, rate=r4))
    written = rebuild(store.path)
    assert sorted(p.name for p in written) == ["report.html", "summary.csv", "summary.json", "summary.md", "sweep.png"]
    summary = load(store.path).summary
    assert summary.best_workers == 2 and summary.near_best == [4]
    # 4 workers' best repeat reaches 2 workers' worst: no best count is named, the rerun is
    md = (store.path / "summary.md").read_text()
    assert not summary.best_named and "**best**" not in md
    assert "**Best worker count: within noise: rerun with --repeat 4 (4 workers: its best repeat reaches" in md


def test_exports_are_readable_by_others(store):
    import os
    import stat

    store.append(_result(0))
    rebuild(store.path)
    mask = os.umask(0o022)
    os.umask(mask)
    for name in ("summary.csv", "summary.md", "summary.json", "sweep.png", "report.html", "sweep.json", "runs.jsonl"):
        mode = stat.S_IMODE((store.path / name).stat().st_mode)
        assert mode == 0o666 & ~mask, (name, oct(mode))


def test_the_default_output_folder_is_not_a_tracked_folder_of_the_project():
    """A run with no --out from a checkout must not land among the project's tracked files (its results/)."""
    import inspect
    import subprocess
    from pathlib import Path

    from gluonbench import api
    from gluonbench.cli import build_parser
    from gluonbench.report import DEFAULT_OUT

    repo = Path(__file__).resolve().parents[1]
    parser = build_parser()
    for command in (["sweep"], ["io"], ["profile", "--", "true"]):
        assert parser.parse_args(command).out == DEFAULT_OUT, command
    for name in ("sweep", "io_benchmark"):
        assert inspect.signature(getattr(api, name)).parameters["out"].default == DEFAULT_OUT, name
    tracked = subprocess.run(["git", "ls-files", "--", DEFAULT_OUT], cwd=repo, capture_output=True, text=True)
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{DEFAULT_OUT}/x"], cwd=repo)
    assert tracked.returncode == 0 and tracked.stdout == "", "the default output folder holds tracked files"
    assert ignored.returncode == 0, f"the checkout's .gitignore does not ignore {DEFAULT_OUT}/"
