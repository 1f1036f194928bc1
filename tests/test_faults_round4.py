"""The fault matrix's round-4 rows (benchmarks/fault_matrix.py --only r41): every file kind read with bounds, a
FIFO, device, socket or folder where a file is expected, the environment checked before MXNet is imported, closed
standard streams and low resource limits. Each row is a real command on a real bad input; all must be handled
well (one line naming the problem and the fix, the documented exit code, nothing left behind or running)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_round4_rows_are_at_least_150():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from fault_matrix import round4_cases

    cases = round4_cases()
    assert len(cases) >= 150 and len({c.id for c in cases}) == len(cases)


@pytest.mark.slow
def test_every_round4_row_is_handled_well(tmp_path):
    out = tmp_path / "r41.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "fault_matrix.py"), "--only", "r41", "--jobs", "2"]
    proc = subprocess.run([*cmd, "--json", str(out)], capture_output=True, text=True, timeout=3600, cwd=REPO)
    outcomes = json.loads(out.read_text())
    outcomes = outcomes["outcomes"] if isinstance(outcomes, dict) else outcomes
    bad = [f"{o['id']}: {o['why']}" for o in outcomes if not o["ok"]]
    assert len(outcomes) >= 150 and not bad, (proc.stdout[-3000:], bad)
