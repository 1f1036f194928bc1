"""Each verdict class, fed as synthetic probe records (no training): the verdict, the input-bound label,
the advice and the printed diagnosis come from one reading and never contradict each other."""

import math
from dataclasses import replace

import pytest

from gluonbench.diagnosis.recommend import Setting, advise, evidence, render
from gluonbench.diagnosis.report import to_text, view
from gluonbench.diagnosis.verdict import ProbeTiming, Thresholds, attribute

BATCH = 64
# ms a step of full, no_preprocess, no_read, cached_batch, loader_only; the class they must give
CLASSES = {
    "preprocessing": (40.0, 27.0, 26.8, 26.6, 12.0),
    "disk_io": (40.0, 39.8, 28.0, 27.0, 30.0),
    "gpu_io": (27.6, 27.4, 27.3, 27.2, 11.0),
    "inconclusive": (30.0, 29.0, 28.5, 28.0, 11.0),
    # a gain beyond the noise of none whose CI crosses the 5 % line: inconclusive, at the line
    "at_line": (30.0, 28.9, 28.8, 28.6, 11.0),
}
REL = {"inconclusive": 0.30, "at_line": 0.01}
# a loader-heavy pipeline where the loader alone and the model alone cost the same and compete
CONTENDED = (7.8, 7.8, 7.0, 4.7, 4.7)


def _probe(name: str, ms: float, rel: float, rounds: int = 8) -> dict:
    s = ms / 1000 / BATCH
    system = {
        "per_core_pct": [97.0, 95.0],
        "cpu_util_pct": 92.0,
        "iowait_pct": 0.1,
        "read_bytes_per_s": 0.0,
        "peak_mem_main_bytes": 300 * 2**20,
        "peak_mem_workers_bytes": 0,
        "peak_processes": 1,
    }
    return {
        "name": name,
        "removes": name,
        "s_per_sample": s,
        "s_per_sample_ci": [s * (1 - rel), s * (1 + rel)],
        "step_s": s * BATCH,
        "samples_per_s": 1 / s,
        "samples_per_s_ci": [1 / (s * (1 + rel)), 1 / (s * (1 - rel))],
        "rel_half_width": rel,
        # every round the same ratio between probes, with round-to-round load that cancels in the pairing
        "per_round": [s * f for f in (1.0, 1.3, 1.1, 1.6, 1.2, 1.0, 1.4, 1.1)][:rounds],
        "split": {"wait_s": 0.4, "copy_s": 0.0, "compute_s": 0.6, "total_s": 1.0, "wait_frac": 0.4},
        "system": system,
        "same_as": None,
    }


def _case(times: tuple[float, ...], rel: float, wait: float = 0.4, ctx: str = "cpu", noisy: bool = False):
    from gluonbench.diagnosis.verdict import probe_gains

    names = ("full", "no_preprocess", "no_read", "cached_batch", "loader_only")
    probes = {n: _probe(n, ms, rel) for n, ms in zip(names, times, strict=True)}
    if noisy:  # no per-round figures: each probe's own (wide) CI counts
        for p in probes.values():
            p["per_round"] = []
    probes["device_batch"] = {**probes["cached_batch"], "name": "device_batch", "same_as": "cached_batch"}
    chain = {n: ProbeTiming(p["s_per_sample"], *p["s_per_sample_ci"]) for n, p in probes.items()}
    chain["device_batch"] = None
    v = attribute(chain, wait_frac=wait, gains=probe_gains(probes), thresholds=Thresholds())
    return v, probes


def _setting(ctx: str, workers: int = 0) -> Setting:
    return Setting(batch_size=BATCH, num_workers=workers, cores=2, ctx=ctx)


def _diagnosis_text(v, probes, setting) -> str:
    recs = advise(v, probes, setting)
    record = {
        **{k: getattr(v, k) for k in ("verdict", "shares", "secondary", "input_bound", "wait_frac", "notes")},
        "share_ci": v.share_ci,
        "stages": v.substages,
        "stage_ci": v.substage_ci,
        "speedups": v.speedups,
        "speedup_ci": v.speedup_ci,
        "input_saved": v.input_saved,
        "input_saved_ci": v.input_saved_ci,
        "overlap": v.overlap,
        "analysis": v.to_dict(),
        "probes": probes,
        "setting": setting.to_dict(),
        "recommendations": render(recs),
        "evidence": evidence(probes, setting),
        "rounds": 8,
        "elapsed_s": 10.0,
        "stop_reason": "budget",
    }
    return to_text(view(record, list(probes)))


@pytest.mark.parametrize("ctx", ["cpu", "gpu:0"])
@pytest.mark.parametrize("expected", list(CLASSES))
def test_each_verdict_class_gets_advice_that_agrees_with_it(expected, ctx):
    v, probes = _case(CLASSES[expected], REL.get(expected, 0.005), noisy=expected in REL)
    assert v.verdict == ("inconclusive" if expected == "at_line" else expected)
    assert (v.reuse == "at_line") == (expected == "at_line"), v.speedup_ci
    setting = _setting(ctx)
    recs = advise(v, probes, setting)
    texts = render(recs)
    joined = " ".join(texts)
    stages = {r.stage for r in recs if r.kind == "fix"}
    if expected == "gpu_io":
        assert v.input_bound == "not"
        assert "keeps up" in texts[0] and "gains nothing" in texts[0]
        # no input fix: the input pipeline keeps up
        assert stages <= {"gpu_io"}, stages
        assert not any(r.knob in ("num_workers", "transform", "thread_pool", "prefetch") for r in recs)
    elif expected == "inconclusive":
        assert v.input_bound == "unknown" and [r.stage for r in recs if r.kind == "fix"] == ["inconclusive"]
        assert "keeps up" not in joined and "At the line" not in joined
    elif expected == "at_line":
        # neither "keeps up" nor an input fix: how much is at stake, which stage, and how to settle it
        assert v.input_bound == "unknown" and [r.stage for r in recs if r.kind == "fix"] == ["inconclusive"]
        lo, hi = v.speedup_ci["input"]
        assert 1.0 < lo < 1 / (1 - Thresholds().input_gain) < hi
        assert texts[0].startswith("At the line: with a perfect input pipeline") and "preprocessing" in texts[0]
        assert f"at most {1 - 1 / hi:.0%} of the step" in texts[0]
        assert "keeps up" not in joined and "num_workers" not in joined
    else:
        assert v.input_bound in ("highly", "moderately")
        assert v.input_saved >= Thresholds().input_gain
        assert "keeps up" not in joined and "peak" not in joined
        assert texts[0].startswith("With a perfect input pipeline (one batch reused) training would be")
        assert f"{v.speedups['input']:.2f}x [" in texts[0]
        assert "gpu_io" not in stages
    if ctx == "cpu":
        assert "gpu" not in joined.lower(), [t for t in texts if "gpu" in t.lower()]

    doc = _diagnosis_text(v, probes, setting)
    # the printed label and verdict are the same reading
    assert f"): {v.input_bound}" in doc
    if expected == "gpu_io":
        assert ("model compute (CPU)" if ctx == "cpu" else "GPU I/O") in doc
        assert "highly" not in doc and "moderately" not in doc
    if expected in ("preprocessing", "disk_io"):
        assert "training would be" in doc and "keeps up" not in doc
    if expected == "at_line":
        assert "inconclusive, at the line" in doc and "keeps up" not in doc


def test_too_few_blocks_is_said_as_such_not_as_noise():
    # a clear 1.5x gain from too few blocks (a short budget, a stall): no verdict, and the words say why; "the
    # noise hides whether reusing one batch gains anything" beside [1.4, 1.6] would contradict its own interval
    from gluonbench.diagnosis.verdict import probe_gains

    _, probes = _case(CLASSES["preprocessing"], 0.005)
    chain = {n: ProbeTiming(p["s_per_sample"], *p["s_per_sample_ci"]) for n, p in probes.items()}
    chain["device_batch"] = None
    v = attribute(chain, wait_frac=0.4, gains=probe_gains(probes), thresholds=Thresholds(), enough_data=False)
    assert v.verdict == "inconclusive" and v.reuse == "short" and v.speedup_ci["input"][0] > 1.3
    setting = _setting("cpu")
    texts = render(advise(v, probes, setting))
    assert texts == [f"Inconclusive: after {setting.budget_s:g} s a probe still has too few blocks of steps to "
                     f"compare. Raise budget_s (e.g. budget_s={2 * setting.budget_s:g})."]  # fmt: skip
    doc = _diagnosis_text(v, probes, setting)
    assert "Verdict: inconclusive (too little data)**: a probe has fewer than 6 blocks; so far a perfect input" in doc
    assert "noise hides" not in doc


def test_cpu_contention_and_balance_are_named_with_the_cpu_evidence():
    v, probes = _case(CONTENDED, 0.005, wait=0.8)
    assert v.verdict == "disk_io" and v.overlap["contention"] and v.overlap["balanced"]
    text = " ".join(render(advise(v, probes, _setting("cpu"))))
    assert "Contention:" in text and "the 2 CPU cores" in text and "during `full` both cores at 95 % or more" in text
    assert "Balanced:" in text and "speeding up either alone gains little" in text
    assert "gpu" not in text.lower()
    # cores that were not saturated are not blamed
    for p in probes.values():
        p["system"] = {**p["system"], "per_core_pct": [60.0, 62.0], "cpu_util_pct": 60.0}
    text = " ".join(render(advise(v, probes, _setting("cpu"))))
    assert "Contention:" in text and "the cores were not saturated" in text and "the 2 CPU cores" not in text
    doc = _diagnosis_text(v, probes, _setting("cpu"))
    assert "contention" in doc and "balanced" in doc


def test_no_contention_when_the_loop_overlaps():
    v, probes = _case(CLASSES["gpu_io"], 0.005)
    assert v.overlap and not v.overlap["contention"] and not v.overlap["balanced"]
    text = " ".join(render(advise(v, probes, _setting("cpu"))))
    assert "Contention" not in text and "Balanced" not in text
    # the loop waits 40 % of the step, yet removing the input saves ~1 %: named as overlap, not as input-bound
    assert "overlaps compute" in text and math.isfinite(v.input_saved)


def test_a_stored_diagnosis_is_re_read_by_the_current_rule():
    from gluonbench.diagnosis.measure import ProbeResult
    from gluonbench.diagnosis.run import Diagnosis, reassess

    _, probes = _case(CLASSES["preprocessing"], 0.005)
    results = {}
    for name, p in probes.items():
        r = ProbeResult.from_dict({**p, "batch_size": BATCH, "blocks": [p["s_per_sample"]] * 8})
        results[name] = r
    # a record written under the earlier rule: verdict gpu_io (the largest share), no speed-ups
    old = Diagnosis(
        verdict="gpu_io",
        shares={"preprocessing": 0.3, "disk_io": 0.0, "gpu_io": 0.7},
        probes=results,
        recommendations=["the input pipeline keeps up"],
        evidence=[],
        setting=_setting("cpu").to_dict(),
        thresholds={"rel_ci": 0.05, "min_blocks": 6},
        settled_s=4.2,
    )
    new = reassess(old)
    assert new.verdict == "preprocessing" and new.input_bound == "highly"
    # the time the old verdict held from says nothing about the new one: not reported as "verdict reached after"
    assert new.settled_s is None and "verdict reached" not in to_text(new)
    assert reassess(new).settled_s is None and reassess(replace(new, settled_s=3.0)).settled_s == 3.0
    assert new.speedups["input"] == pytest.approx(40.0 / 26.6, rel=1e-6)
    assert not any("keeps up" in r for r in new.recommendations)
    assert Diagnosis.from_dict(new.to_dict()).speedup_ci == new.speedup_ci
    assert "training would be 1.50x" in to_text(new)
