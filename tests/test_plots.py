"""Plots that do not oversell (issue #22): sweep.png from the committed sweeps' records, the profile
report's histogram, and rules that pass without alarming advice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gluonbench.profiler.report import histogram_figure
from gluonbench.report.sweep import figure
from gluonbench.rundir import load

RESULTS = Path(__file__).resolve().parent.parent / "results"
ONE_RUN = RESULTS / "20261122T161015Z-sweep-mnist-cpu-1epoch"
REPEATED = RESULTS / "20261122T163950Z-sweep-mnist-cpu-1epoch-repeat3"


def _texts(fig) -> str:
    legends = [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    texts = [t for ax in fig.axes for t in ax.texts] + legends
    return " ".join(t.get_text() for t in texts) + " " + fig._suptitle.get_text()


@pytest.mark.parametrize("folder", [ONE_RUN, REPEATED], ids=["one-run", "repeat3"])
def test_sweep_png_starts_at_zero_marks_the_best_and_the_cores(folder):
    import matplotlib.pyplot as plt

    summary = load(folder).summary
    fig = figure(summary)
    try:
        ax1, ax2 = fig.axes
        assert ax1.get_ylim()[0] == 0 and ax2.get_ylim()[0] == 0
        labels = [t.get_text() for t in ax1.get_legend().get_texts()]
        assert any(lbl.startswith("within noise of the best") for lbl in labels), labels
        star = "best" if summary.best_named else "fastest, within noise"  # a best count only beyond the noise
        assert any(lbl.startswith(star) for lbl in labels), labels
        cores = summary.env.get("cores_usable") or summary.env.get("cores_logical")
        assert any(f"{cores} " in lbl and "cores" in lbl for lbl in labels), labels
        vlines = [ln for ln in ax1.get_lines() if list(ln.get_xdata()) == [cores, cores]]
        assert vlines, "no line at the core count"
        # the band is the report's own rule: every count the markdown calls within noise lies in it
        floor, _ = summary.noise_floor()
        (band,) = ax1.patches
        assert min(y for _, y in band.get_xy()) == pytest.approx(floor)
        text = _texts(fig)
        best = summary.best_workers
        assert f"{star}: {best}" in text
        tied = summary.within_noise()
        if tied:
            assert "within noise: " + ", ".join(map(str, tied)) in text
        if summary.repeats > 1:
            assert f"min-max over {summary.repeats} repeats" in text
        else:
            assert "one run per worker count" in text and "over repeats" not in text
    finally:
        plt.close(fig)


def test_the_markdown_and_the_plot_name_the_same_counts_within_noise():
    summary = load(ONE_RUN).summary
    md = (ONE_RUN / "summary.md").read_text(encoding="utf-8")
    floor, _ = summary.noise_floor()
    tied = summary.within_noise()
    assert tied and all(r.samples_per_s >= floor for r in summary.rows if r.workers in tied)
    assert f"Also within noise of it: {', '.join(map(str, tied))} workers (10 % or less below it, with one run" in md
    assert summary.to_dict()["within_noise"] == tied  # what the HTML page names


def test_the_step_histogram_is_not_stretched_by_one_slow_first_step():
    rng = np.random.default_rng(0)
    steps = np.concatenate([[2500.0], rng.normal(80, 10, 300)])  # one slow first step, then ~80 ms
    fig = histogram_figure("Step duration", steps, limit=float(steps[1:].mean() + 3 * steps[1:].std()))
    (ax,) = fig.axes
    assert ax.get_xlim()[1] < 200, ax.get_xlim()  # the axis covers the bulk, not 2500 ms
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "last bar: 1 step(s)" in texts and "max 2500" in texts
    assert sum(p.get_height() for p in ax.patches) == len(steps)  # every step counted, the slow one in the last bar


@pytest.mark.parametrize("folder", sorted(RESULTS.glob("*-profile-*")), ids=lambda p: p.name.split("-", 2)[-1])
def test_a_rule_that_passes_gives_no_advice(folder):
    from gluonbench.profiler.data import load as load_profile
    from gluonbench.profiler.rules import RULES, run_rules

    reports = run_rules(load_profile(folder / "profiler-output"))
    passing = [r for r in reports if r.applicable and not r.triggered]
    assert passing
    for r in passing:
        advice = RULES[r.rule].recommendation
        # the generic advice ("Initialisation takes long: ...") is for a rule that fired
        assert r.recommendation != advice or r.rule == "OverallSystemUsage", r
    fired = [r for r in reports if r.triggered]
    assert all(r.recommendation for r in fired)
