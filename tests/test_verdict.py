"""The verdict rules on given probe timings (pure functions: shares, significance, labels, advice)."""

import math

import pytest

from gluonbench.analysis.recommend import Setting, evidence, recommend
from gluonbench.analysis.verdict import (
    ProbeTiming,
    Thresholds,
    attribute,
    chain_timings,
    classify,
    input_bound_label,
    paired_timings,
)


def t(median_ms: float, rel: float = 0.02) -> ProbeTiming:
    """A probe's median (ms a step, batch 1) with a CI of +-rel."""
    m = median_ms / 1000
    return ProbeTiming(m, m * (1 - rel), m * (1 + rel))


def test_shares_follow_the_seed_formula_and_sum_to_one():
    v = classify(t(100), t(70), t(60))
    assert v.shares["preprocessing"] == pytest.approx(0.30)
    assert v.shares["disk_io"] == pytest.approx(0.10)
    assert v.shares["gpu_io"] == pytest.approx(0.60)
    assert sum(v.shares.values()) == pytest.approx(1.0)
    assert v.verdict == "gpu_io"
    assert v.secondary == ["preprocessing"], "30 % is above the 15 % secondary threshold, 10 % is not"


@pytest.mark.parametrize(
    ("full", "no_pre", "cached", "expected"),
    [
        (100, 20, 10, "preprocessing"),
        (100, 95, 10, "disk_io"),
        (100, 97, 95, "gpu_io"),
        (100, 55, 5, "disk_io"),
    ],
)
def test_largest_significant_stage_wins(full, no_pre, cached, expected):
    assert classify(t(full), t(no_pre), t(cached)).verdict == expected


def test_negative_differences_are_clipped_and_noted():
    v = classify(t(100), t(110), t(20))
    assert v.shares["preprocessing"] == 0.0
    assert sum(v.shares.values()) == pytest.approx(1.0)
    assert any("no_preprocess ran slower than full" in n for n in v.notes)


def test_noise_larger_than_the_effect_is_inconclusive():
    # a 20 % gain from removing preprocessing, but CIs of +-30 %: not significant; the device
    # share cannot be claimed either, since the noise could hide a gain as large as it
    v = classify(t(100, 0.3), t(80, 0.3), t(75, 0.3))
    assert v.verdict == "inconclusive"
    assert not v.established["gpu_io"] and not v.present["preprocessing"]


def test_device_is_only_claimed_when_noise_cannot_hide_the_other_stages():
    assert classify(t(100, 0.02), t(98, 0.02), t(96, 0.02)).verdict == "gpu_io"
    assert classify(t(100, 0.35), t(98, 0.35), t(96, 0.35)).verdict == "inconclusive"


def test_tie_after_convergence_names_the_established_runner_up():
    # device 48 %, preprocessing 47 %: gpu_io leads by a hair and cannot be established; with the CIs
    # converged this is a tie, so the verdict is the established runner-up, with a note
    v = classify(t(100, 0.04), t(53, 0.04), t(48, 0.04), converged=True)
    assert v.verdict == "preprocessing"
    assert "gpu_io" in v.secondary
    assert any("cost about the same" in n for n in v.notes)
    assert classify(t(100, 0.04), t(53, 0.04), t(48, 0.04), converged=False).verdict == "inconclusive"


def test_too_few_blocks_is_inconclusive():
    v = classify(t(100), t(20), t(10), enough_data=False)
    assert v.verdict == "inconclusive" and "too little data" in v.notes[0]


def test_secondary_threshold_is_configurable():
    v = classify(t(100), t(80), t(20), thresholds=Thresholds(secondary_share=0.25))
    assert v.verdict == "gpu_io" or v.verdict == "disk_io"
    assert "preprocessing" not in v.secondary
    v = classify(t(100), t(80), t(20), thresholds=Thresholds(secondary_share=0.10))
    assert "preprocessing" in v.secondary


@pytest.mark.parametrize(
    ("wait", "label"), [(0.25, "highly"), (0.20, "highly"), (0.10, "moderately"), (0.05, "moderately"), (0.01, "not")]
)
def test_tf_input_bound_label(wait, label):
    assert input_bound_label(wait) == label
    assert input_bound_label(math.nan) == "unknown"


def _probes(full_ms, no_pre_ms, cached_ms, read_bps=0.0, per_core=(97.0, 96.0), util=95.0):
    system = {
        "per_core_pct": list(per_core),
        "cpu_util_pct": util,
        "iowait_pct": 0.5,
        "read_bytes_per_s": read_bps,
        "peak_mem_main_bytes": 300 * 2**20,
        "peak_mem_workers_bytes": 0,
        "peak_processes": 1,
    }
    out = {}
    for name, ms in (("full", full_ms), ("no_preprocess", no_pre_ms), ("cached_batch", cached_ms)):
        out[name] = {"system": system, "samples_per_s": 64 / (ms / 1000), "rel_half_width": 0.03}
    return out


SEED_LIKE = Setting(batch_size=256, num_workers=0, cores=2, ctx="cpu")


def test_seed_like_split_shows_the_preprocessing_third_and_its_fixes():
    # the figures: ~60 ms of loading against ~115 ms of compute at batch 256, 0 workers
    full, no_pre, cached = 175 / 256, 117 / 256, 115 / 256
    v = classify(t(full), t(no_pre), t(cached), wait_frac=0.34)
    assert v.verdict == "gpu_io" and v.secondary == ["preprocessing"]
    assert v.shares["preprocessing"] == pytest.approx(58 / 175, abs=0.01)
    recs = recommend(v, _probes(175, 117, 115), SEED_LIKE)
    text = "\n".join(recs)
    assert "Preprocessing costs 33 %" in text
    assert "58.0 ms a batch" in text
    assert "num_workers" in text and "batch-level (vectorised)" in text
    assert "Raise the batch size (now 256" in text


def test_recommendations_name_the_knobs_of_each_stage():
    pre = recommend(classify(t(100), t(10), t(5)), _probes(100, 10, 5), Setting(64, 0, 8, "gpu:0"))
    text = " ".join(pre)
    for knob in ("num_workers=8", "thread_pool=True", "batch-level", "GPU"):
        assert knob in text, knob
    disk = recommend(classify(t(100), t(98), t(5)), _probes(100, 98, 5, read_bps=80e6), Setting(64, 2, 8, "gpu:0"))
    text = " ".join(disk)
    for knob in ("RecordIO", "local disk", "prefetch", "80.0 MB/s"):
        assert knob in text, knob
    dev = recommend(classify(t(100), t(99), t(97)), _probes(100, 99, 97), Setting(64, 2, 8, "gpu:0", hybridized=False))
    text = " ".join(dev)
    for knob in ("batch size (now 64", "pin_memory=True", "hybridize()", "split_and_load"):
        assert knob in text, knob


def test_inconclusive_advice_names_budget_and_noise():
    v = classify(t(100, 0.3), t(80, 0.3), t(75, 0.3))
    probes = _probes(100, 80, 75, per_core=(99, 99), util=50.0)
    (line,) = recommend(v, probes, Setting(64, 0, 2, "cpu", budget_s=10))
    # from Python the argument, from the CLI the flag
    assert "Raise budget_s (e.g. budget_s=20)" in line and "close other programs" in line and "49 % busy" in line
    from gluonbench.names import use_flags

    use_flags()
    try:
        (line,) = recommend(v, probes, Setting(64, 0, 2, "cpu", budget_s=10))
    finally:
        use_flags(False)
    assert "Raise --budget (e.g. --budget 20)" in line


def test_evidence_cites_cores_per_probe():
    lines = evidence(_probes(100, 80, 75), SEED_LIKE)
    assert lines[0].startswith("during `full`: both cores at 96 % or more")
    assert "read 0 B/s" in lines[0] and "memory (PSS) main 300 MiB" in lines[0]


def test_cpu_context_with_idle_cores_suggests_omp_threads():
    v = classify(t(100), t(99), t(97))
    text = " ".join(recommend(v, _probes(100, 99, 97, util=50.0), SEED_LIKE))
    assert "used 1.0 of 2 cores" in text and "OMP_NUM_THREADS=2" in text
    text = " ".join(recommend(v, _probes(100, 99, 97, util=95.0), SEED_LIKE))
    assert "OMP_NUM_THREADS" not in text


def _probe(per_round: list[float | None]) -> dict:
    values = [v for v in per_round if v is not None]
    ordered = sorted(values)
    mid = ordered[len(ordered) // 2]
    return {"s_per_sample": mid, "s_per_sample_ci": [ordered[0], ordered[-1]], "per_round": per_round}


def test_paired_timings_cancel_load_that_changes_between_rounds():
    # a stage split of 30 / 10 / 60 %; each round the machine is busier or quieter by up to 2x
    load = [1.0, 1.9, 1.2, 2.0, 1.1, 1.5, 1.7, 1.3]
    probes = {
        "full": _probe([1.0e-3 * f for f in load]),
        "no_preprocess": _probe([0.7e-3 * f for f in load]),
        "no_read": _probe([0.7e-3 * f for f in load]),
        "cached_batch": _probe([0.6e-3 * f for f in load]),
        "device_batch": {**_probe([0.6e-3 * f for f in load]), "same_as": "cached_batch"},
    }
    unpaired = attribute(chain_timings(probes))
    paired = attribute(paired_timings(probes))
    assert paired.substages == pytest.approx(
        {"preprocessing": 0.3, "read": 0.0, "loader": 0.1, "copy": 0.0, "compute": 0.6}
    )
    # the load shows in each probe's own CI but not in the paired one: the shares are exact here
    assert paired.precise(1e-9) and not unpaired.precise(0.05)
    assert paired_timings(probes)["full"].half_width == 0.0


def test_paired_timings_need_enough_rounds_with_every_probe():
    full = [1.0e-3] * 8
    probes = {n: _probe([0.8e-3] * 8) for n in ("no_preprocess", "no_read", "cached_batch")}
    probes["full"] = _probe(full)
    assert paired_timings(probes)["no_read"].half_width == 0.0
    # a probe missing from three of eight rounds leaves five paired rounds: fewer than six, so unpaired
    probes["no_read"] = _probe([0.8e-3, None, 0.8e-3, None, 0.8e-3, None, 0.7e-3, 0.9e-3])
    assert paired_timings(probes) == chain_timings(probes)
    # results written before per-round values existed are read unpaired
    old = {n: {k: v for k, v in p.items() if k != "per_round"} for n, p in probes.items()}
    assert paired_timings(old) == chain_timings(old)
