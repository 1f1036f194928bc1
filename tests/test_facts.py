"""One voice: every verdict class and each contradiction a real pipeline showed, built from constructed probe
records (no training), states the same facts in the text, the JSON and the HTML report (diagnosis/facts.py)."""

import html
import json
import math
import re

import pytest

from gluonbench.diagnosis.facts import facts, too_wide
from gluonbench.diagnosis.measure import ProbeResult
from gluonbench.diagnosis.recommend import Setting
from gluonbench.diagnosis.report import DiagnosisReport, to_text
from gluonbench.diagnosis.run import Diagnosis, reassess
from gluonbench.diagnosis.verdict import READ_WORK, Thresholds
from gluonbench.report.html import DATA_ID, html_text
from gluonbench.report.store import json_safe

BATCH = 64
NAMES = ("full", "no_preprocess", "no_read", "cached_batch", "loader_only")
LOAD = (1.0, 1.3, 1.1, 1.6, 1.2, 1.0, 1.4, 1.1)
"""round-to-round load that slows every probe of a round alike (cancels in the pairing)"""
JITTER = (0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.2)
"""each probe's own deviation per round, in units of the case's noise"""

# ms a step of full, no_preprocess, no_read, cached_batch, loader_only; noise; ctx; the loop's wait share
CASES = {
    "preprocessing": ((40.0, 27.0, 26.8, 26.6, 12.0), 0.005, "cpu(0)", 0.30),
    "disk_io": ((40.0, 39.8, 28.0, 27.0, 30.0), 0.005, "cpu(0)", 0.40),
    "gpu_io on a GPU": ((27.6, 27.5, 27.45, 27.4, 11.0), 0.002, "gpu(0)", 0.05),
    # the loop "waited" 98 % of the step where the loader alone takes 8 % of it: MXNet's one engine queue
    "model compute (CPU), engine-queue wait": ((27.6, 27.5, 27.45, 27.4, 2.2), 0.002, "cpu(0)", 0.98),
    "inconclusive (noise)": ((30.0, 29.0, 28.5, 28.0, 11.0), 0.25, "cpu(0)", 0.10),
    "at the line": ((30.0, 28.9, 28.8, 28.6, 11.0), 0.003, "cpu(0)", 0.10),
    "short": ((40.0, 27.0, 26.8, 26.6, 12.0), 0.005, "cpu(0)", 0.30),
    # removing the loader slowed training (0.76x): said in words, never as a speed-up
    "a removal that slows training": ((40.0, 27.0, 20.5, 27.0, 12.0), 0.005, "cpu(0)", 0.30),
    # an ImageFolderDataset: the decode runs inside dataset[i] (no transform given), its evidence CPU work
    "decode inside dataset[i]": ((40.0, 39.9, 12.0, 11.0, 30.0), 0.005, "cpu(0)", 0.70),
    # an in-memory array data set: dataset[i] is indexing, CPU work that costs the step nothing
    "in-memory indexing, loader-bound": ((30.0, 29.9, 29.8, 20.0, 25.0), 0.005, "cpu(0)", 0.30),
}
EVIDENCE = {
    # per sample (us): wall and user CPU of no_preprocess and no_read: dataset[i] spends its time on the CPU
    "decode inside dataset[i]": {"no_preprocess": (623.0, 600.0), "no_read": (187.0, 180.0)},
    "in-memory indexing, loader-bound": {"no_preprocess": (467.0, 450.0), "no_read": (465.0, 448.2)},
}
EXPECTED = {
    "preprocessing": "preprocessing",
    "disk_io": "disk_io",
    "gpu_io on a GPU": "gpu_io",
    "model compute (CPU), engine-queue wait": "gpu_io",
    "inconclusive (noise)": "inconclusive",
    "at the line": "inconclusive",
    "short": "inconclusive",
    "a removal that slows training": "preprocessing",
    "decode inside dataset[i]": "preprocessing",
    "in-memory indexing, loader-bound": "disk_io",
}


def _evidence(wall_us: float, user_us: float) -> dict:
    """A probe's evidence per sample (monitor.tree_usage's fields): no kernel time, no storage, no wait."""
    return {
        "samples": 512,
        "wall_s": wall_us / 1e6,
        "cpu_s": user_us / 1e6,
        "user_s": user_us / 1e6,
        "system_s": 0.0,
        "runq_s": 0.0,
        "read_bytes": 0.0,
        "blkio_s": None,
        "processes": 1,
    }


def _probe(name: str, ms: float, noise: float, k: int, blocks: int) -> ProbeResult:
    s = ms / 1000 / BATCH
    rounds = [s * load * (1 + noise * JITTER[(i + k) % len(JITTER)]) for i, load in enumerate(LOAD)]
    return ProbeResult(
        name=name,
        removes=name,
        batch_size=BATCH,
        blocks=rounds[:blocks],
        per_round=list(rounds),
        steps=8 * blocks,
        samples=8 * blocks * BATCH,
        rounds=8,
        block_steps=8,
        s_per_sample=s,
        s_per_sample_ci=(s * (1 - 2 * noise), s * (1 + 2 * noise)),
        split={},
        system={"per_core_pct": [96.0, 94.0], "cpu_util_pct": 90.0, "iowait_pct": 0.1, "read_bytes_per_s": 0.0},
    )


def diagnosis(case: str, roofline: bool = True) -> Diagnosis:
    """The diagnosis of a constructed case, read by the current rule (``reassess``: nothing is measured)."""
    times, noise, ctx, wait = CASES[case]
    blocks = 3 if case == "short" else 8
    probes = {n: _probe(n, ms, noise, k, blocks) for k, (n, ms) in enumerate(zip(NAMES, times, strict=True))}
    for name, (wall, user) in EVIDENCE.get(case, {}).items():
        probes[name].evidence = _evidence(wall, user)
    probes["full"].split = {"wait_s": wait, "copy_s": 0.0, "compute_s": 1 - wait, "total_s": 1.0, "wait_frac": wait}
    probes["device_batch"] = ProbeResult("device_batch", "copy", BATCH, same_as="cached_batch")
    setting = Setting(batch_size=BATCH, num_workers=0, cores=2, ctx=ctx)
    d = Diagnosis(
        verdict="inconclusive",
        shares={},
        probes=probes,
        recommendations=[],
        evidence=[],
        setting=setting.to_dict(),
        thresholds=Thresholds().to_dict(),
        rounds=8,
        elapsed_s=10.0,
        stop_reason="budget",
    )
    d = reassess(d)
    if roofline:
        d.analysis["roofline"] = [
            {"stage": "decode", "fraction": None, "bound": "none", "text": "loader: no decode ceiling applies"},
            {"stage": "read", "fraction": 0.12, "bound": "software", "text": "read 12 % of the disk's ceiling"},
            {"stage": "verdict", "fraction": None, "bound": "none", "text": "the verdict ..."},
        ]
    return d


def _outputs(d: Diagnosis) -> tuple[str, dict, str, dict]:
    text = to_text(d)
    stored = d.to_dict()
    page = html_text(DiagnosisReport({"kind": "diagnosis", "diagnosis": stored, "probe_order": list(d.probes)}))
    embedded = re.search(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page, re.S)
    assert embedded is not None
    return text, stored["facts"], page, json.loads(embedded.group(1))["data"]["diagnosis"]["facts"]


def _stated(f) -> list[str]:
    """Every fact as the reports print it."""
    out = [f.verdict_label, f.gain_text, f.input_bound, f.shares_text]
    out += [x for x in (f.wait_text, f.wait_note, f.binding_text) if x]
    out += [p.label for p in f.premises if p.role in ("verdict", "secondary")]
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_text_json_and_html_state_the_same_facts(case):
    d = diagnosis(case)
    f = facts(d)
    assert f.verdict == d.verdict == EXPECTED[case]
    assert f.contradictions == []
    text, stored_facts, page, embedded = _outputs(d)
    assert stored_facts == json_safe(f.to_dict()) == embedded
    static = page.split("<noscript>")[0]  # the facts the page shows without its script, not the text fallback
    for fact in _stated(f):
        assert fact in text, (case, fact)
        assert html.escape(fact) in static, (case, fact)
    # a stored diagnosis read back states the same facts
    assert facts(DiagnosisReport({"diagnosis": d.to_dict(), "probe_order": list(d.probes)}).diagnosis) == f


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][2].startswith("cpu")])
def test_a_cpu_context_names_the_model_compute_never_gpu_io(case):
    d = diagnosis(case)
    text, stored_facts, page, _ = _outputs(d)
    f = facts(d)
    assert f.share_labels["gpu_io"] == "model compute (CPU)"
    assert "GPU I/O" not in text and not re.search(r"gpu_io \d+ %", text)
    assert "GPU I/O" not in page.split("<noscript>")[0]
    if d.verdict == "gpu_io":  # the JSON keeps the seed's class
        assert (
            d.to_dict()["verdict"] == stored_facts["verdict"] == "gpu_io" and f.verdict_label == "model compute (CPU)"
        )
        assert "**Verdict: model compute (CPU)** (`gpu_io`)" in text


def test_a_wait_the_engine_queue_makes_meaningless_is_not_printed_as_a_wait():
    d = diagnosis("model compute (CPU), engine-queue wait")
    f = facts(d)
    assert f.wait is None and f.wait_text is None and "engine queue" in f.wait_note
    text = to_text(d)
    assert "waited for the next batch" not in text and "waits for the next batch" not in text
    assert text.count("is not shown as a wait") == 1 and "takes 8 % of the step" in text
    assert "input wait" not in text.split("\n\n")[1].splitlines()[0]  # the probe table's column says what it is
    # the same wait on a GPU context means what it says
    gpu = diagnosis("gpu_io on a GPU")
    assert facts(gpu).wait_text == "the loop itself waited for the next batch 5 % of the step"


def test_a_removal_that_slows_training_is_said_in_words():
    d = diagnosis("a removal that slows training")
    assert d.speedups["loader"] < 1
    text = to_text(d)
    loader = facts(d).removals["loader"]
    assert loader.startswith("no speed-up (0.76x") and f"loader {loader}" in text
    assert not re.search(r"(?<!no speed-up \()\b0\.7\dx", text)


def test_an_interval_too_wide_to_be_a_result_is_called_so():
    assert too_wide(1277, 23026) and not too_wide(1277, 1500) and not too_wide(math.nan, 2.0)
    d = diagnosis("inconclusive (noise)")
    d.speedup_ci["input"] = [0.6, 3.0]
    f = facts(d)
    assert f.gain_too_wide and "too wide to be a result" in f.gain_text and f.gain_text in to_text(d)


def test_work_inside_dataset_is_counted_and_worded_as_preprocessing_in_every_figure():
    d = diagnosis("decode inside dataset[i]")
    assert d.analysis["read"]["kind"] == "cpu_work"
    # removing preprocessing removes the decode inside dataset[i] too: full / no_read, not full / no_preprocess
    assert d.speedups["preprocessing"] > 3 and 1 < d.speedups["disk_io"] < 1.2
    text = to_text(d)
    assert "removing preprocessing (the work inside dataset[i] included) gains the most" in text
    assert "removing preprocessing (the work inside dataset[i] included) 3." in text and ", then the loader 1." in text
    findings = text.split("Recommendations")[0]
    assert "1.00x [1.00, 1.00]" not in findings and "then reading and the loader" not in findings


def test_a_read_that_costs_the_step_little_is_not_named_by_its_evidence():
    d = diagnosis("in-memory indexing, loader-bound")
    read = d.analysis["read"]
    assert read["kind"] == "none" and read["evidence_kind"] == "cpu_work" and "too little" in read["why"]
    text = to_text(d)
    assert READ_WORK not in text and "transform_first" not in text
    assert "removing reading and the loader gains the most" in text


def test_facts_flag_a_verdict_whose_removal_gains_nothing():
    d = diagnosis("preprocessing")
    d.speedups["preprocessing"] = 1.0
    assert facts(d).contradictions == ["the verdict preprocessing beside removing it gaining nothing (1.00x)"]


def test_facts_flag_a_recommendation_premised_on_another_stage():
    d = diagnosis("preprocessing")
    d.advice = [dict(d.advice[0], stage="gpu_io")]
    assert facts(d).contradictions == ["a recommendation about gpu_io as the verdict, which is preprocessing"]


def test_no_roofline_no_binding_stage():
    f = facts(diagnosis("disk_io", roofline=False))
    assert f.binding_stage is None and f.binding_text is None
    assert facts(diagnosis("disk_io")).binding_stage == "read"


# -- a sweep's best count, its seed lines ----------------------------------------------------------------


def _run(workers: int, rate: float, blocks: list[float] | None, accuracy: float = 0.9, repeat: int = 0) -> dict:
    steady = {"samples_per_s": rate, "wait_frac": 0.2}
    if blocks is not None:
        steady["block_samples_per_s"] = blocks
    return {
        "kind": "run",
        "spec": {"workers": workers, "repeat": repeat},
        "status": "ok",
        "train_s": 64000 / rate,
        "eval_s": 1.0,
        "accuracy": accuracy,
        "samples_per_s": rate,
        "steady": steady,
        "system": {"peak_mem_bytes": 2**28, "cpu_util_pct": 80.0},
        "env": {"cores_logical": 2},
    }


def _spread(rate: float, half: float) -> list[float]:
    return [rate * (1 + half * x) for x in (-1.0, -0.5, 0.0, 0.5, 1.0, 0.2)]


def test_one_run_each_names_a_best_count_only_beyond_the_spread_within_the_runs():
    from gluonbench.report.summary import summarise
    from gluonbench.report.sweep import to_markdown

    # a loaded machine: 2 workers ran 2.03x the 0-worker rate, but each run's blocks spread more than that
    s = summarise([_run(0, 1000, _spread(1000, 0.6)), _run(2, 2030, _spread(2030, 0.6))])
    md = to_markdown(s)
    assert s.best_workers == 2 and not s.best_named
    assert "**Best worker count: within noise: rerun with --repeat 3 (2 workers ran 103 % faster than 0" in md
    assert "**best**" not in md
    # the same gap from steady runs: named
    s = summarise([_run(0, 1000, _spread(1000, 0.05)), _run(2, 2030, _spread(2030, 0.05))])
    assert s.best_named and "**Best worker count: 2** (2030 samples/s, 2.03x the 0 workers throughput)" in to_markdown(
        s
    )
    # runs that recorded no blocks: the spread is unknown, no count is named
    s = summarise([_run(0, 1000, None), _run(2, 2030, None)])
    assert not s.best_named and "the spread within those runs was not recorded" in s.best_note


def test_one_run_each_a_count_within_noise_is_exactly_one_that_keeps_the_best_unnamed():
    """A named best never has a count within noise of it (Markdown, plot, JSON), and an unnamed one has the
    next fastest: the band and the list follow the rule that names the best."""
    from gluonbench.report.summary import summarise
    from gluonbench.report.sweep import to_markdown

    # 10 % ahead of the next with blocks spread +-4 % each: named, and 1 worker is not within noise of it
    named = summarise(
        [_run(0, 600, _spread(600, 0.04)), _run(1, 1000, _spread(1000, 0.04)), _run(2, 1100, _spread(1100, 0.04))]
    )
    assert named.best_named and named.within_noise() == [] and named.to_dict()["within_noise"] == []
    assert "within noise" not in to_markdown(named).split("**Best worker count")[1].split("\n")[0]
    # 3 % ahead: not named, and the next fastest is within noise, said with "worker", not "workers"
    tied = summarise(
        [_run(0, 600, _spread(600, 0.04)), _run(1, 1000, _spread(1000, 0.04)), _run(2, 1030, _spread(1030, 0.04))]
    )
    assert not tied.best_named and tied.within_noise() == [1]
    assert "Also within noise of it: 1 worker (" in to_markdown(tied)


def test_a_sweep_on_a_cpu_context_says_what_its_input_wait_holds():
    """On a CPU context the loop's time blocked in next(loader) includes the previous step's compute (one engine
    queue): the sweep's table says so in Markdown and on the page; on a GPU context it is the wait it says."""
    from pathlib import Path

    from gluonbench.report.summary import summarise
    from gluonbench.report.sweep import CPU_WAIT_NOTE, to_markdown

    runs = [_run(0, 1000, _spread(1000, 0.05)), _run(2, 2030, _spread(2030, 0.05))]
    cpu, gpu = summarise(runs, {"ctx": "cpu", "batch_size": 64}), summarise(runs, {"ctx": "gpu:0", "batch_size": 64})
    assert CPU_WAIT_NOTE in to_markdown(cpu) and CPU_WAIT_NOTE not in to_markdown(gpu)
    # the page renders its table in its script: the same note, in the same words, for a context that is not a GPU
    js = (Path(__file__).parents[1] / "gluonbench" / "report" / "templates" / "report.js").read_text()
    assert "that includes the previous step's compute, which MXNet's one engine queue runs beside the loader's" in js
    assert "that includes the previous step's compute, which MXNet's one engine queue runs beside the loader's" in (
        CPU_WAIT_NOTE
    )


# -- check: no negative stage time ---------------------------------------------------------------------------


def test_a_stage_time_below_zero_is_shown_as_zero_with_the_noise_named():
    from types import SimpleNamespace

    from gluonbench.check.gate import Row
    from gluonbench.check.render import to_markdown
    from gluonbench.check.render import to_text as check_text

    rows = [
        Row("total (full pipeline)", "x ruler (wall)", 1.0, 1.01, 1.01, [0.99, 1.03], "ok"),
        Row("preprocessing", "x ruler (wall)", 0.2, -0.155, -0.775, [-2.0, 1.0], "faster"),
        Row("loader", "x ruler (wall)", -0.340, 0.1, -0.29, [-1.0, 1.0], "unclear"),
    ]
    result = SimpleNamespace(
        rows=rows,
        now=SimpleNamespace(identity="p", shown="p", elapsed_s=1.0),
        baseline=SimpleNamespace(started_utc="t"),
        baseline_path="b.json",
        reference="ruler",
        outcome="pass",
        message="no slowdown",
        max_slowdown=0.05,
        basis="wall",
        basis_reason="narrower",
        notes=[],
    )
    for text in (check_text(result), to_markdown(result)):
        table = [
            line for line in text.splitlines() if line.startswith(("preprocessing", "loader", "| preproc", "| loader"))
        ]
        assert len(table) == 2 and not any("-0." in line or "−" in line for line in table), table
        assert all("0.000*" in line and "n/a" in line for line in table)
        assert (
            text.count("came out below 0") == 1
            and "preprocessing now -0.155" in text
            and "loader baseline -0.340" in text
        )


def test_a_run_records_the_samples_per_second_of_its_blocks():
    from gluonbench.engine.loop import StepTimes

    # a slow first step (left out), then 12 steps: 6 at 10 ms and 6 at 20 ms a batch of 64
    steps = [0.5] + [0.01] * 6 + [0.02] * 6
    times = StepTimes([0.0] * 13, [0.0] * 13, steps, [64] * 13)
    assert [round(r) for r in times.block_rates()] == [6400, 6400, 6400, 3200, 3200, 3200]
    assert StepTimes([0.0] * 5, [0.0] * 5, [0.01] * 5, [64] * 5).block_rates() == []  # too few steps for blocks


def test_a_sweeps_bottleneck_table_names_the_cpu_model_compute():
    from gluonbench.report.summary import summarise
    from gluonbench.report.sweep import to_markdown

    run = _run(0, 1000, None)
    run["extra"] = {
        "verdict": "gpu_io",
        "shares": {"preprocessing": 0.1, "disk_io": 0.29, "gpu_io": 0.61},
        "input_bound": "not",
        "diagnosis": {"setting": {"ctx": "cpu(0)"}},
    }
    md = to_markdown(summarise([run], {"ctx": "auto"}))
    row = next(line for line in md.splitlines() if line.startswith("| 0 |") and "%" in line and "compute" in line)
    assert "model compute (CPU) 61 %" in row and "| model compute (CPU) |" in row and "gpu_io" not in row


def test_a_runs_own_line_says_one_worker_and_leaves_out_a_missing_accuracy():
    from gluonbench.sweeprun.run import RunResult, RunSpec, seed_line

    r = RunResult(spec=RunSpec(workers=1).to_dict(), status="ok")
    r.train_s, r.eval_s, r.accuracy = 2.0, 0.0, math.nan
    assert seed_line(r) == "1 worker: train duration 2.0, eval duration 0.0"
    r.accuracy = 0.98
    assert seed_line(r).endswith(", test accuracy 0.98")


def test_at_the_line_advice_never_denies_a_gain_its_own_interval_shows():
    """A removal whose interval lies above 1 is not 'no gain beyond the noise', even when its time is not the larger."""
    from types import SimpleNamespace

    from gluonbench.diagnosis.recommend import Setting, _at_line

    def at_line(pre_ci: list[float]) -> str:
        v = SimpleNamespace(
            speedups={"input": 1.685, "preprocessing": 1.13, "disk_io": 1.2},
            speedup_ci={"input": [1.004, 2.684], "preprocessing": pre_ci, "disk_io": [0.9, 1.6]},
            stage_s={"preprocessing": 0.001, "disk_io": 0.0012},
            established={"preprocessing": False, "disk_io": False},
        )
        return _at_line(v, Setting(batch_size=64, num_workers=1, cores=2, ctx="cpu"))[0].text

    text = at_line([1.01, 1.43])
    assert "no input stage alone gains beyond the noise" not in text and "neither input stage clearly" in text
    assert "removing preprocessing: 1.13x [1.01, 1.43]" in text
    assert "no input stage alone gains beyond the noise" in at_line([0.95, 1.43])


def test_tune_never_prints_an_interval_too_wide_to_be_a_result_as_one():
    from gluonbench.report import tune as tune_report
    from gluonbench.tune import result as tune_result

    for rate in (tune_result._rate, tune_report._rate):
        assert rate(5000.0, [1277.0, 23026.0]).endswith("[1277, 23026] (too wide to be a result)")
        assert rate(5000.0, [4800.0, 5200.0]) == "5000 samples/s [4800, 5200]"
