"""The figures the docs quote (thresholds, percentages, defaults) are read from the code, so a changed constant
fails here until the docs say the new value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS
from gluonbench.budgets import BUDGETS
from gluonbench.check.gate import RULER_DRIFT
from gluonbench.diagnosis.verdict import FREE_RUNQ_SHARE, THRESHOLDS, Thresholds
from gluonbench.report import DEFAULT_OUT, versions
from gluonbench.report.summary import NOISE_ONE_RUN
from gluonbench.tune.model import NEAR_BEST, OUTRUN_MARGIN, UNKNOWN_SPREAD_FLOOR

REPO = Path(__file__).resolve().parents[1]
T = Thresholds()


def pct(fraction: float) -> str:
    """``0.05`` -> ``5 %``, as the docs write a percentage."""
    return f"{round(fraction * 100, 1):g} %"


def text(path: str) -> str:
    """The file's text with line breaks and runs of spaces as one space (a phrase may wrap)."""
    return re.sub(r"\s+", " ", (REPO / path).read_text(encoding="utf-8"))


QUOTES: list[tuple[str, str]] = [
    # check: a baseline measured under other conditions (check/gate.py: RULER_DRIFT)
    ("docs/tutorials/ci.md", f"a ruler more than {RULER_DRIFT:g}x faster or slower than then"),
    # tune: within noise of the best (tune/model.py: within_noise_of, NEAR_BEST, UNKNOWN_SPREAD_FLOOR, OUTRUN_MARGIN)
    ("docs/tutorials/tune.md", f"with {PAIRED_MIN_ROUNDS} or more rounds of both, compared round by round"),
    ("docs/tutorials/tune.md", f"or the median ratio is within {pct(1 - NEAR_BEST)} of 1"),
    ("docs/tutorials/tune.md", f"the CIs overlap or the median is within {pct(1 - NEAR_BEST)} of the best's"),
    ("docs/tutorials/tune.md", f"unless it is under {pct(UNKNOWN_SPREAD_FLOOR)} of the best's rate"),
    ("docs/tutorials/tune.md", f"within noise or {pct(1 - NEAR_BEST)} of the best"),
    ("docs/tutorials/tune.md", f"clears the ceiling by {pct(OUTRUN_MARGIN)}"),
    ("docs/explanation/statistics.md", f"its median is within {pct(1 - NEAR_BEST)} of the best's"),
    # sweep: one run per count (report/summary.py)
    ("docs/explanation/statistics.md", f"counts within {pct(1 - NOISE_ONE_RUN)} of the best are called within noise"),
    # diagnose: the verdict's thresholds (diagnosis/verdict.py)
    (
        "docs/explanation/statistics.md",
        f"`input_gain` = {pct(T.input_gain)} of the step ({1 / (1 - T.input_gain):.3f}x",
    ),
    ("docs/tutorials/diagnose.md", f"`input_gain` = {pct(T.input_gain)}"),
    ("docs/tutorials/diagnose.md", f"≥ {pct(T.highly_input_bound)} highly"),
    ("docs/tutorials/diagnose.md", f"waited for a core under {pct(FREE_RUNQ_SHARE)} of the time"),
    ("docs/tutorials/diagnose.md", f"until every probe has at least {T.min_blocks} blocks"),
    ("docs/tutorials/diagnose.md", f"spread wider than ±{pct(T.rel_ci)} (`rel_ci`"),
    # the budgets' ranges (budgets.py)
    ("docs/reference/python.md", f"wall-clock budget (at least {BUDGETS['diagnose'].minimum:g} s)"),
    (
        "docs/tutorials/ci.md",
        f"`--gluonbench-budget` (seconds, {BUDGETS['check'].minimum:g}..{BUDGETS['check'].maximum:g}, default 60)",
    ),
    ("docs/tutorials/script.md", f"`--budget` (at least {BUDGETS['tune'].minimum:g} s, default 60)"),
    # the default output folder (report/__init__.py)
    ("README.md", f"Run folders go under `{DEFAULT_OUT}/`"),
    ("docs/reference/python.md", f"(default `{DEFAULT_OUT}/`)"),
]


@pytest.mark.parametrize("path, phrase", QUOTES, ids=[f"{p}:{q[:40]}" for p, q in QUOTES])
def test_the_docs_quote_the_constant_the_code_uses(path, phrase):
    assert phrase in text(path), f"{path} does not say {phrase!r}: the code's constant changed, or the docs did"


def test_diagnose_lists_every_threshold_default_the_code_has():
    """The thresholds sentence in diagnose.md gives every threshold's default as the code declares it."""
    doc = text("docs/tutorials/diagnose.md")
    for name in THRESHOLDS:
        value = getattr(T, name)
        assert f"`{name}={value:g}`" in doc or f"`--threshold {name}={value:g}`" in doc, (name, value)


def test_formats_md_gives_every_record_kind_and_its_current_version():
    doc = text("docs/reference/formats.md")
    for kind, version in versions.CURRENT.items():
        assert re.search(rf"\| {kind} \| [^|]+ \| {version} \|", doc), f"formats.md's table lacks {kind} {version}"
