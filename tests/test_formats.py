"""Records carry a format version: older records (no ``format_version``) are read, a newer one is refused."""

from __future__ import annotations

import json

import pytest
from conftest import assert_one_clear_line, run_cli

from gluonbench.config import SweepSettings
from gluonbench.errors import GluonbenchError
from gluonbench.report import versions
from gluonbench.report.exporters import JsonExporter
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.rundir import load, rebuild
from gluonbench.sweeprun.run import RunResult, RunSpec


def _result(workers: int, rate: float = 1000.0) -> RunResult:
    r = RunResult(spec=RunSpec(workers=workers).to_dict(), status="ok")
    r.train_s, r.eval_s, r.accuracy = 64000 / rate, 1.0, 0.9
    r.train_samples, r.samples_per_s = 64000, rate
    r.steady = {"samples_per_s": rate * 1.05, "wait_frac": 0.2}
    return r


@pytest.fixture
def store(tmp_path) -> RunStore:
    s = RunStore(new_run_dir(tmp_path, "t"))
    s.write_settings({"settings": SweepSettings(workers=(0, 2)).to_dict(), "command": "gluonbench sweep", "env": {}})
    return s


def _lines(store: RunStore) -> list[dict]:
    return [json.loads(line) for line in store.runs_path.read_text().splitlines()]


def _rewrite(store: RunStore, records: list[dict]) -> None:
    store.runs_path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_what_gluonbench_writes_carries_the_current_format_version(store):
    store.append(_result(0))
    assert _lines(store)[0][versions.KEY] == versions.CURRENT["record"]
    saved = json.loads((store.path / "sweep.json").read_text())
    assert saved[versions.KEY] == versions.CURRENT["settings"]
    rebuild(store.path)
    summary = json.loads((store.path / "summary.json").read_text())
    assert summary[versions.KEY] == versions.CURRENT["summary"]


def test_a_record_written_before_format_versions_is_read_and_upgraded(store):
    store.append(_result(0, 900.0))
    store.append(_result(2, 1800.0))
    old = _lines(store)
    for record in old:
        del record[versions.KEY]
    _rewrite(store, old)
    saved = json.loads((store.path / "sweep.json").read_text())
    del saved[versions.KEY]
    (store.path / "sweep.json").write_text(json.dumps(saved))

    records = store.records()
    assert [r["spec"]["workers"] for r in records] == [0, 2]
    assert all(r[versions.KEY] == versions.CURRENT["record"] for r in records)
    assert store.read_settings()[versions.KEY] == versions.CURRENT["settings"]
    assert load(store.path).summary.best_workers == 2  # the report reads an old folder as before


@pytest.mark.parametrize("kind", sorted(versions.CURRENT))
def test_every_kind_upgrades_from_unversioned_and_refuses_a_newer_version(kind):
    old = {"some": "field"}
    up = versions.upgrade(kind, old, "old.json")
    assert up == {versions.KEY: versions.CURRENT[kind], "some": "field"} and versions.KEY not in old
    future = {versions.KEY: versions.CURRENT[kind] + 1, "some": "field"}
    with pytest.raises(versions.NewerFormatError, match=r"new\.json was written by a newer gluonbench.*upgrade"):
        versions.upgrade(kind, future, "new.json")
    with pytest.raises(GluonbenchError, match="not a whole number"):
        versions.upgrade(kind, {versions.KEY: "1"}, "bad.json")


def _rename_old(d: dict) -> dict:
    d["renamed"] = d.pop("old")
    return d


def test_the_upgrade_is_applied_one_step_at_a_time(monkeypatch):
    monkeypatch.setitem(versions.CURRENT, "record", 3)
    monkeypatch.setitem(versions.UPGRADES, ("record", 1), _rename_old)
    monkeypatch.setitem(versions.UPGRADES, ("record", 2), lambda d: {**d, "added": 0})
    assert versions.upgrade("record", {"old": 5}, "x") == {versions.KEY: 3, "renamed": 5, "added": 0}
    assert versions.upgrade("record", {versions.KEY: 2, "renamed": 1}, "x") == {
        versions.KEY: 3,
        "renamed": 1,
        "added": 0,
    }


def test_a_future_record_or_settings_file_is_refused_in_one_line(store, tmp_path):
    store.append(_result(0))
    records = _lines(store)
    records[0][versions.KEY] = versions.CURRENT["record"] + 1
    _rewrite(store, records)
    with pytest.raises(versions.NewerFormatError, match=r"runs\.jsonl line 1 was written by a newer gluonbench"):
        store.records()
    proc = run_cli("report", str(store.path))
    assert_one_clear_line(proc, "newer gluonbench", "upgrade gluonbench")

    other = RunStore(new_run_dir(tmp_path, "s"))
    other.write_settings({"settings": {}, "command": "", "env": {}})
    saved = json.loads((other.path / "sweep.json").read_text())
    saved[versions.KEY] = versions.CURRENT["settings"] + 1
    (other.path / "sweep.json").write_text(json.dumps(saved))
    with pytest.raises(versions.NewerFormatError, match=r"sweep\.json was written by a newer gluonbench"):
        other.read_settings()


def test_a_future_tune_file_is_refused_by_compare_and_an_old_one_read(tmp_path):
    from gluonbench.check.compare import kind_of

    doc = {"evidence": [], "dataloader": "DataLoader(num_workers=2)"}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    kind, data = kind_of(tmp_path / "old.json")
    assert kind == "tune" and data[versions.KEY] == versions.CURRENT["tune"]
    (tmp_path / "new.json").write_text(json.dumps({**doc, versions.KEY: versions.CURRENT["tune"] + 1}))
    with pytest.raises(versions.NewerFormatError, match="newer gluonbench"):
        kind_of(tmp_path / "new.json")


def test_a_future_profile_meta_is_refused(tmp_path):
    from gluonbench.profiler.data import META, load

    folder = tmp_path / "profile"
    (folder / "profiler-output" / "system").mkdir(parents=True)
    (folder / "profiler-output" / "framework").mkdir()
    (folder / META).write_text(json.dumps({versions.KEY: versions.CURRENT["profile"] + 1}))
    with pytest.raises(versions.NewerFormatError, match="newer gluonbench"):
        load(folder)


def test_the_json_export_keeps_a_kind_s_own_version():
    class Stub:
        def data(self):
            return {versions.KEY: versions.CURRENT["diagnosis"], "verdict": "loader"}

    class Plain:
        def data(self):
            return {"best": 2}

    assert json.loads(JsonExporter().render(Stub()))[versions.KEY] == versions.CURRENT["diagnosis"]
    assert json.loads(JsonExporter().render(Plain())) == {versions.KEY: versions.CURRENT["summary"], "best": 2}
