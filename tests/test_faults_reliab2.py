"""Issue #21 class 7 leftovers: what was silently accepted or blamed on the wrong thing now says so in one line."""

from __future__ import annotations

import json

import pytest
from conftest import assert_one_clear_line


@pytest.mark.parametrize(
    "lines, needle",
    [
        ([{"kind": "io", "x": 1}], "io records gluonbench cannot read"),
        ([{"kind": "diagnosis", "x": 1}], "diagnosis records gluonbench cannot read"),
        ([{"kind": "dist", "x": 1}], "dist records gluonbench cannot read"),
        ([{"spec": {}, "status": "ok"}], "no valid record"),  # a run without spec.workers is not a sweep record
    ],
)
def test_report_on_json_lines_of_another_kind_is_one_line(cli, tmp_path, lines, needle):
    run = tmp_path / "run"
    run.mkdir()
    (run / "sweep.json").write_text(json.dumps({"settings": {"workers": [0]}}))
    (run / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert_one_clear_line(cli("report", str(run)), needle)
    assert sorted(p.name for p in run.iterdir()) == ["runs.jsonl", "sweep.json"]  # nothing half-written


def test_a_diagnosis_measured_but_not_saved_gives_the_speed_up_it_measured(tmp_path):
    import shutil

    from gluonbench.api import run_diagnosis
    from gluonbench.config import DiagnoseSettings
    from gluonbench.report.store import NotSavedError

    folder = tmp_path / "keep"
    folder.mkdir()

    def take_the_folder_away(*_):  # while measuring, the output folder turns into a file: saving fails
        if folder.is_dir():
            shutil.rmtree(folder)
            folder.write_text("not a folder")

    settings = DiagnoseSettings(workload="synthetic", budget_s=3, json_path=str(folder / "d.json"), ctx="cpu")
    with pytest.raises(NotSavedError) as err:
        run_diagnosis(settings, on_progress=take_the_folder_away)
    d = err.value.result
    message = str(err.value)
    assert "but not saved" in message and f"verdict: {d.verdict}" in message
    assert f"{d.speedups['input']:.2f}x" in message and "faster" in message  # the verdict's reading, not shares
    lo, hi = d.speedup_ci["input"][:2]
    assert f"[{lo:.2f}, {hi:.2f}]" in message
