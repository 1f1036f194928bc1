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
