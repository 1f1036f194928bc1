"""A full disk under an output is found before measuring ($GITHUB_STEP_SUMMARY included); a write that still fails
after measuring keeps the result in the one line (check's verdict, or the baseline it saved)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from gluonbench import api
from gluonbench.errors import GluonbenchError
from gluonbench.report.store import NotSavedError, check_append_file


def _statvfs_free(monkeypatch, free: int) -> None:
    real = os.statvfs

    def fake(path):
        st = real(path)
        return SimpleNamespace(f_bavail=free // st.f_frsize, f_frsize=st.f_frsize)

    monkeypatch.setattr(os, "statvfs", fake)


def test_the_summary_file_on_a_full_disk_is_refused_before_work(tmp_path, monkeypatch):
    _statvfs_free(monkeypatch, 8 << 10)
    with pytest.raises(GluonbenchError, match=r"disk full at .*GITHUB_STEP_SUMMARY .*checked before measuring"):
        check_append_file(tmp_path / "summary.md", "GITHUB_STEP_SUMMARY")
    monkeypatch.undo()
    assert check_append_file(tmp_path / "summary.md", "GITHUB_STEP_SUMMARY") == tmp_path / "summary.md"


def _measured(monkeypatch, fail_on: str):
    """api.check with the measurement stood in for (a finished check), and the write of ``fail_on`` failing."""
    import gluonbench.check as check_pkg

    result = SimpleNamespace(outcome="regression", message="read is 1.4x slower", to_dict=lambda: {"x": 1})
    monkeypatch.setattr(check_pkg, "run_check", lambda *a, **k: result)

    def write(path, text):
        if str(path).endswith(fail_on):
            raise GluonbenchError(f"disk full at {path}: free some space")
        with open(path, "w") as f:
            f.write(text)

    monkeypatch.setattr(api, "atomic_write_text", write)
    return result


def test_a_failed_output_after_measuring_keeps_the_verdict_in_the_line(tmp_path, monkeypatch):
    result = _measured(monkeypatch, "r.json")
    with pytest.raises(NotSavedError) as err:
        api.check("p", baseline=str(tmp_path / "b.json"), json_path=str(tmp_path / "r.json"))
    line = str(err.value)
    assert line.startswith("check measured (check: REGRESSION: read is 1.4x slower)"), line
    assert f"disk full at {tmp_path / 'r.json'}" in line and err.value.result is result


def test_a_failed_json_after_saving_a_baseline_says_it_was_saved(tmp_path, monkeypatch):
    _measured(monkeypatch, "r.json")
    with pytest.raises(NotSavedError, match=r"check measured \(baseline saved: .*b\.json\) but an output was not"):
        api.check("p", save=str(tmp_path / "b.json"), json_path=str(tmp_path / "r.json"))


def test_two_outputs_naming_one_file_are_refused_before_work(tmp_path):
    from gluonbench.report.store import refuse_overwriting_inputs

    with pytest.raises(GluonbenchError, match=r"--junit .*r\.x is also --json: give each output its own file"):
        refuse_overwriting_inputs({"--json": tmp_path / "r.x", "--junit": str(tmp_path / "r.x")}, [])
    refuse_overwriting_inputs({"--json": tmp_path / "r.json", "--junit": tmp_path / "r.xml", "--html": None}, [])
