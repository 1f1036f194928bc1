"""The fault matrix's r41b rows (run by tests/test_faults_round4.py's slow test, ``--only r41`` matching them): an
output that is an input, a factory that changes folder, credentials in --pipeline-option, user code that exits,
raises KeyboardInterrupt, blocks or leaves processes and threads, outputs on a full device."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_round4b_rows_cover_every_class_and_each_command():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from fault_matrix import round4_cases, round4b_cases

    cases = round4b_cases()
    ids = [c.id for c in cases]
    assert len(cases) >= 60 and len(set(ids)) == len(ids)
    assert not set(ids) & {c.id for c in round4_cases()}
    by_class = Counter(i.split(":")[1] for i in ids)
    assert {"outputs", "chdir", "secrets", "fence", "full", "dev-full"} <= set(by_class), by_class
    fenced = {i.split(":")[3] for i in ids if i.startswith("r41b:fence:")}
    assert fenced == {"check", "sweep", "diagnose"}
    # every row checks something beyond its exit code: the line, an unchanged input, no secret, where output landed
    for c in cases:
        assert c.needle or c.secrets or c.expect or (c.code == 0 and c.env.get("GB_PIDFILE")), c.id
    assert all(c.secrets for c in cases if c.id.startswith("r41b:secrets:"))
    assert all(c.unchanged for c in cases if c.id.startswith("r41b:outputs:"))
