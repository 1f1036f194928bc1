"""What ``tune`` prints (issue #22): equivalent settings named with the cheapest recommended, an evidence
table with headers, ranges that read as ranges, no share above 100 % of the ceiling without why."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import raising_budget

from gluonbench.tune.model import Setting


@pytest.fixture(scope="module")
def tuned():
    """A real tune: an emulated 150 ms step fed by cheap in-memory samples (0 and 1 workers do as well)."""
    import gluonbench
    from gluonbench._mx import gluon

    rng = np.random.default_rng(0)
    data = gluon.data.ArrayDataset(rng.random((512, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 512))
    return raising_budget(
        lambda b: gluonbench.tune(data, batch_size=64, ctx="cpu", budget_s=b, max_workers=2, emulate_step_ms=150),
        (10, 20, 40),
    )


def test_the_report_names_equivalent_settings_and_recommends_the_cheapest(tuned):
    r = tuned
    text = r.to_text()
    tied = r.within_noise
    assert r.recommended.label in tied
    cheapest = min(
        (Setting.from_dict(c["setting"]) for b in r.batch_sizes for c in b.confirmed if c["label"] in tied),
        key=Setting.cost,
    )
    assert r.recommended == cheapest, text
    if len(tied) > 1:
        assert f"equivalent:  {len(tied)} settings are within noise or 5 % of the best" in text, text
        assert f"the cheapest, {r.recommended.label}, is recommended" in text, text
    else:
        assert "equivalent:" not in text
    # the evidence has a header; phase and pipeline never run together ("ceiling + loader loader: ...")
    assert "  phase          pipeline measured" in text, text
    assert "ceiling + loader loader" not in text and "loader loader" not in text, text
    # ranges read as ranges: never "2..2 workers"
    assert not re.search(r"\b(\d+)\.\.\1 workers", text), text
    # a share shown as 100 % or less needs no explanation; above it always has one
    line = next(line for line in text.splitlines() if line.startswith("expected:"))
    assert ("above 100 %" in line) == (round(100 * r.of_ceiling) > 100), line


def test_a_share_above_the_ceiling_says_why(tuned):
    from gluonbench.tune.result import TuneResult

    data = tuned.to_dict()
    # the ceiling ran in the confirmation's rounds, beside the settings it is compared with
    assert data["same_rounds"]["ceiling_source"] == "confirmation", data["same_rounds"]
    assert any(e["label"] == "ceiling (same rounds)" and e["phase"] == "confirm" for e in data["evidence"])
    # the same result with one reused batch 0.82x the recommendation in those rounds (noise of a busy machine)
    data["same_rounds"]["ceiling_gain"] = [1 / 1.22, 0.7, 1.05]
    r = TuneResult.from_dict(data)
    assert math.isclose(r.of_ceiling, 1.22)
    line = next(line for line in r.to_text().splitlines() if line.startswith("expected:"))
    assert (
        "122 % of the model ceiling" in line
        and "in the same rounds" in line
        and "above 100 % within the noise" in line
        and "read it as at the ceiling" in line
    ), line
    data["same_rounds"]["ceiling_gain"] = [1.25, 1.1, 1.4]
    line = next(line for line in TuneResult.from_dict(data).to_text().splitlines() if line.startswith("expected:"))
    assert "80 % of the model ceiling" in line and "above 100 %" not in line, line


def test_the_text_markdown_and_page_state_the_same_ceiling_fed_and_sweep_statements(tuned):
    """One voice: the statements tune's text makes about the ceiling, the model being fed and what a sweep of the
    suggested config reads are derived once (the record) and the Markdown and the page's data say them as the
    text does."""
    import json

    from gluonbench.report.exporters import MarkdownTable
    from gluonbench.report.html import DATA_ID, html_text
    from gluonbench.report.tune import TuneReport
    from gluonbench.tune.result import TuneResult

    data = tuned.to_dict()
    data["same_rounds"]["ceiling_gain"] = [1.30, 1.21, 1.42]  # not fed: the input still limits training
    data["epoch"] = {"samples_per_s": 0.5 * data["samples_per_s"], "first_batch_s": 0.4, "batches": 8}
    r = TuneResult.from_dict(data)
    stored = r.to_dict()
    assert stored["fed_text"].startswith("no: ") and stored["sweep_text"] and stored["ceiling_text"]
    text = r.to_text()
    report = TuneReport({"kind": "tune", "tune": stored, "command": "gluonbench tune"})
    md = report.document(MarkdownTable())
    page = html_text(report)
    embedded = json.loads(
        re.search(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page, re.S).group(1)
    )
    shown = embedded["data"]
    for key in ("fed_text", "ceiling_text", "sweep_text"):
        assert stored[key] in text and stored[key] in md and shown[key] == stored[key], key
    # why the search stopped, as the text says it (an outrun by the loader alone beside "not fed" says how both hold)
    for b in shown["batch_sizes"]:
        assert b["stop_text"] and b["stop_text"] in text and b["stop_text"] in md
    assert TuneResult.from_dict(stored).to_text() == text, "a stored record reads back to the same report"


def test_the_budget_warning_names_the_python_argument_from_python(tuned):
    from gluonbench.names import use_flags
    from gluonbench.tune.result import TuneResult

    data = tuned.to_dict()
    data["skipped"] = [{"what": "loader alone at 2 workers", "reason": "budget: the model asks for it"}]
    r = TuneResult.from_dict(data)
    assert "raise budget_s (e.g. budget_s=20)" in r.to_text()
    use_flags()
    try:
        assert "raise --budget (e.g. --budget 20)" in r.to_text()
    finally:
        use_flags(False)


def test_within_noise_compares_round_by_round():
    from gluonbench.tune.model import Confirmed, choose

    load = [1.0, 1.6, 1.1, 2.0, 1.3, 1.0, 1.8, 1.2]  # background load that moves between rounds
    best_s = {r: 0.002 * f for r, f in enumerate(load)}  # seconds per sample per round
    # 8 % slower in every round: the load hides it in the two CIs, the paired ratio does not
    slower = {r: s / 0.92 for r, s in best_s.items()}
    best = Confirmed(Setting(2), 500, (280, 510), best_s)
    c = Confirmed(Setting(0), 460, (255, 495), slower)
    winner, tied = choose([best, c])
    assert winner.setting == Setting(2) and [t.setting for t in tied] == [Setting(2)]
    # 3 % slower in every round: beyond the noise, but under the 5 % line: not worth the workers
    close = {r: s / 0.97 for r, s in best_s.items()}
    c = Confirmed(Setting(0), 485, (270, 500), close)
    winner, tied = choose([best, c])
    assert winner.setting == Setting(0) and {t.setting for t in tied} == {Setting(0), Setting(2)}
    # as fast, round by round within noise either way: the cheaper one wins
    same = {r: s * (1.04 if r % 2 else 0.96) for r, s in best_s.items()}
    c = Confirmed(Setting(0), 495, (270, 505), same)
    winner, tied = choose([best, c])
    assert winner.setting == Setting(0) and {t.setting for t in tied} == {Setting(0), Setting(2)}


def test_a_figure_of_one_block_is_not_called_slower():
    from gluonbench.tune.model import Confirmed, choose

    best = Confirmed(Setting(1), 349, (242, 370), {r: 1 / 349 for r in range(8)})
    one_block = Confirmed(Setting(0), 216, (216, 216), {0: 1 / 216})  # the CI of one block has no width
    winner, tied = choose([best, one_block])
    assert winner.setting == Setting(0) and len(tied) == 2
