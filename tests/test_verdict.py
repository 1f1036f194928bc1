"""The verdict rules on given probe timings (pure functions: shares, significance, labels, advice)."""

from dataclasses import fields

import pytest

from gluonbench.diagnosis.recommend import Setting, evidence, recommend
from gluonbench.diagnosis.verdict import (
    THRESHOLDS,
    ProbeTiming,
    Thresholds,
    attribute,
    chain_timings,
    overlap,
    paired_timings,
)


def seed(full: ProbeTiming, no_preprocess: ProbeTiming, cached_batch: ProbeTiming, **kw):
    """The verdict from the seed's three probes, through the production rule (:func:`attribute`): without a no_read
    probe, disk_io is billed to reading, as the seed did; no device probe (a CPU context)."""
    chain = {
        "full": full,
        "no_preprocess": no_preprocess,
        "no_read": cached_batch,
        "cached_batch": cached_batch,
        "device_batch": None,
    }
    return attribute(chain, **kw)


def t(median_ms: float, rel: float = 0.02) -> ProbeTiming:
    """A probe's median (ms a step, batch 1) with a CI of +-rel."""
    m = median_ms / 1000
    return ProbeTiming(m, m * (1 - rel), m * (1 + rel))


def test_shares_follow_the_seed_formula_and_sum_to_one():
    v = seed(t(100), t(70), t(60))
    assert v.shares["preprocessing"] == pytest.approx(0.30)
    assert v.shares["disk_io"] == pytest.approx(0.10)
    assert v.shares["gpu_io"] == pytest.approx(0.60)
    assert sum(v.shares.values()) == pytest.approx(1.0)
    # the largest share is compute, but removing preprocessing makes training 1.43x faster: by the seed's
    # rule that is not GPU I/O
    assert v.verdict == "preprocessing"
    assert v.speedups["preprocessing"] == pytest.approx(100 / 70)
    assert v.speedups["input"] == pytest.approx(100 / 60)
    assert v.secondary == ["disk_io"], "removing the rest gains 70/60 = 1.17x, beyond the noise and the line"


@pytest.mark.parametrize(
    ("full", "no_pre", "cached", "expected"),
    [
        (100, 20, 10, "preprocessing"),
        (100, 95, 10, "disk_io"),
        (100, 99, 98, "gpu_io"),
        (100, 55, 5, "disk_io"),
        (100, 80, 78, "preprocessing"),
        # the ratios compound: removing preprocessing gains 4.9x, the rest a further 7.5x, yet preprocessing
        # saves 47 ms of the step and the rest 10 ms
        (59.3, 12.0, 1.6, "preprocessing"),
    ],
)
def test_the_input_stage_whose_removal_gains_most_wins(full, no_pre, cached, expected):
    assert seed(t(full), t(no_pre), t(cached)).verdict == expected


def test_issue_mnist_figures_are_preprocessing_not_gpu_io():
    # the issue's MNIST at 0 workers: 34 / 27.5 / 27.3 ms a step; compute is 79 % of the step, but one
    # reused batch runs 1.24x faster
    v = seed(t(34, 0.03), t(27.5, 0.03), t(27.3, 0.02))
    assert v.verdict == "preprocessing"
    assert v.shares["gpu_io"] > 0.75
    assert v.input_bound == "moderately" and v.input_saved == pytest.approx(1 - 27.3 / 34)


def test_gpu_io_only_when_reusing_a_batch_gains_nothing():
    # a 2 % gain with CIs of +-1 %: beyond the noise, but under the 5 % line
    v = seed(t(100, 0.01), t(99, 0.01), t(98, 0.01))
    assert v.verdict == "gpu_io" and v.input_bound == "not" and v.established["gpu_io"]
    # the same gain measured with +-4 %: the CI reaches above the line: not yet known ...
    assert seed(t(100, 0.04), t(99, 0.04), t(98, 0.04)).verdict == "inconclusive"
    # ... until the measurement converged: 1 within the CI is the seed's "no gain"
    v = seed(t(100, 0.04), t(99, 0.04), t(98, 0.04), converged=True)
    assert v.verdict == "gpu_io" and any("close call" in n for n in v.notes)


def test_the_line_is_a_threshold():
    # an 8 % gain (saves 7.4 % of the step): input-bound at the default 5 % line, gpu_io at a 10 % line
    assert seed(t(108, 0.005), t(100, 0.005), t(100, 0.005)).verdict == "preprocessing"
    v = seed(t(108, 0.005), t(100, 0.005), t(100, 0.005), thresholds=Thresholds(input_gain=0.10))
    assert v.verdict == "gpu_io" and v.input_bound == "not"


def test_noise_larger_than_the_effect_is_inconclusive():
    # a 33 % gain from reusing one batch, but CIs of +-30 %: the seed's test cannot tell
    v = seed(t(100, 0.3), t(80, 0.3), t(75, 0.3))
    assert v.verdict == "inconclusive" and v.input_bound == "unknown"
    assert v.speedup_ci["input"][0] < 1 < v.speedup_ci["input"][1]
    assert seed(t(100, 0.35), t(98, 0.35), t(96, 0.35)).verdict == "inconclusive"


def test_close_input_stages_are_noted():
    v = seed(t(100, 0.04), t(70, 0.04), t(49, 0.04))
    assert v.verdict == "preprocessing" and v.secondary == ["disk_io"]
    assert any("both are worth fixing" in n for n in v.notes)


def test_too_few_blocks_is_inconclusive():
    v = seed(t(100), t(20), t(10), enough_data=False)
    assert v.verdict == "inconclusive" and "too little data" in v.notes[0]


def test_overlap_names_contention_and_balance():
    # loader alone 4.7 ms, model alone 4.7 ms, together 7.8 ms (the issue's in-memory case)
    gains = {
        "full_vs_model": (7.8 / 4.7, 1.55, 1.75),
        "full_vs_loader": (7.8 / 4.7, 1.55, 1.75),
        "loader_vs_model": (1.0, 0.95, 1.06),
    }
    o = overlap(gains)
    assert o["contention"] and o["balanced"]
    # a loop that overlaps: full at the pace of the slower (the model, 27 ms; loader alone 11 ms)
    o = overlap(
        {"full_vs_model": (1.01, 0.99, 1.03), "full_vs_loader": (3.1, 3.0, 3.2), "loader_vs_model": (0.4, 0.39, 0.41)}
    )
    assert not o["contention"] and not o["balanced"] and o["slower_alone"] == "cached_batch"
    # a 39 ms loader beside a 172 ms model, measured in a few noisy rounds: a CI that reaches 1 is noise, not balance
    o = overlap(
        {"full_vs_model": (1.37, 0.66, 1.88), "full_vs_loader": (6.0, 2.0, 9.0), "loader_vs_model": (0.23, 0.1, 1.2)}
    )
    assert not o["balanced"]
    assert overlap({}) == {}


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
    # the issue's figures: ~60 ms of loading against ~115 ms of compute at batch 256, 0 workers
    full, no_pre, cached = 175 / 256, 117 / 256, 115 / 256
    v = seed(t(full), t(no_pre), t(cached), wait_frac=0.34)
    assert v.verdict == "preprocessing" and v.secondary == []
    assert v.shares["preprocessing"] == pytest.approx(58 / 175, abs=0.01)
    recs = recommend(v, _probes(175, 117, 115), SEED_LIKE)
    text = "\n".join(recs)
    assert "removing preprocessing makes it 1.50x" in text
    assert "training would be 1.52x" in text
    assert "saves 33 % of the step" in text
    assert "58.0 ms a batch" in text
    assert "num_workers" in text and "batch-level (vectorised)" in text


def test_recommendations_name_the_knobs_of_each_stage():
    pre = recommend(seed(t(100), t(10), t(5)), _probes(100, 10, 5), Setting(64, 0, 8, "gpu:0"))
    text = " ".join(pre)
    for knob in ("num_workers=8", "thread_pool=True", "batch-level", "GPU"):
        assert knob in text, knob
    disk = recommend(seed(t(100), t(98), t(5)), _probes(100, 98, 5, read_bps=80e6), Setting(64, 2, 8, "gpu:0"))
    text = " ".join(disk)
    for knob in ("RecordIO", "local disk", "prefetch", "80.0 MB/s"):
        assert knob in text, knob
    dev = recommend(
        seed(t(100, 0.01), t(99, 0.01), t(98, 0.01)),
        _probes(100, 99, 98),
        Setting(64, 2, 8, "gpu:0", hybridized=False),
    )
    text = " ".join(dev)
    for knob in ("batch size (now 64", "pin_memory=True", "hybridize()", "split_and_load"):
        assert knob in text, knob


def test_inconclusive_advice_names_budget_and_noise():
    v = seed(t(100, 0.3), t(80, 0.3), t(75, 0.3))
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
    v = seed(t(100, 0.01), t(99, 0.01), t(98, 0.01))
    text = " ".join(recommend(v, _probes(100, 99, 98, util=50.0), SEED_LIKE))
    assert "used 1.0 of 2 cores" in text and "OMP_NUM_THREADS=2" in text
    text = " ".join(recommend(v, _probes(100, 99, 98, util=95.0), SEED_LIKE))
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


def test_the_reused_batch_gain_is_read_one_way():
    from gluonbench.diagnosis.verdict import read_reuse

    line = 1 / 0.95
    assert read_reuse((1.02, 1.01, 1.03), line) == "nothing"  # the whole CI under the line
    assert read_reuse((1.03, 0.98, 1.09), line) == "nothing"  # converged: 1 within the CI, the gain under the line
    assert read_reuse((1.03, 0.98, 1.09), line, converged=False) == "noise"
    assert read_reuse((1.07, 0.98, 1.16), line) == "noise"  # 1 within the CI but the gain above the line
    assert read_reuse((1.10, 1.06, 1.14), line) == "gain"  # the whole CI above the line
    assert read_reuse((1.05, 1.03, 1.07), line) == "at_line"  # beyond the noise of none, across the line
    assert read_reuse((1.06, 1.03, 1.09), line) == "at_line"
    assert read_reuse((float("nan"),) * 3, line) == "noise"


def test_a_gain_across_the_line_is_inconclusive_at_the_line_even_once_converged():
    # 5 % faster with one reused batch, +-0.5 % per probe: beyond the noise, CI about [1.04, 1.06], across 1.053x
    for converged in (False, True):
        v = seed(t(105, 0.005), t(100, 0.005), t(100, 0.005), converged=converged)
        assert v.verdict == "inconclusive" and v.reuse == "at_line" and not v.clear
        assert v.input_bound == "unknown"
        assert any(n.startswith("at the line") for n in v.notes)
    # too few blocks for a verdict: "short", not "at the line" (its advice would claim what was not measured)
    assert seed(t(105, 0.005), t(100, 0.005), t(100, 0.005), enough_data=False).reuse == "short"
    # clear of the line on either side
    assert seed(t(110, 0.005), t(100, 0.005), t(100, 0.005)).clear
    assert seed(t(101, 0.005), t(100, 0.005), t(100, 0.005)).clear


def _reuse_probes(ratios: list[float]) -> dict:
    """Probes of a pipeline without preprocessing whose full step is ``ratio`` times the reused batch's, per round."""
    cached = [1.0e-3] * len(ratios)
    probes = {n: _probe(cached) for n in ("no_preprocess", "no_read", "cached_batch")}
    probes["full"] = _probe([r * 1.0e-3 for r in ratios])
    probes["device_batch"] = {**_probe(cached), "same_as": "cached_batch"}
    return probes


def test_the_early_stop_asks_for_a_99_percent_interval_clear_of_the_line():
    from gluonbench.diagnosis.run import clear_to_stop
    from gluonbench.diagnosis.verdict import probe_gains

    line = Thresholds().line
    # six rounds all 1.06-1.09x: the verdict's 95 % interval (their min and max, 96.9 %) is above the line
    six = [1.06, 1.09, 1.07, 1.065, 1.08, 1.062]
    assert probe_gains(_reuse_probes(six))["input"][1] > line
    # ... but six values cannot give 99 %: the diagnosis goes on
    assert not clear_to_stop(_reuse_probes(six), Thresholds())
    assert clear_to_stop(_reuse_probes(six), Thresholds(stop_confidence=0.95))  # the old rule stopped here
    # eight rounds clear of the line at 99 % (min and max: 99.2 %): it may stop
    assert clear_to_stop(_reuse_probes([*six, 1.07, 1.075]), Thresholds())
    # one round of eight under the line: not clear
    assert not clear_to_stop(_reuse_probes([*six, 1.07, 1.04]), Thresholds())
    # twenty rounds: the 99 % interval leaves out the 3 lowest and highest; under the line on the other side too
    low = [1.00 + 0.002 * i for i in range(20)]  # 1.000 .. 1.038: every round under 1.053x
    assert clear_to_stop(_reuse_probes(low), Thresholds())
    spread = [1.03 + 0.003 * i for i in range(20)]  # 1.030 .. 1.087: the median 1.058x, its interval across the line
    assert not clear_to_stop(_reuse_probes(spread), Thresholds())


def test_stop_confidence_under_the_verdicts_own_level_is_refused():
    from gluonbench.errors import GluonbenchError

    with pytest.raises(GluonbenchError, match=r"stop_confidence=0\.9 is out of range; give a number in \[0\.95, "):
        Thresholds(stop_confidence=0.9)


@pytest.mark.parametrize("name", sorted(THRESHOLDS))
def test_each_threshold_is_checked_against_its_one_declaration(name):
    """A field of Thresholds is its declaration: the same default, and a value past either bound is refused with
    the declared range (an open bound refuses the bound itself)."""
    from gluonbench.errors import GluonbenchError

    t = THRESHOLDS[name]
    assert getattr(Thresholds(), name) == t.default
    for bad in (t.minimum - (0 if t.exclusive else 1), t.maximum + (0 if t.exclusive else 1)):
        with pytest.raises(GluonbenchError, match=f"threshold {name}"):
            Thresholds(**{name: t.kind(bad)})
    assert {f.name for f in fields(Thresholds)} == set(THRESHOLDS)


def _bound_probes(rounds: int, loader_share: float) -> dict:
    """ProbeResults of a model-bound loop at 0 workers: the reused batch gains a noisy nothing, and the loader alone
    takes ``loader_share`` of the model step, round by round."""
    from gluonbench.diagnosis.measure import ProbeResult

    noise = [1.0, 1.3, 0.8, 1.2, 0.9, 1.25, 0.85, 1.1, 0.95, 1.15][:rounds]  # +-30 %: the input interval spans the line
    model = [1.0e-3] * rounds

    def probe(name: str, per_round: list[float], **kw) -> ProbeResult:
        p = ProbeResult(name, "", 64, blocks=list(per_round), per_round=list(per_round), **kw)
        p.update()
        return p

    probes = {n: probe(n, model) for n in ("no_preprocess", "no_read", "cached_batch")}
    probes["full"] = probe("full", [m * r for m, r in zip(model, noise, strict=True)])
    probes["device_batch"] = probe("device_batch", model, same_as="cached_batch")
    probes["loader_only"] = probe("loader_only", [loader_share * m * (1 + 0.05 * (i % 3)) for i, m in enumerate(model)])
    return probes


def test_a_verdict_the_bound_decides_stops_once_the_bound_holds_at_99_percent():
    from gluonbench.diagnosis.measure import ProbeSet
    from gluonbench.diagnosis.run import bound_to_stop, verdict_finished, verdict_settled
    from gluonbench.diagnosis.verdict import clear_of, probe_gains

    th = Thresholds()
    eight = _bound_probes(8, 0.01)
    assert not clear_of(*probe_gains(eight)["input"][1:], th.line)  # the seed's rule alone cannot tell
    assert bound_to_stop(eight, th, workers=0)
    ps = ProbeSet(eight, 10.0, "", 8, 0.0)
    assert verdict_settled(ps, th, 0) and verdict_finished(ps, th, 0)
    # the loader's count of workers unknown: no bound, no verdict, no stop
    assert not verdict_settled(ps, th) and not verdict_finished(ps, th)
    # six rounds give the verdict at 95 %, not 99 %: it goes on
    six = ProbeSet(_bound_probes(6, 0.01), 8.0, "", 6, 0.0)
    assert verdict_settled(six, th, 0) and not verdict_finished(six, th, 0)
    # a loader that takes 8 % of the step: the bound does not hold
    assert not bound_to_stop(_bound_probes(8, 0.08), th, workers=0)
